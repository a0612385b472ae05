"""What the real toolchain refuses of a tile-level vector op, refused at the call's line: the
element dtypes each op takes on a5 (and fill_index's one row), gathermask's pattern.

The real frontend builds these ops without a dtype check; its C++ compile then fails on the
static_assert of the pto-isa instruction the op lowers to (`include/pto/npu/a5/T*.hpp`). Ours
would run them on the simulator, so it refuses them as the real toolchain does, with that
static_assert's words: a kernel that computes here must compile there. A fused op that the real
code generator lowers to several instructions takes what every one of them takes.
"""
from __future__ import annotations

import ast

from ...errors import NotSupported
from ...ir.dtype import DataType as D
from ...ir.types import TileType
from .context import ParseContext

_I8, _I16, _I32, _I64 = {D.INT8, D.UINT8}, {D.INT16, D.UINT16}, {D.INT32, D.UINT32}, \
    {D.INT64, D.UINT64}
_INTS = _I8 | _I16 | _I32 | _I64
_ALL = frozenset(_INTS | {D.FP16, D.BF16, D.FP32})
_MUL = frozenset(_I16 | _I32 | _I64 | {D.FP16, D.BF16, D.FP32})  # TMUL / TMULS
_DIV = frozenset(_I16 | _I32 | _I64 | {D.FP16, D.FP32})  # TDIV / TDIVS
_RELU = frozenset({D.FP16, D.FP32, D.INT32})  # TRELU
_HALF_FLOAT = frozenset({D.FP16, D.FP32})  # TUnaryCheck's data type check, TAXPY
_BITS_124 = frozenset(_I8 | _I16 | _I32 | {D.FP16, D.BF16, D.FP32})  # sizeof(T) in 1, 2, 4
_INTS_124 = frozenset(_I8 | _I16 | _I32)
_EXPAND = frozenset(_I8 | _I16 | _I32 | {D.FP16, D.BF16, D.FP32})  # TROWEXPAND* / TCOLEXPANDOP

#: op -> (operand position whose dtype decides, dtypes taken, the instruction's words)
TAKES: dict[str, tuple[int, frozenset[D], str]] = {
    "block.add": (0, _ALL, "Fix: TADD has invalid data type."),
    "block.sub": (0, _ALL, "Fix: TSUB has invalid data type."),
    "block.mul": (0, _MUL, "Fix: TMUL has invalid data type."),
    "block.div": (0, _DIV, "Fix: TDIV has invalid data type."),
    "block.maximum": (0, _ALL, "Fix: TMax has invalid data type."),
    "block.minimum": (0, _ALL, "Fix: TMIN has invalid data type."),
    "block.and": (0, _BITS_124, "Fix: TAND has invalid data type."),
    "block.or": (0, _BITS_124, "Fix: TOR has invalid data type."),
    "block.xor": (0, _INTS_124, "Fix: TXOR has invalid data type."),
    "block.shl": (0, frozenset(_INTS), "Fix: TSHL has invalid data type."),
    "block.shr": (0, frozenset(_INTS), "Fix: TSHR has invalid data type."),
    "block.adds": (0, _ALL, "TADDS: Invalid data type"),
    "block.subs": (0, _ALL, "TSUBS: Invalid data type"),
    "block.muls": (0, _MUL, "TMULS: Invalid data type"),
    "block.divs": (0, _DIV, "TDIVS: Invalid data type"),
    "block.maxs": (0, _ALL, "TMAXS: Invalid data type"),
    "block.mins": (0, _ALL, "TMINS: Invalid data type"),
    "block.ands": (0, _BITS_124, "Fix: TANDS has invalid data type."),
    "block.ors": (0, _BITS_124, "Fix: TORS has invalid data type."),
    "block.xors": (0, _BITS_124, "Fix: TXORS has invalid data type."),
    "block.shls": (0, frozenset(_INTS), "TSHLS: Invalid data type"),
    "block.shrs": (0, frozenset(_INTS), "TSHRS: Invalid data type"),
    "block.neg": (0, _MUL, "TMULS: Invalid data type"),  # TNEG is TMULS(dst, src, -1)
    "block.abs": (0, frozenset({D.FP16, D.FP32, D.INT8, D.INT16, D.INT32}),
                  "TABS: Invalid data type."),
    "block.relu": (0, _RELU, "TRELU: Invalid data type."),
    "block.not": (0, _INTS_124, "TNOT: Invalid data type."),
    **{f"block.{n}": (0, _HALF_FLOAT, "TUnaryOp: Invalid data type.")
       for n in ("exp", "log", "sqrt", "recip")},
    "block.rsqrt": (0, _HALF_FLOAT, "TRSQRT: Invalid data type."),
    "block.axpy": (1, _HALF_FLOAT, "TAXPY: Invalid data type"),
    "block.add_relu": (1, _RELU, "TRELU: Invalid data type."),  # TADD, TRELU
    "block.sub_relu": (1, _RELU, "TRELU: Invalid data type."),  # TSUB, TRELU
    "block.mul_add_dst": (1, _MUL, "Fix: TMUL has invalid data type."),  # TMUL, TADD
    "block.fused_mul_add": (1, _MUL, "Fix: TMUL has invalid data type."),  # TMUL, TADD
    "block.fused_mul_add_relu": (1, _RELU, "TRELU: Invalid data type."),  # + TRELU
    "block.partadd": (0, _ALL, "Fix: TPARTADD Invalid data type."),
    "block.partmax": (0, _ALL, "Fix: TPARTMAX Invalid data type."),
    "block.partmin": (0, _ALL, "Fix: TPARTMIN Invalid data type."),
    "block.partmul": (0, frozenset(_I8 | _I16 | _I32 | {D.FP16, D.BF16, D.FP32}),
                      "Fix: TPARTMUL Invalid data type."),
    "block.cmp": (1, _ALL, "TCMP: Invalid data type."),
    "block.cmps": (1, _ALL, "TCMPS: Invalid data type."),
    "block.sels": (0, _ALL - {D.BF16}, "TSELS: Invalid data type"),
    "block.expands": (0, _ALL, "TEXPANDS: Invalid data type"),
    "block.transpose": (1, _BITS_124, "Fix: TTRANS has unsupported data type."),
    "block.fill_index": (0, frozenset(_I16 | _I32), "Fix: TCI only supports uint16/32 or int16/32"),
    **{f"block.row_expand_{n}": (0, _EXPAND, f"Fix: TROWEXPAND{n.upper()} Invalid data type.")
       for n in ("add", "sub", "mul", "max", "min")},
    "block.row_expand_div": (0, _EXPAND, "Fix: TROWEXPANDDIV invalid data type."),
    **{f"block.col_expand_{n}": (0, _EXPAND, "Fix: TCOLEXPANDOP Invalid data type.")
       for n in ("add", "sub", "mul", "div", "max", "min")},
    "block.row_expand_expdif": (0, _HALF_FLOAT, "Fix: TROWEXPANDEXPDIF Invalid data type."),
    "block.col_expand_expdif": (0, _HALF_FLOAT, "Fix: TCOLEXPANDEXPDIF Invalid data type "
                                                "(exp(a-b) supports half/float only)."),
}


