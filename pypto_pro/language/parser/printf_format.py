"""The format string and arguments of `pl.printf` / `pl.pto_assert`, checked as the real
frontend checks them (`debug_ops._validate_printf_arguments`).

Conversions: `%[flags][width][.precision]conversion`, flags `-+ #0`, conversions `d i u x f p`
(no `%%`, `%s`, `%c`, no length modifiers). `%d` / `%i` take a signed integer, BOOL or INDEX;
`%u` an unsigned integer, BOOL or INDEX; `%x` an unsigned integer or INDEX; `%f` FP32 only;
`%p` a pointer. A Python int is an INT64, a float an FP32, a bool a BOOL (`%x` refuses it).
"""
from __future__ import annotations

import ast
from typing import Any

from ...errors import InvalidOperationError, ParserTypeError
from ...ir.dtype import DataType
from ...ir.types import PtrType, ScalarType
from .context import ParseContext

_FLAGS = set("-+ #0")
_CONVERSIONS = set("diuxfp")


def conversions(ctx: ParseContext, fmt: str, node: ast.AST) -> list[str]:
    """The conversion specifications of `fmt`, in order."""
    specs, i = [], 0
    while i < len(fmt):
        if fmt[i] != "%":
            i += 1
            continue
        if fmt[i + 1:i + 2] == "%":
            raise ctx.error(InvalidOperationError, "printf does not support literal '%%'", node)
        j = i + 1
        while j < len(fmt) and fmt[j] in _FLAGS:
            j += 1
        while j < len(fmt) and fmt[j].isdigit():
            j += 1
        if j < len(fmt) and fmt[j] == ".":
            j += 1
            if j >= len(fmt) or not fmt[j].isdigit():
                raise ctx.error(InvalidOperationError, "printf precision must be followed by "
                                                       "digits", node)
            while j < len(fmt) and fmt[j].isdigit():
                j += 1
        if j >= len(fmt):
            raise ctx.error(InvalidOperationError, "printf format string ends with an "
                                                   "incomplete conversion", node)
        if fmt[j] not in _CONVERSIONS:
            raise ctx.error(InvalidOperationError, f"printf does not support conversion "
                                                   f"'%{fmt[j]}'", node,
                            hint="conversions: %d %i %u %x %f %p, no length modifiers")
        specs.append(fmt[i:j + 1])
        i = j + 1
    return specs


def check_printf(ctx: ParseContext, op: str, fmt: str, values: list[Any],
                 node: ast.AST) -> None:
    specs = conversions(ctx, fmt, node)
    if len(specs) != len(values):
        raise ctx.error(InvalidOperationError, f"{op} format expects {len(specs)} scalar "
                                               f"arguments, but got {len(values)}", node)
    for k, (spec, value) in enumerate(zip(specs, values)):
        conversion, t = spec[-1], _type_of(value)
        if conversion == "p":
            if not isinstance(t, PtrType):
                raise ctx.error(ParserTypeError, f"{op} conversion '{spec}' requires a pointer, "
                                                 f"but got {_name(t)}", node)
            continue
        if not isinstance(t, ScalarType):
            raise ctx.error(ParserTypeError, f"{op} argument {k} requires a scalar, but got "
                                             f"{_name(t)}", node,
                            hint="print tiles and tensors with pl.dump_data")
        if not _accepts(conversion, t.dtype, isinstance(value, bool)):
            raise ctx.error(ParserTypeError, f"{op} conversion '{spec}' does not take a "
                                             f"{t.dtype.value} scalar", node, hint=_HINT)


_HINT = ("%d/%i: signed integer, bool or index; %u: unsigned integer, bool or index; "
         "%x: unsigned integer or index; %f: FP32")


def _accepts(conversion: str, dtype: DataType, raw_bool: bool) -> bool:
    index, boolean = dtype is DataType.INDEX, dtype is DataType.BOOL
    if conversion in "di":
        return (dtype.is_int and dtype.kind == "int") or boolean or index
    if conversion == "u":
        return dtype.kind == "uint" or boolean or index
    if conversion == "x":
        return (dtype.kind == "uint" or index) and not raw_bool
    return dtype is DataType.FP32


def _type_of(value: Any) -> Any:
    if isinstance(value, bool):
        return ScalarType(DataType.BOOL)
    if isinstance(value, int):
        return ScalarType(DataType.INT64)
    if isinstance(value, float):
        return ScalarType(DataType.FP32)
    return getattr(value, "type", None)


def _name(t: Any) -> str:
    return type(t).__name__ if t is not None else "a Python value"
