"""Tile ops whose pto-isa spelling is not one call in IR operand order.

Each is lowered as the real PyPTO Pro code generator lowers it, to instructions pto-isa declares:

* fused ops, as instruction sequences through the first input `lhs`, which they overwrite (the
  simulator's `ops.fused` runs the same sequences): `add_relu` / `sub_relu` are `TADD` / `TSUB`
  into `lhs`, then `TRELU` into the output; `add_relu_cast` / `sub_relu_cast` / `mul_cast` form
  the result in `lhs` (`TADD` / `TSUB` / `TMUL`, `TRELU`), then `TCVT` it into the output
  (rounding `mode`, CAST_ROUND by default as the Python API declares it); `mul_add_dst` is
  `TMUL` into `lhs`, then `TADD(out, lhs, out)`; `fused_mul_add[_relu]` multiply `lhs` by the
  output, add `rhs` (and `TRELU`);
* an op picked by a kwarg: `row_reduce` / `col_reduce` (`TROWSUM` ... `TCOLPROD`),
  `row_expand_binop` / `col_expand_binop` (`TROWEXPANDADD` ...);
* the column reductions' own forms: `TCOLSUM(dst, src[, tmp, false])`, `TCOLMAX(dst, src)`;
* instructions with explicit template arguments: `TCI<Dst, T, 0>`, `THISTOGRAM<HistByte::..>`,
  `TGATHER<Dst, Src, MaskPattern::..>` (gathermask), `TQUANT<QuantType::..>`,
  `TMRGSORT<..., exhausted>` (mrgsort2);
* operand orders that differ from the IR's: `TMATMUL_MX(dst[, acc], a, scale_a, b, scale_b)`,
  `TSELS(out, mask, src, tmp, scalar)`, `TTRANS(dst, src, tmp)` (the source serves as scratch,
  as in the real code generator);
* SuperScalar-buffer struct copies: a word loop through a `__ssbuf__ uint32_t*`
  (`PYPTO_SSBUF(offset, bytes)`, which a host build maps to the block's buffer).
"""
from __future__ import annotations

import enum
from collections.abc import Callable

from ..errors import NotSupported
from ..ir.dtype import DataType
from ..ir.nodes import Call, ConstInt, Expr
from ..ir.span import Span
from .ops import check_kwargs, check_scratch, kwarg_text


def _name(value: object) -> str:
    """An enum kwarg's member name (an int stands for the member of that value)."""
    return value.name if isinstance(value, enum.Enum) else str(value)


def _tile_type(body, e: Expr) -> str:
    return f"std::remove_reference_t<decltype({body.x.tile(e)})>"


def _lines(body, span: Span | None, *lines: str) -> None:
    for line in lines:
        body.w.line(line, span)


# ---------------------------------------------------------------- fused ops


#: fused op → its instructions on (out, lhs, rhs)
_THROUGH_LHS = {
    "block.add_relu": ("TADD({lhs}, {lhs}, {rhs});", "TRELU({out}, {lhs});"),
    "block.sub_relu": ("TSUB({lhs}, {lhs}, {rhs});", "TRELU({out}, {lhs});"),
    "block.mul_add_dst": ("TMUL({lhs}, {lhs}, {rhs});", "TADD({out}, {lhs}, {out});"),
    "block.fused_mul_add": ("TMUL({lhs}, {lhs}, {out});", "TADD({out}, {lhs}, {rhs});"),
    "block.fused_mul_add_relu": ("TMUL({lhs}, {lhs}, {out});", "TADD({lhs}, {lhs}, {rhs});",
                                 "TRELU({out}, {lhs});"),
}


def _through_lhs(body, call: Call, span: Span | None) -> None:
    check_kwargs(call, set(), span)
    tiles = dict(zip(("out", "lhs", "rhs"), (body.x.tile(a) for a in call.args)))
    _lines(body, span, *(line.format(**tiles) for line in _THROUGH_LHS[call.op]))


