"""The ``matmul`` and ``linear`` primitives of the CUDA backend: matrix products through cuBLASLt
(``nvmath.bindings.cublasLt``, plain int pointers).

Genesis arrays are row-major; cuBLASLt is column-major. A row-major ``D = A @ B`` is the column-major
``D^T = B^T @ A^T``, so the operands are passed swapped and nothing is transposed in memory. A transposed view (unit
stride on its row axis) becomes a transpose flag with its own leading dimension, never a copy. Batched products use
strided batches (a stride of 0 broadcasts an operand). Plans (descriptors, layouts and the heuristic's algorithm)
are cached per shape, dtype, layout, alignment and TF32 setting; the workspace comes from the caching allocator.
"""

from __future__ import annotations

import math

import numpy as np
from nvmath.bindings import cublasLt as lt

from genesis import dtypes
from genesis._impl.cuda import runtime as rt
from genesis._impl.cuda import storage
from genesis._impl.cuda import triton_driver as td
from genesis._impl.cuda.creation import contiguous
from genesis._impl.cuda.elementwise import binary
from genesis._impl.cuda.kernels import reduce as rk
from genesis._impl.cuda.launch import _cstrides, _ew, _new, _psig, _ptr, _stream, part, real_view
from genesis.backends import cuda as cuda_switches
from genesis.memo import remember
from genesis.ndarray import NDArray

# cudaDataType_t and cublasComputeType_t values (library_types.h, cublas_api.h).
_CUDA_R_32F, _CUDA_R_64F, _CUDA_R_16F, _CUDA_R_16BF = 0, 1, 2, 14
_COMPUTE_32F, _COMPUTE_64F, _COMPUTE_32F_FAST_TF32 = 68, 70, 77
_DATA = {dtypes.float32: _CUDA_R_32F, dtypes.float64: _CUDA_R_64F, dtypes.float16: _CUDA_R_16F,
         dtypes.bfloat16: _CUDA_R_16BF}
_WORKSPACE = 32 << 20
_OP_N, _OP_T = 0, 1

class _Handle:
    def __init__(self, device: int) -> None:
        self.handle = lt.create()
        self.workspace = storage.alloc(_WORKSPACE, device)  # kept for the process lifetime


_handles: dict[int, _Handle] = {}


def _attr_buf(kind: str, attr: object, value: int) -> np.ndarray:
    getter = {"desc": lt.get_matmul_desc_attribute_dtype, "layout": lt.get_matrix_layout_attribute_dtype,
              "pref": lt.get_matmul_preference_attribute_dtype}[kind]
    return np.array([value], dtype=getter(attr))


def _set(kind: str, obj: int, attr: object, value: int) -> None:
    buf = _attr_buf(kind, attr, value)
    setter = {"desc": lt.matmul_desc_set_attribute, "layout": lt.matrix_layout_set_attribute,
              "pref": lt.matmul_preference_set_attribute}[kind]
    setter(obj, attr, buf.ctypes.data, buf.itemsize)


