"""kernel.cpp of the example kernels (`pypto_pro.examples`): layout (spec §4.1), the key
instructions and sync calls in the right order, well-formed C++ (braces, declared tile types,
a g++ syntax check against a stand-in of the pto-isa / CCE surface) and deterministic output,
also across processes."""
from __future__ import annotations

import hashlib
import re
import subprocess
import sys

import pytest

from pypto_pro.examples import ALL_EXAMPLES, load

KERNELS = [(name, kname) for name in ALL_EXAMPLES for kname in load(name).KERNELS]


def _artifacts(cg, example: str, kernel: str | None = None):
    module = load(example)
    k = module.KERNELS[kernel] if kernel else next(iter(module.KERNELS.values()))
    return cg.compile(k)


def _ordered(lines: list[str], patterns: list[str]) -> list[int]:
    """Indices of the first line matching each pattern, each after the previous one."""
    found, start = [], 0
    for p in patterns:
        rx = re.compile(p)
        idx = next((i for i in range(start, len(lines)) if rx.search(lines[i])), None)
        assert idx is not None, f"{p!r} not found after line {start}:\n" + "\n".join(lines)
        found.append(idx)
        start = idx + 1
    return found


def _strip(text: str) -> str:
    """The text without comments and string literals (for brace counting)."""
    text = re.sub(r'"(\\.|[^"\\])*"', '""', text)
    return re.sub(r"//[^\n]*", "", text)


# ---------------------------------------------------------------- every example


@pytest.mark.parametrize("example,kernel", KERNELS)
def test_well_formed(cg, cxx_check, example, kernel):
    _compiled, art = _artifacts(cg, example, kernel)
    cpp = art.kernel_cpp
    body = _strip(cpp)
    assert body.count("{") == body.count("}") and body.count("(") == body.count(")")
    declared = set(re.findall(r"using (\w+_t) = Tile<", cpp))
    used = set(re.findall(r"\b((?:Vec|Mat|Left|Right|Acc|Bias|Scaling|ScaleLeft|ScaleRight)_"
                          r"\w+_t)\b", cpp))
    assert used <= declared, f"undeclared tile types {used - declared}"
    assert "    " in cpp and "\t" not in cpp
    assert not re.search(r"0x[0-9a-f]{9,}", cpp), "no object addresses in generated code"
    cxx_check(art)


@pytest.mark.parametrize("example,kernel", KERNELS)
def test_layout_follows_kernel_type(cg, example, kernel):
    compiled, art = _artifacts(cg, example, kernel)
    cpp = art.kernel_cpp
    assert cpp.startswith("// kernel.cpp: PyPTO Pro kernel")
    assert "bisheng -xcce -DREGISTER_BASE -E" in cpp and "--cce-aicore-arch=dav-c310" in cpp
    assert "#include <pto/pto-inst.hpp>" in cpp and "using namespace pto;" in cpp
    name = art.kernel_name
    has_cube, has_vec = "#if defined(__DAV_CUBE__)" in cpp, "#if defined(__DAV_VEC__)" in cpp
    assert (has_cube, has_vec) == {"aiv": (False, True), "aic": (True, False),
                                   "mix": (True, True)}[compiled.kernel_type]
    if has_cube and has_vec:
        assert cpp.index("__DAV_CUBE__") < cpp.index("__DAV_VEC__"), "cube section first"
    dispatcher = cpp[cpp.index(f"__aicore__ inline void {name}_impl("):]
    for target, present in (("cube", has_cube), ("vector", has_vec)):
        assert (f"{name}_impl_{target}(" in dispatcher) == present
    launcher = art.call_kernel_cpp
    assert '#include "kernel.cpp"' in launcher
    assert f"__global__ AICORE void {name}(" in launcher
    assert 'extern "C" void call_kernel(uint32_t blockDim, void* stream' in launcher
    assert f"{name}<<<blockDim, nullptr, stream>>>(" in launcher


