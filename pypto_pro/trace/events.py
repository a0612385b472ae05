"""The events table: an `EventLog` (or a DataFrame) checked and turned into typed pandas columns.

Owns the lazy pandas import (`pypto_pro` and `pypto_pro.trace` import without pandas; only
building a Trace needs it), the column dtypes (int64 for numbers, categorical for the repeated
strings, in `schema.COLUMNS` order) and the checks on incoming rows. Also the display order of
the pipes shared by every view. Imports only `schema`; never the simulator or the views.
"""
from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING, Union

import numpy as np

from .schema import COLUMNS, EventLog

if TYPE_CHECKING:
    import pandas as pd

    EventSource = Union[EventLog, pd.DataFrame]

#: pipe display order (data flow of a mix kernel); unknown pipes sort after these by name
PIPES: tuple[str, ...] = ("S", "MTE2", "MTE1", "M", "FIX", "V", "MTE3")
#: event kinds of the schema
KINDS: frozenset[str] = frozenset({"instr", "stall", "sync"})
#: core kinds in display order
CORE_KINDS: tuple[str, ...] = ("AIC", "AIV")


def require_pandas() -> ModuleType:
    """Import pandas, or explain which extra provides it."""
    try:
        import pandas
    except ModuleNotFoundError as exc:  # pragma: no cover - exercised in a subprocess test
        raise ModuleNotFoundError(
            "pypto_pro.trace.Trace needs pandas; install it with "
            "`pip install 'pypto-pro-workbench[lab]'`") from exc
    return pandas


def to_frame(source: EventSource) -> pd.DataFrame:
    """The events as a DataFrame with exactly the schema columns and dtypes, checked."""
    pd = require_pandas()
    if isinstance(source, EventLog):
        data = source.columns
    elif isinstance(source, pd.DataFrame):
        missing = [c for c in COLUMNS if c not in source.columns]
        if missing:
            raise ValueError(f"events are missing schema columns {missing}")
        data = source
    else:
        raise TypeError(f"a Trace is built from an EventLog or a DataFrame, not "
                        f"{type(source).__name__}")
    frame = pd.DataFrame({name: (_text(pd, data[name]) if typ is str else _ints(name, data[name]))
                          for name, (typ, _) in COLUMNS.items()})
    _check(frame)
    return frame


def pipe_rank(pipes: list[str]) -> dict[str, int]:
    """Display rank of each pipe: the `PIPES` order, then unknown pipes by name."""
    extra = sorted(set(pipes) - set(PIPES))
    return {p: i for i, p in enumerate((*PIPES, *extra))}


def _ints(name: str, column: object) -> np.ndarray:
    try:
        return np.asarray(column, dtype=np.int64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"events column {name!r} must hold integers: {exc}") from exc


def _text(pd: ModuleType, column: object) -> pd.Categorical:
    if isinstance(column, np.ndarray) and column.dtype == object and \
            pd.api.types.infer_dtype(column, skipna=False) == "string":
        return pd.Categorical(column)  # (strings only, as the stream engine's: nothing to fill)
    series = column if isinstance(column, pd.Series) else pd.Series(column, dtype=object)
    if isinstance(series.dtype, pd.CategoricalDtype):
        return pd.Categorical(series)
    return pd.Categorical(series.fillna("").astype(str).to_numpy())


def _check(frame: pd.DataFrame) -> None:
    backwards = np.flatnonzero(frame["end"].to_numpy() < frame["start"].to_numpy())
    if backwards.size:
        raise ValueError(f"{backwards.size} events end before they start (first: row "
                         f"{backwards[0]})")
    unknown = set(frame["kind"].unique()) - KINDS
    if unknown:
        raise ValueError(f"unknown event kinds {sorted(unknown)}; expected {sorted(KINDS)}")
