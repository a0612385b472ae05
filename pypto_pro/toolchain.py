"""The host C++ toolchain, shared by the native backend (kernel libraries, the launcher) and the
simulator's compiled helpers: which compiler, its identity for cache keys, and one build.

`PYPTOPRO_NATIVE_CXX` names the compiler (default: `g++` on PATH). Imports `pypto_pro.errors`
and the kernel cache's `file_memo` only.
"""
from __future__ import annotations

import functools
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

from .errors import CompileError
from .runtime.cache import file_memo

ENV_CXX = "PYPTOPRO_NATIVE_CXX"


def compiler() -> str:
    """The host C++ compiler's command."""
    return os.environ.get(ENV_CXX) or which("g++") or "g++"


def which(name: str) -> str | None:
    """`shutil.which(name)`, remembered per PATH value (it stats every folder of PATH, and a
    launch from the disk cache asks three times)."""
    return _which_in(name, os.environ.get("PATH"))


@functools.lru_cache(maxsize=16)
def _which_in(name: str, path: str | None) -> str | None:
    return shutil.which(name, path=path)


@functools.lru_cache(maxsize=4)
def compiler_id(cxx: str) -> str:
    """The first line of `cxx --version`, remembered on disk per compiler binary (running it
    costs a new process milliseconds, and the launcher's key needs it on every start)."""
    binary = which(cxx)
    if binary is None:
        return cxx

    def version() -> str:
        try:
            out = subprocess.run([binary, "--version"], check=False, capture_output=True,
                                 text=True, timeout=30)
            return out.stdout.splitlines()[0] if out.stdout else cxx
        except (OSError, subprocess.SubprocessError):
            return cxx

    return file_memo("compiler_id", [os.path.realpath(binary)], version)


def run_cxx(files: dict[str, str], cmd: list[str], output: str, timeout: float | None,
            failed: Callable[[str], CompileError]) -> bytes:
    """Run the compiler command `cmd` in a temp dir holding `files`; the bytes of `output`.
    A failing build raises `failed(its stderr)`."""
    with tempfile.TemporaryDirectory(prefix="pypto_native_") as tmp:
        for name, text in files.items():
            Path(tmp, name).write_text(text)
        try:
            proc = subprocess.run(cmd, cwd=tmp, check=False, capture_output=True, text=True,
                                  timeout=timeout)
        except FileNotFoundError:
            raise CompileError(f"the host C++ compiler '{cmd[0]}' was not found",
                               hint=f"install g++ or set {ENV_CXX}",
                               module="PRO_COMPILE") from None
        except subprocess.TimeoutExpired:
            raise CompileError(f"g++ did not finish within {timeout} s", module="PRO_COMPILE") \
                from None
        if proc.returncode != 0:
            raise failed(proc.stderr)
        return Path(tmp, output).read_bytes()


__all__ = ["ENV_CXX", "compiler", "compiler_id", "run_cxx", "which"]
