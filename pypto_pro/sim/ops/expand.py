"""Broadcast ops (pipe V): `row_expand_<op>(out, src, s)` combines every element of a row with
`s[r, 0]` (s is [rows, 1], usually DN), `col_expand_<op>` with `s[0, c]` (s is [1, cols]);
`row_expand`/`col_expand` just broadcast. `expdif` is exp(src - s) (softmax), `binop` takes its
operation from the kwarg `op` (add, sub, mul, div, max, min, expdif). Domain: the output's
valid window. FP32 ops with an `out=` form write straight into the output's buffer when no
operand overlaps it other than exactly (`TileRef.compute_target`). `BATCH_IMPLS` run those per
core and the others once on the stacked operands of many cores (`batching`).
"""
from __future__ import annotations

from collections.abc import Callable

import torch

from pypto_pro.ir.dtype import DataType

from ..step import Step
from . import SimOpError, batching
from .batching import Writes, batched, column, per_call, stack_blocks, tile_writes
from .elementwise import FLOATS, NUMERIC, block_values, integer_div
from .numerics import to_compute
from .operands import encode, require_dtype, require_same_dtype, store, tile_arg

Binary = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def _div(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """TROWEXPANDDIV / TCOLEXPANDDIV: floats divide (the `out=` form for FP32 in place),
    integers too (8/16/32-bit: pto-isa's vdiv, truncating)."""
    if a.is_floating_point():
        return torch.div(a, b, out=out)
    return integer_div(a, b)


OPS: dict[str, tuple[Binary, tuple]] = {
    "add": (torch.add, NUMERIC),
    "sub": (torch.sub, NUMERIC),
    "mul": (torch.mul, NUMERIC),
    "div": (_div, NUMERIC),
    "max": (torch.maximum, NUMERIC),
    "min": (torch.minimum, NUMERIC),
    "expdif": (lambda a, b: torch.exp(a - b), FLOATS),
}


def _broadcast_shape(out, axis: int) -> tuple[int, int]:
    """The block of the [rows, 1] (axis 1) or [1, cols] (axis 0) operand over out's window."""
    return (out.valid_rows, 1) if axis == 1 else (1, out.valid_cols)


def _checked(op: str, name: str, args: list) -> tuple:
    """(out, src) of an expand op, the three operands' dtypes checked."""
    out, src = tile_arg(args[0], op=op, position=0), tile_arg(args[1], op=op, position=1)
    require_same_dtype(op, out, src, tile_arg(args[2], op=op, position=2))
    require_dtype(op, (out,), OPS[name][1])
    return out, src


#: ops with an `out=` form, run in place on FP32 tiles (storage = compute dtype)
IN_PLACE = {"add", "sub", "mul", "div", "max", "min"}


def _apply(op: str, name: str, args: list, axis: int) -> None:
    out, src = _checked(op, name, args)
    shape = _broadcast_shape(out, axis)
    if name in IN_PLACE and out.dtype is DataType.FP32:
        target = out.compute_target((src, (args[2], shape)), same_ok=True)
        if target is not None:
            OPS[name][0](src.peek_block(0, 0, *out.valid), args[2].peek_block(0, 0, *shape),
                         out=target)
            return
    store(out, OPS[name][0](block_values(src, out.valid), block_values(args[2], shape)))


def _step(name: str, axis: int) -> Callable[[list, dict], Step | None]:
    """The in-place FP32 path of `_apply` with its views bound (None: another path)."""
    fn = OPS[name][0]

    def step(args: list, kwargs: dict) -> Step | None:
        out, src, s = args[0], args[1], args[2]
        if name not in IN_PLACE or out.dtype is not DataType.FP32:
            return None
        shape = _broadcast_shape(out, axis)
        a, b = src.peek_view(0, 0, *out.valid), s.peek_view(0, 0, *shape)
        target = None if a is None or b is None else \
            out.compute_target((src, (s, shape)), same_ok=True)
        if target is None:
            return None
        mark = out.written_marker()

        def in_place() -> None:
            fn(a, b, out=target)
            mark()
        return Step(in_place)
    return step


def _in_place(name: str, out: object) -> bool:
    """A large FP32 output: memory-bound, run per core (`batching.LARGE`)."""
    return name in IN_PLACE and batching.large(out) and out.dtype is DataType.FP32


def _apply_batch(op: str, name: str, calls: list[list], axis: int) -> Writes:
    """`_apply` of every call (`IMPLS[op]`): in place per core on FP32 tiles (memory-bound),
    else on the stacked operands."""
    out, src = _checked(op, name, calls[0])
    if _in_place(name, out):
        return per_call(IMPLS[op], calls, {})
    values = to_compute(stack_blocks(column(calls, 1), out.valid), src.dtype)
    scalars = to_compute(stack_blocks(column(calls, 2), _broadcast_shape(out, axis)), src.dtype)
    return tile_writes(column(calls, 0), encode(out.dtype, OPS[name][0](values, scalars)))


def _impl(name: str, axis: int) -> Callable[[list, dict], None]:
    op = f"block.{'row' if axis == 1 else 'col'}_expand_{name}"

    def impl(args: list, kwargs: dict) -> None:
        _apply(op, name, args, axis)
    return impl


def _batch(name: str, axis: int) -> Callable[[list[list], dict], Writes]:
    op = f"block.{'row' if axis == 1 else 'col'}_expand_{name}"

    def compute(calls: list[list], kwargs: dict) -> Writes:
        return _apply_batch(op, name, calls, axis)
    return compute


def _binop(axis: int) -> Callable[[list, dict], None]:
    op = f"block.{'row' if axis == 1 else 'col'}_expand_binop"

    def impl(args: list, kwargs: dict) -> None:
        raw = kwargs.get("op", kwargs.get("binop"))
        name = str(getattr(raw, "name", raw)).split(".")[-1].lower()
        name = {"maximum": "max", "minimum": "min"}.get(name, name)
        if name not in OPS:
            raise SimOpError(f"{op}: kwarg op={raw!r} is not one of {', '.join(OPS)}")
        _apply(op, name, args, axis)
    return impl


def _plain(axis: int) -> Callable[[list, dict], None]:
    op = f"block.{'row' if axis == 1 else 'col'}_expand"

    def impl(args: list, kwargs: dict) -> None:
        out, src = tile_arg(args[0], op=op, position=0), tile_arg(args[1], op=op, position=1)
        require_same_dtype(op, out, src)
        shape = (out.valid_rows, 1) if axis == 1 else (1, out.valid_cols)
        store(out, block_values(src, shape).expand(out.valid))
    return impl


IMPLS = {
    **{f"block.row_expand_{n}": _impl(n, 1) for n in OPS},
    **{f"block.col_expand_{n}": _impl(n, 0) for n in OPS},
    "block.row_expand_binop": _binop(1), "block.col_expand_binop": _binop(0),
    "block.row_expand": _plain(1), "block.col_expand": _plain(0),
}

STEPS = {f"block.{axis}_expand_{n}": _step(n, k) for axis, k in (("row", 1), ("col", 0))
         for n in IN_PLACE}

BATCH_IMPLS = {
    f"block.{axis}_expand_{n}": batched(IMPLS[f"block.{axis}_expand_{n}"], _batch(n, k),
                                        lambda args, n=n: _in_place(n, args[0]))
    for axis, k in (("row", 1), ("col", 0)) for n in OPS}
