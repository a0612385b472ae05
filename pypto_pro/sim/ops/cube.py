"""Cube ops (pipe M): `matmul`, `matmul_acc`, `matmul_bias`, the `gemv` variants and the
microscaling `matmul_mx`, `matmul_mx_acc`.

Shapes come from the valid windows: M = lhs valid rows, K = lhs valid cols, N = rhs valid cols.
Dtype paths [INI950 Intrinsic_mmad]: FP16/BF16/FP32 -> FP32, INT8/INT4 -> INT32, FP8 E4M3/E5M2
(any pairing) and HiF8 x HiF8 -> FP32; MX: FP8/FP4 operands with one E8M0 scale per 32
consecutive K elements (lhs scale [M, K/32] in ScaleLeft, rhs scale [K/32, N] in ScaleRight).
Products are computed in float32 (exact for <= 12-bit significands: FP16/BF16/FP8 inputs, fp32
accumulation; CPU fp16 matmul would be far slower), FP32 x FP32 in float32, integer and MX ones
in float64 (exact), then rounded once into the accumulator dtype.

Float operands are read out of their storage in one converting copy (views and buffers planned
once per tile pair: `_plan`), into float32 buffers each thread reuses for every product (in
cache: about half the time of a new tensor), and so is a product its caller consumes at once
(`mm(out=)`, which sums like `a @ b`). The order MKL sums a float32 product in depends on how
it is called; the simulator's values are those of the row-major `a @ b`. When M and N are
multiples of `ALIGNED` a column-major rhs (`a @ bt.t()`) and a batch (`torch.bmm`) sum in that
same order (checked on this torch/MKL build for M, N in 16..256 step 16, any K, 1 and 2
threads; other shapes can differ: gemv kernels, odd N), so only those shapes read a
column-major rhs (ZN/NN fractals, DN: fractal rows become contiguous runs) as its transpose and
batch float products. Integer products are exact, so they batch at any shape.

`BATCH_IMPLS` runs one op for many cores (`batching`): every call's operands are gathered into
[B, ...] tensors, one `bmm` computes all products, and each core's result lands through its own
tile's writing methods. The `bmm` runs on the launch's torch threads (`SimBackend.torch_threads`,
default 1): raising them for the product alone saved ~2% wall time on the 2048^3 matmul and
cost ~57% more CPU (OpenMP workers spin between the short parallel regions).
"""
from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Callable, Iterator

import torch

from pypto_pro.ir.dtype import DataType
from pypto_pro.ir.types import TileLayout

from ..model.memory import TileRef
from ..step import Step
from . import SimOpError
from .batching import Writes, batched
from .numerics import decode_e8m0, to_compute
from .operands import encode, tile_arg

FLOAT_IN = (DataType.FP16, DataType.BF16, DataType.FP32, DataType.FP8E4M3FN, DataType.FP8E5M2,
            DataType.HF8)
INT_IN = (DataType.INT8, DataType.INT4)
MATMUL_IN = FLOAT_IN + INT_IN
MX_IN = (DataType.FP8E4M3FN, DataType.FP8E5M2, DataType.FP4E2M1, DataType.FP4E1M2, DataType.FP4)
MX_BLOCK = 32
_FP8 = (DataType.FP8E4M3FN, DataType.FP8E5M2)
_CAST_TO_FLOAT32 = (DataType.FP16, DataType.BF16, DataType.FP32, *_FP8)  # `to_compute`: a cast
#: M and N multiples of this: a column-major rhs and `bmm` sum like `a @ b` (module docstring)
ALIGNED = 16


def _check_pair(op: str, lhs: TileRef, rhs: TileRef, allowed: tuple) -> None:
    a, b = lhs.dtype, rhs.dtype
    fp8_pair = a in _FP8 and b in _FP8
    if a not in allowed or b not in allowed or (a is not b and not fp8_pair
                                                 and not (a in MX_IN and b in MX_IN)):
        raise SimOpError(f"{op}: unsupported operand dtypes {a.value} x {b.value}")


