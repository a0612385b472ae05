"""Reg API predicates (spec §2.13 "Masks", "Compare/select"): making them, comparing into them
and the predicate forms of the unified ops.

A predicate has one bit per register byte; a lane of a b8/b16/b32 type is active when the bit
of its first byte is set. The patterns of `create_mask` set every byte of an active lane.
`update_mask(n)` is `plt`: the first n lanes, n read as a uint32. `get_mask_spr` is `movp`: the
vector-mask SPR {MASK1, MASK0} (`pl.set_vec_mask`, all ones after `pl.reset_mask`) bit i to
lane i, b32 lanes from MASK0, b16 lanes from MASK0 then MASK1. `mask_gen_with_reg_tensor(src,
offset)` is `movvp`: lane i active where bit `offset` of src[i] is set. A compare's second
operand may be a scalar (vcmps). The unified ops on predicates (`p*` instructions): and / or /
xor / not (`pnot(src, preg)` is ~src & preg), `select(a, b, sel)` (a where sel, else b),
`move` (a copy; with a predicate src & preg),
`pack(src, part)` (the even bits into the lower / upper half, the other half zero), `unpack(src,
part)` (each bit of the lower / upper half twice), `interleave` / `de_interleave` of the lanes
of the predicate's width (`dtype=`, else the width it was made for).
"""
from __future__ import annotations

from collections.abc import Callable

import torch

from pypto_pro.ir import attrs
from pypto_pro.ir.dtype import DataType

from .args import VFOpError, arg, enum_of, mask, reg, same_dtype, scalar
from .regs import (
    Mask,
    Reg,
    first_lanes,
    from_codes,
    lane_count,
    mask_of_lanes,
    mask_width,
    predicated,
)


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
    """The first n lanes, n converted to uint32 as the generated `plt` does."""
    return first_lanes(int(arg(a, kw, 0, "scalar", 0)) % (1 << 32), _width(kw, dtype))


def mask_gen_with_reg_tensor(st, a: list, kw: dict, old, dtype: DataType | None) -> Mask:
    """Lanes whose bit `offset` is set (b16 / b32 registers)."""
    x = reg(a[0], "mask_gen_with_reg_tensor")
    width = x.dtype.bits
    offset = int(arg(a, kw, 1, "offset", 0))
    if width not in (16, 32) or not 0 <= offset < width:
        raise VFOpError(f"vf.mask_gen_with_reg_tensor reads bit 0..{width - 1} of b16 / b32 lanes, "
                     f"not bit {offset} of {x.dtype.value}")
    raw = x.data.contiguous().view(torch.int16 if width == 16 else torch.int32).to(torch.int64)
    return mask_of_lanes((raw >> offset) & 1 == 1, x.dtype)


def get_mask_spr(st, a: list, kw: dict, old, dtype: DataType | None) -> Mask:
    width = enum_of(arg(a, kw, 0, "width", attrs.MaskWidth.B32), attrs.MaskWidth)
    lane_type = DataType.FP32 if width is attrs.MaskWidth.B32 else DataType.FP16
    hi, lo = st.vector_mask
    word = lo | (hi << 64)
    n = lane_count(lane_type)
    active = torch.tensor([(word >> i) & 1 == 1 for i in range(n)], dtype=torch.bool)
    return mask_of_lanes(active, lane_type)


_COMPARE: dict[str, Callable] = {"eq": torch.eq, "ne": torch.ne, "lt": torch.lt, "gt": torch.gt,
                                 "le": torch.le, "ge": torch.ge}


def _compare(name: str):
    fn = _COMPARE[name]

    def op(st, a: list, kw: dict, old, dtype: DataType | None) -> Mask:
        """Register against register (vcmp) or against a scalar in the register's type
        (vcmps)."""
        x = reg(a[0], name)
        if isinstance(a[1], Reg):
            same_dtype(name, x, a[1])
            y = a[1].values()
        else:
            y = scalar(a[1], x.dtype)
        active = mask(arg(a, kw, 2, "mask"), name).lanes(x.dtype)
        return mask_of_lanes(fn(x.values(), y) & active, x.dtype)
    return op


def select(st, a: list, kw: dict, old, dtype: DataType | None) -> Reg:
    t, f = reg(a[0], "select"), reg(a[1], "select")
    same_dtype("select", t, f)
    on = mask(arg(a, kw, 2, "mask"), "select").lanes(t.dtype)
    return from_codes(torch.where(on, t.codes(), f.codes()), t.dtype)


