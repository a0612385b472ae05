"""Sync, system and debug ops lower exactly as spec §4.2 says: flags (static and run-time
ids), barriers, buffer-id mutexes with de-duplication guards, cross-core sync per mode and
side (a5 `set/wait_intra_block` with id+16 on the cube for INTRA_BLOCK, FFTS for INTER_* and
on a2/a3 with the FFTS base address threaded through the launcher), sync_all, dcci, the vector
mask SPRs, printf / assert / dump / trap; the system variables of §2.11 per target."""
from __future__ import annotations

import pytest

import pypto_pro.language as pl
from pypto_pro.ir.nodes import (
    Call, EvalStmt, Function, Program, SectionStmt, Var, seq,
)
from pypto_pro.ir.span import Span
from pypto_pro.ir.types import INDEX, PipeType, SectionKind
from pypto_pro.runtime.kernel_def import Specialization

SPAN = Span("sync.py", 3, 1)


@pl.jit(arch="a5")
def sync_kernel(x: pl.Tensor[[16, 64], pl.DT_FP32], n: pl.DT_INT32):
    with pl.section_cube():
        pl.system.set_cross_core(pipe=pl.PipeType.FIX, event_id=2)
        pl.system.set_cross_core(pipe=pl.PipeType.FIX, event_id=n)
        pl.system.wait_cross_core(pipe=pl.PipeType.MTE1, event_id=4)
        pl.system.wait_cross_core(pipe=pl.PipeType.MTE1, event_id=5,
                                  sync_mode=pl.CrossCoreSyncMode.UNICAST_BLOCK)
        pl.system.set_cross_core(pipe=pl.PipeType.FIX, event_id=6,
                                 sync_mode=pl.CrossCoreSyncMode.INTER_BLOCK)
        pl.system.bar_m()
        b = pl.get_block_idx()
        s = pl.get_subblock_idx() + pl.get_subblock_num()
        pl.printf("cube %d %d\n", b, s)
    with pl.section_vector():
        pl.system.wait_cross_core(pipe=pl.PipeType.V, event_id=2)
        pl.system.set_cross_core(pipe=pl.PipeType.MTE3, event_id=4)
        pl.system.wait_cross_core(pipe=pl.PipeType.V, event_id=6,
                                  sync_mode=pl.CrossCoreSyncMode.INTER_BLOCK)
        pl.system.sync_src(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.V, event_id=3)
        pl.system.sync_dst(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.V, event_id=n)
        pl.system.bar_all()
        pl.system.bar_mte2()
        pl.system.sync_all(core_type=pl.SyncCoreType.MIX)
        pl.system.dcci(x, 8, cache_line=pl.CacheLine.ENTIRE_DATA_CACHE,
                       dst=pl.DcciDst.CACHELINE_ALL)
        pl.set_mask_count()
        pl.set_vec_mask(1, 2)
        pl.reset_mask()
        b = pl.get_block_idx()
        pl.printf("vec %d of %d\n", b, pl.get_block_num(), loc=True)
        pl.pto_assert(n > 1, "n=%d", n)
        pl.dump_data(x)
        pl.trap()


def _bodies(cg, arch: str = "a5"):
    compiled, art = cg.compile(sync_kernel, Specialization(arch=arch))
    return (art, [cg.code(x) for x in cg.impl_body(art.kernel_cpp, "cube")],
            [cg.code(x) for x in cg.impl_body(art.kernel_cpp, "vector")])


def test_cross_core_a5(cg, cxx_check):
    art, cube, vec = _bodies(cg)
    i = cube.index("set_intra_block(PIPE_FIX, 2);")
    assert cube[i + 1] == "set_intra_block(PIPE_FIX, 18);"
    j = cube.index("set_intra_block(PIPE_FIX, n);")
    assert cube[j + 1] == "set_intra_block(PIPE_FIX, n + 16);"
    k = cube.index("wait_intra_block(PIPE_MTE1, 4);")
    assert cube[k + 1] == "wait_intra_block(PIPE_MTE1, 20);"
    assert "wait_intra_block(PIPE_MTE1, 5);" in cube  # UNICAST: one call
    assert "wait_intra_block(PIPE_MTE1, 21);" not in cube
    assert "ffts_cross_core_sync(PIPE_FIX, getFFTSMsg(0, 6));" in cube
    assert vec.count("wait_intra_block(PIPE_V, 2);") == 1
    assert "set_intra_block(PIPE_MTE3, 4);" in vec and "set_intra_block(PIPE_MTE3, 20);" not in vec
    assert "wait_flag_dev(PIPE_V, 6);" in vec
    assert "#include <pto/npu/a5/custom/TSyncCVID.hpp>" in art.kernel_cpp
    assert not art.needs_ffts and "ffts_addr" not in art.call_kernel_cpp
    cxx_check(art)


def test_flags_barriers_and_system_ops(cg):
    _, cube, vec = _bodies(cg)
    assert "set_flag(PIPE_MTE2, PIPE_V, EVENT_ID3);" in vec
    assert "wait_flag(PIPE_MTE2, PIPE_V, (event_t)(n));" in vec
    assert "pipe_barrier(PIPE_ALL);" in vec and "pipe_barrier(PIPE_MTE2);" in vec
    assert "pipe_barrier(PIPE_M);" in cube
    assert "SYNCALL<SyncCoreType::Mix>();" in vec
    assert "dcci((__gm__ void*)(x_ptr + 8), ENTIRE_DATA_CACHE, CACHELINE_ALL);" in vec
    assert "set_mask_count();" in vec and "set_vector_mask(1, 2);" in vec
    assert "set_vector_mask(static_cast<uint64_t>(-1), static_cast<uint64_t>(-1));" in vec


