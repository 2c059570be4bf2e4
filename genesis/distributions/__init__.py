"""``genesis.distributions``: probability distributions with sampling, log-densities and KL divergences, as
``torch.distributions``.

Distributions: :class:`Normal`, :class:`Bernoulli`, :class:`Categorical`, :class:`OneHotCategorical`, :class:`Beta`,
:class:`Gamma`, :class:`Dirichlet`, :class:`Uniform`, :class:`Exponential`, :class:`Laplace`, :class:`LogNormal`,
:class:`MultivariateNormal`, :class:`Independent` and :class:`TransformedDistribution` with the transforms of
:mod:`genesis.distributions.transforms`; :func:`kl_divergence` with :func:`register_kl`; :mod:`constraints`.
Everything is written with Genesis tensor ops, so it runs on every device and differentiates through autograd.
"""

from genesis.distributions import constraints, transforms
from genesis.distributions.continuous import Exponential, Laplace, Normal, Uniform
from genesis.distributions.discrete import Bernoulli, Categorical, OneHotCategorical
from genesis.distributions.distribution import Distribution
from genesis.distributions.gamma import Beta, Dirichlet, Gamma
from genesis.distributions.independent import Independent
from genesis.distributions.kl import kl_divergence, register_kl
from genesis.distributions.multivariate_normal import MultivariateNormal
from genesis.distributions.transformed_distribution import LogNormal, TransformedDistribution
from genesis.distributions.transforms import (
    AffineTransform,
    ComposeTransform,
    ExpTransform,
    PowerTransform,
    SigmoidTransform,
    SoftmaxTransform,
    TanhTransform,
    Transform,
)

__all__ = [
    "AffineTransform", "Bernoulli", "Beta", "Categorical", "ComposeTransform", "Dirichlet", "Distribution",
    "ExpTransform", "Exponential", "Gamma", "Independent", "Laplace", "LogNormal", "MultivariateNormal", "Normal",
    "OneHotCategorical", "PowerTransform", "SigmoidTransform", "SoftmaxTransform", "TanhTransform", "Transform",
    "TransformedDistribution", "Uniform", "constraints", "kl_divergence", "register_kl", "transforms",
]
