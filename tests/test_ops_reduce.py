"""Reductions against torch: dim as int, tuple or None, keepdim, values with indices, scans and softmax."""

import math
import warnings

import pytest
import torch

import genesis
from tests.helpers import check, check_error, rand, to_genesis, to_torch

DIMS = [None, 0, -1, 1, (0, 2), (-1, 0), (), (0, 1, 2)]


def _kwargs(dim, keepdim):
    """Keyword arguments for a reduction; torch takes keepdim only together with dim."""
    if dim is None:
        return {}
    return {"dim": dim, "keepdim": keepdim}


SUM_LIKE = {
    "sum": lambda lib, x, kw: lib.sum(x, **kw),
    "mean": lambda lib, x, kw: x.mean(**kw),
    "amax": lambda lib, x, kw: lib.amax(x, **kw),
    "amin": lambda lib, x, kw: x.amin(**kw),
    "logsumexp": lambda lib, x, kw: lib.logsumexp(x, **kw),
    "var": lambda lib, x, kw: lib.var(x, **kw),
    "std": lambda lib, x, kw: x.std(**kw),
    "var_c0": lambda lib, x, kw: lib.var(x, correction=0, **kw),
    "std_c2": lambda lib, x, kw: lib.std(x, correction=2, **kw),
    "var_unbiased_false": lambda lib, x, kw: x.var(unbiased=False, **kw),
    "norm": lambda lib, x, kw: x.norm(**kw),
    "norm_1": lambda lib, x, kw: lib.norm(x, p=1, **kw),
    "norm_inf": lambda lib, x, kw: lib.norm(x, p=math.inf, **kw),
    "norm_3": lambda lib, x, kw: lib.norm(x, p=3, **kw),
    "prod": None,
}


@pytest.mark.parametrize("name", [n for n in SUM_LIKE if n != "prod"])
@pytest.mark.parametrize("dim", DIMS, ids=str)
@pytest.mark.parametrize("keepdim", [False, True])
def test_multi_dim_reductions(name, dim, keepdim):
    if name == "logsumexp" and dim in (None, ()):
        dim = (0, 1, 2)  # torch's logsumexp needs explicit dims
    if name == "norm" and dim == (0, 1, 2):
        dim = None  # torch reads three dims as a matrix norm request and refuses
    fn = SUM_LIKE[name]
    # torch's var/std backward treats dim=() as "no dims" while its forward reduces all: compare values only.
    backward = not (name.startswith(("var", "std")) and dim == ())
    check(lambda lib, x: fn(lib, x, _kwargs(dim, keepdim)), rand(2, 3, 4, seed=1), backward=backward)


@pytest.mark.parametrize("name", ["sum", "mean", "amax", "logsumexp", "var", "norm"])
@pytest.mark.parametrize("layout", ["transposed", "sliced", "expanded"])
def test_reductions_noncontiguous(name, layout):
    fn = SUM_LIKE[name]
    views = {
        "transposed": (lambda x: x.permute(2, 0, 1), (2, 3, 4)),
        "sliced": (lambda x: x[:, ::2, 1:], (2, 5, 4)),
        "expanded": (lambda x: x.expand(3, 4, 5), (1, 4, 5)),
    }
    view, shape = views[layout]
    for dim in (1, (0, 2), (0, 1, 2)):
        if name == "norm" and dim == (0, 1, 2):
            dim = None  # torch reads three dims as a matrix norm request and refuses
        check(lambda lib, x, dim=dim: fn(lib, view(x), _kwargs(dim, False)), rand(*shape, seed=2))


@pytest.mark.parametrize("name", ["sum", "mean", "amax", "amin", "logsumexp", "var", "std", "norm", "prod"])
def test_reductions_0d(name):
    x = rand(seed=3)
    if name == "prod":
        check(lambda lib, x: lib.prod(x), x)
        check(lambda lib, x: lib.prod(x, 0, keepdim=True), x)
        return
    fn = SUM_LIKE[name]
    check(lambda lib, x: fn(lib, x, _kwargs(0, False)), x)
    check(lambda lib, x: fn(lib, x, _kwargs(-1, True)), x)
    if name != "logsumexp":
        check(lambda lib, x: fn(lib, x, {}), x)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
