"""Shadow memory: for every byte, which access record last wrote it and, per thread, which
record last read it (record ids index the observer's record table; -1 = none). GM shadows keep
one last reader per byte for all threads (GM is large and read by every core).

Byte sets are int64 address tensors, or a `slice` when contiguous (most tiles and GM windows
are whole rows: slicing avoids gathers and scatters).
"""
from __future__ import annotations

import torch

Bytes = torch.Tensor | slice


def compact(idx: Bytes) -> Bytes:
    """`idx` as a slice when it is one increasing contiguous run of addresses."""
    if isinstance(idx, slice):
        return idx
    n = idx.numel()
    if n and int(idx[-1]) - int(idx[0]) + 1 == n and (n == 1 or bool((idx[1:] > idx[:-1]).all())):
        return slice(int(idx[0]), int(idx[0]) + n)
    return idx


class Shadow:
    """Shadow state of one byte-addressed memory (an on-chip buffer or a GM storage)."""

    def __init__(self, size: int, per_thread_reads: bool = True) -> None:
        self.size = size
        self.per_thread_reads = per_thread_reads
        self.writer = torch.full((size,), -1, dtype=torch.int32)
        self.readers: dict[int, torch.Tensor] = {}  # thread id → last read record per byte

    def last_writers(self, idx: Bytes) -> list[int]:
        return _ids(self.writer[idx])

    def last_readers(self, idx: Bytes, but: int) -> list[int]:
        """Records of the last reads of `idx` by every thread other than `but`."""
        out: list[int] = []
        for tid, rd in self.readers.items():
            if tid != but:
                out.extend(_ids(rd[idx]))
        return out

    def wrote(self, idx: Bytes, rec: int) -> None:
        self.writer[idx] = rec

    def read(self, idx: Bytes, tid: int, rec: int) -> None:
        tid = tid if self.per_thread_reads else -1
        rd = self.readers.get(tid)
        if rd is None:
            rd = self.readers[tid] = torch.full((self.size,), -1, dtype=torch.int32)
        rd[idx] = rec


def _ids(values: torch.Tensor) -> list[int]:
    if values.numel() == 0:
        return []
    lo, hi = torch.aminmax(values)
    if lo == hi:  # the common case: one record covers the whole access
        return [int(lo)] if lo >= 0 else []
    return [int(i) for i in torch.unique(values) if i >= 0]
