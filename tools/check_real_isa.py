"""Check the generated CCE of every example kernel against the real pto-isa headers.

    PTO_ISA_ROOT=/path/to/pto-isa python tools/check_real_isa.py [--cxx CXX] [--only NAME]
                                                                 [--no-run] [--errors N]

Compile. Every section of every kernel in `pypto_pro.examples` (cube and vector, 2 per kernel,
each compiled on its own with `-D__DAV_CUBE__` / `-D__DAV_VEC__` as bisheng compiles them) is
compiled with `-fsyntax-only` against `$PTO_ISA_ROOT/include` in pto-isa's CPU-simulator mode
(`-D__CPU_SIM`). The only other headers are stand-ins for what bisheng provides and the CPU mode
lacks (`real_isa/bisheng_builtins.h`: buffer mutexes, cross-core flags, SPR and atomic helpers,
the tiling copy-in; the Reg API register types and intrinsics and the SIMT thread context,
generated here from the code generator's own tables; `real_isa/pypto_tprint.h`, PyPTO Pro's
runtime print header). A section is *clean* when it compiles; *bisheng-only* when every error is
on a line using one of the constructs only bisheng understands (`__VEC_SCOPE__`, `__simt_vf__`
functions, `cce::async_invoke`) and a second compile with stand-ins for those
(`real_isa/bisheng_only.h`) is clean, so nothing hides behind them.

Run. Every case of `pypto_pro.examples.SMALL_CASES` whose kernel compiled clean is launched the
way a user launches it (`kernel[None, block_dim](...)`) on a backend registered here that builds
the generated `call_kernel.cpp` with `real_isa/harness.h` against the real headers and runs it on
pto-isa's CPU simulator (one thread per core, cross-core flags blocking across threads); the
outputs are compared with the example's torch reference at its tolerance. A kernel that moves
data between the cores on chip (an Acc → Vec fixpipe move into the AIVs' UB, a Vec → Mat move
or insert into the AIC's L1) is listed as not runnable there, with the op and its line: each
simulated core's buffers are private to its thread and pto-isa's CPU TMOV ignores the
AccToVecMode, so the data never reaches the other core (`flash_attention_gm` is the form that
runs: its hand-offs go through GM).

The compiler must accept `static_assert(false)` in a template (pto-isa's CPU headers use it):
g++ 13 or newer, or clang++ 17 or newer; `--cxx` / `$CXX` picks one, else the first that works.
Not part of CI (CI has no pto-isa); nothing of pto-isa is copied into the project.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from pypto_pro.codegen import generate  # noqa: E402
from pypto_pro.codegen.vf import VF_INTRINSICS, vf_constants  # noqa: E402
from pypto_pro.codegen import vf_forms  # noqa: E402
from pypto_pro.compiler import compile_kernel  # noqa: E402
from pypto_pro.examples import ALL_EXAMPLES, SMALL_CASES, load  # noqa: E402
from pypto_pro.ir.mutator import walk  # noqa: E402
from pypto_pro.ir.nodes import Call  # noqa: E402
from pypto_pro.ir.types import MemorySpace  # noqa: E402
from pypto_pro.runtime.backends import LaunchResult, register_backend, use_backend  # noqa: E402
from pypto_pro.runtime.kernel_def import Specialization  # noqa: E402

STUBS = Path(__file__).resolve().parent / "real_isa"
SECTIONS = (("cube", "__DAV_CUBE__"), ("vector", "__DAV_VEC__"))
#: the spellings of the constructs only bisheng understands
BISHENG_ONLY = ("__VEC_SCOPE__", "__simt_vf__", "__simt_callee__", "__launch_bounds__",
                "async_invoke", "dim3")
BACKEND = "pto-isa-cpusim"
_DIAG = re.compile(r"^(?P<file>[^:\s]+):(?P<line>\d+):(?:\d+:)? (?:fatal )?error: (?P<msg>.*)$")
_ENTRY = re.compile(r'extern "C" void call_kernel\(([^)]*)\)')
KERNEL_TYPES = {"aiv": 0, "aic": 1, "mix": 2}


# ---------------------------------------------------------------- compiler and stand-ins


def pick_compiler(wanted: str | None) -> str:
    """`wanted`, else the first compiler that accepts pto-isa's `static_assert(false)`."""
    probe = "template <typename T> void f() { static_assert(false, \"x\"); }\nint main() {}\n"
    names = [wanted] if wanted else ["g++", "clang++", *(f"clang++-{v}" for v in range(22, 16, -1))]
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "probe.cpp"
        src.write_text(probe)
        for name in names:
            if shutil.which(name) and subprocess.run(
                    [name, "-std=c++20", "-fsyntax-only", str(src)],
                    capture_output=True).returncode == 0:
                return name
    sys.exit(f"no C++ compiler accepts pto-isa's CPU headers (tried {', '.join(names)}): "
             "install g++ >= 13 or clang++ >= 17, or name one with --cxx")


