"""A new process's start (issue 4: warm launch ≤ 50 ms): `import pypto_pro.language` and the jit
layer build nothing only the compiler needs (no IR nodes, op table, value-type dataclasses or
attribute enums until used, and no dataclass at all); the `Frozen` value classes
behave like the frozen dataclasses they replace; decoration finds a kernel's source from its
bytecode's lines the same way `inspect` does; the compiled launcher is built once per cache,
answers a bad request with an error and stays up, and calls any kernel signature through
`pypto_native_call_packed`.
Crashes inside the launcher are covered by `test_native_faults.py`, the launch from the disk
cache in a new process by `test_native_cache.py`."""
from __future__ import annotations

import copy
import dataclasses
import inspect
import json
import os
import pickle
import struct
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from pypto_pro.errors import InvalidArgument
from pypto_pro.runtime import jit as jit_mod
from pypto_pro.runtime.backends import LaunchRequest, LaunchResult, native
from pypto_pro.runtime.cache import KernelCache, fingerprint

SLIM = textwrap.dedent('''
    import json, sys
    import pypto_pro.language as pl
    from pypto_pro.runtime.jit import JitKernel
    import pypto_pro.ir as ir
    from pypto_pro.ir import attrs
    import pypto_pro.ir.types as types
    probed = hasattr(ir, "__wrapped__")  # a probe must not load every IR module
    loaded = {m: m in sys.modules for m in ("pypto_pro.ir.nodes", "pypto_pro.ir.ops",
                                             "pypto_pro.compiler", "pypto_pro.codegen")}
    dataclasses = sorted(f"{m.__name__}.{c.__name__}" for m in list(sys.modules.values())
                         if getattr(m, "__name__", "").startswith("pypto_pro")
                         for c in vars(m).values()
                         if isinstance(c, type) and "__dataclass_fields__" in vars(c)
                         and c.__module__ == m.__name__)
    made = {"value types": "TileType" in vars(types),
            "attribute enums": any(n in vars(attrs) for n in attrs.NAMES)}
    lazy = {"vf": "vf" in vars(pl), "FunctionType": "FunctionType" in vars(pl)}
    missing = [n for n in pl.__all__ if n not in dir(pl)]
    same = pl.vf is pl.Vf and pl.RoundMode is attrs.RoundMode and pl.FunctionType.__name__
    print(json.dumps({**loaded, **made, **lazy, "probed": probed, "missing": missing,
                      "same": bool(same), "dataclasses": dataclasses}))
''')


def test_the_language_import_builds_nothing_only_the_compiler_needs():
    out = subprocess.run([sys.executable, "-c", SLIM], capture_output=True, text=True,
                         check=True, timeout=300)
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report.pop("missing") == [] and report.pop("same") is True
    # each dataclass costs about 1 ms to create in a new process: the value classes on the way
    # to a launch are `Frozen`
    assert report.pop("dataclasses") == []
    assert not any(report.values()), report


# ---------------------------------------------------------------- kernel source lines


def _decorated(f):
    return f


def plain(x):
    return x + 1


@_decorated
def decorated_with_multiline_signature(a,
                                       b):
    y = (a +
         b
    )
    return y
    # a trailing comment inside the body


def _outer():
    def nested(v):
        def inner():
            return v
        return inner

    class Holder:
        def method(self):
            return [i for i in range(3)
                    ]

    return nested, Holder.method


def dead_code_after_return(z):
    return z
    z += 1  # never runs (the compiler drops it)


@pytest.mark.parametrize("fn", [plain, decorated_with_multiline_signature, *_outer(),
                                dead_code_after_return], ids=lambda f: f.__qualname__)
def test_kernel_source_lines_match_inspect(fn):
    assert jit_mod._definition_lines(fn) == tuple(inspect.getsourcelines(fn))


def test_kernel_tree_keeps_the_file_lines_and_columns():
    node, file, source = jit_mod._function_tree(_outer()[1])
    assert file == __file__ and source.startswith("def method(self):")
    assert (node.lineno, node.col_offset) == (_outer()[1].__code__.co_firstlineno, 8)


# ---------------------------------------------------------------- the launcher


