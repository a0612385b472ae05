"""A tape's steps compiled and joined: a copy step or a product as a compiled call
(`compiled`), each run of compiled copies in one call or in the product call after them
(`joined`), each run of compiled calls in one call (`chained`). Fewer calls, and fewer times a
lane running beside another waits for the GIL (`copies_native` releases it for a whole call).
Every fused step leaves what its steps leave run one by one: copies are exact, a product's
sgemm gives torch's bits (checked per shape), and an accumulation that meets a NaN is left to
torch (which NaN a sum keeps is torch's) and the call runs on from the next record. The op
library makes its steps in torch; this is where they meet compiled code.
"""
from __future__ import annotations

import functools
from collections.abc import Callable

import torch

from ..step import Step
from . import copies_native


def compiled(step: Step) -> Step:
    """`step` in compiled code where it can be: a copy step (`Step.copy`) as one call of the
    compiled copies (made once per step, kept in `Step.native`), then the step's marks; a
    product (`Step.product`) as one call (`_product`); else `step` itself (the library is not
    loaded, or the work has no record)."""
    if copies_native.library() is None:
        return step
    if step.product is not None:
        return _product(step)
    if step.copy is None:
        return step
    made = step.native
    if made is None:
        copy = copies_native.copier((step.copy,))
        made = step.native = step if copy is None else _with_marks(copy, step.marks)
    return made


def _product(step: Step) -> Step:
    """A product step (`ops.cube`) with its operands' conversions, the product through the
    sgemm torch calls and its accumulation (`add`: the add is left to torch when it meets a
    NaN, whose sum torch keeps) or its compiled write, in one call (`copies_native.product`:
    one call holds the GIL once, where a lane running beside another waits for it); its
    `prefixed(calls)` is the same step with compiled copies first in that call (`joined`).
    When that has no record (the sgemm missing or not torch's for this shape, a general
    write), its conversions in one compiled call and the rest in torch; else `step`."""
    pairs, a, b, out, add, write, after = step.product
    call, nan, marks = None, None, ()
    if add is not None:
        (block, grid), torch_add = add.sum, torch.add
        call = copies_native.product(pairs, a, b, out, added=(block, grid))

        def nan() -> None:  # (the sum torch keeps)
            torch_add(grid, block, out=block)
        marks = add.marks
    elif write is not None:
        then = copies_native.copier((write.copy,))
        call = None if then is None else copies_native.product(pairs, a, b, out, then=then)
        marks = write.marks
    if call is not None:
        return _compiled_product(call, nan, marks)
    convert = copies_native.copier(pairs)
    if convert is None:
        return step
    convert_run, mm = convert.run, torch.mm

    def run() -> None:
        convert_run()
        mm(a, b, out=out)
        after()
    return Step(run)


def _compiled_product(call: Step, nan: Callable[[], None] | None, marks: tuple) -> Step:
    """The step running compiled `call`, then `nan` when that left its accumulation out (a NaN
    met it), then `marks`; `compiled` and `marks` are what `chained` joins it by."""
    run = call.run
    if nan is None:
        def step() -> None:
            run()
            for mark in marks:
                mark()
    else:
        def step() -> None:
            if run():
                nan()
            for mark in marks:
                mark()
    # (a partial, not a closure over the step: a step no tape keeps dies by refcount)
    return Step(step, compiled=(call, nan), marks=marks,
                prefixed=functools.partial(_prefixed, call, nan, marks))


def _prefixed(call: Step, nan: Callable[[], None] | None, marks: tuple, before: list) -> Step:
    """`_compiled_product` with compiled copies `before` first in its call."""
    return _compiled_product(copies_native.joined([*before, call]), nan, marks)


def _with_marks(call: Step, marks: tuple) -> Step:
    """Compiled call `call`, then `marks` (a copy's init-mask marks)."""
    if not marks:
        return call
    run, (mark, *more) = call.run, marks
    if more:
        return Step(_then_marks(run, marks), compiled=(call, None), marks=marks)

    def step() -> None:
        run()
        mark()
    return Step(step, compiled=(call, None), marks=marks)