@pytest.mark.parametrize("example", ALL_EXAMPLES)
def test_deterministic(cg, example):
    first = _artifacts(cg, example)[1]
    second = _artifacts(cg, example)[1]
    assert first.files() == second.files()
    assert first.line_map == second.line_map


def test_same_output_in_a_fresh_process(cg):
    art = _artifacts(cg, "vector_add")[1]
    script = (
        "import hashlib\n"
        "from pypto_pro.examples import load\n"
        "from pypto_pro.compiler import compile_kernel\n"
        "from pypto_pro.codegen import generate\n"
        "from pypto_pro.runtime.kernel_def import Specialization\n"
        "k = load('vector_add').KERNELS['add_kernel']\n"
        "a = generate(compile_kernel(k.kernel_def, Specialization(arch='a5')))\n"
        "print(hashlib.sha256((a.kernel_cpp + a.call_kernel_cpp).encode()).hexdigest())\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == hashlib.sha256((art.kernel_cpp + art.call_kernel_cpp).encode()).hexdigest()


# ---------------------------------------------------------------- per example


def test_vector_add_double_buffered_order(cg):
    art = _artifacts(cg, "vector_add", "add_kernel")[1]
    body = [cg.code(x) for x in cg.impl_body(art.kernel_cpp, "vector")]
    loops = [i for i, x in enumerate(body) if x.startswith("for (")]
    assert len(loops) == 2
    inner = body[loops[1]:]
    _ordered(inner, [
        r"^get_buf\(PIPE_MTE2, xs_mutex\[xs_cursor_\d+\], 0\);",
        r"^x_gt\.SetShape<pto::GlobalTensorDim::DIM_3, pto::GlobalTensorDim::DIM_4>\("
        r"static_cast<int64_t>\(a\.GetValidRow\(\)\), "
        r"static_cast<int64_t>\(a\.GetValidCol\(\)\)\);",
        r"^TASSIGN\(x_gt, x_ptr \+ ",
        r"^TLOAD\(a, x_gt\);",
        r"^rls_buf\(PIPE_MTE2, xs_mutex",
        r"^get_buf\(PIPE_MTE2, ys_mutex", r"^TLOAD\(b, y_gt\);", r"^rls_buf\(PIPE_MTE2, ys_mutex",
        r"^get_buf\(PIPE_V, zs_mutex", r"^get_buf\(PIPE_V, xs_mutex", r"^get_buf\(PIPE_V, ys_mutex",
        r"^TADD\(c, a, b\);",
        r"^rls_buf\(PIPE_V, zs_mutex", r"^rls_buf\(PIPE_V, ys_mutex",
        r"^get_buf\(PIPE_MTE3, zs_mutex", r"^TSTORE\(z_gt, c\);", r"^rls_buf\(PIPE_MTE3, zs_mutex",
    ])
    # the slots rotate through the C arrays of the groups, the cursors are loop-carried
    assert "Vec_fp16_128x128_t xs[2] = {Vec_fp16_128x128_t(128, 128), " \
           "Vec_fp16_128x128_t(128, 128)};" in body
    assert "TASSIGN(xs[1], 0x8000);" in body and "const int32_t zs_mutex[2] = {30, 31};" in body
    assert any(re.fullmatch(r"Vec_fp16_128x128_t& a = xs\[xs_cursor_\d+\];", x) for x in body)
    assert re.search(r"for \(int64_t i = cid; \(num > 0\) \? \(i < mt\) : \(i > mt\); "
                     r"i \+= num\)", "\n".join(body))
    assert "int64_t mt = __pypto_dyn_x_0 / 128;" in body  # C++ `/`, as the real codegen


def test_vector_add_single_slot_uses_constant_ids(cg):
    art = _artifacts(cg, "vector_add", "add_kernel_single")[1]
    body = [cg.code(x) for x in cg.impl_body(art.kernel_cpp, "vector")]
    _ordered(body, [r"^get_buf\(PIPE_MTE2, 0, 0\);", r"^TLOAD\(a, x_gt\);",
                    r"^rls_buf\(PIPE_MTE2, 0, 0\);", r"^get_buf\(PIPE_V, 30, 0\);",
                    r"^TADD\(c, a, b\);", r"^get_buf\(PIPE_MTE3, 30, 0\);", r"^TSTORE"])


def test_matmul_cube_pipeline(cg):
    compiled, art = _artifacts(cg, "matmul", "matmul_kernel")
    assert compiled.kernel_type == "aic"
    cpp = art.kernel_cpp
    assert "using Left_fp16_128x128_NZ_t = Tile<TileType::Left, half, 128, 128, " \
           "BLayout::ColMajor, -1, -1, SLayout::RowMajor, 512>;" in cpp
    assert "using Acc_fp32_128x128_NZ_fr1024_t = Tile<TileType::Acc, float, 128, 128, " \
           "BLayout::ColMajor, -1, -1, SLayout::RowMajor, 1024>;" in cpp
    body = [cg.code(x) for x in cg.impl_body(cpp, "cube")]
    _ordered(body, [r"^TLOAD\(a1, a_gt\);", r"^TLOAD\(b1, b_gt\);",
                    r"^get_buf\(PIPE_MTE1, left_mutex", r"^TMOV\(a0, a1\);",
                    r"^TMOV\(b0, b1\);", r"^get_buf\(PIPE_M, acc_mutex",
                    r"^TMATMUL\(c0, a0, b0\);", r"^get_buf\(PIPE_FIX, acc_mutex",
                    r"^TSTORE\(out_gt, c0\);", r"^rls_buf\(PIPE_FIX, acc_mutex"])
    # the core loop starts at the block index, its step is evaluated once
    assert "const int64_t i_step = static_cast<int64_t>(get_block_num());" in body


def test_softmax_sets_valid_shapes_before_loading(cg):
    art = _artifacts(cg, "softmax", "softmax_kernel")[1]
    body = [cg.code(x) for x in cg.impl_body(art.kernel_cpp, "vector")]
    _ordered(body, [r"^src\.SetValidShape\(valid_rows, __pypto_dyn_x_1\);",
                    r"^red\.SetValidShape\(valid_rows, 1\);", r"^TLOAD\(src, x_gt\);",
                    r"^TROWMAX\(red, src, tmp\);", r"^TROWEXPANDSUB\(dst, src, red\);",
                    r"^TEXP\(dst, dst\);", r"^TROWSUM\(red, dst, tmp\);",
                    r"^TROWEXPANDDIV\(dst, dst, red\);", r"^TSTORE\(y_gt, dst\);"])
    assert "int64_t valid_rows = pypto_min<int64_t>(16, __pypto_dyn_x_0 - row_off);" in body
    assert "using Vec_fp32_16x1_DN_t = Tile<TileType::Vec, float, 16, 1, BLayout::ColMajor, " \
           "-1, -1, SLayout::NoneBox, 512>;" in art.kernel_cpp


def test_matmul_softmax_cross_core(cg):
    compiled, art = _artifacts(cg, "matmul_softmax")
    assert compiled.kernel_type == "mix"
    cube = [cg.code(x) for x in cg.impl_body(art.kernel_cpp, "cube")]
    vec = [cg.code(x) for x in cg.impl_body(art.kernel_cpp, "vector")]
    # INTRA_BLOCK from the cube signals both AIVs (id and id + 16); the AIV waits once
    i = cube.index("set_intra_block(PIPE_FIX, 0);")
    assert cube[i + 1] == "set_intra_block(PIPE_FIX, 16);"
    assert vec.count("wait_intra_block(PIPE_MTE2, 0);") == 1
    assert not any("set_intra_block(PIPE_FIX, 16)" in x for x in vec)
    # the vector side of a mix kernel sees its sub-block
    assert "int64_t row0 = static_cast<int64_t>(get_subblockid()) * 32;" in vec
    _ordered(cube, [r"^TMATMUL\(c0, a0, b0\);", r"^TSTORE\(ws_gt, c0\);",
                    r"^set_intra_block\(PIPE_FIX, 0\);"])
    _ordered(vec, [r"^wait_intra_block\(PIPE_MTE2, 0\);", r"^TLOAD\(s, ws_gt\);",
                   r"^TROWMAX\(blk, s, tmp\);"])


def test_flash_attention_generates_both_targets(cg):
    _compiled, art = _artifacts(cg, "flash_attention")
    cpp = art.kernel_cpp
    assert "wait_intra_block(PIPE_FIX, 1);" in cpp and "wait_intra_block(PIPE_FIX, 17);" in cpp
    assert "TINSERT(" in cpp and "TMATMUL(" in cpp and "TROWEXPANDMUL(" in cpp


def test_simt_add(cg):
    art = _artifacts(cg, "simt_add", "simt_add_kernel")[1]
    cpp = art.kernel_cpp
    sig = re.search(r"__simt_vf__ __launch_bounds__\(256\) inline void add_delta\("
                    r"__ubuf__ float\* (\w+), uint32_t \1_rows, uint32_t \1_cols, float delta\)",
                    cpp)
    assert sig, cpp
    data = sig.group(1)
    assert f"{data}[tid] = {data}[tid] + delta;" in cpp
    assert "int64_t tid = static_cast<int64_t>(threadIdx.x);" in cpp
    assert re.search(r"cce::async_invoke<add_delta>\(cce::dim3\{256, 1, 1\}, "
                     r"reinterpret_cast<__ubuf__ float\*>\(\w+\.data\(\)\), "
                     r"static_cast<uint32_t>\(\w+\.GetValidRow\(\)\), "
                     r"static_cast<uint32_t>\(\w+\.GetValidCol\(\)\), delta\);", cpp)
    assert cpp.index("__simt_vf__") < cpp.index("_impl_vector(")
    body = [cg.code(x) for x in cg.impl_body(cpp, "vector")]
    _ordered(body, [r"^set_flag\(PIPE_MTE2, PIPE_V, EVENT_ID0\);",
                    r"^wait_flag\(PIPE_MTE2, PIPE_V, EVENT_ID0\);", r"^cce::async_invoke",
                    r"^set_flag\(PIPE_V, PIPE_MTE3, EVENT_ID1\);", r"^TSTORE\(dst_gt, "])


def test_hello_world_prints_and_sets(cg):
    art = _artifacts(cg, "hello_world")[1]
    body = [cg.code(x) for x in cg.impl_body(art.kernel_cpp, "vector")]
    assert 'cce::printf("Hello World from PyPTO Pro!\\n");' in body
    assert "PYPTO_GM_ELEM(out_ptr, 0) = 1;" in body
    assert art.uses_print


@pytest.mark.slow
@pytest.mark.parametrize("example", ["vector_add", "matmul_softmax"])
def test_generated_code_runs_on_the_native_backend(example, tmp_path, monkeypatch):
    """End to end: the C++ built by the native backend (our CPU headers) computes the
    reference result — the generated code means what the kernel means."""
    import importlib.util

    import torch

    from pypto_pro.runtime.backends import use_backend

    if importlib.util.find_spec("pypto_pro.runtime.backends.native") is None:
        pytest.skip("the native backend is not available")
    monkeypatch.setenv("PYPTOPRO_CACHE_DIR", str(tmp_path))
    module = load(example)
    args = module.make_inputs()
    with use_backend("native"):
        out = module.run(*args)
    ref = module.reference(*args)
    outs = out if isinstance(out, (tuple, list)) else (out,)
    refs = ref if isinstance(ref, (tuple, list)) else (ref,)
    for o, r in zip(outs, refs):
        torch.testing.assert_close(o.float(), r.float(), rtol=module.RTOL, atol=module.ATOL)
