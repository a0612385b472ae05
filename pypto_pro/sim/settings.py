"""Every environment switch of the simulator, read here (at each launch or use, so that a test or
a notebook may change one between launches).

* `PYPTOPRO_SIM_SOC`: the SoC table of `SimBackend()` (a name or alias of `pypto_pro.soc`).
* `PYPTOPRO_SIM_CACHE=off` turns every relaunch cache off: each launch records and schedules
  afresh and runs its ops one by one (no kept recording, no functional replay, no tape, no lanes,
  no compiled copies), on new on-chip memories, a new L2 and new GM views, as the first launch in
  a new process does. That is the oracle the caches are tested against (every byte and trace row
  the same); `SimBackend(cache=False)` does the same for one backend.
* `PYPTOPRO_SIM_ENGINE`, `PYPTOPRO_SIM_L2`, `PYPTOPRO_SIM_COPIES`: each compiled helper (the
  stream engine's scheduler, the L2 tag walk, the compiled copies) is `python` (never used: the
  reference engine, the Python L2, torch's copies), `native` (waited for, its build error
  raised) or `auto` (the default: used once built, in the background).
* `PYPTOPRO_SIM_LANES=1` keeps a tape in one lane (default: two with two CPUs or more).
"""
from __future__ import annotations

import os

from ..errors import InvalidArgument

SOC = "PYPTOPRO_SIM_SOC"
CACHE = "PYPTOPRO_SIM_CACHE"
ENGINE = "PYPTOPRO_SIM_ENGINE"
L2 = "PYPTOPRO_SIM_L2"
COPIES = "PYPTOPRO_SIM_COPIES"
LANES = "PYPTOPRO_SIM_LANES"
_ON, _OFF = frozenset({"", "on", "1", "true"}), frozenset({"off", "0", "false"})


def soc_name() -> str:
    """The SoC `PYPTOPRO_SIM_SOC` names ("" for the default)."""
    return os.environ.get(SOC, "")


def cache() -> bool:
    """Whether relaunches may use the caches (`PYPTOPRO_SIM_CACHE`: on by default)."""
    value = os.environ.get(CACHE, "").strip().lower()
    if value in _ON:
        return True
    if value in _OFF:
        return False
    raise InvalidArgument(f"{CACHE}={value!r}: expected 'on' or 'off'", module="PRO_RUNTIME")


def helper(env: str) -> str:
    """How a compiled helper is used: "python", "native" or "auto" (`ENGINE`, `L2`, `COPIES`)."""
    return os.environ.get(env, "auto")


def lanes() -> int | None:
    """The lanes `PYPTOPRO_SIM_LANES` asks for (None: as many as the CPUs allow)."""
    setting = os.environ.get(LANES, "").strip()
    return None if not setting else 1 if setting == "1" else 2


__all__ = ["CACHE", "COPIES", "ENGINE", "L2", "LANES", "SOC", "cache", "helper", "lanes",
           "soc_name"]
