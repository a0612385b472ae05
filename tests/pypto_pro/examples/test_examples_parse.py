"""The example kernels (`pypto_pro.examples`): each parses for its targets, has the right kernel
type, emits its key ops in order, fits the Ascend 950 buffers and respects the alignment rules;
`make_inputs` / `reference` agree with each other; with the pass pipeline present each kernel
also compiles (`compile_kernel`)."""
from __future__ import annotations

import dataclasses

import pytest
import torch

from pypto_pro.examples import ALL_EXAMPLES, FACTORY_MODULES, load
from pypto_pro.ir.mutator import walk
from pypto_pro.ir.nodes import Call, ForStmt, SectionStmt
from pypto_pro.ir.printer import python_print
from pypto_pro.ir.types import MemorySpace, TileGroupType, TileType
from pypto_pro.language.parser import parse_target
from pypto_pro.runtime.kernel_def import Specialization

SPEC = Specialization(arch="a5")
KIB = 1024
CAPACITY = {MemorySpace.Vec: 248 * KIB, MemorySpace.Mat: 512 * KIB,
            MemorySpace.Left: 64 * KIB, MemorySpace.Right: 64 * KIB,
            MemorySpace.Acc: 256 * KIB}
ALIGN = {MemorySpace.Vec: 32, MemorySpace.Mat: 32, MemorySpace.Left: 512,
         MemorySpace.Right: 512, MemorySpace.Acc: 64}

KERNELS = [(name, kname) for name in ALL_EXAMPLES for kname in load(name).KERNELS]


def _parse(example: str, kernel: str, target: str):
    k = load(example).KERNELS[kernel]
    return parse_target(k.kernel_def, SPEC, target)


def _kernel_type(matched: set[str]) -> str:
    """The rule of spec §1.7 / `compiler.compile_kernel`."""
    targets = [t for t in ("cube", "vector") if t in matched] or ["cube", "vector"]
    return "mix" if len(targets) == 2 else ("aic" if targets == ["cube"] else "aiv")


def _ops(program) -> list[str]:
    return [n.op for n in walk(program) if isinstance(n, Call)]


def _text(example: str, kernel: str, target: str) -> str:
    return python_print(_parse(example, kernel, target).program, concise=True)


def _is_subsequence(wanted: list[str], seq: list[str]) -> bool:
    it = iter(seq)
    return all(any(x == w for x in it) for w in wanted)


def _placements(program):
    """(memory space, byte address, byte size) of every tile and tile-group slot declared."""
    out = []
    for n in walk(program):
        if not isinstance(n, Call):
            continue
        if n.op == "block.make_tile" and isinstance(n.type, TileType):
            out.append((n.type.memory, n.type.addr, n.type.nbytes))
        elif n.op == "tile_group.make" and isinstance(n.type, TileGroupType):
            for a in n.type.addrs:
                out.append((n.type.tile.memory, a, n.type.tile.nbytes))
    return out


# ---------------------------------------------------------------- module shape


@pytest.mark.parametrize("name", ALL_EXAMPLES)
def test_module_interface(name):
    m = load(name)
    assert m.__doc__ and len(m.__doc__.split()) > 15, "module docstring says what it teaches"
    assert set(m.TARGETS) <= {"cube", "vector"} and m.TARGETS
    assert m.KERNEL_TYPE == _kernel_type(set(m.TARGETS))
    for attr in ("make_inputs", "reference", "block_dim", "run", "KERNELS", "RTOL", "ATOL"):
        assert hasattr(m, attr), f"{name} lacks {attr}"
    for kernel in m.KERNELS.values():
        assert type(kernel).__name__ in ("JitKernel", "_TileJitKernel"), "defined with @pl.jit"
        assert kernel.kernel_def.options.arch == "a5"


def test_all_examples_lists_every_module():
    import pkgutil

    import pypto_pro.examples as pkg

    found = {m.name for m in pkgutil.iter_modules(pkg.__path__)}
    assert found == set(ALL_EXAMPLES) | set(FACTORY_MODULES)
    with pytest.raises(KeyError):
        load("nope")


