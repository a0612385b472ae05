"""Broadcast ops (pipe V): `row_expand_<op>(out, src, s)` combines every element of a row with
`s[r, 0]` (s is [rows, 1], usually DN), `col_expand_<op>` with `s[0, c]` (s is [1, cols]);
`row_expand`/`col_expand` just broadcast. `expdif` is exp(src - s) (softmax), `binop` takes its
operation from the kwarg `op` (add, sub, mul, div, max, min, expdif). Domain: the output's
valid window.
"""
from __future__ import annotations

from collections.abc import Callable

import torch

from . import SimOpError
from .elementwise import FLOATS, NUMERIC, block_values
from .operands import require_dtype, require_same_dtype, store, tile_arg

Binary = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
OPS: dict[str, tuple[Binary, tuple]] = {
    "add": (torch.add, NUMERIC),
    "sub": (torch.sub, NUMERIC),
    "mul": (torch.mul, NUMERIC),
    "div": (torch.div, FLOATS),
    "max": (torch.maximum, NUMERIC),
    "min": (torch.minimum, NUMERIC),
    "expdif": (lambda a, b: torch.exp(a - b), FLOATS),
}


def _broadcast_operand(op: str, tile, out, axis: int) -> torch.Tensor:
    """`tile`'s column 0 ([rows, 1], axis 1) or row 0 ([1, cols], axis 0) over out's window."""
    shape = (out.valid_rows, 1) if axis == 1 else (1, out.valid_cols)
    return block_values(tile_arg(tile, op=op, position=2), shape)


def _apply(op: str, name: str, args: list, axis: int) -> None:
    fn, allowed = OPS[name]
    out, src = tile_arg(args[0], op=op, position=0), tile_arg(args[1], op=op, position=1)
    require_same_dtype(op, out, src, tile_arg(args[2], op=op, position=2))
    require_dtype(op, (out,), allowed)
    store(out, fn(block_values(src, out.valid), _broadcast_operand(op, args[2], out, axis)))


def _impl(name: str, axis: int) -> Callable[[list, dict], None]:
    op = f"block.{'row' if axis == 1 else 'col'}_expand_{name}"

    def impl(args: list, kwargs: dict) -> None:
        _apply(op, name, args, axis)
    return impl


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
