"""Recurrent layers through cuDNN's RNN API: the CUDA backend's ``rnn_layer`` and ``rnn_layer_backward``.

One layer-direction of an LSTM, GRU or Elman RNN over a padded (T, B, I) sequence, or a packed one (cuDNN's
``SEQ_MAJOR_PACKED`` layout is a ``PackedSequence``'s), is one ``cudnnRNNForward`` call;
its gradients are one ``cudnnRNNBackwardData_v8`` and, when a weight needs a gradient, one
``cudnnRNNBackwardWeights_v8``. cuDNN runs the products and cells of every step from C, so the host cost of a layer
no longer grows with the sequence length. cudnn-frontend has no RNN graphs, so the C API of the ``libcudnn`` it
loads is called directly through ctypes, with plain integer pointers.

- Weights: cuDNN reads one packed weight space. Each forward copies ``w_ih``, ``w_hh``, ``b_ih``, ``b_hh`` into a
  new one (a few device-to-device copies: the gates of one matrix lie next to each other there); the backward reads
  the same space. Weight gradients are views into the gradient space where a matrix's gates are adjacent.
- The reverse direction of a bidirectional layer runs forward over the time-reversed sequences (one gather each
  way; each sequence is reversed within its own length, which keeps a packed batch's layout).
- float32 uses TF32 tensor cores where ``genesis.backends.cudnn.allow_tf32`` is True (the default), as torch's
  cuDNN RNN, which reads that switch only; with it off the layer computes in full float32 and its results match the
  CPU's and the time loop's. Half precision computes in float32.
- Where cuDNN cannot run the layer (not installed, ``genesis.backends.cudnn.enabled`` False, a dtype or size it does
  not support) the layer runs the time loop of fused cells (``genesis._impl.recurrent_loop``).

Plans (descriptors, weight-space layout, scratch sizes, device sequence lengths) are cached per layer shape.
"""

from __future__ import annotations

import ctypes
import os
from typing import Any

import numpy as np

from genesis import dtypes
from genesis._impl import recurrent_loop
from genesis._impl.cuda import cudnn_library as dnn
from genesis._impl.cuda import runtime as rt
from genesis._impl.cuda.creation import contiguous, empty, from_numpy, full
from genesis._impl.cuda.indexing import index_select
from genesis._impl.cuda.launch import _contig, _ptr, _stream
from genesis.backends import cudnn as flags
from genesis.memo import remember
from genesis.ndarray import NDArray, check_same_device

_DATA_TYPE = {dtypes.float32: 0, dtypes.float64: 1, dtypes.float16: 2, dtypes.bfloat16: 9}
_CELL = {"RNN_RELU": 0, "RNN_TANH": 1, "LSTM": 2, "GRU": 3}
_NO_BIAS, _DOUBLE_BIAS = 0, 2
_ALGO_STANDARD, _UNIDIRECTIONAL, _LINEAR_INPUT = 0, 0, 0
_DEFAULT_MATH, _TENSOR_OP_MATH, _FMA_MATH = 0, 1, 3
_SEQ_MAJOR_PACKED = 1
_INFERENCE, _TRAINING = 0, 1
_WGRAD_ADD = 0
_NOT_SUPPORTED = 3000  # cuDNN 9's CUDNN_STATUS_NOT_SUPPORTED; its sub-codes are 3001 and above

