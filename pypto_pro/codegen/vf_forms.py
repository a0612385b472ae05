"""Reg API ops whose C++ form depends on their operands, as the real backend dispatches them
(`backend_cce_vf_ops.cpp`): UB access (aligned, post-update, AddrReg, DataBlock, predicate and
unaligned forms, `vf.load` / `vf.store`), gathers, address registers, two-result ops and the
predicate forms of the unified ops.

Each emitter gets the destination register names (none, one, or two for a pair) and writes one
or more statements. UB operands are the tile's pointer (`tile + k` an offset pointer) and an
element offset of the tile's dtype; a post-update access names the operand's cursor (a pointer
hoisted with the others, `emit_vf_section`), which the intrinsic advances.
"""
from __future__ import annotations

from collections.abc import Callable

from ..ir import attrs
from ..ir.dtype import DataType
from ..ir.nodes import Call, Expr
from ..ir.span import Span
from ..ir.types import AddrRegType, MaskType, RegType
from . import vf


def _line(body, text: str, span: Span | None) -> None:
    body.w.line(text + ";", span)


def _call(body, name: str, args: list[str], span: Span | None) -> None:
    _line(body, f"{name}({', '.join(args)})", span)


def _arg(call: Call, pos: int, key: str | None = None):
    if pos < len(call.args):
        return call.args[pos]
    return call.kwarg(key) if key else None


def _text(body, value, default: str = "0") -> str:
    if value is None:
        return default
    return vf.operand(body, value) if isinstance(value, Expr) else vf.enum_text(value)


def _type(e) -> object:
    return getattr(e, "type", None)


def _is(e, kind) -> bool:
    return isinstance(_type(e), kind)


def _width(dtype: DataType | None) -> int:
    """b8 / b16 / b32 / b64 of a lane of `dtype` (4-bit types count as b8)."""
    return max(8, dtype.bits) if dtype is not None else 32


def _post(call: Call) -> bool:
    return bool(call.kwarg("post_update"))


def _blocks(call: Call) -> bool:
    mode = call.kwarg("data_copy_mode")
    return mode is not None and attrs.DataCopyMode(int(mode)) is not attrs.DataCopyMode.NORM


def _dist(call: Call, enum, default: str = "NORM") -> str:
    value = call.kwarg("dist")
    return enum(int(value)).name if value is not None else default


# ---------------------------------------------------------------- loads


_LOAD_GENERIC = {"BRC": ("BRC_B8", "BRC_B16", "BRC_B32"), "US": ("US_B8", "US_B16", "US_B16"),
                 "DS": ("DS_B8", "DS_B16", "DS_B16"), "UNPK": ("UNPK_B8", "UNPK_B16", "UNPK_B32"),
                 "E2B": ("E2B_B16", "E2B_B16", "E2B_B32"), "UNPK4": ("UNPK4_B8",) * 3}


def _load_dist(call: Call, dtype: DataType) -> str:
    """The explicit-granularity distribution the backend emits (generic names by the
    register's width)."""
    name = _dist(call, attrs.LoadDist)
    forms = _LOAD_GENERIC.get(name)
    if forms is None:
        return name
    w = _width(dtype)
    return forms[0 if w == 8 else 1 if w == 16 else 2]


