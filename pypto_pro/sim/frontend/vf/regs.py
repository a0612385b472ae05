"""Register values of the Reg API (spec §2.13): 256-byte `RegTensor`s, `MaskReg` predicates,
`AddrReg` address offsets and `UnalignReg` 32-byte alignment buffers.

A `Reg` holds the raw lanes of one vector register in their storage dtype (`lanes = 256 /
bytes per element`); 4-bit types (FP4) have 512 lanes packed two per byte, the even lane in the
low nibble, so `data` is always the register's 256 bytes' worth of storage. A `Mask` holds one
bit per register byte, as the hardware predicate does: a lane of an element type is active when
the bit of its first byte is set, so one mask serves every element width. Arithmetic is done on
compute values (float32 for floats, int64 for integers) and rounded once into the register's
dtype, as the tile ops and the native backend do.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch

from pypto_pro.ir.dtype import DataType

from ...model.memory import storage_dtype
from ...ops.numerics import RoundMode, to_compute
from ...ops.operands import encode

VL = 256  # bytes per vector register (CCE_VL)


_BITS: dict[str, int] = {d.value: d.bits for d in DataType}


def bits(dtype: DataType) -> int:
    """Bits per element. (`DataType.bits` and enum hashing run Python code: too slow for the
    per-op path; the value string hashes in C.)"""
    return _BITS[dtype._value_]


def lane_count(dtype: DataType) -> int:
    return VL * 8 // bits(dtype)


def lane_bytes(dtype: DataType) -> int:
    """Bytes of the mask a lane of `dtype` owns (4-bit lanes share their byte)."""
    return max(1, bits(dtype) // 8)


@dataclass(eq=False)
class Reg:
    data: torch.Tensor  # [lanes] in storage_dtype(dtype)
    dtype: DataType

    def values(self) -> torch.Tensor:
        """Compute values (float32 / int64) of every lane."""
        if self.dtype is DataType.FP32:
            return self.data
        return to_compute(self.codes(), self.dtype)

    def codes(self) -> torch.Tensor:
        """The stored lanes, 4-bit ones unpacked to one code per lane."""
        if bits(self.dtype) != 4:
            return self.data
        return torch.stack([self.data & 0xF, self.data >> 4], dim=1).reshape(-1)


def from_codes(codes: torch.Tensor, dtype: DataType) -> Reg:
    """A register from one stored code per lane (4-bit codes packed two per byte)."""
    if bits(dtype) == 4:
        pairs = codes.to(torch.uint8).reshape(-1, 2)
        return Reg(pairs[:, 0] | (pairs[:, 1] << 4), dtype)
    return Reg(codes, dtype)


@dataclass(eq=False)
class Mask:
    bits: torch.Tensor  # [256] bool, one per register byte
    _lanes: dict = field(default_factory=dict, repr=False)

    def lanes(self, dtype: DataType) -> torch.Tensor:
        """The active-lane vector of a `dtype` register ([lanes] bool)."""
        width = bits(dtype)
        got = self._lanes.get(width)
        if got is None:
            got = self.bits[::lane_bytes(dtype)]
            if width == 4:
                got = got.repeat_interleave(2)
            self._lanes[width] = got
        return got

    def all_active(self, dtype: DataType) -> bool:
        key = -bits(dtype)
        got = self._lanes.get(key)
        if got is None:
            got = self._lanes[key] = bool(self.lanes(dtype).all())
        return got


def mask_width(dtype: DataType | None) -> int:
    """Predicate bits per lane of `dtype` (b8, b16, b32, b64; 4-bit types count as b8)."""
    return lane_bytes(dtype) if dtype is not None else 4


def mask_bytes(m: Mask) -> torch.Tensor:
    """The predicate's bits as the bytes a mask store writes (bit i of byte i // 8 is the bit
    of register byte i): 32 bytes for a whole predicate."""
    weights = torch.tensor([1, 2, 4, 8, 16, 32, 64, 128], dtype=torch.int32)
    return (m.bits.reshape(-1, 8).to(torch.int32) * weights).sum(dim=1).to(torch.uint8)


def mask_of_bytes(raw: torch.Tensor) -> Mask:
    """The predicate bits of the bytes `raw`, 8 per byte (the inverse of `mask_bytes`)."""
    bits = (raw.to(torch.int32)[:, None] >> torch.arange(8)) & 1
    return Mask(bits.reshape(-1).bool())


@dataclass(frozen=True)
class AddrReg:
    """An address register: `offset` elements of `dtype` (index0 · stride0 + ...)."""

    offset: int
    dtype: DataType

    @property
    def nbytes(self) -> int:
        return self.offset * bits(self.dtype) // 8


@dataclass
class AlignReg:
    """An unaligned-access register: the bytes `data` it holds for UB byte `addr` onwards (a
    load's last 32-byte block; a store's bytes not yet written)."""

    data: torch.Tensor = field(default_factory=lambda: torch.zeros(0, dtype=torch.uint8))
    addr: int = 0


def mask_of_lanes(active: torch.Tensor, dtype: DataType) -> Mask:
    """A predicate with the given `dtype` lanes active (every byte of an active lane set)."""
    if dtype.bits == 4:
        active = active[::2]
    return Mask(active.repeat_interleave(lane_bytes(dtype))[:VL].clone())


_PREFIXES: dict[tuple[int, int], Mask] = {}


def first_lanes(n: int, dtype: DataType) -> Mask:
    """The predicate of the first `n` lanes (shared, immutable objects)."""
    lanes = lane_count(dtype)
    key = (max(0, min(int(n), lanes)), bits(dtype))
    got = _PREFIXES.get(key)
    if got is None:
        got = _PREFIXES[key] = mask_of_lanes(torch.arange(lanes) < key[0], dtype)
    return got


def zeros(dtype: DataType) -> Reg:
    return Reg(torch.zeros(VL * 8 // max(8, bits(dtype)), dtype=storage_dtype(dtype)), dtype)


def from_values(values: torch.Tensor, dtype: DataType,
                mode: RoundMode = RoundMode.CAST_RINT) -> Reg:
    """A register of `dtype` from compute values: floats rounded with `mode`, ints wrapped."""
    if dtype is DataType.FP32 and values.dtype == torch.float32:
        return Reg(values, dtype)
    return from_codes(encode(dtype, values, mode), dtype)


def predicated(new: Reg, old: Reg | None, mask: Mask, merging: bool) -> Reg:
    """`new` on the active lanes; zero (zeroing mode) or `old` (merging mode) elsewhere."""
    if mask.all_active(new.dtype):
        return new
    keep = old.codes() if merging and old is not None and old.dtype == new.dtype else \
        torch.zeros_like(new.codes())
    return from_codes(torch.where(mask.lanes(new.dtype), new.codes(), keep), new.dtype)