#: further operands' dtypes: op -> ((position, dtypes taken, the instruction's words), ...)
OPERANDS: dict[str, tuple[tuple[int, frozenset[D], str], ...]] = {
    "block.sort32": ((1, _HALF_FLOAT, "Dst and src must be float or half."),
                     (2, frozenset({D.UINT32}), "Idx must be uint32_t.")),
    "block.gather": ((2, frozenset(_I16 | _I32), "Fix: TGATHER expect b16/b32"),),
}


def _operand_rules(ctx: ParseContext, op: str, args: tuple, node: ast.AST) -> None:
    for position, takes, words in OPERANDS.get(op, ()):
        t = getattr(args[position], "type", None) if position < len(args) else None
        if isinstance(t, TileType) and t.dtype not in takes:
            names = ", ".join(sorted(d.name for d in takes))
            raise ctx.error(NotSupported, f"{op.removeprefix('block.')} with a {t.dtype.name} "
                                          f"operand {position + 1}: {words}", node,
                            hint=f"a5's instruction takes {names} there")


def check_vector_op(ctx: ParseContext, op: str, args: tuple, kwargs: dict,
                    node: ast.AST) -> None:
    """Refuse `op` on a tile dtype its pto-isa instruction does not take, and a gathermask
    pattern the real code generator has no MaskPattern for (NotSupported)."""
    if op == "block.gathermask":
        mode = kwargs.get("pattern_mode")
        if not isinstance(mode, int) or isinstance(mode, bool) or not 1 <= mode <= 7:
            raise ctx.error(NotSupported, f"block.gathermask: pattern_mode must be 1-7, got "
                                          f"{mode}", node,
                            hint="1 / 2: even / odd columns, 3..6: one column of every 4, "
                                 "7: all")
    _operand_rules(ctx, op, args, node)
    entry = TAKES.get(op)
    if entry is None:
        return
    position, takes, words = entry
    t = getattr(args[position], "type", None) if position < len(args) else None
    if not isinstance(t, TileType):
        return
    if t.dtype in takes:
        if op == "block.fill_index" and t.shape[0] != 1:  # TCI writes one row
            raise ctx.error(NotSupported, f"fill_index on a {t.shape[0]}-row tile: Fix: TCI "
                                          f"expect row is 1", node,
                            hint="fill_index fills a [1, n] tile")
        return
    names = ", ".join(sorted(d.name for d in takes))
    raise ctx.error(NotSupported, f"{op.removeprefix('block.')} on {t.dtype.name} tiles: "
                                  f"{words}", node,
                    hint=f"a5's instruction takes {names}")
