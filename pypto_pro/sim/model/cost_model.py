"""Cost model: cycles, bytes, FLOPs and HBM bytes of one instruction on one core.

Owns `op_cost(op_name, args, kwargs, soc) -> OpCost`, with the operands resolved as for
`sim.ops.IMPLS`. Formulas (spec `ascend_950_model.md` §3.5 "Recommended cost model"; every
number from the SoC table, so every term carries a source key there):

* data movement (MTE1/MTE2/MTE3/FIX): `mte_startup[path] + ceil(bytes / mte_rates[path])`
  (§3.5.1, rates §1.3; on GM paths the L2-side rate). `gm_bytes` = bytes read from or written
  to GM (loads, stores, init_output, scalar GM access) and `gm` the lines they touch: the
  engine's `MemorySystem` (L2 hits/misses, chip HBM) may make the transfer later (§3.5.3).
* vector (V): `vector_startup_cycles + ceil(repeats * vector_cycles_per_repeat[class])` with a
  repeat = `vector_repeat_bytes` (256 B) of the widest operand; a row shorter than its tile
  costs whole repeats per row (§3.2, §3.4). Multi-pass ops (addc-style) count their passes.
* cube (M): `cube_head_cycles + ceil(M/16) * ceil(K/k0) * ceil(N/16) * (2 if FP32 else 1)`,
  k0 = `cube_k0_bytes` / element size (§1.4, §3.3 [PTOCUBE]); FLOPs = 2 M N K.
* scalar getval/setval: `scalar_access_cycles`; sync (flags, barriers, mutexes, cross-core):
  `flag_cycles` / `mutex_cycles` / `cross_core_cycles`; other scalar, meta and debug ops:
  `scalar_issue_cycles`. Reg-API `vf.*` instructions cost one repeat of their class, no start-up.
* `printf` (`printf_cost`): one scalar GM access per byte of the record it appends to its
  block's log buffer, plus the log-size word read and rewritten by each of its writes.
"""
from __future__ import annotations

import functools
import math
import re
from typing import NamedTuple

from pypto_pro.ir.dtype import DataType
from pypto_pro.ir.ops import REGISTRY
from pypto_pro.ir.types import MemorySpace

from .memory import GMRef, TileRef
from .memory_system import GMAccess
from ..ops.movement import _gm_view, _offsets
from ...soc import SoC

Space = MemorySpace


class OpCost(NamedTuple):
    """The cost of one instruction (a named tuple: one is made per GM instruction)."""

    cycles: int
    bytes: int  # bytes moved (MTE/FIX), processed (V: read + written) or read from L0 (M)
    flops: int
    gm_bytes: int  # bytes read from or written to GM
    path: str  # transfer path, "vector:<class>", "cube:<dtype>", "scalar", "sync"
    gm: GMAccess | None = None  # the GM lines, for the L2/HBM model (sim.model.memory_system)


#: (src space, dst space) -> transfer path of `move` / `insert` / `ub_copy`
MOVE_PATHS = {
    (Space.Mat, Space.Left): "l1_to_l0a", (Space.Mat, Space.Right): "l1_to_l0b",
    (Space.Mat, Space.Bias): "l1_to_bias", (Space.Mat, Space.Scaling): "l1_to_fb",
    (Space.Mat, Space.ScaleLeft): "l1_to_scale", (Space.Mat, Space.ScaleRight): "l1_to_scale",
    (Space.Acc, Space.Vec): "l0c_to_ub", (Space.Acc, Space.Mat): "l0c_to_l1",
    (Space.Mat, Space.Vec): "l1_to_ub", (Space.Vec, Space.Vec): "ub_to_ub",
    (Space.Vec, Space.Mat): "ub_to_l1",
}