def _accumulator_for(op: str, lhs: TileRef, dst: TileRef) -> None:
    want = (DataType.INT32,) if lhs.dtype in INT_IN else (DataType.FP32, DataType.FP16)
    if dst.dtype not in want:
        raise SimOpError(f"{op}: {lhs.dtype.value} operands accumulate into "
                         f"{'/'.join(d.value for d in want)}, not {dst.dtype.value}")


def _sizes(op: str, lhs: TileRef, rhs: TileRef) -> tuple[int, int, int]:
    """(M, K, N) of lhs[M, K] @ rhs[K, N] over the valid windows."""
    m, k = lhs.valid
    if rhs.valid_rows < k:
        raise SimOpError(f"{op}: lhs valid K {k} exceeds rhs valid rows {rhs.valid_rows}")
    return m, k, rhs.valid_cols


def _product(op: str, lhs: TileRef, rhs: TileRef, reuse: bool = False) -> torch.Tensor:
    """lhs[M, K] @ rhs[K, N] over the valid windows, float32 or exact float64; `reuse`: a
    float32 product may land in a scratch buffer (the caller is done with it before the next
    product: it writes it at once or computes a new tensor from it)."""
    plan = _kept_plan(op, lhs, rhs)
    if not plan:
        m, k, n = _sizes(op, lhs, rhs)
        return _int_block(lhs, m, k) @ _int_block(rhs, k, n)
    a, b = _float32(plan[0]), _float32(plan[1])
    return torch.mm(a, b, out=plan[2]) if reuse else a @ b


def _kept_plan(op: str, lhs: TileRef, rhs: TileRef) -> tuple:
    """`_plan` of the pair, kept on `lhs` (`TileRef.kept`) unless a tile is an engine's per-op
    copy."""
    if type(lhs) is not TileRef or type(rhs) is not TileRef:
        return _plan(lhs, rhs, *_sizes(op, lhs, rhs))
    plans = lhs.kept()  # (on the tile: a plan holds views of its buffers)
    key = ("product", rhs, _owner())  # (the scratch buffers are their owner's)
    kept = plans.get(key)
    if kept is None or kept[0] != TileRef.epoch:
        kept = plans[key] = (TileRef.epoch, _plan(lhs, rhs, *_sizes(op, lhs, rhs)))
    return kept[1]


def _product_parts(op: str, lhs: TileRef, rhs: TileRef) -> tuple | None:
    """(the operands' conversions as (scratch grid, storage view) pairs, the float32 matrices
    they fill, the product's scratch) of a float product whose plan converts both operands with
    one copy each; None otherwise."""
    plan = _kept_plan(op, lhs, rhs)
    if not plan or plan[0][0] is None or plan[1][0] is None:
        return None
    (grid_a, view_a, a), (grid_b, view_b, b), product = plan
    return ((grid_a, view_a), (grid_b, view_b)), a, b, product


def _product_then(parts: tuple, after: Callable[[], None], add: Step | None = None,
                  write: Step | None = None) -> Step:
    """The step converting the operands, multiplying into the product's scratch and running
    `after` (`add`'s or `write`'s run, or a general write); its `product` says so, for the
    fast path to compile it (`fusion.compiled`)."""
    pairs, a, b, product = parts
    (grid_a, view_a), (grid_b, view_b) = pairs
    mm = torch.mm

    def run() -> None:
        grid_a.copy_(view_a)
        grid_b.copy_(view_b)
        mm(a, b, out=product)
        after()
    return Step(run, product=(pairs, a, b, product, add, write, after))


def _plan(lhs: TileRef, rhs: TileRef, m: int, k: int, n: int) -> tuple:
    """How a float product of two tiles gets its float32 operands, made once per pair (kept
    while their memories, geometries and valid shapes are unchanged: `TileRef.epoch`): (lhs
    `_Operand`, rhs `_Operand`, the product's scratch); () for an integer product."""
    if lhs.dtype in INT_IN:
        return ()
    b = None
    if m % ALIGNED == 0 and n % ALIGNED == 0 and _column_major(rhs):
        bt = _storage_view(rhs, k, n, transposed=True)
        if bt is not None:
            matrix, grid = _scratch("rhs", (n, k), bt.shape)
            b = (grid, bt, matrix.t())
    return (_operand(lhs, m, k, "lhs"), b or _operand(rhs, k, n, "rhs"),
            _scratch("product", (m, n))[0])


