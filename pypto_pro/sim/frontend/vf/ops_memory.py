"""Reg API aligned loads / stores, gathers / scatters and address registers (spec §2.13
"Load/store"), as the real backend emits them (vlds / vsts / vld / vst / vsldb / vsstb / plds /
psts / vgather2 / vgatherb / vselr / vscatter).

UB operands are `UBAddr`s (a tile of the section plus an element offset, `tile + k`). An
integer offset counts elements of the tile's dtype (the backend scales it to the register's
element width: `offset * tile_bits / reg_bits` of them); an `AddrReg` (`vf.create_addr_reg`) adds
its own element offset; `[row, col]` arrives as `row * shape[1] + col`. With `post_update=True`
the access goes through the operand's cursor (a pointer the section keeps per tile operand,
starting at the operand) and then advances it by the offset (DATA_BLOCK modes: by
`repeat_stride` blocks). Loads and stores go through the section's working copy of UB
(`section.VFState`), so a load sees the section's earlier stores.

Load distributions (one register): NORM; BRC_Bk (one k-bit element to every lane); US_Bk (each
element twice, VL/2 bytes read); DS_Bk (every other element of 2·VL bytes); UNPK_Bk (each k-bit
element of VL/2 bytes followed by a zero one); UNPK4 (each byte of VL/4 followed by three zero
bytes); BLK (one 32-byte block to all eight); E2B_Bk (element i to 32-byte block i). The generic
names take k from the register (BRC: 8/16/32; US, DS: 8 else 16; UNPK: 8/16/32; E2B: 16 else
32), as the backend does. DINTLV_Bk (two results) splits 2·VL bytes into the even and odd
k-bit elements. DATA_BLOCK_COPY (DATA_BLOCK_LOAD): eight 32-byte blocks `block_stride` blocks
apart (default 0), where the predicate passed as the offset has a bit in the block's 32, else
zero. A predicate load (`plds`, into a name holding a predicate): NORM the 32 bytes of its bits,
US 16 bytes with each bit twice, DS 64 bytes with every other bit.

Store distributions: NORM / NORM_B16 (the active lanes; inactive ones keep UB), FIRST_ELEMENT
(lane 0, whatever the predicate), PACK (the low half of each active lane, b8 and b16 registers
in 16-bit lanes), PACK4 (the low byte of each active 32-bit lane), INTLV / INTLV_B32 (two
registers' elements alternating, 2·VL bytes, lane i of both where lane i is active).
DATA_BLOCK_COPY writes block j at `j * block_stride` blocks where the predicate has a bit in it.
A predicate store (`psts`): NORM 32 bytes, PACK 16 (every other bit).

`gather` from a tile (NORM) gives one slot per index lane, the slot as wide as the index (b8
data zero-extended to 16 bits, b16 data with UINT32 indices in the low half of a 32-bit slot);
DATA_BLOCK_LOAD gathers 32-byte blocks at the byte offsets of the first eight index lanes.
`gather` between registers is `vselr`: lane i = src[index[i] mod lanes]. `scatter` writes
src[i] (b8: the even elements) to tile[index[i]] on active lanes.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from pypto_pro.ir import attrs
from pypto_pro.ir.dtype import DataType

from ...model.memory import storage_dtype
from .args import VFOpError, arg, enum_of, mask, reg, ub
from .regs import (
    VL,
    AddrReg,
    Mask,
    Reg,
    bits,
    lane_bytes,
    lane_count,
    mask_bytes,
    mask_of_bytes,
)

# ---------------------------------------------------------------- addresses


def scaled_bytes(st, where, count: int, dtype: DataType) -> int:
    """Bytes of `count` elements of the operand's tile, counted in `dtype` elements as the
    backend's `offset * tile_bits / reg_bits` does (C division)."""
    tile_bits, reg_bits = bits(st.tile_dtype(where)), bits(dtype)
    return int(count) * tile_bits // reg_bits * reg_bits // 8


def address(st, op: str, where, offset: Any, dtype: DataType, kw: dict) -> int:
    """The UB byte address an aligned access of `dtype` reaches (advancing the cursor when
    `post_update`)."""
    if isinstance(offset, AddrReg):
        return st.base(where) + offset.nbytes
    if isinstance(offset, (Reg, Mask)):
        raise VFOpError(f"vf.{op}: the offset must be an integer, [row, col] or an AddrReg, "
                        f"got a {type(offset).__name__}")
    step = scaled_bytes(st, where, offset or 0, dtype)
    if kw.get("post_update"):
        return st.advance(where, step)
    return st.base(where) + step


