"""The discrete Fourier transform along one dim as a matrix product: the stages every ``genesis.fft`` transform, and
``stft`` / ``istft``, are made of.

A DFT of length ``n`` multiplies the signal by the matrix of ``exp(sign * 2 pi i j k / n)``. Genesis computes it as a
product of real tensors with cosine and sine matrices, so the transforms are composites of ordinary differentiable
ops: they run on every device and their gradients are the exact adjoints (torch's gradients), with no FFT library
below. The cost is O(n^2) per transformed dim (an FFT's is O(n log n)); the values are exact to float tolerance.

Inside the transforms a complex signal is a real tensor of *pairs*: one more last dim of size 2 holding the real and
imaginary parts, as ``view_as_real`` gives. Three kinds of stage act along one signal dim:

- ``"r2c"`` (all ``n`` bins) and ``"rfft"`` (the ``n // 2 + 1`` bins of a real signal's half spectrum): real samples
  to complex bins; matrix ``(rows, 2 * bins)``, the columns of each bin interleaved as (cos, sign * sin);
- ``"c2c"``: complex samples to complex bins; matrix ``(2 * rows, 2 * n)`` over interleaved parts;
- ``"c2r"``: the first ``n // 2 + 1`` bins of a Hermitian-symmetric spectrum to ``n`` real samples; matrix
  ``(2 * rows, n)``. Bins ``1 .. (n - 1) // 2`` count twice (their mirror images are implied), and the imaginary parts
  of bin 0 and, for even ``n``, bin ``n / 2`` are ignored, as pocketfft's and MKL's c2r do.

Zero-padding a signal to length ``n`` is the same as dropping the matrix rows the padding would meet, so a shorter
signal uses the first rows only (no padded copy); a longer one is trimmed with a view. The normalization factor is
folded into the matrix. Matrices are built once per (kind, rows, n, sign, scale, dtype, device) in float64 on the CPU,
cast and moved to the device, and kept in a small least-recently-used cache bounded by :data:`CACHE_ENTRIES` and
:data:`CACHE_BYTES`.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict

from genesis import dtypes
from genesis.autograd import no_grad
from genesis.ops.compare import where
from genesis.ops.complex import view_as_complex, view_as_real
from genesis.ops.join import stack
from genesis.ops.linalg import Matmul
from genesis.tensor import Tensor, arange, tensor, zeros_like

#: The cache of DFT matrices keeps at most this many matrices ...
CACHE_ENTRIES = 32
#: ... and at most this many bytes of them (a larger matrix is built for each call and not kept).
CACHE_BYTES = 256 * 2**20

_KINDS = ("r2c", "rfft", "c2c", "c2r")
_cache: OrderedDict[tuple, Tensor] = OrderedDict()
_cache_bytes = 0
_lock = threading.Lock()


def clear_cache() -> None:
    """Drop every cached DFT matrix (their memory is freed once no tensor refers to them)."""
    global _cache_bytes
    with _lock:
        _cache.clear()
        _cache_bytes = 0


def cache_info() -> tuple[int, int]:
    """(number of cached matrices, their bytes)."""
    with _lock:
        return len(_cache), _cache_bytes


def bins(kind: str, n: int) -> int:
    """The number of input rows a stage of ``kind`` can use: signal samples, or the bins c2r reads."""
    return n // 2 + 1 if kind == "c2r" else n


def _cos_sin(rows: int, cols: int, n: int) -> tuple[Tensor, Tensor]:
    """``cos`` and ``sin`` of ``2 pi (j k mod n) / n`` for j < rows, k < cols, float64 on the CPU (the product reduced
    exactly first). Angles on the axes (multiples of pi / 2) give exact 0 and +-1, as an FFT's twiddle factors do:
    a real signal's bin 0 and Nyquist bin come out with imaginary parts exactly zero."""
    j = arange(rows, dtype=dtypes.int64).reshape(rows, 1)
    k = arange(cols, dtype=dtypes.int64).reshape(1, cols)
    m = (j * k) % n
    a = m.to(dtypes.float64) * (2 * math.pi / n)
    cos, sin = a.cos(), a.sin()
    on_axis = (m * 4) % n == 0
    return where(on_axis, cos.round(), cos), where(on_axis, sin.round(), sin)


