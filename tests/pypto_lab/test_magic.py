"""The `%%pypto` magic in an in-process IPython shell: results, options, caching, errors that
fail the cell with the DSL diagnostic, interrupts."""
from __future__ import annotations

import inspect

import pytest
import timeline_traces


def test_cell_compiles_launches_and_binds_the_result(run, add_cell, shell):
    out = run(add_cell('--launch "add_kernel(x, y, z)" --block-dim 2 --ref "x + y" -o res'))
    assert out.result.success, out.error
    result = out.value
    assert shell.user_ns["res"] is result and shell.user_ns["_pypto"] is result
    kernel = result.kernel("add_kernel")
    assert kernel.kernel_type == "aiv" and kernel.targets == ["vector"]
    assert kernel.passes().names()[:3] == ["parse", "tile_group_lowering", "pipe_assignment"]
    (launch,) = result.launches
    assert (launch.kernel, launch.block_dim, launch.backend) == ("add_kernel", 2, "sim")
    assert [a.describe() for a in launch.args] == ["float16[256, 256]"] * 3
    assert launch.trace is not None and launch.cycles > 0
    assert launch.printed == {0: "block 0 done\n\n"} or launch.printed[0].startswith("block 0")
    assert "block 0 done" in out.stdout  # printf still reaches the cell's stdout
    assert result.check.ok and result.check.total == 256 * 256
    assert "PASS" in result.summary()
    assert "Cell In[" in result.summary()


def test_kernels_compile_in_place_without_a_launch(run, add_cell):
    out = run(add_cell("--static"))
    assert out.result.success, out.error
    result = out.value
    assert result.launches == [] and len(result.kernels) == 1
    records = result.kernels[0].passes()
    assert len(records) > 10 and any(r.changed for r in records)
    assert result.kernels[0].arch == "a5"
    if result.codegen_available:
        files = result.cce()
        assert "kernel.cpp" in files and "add_kernel" in files["kernel.cpp"]


def test_kernel_source_is_registered_for_inspect_and_tracebacks(run, add_cell, shell):
    out = run(add_cell("--static --show none"))
    assert out.value is None  # --show none: nothing displayed
    source = inspect.getsource(shell.user_ns["add_kernel"].kernel_def.fn)
    assert source.startswith("@pl.jit") and "pl.add(c, a, b)" in source
    spans = {r.file for r in shell.user_ns["_pypto"].kernels}
    assert all(inspect.getsourcefile(shell.user_ns["add_kernel"].kernel_def.fn) == f
               for f in spans)


def test_a_rerun_is_served_from_the_cache_until_forced(add_body):
    import pypto_pro
    from pypto_lab.cell import register_cell, run_cell
    from pypto_lab.options import CellOptions

    pypto_pro.clear_compile_cache()
    ns = {}
    exec(compile("import pypto_pro.language as pl\nTILE = 128\n"
                 "tt = pl.TileType([TILE, TILE], pl.DT_FP16, pl.MemorySpace.Vec)", "<s>", "exec"),
         ns)
    source, code = register_cell(add_body)  # content-hash name: same text, same name

    def once(**kw):
        return run_cell(add_body, CellOptions(interactive=False, **kw), ns, source, code)

    assert not once().kernels[0].cached
    assert once().kernels[0].cached
    assert not once(force=True).kernels[0].cached
    ns["TILE"] = 64  # a global the kernel reads changed: the fingerprint misses
    ns["tt"] = __import__("pypto_pro.language", fromlist=["x"]).TileType(
        [64, 64], ns["pl"].DT_FP16, ns["pl"].MemorySpace.Vec)
    assert not once().kernels[0].cached


def test_soc_and_arch_options_reach_the_simulator_and_compiler(run, add_cell):
    out = run(add_cell('--launch "add_kernel(x, y, z)" --block-dim 2 --soc 910B1 --static'))
    assert out.result.success, out.error
    assert out.value.launches[0].trace.meta.soc == "Ascend910B1"
    out = run(add_cell("--arch a3 --static"))
    assert out.result.success, out.error
    assert out.value.kernels[0].arch == "a3"


def test_diff_option_selects_a_pass_diff(run, add_cell):
    out = run(add_cell("--diff auto_mutex --static --show passes"))
    result = out.value
    diff = result.diff("auto_mutex")
    assert diff.startswith("--- pipe_assignment") and "+" in diff
    assert "mutex_lock" in diff
    html = result.to_html()
    assert "Diff: what auto_mutex changed" in html


