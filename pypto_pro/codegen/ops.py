"""Tile ops (`block.*`) → pto-isa tile instructions, one table entry per op.

Most ops are a plain call `INSTR(out, in0, ...)`: `TILE_OPS` maps the IR op to an `Instr`
(instruction name, which operand's dtype scalar operands are converted to, the kwargs appended
as trailing arguments and the kwargs given as template arguments). Tile operands are emitted as
lvalues, offset tuples expand to their elements, enum kwargs are spelled `Class::MEMBER`. A kwarg
the table does not list (other than `pipe` / `guard`) is refused rather than dropped. Data
movement with GM (`load`, `store`, `store_fp`, `init_output`), tile moves and the few ops with
their own shape (`setval`, `set_validshape`, ...) have emitter functions (`special_ops`), in
`movement` and here; ops pto-isa spells differently from the IR call (fused ops lowered to
instruction sequences, kwarg-selected instructions, explicit template arguments) in `lowered`.
Every instruction is spelled as pto-isa declares it (`pypto_pro/include` mirrors those
declarations).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..errors import NotSupported
from ..ir.nodes import Call, ConstInt, Expr, MakeTuple
from ..ir.span import Span
from ..ir.types import TileType
from .types import attr_value, ctype, set_valid_shape

#: kwargs every op may carry that never become C++ arguments
IGNORED_KWARGS = frozenset({"pipe", "guard"})


@dataclass(frozen=True)
class Instr:
    """How one IR op is spelled: `name<template...>(operands..., kwargs...)`."""

    name: str
    scalar_from: int | None = 0  # scalar operands take this operand's dtype (None: unchanged)
    kwargs: tuple[tuple[str, str | None], ...] = ()  # (name[|alias], default C++ text or None)
    template: tuple[tuple[str, str | None], ...] = ()


def _table(names: str, instr: str, **kw) -> dict[str, Instr]:
    """`block.<n>` → Instr(`<instr with {N} replaced by the upper-cased n>`)."""
    return {f"block.{n}": Instr(instr.format(N=n.upper().replace("_", "")), **kw)
            for n in names.split()}


_CMP = (("cmp_mode", "CmpMode::EQ"),)
_PHASE = (("phase", None),)

TILE_OPS: dict[str, Instr] = {
    # element-wise, tile ∘ tile (spec §2.7)
    **_table("add sub mul div and or shl shr rem partadd partmax partmin partmul", "T{N}"),
    "block.maximum": Instr("TMAX"), "block.minimum": Instr("TMIN"),
    "block.xor": Instr("TXOR"), "block.xors": Instr("TXORS"),
    # element-wise, tile ∘ scalar
    **_table("adds subs muls divs maxs mins ands ors shls shrs rems", "T{N}"),
    # unary
    **_table("neg abs exp log sqrt rsqrt recip relu not", "T{N}"),
    "block.cast": Instr("TCVT", kwargs=(("mode", "RoundMode::CAST_ROUND"),)),
    # fills
    "block.expands": Instr("TEXPANDS"), "block.full": Instr("TEXPANDS"),
    "block.fillpad": Instr("TFILLPAD"), "block.fillpad_expand": Instr("TFILLPAD_EXPAND"),
    "block.fillpad_inplace": Instr("TFILLPAD_INPLACE"),
    # fused / ternary
    **_table("addc subc addsc subsc axpy", "T{N}"),
    # compare / select
    "block.cmp": Instr("TCMP", kwargs=_CMP), "block.cmps": Instr("TCMPS", 1, kwargs=_CMP),
    "block.sel": Instr("TSEL"),
    # reductions (out, src, tmp); the column ones have their own forms (`_col_reduction`)
    **_table("row_sum row_max row_min row_prod row_argmax row_argmin col_argmax col_argmin",
             "T{N}"),
    # broadcast-binary (out, src, scalar tile)
    **_table("row_expand row_expand_add row_expand_sub row_expand_mul row_expand_div "
             "row_expand_max row_expand_min row_expand_expdif col_expand col_expand_add "
             "col_expand_sub col_expand_mul col_expand_div col_expand_max col_expand_min "
             "col_expand_expdif", "T{N}"),
    # gather / scatter
    "block.gatherb": Instr("TGATHERB"),
    "block.scatter": Instr("TSCATTER"),
    # sort / histogram
    "block.sort32": Instr("TSORT32"),
    "block.mrgsort": Instr("TMRGSORT", kwargs=(("block_len", None),)),
    # quantisation
    "block.dequant": Instr("TDEQUANT", None, kwargs=(("offset", None),)),
    # cube (spec §2.9); `phase` selects the unit-flag handshake
    "block.matmul": Instr("TMATMUL", template=_PHASE),
    "block.matmul_acc": Instr("TMATMUL_ACC", template=_PHASE),
    "block.matmul_bias": Instr("TMATMUL_BIAS", template=_PHASE),
    "block.gemv": Instr("TGEMV", template=_PHASE),
    "block.gemv_acc": Instr("TGEMV_ACC", template=_PHASE),
    "block.gemv_bias": Instr("TGEMV_BIAS", template=_PHASE),
    # UB → UB copy
    "block.ub_copy": Instr("TMOV"),
}


# ---------------------------------------------------------------- the generic emitter


def operands(body, call: Call, scalar_from: int | None) -> list[str]:
    """The C++ operands of a tile op call: tiles, expanded offset tuples, converted scalars."""
    x = body.x
    ref = None
    if scalar_from is not None and scalar_from < len(call.args):
        t = call.args[scalar_from].type
        ref = t.dtype if isinstance(t, TileType) else None
    out = []
    for a in call.args:
        if isinstance(a.type, TileType):
            out.append(x.tile(a))
        elif isinstance(a, MakeTuple):
            out.extend(x.ints(a))
        elif ref is not None:
            out.append(x.elem_cast(a, ref))
        else:
            out.append(x.emit(a))
    return out


def kwarg_text(body, call: Call, key: str, default: str | None) -> str | None:
    """The C++ argument for kwarg `key` (alternatives separated by `|`), or its default."""
    for name in key.split("|"):
        value = call.kwarg(name)
        if value is not None:
            if isinstance(value, Expr):
                return body.x.emit(value)
            return attr_value(value)
    return default


def check_kwargs(call: Call, allowed: set[str], span: Span | None) -> None:
    for k, v in call.kwargs:
        if v is None or k in IGNORED_KWARGS or k in allowed:
            continue
        raise NotSupported(f"codegen: {call.op} keyword '{k}' has no C++ lowering", span,
                           module="PRO_COMPILE")


def _names(pairs: tuple[tuple[str, str | None], ...]) -> set[str]:
    return {n for key, _ in pairs for n in key.split("|")}


def _template_arg(body, call: Call, key: str) -> str | None:
    """`phase` (left out when unspecified) or `target_type` (default: the output's dtype)."""
    value = call.kwarg(key)
    if key == "target_type":
        return ctype(call.args[0].type.dtype) if value is None else attr_value(value)
    if value is None or int(value) == 0:
        return None
    return attr_value(value)


#: ops whose pto-isa instruction requires the IR op's optional scratch tile
SCRATCH_REQUIRED = {"block.xor": 4, "block.xors": 4, "block.sel": 5, "block.sels": 5,
                    "block.gather": 4}


def check_scratch(call: Call, span: Span | None) -> None:
    """A typed error when the call leaves out a scratch tile pto-isa's instruction requires."""
    need = SCRATCH_REQUIRED.get(call.op)
    if need is not None and len(call.args) < need:
        raise NotSupported(f"codegen: {call.op} needs its scratch tile operand here: pto-isa's "
                           "instruction takes one", span, module="PRO_COMPILE",
                           hint="pass the tmp tile (a tile of the output's shape)")


def emit_instr(body, call: Call, spec: Instr, span: Span | None) -> None:
    check_kwargs(call, _names(spec.kwargs) | _names(spec.template), span)
    check_scratch(call, span)
    args = operands(body, call, spec.scalar_from)
    for key, default in spec.kwargs:
        text = kwarg_text(body, call, key, default)
        if text is not None:
            args.append(text)
    template = [t for t in (_template_arg(body, call, key) for key, _ in spec.template) if t]
    name = spec.name + (f"<{', '.join(template)}>" if template else "")
    body.w.line(f"{name}({', '.join(args)});", span)


# ---------------------------------------------------------------- ops with their own shape


def _set_validshape(body, call: Call, span: Span | None) -> None:
    """`SetValidShape` / `SetValidRow` / `SetValidCol` of a tile (of every slot of a group); a
    dimension whose valid extent is static in the tile type must keep it."""
    target, shape = call.args
    rows, cols = body.x.ints(shape)
    from ..ir.types import TileGroupType

    group = isinstance(target.type, TileGroupType)
    t = target.type.tile if group else target.type
    extents = shape.elements if isinstance(shape, MakeTuple) else ()
    for axis, (fixed, e) in enumerate(zip(t.valid_shape, extents)):
        if fixed is not None and not (isinstance(e, ConstInt) and e.value == fixed):
            raise NotSupported(f"set_validshape: the valid {('rows', 'columns')[axis]} of this "
                               f"tile type are static ({fixed}); declare the tile with "
                               f"valid_shape -1 there to change them at run time", span,
                               module="PRO_COMPILE")
    if all(v is not None for v in t.valid_shape):
        return
    if group:
        slot = body.ctx.fresh("slot")
        body.w.line(f"for (auto& {slot} : {body.x.paren(target, 16)}) {{ "
                    f"{set_valid_shape(slot, t, rows, cols)} }}", span)
        return
    body.w.line(set_valid_shape(body.x.paren(target, 16), t, rows, cols), span)


def _setval(body, call: Call, span: Span | None) -> None:
    from .exprs import element_ref

    container, offset, value = call.args
    ref = element_ref(body.x, container, offset)
    body.w.line(f"{ref} = {body.x.elem_cast(value, container.type.dtype)};", span)


def _getval_effect(body, call: Call, span: Span | None) -> None:
    body.w.line(f"(void){body.x.emit(call)};", span)


def special_ops() -> dict[str, Callable]:
    from . import movement
    from .lowered import LOWERED

    return {
        **LOWERED,
        "block.load": movement.load, "block.store": movement.store,
        "block.store_fp": movement.store_fp, "block.init_output": movement.init_output,
        "block.move": movement.move, "block.move_fp": movement.move_fp,
        "block.insert": movement.insert, "block.set_stride": movement.set_stride,
        "block.set_validshape": _set_validshape, "block.setval": _setval,
        "block.getval": _getval_effect,
    }


def is_zero(e: Expr) -> bool:
    return isinstance(e, ConstInt) and e.value == 0
