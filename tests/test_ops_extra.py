"""Composite statistics, products, shape/scatter ops and genesis.linalg against torch (values, dtypes, gradients)."""

import math

import numpy as np
import pytest
import torch

import genesis
from tests.helpers import DEVICE, assert_same, check, check_bits, check_error, rand, to_genesis


def ints(*values, dtype=torch.int64):
    return torch.tensor(values, dtype=dtype)


# ------------------------------------------------------------------ statistics

def test_std_mean_nansum_nanmean():
    x = rand(3, 4)
    check(lambda lib, x: lib.std_mean(x, 1), x)
    check(lambda lib, x: lib.std_mean(x, (0, 1), keepdim=True, correction=0), x)
    with_nan = rand(3, 4, seed=1).detach()
    with_nan[0, 1] = math.nan
    with_nan[2] = math.nan
    with_nan.requires_grad_(True)
    check(lambda lib, x: lib.nansum(x), with_nan)
    check(lambda lib, x: lib.nansum(x, 1, keepdim=True), with_nan)
    check(lambda lib, x: x.nanmean(1), with_nan)
    check(lambda lib, x: lib.nanmean(x), with_nan)
    check(lambda lib, x: lib.nansum(x), ints(1, 2, 3))
    check(lambda lib, x: lib.nansum(x, dtype=lib.float64), ints(1, 2, 3))
    check_error(RuntimeError, lambda lib, x: lib.nanmean(x), ints(1, 2))


def _torch_differentiates_aminmax() -> bool:
    """Whether this torch has aminmax's derivative (torch 2.11 raises "derivative for aten::aminmax is not
    implemented"; torch 2.13 has it)."""
    try:
        torch.aminmax(torch.ones(2, requires_grad=True)).min.backward()
    except RuntimeError as err:
        if "not implemented" not in str(err):
            raise
        return False
    return True


TORCH_DIFFERENTIATES_AMINMAX = _torch_differentiates_aminmax()


def _aminmax(lib, x, method=False, **kwargs):
    """``aminmax`` as a (min, max) tuple; on a torch without its derivative, torch's ``(amin, amax)``: the same
    values and, ties shared evenly, the same gradients (what torch 2.13's aminmax derivative gives)."""
    if lib is torch and not TORCH_DIFFERENTIATES_AMINMAX:
        return torch.amin(x, **kwargs), torch.amax(x, **kwargs)
    return tuple(x.aminmax(**kwargs) if method else lib.aminmax(x, **kwargs))


def test_aminmax():
    x = rand(3, 4).detach()
    x[0, 2] = x[0, 1]
    x.requires_grad_(True)
    check(lambda lib, x: _aminmax(lib, x), x)
    check(lambda lib, x: _aminmax(lib, x, method=True, dim=1, keepdim=True), x)
    check(lambda lib, x: _aminmax(lib, x, keepdim=True), x)
    result = genesis.aminmax(to_genesis(x), dim=0)
    assert result.min.shape == (4,) and result.max.shape == (4,)
    check_error(RuntimeError, lambda lib, x: lib.aminmax(x), torch.zeros(0))
    check_error(IndexError, lambda lib, x: lib.aminmax(x, dim=1), torch.zeros(2, 0))
    check(lambda lib, x: tuple(lib.aminmax(x, dim=1)), torch.zeros(0, 2))


@pytest.mark.parametrize("op", ["cummax", "cummin"])
def test_cummax_cummin(op):
    x = torch.tensor([[1.0, 3.0, 3.0, 2.0, 5.0, 5.0, 0.5], [4.0, 1.0, 1.0, 2.0, 0.0, 0.0, 7.0]], dtype=torch.float64,
                     requires_grad=True)
    check(lambda lib, x: tuple(getattr(lib, op)(x, 1)), x)
    check(lambda lib, x: tuple(getattr(x, op)(0)), x)
    check(lambda lib, x: tuple(getattr(lib, op)(x, -1)), rand(2, 3, 5))
    check(lambda lib, x: tuple(getattr(lib, op)(x, 0)), ints(3, 1, 4, 1, 5, 9, 2, 6))
    check(lambda lib, x: tuple(getattr(lib, op)(x, 0)), torch.tensor([1.0, math.nan, 2.0, math.nan, 0.0]))
    check(lambda lib, x: tuple(getattr(lib, op)(x, 0)), torch.zeros(0))
    check(lambda lib, x: tuple(getattr(lib, op)(x, 0)), torch.tensor(2.5, requires_grad=True))
    check_error(IndexError, lambda lib, x: getattr(lib, op)(x, 2), rand(2, 3))


def test_logcumsumexp():
    check(lambda lib, x: lib.logcumsumexp(x, 1), rand(3, 9, low=-5, high=5))
    check(lambda lib, x: x.logcumsumexp(0), rand(4, 2))
    # Far apart values: a single shift by the maximum would underflow to -inf.
    check(lambda lib, x: lib.logcumsumexp(x, 0), torch.tensor([-1000.0, 0.0, -2000.0, 3.0], dtype=torch.float64,
                                                              requires_grad=True))
    check(lambda lib, x: lib.logcumsumexp(x, 0), torch.tensor([-math.inf, -math.inf, 1.0]))
    check(lambda lib, x: lib.logcumsumexp(x, 0), torch.zeros(0))
    check(lambda lib, x: lib.logcumsumexp(x, 0), rand(5, dtype=torch.float32))
    check_error(NotImplementedError, lambda lib, x: lib.logcumsumexp(x, 0), ints(1, 2))


def test_nanmedian_and_mode():
    x = torch.tensor([[3.0, math.nan, 1.0, 2.0], [math.nan, 8.0, math.nan, math.nan], [4.0, 0.5, 9.0, 7.0]],
                     dtype=torch.float64, requires_grad=True)
    check(lambda lib, x: tuple(lib.nanmedian(x, 1)), x)
    check(lambda lib, x: tuple(x.nanmedian(1, keepdim=True)), x)
    check(lambda lib, x: lib.nanmedian(x), x)
    # A slice of NaN only: NaN (torch's index there is unspecified).
    check(lambda lib, x: lib.nanmedian(x, 1).values, torch.full((2, 3), math.nan))
    check(lambda lib, x: tuple(lib.nanmedian(x, 0)), ints(5, 1, 3, 2))
    check(lambda lib, x: lib.nanmedian(x), torch.tensor([2.0, 2.0, 1.0, math.nan], requires_grad=True))
    check_error(IndexError, lambda lib, x: lib.nanmedian(x, 0), torch.zeros(0, 2))
    m = torch.tensor([[1.0, 3.0, 3.0, 2.0, 2.0, 5.0], [2.0, 1.0, 2.0, 1.0, 1.0, 2.0]], dtype=torch.float64,
                     requires_grad=True)
    check(lambda lib, x: tuple(lib.mode(x)), m)
    check(lambda lib, x: tuple(x.mode(0, keepdim=True)), m)
    check(lambda lib, x: tuple(lib.mode(x, 0)), ints(4, 4, 1, 1, 1, 7, 4))
    check(lambda lib, x: tuple(lib.mode(x)), torch.tensor(3.0))
    check_error(IndexError, lambda lib, x: lib.mode(x, 1), torch.zeros(2, 0))


@pytest.mark.parametrize("interpolation", ["linear", "lower", "higher", "midpoint", "nearest"])
def test_quantile(interpolation):
    x = rand(3, 7)
    check(lambda lib, x: lib.quantile(x, 0.3, dim=1, interpolation=interpolation), x)
    check(lambda lib, x, q: lib.quantile(x, q, dim=0, keepdim=True, interpolation=interpolation), x,
          torch.tensor([0.0, 0.25, 0.5, 1.0], dtype=torch.float64))
    check(lambda lib, x: x.quantile(0.75, interpolation=interpolation), x)
    check(lambda lib, x: lib.quantile(x, 0.5, keepdim=True, interpolation=interpolation), x)
    with_nan = rand(3, 6, seed=2).detach()
    with_nan[0, 3] = math.nan
    with_nan[1, 1:] = math.nan
    with_nan.requires_grad_(True)
    # Which NaN receives the gradient of a NaN quantile is unspecified: compare values only there.
    check(lambda lib, x: lib.quantile(x, 0.4, dim=1, interpolation=interpolation), with_nan, backward=False)
    check(lambda lib, x: lib.nanquantile(x, 0.4, dim=1, interpolation=interpolation), torch.full((2, 3), math.nan))
    check(lambda lib, x: lib.nanquantile(x, 0.4, dim=1, interpolation=interpolation), with_nan)
    check(lambda lib, x: x.nanquantile(0.65, interpolation=interpolation), with_nan)
    # Ranks exactly halfway between two neighbours (nearest rounds half to even).
    check(lambda lib, x: lib.quantile(x, 0.5, interpolation=interpolation), rand(4, seed=3))
    check(lambda lib, x: lib.quantile(x, 0.5, interpolation=interpolation), rand(6, seed=3))


