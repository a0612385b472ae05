"""`pl.function`, `pl.program`, `pl.parse`, `pl.loads`, `pl.parse_program`, `pl.loads_program`.

They read IR written in the printer's Python-like text form (spec §3.3, `python_print`, full
form) back into IR. This module reads the module level — the program header, decorators,
functions, Python sources — and `pypto_pro.ir.reader` the grammar inside a function:

* `loads(text)` / `parse(text)` — a `Program` when the text starts with
  `# ir.program: <name>  (target: <t>)`, else the one `Function` it holds;
  `loads_program` / `parse_program` insist on a program. `python_print(loads(text)) == text`
  for printer output.
* `@pl.function` / `@pl.function(type=pl.FunctionType.X)` on a Python function written in the
  text form give its IR `Function`; `@pl.program` / `@pl.program(target="cube", name=...)` on a
  class whose methods are such functions (a leading `self` is ignored) give the `Program`. Both
  read the source (`inspect.getsource`) when they decorate, with spans and errors at the real
  file lines; an object without source is `NotSupported`. `parse(obj)` / `parse_program(obj)`
  also take such functions and classes, undecorated or already read. Python source must be
  valid Python, so there loop / if results are named the PyPTO way, `rv = pl.yield_(v)` as the
  body's last statement, instead of the printer's `rv = for ...:` head, a tile group type is a
  call (`pl.TileGroup(tile, addrs=[...])`), and the module needs
  `from __future__ import annotations` (annotations are IR types).

Function attrs the printer leaves out because they are implied (`printer.implied_attrs`) are
restored. Malformed text raises `ParserSyntaxError` whose span is the offending line (texts read
from strings are registered with `linecache` so the diagnostic shows the line).
"""
from __future__ import annotations

import ast
import hashlib
import inspect
import linecache
import textwrap
from dataclasses import replace
from typing import Any, Callable

from ..errors import InvalidType, NotSupported, ParserSyntaxError
from ..ir.mutator import Mutator
from ..ir.nodes import Call, Function, FunctionType, Program
from ..ir.printer import implied_attrs, launch_max_threads
from ..ir.reader import HEADER, Reader, detect_prefix, is_docstring
from ..ir.span import Span
from ..ir.types import NoneType

DEFAULT_TARGET = "vector"
_DECORATOR_KW = frozenset({"type", "attrs"})


# ---------------------------------------------------------------- decorators


def function(fn: Callable | None = None, *, type: FunctionType | None = None) -> Any:
    """`@pl.function` / `@pl.function(type=pl.FunctionType.X)`: the IR `Function` the decorated
    source spells (`type`, when given, overrides the decorator the source shows)."""
    def read_source(f: Callable) -> Function:
        fn_ir = _read_function(f)
        return fn_ir if type is None else replace(fn_ir, func_type=type)

    return read_source(fn) if fn is not None else read_source


def program(cls: type | None = None, *, target: str = DEFAULT_TARGET,
            name: str | None = None) -> Any:
    """`@pl.program` / `@pl.program(target="cube", name=...)`: the IR `Program` of a class whose
    methods are IR functions (named `name`, default the class name, for `target`)."""
    if target not in ("vector", "cube"):
        raise InvalidType(f"pl.program: target must be 'vector' or 'cube', got {target!r}",
                          module="PRO_PARSER")
    if cls is None:
        return lambda c: _read_class(c, target, name)
    return _read_class(cls, target, name)


# ---------------------------------------------------------------- reading text and sources


def loads(text: str, *, file: str | None = None) -> Program | Function:
    """IR text (the printer's full form) → `Program` (with the header) or `Function`."""
    if not isinstance(text, str):
        raise InvalidType(f"pl.loads reads IR text (a str), got {type(text).__name__}",
                          module="PRO_PARSER")
    return read(text, file=file or _register(text))


def loads_program(text: str, *, file: str | None = None) -> Program:
    """The `Program` written in `text` (which must start with the program header)."""
    result = loads(text, file=file)
    if not isinstance(result, Program):
        raise InvalidType("pl.loads_program: the text holds a function, not a program",
                          hint="start the text with '# ir.program: <name>  (target: <t>)'",
                          module="PRO_PARSER")
    return result


def parse(obj: Any) -> Program | Function:
    """IR text, a Python function (→ Function) or class (→ Program) in the text form, or IR
    already read (returned as is)."""
    if isinstance(obj, (Function, Program)):
        return obj
    if isinstance(obj, str):
        return loads(obj)
    if inspect.isclass(obj):
        return _read_class(obj, DEFAULT_TARGET, None)
    if inspect.isfunction(obj):
        return _read_function(obj)
    raise InvalidType(f"pl.parse: expected IR text, a function or a class, got {obj!r}",
                      module="PRO_PARSER")


def parse_program(obj: Any) -> Program:
    """Program text, a class of IR functions, or a `Program` (returned as is)."""
    if isinstance(obj, Program):
        return obj
    if isinstance(obj, str):
        return loads_program(obj)
    if inspect.isclass(obj):
        return _read_class(obj, DEFAULT_TARGET, None)
    raise InvalidType(f"pl.parse_program: expected program text or a class, got {obj!r}",
                      module="PRO_PARSER")


def _read_function(f: Callable) -> Function:
    text, file, offset = _source(f, "pl.function")
    fn = read(text, file=file, line_offset=offset)
    assert isinstance(fn, Function)  # a def's source has no program header
    return fn


def _read_class(cls: type, target: str, name: str | None) -> Program:
    text, file, offset = _source(cls, "pl.program")
    reader = Reader(detect_prefix(text), file, offset)
    node = reader.parse(text).body[0]
    if not isinstance(node, ast.ClassDef):  # pragma: no cover - the source of a class is one
        raise ParserSyntaxError("pl.program: expected a class", Span(file, offset + 1))
    return _program(reader, name or node.name, target, _functions(reader, node.body),
                    node.lineno)


