"""What the native backend does with a kernel that goes wrong: a GM access outside its tensor
(its buffer, or one axis of its shape), a getval / setval out of range, a wild pointer that
crashes the kernel, a cross-core wait nobody satisfies, flag and mutex
misuse, `pl.trap()`, a kernel that never ends and C++ the compiler rejects. Each becomes the
right error class pointing at the kernel source line, the calling process survives, and the
next launch works."""
from __future__ import annotations

import dataclasses
import time

import pytest
import torch

import pypto_pro
import pypto_pro.language as pl
from pypto_pro.errors import CompileError, DeadlockError, KernelTrap, SimulationError
from pypto_pro.runtime import backends

T16 = pl.TileType([16, 16], pl.DT_FP32)


@pl.jit(arch="a5")
def copy_rows(x: pl.Tensor[[pl.DYNAMIC, 16], pl.DT_FP32],
              y: pl.Tensor[[pl.DYNAMIC, 16], pl.DT_FP32], off: pl.DT_INT64):
    with pl.section_vector():
        t = pl.make_tile(T16, addr=0x0)
        pl.load(t, x, [off, 0])  # LINE_LOAD
        pl.system.sync_src(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.MTE3, event_id=0)
        pl.store(y, t, [0, 0])


@pl.jit(arch="a5")
def poke(out: pl.Tensor[[1], pl.DT_INT32], idx: pl.DT_INT64):
    with pl.section_vector():
        pl.setval(out, idx, 7)  # LINE_POKE


@pl.jit(arch="a5")
def copy_at(x: pl.Tensor[[32, 16], pl.DT_FP32], y: pl.Tensor[[16, 16], pl.DT_FP32],
            r: pl.DT_INT64, c: pl.DT_INT64):
    with pl.section_vector():
        t = pl.make_tile(T16, addr=0x0)
        pl.load(t, x, [r, c])  # LINE_WINDOW
        pl.system.bar_all()
        pl.store(y, t, [0, 0])


@pl.jit(arch="a5")
def peek_tile(out: pl.Tensor[[1], pl.DT_FP32], k: pl.DT_INT64):
    with pl.section_vector():
        t = pl.make_tile(T16, addr=0x0)
        pl.setval(out, 0, pl.getval(t, k))  # LINE_PEEK


@pl.simt.function(max_threads=1)
def wild_write(data: pl.Tile[[16, 16], pl.DT_FP32], far: pl.DT_INT64):
    data[0, far] = 1.0  # LINE_WILD


@pl.jit(arch="a5")
def wild(x: pl.Tensor[[16, 16], pl.DT_FP32], far: pl.DT_INT64):
    with pl.section_vector():
        t = pl.make_tile(T16, addr=0x0)
        pl.simt.launch(wild_write, threads=1, args=(t, far))  # LINE_LAUNCH


@pl.jit(arch="a5")
def wait_forever(x: pl.Tensor[[16, 16], pl.DT_FP32]):
    with pl.section_cube():
        pl.make_tile(pl.TileType([16, 16], pl.DT_FP32, target_memory=pl.MemorySpace.Mat),
                     addr=0x0)
    with pl.section_vector():
        pl.system.wait_cross_core(pipe=pl.PipeType.V, event_id=3)  # LINE_WAIT


@pl.jit(arch="a5")
def set_twice(x: pl.Tensor[[16, 16], pl.DT_FP32]):
    with pl.section_vector():
        pl.system.sync_src(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.V, event_id=2)
        pl.system.sync_src(  # LINE_SET2
            set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.V, event_id=2)


@pl.jit(arch="a5")
def lock_only(x: pl.Tensor[[16, 16], pl.DT_FP32]):
    with pl.section_vector():
        pl.system.mutex_lock(pipe=pl.PipeType.MTE2, mutex_id=3)  # LINE_LOCK


@pl.jit(arch="a5")
def trapper(x: pl.Tensor[[16, 16], pl.DT_FP32]):
    with pl.section_vector():
        pl.printf("block %d\n", pl.get_block_idx())
        pl.trap()  # LINE_TRAP


@pl.jit(arch="a5")
def spin(out: pl.Tensor[[1], pl.DT_INT32], n: pl.DT_INT64):
    with pl.section_vector():
        for i in pl.range(n):
            pl.system.bar_all()
        pl.setval(out, 0, n - 1)


@pl.jit(arch="a5")
def scale_rows(x: pl.Tensor[[16, 16], pl.DT_FP32], y: pl.Tensor[[16, 16], pl.DT_FP32]):
    with pl.section_vector():
        t = pl.make_tile(T16, addr=0x0)
        pl.load(t, x, [0, 0])
        pl.system.sync_src(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.V, event_id=0)
        pl.system.sync_dst(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.V, event_id=0)
        pl.muls(t, t, 2.0)
        pl.system.sync_src(set_pipe=pl.PipeType.V, wait_pipe=pl.PipeType.MTE3, event_id=1)
        pl.system.sync_dst(set_pipe=pl.PipeType.V, wait_pipe=pl.PipeType.MTE3, event_id=1)
        pl.store(y, t, [0, 0])


def _line(marker: str) -> int:
    with open(__file__) as f:
        for n, text in enumerate(f, 1):
            if text.rstrip().endswith(f"# {marker}"):
                return n
    raise AssertionError(marker)


def _good_launch_still_works() -> None:
    x, y = torch.randn(32, 16), torch.zeros(32, 16)
    copy_rows[None, 1](x, y, 16)
    assert torch.equal(y[:16], x[16:])


