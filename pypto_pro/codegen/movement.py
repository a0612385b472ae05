"""Data movement: GM ↔ tile through a GlobalTensor view, tile ↔ tile moves (spec §2.6, §4.1).

Every GM access re-points the tensor's one GlobalTensor instance at the window it touches:
`SetShape<DIM_3, DIM_4>(valid rows, valid cols)`, `SetStride<DIM_3, DIM_4>(row stride, column
stride)` (strides of the tensor axes the tile's rows / columns run along: the last two, or
`tile_dims`, or swapped for a transposed access; a 1-D tensor is one row), then
`TASSIGN(gt, ptr + Σ offset_k · stride_k)` and `TLOAD` / `TSTORE` — the window the simulator
reads. `PYPTO_GM_CHECK` before it hands a host build the window per axis for bounds checks.
Fixpipe stores take their options as template arguments and the scale as a UINT64 deq
word (`pypto_deq_word` for run-time FP32 scales).
"""
from __future__ import annotations

from ..errors import NotSupported
from ..ir.dtype import DataType
from ..ir.nodes import Call, ConstFloat, ConstInt, Expr, MakeTuple, Var
from ..ir.span import Span
from ..ir.types import MemorySpace, ScalarType
from .ops import check_kwargs, is_zero, kwarg_text
from .types import attr_value, ctype, fp32_bits

_ATOMIC_SUFFIX = {DataType.FP32: "f32", DataType.FP16: "f16", DataType.BF16: "bf16",
                  DataType.INT32: "s32", DataType.INT16: "s16", DataType.INT8: "s8"}


def _view(body, tensor: Expr, span: Span | None):
    view = body.ctx.tensors.get(tensor) if isinstance(tensor, Var) else None
    if view is None:
        raise NotSupported("codegen: GM accesses need a tensor parameter or a pl.make_tensor "
                           "view", span, module="PRO_COMPILE")
    return view


def _axes(call: Call, rank: int) -> tuple[int, int]:
    """Tensor axes the tile's rows and columns run along (the simulator's window rule)."""
    dims = call.kwarg("tile_dims")
    if rank == 1:
        return -1, 0
    if dims:
        return int(dims[0]) % rank, int(dims[1]) % rank
    rows, cols = rank - 2, rank - 1
    return (cols, rows) if call.kwarg("is_transpose") else (rows, cols)


def _offset(body, view, offsets: Expr) -> str:
    items = list(offsets.elements) if isinstance(offsets, MakeTuple) else [offsets]
    if view.rank == 1 and len(items) == 2:
        items = items[1:]
    terms = []
    for k, e in enumerate(items):
        if is_zero(e):
            continue
        off = body.x.paren(e, 13)
        terms.append(f"{off} * {view.stride}[{k}]")
    return f"{view.ptr} + {' + '.join(terms)}" if terms else view.ptr


def _bounds(body, view, offsets: Expr, t: str, ra: int, ca: int) -> str | None:
    """`PYPTO_GM_CHECK(name, offset, extent, size, ...)` of the window, per tensor axis (a 1-D
    tensor is one row: its row axis is a virtual axis of size 1)."""
    items = list(offsets.elements) if isinstance(offsets, MakeTuple) else [offsets]
    if view.rank == 1 and len(items) == 2:
        items = items[1:]
    if len(items) != view.rank:
        return None
    extents = {ra: f"{t}.GetValidRow()", ca: f"{t}.GetValidCol()"}
    axes = [("0", extents[-1], "1")] if ra < 0 else []
    axes += [(body.x.emit(e), extents.get(k, "1"), view.shape[k]) for k, e in enumerate(items)]
    name = view.ptr.removesuffix("_ptr")
    return f'PYPTO_GM_CHECK("{name}", {", ".join(", ".join(a) for a in axes)});'


