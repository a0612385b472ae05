"""Element-wise vector ops (pipe V): binary tile-tile and tile-scalar, unary, fills, ternary
ops (`addc` & co., `axpy`) and the partial (tail) ops `part*` (the fused ops the real code
generator lowers through their first input are in `fused`).

Every op iterates over the destination's valid window (pto-isa convention) and reads each tile
operand's block of the same shape. Float math is done in float32 and rounded once into the
output dtype (exact for + - * / and sqrt of FP16/BF16 inputs); integer math in int64, wrapped
two's-complement into the output dtype. Scalars are first rounded to the tile dtype, as the
hardware receives them. The binary ops in `NATIVE` on FP16/BF16 tiles run in the storage dtype
instead, which gives the same bits faster (torch widens each element to float32 and rounds once:
the same computation); a NaN result falls back to the float32 path, whose NaN bits may differ.
Those ops (and the same ops on FP32 tiles) write their result straight into the output's buffer
(`TileRef.compute_target`) when no operand overlaps it in a way that would change what they read.
FP32 unary ops with an `out=` form do the same. `BATCH_IMPLS` run the binary, tile-scalar and
unary ops for many cores: those in-place ones per core (they are memory-bound), the others
with one computation on the stacked operands (`batching`).
"""
from __future__ import annotations

import math
from collections.abc import Callable

import torch

from pypto_pro.ir.dtype import DataType

from ..model.memory import TileRef
from ..step import Step
from . import SimOpError, batching
from .batching import Writes, batched, column, per_call, stack_blocks, tile_writes
from .numerics import float_to_stored, to_compute, wrap_int
from .operands import encode, require_dtype, require_same_dtype, store, tile_arg

FLOATS = (DataType.FP16, DataType.BF16, DataType.FP32)
INTS = (DataType.INT8, DataType.INT16, DataType.INT32, DataType.INT64, DataType.UINT8,
        DataType.UINT16, DataType.UINT32, DataType.UINT64)
NUMERIC = FLOATS + INTS
Binary = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
_SCALARS: dict[tuple, torch.Tensor] = {}  # `scalar_in_dtype` results
_SCALARS_MAX = 4096


def block_values(tile: TileRef, shape: tuple[int, int]) -> torch.Tensor:
    """The top-left `shape` block of `tile` as compute values (the destination's window)."""
    return to_compute(tile.read_block(0, 0, *shape), tile.dtype)


def block_operand(tile: TileRef, shape: tuple[int, int]) -> torch.Tensor:
    """`block_values`, possibly a view of the tile's buffer: only for an op whose result is a
    new tensor (the engine writes it at the instruction's end; no snapshot copy is needed)."""
    return to_compute(tile.peek_block(0, 0, *shape), tile.dtype)


def scalar_in_dtype(value: float | int, dtype: DataType) -> torch.Tensor:
    """A scalar operand rounded (float) or wrapped (int) to `dtype`, as a 0-d compute tensor.
    Memoised (a kernel applies the same immediates on every iteration): the result is shared,
    never write to it."""
    sign = math.copysign(1.0, value) if isinstance(value, float) else 0.0  # -0.0 == 0.0
    key = (type(value), value, sign, dtype._value_)
    got = _SCALARS.get(key)
    if got is None:
        if len(_SCALARS) >= _SCALARS_MAX:  # runtime scalars: keep the table small
            _SCALARS.clear()
        if dtype.is_float:
            got = to_compute(float_to_stored(torch.tensor([float(value)]), dtype), dtype)[0]
        else:
            got = to_compute(wrap_int(torch.tensor([int(value)]), dtype), dtype)[0]
        _SCALARS[key] = got
    return got