def test_quantile_edges_and_errors():
    check_error(RuntimeError, lambda lib, x: lib.quantile(x, 0.5), torch.zeros(0))
    check(lambda lib, x: lib.quantile(x, 0.5, dim=0), torch.tensor(2.0, requires_grad=True))
    check(lambda lib, x: lib.quantile(x, 0.2), rand(1, dtype=torch.float32))
    check_error(RuntimeError, lambda lib, x: lib.quantile(x, 1.5), rand(3))
    check_error(RuntimeError, lambda lib, x: lib.quantile(x, 0.5), ints(1, 2))
    check_error(RuntimeError, lambda lib, x, q: lib.quantile(x, q), rand(3), torch.tensor([0.5], dtype=torch.float32))
    check_error(RuntimeError, lambda lib, x: lib.quantile(x, 0.5, interpolation="cubic"), rand(3))
    check_error(RuntimeError, lambda lib, x, q: lib.quantile(x, q), rand(3), rand(2, 2, requires_grad=False))
    check_error(RuntimeError, lambda lib, x: lib.quantile(x, 2), rand(3), match=r"range \[0, 1\] but got 2$")
    check_error(RuntimeError, lambda lib, x: lib.nanquantile(x, -0.25), rand(3),
                match=r"^quantile\(\) q must .* -0.25$")
    for dtype in (torch.float16, torch.bfloat16):
        check_error(RuntimeError, lambda lib, x: lib.quantile(x, 0.5), rand(3, dtype=dtype),
                    match="must be either float or double dtype")
        check_error(RuntimeError, lambda lib, x: lib.nanquantile(x, 0.5), rand(3, dtype=dtype),
                    match=r"^quantile\(\) input tensor")


def test_bincount_histc():
    x = ints(0, 1, 1, 3, 7, 1)
    check(lambda lib, x: lib.bincount(x), x)
    check(lambda lib, x: x.bincount(minlength=10), x)
    check(lambda lib, x, w: lib.bincount(x, w), x, rand(6, dtype=torch.float32, requires_grad=False))
    check(lambda lib, x, w: lib.bincount(x, w), x, rand(6, requires_grad=False))
    check(lambda lib, x, w: lib.bincount(x, w), x, ints(1, 2, 3, 4, 5, 6, dtype=torch.int32))
    check(lambda lib, x: lib.bincount(x), torch.zeros(0, dtype=torch.int64))
    check(lambda lib, x: lib.bincount(x, minlength=3), torch.zeros(0, dtype=torch.int64))
    check(lambda lib, x: lib.bincount(x), ints(2, 0, 2, dtype=torch.uint8))
    check_error(RuntimeError, lambda lib, x: lib.bincount(x), ints(-1, 2))
    check_error(RuntimeError, lambda lib, x: lib.bincount(x), ints(1, 2).reshape(1, 2))
    check_error(NotImplementedError, lambda lib, x: lib.bincount(x), torch.tensor([1.0]))
    h = torch.tensor([1.0, 2.0, 1.0, -3.0, 10.0, 2.9999], dtype=torch.float64)
    check(lambda lib, x: lib.histc(x, bins=4, min=0, max=3), h)
    check(lambda lib, x: x.histc(bins=5), h)
    check(lambda lib, x: lib.histc(x, bins=3), torch.tensor([2.0, 2.0]))
    check(lambda lib, x: lib.histc(x, bins=3), torch.zeros(0))
    check_error(RuntimeError, lambda lib, x: lib.histc(x, bins=0), h)
    check_error(RuntimeError, lambda lib, x: lib.histc(x, min=2, max=1), h)
    check_error(NotImplementedError, lambda lib, x: lib.histc(x), ints(1, 2))


def test_cov_corrcoef():
    x = rand(3, 6)
    check(lambda lib, x: lib.cov(x), x)
    check(lambda lib, x: x.cov(correction=0), x)
    check(lambda lib, x: lib.cov(x), rand(5))
    f = ints(1, 2, 1, 3, 1, 2)
    a = rand(6, low=0.1, high=2.0, requires_grad=False)
    check(lambda lib, x, f: lib.cov(x, fweights=f), x, f)
    check(lambda lib, x, a: lib.cov(x, aweights=a), x, a)
    check(lambda lib, x, f, a: lib.cov(x, fweights=f, aweights=a, correction=2), x, f, a)
    check(lambda lib, x, a: lib.cov(x, aweights=a, correction=0), x, a)
    check(lambda lib, x: lib.corrcoef(x), x)
    check(lambda lib, x: x.corrcoef(), rand(4))
    check_error(RuntimeError, lambda lib, x: lib.cov(x), rand(2, 2, 2))
    check_error(RuntimeError, lambda lib, x: lib.corrcoef(x), rand(2, 2, 2))
    check_error(RuntimeError, lambda lib, x, f: lib.cov(x, fweights=f), x, ints(1, 2))
    check_error(RuntimeError, lambda lib, x, f: lib.cov(x, fweights=f), x, ints(1, 2, -1, 3, 1, 2))
    check_error(RuntimeError, lambda lib, x, a: lib.cov(x, aweights=a), x, f)


def test_diff():
    x = rand(3, 5)
    check(lambda lib, x: lib.diff(x), x)
    check(lambda lib, x: x.diff(n=2, dim=0), x)
    check(lambda lib, x, p, a: lib.diff(x, 1, 1, p, a), x, rand(3, 1, seed=4), rand(3, 2, seed=5))
    check(lambda lib, x: lib.diff(x, n=7), x)
    check(lambda lib, x: lib.diff(x, n=0), x)
    check(lambda lib, x: lib.diff(x), torch.tensor([True, False, False, True]))
    check(lambda lib, x: lib.diff(x), ints(5, 2, 9))
    check_error(RuntimeError, lambda lib, x: lib.diff(x), torch.tensor(1.0))
    check_error(RuntimeError, lambda lib, x: lib.diff(x, n=-1), x)
    check_error(RuntimeError, lambda lib, x, p: lib.diff(x, prepend=p), x, rand(3, requires_grad=False))


# ------------------------------------------------------------------ products

def test_cross_vdot_kron():
    check(lambda lib, a, b: lib.cross(a, b, dim=1), rand(4, 3), rand(4, 3, seed=1))
    check(lambda lib, a, b: a.cross(b, dim=0), rand(3, 2), rand(3, 1, seed=1))
    check(lambda lib, a, b: lib.linalg.cross(a, b), rand(2, 4, 3), rand(4, 3, seed=1).unsqueeze(0))
    check_error(RuntimeError, lambda lib, a, b: lib.linalg.cross(a, b), rand(2, 4), rand(2, 4))
    check(lambda lib, a, b: lib.vdot(a, b), rand(5), rand(5, seed=1))
    check_error(RuntimeError, lambda lib, a, b: lib.vdot(a, b), rand(5), rand(5, dtype=torch.float32))
    check_error(RuntimeError, lambda lib, a, b: lib.vdot(a, b), rand(2, 2), rand(4))
    check(lambda lib, a, b: lib.kron(a, b), rand(2, 3), rand(4, 2, seed=1))
    check(lambda lib, a, b: a.kron(b), rand(3), rand(2, 2, seed=1))
    check(lambda lib, a, b: lib.kron(a, b), ints(1, 2), ints(3, 4, 5))
    check(lambda lib, a, b: lib.kron(a, b), rand(0, 2), rand(2, 2, seed=1))


@pytest.mark.parametrize("p", [2.0, 1.0, 0.5, 3.0, 0.0, math.inf])
def test_cdist_dist(p):
    a, b = rand(2, 4, 3), rand(2, 5, 3, seed=1)
    # torch's cdist backward fails for p = 0 (its gradient is zero): compare values there.
    check(lambda lib, a, b: lib.cdist(a, b, p=p), a, b, backward=p != 0)
    check(lambda lib, a, b: lib.dist(a, b, p), rand(3, 4), rand(4, seed=1), backward=p != 0)
    check(lambda lib, a, b: a.dist(b, p), rand(3, 4), rand(4, seed=1), backward=p != 0)


@pytest.mark.parametrize("mode", ["use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist"])
def test_cdist_through_a_matrix_product(mode):
    # torch's p = 2 choice with more than 25 rows on a side (always with use_mm_for_euclid_dist): distances from one
    # padded product, values as torch's; a zero distance has a zero gradient.
    a, b = rand(2, 30, 4), rand(1, 7, 4, seed=1)
    b.data[0, 0] = a.data[1, 2]
    check(lambda lib, a, b: lib.cdist(a, b, compute_mode=mode), a, b)
    check(lambda lib, a, b: lib.cdist(a, b, compute_mode=mode), rand(3, 4), rand(40, 4, seed=2))
    y = genesis.cdist(to_genesis(rand(3, 4)), to_genesis(rand(5, 4, seed=3)), compute_mode="use_mm_for_euclid_dist")
    assert type(y.grad_fn).__name__ == "EuclideanDistBackward0"


def test_cdist_pdist_infinity_norm_ties_and_no_coordinates():
    # torch's cdist and pdist give every coordinate at the maximum the whole gradient (dist and norm share it).
    a = torch.tensor([[0.0, 1.0], [3.0, 4.0], [1.0, 0.0]], dtype=torch.float64, requires_grad=True)
    b = torch.tensor([[0.0, 1.0], [2.0, 2.0]], dtype=torch.float64, requires_grad=True)
    check(lambda lib, a, b: lib.cdist(a, b, p=math.inf), a, b)
    check(lambda lib, a: lib.nn.functional.pdist(a, math.inf), a)
    check(lambda lib, a, b: lib.dist(a, b, math.inf), a[1], b[0])
    check(lambda lib, a, b: lib.cdist(a, b, p=math.inf), rand(2, 0), rand(3, 0))
    check(lambda lib, a: lib.nn.functional.pdist(a, math.inf), rand(3, 0))


def test_cdist_zero_distance_and_errors():
    a = rand(3, 2)
    check(lambda lib, a: lib.cdist(a, a), a)
    check(lambda lib, a, b: lib.cdist(a, b), rand(0, 3), rand(2, 3))
    check_error(RuntimeError, lambda lib, a, b: lib.cdist(a, b), rand(3, 2), rand(3, 4))
    check_error(RuntimeError, lambda lib, a, b: lib.cdist(a, b, p=-1), rand(3, 2), rand(3, 2))
    check_error(RuntimeError, lambda lib, a, b: lib.cdist(a, b), rand(3), rand(3, 3))