#: a float operand of `_plan`: (scratch grid, storage view, float32 matrix) when one copy of
#: the view into the `role` scratch converts it (the types whose values are a plain cast of
#: their storage: a buffer in cache takes it in about half the time of a new tensor), else
#: (None, tile, block shape): its values are decoded per product
_Operand = tuple


def _operand(tile: TileRef, rows: int, cols: int, role: str) -> _Operand:
    """The `_Operand` of the top-left [rows, cols] block of `tile`."""
    view = _storage_view(tile, rows, cols)
    if view is None:
        return (None, tile, (rows, cols))
    matrix, grid = _scratch(role, (rows, cols), view.shape)
    return (grid, view, matrix)


def _float32(operand: _Operand) -> torch.Tensor:
    """An `_Operand`'s current values as a float32 matrix (a scratch buffer: valid until the
    next product)."""
    grid, source, matrix = operand
    if grid is None:
        return to_compute(source.read_block(0, 0, *matrix), source.dtype).to(torch.float32)
    grid.copy_(source)
    return matrix


def _int_block(tile: TileRef, rows: int, cols: int) -> torch.Tensor:
    return to_compute(tile.read_block(0, 0, rows, cols), tile.dtype).to(torch.float64)


def _column_major(tile: TileRef) -> bool:
    """Elements stored down the columns (inside fractals for ZN/NN, throughout for DN)."""
    layout = tile.geometry.layout
    return layout.slayout == "col" or layout is TileLayout.DN


def _storage_view(tile: TileRef, rows: int, cols: int, transposed: bool = False
                  ) -> torch.Tensor | None:
    """A view of the storage of the top-left [rows, cols] block whose row-major order is the
    logical block (`transposed`: its transpose), for dtypes whose values are a cast of their
    storage; None when the block has no view (`memory.BlockViews`)."""
    if tile.dtype not in _CAST_TO_FLOAT32:
        return None
    views = tile.memory.block_views(tile.geometry, 0, 0, rows, cols)
    if views is None:
        return None
    return views.transposed if transposed else views.typed


#: per thread, float32 buffers reused by every product made there (launches may run in
#: several threads), by (role, shape, view shape): operands, and products a caller is done with
#: before the next one (`_product(reuse=True)`); each with its view in the shape of the storage
#: view converted into it (a view per call costs more). A thread keeps one set per tape lane
#: (`lane_scratch`): a lane's steps are made here and may run on another thread, at once with
#: the other lane's
_SCRATCH = threading.local()  # `.buffers`: lane → buffers; `.lane`: the lane products are for
_SCRATCH_MAX = 64


@contextlib.contextmanager
def lane_scratch(lane: int) -> Iterator[None]:
    """Products made meanwhile on this thread compute in the scratch of its tape lane `lane`
    (lane 0 is the thread's own)."""
    before = getattr(_SCRATCH, "lane", 0)
    _SCRATCH.lane = lane
    try:
        yield
    finally:
        _SCRATCH.lane = before


def _owner() -> tuple[int, int]:
    """Whose scratch a product made here uses: (this thread, its lane)."""
    return threading.get_ident(), getattr(_SCRATCH, "lane", 0)


