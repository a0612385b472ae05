"""Pausing Python's cyclic garbage collector around work that makes many long-lived objects.

A launch or a trace export makes 10^4-10^6 containers. With the collector running, every 700
allocations trigger a pass over the young ones, which only finds them alive. Merely disabling
it moves the cost: allocations still count, so the first allocation after re-enabling starts
a young-generation pass over everything made meanwhile (50-150 ms after a 4096-instruction
launch). `paused_gc` therefore also ages those objects into the oldest generation on exit —
`gc.freeze()` then `gc.unfreeze()`, which splices the generation lists in constant time — so
they are scanned only by the rare full collections, as objects that survived the young passes
would have been. Cyclic garbage made meanwhile is found by the next full collection.
"""
from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def paused_gc() -> Iterator[None]:
    """Suspend cyclic garbage collection for the block; on exit age what it made (see module
    doc). Nested pauses resume only at the outermost one. Objects the caller froze with
    `gc.freeze()` stay frozen: aging is skipped then, as unfreezing would thaw them."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            if gc.get_freeze_count() == 0:
                gc.freeze()
                gc.unfreeze()
            gc.enable()