class _Plan:
    """Everything cuBLASLt needs for one product shape, built once."""

    def __init__(self, h: _Handle, dtype: dtypes.dtype, a_lay: tuple, b_lay: tuple, m: int, n: int, batch: int,
                 align: tuple[int, int, int], tf32: bool, bias: bool) -> None:
        data = _DATA[dtype]
        if dtype is dtypes.float64:
            compute, scale = _COMPUTE_64F, _CUDA_R_64F
        else:
            compute = _COMPUTE_32F_FAST_TF32 if (tf32 and dtype is dtypes.float32) else _COMPUTE_32F
            scale = _CUDA_R_32F
        self.desc = lt.matmul_desc_create(compute, scale)
        D = lt.MatmulDescAttribute
        # cuBLAS A := Genesis B, cuBLAS B := Genesis A (column-major view of row-major data).
        (b_rows, b_cols, b_ld, b_op, b_bs), (a_rows, a_cols, a_ld, a_op, a_bs) = b_lay, a_lay
        _set("desc", self.desc, D.TRANSA, b_op)
        _set("desc", self.desc, D.TRANSB, a_op)
        if bias:
            _set("desc", self.desc, D.EPILOGUE, int(lt.Epilogue.BIAS))
            _set("desc", self.desc, D.BIAS_DATA_TYPE, data)
        L = lt.MatrixLayoutAttribute
        self.la = lt.matrix_layout_create(data, b_rows, b_cols, b_ld)
        self.lb = lt.matrix_layout_create(data, a_rows, a_cols, a_ld)
        self.lc = lt.matrix_layout_create(data, n, m, n)
        if batch > 1:
            for lay, bs in ((self.la, b_bs), (self.lb, a_bs), (self.lc, m * n)):
                _set("layout", lay, L.BATCH_COUNT, batch)
                _set("layout", lay, L.STRIDED_BATCH_OFFSET, bs)
        P = lt.MatmulPreferenceAttribute
        pref = lt.matmul_preference_create()
        _set("pref", pref, P.MAX_WORKSPACE_BYTES, _WORKSPACE)
        _set("pref", pref, P.MIN_ALIGNMENT_A_BYTES, align[1])
        _set("pref", pref, P.MIN_ALIGNMENT_B_BYTES, align[0])
        _set("pref", pref, P.MIN_ALIGNMENT_C_BYTES, align[2])
        _set("pref", pref, P.MIN_ALIGNMENT_D_BYTES, align[2])
        self.results = np.zeros(8, dtype=lt.matmul_heuristic_result_dtype)
        count = np.zeros(1, dtype=np.int32)
        lt.matmul_algo_get_heuristic(h.handle, self.desc, self.la, self.lb, self.lc, self.lc, pref, 8,
                                     self.results.ctypes.data, count.ctypes.data)
        lt.matmul_preference_destroy(pref)
        if count[0] == 0:
            raise RuntimeError(f"matmul: cuBLASLt found no algorithm for {dtype} ({m}x{n}, batch {batch})")
        self.algo = self.results.ctypes.data  # the first result: the heuristic's choice
        if dtype is dtypes.float64:
            self.alpha, self.beta = np.ones(1, np.float64), np.zeros(1, np.float64)
        else:
            self.alpha, self.beta = np.ones(1, np.float32), np.zeros(1, np.float32)
        self.alpha_p, self.beta_p = self.alpha.ctypes.data, self.beta.ctypes.data
        self.handle = h.handle
        self.ws = h.workspace.ptr
        self.bias_attr = D.BIAS_POINTER
        # The bias pointer changes per call: one buffer per plan, rewritten and handed to cuBLASLt (which copies it).
        self.bias_ptr = _attr_buf("desc", D.BIAS_POINTER, 0)
        self.bias_ptr_p = self.bias_ptr.ctypes.data


def _layout(x: NDArray, rows: int, cols: int, batch_strides: tuple[int, ...]) -> tuple | None:
    """(cublas rows, cols, ld, op, batch stride) of a row-major (rows, cols) operand, or None if it needs a copy."""
    rs, cs = x.strides[-2], x.strides[-1]
    if rows == 1:
        rs = cols
    if cols == 1:
        cs = 1
    bs = _batch_stride(x.shape[:-2], batch_strides)
    if bs is None:
        return None
    if cs == 1 and rs >= max(1, cols):
        # Row-major: column-major (cols x rows) with ld = row stride, used as is.
        return (cols, rows, max(rs, 1), _OP_N, bs)
    if rs == 1 and cs >= max(1, rows):
        # Transposed view: column-major (rows x cols) with ld = column stride, transposed by cuBLASLt.
        return (rows, cols, max(cs, 1), _OP_T, bs)
    return None


def _batch_stride(shape: tuple[int, ...], strides: tuple[int, ...]) -> int | None:
    """One stride that walks all batch dims (0 for a broadcast operand), or None."""
    dims = [(n, s) for n, s in zip(shape, strides) if n != 1]
    if not dims:
        return 0
    if all(s == 0 for _, s in dims):
        return 0
    for (_n0, s0), (n1, s1) in zip(dims, dims[1:]):
        if s0 != s1 * n1:
            return None
    return dims[-1][1]


def _align(ptr: int, itemsize: int) -> int:
    """The largest power of two up to 256 dividing ``ptr`` (the lowest set bit), at least ``itemsize``."""
    low = ptr & -ptr
    return 256 if low > 256 or not ptr else max(low, itemsize)


_LAYOUTS: dict[tuple, tuple | None] = {}


def _layout_of(x: NDArray, rows: int, cols: int) -> tuple | None:
    """``_layout`` of ``x`` as a (rows, cols) operand, cached by its shape and strides."""
    key = (x.shape, x.strides)
    lay = _LAYOUTS.get(key, False)
    if lay is False:
        lay = remember(_LAYOUTS, key, _layout(x, rows, cols, x.strides[:-2]))
    return lay


