"""`--ref`: the launch's output against a reference value, and where they differ.

Owns `check_reference` (evaluate `--ref` and `--out` in the cell's namespace), `compare_tensors`
(tolerances by dtype: rtol 1e-3 for half types, 1e-5 otherwise; atol = rtol unless given) and
the facts a FAIL shows: the first mismatching elements in row-major order with their index,
value, reference and error, and a coarse grid of where the mismatches are (the tensor folded to
rows × last dim, then cells of several elements each, at most `GRID` per side) that the Run view
draws as a heatmap. `ReferenceMismatch` is the error a FAIL raises so the cell fails.
"""
from __future__ import annotations

from typing import Any

from .options import CellOptions, OptionError
from .records import CheckResult, Mismatch

#: how many mismatching elements a FAIL lists
FIRST = 8
#: the heatmap's largest side, in cells
GRID = 64


class ReferenceMismatch(AssertionError):
    """A `--ref` check failed (the cell fails with the first mismatches)."""

    def __init__(self, check: CheckResult) -> None:
        self.check = check
        super().__init__(check.describe())


def check_reference(options: CellOptions, namespace: dict, output: tuple[str, Any] | None,
                    fail: Any) -> CheckResult | None:
    """Compare the output with `--ref` in `namespace` (`output`: the last launch's (name,
    tensor) when `--out` is not given); errors of the expressions go through `fail`."""
    import torch

    if not options.ref:
        return None
    try:
        expected = eval(options.ref, namespace)  # noqa: S307  (the user's own expression)
        if options.out:
            name, actual = options.out, eval(options.out, namespace)  # noqa: S307
        elif output is None:
            raise OptionError("--ref: the cell made no launch with a tensor output; name the "
                              "value to compare with --out")
        else:
            name, actual = output
    except OptionError:
        raise
    except Exception as e:  # noqa: BLE001
        raise fail(e, "check") from e
    return compare_tensors(name, torch.as_tensor(actual), torch.as_tensor(expected),
                           options.rtol, options.atol)


def compare_tensors(name: str, actual: Any, expected: Any, rtol: float | None,
                    atol: float | None) -> CheckResult:
    import torch

    half = actual.dtype in (torch.float16, torch.bfloat16)
    rtol = rtol if rtol is not None else (1e-3 if half else 1e-5)
    atol = atol if atol is not None else rtol
    shape = tuple(actual.shape)
    if shape != tuple(expected.shape):
        return CheckResult(False, name, rtol, atol, shape=shape,
                           message=f"shape {shape} != reference {tuple(expected.shape)}")
    a, e = actual.detach().double().cpu(), expected.detach().double().cpu()
    close = torch.isclose(a, e, rtol=rtol, atol=atol, equal_nan=True)
    err = (a - e).abs().nan_to_num(nan=float("inf"))
    max_err = float(err.max()) if err.numel() else 0.0
    bad = ~close
    count = int(bad.sum())
    if count == 0:
        return CheckResult(True, name, rtol, atol, max_err, 0, int(close.numel()), shape=shape)
    flat = torch.nonzero(bad.reshape(-1)).reshape(-1)[:FIRST].tolist()
    first = tuple(Mismatch(_index(i, shape), float(a.reshape(-1)[i]), float(e.reshape(-1)[i]),
                           float(err.reshape(-1)[i])) for i in flat)
    grid, cell = mismatch_grid(bad)
    return CheckResult(False, name, rtol, atol, max_err, count, int(close.numel()),
                       shape=shape, first=first, grid=grid, cell=cell)


def _index(flat: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    out = []
    for dim in reversed(shape):
        out.append(flat % dim)
        flat //= dim
    return tuple(reversed(out))


def mismatch_grid(bad: Any) -> tuple[tuple[tuple[float, ...], ...], tuple[int, int]]:
    """The share of mismatching elements per cell of the tensor folded to 2-D (rows = every
    leading dim, columns = the last), and the (rows, columns) of elements per cell."""
    import torch

    two = bad.reshape(1, -1) if bad.dim() <= 1 else bad.reshape(-1, bad.shape[-1])
    rows, cols = two.shape
    cr, cc = -(-rows // GRID), -(-cols // GRID)
    padded = torch.zeros(-(-rows // cr) * cr, -(-cols // cc) * cc, dtype=torch.float64)
    counts = torch.zeros_like(padded)
    padded[:rows, :cols] = two.double()
    counts[:rows, :cols] = 1.0
    r, c = padded.shape[0] // cr, padded.shape[1] // cc
    bad_sum = padded.reshape(r, cr, c, cc).sum(dim=(1, 3))
    total = counts.reshape(r, cr, c, cc).sum(dim=(1, 3))
    share = (bad_sum / total).tolist()
    return tuple(tuple(round(v, 4) for v in row) for row in share), (cr, cc)