def point_view(body, call: Call, view, tile: Expr, offsets: Expr, span: Span | None) -> None:
    """The lines that re-point `view` at the window of `tile` at `offsets` (after the
    per-axis bounds hook)."""
    w, t = body.w, body.x.paren(tile, 16)
    ra, ca = _axes(call, view.rank)
    rs = "0" if ra < 0 else f"{view.stride}[{ra}]"
    check = _bounds(body, view, offsets, t, ra, ca)
    if check is not None:
        w.line(check, span)
    w.line(f"{view.gt}.SetShape<DIM_3, DIM_4>({t}.GetValidRow(), {t}.GetValidCol());", span)
    w.line(f"{view.gt}.SetStride<DIM_3, DIM_4>({rs}, {view.stride}[{ca}]);", span)
    w.line(f"TASSIGN({view.gt}, {_offset(body, view, offsets)});", span)


def load(body, call: Call, span: Span | None) -> None:
    check_kwargs(call, {"is_transpose", "tile_dims"}, span)
    dst, src, offsets = call.args
    view = _view(body, src, span)
    point_view(body, call, view, dst, offsets, span)
    body.w.line(f"TLOAD({body.x.tile(dst)}, {view.gt});", span)


# ---------------------------------------------------------------- stores and fixpipe options


def deq_word(body, scale: object, dst_dtype: DataType) -> str:
    """A fixpipe scale as the UINT64 deq word (bit 46 marks a signed integer output)."""
    signed = dst_dtype in (DataType.INT8, DataType.INT4)
    if isinstance(scale, ConstFloat):
        scale = scale.value
    if isinstance(scale, ConstInt):
        scale = scale.value
    if isinstance(scale, float):
        return f"{fp32_bits(scale) | ((1 << 46) if signed else 0):#x}ULL"
    if isinstance(scale, int):
        return f"{scale}ULL"
    dt = scale.type.dtype if isinstance(scale.type, ScalarType) else None
    if dt is not None and dt.is_float:
        return f"pypto_deq_word({body.x.emit(scale)}, {'true' if signed else 'false'})"
    return f"static_cast<uint64_t>({body.x.emit(scale)})"


def _store_template(body, call: Call, src: Expr, view) -> list[str]:
    phase = call.kwarg("phase")
    parts = [attr_value(phase)] if phase is not None and int(phase) != 0 else []
    parts += [body.ctx.alias(src.type), view.alias,
              kwarg_text(body, call, "atomic", "AtomicType::AtomicNone"),
              kwarg_text(body, call, "relu_pre_mode", "ReluPreMode::NoRelu")]
    return parts


def _atomic(call: Call, dst_dtype: DataType, span: Span | None) -> str | None:
    atomic = call.kwarg("atomic")
    if atomic is None or int(atomic) == 0:
        return None
    suffix = _ATOMIC_SUFFIX.get(dst_dtype)
    if suffix is None:
        raise NotSupported(f"atomic add into a {dst_dtype!r} tensor", span,
                           module="PRO_COMPILE")
    return suffix


def _store(body, call: Call, span: Span | None, name: str, extra: list[str]) -> None:
    dst, src, offsets = call.args[:3]
    view = _view(body, dst, span)
    point_view(body, call, view, src, offsets, span)
    options = any(call.kwarg(k) is not None for k in ("atomic", "relu_pre_mode", "phase",
                                                      "scale")) or extra
    args = [view.gt, body.x.tile(src), *extra]
    template = f"<{', '.join(_store_template(body, call, src, view))}>" if options else ""
    atomic = _atomic(call, view.dtype, span)
    if atomic:
        body.w.line(f"set_atomic_{atomic}();", span)
        body.w.line("set_atomic_add();", span)
    body.w.line(f"{name}{template}({', '.join(args)});", span)
    if atomic:
        body.w.line("set_atomic_none();", span)


def store(body, call: Call, span: Span | None) -> None:
    check_kwargs(call, {"relu_pre_mode", "atomic", "phase", "scale", "is_transpose",
                        "tile_dims"}, span)
    scale = call.args[3] if len(call.args) > 3 else call.kwarg("scale")
    dst_dtype = call.args[0].type.dtype
    extra = [deq_word(body, scale, dst_dtype)] if scale is not None else []
    _store(body, call, span, "TSTORE", extra)


