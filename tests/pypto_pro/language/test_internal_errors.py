"""Crashes that were ours (issue 21, class 8), each now computing what the real PyPTO Pro does,
and the guarantee behind them: an internal failure of the parser, a pass or the code generator
reaches the user as a typed error pointing at a kernel line, never as a bare Python exception.
"""
from __future__ import annotations


import pytest
import torch
from dual_backend import sim_and_native
from kernel_source import line_of

import pypto_pro.language as pl
from pypto_pro.errors import CodegenInner, InvalidArgument, ParserSyntaxError, PassInner
from pypto_pro.runtime.tilingkey import TilingKeyField

N_LINES, LINE = 512, 128
VEC = pl.TileType(shape=[32, 32], dtype=pl.DT_FP16, target_memory=pl.MemorySpace.Vec)


# ---------------------------------------------------------------- an int where IR was expected


@pl.jit(auto_mutex=True)
def gather_rows(x: pl.Tensor[[N_LINES, LINE], pl.DT_FP16],
                strides: pl.Tensor[[1, 1], pl.DT_INT32],
                out: pl.Tensor[[2, LINE], pl.DT_FP16]):
    """The set_stride example of the docs: a row stride read from GM with `strides[0, 0]`."""
    ub_type = pl.TileType(shape=[2, LINE], dtype=pl.DT_FP16, target_memory=pl.MemorySpace.Vec)
    ub_db = pl.make_tile_group(type=ub_type, addrs=0x0000, mutex_ids=[0, 1])
    with pl.section_vector():
        s = strides[0, 0]
        tile = ub_db.next()
        pl.set_stride(x, [s, 1])
        pl.load(tile, x, [0, 0])
        pl.store(out, tile, [0, 0])


def test_set_stride_with_a_stride_read_from_a_tensor_element():
    x = torch.randn(N_LINES, LINE).half()

    def run():
        out = torch.zeros(2, LINE).half()
        gather_rows(x, torch.tensor([[5 * LINE]], dtype=torch.int32), out)
        return out

    assert torch.equal(sim_and_native(run), x[[0, 5]])


@pl.jit(auto_mutex=True)
def copy_first_element(scale: pl.Tensor[[2], pl.DT_FP32]):
    """The tensor-element example of the getval docs (no section: runs on the vector core)."""
    value = scale[0]
    scale[1] = value


def test_tensor_element_read_with_constant_indices():
    def run():
        scale = torch.tensor([3.5, 1.0])
        copy_first_element(scale)
        return scale

    assert sim_and_native(run).tolist() == [3.5, 3.5]


# ---------------------------------------------------------------- pl.jit of a jitted kernel


def test_jit_of_an_already_jitted_kernel_is_the_same_kernel():
    assert pl.jit(gather_rows) is gather_rows
    assert pl.jit(auto_mutex=False)(gather_rows) is gather_rows
    again = pl.jit(copy_first_element)
    scale = torch.tensor([2.0, 0.0])
    again(scale)
    assert scale.tolist() == [2.0, 2.0]


# ---------------------------------------------------------------- tiling-key is_valid


class ModeKey:
    MODE = TilingKeyField(bits=2, values=[0, 1, 2])
    SCALE = TilingKeyField(bits=2, values=[1, 2, 4])

    def is_valid(self, key):
        mode, scale = key  # the values in declaration order, as the real runtime passes them
        return not (mode == 2 and scale == 4)


@pl.jit(tiling_key=ModeKey)
def scaled(x: pl.Tensor[[32, 32], pl.DT_FP16], y: pl.Tensor[[32, 32], pl.DT_FP16]):
    with pl.section_vector():
        t = pl.make_tile(VEC, addr=0)
        pl.load(t, x, [0, 0])
        pl.system.sync_src(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.V, event_id=0)
        pl.system.sync_dst(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.V, event_id=0)
        if MODE == 0:  # noqa: F821  (a tiling-key field)
            pl.mul(t, t, float(SCALE))  # noqa: F821
        else:
            pl.add(t, t, float(SCALE))  # noqa: F821
        pl.system.sync_src(set_pipe=pl.PipeType.V, wait_pipe=pl.PipeType.MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=pl.PipeType.V, wait_pipe=pl.PipeType.MTE3, event_id=0)
        pl.store(y, t, [0, 0])


def test_is_valid_gets_the_key_values_as_a_tuple():
    x = torch.randn(32, 32).half()
    y = torch.zeros_like(x)
    scaled[None, 1, {"MODE": 0, "SCALE": 4}](x, y)
    assert torch.equal(y, x * 4)
    scaled[None, 1, {"MODE": 2, "SCALE": 2}](x, y)
    assert torch.equal(y, x + 2)
    with pytest.raises(InvalidArgument, match="rejected by ModeKey.is_valid"):
        scaled[None, 1, {"MODE": 2, "SCALE": 4}](x, y)


# ---------------------------------------------------------------- auto_mutex on group slots


