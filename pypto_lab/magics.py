"""The IPython magics: `%%pypto` (compile, run and show a kernel cell) and its line companions.

Thin by design (STYLE §4.14): options are declared with `magic_arguments` (so `%%pypto?`
prints them), turned into a `CellOptions`, and everything else happens in plain functions
(`cell.run_cell`, `compare.compare`, `report.export_result`). State lives on the `PyptoMagics`
instance: the last result (compiles are cached by `pypto_pro` itself, `kernel.compile`). Bad
option values raise `UsageError`; compile, simulation and cell errors raise `CellError` (its
`_render_traceback_` fails the cell with the DSL diagnostic).
"""
from __future__ import annotations

from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring
from IPython.display import display
from traitlets import Bool

from .cell import register_cell, run_cell
from .errors import CellError
from .figures import under_kernel
from .locations import where
from .options import (
    PANELS,
    CellOptions,
    OptionError,
    parse_cores,
    parse_diff,
    parse_show,
    parse_tolerance,
)
from .progress import Progress


def options_from_args(args: Any, interactive: bool = True) -> CellOptions:
    """`CellOptions` from parsed `%%pypto` arguments (OptionError on bad values);
    `interactive=False` makes every result static (`PyptoMagics.interactive`)."""
    if args.block_dim is not None and args.block_dim <= 0:
        raise OptionError(f"--block-dim must be a positive integer, got {args.block_dim}")
    rtol, atol = parse_tolerance(args.tol)
    show = parse_show(args.show)
    if args.sanitize and show and "sanitizer" not in show:
        show = tuple(p for p in PANELS if p in show or p == "sanitizer")
    return CellOptions(
        show=show, arch=args.arch, soc=args.soc, backend=args.backend,
        block_dim=args.block_dim, launch=_unquote(args.launch), diff=parse_diff(args.diff),
        ref=_unquote(args.ref), out=args.out, rtol=rtol, atol=atol,
        keep_going=args.keep_going, name=args.o,
        force=args.force, sanitize=args.sanitize, export=_unquote(args.export),
        traceback=args.traceback,
        interactive=interactive and not args.static, cores=parse_cores(args.cores))


def _unquote(text: str | None) -> str | None:
    if text and len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


