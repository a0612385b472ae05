"""Run every complete kernel example of the real PyPTO Pro documentation here, unchanged.

    PYPTO_DOCS_ROOT=/path/to/pypto python tools/check_docs_examples.py [-k FILTER] [-v] [-j N]

The root is a checkout (or `git archive`) of the upstream PyPTO Pro project; its
`docs/zh/pypto_pro/**/*.md` hold `python` code blocks. A block that decorates a kernel with
`pl.jit` and launches it on torch tensors is an example: it runs in its own process (a timeout,
a crash or a hang costs that block only) with the NPU mapped to the CPU the way a user without
an NPU would do it by hand: device strings `npu…` become `cpu`, `.npu()` becomes `.cpu()`,
`torch_npu` is an empty module and `torch.npu` a namespace whose `synchronize`/`set_device`
do nothing. The kernel code itself is not touched. The block passes when it runs to its end
(its own asserts and `allclose` checks included). A block that only defines kernels passes
when each of its kernels that needs no launch arguments compiles (`kernel.compile().cce`:
parse, passes and generated code).

A block may use what earlier blocks of its page define (the docs build a kernel up block by
block): it runs behind those definitions — imports, functions, classes and assignments of the
names it uses, taken from earlier blocks, transitively — and behind the docs' convention
`import pypto_pro.language as pl` when no earlier block imports `pl`. A block that is a
fragment is SKIPPED with its reason, counted apart: not valid Python (`def k(...)` elisions),
names at module level that no block of the page defines, or kernel-body calls (`pl.get_block_idx()`)
outside a kernel, which the real `pl` refuses as well.

Prints one line per failing block (file, block number, the error's last line) and the totals,
by folder. Not part of CI: CI has no checkout of the upstream docs.
"""
from __future__ import annotations

import argparse
import ast
import builtins
import collections
import concurrent.futures
import os
import re
import subprocess
import sys
import tempfile
import textwrap
from dataclasses import dataclass
from pathlib import Path

DOCS = Path("docs/zh/pypto_pro")
BLOCK = re.compile(r"```python\n(.*?)```", re.S)
LAUNCH = re.compile(r"\]\s*\(")  # kernel[stream, block_dim](...)
TIMEOUT_S = 300
SKIPPED = 3  # the exit code of a block with no kernel to compile without arguments

#: The prologue each example runs behind: the NPU mapped to the CPU. Of torch_npu only what
#: the docs' launch code calls, as its CPU equivalent: `npu_dtype_cast` to `hifloat8` gives the
#: HiFloat8 codes as uint8 (the storage torch_npu gives such a tensor), any other cast `.to`.
PROLOGUE = textwrap.dedent("""\
    import sys, types, torch
    _torch_npu = sys.modules.setdefault("torch_npu", types.ModuleType("torch_npu"))
    _torch_npu.hifloat8 = "torch_npu.hifloat8"
    def _npu_dtype_cast(tensor, dtype):
        if dtype == _torch_npu.hifloat8:
            from pypto_pro.sim.ops.numerics import encode_hif8
            return encode_hif8(tensor.float())
        return tensor.to(dtype)
    _torch_npu.npu_dtype_cast = _npu_dtype_cast
    class _Npu(types.SimpleNamespace):
        def __getattr__(self, name):
            return lambda *a, **k: None
    torch.npu = _Npu(is_available=lambda: False, device_count=lambda: 1,
                     current_device=lambda: 0, current_stream=lambda *a, **k: None)
    """)


@dataclass
class Example:
    path: Path
    index: int  # the block's number among the file's python blocks
    code: str
    launched: bool  # False: the block only defines kernels; they are compiled, not run
    prelude: str = ""  # what the block uses from earlier blocks of its page
    skip: str = ""  # why the block is a fragment that cannot run ("" when it is not)

    @property
    def name(self) -> str:
        return f"{self.path}#{self.index}"


def examples(root: Path) -> list[Example]:
    out = []
    for path in sorted((root / DOCS).rglob("*.md")):
        blocks = BLOCK.findall(path.read_text(encoding="utf-8"))
        for i, code in enumerate(blocks):
            if "@pl.jit" in code:
                launched = "torch" in code and bool(LAUNCH.search(code))
                prelude, skip = page_context(blocks[:i], code)
                out.append(Example(path.relative_to(root / DOCS), i, code, launched, prelude,
                                   skip))
    return out


# ------------------------------------------------------------------ a block among its page's
_BUILTINS = frozenset(dir(builtins)) | {"__name__", "__file__"}
_PL_IMPORT = "import pypto_pro.language as pl\n"


