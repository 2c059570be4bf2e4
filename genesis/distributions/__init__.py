"""``genesis.distributions``: probability distributions with sampling, log-densities and KL divergences, as
``torch.distributions``.

Continuous: :class:`Normal`, :class:`Uniform`, :class:`Exponential`, :class:`Laplace`, :class:`LogNormal`,
:class:`Gamma`, :class:`Chi2`, :class:`InverseGamma`, :class:`FisherSnedecor`, :class:`Beta`, :class:`Dirichlet`,
:class:`ContinuousBernoulli`, :class:`Kumaraswamy`, :class:`Cauchy`, :class:`StudentT`, :class:`Pareto`,
:class:`GeneralizedPareto`, :class:`HalfNormal`, :class:`HalfCauchy`, :class:`Gumbel`, :class:`Weibull`,
:class:`VonMises`, :class:`MultivariateNormal`, :class:`LowRankMultivariateNormal`, :class:`LKJCholesky`,
:class:`Wishart`. Discrete:
:class:`Bernoulli`, :class:`Categorical`, :class:`OneHotCategorical`, :class:`Multinomial`, :class:`Poisson`,
:class:`Binomial`, :class:`NegativeBinomial`, :class:`Geometric`. Relaxed (reparameterized
stand-ins for discrete ones): :class:`RelaxedBernoulli`, :class:`LogitRelaxedBernoulli`,
:class:`RelaxedOneHotCategorical`, :class:`ExpRelaxedCategorical`. Combinators: :class:`Independent`,
:class:`MixtureSameFamily` and :class:`TransformedDistribution` with the transforms of
:mod:`genesis.distributions.transforms`; :func:`kl_divergence` with :func:`register_kl`; :mod:`constraints`, and
:func:`biject_to` / :func:`transform_to` (:mod:`constraint_registry`), which give a transform from the reals onto a
constraint.
Everything is written with Genesis tensor ops, so it runs on every device and differentiates through autograd.
"""

import sys
import types

# Importing kl_cross_family registers the KL pairs of different families.
from genesis.distributions import constraint_registry, constraints, kl_cross_family, transforms  # noqa: F401
from genesis.distributions.constraint_registry import biject_to, transform_to
from genesis.distributions.continuous import Exponential, Laplace, Normal, Uniform
from genesis.distributions.counts import Binomial, Geometric, NegativeBinomial, Poisson
from genesis.distributions.discrete import Bernoulli, Categorical, OneHotCategorical, OneHotCategoricalStraightThrough
from genesis.distributions.distribution import Distribution, ExponentialFamily
from genesis.distributions.extreme_value import Gumbel, Weibull
from genesis.distributions.folded import HalfCauchy, HalfNormal
from genesis.distributions.gamma import Beta, Chi2, Dirichlet, FisherSnedecor, Gamma, InverseGamma
from genesis.distributions.heavy_tailed import Cauchy, GeneralizedPareto, Pareto, StudentT
from genesis.distributions.independent import Independent
from genesis.distributions.kl import kl_divergence, register_kl
from genesis.distributions.lkj_cholesky import LKJCholesky
from genesis.distributions.low_rank import LowRankMultivariateNormal
from genesis.distributions.mixture import MixtureSameFamily
from genesis.distributions.multinomial import Multinomial
from genesis.distributions.multivariate_normal import MultivariateNormal
from genesis.distributions.relaxed import (
    ExpRelaxedCategorical,
    LogitRelaxedBernoulli,
    RelaxedBernoulli,
    RelaxedOneHotCategorical,
)
from genesis.distributions.transformed_distribution import LogisticNormal, LogNormal, TransformedDistribution
from genesis.distributions.transforms import (
    AbsTransform,
    AffineTransform,
    CatTransform,
    ComposeTransform,
    CorrCholeskyTransform,
    CumulativeDistributionTransform,
    ExpTransform,
    IndependentTransform,
    LowerCholeskyTransform,
    PositiveDefiniteTransform,
    PowerTransform,
    ReshapeTransform,
    SigmoidTransform,
    SoftmaxTransform,
    SoftplusTransform,
    StackTransform,
    StickBreakingTransform,
    TanhTransform,
    Transform,
    identity_transform,
)
from genesis.distributions.unit_interval import ContinuousBernoulli, Kumaraswamy
from genesis.distributions.von_mises import VonMises
from genesis.distributions.wishart import Wishart