def store_fp(body, call: Call, span: Span | None) -> None:
    check_kwargs(call, {"relu_pre_mode", "atomic", "phase", "is_transpose", "tile_dims"}, span)
    _store(body, call, span, "TSTORE_FP", [body.x.tile(call.args[3])])


def init_output(body, call: Call, span: Span | None) -> None:
    """Fill the row-major logical elements [offset, offset + size) of a GM tensor."""
    check_kwargs(call, {"offset", "size", "value"}, span)
    dst = call.args[0]
    view = _view(body, dst, span)
    k = body.ctx.fresh("k")
    start = kwarg_text(body, call, "offset", "0")
    total = " * ".join(f"static_cast<int64_t>({d})" for d in view.shape) or "1"
    size = kwarg_text(body, call, "size", None)
    end = f"{start} + {size}" if size is not None else total
    value = call.kwarg("value", 0)
    value_text = body.x.elem_cast(value, view.dtype) if isinstance(value, Expr) else \
        f"static_cast<{ctype(view.dtype)}>({attr_value(value)})"
    body.w.line(f"for (int64_t {k} = {start}; {k} < {end}; ++{k}) {{ "
                f"{view.ptr}[{_logical(view, k)}] = {value_text}; }}", span)


def _logical(view, k: str) -> str:
    """The storage offset of row-major logical element `k` of a (possibly strided) view."""
    terms, rest = [], k
    for axis in range(view.rank - 1, -1, -1):
        dim = view.shape[axis]
        index = rest if axis == 0 else f"{rest} % {dim}"
        terms.append(f"({index}) * {view.stride}[{axis}]")
        rest = f"({rest} / {dim})"
    return " + ".join(reversed(terms))


def set_stride(body, call: Call, span: Span | None) -> None:
    tensor, strides = call.args
    view = _view(body, tensor, span)
    for k, s in enumerate(body.x.ints(strides)):
        body.w.line(f"{view.stride}[{k}] = {s};", span)


# ---------------------------------------------------------------- tile → tile


def _fixpipe_template(body, call: Call) -> str:
    mode = kwarg_text(body, call, "acc_to_vec_mode", "AccToVecMode::SingleModeVec0")
    relu = kwarg_text(body, call, "relu_pre_mode", "ReluPreMode::NoRelu")
    return f"<{mode}, {relu}>"


def move(body, call: Call, span: Span | None) -> None:
    check_kwargs(call, {"acc_to_vec_mode", "relu_pre_mode", "scale"}, span)
    x = body.x
    dst, src = call.args[:2]
    args = [x.tile(dst), x.tile(src)]
    if len(call.args) > 2:
        body.w.line(f"TEXTRACT({', '.join(args + x.ints(call.args[2]))});", span)
        return
    fixpipe = src.type.memory is MemorySpace.Acc or any(
        call.kwarg(k) is not None for k in ("acc_to_vec_mode", "relu_pre_mode", "scale"))
    if not fixpipe:
        body.w.line(f"TMOV({', '.join(args)});", span)
        return
    scale = call.kwarg("scale")
    if scale is not None:
        args.append(deq_word(body, scale, dst.type.dtype))
    body.w.line(f"TMOV{_fixpipe_template(body, call)}({', '.join(args)});", span)


def move_fp(body, call: Call, span: Span | None) -> None:
    check_kwargs(call, {"acc_to_vec_mode", "relu_pre_mode"}, span)
    x = body.x
    args = [x.tile(a) for a in call.args[:3]]
    if len(call.args) > 3:
        args += x.ints(call.args[3])
    body.w.line(f"TMOV_FP{_fixpipe_template(body, call)}({', '.join(args)});", span)


def insert(body, call: Call, span: Span | None) -> None:
    check_kwargs(call, {"scale", "relu_pre_mode"}, span)
    x = body.x
    dst, src, offset = call.args
    args = [x.tile(dst), x.tile(src), *x.ints(offset)]
    scale = call.kwarg("scale")
    if scale is not None:
        args.append(deq_word(body, scale, dst.type.dtype))
    body.w.line(f"TINSERT({', '.join(args)});", span)