def page_context(earlier: list[str], code: str) -> tuple[str, str]:
    """(prelude, skip reason) of a block after the blocks `earlier` on its page."""
    try:
        tree = ast.parse(code)
    except SyntaxError as e:
        return "", f"fragment: not valid Python (line {e.lineno}: {e.msg})"
    defs = _definitions(earlier)
    chosen: dict[int, tuple[int, str]] = {}  # id → (order, source)
    need, seen = list(_free(tree)), set()
    while need:
        name = need.pop()
        if name in seen or name not in defs:
            continue
        seen.add(name)
        order, stmt, source = defs[name]
        if order not in chosen:
            chosen[order] = source
            need.extend(_free(ast.Module(body=[stmt], type_ignores=[])))
    prelude = "".join(src + "\n" for _, src in sorted(chosen.items()))
    if "pl" in _free(tree) and "pl" not in defs:
        prelude = _PL_IMPORT + prelude
    bound = _top_bound(ast.parse(prelude)) | _top_bound(tree)
    missing = sorted(_module_level_loads(tree) - bound - _BUILTINS)
    if missing:
        return prelude, f"fragment: uses {', '.join(missing)}, defined by no block of its page"
    call = _module_level_dsl_call(tree)
    if call:
        return prelude, f"fragment: kernel-body call {call}() outside a kernel"
    return prelude, ""


def _definitions(blocks: list[str]) -> dict[str, tuple[int, ast.stmt, str]]:
    """name → (order, statement, its source) of the last top-level import, function, class or
    assignment that binds it in `blocks` (blocks that are not valid Python are passed over)."""
    out: dict[str, tuple[int, ast.stmt, str]] = {}
    order = 0
    for block in blocks:
        try:
            tree = ast.parse(block)
        except SyntaxError:
            continue
        for stmt in tree.body:
            if isinstance(stmt, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef,
                                 ast.Assign, ast.AnnAssign)):
                order += 1
                source = ast.get_source_segment(block, stmt, padded=True) or ""
                if isinstance(stmt, (ast.FunctionDef, ast.ClassDef)) and stmt.decorator_list:
                    first = min(d.lineno for d in stmt.decorator_list)
                    source = "\n".join(block.splitlines()[first - 1:stmt.end_lineno])
                for name in _bound(ast.Module(body=[stmt], type_ignores=[])):
                    out[name] = (order, stmt, source)
    return out