def test_norm_of_half_types_rounds_once(dtype):
    # torch squares, sums and takes the root in float32 and rounds once; rounding the squares and the sum to the
    # half type first gave a norm one bfloat16 step off (6.75 for 6.7736, torch 6.78125): Muon divides by it.
    x = rand(64, 37, seed=40, dtype=torch.float32, requires_grad=False) * 3
    h = x.to(dtype).requires_grad_()
    check(lambda lib, x: x.norm(), h, rtol=0, atol=0)
    check(lambda lib, x: x.norm(dim=1), h, rtol=0, atol=0)
    check(lambda lib, x: lib.linalg.vector_norm(x, 1, dim=0), h, rtol=0, atol=0)
    check(lambda lib, x: x.norm(p=math.inf), h, rtol=0, atol=0)


def test_reductions_empty():
    e = rand(0, 3, seed=4)
    check(lambda lib, x: x.sum(), e)
    check(lambda lib, x: x.sum(0), e)
    check(lambda lib, x: x.sum(1, keepdim=True), e)
    check(lambda lib, x: x.mean(0), e)
    check(lambda lib, x: x.prod(0), e)
    check(lambda lib, x: x.amax(1), e)
    check(lambda lib, x: lib.logsumexp(x, 0), e)
    check(lambda lib, x: x.cumsum(0), e)
    check(lambda lib, x: x.softmax(1), e)
    check(lambda lib, x: x.var(0), e)
    check(lambda lib, x: x.norm(), e)
    check(lambda lib, x: x.all(), e.detach() > 0)
    check(lambda lib, x: x.any(1), e.detach() > 0)
    check_error(IndexError, lambda lib, x: x.amax(0), e)
    check_error(RuntimeError, lambda lib, x: x.max(), e)
    check_error(IndexError, lambda lib, x: x.max(0), e)
    check_error(IndexError, lambda lib, x: x.argmax(), e)


@pytest.mark.parametrize("dim", [None, 0, 1, (0, 1), -1])
@pytest.mark.parametrize("keepdim", [False, True])
def test_prod(dim, keepdim):
    x = rand(3, 4, seed=5)
    check(lambda lib, x: lib.prod(x, **_kwargs(dim, keepdim)) if isinstance(dim, int) or dim is None
          else x.prod(dim[0], keepdim=True).prod(dim[1], keepdim=keepdim), x)
    # One zero and two zeros in a reduced slice: the gradient is still exact.
    z = torch.tensor([[0.0, 2.0, 3.0], [0.0, 0.0, 4.0], [1.0, 2.0, 3.0]], dtype=torch.float64, requires_grad=True)
    if dim is None:
        check(lambda lib, x: x.prod(), z)
    elif isinstance(dim, int):
        check(lambda lib, x: x.prod(dim, keepdim=keepdim), z)


def test_prod_int_and_dtype():
    i = torch.tensor([[1, 2, 3], [4, 5, 6]], dtype=torch.int32)
    check(lambda lib, x: x.prod(), i)
    check(lambda lib, x: x.prod(1), i)
    check(lambda lib, x: x.prod(1, dtype=lib.float64), i)
    check(lambda lib, x: x.sum(dtype=lib.float32), i)
    check(lambda lib, x: x.sum(), torch.tensor([True, True, False]))
    check(lambda lib, x: x.sum(0), i.to(torch.uint8))
    check(lambda lib, x: x.sum(), rand(3, 4, seed=6).detach().half())
    check(lambda lib, x: x.mean(), rand(3, 4, seed=6).detach().bfloat16())
    check(lambda lib, x: x.mean(dtype=lib.float64), rand(3, 4, seed=6).detach().float())
    check(lambda lib, x: x.mean(1, dtype=lib.float64), i)
    check_error(RuntimeError, lambda lib, x: x.mean(), i)


