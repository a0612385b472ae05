"""Data movement: `load` (MTE2), `store`/`store_fp` (MTE3 from UB, FIX from L0C), `move`,
`move_fp` and `insert` between on-chip tiles, `ub_copy`, `init_output`, and the scalar
element access `getval`/`setval`.

Loads and stores move the tile's valid window; layouts (ND <-> NZ, DN, ...) are converted for
free because tiles are read and written logically. Tile and GM element sizes must match (bits
are reinterpreted when the dtypes differ but the sizes agree). Paths out of L0C go through the
fixpipe (`fixpipe.convert`). Every op reads all its operands before writing anything.
`BATCH_IMPLS` run many cores' loads, stores and on-chip moves with the checks done once
(`batching`; paths out of L0C stay per core); being one copy per core whatever the batch, the
functional engine runs them at issue (`batching.always`).
"""
from __future__ import annotations

from collections.abc import Sequence

import torch

from pypto_pro.ir.types import MemorySpace, TileLayout

from ..model.memory import GMRef, MxAxes, TileRef, storage_dtype
from ..step import Step
from . import SimOpError
from .batching import Writes, always, batched
from .fixpipe import block_scale, convert, passes_bits
from .numerics import RoundMode, to_compute
from .operands import AccToVecMode, AtomicType, encode, enum_arg, gm_arg, tile_arg


def _as_tile_dtype(data: torch.Tensor, source, tile: TileRef, op: str) -> torch.Tensor:
    """`data` (stored as `source`'s dtype) reinterpreted for `tile` (element sizes must match)."""
    if source is tile.dtype:
        return data
    if source.bits != tile.dtype.bits:
        raise SimOpError(f"{op}: element sizes differ ({source.value} vs {tile.dtype.value})")
    if source.bits == 4:
        return data
    return data.contiguous().view(storage_dtype(tile.dtype))


_PLAIN_VIEW = {"transpose": False, "axes": None}  # (read only: callers unpack it)


def _gm_view(kwargs: dict) -> dict:
    """Window kwargs for GMRef: `tile_dims` (tensor axes of tile rows/cols), `is_transpose`;
    an MX scale load (`mx_scale` "A": K groups along the tile's cols, "B": its rows) reads
    through `MxAxes`."""
    if not kwargs:  # the usual load or store
        return _PLAIN_VIEW
    dims = kwargs.get("tile_dims")
    mx = kwargs.get("mx_scale")
    if mx is not None:
        return {"transpose": False, "axes": MxAxes(int(dims[0]), int(dims[1]),
                                                   1 if mx == "A" else 0)}
    return {"transpose": bool(kwargs.get("is_transpose", False)) and not dims,  # dims win
            "axes": (int(dims[0]), int(dims[1])) if dims else None}


def load(args: list, kwargs: dict) -> None:
    """`load(dst_tile, src_gm, offsets)`: the tile's valid window from GM at `offsets`."""
    op = "block.load"
    dst, src = tile_arg(args[0], op=op, position=0), gm_arg(args[1], op=op, position=1)
    step = _load_step(args, kwargs)
    if step is None:
        dst.write(_loaded(dst, src, args[2], _gm_view(kwargs)))
    else:
        step.run()


def _load_step(args: list, kwargs: dict) -> Step | None:
    """A load's one copy out of GM (`TileRef.load_step`), None when it takes `_loaded`."""
    offsets = args[2]
    if type(offsets) not in (list, tuple):
        return None
    view = _gm_view(kwargs)
    return args[0].load_step(args[1], offsets, view["transpose"], view["axes"])


def _loaded(dst: TileRef, src: GMRef, offsets: object, view: dict) -> torch.Tensor:
    """The GM window a load writes into `dst`, as `dst`'s dtype."""
    # memory.WRITES_NOW, LATE_SNAPSHOT: a view when nothing can write GM before it is used
    read = src.peek_window if dst.writes_now or dst.late_snapshot else src.read_window
    window = read(_offsets(offsets), *dst.valid, **view)
    if type(view["axes"]) is MxAxes:
        window = view["axes"].unpack(window, *dst.valid)
    return _as_tile_dtype(window, src.dtype, dst, "block.load")


