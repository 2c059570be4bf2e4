"""The ``cholesky``, ``triangular_solve``, ``lu_factor``, ``pivot_order``, ``eigh``, ``svd`` and ``qr`` primitives
of the CUDA backend: cuSOLVER's ``potrf``, ``getrf``, ``syevd``, ``gesvd``, ``geqrf`` and ``orgqr`` and cuBLAS's
``trsm`` (``nvmath.bindings``,
plain int pointers), queued on Genesis's current stream with no host wait.

Genesis arrays are row-major and these libraries column-major: a row-major matrix read column-major is its
transpose. So the lower Cholesky factor of a row-major A is cuSOLVER's *upper* factor of the same memory (A is
symmetric; ``A = U^T U`` with ``U^T`` read row-major as L), and a row-major ``A X = B`` is the column-major
``X^T A^T = B^T``: ``trsm`` from the right, with the triangle flipped. Neither copies a matrix beyond the result
itself. LU with row pivoting needs A itself column-major: ``getrf`` factors a transposed copy, and the factors are
transposed back. Batches run one library call per matrix (a batch is a loop on the host, each call a few microseconds).
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np
from nvmath.bindings import cublas, cusolverDn

from genesis import dtypes
from genesis._impl.cuda import runtime as rt
from genesis._impl.cuda import storage
from genesis._impl.cuda import triton_driver as td
from genesis._impl.cuda.creation import arange, contiguous, copy_, full
from genesis._impl.cuda.elementwise import binary, triangle, where
from genesis._impl.cuda.kernels import index as ik
from genesis._impl.cuda.launch import _contig, _new, _next_pow2, _psig, _ptr, _stream
from genesis._impl.cuda.reductions import arg_reduce, reduce
from genesis.ndarray import NDArray

_LOWER, _UPPER = 0, 1  # cublasFillMode_t
_LEFT, _RIGHT = 0, 1  # cublasSideMode_t
_OP_N = 0
_NON_UNIT, _UNIT = 0, 1
_VECTORS = 1  # cusolverEigMode_t: eigenvalues and eigenvectors
_SOME = ord("S")  # gesvd's jobu / jobvt: the first min(m, n) singular vectors
_ONE = {dtypes.float32: np.ones(1, np.float32), dtypes.float64: np.ones(1, np.float64)}  # trsm's alpha (host)

_handles: dict[int, tuple[int, int]] = {}  # device -> (cuSOLVER handle, cuBLAS handle), kept for the process


def _libraries(device: int) -> tuple[int, int]:
    """The device's cuSOLVER and cuBLAS handles, set to the current stream."""
    handles = _handles.get(device)
    if handles is None:
        rt.ensure_device(device)
        handles = _handles[device] = (cusolverDn.create(), cublas.create())
    stream = _stream()
    cusolverDn.set_stream(handles[0], stream)
    cublas.set_stream(handles[1], stream)
    return handles


def _routine(A: NDArray, name: str, *size_args: object) -> tuple[int, Callable, int, storage.CudaStorage]:
    """For cuSOLVER routine ``name`` (``potrf``, ``getrf``...) on ``A``'s dtype: the handle, the routine's float32
    or float64 variant, its workspace size in elements for ``size_args`` and a workspace of that size."""
    solver, _ = _libraries(A.device.index)
    variant = ("d" if A.dtype is dtypes.float64 else "s") + name
    size = getattr(cusolverDn, variant + "_buffer_size")(solver, *size_args)
    return solver, getattr(cusolverDn, variant), size, storage.alloc(max(size, 1) * A.dtype.itemsize, A.device.index)


def _check_real(op: str, x: NDArray) -> None:
    if x.dtype not in _ONE:
        raise RuntimeError(f"{op}: the CUDA backend factors float32 and float64 matrices, got {x.dtype.name}")


