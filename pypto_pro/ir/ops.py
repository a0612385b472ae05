"""The op registry: every IR op, its operand roles and its pipe (spec §2.6–2.9, §2.12.1, §3.2).

One table read by the parser (arity, unknown-op errors), the passes (auto_mutex, hazards), the
simulator (dispatch, cost) and the code generator. Tile ops write their output first:
`block.add(out, lhs, rhs)`. Operand roles are positions: `reads`, `writes` (a position may be in
both). `tail` roles apply to any extra positional args (e.g. `mrgsort2`'s further lists).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .types import MemorySpace, PipeType

Spaces = Sequence["MemorySpace | None"]  # memory space of each positional arg (None: not a tile)


@dataclass(frozen=True)
class OpSpec:
    name: str
    reads: tuple[int, ...] = ()
    writes: tuple[int, ...] = ()
    pipe: PipeType | Callable[[Spaces], PipeType] = PipeType.V
    family: str = "vector"  # cost / dispatch family
    min_args: int = 0
    max_args: int | None = None  # None = unbounded
    returns: str = "none"  # "none" | "scalar" | "tile" | "tensor" | "ptr" | "struct"
    accesses_data: bool = True  # False: descriptor-only (not auto-mutexed)
    tail_reads: bool = False  # extra positional args beyond max(reads, writes) are read

    def pipe_for(self, spaces: Spaces) -> PipeType:
        return self.pipe(spaces) if callable(self.pipe) else self.pipe

    def roles(self, nargs: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
        reads = self.reads
        if self.tail_reads:
            known = max((*self.reads, *self.writes), default=-1)
            reads = reads + tuple(range(known + 1, nargs))
        return tuple(i for i in reads if i < nargs), tuple(i for i in self.writes if i < nargs)


REGISTRY: dict[str, OpSpec] = {}


def register(spec: OpSpec) -> OpSpec:
    if spec.name in REGISTRY:
        raise RuntimeError(f"op {spec.name} registered twice")
    REGISTRY[spec.name] = spec
    return spec


def get(name: str) -> OpSpec | None:
    return REGISTRY.get(name)


def _reg(names: str, **kw) -> None:
    for n in names.split():
        register(OpSpec(n, **kw))


# ------------------------------------------------------------------ pipes decided by operands

MTE1_TARGETS = {MemorySpace.Left, MemorySpace.Right, MemorySpace.Bias, MemorySpace.ScaleLeft,
                MemorySpace.ScaleRight}

#: allowed `move` paths (src, dst) → pipe (spec §2.6)
MOVE_PATHS: dict[tuple[MemorySpace, MemorySpace], PipeType] = {
    **{(MemorySpace.Mat, d): PipeType.MTE1 for d in MTE1_TARGETS},
    # L1 -> the fixpipe's scaling buffer is the fixpipe's own copy (the real get_move_pipe)
    (MemorySpace.Mat, MemorySpace.Scaling): PipeType.FIX,
    (MemorySpace.Acc, MemorySpace.Vec): PipeType.FIX,
    (MemorySpace.Acc, MemorySpace.Mat): PipeType.FIX,
    (MemorySpace.Mat, MemorySpace.Vec): PipeType.V,
    (MemorySpace.Vec, MemorySpace.Vec): PipeType.V,
    (MemorySpace.Vec, MemorySpace.Mat): PipeType.MTE3,
}


def _move_pipe(spaces: Spaces) -> PipeType:
    dst, src = spaces[0], spaces[1]
    return MOVE_PATHS.get((src, dst), PipeType.V)


def _store_pipe(spaces: Spaces) -> PipeType:
    return PipeType.FIX if spaces[1] is MemorySpace.Acc else PipeType.MTE3


def _insert_pipe(spaces: Spaces) -> PipeType:
    return PipeType.FIX if spaces[1] is MemorySpace.Acc else PipeType.MTE3


# ------------------------------------------------------------------ data movement (spec §2.6)

register(OpSpec("block.make_tile", family="alloc", returns="tile", accesses_data=False,
                pipe=PipeType.S, min_args=1, max_args=2))
register(OpSpec("block.load", reads=(1,), writes=(0,), pipe=PipeType.MTE2, family="load",
                min_args=3, max_args=3))
register(OpSpec("block.store", reads=(1, 3), writes=(0,), pipe=_store_pipe, family="store",
                min_args=3, max_args=4))
register(OpSpec("block.store_fp", reads=(1, 3), writes=(0,), pipe=PipeType.FIX, family="store",
                min_args=4, max_args=4))
register(OpSpec("block.move", reads=(1,), writes=(0,), pipe=_move_pipe, family="move",
                min_args=2, max_args=3))
register(OpSpec("block.move_fp", reads=(1, 2), writes=(0,), pipe=PipeType.FIX, family="move",
                min_args=3, max_args=4))
register(OpSpec("block.insert", reads=(1,), writes=(0,), pipe=_insert_pipe, family="move",
                min_args=3, max_args=3))
register(OpSpec("block.getval", reads=(0,), pipe=PipeType.S, family="scalar", returns="scalar",
                min_args=2, max_args=2))
register(OpSpec("block.setval", writes=(0,), pipe=PipeType.S, family="scalar",
                min_args=3, max_args=3))
register(OpSpec("block.ub_copy", reads=(1,), writes=(0,), family="vec_copy", min_args=2,
                max_args=2))
register(OpSpec("block.init_output", writes=(0,), pipe=PipeType.MTE3, family="store",
                min_args=1, max_args=1))
for _n in ("block.ssbuf_load", "block.ssbuf_store"):
    register(OpSpec(_n, pipe=PipeType.S, family="scalar", min_args=2, max_args=2))
# descriptor-only ops: no data access, never auto-mutexed
_reg("block.set_validshape block.set_stride", pipe=PipeType.S, family="meta",
     accesses_data=False, min_args=2, max_args=2)
register(OpSpec("block.tile_valid_shape", pipe=PipeType.S, family="meta", accesses_data=False,
                returns="scalar", min_args=2, max_args=2))
register(OpSpec("block.subview", pipe=PipeType.S, family="meta", accesses_data=False,
                returns="tile", min_args=2, max_args=3))
register(OpSpec("block.reshape", pipe=PipeType.S, family="meta", accesses_data=False,
                returns="tile", min_args=2, max_args=2))
register(OpSpec("block.reinterpret", pipe=PipeType.S, family="meta", accesses_data=False,
                returns="tile", min_args=1, max_args=1))

# ------------------------------------------------------------------ vector compute (spec §2.7/2.8)

_VEC = dict(reads=(1, 2), writes=(0,), pipe=PipeType.V)
_reg("block.add block.sub block.mul block.div block.maximum block.minimum block.and block.or "
     "block.shl block.shr block.rem block.partadd block.partmax block.partmin block.partmul",
     family="vec_binary", min_args=3, max_args=3, **_VEC)
# fused ops the real code generator lowers to instructions that write their result through lhs
# (position 1), which they overwrite
_reg("block.add_relu block.sub_relu", family="vec_binary", reads=(1, 2), writes=(0, 1),
     min_args=3, max_args=3)
_reg("block.adds block.subs block.muls block.divs block.maxs block.mins block.ands block.ors "
     "block.shls block.shrs block.rems", family="vec_scalar", min_args=3, max_args=3, **_VEC)
_reg("block.xor", family="vec_binary", reads=(1, 2), writes=(0, 3), min_args=3, max_args=4)
_reg("block.xors", family="vec_scalar", reads=(1,), writes=(0, 3), min_args=3, max_args=4)
_reg("block.neg block.abs block.exp block.log block.sqrt block.rsqrt block.recip block.relu "
     "block.not block.transpose", family="vec_unary", reads=(1,), writes=(0,), min_args=2,
     max_args=2)
_reg("block.cast", family="vec_unary", reads=(1,), writes=(0,), min_args=2, max_args=2)
_reg("block.expands block.full", family="vec_fill", writes=(0,), min_args=2, max_args=2)
_reg("block.fill_index", family="vec_fill", writes=(0,), min_args=2, max_args=2)
_reg("block.fillpad block.fillpad_expand", family="vec_unary", reads=(1,), writes=(0,),
     min_args=2, max_args=2)
_reg("block.fillpad_inplace", family="vec_unary", reads=(0, 1), writes=(0,), min_args=1,
     max_args=2)
_reg("block.add_relu_cast block.sub_relu_cast block.mul_cast", family="vec_binary",
     reads=(1, 2), writes=(0, 1), min_args=3, max_args=3)
_reg("block.addc block.subc", family="vec_ternary", reads=(1, 2, 3), writes=(0,), min_args=4,
     max_args=4)
_reg("block.addsc block.subsc", family="vec_ternary", reads=(1, 3), writes=(0,), min_args=4,
     max_args=4)
_reg("block.mul_add_dst block.fused_mul_add block.fused_mul_add_relu", family="vec_ternary",
     reads=(0, 1, 2), writes=(0, 1), min_args=3, max_args=3)
_reg("block.axpy", family="vec_ternary", reads=(0, 1), writes=(0,), min_args=3, max_args=3)
_reg("block.cmp", family="vec_binary", min_args=3, max_args=3, **_VEC)
_reg("block.cmps", family="vec_scalar", min_args=3, max_args=3, **_VEC)
_reg("block.sel", family="vec_ternary", reads=(1, 2, 3), writes=(0,), min_args=4, max_args=5)
_reg("block.sels", family="vec_ternary", reads=(1, 2), writes=(0,), min_args=4, max_args=5)
# reductions: (out, src, tmp) with tmp a scratch tile
_reg("block.row_sum block.row_max block.row_min block.row_prod block.col_sum block.col_max "
     "block.col_min block.col_prod block.row_argmax block.row_argmin block.col_argmax "
     "block.col_argmin block.row_reduce block.col_reduce", family="reduce", reads=(1,),
     writes=(0, 2), min_args=2, max_args=3)
# broadcast-binary: (out, src, scalar_tile)
_reg("block.row_expand_add block.row_expand_sub block.row_expand_mul block.row_expand_div "
     "block.row_expand_max block.row_expand_min block.row_expand_expdif block.row_expand_binop "
     "block.col_expand_add block.col_expand_sub block.col_expand_mul block.col_expand_div "
     "block.col_expand_max block.col_expand_min block.col_expand_expdif block.col_expand_binop",
     family="expand", min_args=3, max_args=3, **_VEC)
_reg("block.row_expand block.col_expand", family="expand", reads=(1,), writes=(0,),
     min_args=2, max_args=2)
_reg("block.gather", family="gather", reads=(1, 2), writes=(0, 3), min_args=3, max_args=4)
_reg("block.gatherb", family="gather", reads=(1, 2), writes=(0,), min_args=3, max_args=3)
_reg("block.gathermask", family="gather", reads=(1,), writes=(0,), min_args=2, max_args=2)
_reg("block.scatter", family="gather", reads=(1, 2), writes=(0,), min_args=3, max_args=3)
_reg("block.sort32", family="sort", reads=(1, 2), writes=(0, 3), min_args=3, max_args=4)
_reg("block.mrgsort", family="sort", reads=(1,), writes=(0,), min_args=2, max_args=2)
register(OpSpec("block.mrgsort2", family="sort", reads=(0, 1), writes=(2, 3), pipe=PipeType.V,
                min_args=4, tail_reads=True))
_reg("block.histogram", family="sort", reads=(1, 2), writes=(0,), min_args=3, max_args=3)
_reg("block.quant", family="vec_binary", reads=(1, 2, 3), writes=(0,), min_args=3, max_args=4)
_reg("block.dequant", family="vec_binary", reads=(1, 2, 3), writes=(0,), min_args=3,
     max_args=4)

# ------------------------------------------------------------------ cube (spec §2.9)

_reg("block.matmul block.gemv", family="cube", reads=(1, 2), writes=(0,), pipe=PipeType.M,
     min_args=3, max_args=3)
_reg("block.matmul_bias block.gemv_bias", family="cube", reads=(1, 2, 3), writes=(0,),
     pipe=PipeType.M, min_args=4, max_args=4)
_reg("block.matmul_acc block.gemv_acc", family="cube", reads=(1, 2, 3), writes=(0,),
     pipe=PipeType.M, min_args=4, max_args=4)
_reg("block.matmul_mx", family="cube", reads=(1, 2, 3, 4), writes=(0,), pipe=PipeType.M,
     min_args=5, max_args=5)
_reg("block.matmul_mx_acc", family="cube", reads=(1, 2, 3, 4, 5), writes=(0,),
     pipe=PipeType.M, min_args=6, max_args=6)

# ------------------------------------------------------------------ system / sync (spec §2.12)
# The pipe of a sync op comes from its kwargs (`set_pipe`, `pipe`); `S` here is the issuer.

_SYS = dict(pipe=PipeType.S, family="sync", accesses_data=False)
_reg("system.sync_src system.sync_dst system.sync_src_dyn system.sync_dst_dyn "
     "system.bar_all system.bar_m system.bar_fix system.bar_mte1 system.bar_mte2 "
     "system.bar_mte3 system.bar_v "
     "system.mutex_lock system.mutex_unlock system.mutex_lock_dyn system.mutex_unlock_dyn "
     "system.set_cross_core system.wait_cross_core system.set_cross_core_dyn "
     "system.wait_cross_core_dyn system.sync_all system.set_mm_layout_transform "
     "system.set_mask_count system.set_mask_norm system.set_vec_mask system.reset_mask "
     "system.set_ctrl_spr system.reset_ctrl_spr system.set_saturation_flag", **_SYS)
register(OpSpec("system.dcci", pipe=PipeType.S, family="sync", min_args=1, max_args=2))
_reg("system.get_ctrl_spr system.get_saturation_flag", returns="scalar", **_SYS)

# ------------------------------------------------------------------ root, debug, ptr, struct

_reg("get_block_idx get_block_num get_subblock_idx get_subblock_num get_spr", pipe=PipeType.S,
     family="scalar", accesses_data=False, returns="scalar", max_args=0)
register(OpSpec("debug.printf", pipe=PipeType.S, family="debug", accesses_data=False,
                min_args=1))
register(OpSpec("debug.assert", pipe=PipeType.S, family="debug", accesses_data=False,
                min_args=1))
register(OpSpec("debug.trap", pipe=PipeType.S, family="debug", accesses_data=False, max_args=0))
register(OpSpec("debug.dump_tensor", reads=(0,), pipe=PipeType.S, family="debug", min_args=1,
                max_args=3))
register(OpSpec("debug.dump_tile", reads=(0,), pipe=PipeType.S, family="debug", min_args=1,
                max_args=4))
register(OpSpec("ptr.make_tensor", pipe=PipeType.S, family="meta", accesses_data=False,
                returns="tensor", min_args=2, max_args=3))
register(OpSpec("ptr.make_ptr", pipe=PipeType.S, family="meta", accesses_data=False,
                returns="ptr", min_args=1, max_args=1))
register(OpSpec("ptr.addptr", pipe=PipeType.S, family="meta", accesses_data=False,
                returns="ptr", min_args=2, max_args=2))
# `p is None` on a pl.Ptr: a runtime null test (the real frontend's cast(p, UINT64) == 0)
register(OpSpec("ptr.is_null", pipe=PipeType.S, family="meta", accesses_data=False,
                returns="scalar", min_args=1, max_args=1))
register(OpSpec("struct.create", pipe=PipeType.S, family="meta", accesses_data=False,
                returns="struct"))

# ------------------------------------------------------------------ tile groups (before lowering)

register(OpSpec("tile_group.make", pipe=PipeType.S, family="alloc", accesses_data=False,
                returns="group"))
_reg("tile_group.next tile_group.current tile_group.previous", pipe=PipeType.S,
     family="meta", accesses_data=False, returns="tile", min_args=1, max_args=1)
# after lowering: `tile_group.get(g, idx)` selects a slot; `tile_group.mutex_id(g, idx){k}`
register(OpSpec("tile_group.get", pipe=PipeType.S, family="meta", accesses_data=False,
                returns="tile", min_args=2, max_args=2))
register(OpSpec("tile_group.mutex_id", pipe=PipeType.S, family="meta", accesses_data=False,
                returns="scalar", min_args=2, max_args=2))

# ------------------------------------------------------------------ SIMT and VF

register(OpSpec("simt.launch", pipe=PipeType.V, family="simt", tail_reads=True))
_reg("simt.thread_idx simt.block_dim simt.block_idx simt.grid_dim simt.linear_thread_idx "
     "simt.warp_size", pipe=PipeType.S, family="simt_ctx", accesses_data=False,
     returns="scalar")
# `simt.call(*args, *dims){callee}` in SIMT code: the Call's type is the callee's return type
# (a scalar), NoneType for a void callee (then an EvalStmt)
register(OpSpec("simt.call", pipe=PipeType.S, family="simt", accesses_data=False,
                returns="scalar"))
register(OpSpec("simt.atomic", pipe=PipeType.S, family="simt", returns="scalar"))
register(OpSpec("simt.math", pipe=PipeType.S, family="simt", accesses_data=False,
                returns="scalar"))
# VF (Reg API): inside a VF section; the section as a whole runs on pipe V.
VF_NAMES = (
    "create_mask update_mask mask_gen_with_reg_tensor get_mask_spr move load_align store_align "
    "load_unalign_init load_unalign_pre load_unalign unalign_reg_for_store store_unalign "
    "store_unalign_post load store gather scatter create_addr_reg mem_bar clear_spr full arange "
    "add sub mul div max min adds subs muls mins maxs abs neg relu sqrt exp ln log log2 log10 "
    "not_ leaky_relu prelu axpy mul_add_dst mul_dst_add abs_sub mull addc subc exp_sub truncate "
    "and_ or_ xor shift_left shift_right eq ne lt gt le ge select reduce_sum reduce_max "
    "reduce_min pair_reduce_sum astype bit_cast pack unpack interleave de_interleave squeeze "
    "unsqueeze muls_cast histograms").split()
#: VF ops that write UB through their first (tile) argument
VF_STORES = frozenset({"store_align", "store_unalign", "store_unalign_post", "store", "scatter"})
#: VF ops that read UB → the tile's position (after the align register of unaligned loads)
VF_LOADS = {"load_align": 0, "load": 0, "gather": 0, "load_unalign_pre": 1, "load_unalign": 1}
#: other VF ops without a result
VF_STATEMENTS = frozenset({"mem_bar", "clear_spr", "load_unalign_pre"})
for _n in VF_NAMES:
    register(OpSpec(f"vf.{_n}", pipe=PipeType.V, family="vf",
                    reads=(VF_LOADS[_n],) if _n in VF_LOADS else (),
                    writes=(0,) if _n in VF_STORES else (),
                    returns="none" if _n in VF_STORES | VF_STATEMENTS else "reg"))
# The simulator's one pipe-V instruction for a whole VF section (`__VEC_SCOPE__`), over the
# section's tiles; the IR keeps the section as a SectionStmt and never calls it.
register(OpSpec("vf.vec_scope", pipe=PipeType.V, family="vf", tail_reads=True))


# ------------------------------------------------------------------ the pl → IR name map

#: DSL names (`pl.<name>`) that are not spelled like their IR op (`block.<name>`) or that the
#: parser dispatches on operands. Everything else resolves to `block.<name>` when registered.
DSL_ALIASES = {
    "and_": "block.and",
    "load_tile": "block.load",
    "store_tile": "block.store",
    "select": "block.sel",
}


def block_op_for(dsl_name: str) -> OpSpec | None:
    """The registered block op a `pl.<name>` call falls back to (spec §2.1 dispatch rule)."""
    return REGISTRY.get(DSL_ALIASES.get(dsl_name, f"block.{dsl_name}"))


def is_sync(name: str) -> bool:
    spec = REGISTRY.get(name)
    return spec is not None and spec.family == "sync"
