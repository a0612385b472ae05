"""Parser state: the statement builder, name scopes and span helpers.

A `Scope` maps Python names to parse-time values: IR expressions (runtime values, tiles,
tensors, groups), plain Python values (compile-time constants, functions, modules) or
`PyList`s of those. Names assigned at more than one site are "mutable" and always live in an
IR `Var`; single-assignment names may keep a compile-time constant (folded at parse time).
"""
from __future__ import annotations

import ast
from collections import ChainMap
from dataclasses import dataclass, field
from typing import Any

from ...errors import ParserError, ParserSyntaxError, PyptoError, UnsupportedFeatureError
from ...ir.nodes import AssignStmt, Expr, Function, Stmt, Var, seq
from ...ir.span import Span
from ...ir.types import Type


@dataclass
class PyList:
    """A Python tuple/list of parse-time values (e.g. a ring of tiles), indexable at runtime."""

    items: list[Any]


@dataclass
class NamedTuple(PyList):
    """`pl.make_tuple(a=..., b=...)`: a compile-time tuple whose fields read back the values
    packed into it (no C++ form, no runtime cost); indexable and unpackable like a tuple."""

    names: tuple[str, ...] = ()

    def field(self, name: str) -> Any:
        return self.items[self.names.index(name)]


@dataclass
class GroupChoice:
    """A tile group chosen at run time: `groups[selector]` (a runtime INDEX value that never
    changes after the choice). Its accesses dispatch on the selector (see `containers`)."""

    selector: Expr
    groups: tuple[Any, ...]  # tile-group Vars or nested GroupChoices


@dataclass
class Unmerged:
    """A name the branches of a runtime `if` bound to values that cannot share one variable
    (tiles of other shapes), or a loop re-bound to a compile-time value (a tile group, a
    tuple): reading it after the `if` / loop is an error."""

    what: str  # "tiles" | "tile groups" | "values"
    where: str  # "the branches of the if at line N" | "the loop at line N"
    hint: str = ("bind it once before the if (re-assigning a same-shape tile in a branch is "
                 "fine), or use it only inside the branches")


class Builder:
    """Collects statements; `block()` opens a nested statement list."""

    def __init__(self) -> None:
        self.stack: list[list[Stmt]] = [[]]

    def emit(self, stmt: Stmt) -> None:
        self.stack[-1].append(stmt)

    def push(self) -> None:
        self.stack.append([])

    def pop(self, span: Span | None = None) -> Stmt:
        stmts = self.stack.pop()
        return seq(stmts, span) if span is not None else seq(stmts)


@dataclass
class FunctionFrame:
    """One function being parsed (the kernel or an inlined helper)."""

    file: str
    env: ChainMap  # the Python environment the function's names resolve in
    scope: dict[str, Any] = field(default_factory=dict)
    mutable: frozenset[str] = frozenset()
    vars: dict[str, Var] = field(default_factory=dict)
    # per enclosing loop being parsed: name → ids of the bindings the loop body read
    loop_reads: list[dict[str, set[int]]] = field(default_factory=list)
    in_helper: bool = False  # an inlined helper (its returns were lowered by `returns`)
    var_depth: dict[Var, int] = field(default_factory=dict)  # mutable Var → its flow depth
    loop_depth: int = 0
    # a SIMT function's own frame: "entry" | "callee", and its `return`s (value or None)
    simt: str | None = None
    simt_returns: list[tuple[Expr | None, ast.Return]] = field(default_factory=list)


class NameGen:
    def __init__(self) -> None:
        self.used: dict[str, int] = {}

    def fresh(self, base: str) -> str:
        n = self.used.get(base, 0)
        self.used[base] = n + 1
        return base if n == 0 else f"{base}_{n}"


def span_of(node: ast.AST, file: str) -> Span:
    line = getattr(node, "lineno", 0)
    col = getattr(node, "col_offset", 0) + 1
    end_line = getattr(node, "end_lineno", None)
    end_col = getattr(node, "end_col_offset", None)
    return Span(file, line, col, end_line, None if end_col is None else end_col + 1)


