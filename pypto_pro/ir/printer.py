"""The printer: IR → PyPTO Pro's Python-like text form (spec §3.3).

`python_print(node, prefix="ir", concise=False)`; `concise` drops assignment types. The output
is what the workbench shows after each pass, so it is stable: no object ids, deterministic
names. With `line_map=True` it also returns, per printed line, the source span of its node.
"""
from __future__ import annotations

import enum
from collections import Counter
from typing import Any

from .dtype import DataType
from .mutator import walk
from .nodes import (
    AssignStmt, BinaryExpr, BinOp, BreakStmt, Call, Cast, ConstBool, ConstFloat, ConstInt,
    ConstStr, ContinueStmt, EnumConst, EvalStmt, Expr, ForStmt, Function, FunctionType, GetField,
    GetItem, IfStmt, MakeTuple, Node, Program, ReturnStmt, SectionStmt, Select, SeqStmts,
    SetField, Stmt, UnaryExpr, UnOp, Var, WhileStmt, YieldStmt,
)
from .span import Span
from .types import (
    AddrRegType, AlignRegType, ArrayType, FunctionRefType, MaskType, NoneType, PtrType, RegType,
    ScalarType, SectionKind, StrType, StructType, TensorType, TileGroupType, TileLayout, TilePad,
    TileType, TupleType, Type,
)

_PREC = {
    BinOp.Or: 1, BinOp.And: 2, BinOp.Eq: 4, BinOp.Ne: 4, BinOp.Lt: 4, BinOp.Le: 4, BinOp.Gt: 4,
    BinOp.Ge: 4, BinOp.BitOr: 5, BinOp.BitXor: 6, BinOp.BitAnd: 7, BinOp.Shl: 8, BinOp.Shr: 8,
    BinOp.Add: 9, BinOp.Sub: 9, BinOp.Mul: 10, BinOp.FloorDiv: 10, BinOp.FloorMod: 10,
    BinOp.FloatDiv: 10, BinOp.Pow: 12,
}


_ADDRESS_KWARGS = ("addrs", "memref_addr")
DYN_PREFIX = "__pypto_dyn_"  # dynamic tensor dims (spec §3.1)


