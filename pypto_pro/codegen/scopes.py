"""C++ names for IR variables, and where each variable must be declared.

`analyze(fn)` walks one function once. It names every Var at its first occurrence (parameters
first), sanitised and unique in the function (a later Var that reuses a name gets `_1`, ...,
and derived names such as `<tensor>_gt` are reserved with it), and decides, for every Var bound
by an `AssignStmt`, whether it can be declared where it is assigned: that is the case when its
assignments sit in disjoint blocks and every use is reached by exactly one of them in an
enclosing block. Otherwise the Var is *hoisted*: declared once at the top of the function and
assigned in place (tiles become pointers). Loop variables, iter_args and return_vars are
declared by the loop / if that owns them. Imports only the IR.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from ..ir.nodes import (
    AssignStmt,
    BinaryExpr,
    Call,
    Cast,
    EvalStmt,
    Expr,
    ForStmt,
    Function,
    GetField,
    GetItem,
    IfStmt,
    MakeTuple,
    ReturnStmt,
    SectionStmt,
    Select,
    SeqStmts,
    SetField,
    Stmt,
    UnaryExpr,
    Var,
    WhileStmt,
    YieldStmt,
)
from ..ir.types import (
    PtrType, SectionKind, StructType, TensorType, TileGroupType, TileType,
)

CPP_KEYWORDS = frozenset("""
alignas alignof and and_eq asm auto bitand bitor bool break case catch char char16_t
char32_t class compl const constexpr const_cast continue decltype default delete do double
dynamic_cast else enum explicit export extern false float for friend goto if inline int long
mutable namespace new noexcept not not_eq nullptr operator or or_eq private protected public
register reinterpret_cast return short signed sizeof static static_assert static_cast struct
switch template this thread_local throw true try typedef typeid typename union unsigned
using virtual void volatile wchar_t while xor xor_eq int8_t int16_t int32_t int64_t uint8_t
uint16_t uint32_t uint64_t half bfloat16_t pto cce std main event_t
""".split())  # noqa: SIM905 (a word list reads best as text)

#: names derived from a Var's name, by the Var's type (reserved together with the name)
_DERIVED: list[tuple[type, tuple[str, ...]]] = [
    (TensorType, ("_ptr", "_gt", "_GT", "_stride", "_gt_dn")),
    (TileGroupType, ("_mutex",)),
    (TileType, ("_rows", "_cols")),
    (StructType, ("_ptr", "_ub")),
    (PtrType, ()),
]


class Namer:
    """Unique C++ identifiers for one function (Vars, derived names and temporaries)."""

    def __init__(self, reserved: Iterable[str] = ()) -> None:
        self.taken: set[str] = set(CPP_KEYWORDS) | set(reserved)
        self.of: dict[int, str] = {}

    def name(self, var: Var) -> str:
        got = self.of.get(var.uid)
        if got is None:
            got = self.of[var.uid] = self._claim(_sanitize(var.name), _suffixes(var))
        return got

    def fresh(self, base: str, suffixes: tuple[str, ...] = ()) -> str:
        """A new identifier for a temporary, never equal to a Var's or another temporary's
        (nor are the names it derives with `suffixes`)."""
        return self._claim(_sanitize(base), suffixes)

    def _claim(self, base: str, suffixes: tuple[str, ...]) -> str:
        n = 0
        while True:
            cand = base if n == 0 else f"{base}_{n}"
            names = [cand] + [cand + s for s in suffixes]
            if not any(x in self.taken for x in names):
                self.taken.update(names)
                return cand
            n += 1


def _sanitize(name: str) -> str:
    out = re.sub(r"[^0-9A-Za-z_]", "_", name) or "v"
    return "v_" + out if out[0].isdigit() else out


def _suffixes(var: Var) -> tuple[str, ...]:
    for cls, suffixes in _DERIVED:
        if isinstance(var.type, cls):
            return suffixes
    return ()


# ---------------------------------------------------------------- expression walking


def sub_exprs(e: object) -> Iterator[Expr]:
    """`e` and every expression inside it, pre-order (call kwargs included)."""
    stack: list = [e]
    while stack:
        n = stack.pop()
        if isinstance(n, (tuple, list)):
            stack.extend(reversed(n))
            continue
        if not isinstance(n, Expr):
            continue
        yield n
        if isinstance(n, BinaryExpr):
            stack.extend((n.rhs, n.lhs))
        elif isinstance(n, (UnaryExpr, Cast)):
            stack.append(n.operand)
        elif isinstance(n, Select):
            stack.extend((n.false_value, n.true_value, n.cond))
        elif isinstance(n, Call):
            stack.append(tuple(v for _, v in n.kwargs))
            stack.append(n.args)
        elif isinstance(n, MakeTuple):
            stack.append(n.elements)
        elif isinstance(n, GetItem):
            stack.extend((n.index, n.value))
        elif isinstance(n, GetField):
            stack.append(n.value)


def own_exprs(s: Stmt) -> tuple:
    """The expressions a statement evaluates itself (not those of nested bodies)."""
    if isinstance(s, AssignStmt):
        return (s.value,)
    if isinstance(s, EvalStmt):
        return (s.expr,)
    if isinstance(s, SetField):
        return (s.target, s.index, s.value)
    if isinstance(s, IfStmt):
        return (s.cond,)
    if isinstance(s, ForStmt):
        return (s.start, s.stop, s.step, s.init_values)
    if isinstance(s, WhileStmt):
        return (s.init_values, s.cond)
    if isinstance(s, YieldStmt):
        return (s.values,)
    if isinstance(s, ReturnStmt):
        return (s.value,) if s.value is not None else ()
    return ()


def stmts_of(body: Stmt | None) -> tuple[Stmt, ...]:
    if body is None:
        return ()
    return body.stmts if isinstance(body, SeqStmts) else (body,)


def bodies_of(s: Stmt) -> tuple[Stmt | None, ...]:
    if isinstance(s, IfStmt):
        return (s.then_body, s.else_body)
    if isinstance(s, (ForStmt, WhileStmt, SectionStmt)):
        return (s.body,)
    return ()


# ---------------------------------------------------------------- the analysis

Pos = tuple[tuple, tuple[int, ...]]  # (block path, statement index (sections nest inside))


@dataclass
class FunctionScopes:
    """Names and declaration places of one function's Vars."""

    names: Namer
    hoisted: list[Var] = field(default_factory=list)  # in first-assignment order
    structural: set[Var] = field(default_factory=set)  # declared by their loop / if / params
    defs: dict[Var, list[Pos]] = field(default_factory=dict)
    make_tiles: list[tuple[Pos, Var, TileType]] = field(default_factory=list)  # walk order
    #: a make_tile Var → the earlier Var holding the same tile (type, memory, address) whose
    #: declaration is visible at its assignment: it becomes a reference, not a second object
    same_tile: dict[Var, Var] = field(default_factory=dict)

    def is_hoisted(self, var: Var) -> bool:
        return var in self._hoisted_set

    def finish(self, uses: dict[Var, list[Pos]]) -> None:
        for var, defs in self.defs.items():
            if var not in self.structural and not _in_place(defs, uses.get(var, [])):
                self.hoisted.append(var)
        self._hoisted_set = set(self.hoisted)
        self._dedup_tiles()

    def _dedup_tiles(self) -> None:
        """make_tile dedup by (memory, address, type), as the real generator does; only tiles
        declared in place and assigned once (a hoisted tile already has one storage object)."""
        def single(var: Var) -> bool:
            return not self.is_hoisted(var) and len(self.defs[var]) == 1

        for i, (pos, var, t) in enumerate(self.make_tiles):
            if not single(var):
                continue
            for first_pos, first, ft in self.make_tiles[:i]:
                if ft == t and first not in self.same_tile and single(first) and \
                        _reaches(first_pos, pos):
                    self.same_tile[var] = first
                    break


