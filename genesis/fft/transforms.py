"""torch.fft's transforms: ``fft``/``ifft``, ``rfft``/``irfft``, ``hfft``/``ihfft`` and their 2-D and n-D forms.

Each is a chain of the one-dim stages of :mod:`genesis.fft.dft` (matrix products, O(n^2) per transformed dim), so
each runs on every device and is differentiable. Arguments and results follow torch: ``n`` / ``s`` zero-pad or trim
the input along the transformed dims (-1 in ``s`` keeps a dim's size), ``dim`` picks the dims, ``norm`` is
"backward" (default), "forward" or "ortho". Real float32/float64 inputs give complex64/complex128, integer and bool
inputs compute in the default dtype, float16 and bfloat16 raise as on torch's CPU (autocast casts them to float32
first, as torch's does). The c2r transforms (``irfft``, ``hfft`` and their n-D forms) read only the first
``n // 2 + 1`` bins of the last dim and ignore the imaginary parts of bin 0 and, for even ``n``, bin ``n / 2``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from genesis import dtypes
from genesis.fft.dft import as_complex, as_pairs, scale_of, stage
from genesis.ndarray import normalize_dim
from genesis.ops.autocast import autocast_args
from genesis.ops.complex import view_as_real
from genesis.tensor import Tensor

Dims = int | Sequence[int] | None


def _input(op: str, input: Any) -> Tensor:
    """``input`` as the transform reads it: checked, cast by autocast's rule for ``op``."""
    if not isinstance(input, Tensor):
        raise TypeError(f"fft_{op}(): argument 'input' must be Tensor, not {type(input).__name__}")
    (input,) = autocast_args(f"fft_{op}", input)
    return input


def compute_dtype(op: str, x: Tensor) -> dtypes.dtype:
    """The real dtype a transform of ``x`` computes in (torch's promotion for its CPU FFT)."""
    d = x.dtype.to_real if x.dtype.is_complex else x.dtype
    if not d.is_floating_point:
        d = dtypes.get_default_dtype()
    if d not in (dtypes.float32, dtypes.float64):
        raise RuntimeError(f"{op}: Unsupported dtype {d} (Genesis's FFT computes in float32 or float64, as torch's on "
                           "the CPU)")
    return d


def _one_dim(op: str, x: Tensor, dim: int) -> int:
    if x.ndim == 0:
        raise IndexError(f"{op}: Dimension specified as {dim} but tensor has no dimensions")
    return normalize_dim(op, dim, x.ndim)


def _points(op: str, n: int) -> int:
    if n < 1:
        raise RuntimeError(f"{op}: Invalid number of data points ({n}) specified")
    return n


def _check_norm(op: str, norm: str | None) -> None:
    scale_of(op, norm, 1, True)  # raises for an unknown mode before any work


def _real_input(op: str, x: Tensor) -> Tensor:
    if x.dtype.is_complex:
        raise RuntimeError(f"{op} expects a real input tensor, but got {x.dtype}")
    return x.to(compute_dtype(op, x))


def _fft_1d(op: str, input: Tensor, n: int | None, dim: int, norm: str | None, sign: int, forward: bool) -> Tensor:
    """fft / ifft: complex-to-complex, or real-to-complex with every bin for a real input."""
    x = _input(op, input)
    d = _one_dim(op, x, dim)
    size = _points(op, x.shape[d] if n is None else n)
    _check_norm(op, norm)
    scale = scale_of(op, norm, size, forward)
    if x.dtype.is_complex:
        compute_dtype(op, x)
        return as_complex(stage(view_as_real(x), d, "c2c", size, sign, scale))
    return as_complex(stage(_real_input(op, x), d, "r2c", size, sign, scale))


def _r2c_1d(op: str, input: Tensor, n: int | None, dim: int, norm: str | None, sign: int, forward: bool) -> Tensor:
    """rfft / ihfft: the half spectrum of a real signal (ihfft's is the conjugate, of the inverse transform)."""
    x = _real_input(op, _input(op, input))
    d = _one_dim(op, x, dim)
    size = _points(op, x.shape[d] if n is None else n)
    _check_norm(op, norm)
    return as_complex(stage(x, d, "rfft", size, sign, scale_of(op, norm, size, forward)))


def _c2r_1d(op: str, input: Tensor, n: int | None, dim: int, norm: str | None, sign: int, forward: bool) -> Tensor:
    """irfft / hfft: ``n`` real samples (default ``2 * (bins - 1)``) from a half spectrum (hfft's conjugated)."""
    x = _input(op, input)
    d = _one_dim(op, x, dim)
    size = _points(op, 2 * (x.shape[d] - 1) if n is None else n)
    _check_norm(op, norm)
    return stage(as_pairs(x, compute_dtype(op, x)), d, "c2r", size, sign, scale_of(op, norm, size, forward))