def load_align(body, call: Call, dsts: list[str], span: Span | None) -> None:
    tile, offset = call.args[0], _arg(call, 1, "offset")
    rtype = call.type
    if isinstance(rtype, MaskType):
        dist = _dist(call, attrs.LoadDist)
        if _is(offset, AddrRegType):
            return _call(body, "pld", [dsts[0], vf.operand(body, tile), _text(body, offset),
                                       dist], span)
        ptr = vf.cursor(body, tile) if _post(call) else vf.operand(body, tile)
        tail = ["POST_UPDATE"] if _post(call) else []
        return _call(body, "plds", [dsts[0], ptr, _text(body, offset), dist, *tail], span)
    if _blocks(call):
        ptr = vf.cursor(body, tile) if _post(call) else vf.operand(body, tile)
        tail = ["POST_UPDATE"] if _post(call) else []
        return _call(body, "vsldb", [dsts[0], ptr, _text(body, call.kwarg("block_stride")),
                                     _text(body, call.kwarg("repeat_stride")),
                                     _text(body, offset), *tail], span)
    dtype = vf.dst_dtype(call)
    if len(dsts) == 2:
        return _call(body, "vlds", [*dsts, vf.operand(body, tile), _text(body, offset),
                                    _dist(call, attrs.LoadDist, f"DINTLV_B{_width(dtype)}")],
                     span)
    dist = _load_dist(call, dtype)
    if _is(offset, AddrRegType):
        return _call(body, "vld", [dsts[0], vf.operand(body, tile), _text(body, offset), dist],
                     span)
    if _post(call):
        return _call(body, "vlds", [dsts[0], vf.cursor(body, tile), _text(body, offset), dist,
                                    "POST_UPDATE"], span)
    return _call(body, "vlds", [dsts[0], vf.operand(body, tile), _text(body, offset), dist],
                 span)


def load(body, call: Call, dsts: list[str], span: Span | None) -> None:
    """`vldas` + `vldus` through a fresh align register."""
    tile, stride = call.args[0], _arg(call, 1, "stride")
    ureg = vf.fresh_align_reg(body, span)
    if stride is None:
        ptr = vf.operand(body, tile)
        _call(body, "vldas", [ureg, ptr], span)
        return _call(body, "vldus", [dsts[0], ureg, ptr], span)
    cur = vf.cursor(body, tile)
    _call(body, "vldas", [ureg, cur], span)
    _call(body, "vldus", [dsts[0], ureg, cur, _text(body, stride), "POST_UPDATE"], span)


def load_unalign_pre(body, call: Call, dsts: list[str], span: Span | None) -> None:
    _call(body, "vldas", [vf.operand(body, call.args[0]), vf.operand(body, call.args[1])], span)


def load_unalign(body, call: Call, dsts: list[str], span: Span | None) -> None:
    ureg, tile, stride = call.args[0], call.args[1], _arg(call, 2, "stride")
    if stride is None:
        return _call(body, "vldus", [dsts[0], vf.operand(body, ureg), vf.operand(body, tile)],
                     span)
    _call(body, "vldus", [dsts[0], vf.operand(body, ureg), vf.cursor(body, tile),
                          _text(body, stride), "POST_UPDATE"], span)


def align_reg(body, call: Call, dsts: list[str], span: Span | None) -> None:
    _line(body, f"{dsts[0]} = UnalignReg()", span)


def gather(body, call: Call, dsts: list[str], span: Span | None) -> None:
    src, index = call.args[0], call.args[1]
    if _is(src, RegType):
        return _call(body, "vselr", [dsts[0], vf.operand(body, src), vf.operand(body, index)],
                     span)
    name = "vgatherb" if _blocks(call) else "vgather2"
    _call(body, name, [dsts[0], vf.operand(body, src), vf.operand(body, index),
                       _text(body, _arg(call, 2, "mask"), "pset_b8(PAT_ALL)")], span)


def create_addr_reg(body, call: Call, dsts: list[str], span: Span | None) -> None:
    """`vag_bK(index0, stride0, ...)`: the backend emits the strides only (the hardware binds
    the register to its loops); the native header takes the indices alongside."""
    bits = min(32, _width(vf.dst_dtype(call)))
    _line(body, f"{dsts[0]} = vag_b{bits}({', '.join(vf.operand(body, a) for a in call.args)})",
          span)


# ---------------------------------------------------------------- stores


