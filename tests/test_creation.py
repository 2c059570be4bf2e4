"""Creation functions against torch, and random creation: reproducibility, generators and distributions."""

import math

import numpy as np
import pytest
import torch

import genesis
from tests.helpers import DEVICE, TORCH_DTYPE, assert_same, check_error, to_genesis, to_torch


def same(g_fn, t_fn):
    """Call a creation function in both libraries (``device`` for Genesis only) and compare."""
    assert_same(g_fn(genesis), t_fn(torch))


def both(fn):
    same(lambda lib: fn(lib, {"device": DEVICE}), lambda lib: fn(lib, {}))


# ------------------------------------------------------------------ tensor() and the constructor

@pytest.mark.parametrize("data", [
    1, 2.5, True, -3, [1, 2, 3], [1.0, 2, 3], [True, False], [[1, 2], [3, 4]], [[1.5], [2.5]], [], [[]],
    [[[1, 2]], [[3, 4]]], (1, 2), [1, True], [2.5, True], [[1, 2.0], (3, 4)],
    [True, 2, 3.5], [[True, 1], [2, 3]], [[1, 2], [3.5, 4]], ((1, 2), (3, 4)), [[True], [False]],
    list(range(-500, 500)), [float("inf"), -0.0, 1e-40],
], ids=lambda d: str(d)[:40])
def test_tensor_from_python(data):
    both(lambda lib, kw: lib.tensor(data, **kw))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.int8,
                                   torch.uint8, torch.int16, torch.int32, torch.int64, torch.bool], ids=str)
def test_tensor_with_dtype(dtype):
    g_dtype = genesis.dtypes.to_dtype(str(dtype).replace("torch.", ""))
    for data in ([1, 0, 3], [[1.7, -0.2]], 2, 0.5, True):
        if dtype is torch.uint8 and data == [[1.7, -0.2]]:
            continue  # negative floats to uint8 are undefined behaviour in C
        assert_same(genesis.tensor(data, dtype=g_dtype, device=DEVICE), torch.tensor(data, dtype=dtype))


def test_tensor_from_numpy_and_tensors():
    for arr in (np.arange(6).reshape(2, 3), np.ones((2, 2), np.float32), np.array([True, False]),
                np.array(3.5), np.arange(12, dtype=np.int16).reshape(3, 4)[:, ::2], np.zeros((0, 3))):
        assert_same(genesis.tensor(arr, device=DEVICE), torch.tensor(arr))
        assert_same(genesis.tensor(arr, dtype=genesis.float32, device=DEVICE), torch.tensor(arr, dtype=torch.float32))
    src = to_genesis(torch.arange(6.0).reshape(2, 3))
    copy = genesis.tensor(src)
    copy[0, 0] = 9.0
    assert to_torch(src)[0, 0] == 0.0
    assert_same(genesis.tensor(src.mT), torch.arange(6.0).reshape(2, 3).mT)
    assert_same(genesis.tensor(src, dtype=genesis.int32), torch.arange(6).reshape(2, 3).int())
    t = genesis.tensor([1.0, 2.0], requires_grad=True)
    assert t.requires_grad and t.is_leaf


def test_tensor_from_numpy_scalars_keeps_their_dtype():
    for data in ([np.float64(1.5), 2], [np.int32(1), 2], [np.float32(1.5), 2.5], [np.int16(1), True],
                 [np.int8(1), 2.5], [np.float16(1), np.int64(3)], np.float32(2.5), np.int32(3)):
        assert_same(genesis.tensor(data, device=DEVICE), torch.tensor(data))


@pytest.mark.filterwarnings("ignore:Creating a tensor from a list of numpy.ndarrays")  # torch's slow-path warning
def test_tensor_from_a_list_of_numpy_arrays():
    for data in ([np.arange(3), np.arange(3)], [np.arange(3, dtype=np.float64), np.arange(3, dtype=np.float32)],
                 [np.arange(3, dtype=np.int32), [1, 2, 3]], [np.arange(3), [1.5, 2, 3]], [np.arange(3) > 1] * 2,
                 (np.ones((2, 2), np.float32), np.zeros((2, 2), np.float32)), [[np.ones(2), np.zeros(2)]] * 2,
                 [np.arange(4).reshape(2, 2)[:, 0], np.arange(2)]):
        assert_same(genesis.tensor(data, device=DEVICE), torch.tensor(data))
    assert_same(genesis.tensor([np.arange(3)] * 2, dtype=genesis.float32, device=DEVICE),
                torch.tensor([np.arange(3)] * 2, dtype=torch.float32))
    check_error(ValueError, lambda lib: lib.tensor([np.arange(3), np.arange(2)]), match="length 3 at dim 1 .got 2.")


def test_tensor_constructor():
    assert_same(genesis.Tensor([1, 2, 3]), torch.Tensor([1, 2, 3]))
    assert_same(genesis.Tensor([[1.5, 2]]), torch.Tensor([[1.5, 2]]))
    assert tuple(genesis.Tensor(2, 3).shape) == tuple(torch.Tensor(2, 3).shape)
    assert genesis.Tensor(2, 3).dtype is genesis.float32
    assert_same(genesis.Tensor(), torch.Tensor())
    assert genesis.Tensor([1, 2], requires_grad=True).requires_grad


def test_tensor_errors():
    check_error(ValueError, lambda lib: lib.tensor([[1, 2], [3]]))
    check_error(TypeError, lambda lib: lib.tensor("abc"))
    check_error(RuntimeError, lambda lib: lib.tensor(float("nan"), dtype=lib.int64))


