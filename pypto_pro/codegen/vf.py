"""VF (Reg API) sections → `__VEC_SCOPE__ { ... }` with RegTensor / MaskReg and `v*` intrinsics.

A VF section is emitted as: the UB base pointer of every tile it touches, hoisted just before
the scope (`__ubuf__ T* a_ub = ...data()`), then `__VEC_SCOPE__` and a block whose first lines
declare every register Var (`RegTensor<T> r;`, `MaskReg m;`), then the body. Each `vf.<op>` is
one entry of `VF_INTRINSICS`: the intrinsic's name (may use `{bits}` / `{T}` of the result or
first operand), how the result is produced ("arg": destination register first; "ret":
`r = intrinsic(...)`; "none": a statement) and its argument list. An argument spec is
"<position>|<keyword>=<default>" with either part optional: the positional operand if given,
else the keyword, else the default C++ text (none: the argument is left out; a trailing `?`:
the default is written only when a later argument is given). Tiles become their
UB pointer (`tile + k` an offset pointer), enum values their CCE spelling (`PAT_ALL`,
`MODE_ZEROING`, `NORM`, ...).
"""
from __future__ import annotations

import enum
from dataclasses import dataclass

from ..errors import NotSupported
from ..ir.dtype import DataType
from ..ir.nodes import (
    AssignStmt,
    BinaryExpr,
    BinOp,
    Call,
    ConstInt,
    EnumConst,
    Expr,
    SectionStmt,
)
from ..ir.span import Span
from ..ir.types import MaskType, RegType, TileType
from .ops import check_kwargs
from .scopes import bodies_of, stmts_of, sub_exprs
from .types import attr_value, ctype


@dataclass(frozen=True)
class VFIntrinsic:
    name: str
    args: tuple[str, ...]
    result: str = "arg"  # "arg" | "ret" | "none"


def _v(name: str, *args: str, result: str = "arg") -> VFIntrinsic:
    return VFIntrinsic(name, args, result)


_MODE = "|mode=MODE_ZEROING"
_BIN = ("0", "1", "2|mask", _MODE)  # (a, b, mask)
_UN = ("0", "1|mask", _MODE)  # (src, mask)

VF_INTRINSICS: dict[str, VFIntrinsic] = {
    # masks
    "create_mask": _v("pset_b{bits}", "0|pattern=PAT_ALL", result="ret"),
    "update_mask": _v("plt_b{bits}", "0", result="ret"),
    "mask_gen_with_reg_tensor": _v("movvp", "0"),
    "get_mask_spr": _v("get_mask_spr_b{bits}", "0|width", result="ret"),
    "move": _v("vmov", "0", "1|mask"),
    # loads and stores (UB ↔ registers)
    "load_align": _v("vlds", "0", "1|offset=0", "3|dist=NORM", "4|data_copy_mode=NORM?",
                     "5|block_stride=1?", "6|post_update=0?"),
    "store_align": _v("vsts", "1", "0", "|offset=0", "3|dist=NORM_B{bits}", "2|mask",
                      result="none"),
    "load_unalign_init": _v("vldas", "0", "1|offset=0"),
    "load_unalign_pre": _v("vldas", "0", "1|offset=0"),
    "load_unalign": _v("vldus", "0", "1", "2|offset=0"),
    "unalign_reg_for_store": _v("vstus_init"),
    "store_unalign": _v("vstus", "1", "0", "2", "3|offset=0", result="none"),
    "store_unalign_post": _v("vstas", "1", "0", "2|offset=0", result="none"),
    "load": _v("vlds", "0", "1|offset=0", "2|dist=NORM"),
    "store": _v("vsts", "1", "0", "2|offset=0", "3|dist=NORM_B{bits}", "4|mask",
                result="none"),
    "gather": _v("vgatherb", "0", "1", "2|mask"),
    "scatter": _v("vscatter", "1", "0", "2", "3|mask", result="none"),
    "create_addr_reg": _v("vag_b{bits}", "0", "1|stride=1", result="ret"),
    "mem_bar": _v("mem_bar", "0|mode=VV_ALL", result="none"),
    "clear_spr": _v("clear_spr", "0|spr", result="none"),
    # broadcast
    "full": _v("vdup", "0", "1|mask", "3|mode=MODE_ZEROING", "4|pos"),
    "arange": _v("vci", "0", "2|index_order=INCREASE_ORDER"),
    # arithmetic
    **{n: _v(i, *_BIN) for n, i in (
        ("add", "vadd"), ("sub", "vsub"), ("mul", "vmul"), ("div", "vdiv"), ("max", "vmax"),
        ("min", "vmin"), ("and_", "vand"), ("or_", "vor"), ("xor", "vxor"),
        ("abs_sub", "vabsdif"), ("prelu", "vprelu"), ("mull", "vmull"), ("addc", "vaddcs"),
        ("subc", "vsubcs"), ("exp_sub", "vexpdif"), ("axpy", "vaxpy"),
        ("mul_add_dst", "vmula"), ("mul_dst_add", "vmadd"), ("shift_left", "vshl"),
        ("shift_right", "vshr"), ("leaky_relu", "vlrelu"), ("adds", "vadds"),
        ("subs", "vsubs"), ("muls", "vmuls"), ("mins", "vmins"), ("maxs", "vmaxs"),
        ("muls_cast", "vmulscvt"))},
    **{n: _v(i, *_UN) for n, i in (
        ("abs", "vabs"), ("neg", "vneg"), ("relu", "vrelu"), ("sqrt", "vsqrt"),
        ("exp", "vexp"), ("ln", "vln"), ("log", "vln"), ("log2", "vlog2"),
        ("log10", "vlog10"), ("not_", "vnot"), ("truncate", "vtrc"))},
    # compare / select
    **{n: _v(f"vcmp_{n}", "0", "1", "2|mask") for n in ("eq", "ne", "lt", "gt", "le", "ge")},
    "select": _v("vsel", "0", "1", "2|mask"),
    # reductions
    "reduce_sum": _v("vcadd", "0", "1|mask", "2|datablock=false", _MODE),
    "reduce_max": _v("vcmax", "0", "1|mask", "2|datablock=false", _MODE),
    "reduce_min": _v("vcmin", "0", "1|mask", "2|datablock=false", _MODE),
    "pair_reduce_sum": _v("vcpadd", "0", "1|mask", _MODE),
    # conversion / rearrangement
    "astype": _v("vcvt", "0", "1|mask", "3|layout=ZERO", "4|round_mode=CAST_RINT",
                 "5|saturate=OFF"),
    "bit_cast": _v("vbitcast", "0"),
    "pack": _v("vpack", "0", "2|part=LOWER"),
    "unpack": _v("vunpack", "0", "2|part=LOWER"),
    "interleave": _v("vintlv", "0", "1", "2|part=LOWER"),
    "de_interleave": _v("vdintlv", "0", "1", "2|part=LOWER"),
    "squeeze": _v("vsqz", "0", "1|mask", "2|gather_mode=STORE_REG"),
    "unsqueeze": _v("vusqz", "0", "1|mask"),
    "histograms": _v("vhist", "0", "1|mask", "2|bin_type=BIN0", "3|hist_type=FREQUENCY"),
}