def _store_dist(call: Call, dtype: DataType) -> str:
    name = _dist(call, attrs.StoreDist)
    w = _width(dtype)
    return {"NORM": f"NORM_B{w}", "FIRST_ELEMENT": f"ONEPT_B{min(w, 32)}",
            "PACK": f"PK_B{max(16, w)}", "PACK4": "PK4_B32",
            "INTLV": f"INTLV_B{min(w, 32)}"}.get(name, name)


def store_align(body, call: Call, dsts: list[str], span: Span | None) -> None:
    tile, src = call.args[0], call.args[1]
    if _is(src, MaskType):
        offset = _arg(call, 2, "offset")
        dist = "PK" if _dist(call, attrs.StoreDist) == "PACK" else "NORM"
        if _is(offset, AddrRegType):
            return _call(body, "pst", [vf.operand(body, src), vf.operand(body, tile),
                                       _text(body, offset), dist], span)
        if _post(call):
            return _call(body, "psts", [vf.operand(body, src), vf.cursor(body, tile),
                                        _text(body, offset), dist, "POST_UPDATE"], span)
        return _call(body, "psts", [vf.operand(body, src), vf.operand(body, tile), "0", dist],
                     span)
    dtype = _type(src).dtype
    dist = _store_dist(call, dtype)
    if dist.startswith("INTLV"):
        return _call(body, "vsts", [vf.operand(body, src), vf.operand(body, call.args[2]),
                                    vf.operand(body, tile), "0", dist,
                                    _text(body, _arg(call, 3, "mask"))], span)
    mask = _text(body, _arg(call, 2, "mask"), "pset_b8(PAT_ALL)")
    if _blocks(call):
        ptr = vf.cursor(body, tile) if _post(call) else vf.operand(body, tile)
        tail = ["POST_UPDATE"] if _post(call) else []
        return _call(body, "vsstb", [vf.operand(body, src), ptr,
                                     _text(body, _arg(call, 3, "block_stride")),
                                     _text(body, _arg(call, 4, "repeat_stride")), mask, *tail],
                     span)
    offset = _arg(call, 3, "offset")
    if _is(offset, AddrRegType):
        return _call(body, "vst", [vf.operand(body, src), vf.operand(body, tile),
                                   _text(body, offset), f"NORM_B{_width(dtype)}", mask], span)
    if _post(call):
        return _call(body, "vsts", [vf.operand(body, src), vf.cursor(body, tile),
                                    _text(body, offset), dist, mask, "POST_UPDATE"], span)
    _call(body, "vsts", [vf.operand(body, src), vf.operand(body, tile), _text(body, offset),
                         dist, mask], span)


