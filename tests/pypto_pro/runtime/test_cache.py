"""The on-disk kernel cache (`runtime.cache`): key stability and sensitivity, atomic
self-validating entries, concurrent builders, reuse from a fresh process, and the real
system's `./build/...` directory layout."""
from __future__ import annotations

import importlib.util
import json
import multiprocessing
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from pypto_pro.errors import KeyNotFound
from pypto_pro.runtime.cache import (
    KernelCache,
    build_subdir,
    cache_key,
    canonical_json,
    compiler_version,
    file_memo,
    key_fields,
    write_build_dir,
)
from pypto_pro.runtime.kernel_def import Specialization

KERNEL_MODULE = '''
import pypto_pro.language as pl
{header}
TILE = {tile}
T = pl.TileType([TILE, TILE], pl.DT_FP32)


def helper(a, b, c):
    pl.{op}(c, a, b)

{above}
@pl.jit(arch="a5"{options})
def kern(x: pl.Tensor[[pl.STATIC, 64], pl.DT_FP32], y: pl.Tensor[[pl.STATIC, 64], pl.DT_FP32]):
    with pl.section_vector():
        a = pl.make_tile(T, addr=0)
        b = pl.make_tile(T, addr=0x4000)
        pl.load(a, x, [0, 0])
        pl.load(b, y, [0, 0])
        helper(a, b, a)
        pl.store(y, a, [0, 0]){tail}
{below}
'''
_counter = iter(range(10**6))


def load_kernel(tmp_path: Path, **fmt) -> object:
    """`kern` from a fresh module file written from KERNEL_MODULE with `fmt`."""
    values = {"header": "", "tile": 32, "op": "add", "above": "", "below": "", "options": "",
              "tail": ""}
    values.update(fmt)
    name = f"cache_kernel_{next(_counter)}"
    path = tmp_path / f"{name}.py"
    path.write_text(KERNEL_MODULE.format(**values))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module.kern.kernel_def


SPEC = Specialization(arch="a5", static_dims=((0, 0, 32), (1, 0, 32)))


def key(kdef, spec=SPEC, backend="npu", soc=None) -> str:
    return cache_key(kdef, spec, backend, soc)


# ---------------------------------------------------------------- keys


def test_key_is_stable(tmp_path):
    kdef = load_kernel(tmp_path)
    assert key(kdef) == key(kdef)
    assert len(key(kdef)) == 64
    assert key(load_kernel(tmp_path)) == key(kdef)  # same source in another file
    assert len(compiler_version()) == 64 and compiler_version() is compiler_version()


def test_whitespace_and_comments_outside_the_kernel_do_not_matter(tmp_path):
    base = key(load_kernel(tmp_path))
    moved = load_kernel(tmp_path, above="\n\n# a comment above the kernel\n\n\n",
                        below="\n\n# and one below\nUNUSED = 1\n")
    assert key(moved) == base


def test_key_changes_with_what_changes_the_build(tmp_path):
    base = key(load_kernel(tmp_path))
    changed = {
        "kernel source": key(load_kernel(tmp_path, tail="\n        pl.store(x, b, [0, 0])")),
        "helper source": key(load_kernel(tmp_path, op="mul")),
        "module constant": key(load_kernel(tmp_path, tile=16)),
        "jit option": key(load_kernel(tmp_path, options=", auto_mutex=False")),
        "static dim": key(load_kernel(tmp_path), Specialization(
            arch="a5", static_dims=((0, 0, 64), (1, 0, 32)))),
        "arch": key(load_kernel(tmp_path), Specialization(arch="a3",
                                                          static_dims=SPEC.static_dims)),
        "backend": key(load_kernel(tmp_path), backend="native"),
        "soc": key(load_kernel(tmp_path), soc="950DT"),
    }
    for what, k in changed.items():
        assert k != base, what
    assert len(set(changed.values())) == len(changed)


def test_printing_with_loc_keys_on_the_line(tmp_path):
    tail = '\n        pl.printf("hi\\n", loc=True)'
    a = key(load_kernel(tmp_path, tail=tail))
    b = key(load_kernel(tmp_path, tail=tail, above="\n\n"))
    assert a != b  # the printed file:line moved