def _op_cast(instr: str, relu: bool) -> Callable:
    def emit(body, call: Call, span: Span | None) -> None:
        check_kwargs(call, {"mode", "target_type"}, span)
        dst, lhs, rhs = (body.x.tile(a) for a in call.args)
        mode = kwarg_text(body, call, "mode", "RoundMode::CAST_ROUND")
        lines = [f"{instr}({lhs}, {lhs}, {rhs});"]
        if relu:
            lines.append(f"TRELU({lhs}, {lhs});")
        lines.append(f"TCVT({dst}, {lhs}, {mode});")
        _lines(body, span, *lines)
    return emit


# ---------------------------------------------------------------- reductions and expands


_REDUCE = {"SUM": "SUM", "MAX": "MAX", "MIN": "MIN", "PROD": "PROD"}


def _reduce_kind(call: Call, span: Span | None) -> str:
    value = call.kwarg("op", call.kwarg("mode", "SUM"))
    if isinstance(value, int) and not isinstance(value, enum.Enum) and 0 <= value < 4:
        value = ("SUM", "MAX", "MIN", "PROD")[value]
    kind = _REDUCE.get(_name(value).split(".")[-1].upper())
    if kind is None:
        raise NotSupported(f"{call.op}: op={value!r} is not SUM, MAX, MIN or PROD", span,
                           module="PRO_COMPILE")
    return kind


def _col_reduction(kind: str) -> Callable:
    """`TCOLSUM(dst, src)` / `TCOLSUM(dst, src, tmp, false)`, `TCOL{MAX,MIN,PROD}(dst, src)`
    (pto-isa's column reductions take no scratch tile but the sum's binary-tree form)."""
    def emit(body, call: Call, span: Span | None) -> None:
        check_kwargs(call, set(), span)
        _col(body, kind, call, span)
    return emit


def _col(body, kind: str, call: Call, span: Span | None) -> None:
    args = [body.x.tile(a) for a in call.args]
    if kind == "SUM" and len(args) > 2:
        body.w.line(f"TCOLSUM({args[0]}, {args[1]}, {args[2]}, false);", span)
        return
    body.w.line(f"TCOL{kind}({args[0]}, {args[1]});", span)


def _row_reduce(body, call: Call, span: Span | None) -> None:
    check_kwargs(call, {"op", "mode"}, span)
    args = ", ".join(body.x.tile(a) for a in call.args)
    body.w.line(f"TROW{_reduce_kind(call, span)}({args});", span)


def _col_reduce(body, call: Call, span: Span | None) -> None:
    check_kwargs(call, {"op", "mode"}, span)
    _col(body, _reduce_kind(call, span), call, span)


_EXPAND = {"ADD": "ADD", "SUB": "SUB", "MUL": "MUL", "DIV": "DIV", "MAX": "MAX", "MIN": "MIN",
           "MAXIMUM": "MAX", "MINIMUM": "MIN", "EXPDIF": "EXPDIF"}


def _expand_binop(prefix: str) -> Callable:
    def emit(body, call: Call, span: Span | None) -> None:
        check_kwargs(call, {"op", "binop"}, span)
        value = call.kwarg("op", call.kwarg("binop"))
        if isinstance(value, int) and not isinstance(value, enum.Enum) and 0 <= value < 7:
            value = ("ADD", "SUB", "MUL", "DIV", "MAX", "MIN", "EXPDIF")[value]
        kind = _EXPAND.get(_name(value).split(".")[-1].upper())
        if kind is None:
            raise NotSupported(f"{call.op}: op={value!r} has no {prefix} instruction", span,
                               module="PRO_COMPILE")
        args = ", ".join(body.x.tile(a) for a in call.args)
        body.w.line(f"{prefix}{kind}({args});", span)
    return emit


# ---------------------------------------------------------------- explicit template arguments


_CI_TYPES = {DataType.INT16: "int16_t", DataType.UINT16: "uint16_t", DataType.UINT32: "uint32_t"}


def _fill_index(body, call: Call, span: Span | None) -> None:
    """`TCI<Dst, T, 0>(dst, (T)(start))`: ascending indices from `start`."""
    check_kwargs(call, set(), span)
    dst, start = call.args
    t = _CI_TYPES.get(dst.type.dtype, "int32_t")
    body.w.line(f"TCI<{_tile_type(body, dst)}, {t}, 0>({body.x.tile(dst)}, "
                f"static_cast<{t}>({body.x.emit(start)}));", span)


