"""Building and loading the simulator's compiled helpers (`l2_native`, `scheduler_native`).

A helper is C++ source files built with the host compiler into one shared library, cached in
the kernel cache under a key of (tag, compiler id, flags, sources): once per machine and
compiler. `BackgroundLibrary` builds it on a daemon thread on first use, so a launch never
waits for g++ unless asked to; a machine without a compiler keeps the Python code.
"""
from __future__ import annotations

import ctypes
import hashlib
import shutil
import threading
from pathlib import Path
from typing import Callable

from ..errors import CompileError
from . import settings

FLAGS = ("-std=c++17", "-O2", "-fPIC", "-shared")


def build_shared(tag: str, sources: list[Path], library: str, env_hint: str) -> Path:
    """Compile `sources` (the first is the one compiled; it may #include the others) into
    the shared library `library` in the kernel cache; its path."""
    from ..runtime.cache import KernelCache
    from ..toolchain import compiler, compiler_id, run_cxx

    cxx = compiler()
    if shutil.which(cxx) is None:
        raise CompileError(f"the host C++ compiler '{cxx}' for the simulator's {tag} was not "
                           "found", hint=f"install g++, set PYPTOPRO_NATIVE_CXX, or set "
                                         f"{env_hint}=python")
    texts = {path.name: path.read_text() for path in sources}
    h = hashlib.sha256()
    for part in (tag, compiler_id(cxx), " ".join(FLAGS), *texts, *texts.values()):
        h.update(part.encode() + b"\0")
    cmd = [cxx, *FLAGS, sources[0].name, "-o", library]
    entry = KernelCache().get_or_build(
        h.hexdigest(), lambda: {library: run_cxx(texts, cmd, library, 120.0, _build_error)},
        meta={"backend": "sim", "kernel": library})
    return entry.file(library)


def _build_error(stderr: str) -> CompileError:
    """A helper's failed build: the compiler's first error line."""
    lines = [line for line in stderr.splitlines() if "error" in line] or stderr.splitlines()
    return CompileError(f"building a simulator helper failed: {lines[0] if lines else stderr}",
                        module="PRO_COMPILE")


class BackgroundLibrary:
    """One compiled helper, built on a background thread on the first `get`. The env var
    `env` picks: `python` (never load it), `native` (wait for the build, raise its error),
    anything else (`auto`) the library once it is ready."""

    def __init__(self, tag: str, sources: list[Path], library: str, env: str,
                 declare: Callable[[ctypes.CDLL], ctypes.CDLL]) -> None:
        self.tag, self.sources, self.library, self.env = tag, sources, library, env
        self.declare = declare
        self.loaded: ctypes.CDLL | None = None
        self.failure: BaseException | None = None
        self._builder: threading.Thread | None = None
        self._lock = threading.Lock()

    def mode(self) -> str:
        return settings.helper(self.env)

    def get(self, wait: bool = False) -> ctypes.CDLL | None:
        """The loaded library, or None: forced off, no compiler, or still building (`wait`:
        wait for the build and raise its error)."""
        mode = self.mode()
        if mode == "python":
            return None
        if self.loaded is None:
            with self._lock:
                if self._builder is None:
                    self._builder = threading.Thread(target=self._build_and_load,
                                                     name=f"pypto-{self.tag}-build", daemon=True)
                    self._builder.start()
            if wait or mode == "native":
                self._builder.join()
                if self.failure is not None:
                    raise self.failure
        return self.loaded

    def _build_and_load(self) -> None:
        try:
            path = build_shared(self.tag, self.sources, self.library, self.env)
            self.loaded = self.declare(ctypes.CDLL(str(path)))
        except BaseException as e:  # noqa: BLE001 - kept for get(wait=True); Python stays
            self.failure = e