@pytest.fixture
def native(native_backend):
    with pypto_pro.use_backend("native"):
        yield native_backend


def test_gm_window_outside_its_tensor_is_a_trap_at_the_load(native):
    x, y = torch.randn(32, 16), torch.zeros(32, 16)
    with pytest.raises(KernelTrap) as err:
        copy_rows[None, 1](x, y, 28)  # rows 32..43: past the 512 bytes reserved after x
    assert "tensor 'x'" in err.value.message and "out of bounds" in err.value.message
    assert err.value.span.line == _line("LINE_LOAD")
    _good_launch_still_works()


def test_a_window_past_one_axis_is_a_trap_even_inside_the_buffer(native):
    x, y = torch.randn(32, 16), torch.zeros(16, 16)
    copy_at(x, y, 8, 0)
    assert torch.equal(y, x[8:24])
    with pytest.raises(KernelTrap) as err:
        copy_at(x, y, 8, 4)  # columns 4..20 of 16: wraps into the next rows, inside x's bytes
    assert "axis 1 of tensor 'x', whose size is 16 (out of bounds)" in err.value.message
    assert err.value.span.line == _line("LINE_WINDOW")


def test_setval_past_its_tensor_is_a_trap(native):
    out = torch.zeros(1, dtype=torch.int32)
    with pytest.raises(KernelTrap) as err:
        poke(out, 128)  # byte 512: past the 508 bytes reserved after out's 4
    assert "tensor 'out'" in err.value.message and "out of bounds" in err.value.message
    assert err.value.span.line == _line("LINE_POKE")
    poke(out, 0)
    assert int(out[0]) == 7


def test_getval_past_its_tile_is_a_trap(native):
    out = torch.zeros(1)
    peek_tile(out, 255)
    with pytest.raises(KernelTrap) as err:
        peek_tile(out, 256)
    assert "element access 256 past Vec tile [16, 16]" in err.value.message
    assert err.value.span.line == _line("LINE_PEEK")


def test_wild_pointer_crash_is_reported_and_the_process_survives(native):
    with pytest.raises(KernelTrap) as err:
        wild(torch.zeros(16, 16), 1 << 45)  # a SIMT store far outside every mapping
    assert "SIGSEGV" in err.value.message or "SIGBUS" in err.value.message
    assert err.value.span is not None
    assert err.value.span.line in (_line("LINE_WILD"), _line("LINE_LAUNCH"))
    _good_launch_still_works()


def test_cross_core_wait_without_set_is_a_deadlock_not_a_hang(native):
    t0 = time.perf_counter()
    with pytest.raises(DeadlockError) as err:
        wait_forever[None, 2](torch.zeros(16, 16))
    assert time.perf_counter() - t0 < 60
    assert "wait_intra_block(PIPE_V, 3)" in err.value.message
    assert err.value.message.count("waits") >= 1 and "block 1 AIV1" in err.value.message
    assert err.value.span.line == _line("LINE_WAIT")
    _good_launch_still_works()


def test_set_flag_twice_names_the_second_set(native):
    with pytest.raises(SimulationError) as err:
        set_twice(torch.zeros(16, 16))
    assert "set twice" in err.value.message
    assert err.value.span.line == _line("LINE_SET2")


def test_lock_without_unlock_is_reported(native):
    with pytest.raises(SimulationError) as err:
        lock_only(torch.zeros(16, 16))
    assert "never released" in err.value.message
    assert err.value.span.line == _line("LINE_LOCK")


def test_trap_stops_the_kernel(native):
    with pytest.raises(KernelTrap) as err:
        trapper[None, 3](torch.zeros(16, 16))
    assert "pl.trap() executed on block" in err.value.message
    assert err.value.span.line == _line("LINE_TRAP")


def test_a_kernel_that_never_ends_times_out(monkeypatch, native_backend):
    from pypto_pro.runtime.backends.native import NativeBackend

    monkeypatch.setattr(backends, "_factories", dict(backends._factories))
    monkeypatch.setattr(backends, "_instances", dict(backends._instances))
    short = NativeBackend(timeout=2.0)
    backends.register_backend("native-short", lambda: short)
    out = torch.zeros(1, dtype=torch.int32)
    try:
        with pypto_pro.use_backend("native-short"):
            spin(out, 1000)  # builds the library and shows the kernel works
            assert int(out[0]) == 999
            with pytest.raises(DeadlockError, match="did not finish within 2 s"):
                spin(out, 1 << 50)
            spin(out, 10)  # a new worker takes over
            assert int(out[0]) == 9
    finally:
        short.close()


def test_compile_errors_point_at_the_kernel_line(native, monkeypatch):
    from pypto_pro import codegen

    real = codegen.generate
    broken: dict[str, int] = {}

    def generate(compiled):
        art = real(compiled)
        lines = art.kernel_cpp.split("\n")
        for cpp_line, _file, src_line in art.line_map["kernel.cpp"]:
            if "TMULS(" in lines[cpp_line - 1]:
                lines[cpp_line - 1] = "    this_is_not_cpp(t);  // broken on purpose"
                broken["line"] = src_line
                break
        return dataclasses.replace(art, kernel_cpp="\n".join(lines))

    monkeypatch.setattr(codegen, "generate", generate)
    monkeypatch.setattr(native, "cached_launch", lambda *a: None)  # compile, not from disk
    scale_rows._disk_hits.clear()
    with pytest.raises(CompileError) as err:
        scale_rows(torch.zeros(16, 16), torch.zeros(16, 16))
    assert "this_is_not_cpp" in err.value.message
    assert err.value.span is not None and err.value.span.line == broken["line"]