def _histogram(body, call: Call, span: Span | None) -> None:
    """`THISTOGRAM<HistByte::BYTE_n>(dst, src, idx)`: the most significant byte (1 of a UINT16
    source, 3 of a UINT32 one) when `is_msb`, else byte 0."""
    check_kwargs(call, {"is_msb"}, span)
    msb = bool(call.kwarg("is_msb", False))
    wide = call.args[1].type.dtype is not DataType.UINT16
    byte = (3 if wide else 1) if msb else 0
    args = ", ".join(body.x.tile(a) for a in call.args)
    body.w.line(f"THISTOGRAM<HistByte::BYTE_{byte}>({args});", span)


_MASK_PATTERNS = ("", "P0101", "P1010", "P0001", "P0010", "P0100", "P1000", "P1111")


def _gathermask(body, call: Call, span: Span | None) -> None:
    check_kwargs(call, {"pattern_mode"}, span)
    mode = call.kwarg("pattern_mode")
    mode = int(getattr(mode, "value", mode) or 0)
    if not 1 <= mode <= 7:
        raise NotSupported(f"gathermask: pattern_mode must be 1..7, got {mode}", span,
                           module="PRO_COMPILE")
    dst, src = call.args
    body.w.line(f"TGATHER<{_tile_type(body, dst)}, {_tile_type(body, src)}, "
                f"MaskPattern::{_MASK_PATTERNS[mode]}>({body.x.tile(dst)}, {body.x.tile(src)});",
                span)


def _gather(body, call: Call, span: Span | None) -> None:
    """`TGATHER(dst, src, indices, tmp)` (pto-isa's index gather; its compare form takes
    operands the IR op does not have, and it has no element offset)."""
    check_kwargs(call, {"cmp_mode", "offset"}, span)
    check_scratch(call, span)
    mode, offset = call.kwarg("cmp_mode"), call.kwarg("offset")
    if (mode is not None and _name(mode).split(".")[-1] != "EQ") or \
            (offset is not None and not (isinstance(offset, (int, ConstInt)) and
                                         int(getattr(offset, "value", offset)) == 0)):
        raise NotSupported("gather: pto-isa's TGATHER has no compare mode or element offset "
                           "for an index gather", span, module="PRO_COMPILE")
    body.w.line(f"TGATHER({', '.join(body.x.tile(a) for a in call.args)});", span)


def _quant(body, call: Call, span: Span | None) -> None:
    """`TQUANT<QuantType::INT8_SYM>(dst, src, scale)` / `..._ASYM>(dst, src, scale, &offset)`."""
    check_kwargs(call, {"mode", "offset"}, span)
    mode = _name(call.kwarg("mode", "SYM")).split(".")[-1].upper()
    offset = call.args[3] if len(call.args) > 3 else call.kwarg("offset")
    args = [body.x.tile(a) for a in call.args[:3]]
    if mode == "ASYM":
        if offset is None:
            raise NotSupported("quant(mode=ASYM) needs an offset tile", span, module="PRO_COMPILE")
        args.append(f"&{body.x.paren(offset, 15)}")
    body.w.line(f"TQUANT<QuantType::INT8_{mode}>({', '.join(args)});", span)


def _mrgsort2(body, call: Call, span: Span | None) -> None:
    """`mrgsort2(src0, src1, dst, tmp, *more, exhausted=)` → `TMRGSORT<Dst, Tmp, Src...,
    exhausted>(dst, executed, tmp, srcs...)` with a fresh `MrgSortExecutedNumList`."""
    check_kwargs(call, {"exhausted"}, span)
    src = [call.args[0], call.args[1], *call.args[4:]]
    dst, tmp = call.args[2], call.args[3]
    types = ", ".join(_tile_type(body, t) for t in (dst, tmp, *src))
    exhausted = kwarg_text(body, call, "exhausted", "false")
    executed = body.ctx.fresh("executed")
    args = ", ".join([body.x.tile(dst), executed, body.x.tile(tmp), *(body.x.tile(a) for a in src)])
    _lines(body, span, f"MrgSortExecutedNumList {executed};",
           f"TMRGSORT<{types}, {exhausted}>({args});")


# ---------------------------------------------------------------- operand order