def test_addcmul_addcdiv_functions():
    x, t1, t2 = rand(3, 4), rand(4, seed=1), rand(3, 1, seed=2, low=0.5, high=2)
    check(lambda lib, x, a, b: lib.addcmul(x, a, b, value=0.5), x, t1, t2)
    check(lambda lib, x, a, b: lib.addcdiv(x, a, b, value=-2), x, t1, t2)
    check(lambda lib, x, a, b: lib.addcmul(x, a, b), ints(1, 2), ints(3, 4), ints(5, 6))
    check_error(RuntimeError, lambda lib, x, a, b: lib.addcdiv(x, a, b), ints(1, 2), ints(3, 4), ints(5, 6))


def test_add_products():
    check(lambda lib, x, m, v: lib.addmv(x, m, v, beta=0.5, alpha=2), rand(3), rand(3, 4, seed=1), rand(4, seed=2))
    check(lambda lib, x, m, v: x.addmv(m, v), rand(1), rand(3, 4, seed=1), rand(4, seed=2))
    check(lambda lib, x, a, b: lib.addr(x, a, b, alpha=3), rand(3, 4), rand(3, seed=1), rand(4, seed=2))
    check(lambda lib, x, a, b: lib.addbmm(x, a, b, beta=2), rand(3, 5), rand(2, 3, 4, seed=1), rand(2, 4, 5, seed=2))
    # beta = 0 ignores the input, NaN included, and gives it a zero gradient.
    nan_input = torch.full((3,), math.nan, dtype=torch.float64, requires_grad=True)
    check(lambda lib, x, m, v: lib.addmv(x, m, v, beta=0), nan_input, rand(3, 4, seed=1), rand(4, seed=2))
    check_error(RuntimeError, lambda lib, x, m, v: lib.addmv(x, m, v), rand(5), rand(3, 4), rand(4))
    check_error(RuntimeError, lambda lib, x, a, b: lib.addr(x, a, b), rand(3, 4), rand(3, 2), rand(4))


def test_inplace_products():
    def run(lib, x, a, b, v, bb1, bb2, s):
        x = x.clone()
        x.addmm_(a, b, beta=0.5, alpha=2)
        y = s.clone()
        y.baddbmm_(bb1, bb2)
        z = v.clone()
        z.addmv_(a, b[:, 0])
        w = x.clone()
        w.addr_(a[:, 0], b[0])
        u = x.clone()
        u.addbmm_(bb1[:, :3], bb2[:, :, :4])
        return x, y, z, w, u

    check(run, rand(3, 4), rand(3, 2, seed=1), rand(2, 4, seed=2), rand(3, seed=3), rand(2, 3, 5, seed=4),
          rand(2, 5, 4, seed=5), rand(2, 3, 4, seed=6))


def test_renorm():
    x = rand(4, 3, low=-3, high=3)
    check(lambda lib, x: lib.renorm(x, 2, 0, 1.5), x)
    check(lambda lib, x: x.renorm(1, 1, 2.0), x)
    check(lambda lib, x: lib.renorm(x, 3, -1, 100.0), rand(2, 3, 2))

    def inplace(lib, x):
        y = x.clone()
        return y.renorm_(2, 0, 1.0)

    check(inplace, x)
    check_error(RuntimeError, lambda lib, x: lib.renorm(x, 0, 0, 1.0), x)
    check_error(RuntimeError, lambda lib, x: lib.renorm(x, 2, 0, -1.0), x)
    check_error(RuntimeError, lambda lib, x: lib.renorm(x, 2, 0, 1.0), rand(3))


# ------------------------------------------------------------------ shapes

@pytest.mark.parametrize("indexing", ["ij", "xy"])
def test_meshgrid_cartesian(indexing):
    a, b, c = rand(3), rand(4, seed=1), rand(2, seed=2)
    check(lambda lib, a, b, c: lib.meshgrid(a, b, c, indexing=indexing), a, b, c)
    check(lambda lib, a, b: lib.meshgrid([a, b], indexing=indexing), a, b)
    check(lambda lib, a: lib.meshgrid(a, indexing=indexing), a)
    check(lambda lib, a, b: lib.meshgrid(a, b, indexing=indexing), torch.tensor(2.0), rand(0, dtype=torch.float32))
    check_error(RuntimeError, lambda lib, a, b: lib.meshgrid(a, b, indexing=indexing), a, ints(1, 2))
    check_error(RuntimeError, lambda lib, a: lib.meshgrid(a, indexing="yx"), a)
    check_error(RuntimeError, lambda lib, a, b: lib.meshgrid(a, b, indexing=indexing), a, rand(2, 2))


def test_cartesian_prod_combinations():
    a, b = rand(3), rand(2, seed=1)
    check(lambda lib, a, b: lib.cartesian_prod(a, b), a, b)
    check(lambda lib, a, b, c: lib.cartesian_prod(a, b, c), ints(1, 2), ints(3, 4, 5), ints(6))
    check(lambda lib, a: lib.cartesian_prod(a), a)
    x = rand(4)
    check(lambda lib, x: lib.combinations(x), x)
    check(lambda lib, x: lib.combinations(x, 3, with_replacement=True), x)
    check(lambda lib, x: lib.combinations(x, 1), x)
    check(lambda lib, x: lib.combinations(x, 5), x)
    check(lambda lib, x: lib.combinations(x, 0), ints(1, 2, 3))
    check_error(RuntimeError, lambda lib, x: lib.combinations(x), rand(2, 2))


def test_atleast_and_stacks():
    for fn in ("atleast_1d", "atleast_2d", "atleast_3d"):
        check(lambda lib, s, v, m, t, fn=fn: getattr(lib, fn)(s, v, m, t), torch.tensor(1.0, requires_grad=True),
              rand(3), rand(2, 3), rand(2, 1, 2))
        check(lambda lib, s, fn=fn: getattr(lib, fn)(s), torch.tensor(1.0, requires_grad=True))
        check(lambda lib, s, v, fn=fn: getattr(lib, fn)([s, v]), torch.tensor(1.0, requires_grad=True), rand(3))
    check(lambda lib, a, b: lib.dstack([a, b]), rand(3), rand(3, seed=1))
    check(lambda lib, a, b: lib.dstack([a, b]), rand(2, 3), rand(2, 3, 2, seed=1))
    check(lambda lib, a, b, c: lib.column_stack([a, b, c]), rand(3), rand(3, 2, seed=1), ints(1, 2, 3))
    check(lambda lib, a, b: lib.row_stack((a, b)), rand(3), rand(2, 3, seed=1))


def test_splits():
    x = rand(4, 6, 2)
    check(lambda lib, x: lib.hsplit(x, 3), x)
    check(lambda lib, x: x.hsplit([1, 4]), x)
    check(lambda lib, x: lib.vsplit(x, [3]), x)
    check(lambda lib, x: x.dsplit(2), x)
    check(lambda lib, x: lib.hsplit(x, 2), rand(4))
    check(lambda lib, x: lib.split_with_sizes(x, [1, 0, 5], 1), x)
    check(lambda lib, x: x.split_with_sizes([3, 1]), x)
    check_error(RuntimeError, lambda lib, x: lib.hsplit(x, 4), x)
    check_error(RuntimeError, lambda lib, x: lib.vsplit(x, 2), rand(4))
    check_error(RuntimeError, lambda lib, x: lib.dsplit(x, 2), rand(4, 2))
    check_error(RuntimeError, lambda lib, x: lib.hsplit(x, 1), torch.tensor(1.0))
    check_error(RuntimeError, lambda lib, x: lib.split_with_sizes(x, [1, 2]), x)


def test_flips_rot90():
    x = rand(2, 3, 4)
    check(lambda lib, x: x.fliplr(), x)
    check(lambda lib, x: x.flipud(), x)
    for k in (-3, -1, 0, 1, 2, 3, 6):
        check(lambda lib, x, k=k: lib.rot90(x, k), x)
        check(lambda lib, x, k=k: x.rot90(k, [2, 0]), x)
    check_error(RuntimeError, lambda lib, x: lib.rot90(x, 1, [0]), x)
    check_error(RuntimeError, lambda lib, x: lib.rot90(x, 1, [1, 1]), x)
    check_error(RuntimeError, lambda lib, x: lib.rot90(x), rand(3))


def test_block_diag():
    check(lambda lib, a, b, c, d: lib.block_diag(a, b, c, d), rand(2, 2), torch.tensor(5.0, requires_grad=True),
          rand(3, seed=1), rand(0, 2, seed=2))
    check(lambda lib, a, b: lib.block_diag(a, b), ints(1, 2), rand(2, 1))
    check(lambda lib, a: lib.block_diag(a), rand(2, 3))
    check_error(RuntimeError, lambda lib, a: lib.block_diag(a), rand(2, 2, 2))


@pytest.mark.parametrize("offset", [0, 2, -1, 5])
def test_triangle_indices(offset):
    for fn in ("triu_indices", "tril_indices"):
        for row, col in ((3, 4), (5, 2), (0, 3), (4, 4)):
            assert_same(getattr(genesis, fn)(row, col, offset, device=DEVICE), getattr(torch, fn)(row, col, offset))
    assert_same(genesis.triu_indices(3, 3, dtype=genesis.int32, device=DEVICE),
                torch.triu_indices(3, 3, dtype=torch.int32))
    with pytest.raises(RuntimeError):
        genesis.tril_indices(-1, 3)


