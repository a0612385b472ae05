"""The `npu` backend: bisheng builds `call_kernel_<hash12>.so`, ctypes launches it on torch_npu.
NOT RUN ON HARDWARE HERE: it was written from the spec (§1.6 compile configuration, §1.7
launch) and is tested only with a fake toolchain directory, a fake `bisheng` and a fake
`torch.npu`; nothing in this repository has executed it on an Ascend device. A launch: the
kernel's cache key (`runtime.cache.cache_key`, backend "npu", the arch) names an entry holding
the generated sources (`codegen.generate`); under the entry's lock the `.so` is built when
missing — `bisheng <arch flags> <common> [print flags] <runtime includes> <llvm args>
call_kernel.cpp <link args> -o <tmp>` in the entry directory, within the kernel's
`compile_timeout` — and added as `call_kernel_<sha256[:12]>.so`. The library is loaded with
`ctypes.CDLL` (once per path per process) and called as `call_kernel(block_dim, stream, *args)`
on the given or current `torch.npu` stream: tensors, pointers and the TilingData (its bytes
copied to a device uint8 tensor) as `c_void_p(data_ptr)`, scalars as the ctypes of their dtype,
then every DYNAMIC dim as `c_int64` in first-occurrence order; the launch is asynchronous.
`torch_npu` is imported only inside functions; its import failures (ImportError, OSError,
RuntimeError) become a clear `RuntimeFailure`.
"""
from __future__ import annotations

import ctypes
import logging
import os
import shutil
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import CompileError, InvalidType, KeyNotFound, RuntimeFailure
from ...ir.dtype import DataType
from ...ir.types import PtrType, ScalarType, StructType, TensorType
from ..cache import KernelCache, cache_key, sha256_bytes
from . import LaunchRequest, LaunchResult, register_backend

log = logging.getLogger(__name__)

DEFAULT_COMPILE_TIMEOUT = 600
_ARCH = {"a5": "dav-c310", "a3": "dav-c220", "a2": "dav-c220"}
_ARCH_SUFFIX = {"mix": "", "aic": "-cube", "aiv": "-vec"}
_CTYPES = {
    DataType.FP32: ctypes.c_float, DataType.BOOL: ctypes.c_bool, DataType.INDEX: ctypes.c_int64,
    DataType.INT8: ctypes.c_int8, DataType.INT16: ctypes.c_int16, DataType.INT32: ctypes.c_int32,
    DataType.INT64: ctypes.c_int64, DataType.UINT8: ctypes.c_uint8,
    DataType.UINT16: ctypes.c_uint16, DataType.UINT32: ctypes.c_uint32,
    DataType.UINT64: ctypes.c_uint64,
}
COMMON_FLAGS = ("-fPIC", "-shared", "-xcce", "-O3", "-std=c++17")
PRINT_FLAGS = ("--cce-enable-print", "-D_DEBUG", "-DCCEBlockMaxSize=1048576",
               "-DPTOAS_ENABLE_CCE_PRINT=1")
LLVM_FLAGS = ("-mllvm", "-cce-aicore-stack-size=0x8000",
              "-mllvm", "-cce-aicore-function-stack-size=0x8000",
              "-mllvm", "-cce-aicore-record-overflow=false",
              "-mllvm", "-cce-aicore-addr-transform",
              "-mllvm", "-cce-aicore-dcci-insert-for-scalar=false",
              "--cce-auto-sync=off")
ARCH_LLVM_FLAGS = ("-O3", "--cce-disable-kernel-global-attr-check", "-Wno-parentheses-equality",
                   "-Wno-unused-command-line-argument", "-Werror", "-Wno-cce-compat")
A5_LLVM_FLAGS = ("-mllvm", "-tile-fusion-skip-reduceop-fusion=true",
                 "-mllvm", "-tile-fusion-skip-legality-check=false",
                 "--enable-pto-tile-fusion", "-Wno-c++20-extensions")
RUNTIME_INCLUDES = ("include", "pkg_inc", "pkg_inc/runtime", "pkg_inc/profiling",
                    "include/experiment/runtime", "include/experiment/msprof",
                    "pkg_inc/runtime/runtime")


@dataclass(frozen=True)
class Toolchain:
    """Where CANN lives: `ASCEND_TOOLKIT_HOME` (pto-isa headers), `ASCEND_HOME_PATH`, bisheng."""

    toolkit_home: Path
    ascend_home: Path
    bisheng: str


