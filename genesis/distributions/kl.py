"""``kl_divergence(p, q)``: the Kullback-Leibler divergence KL(p ‖ q) between two distributions, over the batch.

Implementations are registered per pair of types with :func:`register_kl`; a call dispatches to the most specific
registered pair (by subclassing, left argument first, as torch), and warns when the left-first and right-first
choices disagree. This module holds the registry and the pairs within one family (and the two multivariate normals);
pairs of different families live in :mod:`genesis.distributions.kl_cross_family`.
"""

from __future__ import annotations

import math
import warnings
from functools import total_ordering
from typing import Any, Callable

import genesis.ops as F
from genesis import linalg
from genesis.autograd import enable_grad, grad
from genesis.distributions.continuous import Exponential, Laplace, Normal, Uniform
from genesis.distributions.counts import Binomial, Geometric, Poisson
from genesis.distributions.discrete import Bernoulli, Categorical, OneHotCategorical
from genesis.distributions.distribution import Distribution, ExponentialFamily
from genesis.distributions.extreme_value import EULER_GAMMA, Gumbel
from genesis.distributions.folded import HalfNormal
from genesis.distributions.gamma import Beta, Dirichlet, Gamma
from genesis.distributions.heavy_tailed import Cauchy, Pareto
from genesis.distributions.independent import Independent
from genesis.distributions.low_rank import LowRankMultivariateNormal, _batch_lowrank_logdet, _batch_lowrank_mahalanobis
from genesis.distributions.multivariate_normal import MultivariateNormal, _batch_mahalanobis
from genesis.distributions.transformed_distribution import TransformedDistribution
from genesis.distributions.unit_interval import ContinuousBernoulli
from genesis.distributions.utils import sum_rightmost
from genesis.nn.functional import softplus
from genesis.tensor import Tensor

_KL_REGISTRY: dict[tuple[type, type], Callable[[Any, Any], Tensor]] = {}
_KL_MEMOIZE: dict[tuple[type, type], Any] = {}


def register_kl(type_p: type, type_q: type) -> Callable[[Callable], Callable]:
    """A decorator registering ``fn(p, q)`` as KL(p ‖ q) for ``p`` of ``type_p`` and ``q`` of ``type_q``."""
    for name, t in (("type_p", type_p), ("type_q", type_q)):
        if not (isinstance(t, type) and issubclass(t, Distribution)):
            raise TypeError(f"Expected {name} to be a Distribution subclass but got {t}")

    def decorator(fun: Callable) -> Callable:
        _KL_REGISTRY[type_p, type_q] = fun
        _KL_MEMOIZE.clear()  # the lookup order may have changed
        return fun

    return decorator


@total_ordering
class _Match:
    """A tuple of types ordered lexicographically by subclassing (more specific is smaller)."""

    __slots__ = ["types"]

    def __init__(self, *types: type) -> None:
        self.types = types

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Match) and self.types == other.types

    def __le__(self, other: _Match) -> bool:
        for x, y in zip(self.types, other.types):
            if not issubclass(x, y):
                return False
            if x is not y:
                break
        return True


def _dispatch_kl(type_p: type, type_q: type) -> Any:
    matches = [(sp, sq) for sp, sq in _KL_REGISTRY if issubclass(type_p, sp) and issubclass(type_q, sq)]
    if not matches:
        return NotImplemented
    left_p, left_q = min(_Match(*m) for m in matches).types
    right_q, right_p = min(_Match(*reversed(m)) for m in matches).types
    left_fun, right_fun = _KL_REGISTRY[left_p, left_q], _KL_REGISTRY[right_p, right_q]
    if left_fun is not right_fun:
        warnings.warn(f"Ambiguous kl_divergence({type_p.__name__}, {type_q.__name__}). "
                      f"Please register_kl({left_p.__name__}, {right_q.__name__})", RuntimeWarning, stacklevel=2)
    return left_fun


