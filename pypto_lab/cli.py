"""`python -m pypto_lab`: the workbench from a shell (reports and traces without a notebook).

Owns the argument parser and `main`. `report PATH.py[::KERNEL]` runs the file as a module,
compiles its kernels (all passes, code generation when available) and, when `--args` is given,
launches KERNEL with those arguments and `--block-dim` blocks, then writes the standalone HTML
report (`-o report.html`) and optionally the Perfetto trace (`--trace out.json`). `--example
NAME` does the same for a bundled example (`pypto_pro.examples`) with its own inputs, block
dim and reference; `--ref` may name the kernel's parameters (`x + y`), bound to the launch
arguments. A `--ref` FAIL still writes the report, then exits with status 1 and the first
mismatches. Everything goes through `cell.run_cell`, exactly as a notebook cell does; the
`examples` below are run as printed by the tests.
"""
from __future__ import annotations

import argparse
import inspect
import os
import runpy
import sys
from pathlib import Path

from .check import ReferenceMismatch
from .errors import CellError
from .options import CellOptions, OptionError, parse_tolerance

USAGE_EXAMPLES = """examples (kernels.py defines add_kernel(x, y, z), e.g. the README's add kernel,
and make_inputs(rows, cols) returning x, y and an empty z):
  python -m pypto_lab report kernels.py::add_kernel --args "make_inputs(512, 512)" \\
      --block-dim 4 --ref "x + y" -o report.html
  python -m pypto_lab report --example vector_add -o add.html --trace add.json
  python -m pypto_lab report kernels.py -o compile_only.html
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m pypto_lab", description="PyPTO Pro workbench: HTML reports and traces",
        epilog=USAGE_EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    rep = sub.add_parser("report", help="compile (and run) kernels, write an HTML report",
                         epilog=USAGE_EXAMPLES,
                         formatter_class=argparse.RawDescriptionHelpFormatter)
    rep.add_argument("target", nargs="?", help="PATH.py or PATH.py::KERNEL")
    rep.add_argument("--example", help="a bundled example instead of a file "
                                       "(vector_add, matmul, softmax, flash_attention, ...)")
    rep.add_argument("--args", help="Python expression giving the launch arguments, evaluated "
                                    "in the module (a tuple, or one value)")
    rep.add_argument("--block-dim", help="block dim (an int or an expression; default 1)")
    rep.add_argument("--ref", help="expected output expression: names of the module, the "
                                   "kernel's parameters (bound to the launch arguments) and "
                                   "`args`; a mismatch still writes the report and exits 1")
    rep.add_argument("--tol", help="RTOL[,ATOL] of --ref")
    rep.add_argument("--arch", help="a2 / a3 / a5")
    rep.add_argument("--soc", help="simulator SoC: 950PR, 950DT, 910B1, ...")
    rep.add_argument("--backend", help="sim, native or npu")
    rep.add_argument("--sanitize", action="store_true",
                     help="run the launch under the sanitizer (findings in the report)")
    rep.add_argument("-o", "--output", default="pypto_report.html", help="report path (.html)")
    rep.add_argument("--trace", help="also write the trace (.json Perfetto, .msprof.json)")
    return parser


def _resolve_target(args: argparse.Namespace) -> tuple[Path, str | None, dict]:
    """(module path, kernel name, extra expressions) from PATH::KERNEL or --example."""
    if args.example:
        from pypto_pro.examples import load

        module = load(args.example)
        kernel = next(iter(module.KERNELS))
        extra = {"args": args.args or "make_inputs()",
                 "block_dim": args.block_dim or "block_dim(*args)",
                 "ref": args.ref or "reference(*args)"}
        return Path(module.__file__), kernel, extra
    if not args.target:
        raise OptionError("give PATH.py[::KERNEL] or --example NAME")
    path, _, kernel = args.target.partition("::")
    return Path(path), kernel or None, {"args": args.args, "block_dim": args.block_dim,
                                        "ref": args.ref}


def run_report(args: argparse.Namespace) -> Path:
    from .cell import run_cell
    from .records import SourceInfo

    path, kernel, extra = _resolve_target(args)
    if not path.is_file():
        raise OptionError(f"no such file: {path}")
    file = os.path.abspath(path)
    namespace = runpy.run_path(file, run_name="__pypto_report__")
    launch = block_dim = None
    if kernel and extra["args"]:
        if kernel not in namespace:
            raise OptionError(f"{path} defines no kernel {kernel!r}")
        value = eval(extra["args"], namespace)  # noqa: S307  (the user's own expression)
        launch_args = value if isinstance(value, tuple) else (value,)
        namespace["args"] = launch_args
        # --ref and --block-dim may name the kernel's parameters: x, y, ... of this launch
        params = inspect.signature(namespace[kernel]).parameters
        namespace.update(zip(params, launch_args))
        block_dim = int(eval(str(extra["block_dim"] or 1), namespace))  # noqa: S307
        launch = f"{kernel}(*args)"
    rtol, atol = parse_tolerance(args.tol)
    options = CellOptions(arch=args.arch, soc=args.soc, backend=args.backend,
                          block_dim=block_dim, launch=launch,
                          ref=extra["ref"] if launch else None, rtol=rtol, atol=atol,
                          keep_going=True, sanitize=args.sanitize, interactive=False)
    source = SourceInfo(file, str(path), path.read_text(), cell=False)
    result = run_cell("", options, namespace, source, "")
    out = result.export(args.output)
    print(result.summary())
    print(f"report: {out}")
    if args.trace:
        print(f"trace: {result.export(args.trace)}")
    if result.check is not None and not result.check.ok:
        raise CellError(ReferenceMismatch(result.check), source, "check")
    return out


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        run_report(args)
    except OptionError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except CellError as e:
        print(e.diagnostic(), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted: nothing written", file=sys.stderr)
        return 130
    return 0