def _gemm(a: NDArray, b: NDArray, bias: NDArray | None = None) -> NDArray:
    """(..., M, K) @ (..., K, N) with equal batch dims; ``bias`` (N,) is added by the epilogue (2-D only).

    A product whose operands were seen before with the same shapes, strides, dtype and pointer alignments takes
    its plan and output layout from ``_LAUNCHES`` in one lookup: the host cost of a repeated product is then little
    more than cuBLASLt's own."""
    dtype = a.dtype
    isz = dtype.itemsize
    pa = a.buffer.ptr + a.offset * isz
    pb = b.buffer.ptr + b.offset * isz
    dev = a.device.index
    key = (a.shape, a.strides, b.shape, b.strides, dtype, pa & 255, pb & 255, bias is None,
           cuda_switches.matmul.allow_tf32, dev)
    launch = _LAUNCHES.get(key)
    if launch is None:
        return _gemm_first(a, b, bias, key)
    plan, shape, strides, nbytes = launch
    if rt.state.device != dev:
        rt.set_device(dev)
    out = NDArray(storage.alloc(nbytes, dev), shape, strides, 0, dtype, a.device, True)
    pc = out.buffer.ptr
    if bias is not None:
        plan.bias_ptr[0] = bias.buffer.ptr + bias.offset * isz
        lt.matmul_desc_set_attribute(plan.desc, plan.bias_attr, plan.bias_ptr_p, plan.bias_ptr.itemsize)
    s = rt.state.streams.get(dev)
    lt.matmul(plan.handle, plan.desc, plan.alpha_p, pb, plan.la, pa, plan.lb, plan.beta_p, pc, plan.lc, pc,
              plan.lc, plan.algo, plan.ws, _WORKSPACE, 0 if s is None else s.handle)
    return out


# (operand shapes and strides, dtype, pointer alignments, bias, TF32, device) -> (plan, output shape, strides,
# bytes) of the products that need no copy of an operand.
_LAUNCHES: dict[tuple, tuple] = {}


def _gemm_first(a: NDArray, b: NDArray, bias: NDArray | None, key: tuple) -> NDArray:
    """``_gemm`` of operands not seen before in this layout: plans it (copying an operand cuBLASLt cannot read as
    it is) and, when no copy was needed, keeps the launch in ``_LAUNCHES``."""
    dtype = a.dtype
    if dtype not in _DATA and dtype.category == 1 and bias is None:
        return _int_matmul(a, b)
    if dtype not in _DATA:
        raise RuntimeError(f"matmul: not implemented for '{dtype.name}' on CUDA (floating and integer types are "
                           "supported)")
    M, K = a.shape[-2], a.shape[-1]
    N = b.shape[-1]
    batch_shape = a.shape[:-2]
    batch = math.prod(batch_shape)
    out = _new(batch_shape + (M, N), dtype, a.device)
    if out.size == 0:
        return out
    if K == 0:
        return _ew("copy", 1, out, (0.0,), dtype)
    dev = a.device.index
    rt.ensure_device(dev)
    la, lb = _layout_of(a, M, K), _layout_of(b, K, N)
    direct = la is not None and lb is not None
    if la is None:
        a = contiguous(a)
        la = _layout_of(a, M, K)
    if lb is None:
        b = contiguous(b)
        lb = _layout_of(b, K, N)
    pa, pb, pc = _ptr(a), _ptr(b), _ptr(out)
    isz = dtype.itemsize
    align = (_align(pa, isz), _align(pb, isz), _align(pc, isz))
    h = _handles.get(dev)
    if h is None:
        h = _handles[dev] = _Handle(dev)
    # fp32 products use TF32 tensor cores only where torch's switch allows it (off by default).
    allow_tf32 = cuda_switches.matmul.allow_tf32
    launch_key = key
    key = (dev, dtype, la, lb, M, N, batch, align, allow_tf32, bias is not None)
    plan = _plans.get(key)
    if plan is None:
        plan = _plans[key] = _Plan(h, dtype, la, lb, M, N, batch, align, allow_tf32, bias is not None)
    if direct and pc & 255 == 0:  # a fresh output is always so aligned: the next call needs no planning
        remember(_LAUNCHES, launch_key, (plan, out.shape, out.strides, out.buffer.nbytes))
    if bias is not None:
        plan.bias_ptr[0] = _ptr(bias)
        lt.matmul_desc_set_attribute(plan.desc, plan.bias_attr, plan.bias_ptr_p, plan.bias_ptr.itemsize)
    lt.matmul(plan.handle, plan.desc, plan.alpha_p, pb, plan.la, pa, plan.lb, plan.beta_p, pc, plan.lc, pc,
              plan.lc, plan.algo, plan.ws, _WORKSPACE, _stream())
    return out


_plans: dict[tuple, _Plan] = {}


def matmul(a: NDArray, b: NDArray) -> NDArray:
    """(..., M, K) @ (..., K, N) with equal batch dims."""
    if a.dtype.category == 3:
        return _complex_matmul(a, b)
    return _gemm(a, b)