def kl_divergence(p: Distribution, q: Distribution) -> Tensor:
    """KL(p ‖ q) = E_p[log p(x) - log q(x)], batched over the broadcast batch shape.

    Raises:
        NotImplementedError: when no implementation is registered for the two types.
    """
    key = (type(p), type(q))
    if key not in _KL_MEMOIZE:
        _KL_MEMOIZE[key] = _dispatch_kl(*key)
    fun = _KL_MEMOIZE[key]
    if fun is NotImplemented:
        raise NotImplementedError(f"No KL(p || q) is implemented for p type {p.__class__.__name__} and q type "
                                  f"{q.__class__.__name__}")
    return fun(p, q)


def _inf_where(mask: Tensor, value: Tensor) -> Tensor:
    return F.full_like(value, math.inf).where(mask, value)


def _zero_where(mask: Tensor, value: Tensor) -> Tensor:
    return F.zeros_like(value).where(mask, value)


def _batch_trace_XXT(bmat: Tensor) -> Tensor:
    """``tr(X Xᵀ)``, the squared Frobenius norm, over the trailing two dimensions."""
    return bmat.pow(2).sum((-2, -1))


@register_kl(ExponentialFamily, ExponentialFamily)
def _kl_expfamily_expfamily(p: ExponentialFamily, q: ExponentialFamily) -> Tensor:
    """The Bregman divergence of the log-normalizer between the two families' natural parameters (one family)."""
    if type(p) is not type(q):
        raise NotImplementedError("The cross KL-divergence between different exponential families cannot be "
                                  "computed using Bregman divergences")
    p_params = [t.detach().requires_grad_() for t in p._natural_params]
    q_params = q._natural_params
    with enable_grad():
        log_norm = p._log_normalizer(*p_params)
        gradients = grad(log_norm.sum(), p_params, create_graph=True)
    result = q._log_normalizer(*q_params) - log_norm
    for pp, qp, g in zip(p_params, q_params, gradients):
        result = result - sum_rightmost((qp - pp) * g, len(q.event_shape))
    return result


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p: Bernoulli, q: Bernoulli) -> Tensor:
    t1 = p.probs * (softplus(-q.logits) - softplus(-p.logits))
    t1 = _zero_where(p.probs == 0, _inf_where(q.probs == 0, t1))
    t2 = (1 - p.probs) * (softplus(q.logits) - softplus(p.logits))
    t2 = _zero_where(p.probs == 1, _inf_where(q.probs == 1, t2))
    return t1 + t2


@register_kl(Beta, Beta)
def _kl_beta_beta(p: Beta, q: Beta) -> Tensor:
    sum_params_p = p.concentration1 + p.concentration0
    sum_params_q = q.concentration1 + q.concentration0
    t1 = q.concentration1.lgamma() + q.concentration0.lgamma() + sum_params_p.lgamma()
    t2 = p.concentration1.lgamma() + p.concentration0.lgamma() + sum_params_q.lgamma()
    t3 = (p.concentration1 - q.concentration1) * p.concentration1.digamma()
    t4 = (p.concentration0 - q.concentration0) * p.concentration0.digamma()
    t5 = (sum_params_q - sum_params_p) * sum_params_p.digamma()
    return t1 - t2 + t3 + t4 + t5


@register_kl(Binomial, Binomial)
def _kl_binomial_binomial(p: Binomial, q: Binomial) -> Tensor:
    if bool((p.total_count < q.total_count).any().item()):
        raise NotImplementedError("KL between Binomials where q.total_count > p.total_count is not implemented")
    kl = p.total_count * (p.probs * (p.logits - q.logits) + (-p.probs).log1p() - (-q.probs).log1p())
    return _inf_where(p.total_count > q.total_count, kl)


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p: Categorical, q: Categorical) -> Tensor:
    t = p.probs * (p.logits - q.logits)
    t = _zero_where((p.probs == 0).expand_as(t), _inf_where((q.probs == 0).expand_as(t), t))
    return t.sum(-1)


