"""Data movement: GM ↔ tile through a GlobalTensor view, tile ↔ tile moves (spec §2.6, §4.1).

Every GM access re-points one GlobalTensor instance of the tensor's view at the window it
touches, as the real code generator does: `SetShape<pto::GlobalTensorDim::DIM_3,
pto::GlobalTensorDim::DIM_4>(valid rows, valid cols)`, then `TASSIGN(gt, ptr + Σ offset_k ·
stride_k)` and `TLOAD` / `TSTORE`. Which instance (ND, or DN for a transposed load or a
one-column tile) and whether the access re-sets its strides (`SetStride<...>`) is planned per
function (`gm_views`); the instance's constructor holds the strides otherwise.
`PYPTO_GM_CHECK` before it hands a host build the window per axis for bounds checks.
Fixpipe moves and stores spell their options as pto-isa's template arguments (destination and
source tile types first) and the scale as a UINT64 deq word (`pypto_deq_word` for run-time FP32
scales).
"""
from __future__ import annotations

from ..errors import NotSupported
from ..ir.dma_layouts import access_layout
from ..ir.dtype import DataType
from ..ir.nodes import Call, ConstFloat, ConstInt, Expr, MakeTuple, Var
from ..ir.span import Span
from ..ir.types import ScalarType
from .ops import check_kwargs, is_zero, kwarg_text
from .decls import window_strides
from .gm_views import GtInstance, window_axes
from .types import GT_DIMS, attr_value, ctype, fp32_bits

_ATOMIC_SUFFIX = {DataType.FP32: "f32", DataType.FP16: "f16", DataType.BF16: "bf16",
                  DataType.INT32: "s32", DataType.INT16: "s16", DataType.INT8: "s8"}


def _view(body, tensor: Expr, span: Span | None):
    view = body.ctx.tensors.get(tensor) if isinstance(tensor, Var) else None
    if view is None:
        raise NotSupported("codegen: GM accesses need a tensor parameter or a pl.make_tensor "
                           "view", span, module="PRO_COMPILE")
    return view


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
    """`PYPTO_GM_CHECK(name, offset, extent, size, stride, ...)` of the window, per tensor axis
    (a 1-D tensor is one row: its row axis is a virtual axis of size 1, stride 0)."""
    items = list(offsets.elements) if isinstance(offsets, MakeTuple) else [offsets]
    if view.rank == 1 and len(items) == 2:
        items = items[1:]
    if len(items) != view.rank:
        return None
    extents = {ra: f"{t}.GetValidRow()", ca: f"{t}.GetValidCol()"}
    axes = [("0", extents[-1], "1", "0")] if ra < 0 else []
    dims = list(view.shape)
    if view.dtype.bits == 4:  # the packed shape: the last axis counts bytes (`GMRef`)
        dims[-1] = f"2 * ({dims[-1]})"
    axes += [(body.x.emit(e), extents.get(k, "1"), dims[k], f"{view.stride}[{k}]")
             for k, e in enumerate(items)]
    name = view.ptr.removesuffix("_ptr")
    return f'PYPTO_GM_CHECK("{name}", {", ".join(", ".join(a) for a in axes)});'


def instance(call: Call, view) -> GtInstance:
    """The GlobalTensor instance of `view` that GM access `call` goes through."""
    return view.instances[access_layout(call, view.layout)]


def point_view(body, call: Call, view, tile: Expr, offsets: Expr, span: Span | None
               ) -> GtInstance:
    """The lines that re-point the access's instance of `view` at the window of `tile` at
    `offsets` (after the per-axis bounds hook); the instance."""
    w, t = body.w, body.x.paren(tile, 16)
    inst = instance(call, view)
    ra, ca = window_axes(call, view.rank)
    check = _bounds(body, view, offsets, t, ra, ca)
    if check is not None:
        w.line(check, span)
    w.line(f"{inst.gt}.SetShape<{GT_DIMS}>(static_cast<int64_t>({t}.GetValidRow()), "
           f"static_cast<int64_t>({t}.GetValidCol()));", span)
    if inst.per_access:
        rs, cs = window_strides(view, (ra, ca))
        w.line(f"{inst.gt}.SetStride<{GT_DIMS}>({rs}, {cs});", span)
    w.line(f"TASSIGN({inst.gt}, {_offset(body, view, offsets)});", span)
    return inst


def load(body, call: Call, span: Span | None) -> None:
    check_kwargs(call, {"is_transpose", "tile_dims", "mx_scale"}, span)
    dst, src, offsets = call.args
    view = _view(body, src, span)
    if call.kwarg("mx_scale"):
        _mx_load(body, call, view, span)
        return
    inst = point_view(body, call, view, dst, offsets, span)
    body.w.line(f"TLOAD({body.x.tile(dst)}, {inst.gt});", span)


