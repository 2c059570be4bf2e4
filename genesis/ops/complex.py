"""Complex numbers: ``complex``, ``polar``, ``view_as_real`` / ``view_as_complex``, the parts (``real``, ``imag``),
``angle``, ``abs`` of complex tensors, ``conj`` and the predicates, each with its gradient.

Gradients follow torch's convention for complex inputs: the gradient handed to ``z`` is the conjugate Wirtinger
derivative ``dL/dx + i dL/dy`` of a real loss ``L`` (``z = x + iy``), so the backward of a holomorphic ``f`` multiplies
the incoming gradient by ``conj(f'(z))``. Both backends hold complex arrays (the CUDA backend as interleaved parts,
computing through their real view; see ``genesis/_impl/cuda/complex.py``), so these ops and their gradients run on
the CPU and on GPUs alike.

``real``, ``imag``, ``view_as_real`` and ``view_as_complex`` share memory with their input as in torch; an in-place
write through one of them changes the input's values, but autograd does not track it as a write to the input.
"""

from __future__ import annotations

import math

from genesis import dtypes
from genesis.autograd import Primitive
from genesis.ndarray import NDArray, broadcast_shapes
from genesis.ops._args import ones_like_bool
from genesis.ops.compare import where
from genesis.ops.join import stack
from genesis.ops.views import contiguous, matrix_transpose
from genesis.tensor import Tensor


def _complex_op(op: str, x: NDArray) -> NDArray:
    return x.device.backend.complex_op(op, x)


class ViewAsReal(Primitive):
    """``(..., )`` complex -> ``(..., 2)`` real (real and imaginary parts), sharing memory."""

    @staticmethod
    def forward(ctx, x: NDArray) -> NDArray:
        return _complex_op("view_as_real", x)

    @staticmethod
    def backward(ctx, grad):
        return ViewAsComplex.apply(contiguous(grad))  # dL/dx + i dL/dy


class ViewAsComplex(Primitive):
    """``(..., 2)`` real -> ``(...)`` complex, sharing memory."""

    @staticmethod
    def forward(ctx, x: NDArray) -> NDArray:
        return _complex_op("view_as_complex", x)

    @staticmethod
    def backward(ctx, grad):
        return ViewAsReal.apply(grad)


class Real(Primitive):
    @staticmethod
    def forward(ctx, x: NDArray) -> NDArray:
        return _complex_op("real", x)

    @staticmethod
    def backward(ctx, grad):
        return grad.to(grad.dtype.to_complex)


class Imag(Primitive):
    @staticmethod
    def forward(ctx, x: NDArray) -> NDArray:
        return _complex_op("imag", x)

    @staticmethod
    def backward(ctx, grad):
        return grad * 1j  # d/dy of the loss, as the imaginary part


class Conj(Primitive):
    @staticmethod
    def forward(ctx, x: NDArray) -> NDArray:
        return _complex_op("conj", x)

    @staticmethod
    def backward(ctx, grad):
        return Conj.apply(grad)


class ComplexAbs(Primitive):
    """``|z|``; gradient ``grad * z / |z|`` (zero at ``z = 0``, torch's ``sgn``)."""

    @staticmethod
    def forward(ctx, x: NDArray) -> NDArray:
        out = _complex_op("abs", x)
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        z, r = ctx.saved_tensors
        return where(r == 0, 0j, z / where(r == 0, 1.0, r)) * grad


class Angle(Primitive):
    """``atan2(imag, real)``; gradient ``grad * i z / |z|^2`` (zero at ``z = 0``, as torch)."""

    @staticmethod
    def forward(ctx, x: NDArray) -> NDArray:
        ctx.save_for_backward(x)
        return _complex_op("angle", x)

    @staticmethod
    def backward(ctx, grad):
        (z,) = ctx.saved_tensors
        r2 = ComplexAbs.apply(z) ** 2
        return where(r2 == 0, 0j, z * 1j / where(r2 == 0, 1.0, r2)) * grad


def view_as_real(input: Tensor) -> Tensor:
    """The complex tensor as a real one with a last dim of 2 (real, imaginary parts), sharing memory."""
    if not isinstance(input, Tensor):
        raise TypeError(f"view_as_real(): argument 'input' must be Tensor, not {type(input).__name__}")
    if not input.dtype.is_complex:
        raise RuntimeError(f"view_as_real is only supported for complex tensors, got {input.dtype}")
    return ViewAsReal.apply(input)


def view_as_complex(input: Tensor) -> Tensor:
    """A float32/float64 tensor whose last dim has size 2 and stride 1 (and whose other strides are even) as a
    complex tensor of one dim less, sharing memory."""
    if not isinstance(input, Tensor):
        raise TypeError(f"view_as_complex(): argument 'input' must be Tensor, not {type(input).__name__}")
    if input.dtype not in (dtypes.float32, dtypes.float64):
        raise RuntimeError(f"view_as_complex is only supported for float and double tensors, but got a tensor of "
                           f"scalar type: {input.dtype}")
    if input.ndim == 0 or input.shape[-1] != 2:
        raise RuntimeError(f"view_as_complex: Tensor must have a last dimension of size 2, got shape "
                           f"{tuple(input.shape)}")
    nd = input.ndarray
    if nd.strides[-1] != 1:
        raise RuntimeError(f"view_as_complex: Tensor must have a last dimension with stride 1, got strides "
                           f"{nd.strides}")
    if any(s % 2 for s in nd.strides[:-1]) or nd.offset % 2:
        raise RuntimeError(f"view_as_complex: Tensor must have a stride divisible by 2 for all but last dimension "
                           f"and an even storage offset, got strides {nd.strides} and offset {nd.offset}")
    return ViewAsComplex.apply(input)


