"""TilingData (spec §1.2, §4.3): the field list of a `@dataclass` tiling parameter and its bytes.

A tiling class is a dataclass whose fields are `int` / `float` / `bool` or fixed arrays written
`T[N]` (1 ≤ N ≤ 2048). Array annotations only exist as strings, so the class's module needs
`from __future__ import annotations`; `N` is an int literal or a name of the class's module.
C layout: int → int64_t, float → float, bool → bool, in declaration order with native
alignment — the host serialises an instance through a `ctypes.Structure` built from the same
list (`to_bytes`), and codegen writes `<Class>_tiling.h` from `c_struct_fields`.
Imports only the error classes.
"""
from __future__ import annotations

import ast
import ctypes
import dataclasses
import inspect
import numbers
import sys
import textwrap
import weakref
from typing import Any

from ..errors import InvalidArgument, InvalidType, OutOfRange
from ..frozen import Frozen

MAX_ARRAY = 2048
_KINDS: dict[str, tuple[Any, str]] = {
    "int": (ctypes.c_int64, "int64_t"),
    "float": (ctypes.c_float, "float"),
    "bool": (ctypes.c_bool, "bool"),
}
_INT64_MASK = (1 << 64) - 1
_fields_cache: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_struct_cache: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


class TilingField(Frozen):
    """One field: Python kind ("int"/"float"/"bool"), C++ type, array length (None: scalar)."""

    __slots__ = ("name", "kind", "ctype", "length")
    name: str
    kind: str
    ctype: str
    length: int | None

    def __init__(self, name: str, kind: str, ctype: str, length: int | None = None) -> None:
        self._init(name=name, kind=kind, ctype=ctype, length=length)


def is_tiling_class(obj: Any) -> bool:
    return isinstance(obj, type) and dataclasses.is_dataclass(obj)


def tiling_fields(cls: type) -> tuple[TilingField, ...]:
    """The checked field list of a tiling class (cached per class)."""
    cached = _fields_cache.get(cls)
    if cached is None:
        cached = _build_fields(cls)
        _fields_cache[cls] = cached
    return cached


def c_struct_fields(cls: type) -> tuple[tuple[str, str, int | None], ...]:
    """`(name, C++ type, array size or None)` per field, for the generated tiling header."""
    return tuple((f.name, f.ctype, f.length) for f in tiling_fields(cls))


def ctypes_struct(cls: type) -> type[ctypes.Structure]:
    """The `ctypes.Structure` with the class's native layout (cached per class)."""
    cached = _struct_cache.get(cls)
    if cached is None:
        layout = []
        for f in tiling_fields(cls):
            ctype = _KINDS[f.kind][0]
            layout.append((f.name, ctype if f.length is None else ctype * f.length))
        cached = type(f"{cls.__name__}_Struct", (ctypes.Structure,), {"_fields_": layout})
        _struct_cache[cls] = cached
    return cached


def to_bytes(instance: Any) -> bytes:
    """Serialise a tiling instance with native ctypes alignment (what the kernel reads)."""
    cls = type(instance)
    if not is_tiling_class(cls):
        raise InvalidType(f"tiling data must be a @dataclass instance, got {cls.__name__}",
                          module="PRO_RUNTIME")
    struct = ctypes_struct(cls)()
    for f in tiling_fields(cls):
        value = getattr(instance, f.name)
        where = f"{cls.__name__}.{f.name}"
        if f.length is None:
            setattr(struct, f.name, _scalar(value, f.kind, where))
        else:
            items = _array(value, f, where)
            setattr(struct, f.name, (_KINDS[f.kind][0] * f.length)(*items))
    return bytes(struct)


def stored_fields(cls: type, data: bytes) -> dict[str, Any]:
    """The field values a kernel reads from `data` (`to_bytes` of a `cls` instance): an int
    given to a float field reads 3.0, a too-wide int wrapped, an array is a list."""
    struct = ctypes_struct(cls).from_buffer_copy(data)
    return {f.name: (getattr(struct, f.name) if f.length is None
                     else list(getattr(struct, f.name))) for f in tiling_fields(cls)}


def _scalar(value: Any, kind: str, where: str) -> Any:
    """A field value as the real runtime's ctypes struct stores it: an int field takes ints and
    bools (wrapping to int64_t), a float field any real number, a bool field any number (its
    truth); anything else is refused."""
    if isinstance(value, numbers.Real):
        if kind == "bool":
            return bool(value)
        if kind == "float":
            return float(value)
        if isinstance(value, numbers.Integral):
            value = int(value) & _INT64_MASK
            return value - (1 << 64) if value >> 63 else value
    raise InvalidType(f"{where}: expected {kind}, got {type(value).__name__} {value!r}",
                      module="PRO_RUNTIME")


