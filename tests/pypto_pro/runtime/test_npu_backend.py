"""The npu backend without an NPU: toolchain errors, the bisheng command lines of spec §1.6,
building and caching the `.so` with a fake toolchain (a shell-script `bisheng`), argument
marshalling of spec §1.7 and the launch call through a fake `torch.npu` and a fake library."""
from __future__ import annotations

import ctypes
import os
import stat
import sys
import types
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch

import pypto_pro.language as pl
from pypto_pro.compiler import compile_kernel
from pypto_pro.errors import CompileError, InvalidType, KeyNotFound, RuntimeFailure
from pypto_pro.runtime.backends import LaunchRequest, get_backend
from pypto_pro.runtime.backends import npu
from pypto_pro.runtime.cache import KernelCache
from pypto_pro.runtime.kernel_def import Specialization
from pypto_pro.runtime.tiling_data import to_bytes


@dataclass
class NpuTiling:
    rows: int
    scale: float


@pl.jit(arch="a5")
def npu_kernel(x: pl.Tensor[[pl.DYNAMIC, 64], pl.DT_FP32], p: pl.Ptr[pl.DT_FP32],
               n: pl.DT_INT32, alpha: pl.DT_FP32, on: pl.DT_BOOL,
               y: pl.Tensor[[16, pl.DYNAMIC], pl.DT_FP32], t: NpuTiling):
    with pl.section_vector():
        a = pl.make_tile(pl.TileType([16, 64], pl.DT_FP32), addr=0)
        pl.load(a, x, [0, 0])
        pl.printf("%d\n", n + t.rows)
        pl.store(y, a, [0, 0])


@pytest.fixture
def compiled():
    return compile_kernel(npu_kernel.kernel_def, Specialization(arch="a5"))


