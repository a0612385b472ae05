"""The `return`s of an inlined helper, rewritten into assignments before the body is parsed.

An inlined helper has no call frame, so its returns become control flow over its own body:

* `return v` stores `v` in the helper's result name `RESULT`; the rest of the statement list
  after an `if` whose branch always returns moves into the other branch (guard clauses stay
  structured: `if c: return a` / `b...` becomes `if c: RESULT = a` / `else: b...`);
* a return inside a loop (or in a branch that only sometimes returns) also sets the flag
  `RETURNED` and breaks out; after each such loop the flag breaks the enclosing loop, or
  guards the rest of the helper.

The parser then joins `RESULT` across the branches like any other name (scalars and tiles in
one variable, tuples element-wise, tile groups as a runtime choice), so a helper may return
tiles, scalars, groups and tuples of them from anywhere, including its loops.
"""
from __future__ import annotations

import ast
import copy

RESULT = "__pypto_result"
RETURNED = "__pypto_returned"


def has_return(node: ast.AST) -> bool:
    """Whether `node` (a statement) contains a `return` of its own function."""
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, ast.Return):
            return True
        if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            stack.extend(ast.iter_child_nodes(n))
    return False


def returns_unconditionally(stmts: list[ast.stmt]) -> bool:
    """Whether every path through `stmts` ends in a `return`."""
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, ast.Return):
        return True
    if isinstance(last, ast.If):
        return returns_unconditionally(last.body) and returns_unconditionally(last.orelse)
    return False


def lower(body: list[ast.stmt]) -> tuple[list[ast.stmt], bool]:
    """The helper body with its returns rewritten; and whether the `RETURNED` flag is used
    (the caller then sets it to False before the body)."""
    lowering = _Lowering()
    out = lowering.block(copy.deepcopy(body), in_loop=False, flagged=False)
    if lowering.flag_used:
        out.insert(0, _assign(RETURNED, ast.Constant(False), body[0]))
    return out, lowering.flag_used


def is_result(node: ast.AST) -> bool:
    """An assignment `lower` made of a `return v` (its value is frozen when assigned)."""
    return getattr(node, "_pypto_result", False)


def _assign(name: str, value: ast.expr, where: ast.AST) -> ast.Assign:
    node = ast.Assign(targets=[ast.Name(name, ast.Store())], value=value)
    return ast.fix_missing_locations(ast.copy_location(node, where))


def _located(node: ast.stmt, where: ast.AST) -> ast.stmt:
    return ast.fix_missing_locations(ast.copy_location(node, where))


class _Lowering:
    def __init__(self) -> None:
        self.flag_used = False

    def block(self, stmts: list[ast.stmt], in_loop: bool, flagged: bool) -> list[ast.stmt]:
        """`stmts` lowered; `in_loop`: a return must break out; `flagged`: it must set the
        flag (the code after the enclosing construct checks it)."""
        out: list[ast.stmt] = []
        for k, s in enumerate(stmts):
            if not has_return(s):
                out.append(s)
                continue
            rest = stmts[k + 1:]
            if isinstance(s, ast.Return):
                out.extend(self.ret(s, in_loop, flagged))
                return out  # what follows a return never runs
            if isinstance(s, ast.If):
                out.extend(self.if_stmt(s, rest, in_loop, flagged))
                return out
            if isinstance(s, (ast.For, ast.While)):
                self.flag_used = True
                s.body = self.block(s.body, in_loop=True, flagged=True)
                out.append(s)
                if in_loop:  # the enclosing loop is left too
                    out.append(_located(ast.If(ast.Name(RETURNED, ast.Load()), [
                        _located(ast.Break(), s)], []), s))
                    continue
                guard = ast.UnaryOp(ast.Not(), ast.Name(RETURNED, ast.Load()))
                out.append(_located(ast.If(guard, self.block(rest, in_loop, flagged) or [
                    _located(ast.Pass(), s)], []), s))
                return out
            out.append(s)  # a `with` section: its returns are refused where they are parsed
        return out

    def ret(self, s: ast.Return, in_loop: bool, flagged: bool) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        if s.value is not None:
            result = _assign(RESULT, s.value, s)
            result._pypto_result = True
            out.append(result)
        if in_loop or flagged:
            self.flag_used = True
            out.append(_assign(RETURNED, ast.Constant(True), s))
        if in_loop:
            out.append(_located(ast.Break(), s))
        return out

    def if_stmt(self, s: ast.If, rest: list[ast.stmt], in_loop: bool,
                flagged: bool) -> list[ast.stmt]:
        then_returns = returns_unconditionally(s.body)
        else_returns = returns_unconditionally(s.orelse)
        if in_loop or not (then_returns or else_returns):
            # the branches return only sometimes: they set the flag, which guards the rest
            branches_flagged = flagged or (not in_loop and bool(rest))
            s.body = self.block(s.body, in_loop, branches_flagged) or [_located(ast.Pass(), s)]
            s.orelse = self.block(s.orelse, in_loop, branches_flagged)
            out: list[ast.stmt] = [s]
            if rest and not in_loop:
                guard = ast.UnaryOp(ast.Not(), ast.Name(RETURNED, ast.Load()))
                out.append(_located(ast.If(guard, self.block(rest, in_loop, flagged), []), s))
            elif rest:
                out.extend(self.block(rest, in_loop, flagged))
            return out
        # one branch always returns: the rest of the block belongs to the other one
        s.body = self.block(s.body + ([] if then_returns else rest), in_loop, flagged)
        s.orelse = self.block(s.orelse + ([] if else_returns else rest), in_loop, flagged)
        s.body = s.body or [_located(ast.Pass(), s)]
        return [s]