def _load_batch(calls: list[list], kwargs: dict) -> Writes:
    """Every call's window, then the writes (a load batch never writes GM, so the views it
    reads stay as they were)."""
    tile_arg(calls[0][0], op="block.load", position=0)
    gm_arg(calls[0][1], op="block.load", position=1)
    view = _gm_view(kwargs)
    return [(i, dst.write, (_loaded(dst, src, offsets, view),))
            for i, (dst, src, offsets) in enumerate(calls)]


def _offsets(value: object) -> list[int]:
    # list and tuple first: they are the usual offsets, and an ABC check is slow
    return [int(v) for v in value] if isinstance(value, (list, tuple, Sequence)) \
        else [int(value)]


def _atomic(op: str, kwargs: dict) -> bool:
    return enum_arg(kwargs.get("atomic"), AtomicType, AtomicType.AtomicNone,
                    op=op) is AtomicType.AtomicAdd


def _to_gm(op: str, dst: GMRef, data: torch.Tensor, offsets: list[int], kwargs: dict) -> None:
    view = _gm_view(kwargs)
    if _atomic(op, kwargs):
        dst.atomic_add_window(offsets, data, **view)
    else:
        dst.write_window(offsets, data, **view)


def store(args: list, kwargs: dict) -> None:
    """`store(dst_gm, src_tile, offsets[, deq_scalar])`: valid window to GM (fixpipe from Acc)."""
    op = "block.store"
    dst, src = gm_arg(args[0], op=op, position=0), tile_arg(args[1], op=op, position=1)
    if src.space is MemorySpace.Acc:
        scale = block_scale(kwargs, args[3] if len(args) > 3 else None)
        data = convert(src, (0, 0, *src.valid), dst.dtype, kwargs, scale)
    else:
        data = _stored(dst, src)
    _to_gm(op, dst, data, _offsets(args[2]), kwargs)


def _stored(dst: GMRef, src: TileRef) -> torch.Tensor:
    """The valid window of on-chip tile `src` as `dst`'s dtype."""
    data = src.peek_block(0, 0, *src.valid) if dst.writes_now else src.read()
    if dst.dtype is not src.dtype and dst.dtype.bits != src.dtype.bits:
        raise SimOpError(f"block.store: element sizes differ ({src.dtype.value} vs "
                         f"{dst.dtype.value})")
    return data if dst.dtype is src.dtype or dst.dtype.bits == 4 else \
        data.contiguous().view(storage_dtype(dst.dtype))


def _store_step(args: list, kwargs: dict) -> Step | None:
    """A store of a tile's valid window as it is stored (the same dtype; from Acc: a fixpipe
    passing the bits) into its GM window (a view): one copy (`TileRef.read_step`); None for
    the other paths."""
    dst, src = args[0], args[1]
    if len(args) > 3 or dst.dtype is not src.dtype or not dst.writes_now or \
            _atomic("block.store", kwargs) or (src.space is MemorySpace.Acc and not passes_bits(
                src, dst.dtype, kwargs, block_scale(kwargs))):
        return None
    view = _gm_view(kwargs)
    window = dst.window_view(_offsets(args[2]), *src.valid, view["transpose"], view["axes"])
    return None if window is None else src.read_step(window)


def _store_batch(calls: list[list], kwargs: dict) -> Writes | None:
    """Every call's data, then the GM writes in call order (the last of overlapping windows
    wins, as in the loop). Acc sources (the fixpipe) and dequant scalars stay per core."""
    first = calls[0]
    gm_arg(first[0], op="block.store", position=0)
    if tile_arg(first[1], op="block.store", position=1).space is MemorySpace.Acc or \
            len(first) > 3:
        return None
    view = _gm_view(kwargs)
    atomic = _atomic("block.store", kwargs)
    return [(i, dst.atomic_add_window if atomic else dst.write_window,
             (_offsets(offsets), _stored(dst, src), view["transpose"], view["axes"]))
            for i, (dst, src, offsets) in enumerate(calls)]


def store_fp(args: list, kwargs: dict) -> None:
    """`store_fp(dst_gm, src_acc, offsets, scale_tile)`: per-channel quantised store."""
    op = "block.store_fp"
    dst, src = gm_arg(args[0], op=op, position=0), tile_arg(args[1], op=op, position=1)
    scale = block_scale(kwargs, scale_tile=tile_arg(args[3], op=op, position=3),
                        cols=src.valid_cols)
    data = convert(src, (0, 0, *src.valid), dst.dtype, kwargs, scale)
    _to_gm(op, dst, data, _offsets(args[2]), kwargs)


