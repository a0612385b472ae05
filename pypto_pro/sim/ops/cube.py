"""Cube ops (pipe M): `matmul`, `matmul_acc`, `matmul_bias`, the `gemv` variants and the
microscaling `matmul_mx`, `matmul_mx_acc`.

Shapes come from the valid windows: M = lhs valid rows, K = lhs valid cols, N = rhs valid cols.
Dtype paths [INI950 Intrinsic_mmad]: FP16/BF16/FP32 -> FP32, INT8/INT4 -> INT32, FP8 E4M3/E5M2
(any pairing) and HiF8 x HiF8 -> FP32; MX: FP8/FP4 operands with one E8M0 scale per 32
consecutive K elements (lhs scale [M, K/32] in ScaleLeft, rhs scale [K/32, N] in ScaleRight).
Products are computed in float32 (exact for <= 12-bit significands: FP16/BF16/FP8 inputs, fp32
accumulation; CPU fp16 matmul would be far slower), FP32 x FP32 in float32, integer and MX ones
in float64 (exact), then rounded once into the accumulator dtype.
"""
from __future__ import annotations

import torch

from pypto_pro.ir.dtype import DataType

from ..memory import TileRef
from . import SimOpError
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


def _product(op: str, lhs: TileRef, rhs: TileRef) -> torch.Tensor:
    """lhs[M, K] @ rhs[K, N] over the valid windows, float32 or exact float64."""
    m, k = lhs.valid
    n = rhs.valid_cols
    if rhs.valid_rows < k:
        raise SimOpError(f"{op}: lhs valid K {k} exceeds rhs valid rows {rhs.valid_rows}")
    if lhs.dtype in INT_IN:
        a = to_compute(lhs.read(), lhs.dtype)
        b = to_compute(rhs.read_block(0, 0, k, n), rhs.dtype)
        return a.to(torch.float64) @ b.to(torch.float64)
    return _float32_block(lhs, m, k) @ _float32_block(rhs, k, n)


def _float32_block(tile: TileRef, rows: int, cols: int) -> torch.Tensor:
    """The top-left block of a float operand as float32 values (one copy for the types whose
    values are a plain cast of their storage)."""
    if tile.dtype in _CAST_TO_FLOAT32:
        return tile.read_block_as(0, 0, rows, cols, torch.float32)
    return to_compute(tile.read_block(0, 0, rows, cols), tile.dtype).to(torch.float32)


def _finish(dst: TileRef, result: torch.Tensor) -> None:
    if dst.dtype is DataType.INT32:
        result = torch.round(result).to(torch.int64)
    dst.write(encode(dst.dtype, result), offset=(0, 0))


def _operands(op: str, args: list, count: int) -> list[TileRef]:
    return [tile_arg(a, op=op, position=i) for i, a in enumerate(args[:count])]


def matmul(args: list, kwargs: dict) -> None:
    """`matmul(dst, lhs, rhs)`: dst = lhs @ rhs."""
    dst, lhs, rhs = _operands("block.matmul", args, 3)
    _check_pair("block.matmul", lhs, rhs, MATMUL_IN)
    _accumulator_for("block.matmul", lhs, dst)
    _finish(dst, _product("block.matmul", lhs, rhs))


def matmul_acc(args: list, kwargs: dict) -> None:
    """`matmul_acc(dst, acc, lhs, rhs)`: dst = acc + lhs @ rhs."""
    dst, acc, lhs, rhs = _operands("block.matmul_acc", args, 4)
    _check_pair("block.matmul_acc", lhs, rhs, MATMUL_IN)
    _accumulator_for("block.matmul_acc", lhs, dst)
    product = _product("block.matmul_acc", lhs, rhs)
    if acc.memory is dst.memory and (acc.geometry is dst.geometry or acc.geometry == dst.geometry) \
            and dst.add_from(product):
        return  # dst is acc: accumulated in place
    previous = to_compute(acc.read_block(0, 0, *product.shape), acc.dtype)
    _finish(dst, product + previous.to(product.dtype))


def matmul_bias(args: list, kwargs: dict) -> None:
    """`matmul_bias(dst, lhs, rhs, bias)`: dst = lhs @ rhs + bias[0, :] (bias [1, N])."""
    dst, lhs, rhs, bias = _operands("block.matmul_bias", args, 4)
    _check_pair("block.matmul_bias", lhs, rhs, MATMUL_IN)
    _accumulator_for("block.matmul_bias", lhs, dst)
    product = _product("block.matmul_bias", lhs, rhs)
    row = to_compute(bias.read_block(0, 0, 1, product.shape[1]), bias.dtype)
    _finish(dst, product + row.to(product.dtype))


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


IMPLS = {
    "block.matmul": matmul, "block.gemv": matmul,
    "block.matmul_acc": matmul_acc, "block.gemv_acc": matmul_acc,
    "block.matmul_bias": matmul_bias, "block.gemv_bias": matmul_bias,
    "block.matmul_mx": matmul_mx, "block.matmul_mx_acc": matmul_mx_acc,
}
