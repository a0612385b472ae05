"""Error classes with the spec's codes (spec §5.1), rendered from a source span.

Every class also inherits the matching builtin (newer PyPTO Pro form), so `except ValueError`
keeps working. The snapshot parser names (`ParserSyntaxError`, ...) are subclasses of the coded
classes. `str(err)` is the full diagnostic: the coded first line, `--> file:line:col`, the source
with two lines of context and carets under the span, then `hint:` and `note:` lines.
"""
from __future__ import annotations

import enum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .ir.span import Span


class ExternalError(enum.IntEnum):
    INVALID_TYPE = 0x1
    INVALID_VAL = 0x2
    RUNTIME_ERROR = 0x3
    NAME_ERROR = 0x4
    NOT_IMPLEMENTED_ERROR = 0x5
    KEY_ERROR = 0x6
    INVALID_OPERATION = 0x7
    OUT_OF_RANGE = 0x8
    BAD_FD = 0x9
    DYNAMIC_SHAPE_COMPUTE_UNSUPPORTED = 0xA
    INVALID_SHAPE = 0xB
    INVALID_TILE = 0xC
    INVALID_FORMAT = 0xD
    INVALID_ARGUMENT = 0xE
    COMMON = 0xFFFF
    COMMON_INNER = 0x1FFFF
    PASS_INNER = 0x4FFFF
    CODEGEN_INNER = 0x6FFFF


class PyptoError(Exception):
    """Base of every PyPTO Pro error. `code` is `0xF00000 | ExternalError`."""

    kind: ExternalError = ExternalError.COMMON
    module: str = "PRO_COMMON"

    def __init__(self, message: str, span: Span | None = None, *, hint: str | None = None,
                 note: str | None = None, module: str | None = None,
                 pass_name: str | None = None) -> None:
        self.message = message
        self.span = span
        self.hint = hint
        self.note = note
        self.pass_name = pass_name
        if module is not None:
            self.module = module
        super().__init__(message)

    @property
    def code(self) -> int:
        return 0xF00000 | int(self.kind)

    @property
    def code_str(self) -> str:
        return f"F{self.code & 0xFFFFF:05X}"

    def with_span(self, span: Span | None) -> PyptoError:
        """Attach a span if the error has none yet (the innermost span wins)."""
        if self.span is None and span is not None:
            self.span = span
        return self

    def __str__(self) -> str:
        return render(self)

    def __reduce__(self):  # picklable across worker processes
        return (_rebuild, (type(self), self.message, self.span, self.hint, self.note,
                           self.module, self.pass_name))


def _rebuild(cls, message, span, hint, note, module, pass_name):
    return cls(message, span, hint=hint, note=note, module=module, pass_name=pass_name)


def render(err: PyptoError, context: int = 2) -> str:
    where = f"[{err.span.file}:{err.span.line}]" if err.span else ""
    passed = f" (in pass {err.pass_name})" if err.pass_name else ""
    lines = [f"{where}[{err.module}]:ErrCode: {err.code_str}! "
             f"Enum: ExternalError::{err.kind.name}. {err.message}{passed}"]
    if err.span is not None and err.span.line > 0:
        lines.append(f"  --> {err.span.file}:{err.span.line}:{err.span.col}")
        lines.extend(_source_excerpt(err.span, context))
    if err.hint:
        lines.append(f"  hint: {err.hint}")
    if err.note:
        lines.append(f"  note: {err.note}")
    return "\n".join(lines)


def _source_excerpt(span: Span, context: int) -> list[str]:
    first = max(1, span.line - context)
    last = span.line + context
    width = len(str(last))
    out = []
    for n in range(first, last + 1):
        text = span.source_line(n)
        if not text and n > span.line:
            break
        out.append(f"  {n:>{width}} | {text}")
        if n == span.line:
            start = max(span.col, 1)
            end = span.end_col if (span.end_line in (None, span.line) and span.end_col) else None
            if end is None or end <= start:
                end = max(len(text) + 1, start + 1)
            out.append(f"  {' ' * width} | {' ' * (start - 1)}{'^' * (end - start)}")
    return out


def _coded(name: str, kind: ExternalError, builtin: type[BaseException], doc: str):
    return type(name, (PyptoError, builtin), {"kind": kind, "__doc__": doc})


# ---------------------------------------------------------------- one class per code (newer form)

InvalidType = _coded("InvalidType", ExternalError.INVALID_TYPE, TypeError, "Wrong type.")
InvalidArgument = _coded("InvalidArgument", ExternalError.INVALID_ARGUMENT, ValueError,
                         "An argument value is not accepted.")
