"""Where a source line is, in the words a notebook user knows: "Cell In[5], line 15".

Every view, hover text and export names a kernel line through `where(file, line)` and passes
text that may hold file names through `relabel`. A file is a cell when the running IPython
compiled it (its caching compiler knows the cell's number, also for cells that were not
`%%pypto` cells, e.g. a kernel defined in an earlier plain cell); ipykernel names such a cell
after a temporary file, terminal IPython `<ipython-input-5-...>`. Anything else keeps its name.
"""
from __future__ import annotations

import re

#: "<file>:<line>[:<col>]" where file is a path ending in .py or a <...> name
_FILE_LINE = re.compile(r"(<[^<>\s]+>|[^\s:'\"()\[\]<>]+\.py):(\d+)(?::(\d+))?")


def _shell():
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    return get_ipython()


def cell_label(file: str) -> str | None:
    """"Cell In[n]" when the running IPython compiled `file` as cell n, else None."""
    compiler = getattr(_shell(), "compile", None)
    name = getattr(compiler, "format_code_name", lambda _: None)(file) if compiler else None
    return f"{name[0]} {name[1]}" if name else None


def label(file: str) -> str:
    """The cell label of `file`, or the file's own name."""
    return cell_label(file) or file


def where(file: str, line: int) -> str:
    """"Cell In[5], line 15", or "kernels.py:15" for a file."""
    cell = cell_label(file)
    if cell is not None:
        return f"{cell}, line {line}"
    return f"{file.rsplit('/', 1)[-1]}:{line}"


def relabel(text: str) -> str:
    """`text` with every "<cell file>:<line>[:<col>]" written as "Cell In[n], line m"."""
    if _shell() is None:
        return text
    labels: dict[str, str | None] = {}

    def sub(m: re.Match) -> str:
        if m.group(1) not in labels:
            labels[m.group(1)] = cell_label(m.group(1))
        cell = labels[m.group(1)]
        if cell is None:
            return m.group(0)
        col = f", col {m.group(3)}" if m.group(3) else ""
        return f"{cell}, line {m.group(2)}{col}"

    return _FILE_LINE.sub(sub, text)
