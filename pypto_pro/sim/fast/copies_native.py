"""Compiled strided copies for kept steps: `copies.cpp` built by `native_build` once per machine
and compiler, on a background thread, loaded with ctypes. `PYPTOPRO_SIM_COPIES` picks:
`python` keeps torch's `copy_`, `native` waits for this library (and raises its build error),
`auto` (default) uses it once it is ready.

Tile copies move runs of 16 elements (a fractal's row) through 2-4 strided levels, which
torch's TensorIterator takes ~4-14 µs for per [128, 128] fp16 tile where a plain loop takes
1.5-3 (hot cache; 16x16 fractal transposes and fp16 → fp32 conversions the most). `copier`
describes copies between two views once, as int64 records (addresses, byte strides, run
lengths; `pypto_copies_record` checks every extent against both storages), and gives a step
running all of them in one ctypes call (~0.3-0.5 µs of call overhead), then bumping the
destinations' version counters as a torch write would (a memory back from a launch is reset
where its counters moved: `launch._core_memory`); None when the library is not loaded or a
pair does not fit (other dtypes, more levels, an extent outside a storage, overlapping bytes,
colliding writes): the caller keeps its torch copy. The step holds the
views, so their storages outlive it; their addresses stay valid because a kept step only runs
in a tape, and a tape never outlives a storage change: a GM tensor whose storage moves or is
resized gets a new GM view (`runtime.backends.sim._gm_view`), so the stream memo misses or
rebinds and drops the tape (`memo._rebind`), and on-chip buffers and product scratch
are never resized.

A cube product's step is one call too (`product`): its operands' conversions, the product
through the sgemm torch's own matmul calls (MKL's, found in torch's library; a shape's first
product is checked bit for bit against `torch.mm` before any is trusted), then its
accumulation (left to torch when a NaN is in either side: which NaN a sum keeps is torch's)
or its result write, with the copies the tape runs just before it (`fusion.joined`). A tape
step then holds the GIL once where it held it three to five times: a lane running beside
another (`lanes`) waits for the GIL less.
"""
from __future__ import annotations

import array
import contextlib
import ctypes
import functools
import threading
import weakref
from collections.abc import Callable, Iterator, Sequence
from typing import Any
from pathlib import Path

import numpy as np
import torch
from torch.autograd.graph import increment_version

from .. import settings
from ..native_build import BackgroundLibrary
from ..step import Step

FORMAT = 2
REC_W = 18  # copies.cpp REC_W
#: (source dtype → float32) conversions the library does bit-identically to torch's `copy_`
_CONVERT = {torch.float16: 1, torch.bfloat16: 2}
_PRODUCT, _ADD = 3, 4  # copies.cpp kinds: a float32 product, float32 dst += src
#: (id(dst), id(src), add) → (weak dst, weak src, addresses and storage sizes, record or None)
_RECORDS: dict[tuple[int, int], tuple] = {}
_RECORDS_MAX = 1 << 15
_EMPTY = bytes(8 * REC_W)


def _declare(lib: ctypes.CDLL) -> ctypes.CDLL:
    lib.pypto_copies_run.argtypes, lib.pypto_copies_run.restype = \
        (ctypes.c_void_p, ctypes.c_int64), ctypes.c_int64
    lib.pypto_copies_set_sgemm.argtypes, lib.pypto_copies_set_sgemm.restype = \
        (ctypes.c_void_p, ctypes.c_void_p), None
    lib.sgemm, threads = _sgemm()
    if lib.sgemm is not None:
        lib.pypto_copies_set_sgemm(lib.sgemm, threads)
    lib.pypto_copies_record_width.argtypes, lib.pypto_copies_record_width.restype = (), \
        ctypes.c_int64
    lib.pypto_copies_f16c.argtypes, lib.pypto_copies_f16c.restype = (), ctypes.c_int64
    lib.pypto_copies_record.argtypes = (ctypes.c_void_p, ctypes.c_void_p)
    lib.pypto_copies_record.restype = ctypes.c_int64
    if lib.pypto_copies_record_width() != REC_W:
        raise RuntimeError("copies.cpp's record width does not match copies_native.REC_W")
    return lib


LIBRARY = BackgroundLibrary(f"copies-{FORMAT}", [Path(__file__).with_name("copies.cpp")],
                            "pypto_sim_copies.so", settings.COPIES, _declare)


def library(wait: bool = False) -> ctypes.CDLL | None:
    """The loaded library, or None (forced off, no compiler, still building)."""
    return LIBRARY.get(wait)


