"""Which GM window / tile layout pairs the a5 DMA moves (pto-isa's NPU static checks, which
`pypto_pro/include` mirrors): a fact of the IR that the pass verify_memory checks and the code
generator spells.

A GM access (`load`, `store`, `store_fp`) goes through a GlobalTensor of the tensor's own NZ / DN
layout, else DN for a transposed load or a one-column tile (the DMA moves a DN window column by
column), else ND (`access_layout`). A Vec tile takes an ND window row-major, a DN one
column-major, NZ as NZ; an L1 tile takes ND / DN / NZ windows as NZ, ND as ND, DN as DN or ZN
(a one-row ZZ tile: the MX scale path); a Vec tile stores to the same layout or is one row / one
column; an Acc tile stores to ND or NZ. Anything else is refused (`check_pair`).
"""
from __future__ import annotations

from ..errors import NotSupported
from .nodes import Call
from .span import Span
from .types import MemorySpace, TileLayout, TileType

#: GM accesses and the position of their tensor operand (the tile is the other of 0 / 1)
WINDOWED = {"block.load": 1, "block.store": 0, "block.store_fp": 0}


def access_layout(call: Call, tensor_layout: TileLayout) -> TileLayout:
    """The GlobalTensor layout of one access: the tensor's own NZ / DN layout, else DN for a
    transposed load or a one-column tile, else ND."""
    if tensor_layout is not TileLayout.ND:
        return tensor_layout
    tile = call.args[1 - WINDOWED[call.op]].type
    column = isinstance(tile, TileType) and tile.shape[1] == 1
    return TileLayout.DN if column or call.kwarg("is_transpose") else TileLayout.ND


#: (tile memory, load?) → {GM window layout: tile layouts the a5 DMA moves it to / from}
_DMA_PAIRS = {
    (MemorySpace.Vec, True): {"ND": {"ND"}, "DN": {"DN"}, "NZ": {"NZ"}},
    (MemorySpace.Mat, True): {"ND": {"NZ", "ND"}, "DN": {"NZ", "DN", "ZN"}, "NZ": {"NZ"}},
    (MemorySpace.Vec, False): {"ND": {"ND"}, "DN": {"DN"}, "NZ": {"NZ"}},
    (MemorySpace.Acc, False): {"ND": None, "NZ": None},  # any Acc tile
}
_TILE_LAYOUT = {("row", "none"): "ND", ("col", "none"): "DN", ("col", "row"): "NZ",
                ("row", "col"): "ZN", ("row", "row"): "ZZ", ("col", "col"): "NN"}


def tile_layout(t: TileType) -> str:
    """The layout a tile's C++ type spells (a one-column tile is column-major)."""
    blayout = "col" if t.shape[1] == 1 else t.layout.blayout
    return _TILE_LAYOUT[blayout, t.layout.slayout]


def check_pair(call: Call, tile: TileType, window: TileLayout, span: Span | None) -> None:
    """Refuse a GM window / tile layout pair the a5 DMA does not move (module docstring)."""
    load = call.op == "block.load"
    pairs = _DMA_PAIRS.get((tile.memory, load))
    if pairs is None or window.value not in ("ND", "DN", "NZ"):
        return  # other memories and the MX / scale layouts: checked elsewhere
    lay = tile_layout(tile)
    if load and tile.memory is MemorySpace.Mat and tile.shape[0] == 1 and lay == "ZZ":
        return  # the MX scale-vector path
    if not load and tile.memory is MemorySpace.Vec and 1 in tile.shape:
        return  # one row / one column: any window
    if window.value in pairs and (pairs[window.value] is None or lay in pairs[window.value]):
        return
    what = "a transposed" if call.kwarg("is_transpose") else f"an {window.value}"
    moves = "into" if load else "from"
    raise NotSupported(
        f"{call.op.split('.')[1]}: the a5 DMA does not move {what} GM window {moves} a {lay} "
        f"{tile.memory.value} tile", span, module="PRO_COMPILE",
        hint="a plain window goes with a row-major (ND) or NZ tile, a transposed one "
             "(order=[1, 0]) or a one-column tile with a column-major (DN) one (L1: NZ or ZN)")


__all__ = ["WINDOWED", "access_layout", "check_pair", "tile_layout"]