def _scratch(role: str, shape: tuple[int, int], grid: torch.Size | None = None
             ) -> tuple[torch.Tensor, torch.Tensor]:
    """The `role` buffer of `shape`, and it viewed as `grid` (default: `shape`)."""
    lanes = getattr(_SCRATCH, "buffers", None)
    if lanes is None:
        lanes = _SCRATCH.buffers = {}
    lane = getattr(_SCRATCH, "lane", 0)
    buffers = lanes.get(lane)
    if buffers is None:
        buffers = lanes[lane] = {}
    key = (role, shape, grid)
    hit = buffers.get(key)
    if hit is None:
        if len(buffers) >= _SCRATCH_MAX:
            buffers.clear()
        buf = torch.empty(shape, dtype=torch.float32)
        hit = buffers[key] = (buf, buf if grid is None else buf.view(grid))
    return hit


def _finish(dst: TileRef, result: torch.Tensor) -> None:
    if dst.dtype is DataType.INT32:
        result = torch.round(result).to(torch.int64)
    dst.write(encode(dst.dtype, result), offset=(0, 0))


def _accumulate(dst: TileRef, acc: TileRef, product: torch.Tensor) -> None:
    """dst = acc + product, in place when dst is acc."""
    if acc.memory is dst.memory and (acc.geometry is dst.geometry or acc.geometry == dst.geometry) \
            and dst.add_from(product):
        return
    previous = to_compute(acc.read_block(0, 0, *product.shape), acc.dtype).to(product.dtype)
    _finish(dst, torch.add(product, previous, out=previous))  # (a new tensor: `read_block`)


def _with_bias(product: torch.Tensor, bias: TileRef) -> torch.Tensor:
    """product + bias[0, :] (a [1, N] row broadcast down the rows)."""
    row = to_compute(bias.read_block(0, 0, 1, product.shape[1]), bias.dtype)
    return product + row.to(product.dtype)


def _operands(op: str, args: list, count: int) -> list[TileRef]:
    return [tile_arg(a, op=op, position=i) for i, a in enumerate(args[:count])]


def _checked(op: str, args: list, count: int, lhs_at: int) -> list[TileRef]:
    """The tile operands of a matmul-family call, dtypes checked (dst first, lhs at `lhs_at`)."""
    tiles = _operands(op, args, count)
    _check_pair(op, tiles[lhs_at], tiles[lhs_at + 1], MATMUL_IN)
    _accumulator_for(op, tiles[lhs_at], tiles[0])
    return tiles


def matmul(args: list, kwargs: dict) -> None:
    """`matmul(dst, lhs, rhs)`: dst = lhs @ rhs."""
    dst, lhs, rhs = _checked("block.matmul", args, 3, 1)
    _finish(dst, _product("block.matmul", lhs, rhs, reuse=dst.writes_now))


def matmul_acc(args: list, kwargs: dict) -> None:
    """`matmul_acc(dst, acc, lhs, rhs)`: dst = acc + lhs @ rhs."""
    dst, acc, lhs, rhs = _checked("block.matmul_acc", args, 4, 2)
    _accumulate(dst, acc, _product("block.matmul_acc", lhs, rhs, reuse=True))


def matmul_bias(args: list, kwargs: dict) -> None:
    """`matmul_bias(dst, lhs, rhs, bias)`: dst = lhs @ rhs + bias[0, :] (bias [1, N])."""
    dst, lhs, rhs, bias = _checked("block.matmul_bias", args, 4, 1)
    _finish(dst, _with_bias(_product("block.matmul_bias", lhs, rhs, reuse=True), bias))


def _matmul_step(args: list, kwargs: dict) -> Step | None:
    """`matmul` on a float plan: the product into its scratch, then written (an FP32 tile
    through its block views, else `_finish`)."""
    dst, lhs, rhs = args[:3]
    parts = _product_parts("block.matmul", lhs, rhs) if dst.writes_now else None
    if parts is None:
        return None
    result = parts[3]
    # FP32: `encode` gives the product itself, written through the block's views
    write = dst.write_step(result) if dst.dtype is DataType.FP32 else None
    if write is None:
        return _product_then(parts, functools.partial(_finish, dst, result))
    return _product_then(parts, write.run, write=write)


