"""IR statements → C++ statements with the SSA semantics of `pypto_pro.ir.nodes`.

A `ForStmt` declares its iter_args from `init_values` just before the loop, evaluates `stop` and
`step` once (a temporary when they are not plain names or constants), and runs `for (int64_t i = s;
(st > 0) ? (i < e) : (i > e); i += st)` (a constant step picks one comparison, so negative steps
work); inside VF code it counts up a `uint16_t` to a `uint16_t` bound, as bisheng requires there (a
run-time bound becomes `const uint16_t i_ub`). A `YieldStmt` assigns its targets in parallel
(through temporaries when a value reads another target); it targets the innermost loop when a
`break`/`continue` follows it, else the innermost loop or if with results. After a loop its
return_vars are declared from the iter_args; an if's return_vars are declared before it.
Assignments and effect calls are handed to `decls` and the op / sync tables."""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import CodegenInner, NotSupported
from ..ir.nodes import (
    AssignStmt, BreakStmt, Call, ConstInt, ContinueStmt, EvalStmt, Expr, ForStmt, IfStmt,
    ReturnStmt, SectionStmt, SetField, Stmt, Var, WhileStmt, YieldStmt,
)
from ..ir.types import PtrType, ScalarType, SectionKind, TileType
from .context import FnCtx
from .exprs import Exprs
from .scopes import stmts_of, sub_exprs
from .types import scalar_ctype


@dataclass
class _Target:
    kind: str  # "loop" | "if"
    vars: tuple[Var, ...]


