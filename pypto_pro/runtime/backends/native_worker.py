"""The process that runs native kernels, so a crashing kernel never takes the caller down.

Started by `native.Worker` as `python -I -S native_worker.py` (by path, without site-packages:
it imports neither torch nor `pypto_pro`, only a few standard modules, so it is ready in about
ten milliseconds of CPU) and kept for the session. It reads length-prefixed `marshal`led
requests on stdin and answers on stdout (plain dicts, lists and numbers: marshal, unlike pickle
or typing, imports nothing, which halves the start-up). A launch request names the
kernel library, the shared-memory arena holding every GM buffer (mapped here at the same
offsets the parent wrote them), the guard pages to protect, the GM regions, the status area
for crash reports, the SoC sizes and the `call_kernel` arguments; the answer carries the
fault (kind, kernel.cpp line, message) and the text each block printed. If a kernel crashes,
the process dies with the signal; the parent reads the status area to say where.

Library math: each kernel library is told where the torch installation's `libtorch_cpu.so` is
(path given by the parent); on its first exp / log / sqrt / matmul it loads MKL's `vmsExp`,
`vmsLn`, `vmsSqrt` and `sgemm_` from there (single-threaded), so native results equal the
simulator's bit for bit and kernels without library math never pay for loading torch.
"""
from __future__ import annotations

import ctypes
import marshal
import mmap
import os
import struct
import sys
import time

PAGE = mmap.PAGESIZE
_CTYPES = {
    "bool": ctypes.c_bool, "float": ctypes.c_float, "double": ctypes.c_double,
    "int8_t": ctypes.c_int8, "int16_t": ctypes.c_int16, "int32_t": ctypes.c_int32,
    "int64_t": ctypes.c_int64, "uint8_t": ctypes.c_uint8, "uint16_t": ctypes.c_uint16,
    "uint32_t": ctypes.c_uint32, "uint64_t": ctypes.c_uint64, "ptr": ctypes.c_void_p,
}
_PROT_NONE, _PROT_RW = 0, 3


class Mapping:
    """A shared file mapped read-write at a fixed address for the worker's lifetime."""

    def __init__(self, path: str, size: int) -> None:
        self.path, self.size = path, size
        fd = os.open(path, os.O_RDWR)
        try:
            self.mm = mmap.mmap(fd, size)
        finally:
            os.close(fd)
        self.buf = (ctypes.c_char * size).from_buffer(self.mm)
        self.base = ctypes.addressof(self.buf)


