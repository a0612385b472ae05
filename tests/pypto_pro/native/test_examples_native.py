"""Every example kernel gives identical results on the simulator and on the native backend
(the generated C++ built with g++ against pypto_pro/include), and both match the example's
torch reference (the SIMT add examples included). Kernels the simulator does not run yet
(`NotSupported`) are checked against the reference only."""
from __future__ import annotations

import pytest
import torch

import pypto_pro
from pypto_pro.errors import NotSupported
from pypto_pro.examples import SMALL_CASES as CASES
from pypto_pro.examples import WORKSPACE_ARGS as WORKSPACES
from pypto_pro.examples import load


def _run(backend: str, name: str, kernel: str, shape: dict):
    m = load(name)
    args = m.make_inputs(**shape, seed=5)
    inputs = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
    with pypto_pro.use_backend(backend):
        out = m.run(*args, kernel=m.KERNELS[kernel])
    return m, args, inputs, out


@pytest.mark.parametrize("name,kernel,shape", CASES,
                         ids=[f"{k}-{'-'.join(map(str, s.values())) or 'default'}"
                              for _, k, s in CASES])
def test_native_equals_sim_and_reference(native_backend, sim_functional, name, kernel, shape,
                                         capsys):
    m, args, inputs, out = _run("native", name, kernel, shape)
    expected = m.reference(*args)
    assert out.dtype == expected.dtype and out.shape == expected.shape
    torch.testing.assert_close(out.float(), expected.float(), rtol=m.RTOL, atol=m.ATOL)
    for i, (before, after) in enumerate(zip(inputs, args)):
        if isinstance(after, torch.Tensor) and after is not out and i not in WORKSPACES.get(
                name, ()):
            assert torch.equal(before, after), f"argument {i} is an input: left unchanged"
    if name == "hello_world":
        assert "Hello World from PyPTO Pro!" in capsys.readouterr().out
    try:
        _, _, _, sim_out = _run(sim_functional, name, kernel, shape)
    except NotSupported:
        return  # the simulator has no result to compare with yet
    assert torch.equal(out, sim_out), (
        f"native and sim differ in {int((out != sim_out).sum())} elements "
        f"(max |diff| {float((out.float() - sim_out.float()).abs().max())})")
