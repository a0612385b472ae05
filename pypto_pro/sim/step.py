"""`Step`: one op's work with every view and plan bound, kept to run again.

An op's step builder (`ops.STEPS`) makes one on the operands of one issue; the eager replay's
tape (`fast.tape`) keeps them and runs them in place of the ops, and the fast path joins and
compiles them (`fast.fusion`, `fast.copies_native`). What it may do with a step is said by its
fields, not by attributes set on a closure:

* `run()` does the work (a compiled call gives whether an accumulation met a NaN: `compiled`);
* `copy`: (dst, src) when the step is one `dst.copy_(src)` the compiled copies can do, its
  `marks` (the init-mask marks of the written block) after it;
* `sum`: (block, addend) when it adds a float32 addend into a block in place;
* `product`: (conversion pairs, a, b, out, add, write, after) when it is a float32 product
  (`ops.cube`): the operands converted by the pairs into `a` and `b`, `out = a @ b`, then
  `after` (`add`'s run: an accumulation step, `write`'s: a copy step, or a general write);
* `records`, `written`: a compiled call's records (`copies_native`: int64 records and the
  tensors they point into) and the tensors it writes (their versions bumped, `Moves`);
* `compiled`: (the compiled call a step runs, the torch add standing for its last record when
  that met a NaN, or None), its `marks` after it; `prefixed(calls)`: the same step with the
  compiled calls `calls` first in its call (a product taking the copies before it);
* `replaces`: the ids of the compiled calls a chain of them runs in one call;
* `fallible`: an op's impl on its operands, which checks them again (it may fail on values);
* `native`: the compiled form of a `copy` step, once made.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any


class Step:
    __slots__ = ("run", "copy", "sum", "product", "marks", "records", "written", "compiled",
                 "prefixed", "replaces", "fallible", "native")

    def __init__(self, run: Callable[[], Any], *, copy: tuple | None = None,
                 sum: tuple | None = None, product: tuple | None = None, marks: tuple = (),
                 records: tuple | None = None,
                 written: list | None = None, compiled: tuple | None = None,
                 prefixed: Callable[[list], Step] | None = None, replaces: tuple = (),
                 fallible: bool = False) -> None:
        self.run, self.copy, self.sum, self.product, self.marks = run, copy, sum, product, marks
        self.records, self.written, self.compiled = records, written, compiled
        self.prefixed, self.replaces, self.fallible = prefixed, replaces, fallible
        self.native: Step | None = None


__all__ = ["Step"]
