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

Which window / tile layout pairs the a5 DMA moves at all is checked before, by the pass
verify_memory (`ir.dma_layouts`), so the simulator refuses what bisheng would.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..ir.dma_layouts import WINDOWED, access_layout
from ..ir.nodes import AssignStmt, Call, Function, Var
from ..ir.types import TensorType, TileLayout
from .scopes import bodies_of, calls_in, stmts_of


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


__all__ = ["GtInstance", "instances", "plan", "window_axes"]