def calls_in(body: Stmt | None) -> Iterator[Call]:
    """Every Call of `body`, nested blocks included, in statement order."""
    for s in stmts_of(body):
        for e in sub_exprs(own_exprs(s)):
            if isinstance(e, Call):
                yield e
        for inner in bodies_of(s):
            yield from calls_in(inner)


def analyze(fn: Function, reserved: Iterable[str] = ()) -> FunctionScopes:
    scopes = FunctionScopes(Namer(reserved))
    for p in fn.params:
        scopes.names.name(p)
        scopes.structural.add(p)
    uses: dict[Var, list[Pos]] = {}
    _walk_block(fn.body, (), scopes, uses)
    scopes.finish(uses)
    return scopes


def _walk_block(body: Stmt | None, path: tuple, scopes: FunctionScopes,
                uses: dict[Var, list[Pos]], at: tuple = ()) -> None:
    """Statement indices are tuples: a core section is emitted without braces, so its
    statements sit in the enclosing C++ block, after those before the section (`at` is the
    section's own index there) — a group declared in one section block is in scope in the
    later section blocks of the same target."""
    for i, s in enumerate(stmts_of(body)):
        idx = at + (i,)
        if isinstance(s, SectionStmt) and s.kind is not SectionKind.VF:
            _walk_block(s.body, path, scopes, uses, idx)
            continue
        for e in sub_exprs(own_exprs(s)):
            if isinstance(e, Var):
                scopes.names.name(e)
                uses.setdefault(e, []).append((path, idx))
        _declare(s, (path, idx), scopes)
        for k, inner in enumerate(bodies_of(s)):
            _walk_block(inner, path + ((idx, k),), scopes, uses)
        if isinstance(s, (ForStmt, WhileStmt, IfStmt)):
            for v in s.return_vars:
                scopes.names.name(v)
                scopes.structural.add(v)


def _declare(s: Stmt, pos: Pos, scopes: FunctionScopes) -> None:
    if isinstance(s, AssignStmt):
        scopes.names.name(s.var)
        scopes.defs.setdefault(s.var, []).append(pos)
        if isinstance(s.value, Call) and s.value.op == "block.make_tile" and isinstance(
                s.value.type, TileType):
            scopes.make_tiles.append((pos, s.var, s.value.type))
    elif isinstance(s, ForStmt):
        for v in (s.loop_var, *s.iter_args):
            scopes.names.name(v)
            scopes.structural.add(v)
    elif isinstance(s, WhileStmt):
        for v in s.iter_args:
            scopes.names.name(v)
            scopes.structural.add(v)


def _prefix(a: tuple, b: tuple) -> bool:
    return len(a) <= len(b) and b[:len(a)] == a


def _in_place(defs: list[Pos], uses: list[Pos]) -> bool:
    """Whether declaring the Var at each assignment gives every use the right binding."""
    for i, (pa, _) in enumerate(defs):
        for pb, _ in defs[i + 1:]:
            if _prefix(pa, pb) or _prefix(pb, pa):
                return False
    for up, ui in uses:
        reaching = [d for d in defs if _reaches(d, (up, ui))]
        if len(reaching) != 1:
            return False
    return True


def _reaches(d: Pos, u: Pos) -> bool:
    dp, di = d
    up, ui = u
    if not _prefix(dp, up):
        return False
    return ui > di if up == dp else up[len(dp)][0] > di