def _array(value: Any, f: TilingField, where: str) -> list[Any]:
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, (str, bytes, bytearray)) or not (
            hasattr(value, "__getitem__") and hasattr(value, "__len__")):
        raise InvalidType(f"{where} is {f.kind}[{f.length}]: expected an indexable sequence, "
                          f"got {type(value).__name__}", module="PRO_RUNTIME")
    if len(value) != f.length:
        raise InvalidArgument(f"{where}: expected {f.length} elements, got {len(value)}",
                              module="PRO_RUNTIME")
    return [_scalar(value[i], f.kind, f"{where}[{i}]") for i in range(f.length)]


def _build_fields(cls: type) -> tuple[TilingField, ...]:
    if not is_tiling_class(cls):
        raise InvalidType(f"tiling data must be a @dataclass class, got {cls!r}",
                          module="PRO_RUNTIME")
    duplicate = _duplicate_field(cls)
    if duplicate is not None:
        raise InvalidArgument(f"TilingData {cls.__name__}: duplicate field {duplicate!r}",
                              module="PRO_RUNTIME")
    module_env = vars(sys.modules[cls.__module__]) if cls.__module__ in sys.modules else {}
    out = [_parse_field(cls.__name__, f.name, _annotation(cls, f), module_env)
           for f in dataclasses.fields(cls)]
    if not out:
        raise InvalidArgument(f"TilingData {cls.__name__} has no fields", module="PRO_RUNTIME")
    return tuple(out)


def _annotation(cls: type, f: dataclasses.Field) -> Any:
    """A field's annotation as the class holds it now (as the real runtime reads
    `__annotations__`), else as the dataclass recorded it."""
    for klass in cls.__mro__:
        found = vars(klass).get("__annotations__", {})
        if f.name in found:
            return found[f.name]
    return f.type


def _parse_field(owner: str, name: str, annotation: Any, env: dict) -> TilingField:
    where = f"TilingData {owner}.{name}"
    if annotation in (int, float, bool):
        annotation = annotation.__name__
    try:
        node = ast.parse(annotation, mode="eval").body if isinstance(annotation, str) else None
    except SyntaxError:
        node = None
    if isinstance(node, ast.Name) and node.id in _KINDS:
        return TilingField(name, node.id, _KINDS[node.id][1])
    if (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name)
            and node.value.id in _KINDS):
        length = _array_length(node.slice, env, where)
        return TilingField(name, node.value.id, _KINDS[node.value.id][1], length)
    # (a ValueError, as the real runtime's "Invalid tiling field ... annotation")
    raise InvalidArgument(f"{where}: unsupported annotation {annotation!r}; use int, float, "
                          "bool or an array T[N] (with `from __future__ import annotations`)",
                          module="PRO_RUNTIME")


def _array_length(node: ast.expr, env: dict, where: str) -> int:
    if isinstance(node, ast.Constant):
        length = node.value
    elif (isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub)
          and isinstance(node.operand, ast.Constant)):
        length = -node.operand.value if isinstance(node.operand.value, int) else None
    elif isinstance(node, ast.Name) and node.id in env:
        length = env[node.id]
    else:
        raise InvalidArgument(f"{where}: array size must be an int literal or a module "
                              "constant", module="PRO_RUNTIME")
    if not isinstance(length, int) or isinstance(length, bool) or not 1 <= length <= MAX_ARRAY:
        raise OutOfRange(f"{where}: array size must be in 1..{MAX_ARRAY}, got {length!r}",
                         module="PRO_RUNTIME")
    return length


def _duplicate_field(cls: type) -> str | None:
    """A field declared twice: in one class body (seen in the source) or again in a subclass."""
    seen: set[str] = set()
    for klass in reversed(cls.__mro__):
        for name in vars(klass).get("__annotations__", {}):
            if name in seen:
                return name
            seen.add(name)
    return _duplicate_in_source(cls)


def _duplicate_in_source(cls: type) -> str | None:
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    except (OSError, TypeError, SyntaxError):
        return None
    body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
    seen: set[str] = set()
    for stmt in body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            if stmt.target.id in seen:
                return stmt.target.id
            seen.add(stmt.target.id)
    return None