class Printer:
    def __init__(self, prefix: str = "ir", concise: bool = False) -> None:
        self.p = prefix
        self.concise = concise
        self.lines: list[str] = []
        self.spans: list[Span | None] = []
        self.names: dict[Var, str] = {}  # Vars printed under another name (see unique_names)
        self.launches: dict[str, Any] = {}  # SIMT function → max_threads of its launches

    # ------------------------------------------------------------ output
    def emit(self, depth: int, text: str, span: Span | None = None) -> None:
        self.lines.append("    " * depth + text)
        self.spans.append(span)

    # ------------------------------------------------------------ types
    def type(self, t: Type | None) -> str:
        p = self.p
        if t is None or isinstance(t, NoneType):
            return "None"
        if isinstance(t, ScalarType):
            return f"{p}.{t.dtype.value}"
        if isinstance(t, TensorType):
            dims = ", ".join(self.expr(d) for d in t.shape)
            extra = f", {p}.{t.layout.value}" if t.layout is not TileLayout.ND else ""
            if t.strides is not None:
                extra += f", {p}.TensorView(stride=[{', '.join(self.expr(s) for s in t.strides)}])"
            return f"{p}.Tensor[[{dims}], {p}.{t.dtype.value}{extra}]"
        if isinstance(t, TileType):
            return self.tile_type(t)
        if isinstance(t, TileGroupType):
            ids = f", mutex_ids={[list(i) for i in t.mutex_ids]}" if t.mutex_ids else ""
            ids += "".join(f", {k}={list(v)}" for k, v in (("fwd_ids", t.fwd_ids),
                                                          ("bwd_ids", t.bwd_ids)) if v)
            return (f"{p}.TileGroup[{self.tile_type(t.tile)}, addrs={list(map(hex, t.addrs))}"
                    f"{ids}]")
        if isinstance(t, PtrType):
            return f"{p}.Ptr[{p}.{t.dtype.value}]"
        if isinstance(t, TupleType):
            names = f", names={list(t.names)}" if t.names else ""
            return f"{p}.Tuple[{', '.join(self.type(x) for x in t.types)}{names}]"
        if isinstance(t, StructType):
            fields = "".join(f", {k}={self.type(v)}" for k, v in t.fields)
            return f"{p}.Struct[{t.name}{fields}]"
        if isinstance(t, ArrayType):
            return f"{p}.Array[{self.type(t.elem)}, {t.size}]"
        if isinstance(t, StrType):
            return "str"
        if isinstance(t, FunctionRefType):
            return f"{p}.Function[{t.name}]"
        if isinstance(t, RegType):
            return f"{p}.Reg[{p}.{t.dtype.value}]"
        if isinstance(t, MaskType):
            return f"{p}.Mask" if t.dtype is None else f"{p}.Mask[{p}.{t.dtype.value}]"
        if isinstance(t, AddrRegType):
            return f"{p}.AddrReg[{p}.{t.dtype.value}]"
        if isinstance(t, AlignRegType):
            return f"{p}.AlignReg"
        return type(t).__name__

    def tile_type(self, t: TileType) -> str:
        p = self.p
        addr = hex(t.addr) if t.addr is not None else (
            "[" + ", ".join(map(hex, t.slot_addrs)) + "]" if t.slot_addrs else "?")
        parts = [f"[{t.shape[0]}, {t.shape[1]}]", f"{p}.{t.dtype.value}",
                 f"{p}.MemRef({p}.MemorySpace.{t.memory.value}, {addr}, {t.nbytes})"]
        if t.valid_shape != tuple(t.shape):
            vs = ", ".join("-1" if v is None else str(v) for v in t.valid_shape)
            parts.append(f"{p}.TileView(valid_shape=[{vs}])")
        hw = []
        if t.layout is not TileLayout.ND:
            hw.append(f"layout={p}.{t.layout.value}")
        if t.fractal != 512:
            hw.append(f"fractal={t.fractal}")
        if t.pad is not TilePad.null:
            hw.append(f"pad={t.pad.name}")
        if t.compact:
            hw.append(f"compact={t.compact}")
        if hw:
            parts.append(f"{p}.HardwareInfo({', '.join(hw)})")
        return f"{p}.Tile[{', '.join(parts)}]"

    # ------------------------------------------------------------ expressions
    def expr(self, e: Any, prec: int = 0) -> str:
        if isinstance(e, Var):
            return self.names.get(e, e.name)
        if isinstance(e, ConstInt) and isinstance(e.value, enum.Enum):
            return self.value(e.value)
        if isinstance(e, (ConstInt,)):
            return str(e.value) if e.dtype in (DataType.INDEX, DataType.INT64, DataType.INT32) \
                else f"{self.p}.const({e.value}, {self.p}.{e.dtype.value})"
        if isinstance(e, ConstFloat):
            return repr(e.value) if e.dtype is DataType.FP32 \
                else f"{self.p}.const({e.value!r}, {self.p}.{e.dtype.value})"
        if isinstance(e, ConstBool):
            return str(e.value)
        if isinstance(e, ConstStr):
            return repr(e.value)
        if isinstance(e, EnumConst):
            return self.value(e.value)
        if isinstance(e, BinaryExpr):
            return self.binary(e, prec)
        if isinstance(e, UnaryExpr):
            inner = self.expr(e.operand, 11)
            if e.op is UnOp.Abs:
                return f"abs({self.expr(e.operand)})"
            text = f"not {inner}" if e.op is UnOp.Not else f"{e.op.value}{inner}"
            return f"({text})" if prec > (3 if e.op is UnOp.Not else 11) else text
        if isinstance(e, Cast):
            return f"{self.p}.cast({self.expr(e.operand)}, {self.p}.{e.type.dtype.value})"
        if isinstance(e, Select):
            text = (f"{self.expr(e.true_value, 1)} if {self.expr(e.cond, 1)} "
                    f"else {self.expr(e.false_value, 1)}")
            return f"({text})" if prec > 0 else text
        if isinstance(e, Call):
            return self.call(e)
        if isinstance(e, MakeTuple):
            return "[" + ", ".join(self.expr(x) for x in e.elements) + "]"
        if isinstance(e, GetItem):
            return f"{self.expr(e.value, 13)}[{self.expr(e.index)}]"
        if isinstance(e, GetField):
            return f"{self.expr(e.value, 13)}.{e.name}"
        return self.value(e)

    def binary(self, e: BinaryExpr, prec: int) -> str:
        if e.op in (BinOp.Min, BinOp.Max):
            return f"{e.op.value}({self.expr(e.lhs)}, {self.expr(e.rhs)})"
        mine = _PREC[e.op]
        right = e.op is BinOp.Pow  # ** groups to the right in Python; a < b < c is a chain
        text = (f"{self.expr(e.lhs, mine + (right or e.op.is_compare))} {e.op.value} "
                f"{self.expr(e.rhs, mine + 1 - right)}")
        return f"({text})" if mine < prec else text

    def call(self, c: Call) -> str:
        args = [self.expr(a) for a in c.args]
        args += [f"{k}={self.addr(v) if k in _ADDRESS_KWARGS else self.value(v)}"
                 for k, v in c.kwargs]
        return f"{self.p}.call @{c.op}({', '.join(args)})"

    def addr(self, v: Any) -> str:
        if isinstance(v, int):
            return hex(v)
        return "[" + ", ".join(map(hex, v)) + "]" if isinstance(v, tuple) else self.value(v)

    def value(self, v: Any) -> str:
        if isinstance(v, Expr):
            return self.expr(v)
        if isinstance(v, enum.Enum):
            text = repr(v)
            if text.startswith("<"):  # enums without a `pl.` spelling
                return f"{self.p}.{type(v).__name__}.{v.name}"
            return text.replace("pl.", f"{self.p}.", 1)
        if isinstance(v, DataType):
            return f"{self.p}.{v.value}"
        if isinstance(v, (tuple, list)):
            return "[" + ", ".join(self.value(x) for x in v) + "]"
        if isinstance(v, Type):
            return self.type(v)
        return repr(v)

    # ------------------------------------------------------------ statements
    def stmt(self, s: Stmt, depth: int) -> None:
        if isinstance(s, SeqStmts):
            if not s.stmts:
                self.emit(depth, "pass")
            for x in s.stmts:
                self.stmt(x, depth)
        elif isinstance(s, AssignStmt):
            name = self.expr(s.var)
            lhs = name if self.concise else f"{name}: {self.type(s.var.type)}"
            self.emit(depth, f"{lhs} = {self.expr(s.value)}", s.span)
        elif isinstance(s, EvalStmt):
            self.emit(depth, f"{self.p}.eval({self.expr(s.expr)})", s.span)
        elif isinstance(s, SetField):
            target = self.expr(s.target, 13)
            sel = f".{s.name}" if s.name is not None else ""
            idx = f"[{self.expr(s.index)}]" if s.index is not None else ""
            self.emit(depth, f"{target}{sel}{idx} = {self.expr(s.value)}", s.span)
        elif isinstance(s, IfStmt):
            self.if_stmt(s, depth)
        elif isinstance(s, ForStmt):
            self.for_stmt(s, depth)
        elif isinstance(s, WhileStmt):
            head = self.carried(s.iter_args, s.return_vars)
            if s.iter_args:
                carried = ", ".join(self.expr(v) for v in s.iter_args)
                self.emit(depth, f"{head}while {self.p}.cond({self.expr(s.cond)}, iter_args=("
                                 f"{carried}), init_values={self.tuple(s.init_values)}):", s.span)
            else:
                self.emit(depth, f"while {self.expr(s.cond)}:", s.span)
            self.stmt(s.body, depth + 1)
        elif isinstance(s, YieldStmt):
            self.emit(depth, f"{self.p}.yield_({', '.join(self.expr(v) for v in s.values)})",
                      s.span)
        elif isinstance(s, ReturnStmt):
            value = f" {self.expr(s.value)}" if s.value is not None else ""
            self.emit(depth, f"return{value}", s.span)
        elif isinstance(s, BreakStmt):
            self.emit(depth, "break", s.span)
        elif isinstance(s, ContinueStmt):
            self.emit(depth, "continue", s.span)
        elif isinstance(s, SectionStmt):
            name = {SectionKind.Vector: "section_vector", SectionKind.Cube: "section_cube",
                    SectionKind.VF: "section_vf"}[s.kind]
            attrs = ", ".join(f"{k}={self.value(v)}" for k, v in s.attrs)
            self.emit(depth, f"with {self.p}.{name}({attrs}):", s.span)
            self.stmt(s.body, depth + 1)
        else:
            raise TypeError(f"printer: unknown statement {type(s).__name__}")

    def tuple(self, values: tuple[Expr, ...]) -> str:
        return "(" + ", ".join(self.expr(v) for v in values) + ("," if len(values) == 1 else "") \
            + ")"

    def carried(self, iter_args: tuple[Var, ...], return_vars: tuple[Var, ...]) -> str:
        if not return_vars:
            return ""
        return ", ".join(self.expr(v) for v in return_vars) + " = "

    def if_stmt(self, s: IfStmt, depth: int) -> None:
        head = self.carried((), s.return_vars)
        self.emit(depth, f"{head}if {self.expr(s.cond)}:", s.span)
        self.stmt(s.then_body, depth + 1)
        if s.else_body is not None:
            self.emit(depth, "else:")
            self.stmt(s.else_body, depth + 1)

    def for_stmt(self, s: ForStmt, depth: int) -> None:
        target = self.expr(s.loop_var)
        if s.iter_args:
            target += ", (" + ", ".join(self.expr(v) for v in s.iter_args) + \
                ("," if len(s.iter_args) == 1 else "") + ")"
        rng = f"{self.expr(s.start)}, {self.expr(s.stop)}, {self.expr(s.step)}"
        if s.iter_args:
            rng += f", init_values={self.tuple(s.init_values)}"
        if s.attrs:
            rng += ", attrs={" + ", ".join(f"{k!r}: {self.value(v)}" for k, v in s.attrs) + "}"
        head = self.carried(s.iter_args, s.return_vars)
        self.emit(depth, f"{head}for {target} in {self.p}.range({rng}):", s.span)
        self.stmt(s.body, depth + 1)

    # ------------------------------------------------------------ functions
    def unique_names(self, f: Function) -> None:
        """A Var that shares its name with an earlier, different Var of its scope prints as
        `<name>_<n>` (a name no other Var of the scope has), so every printed name is one Var
        where it is read. A VF section is a scope of its own (the reader's too): its locals
        keep their names unless a Var of the same name is used inside the section."""
        found = [n for n in walk(f) if isinstance(n, Var)]
        sections = [s for s in walk(f.body)
                    if isinstance(s, SectionStmt) and s.kind is SectionKind.VF]
        inside = [[n for n in walk(s.body) if isinstance(n, Var)] for s in sections]
        outside = Counter(found)
        for vs in inside:
            outside.subtract(vs)
        self.names = {}
        self._rename([v for v in found if outside[v] > 0], {})
        for vs in inside:
            used = {self.names.get(v, v.name): v for v in vs if outside[v] > 0}
            self._rename([v for v in vs if outside[v] <= 0], used)

    def _rename(self, scope: list[Var], visible: dict[str, Var]) -> None:
        """Name the Vars `scope` defines, after the `visible` Vars of enclosing scopes."""
        taken = set(visible) | {v.name for v in scope}
        first = dict(visible)
        for v in scope:
            if first.setdefault(v.name, v) != v and v not in self.names:
                n = 1
                while f"{v.name}_{n}" in taken:
                    n += 1
                self.names[v] = f"{v.name}_{n}"
                taken.add(self.names[v])

    def function(self, f: Function, depth: int = 0) -> None:
        self.unique_names(f)
        implied = implied_attrs(f, self.launches)
        attrs = ", ".join(f"{k!r}: {self.value(v)}" for k, v in f.attrs if (k, v) not in implied)
        attrs = f"attrs={{{attrs}}}" if attrs else ""
        if f.func_type is FunctionType.OPAQUE:
            self.emit(depth, f"@{self.p}.function" + (f"({attrs})" if attrs else ""))
        else:
            simt = ".simt" if f.func_type in (FunctionType.SIMT_VF, FunctionType.SIMT_CALLEE) \
                else ""
            self.emit(depth, f"@{self.p}{simt}.function(type={self.p}.FunctionType."
                             f"{f.func_type.value}{', ' + attrs if attrs else ''})")
        params = ", ".join(f"{self.expr(v)}: {self.type(v.type)}" for v in f.params)
        ret = f" -> {self.type(f.return_type)}" if f.return_type is not None else ""
        self.emit(depth, f"def {f.name}({params}){ret}:", f.span)
        self.stmt(f.body, depth + 1)

    def program(self, prog: Program) -> None:
        self.emit(0, f"# {self.p}.program: {prog.name}  (target: {prog.target})")
        self.launches = launch_max_threads(prog)
        for i, f in enumerate(prog.functions):
            if i:
                self.emit(0, "")
            self.function(f)