def test_system_variables_per_target(cg):
    _, cube, vec = _bodies(cg)
    assert "int64_t b = static_cast<int64_t>(get_block_idx());" in cube
    assert "int64_t s = static_cast<int64_t>(get_subblockid()) + 1;" in cube
    # mix kernel: the vector block index counts AIVs
    assert "int64_t b = static_cast<int64_t>(get_block_idx() * get_subblockdim() + " \
           "get_subblockid());" in vec


def test_debug_ops(cg):
    art, cube, vec = _bodies(cg)
    # 64-bit values (block index, block count) print at full width
    assert 'cce::printf("cube %lld %lld\\n", static_cast<long long>(b), ' \
        'static_cast<long long>(s));' in cube
    line = next(x for x in vec if x.startswith('cce::printf("[test_sync_lowering.py:'))
    assert line.endswith('] vec %lld of %lld\\n", static_cast<long long>(b), '
                         'static_cast<long long>(static_cast<int64_t>(get_block_num())));')
    assert any(x.startswith('if (!(n > 1)) { cce::printf("pto_assert failed at '
                            'test_sync_lowering.py:') and x.endswith(': n=%d\\n", '
                                                                     'static_cast<int32_t>(n)); }')
               for x in vec)
    i = vec.index("TPRINT(dump_gt);")  # a GlobalTensor over the whole tensor, five dims
    assert vec[i - 3] == "pipe_barrier(PIPE_ALL);"
    assert vec[i - 2].startswith("using dump_GT = GlobalTensor<float, pto::Shape<-1, -1, -1, -1, "
                                 "-1>, pto::Stride<-1, -1, -1, -1, -1>>;")
    assert vec[i - 1] == "dump_GT dump_gt(x_ptr, dump_GT::Shape(1, 1, 1, static_cast<int64_t>(" \
        "16), static_cast<int64_t>(64)), dump_GT::Stride(1, 1, 1, x_stride[0], x_stride[1]));"
    assert "trap();" in vec
    assert art.uses_print


def test_a3_uses_ffts_and_threads_its_address(cg, cxx_check):
    art, cube, vec = _bodies(cg, "a3")
    assert "set_ffts_base_addr(reinterpret_cast<uint64_t>(ffts_addr));" in cube
    assert "ffts_cross_core_sync(PIPE_FIX, getFFTSMsg(2, 2));" in cube
    assert "wait_flag_dev(2);" in vec  # a2/a3 form: no pipe
    assert "set_mask_norm();" in vec[:3]  # the a3 vector prologue
    assert "TSyncCVID" not in art.kernel_cpp
    assert "__gm__ int64_t* ffts_addr)" in art.kernel_cpp
    launcher = art.call_kernel_cpp
    assert '#include "runtime/rt_ffts.h"' in launcher
    assert "rtGetC2cCtrlAddr(&ffts, &ffts_len);" in launcher
    assert "reinterpret_cast<__gm__ int64_t*>(ffts));" in launcher
    assert "-DMEMORY_BASE" in art.kernel_cpp and "dav-c220" in art.kernel_cpp
    assert art.needs_ffts
    cxx_check(art)


def _mutex(op: str, ident, guard=(), pipe=PipeType.V) -> EvalStmt:
    kwargs = (("pipe", pipe),) + ((("guard", tuple(guard)),) if guard else ())
    return EvalStmt(Call(op, (ident,), kwargs, span=SPAN), SPAN)


def test_runtime_mutex_ids_are_guarded(cg):
    from pypto_pro.codegen import generate

    a, b = Var("a", INDEX), Var("b", INDEX)
    stmts = [
        EvalStmt(Call("system.mutex_lock", (), (("pipe", PipeType.MTE2), ("mutex_id", 3)),
                      span=SPAN), SPAN),
        _mutex("system.mutex_lock_dyn", a, pipe=PipeType.MTE2),
        _mutex("system.mutex_lock_dyn", b, guard=(a,), pipe=PipeType.MTE2),
        _mutex("system.mutex_unlock_dyn", b, guard=(a,), pipe=PipeType.MTE2),
    ]
    body = seq([SectionStmt(SectionKind.Vector, seq(stmts, SPAN), span=SPAN)], SPAN)
    fn = Function("m", (a, b), body, span=SPAN)
    art = generate(cg.fake_compiled({"vector": Program("m", (fn,), "vector", SPAN)}))
    lines = [cg.code(x) for x in cg.impl_body(art.kernel_cpp, "vector")]
    assert "get_buf(PIPE_MTE2, 3, 0);" in lines
    assert "get_buf(PIPE_MTE2, a, 0);" in lines
    assert "if (b != a) { get_buf(PIPE_MTE2, b, 0); }" in lines
    assert "if (b != a) { rls_buf(PIPE_MTE2, b, 0); }" in lines


@pytest.mark.parametrize("arch", ["a5", "a3"])
def test_entry_signature_is_uniform_across_targets(cg, arch):
    art = cg.compile(sync_kernel, Specialization(arch=arch))[1]
    cpp = art.kernel_cpp
    sigs = [line.split("(", 1)[1].split(")")[0] for line in cpp.splitlines()
            if line.startswith("__aicore__ inline void sync_kernel_impl")]
    assert len(sigs) == 3 and len(set(sigs)) == 1
