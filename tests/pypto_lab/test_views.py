"""The views as plain functions: passes and diffs, generated C++, source links, run, blocks,
roofline peaks."""
from __future__ import annotations

import difflib

import pytest

from pypto_lab.views import blocks, code, passes, roofline, run, source
from pypto_lab.views.html import code_block, excerpt


def test_pass_rows_and_diffs_follow_the_pass_records(add_result):
    records = add_result.passes()
    rows = passes.pass_rows(records)
    assert list(rows["pass"]) == records.names()
    assert rows["state"].iloc[0] == "parsed"
    changed = rows[rows["state"] == "changed"]
    assert not changed.empty and (changed["+"] + changed["-"] > 0).all()
    unchanged = rows[rows["state"] == "unchanged"]
    assert (unchanged["+"] + unchanged["-"] == 0).all()
    expected = "".join(difflib.unified_diff(
        records["parse"].ir_text.splitlines(True), records["auto_mutex"].ir_text.splitlines(True),
        fromfile="parse", tofile="auto_mutex", n=3))
    assert passes.diff_text(records, "parse", "auto_mutex") == expected
    with pytest.raises(KeyError, match="no pass named"):
        passes.diff_text(records, "nope")


def test_ir_lines_map_back_to_the_kernel_line(add_result, add_line):
    kernel = add_result.kernels[0]
    final = kernel.passes()[-1]
    lines = source.ir_lines_for(final, kernel.file, add_line)
    text, _ = source.ir_spans(final)
    assert lines and all("block.add" in text.splitlines()[n - 1] or "mutex" in
                         text.splitlines()[n - 1] for n in lines)
    html = passes.ir_html(final, kernel.file, "t", add_line)
    assert html.count("class='ln sel'") == len(lines)
    assert f"L{add_line}" in html


def test_cce_view_links_cpp_lines_or_says_why_not(add_result, add_line):
    kernel = add_result.kernels[0]
    if not add_result.codegen_available:
        assert "not available" in code.cce_html(kernel, False, "c")
        return
    files = code.artifact_files(kernel.artifacts)
    assert list(files)[0] == "kernel.cpp" and list(files)[-1] == "call_kernel.cpp"
    mapped = source.cpp_lines_for(kernel.artifacts, "kernel.cpp", kernel.file, add_line)
    assert mapped and any("TADD" in files["kernel.cpp"].splitlines()[n - 1] or "add" in
                          files["kernel.cpp"].splitlines()[n - 1].lower() for n in mapped)
    html = code.code_html(kernel, "kernel.cpp", "c", add_line)
    assert html.count("class='ln sel'") == len(mapped)
    assert "  // " + kernel.file.rsplit("/", 1)[-1] not in html  # trailer moved into the note
    assert f"kernel line {add_line} &rarr; kernel.cpp" in code.line_excerpt(
        kernel, "kernel.cpp", "c", add_line)


def test_unavailable_or_failed_codegen_is_explained(add_result):
    kernel = add_result.kernels[0]
    assert "cannot be imported" in code.cce_html(kernel, False, "c")
    failed = type(kernel)(kernel.name, kernel.compiled,
                          codegen_error="CodegenInner: boom <here>")
    html = code.cce_html(failed, True, "c")
    assert "failed" in html and "boom &lt;here&gt;" in html


def test_source_view_shows_cycles_per_line(add_result, add_line):
    kernel = add_result.kernels[0]
    stats = source.line_stats(kernel, add_result.trace)
    assert stats[add_line][0] > 0 and stats[add_line][1] > 0
    html = source.source_html(kernel, add_result.trace, "s", add_line)
    assert "cyc &middot;" in html and f"id='s-{add_line}'" in html
    labels = dict((ln, lab) for lab, ln in source.source_choices(kernel, add_result.trace))
    assert "pl.add(c, a, b)" in labels[add_line] and "cyc]" in labels[add_line]


