"""Synthetic traces for the trace tests, with numbers small enough to check by hand.

Clock 1000 MHz, so 1 cycle = 1 ns = 0.001 us. `two_block`: an AIV kernel, blocks 0 and 1 on AIV
cores 0 and 1 (block 1 shifted by 20 cycles); block 0 has two overlapping loads on MTE2, each
block has a flag set (MTE2) -> wait (V) flow pair and two flag stalls. `mix`: two mix blocks of
one AIC and two AIVs each. `four_blocks`: 4 blocks on 2 cores (two waves).
"""
from __future__ import annotations

import pytest

from pypto_pro.trace import EventLog, Trace, TraceMeta


def _meta(kernel_type: str = "aiv", block_dim: int = 2, **kw) -> TraceMeta:
    return TraceMeta(kernel="k", backend="sim", soc="Ascend950PR_9589", clock_mhz=1000.0,
                     block_dim=block_dim, kernel_type=kernel_type, **kw)


def add_block(log: EventLog, block: int, core: int, shift: int, overlap: bool,
              flow: int) -> None:
    """Load(s) on MTE2, flag MTE2->V, add on V, store on MTE3, with stalls."""
    row = dict(core=core, core_kind="AIV", block=block, subblock=0, file="/src/kern.py")
    s = shift
    log.add(**row, pipe="MTE2", kind="instr", op="TLOAD", ir_op="block.load", line=10,
            start=s, end=s + 100, bytes=4096)
    if overlap:
        log.add(**row, pipe="MTE2", kind="instr", op="TLOAD", ir_op="block.load", line=10,
                start=s + 50, end=s + 150, bytes=4096)
    else:
        log.add(**row, pipe="MTE2", kind="instr", op="TLOAD", ir_op="block.load", line=10,
                start=s + 100, end=s + 150, bytes=4096)
    sync = "flag MTE2->V #0"
    log.add(**row, pipe="MTE2", kind="sync", op="set_flag", ir_op="system.sync_src", line=10,
            start=s + 150, end=s + 151, sync_ids=sync, flow_id=flow, flow_role="set")
    log.add(**row, pipe="V", kind="stall", op="wait_flag", ir_op="system.sync_dst", line=11,
            start=s + 10, end=s + 151, sync_ids=sync, stall_reason="flag")
    log.add(**row, pipe="V", kind="sync", op="wait_flag", ir_op="system.sync_dst", line=11,
            start=s + 151, end=s + 152, sync_ids=sync, flow_id=flow, flow_role="wait")
    log.add(**row, pipe="V", kind="instr", op="TADD", ir_op="block.add", line=11,
            start=s + 152, end=s + 252, bytes=8192, flops=2048)
    log.add(**row, pipe="MTE3", kind="stall", op="wait_flag", ir_op="system.sync_dst", line=12,
            start=s + 252, end=s + 260, sync_ids="flag V->MTE3 #0", stall_reason="flag")
    log.add(**row, pipe="MTE3", kind="instr", op="TSTORE", ir_op="block.store", line=12,
            start=s + 260, end=s + 360, bytes=4096)


@pytest.fixture
def make_meta():
    """`make_meta(kernel_type="aiv", block_dim=2, **fields)` -> TraceMeta at 1000 MHz."""
    return _meta


@pytest.fixture
def two_block() -> Trace:
    log = EventLog()
    add_block(log, block=0, core=0, shift=0, overlap=True, flow=0)
    add_block(log, block=1, core=1, shift=20, overlap=False, flow=1)
    return Trace(log, _meta())


@pytest.fixture
def mix() -> Trace:
    """Block b: AIC core b (M [0,200), FIX [200,250)), AIV cores 2b, 2b+1 (V 50 / 70 cycles),
    with a cross-core FIX -> V flow into AIV0; block 1 shifted by 1000 cycles."""
    log = EventLog()
    for b in range(2):
        s = 1000 * b
        aic = dict(block=b, core=b, core_kind="AIC", subblock=0, file="mm.py")
        log.add(**aic, pipe="M", kind="instr", op="TMATMUL", ir_op="block.matmul", line=5,
                start=s, end=s + 200, bytes=65536, flops=2 * 128 ** 3)
        log.add(**aic, pipe="FIX", kind="instr", op="TSTORE", ir_op="block.move", line=6,
                start=s + 200, end=s + 250, bytes=32768)
        log.add(**aic, pipe="FIX", kind="sync", op="set_intra_block", ir_op="system.set_cross_core",
                line=7, start=s + 250, end=s + 251, sync_ids="xcore 0", flow_id=10 + b,
                flow_role="set")
        for sub, length in ((0, 50), (1, 70)):
            aiv = dict(block=b, core=2 * b + sub, core_kind="AIV", subblock=sub, file="mm.py")
            if sub == 0:
                log.add(**aiv, pipe="V", kind="sync", op="wait_intra_block",
                        ir_op="system.wait_cross_core", line=8, start=s + 251, end=s + 251,
                        sync_ids="xcore 0", flow_id=10 + b, flow_role="wait")
            log.add(**aiv, pipe="V", kind="instr", op="TADD", ir_op="block.add", line=9,
                    start=s + 251, end=s + 251 + length, bytes=1024, flops=256)
    return Trace(log, _meta("mix"))


@pytest.fixture
def four_blocks() -> Trace:
    log = EventLog()
    spans = {0: (0, 0, 100), 1: (1, 0, 100), 2: (0, 100, 200), 3: (1, 105, 200)}
    for block, (core, start, end) in spans.items():
        log.add(block=block, core=core, core_kind="AIV", pipe="V", kind="instr", op="TADD",
                ir_op="block.add", file="k.py", line=3, start=start, end=end)
    return Trace(log, _meta(block_dim=4))