def copier(pairs: Sequence[tuple[torch.Tensor, torch.Tensor]]) -> Step | None:
    """A step doing `dst.copy_(src)` for each (dst, src) of `pairs`, in order, in one call to
    the library; None when it is not loaded or a pair has no record (`record`)."""
    lib = library()
    if lib is None:
        return None
    desc = _Desc()
    for dst, src in pairs:
        if not desc.add(_kept_record(lib, dst, src), (dst, src)):
            return None
    return desc.step(lib)


def joined(steps: Sequence[Step]) -> Step:
    """One step doing the copies of `copier`'s steps `steps`, in order, in one call."""
    desc = _Desc()
    for step in steps:
        desc.take(step)
    return desc.step(library())


class _Desc:
    """The records of one call (`pypto_copies_run`'s [count, records...]) and the tensors
    they point into (kept alive by the step; the first of each pair is written)."""

    def __init__(self) -> None:
        self.ints = array.array("q", (0,))
        self.pairs: list[tuple[torch.Tensor, torch.Tensor]] = []

    def add(self, rec: array.array | None, pair: tuple[torch.Tensor, torch.Tensor]) -> bool:
        """Append one record (False, nothing appended, when there is none)."""
        if rec is None:
            return False
        self.ints[0] += 1
        self.ints += rec
        self.pairs.append(pair)
        return True

    def take(self, step: Step) -> None:
        """Append the records of a step `step` made (`copier`, `joined`)."""
        records, pairs = step.records
        self.ints[0] += records[0]
        self.ints.extend(records[1:])
        self.pairs += pairs

    def step(self, lib: ctypes.CDLL, stops: dict[int, Callable[[], None]] | None = None
             ) -> Step:
        """The step running the records in one call, then bumping the written tensors'
        version counters as torch's own writes do (`launch._core_memory`); it gives whether
        an accumulation met a NaN and was left out (the records after it too). With `stops`
        (record index → the torch add standing for that accumulation) those are added there
        and the call runs on from the next record. Noted in this thread's `collecting` list,
        if any."""
        copy = functools.partial(lib.pypto_copies_run, ctypes.c_void_p(self.ints.buffer_info()[0]))
        written = list({id(dst): dst for dst, _ in self.pairs}.values())
        # the records and the tensors their addresses point into live as long as the function
        # that runs them does (whoever keeps only `run`)
        records = (self.ints, self.pairs)

        if stops is None:
            def run(records: tuple = records) -> bool:
                stopped = copy(0) >= 0
                increment_version(written)
                return stopped
        else:
            def run(records: tuple = records) -> bool:
                at = copy(0)
                while at >= 0:
                    stops[at]()
                    at = copy(at + 1)
                increment_version(written)
                return False
        step = Step(run, records=records, written=written)
        made = getattr(_MADE, "runs", None)
        if made is not None:
            made.append(step)
        return step


def chain(parts: Sequence[tuple[Step, Callable[[], None] | None]]) -> Step:
    """One step doing compiled steps in one call: `parts` are (a `_Desc.step` step, None or the
    torch add standing for its last record, an accumulation, when that met a NaN). Each part's
    records run in order; an accumulation left out is added by torch, then the call runs on."""
    desc = _Desc()
    stops: dict[int, Callable[[], None]] = {}
    for run, nan in parts:
        desc.take(run)
        if nan is not None:
            stops[desc.ints[0] - 1] = nan
    return desc.step(library(), stops)


#: per thread, the list `_Desc.step` notes its steps in (`collecting`)
_MADE = threading.local()


@contextlib.contextmanager
def collecting(into: list) -> Iterator[list]:
    """Note in `into` every compiled step made in this thread meanwhile (`Moves` moves them)."""
    before = getattr(_MADE, "runs", None)
    _MADE.runs = into
    try:
        yield into
    finally:
        _MADE.runs = before