def fft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The one-dimensional discrete Fourier transform ``X[k] = sum_j x[j] exp(-2 pi i j k / n)`` along ``dim``;
    ``n`` zero-pads or trims the input first. Returns a complex tensor (every bin, also for real input)."""
    return _fft_1d("fft", input, n, dim, norm, -1, True)


def ifft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The inverse of :func:`fft`: ``x[j] = 1/n sum_k X[k] exp(2 pi i j k / n)`` (with ``norm="backward"``)."""
    return _fft_1d("ifft", input, n, dim, norm, 1, False)


def rfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The Fourier transform of a real signal: the ``n // 2 + 1`` non-negative frequency bins (the others are their
    conjugates)."""
    return _r2c_1d("rfft", input, n, dim, norm, -1, True)


def irfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The inverse of :func:`rfft`: ``n`` real samples (default ``2 * (input.shape[dim] - 1)``) from the
    non-negative frequency bins of a Hermitian-symmetric spectrum."""
    return _c2r_1d("irfft", input, n, dim, norm, 1, False)


def hfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The Fourier transform of a Hermitian-symmetric signal given by its first half: a real spectrum of ``n``
    points (default ``2 * (input.shape[dim] - 1)``)."""
    return _c2r_1d("hfft", input, n, dim, norm, -1, True)


def ihfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The inverse of :func:`hfft`: the ``n // 2 + 1`` first bins of a real signal's inverse transform."""
    return _r2c_1d("ihfft", input, n, dim, norm, 1, False)


# ---------------------------------------------------------------- n dimensions


def _shape_and_dims(op: str, x: Tensor, s: Any, dim: Dims) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """torch's ``(shape, dims)`` of an n-D transform: the dims in the order given (all dims, or the last ``len(s)``,
    by default) and the signal size along each (-1 in ``s``: the input's size)."""
    ndim = x.ndim
    dims: tuple[int, ...] = ()
    if dim is not None:
        given = (dim,) if isinstance(dim, int) else tuple(dim)
        if ndim == 0 and given:
            raise IndexError(f"{op}: Dimension specified as {given[0]} but tensor has no dimensions")
        dims = tuple(normalize_dim(op, d, ndim) for d in given)
        if len(set(dims)) != len(dims):
            raise RuntimeError(f"{op}: FFT dims must be unique, got {given}")
    if s is not None:
        s = (s,) if isinstance(s, int) else tuple(s)
        if dim is not None and len(dims) != len(s):
            raise RuntimeError(f"{op}: When given, dim and shape arguments must have the same length, got dim {dims} "
                               f"and s {s}")
        if len(s) > ndim:
            raise RuntimeError(f"{op}: Got shape with {len(s)} values but input tensor only has {ndim} dimensions.")
        if dim is None:
            dims = tuple(range(ndim - len(s), ndim))
        shape = tuple(x.shape[d] if n == -1 else int(n) for n, d in zip(s, dims))
    elif dim is None:
        dims, shape = tuple(range(ndim)), tuple(x.shape)
    else:
        shape = tuple(x.shape[d] for d in dims)
    for n in shape:
        _points(op, n)
    return shape, dims


def _c2c_stages(pairs: Tensor, shape: Sequence[int], dims: Sequence[int], norm: str | None, sign: int,
                forward: bool, op: str) -> Tensor:
    for n, d in zip(shape, dims):
        pairs = stage(pairs, d, "c2c", n, sign, scale_of(op, norm, n, forward))
    return pairs


def _fftn(op: str, input: Tensor, s: Any, dim: Dims, norm: str | None, sign: int, forward: bool) -> Tensor:
    """fftn / ifftn: complex-to-complex along every given dim (a real input's first stage is real-to-complex)."""
    x = _input(op, input)
    shape, dims = _shape_and_dims(op, x, s, dim)
    _check_norm(op, norm)
    dtype = compute_dtype(op, x)
    if x.dtype.is_complex or not dims:
        return as_complex(_c2c_stages(as_pairs(x, dtype), shape, dims, norm, sign, forward, op))
    pairs = stage(x.to(dtype), dims[0], "r2c", shape[0], sign, scale_of(op, norm, shape[0], forward))
    return as_complex(_c2c_stages(pairs, shape[1:], dims[1:], norm, sign, forward, op))


def _r2c_nd(op: str, input: Tensor, s: Any, dim: Dims, norm: str | None, sign: int, forward: bool) -> Tensor:
    """rfftn / ihfftn: the half spectrum along the last given dim, then complex stages along the others."""
    x = _real_input(op, _input(op, input))
    shape, dims = _shape_and_dims(op, x, s, dim)
    if not dims:
        raise RuntimeError(f"{op} must transform at least one axis")
    _check_norm(op, norm)
    pairs = stage(x, dims[-1], "rfft", shape[-1], sign, scale_of(op, norm, shape[-1], forward))
    return as_complex(_c2c_stages(pairs, shape[:-1], dims[:-1], norm, sign, forward, op))