@pytest.mark.parametrize("name", ALL_EXAMPLES)
def test_reference_matches_the_output_argument(name):
    m = load(name)
    args = m.make_inputs(seed=1)
    assert all(isinstance(a, (torch.Tensor, float, int)) or dataclasses.is_dataclass(a)
               for a in args)
    assert all(a.device.type == "cpu" for a in args if isinstance(a, torch.Tensor))
    expected = m.reference(*args)
    outputs = [a for a in args if isinstance(a, torch.Tensor)
               and a.shape == expected.shape and a.dtype == expected.dtype]
    assert outputs, "some argument is the output the reference describes"
    assert m.block_dim(*args) >= 1
    again = m.make_inputs(seed=1)
    for a, b in zip(args, again):
        if isinstance(a, torch.Tensor):
            assert torch.equal(a, b), "make_inputs is deterministic for a seed"


# ---------------------------------------------------------------- parsing and kernel type


@pytest.mark.parametrize("name,kernel", KERNELS)
def test_parses_for_its_targets(name, kernel):
    m = load(name)
    matched = set()
    for target in ("cube", "vector"):
        result = _parse(name, kernel, target)
        matched |= result.matched_sections
        sections = [n for n in walk(result.program) if isinstance(n, SectionStmt)]
        if target in m.TARGETS:
            assert sections, f"{kernel} has code for {target}"
            assert _ops(result.program), "the target program is not empty"
        else:
            assert not [s for s in sections if s.kind.name.lower() != "vf"]
    assert matched == set(m.TARGETS)
    assert _kernel_type(matched) == m.KERNEL_TYPE


@pytest.mark.parametrize("name,kernel", KERNELS)
def test_buffers_fit_and_are_aligned(name, kernel):
    for target in load(name).TARGETS:
        program = _parse(name, kernel, target).program
        high: dict[MemorySpace, int] = {}
        for space, addr, size in _placements(program):
            assert addr % ALIGN[space] == 0, f"{space.value} tile at {addr:#x} misaligned"
            high[space] = max(high.get(space, 0), addr + size)
        for space, end in high.items():
            assert end <= CAPACITY[space], f"{kernel}: {space.value} needs {end} B"
        spans = sorted(_placements(program), key=lambda p: (p[0].value, p[1]))
        for (s1, a1, n1), (s2, a2, _) in zip(spans, spans[1:]):
            assert s1 is not s2 or a1 + n1 <= a2, f"{s1.value} buffers overlap at {a2:#x}"
        if target == "vector":  # L0 buffers exist only on the AIC
            spaces = {s for s, _, _ in _placements(program)}
            assert not spaces & {MemorySpace.Left, MemorySpace.Right, MemorySpace.Acc}


@pytest.mark.parametrize("name,kernel", KERNELS)
def test_printed_ir_names_only_registered_ops(name, kernel):
    from pypto_pro.ir import ops

    for target in load(name).TARGETS:
        for op in _ops(_parse(name, kernel, target).program):
            assert ops.get(op) is not None, op


# ---------------------------------------------------------------- per-example structure


def test_hello_world_prints_and_writes_gm():
    ops = _ops(_parse("hello_world", "hello_world_kernel", "vector").program)
    assert ops == ["debug.printf", "block.setval"]
    text = _text("hello_world", "hello_world_kernel", "vector")
    assert "Hello World" in text and "block.setval(out, 0, 1)" in text


