"""The Trace schema: one row per executed instruction, stall or sync event (DESIGN §5 "Trace").

Every backend that produces timing writes these columns; the views never know which backend
produced a Trace. Times are in core clock cycles from the launch start (all cores share one
clock). The simulator appends one tuple per row to an `EventLog` and the `Trace` turns them into a
pandas DataFrame on first use.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

#: column name → (python type, meaning)
COLUMNS: dict[str, tuple[type, str]] = {
    "launch": (int, "launch number within the profiling session"),
    "core": (int, "core instance id within the launch (one sequence over AIC and AIV)"),
    "core_kind": (str, "'AIC' or 'AIV'"),
    "block": (int, "logical block index"),
    "subblock": (int, "0/1 for the two AIVs of a mix block, 0 otherwise"),
    "pipe": (str, "S, MTE1, MTE2, MTE3, M, V, FIX"),
    "kind": (str, "'instr' (executed), 'stall' (a pipe or the scalar unit waiting), 'sync'"),
    "op": (str, "hardware instruction family, e.g. TLOAD, TADD, set_flag, get_buf"),
    "ir_op": (str, "IR op name, e.g. block.load, system.sync_src"),
    "file": (str, "kernel source file (or notebook cell name)"),
    "line": (int, "kernel source line (0 when unknown)"),
    "start": (int, "start cycle"),
    "end": (int, "end cycle (>= start)"),
    "bytes": (int, "bytes moved (data movement) or touched (compute)"),
    "flops": (int, "floating-point (or integer) operations"),
    "sync_ids": (str, "ids involved: 'flag MTE2->V #0', 'mutex 3', 'xcore 2' ..."),
    "stall_reason": (str, "for stalls: 'flag', 'mutex', 'cross_core', 'barrier', 'sync_all', "
                          "'hbm', 'queue'; '' otherwise"),
    "flow_id": (int, "pairs a set (flow_role 'set') with the wait it released ('wait'); -1"),
    "flow_role": (str, "'set', 'wait' or ''"),
}


class EventLog:
    """Event rows appended by a backend during a launch, one tuple each in `COLUMNS` order (a
    tuple per row is the cheapest thing to append per instruction); `columns` transposes them
    when the Trace's DataFrame is built. A backend whose rows cost work of their own to make
    (the stream engine's, from its schedule) hands over their maker (`later`): many launches
    are never looked at. A maker gives rows, or whole columns (name → values in `COLUMNS`
    order; `{}`: none), which `columns` takes as they are: tens of thousands of row tuples
    are slow to make and to take apart, and the garbage collector scans every one."""

    __slots__ = ("_rows", "_later", "_made")

    def __init__(self) -> None:
        self._rows: list[tuple] = []
        self._later: list[Callable[[], Sequence[tuple] | Mapping[str, Sequence]]] = []
        self._made: list[Sequence[tuple] | Mapping[str, Sequence]] = []  # after `_rows`

    def _make(self) -> None:
        while self._later:
            self._made.append(self._later.pop(0)())

    @property
    def rows(self) -> list[tuple]:
        """The rows, those handed over to `later` made and appended first (in that order)."""
        if self._later or self._made:  # (the reference engine appends through this per row)
            self._make()
            for part in self._made:
                self._rows.extend(_row_tuples(part) if isinstance(part, Mapping) else part)
            self._made.clear()
        return self._rows

    def add(self, **row: Any) -> None:
        """Append one row by column name; missing columns take their defaults."""
        unknown = row.keys() - _DEFAULTS.keys()
        if unknown:
            raise ValueError(f"unknown event columns {sorted(unknown)}")
        self.rows.append(tuple(row.get(name, default) for name, default in _DEFAULTS.items()))

    def later(self, make: Callable[[], Sequence[tuple] | Mapping[str, Sequence]]) -> None:
        """Append the rows (or columns) `make()` gives when they are first read (in the order
        handed over)."""
        self._later.append(make)

    @property
    def columns(self) -> dict[str, Sequence]:
        """Column name → values, in `COLUMNS` order."""
        self._make()
        parts = [p if isinstance(p, Mapping) else dict(zip(COLUMNS, map(list, zip(*p))))
                 for p in (self._rows, *self._made) if p]
        if len(parts) == 1:
            return {name: parts[0][name] for name in COLUMNS}
        return {name: [v for p in parts for v in p[name]] for name in COLUMNS}

    def launches(self) -> set[int]:
        """The launch numbers present ("launch" is the first column)."""
        self._make()
        return {int(n) for p in (self._rows, *self._made) for n in set(
            p.get("launch", ()) if isinstance(p, Mapping) else (row[0] for row in p))}

    def __len__(self) -> int:
        self._make()
        return len(self._rows) + sum(len(p.get("launch", ())) if isinstance(p, Mapping)
                                     else len(p) for p in self._made)


def _row_tuples(columns: Mapping[str, Sequence]) -> Iterable[tuple]:
    return zip(*(columns[n] for n in COLUMNS)) if columns else ()


_DEFAULTS = {name: ("" if typ is str else (-1 if name == "flow_id" else 0))
             for name, (typ, _) in COLUMNS.items()}


@dataclass(frozen=True)
class TraceMeta:
    """What a Trace was measured on."""

    kernel: str
    backend: str
    soc: str
    clock_mhz: float
    block_dim: int
    kernel_type: str  # "aiv" | "aic" | "mix"
    launch: int = 0
    hbm_bytes_per_cycle: float = 0.0  # chip-wide HBM bandwidth in bytes per core cycle
    extra: tuple[tuple[str, Any], ...] = ()
