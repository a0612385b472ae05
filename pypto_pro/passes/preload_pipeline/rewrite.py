"""Step 5 of the preload transform (spec §2.12.6 `_transformer`): the rewritten stage loop.

The serial loop `for v in pl.range(start, stop, step)` becomes a loop over beats. In beat b the
first stage runs iteration b (with the loop's bookkeeping statements, which also capture every
carried stage argument of iteration b into the context ring `_pl_ctx`), and stage k runs
iteration b − delay[k] from the ring, under an `is_valid` guard. Each stage call is bracketed
by the waits and sets of the sync graph on per-slot event ids; the slot of iteration i is
`(task0 + i) % depth`, where `_pl_task` counts the iterations of every earlier run of the loop
(the buffers' cursors advance once per iteration on each core). Permits of the WAR edges are
pre-fired before the loop and drained after it. New nodes carry the stage loop's location, so
diagnostics still point into the user's file.
"""
from __future__ import annotations

import ast
import copy
import linecache
import textwrap

from ...ir.types import PipeType
from .analysis import StageCall, StageLoop
from .sync_graph import Edge, SyncGraph

TASK, T0, N, BEAT, ITER, CTX = "_pl_task", "_pl_t0", "_pl_n", "_pl_beat", "_pl_i", "_pl_ctx"


def _expr(text: str) -> ast.expr:
    return ast.parse(text, mode="eval").body


def _stmt(text: str) -> ast.stmt:
    return ast.parse(text).body[0]


class _Emitter:
    def __init__(self, pl: str, loop: StageLoop, graph: SyncGraph) -> None:
        self.pl = pl
        self.loop = loop
        self.graph = graph
        self.ring = max(graph.delays) + 1
        self.kept: set[int] = set()  # new nodes that keep the user's location
        self.fields = self._fields()

    # ------------------------------------------------------------ pieces
    def event_id(self, e: Edge, it: str) -> str:
        if len(e.ids) == 1:
            return str(e.ids[0])
        slot = f"({T0} + {it}) % {e.depth}"
        if list(e.ids) == list(range(e.ids[0], e.ids[0] + len(e.ids))):
            return f"{e.ids[0]} + {slot}" if e.ids[0] else slot
        chain = str(e.ids[-1])
        for j in range(len(e.ids) - 2, -1, -1):
            chain = f"({e.ids[j]} if {slot} == {j} else {chain})"
        return chain

    def sync(self, op: str, pipe: PipeType, event: str) -> ast.stmt:
        return _stmt(f"{self.pl}.system.{op}(pipe={self.pl}.PipeType.{pipe.name}, "
                     f"event_id={event})")

    def section(self, core: str, body: list[ast.stmt]) -> ast.With:
        w = _stmt(f"with {self.pl}.section_{core}():\n    pass")
        w.body = body
        return w

    def _fields(self) -> dict[tuple[int, int | str], tuple[str, str]]:
        """(stage, argument) → (context field, expression) for every carried argument of a
        delayed stage: one field per distinct expression between two bookkeeping statements
        (named after the expression when it is a plain name)."""
        out: dict[tuple[int, int | str], tuple[str, str]] = {}
        by_text: dict[tuple[int, str], str] = {}
        names: set[str] = set()
        by_section = {id(s.section): s for s in self.loop.stages}
        segment = 0
        for stmt in self.loop.loop.body:
            s = by_section.get(id(stmt))
            if s is None:
                segment += 1
                continue
            if not self.graph.delays[s.index]:
                continue
            for key, a in s.args:
                if key not in s.carried:
                    continue
                text = ast.unparse(a)
                if (segment, text) not in by_text:
                    base = a.id if isinstance(a, ast.Name) else "arg"
                    name = base
                    while name in names:
                        name = f"{base}_{len(names)}"
                    names.add(name)
                    by_text[segment, text] = name
                out[s.index, key] = (by_text[segment, text], text)
        return out

    def stage_section(self, s: StageCall, it: str, delayed: bool) -> ast.With:
        call = copy.copy(s.call)
        self.kept.add(id(call))
        if delayed:
            slot = f"{it} % {self.ring}"
            args = {key: _expr(f"{CTX}[{slot}].{self.fields[s.index, key][0]}")
                    if key in s.carried else a for key, a in s.args}
            call.args = [args[i] for i in range(len(s.call.args))]
            call.keywords = [ast.keyword(k.arg, args[k.arg]) for k in s.call.keywords]
        body: list[ast.stmt] = [self.sync("wait_cross_core", e.dst_pipe, self.event_id(e, it))
                                for e in self.graph.waits(s.index)]
        body.append(ast.Expr(call))
        body += [self.sync("set_cross_core", e.src_pipe, self.event_id(e, it))
                 for e in self.graph.sets(s.index)]
        return self.section(s.core, body)

    def permits(self, fire: bool) -> list[ast.stmt]:
        by_core: dict[str, list[ast.stmt]] = {}
        for e in self.graph.permits:
            stage = self.loop.stages[e.src if fire else e.dst]
            op, pipe = ("set_cross_core", e.src_pipe) if fire else ("wait_cross_core",
                                                                    e.dst_pipe)
            by_core.setdefault(stage.core, []).extend(
                self.sync(op, pipe, str(e.ids[j % len(e.ids)])) for j in range(e.depth))
        return [self.section(c, body) for c, body in by_core.items()]

    # ------------------------------------------------------------ the loop
    def loop_stmts(self) -> list[ast.stmt]:
        loop, delays = self.loop.loop, self.graph.delays
        args = [ast.unparse(a) for a in loop.iter.args]
        start, stop, step = {1: ["0", *args, "1"], 2: [*args, "1"]}.get(len(args), args)
        trip = (f"({stop} - {start} + {step} - 1) // {step}" if step != "1"
                else (f"{stop} - {start}" if start != "0" else stop))
        out = [_stmt(f"{N} = {trip}"), _stmt(f"{T0} = {TASK}")]
        fields = dict.fromkeys(f for f, _ in self.fields.values())
        if fields:
            init = ", ".join(f"{f}=0" for f in fields)
            out.append(_stmt(f"{CTX} = {self.pl}.struct_array({self.ring}, 'PlPipelineCtx', "
                             f"{init})"))
        out += self.permits(fire=True)
        skew = max(delays)
        bound = f"{N} + {skew}" if skew else N
        beat = _stmt(f"for {BEAT} in {self.pl}.range({bound}):\n    pass")
        var_value = f"{start} + {BEAT} * {step}" if step != "1" else (
            f"{start} + {BEAT}" if start != "0" else BEAT)
        issue = [_stmt(f"{self.loop.var} = {var_value}")] + self.issue_body()
        if skew:  # iterations issue only during the first n beats
            guard = _stmt(f"if {BEAT} < {N}:\n    pass")
            guard.body = issue
            issue = [guard]
        beat.body = issue
        for d in sorted(set(delays) - {0}):  # stages of one delay share the is_valid guard
            guard = _stmt(f"if {BEAT} >= {d} and {BEAT} < {N} + {d}:\n    pass")
            guard.body = [_stmt(f"{ITER} = {BEAT} - {d}")] + [
                self.stage_section(s, ITER, True) for s in self.loop.stages
                if delays[s.index] == d]
            beat.body.append(guard)
        out.append(beat)
        out.append(_stmt(f"{TASK} = {TASK} + {N}"))
        out += self.permits(fire=False)
        return out

    def issue_body(self) -> list[ast.stmt]:
        by_section = {id(s.section): s for s in self.loop.stages}
        body: list[ast.stmt] = []
        captured: set[str] = set()  # context fields already stored
        for stmt in self.loop.loop.body:
            s = by_section.get(id(stmt))
            if s is None:
                body.append(stmt)  # bookkeeping: both targets, iteration b
            elif self.graph.delays[s.index] == 0:
                body.append(self.stage_section(s, BEAT, False))
            else:
                slot = f"{BEAT} % {self.ring}"
                for key, _ in s.args:
                    field, text = self.fields.get((s.index, key), (None, None))
                    if field is not None and field not in captured:
                        body.append(_stmt(f"{CTX}[{slot}].{field} = {text}"))
                        captured.add(field)
        return body