_VECTOR_CLASSES = {
    "copy": "ub_copy expands full fill_index transpose fillpad fillpad_expand fillpad_inplace "
            "gathermask row_expand col_expand",
    "unary": "neg abs relu not adds subs muls maxs mins ands ors xors shls shrs",
    "binary": "add sub mul maximum minimum and or xor shl shr add_relu sub_relu partadd partmax "
              "partmin partmul addc subc addsc subsc mul_add_dst fused_mul_add "
              "fused_mul_add_relu axpy",
    "transcendental": "exp log sqrt rsqrt recip",
    "div": "div divs rem rems",
    "cast": "cast add_relu_cast sub_relu_cast mul_cast quant dequant",
    "compare": "cmp cmps",
    "select": "sel sels",
    "gather": "gather gatherb scatter",
    "sort": "sort32 mrgsort mrgsort2 histogram",
}
VECTOR_CLASS = {f"block.{op}": cls for cls, ops in _VECTOR_CLASSES.items() for op in ops.split()}
#: ops that make two passes over their data
TWO_PASS = {"block.addc", "block.subc", "block.addsc", "block.subsc", "block.add_relu_cast",
            "block.sub_relu_cast"}


def _tile_bytes(tile: TileRef, rows: int | None = None, cols: int | None = None) -> int:
    rows = tile.valid_rows if rows is None else rows
    cols = tile.valid_cols if cols is None else cols
    return rows * cols * tile.dtype.bits // 8


def _tiles(args: list) -> list[TileRef]:
    found = []
    for arg in args:
        if isinstance(arg, TileRef):
            found.append(arg)
        elif isinstance(arg, (tuple, list)):
            found.extend(a for a in arg if isinstance(a, TileRef))
    return found


def _transfer(soc: SoC, path: str, nbytes: int, gm_bytes: int = 0,
              gm: GMAccess | None = None) -> OpCost:
    cycles = soc.mte_startup[path] + math.ceil(nbytes / soc.mte_rates[path])
    return OpCost(int(cycles), nbytes, 0, gm_bytes, path, gm)


def _window(gm: GMRef, offsets, rows: int, cols: int, kwargs: dict,
            write: bool) -> GMAccess | None:
    """The GM window a load or store moves (lines computed only when timed); None when the
    operand is no GM tensor (a None argument: the op itself reports it)."""
    if not isinstance(gm, GMRef):
        return None
    lines = functools.partial(gm.window_lines, _offsets(offsets), rows, cols, **_gm_view(kwargs))
    return GMAccess(lines, write, gm.storage)


def _movement_cost(op: str, args: list, kwargs: dict, soc: SoC) -> OpCost:
    if op == "block.load":
        dst = args[0]
        nbytes = _tile_bytes(dst)
        return _transfer(soc, "gm_to_l1" if dst.space is Space.Mat else "gm_to_ub", nbytes, nbytes,
                         _window(args[1], args[2], *dst.valid, kwargs, write=False))
    if op in ("block.store", "block.store_fp"):
        dst, src = args[0], args[1]
        nbytes = src.valid_rows * src.valid_cols * dst.dtype.bits // 8
        return _transfer(soc, "l0c_to_gm" if src.space is Space.Acc else "ub_to_gm", nbytes,
                         nbytes, _window(dst, args[2], *src.valid, kwargs, write=True))
    if op == "block.init_output":
        gm = args[0]
        start = int(kwargs.get("offset", 0) or 0)
        count = int(kwargs.get("size") or math.prod(gm.shape) - start)
        nbytes = count * gm.dtype.bits // 8
        return _transfer(soc, "ub_to_gm", nbytes, nbytes, GMAccess(
            functools.partial(gm.linear_lines, start, count), True, gm.storage))
    src = args[1]
    dst = _tiles([args[0]])[0]
    moved = min(_tile_bytes(src), sum(_tile_bytes(t) for t in _tiles([args[0]])))  # extract
    return _transfer(soc, MOVE_PATHS.get((src.space, dst.space), "ub_to_ub"), moved)


