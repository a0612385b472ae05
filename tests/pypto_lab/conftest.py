"""Fixtures for the workbench tests: an in-process IPython shell with `pypto_lab` loaded, the
double-buffered add kernel as cell text, and helpers to run a `%%pypto` cell and keep its
output (anchors R1: `run_cell` + `capture_output`)."""
from __future__ import annotations

from dataclasses import dataclass

import pytest

ADD_BODY = '''@pl.jit
def add_kernel(x: pl.Tensor[[pl.DYNAMIC, pl.DYNAMIC], pl.DT_FP16],
               y: pl.Tensor[[pl.DYNAMIC, pl.DYNAMIC], pl.DT_FP16],
               z: pl.Tensor[[pl.DYNAMIC, pl.DYNAMIC], pl.DT_FP16]):
    with pl.section_vector():
        xs = pl.make_tile_group(type=tt, addrs=0x00000, mutex_ids=[0, 1])
        ys = pl.make_tile_group(type=tt, addrs=0x10000, mutex_ids=[2, 3])
        zs = pl.make_tile_group(type=tt, addrs=0x20000, mutex_ids=[30, 31])
        num = pl.get_block_num()
        cid = pl.get_block_idx()
        for i in pl.range(cid, x.shape[0] // TILE, num):
            for j in pl.range(x.shape[1] // TILE):
                a = xs.next()
                b = ys.next()
                c = zs.next()
                pl.load_tile(a, x, [i, j])
                pl.load_tile(b, y, [i, j])
                pl.add(c, a, b)
                pl.store_tile(z, c, [i, j])
        if cid == 0:
            pl.printf("block %d done\\n", cid)
'''
#: cell line of `pl.add(c, a, b)` when ADD_BODY follows a one-line `%%pypto ...` header
ADD_LINE = 19

SETUP = """
import torch
import pypto_pro.language as pl
TILE = 128
tt = pl.TileType([TILE, TILE], pl.DT_FP16, pl.MemorySpace.Vec)
x = torch.randn(256, 256, dtype=torch.float16)
y = torch.randn_like(x)
z = torch.zeros_like(x)
"""


@dataclass
class CellRun:
    """What running one cell gave: the ExecutionResult and the captured output."""

    result: object
    stdout: str
    stderr: str
    outputs: list

    @property
    def value(self):
        return self.result.result

    @property
    def error(self):
        return self.result.error_in_exec


@pytest.fixture(scope="session")
def shell():
    from IPython.core.interactiveshell import InteractiveShell

    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "pypto_lab")
    ip.run_cell(SETUP, store_history=True)
    return ip


@pytest.fixture
def run(shell):
    """run(cell_text) → CellRun (store_history on, so cells are numbered)."""
    from IPython.utils.capture import capture_output

    def _run(text: str) -> CellRun:
        with capture_output() as cap:
            result = shell.run_cell(text, store_history=True)
        return CellRun(result, cap.stdout, cap.stderr, cap.outputs)

    return _run


@pytest.fixture
def add_body() -> str:
    return ADD_BODY


@pytest.fixture
def add_line() -> int:
    return ADD_LINE


@pytest.fixture
def add_cell():
    """`%%pypto <options>` + the add kernel body."""

    def _cell(options: str = '--launch "add_kernel(x, y, z)" --block-dim 2') -> str:
        return f"%%pypto {options}\n{ADD_BODY}"

    return _cell


@pytest.fixture(scope="session")
def add_result(shell):
    """One launched add kernel result (shared, read-only)."""
    from IPython.utils.capture import capture_output

    cell = f'%%pypto --launch "add_kernel(x, y, z)" --block-dim 2 --ref "x + y" --static\n' \
           f"{ADD_BODY}"
    with capture_output():
        res = shell.run_cell(cell, store_history=True)
    assert res.success, res.error_in_exec
    return res.result


@pytest.fixture(scope="session")
def race_result(shell):
    """The racing cell launched with the sanitizer (`timeline_traces.RACE_CELL`; shared,
    read-only)."""
    from IPython.utils.capture import capture_output
    from timeline_traces import RACE_CELL

    with capture_output():
        res = shell.run_cell(RACE_CELL, store_history=True)
    assert res.success, res.error_in_exec
    return res.result


@pytest.fixture(scope="session")
def flash_result():
    """A mix kernel with flags and cross-core signals: the flash attention example."""
    import pypto_lab

    return pypto_lab.run_cell(
        "from pypto_pro.examples import load\n"
        "m = load('flash_attention')\n"
        "args = m.make_inputs()\n"
        "m.run(*args)\n")


@pytest.fixture(scope="session")
def widest_event() -> str:
    """JS `(gd) => {w, line, x, y}`: the widest hover-layer cell of a plotly timeline, its
    source line and its centre in page pixels (what a user would click)."""
    return """(gd) => {
  const fl = gd._fullLayout, box = gd.getBoundingClientRect();
  let best = null;
  gd._fullData.forEach((t) => {
    if (t.name !== 'details' || t.type !== 'heatmap') { return; }
    const xa = fl[t.xaxis === 'x' ? 'xaxis' : 'xaxis' + t.xaxis.slice(1)];
    const ya = fl[t.yaxis === 'y' ? 'yaxis' : 'yaxis' + t.yaxis.slice(1)];
    const cd = t.customdata[0];
    for (let i = 0; i < cd.length; i++) {
      if (!(cd[i] > 0)) { continue; }
      const w = xa.l2p(t.x[i + 1]) - xa.l2p(t.x[i]);
      if (best === null || w > best.w) {
        best = {w: w, line: cd[i],
                x: box.left + xa._offset + xa.l2p((t.x[i] + t.x[i + 1]) / 2),
                y: box.top + ya._offset + ya.l2p((t.y[0] + t.y[1]) / 2)};
      }
    }
  });
  return best;
}"""


def with_ci_parameters(nb):
    """A tutorial notebook with its small CI shapes: the cell tagged `parameters` is followed by
    one injected cell holding `metadata.pypto.ci_parameters` (papermill's convention)."""
    import nbformat

    params = [i for i, c in enumerate(nb.cells) if "parameters" in c.metadata.get("tags", [])]
    assert len(params) == 1, "exactly one cell tagged 'parameters'"
    override = nb.metadata.get("pypto", {}).get("ci_parameters")
    if override:
        cell = nbformat.v4.new_code_cell(override)
        cell.metadata["tags"] = ["injected-parameters"]
        nb.cells.insert(params[0] + 1, cell)
    return nb


@pytest.fixture(scope="session")
def ci_notebook():
    """`ci_notebook(nb)`: the notebook with its CI parameters injected (see above)."""
    return with_ci_parameters
