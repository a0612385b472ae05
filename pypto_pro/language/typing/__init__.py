"""`pypto_pro.language.typing`: the annotation types under the real PyPTO Pro's module path
(the same objects as `pl.Tensor`, `pl.Tile`, ...)."""
from __future__ import annotations

from ..types import DYNAMIC, STATIC, Ptr, Scalar, Tensor, Tile

__all__ = ["DYNAMIC", "STATIC", "Ptr", "Scalar", "Tensor", "Tile"]