def launch_max_threads(program: Program) -> dict[str, Any]:
    """`max_threads` of each SIMT function as the program's `simt.launch` calls give it."""
    return {n.kwarg("callee"): n.kwarg("max_threads") for n in walk(program)
            if isinstance(n, Call) and n.op == "simt.launch" and n.kwarg("max_threads")}


def implied_attrs(f: Function, launches: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
    """Function attrs not printed because the reader restores them: a kernel's `dynamic_dims`
    (its `__pypto_dyn_*` parameters, in order) and, in a program, a SIMT function's
    `max_threads` when its launches give the same value."""
    out: list[tuple[str, Any]] = []
    if f.func_type is FunctionType.OPAQUE:
        out.append(("dynamic_dims", tuple(p.name for p in f.params
                                          if p.name.startswith(DYN_PREFIX))))
    if f.func_type is FunctionType.SIMT_VF and f.name in launches:
        out.append(("max_threads", launches[f.name]))
    return tuple(out)


def python_print(node: Node, prefix: str = "ir", concise: bool = False,
                 line_map: bool = False):
    """Print an IR node. With `line_map`, return `(text, spans)` (one span or None per line)."""
    pr = Printer(prefix, concise)
    if isinstance(node, Program):
        pr.program(node)
    elif isinstance(node, Function):
        pr.function(node)
    elif isinstance(node, Stmt):
        pr.stmt(node, 0)
    elif isinstance(node, Expr):
        pr.emit(0, pr.expr(node))
    else:
        raise TypeError(f"cannot print {type(node).__name__}")
    text = "\n".join(pr.lines) + "\n"
    return (text, pr.spans) if line_map else text
