"""The `native` backend: the generated C++ built with the host g++ against our CPU headers, run
in a worker process with CPU tensors.

Build. `generate(compiled)` gives kernel.cpp, the tiling headers and call_kernel.cpp. On the
host the two targets of a mix kernel must live in one library, so the build adds one file,
`native_main.cpp`: it includes call_kernel.cpp (which includes kernel.cpp) twice, once per
target namespace with `__DAV_CUBE__` / `__DAV_VEC__` defined, and defines the real
`extern "C" call_kernel(blockDim, stream, ...)` that collects both entries and runs the
launch; the headers define `PYPTO_NATIVE_LAUNCH`, so call_kernel.cpp's launch takes that
branch instead of `<<<>>>` (not C++) and the generated files are built unchanged. `g++
-std=c++17 -O2 -g1 -fno-strict-aliasing -fPIC -shared -pthread -I pypto_pro/include` builds
`call_kernel_<hash12>.so` into the on-disk kernel cache (`runtime/cache.py`, keyed by the
sources, the headers, the flags and the compiler), so a kernel is compiled once per machine.
g++ errors become `CompileError` at the kernel line the code generator's line map gives.

Run. Every GM buffer (each argument tensor's storage span, the TilingData bytes) is copied
into one shared-memory arena, each followed by a guard page; the worker process (the
compiled launcher of `include/launcher.hpp`, built once per machine and compiler into the
kernel cache, started once per session and reused; ready in about a millisecond) maps the
arena, calls the library's `pypto_native_call_packed` (`call_kernel` with every argument in a
64-bit word, so one launcher serves every signature), and the buffers are copied back. A
fault the headers detect (bad address, sync misuse, `trap()`, deadlock) comes back as a
message with its kernel.cpp line; a crash kills only the worker, which leaves the faulting
instruction address (mapped to kernel.cpp with addr2line: the library carries -g1 line
tables) and the last op + line of the core in a shared status area. Both become
`KernelTrap` / `SimulationError` / `DeadlockError` at the kernel source line.
`LaunchResult.printed` holds each block's printf text (AIC, AIV0, AIV1 in order). A launch
that neither finishes nor faults within `PYPTOPRO_NATIVE_TIMEOUT` seconds (default 300) is
stopped (the worker is killed and restarted on the next launch).

New processes. A second cache entry per kernel, keyed by what the kernel is made of (no
parsing), holds the launch descriptor (`launch.json`: which build, the argument types, the
parameter names, the line map), so a process that finds it launches without parsing, passes or
code generation (`cached_launch`, used by the jit layer); the worker is started first and boots
meanwhile.
"""
from __future__ import annotations

import atexit
import contextlib
import ctypes
import functools
import hashlib
import json
import mmap
import os
import re
import select
import shutil
import signal
import struct
import subprocess
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import torch

from ...errors import (
    CompileError,
    DeadlockError,
    InvalidArgument,
    KernelTrap,
    RuntimeFailure,
    SimulationError,
)
from ...frozen import Frozen
from ...ir.types import MemorySpace
from ...soc import device_allocation
from ...toolchain import compiler, compiler_id, run_cxx
from ..cache import KernelCache, cache_key, file_memo
from . import LaunchRequest, LaunchResult, register_backend

if TYPE_CHECKING:
    from ...ir.span import Span

INCLUDE_DIR = Path(__file__).resolve().parents[2] / "include"
ENV_TIMEOUT = "PYPTOPRO_NATIVE_TIMEOUT"
CXX_FLAGS = ("-std=c++17", "-O2", "-g1", "-fno-strict-aliasing", "-fPIC", "-shared", "-pthread")
FORMAT = 2  # 2: libraries export `pypto_native_call_packed` for the launcher
RECORDS = 256
RECORD_SIZE = 64  # sizeof(pypto_native::OpRecord)
PAGE = mmap.PAGESIZE
_SPACES = (MemorySpace.Vec, MemorySpace.Mat, MemorySpace.Left, MemorySpace.Right,
           MemorySpace.Acc, MemorySpace.Bias, MemorySpace.Scaling, MemorySpace.ScaleLeft,
           MemorySpace.ScaleRight)  # pto::TileType order
DESCRIPTOR = "launch.json"
_TARGETS = (("cube", "__DAV_CUBE__", 0), ("vector", "__DAV_VEC__", 1))
# patterns, compiled (and cached by `re`) on first use: only builds and faults need them
_ENTRY = r'extern "C" void call_kernel\((.*)\)'
_DIAG = (r"(?m)^(?P<file>[^:\n]+):(?P<line>\d+):(?:\d+:)? (?P<kind>error|fatal error): "
         r"(?P<msg>.*)$")
_CPP_LINE = r"kernel\.cpp:(\d+)"
_SIGNALS = {int(s): s.name for s in signal.Signals}


# ---------------------------------------------------------------- the library


