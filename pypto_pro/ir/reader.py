"""The reader proper: the grammar of the printer's full text form (spec §3.3) back into IR.

`pypto_pro.language.ir_text` (`pl.loads`, `pl.parse`, ...) reads the module level — header,
decorators, functions — with a `Reader`, which reads one function at a time. The text is almost
Python: a line-preserving rewrite (`_rewrite_line`) turns the few non-Python spellings into
Python — `ir.call @op(` into `__ir_call__('op', `, `a, b = for|if|while ...:` heads into
`__ir_carry__((a, b), ...)`, `ir.TileGroup[..., addrs=...]` / `ir.Tuple[...]` /
`ir.Struct[...]` subscripts into calls and an unknown tile address `?` into `None` — and `ast`
does the rest. PyPTO's `rv = pl.yield_(v)` (a body's last statement names the results of its
loop / if) and `pl.range(stop)` are read too, so decorated Python source can say everything.

Names: one `Var` per printed name per function (the printer keeps names unique). Types: a Var's
comes from its annotation (parameters, assignments) or, for loop / if results and iter_args,
from the values that flow into it; a call's from the annotation of the assignment it is the
value of (`INFERRED` ops and nested calls: tile-group slots and mutex ids, `block.getval` → the
element dtype, a `block.subview` → its source's tile type with the slice's valid shape, other
value-returning ops → INDEX, else None). Other expressions get the types
the DSL parser gives them. The prefix (`ir`, `pl`, ...) comes from the header or a decorator.
"""
from __future__ import annotations

import ast
import enum
import re
from dataclasses import replace
from typing import Any

from ..errors import ParserSyntaxError
from . import attrs as _attrs
from . import ops
from .dtype import DataType, promote_scalar
from .nodes import (
    AssignStmt, BinaryExpr, BinOp, BreakStmt, Call, Cast, ConstFloat, ConstInt, ContinueStmt,
    EnumConst, EvalStmt, Expr, ForStmt, Function, FunctionType, GetField, GetItem, IfStmt,
    MakeTuple, ReturnStmt, SectionStmt, Select, SeqStmts, SetField, Stmt, UnaryExpr,
    UnOp, Var, WhileStmt, YieldStmt, const,
)
from .span import Span
from .types import (
    BOOL, INDEX, AddrRegType, AlignRegType, ArrayType, CoreType, FunctionRefType, MaskType,
    MemorySpace, NoneType, PipeType, PtrType, RegType, ScalarType, SectionKind, StrType,
    StructType, TensorType, TileGroupType, TileLayout, TilePad, TileType, TupleType, Type,
)

CALL, CARRY = "__ir_call__", "__ir_carry__"
#: enums spelled `<prefix>.<Class>.<member>`
ENUMS: dict[str, Any] = {**_attrs.ALL, **{e.__name__: e for e in (
    MemorySpace, PipeType, TilePad, CoreType, SectionKind, FunctionType)}}
_TYPE_HEADS = {"Tensor", "Tile", "TileGroup", "Ptr", "Reg", "Array", "Tuple", "Struct", "Scalar",
               "Function", "Mask", "AddrReg", "AlignReg", *DataType.__members__}
_BIN = {ast.Add: BinOp.Add, ast.Sub: BinOp.Sub, ast.Mult: BinOp.Mul, ast.FloorDiv: BinOp.FloorDiv,
        ast.Mod: BinOp.FloorMod, ast.Div: BinOp.FloatDiv, ast.Pow: BinOp.Pow,
        ast.BitAnd: BinOp.BitAnd, ast.BitOr: BinOp.BitOr, ast.BitXor: BinOp.BitXor,
        ast.LShift: BinOp.Shl, ast.RShift: BinOp.Shr, ast.Eq: BinOp.Eq, ast.NotEq: BinOp.Ne,
        ast.Lt: BinOp.Lt, ast.LtE: BinOp.Le, ast.Gt: BinOp.Gt, ast.GtE: BinOp.Ge,
        ast.And: BinOp.And, ast.Or: BinOp.Or}
_UN = {ast.USub: UnOp.Neg, ast.Not: UnOp.Not, ast.Invert: UnOp.BitNot}
_SECTIONS = {"section_vector": SectionKind.Vector, "section_cube": SectionKind.Cube,
             "section_vf": SectionKind.VF}