def _mx_load(body, call: Call, view, span: Span | None) -> None:
    """An MX scale load as the real code generator emits it: its own GlobalTensor of layout
    MX_{A,B}_{ND,DN} over the packed [.., G/2, 2] tensor, shaped by the tile's valid shape,
    strided by the tensor axes the tile runs along (the lower one first)."""
    dst, _, offsets = call.args
    t = body.x.tile(dst)
    lo, hi = sorted(int(d) for d in call.kwarg("tile_dims"))
    layout = f"Layout::MX_{call.kwarg('mx_scale')}_{'DN' if call.kwarg('is_transpose') else 'ND'}"
    name, elem = body.ctx.fresh("mx_load"), ctype(dst.type.dtype)
    for line in (
            f"using {name}Shape = pto::TileShape2D<{elem}, pto::DYNAMIC, pto::DYNAMIC, {layout}>;",
            f"using {name}Stride = pto::Stride<pto::DYNAMIC, pto::DYNAMIC, pto::DYNAMIC, "
            f"pto::DYNAMIC, 1>;",
            f"using {name}Type = GlobalTensor<{elem}, {name}Shape, {name}Stride, {layout}>;",
            f"{name}Type {name}({_offset(body, view, offsets)}, {name}Shape(static_cast<int64_t>("
            f"{t}.GetValidRow()), static_cast<int64_t>({t}.GetValidCol())), {name}Stride(1, 1, "
            f"{view.stride}[{lo}], {view.stride}[{hi}], 1));",
            f"TLOAD({t}, {name});"):
        body.w.line(line, span)


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


def tile_type(body, tile: Expr) -> str:
    """The C++ type of a tile operand, for an instruction's explicit template arguments."""
    return f"std::remove_reference_t<decltype({body.x.tile(tile)})>"


def _kwarg(body, call: Call, key: str) -> str | None:
    """The C++ spelling of an option kwarg the user gave (None: left to the default)."""
    return kwarg_text(body, call, key, None)


def _store_template(body, call: Call, src: Expr, inst: GtInstance, scaled: bool) -> str:
    """TSTORE's template arguments, as the real code generator spells them: `[STPhase,]
    TileData, GlobalData[, AtomicType::AtomicNone, ReluPreMode]` (atomic add is set around the
    store with `set_atomic_*`), none for a plain store."""
    phase = call.kwarg("phase")
    phase = attr_value(phase) if phase is not None and int(phase) != 0 else None
    relu = _kwarg(body, call, "relu_pre_mode")
    if relu is None and not scaled and phase is None:
        return ""
    parts = ([phase] if phase else []) + [tile_type(body, src), inst.alias]
    if relu is not None:
        parts += ["AtomicType::AtomicNone", relu]
    return f"<{', '.join(parts)}>"


def _atomic(call: Call, dst_dtype: DataType, span: Span | None) -> str | None:
    atomic = call.kwarg("atomic")
    if atomic is None or int(atomic) == 0:
        return None
    suffix = _ATOMIC_SUFFIX.get(dst_dtype)
    if suffix is None:
        raise NotSupported(f"atomic add into a {dst_dtype!r} tensor", span,
                           module="PRO_COMPILE")
    return suffix


def _store(body, call: Call, span: Span | None, line) -> None:
    """Point the view at the window, then `line(instance)` (the store) between the atomic-add
    mode switches when the store accumulates."""
    dst, src, offsets = call.args[:3]
    view = _view(body, dst, span)
    inst = point_view(body, call, view, src, offsets, span)
    atomic = _atomic(call, view.dtype, span)
    if atomic:
        body.w.line(f"set_atomic_{atomic}();", span)
        body.w.line("set_atomic_add();", span)
    body.w.line(line(inst), span)
    if atomic:
        body.w.line("set_atomic_none();", span)


def store(body, call: Call, span: Span | None) -> None:
    check_kwargs(call, {"relu_pre_mode", "atomic", "phase", "scale", "is_transpose",
                        "tile_dims"}, span)
    scale = call.args[3] if len(call.args) > 3 else call.kwarg("scale")
    dst, src = call.args[:2]
    extra = f", {deq_word(body, scale, dst.type.dtype)}" if scale is not None else ""
    tile = body.x.tile(src)

    def line(inst: GtInstance) -> str:
        template = _store_template(body, call, src, inst, scale is not None)
        return f"TSTORE{template}({inst.gt}, {tile}{extra});"
    _store(body, call, span, line)


