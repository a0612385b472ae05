"""`--ref`: a FAIL lists the first mismatches, draws where they are and fails the cell (unless
`--keep-going`); the comparison itself finds the right elements and cells."""
from __future__ import annotations

import struct

import pytest
import torch

from pypto_lab.check import compare_tensors
from pypto_lab.errors import CellError
from pypto_lab.views.mismatch import png


def test_a_wrong_reference_fails_the_cell_after_showing_the_result(run, add_cell, shell):
    out = run(add_cell('--launch "add_kernel(x, y, z)" --block-dim 2 --ref "x - y" --static'))
    assert not out.result.success
    err = out.error
    assert isinstance(err, CellError) and err.is_mismatch and err.stage == "check"
    text = "\n".join(err._render_traceback_())
    assert "ReferenceMismatch" in text and "FAIL z vs reference" in text
    assert "first mismatches (row-major):" in text and "  z[0, 0]: got " in text
    assert "--keep-going" in text
    result = shell.user_ns["_pypto"]
    assert result is err.result and not result.check.ok
    first = result.check.first[0]
    x, y, z = (shell.user_ns[n] for n in "xyz")
    assert first.actual == pytest.approx(float(z[first.index])) and \
        first.expected == pytest.approx(float((x - y)[first.index]))
    shown = [o.data.get("text/html", "") for o in out.outputs]
    assert any("First mismatches of z" in h and "data:image/png;base64," in h for h in shown)


def test_keep_going_shows_the_fail_without_failing_the_cell(run, add_cell):
    out = run(add_cell('--launch "add_kernel(x, y, z)" --block-dim 2 --ref "x - y" '
                       '--keep-going --static'))
    assert out.result.success, out.error
    check = out.value.check
    assert not check.ok and check.mismatched > 0
    html = out.value.to_html()
    assert "First mismatches of z" in html and "class='pypto-mismatch'" in html


def test_a_pass_shows_no_mismatch_table(add_result):
    assert add_result.check.ok and add_result.check.first == ()
    assert "First mismatches" not in add_result.to_html()


def test_the_plain_api_raises_with_the_result_attached():
    import pypto_lab

    cell = ("import torch\nx = torch.ones(4, 8)\nout = x * 2\n")
    with pytest.raises(CellError) as err:
        pypto_lab.run_cell(cell, ref="x * 3", out="out")
    assert err.value.result.check.mismatched == 32
    kept = pypto_lab.run_cell(cell, ref="x * 3", out="out", keep_going=True)
    assert not kept.check.ok


def test_first_mismatches_are_in_row_major_order_with_their_values():
    expected = torch.zeros(4, 6)
    actual = expected.clone()
    actual[1, 4], actual[3, 0], actual[1, 2] = 1.0, -2.0, 0.5
    check = compare_tensors("out", actual, expected, 1e-5, 1e-5)
    assert [m.index for m in check.first] == [(1, 2), (1, 4), (3, 0)]
    assert [m.actual for m in check.first] == [0.5, 1.0, -2.0]
    assert check.first[2].error == 2.0 and check.mismatched == 3
    assert "out[1, 2]: got 0.5, expected 0" in check.describe()


def test_the_grid_marks_the_cells_where_the_mismatches_are():
    expected = torch.zeros(256, 256, dtype=torch.float16)
    actual = expected.clone()
    actual[64:128, 0:64] = 1  # one bad 64x64 block
    check = compare_tensors("z", actual, expected, None, None)
    assert check.cell == (4, 4) and len(check.grid) == 64 and len(check.grid[0]) == 64
    bad = {(r, c) for r, row in enumerate(check.grid) for c, v in enumerate(row) if v}
    assert bad == {(r, c) for r in range(16, 32) for c in range(16)}
    assert check.grid[20][3] == 1.0


def test_leading_dims_fold_into_rows():
    expected = torch.zeros(2, 3, 8)
    actual = expected.clone()
    actual[1, 2, 7] = 5
    check = compare_tensors("o", actual, expected, 1e-5, 1e-5)
    assert check.first[0].index == (1, 2, 7)
    assert check.cell == (1, 1) and len(check.grid) == 6 and check.grid[5][7] == 1.0


def test_the_heatmap_is_a_small_png_of_the_grid():
    data = png(((0.0, 1.0, 0.5), (0.0, 0.0, 0.25)))
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    assert (width, height) == (3, 2)
    full = compare_tensors("z", torch.ones(1024, 1024), torch.zeros(1024, 1024), None, None)
    assert len(png(full.grid)) < 2000
