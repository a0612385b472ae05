"""Step 1 of the preload transform (spec §2.12.6 `analyze_pipeline`): find the stage loop.

The stage loop is the one `for ... in pl.range(...)` whose body holds every call of a
`@pl.pipeline.stage` function, each alone in its own `with pl.section_cube()` /
`with pl.section_vector()` block, the blocks alternating cube / vector. Other statements of the
loop body (outside sections) are per-iteration bookkeeping that both targets run. A stage
argument that reads the loop variable or a name the loop body assigns must be captured per
iteration ("carried" in the context ring); every other argument is loop-invariant and passes
through unchanged.
"""
from __future__ import annotations

import ast
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ...errors import InvalidOperation, NotSupported
from ...ir.span import Span
from ...language.markers import kind_of

_SECTIONS = {"section_cube": "cube", "section_vector": "vector"}

#: an argument of a stage call: its position (int) or keyword (str), and its expression
Arg = tuple[int | str, ast.expr]


@dataclass(frozen=True)
class StageCall:
    """One stage call site of the stage loop."""

    index: int  # position among the loop's stages (serial order)
    name: str
    core: str  # "cube" | "vector"
    section: ast.With
    call: ast.Call
    args: tuple[Arg, ...]
    carried: frozenset[int | str]  # argument keys captured per iteration

    @property
    def line(self) -> int:
        return self.section.lineno


@dataclass(frozen=True)
class StageLoop:
    loop: ast.For
    var: str
    stages: tuple[StageCall, ...]


def span_at(file: str, node: ast.AST) -> Span:
    return Span(file, getattr(node, "lineno", 0), getattr(node, "col_offset", 0) + 1,
                getattr(node, "end_lineno", None),
                (node.end_col_offset + 1) if getattr(node, "end_col_offset", None) else None)


def _resolve(env: Mapping[str, Any], node: ast.expr) -> Any:
    """The Python object a dotted name refers to in the kernel's environment (or None)."""
    if isinstance(node, ast.Name):
        return env.get(node.id)
    if isinstance(node, ast.Attribute):
        base = _resolve(env, node.value)
        return getattr(base, node.attr, None) if base is not None else None
    return None


def _section_core(env: Mapping[str, Any], node: ast.AST) -> str | None:
    if not (isinstance(node, ast.With) and len(node.items) == 1):
        return None
    expr = node.items[0].context_expr
    if not isinstance(expr, ast.Call):
        return None
    return _SECTIONS.get(getattr(_resolve(env, expr.func), "op", None))


def stage_function(env: Mapping[str, Any], call: ast.AST) -> Callable | None:
    if not isinstance(call, ast.Call):
        return None
    fn = _resolve(env, call.func)
    return fn if kind_of(fn) == "pipeline_stage" else None


def assigned(body: list[ast.stmt]) -> set[str]:
    """Names bound anywhere in `body` (assignments, loop targets)."""
    out: set[str] = set()
    for stmt in body:
        for n in ast.walk(stmt):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                out.add(n.id)
    return out


def _jump(body: list[ast.stmt]) -> ast.stmt | None:
    """A break / continue of this loop, or a return, in `body` (inner loops' own jumps allowed)."""
    for stmt in body:
        if isinstance(stmt, (ast.Break, ast.Continue, ast.Return)):
            return stmt
        if isinstance(stmt, (ast.For, ast.While)):
            found = next((n for b in (stmt.body, stmt.orelse) for s in b for n in ast.walk(s)
                          if isinstance(n, ast.Return)), None)
        elif isinstance(stmt, (ast.FunctionDef, ast.ClassDef)):
            found = None
        else:
            found = _jump([c for c in ast.iter_child_nodes(stmt) if isinstance(c, ast.stmt)])
        if found is not None:
            return found
    return None


