"""The operand checks of the cube ops (`pl.matmul`, `matmul_acc`, `matmul_mx`, `matmul_mx_acc`)
as the real op builders make them: each operand's memory space, and for the MX forms the K
axis, the output shape, the FP8 / FP4 dtype pairs and the scale tiles (FP8E8M0, one scale per 32
K elements, placed at the data tile's address >> 4, where `mad_mx` reads it).

The real builders raise a `ValueError` that the kernel parser re-raises as a
`ParserSyntaxError` "Failed to parse kernel function '<k>': ValueError: <check>"; so do we, at
the call's line.
"""
from __future__ import annotations

import ast
from typing import Any

from ...errors import NotSupported, PyptoError
from ...ir.dtype import DataType
from ...ir.types import MemorySpace, TileType
from .context import ParseContext

M = MemorySpace
D = DataType

#: operand roles of each op, in argument order (`matmul` with 4 operands carries a bias)
ROLES = {
    "matmul": ("dst", "lhs", "rhs", "bias"),
    "matmul_acc": ("dst", "acc", "lhs", "rhs"),
    "matmul_mx": ("dst", "lhs", "rhs", "scale_a", "scale_b"),
    "matmul_mx_acc": ("dst", "acc", "lhs", "rhs", "scale_a", "scale_b"),
}
_SPACE = {"dst": M.Acc, "acc": M.Acc, "lhs": M.Left, "rhs": M.Right, "bias": M.Bias}
_NAME = {"dst": "dst_tile", "acc": "acc_tile", "lhs": "lhs_tile", "rhs": "rhs_tile",
         "bias": "bias_tile"}
_LABEL = {M.Acc: "L0C (Acc)", M.Left: "L0A (Left)", M.Right: "L0B (Right)",
          M.Bias: "L0B (Bias)", M.ScaleLeft: "L0A (ScaleLeft)", M.ScaleRight: "L0B (ScaleRight)"}
_FP8 = (D.FP8E4M3FN, D.FP8E5M2)
_FP4 = (D.FP4E2M1, D.FP4E1M2)


def _rejected(ctx: ParseContext, node: ast.AST, message: str) -> PyptoError:
    return ctx.builder_error(message, node)


def _space(ctx: ParseContext, node: ast.AST, op: str, name: str, v: Any, want: M) -> None:
    t = getattr(v, "type", None)
    if not isinstance(t, TileType):
        raise _rejected(ctx, node, f"{op}: {name} must be a Tile")
    if t.memory is not want:
        raise _rejected(ctx, node, f"{op}: {name} must be in {_LABEL[want]}, got "
                                   f"{t.memory.value}")


def check_matmul(ctx: ParseContext, node: ast.Call, op: str, args: list[Any]) -> None:
    """Raise at `node` what the real builder of `op` rejects in `args`."""
    roles = dict(zip(ROLES[op], args))
    if "bias" in roles:
        op = "matmul_bias"  # the real parser's builder for four operands, named so
    for role, v in roles.items():
        if role in _SPACE:
            _space(ctx, node, op, _NAME[role], v, _SPACE[role])
    if not {"dst", "lhs", "rhs"} <= roles.keys() or \
            op.startswith("matmul_mx") and len(roles) < len(ROLES[op]):
        return  # short of operands: the signature's arity error, raised when the op is built
    if op.startswith("matmul_mx"):
        _check_mx(ctx, node, op, roles)
    else:
        _check_dtypes(ctx, node, roles)


#: the (lhs, rhs) dtypes a5's TMATMUL takes per accumulator dtype (pto-isa's static checks)
_PAIRS = {D.INT32: {(D.INT8, D.INT8)},
          D.FP32: {(D.FP16, D.FP16), (D.BF16, D.BF16), (D.FP32, D.FP32), (D.HF8, D.HF8)}
          | {(a, b) for a in _FP8 for b in _FP8}}


