"""The kernel source view and the source-line links every other view uses.

Owns `line_stats` (instructions and cycles per kernel line from a Trace), `source_html` (the
kernel function highlighted with pygments, each line annotated with its share of the simulated
time, the selected line marked) and the link helpers: which IR lines (`ir_lines_for`) and
which generated C++ lines (`cpp_lines_for`) came from a source line. Links use the spans the
compiler keeps on every IR node and the code generator's line map; nothing is guessed from text.
"""
from __future__ import annotations

from typing import Any

from pygments.lexers import PythonLexer

from ..records import KernelRecord
from .html import code_block, esc, line_note


def line_stats(kernel: KernelRecord, trace: Any) -> dict[int, tuple[int, int]]:
    """line → (instructions, instruction cycles) of the kernel's file in `trace`."""
    if trace is None:
        return {}
    table = trace.source_lines()
    mine = table[table["file"].astype(str) == kernel.file]
    return {int(r.line): (int(r.instructions), int(r.cycles)) for r in mine.itertuples()}


def source_html(kernel: KernelRecord, trace: Any = None, prefix: str = "src",
                highlight: int | None = None, radios: str | None = None) -> str:
    """The kernel function, highlighted, with per-line cycles from `trace`."""
    lines = kernel.source_lines()
    if not lines:
        return "<p class='note'>source not available</p>"
    stats = line_stats(kernel, trace)
    top = max((c for _, c in stats.values()), default=0)
    notes = {}
    for line, (count, cycles) in stats.items():
        width = max(2, int(60 * cycles / top)) if top else 0
        notes[line] = (f"<span class='bar' style='width:{width}px'></span> {cycles:,} cyc "
                       f"&middot; {count} instr")
    text = "\n".join(t for _, t in lines)
    return code_block(text, PythonLexer(), prefix, [highlight] if highlight else (), notes,
                      start=lines[0][0], radios=radios, pick_lines=radios is None)


def source_choices(kernel: KernelRecord, trace: Any = None) -> list[tuple[str, int]]:
    """(label, line) of every non-blank kernel line, for a line picker; busiest lines say so."""
    stats = line_stats(kernel, trace)
    out = []
    for line, text in kernel.source_lines():
        if not text.strip():
            continue
        cycles = stats.get(line, (0, 0))[1]
        extra = f"   [{cycles:,} cyc]" if cycles else ""
        out.append((f"{line:>4}  {text.strip()[:70]}{extra}", line))
    return out


def ir_spans(record: Any, concise: bool = False) -> tuple[str, list[Any]]:
    """(IR text, span per line) of a pass record (`PassRecord.lines`, printed once);
    `concise` drops assignment types (the printer's concise form)."""
    return record.lines(concise)


def ir_lines_for(record: Any, file: str, line: int, concise: bool = False) -> list[int]:
    """IR lines (1-based) of `record` whose node came from `file:line`."""
    _, spans = ir_spans(record, concise)
    return [n for n, s in enumerate(spans, start=1)
            if s is not None and s.line == line and s.file == file]


def ir_source_notes(record: Any, file: str, concise: bool = False) -> dict[int, str]:
    """IR line → "L24" note naming the kernel line it came from (when it changes)."""
    _, spans = ir_spans(record, concise)
    notes, last = {}, None
    for n, span in enumerate(spans, start=1):
        if span is not None and span.file == file and span.line > 0 and span.line != last:
            notes[n] = line_note(span.line)
            last = span.line
    return notes


def cpp_line_map(artifacts: Any, name: str) -> list[tuple[int, str, int]]:
    """(C++ line, source file, source line) triples of one generated file."""
    mapping = getattr(artifacts, "line_map", None) or {}
    return list(mapping.get(name, ())) if isinstance(mapping, dict) else []


def cpp_lines_for(artifacts: Any, name: str, file: str, line: int) -> list[int]:
    return [c for c, f, ln in cpp_line_map(artifacts, name) if f == file and ln == line]


def line_label(kernel: KernelRecord, line: int) -> str:
    text = dict(kernel.source_lines()).get(line, "")
    return f"line {line}: {esc(text.strip())}"