@pytest.mark.parametrize("kernel,depth", [("add_kernel", 2), ("add_kernel_single", 1)])
def test_vector_add_nested_loops_and_groups(kernel, depth):
    program = _parse("vector_add", kernel, "vector").program
    groups = [n.type for n in walk(program) if isinstance(n, Call) and n.op == "tile_group.make"]
    assert [g.depth for g in groups] == [depth] * 3
    assert [list(sum(g.mutex_ids, ())) for g in groups] == [[0, 1][:depth], [2, 3][:depth],
                                                            [30, 31][:depth]]
    assert [g.addrs[0] for g in groups] == [0x0, 0x10000, 0x20000]
    outer = next(n for n in walk(program) if isinstance(n, ForStmt))
    inner = next(n for n in walk(outer.body) if isinstance(n, ForStmt))
    assert python_print(outer.start).strip() == "cid"
    assert python_print(outer.step).strip() == "num"
    body_ops = [op for op in _ops(inner.body) if op.startswith("block.")]
    assert body_ops == ["block.load", "block.load", "block.add", "block.store"]
    assert load("vector_add").KERNELS[kernel].kernel_def.options.name == f"add_kernel_d{depth}"


def test_vector_add_factory_rejects_other_depths():
    with pytest.raises(ValueError):
        load("vector_add").make_add_kernel(3)


def test_vector_add_offsets_are_in_tile_units():
    text = _text("vector_add", "add_kernel", "vector")
    assert "block.load(a, x, [i * 128, j * 128]" in text
    assert "block.store(z, c, [i * 128, j * 128])" in text


def test_simt_add_flags_surround_the_launch():
    result = _parse("simt_add", "simt_add_kernel", "vector")
    ops = _ops(result.program.functions[0])
    assert ops == ["block.make_tile", "block.load", "system.sync_src", "system.sync_dst",
                   "simt.launch", "system.sync_src", "system.sync_dst", "block.store"]
    text = python_print(result.program, concise=True)
    assert "set_pipe=ir.PipeType.MTE2, wait_pipe=ir.PipeType.V, event_id=0" in text
    assert "set_pipe=ir.PipeType.V, wait_pipe=ir.PipeType.MTE3, event_id=1" in text
    simt = [f for f in result.program.functions if f.func_type.name == "SIMT_VF"]
    assert [f.name for f in simt] == ["add_delta"]
    assert dict(simt[0].attrs)["max_threads"] == 256
    assert "threads=[256, 1, 1]" in text


def test_simt_add_auto_variant_has_no_flags():
    ops = _ops(_parse("simt_add", "simt_add_auto_kernel", "vector").program)
    assert "system.sync_src" not in ops and "simt.launch" in ops
    assert "tile_group.make" in ops


def _store_sources(program):
    return [n.args[1].type for n in walk(program) if isinstance(n, Call) and n.op == "block.store"]


@pytest.mark.parametrize("kernel", ["matmul_kernel", "matmul_reuse_a_kernel"])
def test_matmul_cube_data_path(kernel):
    program = _parse("matmul", kernel, "cube").program
    ops = [op for op in _ops(program) if op.startswith("block.")]
    if kernel == "matmul_kernel":
        assert ops == ["block.load", "block.load", "block.move", "block.move", "block.matmul",
                       "block.store"]
    else:  # A is loaded and moved once per row of tiles, outside the column loop
        assert ops == ["block.load", "block.move", "block.load", "block.move", "block.matmul",
                       "block.store"]
    (src,) = _store_sources(program)
    assert src.memory is MemorySpace.Acc and src.dtype.value == "FP32"
    moves = [n for n in walk(program) if isinstance(n, Call) and n.op == "block.move"]
    assert {(m.args[1].type.memory, m.args[0].type.memory) for m in moves} == {
        (MemorySpace.Mat, MemorySpace.Left), (MemorySpace.Mat, MemorySpace.Right)}


def test_matmul_groups_match_the_walkthrough():
    program = _parse("matmul", "matmul_kernel", "cube").program
    groups = {n.type.tile.memory: n.type for n in walk(program)
              if isinstance(n, Call) and n.op == "tile_group.make"}
    assert groups[MemorySpace.Left].depth == groups[MemorySpace.Right].depth == 2
    assert groups[MemorySpace.Acc].depth == 2
    mats = [n.type for n in walk(program) if isinstance(n, Call) and n.op == "tile_group.make"
            and n.type.tile.memory is MemorySpace.Mat]
    assert [g.depth for g in mats] == [4, 4]
    assert [sum(g.mutex_ids, ()) for g in mats] == [(0, 1, 10, 11), (2, 3, 12, 13)]