@pytest.mark.parametrize("data, dtype, exc", [
    ([[1, 2], 3], None, TypeError),  # a number where the first row says a list belongs
    ([1, [2, 3]], None, TypeError),  # a list where a number belongs
    ([[1.0], [2.0, 3.0]], "float32", ValueError),
    ([[[1]], [2]], None, TypeError),
    (["cat", "dog"], None, ValueError),  # a string reads as an endless nesting of strings
    ([1, "a"], None, TypeError),
    ([1, None], None, RuntimeError),  # no dtype to infer from None
    ([1, None], "float32", TypeError),  # not converted to nan
    (["1"], "float32", ValueError),  # not parsed as a number
    ([object()], None, RuntimeError),
])
def test_tensor_ragged_or_non_numeric_data_raises_like_torch(data, dtype, exc):
    check_error(exc, lambda lib: lib.tensor(data, dtype=getattr(lib, dtype) if dtype else None))


def test_from_numpy_shares_memory_and_numpy_roundtrip():
    arr = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = genesis.from_numpy(arr)
    arr[0, 0] = 42.0
    assert t[0, 0].item() == 42.0
    t[1, 1] = -1.0
    assert arr[1, 1] == -1.0
    assert t.dtype is genesis.float32
    back = genesis.tensor([[1, 2], [3, 4]], dtype=genesis.int16).numpy()
    assert back.dtype == np.int16 and back.tolist() == [[1, 2], [3, 4]]
    with pytest.raises(TypeError):
        genesis.from_numpy([1, 2])


def test_tolist_item():
    for data in ([1, 2], [[1.5, 2.5]], 3, 2.5, True, [[True], [False]], []):
        g, t = genesis.tensor(data, device=DEVICE), torch.tensor(data)
        assert g.tolist() == t.tolist()
        if t.numel() == 1:
            assert g.item() == t.item() and type(g.item()) is type(t.item())
    check_error(RuntimeError, lambda lib: lib.tensor([1, 2]).item())


# ------------------------------------------------------------------ factories

@pytest.mark.parametrize("factory", ["zeros", "ones", "empty"])
def test_zeros_ones_empty(factory):
    for args, kwargs in (((2, 3), {}), (((2, 3),), {}), (([4],), {}), (((),), {}), ((0, 2), {}),
                         ((2,), {"dtype": "int32"}), ((3,), {"dtype": "bool"}), ((1, 2), {"dtype": "float16"})):
        g_kw = {k: genesis.dtypes.to_dtype(v) for k, v in kwargs.items()}
        t_kw = {k: getattr(torch, v) for k, v in kwargs.items()}
        g = getattr(genesis, factory)(*args, device=DEVICE, **g_kw)
        t = getattr(torch, factory)(*args, **t_kw)
        if factory == "empty":
            assert tuple(g.shape) == tuple(t.shape) and TORCH_DTYPE[g.dtype] == t.dtype
        else:
            assert_same(g, t)
    g = genesis.zeros(2, requires_grad=True)
    assert g.requires_grad and g.is_leaf
    check_error(RuntimeError, lambda lib: lib.zeros(2, -1))
    check_error(TypeError, lambda lib: lib.ones(2.5))


def test_full():
    both(lambda lib, kw: lib.full((2, 3), 1.5, **kw))
    both(lambda lib, kw: lib.full((2,), 7, **kw))
    both(lambda lib, kw: lib.full((2,), True, **kw))
    both(lambda lib, kw: lib.full([3], 2, dtype=lib.float64, **kw))
    both(lambda lib, kw: lib.full((), -1.0, **kw))
    both(lambda lib, kw: lib.full(2, 4.0, **kw) if lib is genesis else lib.full((2,), 4.0))
    for value in (np.int64(3), np.int32(-2), np.uint8(7), np.float32(1.5), np.bool_(True)):  # numpy scalars as torch
        both(lambda lib, kw, value=value: lib.full((2,), value, **kw))


def test_like_factories():
    base = torch.arange(6, dtype=torch.int16).reshape(2, 3)
    g = to_genesis(base)
    assert_same(genesis.zeros_like(g), torch.zeros_like(base))
    assert_same(genesis.ones_like(g, dtype=genesis.float64), torch.ones_like(base, dtype=torch.float64))
    assert_same(genesis.full_like(g, 3), torch.full_like(base, 3))
    assert_same(genesis.full_like(g, 2.7), torch.full_like(base, 2.7))
    e = genesis.empty_like(g)
    assert e.shape == g.shape and e.dtype is g.dtype
    assert_same(g.new_zeros(2), base.new_zeros(2))
    assert_same(g.new_ones((1, 2)), base.new_ones((1, 2)))
    assert_same(g.new_full((2,), 5), base.new_full((2,), 5))
    assert_same(g.new_tensor([1.5, 2]), base.new_tensor([1.5, 2]))
    r = genesis.rand_like(genesis.zeros(3, 2, dtype=genesis.float64))
    assert r.shape == (3, 2) and r.dtype is genesis.float64
    assert genesis.randn_like(genesis.zeros(4)).shape == (4,)
    ri = genesis.randint_like(g, 10)
    assert ri.dtype is genesis.int16 and int(ri.min().item()) >= 0 and int(ri.max().item()) < 10


@pytest.mark.parametrize("args", [(5,), (2, 8), (1, 2.5, 0.5), (10, 0, -3), (0.0, 1.0, 0.1), (-3, 3, 2), (0,),
                                  (1.5,), (0, 1, 0.3)], ids=str)
