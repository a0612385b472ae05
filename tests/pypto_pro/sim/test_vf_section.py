"""VF sections end to end on the simulator: parsed `@pl.vector_function` bodies (with `tile + k`
operands), one pipe-V instruction per section with the spec §3.4 cost, sync semantics against
MTE2 / MTE3 (a missing flag reads stale UB), squeeze + `pl.get_spr`, and errors that carry the
kernel's file:line."""
from __future__ import annotations

import pytest
import torch

import pypto_pro
import pypto_pro.language as pl
from pypto_lab.views.timeline_lod import categorize
from pypto_pro.compiler import compile_kernel
from pypto_pro.errors import InvalidOperationError, ParserTypeError, SimulationError
from pypto_pro.ir.printer import python_print
from pypto_pro.language import vf
from pypto_pro.runtime.kernel_def import Specialization
from pypto_pro.sim.model.cost_model import vf_section_cost
from pypto_pro.soc import soc

ROW = pl.TileType([1, 256], pl.DT_FP32)
MTE2, V, MTE3 = pl.PipeType.MTE2, pl.PipeType.V, pl.PipeType.MTE3


@pl.vector_function
def compact_positive(dst, src):
    full = vf.create_mask(pl.MaskPattern.ALL, dtype=pl.DT_FP32)
    zero = vf.full(0.0, full, dtype=pl.DT_FP32)
    xv = vf.load_align(src + 64, 0)
    pos = vf.gt(xv, zero, full)
    packed = vf.squeeze(xv, pos)
    vf.store_align(dst + 8, packed, full)


def _kernel(synced: bool):
    @pl.jit(arch="a5")
    def compact_kernel(x: pl.Tensor[[1, 256], pl.DT_FP32], y: pl.Tensor[[1, 256], pl.DT_FP32],
                       n: pl.Tensor[[1, 8], pl.DT_INT32]):
        with pl.section_vector():
            a = pl.make_tile(ROW, addr=0)
            b = pl.make_tile(ROW, addr=0x400)
            pl.load(a, x, [0, 0])
            pl.load(b, y, [0, 0])
            if synced:
                pl.system.sync_src(set_pipe=MTE2, wait_pipe=V, event_id=0)
                pl.system.sync_dst(set_pipe=MTE2, wait_pipe=V, event_id=0)
            compact_positive(b, a)
            pl.system.sync_src(set_pipe=V, wait_pipe=MTE3, event_id=0)
            pl.system.sync_dst(set_pipe=V, wait_pipe=MTE3, event_id=0)
            pl.store(y, b, [0, 0])
            pl.system.bar_v()
            pl.setval(n, 0, pl.get_spr())
    return compact_kernel


SYNCED, UNSYNCED = _kernel(True), _kernel(False)


def _inputs():
    x = torch.randn(1, 256, generator=torch.Generator().manual_seed(3))
    return x, torch.zeros(1, 256), torch.zeros(1, 8, dtype=torch.int32)


def test_squeeze_with_tile_offsets_and_get_spr():
    x, y, n = _inputs()
    with pypto_pro.use_backend("sim"):
        SYNCED[None, 1](x, y, n)
    window = x[0, 64:128]
    kept = window[window > 0]
    assert int(n[0, 0]) == 4 * kept.numel()  # the AR counts the bytes kept (STORE_REG)
    assert torch.equal(y[0, 8:8 + kept.numel()], kept)
    assert not y[0, 8 + kept.numel():72].any() and not y[0, :8].any()


def test_one_pipe_v_instruction_with_the_vf_cost():
    x, y, n = _inputs()
    with pypto_pro.use_backend("sim"):
        SYNCED[None, 1](x, y, n)
    ev = SYNCED.last_trace.events
    instr = ev[ev["kind"] == "instr"]
    vec = instr[instr["pipe"] == "V"]
    assert list(vec["ir_op"]) == ["vf.vec_scope"]
    assert list(categorize(vec)) == ["vector"]  # the workbench timeline colours it as vector
    # mask 1 + full 1 + compare 1.25 + squeeze 2 = 5.25 ALU cycles > 1 store, 1/2 load
    expected = vf_section_cost({"mask": 1, "copy": 1, "compare": 1, "gather": 1, "load": 1,
                                "store": 1}, soc())
    assert expected.cycles == soc().vector_startup_cycles + 6
    assert int((vec["end"] - vec["start"]).iloc[0]) == expected.cycles
    load_end = int(instr[instr["pipe"] == "MTE2"]["end"].max())
    assert int(vec["start"].iloc[0]) >= load_end  # the flag held the section until the load landed


def test_missing_flag_reads_stale_ub():
    x, y, n = _inputs()
    with pypto_pro.use_backend("sim"):
        UNSYNCED[None, 1](x, y, n)
    window = x[0, 64:128]
    count = int(n[0, 0]) // 4
    assert count != (window > 0).sum() or not torch.equal(
        y[0, 8:8 + count], window[window > 0])


def test_cost_is_bound_by_the_busiest_resource():
    s = soc()
    base = s.vector_startup_cycles
    assert vf_section_cost({"load": 10}, s).cycles == base + 5  # two load ports
    assert vf_section_cost({"store": 10}, s).cycles == base + 10  # one store port
    assert vf_section_cost({"transcendental": 10, "load": 10, "store": 10}, s).cycles == \
        base + 20
    assert vf_section_cost({"free": 5}, s).cycles == base


@pl.vector_function
def store_past_tile(dst, src):
    full = vf.create_mask(pl.MaskPattern.ALL, dtype=pl.DT_FP32)
    xv = vf.load_align(src, 0)
    vf.store_align(dst, xv, full, offset=240)


