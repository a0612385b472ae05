"""`pl.parse`, `pl.loads`, `pl.parse_program`, `pl.loads_program`, `pl.function`, `pl.program`.

IR written in the printer's Python-like text form (spec §3.3) read back into IR by
`pypto_pro.ir.reader`: `loads(text)` / `parse(text)` give the `Program` (text with the
`# ir.program:` header) or the `Function` the text holds; `*_program` insist on a program;
`@pl.function` reads the decorated function's own source (written in that form, e.g. with
`pl.` as the prefix). `@pl.program` (a class of IR functions) is not supported.
"""
from __future__ import annotations

import inspect
import textwrap
from typing import Any, Callable

from ..errors import InvalidType, NotSupported


def loads(text: str, *, file: str = "<ir>") -> Any:
    """The `Program` or `Function` written in `text`."""
    if not isinstance(text, str):
        raise InvalidType(f"pl.loads reads IR text (a str), got {type(text).__name__}",
                          module="PRO_PARSER")
    from ..ir.reader import read

    return read(text, file=file)


parse = loads


def loads_program(text: str, *, file: str = "<ir>") -> Any:
    """The `Program` written in `text` (which must start with the program header)."""
    from ..ir.nodes import Program

    result = loads(text, file=file)
    if not isinstance(result, Program):
        raise InvalidType("pl.loads_program: the text holds a function, not a program",
                          hint="start the text with '# ir.program: <name>  (target: <t>)'",
                          module="PRO_PARSER")
    return result


parse_program = loads_program


def function(fn: Callable | None = None, **kwargs: Any) -> Any:
    """`@pl.function` / `@pl.function(type=...)`: the IR `Function` the decorated source spells."""
    def read_source(f: Callable) -> Any:
        try:
            lines, first = inspect.getsourcelines(f)
            file = inspect.getsourcefile(f) or "<ir>"
        except (OSError, TypeError) as e:
            raise NotSupported(f"pl.function: cannot read the source of {f!r}: {e}",
                               module="PRO_PARSER") from None
        from ..ir.reader import read

        return read(textwrap.dedent("".join(lines)), file=file, line_offset=first - 1)

    return read_source(fn) if fn is not None else read_source


def program(*args: Any, **kwargs: Any) -> Any:
    """`@pl.program` of a class of IR functions (not supported: use `pl.loads_program`)."""
    raise NotSupported("pl.program: classes of IR functions are not supported",
                       hint="write the program as text and read it with pl.loads_program",
                       module="PRO_PARSER")
