"""Convolutions through cuDNN: forward (fprop), data gradient (dgrad) and weight gradient (wgrad) graphs.

Each call is one cuDNN operation graph over int device pointers, built with cudnn-frontend's C++ graph
(``cudnn._pybind_module.backend_graph``): its execute costs less host time than the Python ``cudnn.pygraph``
layer (9-27 µs against 25-46 µs, depending on the machine), which matters because a convolution on the GPU often
takes less than 20 µs. The C++ graph is an internal API of cudnn-frontend, so the version is pinned (1.32).

- Layouts: a convolution runs channels_last (N*C order) when its input or weight is, else contiguous (NC* order),
  as in torch; operands dense in that layout go to cuDNN with their strides, no copy, the others are copied to it
  once (misaligned or strided views, a contiguous weight under a channels_last input). Outputs and gradients
  come out in that layout.
- 1-d convolutions are 2-d ones with a unit height; groups are implied by the weight's channel count; a transposed
  convolution is the data gradient of the convolution it transposes.
- Plans are cached per (operation, dtype, every operand's shape and layout, padding, stride, dilation, TF32 and
  determinism switches, benchmark mode, device). Without ``genesis.backends.cudnn.benchmark`` the plan is cuDNN's
  heuristic choice; with it, the first call times every plan cuDNN can build and keeps the fastest.
- Float32 uses TF32 tensor cores unless ``genesis.backends.cudnn.allow_tf32`` is False (then plans with the
  tensor-core numerical note are deselected). Float64 and cases cuDNN declines return None: the caller then takes
  the im2col path.
"""

from __future__ import annotations

from array import array
from typing import Any

from genesis import backends, dtypes
from genesis._impl.cuda import cudnn_library as cudnn
from genesis._impl.cuda import runtime as rt
from genesis._impl.cuda import storage
from genesis._impl.cuda.creation import copy_
from genesis._impl.cuda.launch import _new, _new_channels_last, _ptr
from genesis.backends import cudnn as flags
from genesis.ndarray import NDArray, contiguous_strides

_FPROP, _DGRAD, _WGRAD = "fprop", "dgrad", "wgrad"
_UIDS = (1, 2, 3)  # (first input, second input, output) in every graph
_BENCH_REPS = 5  # runs per timing of a plan in benchmark mode
_MAX_CALLS = 4096  # fast-path entries kept (many distinct shapes, e.g. dynamic sizes: start over)
_DTYPES = (dtypes.float32, dtypes.float16, dtypes.bfloat16)  # what cuDNN's convolutions compute in


def _deterministic() -> bool:
    """Whether convolutions must take deterministic plans: ``cudnn.deterministic`` or deterministic mode."""
    return flags.deterministic or backends.are_deterministic_algorithms_enabled()


class _Plan:
    """A built cuDNN graph, the plan to run (-1: the heuristic's choice) and its workspace size.

    The three operands go to the frontend as an array of pointers in the graph's operand order (its uids 1, 2, 3
    ascending): no uid map is built, converted and searched per call, which saved 1-5 us of a 8-22 us execute on
    an H200. A graph whose operand order is not that one takes the uid map."""

    __slots__ = ("graph", "index", "workspace", "raw")

    def __init__(self, graph: Any, index: int, workspace: int) -> None:
        self.graph = graph
        self.index = index
        self.workspace = workspace
        try:  # the operand order, which C++ otherwise works out at the first run
            graph._prepare_variant_pack_template()
            self.raw = list(graph._get_variant_pack_uids_sorted()) == list(_UIDS)
        except Exception:  # a frontend that cannot tell the order: the plan takes the uid map
            self.raw = False

    def run(self, a: int, b: int, out: int) -> None:
        """Execute on the operands at device addresses ``a``, ``b`` (the inputs) and ``out``."""
        ws = cudnn.workspace(self.workspace) if self.workspace else None  # held until the call is enqueued
        scratch = 0 if ws is None else ws.ptr
        if self.raw:
            # A new array per call (0.4 us): a plan shared by two threads never hands one the other's pointers.
            ptrs = array("Q", (a, b, out))
            self.graph._execute_with_raw_ptrs(ptrs.buffer_info()[0], 3, scratch, cudnn.handle(), self.index)
        elif self.index < 0:
            self.graph._execute(dict(zip(_UIDS, (a, b, out))), scratch, cudnn.handle())
        else:
            self.graph._execute_plan_at_index(dict(zip(_UIDS, (a, b, out))), scratch, self.index, cudnn.handle())