def _check_dtypes(ctx: ParseContext, node: ast.AST, r: dict[str, Any]) -> None:
    """The dtypes of a plain matmul that the real toolchain's C++ compile refuses (pto-isa's
    static_asserts, in their words): an accumulator that is not FP32 / INT32, an input pair
    that accumulator does not take, a bias whose dtype is not the accumulator's."""
    acc, lhs, rhs = r["dst"].type.dtype, r["lhs"].type.dtype, r["rhs"].type.dtype
    if acc not in _PAIRS:
        message = "Acc Type support int32_t or float."
    elif (lhs, rhs) not in _PAIRS[acc]:
        message = ("Left Type and Right Type must be int8_t when Acc Type is int32_t."
                   if acc is D.INT32 else "No supported data type combination.")
    elif "bias" in r and r["bias"].type.dtype is not acc:
        message = "No supported bias data type."
    else:
        return
    bias = f" with a {r['bias'].type.dtype.name} bias" if "bias" in r else ""
    raise ctx.error(NotSupported, f"matmul of {lhs.name} x {rhs.name} into {acc.name}{bias}: "
                                  f"{message}", node,
                    hint="a5's cube takes FP16 / BF16 / FP32 / FP8 / HF8 pairs into FP32, INT8 "
                         "into INT32, and a bias of the accumulator's dtype (move it from L1 "
                         "to Bias to convert it)")


def _check_mx(ctx: ParseContext, node: ast.AST, op: str, r: dict[str, Any]) -> None:
    dst, lhs, rhs = r["dst"].type, r["lhs"].type, r["rhs"].type
    lhs_k, rhs_k = lhs.shape[1], rhs.shape[0]
    if lhs_k != rhs_k:
        raise _rejected(ctx, node, f"{op}: lhs and rhs K dimensions must match, got lhs "
                                   f"K={lhs_k}, rhs K={rhs_k}.")
    for name, k in (("lhs", lhs_k), ("rhs", rhs_k)):
        if k % 64:
            raise _rejected(ctx, node, f"{op}: K dimension must be a multiple of 64 for MX "
                                       f"matmul, got {name} K={k}.")
    want = [lhs.shape[0], rhs.shape[1]]
    if list(dst.shape) != want:
        raise _rejected(ctx, node, f"{op}: dst_tile shape must be [lhs M, rhs N], expected "
                                   f"{want}, got {list(dst.shape)}.")
    if "acc" in r:
        acc = r["acc"].type
        if acc.shape != dst.shape:
            raise _rejected(ctx, node, f"{op}: acc_tile shape must match dst_tile shape, got "
                                       f"acc_tile={list(acc.shape)}, dst_tile="
                                       f"{list(dst.shape)}.")
        if acc.dtype is not D.FP32:
            raise _rejected(ctx, node, f"{op}: acc_tile must use FP32 dtype, got "
                                       f"{acc.dtype.name}.")
    _check_scale(ctx, node, op, r.get("scale_a"), lhs, left=True)
    _check_scale(ctx, node, op, r.get("scale_b"), rhs, left=False)
    pair = (lhs.dtype in _FP8 and rhs.dtype in _FP8) or (lhs.dtype in _FP4 and rhs.dtype in _FP4)
    if not pair or dst.dtype is not D.FP32:
        raise _rejected(ctx, node, f"{op}: (lhs,rhs) must be FP8/FP4 combo and dst FP32, got "
                                   f"({lhs.dtype.name},{rhs.dtype.name},{dst.dtype.name}).")


def _check_scale(ctx: ParseContext, node: ast.AST, op: str, scale: Any, data: TileType, *,
                 left: bool) -> None:
    """A scale tile holds one E8M0 exponent per 32 elements along K of its data tile, at the
    L0A / L0B MX address the hardware derives from the data tile's (address >> 4)."""
    name, data_name, axis = ("scale_a", "lhs_tile", 1) if left else ("scale_b", "rhs_tile", 0)
    if scale is None:
        raise _rejected(ctx, node, f"{op}: {name} is required")
    t = getattr(scale, "type", None)
    if not isinstance(t, TileType):
        raise _rejected(ctx, node, f"{op}: {name} must be a Tile")
    if t.dtype is not D.FP8E8M0:
        raise _rejected(ctx, node, f"{op}: {name} must use FP8E8M0 dtype, got {t.dtype.name}")
    _space(ctx, node, op, name, scale, M.ScaleLeft if left else M.ScaleRight)
    want = list(data.shape)
    want[axis] //= 32
    if list(t.shape) != want:
        raise _rejected(ctx, node, f"{op}: {name} shape must match {data_name} MX groups, "
                                   f"expected {want} for {data_name} shape {list(data.shape)}, "
                                   f"got {list(t.shape)}.")
    if data.addr is None or t.addr is None:  # a slot chosen at run time: not provable here
        return
    if t.addr != data.addr >> 4:
        raise _rejected(ctx, node, f"{op}: {name} address must equal {data_name} address >> 4, "
                                   f"got {data_name}=0x{data.addr:X}, expected "
                                   f"{name}=0x{data.addr >> 4:X}, actual {name}=0x{t.addr:X}.")