def test_vander():
    x = rand(4)
    # torch's own vander backward fails (an in-place cumprod): values against torch.vander, gradients against
    # the same matrix written as powers.
    check(lambda lib, x: lib.vander(x), x, backward=False)
    check(lambda lib, x: lib.vander(x, 6, increasing=True), x, backward=False)
    check(lambda lib, x: lib.vander(x, 2), torch.tensor([0.0, 1.0, 2.0], dtype=torch.float64), backward=False)
    powers = torch.arange(5, dtype=torch.float64)
    check(lambda lib, x: lib.vander(x, 5, increasing=True) if lib is genesis else x.unsqueeze(1) ** powers, x)
    check(lambda lib, x: lib.vander(x, 3) if lib is genesis else torch.stack([x * x, x, x ** 0], 1),
          torch.tensor([0.0, 1.0, -2.0], dtype=torch.float64, requires_grad=True))
    check(lambda lib, x: lib.vander(x, 3), ints(1, 2, 3, dtype=torch.int32))
    check(lambda lib, x: lib.vander(x, 0), x)
    check(lambda lib, x: lib.vander(x), rand(0))
    check_error(RuntimeError, lambda lib, x: lib.vander(x), rand(2, 2))


def test_diag_embed_diagflat():
    x = rand(2, 3)
    for offset, d1, d2 in ((0, -2, -1), (1, 0, 2), (-2, 2, 0), (3, 1, 0)):
        check(lambda lib, x, o=offset, a=d1, b=d2: lib.diag_embed(x, o, a, b), x)
    check(lambda lib, x: x.diag_embed(), ints(1, 2))
    check(lambda lib, x: lib.diag_embed(x), torch.tensor([True, False]))
    check(lambda lib, x: lib.diagflat(x), x)
    check(lambda lib, x: x.diagflat(-1), x)
    check(lambda lib, x: lib.diagflat(x, 2), torch.tensor(3.0, requires_grad=True))
    nan_row = torch.tensor([math.nan, 1.0])
    check(lambda lib, x: lib.diag_embed(x), nan_row)
    check_error(RuntimeError, lambda lib, x: lib.diag_embed(x, 0, 1, 1), x)


def test_view_scatters():
    x = rand(3, 4, 5)
    check(lambda lib, x, s: lib.select_scatter(x, s, 1, -1), x, rand(3, 5, seed=1))
    check(lambda lib, x, s: x.select_scatter(s, 0, 2), x, rand(4, 5, seed=1))
    check(lambda lib, x, s: lib.slice_scatter(x, s, 2, 1, 5, 2), x, rand(3, 4, 2, seed=1))
    check(lambda lib, x, s: x.slice_scatter(s), x, rand(3, 4, 5, seed=1))
    check(lambda lib, x, s: lib.slice_scatter(x, s, 1, -2), x, rand(3, 2, 5, seed=1))
    check(lambda lib, x, s: lib.diagonal_scatter(x, s), x, rand(5, 3, seed=1))
    check(lambda lib, x, s: x.diagonal_scatter(s, 1, 1, 2), x, rand(3, 4, seed=1))
    check(lambda lib, x, s: lib.diagonal_scatter(x, s, -2, 2, 0), x, rand(4, 3, seed=1))
    check_error(RuntimeError, lambda lib, x, s: lib.select_scatter(x, s, 1, 0), x, rand(3, 4))
    check_error(IndexError, lambda lib, x, s: lib.select_scatter(x, s, 1, 4), x, rand(3, 5))
    check_error(RuntimeError, lambda lib, x, s: lib.slice_scatter(x, s, 0, 0, 2), x, rand(3, 4, 5))
    check_error(RuntimeError, lambda lib, x, s: lib.diagonal_scatter(x, s), x, rand(5, 4))


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce(reduce, include_self):
    x = rand(3, 5, low=0.5, high=2)
    index = torch.tensor([[0, 2, 0, 4], [1, 1, 1, 1], [4, 3, 2, 4]])
    src = rand(3, 4, seed=1, low=0.5, high=2).detach()
    src[0, 2] = src[0, 0]  # a tie for amax/amin: the gradient is shared
    src.requires_grad_(True)
    check(lambda lib, x, i, s: lib.scatter_reduce(x, 1, i, s, reduce, include_self=include_self), x, index, src)
    check(lambda lib, x, i, s: x.scatter_reduce(0, i, s, reduce, include_self=include_self), x,
          torch.tensor([[2, 0, 2, 2]]), rand(1, 4, seed=2, low=0.5, high=2))
    ix = ints(5, 1, 4, 2, 8)
    check(lambda lib, x, i, s: lib.scatter_reduce(x, 0, i, s, reduce, include_self=include_self), ix,
          ints(0, 0, 3, 0), ints(3, 7, -2, 4))

    def inplace(lib, x, i, s):
        y = x.clone()
        return y.scatter_reduce_(1, i, s, reduce, include_self=include_self)

    check(inplace, x, index, src)


@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
def test_index_reduce(reduce):
    x = rand(4, 3, low=0.5, high=2)
    source = rand(5, 3, seed=1, low=0.5, high=2)
    index = ints(0, 2, 0, 3, 0)
    check(lambda lib, x, i, s: lib.index_reduce(x, 0, i, s, reduce), x, index, source)
    check(lambda lib, x, i, s: x.index_reduce(1, i, s, reduce, include_self=False), x, ints(2, 2),
          rand(4, 2, seed=2))
    check_error(RuntimeError, lambda lib, x, i, s: lib.index_reduce(x, 0, i, s, "sum"), x, index, source)
    check_error(RuntimeError, lambda lib, x, i, s: lib.index_reduce(x, 0, i, s, reduce), x, ints(0, 1), source)

    def inplace(lib, x, i, s):
        y = x.clone()
        return y.index_reduce_(0, i, s, reduce, include_self=False)

    check(inplace, x, index, source)


def test_scatter_reduce_errors():
    x, i = rand(3), ints(0, 1)
    check_error(RuntimeError, lambda lib, x, i, s: lib.scatter_reduce(x, 0, i, s, "median"), x, i, rand(2))
    check(lambda lib, x, i, s: lib.scatter_reduce(x, 0, i, s, "max"), x, i, rand(2, seed=4), backward=False)
    check_error(RuntimeError, lambda lib, x, i, s: lib.scatter_reduce(x, 0, i, s, "sum"), x, i,
                rand(2, dtype=torch.float32))
    check(lambda lib, x, i, s: lib.scatter_reduce(x, 0, i, s, "amax"), x, torch.zeros(0, dtype=torch.int64), rand(0))


