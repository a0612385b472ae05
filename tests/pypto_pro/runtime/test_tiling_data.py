"""TilingData (spec §1.2, §4.3): field parsing, native ctypes layout, bytes, errors."""
from __future__ import annotations

import ctypes
import struct
from dataclasses import dataclass

import pytest
import torch

from pypto_pro.errors import InvalidArgument, InvalidType
from pypto_pro.runtime.tiling_data import (
    c_struct_fields,
    ctypes_struct,
    stored_fields,
    tiling_fields,
    to_bytes,
)

WIDTH = 3


@dataclass
class Tiling:
    n: int
    scale: float
    flag: bool
    offsets: int[4]
    weights: float[WIDTH]
    mask: bool[5]


class Reference(ctypes.Structure):
    _fields_ = [("n", ctypes.c_int64), ("scale", ctypes.c_float), ("flag", ctypes.c_bool),
                ("offsets", ctypes.c_int64 * 4), ("weights", ctypes.c_float * 3),
                ("mask", ctypes.c_bool * 5)]


def _sample() -> Tiling:
    return Tiling(n=-5, scale=0.25, flag=True, offsets=[1, 2, 3, 4], weights=(0.5, 1.5, 2.5),
                  mask=[True, False, True, False, True])


def test_fields_and_c_struct_fields():
    assert c_struct_fields(Tiling) == (
        ("n", "int64_t", None), ("scale", "float", None), ("flag", "bool", None),
        ("offsets", "int64_t", 4), ("weights", "float", 3), ("mask", "bool", 5))
    assert [f.kind for f in tiling_fields(Tiling)] == ["int", "float", "bool"] * 2


def test_layout_matches_native_ctypes_alignment():
    layout = ctypes_struct(Tiling)
    assert ctypes.sizeof(layout) == ctypes.sizeof(Reference) == 72
    for name, _ in Reference._fields_:
        assert getattr(layout, name).offset == getattr(Reference, name).offset
    assert (layout.scale.offset, layout.flag.offset, layout.offsets.offset) == (8, 12, 16)


def test_bytes_match_a_hand_built_struct():
    ref = Reference(-5, 0.25, True, (ctypes.c_int64 * 4)(1, 2, 3, 4),
                    (ctypes.c_float * 3)(0.5, 1.5, 2.5),
                    (ctypes.c_bool * 5)(True, False, True, False, True))
    data = to_bytes(_sample())
    assert data == bytes(ref)
    assert struct.unpack_from("=qf?", data, 0) == (-5, 0.25, True)
    assert struct.unpack_from("=4q", data, 16) == (1, 2, 3, 4)


def test_tensor_arrays_are_accepted():
    sample = _sample()
    sample.offsets = torch.tensor([1, 2, 3, 4])
    assert to_bytes(sample) == to_bytes(_sample())


def test_wrong_list_length_and_types():
    sample = _sample()
    sample.offsets = [1, 2, 3]
    with pytest.raises(InvalidArgument, match="Tiling.offsets: expected 4 elements, got 3"):
        to_bytes(sample)
    sample = _sample()
    sample.offsets = 7
    with pytest.raises(InvalidType, match="Tiling.offsets is int.4.: expected an indexable"):
        to_bytes(sample)
    sample = _sample()
    sample.n = 1.5
    with pytest.raises(InvalidType, match="Tiling.n: expected int"):
        to_bytes(sample)
    sample = _sample()
    sample.mask = [True, None, True, False, True]
    with pytest.raises(InvalidType, match=r"Tiling.mask\[1\]: expected bool"):
        to_bytes(sample)


def test_values_are_stored_as_the_c_struct_stores_them():
    """As the real runtime's ctypes struct: an int field wraps to int64_t and takes bools, a
    bool field takes any number's truth, a float field any real number."""
    sample = _sample()
    sample.n, sample.mask = (1 << 64) + 5, [2, 0, 0.5, False, True]
    stored = stored_fields(Tiling, to_bytes(sample))
    assert stored["n"] == 5 and stored["mask"] == [True, False, True, False, True]
    sample.n = 1 << 63
    assert stored_fields(Tiling, to_bytes(sample))["n"] == -(1 << 63)
    sample.n = True
    assert stored_fields(Tiling, to_bytes(sample))["n"] == 1


def test_array_size_must_be_1_to_2048():
    @dataclass
    class Empty:
        a: int[0]

    @dataclass
    class Big:
        a: float[2049]

    @dataclass
    class Max:
        a: bool[2048]

    for cls in (Empty, Big):
        with pytest.raises(ValueError, match="array size must be in 1..2048"):
            tiling_fields(cls)
    assert c_struct_fields(Max) == (("a", "bool", 2048),)


def test_duplicate_field_is_rejected():
    @dataclass
    class Twice:
        a: int
        b: float
        a: int  # noqa: F811 (the duplicate under test)

    @dataclass
    class Base:
        a: int

    @dataclass
    class Derived(Base):
        a: float

    for cls in (Twice, Derived):
        with pytest.raises(InvalidArgument, match="duplicate field 'a'"):
            tiling_fields(cls)


def test_unsupported_field_annotation():
    @dataclass
    class Bad:
        a: list[int]

    with pytest.raises(ValueError, match="Bad.a: unsupported annotation 'list\\[int\\]'"):
        tiling_fields(Bad)
