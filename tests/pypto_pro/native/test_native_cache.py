"""The native build through the on-disk cache, across processes: four processes launching the
same kernel at once into an empty cache build it (and the launcher) once and all get the right
result; a new process then launches it from the launch descriptor without parsing, running
passes or generating code (the compiler modules and the IR nodes are never imported); a damaged
`.so` is noticed and rebuilt."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

#: a process that launches a small kernel on the native backend and reports what it did
SCRIPT = textwrap.dedent('''
    import json, sys, torch
    import pypto_pro
    import pypto_pro.language as pl
    from pypto_pro.runtime.backends import native

    builds, launchers = [], []
    real = native._compile
    native._compile = lambda *a, **k: builds.append(1) or real(*a, **k)
    real_cxx = native._run_cxx
    native._run_cxx = lambda *a: (a[2] == native.LAUNCHER and launchers.append(1)) or real_cxx(*a)

    T = pl.TileType([16, 16], pl.DT_FP32)

    @pl.jit(arch="a5")
    def double(x: pl.Tensor[[16, 16], pl.DT_FP32], y: pl.Tensor[[16, 16], pl.DT_FP32]):
        with pl.section_vector():
            t = pl.make_tile(T, addr=0)
            pl.load(t, x, [0, 0])
            pl.system.bar_all()
            pl.add(t, t, t)
            pl.system.bar_all()
            pl.store(y, t, [0, 0])

    x = torch.arange(256, dtype=torch.float32).reshape(16, 16)
    y = torch.zeros(16, 16)
    with pypto_pro.use_backend("native"):
        double[None, 1](x, y)
    print(json.dumps({
        "ok": bool(torch.equal(y, x * 2)), "builds": len(builds), "launchers": len(launchers),
        "compiled_here": bool(double.compiled_variants),
        "compiler_imported": "pypto_pro.compiler" in sys.modules,
        "codegen_imported": "pypto_pro.codegen" in sys.modules,
        "ir_nodes_imported": "pypto_pro.ir.nodes" in sys.modules,
    }))
''')


def _start(cache: Path, script: Path) -> subprocess.Popen:
    env = dict(os.environ, PYPTOPRO_CACHE_DIR=str(cache))
    return subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)


def _report(proc: subprocess.Popen) -> dict:
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def shared_cache(tmp_path_factory):
    """A private cache the four concurrent cold processes filled (their reports too)."""
    root = tmp_path_factory.mktemp("native-cache")
    script = root / "launch_double.py"
    script.write_text(SCRIPT)
    cache = root / "cache"
    reports = [_report(p) for p in [_start(cache, script) for _ in range(4)]]
    return cache, script, reports


def test_concurrent_cold_processes_build_once(shared_cache):
    _, _, reports = shared_cache
    assert all(r["ok"] for r in reports)
    assert sum(r["builds"] for r in reports) == 1, reports
    assert sum(r["launchers"] for r in reports) == 1, reports


def test_a_new_process_launches_from_disk_without_compiling(shared_cache):
    cache, script, _ = shared_cache
    report = _report(_start(cache, script))
    assert report == {"ok": True, "builds": 0, "launchers": 0, "compiled_here": False,
                      "compiler_imported": False, "codegen_imported": False,
                      "ir_nodes_imported": False}


def test_a_damaged_library_is_rebuilt(shared_cache):
    cache, script, _ = shared_cache
    (so,) = cache.rglob("call_kernel_*.so")
    so.write_bytes(so.read_bytes()[: so.stat().st_size // 2])  # truncated
    report = _report(_start(cache, script))
    assert report["ok"] and report["builds"] == 1 and report["compiled_here"]
    again = _report(_start(cache, script))
    assert again["ok"] and again["builds"] == 0 and not again["compiled_here"]