def test_key_fields_are_json(tmp_path):
    fields = key_fields(load_kernel(tmp_path), SPEC, "npu")
    assert set(fields) >= {"compiler", "sources", "constants", "options", "specialization",
                           "backend", "soc"}
    assert any(k.startswith("fn:") and "helper" in k for k in fields["sources"])
    tile_type = next(v for k, v in fields["constants"].items() if k.endswith(":T"))
    assert tile_type["shape"] == [32, 32]  # the TileType the kernel reads, by value
    json.dumps(fields)


def test_key_is_the_same_in_a_fresh_process(tmp_path):
    """Same fields (hence key) under another hash seed. The compiler hash is left out of the
    comparison: other work may edit the package between the two processes."""
    kdef = load_kernel(tmp_path)
    script = textwrap.dedent(f"""
        import importlib.util, sys
        from pypto_pro.runtime.cache import canonical_json, key_fields
        from pypto_pro.runtime.kernel_def import Specialization
        spec = importlib.util.spec_from_file_location("m", {kdef.file!r})
        m = importlib.util.module_from_spec(spec); sys.modules["m"] = m
        spec.loader.exec_module(m)
        fields = key_fields(m.kern.kernel_def, Specialization(arch="a5",
                            static_dims=((0, 0, 32), (1, 0, 32))), "npu")
        fields.pop("compiler")
        print(canonical_json(fields))
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True, env={**os.environ, "PYTHONHASHSEED": "random"})
    fields = key_fields(kdef, SPEC, "npu")
    fields.pop("compiler")
    assert out.stdout.strip() == canonical_json(fields)


# ---------------------------------------------------------------- entries

KEY = "ab" * 32
FILES = {"kernel.cpp": "// kernel\n", "Tiling_tiling.h": "#pragma once\n",
         "call_kernel.cpp": '#include "kernel.cpp"\n'}


def test_put_get_and_layout(tmp_path):
    cache = KernelCache(tmp_path)
    entry = cache.put(KEY, FILES, meta={"kernel": "k"})
    assert entry.path == tmp_path / KEY[:2] / KEY
    got = cache.get(KEY)
    assert got is not None and set(got.files) == set(FILES)
    assert got.read_text("kernel.cpp") == "// kernel\n" and got.meta == {"kernel": "k"}
    manifest = json.loads((entry.path / "manifest.json").read_text())
    assert manifest["key"] == KEY and set(manifest["files"]) == set(FILES)
    assert not [p for p in entry.path.iterdir() if p.name.startswith(".")], "no temp files left"


def test_env_var_chooses_the_root(tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTOPRO_CACHE_DIR", str(tmp_path / "c"))
    assert KernelCache().root == tmp_path / "c"
    monkeypatch.delenv("PYPTOPRO_CACHE_DIR")
    assert KernelCache().root == Path.home() / ".cache" / "pypto_pro"


def test_put_file_and_get_file(tmp_path):
    cache = KernelCache(tmp_path)
    with pytest.raises(KeyNotFound):
        cache.put_file(KEY, "call_kernel_0123456789ab.so", b"\x7fELF")
    cache.put(KEY, FILES)
    entry = cache.put_file(KEY, "call_kernel_0123456789ab.so", b"\x7fELF")
    assert "call_kernel_0123456789ab.so" in entry.files
    assert cache.get_file(KEY, "call_kernel_0123456789ab.so") == b"\x7fELF"
    assert cache.file_path(KEY, "kernel.cpp") == entry.path / "kernel.cpp"
    assert cache.get_file(KEY, "missing.so") is None


def test_reading_one_file_checks_only_that_file(tmp_path):
    """A launch reads one file of an entry (the descriptor, the library): only that file is
    hashed; a damaged one reads as missing, damage elsewhere does not hide an intact one."""
    cache = KernelCache(tmp_path)
    entry = cache.put(KEY, {**FILES, "lib.so": b"\x7fELF" * 64})
    (entry.path / "kernel.cpp").write_text("// damaged")
    assert cache.get(KEY) is None
    assert cache.get_file(KEY, "lib.so") == b"\x7fELF" * 64
    assert cache.file_path(KEY, "lib.so") == entry.path / "lib.so"
    assert cache.get_file(KEY, "kernel.cpp") is None and cache.file_path(KEY, "kernel.cpp") is None


@pytest.mark.parametrize("damage", ["truncate", "corrupt", "delete", "manifest", "garbage"])
def test_damaged_entry_is_detected_and_rebuilt(tmp_path, damage):
    cache = KernelCache(tmp_path)
    entry = cache.put(KEY, FILES)
    path = entry.path
    if damage == "truncate":
        (path / "kernel.cpp").write_text("// ker")
    elif damage == "corrupt":
        (path / "call_kernel.cpp").write_text('#include "kernel.cpp"\n// edited\n')
    elif damage == "delete":
        (path / "Tiling_tiling.h").unlink()
    elif damage == "manifest":
        (path / "manifest.json").unlink()
    else:
        (path / "manifest.json").write_text("{not json")
    assert cache.get(KEY) is None
    builds = []
    rebuilt = cache.get_or_build(KEY, lambda: builds.append(1) or FILES)
    assert builds == [1] and cache.get(KEY) is not None
    assert rebuilt.read_text("kernel.cpp") == FILES["kernel.cpp"]


def test_get_or_build_builds_once(tmp_path):
    cache = KernelCache(tmp_path)
    builds = []
    cache.get_or_build(KEY, lambda: builds.append(1) or FILES)
    cache.get_or_build(KEY, lambda: builds.append(1) or FILES)
    assert builds == [1]


def _racer(root: str, key: str, log: str, index: int) -> str:
    cache = KernelCache(root)

    def build():
        with open(log, "a") as f:
            f.write(f"{index}\n")
        time.sleep(0.3)
        return {"kernel.cpp": f"// built by {index}\n" * 200, "call_kernel.cpp": "x\n"}

    entry = cache.get_or_build(key, build)
    return entry.read_text("kernel.cpp")


def _writer(root: str, key: str, index: int) -> None:
    cache = KernelCache(root)
    for _ in range(5):
        cache.put(key, {"kernel.cpp": f"// writer {index}\n" * 500, "a.h": str(index)})


def test_concurrent_builders_make_one_entry(tmp_path):
    log = tmp_path / "builds.log"
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(4) as pool:
        texts = pool.starmap(_racer, [(str(tmp_path), KEY, str(log), i) for i in range(4)])
    assert len(log.read_text().split()) == 1, "exactly one process built the entry"
    assert len(set(texts)) == 1
    assert KernelCache(tmp_path).get(KEY) is not None


def test_concurrent_writers_leave_a_valid_entry(tmp_path):
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_writer, args=(str(tmp_path), KEY, i)) for i in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    entry = KernelCache(tmp_path).get(KEY)
    assert entry is not None
    writer = entry.read_text("a.h")
    assert entry.read_text("kernel.cpp") == f"// writer {writer}\n" * 500


def test_fresh_process_reuses_the_entry(tmp_path):
    cache = KernelCache(tmp_path)
    cache.put(KEY, FILES)
    script = textwrap.dedent(f"""
        from pypto_pro.runtime.cache import KernelCache
        def build():
            raise SystemExit("rebuilt")
        e = KernelCache({str(tmp_path)!r}).get_or_build({KEY!r}, build)
        print(e.read_text("kernel.cpp"), end="")
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout == FILES["kernel.cpp"]


def test_file_memo_recomputes_only_when_a_file_changes(tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTOPRO_CACHE_DIR", str(tmp_path / "cache"))
    src = tmp_path / "table.toml"
    src.write_text("a = 1\n")
    calls = []

    def compute():
        calls.append(1)
        return {"value": src.read_text()}

    assert file_memo("t", [str(src)], compute) == {"value": "a = 1\n"}
    assert file_memo("t", [str(src)], compute) == {"value": "a = 1\n"} and len(calls) == 1
    src.write_text("a = 22\n")
    assert file_memo("t", [str(src)], compute) == {"value": "a = 22\n"} and len(calls) == 2
    for memo in (tmp_path / "cache" / "memo").iterdir():
        memo.write_text("{not json")  # a damaged memo is recomputed
    assert file_memo("t", [str(src)], compute) == {"value": "a = 22\n"} and len(calls) == 3


# ---------------------------------------------------------------- ./build/ layout


_A5 = Specialization(arch="a5")


class _Art:
    def __init__(self, name="add", arch="a5", spec=_A5, source="k.py", tk=None):
        self.kernel_name, self.arch, self.specialization = name, arch, spec
        self.source_file, self.tiling_key_class = source, tk

    def files(self):
        return {"kernel.cpp": "// k\n", "call_kernel.cpp": "// c\n"}


class _Key:
    from pypto_pro.runtime.tilingkey import TilingKeyField

    MODE = TilingKeyField(bits=2, values=(5, 6, 7))
    SIZE = TilingKeyField(bits=1, values=(64, 128))


def test_build_dir_layout(tmp_path):
    assert build_subdir(_Art()) == Path("add__a5/tk_none")
    assert build_subdir(_Art(source="/x/test_softmax.py")) == Path("softmax__add__a5/tk_none")
    shaped = build_subdir(_Art(spec=Specialization(arch="a5", static_dims=((0, 1, 64),))))
    assert shaped.parts[0].startswith("add__a5__shape_") and len(shaped.parts[0]) == 27
    from pypto_pro.ir.dtype import DataType

    typed = _Art(spec=Specialization(arch="a5", datatype=(("io_dtype", DataType.FP16),)))
    sub = build_subdir(typed)
    assert sub.parts[1].startswith("dt_") and len(sub.parts[1]) == 19
    keyed = _Art(spec=Specialization(arch="a5", tiling_key=(("MODE", 7), ("SIZE", 128))),
                 tk=_Key)
    assert build_subdir(keyed) == Path("add__a5/tk_6")  # index 2 | index 1 << 2
    out = write_build_dir(typed, base=tmp_path, extra_files={"call_kernel_abc.so": b"so"})
    assert out == tmp_path / "build" / sub
    assert (out / "kernel.cpp").read_text() == "// k\n" and (out / "call_kernel_abc.so").exists()
    assert json.loads((out.parent / "datatype.json").read_text()) == {"io_dtype": "DT_FP16"}


def test_a_big_files_digest_is_remembered_across_processes_until_it_is_written(tmp_path):
    """A library's sha256 is stored with its (inode, size, mtime, ctime): a new `KernelCache`
    (a new process) trusts it while the file is untouched; a same-size rewrite is caught."""
    lib = b"\x7fELF" + bytes(range(256)) * 300  # above the size whose digest is remembered
    KernelCache(tmp_path).put(KEY, {"lib.so": lib})
    memos = list((tmp_path / "memo").glob("sha256-*.json"))
    assert len(memos) == 1  # written with the entry: the first reader need not hash it
    fresh = KernelCache(tmp_path)
    path = fresh.file_path(KEY, "lib.so")
    assert path is not None and fresh.get_file(KEY, "lib.so") == lib
    stat = path.stat()
    path.write_bytes(b"\0" * len(lib))  # corrupted in place, same size and times
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert KernelCache(tmp_path).file_path(KEY, "lib.so") is None


def test_names_read_walks_like_ast_walk():
    """The inline breadth-first walk finds the names `ast.walk` finds, in the same order (the
    order numbers helpers of one name: `fn:h`, `fn:h#2`)."""
    import ast

    from pypto_pro.runtime.cache import _names_read
    from pypto_pro.runtime.jit import _function_tree

    def by_ast_walk(tree: ast.AST) -> list[str]:
        found: dict[str, None] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute):
                chain, cur = [node.attr], node.value
                while isinstance(cur, ast.Attribute):
                    chain.append(cur.attr)
                    cur = cur.value
                if isinstance(cur, ast.Name):
                    found.setdefault(".".join([cur.id, *reversed(chain)]), None)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                found.setdefault(node.id, None)
        return list(found)

    from pypto_pro.examples import ALL_EXAMPLES, load

    for name in ALL_EXAMPLES:
        for kernel in load(name).KERNELS.values():
            tree = _function_tree(kernel.kernel_def.fn)[0]
            assert _names_read(tree) == by_ast_walk(tree), name