def _split_blocks(mode: AccToVecMode, rows: int, cols: int) -> list[tuple[int, int, int, int]]:
    """Blocks (r0, c0, rows, cols) of the Acc window for each destination UB."""
    if mode is AccToVecMode.DualModeSplitM:
        half = rows // 2
        return [(0, 0, half, cols), (half, 0, rows - half, cols)]
    if mode is AccToVecMode.DualModeSplitN:
        half = cols // 2
        return [(0, 0, rows, half), (0, half, rows, cols - half)]
    return [(0, 0, rows, cols)]


def _move_from_acc(op: str, dst: object, src: TileRef, kwargs: dict,
                   scale_tile: TileRef | None = None) -> None:
    targets = list(dst) if isinstance(dst, (tuple, list)) else [dst]
    mode = enum_arg(kwargs.get("acc_to_vec_mode"), AccToVecMode, AccToVecMode.SingleModeVec0,
                    op=op)
    blocks = _split_blocks(mode, *src.valid)
    if len(targets) != len(blocks):
        raise SimOpError(f"{op}: {mode.name} writes {len(blocks)} destination tile(s), "
                         f"got {len(targets)}")
    converted = []
    for target, block in zip(targets, blocks):
        tile_arg(target, op=op, position=0)
        scale = block_scale(kwargs, scale_tile=scale_tile, cols=block[3], c0=block[1])
        converted.append(convert(src, block, target.dtype, kwargs, scale))
    for target, data in zip(targets, converted):
        target.write(data, offset=(0, 0))


def _tile_to_tile(op: str, dst: TileRef, src: TileRef, offset: object) -> None:
    at = None if offset is None else tuple(_offsets(offset))
    if dst.copy_from(src, at):  # e.g. L1 -> L0A/L0B: buffer to buffer, no logical copy
        return
    data = src.read() if at is None else src.read_block(*at, *dst.valid)
    if dst.dtype is not src.dtype and dst.dtype.is_float and src.dtype.is_float and \
            dst.dtype.bits != src.dtype.bits:
        data = encode(dst.dtype, to_compute(data, src.dtype), RoundMode.CAST_RINT)  # e.g. bias
    else:
        data = _as_tile_dtype(data, src.dtype, dst, op)
    dst.write(data, offset=(0, 0))


def move(args: list, kwargs: dict) -> None:
    """`move(dst, src[, offset])`: tile -> tile; Acc sources go through the fixpipe.

    Acc -> Vec with `acc_to_vec_mode` DualModeSplitM/N takes `dst` as a pair of UB tiles (AIV0,
    AIV1) and sends each the top/bottom rows (M) or left/right columns (N) of the Acc window.
    """
    op = "block.move"
    src = tile_arg(args[1], op=op, position=1)
    if src.space is MemorySpace.Acc:
        _move_from_acc(op, args[0], src, kwargs)
        return
    dst = args[0][0] if isinstance(args[0], (tuple, list)) else args[0]
    _tile_to_tile(op, tile_arg(dst, op=op, position=0), src, args[2] if len(args) > 2 else None)


def _move_batch(calls: list[list], kwargs: dict) -> Writes | None:
    """On-chip tile -> tile moves (L1 -> L0A/L0B, UB -> UB, ...): each call's copy runs as its
    write (it touches its own core's buffers only: `batching` checked the calls are disjoint).
    Moves out of L0C (the fixpipe) and tile pairs stay per core."""
    first = calls[0]
    if tile_arg(first[1], op="block.move", position=1).space is MemorySpace.Acc or \
            not isinstance(first[0], TileRef):
        return None
    tile_arg(first[0], op="block.move", position=0)
    return [(i, _tile_to_tile, ("block.move", args[0], args[1],
                                args[2] if len(args) > 2 else None))
            for i, args in enumerate(calls)]