class NativeLibrary(Frozen):
    """A built kernel: its .so and everything a launch needs besides (the launch descriptor):
    the `call_kernel` argument C types, the line map, the kernel parameter names."""

    __slots__ = ("path", "arg_ctypes", "line_map", "kernel_name", "kernel_type", "param_names")
    path: Path
    arg_ctypes: tuple[str, ...]  # after (blockDim, stream): "ptr" | "float" | "int32_t" | ...
    line_map: dict[int, tuple[str, int]]  # kernel.cpp line -> (source file, line)
    kernel_name: str
    kernel_type: str  # "aiv" | "aic" | "mix"
    param_names: tuple[str, ...]  # the kernel's parameters, in order

    def __init__(self, path: Path, arg_ctypes: tuple[str, ...],
                 line_map: dict[int, tuple[str, int]], kernel_name: str,
                 kernel_type: str = "aiv", param_names: tuple[str, ...] = ()) -> None:
        self._init(path=path, arg_ctypes=arg_ctypes, line_map=line_map,
                   kernel_name=kernel_name, kernel_type=kernel_type, param_names=param_names)

    def descriptor(self, build_key: str) -> dict[str, Any]:
        """The JSON form stored in the disk cache (`Builder.cached`)."""
        return {"build_key": build_key, "so": self.path.name, "arg_ctypes": self.arg_ctypes,
                "line_map": [[c, f, n] for c, (f, n) in sorted(self.line_map.items())],
                "kernel_name": self.kernel_name, "kernel_type": self.kernel_type,
                "param_names": self.param_names}

    def span(self, cpp_line: int) -> Span | None:
        """The kernel source `Span` of a kernel.cpp line (None: not a kernel line)."""
        from ...ir.span import Span

        hit = self.line_map.get(cpp_line)
        return Span(hit[0], hit[1]) if hit else None

    def describe(self, text: str) -> str:
        """`text` with every kernel.cpp:N followed by its kernel source line."""
        def sub(m: re.Match) -> str:
            hit = self.line_map.get(int(m.group(1)))
            return m.group(0) + (f" [{os.path.basename(hit[0])}:{hit[1]}]" if hit else "")

        return re.sub(_CPP_LINE, sub, text)


def _c_type(decl: str) -> str:
    ctype = decl.rsplit(" ", 1)[0].strip()
    return "ptr" if ctype.endswith("*") else ctype


def _host_params(call_kernel_cpp: str) -> list[str]:
    m = re.search(_ENTRY, call_kernel_cpp)
    if m is None:
        raise CompileError("call_kernel.cpp has no `extern \"C\" void call_kernel(...)` entry",
                           module="PRO_COMPILE")
    return [p.strip() for p in m.group(1).split(",")]


def native_sources(artifacts: Any) -> dict[str, str]:
    """The files of a native build: the generated ones as they are, and native_main.cpp."""
    files = dict(artifacts.files())
    params = _host_params(artifacts.call_kernel_cpp)
    names = [p.rsplit(" ", 1)[1].lstrip("*") for p in params]
    targets = [t for t in _TARGETS if _has_target(artifacts, t[0])]
    lines = [("// native_main.cpp: both targets of the kernel in one host library (generated by "
              "the native backend)."),
             "#include <pto/pto-inst.hpp>", "#include <pypto_tprint.h>"]
    lines += [f'#include "{name}"' for name in artifacts.tiling_headers]
    lines.append("")
    for target, macro, index in targets:
        lines += [f"namespace pypto_native_{target} {{", f"#define {macro} 1",
                  f"#define PYPTO_NATIVE_TARGET {index}",
                  f"#define call_kernel pypto_native_call_kernel_{target}",
                  '#include "call_kernel.cpp"', "#undef call_kernel",
                  "#undef PYPTO_NATIVE_TARGET", f"#undef {macro}", "#undef PYPTO_SCALAR_HELPERS",
                  f"}}  // namespace pypto_native_{target}", ""]
    lines.append(f'extern "C" void call_kernel({", ".join(params)})')
    lines.append("{")
    lines.append("    ::pypto_native::pending() = ::pypto_native::PendingLaunch{};")
    for target, _, _ in targets:
        lines.append(f"    pypto_native_{target}::pypto_native_call_kernel_{target}"
                     f"({', '.join(names)});")
    lines.append(f'    ::pypto_native::Runner("{artifacts.kernel_type}", blockDim).run('
                 "::pypto_native::pending().cube, ::pypto_native::pending().vector);")
    lines.append("}")
    lines += _packed_entry(params[2:])
    files["native_main.cpp"] = "\n".join(lines) + "\n"
    return files


def _packed_entry(params: list[str]) -> list[str]:
    """`pypto_native_call_packed(blockDim, words)`: `call_kernel` with each argument passed in
    a 64-bit word (a pointer, an integer, or a double's bits), so the launcher can call any
    kernel without knowing its signature."""
    values = []
    for i, decl in enumerate(params):
        ctype = decl.rsplit(" ", 1)[0].strip()
        if ctype.endswith("*"):
            values.append(f"reinterpret_cast<{ctype}>(w[{i}])")
        elif ctype in ("float", "double"):
            values.append(f"static_cast<{ctype}>(pypto_native_word_double(w[{i}]))")
        else:
            values.append(f"static_cast<{ctype}>(static_cast<int64_t>(w[{i}]))")
    return ["", "static double pypto_native_word_double(uint64_t w)",
            "{", "    double d;", "    std::memcpy(&d, &w, sizeof d);", "    return d;", "}", "",
            "//! the launcher's entry (launcher.hpp): every argument in a 64-bit word",
            'extern "C" __attribute__((visibility("default"))) void '
            "pypto_native_call_packed(uint32_t blockDim, const uint64_t* w)",
            "{", f"    call_kernel({', '.join(['blockDim', 'nullptr', *values])});", "}"]