def vf_builtins() -> str:
    """Declarations of the Reg API types and intrinsics the code generator can emit (bisheng
    builtins: their real declarations come with the toolchain, not with pto-isa)."""
    names = {spec.name.format(bits=b, T="float") for spec in VF_INTRINSICS.values()
             for b in (8, 16, 32, 64)}
    names |= {n for n in vf_forms.NAMES if n.islower()}  # the operand-dependent forms
    lines = ["#pragma once", "#include <cstdint>",
             "template <typename T> struct RegTensor {};", "struct MaskReg {};",
             "struct UnalignReg {};", "struct AddrReg {};",
             "struct VfValue { template <typename T> operator T() const { return T{}; } };"]
    lines += [f"template <typename... A> inline VfValue {n}(A&&...) {{ return {{}}; }}"
              for n in sorted(names)]
    lines += [f"constexpr int {c} = 0;" for c in sorted(vf_constants())]
    return "\n".join(lines) + "\n"


SIMT_BUILTINS = """#pragma once
#include <cstdint>
struct pypto_check_dim3 { uint32_t x = 0, y = 0, z = 0; };
inline thread_local pypto_check_dim3 threadIdx, blockIdx, blockDim, gridDim;
constexpr int warpSize = 32;
"""


def compile_flags(pto: Path, macro: str, stubs: Path) -> list[str]:
    return ["-std=c++20", "-D__CPU_SIM", f"-D{macro}", "-Wno-ignored-attributes",
            f"-I{pto / 'include'}", f"-I{STUBS}", "-include", str(STUBS / "bisheng_builtins.h"),
            "-include", str(stubs / "vf_builtins.h"), "-include", str(stubs / "simt_builtins.h")]


# ---------------------------------------------------------------- compile check


@dataclass
class Section:
    example: str
    kernel: str
    target: str
    errors: list[tuple[int, str, str]] = field(default_factory=list)  # (line, message, code)
    status: str = "clean"  # clean | bisheng-only | fail

    @property
    def name(self) -> str:
        return f"{self.example}.{self.kernel} [{self.target}]"


def _errors(stderr: str, kernel_cpp: Path) -> list[tuple[int, str, str]]:
    code = kernel_cpp.read_text().splitlines()
    out = []
    for raw in stderr.splitlines():
        m = _DIAG.match(raw)
        if m is None:
            continue
        line = int(m["line"]) if Path(m["file"]).name == kernel_cpp.name else 0
        text = code[line - 1].split("  // ")[0].strip() if 0 < line <= len(code) else m["file"]
        out.append((line, m["msg"], text))
    return out