def test_matmul_reuse_a_inlines_the_helper_and_uses_current():
    text = _text("matmul", "matmul_reuse_a_kernel", "cube")
    assert "tile_group.current(a_l1)" in text and "tile_group.current(left)" in text
    assert "_multiply" not in text  # inlined


@pytest.mark.parametrize("kernel,reduce_ops", [
    ("softmax_kernel", None), ("softmax_declared_kernel", None)])
def test_softmax_sequence(kernel, reduce_ops):
    program = _parse("softmax", kernel, "vector").program
    loop = next(n for n in walk(program) if isinstance(n, ForStmt))
    ops = [op for op in _ops(loop.body) if op.startswith("block.")]
    assert ops == ["block.set_validshape"] * 4 + [
        "block.load", "block.row_max", "block.row_expand_sub", "block.exp", "block.row_sum",
        "block.row_expand_div", "block.store"]
    reds = [n.type.tile for n in walk(program)
            if isinstance(n, Call) and n.op == "tile_group.make" and n.type.tile.shape[1] == 1]
    assert reds and reds[0].layout.value == "DN" and reds[0].valid_shape == (None, None)


def test_softmax_variants_print_the_same_body():
    a = _text("softmax", "softmax_kernel", "vector").split("\n", 3)[3]
    b = _text("softmax", "softmax_declared_kernel", "vector").split("\n", 3)[3]
    assert a == b


def test_layernorm_ops():
    program = _parse("layernorm", "layernorm_kernel", "vector").program
    loop = next(n for n in walk(program) if isinstance(n, ForStmt))
    ops = [op for op in _ops(loop.body) if op.startswith("block.")
           and op != "block.set_validshape"]
    assert ops == ["block.load", "block.divs", "block.row_sum", "block.row_expand_sub",
                   "block.mul", "block.divs", "block.adds", "block.row_sum", "block.rsqrt",
                   "block.row_expand_mul", "block.col_expand_mul", "block.col_expand_sub",
                   "block.store"]
    before = _ops(program)[:_ops(program).index("tile_group.next")]
    assert _is_subsequence(["block.load", "block.load", "system.sync_src", "system.sync_dst",
                            "block.muls"], before)


def _cross_core(program):
    """[(op, pipe, event_id)] of the static cross-core sync calls, in program order."""
    out = []
    for n in walk(program):
        if isinstance(n, Call) and n.op in ("system.set_cross_core", "system.wait_cross_core"):
            kw = dict(n.kwargs)
            out.append((n.op.split(".")[1], kw["pipe"].name, kw["event_id"]))
    return out


def test_matmul_softmax_cross_core_handshake():
    cube = _parse("matmul_softmax", "matmul_softmax_kernel", "cube").program
    vec = _parse("matmul_softmax", "matmul_softmax_kernel", "vector").program
    assert _cross_core(cube) == [("set_cross_core", "FIX", 0)]
    assert _cross_core(vec) == [("wait_cross_core", "MTE2", 0)]
    cops_all = _ops(cube)
    assert cops_all[-1] == "system.set_cross_core", "raised once, after the last store"
    assert max(i for i, o in enumerate(cops_all) if o == "block.store") < len(cops_all) - 1
    vops = _ops(vec)
    assert vops.index("system.wait_cross_core") < vops.index("block.load")
    assert "get_subblock_idx" in vops
    assert vops.count("block.load") == 3 and vops.count("block.store") == 1
    cops = [o for o in _ops(cube) if o.startswith("block.")]
    assert _is_subsequence(["block.load", "block.move", "block.load", "block.move",
                            "block.matmul", "block.store"], cops)


