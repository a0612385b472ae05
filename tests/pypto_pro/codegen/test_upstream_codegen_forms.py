"""kernel.cpp forms the real PyPTO Pro code generator emits (learned from its codegen unit tests
and source), on our own kernels that also run on the simulator and natively: classes copied
through the SSBUF have `volatile` fields (the other core writes them), other classes do not; a
TilingData class copied through it is volatile in its header; a struct returned from either
branch of a helper is one object, declared once and refilled on the branch that ran.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import torch
from dual_backend import sim_and_native

import pypto_pro.language as pl

S = pl.PipeType.S


@pl.jit()
def ssbuf_message(x: pl.Tensor[[4], pl.DT_INT32]):
    message = pl.struct("Message", batch=0, offset=0)
    local = pl.struct("LocalOnly", value=0)
    with pl.section_vector():
        message.batch = 8
        message.offset = 4096
        if pl.get_subblock_idx() == 0:
            pl.ssbuf_store(message, 0)
            pl.system.set_cross_core(pipe=S, event_id=15)
    with pl.section_cube():
        local.value = 5
        pl.system.wait_cross_core(pipe=S, event_id=15,
                                  sync_mode=pl.CrossCoreSyncMode.UNICAST_BLOCK)
        pl.ssbuf_load(message, 0)
        pl.setval(x, 0, message.batch)
        pl.setval(x, 1, message.offset)
        pl.setval(x, 2, local.value)


def test_a_struct_copied_through_the_ssbuf_has_volatile_fields(gen, cxx_check):
    art = gen(ssbuf_message)
    cpp = art.kernel_cpp
    assert cpp.count("class Message {\npublic:\n    volatile int64_t batch;\n"
                     "    volatile int64_t offset;\n};") == 2  # in each target's section
    assert "class LocalOnly {\npublic:\n    int64_t value;\n};" in cpp
    assert "volatile int64_t value;" not in cpp
    cxx_check(art)

    def run():
        x = torch.zeros(4, dtype=torch.int32)
        ssbuf_message(x)
        return x

    assert sim_and_native(run).tolist() == [8, 4096, 5, 0]


@dataclass
class HandOff:
    batch: int
    offsets: int[2]


@pl.jit()
def ssbuf_tiling(x: pl.Tensor[[2], pl.DT_INT32], tiling: HandOff):
    with pl.section_vector():
        if pl.get_subblock_idx() == 0:
            tiling.batch = tiling.batch + 1
            pl.ssbuf_store(tiling, 0)
            pl.system.set_cross_core(pipe=S, event_id=3)
    with pl.section_cube():
        pl.system.wait_cross_core(pipe=S, event_id=3,
                                  sync_mode=pl.CrossCoreSyncMode.UNICAST_BLOCK)
        pl.ssbuf_load(tiling, 0)
        pl.setval(x, 0, tiling.batch)
        pl.setval(x, 1, tiling.offsets[1])


def test_a_tiling_class_copied_through_the_ssbuf_is_volatile_in_its_header(gen, cxx_check):
    art = gen(ssbuf_tiling)
    header = art.tiling_headers["HandOff_tiling.h"]
    assert "    volatile int64_t batch;\n    volatile int64_t offsets[2];\n" in header
    assert "class HandOff" not in art.kernel_cpp  # it comes from the header
    cxx_check(art)

    def run():
        x = torch.zeros(2, dtype=torch.int32)
        ssbuf_tiling(x, HandOff(7, [3, 9]))
        return x

    assert sim_and_native(run).tolist() == [8, 9]


def _bounds(v):
    if v > 4:
        return pl.struct("Bounds", lo=v, hi=v + 1)
    return pl.struct("Bounds", lo=0, hi=v)


@pl.jit()
def struct_from_branches(a: pl.Tensor[[pl.DYNAMIC], pl.DT_INT32],
                         out: pl.Tensor[[2], pl.DT_INT32]):
    with pl.section_vector():
        b = _bounds(a.shape[0])
        pl.setval(out, 0, b.lo)
        pl.setval(out, 1, b.hi)


def test_a_struct_from_either_branch_is_one_object_refilled(gen, cxx_check):
    art = gen(struct_from_branches)
    cpp = art.kernel_cpp
    declared = re.findall(r"^\s*Bounds (\w+)\{\};", cpp, re.MULTILINE)
    assert len(declared) == 1  # declared once, before the if
    assert cpp.count(f"{declared[0]} = Bounds{{}};") == 2  # reset on each branch
    cxx_check(art)