def store_fp(body, call: Call, span: Span | None) -> None:
    """`TSTORE_FP(gt, tile, fp)`; a relu option: `TSTORE_FP<TileData, GlobalData, FpTileData,
    AtomicType::AtomicNone, ReluPreMode>`."""
    check_kwargs(call, {"relu_pre_mode", "atomic", "is_transpose", "tile_dims"}, span)
    src, fp = call.args[1], call.args[3]
    relu = _kwarg(body, call, "relu_pre_mode")
    tile, fp_tile = body.x.tile(src), body.x.tile(fp)

    def line(inst: GtInstance) -> str:
        template = "" if relu is None else (
            f"<{tile_type(body, src)}, {inst.alias}, {tile_type(body, fp)}, "
            f"AtomicType::AtomicNone, {relu}>")
        return f"TSTORE_FP{template}({inst.gt}, {tile}, {fp_tile});"
    _store(body, call, span, line)


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


def _fixpipe_options(body, call: Call) -> list[str]:
    """The AccToVecMode and ReluPreMode template arguments the user gave (pto-isa's
    overloads take the mode, then the relu option; either may be left out)."""
    return [t for t in (_kwarg(body, call, "acc_to_vec_mode"),
                        _kwarg(body, call, "relu_pre_mode")) if t is not None]


def _typed(body, name: str, tiles: list[Expr], options: list[str]) -> str:
    """`name<Dst, Src, ..., options>` when there are options, else the bare name (the tile
    types are deduced)."""
    if not options:
        return name
    return f"{name}<{', '.join([*(tile_type(body, t) for t in tiles), *options])}>"


def move(body, call: Call, span: Span | None) -> None:
    """`TEXTRACT` (with an offset) or `TMOV`, options as template arguments after the tile
    types and a scale as the trailing deq word (pto-isa's forms)."""
    check_kwargs(call, {"acc_to_vec_mode", "relu_pre_mode", "scale"}, span)
    x = body.x
    dst, src = call.args[:2]
    options = _fixpipe_options(body, call)
    args = [x.tile(dst), x.tile(src)]
    scale = call.kwarg("scale")
    if len(call.args) > 2:
        if scale is not None:
            raise NotSupported("codegen: a scaled move with a sub-tile offset", span,
                               module="PRO_COMPILE")
        if options and call.kwarg("acc_to_vec_mode") is None:
            options = ["AccToVecMode::SingleModeVec0", *options]
        name = _typed(body, "TEXTRACT", [dst, src], options)
        body.w.line(f"{name}({', '.join(args + x.ints(call.args[2]))});", span)
        return
    if scale is not None:
        args.append(deq_word(body, scale, dst.type.dtype))
    body.w.line(f"{_typed(body, 'TMOV', [dst, src], options)}({', '.join(args)});", span)


def move_fp(body, call: Call, span: Span | None) -> None:
    """`TMOV_FP(dst, src, fp)`; with a mode `TMOV<Dst, Src, Fp, AccToVecMode[, ReluPreMode]>`,
    with only a relu option `TMOV_FP<Dst, Src, Fp, ReluPreMode>` (the real code generator's
    choice of pto-isa overload)."""
    check_kwargs(call, {"acc_to_vec_mode", "relu_pre_mode"}, span)
    if len(call.args) > 3:
        raise NotSupported("codegen: move_fp with a sub-tile offset", span, module="PRO_COMPILE")
    tiles = list(call.args[:3])
    args = ", ".join(body.x.tile(a) for a in tiles)
    options = _fixpipe_options(body, call)
    name = "TMOV" if call.kwarg("acc_to_vec_mode") is not None else "TMOV_FP"
    body.w.line(f"{_typed(body, name, tiles, options)}({args});", span)


def insert(body, call: Call, span: Span | None) -> None:
    """`TINSERT(dst, src[, deq], row, col)`, a relu option as `TINSERT<Dst, Src, ReluPreMode>`."""
    check_kwargs(call, {"scale", "relu_pre_mode"}, span)
    x = body.x
    dst, src, offset = call.args
    args = [x.tile(dst), x.tile(src)]
    scale = call.kwarg("scale")
    if scale is not None:
        args.append(deq_word(body, scale, dst.type.dtype))
    relu = _kwarg(body, call, "relu_pre_mode")
    name = _typed(body, "TINSERT", [dst, src], [relu] if relu is not None else [])
    body.w.line(f"{name}({', '.join(args + x.ints(offset))});", span)