_plans: dict[tuple, _Plan | None] = {}  # None: cuDNN declined this configuration
_declined: dict[tuple, str] = {}  # why, per declined configuration (for diagnostics)


def usable(*arrays: NDArray) -> bool:
    """Whether cuDNN may run a convolution on these arrays (switch on, library present, supported dtype)."""
    if not flags.enabled or arrays[0].dtype not in _DTYPES:
        return False
    for a in arrays:
        if not a.size:
            return False
    return cudnn.is_available()


def declined() -> dict[tuple, str]:
    """cuDNN's reason for each configuration it declined (those run on the im2col path)."""
    return dict(_declined)


# ---------------------------------------------------------------- layouts


def _cl_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    """Strides of an (N, C, *S) array stored as (N, *S, C)."""
    st = contiguous_strides((shape[0],) + shape[2:] + (shape[1],))
    return (st[0], st[-1]) + st[1:-1]


def _dense_as(x: NDArray, strides: tuple[int, ...]) -> bool:
    """Whether x is laid out with ``strides`` (size-1 dims may have any stride)."""
    return all(n == 1 or s == t for n, s, t in zip(x.shape, x.strides, strides))


def is_channels_last(x: NDArray) -> bool:
    """Dense in N*C order and not also plainly contiguous (the layout torch's channels_last formats describe)."""
    if x.ndim < 3 or (x.strides[1] != 1 and x.shape[1] != 1):
        return False  # the common NC* case, decided without working out strides
    return not x.is_contiguous() and _dense_as(x, _cl_strides(x.shape))


def _operand(x: NDArray, cl: bool) -> NDArray:
    """x dense in the graph's layout (channels_last when ``cl``) and 16-byte aligned: itself, or a copy."""
    if _dense_as(x, _cl_strides(x.shape) if cl else contiguous_strides(x.shape)) and not _ptr(x) % 16:
        return x
    # cuDNN's plans assume 16-byte aligned operands (a fresh buffer is) and one layout for all of them (as torch).
    dense = empty(x.shape, x.dtype, x.device, cl)
    copy_(dense, x)
    return dense


def empty(shape: tuple[int, ...], dtype: dtypes.dtype, device: object, cl: bool) -> NDArray:
    """A new (N, C, *S) array, stored channels_last when ``cl``."""
    if not cl:
        return _new(shape, dtype, device)
    return _new_channels_last(shape, dtype, device)


def _desc(shape: tuple[int, ...], cl: bool) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """cuDNN's (dims, strides) of an operand: at least 4-d (a 1-d convolution gets a unit height)."""
    if len(shape) == 3:
        shape = shape[:2] + (1,) + shape[2:]
    return shape, (_cl_strides(shape) if cl else contiguous_strides(shape))


def _geometry(nd: int, padding: tuple, stride: tuple, dilation: tuple) -> tuple[tuple, tuple, tuple]:
    if nd == 1:
        return (0,) + tuple(padding), (1,) + tuple(stride), (1,) + tuple(dilation)
    return tuple(padding), tuple(stride), tuple(dilation)


# ---------------------------------------------------------------- graphs and plans


