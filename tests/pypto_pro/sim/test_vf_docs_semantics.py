"""The Reg API as the real PyPTO Pro documents and compiles it (issue 21: its documentation's
vector-function examples run here unchanged): whole kernels written from what the docs say,
checked against torch on the simulator and natively (bit-identical), one test per class that
failed: result types inferred like the real parser (predicates, align registers, registers the
target already names), two-result ops, the offset forms (`[row, col]`, AddrReg, post-update
cursors, the positional store offset), scalar compare operands, tile sizes below the shape, and
the values the docs' examples computed wrong here (cast layouts, exp_sub to FP32, byte and
block gathers, the vector-mask SPR, vf.load's post-update, DEC ranges). Bad uses end in a typed
error at the kernel line."""
from __future__ import annotations

import shutil

import pytest
import torch

import pypto_pro
import pypto_pro.language as pl
from pypto_pro.errors import ParserTypeError
from pypto_pro.language import vf

F, H, I, U32, U16, U8 = (pl.DT_FP32, pl.DT_FP16, pl.DT_INT32, pl.DT_UINT32, pl.DT_UINT16,
                         pl.DT_UINT8)
BACKENDS = ["sim"] + (["native"] if shutil.which("g++") else [])


def vec(dtype, cols: int, rows: int = 1):
    return pl.TileType(shape=[rows, cols], dtype=dtype, target_memory=pl.MemorySpace.Vec)


def loads_done():
    pl.system.sync_src(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.V, event_id=0)
    pl.system.sync_dst(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.V, event_id=0)


def vector_done():
    pl.system.sync_src(set_pipe=pl.PipeType.V, wait_pipe=pl.PipeType.MTE3, event_id=0)
    pl.system.sync_dst(set_pipe=pl.PipeType.V, wait_pipe=pl.PipeType.MTE3, event_id=0)


def run(kernel, *args) -> list[torch.Tensor]:
    """The last argument after a launch on every backend (the same inputs each time)."""
    outs = []
    for backend in BACKENDS:
        copies = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
        with pypto_pro.use_backend(backend):
            kernel[None, 1](*copies)
        outs.append(copies[-1])
    for other in outs[1:]:  # native bit-identical to the simulator
        assert torch.equal(other.view(torch.uint8), outs[0].view(torch.uint8))
    return outs