def toolchain(env: dict[str, str] | None = None) -> Toolchain:
    """The toolchain from the environment, with the spec's errors when it is incomplete."""
    env = os.environ if env is None else env
    if "ASCEND_TOOLKIT_HOME" not in env:
        raise KeyNotFound("ASCEND_TOOLKIT_HOME is not set (the pto-isa headers live in "
                          "$ASCEND_TOOLKIT_HOME/include)", module="PRO_COMPILE")
    if not env.get("ASCEND_HOME_PATH"):
        raise RuntimeFailure("ASCEND_HOME_PATH is not set", module="PRO_COMPILE",
                             hint="source the CANN set_env.sh before compiling for the NPU")
    bisheng = shutil.which("bisheng", path=env.get("PATH", os.defpath))
    if bisheng is None:
        raise CompileError("bisheng not found on PATH", module="PRO_COMPILE",
                           hint="source the CANN set_env.sh, or pick the sim backend")
    return Toolchain(Path(env["ASCEND_TOOLKIT_HOME"]), Path(env["ASCEND_HOME_PATH"]), bisheng)


def include_dir() -> Path:
    """`pypto_pro/include` (pypto_tprint.h and the other headers the kernels include)."""
    return Path(__file__).resolve().parents[2] / "include"


def bisheng_command(tools: Toolchain, arch: str, kernel_type: str, uses_print: bool,
                    output: str, source: str = "call_kernel.cpp") -> list[str]:
    """The bisheng command line of spec §1.6, in its documented order."""
    if arch not in _ARCH:
        raise RuntimeFailure(f"Unsupported arch {arch!r} for the NPU build", module="PRO_COMPILE")
    cmd = [tools.bisheng, f"--cce-aicore-arch={_ARCH[arch]}{_ARCH_SUFFIX[kernel_type]}",
           "-DREGISTER_BASE" if arch == "a5" else "-DMEMORY_BASE"]
    if kernel_type == "mix":
        cmd.append("--cce-fatobj-link")
    cmd += [*COMMON_FLAGS, f"-I{tools.toolkit_home / 'include'}"]
    if uses_print:
        cmd += PRINT_FLAGS
    cmd += [f"-I{tools.ascend_home / sub}" for sub in RUNTIME_INCLUDES]
    cmd.append(f"-I{include_dir()}")
    cmd += [*LLVM_FLAGS, *ARCH_LLVM_FLAGS, *(A5_LLVM_FLAGS if arch == "a5" else ())]
    cmd += [source, "-L", f"{tools.ascend_home / 'lib64'}/", "-lruntime", "-lprofapi",
            "-o", output]
    return cmd


