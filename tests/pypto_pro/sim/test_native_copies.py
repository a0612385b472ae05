"""Compiled copies for the replay tape (`sim/copies_native.py`, `copies.cpp`): fp16/bf16 →
fp32 conversions bit-identical to torch's `copy_` for every 16-bit pattern; copies of every
layout pair the tape's steps bind (GM → tile loads, tile → tile moves, tile → GM stores, the
cube product's operand conversions, its product through torch's sgemm, its accumulation (NaN
payloads included) and its result write) leave the bytes torch leaves, and so do copies run
in the product's call, and so do chains of them (an accumulation over a NaN left to torch
mid-call); no library → torch steps; a copy whose extent leaves a storage, whose
sides overlap or whose writes collide has no record (the step keeps torch's copy); a step
moves its destinations' version counters as a torch write does."""
from __future__ import annotations

import shutil
import weakref

import pytest
import torch

from pypto_pro.ir.dtype import DataType as D
from pypto_pro.ir.types import MemorySpace as M
from pypto_pro.ir.types import TileLayout as L
from pypto_pro.runtime.backends.native import compiler
from pypto_pro.sim import settings
from pypto_pro.sim.fast import copies_native
from pypto_pro.sim.fast.fusion import chained, compiled, joined
from pypto_pro.sim.model.memory import CoreMemory, GMRef, TileGeometry, TileRef
from pypto_pro.sim.ops import STEPS
from pypto_pro.soc import soc


@pytest.fixture
def native(monkeypatch: pytest.MonkeyPatch) -> list:
    """The library built and forced on; the list collects every step `copier` and `product`
    make."""
    if shutil.which(compiler()) is None:
        pytest.skip("the compiled copies need a C++ compiler")
    monkeypatch.setenv(settings.COPIES, "native")
    copies_native.library(wait=True)
    made: list = []
    real = copies_native.copier

    def counting(pairs):
        step = real(pairs)
        if step is not None:
            made.append(step)
        return step
    monkeypatch.setattr(copies_native, "copier", counting)
    real_product = copies_native.product

    def counting_products(*args, **kwargs):
        step = real_product(*args, **kwargs)
        if step is not None:
            made.append(step)
        return step
    monkeypatch.setattr(copies_native, "product", counting_products)
    return made


def _bits(t: torch.Tensor) -> torch.Tensor:
    return t.contiguous().view(torch.int32)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_conversions_match_torch_for_every_bit_pattern(native, dtype):
    """NaN payloads, signalling NaNs, subnormals, ±0, ±inf: contiguous runs (vector path),
    runs of 16 and 13 (vector + scalar tail) and single elements (scalar path)."""
    src = torch.arange(65536, dtype=torch.int32).to(torch.int16).view(dtype)
    want = _bits(src.to(torch.float32))
    for rows, run in ((1, 65536), (4096, 16), (5041, 13)):  # (destination rows: runs)
        count = rows * run
        out = torch.empty(rows, run + 3)[:, :run]
        copies_native.copier([(out, src[:count].view(rows, run))]).run()
        assert torch.equal(_bits(out).reshape(-1), want[:count]), run
    strided = torch.empty(2 * 65536)[::2]  # one element per run
    copies_native.copier([(strided, src)]).run()
    assert torch.equal(_bits(strided), want)
    into_t = torch.empty(256, 256).t()  # the destination transposed
    copies_native.copier([(into_t, src.view(256, 256))]).run()
    assert torch.equal(_bits(into_t).reshape(-1), want)


def _tile(mem, rows, cols, dtype, space, layout, addr=0):
    return TileRef(mem, TileGeometry(rows, cols, dtype, space, layout, 512, addr), rows, cols)


def _load(mem, data, layout, transpose=False):
    rows, cols = (data.shape[1], data.shape[0]) if transpose else data.shape
    dst = _tile(mem, rows, cols, D.FP16, M.Mat, layout)
    kwargs = {"is_transpose": True} if transpose else {}
    return dst, STEPS["block.load"]([dst, GMRef(data), [0, 0]], kwargs)


