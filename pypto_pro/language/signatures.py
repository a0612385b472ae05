"""The real PyPTO Pro parameter names of the `pl.*` tile ops, for `inspect.signature(pl.insert)`
and for calls that pass operands by keyword.

`inspect.signature` shows an op's declared parameters (`(dst_tile, src_tile, offset)`). Inside a
kernel the real parser hands an op's keywords to its op builder, whose operand names may differ
(`pl.load(out=..., tensor=...)`); a call may name an operand by either name, and the parser moves
it to its position before the op's handler sees the call (`bind_keywords`).
"""
from __future__ import annotations

import ast
import functools
import inspect

_P = inspect.Parameter

#: `positional operands [| keyword-only options]` per op; `name=default` gives a default,
#: `*name` the further positional operands
_DECLARED = {
    "load": "dst_tile src_tensor offsets | order=None",
    "load_tile": "dst_tile src_tensor tile_offsets | order=None",
    **dict.fromkeys(("store", "store_tile"), "dst_tensor src_tile {} | relu_pre_mode=None "
                                             "scale=None order=None "
                                             "atomic=AtomicType.AtomicNone phase=None"),
    "move": "dst_tile src_tile offset=None | acc_to_vec_mode=None relu_pre_mode=None "
            "scale=None",
    "insert": "dst_tile src_tile offset",
    **dict.fromkeys(("ssbuf_load", "ssbuf_store"), "struct_var offset"),
    **dict.fromkeys("add sub mul div and_ shl shr eq ne lt le gt ge add_relu sub_relu "
                    "mul_add_dst fused_mul_add".split(), "out lhs rhs"),
    "xor": "out lhs rhs tmp",
    "expands": "out scalar",
    **dict.fromkeys("neg abs exp log sqrt rsqrt recip relu transpose".split(), "out src"),
    "fillpad": "out src | mode=FillPadMode.NORMAL",
    "cast": "out src | mode=RoundMode.CAST_ROUND",
    **dict.fromkeys(("add_relu_cast", "sub_relu_cast", "mul_cast"),
                    "out lhs rhs | target_type mode=RoundMode.CAST_ROUND"),
    "select": "out mask lhs rhs tmp",
    "addc": "out a b c",
    "fused_mul_add_relu": "out a b",
    "axpy": "out src alpha",
    **dict.fromkeys(("partadd", "partmax", "partmin", "partmul"), "out src0 src1"),
    "matmul": "dst_tile lhs_tile rhs_tile bias_tile=None | phase=None",
    "matmul_acc": "dst_tile acc_tile lhs_tile rhs_tile | phase=None",
    "matmul_mx": "dst_tile lhs_tile rhs_tile scale_a scale_b | phase=None",
    "matmul_mx_acc": "dst_tile acc_tile lhs_tile rhs_tile scale_a scale_b | phase=None",
    **dict.fromkeys(("sum", "argmax", "argmin"), "out src tmp | dim=0"),
    **dict.fromkeys(("expand_max", "expand_min", "expand_mul", "expand_sub", "expand_div"),
                    "out src scalar | dim=0"),
    "gather": "out src idx tmp | cmp_mode=0 offset=0",
    "gatherb": "out src offsets",
    "gathermask": "out src | pattern_mode",
    "scatter": "out src idx",
    "mrgsort": "dst src | block_len",
    "mrgsort2": "src0 src1 dst tmp *args | exhausted=False",
    "sort32": "dst src idx tmp=None",
    "histogram": "dst src idx | is_msb",
    "quant": "out src scale | mode=QuantMode.SYM offset=None",
    "dequant": "out src scale offset",
    "getval": "container offset",
    "setval": "container offset value",
    "set_validshape": "tile shape",
    "set_stride": "tensor stride",
    "set_vec_mask": "mask_high mask_low",
    "fill_index": "out start",
    **dict.fromkeys(("minimum", "maximum"), "out lhs rhs | dim=None"),
    "printf": "format_str *args | loc=False",
    "pto_assert": "condition format_str=None *args | loc=False",
    "dump_data": "data offsets=None shapes=None | workspace=None loc=False flag=None",
    **dict.fromkeys(("set_mask_count", "set_mask_norm", "reset_mask", "trap", "get_block_idx",
                     "get_subblock_idx", "get_block_num", "get_subblock_num", "get_spr"), ""),
}

#: the op builders' names for operands the declaration names otherwise (what the real parser
#: passes a keyword to), by position
_BUILDER = {
    "load": "out tensor", "load_tile": "out tensor", "store": "out tile",
    "store_tile": "out tile", "move": "out src", "insert": "out src",
    **dict.fromkeys(("cast", "fillpad"), "out src"),
}


def _default(text: str):
    from ..ir import attrs

    return eval(text, {"__builtins__": {}}, {n: getattr(attrs, n) for n in attrs.NAMES})  # noqa: S307


@functools.cache
def _parsed(op: str) -> tuple[list[tuple[str, str | None]], str | None,
                              list[tuple[str, str | None]]]:
    """(positional (name, default text), *args name, keyword-only (name, default text))."""
    text = _DECLARED[op]
    if "{}" in text:
        text = text.format("tile_offsets" if op.endswith("_tile") else "offsets")
    head, _, tail = text.partition("|")
    split = [tuple(p.split("=", 1)) if "=" in p else (p, None) for p in head.split()]
    star = next((p[1:] for p, _ in split if p.startswith("*")), None)
    return ([p for p in split if not p[0].startswith("*")], star,
            [tuple(p.split("=", 1)) if "=" in p else (p, None) for p in tail.split()])


def signature(op: str) -> inspect.Signature | None:
    """The real declaration's signature of `pl.<op>`, or None for an op it does not declare."""
    if op not in _DECLARED:
        return None
    positional, star, options = _parsed(op)
    params = [_P(n, _P.POSITIONAL_OR_KEYWORD, **({} if d is None else {"default": _default(d)}))
              for n, d in positional]
    if star:
        params.append(_P(star, _P.VAR_POSITIONAL))
    params += [_P(n, _P.KEYWORD_ONLY, **({} if d is None else {"default": _default(d)}))
               for n, d in options]
    return inspect.Signature(params)


@functools.cache
def _positions(op: str) -> dict[str, int]:
    names = {n: i for i, (n, _) in enumerate(_parsed(op)[0])}
    for i, n in enumerate(_BUILDER.get(op, "").split()):
        names.setdefault(n, i)
    return names


def bind_keywords(op: str, node: ast.Call) -> tuple[ast.Call, str | None]:
    """`node` with the keywords that name `op`'s operands moved to their positions (as far as
    the positions run on without a gap), and the name of an operand given twice (or None)."""
    if op not in _DECLARED or not node.keywords:
        return node, None
    where = _positions(op)
    named = {kw.arg: kw for kw in node.keywords if kw.arg in where}
    if not named or any(isinstance(a, ast.Starred) for a in node.args):
        return node, None
    by_position: dict[int, ast.keyword] = {}
    for n, kw in named.items():
        if where[n] < len(node.args) or where[n] in by_position:
            return node, n
        by_position[where[n]] = kw
    args, moved = list(node.args), set()
    while len(args) in by_position:
        kw = by_position[len(args)]
        args.append(kw.value)
        moved.add(id(kw))
    if not moved:
        return node, None
    call = ast.Call(func=node.func, args=args,
                    keywords=[kw for kw in node.keywords if id(kw) not in moved])
    return ast.copy_location(call, node), None
