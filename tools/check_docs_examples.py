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

Prints one line per failing block (file, block number, the error's last line) and the totals,
by folder. Not part of CI: CI has no checkout of the upstream docs.
"""
from __future__ import annotations

import argparse
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

#: The prologue each example runs behind: the NPU mapped to the CPU.
PROLOGUE = textwrap.dedent("""\
    import sys, types, torch
    sys.modules.setdefault("torch_npu", types.ModuleType("torch_npu"))
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

    @property
    def name(self) -> str:
        return f"{self.path}#{self.index}"


def examples(root: Path) -> list[Example]:
    out = []
    for path in sorted((root / DOCS).rglob("*.md")):
        for i, code in enumerate(BLOCK.findall(path.read_text(encoding="utf-8"))):
            if "@pl.jit" in code:
                launched = "torch" in code and bool(LAUNCH.search(code))
                out.append(Example(path.relative_to(root / DOCS), i, code, launched))
    return out


def on_cpu(code: str) -> str:
    """The block with its device strings pointed at the CPU (the kernel text is unchanged)."""
    code = re.sub(r"""f?(["'])npu(:[^"']*)?\1""", '"cpu"', code)
    return code.replace(".npu()", ".cpu()")


def runner(path: Path, launched: bool) -> str:
    """The program one example runs as. Launched: the prologue, the block's file as
    `__main__`, then any `test_*` function the block defines but does not call itself.
    Not launched: the file as a module, then `compile()` of every kernel it defines that
    needs no launch arguments to compile."""
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
        _kernels = [k for k in _ns.values() if isinstance(k, JitKernel)]
        if not _kernels or all(k.needs_arguments for k in _kernels):
            sys.exit(3)  # nothing to compile without arguments
        for _k in _kernels:
            if not _k.needs_arguments:
                _k.compile().cce
        """)


def run(example: Example) -> tuple[Example, int | str]:
    """(the example, 0 when it passed, `SKIPPED`, else the error's last line)."""
    env = dict(os.environ, PYPTOPRO_BACKEND=os.environ.get("PYPTOPRO_BACKEND", "sim"))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{example.path.stem}_{example.index}.py"
        path.write_text(on_cpu(example.code), encoding="utf-8")  # inspect needs a file
        try:
            done = subprocess.run([sys.executable, "-c", runner(path, example.launched)],
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
    with concurrent.futures.ThreadPoolExecutor(args.j) as pool:
        for example, outcome in pool.map(run, todo):
            if outcome == SKIPPED:
                continue
            count = counts[example.launched, str(example.path.parent)]
            count[1] += 1
            how = "run" if example.launched else "compile"
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
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
