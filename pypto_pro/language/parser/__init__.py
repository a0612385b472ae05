"""The AST parser: a `KernelDef` + `Specialization` → one target's IR `Program` (spec §3.4 step 5).

Split by job: `context` (state, scopes), `stmt` (statements, sections), `expr` (expressions,
folding), `values` (attributes, subscripts), `calls` (dispatch, op emission), `ops_block` /
`ops_system` / `ops_misc` / `ops_vf` / `simt` (op handlers), `inline` (helpers and VF bodies).
Any stray Python exception while parsing is wrapped with the span of the statement being parsed.
"""
from __future__ import annotations

import dataclasses
from typing import Any

from ...errors import ParserError, ParserSyntaxError, ParserTypeError, PyptoError
from ...ir.dtype import DataType
from ...ir.nodes import Function, FunctionType, Program, Var
from ...ir.span import Span
from ...ir.types import (
    INDEX, ArrayType, PtrType, ScalarType, StructType, TensorType, Type,
)
from ...runtime.kernel_def import KernelDef, ParamSpec, Specialization
from ..types import DYNAMIC, STATIC
from .context import FunctionFrame, ParseContext, assigned_names, span_of
from .stmt import parse_stmt

# ParserError: the base of the parser diagnostics, `pl.parser.ParserError` as in the real package
__all__ = ["parse_target", "ParseResult", "dynamic_dim_name", "ParserError"]


@dataclasses.dataclass
class ParseResult:
    program: Program
    matched_sections: set[str]


def dynamic_dim_name(param: str, axis: int) -> str:
    return f"__pypto_dyn_{param}_{axis}"


def parse_target(kdef: KernelDef, spec: Specialization, target: str) -> ParseResult:
    """Parse the kernel for `target` ("cube" | "vector")."""
    ctx = ParseContext(target, kdef.name, spec.constants(), spec.arch)
    frame = FunctionFrame(kdef.file, kdef.env, mutable=frozenset(
        n for n, c in assigned_names(kdef.tree.body).items() if c > 1))
    ctx.frames.append(frame)
    params, dyn_vars = _params(ctx, kdef, spec)
    for p, v in zip(kdef.params, params):
        frame.scope[p.name] = v
    for stmt in kdef.tree.body:
        try:
            parse_stmt(ctx, stmt)
        except PyptoError as e:
            e.with_span(span_of(stmt, kdef.file))
            raise
        except RecursionError:
            raise ctx.error(ParserSyntaxError, "kernel nests too deeply", stmt) from None
        except Exception as e:  # an internal failure: point at the statement being parsed
            raise ctx.error(ParserSyntaxError, f"Failed to parse kernel function "
                                               f"'{kdef.name}': {type(e).__name__}: {e}",
                            stmt) from e
    body = ctx.builder.pop(span_of(kdef.tree, kdef.file))
    kernel = Function(kdef.name, tuple(params) + tuple(dyn_vars), body, FunctionType.OPAQUE,
                      (("dynamic_dims", tuple(v.name for v in dyn_vars)),),
                      span=span_of(kdef.tree, kdef.file))
    program = Program(kdef.name, (kernel, *ctx.extra_functions), target, kernel.span)
    return ParseResult(program, ctx.matched_sections)


def _params(ctx: ParseContext, kdef: KernelDef, spec: Specialization) -> tuple[list[Var],
                                                                              list[Var]]:
    params, dyn = [], []
    span = Span(kdef.file, kdef.tree.lineno, kdef.tree.col_offset + 1)
    for p in kdef.params:
        ty = _param_type(ctx, p, spec, dyn, span)
        params.append(Var(p.name, ty, span))
    return params, dyn


def _dtype(p: ParamSpec, base: DataType, spec: Specialization) -> DataType:
    if p.dtype_var is not None:
        return dict(spec.datatype).get(p.dtype_var, base)
    return base


def _param_type(ctx: ParseContext, p: ParamSpec, spec: Specialization, dyn: list[Var],
                span: Span) -> Type:
    from ...ir.nodes import ConstInt

    if p.kind == "tensor":
        ts = p.spec
        dims = list(ts.dims)
        if ts.has_ellipsis:
            rank = spec.rank(p.index) or ts.explicit_rank
            dims = dims[:-1] + [STATIC] * (rank - ts.explicit_rank)
        shape = []
        for axis, d in enumerate(dims):
            if d is DYNAMIC:
                v = Var(dynamic_dim_name(p.name, axis), INDEX, span)
                dyn.append(v)
                shape.append(v)
            elif d is STATIC:
                value = spec.static_dim(p.index, axis)
                if value is None:
                    raise ParserTypeError(f"parameter '{p.name}' axis {axis} is STATIC but the "
                                          f"launch gave no value", span)
                shape.append(ConstInt(value))
            else:
                shape.append(ConstInt(d))
        return TensorType(tuple(shape), _dtype(p, ts.dtype, spec), ts.layout)
    if p.kind == "ptr":
        return PtrType(_dtype(p, p.spec.dtype, spec))
    if p.kind == "scalar":
        return ScalarType(_dtype(p, p.spec, spec))
    if p.kind == "tiling":
        return tiling_struct_type(p.spec)
    raise ParserTypeError(f"parameter '{p.name}': unsupported kind {p.kind}", span)


def tiling_struct_type(cls: Any) -> StructType:
    """The IR struct type of a TilingData dataclass (int → INT64, float → FP32, bool)."""
    from ...runtime.tiling_data import c_struct_fields

    scalar = {"int64_t": DataType.INT64, "float": DataType.FP32, "bool": DataType.BOOL}
    fields = []
    for name, ctype, size in c_struct_fields(cls):
        t: Type = ScalarType(scalar[ctype])
        fields.append((name, ArrayType(t, size) if size else t))
    return StructType(cls.__name__, tuple(fields))

