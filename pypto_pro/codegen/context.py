"""State shared by the emitters of one function: the target, names, writer and GM tensor views.

`FnCtx` is built per generated C++ function (a target's kernel impl or a SIMT function). It
holds the `CodeWriter`, the `FunctionScopes` (names, hoisted Vars), the GM tensor views
(`TensorView`: base pointer, GlobalTensor instances, stride array), the tile-type aliases in
use and the flags the kernel as a whole needs (print support, FFTS address, a5 custom sync
header). Imports only the IR and the codegen helpers.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..ir.dtype import DataType
from ..ir.nodes import Function, Var
from ..ir.types import TileLayout, TileType
from .gm_views import GtInstance
from .scopes import FunctionScopes
from .types import tile_alias, tile_key
from .writer import CodeWriter


@dataclass
class TensorView:
    """How a GM tensor Var is reached in C++."""

    ptr: str  # the `__gm__ T*` base pointer expression
    stride: str  # name of the int64_t stride array (elements, one per axis)
    shape: tuple[str, ...]  # C++ expressions of the dims
    dtype: DataType
    layout: TileLayout  # the tensor type's layout
    instances: dict[TileLayout, GtInstance]  # its GlobalTensor instances per access layout

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def gt(self) -> str:
        """The first GlobalTensor instance (the one a tensor-valued expression names)."""
        return next(iter(self.instances.values())).gt


@dataclass
class KernelFlags:
    """Facts about the whole kernel that the header, the launcher and the build need."""

    uses_print: bool = False
    needs_ffts: bool = False  # a2/a3 cross-core sync: an FFTS base address argument
    a5_custom_sync: bool = False  # a5 INTER_* cross-core sync: TSyncCVID.hpp
    simt: bool = False
    # `pl.struct` / TilingData classes copied through the SSBUF: their fields are `volatile`
    # (the other core writes them behind the compiler's back), as the real codegen declares
    ssbuf_structs: set[str] = field(default_factory=set)


@dataclass
class FnCtx:
    """Everything the statement, expression and op emitters of one function share."""

    fn: Function
    target: str  # "cube" | "vector"
    arch: str
    kernel_type: str  # "aiv" | "aic" | "mix"
    scopes: FunctionScopes
    writer: CodeWriter
    flags: KernelFlags
    tensors: dict[Var, TensorView] = field(default_factory=dict)
    tile_aliases: dict[tuple, tuple[str, TileType]] = field(default_factory=dict)
    simt: bool = False  # a SIMT function body: tiles are raw UB pointers
    simt_functions: dict[str, Function] = field(default_factory=dict)
    hoisted_storage: dict[int, str] = field(default_factory=dict)  # id(declaration) → obj
    gm_accesses: dict = field(default_factory=dict)  # `gm_views.plan` of the function

    def name(self, var: Var) -> str:
        return self.scopes.names.name(var)

    def fresh(self, base: str, suffixes: tuple[str, ...] = ()) -> str:
        return self.scopes.names.fresh(base, suffixes)

    def alias(self, t: TileType) -> str:
        """The alias of a tile type, registering it on first use."""
        key = tile_key(t)
        got = self.tile_aliases.get(key)
        if got is None:
            got = self.tile_aliases[key] = (tile_alias(t), t)
        return got[0]