def _has_target(artifacts: Any, target: str) -> bool:
    return f"_impl_{target}(" in artifacts.kernel_cpp


@functools.lru_cache(maxsize=1)
def _headers_digest() -> str:
    h = hashlib.sha256()
    for path in sorted(INCLUDE_DIR.rglob("*")):
        if path.is_file():
            h.update(path.relative_to(INCLUDE_DIR).as_posix().encode() + b"\0")
            h.update(path.read_bytes() + b"\0")
    return h.hexdigest()


def build_key(files: dict[str, str], cxx: str) -> str:
    h = hashlib.sha256()
    for part in (f"native-{FORMAT}", compiler_id(cxx), " ".join(CXX_FLAGS), _headers_digest()):
        h.update(part.encode() + b"\0")
    for name in sorted(files):
        h.update(name.encode() + b"\0" + files[name].encode() + b"\0")
    return h.hexdigest()


def _compile(files: dict[str, str], so_name: str, cxx: str, line_map: dict,
             timeout: float | None) -> bytes:
    """The kernel library built from `files` (native_main.cpp and what it includes)."""
    return _run_cxx(files, [cxx, *CXX_FLAGS, f"-I{INCLUDE_DIR}", "native_main.cpp", "-o", so_name],
                    so_name, line_map, timeout)


def _run_cxx(files: dict[str, str], cmd: list[str], output: str, line_map: dict,
             timeout: float | None) -> bytes:
    """`toolchain.run_cxx`, its error at the kernel lines `line_map` knows."""
    return run_cxx(files, cmd, output, timeout, lambda stderr: _compile_error(stderr, line_map))


def _compile_error(stderr: str, line_map: dict[int, tuple[str, int]]) -> CompileError:
    """g++'s first error, at the first kernel.cpp line of the report the line map knows."""
    errors = list(re.finditer(_DIAG, stderr))
    head = errors[0].group("msg") if errors else (stderr.strip().splitlines() or ["g++ failed"])[0]
    span, where = None, ""
    for m in re.finditer(r"kernel\.cpp:(\d+)", stderr):
        hit = line_map.get(int(m.group(1)))
        if hit is not None:
            from ...ir.span import Span

            span, where = Span(hit[0], hit[1]), f" (kernel.cpp:{m.group(1)})"
            break
    excerpt = "\n".join(stderr.strip().splitlines()[:40])
    return CompileError(f"g++ rejected the generated code{where}: {head}", span, note=excerpt,
                        module="PRO_COMPILE")


class Builder:
    """Builds (once per machine, through the kernel cache) the library of a compiled kernel.

    Two kinds of cache entry: the build, keyed by the generated sources, the headers, the flags
    and the compiler (`build_key`), holds the sources and the `.so`; the launch descriptor,
    keyed by what the kernel is made of (`cache.cache_key`: its source text, helpers, options,
    specialisation; no parsing needed), holds `launch.json` naming the build and everything
    else a launch reads, so a new process launches a cached kernel without compiling it.
    """

    def __init__(self, cache: KernelCache | None = None) -> None:
        self.cache = cache or KernelCache()
        self._lock = threading.Lock()

    def library(self, compiled: Any) -> NativeLibrary:
        lib = getattr(compiled, "_native_library", None)
        if lib is not None and lib.path.exists():
            return lib
        with self._lock:
            lib = getattr(compiled, "_native_library", None)
            if lib is None or not lib.path.exists():
                lib = self._build(compiled)
                compiled._native_library = lib
        return lib

    def cached(self, kernel_def: Any, spec: Any) -> NativeLibrary | None:
        """The library of `kernel_def` at `spec` from its launch descriptor (None: not built on
        this machine yet, or an entry is missing or damaged: then the launch compiles)."""
        raw = self.cache.get_file(launch_key(kernel_def, spec), DESCRIPTOR)
        if raw is None:
            return None
        try:
            d = json.loads(raw)
            so = self.cache.file_path(d["build_key"], d["so"])
            if so is None:
                return None
            return NativeLibrary(so, tuple(d["arg_ctypes"]),
                                 {int(c): (f, int(n)) for c, f, n in d["line_map"]},
                                 d["kernel_name"], d["kernel_type"], tuple(d["param_names"]))
        except (ValueError, KeyError, TypeError):
            return None

    def _build(self, compiled: Any) -> NativeLibrary:
        from ...codegen import generate

        artifacts = generate(compiled)
        files = native_sources(artifacts)
        line_map = {cpp: (src, line) for cpp, src, line in artifacts.line_map["kernel.cpp"]}
        cxx = compiler()
        key = build_key(files, cxx)
        so_name = f"call_kernel_{key[:12]}.so"
        kdef = compiled.kernel_def
        timeout = getattr(getattr(kdef, "options", None), "compile_timeout", None)
        entry = self.cache.get_or_build(
            key, lambda: {**files, so_name: _compile(files, so_name, cxx, line_map, timeout)},
            meta={"backend": "native", "kernel": artifacts.kernel_name})
        params = _host_params(artifacts.call_kernel_cpp)[2:]
        fn = next(iter(compiled.programs.values())).kernel
        lib = NativeLibrary(entry.file(so_name), tuple(_c_type(p) for p in params), line_map,
                            artifacts.kernel_name, compiled.kernel_type,
                            tuple(p.name for p in fn.params))
        if hasattr(kdef, "tree"):  # a real KernelDef: remember the launch for new processes
            self.cache.put(launch_key(kdef, compiled.spec),
                           {DESCRIPTOR: json.dumps(lib.descriptor(key), sort_keys=True)},
                           meta={"backend": "native", "kernel": artifacts.kernel_name})
        return lib