def assigned_names(body: list[ast.stmt]) -> dict[str, int]:
    """How many assignment sites each name has in a function body (for-targets included)."""
    counts: dict[str, int] = {}

    def add(target: ast.AST, weight: int = 1) -> None:
        if isinstance(target, ast.Name):
            counts[target.id] = counts.get(target.id, 0) + weight
        elif isinstance(target, (ast.Tuple, ast.List)):
            for elt in target.elts:
                add(elt, weight)

    for node in ast.walk(ast.Module(body=body, type_ignores=[])):
        if isinstance(node, ast.Assign):
            for t in node.targets:
                add(t)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            add(node.target, 2 if isinstance(node, ast.AugAssign) else 1)
        elif isinstance(node, (ast.For, ast.While)):
            # names assigned inside a loop body are re-assigned on every iteration
            if isinstance(node, ast.For):
                add(node.target)
            for inner in ast.walk(ast.Module(body=node.body, type_ignores=[])):
                if isinstance(inner, ast.Assign):
                    for t in inner.targets:
                        add(t)
                elif isinstance(inner, ast.AugAssign):
                    add(inner.target)
        elif isinstance(node, ast.NamedExpr):
            add(node.target)
    return counts


class ParseContext:
    """Everything the statement and expression handlers share while parsing one target."""

    def __init__(self, target: str, kernel_name: str, constants: dict[str, Any],
                 arch: str = "a5") -> None:
        self.target = target  # "cube" | "vector"
        self.arch = arch  # what the layouts of cube buffers are checked against
        self.kernel_name = kernel_name
        self.constants = constants  # tiling-key fields, datatype variables
        self.builder = Builder()
        self.names = NameGen()
        self.frames: list[FunctionFrame] = []
        self.section: str | None = None  # "cube" | "vector" | "vf" | "simt" while inside one
        self.matched_sections: set[str] = set()
        self.extra_functions: list = []  # SIMT functions instantiated during parsing
        self.simt_instances: dict[tuple, Function] = {}  # (function, argument types) → IR
        self.simt_stack: list = []  # SIMT functions being instantiated (recursion check)
        self.assign_target: Any = None  # the target AST of the assignment being evaluated
        self.op_call: ast.Call | None = None  # the pl / vf / system op call being dispatched

    # ------------------------------------------------------------ frames and names
    @property
    def frame(self) -> FunctionFrame:
        return self.frames[-1]

    def lookup(self, name: str, span: Span) -> Any:
        frame = self.frame
        if name in frame.scope:
            value = frame.scope[name]
            for reads in frame.loop_reads:
                reads.setdefault(name, set()).add(id(value))
            if isinstance(value, Unmerged):
                raise self.error(UnsupportedFeatureError, f"'{name}' names different "
                                 f"{value.what} on {value.where}, so it has no single value "
                                 f"after it", span, hint=value.hint)
            return value
        if name in self.constants:
            return self.constants[name]
        try:
            return frame.env[name]
        except KeyError:
            pass
        import builtins

        if hasattr(builtins, name):
            return getattr(builtins, name)
        if name == "vf":  # the real parser reads `vf.<op>(...)` by its spelling: no import
            from ... import language

            return language.vf
        from ...errors import UndefinedVariableError

        raise UndefinedVariableError(f"Undefined variable '{name}'", span,  # the real words
                                     hint=_did_you_mean(name, list(frame.scope)
                                                        + list(frame.env.keys())))

    def new_var(self, name: str, ty: Type, span: Span) -> Var:
        # names the parser makes up (`__pypto_result`) read as `result` in IR and C++
        return Var(self.names.fresh(name.removeprefix("__pypto_")), ty, span)

    def bind_value(self, name: str, value: Any, span: Span) -> None:
        """Bind a Python name. Mutable names always live in one Var (Python scalars become IR
        constants); a runtime expression bound once gets its own Var; other values alias. A
        scalar of another dtype gets a new Var in straight-line code, but inside an `if` or a
        loop nested deeper than the Var it converts to the Var's type, as the real SSA pass
        types a phi or a loop-carried value by the value it had before (a new Var there would
        leave the name unset on the other path)."""
        from ...ir.nodes import Cast, ConstInt, GetItem, const
        from ...ir.types import ScalarType, StructType

        frame = self.frame
        mutable = name in frame.mutable
        if mutable and isinstance(value, (bool, int, float)):
            value = const(value, span)
        if isinstance(value, Var) and self._rename_fresh(value, name, span):
            return
        if isinstance(value, GetItem) and isinstance(value.type, StructType):
            # `slot = ring[i]` names that element of the struct_array (writes through `slot`
            # change the ring, as in Python), at the index as it is now
            index = value.index
            if not isinstance(index, ConstInt):
                index = self.new_var("idx", index.type, span)
                self.builder.emit(AssignStmt(index, value.index, span))
            frame.scope[name] = GetItem(value.value, index, value.type, value.span)
            return
        if isinstance(value, Var) and not mutable and value in frame.var_depth and not \
                isinstance(value.type, StructType) and not is_group(value):
            # `saved = total` where `total` is reassigned later: its Var changes with it, so
            # `saved` takes the value it has now (a tile: the tile it names now)
            var = self.new_var(name, value.type, span)
            self.builder.emit(AssignStmt(var, value, span))
            frame.scope[name] = var
            return
        if not isinstance(value, Expr) or (isinstance(value, Var) and not mutable) or \
                is_group(value):
            frame.scope[name] = value
            return
        var = frame.vars.get(name) if mutable else None
        if var is not None and not _same_kind(var.type, value.type) and not (
                isinstance(var.type, ScalarType) and isinstance(value.type, ScalarType)
                and self.flow_depth > frame.var_depth.get(var, 0)):
            var = None  # a different kind of value: a new variable
        if var is None:
            var = self.new_var(name, value.type, span)
            if mutable:
                frame.vars[name] = var
                frame.var_depth[var] = self.flow_depth
        elif isinstance(var.type, ScalarType) and value.type != var.type:
            value = Cast(value, var.type, span)
        self.builder.emit(AssignStmt(var, value, span))
        frame.scope[name] = var

    @property
    def flow_depth(self) -> int:
        """How many `if` / loop bodies the statement being parsed is nested in."""
        return len(self.builder.stack) - (self.section is not None)

    def _rename_fresh(self, var: Var, name: str, span: Span) -> bool:
        """`t = g.next()` (or `a, b = helper()` returning new groups): store the value the
        parser just materialised under a made-up name straight into the user's name, if
        nothing used it since."""
        if var.name == name or var.name.split("_")[0] not in (
                "tile", "group", "val", "view", "old", "struct"):
            return False
        stmts = self.builder.stack[-1]
        at = _definition(stmts, var)
        if at is None:
            return False
        last = stmts[at]
        frame = self.frame
        shared = name in frame.mutable and not is_group(var)  # each group keeps its own Var
        target = frame.vars.get(name) if shared else None
        if target is None or not _same_kind(target.type, var.type):
            target = self.new_var(name, var.type, span)
            if shared:
                frame.vars[name] = target
                frame.var_depth[target] = self.flow_depth
        stmts[at] = AssignStmt(target, last.value, last.span)
        frame.scope[name] = target
        return True

    def error(self, cls: type[PyptoError], message: str, node: ast.AST | Span,
              hint: str | None = None) -> PyptoError:
        span = node if isinstance(node, Span) else span_of(node, self.frame.file)
        err = cls(message, span, hint=hint)
        if isinstance(err, ParserError) or err.module == "PRO_COMMON":
            err.module = "PRO_PARSER"
        return err

    def span(self, node: ast.AST) -> Span:
        return span_of(node, self.frame.file)

    def builder_error(self, message: str, node: ast.AST) -> PyptoError:
        """A check the real op builders make with a plain ValueError, which its kernel parser
        re-raises as a ParserSyntaxError: that class, the builder's wording (without the
        "Failed to parse kernel function" prefix, which here marks an internal failure)."""
        return self.error(ParserSyntaxError, message, node)