@pl.jit(auto_mutex=True)
def slot_and_fixed_slot(x: pl.Tensor[[32, 32], pl.DT_FP16], out: pl.Tensor[[128, 32],
                                                                            pl.DT_FP16]):
    """`g[i % 2]` may be the slot `g[0]` the next op on the same pipe keeps locked."""
    g = pl.make_tile_group(type=VEC, addrs=0, mutex_ids=[1, 2])
    with pl.section_vector():
        for i in pl.range(0, 4):
            pl.load(g[0], x, [0, 0])
            pl.add(g[i % 2], g[0], g[0])
            pl.mul(g[0], g[0], 3.0)
            pl.store(out, g[i % 2], [i * 32, 0])


@pl.jit(auto_mutex=True)
def shared_ids(x: pl.Tensor[[32, 32], pl.DT_FP16], out: pl.Tensor[[64, 32], pl.DT_FP16]):
    """Two groups share id 1; one op uses both of its tiles, the next one again."""
    g = pl.make_tile_group(type=VEC, addrs=0, mutex_ids=[1])
    h = pl.make_tile_group(type=VEC, addrs=0x1000, mutex_ids=[1, 2])
    with pl.section_vector():
        pl.load(g[0], x, [0, 0])
        pl.add(h[0], g[0], g[0])
        pl.mul(h[0], h[0], g[0])
        pl.store(out, h[0], [0, 0])
        pl.store(out, g[0], [32, 0])


def test_subscripted_group_slot_aliasing_a_fixed_slot():
    x = (torch.randn(32, 32) / 4).half()

    def run():
        out = torch.zeros(128, 32).half()
        slot_and_fixed_slot(x, out)
        return out

    out = sim_and_native(run)
    # even i: slot 0 = 2x, then tripled in place before the store reads it; odd i: slot 1 = 2x
    for i in range(4):
        expected = (x + x) * 3 if i % 2 == 0 else x + x
        assert torch.equal(out[i * 32:(i + 1) * 32], expected.half()), i


def test_two_groups_sharing_a_mutex_id_in_one_op():
    x = (torch.randn(32, 32) / 4).half()

    def run():
        out = torch.zeros(64, 32).half()
        shared_ids(x, out)
        return out

    out = sim_and_native(run)
    assert torch.equal(out[:32], (x + x) * x) and torch.equal(out[32:], x)


# ---------------------------------------------------------------- internal failures are typed


@pl.jit
def plain_add(x: pl.Tensor[[32, 32], pl.DT_FP16], y: pl.Tensor[[32, 32], pl.DT_FP16]):
    with pl.section_vector():
        t = pl.make_tile(VEC, addr=0)
        pl.load(t, x, [0, 0])
        pl.system.sync_src(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.V, event_id=0)
        pl.system.sync_dst(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.V, event_id=0)
        pl.add(t, t, t)  # LINE_OF_ADD
        pl.system.sync_src(set_pipe=pl.PipeType.V, wait_pipe=pl.PipeType.MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=pl.PipeType.V, wait_pipe=pl.PipeType.MTE3, event_id=0)
        pl.store(y, t, [0, 0])


def _fresh_compile():
    from pypto_pro.runtime.kernel_def import Specialization

    plain_add.compiled_variants.clear()
    return plain_add.compile(Specialization(arch="a5"))


def test_a_pass_failing_internally_is_a_pass_inner_error_at_the_kernel_line(monkeypatch):
    from pypto_pro.passes import pipe_assignment

    def broken(self, node):
        if node.op == "block.add":
            raise AttributeError("'int' object has no attribute 'type'")
        return self.generic(node)

    monkeypatch.setattr(pipe_assignment._Annotate, "visit_Call", broken)
    with pytest.raises(PassInner) as info:
        _fresh_compile()
    assert info.value.pass_name == "pipe_assignment"
    assert info.value.span.line == line_of(plain_add, "LINE_OF_ADD")
    assert "AttributeError" in str(info.value)


def test_codegen_failing_internally_is_a_codegen_inner_error_at_the_kernel_line(monkeypatch):
    from pypto_pro.codegen import dispatch, generate

    compiled = _fresh_compile()
    table = dict(dispatch.effects())

    def broken(body, call, span):
        raise KeyError(0)

    table["block.add"] = broken
    monkeypatch.setattr(dispatch, "effects", lambda: table)
    with pytest.raises(CodegenInner) as info:
        generate(compiled)
    assert info.value.span.line == line_of(plain_add, "LINE_OF_ADD")
    assert "KeyError" in str(info.value)


def test_the_parser_failing_internally_is_a_typed_error_at_the_kernel_line(monkeypatch):
    from pypto_pro.language.parser import ops_block

    def broken(ctx, node, op):
        raise IndexError("list index out of range")

    monkeypatch.setitem(ops_block.HANDLERS, "add", broken)
    with pytest.raises(ParserSyntaxError) as info:
        _fresh_compile()
    assert info.value.span.line == line_of(plain_add, "LINE_OF_ADD")
    assert "IndexError" in str(info.value)
