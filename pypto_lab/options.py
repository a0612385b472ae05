"""What one `%%pypto` cell (or `pypto_lab.run_cell` call) is asked to do: `CellOptions`.

Owns the frozen options record shared by the magic, the plain Python API and the CLI, the panel
names of `--show` (and their expansion of `all`), and the checks that turn option strings into
values (`parse_show`, `parse_diff`, `parse_tolerance`). Imports nothing from IPython or the
views, so scripts and tests build options without a shell.
"""
from __future__ import annotations

from dataclasses import dataclass, field

#: panels in display order; `--show all` means every one of them that has data
PANELS: tuple[str, ...] = ("source", "passes", "ir", "cce", "run", "blocks", "timeline",
                           "sanitizer", "roofline")
#: what a cell shows when `--show` is not given
DEFAULT_SHOW: tuple[str, ...] = ("source", "passes", "cce", "run", "blocks", "timeline",
                                 "roofline")


class OptionError(ValueError):
    """A `%%pypto` option value that cannot be used (the magic reports it as a usage error)."""


@dataclass(frozen=True)
class CellOptions:
    """Everything a cell run can be asked for; every field has the magic's default.

    `launch` is a call expression such as ``"add_kernel(x, y, z)"`` launched with `block_dim`
    blocks; `ref` an expression giving the expected output, compared with `out` (a name; by
    default the launch's output tensor) within `rtol`/`atol`; `diff` one or two pass names;
    `export` a path ending in `.html` (report) or `.json` (Perfetto trace); `sanitize` runs
    the launches under the sanitizer (and shows its panel). A `ref` that does not match fails
    the cell (`ReferenceMismatch`) unless `keep_going`.
    """

    show: tuple[str, ...] = DEFAULT_SHOW
    arch: str | None = None
    soc: str | None = None
    backend: str | None = None
    block_dim: int | None = None
    launch: str | None = None
    diff: tuple[str, ...] = ()
    ref: str | None = None
    out: str | None = None
    rtol: float | None = None
    atol: float | None = None
    keep_going: bool = False
    name: str | None = None
    force: bool = False
    sanitize: bool = False
    export: str | None = None
    traceback: bool = False
    interactive: bool = True
    cores: tuple[int, ...] | None = None
    extra: dict = field(default_factory=dict, compare=False)

    def shows(self, panel: str) -> bool:
        return panel in self.show


def parse_show(text: str | None) -> tuple[str, ...]:
    """`"passes,ir"` → ("passes", "ir"); `"all"` → every panel; `"none"` → ()."""
    if text is None:
        return DEFAULT_SHOW
    items = [t.strip().lower() for t in text.split(",") if t.strip()]
    if items == ["none"]:
        return ()
    if "all" in items:
        return PANELS
    unknown = [t for t in items if t not in PANELS]
    if unknown:
        raise OptionError(f"--show: unknown panel(s) {', '.join(unknown)}; choose from "
                          f"{', '.join(PANELS)}, all, none")
    return tuple(p for p in PANELS if p in items)


def parse_diff(text: str | None) -> tuple[str, ...]:
    """`--diff A` (A against the pass before it) or `--diff A,B` (A → B)."""
    if not text:
        return ()
    names = tuple(t.strip() for t in text.split(",") if t.strip())
    if not 1 <= len(names) <= 2:
        raise OptionError(f"--diff takes one or two pass names, got {text!r}")
    return names


def parse_tolerance(text: str | None) -> tuple[float | None, float | None]:
    """`--tol RTOL[,ATOL]` → (rtol, atol); ATOL defaults to RTOL."""
    if not text:
        return None, None
    try:
        values = [float(t) for t in text.split(",")]
    except ValueError:
        raise OptionError(f"--tol takes RTOL[,ATOL] numbers, got {text!r}") from None
    if len(values) not in (1, 2) or min(values) < 0:
        raise OptionError(f"--tol takes one or two non-negative numbers, got {text!r}")
    return values[0], values[-1]


def parse_cores(text: str | None) -> tuple[int, ...] | None:
    """`--cores 0-3,8` → (0, 1, 2, 3, 8); None keeps the timeline's default selection."""
    if not text:
        return None
    cores: list[int] = []
    try:
        for part in text.split(","):
            lo, _, hi = part.strip().partition("-")
            cores.extend(range(int(lo), int(hi or lo) + 1))
    except ValueError:
        raise OptionError(f"--cores takes numbers and ranges like 0-3,8, got {text!r}") from None
    return tuple(dict.fromkeys(cores))
