"""VF (Reg API) sections → `__VEC_SCOPE__ { ... }` with RegTensor / MaskReg and `v*` intrinsics.

A VF section is emitted as: the UB base pointer of every tile it touches, hoisted just before
the scope (`__ubuf__ T* a_ub = ...data()`), then `__VEC_SCOPE__` and a block whose first lines
declare every register Var (`RegTensor<T> r;`, `MaskReg m;`, `AddrReg a;`, `UnalignReg u;`; a
pair result `p` as `p_0`, `p_1`) and the post-update cursor of every tile operand that has one
(`__ubuf__ T* a_ub_cur = a_ub;`), then the body. Ops whose form depends on their operands
(UB access, gathers, pairs, predicate forms) are written by `vf_forms`; the others are one
entry of `VF_INTRINSICS`: the intrinsic's name (may use `{bits}` / `{T}` of the result or
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
    GetItem,
    SectionStmt,
)
from ..ir.span import Span
from ..ir.types import AddrRegType, AlignRegType, MaskType, RegType, TileType, TupleType
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
    "mask_gen_with_reg_tensor": _v("movvp", "0", "1|offset=0"),
    "move": _v("vmov", "0", "1|mask"),
    "mem_bar": _v("mem_bar", "0|mode=VST_VLD", result="none"),
    "clear_spr": _v("clear_spr", "0|spr", result="none"),
    "scatter": _v("vscatter", "1", "0", "2", "3|mask", result="none"),
    # broadcast
    "arange": _v("vci", "0", "2|index_order=INCREASE_ORDER"),
    # arithmetic
    **{n: _v(i, *_BIN) for n, i in (
        ("add", "vadd"), ("sub", "vsub"), ("mul", "vmul"), ("div", "vdiv"), ("max", "vmax"),
        ("min", "vmin"), ("and_", "vand"), ("or_", "vor"), ("xor", "vxor"),
        ("abs_sub", "vabsdif"), ("prelu", "vprelu"), ("axpy", "vaxpy"),
        ("mul_add_dst", "vmula"), ("mul_dst_add", "vmadd"), ("shift_left", "vshl"),
        ("shift_right", "vshr"), ("leaky_relu", "vlrelu"), ("adds", "vadds"),
        ("subs", "vsubs"), ("muls", "vmuls"), ("mins", "vmins"), ("maxs", "vmaxs"))},
    **{n: _v(i, *_UN) for n, i in (
        ("abs", "vabs"), ("neg", "vneg"), ("relu", "vrelu"), ("sqrt", "vsqrt"),
        ("exp", "vexp"), ("ln", "vln"), ("log", "vln"), ("log2", "vlog2"),
        ("log10", "vlog10"), ("not_", "vnot"), ("truncate", "vtrc"))},
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
    "squeeze": _v("vsqz", "0", "1|mask", "2|gather_mode=STORE_REG"),
    "histograms": _v("vhist", "0", "1|mask", "2|bin_type=BIN0", "3|hist_type=ACCUMULATE"),
}

#: documented keywords that change nothing we compute: `precision` (the real backend ignores it
#: for vexp / vln; vsqrt's high-precision mode is its 0-ulp result, which vsqrt here always
#: gives) and select's `mode` (vsel has no merge mode: the real backend drops it)
_NO_EFFECT = {"vsqrt": {"precision"}, "vexp": {"precision"}, "vln": {"precision"},
              "vsel": {"mode"}}

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
    from .vf_forms import NAMES

    names |= {n for n in NAMES if n.isupper() or n.startswith(("ONEPT", "PK", "INTLV"))}
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
    body.vf_tiles, body.vf_cursors = {}, {}
    for t in tiles:
        base = f"{ctx.name(t)}_ub" if hasattr(t, "uid") else "ub"
        name = ctx.fresh(base)
        elem = ctype(t.type.dtype)
        w.line(f"__ubuf__ {elem}* {name} = reinterpret_cast<__ubuf__ {elem}*>("
               f"{body.x.paren(t, 16)}.data());", s.span)
        body.vf_tiles[t] = name
    for ub in _cursor_operands(s.body):
        tile = ub.lhs if isinstance(ub, BinaryExpr) else ub
        name = ctx.fresh(f"{body.vf_tiles[tile]}_cur")
        w.line(f"__ubuf__ {ctype(tile.type.dtype)}* {name} = {operand(body, ub)};", s.span)
        body.vf_cursors[ub] = name
    fn = dict(s.attrs).get("function")
    w.line(f"__VEC_SCOPE__  // vector function {fn}" if fn else "__VEC_SCOPE__", s.span)
    w.line("{")
    w.depth += 1
    for var in _registers(s.body):
        for name, t in _register_parts(body, var):
            w.line(f"{register_type(t)} {name};", var.span)
    body.in_vf = True
    try:
        body.block(s.body)
    finally:
        body.in_vf = False
        body.vf_tiles, body.vf_cursors = {}, {}
    w.depth -= 1
    w.line("}")


#: ops that go through their tile operand's post-update cursor (always, or when the named
#: operand / `post_update=True` says so)
_CURSOR_ALWAYS = {"store", "store_unalign", "store_unalign_post"}
_CURSOR_WITH = {"load": 1, "load_unalign": 2}


def _cursor_operands(section_body) -> list[Expr]:
    """The UB operands (tile or tile + k) a post-update access advances, first use first."""
    seen: list[Expr] = []
    for e in _section_exprs(section_body):
        if not (isinstance(e, Call) and e.op.startswith("vf.")):
            continue
        name = e.op.removeprefix("vf.")
        pos = _CURSOR_WITH.get(name)
        uses = name in _CURSOR_ALWAYS or bool(e.kwarg("post_update")) or (
            pos is not None and pos < len(e.args))
        operand = e.args[1] if name == "load_unalign" else e.args[0] if e.args else None
        if uses and operand is not None and _is_tile(
                operand.lhs if isinstance(operand, BinaryExpr) else operand) \
                and operand not in seen:
            seen.append(operand)
    return seen


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
            if isinstance(s, AssignStmt) and is_register(s.var.type) and s.var not in out:
                out.append(s.var)
            for inner in bodies_of(s):
                walk(inner)

    walk(section_body)
    return out


def is_register(t) -> bool:
    """A Reg API value: a register, predicate, address or align register, or a pair of them."""
    if isinstance(t, TupleType):
        return bool(t.types) and all(is_register(x) for x in t.types)
    return isinstance(t, (RegType, MaskType, AddrRegType, AlignRegType))


def _register_parts(body, var) -> list[tuple[str, object]]:
    name = body.ctx.name(var)
    if isinstance(var.type, TupleType):
        return [(f"{name}_{k}", t) for k, t in enumerate(var.type.types)]
    return [(name, var.type)]


def register_type(t) -> str:
    if isinstance(t, MaskType):
        return "MaskReg"
    if isinstance(t, AddrRegType):
        return "AddrReg"
    if isinstance(t, AlignRegType):
        return "UnalignReg"
    return f"RegTensor<{ctype(t.dtype)}>"


def _is_tile(e: Expr) -> bool:
    return isinstance(getattr(e, "type", None), TileType)


# ---------------------------------------------------------------- VF ops


def assign_register(body, s: AssignStmt) -> None:
    e = s.value
    parts = [name for name, _ in _register_parts(body, s.var)]
    if isinstance(e, Call) and e.op.startswith("vf."):
        _emit(body, e, parts, s.var.type, s.span)
        return
    body.w.line(f"{parts[0]} = {operand(body, e)};", s.span)


def emit_statement(body, call: Call, span: Span | None) -> None:
    if not body.in_vf:
        raise NotSupported(f"{call.op} is only valid inside a vector function", span,
                           module="PRO_COMPILE")
    _emit(body, call, [], None, span)


def _emit(body, call: Call, dsts: list[str], rtype, span: Span | None) -> None:
    from .vf_forms import emit as emit_form

    if emit_form(body, call, dsts, span):
        return
    spec = VF_INTRINSICS.get(call.op.removeprefix("vf."))
    if spec is None:
        raise NotSupported(f"codegen: {call.op} has no intrinsic", span, module="PRO_COMPILE")
    known = {kw.partition("=")[0] for a in spec.args for kw in [a.partition("|")[2]] if kw}
    check_kwargs(call, known | {"dtype"} | _NO_EFFECT.get(spec.name, set()), span)
    dtype = _dtype(call, rtype)
    fmt = {"bits": str(max(8, dtype.bits) if dtype is not None else 32),
           "T": ctype(dtype) if dtype is not None else "float"}
    name = spec.name.format(**fmt)
    args = _args(body, call, spec.args, fmt)
    dst = dsts[0] if dsts else None
    if spec.result == "arg" and dst is not None:
        args.insert(0, dst)
    text = f"{name}({', '.join(args)})"
    if spec.result == "ret" and dst is not None:
        text = f"{dst} = {text}"
    body.w.line(text + ";", span)


def dst_dtype(call: Call) -> DataType | None:
    """The element type of the call's (last) result register."""
    t = call.type
    if isinstance(t, TupleType):
        t = t.types[-1]
    return getattr(t, "dtype", None)