_P, _I, _S = ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t
_PP, _PS = ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_size_t)
_SIGNATURES = {
    "cudnnCreateRNNDescriptor": (_PP,),
    "cudnnDestroyRNNDescriptor": (_P,),
    "cudnnSetRNNDescriptor_v8": (_P, _I, _I, _I, _I, _I, _I, _I, _I, _I, _I, _I, _I, _P, ctypes.c_uint),
    "cudnnGetRNNWeightSpaceSize": (_P, _P, _PS),
    "cudnnGetRNNWeightParams": (_P, _P, _I, _S, _P, _I, _P, _PP, _P, _PP),
    "cudnnCreateRNNDataDescriptor": (_PP,),
    "cudnnDestroyRNNDataDescriptor": (_P,),
    "cudnnSetRNNDataDescriptor": (_P, _I, _I, _I, _I, _I, ctypes.POINTER(ctypes.c_int), _P),
    "cudnnCreateTensorDescriptor": (_PP,),
    "cudnnDestroyTensorDescriptor": (_P,),
    "cudnnSetTensorNdDescriptor": (_P, _I, _I, ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int)),
    "cudnnGetRNNTempSpaceSizes": (_P, _P, _I, _P, _PS, _PS),
    "cudnnRNNForward": (_P, _P, _I, _P, _P, _P, _P, _P, _P, _P, _P, _P, _P, _P, _S, _P, _S, _P, _S, _P),
    "cudnnRNNBackwardData_v8": (_P, _P, _P, _P, _P, _P, _P, _P, _P, _P, _P, _P, _P, _P, _P, _P, _S, _P, _S, _P, _S,
                                _P),
    "cudnnRNNBackwardWeights_v8": (_P, _P, _I, _P, _P, _P, _P, _P, _P, _P, _S, _P, _S, _P, _S, _P),
}

_lib: Any = None
_load_error: str | None = None


class CudnnRnnError(RuntimeError):
    """A cuDNN RNN call failed; ``status`` is cuDNN's status code."""

    def __init__(self, what: str, status: int) -> None:
        message = _lib.cudnnGetErrorString(status).decode() if _lib is not None else "?"
        super().__init__(f"{what} failed: {message} (cuDNN status {status})")
        self.status = status


def _open() -> ctypes.CDLL:
    """``libcudnn.so.9``: the copy cudnn-frontend already loaded (matched by its soname), else the one in the
    ``nvidia.cudnn`` package."""
    try:
        return ctypes.CDLL("libcudnn.so.9")
    except OSError:
        import nvidia.cudnn

        for root in nvidia.cudnn.__path__:
            path = os.path.join(root, "lib", "libcudnn.so.9")
            if os.path.exists(path):
                return ctypes.CDLL(path)
        raise


def _load() -> Any:
    """The cuDNN library with the RNN functions' signatures set, or None (the reason kept) when it cannot be used."""
    global _lib, _load_error
    if _lib is None and _load_error is None:
        try:
            dnn.module()  # raises when cudnn-frontend or libcudnn is missing
            lib = _open()
            for name, args in _SIGNATURES.items():
                fn = getattr(lib, name)
                fn.argtypes = args
                fn.restype = ctypes.c_int
            lib.cudnnGetErrorString.argtypes = (_I,)
            lib.cudnnGetErrorString.restype = ctypes.c_char_p
            _lib = lib
        except (RuntimeError, OSError, AttributeError, ImportError) as exc:
            _load_error = f"{type(exc).__name__}: {exc}"
    return _lib


def _check(status: int, what: str) -> None:
    if status:
        raise CudnnRnnError(what, status)


def _create(kind: str) -> int:
    handle = ctypes.c_void_p()
    _check(getattr(_lib, f"cudnnCreate{kind}")(ctypes.byref(handle)), f"cudnnCreate{kind}")
    return handle.value


def _int_array(values: list[int]) -> ctypes.Array:
    return (ctypes.c_int * len(values))(*values)


