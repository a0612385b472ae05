"""Issue 21 (docs examples): GM windows that run past a tensor's end into the bytes the real
NPU allocator reserves with it. torch_npu's caching allocator rounds every allocation to
(size + 32) bytes rounded up to 512, and the docs' kernels rely on it (a [1, 128] tile stored
into a [1, 64] output, a [1, 256] index tile loaded from 128 indices). Here reads there give
zero and writes are discarded, on every backend; the sanitizer warns (GM_PAST_TENSOR_END). A
window past the reserved bytes, or one whose out-of-shape part wraps into the tensor's own
data, stays a typed error at the kernel line."""
from __future__ import annotations

import inspect

import pytest
import torch

import pypto_pro.language as pl
from pypto_pro.errors import PyptoError, SimulationError
from pypto_pro.runtime.backends import use_backend
from pypto_pro.soc import device_allocation

D = pl.DYNAMIC


def test_device_allocation_is_torch_npus_rounding():
    assert [device_allocation(n) for n in (0, 1, 256, 480, 481, 1000, 4096)] == \
        [0, 512, 512, 512, 1024, 1536, 4608]


def _kernel(rows: int, cols: int, dtype):
    """A kernel that loads a [rows, cols] window at [0, 0] of `a` and stores it to `out`."""

    @pl.jit()
    def window_copy(a: pl.Tensor[[D, D], dtype], out: pl.Tensor[[D, D], dtype]):
        tt = pl.TileType(shape=[rows, cols], dtype=dtype, target_memory=pl.MemorySpace.Vec)
        t = pl.make_tile(tt, addr=0, size=rows * cols * 4)
        with pl.section_vector():
            pl.load(t, a, [0, 0])
            pl.system.sync_src(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.MTE3,
                               event_id=0)
            pl.system.sync_dst(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.MTE3,
                               event_id=0)
            pl.store(out, t, [0, 0])

    return window_copy


STORE_PAST = _kernel(1, 128, pl.DT_FP32)  # the docs' load_align store into [1, 64]
LOAD_PAST = _kernel(1, 256, pl.DT_INT8)  # the docs' gather index load from [1, 128]
ROWS_PAST = _kernel(2, 64, pl.DT_FP32)  # row 1 of a [1, 64] tensor


def test_a_store_past_the_end_keeps_the_tensor_and_discards_the_rest_everywhere(everywhere):
    a, a64 = torch.randn(1, 128), torch.randn(1, 64)

    def launch():
        storage = torch.full((2, 64), -7.0)  # the output is the last row of a storage
        STORE_PAST(a, storage[1:])
        rows = torch.full((2, 64), -1.0)
        ROWS_PAST(a64, rows)  # row 1 of a [1, 64] tensor: reserved bytes
        return storage, rows

    for engine, (storage, rows) in everywhere(launch).items():
        assert torch.equal(storage[1], a[0, :64]), engine
        assert torch.equal(storage[0], torch.full((64,), -7.0)), engine
        assert torch.equal(rows, torch.cat([a64, torch.zeros(1, 64)])), engine


def test_a_load_past_the_end_reads_zeros_everywhere(everywhere):
    a = torch.randint(-128, 127, (1, 128), dtype=torch.int8, generator=torch.Generator()
                      .manual_seed(3))
    want = torch.cat([a, torch.zeros(1, 128, dtype=torch.int8)], dim=1)

    def launch():
        out = torch.full((1, 256), 5, dtype=torch.int8)
        LOAD_PAST(a, out)
        return out

    for engine, got in everywhere(launch).items():
        assert torch.equal(got, want), engine


FAR_PAST = _kernel(1, 1024, pl.DT_FP32)  # 4 KiB from a 256-byte tensor: past the reserve
WRAPS = _kernel(2, 80, pl.DT_FP32)  # columns 64..79 of row 0 are row 1's data


def _load_line(kernel) -> int:
    lines, first = inspect.getsourcelines(kernel.kernel_def.fn)
    return first + next(i for i, text in enumerate(lines) if "pl.load(" in text)


@pytest.mark.parametrize("kernel,shape", [(FAR_PAST, (1, 64)), (WRAPS, (4, 64))],
                         ids=["past the reserved bytes", "wraps into the tensor"])
def test_other_windows_out_of_the_tensor_stay_typed_errors(kernel, shape, native_backend):
    with pytest.raises(SimulationError, match="axis 1 spans") as err:
        kernel(torch.zeros(shape), torch.zeros(shape))
    assert err.value.span.line == _load_line(kernel)
    with use_backend("native"), pytest.raises(PyptoError, match="out of bounds"):
        kernel(torch.zeros(shape), torch.zeros(shape))


@pl.jit(sanitizer=True)
def sanitized_store_past(a: pl.Tensor[[D, D], pl.DT_FP32], out: pl.Tensor[[D, D], pl.DT_FP32]):
    tt = pl.TileType(shape=[1, 128], dtype=pl.DT_FP32, target_memory=pl.MemorySpace.Vec)
    t = pl.make_tile(tt, addr=0, size=512)
    with pl.section_vector():
        pl.load(t, a, [0, 0])
        pl.system.sync_src(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.MTE3, event_id=0)
        pl.store(out, t, [0, 0])


def test_the_sanitizer_warns_at_the_store():
    a, out = torch.randn(1, 128), torch.zeros(1, 64)
    sanitized_store_past(a, out)
    report = sanitized_store_past.last_result.sanitizer
    hits = [f for f in report if f.kind == "GM_PAST_TENSOR_END"]
    assert hits and all(f.severity == "WARNING" for f in hits), report.text()
    assert "256 bytes past the end of a 256-byte tensor" in hits[0].message
    assert not [f for f in report if f.severity == "ERROR"], report.text()
    assert torch.equal(out, a[:, :64])
