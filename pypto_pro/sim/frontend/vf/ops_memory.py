"""Reg API masks, compares, UB loads / stores and address registers (spec §2.13 "Masks",
"Load/store", "Compare/select").

UB operands are `UBAddr`s: a tile of the section plus an element offset of the tile's dtype
(`tile + k`); an op's own `offset` counts elements of the register's dtype, as the generated
`vlds(reg, tile_ub + k, offset)` does. Loads and stores go through the section's working copy
of UB (`section.VFState`), so a load sees the section's earlier stores. Load distributions: NORM,
BRC* (one element to every lane), US* (each element twice), DS* (every other element), UNPK*
(half-width elements into the low half of each lane, upper half zero), UNPK4 (quarter-width),
BLK (one 32-byte block to all eight), E2B* (element i to 32-byte block i); DATA_BLOCK_LOAD
reads block j at `j * block_stride` blocks. Store distributions: NORM*, FIRST_ELEMENT, PACK
(the low half of each lane, packed), PACK4 (the low quarter). The two-register forms
(DINTLV / INTLV) are reached through `vf.de_interleave` / `vf.interleave`.
"""
from __future__ import annotations

from collections.abc import Callable

import torch

from pypto_pro.ir import attrs
from pypto_pro.ir.dtype import DataType

from ...model.memory import storage_dtype
from .args import VFOpError, arg, enum_of, mask, reg, same_dtype, ub
from .regs import (
    VL,
    Mask,
    Reg,
    bits,
    first_lanes,
    from_codes,
    from_values,
    lane_bytes,
    lane_count,
    mask_of_lanes,
    predicated,
    zeros,
)

# ---------------------------------------------------------------- masks


def _width(kw: dict, dtype: DataType | None) -> DataType:
    """The lane type a predicate is built for (`dtype=`, FP32 by default)."""
    return kw.get("dtype") or dtype or DataType.FP32


