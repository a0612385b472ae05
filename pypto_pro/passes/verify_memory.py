"""verify_memory: check every tile placement against the SoC's buffers (spec §2.3, §7).

Allocations are `block.make_tile` tiles and the slots of `tile_group.make` groups. A start
address that is not aligned for its memory space, or a footprint (`memref_size`, else the tile's
bytes) that runs past the end of the buffer, is an `InvalidTile` error naming the space, the byte
range and the capacity. Buffers that share bytes while both are in use (`buffer_use.conflicts`:
two tile groups in flight together, a write to one buffer while another still holds data read
later) are an `InvalidTile` error naming both buffers, both byte ranges and both source lines
when the overlap is certain, and a warning when it depends on a run-time branch. A tile inside
another tile is a view of it (how real kernels alias on purpose) and passes silently. The real
system checks none of this. Every tile's shape is one pto-isa's `Tile` takes
(`dma_layouts.shape_refusal`: whole 32-byte rows, whole fractals; else `InvalidShape` at the
declaration, as bisheng refuses it). Every GM access moves a window / tile layout pair the a5
DMA moves (`ir.dma_layouts`: what bisheng's static checks refuse is `NotSupported` here, before
the simulator or the code generator sees it). A GM tensor declared NZ (bytes in fractal order)
is not modelled: its accesses are `NotSupported`.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import InvalidShape, InvalidTile, NotSupported
from ..ir.nodes import AssignStmt, Call, Program
from ..ir.span import Span
from ..ir.types import MemorySpace, TensorType, TileGroupType, TileLayout, TileType
from .buffer_use import Conflict, Owner, conflicts
from ..ir.dma_layouts import WINDOWED, access_layout, check_pair, shape_refusal
from .ir_query import body_exprs, iter_stmts
from .manager import PassContext

NAME = "verify_memory"


@dataclass(frozen=True)
class Allocation:
    what: str  # "tile t" / "group g slot 1"
    space: MemorySpace
    start: int
    end: int
    span: Span

    def contains(self, other: Allocation) -> bool:
        return self.start <= other.start and other.end <= self.end

    def overlaps(self, other: Allocation) -> bool:
        return self.start < other.end and other.start < self.end

    def where(self) -> str:
        line = f" (line {self.span.line})" if self.span.line > 0 else ""
        return f"{self.what} [{self.start:#x}, {self.end:#x}){line}"


def run(program: Program, ctx: PassContext) -> Program:
    allocs = allocations(program)
    for a in allocs:
        _check_placement(a, ctx)
    for c in conflicts(program):
        _report_overlap(c, allocs, ctx)
    _check_tile_shapes(program)
    _check_dma_layouts(program)
    return program


def _check_dma_layouts(program: Program) -> None:
    for call in (e for f in program.functions for e in body_exprs(f.body)
                 if isinstance(e, Call)):
        at = WINDOWED.get(call.op)
        if at is None or len(call.args) < 2 or call.kwarg("mx_scale"):
            continue  # (an MX scale load declares its own view)
        tensor, tile = call.args[at].type, call.args[1 - at].type
        if isinstance(tensor, TensorType) and tensor.layout is TileLayout.NZ:
            # the real codegen views an NZ tensor as its 5-D fractal GlobalTensor (bytes in NZ
            # order, [1, cols/c0, rows/16, 16, c0]); a row-major window here would move other
            # elements than it does
            raise NotSupported(f"{call.op.split('.')[1]} of an NZ-layout GM tensor (its bytes "
                               f"in NZ fractal order) is not supported", call.span,
                               module="PRO_COMPILE", pass_name=NAME,
                               hint="declare the tensor ND (the default) and let the load / "
                                    "store convert to and from the NZ tile")
        if isinstance(tensor, TensorType) and isinstance(tile, TileType):
            check_pair(call, tile, access_layout(call, tensor.layout), call.span)


def _check_tile_shapes(program: Program) -> None:
    """The shapes bisheng refuses (pto-isa's `Tile` static_asserts), at their declaration."""
    for n in (s for f in program.functions for s in iter_stmts(f.body)):
        if isinstance(n, AssignStmt) and isinstance(n.value, Call) and \
                n.value.op in ("block.make_tile", "tile_group.make"):
            t = n.value.type
            t = t.tile if isinstance(t, TileGroupType) else t
            why = shape_refusal(t) if isinstance(t, TileType) else None
            if why is not None:
                raise InvalidShape(f"{n.var.name}: {why}", n.span, module="PRO_IR",
                                   pass_name=NAME)


def allocations(program: Program) -> list[Allocation]:
    """Every tile placement of the program, in textual order."""
    out = []
    for n in (s for f in program.functions for s in iter_stmts(f.body)):
        if not (isinstance(n, AssignStmt) and isinstance(n.value, Call)):
            continue
        t = n.value.type
        if n.value.op == "block.make_tile" and isinstance(t, TileType) and t.addr is not None:
            size = n.value.kwarg("memref_size") or t.nbytes
            out.append(Allocation(f"tile {n.var.name}", t.memory, t.addr, t.addr + size, n.span))
        elif n.value.op == "tile_group.make" and isinstance(t, TileGroupType):
            for i, addr in enumerate(t.addrs):
                out.append(Allocation(f"group {n.var.name} slot {i}", t.tile.memory, addr,
                                      addr + t.tile.nbytes, n.span))
    return out


def _check_placement(a: Allocation, ctx: PassContext) -> None:
    if a.space is MemorySpace.DDR:
        return
    align = ctx.soc.alignment(a.space)
    if a.start % align:
        raise InvalidTile(f"{a.what}: address {a.start:#x} is not {align}-byte aligned for "
                          f"memory space {a.space.value}", a.span,
                          hint=f"use a multiple of {align}, e.g. "
                               f"{(a.start // align + 1) * align:#x}",
                          module="PRO_IR", pass_name=NAME)
    capacity = ctx.soc.buffer_size(a.space)
    if a.start < 0 or a.end > capacity:
        raise InvalidTile(f"{a.where()} lies outside the {a.space.value} buffer, which holds "
                          f"{capacity} bytes ({capacity // 1024} KiB) on {ctx.soc.name}", a.span,
                          hint=f"place it within [0x0, {capacity:#x}) or make it smaller",
                          module="PRO_IR", pass_name=NAME)


def _report_overlap(c: Conflict, allocs: list[Allocation], ctx: PassContext) -> None:
    """An error for a certain overlap, a warning for one that depends on a run-time branch."""
    lo, hi = c.shared
    first, last = c.uses
    during = (f" on lines {first}-{last}" if first and first != last else
              f" on line {first}" if first else "")
    if c.at is None:
        why = ("the groups' mutexes do not order one against the other, so one pipe can "
               "overwrite data another pipe has not read yet")
        span, moved = c.b.span, c.b
    else:
        written = c.at.owner
        other = c.b if written is c.a else c.a
        why = (f"line {c.at.span.line} writes {written.label()} while {other.label()} still "
               f"holds data that is read later")
        span, moved = c.at.span, c.b
    message = (f"{c.a.where(c.slot_a)} and {c.b.where(c.slot_b)} share bytes [{lo:#x}, "
               f"{hi:#x}) of {c.a.space.value} while both are in use{during}: {why}")
    hint = _free_range_hint(moved, allocs, ctx)
    if c.certain:
        raise InvalidTile(message, span, hint=hint, note=f"{c.a.label()} is made at "
                          f"{c.a.span.file}:{c.a.span.line}", module="PRO_IR", pass_name=NAME)
    ctx.warn(f"{message} when the branch on a run-time value is taken", span,
             (c.a.span, c.b.span), NAME)


def _free_range_hint(owner: Owner, allocs: list[Allocation], ctx: PassContext) -> str:
    """Where `owner` would fit: the lowest aligned address clear of every other buffer."""
    lo = min(r[0] for r in owner.ranges)
    size = max(r[1] for r in owner.ranges) - lo
    taken = sorted((a.start, a.end) for a in allocs
                   if a.space is owner.space and a.span != owner.span)
    align = max(ctx.soc.alignment(owner.space), 1)
    addr = 0
    for start, end in taken:
        if addr + size <= start:
            break
        addr = max(addr, -(-end // align) * align)
    what = "addrs" if owner.kind == "group" else "addr"
    if addr + size > ctx.soc.buffer_size(owner.space):
        return f"give {owner.name} its own {owner.space.value} bytes (the buffer has no free " \
               f"range of {size:#x} bytes left: shrink a tile or a group's depth)"
    return f"give {owner.name} its own bytes, e.g. {what}={addr:#x} (the first free range of " \
           f"{size:#x} bytes)"
