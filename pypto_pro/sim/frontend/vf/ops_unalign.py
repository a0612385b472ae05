"""Reg API unaligned UB access (spec §2.13 "Load/store"): the `UnalignReg` buffers of
`vldas` / `vldus` and `vstus` / `vstas`, and the all-in-one `vf.load` / `vf.store`.

A load's align register holds one 32-byte block. `load_unalign_pre(ureg, tile)` reads the block
holding the tile's address; `load_unalign(ureg, tile[, stride])` at byte A returns the
register's bytes from A mod 32 on, then UB from there to A + 256, and keeps the block holding
A + 256 (so a run of loads at A, A + 256, ... needs one `pre`, and a stale register gives stale
bytes, as on hardware). Without `stride` it reads at the tile; with one at the tile's cursor,
which then advances by `stride` elements.

A store's align register holds the bytes not yet written. `store_unalign(tile, src, ureg,
count)` appends `count` elements of src at the cursor: everything up to the last 32-byte
boundary reaches UB, the rest stays in the register; `post_update=True` advances the cursor by
`count`. Without `count` it stores the AR special register's byte count (what
`vf.squeeze(..., STORE_REG)` leaves there) and always advances. A predicate source stores its
lane bits packed (`pstu`: one bit per b16 / b32 lane) and advances. `store_unalign_post(tile,
ureg[, stride])` writes what is left (advancing by `stride` with `post_update`).

`vf.load(tile[, stride])` is `vldas` + `vldus` in one (at the cursor advancing by `stride`
when given, else at the tile); `vf.store(tile, src[, count])` is `vstus` + `vstas`: `count`
elements (default a whole register) at the cursor, which advances by `count`.
"""
from __future__ import annotations

from collections.abc import Callable

import torch

from pypto_pro.ir.dtype import DataType

from ...model.memory import storage_dtype
from .args import VFOpError, arg, reg, ub
from .regs import VL, AlignReg, Mask, Reg, bits, lane_bytes, mask_bytes, mask_width

# ---------------------------------------------------------------- loads


def _prime(st, ureg: AlignReg, addr: int) -> None:
    block = addr - addr % 32
    ureg.data, ureg.addr = st.read(block, 32, "load_unalign_pre").clone(), block


def _read_through(st, ureg: AlignReg, addr: int, dtype: DataType, op: str) -> Reg:
    k = addr % 32
    head = ureg.data[k:] if ureg.data.numel() == 32 else st.read(addr, 32 - k, op)
    tail = st.read(addr + 32 - k, VL - 32 + k, op)
    _prime(st, ureg, addr + VL)
    raw = torch.cat([head, tail])
    return Reg(raw.view(storage_dtype(dtype)).clone(), dtype)


def _ureg(value, op: str) -> AlignReg:
    if not isinstance(value, AlignReg):
        raise VFOpError(f"vf.{op}: the align register must come from vf.load_unalign_init() / "
                        f"vf.unalign_reg_for_store(), got {type(value).__name__}")
    return value


def load_unalign_init(st, a: list, kw: dict, old, dtype: DataType | None) -> AlignReg:
    return AlignReg()


def load_unalign_pre(st, a: list, kw: dict, old, dtype: DataType | None) -> None:
    ureg, where = _ureg(a[0], "load_unalign_pre"), ub(a[1], "load_unalign_pre")
    _prime(st, ureg, st.base(where))


def _element_bytes(count, dtype: DataType) -> int:
    return int(count) * max(8, bits(dtype)) // 8


def load_unalign(st, a: list, kw: dict, old, dtype: DataType | None) -> Reg:
    ureg, where = _ureg(a[0], "load_unalign"), ub(a[1], "load_unalign")
    stride = arg(a, kw, 2, "stride")
    addr = st.base(where) if stride is None else st.advance(where, _element_bytes(stride, dtype))
    return _read_through(st, ureg, addr, dtype, "load_unalign")


def load(st, a: list, kw: dict, old, dtype: DataType | None) -> Reg:
    where = ub(a[0], "load")
    stride = arg(a, kw, 1, "stride")
    addr = st.base(where) if stride is None else st.advance(where, _element_bytes(stride, dtype))
    ureg = AlignReg()
    _prime(st, ureg, addr)
    return _read_through(st, ureg, addr, dtype, "load")