def _build(kind: str, dtype: dtypes.dtype, descs: tuple, padding: tuple, stride: tuple,
           dilation: tuple, pointers: tuple[int, int, int]) -> _Plan | None:
    """Build the graph and choose its plan (timing every plan in benchmark mode); None if cuDNN declines."""
    mod = cudnn.module()
    dt = {dtypes.float32: mod.data_type.FLOAT, dtypes.float16: mod.data_type.HALF,
          dtypes.bfloat16: mod.data_type.BFLOAT16}[dtype]
    f32 = mod.data_type.FLOAT
    try:
        g = mod._pybind_module.backend_graph(io_data_type=dt, intermediate_data_type=f32, compute_data_type=f32,
                                             handle=cudnn.handle())
        (a_dim, a_st), (b_dim, b_st), (o_dim, o_st) = descs
        a = g.tensor(dim=list(a_dim), stride=list(a_st), data_type=dt, uid=_UIDS[0], name="a")
        b = g.tensor(dim=list(b_dim), stride=list(b_st), data_type=dt, uid=_UIDS[1], name="b")
        geometry = {"pre_padding": list(padding), "post_padding": list(padding), "stride": list(stride),
                    "dilation": list(dilation), "compute_data_type": f32, "name": kind}
        if kind == _FPROP:
            out = g.conv_fprop(image=a, weight=b, **geometry)
        elif kind == _DGRAD:
            out = g.conv_dgrad(loss=a, filter=b, **geometry)
        else:
            out = g.conv_wgrad(image=a, loss=b, **geometry)
        out.set_output(True)
        out.set_dim(list(o_dim))
        out.set_stride(list(o_st))
        out.set_data_type(dt)
        out.set_uid(_UIDS[2])
        g.validate()
        g.build_operation_graph()
        created = False
        for mode in (mod.heur_mode.A, mod.heur_mode.FALLBACK):
            try:
                g.create_execution_plans([mode])
                created = True
            except mod.cudnnGraphNotSupportedError:
                continue
        if not created:
            raise RuntimeError("no execution plans from cuDNN's heuristics")
        if dtype is dtypes.float32 and not flags.allow_tf32:
            g.deselect_numeric_notes([mod.numerical_note.TENSOR_CORE])
        if _deterministic():
            g.deselect_numeric_notes([mod.numerical_note.NONDETERMINISTIC])
        g.check_support()
        if not flags.benchmark:
            g.build_plans(mod.build_plan_policy.HEURISTICS_CHOICE)
            plan = _Plan(g, -1, int(g.get_workspace_size()))
            plan.run(*pointers)  # a plan that cannot run is found here, not in the middle of training
            return plan
        g.build_plans(mod.build_plan_policy.ALL)
        return _fastest(g, pointers)
    except Exception as exc:  # any refusal of cuDNN's means "use the im2col path" for this case
        _declined[(kind, dtype, descs, padding, stride, dilation)] = f"{type(exc).__name__}: {exc}"
        return None


def _fastest(g: Any, pointers: tuple[int, int, int]) -> _Plan:
    """The plan with the lowest median time over a few runs on the actual operands."""
    best: tuple[float, int, int] | None = None
    for i in range(g.get_execution_plan_count()):
        try:
            plan = _Plan(g, i, int(g.get_workspace_size_plan_at_index(i)))
            plan.run(*pointers)  # a plan that was not built (unsupported or deselected) raises here
        except Exception:  # skip plans cuDNN cannot run
            continue
        times = []
        for _ in range(2):
            # Several runs between one pair of events: the GPU time of the plan, not the host time of a launch.
            start, end = rt.Event(enable_timing=True), rt.Event(enable_timing=True)
            start.record()
            for _ in range(_BENCH_REPS):
                plan.run(*pointers)
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
        ms = min(times)
        if best is None or ms < best[0]:
            best = (ms, i, plan.workspace)
    if best is None:
        raise RuntimeError("no plan that cuDNN built could run")
    return _Plan(g, best[1], best[2])