def cholesky(A: NDArray) -> tuple[NDArray, NDArray]:
    _check_real("cholesky", A)
    n = A.shape[-1]
    batch = A.shape[:-2]
    count = math.prod(batch)
    L = contiguous(A)  # factored in place: a copy of A's memory
    info = _new(batch, dtypes.int32, A.device)
    if not (count and n):
        return L, info
    solver, potrf, size, work = _routine(A, "potrf", _UPPER, n, _ptr(L), n)
    step = n * n * A.dtype.itemsize
    base, info_base = _ptr(L), _ptr(info)
    for i in range(count):
        potrf(solver, _UPPER, n, base + i * step, n, work.ptr, size, info_base + 4 * i)
    # potrf leaves the other triangle as it was: zero it, as LAPACK's callers (and torch) do.
    rows = arange(0, n, 1, dtypes.int64, A.device)
    below = binary("ge", rows.reshape((n, 1)), rows.reshape((1, n)))
    L = where(below, L, 0.0)
    # LAPACK fails on a NaN pivot (NaN spreads to the pivots after it); potrf does not check: report the first.
    diagonal = L.diagonal(0, -2, -1)
    nan = binary("ne", diagonal, diagonal)
    first = binary("add", arg_reduce("argmax", nan.astype(dtypes.int32), nan.ndim - 1, False), 1).astype(dtypes.int32)
    missed = binary("logical_and", binary("eq", info, 0), reduce("any", nan, (nan.ndim - 1,), False))
    return L, where(missed, first, info)


def triangular_solve(A: NDArray, B: NDArray, upper: bool, unitriangular: bool) -> NDArray:
    _check_real("triangular_solve", A)
    n, k = B.shape[-2], B.shape[-1]
    count = math.prod(B.shape[:-2])
    X = contiguous(B)  # solved in place
    if not (count and n and k):
        return X
    A = A if _contig(A) else contiguous(A)
    _, handle = _libraries(A.device.index)
    trsm = cublas.dtrsm if A.dtype is dtypes.float64 else cublas.strsm
    # Column-major: X^T A^T = B^T, A^T lower where A is upper.
    uplo = _LOWER if upper else _UPPER
    diag = _UNIT if unitriangular else _NON_UNIT
    alpha = _ONE[A.dtype].ctypes.data
    a_base, x_base = _ptr(A), _ptr(X)
    a_step, x_step = n * n * A.dtype.itemsize, n * k * X.dtype.itemsize
    for i in range(count):
        trsm(handle, _RIGHT, uplo, _OP_N, diag, k, n, alpha, a_base + i * a_step, n, x_base + i * x_step, k)
    return X


def eigh(A: NDArray) -> tuple[NDArray, NDArray]:
    _check_real("eigh", A)
    n = A.shape[-1]
    batch = A.shape[:-2]
    count = math.prod(batch)
    vectors = contiguous(A)  # symmetric: the same matrix read column-major; syevd leaves the eigenvectors in it
    values = _new((*batch, n), A.dtype, A.device)
    if count and n:
        solver, syevd, size, work = _routine(A, "syevd", _VECTORS, _LOWER, n, _ptr(vectors), n, _ptr(values))
        info = _new((count,), dtypes.int32, A.device)
        step, base, value_base = n * n * A.dtype.itemsize, _ptr(vectors), _ptr(values)
        for i in range(count):
            syevd(solver, _VECTORS, _LOWER, n, base + i * step, n, value_base + i * n * A.dtype.itemsize, work.ptr,
                  size, _ptr(info) + 4 * i)
    # Column j of the column-major result is eigenvector j: row j of this memory read row-major.
    return values, contiguous(vectors.transpose(-2, -1))


def svd(A: NDArray) -> tuple[NDArray, NDArray, NDArray]:
    _check_real("svd", A)
    m, n = A.shape[-2], A.shape[-1]
    batch = A.shape[:-2]
    count = math.prod(batch)
    work_a = contiguous(A.transpose(-2, -1))  # A column-major (gesvd wants m >= n: A is tall)
    S = _new((*batch, n), A.dtype, A.device)
    U = _new((*batch, n, m), A.dtype, A.device)  # column-major (m, n): row-major U^T
    Vt = _new((*batch, n, n), A.dtype, A.device)  # column-major Vh: row-major V
    if count and n:
        solver, gesvd, size, work = _routine(A, "gesvd", m, n)
        item = A.dtype.itemsize
        unconverged = storage.alloc(max(n - 1, 1) * item, A.device.index)  # gesvd's rwork
        info = _new((count,), dtypes.int32, A.device)
        for i in range(count):
            gesvd(solver, _SOME, _SOME, m, n, _ptr(work_a) + i * m * n * item, m, _ptr(S) + i * n * item,
                  _ptr(U) + i * m * n * item, m, _ptr(Vt) + i * n * n * item, n, work.ptr, size, unconverged.ptr,
                  _ptr(info) + 4 * i)
    return contiguous(U.transpose(-2, -1)), S, contiguous(Vt.transpose(-2, -1))