class _Plan:
    """cuDNN's descriptors and sizes for one layer shape, the packed weight layout, and the copies into it."""

    def __init__(self, mode: str, dtype: dtypes.dtype, sizes: tuple[int, ...], I: int, H: int, P: int,
                 has_bias: bool, math: int, device: Any) -> None:
        self.mode, self.dtype, self.device = mode, dtype, device
        T, B = len(sizes), sizes[0]
        self.N, self.I, self.H, self.P = sum(sizes), I, H, P
        self._descs: list[tuple[str, int]] = []
        dt = _DATA_TYPE[dtype]
        self.rnn = self._new("RNNDescriptor")
        _check(_lib.cudnnSetRNNDescriptor_v8(
            self.rnn, _ALGO_STANDARD, _CELL[mode], _DOUBLE_BIAS if has_bias else _NO_BIAS, _UNIDIRECTIONAL,
            _LINEAR_INPUT, dt, dt if dtype.itemsize >= 4 else _DATA_TYPE[dtypes.float32], math, I, H, P, 1, None,
            0),
            "cudnnSetRNNDescriptor_v8")
        lengths = [sum(1 for b in sizes if b > k) for k in range(B)]  # each sequence's length
        host_lengths = _int_array(lengths)
        self.x_desc, self.y_desc = self._new("RNNDataDescriptor"), self._new("RNNDataDescriptor")
        for desc, width in ((self.x_desc, I), (self.y_desc, P)):
            _check(_lib.cudnnSetRNNDataDescriptor(desc, dt, _SEQ_MAJOR_PACKED, T, B, width, host_lengths, None),
                   "cudnnSetRNNDataDescriptor")
        self.h_desc, self.c_desc = self._new("TensorDescriptor"), self._new("TensorDescriptor")
        for desc, width in ((self.h_desc, P), (self.c_desc, H)):  # h is projected to P wide; c stays H wide
            _check(_lib.cudnnSetTensorNdDescriptor(desc, dt, 3, _int_array([1, B, width]),
                                                   _int_array([B * width, width, 1])), "cudnnSetTensorNdDescriptor")
        handle = dnn.handle()
        size = ctypes.c_size_t()
        _check(_lib.cudnnGetRNNWeightSpaceSize(handle, self.rnn, ctypes.byref(size)), "cudnnGetRNNWeightSpaceSize")
        self.weight_bytes = size.value
        self.scratch = {}  # forward mode -> (workspace bytes, reserve bytes)
        for fwd_mode in (_INFERENCE, _TRAINING):
            work, reserve = ctypes.c_size_t(), ctypes.c_size_t()
            _check(_lib.cudnnGetRNNTempSpaceSizes(handle, self.rnn, fwd_mode, self.x_desc, ctypes.byref(work),
                                                  ctypes.byref(reserve)), "cudnnGetRNNTempSpaceSizes")
            self.scratch[fwd_mode] = (work.value, reserve.value)
        # cuDNN's kernels read the lengths on the device.
        self.seq_lengths = from_numpy(np.array(lengths, np.int32), dtypes.int32, device)
        self.reverse_index = from_numpy(_reversal(sizes, lengths), dtypes.int64, device)
        G = recurrent_loop.GATES[mode]
        self.shapes = ((G * H, I), (G * H, P), (G * H,), (G * H,), (P, H))  # w_ih, w_hh, b_ih, b_hh, w_hr
        self.segments, self.views = self._layout(handle, has_bias)

    def _new(self, kind: str) -> int:
        desc = _create(kind)
        self._descs.append((kind, desc))
        return desc

    def _layout(self, handle: int, has_bias: bool) -> tuple[list[tuple[int, int, int, int]], list]:
        """Where each gate's matrix and bias lies in the weight space: the copies (dst offset, source, source
        offset, bytes; adjacent pieces merged) that pack (w_ih, w_hh, b_ih, b_hh, w_hr), and for each source its
        element offset in the space when it lies there in one piece (else None). cuDNN's matrix 8 is an LSTM's
        projection."""
        G = recurrent_loop.GATES[self.mode]
        I, H, P, size = self.I, self.H, self.P, self.dtype.itemsize
        space = empty((self.weight_bytes // size,), self.dtype, self.device)
        base = _ptr(space)
        m_desc, b_desc = self._new("TensorDescriptor"), self._new("TensorDescriptor")
        pieces = []
        for lin in range(2 * G + (P != H)):
            m_addr, b_addr = ctypes.c_void_p(), ctypes.c_void_p()
            _check(_lib.cudnnGetRNNWeightParams(handle, self.rnn, 0, self.weight_bytes, base, lin, m_desc,
                                                ctypes.byref(m_addr), b_desc, ctypes.byref(b_addr)),
                   "cudnnGetRNNWeightParams")
            if lin == 2 * G:  # the projection (P, H), no bias
                pieces.append((m_addr.value - base, 4, 0, P * H * size))
                continue
            gate, source = lin % G, lin // G
            width = (I, P)[source]
            pieces.append((m_addr.value - base, source, gate * H * width * size, H * width * size))
            if has_bias:
                pieces.append((b_addr.value - base, 2 + source, gate * H * size, H * size))
        segments: list[list[int]] = []
        for dst, source, src, n in sorted(pieces, key=lambda p: (p[1], p[2])):
            last = segments[-1] if segments else None
            if last and last[1] == source and last[0] + last[3] == dst and last[2] + last[3] == src:
                last[3] += n
            else:
                segments.append([dst, source, src, n])
        views = []
        for source in range(5):
            mine = [s for s in segments if s[1] == source]
            views.append(mine[0][0] // size if len(mine) == 1 else None)
        return [tuple(s) for s in segments], views

    def pack(self, weights: tuple) -> NDArray:
        """A new weight space holding ``weights`` (w_ih, w_hh, b_ih, b_hh, w_hr; contiguous)."""
        space = empty((self.weight_bytes // self.dtype.itemsize,), self.dtype, self.device)
        base, stream = _ptr(space), _stream()
        ptrs = [_ptr(w) if w is not None else 0 for w in weights]
        for dst, source, src, n in self.segments:
            rt.check(_cu.cuMemcpyDtoDAsync(base + dst, ptrs[source] + src, n, stream), "cuMemcpyDtoDAsync")
        return space

    def unpack(self, space: NDArray, source: int) -> NDArray:
        """Source ``source``'s part of a (gradient) weight space: a view where it lies in one piece, else a copy."""
        shape, offset = self.shapes[source], self.views[source]
        if offset is not None:
            return NDArray(space.buffer, shape, (shape[1], 1) if len(shape) == 2 else (1,), offset, space.dtype,
                           space.device)
        out = empty(shape, self.dtype, self.device)
        base, stream = _ptr(space), _stream()
        for dst, src_source, src, n in self.segments:
            if src_source == source:
                rt.check(_cu.cuMemcpyDtoDAsync(_ptr(out) + src, base + dst, n, stream), "cuMemcpyDtoDAsync")
        return out

    def __del__(self) -> None:
        try:
            for kind, desc in self._descs:
                getattr(_lib, f"cudnnDestroy{kind}")(desc)
        except Exception:  # interpreter shutdown: the library may be gone already
            pass


def _reversal(sizes: tuple[int, ...], lengths: list[int]) -> np.ndarray:
    """For rows laid out by steps of ``sizes`` (step t holds the first ``sizes[t]`` sequences), the row each row
    moves to when every sequence is reversed within its own length (the permutation is its own inverse)."""
    offsets = np.concatenate(([0], np.cumsum(sizes)))
    index = np.empty(int(offsets[-1]), np.int64)
    for t, b in enumerate(sizes):
        seq = np.arange(b)
        index[offsets[t]:offsets[t] + b] = offsets[np.array(lengths[:b]) - 1 - t] + seq
    return index


_cu: Any = None
_plans: dict[tuple, _Plan | None] = {}


def _math(dtype: dtypes.dtype) -> int:
    if dtype.itemsize == 2:
        return _TENSOR_OP_MATH
    if dtype is dtypes.float32 and not flags.allow_tf32:
        return _FMA_MATH
    return _DEFAULT_MATH


def _key(mode: str, dtype: dtypes.dtype, sizes: tuple[int, ...], I: int, H: int, P: int, has_bias: bool,
         device: Any) -> tuple:
    return mode, dtype, sizes, I, H, P, has_bias, _math(dtype), device


def _plan(mode: str, dtype: dtypes.dtype, sizes: tuple[int, ...], I: int, H: int, P: int, has_bias: bool,
          device: Any, backward: bool = False) -> _Plan | None:
    """The cached plan for this layer, or None where cuDNN cannot run it (the time loop serves then). The backward
    of a layer cuDNN ran forward gets its plan whatever ``genesis.backends.cudnn.enabled`` says now."""
    global _cu
    if not (flags.enabled or backward) or dtype not in _DATA_TYPE or _load() is None:
        return None
    key = _key(mode, dtype, sizes, I, H, P, has_bias, device)
    if key in _plans:
        return _plans[key]
    if _cu is None:
        from cuda.bindings import driver

        _cu = driver
    rt.ensure_device(device.index)
    try:
        plan = _Plan(mode, dtype, sizes, I, H, P, has_bias, key[-2], device)
    except CudnnRnnError as exc:
        if exc.status < _NOT_SUPPORTED or exc.status >= _NOT_SUPPORTED + 1000:
            raise
        plan = None
    return remember(_plans, key, plan, 512)  # bounded: many distinct sequence lengths


def _dense(x: NDArray | None) -> NDArray | None:
    return x if x is None or _contig(x) else contiguous(x)


def rnn_layer(mode: str, x: NDArray, h0: NDArray, c0: NDArray | None, w_ih: NDArray, w_hh: NDArray,
              b_ih: NDArray | None, b_hh: NDArray | None, w_hr: NDArray | None, reverse: bool, training: bool,
              batch_sizes: tuple[int, ...] | None) -> tuple:
    """One layer-direction through ``cudnnRNNForward``; the time loop where cuDNN cannot run it. ``saved`` is
    (weight space, reserve space, input and output in cuDNN's step order)."""
    check_same_device("rnn_layer", x, h0, c0, w_ih, w_hh, b_ih, b_hh, w_hr)
    P = h0.shape[-1]
    H = w_hh.shape[0] // recurrent_loop.GATES[mode]
    flat, sizes = recurrent_loop.as_rows(x, batch_sizes)
    key = (mode, x.dtype, sizes, flat.shape[1], H, P, b_ih is not None, x.device)
    plan = _plan(*key) if x.size and H else None
    if plan is None:
        return recurrent_loop.rnn_layer(mode, x, h0, c0, w_ih, w_hh, b_ih, b_hh, w_hr, reverse, training,
                                        batch_sizes)
    B = sizes[0]
    xs = index_select(flat, 0, plan.reverse_index) if reverse else _dense(flat)
    space = plan.pack(tuple(_dense(w) for w in (w_ih, w_hh, b_ih, b_hh, w_hr)))
    h0, c0 = _dense(h0), _dense(c0)
    y = empty((plan.N, P), x.dtype, x.device)
    h_n = empty((B, P), x.dtype, x.device)
    c_n = empty((B, H), x.dtype, x.device) if mode == "LSTM" else None
    fwd_mode = _TRAINING if training else _INFERENCE
    work_bytes, reserve_bytes = plan.scratch[fwd_mode]
    reserve = empty((reserve_bytes,), dtypes.uint8, x.device) if reserve_bytes else None
    handle = dnn.handle()
    work = dnn.workspace(work_bytes)  # held until the call is enqueued
    status = _lib.cudnnRNNForward(
        handle, plan.rnn, fwd_mode, _ptr(plan.seq_lengths), plan.x_desc, _ptr(xs), plan.y_desc, _ptr(y),
        plan.h_desc, _ptr(h0), _ptr(h_n), plan.c_desc, _opt(c0), _opt(c_n), plan.weight_bytes, _ptr(space),
        work_bytes, dnn.pointer(work) or None, reserve_bytes, _opt(reserve))
    if _NOT_SUPPORTED <= status < _NOT_SUPPORTED + 1000:  # refused only when run: this shape takes the loop
        _plans[_key(*key)] = None
        return recurrent_loop.rnn_layer(mode, x, h0, c0, w_ih, w_hh, b_ih, b_hh, w_hr, reverse, training,
                                        batch_sizes)
    _check(status, "cudnnRNNForward")
    out = index_select(y, 0, plan.reverse_index) if reverse else y
    if batch_sizes is None:
        out = out.reshape((len(sizes), B, P))
    return out, h_n, c_n, (space, reserve, xs, y)


def _opt(x: NDArray | None) -> int | None:
    return _ptr(x) if x is not None else None


def rnn_layer_backward(mode: str, grad_out: NDArray | None, grad_h: NDArray | None, grad_c: NDArray | None,
                       x: NDArray, h0: NDArray, c0: NDArray | None, w_ih: NDArray, w_hh: NDArray,
                       w_hr: NDArray | None, out: NDArray, saved: tuple, reverse: bool, has_bias: bool, mask: tuple,
                       batch_sizes: tuple[int, ...] | None) -> tuple:
    """The gradients of :func:`rnn_layer` through ``cudnnRNNBackwardData_v8`` and ``cudnnRNNBackwardWeights_v8``."""
    if len(saved) == 2:  # the forward ran the time loop
        return recurrent_loop.rnn_layer_backward(mode, grad_out, grad_h, grad_c, x, h0, c0, w_ih, w_hh, w_hr, out,
                                                 saved, reverse, has_bias, mask, batch_sizes)
    space, reserve, xs, y = saved
    if reserve is None:
        raise RuntimeError("rnn_layer_backward: the forward pass ran without recording (no reserve space)")
    P = h0.shape[-1]
    H = w_hh.shape[0] // recurrent_loop.GATES[mode]
    flat, sizes = recurrent_loop.as_rows(x, batch_sizes)
    N, I = flat.shape
    B = sizes[0]
    plan = _plan(mode, x.dtype, sizes, I, H, P, has_bias, x.device, backward=True)
    if grad_out is None:
        dy = full((N, P), 0, x.dtype, x.device)
    else:
        grad_out = grad_out.reshape((N, P))
        dy = index_select(grad_out, 0, plan.reverse_index) if reverse else _dense(grad_out)
    h0, c0 = _dense(h0), _dense(c0)
    dx = empty((N, I), x.dtype, x.device)
    dh0 = empty((B, P), x.dtype, x.device) if mask[1] else None
    dc0 = empty((B, H), x.dtype, x.device) if mode == "LSTM" and mask[2] else None
    work_bytes, reserve_bytes = plan.scratch[_TRAINING]
    handle = dnn.handle()
    work = dnn.workspace(work_bytes)  # held until both calls below are enqueued
    work_ptr = dnn.pointer(work) or None
    _check(_lib.cudnnRNNBackwardData_v8(
        handle, plan.rnn, _ptr(plan.seq_lengths), plan.y_desc, _ptr(y), _ptr(dy), plan.x_desc, _ptr(dx),
        plan.h_desc, _ptr(h0), _opt(_dense(grad_h)), _opt(dh0), plan.c_desc, _opt(c0), _opt(_dense(grad_c)),
        _opt(dc0), plan.weight_bytes, _ptr(space), work_bytes, work_ptr, reserve_bytes, _ptr(reserve)),
        "cudnnRNNBackwardData_v8")
    grads = [None] * 5  # w_ih, w_hh, b_ih, b_hh, w_hr
    sources = [0, 1] + ([2, 3] if has_bias else []) + ([4] if w_hr is not None else [])
    wanted = [source for source in sources if mask[3 + source]]
    if wanted:
        d_space = full(space.shape, 0, x.dtype, x.device)  # cuDNN adds the weight gradients into it
        _check(_lib.cudnnRNNBackwardWeights_v8(
            handle, plan.rnn, _WGRAD_ADD, _ptr(plan.seq_lengths), plan.x_desc, _ptr(xs), plan.h_desc, _ptr(h0),
            plan.y_desc, _ptr(y), plan.weight_bytes, _ptr(d_space), work_bytes, work_ptr, reserve_bytes, _ptr(reserve)),
            "cudnnRNNBackwardWeights_v8")
        for source in wanted:
            grads[source] = plan.unpack(d_space, source)
    if not mask[0]:
        dx = None
    elif reverse:
        dx = index_select(dx, 0, plan.reverse_index)
    if dx is not None and batch_sizes is None:
        dx = dx.reshape(x.shape)
    return (dx, dh0, dc0, *grads)