@pytest.mark.parametrize("op", ["max", "min"])
@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("keepdim", [False, True])
def test_max_min_with_indices(op, dim, keepdim):
    x = rand(3, 4, 2, seed=7)
    check(lambda lib, x: tuple(getattr(lib, op)(x, dim, keepdim)), x)
    check(lambda lib, x: getattr(x, op)(dim=dim, keepdim=keepdim).values, x)
    check(lambda lib, x: getattr(x, op)(dim, keepdim=keepdim).indices, x)
    check(lambda lib, x: tuple(getattr(x.mT, op)(dim, keepdim)), x)
    # Ties: the first index wins and receives the whole gradient.
    t = torch.tensor([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]], dtype=torch.float64, requires_grad=True)
    check(lambda lib, x: tuple(getattr(x, op)(dim % 2, keepdim)), t)
    check(lambda lib, x: tuple(getattr(x, op)(dim % 2, keepdim)), t.detach().long())


@pytest.mark.parametrize("op", ["max", "min", "amax", "amin"])
def test_full_extremum_ties_split_gradient(op):
    t = torch.tensor([[1.0, 3.0, 3.0], [-2.0, 3.0, -2.0]], dtype=torch.float64, requires_grad=True)
    check(lambda lib, x: getattr(x, op)(), t)
    check(lambda lib, x: getattr(x, op)(), rand(seed=8))
    check(lambda lib, x: getattr(x, op)(), torch.tensor([[3, 1], [2, 7]], dtype=torch.int16))


def test_max_min_elementwise_and_0d():
    check(lambda lib, a, b: lib.max(a, b), rand(3, 4, seed=9), rand(4, seed=10))
    check(lambda lib, a, b: a.min(b), rand(3, 4, seed=9), rand(4, seed=10))
    check(lambda lib, x: tuple(x.max(0)), rand(seed=11))
    check(lambda lib, x: tuple(x.min(-1, keepdim=True)), rand(seed=11))


@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_argmax_argmin(op):
    x = rand(3, 4, 5, seed=12)
    for kw in ({}, {"dim": 0}, {"dim": -1}, {"dim": 1, "keepdim": True}, {"keepdim": True}):
        check(lambda lib, x, kw=kw: getattr(lib, op)(x, **kw), x)
        check(lambda lib, x, kw=kw: getattr(x.mT, op)(**kw), x)
    ties = torch.tensor([[1, 5, 5], [0, 0, -1]])
    check(lambda lib, x: getattr(x, op)(1), ties)
    check(lambda lib, x: getattr(x, op)(), ties)
    check(lambda lib, x: getattr(x, op)(), rand(seed=13))
    check(lambda lib, x: getattr(x, op)(0), rand(seed=13))
    check(lambda lib, x: getattr(x, op)(1), torch.tensor([[1.0, math.nan, 2.0]]))


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmax_log_softmax(dim):
    x = rand(3, 4, seed=14) * 5
    x = x.detach().requires_grad_()
    check(lambda lib, x: lib.softmax(x, dim), x)
    check(lambda lib, x: x.log_softmax(dim), x)
    check(lambda lib, x: lib.softmax(x.mT, dim), x)
    check(lambda lib, x: lib.log_softmax(x[:, ::2], dim), x)
    # The result is computed in float32, so its gradient for the float64 input carries float32 rounding
    # (kernels on other devices may round differently from torch's CPU kernel): float32 tolerances.
    check(lambda lib, x: lib.softmax(x, dim, dtype=lib.float32), x, grad_rtol=1e-5, grad_atol=1e-6)
    check(lambda lib, x: x.softmax(dim), x.detach().float())
    check(lambda lib, x: x.softmax(dim), x.detach().half())
    big = torch.tensor([[1000.0, 0.0, -1000.0], [-math.inf, 0.0, 1.0]], dtype=torch.float64, requires_grad=True)
    check(lambda lib, x: x.softmax(-1), big)
    check(lambda lib, x: x.log_softmax(-1), big)


def test_softmax_0d_and_int_errors():
    check(lambda lib, x: x.softmax(0), rand(seed=15))
    check(lambda lib, x: x.log_softmax(-1), rand(seed=15))
    check_error(RuntimeError, lambda lib, x: x.softmax(0), torch.tensor([1, 2]))
    check_error(IndexError, lambda lib, x: x.softmax(2), rand(3, 4))


