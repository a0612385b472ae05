"""The PyPTO Pro IR: dtypes, types, nodes, the op registry, the printer and the verifier."""
from __future__ import annotations

from . import ops
from .dtype import DataType
from .nodes import *  # noqa: F401,F403  (the node set is the IR's public surface)
from .span import Span
from .types import (
    CoreType, MemorySpace, PipeType, SectionKind, TileGroupType, TileLayout, TilePad, TileType,
    TensorType, ScalarType, PtrType, StructType, TupleType, NoneType,
)