def test_code_blocks_and_excerpts_number_lines():
    from pygments.lexers import PythonLexer

    text = "\n".join(f"x{i} = {i}" for i in range(1, 21))
    html = code_block(text, PythonLexer(), "p", [12], start=10)
    assert "id='p-10'" in html and "id='p-29'" in html and html.count("ln sel") == 1
    part = excerpt(text, PythonLexer(), "e", [5, 6, 15], context=1)
    assert part.count("<div class='code") == 2  # lines 4-7 and 14-16
    assert "id='e-x0-4'" in part and "id='e-x1-16'" in part and part.count("ln sel") == 3


def test_run_view_lists_launches_check_and_printf(add_result):
    html = run.run_html(add_result.kernels, add_result.launches,
                        add_result.codegen_available, add_result.check)
    assert "float16[256, 256]" in html and "PASS" in html and "block 0 done" in html
    rows = run.launch_rows(add_result.launches)
    assert rows.loc[0, "soc"] == "Ascend950PR_9589" and rows.loc[0, "check"] == "PASS"


def test_blocks_view_reports_waves_and_imbalance(add_result):
    spans = blocks.block_spans(add_result.trace)
    assert list(spans["unit"].unique()) == ["AIV"] and spans["wave"].max() == 0
    table = blocks.imbalance(spans)
    assert table.loc[0, "blocks"] == 2 and table.loc[0, "imbalance"] >= 0
    fig = blocks.blocks_figure(add_result.trace)
    assert [t.name for t in fig.data] == ["AIV"] and len(fig.data[0].x) == 2


def test_mix_blocks_have_aic_aiv0_aiv1(flash_result):
    spans = blocks.block_spans(flash_result.trace)
    assert set(spans["unit"]) == {"AIC", "AIV0", "AIV1"}


def test_roofline_peaks_come_from_the_soc_table():
    peaks = roofline.soc_peaks("950PR")
    assert peaks["cube_flops_per_s"] / 1e12 == pytest.approx(432.5, abs=0.1)
    assert peaks["hbm_bytes_per_s"] == pytest.approx(1.6e12)
    assert peaks["vector_flops_per_s"] == pytest.approx(64 * 128 * 1.65e9)


def test_roofline_places_the_launch_under_the_memory_roof(add_result):
    rows = roofline.roofline_rows(add_result.launches)
    assert rows.loc[0, "bound"] == "memory" and 0 < rows.loc[0, "of roof"] <= 1
    fig = roofline.roofline_figure(add_result.launches)
    assert fig.layout.xaxis.type == "log"
    assert any(t.name.startswith("#0 add_kernel") for t in fig.data)


def test_a_scalar_only_launch_is_drawn_on_lane_s_without_a_roofline():
    """Hello world: printf and setval are its scalar unit's work, so the cell gets Blocks and a
    Timeline of one S lane (hover: op and source line) but no roofline point."""
    import pypto_lab
    from pypto_lab.views.widget import build_panel
    from pypto_lab.workbench import Workbench

    result = pypto_lab.run_cell(
        "import torch\n"
        "from pypto_pro.examples.hello_world import hello_world_kernel\n"
        "out = torch.zeros(1, dtype=torch.int32)\n"
        "hello_world_kernel(out)\n")
    assert result.tabs == ["Source", "Passes", "CCE", "Run", "Blocks", "Timeline"]
    launch = result.launches[0]
    assert not launch.pipe_work and "0.267 us simulated (440 cycles)" in launch.describe()
    html = result.to_html()
    assert "<summary>Blocks" in html and "<summary>Roofline" not in html
    assert roofline.roofline_rows(result.launches).empty
    fig = result.timeline_figure()
    assert list(fig.layout.yaxis.ticktext) == ["b0 AIV · S"]
    hover = [t for layer in fig.data if layer.name == "details" for t in layer.text[0] if t]
    assert [t.split("<br>")[0] for t in hover] == ["<b>printf</b> debug.printf",
                                                    "<b>setval</b> block.setval"]
    assert all("hello_world.py:" in t for t in hover)
    spans = blocks.block_spans(result.trace)
    assert spans["duration_cycles"].tolist() == [440]
    wb = Workbench(result)
    for panel in result.panels:  # every tab builds (the widget's Timeline: core picker + plot)
        assert build_panel(wb, panel) is not None
