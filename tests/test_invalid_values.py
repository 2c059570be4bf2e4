"""Values torch refuses or treats specially (NaN, inf, negative counts, empty attention rows): Genesis answers as
torch does, with the same exception class, rather than returning a plausible wrong number."""

import math

import pytest
import torch

from tests.helpers import check, check_error

NAN, INF = math.nan, math.inf


def test_median_propagates_nan():
    x = torch.tensor([[NAN, 1.0, NAN, 0.0], [3.0, NAN, 2.0, NAN], [3.0, 1.0, 2.0, 5.0]], requires_grad=True)
    check(lambda lib, t: lib.median(t), x)
    check(lambda lib, t: tuple(lib.median(t, 1)), x)
    check(lambda lib, t: tuple(lib.median(t, 0, keepdim=True)), x)
    check(lambda lib, t: tuple(lib.nanmedian(t, 1)), x)
    check(lambda lib, t: lib.nanmedian(t), x)


@pytest.mark.parametrize("probs", [[0.5, NAN], [0.5, INF], [0.5, -1.0]])
def test_multinomial_refuses_invalid_probabilities(probs):
    check_error(RuntimeError, lambda lib, p: lib.multinomial(p, 1), torch.tensor(probs),
                match="probability tensor contains either `inf`, `nan` or element < 0")


@pytest.mark.parametrize("shape", [(0,), (2, 0)])
def test_multinomial_refuses_empty_weights(shape):
    check_error(RuntimeError, lambda lib, p: lib.multinomial(p, 1, True), torch.ones(shape))


@pytest.mark.parametrize("std", [-1.0, NAN])
def test_normal_refuses_negative_std(std):
    check_error(RuntimeError, lambda lib, s: lib.normal(torch.zeros(2) if lib is torch else lib.zeros(2), s),
                torch.tensor([1.0, std]), match="normal expects all elements of std >= 0.0")
    check_error(RuntimeError, lambda lib, m: lib.normal(m, std), torch.zeros(2), match="normal expects std >= 0.0")
    check_error(RuntimeError, lambda lib, t: t.normal_(0.0, std), torch.zeros(2), match="normal expects std >= 0.0")


def test_repeat_interleave_refuses_negative_repeats():
    x = torch.tensor([1, 2])
    check_error(RuntimeError, lambda lib, t, r: lib.repeat_interleave(t, r), x, torch.tensor([1, -1]),
                match="repeats can not be negative")
    check_error(RuntimeError, lambda lib, t, r: lib.repeat_interleave(t, r), x, torch.tensor([-1]))
    check_error(RuntimeError, lambda lib, t: lib.repeat_interleave(t, -1), x, match="Repeats must be non-negative")
    check_error(RuntimeError, lambda lib, r: lib.repeat_interleave(r), torch.tensor([-1, 2]))


@pytest.mark.parametrize("p, y, name", [(0.5, 2.0, "target"), (0.5, -1.0, "target"), (0.5, NAN, "target"),
                                        (1.5, 2.0, "input"), (NAN, 1.0, "input")])
def test_binary_cross_entropy_checks_ranges(p, y, name):
    check_error(RuntimeError, lambda lib, a, b: lib.nn.functional.binary_cross_entropy(a, b), torch.tensor([p]),
                torch.tensor([y]), match=f"all elements of {name} should be between 0 and 1")


def test_histc_nan():
    x = torch.tensor([1.0, NAN, 2.0])
    check(lambda lib, t: lib.histc(t, bins=4, min=0, max=3), x, backward=False)  # NaN outside any bin
    check_error(RuntimeError, lambda lib, t: lib.histc(t, bins=4), x, match="is not finite")  # range is NaN


@pytest.mark.parametrize("float_mask", [False, True])
def test_sdpa_fully_masked_row_is_zero(float_mask):
    q, k, v = (torch.randn(1, 2, n, 4, dtype=torch.float64, requires_grad=True) for n in (3, 5, 5))
    mask = torch.ones(3, 5, dtype=torch.bool)
    mask[1] = False
    if float_mask:
        mask = torch.zeros(3, 5, dtype=torch.float64).masked_fill(~mask, -INF)
    check(lambda lib, a, b, c, m: lib.nn.functional.scaled_dot_product_attention(a, b, c, attn_mask=m),
          q, k, v, mask)