def qr(A: NDArray, complete: bool) -> tuple[NDArray, NDArray]:
    """``geqrf`` on a column-major copy of A (R above its diagonal, the reflectors below), then ``orgqr`` on a copy
    of the reflectors' columns (zero columns appended for a complete Q of a tall A) builds Q."""
    _check_real("qr", A)
    m, n = A.shape[-2], A.shape[-1]
    k = min(m, n)
    cols = m if complete else k  # Q's columns; R has as many rows
    batch = A.shape[:-2]
    count = math.prod(batch)
    item = A.dtype.itemsize
    factors = contiguous(A.transpose(-2, -1))  # (..., n, m) row-major: A column-major, factored in place
    tau = _new((*batch, k), A.dtype, A.device)
    info = _new((max(count, 1),), dtypes.int32, A.device)
    if count:
        solver, geqrf, size, work = _routine(A, "geqrf", m, n, _ptr(factors), m)
        for i in range(count):
            geqrf(solver, m, n, _ptr(factors) + i * m * n * item, m, _ptr(tau) + i * k * item, work.ptr, size,
                  _ptr(info) + 4 * i)
    fact = factors.transpose(-2, -1)  # (..., m, n) row-major view of the factored matrix
    R = triangle(fact.narrow(-2, 0, cols) if cols < m else fact, 0, True)
    if cols <= n:
        Q = contiguous(factors.narrow(-2, 0, cols))  # the first cols columns, column-major
    else:
        Q = full((*batch, cols, m), 0.0, A.dtype, A.device)
        copy_(Q.narrow(-2, 0, n), factors)
    if count:
        solver, orgqr, size, work = _routine(A, "orgqr", m, cols, k, _ptr(Q), m, _ptr(tau))
        for i in range(count):
            orgqr(solver, m, cols, k, _ptr(Q) + i * m * cols * item, m, _ptr(tau) + i * k * item, work.ptr, size,
                  _ptr(info) + 4 * i)
    return contiguous(Q.transpose(-2, -1)), R


def lu_factor(A: NDArray) -> tuple[NDArray, NDArray, NDArray]:
    _check_real("lu_factor", A)
    n = A.shape[-1]
    batch = A.shape[:-2]
    count = math.prod(batch)
    factors = contiguous(A.transpose(-2, -1))  # A column-major, factored in place
    pivots = _new((*batch, n), dtypes.int32, A.device)
    info = _new(batch, dtypes.int32, A.device)
    if count and n:
        solver, getrf, size, work = _routine(A, "getrf", n, n, _ptr(factors), n)
        step = n * n * A.dtype.itemsize
        base, pivot_base, info_base = _ptr(factors), _ptr(pivots), _ptr(info)
        for i in range(count):
            getrf(solver, n, n, base + i * step, n, work.ptr, pivot_base + 4 * n * i, info_base + 4 * i)
    return contiguous(factors.transpose(-2, -1)), pivots, info


_PIVOT_ORDER = td.Kernel(ik.pivot_order_kernel)


def pivot_order(pivots: NDArray, m: int) -> NDArray:
    k = pivots.shape[-1]
    order = _new((*pivots.shape[:-1], m), dtypes.int64, pivots.device)
    count = math.prod(pivots.shape[:-1])
    if not (count and m):
        return order
    rt.ensure_device(pivots.device.index)
    pivots = pivots if _contig(pivots) else contiguous(pivots)
    p, q = _ptr(pivots), _ptr(order)
    go = _PIVOT_ORDER.launcher((_psig(pivots, p), _psig(order, q), "i32", "i32"), (max(_next_pow2(m), 16),), 4)
    go(count, 1, 1, p, q, k, m)
    return order