def test_logsumexp_infinities():
    x = torch.tensor([[-math.inf, -math.inf], [math.inf, 1.0], [0.0, 1.0]], dtype=torch.float64)
    check(lambda lib, x: lib.logsumexp(x, 1), x)
    check(lambda lib, x: lib.logsumexp(x, 1), torch.tensor([[1, 2], [3, 4]]))


@pytest.mark.parametrize("op", ["cumsum", "cumprod"])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cumulative(op, dim):
    x = rand(3, 4, seed=16)
    check(lambda lib, x: getattr(lib, op)(x, dim), x)
    check(lambda lib, x: getattr(x.mT, op)(dim), x)
    # Both libraries differentiate in float32 here, each with its own rounding.
    check(lambda lib, x: getattr(x, op)(dim, dtype=lib.float32), x, grad_rtol=1e-5, grad_atol=1e-6)
    check(lambda lib, x: getattr(x, op)(dim), torch.tensor([[1, 2, 3], [4, 5, 6]], dtype=torch.int8))
    check(lambda lib, x: getattr(x, op)(dim), torch.tensor([[True, False], [True, True]]))
    check(lambda lib, x: getattr(x, op)(0), rand(seed=17))
    zeros = torch.tensor([[1.0, 0.0, 2.0, 3.0], [0.0, 0.0, 5.0, 1.0], [2.0, 3.0, 0.0, 4.0]], dtype=torch.float64,
                         requires_grad=True)
    check(lambda lib, x: getattr(x, op)(dim), zeros)


@pytest.mark.parametrize("op", ["all", "any"])
def test_all_any(op):
    x = torch.tensor([[[True, False], [True, True]], [[False, False], [True, True]]])
    for dim in (None, 0, 1, -1):
        for keepdim in (False, True):
            kw = _kwargs(dim, keepdim) if dim is not None else {}
            check(lambda lib, x, kw=kw: getattr(lib, op)(x, **kw), x)
            check(lambda lib, x, kw=kw: getattr(x, op)(**kw), x.long())
            check(lambda lib, x, kw=kw: getattr(x, op)(**kw), x.double() * 0.5)
    check(lambda lib, x: getattr(x, op)(dim=(0, 2)), x)
    check(lambda lib, x: getattr(x, op)(), torch.tensor(True))
    check(lambda lib, x: getattr(x, op)(), x.to(torch.uint8))


def test_bool_and_int_reductions():
    b = torch.tensor([[True, False, True], [False, False, True]])
    check(lambda lib, x: tuple(x.max(0)), b)
    check(lambda lib, x: tuple(x.min(1, keepdim=True)), b)
    check(lambda lib, x: x.amax(0), b)
    check(lambda lib, x: x.sum(dtype=lib.int32), b)
    check(lambda lib, x: x.sum(1, dtype=lib.int16), b.to(torch.int8))
    check(lambda lib, x: x.sum(0, dtype=lib.float16), b)
    check(lambda lib, x: x.cumsum(1, dtype=lib.int32), b)


