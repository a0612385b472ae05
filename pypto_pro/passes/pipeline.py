"""The pass pipeline, top to bottom: the order every kernel target's IR goes through.

Read `PASSES` as the spine: one pass per line, with why it sits where it does. Each name is the
module `pypto_pro.passes.<name>` (a `NAME` and a `run(program, ctx)`); `default_passes` turns
the list into modules for the options of one `@pl.jit` kernel.
"""
from __future__ import annotations

import importlib
from types import ModuleType

from .manager import KernelOptions

PASSES = (
    # Cursors first: every later pass sees plain `tile_group.get(g, idx)` slots and a
    # scalar cursor instead of next()/current()/previous().
    "tile_group_lowering",
    # One fact per op: which pipe it runs on. auto_mutex, the simulator and codegen read it.
    "pipe_assignment",
    # Needs lowered slots (ids per slot) and pipes; runs before any scalar clean-up so the
    # id expressions it builds get folded and de-duplicated like the rest of the code.
    "auto_mutex",
    # (not in this list: "preload_pipeline", spec §2.12.6, rewrites the kernel's *source*
    # before parsing — compiler.compile_kernel runs it and records it right after "parse".)
    # Folds the constants lowering and auto_mutex produced (known cursors, constant slots,
    # `_dyn` locks with constant ids) and prunes constant branches.
    "constant_folding",
    # Name repeated index/address arithmetic once, then lift what does not change out of
    # loops: CSE first, so a named value can be lifted as a whole.
    "common_subexpression",
    "loop_invariant",
    # After folding and motion: cursors of depth-1 groups, folded temporaries and emptied
    # branches are now unused.
    "dead_code",
    # After dead_code (an op removed leaves its locks protecting nothing) and on mutable-form
    # IR, where lock statements are still adjacent.
    "redundant_mutex",
    # Last rewrite of scalars: every optimisation above works on the simpler mutable form.
    "convert_to_ssa",
    # On the final lock sets: guards compare the SSA values the locks actually read.
    "mutex_dedup",
    # Verification on the final IR: placement against the SoC, then structure.
    "verify_memory",
    "verify",
)


def default_passes(options: KernelOptions | None = None) -> list[ModuleType]:
    """The pass modules for a kernel compiled with `options` (any object with `auto_mutex`,
    e.g. `JitOptions`; None = defaults)."""
    auto_mutex = True if options is None else bool(options.auto_mutex)
    names = [n for n in PASSES if auto_mutex or n != "auto_mutex"]
    return [importlib.import_module(f"{__package__}.{n}") for n in names]
