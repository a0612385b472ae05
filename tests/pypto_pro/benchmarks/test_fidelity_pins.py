"""Pinned simulated cycles of the fidelity cases (`benchmarks/fidelity_cases.py`): the
calibration GEMMs, the add's roofline case and every held-out case, each on the launch its
case pins (the full problem where it is small, else the same kernel and block count with a
shorter K loop: K = 256 / 1024 for the GEMMs, S1 ≤ 1024 for flash attention, a twelfth of the
rows for top-k). The simulator is deterministic, so any change to the cost model, the memory
model or the scheduler that moves one of these launches fails here: re-run
`benchmarks/bench_sim_fidelity.py`, report the new held-out errors and re-pin (and re-freeze
`FROZEN_PARAMS` when a SoC table number changed). The DSL kernels are also checked against
torch on small shapes."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
fc = pytest.importorskip("fidelity_cases")
fk = pytest.importorskip("fidelity_kernels")

from pypto_pro.runtime.backends import register_backend, use_backend  # noqa: E402
from pypto_pro.runtime.backends.sim import SimBackend  # noqa: E402

PINNED = {
    "gemm_fp16_6144": 185807,
    "gemm_mxfp8_6144": 166491,
    "add_8192x4096": 36759,
    "gemm_fp16_1536": 45872,
    "gemm_fp16_3072": 48323,
    "gemm_fp16_7680": 288920,
    "gemm_ar_a2": 59394,
    "flash_attention_1024": 35073,
    "flash_attention_2048": 35108,
    "flash_attention_4096": 70108,
    "flash_attention_8192": 68011,
    "flash_attention_16384": 134898,
    "topk_2304": 4895,
    "topk_3456": 6712,
    "topk_4800": 8529,
    "gemm_mxfp8_2048": 42103,
    "gemm_mxfp8_4096": 77311,
    "gemm_mxfp8_8192": 292303,
    "gemm_ar_a5": 47541,
}


def test_every_case_is_pinned():
    assert set(PINNED) == set(fc.BY_KEY)


def test_model_parameters_are_the_frozen_ones():
    assert fc.params_fingerprint() == fc.FROZEN_PARAMS, (
        "a SoC table number changed since the held-out cases were frozen at "
        f"{fc.FROZEN_COMMIT[:8]}: re-run bench_sim_fidelity.py, report the held-out errors, "
        "re-freeze")


@pytest.mark.parametrize("key", list(PINNED))
def test_simulated_cycles_are_pinned(key):
    case = fc.BY_KEY[key]
    run = fc.simulate(case, args=(case.pin_inputs or case.inputs)())
    assert run.cycles == PINNED[key]


for _soc in (fc.A3, fc.A5):
    register_backend(f"values-{_soc}", lambda s=_soc: SimBackend(soc_name=s, functional_only=True))


def _launch(kernel, blocks: int, args: tuple, soc: str = fc.A3) -> None:
    """Launch on the functional simulator; the kernel compiles without a warning (its aliases
    are views of one buffer, so verify_memory finds no two buffers sharing bytes)."""
    with use_backend(f"values-{soc}"):
        kernel[None, blocks](*args)
    assert [w for c in kernel.compiled_variants.values() for w in c.warnings] == []


def test_gemm_kernels_compute_the_product():
    a, b, c = fk.fp16_inputs(512, 1024, 512, seed=1)
    _launch(fk.make_gemm_fp16(256, 512), 4, (a, b, c))
    assert (c - a.float() @ b.float()).abs().max().item() < 1e-5
    a, bt, c = fk.tiles_inputs(384, 512, 512, seed=1)  # 6 tiles on 4 blocks: 2, 2, 1, 1
    _launch(fk.make_gemm_tiles(3, 2, 4), 4, (a, bt, c))
    assert torch.allclose(c.float(), a.float() @ bt.float().T, rtol=2e-3, atol=2e-3)


def test_mxfp8_gemm_is_within_one_bf16_ulp():
    a, b, sa, sb, c = fk.mx_inputs(256, 512, 2048, seed=1)
    _launch(fk.make_gemm_mxfp8(128, 256), 4, (a, b, sa, sb, c), fc.A5)
    ref = fk.mx_reference(a, b, sa, sb)
    ulp = torch.exp2(torch.floor(torch.log2(ref.abs().clamp_min(1e-30))) - 7)
    assert ((c.double() - ref).abs() / ulp).max().item() <= 1.0


@pytest.mark.parametrize("s0, s1", [(256, 2048), (128, 512)])
def test_flash_attention_fifo_matches_torch(s0, s1):
    args = fk.fa_inputs(s0, s1, seed=2)
    _launch(fk.make_flash_attention_fifo(), s0 // fk.FA_S0, args)
    assert (args[-1] - fk.fa_reference(*args[:3])).abs().max().item() < 2e-4


def test_topk_matches_torch():
    args = fk.topk_inputs(16, seed=3)
    _launch(fk.make_topk(), 2, args)
    values, indices = fk.topk_reference(args[0])
    assert torch.equal(args[2], values) and torch.equal(args[3], indices)


def test_roofline_check_is_two_sided():
    bounds = fc.Bounds(hbm_reads=80.0, hbm_all=120.0, l2_side=50.0, cube=0.0)
    assert fc.roofline_verdict(70.0, bounds).startswith("✗ below the HBM reads bound")
    assert "dirty in the L2" in fc.roofline_verdict(95.0, bounds)
    assert fc.roofline_verdict(130.0, bounds) == "✓"
    add = fc.BY_KEY["add_8192x4096"].bounds()  # 3 · 64 MiB at 1.6 TB/s; reads alone 2/3 of it
    assert round(add.hbm_all, 1) == 125.8 and round(add.hbm_reads, 1) == 83.9