def launch_key(kernel_def: Any, spec: Any) -> str:
    """The launch descriptor's key: the kernel's content key plus the host compiler."""
    h = hashlib.sha256()
    for part in (f"native-launch-{FORMAT}", cache_key(kernel_def, spec, "native"), compiler(),
                 " ".join(CXX_FLAGS)):
        h.update(part.encode() + b"\0")
    return h.hexdigest()


# ---------------------------------------------------------------- shared memory


def _shm_dir() -> str:
    return "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) \
        else tempfile.gettempdir()


def _remove_stale_files() -> None:
    """Shared files left by processes that died without closing their native backend."""
    folder = _shm_dir()
    for name in os.listdir(folder):  # (not Path.glob: compiling its pattern costs milliseconds)
        if not name.startswith("pypto_native_"):
            continue
        path = Path(folder, name)
        m = re.match(r"pypto_native_(?:arena|status)_(\d+)_", name)
        if m is None or int(m.group(1)) == os.getpid():
            continue
        try:
            os.kill(int(m.group(1)), 0)
        except ProcessLookupError:
            path.unlink(missing_ok=True)
        except OSError:
            pass


class SharedFile:
    """A file in /dev/shm mapped by this process (and, by path, by the worker)."""

    def __init__(self, size: int, prefix: str) -> None:
        self.size = size
        self.path = os.path.join(_shm_dir(), f"{prefix}{os.getpid()}_{uuid.uuid4().hex[:8]}")
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.ftruncate(fd, size)
            self.mm = mmap.mmap(fd, size)
        finally:
            os.close(fd)
        self._anchor = ctypes.c_char.from_buffer(self.mm)
        self.address = ctypes.addressof(self._anchor)

    def close(self) -> None:
        self._anchor = None
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass


class _Buffer(NamedTuple):  # (named tuples: a new process makes them faster than dataclasses)
    """One GM buffer: a span of host memory (a tensor storage, the tiling bytes) and where it
    sits in the arena. Copies are plain memmoves: torch's copy_ would start OpenMP threads."""

    address: int  # host address of the span
    nbytes: int
    offset: int = 0  # where its data starts in the arena
    write_back: bool = True
    keep: Any = None  # keeps the host memory alive
    reserved: int = 0  # zero bytes after the data: the device allocator's reserve (`_reserve`)


class _Plan(NamedTuple):
    buffers: list[_Buffer]
    size: int
    guards: list[int]
    regions: list[tuple[int, int, str]]
    args: bytes  # the encoded kernel arguments (`_word`)
    n_args: int


def _span(t: torch.Tensor) -> tuple[int, int]:
    """[lo, hi) bytes of the storage a tensor view can address."""
    es = t.element_size()
    lo = t.storage_offset() * es
    if t.is_contiguous():  # (also an empty tensor: numel 0)
        return lo, lo + t.numel() * es
    if t.numel() == 0:
        return lo, lo
    last = 0
    for size, stride in zip(t.shape, t.stride()):
        last += (size - 1) * stride  # a view of a non-empty tensor has no 0-sized axis
    return lo, lo + (last + 1) * es


def _reserve(tensor: torch.Tensor, hi: int) -> int:
    """Bytes the real NPU allocator reserves past the storage of `tensor` when the views of the
    launch reach its end (`hi`): a window may run into them (reads zero, writes discarded)."""
    nbytes = tensor.untyped_storage().nbytes()
    return device_allocation(nbytes) - nbytes if hi == nbytes else 0


def _packed4_args(request: LaunchRequest) -> dict[int, torch.Tensor]:
    """Argument index → one byte per code, of each contiguous tensor argument whose declared
    dtype is 4-bit. Such a tensor packs two codes per byte in GM (the first in the low nibble;
    docs, matmul_mx.md) and the simulator reads it so; the native build keeps one code per
    byte, so its launch runs on the unpacked codes and packs what the kernel wrote back."""
    kdef = getattr(request.compiled, "kernel_def", None)
    spec = getattr(request.compiled, "spec", None)
    if kdef is None or not hasattr(kdef, "params"):
        return {}
    chosen = dict(getattr(spec, "datatype", ()) or ())
    out: dict[int, torch.Tensor] = {}
    for p in kdef.params:
        if p.kind not in ("tensor", "ptr") or p.index >= len(request.args):
            continue
        dtype = chosen.get(p.dtype_var) if p.dtype_var else p.spec.dtype
        value = request.args[p.index]
        if getattr(dtype, "bits", 0) == 4 and isinstance(value, torch.Tensor) \
                and value.is_contiguous():
            raw = value.reshape(-1).view(torch.uint8)
            out[p.index] = torch.stack((raw & 0xF, raw >> 4), dim=1).reshape(-1)
    return out


