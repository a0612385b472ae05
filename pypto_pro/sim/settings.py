"""The simulator's switches from the environment, read here (at each launch or use, so a test or
a notebook may change them between launches).

`PYPTOPRO_SIM_CACHE=off` turns every relaunch cache off: each launch records and schedules
afresh and runs its ops one by one (no kept recording, no functional replay, no tape, no lanes,
no compiled copies), on new on-chip memories, a new L2 and new GM views, as the first launch in
a new process does. That is the oracle the caches are tested against (every byte and trace row
the same); `SimBackend(cache=False)` does the same for one backend.
"""
from __future__ import annotations

import os

from ..errors import InvalidArgument

CACHE = "PYPTOPRO_SIM_CACHE"
_ON, _OFF = frozenset({"", "on", "1", "true"}), frozenset({"off", "0", "false"})


def cache() -> bool:
    """Whether relaunches may use the caches (`PYPTOPRO_SIM_CACHE`: on by default)."""
    value = os.environ.get(CACHE, "").strip().lower()
    if value in _ON:
        return True
    if value in _OFF:
        return False
    raise InvalidArgument(f"{CACHE}={value!r}: expected 'on' or 'off'", module="PRO_RUNTIME")


__all__ = ["CACHE", "cache"]