def test_flash_attention_structure():
    cube = _parse("flash_attention", "flash_attention_kernel", "cube").program
    vec = _parse("flash_attention", "flash_attention_kernel", "vector").program
    # cross-core buffers are declared outside the sections: both programs see them
    for program in (cube, vec):
        top = [s for s in program.functions[0].body.stmts if not isinstance(s, SectionStmt)]
        decls = [python_print(s, concise=True) for s in top]
        assert sum("tile_group.make" in d for d in decls) == 3
    # every event id set on one side is waited on the other, in one direction only
    sets_c = {e for op, _, e in _cross_core(cube) if op == "set_cross_core"}
    waits_c = {e for op, _, e in _cross_core(cube) if op == "wait_cross_core"}
    sets_v = {e for op, _, e in _cross_core(vec) if op == "set_cross_core"}
    waits_v = {e for op, _, e in _cross_core(vec) if op == "wait_cross_core"}
    assert sets_c == waits_v and sets_v == waits_c and not sets_c & sets_v
    assert len(sets_c | sets_v) == 6 and all(0 <= e < 16 for e in sets_c | sets_v)
    moves = [n for n in walk(cube) if isinstance(n, Call) and n.op == "block.move"
             and n.args[1].type.memory is MemorySpace.Acc]
    modes = {dict(m.kwargs)["acc_to_vec_mode"].name for m in moves}
    assert modes <= {"DualModeSplitM", "DualModeSplitN"} and len(moves) == 2
    assert all(m.args[0].type.shape == (64, 128) for m in moves), "each AIV gets half"
    vops = _ops(vec)
    assert _is_subsequence(["block.row_max", "block.maximum", "block.exp", "block.row_sum",
                            "block.cast", "block.insert", "block.row_expand_mul",
                            "block.row_expand_div", "block.cast", "block.store"], vops)
    ins = next(n for n in walk(vec) if isinstance(n, Call) and n.op == "block.insert")
    assert ins.args[0].type.memory is MemorySpace.Mat and ins.args[1].type.dtype.value == "FP16"
    assert {"system.sync_src", "system.sync_dst"} <= set(vops)
    loads = [n for n in walk(cube) if isinstance(n, Call) and n.op == "block.load"]
    assert [dict(n.kwargs)["is_transpose"] for n in loads] == [False, True, False]
    assert sum(1 for n in walk(cube) if isinstance(n, Call) and n.op == "block.matmul") == 2


def test_flash_attention_gm_hands_off_through_gm_only():
    """Every cube ↔ vector hand-off is a GM store and a GM load on the workspaces (no fixpipe
    move into the AIVs, no insert into the cube's L1): the form pto-isa's CPU simulator runs."""
    cube = _parse("flash_attention_gm", "flash_attention_gm_kernel", "cube").program
    vec = _parse("flash_attention_gm", "flash_attention_gm_kernel", "vector").program
    calls = [n for p in (cube, vec) for n in walk(p) if isinstance(n, Call)]
    assert not [n for n in calls if n.op == "block.insert" or
                (n.op == "block.move" and dict(n.kwargs).get("acc_to_vec_mode") is not None)]

    def gm(program, op):
        at = {"block.load": 1, "block.store": 0}[op]
        return [n.args[at].name for n in walk(program) if isinstance(n, Call) and n.op == op]

    assert gm(cube, "block.store") == ["s_ws", "o_ws"]
    assert gm(cube, "block.load") == ["q", "k", "v", "p_ws"]
    assert gm(vec, "block.load") == ["s_ws", "o_ws"]
    assert gm(vec, "block.store") == ["p_ws", "o"]
    # the producer sets on the pipe that wrote, the consumer waits on the pipe that reads
    fa = load("flash_attention_gm")
    assert (("set_cross_core", "FIX", fa.S_READY) in _cross_core(cube) and
            ("wait_cross_core", "MTE2", fa.S_READY) in _cross_core(vec) and
            ("set_cross_core", "MTE3", fa.P_READY) in _cross_core(vec) and
            ("wait_cross_core", "MTE2", fa.P_READY) in _cross_core(cube))