__all__ = [
    "AbsTransform", "AffineTransform", "Bernoulli", "Beta", "Binomial", "CatTransform", "Categorical", "Cauchy",
    "Chi2", "ComposeTransform", "ContinuousBernoulli", "CorrCholeskyTransform", "CumulativeDistributionTransform",
    "Dirichlet", "Distribution", "ExpRelaxedCategorical", "ExpTransform", "Exponential", "ExponentialFamily",
    "FisherSnedecor", "Gamma", "GeneralizedPareto", "Geometric", "Gumbel", "HalfCauchy", "HalfNormal", "Independent",
    "IndependentTransform", "InverseGamma", "Kumaraswamy", "LKJCholesky", "Laplace", "LogNormal", "LogisticNormal",
    "LogitRelaxedBernoulli", "LowRankMultivariateNormal", "LowerCholeskyTransform", "MixtureSameFamily",
    "Multinomial", "MultivariateNormal", "NegativeBinomial", "Normal", "OneHotCategorical",
    "OneHotCategoricalStraightThrough", "Pareto", "Poisson", "PositiveDefiniteTransform", "PowerTransform",
    "RelaxedBernoulli", "RelaxedOneHotCategorical", "ReshapeTransform", "SigmoidTransform", "SoftmaxTransform",
    "SoftplusTransform", "StackTransform", "StickBreakingTransform", "StudentT", "TanhTransform", "Transform",
    "TransformedDistribution", "Uniform", "VonMises", "Weibull", "Wishart", "biject_to", "constraint_registry",
    "constraints", "identity_transform", "kl_divergence", "register_kl", "transform_to", "transforms",
]

# torch's module of each distribution (``from torch.distributions.normal import Normal``). Genesis groups the
# families by kind in fewer files; these names are modules holding the same classes.
_TORCH_MODULES = {
    "bernoulli": ("Bernoulli",), "beta": ("Beta",), "binomial": ("Binomial",), "categorical": ("Categorical",),
    "cauchy": ("Cauchy",), "chi2": ("Chi2",), "continuous_bernoulli": ("ContinuousBernoulli",),
    "dirichlet": ("Dirichlet",), "exp_family": ("ExponentialFamily",), "exponential": ("Exponential",),
    "fishersnedecor": ("FisherSnedecor",), "generalized_pareto": ("GeneralizedPareto",),
    "geometric": ("Geometric",), "gumbel": ("Gumbel",),
    "half_cauchy": ("HalfCauchy",), "half_normal": ("HalfNormal",), "inverse_gamma": ("InverseGamma",),
    "kumaraswamy": ("Kumaraswamy",), "laplace": ("Laplace",), "log_normal": ("LogNormal",),
    "logistic_normal": ("LogisticNormal",), "lowrank_multivariate_normal": ("LowRankMultivariateNormal",),
    "mixture_same_family": ("MixtureSameFamily",), "negative_binomial": ("NegativeBinomial",), "normal": ("Normal",),
    "one_hot_categorical": ("OneHotCategorical", "OneHotCategoricalStraightThrough"), "pareto": ("Pareto",),
    "poisson": ("Poisson",), "relaxed_bernoulli": ("LogitRelaxedBernoulli", "RelaxedBernoulli"),
    "relaxed_categorical": ("ExpRelaxedCategorical", "RelaxedOneHotCategorical"), "studentT": ("StudentT",),
    "uniform": ("Uniform",), "weibull": ("Weibull",), "wishart": ("Wishart",),
}


def _register_torch_modules() -> None:
    for name, classes in _TORCH_MODULES.items():
        module = types.ModuleType(f"{__name__}.{name}", f"torch.distributions.{name}: {', '.join(classes)}.")
        module.__all__ = list(classes)
        for cls in classes:
            setattr(module, cls, globals()[cls])
        sys.modules[module.__name__] = module
        globals()[name] = module


_register_torch_modules()
