"""``genesis.distributions``: probability distributions with sampling, log-densities and KL divergences, as
``torch.distributions``.

Continuous: :class:`Normal`, :class:`Uniform`, :class:`Exponential`, :class:`Laplace`, :class:`LogNormal`,
:class:`Gamma`, :class:`Chi2`, :class:`Beta`, :class:`Dirichlet`, :class:`Cauchy`, :class:`StudentT`,
:class:`Pareto`, :class:`HalfNormal`, :class:`HalfCauchy`, :class:`Gumbel`, :class:`Weibull`, :class:`VonMises`,
:class:`MultivariateNormal`. Discrete: :class:`Bernoulli`, :class:`Categorical`, :class:`OneHotCategorical`,
:class:`Poisson`, :class:`Binomial`, :class:`NegativeBinomial`, :class:`Geometric`. Relaxed (reparameterized
stand-ins for discrete ones): :class:`RelaxedBernoulli`, :class:`LogitRelaxedBernoulli`,
:class:`RelaxedOneHotCategorical`, :class:`ExpRelaxedCategorical`. Combinators: :class:`Independent`,
:class:`MixtureSameFamily` and :class:`TransformedDistribution` with the transforms of
:mod:`genesis.distributions.transforms`; :func:`kl_divergence` with :func:`register_kl`; :mod:`constraints`.
Everything is written with Genesis tensor ops, so it runs on every device and differentiates through autograd.
"""

from genesis.distributions import constraints, transforms
from genesis.distributions.continuous import Exponential, Laplace, Normal, Uniform
from genesis.distributions.counts import Binomial, Geometric, NegativeBinomial, Poisson
from genesis.distributions.discrete import Bernoulli, Categorical, OneHotCategorical
from genesis.distributions.distribution import Distribution
from genesis.distributions.extreme_value import Gumbel, Weibull
from genesis.distributions.folded import HalfCauchy, HalfNormal
from genesis.distributions.gamma import Beta, Chi2, Dirichlet, Gamma
from genesis.distributions.heavy_tailed import Cauchy, Pareto, StudentT
from genesis.distributions.independent import Independent
from genesis.distributions.kl import kl_divergence, register_kl
from genesis.distributions.mixture import MixtureSameFamily
from genesis.distributions.multivariate_normal import MultivariateNormal
from genesis.distributions.relaxed import (
    ExpRelaxedCategorical,
    LogitRelaxedBernoulli,
    RelaxedBernoulli,
    RelaxedOneHotCategorical,
)
from genesis.distributions.transformed_distribution import LogNormal, TransformedDistribution
from genesis.distributions.transforms import (
    AbsTransform,
    AffineTransform,
    ComposeTransform,
    ExpTransform,
    PowerTransform,
    SigmoidTransform,
    SoftmaxTransform,
    TanhTransform,
    Transform,
)
from genesis.distributions.von_mises import VonMises

__all__ = [
    "AbsTransform", "AffineTransform", "Bernoulli", "Beta", "Binomial", "Categorical", "Cauchy", "Chi2",
    "ComposeTransform", "Dirichlet", "Distribution", "ExpRelaxedCategorical", "ExpTransform", "Exponential", "Gamma",
    "Geometric", "Gumbel", "HalfCauchy", "HalfNormal", "Independent", "Laplace", "LogNormal", "LogitRelaxedBernoulli",
    "MixtureSameFamily", "MultivariateNormal", "NegativeBinomial", "Normal", "OneHotCategorical", "Pareto", "Poisson",
    "PowerTransform", "RelaxedBernoulli", "RelaxedOneHotCategorical", "SigmoidTransform", "SoftmaxTransform",
    "StudentT", "TanhTransform", "Transform", "TransformedDistribution", "Uniform", "VonMises", "Weibull",
    "constraints", "kl_divergence", "register_kl", "transforms",
]
