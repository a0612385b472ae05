"""`pypto_lab.views.sanitizer.sanitizer_html`: the workbench's Sanitizer tab renders findings as
script-free HTML with the kernel's source lines, both racing instructions and the hints."""
from __future__ import annotations

import inspect

from pypto_lab.views.sanitizer import sanitizer_html
from pypto_pro.sanitizer import Finding, SanitizerReport, Site

HERE = inspect.getsourcefile(lambda: None)


def _report() -> SanitizerReport:
    _, first = inspect.getsourcelines(_report)
    report = SanitizerReport("k")
    race = Finding("DATA_RACE_RAW", "add reads <a> before the load lands",
                   Site(HERE, first + 1, "block 0 AIV", 0, 0, "V", 515, "block.add"),
                   Site(HERE, first, "block 0 AIV", 0, 0, "MTE2", 1, "block.load"))
    report.add(race)
    report.add(race)
    report.add(Finding("TILE_OVERLAP", "tiles share bytes", Site(HERE, first + 2, "block 1 AIV")))
    return report


def test_findings_render_as_a_script_free_table_with_source_lines():
    page = sanitizer_html(_report())
    assert "<script" not in page.lower()
    assert "DATA_RACE_RAW" in page and "TILE_OVERLAP" in page
    assert "1 error(s)" in page and "1 warning(s)" in page and "×2" in page
    assert "_, first = inspect.getsourcelines(_report)" in page  # the code of the line
    assert "pipe MTE2, cycle 1" in page and "pipe V, cycle 515" in page  # both instructions
    assert "&lt;a&gt;" in page and "<a>" not in page  # messages are escaped
    assert "Hint: " in page
    assert "marked in red on the Timeline" in page


def test_no_findings_is_an_explicit_all_clear():
    for empty in (None, [], SanitizerReport("k")):
        page = sanitizer_html(empty)
        assert "0 issues" in page and "<table" not in page