class Moves:
    """Where compiled steps (`collecting`'s) point into storages, to point them into others of
    the same size (a relaunch on new GM tensors: `memo`): per record field holding an
    address, the address, its step's records and the field's place in them; per storage
    (address, bytes), the places of the views the steps keep and write."""

    __slots__ = ("addresses", "owners", "places", "views")

    def __init__(self, runs: list) -> None:
        addresses: list[int] = []
        self.owners: list[array.array] = []
        self.places: list[int] = []
        # storage → [(list, index, side: None for a view, 0 / 1 in a (dst, src) pair)]
        self.views: dict[tuple[int, int], list[tuple[list, int, int | None]]] = {}
        for run in runs:
            ints, pairs = run.records
            for r in range(ints[0]):
                at = 1 + r * REC_W
                if ints[at] in (_PRODUCT, _ADD):  # (scratch and on-chip memory only)
                    continue
                for field in (at + 1, at + 2):  # dst, src
                    addresses.append(ints[field])
                    self.owners.append(ints)
                    self.places.append(field)
            for k, pair in enumerate(pairs):
                for side in (0, 1):
                    self._note(pair[side], (pairs, k, side))
            for k, view in enumerate(run.written):
                self._note(view, (run.written, k, None))
        self.addresses = np.array(addresses, dtype=np.int64)

    def _note(self, view: torch.Tensor, place: tuple) -> None:
        self.views.setdefault(_storage(view), []).append(place)

    def move(self, storages: dict[tuple[int, int], torch.Tensor]) -> bool:
        """Point every address inside a storage of `storages` ((address, bytes) → a tensor on
        the storage replacing it, of the same size) at the same byte of the new one; the steps
        keep and write that tensor instead of their views of the old one. Each address moves
        with the one storage holding it; storages that share bytes are refused (False, nothing
        moved): an address there has no one storage."""
        if not storages:
            return True
        ordered = sorted(storages)
        starts = np.array([start for start, _ in ordered], dtype=np.int64)
        ends = np.array([start + size for start, size in ordered], dtype=np.int64)
        if (ends[:-1] > starts[1:]).any():
            return False
        addresses, views = self.addresses, self.views
        # the storage each address lies in, if any (found before any moves: storages may swap)
        owner = np.searchsorted(starts, addresses, side="right") - 1
        inside = (owner >= 0) & (addresses < ends[np.maximum(owner, 0)])
        moving = []
        for k, old in enumerate(ordered):
            tensor = storages[old]
            shift = tensor.untyped_storage().data_ptr() - old[0]
            if shift:
                hits = np.flatnonzero(inside & (owner == k))
                moving.append((tensor, shift, hits, views.pop(old, [])))
        for tensor, shift, hits, places in moving:
            for k in hits.tolist():
                self.owners[k][self.places[k]] += shift
            addresses[hits] += shift
            # the new tensor stands for every view of its storage: it keeps the storage alive
            # and takes the version bumps (the old views, and their tensors, are let go)
            for held, k, side in places:
                if side is None:
                    held[k] = tensor
                else:
                    held[k] = (tensor, held[k][1]) if side == 0 else (held[k][0], tensor)
            views.setdefault(_storage(tensor), []).extend(places)
        return True


def _storage(view: torch.Tensor) -> tuple[int, int]:
    """(address, bytes) of the storage behind `view`."""
    storage = view.untyped_storage()
    return storage.data_ptr(), storage.nbytes()


def product(pairs: Sequence[tuple[torch.Tensor, torch.Tensor]], a: torch.Tensor,
            b: torch.Tensor, out: torch.Tensor,
            added: tuple[torch.Tensor, torch.Tensor] | None = None,
            then: Step | None = None) -> Step | None:
    """A step doing, in one call: `pairs`' copies (the operands' conversions),
    `torch.mm(a, b, out=out)` (float32; `a` and `out` row-major, `b` row-major or the transpose
    of a row-major tensor) through the sgemm torch calls, then `added`'s `dst += src` for
    (dst, src) float32 views, or `then`'s copies. The step gives True when the add met a NaN and
    was left out (the caller adds with torch). None when the library or its sgemm is missing, a
    pair has no record, or the sgemm's product of this shape is not bit for bit torch's here
    (`_same_as_torch`). (`joined` puts copies before it in its call.)"""
    lib = library()
    if lib is None or lib.sgemm is None or a.dtype is not torch.float32 or \
            b.dtype is not torch.float32 or out.dtype is not torch.float32 or \
            not (a.is_contiguous() and out.is_contiguous()):
        return None
    transposed = not b.is_contiguous()
    if transposed and not b.t().is_contiguous():
        return None
    (m, k), n = a.shape, b.shape[1]
    if out.shape != (m, n) or b.shape[0] != k or not _same_as_torch(lib, m, n, k, transposed):
        return None
    desc = _Desc()
    if not all(desc.add(_kept_record(lib, dst, src), (dst, src)) for dst, src in pairs):
        return None
    desc.add(_product_record(a, b, out, transposed), (out, a))
    desc.pairs.append((out, b))
    if added is not None and not desc.add(_kept_record(lib, *added, add=True), added):
        return None
    if then is not None:
        desc.take(then)
    return desc.step(lib)


def _product_record(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor,
                    transposed: bool) -> array.array:
    rec = array.array("q", _EMPTY)
    (m, k), n = a.shape, b.shape[1]
    rec[:9] = array.array("q", (_PRODUCT, out.data_ptr(), a.data_ptr(), int(transposed), m, n, k, 1,
                                b.data_ptr()))
    return rec


