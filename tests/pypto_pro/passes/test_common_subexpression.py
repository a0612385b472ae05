"""common_subexpression: repeated index arithmetic is computed once; nothing else moves."""
from __future__ import annotations

import torch

import pypto_pro
import pypto_pro.language as pl
from pypto_pro.codegen import generate
from pypto_pro.compiler import compile_kernel
from pypto_pro.ir.nodes import BinOp
from pypto_pro.ir.types import PipeType
from pypto_pro.language import vf
from pypto_pro.passes import common_subexpression
from pypto_pro.passes.manager import PassContext
from pypto_pro.runtime.kernel_def import Specialization


def cse(prog):
    return common_subexpression.run(prog, PassContext("vector"))


def loads(irb, x, t, *offsets):
    return [irb.ev("block.load", t, x, list(o)) for o in offsets]


def test_repeated_offsets_are_named_once(irb, trace):
    x = irb.tensor("x")
    t, mk = irb.make_tile("t", 0x0)
    i = irb.var("i")
    off = irb.bin(BinOp.Mul, i, 64)
    body = [mk, *loads(irb, x, t, (off, 0), (off, irb.bin(BinOp.Add, off, 1)))]
    prog = irb.program([irb.for_(i, 0, 4, body)], params=(x,))
    out = cse(prog)
    text = irb.text(out)
    assert text.count("i * 64") == 1
    assert "cse = i * 64" in text and "[cse, cse + 1]" in text
    assert trace(out) == trace(prog)


def test_an_assigned_value_is_reused_until_its_inputs_change(irb, trace):
    x = irb.tensor("x")
    t, mk = irb.make_tile("t", 0x0)
    i, a = irb.var("i"), irb.var("a")
    prog = irb.program([
        mk, irb.assign(i, 3), irb.assign(a, irb.bin(BinOp.Mul, i, 8)),
        *loads(irb, x, t, (irb.bin(BinOp.Mul, i, 8), 0)),
        irb.assign(i, 4),
        *loads(irb, x, t, (irb.bin(BinOp.Mul, i, 8), a)),
    ], params=(x,))
    out = cse(prog)
    text = irb.text(out)
    assert "ir.eval(ir.call @block.load(t, x, [a, 0]))" in text
    assert "ir.eval(ir.call @block.load(t, x, [i * 8, a]))" in text
    assert trace(out) == trace(prog)


def test_reads_of_memory_state_are_never_merged(irb):
    t, mk = irb.make_tile("t", 0x0)
    a, b = irb.var("a"), irb.var("b")
    read = irb.call("block.getval", t, 0, ty=irb.INDEX)
    prog = irb.program([mk, irb.assign(a, irb.bin(BinOp.Add, read, 1)),
                        irb.ev("block.setval", t, 0, 5),
                        irb.assign(b, irb.bin(BinOp.Add, read, 1))])
    assert cse(prog) is prog


def test_temporaries_go_above_the_locks_of_their_first_use(irb):
    x = irb.tensor("x")
    t, mk = irb.make_tile("t", 0x0)
    i = irb.var("i")
    off = irb.bin(BinOp.Mul, i, 64)
    lock = irb.ev("system.mutex_lock", pipe=PipeType.MTE2, mutex_id=1)
    unlock = irb.ev("system.mutex_unlock", pipe=PipeType.MTE2, mutex_id=1)
    body = [mk, irb.ev("block.exp", t, t), unlock, lock, *loads(irb, x, t, (off, 0), (off, 1))]
    lines = irb.text(cse(irb.program(body, params=(x, i)))).splitlines()
    at = lines.index("cse = i * 64")
    assert "mutex_unlock" in lines[at - 1] and "mutex_lock" in lines[at + 1]


def test_mutex_ids_stay_as_written(irb):
    i = irb.var("i")
    ident = irb.bin(BinOp.FloorMod, irb.bin(BinOp.Add, i, 1), 2)
    prog = irb.program([irb.ev("system.mutex_lock_dyn", ident, pipe=PipeType.V),
                        irb.ev("system.mutex_unlock_dyn", ident, pipe=PipeType.V)], params=(i,))
    assert cse(prog) is prog


ROW = pl.TileType([1, 64], pl.DT_FP32)


@pl.vector_function
def add_rows(dst, a, b):
    full = vf.create_mask(pl.MaskPattern.ALL, dtype=pl.DT_FP32)
    av = vf.load_align(a, 0)
    bv = vf.load_align(b, 0)
    sv = vf.add(av, bv, full)
    vf.store_align(dst, sv, full)


@pl.jit(arch="a5")
def ring_twice_kernel(x: pl.Tensor[[3, 64], pl.DT_FP32], y: pl.Tensor[[4, 64], pl.DT_FP32]):
    with pl.section_vector():
        ring = pl.make_tile_group(type=ROW, addrs=[0x0, 0x100, 0x200], mutex_ids=[0, 1, 2])
        out = pl.make_tile(ROW, addr=0x400)
        for r in pl.range(3):
            pl.load(ring[r], x, [r, 0])
        pl.system.bar_all()
        for k in pl.range(4):
            add_rows(out, ring[k % 3], ring[k % 3])
            pl.system.bar_all()
            pl.store(y, out, [k, 0])
            pl.system.bar_all()


def test_tile_operands_of_a_vf_section_are_left_as_written():
    """`k % 3` occurs twice in the section, but only inside its ops' tile operands, which are
    bound when the section launches: a temporary set in its body would not exist yet."""
    x, y = torch.randn(3, 64, generator=torch.Generator().manual_seed(2)), torch.zeros(4, 64)
    with pypto_pro.use_backend("sim"):
        ring_twice_kernel[None, 1](x, y)
    torch.testing.assert_close(y, torch.stack([2 * x[k % 3] for k in range(4)]), rtol=0, atol=0)
    compiled = compile_kernel(ring_twice_kernel.kernel_def, Specialization(arch="a5"))
    ir_text = compiled.ir("vector")
    assert ir_text.count("ir.call @tile_group.get(ring, k % 3)") == 2
    assert "cse" not in ir_text and "cse" not in generate(compiled).files()["kernel.cpp"]