def _repeats(tile: TileRef, itemsize_bits: int, repeat_bytes: int) -> int:
    rows, cols = tile.valid
    if cols == tile.shape[1]:  # whole rows: the valid window is contiguous
        return math.ceil(rows * cols * itemsize_bits / 8 / repeat_bytes)
    return rows * math.ceil(cols * itemsize_bits / 8 / repeat_bytes)


def _vector_cost(op: str, args: list, soc: SoC) -> OpCost:
    tiles = _tiles(args)
    if op.startswith("block.row_"):
        cls = "row_reduce" if "expand" not in op else None
    elif op.startswith("block.col_"):
        cls = "col_reduce" if "expand" not in op else None
    else:
        cls = VECTOR_CLASS.get(op)
    if cls is None:  # row/col expand ops: one binary (or exp) pass
        cls = "transcendental" if op.endswith("expdif") else (
            "div" if op.endswith("div") else "binary")
    widest = max(t.dtype.bits for t in tiles)
    basis = tiles[1] if len(tiles) > 1 and cls in ("row_reduce", "col_reduce") else tiles[0]
    repeats = _repeats(basis, widest, soc.vector_repeat_bytes) * (2 if op in TWO_PASS else 1)
    cycles = soc.vector_startup_cycles + math.ceil(repeats * soc.vector_cycles_per_repeat[cls])
    elements = basis.valid_rows * basis.valid_cols
    return OpCost(int(cycles), sum(_tile_bytes(t) for t in tiles), elements, 0, f"vector:{cls}")


def _cube_cost(op: str, args: list, soc: SoC) -> OpCost:
    tiles = _tiles(args)
    lhs_at = 2 if op.endswith("_acc") else 1
    lhs, rhs = tiles[lhs_at], tiles[lhs_at + 1]
    m, k = lhs.valid
    n = rhs.valid_cols
    k0 = soc.cube_k0_bytes * 8 // lhs.dtype.bits
    fractals = (math.ceil(m / soc.cube_fractal_m) * math.ceil(k / k0)
                * math.ceil(n / soc.cube_fractal_n))
    per_fractal = soc.cube_fp32_cycles_per_fractal if lhs.dtype is DataType.FP32 else 1
    cycles = soc.cube_head_cycles + fractals * per_fractal
    return OpCost(int(cycles), _tile_bytes(lhs) + _tile_bytes(rhs, k, n), 2 * m * n * k, 0,
                  f"cube:{lhs.dtype.value}")


def _sync_cost(op: str, soc: SoC) -> OpCost:
    if "mutex" in op:
        cycles = soc.mutex_cycles
    elif "cross_core" in op or op == "system.sync_all":
        cycles = soc.cross_core_cycles
    elif op.startswith(("system.sync_", "system.bar_")):
        cycles = soc.flag_cycles
    else:
        cycles = soc.scalar_issue_cycles
    return OpCost(int(cycles), 0, 0, 0, "sync")