def test_launcher_is_built_once_per_cache(tmp_path, monkeypatch):
    builds = []
    real = native._run_cxx
    monkeypatch.setattr(native, "_run_cxx", lambda *a: builds.append(a[2]) or real(*a))
    cache = KernelCache(tmp_path)
    first = native.launcher_executable(cache)
    again = native.launcher_executable(KernelCache(tmp_path))
    assert first == again and builds == [native.LAUNCHER]
    assert os.access(first, os.X_OK)


def test_launcher_answers_a_bad_request_and_stays_up(tmp_path):
    worker = native.Worker(KernelCache(tmp_path))
    try:
        arena, _ = worker.arena_for(1 << 16)
        soc = ((0,) * len(native._SPACES), 1, 2)
        tail = struct.pack("<II", 0, 0) + struct.pack("<II", 1, 0)  # no guards, regions, args
        for _ in range(2):  # the same process answers both
            answer = worker.call(worker.message_head(tmp_path / "missing.so", arena, soc) + tail,
                                 60.0)
            assert answer["ok"] is False and "dlopen" in answer["error"]
        assert worker.proc.poll() is None
        assert Path(worker.proc.args[0]).name == native.LAUNCHER
    finally:
        worker.close()


def test_packed_entry_converts_each_argument():
    entry = "\n".join(native._packed_entry(
        ["uint8_t* x", "float eps", "double d", "bool flag", "int32_t n"]))
    assert "pypto_native_call_packed(uint32_t blockDim, const uint64_t* w)" in entry
    assert ("call_kernel(blockDim, nullptr, reinterpret_cast<uint8_t*>(w[0]), "
            "static_cast<float>(pypto_native_word_double(w[1])), "
            "static_cast<double>(pypto_native_word_double(w[2])), "
            "static_cast<bool>(static_cast<int64_t>(w[3])), "
            "static_cast<int32_t>(static_cast<int64_t>(w[4])));") in entry
    assert native._word(-3, "int32_t") == struct.pack("<BQ", 2, (1 << 64) - 3)
    assert native._word(True, "bool") == struct.pack("<BQ", 2, 1)
    assert native._word(0.5, "float") == struct.pack("<Bd", 3, 0.5)


# ---------------------------------------------------------------- Frozen value classes


@dataclasses.dataclass(frozen=True)
class _AsDataclass:  # what `MemRef` was: the `Frozen` version must behave the same
    memory_space: Any
    addr: int = 0
    size: int | None = None


def test_frozen_value_classes_behave_like_the_frozen_dataclasses_they_replace():
    import pypto_pro.language as pl
    from pypto_pro.language.types import MemRef

    ref, twin = MemRef(pl.MemorySpace.Vec, 64), _AsDataclass(pl.MemorySpace.Vec, 64)
    assert repr(ref) == repr(twin).replace("_AsDataclass", "MemRef")
    assert vars(ref) == dataclasses.asdict(twin)
    assert ref == MemRef(pl.MemorySpace.Vec, 64, None) and hash(ref) == hash(twin)
    assert ref != MemRef(pl.MemorySpace.Vec, 128) and ref != twin
    with pytest.raises(dataclasses.FrozenInstanceError):
        ref.addr = 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        del ref.addr
    assert pickle.loads(pickle.dumps(ref)) == ref and copy.deepcopy(ref) == ref
    assert ref.replace(addr=128) == MemRef(pl.MemorySpace.Vec, 128)
    with pytest.raises(TypeError, match="no field"):
        ref.replace(address=1)
    # checks in __init__ run again on replace, as `__post_init__` did
    with pytest.raises(InvalidArgument, match="preload"):
        pl.pipeline.PipelineConfig().replace(preload=-1)
    tile = pl.TileType([16], pl.DT_FP16, valid_shape=[8])
    assert (tile.shape, tile.valid_shape) == ((1, 16), (1, 8))
    # the cache key describes them as it described the dataclasses
    assert fingerprint(ref) == {"dataclass": "MemRef", **fingerprint(vars(ref))}


def test_launch_result_defaults_are_not_shared():
    first, second = LaunchResult("sim", 0.0), LaunchResult("sim", 0.0)
    first.printed[0] = "x"
    assert second.printed == {} and LaunchRequest(None, 1, None, ()).dyn_dims == ()