def _run(kind: str, a: NDArray, a_cl: bool, b: NDArray, b_cl: bool, out_shape: tuple, out_cl: bool,
         padding: tuple, stride: tuple, dilation: tuple, into: NDArray | None = None) -> tuple[NDArray | None,
                                                                                              _Plan | None]:
    """Run one graph into a new output array of ``out_shape``, or into ``into`` where it has the planned layout:
    (output, plan), (None, None) when cuDNN declines."""
    strides = _cl_strides(out_shape) if out_cl else contiguous_strides(out_shape)
    if into is not None and into.shape == out_shape and into.strides == strides and into.dtype is a.dtype \
            and not _ptr(into) & 15:
        out = into
    else:
        out = empty(out_shape, a.dtype, a.device, out_cl)
    descs = (_desc(a.shape, a_cl), _desc(b.shape, b_cl), _desc(out_shape, out_cl))
    padding, stride, dilation = _geometry(len(out_shape) - 2, padding, stride, dilation)
    key = (kind, a.dtype, descs, padding, stride, dilation, a.dtype is dtypes.float32 and flags.allow_tf32,
           _deterministic(), flags.benchmark, a.device.index)
    pointers = (_ptr(a), _ptr(b), _ptr(out))
    rt.ensure_device(a.device.index)
    if key in _plans:
        plan = _plans[key]
        if plan is not None:
            plan.run(*pointers)
    else:
        plan = _plans[key] = _build(kind, a.dtype, descs, padding, stride, dilation, pointers)
        if plan is not None and plan.index >= 0:
            plan.run(*pointers)  # benchmark mode timed other plans last: the output must come from the chosen one
    return (out, plan) if plan is not None else (None, None)


class _Call:
    """A configuration seen before whose operands cuDNN read in place: its plan and its output's layout.

    Repeated calls (every training step) go from the operands' shapes and strides straight to the plan, without
    working out layouts again: the host time of a convolution is mostly this bookkeeping and cuDNN's execute.
    """

    __slots__ = ("plan", "nbytes", "shape", "strides")

    def __init__(self, plan: _Plan, out: NDArray) -> None:
        self.plan = plan
        self.nbytes, self.shape, self.strides = out.size * out.dtype.itemsize, out.shape, out.strides

    def run(self, a: NDArray, b: NDArray, into: NDArray | None = None) -> NDArray | None:
        """The output for operands of the recorded configuration (``into`` where it has the recorded layout); None
        if one is misaligned this time."""
        pa, pb = _ptr(a), _ptr(b)
        if (pa | pb) & 15:
            return None
        rt.ensure_device(a.device.index)
        if into is not None and into.shape == self.shape and into.strides == self.strides and not _ptr(into) & 15:
            out = into
        else:
            out = NDArray(storage.alloc(self.nbytes, a.device.index), self.shape, self.strides, 0, a.dtype, a.device)
        self.plan.run(pa, pb, _ptr(out))
        return out


_calls: dict[tuple, _Call | None] = {}  # (operation, operands' metadata, switches) -> fast path; None: declined


def _call(key: tuple, kind: str, a: NDArray, b: NDArray, out_shape: tuple, cl: bool, padding: tuple,
          stride: tuple, dilation: tuple, into: NDArray | None = None) -> NDArray | None:
    """Bring the operands to one layout, run, and remember the configuration for the fast path when nothing was
    copied."""
    ra, rb = _operand(a, cl), _operand(b, cl)
    out, plan = _run(kind, ra, cl, rb, cl, out_shape, cl, padding, stride, dilation, into)
    if len(_calls) >= _MAX_CALLS:
        _calls.clear()
    if plan is None:
        _calls[key] = None
    elif ra is a and rb is b:
        _calls[key] = _Call(plan, out)
    return out


