"""Scaled dot-product attention through cuDNN's fused flash-attention graphs (``nvidia-cudnn-frontend``).

The second attention backend beside Genesis's Triton kernels (``sdpa.py`` chooses between them). The forward graph
``sdpa`` writes O and the softmax statistics ``stats = max + log(sum exp)`` per query row (natural log, float32,
shape (B, H, L, 1)); the backward graph ``sdpa_backward`` recomputes the probabilities from them. Supported: bfloat16
and float16, head dims multiples of 8 up to 128, any lengths, grouped-query K/V (H a multiple of HK, read in place),
top-left causal masking (``diagonal_band_right_bound=0``) and an additive mask (cuDNN's ``bias``, broadcast over
batch and heads, in the inputs' dtype).

One graph per (phase, dtype, shapes, strides, mask layout, causal, scale, device), built once and cached. Graphs are
built and run through the frontend's C++ graph object (``cudnn._pybind_module.backend_graph``, an internal API of
the pinned frontend 1.32): its execute costs about 10 us of host time against 25-46 us for the Python ``pygraph``
layer over it. Device pointers are passed as plain ints, the workspace comes from the shared buffer of ``cudnn.py``
and work runs on Genesis's current stream.
"""

from __future__ import annotations

from typing import Any

from genesis import dtypes
from genesis._impl.cuda import cudnn_library as dnn
from genesis._impl.cuda import runtime as rt
from genesis._impl.cuda.creation import contiguous, copy_
from genesis._impl.cuda.launch import _new, _ptr
from genesis.ndarray import NDArray

_F32 = dtypes.float32
# Operand uids of both graphs.
_Q, _K, _V, _BIAS, _O, _STATS, _DO, _DQ, _DK, _DV = 1, 2, 3, 4, 100, 101, 200, 201, 202, 203

_graphs: dict[tuple, _Graph] = {}
_failed: dict[tuple, str] = {}  # keys cuDNN refused to build, with the reason
_capabilities: dict[int, tuple[int, int]] = {}


class _Graph:
    """A built cuDNN graph (the frontend's C++ graph object) with its workspace size."""

    __slots__ = ("graph", "workspace")

    def __init__(self, graph: Any, workspace: int) -> None:
        self.graph = graph
        self.workspace = workspace

    def run(self, pointers: dict[int, int]) -> None:
        ws = dnn.workspace(self.workspace)  # held until the call is enqueued
        self.graph._execute(pointers, dnn.pointer(ws), dnn.handle())


def _capability(device: int) -> tuple[int, int]:
    cap = _capabilities.get(device)
    if cap is None:
        cap = _capabilities[device] = rt.capability(device)
    return cap


def supports(q: NDArray, k: NDArray, v: NDArray, mask: NDArray | None) -> str | None:
    """None when cuDNN can run this attention call, else the reason it cannot (checked without building)."""
    if not dnn.is_available():
        return f"cuDNN is not available ({dnn.unavailable_reason()})"
    if q.dtype not in (dtypes.bfloat16, dtypes.float16):
        return f"dtype {q.dtype} (cuDNN attention takes bfloat16 or float16)"
    D = q.shape[-1]
    if D % 8 or D > 128 or v.shape[-1] != D:
        return f"head dim {D} (cuDNN attention here takes multiples of 8 up to 128)"
    if _capability(q.device.index) < (8, 0):
        return "GPU older than sm_80"
    if mask is not None and mask.dtype not in (dtypes.float32, dtypes.float16, dtypes.bfloat16):
        return f"mask dtype {mask.dtype}"
    return None


def _aligned(x: NDArray) -> NDArray:
    """``x`` with a unit last stride, 16-byte aligned rows and base (cuDNN's tensor descriptors need both)."""
    ok = x.strides[-1] == 1 and all(s % 8 == 0 for s in x.strides[:-1]) and _ptr(x) % 16 == 0
    return x if ok else contiguous(x)


def _bias(mask: NDArray, q: NDArray, S: int) -> NDArray:
    """The additive mask as cuDNN's bias: (1 or B, 1 or H, L, S), dense, in the inputs' dtype."""
    B, H, L, _ = q.shape
    m = mask.reshape((1,) * (4 - mask.ndim) + tuple(mask.shape))
    shape = (B if m.shape[0] != 1 else 1, H if m.shape[1] != 1 else 1, L, S)
    m = m.expand(shape)
    if m.dtype is not q.dtype:
        m = m.astype(q.dtype)
    return contiguous(m) if not (m.is_contiguous() and _ptr(m) % 16 == 0) else m


def _new_in_layout(shape: tuple[int, ...], like: NDArray) -> NDArray:
    """A dense (B, H, L, D) array whose dims lie in memory in the order of ``like``'s strides (head dim innermost).

    Attention operands are usually ``view(B, L, H, D).transpose(1, 2)`` of a projection: outputs and gradients laid
    out as (B, L, H, D) make the caller's ``transpose(1, 2).reshape(B, L, H * D)`` a view, not a copy (as torch's).
    """
    order = sorted(range(4), key=lambda d: (-like.strides[d], d))
    if order[-1] != 3 or order == [0, 1, 2, 3]:
        return _new(shape, like.dtype, like.device)
    dense = _new(tuple(shape[d] for d in order), like.dtype, like.device)
    return dense.permute([order.index(d) for d in range(4)])


def _dims(x: NDArray) -> tuple[list[int], list[int]]:
    return list(x.shape), list(x.strides)


