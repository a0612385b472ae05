"""tools/check_real_isa.py's stand-ins for the bisheng builtins: every Reg API intrinsic the code
generator writes into an example's kernel must be declared there, else the checker reports the
missing declaration as a failure of the kernel (a VF kernel's only errors must be bisheng's
`__VEC_SCOPE__`)."""
from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

from pypto_pro import examples

TOOL = Path(__file__).resolve().parents[2] / "tools" / "check_real_isa.py"
_CALL = re.compile(r"\b([a-z_][a-z0-9_]*)\(")


def _tool():
    spec = importlib.util.spec_from_file_location("check_real_isa", TOOL)
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(spec.name, module)  # its dataclasses look their module up
    spec.loader.exec_module(sys.modules[spec.name])
    return sys.modules[spec.name]


def _vf_bodies(cpp: str) -> str:
    """The text of every `__VEC_SCOPE__ { ... }` block."""
    out, at = [], cpp.find("__VEC_SCOPE__")
    while at >= 0:
        start = cpp.index("{", at)
        depth, i = 0, start
        while True:
            depth += {"{": 1, "}": -1}.get(cpp[i], 0)
            i += 1
            if depth == 0:
                break
        out.append(cpp[start:i])
        at = cpp.find("__VEC_SCOPE__", i)
    return "\n".join(out)


@pytest.mark.parametrize("name, kernel", [("vf_softmax", "vf_softmax_kernel"),
                                          ("vf_layernorm", "vf_layernorm_kernel")])
def test_every_emitted_vf_intrinsic_has_a_stand_in(name, kernel):
    tool = _tool()
    declared = set(re.findall(r"inline VfValue (\w+)\(", tool.vf_builtins()))
    cpp = tool.artifacts_of(getattr(examples.load(name), kernel)).kernel_cpp
    called = {n for n in _CALL.findall(_vf_bodies(cpp))
              if n.startswith(("v", "p")) and n not in ("void",)}
    assert called, "the example's VF body calls no intrinsic"
    assert called <= declared, sorted(called - declared)
