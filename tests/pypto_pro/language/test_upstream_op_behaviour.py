"""Op-level behaviour of the real PyPTO Pro frontend (learned from its op builders and their unit
tests), written as our own kernels: what the real builders accept runs and matches torch on the
simulator and natively; what they refuse is the real frontend's error class (a builder's
ValueError reaches the user as a ParserSyntaxError) with its wording, at the offending line.

Covered: the operand checks of the MX matmuls (K, output shape, dtype pairs, the scale tiles and
their paired addresses), the layouts a cube-side buffer may take per arch (a5's L0 buffers
refuse ZZ / NN), `pl.make_tile` with a literal `None` placement, the last operand of load /
store / insert / set_validshape passed by its keyword, the constant extents set_validshape
and insert refuse, the arguments `pl.make_tile_group` refuses (the real parser's words), and
`pl.move` of a smaller tile into a larger one (or Vec into a transposed-layout Mat) being an insert.
"""
from __future__ import annotations

import pytest
import torch
from dual_backend import sim_and_native
from kernel_source import assert_refused, compile_source

import pypto_pro.language as pl
from pypto_pro.compiler import compile_kernel
from pypto_pro.errors import FinalRejectionError, ParserSyntaxError, ParserTypeError
from pypto_pro.runtime.kernel_def import Specialization

M = pl.MemorySpace
F32 = pl.DT_FP32
N = 64  # M = N = K: one MX group pair (K // 32 = 2 scales per row of A, per column of B)
G = N // 32

# ---------------------------------------------------------------- MX matmul: accepted


def _tt(shape, dtype, space, layout=None):
    return pl.TileType(shape=shape, dtype=dtype, target_memory=space, layout=layout)