def _scalar_access_cost(op: str, args: list, soc: SoC) -> OpCost:
    container = args[0]
    size = max(1, container.dtype.bits // 8)
    if not isinstance(container, GMRef):
        return OpCost(int(soc.scalar_access_cycles), size, 0, 0, "scalar")
    lines = functools.partial(container.element_lines, int(args[1]), 1)
    return OpCost(int(soc.scalar_access_cycles), size, 0, size, "scalar",
                  GMAccess(lines, op == "block.setval", container.storage))


#: a printf conversion as `pl.printf` accepts it (`language.parser.printf_format`)
_CONVERSION = re.compile(r"%[-+ #0]*\d*(?:\.\d+)?([diuxfp])")


def printf_cost(fmt: str, soc: SoC) -> OpCost:
    """One `printf` of format `fmt` on the scalar unit (pipe S). The spec has no number for it
    (pto-isa's cost model makes printf a no-op: include/pto/costmodel/a2a3/cce_costmodel/
    cce_costmodel_debug.hpp, next to [PTOCORE]), so it is
    derived from what the device code does: CANN's `cce::printf` (ccelib print.h /
    printstate.h) formats nothing on the device; it serialises a record into its block's GM log
    buffer one byte at a time (`*buf++ = *str++`), each `Write` call also reading and rewriting
    the buffer's size word. Per conversion: type byte, value (8 bytes for %d %i %u %x %p, 4 for
    %f), 2-byte length, the format text up to and including the conversion, NUL; then the
    rest of the text as type, length, text, NUL and an END byte (an END byte alone when no text
    is left) — five `Write` calls each. Every byte and every size-word access is charged as one
    scalar GM access, `scalar_access_cycles` [PYPTO-COST, the getval/setval cost]: "Hello
    World from PyPTO Pro!\n" is 33 bytes in 5 writes, (33 + 2 x 5) x 10 = 430 cycles."""
    nbytes = writes = at = 0
    for m in _CONVERSION.finditer(fmt):
        nbytes += 1 + (4 if m.group(1) == "f" else 8) + 2 + len(fmt[at:m.end()].encode()) + 1
        writes += 5
        at = m.end()
    rest = len(fmt[at:].encode())
    nbytes += 1 + 2 + rest + 1 + 1 if rest else 1
    writes += 5 if rest else 1
    return OpCost(int(soc.scalar_access_cycles) * (nbytes + 2 * writes), nbytes, 0, nbytes,
                  "scalar")


#: the pipe-V instruction of a VF section (`sim.frontend.vf.section`; not an IR op)
VF_SECTION = "vf.vec_scope"


def vf_section_cost(counts: dict[str, int], soc: SoC) -> OpCost:
    """One VF section (`__VEC_SCOPE__`) from the number of ops it executed per class (spec
    §3.4): the launch's fixed `vector_startup_cycles`, then the busiest resource — the ALU
    (each op its class's cycles per 256 B register), the 2 load ports or the 1 store port
    [VFSIM uarch.csv]. Mask / SPR ops ("mask") count one ALU cycle, "free" ops none; FLOPs
    are not counted (the lanes per op vary with the dtype)."""
    per = soc.vector_cycles_per_repeat
    alu = sum(n * (1 if cls == "mask" else per[cls]) for cls, n in counts.items()
              if cls not in ("load", "store", "free"))
    loads, stores = counts.get("load", 0), counts.get("store", 0)
    busiest = max(alu, loads / 2, stores)
    return OpCost(int(soc.vector_startup_cycles + math.ceil(busiest)), 256 * (loads + stores),
                  0, 0, "vector:vf")


def _vf_cost(op: str, soc: SoC) -> OpCost:
    name = op.removeprefix("vf.")
    cls = "transcendental" if name in ("exp", "exp_sub", "ln", "log", "log2", "log10",
                                       "sqrt") else "div" if name == "div" else "binary"
    return OpCost(math.ceil(soc.vector_cycles_per_repeat[cls]), 0, 0, 0, f"vector:{cls}")


#: SIMT warp-instruction class -> vector cost class (per 256 B repeat) of the same work
_SIMT_VECTOR_CLASS = {"alu": "binary", "div": "div", "transcendental": "transcendental",
                      "ub": "copy"}
_SIMT_LANE_BYTES = 4  # a SIMT thread's register lane: 32 bits


def simt_launch_cost(args: list, kwargs: dict, soc: SoC) -> OpCost:
    """A `simt.launch` on pipe V: `vector_startup_cycles` (a SIMT launch starts a vector
    function, spec §3.4) plus, per warp instruction executed (a warp of 32 threads issues an
    instruction if any of its threads is active), the vector cost of the same lanes: the
    class's cycles per 256 B repeat x 32 lanes x 4 B / 256 B. GM element accesses and atomics
    take the scalar memory path, `scalar_access_cycles` per warp instruction. Running the
    launch (`kwargs["launch"].execute`: it reads the operands now, at the instruction's start)
    gives the counts, so divergence and per-thread trip counts are costed."""
    profile = kwargs["launch"].execute(args)
    warp_fraction = 32 * _SIMT_LANE_BYTES / soc.vector_repeat_bytes
    cycles = float(soc.vector_startup_cycles)
    for cls, n in profile.warp_ops.items():
        vector_cls = _SIMT_VECTOR_CLASS.get(cls)
        per = (soc.vector_cycles_per_repeat[vector_cls] * warp_fraction if vector_cls
               else soc.scalar_access_cycles)
        cycles += n * per
    return OpCost(math.ceil(cycles), profile.bytes, profile.lane_ops, 0, "vector:simt")


#: ops whose cost involves their GM operand (a window of lines per call): never memoised
GM_OPS = frozenset({"block.load", "block.store", "block.store_fp", "block.init_output",
                     "block.getval", "block.setval"})
#: ... except the on-chip part of a tile load or store (`_window_op_cost`)
WINDOW_OPS = frozenset({"block.load", "block.store", "block.store_fp"})
#: id(SoC) → (the SoC, {(op, operand shapes): (OpCost, the tile geometries named)}); see
#: `op_cost`. A key names a geometry by its id (hashing the dataclass costs more than the cost
#: formulas), so the entry keeps the geometry alive: its id is not reused while the key exists.
_MEMO: dict[int, tuple[SoC, dict]] = {}
_MEMO_LIMIT = 100_000  # entries per SoC before the memo starts over (a new block, new tiles)


def op_cost(op_name: str, args: list, kwargs: dict, soc: SoC,
            by_operands: dict | None = None) -> OpCost:
    """The cost of one instruction `op_name` with resolved operands `args` on `soc`.

    Pure in (op, each tile operand's geometry and valid shape) for every op but the GM
    accesses, VF sections and SIMT launches, so those costs are computed once per SoC; a tile
    load or store has its on-chip part computed once and its GM window added per call.
    `by_operands` (one launch's record phase: the same `soc`, operands never changed once
    issued, and a TileRef shared per tile while unchanged) also keeps those costs by (op,
    the operands' ids): the entry keeps the operands alive, so their ids are not reused."""
    window_op = op_name in WINDOW_OPS
    if not window_op and (op_name in GM_OPS or op_name == VF_SECTION or
                          op_name == "simt.launch"):
        return _op_cost(op_name, args, kwargs, soc)
    if by_operands is not None and not window_op:
        same = (op_name, *map(id, args))
        found = by_operands.get(same)
        if found is not None:
            return found[0]
    memo = _memo(soc)
    if window_op:
        return _window_op_cost(op_name, args, kwargs, soc, memo)
    key = (op_name, *[_shape_key(a) for a in args])
    found = memo.get(key)
    if found is None:
        found = memo[key] = (_op_cost(op_name, args, kwargs, soc), _geometries(args))
    if by_operands is not None:
        by_operands[same] = (found[0], args)
    return found[0]


def _memo(soc: SoC) -> dict:
    """The costs kept for `soc` (see `_MEMO`)."""
    entry = _MEMO.get(id(soc))
    if entry is None or entry[0] is not soc or len(entry[1]) > _MEMO_LIMIT:
        entry = _MEMO[id(soc)] = (soc, {})
    return entry[1]


def window_onchip_cost(op_name: str, args: list, kwargs: dict, soc: SoC) -> OpCost | None:
    """The cost of tile load or store `op_name` without its GM side (`gm` None): what every
    window of the same tile and GM tensor costs; None when an operand is not a tile or a GM
    view where the op needs one."""
    return _onchip(op_name, args, kwargs, soc, _memo(soc))


def _onchip(op_name: str, args: list, kwargs: dict, soc: SoC, memo: dict) -> OpCost | None:
    """`window_onchip_cost`: it depends only on the tile (its geometry and valid shape) and
    the GM dtype."""
    gm, tile = (args[1], args[0]) if op_name == "block.load" else (args[0], args[1])
    if (type(tile) is not TileRef and not isinstance(tile, TileRef)) or \
            (type(gm) is not GMRef and not isinstance(gm, GMRef)):
        return None
    key = (op_name, id(tile.geometry), tile.valid_rows, tile.valid_cols, id(gm.dtype))
    found = memo.get(key)  # (enum members are singletons: the dtype's id names it)
    if found is None:
        found = memo[key] = (_op_cost(op_name, args, kwargs, soc)._replace(gm=None),
                             [tile.geometry])
    return found[0]


def _window_op_cost(op_name: str, args: list, kwargs: dict, soc: SoC, memo: dict) -> OpCost:
    """`_movement_cost` of a tile load or store: its on-chip part (`_onchip`) with the GM
    window of its offsets."""
    onchip = _onchip(op_name, args, kwargs, soc, memo)
    if onchip is None:
        return _op_cost(op_name, args, kwargs, soc)  # (the op itself reports the bad operand)
    load = op_name == "block.load"
    gm, tile = (args[1], args[0]) if load else (args[0], args[1])
    rows, cols = tile.valid_rows, tile.valid_cols
    try:
        window = gm.window(args[2], rows, cols, **_gm_view(kwargs))
    except (IndexError, ValueError, TypeError):  # the op reports it (or the sanitizer skips it)
        return _with_gm(onchip, _window(gm, args[2], rows, cols, kwargs, write=not load))
    cost = window.costs.get(id(onchip))
    if cost is None:  # (the entry keeps `onchip` alive, so its id names it)
        cost = window.costs[id(onchip)] = _with_gm(
            onchip, GMAccess(window.lines, not load, window.storage)), onchip
    return cost[0]


def _with_gm(cost: OpCost, gm: GMAccess) -> OpCost:
    """`cost` with its GM side `gm` (a new launch makes one per GM window: `_replace` costs
    twice as much)."""
    return OpCost._make((*cost[:5], gm))


def _shape_key(arg: object) -> object:
    """What the cost of a non-GM op reads of an operand: a tile's geometry and valid shape."""
    if type(arg) is TileRef or isinstance(arg, TileRef):
        return id(arg.geometry), arg.valid_rows, arg.valid_cols
    if isinstance(arg, (tuple, list)):
        return tuple([_shape_key(a) for a in arg])
    return None


def _geometries(args: object) -> list:
    """The tile geometries `_shape_key` names, in any nesting of tuples and lists."""
    if isinstance(args, TileRef):
        return [args.geometry]
    if isinstance(args, (tuple, list)):
        return [g for a in args for g in _geometries(a)]
    return []


def _op_cost(op_name: str, args: list, kwargs: dict, soc: SoC) -> OpCost:
    if op_name == VF_SECTION:  # a whole VF section: its launch counts what it ran
        return kwargs["launch"].cost(args, soc)
    spec = REGISTRY.get(op_name)
    if spec is None:
        raise ValueError(f"op_cost: unknown op {op_name!r}")
    family = spec.family
    if family in ("load", "store", "move", "vec_copy") and op_name != "block.ub_copy":
        return _movement_cost(op_name, args, kwargs, soc)
    if op_name in ("block.getval", "block.setval"):
        return _scalar_access_cost(op_name, args, soc)
    if family == "cube":
        return _cube_cost(op_name, args, soc)
    if family == "sync":
        return _sync_cost(op_name, soc)
    if family == "vf":
        return _vf_cost(op_name, soc)
    if op_name == "simt.launch":
        return simt_launch_cost(args, kwargs, soc)
    if op_name.startswith("block.") and family not in ("meta", "alloc", "scalar", "debug"):
        return _vector_cost(op_name, args, soc)
    return OpCost(int(soc.scalar_issue_cycles), 0, 0, 0, "scalar")
