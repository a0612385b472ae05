"""One table from IR op name to the emitter of that op used as a statement.

`EFFECTS` merges the tile-op table (`ops.TILE_OPS` and the special forms), the sync / system /
debug table (`sync.SYNC_OPS`), SIMT launches and the VF intrinsics; `emit_effect` looks a call
up there. Value ops used as statements (`(void)x;`) and ops that must not survive the passes
(`tile_group.next/current/previous`) are handled here too. `covered_ops()` lists every op name
with an emitter, for the coverage test against the op registry and the simulator's op library.
"""
from __future__ import annotations

import functools
from collections.abc import Callable

from ..errors import CodegenInner, NotSupported
from ..ir.nodes import Call
from ..ir.span import Span

UNLOWERED = ("tile_group.next", "tile_group.current", "tile_group.previous")


@functools.lru_cache(maxsize=1)
def effects() -> dict[str, Callable]:
    from ..ir import ops as opreg
    from . import ops, simt, sync, vf

    table: dict[str, Callable] = {}
    for name, spec in ops.TILE_OPS.items():
        table[name] = _instr(ops.emit_instr, spec)
    table.update(ops.special_ops())
    table.update(sync.SYNC_OPS)
    table.update(simt.SIMT_EFFECTS)
    table.update({f"vf.{n}": vf.emit_statement for n in opreg.VF_NAMES})
    return table


def _instr(emit: Callable, spec) -> Callable:
    def handler(body, call: Call, span: Span | None) -> None:
        emit(body, call, spec, span)

    return handler


def emit_effect(body, call: Call, span: Span | None) -> None:
    if call.op in UNLOWERED:
        raise CodegenInner(f"{call.op} reached code generation: the tile_group_lowering pass "
                           "must run first", span, module="PRO_COMPILE")
    handler = effects().get(call.op)
    if handler is not None:
        handler(body, call, span)
        return
    from .decls import DECLARATIONS
    from .exprs import VALUE_CALLS

    if call.op in VALUE_CALLS or (call.op.startswith("simt.") and body.ctx.simt):
        body.w.line(f"(void){body.x.emit(call)};", span)
        return
    if call.op in DECLARATIONS:
        raise CodegenInner(f"{call.op} must be bound to a variable", span,
                           module="PRO_COMPILE")
    raise NotSupported(f"codegen: op '{call.op}' has no C++ lowering", span,
                       module="PRO_COMPILE")


def covered_ops() -> set[str]:
    """Every IR op code generation can emit (as a statement, a value or a declaration)."""
    from .decls import DECLARATIONS
    from .exprs import VALUE_CALLS
    from .simt import SIMT_VALUE_OPS

    return set(effects()) | set(VALUE_CALLS) | set(DECLARATIONS) | set(SIMT_VALUE_OPS)