def create_mask(st, a: list, kw: dict, old, dtype: DataType | None) -> Mask:
    dtype = _width(kw, dtype)
    pattern = enum_of(arg(a, kw, 0, "pattern", attrs.MaskPattern.ALL), attrs.MaskPattern)
    lanes = lane_count(dtype)
    name = pattern.name
    if name.startswith("VL"):
        return first_lanes(int(name[2:]), dtype)
    counts = {"ALL": lanes, "ALLF": 0, "H": lanes // 2, "Q": lanes // 4}
    if name in counts:
        return first_lanes(counts[name], dtype)
    step = 3 if name == "M3" else 4
    return mask_of_lanes(torch.arange(lanes) % step == 0, dtype)


def update_mask(st, a: list, kw: dict, old, dtype: DataType | None) -> Mask:
    """The first `scalar_count` lanes."""
    return first_lanes(int(arg(a, kw, 0, "scalar_count", 0)), _width(kw, dtype))


def mask_gen_with_reg_tensor(st, a: list, kw: dict, old, dtype: DataType | None) -> Mask:
    """Lanes whose bits are not all zero."""
    x = reg(a[0], "mask_gen_with_reg_tensor")
    size = lane_bytes(x.dtype)
    nonzero = x.data.contiguous().view(torch.uint8).reshape(-1, size).ne(0).any(dim=1)
    return mask_of_lanes(nonzero, x.dtype)


def get_mask_spr(st, a: list, kw: dict, old, dtype: DataType | None) -> Mask:
    """The vector-mask SPR (all ones after reset: the simulator does not model set_vec_mask)
    as a predicate of at most 128 lanes of the given width."""
    width = enum_of(arg(a, kw, 0, "width", attrs.MaskWidth.B32), attrs.MaskWidth)
    dt = DataType.FP32 if width is attrs.MaskWidth.B32 else DataType.FP16
    return first_lanes(128, dt)


def move(st, a: list, kw: dict, old, dtype: DataType | None):
    """A register copy of the active lanes (others keep the destination); masks copy whole."""
    src = a[0]
    if isinstance(src, Mask):
        return src
    src = reg(src, "move")
    m = arg(a, kw, 1, "mask")
    return src if m is None else predicated(src, old, mask(m, "move"), True)


_COMPARE: dict[str, Callable] = {"eq": torch.eq, "ne": torch.ne, "lt": torch.lt, "gt": torch.gt,
                                 "le": torch.le, "ge": torch.ge}


def _compare(name: str):
    fn = _COMPARE[name]

    def op(st, a: list, kw: dict, old, dtype: DataType | None) -> Mask:
        x, y = reg(a[0], name), reg(a[1], name)
        same_dtype(name, x, y)
        active = mask(arg(a, kw, 2, "mask"), name).lanes(x.dtype)
        return mask_of_lanes(fn(x.values(), y.values()) & active, x.dtype)
    return op


def select(st, a: list, kw: dict, old, dtype: DataType | None) -> Reg:
    t, f = reg(a[0], "select"), reg(a[1], "select")
    same_dtype("select", t, f)
    on = mask(arg(a, kw, 2, "mask"), "select").lanes(t.dtype)
    return from_codes(torch.where(on, t.codes(), f.codes()), t.dtype)


# ---------------------------------------------------------------- loads


def _load(st, op: str, where, offset: int, dtype: DataType, dist, copy_mode, block_stride
          ) -> Reg:
    size = bits(dtype) // 8
    if size == 0:  # 4-bit lanes: the register's bytes (NORM only)
        if dist is not None or copy_mode is not None:
            raise VFOpError(f"vf.{op}: 4-bit registers load with the NORM distribution only")
        return Reg(st.read(st.byte_addr(where, offset, dtype), VL, op).clone(), dtype)
    lanes = lane_count(dtype)
    start = st.byte_addr(where, offset, dtype)
    if dist is None and copy_mode is None and start % size == 0:
        return Reg(st.read_typed(start, lanes, dtype, op).clone(), dtype)
    name = enum_of(dist, attrs.LoadDist).name if dist is not None else "NORM"
    blocks = enum_of(copy_mode, attrs.DataCopyMode).name if copy_mode is not None else "NORM"
    if blocks == "DATA_BLOCK_LOAD":
        if name != "NORM":
            raise VFOpError(f"vf.{op}: DATA_BLOCK_LOAD needs the NORM distribution")
        stride = int(block_stride or 1) * 32
        raw = torch.cat([st.read(start + j * stride, 32, op) for j in range(8)])
    elif name == "NORM":
        raw = st.read(start, VL, op)
    elif name.startswith("BRC"):
        raw = st.read(start, size, op).repeat(lanes)
    elif name.startswith("US"):
        raw = st.read(start, VL // 2, op).reshape(-1, size).repeat_interleave(2, dim=0)
    elif name.startswith("DS"):
        raw = st.read(start, 2 * VL, op).reshape(-1, 2, size)[:, 0]
    elif name.startswith("UNPK"):
        part = 4 if name == "UNPK4" else 2
        if size < part:
            raise VFOpError(f"vf.{op}: {name} needs lanes of at least {part} bytes")
        low = st.read(start, VL // part, op).reshape(lanes, size // part)
        raw = torch.cat([low, low.new_zeros(lanes, size - size // part)], dim=1)
    elif name == "BLK":
        raw = st.read(start, 32, op).repeat(8)
    elif name.startswith("E2B"):
        raw = st.read(start, 8 * size, op).reshape(8, size).repeat_interleave(32 // size, dim=0)
    else:
        raise VFOpError(f"vf.{op}: the {name} distribution loads two registers; use "
                        f"vf.de_interleave on two NORM loads")
    raw = raw.reshape(-1)
    if raw.storage_offset() % size:
        raw = raw.clone()
    return Reg(raw.view(storage_dtype(dtype)).clone(), dtype)


def load_align(st, a: list, kw: dict, old, dtype: DataType | None) -> Reg:
    where = ub(a[0], "load_align")
    return _load(st, "load_align", where, int(arg(a, kw, 1, "offset", 0)), dtype,
                 arg(a, kw, 3, "dist"), arg(a, kw, 4, "data_copy_mode"),
                 arg(a, kw, 5, "block_stride"))


def load(st, a: list, kw: dict, old, dtype: DataType | None) -> Reg:
    where = ub(a[0], "load")
    return _load(st, "load", where, int(arg(a, kw, 1, "offset", 0)), dtype,
                 arg(a, kw, 2, "dist"), None, None)


def load_unalign_init(st, a: list, kw: dict, old, dtype: DataType | None) -> Reg:
    """Prime the align register: the 32-byte block holding the address."""
    where = ub(a[0], "load_unalign_init")
    start = st.byte_addr(where, int(arg(a, kw, 1, "offset", 0)), dtype)
    raw = st.read(start - start % 32, 32, "load_unalign_init").repeat(8)
    return Reg(raw.view(storage_dtype(dtype)).clone(), dtype)


def load_unalign(st, a: list, kw: dict, old, dtype: DataType | None) -> Reg:
    """VL bytes from any element address (the align register only primes the hardware)."""
    where = ub(a[1], "load_unalign")
    start = st.byte_addr(where, int(arg(a, kw, 2, "offset", 0)), dtype)
    return Reg(st.read(start, VL, "load_unalign").view(storage_dtype(dtype)).clone(), dtype)


def gather(st, a: list, kw: dict, old, dtype: DataType | None) -> Reg:
    """lane i = tile[index[i]] (element indices) on active lanes, zero elsewhere."""
    where, index = ub(a[0], "gather"), reg(a[1], "gather", "index")
    if not (index.dtype.is_int or index.dtype.kind == "uint"):
        raise VFOpError(f"vf.gather: the index register must be integer, not {index.dtype.value}")
    lanes = lane_count(dtype)
    size = dtype.bits // 8
    idx = index.values()[:lanes]
    active = mask(arg(a, kw, 2, "mask"), "gather").lanes(dtype)[:idx.numel()]
    base = st.byte_addr(where, 0, dtype)
    picked = idx[active]
    data = torch.zeros(lanes, dtype=storage_dtype(dtype))
    if picked.numel():
        raw = st.gather(base + picked * size, size, "gather")
        data[:idx.numel()][active] = raw.view(storage_dtype(dtype))
    return Reg(data, dtype)


def create_addr_reg(st, a: list, kw: dict, old, dtype: DataType | None) -> Reg:
    """An index register: base + i * stride."""
    target = dtype or DataType.INT32
    base, stride = int(a[0]), int(arg(a, kw, 1, "stride", 1))
    return from_values(base + stride * torch.arange(lane_count(target)), target)


# ---------------------------------------------------------------- stores


def _store(st, op: str, where, src: Reg, offset: int, dist, m: Mask) -> None:
    size = bits(src.dtype) // 8
    start = st.byte_addr(where, offset, src.dtype)
    if size == 0:  # 4-bit lanes: the register's bytes, one mask bit per byte (NORM only)
        if dist is not None:
            raise VFOpError(f"vf.{op}: 4-bit registers store with the NORM distribution only")
        st.write(where.tile, start, src.data.reshape(-1, 1), None if m.bits.all() else m.bits,
                 op)
        return
    active = None if m.all_active(src.dtype) else m.lanes(src.dtype)
    if dist is None and active is None and start % size == 0:
        st.write_typed(where.tile, start, src, op)
        return
    name = enum_of(dist, attrs.StoreDist).name if dist is not None else "NORM"
    raw = src.data.contiguous().view(torch.uint8).reshape(-1, size)
    if name.startswith("NORM"):
        st.write(where.tile, start, raw, active, op)
    elif name == "FIRST_ELEMENT":
        st.write(where.tile, start, raw[:1], None if active is None else active[:1], op)
    elif name in ("PACK", "PACK4"):
        part = 2 if name == "PACK" else 4
        if size < part:
            raise VFOpError(f"vf.{op}: {name} needs lanes of at least {part} bytes")
        st.write(where.tile, start, raw[:, :size // part], active, op)
    else:
        raise VFOpError(f"vf.{op}: the {name} distribution stores two registers; use "
                        f"vf.interleave and two NORM stores")


def store_align(st, a: list, kw: dict, old, dtype: DataType | None) -> None:
    where, src = ub(a[0], "store_align"), reg(a[1], "store_align", "source")
    _store(st, "store_align", where, src, int(kw.get("offset") or 0), arg(a, kw, 3, "dist"),
           mask(arg(a, kw, 2, "mask"), "store_align"))


def store(st, a: list, kw: dict, old, dtype: DataType | None) -> None:
    where, src = ub(a[0], "store"), reg(a[1], "store", "source")
    _store(st, "store", where, src, int(arg(a, kw, 2, "offset", 0)), arg(a, kw, 3, "dist"),
           mask(arg(a, kw, 4, "mask"), "store"))


def unalign_reg_for_store(st, a: list, kw: dict, old, dtype: DataType | None) -> Reg:
    return zeros(dtype or DataType.FP32)


def store_unalign(st, a: list, kw: dict, old, dtype: DataType | None) -> None:
    """All VL bytes of the register at any element address."""
    where, src = ub(a[0], "store_unalign"), reg(a[1], "store_unalign", "source")
    start = st.byte_addr(where, int(arg(a, kw, 3, "offset", 0)), src.dtype)
    raw = src.data.contiguous().view(torch.uint8).reshape(1, -1)
    st.write(where.tile, start, raw, None, "store_unalign")


def store_unalign_post(st, a: list, kw: dict, old, dtype: DataType | None) -> None:
    """Flush of the unaligned-store buffer: stores already landed in this model."""
    ub(a[0], "store_unalign_post")


def scatter(st, a: list, kw: dict, old, dtype: DataType | None) -> None:
    """tile[index[i]] = src[i] on active lanes (later lanes win on equal indices)."""
    where, src = ub(a[0], "scatter"), reg(a[1], "scatter", "source")
    index = reg(a[2], "scatter", "index")
    size = src.dtype.bits // 8
    n = min(index.data.numel(), src.data.numel())
    active = mask(arg(a, kw, 3, "mask"), "scatter").lanes(src.dtype)[:n]
    idx = index.values()[:n][active]
    raw = src.data[:n][active].contiguous().view(torch.uint8).reshape(-1, size)
    base = st.byte_addr(where, 0, src.dtype)
    st.scatter(where.tile, base + idx * size, raw, "scatter")


def mem_bar(st, a: list, kw: dict, old, dtype: DataType | None) -> None:
    """Ordering between the section's UB accesses: they already run in program order here."""


def clear_spr(st, a: list, kw: dict, old, dtype: DataType | None) -> None:
    st.spr = 0


OPS: dict[str, tuple[Callable, str]] = {
    "create_mask": (create_mask, "mask"), "update_mask": (update_mask, "mask"),
    "mask_gen_with_reg_tensor": (mask_gen_with_reg_tensor, "mask"),
    "get_mask_spr": (get_mask_spr, "mask"), "move": (move, "copy"),
    **{n: (_compare(n), "compare") for n in _COMPARE},
    "select": (select, "select"),
    "load_align": (load_align, "load"), "load": (load, "load"),
    "load_unalign_init": (load_unalign_init, "load"),
    "load_unalign_pre": (load_unalign_init, "load"),
    "load_unalign": (load_unalign, "load"), "gather": (gather, "gather"),
    "create_addr_reg": (create_addr_reg, "copy"),
    "store_align": (store_align, "store"), "store": (store, "store"),
    "unalign_reg_for_store": (unalign_reg_for_store, "mask"),
    "store_unalign": (store_unalign, "store"), "store_unalign_post": (store_unalign_post, "mask"),
    "scatter": (scatter, "store"), "mem_bar": (mem_bar, "free"), "clear_spr": (clear_spr, "free"),
}
