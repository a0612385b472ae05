"""`import pypto_pro.language as pl` — the PyPTO Pro kernel language (spec §2.1).

This module is the one re-export list: every public name is listed in `__all__`. Declarations
(ops) raise `DSLDeclarationError` when called outside a kernel; the parser dispatches on them.
Names a kernel launched from the on-disk cache rarely needs (`jit` itself, the IR text front end,
the attribute enums, `FunctionType` and the `vf` namespace, which need the IR nodes and the op
table) are built on first use, so `import pypto_pro.language` stays cheap (`dir()` lists them
all the same).
"""
from __future__ import annotations

# `from ..ir import attrs` would ask the lazy `pypto_pro.ir` package first, which loads every
# IR module: import the submodule itself
from ..ir.attrs import NAMES as _ATTR_NAMES
from ..ir.dtype import PUBLIC_DTYPES as _PUBLIC_DTYPES
from ..ir.dtype import DataType
from ..ir.types import MemorySpace, PipeType, TilePad
from . import pipeline
from .decl import Declaration, Namespace, declare
from .markers import inline, simt_function, vector_function
from .types import (
    DN, DYNAMIC, ND, NN, NZ, STATIC, ZN, ZZ, Input, MemRef, Output, Ptr, Scalar, Tensor,
    TensorLayout, Tile, TileType,
)

# ---------------------------------------------------------------- dtypes
for _d in _PUBLIC_DTYPES:
    globals()[f"DT_{_d.value}"] = _d

# ---------------------------------------------------------------- op declarations (spec §2.1)
_RESOURCES = "make_tile make_tile_group make_tensor make_ptr addptr struct make_tuple struct_array"
_MOVEMENT = "load load_tile store store_tile move insert ssbuf_load ssbuf_store init_output"
_COMPUTE = (
    "add sub mul div maximum minimum and_ shl shr xor expands neg abs exp log sqrt rsqrt recip "
    "relu fillpad cast add_relu_cast sub_relu_cast mul_cast eq ne lt le gt ge select add_relu "
    "sub_relu addc mul_add_dst fused_mul_add fused_mul_add_relu axpy partadd partmax partmin "
    "partmul matmul matmul_acc matmul_mx matmul_mx_acc transpose sum argmax argmin expand_max "
    "expand_min expand_mul expand_sub expand_div gather gatherb gathermask scatter mrgsort "
    "mrgsort2 sort32 histogram quant dequant")
_META = ("getval setval set_validshape set_stride fill_index set_mask_count set_mask_norm "
         "set_vec_mask reset_mask reinterpret")
_DEBUG = "printf pto_assert dump_data trap"
_SCALAR = "min max const astype"
_CONTROL = "range section_vector section_cube constexpr"
_SYSVARS = ("get_block_idx get_block_num get_subblock_idx get_subblock_num get_spr "
            "set_ctrl_spr get_ctrl_spr reset_ctrl_spr set_saturation_flag get_saturation_flag")

_DECLS = declare(" ".join((_RESOURCES, _MOVEMENT, _COMPUTE, _META, _DEBUG, _SCALAR, _CONTROL,
                           _SYSVARS)))
globals().update(_DECLS)

_SYSTEM_OPS = ("bar_all bar_m bar_fix bar_mte1 bar_mte2 bar_mte3 bar_v sync_src sync_dst "
               "set_cross_core wait_cross_core sync_all mutex_lock mutex_unlock dcci "
               "set_mm_layout_transform")
system = Namespace("pl.system", "system.", _SYSTEM_OPS)
mutex = Namespace("pl.mutex", "system.", "mutex_lock mutex_unlock")

_SIMT_CTX = "launch thread_idx block_dim block_idx grid_dim linear_thread_idx warp_size"
_SIMT_MATH = ("cast abs min max sqrt rsqrt exp exp2 log log2 log1p sin cos tanh rint round "
              "floor ceil trunc fma isnan isinf")
_SIMT_ATOMICS = ("atomic_add atomic_sub atomic_exch atomic_max atomic_min atomic_inc atomic_dec "
                 "atomic_cas atomic_and atomic_or atomic_xor")
simt = Namespace("pl.simt", "simt.", " ".join((_SIMT_CTX, _SIMT_MATH, _SIMT_ATOMICS)),
                 function=simt_function)


#: names defined elsewhere, imported on first use: jit / kernel live in the runtime (which
#: imports this module); the IR text front end pulls in the IR reader and printer
_LAZY = {"jit": "pypto_pro.runtime.jit", "kernel": "pypto_pro.runtime.jit",
         "KernelDef": "pypto_pro.runtime.jit", "FunctionType": "pypto_pro.ir.nodes",
         **dict.fromkeys(_ATTR_NAMES, "pypto_pro.ir.attrs"),
         **dict.fromkeys(("function", "loads", "loads_program", "parse", "parse_program",
                          "program"), "pypto_pro.language.ir_text")}


def _vf() -> Namespace:
    """The Reg API namespace (`pl.vf`, also `pl.Vf`): one declaration per op of the table."""
    from ..ir.ops import VF_NAMES

    return Namespace("vf", "vf.", " ".join(VF_NAMES))


def _declarations() -> dict[int, Declaration]:
    """Every declaration object the parser can meet, by identity."""
    return {id(d): d
            for ns in (_DECLS, vars(system), vars(simt), vars(_lazy("Vf")), vars(mutex))
            for d in ns.values() if isinstance(d, Declaration)}


#: names built on first use, each once (the same object ever after)
_BUILT = {"Vf": _vf, "vf": lambda: _lazy("Vf"), "DECLARATIONS": _declarations}


def _lazy(name: str):
    """A lazily built name: built now unless an earlier access already did."""
    return globals()[name] if name in globals() else __getattr__(name)


def __getattr__(name: str):
    import importlib

    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
    elif name in _BUILT:
        value = _BUILT[name]()
    elif name == "parser":  # the AST parser package, imported on first use
        return importlib.import_module(f"{__name__}.parser")
    else:
        raise AttributeError(f"module 'pypto_pro.language' has no attribute {name!r}")
    return globals().setdefault(name, value)  # two racing threads still get one object


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY, *_BUILT, "parser"})


__all__ = [
    "jit", "kernel", "KernelDef", "pipeline", "vector_function", "inline", "Tensor", "Tile",
    "Ptr", "Scalar", "DYNAMIC", "STATIC", "TileType", "FunctionType", "MemRef", "MemorySpace",
    "TilePad", "PipeType", "TensorLayout", "ND", "DN", "NZ", "ZN", "NN", "ZZ", "DataType",
    "Input", "Output", "system", "simt", "mutex", "Vf", "vf", "function", "program", "parse",
    "loads", "parse_program", "loads_program", "parser"]
__all__ += [f"DT_{d.value}" for d in _PUBLIC_DTYPES] + list(_ATTR_NAMES) + list(_DECLS)
__all__.sort()
