"""The `pl` surface (spec §2.1–§2.4): every exported name, the 22 dtypes, enum members, DSL
declarations refusing to run outside a kernel, and `pl.TileType` validation."""
from __future__ import annotations

import dataclasses
import importlib

import pytest

import pypto_pro.language as pl
from pypto_pro.errors import (
    DSLDeclarationError, InvalidShape, InvalidType, NotSupported, PyptoError,
)
from pypto_pro.language.decl import Declaration

# spec §2.1, group by group (the snapshot __all__ has 193 names: these 171 + 22 dtypes)
DECORATORS = ("jit kernel KernelDef pipeline vector_function function program inline parse "
              "loads parse_program loads_program parser")
TYPES = ("Tensor Tile Ptr Scalar DYNAMIC STATIC TileType FunctionType MemRef MemorySpace "
         "TilePad PipeType TensorLayout ND DN NZ ZN NN ZZ")
OP_ENUMS = ("ReluPreMode AtomicType STPhase AccPhase AccToVecMode RoundMode QuantMode "
            "CrossCoreSyncMode SyncCoreType SyncAllMode CacheLine DcciDst FillPadMode")
VF_ENUMS = ("MaskPattern MergeMode ReduceMode CompareMode DuplicatePos CastLayout VFRoundMode "
            "SaturateMode BinType HistType SqueezeMode PackPart MaskWidth LoadDist StoreDist "
            "DataCopyMode MemBarMode IndexOrder")
NAMESPACES = "system simt mutex Vf"
RESOURCES = "make_tile make_tile_group make_tensor make_ptr addptr struct make_tuple struct_array"
MOVEMENT = "load load_tile store store_tile move insert ssbuf_load ssbuf_store"
COMPUTE = (
    "add sub mul div maximum minimum and_ shl shr xor expands neg abs exp log sqrt rsqrt recip "
    "relu fillpad cast add_relu_cast sub_relu_cast mul_cast eq ne lt le gt ge select add_relu "
    "sub_relu addc mul_add_dst fused_mul_add fused_mul_add_relu axpy partadd partmax partmin "
    "partmul matmul matmul_acc matmul_mx matmul_mx_acc transpose sum argmax argmin expand_max "
    "expand_min expand_mul expand_sub expand_div gather gatherb gathermask scatter mrgsort "
    "mrgsort2 sort32 histogram quant dequant")
META = ("getval setval set_validshape set_stride fill_index set_mask_count set_mask_norm "
        "set_vec_mask reset_mask")
DEBUG = "printf pto_assert dump_data trap"
SCALAR = "min max const"
CONTROL = "range section_vector section_cube"
SYSVARS = "get_block_idx get_block_num get_subblock_idx get_subblock_num"
GROUPS = {"decorators": DECORATORS, "types": TYPES, "op_enums": OP_ENUMS, "vf_enums": VF_ENUMS,
          "namespaces": NAMESPACES, "resources": RESOURCES, "movement": MOVEMENT,
          "compute": COMPUTE, "meta": META, "debug": DEBUG, "scalar": SCALAR,
          "control": CONTROL, "sysvars": SYSVARS}
ALL_NAMES = [n for g in GROUPS.values() for n in g.split()]

DTYPES = ("BOOL INT4 INT8 INT16 INT32 INT64 UINT4 UINT8 UINT16 UINT32 UINT64 FP16 FP32 BF16 FP4 "
          "FP8E4M3FN FP8E5M2 FP8E8M0 FP4E2M1 FP4E1M2 HF4 HF8").split()
BITS = {"BOOL": 8, "INT4": 4, "INT8": 8, "INT16": 16, "INT32": 32, "INT64": 64, "UINT4": 4,
        "UINT8": 8, "UINT16": 16, "UINT32": 32, "UINT64": 64, "FP16": 16, "FP32": 32, "BF16": 16,
        "FP4": 4, "FP8E4M3FN": 8, "FP8E5M2": 8, "FP8E8M0": 8, "FP4E2M1": 4, "FP4E1M2": 4,
        "HF4": 4, "HF8": 8}

