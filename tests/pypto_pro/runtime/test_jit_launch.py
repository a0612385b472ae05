"""Launch forms (spec §1.3), their errors, specialisation keys and the compile memo (§1.4)."""
from __future__ import annotations

import pytest
import torch

import pypto_pro.language as pl
from pypto_pro.errors import InvalidArgument
from pypto_pro.runtime import TilingKeyField
from pypto_pro.runtime.kernel_def import Specialization


@pl.jit
def add(x: pl.Tensor[[pl.DYNAMIC, 8], pl.DT_FP32], out: pl.Tensor[[pl.DYNAMIC, 8], pl.DT_FP32]):
    pass


@pl.jit
def stat(x: pl.Tensor[[pl.STATIC, 4], pl.DT_FP32]):
    pass


class OpKey:
    OP_MODE = TilingKeyField(bits=2, values=[0, 1, 2])
    OP_FLAG = TilingKeyField(bits=1, values=[0, 1])

    def is_valid(self, key):
        op_mode, op_flag = key
        return not (op_mode == 2 and op_flag == 1)


@pl.jit(tiling_key=OpKey)
def keyed(x: pl.Tensor[[8], pl.DT_FP32]):
    pass


@pl.jit(datatype={"x": "io_dtype", "out": "io_dtype"})
def typed(x: pl.Tensor[[8], pl.DT_FP32], out: pl.Tensor[[8], pl.DT_FP32]):
    pass


@pl.jit(tiling_key=OpKey, datatype={"x": "io_dtype"})
def both(x: pl.Tensor[[8], pl.DT_FP32]):
    pass


@pytest.fixture(autouse=True)
def _fresh_compile_memo():
    for k in (add, stat, keyed, typed, both):
        k.compiled_variants.clear()


def _x(n: int = 4) -> torch.Tensor:
    return torch.zeros(n, 8)


def test_direct_call_is_one_block_on_the_current_stream(launch_env):
    x, out = _x(), _x()
    assert add(x, out) is None
    (req,) = launch_env.backend.requests
    assert req.block_dim == 1 and req.stream is None
    assert req.args[0] is x and req.args[1] is out
    assert req.dyn_dims == (4, 4)
    assert req.compiled == ("compiled", "add", Specialization(arch="a5"))
    assert add.last_result.backend == "fake"


@pytest.mark.parametrize("key, stream, block_dim", [
    (3, None, 3),
    (("s0", 5), "s0", 5),
    ((None, 2), None, 2),
])
def test_bracket_forms_set_stream_and_block_dim(launch_env, key, stream, block_dim):
    add[key](_x(), out=_x())
    (req,) = launch_env.backend.requests
    assert (req.stream, req.block_dim) == (stream, block_dim)


@pytest.mark.parametrize("bad", [0, -1, True, 2.0, "4", None])
def test_block_dim_must_be_a_positive_int(launch_env, bad):
    with pytest.raises(InvalidArgument, match="block_dim must be a positive integer"):
        add[None, bad]
    assert launch_env.backend.requests == []


@pytest.mark.parametrize("key, given", [((None,), 1), ((None, 1, {}), 3),
                                        ((None, 1, {}, {}, {}), 5)])
def test_wrong_bracket_arity(launch_env, key, given):
    with pytest.raises(InvalidArgument, match=r"Expected kernel\[stream, block_dim\] .*"
                                              f"got {given} item"):
        add[key]


def test_tiling_key_launch_packs_the_key_into_the_spec(launch_env):
    keyed[None, 4, {"OP_MODE": 1, "OP_FLAG": 1}](torch.zeros(8))
    (req,) = launch_env.backend.requests
    spec = req.compiled[2]
    assert spec.tiling_key == (("OP_MODE", 1), ("OP_FLAG", 1))
    assert spec.constants() == {"OP_MODE": 1, "OP_FLAG": 1}
    assert keyed.tiling_schema.pack({"OP_MODE": 1, "OP_FLAG": 1}) == 0b101


def test_tiling_key_kernel_refuses_direct_call_and_short_brackets(launch_env):
    with pytest.raises(InvalidArgument,
                       match="cannot be called directly; use bracket-launch syntax"):
        keyed(torch.zeros(8))
    for key in ((None, 4), 4, (None, 4, {"OP_MODE": 0, "OP_FLAG": 0}, {})):
        with pytest.raises(InvalidArgument,
                           match=r"Expected kernel\[stream, block_dim, tilingkey\]"):
            keyed[key]
    assert launch_env.backend.requests == []


