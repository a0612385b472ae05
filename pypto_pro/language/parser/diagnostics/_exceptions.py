"""The parser's exception classes (those of `pypto_pro.errors`)."""
from __future__ import annotations

from ....errors import (
    FinalRejectionError, InvalidOperationError, ParserError, ParserSyntaxError, ParserTypeError,
    ScopeIsolationError, SSAViolationError, UndefinedVariableError, UnsupportedFeatureError,
)

__all__ = [
    "ParserError", "ParserSyntaxError", "ParserTypeError", "FinalRejectionError",
    "UndefinedVariableError", "SSAViolationError", "UnsupportedFeatureError",
    "InvalidOperationError", "ScopeIsolationError",
]