def integer_div(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Integer quotients truncated toward zero (a zero divisor, undefined on the hardware by
    the docs, gives 0)."""
    safe = torch.where(b == 0, 1, b)
    return torch.where(b == 0, 0, torch.div(a, safe, rounding_mode="trunc"))


def _div(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return a / b if a.is_floating_point() else integer_div(a, b)


def _rem(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    if a.is_floating_point():
        return torch.fmod(a, b)
    safe = torch.where(b == 0, 1, b)
    return torch.where(b == 0, 0, torch.fmod(a, safe))


def _shift_left(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.where((b >= 0) & (b < 64), a << b.clamp(0, 63), 0)


def _shift_right(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return a >> b.clamp(0, 63)


#: name -> (function, allowed dtypes)
BINARY: dict[str, tuple[Binary, tuple[DataType, ...]]] = {
    "add": (torch.add, NUMERIC),
    "sub": (torch.sub, NUMERIC),
    "mul": (torch.mul, NUMERIC),
    "div": (_div, NUMERIC),
    "maximum": (torch.maximum, NUMERIC),
    "minimum": (torch.minimum, NUMERIC),
    "and": (torch.bitwise_and, INTS),
    "or": (torch.bitwise_or, INTS),
    "xor": (torch.bitwise_xor, INTS),
    "shl": (_shift_left, INTS),
    "shr": (_shift_right, INTS),
    "rem": (_rem, NUMERIC),
}
#: binary ops computed in the FP16/BF16 storage dtype (module docstring), as `out=` functions
NATIVE = {"add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div,
          "maximum": torch.maximum, "minimum": torch.minimum}
NATIVE_DTYPES = (DataType.FP16, DataType.BF16)
#: tile-scalar op -> the binary it applies with the scalar on the right
SCALAR = {"adds": "add", "subs": "sub", "muls": "mul", "divs": "div", "maxs": "maximum",
          "mins": "minimum", "ands": "and", "ors": "or", "xors": "xor", "shls": "shl",
          "shrs": "shr", "rems": "rem"}


def _apply_binary(name: str, out: TileRef, lhs: TileRef, rhs: TileRef | torch.Tensor) -> None:
    """out = BINARY[name](lhs, rhs) over out's valid window; `rhs` a tile or a 0-d scalar from
    `scalar_in_dtype`."""
    shape = out.valid
    native = NATIVE.get(name)
    dtype = out.dtype
    if native is not None and (dtype is DataType.FP32 or dtype in NATIVE_DTYPES):
        a = lhs.peek_block(0, 0, *shape)
        scalar = isinstance(rhs, torch.Tensor)
        b = rhs if scalar else rhs.peek_block(0, 0, *shape)
        sources = (lhs,) if scalar else (lhs, rhs)
        if dtype is DataType.FP32:  # storage = compute dtype: the float32 path, in place
            target = out.compute_target(sources, same_ok=True)
            if target is not None:
                native(a, b, out=target)
                return
        else:
            # the sources stay intact for the NaN fallback below
            target = out.compute_target(sources, same_ok=False)
            result = native(a, b) if target is None else native(a, b, out=target)
            # a NaN makes the max NaN (infinities have the same bits on both paths); a max
            # costs a small fraction of an isnan mask on FP16
            if not result.numel() or not math.isnan(result.max().item()):
                if target is None:
                    out.write(result)
                return
    _float32_binary(name, out, lhs, rhs)


def _float32_binary(name: str, out: TileRef, lhs: TileRef, rhs: TileRef | torch.Tensor) -> None:
    """`_apply_binary` computed in float32 / int64 and stored (the general path)."""
    shape = out.valid
    b = rhs if isinstance(rhs, torch.Tensor) else block_operand(rhs, shape)
    store(out, BINARY[name][0](block_operand(lhs, shape), b))


def _binary_step(name: str, out: TileRef, lhs: TileRef, rhs: TileRef | torch.Tensor
                 ) -> Step | None:
    """`_apply_binary`'s native path with the operands' buffer views bound (FP16/BF16: the NaN
    check and its fallback included); None when the op takes the general path or an operand
    block is no view."""
    native = NATIVE.get(name)
    dtype = out.dtype
    if native is None or not (dtype is DataType.FP32 or dtype in NATIVE_DTYPES) or \
            not out.writes_now:
        return None
    shape = out.valid
    scalar = isinstance(rhs, torch.Tensor)
    a = lhs.peek_view(0, 0, *shape)
    b = rhs if scalar else rhs.peek_view(0, 0, *shape)
    if a is None or b is None:
        return None
    fp32 = dtype is DataType.FP32
    target = out.compute_target((lhs,) if scalar else (lhs, rhs), same_ok=fp32)
    if target is not None:
        mark = out.written_marker()
        if fp32:
            def in_place() -> None:
                native(a, b, out=target)
                mark()
            return Step(in_place)
    elif fp32:
        return None

    def step() -> None:  # (FP16/BF16)
        result = native(a, b) if target is None else native(a, b, out=target)
        if not result.numel() or not math.isnan(result.max().item()):
            if target is None:
                out.write(result)
            else:
                mark()
            return
        _float32_binary(name, out, lhs, rhs)
    return Step(step)


def _checked_tiles(op: str, args: list, count: int, allowed: tuple[DataType, ...]
                   ) -> tuple[TileRef, ...]:
    """args[:count] (2 or 3) as tiles of one dtype, the output's (args[0]) among `allowed`."""
    out, src = tile_arg(args[0], op=op, position=0), tile_arg(args[1], op=op, position=1)
    tiles = (out, src) if count == 2 else (out, src, tile_arg(args[2], op=op, position=2))
    require_same_dtype(op, *tiles)
    require_dtype(op, (out,), allowed)
    return tiles


def _binary_impl(name: str) -> Callable[[list, dict], None]:
    allowed = BINARY[name][1]
    op = f"block.{name}"

    def impl(args: list, kwargs: dict) -> None:
        out, lhs, rhs = _checked_tiles(op, args, 3, allowed)
        _apply_binary(name, out, lhs, rhs)
    return impl


def _scalar_impl(name: str) -> Callable[[list, dict], None]:
    allowed = BINARY[SCALAR[name]][1]
    op = f"block.{name}"

    def impl(args: list, kwargs: dict) -> None:
        out, src = _checked_tiles(op, args, 2, allowed)
        _apply_binary(SCALAR[name], out, src, scalar_in_dtype(args[2], src.dtype))
    return impl


def _binary_step_of(name: str) -> Callable[[list, dict], Step | None]:
    def step(args: list, kwargs: dict) -> Step | None:
        return _binary_step(name, args[0], args[1], args[2])
    return step


def _scalar_step_of(name: str) -> Callable[[list, dict], Step | None]:
    def step(args: list, kwargs: dict) -> Step | None:
        return _binary_step(SCALAR[name], args[0], args[1],
                            scalar_in_dtype(args[2], args[1].dtype))
    return step


def _native_in_place(name: str, out: object) -> bool:
    """A large tile of a native op's dtype: memory-bound, run per core (`batching.LARGE`)."""
    return name in NATIVE and batching.large(out) and (
        out.dtype is DataType.FP32 or out.dtype in NATIVE_DTYPES)


def _binary_writes(name: str, calls: list[list], b: torch.Tensor | None) -> Writes | None:
    """`_apply_binary` of every call (`b`: the 0-d compute scalar of a tile-scalar op, None
    for tile-tile): on large tiles of the native dtypes each call on its own operands (in
    place where it can: a per-call step, `batching`), else once on the stacked operands."""
    outs = column(calls, 0)
    out = outs[0]
    dtype = out.dtype
    if _native_in_place(name, out):
        return [(i, _apply_binary, (name, args[0], args[1], args[2] if b is None else b))
                for i, args in enumerate(calls)]
    a = stack_blocks(column(calls, 1), out.valid)
    if b is None:
        b = stack_blocks(column(calls, 2), out.valid)
    native = NATIVE.get(name)
    if native is not None and (dtype is DataType.FP32 or dtype in NATIVE_DTYPES):
        result = native(a, b)
        if dtype is not DataType.FP32 and result.numel() and math.isnan(result.max().item()):
            return None  # the per-core path decides per core (module docstring)
        return tile_writes(outs, result)
    b = b if b.dim() == 0 else to_compute(b, dtype)
    return tile_writes(outs, encode(dtype, BINARY[name][0](to_compute(a, dtype), b)))


def _binary_batch(name: str) -> Callable[[list[list], dict], Writes | None]:
    allowed = BINARY[name][1]
    op = f"block.{name}"

    def compute(calls: list[list], kwargs: dict) -> Writes | None:
        _checked_tiles(op, calls[0], 3, allowed)
        return _binary_writes(name, calls, None)
    return compute


def _scalar_batch(name: str) -> Callable[[list[list], dict], Writes | None]:
    allowed = BINARY[SCALAR[name]][1]
    op = f"block.{name}"

    def compute(calls: list[list], kwargs: dict) -> Writes | None:
        src = _checked_tiles(op, calls[0], 2, allowed)[1]
        return _binary_writes(SCALAR[name], calls, scalar_in_dtype(calls[0][2], src.dtype))
    return compute


UNARY: dict[str, tuple[Callable[[torch.Tensor], torch.Tensor], tuple[DataType, ...]]] = {
    "neg": (torch.neg, FLOATS + INTS),
    "abs": (torch.abs, FLOATS + INTS),
    "exp": (torch.exp, FLOATS),
    "log": (torch.log, FLOATS),
    "sqrt": (torch.sqrt, FLOATS),
    "rsqrt": (torch.rsqrt, FLOATS),
    "recip": (torch.reciprocal, FLOATS),
    "relu": (torch.relu, FLOATS + INTS),
    "not": (torch.bitwise_not, INTS),
}


#: unary ops with an `out=` form, run in place on FP32 tiles (storage = compute dtype)
IN_PLACE_UNARY = {"neg", "abs", "exp", "log", "sqrt", "rsqrt", "recip"}


def _unary_impl(name: str) -> Callable[[list, dict], None]:
    fn, allowed = UNARY[name]
    op = f"block.{name}"
    in_place = name in IN_PLACE_UNARY

    def impl(args: list, kwargs: dict) -> None:
        out, src = _checked_tiles(op, args, 2, allowed)
        if in_place and out.dtype is DataType.FP32:
            target = out.compute_target((src,), same_ok=True)
            if target is not None:
                fn(src.peek_block(0, 0, *out.valid), out=target)
                return
        store(out, fn(block_operand(src, out.valid)))
    return impl


def _unary_step_of(name: str) -> Callable[[list, dict], Step | None]:
    """The in-place FP32 path of the unary impl with its views bound (None: another path)."""
    fn = UNARY[name][0]

    def step(args: list, kwargs: dict) -> Step | None:
        out, src = args[0], args[1]
        if name not in IN_PLACE_UNARY or out.dtype is not DataType.FP32:
            return None
        view = src.peek_view(0, 0, *out.valid)
        target = None if view is None else out.compute_target((src,), same_ok=True)
        if target is None:
            return None
        mark = out.written_marker()

        def in_place() -> None:
            fn(view, out=target)
            mark()
        return Step(in_place)
    return step


def _unary_in_place(name: str, out: object) -> bool:
    """A large FP32 output: memory-bound, run per core (`batching.LARGE`)."""
    return name in IN_PLACE_UNARY and batching.large(out) and out.dtype is DataType.FP32


def _unary_batch(name: str) -> Callable[[list[list], dict], Writes | None]:
    fn, allowed = UNARY[name]
    op = f"block.{name}"

    def compute(calls: list[list], kwargs: dict) -> Writes | None:
        out = _checked_tiles(op, calls[0], 2, allowed)[0]
        if _unary_in_place(name, out):  # memory-bound: each core in place
            return per_call(IMPLS[op], calls, kwargs)
        src = to_compute(stack_blocks(column(calls, 1), out.valid), out.dtype)
        return tile_writes(column(calls, 0), encode(out.dtype, fn(src)))
    return compute


def expands(args: list, kwargs: dict) -> None:
    """`expands(out, scalar)` / `full`: every valid element = scalar."""
    out = tile_arg(args[0], op="block.expands", position=0)
    require_dtype("block.expands", (out,), NUMERIC)
    store(out, scalar_in_dtype(args[1], out.dtype).expand(out.valid))


def fill_index(args: list, kwargs: dict) -> None:
    """`fill_index(out, start)`: start, start+1, ... over the row-flattened valid window."""
    out = tile_arg(args[0], op="block.fill_index", position=0)
    require_dtype("block.fill_index", (out,), NUMERIC)
    count = out.valid_rows * out.valid_cols
    ramp = scalar_in_dtype(args[1], out.dtype) + torch.arange(count)
    store(out, ramp.reshape(out.valid).to(torch.float32 if out.dtype.is_float else torch.int64))


def _ternary(op: str, args: list, count: int) -> tuple[TileRef, list[torch.Tensor]]:
    """The output tile (args[0]) and `count` tile operands from args[1:] on its window."""
    tiles = [tile_arg(a, op=op, position=i) for i, a in enumerate(args[:count + 1])]
    require_same_dtype(op, *tiles)
    require_dtype(op, tiles[:1], NUMERIC)
    return tiles[0], [block_values(t, tiles[0].valid) for t in tiles[1:]]


def addc(args: list, kwargs: dict) -> None:
    """`addc(out, a, b, c)` = a + b + c."""
    out, (a, b, c) = _ternary("block.addc", args, 3)
    store(out, a + b + c)


def subc(args: list, kwargs: dict) -> None:
    """`subc(out, a, b, c)` = a - b + c (pto-isa TSUBC)."""
    out, (a, b, c) = _ternary("block.subc", args, 3)
    store(out, a - b + c)


def addsc(args: list, kwargs: dict) -> None:
    """`addsc(out, a, scalar, c)` = a + scalar + c."""
    out, (a,) = _ternary("block.addsc", args, 1)
    c = block_values(tile_arg(args[3], op="block.addsc", position=3), out.valid)
    store(out, a + scalar_in_dtype(args[2], out.dtype) + c)


def subsc(args: list, kwargs: dict) -> None:
    """`subsc(out, a, scalar, c)` = a - scalar + c."""
    out, (a,) = _ternary("block.subsc", args, 1)
    c = block_values(tile_arg(args[3], op="block.subsc", position=3), out.valid)
    store(out, a - scalar_in_dtype(args[2], out.dtype) + c)


def axpy(args: list, kwargs: dict) -> None:
    """`axpy(out, src, alpha)`: out = alpha * src + out, alpha in src's dtype (pto-isa TAXPY
    takes it as `TileDataSrc::DType`); an FP16 src into an FP32 out is the widening form."""
    op = "block.axpy"
    out, src = tile_arg(args[0], op=op, position=0), tile_arg(args[1], op=op, position=1)
    if (out.dtype, src.dtype) != (DataType.FP32, DataType.FP16):
        require_same_dtype(op, out, src)
    require_dtype(op, (out,), FLOATS)
    alpha = scalar_in_dtype(args[2], src.dtype)
    store(out, alpha * block_values(src, out.valid) + block_values(out, out.valid))


PART = {"partadd": torch.add, "partmax": torch.maximum, "partmin": torch.minimum,
        "partmul": torch.mul}


def _part_impl(name: str) -> Callable[[list, dict], None]:
    fn, op = PART[name], f"block.{name}"

    def impl(args: list, kwargs: dict) -> None:
        out, src0, src1 = (tile_arg(a, op=op, position=i) for i, a in enumerate(args[:3]))
        require_same_dtype(op, out, src0, src1)
        require_dtype(op, (out,), NUMERIC)
        if out.valid not in (src0.valid, src1.valid):
            raise SimOpError(f"{op}: one source's valid shape must equal the output's "
                             f"{list(out.valid)} (got {list(src0.valid)}, {list(src1.valid)})")
        rows = torch.arange(out.valid_rows)[:, None]
        cols = torch.arange(out.valid_cols)[None, :]
        in0 = (rows < src0.valid_rows) & (cols < src0.valid_cols)
        in1 = (rows < src1.valid_rows) & (cols < src1.valid_cols)
        a, b = _clipped(src0, out.valid), _clipped(src1, out.valid)
        result = torch.where(in0 & in1, fn(a, b), torch.where(in0, a, b))
        store(out, result)
    return impl


def _clipped(tile: TileRef, shape: tuple[int, int]) -> torch.Tensor:
    """Values of `tile` over `shape`, zero beyond the tile's own valid window."""
    block = torch.zeros(shape, dtype=torch.float32 if tile.dtype.is_float else torch.int64)
    rows, cols = min(tile.valid_rows, shape[0]), min(tile.valid_cols, shape[1])
    block[:rows, :cols] = block_values(tile, (rows, cols))
    return block


IMPLS = {
    **{f"block.{n}": _binary_impl(n) for n in BINARY},
    **{f"block.{n}": _scalar_impl(n) for n in SCALAR},
    **{f"block.{n}": _unary_impl(n) for n in UNARY},
    **{f"block.{n}": _part_impl(n) for n in PART},
    "block.expands": expands, "block.full": expands, "block.fill_index": fill_index,
    "block.addc": addc, "block.subc": subc, "block.addsc": addsc, "block.subsc": subsc,
    "block.axpy": axpy,
}

STEPS = {
    **{f"block.{n}": _binary_step_of(n) for n in NATIVE},
    **{f"block.{n}": _scalar_step_of(n) for n, binary in SCALAR.items() if binary in NATIVE},
    **{f"block.{n}": _unary_step_of(n) for n in IN_PLACE_UNARY},
}

BATCH_IMPLS = {
    **{f"block.{n}": batched(IMPLS[f"block.{n}"], _binary_batch(n),
                             lambda args, n=n: _native_in_place(n, args[0])) for n in BINARY},
    **{f"block.{n}": batched(IMPLS[f"block.{n}"], _scalar_batch(n),
                             lambda args, n=n: _native_in_place(SCALAR[n], args[0]))
       for n in SCALAR},
    **{f"block.{n}": batched(IMPLS[f"block.{n}"], _unary_batch(n),
                             lambda args, n=n: _unary_in_place(n, args[0])) for n in UNARY},
}