def _build(kind: str, rows: int, n: int, sign: int) -> Tensor:
    """The unscaled float64 matrix of one stage (see the module docstring for the layouts)."""
    if kind == "c2r":
        cos, sin = _cos_sin(rows, n, n)  # (bins k, samples j)
        real_w = [1.0 if k == 0 or 2 * k == n else 2.0 for k in range(rows)]
        imag_w = [0.0 if k == 0 or 2 * k == n else -2.0 * sign for k in range(rows)]
        real_w = tensor(real_w, dtype=dtypes.float64).reshape(rows, 1)
        imag_w = tensor(imag_w, dtype=dtypes.float64).reshape(rows, 1)
        return stack([cos * real_w, sin * imag_w], 1).reshape(2 * rows, n)
    cols = n // 2 + 1 if kind == "rfft" else n
    cos, sin = _cos_sin(rows, cols, n)
    sin = sin * sign
    if kind == "c2c":  # a real part a_j gives (a cos, a sin); an imaginary part b_j gives (-b sin, b cos)
        return stack([stack([cos, sin], -1), stack([-sin, cos], -1)], 1).reshape(2 * rows, 2 * cols)
    return stack([cos, sin], -1).reshape(rows, 2 * cols)


def dft_matrix(kind: str, rows: int, n: int, sign: int, scale: float, dtype: dtypes.dtype, device: object) -> Tensor:
    """The matrix of one DFT stage (cached): ``kind`` in "r2c", "rfft", "c2c", "c2r"; ``rows`` input samples (or
    bins, for c2r) of a length-``n`` transform; ``sign`` -1 for the forward transform, +1 for the inverse; ``scale``
    the normalization; ``dtype`` the real dtype the transform computes in."""
    assert kind in _KINDS and 0 < rows <= bins(kind, n), (kind, rows, n)
    global _cache_bytes
    key = (kind, rows, n, sign, scale, dtype, str(device))
    with _lock:
        hit = _cache.get(key)
        if hit is not None:
            _cache.move_to_end(key)
            return hit
    with no_grad():
        matrix = _build(kind, rows, n, sign)
        if scale != 1.0:
            matrix = matrix * scale
        matrix = matrix.to(device=device, dtype=dtype)
    size = matrix.numel() * dtype.itemsize
    if size > CACHE_BYTES:
        return matrix
    with _lock:
        if key not in _cache:
            _cache[key] = matrix
            _cache_bytes += size
        while len(_cache) > CACHE_ENTRIES or _cache_bytes > CACHE_BYTES:
            _, old = _cache.popitem(last=False)
            _cache_bytes -= old.numel() * old.dtype.itemsize
    return matrix


def scale_of(op: str, norm: str | None, n: int, forward: bool) -> float:
    """The factor torch's ``norm`` puts on a transform of ``n`` points: "backward" (the default) scales the inverse
    by 1/n, "forward" the forward one, "ortho" both by 1/sqrt(n)."""
    if norm == "ortho":
        return 1 / math.sqrt(n)
    if norm is None or norm == "backward":
        return 1.0 if forward else 1 / n
    if norm == "forward":
        return 1 / n if forward else 1.0
    raise RuntimeError(f'{op}: Invalid normalization mode: "{norm}"')


def stage(x: Tensor, dim: int, kind: str, n: int, sign: int, scale: float) -> Tensor:
    """One DFT stage of length ``n`` along signal dim ``dim`` (non-negative): ``x`` is real for "r2c"/"rfft" and
    pairs for "c2c"/"c2r"; returns pairs, or a real tensor for "c2r". A longer input is trimmed to what the
    transform reads; a shorter one counts as zero-padded."""
    pairs_in = kind in ("c2c", "c2r")
    rows = x.shape[dim]
    if rows > bins(kind, n):
        rows = bins(kind, n)
        x = x.narrow(dim, 0, rows)
    matrix = dft_matrix(kind, rows, n, sign, scale, x.dtype, x.device)
    if pairs_in:
        x = x.movedim(dim, -2)
        x = x.reshape(*x.shape[:-2], 2 * rows)  # (..., rows * 2): parts interleaved as the matrix rows
    else:
        x = x.movedim(dim, -1)
    y = Matmul.apply(x, matrix)  # the product itself, outside autocast: precision is the transform's own
    if kind == "c2r":
        return y.movedim(-1, dim)
    return y.reshape(*y.shape[:-1], matrix.shape[1] // 2, 2).movedim(-2, dim)


def as_pairs(x: Tensor, dtype: dtypes.dtype) -> Tensor:
    """A complex tensor's pairs (a view); a real one's, with zero imaginary parts, computed in ``dtype``."""
    if x.dtype.is_complex:
        return view_as_real(x)
    x = x.to(dtype)
    return stack([x, zeros_like(x)], -1)


def as_complex(pairs: Tensor) -> Tensor:
    """The complex tensor of pairs (contiguous first, as ``view_as_complex`` needs)."""
    return view_as_complex(pairs.contiguous())