# ---------------------------------------------------------------- stores


def unalign_reg_for_store(st, a: list, kw: dict, old, dtype: DataType | None) -> AlignReg:
    return AlignReg()


def _flush(st, tile: int, ureg: AlignReg, op: str) -> None:
    if ureg.data.numel():
        st.write(tile, ureg.addr, ureg.data.reshape(1, -1), None, op)
    ureg.data = ureg.data[:0]


def _append(st, tile: int, ureg: AlignReg, addr: int, raw: torch.Tensor, op: str) -> None:
    """Stage `raw` for byte `addr`: write up to the last 32-byte boundary, keep the rest."""
    if ureg.data.numel() and ureg.addr + ureg.data.numel() == addr:
        raw, addr = torch.cat([ureg.data, raw]), ureg.addr
    else:
        _flush(st, tile, ureg, op)
    end = addr + raw.numel()
    cut = max(addr, end - end % 32) - addr
    if cut:
        st.write(tile, addr, raw[:cut].reshape(1, -1), None, op)
    ureg.data, ureg.addr = raw[cut:].clone(), addr + cut


def _lane_bits(m: Mask, dtype: DataType | None) -> torch.Tensor:
    """`pstu`: the predicate's lane bits packed, one per b16 / b32 lane."""
    width = mask_width(dtype)
    if width not in (2, 4):
        raise VFOpError("vf.store_unalign stores predicates of b16 / b32 lanes")
    return mask_bytes(Mask(m.bits[::width]))


def store_unalign(st, a: list, kw: dict, old, dtype: DataType | None) -> None:
    where = ub(a[0], "store_unalign")
    ureg = _ureg(arg(a, kw, 2, "align_reg"), "store_unalign")
    cursor = st.cursor(where)
    if isinstance(a[1], Mask):
        raw = _lane_bits(a[1], dtype)
        _append(st, where.tile, ureg, cursor, raw, "store_unalign")
        st.advance(where, raw.numel())
        return
    src = reg(a[1], "store_unalign", "source")
    count = arg(a, kw, 3, "stride")
    size = lane_bytes(src.dtype)
    nbytes = st.spr if count is None else int(count) * size
    if not 0 <= nbytes <= VL:
        raise VFOpError(f"vf.store_unalign stores at most one register ({VL} bytes), "
                        f"not {nbytes}")
    raw = src.data.contiguous().view(torch.uint8)[:nbytes]
    _append(st, where.tile, ureg, cursor, raw, "store_unalign")
    if count is None or kw.get("post_update"):
        st.advance(where, nbytes)


def store_unalign_post(st, a: list, kw: dict, old, dtype: DataType | None) -> None:
    where = ub(a[0], "store_unalign_post")
    ureg = _ureg(arg(a, kw, 1, "align_reg"), "store_unalign_post")
    _flush(st, where.tile, ureg, "store_unalign_post")
    stride = arg(a, kw, 2, "stride")
    if stride is not None and kw.get("post_update"):
        st.advance(where, int(stride) * max(1, bits(st.tile_dtype(where)) // 8))


def store(st, a: list, kw: dict, old, dtype: DataType | None) -> None:
    where, src = ub(a[0], "store"), reg(a[1], "store", "source")
    size = lane_bytes(src.dtype)
    count = arg(a, kw, 2, "count")
    nbytes = VL if count is None else int(count) * size
    if not 0 <= nbytes <= VL:
        raise VFOpError(f"vf.store stores at most one register ({VL // size} elements of "
                        f"{src.dtype.value}), not {count}")
    ureg = AlignReg()
    _append(st, where.tile, ureg, st.advance(where, nbytes),
            src.data.contiguous().view(torch.uint8)[:nbytes], "store")
    _flush(st, where.tile, ureg, "store")


OPS: dict[str, tuple[Callable, str]] = {
    "load_unalign_init": (load_unalign_init, "free"),
    "load_unalign_pre": (load_unalign_pre, "load"), "load_unalign": (load_unalign, "load"),
    "load": (load, "load"),
    "unalign_reg_for_store": (unalign_reg_for_store, "free"),
    "store_unalign": (store_unalign, "store"),
    "store_unalign_post": (store_unalign_post, "store"), "store": (store, "store"),
}
