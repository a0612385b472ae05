"""Tiling keys (spec §1.1 `tiling_key=`): the schema class, its checks, packing a key.

A tiling-key class declares fields as class attributes `NAME = TilingKeyField(bits=, values=)`
(in declaration order) and optionally `is_valid(self, key) -> bool`, called (as the real
runtime calls it) with the tuple of the key's values in declaration order.
Each field's value is encoded by its index in `values`; the first field takes the lowest bits.
The schema is checked once at decoration (spec §5.2) and every key at launch. Imports only
the error classes.
"""
from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..errors import InvalidArgument
from ..frozen import Frozen

MAX_TOTAL_BITS = 64


class TilingKeyField(Frozen):
    """One field of a tiling key: `bits` wide, one of `values` (encoded by index)."""

    __slots__ = ("bits", "values")
    bits: int
    values: tuple[Any, ...]

    def __init__(self, bits: int, values: Iterable[Any]) -> None:
        self._init(bits=bits, values=tuple(values))


def _fail(message: str) -> InvalidArgument:
    return InvalidArgument(message, module="PRO_RUNTIME")


class TilingKeySchema(Frozen):
    """The checked fields of a tiling-key class, in declaration order. `TilingKeySchema(cls)`
    checks the class (spec §5.2); besides our own methods it answers the real runtime's
    (`cls_name`, `field_names()`, `is_valid`, `validate_concrete()`, `enumerate_valid()`)."""

    __slots__ = ("cls", "fields")
    cls: type
    fields: tuple[tuple[str, TilingKeyField], ...]

    def __init__(self, cls: type,
                 fields: tuple[tuple[str, TilingKeyField], ...] | None = None) -> None:
        self._init(cls=cls, fields=tuple(_checked_fields(cls)) if fields is None else fields)

    @property
    def total_bits(self) -> int:
        return sum(f.bits for _, f in self.fields)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(n for n, _ in self.fields)

    @property
    def cls_name(self) -> str:
        return self.cls.__name__

    def field_names(self) -> list[str]:
        return list(self.names)

    @property
    def is_valid(self) -> Callable[[tuple], bool] | None:
        """The class's `is_valid(self, key)` bound to an instance, or None."""
        check = getattr(self.cls, "is_valid", None)
        return None if check is None else check.__get__(self.cls.__new__(self.cls), self.cls)

    def enumerate_valid(self) -> list[tuple]:
        """Every combination of field values (declaration order) that `is_valid` accepts."""
        combos = itertools.product(*(f.values for _, f in self.fields))
        check = self.is_valid
        return [c for c in combos if check is None or check(c)]

    def validate_concrete(self, key: Any) -> None:
        """Raise `InvalidArgument` unless `key` is a complete, allowed, valid key dict."""
        self.validate(key)

    def validate(self, key: Any) -> tuple[tuple[str, Any], ...]:
        """Check a launch key dict; returns `((field, value), ...)` in declaration order. A
        value is allowed when it equals a declared value (`True` for 1, as the real runtime's
        `value in values`); the kernel sees it as given."""
        if not isinstance(key, Mapping):
            raise _fail(f"tiling key for {self.cls.__name__} must be a dict "
                        f"{{field: value}}, got {type(key).__name__}")
        unknown = [k for k in key if k not in self.names]
        if unknown:
            raise _fail(f"unknown tiling-key field(s) {unknown} for {self.cls.__name__}; "
                        f"fields: {list(self.names)}")
        missing = [n for n in self.names if n not in key]
        if missing:
            raise _fail(f"missing tiling-key field(s) {missing} for {self.cls.__name__}")
        for name, fld in self.fields:
            if _index_of(fld.values, key[name]) is None:
                raise _fail(f"tilingkey field '{name}' value {key[name]!r} is not a "
                            f"candidate; allowed: {list(fld.values)}")
        ordered = tuple((n, key[n]) for n in self.names)
        self._check_is_valid(ordered)
        return ordered

    def _check_is_valid(self, ordered: tuple[tuple[str, Any], ...]) -> None:
        check = self.is_valid
        if check is not None and not check(tuple(v for _, v in ordered)):
            raise _fail(f"tiling key {dict(ordered)} rejected by "
                        f"{self.cls.__name__}.is_valid")

    def pack(self, key: Any) -> int:
        """The packed integer of a key: each value's index, first field in the lowest bits."""
        packed, shift = 0, 0
        for (_, fld), (_, value) in zip(self.fields, self.validate(key)):
            packed |= _index_of(fld.values, value) << shift
            shift += fld.bits
        return packed


