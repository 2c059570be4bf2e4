"""What the modules of ``genesis.special`` share: the input check of torch's special-function kernels, and Cephes's
two ways of evaluating a fitted series, ``polevl`` (a polynomial by Horner's scheme) and ``chbevl`` (a Chebyshev
series by Clenshaw's recurrence). Both take the coefficients highest order first, as Cephes's tables list them.
"""

from __future__ import annotations

from genesis import dtypes
from genesis import ops as F
from genesis.ops._args import _float_operands, check_tensors
from genesis.tensor import Tensor

_HALF = (dtypes.float16, dtypes.bfloat16)


def _float_input(op: str, input: Tensor, half: bool = False) -> Tensor:
    """``input`` as floating point: integers and bool promote to the default float dtype. Complex inputs, and
    float16 and bfloat16 unless ``half`` (the few kernels torch has for them), raise NotImplementedError as torch's."""
    check_tensors(op, input=input)
    if input.dtype.is_complex or (input.dtype in _HALF and not half):
        raise NotImplementedError(f"\"{op}\" not implemented for '{dtypes.SCALAR_TYPE_NAMES[input.dtype]}'")
    return input if input.dtype.is_floating_point else input.to(dtypes.get_default_dtype())


def _float_pair(op: str, input: Tensor | float, other: Tensor | float) -> tuple[Tensor, Tensor]:
    """Both operands of a binary special function in their promoted dtype (integers to the default float dtype), as
    :func:`_float_input` checks one: complex, float16 and bfloat16 raise NotImplementedError."""
    for t in (input, other):
        if isinstance(t, Tensor) and t.dtype.is_complex:
            raise NotImplementedError(f"\"{op}\" not implemented for '{dtypes.SCALAR_TYPE_NAMES[t.dtype]}'")
    x, y = _float_operands(op, input, other)
    if x.dtype in _HALF:
        raise NotImplementedError(f"\"{op}\" not implemented for '{dtypes.SCALAR_TYPE_NAMES[x.dtype]}'")
    return x, y


def _polynomial(x: Tensor, coefficients: tuple[float, ...]) -> Tensor:
    """Horner's scheme, highest power first (Cephes's polevl; a leading 1.0 makes it p1evl)."""
    out = F.full_like(x, coefficients[0])
    for c in coefficients[1:]:
        out = out * x + c
    return out


def _chebyshev_series(y: Tensor, coefficients: tuple[float, ...]) -> Tensor:
    """``sum_i c_i T_i(y / 2)`` with the constant term halved (Cephes's chbevl): the argument ``y`` is already
    mapped to [-2, 2], the coefficients run from the highest order down to the constant term."""
    b0, b1 = F.full_like(y, coefficients[0]), F.zeros_like(y)
    b2 = b1
    for c in coefficients[1:]:
        b2, b1 = b1, b0
        b0 = y * b1 - b2 + c
    return 0.5 * (b0 - b2)