@pl.jit(arch="a5")
def overflow_kernel(x: pl.Tensor[[1, 256], pl.DT_FP32]):
    with pl.section_vector():
        a = pl.make_tile(ROW, addr=0)
        store_past_tile(a, a)


def test_store_past_the_tile_names_the_line():
    with pypto_pro.use_backend("sim"), pytest.raises(SimulationError) as err:
        overflow_kernel[None, 1](torch.zeros(1, 256))
    assert "outside its tile" in str(err.value)
    assert "test_vf_section.py" in str(err.value) and "vf.store_align" in str(err.value)


@pl.vector_function
def nested(dst, src):
    full = vf.create_mask(pl.MaskPattern.ALL, dtype=pl.DT_FP32)
    vf.store_align(dst, vf.load_align(src, 0), full)


@pl.vector_function
def float_offset(dst, src):
    xv = vf.load_align(src + 1.5, 0)
    vf.store_align(dst, xv)


@pytest.mark.parametrize("body,error,text", [
    (nested, InvalidOperationError, "must be assigned to a variable"),
    (float_offset, ParserTypeError, "integer number of elements"),
])
def test_parser_rejects_bad_operands(body, error, text):
    @pl.jit(arch="a5")
    def bad_kernel(x: pl.Tensor[[1, 256], pl.DT_FP32]):
        with pl.section_vector():
            a = pl.make_tile(ROW, addr=0)
            body(a, a)

    with pypto_pro.use_backend("sim"), pytest.raises(error, match=text):
        bad_kernel[None, 1](torch.zeros(1, 256))


@pl.vector_function
def double_in_place(t):
    full = vf.create_mask(pl.MaskPattern.ALL, dtype=pl.DT_FP32)
    for k in pl.range(0, 256, 64):
        xv = vf.load_align(t + k, 0)
        yv = vf.add(xv, xv, full)
        vf.store_align(t + k, yv, full)


@pl.jit(arch="a5")
def ring_kernel(x: pl.Tensor[[4, 256], pl.DT_FP32], y: pl.Tensor[[4, 256], pl.DT_FP32]):
    with pl.section_vector():
        ring = pl.make_tile_group(type=ROW, addrs=[0x0, 0x400], mutex_ids=[3, 4])
        for row in pl.range(4):
            t = ring.next()
            pl.load(t, x, [row, 0])
            double_in_place(t)
            pl.store(y, t, [row, 0])


def test_auto_mutex_locks_a_vf_section_whose_operands_are_tile_offsets():
    """Only `t + k` operands reach the group slot here: without their locks the section would
    read the row before its load lands (and the store would not wait for the section)."""
    x, y = torch.randn(4, 256, generator=torch.Generator().manual_seed(5)), torch.zeros(4, 256)
    with pypto_pro.use_backend("sim"):
        ring_kernel[None, 1](x, y)
    torch.testing.assert_close(y, 2 * x, rtol=0, atol=0)
    result = compile_kernel(ring_kernel.kernel_def, Specialization(arch="a5"))
    lines = [line.strip() for line in
             python_print(result.passes["vector"]["auto_mutex"].program).splitlines()]
    at = next(i for i, line in enumerate(lines) if line.startswith("with ir.section_vf("))
    lock = "ir.call @tile_group.mutex_id(ring, ring_cursor, k=0), pipe=ir.PipeType.V))"
    assert lines[at - 1] == f"ir.eval(ir.call @system.mutex_lock_dyn({lock}"
    assert f"ir.eval(ir.call @system.mutex_unlock_dyn({lock}" in lines[at:]


def test_vf_ops_need_no_import(tmp_path):
    """The real parser reads `vf.<op>(...)` by its spelling, so the documentation's examples
    call `vf.*` with only `pypto_pro.language` imported; they run here unchanged."""
    import runpy

    src = tmp_path / "doc_example.py"
    src.write_text(
        "import pypto_pro.language as pl\n"
        "\n"
        "@pl.vector_function\n"
        "def double(dst, src):\n"
        "    full = vf.create_mask(pl.MaskPattern.ALL, dtype=pl.DT_FP32)\n"
        "    xv = vf.load_align(src, 0)\n"
        "    sv = vf.add(xv, xv, full)\n"
        "    vf.store_align(dst, sv, full)\n"
        "\n"
        "@pl.jit(arch='a5')\n"
        "def kernel(x: pl.Tensor[[1, 64], pl.DT_FP32], y: pl.Tensor[[1, 64], pl.DT_FP32]):\n"
        "    P = pl.PipeType\n"
        "    with pl.section_vector():\n"
        "        t = pl.TileType([1, 64], pl.DT_FP32)\n"
        "        a = pl.make_tile(t, addr=0)\n"
        "        b = pl.make_tile(t, addr=0x100)\n"
        "        pl.load(a, x, [0, 0])\n"
        "        pl.system.sync_src(set_pipe=P.MTE2, wait_pipe=P.V, event_id=0)\n"
        "        pl.system.sync_dst(set_pipe=P.MTE2, wait_pipe=P.V, event_id=0)\n"
        "        double(b, a)\n"
        "        pl.system.sync_src(set_pipe=P.V, wait_pipe=P.MTE3, event_id=0)\n"
        "        pl.system.sync_dst(set_pipe=P.V, wait_pipe=P.MTE3, event_id=0)\n"
        "        pl.store(y, b, [0, 0])\n")
    kernel = runpy.run_path(str(src))["kernel"]
    x, y = torch.randn(1, 64), torch.zeros(1, 64)
    kernel[None, 1](x, y)
    assert torch.equal(y, x + x)
