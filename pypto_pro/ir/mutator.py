"""Generic tree walking for passes: `Visitor` (read-only) and `Mutator` (rebuilds changed nodes).

Both dispatch on the node class name: define `visit_ForStmt(self, node)` to handle loops, and
call `self.generic(node)` to recurse into its children. `Mutator` returns the same object when
nothing below changed, so `new is old` tells a pass whether it changed anything.
"""
from __future__ import annotations

import dataclasses
from typing import Any

from .nodes import Node


_CHILD_FIELDS: dict[type, tuple[str, ...]] = {}


def _child_field_names(cls: type) -> tuple[str, ...]:
    """Field names that can hold child nodes (not span / type / uid), cached per class."""
    names = _CHILD_FIELDS.get(cls)
    if names is None:
        names = _CHILD_FIELDS[cls] = tuple(
            f.name for f in dataclasses.fields(cls) if f.name not in ("span", "type", "uid"))
    return names


def _children_fields(node: Node):
    for name in _child_field_names(type(node)):
        yield name, getattr(node, name)


class Visitor:
    def visit(self, node: Any) -> None:
        if isinstance(node, Node):
            method = getattr(self, f"visit_{type(node).__name__}", None)
            if method is not None:
                method(node)
            else:
                self.generic(node)
        elif isinstance(node, (tuple, list)):
            for x in node:
                self.visit(x)

    def generic(self, node: Node) -> None:
        for _, value in _children_fields(node):
            self._visit_value(value)

    def _visit_value(self, value: Any) -> None:
        if isinstance(value, Node):
            self.visit(value)
        elif isinstance(value, (tuple, list)):
            for x in value:
                if isinstance(x, tuple) and len(x) == 2 and isinstance(x[0], str):
                    self._visit_value(x[1])  # kwargs / attrs pairs
                else:
                    self._visit_value(x)


class Mutator:
    def visit(self, node: Any) -> Any:
        if isinstance(node, Node):
            method = getattr(self, f"visit_{type(node).__name__}", None)
            return method(node) if method is not None else self.generic(node)
        return node

    def generic(self, node: Node) -> Node:
        changes = {}
        for name, value in _children_fields(node):
            new = self._visit_value(value)
            if new is not value:
                changes[name] = new
        return dataclasses.replace(node, **changes) if changes else node

    def _visit_value(self, value: Any) -> Any:
        if isinstance(value, Node):
            return self.visit(value)
        if isinstance(value, tuple):
            items = []
            changed = False
            for x in value:
                if isinstance(x, tuple) and len(x) == 2 and isinstance(x[0], str):
                    nv = self._visit_value(x[1])
                    new = x if nv is x[1] else (x[0], nv)
                else:
                    new = self._visit_value(x)
                changed |= new is not x
                items.append(new)
            return tuple(items) if changed else value
        return value


def walk(node: Any):
    """Yield every node below (and including) `node`, pre-order."""
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, Node):
            yield n
            kids = []
            for _, value in _children_fields(n):
                kids.append(value)
            stack.extend(reversed(kids))
        elif isinstance(n, (tuple, list)):
            items = [x[1] if isinstance(x, tuple) and len(x) == 2 and isinstance(x[0], str)
                     else x for x in n]
            stack.extend(reversed(items))

