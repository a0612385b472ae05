"""verify_memory: check every tile placement against the SoC's buffers (spec §2.3, §7).

Allocations are `block.make_tile` tiles and the slots of `tile_group.make` groups. A start
address that is not aligned for its memory space, or a footprint (`memref_size`, else the tile's
bytes) that runs past the end of the buffer, is an `InvalidTile` error naming the space, the byte
range and the capacity. Two allocations in one space that overlap partially are a warning with
both source lines; one inside the other (same start, or a view within a larger buffer) is how
real kernels alias on purpose and passes silently. The real system checks none of this.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import InvalidTile
from ..ir.nodes import AssignStmt, Call, Program
from ..ir.span import Span
from ..ir.types import MemorySpace, TileGroupType, TileType
from .ir_query import iter_stmts
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
    _warn_partial_overlaps(allocs, ctx)
    return program


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


def _warn_partial_overlaps(allocs: list[Allocation], ctx: PassContext) -> None:
    by_space: dict[MemorySpace, list[Allocation]] = {}
    for a in allocs:
        by_space.setdefault(a.space, []).append(a)
    for group in by_space.values():
        group.sort(key=lambda a: (a.start, a.end))
        for i, a in enumerate(group):
            for b in group[i + 1:]:
                if b.start >= a.end:
                    break
                if not (a.contains(b) or b.contains(a)):
                    ctx.warn(f"{a.where()} and {b.where()} overlap partially in "
                             f"{a.space.value}", a.span, (b.span,), NAME)
