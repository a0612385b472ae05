"""Every correct example kernel runs sanitized with zero findings and unchanged results, at the
shapes the backends' example tests use (`SMALL_CASES`: tails included), plus a launch with more
blocks than cores (blocks in waves share a physical core's memory: no false races)."""
from __future__ import annotations

import pytest
import torch

from pypto_pro.examples import SMALL_CASES, load
from pypto_pro.runtime.backends import use_backend
from pypto_pro.sanitizer import sanitize
from pypto_pro.soc import soc

WAVES = ("vector_add", "add_kernel", {"m": (soc().aiv_cores + 4) * 128, "n": 128})


@pytest.mark.parametrize("module,kernel,shape", [*SMALL_CASES, WAVES],
                         ids=[f"{m}-{k}-{i}" for i, (m, k, _) in enumerate([*SMALL_CASES, WAVES])])
def test_correct_example_has_no_findings(module, kernel, shape):
    m = load(module)
    k = m.KERNELS[kernel]
    args = m.make_inputs(**shape)
    with use_backend("sim"), sanitize():
        out = m.run(*args, kernel=k)
    report = k.last_result.sanitizer
    assert report is not None and len(report) == 0, report.text()
    expected = m.reference(*args)
    for got, want in zip(out if isinstance(out, tuple) else (out,),
                         expected if isinstance(expected, tuple) else (expected,)):
        torch.testing.assert_close(got.float(), want.float(), rtol=m.RTOL, atol=m.ATOL)