@pytest.mark.parametrize("reduce", ["amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_extremes_with_many_elements_per_place(reduce, include_self):
    # A graph's incoming edges: many sources per node, ties, an index narrower than input.
    src = torch.sin(torch.arange(40, dtype=torch.float64) * 0.7).round(decimals=1).reshape(20, 2)
    index = (torch.arange(40) * 7 % 6).reshape(20, 2)
    check(lambda lib, x, i, s: x.scatter_reduce(0, i, s, reduce, include_self=include_self),
          rand(6, 4, low=-0.2, high=0.2), index, src.requires_grad_(True))
    check(lambda lib, x, i, s: x.scatter_reduce(1, i, s, reduce, include_self=include_self),
          rand(3, 6), index.T.contiguous(), src.T.detach().requires_grad_(True))
    src = src.detach()
    src[7, 1] = math.nan  # NaN wins wherever it lands, as torch
    check(lambda lib, x, i, s: x.scatter_reduce(0, i, s, reduce, include_self=include_self),
          rand(6, 4, requires_grad=False), index, src)
    for dtype in (torch.int64, torch.int32, torch.uint8, torch.bool):
        info = torch.iinfo(dtype) if dtype is not torch.bool else None
        low, high = (info.min, info.max) if info else (False, True)
        values = torch.tensor([high, low, 3, low, high, 1, 0, 3]).to(dtype)
        check(lambda lib, x, i, s: x.scatter_reduce(0, i, s, reduce, include_self=include_self),
              torch.tensor([1, 2, 0]).to(dtype), torch.tensor([0, 0, 1, 1, 2, 2, 0, 1]), values)


@pytest.mark.parametrize("reduce", ["sum", "prod", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_bool_stays_bool(reduce, include_self):
    check(lambda lib, x, i, s: x.scatter_reduce(0, i, s, reduce, include_self=include_self),
          torch.tensor([True, False, True, False]), ints(0, 0, 1, 1), torch.tensor([True, True, False, True]))
    check_error(NotImplementedError, lambda lib, x, i: x.scatter_reduce(0, i, x, "mean"), torch.tensor([True]),
                ints(0))


def test_unique_consecutive_msort_misc():
    x = ints(1, 1, 2, 2, 3, 1, 1, 2)
    check(lambda lib, x: lib.unique_consecutive(x, return_inverse=True, return_counts=True), x)
    check(lambda lib, x: x.unique_consecutive(), x)
    check(lambda lib, x: lib.unique_consecutive(x, return_counts=True), x.reshape(2, 4))
    rows = ints(1, 1, 1, 1, 2, 3, 2, 3).reshape(4, 2)
    check(lambda lib, x: lib.unique_consecutive(x, True, True, dim=0), rows)
    check(lambda lib, x: lib.unique_consecutive(x, True, True, dim=1), rows)
    check(lambda lib, x: lib.unique_consecutive(x, True, True), torch.zeros(0))
    check(lambda lib, x: lib.msort(x), rand(4, 3))
    check(lambda lib, x: x.msort(), ints(3, 1, 2))
    a = to_genesis(rand(2, 3))
    assert genesis.is_same_size(a, a) and not a.is_same_size(genesis.ones(3, 2))
    assert genesis.is_nonzero(genesis.tensor([2.0])) and not genesis.tensor([[0]]).is_nonzero()
    check_error(RuntimeError, lambda lib, x: lib.is_nonzero(x), rand(2))
    check_error(RuntimeError, lambda lib, x: lib.is_nonzero(x), rand(0))
    for g, t in ((genesis.uint8, torch.uint8), (genesis.bool, torch.bool), (genesis.int8, torch.int8),
                 (genesis.float16, torch.float16)):
        assert genesis.is_signed(genesis.zeros(1, dtype=g)) == torch.is_signed(torch.zeros(1, dtype=t))
    pairs = [(genesis.int64, torch.int64), (genesis.uint8, torch.uint8), (genesis.float32, torch.float32),
             (genesis.bool, torch.bool), (genesis.bfloat16, torch.bfloat16)]
    for ga, ta in pairs:
        for gb, tb in pairs:
            assert genesis.can_cast(ga, gb) == torch.can_cast(ta, tb), (ga, gb)


def test_tensor_method_helpers():
    x = rand(2, 3, 4)
    check(lambda lib, x: x.sum_to_size(3, 1), x)
    check(lambda lib, x: x.sum_to_size((1, 3, 4)), x)
    check(lambda lib, x: x.sum_to_size(2, 3, 4), x)
    check_error(RuntimeError, lambda lib, x: x.sum_to_size(3, 2), x)

    def swaps(lib, x):  # on tensors without history: Genesis's in-place transposes do not rewrite a graph
        y = x.clone()
        y.swapdims_(0, 2)
        z = x.clone()
        z.swapaxes_(1, -1)
        return y, z

    check(swaps, x.detach())
    check(lambda lib, x: x.count_nonzero(1), ints(0, 1, 2, 0).reshape(2, 2))


# ------------------------------------------------------------------ linalg

@pytest.mark.parametrize("ord", [2, 1, 3.5, 0, -1, math.inf, -math.inf])
def test_vector_norm(ord):
    x = rand(3, 4)
    check(lambda lib, x: lib.linalg.vector_norm(x, ord), x)
    check(lambda lib, x: lib.linalg.vector_norm(x, ord, dim=1, keepdim=True), x)
    check(lambda lib, x: lib.linalg.vector_norm(x, ord, dim=(0, 1)), x)
    check(lambda lib, x: lib.linalg.vector_norm(x, ord, dtype=lib.float64), rand(3, dtype=torch.float32))


@pytest.mark.parametrize("ord", ["fro", "nuc", 2, -2, 1, -1, math.inf, -math.inf])
def test_matrix_norm(ord):
    x = rand(2, 3, 4)
    check(lambda lib, x: lib.linalg.matrix_norm(x, ord), x)
    check(lambda lib, x: lib.linalg.matrix_norm(x, ord, dim=(0, 2), keepdim=True), x)
    check(lambda lib, x: lib.linalg.norm(x, ord), rand(3, 4))
    check(lambda lib, x: lib.linalg.norm(x, ord, dim=(2, 1)), x)


def test_linalg_norm_dispatch_and_errors():
    x = rand(2, 3, 4)
    check(lambda lib, x: lib.linalg.norm(x), x)
    check(lambda lib, x: lib.linalg.norm(x, dim=1), x)
    check(lambda lib, x: lib.linalg.norm(x, 3, dim=-1), x)
    check(lambda lib, x: lib.linalg.norm(x, -2), rand(5))
    check(lambda lib, x: lib.linalg.vecdot(x, x), x)
    check(lambda lib, x: lib.linalg.diagonal(x, offset=1), x)
    check_error(RuntimeError, lambda lib, x: lib.linalg.vector_norm(x), ints(1, 2))
    check_error(RuntimeError, lambda lib, x: lib.linalg.matrix_norm(x), rand(3))
    check_error(RuntimeError, lambda lib, x: lib.linalg.matrix_norm(x, 3), rand(3, 3))
    check_error(RuntimeError, lambda lib, x: lib.linalg.norm(x, 2), x)


@pytest.mark.parametrize("shape", [(5, 3), (2, 3, 5)])
def test_svd_full_matrices_completes_orthogonal_factors(shape):
    # torch's default: U (..., m, m), Vh (..., n, n) orthogonal; the first k vectors are the reduced ones (up to
    # sign) and carry the gradient, the completing ones none.
    a = rand(*shape)
    U, S, Vh = genesis.linalg.svd(to_genesis(a))
    tU, tS, tVh = torch.linalg.svd(a.detach())
    assert U.shape == tuple(tU.shape) and Vh.shape == tuple(tVh.shape)
    m, n, k = shape[-2], shape[-1], min(shape[-2:])
    eye_m, eye_n = genesis.eye(m, dtype=U.dtype, device=DEVICE), genesis.eye(n, dtype=U.dtype, device=DEVICE)
    assert float((U.mT @ U - eye_m).abs().max()) < 1e-5 and float((Vh @ Vh.mT - eye_n).abs().max()) < 1e-5
    rebuilt = (U[..., :k] * S.unsqueeze(-2)) @ Vh[..., :k, :]
    assert float((rebuilt - to_genesis(a.detach())).abs().max()) < 1e-5
    check(lambda lib, a: (lambda r: (r.S, r.U[..., :k].abs(), r.Vh[..., :k, :].abs()))(lib.linalg.svd(a)), a)


def _well_conditioned(*shape, seed=0):
    a = rand(*shape, seed=seed, requires_grad=False)
    n = shape[-1]
    return (a + 3 * torch.eye(n, dtype=a.dtype)).requires_grad_(True)


def test_det_slogdet_inv_solve():
    a = _well_conditioned(2, 4, 4)
    check(lambda lib, a: lib.linalg.det(a), a)
    check(lambda lib, a: lib.linalg.det(a), rand(3, 3, seed=5))  # pivoting needed in general
    check(lambda lib, a: tuple(lib.linalg.slogdet(a)), rand(3, 3, seed=5))
    check(lambda lib, a: lib.linalg.inv(a), a)
    check(lambda lib, a, b: lib.linalg.solve(a, b), a, rand(2, 4, 3, seed=1))
    check(lambda lib, a, b: lib.linalg.solve(a, b), a, rand(4, seed=1))
    check(lambda lib, a, b: lib.linalg.solve(a, b, left=False), a, rand(3, 4, seed=1))
    check(lambda lib, a: lib.linalg.det(a), torch.tensor([[0.0, 2.0], [3.0, 1.0]], dtype=torch.float64,
                                                         requires_grad=True))
    singular = torch.tensor([[1.0, 2.0], [2.0, 4.0]], dtype=torch.float64)
    assert genesis.linalg.det(to_genesis(singular)).item() == 0.0
    check_error(RuntimeError, lambda lib, a: lib.linalg.inv(a), singular)
    check_error(RuntimeError, lambda lib, a: lib.linalg.det(a), rand(2, 3))
    check_error(RuntimeError, lambda lib, a: lib.linalg.det(a), ints(1, 2, 3, 4).reshape(2, 2))
    check_error(RuntimeError, lambda lib, a, b: lib.linalg.solve(a, b), a, rand(3, 2))


@pytest.mark.parametrize("n", [0, 1, 2, 5, -1, -2])
def test_matrix_power(n):
    check(lambda lib, a: lib.linalg.matrix_power(a, n), _well_conditioned(2, 3, 3))


def test_cholesky_logdet_and_aliases():
    a = _well_conditioned(2, 4, 4)
    spd = (a @ a.mT).detach().requires_grad_(True)
    check(lambda lib, a: lib.linalg.cholesky(a), spd)
    check(lambda lib, a: lib.linalg.cholesky(a, upper=True), spd)
    check(lambda lib, a: a.cholesky(), spd[0].detach().requires_grad_(True))
    check(lambda lib, a: lib.linalg.cholesky(a), torch.zeros(0, 0))
    check_error(RuntimeError, lambda lib, a: lib.linalg.cholesky(a), torch.tensor([[1.0, 2.0], [2.0, 1.0]]))
    check(lambda lib, a: lib.logdet(a), a)
    check(lambda lib, a: lib.logdet(a), torch.tensor([[0.0, 1.0], [1.0, 0.0]], dtype=torch.float64))
    check(lambda lib, a: a.det(), a)
    check(lambda lib, a: lib.det(a), a)
    check(lambda lib, a: a.inverse(), a)
    check(lambda lib, a: lib.inverse(a), a)
    check(lambda lib, a: tuple(a.slogdet()), a)
    check(lambda lib, a: lib.slogdet(a).logabsdet, a)
    check(lambda lib, a: a.matrix_power(3), a)
    check(lambda lib, a: lib.matrix_power(a, 2), a)


def test_cholesky_reads_the_lower_triangle():
    a = _well_conditioned(3, 3).detach()
    spd = a @ a.mT
    spd[0, 2] += 5.0  # only the lower triangle counts
    check(lambda lib, a: lib.linalg.cholesky(a), spd, backward=False)


@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (2, 4, 3), (1, 1), (3, 1)])
def test_qr(shape):
    a = rand(*shape, seed=7)
    check(lambda lib, a: tuple(lib.linalg.qr(a)), a)
    check(lambda lib, a: lib.linalg.qr(a, mode="r").R, a, backward=False)  # torch refuses to differentiate "r"
    check(lambda lib, a: tuple(lib.linalg.qr(a, mode="complete")), a, backward=shape[-2] <= shape[-1])


def test_qr_wide_and_errors():
    # One library call each way for float32 / float64 (torch's linalg_qr_backward): wide matrices, batches and a
    # column already zero below the diagonal (LAPACK's tau = 0) have torch's gradients too.
    check(lambda lib, a: tuple(lib.linalg.qr(a)), rand(3, 5, seed=7))
    check(lambda lib, a: tuple(lib.linalg.qr(a, mode="complete")), rand(2, 3, 5, seed=7))
    check(lambda lib, a: tuple(lib.linalg.qr(a)), torch.tensor([[1.0, 2.0], [0.0, 3.0]], dtype=torch.float64))
    check(lambda lib, a: tuple(lib.linalg.qr(a)), rand(6, 4, seed=3, dtype=torch.float32))
    check_error(RuntimeError, lambda lib, a: lib.linalg.qr(a, mode="full"), rand(3, 3))
    check_error(RuntimeError, lambda lib, a: lib.linalg.qr(a), rand(3))
    # torch's gradient errors: a complete Q of a tall matrix, and mode "r" (no Q).
    check_error(RuntimeError, lambda lib, a: lib.linalg.qr(a, mode="complete")[0].sum().backward(), rand(5, 3),
                match="not differentiable when mode='complete' and nrows > ncols")
    check_error(RuntimeError, lambda lib, a: lib.linalg.qr(a, mode="r")[1].sum().backward(), rand(3, 3),
                match="which is not computed when mode='r'")


@pytest.mark.parametrize("upper", [True, False])
def test_solve_triangular(upper):
    a = _well_conditioned(2, 4, 4)
    check(lambda lib, a, b: lib.linalg.solve_triangular(a, b, upper=upper), a, rand(2, 4, 3, seed=1))
    check(lambda lib, a, b: lib.linalg.solve_triangular(a, b, upper=upper, left=False), a, rand(3, 4, seed=1))
    check(lambda lib, a, b: lib.linalg.solve_triangular(a, b, upper=upper, unitriangular=True), a, rand(4, 2, seed=1))
    check(lambda lib, a, b: lib.linalg.solve_triangular(a, b, upper=upper), rand(0, 0), rand(0, 2, seed=1))
    check_error(RuntimeError, lambda lib, a, b: lib.linalg.solve_triangular(a, b, upper=upper), a, rand(4))
    check_error(RuntimeError, lambda lib, a, b: lib.linalg.solve_triangular(a, b, upper=upper), a, rand(3, 2))


def test_multi_dot():
    check(lambda lib, a, b, c: lib.linalg.multi_dot([a, b, c]), rand(3, 4), rand(4, 5, seed=1), rand(5, 2, seed=2))
    check(lambda lib, a, b, c: lib.linalg.multi_dot([a, b, c]), rand(4), rand(4, 5, seed=1), rand(5, seed=2))
    check(lambda lib, a, b: lib.linalg.multi_dot([a, b]), rand(4), rand(4, 2, seed=1))
    check(lambda lib, a, b: lib.linalg.multi_dot([a, b]), rand(3, 4), rand(4, seed=1))
    check_error(RuntimeError, lambda lib, a: lib.linalg.multi_dot([a]), rand(3, 3))
    check_error(RuntimeError, lambda lib, a, b, c: lib.linalg.multi_dot([a, b, c]), rand(3, 4), rand(4), rand(4, 2))


def _symmetric(*shape, seed=0):
    a = rand(*shape, seed=seed, requires_grad=False)
    return (a + a.mT).requires_grad_(True)


@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigh(uplo):
    a = _symmetric(2, 5, 5)
    # Eigenvectors are defined up to sign: compare the values and sign-free functions of the vectors.
    check(lambda lib, a: lib.linalg.eigvalsh(a, uplo), a)
    check(lambda lib, a: (lambda lv: (lv.eigenvalues, lv.eigenvectors * lv.eigenvectors))(lib.linalg.eigh(a, uplo)),
          a)
    check(lambda lib, a: (lambda lv: lv[1] @ lv[1].mT)(lib.linalg.eigh(a, uplo)), _symmetric(4, 4, seed=1),
          backward=False)
    lopsided = _symmetric(4, 4, seed=2).detach()
    lopsided[0, 3] += 10.0  # only the UPLO triangle counts
    check(lambda lib, a: lib.linalg.eigvalsh(a, uplo), lopsided, backward=False)
    check(lambda lib, a: lib.linalg.eigvalsh(a), rand(1, 1))
    check(lambda lib, a: lib.linalg.eigvalsh(a), torch.eye(3, dtype=torch.float64))
    check_error(RuntimeError, lambda lib, a: lib.linalg.eigh(a, "X"), a)
    check_error(RuntimeError, lambda lib, a: lib.linalg.eigh(a), rand(2, 3))


def test_eigh_60x60():
    """A 60x60 float64 matrix (minutes when the rotations ran one at a time): eigenvalues within 1e-10 of torch's,
    with their gradient; eigenvectors that rebuild the matrix and are orthonormal; float32 at float32 accuracy."""
    a = _symmetric(60, 60, seed=4)
    check(lambda lib, a: lib.linalg.eigvalsh(a), a, rtol=1e-10, atol=1e-10)
    check(lambda lib, a: (lambda lv: (lv[1] @ lib.diag_embed(lv[0]) @ lv[1].mT, lv[1].mT @ lv[1]))(lib.linalg.eigh(a)),
          a, rtol=1e-10, atol=1e-10, backward=False)
    check(lambda lib, a: lib.linalg.eigvalsh(a), a.detach().float())


def test_eigh_gradient_odd_size():
    """Eigenvector gradients on an odd size (the parallel ordering pads it to even): torch's, and the finite
    differences' (gradcheck) of a sign-free function of the vectors."""
    check(lambda lib, a: (lambda lv: (lv.eigenvalues, lv.eigenvectors * lv.eigenvectors))(lib.linalg.eigh(a)),
          _symmetric(7, 7, seed=5))
    x = to_genesis(rand(5, 5, seed=6))
    assert genesis.autograd.gradcheck(lambda x: genesis.linalg.eigh(x + x.mT).eigenvectors ** 2, (x,))


def test_float32_results():
    x = rand(4, 5, dtype=torch.float32)
    check(lambda lib, x: tuple(lib.cummax(x, 1)), x)
    check(lambda lib, x: lib.logcumsumexp(x, 0), x)
    check(lambda lib, x: lib.quantile(x, 0.3, dim=0), x)
    check(lambda lib, x: lib.nanmean(x, 1), x)
    check(lambda lib, x: lib.cov(x), x)
    check(lambda lib, x: lib.cdist(x, x[:2]), x)
    check(lambda lib, x: lib.kron(x, x[:2, :2]), x)
    check(lambda lib, x: lib.diag_embed(x, 1), x)
    check(lambda lib, x: lib.rot90(x), x)
    check(lambda lib, x: lib.linalg.vector_norm(x, 3, dim=1), x)
    check(lambda lib, x, i: lib.scatter_reduce(x, 1, i, x[:, :2], "amax"), x, torch.tensor([[0, 0]] * 4))
    check(lambda lib, x: lib.linalg.det(x[:4, :4] + 3 * lib.eye(4, dtype=lib.float32, device=x.device)), x,
          rtol=1e-4, atol=1e-5)


def test_bfloat16_composites():
    x = rand(3, 4, dtype=torch.bfloat16)
    check(lambda lib, x: lib.diff(x), x)
    check(lambda lib, x: lib.nansum(x, 1), x)
    check(lambda lib, x: lib.addcmul(x, x, x, value=0.5), x)
    check(lambda lib, x: lib.block_diag(x, x[:1]), x)


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4), (2, 6, 4), (1, 3)])
def test_svd(shape):
    a = rand(*shape, seed=3)
    # Singular vectors are defined up to sign: compare the values and sign-free functions of the vectors.
    check(lambda lib, a: lib.linalg.svdvals(a), a)
    check(lambda lib, a: (lambda r: (r.S, r.U * r.U, r.Vh * r.Vh))(lib.linalg.svd(a, full_matrices=False)), a)
    check(lambda lib, a: (lambda r: r.U @ lib.diag_embed(r.S) @ r.Vh)(lib.linalg.svd(a, False)), a)
    if shape[-1] == shape[-2]:
        check(lambda lib, a: lib.linalg.svd(a).S, a)