def _scenarios():
    """name → action(mem, gm) giving the step under test (after any setup it ran)."""
    def load(layout, transpose=False):
        return lambda mem, gm: _load(mem, gm[:64, :32] if not transpose else gm[:32, :64],
                                     layout, transpose)[1]

    def move(src_layout, dst_layout, space=M.Left):
        def action(mem, gm):
            src, step = _load(mem, gm[16:48, 32:64], src_layout)
            step.run()
            return STEPS["block.move"]([_tile(mem, 32, 32, D.FP16, space, dst_layout), src], {})
        return action

    def store(layout):
        def action(mem, gm):
            src, step = _load(mem, gm[:32, :32], layout)
            step.run()
            return STEPS["block.store"]([GMRef(gm), src, [32, 16]], {})
        return action

    def product(lhs_layout, rhs_layout, dtype=D.FP16):
        def action(mem, gm):
            torch_dtype = torch.float16 if dtype is D.FP16 else torch.bfloat16
            lhs = _tile(mem, 32, 48, dtype, M.Left, lhs_layout)
            rhs = _tile(mem, 48, 32, dtype, M.Right, rhs_layout)
            lhs.write(gm[:32, :48].to(torch_dtype))
            rhs.write(gm[:48, 8:40].to(torch_dtype))
            dst = _tile(mem, 32, 32, D.FP32, M.Acc, L.NZ)
            return STEPS["block.matmul"]([dst, lhs, rhs], {})  # (compiled by `_outcome`)
        return action

    def accumulate(nan=False):
        def action(mem, gm):
            lhs = _tile(mem, 32, 48, D.FP16, M.Left, L.ZZ)
            rhs = _tile(mem, 48, 32, D.FP16, M.Right, L.ZN)
            lhs.write(gm[:32, :48])
            rhs.write(gm[:48, 8:40])
            acc = gm[48:80, 40:72].float()
            if nan:  # NaNs of two payloads meet in the sum: which one it keeps is torch's
                acc.view(torch.int32)[3, :] = 0x7FC01234
                lhs.write(gm[:32, :48].index_fill(1, torch.tensor([7]), float("nan")))
            dst = _tile(mem, 32, 32, D.FP32, M.Acc, L.NZ)
            dst.write(acc)
            return STEPS["block.matmul_acc"]([dst, dst, lhs, rhs], {})
        return action

    return {
        "product accumulated": accumulate(), "product accumulated over NaNs": accumulate(True),
        "load nZ": load(L.NZ), "load zN": load(L.ZN), "load ND": load(L.ND),
        "load DN": load(L.DN), "load nZ transposed": load(L.NZ, True),
        "move nZ->nZ": move(L.NZ, L.NZ), "move nZ->zZ": move(L.NZ, L.ZZ),
        "move nZ->zN (fractal transpose)": move(L.NZ, L.ZN, M.Right),
        "move ND->DN": move(L.ND, L.DN), "move ND->ND": move(L.ND, L.ND),
        "store nZ": store(L.NZ), "store ND": store(L.ND), "store DN": store(L.DN),
        "product zZ x zN": product(L.ZZ, L.ZN), "product nZ x nZ": product(L.NZ, L.NZ),
        "product bf16": product(L.ZZ, L.ZN, D.BF16),
    }


def _outcome(action, seed=0) -> list[torch.Tensor]:
    """The memory's buffers and the GM tensor after running the step `action` gives twice
    (the GM tensor changed in between: a step reads it as it is)."""
    mem = CoreMemory(soc(), "aic")
    gm = torch.randn(96, 96, generator=torch.Generator().manual_seed(seed)).half()
    step = action(mem, gm)
    assert step is not None
    step = compiled(step)  # (a tape compiles a copy step: `fusion.compiled`)
    step.run()
    gm.mul_(-2)
    step.run()
    return [*mem.buffers.values(), gm.view(torch.int16)]


@pytest.mark.parametrize("name", sorted(_scenarios()))
def test_tape_steps_copy_what_torch_copies(native, monkeypatch, name):
    action = _scenarios()[name]
    compiled = _outcome(action)
    assert native, "the step took no compiled copy"
    monkeypatch.setenv(settings.COPIES, "python")
    for got, want in zip(compiled, _outcome(action)):
        assert torch.equal(got, want)


def test_without_the_library_steps_keep_torch(monkeypatch):
    monkeypatch.setenv(settings.COPIES, "python")
    made = []
    monkeypatch.setattr(copies_native.LIBRARY, "declare", lambda lib: made.append(lib))
    assert copies_native.library() is None and copies_native.copier([]) is None
    mem = CoreMemory(soc(), "aic")
    _, step = _load(mem, torch.randn(32, 32).half(), L.NZ)
    assert step.copy is not None and compiled(step) is step  # its torch copy
    assert not made


def test_bad_extents_overlaps_and_collisions_have_no_record(native):
    base = torch.zeros(256, dtype=torch.float16)
    assert copies_native.record(base[:64], base[32:96]) is None  # shared bytes
    assert copies_native.record(base[:64], base[64:128]) is not None
    spread = torch.zeros(1, dtype=torch.float16).expand(64)  # every write on one element
    assert copies_native.record(spread, base[:64]) is None
    assert copies_native.record(base[:64].half(), base[:64].float()) is None  # fp32 → fp16
    scrambled = torch.zeros((3,) * 6).permute(1, 3, 5, 0, 2, 4)  # six levels, none merge
    assert copies_native.record(torch.zeros((3,) * 6), scrambled) is None
    shrunk = torch.zeros(128, dtype=torch.float16)
    tail, head = shrunk[64:], base[:64]
    assert copies_native.copier([(tail, head)]) is not None  # (its record kept)
    shrunk.untyped_storage().resize_(64)  # the view now reaches past its storage
    assert copies_native.record(tail, head) is None
    assert copies_native.copier([(base[64:128], head), (tail, head)]) is None