def rewrite(tree: ast.FunctionDef, loop: StageLoop, graph: SyncGraph, pl: str) -> list[ast.stmt]:
    """Replace the stage loop of `tree` (in place) with its pipelined form; returns the new
    statements that replace it."""
    user = {id(n) for n in ast.walk(tree)}
    emitter = _Emitter(pl, loop, graph)
    new = emitter.loop_stmts()
    keep = user | emitter.kept
    parent = next(body for node in ast.walk(tree) for body in _bodies(node)
                  if any(x is loop.loop for x in body))
    i = next(j for j, x in enumerate(parent) if x is loop.loop)
    parent[i:i + 1] = new
    tree.body.insert(0, _stmt(f"{TASK} = 0"))
    for n in ast.walk(tree):
        if id(n) not in keep and hasattr(n, "lineno"):
            ast.copy_location(n, loop.loop)
    return new


def generated_source(file: str, tree: ast.FunctionDef, loop: StageLoop,
                     new: list[ast.stmt]) -> str:
    """The rewritten kernel as Python source: the user's own lines (comments and formatting
    kept) with the stage loop replaced and the task counter added; `ast.unparse` of the
    rewritten tree when the file's lines are not available."""
    lines = linecache.getlines(file)
    first = min([tree.lineno] + [d.lineno for d in tree.decorator_list])
    end = tree.end_lineno or 0
    if not lines or len(lines) < end:
        return ast.unparse(tree) + "\n"
    indent = " " * loop.loop.col_offset
    body0 = tree.body[1]  # the user's first statement (after the inserted task counter)
    generated = [f"{indent}# ---- preload pipeline (generated from the stage loop) ----\n"]
    generated += [textwrap.indent(ast.unparse(st), indent) + "\n" for st in new]
    generated.append(f"{indent}# ---- end of the generated stage loop ----\n")
    out = lines[first - 1:body0.lineno - 1]
    out.append(" " * body0.col_offset + f"{TASK} = 0  # stage-loop iterations issued so far\n")
    out += lines[body0.lineno - 1:loop.loop.lineno - 1] + generated
    out += lines[loop.loop.end_lineno:end]
    return "".join(out)


def _bodies(node: ast.AST) -> list[list[ast.stmt]]:
    return [v for _, v in ast.iter_fields(node)
            if isinstance(v, list) and v and isinstance(v[0], ast.stmt)]