def _definition(stmts: list[Stmt], var: Var, window: int = 32) -> int | None:
    """The index of `var`'s assignment among the last `window` statements, if no statement
    after it reads `var`."""
    from ...ir.mutator import walk

    for i in range(len(stmts) - 1, max(len(stmts) - window, 0) - 1, -1):
        s = stmts[i]
        if isinstance(s, AssignStmt) and s.var is var:
            return i
        if any(n is var for n in walk(s)):
            return None
    return None


def is_group(value: Any) -> bool:
    """A tile group: bound by alias (a group is a compile-time placement, never copied into a
    runtime variable), or a `GroupChoice` of groups."""
    from ...ir.types import TileGroupType

    return isinstance(value, GroupChoice) or (
        isinstance(value, Expr) and isinstance(value.type, TileGroupType))


def _same_kind(a: Any, b: Any) -> bool:
    """Two values one mutable name may hold in turn: equal types, or tiles that differ only in
    placement (e.g. `t = make_tile(A)` / `t = make_tile(B)` on two branches)."""
    from ...ir.types import TileType

    if isinstance(a, TileType) and isinstance(b, TileType):
        return (a.shape, a.dtype, a.memory, a.layout) == (b.shape, b.dtype, b.memory, b.layout)
    return a == b


def _did_you_mean(name: str, candidates: list[str]) -> str | None:
    import difflib

    close = difflib.get_close_matches(name, [c for c in candidates if isinstance(c, str)], n=1)
    return f"did you mean '{close[0]}'?" if close else None