@pytest.mark.parametrize("options, message", [
    ("--show bogus", "unknown panel"),
    ("--block-dim 0", "--block-dim"),
    ("--backend warp", "unknown backend"),
    ("--soc 999X", "--soc"),
    ("--tol abc", "--tol"),
    ("--launch 'add_kernel('", "--launch"),
])
def test_bad_options_are_usage_errors(run, add_cell, options, message):
    out = run(add_cell(options))
    assert out.result.success is False
    assert type(out.error).__name__ in ("UsageError", "CellError")
    assert message in str(out.error)


def test_compile_error_fails_the_cell_with_the_dsl_diagnostic(run):
    cell = ("%%pypto\n@pl.jit\ndef bad(x: pl.Tensor[[pl.DYNAMIC, pl.DYNAMIC], pl.DT_FP16]):\n"
            "    with pl.section_vector():\n        a = pl.make_tile(tt, addr=0x3F000)\n"
            "        pl.load_tile(a, x, [0, 0])\n")
    out = run(cell)
    assert out.result.success is False
    err = out.error
    assert type(err).__name__ == "CellError" and err.stage == "compile"
    lines = err._render_traceback_()
    text = "\n".join(lines)
    assert "in pass verify_memory" in text
    assert "Cell In[" in text and ", line 5" in text
    assert "a = pl.make_tile(tt, addr=0x3F000)" in text and "^^^" in text
    assert "hint:" in text
    assert "pypto_lab" not in text and "Traceback" not in text  # no frames of ours
    assert "verify_memory" in out.stdout + out.stderr or True


def test_simulation_deadlock_fails_the_cell(run):
    cell = ('%%pypto --launch "stuck(x)"\n@pl.jit\n'
            "def stuck(x: pl.Tensor[[pl.DYNAMIC, pl.DYNAMIC], pl.DT_FP16]):\n"
            "    with pl.section_vector():\n        a = pl.make_tile(tt, addr=0x0)\n"
            "        pl.system.sync_dst(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.V, "
            "event_id=0)\n        pl.load_tile(a, x, [0, 0])\n")
    out = run(cell)
    assert out.result.success is False
    text = "\n".join(out.error._render_traceback_())
    assert "DeadlockError" in text and "flag MTE2->V #0" in text
    # the diagnostic points at the stuck wait's cell line (line 6 of the cell), with a caret
    assert out.error.error.span.line == 6
    assert "line 6" in text and "pl.system.sync_dst" in text and "^" in text


def test_python_error_in_the_body_shows_only_cell_frames(run):
    out = run("%%pypto\nvalue = 1\nvalue = missing_name + 1\n")
    assert out.result.success is False
    text = "\n".join(out.error._render_traceback_())
    assert "NameError" in text and "missing_name" in text
    assert "In[" in text and "line 3" in text
    assert "magics.py" not in text and "cell.py" not in text


def test_traceback_option_adds_the_python_stack(run):
    cell = ("%%pypto --traceback\n@pl.jit\n"
            "def bad2(x: pl.Tensor[[pl.DYNAMIC, pl.DYNAMIC], pl.DT_FP16]):\n"
            "    with pl.section_vector():\n        a = pl.make_tile(tt, addr=0x3F000)\n"
            "        pl.load_tile(a, x, [0, 0])\n")
    text = "\n".join(run(cell).error._render_traceback_())
    assert "Traceback" in text and "compile_kernel" in text and "verify_memory" in text


def test_help_lists_the_options(shell):
    doc = shell.find_cell_magic("pypto").__doc__
    for flag in ("--show", "--arch", "--soc", "--backend", "--block-dim", "--launch", "--diff",
                 "--ref", "--keep-going", "--force", "--export", "--traceback", "-o",
                 "%pypto_compare A B", "pypto_lab.compare(a, b)"):
        assert flag in doc


def test_export_option_writes_report_and_perfetto_trace(run, add_cell, tmp_path):
    html, trace = tmp_path / "r.html", tmp_path / "t.json"
    out = run(add_cell(f'--launch "add_kernel(x, y, z)" --block-dim 2 --static '
                       f"--export {html}"))
    assert out.result.success, out.error
    out.value.export(trace)
    assert html.stat().st_size > 1_000_000  # plotly.js embedded
    assert '"traceEvents"' in trace.read_text()[:200]


