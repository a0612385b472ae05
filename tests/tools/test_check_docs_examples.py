"""tools/check_docs_examples.py: a docs block runs behind what earlier blocks of its page
define; fragments are skipped with their reason; torch_npu's casts map to the CPU."""
from __future__ import annotations

import importlib.util
import subprocess
import sys
import textwrap
from pathlib import Path

import torch

from pypto_pro.sim.ops.numerics import decode_hif8

_PATH = Path(__file__).resolve().parents[2] / "tools" / "check_docs_examples.py"
_spec = importlib.util.spec_from_file_location("check_docs_examples", _PATH)
checker = sys.modules[_spec.name] = importlib.util.module_from_spec(_spec)  # for @dataclass
_spec.loader.exec_module(checker)

KERNEL = textwrap.dedent("""\
    @pl.jit(auto_mutex=True)
    def k(a: pl.Tensor[[TILE, 64], pl.DT_FP32]):
        with pl.section_vector():
            pass
    """)


def test_a_block_gets_the_definitions_it_uses_from_earlier_blocks_transitively():
    earlier = ["import pypto_pro.language as pl\nimport os\n",
               "BASE = 8\nTILE = BASE * 2\nUNUSED = 3\nprint('not a definition')\n"]
    prelude, skip = checker.page_context(earlier, KERNEL)
    assert skip == ""
    assert prelude == "import pypto_pro.language as pl\nBASE = 8\nTILE = BASE * 2\n"


def test_pl_defaults_to_the_docs_import_and_fragments_are_skipped_with_a_reason():
    prelude, skip = checker.page_context(["TILE = 16\n"], KERNEL)
    assert prelude.startswith("import pypto_pro.language as pl\n") and skip == ""
    assert "TILE" in checker.page_context([], KERNEL)[1]  # defined by no block of the page
    assert "not valid Python" in checker.page_context([], "@pl.jit()\ndef k(...):\n    ...\n")[1]
    body = "import pypto_pro.language as pl\nvidx = pl.get_block_idx()\n" + KERNEL
    assert "pl.get_block_idx" in checker.page_context(["TILE = 1\n"], body)[1]


def test_the_prologue_maps_npu_dtype_cast_to_the_cpu():
    code = checker.PROLOGUE + textwrap.dedent("""\
        import torch_npu
        x = torch.tensor([1.0, -2.0, 0.5, 3.0])
        print(torch_npu.npu_dtype_cast(x, torch_npu.hifloat8).tolist())
        print(torch_npu.npu_dtype_cast(x, torch.float16).dtype)
        """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.splitlines()
    codes = torch.tensor(eval(out[0]), dtype=torch.uint8)  # noqa: S307 - our own output
    assert torch.equal(decode_hif8(codes), torch.tensor([1.0, -2.0, 0.5, 3.0]))
    assert out[1] == "torch.float16"
