"""The result's rich bundle: text, script-free HTML, plotly JSON (lanes, traces, arrows, hover),
the machine-readable JSON, and the Workbench widget."""
from __future__ import annotations

import json
import re

from pypto_lab.views import timeline as tl

PLOTLY = "application/vnd.plotly.v1+json"
WIDGET = "application/vnd.jupyter.widget-view+json"


def _traces(fig_json: dict, kind: str | None = None) -> list[dict]:
    return [t for t in fig_json["data"] if kind is None or t.get("name") == kind]


def test_bundle_has_text_html_plotly_and_json(add_result):
    bundle = add_result._repr_mimebundle_()
    assert set(bundle) == {"text/plain", "text/html", PLOTLY, "application/vnd.pypto.cell+json"}
    assert bundle["text/plain"].startswith("%%pypto Cell In[")
    html = bundle["text/html"]
    assert "<script" not in html.lower() and "src=" not in html
    for section in ("Source", "Passes", "Generated C++", "Run", "Blocks", "Roofline"):
        assert f"<summary>{section}" in html
    meta = bundle["application/vnd.pypto.cell+json"]
    assert meta["kernels"][0]["name"] == "add_kernel"
    assert meta["launches"][0]["block_dim"] == 2 and meta["check"]["ok"] is True
    json.dumps(bundle[PLOTLY])  # plain JSON


def test_timeline_has_one_lane_per_pipe_per_core(add_result):
    fig = add_result._repr_mimebundle_()[PLOTLY]
    ticks = fig["layout"]["yaxis"]["ticktext"]
    # block 0's printf is its scalar unit's work: lane S, before the pipes it feeds
    assert ticks == ["b0 AIV · S"] + [f"b{b} AIV · {p}" for b in (0, 1)
                                      for p in ("MTE2", "V", "MTE3")]
    names = {t["name"] for t in fig["data"] if t.get("showlegend", True)}
    assert {"GM load", "vector", "GM store", "scalar", "stall: mutex", "mutex hold"} <= names
    hover = _traces(fig, "details")  # one hover layer per lane and band
    assert {t["type"] for t in hover} == {"heatmap"} and len(hover) >= len(ticks)
    texts = [t for layer in hover for t in layer["text"][0] if t]
    trace = add_result.trace
    drawn = trace.events[trace.events["kind"] != "stall"]
    assert len(texts) >= len(drawn)  # raw level of detail: every event hovers
    assert any("TLOAD" in t and "block.load" in t and "B<br>" in t for t in texts)
    assert any("<b>printf</b> debug.printf<br>Cell In[" in t for t in texts)  # with its line


def test_selected_line_gets_a_halo(add_result, add_line):
    fig = add_result.timeline_figure(highlight_line=add_line)
    halo = [t for t in fig.data if t.name == "selected line"]
    assert len(halo) == 1
    events = add_result.trace.for_line(add_result.kernels[0].file, add_line)
    assert len(halo[0].x) == 3 * len(events)


def test_flags_and_cross_core_signals_are_arrows(flash_result):
    fig = flash_result.timeline_figure()
    arrows = {t.name.split(" · ")[0]: t for t in fig.data
              if t.type == "scatter" and t.mode == "lines+markers"}
    assert set(arrows) == {"set → wait flag", "cross-core signal"}
    for t in arrows.values():  # many arrows of a kind start hidden, one legend click away
        many = len(t.x) // 3 > tl.SHOWN_ARROWS
        assert (t.visible == "legendonly") == many and t.name.endswith("click to show") == many
    no_arrows = flash_result.timeline_figure(arrows=False)
    assert not [t for t in no_arrows.data if t.type == "scatter" and t.mode == "lines+markers"]
    flows = flash_result.trace.events
    pairs = flows[(flows["flow_id"] >= 0) & (flows["flow_role"] == "set")]
    assert len(arrows["set → wait flag"].x) == 3 * len(pairs)
    symbols = list(arrows["set → wait flag"].marker.symbol)
    assert symbols[:3] == ["circle", "arrow", "circle"]
    labels = [t for t in fig.data if t.type == "scatter" and t.mode == "text"]
    assert labels and set(labels[0].text) <= {"flag", "mutex", "cross_core", "queue"}
    ticks = list(fig.layout.yaxis.ticktext)
    assert "b0 AIC · MTE1" in ticks and "b0 AIV1 · V" in ticks