ENUM_MEMBERS = {
    "ReluPreMode": "NormalRelu",
    "AtomicType": "AtomicNone AtomicAdd",
    "STPhase": "Unspecified Partial Final",
    "AccPhase": "Unspecified Partial Final",
    "AccToVecMode": "SingleModeVec0 SingleModeVec1 DualModeSplitM DualModeSplitN",
    "RoundMode": "CAST_NONE CAST_RINT CAST_ROUND CAST_FLOOR CAST_CEIL CAST_TRUNC CAST_ODD",
    "QuantMode": "SYM ASYM",
    "CrossCoreSyncMode": "INTER_BLOCK INTER_SUBBLOCK INTRA_BLOCK UNICAST_BLOCK",
    "SyncCoreType": "AIV_ONLY AIC_ONLY MIX",
    "SyncAllMode": "HARD SOFT",
    "CacheLine": "SINGLE_CACHE_LINE ENTIRE_DATA_CACHE",
    "DcciDst": "AUTO CACHELINE_OUT CACHELINE_UB CACHELINE_ALL CACHELINE_ATOMIC",
    "FillPadMode": "NORMAL EXPAND INPLACE",
    "MaskPattern": "ALL ALLF VL1 VL2 VL3 VL4 VL8 VL16 VL32 VL64 VL128 M3 M4 H Q",
    "MergeMode": "ZEROING MERGING",
    "ReduceMode": "SUM MAX MIN",
    "CompareMode": "EQ NE LT GT LE GE",
    "DuplicatePos": "LOWEST HIGHEST",
    "CastLayout": "ZERO ONE TWO THREE",
    "VFRoundMode": "CAST_ROUND CAST_RINT CAST_FLOOR CAST_CEIL CAST_TRUNC CAST_ODD CAST_HYBRID",
    "SaturateMode": "OFF ON",
    "BinType": "BIN0 BIN1",
    "HistType": "ACCUMULATE FREQUENCY",
    "SqueezeMode": "STORE_REG NO_STORE_REG",
    "PackPart": "LOWER UPPER",
    "MaskWidth": "B32 B16",
    "LoadDist": "NORM BRC BRC_B8 BRC_B16 BRC_B32 US US_B8 US_B16 DS DS_B8 DS_B16 UNPK UNPK_B8 "
                "UNPK_B16 UNPK_B32 UNPK4 BLK E2B E2B_B16 E2B_B32 DINTLV_B8 DINTLV_B16 "
                "DINTLV_B32",
    "StoreDist": "NORM NORM_B16 FIRST_ELEMENT PACK PACK4 INTLV INTLV_B32",
    "DataCopyMode": "NORM DATA_BLOCK_LOAD DATA_BLOCK_COPY",
    "MemBarMode": "VST_VLD VLD_VST VST_VST VST_LD VST_ST VLD_ST ST_VLD ST_VST LD_VST VV_ALL "
                  "VS_ALL SV_ALL",
    "IndexOrder": "INCREASE_ORDER DECREASE_ORDER",
    "MemorySpace": "DDR Vec Mat Left Right Scaling Acc Bias ScaleLeft ScaleRight",
    "PipeType": "MTE1 MTE2 MTE3 M V S FIX ALL",
    "TilePad": "null zero max min",
    "FunctionType": "OPAQUE ORCHESTRATION IN_CORE HELPER SIMT_VF SIMT_CALLEE",
}

SYSTEM_OPS = ("bar_all bar_m bar_fix bar_mte1 bar_mte2 bar_mte3 sync_src sync_dst set_cross_core "
              "wait_cross_core sync_all mutex_lock mutex_unlock dcci set_mm_layout_transform")
SIMT_OPS = "function launch thread_idx block_dim block_idx grid_dim linear_thread_idx warp_size"


