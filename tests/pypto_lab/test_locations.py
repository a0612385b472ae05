"""Every view names a kernel line as "Cell In[n], line m": the sanitizer tab, timeline hovers,
exported traces, diagnostics, the text summary's hot lines, also for a kernel defined in an
earlier, plain cell."""
from __future__ import annotations

import json

from pypto_lab import locations

KERNEL_CELL = '''import pypto_pro.language as pl
T = pl.TileType([64, 64], pl.DT_FP16, pl.MemorySpace.Vec)

@pl.jit(arch="a5")
def racy(x: pl.Tensor[[64, 64], pl.DT_FP16], z: pl.Tensor[[64, 64], pl.DT_FP16]):
    with pl.section_vector():
        a = pl.make_tile(T, addr=0x0)
        c = pl.make_tile(T, addr=0x2000)
        pl.load(a, x, [0, 0])
        pl.add(c, a, a)
        pl.system.sync_src(set_pipe=pl.PipeType.V, wait_pipe=pl.PipeType.MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=pl.PipeType.V, wait_pipe=pl.PipeType.MTE3, event_id=0)
        pl.store(z, c, [0, 0])
'''


def test_a_kernel_from_an_earlier_plain_cell_is_named_by_its_cell(run, shell, tmp_path):
    defined = run(KERNEL_CELL)
    assert defined.result.success, defined.error
    number = defined.result.execution_count
    file = shell.user_ns["racy"].__wrapped__.__code__.co_filename
    assert locations.where(file, 10) == f"Cell In[{number}], line 10"
    out = run('%%pypto --sanitize --static\nracy(x[:64, :64].contiguous(), z[:64, :64])\n')
    assert out.result.success, out.error
    result = out.value
    html = result.to_html()
    assert f"Cell In[{number}], line 10" in html  # the race's line, in the Sanitizer tab
    assert file not in html
    hover = [t for tr in result.timeline_figure().data if tr.name == "details"
             for row in tr.text for t in row if t]
    assert any(f"Cell In[{number}], line 9" in t for t in hover)
    assert all(file not in t for t in hover)
    path = result.export(tmp_path / "t.json")
    text = path.read_text()
    assert f"Cell In[{number}], line 9" in text and file not in text
    json.loads(text)
    summary = result.summary()  # the text a terminal or a log shows
    hot = next(ln for ln in summary.splitlines() if "hot lines:" in ln)
    assert f"Cell In[{number}], line" in hot and ".py:" not in hot
    trace_text = run("%pypto_trace").value.text
    assert f"Cell In[{number}], line" in trace_text and ".py:" not in trace_text


def test_a_kernel_in_the_magic_cell_names_its_hot_lines_by_the_cell(run):
    out = run('%%pypto --launch "racy(x[:64, :64].contiguous(), z[:64, :64])" --static\n'
              + KERNEL_CELL)
    assert out.result.success, out.error
    number = out.result.execution_count
    hot = next(ln for ln in out.value.summary().splitlines() if "hot lines:" in ln)
    assert f"Cell In[{number}], line" in hot and ".py:" not in hot


def test_relabel_leaves_files_that_are_not_cells():
    assert locations.relabel("kernels.py:12 and /a/b.py:3:4") == "kernels.py:12 and /a/b.py:3:4"
    assert locations.where("/a/kernels.py", 12) == "kernels.py:12"
