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
section (`vf.*`) run in `sim.vf`, not here.
"""
from __future__ import annotations

from collections.abc import Callable


class SimOpError(ValueError):
    """An op called with operands the hardware does not support (names the op and dtypes)."""


Impl = Callable[[list, dict], object]

# The family modules import SimOpError from this package, so they are imported after it.
from . import (  # noqa: E402
    compare,
    convert,
    cube,
    elementwise,
    expand,
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


def _collect() -> dict[str, Impl]:
    table: dict[str, Impl] = {}
    for module in (movement, elementwise, compare, convert, rearrange, reduce, expand, gather,
                   sort, quant, cube, launches):
        clash = set(table) & set(module.IMPLS)
        if clash:
            raise RuntimeError(f"ops implemented twice: {sorted(clash)}")
        table.update(module.IMPLS)
    return table


def required_ops() -> set[str]:
    """IR ops the simulator must implement (from the op registry)."""
    from pypto_pro.ir.ops import REGISTRY

    return {name for name, spec in REGISTRY.items() if name.startswith("block.")
            and spec.family not in _NOT_IMPLEMENTED_FAMILIES} | _SCALAR_DATA_OPS | _BODY_OPS


def missing_ops() -> set[str]:
    """Required ops without an implementation (empty when the library covers the registry)."""
    return required_ops() - set(IMPLS)


IMPLS: dict[str, Impl] = _collect()

__all__ = ["IMPLS", "Impl", "SimOpError", "missing_ops", "required_ops"]
