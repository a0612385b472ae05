"""The example kernels give the right numbers: each runs on the simulator in functional mode
(values and synchronisation, no timing) and matches its torch `reference` within the module's
tolerance (the SIMT add examples included). Skipped while the simulator backend is missing; a
feature the simulator reports as not supported yet (`NotSupported`) skips that case."""
from __future__ import annotations

import pytest
import torch

from pypto_pro.errors import NotSupported
from pypto_pro.examples import SMALL_CASES as CASES
from pypto_pro.examples import WORKSPACE_ARGS as WORKSPACES
from pypto_pro.examples import load
from pypto_pro.runtime import backends

sim = pytest.importorskip("pypto_pro.runtime.backends.sim",
                          reason="the simulator backend is not available")



@pytest.fixture
def functional_sim(monkeypatch):
    monkeypatch.setattr(backends, "_factories", dict(backends._factories))
    monkeypatch.setattr(backends, "_instances", dict(backends._instances))
    backends.register_backend("examples-functional",
                              lambda: sim.SimBackend(functional_only=True))
    with backends.use_backend("examples-functional"):
        yield


@pytest.mark.parametrize("name,kernel,shape", CASES,
                         ids=[f"{k}-{'-'.join(map(str, s.values())) or 'default'}"
                              for _, k, s in CASES])
def test_example_matches_reference(functional_sim, name, kernel, shape, capsys):
    m = load(name)
    args = m.make_inputs(**shape, seed=5)
    inputs = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
    expected = m.reference(*args)
    try:
        out = m.run(*args, kernel=m.KERNELS[kernel])
    except NotSupported as e:
        pytest.skip(f"simulator: {e.message}")
    assert out.dtype == expected.dtype and out.shape == expected.shape
    torch.testing.assert_close(out.float(), expected.float(), rtol=m.RTOL, atol=m.ATOL)
    for i, (before, after) in enumerate(zip(inputs, args)):
        if isinstance(after, torch.Tensor) and after is not out and i not in WORKSPACES.get(
                name, ()):
            assert torch.equal(before, after), f"argument {i} is an input: left unchanged"
    if name == "hello_world":
        assert "Hello World from PyPTO Pro!" in capsys.readouterr().out
