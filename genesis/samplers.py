"""torch's namespace samplers that draw through the samplers of ``genesis.distributions``: ``poisson(input,
generator)`` and ``binomial(count, prob, generator)``. They live here, above ``genesis.distributions``, because the
op layer may not import it."""

from __future__ import annotations

from typing import Callable

from genesis import dtypes, random
from genesis.distributions.counts import _binomial, _poisson
from genesis.ops import ones_like_bool, where
from genesis.ops._args import check_tensors
from genesis.tensor import Tensor


def poisson(input: Tensor, generator: random.Generator | None = None) -> Tensor:
    """Poisson draws with the rates ``input`` (non-negative floats), in ``input``'s dtype: exponential inter-arrival
    times below rate 10, Hörmann's transformed rejection (PTRS) above (``genesis.distributions.Poisson``'s sampler).

    ``generator`` supplies the numbers (the device's default generator otherwise) and advances. The result carries a
    zero gradient, as torch's. Infinite rates give infinity (torch's kernel returns an undefined integer there).
    """
    check_tensors("poisson", input=input)
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"poisson: not implemented for '{dtypes.SCALAR_TYPE_NAMES[input.dtype]}' (floating "
                                  "rates only)")
    rates = input.detach()
    if rates.numel() and not bool((rates >= 0).all().item()):  # NaN fails too
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    sample = _draw("poisson", lambda: _poisson(rates), input, generator)
    # The sample's values, with a zero gradient to the rates (torch's poisson backward).
    return where(ones_like_bool(sample), sample, input) if input.requires_grad else sample


def binomial(count: Tensor, prob: Tensor, generator: random.Generator | None = None) -> Tensor:
    """Binomial draws of ``count`` trials (floats) with success probabilities ``prob``, in ``count``'s dtype
    (``genesis.distributions.Binomial``'s sampler). ``generator`` supplies the numbers (the device's default generator
    otherwise) and advances. No gradient flows to either input."""
    check_tensors("binomial", count=count, prob=prob)
    if not count.dtype.is_floating_point:
        raise ValueError("binomial only supports floating-point dtypes for count, got: "
                         f"{dtypes.SCALAR_TYPE_NAMES[count.dtype]}")
    n, p = count.detach(), prob.detach()
    return _draw("binomial", lambda: _binomial(n, p), count, generator)


def _draw(op: str, sampler: Callable[[], Tensor], input: Tensor, generator: random.Generator | None) -> Tensor:
    """Run ``sampler`` (which reads the device's default generator) on ``generator``'s stream of numbers."""
    if generator is None:
        return sampler()
    if generator.device != input.device:
        raise RuntimeError(f"{op}: expected a generator on {input.device}, got one on {generator.device}")
    default = random.default_generator(input.device)
    saved = default.get_state()
    default.set_state(generator.get_state())
    try:
        return sampler()
    finally:
        generator.set_state(default.get_state())
        default.set_state(saved)
