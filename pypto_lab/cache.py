"""The workbench's compile cache: a compiled kernel variant is reused when nothing that can change
its IR has changed.

Owns `CompileCache` and `cache_key`. The key is one tuple of everything that changes the output
(STYLE §5.9): the kernel's source, name and `@pl.jit` options, the `Specialization`, the
`pypto_pro` version and a fingerprint of every global the kernel body names (constants, tile
types, helper functions by their source). A global whose value has no stable text (an object
printed with its address) makes the kernel uncacheable rather than risk a stale compile.
The kernel's file (the cell's linecache name) is part of the key too, so a cached compile's
spans always point at the cell the user is looking at: under ipykernel a cell's name is a hash of
its text, so re-running an unchanged cell hits; terminal IPython numbers its cell names, so
there only the plain API (`pypto_lab.run_cell`, content-hash names) and files hit. `--force`
bypasses the cache. In-memory and per session.
"""
from __future__ import annotations

import ast
import hashlib
import inspect
import types
from collections import OrderedDict
from typing import Any

_SIMPLE = (int, float, complex, str, bytes, bool, type(None))


class Unfingerprintable(Exception):
    """A value whose text is not stable across runs (e.g. a repr with an address)."""


def fingerprint(value: Any, depth: int = 0) -> str:
    """Stable text for `value`, or `Unfingerprintable`."""
    if depth > 4:
        raise Unfingerprintable("too deep")
    if isinstance(value, _SIMPLE):
        return repr(value)
    if isinstance(value, types.ModuleType):
        return f"module {value.__name__}"
    if isinstance(value, (tuple, list, frozenset, set)):
        items = sorted(fingerprint(v, depth + 1) for v in value) if isinstance(
            value, (set, frozenset)) else [fingerprint(v, depth + 1) for v in value]
        return f"{type(value).__name__}({', '.join(items)})"
    if isinstance(value, dict):
        return "dict(" + ", ".join(f"{fingerprint(k, depth + 1)}: {fingerprint(v, depth + 1)}"
                                   for k, v in value.items()) + ")"
    kernel_def = getattr(value, "kernel_def", None)
    if kernel_def is not None:
        return f"kernel {kernel_def.name}: {kernel_def.source}"
    if isinstance(value, (types.FunctionType, type)):
        try:
            return f"{value.__qualname__}: {inspect.getsource(value)}"
        except (OSError, TypeError):
            raise Unfingerprintable(f"no source for {value!r}") from None
    text = repr(value)
    if " at 0x" in text or " object at " in text:
        raise Unfingerprintable(text)
    return f"{type(value).__qualname__} {text}"


def _names(tree: ast.AST) -> list[str]:
    return sorted({n.id for n in ast.walk(tree) if isinstance(n, ast.Name)})


def cache_key(kernel: Any, spec: Any) -> str | None:
    """The cache key of `kernel` compiled for `spec`, or None when it cannot be cached."""
    import pypto_pro

    kdef = kernel.kernel_def
    parts = [pypto_pro.__version__, kdef.file, kdef.name, kdef.source,
             repr(kdef.options.cache_fields()), repr(spec)]
    for name in _names(kdef.tree):
        try:
            value = kdef.env[name]
        except KeyError:
            continue
        try:
            parts.append(f"{name}={fingerprint(value)}")
        except Unfingerprintable:
            return None
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()


class CompileCache:
    """Compiled kernels by `cache_key`, least recently used dropped beyond `capacity`."""

    def __init__(self, capacity: int = 64) -> None:
        self.capacity = capacity
        self._entries: OrderedDict[str, Any] = OrderedDict()

    def get(self, key: str | None) -> Any:
        if key is None or key not in self._entries:
            return None
        self._entries.move_to_end(key)
        return self._entries[key]

    def put(self, key: str | None, compiled: Any) -> None:
        if key is None:
            return
        self._entries[key] = compiled
        self._entries.move_to_end(key)
        while len(self._entries) > self.capacity:
            self._entries.popitem(last=False)

    def clear(self) -> None:
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)