def test_svd_60x60():
    """A 60x60 float64 matrix (seconds when the rotations ran one at a time): singular values within 1e-10 of
    torch's, with their gradient, and factors that rebuild the matrix."""
    a = rand(60, 60, seed=7)
    check(lambda lib, a: lib.linalg.svdvals(a), a, rtol=1e-10, atol=1e-10)
    check(lambda lib, a: (lambda r: r.U @ lib.diag_embed(r.S) @ r.Vh)(lib.linalg.svd(a, False)), a, rtol=1e-10,
          atol=1e-10, backward=False)


def test_svd_errors():
    check_error(RuntimeError, lambda lib, a: lib.linalg.svdvals(a), rand(3))
    check_error(RuntimeError, lambda lib, a: lib.linalg.svdvals(a), ints(1, 2, 3, 4).reshape(2, 2))


def test_integer_atan2_in_place_is_refused():
    check_error(RuntimeError, lambda lib: lib.tensor([1, 2], device=DEVICE if lib is genesis else "cpu").atan2_(
        lib.tensor([1, 1], device=DEVICE if lib is genesis else "cpu")), match="can't be cast")


def test_pinv_rank_cond():
    for shape in ((4, 3), (3, 5), (2, 3, 3)):
        a = rand(*shape, seed=4)
        check(lambda lib, a: lib.linalg.pinv(a), a)
        check(lambda lib, a: lib.linalg.matrix_rank(a), a)
        check(lambda lib, a: lib.linalg.cond(a), a)
    low_rank = (rand(4, 1, seed=1, requires_grad=False) @ rand(1, 3, seed=2, requires_grad=False))
    check(lambda lib, a: lib.linalg.matrix_rank(a), low_rank)
    check(lambda lib, a: lib.linalg.pinv(a), low_rank, backward=False)
    check(lambda lib, a: lib.linalg.matrix_rank(a, atol=0.5, rtol=0.0), rand(3, 3, seed=6))
    # The older positional thresholds: pinv's rcond (relative), matrix_rank's tol (absolute).
    # With a singular value cut, torch's gradient disagrees with finite differences (Genesis's agrees to 1e-9):
    # values only there.
    check(lambda lib, a: lib.linalg.pinv(a, 0.05), rand(4, 3, seed=4))
    check(lambda lib, a: lib.linalg.pinv(a, 0.5), rand(4, 3, seed=4), backward=False)
    for tol in (0.05, 0.5, 1.0):
        check(lambda lib, a, tol=tol: lib.linalg.matrix_rank(a, tol), rand(4, 3, seed=4))
    # torch's own cond backward fails for matrix-norm orders (an in-place op on its saved inverse).
    check(lambda lib, a: lib.linalg.cond(a, "fro"), _well_conditioned(3, 3), backward=False)
    check(lambda lib, a: lib.linalg.cond(a, -2), rand(3, 3, seed=6))
    check_error(RuntimeError, lambda lib, a: lib.linalg.pinv(a), rand(3))
    check_error(RuntimeError, lambda lib, a: lib.linalg.cond(a, 1), rand(3, 2))