@register_kl(OneHotCategorical, OneHotCategorical)
def _kl_onehotcategorical_onehotcategorical(p: OneHotCategorical, q: OneHotCategorical) -> Tensor:
    return _kl_categorical_categorical(p._categorical, q._categorical)


@register_kl(ContinuousBernoulli, ContinuousBernoulli)
def _kl_continuous_bernoulli_continuous_bernoulli(p: ContinuousBernoulli, q: ContinuousBernoulli) -> Tensor:
    t1 = p.mean * (p.logits - q.logits)
    t2 = p._cont_bern_log_norm() + (-p.probs).log1p()
    t3 = -q._cont_bern_log_norm() - (-q.probs).log1p()
    return t1 + t2 + t3


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(p: Dirichlet, q: Dirichlet) -> Tensor:
    sum_p = p.concentration.sum(-1)
    sum_q = q.concentration.sum(-1)
    t1 = sum_p.lgamma() - sum_q.lgamma()
    t2 = (p.concentration.lgamma() - q.concentration.lgamma()).sum(-1)
    t3 = p.concentration - q.concentration
    t4 = p.concentration.digamma() - sum_p.digamma().unsqueeze(-1)
    return t1 - t2 + (t3 * t4).sum(-1)


@register_kl(Exponential, Exponential)
def _kl_exponential_exponential(p: Exponential, q: Exponential) -> Tensor:
    rate_ratio = q.rate / p.rate
    return -rate_ratio.log() + rate_ratio - 1


@register_kl(Gamma, Gamma)
def _kl_gamma_gamma(p: Gamma, q: Gamma) -> Tensor:
    t1 = q.concentration * (p.rate / q.rate).log()
    t2 = q.concentration.lgamma() - p.concentration.lgamma()
    t3 = (p.concentration - q.concentration) * p.concentration.digamma()
    t4 = (q.rate - p.rate) * (p.concentration / p.rate)
    return t1 + t2 + t3 + t4


@register_kl(Gumbel, Gumbel)
def _kl_gumbel_gumbel(p: Gumbel, q: Gumbel) -> Tensor:
    ct1 = p.scale / q.scale
    ct2 = q.loc / q.scale
    ct3 = p.loc / q.scale
    t1 = -ct1.log() - ct2 + ct3
    t2 = ct1 * EULER_GAMMA
    t3 = (ct2 + (1 + ct1).lgamma() - ct3).exp()
    return t1 + t2 + t3 - (1 + EULER_GAMMA)


@register_kl(Geometric, Geometric)
def _kl_geometric_geometric(p: Geometric, q: Geometric) -> Tensor:
    return -p.entropy() - (-q.probs).log1p() / p.probs - q.logits


@register_kl(HalfNormal, HalfNormal)
def _kl_halfnormal_halfnormal(p: HalfNormal, q: HalfNormal) -> Tensor:
    return _kl_normal_normal(p.base_dist, q.base_dist)


@register_kl(Laplace, Laplace)
def _kl_laplace_laplace(p: Laplace, q: Laplace) -> Tensor:
    scale_ratio = p.scale / q.scale
    loc_abs_diff = (p.loc - q.loc).abs()
    return -scale_ratio.log() + loc_abs_diff / q.scale + scale_ratio * (-loc_abs_diff / p.scale).exp() - 1


@register_kl(Normal, Normal)
def _kl_normal_normal(p: Normal, q: Normal) -> Tensor:
    var_ratio = (p.scale / q.scale).pow(2)
    t1 = ((p.loc - q.loc) / q.scale).pow(2)
    return 0.5 * (var_ratio + t1 - 1 - var_ratio.log())


@register_kl(Pareto, Pareto)
def _kl_pareto_pareto(p: Pareto, q: Pareto) -> Tensor:
    scale_ratio = p.scale / q.scale
    alpha_ratio = q.alpha / p.alpha
    result = q.alpha * scale_ratio.log() - alpha_ratio.log() + alpha_ratio - 1
    return _inf_where(p.support.lower_bound < q.support.lower_bound, result)