@pytest.fixture
def toolchain_dir(tmp_path):
    """A fake CANN: include/lib64 dirs and a `bisheng` that logs its argv and writes -o."""
    root = tmp_path / "cann"
    for sub in ("include", "lib64", "bin"):
        (root / sub).mkdir(parents=True)
    script = root / "bin" / "bisheng"
    script.write_text(
        "#!/bin/sh\n"
        'echo "$@" >> "$FAKE_BISHENG_LOG"\n'
        'if [ -n "$FAKE_BISHENG_FAIL" ]; then echo "kernel.cpp:3: error: boom" >&2; exit 1; fi\n'
        'if [ -n "$FAKE_BISHENG_SLEEP" ]; then sleep "$FAKE_BISHENG_SLEEP"; fi\n'
        'while [ $# -gt 0 ]; do if [ "$1" = "-o" ]; then shift; printf "ELF %s" "$PWD" > "$1";'
        " fi; shift; done\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return root


@pytest.fixture
def fake_env(toolchain_dir, tmp_path, monkeypatch):
    log = tmp_path / "bisheng.log"
    monkeypatch.setenv("FAKE_BISHENG_LOG", str(log))
    env = {"ASCEND_TOOLKIT_HOME": str(toolchain_dir), "ASCEND_HOME_PATH": str(toolchain_dir),
           "PATH": f"{toolchain_dir / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"}
    return types.SimpleNamespace(env=env, log=log, root=toolchain_dir)


# ---------------------------------------------------------------- toolchain and commands


def test_missing_environment_gives_the_spec_errors(fake_env):
    env = dict(fake_env.env)
    with pytest.raises(KeyError):
        npu.toolchain({k: v for k, v in env.items() if k != "ASCEND_TOOLKIT_HOME"})
    with pytest.raises(KeyNotFound):
        npu.toolchain({k: v for k, v in env.items() if k != "ASCEND_TOOLKIT_HOME"})
    with pytest.raises(RuntimeError, match="ASCEND_HOME_PATH is not set"):
        npu.toolchain({k: v for k, v in env.items() if k != "ASCEND_HOME_PATH"})
    with pytest.raises(CompileError, match="bisheng not found"):
        npu.toolchain({**env, "PATH": str(fake_env.root / "include")})
    tools = npu.toolchain(env)
    assert tools.bisheng == str(fake_env.root / "bin" / "bisheng")


def test_a5_mix_command(fake_env):
    tools = npu.toolchain(fake_env.env)
    home = fake_env.root
    cmd = npu.bisheng_command(tools, "a5", "mix", True, "out.so")
    inc = str(npu.include_dir())
    assert cmd == [
        tools.bisheng, "--cce-aicore-arch=dav-c310", "-DREGISTER_BASE", "--cce-fatobj-link",
        "-fPIC", "-shared", "-xcce", "-O3", "-std=c++17", f"-I{home}/include",
        "--cce-enable-print", "-D_DEBUG", "-DCCEBlockMaxSize=1048576",
        "-DPTOAS_ENABLE_CCE_PRINT=1",
        f"-I{home}/include", f"-I{home}/pkg_inc", f"-I{home}/pkg_inc/runtime",
        f"-I{home}/pkg_inc/profiling", f"-I{home}/include/experiment/runtime",
        f"-I{home}/include/experiment/msprof", f"-I{home}/pkg_inc/runtime/runtime", f"-I{inc}",
        "-mllvm", "-cce-aicore-stack-size=0x8000",
        "-mllvm", "-cce-aicore-function-stack-size=0x8000",
        "-mllvm", "-cce-aicore-record-overflow=false", "-mllvm", "-cce-aicore-addr-transform",
        "-mllvm", "-cce-aicore-dcci-insert-for-scalar=false", "--cce-auto-sync=off",
        "-O3", "--cce-disable-kernel-global-attr-check", "-Wno-parentheses-equality",
        "-Wno-unused-command-line-argument", "-Werror", "-Wno-cce-compat",
        "-mllvm", "-tile-fusion-skip-reduceop-fusion=true",
        "-mllvm", "-tile-fusion-skip-legality-check=false", "--enable-pto-tile-fusion",
        "-Wno-c++20-extensions",
        "call_kernel.cpp", "-L", f"{home}/lib64/", "-lruntime", "-lprofapi", "-o", "out.so"]
    assert inc.endswith(os.path.join("pypto_pro", "include"))


@pytest.mark.parametrize("arch,ktype,target,macro", [
    ("a5", "aiv", "dav-c310-vec", "-DREGISTER_BASE"),
    ("a5", "aic", "dav-c310-cube", "-DREGISTER_BASE"),
    ("a3", "mix", "dav-c220", "-DMEMORY_BASE"),
    ("a2", "aiv", "dav-c220-vec", "-DMEMORY_BASE"),
])
def test_commands_per_arch_and_kernel_type(fake_env, arch, ktype, target, macro):
    cmd = npu.bisheng_command(npu.toolchain(fake_env.env), arch, ktype, False, "o.so")
    assert cmd[1:3] == [f"--cce-aicore-arch={target}", macro]
    assert ("--cce-fatobj-link" in cmd) == (ktype == "mix")
    assert "--cce-enable-print" not in cmd
    assert ("--enable-pto-tile-fusion" in cmd) == (arch == "a5")
    assert cmd[-7:] == ["call_kernel.cpp", "-L", f"{fake_env.root}/lib64/", "-lruntime",
                        "-lprofapi", "-o", "o.so"]


# ---------------------------------------------------------------- building the library


def test_library_is_built_once_and_cached(compiled, fake_env, tmp_path):
    cache = KernelCache(tmp_path / "cache")
    backend = npu.NpuBackend(cache=cache, env=fake_env.env)
    path = backend.library(compiled)
    assert path.name.startswith("call_kernel_") and path.suffix == ".so" and len(path.stem) == 24
    assert path.read_bytes() == f"ELF {path.parent}".encode()  # compiled in the entry dir
    entry = cache.get(path.parent.name)
    assert set(entry.files) == {"kernel.cpp", "NpuTiling_tiling.h", "call_kernel.cpp",
                                path.name}
    calls = fake_env.log.read_text().splitlines()
    assert len(calls) == 1 and "--cce-enable-print" in calls[0]  # the kernel prints
    assert "--cce-aicore-arch=dav-c310-vec" in calls[0]
    # a new backend (as in a fresh process) reuses the cached library
    again = npu.NpuBackend(cache=cache, env=fake_env.env).library(
        compile_kernel(npu_kernel.kernel_def, Specialization(arch="a5")))
    assert again == path and len(fake_env.log.read_text().splitlines()) == 1


def test_compile_failure_and_timeout(compiled, fake_env, tmp_path, monkeypatch):
    backend = npu.NpuBackend(cache=KernelCache(tmp_path / "c1"), env=fake_env.env)
    monkeypatch.setenv("FAKE_BISHENG_FAIL", "1")
    with pytest.raises(CompileError, match="Failed to compile kernel 'npu_kernel'") as err:
        backend.library(compiled)
    assert "boom" in str(err.value)
    monkeypatch.delenv("FAKE_BISHENG_FAIL")
    monkeypatch.setenv("FAKE_BISHENG_SLEEP", "5")
    kdef = npu_kernel.kernel_def
    slow = compile_kernel(kdef.replace(options=kdef.options.replace(compile_timeout=1)),
                          Specialization(arch="a5"))
    backend = npu.NpuBackend(cache=KernelCache(tmp_path / "c2"), env=fake_env.env)
    with pytest.raises(CompileError, match="longer than 1 s"):
        backend.library(slow)


# ---------------------------------------------------------------- arguments and launch


def _request(compiled, stream=None):
    x = torch.randn(32, 64)
    p = torch.zeros(8)
    y = torch.zeros(16, 48)
    tiling = NpuTiling(rows=3, scale=0.5)
    return LaunchRequest(compiled, 4, stream, (x, p, 7, 1.5, True, y, tiling), (32, 48),
                         to_bytes(tiling))


def test_marshal_args(compiled):
    request = _request(compiled)
    params = compiled.programs["vector"].kernel.params
    args, keep = npu.marshal_args(request, params)
    x, p, _, _, _, y, _ = request.args
    assert [type(a) for a in args] == [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int32,
                                       ctypes.c_float, ctypes.c_bool, ctypes.c_void_p,
                                       ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64]
    assert args[0].value == x.data_ptr() and args[1].value == p.data_ptr()
    assert args[2].value == 7 and args[3].value == 1.5 and args[4].value is True
    assert args[5].value == y.data_ptr()
    tiling = keep[0]
    assert tiling.dtype == torch.uint8 and bytes(tiling.tolist()) == request.tiling_bytes
    assert args[6].value == tiling.data_ptr()
    assert [a.value for a in args[7:]] == [32, 48]
    null = LaunchRequest(compiled, 1, None, (None, None, 0, 0.0, False, y, NpuTiling(1, 1.0)),
                         (0, 48), to_bytes(NpuTiling(1, 1.0)))
    args, _ = npu.marshal_args(null, params)
    assert args[0].value is None and args[1].value is None  # null tensor / pointer


def test_fp16_scalar_has_no_ctypes_mapping():
    from pypto_pro.ir.dtype import DataType

    with pytest.raises(InvalidType, match="FP16/BF16 scalars are not supported"):
        npu.scalar_ctype(DataType.FP16)


class _FakeFunction:
    """Stands in for a ctypes foreign function: records calls, accepts `restype`."""

    def __init__(self, calls: list):
        self.calls = calls
        self.restype = ctypes.c_int

    def __call__(self, *args):
        self.calls.append(args)


class _FakeLib:
    def __init__(self):
        self.calls = []
        self.call_kernel = _FakeFunction(self.calls)


@pytest.fixture
def fake_npu(monkeypatch):
    """A fake torch_npu module and torch.npu namespace with a current stream."""
    stream = types.SimpleNamespace(_as_parameter_=ctypes.c_void_p(0x5000))
    fake = types.SimpleNamespace(current_stream=lambda: stream, current_device=lambda: 0,
                                 is_available=lambda: True)
    monkeypatch.setitem(sys.modules, "torch_npu", types.ModuleType("torch_npu"))
    monkeypatch.setattr(torch, "npu", fake, raising=False)
    return stream


def test_launch_calls_call_kernel(compiled, fake_env, tmp_path, monkeypatch, fake_npu):
    lib = _FakeLib()
    loaded = []
    monkeypatch.setattr(npu.ctypes, "CDLL", lambda path: loaded.append(path) or lib)
    backend = npu.NpuBackend(cache=KernelCache(tmp_path / "c"), env=fake_env.env)
    result = backend.launch(_request(compiled))
    assert result.backend == "npu" and result.trace is None and result.printed == {}
    (args,) = lib.calls
    assert lib.call_kernel.restype is None
    assert isinstance(args[0], ctypes.c_uint32) and args[0].value == 4
    assert args[1] is fake_npu._as_parameter_  # the current stream
    assert len(args) == 2 + 9
    backend.launch(_request(compiled, stream=types.SimpleNamespace(npu_stream=0x77)))
    assert lib.calls[1][1].value == 0x77
    assert len(loaded) == 1, "the library is loaded once per process"


def test_launch_without_torch_npu_fails_clearly(compiled, fake_env, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch_npu", None)  # import raises ImportError
    monkeypatch.setattr(npu.ctypes, "CDLL", lambda path: _FakeLib())
    backend = npu.NpuBackend(cache=KernelCache(tmp_path / "c"), env=fake_env.env)
    with pytest.raises(RuntimeFailure, match="needs torch_npu"):
        backend.launch(_request(compiled))


def test_registered_as_npu(monkeypatch):
    from pypto_pro.runtime import backends

    monkeypatch.setattr(backends, "_instances", {})
    assert isinstance(get_backend("npu"), npu.NpuBackend)
    assert "NOT RUN ON HARDWARE" in npu.__doc__
    assert Path(npu.__file__).name == "npu.py"
