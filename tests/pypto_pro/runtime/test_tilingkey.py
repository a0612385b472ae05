"""Tiling-key schemas (spec §1.1, §5.2): decoration-time checks, launch validation, packing."""
from __future__ import annotations

import pytest

from pypto_pro.errors import InvalidArgument
from pypto_pro.runtime.tilingkey import TilingKeyField, build_schema


class Key:
    MODE = TilingKeyField(bits=2, values=[10, 20, 30])
    KIND = TilingKeyField(bits=3, values=["a", "b"])
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
    assert schema.pack({"MODE": 10, "KIND": "a", "FLAG": 0}) == 0
    # MODE index 2 in bits 0-1, KIND index 1 in bits 2-4, FLAG index 1 in bit 5
    assert schema.pack({"FLAG": 1, "KIND": "b", "MODE": 20}) == 1 | (1 << 2) | (1 << 5)
    assert schema.pack({"MODE": 30, "KIND": "b", "FLAG": 0}) == 2 | (1 << 2)


def test_validate_returns_ordered_pairs():
    schema = build_schema(Key)
    assert schema.validate({"FLAG": 1, "MODE": 10, "KIND": "a"}) == (
        ("MODE", 10), ("KIND", "a"), ("FLAG", 1))


@pytest.mark.parametrize("key, fragment", [
    ({"MODE": 10, "KIND": "a"}, "missing tiling-key field(s) ['FLAG']"),
    ({"MODE": 10, "KIND": "a", "FLAG": 0, "X": 1}, "unknown tiling-key field(s) ['X']"),
    ({"MODE": 11, "KIND": "a", "FLAG": 0}, "'MODE': value 11 is not allowed"),
    ({"MODE": 10, "KIND": "a", "FLAG": True}, "'FLAG': value True is not allowed"),
    ({"MODE": 30, "KIND": "a", "FLAG": 1}, "rejected by Key.is_valid"),
    ([("MODE", 10)], "must be a dict"),
])
def test_bad_keys(key, fragment):
    with pytest.raises(InvalidArgument) as info:
        build_schema(Key).validate(key)
    assert fragment in info.value.message


@pytest.mark.parametrize("fields, fragment", [
    ({}, "declares no TilingKeyField"),
    ({"A": TilingKeyField(bits=0, values=[0])}, "bits must be a positive int"),
    ({"A": TilingKeyField(bits=True, values=[0])}, "bits must be a positive int"),
    ({"A": TilingKeyField(bits=2, values=[])}, "values must not be empty"),
    ({"A": TilingKeyField(bits=2, values=[1, 2, 1])}, "duplicate value 1"),
    ({"A": TilingKeyField(bits=2, values=[0, True])}, "bool values are not allowed"),
    ({"A": TilingKeyField(bits=1, values=[0, 1, 2])}, "3 values do not fit in 1 bit(s)"),
    ({"A": TilingKeyField(bits=40, values=[0]), "B": TilingKeyField(bits=25, values=[0])},
     "needs 65 bits; at most 64"),
    ({"A": TilingKeyField(bits=1, values=[0]), "is_valid": 3}, "is_valid must be a method"),
])
def test_schema_errors(fields, fragment):
    with pytest.raises(ValueError) as info:
        build_schema(_key_class(**fields))
    assert fragment in info.value.message


def test_reserved_names_clash():
    with pytest.raises(ValueError, match="'MODE' of Key clashes with a kernel parameter"):
        build_schema(Key, {"MODE": "a kernel parameter"})


def test_fields_are_inherited_and_64_bits_is_allowed():
    base = _key_class(A=TilingKeyField(bits=32, values=[0, 7]))
    derived = type("D", (base,), {"B": TilingKeyField(bits=32, values=[5])})
    schema = build_schema(derived)
    assert schema.names == ("A", "B") and schema.total_bits == 64
    assert schema.pack({"A": 7, "B": 5}) == 1
