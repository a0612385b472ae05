"""DSL declarations: the objects behind `pl.add`, `pl.system.sync_src`, `vf.add`, ...

A declaration does nothing when called from Python (it raises `DSLDeclarationError`); inside a
kernel the parser recognises it by identity and dispatches on its `op` name. Namespaces group
declarations (`pl.system`, `pl.simt`, `pl.mutex`, `vf`).
"""
from __future__ import annotations

from typing import Any

from ..errors import DSLDeclarationError


class Declaration:
    """A DSL function: `qualname` is what users write, `op` what the parser dispatches on."""

    def __init__(self, op: str, qualname: str, doc: str = "") -> None:
        self.op = op
        self.qualname = qualname
        self.__doc__ = doc or f"PyPTO Pro DSL op `{qualname}` (usable only inside a kernel)."

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise DSLDeclarationError(self.qualname)

    def __repr__(self) -> str:
        return f"<DSL declaration {self.qualname}>"


class Namespace:
    """A group of declarations reachable as attributes (`pl.system.sync_src`)."""

    def __init__(self, name: str, prefix: str, names: str, **extra: Any) -> None:
        self._name = name
        self._prefix = prefix
        for n in names.split():
            setattr(self, n, Declaration(f"{prefix}{n}", f"{name}.{n}"))
        for k, v in extra.items():
            setattr(self, k, v)

    def __repr__(self) -> str:
        return f"<PyPTO Pro namespace {self._name}>"


def declare(names: str, prefix: str = "", qual: str = "pl") -> dict[str, Declaration]:
    return {n: Declaration(f"{prefix}{n}", f"{qual}.{n}") for n in names.split()}