def real(input: Tensor) -> Tensor:
    """The real part: a view of a complex tensor's real parts; a real tensor itself (as torch)."""
    if not input.dtype.is_complex:
        return input
    return Real.apply(input)


def imag(input: Tensor) -> Tensor:
    """The imaginary part of a complex tensor, as a view; real tensors have none (as torch, an error)."""
    if not input.dtype.is_complex:
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    return Imag.apply(input)


def conj(input: Tensor) -> Tensor:
    """Complex conjugate; the tensor itself for real dtypes (as torch, no copy). Genesis conjugates eagerly, so
    ``conj`` and ``conj_physical`` are the same and ``is_conj`` is always False."""
    if not input.dtype.is_complex:
        return input
    return Conj.apply(input)


conj_physical = conj


def resolve_conj(input: Tensor) -> Tensor:
    """The tensor itself: Genesis conjugates eagerly, so no tensor holds a pending conjugation (or negation)."""
    return input


resolve_neg = resolve_conj


def conj_physical_(input: Tensor) -> Tensor:
    """Conjugate in place (nothing to do for real tensors)."""
    if input.dtype.is_complex:
        input.copy_(conj(input))
    return input


def adjoint(input: Tensor) -> Tensor:
    """``t.mH`` / ``t.adjoint()``: the last two dims swapped, conjugated (``mT`` for real tensors)."""
    return conj(matrix_transpose(input, "mH / adjoint()"))


def complex_abs(input: Tensor) -> Tensor:
    """``|z|`` of a complex tensor, in the real dtype of its parts (``abs`` of complex tensors)."""
    return ComplexAbs.apply(input)


def angle(input: Tensor) -> Tensor:
    """Argument of each element in radians: ``atan2(imag, real)`` for complex tensors; for real ones pi where
    negative, else 0, NaN for NaN, with a zero gradient (torch)."""
    if input.dtype.is_complex:
        return Angle.apply(input)
    if not input.dtype.is_floating_point:
        input = input.to(dtypes.get_default_dtype())
    x = input.detach()
    out = where(x.isnan(), x, (x < 0).to(x.dtype) * math.pi)
    if input.requires_grad:
        out = where(ones_like_bool(x), out, input)  # a graph node whose input gradient is zero
    return out


def complex(real: Tensor, imag: Tensor) -> Tensor:
    """The complex tensor ``real + i imag`` (both float32 or both float64, broadcast together)."""
    for name, t in (("real", real), ("imag", imag)):
        if not isinstance(t, Tensor):
            raise TypeError(f"complex(): argument '{name}' must be Tensor, not {type(t).__name__}")
    if real.dtype is not imag.dtype:
        raise RuntimeError(f"complex: Expected object of scalar type {dtypes.SCALAR_TYPE_NAMES[real.dtype]} but got "
                           f"scalar type {dtypes.SCALAR_TYPE_NAMES[imag.dtype]} for second argument")
    if real.dtype not in (dtypes.float32, dtypes.float64):
        raise RuntimeError(f"complex: Expected both inputs to be Half, Float or Double tensors but got "
                           f"{dtypes.SCALAR_TYPE_NAMES[real.dtype]} and {dtypes.SCALAR_TYPE_NAMES[imag.dtype]}")
    return view_as_complex(stack(list(_broadcast(real, imag)), dim=-1))


def polar(abs: Tensor, angle: Tensor) -> Tensor:
    """The complex tensor ``abs * (cos(angle) + i sin(angle))`` (both float32 or both float64)."""
    for name, t in (("abs", abs), ("angle", angle)):
        if not isinstance(t, Tensor):
            raise TypeError(f"polar(): argument '{name}' must be Tensor, not {type(t).__name__}")
    if abs.dtype is not angle.dtype or abs.dtype not in (dtypes.float32, dtypes.float64):
        raise RuntimeError(f"polar: Expected both inputs to be Float or Double tensors of one dtype but got "
                           f"{abs.dtype.name} and {angle.dtype.name}")
    return complex(abs * angle.cos(), abs * angle.sin())


def _broadcast(a: Tensor, b: Tensor) -> tuple[Tensor, Tensor]:
    if a.shape == b.shape:
        return a, b
    shape = broadcast_shapes("complex", tuple(a.shape), tuple(b.shape))
    return a.expand(shape), b.expand(shape)


def is_complex(input: Tensor) -> bool:
    """Whether the tensor's dtype is complex64 or complex128."""
    return input.dtype.is_complex


def isreal(input: Tensor) -> Tensor:
    """True where the element's imaginary part is zero (everywhere for real tensors)."""
    if not input.dtype.is_complex:
        return ones_like_bool(input)
    return imag(input.detach()) == 0