def _c2r_nd(op: str, input: Tensor, s: Any, dim: Dims, norm: str | None, sign: int, forward: bool) -> Tensor:
    """irfftn / hfftn: complex stages along all given dims but the last, then complex-to-real along it (its length
    ``s[-1]``, default ``2 * (input.shape[dims[-1]] - 1)``)."""
    x = _input(op, input)
    shape, dims = _shape_and_dims(op, x, s, dim)
    if not dims:
        raise RuntimeError(f"{op} must transform at least one axis")
    last = shape[-1] if s is not None and (isinstance(s, int) or s[-1] != -1) else 2 * (x.shape[dims[-1]] - 1)
    _points(op, last)
    _check_norm(op, norm)
    pairs = _c2c_stages(as_pairs(x, compute_dtype(op, x)), shape[:-1], dims[:-1], norm, sign, forward, op)
    return stage(pairs, dims[-1], "c2r", last, sign, scale_of(op, norm, last, forward))


def fftn(input: Tensor, s: Sequence[int] | None = None, dim: Dims = None, norm: str | None = None) -> Tensor:
    """The n-dimensional Fourier transform over ``dim`` (default: all dims, or the last ``len(s)``), each dim
    zero-padded or trimmed to ``s``."""
    return _fftn("fftn", input, s, dim, norm, -1, True)


def ifftn(input: Tensor, s: Sequence[int] | None = None, dim: Dims = None, norm: str | None = None) -> Tensor:
    """The inverse of :func:`fftn`."""
    return _fftn("ifftn", input, s, dim, norm, 1, False)


def rfftn(input: Tensor, s: Sequence[int] | None = None, dim: Dims = None, norm: str | None = None) -> Tensor:
    """The n-dimensional Fourier transform of a real input: the last transformed dim keeps its ``s[-1] // 2 + 1``
    non-negative frequencies."""
    return _r2c_nd("rfftn", input, s, dim, norm, -1, True)


def irfftn(input: Tensor, s: Sequence[int] | None = None, dim: Dims = None, norm: str | None = None) -> Tensor:
    """The inverse of :func:`rfftn`: a real output whose last transformed dim has ``s[-1]`` points (default
    ``2 * (input.shape[dim[-1]] - 1)``)."""
    return _c2r_nd("irfftn", input, s, dim, norm, 1, False)


def hfftn(input: Tensor, s: Sequence[int] | None = None, dim: Dims = None, norm: str | None = None) -> Tensor:
    """The n-dimensional Fourier transform of a Hermitian-symmetric input given by its half along the last dim: a
    real output."""
    return _c2r_nd("hfftn", input, s, dim, norm, -1, True)


def ihfftn(input: Tensor, s: Sequence[int] | None = None, dim: Dims = None, norm: str | None = None) -> Tensor:
    """The inverse of :func:`hfftn`: the half spectrum (along the last dim) of a real input's inverse transform."""
    return _r2c_nd("ihfftn", input, s, dim, norm, 1, False)


def fft2(input: Tensor, s: Sequence[int] | None = None, dim: Dims = (-2, -1), norm: str | None = None) -> Tensor:
    """The two-dimensional Fourier transform (:func:`fftn` over the last two dims by default)."""
    return _fftn("fft2", input, s, dim, norm, -1, True)


def ifft2(input: Tensor, s: Sequence[int] | None = None, dim: Dims = (-2, -1), norm: str | None = None) -> Tensor:
    """The inverse of :func:`fft2`."""
    return _fftn("ifft2", input, s, dim, norm, 1, False)


def rfft2(input: Tensor, s: Sequence[int] | None = None, dim: Dims = (-2, -1), norm: str | None = None) -> Tensor:
    """:func:`rfftn` over the last two dims by default."""
    return _r2c_nd("rfft2", input, s, dim, norm, -1, True)


def irfft2(input: Tensor, s: Sequence[int] | None = None, dim: Dims = (-2, -1), norm: str | None = None) -> Tensor:
    """:func:`irfftn` over the last two dims by default."""
    return _c2r_nd("irfft2", input, s, dim, norm, 1, False)


def hfft2(input: Tensor, s: Sequence[int] | None = None, dim: Dims = (-2, -1), norm: str | None = None) -> Tensor:
    """:func:`hfftn` over the last two dims by default."""
    return _c2r_nd("hfft2", input, s, dim, norm, -1, True)


def ihfft2(input: Tensor, s: Sequence[int] | None = None, dim: Dims = (-2, -1), norm: str | None = None) -> Tensor:
    """:func:`ihfftn` over the last two dims by default."""
    return _r2c_nd("ihfft2", input, s, dim, norm, 1, False)