def _matmul_acc_step(args: list, kwargs: dict) -> Step | None:
    """`matmul_acc` on a float plan accumulating in place (`TileRef.add_step`)."""
    dst, acc, lhs, rhs = args[:4]
    parts = _product_parts("block.matmul_acc", lhs, rhs)
    if parts is None or acc.memory is not dst.memory or \
            not (acc.geometry is dst.geometry or acc.geometry == dst.geometry):
        return None
    add = dst.add_step(parts[3])
    return None if add is None else _product_then(parts, add.run, add=add)


def _mx_product(op: str, lhs: TileRef, rhs: TileRef, scale_a: TileRef,
                scale_b: TileRef) -> torch.Tensor:
    """sum_k lhs[m,k] 2^(sa[m,k/32]-127) rhs[k,n] 2^(sb[k/32,n]-127), exact in float64."""
    _check_pair(op, lhs, rhs, MX_IN)
    for scale in (scale_a, scale_b):
        if scale.dtype not in (DataType.FP8E8M0, DataType.UINT8):
            raise SimOpError(f"{op}: MX scales must be FP8E8M0, not {scale.dtype.value}")
    m, k = lhs.valid
    n = rhs.valid_cols
    groups = -(-k // MX_BLOCK)
    sa = decode_e8m0(scale_a.read_block(0, 0, m, groups).view(torch.uint8)).to(torch.float64)
    sb = decode_e8m0(scale_b.read_block(0, 0, groups, n).view(torch.uint8)).to(torch.float64)
    a = to_compute(lhs.read(), lhs.dtype).to(torch.float64)
    b = to_compute(rhs.read_block(0, 0, k, n), rhs.dtype).to(torch.float64)
    a = a * sa.repeat_interleave(MX_BLOCK, dim=1)[:, :k]
    b = b * sb.repeat_interleave(MX_BLOCK, dim=0)[:k]
    return a @ b


def matmul_mx(args: list, kwargs: dict) -> None:
    """`matmul_mx(dst, lhs, rhs, scale_a, scale_b)`."""
    dst, lhs, rhs, sa, sb = _operands("block.matmul_mx", args, 5)
    _finish(dst, _mx_product("block.matmul_mx", lhs, rhs, sa, sb))


def matmul_mx_acc(args: list, kwargs: dict) -> None:
    """`matmul_mx_acc(dst, acc, lhs, rhs, scale_a, scale_b)`: dst = acc + MX product."""
    dst, acc, lhs, rhs, sa, sb = _operands("block.matmul_mx_acc", args, 6)
    product = _mx_product("block.matmul_mx_acc", lhs, rhs, sa, sb)
    previous = to_compute(acc.read_block(0, 0, *product.shape), acc.dtype)
    _finish(dst, product + previous.to(torch.float64))


# ---------------------------------------------------------------- batches (`BATCH_IMPLS`)


def _batch_products(op: str, pairs: list[tuple[TileRef, TileRef]]) -> torch.Tensor | None:
    """lhs @ rhs of every (lhs, rhs) pair as [B, M, N] (float32 / exact float64), bit-identical
    to `_product` per pair; None when the batch is off the fast path (sizes or dtypes differ,
    a float product of unaligned shape, an operand without a storage view)."""
    lhs0, rhs0 = pairs[0]
    sizes = _sizes(op, lhs0, rhs0)
    for lhs, rhs in pairs:
        if lhs.dtype is not lhs0.dtype or rhs.dtype is not rhs0.dtype or \
                _sizes(op, lhs, rhs) != sizes:
            return None
    m, k, n = sizes
    if lhs0.dtype in INT_IN:  # exact: any summation order gives these values
        return torch.stack([_int_block(a, m, k) for a, _ in pairs]) @ \
            torch.stack([_int_block(b, k, n) for _, b in pairs])
    if m % ALIGNED or n % ALIGNED:
        return None
    transposed = all(_column_major(b) for _, b in pairs)
    a = _gathered([lhs for lhs, _ in pairs], (m, k), False)
    b = _gathered([rhs for _, rhs in pairs], (n, k) if transposed else (k, n), transposed)
    if a is None or b is None:
        return None
    return torch.bmm(a, b.transpose(1, 2) if transposed else b)


def _gathered(tiles: list[TileRef], shape: tuple[int, int], transposed: bool
              ) -> torch.Tensor | None:
    """Every tile's float32 block (`_storage_view` of logical shape `shape`, transposed: its
    transpose) in one [B, *shape] tensor; None when a tile has no storage view or the views
    differ in shape."""
    rows, cols = shape[::-1] if transposed else shape
    views = [_storage_view(tile, rows, cols, transposed) for tile in tiles]
    first = views[0]
    if first is None or any(v is None or v.shape != first.shape for v in views):
        return None
    out = torch.empty((len(views), *first.shape), dtype=torch.float32)
    for view, slot in zip(views, out.unbind(0)):
        slot.copy_(view)
    return out.view(len(views), *shape)


def _batch_matmul(calls: list[list], kwargs: dict) -> Writes | None:
    tiles = [_checked("block.matmul", args, 3, 1) for args in calls]
    products = _batch_products("block.matmul", [(lhs, rhs) for _, lhs, rhs in tiles])
    if products is None:
        return None
    return [(i, _finish, (t[0], products[i])) for i, t in enumerate(tiles)]


def _batch_matmul_acc(calls: list[list], kwargs: dict) -> Writes | None:
    tiles = [_checked("block.matmul_acc", args, 4, 2) for args in calls]
    products = _batch_products("block.matmul_acc", [(lhs, rhs) for *_, lhs, rhs in tiles])
    if products is None:
        return None
    return [(i, _accumulate, (t[0], t[1], products[i])) for i, t in enumerate(tiles)]


def _batch_matmul_bias(calls: list[list], kwargs: dict) -> Writes | None:
    tiles = [_checked("block.matmul_bias", args, 4, 1) for args in calls]
    products = _batch_products("block.matmul_bias", [(lhs, rhs) for _, lhs, rhs, _ in tiles])
    if products is None:
        return None
    return [(i, _finish, (t[0], _with_bias(products[i], t[3]))) for i, t in enumerate(tiles)]


IMPLS = {
    "block.matmul": matmul, "block.gemv": matmul,
    "block.matmul_acc": matmul_acc, "block.gemv_acc": matmul_acc,
    "block.matmul_bias": matmul_bias, "block.gemv_bias": matmul_bias,
    "block.matmul_mx": matmul_mx, "block.matmul_mx_acc": matmul_mx_acc,
}
STEPS = {"block.matmul": _matmul_step, "block.gemv": _matmul_step,
         "block.matmul_acc": _matmul_acc_step, "block.gemv_acc": _matmul_acc_step}
#: M·K·N from which a product runs at issue in the lockstep functional executor: a batch of
#: them computes no faster than one product per core (the arithmetic dominates) and runs after
#: every core's operand moves, when they have left the cache (the 2048^3 matmul's 128^3 K steps:
#: 1.86 s parked vs 1.65 s at issue; the mix's [64, 128] pieces gain from the batch)
LARGE_PRODUCT = 128 ** 3


def _large_product(lhs_at: int) -> Callable[[list], bool]:
    """`at_issue` of a product whose lhs is argument `lhs_at` (the rhs follows it)."""
    def at_issue(args: list) -> bool:
        lhs, rhs = args[lhs_at], args[lhs_at + 1]
        return isinstance(lhs, TileRef) and isinstance(rhs, TileRef) and \
            lhs.valid_rows * lhs.valid_cols * rhs.valid_cols >= LARGE_PRODUCT
    return at_issue


BATCH_IMPLS = {
    name: batched(IMPLS[name], compute, _large_product(lhs_at))
    for names, compute, lhs_at in ((("block.matmul", "block.gemv"), _batch_matmul, 1),
                                   (("block.matmul_acc", "block.gemv_acc"), _batch_matmul_acc, 2),
                                   (("block.matmul_bias", "block.gemv_bias"), _batch_matmul_bias,
                                    1))
    for name in names
}
