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


def shape_refusal(t: TileType) -> str | None:
    """Why pto-isa's `Tile` static-asserts on the shape of `t`, else None: a non-fractal row
    (ND) or column (DN) spans whole 32-byte blocks; a fractal layout needs whole fractals along
    the columns, and along the rows too except in Vec, for one-row tiles and MX scales (a 512 B
    fractal is 16 rows x 32 B when row-major inside, 32 B x 16 columns otherwise; a 1024 B Acc
    fractal 16 x 16; a 32 B MX-scale fractal 16 x 2 or 2 x 16)."""
    if len(t.shape) != 2 or t.dtype.bits < 8:
        return None
    rows, cols = t.shape
    size = t.dtype.bits // 8
    layout = t.layout
    if not layout.is_fractal:  # (a one-column tile is column-major, as `tile_layout` spells it)
        column = layout is TileLayout.DN or cols == 1
        axis, extent = ("column", rows) if column else ("row", cols)
        if extent * size % 32:
            return (f"the {axis} of a {tile_layout(t)} tile must span whole 32-byte blocks: "
                    f"{extent} x {size} B is not a multiple of 32")
        return None
    row_major = layout.slayout == "row"
    if t.fractal == 1024:
        inner = (16, 16)
    elif t.fractal == 32:
        inner = (16, 2) if row_major else (2, 16)
    else:
        inner = (16, 32 // size) if row_major else (32 // size, 16)
    check_rows = t.memory is not MemorySpace.Vec and t.fractal != 32 and rows != 1
    if cols % inner[1] or check_rows and rows % inner[0]:
        return (f"a {layout.value} {t.memory.value} tile of {t.dtype} is made of {inner[0]} x "
                f"{inner[1]} fractals: shape [{rows}, {cols}] does not hold whole ones")
    return None


__all__ = ["WINDOWED", "access_layout", "check_pair", "shape_refusal", "tile_layout"]
