"""A kernel written as text, compiled from a file of its own (so its diagnostics name real
lines), and the line of a kernel's source a diagnostic must name: what the refused-construct
tests of the language modules share."""
from __future__ import annotations

import importlib.util
import inspect
import textwrap
from pathlib import Path
from typing import Any

import pytest

from pypto_pro.runtime.kernel_def import Specialization


def line_of(kernel: Any, text: str) -> int:
    """The file line of the first line of `kernel`'s source (a `@pl.jit` kernel) holding
    `text`: where a diagnostic about that line must point."""
    lines, start = inspect.getsourcelines(kernel.kernel_def.fn)
    return start + next(i for i, line in enumerate(lines) if text in line)


def compile_source(tmp_path: Path, name: str, params: str, body: str, *, prelude: str = "",
                   jit: str = "pl.jit()") -> Any:
    """`@<jit> def k(<params>): <body>` in `<tmp_path>/<name>.py` after `prelude`, compiled."""
    path = tmp_path / f"{name}.py"
    path.write_text(f"import pypto_pro.language as pl\n{prelude}\n\n@{jit}\ndef k({params}):\n"
                    + textwrap.indent(textwrap.dedent(body), "    "))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.k.compile(Specialization(arch="a5"))


def assert_refused(error: type, fragment: str, tmp_path: Path, name: str, params: str,
                   body: str, **options: Any) -> None:
    """Compiling the kernel raises `error` with `fragment` in its message, at a line of it."""
    with pytest.raises(error) as info:
        compile_source(tmp_path, name, params, body, **options)
    assert fragment in info.value.message
    assert info.value.span is not None and info.value.span.file.endswith(f"{name}.py")