_STRING = re.compile(r"""'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*\"""")
_HEAD = re.compile(r"^(\s*)((?:[A-Za-z_]\w*, )*[A-Za-z_]\w*) = (for|if|while) (.*):\s*$")
HEADER = re.compile(r"^#\s*(\w+)\.program:\s*(\S+)\s*\(target:\s*(\w+)\)\s*$")
_DECORATOR = re.compile(r"^\s*@(\w+)\.(?:simt\.)?function\b", re.M)
_PREFIX_USE = re.compile(r"\b(\w+)\.(?:call @|eval\(|yield_\(|range\(|section_\w+\(|Tensor\[|"
                         r"Tile\[|INDEX\b)")
_NO = object()  # "not a literal"
#: calls whose type the reader infers, also as assignment values (a slot's type may be more
#: precise than the Var's: `t: <any slot> = tile_group.get(g, 1)`)
INFERRED = frozenset({"tile_group.next", "tile_group.current", "tile_group.previous",
                      "tile_group.get", "tile_group.mutex_id"})
#: call keywords whose values are expressions even when they print as literals
EXPR_KWARGS = frozenset({"guard"})


# ---------------------------------------------------------------- the text rewrite


def detect_prefix(text: str, default: str = "ir") -> str:
    """The printer's prefix used in `text`: from the program header, the first decorator or
    else the first `<p>.call @` / `<p>.eval(` / `<p>.Tensor[` / ... it finds."""
    first = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    m = HEADER.match(first) or _DECORATOR.search(text) or _PREFIX_USE.search(text)
    return m.group(1) if m else default


def _rewrite_code(code: str, p: str) -> str:
    code = re.sub(rf"\b{p}\.call @([A-Za-z_][\w.]*)\(", rf"{CALL}('\1', ", code)
    return code.replace("?", "None")


def _brackets_to_parens(line: str, p: str) -> str:
    """`<p>.TileGroup[...]`, `<p>.Tuple[...]`, `<p>.Struct[...]` become calls (keywords)."""
    opens = {m.end() - 1 for m in re.finditer(rf"\b{p}\.(?:TileGroup|Tuple|Struct)\[", line)}
    out, stack, i = list(line), [], 0
    while i < len(line):
        m = _STRING.match(line, i)
        if m:  # not inside string literals
            i = m.end()
            continue
        if line[i] == "[":
            stack.append(i)
        elif line[i] == "]" and stack and stack[-1] in opens:
            out[stack.pop()], out[i] = "(", ")"
        elif line[i] == "]" and stack:
            stack.pop()
        i += 1
    return "".join(out)


def _rewrite_line(line: str, p: str) -> str:
    parts, last = [], 0
    for m in _STRING.finditer(line):
        parts += [_rewrite_code(line[last:m.start()], p), m.group()]
        last = m.end()
    line = _brackets_to_parens("".join(parts) + _rewrite_code(line[last:], p), p)
    m = _HEAD.match(line)
    if not m:
        return line
    indent, names, kw, rest = m.groups()
    if kw == "for":
        target, _, rng = rest.partition(" in ")
        return f"{indent}for {target} in {CARRY}(({names},), {rng}):"
    return f"{indent}{kw} {CARRY}(({names},), {rest}):"


# ---------------------------------------------------------------- the reader


