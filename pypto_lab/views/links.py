"""Source-line linking without scripts: pick a kernel line, its IR and C++ lines light up.

Owns `link_radios` (one hidden radio input per kernel line, placed first in the container),
`html.code_block(..., radios=prefix)` makes the source lines `<label>`s for those radios and
`link_css` (one CSS rule per line: `#box:has(#radio-24:checked) :is(#ir-7, #cpp-31)` gets the
highlight colour). Works wherever HTML is rendered with its styles (JupyterLab, VS Code,
nbconvert HTML, the standalone report); needs CSS `:has()` (Chromium 105+, Firefox 121+,
Safari 15.4+) and degrades to "nothing highlights" elsewhere.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping

from .html import HIGHLIGHT


def link_radios(prefix: str, lines: Iterable[int]) -> str:
    radios = "".join(f"<input type='radio' name='{prefix}' id='{prefix}-r{n}' "
                     f"style='display:none'>" for n in lines)
    return radios + f"<input type='radio' name='{prefix}' id='{prefix}-r0' style='display:none'>"


def link_css(box_id: str, prefix: str, mapping: Mapping[int, Iterable[str]],
             src_prefix: str) -> str:
    """CSS highlighting, for the checked line n, the source line and every id in mapping[n]."""
    rules = []
    for line, ids in mapping.items():
        targets = [f"#{src_prefix}-{line}", *(f"#{i}" for i in ids)]
        rules.append(f"#{box_id}:has(#{prefix}-r{line}:checked) :is({', '.join(targets)})"
                     f"{{background:{HIGHLIGHT}}}")
    return "<style>" + "\n".join(rules) + "</style>" if rules else ""