def test_matrix_exp_and_pinverse():
    for a in (rand(3, 3, seed=8), rand(2, 4, 4, seed=9, low=-3, high=3), rand(1, 1)):
        check(lambda lib, a: lib.linalg.matrix_exp(a), a)
        check(lambda lib, a: lib.matrix_exp(a), a)
        check(lambda lib, a: a.matrix_exp(), a)
    check(lambda lib, a: lib.linalg.matrix_exp(a), rand(3, 3, seed=8, dtype=torch.float32), rtol=1e-4, atol=1e-5)
    check(lambda lib, a: lib.linalg.matrix_exp(a), torch.zeros(0, 0))
    check_error(RuntimeError, lambda lib, a: lib.linalg.matrix_exp(a), rand(2, 3))
    check(lambda lib, a: lib.pinverse(a), rand(4, 3, seed=2))
    check(lambda lib, a: a.pinverse(rcond=0.5), rand(4, 3, seed=2), backward=False)


@pytest.mark.parametrize("driver", [None, "gelsy", "gelsd", "gelss", "gels"])
def test_lstsq(driver):
    a, b = rand(5, 3, seed=3), rand(5, 2, seed=4)
    # No driver means the device's default (torch's: gelsy on the CPU, gels on CUDA; their outputs differ: gelsy
    # computes the rank, gels the residuals); torch, the oracle, runs on the CPU, so it gets the tested device's.
    torch_driver = driver or ("gelsy" if DEVICE == "cpu" else "gels")
    check(lambda lib, a, b: tuple(lib.linalg.lstsq(a, b, driver=driver if lib is genesis else torch_driver)), a, b)
    check(lambda lib, a, b: lib.linalg.lstsq(a, b, driver=driver).solution, rand(2, 5, 3, seed=5),
          rand(2, 5, 2, seed=8))
    check(lambda lib, a, b: lib.linalg.lstsq(a, b, driver=driver).solution, rand(3, 5, seed=6), rand(3, 2, seed=7))


def test_lstsq_errors():
    check_error(RuntimeError, lambda lib, a, b: lib.linalg.lstsq(a, b, driver="qr"), rand(5, 3), rand(5, 2))
    check_error(RuntimeError, lambda lib, a, b: lib.linalg.lstsq(a, b), rand(5, 3), rand(4, 2))
    check_error(RuntimeError, lambda lib, a, b: lib.linalg.lstsq(a, b), rand(5, 3), rand(5, 2, dtype=torch.float32))


@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5), (2, 4, 4)])
def test_lu(shape):
    a = rand(*shape, seed=11)
    check(lambda lib, a: tuple(lib.linalg.lu(a)), a)
    check(lambda lib, a: tuple(lib.linalg.lu_factor(a)), a)


def test_lu_errors():
    check_error(RuntimeError, lambda lib, a: lib.linalg.lu(a), rand(3))
    check_error(RuntimeError, lambda lib, a: lib.linalg.lu_factor(a), ints(1, 2, 3, 4).reshape(2, 2))
    with pytest.raises(NotImplementedError):
        genesis.linalg.lu(to_genesis(rand(2, 2)), pivot=False)


def test_tensordot():
    a, b = rand(2, 3, 4), rand(3, 4, 5, seed=1)
    check(lambda lib, a, b: lib.tensordot(a, b), a, b)
    check(lambda lib, a, b: lib.tensordot(a, b, 1), a, rand(4, 2, seed=2))
    check(lambda lib, a, b: lib.tensordot(a, b, 0), rand(2), rand(3, seed=2))
    check(lambda lib, a, b: lib.tensordot(a, b, ([1, 0], [0, 2])), a, rand(3, 5, 2, seed=3))
    check(lambda lib, a, b: lib.tensordot(a, b, dims=([2], [1])), a, rand(5, 4, seed=3))
    check(lambda lib, a, b: lib.tensordot(a, b, 1), ints(1, 2), ints(3, 4))
    check_error(RuntimeError, lambda lib, a, b: lib.tensordot(a, b, 1), rand(2, 3), rand(4, 5))
    check_error(RuntimeError, lambda lib, a, b: lib.tensordot(a, b, ([0], [0, 1])), rand(2, 3), rand(2, 3))


def test_trapezoid():
    y = rand(3, 6)
    check(lambda lib, y: lib.trapezoid(y), y)
    check(lambda lib, y: lib.trapezoid(y, dx=0.5, dim=0), y)
    check(lambda lib, y, x: lib.trapezoid(y, x), y, rand(6, seed=1))
    check(lambda lib, y, x: lib.trapz(y, x, dim=1), y, rand(3, 6, seed=1))
    check(lambda lib, y: lib.trapz(y), ints(1, 2, 3))
    check(lambda lib, y: lib.trapezoid(y), rand(0))
    check(lambda lib, y: lib.trapezoid(y), rand(1))
    check(lambda lib, y: lib.cumulative_trapezoid(y), y)
    check(lambda lib, y, x: lib.cumulative_trapezoid(y, x, dim=0), y, rand(3, seed=2))
    check(lambda lib, y: lib.cumulative_trapezoid(y, dx=2), ints(1, 2, 3))
    check_error(RuntimeError, lambda lib, y, x: lib.trapezoid(y, x), y, rand(5))


def test_broadcast_shapes_unravel_isin():
    assert genesis.broadcast_shapes((2, 1), (3,), 1) == torch.broadcast_shapes((2, 1), (3,), 1)
    assert genesis.broadcast_shapes() == torch.broadcast_shapes()
    with pytest.raises(RuntimeError):
        genesis.broadcast_shapes((2,), (3,))
    check(lambda lib, i: lib.unravel_index(i, (2, 4)), ints(4, 7, 0, -1))
    check(lambda lib, i: lib.unravel_index(i, (3, 1, 5)), ints(14, 2).reshape(2, 1))
    check(lambda lib, i: lib.unravel_index(i, 6), torch.tensor(5))
    check_error(TypeError, lambda lib, i: lib.unravel_index(i, (2, 2)), torch.tensor([1.0]))
    x = torch.tensor([[1.0, 2.0, math.nan], [4.0, -1.0, 2.0]])
    check(lambda lib, x, t: lib.isin(x, t), x, torch.tensor([2.0, 4.0, math.nan]))
    check(lambda lib, x, t: lib.isin(x, t, invert=True), x, torch.tensor([2.0, 4.0]))
    check(lambda lib, x, t: lib.isin(x, t), ints(1, 5, 3), ints(3, 9, 1, 1))
    check(lambda lib, x, t: lib.isin(x, t), ints(1, 5, 3), torch.tensor([3.0, 5.5]))
    check(lambda lib, x: lib.isin(x, 2.0), x)
    check(lambda lib, t: lib.isin(3, t), ints(3, 4))
    check(lambda lib, x, t: lib.isin(x, t), x, torch.zeros(0))


def test_cholesky_solve_inverse_and_linalg_vander():
    a = _well_conditioned(2, 3, 3)
    spd = (a @ a.mT).detach()
    factor = torch.linalg.cholesky(spd)
    for upper in (False, True):
        f = (factor.mT if upper else factor).clone().requires_grad_(True)
        check(lambda lib, b, f, u=upper: lib.cholesky_solve(b, f, u), rand(2, 3, 2, seed=1), f)
        check(lambda lib, f, u=upper: lib.cholesky_inverse(f[0], u), f)
        check(lambda lib, b, f, u=upper: b.cholesky_solve(f, u), rand(2, 3, 2, seed=1), f)
    check_error(RuntimeError, lambda lib, b, f: lib.cholesky_solve(b, f), rand(3), factor)
    check(lambda lib, x: lib.linalg.vander(x), torch.tensor([0.0, 1.0, 2.0], dtype=torch.float64, requires_grad=True))
    check(lambda lib, x: lib.linalg.vander(x, N=4), rand(2, 3))
    check(lambda lib, x: lib.linalg.vander(x), ints(1, 2, dtype=torch.int32))
    check_error(RuntimeError, lambda lib, x: lib.linalg.vander(x), rand(1))
    check_error(RuntimeError, lambda lib, x: lib.linalg.vander(x, N=1), rand(3))


def test_histogram():
    x = torch.tensor([0.0, 1.0, 2.0, 3.0, 3.0, -2.0, 7.5], dtype=torch.float64)
    check(lambda lib, x: tuple(lib.histogram(x, 3)), x)
    check(lambda lib, x: tuple(x.histogram(4, range=(0.0, 3.0))), x)
    check(lambda lib, x, b: tuple(lib.histogram(x, b)), x, torch.tensor([0.0, 1.0, 2.5, 3.0], dtype=torch.float64))
    check(lambda lib, x, w: tuple(lib.histogram(x, 2, weight=w)), x, rand(7, requires_grad=False))
    check(lambda lib, x: tuple(lib.histogram(x, 2, range=(0.5, 2.5), density=True)), x)
    check(lambda lib, x: tuple(lib.histogram(x, 3)), torch.tensor([1.0, 1.0, 1.0]))
    check(lambda lib, x: tuple(lib.histogram(x, 5)), rand(40, dtype=torch.float32, requires_grad=False))
    check_error(NotImplementedError, lambda lib, x: lib.histogram(x, 2), ints(1, 2))
    check_error(RuntimeError, lambda lib, x: lib.histogram(x, 2, range=(2.0, 1.0)), x)


