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
def flash_result():
    """A mix kernel with flags and cross-core signals: the flash attention example."""
    import pypto_lab

    return pypto_lab.run_cell(
        "from pypto_pro.examples import load\n"
        "m = load('flash_attention')\n"
        "args = m.make_inputs()\n"
        "m.run(*args)\n")