def test_a_step_keeps_its_views_alive(native):
    dst, src = torch.zeros(64, 16), torch.randn(64, 16).half()
    gone = weakref.ref(src)
    step = copies_native.copier([(dst.t(), src.t())])
    want = src.float()
    del src
    assert gone() is not None
    step.run()
    assert torch.equal(dst, want)


def test_a_step_bumps_its_destinations_version_as_a_torch_write_does(native):
    """A memory back from a launch is reset where its buffers' version counters moved
    (`launch._core_memory`): a compiled write must move them too."""
    buffer, src = torch.zeros(64, 32), torch.randn(64, 16).half()
    step = copies_native.copier([(buffer[:, 16:], src)])
    before = buffer._version
    step.run()
    assert buffer._version > before and torch.equal(buffer[:, 16:], src.float())


def _fused_leaves_the_same(make_steps, fuse, count: int, seed: int) -> None:
    """The buffers a memory has after running `make_steps(mem, gm)`'s steps twice are the same
    when `fuse` (`joined`, `chained`) first makes them one step of `count`."""
    def outcome(fused: bool) -> list[torch.Tensor]:
        mem = CoreMemory(soc(), "aic")
        gm = torch.randn(96, 96, generator=torch.Generator().manual_seed(seed)).half()
        steps = make_steps(mem, gm)
        if fused:
            steps, counts = fuse(steps)
            assert counts == [count]
        for _ in range(2):
            for step in steps:
                step.run()
        return list(mem.buffers.values())
    for got, want in zip(outcome(True), outcome(False)):
        assert torch.equal(got, want)


def test_a_run_of_copies_goes_into_the_product_after_it(native):
    """`fusion.joined`: copies, then a compiled product (its conversions, its sgemm and its
    accumulation in one call), run as one step, leave what running each leaves."""
    def steps(mem, gm):
        lhs, load_lhs = _load(mem, gm[:32, :48], L.NZ)
        rhs = _tile(mem, 48, 32, D.FP16, M.Mat, L.NZ, addr=8192)
        load_rhs = STEPS["block.load"]([rhs, GMRef(gm), [16, 40]], {})
        left = _tile(mem, 32, 48, D.FP16, M.Left, L.ZZ)
        right = _tile(mem, 48, 32, D.FP16, M.Right, L.ZN)
        moves = [STEPS["block.move"]([left, lhs], {}), STEPS["block.move"]([right, rhs], {})]
        dst = _tile(mem, 32, 32, D.FP32, M.Acc, L.NZ)
        dst.write(torch.ones(32, 32))
        made = [*map(compiled, [load_lhs, load_rhs, *moves,
                                STEPS["block.matmul_acc"]([dst, dst, left, right], {})])]
        assert made[-1].prefixed is not None, "no compiled product"
        return made
    _fused_leaves_the_same(steps, joined, 5, seed=5)


def test_a_chain_leaves_what_its_steps_leave_and_resumes_after_a_nan(native):
    """`fusion.chained`: loads and products accumulated in one call; the middle accumulation
    meets a NaN, is left to torch, and the call runs on from the next record."""
    def steps(mem, gm):
        lhs = _tile(mem, 32, 48, D.FP16, M.Left, L.ZZ)
        rhs = _tile(mem, 48, 32, D.FP16, M.Right, L.ZN)
        lhs.write(gm[:32, :48])
        rhs.write(gm[:48, 8:40])
        made = []
        for k in range(3):
            acc = gm[48:80, 40:72].float() * (k + 1)
            if k == 1:
                acc.view(torch.int32)[3, :] = 0x7FC01234
            dst = _tile(mem, 32, 32, D.FP32, M.Acc, L.NZ, addr=4096 * k)
            dst.write(acc)
            _, load = _load(mem, gm[k:k + 64, 32 * k:32 * k + 32], L.NZ)
            made += [compiled(load), compiled(STEPS["block.matmul_acc"]([dst, dst, lhs, rhs], {}))]
        return made
    _fused_leaves_the_same(steps, chained, 6, seed=3)


def test_products_are_compiled_unless_torchs_sgemm_is_missing_or_differs(native, monkeypatch):
    def is_compiled() -> bool:
        step = compiled(_scenarios()["product accumulated"](CoreMemory(soc(), "aic"),
                                                            torch.randn(96, 96).half()))
        return step.prefixed is not None
    assert is_compiled()
    with monkeypatch.context() as m:
        m.setattr(copies_native, "_same_as_torch", lambda *args: False)
        assert not is_compiled()
    monkeypatch.setattr(copies_native.library(), "sgemm", None)
    assert not is_compiled()