def _index_of(values: tuple[int, ...], value: Any) -> int | None:
    """Index of the declared value (an int) equal to `value`, or None."""
    for i, v in enumerate(values):
        try:
            if v == value:
                return i
        except Exception:  # (an object whose == raises is no candidate)
            return None
    return None


def build_schema(cls: Any, reserved: Mapping[str, str] | None = None) -> TilingKeySchema:
    """Check a tiling-key class (spec §5.2) and return its schema.

    `reserved` maps names a field must not take to what they already are ("kernel parameter",
    "module-level variable", "datatype variable"): field names become constants in the kernel.
    """
    schema = TilingKeySchema(cls)
    for kind in ("kernel parameter", "module-level variable", "datatype variable"):
        clash = [n for n in schema.names if reserved and reserved.get(n) == kind]
        if clash:
            raise _fail(f"TilingKey field name(s) {clash} of {cls.__name__} conflict with "
                        f"{kind} name(s)")
    return schema


def _checked_fields(cls: Any) -> list[tuple[str, TilingKeyField]]:
    if not isinstance(cls, type):
        raise _fail(f"tiling_key must be a class, got {type(cls).__name__} {cls!r}")
    fields = _declared_fields(cls)
    if not fields:
        raise _fail(f"tiling_key class '{cls.__name__}' has no TilingKeyField members")
    for name, fld in fields:
        _check_field(cls, name, fld)
    total = sum(f.bits for _, f in fields)
    if total > MAX_TOTAL_BITS:
        raise _fail(f"tiling_key class '{cls.__name__}' uses {total} bits, exceeding the "
                    f"{MAX_TOTAL_BITS}-bit limit")
    check = getattr(cls, "is_valid", None)
    if check is not None and not callable(check):
        raise _fail(f"{cls.__name__}.is_valid must be a method is_valid(self, key) -> bool")
    return fields


def _declared_fields(cls: type) -> list[tuple[str, TilingKeyField]]:
    merged: dict[str, TilingKeyField] = {}
    for klass in reversed(cls.__mro__):
        for name, value in vars(klass).items():
            if isinstance(value, TilingKeyField):
                merged[name] = value
    return list(merged.items())


def _check_field(cls: type, name: str, fld: TilingKeyField) -> None:
    """The real schema's checks and wording: bits > 0, non-empty int values, unique, at most
    2**bits candidates."""
    where = f"tilingkey field '{name}' of {cls.__name__}"
    if not isinstance(fld.bits, int) or isinstance(fld.bits, bool) or fld.bits <= 0:
        raise _fail(f"{where} must have bits > 0, got {fld.bits!r}")
    if not fld.values:
        raise _fail(f"{where} must have a non-empty 'values' list")
    for v in fld.values:
        if not isinstance(v, int) or isinstance(v, bool):
            raise _fail(f"{where}: values must be ints, got {v!r}")
    if len(set(fld.values)) != len(fld.values):
        raise _fail(f"{where}: values must be unique, got {list(fld.values)}")
    if len(fld.values) > 1 << fld.bits:
        raise _fail(f"{where} has {len(fld.values)} candidates, exceeding the "
                    f"{1 << fld.bits} representable by {fld.bits} bits")