def compile_library(artifacts: Any, workdir: Path, tools: Toolchain, timeout: int,
                    kernel: str) -> bytes:
    """Run bisheng on the sources in `workdir`; the bytes of the built library."""
    with tempfile.TemporaryDirectory(prefix=".call_kernel.", dir=workdir) as tmp:
        output = str(Path(tmp) / f".call_kernel.{os.getpid()}.so")
        cmd = bisheng_command(tools, artifacts.arch, artifacts.kernel_type,
                              artifacts.uses_print, output)
        log.info("compiling kernel %r: %s", kernel, " ".join(cmd))
        try:
            done = subprocess.run(cmd, cwd=workdir, capture_output=True, text=True,
                                  timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            raise CompileError(f"Failed to compile kernel '{kernel}': bisheng took longer than "
                               f"{timeout} s", module="PRO_COMPILE",
                               hint="raise @pl.jit(compile_timeout=...)") from None
        except OSError as e:
            raise CompileError(f"Failed to compile kernel '{kernel}': {e}",
                               module="PRO_COMPILE") from e
        if done.returncode != 0 or not os.path.exists(output):
            log.error("bisheng failed for %r:\n%s\n%s", kernel, done.stdout, done.stderr)
            tail = "\n".join((done.stderr or done.stdout or "").strip().splitlines()[-20:])
            raise CompileError(f"Failed to compile kernel '{kernel}'", module="PRO_COMPILE",
                               note=tail or None)
        return Path(output).read_bytes()


def library_name(data: bytes) -> str:
    return f"call_kernel_{sha256_bytes(data)[:12]}.so"


def _library_in(entry: Any) -> str | None:
    """The `.so` an entry already holds, if any."""
    if entry is None:
        return None
    return next((n for n in sorted(entry.files) if n.startswith("call_kernel_")
                 and n.endswith(".so")), None)


# ---------------------------------------------------------------- arguments (spec §1.7)


def scalar_ctype(dtype: DataType) -> type:
    try:
        return _CTYPES[dtype]
    except KeyError:
        raise InvalidType(f"No ctypes mapping for scalar dtype {dtype!r}; FP16/BF16 scalars "
                          "are not supported.", module="PRO_RUNTIME") from None


def marshal_args(request: LaunchRequest, params: tuple) -> tuple[list[Any], list[Any]]:
    """(ctypes arguments after blockDim and stream, objects to keep alive for the launch)."""
    args: list[Any] = []
    keep: list[Any] = []
    n = len(request.args)
    for p, value in zip(params[:n], request.args):
        t = p.type
        if isinstance(t, (TensorType, PtrType)):
            args.append(ctypes.c_void_p(None if value is None else value.data_ptr()))
        elif isinstance(t, StructType):
            tiling = _device_bytes(request.tiling_bytes or b"", request.args)
            keep.append(tiling)
            args.append(ctypes.c_void_p(tiling.data_ptr()))
        elif isinstance(t, ScalarType):
            args.append(scalar_ctype(t.dtype)(value))
        else:
            raise InvalidType(f"parameter '{p.name}': no launch ABI for {type(t).__name__}",
                              module="PRO_RUNTIME")
    args += [ctypes.c_int64(int(d)) for d in request.dyn_dims]
    return args, keep


def _device_bytes(data: bytes, args: tuple) -> Any:
    """The TilingData bytes as a uint8 tensor on the launch's device."""
    import torch

    device = next((a.device for a in args if isinstance(a, torch.Tensor)), None)
    if device is None:
        device = f"npu:{_torch_npu().current_device()}"
    host = torch.frombuffer(bytearray(data), dtype=torch.uint8) if data else \
        torch.zeros(1, dtype=torch.uint8)
    return host.to(device)


def _torch_npu() -> Any:
    """`torch.npu` after importing torch_npu (which registers it)."""
    try:
        import torch_npu  # noqa: F401
    except (ImportError, OSError, RuntimeError) as e:
        raise RuntimeFailure(f"the npu backend needs torch_npu: {e}", module="PRO_RUNTIME",
                             hint="install torch-npu with CANN, or use the sim backend") from e
    import torch

    npu = getattr(torch, "npu", None)
    if npu is None:
        raise RuntimeFailure("torch_npu imported but torch.npu is missing", module="PRO_RUNTIME")
    return npu


def stream_handle(stream: Any) -> Any:
    """The raw stream pointer of `stream` (None: the current torch.npu stream)."""
    if stream is None:
        stream = _torch_npu().current_stream()
    handle = getattr(stream, "_as_parameter_", None)
    if handle is not None:
        return handle
    raw = getattr(stream, "npu_stream", None)
    if raw is None:
        raise InvalidType(f"not an NPU stream: {stream!r}", module="PRO_RUNTIME")
    return ctypes.c_void_p(int(raw))


# ---------------------------------------------------------------- the backend


class NpuBackend:
    """Builds (cached on disk) and launches kernels on an Ascend NPU (see module docstring)."""

    name = "npu"

    def __init__(self, cache: KernelCache | None = None, env: dict[str, str] | None = None):
        self.cache = cache if cache is not None else KernelCache()
        self.env = env
        self._libs: dict[str, Any] = {}
        self._lock = threading.Lock()
        self.last_keepalive: list[Any] = []

    def library(self, compiled: Any) -> Path:
        """The path of the compiled kernel's `.so`, building it on first use."""
        cached = getattr(compiled, "_npu_library", None)
        if cached is not None and Path(cached).exists():
            return Path(cached)
        kdef, spec = compiled.kernel_def, compiled.spec
        key = cache_key(kdef, spec, self.name, spec.arch)
        entry = self.cache.get(key)
        lib = _library_in(entry)
        if lib is None:
            from ...codegen import generate

            artifacts = generate(compiled)
            with self.cache.lock(key):
                entry = self.cache.get(key) or self.cache.put(
                    key, artifacts.files(), meta={"kernel": compiled.name})
                lib = _library_in(entry)
                if lib is None:
                    timeout = kdef.options.compile_timeout or DEFAULT_COMPILE_TIMEOUT
                    data = compile_library(artifacts, entry.path, toolchain(self.env), timeout,
                                           compiled.name)
                    lib = library_name(data)
                    entry = self.cache.put_file(key, lib, data)
        path = entry.file(lib)
        compiled._npu_library = str(path)
        return path

    def _load(self, path: Path) -> Any:
        with self._lock:
            lib = self._libs.get(str(path))
            if lib is None:
                lib = self._libs[str(path)] = ctypes.CDLL(str(path))
            return lib

    def launch(self, request: LaunchRequest) -> LaunchResult:
        compiled = request.compiled
        lib = self._load(self.library(compiled))
        params = next(iter(compiled.programs.values())).kernel.params
        args, keep = marshal_args(request, params)
        stream = stream_handle(request.stream)
        t0 = time.perf_counter()
        call = lib.call_kernel
        call.restype = None
        call(ctypes.c_uint32(request.block_dim), stream, *args)
        self.last_keepalive = keep
        return LaunchResult(self.name, time.perf_counter() - t0, None, {})


register_backend("npu", NpuBackend)
