"""The general IR optimisations never change a kernel's results: every example kernel gives
bit-identical outputs on the simulator with the optimisation passes on and off."""
from __future__ import annotations

import importlib

import pytest
import torch

from pypto_pro.errors import NotSupported
from pypto_pro.examples import load
from pypto_pro.passes import pipeline
from pypto_pro.runtime import backends

sim = pytest.importorskip("pypto_pro.runtime.backends.sim")
OPTIMISATIONS = {"constant_folding", "common_subexpression", "loop_invariant", "dead_code",
                 "redundant_mutex"}
EXAMPLES = [
    ("vector_add", "add_kernel", dict(m=256, n=384)),
    ("matmul", "matmul_kernel", dict(m=256, n=256)),
    ("softmax", "softmax_kernel", dict(rows=37, cols=300)),
    ("softmax", "softmax_declared_kernel", dict(rows=20, cols=128)),
    ("layernorm", "layernorm_kernel", dict(rows=50, cols=200)),
    ("matmul_softmax", "matmul_softmax_kernel", dict(n=128)),
    ("flash_attention", "flash_attention_kernel", dict(sq=256, skv=256)),
    ("hello_world", "hello_world_kernel", {}),
]


def _run(name: str, kernel_name: str, shape: dict) -> torch.Tensor:
    m = load(name)
    kernel = m.KERNELS[kernel_name]
    kernel.compiled_variants.clear()  # compile again with the current pipeline
    return m.run(*m.make_inputs(**shape, seed=11), kernel=kernel)


@pytest.fixture
def functional_sim(monkeypatch):
    monkeypatch.setattr(backends, "_factories", dict(backends._factories))
    monkeypatch.setattr(backends, "_instances", dict(backends._instances))
    backends.register_backend("opt-check", lambda: sim.SimBackend(functional_only=True))
    with backends.use_backend("opt-check"):
        yield


@pytest.mark.parametrize("name,kernel,shape", EXAMPLES, ids=[k for _, k, _ in EXAMPLES])
def test_optimisations_do_not_change_results(functional_sim, monkeypatch, name, kernel, shape):
    try:
        optimised = _run(name, kernel, shape)
    except NotSupported as e:
        pytest.skip(f"simulator: {e.message}")
    monkeypatch.setattr(pipeline, "PASSES", tuple(p for p in pipeline.PASSES
                                                  if p not in OPTIMISATIONS))
    plain = _run(name, kernel, shape)
    variants = load(name).KERNELS[kernel].compiled_variants
    compiled = next(iter(variants.values()))
    variants.clear()  # later tests compile with the full pipeline again
    ran = {r.name for records in compiled.passes.values() for r in records}
    assert not ran & OPTIMISATIONS  # the second compile really ran without them
    assert torch.equal(optimised, plain)


def test_pipeline_lists_every_optimisation():
    for name in OPTIMISATIONS:
        assert name in pipeline.PASSES
        assert importlib.import_module(f"pypto_pro.passes.{name}").NAME == name