def test_arange(args):
    both(lambda lib, kw: lib.arange(*args, **kw))
    both(lambda lib, kw: lib.arange(*args, dtype=lib.float64, **kw))


def test_arange_errors():
    check_error(RuntimeError, lambda lib: lib.arange(0, 5, 0))
    check_error(RuntimeError, lambda lib: lib.arange(5, 0, 1))


@pytest.mark.parametrize("args", [(0, 1, 5), (-2, 3, 1), (1, 1, 3), (0, 10, 0), (5, -5, 11), (0, 7, 4)], ids=str)
def test_linspace_logspace(args):
    both(lambda lib, kw: lib.linspace(*args, **kw))
    both(lambda lib, kw: lib.linspace(*args, dtype=lib.float64, **kw))
    both(lambda lib, kw: lib.linspace(*args, dtype=lib.int64, **kw))
    both(lambda lib, kw: lib.logspace(args[0] / 5, args[1] / 5, args[2], **kw))
    both(lambda lib, kw: lib.logspace(args[0] / 5, args[1] / 5, args[2], base=2.0, **kw))


@pytest.mark.parametrize("args", [(-1, 1, 10), (1e-4, 0.02, 1000), (-1, 1, 256), (0.1, 7.3, 33), (-2.5, 11.0, 2049)],
                         ids=str)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_linspace_matches_torch_to_the_bit(args, dtype):
    """torch rounds the step to the result's dtype and computes each value as one fused multiply-add; the values
    are the same bits (a DDPM beta schedule, an evenly spaced init), not merely close."""
    g = genesis.linspace(*args, dtype=getattr(genesis, dtype)).numpy()
    t = torch.linspace(*args, dtype=getattr(torch, dtype)).numpy()
    mismatched = int((g != t).sum())
    assert mismatched == 0, f"linspace{args} {dtype}: {mismatched} of {t.size} values differ from torch's"


@pytest.mark.parametrize("args", [(-1, 1, 16), (-1, 1, 224), (0.5, 0.51, 333), (-3.3, 7.1, 101), (0, 1, 1), (5, 5, 4)],
                         ids=str)
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_linspace_in_half_precision_matches_torch_to_the_bit(args, dtype):
    """torch's CPU linspace in float16/bfloat16 rounds every operation (the step, each product and sum) to the
    result's dtype; an affine_grid built under autocast reads these values (bfloat16 with 1000 or more steps can
    still differ: torch's vectorized loop rounds in another order there)."""
    g = genesis.linspace(*args, dtype=getattr(genesis, dtype)).float().numpy()
    t = torch.linspace(*args, dtype=getattr(torch, dtype)).float().numpy()
    mismatched = int((g != t).sum())
    assert mismatched == 0, f"linspace{args} {dtype}: {mismatched} of {t.size} values differ from torch's"


def test_eye():
    both(lambda lib, kw: lib.eye(3, **kw))
    both(lambda lib, kw: lib.eye(2, 4, **kw))
    both(lambda lib, kw: lib.eye(4, 2, dtype=lib.int64, **kw))
    both(lambda lib, kw: lib.eye(0, **kw))
    both(lambda lib, kw: lib.eye(3, dtype=lib.bool, **kw))
    check_error(RuntimeError, lambda lib: lib.eye(-1))


def test_scalar_tensor_and_as_tensor():
    assert_same(genesis.scalar_tensor(3), torch.scalar_tensor(3))
    assert_same(genesis.scalar_tensor(2, dtype=genesis.int64), torch.scalar_tensor(2, dtype=torch.int64))
    g = genesis.tensor([1.0, 2.0])
    assert genesis.as_tensor(g) is g
    assert_same(genesis.as_tensor([1, 2], dtype=genesis.float64), torch.as_tensor([1, 2], dtype=torch.float64))
    arr = np.arange(3.0)
    shared = genesis.as_tensor(arr)
    arr[0] = 5.0
    assert shared[0].item() == 5.0


def test_default_dtype_drives_factories():
    assert genesis.get_default_dtype() is genesis.float32
    genesis.set_default_dtype(genesis.float64)
    try:
        assert genesis.zeros(2).dtype is genesis.float64
        assert genesis.tensor([1.5]).dtype is genesis.float64
        assert genesis.tensor([1]).dtype is genesis.int64
        assert genesis.arange(0.0, 1.0, 0.5).dtype is genesis.float64
        assert genesis.rand(2).dtype is genesis.float64
        assert genesis.linspace(0, 1, 3).dtype is genesis.float64
        assert (genesis.tensor([1, 2]) / 2).dtype is genesis.float64
        assert (genesis.tensor([1, 2]) * 0.5).dtype is genesis.float64
    finally:
        genesis.set_default_dtype(genesis.float32)
    assert genesis.zeros(2).dtype is genesis.float32
    with pytest.raises(TypeError):
        genesis.set_default_dtype(genesis.int64)


# ------------------------------------------------------------------ random creation

RANDOM = {
    "rand": lambda gen: genesis.rand(3, 4, generator=gen, device=DEVICE),
    "randn": lambda gen: genesis.randn(3, 4, generator=gen, device=DEVICE),
    "randint": lambda gen: genesis.randint(0, 10, (3, 4), generator=gen, device=DEVICE),
    "randperm": lambda gen: genesis.randperm(10, generator=gen, device=DEVICE),
    "normal": lambda gen: genesis.normal(2.0, 3.0, (5,), generator=gen, device=DEVICE),
    "bernoulli": lambda gen: genesis.bernoulli(genesis.full((6,), 0.5, device=DEVICE), generator=gen),
    "multinomial": lambda gen: genesis.multinomial(genesis.ones(6, device=DEVICE), 3, generator=gen),
    "multinomial_repl": lambda gen: genesis.multinomial(genesis.ones(2, 6, device=DEVICE), 4, replacement=True,
                                                        generator=gen),
}