def _sync_counts(stmt, ops: tuple[str, ...], key, depth: int = 0, weight: int = 1,
                 out=None) -> dict:
    """How often each sync call runs, by (key, runtime-loop depth): loops with constant bounds
    multiply (they are pre-fire / drain loops), loops with runtime bounds add one depth."""
    from pypto_pro.ir.nodes import ConstInt, EvalStmt

    out = {} if out is None else out
    if isinstance(stmt, ForStmt):
        bounds = (stmt.start, stmt.stop, stmt.step)
        if all(isinstance(b, ConstInt) for b in bounds):
            trips = len(range(*(b.value for b in bounds)))
            return _sync_counts(stmt.body, ops, key, depth, weight * trips, out)
        return _sync_counts(stmt.body, ops, key, depth + 1, weight, out)
    if isinstance(stmt, EvalStmt) and isinstance(stmt.expr, Call) and stmt.expr.op in ops:
        k = (key(stmt.expr), depth)
        out[k] = out.get(k, 0) + weight
        return out
    for child in getattr(stmt, "stmts", ()) or ():
        _sync_counts(child, ops, key, depth, weight, out)
    for field in ("body", "then_body", "else_body"):
        child = getattr(stmt, field, None)
        if child is not None and not isinstance(stmt, ForStmt):
            _sync_counts(child, ops, key, depth, weight, out)
    return out


def _flag_key(call):
    kw = dict(call.kwargs)
    return kw["set_pipe"].name, kw["wait_pipe"].name, kw["event_id"]


def _event_key(call):
    return dict(call.kwargs)["event_id"]


@pytest.mark.parametrize("name,kernel", KERNELS)
def test_every_set_has_its_wait(name, kernel):
    """Flags (sync_src/sync_dst) balance per core; cross-core sets on one target balance the
    waits on the other — counted per event and per runtime-loop depth."""
    m = load(name)
    bodies = {t: _parse(name, kernel, t).program.functions[0].body for t in m.TARGETS}
    for body in bodies.values():
        src = _sync_counts(body, ("system.sync_src",), _flag_key)
        dst = _sync_counts(body, ("system.sync_dst",), _flag_key)
        assert src == dst
    if len(bodies) == 2:
        sets = {t: _sync_counts(b, ("system.set_cross_core",), _event_key)
                for t, b in bodies.items()}
        waits = {t: _sync_counts(b, ("system.wait_cross_core",), _event_key)
                 for t, b in bodies.items()}
        assert sets["cube"] == waits["vector"] and sets["vector"] == waits["cube"]


def test_flash_attention_prefires_one_permit_per_slot():
    body = _parse("flash_attention", "flash_attention_kernel", "vector").program.functions[0].body
    sets = _sync_counts(body, ("system.set_cross_core",), _event_key)
    fa = load("flash_attention")
    assert sets[(fa.S_FREE, 0)] == fa.S_SLOTS and sets[(fa.O_FREE, 0)] == 1
    assert sets[(fa.S_FREE, 2)] == sets[(fa.O_FREE, 2)] == sets[(fa.P_READY, 2)] == 1


def test_flash_attention_reference_is_attention():
    fa = load("flash_attention")
    q, k, v, o = fa.make_inputs(sq=128, skv=256, seed=3)
    ref = fa.reference(q, k, v, o).float()
    sdpa = torch.nn.functional.scaled_dot_product_attention(
        q.float()[None], k.float()[None], v.float()[None])[0]
    assert torch.allclose(ref, sdpa, atol=2e-3, rtol=2e-3)


# ---------------------------------------------------------------- full compile (passes)


@pytest.mark.parametrize("name,kernel", KERNELS)
def test_compiles_through_the_pass_pipeline(name, kernel):
    from pypto_pro.compiler import compile_kernel

    m = load(name)
    compiled = compile_kernel(m.KERNELS[kernel].kernel_def, SPEC)
    assert compiled.kernel_type == m.KERNEL_TYPE
    assert set(compiled.programs) == set(m.TARGETS)