def cursor(body, operand: Expr) -> str:
    """The post-update pointer of a UB operand (declared before the scope)."""
    return body.vf_cursors[operand]


def fresh_align_reg(body, span: Span | None) -> str:
    """A new `UnalignReg` for one `vf.load` / `vf.store`."""
    name = body.ctx.fresh("ureg")
    body.w.line(f"UnalignReg {name};", span)
    return name


def _dtype(call: Call, rtype) -> DataType | None:
    if isinstance(rtype, (RegType, MaskType)) and rtype.dtype is not None:
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
        return operand(body, call.args[int(pos)])
    key, _, default = kw.partition("=")
    value = call.kwarg(key) if key else None
    if value is not None:
        return operand(body, value) if isinstance(value, Expr) else enum_text(value)
    if not default:
        if pos and not kw:
            raise NotSupported(f"{call.op}: operand {pos} is missing", call.span,
                               module="PRO_COMPILE")
        return None
    return default.format(**fmt)


def enum_text(value: object) -> str:
    if isinstance(value, enum.Enum) and not isinstance(value, DataType):
        return _ENUM_PREFIX.get(type(value).__name__, "") + value.name
    if isinstance(value, DataType):
        return ctype(value)
    return attr_value(value)


def operand(body, e: Expr) -> str:
    """A VF operand as C++: a tile's UB pointer, a register (a pair's half), an enum, a
    value."""
    tiles = getattr(body, "vf_tiles", {})
    if e in tiles:
        return tiles[e]
    if isinstance(e, BinaryExpr) and e.op is BinOp.Add and e.lhs in tiles:
        return f"{tiles[e.lhs]} + {body.x.paren(e.rhs, 13)}"
    if isinstance(e, (EnumConst, ConstInt)) and isinstance(e.value, enum.Enum):
        return enum_text(e.value)
    if isinstance(e, GetItem) and isinstance(e.value.type, TupleType) and \
            is_register(e.value.type) and isinstance(e.index, ConstInt):
        return f"{body.ctx.name(e.value)}_{e.index.value}"
    return body.x.emit(e)