def _bound(tree: ast.AST) -> set[str]:
    """Every name `tree` binds anywhere (imports, defs, parameters, assignment targets)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            out.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.arg):
            out.add(node.arg)
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            out.add(node.id)
    return out


def _top_bound(tree: ast.Module) -> set[str]:
    """The names `tree` binds at module level (a function's or class's own name only)."""
    return {name for stmt in tree.body for name in (
        {stmt.name} if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        else _bound(stmt))}


def _free(tree: ast.AST) -> set[str]:
    """Names `tree` reads and binds nowhere (builtins aside)."""
    loads = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)
             and isinstance(n.ctx, ast.Load)}
    return loads - _bound(tree) - _BUILTINS


def _module_level(tree: ast.Module) -> list[ast.AST]:
    """What runs when the block runs: top-level statements, and of functions and classes their
    decorators, annotations, defaults and bases (kernel bodies run later, in the parser)."""
    out: list[ast.AST] = []
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = stmt.args
            out += [*stmt.decorator_list, *a.defaults, *(d for d in a.kw_defaults if d)]
            out += [x.annotation for x in (*a.posonlyargs, *a.args, *a.kwonlyargs)
                    if x.annotation]
        elif isinstance(stmt, ast.ClassDef):
            out += [*stmt.decorator_list, *stmt.bases]
        else:
            out.append(stmt)
    return out


def _module_level_loads(tree: ast.Module) -> set[str]:
    return {n.id for part in _module_level(tree) for n in ast.walk(part)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _module_level_dsl_call(tree: ast.Module) -> str:
    """`pl.<name>` of the first DSL declaration called at module level, else ""."""
    import pypto_pro.language as pl
    from pypto_pro.language.decl import Declaration

    for part in _module_level(tree):
        for node in ast.walk(part):
            f = node.func if isinstance(node, ast.Call) else None
            if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) \
                    and f.value.id == "pl" and isinstance(getattr(pl, f.attr, None), Declaration):
                return f"pl.{f.attr}"
    return ""


def on_cpu(code: str) -> str:
    """The block with its device strings pointed at the CPU (the kernel text is unchanged)."""
    code = re.sub(r"""f?(["'])npu(:[^"']*)?\1""", '"cpu"', code)
    return code.replace(".npu()", ".cpu()")


def runner(path: Path, launched: bool, own: frozenset[str] = frozenset()) -> str:
    """The program one example runs as. Launched: the prologue, the block's file as
    `__main__`, then any `test_*` function the block defines but does not call itself.
    Not launched: the file as a module, then `compile()` of every kernel among the names
    `own` (the block's own, not its prelude's) that needs no launch arguments to compile:
    once per valid tiling key, as the real offline build compiles one binary per key (a
    `datatype=` choice is a launch argument)."""
    if launched:
        return PROLOGUE + textwrap.dedent(f"""\
            import runpy
            _ns = runpy.run_path({str(path)!r}, run_name="__main__")
            if "__main__" not in open({str(path)!r}).read():
                for _name, _fn in list(_ns.items()):
                    if _name.startswith("test_") and callable(_fn):
                        _fn()
            """)
    return PROLOGUE + textwrap.dedent(f"""\
        import runpy
        from pypto_pro.runtime.jit import JitKernel
        _ns = runpy.run_path({str(path)!r}, run_name="doc_example")
        _kernels = [k for n, k in _ns.items() if isinstance(k, JitKernel) and n in {sorted(own)!r}
                    and not (k.needs_arguments or k.options.datatype)]
        if not _kernels:
            sys.exit(3)  # nothing to compile without arguments
        for _k in _kernels:
            _schema = _k.tilingkey_schema
            for _key in ([dict(zip(_schema.field_names(), c)) for c in _schema.enumerate_valid()]
                         if _schema is not None else [None]):
                _k.compile(tiling_key=_key).cce
        """)


def run(example: Example) -> tuple[Example, int | str]:
    """(the example, 0 when it passed, `SKIPPED`, else the error's last line)."""
    if example.skip:
        return example, SKIPPED
    env = dict(os.environ, PYPTOPRO_BACKEND=os.environ.get("PYPTOPRO_BACKEND", "sim"))
    own = frozenset(_bound(ast.parse(example.code)))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{example.path.stem}_{example.index}.py"
        # inspect needs a file; the prelude first, so the block's own lines keep their order
        path.write_text(on_cpu(example.prelude + example.code), encoding="utf-8")
        try:
            done = subprocess.run([sys.executable, "-c",
                                   runner(path, example.launched, own)],
                                  capture_output=True, text=True, timeout=TIMEOUT_S, env=env,
                                  cwd=tmp)
        except subprocess.TimeoutExpired:
            return example, f"timeout after {TIMEOUT_S} s"
    if done.returncode in (0, SKIPPED):
        return example, done.returncode
    lines = [ln for ln in done.stderr.strip().splitlines() if ln.strip()]
    error = re.compile(r"^[\w.]+(Error|Exception|Exit|NotSupported)\b|^[\w.]+: ")
    last = next((ln for ln in reversed(lines) if error.match(ln)),
                lines[-1] if lines else f"exit code {done.returncode}")
    return example, last.strip()[:300]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-k", default="", help="only examples whose file path contains this")
    ap.add_argument("-j", type=int, default=2, help="examples run at once")
    ap.add_argument("-v", action="store_true", help="also list the examples that pass")
    args = ap.parse_args()
    root = Path(os.environ.get("PYPTO_DOCS_ROOT", ""))
    if not (root / DOCS).is_dir():
        sys.exit(f"PYPTO_DOCS_ROOT must point at a PyPTO Pro checkout holding {DOCS}")
    todo = [e for e in examples(root) if args.k in str(e.path)]
    counts: dict[tuple[bool, str], list[int]] = collections.defaultdict(lambda: [0, 0])
    failed = 0
    skipped: collections.Counter[str] = collections.Counter()
    with concurrent.futures.ThreadPoolExecutor(args.j) as pool:
        for example, outcome in pool.map(run, todo):
            how = "run" if example.launched else "compile"
            if outcome == SKIPPED:
                why = example.skip or "no kernel compiles without launch arguments"
                skipped[why.split(":")[0]] += 1
                print(f"SKIP  {how:7s} {example.name}: {why}", flush=True)
                continue
            count = counts[example.launched, str(example.path.parent)]
            count[1] += 1
            if outcome == 0:
                count[0] += 1
                if args.v:
                    print(f"pass  {how:7s} {example.name}")
            else:
                failed += 1
                print(f"FAIL  {how:7s} {example.name}: {outcome}", flush=True)
    for launched, what in ((True, "run to their end"), (False, "compile")):
        rows = {folder: c for (ran, folder), c in counts.items() if ran == launched}
        print(f"\nexamples that launch a kernel: {what}" if launched else
              f"\nexamples that only define kernels (no launch arguments needed): {what}")
        for folder, (ok, total) in sorted(rows.items()):
            print(f"{ok:4d} / {total:<4d} {folder}")
        ok, total = (sum(c[i] for c in rows.values()) for i in (0, 1))
        print(f"{ok} / {total}")
    print(f"\nskipped (not counted above): {sum(skipped.values())}"
          + "".join(f"\n{n:4d}  {why}" for why, n in sorted(skipped.items())))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