@magics_class
class PyptoMagics(Magics):
    """`%%pypto`, `%pypto_trace`, `%pypto_compare`, `%pypto_export`.

    `%config PyptoMagics.interactive = False` shows every result statically (no widgets):
    for notebooks that are exported to HTML with their widget state, where nbconvert would
    otherwise need a CDN to draw the widgets.
    """

    interactive = Bool(True, help="show results as the interactive Workbench (ipywidgets); "
                                  "False: the static, script-free view").tag(config=True)

    def __init__(self, shell: Any = None) -> None:
        super().__init__(shell)
        self.last: Any = None

    @magic_arguments()
    @argument("--show", metavar="PANELS",
              help=f"panels to show, comma separated: {', '.join(PANELS)}, all, none "
                   "(default: every panel that has data but ir and sanitizer)")
    @argument("--arch", help="target arch for the kernels of the cell: a2, a3, a5, 3510, ...")
    @argument("--soc", help="simulator SoC table: 950PR, 950DT, 910B1, ... (implies sim)")
    @argument("--backend", help="backend of the launches: sim, native, npu (default: "
                                "automatic, env PYPTOPRO_BACKEND)")
    @argument("--block-dim", type=int, help="block dim of the --launch (default 1)")
    @argument("--launch", metavar="EXPR",
              help="launch after the cell ran, e.g. 'add_kernel(x, y, z)' (block dim from "
                   "--block-dim) or 'add_kernel[None, 8](x, y, z)'")
    @argument("--diff", metavar="PASS[,PASS]",
              help="show what one pass changed, or the diff between two passes")
    @argument("--ref", metavar="EXPR", help="reference value of the output, e.g. 'x + y'; a "
                                            "mismatch lists the first bad elements, draws where "
                                            "they are (Run tab) and fails the cell")
    @argument("--out", metavar="NAME", help="value compared with --ref (default: the output "
                                            "tensor of the last launch)")
    @argument("--tol", metavar="RTOL[,ATOL]", help="tolerances of --ref (default by dtype)")
    @argument("--keep-going", action="store_true",
              help="on a --ref FAIL show the result without failing the cell (default: the "
                   "result is shown, then the cell fails with the first mismatches)")
    @argument("--cores", metavar="LIST", help="core instances on the timeline, e.g. 0-3,8")
    @argument("-o", metavar="NAME", help="also bind the CellResult to NAME")
    @argument("-f", "--force", action="store_true",
              help="recompile even when a cached compile of the same kernel exists")
    @argument("--sanitize", action="store_true",
              help="run the launches under the sanitizer (races, out-of-bounds, sync pairing, "
                   "uninitialised reads) and show its findings (the Sanitizer panel)")
    @argument("--export", metavar="PATH", help="write an HTML report (.html), a Perfetto "
                                               "trace (.json) or msprof JSON (.msprof.json)")
    @argument("--static", action="store_true",
              help="show the static (script-free) result instead of the interactive Workbench")
    @argument("--traceback", action="store_true",
              help="on errors also show the Python stack (for workbench developers)")
    @cell_magic
    def pypto(self, line: str, cell: str) -> Any:
        """Run a cell of PyPTO Pro kernels: every `@pl.jit` kernel defined in it is compiled in
        place (all passes; C++ code generation when available), launches run on the default
        backend with their Trace captured, and the result is shown as the Workbench (tabs
        Source, Passes, CCE, Run, Blocks, Timeline, Roofline; Sanitizer with --sanitize).
        Compile and simulation errors
        fail the cell with the DSL diagnostic. The result is also in `_pypto`.

        Example::

            %%pypto --launch "add_kernel(x, y, z)" --block-dim 4 --ref "x + y" -o single
            @pl.jit
            def add_kernel(x: pl.Tensor[[pl.DYNAMIC, pl.DYNAMIC], pl.DT_FP16], ...):
                ...

        Companion line magics: ``%pypto_compare A B`` puts two results (CellResults, Traces
        or kernels; e.g. two ``-o`` names) side by side: headline numbers, busy time per pipe
        (summed over cores and per core), the final IR diff and both timelines on one time
        axis (``pypto_lab.compare(a, b)`` in Python); ``%pypto_trace [NAME]`` shows a
        timeline; ``%pypto_export [NAME] PATH`` writes a report or trace.
        """
        try:
            options = options_from_args(parse_argstring(self.pypto, line), self.interactive)
        except OptionError as e:
            raise UsageError(str(e)) from None
        source, code = register_cell(cell, line, self.shell)
        failed = None
        try:
            result = run_cell(cell, options, self.shell.user_ns, source, code, shell=self.shell,
                              progress=Progress.for_shell(self.shell))
        except OptionError as e:
            raise UsageError(str(e)) from None
        except CellError as e:
            if e.result is None:
                raise
            failed, result = e, e.result  # a --ref FAIL: show the result, then fail the cell
        self.last = result
        self.shell.user_ns["_pypto"] = result
        if options.name:
            self.shell.user_ns[options.name] = result
        if options.export:
            try:
                result.export(options.export)
            except Exception as e:  # noqa: BLE001
                raise CellError(e, source, "export", options.traceback, self.shell) from e
        if options.show and options.interactive and under_kernel():
            display(result.fallback_bundle(), raw=True)
        if failed is not None:
            if options.show:
                display(result)
            raise failed
        return result if options.show else None

    @magic_arguments()
    @argument("name", nargs="?", help="a CellResult, Trace or kernel variable (default: the "
                                      "last %%pypto result)")
    @argument("--cores", metavar="LIST", help="core instances to show, e.g. 0-3,8")
    @argument("--line", type=int, help="halo the events of this kernel line")
    @argument("--export", metavar="PATH", help="also write the trace (.json Perfetto, "
                                               ".msprof.json, .html figure)")
    @line_magic
    def pypto_trace(self, line: str) -> Any:
        """Show the per-pipe timeline of a result, a Trace or a kernel's last launch."""
        from .comparison import trace_of
        from .figures import FigureOutput, export_trace
        from .views.timeline import timeline_plain

        args = parse_argstring(self.pypto_trace, line)
        target = self._lookup(args.name)
        trace = trace_of(target)
        if trace is None or not len(trace.events):
            raise UsageError(f"{args.name or 'the last result'} has no timed launch")
        file = target.kernels[0].file if getattr(target, "kernels", None) else None
        highlight = (file or str(trace.events["file"].iloc[0]), args.line) if args.line else None
        try:
            fig = timeline_plain(trace, parse_cores(args.cores), highlight)
        except OptionError as e:
            raise UsageError(str(e)) from None
        if args.export:
            export_trace(trace, _unquote(args.export), fig)
        source = getattr(target, "source", None)
        return FigureOutput(fig, trace.summary(where=where if source is None else source.where))

    @line_magic
    def pypto_compare(self, line: str) -> Any:
        """`%pypto_compare A B`: two results side by side (IR diff, per-pipe time, timelines
        on a shared axis)."""
        from .comparison import compare

        names = line.split()
        if len(names) != 2:
            raise UsageError("usage: %pypto_compare RESULT_A RESULT_B")
        return compare(self._lookup(names[0]), self._lookup(names[1]),
                       labels=(names[0], names[1]))

    @line_magic
    def pypto_export(self, line: str) -> None:
        """`%pypto_export [NAME] PATH`: write the HTML report / Perfetto JSON of a result."""
        parts = line.split()
        if not 1 <= len(parts) <= 2:
            raise UsageError("usage: %pypto_export [RESULT] PATH")
        target = self._lookup(parts[0] if len(parts) == 2 else None)
        path = target.export(_unquote(parts[-1]))
        print(f"wrote {path}")

    def _lookup(self, name: str | None) -> Any:
        if not name:
            if self.last is None:
                raise UsageError("no %%pypto result yet")
            return self.last
        if name not in self.shell.user_ns:
            raise UsageError(f"name {name!r} is not defined")
        return self.shell.user_ns[name]