def test_cores_option_limits_the_lanes(flash_result):
    fig = flash_result.timeline_figure(cores=(0,))
    assert all(t.startswith("b0 AIC") for t in fig.layout.yaxis.ticktext)
    assert "showing 1 of 6 cores" in fig.layout.title.text


def test_static_html_links_source_lines_to_ir_and_cpp(add_result, add_line):
    html = add_result.to_html()
    radio = f"-lnk-r{add_line}"
    assert radio in html and "for='" in html
    rule = next(r for r in html.split("\n") if f"{radio}:checked" in r)
    assert "-p-vector-ir-" in rule
    if add_result.codegen_available:
        assert "-c-0-" in rule


def test_terminal_display_is_text_only(add_result, shell):
    data, _ = shell.display_formatter.format(add_result, include={"text/plain"})
    assert list(data) == ["text/plain"] and "add_kernel" in data["text/plain"]


def test_workbench_widget_has_the_tabs_and_links_lines(add_result, add_line):
    wb = add_result.workbench()
    assert wb.tabs.titles == ("Source", "Passes", "CCE", "Run", "Blocks", "Timeline",
                              "Roofline")
    assert wb.panels[wb.tabs.selected_index] == "timeline"
    for i in range(len(wb.panels)):
        wb.tabs.selected_index = i
    assert set(wb._built) == set(wb.panels)
    wb.select_line(add_line)
    source = wb._built["source"].children[0].value
    assert "class='ln sel'" in source
    timeline = wb._built["timeline"].children[1]
    data = timeline.outputs[0]["data"][PLOTLY]["data"]
    assert any(t.get("name") == "selected line" for t in data)
    passes = wb._built["passes"].children[1].children[1].value
    assert f"kernel line {add_line} &rarr; IR line(s)" in passes
    bundle = wb._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    wb.select_line(None)
    assert wb.line is None


def test_pass_browser_diffs_and_concise_ir(add_result):
    from pypto_lab.views.passes import PassBrowser

    browser = PassBrowser(add_result.kernels[0], "pb")
    names = add_result.passes().names()
    browser.passes.value = names.index("auto_mutex")
    browser.mode.value = "diff vs previous"
    assert "diff <b>pipe_assignment</b> → <b>auto_mutex</b>" in browser.view.value
    assert "mutex_lock" in browser.view.value
    browser.mode.value = "diff vs"
    browser.against.value = 0
    assert "diff <b>parse</b> → <b>auto_mutex</b>" in browser.view.value
    browser.split.value = True  # side by side: changed lines coloured in two columns
    assert "<table class=\"diff\"" in browser.view.value and "diff_add" in browser.view.value
    browser.split.value = False
    browser.mode.value = "IR"
    assert browser.concise.value  # concise by default
    concise = browser.view.value
    browser.concise.value = False
    assert len(browser.view.value) > len(concise)  # the assignment types are back
    browser.hide.value = True
    assert all("○" not in label for label, _ in browser.passes.options)
    assert "○ no change" in browser.widget.children[1].children[0].children[-1].value


def test_workbench_switches_between_the_kernels_of_a_cell(run, add_cell):
    second = ('@pl.jit\ndef copy_kernel(x: pl.Tensor[[pl.DYNAMIC, pl.DYNAMIC], pl.DT_FP16],\n'
              '                y: pl.Tensor[[pl.DYNAMIC, pl.DYNAMIC], pl.DT_FP16]):\n'
              '    with pl.section_vector():\n'
              '        a = pl.make_tile(tt, addr=0)\n'
              '        pl.load_tile(a, x, [0, 0])\n'
              '        pl.store_tile(y, a, [0, 0])\n')
    out = run(add_cell('--launch "add_kernel(x, y, z)" --block-dim 2 --static') + second)
    result = out.value
    assert [k.name for k in result.kernels] == ["add_kernel", "copy_kernel"]
    wb = result.workbench()
    assert len(wb.kernel_pick.options) == 2
    wb.tabs.selected_index = wb.panels.index("source")
    assert "add_kernel" in wb._built["source"].children[0].value
    wb.kernel_pick.value = 1
    assert wb.kernel.name == "copy_kernel" and wb.launch.kernel == "add_kernel"
    wb.tabs.selected_index = wb.panels.index("source")
    assert "copy_kernel" in wb._built["source"].children[0].value
    assert not any("pl.add" in label for label, _ in wb.line_pick.options)


