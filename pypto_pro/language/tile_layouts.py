"""The layout a tile of each memory space takes by default and the layouts it may take, per arch,
as the real `pl.TileType` decides them (`_apply_default_layout` of its block ops).

Only the cube-side buffers are constrained: Mat (L1) holds NZ / ZN fractals (ND for 64-bit
integers, ZZ / NN for MX scales); Left (L0A) NZ, or ZZ before a5; Right (L0B) ZN; Acc (L0C) NZ;
ScaleLeft ZZ and ScaleRight NN (a5 only). On a5 the L0 buffers cannot hold ZZ / NN at all: that
refusal names the arch. Vec and the other spaces take any layout, ND by default.
"""
from __future__ import annotations

from ..ir.dtype import DataType
from ..ir.types import MemorySpace, TileLayout

M = MemorySpace
L = TileLayout

_DEFAULTS = {
    "a3": {M.Mat: L.NZ, M.Left: L.ZZ, M.Right: L.ZN, M.Scaling: L.ND, M.Acc: L.NZ},
    "a5": {M.Mat: L.NZ, M.Left: L.NZ, M.Right: L.ZN, M.Scaling: L.ND, M.Acc: L.NZ,
           M.ScaleLeft: L.ZZ, M.ScaleRight: L.NN},
}
_L0 = (M.Left, M.Right, M.Acc)


class LayoutRefused(ValueError):
    """What the real `pl.TileType` raises (a ValueError) for a layout its space cannot take."""


def tile_layout(space: MemorySpace, layout: TileLayout | None, dtype: DataType,
                arch: str) -> TileLayout:
    """The layout a tile of `space` gets on `arch` (`layout`, or the space's default when None);
    raises `LayoutRefused` with the real wording when the space cannot hold it."""
    defaults = _DEFAULTS["a5" if arch == "a5" else "a3"]
    default = defaults.get(space)
    if space in (M.ScaleLeft, M.ScaleRight) and default is None:
        raise LayoutRefused(f"{space.value} is only supported on A5, got architecture '{arch}'")
    if default is None:
        return layout if layout is not None else L.ND
    layout = default if layout is None else layout
    allowed = {default}
    if space is M.Left:
        allowed = {_DEFAULTS["a3"][M.Left], _DEFAULTS["a5"][M.Left]}
    elif space is M.Mat:
        allowed.add(L.ZN)
        if dtype in (DataType.UINT64, DataType.INT64):
            allowed.add(L.ND)
        if dtype is DataType.FP8E8M0:
            allowed.update({L.ZZ, L.NN})
    if arch == "a5" and space in _L0 and layout in (L.ZZ, L.NN):
        raise LayoutRefused(f"{space.value} tiles do not support {layout.value} layout on "
                            f"'{arch}'; use the default {default.value} layout instead.")
    if layout not in allowed:
        names = ", ".join(sorted(a.value for a in allowed))
        raise LayoutRefused(f"{space.value} tiles require layout in {{{names}}}, got "
                            f"{layout.value}. Default for '{arch}' is {default.value}.")
    return layout
