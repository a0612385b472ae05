"""Tiling-key schemas (spec §1.1, §5.2): decoration-time checks, launch validation, packing."""
from __future__ import annotations

import pytest

from pypto_pro.errors import InvalidArgument
from pypto_pro.runtime.tilingkey import TilingKeyField, build_schema


class Key:
    MODE = TilingKeyField(bits=2, values=[10, 20, 30])
    KIND = TilingKeyField(bits=3, values=[3, 5])
    FLAG = TilingKeyField(bits=1, values=(0, 1))

    def is_valid(self, key):
        mode, _kind, flag = key  # the values in declaration order, as the real runtime passes
        return not (mode == 30 and flag == 1)


def _key_class(**fields):
    return type("K", (), fields)


def test_schema_keeps_declaration_order_and_packs_by_index():
    schema = build_schema(Key)
    assert schema.names == ("MODE", "KIND", "FLAG")
    assert schema.total_bits == 6
    assert schema.pack({"MODE": 10, "KIND": 3, "FLAG": 0}) == 0
    # MODE index 2 in bits 0-1, KIND index 1 in bits 2-4, FLAG index 1 in bit 5
    assert schema.pack({"FLAG": 1, "KIND": 5, "MODE": 20}) == 1 | (1 << 2) | (1 << 5)
    assert schema.pack({"MODE": 30, "KIND": 5, "FLAG": 0}) == 2 | (1 << 2)


def test_validate_returns_ordered_pairs():
    schema = build_schema(Key)
    assert schema.validate({"FLAG": 1, "MODE": 10, "KIND": 3}) == (
        ("MODE", 10), ("KIND", 3), ("FLAG", 1))


@pytest.mark.parametrize("key, fragment", [
    ({"MODE": 10, "KIND": 3}, "missing tiling-key field(s) ['FLAG']"),
    ({"MODE": 10, "KIND": 3, "FLAG": 0, "X": 1}, "unknown tiling-key field(s) ['X']"),
    ({"MODE": 11, "KIND": 3, "FLAG": 0}, "'MODE' value 11 is not a candidate"),
    ({"MODE": 10, "KIND": 3, "FLAG": None}, "'FLAG' value None is not a candidate"),
    ({"MODE": 30, "KIND": 3, "FLAG": 1}, "rejected by Key.is_valid"),
    ([("MODE", 10)], "must be a dict"),
])
def test_bad_keys(key, fragment):
    with pytest.raises(InvalidArgument) as info:
        build_schema(Key).validate(key)
    assert fragment in info.value.message


@pytest.mark.parametrize("fields, fragment", [
    ({}, "has no TilingKeyField members"),
    ({"A": TilingKeyField(bits=0, values=[0])}, "'A' of K must have bits > 0"),
    ({"A": TilingKeyField(bits=True, values=[0])}, "'A' of K must have bits > 0"),
    ({"A": TilingKeyField(bits=2, values=[])}, "'A' of K must have a non-empty 'values'"),
    ({"A": TilingKeyField(bits=2, values=[1, 2, 1])}, "'A' of K: values must be unique"),
    ({"A": TilingKeyField(bits=2, values=[0, True])}, "'A' of K: values must be ints"),
    ({"A": TilingKeyField(bits=2, values=["a"])}, "'A' of K: values must be ints"),
    ({"A": TilingKeyField(bits=2, values=[0.5])}, "'A' of K: values must be ints"),
    ({"A": TilingKeyField(bits=1, values=[0, 1, 2])},
     "'A' of K has 3 candidates, exceeding the 2 representable by 1 bits"),
    ({"A": TilingKeyField(bits=40, values=[0]), "B": TilingKeyField(bits=25, values=[0])},
     "uses 65 bits, exceeding the 64-bit limit"),
    ({"A": TilingKeyField(bits=1, values=[0]), "is_valid": 3}, "is_valid must be a method"),
])
def test_schema_errors(fields, fragment):
    with pytest.raises(ValueError) as info:
        build_schema(_key_class(**fields))
    assert fragment in info.value.message


def test_reserved_names_clash():
    with pytest.raises(ValueError, match=r"\['MODE'\] of Key conflict with kernel parameter"):
        build_schema(Key, {"MODE": "kernel parameter"})


def test_a_key_value_equal_to_a_candidate_is_accepted_as_given():
    schema = build_schema(Key)
    assert schema.validate({"MODE": 10, "KIND": 3, "FLAG": True})[-1] == ("FLAG", True)
    assert schema.pack({"MODE": 20, "KIND": 3, "FLAG": True}) == 1 | (1 << 5)


def test_fields_are_inherited_and_64_bits_is_allowed():
    base = _key_class(A=TilingKeyField(bits=32, values=[0, 7]))
    derived = type("D", (base,), {"B": TilingKeyField(bits=32, values=[5])})
    schema = build_schema(derived)
    assert schema.names == ("A", "B") and schema.total_bits == 64
    assert schema.pack({"A": 7, "B": 5}) == 1