@pytest.mark.parametrize("name", list(RANDOM))
def test_manual_seed_reproduces(name):
    fn = RANDOM[name]
    genesis.manual_seed(123)
    a = to_torch(fn(None))
    b = to_torch(fn(None))
    genesis.manual_seed(123)
    assert torch.equal(to_torch(fn(None)), a)
    assert torch.equal(to_torch(fn(None)), b)
    genesis.manual_seed(124)
    if name not in ("multinomial", "bernoulli"):  # few outcomes: a different seed may repeat by chance
        assert not torch.equal(to_torch(fn(None)), a)


@pytest.mark.parametrize("name", list(RANDOM))
def test_generator_reproduces_and_is_independent(name):
    fn = RANDOM[name]
    g1 = genesis.Generator(device=DEVICE).manual_seed(7)
    first = to_torch(fn(g1))
    genesis.manual_seed(0)
    g2 = genesis.Generator(device=DEVICE).manual_seed(7)
    genesis.rand(5, device=DEVICE)  # the default generator moving does not affect g2
    assert torch.equal(to_torch(fn(g2)), first)
    state = g2.get_state()
    after = to_torch(fn(g2))
    g2.set_state(state)
    assert torch.equal(to_torch(fn(g2)), after)


def test_rng_state_roundtrip_and_seed_values():
    genesis.manual_seed(99)
    assert genesis.initial_seed() == 99
    state = genesis.get_rng_state()
    a = to_torch(genesis.randn(10))
    genesis.set_rng_state(state)
    assert torch.equal(to_torch(genesis.randn(10)), a)
    genesis.manual_seed(2**63 + 5)
    genesis.manual_seed(-1)
    with pytest.raises(RuntimeError):
        genesis.manual_seed(2**64)
    # The global seeding converts with int(), as torch's; a generator takes only a Python int.
    genesis.manual_seed(3.7)
    assert genesis.initial_seed() == torch.manual_seed(3.7).initial_seed() == 3
    for bad in (2.0, True, "5"):
        check_error(RuntimeError, lambda lib, s=bad: lib.Generator().manual_seed(s), match="expected a long")


def _stats(t: genesis.Tensor) -> tuple[float, float]:
    x = to_torch(t).double()
    return x.mean().item(), x.std().item()


