"""SIMT functions and launches (spec §2.14, §4.1): `__simt_vf__` entries, `cce::async_invoke`.

A launchable SIMT function (`FunctionType.SIMT_VF`) becomes `__simt_vf__
__launch_bounds__(N) inline void f(...)`, a callee `__simt_callee__ inline <T|void> f(...)`
(`return v;`), called as `f(args...)` (`simt.call`); callees come before their callers.
Parameters: a Vec tile is its UB pointer plus its valid rows / cols (`__ubuf__ T* t, uint32_t
t_rows, uint32_t t_cols`), a GM tensor its `__gm__ T*`, a scalar its value. In the body element
access `t[i]` indexes the pointer; the thread context reads `threadIdx` / `blockDim` /
`blockIdx` / `gridDim` / `warpSize` as signed int64. `pl.simt.launch` becomes
`cce::async_invoke<f>(cce::dim3{x, y, z}, args...)` on the vector core.
"""
from __future__ import annotations

from collections.abc import Callable

from ..errors import NotSupported
from ..ir.nodes import Call, Function, FunctionType, Program, Var
from ..ir.mutator import walk
from ..ir.span import Span
from ..ir.types import ScalarType, TensorType, TileType
from .types import ctype, scalar_ctype

_CTX = {"simt.thread_idx": "threadIdx", "simt.block_dim": "blockDim",
        "simt.block_idx": "blockIdx", "simt.grid_dim": "gridDim"}
#: simt.math function → C++ spelling for FP32 operands (ints use the generic name)
_MATH_FP32 = {
    "sqrt": "sqrtf", "rsqrt": "rsqrtf", "exp": "expf", "exp2": "exp2f", "log": "logf",
    "log2": "log2f", "log1p": "log1pf", "sin": "sinf", "cos": "cosf", "tanh": "tanhf",
    "rint": "rintf", "round": "roundf", "floor": "floorf", "ceil": "ceilf", "trunc": "truncf",
    "fma": "fmaf", "abs": "fabsf", "min": "fminf", "max": "fmaxf", "isnan": "isnan",
    "isinf": "isinf",
}
_ATOMICS = {"add": "atomicAdd", "sub": "atomicSub", "exch": "atomicExch", "max": "atomicMax",
            "min": "atomicMin", "inc": "atomicInc", "dec": "atomicDec", "cas": "atomicCAS",
            "and": "atomicAnd", "or": "atomicOr", "xor": "atomicXor"}


def _context(x, e: Call) -> str:
    axis = e.kwarg("axis", "x")
    return f"static_cast<int64_t>({_CTX[e.op]}.{axis})"


def _linear(x, e: Call) -> str:
    return ("static_cast<int64_t>((threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + "
            "threadIdx.x)")


def _warp(x, e: Call) -> str:
    return "static_cast<int64_t>(warpSize)"


def _math(x, e: Call) -> str:
    fn = e.kwarg("fn")
    args = [x.emit(a) for a in e.args]
    if fn == "cast":
        return f"static_cast<{ctype(e.type.dtype)}>({args[0]})"
    dt = e.args[0].type.dtype if isinstance(e.args[0].type, ScalarType) else None
    name = _MATH_FP32.get(fn, fn) if dt is None or dt.is_float else fn
    return f"{name}({', '.join(args)})"


def _atomic(x, e: Call) -> str:
    from .exprs import element_ref

    fn = e.kwarg("fn")
    target = element_ref(x, e.args[0], e.args[1])
    values = [x.emit(a) for a in e.args[2:]]
    return f"{_ATOMICS[fn]}(&{target}{''.join(', ' + v for v in values)})"


def _call(x, e: Call) -> str:
    """`callee(args...)`: a tile passes on its UB pointer and valid rows / cols (the caller's
    own tile parameter), a tensor its GM pointer, a scalar its value."""
    args = []
    for a in e.args:
        if not isinstance(a.type, TileType):
            args.append(x.emit(a))
        elif isinstance(a, Var):
            name = x.ctx.name(a)
            args += [name, f"{name}_rows", f"{name}_cols"]
        else:
            raise NotSupported("simt.call: a tile argument must be a tile parameter of the "
                               "calling SIMT function", e.span, module="PRO_COMPILE")
    return f"{e.kwarg('callee')}({', '.join(args)})"