class Reader:
    """Reads the functions of one text; `file` / `line_offset` place spans and errors."""

    def __init__(self, prefix: str = "ir", file: str = "<ir>", line_offset: int = 0) -> None:
        self.p, self.file, self.offset = prefix, file, line_offset
        self.scope: dict[str, Var] = {}
        self.pending: dict[str, ast.AST] = {}  # annotations of names not defined yet
        self.yielded: list[str] = []  # result names of the last `rv = pl.yield_(...)`
        self.indent: dict[int, int] = {}  # line → indentation, for lines the rewrite changed
        self.vf_outer: dict[str, Var] | None = None  # the enclosing scope inside a VF section

    def parse(self, text: str) -> ast.Module:
        """The Python AST of the rewritten text; a syntax error is a `ParserSyntaxError`."""
        lines = text.split("\n")
        python = [_rewrite_line(ln, self.p) for ln in lines]
        self.indent = {k + 1: len(ln) - len(ln.lstrip()) for k, (ln, py) in
                       enumerate(zip(lines, python)) if ln != py}  # rewritten lines
        try:
            return ast.parse("\n".join(python))
        except SyntaxError as e:
            line = e.lineno or 1
            col = self.indent[line] + 1 if line in self.indent else e.offset or 1
            raise ParserSyntaxError(f"IR text: {e.msg}", Span(self.file, line + self.offset, col),
                                    hint="not in the printer's text form") from None

    def span(self, node: ast.AST) -> Span:
        line = getattr(node, "lineno", 0)
        col = self.indent[line] if line in self.indent else getattr(node, "col_offset", 0)
        return Span(self.file, line + self.offset, col + 1)

    def error(self, message: str, node: ast.AST) -> ParserSyntaxError:
        return ParserSyntaxError(f"IR text: {message}", self.span(node),
                                 hint="the reader reads python_print(..., concise=False) text")

    def path(self, node: ast.AST | None) -> list[str]:
        """`<p>.a.b` → ["a", "b"]; [] when `node` is not an attribute of the prefix."""
        names = []
        while isinstance(node, ast.Attribute):
            names.append(node.attr)
            node = node.value
        return names[::-1] if isinstance(node, ast.Name) and node.id == self.p else []

    def kwargs(self, node: ast.Call) -> dict[str, ast.AST]:
        return {k.arg: k.value for k in node.keywords if k.arg is not None}

    def names(self, node: ast.AST) -> list[str]:
        elts = node.elts if isinstance(node, (ast.Tuple, ast.List)) else [node]
        if not all(isinstance(e, ast.Name) for e in elts):
            raise self.error("expected a name or a tuple of names", node)
        return [e.id for e in elts]

    def define(self, name: str, ty: Type, node: ast.AST) -> Var:
        """The Var printed as `name` (one per name per function)."""
        self.pending.pop(name, None)
        shadowed = self.vf_outer is not None and self.scope.get(name) is self.vf_outer.get(name)
        if name not in self.scope or shadowed:
            self.scope[name] = Var(name, ty, self.span(node))
        return self.scope[name]

    def lookup(self, name: str, node: ast.AST) -> Var:
        if name not in self.scope and name in self.pending:
            ann = self.pending.pop(name)
            self.scope[name] = Var(name, self.type(ann), self.span(ann))
        if name not in self.scope:
            raise self.error(f"undefined name '{name}'", node)
        return self.scope[name]

    # ------------------------------------------------------------ types
    def type_head(self, node: ast.AST) -> str | None:
        path = self.path(getattr(node, "value", None) if isinstance(node, ast.Subscript) else
                         getattr(node, "func", node))
        return path[-1] if len(path) == 1 and path[-1] in _TYPE_HEADS else None

    def type(self, node: ast.AST) -> Type:
        head = self.type_head(node)
        if isinstance(node, ast.Constant) and node.value is None:
            return NoneType()
        if isinstance(node, ast.Name) and node.id == "str":
            return StrType()
        if head in DataType.__members__ and isinstance(node, ast.Attribute):
            return ScalarType(DataType[head])
        if head == "Mask" and isinstance(node, ast.Attribute):
            return MaskType()
        if head == "AlignReg" and isinstance(node, ast.Attribute):
            return AlignRegType()
        if head and isinstance(node, ast.Subscript):
            items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            return self.subscript_type(head, items, node)
        if head and isinstance(node, ast.Call):
            return self.call_type(head, node)
        raise self.error(f"not a type: {ast.unparse(node)}", node)

    def subscript_type(self, head: str, items: list[ast.AST], node: ast.AST) -> Type:
        if head == "Tensor" and len(items) >= 2 and isinstance(items[0], ast.List):
            shape = tuple(self.expr(d) for d in items[0].elts)
            layout, strides = TileLayout.ND, None
            for x in items[2:]:
                if isinstance(x, ast.Call) and self.path(x.func) == ["TensorView"]:
                    strides = tuple(self.expr(s) for s in self.kwargs(x)["stride"].elts)
                else:
                    layout = self.lit(x, TileLayout)
            return TensorType(shape, self.dtype(items[1]), layout, strides)
        if head == "Tile":
            return self.tile_type(items, node)
        if head == "Scalar":
            return ScalarType(self.dtype(items[0]))
        if head in ("Ptr", "Reg", "Mask", "AddrReg"):
            kind = {"Ptr": PtrType, "Reg": RegType, "Mask": MaskType, "AddrReg": AddrRegType}
            return kind[head](self.dtype(items[0]))
        if head == "Array" and len(items) == 2:
            return ArrayType(self.type(items[0]), self.lit(items[1], int))
        if head == "Function" and isinstance(items[0], ast.Name):
            return FunctionRefType(items[0].id)
        raise self.error(f"malformed type {ast.unparse(node)}", node)

    def call_type(self, head: str, node: ast.Call) -> Type:
        kw = self.kwargs(node)
        if head == "TileGroup" and len(node.args) == 1 and "addrs" in kw:
            ids = {k: self.lit(kw[k], tuple) for k in ("mutex_ids", "fwd_ids", "bwd_ids")
                   if k in kw}
            addrs = tuple(int(a, 16) if isinstance(a, str) else a
                          for a in self.lit(kw["addrs"], tuple))
            return TileGroupType(self.type(node.args[0]), addrs, **ids)
        if head == "Tuple":
            names = self.lit(kw["names"], tuple) if "names" in kw else None
            return TupleType(tuple(self.type(a) for a in node.args), names)
        if head == "Struct" and len(node.args) == 1 and isinstance(node.args[0], ast.Name):
            return StructType(node.args[0].id, tuple((k, self.type(v)) for k, v in kw.items()))
        raise self.error(f"malformed type {ast.unparse(node)}", node)

    def tile_type(self, items: list[ast.AST], node: ast.AST) -> TileType:
        mem = items[2] if len(items) > 2 else None
        if not (isinstance(mem, ast.Call) and self.path(mem.func) == ["MemRef"]
                and len(mem.args) == 3):
            raise self.error("expected Tile[[r, c], dtype, MemRef(space, addr, size), ...]", node)
        shape = self.lit(items[0], tuple)
        addr = self.lit(mem.args[1])
        extra: dict[str, Any] = {"valid_shape": shape, "addr": addr} \
            if not isinstance(addr, tuple) else {"valid_shape": shape, "slot_addrs": addr}
        for item in items[3:]:
            name = self.path(getattr(item, "func", None))
            kw = self.kwargs(item) if isinstance(item, ast.Call) else {}
            if name == ["TileView"] and "valid_shape" in kw:
                extra["valid_shape"] = tuple(None if v == -1 else v
                                             for v in self.lit(kw["valid_shape"], tuple))
            elif name == ["HardwareInfo"]:
                extra.update({k: TilePad[v.id] if k == "pad" and isinstance(v, ast.Name)
                              else self.lit(v) for k, v in kw.items()})
            else:
                raise self.error(f"unexpected tile type part {ast.unparse(item)}", item)
        tile = TileType(shape, self.dtype(items[1]), self.lit(mem.args[0], MemorySpace))
        return replace(tile, **extra)

    def dtype(self, node: ast.AST) -> DataType:
        """`<p>.FP16` (types) or `<p>.DT_FP16` (values)."""
        path = self.path(node)
        name = path[0][3:] if len(path) == 1 and path[0].startswith("DT_") else "".join(path)
        if len(path) != 1 or name not in DataType.__members__:
            raise self.error(f"expected a dtype, got {ast.unparse(node)}", node)
        return DataType[name]

    # ------------------------------------------------------------ literal values
    def lit(self, node: ast.AST, kind: type | None = None) -> Any:
        """The Python value `node` spells (a literal, dtype, enum or nested tuple of those)."""
        v = self.literal(node)
        if v is _NO or (kind is not None and not isinstance(v, kind)):
            what = getattr(kind, "__name__", "number") if kind else "constant"
            raise self.error(f"expected a {what}, got {ast.unparse(node)}", node)
        return v

    def literal(self, node: ast.AST) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, (ast.List, ast.Tuple)):
            items = tuple(self.literal(e) for e in node.elts)
            return _NO if _NO in items else items
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            v = self.literal(node.operand)
            return -v if isinstance(v, (int, float)) and not isinstance(v, bool) else _NO
        if isinstance(node, ast.Name) and node.id in ("inf", "nan") and node.id not in self.scope:
            return float(node.id)
        path = self.path(node)
        if len(path) == 1 and path[0].startswith("DT_") and path[0][3:] in DataType.__members__:
            return DataType[path[0][3:]]
        if len(path) == 1 and path[0] in TileLayout.__members__:
            return TileLayout[path[0]]
        if len(path) == 2 and path[0] in ENUMS and path[1] in ENUMS[path[0]].__members__:
            return ENUMS[path[0]][path[1]]
        return _NO

    def value(self, node: ast.AST) -> Any:
        """A kwarg / attr value: a literal when it is one, a type, else an expression."""
        if isinstance(node, (ast.List, ast.Tuple)):
            return tuple(self.value(e) for e in node.elts)
        v = self.literal(node)
        if v is not _NO:
            return v
        return self.type(node) if self.type_head(node) else self.expr(node)

    # ------------------------------------------------------------ expressions
    def expr(self, node: ast.AST) -> Expr:
        span = self.span(node)
        v = _NO if isinstance(node, (ast.List, ast.Tuple)) else self.literal(node)
        if v is not _NO and v is not None:  # (IntEnum attrs are ints to `const`)
            return EnumConst(v, span) if isinstance(v, enum.Enum) else const(v, span)
        if isinstance(node, ast.Name):
            return self.lookup(node.id, node)
        if isinstance(node, ast.BinOp) and type(node.op) in _BIN:
            return self.binary(_BIN[type(node.op)], node.left, node.right, span)
        if isinstance(node, ast.BoolOp):
            out = self.expr(node.values[0])
            for x in node.values[1:]:
                out = self.binary(_BIN[type(node.op)], out, x, span)
            return out
        if isinstance(node, ast.Compare):
            out = self.expr(node.left)  # the printer never means Python's chained compare
            for op, x in zip(node.ops, node.comparators):
                out = self.binary(_BIN[type(op)], out, x, span)
            return out
        if isinstance(node, ast.UnaryOp) and type(node.op) in _UN:
            e = self.expr(node.operand)
            return UnaryExpr(_UN[type(node.op)], e, BOOL if isinstance(node.op, ast.Not)
                             else e.type, span)
        return self.compound(node, span)

    def compound(self, node: ast.AST, span: Span) -> Expr:
        if isinstance(node, ast.IfExp):
            return self.select(node, span)
        if isinstance(node, ast.List):
            elems = tuple(self.expr(e) for e in node.elts)
            return MakeTuple(elems, TupleType(tuple(e.type for e in elems)), span)
        if isinstance(node, ast.Subscript):
            base, index = self.expr(node.value), self.expr(node.slice)
            t = base.type
            if isinstance(t, ArrayType):
                return GetItem(base, index, t.elem, span)
            if isinstance(t, TupleType) and isinstance(index, ConstInt) and \
                    0 <= index.value < len(t.types):
                return GetItem(base, index, t.types[index.value], span)
            raise self.error(f"cannot index {ast.unparse(node.value)}", node)
        if isinstance(node, ast.Attribute):
            base = self.expr(node.value)
            t = base.type
            names = t.names if isinstance(t, TupleType) else None
            ft = t.field_type(node.attr) if isinstance(t, StructType) else \
                t.types[names.index(node.attr)] if names and node.attr in names else None
            if ft is None:
                raise self.error(f"{ast.unparse(node.value)} has no field '{node.attr}'", node)
            return GetField(base, node.attr, ft, span)
        if isinstance(node, ast.Call):
            return self.call(node, span)
        raise self.error(f"not an IR expression: {ast.unparse(node)}", node)

    def binary(self, op: BinOp, a: Any, b: Any, span: Span) -> Expr:
        ea = a if isinstance(a, Expr) else self.expr(a)
        eb = b if isinstance(b, Expr) else self.expr(b)
        ta, tb = ea.type, eb.type
        if op.is_compare or op.is_logical:
            t: Type = BOOL
        elif isinstance(ta, ScalarType) and isinstance(tb, ScalarType):
            d = promote_scalar(ta.dtype, tb.dtype)
            t = ScalarType(promote_scalar(d, DataType.FP32) if op is BinOp.FloatDiv else d)
        else:
            t = ta
        return BinaryExpr(op, ea, eb, t, span)

    def select(self, node: ast.IfExp, span: Span) -> Expr:
        cond, a, b = self.expr(node.test), self.expr(node.body), self.expr(node.orelse)
        ta, tb = a.type, b.type
        if isinstance(ta, TileType) and isinstance(tb, TileType):
            t: Type = replace(ta, addr=None,
                              slot_addrs=tuple(dict.fromkeys(ta.addresses + tb.addresses)))
        elif isinstance(ta, ScalarType) and isinstance(tb, ScalarType):
            t = ScalarType(promote_scalar(ta.dtype, tb.dtype))
        else:
            t = ta
        return Select(cond, a, b, t, span)

    def call(self, node: ast.Call, span: Span) -> Expr:
        f = node.func
        fname = f.id if isinstance(f, ast.Name) else None
        path = self.path(f)
        if fname == CALL and node.args and isinstance(node.args[0], ast.Constant):
            op = node.args[0].value
            args = tuple(self.expr(a) for a in node.args[1:])
            kwargs = tuple((k.arg, tuple(self.expr(e) for e in k.value.elts)
                            if k.arg in EXPR_KWARGS and isinstance(k.value, ast.List)
                            else self.value(k.value)) for k in node.keywords)
            return Call(op, args, kwargs, _call_type(op, args, dict(kwargs)), span)
        if fname == "abs" and len(node.args) == 1:
            e = self.expr(node.args[0])
            return UnaryExpr(UnOp.Abs, e, e.type, span)
        if fname in ("min", "max") and len(node.args) == 2:
            op = BinOp.Min if fname == "min" else BinOp.Max
            return self.binary(op, node.args[0], node.args[1], span)
        if path in (["cast"], ["const"]) and len(node.args) == 2:
            dtype = self.dtype(node.args[1])
            if path == ["cast"]:
                return Cast(self.expr(node.args[0]), ScalarType(dtype), span)
            v = self.lit(node.args[0], (int, float))
            return (ConstFloat if isinstance(v, float) else ConstInt)(v, dtype, span)
        raise self.error(f"unknown call {ast.unparse(f)}", node)

    # ------------------------------------------------------------ statements
    def block(self, body: list[ast.stmt]) -> SeqStmts:
        return SeqStmts(tuple(self.stmt(s) for s in body if not isinstance(s, ast.Pass)),
                        self.span(body[0]))

    def stmt(self, node: ast.stmt) -> Stmt:
        span = self.span(node)
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and \
                node.value and not self.is_yield(node.value):
            value = self.expr(node.value)
            var = self.define(node.target.id, self.type(node.annotation), node)
            return AssignStmt(var, _typed(value, var.type), span)
        yields = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
        if isinstance(yields, ast.Call) and self.path(yields.func) == ["yield_"]:
            target = node.targets[0] if isinstance(node, ast.Assign) else node.target
            self.yielded = self.names(target)  # `rv = pl.yield_(v)`: names the results
            return YieldStmt(tuple(self.expr(a) for a in yields.args), span)
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            return self.set_field(node.targets[0], self.expr(node.value), node)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            call, path = node.value, self.path(node.value.func)
            if path == ["eval"] and len(call.args) == 1 and not call.keywords:
                return EvalStmt(self.expr(call.args[0]), span)
            if path == ["yield_"] and not call.keywords:
                return YieldStmt(tuple(self.expr(a) for a in call.args), span)
        if isinstance(node, ast.Return):
            value = self.expr(node.value) if node.value is not None else None
            return ReturnStmt(value, span)
        if isinstance(node, (ast.Break, ast.Continue)):
            return (BreakStmt if isinstance(node, ast.Break) else ContinueStmt)(span)
        if isinstance(node, (ast.For, ast.While)) and node.orelse:
            raise self.error("loops have no else branch", node)
        kind = {ast.For: self.for_stmt, ast.While: self.while_stmt, ast.If: self.if_stmt,
                ast.With: self.section}.get(type(node))
        if kind is None:
            raise self.error(f"not an IR statement: {ast.unparse(node).splitlines()[0]}", node)
        return kind(node)

    def set_field(self, target: ast.AST, value: Expr, node: ast.AST) -> Stmt:
        index = None
        if isinstance(target, ast.Subscript):
            index, target = self.expr(target.slice), target.value
        if isinstance(target, ast.Attribute):
            return SetField(self.expr(target.value), target.attr, index, value, self.span(node))
        if index is not None:
            return SetField(self.expr(target), None, index, value, self.span(node))
        raise self.error("an assignment needs its type: `name: <type> = value`", node)

    def is_yield(self, node: ast.AST) -> bool:
        return isinstance(node, ast.Call) and self.path(node.func) == ["yield_"]

    def carried(self, node: ast.AST) -> tuple[list[str], ast.AST]:
        """The return-var names of a `a, b = for|if|while ...` head and the head proper."""
        self.yielded = []
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id == CARRY and len(node.args) == 2:
            return self.names(node.args[0]), node.args[1]
        return [], node

    def body(self, stmts: list[ast.stmt]) -> tuple[SeqStmts, list[str]]:
        """A construct's body and the result names its `rv = pl.yield_(...)` gave, if any."""
        self.yielded = []
        block = self.block(stmts)
        names, self.yielded = self.yielded, []
        return block, names

    def results(self, names: list[str], values: tuple[Expr, ...], node: ast.AST) \
            -> tuple[Var, ...]:
        if len(names) != len(values):
            raise self.error(f"{len(names)} names for {len(values)} values", node)
        return tuple(self.define(n, v.type, node) for n, v in zip(names, values))

    def for_stmt(self, node: ast.For) -> Stmt:
        rv_names, rng = self.carried(node.iter)
        if not (isinstance(rng, ast.Call) and self.path(rng.func) == ["range"]
                and 1 <= len(rng.args) <= 3):
            raise self.error("expected `for v in ir.range(start, stop, step, ...)`", node)
        kw = self.kwargs(rng)
        bounds = [self.expr(a) for a in rng.args]  # Python's range(stop) / (start, stop)
        if len(bounds) == 1:
            bounds.insert(0, ConstInt(0, span=self.span(rng)))
        if len(bounds) == 2:
            bounds.append(ConstInt(1, span=self.span(rng)))
        start, stop, step = bounds
        inits = tuple(self.expr(e) for e in kw["init_values"].elts) if "init_values" in kw \
            else ()
        attrs = kw.get("attrs")
        attrs_t = tuple((self.lit(k, str), self.value(v)) for k, v in
                        zip(attrs.keys, attrs.values)) if isinstance(attrs, ast.Dict) else ()
        target = node.target
        iter_names: list[str] = []
        if isinstance(target, ast.Tuple) and len(target.elts) == 2:
            target, iter_names = target.elts[0], self.names(target.elts[1])
        loop_var = self.define(self.names(target)[0], INDEX, target)
        iter_args = self.results(iter_names, inits, node)
        body, yielded = self.body(node.body)
        rvs = self.results(rv_names or yielded, iter_args, node)
        return ForStmt(loop_var, start, stop, step, body, iter_args, inits, rvs, attrs_t,
                       self.span(node))

    def while_stmt(self, node: ast.While) -> Stmt:
        rv_names, test = self.carried(node.test)
        iter_args: tuple[Var, ...] = ()
        inits: tuple[Expr, ...] = ()
        if isinstance(test, ast.Call) and self.path(test.func) == ["cond"] and test.args:
            kw = self.kwargs(test)
            inits = tuple(self.expr(e) for e in getattr(kw.get("init_values"), "elts", ()))
            iter_args = self.results(self.names(kw["iter_args"]) if "iter_args" in kw else [],
                                     inits, node)
            test = test.args[0]
        cond = self.expr(test)
        body, yielded = self.body(node.body)
        rvs = self.results(rv_names or yielded, iter_args, node)
        return WhileStmt(cond, body, iter_args, inits, rvs, self.span(node))

    def if_stmt(self, node: ast.If) -> Stmt:
        rv_names, test = self.carried(node.test)
        cond = self.expr(test)
        then, yielded = self.body(node.body)
        other, yielded_else = self.body(node.orelse) if node.orelse else (None, [])
        rv_names = rv_names or yielded or yielded_else
        rvs: tuple[Var, ...] = ()
        if rv_names:
            ends = [b.stmts[-1] for b in (then, other) if b is not None and b.stmts]
            yields = [s for s in ends if isinstance(s, YieldStmt)]
            if not yields:
                raise self.error("an if with results needs a branch ending in ir.yield_", node)
            rvs = self.results(rv_names, yields[0].values, node)
        return IfStmt(cond, then, other, rvs, self.span(node))

    def section(self, node: ast.With) -> Stmt:
        ctx = node.items[0].context_expr if len(node.items) == 1 else None
        path = self.path(getattr(ctx, "func", None))
        if not (isinstance(ctx, ast.Call) and len(path) == 1 and path[0] in _SECTIONS
                and not ctx.args):
            raise self.error("expected `with ir.section_vector|cube|vf(...)`", node)
        attrs = tuple((k.arg, self.value(k.value)) for k in ctx.keywords)
        kind = _SECTIONS[path[0]]
        body = self.vf_body(node.body) if kind is SectionKind.VF else self.block(node.body)
        return SectionStmt(kind, body, attrs, self.span(node))

    def vf_body(self, body: list[ast.stmt]) -> SeqStmts:
        """A VF section is a scope: the names it defines are new Vars there (the printer may
        reuse an outer name that the section does not read), the outer ones come back after."""
        saved = self.scope, self.pending, self.vf_outer
        self.vf_outer, self.scope, self.pending = self.scope, dict(self.scope), dict(self.pending)
        for stmt in (n for b in body for n in ast.walk(b)):  # also names read before assignment
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                self.scope.pop(stmt.target.id, None)
                self.pending[stmt.target.id] = stmt.annotation
        try:
            return self.block(body)
        finally:
            self.scope, self.pending, self.vf_outer = saved

    # ------------------------------------------------------------ functions
    def function(self, node: ast.FunctionDef, func_type: FunctionType,
                 attrs: tuple[tuple[str, Any], ...]) -> Function:
        """One function (its own names); the decorator was read by the caller."""
        self.scope, self.pending = {}, {}
        args = node.args
        if args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs or args.defaults:
            raise self.error("IR functions have plain positional parameters", node)
        plain = args.args[1:] if args.args and args.args[0].arg == "self" and \
            args.args[0].annotation is None else args.args  # methods of a @pl.program class
        for a in plain:
            if a.annotation is None:
                raise self.error(f"parameter '{a.arg}' has no type", a)
            self.pending[a.arg] = a.annotation
        params = tuple(self.lookup(a.arg, a) for a in plain)
        for stmt in ast.walk(node):  # a name read before its assignment (non-SSA loops)
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                self.pending.setdefault(stmt.target.id, stmt.annotation)
        ret = self.type(node.returns) if node.returns is not None else None
        stmts = node.body[1:] if is_docstring(node.body[0]) and len(node.body) > 1 \
            else node.body
        body = self.block(stmts)
        return Function(node.name, params, body, func_type, attrs, ret, self.span(node))

