"""The runtime hooks the workbench observes launches and compiles through:
`pypto_pro.runtime.profile.observe_launches` (a call before the backend runs each request and
one with its result) and `pypto_pro.compiler.observe_compile` (a call before every pass)."""
from __future__ import annotations

import pytest
import torch

import pypto_pro
from pypto_pro.compiler import observe_compile
from pypto_pro.examples import load
from pypto_pro.runtime.profile import observe_launches


class _Observer:
    def __init__(self) -> None:
        self.events: list[tuple] = []

    def launch_started(self, name, request):
        self.events.append(("start", name, request.block_dim, request))

    def launch_finished(self, name, request, result):
        self.events.append(("end", name, request.block_dim, request, result))


def test_launch_observers_see_request_then_result_and_nest():
    m = load("vector_add")
    x, y, z = m.make_inputs(256, 256)
    outer, inner = _Observer(), _Observer()
    with observe_launches(outer), pypto_pro.profile() as prof:
        with observe_launches(inner):
            m.add_kernel[None, 2](x, y, z)
        m.add_kernel[None, 1](x, y, z)
    assert torch.equal(z, x + y)
    name = "add_kernel_d2"  # the example's kernel name (jit `name=`)
    assert [e[:3] for e in outer.events] == [("start", name, 2), ("end", name, 2),
                                             ("start", name, 1), ("end", name, 1)]
    assert [e[:3] for e in inner.events] == [("start", name, 2), ("end", name, 2)]
    start, end = outer.events[:2]
    assert start[3] is end[3] and end[3].args[0] is x  # the same LaunchRequest
    assert end[4] is prof.results[0] and prof.requests[0] is end[3]
    m.add_kernel[None, 1](x, y, z)  # outside: nobody is told
    assert len(outer.events) == 4


def test_a_failed_launch_is_started_but_never_finished():
    class Failing:
        name = "failing"

        def launch(self, request):
            raise RuntimeError("device lost")

    from pypto_pro.runtime.backends import register_backend, use_backend

    m = load("vector_add")
    x, y, z = m.make_inputs(128, 128)
    register_backend("failing", Failing)
    seen = _Observer()
    with observe_launches(seen), use_backend("failing"), pytest.raises(RuntimeError):
        m.add_kernel[None, 1](x, y, z)
    assert [e[0] for e in seen.events] == ["start"]


def test_compile_observers_are_called_before_every_pass():
    from pypto_pro.runtime.arch import resolve_arch
    from pypto_pro.runtime.kernel_def import Specialization

    kernel = load("vector_add").make_add_kernel(2)
    calls: list[tuple] = []
    with observe_compile(lambda *a: calls.append(a)):
        compiled = kernel.compile(Specialization(arch=resolve_arch(None)))
    records = compiled.passes["vector"]
    assert [c[2] for c in calls] == records.names()[1:]  # record 0 is the parse
    assert {c[1] for c in calls} == {"vector"} and calls[0][0] == compiled.name
    assert [c[3] for c in calls] == list(range(1, len(calls) + 1))
    assert {c[4] for c in calls} == {len(calls)}


def test_progress_of_a_cell_names_the_pass_and_the_launch(add_body):
    from pypto_lab.cell import register_cell, run_cell
    from pypto_lab.options import CellOptions
    from pypto_lab.progress import Progress

    shown: list[str] = []

    class Recording(Progress):
        def _show(self) -> None:
            if self._open:
                shown.append(self._open[-1][0] + (f" ({self._detail})" if self._detail else ""))

    ns: dict = {}
    exec("import torch\nimport pypto_pro.language as pl\nTILE = 128\n"
         "tt = pl.TileType([TILE, TILE], pl.DT_FP16, pl.MemorySpace.Vec)\n"
         "x = torch.randn(128, 128, dtype=torch.float16)\ny = x.clone()\n"
         "z = torch.zeros_like(x)", ns)
    body = add_body + "add_kernel[None, 1](x, y, z)\n"
    source, code = register_cell(body)
    result = run_cell(body, CellOptions(interactive=False), ns, source, code,
                      progress=Recording())
    assert result.launches and any("vector: pass 3/" in s for s in shown)
    assert "simulate add_kernel[None, 1]" in shown
    stages = [name for name, _ in result.stages]
    assert stages.index("simulate add_kernel[None, 1]") < stages.index("run cell")
