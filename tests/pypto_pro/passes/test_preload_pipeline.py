"""The automatic preload pipeline (spec §2.12.6): the generated kernel's structure, the pass
record and source on the compiled kernel, typed errors (code + line) for pipelines the
transform cannot make correct, and the flash attention of walkthrough (6) on the simulator and
the native backend."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch

import pypto_pro.language as pl
from pypto_pro.errors import InvalidOperation, NotSupported, OutOfRange, PyptoError
from pypto_pro.examples import flash_attention_preload as fa
from pypto_pro.language.pipeline import PipelineConfig, transform_pipeline
from pypto_pro.passes import preload_pipeline
from pypto_pro.passes.preload_pipeline.sync_graph import stage_delays
from pypto_pro.runtime import backends
from pypto_pro.runtime.kernel_def import Specialization

SPEC = Specialization(arch="a5")
DYN = pl.DYNAMIC
VEC = pl.TileType([64, 128], pl.DT_FP32)
ACC = pl.TileType([128, 128], pl.DT_FP32, pl.MemorySpace.Acc)
VEC16 = pl.TileType([64, 128], pl.DT_FP16)
MAT16 = pl.TileType([128, 128], pl.DT_FP16, pl.MemorySpace.Mat)
LEFT = pl.TileType([128, 128], pl.DT_FP16, pl.MemorySpace.Left)
SPLIT_M = pl.AccToVecMode.DualModeSplitM
PRELOAD = PipelineConfig(preload=2)
NINE_SLOTS, NINE_IDS = [i * 0x8000 for i in range(9)], list(range(9))  # fwd ids 0–8


def _line(marker: str) -> int:
    """The line of this file that ends with the comment `# <marker>`."""
    lines = Path(__file__).read_text().splitlines()
    return next(i for i, text in enumerate(lines, 1) if text.rstrip().endswith(f"# {marker}"))


def _subsequence(wanted: list[str], text: str) -> bool:
    lines = iter(line.strip() for line in text.splitlines())
    return all(any(w == line for line in lines) for w in wanted)


# ---------------------------------------------------------------- small stages for bad pipelines


@pl.pipeline.stage
def produce(buf, i):
    acc = pl.make_tile_group(type=ACC, addrs=0, mutex_ids=[0])
    pl.move(buf.next(), acc[0], acc_to_vec_mode=SPLIT_M)


@pl.pipeline.stage
def consume(buf, y, i):
    t = buf.next()
    pl.store(y, t, [i * 64, 0])


@pl.pipeline.stage
def consume_twice(buf, y, i):
    pl.store(y, buf.next(), [i * 64, 0])
    pl.store(y, buf.next(), [i * 64, 0])


@pl.pipeline.stage
def relay(a, b, i):
    h = pl.make_tile_group(type=VEC16, addrs=0x10000, mutex_ids=[4])
    pl.cast(h[0], a.next())
    pl.insert(b.next(), h[0], [0, 0])


@pl.pipeline.stage
def drain(b, i):
    left = pl.make_tile_group(type=LEFT, addrs=0, mutex_ids=[5])
    pl.move(left[0], b.next())


@pl.jit(arch="a5", pipeline=PRELOAD)
def not_alternating(y: pl.Tensor[[DYN, 128], pl.DT_FP32]):
    buf = pl.make_tile_group(type=VEC, addrs=[0, 0x8000], mutex_ids=[0, 1], fwd_ids=[0, 1],
                             bwd_ids=[2, 3])
    for i in pl.range(4):
        with pl.section_cube():
            produce(buf, i)
        with pl.section_cube():  # E-alternate
            produce(buf, i)
        with pl.section_vector():
            consume(buf, y, i)


@pl.jit(arch="a5", pipeline=PRELOAD)
def no_fwd_ids(y: pl.Tensor[[DYN, 128], pl.DT_FP32]):
    buf = pl.make_tile_group(type=VEC, addrs=[0, 0x8000], mutex_ids=[0, 1])  # E-nofwd
    for i in pl.range(4):
        with pl.section_cube():
            produce(buf, i)
        with pl.section_vector():
            consume(buf, y, i)


@pl.jit(arch="a5", pipeline=PRELOAD)
def read_before_write(y: pl.Tensor[[DYN, 128], pl.DT_FP32]):
    buf = pl.make_tile_group(type=VEC, addrs=[0, 0x8000], mutex_ids=[0, 1], fwd_ids=[0, 1])
    for i in pl.range(4):
        with pl.section_vector():  # E-readfirst
            consume(buf, y, i)
        with pl.section_cube():
            produce(buf, i)


@pl.jit(arch="a5", pipeline=PRELOAD)
def two_slots_per_call(y: pl.Tensor[[DYN, 128], pl.DT_FP32]):
    buf = pl.make_tile_group(type=VEC, addrs=[0, 0x8000], mutex_ids=[0, 1], fwd_ids=[0, 1])
    for i in pl.range(4):
        with pl.section_cube():
            produce(buf, i)
        with pl.section_vector():  # E-twice
            consume_twice(buf, y, i)


@pl.jit(arch="a5", pipeline=PRELOAD)
def bad_id_count(y: pl.Tensor[[DYN, 128], pl.DT_FP32]):
    buf = pl.make_tile_group(type=VEC, addrs=[0, 0x8000], mutex_ids=[0, 1],  # E-idcount
                             fwd_ids=[0, 1, 2])
    for i in pl.range(4):
        with pl.section_cube():
            produce(buf, i)
        with pl.section_vector():
            consume(buf, y, i)


@pl.jit(arch="a5", pipeline=PRELOAD)
def extra_statement(y: pl.Tensor[[DYN, 128], pl.DT_FP32]):
    buf = pl.make_tile_group(type=VEC, addrs=[0, 0x8000], mutex_ids=[0, 1], fwd_ids=[0, 1])
    for i in pl.range(4):
        with pl.section_cube():
            produce(buf, i)
        with pl.section_vector():  # E-extra
            pl.system.pipe_barrier(pipe=pl.PipeType.V)
            consume(buf, y, i)


@pl.jit(arch="a5", pipeline=PRELOAD)
def no_stages(y: pl.Tensor[[DYN, 128], pl.DT_FP32]):  # E-nostage
    with pl.section_vector():
        t = pl.make_tile(VEC, addr=0)
        pl.store(y, t, [0, 0])


@pl.jit(arch="a5", pipeline=PRELOAD)
def out_of_ids(y: pl.Tensor[[DYN, 128], pl.DT_FP32]):
    buf = pl.make_tile_group(type=VEC, addrs=NINE_SLOTS, depth=9, fwd_ids=NINE_IDS)  # E-ids
    for i in pl.range(4):
        with pl.section_cube():
            produce(buf, i)
        with pl.section_vector():
            consume(buf, y, i)


@pl.jit(arch="a5", pipeline=PRELOAD)
def breaks_out(y: pl.Tensor[[DYN, 128], pl.DT_FP32], n: pl.DT_INT32):
    buf = pl.make_tile_group(type=VEC, addrs=[0, 0x8000], mutex_ids=[0, 1], fwd_ids=[0, 1])
    for i in pl.range(8):
        with pl.section_cube():
            produce(buf, i)
        with pl.section_vector():
            consume(buf, y, i)
        if i == n:
            break  # E-break


@pl.jit(arch="a5", pipeline=PRELOAD)
def reused_outside(y: pl.Tensor[[DYN, 128], pl.DT_FP32]):
    buf = pl.make_tile_group(type=VEC, addrs=[0, 0x8000], mutex_ids=[0, 1], fwd_ids=[0, 1])
    with pl.section_vector():
        scratch = pl.make_tile(VEC, addr=0x4000)
        pl.expands(scratch, 0.0)  # E-reuse
    for i in pl.range(4):
        with pl.section_cube():
            produce(buf, i)
        with pl.section_vector():
            consume(buf, y, i)


@pl.jit(arch="a5", pipeline=PRELOAD)
def deadlocks(y: pl.Tensor[[DYN, 128], pl.DT_FP32]):
    # one slot each way: with delays [0, 1, 2] the AIC's third Q·Kᵀ-like call needs slot `a`
    # back from relay(1), which needs slot `b` back from drain(0) — queued after that call
    a = pl.make_tile_group(type=VEC, addrs=0, mutex_ids=[0], fwd_ids=[0], bwd_ids=[1])
    b = pl.make_tile_group(type=MAT16, addrs=0, mutex_ids=[2], fwd_ids=[2], bwd_ids=[3])
    for i in pl.range(8):
        with pl.section_cube():  # E-deadlock
            produce(a, i)
        with pl.section_vector():
            relay(a, b, i)
        with pl.section_cube():
            drain(b, i)


@pl.jit(arch="a5", pipeline=PipelineConfig(preload=1))
def scattered_ids(y: pl.Tensor[[DYN, 128], pl.DT_FP32]):
    buf = pl.make_tile_group(type=VEC, addrs=[0, 0x8000], mutex_ids=[0, 1], fwd_ids=[0, 5])
    for i in pl.range(1, 9, 2):
        with pl.section_cube():
            produce(buf, i)
        with pl.section_vector():
            consume(buf, y, i)


BAD = [
    (not_alternating, InvalidOperation, "E-alternate", "must alternate"),
    (no_fwd_ids, InvalidOperation, "E-nofwd", "declares no fwd_ids"),
    (read_before_write, InvalidOperation, "E-readfirst", "before any stage writes it"),
    (two_slots_per_call, InvalidOperation, "E-twice", "exactly one slot"),
    (bad_id_count, InvalidOperation, "E-idcount", "lists 3 id(s)"),
    (extra_statement, InvalidOperation, "E-extra", "exactly one stage call"),
    (no_stages, InvalidOperation, "E-nostage", "calls no @pl.pipeline.stage"),
    (out_of_ids, OutOfRange, "E-ids", "free cross-core event id"),
    (reused_outside, NotSupported, "E-reuse", "reuses bytes [0x4000, 0x8000) of Vec"),
    (breaks_out, NotSupported, "E-break", "'break' in the stage loop"),
]


@pytest.mark.parametrize("kernel,cls,marker,text", BAD, ids=[b[2] for b in BAD])
def test_bad_pipelines_get_a_typed_error_with_the_line(kernel, cls, marker, text):
    with pytest.raises(cls) as info:
        transform_pipeline(kernel)
    err = info.value
    assert text in err.message
    assert err.span is not None and err.span.file == __file__
    assert err.span.line == _line(marker)
    assert err.code_str.startswith("F0000") and f":{err.span.line}:" in str(err)


def test_an_unsatisfiable_cycle_names_the_buffers_and_stages():
    with pytest.raises(InvalidOperation) as info:
        transform_pipeline(deadlocks)
    message = info.value.message
    assert message.startswith("unsatisfiable pipeline")
    assert "'produce'" in message and "'relay'" in message and "'a free'" in message
    assert "'b free'" in message and "'drain'" in message
    assert info.value.span.line == _line("E-deadlock")
    transform_pipeline(deadlocks, PipelineConfig(preload=1))  # a shallower skew is fine


def test_error_reaches_the_launch_as_the_same_typed_error():
    with pytest.raises(PyptoError) as info:
        no_fwd_ids.compile(SPEC)
    assert isinstance(info.value, InvalidOperation) and info.value.span.line == _line("E-nofwd")


# ---------------------------------------------------------------- golden structure


def test_stage_delays_spread_the_preload_over_the_stages():
    assert stage_delays(4, 2) == (0, 1, 2, 2)
    assert stage_delays(4, 3) == (0, 1, 2, 3)
    assert stage_delays(2, 2) == (0, 2)
    assert stage_delays(4, 0) == (0, 0, 0, 0)


def test_flash_attention_preload_golden_structure():
    src = transform_pipeline(fa.flash_attention_preload_kernel)
    assert src.startswith("# pipeline_generated.py: 'flash_attention_preload2' after the "
                          "preload pipeline transform (preload=2, stage delays [0, 1, 2, 2])")
    assert "qk_vec = pl.make_tile_group(type=QK_VEC, addrs=[0x00000, 0x08000]" in src  # user
    ff = "(_pl_t0 + _pl_beat) % 2"
    fi = "(_pl_t0 + _pl_i) % {}"
    assert _subsequence([
        "_pl_task = 0  # stage-loop iterations issued so far",
        "for qi in pl.range(core, sq_tiles, cores):",
        "_pl_n = kv_tiles",
        "_pl_t0 = _pl_task",
        "_pl_ctx = pl.struct_array(3, 'PlPipelineCtx', ki=0)",
        # pre-fired permits: the S and P·V slots on the AIVs, the P slots (extra ids) on the AIC
        "with pl.section_vector():",
        "pl.system.set_cross_core(pipe=pl.PipeType.V, event_id=2)",
        "pl.system.set_cross_core(pipe=pl.PipeType.V, event_id=10)",
        "with pl.section_cube():",
        "pl.system.set_cross_core(pipe=pl.PipeType.MTE1, event_id=11)",
        "pl.system.set_cross_core(pipe=pl.PipeType.MTE1, event_id=13)",
        "for _pl_beat in pl.range(_pl_n + 2):",
        "if _pl_beat < _pl_n:",
        "ki = _pl_beat",
        f"pl.system.wait_cross_core(pipe=pl.PipeType.FIX, event_id=2 + {ff})",
        "compute_qk(qk_vec, q, k, q_slot, q_right, k_l1, k_left, s_acc, qi, ki)",
        f"pl.system.set_cross_core(pipe=pl.PipeType.FIX, event_id={ff})",
        "_pl_ctx[_pl_beat % 3].ki = ki",
        "if _pl_beat >= 1 and _pl_beat < _pl_n + 1:",
        "_pl_i = _pl_beat - 1",
        f"pl.system.wait_cross_core(pipe=pl.PipeType.V, event_id={fi.format(2)})",
        f"pl.system.wait_cross_core(pipe=pl.PipeType.MTE3, event_id=11 + {fi.format(3)})",
        "compute_p(qk_vec, p_mat, p16, m_run, l_run, corr_ring, sub, _pl_ctx[_pl_i % 3].ki)",
        f"pl.system.set_cross_core(pipe=pl.PipeType.V, event_id=2 + {fi.format(2)})",
        f"pl.system.set_cross_core(pipe=pl.PipeType.MTE3, event_id=4 + {fi.format(3)})",
        "if _pl_beat >= 2 and _pl_beat < _pl_n + 2:",
        f"pl.system.wait_cross_core(pipe=pl.PipeType.MTE1, event_id=4 + {fi.format(3)})",
        f"pl.system.wait_cross_core(pipe=pl.PipeType.FIX, event_id=9 + {fi.format(2)})",
        "compute_pv(p_mat, pv_vec, v, v_l1, v_right, p_left, o_acc, _pl_ctx[_pl_i % 3].ki)",
        f"pl.system.set_cross_core(pipe=pl.PipeType.MTE1, event_id=11 + {fi.format(3)})",
        f"pl.system.set_cross_core(pipe=pl.PipeType.FIX, event_id=7 + {fi.format(2)})",
        f"pl.system.wait_cross_core(pipe=pl.PipeType.V, event_id=7 + {fi.format(2)})",
        ("compute_gu(pv_vec, o_run, o16, corr_ring, l_run, o, row0, _pl_ctx[_pl_i % 3].ki, "
         "last)"),
        f"pl.system.set_cross_core(pipe=pl.PipeType.V, event_id=9 + {fi.format(2)})",
        "_pl_task = _pl_task + _pl_n",
        "pl.system.wait_cross_core(pipe=pl.PipeType.FIX, event_id=2)",
        "pl.system.wait_cross_core(pipe=pl.PipeType.FIX, event_id=10)",
        "pl.system.wait_cross_core(pipe=pl.PipeType.MTE3, event_id=11)",
        "pl.system.wait_cross_core(pipe=pl.PipeType.MTE3, event_id=13)",
    ], src), src


def test_sync_only_keeps_the_serial_order():
    src = transform_pipeline(fa.flash_attention_sync_only_kernel)
    assert "stage delays [0, 0, 0, 0]" in src.splitlines()[0]
    assert "struct_array" not in src and "_pl_i" not in src
    assert "if _pl_beat" not in src
    assert _subsequence(["for _pl_beat in pl.range(_pl_n):", "ki = _pl_beat",
                         "compute_qk(qk_vec, q, k, q_slot, q_right, k_l1, k_left, s_acc, qi, ki)",
                         "compute_p(qk_vec, p_mat, p16, m_run, l_run, corr_ring, sub, ki)",
                         "compute_pv(p_mat, pv_vec, v, v_l1, v_right, p_left, o_acc, ki)",
                         "compute_gu(pv_vec, o_run, o16, corr_ring, l_run, o, row0, ki, last)"],
                        src)


def test_scattered_ids_strided_loop_and_extra_release_ids():
    compiled = scattered_ids.compile(SPEC)
    src = compiled.pipeline_source
    assert _subsequence([
        "_pl_n = (9 - 1 + 2 - 1) // 2",
        "_pl_ctx = pl.struct_array(2, 'PlPipelineCtx', i=0)",
        # no bwd_ids: the releases get the free ids 1 and 2, pre-fired by the consumer (MTE3)
        "pl.system.set_cross_core(pipe=pl.PipeType.MTE3, event_id=1)",
        "pl.system.set_cross_core(pipe=pl.PipeType.MTE3, event_id=2)",
        "i = 1 + _pl_beat * 2",
        "pl.system.wait_cross_core(pipe=pl.PipeType.FIX, event_id=1 + (_pl_t0 + _pl_beat) % 2)",
        "produce(buf, i)",
        ("pl.system.set_cross_core(pipe=pl.PipeType.FIX, "
         "event_id=0 if (_pl_t0 + _pl_beat) % 2 == 0 else 5)"),
        "consume(buf, y, _pl_ctx[_pl_i % 2].i)",
        "pl.system.wait_cross_core(pipe=pl.PipeType.FIX, event_id=2)",
    ], src), src
    assert "wait_cross_core_dyn(0 if" in compiled.passes["vector"][-1].ir_text


def test_pass_record_and_source_on_the_compiled_kernel():
    compiled = fa.make_kernel(preload=1).compile(SPEC)
    assert compiled.pipeline_source.startswith("# pipeline_generated.py")
    assert "stage delays [0, 1, 1, 1]" in compiled.pipeline_source.splitlines()[0]
    for target in ("cube", "vector"):
        records = compiled.passes[target]
        assert records.names()[:3] == ["parse", preload_pipeline.NAME, "tile_group_lowering"]
        before, after = records[0].ir_text, records[1].ir_text
        assert "cross_core" not in before and "system.wait_cross_core" in after
        assert records[1].changed and records.diff(0, 1)
    plain = fa.flash_attention_preload_kernel.kernel_def
    assert plain.options.pipeline == PRELOAD


# ---------------------------------------------------------------- runs


@pytest.fixture
def functional_sim(monkeypatch):
    from pypto_pro.runtime.backends import sim

    monkeypatch.setattr(backends, "_factories", dict(backends._factories))
    monkeypatch.setattr(backends, "_instances", dict(backends._instances))
    backends.register_backend("preload-functional", lambda: sim.SimBackend(functional_only=True))
    with backends.use_backend("preload-functional"):
        yield


def _check(out: torch.Tensor, args) -> None:
    torch.testing.assert_close(out.float(), fa.reference(*args).float(), rtol=fa.RTOL,
                               atol=fa.ATOL)


def test_preload_beats_sync_only_in_simulated_cycles():
    cycles = {}
    with backends.use_backend("sim"):
        for name, kernel in fa.KERNELS.items():
            args = fa.make_inputs(sq=128, skv=512, seed=3)
            _check(fa.run(*args, kernel=kernel), args)
            cycles[name] = kernel.last_result.trace.duration_cycles
    assert cycles["flash_attention_preload_kernel"] < 0.9 * cycles[
        "flash_attention_sync_only_kernel"], cycles


def test_512_matches_torch_and_repeats_identically(functional_sim):
    outs = []  # 5 repeats: the native test below (the simulator equals native bit for bit)
    for _ in range(2):
        args = fa.make_inputs(sq=512, skv=512, seed=7)
        outs.append(fa.run(*args).clone())
    _check(outs[0], args)
    assert all(torch.equal(outs[0], o) for o in outs[1:])


@pytest.fixture
def native():
    """The shared native backend, built before `functional_sim` swaps the backend tables (so
    that importing the native module registers it in the real ones)."""
    if shutil.which("g++") is None:
        pytest.skip("the native backend needs g++")
    return backends.get_backend("native")


def test_native_512_matches_torch_and_the_simulator(native, functional_sim):
    args = fa.make_inputs(sq=512, skv=512, seed=7)
    on_sim = fa.run(*args).clone()
    outs = []
    with backends.use_backend("native"):
        for _ in range(5):
            args = fa.make_inputs(sq=512, skv=512, seed=7)
            outs.append(fa.run(*args).clone())
    _check(outs[0], args)
    assert all(torch.equal(outs[0], o) for o in outs[1:])
    assert torch.equal(outs[0], on_sim)


# ---------------------------------------------------------------- address reuse (regions)

RIGHT16 = pl.TileType([128, 128], pl.DT_FP16, pl.MemorySpace.Right)
ROWS = 128  # rows per iteration: 64 per AIV


@pl.pipeline.stage
def matmul_into_ring(ring, a, w, i):
    a_l1 = pl.make_tile_group(type=MAT16, addrs=0, mutex_ids=[0])
    w_l1 = pl.make_tile_group(type=MAT16, addrs=0x8000, mutex_ids=[1])
    left = pl.make_tile_group(type=LEFT, addrs=0, mutex_ids=[2])
    right = pl.make_tile_group(type=RIGHT16, addrs=0, mutex_ids=[3])
    acc = pl.make_tile_group(type=ACC, addrs=0, mutex_ids=[4])
    at, wt, lt, rt, ct = a_l1[0], w_l1[0], left[0], right[0], acc[0]
    pl.load(at, a, [i * ROWS, 0])
    pl.move(lt, at)
    pl.load(wt, w, [0, 0])
    pl.move(rt, wt)
    pl.matmul(ct, lt, rt)
    pl.move(ring.next(), ct, acc_to_vec_mode=SPLIT_M)


@pl.pipeline.stage
def store_ring(ring, y, sub, i):
    pl.store(y, ring.next(), [i * ROWS + sub * 64, 0])


@pl.pipeline.stage
def cube_side_work(a, i):
    t = pl.make_tile_group(type=MAT16, addrs=0x10000, mutex_ids=[5])
    pl.load(t[0], a, [i * ROWS, 0])


@pl.pipeline.stage
def bump_in_scratch(x, z, sub, i):
    # bytes [0x4000, 0xC000) of UB: the second half of ring slot 0 and the first of slot 1;
    # the slots' mutex ids order the vector core's own accesses
    scratch = pl.make_tile_group(type=VEC, addrs=0x4000, mutex_ids=[[6, 7]])  # E-reorder
    s = scratch[0]
    pl.load(s, x, [i * ROWS + sub * 64, 0])
    pl.add(s, s, 1.0)
    pl.store(z, s, [i * ROWS + sub * 64, 0])


def _reuse(a: pl.Tensor[[DYN, 128], pl.DT_FP16], w: pl.Tensor[[128, 128], pl.DT_FP16],
           x: pl.Tensor[[DYN, 128], pl.DT_FP32], y: pl.Tensor[[DYN, 128], pl.DT_FP32],
           z: pl.Tensor[[DYN, 128], pl.DT_FP32]):
    ring = pl.make_tile_group(type=VEC, addrs=[0, 0x8000], mutex_ids=[6, 7], fwd_ids=[0, 1],
                              bwd_ids=[2, 3])
    sub = pl.get_subblock_idx()
    for i in pl.range(a.shape[0] // ROWS):
        with pl.section_cube():  # E-cycle
            matmul_into_ring(ring, a, w, i)
        with pl.section_vector():
            store_ring(ring, y, sub, i)
        with pl.section_cube():
            cube_side_work(a, i)
        with pl.section_vector():
            bump_in_scratch(x, z, sub, i)


reuses_ring = pl.jit(arch="a5", name="reuses_ring", pipeline=PipelineConfig(preload=1))(_reuse)
reuses_ring_deep = pl.jit(arch="a5", name="reuses_ring_deep", pipeline=PRELOAD)(_reuse)


def _reuse_first(a: pl.Tensor[[DYN, 128], pl.DT_FP16], w: pl.Tensor[[128, 128], pl.DT_FP16],
                 x: pl.Tensor[[DYN, 128], pl.DT_FP32], y: pl.Tensor[[DYN, 128], pl.DT_FP32],
                 z: pl.Tensor[[DYN, 128], pl.DT_FP32]):
    # the scratch stage runs first: a skew moves its next iteration before store_ring
    ring = pl.make_tile_group(type=VEC, addrs=[0, 0x8000], mutex_ids=[6, 7], fwd_ids=[0, 1])
    sub = pl.get_subblock_idx()
    for i in pl.range(a.shape[0] // ROWS):
        with pl.section_vector():
            bump_in_scratch(x, z, sub, i)
        with pl.section_cube():
            matmul_into_ring(ring, a, w, i)
        with pl.section_vector():
            store_ring(ring, y, sub, i)


reuses_ring_first = pl.jit(arch="a5", name="reuses_ring_first",
                           pipeline=PipelineConfig(preload=1))(_reuse_first)
reuses_ring_first_serial = pl.jit(arch="a5", name="reuses_ring_first_serial",
                                  pipeline=PipelineConfig(sync_only=True))(_reuse_first)


def test_reused_ring_bytes_get_extra_ids_in_the_generated_source():
    src = transform_pipeline(reuses_ring)
    # region ring/scratch: bump_in_scratch (V, MTE3 last) releases, matmul_into_ring (FIX)
    # waits on the first free id 4, one permit pre-fired on the AIVs and drained on the AIC
    assert _subsequence([
        "with pl.section_vector():",
        "pl.system.set_cross_core(pipe=pl.PipeType.MTE3, event_id=4)",
        "for _pl_beat in pl.range(_pl_n + 1):",
        "pl.system.wait_cross_core(pipe=pl.PipeType.FIX, event_id=2 + (_pl_t0 + _pl_beat) % 2)",
        "pl.system.wait_cross_core(pipe=pl.PipeType.FIX, event_id=4)",
        "matmul_into_ring(ring, a, w, i)",
        "bump_in_scratch(x, z, sub, _pl_ctx[_pl_i % 2].i)",
        "pl.system.set_cross_core(pipe=pl.PipeType.MTE3, event_id=4)",
        "pl.system.wait_cross_core(pipe=pl.PipeType.FIX, event_id=4)",
    ], src), src


@pytest.mark.parametrize("kernel", [reuses_ring, reuses_ring_first_serial],
                         ids=["preload1", "scratch-first-sync-only"])
def test_reused_ring_bytes_run_correctly_on_the_simulator(kernel):
    # without the region edges the cube's ring writes clobber the scratch (about a third of
    # z wrong on the simulator)
    _check_reuse_run(kernel, n=4, seed=5)


def _check_reuse_run(kernel, n: int, seed: int = 6) -> None:
    """y = a·w through the ring and z = x + 1 through the scratch, on the simulator."""
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(n * ROWS, 128, generator=g).to(torch.float16)
    w = torch.randn(128, 128, generator=g).to(torch.float16)
    x = torch.randn(n * ROWS, 128, generator=g)
    y, z = torch.zeros(n * ROWS, 128), torch.zeros(n * ROWS, 128)
    with backends.use_backend("sim"):
        kernel[None, 1](a, w, x, y, z)
    torch.testing.assert_close(y, a.float() @ w.float(), rtol=1e-3, atol=1e-3)
    torch.testing.assert_close(z, x + 1.0)


def test_an_unsatisfiable_reuse_names_the_region_and_stages():
    with pytest.raises(InvalidOperation) as info:
        transform_pipeline(reuses_ring_deep)  # bump_in_scratch lags two iterations behind
    err = info.value
    assert err.message.startswith("unsatisfiable pipeline"), err.message
    assert "'ring/scratch free'" in err.message and "'bump_in_scratch'" in err.message
    assert "'matmul_into_ring'" in err.message
    assert err.span.file == __file__ and err.span.line == _line("E-cycle"), err


def test_a_reuse_without_a_free_event_id_names_the_region_and_stages(monkeypatch):
    from pypto_pro.passes.preload_pipeline import sync_graph

    monkeypatch.setattr(sync_graph, "N_EVENT_IDS", 4)  # the ring's fwd and bwd ids take all
    with pytest.raises(OutOfRange) as info:
        transform_pipeline(reuses_ring)
    err = info.value
    assert err.message == ("region ring/scratch: no free cross-core event id left to order "
                           "stage 'bump_in_scratch' (vector) before stage 'matmul_into_ring' "
                           "(cube)"), err
    assert err.span.line == _line("E-reorder")


def test_a_reuse_the_skew_reorders_on_one_core_gives_an_error_with_the_line():
    with pytest.raises(NotSupported) as info:
        transform_pipeline(reuses_ring_first)
    err = info.value
    assert err.message.startswith("region ring/scratch (bytes [0x4000, 0x8000) of Vec"), err
    assert "stage 'bump_in_scratch' of iteration i+1 before stage 'store_ring'" in err.message
    assert err.span.file == __file__ and err.span.line == _line("E-reorder"), err
    # serial order: an extra RAW edge on id 4 (the ring's releases took the free ids 2, 3)
    src = transform_pipeline(reuses_ring_first_serial)
    assert _subsequence(["bump_in_scratch(x, z, sub, i)",
                         "pl.system.set_cross_core(pipe=pl.PipeType.MTE3, event_id=4)",
                         "pl.system.wait_cross_core(pipe=pl.PipeType.FIX, event_id=4)",
                         "matmul_into_ring(ring, a, w, i)"], src), src


# ---------------------------------------------------------------- per-slot address reuse


@pl.pipeline.stage
def bump_in_slot(scratch, x, z, sub, i):
    s = scratch.next()  # slot i % 2: the bytes of ring slot i % 2 only
    pl.load(s, x, [i * ROWS + sub * 64, 0])
    pl.add(s, s, 1.0)
    pl.store(z, s, [i * ROWS + sub * 64, 0])


def _reuse_slots(a: pl.Tensor[[DYN, 128], pl.DT_FP16], w: pl.Tensor[[128, 128], pl.DT_FP16],
                 x: pl.Tensor[[DYN, 128], pl.DT_FP32], y: pl.Tensor[[DYN, 128], pl.DT_FP32],
                 z: pl.Tensor[[DYN, 128], pl.DT_FP32]):
    ring = pl.make_tile_group(type=VEC, addrs=[0, 0x8000], mutex_ids=[6, 7], fwd_ids=[0, 1],
                              bwd_ids=[2, 3])
    sub = pl.get_subblock_idx()
    with pl.section_vector():  # a second view of the ring's slots, advanced in step with it
        scratch = pl.make_tile_group(type=VEC, addrs=[0, 0x8000], mutex_ids=[6, 7])
    for i in pl.range(a.shape[0] // ROWS):
        with pl.section_cube():
            matmul_into_ring(ring, a, w, i)
        with pl.section_vector():
            store_ring(ring, y, sub, i)
        with pl.section_cube():
            cube_side_work(a, i)
        with pl.section_vector():
            bump_in_slot(scratch, x, z, sub, i)


reuses_slots_deep = pl.jit(arch="a5", name="reuses_slots_deep", pipeline=PRELOAD)(_reuse_slots)


def test_a_slot_aligned_reuse_is_ordered_per_slot_and_accepted_at_preload_2():
    # per iteration, matmul_into_ring(i+1) would wait for bump_in_scratch(i), two beats later
    # behind store_ring(i+1): a deadlock; per slot it waits for bump_in_slot(i-1) (same slot)
    src = transform_pipeline(reuses_slots_deep)
    assert "stage delays [0, 1, 2, 2]" in src.splitlines()[0]
    slot = "(_pl_t0 + _pl_beat) % 2"
    assert _subsequence([
        "with pl.section_vector():",  # one permit per slot, pre-fired by the releasing AIVs
        "pl.system.set_cross_core(pipe=pl.PipeType.MTE3, event_id=4)",
        "pl.system.set_cross_core(pipe=pl.PipeType.MTE3, event_id=5)",
        "for _pl_beat in pl.range(_pl_n + 2):",
        f"pl.system.wait_cross_core(pipe=pl.PipeType.FIX, event_id=4 + {slot})",
        "matmul_into_ring(ring, a, w, i)",
        "bump_in_slot(scratch, x, z, sub, _pl_ctx[_pl_i % 3].i)",
        "pl.system.set_cross_core(pipe=pl.PipeType.MTE3, event_id=4 + (_pl_t0 + _pl_i) % 2)",
        "pl.system.wait_cross_core(pipe=pl.PipeType.FIX, event_id=4)",
        "pl.system.wait_cross_core(pipe=pl.PipeType.FIX, event_id=5)",
    ], src), src


def test_a_slot_aligned_reuse_at_preload_2_runs_correctly_on_the_simulator():
    _check_reuse_run(reuses_slots_deep, n=5)  # odd: the cursors wrap mid-ring


def _reuse_slots_first(a: pl.Tensor[[DYN, 128], pl.DT_FP16],
                       w: pl.Tensor[[128, 128], pl.DT_FP16],
                       x: pl.Tensor[[DYN, 128], pl.DT_FP32], y: pl.Tensor[[DYN, 128], pl.DT_FP32],
                       z: pl.Tensor[[DYN, 128], pl.DT_FP32]):
    ring = pl.make_tile_group(type=VEC, addrs=[0, 0x8000], mutex_ids=[6, 7], fwd_ids=[0, 1])
    sub = pl.get_subblock_idx()
    with pl.section_vector():
        scratch = pl.make_tile_group(type=VEC, addrs=[0, 0x8000], mutex_ids=[6, 7])
    for i in pl.range(a.shape[0] // ROWS):
        with pl.section_vector():
            bump_in_slot(scratch, x, z, sub, i)
        with pl.section_cube():
            matmul_into_ring(ring, a, w, i)
        with pl.section_vector():
            store_ring(ring, y, sub, i)


reuses_slots_first = pl.jit(arch="a5", name="reuses_slots_first",
                            pipeline=PipelineConfig(preload=1))(_reuse_slots_first)


def test_a_slot_aligned_reuse_the_skew_keeps_apart_is_accepted():
    # store_ring(i) and bump_in_slot(i+1) swap on the AIVs, but they touch different slots;
    # per iteration the same kernel is rejected (reuses_ring_first above)
    src = transform_pipeline(reuses_slots_first)
    assert _subsequence(["bump_in_slot(scratch, x, z, sub, i)",
                         "pl.system.set_cross_core(pipe=pl.PipeType.MTE3, event_id=4)",
                         "pl.system.wait_cross_core(pipe=pl.PipeType.FIX, event_id=4)",
                         "matmul_into_ring(ring, a, w, _pl_ctx[_pl_i % 2].i)"], src), src
    _check_reuse_run(reuses_slots_first, n=3)



@pl.jit(arch="a5", pipeline=PRELOAD)
def reuses_slots_restarting(a: pl.Tensor[[DYN, 128], pl.DT_FP16],
                            w: pl.Tensor[[128, 128], pl.DT_FP16],
                            x: pl.Tensor[[DYN, 128], pl.DT_FP32],
                            y: pl.Tensor[[DYN, 128], pl.DT_FP32],
                            z: pl.Tensor[[DYN, 128], pl.DT_FP32]):
    ring = pl.make_tile_group(type=VEC, addrs=[0, 0x8000], mutex_ids=[6, 7], fwd_ids=[0, 1],
                              bwd_ids=[2, 3])
    sub = pl.get_subblock_idx()
    for _ in pl.range(2):
        with pl.section_vector():  # re-declared every trip: its cursor restarts, the ring's not
            scratch = pl.make_tile_group(type=VEC, addrs=[0, 0x8000], mutex_ids=[6, 7])
        for i in pl.range(a.shape[0] // ROWS):
            with pl.section_cube():
                matmul_into_ring(ring, a, w, i)
            with pl.section_vector():
                store_ring(ring, y, sub, i)
            with pl.section_cube():
                cube_side_work(a, i)
            with pl.section_vector():
                bump_in_slot(scratch, x, z, sub, i)


def test_a_reuser_whose_cursor_restarts_is_ordered_per_iteration():
    with pytest.raises(InvalidOperation, match="unsatisfiable pipeline"):
        transform_pipeline(reuses_slots_restarting)
