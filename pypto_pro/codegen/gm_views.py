"""The GlobalTensor instances of a function's GM tensor views, planned from its accesses.

Each GM access (`load`, `store`, `store_fp`) reaches a 2-D window whose rows and columns run
along two tensor axes (the last two, `tile_dims`, or swapped for a transposed load; a 1-D
tensor is one row). The real code generator declares a tensor's GlobalTensor `Layout::DN` when
the tensor is loaded transposed or accessed by a one-column tile (pto-isa's DMA moves a DN
window column by column, into a column-major tile), with the window's strides in the
constructor, swapped for a transposed load. Here the layout is decided per access by the same
rule, so a tensor accessed both ways gets an ND instance and a DN one (`<name>_dn_gt`). An
instance whose accesses run along different axes, or whose tensor's strides change
(`set_stride`), re-sets its strides at every access (`GtInstance.per_access`).

`check_pair` refuses the window / tile layout pairs the a5 DMA cannot move (pto-isa's NPU
static checks, which `pypto_pro/include` mirrors): a Vec tile takes an ND window row-major, a DN
one column-major, NZ as NZ; an L1 tile takes ND / DN / NZ windows as NZ, ND as ND, DN as DN or
ZN (a one-row ZZ tile: the MX scale path); a Vec tile stores to the same layout or is one row /
one column; an Acc tile stores to ND or NZ.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import NotSupported
from ..ir.nodes import AssignStmt, Call, Function, Var
from ..ir.span import Span
from ..ir.types import MemorySpace, TensorType, TileLayout, TileType
from .scopes import bodies_of, calls_in, stmts_of

#: GM accesses and the position of their tensor operand (the tile is the other of 0 / 1)
WINDOWED = {"block.load": 1, "block.store": 0, "block.store_fp": 0}


@dataclass(frozen=True)
class GtInstance:
    """One GlobalTensor instance of a GM view."""

    gt: str  # the instance, re-pointed at every access
    alias: str  # its type alias
    layout: TileLayout  # ND, DN or NZ
    axes: tuple[int, int]  # tensor axes of its constructor's (row, col) strides (-1: none)
    per_access: bool  # every access sets its window's strides


def window_axes(call: Call, rank: int) -> tuple[int, int]:
    """Tensor axes the tile's rows and columns run along (the simulator's window rule)."""
    dims = call.kwarg("tile_dims")
    if rank == 1:
        return -1, 0
    if dims:
        return int(dims[0]) % rank, int(dims[1]) % rank
    rows, cols = rank - 2, rank - 1
    return (cols, rows) if call.kwarg("is_transpose") else (rows, cols)


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


@dataclass
class _Accesses:
    by_layout: dict[TileLayout, list[tuple[int, int]]]
    restrided: bool = False


def plan(fn: Function) -> dict[Var, _Accesses]:
    """The accesses of every GM tensor of `fn`, by the tensor Var a view was declared for (a
    tensor variable bound to another one counts as that one)."""
    root: dict[Var, Var] = {}
    _collect_aliases(fn.body, root)
    found: dict[Var, _Accesses] = {}
    for call in calls_in(fn.body):
        at = WINDOWED.get(call.op)
        if call.op == "block.set_stride" and isinstance(call.args[0], Var):
            found.setdefault(root.get(call.args[0], call.args[0]), _Accesses({})).restrided = True
        if at is None or at >= len(call.args) or not isinstance(call.args[at], Var) \
                or call.kwarg("mx_scale"):  # an MX scale load declares its own view
            continue
        tensor = call.args[at]
        t = tensor.type
        if not isinstance(t, TensorType):
            continue
        entry = found.setdefault(root.get(tensor, tensor), _Accesses({}))
        entry.by_layout.setdefault(access_layout(call, t.layout), []).append(
            window_axes(call, len(t.shape)))
    return found


def _collect_aliases(body, root: dict[Var, Var]) -> None:
    for s in stmts_of(body):
        if isinstance(s, AssignStmt) and isinstance(s.value, Var) and \
                isinstance(s.var.type, TensorType):
            root[s.var] = root.get(s.value, s.value)
        for inner in bodies_of(s):
            _collect_aliases(inner, root)


def instances(name: str, rank: int, layout: TileLayout, accesses: _Accesses | None
              ) -> dict[TileLayout, GtInstance]:
    """The instances of the view `name` (`<name>_gt` / `<name>_GT`, a second layout's
    `<name>_dn_gt` / `<name>_DN_GT`); a view nothing accesses gets one of its own layout."""
    default = (-1, 0) if rank == 1 else (rank - 2, rank - 1)
    by_layout = accesses.by_layout if accesses and accesses.by_layout else {layout: [default]}
    out = {}
    for k, (lay, axes) in enumerate(sorted(by_layout.items(), key=lambda x: x[0].value != "ND")):
        gt, alias = (f"{name}_gt", f"{name}_GT") if k == 0 else \
            (f"{name}_{lay.value.lower()}_gt", f"{name}_{lay.value}_GT")
        per_access = len(set(axes)) > 1 or bool(accesses and accesses.restrided)
        out[lay] = GtInstance(gt, alias, lay, axes[0], per_access)
    return out


__all__ = ["WINDOWED", "GtInstance", "access_layout", "check_pair", "instances", "plan",
           "tile_layout", "window_axes"]