# ---------------------------------------------------------------- names


def test_the_spec_lists_193_names():
    assert len(ALL_NAMES) + len(DTYPES) == 193
    assert len(set(ALL_NAMES)) == len(ALL_NAMES)


@pytest.mark.parametrize("name", ALL_NAMES)
def test_name_is_exported(name):
    assert hasattr(pl, name), f"pl.{name} is missing"
    assert name in pl.__all__
    module = importlib.import_module("pypto_pro.language")
    assert getattr(module, name) is getattr(pl, name)


def test_star_import_matches_all():
    ns: dict = {}
    exec("from pypto_pro.language import *", ns)
    missing = [n for n in pl.__all__ if n not in ns]
    assert not missing
    assert pl.__all__ == sorted(set(pl.__all__)), "__all__ sorted without duplicates"


def test_constexpr_is_parser_only_and_declared():
    assert isinstance(pl.constexpr, Declaration)


def test_runtime_objects_resolve():
    assert pl.jit is not None and pl.kernel is not None
    assert pl.KernelDef.__name__ == "KernelDef"
    assert pl.parser.__name__ == "pypto_pro.language.parser"
    assert hasattr(pl.parser, "parse_target")
    assert pl.pipeline.PipelineConfig(preload=2).preload == 2
    assert callable(pl.pipeline.stage) and callable(pl.pipeline.transform_pipeline)
    assert pl.vf is pl.Vf


def _printed_program():
    from pypto_pro.examples import load
    from pypto_pro.ir.printer import python_print
    from pypto_pro.runtime.kernel_def import Specialization

    kdef = load("vector_add").add_kernel.kernel_def
    return pl.parser.parse_target(kdef, Specialization(arch="a5"), "vector").program, python_print


def test_loads_and_parse_read_printed_ir_back():
    program, python_print = _printed_program()
    text = python_print(program)
    for read in (pl.loads, pl.parse, pl.loads_program, pl.parse_program):
        assert python_print(read(text)) == text
    fn_text = python_print(program.functions[0])
    assert type(pl.loads(fn_text)).__name__ == "Function"
    with pytest.raises(InvalidType):
        pl.loads_program(fn_text)
    with pytest.raises(InvalidType):
        pl.loads(42)
    with pytest.raises(PyptoError) as info:
        pl.loads("def broken(:\n")
    assert info.value.code_str == "F00002"


@pl.function
def _ir_add1(x: pl.Tensor[[32, 32], pl.FP32]):
    t: pl.Tile[[32, 32], pl.FP32, pl.MemRef(pl.MemorySpace.Vec, 0x0, 4096)] = pl.call @block.make_tile([32, 32], memref_addr=0x0, memref_size=4096)  # noqa: E501, F821
    pl.eval(pl.call @block.adds(t, t, 1.0))  # noqa: F821


def test_function_decorator_reads_ir_written_in_python():
    from pypto_pro.ir.printer import python_print

    text = python_print(_ir_add1, prefix="pl")
    assert type(_ir_add1).__name__ == "Function" and _ir_add1.name == "_ir_add1"
    assert "pl.eval(pl.call @block.adds(t, t, 1.0))" in text


def test_program_decorator_needs_python_source():
    with pytest.raises(NotSupported) as info:
        pl.program(object)  # a builtin class: no source to read the IR program from
    assert info.value.code_str == "F00005"


def test_inline_is_deprecated_and_returns_the_function():
    def f():
        return 1

    with pytest.warns(DeprecationWarning):
        assert pl.inline(f) is f


def test_unknown_attribute():
    with pytest.raises(AttributeError):
        pl.not_a_name  # noqa: B018


@pytest.mark.parametrize("name", SYSTEM_OPS.split())
def test_system_namespace(name):
    assert isinstance(getattr(pl.system, name), Declaration)
    assert getattr(pl.system, name).op == f"system.{name}"