def _repack4(tensor: torch.Tensor, codes: torch.Tensor) -> None:
    """Pack the one-per-byte codes the kernel left back into `tensor` (`_packed4_args`)."""
    codes = codes & 0xF
    tensor.reshape(-1).view(torch.uint8).copy_(codes[0::2] | (codes[1::2] << 4))


def plan_launch(request: LaunchRequest, lib: NativeLibrary) -> _Plan:
    """Arena layout, GM regions and `call_kernel` arguments of a launch."""
    values = request.args
    n_args = len(values)
    groups: dict[int, list] = {}  # storage address -> [tensor, lo, hi]
    # pointer arguments in order: (index, name, tensor | bytes | None, storage address, lo, hi)
    pointers: list[tuple[int, str, Any, int, int, int]] = []
    ctypes_ = lib.arg_ctypes
    for i, name in enumerate(lib.param_names[:n_args]):
        if ctypes_[i] != "ptr":
            continue
        value = values[i]
        if isinstance(value, torch.Tensor):
            if not value.is_cpu:
                raise InvalidArgument(f"'{name}': the native backend runs on CPU tensors, got "
                                      f"a tensor on {value.device}",
                                      hint="pass tensor.cpu() or pick another backend")
            lo, hi = _span(value)
            key = value.data_ptr() - lo  # its storage's address (untyped_storage() is slower)
            g = groups.get(key)
            if g is None:
                groups[key] = [value, lo, hi]
            else:
                g[1], g[2] = min(g[1], lo), max(g[2], hi)
            pointers.append((i, name, value, key, lo, hi))
        elif value is None:
            pointers.append((i, name, None, -1, 0, 0))
        else:  # the TilingData parameter: its serialised bytes (no storage: address -1)
            pointers.append((i, name, request.tiling_bytes or b"", -1, 0, 0))
    buffers: list[_Buffer] = []
    guards: list[int] = []
    cursor = 0

    def place(address: int, n: int, write_back: bool, keep: Any, reserved: int = 0
              ) -> _Buffer:
        nonlocal cursor
        pages = -(-(n + reserved + 63) // PAGE) or 1
        buf = _Buffer(address, n, (cursor + pages * PAGE - n - reserved) // 64 * 64, write_back,
                      keep, reserved)
        cursor += pages * PAGE
        guards.append(cursor)
        cursor += PAGE
        buffers.append(buf)
        return buf

    reserves = {key: _reserve(tensor, hi) for key, (tensor, lo, hi) in groups.items()}
    starts = {key: place(key + lo, hi - lo, True, tensor, reserves[key]).offset - lo
              for key, (tensor, lo, hi) in groups.items()}  # arena offset of storage byte 0
    regions: list[tuple[int, int, str]] = []
    offsets: dict[int, int] = {}
    for i, name, value, key, lo, hi in pointers:
        if value is None:
            continue
        if key >= 0:
            start = starts[key] + lo
            offsets[i] = start
            end = groups[key][2]
            regions.append((start, start + (hi - lo) + (reserves[key] if hi == end else 0),
                            name))
        else:
            # the TilingData: the vector core's copy-in reads whole 32-byte bursts
            data = bytes(value) + bytes(-len(value) % 32)
            raw = ctypes.create_string_buffer(data, max(1, len(data)))
            buf = place(ctypes.addressof(raw), len(data), False, raw)
            offsets[i] = buf.offset
            regions.append((buf.offset, buf.offset + len(data), name))
    dyn = request.dyn_dims
    args: list[bytes] = []
    for i, ctype in enumerate(lib.arg_ctypes):
        if ctype == "ptr":
            off = offsets.get(i)
            args.append(_ARG_NULL if off is None else _ARG_OFFSET.pack(1, off))
        else:
            args.append(_word(values[i] if i < n_args else dyn[i - n_args], ctype))
    return _Plan(buffers, cursor + PAGE, guards, regions, b"".join(args), len(args))


#: a kernel argument for the launcher: u8 kind (0 null pointer, 1 arena offset, 2 integer,
#: 3 double), u64 word (launcher.hpp)
_ARG_OFFSET = struct.Struct("<BQ")
_ARG_DOUBLE = struct.Struct("<Bd")
_ARG_NULL = _ARG_OFFSET.pack(0, 0)
_WORD = (1 << 64) - 1


def _word(value: Any, ctype: str) -> bytes:
    if ctype in ("float", "double"):
        return _ARG_DOUBLE.pack(3, float(value))
    return _ARG_OFFSET.pack(2, int(bool(value) if ctype == "bool" else value) & _WORD)


# ---------------------------------------------------------------- the worker process


class WorkerDied(Exception):
    def __init__(self, returncode: int) -> None:
        super().__init__(f"worker exited with {returncode}")
        self.returncode = returncode


class WorkerTimeout(Exception):
    pass


#: the launcher process (`include/launcher.hpp`): its file in the cache, its hello, its flags
LAUNCHER = "pypto_native_launcher"
LAUNCHER_HELLO = "pypto-launcher 1"
LAUNCHER_FLAGS = ("-std=c++17", "-O2", "-pthread")
_LAUNCHER_MAIN = "#include <launcher.hpp>\nint main() { return pypto_launcher::serve(); }\n"
_U32 = struct.Struct("<I")


def launcher_executable(cache: KernelCache, build: bool = True) -> Path | None:
    """The launcher built with the host compiler: once per machine and compiler, through the
    kernel cache (atomic; concurrent processes end with one good entry). `build=False`: None
    unless it is built already."""
    cxx = compiler()
    h = hashlib.sha256()
    for part in (f"native-launcher-{FORMAT}", compiler_id(cxx), " ".join(LAUNCHER_FLAGS),
                 _LAUNCHER_MAIN):
        h.update(part.encode() + b"\0")
    h.update((INCLUDE_DIR / "launcher.hpp").read_bytes())
    key = h.hexdigest()
    if not build:
        path = cache.file_path(key, LAUNCHER)
    else:
        cmd = [cxx, *LAUNCHER_FLAGS, f"-I{INCLUDE_DIR}", "launcher_main.cpp", "-o", LAUNCHER,
               "-ldl"]
        path = cache.get_or_build(
            key, lambda: {LAUNCHER: _run_cxx({"launcher_main.cpp": _LAUNCHER_MAIN}, cmd,
                                             LAUNCHER, {}, None)},
            meta={"backend": "native", "kernel": LAUNCHER}).file(LAUNCHER)
    if path is not None and not os.access(path, os.X_OK):
        os.chmod(path, 0o755)
    return path


def _str(text: str) -> bytes:
    data = text.encode()
    return _U32.pack(len(data)) + data


def _read_str(data: bytes, pos: int) -> tuple[str, int]:
    (n,) = _U32.unpack_from(data, pos)
    return data[pos + 4:pos + 4 + n].decode("utf-8", "replace"), pos + 4 + n


def _decode_answer(data: bytes) -> dict[str, Any]:
    """A launcher answer (launcher.hpp) as {"ok", "error" | "fault", "printed"}."""
    if not data or not data[0]:
        return {"ok": False, "error": _read_str(data, 1)[0] if data else "empty answer"}
    kind, line = struct.unpack_from("<ii", data, 1)
    message, pos = _read_str(data, 9)
    (n,) = _U32.unpack_from(data, pos)
    pos += 4
    printed = {}
    for _ in range(n):
        (block,) = struct.unpack_from("<i", data, pos)
        printed[block], pos = _read_str(data, pos + 4)
    return {"ok": True, "fault": (kind, line, message) if kind else None, "printed": printed}


class Worker:
    """The persistent launcher process that runs kernels, restarted after a crash."""

    def __init__(self, cache: KernelCache) -> None:
        _remove_stale_files()
        self.cache = cache
        self.proc: subprocess.Popen | None = None
        self.ready = False  # the running process said hello
        self.arena: SharedFile | None = None
        self.status = SharedFile(RECORDS * RECORD_SIZE + 64, "pypto_native_status_")
        self._heads: dict[tuple, bytes] = {}
        self._start_lock = threading.Lock()
        self._spawning: threading.Thread | None = None  # the thread spawning the process
        self._failure: BaseException | None = None  # what stopped it

    def start(self) -> None:
        """Start the process if none runs, without waiting for it to boot (it does while the
        caller looks the kernel up or compiles it). The first time on this machine a thread
        builds the launcher and spawns it, so its g++ runs beside the kernel's."""
        with self._start_lock:
            if self._spawning is not None or (self.proc is not None and self.proc.poll() is None):
                return
            self.proc, self.ready, self._failure = None, False, None
            built = launcher_executable(self.cache, build=False)
            if built is not None:
                self._spawn(built)
                return
            self._spawning = threading.Thread(target=self._spawn, name="pypto-native-launcher",
                                              daemon=True)
            self._spawning.start()

    def _spawn(self, executable: Path | None = None) -> None:
        try:
            env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
            self.proc = subprocess.Popen([str(executable or launcher_executable(self.cache))],
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env,
                                         close_fds=True)
        except BaseException as e:  # noqa: BLE001 - raised in the caller's thread by ensure()
            self._failure = e

    def _started(self) -> None:
        """Wait for the spawning thread, if any; a failure to spawn (e.g. no compiler) is
        raised here, in the caller's thread."""
        spawning = self._spawning
        if spawning is not None:
            spawning.join()
            self._spawning = None
        failure, self._failure = self._failure, None
        if failure is not None:
            raise failure

    def ensure(self) -> subprocess.Popen:
        """The running process, started and said hello (a ready one is not polled again: each
        launch's `start` did, and if it died since, the call finds out)."""
        if not self.ready:
            self.start()
            self._started()
            hello = self._read(60.0)
            if hello[:1] != b"\1" or _read_str(hello, 1)[0] != LAUNCHER_HELLO:
                raise RuntimeFailure("the native launcher process did not start",
                                     module="PRO_RUNTIME")
            self.ready = True
        assert self.proc is not None
        return self.proc

    def message_head(self, library: Path, arena: SharedFile, soc: tuple) -> bytes:
        """The first fields of a launch request (launcher.hpp), which change rarely."""
        key = (library, arena.path, arena.size, soc)
        head = self._heads.get(key)
        if head is None:
            sizes, aic, aiv = soc
            head = self._heads[key] = b"".join((
                _U32.pack(1), _str(str(library)), _str(arena.path), struct.pack("<Q", arena.size),
                _str(self.status.path), struct.pack("<QII", self.status.size, RECORDS,
                                                    RECORD_SIZE),
                struct.pack(f"<I{len(sizes)}q", len(sizes), *sizes),
                struct.pack("<ii", aic, aiv), _str(_torch_lib() or "")))
        return head

    def arena_for(self, size: int) -> tuple[SharedFile, bool]:
        if self.arena is not None and self.arena.size >= size:
            return self.arena, False
        if self.arena is not None:
            self.arena.close()
        self.arena = SharedFile(max(size, 1 << 22, 2 * (self.arena.size if self.arena else 0)),
                                "pypto_native_arena_")
        return self.arena, True

    def call(self, request: bytes, timeout: float) -> dict[str, Any]:
        proc = self.ensure()
        try:
            proc.stdin.write(_U32.pack(len(request)) + request)
            proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise WorkerDied(proc.wait()) from None
        return _decode_answer(self._read(timeout))

    def _read(self, timeout: float) -> bytes:
        proc = self.proc
        assert proc is not None and proc.stdout is not None
        fd = proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        (n,) = _U32.unpack(self._read_exact(fd, 4, deadline))
        return self._read_exact(fd, n, deadline)

    def _read_exact(self, fd: int, n: int, deadline: float) -> bytes:
        out = b""
        while len(out) < n:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([fd], [], [], max(0.0, left))
            if not ready:
                self.kill()
                raise WorkerTimeout()
            chunk = os.read(fd, n - len(out))
            if not chunk:
                raise WorkerDied(self.proc.wait() if self.proc else -1)
            out += chunk
        return out

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.proc = None
        self.ready = False

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._started()
        self.kill()
        self.status.close()
        if self.arena is not None:
            self.arena.close()

    def crash_report(self) -> tuple[int, int, int, dict | None]:
        """(signal, pc offset in the library, fault address, record) the dying kernel left."""
        base = RECORDS * RECORD_SIZE
        index, sig, pc, addr = struct.unpack_from("<iiQQ", self.status.mm, base)
        if not 0 <= index < RECORDS:
            return sig, pc, addr, None
        raw = self.status.mm[index * RECORD_SIZE:(index + 1) * RECORD_SIZE]
        op = raw[:40].split(b"\0", 1)[0].decode("ascii", "replace")
        line, block, kind, sub, _active = struct.unpack_from("<iiiii", raw, 40)
        return sig, pc, addr, {"op": op, "line": line, "block": block, "kind": kind, "sub": sub}


# ---------------------------------------------------------------- the backend


class NativeBackend:
    name = "native"

    def __init__(self, soc_name: str | None = None, timeout: float | None = None,
                 cache: KernelCache | None = None) -> None:
        self.soc_name = soc_name
        self.timeout = timeout
        self.builder = Builder(cache)
        self.worker: Worker | None = None
        self._lock = threading.Lock()
        self._worker_lock = threading.Lock()
        atexit.register(self.close)

    def _worker(self) -> Worker:
        with self._worker_lock:
            if self.worker is None:
                self.worker = Worker(self.builder.cache)
            return self.worker

    def cached_launch(self, kernel_def: Any, spec: Any) -> dict[str, Any] | None:
        """The attributes a launch of `kernel_def` at `spec` reads, from the disk cache (None:
        compile it). The jit layer's fast path for kernels an earlier process built: no
        parsing, passes or code generation. The worker boots meanwhile."""
        self._worker().start()
        lib = self.builder.cached(kernel_def, spec)
        return None if lib is None else {"_native_library": lib, "kernel_type": lib.kernel_type}

    def _timeout(self) -> float:
        if self.timeout is not None:
            return self.timeout
        return float(os.environ.get(ENV_TIMEOUT, "300"))

    def _soc(self):
        return _soc_config(self.soc_name or os.environ.get("PYPTOPRO_SIM_SOC", "").strip())

    def launch(self, request: LaunchRequest) -> LaunchResult:
        self._worker().start()
        lib = self.builder.library(request.compiled)
        request_args, packed = request.args, _packed4_args(request)
        if packed:
            request = LaunchRequest(request.compiled, request.block_dim, request.stream,
                                    tuple(packed.get(i, a) for i, a in enumerate(request.args)),
                                    request.dyn_dims, request.tiling_bytes)
        plan = plan_launch(request, lib)
        soc = self._soc()
        with self._lock:
            t0 = time.perf_counter()
            answer = self._run(request, lib, plan, soc)
            wall = time.perf_counter() - t0
        fault = answer.get("fault")
        if fault:
            raise _fault_error(lib, *fault)
        for i, codes in packed.items():
            _repack4(request_args[i], codes)
        return LaunchResult(self.name, wall, None, dict(answer.get("printed", {})))

    def _run(self, request: LaunchRequest, lib: NativeLibrary, plan: _Plan, soc: Any) -> dict:
        worker = self._worker()
        arena, _ = worker.arena_for(plan.size)
        for buf in plan.buffers:
            if buf.nbytes:
                ctypes.memmove(arena.address + buf.offset, buf.address, buf.nbytes)
            if buf.reserved:
                ctypes.memset(arena.address + buf.offset + buf.nbytes, 0, buf.reserved)
        struct.pack_into("<iiQQ", worker.status.mm, RECORDS * RECORD_SIZE, -1, 0, 0, 0)
        message = b"".join((
            worker.message_head(lib.path, arena, soc),
            struct.pack(f"<I{len(plan.guards)}Q", len(plan.guards), *plan.guards),
            _U32.pack(len(plan.regions)),
            *(struct.pack("<QQ", lo, hi) + _str(name) for lo, hi, name in plan.regions),
            struct.pack("<II", request.block_dim, plan.n_args), plan.args))
        try:
            answer = worker.call(message, self._timeout())
        except WorkerDied as died:
            raise self._crash(worker, lib, died.returncode) from None
        except WorkerTimeout:
            raise DeadlockError(f"native launch of '{lib.kernel_name}' did not finish within "
                                f"{self._timeout():g} s (a wait that never ends, or an endless "
                                f"loop); the worker process was stopped",
                                hint=f"raise {ENV_TIMEOUT} for long kernels",
                                module="PRO_RUNTIME") from None
        if not answer.get("ok"):
            raise RuntimeFailure(f"native worker: {answer.get('error')}", module="PRO_RUNTIME")
        for buf in plan.buffers:
            if buf.nbytes and buf.write_back:
                ctypes.memmove(buf.address, arena.address + buf.offset, buf.nbytes)
        return answer

    def _crash(self, worker: Worker, lib: NativeLibrary, returncode: int) -> KernelTrap:
        sig, pc, addr, rec = worker.crash_report()
        sig = sig or (-returncode if returncode < 0 else 0)
        name = _SIGNALS.get(sig, f"exit code {returncode}" if not sig else f"signal {sig}")
        worker.kill()
        line = _kernel_line(lib.path, pc) if pc else 0
        what = f"at kernel.cpp:{line}" if line else ""
        if rec is not None:
            kind = "AIC" if rec["kind"] == 0 else "AIV"
            mix = lib.kernel_type == "mix"
            where = f"block {rec['block']} {kind}" + (str(rec["sub"]) if mix and kind == "AIV"
                                                      else "")
            last = (f"last instruction {rec['op']} at kernel.cpp:{rec['line']}" if rec["op"]
                    else "before its first instruction")
            what = f"{what + ', ' if what else ''}{last}, on {where}"
            line = line or rec["line"]
        return KernelTrap(f"the native kernel '{lib.kernel_name}' crashed ({name}, address "
                          f"{addr:#x}) {lib.describe(what)}", span=lib.span(line),
                          hint="an address outside its tensor (getval/setval, SIMT pointer "
                               "arithmetic) is the usual cause", module="PRO_RUNTIME")

    def close(self) -> None:
        if self.worker is not None:
            self.worker.close()
            self.worker = None


_FAULTS = {1: KernelTrap, 2: SimulationError, 3: DeadlockError}


def _kernel_line(library: Path, pc: int) -> int:
    """The kernel.cpp line of an instruction offset in the library (addr2line, inline chain)."""
    tool = shutil.which("addr2line")
    if tool is None:
        return 0
    try:
        out = subprocess.run([tool, "-i", "-e", str(library), f"{pc:#x}"], check=False,
                             capture_output=True,
                             text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return 0
    for text in out.splitlines():
        m = re.search(r"kernel\.cpp:(\d+)", text)
        if m:
            return int(m.group(1))
    return 0


def _fault_error(lib: NativeLibrary, kind: int, line: int, message: str) -> Exception:
    cls = _FAULTS.get(kind, KernelTrap)
    where = f" (kernel.cpp:{line})" if line and f"kernel.cpp:{line}" not in message else ""
    return cls(f"native kernel '{lib.kernel_name}': {lib.describe(message)}{where}",
               span=lib.span(line), module="PRO_RUNTIME")


@functools.lru_cache(maxsize=16)
def _soc_config(name: str) -> tuple[tuple[int, ...], int, int]:
    """(buffer bytes in pto::TileType order, AIC cores, AIV cores) of a SoC table (remembered
    on disk: parsing the TOML tables costs a new process tens of milliseconds)."""
    folder = Path(__file__).resolve().parents[2] / "soc"
    tables = sorted(str(folder / n) for n in os.listdir(folder) if n.endswith((".py", ".toml")))

    def read() -> tuple[list[int], int, int]:
        from ...soc import soc as make_soc

        try:
            soc = make_soc(name) if name else make_soc()
        except ValueError as e:
            raise InvalidArgument(f"PYPTOPRO_SIM_SOC={name!r}: {e}", module="PRO_RUNTIME") \
                from None
        return [int(soc.buffer_size(s)) for s in _SPACES], soc.aic_cores, soc.aiv_cores

    sizes, aic, aiv = file_memo(f"native_soc_{name}", tables, read)
    return tuple(sizes), int(aic), int(aiv)


@functools.lru_cache(maxsize=1)
def _torch_lib() -> str | None:
    path = Path(torch.__file__).resolve().parent / "lib" / "libtorch_cpu.so"
    return str(path) if path.exists() else None


register_backend("native", NativeBackend)