@pl.jit(arch="a5", auto_mutex=True)
def mx_twice(a: pl.Tensor[[N, N], pl.DT_FP8E4M3FN], b: pl.Tensor[[N, N], pl.DT_FP8E5M2],
             scale_a: pl.Tensor[[N, G // 2, 2], pl.DT_FP8E8M0],
             scale_b: pl.Tensor[[G // 2, N, 2], pl.DT_FP8E8M0],
             out: pl.Tensor[[N, N], F32]):
    """out = 2 · (A·2^sa) @ (B·2^sb): a matmul_mx, then a matmul_mx_acc onto it. The L0 data
    tiles sit away from 0 and each scale tile at its data tile's address >> 4, where mad_mx
    reads the scales."""
    a_l1 = pl.make_tile_group(type=_tt([N, N], pl.DT_FP8E4M3FN, M.Mat), addrs=0x0, mutex_ids=[0])
    b_l1 = pl.make_tile_group(type=_tt([N, N], pl.DT_FP8E5M2, M.Mat), addrs=0x2000,
                              mutex_ids=[1])
    sa_l1 = pl.make_tile_group(type=_tt([N, G], pl.DT_FP8E8M0, M.Mat, pl.ZZ),
                               addrs=0x4000, mutex_ids=[2])
    sb_l1 = pl.make_tile_group(type=_tt([G, N], pl.DT_FP8E8M0, M.Mat, pl.NN),
                               addrs=0x5000, mutex_ids=[3])
    a_l0 = pl.make_tile_group(type=_tt([N, N], pl.DT_FP8E4M3FN, M.Left), addrs=0x8000,
                              mutex_ids=[4])
    b_l0 = pl.make_tile_group(type=_tt([N, N], pl.DT_FP8E5M2, M.Right), addrs=0x4000,
                              mutex_ids=[5])
    sa_l0 = pl.make_tile_group(type=_tt([N, G], pl.DT_FP8E8M0, M.ScaleLeft), addrs=0x800,
                               mutex_ids=[6])
    sb_l0 = pl.make_tile_group(type=_tt([G, N], pl.DT_FP8E8M0, M.ScaleRight), addrs=0x400,
                               mutex_ids=[7])
    acc = pl.make_tile_group(type=_tt([N, N], F32, M.Acc), addrs=0x0, mutex_ids=[8])
    with pl.section_cube():
        al1, bl1, sal1, sbl1 = a_l1.current(), b_l1.current(), sa_l1.current(), sb_l1.current()
        al0, bl0, sal0, sbl0 = a_l0.current(), b_l0.current(), sa_l0.current(), sb_l0.current()
        ac = acc.current()
        pl.load(al1, a, [0, 0])
        pl.load(bl1, b, [0, 0])
        pl.load(sal1, scale_a, [0, 0, 0])
        pl.load(sbl1, scale_b, [0, 0, 0])
        pl.move(al0, al1)
        pl.move(bl0, bl1)
        pl.move(sal0, sal1)
        pl.move(sbl0, sbl1)
        pl.matmul_mx(ac, al0, bl0, sal0, sbl0)
        pl.matmul_mx_acc(ac, ac, al0, bl0, sal0, sbl0)
        pl.store(out, ac, [0, 0])


def test_mx_matmuls_with_paired_scale_addresses_run():
    g = torch.Generator().manual_seed(21)
    a = torch.randn(N, N, generator=g).to(torch.float8_e4m3fn)
    b = torch.randn(N, N, generator=g).to(torch.float8_e5m2)
    sa = torch.randint(124, 131, (N, G), generator=g, dtype=torch.uint8)  # [M, K/32]
    sb = torch.randint(124, 131, (G, N), generator=g, dtype=torch.uint8)  # [K/32, N]
    sa_gm = sa.view(N, G // 2, 2)  # group k at k // 2, phase k % 2
    sb_gm = sb.view(G // 2, 2, N).permute(0, 2, 1).contiguous()

    def run():
        out = torch.zeros(N, N)
        mx_twice(a, b, sa_gm, sb_gm, out)
        return out

    deq_a = a.double() * torch.exp2(sa.double() - 127).repeat_interleave(32, dim=1)
    deq_b = b.double() * torch.exp2(sb.double() - 127).repeat_interleave(32, dim=0)
    want = (2 * deq_a @ deq_b).float()
    assert torch.allclose(sim_and_native(run), want, rtol=1e-5, atol=1e-3)


# ---------------------------------------------------------------- MX matmul: refused

MX_PARAMS = "out: pl.Tensor[[64, 64], pl.DT_FP32]"


def _mx_body(*, k=64, rhs_k=None, lhs="pl.DT_FP8E4M3FN", rhs="pl.DT_FP8E5M2", dst="pl.DT_FP32",
             dst_shape="[64, 64]", acc=None, sa_dtype="pl.DT_FP8E8M0", sa_space="M.ScaleLeft",
             sa_shape=None, sb_shape=None, addrs=(0, 0, 0, 0)) -> str:
    """A cube section placing MX operands and multiplying them (`acc`: (shape, dtype) of the
    accumulator of a matmul_mx_acc); `addrs`: lhs, scale_a, rhs, scale_b."""
    rhs_k = rhs_k or k
    sa_shape = sa_shape or f"[64, {k // 32}]"
    sb_shape = sb_shape or f"[{rhs_k // 32}, 64]"
    sa_layout = ", layout=pl.ZZ" if sa_space == "M.Mat" else ""
    call = ("pl.matmul_mx(dst, lhs, rhs, sa, sb)" if acc is None else
            "pl.matmul_mx_acc(dst, acc, lhs, rhs, sa, sb)")
    acc_line = "" if acc is None else \
        f"    acc = pl.make_tile(pl.TileType({acc[0]}, {acc[1]}, M.Acc), addr=0x8000)\n"
    return (f"M = pl.MemorySpace\nwith pl.section_cube():\n"
            f"    dst = pl.make_tile(pl.TileType({dst_shape}, {dst}, M.Acc), addr=0x0)\n"
            f"{acc_line}"
            f"    lhs = pl.make_tile(pl.TileType([64, {k}], {lhs}, M.Left), addr={addrs[0]})\n"
            f"    sa = pl.make_tile(pl.TileType({sa_shape}, {sa_dtype}, {sa_space}{sa_layout}), "
            f"addr={addrs[1]})\n"
            f"    rhs = pl.make_tile(pl.TileType([{rhs_k}, 64], {rhs}, M.Right), "
            f"addr={addrs[2]})\n"
            f"    sb = pl.make_tile(pl.TileType({sb_shape}, pl.DT_FP8E8M0, M.ScaleRight), "
            f"addr={addrs[3]})\n"
            f"    {call}\n")


@pytest.mark.parametrize("name, options, fragment", [
    ("k_32", dict(k=32), "matmul_mx: K dimension must be a multiple of 64 for MX matmul, got "
                         "lhs K=32."),
    ("k_mismatch", dict(rhs_k=128), "lhs and rhs K dimensions must match, got lhs K=64, rhs "
                                    "K=128."),
    ("dst_shape", dict(dst_shape="[32, 64]"),
     "dst_tile shape must be [lhs M, rhs N], expected [64, 64], got [32, 64]."),
    ("acc_shape", dict(acc=("[64, 32]", "pl.DT_FP32")),
     "matmul_mx_acc: acc_tile shape must match dst_tile shape, got acc_tile=[64, 32], "
     "dst_tile=[64, 64]."),
    ("acc_fp16", dict(acc=("[64, 64]", "pl.DT_FP16")), "acc_tile must use FP32 dtype"),
    ("fp8_with_fp4", dict(rhs="pl.DT_FP4E2M1"),
     "(lhs,rhs) must be FP8/FP4 combo and dst FP32, got (FP8E4M3FN,FP4E2M1,FP32)."),
    ("dst_fp16", dict(dst="pl.DT_FP16"), "must be FP8/FP4 combo and dst FP32"),
    ("scale_in_mat", dict(sa_space="M.Mat"), "scale_a must be in L0A (ScaleLeft), got Mat"),
    ("scale_fp16", dict(sa_dtype="pl.DT_FP16"), "scale_a must use FP8E8M0 dtype, got FP16"),
    ("scale_a_rows", dict(sa_shape="[32, 2]"),
     "scale_a shape must match lhs_tile MX groups, expected [64, 2] for lhs_tile shape "
     "[64, 64], got [32, 2]."),
    ("scale_a_groups", dict(sa_shape="[64, 4]"), "scale_a shape must match lhs_tile MX groups"),
    ("scale_b_groups", dict(sb_shape="[4, 64]"), "scale_b shape must match rhs_tile MX groups"),
    ("scale_b_cols", dict(sb_shape="[2, 32]"), "scale_b shape must match rhs_tile MX groups"),
    ("scale_a_unpaired", dict(addrs=(0x8000, 0x400, 0, 0)),
     "scale_a address must equal lhs_tile address >> 4, got lhs_tile=0x8000, expected "
     "scale_a=0x800, actual scale_a=0x400."),
    ("scale_b_unpaired", dict(addrs=(0, 0, 0x4000, 0x200)),
     "scale_b address must equal rhs_tile address >> 4"),
])
def test_refused_mx_operands(tmp_path, name, options, fragment):
    assert_refused(ParserSyntaxError, fragment, tmp_path, name, MX_PARAMS, _mx_body(**options))


def test_fp4_pairs_and_paired_addresses_compile(tmp_path):
    body = _mx_body(lhs="pl.DT_FP4E2M1", rhs="pl.DT_FP4E1M2", acc=("[64, 64]", "pl.DT_FP32"),
                    addrs=(0x8000, 0x800, 0x4000, 0x400))
    compile_source(tmp_path, "fp4", MX_PARAMS, body)


def test_a_plain_matmul_names_its_operands_as_the_real_builder(tmp_path):
    body = ("with pl.section_cube():\n"
            "    a = pl.make_tile(pl.TileType([16, 16], pl.DT_FP16, pl.MemorySpace.Mat), addr=0)\n"
            "    b = pl.make_tile(pl.TileType([16, 16], pl.DT_FP16, pl.MemorySpace.Right), "
            "addr=0)\n"
            "    c = pl.make_tile(pl.TileType([16, 16], pl.DT_FP32, pl.MemorySpace.Acc), addr=0)\n"
            "    pl.matmul(c, a, b)\n")
    assert_refused(ParserSyntaxError, "matmul: lhs_tile must be in L0A (Left), got Mat",
                   tmp_path, "lhs_in_mat", MX_PARAMS, body)


# ---------------------------------------------------------------- cube-buffer layouts per arch


def _layout_body(space: str, layout: str, dtype: str = "pl.DT_FP16") -> str:
    return ("with pl.section_cube():\n"
            f"    tt = pl.TileType(shape=[128, 128], dtype={dtype}, "
            f"target_memory=pl.MemorySpace.{space}, layout=pl.{layout})\n"
            "    t = pl.make_tile(tt, addr=0x0)\n")


LAYOUT_PARAMS = "x: pl.Tensor[[128, 128], pl.DT_FP16]"


@pytest.mark.parametrize("space, default", [("Left", "NZ"), ("Right", "ZN"), ("Acc", "NZ")])
@pytest.mark.parametrize("layout", ["ZZ", "NN"])
def test_a5_l0_buffers_refuse_zz_and_nn(tmp_path, space, default, layout):
    assert_refused(ParserSyntaxError, f"{space} tiles do not support {layout} layout on 'a5'; "
                                      f"use the default {default} layout instead.",
                   tmp_path, f"{space}_{layout}", LAYOUT_PARAMS, _layout_body(space, layout))


@pytest.mark.parametrize("space, layout, dtype, fragment", [
    ("Right", "NZ", "pl.DT_FP16", "Right tiles require layout in {ZN}, got NZ. Default for 'a5' "
                                  "is ZN."),
    ("Acc", "ND", "pl.DT_FP32", "Acc tiles require layout in {NZ}, got ND"),
    ("Mat", "ND", "pl.DT_FP16", "Mat tiles require layout in {NZ, ZN}, got ND"),
    ("Mat", "DN", "pl.DT_FP16", "Mat tiles require layout in {NZ, ZN}, got DN"),
    ("Mat", "ZZ", "pl.DT_FP16", "Mat tiles require layout in {NZ, ZN}, got ZZ"),
    ("Left", "ZN", "pl.DT_FP16", "Left tiles require layout in {NZ, ZZ}, got ZN"),
])
def test_cube_buffers_take_only_their_layouts(tmp_path, space, layout, dtype, fragment):
    assert_refused(ParserSyntaxError, fragment, tmp_path, f"{space}_{layout}", LAYOUT_PARAMS,
                   _layout_body(space, layout, dtype))


@pytest.mark.parametrize("space, layout, dtype", [
    ("Mat", "ND", "pl.DT_INT64"),  # 64-bit integers stay row-major in L1
    ("Mat", "ZZ", "pl.DT_FP8E8M0"), ("Mat", "NN", "pl.DT_FP8E8M0"),  # MX scales
    ("Mat", "ZN", "pl.DT_FP16"), ("Vec", "NN", "pl.DT_FP16"),
])
def test_the_layouts_the_real_type_keeps_compile(tmp_path, space, layout, dtype):
    compile_source(tmp_path, f"{space}_{layout}", LAYOUT_PARAMS, _layout_body(space, layout, dtype))


@pl.jit
def left_zz(x: pl.Tensor[[128, 128], pl.DT_FP16]):
    with pl.section_cube():
        t = pl.make_tile(pl.TileType(shape=[128, 128], dtype=pl.DT_FP16,
                                     target_memory=pl.MemorySpace.Left, layout=pl.ZZ), addr=0x0)


def test_before_a5_a_left_tile_may_be_zz():
    """ZZ was L0A's layout before a5 (its default there): only a5 refuses it."""
    compile_kernel(left_zz.kernel_def, Specialization(arch="a3"))
    with pytest.raises(ParserSyntaxError, match="Left tiles do not support ZZ layout on 'a5'"):
        compile_kernel(left_zz.kernel_def, Specialization(arch="a5"))


# ---------------------------------------------------------------- make_tile placements


@pytest.mark.parametrize("call, fragment", [
    ("pl.make_tile(VEC, addr=None)", "'addr' must be a compile-time integer, got 'None'"),
    ("pl.make_tile(VEC, addr=0x0, size=None)", "'size' must be a compile-time integer, got 'None'"),
])
def test_a_literal_none_placement_is_not_an_omitted_one(tmp_path, call, fragment):
    prelude = "VEC = pl.TileType(shape=[16, 64], dtype=pl.DT_FP16)"
    assert_refused(FinalRejectionError, fragment, tmp_path, "none", LAYOUT_PARAMS,
                   f"with pl.section_vector():\n    t = {call}\n", prelude=prelude)


def test_the_parser_error_base_is_reachable_as_pl_parser_parser_error(tmp_path):
    with pytest.raises(pl.parser.ParserError, match="do not support"):
        compile_source(tmp_path, "base", LAYOUT_PARAMS, _layout_body("Acc", "ZZ"))


# ---------------------------------------------------------------- operands named by keyword

VT = pl.TileType(shape=[32, 32], dtype=F32, target_memory=M.Vec)
PART = pl.TileType(shape=[16, 16], dtype=F32, target_memory=M.Vec)
WINDOW = pl.TileType(shape=[32, 32], dtype=F32, target_memory=M.Vec, valid_shape=[-1, -1])


@pl.jit
def keyword_operands(x: pl.Tensor[[32, 32], F32], y: pl.Tensor[[16, 16], F32],
                     z: pl.Tensor[[32, 32], F32], w: pl.Tensor[[32, 32], F32],
                     rows: pl.DT_INT64, cols: pl.DT_INT64):
    """The real builders' last operand by its name: `offsets=` of load / store, `offset=` of
    insert, `shape=` of set_validshape."""
    with pl.section_vector():
        a = pl.make_tile(VT, addr=0x0)
        s = pl.make_tile(PART, addr=0x1000)
        v = pl.make_tile(WINDOW, addr=0x2000)
        pl.load(a, x, offsets=[0, 0])
        pl.load(s, y, offsets=[0, 0])
        pl.set_validshape(v, shape=[rows, cols])
        pl.load(v, x, offsets=[0, 0])
        pl.system.bar_all()
        pl.insert(a, s, offset=[8, 16])
        pl.system.bar_all()
        pl.store(z, a, offsets=[0, 0])
        pl.store(w, v, offsets=[0, 0])


def test_last_operands_pass_by_their_keyword():
    x, y = torch.randn(32, 32), torch.randn(16, 16)

    def run():
        z, w = torch.zeros(32, 32), torch.zeros(32, 32)
        keyword_operands(x, y, z, w, 5, 24)
        return torch.cat([z, w])

    want_z = x.clone()
    want_z[8:24, 16:32] = y
    want_w = torch.zeros(32, 32)
    want_w[:5, :24] = x[:5, :24]
    assert torch.equal(sim_and_native(run), torch.cat([want_z, want_w]))


VEC_PRELUDE = ("VT = pl.TileType(shape=[32, 32], dtype=pl.DT_FP32)\n"
               "PART = pl.TileType(shape=[16, 16], dtype=pl.DT_FP32)\n"
               "WINDOW = pl.TileType(shape=[32, 32], dtype=pl.DT_FP32, valid_shape=[-1, -1])")


@pytest.mark.parametrize("name, line, fragment", [
    ("valid_zero", "pl.set_validshape(v, [0, 8])",
     "set_validshape row=0 must be positive (got 0). Valid shape dimensions must be >= 1."),
    ("valid_past", "pl.set_validshape(v, shape=[8, 40])",
     "set_validshape col=40 exceeds tile col=32. Valid shape must be <= tile shape."),
    ("insert_past", "pl.insert(a, s, offset=[32, 0])",
     "insert: offset[0] (32) exceeds source shape[0] (32)"),
    ("insert_three", "pl.insert(a, s, [0, 0, 0])", "offset must contain exactly 2 elements"),
])
def test_refused_extents(tmp_path, name, line, fragment):
    body = ("with pl.section_vector():\n    a = pl.make_tile(VT, addr=0x0)\n"
            "    s = pl.make_tile(PART, addr=0x1000)\n    v = pl.make_tile(WINDOW, addr=0x2000)\n"
            f"    {line}\n")
    assert_refused(ParserSyntaxError, fragment, tmp_path, name, LAYOUT_PARAMS, body,
                   prelude=VEC_PRELUDE)


# ---------------------------------------------------------------- make_tile_group arguments


@pytest.mark.parametrize("name, call, error, fragment", [
    ("positional", "pl.make_tile_group(VT, 0)", ParserSyntaxError,
     "pl.make_tile_group() takes keyword args only (type=, addrs=, mutex_ids=, depth=)"),
    ("no_addrs", "pl.make_tile_group(type=VT, mutex_ids=[0])", ParserTypeError,
     "pl.make_tile_group() missing required keyword 'addrs'"),
    ("not_a_type", "pl.make_tile_group(type=3, addrs=0, mutex_ids=[0])", ParserTypeError,
     "pl.make_tile_group() 'type' must be a pl.TileType"),
    ("ids_not_list", "pl.make_tile_group(type=VT, addrs=0, mutex_ids=3)", ParserTypeError,
     "make_tile_group() mutex_ids must be a list, tuple, or None"),
    ("id_32", "pl.make_tile_group(type=VT, addrs=0, mutex_ids=[0, 32])", ParserTypeError,
     "mutex_ids must be ints in [0,31], got 32"),
    ("empty_slot", "pl.make_tile_group(type=VT, addrs=0, mutex_ids=[[], [2]])", ParserTypeError,
     "make_tile_group() mutex ID sequence for a tile must not be empty"),
    ("repeated", "pl.make_tile_group(type=VT, addrs=0, mutex_ids=[[1, 1], [2, 3]])",
     ParserTypeError, "mutex IDs for one tile must not contain duplicates: (1, 1)"),
    ("uneven", "pl.make_tile_group(type=VT, addrs=0, mutex_ids=[[1, 2], [3]])", ParserTypeError,
     "all tiles in a tile group must have the same mutex ID count: 2 and 1"),
    ("no_ids_no_depth", "pl.make_tile_group(type=VT, addrs=0, mutex_ids=[])", ParserTypeError,
     "make_tile_group() depth is required when mutex_ids is None or empty"),
    ("depth_0", "pl.make_tile_group(type=VT, addrs=0, depth=0)", ParserTypeError,
     "make_tile_group() depth must be a positive compile-time integer, got 0"),
    ("depth_ids", "pl.make_tile_group(type=VT, addrs=0, mutex_ids=[0, 1], depth=3)",
     ParserTypeError, "make_tile_group() mutex_ids length 2 must equal depth 3"),
    ("addrs_count", "pl.make_tile_group(type=VT, addrs=[0, 0x1000, 0x2000], mutex_ids=[0, 1])",
     ParserTypeError, "make_tile_group() addrs length 3 must equal depth/len(mutex_ids) 2"),
])
def test_refused_tile_groups(tmp_path, name, call, error, fragment):
    body = f"with pl.section_vector():\n    g = {call}\n"
    assert_refused(error, fragment, tmp_path, name, LAYOUT_PARAMS, body, prelude=VEC_PRELUDE)


# ---------------------------------------------------------------- pl.move that is an insert

BIG = pl.TileType(shape=[32, 32], dtype=F32)
SMALL = pl.TileType(shape=[16, 16], dtype=F32)


@pl.jit
def moves(x: pl.Tensor[[32, 32], F32], y: pl.Tensor[[16, 16], F32], t: pl.Tensor[[64, 16], F32],
          z: pl.Tensor[[32, 32], F32], w: pl.Tensor[[16, 16], F32], v: pl.Tensor[[16, 64], F32]):
    """A smaller tile moved into a larger one at an offset is inserted there; a larger one moved
    into a smaller one gives the window at the offset; an NZ tile moved into a ZN tile of the
    reversed shape lands transposed."""
    with pl.section_vector():
        a = pl.make_tile(BIG, addr=0x0)
        s = pl.make_tile(SMALL, addr=0x1000)
        e = pl.make_tile(SMALL, addr=0x1400)
        nd = pl.make_tile(pl.TileType(shape=[64, 16], dtype=F32), addr=0x2000)
        nz = pl.make_tile(pl.TileType(shape=[64, 16], dtype=F32, layout=pl.NZ), addr=0x3000)
        zn = pl.make_tile(pl.TileType(shape=[32, 64], dtype=F32, layout=pl.ZN), addr=0x4000)
        back = pl.make_tile(pl.TileType(shape=[16, 64], dtype=F32), addr=0x6000)
        pl.load(a, x, [0, 0])
        pl.load(s, y, [0, 0])
        pl.load(nd, t, [0, 0])
        pl.system.bar_all()
        pl.move(e, a, [8, 16])
        pl.move(a, s, [8, 8])
        pl.move(nz, nd)
        pl.system.bar_all()
        pl.move(zn, nz, [0, 0])
        pl.system.bar_all()
        pl.move(back, zn, [0, 0])
        pl.system.bar_all()
        pl.store(z, a, [0, 0])
        pl.store(w, e, [0, 0])
        pl.store(v, back, [0, 0])


def test_a_move_into_a_larger_tile_inserts():
    x, y, t = torch.randn(32, 32), torch.randn(16, 16), torch.randn(64, 16)

    def run():
        z, w, v = torch.zeros(32, 32), torch.zeros(16, 16), torch.zeros(16, 64)
        moves(x, y, t, z, w, v)
        return torch.cat([z.flatten(), w.flatten(), v.flatten()])

    want_z = x.clone()
    want_z[8:24, 8:24] = y
    want = torch.cat([want_z.flatten(), x[8:24, 16:32].flatten(), t.T.flatten()])
    assert torch.equal(sim_and_native(run), want)


@pytest.mark.parametrize("name, line, fragment", [
    ("unequal", "pl.move(s, a)",
     "pl.move: dst tile shape [16, 16] != src tile shape [32, 32] — without offset, move "
     "requires equal shapes or a 2D transpose [M,N]->[N,M] (use offset= for sub-block "
     "extraction)."),
    ("wider", "pl.move(w, a, [0, 0])",
     "pl.move: with offset, dst dim 1 (64) exceeds src dim (32) — dst must be a sub-rectangle "
     "of src (dst shape=[16, 64], src shape=[32, 32])."),
    ("offset_past", "pl.move(s, a, [32, 0])", "move: offset[0] (32) exceeds source shape[0] (32)"),
])
def test_refused_moves(tmp_path, name, line, fragment):
    body = ("with pl.section_vector():\n    a = pl.make_tile(VT, addr=0x0)\n"
            "    s = pl.make_tile(PART, addr=0x1000)\n"
            "    w = pl.make_tile(pl.TileType(shape=[16, 64], dtype=pl.DT_FP32), addr=0x2000)\n"
            f"    {line}\n")
    assert_refused(ParserSyntaxError, fragment, tmp_path, name, LAYOUT_PARAMS, body,
                   prelude=VEC_PRELUDE)