def test_widget_bundle_degrades_to_its_static_html(add_result, monkeypatch):
    """Where the widget view cannot render (VS Code without widget support, nbconvert without
    widget state), the same bundle's script-free `text/html` is the static result; the
    separate fallback output hides itself while the live Workbench or that HTML is shown."""
    import dataclasses

    from pypto_lab import workbench

    monkeypatch.setattr(workbench, "under_kernel", lambda: True)
    result = dataclasses.replace(add_result, options=dataclasses.replace(
        add_result.options, interactive=True))
    bundle = result._repr_mimebundle_()
    assert set(bundle) == {WIDGET, "text/html", "text/plain", "application/vnd.pypto.cell+json"}
    html = bundle["text/html"]
    assert "<script" not in html.lower() and "<summary>Source" in html
    c = result.dom_class
    assert html.startswith(f"<div class='{c}-static'>")
    assert f"{c}-live" in result.workbench().widget._dom_classes
    fallback = result.fallback_bundle()
    assert set(fallback) == {"text/html", "text/plain"}
    css, body = fallback["text/html"].split("</style>", 1)
    assert f"body:has(.{c}-live) .{c}-fallback" in css and f"body:has(.{c}-static)" in css
    assert body.startswith(f"<div class='{c}-fallback'>") and "<summary>Source" in body
    assert "<script" not in body.lower()
    ids = [re.findall(r"id='([^']+)'", text) for text in (html, body)]
    assert ids[0] and not set(ids[0]) & set(ids[1])  # both copies may be on one page


def test_cce_opens_at_the_kernel_body_with_the_helpers_folded(add_result):
    from pypto_lab.views.code import code_html

    kernel = add_result.kernels[0]
    html = code_html(kernel, "kernel.cpp", "cc")
    folded, body = html.split("</details>", 1)
    assert "includes and helpers" in folded and "PYPTO_SCALAR_HELPERS" in folded
    assert "PYPTO_SCALAR_HELPERS" not in body and "add_kernel_impl_vector" in body
    first = int(body.split("<span class='no'>", 1)[1].split("<", 1)[0])
    cpp = kernel.compiled.cce["kernel.cpp"].splitlines()
    assert first > 1 and not cpp[first - 2].strip()  # the body starts after a blank line


def test_clicked_source_lines_and_notes_select_the_line(add_result, add_line):
    wb = add_result.workbench()
    wb.tabs.selected_index = wb.panels.index("source")
    source = wb._built["source"].children[0].value
    assert f"data-pypto-line='{add_line}'" in source  # each kernel line is clickable
    wb.tabs.selected_index = wb.panels.index("passes")
    assert "<span data-pypto-line=" in wb._built["passes"].children[1].children[1].value
    assert wb.clicks is not None
    wb.clicks.clicked = {"value": add_line, "at": 1}  # what the browser side sends
    assert wb.line == add_line
    wb.clicks.clicked = {"value": 9999, "at": 2}  # not a kernel line: ignored
    assert wb.line == add_line
    wb.wrap.value = True
    assert "pypto-wrap" in wb.widget._dom_classes
    wb.select_line(None)


def test_the_default_lanes_are_whole_blocks(flash_result):
    from pypto_lab.views.timeline_lod import lane_table

    lanes = lane_table(flash_result.trace.events)
    cores = tl.default_cores(lanes, max_cores=4)  # a mix block is 3 cores: one block fits
    units = lanes.drop_duplicates("core").set_index("core")
    assert sorted(units.loc[cores, "unit"]) == ["b0 AIC", "b0 AIV0", "b0 AIV1"]
    assert len(tl.default_cores(lanes, max_cores=2)) == 3  # at least one whole block


def test_idle_blocks_are_shown_and_counted():
    import pypto_lab

    result = pypto_lab.run_cell(
        "import torch\nfrom pypto_pro.examples import vector_add\n"
        "x, y, z = vector_add.make_inputs(256, 256)\n"
        "vector_add.make_add_kernel(2)[None, 6](x, y, z)\n")
    html = result.to_html()
    busy = result.trace.block_detail()["block"].nunique()
    assert busy < 6
    assert f"{6 - busy} block(s) issued no pipe work (blocks {busy}–5)" in html
    fig = result.blocks_figure()
    idle = [t for t in fig.data if t.name == "idle (no pipe work)"]
    assert idle and list(idle[0].y) == list(range(busy, 6))
    assert f"{busy} busy + {6 - busy} idle blocks" in fig.layout.title.text