def check_section(cxx: str, pto: Path, stubs: Path, build: Path, sec: Section) -> None:
    macro = dict(SECTIONS)[sec.target]
    kernel_cpp = build / "kernel.cpp"
    cmd = [cxx, "-fsyntax-only", "-ferror-limit=0" if "clang" in cxx else "-fmax-errors=0",
           *compile_flags(pto, macro, stubs), f"-I{build}", str(kernel_cpp)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode == 0:
        return
    sec.errors = _errors(done.stderr, kernel_cpp) or [(0, done.stderr.strip()[:300], "")]
    if all(any(t in code for t in BISHENG_ONLY) for _, _, code in sec.errors):
        again = subprocess.run(cmd[:-1] + ["-include", str(STUBS / "bisheng_only.h"),
                                           str(kernel_cpp)], capture_output=True, text=True)
        if again.returncode == 0:
            sec.status = "bisheng-only"
            return
        sec.errors += _errors(again.stderr, kernel_cpp)
    sec.status = "fail"


def artifacts_of(kernel):
    kdef = getattr(kernel, "kernel_def", kernel)
    return generate(compile_kernel(kdef, Specialization(arch="a5")))


def write_files(art, build: Path) -> None:
    build.mkdir(parents=True, exist_ok=True)
    for name, text in art.files().items():
        (build / name).write_text(text)


# ---------------------------------------------------------------- runs on the CPU simulator


class CpuSimBackend:
    """Launches on pto-isa's CPU simulator: the generated call_kernel.cpp built with
    real_isa/harness.h, arguments passed as files (GM buffers) and argv (block dim, scalars)."""

    name = BACKEND

    def __init__(self, cxx: str, pto: Path, stubs: Path, work: Path) -> None:
        self.cxx, self.pto, self.stubs, self.work = cxx, pto, stubs, work

    def _build(self, art) -> tuple[Path, list[str]]:
        params = [p.strip() for p in _ENTRY.search(art.call_kernel_cpp)[1].split(",")][2:]
        files = dict(art.files())
        load_lines, args = [], []
        for i, decl in enumerate(params):
            ctype = decl.rsplit(" ", 1)[0].strip()
            if ctype.endswith("*"):
                load_lines.append(f'    auto b{i} = pypto_check::load("arg{i}.bin");')
                args.append(f"b{i}.data()")
            elif ctype in ("float", "double"):
                args.append(f"static_cast<{ctype}>(std::strtod(argv[{i + 2}], nullptr))")
            else:
                args.append(f"static_cast<{ctype}>(std::strtoll(argv[{i + 2}], nullptr, 0))")
        saves = [f'    pypto_check::save("arg{i}.bin", b{i});'
                 for i, d in enumerate(params) if d.rsplit(" ", 1)[0].strip().endswith("*")]
        files["main.cpp"] = "\n".join([
            "#include <cstdlib>", '#include "harness.h"', '#include "call_kernel.cpp"',
            "int main(int argc, char** argv)", "{", "    (void)argc;", *load_lines,
            "    const uint32_t block_dim = static_cast<uint32_t>(std::atoi(argv[1]));",
            f"    call_kernel({', '.join(['block_dim', 'nullptr', *args])});", *saves,
            "    return 0;", "}", ""])
        digest = hashlib.sha256(repr(sorted(files.items())).encode()).hexdigest()[:16]
        build = self.work / f"run_{art.kernel_name}_{digest}"
        exe = build / "kernel_cpusim"
        if not exe.exists():
            write_files(art, build)
            (build / "main.cpp").write_text(files["main.cpp"])
            cmd = [self.cxx, "-O1", *compile_flags(self.pto, "__DAV_CUBE__", self.stubs),
                   "-D__DAV_VEC__", f"-DPYPTO_CHECK_KERNEL_TYPE={KERNEL_TYPES[art.kernel_type]}",
                   f"-I{build}", str(build / "main.cpp"), "-o", str(exe), "-pthread"]
            done = subprocess.run(cmd, capture_output=True, text=True)
            if done.returncode != 0:
                raise RuntimeError(f"building {art.kernel_name} for the CPU simulator failed:\n"
                                   + done.stderr[:3000])
        return exe, params

    def launch(self, request):
        art = generate(request.compiled)
        exe, params = self._build(art)
        values = list(request.args) + list(request.dyn_dims)
        argv, tensors = [str(request.block_dim)], {}
        run_dir = exe.parent
        for i, decl in enumerate(params):
            ctype = decl.rsplit(" ", 1)[0].strip()
            value = values[i]
            if ctype.endswith("*"):
                if isinstance(value, torch.Tensor):
                    if not value.is_contiguous():
                        raise ValueError(f"argument {i}: the check runs contiguous tensors only")
                    tensors[i] = value
                    data = value.view(-1).view(torch.uint8).numpy().tobytes()
                else:
                    data = request.tiling_bytes or b""
                (run_dir / f"arg{i}.bin").write_bytes(data)
                argv.append("0")
            elif ctype in ("float", "double"):
                argv.append(float(value).hex())
            else:
                argv.append(str(int(value)))
        start = time.perf_counter()
        done = subprocess.run([str(exe), *argv], cwd=run_dir, capture_output=True, text=True,
                              timeout=600)
        if done.returncode != 0:
            raise RuntimeError(f"{art.kernel_name} on the CPU simulator exited with "
                               f"{done.returncode}:\n{done.stderr[-2000:]}")
        for i, t in tensors.items():
            raw = bytearray((run_dir / f"arg{i}.bin").read_bytes())
            t.view(-1).view(torch.uint8).copy_(torch.frombuffer(raw, dtype=torch.uint8))
        printed = {0: done.stdout} if done.stdout else {}
        return LaunchResult(self.name, time.perf_counter() - start, printed=printed)


def on_chip_hand_offs(kernel) -> list[str]:
    """The moves of `kernel` between a cube's and a vector core's buffers ("op at line N")."""
    kdef = getattr(kernel, "kernel_def", kernel)
    found = []
    for program in compile_kernel(kdef, Specialization(arch="a5")).programs.values():
        for node in walk(program):
            if not isinstance(node, Call) or node.op not in ("block.move", "block.insert"):
                continue
            dst, src = (getattr(a.type, "memory", None) for a in node.args[:2])
            if (src, dst) in ((MemorySpace.Acc, MemorySpace.Vec), (MemorySpace.Vec,
                                                                   MemorySpace.Mat)):
                where = f"{node.op} {src.value} -> {dst.value} at line {node.span.line}"
                if where not in found:
                    found.append(where)
    return found


def run_case(module, kernel_name: str, shape: dict) -> tuple[bool, str]:
    args = module.make_inputs(**shape)
    expected = module.reference(*args)
    with use_backend(BACKEND):
        got = module.run(*args, kernel=module.KERNELS[kernel_name])
    pairs = list(zip(got, expected)) if isinstance(got, tuple) else [(got, expected)]
    worst, ok = 0.0, True
    for g, e in pairs:
        g, e = g.float(), e.float().to(g.device)
        worst = max(worst, float((g - e).abs().max()) if g.numel() else 0.0)
        ok = ok and torch.allclose(g, e, rtol=module.RTOL, atol=module.ATOL)
    return ok, f"max |err| {worst:.3g} (rtol {module.RTOL}, atol {module.ATOL})"


# ---------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cxx", default=os.environ.get("CXX"), help="the C++ compiler")
    ap.add_argument("--only", help="an example (or example.kernel) to check")
    ap.add_argument("--no-run", action="store_true", help="compile only")
    ap.add_argument("--errors", type=int, default=3, help="errors shown per failing section")
    ap.add_argument("--keep", help="keep the generated files in this directory")
    opts = ap.parse_args(argv)
    root = os.environ.get("PTO_ISA_ROOT")
    if not root or not (Path(root) / "include" / "pto" / "pto-inst.hpp").is_file():
        sys.exit("set PTO_ISA_ROOT to a pto-isa checkout (with include/pto/pto-inst.hpp)")
    pto = Path(root).resolve()
    cxx = pick_compiler(opts.cxx)
    work = Path(opts.keep or tempfile.mkdtemp(prefix="check_real_isa_")).resolve()
    work.mkdir(parents=True, exist_ok=True)
    (work / "vf_builtins.h").write_text(vf_builtins())
    (work / "simt_builtins.h").write_text(SIMT_BUILTINS)
    print(f"pto-isa: {pto}\ncompiler: {cxx}\n")

    sections: list[Section] = []
    for example in ALL_EXAMPLES:
        module = load(example)
        for kname, kernel in module.KERNELS.items():
            if opts.only and opts.only not in (example, f"{example}.{kname}"):
                continue
            build = work / f"{example}.{kname}"
            write_files(artifacts_of(kernel), build)
            for target, _ in SECTIONS:
                sec = Section(example, kname, target)
                check_section(cxx, pto, work, build, sec)
                sections.append(sec)
                only = sorted({t for _, _, code in sec.errors for t in BISHENG_ONLY if t in code})
                note = f"  ({', '.join(only)}: {len(sec.errors)} errors)" \
                    if sec.status == "bisheng-only" else ""
                print(f"{sec.status.upper():13s} {sec.name}{note}")
                for line, msg, code in sec.errors[:opts.errors if sec.status == "fail" else 0]:
                    print(f"    kernel.cpp:{line}: {msg}\n        {code}")
    clean = sum(s.status == "clean" for s in sections)
    only = sum(s.status == "bisheng-only" for s in sections)
    print(f"\ncompile: {clean} clean + {only} bisheng-only = {clean + only} / {len(sections)}")

    if opts.no_run:
        return 0 if clean + only == len(sections) else 1
    register_backend(BACKEND, lambda: CpuSimBackend(cxx, pto, work, work))
    runnable = {(s.example, s.kernel) for s in sections} - {
        (s.example, s.kernel) for s in sections if s.status != "clean"}
    passed = total = skipped = 0
    print()
    for example, kname, shape in SMALL_CASES:
        if (example, kname) not in runnable:
            continue
        moves = on_chip_hand_offs(load(example).KERNELS[kname])
        if moves:
            skipped += 1
            print(f"NOT RUN {example}.{kname} {shape}: cores hand data over on chip "
                  f"({'; '.join(moves)}), which pto-isa's CPU simulator does not model")
            continue
        total += 1
        try:
            ok, detail = run_case(load(example), kname, shape)
        except Exception as e:  # a failed build or run is reported, and the next case runs
            ok, detail = False, f"{type(e).__name__}: {str(e)[:1500]}"
        passed += ok
        print(f"{'MATCH' if ok else 'DIFFER':7s} {example}.{kname} {shape}: {detail}")
    note = f" ({skipped} not runnable there)" if skipped else ""
    print(f"\nrun on pto-isa's CPU simulator: {passed} / {total} match torch{note}")
    return 0 if clean + only == len(sections) and passed == total else 1


if __name__ == "__main__":
    sys.exit(main())
