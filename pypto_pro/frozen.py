"""`Frozen`: the base of the small immutable value classes a new process creates on its way to a
launch (annotations, options, the launch request and result, cache entries...).

`@dataclass(frozen=True)` compiles its generated methods when the class is created: about 1 ms
per class here, and a warm launch in a new process used to create twenty of them. A `Frozen`
subclass names its fields in `__slots__` (in order), writes its own `__init__` (storing with
`_init`), and gets what the frozen dataclass generated: field-wise `==` and hash (same class
only), `Name(field=value, ...)` repr, assignment and deletion refused with
`dataclasses.FrozenInstanceError`, pickling and copying (through `__init__`'s positional order),
`dataclasses.replace`-like `replace(**changes)`, and `vars(obj)` (a fresh field → value dict).
"""
from __future__ import annotations

from dataclasses import FrozenInstanceError
from operator import attrgetter
from typing import Any

_set = object.__setattr__


class Frozen:
    __slots__ = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # the field tuple behind ==, hash and repr: one C call (a launch hashes its request)
        get = attrgetter(*cls.__slots__)
        cls._values = (lambda self: (get(self),)) if len(cls.__slots__) == 1 \
            else (lambda self: get(self))  # type: ignore[method-assign]

    def _init(self, **values: Any) -> None:
        """Store the fields (for `__init__`; normal assignment is refused)."""
        for name, value in values.items():
            _set(self, name, value)

    def _values(self) -> tuple[Any, ...]:
        return ()  # no fields here; each subclass gets its own from __init_subclass__

    @property
    def __dict__(self) -> dict[str, Any]:  # type: ignore[override]  # vars(obj), as on a dataclass
        return dict(zip(self.__slots__, self._values()))

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            return self._values() == other._values()  # type: ignore[attr-defined]
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"{type(self).__qualname__}({fields})"

    def __setattr__(self, name: str, value: Any) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), self._values()

    def replace(self, **changes: Any) -> Any:
        """A copy with `changes` applied (through `__init__`, so its checks run again)."""
        values = vars(self)
        unknown = set(changes) - set(values)
        if unknown:
            raise TypeError(f"{type(self).__qualname__} has no field(s) {sorted(unknown)}")
        values.update(changes)
        return type(self)(**values)

