"""`ErrorCode`: the parser's error numbers (0xF00000 | the external error), and the code of
an exception class."""
from __future__ import annotations

from enum import IntEnum

from ....errors import ExternalError, PyptoError


def _code(error: ExternalError) -> int:
    return 0xF00000 | int(error)


class ErrorCode(IntEnum):
    INVALID_TYPE = _code(ExternalError.INVALID_TYPE)
    INVALID_VAL = _code(ExternalError.INVALID_VAL)
    NAME_ERROR = _code(ExternalError.NAME_ERROR)
    NOT_IMPLEMENTED_ERROR = _code(ExternalError.NOT_IMPLEMENTED_ERROR)
    INVALID_OPERATION = _code(ExternalError.INVALID_OPERATION)
    UNKNOWN = _code(ExternalError.COMMON)


def get_error_code(exception_type: type) -> ErrorCode | None:
    """The code of a PyPTO exception class (None for other classes or unlisted codes)."""
    if not (isinstance(exception_type, type) and issubclass(exception_type, PyptoError)):
        return None
    try:
        return ErrorCode(_code(exception_type.kind))
    except ValueError:
        return None