@register_kl(Poisson, Poisson)
def _kl_poisson_poisson(p: Poisson, q: Poisson) -> Tensor:
    return p.rate * (p.rate.log() - q.rate.log()) - (p.rate - q.rate)


@register_kl(Cauchy, Cauchy)
def _kl_cauchy_cauchy(p: Cauchy, q: Cauchy) -> Tensor:
    # Chyzak and Nielsen, "A closed-form formula for the Kullback-Leibler divergence between Cauchy distributions".
    t1 = ((p.scale + q.scale).pow(2) + (p.loc - q.loc).pow(2)).log()
    t2 = (4 * p.scale * q.scale).log()
    return t1 - t2


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p: Uniform, q: Uniform) -> Tensor:
    result = ((q.high - q.low) / (p.high - p.low)).log()
    return _inf_where((q.low > p.low) | (q.high < p.high), result)


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_multivariatenormal_multivariatenormal(p: MultivariateNormal, q: MultivariateNormal) -> Tensor:
    if p.event_shape != q.event_shape:
        raise ValueError("KL-divergence between two Multivariate Normals with different event shapes cannot be "
                         "computed")
    p_L, q_L = p._unbroadcasted_scale_tril, q._unbroadcasted_scale_tril
    half_term1 = q_L.diagonal(dim1=-2, dim2=-1).log().sum(-1) - p_L.diagonal(dim1=-2, dim2=-1).log().sum(-1)
    n = p.event_shape[0]
    batch = tuple(F.broadcast_shapes(tuple(q_L.shape[:-2]), tuple(p_L.shape[:-2])))
    # tr(Σq^-1 Σp) = |Lq^-1 Lp|_F²
    term2 = _batch_trace_XXT(linalg.solve_triangular(q_L.expand(batch + (n, n)), p_L.expand(batch + (n, n)),
                                                     upper=False))
    term3 = _batch_mahalanobis(q_L, q.loc - p.loc)
    return half_term1 + 0.5 * (term2 + term3 - n)


def _check_event_shapes(p: Distribution, q: Distribution) -> None:
    if p.event_shape != q.event_shape:
        raise ValueError(f"KL-divergence between two (Low Rank) Multivariate Normals with different event shapes "
                         f"{tuple(p.event_shape)} and {tuple(q.event_shape)} cannot be computed")


def _lowrank_logdet(d: LowRankMultivariateNormal) -> Tensor:
    return _batch_lowrank_logdet(d._unbroadcasted_cov_factor, d._unbroadcasted_cov_diag, d._capacitance_tril)


def _lowrank_mahalanobis(q: LowRankMultivariateNormal, x: Tensor) -> Tensor:
    return _batch_lowrank_mahalanobis(q._unbroadcasted_cov_factor, q._unbroadcasted_cov_diag, x, q._capacitance_tril)


def _woodbury_factor(q: LowRankMultivariateNormal) -> Tensor:
    """``A = L_C^-1 Wᵀ D^-1``, so that ``Σq^-1 = D^-1 - Aᵀ A`` (the Woodbury identity)."""
    qWt_qDinv = q._unbroadcasted_cov_factor.mT / q._unbroadcasted_cov_diag.unsqueeze(-2)
    return linalg.solve_triangular(q._capacitance_tril, qWt_qDinv, upper=False)


