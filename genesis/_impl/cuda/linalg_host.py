"""Factorizations the CUDA backend computes with LAPACK on the host: the general eigendecomposition (``geev``
through numpy) and the Bunch-Kaufman LDL factorization and solve (``sytrf`` / ``hetrf`` and ``sytrs`` / ``hetrs``
through SciPy). Each copies its operands to host memory, factors there and copies the results back: one
synchronization per call, as cuSOLVER's host-side ``geev`` would need too; these are rare, small-matrix ops."""

from __future__ import annotations

import math

import numpy as np

from genesis import dtypes
from genesis._impl.cuda.creation import from_numpy, to_numpy
from genesis.ndarray import NDArray

try:
    from scipy.linalg import lapack
except ImportError:  # SciPy is optional: only ldl_factor and ldl_solve need it
    lapack = None

_COMPLEX_OF = {dtypes.float32: dtypes.complex64, dtypes.complex64: dtypes.complex64,
               dtypes.float64: dtypes.complex128, dtypes.complex128: dtypes.complex128}


def eig(A: NDArray) -> tuple[NDArray, NDArray]:
    out = _COMPLEX_OF[A.dtype]
    host = to_numpy(A)
    if host.size:
        values, vectors = np.linalg.eig(host)
    else:
        values, vectors = np.empty(host.shape[:-1]), np.empty(host.shape)
    kind = dtypes.to_numpy(out)
    # numpy returns real arrays when every eigenvalue is real; torch's results are complex either way.
    return (from_numpy(values.astype(kind), out, A.device), from_numpy(vectors.astype(kind), out, A.device))


def _lapack(name: str, op: str, a: np.ndarray, hermitian: bool):
    if lapack is None:
        raise RuntimeError(f"{op}: on cuda this factorization runs LAPACK through SciPy, which is not installed "
                           "(pip install scipy), or move the tensors to the CPU")
    routine = name.replace("sy", "he") if hermitian and np.iscomplexobj(a) else name
    return lapack.get_lapack_funcs(routine, (a,))


def ldl_factor(A: NDArray, hermitian: bool) -> tuple[NDArray, NDArray, NDArray]:
    host = to_numpy(A)
    n = host.shape[-1]
    batch = host.shape[:-2]
    flat = host.reshape((math.prod(batch), n, n))
    LD = np.zeros_like(flat)
    pivots = np.zeros((flat.shape[0], n), np.int32)
    info = np.zeros(flat.shape[0], np.int32)
    for i, a in enumerate(flat):
        sytrf = _lapack("sytrf", "linalg.ldl_factor", a, hermitian)
        ld, piv, inf = sytrf(a, lower=1)
        LD[i], pivots[i], info[i] = np.tril(ld), piv, inf
    return (from_numpy(LD.reshape(host.shape), A.dtype, A.device),
            from_numpy(pivots.reshape(batch + (n,)), dtypes.int32, A.device),
            from_numpy(info.reshape(batch), dtypes.int32, A.device))


def ldl_solve(LD: NDArray, pivots: NDArray, B: NDArray, hermitian: bool) -> NDArray:
    ld, piv, b = to_numpy(LD), to_numpy(pivots), to_numpy(B)
    if b.size == 0:  # nothing to solve (LAPACK refuses empty matrices)
        return from_numpy(b, B.dtype, B.device)
    n, k = b.shape[-2], b.shape[-1]
    count = math.prod(b.shape[:-2])
    flat_ld, flat_piv, flat_b = ld.reshape((count, n, n)), piv.reshape((count, n)), b.reshape((count, n, k))
    X = np.empty_like(flat_b)
    for i in range(flat_b.shape[0]):
        sytrs = _lapack("sytrs", "linalg.ldl_solve", flat_ld[i], hermitian)
        X[i], _ = sytrs(flat_ld[i], flat_piv[i], flat_b[i], lower=1)
    return from_numpy(X.reshape(b.shape), B.dtype, B.device)
