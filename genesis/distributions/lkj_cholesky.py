"""``LKJCholesky``: the LKJ distribution over lower Cholesky factors of correlation matrices (Lewandowski, Kurowicka
and Joe, "Generating random correlation matrices based on vines and extended onion method", 2009)."""

from __future__ import annotations

import math
from typing import Sequence

import genesis.ops as F
from genesis import random
from genesis.autograd import no_grad
from genesis.distributions import constraints
from genesis.distributions.distribution import Distribution
from genesis.distributions.gamma import Beta
from genesis.distributions.utils import broadcast_all, tiny
from genesis.tensor import Size, Tensor


class LKJCholesky(Distribution):
    """The LKJ distribution over ``dim × dim`` lower Cholesky factors ``L`` of correlation matrices ``M = L Lᵀ``, with
    density in ``M`` proportional to ``det(M)^(η - 1)`` (``η = concentration``; ``η = 1`` is uniform over correlation
    matrices).

    Samples come from the onion method (section 3.2 of the paper), vectorized over rows and batches: row ``i`` is
    ``sqrt(y_i) u_i`` plus the diagonal entry that makes its norm one, with ``y_i`` a Beta draw and ``u_i`` uniform
    on the unit sphere of the first ``i`` coordinates; every correlation of ``L Lᵀ`` then has the LKJ marginal
    ``(r + 1) / 2 ~ Beta(η - 1 + dim / 2, η - 1 + dim / 2)``. Not reparameterized.

    Args:
        dim: the size of the matrices (at least 2).
        concentration: η (positive).
        validate_args: check the parameters and ``log_prob``'s values (default: the global setting).
    """

    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dim: int, concentration: Tensor | float = 1.0, validate_args: bool | None = None) -> None:
        if dim < 2:
            raise ValueError(f"Expected dim to be an integer greater than or equal to 2. Found dim={dim}.")
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration)
        # Row i's squared off-diagonal norm y_i ~ Beta(i / 2, η + (dim - 1 - i) / 2), the paper's Beta(k / 2, β) with
        # β lowered by 1/2 per row (row 0 has no off-diagonal entries: its draw, with row 1's parameters, is unused).
        # torch's first parameter is i - 1/2, which is i / 2 only for i = 1: its draws for dim >= 3 are not LKJ.
        marginal_conc = self.concentration + 0.5 * (self.dim - 2)
        offset = F.arange(self.dim - 1, dtype=self.concentration.dtype, device=self.concentration.device)
        offset = F.cat([F.zeros((1,), dtype=offset.dtype, device=offset.device), offset])
        self._beta = Beta(0.5 * offset + 0.5, marginal_conc.unsqueeze(-1) - 0.5 * offset)
        super().__init__(self.concentration.shape, Size((dim, dim)), validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Distribution | None = None) -> LKJCholesky:
        new = self._get_checked_instance(LKJCholesky, _instance)
        batch_shape = Size(batch_shape)
        new.dim = self.dim
        new.concentration = self.concentration.expand(batch_shape)
        new._beta = self._beta.expand(tuple(batch_shape) + (self.dim,))
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def sample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        with no_grad():
            y = self._beta.sample(sample_shape).unsqueeze(-1)
            u_normal = random.randn(self._extended_shape(sample_shape), dtype=y.dtype, device=y.device).tril(-1)
            # Row 0 has no off-diagonal entries: 0 / 0 there, replaced by zeros.
            first_row = (F.arange(self.dim, device=y.device) == 0).unsqueeze(-1)
            u_hypersphere = (u_normal / u_normal.norm(dim=-1, keepdim=True)).masked_fill(first_row, 0.0)
            w = y.sqrt() * u_hypersphere
            # The diagonal completes each row to unit length; clamped to stay positive.
            diag_elems = (1 - w.pow(2).sum(-1)).clamp(min=tiny(w.dtype)).sqrt()
            return w + F.diag_embed(diag_elems)

    def log_prob(self, value: Tensor) -> Tensor:
        """``sum_i (2(η - 1) + dim - i) log L_ii`` over ``i = 2 .. dim`` (the density of ``M`` times the Jacobian of
        ``L ↦ L Lᵀ``), minus the log normalizer of the paper (page 1999) in terms of the multivariate log-gamma."""
        if self._validate_args:
            self._validate_sample(value)
        diag_elems = value.diagonal(dim1=-1, dim2=-2)[..., 1:]
        order = F.arange(2, self.dim + 1, dtype=self.concentration.dtype, device=self.concentration.device)
        order = 2 * (self.concentration - 1).unsqueeze(-1) + self.dim - order
        unnormalized_log_pdf = (order * diag_elems.log()).sum(-1)
        dm1 = self.dim - 1
        alpha = self.concentration + 0.5 * dm1
        denominator = alpha.lgamma() * dm1
        numerator = (alpha - 0.5).mvlgamma(dm1)
        # The paper's π term is dim (dim - 1) / 4 log π; mvlgamma holds (dim - 1)(dim - 2) / 4 log π of it.
        pi_constant = 0.5 * dm1 * math.log(math.pi)
        return unnormalized_log_pdf - (pi_constant + numerator - denominator)