def test_distributions_are_sane():
    genesis.manual_seed(0)
    n = 200_000
    mean, std = _stats(genesis.rand(n, device=DEVICE))
    assert abs(mean - 0.5) < 0.005 and abs(std - math.sqrt(1 / 12)) < 0.005
    u = to_torch(genesis.rand(n, device=DEVICE))
    assert u.min() >= 0 and u.max() < 1
    mean, std = _stats(genesis.randn(n, device=DEVICE))
    assert abs(mean) < 0.01 and abs(std - 1) < 0.01
    mean, std = _stats(genesis.normal(3.0, 0.5, (n,), device=DEVICE))
    assert abs(mean - 3.0) < 0.005 and abs(std - 0.5) < 0.005
    mean_t = genesis.tensor([0.0, 10.0], device=DEVICE).reshape(2, 1).expand(2, n // 2)
    by_row = to_torch(genesis.normal(mean_t, 2.0)).double()
    assert torch.allclose(by_row.mean(1), torch.tensor([0.0, 10.0], dtype=torch.float64), atol=0.05)
    ints = to_torch(genesis.randint(-3, 4, (n,), device=DEVICE))
    assert ints.dtype == torch.int64 and ints.min() == -3 and ints.max() == 3
    counts = torch.bincount(ints + 3, minlength=7).double() / n
    assert torch.allclose(counts, torch.full((7,), 1 / 7, dtype=torch.float64), atol=0.01)
    probs = genesis.tensor([0.1, 0.5, 0.9], device=DEVICE).reshape(3, 1).expand(3, n // 10).contiguous()
    b = to_torch(genesis.bernoulli(probs)).double()
    assert set(b.unique().tolist()) <= {0.0, 1.0}
    assert torch.allclose(b.mean(1), torch.tensor([0.1, 0.5, 0.9], dtype=torch.float64), atol=0.02)
    half = to_torch(genesis.rand(1000, dtype=genesis.float16, device=DEVICE))
    assert half.dtype == torch.float16 and half.min() >= 0 and half.max() <= 1


def test_randperm_is_a_permutation():
    genesis.manual_seed(1)
    for n in (0, 1, 2, 10, 1000):
        p = to_torch(genesis.randperm(n, device=DEVICE))
        assert p.dtype == torch.int64
        assert torch.equal(p.sort().values, torch.arange(n))
    perms = {tuple(to_torch(genesis.randperm(4)).tolist()) for _ in range(200)}
    assert len(perms) > 20  # many of the 24 orders appear
    assert genesis.randperm(5, dtype=genesis.int32).dtype is genesis.int32


def test_multinomial():
    genesis.manual_seed(3)
    weights = genesis.tensor([1.0, 0.0, 3.0, 6.0], device=DEVICE)
    draws = to_torch(genesis.multinomial(weights, 20000, replacement=True))
    assert draws.shape == (20000,) and draws.dtype == torch.int64
    freq = torch.bincount(draws, minlength=4).double() / 20000
    assert torch.allclose(freq, torch.tensor([0.1, 0.0, 0.3, 0.6], dtype=torch.float64), atol=0.015)
    for _ in range(20):
        no_repl = to_torch(genesis.multinomial(weights, 3))
        assert len(set(no_repl.tolist())) == 3 and 1 not in no_repl.tolist()
    # Without replacement the first draw follows the weights.
    firsts = torch.tensor([int(to_torch(genesis.multinomial(weights, 2))[0]) for _ in range(3000)])
    freq = torch.bincount(firsts, minlength=4).double() / 3000
    assert torch.allclose(freq, torch.tensor([0.1, 0.0, 0.3, 0.6], dtype=torch.float64), atol=0.04)
    rows = to_torch(genesis.multinomial(genesis.tensor([[0.0, 1.0], [1.0, 0.0]], device=DEVICE), 1))
    assert rows.tolist() == [[1], [0]]
    check_error(RuntimeError, lambda lib, w: lib.multinomial(w, 5), torch.tensor([1.0, 2.0]))
    check_error(RuntimeError, lambda lib, w: lib.multinomial(w, 1), torch.tensor([1.0, -2.0]))
    check_error(RuntimeError, lambda lib, w: lib.multinomial(w, 1), torch.zeros(2, 2, 2))


def test_random_errors():
    check_error(RuntimeError, lambda lib: lib.randint(5, 5, (2,)))
    # randint's size is required and must be a sequence, not an int.
    check_error(TypeError, lambda lib: lib.randint(0, 10, 3))
    check_error(TypeError, lambda lib: lib.randint(10, 3), match="size")
    check_error(TypeError, lambda lib: lib.randint(10))
    check_error(RuntimeError, lambda lib: lib.randperm(-1))
    check_error(RuntimeError, lambda lib: lib.normal(0.0, -1.0, (2,)))
    check_error(RuntimeError, lambda lib, p: lib.bernoulli(p), torch.tensor([0.5, 1.5]))
    check_error(RuntimeError, lambda lib, p: lib.bernoulli(p), torch.tensor([0.5, float("nan")]))
    check_error(RuntimeError, lambda lib, p: lib.bernoulli(p), torch.tensor([-0.5, 0.5]))
    check_error(RuntimeError, lambda lib, p: lib.bernoulli(p), torch.tensor([0, 1]))
    check_error(RuntimeError, lambda lib, w: lib.multinomial(w, 1), torch.tensor([1, 2]))
    check_error(RuntimeError, lambda lib: lib.rand(3, dtype=lib.int64))


def test_random_signatures_and_dtypes():
    for g, t in ((genesis.randint(5, (3,)), torch.randint(5, (3,))),
                 (genesis.randint(0, 5, (2, 2), dtype=genesis.float32),
                  torch.randint(0, 5, (2, 2), dtype=torch.float32)),
                 (genesis.randn(3, dtype=genesis.float16), torch.randn(3, dtype=torch.float16)),
                 (genesis.rand((2, 3)), torch.rand((2, 3))), (genesis.rand([0]), torch.rand([0])),
                 (genesis.randperm(4, dtype=genesis.int32), torch.randperm(4, dtype=torch.int32)),
                 (genesis.normal(genesis.zeros(2, 1), genesis.ones(3)), torch.normal(torch.zeros(2, 1), torch.ones(3))),
                 (genesis.bernoulli(genesis.full((3,), 0.5, dtype=genesis.float64)),
                  torch.bernoulli(torch.full((3,), 0.5, dtype=torch.float64)))):
        assert tuple(g.shape) == tuple(t.shape) and TORCH_DTYPE[g.dtype] == t.dtype
    assert genesis.randn(2, requires_grad=True).requires_grad


def test_complex_random_samples():
    # Real and imaginary parts drawn as a real tensor's last dim (normal parts with variance 1/2 each), as torch
    # fills a complex tensor's real view: on the CPU the same numbers as torch's for the same seed.
    for dtype in (genesis.complex64, genesis.complex128):
        genesis.manual_seed(0)
        z = genesis.randn(400, 60, dtype=dtype, device=DEVICE)
        assert z.dtype is dtype and tuple(z.shape) == (400, 60)
        parts = genesis.view_as_real(z)
        assert abs(parts.var().item() - 0.5) < 0.01 and abs(z.abs().pow(2).mean().item() - 1.0) < 0.02
        u = genesis.view_as_real(genesis.rand(400, 60, dtype=dtype, device=DEVICE))
        assert 0.0 <= u.min().item() and u.max().item() < 1.0 and abs(u.mean().item() - 0.5) < 0.01
    assert genesis.randn(3, dtype=genesis.cfloat, requires_grad=True).requires_grad
    if DEVICE == "cpu":
        torch.manual_seed(0)
        genesis.manual_seed(0)
        expected = torch.view_as_real(torch.randn(5, 7, dtype=torch.cfloat))
        assert_same(genesis.view_as_real(genesis.randn(5, 7, dtype=genesis.cfloat)), expected, what="randn cfloat",
                    rtol=0, atol=0)


def test_inplace_random_fills():
    genesis.manual_seed(5)
    t = genesis.empty(50_000, dtype=genesis.float64, device=DEVICE)
    t.uniform_(-2.0, 4.0)
    x = to_torch(t)
    assert x.min() >= -2 and x.max() < 4 and abs(x.mean().item() - 1.0) < 0.05
    t.normal_(1.0, 2.0)
    mean, std = _stats(t)
    assert abs(mean - 1.0) < 0.05 and abs(std - 2.0) < 0.05
    t.bernoulli_(0.25)
    assert abs(to_torch(t).mean().item() - 0.25) < 0.02
    t.exponential_(2.0)
    assert abs(to_torch(t).mean().item() - 0.5) < 0.02
    i = genesis.zeros(1000, dtype=genesis.int64, device=DEVICE).random_(0, 3)
    assert set(to_torch(i).tolist()) == {0, 1, 2}


@pytest.mark.parametrize("dtype,high", [(torch.bool, 1), (torch.uint8, 255), (torch.int8, 127), (torch.int16, 32767),
                                        (torch.float16, 2048), (torch.bfloat16, 256)], ids=str)
def test_random_fill_without_bounds_draws_what_the_dtype_holds(dtype, high):
    """``random_()`` draws integers from [0, high] as torch's: an integer type's non-negative values, a floating
    type's integers up to 2 ** its mantissa digits (before, narrow types wrapped to negative values or inf)."""
    genesis.manual_seed(0)
    x = to_torch(to_genesis(torch.zeros(20_000, dtype=dtype)).random_()).double()
    assert 0 <= x.min().item() <= 0.1 * high and 0.9 * high <= x.max().item() <= high and torch.equal(x, x.round())


def test_keyword_forms_of_factories():
    for fn in (lambda lib: lib.zeros(size=(2, 3)), lambda lib: lib.ones(size=[2]), lambda lib: lib.empty(size=(1, 2)),
               lambda lib: lib.rand(size=(2,)), lambda lib: lib.randn(size=(2, 1)), lambda lib: lib.arange(end=5),
               lambda lib: lib.arange(start=1, end=5, step=2), lambda lib: lib.linspace(start=0, end=1, steps=3),
               lambda lib: lib.eye(n=2, m=3), lambda lib: lib.full(size=(2,), fill_value=1.5),
               lambda lib: lib.zeros_like(input=lib.ones(2)), lambda lib: lib.full_like(lib.ones(2), fill_value=3),
               lambda lib: lib.randint(low=0, high=3, size=(2,)), lambda lib: lib.rand_like(input=lib.ones(3))):
        g, t = fn(genesis), fn(torch)
        assert tuple(g.shape) == tuple(t.shape) and TORCH_DTYPE[g.dtype] == t.dtype
    with pytest.raises(TypeError):
        genesis.zeros(2, size=(2,))


def _layouts(lib):
    x = lib.randn(2, 3, 4, 5)
    cl = x.contiguous(memory_format=lib.channels_last)
    return [x, cl, cl.transpose(0, 1), cl[:, :, ::2], x[:, ::2], x.transpose(1, 3), lib.randn(4, 6).t()[:, ::2],
            lib.randn(5).expand(3, 5), lib.randn(3, 1).expand(3, 4), lib.randn(3, 1, 4)[:, :, ::2],
            lib.randn(2, 3)[:, :0], lib.randn(2, 3, 1, 1).contiguous(memory_format=lib.channels_last)]


@pytest.mark.parametrize("name", ["empty_like", "zeros_like", "ones_like", "full_like"])
def test_like_functions_preserve_the_layout(name):
    """As torch's, *_like keep a dense input's strides (channels_last, transposes) and give other inputs dense
    strides in their dim order; memory_format asks for a format instead."""
    args = (2.5,) if name == "full_like" else ()
    for g, t in zip(_layouts(genesis), _layouts(torch)):
        got, want = getattr(genesis, name)(g, *args), getattr(torch, name)(t, *args)
        assert got.stride() == want.stride() and tuple(got.shape) == tuple(want.shape), (got.stride(), want.stride())
        if name != "empty_like":
            assert_same(got, want)
        for fmt in ("contiguous_format", "channels_last"):
            if fmt == "channels_last" and g.ndim != 4:
                continue
            got = getattr(genesis, name)(g, *args, memory_format=getattr(genesis, fmt))
            assert got.stride() == getattr(torch, name)(t, *args, memory_format=getattr(torch, fmt)).stride()


@pytest.mark.parametrize("name", ["clone", "to(float64)", "to(copy)", "double", "half", "to(cpu, copy)"])
def test_copies_preserve_the_layout(name):
    """clone and the conversions keep the layout under preserve_format, as torch's (one copy, no row-major copy
    after it): a dense input's strides, dense strides in the dim order of a strided slice; values and the
    gradient through the copy as torch's."""
    copy = {"clone": lambda lib, x: x.clone(), "to(float64)": lambda lib, x: x.to(lib.float64),
            "to(copy)": lambda lib, x: x.to(x.dtype, copy=True), "double": lambda lib, x: x.double(),
            "half": lambda lib, x: x.half(), "to(cpu, copy)": lambda lib, x: x.to("cpu", copy=True)}[name]
    for g, t in zip(_layouts(genesis), _layouts(torch)):
        got, want = copy(genesis, g), copy(torch, t)
        assert got.stride() == want.stride(), (g.shape, g.stride(), got.stride(), want.stride())
        assert_same(got, copy(torch, to_torch(g)))
    base_g = genesis.randn(4, 6, 3, requires_grad=True)
    base_t = torch.tensor(base_g.detach().cpu().numpy(), requires_grad=True)
    for lib, base in ((genesis, base_g), (torch, base_t)):
        out = copy(lib, base.transpose(0, 2)[:, ::2])
        (out.float() * lib.arange(out.numel(), dtype=lib.float32).reshape(out.shape)).sum().backward()
    assert_same(base_g.grad, base_t.grad)


def test_empty_takes_a_memory_format() -> None:
    for shape, fmt in (((2, 3, 4, 5), "channels_last"), ((2, 3, 4, 5, 6), "channels_last_3d"),
                       ((2, 3), "contiguous_format")):
        got = genesis.empty(*shape, memory_format=getattr(genesis, fmt), device=DEVICE)
        assert got.stride() == torch.empty(*shape, memory_format=getattr(torch, fmt)).stride()
    check_error(RuntimeError, lambda lib: lib.empty(2, 3, memory_format=lib.channels_last))


def test_tensor_from_one_element_tensors_promotes_as_numbers() -> None:
    cases = [
        lambda lib: lib.tensor([lib.tensor(0.8125), lib.tensor(0.75), lib.tensor(64)]),
        lambda lib: lib.tensor([lib.tensor(2), 1.5]),
        lambda lib: lib.tensor([lib.tensor(1.5, dtype=lib.float64), lib.tensor(2.5)]),
        lambda lib: lib.tensor([lib.tensor([1.5]), lib.tensor([2.5])]),
        lambda lib: lib.tensor([lib.tensor(1.5, dtype=lib.bfloat16), 2.0]),
        lambda lib: lib.tensor([[lib.tensor(1.0), lib.tensor(2.0)], [lib.tensor(3.0), lib.tensor(4.0)]]),
        lambda lib: lib.tensor([lib.tensor(1, dtype=lib.int32), 3]),
        lambda lib: lib.tensor([lib.tensor(1, dtype=lib.int32), lib.tensor(2, dtype=lib.int32)]),
        lambda lib: lib.tensor([lib.tensor(True), lib.tensor(False)]),
    ]
    for case in cases:
        t, g = case(torch), case(genesis)
        assert str(g.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
        assert g.tolist() == t.tolist()
    with pytest.raises(ValueError, match="one element"):
        genesis.tensor([genesis.tensor([1.0, 2.0]), 2.0])


def test_rng_state_is_bytes_and_restores() -> None:
    state = genesis.get_rng_state()
    assert state.dtype is genesis.uint8 and state.ndim == 1
    drawn = genesis.rand(4)
    genesis.set_rng_state(state)
    assert genesis.equal(genesis.rand(4), drawn)
    with pytest.raises(TypeError):
        genesis.set_rng_state(state.float())


# ------------------------------------------------------------------ torch's keywords: layout, pin_memory, new_*

LAYOUT_FACTORIES = {
    "zeros": lambda lib, kw: lib.zeros(2, 3, **kw),
    "ones": lambda lib, kw: lib.ones((2,), **kw),
    "empty": lambda lib, kw: lib.empty(0, 2, **kw),
    "full": lambda lib, kw: lib.full((2,), 1.5, **kw),
    "arange": lambda lib, kw: lib.arange(1, 4, **kw),
    "rand": lambda lib, kw: lib.rand(3, **kw) * 0,
    "randn": lambda lib, kw: lib.randn(3, **kw) * 0,
    "randint": lambda lib, kw: lib.randint(1, (3,), **kw),
    "randperm": lambda lib, kw: lib.randperm(1, **kw),
    "normal": lambda lib, kw: lib.normal(2.0, 0.0, (3,), **kw),
    "tril_indices": lambda lib, kw: lib.tril_indices(3, 2, **kw),
    "triu_indices": lambda lib, kw: lib.triu_indices(2, 3, 1, **kw),
}


@pytest.mark.parametrize("name", list(LAYOUT_FACTORIES))
def test_factories_take_layout_and_pin_memory(name):
    fn = LAYOUT_FACTORIES[name]
    both(lambda lib, kw: fn(lib, {**kw, "layout": lib.strided}))
    both(lambda lib, kw: fn(lib, {**kw, "layout": None}))
    both(lambda lib, kw: fn(lib, {**kw, "pin_memory": False}))
    check_error(TypeError, lambda lib: fn(lib, {"layout": "strided"}))
    # torch builds some of these sparse (zeros, empty) and refuses others; Genesis makes dense tensors only.
    for layout in (genesis.sparse_coo, genesis.sparse_csr):
        with pytest.raises(NotImplementedError, match="only genesis.strided"):
            fn(genesis, {"layout": layout})


def test_tensor_takes_pin_memory():
    both(lambda lib, kw: lib.tensor([1.5, 2.0], pin_memory=False, **kw))
    if genesis.cuda.is_available():
        assert genesis.zeros(2, pin_memory=True).is_pinned() and genesis.tensor([1.0], pin_memory=True).is_pinned()
    else:  # the oracle is a CPU build of torch: both refuse pinned memory without a GPU
        check_error(RuntimeError, lambda lib: lib.tensor([1.0], pin_memory=True))
        check_error(RuntimeError, lambda lib: lib.zeros(2, pin_memory=True))


NEW_FACTORIES = {
    "new_zeros": lambda lib, x: x.new_zeros(2, 3, requires_grad=True),
    "new_ones": lambda lib, x: x.new_ones((1, 2), requires_grad=True),
    "new_full": lambda lib, x: x.new_full((2,), 5, requires_grad=True),
    "new_empty": lambda lib, x: x.new_empty(0, 3, requires_grad=True),
    "new_tensor": lambda lib, x: x.new_tensor([1.5, 2], requires_grad=True),
    "new_zeros_size": lambda lib, x: x.new_zeros(size=(2, 1), dtype=lib.int32, device="cpu"),
    "new_ones_layout": lambda lib, x: x.new_ones(2, layout=lib.strided, pin_memory=False),
    "new_full_keywords": lambda lib, x: x.new_full(size=(2,), fill_value=1, dtype=lib.float32, requires_grad=False),
    "new_empty_size": lambda lib, x: x.new_empty(size=(0, 2), dtype=lib.int64),
}


@pytest.mark.parametrize("name", list(NEW_FACTORIES))
def test_new_factories_take_torch_keywords(name):
    base = torch.arange(6, dtype=torch.float64).reshape(2, 3)
    want = NEW_FACTORIES[name](torch, base)
    got = NEW_FACTORIES[name](genesis, to_genesis(base))
    assert got.requires_grad == want.requires_grad and got.is_leaf
    assert_same(got.detach(), want.detach())


def test_new_factories_refuse_what_torch_refuses():
    base = torch.arange(6).reshape(2, 3)
    check_error(RuntimeError, lambda lib, x: x.new_zeros(2, requires_grad=True), base)  # an integer tensor
    check_error(TypeError, lambda lib, x: x.new_zeros(2, size=(2,)), base)


# ------------------------------------------------------------------ torch's keywords of the random *_like functions

@pytest.mark.parametrize("name", ["rand_like", "randn_like"])
def test_random_like_takes_requires_grad_layout_and_memory_format(name):
    x = genesis.zeros(2, 3, 4, 5, dtype=genesis.float64, device=DEVICE)
    out = getattr(genesis, name)(x, requires_grad=True)
    assert out.requires_grad and out.is_leaf and out.dtype is genesis.float64 and out.shape == x.shape
    assert getattr(genesis, name)(x, layout=genesis.strided, memory_format=genesis.preserve_format).shape == x.shape
    for g, t in zip(_layouts(genesis), _layouts(torch)):  # preserve_format keeps the layout, as torch's
        assert getattr(genesis, name)(g).stride() == getattr(torch, name)(t).stride()


@pytest.mark.parametrize("name", ["rand_like", "randn_like", "rand", "randn"])
@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "bool"])
def test_random_floats_of_an_integer_dtype_raise_as_torch(name, dtype):
    """torch raises NotImplementedError naming its kernel and the dtype; Genesis the same class and message."""
    def fn(lib):
        d = getattr(lib, dtype)
        return getattr(lib, name)(lib.zeros(3, dtype=d) if name.endswith("_like") else 3, **(
            {} if name.endswith("_like") else {"dtype": d}))
    with pytest.raises(NotImplementedError) as want:
        fn(torch)
    with pytest.raises(NotImplementedError) as got:
        fn(genesis)
    assert str(got.value) == str(want.value)


def test_randint_like_on_integer_and_float_tensors():
    for dtype in (torch.int64, torch.int32, torch.uint8, torch.float32):
        base = to_genesis(torch.zeros(50, dtype=dtype))
        for args in ((4,), (2, 5)):
            out = genesis.randint_like(base, *args)
            assert out.dtype is base.dtype and out.shape == base.shape
            values = to_torch(out)
            assert values.min() >= (args[0] if len(args) == 2 else 0) and values.max() < args[-1]
    assert genesis.randint_like(base, high=3).dtype is genesis.float32
    grad = genesis.randint_like(base, 10, requires_grad=True)
    assert grad.requires_grad and grad.is_leaf
    check_error(RuntimeError, lambda lib: lib.randint_like(lib.zeros(2, dtype=lib.int64), 10, requires_grad=True))
    with pytest.raises(TypeError):
        genesis.randint_like(base)


def test_set_rng_state_accepts_torch_cpu_state(tmp_path) -> None:
    """A torch CPU state (``torch.get_rng_state()``, as in a Hugging Face Trainer's ``rng_state.pth``) cannot be
    continued, but seeds Genesis's generator deterministically, with a warning."""
    torch.manual_seed(3)
    path = tmp_path / "rng_state.pth"
    torch.save({"cpu": torch.get_rng_state()}, path)
    state = genesis.load(path)["cpu"]
    assert state.dtype is genesis.uint8 and state.numel() == 5056
    with pytest.warns(UserWarning, match="not reproduced exactly"):
        genesis.set_rng_state(state)
    first = genesis.rand(5)
    with pytest.warns(UserWarning):
        genesis.random.set_rng_state(state)
    assert genesis.equal(genesis.rand(5), first)
    torch.rand(1)
    with pytest.warns(UserWarning):
        genesis.default_generator.set_state(to_genesis(torch.get_rng_state(), device="cpu"))
    assert not genesis.equal(genesis.rand(5), first)  # another torch state, another stream
    with pytest.raises(RuntimeError, match="5056"):
        genesis.set_rng_state(genesis.zeros(100, dtype=genesis.uint8))


@pytest.mark.parametrize("make", [
    lambda lib, x: lib.zeros_like(x, layout=lib.strided), lambda lib, x: lib.ones_like(x, layout=lib.strided),
    lambda lib, x: lib.full_like(x, 2.5, layout=lib.strided, pin_memory=False),
    lambda lib, x: lib.empty_like(x, layout=lib.strided).fill_(1), lambda lib, x: lib.linspace(0, 1, 5, layout=None),
    lambda lib, x: lib.logspace(0, 1, 4, layout=lib.strided), lambda lib, x: lib.eye(3, layout=lib.strided),
    lambda lib, x: lib.scalar_tensor(3.0, layout=lib.strided, pin_memory=False)])
def test_creation_functions_take_torchs_layout_keywords(make) -> None:
    assert_same(make(genesis, genesis.ones(2, 3, device=DEVICE)), make(torch, torch.ones(2, 3)))


def test_creation_functions_refuse_a_layout_that_is_not_one() -> None:
    for lib in (torch, genesis):
        with pytest.raises(TypeError):
            lib.eye(2, layout=3)