def test_tiling_key_values_checked_at_the_brackets(launch_env):
    with pytest.raises(InvalidArgument, match="value 3 is not a candidate"):
        keyed[None, 1, {"OP_MODE": 3, "OP_FLAG": 0}]
    with pytest.raises(InvalidArgument, match="rejected by OpKey.is_valid"):
        keyed[None, 1, {"OP_MODE": 2, "OP_FLAG": 1}]
    with pytest.raises(InvalidArgument, match="must be a dict"):
        keyed[None, 1, 5]


def test_datatype_only_kernel_takes_the_dict_as_third_item(launch_env):
    x = torch.zeros(8, dtype=torch.float16)
    typed[None, 2, {"x": pl.DT_FP16, "out": pl.DT_FP16}](x, x.clone())
    (req,) = launch_env.backend.requests
    assert req.compiled[2].datatype == (("io_dtype", pl.DT_FP16),)
    with pytest.raises(ValueError, match="cannot be called directly"):
        typed(x, x)
    with pytest.raises(ValueError, match=r"Expected kernel\[stream, block_dim, datatype\]"):
        typed[None, 2]


def test_datatype_dict_errors(launch_env):
    x16 = torch.zeros(8, dtype=torch.float16)
    with pytest.raises(ValueError, match=r"missing: \['out'\]"):
        typed[None, 1, {"x": pl.DT_FP16}]
    with pytest.raises(ValueError, match="sharing 'io_dtype' disagree"):
        typed[None, 1, {"x": pl.DT_FP16, "out": pl.DT_FP32}]
    with pytest.raises(TypeError, match="must be a pl.DT_\\* dtype"):
        typed[None, 1, {"x": torch.float16, "out": pl.DT_FP16}]
    with pytest.raises(TypeError, match="dtype mismatch — expected torch.float32"):
        typed[None, 1, {"x": pl.DT_FP32, "out": pl.DT_FP32}](x16, x16)


def test_both_specialisations_need_four_items(launch_env):
    with pytest.raises(ValueError,
                       match=r"Expected kernel\[stream, block_dim, tilingkey, datatype\]"):
        both[None, 1, {"OP_MODE": 0, "OP_FLAG": 0}]
    both[None, 1, {"OP_MODE": 0, "OP_FLAG": 0}, {"x": pl.DT_INT32}](
        torch.zeros(8, dtype=torch.int32))
    spec = launch_env.backend.requests[0].compiled[2]
    assert spec.tiling_key == (("OP_MODE", 0), ("OP_FLAG", 0))
    assert spec.datatype == (("io_dtype", pl.DT_INT32),)


def test_same_spec_compiles_once_dynamic_dims_do_not_specialise(launch_env):
    add(_x(4), _x(4))
    add[None, 8](_x(16), _x(16))
    assert len(launch_env.compiler.calls) == 1
    assert [r.dyn_dims for r in launch_env.backend.requests] == [(4, 4), (16, 16)]
    assert list(add.compiled_variants) == [Specialization(arch="a5")]


def test_new_static_value_compiles_again(launch_env):
    stat(torch.zeros(2, 4))
    stat(torch.zeros(2, 4))
    stat(torch.zeros(3, 4))
    specs = [spec for _, spec in launch_env.compiler.calls]
    assert [s.static_dims for s in specs] == [((0, 0, 2),), ((0, 0, 3),)]
    assert set(stat.compiled_variants) == set(specs)


def test_arch_from_env_is_part_of_the_spec(launch_env, monkeypatch):
    monkeypatch.setenv("PYPTOPRO_JIT_ARCH", "dav-c220")
    add(_x(), _x())
    assert launch_env.compiler.calls[0][1].arch == "a3"


def test_printed_output_is_echoed_in_block_order(launch_env, capsys):
    launch_env.backend.printed = {1: "from block 1\n", 0: "from block 0\n"}
    add[None, 2](_x(), _x())
    assert capsys.readouterr().out == "from block 0\nfrom block 1\n"
    assert add.last_result.printed == {1: "from block 1\n", 0: "from block 0\n"}


def test_argument_errors_happen_before_compiling(launch_env):
    with pytest.raises(TypeError, match="arg\\[1\\] 'out': dtype mismatch"):
        add(_x(), torch.zeros(4, 8, dtype=torch.int32))
    assert launch_env.compiler.calls == [] and launch_env.backend.requests == []