#: (m, n, k, transposed) → whether the library's sgemm gives torch.mm's bits for that shape
_CHECKED: dict[tuple[int, int, int, bool], bool] = {}


def _same_as_torch(lib: ctypes.CDLL, m: int, n: int, k: int, transposed: bool) -> bool:
    """Whether a product of this shape through the library is bit for bit `torch.mm`'s, on
    this thread's torch threads, tried once per shape on random fp16 values."""
    key = (m, n, k, transposed, torch.get_num_threads())
    found = _CHECKED.get(key)
    if found is None:
        g = torch.Generator().manual_seed(m * 7 + n * 5 + k)
        a = torch.randn(m, k, generator=g).half().float()
        b = torch.randn(n, k, generator=g).half().float()
        b = b.t() if transposed else b.t().contiguous()
        want, got = torch.mm(a, b), torch.empty(m, n)
        desc = array.array("q", (1,)) + _product_record(a, b, got, transposed)
        lib.pypto_copies_run(desc.buffer_info()[0], 0)
        found = _CHECKED[key] = torch.equal(want.view(torch.int32), got.view(torch.int32))
    return found


def _sgemm() -> tuple[int | None, int | None]:
    """The addresses of the sgemm torch's CPU library exports (MKL's, on x86 builds) and of
    MKL's `MKL_Set_Num_Threads_Local` (None each where there is none)."""
    for path in (Path(torch.__file__).parent / "lib").glob("libtorch_cpu.*"):
        try:
            lib = ctypes.CDLL(str(path))
        except OSError:
            continue
        found = [getattr(lib, name, None) for name in ("sgemm_", "SGEMM")]
        found = [fn for fn in found if fn is not None]
        if found:
            threads = getattr(lib, "MKL_Set_Num_Threads_Local", None)  # (by value)
            return _address(found[0]), None if threads is None else _address(threads)
    return None, None


def _address(fn: Any) -> int:
    return ctypes.cast(fn, ctypes.c_void_p).value


def _kept_record(lib: ctypes.CDLL, dst: torch.Tensor, src: torch.Tensor, add: bool = False
                 ) -> array.array | None:
    """`record` (`add`: of `dst += src`), kept per pair of tensor objects while both live at
    the same addresses in storages of the same size (a remade tape binds mostly the same
    cached views)."""
    key = (id(dst), id(src), add)
    where = (dst.data_ptr(), src.data_ptr(), dst.untyped_storage().nbytes(),
             src.untyped_storage().nbytes())
    hit = _RECORDS.get(key)
    if hit is not None and hit[0]() is dst and hit[1]() is src and hit[2] == where:
        return hit[3]
    rec = _record(lib, dst, src, add)
    if len(_RECORDS) >= _RECORDS_MAX:
        _RECORDS.clear()
    _RECORDS[key] = (weakref.ref(dst), weakref.ref(src), where, rec)
    return rec


def record(dst: torch.Tensor, src: torch.Tensor) -> array.array | None:
    """The copies.cpp record of `dst.copy_(src)` (REC_W ints, `pypto_copies_record`), or None
    when it has none: the library not loaded, another dtype pair than same-to-same (not
    complex) or fp16/bf16 → fp32, shapes that differ, a tensor not on the CPU, more than
    4 strided levels, an element written twice, an extent outside its storage, or
    bytes the two share."""
    lib = library()
    return None if lib is None else _record(lib, dst, src)


def _record(lib: ctypes.CDLL, dst: torch.Tensor, src: torch.Tensor, add: bool = False
            ) -> array.array | None:
    if dst.shape != src.shape or not (dst.is_cpu and src.is_cpu) or dst.dtype.is_complex or \
            not dst.numel():
        return None
    if add:
        if dst.dtype is not torch.float32 or src.dtype is not torch.float32:
            return None
        kind = _ADD
    elif dst.dtype is src.dtype:
        kind = 0
    elif dst.dtype is torch.float32 and src.dtype in _CONVERT:
        kind = _CONVERT[src.dtype]
    else:
        return None
    ds, ss = dst.untyped_storage(), src.untyped_storage()
    given = array.array("q", (kind, dst.dim(), dst.data_ptr(), ds.data_ptr(), ds.nbytes(),
                              dst.element_size(), src.data_ptr(), ss.data_ptr(), ss.nbytes(),
                              src.element_size(), *dst.shape, *dst.stride(), *src.stride()))
    out = array.array("q", _EMPTY)
    return out if lib.pypto_copies_record(given.buffer_info()[0], out.buffer_info()[0]) \
        else None


__all__ = ["LIBRARY", "Moves", "chain", "collecting", "copier", "joined", "library",
           "product", "record"]
