"""loop_invariant: pure, non-faulting scalar arithmetic leaves loops; results stay the same."""
from __future__ import annotations

import torch

import pypto_pro
import pypto_pro.language as pl
from pypto_pro.compiler import compile_kernel
from pypto_pro.ir.nodes import BinOp
from pypto_pro.ir.types import SectionKind
from pypto_pro.language import vf
from pypto_pro.passes import loop_invariant
from pypto_pro.passes.manager import PassContext
from pypto_pro.runtime.kernel_def import Specialization


def hoist(prog):
    return loop_invariant.run(prog, PassContext("vector"))


def test_outer_index_arithmetic_leaves_the_inner_loop(irb, trace):
    x = irb.tensor("x")
    t, mk = irb.make_tile("t", 0x0)
    i, j = irb.var("i"), irb.var("j")
    load = irb.ev("block.load", t, x, [irb.bin(BinOp.Mul, i, 64), irb.bin(BinOp.Mul, j, 64)])
    prog = irb.program([mk, irb.for_(i, 0, 3, [irb.for_(j, 0, 2, [load])])], params=(x,))
    out = hoist(prog)
    assert irb.text(out) == """\
for i in ir.range(0, 3, 1):
    inv = i * 64
    for j in ir.range(0, 2, 1):
        ir.eval(ir.call @block.load(t, x, [inv, j * 64]))
"""
    assert trace(out) == trace(prog)


def test_single_definitions_climb_as_far_as_they_can(irb, trace):
    x = irb.tensor("x")
    t, mk = irb.make_tile("t", 0x0)
    i, j, n, base = irb.var("i"), irb.var("j"), irb.var("n"), irb.var("base")
    inner = irb.for_(j, 0, 2, [irb.assign(base, irb.bin(BinOp.Mul, n, 4)),
                               irb.ev("block.load", t, x, [base, j])])
    prog = irb.program([mk, irb.for_(i, 0, 2, [inner])], params=(x, n))
    out = hoist(prog)
    assert irb.text(out).splitlines()[:2] == ["base = n * 4", "for i in ir.range(0, 2, 1):"]
    assert trace(out, n=3) == trace(prog, n=3)


def test_what_may_fault_or_change_stays(irb):
    x = irb.tensor("x")
    t, mk = irb.make_tile("t", 0x0)
    i, n, a, q = irb.var("i"), irb.var("n"), irb.var("a"), irb.var("q")
    read = irb.call("block.getval", t, 0, ty=irb.INDEX)
    body = [irb.assign(q, irb.bin(BinOp.FloorDiv, 100, n)),
            irb.assign(a, irb.bin(BinOp.Add, read, 1)),
            irb.ev("block.load", t, x, [q, a])]
    prog = irb.program([mk, irb.for_(i, 0, n, body)], params=(x, n))
    assert hoist(prog) is prog


def test_nothing_leaves_a_vf_section(irb):
    t, mk = irb.make_tile("t", 0x0)
    i, n = irb.var("i"), irb.var("n")
    vf = irb.section([irb.ev("vf.load_align", t, irb.bin(BinOp.Mul, n, 64))], SectionKind.VF)
    prog = irb.program([mk, irb.for_(i, 0, 4, [vf])], params=(n,))
    assert hoist(prog) is prog


def test_a_multiply_assigned_variable_stays_in_the_loop(irb):
    i, n, c = irb.var("i"), irb.var("n"), irb.var("c")
    prog = irb.program([irb.assign(c, 0), irb.for_(i, 0, 4, [irb.assign(c, n)])], params=(n,))
    assert hoist(prog) is prog


ROW = pl.TileType([1, 64], pl.DT_FP32)


@pl.vector_function
def double_twice(dst, a):
    full = vf.create_mask(pl.MaskPattern.ALL, dtype=pl.DT_FP32)
    for _ in pl.range(2):
        av = vf.load_align(a, 0)
        sv = vf.add(av, av, full)
        vf.store_align(dst, sv, full)


@pl.jit(arch="a5")
def ring_in_vf_loop_kernel(x: pl.Tensor[[3, 64], pl.DT_FP32], y: pl.Tensor[[4, 64], pl.DT_FP32]):
    with pl.section_vector():
        ring = pl.make_tile_group(type=ROW, addrs=[0x0, 0x100, 0x200], mutex_ids=[0, 1, 2])
        out = pl.make_tile(ROW, addr=0x400)
        for r in pl.range(3):
            pl.load(ring[r], x, [r, 0])
        pl.system.bar_all()
        for kk in pl.range(4):
            double_twice(out, ring[(kk + 1) % 3])
            pl.system.bar_all()
            pl.store(y, out, [kk, 0])
            pl.system.bar_all()


def test_tile_operands_in_a_vf_section_stay_in_its_loops():
    """`(kk + 1) % 3` is invariant in the section's inner loop, but it is part of a tile operand,
    which the section binds at launch: a temporary set in the body would not exist yet."""
    x, y = torch.randn(3, 64, generator=torch.Generator().manual_seed(3)), torch.zeros(4, 64)
    with pypto_pro.use_backend("sim"):
        ring_in_vf_loop_kernel[None, 1](x, y)
    torch.testing.assert_close(y, torch.stack([2 * x[(k + 1) % 3] for k in range(4)]),
                               rtol=0, atol=0)
    compiled = compile_kernel(ring_in_vf_loop_kernel.kernel_def, Specialization(arch="a5"))
    assert "inv" not in compiled.ir("vector")