class Body:
    """Emits the statements of one function into `ctx.writer`."""

    def __init__(self, ctx: FnCtx) -> None:
        self.ctx = ctx
        self.w = ctx.writer
        self.x = Exprs(ctx)
        self.targets: list[_Target] = []
        self.in_vf = False
        self.vf_tiles: dict = {}  # tile expression → UB pointer name, inside a VF section

    # ------------------------------------------------------------ blocks
    def block(self, body: Stmt | None) -> None:
        stmts = stmts_of(body)
        for i, s in enumerate(stmts):
            following = stmts[i + 1] if i + 1 < len(stmts) else None
            self.stmt(s, following)

    def stmt(self, s: Stmt, following: Stmt | None = None) -> None:
        if isinstance(s, YieldStmt):
            self.yield_(s, isinstance(following, (BreakStmt, ContinueStmt)))
            return
        method = getattr(self, f"s_{type(s).__name__}", None)
        if method is None:
            raise NotSupported(f"codegen: statement {type(s).__name__} has no C++ form",
                               getattr(s, "span", None), module="PRO_COMPILE")
        method(s)

    # ------------------------------------------------------------ simple statements
    def s_AssignStmt(self, s: AssignStmt) -> None:
        from .decls import assign

        assign(self, s)

    def s_EvalStmt(self, s: EvalStmt) -> None:
        e = s.expr
        if not isinstance(e, Call):
            self.w.line(f"(void)({self.x.emit(e)});", s.span)
            return
        from .dispatch import emit_effect

        emit_effect(self, e, s.span)

    def s_SetField(self, s: SetField) -> None:
        target = self.x.paren(s.target, 16)
        lhs = target if s.name is None else f"{target}.{s.name}"
        if s.index is not None:
            lhs += f"[{self.x.emit(s.index)}]"
        self.w.line(f"{lhs} = {self.x.emit(s.value)};", s.span)

    def s_BreakStmt(self, s: BreakStmt) -> None:
        self.w.line("break;", s.span)

    def s_ContinueStmt(self, s: ContinueStmt) -> None:
        self.w.line("continue;", s.span)

    def s_ReturnStmt(self, s: ReturnStmt) -> None:
        value = f" {self.x.emit(s.value)}" if s.value is not None else ""  # a SIMT callee's
        self.w.line(f"return{value};", s.span)

    def s_SectionStmt(self, s: SectionStmt) -> None:
        if s.kind is SectionKind.VF:
            from .vf import emit_vf_section

            emit_vf_section(self, s)
            return
        self.w.line(f"// section_{'vector' if s.kind is SectionKind.Vector else 'cube'}",
                    s.span)
        self.block(s.body)

    # ------------------------------------------------------------ results of loops and ifs
    def declare(self, var: Var, value: str | None, span=None) -> None:
        """A structural declaration (iter_arg, return var) with an initial value."""
        t = var.type
        name = self.ctx.name(var)
        if isinstance(t, TileType):
            alias = self.ctx.alias(t)
            self.w.line(f"{alias}* {name} = {'nullptr' if value is None else '&' + value};",
                        span)
            return
        if not isinstance(t, (ScalarType, PtrType)):
            raise NotSupported(f"codegen: a loop / if result of type {type(t).__name__}",
                               span, module="PRO_COMPILE")
        init = value if value is not None else ("nullptr" if isinstance(t, PtrType) else "0")
        self.w.line(f"{scalar_ctype(t)} {name} = {init};", span)

    def value_of(self, var: Var) -> str:
        """The C++ value of a structural Var (tiles are held by pointer)."""
        name = self.ctx.name(var)
        return f"(*{name})" if isinstance(var.type, TileType) else name

    def assign_to(self, var: Var, value: Expr) -> str:
        name = self.ctx.name(var)
        if isinstance(var.type, TileType):
            return f"{name} = &{self.x.paren(value, 15)};"
        return f"{name} = {self.x.emit(value)};"

    def yield_(self, s: YieldStmt, before_jump: bool) -> None:
        target = self._yield_target(before_jump, s)
        pairs = [(v, e) for v, e in zip(target.vars, s.values) if e is not v]
        if not pairs:
            return
        assigned = {v for v, _ in pairs}
        reads = [{n for n in sub_exprs(e) if isinstance(n, Var)} for _, e in pairs]
        if not any((r & assigned) - {v} for (v, _), r in zip(pairs, reads)):
            for v, e in pairs:
                self.w.line(self.assign_to(v, e), s.span)
            return
        temps = []
        for v, e in pairs:
            tmp = self.ctx.fresh(f"{self.ctx.name(v)}_next")
            temps.append(tmp)
            if isinstance(v.type, TileType):
                self.w.line(f"{self.ctx.alias(v.type)}* {tmp} = &{self.x.paren(e, 15)};", s.span)
            else:
                self.w.line(f"{scalar_ctype(v.type)} {tmp} = {self.x.emit(e)};", s.span)
        for (v, _), tmp in zip(pairs, temps):
            self.w.line(f"{self.ctx.name(v)} = {tmp};", s.span)

    def _yield_target(self, before_jump: bool, s: YieldStmt) -> _Target:
        stack = [t for t in self.targets if t.kind == "loop"] if before_jump else self.targets
        if not stack:
            raise CodegenInner("yield outside a loop or an if with results", s.span,
                               module="PRO_COMPILE")
        return stack[-1]

    # ------------------------------------------------------------ control flow
    def s_IfStmt(self, s: IfStmt) -> None:
        for v in s.return_vars:
            self.declare(v, None, s.span)
        if s.return_vars:
            self.targets.append(_Target("if", s.return_vars))
        self.w.open(f"if ({self.x.emit(s.cond)})", s.span)
        self.block(s.then_body)
        if stmts_of(s.else_body):
            self.w.middle("} else {")
            self.block(s.else_body)
        self.w.close()
        if s.return_vars:
            self.targets.pop()

    def s_ForStmt(self, s: ForStmt) -> None:
        for v, init in zip(s.iter_args, s.init_values):
            self.declare(v, self._init_value(v, init), s.span)
        i = self.ctx.name(s.loop_var)
        start = self.x.emit(s.start)
        if self.in_vf:
            self._loop(self._vf_head(s, i, start), s)
            return
        stop = self._once(s.stop, f"{i}_stop", s.span)
        step = self._once(s.step, f"{i}_step", s.span)
        cond = self._loop_cond(s.step, i, stop, step)
        incr = self._increment(s.step, i, step)
        self._loop(f"for (int64_t {i} = {start}; {cond}; {incr})", s)

    def _vf_head(self, s: ForStmt, i: str, start: str) -> str:
        """A loop inside VF code: bisheng wants a uint16_t loop variable and a uint16_t bound
        there (`-Wcce-compat`), a run-time bound hoisted into a const, counting up."""
        if isinstance(s.step, ConstInt) and s.step.value <= 0:
            raise NotSupported("codegen: a loop inside VF code must count up (its variable is a "
                               "uint16_t)", s.span, module="PRO_COMPILE")
        if isinstance(s.stop, ConstInt):
            stop = str(s.stop.value)
        else:
            stop = self.ctx.fresh(f"{i}_ub")
            self.w.line(f"const uint16_t {stop} = (uint16_t)({self.x.emit(s.stop)});", s.span)
        step = self._once(s.step, f"{i}_step", s.span)
        return f"for (uint16_t {i} = {start}; {i} < {stop}; {self._increment(s.step, i, step)})"

    def s_WhileStmt(self, s: WhileStmt) -> None:
        for v, init in zip(s.iter_args, s.init_values):
            self.declare(v, self._init_value(v, init), s.span)
        self._loop(f"while ({self.x.emit(s.cond)})", s)

    def _loop(self, head: str, s: ForStmt | WhileStmt) -> None:
        self.targets.append(_Target("loop", s.iter_args))
        self.w.open(head, s.span)
        self.block(s.body)
        self.w.close()
        self.targets.pop()
        for rv, it in zip(s.return_vars, s.iter_args):
            self.declare(rv, self.value_of(it), s.span)

    def _init_value(self, var: Var, init: Expr) -> str:
        return self.x.paren(init, 15) if isinstance(var.type, TileType) else self.x.emit(init)

    def _once(self, e: Expr, base: str, span) -> str:
        """`e` as a name or constant, evaluated once before the loop."""
        if isinstance(e, ConstInt) or (isinstance(e, Var) and not self.ctx.scopes.is_hoisted(e)):
            return self.x.emit(e)
        name = self.ctx.fresh(base)
        self.w.line(f"const int64_t {name} = {self.x.emit(e)};", span)
        return name

    @staticmethod
    def _increment(step: Expr, i: str, step_text: str) -> str:
        if isinstance(step, ConstInt):
            if step.value == 1:
                return f"++{i}"
            if step.value < 0:
                return f"{i} -= {-step.value}"
        return f"{i} += {step_text}"

    @staticmethod
    def _loop_cond(step: Expr, i: str, stop: str, step_text: str) -> str:
        if isinstance(step, ConstInt):
            return f"{i} < {stop}" if step.value > 0 else f"{i} > {stop}"
        return f"({step_text} > 0) ? ({i} < {stop}) : ({i} > {stop})"
