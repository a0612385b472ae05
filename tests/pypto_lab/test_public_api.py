"""The notebook layer uses only the public `pypto_pro` API, and that API does what it says:
`kernel.compile(*args) -> Compiled`, `kernel.last_trace`, `use_backend(..., soc=, mode=)`,
`use_arch`, `profile(...)` with progress callbacks, one compile cache keyed like the disk cache."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest
import torch

import pypto_pro
import pypto_pro.language as pl
from pypto_pro.errors import InvalidArgument

LAB = Path(__file__).resolve().parents[2] / "pypto_lab"
#: the modules a tool may import from pypto_pro: the package and its public subpackages
PUBLIC = {"pypto_pro", "pypto_pro.language", "pypto_pro.errors", "pypto_pro.trace",
          "pypto_pro.sanitizer", "pypto_pro.examples"}


def test_pypto_lab_imports_only_the_public_api():
    found = {}
    for path in LAB.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            for name in names:
                if name.split(".")[0] == "pypto_pro":
                    found.setdefault(name, set()).add(path.name)
    private = {m: sorted(files) for m, files in found.items() if m not in PUBLIC}
    assert private == {}
    assert "pypto_pro" in found


def test_both_packages_are_typed():
    assert (LAB / "py.typed").exists() and (LAB.parent / "pypto_pro" / "py.typed").exists()


TT = pl.TileType([64, 64], pl.DT_FP16, pl.MemorySpace.Vec)


def make_kernel():
    @pl.jit
    def twice(x: pl.Tensor[[pl.DYNAMIC, pl.DYNAMIC], pl.DT_FP16],
              z: pl.Output[pl.Tensor[[pl.DYNAMIC, pl.DYNAMIC], pl.DT_FP16]]):
        with pl.section_vector():
            a = pl.make_tile(TT, addr=0x0)
            c = pl.make_tile(TT, addr=0x2000)
            pl.load(a, x, [0, 0])
            pl.system.sync_src(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.V, event_id=0)
            pl.system.sync_dst(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.V, event_id=0)
            pl.add(c, a, a)
            pl.system.sync_src(set_pipe=pl.PipeType.V, wait_pipe=pl.PipeType.MTE3, event_id=0)
            pl.system.sync_dst(set_pipe=pl.PipeType.V, wait_pipe=pl.PipeType.MTE3, event_id=0)
            pl.store(z, c, [0, 0])

    return twice


def test_compile_gives_passes_ir_and_generated_code():
    kernel = make_kernel()
    x = torch.randn(64, 64).half()
    compiled = kernel.compile(x, torch.empty_like(x))
    assert isinstance(compiled, pypto_pro.Compiled) and compiled.name == "twice"
    assert compiled.kernel_type == "aiv" and compiled.targets == ["vector"]
    assert compiled.passes["vector"].names()[0] == "parse"
    assert "@block.add" in compiled.ir and "@block.add" in compiled.ir_after("verify")
    assert "block.add" in compiled.ir_after("parse", concise=True)
    assert "kernel.cpp" in compiled.cce and "call_kernel.cpp" in compiled.cce
    assert [(p.name, p.output) for p in compiled.parameters] == [("x", False), ("z", True)]
    assert compiled.footprint == {"Vec": 0x4000, "total": 0x4000}
    assert kernel.variants == [compiled]
    assert kernel.compile() is compiled  # no STATIC dims: the same specialisation


def test_a_redefined_kernel_is_served_from_the_compile_cache_until_forced():
    first = make_kernel().compile()
    passes = []
    with pypto_pro.profile(on_pass=lambda *a: passes.append(a)):
        again = make_kernel().compile()
        assert again is first and passes == []
        fresh = make_kernel().compile(force=True)
    assert fresh is not first and len(passes) == fresh.pass_count


def test_a_kernel_with_static_dims_needs_its_arguments():
    @pl.jit
    def fixed(x: pl.Tensor[[pl.STATIC, 64], pl.DT_FP16]):
        with pl.section_vector():
            a = pl.make_tile(TT, addr=0x0)
            pl.load(a, x, [0, 0])

    assert fixed.needs_arguments
    with pytest.raises(InvalidArgument, match="fixed.compile"):
        fixed.compile()
    assert fixed.compile(torch.zeros(128, 64).half()).name == "fixed"


def test_use_backend_configures_the_simulator_and_profile_reports_launches():
    kernel = make_kernel()
    x = torch.randn(64, 64).half()
    z = torch.empty_like(x)
    seen = []
    with pypto_pro.use_backend("sim", soc="910B1", mode="timed") as name, \
            pypto_pro.profile(on_launch=lambda n, bd: seen.append((n, bd)),
                              on_launch_end=lambda n: seen.append(n)) as prof:
        kernel[None, 1](x, z)
    assert name == "sim@Ascend910B1/timed"
    assert seen == [("twice", 1), "twice"]
    (launch,) = prof.launches
    assert launch.compiled is kernel.variants[0] and launch.block_dim == 1
    assert launch.result.trace.meta.soc == "Ascend910B1"
    assert kernel.last_trace is launch.result.trace
    assert torch.equal(z, x + x)
    with pypto_pro.use_backend("sim", mode="functional"):
        kernel[None, 1](x, z)
    assert kernel.last_trace is None


@pytest.mark.parametrize("kwargs,message", [
    ({"soc": "no-such-soc"}, "no-such-soc"), ({"mode": "fast"}, "unknown simulator mode"),
])
def test_bad_simulator_settings_fail_before_any_launch(kwargs, message):
    with pytest.raises(InvalidArgument, match=message):
        with pypto_pro.use_backend("sim", **kwargs):
            pass


def test_use_arch_sets_the_arch_of_the_block():
    kernel = make_kernel()
    with pypto_pro.use_arch("3510"):
        assert kernel.compile().arch == "a5"
    with pytest.raises(InvalidArgument, match="Unsupported arch"):
        with pypto_pro.use_arch("a9"):
            pass