class Worker:
    def __init__(self) -> None:
        self.libs: dict[str, ctypes.CDLL] = {}
        self.arena: Mapping | None = None
        self.status: Mapping | None = None
        self.protected: list[int] = []
        self.configured: dict[str, tuple] = {}  # library -> the set-up it last received
        self.handler_of: str | None = None  # library whose crash handler is installed
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]

    # ------------------------------------------------------------ set-up
    def _map(self, current: Mapping | None, path: str, size: int) -> Mapping:
        if current is not None and current.path == path and current.size == size:
            return current
        return Mapping(path, size)

    def _protect(self, guards: list[int]) -> None:
        assert self.arena is not None
        if guards == self.protected:
            return
        for off in self.protected:
            self.libc.mprotect(self.arena.base + off, PAGE, _PROT_RW)
        for off in guards:
            self.libc.mprotect(self.arena.base + off, PAGE, _PROT_NONE)
        self.protected = list(guards)

    def _lib(self, path: str) -> ctypes.CDLL:
        lib = self.libs.get(path)
        if lib is None:
            lib = ctypes.CDLL(path, mode=os.RTLD_NOW | os.RTLD_LOCAL)
            lib.pypto_native_configure.argtypes = [ctypes.POINTER(ctypes.c_int64), ctypes.c_int,
                                                   ctypes.c_int]
            lib.pypto_native_set_bridge_library.argtypes = [ctypes.c_char_p]
            lib.pypto_native_set_regions.argtypes = [
                ctypes.c_int, ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_uint64),
                ctypes.c_char_p]
            lib.pypto_native_set_status.argtypes = [ctypes.c_void_p, ctypes.c_int,
                                                    ctypes.c_void_p]
            lib.pypto_native_fault_message.restype = ctypes.c_char_p
            lib.pypto_native_printed_text.restype = ctypes.c_char_p
            self.libs[path] = lib
        return lib

    # ------------------------------------------------------------ a launch
    def launch(self, req: dict[str, object]) -> dict[str, object]:
        t0 = time.perf_counter()
        arena = self._map(self.arena, req["arena"], req["arena_size"])
        if arena is not self.arena:
            self.protected = []
        self.arena = arena
        self.status = self._map(self.status, req["status"], req["status_size"])
        self._protect(req["guards"])
        lib = self._lib(req["library"])
        records = req["records"]
        setup = (tuple(req["sizes"]), req["aic_cores"], req["aiv_cores"], req.get("torch_lib"),
                 self.status.base, records)
        if self.configured.get(req["library"]) != setup:
            sizes = (ctypes.c_int64 * len(req["sizes"]))(*req["sizes"])
            lib.pypto_native_configure(sizes, req["aic_cores"], req["aiv_cores"])
            lib.pypto_native_set_bridge_library((req.get("torch_lib") or "").encode())
            lib.pypto_native_set_status(self.status.base, records,
                                        self.status.base + records * req["record_size"])
            self.configured[req["library"]] = setup
        if self.handler_of != req["library"]:
            lib.pypto_native_install_crash_handler()
            self.handler_of = req["library"]
        regions = req["regions"]
        base = self.arena.base
        lo = (ctypes.c_uint64 * max(1, len(regions)))(*[base + r[0] for r in regions])
        hi = (ctypes.c_uint64 * max(1, len(regions)))(*[base + r[1] for r in regions])
        names = "\n".join(r[2] for r in regions).encode()
        lib.pypto_native_set_regions(len(regions), lo, hi, names)
        values: list[object] = [req["block_dim"], None]
        for kind, value in req["args"]:
            values.append((None if value is None else base + value) if kind == "ptr" else value)
        fn = lib.call_kernel
        if getattr(fn, "argtypes", None) is None:
            fn.argtypes = [ctypes.c_uint32, ctypes.c_void_p, *(_CTYPES[k] for k, _ in req["args"])]
            fn.restype = None
        t1 = time.perf_counter()
        fn(*values)
        t2 = time.perf_counter()
        printed = {int(lib.pypto_native_printed_block(i)):
                   lib.pypto_native_printed_text(i).decode("utf-8", "replace")
                   for i in range(lib.pypto_native_printed_count())}
        kind = int(lib.pypto_native_fault_kind())
        fault = None
        if kind:
            fault = (kind, int(lib.pypto_native_fault_line()),
                     lib.pypto_native_fault_message().decode("utf-8", "replace"))
        return {"ok": True, "fault": fault, "printed": printed, "kernel_seconds": t2 - t1,
                "worker_seconds": time.perf_counter() - t0}


def _read(stream) -> object:
    head = stream.read(4)
    if len(head) < 4:
        return None
    (n,) = struct.unpack("<I", head)
    return marshal.loads(stream.read(n))


def _write(stream, obj: object) -> None:
    data = marshal.dumps(obj)
    stream.write(struct.pack("<I", len(data)) + data)
    stream.flush()


def main() -> None:
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # nothing but answers on the protocol stream
    worker = Worker()
    _write(stdout, {"ready": os.getpid()})
    while True:
        req = _read(stdin)
        if req is None or req.get("op") == "exit":
            return
        try:
            answer = worker.launch(req)
        except Exception as e:  # noqa: BLE001 - reported to the parent, which raises
            answer = {"ok": False, "error": f"{type(e).__name__}: {e}"}
        _write(stdout, answer)


if __name__ == "__main__":
    main()