@register_kl(LowRankMultivariateNormal, LowRankMultivariateNormal)
def _kl_lowrankmultivariatenormal_lowrankmultivariatenormal(p: LowRankMultivariateNormal,
                                                            q: LowRankMultivariateNormal) -> Tensor:
    _check_event_shapes(p, q)
    term1 = _lowrank_logdet(q) - _lowrank_logdet(p)
    term3 = _lowrank_mahalanobis(q, q.loc - p.loc)
    # tr(Σq^-1 Σp) = tr((qD^-1 - Aᵀ A)(pD + pW pWᵀ)), expanded into four traces.
    A = _woodbury_factor(q)
    term21 = (p._unbroadcasted_cov_diag / q._unbroadcasted_cov_diag).sum(-1)
    term22 = _batch_trace_XXT(p._unbroadcasted_cov_factor * q._unbroadcasted_cov_diag.rsqrt().unsqueeze(-1))
    term23 = _batch_trace_XXT(A * p._unbroadcasted_cov_diag.sqrt().unsqueeze(-2))
    term24 = _batch_trace_XXT(A @ p._unbroadcasted_cov_factor)
    return 0.5 * (term1 + term21 + term22 - term23 - term24 + term3 - p.event_shape[0])


@register_kl(MultivariateNormal, LowRankMultivariateNormal)
def _kl_multivariatenormal_lowrankmultivariatenormal(p: MultivariateNormal, q: LowRankMultivariateNormal) -> Tensor:
    _check_event_shapes(p, q)
    term1 = _lowrank_logdet(q) - 2 * p._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
    term3 = _lowrank_mahalanobis(q, q.loc - p.loc)
    # tr(Σq^-1 Σp) = tr((qD^-1 - Aᵀ A) pL pLᵀ).
    A = _woodbury_factor(q)
    term21 = _batch_trace_XXT(p._unbroadcasted_scale_tril * q._unbroadcasted_cov_diag.rsqrt().unsqueeze(-1))
    term22 = _batch_trace_XXT(A @ p._unbroadcasted_scale_tril)
    return 0.5 * (term1 + term21 - term22 + term3 - p.event_shape[0])


@register_kl(LowRankMultivariateNormal, MultivariateNormal)
def _kl_lowrankmultivariatenormal_multivariatenormal(p: LowRankMultivariateNormal, q: MultivariateNormal) -> Tensor:
    _check_event_shapes(p, q)
    term1 = 2 * q._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1) - _lowrank_logdet(p)
    term3 = _batch_mahalanobis(q._unbroadcasted_scale_tril, q.loc - p.loc)
    # tr(Σq^-1 Σp) = |qL^-1 pW|_F² + |qL^-1 pD^½|_F².
    n = p.event_shape[0]
    # (torch leaves cov_diag's batch dimensions out of this shape, and fails when only cov_diag is batched.)
    batch = tuple(F.broadcast_shapes(tuple(q._unbroadcasted_scale_tril.shape[:-2]),
                                     tuple(p._unbroadcasted_cov_factor.shape[:-2]),
                                     tuple(p._unbroadcasted_cov_diag.shape[:-1])))
    q_scale_tril = q._unbroadcasted_scale_tril.expand(batch + (n, n))
    p_cov_factor = p._unbroadcasted_cov_factor.expand(batch + (n, p.cov_factor.shape[-1]))
    p_cov_diag = F.diag_embed(p._unbroadcasted_cov_diag.sqrt()).expand(batch + (n, n))
    term21 = _batch_trace_XXT(linalg.solve_triangular(q_scale_tril, p_cov_factor, upper=False))
    term22 = _batch_trace_XXT(linalg.solve_triangular(q_scale_tril, p_cov_diag, upper=False))
    return 0.5 * (term1 + term21 + term22 + term3 - p.event_shape[0])


@register_kl(Independent, Independent)
def _kl_independent_independent(p: Independent, q: Independent) -> Tensor:
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError
    return sum_rightmost(kl_divergence(p.base_dist, q.base_dist), p.reinterpreted_batch_ndims)


@register_kl(TransformedDistribution, TransformedDistribution)
def _kl_transformed_transformed(p: TransformedDistribution, q: TransformedDistribution) -> Tensor:
    if p.transforms != q.transforms:
        raise NotImplementedError
    if p.event_shape != q.event_shape:
        raise NotImplementedError
    return kl_divergence(p.base_dist, q.base_dist)
