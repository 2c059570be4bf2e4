"""``genesis.special``: torch.special's names for the special functions Genesis computes (each differentiable).

Most are the functions of ``genesis`` under torch.special's names (``expit`` is ``sigmoid``, ``gammaln`` is
``lgamma``, ``psi`` is ``digamma``); ``i1``, ``ndtr``, ``xlog1py``, ``entr`` and ``multigammaln`` are defined here.
"""

from __future__ import annotations

import math

from genesis import dtypes
from genesis import functional as F
from genesis.functional.elementwise import I1, Entr, Xlogy
from genesis.functional.math_extra import _float_operands
from genesis.tensor import Tensor

erf = F.erf
erfc = F.erfc
erfinv = F.erfinv
expit = F.sigmoid
logit = F.logit
xlogy = F.xlogy
gammaln = F.lgamma
digamma = F.digamma
psi = F.digamma
i0 = F.i0
modified_bessel_i0 = F.i0
sinc = F.sinc
exp2 = F.exp2
expm1 = F.expm1
log1p = F.log1p
round = F.round
logsumexp = F.logsumexp
softmax = F.softmax
log_softmax = F.log_softmax


def i1(input: Tensor) -> Tensor:
    """Modified Bessel function of the first kind of order 1; integer inputs promote to the default float dtype."""
    return I1.apply(input)


modified_bessel_i1 = i1


def xlog1py(input: Tensor | float, other: Tensor | float) -> Tensor:
    """``input * log1p(other)``, 0 where ``input == 0`` unless ``other`` is NaN."""
    input, other = _float_operands("xlog1py", input, other)
    return Xlogy.apply(input, other, True)


def entr(input: Tensor) -> Tensor:
    """Elementwise entropy ``-x log(x)``: 0 at 0, -inf for negative x; integers promote to the default float dtype."""
    if not input.dtype.is_floating_point:
        input = input.to(dtypes.get_default_dtype())
    return Entr.apply(input)


def multigammaln(input: Tensor, p: int) -> Tensor:
    """Multivariate log-gamma, as :func:`genesis.mvlgamma`."""
    return F.mvlgamma(input, p)


def ndtr(input: Tensor) -> Tensor:
    """The standard normal distribution function ``P(Z <= x) = erfc(-x / sqrt(2)) / 2``."""
    return 0.5 * F.erfc(input * (-1 / math.sqrt(2.0)))


__all__ = [
    "erf", "erfc", "erfinv", "expit", "logit", "xlogy", "gammaln", "digamma", "psi", "i0", "i1", "modified_bessel_i0",
    "modified_bessel_i1", "sinc", "exp2", "expm1", "log1p", "round", "logsumexp", "softmax", "log_softmax", "ndtr",
    "xlog1py", "entr", "multigammaln",
]