def _matmul_mx(acc: bool) -> Callable:
    """IR `(dst[, acc], a, b, scale_a, scale_b)` → `TMATMUL_MX[<AccPhase>](dst[, acc], a,
    scale_a, b, scale_b)`."""
    def emit(body, call: Call, span: Span | None) -> None:
        check_kwargs(call, {"phase"}, span)
        tiles = [body.x.tile(a) for a in call.args]
        head, (a, b, sa, sb) = tiles[:2 if acc else 1], tiles[-4:]
        phase = call.kwarg("phase")
        name = "TMATMUL_MX" + (f"<AccPhase::{_name(phase)}>" if phase and int(phase) else "")
        body.w.line(f"{name}({', '.join([*head, a, sa, b, sb])});", span)
    return emit


def _sels(body, call: Call, span: Span | None) -> None:
    """IR `(out, mask, src, scalar, tmp)` → `TSELS(out, mask, src, tmp, scalar)` (pto-isa
    takes its scratch tile before the scalar)."""
    check_kwargs(call, set(), span)
    check_scratch(call, span)
    out, mask, src, scalar = call.args[:4]
    args = [body.x.tile(out), body.x.tile(mask), body.x.tile(src)]
    args += [body.x.tile(a) for a in call.args[4:]]
    args.append(body.x.elem_cast(scalar, src.type.dtype))
    body.w.line(f"TSELS({', '.join(args)});", span)


def _transpose(body, call: Call, span: Span | None) -> None:
    check_kwargs(call, set(), span)
    dst, src = (body.x.tile(a) for a in call.args)
    body.w.line(f"TTRANS({dst}, {src}, {src});", span)


# ---------------------------------------------------------------- SuperScalar buffer


def _ssbuf(store: bool) -> Callable:
    """A struct to / from the block's SuperScalar buffer at byte `offset`, one 32-bit word at a
    time through a `__ssbuf__` pointer."""
    def emit(body, call: Call, span: Span | None) -> None:
        check_kwargs(call, set(), span)
        struct, offset = call.args
        if isinstance(offset, ConstInt) and offset.value % 4:
            raise NotSupported(f"ssbuf offset {offset.value} is not a multiple of 4 bytes", span,
                               module="PRO_COMPILE")
        s, off = body.x.emit(struct), body.x.emit(offset)
        buf, word, i = body.ctx.fresh("ssbuf"), body.ctx.fresh("words"), body.ctx.fresh("w")
        mine = f"reinterpret_cast<{'const ' if store else ''}uint32_t*>(&{s})"
        _lines(body, span, f"__ssbuf__ uint32_t* {buf} = PYPTO_SSBUF({off}, sizeof({s}));",
               f"{'const ' if store else ''}uint32_t* {word} = {mine};",
               f"for (uint32_t {i} = 0; {i} < sizeof({s}) / sizeof(uint32_t); ++{i}) {{",
               f"    {buf}[{i}] = {word}[{i}];" if store else f"    {word}[{i}] = {buf}[{i}];",
               "}")
    return emit


LOWERED: dict[str, Callable] = {
    **dict.fromkeys(_THROUGH_LHS, _through_lhs),
    "block.add_relu_cast": _op_cast("TADD", relu=True),
    "block.sub_relu_cast": _op_cast("TSUB", relu=True),
    "block.mul_cast": _op_cast("TMUL", relu=False),
    "block.row_reduce": _row_reduce, "block.col_reduce": _col_reduce,
    **{f"block.col_{k.lower()}": _col_reduction(k) for k in _REDUCE},
    "block.row_expand_binop": _expand_binop("TROWEXPAND"),
    "block.col_expand_binop": _expand_binop("TCOLEXPAND"),
    "block.fill_index": _fill_index, "block.histogram": _histogram,
    "block.gathermask": _gathermask, "block.gather": _gather, "block.quant": _quant,
    "block.mrgsort2": _mrgsort2,
    "block.matmul_mx": _matmul_mx(acc=False), "block.matmul_mx_acc": _matmul_mx(acc=True),
    "block.transpose": _transpose, "block.sels": _sels,
    "block.ssbuf_load": _ssbuf(store=False), "block.ssbuf_store": _ssbuf(store=True),
}

__all__ = ["LOWERED"]
