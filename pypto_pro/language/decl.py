"""DSL declarations: the objects behind `pl.add`, `pl.system.sync_src`, `vf.add`, ...

A declaration does nothing when called from Python (it raises `DSLDeclarationError`); inside a
kernel the parser recognises it by identity and dispatches on its `op` name. Namespaces group
declarations (`pl.system`, `pl.simt`, `pl.mutex`, `vf`). Each declaration documents itself from
the op registry (`pypto_pro.ir.ops`, read on first use): `inspect.signature(pl.add)` is
the real declaration's `(out, lhs, rhs)` (`signatures.py`; for an op it does not declare, one
from the registry's operand roles) and `pl.add?` says which operands are read and written, the
pipe the op runs on and its IR op.
"""
from __future__ import annotations

import inspect
from typing import Any

from ..errors import DSLDeclarationError

_P = inspect.Parameter


class Declaration:
    """A DSL function: `qualname` is what users write, `op` what the parser dispatches on."""

    def __init__(self, op: str, qualname: str, doc: str = "") -> None:
        self.op = op
        self.qualname = qualname
        self._doc = doc

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise DSLDeclarationError(self.qualname)

    @property
    def __doc__(self) -> str:  # type: ignore[override]
        return self._doc or _op_doc(self)

    @property
    def __signature__(self) -> inspect.Signature:
        from .signatures import signature

        return signature(self.op) or _op_signature(_spec(self.op))

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


def _spec(op: str) -> Any:
    """The registry entry of a declaration's op (tile ops are registered as `block.<op>`)."""
    from ..ir import ops

    return next((s for s in (ops.get(op), ops.get(f"block.{op}"), ops.get(f"debug.{op}"))
                 if s is not None), None)


def _names(spec: Any) -> list[tuple[str, str]]:
    """(name, role) of each positional operand: written, read, read and written, or a value
    (offsets, scalars, ...: no role in the registry)."""
    reads, writes = set(spec.reads), set(spec.writes)
    count = spec.max_args if spec.max_args is not None else max(
        spec.min_args, max((*reads, *writes), default=-1) + 1)
    roles = ["read and written" if i in reads and i in writes else "written" if i in writes
             else "read" if i in reads else "value" for i in range(count)]
    base = {"written": "dst", "read": "src", "read and written": "acc", "value": "arg"}
    out = []
    for i, role in enumerate(roles):
        same = [j for j, r in enumerate(roles) if r == role]
        name = base[role] if len(same) == 1 else f"{base[role]}{same.index(i)}"
        out.append((name, role))
    return out


def _op_signature(spec: Any) -> inspect.Signature:
    if spec is None:
        return inspect.Signature([_P("args", _P.VAR_POSITIONAL), _P("options", _P.VAR_KEYWORD)])
    params = [_P(name, _P.POSITIONAL_ONLY, **({} if i < spec.min_args else {"default": None}))
              for i, (name, _) in enumerate(_names(spec))]
    if spec.max_args is None:
        params.append(_P("more" if params else "args", _P.VAR_POSITIONAL))
    return inspect.Signature([*params, _P("options", _P.VAR_KEYWORD)])


def _op_doc(decl: Declaration) -> str:
    """The docstring of a declaration, from its registry entry."""
    spec = _spec(decl.op)
    head = (f"{decl.qualname}{decl.__signature__}\n\n"
            "PyPTO Pro DSL op (usable only inside a kernel).")
    if spec is None:
        return head
    lines = [head, f"IR op `{spec.name}` ({spec.family}).", "", "Parameters", "----------"]
    real = [p.name for p in decl.__signature__.parameters.values()
            if p.kind is _P.POSITIONAL_OR_KEYWORD]
    names = [(real[i] if i < len(real) else name, role)
             for i, (name, role) in enumerate(_names(spec))]
    for name, role in names:
        what = "a value (offsets, a scalar, ...)" if role == "value" else f"operand {role}"
        lines.append(f"{name} : {what}" + ("" if spec.accesses_data or role == "value" else
                                           " (a descriptor: no data moved)"))
    if spec.max_args is None:
        lines.append(f"{'more' if names else 'args'} : further operands"
                     + (", read" if spec.tail_reads else ""))
    lines.append("options : keyword options as in the PyPTO Pro reference (e.g. dim=, pipe=)")
    pipe = getattr(spec.pipe, "value", None)
    lines += ["", f"Runs on pipe {pipe}." if pipe else
              "Runs on the pipe its operands' memory spaces select (e.g. a move L1->L0A: MTE1)."]
    return "\n".join(lines)


def declare(names: str, prefix: str = "", qual: str = "pl") -> dict[str, Declaration]:
    return {n: Declaration(f"{prefix}{n}", f"{qual}.{n}") for n in names.split()}