def _block_active(m: Mask) -> list[bool]:
    """Blocks 0..7 whose 32 predicate bits have one set (the DataBlock modes)."""
    return m.bits.reshape(8, 32).any(dim=1).tolist()


def _copy_mode(kw: dict) -> bool:
    mode = kw.get("data_copy_mode")
    return mode is not None and enum_of(mode, attrs.DataCopyMode) is not \
        attrs.DataCopyMode.NORM


def _block_base(st, where, kw: dict) -> int:
    if kw.get("post_update"):
        return st.advance(where, int(kw.get("repeat_stride") or 0) * 32)
    return st.base(where)


# ---------------------------------------------------------------- loads


_GENERIC = {  # generic distribution → element bytes for a register lane of 1 / 2 / 4+ bytes
    "BRC": (1, 2, 4), "US": (1, 2, 2), "DS": (1, 2, 2), "UNPK": (1, 2, 4), "E2B": (2, 2, 4),
}


def _dist_kind(name: str, dtype: DataType) -> tuple[str, int]:
    """(distribution kind, element bytes): the `_Bk` suffix, or the register's lane width."""
    kind, _, suffix = name.partition("_B")
    if suffix.isdigit():
        return kind, int(suffix) // 8
    size = lane_bytes(dtype)
    return kind, _GENERIC[kind][0 if size == 1 else 1 if size == 2 else 2]