def read(text: str, *, file: str = "<ir>", line_offset: int = 0,
         prefix: str | None = None) -> Program | Function:
    """Read printer text into a `Program` (with the header line) or a `Function`.

    `file` / `line_offset` place spans and errors: line 1 of `text` is line `1 + line_offset`
    of `file`. Malformed text raises `ParserSyntaxError` at its line.
    """
    prefix = prefix or detect_prefix(text)
    lines = text.splitlines()
    first = next((k for k, ln in enumerate(lines) if ln.strip()), 0)
    header = HEADER.match(lines[first].strip()) if lines else None
    if lines and lines[first].lstrip().startswith(f"# {prefix}.program") and header is None:
        raise ParserSyntaxError("IR text: malformed program header",
                                Span(file, first + 1 + line_offset),
                                hint=f"expected '# {prefix}.program: <name>  (target: <t>)'")
    reader = Reader(prefix, file, line_offset)
    defs = _functions(reader, reader.parse(text).body)
    if header is not None:
        return _program(reader, header.group(2), header.group(3), defs, first + 1)
    if len(defs) != 1:
        raise ParserSyntaxError(
            f"IR text: a function text holds one def, found {len(defs)} (a program starts "
            f"with '# {prefix}.program: <name>  (target: <t>)')", Span(file, 1 + line_offset))
    return _with_implied(defs[0], {})


# ---------------------------------------------------------------- functions and programs


def _functions(reader: Reader, body: list[ast.stmt]) -> list[Function]:
    """The functions of a module or class body (a leading docstring is skipped)."""
    defs = []
    for k, node in enumerate(body):
        if k == 0 and is_docstring(node):
            continue
        if not isinstance(node, ast.FunctionDef):
            raise reader.error("expected only decorated `def`s", node)
        func_type, attrs = _decorator(reader, node)
        try:
            defs.append(reader.function(node, func_type, attrs))
        except RecursionError:
            raise reader.error("the function nests too deeply", node) from None
    return defs


def _decorator(r: Reader, node: ast.FunctionDef) -> tuple[FunctionType, tuple[tuple[str, Any],
                                                                               ...]]:
    """`@ir.function`, `@ir.function(type=..., attrs={...})` or `@ir.simt.function(...)`."""
    if not node.decorator_list:
        return FunctionType.OPAQUE, ()
    if len(node.decorator_list) > 1:
        raise r.error("an IR function has one decorator", node.decorator_list[1])
    dec = node.decorator_list[0]
    call = dec if isinstance(dec, ast.Call) else None
    if r.path(call.func if call else dec) not in (["function"], ["simt", "function"]) or \
            (call and call.args):
        raise r.error(f"expected @{r.p}.function, got @{ast.unparse(dec)}", dec)
    kw = r.kwargs(call) if call else {}
    if set(kw) - _DECORATOR_KW:
        raise r.error(f"unknown decorator keyword(s) {sorted(set(kw) - _DECORATOR_KW)}", dec)
    d = kw.get("attrs")
    if d is not None and not isinstance(d, ast.Dict):
        raise r.error("attrs must be a {name: value} dict", d)
    attrs = tuple((r.lit(k, str), r.value(v)) for k, v in zip(d.keys, d.values)) if d else ()
    return (r.lit(kw["type"], FunctionType) if "type" in kw else FunctionType.OPAQUE), attrs


def _program(r: Reader, name: str, target: str, defs: list[Function], line: int) -> Program:
    prog = Program(name, tuple(defs), target, Span(r.file, line + r.offset, 1))
    launches = launch_max_threads(prog)
    calls = _SimtCallTypes(prog)
    return replace(prog, functions=tuple(calls.visit(_with_implied(f, launches)) for f in defs))


class _SimtCallTypes(Mutator):
    """A `simt.call` has its callee's return type (NoneType: a void callee): the text does not
    print a call's type, and the callee may be defined after its caller."""

    def __init__(self, prog: Program) -> None:
        self.returns = {f.name: f.return_type or NoneType() for f in prog.functions
                        if f.func_type is FunctionType.SIMT_CALLEE}

    def visit_Call(self, c: Call) -> Call:
        c = self.generic(c)
        ret = self.returns.get(c.kwarg("callee")) if c.op == "simt.call" else None
        return c if ret is None or ret == c.type else replace(c, type=ret)


def _with_implied(f: Function, launches: dict[str, Any]) -> Function:
    """`f` with the attrs the printer leaves out because they are implied (`implied_attrs`)."""
    have = dict(f.attrs)
    extra = tuple((k, v) for k, v in implied_attrs(f, launches) if k not in have)
    return replace(f, attrs=extra + f.attrs) if extra else f


def _source(obj: Any, who: str) -> tuple[str, str, int]:
    """Dedented source of `obj`, its file and the line offset of its first line."""
    try:
        lines, first = inspect.getsourcelines(obj)
        file = inspect.getsourcefile(obj) or "<unknown>"
    except (OSError, TypeError) as e:
        raise NotSupported(f"{who}: cannot read the source of {obj!r}: {e}",
                           hint="write the IR as text and read it with pl.loads",
                           module="PRO_PARSER") from None
    return textwrap.dedent("".join(lines)), file, first - 1


def _register(text: str) -> str:
    """A pseudo file name for `text`, registered with linecache (for diagnostics)."""
    name = f"<ir-text-{hashlib.sha1(text.encode()).hexdigest()[:10]}>"
    if name not in linecache.cache:
        linecache.cache[name] = (len(text), None, text.splitlines(keepends=True), name)
    return name