def _cached(key: tuple, a: NDArray, b: NDArray, into: NDArray | None = None) -> tuple[bool, NDArray | None]:
    """(whether the fast path answered, its output): the output, or None for a configuration cuDNN declined."""
    if key not in _calls:
        return False, None
    call = _calls[key]
    if call is None:
        return True, None
    out = call.run(a, b, into)
    return out is not None, out


def _key(kind: str, a: NDArray, b: NDArray, extra: object, stride: tuple, padding: tuple, dilation: tuple) -> tuple:
    return (kind, a.dtype, a.shape, a.strides, b.shape, b.strides, extra, stride, padding, dilation,
            flags.allow_tf32, _deterministic(), flags.benchmark, a.device)


def _conv_out(size: tuple, kernel: tuple, stride: tuple, padding: tuple, dilation: tuple) -> tuple[int, ...]:
    return tuple((s + 2 * p - d * (k - 1) - 1) // st + 1
                 for s, k, st, p, d in zip(size, kernel, stride, padding, dilation))


def forward(x: NDArray, w: NDArray, stride: tuple, padding: tuple, dilation: tuple,
            out_cl: bool | None = None, out_size: tuple | None = None, into: NDArray | None = None) -> NDArray | None:
    """conv(x, w) for batched x (N, C, *S) and w (O, C/groups, *K); None when cuDNN declines (or the output size
    differs from ``out_size``). The output is channels_last when ``out_cl`` (default: when x or w is); it is
    ``into`` where that array has the output's layout."""
    key = _key(_FPROP, x, w, (out_cl, out_size), stride, padding, dilation)
    hit, out = _cached(key, x, w, into)
    if hit:
        return out
    size = _conv_out(x.shape[2:], w.shape[2:], stride, padding, dilation)
    if out_size is not None and tuple(out_size) != size:
        _calls[key] = None
        return None
    if out_cl is None:
        out_cl = is_channels_last(x) or is_channels_last(w)
    return _call(key, _FPROP, x, w, (x.shape[0], w.shape[0]) + size, out_cl, padding, stride, dilation, into)


def data_grad(g: NDArray, w: NDArray, in_shape: tuple, stride: tuple, padding: tuple, dilation: tuple,
              out_cl: bool | None = None, into: NDArray | None = None) -> NDArray | None:
    """The input gradient (N, C, *in) of conv(x, w) from g (N, O, *out), which is also the transposed
    convolution of g; None when cuDNN declines or g's size does not follow from ``in_shape``. It is ``into``
    where that array has the result's layout."""
    key = _key(_DGRAD, g, w, (out_cl, tuple(in_shape)), stride, padding, dilation)
    hit, out = _cached(key, g, w, into)
    if hit:
        return out
    if _conv_out(in_shape[2:], w.shape[2:], stride, padding, dilation) != tuple(g.shape[2:]):
        _calls[key] = None
        return None
    if out_cl is None:
        out_cl = is_channels_last(g) or is_channels_last(w)
    return _call(key, _DGRAD, g, w, tuple(in_shape), out_cl, padding, stride, dilation, into)


def weight_grad(x: NDArray, g: NDArray, w_shape: tuple, stride: tuple, padding: tuple, dilation: tuple,
                out_cl: bool) -> NDArray | None:
    """The weight gradient (O, C/groups, *K) of conv(x, w) from input x and output gradient g, channels_last
    when ``out_cl`` (the convolution's layout)."""
    key = _key(_WGRAD, x, g, (out_cl, tuple(w_shape)), stride, padding, dilation)
    hit, out = _cached(key, x, g)
    if hit:
        return out
    if _conv_out(x.shape[2:], w_shape[2:], stride, padding, dilation) != tuple(g.shape[2:]):
        _calls[key] = None
        return None
    return _call(key, _WGRAD, x, g, tuple(w_shape), out_cl, padding, stride, dilation)


def plan_count() -> int:
    """Number of configurations with a built plan (for tests and diagnostics)."""
    return sum(1 for p in _plans.values() if p is not None)