SIMT_VALUE_OPS: dict[str, Callable] = {
    **{op: _context for op in _CTX},
    "simt.linear_thread_idx": _linear, "simt.warp_size": _warp,
    "simt.math": _math, "simt.atomic": _atomic, "simt.call": _call,
}


def simt_value(x, e: Call) -> str:
    handler = SIMT_VALUE_OPS.get(e.op)
    if handler is None:
        raise NotSupported(f"codegen: {e.op} has no SIMT lowering", e.span,
                           module="PRO_COMPILE")
    return handler(x, e)


# ---------------------------------------------------------------- functions


def signature(fn: Function, names) -> str:
    """The C++ signature of a SIMT function (names: the function's `Namer`)."""
    params = []
    for p in fn.params:
        name = names.name(p)
        t = p.type
        if isinstance(t, TileType):
            params.append(f"__ubuf__ {ctype(t.dtype)}* {name}, uint32_t {name}_rows, "
                          f"uint32_t {name}_cols")
        elif isinstance(t, TensorType):
            params.append(f"__gm__ {ctype(t.dtype)}* {name}")
        else:
            params.append(f"{scalar_ctype(t)} {name}")
    if fn.func_type is FunctionType.SIMT_VF:
        head = f"__simt_vf__ __launch_bounds__({fn.attr('max_threads')}) inline void"
    else:
        ret = scalar_ctype(fn.return_type) if isinstance(fn.return_type, ScalarType) else "void"
        head = f"__simt_callee__ inline {ret}"
    return f"{head} {fn.name}({', '.join(params)})"


def emit_launch(body, call: Call, span: Span | None) -> None:
    from .ops import check_kwargs

    check_kwargs(call, {"callee", "threads", "max_threads"}, span)
    body.ctx.flags.simt = True
    x = body.x
    args = []
    for a in call.args:
        t = a.type
        if isinstance(t, TileType):
            tile = x.paren(a, 16)
            args += [f"reinterpret_cast<__ubuf__ {ctype(t.dtype)}*>({tile}.data())",
                     f"static_cast<uint32_t>({tile}.GetValidRow())",
                     f"static_cast<uint32_t>({tile}.GetValidCol())"]
        elif isinstance(t, TensorType):
            args.append(body.ctx.tensors[a].ptr)
        else:
            args.append(x.emit(a))
    threads = ", ".join(str(int(n)) for n in call.kwarg("threads", (1, 1, 1)))
    callee = call.kwarg("callee")
    body.w.line(f"cce::async_invoke<{callee}>(cce::dim3{{{threads}}}"
                f"{''.join(', ' + a for a in args)});", span)


def emit_call(body, call: Call, span: Span | None) -> None:
    """A `simt.call` statement (a void callee, or a result nobody reads)."""
    body.w.line(f"{_call(body.x, call)};", span)


SIMT_EFFECTS: dict[str, Callable] = {"simt.launch": emit_launch, "simt.call": emit_call}


def simt_functions(program: Program) -> list[Function]:
    """The program's SIMT functions in C++ definition order: every callee before the
    functions that call it (program order otherwise); recursion is rejected."""
    by_name = {f.name: f for f in program.functions
               if f.func_type in (FunctionType.SIMT_CALLEE, FunctionType.SIMT_VF)}
    order: dict[str, Function] = {}

    def place(fn: Function, path: tuple[str, ...]) -> None:
        for call in (n for n in walk(fn.body) if isinstance(n, Call) and n.op == "simt.call"):
            name = call.kwarg("callee")
            if name in path:
                raise NotSupported(f"SIMT function '{name}' is recursive", call.span,
                                   module="PRO_COMPILE")
            if name in by_name and name not in order:
                place(by_name[name], path + (name,))
        order.setdefault(fn.name, fn)

    for fn in by_name.values():
        place(fn, (fn.name,))
    return list(order.values())