#: VF enum classes whose CCE constants carry a prefix
_ENUM_PREFIX = {"MaskPattern": "PAT_", "MergeMode": "MODE_"}
#: attribute enums of the Reg API, spelled as raw CCE constants inside VF code
VF_ENUMS = ["MaskPattern", "MergeMode", "ReduceMode", "DuplicatePos", "CastLayout", "VFRoundMode",
            "SaturateMode", "BinType", "HistType", "SqueezeMode", "PackPart", "MaskWidth",
            "LoadDist", "StoreDist", "DataCopyMode", "MemBarMode", "IndexOrder"]


def vf_constants() -> set[str]:
    """Every CCE constant a VF op may name: enum members and the table's defaults."""
    from ..ir import attrs

    names = {_ENUM_PREFIX.get(e, "") + m.name for e in VF_ENUMS for m in attrs.ALL[e]}
    for spec in VF_INTRINSICS.values():
        for arg in spec.args:
            default = arg.removesuffix("?").partition("|")[2].partition("=")[2]
            for bits in (8, 16, 32, 64):
                text = default.format(bits=bits, T="float")
                if text.isidentifier() and text not in ("true", "false"):
                    names.add(text)
    return names


# ---------------------------------------------------------------- the section


def emit_vf_section(body, s: SectionStmt) -> None:
    ctx, w = body.ctx, body.w
    tiles = _tiles_used(s.body)
    body.vf_tiles = {}
    for t in tiles:
        base = f"{ctx.name(t)}_ub" if hasattr(t, "uid") else "ub"
        name = ctx.fresh(base)
        elem = ctype(t.type.dtype)
        w.line(f"__ubuf__ {elem}* {name} = reinterpret_cast<__ubuf__ {elem}*>("
               f"{body.x.paren(t, 16)}.data());", s.span)
        body.vf_tiles[t] = name
    fn = dict(s.attrs).get("function")
    w.line(f"__VEC_SCOPE__  // vector function {fn}" if fn else "__VEC_SCOPE__", s.span)
    w.line("{")
    w.depth += 1
    for var in _registers(s.body):
        w.line(f"{register_type(var.type)} {ctx.name(var)};", var.span)
    body.in_vf = True
    try:
        body.block(s.body)
    finally:
        body.in_vf = False
        body.vf_tiles = {}
    w.depth -= 1
    w.line("}")


def _tiles_used(section_body) -> list[Expr]:
    """Tile operands of the section's VF ops, in first-use order (equal expressions once)."""
    seen: list[Expr] = []
    for e in _section_exprs(section_body):
        if isinstance(e, Call) and e.op.startswith("vf."):
            for a in e.args:
                t = a.lhs if isinstance(a, BinaryExpr) and _is_tile(a.lhs) else a
                if _is_tile(t) and t not in seen:
                    seen.append(t)
    return seen