def _typed(value: Expr, ty: Type) -> Expr:
    """An assignment's value with the type its annotation gives it (the only printed type of a
    call or list); a re-assigned tile Var keeps its first type, a `make_tile` its own address."""
    if isinstance(value, Call) and value.op == "block.make_tile" and isinstance(ty, TileType):
        addr = value.kwarg("memref_addr")
        if isinstance(addr, int) and addr != ty.addr:
            return replace(value, type=replace(ty, addr=addr, slot_addrs=()))
    if isinstance(value, (Call, MakeTuple)) and value.type != ty and not (
            isinstance(value, Call) and value.op in INFERRED):
        return replace(value, type=ty)
    return value


def _call_type(op: str, args: tuple[Expr, ...], kwargs: dict[str, Any]) -> Type:
    """The type of a call nested in an expression (its own type is not printed)."""
    t = args[0].type if args else None
    if op == "block.getval" and isinstance(t, (TileType, TensorType)):
        return ScalarType(t.dtype)
    if op == "block.subview" and isinstance(t, TileType) and len(args) > 2 and \
            isinstance(args[2], MakeTuple):  # as the parser's slice
        return replace(t, valid_shape=tuple(e.value if isinstance(e, ConstInt) else None
                                            for e in args[2].elements))
    if op.startswith("tile_group.") and isinstance(t, TileGroupType) and op != "tile_group.make":
        if op == "tile_group.mutex_id":
            return INDEX
        index = args[1] if op == "tile_group.get" and len(args) > 1 else None
        return t.slot_type(index.value if isinstance(index, ConstInt) else
                           None if t.depth > 1 or op == "tile_group.get" else 0)
    if op == "ptr.make_ptr" and isinstance(t, (PtrType, TensorType)):
        return PtrType(kwargs.get("dtype") or t.dtype)
    if op == "ptr.addptr" and isinstance(t, PtrType):
        return t
    if op == "ptr.is_null":
        return BOOL
    spec = ops.get(op)
    return INDEX if spec is not None and spec.returns == "scalar" else NoneType()


def is_docstring(node: ast.stmt) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and \
        isinstance(node.value.value, str)
