"""Pipe-V instructions that run a whole compiled body: a VF section (`vf.vec_scope`) and a SIMT
launch (`simt.launch`).

The scalar unit compiles the body and passes it in the instruction's `launch` kwarg
(`sim.frontend.vf.section.VFLaunch`, `sim.frontend.simt.SimtLaunch`); the body already ran
when the engine asked for the instruction's cost, so these entries only hand its writes to the
engine through the deferred operands, which land when the instruction ends.
"""
from __future__ import annotations


def vec_scope(args: list, kwargs: dict) -> None:
    kwargs["launch"].apply(args)


def simt_launch(args: list, kwargs: dict) -> None:
    kwargs["launch"].commit(args)


IMPLS = {"vf.vec_scope": vec_scope, "simt.launch": simt_launch}