InvalidVal = _coded("InvalidVal", ExternalError.INVALID_VAL, ValueError, "Invalid value.")
NotSupported = _coded("NotSupported", ExternalError.NOT_IMPLEMENTED_ERROR, NotImplementedError,
                      "A feature the DSL does not support.")
InvalidOperation = _coded("InvalidOperation", ExternalError.INVALID_OPERATION, ValueError,
                          "An operation that is not valid here.")
InvalidShape = _coded("InvalidShape", ExternalError.INVALID_SHAPE, ValueError, "Bad shape.")
OutOfRange = _coded("OutOfRange", ExternalError.OUT_OF_RANGE, ValueError,
                    "A value outside its allowed range.")
InvalidFormat = _coded("InvalidFormat", ExternalError.INVALID_FORMAT, ValueError,
                       "A layout / format not allowed here.")
InvalidTile = _coded("InvalidTile", ExternalError.INVALID_TILE, ValueError,
                     "A tile placement or type that the hardware rejects.")
DynamicShapeUnsupported = _coded("DynamicShapeUnsupported",
                                 ExternalError.DYNAMIC_SHAPE_COMPUTE_UNSUPPORTED,
                                 NotImplementedError, "A runtime value where a constant is needed.")
RuntimeFailure = _coded("RuntimeFailure", ExternalError.RUNTIME_ERROR, RuntimeError,
                        "A failure while compiling or running a kernel.")
KeyNotFound = _coded("KeyNotFound", ExternalError.KEY_ERROR, KeyError, "Missing key.")
NameNotFound = _coded("NameNotFound", ExternalError.NAME_ERROR, NameError, "Unknown name.")
BadFd = _coded("BadFd", ExternalError.BAD_FD, OSError, "Bad file.")
CommonExternal = _coded("CommonExternal", ExternalError.COMMON, ValueError, "Other user error.")
CommonInner = _coded("CommonInner", ExternalError.COMMON_INNER, RuntimeError,
                     "Internal compiler error.")
PassInner = _coded("PassInner", ExternalError.PASS_INNER, RuntimeError,
                   "Internal error in an IR pass.")
CodegenInner = _coded("CodegenInner", ExternalError.CODEGEN_INNER, RuntimeError,
                      "Internal error in code generation.")


# ---------------------------------------------------------------- snapshot parser names


class ParserError(PyptoError):
    """Base of the parser's diagnostics."""

    module = "PRO_PARSER"


class ParserSyntaxError(ParserError, InvalidVal):
    """DSL syntax the parser rejects."""


class ParserTypeError(ParserError, InvalidType):
    """Wrong types in kernel code."""


class FinalRejectionError(ParserTypeError):
    """A non-retryable type rejection (e.g. an int where an enum kwarg is expected)."""


class ParserIndexError(ParserSyntaxError, OutOfRange):
    """A constant index outside a compile-time container (a struct array field, a
    struct_array, a tuple): the real parser's ParserSyntaxError, and an OutOfRange."""


class UndefinedVariableError(ParserError, NameNotFound):
    """Unknown name or function."""


class UnsupportedFeatureError(ParserError, NotSupported):
    """Python the DSL does not support."""


class InvalidOperationError(ParserError, InvalidOperation):
    """An op used where it is not valid."""


class SSAViolationError(InvalidOperationError):
    pass


class ScopeIsolationError(InvalidOperationError):
    pass


# ---------------------------------------------------------------- runtime and simulator


class DeadlockError(RuntimeFailure):
    """A launch that can never finish: every stuck core, pipe and the id it waits for."""

    module = "PRO_RUNTIME"

    def __init__(self, message: str, stuck: list | None = None, **kw) -> None:
        super().__init__(message, **kw)
        self.stuck = stuck or []


class SimulationError(RuntimeFailure):
    """A kernel did something the hardware cannot do (bad address, double set_flag, ...)."""

    module = "PRO_RUNTIME"


class KernelTrap(RuntimeFailure):
    """`pl.trap()` executed, or a native kernel crashed."""

    module = "PRO_RUNTIME"


class CompileError(RuntimeFailure):
    """The C++ toolchain failed to build the generated code."""

    module = "PRO_COMPILE"


class DSLDeclarationError(InvalidOperation, RuntimeError):
    """A DSL declaration was called outside a kernel (snapshot: RuntimeError; newer:
    InvalidOperation): both catch it."""

    def __init__(self, name: str) -> None:
        super().__init__(
            f"'{name}': This function is a DSL API declaration and must be used inside a "
            "PyPTO kernel",
            hint="call it inside a function decorated with @pl.jit")