@pytest.mark.parametrize("name", SIMT_OPS.split())
def test_simt_namespace(name):
    assert callable(getattr(pl.simt, name))


def test_mutex_namespace_and_vf():
    assert pl.mutex.mutex_lock.op == "system.mutex_lock"
    assert pl.mutex.mutex_unlock.op == "system.mutex_unlock"
    from pypto_pro.ir.ops import VF_NAMES

    assert len(VF_NAMES) == 80
    for n in VF_NAMES:
        assert getattr(pl.Vf, n).op == f"vf.{n}"


# ---------------------------------------------------------------- dtypes and enums


def test_exactly_the_22_dtypes():
    exported = sorted(n[3:] for n in dir(pl) if n.startswith("DT_"))
    assert exported == sorted(DTYPES)
    assert not hasattr(pl, "DT_INDEX"), "INDEX is internal"


@pytest.mark.parametrize("name", DTYPES)
def test_dtype(name):
    dt = getattr(pl, f"DT_{name}")
    assert isinstance(dt, pl.DataType) and dt.value == name
    assert dt.bits == BITS[name]
    assert dt.itemsize == max(1, BITS[name] // 8)
    assert repr(dt) == f"pl.DT_{name}"


def test_dtype_kinds_and_torch_mapping():
    import torch

    assert pl.DT_FP16.torch_dtype is torch.float16 and pl.DT_BF16.torch_dtype is torch.bfloat16
    assert pl.DT_HF8.torch_dtype is torch.uint8 and pl.DT_FP8E4M3FN.torch_dtype is None
    assert pl.DT_FP32.is_float and pl.DT_INT8.is_int and pl.DT_UINT8.is_int
    assert pl.DT_FP16.ctype == "half" and pl.DT_BF16.ctype == "bfloat16_t"


@pytest.mark.parametrize("enum_name", sorted(ENUM_MEMBERS))
def test_enum_members(enum_name):
    members = {m.name for m in getattr(pl, enum_name)}
    assert set(ENUM_MEMBERS[enum_name].split()) <= members


def test_cross_core_sync_mode_values():
    m = pl.CrossCoreSyncMode
    assert (m.INTER_BLOCK, m.INTER_SUBBLOCK, m.INTRA_BLOCK, m.UNICAST_BLOCK) == (0, 1, 2, 3)


def test_layouts():
    assert (pl.ND, pl.DN, pl.NZ, pl.ZN, pl.NN, pl.ZZ) == tuple(
        getattr(pl.TensorLayout, n) for n in ("ND", "DN", "NZ", "ZN", "NN", "ZZ"))


# ---------------------------------------------------------------- declarations outside kernels


def _declarations():
    seen = {}
    for ns in (vars(pl), vars(pl.system), vars(pl.simt), vars(pl.Vf), vars(pl.mutex)):
        for d in ns.values():
            if isinstance(d, Declaration):
                seen[d.qualname] = d
    return [seen[k] for k in sorted(seen)]


@pytest.mark.parametrize("decl", _declarations(), ids=lambda d: d.qualname)
def test_declaration_raises_outside_a_kernel(decl):
    with pytest.raises(DSLDeclarationError) as info:
        decl(1, 2, key=3)
    assert isinstance(info.value, RuntimeError) and info.value.code_str == "F00007"
    assert decl.qualname in info.value.message


def test_every_compute_op_is_a_declaration():
    for n in (COMPUTE + " " + RESOURCES + " " + MOVEMENT + " " + META).split():
        assert isinstance(getattr(pl, n), Declaration), n


# ---------------------------------------------------------------- annotations


def test_tensor_annotation():
    spec = pl.Tensor[[pl.DYNAMIC, 128], pl.DT_FP16]
    assert spec.dims == (pl.DYNAMIC, 128) and spec.dtype is pl.DT_FP16 and spec.layout is pl.ND
    assert pl.Tensor[[4, ...], pl.DT_FP32].has_ellipsis
    assert pl.Tensor[[4, 4], pl.DT_FP32, pl.NZ].layout is pl.NZ
    for bad in ([0, 4], [4, True], [..., 4]):
        with pytest.raises(PyptoError):
            pl.Tensor[[*bad], pl.DT_FP32]
    with pytest.raises(InvalidType):
        pl.Tensor[[4], "fp16"]
    assert pl.Ptr[pl.DT_FP32].dtype is pl.DT_FP32
    assert pl.Tile[[1, 256], pl.DT_FP32].shape == (1, 256)
    assert pl.Scalar[pl.DT_INT32] is pl.DT_INT32


# ---------------------------------------------------------------- TileType


def test_tile_type_defaults():
    t = pl.TileType([128, 128], pl.DT_FP16)
    assert t.shape == (128, 128) and t.target_memory is pl.MemorySpace.Vec
    assert t.valid_shape is None and t.layout is None and t.nbytes == 32 * 1024
    assert pl.TileType([64], pl.DT_FP32).shape == (1, 64), "1-D means one row"
    assert pl.TileType((16, 8), pl.DT_FP32).shape == (16, 8)


def test_tile_type_is_frozen_and_comparable():
    t = pl.TileType([16, 16], pl.DT_FP32)
    with pytest.raises(dataclasses.FrozenInstanceError):
        t.shape = (1, 1)
    assert t == pl.TileType([16, 16], pl.DT_FP32)
    assert t != pl.TileType([16, 16], pl.DT_FP16)


def test_tile_type_valid_shape_and_pad():
    t = pl.TileType([16, 512], pl.DT_FP32, valid_shape=[-1, -1])
    assert t.valid_shape == (-1, -1)
    assert pl.TileType([16, 512], pl.DT_FP32, valid_shape=[8, 100]).valid_shape == (8, 100)
    assert pl.TileType([16, 16], pl.DT_FP32, pad=1).pad is pl.TilePad.zero
    assert pl.TileType([16, 16], pl.DT_FP32, pad=pl.TilePad.max).pad is pl.TilePad.max
    assert pl.TileType([16, 1], pl.DT_FP32, layout=pl.DN).layout is pl.DN
    nbytes = pl.TileType([16, 16], pl.DT_INT4).nbytes
    assert nbytes == 256, "4-bit types count as one byte per element"


@pytest.mark.parametrize("kwargs,error", [
    (dict(shape=[2, 2, 2], dtype=pl.DT_FP32), InvalidShape),
    (dict(shape=[], dtype=pl.DT_FP32), InvalidShape),
    (dict(shape=[0, 16], dtype=pl.DT_FP32), InvalidShape),
    (dict(shape=[16, -1], dtype=pl.DT_FP32), InvalidShape),
    (dict(shape=[16, 2.0], dtype=pl.DT_FP32), InvalidShape),
    (dict(shape=[True, 16], dtype=pl.DT_FP32), InvalidShape),
    (dict(shape=[16, 16], dtype="fp32"), InvalidType),
    (dict(shape=[16, 16], dtype=pl.DT_FP32, target_memory="Vec"), InvalidType),
    (dict(shape=[16, 16], dtype=pl.DT_FP32, valid_shape=[17, 16]), InvalidShape),
    (dict(shape=[16, 16], dtype=pl.DT_FP32, valid_shape=[0, 16]), InvalidShape),
    (dict(shape=[16, 16], dtype=pl.DT_FP32, valid_shape=[-2, 16]), InvalidShape),
], ids=["3d", "empty", "zero", "negative", "float", "bool", "dtype", "memory", "valid_over",
        "valid_zero", "valid_negative"])
def test_tile_type_rejects(kwargs, error):
    with pytest.raises(error) as info:
        pl.TileType(**kwargs)
    assert isinstance(info.value, (ValueError, TypeError)), "also a builtin error class"