def test_histogramdd():
    x = rand(30, 2, seed=11, requires_grad=False)
    check(lambda lib, x: tuple(lib.histogramdd(x, 3)), x)
    check(lambda lib, x: tuple(lib.histogramdd(x, [2, 4], range=[-1.0, 1.0, 0.0, 1.0])), x)
    check(lambda lib, x, w: tuple(lib.histogramdd(x, [3, 2], weight=w, density=True)), x,
          rand(30, seed=12, requires_grad=False).abs())
    edges = [torch.tensor([-2.0, 0.0, 2.0], dtype=torch.float64), torch.tensor([-1.0, 0.0, 0.5, 1.0],
                                                                                dtype=torch.float64)]
    check(lambda lib, x, e0, e1: tuple(lib.histogramdd(x, [e0, e1])), x, *edges)
    check(lambda lib, x: tuple(lib.histogramdd(x, 2)), rand(4, 5, 3, seed=13, dtype=torch.float32,
                                                            requires_grad=False))
    check_error(RuntimeError, lambda lib, x: lib.histogramdd(x, [2, 2, 2]), x)


@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5), (2, 4, 3), (1, 3), (3, 1)])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_geqrf_and_householder_product(shape, dtype):
    # LAPACK's compact form: R on and above the diagonal, the reflectors below it, their scales in tau; the product
    # of the reflectors is linalg.qr's Q.
    a = rand(*shape, seed=14, dtype=dtype, requires_grad=False)
    check(lambda lib, a: tuple(lib.geqrf(a)), a, backward=False)
    k = min(shape[-2:])  # a wide matrix has k = m reflectors, in its first m columns
    check(lambda lib, a: (lambda r: lib.linalg.householder_product(r[0][..., :k], r[1]))(a.geqrf()), a,
          backward=False)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_log_sums_and_renorm_round_as_torch(dtype):
    # logcumsumexp and logaddexp compute in float32 and round once; renorm rounds its float32 factor to the input's
    # dtype first, as torch's kernels: bit-exact.
    x = ((torch.arange(4 * 64, dtype=torch.float32).reshape(4, 64) * 0.731).sin() * 6).to(dtype)
    check_bits(lambda lib, x: lib.logcumsumexp(x, 1), x)
    check_bits(lambda lib, x: lib.logaddexp(x, x.flip(1)), x)
    check_bits(lambda lib, x: lib.renorm(x, 2, 0, 5), x)
    check_bits(lambda lib, x: lib.renorm(x, 1.5, 1, 2), x)


@pytest.mark.parametrize("case", [
    lambda lib, x, i, b: lib.all(x[1, 2]), lambda lib, x, i, b: lib.any(x[1, 2] * 0, 0),
    lambda lib, x, i, b: lib.all(i[0, 3]), lambda lib, x, i, b: x[0, 0].any(),
    lambda lib, x, i, b: lib.all(i.to(lib.uint8)[0, 0], 0),
    lambda lib, x, i, b: lib.isin(i, 0.5), lambda lib, x, i, b: lib.isin(i, 1),
    lambda lib, x, i, b: lib.isin(2.0, i), lambda lib, x, i, b: lib.isin(x, 2),
    lambda lib, x, i, b: lib.copysign(b, -1), lambda lib, x, i, b: lib.copysign(b, x[:, :1]),
    lambda lib, x, i, b: lib.xlogy(b, 2), lambda lib, x, i, b: lib.xlogy(b, b),
    lambda lib, x, i, b: lib.fmod(b, 2), lambda lib, x, i, b: lib.fmod(b, 0.5), lambda lib, x, i, b: lib.fmod(b, x),
    lambda lib, x, i, b: lib.fmod(i, lib.tensor(2.5, device=i.device)),
    lambda lib, x, i, b: i.clone().logical_and_(x), lambda lib, x, i, b: b.clone().logical_or_(x),
    lambda lib, x, i, b: i.clone().eq_(0.5), lambda lib, x, i, b: i.clone().lt_(x),
    lambda lib, x, i, b: x[0, 0].broadcast_to(3), lambda lib, x, i, b: lib.broadcast_to(x[:1], [2, 4]),
    lambda lib, x, i, b: lib.histogram(x.float().cpu()), lambda lib, x, i, b: lib.histogram(x.float().cpu()[:0], 2),
    lambda lib, x, i, b: lib.atan2(i, i), lambda lib, x, i, b: lib.atan2(b, b), lambda lib, x, i, b: lib.atan2(i, x),
    lambda lib, x, i, b: x.clone().atan2_(i),
    lambda lib, x, i, b: x[:0].mean(), lambda lib, x, i, b: x[:, :0].mean(1),
    lambda lib, x, i, b: lib.nn.functional.huber_loss(x[:0], x[:0]),
    lambda lib, x, i, b: lib.nn.functional.smooth_l1_loss(x[:0], x[:0]),
    lambda lib, x, i, b: lib.linalg.matrix_rank(x[:, :3].reshape(1, 3, 3).expand(2, 3, 3),
                                                x.new_tensor([0.5, 3.0])),
])
def test_results_of_mixed_dtypes_and_zero_dim_inputs(case):
    """Cases where the result's dtype or values depend on promotion or on a 0-d input, as torch's: all/any of a 0-d
    tensor are bool, a number tested by isin compares in the promoted dtype, bool tensors promote in copysign, xlogy
    and fmod, in-place comparisons write their bool result into any dtype."""
    x = torch.tensor([[0.5, -1.25, 2.0, 0.0], [3.5, -0.75, 1.0, -2.5], [0.25, 4.0, -3.0, 1.5]], dtype=torch.float64)
    i = torch.tensor([[1, -2, 3, 0], [4, 5, -6, 2], [0, 7, 1, -1]])
    check(case, x, i, i > 0, backward=False)


@pytest.mark.parametrize("call", [
    lambda lib, x: lib.mm(x, 2), lambda lib, x: lib.mm(2, x), lambda lib, x: lib.bmm(x, 2), lambda lib, x: lib.mv(x, 2),
    lambda lib, x: lib.dot(x, 2.0), lambda lib, x: lib.vdot(x, 1), lambda lib, x: lib.outer(x, 2),
    lambda lib, x: lib.inner(x, 2), lambda lib, x: lib.kron(x, 2), lambda lib, x: lib.cross(x, 2),
    lambda lib, x: lib.cdist(x, 2), lambda lib, x: lib.isclose(x, 2), lambda lib, x: lib.allclose(x, 2),
    lambda lib, x: lib.equal(x, 2), lambda lib, x: lib.is_same_size(x, [2]), lambda lib, x: lib.prelu(x, 2),
    lambda lib, x: lib.take_along_dim(x, 2), lambda lib, x: lib.slice_scatter(x, 2),
    lambda lib, x: lib.diagonal_scatter(x, 2), lambda lib, x: lib.cholesky_solve(x, 2),
    lambda lib, x: lib.triangular_solve(x, 2), lambda lib, x: x.view_as(2), lambda lib, x: x.reshape_as([2]),
    lambda lib, x: x.expand_as(2), lambda lib, x: lib.binomial(x, 2), lambda lib, x: x.mm(2.5),
    lambda lib, x: lib.nn.functional.cosine_similarity(x, 2), lambda lib, x: lib.maximum(2, x),
    lambda lib, x: lib.minimum(x, 2), lambda lib, x: lib.matmul(2, x), lambda lib, x: lib.lerp(x, 2, 0.5),
    lambda lib, x: lib.heaviside(x, 2), lambda lib, x: lib.hypot(2, x), lambda lib, x: lib.poisson(2),
    lambda lib, x: lib.polygamma(1, 2),
])
def test_a_number_where_a_tensor_is_required(call):
    """torch's TypeError naming the argument, not an AttributeError from inside the op."""
    check_error(TypeError, call, rand(3, 3), match="must be Tensor")


def test_dims_of_zero_dim_tensors():
    """A 0-d tensor takes dims -1 and 0 only, as torch (IndexError beyond); kthvalue of it is its value at 0."""
    x = rand(seed=3)
    for call in (lambda lib, x: lib.flatten(x, 2), lambda lib, x: lib.mode(x, 2),
                 lambda lib, x: lib.logcumsumexp(x, 2), lambda lib, x: lib.kthvalue(x, 1, 1)):
        check_error(IndexError, call, x)
    check(lambda lib, x: lib.kthvalue(x, 1), x)
    check(lambda lib, x: lib.kthvalue(x, 1, 0, True), x)
    check(lambda lib, x: lib.flatten(x, -1, 0), x)
    check_error(RuntimeError, lambda lib, x: lib.kthvalue(x, 2), x)


def test_size_and_stride_of_one_dim():
    """size(dim) / stride(dim) as torch: an int, a numpy int or a 0-d integer tensor; TypeError for a bool or a
    float, IndexError out of range and for any dim of a 0-d tensor."""
    g, t = genesis.randn(2, 3, device=DEVICE).t(), torch.randn(2, 3).t()
    for dim in (0, -1, np.int64(1)):
        assert g.size(dim) == t.size(dim) and g.stride(dim) == t.stride(dim)
    assert g.size(genesis.tensor(1)) == t.size(torch.tensor(1))
    for dim, error in ((True, TypeError), (1.0, TypeError), (2, IndexError), (-3, IndexError)):
        check_error(error, lambda lib, x, dim=dim: x.size(dim), rand(2, 3))
        check_error(error, lambda lib, x, dim=dim: x.stride(dim), rand(2, 3))
    check_error(IndexError, lambda lib, x: x.size(0), rand())
