"""``MixtureSameFamily``: a finite mixture whose components are the rightmost batch dimension of one distribution."""

from __future__ import annotations

from typing import Sequence

import genesis.ops as F
from genesis.autograd import no_grad
from genesis.distributions import constraints
from genesis.distributions.discrete import Categorical
from genesis.distributions.distribution import Distribution
from genesis.tensor import Size, Tensor


class MixtureSameFamily(Distribution):
    """A mixture of ``K`` components of one family: ``p(x) = Σ_k π_k p_k(x)``.

    The components are the rightmost batch dimension (of size ``K``) of ``component_distribution``; the weights ``π``
    come from ``mixture_distribution``, a Categorical over ``K`` whose batch shape broadcasts with the rest of the
    component batch shape. ``log_prob`` is a logsumexp over the components; sampling picks a component per draw and
    is not reparameterized.

    Args:
        mixture_distribution: a :class:`Categorical` with ``K`` events.
        component_distribution: any distribution with batch shape ``batch_shape + (K,)``.
        validate_args: check ``log_prob``'s values (default: the global setting).
    """

    arg_constraints: dict[str, constraints.Constraint] = {}
    has_rsample = False

    def __init__(self, mixture_distribution: Categorical, component_distribution: Distribution,
                 validate_args: bool | None = None) -> None:
        if not isinstance(mixture_distribution, Categorical):
            raise ValueError(" The Mixture distribution needs to be an  instance of genesis.distributions.Categorical")
        if not isinstance(component_distribution, Distribution):
            raise ValueError("The Component distribution needs to be an instance of "
                             "genesis.distributions.Distribution")
        self._mixture_distribution = mixture_distribution
        self._component_distribution = component_distribution
        mdbs = tuple(mixture_distribution.batch_shape)
        cdbs = tuple(component_distribution.batch_shape[:-1])
        for size1, size2 in zip(reversed(mdbs), reversed(cdbs)):
            if size1 != 1 and size2 != 1 and size1 != size2:
                raise ValueError(f"`mixture_distribution.batch_shape` ({Size(mdbs)}) is not compatible with "
                                 f"`component_distribution.batch_shape`({Size(cdbs)})")
        km = mixture_distribution.logits.shape[-1]
        kc = component_distribution.batch_shape[-1] if len(component_distribution.batch_shape) else None
        if km != kc:
            raise ValueError(f"`mixture_distribution component` ({km}) does not equal "
                             f"`component_distribution.batch_shape[-1]` ({kc})")
        self._num_component = km
        event_shape = component_distribution.event_shape
        self._event_ndims = len(event_shape)
        super().__init__(batch_shape=cdbs, event_shape=event_shape, validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Distribution | None = None) -> MixtureSameFamily:
        batch_shape = Size(batch_shape)
        new = self._get_checked_instance(MixtureSameFamily, _instance)
        new._component_distribution = self._component_distribution.expand(tuple(batch_shape) + (self._num_component,))
        new._mixture_distribution = self._mixture_distribution.expand(batch_shape)
        new._num_component = self._num_component
        new._event_ndims = self._event_ndims
        Distribution.__init__(new, batch_shape, new._component_distribution.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property
    def support(self) -> constraints.Constraint:
        return constraints.MixtureSameFamilyConstraint(self._component_distribution.support)

    @property
    def mixture_distribution(self) -> Categorical:
        """The Categorical distribution of the component index."""
        return self._mixture_distribution

    @property
    def component_distribution(self) -> Distribution:
        """The components, along the rightmost batch dimension."""
        return self._component_distribution

    @property
    def mean(self) -> Tensor:
        probs = self._pad_mixture_dimensions(self.mixture_distribution.probs)
        return (probs * self.component_distribution.mean).sum(-1 - self._event_ndims)  # (B, E)

    @property
    def variance(self) -> Tensor:
        # The law of total variance: E[Var(x | k)] + Var(E[x | k]).
        probs = self._pad_mixture_dimensions(self.mixture_distribution.probs)
        mean_cond_var = (probs * self.component_distribution.variance).sum(-1 - self._event_ndims)
        var_cond_mean = (probs * (self.component_distribution.mean - self._pad(self.mean)).pow(2.0)).sum(
            -1 - self._event_ndims)
        return mean_cond_var + var_cond_mean

    def cdf(self, x: Tensor) -> Tensor:
        cdf_x = self.component_distribution.cdf(self._pad(x))
        return (cdf_x * self.mixture_distribution.probs).sum(-1)

    def log_prob(self, x: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(x)
        log_prob_x = self.component_distribution.log_prob(self._pad(x))  # (S, B, K)
        log_mix_prob = F.log_softmax(self.mixture_distribution.logits, -1)  # (B, K)
        return (log_prob_x + log_mix_prob).logsumexp(-1)  # (S, B)

    def sample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        with no_grad():
            sample_shape = tuple(sample_shape)
            gather_dim = len(sample_shape) + len(self.batch_shape)
            es = tuple(self.event_shape)
            # The mixture's batch shape may be a broadcastable suffix of B: (S, B') -> (S, 1.., B') -> (S, B).
            mix_batch = tuple(self.mixture_distribution.batch_shape)
            mix_sample = self.mixture_distribution.sample(sample_shape)
            mix_sample = mix_sample.reshape(sample_shape + (1,) * (len(self.batch_shape) - len(mix_batch)) + mix_batch)
            mix_sample = mix_sample.expand(sample_shape + tuple(self.batch_shape))
            comp_samples = self.component_distribution.sample(sample_shape)  # (S, B, K, E)
            index = mix_sample.reshape(tuple(mix_sample.shape) + (1,) * (len(es) + 1))
            index = index.repeat((1,) * mix_sample.ndim + (1,) + es)  # (S, B, 1, E)
            return comp_samples.gather(gather_dim, index).squeeze(gather_dim)

    def _pad(self, x: Tensor) -> Tensor:
        """``x`` with a component dimension inserted before the event dimensions."""
        return x.unsqueeze(-1 - self._event_ndims)

    def _pad_mixture_dimensions(self, x: Tensor) -> Tensor:
        """Mixture weights ``(B', K)`` reshaped to broadcast against component moments ``(B, K, E)``."""
        dist_batch_ndims = len(self.batch_shape)
        cat_batch_ndims = len(self.mixture_distribution.batch_shape)
        pad_ndims = 0 if cat_batch_ndims == 1 else dist_batch_ndims - cat_batch_ndims
        xs = tuple(x.shape)
        return x.reshape(xs[:-1] + (1,) * pad_ndims + xs[-1:] + (1,) * self._event_ndims)

    def __repr__(self) -> str:
        return f"MixtureSameFamily(\n  {self.mixture_distribution},\n  {self.component_distribution})"