def _complex_matmul(a: NDArray, b: NDArray) -> NDArray:
    """A complex product as one real product of twice the size in K and N, with no planar copies of ``a`` and none
    of the result.

    Row m of ``a``'s real view is (re a_m0, im a_m0, re a_m1, ...), a (M, 2K) real matrix. ``b`` becomes the real
    (2K, 2N) matrix whose 2x2 block (k, n) is [[re b, im b], [-im b, re b]]; their product's row m is then
    (re c_m0, im c_m0, re c_m1, ...): the interleaved result, each part one dot product of length 2K summed by
    cuBLASLt in the parts' precision (four real products' worth of work, without the Gauss trick's cancellation).
    """
    batch, (M, K), N = a.shape[:-2], a.shape[-2:], b.shape[-1]
    real = a.dtype.to_real
    if a.strides[-1] != 1 and K > 1:
        a = contiguous(a)
    ar = real_view(a)
    a2 = NDArray(ar.buffer, batch + (M, 2 * K), ar.strides[:-3] + (ar.strides[-3], 1), ar.offset, real, a.device)
    # A b broadcast over the batch (every batch stride 0) gives one real matrix, broadcast the same way.
    shared = all(s == 0 for n, s in zip(batch, b.strides[:-2]) if n != 1)
    bb = NDArray(b.buffer, b.shape[-2:], b.strides[-2:], b.offset, b.dtype, b.device) if shared and batch else b
    lead = bb.shape[:-2]
    b4 = _new(lead + (K, 2, N, 2), real, a.device)
    st = b4.strides
    blocks = [NDArray(b4.buffer, lead + (K, N), st[:-4] + (st[-4], st[-2]), off, real, a.device)
              for off in (0, 1, st[-3], st[-3] + 1)]  # the (k, n) blocks' entries [0, 0], [0, 1], [1, 0], [1, 1]
    _ew("copy", 1, blocks[0], (part(bb, 0),))
    _ew("copy", 1, blocks[1], (part(bb, 1),))
    _ew("neg", 1, blocks[2], (part(bb, 1),))
    _ew("copy", 1, blocks[3], (part(bb, 0),))
    b2 = b4.reshape(lead + (2 * K, 2 * N))
    if len(lead) != len(batch):
        b2 = b2.expand(batch + (2 * K, 2 * N))
    out = _gemm(a2, b2)  # (..., M, 2N), row-major
    shape = batch + (M, N)
    return NDArray(out.buffer, shape, _cstrides(shape), 0, a.dtype, a.device, True)


def linear(x: NDArray, w: NDArray, bias: NDArray | None) -> NDArray:
    """``x @ w.T + bias`` for 2-D x (M, K) and w (N, K)."""
    if bias is None:
        return _gemm(x, w.transpose(0, 1))
    # cuBLASLt's bias epilogue adds the bias before the output is rounded: one kernel instead of two. It takes a
    # dense bias of the output's dtype at an aligned address; anything else gets a separate add.
    if x.dtype in _DATA and bias.dtype is x.dtype and bias.strides[-1] == 1 and _ptr(bias) % 16 == 0 \
            and x.shape[1]:
        return _gemm(x, w.transpose(0, 1), bias)
    out = _gemm(x, w.transpose(0, 1))
    return binary("add", out, bias, out=out)


_INT_MATMUL = td.Kernel(rk.int_matmul_kernel)


def _int_matmul(a: NDArray, b: NDArray) -> NDArray:
    """Integer products with a Triton kernel (exact, wrapping like the CPU)."""
    M, K, N = a.shape[-2], a.shape[-1], b.shape[-1]
    batch_shape = a.shape[:-2]
    batch = math.prod(batch_shape)
    out = _new(batch_shape + (M, N), a.dtype, a.device)
    if out.size == 0:
        return out
    sab = _batch_stride(batch_shape, a.strides[:-2])
    if sab is None:
        a = contiguous(a)
        sab = _batch_stride(batch_shape, a.strides[:-2])
    sbb = _batch_stride(batch_shape, b.strides[:-2])
    if sbb is None:
        b = contiguous(b)
        sbb = _batch_stride(batch_shape, b.strides[:-2])
    pa, pb, pc = _ptr(a), _ptr(b), _ptr(out)
    types = (_psig(a, pa), _psig(b, pb), _psig(out, pc), "i32", "i32", "i32") + ("i64",) * 6
    go = _INT_MATMUL.launcher(types, (16, 16, 16), 4)
    rt.ensure_device(a.device.index)
    go((M + 15) // 16, (N + 15) // 16, batch, pa, pb, pc, M, N, K, sab, a.strides[-2], a.strides[-1], sbb,
       b.strides[-2], b.strides[-1])
    return out