def store(body, call: Call, dsts: list[str], span: Span | None) -> None:
    """`vstus` + `vstas` through a fresh align register, at the cursor."""
    tile, src, count = call.args[0], call.args[1], _arg(call, 2, "count")
    ureg = vf.fresh_align_reg(body, span)
    cur = vf.cursor(body, tile)
    n = _text(body, count, str(256 * 8 // _width(_type(src).dtype)))
    _call(body, "vstus", [ureg, n, vf.operand(body, src), cur, "POST_UPDATE"], span)
    _call(body, "vstas", [ureg, cur, "0", "POST_UPDATE"], span)


def store_unalign(body, call: Call, dsts: list[str], span: Span | None) -> None:
    tile, src, ureg = call.args[0], call.args[1], _arg(call, 2, "align_reg")
    cur, u = vf.cursor(body, tile), vf.operand(body, ureg)
    if _is(src, MaskType):
        bits = _width(_type(src).dtype)
        return _call(body, f"pstu_b{bits}", [u, vf.operand(body, src), cur], span)
    count = _arg(call, 3, "stride")
    if count is None:
        return _call(body, "vstur", [u, vf.operand(body, src), cur, "POST_UPDATE"], span)
    mode = "POST_UPDATE" if _post(call) else "NORM"
    _call(body, "vstus", [u, _text(body, count), vf.operand(body, src), cur, mode], span)


def store_unalign_post(body, call: Call, dsts: list[str], span: Span | None) -> None:
    tile, ureg, stride = call.args[0], _arg(call, 1, "align_reg"), _arg(call, 2, "stride")
    cur, u = vf.cursor(body, tile), vf.operand(body, ureg)
    if stride is None:
        return _call(body, "vstar", [u, cur], span)
    mode = "POST_UPDATE" if _post(call) else "NORM"
    _call(body, "vstas", [u, cur, _text(body, stride), mode], span)


# ---------------------------------------------------------------- registers


def _mode(call: Call) -> str:
    return _text(None, call.kwarg("mode"), "MODE_ZEROING")


def pair(name: str, mask_name: str | None = None) -> Callable:
    """A two-result op: `name(dst0, dst1, operands...)` (`mask_name`: its predicate form)."""
    def emit(body, call: Call, dsts: list[str], span: Span | None) -> None:
        if mask_name is not None and _is(call.args[0], MaskType):
            dtype = call.kwarg("dtype") or _type(call.args[0]).dtype
            return _call(body, f"{mask_name}_b{min(32, _width(dtype))}",
                         [*dsts, *(vf.operand(body, a) for a in call.args[:2])], span)
        args = [vf.operand(body, a) for a in call.args]
        if name in ("vmull", "vaddcs", "vsubcs"):
            args.append(_mode(call))
        _call(body, name, [*dsts, *args], span)
    return emit


def compare(name: str) -> Callable:
    def emit(body, call: Call, dsts: list[str], span: Span | None) -> None:
        a, b = call.args[0], call.args[1]
        form = "vcmp" if _is(b, RegType) else "vcmps"
        _call(body, f"{form}_{name}", [dsts[0], vf.operand(body, a), vf.operand(body, b),
                                       _text(body, _arg(call, 2, "mask"), "pset_b8(PAT_ALL)")],
              span)
    return emit


def get_mask_spr(body, call: Call, dsts: list[str], span: Span | None) -> None:
    width = _arg(call, 0, "width")
    b16 = width is not None and attrs.MaskWidth(int(getattr(width, "value", width))) is \
        attrs.MaskWidth.B16
    _line(body, f"{dsts[0]} = movp_b{16 if b16 else 32}()", span)


#: the predicate forms of the unified ops: (intrinsic, operands it takes)
_MASK_FORMS = {"and_": ("pand", 3), "or_": ("por", 3), "xor": ("pxor", 3), "not_": ("pnot", 2),
               "select": ("psel", 3), "move": ("pmov", 1), "pack": ("ppack", 1),
               "unpack": ("punpack", 1)}


def mask_form(body, call: Call, dsts: list[str], span: Span | None) -> None:
    name, n = _MASK_FORMS[call.op.removeprefix("vf.")]
    args = [vf.operand(body, a) for a in call.args[:n]]
    if name in ("ppack", "punpack"):
        args.append(_text(body, _arg(call, 2, "part"), "LOWER"))
    elif name == "pmov" and len(call.args) > 1:
        args.append(vf.operand(body, call.args[1]))
    _call(body, name, [dsts[0], *args], span)


def layout_op(name: str, scalar: bool) -> Callable:
    """`exp_sub` / `muls_cast`: (dst, a, b | scalar, mask, layout)."""
    def emit(body, call: Call, dsts: list[str], span: Span | None) -> None:
        pos = 4 if name == "vmulscvt" else 3
        _call(body, name, [dsts[0], vf.operand(body, call.args[0]),
                           vf.operand(body, call.args[1]),
                           _text(body, _arg(call, 2, "mask"), "pset_b8(PAT_ALL)"),
                           _text(body, _arg(call, pos, "layout"), "ZERO")], span)
    return emit


def full(body, call: Call, dsts: list[str], span: Span | None) -> None:
    """`vbr` (a scalar, no predicate), `vdup` (a scalar under a predicate, or one lane of a
    register: LOWEST / HIGHEST)."""
    src, mask = call.args[0], _arg(call, 1, "mask")
    mode = _text(body, _arg(call, 3, "mode"), "MODE_ZEROING")
    if _is(src, RegType):
        pos = _text(body, _arg(call, 4, "pos"), "LOWEST")
        return _call(body, "vdup", [dsts[0], vf.operand(body, src),
                                    _text(body, mask, "pset_b8(PAT_ALL)"), pos, mode], span)
    if mask is None:
        return _call(body, "vbr", [dsts[0], vf.operand(body, src)], span)
    _call(body, "vdup", [dsts[0], vf.operand(body, src), vf.operand(body, mask), mode], span)


def unsqueeze(body, call: Call, dsts: list[str], span: Span | None) -> None:
    _call(body, "vusqz", [dsts[0], _text(body, _arg(call, 0, "mask"), "pset_b8(PAT_ALL)")],
          span)


def emit(body, call: Call, dsts: list[str], span: Span | None) -> bool:
    """Write `call` if it has an operand-dependent form here; False when the table's is
    used."""
    name = call.op.removeprefix("vf.")
    if name in _MASK_FORMS and (isinstance(call.type, MaskType) or _is(
            call.args[0] if call.args else None, MaskType)):
        mask_form(body, call, dsts, span)
        return True
    form = FORMS.get(name)
    if form is None:
        return False
    form(body, call, dsts, span)
    return True


FORMS: dict[str, Callable] = {
    "load_align": load_align, "load": load, "load_unalign_pre": load_unalign_pre,
    "load_unalign": load_unalign, "load_unalign_init": align_reg,
    "unalign_reg_for_store": align_reg, "gather": gather, "create_addr_reg": create_addr_reg,
    "store_align": store_align, "store": store, "store_unalign": store_unalign,
    "store_unalign_post": store_unalign_post,
    "mull": pair("vmull"), "addc": pair("vaddcs"), "subc": pair("vsubcs"),
    "interleave": pair("vintlv", "pintlv"), "de_interleave": pair("vdintlv", "pdintlv"),
    **{n: compare(n) for n in ("eq", "ne", "lt", "gt", "le", "ge")},
    "get_mask_spr": get_mask_spr, "exp_sub": layout_op("vexpdif", False),
    "muls_cast": layout_op("vmulscvt", True), "unsqueeze": unsqueeze, "full": full,
}

#: every intrinsic the emitters above may write (for the C++ surface)
NAMES = frozenset({
    "pld", "plds", "vsldb", "vlds", "vld", "vldas", "vldus", "vselr", "vgatherb", "vgather2",
    "vag_b8", "vag_b16", "vag_b32", "pst", "psts", "vsts", "vsstb", "vst", "vstus", "vstas",
    "vstur", "vstar", "pstu_b16", "pstu_b32", "vmull", "vaddcs", "vsubcs", "vintlv", "vdintlv",
    "pintlv_b8", "pintlv_b16", "pintlv_b32", "pdintlv_b8", "pdintlv_b16", "pdintlv_b32",
    *(f"{f}_{c}" for f in ("vcmp", "vcmps") for c in ("eq", "ne", "lt", "gt", "le", "ge")),
    "movp_b16", "movp_b32", "pand", "por", "pxor", "pnot", "psel", "pmov", "ppack", "punpack",
    "vexpdif", "vmulscvt", "vusqz", "vbr", "vdup", "UnalignReg", "AddrReg", "POST_UPDATE",
    "ONEPT_B8",
    "ONEPT_B16", "ONEPT_B32", "PK_B16", "PK_B32", "PK_B64", "PK4_B32", "PK", "INTLV_B8",
    "INTLV_B16", "NORM_B8", "NORM_B32", "NORM_B64", "UNPK4_B8",
})