def _section_exprs(body):
    from .scopes import own_exprs

    for s in stmts_of(body):
        yield from sub_exprs(own_exprs(s))
        for inner in bodies_of(s):
            yield from _section_exprs(inner)


def _registers(section_body) -> list:
    out: list = []

    def walk(b) -> None:
        for s in stmts_of(b):
            if isinstance(s, AssignStmt) and isinstance(s.var.type, (RegType, MaskType)) \
                    and s.var not in out:
                out.append(s.var)
            for inner in bodies_of(s):
                walk(inner)

    walk(section_body)
    return out


def register_type(t) -> str:
    return "MaskReg" if isinstance(t, MaskType) else f"RegTensor<{ctype(t.dtype)}>"


def _is_tile(e: Expr) -> bool:
    return isinstance(getattr(e, "type", None), TileType)


# ---------------------------------------------------------------- VF ops


def assign_register(body, s: AssignStmt) -> None:
    e = s.value
    name = body.ctx.name(s.var)
    if isinstance(e, Call) and e.op.startswith("vf."):
        _emit(body, e, name, s.var.type, s.span)
        return
    body.w.line(f"{name} = {_operand(body, e)};", s.span)


def emit_statement(body, call: Call, span: Span | None) -> None:
    if not body.in_vf:
        raise NotSupported(f"{call.op} is only valid inside a vector function", span,
                           module="PRO_COMPILE")
    _emit(body, call, None, None, span)


def _emit(body, call: Call, dst: str | None, rtype, span: Span | None) -> None:
    spec = VF_INTRINSICS.get(call.op.removeprefix("vf."))
    if spec is None:
        raise NotSupported(f"codegen: {call.op} has no intrinsic", span, module="PRO_COMPILE")
    known = {kw.partition("=")[0] for a in spec.args for kw in [a.partition("|")[2]] if kw}
    check_kwargs(call, known | {"dtype"}, span)
    dtype = _dtype(call, rtype)
    fmt = {"bits": str(dtype.bits if dtype is not None else 32),
           "T": ctype(dtype) if dtype is not None else "float"}
    name = spec.name.format(**fmt)
    args = _args(body, call, spec.args, fmt)
    if spec.result == "arg" and dst is not None:
        args.insert(0, dst)
    text = f"{name}({', '.join(args)})"
    if spec.result == "ret" and dst is not None:
        text = f"{dst} = {text}"
    body.w.line(text + ";", span)


def _dtype(call: Call, rtype) -> DataType | None:
    if isinstance(rtype, RegType):
        return rtype.dtype
    dt = call.kwarg("dtype")
    if isinstance(dt, DataType):
        return dt
    for a in call.args:
        t = getattr(a, "type", None)
        if isinstance(t, (RegType, TileType)):
            return t.dtype
    return None


def _args(body, call: Call, specs: tuple[str, ...], fmt: dict) -> list[str]:
    """The C++ arguments; a default marked `?` is written only when a later argument is."""
    out: list[tuple[str, bool]] = []
    for spec in specs:
        optional = spec.endswith("?")
        spec = spec.removesuffix("?")
        text = _arg(body, call, spec, fmt)
        if text is not None:
            out.append((text, optional and not _given(call, spec)))
    while out and out[-1][1]:
        out.pop()
    return [text for text, _ in out]


def _given(call: Call, spec: str) -> bool:
    pos, _, kw = spec.partition("|")
    key = kw.partition("=")[0]
    return bool(pos and int(pos) < len(call.args)) or bool(key and call.kwarg(key) is not None)


def _arg(body, call: Call, spec: str, fmt: dict) -> str | None:
    pos, _, kw = spec.partition("|")
    if pos and int(pos) < len(call.args):
        return _operand(body, call.args[int(pos)])
    key, _, default = kw.partition("=")
    value = call.kwarg(key) if key else None
    if value is not None:
        return _operand(body, value) if isinstance(value, Expr) else _enum_or_attr(value)
    if not default:
        if pos and not kw:
            raise NotSupported(f"{call.op}: operand {pos} is missing", call.span,
                               module="PRO_COMPILE")
        return None
    return default.format(**fmt)


def _enum_or_attr(value: object) -> str:
    if isinstance(value, enum.Enum) and not isinstance(value, DataType):
        return _ENUM_PREFIX.get(type(value).__name__, "") + value.name
    if isinstance(value, DataType):
        return ctype(value)
    return attr_value(value)


def _operand(body, e: Expr) -> str:
    tiles = getattr(body, "vf_tiles", {})
    if e in tiles:
        return tiles[e]
    if isinstance(e, BinaryExpr) and e.op is BinOp.Add and e.lhs in tiles:
        return f"{tiles[e.lhs]} + {body.x.paren(e.rhs, 13)}"
    if isinstance(e, (EnumConst, ConstInt)) and isinstance(e.value, enum.Enum):
        return _enum_or_attr(e.value)
    return body.x.emit(e)