def copy_call(step: Step) -> Step | None:
    """The compiled call of a compiled copy step (the call itself, or one run before marks),
    None for any other step."""
    if step.records is not None:
        return step
    if step.compiled is not None and step.prefixed is None and step.compiled[1] is None:
        return step.compiled[0]
    return None


def joined(steps: list[Step]) -> tuple[list[Step], list[int]]:
    """`steps` with each run of two or more compiled copies in one step: their copies in one
    call, then their marks (a mark only touches the init mask); a run followed by a step that
    can take calls first in its own (`Step.prefixed`: a compiled product) goes into that one.
    Per step of the result, how many of `steps` it runs, in a second list."""
    out: list[Step] = []
    counts: list[int] = []
    run: list[Step] = []
    for step in [*steps, None]:
        if step is not None and copy_call(step) is not None:
            run.append(step)
            continue
        prefixed = None if step is None else step.prefixed
        fused = None if not run or prefixed is None else prefixed([copy_call(s) for s in run])
        if fused is not None:
            marks = tuple(mark for s in run for mark in s.marks)
            if marks:
                fused = Step(_then_marks(fused.run, marks), compiled=fused.compiled,
                             marks=(*fused.marks, *marks))
            out.append(fused)
            counts.append(len(run) + 1)
            run = []
            continue
        if len(run) > 1:
            copy = copies_native.joined([copy_call(s) for s in run])
            marks = tuple(mark for s in run for mark in s.marks)
            out.append(Step(_then_marks(copy.run, marks), compiled=(copy, None), marks=marks))
            counts.append(len(run))
        elif run:
            out.append(run[0])
            counts.append(1)
        run = []
        if step is not None:
            out.append(step)
            counts.append(1)
    return out, counts


def chained(steps: list[Step]) -> tuple[list[Step], list[int]]:
    """`steps` with each run of two or more compiled steps (`joined`'s: compiled copies, then
    marks; compiled products, `ops.cube`) in one step: their records in one call
    (`copies_native.chain`: an accumulation that meets a NaN is added by torch there, and the
    call runs on), then their marks (a mark only touches the init mask, which no compiled
    record reads). Per step of the result, how many of `steps` it runs, in a second list; each
    chain's `replaces` holds the ids of the compiled calls it runs."""
    out: list[Step] = []
    counts: list[int] = []
    run: list[Step] = []
    parts: list[tuple] = []  # per step of `run`, ((compiled call, NaN add or None), marks)
    for step in [*steps, None]:
        part = None if step is None else _compiled_part(step)
        if part is not None:
            run.append(step)
            parts.append(part)
            continue
        if len(run) > 1:
            chain = copies_native.chain([call for call, _ in parts])
            marks = tuple(mark for _, marks in parts for mark in marks)
            out.append(Step(_then_marks(chain.run, marks), marks=marks,
                            replaces=tuple(id(call[0]) for call, _ in parts)))
            counts.append(len(run))
        elif run:
            out.append(run[0])
            counts.append(1)
        run, parts = [], []
        if step is not None:
            out.append(step)
            counts.append(1)
    return out, counts


def _compiled_part(step: Step) -> tuple[tuple, tuple] | None:
    """((its compiled call, the torch add standing for that one's last record when it met a
    NaN, or None), its marks) of a step `chained` can join, else None."""
    if step.records is not None:
        return (step, None), ()
    if step.compiled is not None:
        return step.compiled, step.marks
    return None


def _then_marks(first, marks: tuple):
    """Run `first`, then `marks` (init-mask marks of the copies it runs)."""
    def step() -> None:
        first()
        for mark in marks:
            mark()
    return step


__all__ = ["chained", "compiled", "copy_call", "joined"]