def _move_step(args: list, kwargs: dict) -> Step | None:
    """A tile -> tile move's one copy between buffers (`TileRef.copy_step`), None for the
    other paths (the fixpipe out of L0C, a pair of destinations, read + write)."""
    dst, src = args[0], args[1]
    if src.space is MemorySpace.Acc or not isinstance(dst, TileRef):
        return None
    return dst.copy_step(src, None if len(args) < 3 or args[2] is None
                         else tuple(_offsets(args[2])))


def move_fp(args: list, kwargs: dict) -> None:
    """`move_fp(dst, src_acc, scale_tile)`: Acc -> Vec/Mat with per-channel scales."""
    op = "block.move_fp"
    src = tile_arg(args[1], op=op, position=1)
    if src.space is not MemorySpace.Acc:
        raise SimOpError(f"{op}: source must be an Acc tile, not {src.space.value}")
    _move_from_acc(op, args[0], src, kwargs, scale_tile=tile_arg(args[2], op=op, position=2))


def insert(args: list, kwargs: dict) -> None:
    """`insert(dst, src, (row, col))`: src's valid window written into dst at [row, col] (an
    NZ source into a ZN destination: transposed, at [col, row])."""
    op = "block.insert"
    dst, src = tile_arg(args[0], op=op, position=0), tile_arg(args[1], op=op, position=1)
    if src.space is MemorySpace.Acc:
        data = convert(src, (0, 0, *src.valid), dst.dtype, kwargs, block_scale(kwargs))
    else:
        data = _as_tile_dtype(src.read(), src.dtype, dst, op)
    r0, c0 = _offsets(args[2])
    if src.geometry.layout is TileLayout.NZ and dst.geometry.layout is TileLayout.ZN:
        # pto-isa writes the NZ blocks into the ZN tile read as NZ [cols, rows] (the same
        # bytes): the destination holds the source transposed (a transposed left / right)
        dst.write(data.T, offset=(c0, r0))
        return
    dst.write(data, offset=(r0, c0))


def ub_copy(args: list, kwargs: dict) -> None:
    """`ub_copy(dst, src)`: UB -> UB copy of src's valid window."""
    op = "block.ub_copy"
    dst, src = tile_arg(args[0], op=op, position=0), tile_arg(args[1], op=op, position=1)
    dst.write(_as_tile_dtype(src.read(), src.dtype, dst, op), offset=(0, 0))


def init_output(args: list, kwargs: dict) -> None:
    """`init_output(tensor, offset=0, size=all, value=0)`: fill logical GM elements."""
    dst = gm_arg(args[0], op="block.init_output", position=0)
    offset = int(kwargs.get("offset", 0) or 0)
    total = 1
    for dim in dst.shape:
        total *= dim
    size = kwargs.get("size")
    dst.fill_logical(offset, total - offset if size is None else int(size), kwargs.get("value", 0))


def getval(args: list, kwargs: dict) -> float | int | bool:
    """`getval(container, offset)`: the element at linear element `offset` (integers widen)."""
    container, offset = args[0], int(args[1])
    if isinstance(container, GMRef):
        stored, dtype = container.read_linear(offset, 1), container.dtype
    else:
        tile = tile_arg(container, op="block.getval", position=0)
        stored, dtype = tile.read_linear(offset, 1), tile.dtype
    value = to_compute(stored, dtype)[0]
    return bool(value) if dtype.value == "BOOL" else value.item()


def setval(args: list, kwargs: dict) -> None:
    """`setval(container, offset, value)`: one element, rounded / wrapped to its dtype."""
    container, offset, value = args[0], int(args[1]), args[2]
    if isinstance(container, GMRef):
        dtype = container.dtype
        container.write_linear(offset, encode(dtype, torch.tensor([value])))
        return
    tile = tile_arg(container, op="block.setval", position=0)
    tile.write_linear(offset, encode(tile.dtype, torch.tensor([value])))


BATCH_IMPLS = {"block.load": batched(load, _load_batch, always),
               "block.store": batched(store, _store_batch, always),
               "block.move": batched(move, _move_batch, always)}
STEPS = {"block.load": _load_step, "block.store": _store_step, "block.move": _move_step}
IMPLS = {
    "block.load": load, "block.store": store, "block.store_fp": store_fp,
    "block.move": move, "block.move_fp": move_fp, "block.insert": insert,
    "block.ub_copy": ub_copy, "block.init_output": init_output,
    "block.getval": getval, "block.setval": setval,
}