def find_stage_loop(tree: ast.FunctionDef, env: Mapping[str, Any], file: str) -> StageLoop:
    calls = [n for n in ast.walk(tree) if stage_function(env, n) is not None]
    if not calls:
        raise InvalidOperation(
            f"kernel '{tree.name}' has pipeline=PipelineConfig(...) but calls no "
            f"@pl.pipeline.stage function", span_at(file, tree),
            hint="put the stage calls in a serial pl.range loop, one per section block")
    loops = [n for n in ast.walk(tree) if isinstance(n, ast.For)
             and any(c is d for c in calls for d in ast.walk(n))]
    inner = [lp for lp in loops if not any(o is not lp and any(o is d for d in ast.walk(lp))
                                           for o in loops)]
    if not inner:
        raise InvalidOperation("pipeline stages must be called inside a pl.range loop",
                               span_at(file, calls[0]))
    if len(inner) > 1:
        raise InvalidOperation(
            f"pipeline stages are called from {len(inner)} different loops (lines "
            f"{', '.join(str(lp.lineno) for lp in inner)}); exactly one stage loop is allowed",
            span_at(file, inner[1]))
    loop = inner[0]
    inside = {id(n) for n in ast.walk(loop)}
    outside = [c for c in calls if id(c) not in inside]
    if outside:
        raise InvalidOperation(
            f"pipeline stage called outside the stage loop (line {loop.lineno})",
            span_at(file, outside[0]), hint="call every stage from the one stage loop")
    return _stage_loop(loop, env, file, {id(c) for c in calls})


def _stage_loop(loop: ast.For, env: Mapping[str, Any], file: str,
                call_ids: set[int]) -> StageLoop:
    if not isinstance(loop.target, ast.Name):
        raise NotSupported("the stage loop variable must be a plain name",
                           span_at(file, loop.target))
    it = loop.iter
    if not (isinstance(it, ast.Call) and 1 <= len(it.args) <= 3 and not it.keywords
            and not any(isinstance(a, ast.Starred) for a in it.args)):
        raise NotSupported("the stage loop must be 'for v in pl.range(start, stop, step)' "
                           "with positional bounds", span_at(file, it))
    if loop.orelse:
        raise NotSupported("the stage loop cannot have an 'else' block", span_at(file, loop))
    jump = _jump(loop.body)
    if jump is not None:
        raise NotSupported(f"'{type(jump).__name__.lower()}' in the stage loop: the pipelined "
                           f"loop runs every iteration's stages at different times",
                           span_at(file, jump), hint="compute a trip count instead")
    variant = assigned(loop.body) | {loop.target.id}
    stages: list[StageCall] = []
    found: set[int] = set()
    for stmt in loop.body:
        core = _section_core(env, stmt)
        inside = [n for n in ast.walk(stmt) if id(n) in call_ids]
        if not inside:
            continue
        if core is None:
            raise InvalidOperation(
                "a pipeline stage must be called directly inside a 'with pl.section_cube():' "
                "or 'with pl.section_vector():' block of the stage loop", span_at(file, inside[0]))
        body = stmt.body
        if not (len(body) == 1 and isinstance(body[0], ast.Expr)
                and id(body[0].value) in call_ids):
            raise InvalidOperation(
                f"a section of the stage loop must hold exactly one stage call and nothing "
                f"else (this {core} section has {len(body)} statement(s))", span_at(file, stmt),
                hint="move bookkeeping outside the section or into the stage function")
        call = body[0].value
        found.add(id(call))
        args: list[Arg] = [(i, a) for i, a in enumerate(call.args)]
        if any(isinstance(a, ast.Starred) for _, a in args) or any(
                k.arg is None for k in call.keywords):
            raise NotSupported("stage calls cannot use *args / **kwargs", span_at(file, call))
        args += [(k.arg, k.value) for k in call.keywords]
        carried = frozenset(key for key, a in args
                            if any(isinstance(n, ast.Name) and n.id in variant
                                   for n in ast.walk(a)))
        name = getattr(stage_function(env, call), "__name__", "stage")
        if stages and stages[-1].core == core:
            raise InvalidOperation(
                f"stages must alternate between cube and vector: '{stages[-1].name}' and "
                f"'{name}' are both {core} stages", span_at(file, stmt),
                hint="merge consecutive stages of the same core into one stage function")
        stages.append(StageCall(len(stages), name, core, stmt, call, tuple(args), carried))
    stray = call_ids - found
    if stray:
        node = next(n for n in ast.walk(loop) if id(n) in stray)
        raise InvalidOperation("a pipeline stage must be called directly inside a section "
                               "block of the stage loop", span_at(file, node))
    if len({s.core for s in stages}) < 2:
        raise InvalidOperation(
            "a preload pipeline needs stages on both cores (cube and vector); this loop has "
            f"only {stages[0].core} stages", span_at(file, loop))
    return StageLoop(loop, loop.target.id, tuple(stages))
