"""The functional op library of the simulator: one implementation per instruction the engine runs.

`IMPLS` maps IR op names (exactly as registered in `pypto_pro.ir.ops`) to
`impl(args, kwargs) -> object | None`. The engine resolves every positional argument, in the
registry's order (output first for tile ops), to a `TileRef`, a `GMRef`, a Python scalar or a
tuple of ints; kwargs carry Python enums or their int values. Implementations read all their
operands before writing anything, so the engine may defer writes to an instruction's end.
Op families live in their own modules; an op implemented twice fails at import, and
`missing_ops()` lists the required registry ops still lacking an implementation (the test
suite keeps it empty without breaking imports while the registry grows): `block.*` ops of the
data families (everything but sync/meta/alloc/scalar/debug/simt), `block.getval` /
`block.setval`, and the two instructions that run a whole compiled body (`launches`): a VF
section (`vf.vec_scope`) and a SIMT launch (`simt.launch`). The Reg API ops inside a VF
section (`vf.*`) run in `sim.frontend.vf`, not here.

`STEPS` maps some of those ops to `step(args, kwargs) -> Step | None`, called on operands the
op's impl accepts: a `sim.step.Step` whose `run()` does the op on the values its operands then
hold, with everything else (checks passed, views, plans) bound, or None when the op must go
through its impl every time (its path depends on values or has no views). A copy step says so
(`Step.copy`: the fast path compiles it). The eager replay keeps them as a tape
(`sim.fast.tape`); they are valid while `TileRef.epoch` is unchanged. Family modules export
their own `STEPS`.

`BATCH_IMPLS` maps some of those ops to `batch_impl(calls, kwargs)`: the same op run for many
cores at once (`calls`: one `IMPLS` argument list per core, distinct cores, one shared kwargs),
with exactly the effect of `for args in calls: IMPLS[op](args, kwargs)` (`batching`;
`batch_key` says which calls may share a batch). Family modules export their own `BATCH_IMPLS`.
"""
from __future__ import annotations

from collections.abc import Callable

from ..step import Step


class SimOpError(ValueError):
    """An op called with operands the hardware does not support (names the op and dtypes)."""


Impl = Callable[[list, dict], object]
StepBuilder = Callable[[list, dict], Step | None]
BatchImpl = Callable[[list[list], dict], None]

# The family modules import SimOpError from this package, so they are imported after it.
from . import (  # noqa: E402
    compare,
    convert,
    cube,
    elementwise,
    expand,
    fixpipe,
    fused,
    gather,
    launches,
    movement,
    quant,
    rearrange,
    reduce,
    sort,
)

_NOT_IMPLEMENTED_FAMILIES = {"sync", "meta", "alloc", "scalar", "debug", "simt", "simt_ctx"}
_SCALAR_DATA_OPS = {"block.getval", "block.setval"}
_BODY_OPS = {"vf.vec_scope", "simt.launch"}  # one instruction for a whole compiled body


_FAMILIES = (movement, elementwise, fused, compare, convert, rearrange, reduce, expand, gather,
             sort, quant, cube, fixpipe, launches)


def _collect(name: str) -> dict:
    """The union of the family modules' tables `name` (IMPLS, BATCH_IMPLS or STEPS)."""
    table: dict = {}
    for module in _FAMILIES:
        part = getattr(module, name, {})
        clash = set(table) & set(part)
        if clash:
            raise RuntimeError(f"ops implemented twice in {name}: {sorted(clash)}")
        table.update(part)
    return table


def required_ops() -> set[str]:
    """IR ops the simulator must implement (from the op registry)."""
    from pypto_pro.ir.ops import REGISTRY

    return {name for name, spec in REGISTRY.items() if name.startswith("block.")
            and spec.family not in _NOT_IMPLEMENTED_FAMILIES} | _SCALAR_DATA_OPS | _BODY_OPS


def missing_ops() -> set[str]:
    """Required ops without an implementation (empty when the library covers the registry)."""
    return required_ops() - set(IMPLS)


IMPLS: dict[str, Impl] = _collect("IMPLS")
BATCH_IMPLS: dict[str, BatchImpl] = _collect("BATCH_IMPLS")
STEPS: dict[str, StepBuilder] = _collect("STEPS")
if set(STEPS) - set(IMPLS):
    raise RuntimeError(f"steps without an implementation: {sorted(set(STEPS) - set(IMPLS))}")
if set(BATCH_IMPLS) - set(IMPLS):
    raise RuntimeError(f"batched ops without a per-core implementation: "
                       f"{sorted(set(BATCH_IMPLS) - set(IMPLS))}")

from .batching import batch_key, error_index, run_grouped  # noqa: E402

__all__ = ["BATCH_IMPLS", "IMPLS", "STEPS", "BatchImpl", "Impl", "SimOpError", "StepBuilder",
           "batch_key", "error_index", "missing_ops", "required_ops", "run_grouped"]