def _distributed(st, op: str, start: int, name: str, dtype: DataType) -> torch.Tensor:
    """The 256 bytes a one-register distribution loads from byte `start`."""
    if name == "NORM":
        return st.read(start, VL, op).clone()
    if name == "BLK":
        return st.read(start, 32, op).repeat(8)
    if name == "UNPK4":
        low = st.read(start, VL // 4, op).reshape(-1, 1)
        return torch.cat([low, low.new_zeros(low.shape[0], 3)], dim=1).reshape(-1)
    if name.startswith("DINTLV"):
        raise VFOpError(f"vf.{op}: the {name} distribution loads two registers: "
                        f"a, b = vf.load_align(tile, offset, dist=pl.LoadDist.{name})")
    kind, k = _dist_kind(name, dtype)
    if kind == "BRC":
        return st.read(start, k, op).repeat(VL // k)
    if kind == "US":
        return st.read(start, VL // 2, op).reshape(-1, k).repeat_interleave(2, dim=0).reshape(-1)
    if kind == "DS":
        return st.read(start, 2 * VL, op).reshape(-1, 2, k)[:, 0].reshape(-1)
    if kind == "UNPK":
        low = st.read(start, VL // 2, op).reshape(-1, k)
        return torch.cat([low, torch.zeros_like(low)], dim=1).reshape(-1)
    return st.read(start, 8 * k, op).reshape(8, k).repeat(1, 32 // k).reshape(-1)  # E2B


def _register(raw: torch.Tensor, dtype: DataType) -> Reg:
    if raw.storage_offset() % max(1, bits(dtype) // 8):
        raw = raw.clone()
    return Reg(raw.contiguous().view(storage_dtype(dtype)).clone(), dtype)


def _dist_name(kw: dict) -> str:
    dist = kw.get("dist")
    return enum_of(dist, attrs.LoadDist).name if dist is not None else "NORM"


def load_align(st, a: list, kw: dict, old, dtype: DataType | None):
    where = ub(a[0], "load_align")
    offset = arg(a, kw, 1, "offset")
    if _copy_mode(kw):  # vsldb: the offset position holds the block predicate
        blocks = _block_active(mask(offset, "load_align"))
        stride = int(kw.get("block_stride") or 0) * 32
        start = _block_base(st, where, kw)
        raw = torch.cat([st.read(start + j * stride, 32, "load_align") if on else
                         torch.zeros(32, dtype=torch.uint8) for j, on in enumerate(blocks)])
        return _register(raw, dtype)
    start = address(st, "load_align", where, offset, dtype, kw)
    name = _dist_name(kw)
    if name.startswith("DINTLV"):
        k = int(name.rpartition("_B")[2]) // 8
        pairs = st.read(start, 2 * VL, "load_align").reshape(-1, 2, k)
        return _register(pairs[:, 0].reshape(-1), dtype), _register(pairs[:, 1].reshape(-1),
                                                                    dtype)
    if name == "NORM" and start % max(1, bits(dtype) // 8) == 0 and bits(dtype) >= 8:
        return Reg(st.read_typed(start, lane_count(dtype), dtype, "load_align").clone(), dtype)
    return _register(_distributed(st, "load_align", start, name, dtype), dtype)


def _predicate_address(st, where, offset, kw: dict, offset_counts: bool) -> int:
    """Where a predicate load / store reaches: an AddrReg's offset; with post_update the
    cursor, then on by `offset` 32-bit words (the backend's uint32_t pointer); else the tile,
    plus `offset` words when `offset_counts` (`psts` writes at offset 0)."""
    if isinstance(offset, AddrReg):
        return st.base(where) + offset.nbytes
    if kw.get("post_update"):
        return st.advance(where, 4 * int(offset or 0))
    return st.base(where) + (4 * int(offset or 0) if offset_counts else 0)


def load_mask(st, a: list, kw: dict, old, dtype: DataType | None) -> Mask:
    """`plds` / `pld`: a predicate from UB (NORM, US, DS); an integer offset counts 32-bit
    words, as the backend's uint32_t pointer does."""
    where = ub(a[0], "load_align")
    start = _predicate_address(st, where, arg(a, kw, 1, "offset"), kw, True)
    name = _dist_name(kw)
    if name == "NORM":
        return mask_of_bytes(st.read(start, 32, "load_align"))
    if name == "US":
        return Mask(mask_of_bytes(st.read(start, 16, "load_align")).bits.repeat_interleave(2))
    if name == "DS":
        low, high = (mask_of_bytes(st.read(start + 32 * k, 32, "load_align")) for k in (0, 1))
        return Mask(torch.cat([low.bits, high.bits])[0::2].clone())
    raise VFOpError(f"vf.load_align into a predicate takes dist NORM, US or DS, not {name}")


def gather(st, a: list, kw: dict, old, dtype: DataType | None) -> Reg:
    if isinstance(a[0], Reg):
        return _select_lanes(a[0], reg(a[1], "gather", "index"))
    where, index = ub(a[0], "gather"), reg(a[1], "gather", "index")
    if index.dtype.is_float or index.dtype.kind not in ("uint", "int"):
        raise VFOpError(f"vf.gather: the index register must be integer, not {index.dtype.value}")
    m = mask(arg(a, kw, 2, "mask"), "gather")
    base = st.base(where)
    if _copy_mode(kw):  # vgatherb: 32-byte blocks at the byte offsets of index lanes 0..7
        offsets = index.values()[:8].tolist()
        blocks = _block_active(m)
        raw = torch.cat([st.read(base + int(off), 32, "gather") if on else
                         torch.zeros(32, dtype=torch.uint8) for off, on in zip(offsets, blocks)])
        return _register(raw, dtype)
    size = max(1, bits(st.tile_dtype(where)) // 8)
    slot = max(size, lane_bytes(index.dtype))
    n = VL // slot
    idx = index.values()[:n]
    active = m.bits[::slot][:n]
    out = torch.zeros(n, slot, dtype=torch.uint8)
    picked = idx[active]
    if picked.numel():
        out[active, :size] = st.gather(base + picked * size, size, "gather").reshape(-1, size)
    return _register(out.reshape(-1), dtype)


def _select_lanes(src: Reg, index: Reg) -> Reg:
    if bits(src.dtype) != bits(index.dtype):
        raise VFOpError(f"vf.gather between registers needs an index as wide as the source, "
                        f"not {index.dtype.value} for {src.dtype.value}")
    codes = src.codes()
    idx = index.values() % codes.numel()
    return Reg(codes[idx].clone(), src.dtype)


def create_addr_reg(st, a: list, kw: dict, old, dtype: DataType | None) -> AddrReg:
    """index0 · stride0 + index1 · stride1 + ... elements of `dtype` (the loop indices the
    hardware binds the register to)."""
    if len(a) % 2 or not 2 <= len(a) <= 8:
        raise VFOpError("vf.create_addr_reg takes 1 to 4 (index, stride) pairs")
    return AddrReg(sum(int(a[k]) * int(a[k + 1]) for k in range(0, len(a), 2)),
                   dtype or DataType.FP32)


# ---------------------------------------------------------------- stores


_STORE_BYTES = {"NORM_B16": 2, "INTLV_B32": 4}


def _store_lanes(st, op: str, where, start: int, raw: torch.Tensor, active: torch.Tensor | None
                 ) -> None:
    """Write `raw` ([lanes, bytes]) at `start`, the active lanes only (None: all)."""
    st.write(where.tile, start, raw, active, op)


def _store_register(st, where, start: int, src: Reg, name: str, m: Mask, op: str) -> None:
    size = lane_bytes(src.dtype)
    raw = src.data.contiguous().view(torch.uint8)
    if name in ("NORM", "NORM_B16"):
        k = _STORE_BYTES.get(name, size)
        active = None if m.bits.all() else m.bits[::k]
        _store_lanes(st, op, where, start, raw.reshape(-1, k), active)
    elif name == "FIRST_ELEMENT":  # ONEPT_B8 / B16 / B32
        _store_lanes(st, op, where, start, raw[:min(size, 4)].reshape(1, -1), None)
    elif name in ("PACK", "PACK4"):
        k = 4 if name == "PACK4" else max(2, size)
        keep = 1 if name == "PACK4" else k // 2
        _store_lanes(st, op, where, start, raw.reshape(-1, k)[:, :keep], m.bits[::k])
    else:
        raise VFOpError(f"vf.{op}: the {name} distribution stores two registers: "
                        f"vf.store_align(tile, a, b, mask, dist=pl.StoreDist.{name})")


def store_align(st, a: list, kw: dict, old, dtype: DataType | None) -> None:
    where = ub(a[0], "store_align")
    if isinstance(a[1], Mask):
        return _store_mask(st, where, a, kw)
    src = reg(a[1], "store_align", "source")
    dist = kw.get("dist")
    name = enum_of(dist, attrs.StoreDist).name if dist is not None else "NORM"
    if name.startswith("INTLV"):
        other = reg(arg(a, kw, 2, None), "store_align", "second source")
        k = _STORE_BYTES.get(name, lane_bytes(src.dtype))
        m = mask(arg(a, kw, 3, "mask"), "store_align")
        lanes = torch.stack([src.data.contiguous().view(torch.uint8).reshape(-1, k),
                             other.data.contiguous().view(torch.uint8).reshape(-1, k)], dim=1)
        active = m.bits[::k].repeat_interleave(2)
        _store_lanes(st, "store_align", where, st.base(where), lanes.reshape(-1, k), active)
        return None
    m = mask(arg(a, kw, 2, "mask"), "store_align")
    if _copy_mode(kw):  # vsstb: block j at j * block_stride blocks where the predicate is set
        stride = int(arg(a, kw, 3, "block_stride", 0)) * 32
        kw = {**kw, "repeat_stride": arg(a, kw, 4, "repeat_stride", 0)}
        start = _block_base(st, where, kw)
        raw = src.data.contiguous().view(torch.uint8).reshape(8, 32)
        for j, on in enumerate(_block_active(m)):
            if on:
                _store_lanes(st, "store_align", where, start + j * stride, raw[j:j + 1], None)
        return None
    start = address(st, "store_align", where, arg(a, kw, 3, "offset"), src.dtype, kw)
    _store_register(st, where, start, src, name, m, "store_align")
    return None


def _store_mask(st, where, a: list, kw: dict) -> None:
    """`psts` / `pst`: the predicate's bits (NORM 32 bytes, PACK every other bit: 16)."""
    m = a[1]
    start = _predicate_address(st, where, arg(a, kw, 2, "offset"), kw, False)
    dist = kw.get("dist")
    packed = dist is not None and enum_of(dist, attrs.StoreDist) is attrs.StoreDist.PACK
    raw = mask_bytes(Mask(m.bits[0::2])) if packed else mask_bytes(m)
    _store_lanes(st, "store_align", where, start, raw.reshape(1, -1), None)


def scatter(st, a: list, kw: dict, old, dtype: DataType | None) -> None:
    """tile[index[i]] = src[i] on active lanes (b8: src[2i]; later lanes win on equal
    indices)."""
    where, src = ub(a[0], "scatter"), reg(a[1], "scatter", "source")
    index = reg(a[2], "scatter", "index")
    size = max(1, bits(src.dtype) // 8)
    step = 2 if size == 1 else 1
    raw = src.data.contiguous().view(torch.uint8).reshape(-1, size)[::step]
    n = min(index.data.numel(), raw.shape[0])
    m = mask(arg(a, kw, 3, "mask"), "scatter")
    active = m.bits[::size * step][:n]
    idx = index.values()[:n][active]
    base = st.base(where)
    st.scatter(where.tile, base + idx * size, raw[:n][active], "scatter")


def mem_bar(st, a: list, kw: dict, old, dtype: DataType | None) -> None:
    """Ordering between the section's UB accesses: they already run in program order here."""


def clear_spr(st, a: list, kw: dict, old, dtype: DataType | None) -> None:
    st.spr = 0


OPS: dict[str, tuple[Callable, str]] = {
    "load_align": (load_align, "load"), "gather": (gather, "gather"),
    "create_addr_reg": (create_addr_reg, "free"),
    "store_align": (store_align, "store"), "scatter": (scatter, "store"),
    "mem_bar": (mem_bar, "free"), "clear_spr": (clear_spr, "free"),
}
