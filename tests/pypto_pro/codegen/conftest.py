"""Fixtures for the codegen tests: compile a kernel to Artifacts, and g++ checks of the
generated kernel.cpp.

`cxx_check` compiles each target section on its own (-D__DAV_CUBE__ / -D__DAV_VEC__, as bisheng
compiles them) against `pypto_pro/include`, whose declarations mirror pto-isa's (names,
template parameters, the static checks that reject bad forms): a form the real toolchain
refuses fails here too. `mock_check` is a syntax-only check against a catch-all stand-in
(`mock_include/pto/pto-inst.hpp` plus a header generated here from `pypto_pro.codegen.surface`)
for hand-built programs whose operands are not meant to be type-correct (one tile type for
every op).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
import shutil
import subprocess
from pathlib import Path

import pytest

from pypto_pro.codegen import generate
from pypto_pro.codegen.surface import SURFACE, all_identifiers
from pypto_pro.codegen.vf import vf_constants
from pypto_pro.compiler import compile_kernel
from pypto_pro.runtime.kernel_def import Specialization

MOCK = Path(__file__).parent / "mock_include"
INCLUDE_DIR = Path(__file__).resolve().parents[3] / "pypto_pro" / "include"
#: defined by hand in mock_include/pto/pto-inst.hpp
_HAND = {"TASSIGN", "TPRINT", "TSTORE", "TSTORE_FP", "TMOV", "TMOV_FP", "TEXTRACT", "TINSERT",
         "RegTensor", "MaskReg", "event_t",
         "threadIdx", "blockDim", "blockIdx", "gridDim", "warpSize", "cce", "printf",
         "async_invoke", "dim3"}
_INT_GETTERS = {"get_block_idx", "get_block_num", "get_subblockid", "get_subblockdim",
                "get_ar", "get_ctrl_spr", "get_saturation_flag", "getFFTSMsg"}
_NOT_DECLARED = set(SURFACE["pto_types"]) | set(SURFACE["pto_members"]) | set(
    SURFACE["pto_enums"]) | set(SURFACE["cce_qualifiers"])


def surface_header() -> str:
    """Catch-all declarations for every surface name not written by hand."""
    lines = ["#pragma once", "#include <pto/pto-inst.hpp>"]
    names = (set(all_identifiers()) | vf_constants()) - _HAND - _NOT_DECLARED
    for name in sorted(names):
        if re.fullmatch(r"EVENT_ID\d+|PIPE_[A-Z0-9]+|[A-Z][A-Z0-9_]*", name) and \
                not name.startswith(("T", "SSBUF", "SYNCALL")) or name in vf_constants():
            lines.append(f"constexpr int {name} = 0;")
        elif name in _INT_GETTERS:
            lines.append(f"template <typename... A> inline int64_t {name}(A&&...) "
                         "{ return 0; }")
        else:
            lines.append(f"template <auto... P, typename... A> inline AnyValue {name}(A&&...) "
                         "{ return AnyValue(); }")
            lines.append(f"template <typename T0, typename... A> inline AnyValue {name}(A&&...) "
                         "{ return AnyValue(); }")
    return "\n".join(lines) + "\n"


def compile_artifacts(kernel, spec: Specialization | None = None):
    kdef = getattr(kernel, "kernel_def", kernel)
    compiled = compile_kernel(kdef, spec or Specialization(arch="a5"))
    return compiled, generate(compiled)


@pytest.fixture
def gen():
    """`gen(kernel, spec=None) -> Artifacts` for a @pl.jit kernel (or a KernelDef)."""
    return lambda kernel, spec=None: compile_artifacts(kernel, spec)[1]


@pytest.fixture(scope="session")
def mock_headers(tmp_path_factory):
    """(g++ path, the stand-in include directory, the generated surface header)."""
    compiler = shutil.which("g++")
    if compiler is None:
        pytest.skip("g++ is not installed")
    header = tmp_path_factory.mktemp("mock") / "pto_surface.h"
    header.write_text(surface_header())
    return compiler, MOCK, header


def _check_sections(artifacts, tmp_path, flags: list[str]) -> None:
    for name, text in artifacts.files().items():
        (tmp_path / name).write_text(text)
    for macro in ("__DAV_CUBE__", "__DAV_VEC__"):
        done = subprocess.run(
            [shutil.which("g++"), "-std=c++17", "-fsyntax-only", "-Wall", "-Wno-unused",
             "-Wno-unused-variable", "-Werror=parentheses", f"-D{macro}", *flags,
             f"-I{tmp_path}", str(tmp_path / "kernel.cpp")], capture_output=True, text=True)
        assert done.returncode == 0, f"{macro}:\n{done.stderr[:4000]}"


@pytest.fixture
def cxx_check(tmp_path):
    """`cxx_check(artifacts)`: g++ -fsyntax-only of each target section against the headers
    that mirror pto-isa's declarations."""
    if shutil.which("g++") is None:
        pytest.skip("g++ is not installed")
    return lambda artifacts: _check_sections(artifacts, tmp_path, [f"-I{INCLUDE_DIR}"])


@pytest.fixture
def mock_check(tmp_path, mock_headers):
    """`mock_check(artifacts)`: g++ -fsyntax-only of each target section against the catch-all
    stand-in (C++ syntax, declarations and scopes only)."""
    _, mock, surface = mock_headers
    return lambda artifacts: _check_sections(artifacts, tmp_path,
                                             [f"-I{mock}", "-include", str(surface)])


@dataclass
class FakeCompiled:
    """The parts of a CompiledKernel that `generate` reads, for hand-built IR programs."""

    programs: dict
    spec: Specialization
    kernel_type: str
    name: str = "k"
    kernel_def: object = None


def fake_compiled(programs: dict, arch: str = "a5", kernel_type: str | None = None):
    if kernel_type is None:
        kernel_type = "mix" if len(programs) == 2 else (
            "aic" if "cube" in programs else "aiv")
    name = next(iter(programs.values())).name
    return FakeCompiled(programs, Specialization(arch=arch), kernel_type, name)


def impl_body(cpp: str, target: str = "vector") -> list[str]:
    """The lines of `<K>_impl_<target>`'s body (without its braces)."""
    lines = cpp.splitlines()
    start = next(i for i, line in enumerate(lines)
                 if f"_impl_{target}(" in line and line.startswith("__aicore__"))
    end = next(i for i in range(start + 2, len(lines)) if lines[i] == "}")
    return lines[start + 2:end]


def code(line: str) -> str:
    """A generated line without indentation and its trailing source comment."""
    return line.split("  // ")[0].strip()


@pytest.fixture
def cg():
    """Helpers: `compile` (kernel → (compiled, artifacts)), `fake_compiled`, `impl_body`,
    `code`."""
    import types

    return types.SimpleNamespace(compile=compile_artifacts, fake_compiled=fake_compiled,
                                 impl_body=impl_body, code=code)
