"""`pypto_pro.language.parser.diagnostics`: the parser's error classes and their codes, under
the module path the real PyPTO Pro exposes them at (they are the classes of
`pypto_pro.errors`, so `except` clauses written against either path catch the same errors)."""
from __future__ import annotations

from ._error_codes import ErrorCode, get_error_code
from ._exceptions import (
    FinalRejectionError, InvalidOperationError, ParserError, ParserSyntaxError, ParserTypeError,
    ScopeIsolationError, SSAViolationError, UndefinedVariableError, UnsupportedFeatureError,
)

__all__ = [
    "ParserError", "ParserSyntaxError", "ParserTypeError", "FinalRejectionError",
    "UndefinedVariableError", "SSAViolationError", "UnsupportedFeatureError",
    "InvalidOperationError", "ScopeIsolationError", "ErrorCode", "get_error_code",
]