@pytest.mark.parametrize("dim", [-1, 0])
def test_half_precision_mean_rounds_once(dim):
    # torch accumulates in float32 and rounds the mean once; a bfloat16 sum divided afterwards rounds twice and lands
    # on another bfloat16 value in 15 of these 64 rows. A row may still differ by the two sums' order (rarely).
    gen = torch.Generator().manual_seed(0)
    x = (torch.rand(64, 1000, generator=gen) * 3 + 1).to(torch.bfloat16)
    x = x if dim == -1 else x.T.contiguous()
    got, want = to_torch(to_genesis(x).mean(dim)), x.mean(dim)
    assert got.dtype == want.dtype and (got != want).sum() <= 1, (got - want).abs().max()


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
def test_half_precision_var_and_std_round_once(dtype):
    # torch computes the moments of half types in float32 and rounds once; centered squares and their sum rounded to
    # the half type landed a step or more off (bfloat16 var 1.96875 for torch's 1.9609375).
    h = (rand(8, 40, seed=41, dtype=torch.float32, requires_grad=False) * 3).to(dtype).requires_grad_()
    check(lambda lib, x: x.var(-1), h, rtol=0, atol=0)
    check(lambda lib, x: x.std(0, correction=0), h, rtol=0, atol=0)
    check(lambda lib, x: lib.var_mean(x, 1)[0], h, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_long_reductions_split_over_programs(dtype):
    # Few outputs over long rows, or columns over a long outer dim: on cuda the variance and the sum of squares of a
    # 2-norm split each row over several programs and merge their partials. Values of mean 4 and deviation 1.
    tol = {torch.float32: (1e-4, 1e-5), torch.float64: (1e-10, 1e-12), torch.bfloat16: (8e-3, 1e-2)}[dtype]
    rows = (rand(3, 40000, seed=5, dtype=torch.float32, requires_grad=False) * 1.7 + 4).to(dtype).requires_grad_()
    cols = (rand(40000, 3, seed=6, dtype=torch.float32, requires_grad=False) * 1.7 + 4).to(dtype).requires_grad_()
    check(lambda lib, x: x.var(1), rows, rtol=tol[0], atol=tol[1])
    check(lambda lib, x: x.std(), rows, rtol=tol[0], atol=tol[1])
    check(lambda lib, x: x.var(0, correction=0), cols, rtol=tol[0], atol=tol[1])
    check(lambda lib, x: lib.linalg.vector_norm(x, dim=1), rows, rtol=tol[0], atol=tol[1])
    check(lambda lib, x: lib.linalg.vector_norm(x, dim=0), cols, rtol=tol[0], atol=tol[1])
    check(lambda lib, x: x.norm(), cols, rtol=tol[0], atol=tol[1])


def test_count_nonzero_and_var_mean():
    x = torch.tensor([[0.0, 1.0, 2.0], [0.0, 0.0, 3.0]], dtype=torch.float64, requires_grad=True)
    check(lambda lib, x: lib.count_nonzero(x), x)
    check(lambda lib, x: lib.count_nonzero(x, 1), x)
    check(lambda lib, x: lib.var_mean(x, 1), x)
    check(lambda lib, x: lib.var_mean(x, 0, correction=0, keepdim=True), x)


def test_var_std_small_samples():
    one = rand(1, 3, seed=18)
    check(lambda lib, x: x.var(0), one)
    check(lambda lib, x: x.std(0, correction=0), one)
    check(lambda lib, x: x.var(), rand(seed=18))
    zero = torch.zeros(2, 3, dtype=torch.float64, requires_grad=True)
    check(lambda lib, x: x.std(1), zero)
    check(lambda lib, x: x.norm(), zero)
    check(lambda lib, x: x.norm(dim=0), zero)
    check(lambda lib, x: lib.norm(x, p=3, dim=1), zero)


def test_reduction_errors():
    x = rand(2, 3)
    check_error(IndexError, lambda lib, x: x.sum(2), x, match="sum.*2")
    check_error(IndexError, lambda lib, x: x.mean(-3), x, match="-3")
    check_error(IndexError, lambda lib, x: x.max(5), x)
    check_error(IndexError, lambda lib, x: x.argmax(2), x)
    check_error(IndexError, lambda lib, x: x.cumsum(2), x)
    check_error(RuntimeError, lambda lib, x: x.sum((0, 0)), x)
    check_error(IndexError, lambda lib, x: x.amax((0, 3)), x)
    check_error(IndexError, lambda lib, x: x.var(3), x)
    check_error(IndexError, lambda lib, x: x.logsumexp(2), x)
    check_error(IndexError, lambda lib, x: x.all(2), x.detach() > 0)
    check_error(IndexError, lambda lib, x: x.sum(1), rand(seed=1))
    check_error(RuntimeError, lambda lib, x: x.norm(), torch.tensor([1, 2]))
    check_error(RuntimeError, lambda lib, x: x.var(), torch.tensor([1, 2]))


def test_var_std_of_complex_and_their_argument_checks():
    # The variance of complex numbers is real: that of the real parts plus that of the imaginary parts.
    z = torch.complex(rand(3, 4, seed=20), rand(3, 4, seed=21))
    check(lambda lib, z: z.var(1), z)
    check(lambda lib, z: lib.std(z, 0, correction=0, keepdim=True), z)
    check(lambda lib, z: z.std(), z)
    check(lambda lib, z: lib.var_mean(z, 1), z)
    for op in ("var", "std"):
        check_error(RuntimeError, lambda lib, x, op=op: getattr(x, op)(), torch.tensor([1, 2]),
                    match="std and var only support floating point and complex dtypes$")
    check_error(RuntimeError, lambda lib, x: lib.var_mean(x), torch.tensor([1, 2]),
                match="var_mean only support floating point and complex dtypes$")
    check_error(RuntimeError, lambda lib, x: lib.std_mean(x, 0), torch.tensor([True]),
                match="std_mean only support floating point and complex dtypes$")
    check_error(TypeError, lambda lib, x: x.std(0, unbiased=False, correction=1), rand(3))


def test_empty_reduction_messages():
    e = torch.zeros(0, 3)
    check_error(IndexError, lambda lib, x: x.amax(0), e, match="amax\\(\\): Expected reduction dim 0 to have non-zero "
                                                                "size.$")
    check_error(IndexError, lambda lib, x: x.amin((1, 0)), e, match="reduction dim 0 to have non-zero size")
    check_error(RuntimeError, lambda lib, x: lib.aminmax(x), e,
                match="cannot compute aminmax over an empty dimension as the operation has no identity.$")
    check_error(RuntimeError, lambda lib, x: x.mean(), torch.tensor([1], dtype=torch.uint8), match="Got: Byte$")
    check_error(RuntimeError, lambda lib, x: lib.histc(x, 3), torch.tensor([0.0, math.inf]),
                match=r"range of \[0, inf\] is not finite")


@pytest.mark.parametrize("op", ["sum", "prod", "cumsum", "cumprod"])
def test_out_tensor_sets_the_dtype_of_sums_and_products(op):
    # torch builds these reductions from the output's dtype: a float input is cast to an int64 output's type first.
    x = torch.tensor([[0.5, 1.5, 2.5], [3.5, -1.5, 2.0]])
    for dt in ("int64", "float64", "float16"):
        check(lambda lib, x, dt=dt: getattr(lib, op)(x, 1, out=x.new_empty(0, dtype=getattr(lib, dt))), x,
              backward=False)
    check_error(RuntimeError, lambda lib, x: lib.mean(x, 1, out=x.new_empty(0, dtype=lib.int64)), x,
                match="result type Float can't be cast to the desired output type Long")


def test_var_std_warn_where_no_degrees_of_freedom_are_left():
    cases = [("var", lambda lib, x: x.var(), (1,)), ("std", lambda lib, x: x.std(0), (0, 3)),
             ("var", lambda lib, x: x.var(correction=3), (3,)), ("var_mean", lambda lib, x: lib.var_mean(x), (1,)),
             ("std_mean", lambda lib, x: lib.std_mean(x, 1), (2, 1))]
    for name, fn, shape in cases:
        for lib in (torch, genesis):
            with pytest.warns(UserWarning, match=rf"^{name}\(\): degrees of freedom is <= 0. Correction should be "
                                                 r"strictly less than the reduction factor"):
                fn(lib, lib.ones(shape))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        genesis.ones(3, 2).std((0, 1), correction=5.5)


@pytest.mark.parametrize("p", [0.5, 0.3, -1.0, -0.5])
def test_norm_below_one_gives_zeros_a_zero_gradient(p):
    # |x|^p has an infinite slope at 0 (and is infinite there for p < 0): torch's norm backward masks it.
    x = torch.tensor([[0.0, 1.0, -2.0], [0.0, 0.0, 0.0], [3.0, 0.5, 1.0]], dtype=torch.float64, requires_grad=True)
    check(lambda lib, x: lib.norm(x, p=p, dim=1), x)
    check(lambda lib, x: lib.linalg.vector_norm(x, ord=p), x)