def move(st, a: list, kw: dict, old, dtype: DataType | None) -> Reg:
    """A register copy: with a predicate the active lanes, the others keep the destination
    (MERGING, the only mode)."""
    src = reg(a[0], "move")
    m = arg(a, kw, 1, "mask")
    return src if m is None else predicated(src, old, mask(m, "move"), True)


# ---------------------------------------------------------------- predicate forms


def _masks(a: list, n: int, op: str) -> list[Mask]:
    return [mask(a[k], op) for k in range(n)]


def _logic(name: str, fn: Callable):
    def op(st, a: list, kw: dict, old, dtype: DataType | None) -> Mask:
        x, y = _masks(a, 2, name)
        preg = mask(arg(a, kw, 2, "mask"), name)
        return Mask(fn(x.bits, y.bits) & preg.bits)
    return op


def mask_not(st, a: list, kw: dict, old, dtype: DataType | None) -> Mask:
    x = mask(a[0], "not_")
    return Mask(~x.bits & mask(arg(a, kw, 1, "mask"), "not_").bits)


def mask_select(st, a: list, kw: dict, old, dtype: DataType | None) -> Mask:
    x, y, sel = _masks(a, 3, "select")
    return Mask(torch.where(sel.bits, x.bits, y.bits))


def mask_move(st, a: list, kw: dict, old, dtype: DataType | None) -> Mask:
    src = mask(a[0], "move")
    m = arg(a, kw, 1, "mask")
    return src if m is None else Mask(src.bits & mask(m, "move").bits)


def _part(a: list, kw: dict) -> int:
    return int(enum_of(arg(a, kw, 2, "part", attrs.PackPart.LOWER), attrs.PackPart))


def mask_pack(st, a: list, kw: dict, old, dtype: DataType | None) -> Mask:
    src = mask(a[0], "pack")
    out = torch.zeros_like(src.bits)
    half = src.bits.numel() // 2
    start = _part(a, kw) * half
    out[start:start + half] = src.bits[0::2]
    return Mask(out)


def mask_unpack(st, a: list, kw: dict, old, dtype: DataType | None) -> Mask:
    src = mask(a[0], "unpack")
    half = src.bits.numel() // 2
    start = _part(a, kw) * half
    return Mask(src.bits[start:start + half].repeat_interleave(2))


def _lanes_of(m: Mask, width: int) -> torch.Tensor:
    return m.bits.reshape(-1, width)


def _lane_width(kw: dict, dtype: DataType | None) -> int:
    return mask_width(kw.get("dtype") or dtype)


def mask_interleave(st, a: list, kw: dict, old, dtype: DataType | None) -> tuple[Mask, Mask]:
    x, y = _masks(a, 2, "interleave")
    w = _lane_width(kw, dtype)
    both = torch.stack([_lanes_of(x, w), _lanes_of(y, w)], dim=1).reshape(-1)
    return Mask(both[:256].clone()), Mask(both[256:].clone())


def mask_de_interleave(st, a: list, kw: dict, old, dtype: DataType | None
                       ) -> tuple[Mask, Mask]:
    x, y = _masks(a, 2, "de_interleave")
    w = _lane_width(kw, dtype)
    lanes = torch.cat([_lanes_of(x, w), _lanes_of(y, w)])
    return Mask(lanes[0::2].reshape(-1).clone()), Mask(lanes[1::2].reshape(-1).clone())


OPS: dict[str, tuple[Callable, str]] = {
    "create_mask": (create_mask, "mask"), "update_mask": (update_mask, "mask"),
    "mask_gen_with_reg_tensor": (mask_gen_with_reg_tensor, "mask"),
    "get_mask_spr": (get_mask_spr, "mask"),
    **{n: (_compare(n), "compare") for n in _COMPARE},
    "select": (select, "select"), "move": (move, "copy"),
}

#: the predicate forms of the unified ops (the section picks them for a predicate operand)
MASK_FORMS: dict[str, Callable] = {
    "and_": _logic("and_", torch.bitwise_and), "or_": _logic("or_", torch.bitwise_or),
    "xor": _logic("xor", torch.bitwise_xor), "not_": mask_not, "select": mask_select,
    "move": mask_move, "pack": mask_pack, "unpack": mask_unpack,
    "interleave": mask_interleave, "de_interleave": mask_de_interleave,
}
