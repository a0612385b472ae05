"""The line map: every emitted statement of kernel.cpp carries `// <file>:<line>` and a
line-map entry, the entries agree with the comments, and a DSL line maps to the C++ lines of
its instruction (the `pl.add` line to the TADD line)."""
from __future__ import annotations

import inspect
import os
import re

import pypto_pro.language as pl

TILE = pl.TileType([32, 32], pl.DT_FP32)


@pl.jit(arch="a5")
def add_kernel(x: pl.Tensor[[32, 32], pl.DT_FP32], y: pl.Tensor[[32, 32], pl.DT_FP32],
               z: pl.Tensor[[32, 32], pl.DT_FP32]):
    with pl.section_vector():
        xs = pl.make_tile_group(type=TILE, addrs=0, mutex_ids=[0])
        ys = pl.make_tile_group(type=TILE, addrs=0x1000, mutex_ids=[1])
        zs = pl.make_tile_group(type=TILE, addrs=0x2000, mutex_ids=[2])
        a = xs.next()
        b = ys.next()
        c = zs.next()
        pl.load(a, x, [0, 0])
        pl.load(b, y, [0, 0])
        pl.add(c, a, b)  # THE ADD
        pl.store(z, c, [0, 0])


def _line_of(fn, marker: str) -> int:
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, text in enumerate(lines) if marker in text)


def test_add_line_maps_to_tadd(gen):
    art = gen(add_kernel)
    add_line = _line_of(add_kernel.kernel_def.fn, "# THE ADD")
    lines = art.kernel_cpp.splitlines()
    mapped = [cpp for cpp, f, src in art.line_map["kernel.cpp"] if src == add_line]
    texts = [lines[n - 1].strip() for n in mapped]
    assert any(t.startswith("TADD(c, a, b);") for t in texts), texts
    # the auto_mutex locks of the add belong to its line too, and nothing else does
    assert all(re.match(r"(TADD|get_buf|rls_buf)\(", t) for t in texts), texts
    assert all(f == add_kernel.kernel_def.file for _, f, src in art.line_map["kernel.cpp"])


def test_every_statement_is_mapped(gen):
    art = gen(add_kernel)
    lines = art.kernel_cpp.splitlines()
    entries = {cpp: (f, src) for cpp, f, src in art.line_map["kernel.cpp"]}
    inside = False
    for n, text in enumerate(lines, 1):
        if text.startswith("__aicore__ inline void"):
            inside = True
        elif text == "}":
            inside = False
        stripped = text.strip()
        if not inside or not stripped.endswith(";") and "  // " not in text:
            continue
        if stripped.startswith(("#", "//")):
            continue
        assert n in entries, f"line {n} has no map entry: {text}"
        f, src = entries[n]
        assert text.endswith(f"  // {os.path.basename(f)}:{src}"), text


def test_launcher_lines_map_to_the_kernel_definition(gen):
    art = gen(add_kernel)
    def_line = add_kernel.kernel_def.tree.lineno
    lines = art.call_kernel_cpp.splitlines()
    for cpp, f, src in art.line_map["call_kernel.cpp"]:
        assert src == def_line
        assert lines[cpp - 1].endswith(f"// {os.path.basename(f)}:{src}")
    assert any("<<<blockDim" in lines[cpp - 1] for cpp, _, _ in art.line_map["call_kernel.cpp"])