def _build(phase: str, io: Any, tensors: dict[int, NDArray], is_causal: bool, scale: float) -> _Graph:
    mod = dnn.module()
    FLOAT = mod.data_type.FLOAT
    g = mod._pybind_module.backend_graph(io_data_type=io, intermediate_data_type=FLOAT, compute_data_type=FLOAT,
                                         handle=dnn.handle(), name=f"genesis_sdpa_{phase}")

    def operand(uid: int, name: str) -> Any:
        x = tensors[uid]
        dim, stride = _dims(x)
        dt = FLOAT if x.dtype is _F32 else io
        return g.tensor(name=name, dim=dim, stride=stride, data_type=dt, uid=uid)

    q, k, v = operand(_Q, "q"), operand(_K, "k"), operand(_V, "v")
    options: dict[str, Any] = {"attn_scale": scale}
    if _BIAS in tensors:
        options["bias"] = operand(_BIAS, "bias")
    if is_causal:
        options["diagonal_alignment"] = mod.diagonal_alignment.TOP_LEFT
        options["diagonal_band_right_bound"] = 0
    if phase == "fwd":
        o, stats = g.sdpa(q=q, k=k, v=v, name="sdpa", generate_stats=True, **options)
        outputs = ((o, _O, io), (stats, _STATS, FLOAT))
    else:
        o, do, stats = operand(_O, "o"), operand(_DO, "dO"), operand(_STATS, "stats")
        dq, dk, dv = g.sdpa_backward(q=q, k=k, v=v, o=o, dO=do, stats=stats, name="sdpa_backward", **options)
        outputs = ((dq, _DQ, io), (dk, _DK, io), (dv, _DV, io))
    for t, uid, dt in outputs:
        dim, stride = _dims(tensors[uid])
        t.set_uid(uid).set_output(True).set_dim(dim).set_stride(stride).set_data_type(dt)
    g.validate()
    g.build_operation_graph()
    g.create_execution_plans([mod.heur_mode.A, mod.heur_mode.FALLBACK])
    g.check_support()
    g.build_plans()
    return _Graph(g, g.get_workspace_size())


def _graph(phase: str, tensors: dict[int, NDArray], is_causal: bool, scale: float) -> _Graph:
    """The cached graph for these operands (built on first use); raises RuntimeError where cuDNN refuses it."""
    q = tensors[_Q]
    key = (phase, q.dtype, q.device.index, is_causal, scale,
           tuple((uid, x.shape, x.strides) for uid, x in tensors.items()))
    graph = _graphs.get(key)
    if graph is not None:
        return graph
    if key in _failed:
        raise RuntimeError(_failed[key])
    mod = dnn.module()
    io = mod.data_type.BFLOAT16 if q.dtype is dtypes.bfloat16 else mod.data_type.HALF
    try:
        graph = _graphs[key] = _build(phase, io, tensors, is_causal, scale)
        return graph
    except Exception as exc:  # any refusal (unsupported shape or option) means "use Triton"
        reason = f"cuDNN attention {phase} cannot run {tuple(q.shape)} {q.dtype}: {type(exc).__name__}: {exc}"
    _failed[key] = reason
    raise RuntimeError(reason)


def attention(q: NDArray, k: NDArray, v: NDArray, mask: NDArray | None, is_causal: bool,
              scale: float) -> tuple[NDArray, NDArray]:
    """(out (B, H, L, D), stats (B, H, L, 1) float32) of ``softmax(q k^T * scale + mask) v``."""
    q, k, v = _aligned(q), _aligned(k), _aligned(v)
    B, H, L, D = q.shape
    S = k.shape[2]
    out = _new_in_layout((B, H, L, D), q)
    stats = _new((B, H, L, 1), _F32, q.device)
    tensors = {_Q: q, _K: k, _V: v, _O: out, _STATS: stats}
    if mask is not None:
        tensors[_BIAS] = _bias(mask, q, S)
    rt.ensure_device(q.device.index)
    graph = _graph("fwd", tensors, is_causal, scale)
    graph.run({uid: _ptr(x) for uid, x in tensors.items()})
    return out, stats


def attention_backward(grad: NDArray, q: NDArray, k: NDArray, v: NDArray, mask: NDArray | None, out: NDArray,
                       stats: NDArray, is_causal: bool, scale: float) -> tuple[NDArray, NDArray, NDArray]:
    """(dq, dk, dv) from the forward's ``out`` and ``stats``; dK and dV are summed over each group of query heads.

    Each gradient is laid out as its input (``_new_in_layout``)."""
    q, k, v = _aligned(q), _aligned(k), _aligned(v)
    do = grad
    if grad.strides != out.strides or _ptr(grad) % 16:  # dO takes O's layout
        do = _new_in_layout(out.shape, out)
        copy_(do, grad)
    dq, dk, dv = _new_in_layout(q.shape, q), _new_in_layout(k.shape, k), _new_in_layout(v.shape, v)
    S = k.shape[2]
    tensors = {_Q: q, _K: k, _V: v, _O: out, _DO: do, _STATS: stats, _DQ: dq, _DK: dk, _DV: dv}
    if mask is not None:
        tensors[_BIAS] = _bias(mask, q, S)
    rt.ensure_device(q.device.index)
    graph = _graph("bwd", tensors, is_causal, scale)
    graph.run({uid: _ptr(x) for uid, x in tensors.items()})
    return dq, dk, dv

