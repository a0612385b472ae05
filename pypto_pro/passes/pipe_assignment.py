"""pipe_assignment: write each data-accessing op's pipe into the op as `pipe=<PipeType>`.

The pipe comes from the op registry (`OpSpec.pipe_for` on the memory spaces of the op's tile
operands, spec §2.12.1): e.g. `block.store` of an Acc tile runs on FIX, of a Vec tile on MTE3.
After this pass auto_mutex, the simulator and the code generator all read that one fact from
the call. Sync ops (whose `pipe=` names the pipe they synchronise) are left alone, and an op
that already carries a pipe keeps it.
"""
from __future__ import annotations

from ..ir import ops
from ..ir.mutator import Mutator
from ..ir.nodes import Call, Expr, Program
from ..ir.types import TileType
from .ir_query import map_functions, with_body
from .manager import PassContext
from .mutex_ops import with_kwarg

NAME = "pipe_assignment"


def run(program: Program, ctx: PassContext) -> Program:
    out = map_functions(program, lambda f: with_body(f, _Annotate().visit(f.body)))
    ctx.facts.add("pipes_assigned")
    return out


def needs_pipe(call: Call) -> bool:
    """Whether `call` is an op that touches buffer data and so runs on a pipe."""
    spec = ops.get(call.op)
    return spec is not None and spec.accesses_data and spec.family != "sync"


def op_pipe(call: Call):
    """The pipe `call` runs on: its `pipe=` kwarg, else the registry's answer."""
    pipe = call.kwarg("pipe")
    if pipe is not None:
        return pipe
    spaces = [a.type.memory if isinstance(a.type, TileType) else None for a in call.args]
    return ops.get(call.op).pipe_for(spaces)


class _Annotate(Mutator):
    def visit_Call(self, node: Call) -> Expr:
        node = self.generic(node)
        if needs_pipe(node) and node.kwarg("pipe") is None:
            return with_kwarg(node, "pipe", op_pipe(node))
        return node