def randn(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


# ---------------------------------------------------------------- result types


@pl.vector_function
def mask_algebra(x_t, o_t):
    every = vf.create_mask(pattern=pl.MaskPattern.ALL, dtype=F)
    x = vf.load_align(x_t, 0)
    pos = vf.ge(x, 0.0, every)  # a scalar second operand: vcmps
    neg = vf.not_(pos, every)  # unified ops on predicates give predicates
    small = vf.lt(x, 1.0, every)
    band = vf.and_(pos, small, every)
    either = vf.or_(band, neg, every)
    picked = vf.select(band, neg, small)
    copy = vf.move(picked)
    packed = vf.pack(copy, part=pl.PackPart.UPPER)
    copy = vf.unpack(packed, part=pl.PackPart.UPPER)
    lo, hi = vf.interleave(copy, either)
    copy, either = vf.de_interleave(lo, hi)
    a = vf.abs(x, copy)
    vf.store_align(o_t, a, every)
    b = vf.abs(x, either)
    vf.store_align(o_t, b, every, 64)


@pl.jit()
def mask_kernel(x: pl.Tensor[[1, 64], F], out: pl.Tensor[[1, 128], F]):
    xt = pl.make_tile(vec(F, 64), addr=0)
    ot = pl.make_tile(vec(F, 128), addr=0x400)
    with pl.section_vector():
        pl.load(xt, x, [0, 0])
        loads_done()
        mask_algebra(xt, ot)
        vector_done()
        pl.store(out, ot, [0, 0])


def test_predicate_forms_of_the_unified_ops():
    x = randn(1, 64)
    pos, small = x >= 0, x < 1
    band = pos & small
    for out in run(mask_kernel, x, torch.zeros(1, 128)):
        picked = torch.where(small, band, ~pos)  # select(band, ¬pos, small)
        assert torch.equal(out[:, :64], torch.where(picked, x.abs(), 0))
        assert torch.equal(out[:, 64:], torch.where(band | ~pos, x.abs(), 0))


@pl.vector_function
def histogram_into_u16(x_t, o_t):
    b8 = vf.create_mask(pattern=pl.MaskPattern.ALL, dtype=U8)
    b16 = vf.create_mask(pattern=pl.MaskPattern.ALL, dtype=U16)
    codes = vf.load_align(x_t, 0)
    acc = vf.full(0, b16, dtype=U16)
    acc = vf.histograms(codes, b8, hist_type=pl.HistType.FREQUENCY)  # into acc's UINT16 lanes
    acc = vf.histograms(codes, b8, bin_type=pl.BinType.BIN1)  # ACCUMULATE: running counts
    vf.store_align(o_t, acc, b16)


@pl.jit()
def histogram_kernel(x: pl.Tensor[[1, 256], U8], out: pl.Tensor[[1, 128], pl.DT_INT16]):
    xt = pl.make_tile(vec(U8, 256), addr=0)
    ot = pl.make_tile(vec(pl.DT_INT16, 128), addr=0x400)
    with pl.section_vector():
        pl.load(xt, x, [0, 0])
        loads_done()
        histogram_into_u16(xt, ot)
        vector_done()
        pl.store(out, ot, [0, 0])


def test_a_result_written_into_the_register_its_name_holds():
    codes = torch.randint(0, 256, (1, 256), generator=torch.Generator().manual_seed(3)).to(
        torch.uint8)
    counts = torch.bincount(codes.flatten().long(), minlength=256)
    expected = counts[:128] + torch.cumsum(counts[128:], 0)
    for out in run(histogram_kernel, codes, torch.zeros(1, 128, dtype=torch.int16)):
        assert torch.equal(out.flatten().long(), expected)


@pl.vector_function
def mask_through_ub(x_t, m_t, o_t):
    every = vf.create_mask(pattern=pl.MaskPattern.ALL, dtype=F)
    x = vf.load_align(x_t, 0)
    pos = vf.gt(x, 0.0, every)
    vf.store_align(m_t, pos, dist=pl.StoreDist.PACK)  # psts PK: 16 bytes
    vf.mem_bar(mode=pl.MemBarMode.VST_VLD)
    back = vf.create_mask(pattern=pl.MaskPattern.ALLF, dtype=F)
    back = vf.load_align(m_t, dist=pl.LoadDist.US)  # into the predicate `back` names: plds
    r = vf.neg(x, back)
    vf.store_align(o_t, r, every)


@pl.jit()
def mask_ub_kernel(x: pl.Tensor[[1, 64], F], out: pl.Tensor[[1, 64], F]):
    xt = pl.make_tile(vec(F, 64), addr=0)
    mt = pl.make_tile(vec(U32, 64), addr=0x100)
    ot = pl.make_tile(vec(F, 64), addr=0x200)
    with pl.section_vector():
        pl.load(xt, x, [0, 0])
        loads_done()
        mask_through_ub(xt, mt, ot)
        vector_done()
        pl.store(out, ot, [0, 0])


def test_a_predicate_stored_packed_and_loaded_back():
    x = randn(1, 64, seed=1)
    for out in run(mask_ub_kernel, x, torch.zeros(1, 64)):
        assert torch.equal(out, torch.where(x > 0, -x, 0))


# ---------------------------------------------------------------- two results


@pl.vector_function
def wide_arith(a_t, b_t, o_t):
    every = vf.create_mask(pattern=pl.MaskPattern.ALL, dtype=U32)
    a = vf.load_align(a_t, 0, dtype=U32)
    b = vf.load_align(b_t, 0, dtype=U32)
    lo, hi = vf.mull(a, b, every)
    vf.store_align(o_t, lo, every, 0)
    vf.store_align(o_t, hi, every, 64)
    # 64-bit a·2^32 + a plus b: the low words' carry goes into the high words
    zero = vf.create_mask(pattern=pl.MaskPattern.ALLF, dtype=U32)
    carry, low = vf.addc(a, b, zero, every)
    carry, high = vf.addc(a, hi, carry, every)
    vf.store_align(o_t, low, every, 128)
    vf.store_align(o_t, high, every, 192)
    one = vf.create_mask(pattern=pl.MaskPattern.ALL, dtype=U32)
    borrow, diff = vf.subc(a, b, one, every)  # the carry in set: a - b
    vf.store_align(o_t, diff, every, 256)
    flags = vf.unsqueeze(borrow, dtype=U32)  # lane i: borrows before lane i
    vf.store_align(o_t, flags, every, 320)
    ev, od = vf.interleave(a, b)
    ev, od = vf.de_interleave(ev, od)
    vf.store_align(o_t, od, every, 384)


@pl.jit()
def wide_kernel(a: pl.Tensor[[1, 64], I], b: pl.Tensor[[1, 64], I],
                out: pl.Tensor[[1, 448], I]):
    at = pl.make_tile(vec(I, 64), addr=0)
    bt = pl.make_tile(vec(I, 64), addr=0x100)
    ot = pl.make_tile(vec(I, 448), addr=0x200)
    with pl.section_vector():
        pl.load(at, a, [0, 0])
        pl.load(bt, b, [0, 0])
        loads_done()
        wide_arith(at, bt, ot)
        vector_done()
        pl.store(out, ot, [0, 0])


def test_two_result_ops():
    g = torch.Generator().manual_seed(5)
    a = torch.randint(0, 2**32, (1, 64), generator=g, dtype=torch.int64)
    b = torch.randint(0, 2**32, (1, 64), generator=g, dtype=torch.int64)
    mask32 = 2**32 - 1
    product = [x * y for x, y in zip(a.flatten().tolist(), b.flatten().tolist())]
    hi = torch.tensor([p >> 32 for p in product])
    low = a + b
    borrow = (a < b).long().flatten()
    expected = torch.cat([
        torch.tensor([p & mask32 for p in product]), hi, (low & mask32).flatten(),
        (a + hi.reshape(1, -1) + (low >> 32)).flatten() & mask32, ((a - b) & mask32).flatten(),
        torch.cumsum(borrow, 0) - borrow, b.flatten()])
    for out in run(wide_kernel, a.to(torch.int32), b.to(torch.int32),
                   torch.zeros(1, 448, dtype=torch.int32)):
        assert torch.equal(out.flatten().long() & mask32, expected)


# ---------------------------------------------------------------- offsets and cursors


@pl.vector_function
def offsets(x_t, o_t):
    every = vf.create_mask(pattern=pl.MaskPattern.ALL, dtype=F)
    first = vf.create_mask(pattern=pl.MaskPattern.VL16, dtype=F)
    for i in pl.range(2):
        row = vf.load_align(x_t, [i + 1, 0])  # [row, col] of a [4, 64] tile
        vf.store_align(o_t, row, every, [i, 0])  # the 4th operand: an offset
    for i in pl.range(2):
        at = vf.create_addr_reg(i, 64, dtype=F)
        r = vf.load_align(x_t, at)
        vf.store_align(o_t + 128, r, every, at)
    for i in pl.range(4):
        r = vf.load_align(x_t, 16, post_update=True)  # at the cursor, then 16 on
        vf.store_align(o_t + 256, r, first, 16, post_update=True)
    ev, od = vf.load_align(x_t, 0, dist=pl.LoadDist.DINTLV_B32)
    vf.store_align(o_t + 320, od, ev, every, dist=pl.StoreDist.INTLV)


@pl.jit()
def offsets_kernel(x: pl.Tensor[[4, 64], F], out: pl.Tensor[[7, 64], F]):
    xt = pl.make_tile(vec(F, 64, 4), addr=0)
    ot = pl.make_tile(vec(F, 64, 7), addr=0x400, size=256)  # a span below the shape is legal
    with pl.section_vector():
        pl.load(xt, x, [0, 0])
        loads_done()
        offsets(xt, ot)
        vector_done()
        pl.store(out, ot, [0, 0])


def test_offset_forms_and_post_update_cursors():
    x = randn(4, 64, seed=2)
    flat = x.flatten()
    pairs = flat[:128].reshape(64, 2)
    expected = torch.cat([flat[64:192], flat[:128], flat[:64],
                          torch.stack([pairs[:, 1], pairs[:, 0]], dim=1).flatten()])
    for out in run(offsets_kernel, x, torch.zeros(7, 64)):
        assert torch.equal(out.flatten(), expected)


@pl.vector_function
def compact_positives(x_t, o_t, n_t):
    every = vf.create_mask(pattern=pl.MaskPattern.ALL, dtype=F)
    ureg = vf.unalign_reg_for_store()
    total = vf.full(0, every, dtype=I)
    for k in pl.range(4):
        x = vf.load_align(x_t, k * 64)
        keep = vf.gt(x, 0.0, every)
        packed = vf.squeeze(x, keep, gather_mode=pl.SqueezeMode.STORE_REG)
        vf.store_unalign(o_t, packed, ureg)  # the AR's byte count, cursor moved on by it
        total = vf.adds(total, pl.get_spr(), every)
    vf.store_unalign_post(o_t, ureg)
    vf.store_align(n_t, total, every)


@pl.jit()
def compact_kernel(x: pl.Tensor[[1, 256], F], out: pl.Tensor[[1, 256], F],
                   n: pl.Tensor[[1, 64], I]):
    xt = pl.make_tile(vec(F, 256), addr=0)
    ot = pl.make_tile(vec(F, 256), addr=0x400)
    nt = pl.make_tile(vec(I, 64), addr=0x800)
    with pl.section_vector():
        pl.load(xt, x, [0, 0])
        pl.load(ot, out, [0, 0])
        loads_done()
        compact_positives(xt, ot, nt)
        vector_done()
        pl.store(out, ot, [0, 0])
        pl.store(n, nt, [0, 0])


def test_squeeze_and_unaligned_stores_compact_a_stream():
    x = randn(1, 256, seed=4)
    kept = x[x > 0]
    for backend in BACKENDS:
        out, n = torch.zeros(1, 256), torch.zeros(1, 64, dtype=torch.int32)
        with pypto_pro.use_backend(backend):
            compact_kernel[None, 1](x, out, n)
        assert torch.equal(out[0, :kept.numel()], kept) and not out[0, kept.numel():].any()
        assert (n == 4 * kept.numel()).all()  # the AR counts bytes


@pl.vector_function
def unaligned_copy(x_t, o_t):
    every = vf.create_mask(pattern=pl.MaskPattern.ALL, dtype=F)
    src = vf.load_unalign_init()
    vf.load_unalign_pre(src, x_t + 3)
    dst = vf.unalign_reg_for_store()
    for k in pl.range(2):
        r = vf.load_unalign(src, x_t + 3, 64)  # its dtype from the tile
        vf.store_unalign(o_t + 5, r, dst, 64, post_update=True)
    vf.store_unalign_post(o_t + 5, dst)
    r = vf.load(x_t + 1, 64)
    r = vf.load(x_t + 1, 64)  # vf.load's post-update: the second 64 lanes
    vf.store_align(o_t, r, every, 192)


@pl.jit()
def unaligned_kernel(x: pl.Tensor[[1, 256], F], out: pl.Tensor[[1, 256], F]):
    xt = pl.make_tile(vec(F, 256), addr=0)
    ot = pl.make_tile(vec(F, 256), addr=0x400)
    with pl.section_vector():
        pl.load(xt, x, [0, 0])
        pl.load(ot, out, [0, 0])
        loads_done()
        unaligned_copy(xt, ot)
        vector_done()
        pl.store(out, ot, [0, 0])


def test_unaligned_loads_and_stores():
    x = randn(1, 256, seed=6)
    for out in run(unaligned_kernel, x, torch.zeros(1, 256)):
        assert torch.equal(out[0, 5:133], x[0, 3:131]) and not out[0, :5].any()
        assert torch.equal(out[0, 192:], x[0, 65:129])


# ---------------------------------------------------------------- values


@pl.vector_function
def layouts(h_t, e_t, o_t):
    b16 = vf.create_mask(pattern=pl.MaskPattern.ALL, dtype=H)
    b32 = vf.create_mask(pattern=pl.MaskPattern.ALL, dtype=F)
    b8 = vf.create_mask(pattern=pl.MaskPattern.ALL, dtype=pl.DT_FP8E4M3FN)
    a = vf.load_align(h_t, 0)
    b = vf.load_align(h_t, 128)
    e = vf.exp_sub(a, b, b16, layout=pl.CastLayout.ONE, dtype=F)  # odd FP16 lanes
    vf.store_align(o_t, e, b32, 0)
    e8 = vf.load_align(e_t, 0, dtype=pl.DT_FP8E4M3FN)
    w = vf.astype(e8, b32, layout=pl.CastLayout.THREE, dtype=F)  # FP8 lanes 3, 7, 11, ...
    vf.store_align(o_t, w, b32, 64)
    back = vf.astype(w, b32, dtype=pl.DT_FP8E4M3FN, saturate=pl.SaturateMode.ON)
    vf.store_align(e_t, back, b8)  # FP8 lanes 0, 4, 8, ...; the others zero
    hm = vf.muls_cast(w, 0.5, b32, dtype=H)  # even FP16 lanes, rounded half away from zero
    vf.store_align(o_t, hm, b16, 128)


@pl.jit()
def layout_kernel(h: pl.Tensor[[1, 256], H], e: pl.Tensor[[1, 256], pl.DT_FP8E4M3FN],
                  out: pl.Tensor[[1, 192], F]):
    ht = pl.make_tile(vec(H, 256), addr=0)
    et = pl.make_tile(vec(pl.DT_FP8E4M3FN, 256), addr=0x200)
    ot = pl.make_tile(vec(F, 192), addr=0x400)
    with pl.section_vector():
        pl.load(ht, h, [0, 0])
        pl.load(et, e, [0, 0])
        loads_done()
        layouts(ht, et, ot)
        vector_done()
        pl.store(out, ot, [0, 0])
        pl.store(e, et, [0, 0])


def test_cast_layouts_place_the_narrow_lanes():
    h = (randn(1, 256, seed=7) * 0.5).half()
    e = randn(1, 256, seed=8).to(torch.float8_e4m3fn)
    for backend in BACKENDS:
        out, e8 = torch.zeros(1, 192), e.clone()
        with pypto_pro.use_backend(backend):
            layout_kernel[None, 1](h, e8, out)
        odd = torch.exp(h[0, 1:128:2].float() - h[0, 129:256:2].float())
        assert torch.equal(out[0, :64], odd)
        wide = e[0, 3::4].float()
        assert torch.equal(out[0, 64:128], wide)
        assert torch.equal(e8.view(torch.uint8)[0, 0::4], wide.to(torch.float8_e4m3fn).view(
            torch.uint8)) and not e8.view(torch.uint8)[0].reshape(-1, 4)[:, 1:].any()
        halves = out[0, 128:].view(torch.float16)
        assert torch.equal(halves[0::2], (wide * 0.5).half()) and not halves[1::2].any()


@pl.vector_function
def gathers(b_t, f_t, o_t, w_t):
    every = vf.create_mask(pattern=pl.MaskPattern.ALL, dtype=F)
    b16 = vf.create_mask(pattern=pl.MaskPattern.ALL, dtype=pl.DT_INT16)
    idx = vf.arange(100, index_order=pl.IndexOrder.DECREASE_ORDER, dtype=U16)  # 227, ..., 100
    wide = vf.gather(b_t, idx, b16)  # bytes zero-extended into 16-bit slots
    vf.store_align(w_t, wide, b16, dist=pl.StoreDist.NORM_B16)
    blocks = vf.arange(0, dtype=U32)
    blocks = vf.shift_left(blocks, 6, every)  # every other 32-byte block
    r = vf.gather(f_t, blocks, every, data_copy_mode=pl.DataCopyMode.DATA_BLOCK_LOAD)
    vf.store_align(o_t, r, every)


@pl.jit()
def gather_kernel(b: pl.Tensor[[1, 256], pl.DT_INT8], f: pl.Tensor[[1, 256], F],
                  out: pl.Tensor[[1, 64], F], wide: pl.Tensor[[1, 128], pl.DT_INT16]):
    bt = pl.make_tile(vec(pl.DT_INT8, 256), addr=0)
    ft = pl.make_tile(vec(F, 256), addr=0x100)
    ot = pl.make_tile(vec(F, 64), addr=0x500)
    wt = pl.make_tile(vec(pl.DT_INT16, 128), addr=0x600)
    with pl.section_vector():
        pl.load(bt, b, [0, 0])
        pl.load(ft, f, [0, 0])
        loads_done()
        gathers(bt, ft, ot, wt)
        vector_done()
        pl.store(out, ot, [0, 0])
        pl.store(wide, wt, [0, 0])


def test_byte_and_block_gathers():
    b = torch.randint(-128, 128, (1, 256), generator=torch.Generator().manual_seed(9)).to(
        torch.int8)
    f = randn(1, 256, seed=10)
    for backend in BACKENDS:
        out, wide = torch.zeros(1, 64), torch.zeros(1, 128, dtype=torch.int16)
        with pypto_pro.use_backend(backend):
            gather_kernel[None, 1](b, f, out, wide)
        assert torch.equal(wide[0], b[0, 100:228].flip(0).view(torch.uint8).to(torch.int16))
        assert torch.equal(out[0], f[0, :128].reshape(16, 8)[0::2].flatten())


@pl.vector_function
def spr_mask(x_t, o_t):
    every = vf.create_mask(pattern=pl.MaskPattern.ALL, dtype=F)
    x = vf.load_align(x_t, 0)
    m = vf.get_mask_spr(width=pl.MaskWidth.B32)
    r = vf.neg(x, m)
    vf.store_align(o_t, r, every)


@pl.jit()
def spr_kernel(x: pl.Tensor[[1, 64], F], out: pl.Tensor[[1, 64], F]):
    xt = pl.make_tile(vec(F, 64), addr=0)
    ot = pl.make_tile(vec(F, 64), addr=0x100)
    with pl.section_vector():
        pl.load(xt, x, [0, 0])
        pl.set_mask_norm()
        pl.set_vec_mask(0, 0xFF00FF00)
        loads_done()
        spr_mask(xt, ot)
        vector_done()
        pl.reset_mask()  # after the section was issued: it read the SPR set above
        pl.store(out, ot, [0, 0])


def test_get_mask_spr_reads_set_vec_mask():
    x = randn(1, 64, seed=11)
    on = torch.tensor([(0xFF00FF00 >> i) & 1 == 1 for i in range(64)])
    for out in run(spr_kernel, x, torch.zeros(1, 64)):
        assert torch.equal(out[0], torch.where(on, -x[0], 0))


# ---------------------------------------------------------------- errors


def _parse(body):
    @pl.jit()
    def k(x: pl.Tensor[[1, 64], F]):
        t = pl.make_tile(vec(F, 64), addr=0)
        with pl.section_vector():
            body(t)

    return k


def test_a_dintlv_load_needs_two_names():
    @pl.vector_function
    def one_name(t):
        r = vf.load_align(t, 0, dist=pl.LoadDist.DINTLV_B32)
        vf.store_align(t, r, vf.create_mask(dtype=F))

    with pytest.raises(ParserTypeError, match="loads two registers") as err:
        _parse(one_name)[None, 1](torch.zeros(1, 64))
    assert err.value.span is not None and err.value.span.line > 0


def test_a_type_changing_op_needs_dtype():
    @pl.vector_function
    def no_dtype(t):
        every = vf.create_mask(dtype=I)
        r = vf.load_align(t, 0, dtype=I)
        p = vf.pack(r, part=pl.PackPart.LOWER)
        vf.store_align(t, p, every)

    with pytest.raises(ParserTypeError, match="requires explicit dtype kwarg"):
        _parse(no_dtype)[None, 1](torch.zeros(1, 64))


@pl.jit()
def wide_store_kernel(x: pl.Tensor[[1, 128], F], out: pl.Tensor[[1, 64], F]):
    t = pl.make_tile(vec(F, 128), addr=0, size=256)
    with pl.section_vector():
        pl.load(t, x, [0, 0])
        pl.system.bar_all()
        pl.store(out, t, [0, 0])


def test_a_tile_stored_past_its_tensor_lands_in_the_allocators_reserve():
    """The docs' load_align examples store a [1, 128] tile into a [1, 64] tensor: on the NPU the
    extra bytes land in the allocator's reserve (soc.device_allocation), so the timing simulator
    keeps the tensor's 64 values and discards the rest (its bus model saw the window first)."""
    x, out = torch.randn(1, 128), torch.zeros(1, 64)
    with pypto_pro.use_backend("sim"):
        wide_store_kernel[None, 1](x, out)
    assert torch.equal(out, x[:, :64])