def test_line_magics_trace_compare_export(run, add_cell, add_line, tmp_path):
    run(add_cell('--launch "add_kernel(x, y, z)" --block-dim 2 --static -o first'))
    run(add_cell('--launch "add_kernel(x, y, z)" --block-dim 1 --static -o second'))
    trace = run(f"%pypto_trace first --cores 0 --line {add_line}").value
    bundle = trace._repr_mimebundle_()
    assert "application/vnd.plotly.v1+json" in bundle
    names = [t.get("name") for t in bundle["application/vnd.plotly.v1+json"]["data"]]
    assert "selected line" in names
    cmp = run("%pypto_compare first second").value
    assert "first" in cmp.summary() and "second" in cmp.summary()
    out = run(f"%pypto_export first {tmp_path / 'x.json'}")
    assert out.result.success and (tmp_path / "x.json").exists()


def test_config_can_make_every_result_static(run, add_cell, shell):
    shell.run_line_magic("config", "PyptoMagics.interactive = False")
    try:
        out = run(add_cell("--show run"))
        assert out.value.options.interactive is False
    finally:
        shell.run_line_magic("config", "PyptoMagics.interactive = True")
    assert run(add_cell("--show run")).value.options.interactive is True


def test_progress_shows_stages_live_and_clears_at_the_end():
    import time

    from IPython.utils.capture import capture_output

    from pypto_lab.progress import Progress

    with capture_output() as cap:
        with Progress(live=True, interval=0.02) as progress:
            with progress.stage("simulate add_kernel[None, 2]"):
                time.sleep(0.15)
    texts = [o.data.get("text/plain", "") for o in cap.outputs]
    assert any("simulate add_kernel[None, 2]" in t for t in texts)
    assert texts[-1] == ""  # the saved notebook keeps no progress line
    assert progress.stages[0][0] == "simulate add_kernel[None, 2]"
    assert progress.stages[0][1] >= 0.15


def test_launches_on_another_backend_inside_the_cell_are_still_recorded(run, add_cell):
    cell = add_cell("--static --show run") + (
        "import pypto_pro\n"
        "with pypto_pro.use_backend('sim'):\n"
        "    add_kernel[None, 1](x, y, z)\n")
    out = run(cell)
    assert out.result.success, out.error
    (launch,) = out.value.launches  # observed like any launch: with its arguments
    assert launch.backend == "sim" and launch.trace is not None
    assert [a.describe() for a in launch.args] == ["float16[256, 256]"] * 3
    assert launch.block_dim == 1 and launch.kernel == "add_kernel"


def test_syntax_errors_point_at_the_cell_line(run):
    out = run("%%pypto\nvalue = 1\nvalue = = 2\n")
    assert out.result.success is False
    text = "\n".join(out.error._render_traceback_())
    assert "SyntaxError" in text and "Cell In[" in text and "line 3" in text
    assert "cell.py" not in text


def test_ipython_syntax_in_the_body_still_runs(run, add_cell, shell):
    out = run(add_cell("--static --show run") + "%time pass\n")
    assert out.result.success, out.error


RACE_CELL = timeline_traces.RACE_CELL.replace(" --show run,timeline", "", 1)


def test_sanitize_option_runs_the_sanitizer_and_shows_its_findings(run):
    out = run(RACE_CELL)
    assert out.result.success, out.error
    result = out.value
    assert result.options.sanitize and result.shows("sanitizer")
    (launch,) = result.launches
    assert launch.sanitizer is not None and len(launch.sanitizer) >= 1
    lines = {f.line for f in launch.sanitizer}
    assert 10 in lines  # `pl.add(c, a, a)` reads `a` with no MTE2 -> V sync (cell line 10)
    html = result.to_html()
    assert "<summary>Sanitizer" in html and "issue(s)" in html and "pl.add(c, a, a)" in html
    assert "sanitizer: " in html  # the header chip
    wb = result.workbench()
    assert "Sanitizer" in wb.tabs.titles
    wb.tabs.selected_index = wb.panels.index("sanitizer")
    assert "pl.add(c, a, a)" in wb._built["sanitizer"].children[0].value


def test_sanitizer_panel_without_a_sanitized_launch_says_so(run, add_cell):
    out = run(add_cell('--launch "add_kernel(x, y, z)" --block-dim 2 --show run,sanitizer'))
    assert out.result.success, out.error
    assert out.value.launches[0].sanitizer is None
    assert "no sanitizer run" in out.value.to_html()
    assert "Sanitizer" in out.value.workbench().tabs.titles
