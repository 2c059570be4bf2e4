"""dtypes against torch: promotion of tensors, 0-d tensors and Python scalars; conversions; the default dtype."""

import itertools

import numpy as np
import pytest
import torch

import genesis
from tests.helpers import DEVICE, GENESIS_DTYPE, TORCH_DTYPE, assert_same, check, rand, to_genesis

ALL = [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16, torch.bfloat16,
       torch.float32, torch.float64]


def values(dtype: torch.dtype, shape: tuple = (2, 3)) -> torch.Tensor:
    return (torch.arange(6).reshape(2, 3) % 3).reshape(shape).to(dtype) if shape else torch.tensor(1).to(dtype)


def test_dtype_objects():
    for g, t in TORCH_DTYPE.items():
        assert g.itemsize == t.itemsize
        assert g.is_floating_point == t.is_floating_point and g.is_complex == t.is_complex
        assert g.is_signed == t.is_signed
        assert repr(g) == f"genesis.{g.name}"
    assert genesis.float is genesis.float32 and genesis.double is genesis.float64 and genesis.half is genesis.float16
    assert genesis.long is genesis.int64 and genesis.int is genesis.int32 and genesis.short is genesis.int16
    assert genesis.bool is genesis.dtypes.bool_


@pytest.mark.parametrize("a,b", list(itertools.product(ALL, ALL)), ids=str)
def test_promote_types(a, b):
    assert TORCH_DTYPE[genesis.promote_types(GENESIS_DTYPE[a], GENESIS_DTYPE[b])] == torch.promote_types(a, b)


@pytest.mark.parametrize("a", ALL, ids=str)
def test_result_type_tensor_tensor_and_0d(a):
    for b in ALL:
        for sa, sb in (((2, 3), (2, 3)), ((2, 3), ()), ((), (2, 3)), ((), ())):
            ta, tb = values(a, sa), values(b, sb)
            expected = torch.result_type(ta, tb)
            assert TORCH_DTYPE[genesis.result_type(to_genesis(ta), to_genesis(tb))] == expected, (a, b, sa, sb)
            if a is not torch.bool or b is not torch.bool:
                assert_same(to_genesis(ta) + to_genesis(tb), ta + tb)
            assert_same(to_genesis(ta) * to_genesis(tb), ta * tb)
            assert_same(to_genesis(ta) == to_genesis(tb), ta == tb)


@pytest.mark.parametrize("a", ALL, ids=str)
@pytest.mark.parametrize("scalar", [True, 3, -2, 1000, 2.5, 1e10], ids=str)
def test_result_type_tensor_scalar(a, scalar):
    t = values(a)
    g = to_genesis(t)
    assert TORCH_DTYPE[genesis.result_type(g, scalar)] == torch.result_type(t, scalar)
    assert TORCH_DTYPE[genesis.result_type(scalar, g)] == torch.result_type(scalar, t)
    for op in (lambda x, s: x * s, lambda x, s: s * x, lambda x, s: x + s, lambda x, s: x == s, lambda x, s: x > s,
               lambda x, s: x / s, lambda x, s: lib_max(x, s)):
        try:
            expected = op(t, scalar)
        except RuntimeError:
            continue
        assert_same(op(g, scalar), expected, what=f"{a} with {scalar!r}")


def lib_max(x, s):
    return x.clamp(max=s)


def test_result_type_scalars():
    for a, b in itertools.product([True, 2, 2.5], repeat=2):
        assert TORCH_DTYPE[genesis.result_type(a, b)] == torch.result_type(torch.tensor(a), b)


def test_0d_tensor_promotes_like_a_scalar_within_category():
    i8 = torch.tensor([1, 2], dtype=torch.int8)
    check(lambda lib, a, b: a + b, i8, torch.tensor(300))
    check(lambda lib, a, b: a + b, i8, torch.tensor(2.5, dtype=torch.float64))
    check(lambda lib, a, b: a * b, rand(3).detach().half(), torch.tensor(2.0, dtype=torch.float64))
    check(lambda lib, a, b: a * b, rand(3).detach().bfloat16(), torch.tensor(2, dtype=torch.int64))
    check(lambda lib, a, b: a * b, torch.tensor([True, False]), torch.tensor(3, dtype=torch.int16))
    check(lambda lib, a, b: a - b, rand(3).detach().float(), torch.tensor(1.0, dtype=torch.float64))
    check(lambda lib, a, b: lib.where(a > 0, a, b), rand(3).detach().float(), torch.tensor(1.0, dtype=torch.float64))


def test_int8_scalar_overflow_wraps_like_torch():
    t = torch.tensor([100, -100], dtype=torch.int8)
    assert_same(to_genesis(t) + 100, t + 100)
    assert_same(to_genesis(t) * 3, t * 3)
    u = torch.tensor([250, 3], dtype=torch.uint8)
    assert_same(to_genesis(u) + 10, u + 10)
    assert_same(to_genesis(u) - 5, u - 5)


# ------------------------------------------------------------------ conversions

CONVERSIONS = ["float", "double", "half", "bfloat16", "long", "int", "short", "char", "byte", "bool"]


@pytest.mark.parametrize("method", CONVERSIONS)
@pytest.mark.parametrize("src", [torch.float64, torch.float16, torch.int64, torch.uint8, torch.bool], ids=str)
def test_conversion_methods(method, src):
    t = torch.tensor([[0.0, 1.7, -2.2], [3.5, 0.0, 255.0]]).to(src) if src is not torch.uint8 else \
        torch.tensor([[0, 1, 2], [3, 0, 255]], dtype=torch.uint8)
    if src is torch.bool:
        t = t != 0
    expected = getattr(t, method)()
    if method in ("char", "byte") and src.is_floating_point:
        return  # out-of-range float to small int conversions are undefined behaviour in C
    assert_same(getattr(to_genesis(t), method)(), expected)


@pytest.mark.parametrize("target", ALL, ids=str)
def test_to_dtype_forms(target):
    t = torch.tensor([[0.0, 1.5, 2.0]], dtype=torch.float64)
    g = to_genesis(t)
    gd = GENESIS_DTYPE[target]
    assert_same(g.to(gd), t.to(target))
    assert_same(g.to(dtype=gd), t.to(dtype=target))
    assert_same(g.to(DEVICE, gd), t.to("cpu", target))
    assert_same(g.type(gd), t.type(target))
    assert_same(g.type_as(to_genesis(torch.zeros(1, dtype=target))), t.type_as(torch.zeros(1, dtype=target)))
    assert_same(g.to(to_genesis(torch.zeros(1, dtype=target))), t.to(torch.zeros(1, dtype=target)))
    assert g.to(gd).dtype is gd


def test_to_names_and_python_types():
    g = to_genesis(torch.tensor([1.5, 2.5]))
    assert g.to(int).dtype is genesis.int64
    assert g.to(float).dtype is genesis.float32
    assert g.to(bool).dtype is genesis.bool
    # the legacy type name, as torch's "torch.FloatTensor" / "torch.cuda.FloatTensor"
    assert g.type() == ("genesis.cuda.FloatTensor" if g.device.type == "cuda" else "genesis.FloatTensor")
    with pytest.raises(RuntimeError):
        g.to("complex256")  # neither a dtype nor a device, as torch reads it


def test_to_same_dtype_returns_self_and_copy_flag():
    g = to_genesis(torch.tensor([1.0, 2.0]))
    assert g.to(genesis.float32) is g
    assert g.float() is g
    c = g.to(genesis.float32, copy=True)
    assert c is not g
    c[0] = 5.0
    assert g[0].item() == 1.0


def test_cast_gradients_flow_back_in_source_dtype():
    check(lambda lib, x: x.float().double() * 2, rand(3, 4))
    check(lambda lib, x: (x.half() * 3).double(), rand(3, 4), grad_rtol=1e-3, grad_atol=1e-3, rtol=1e-3, atol=1e-3)
    check(lambda lib, x: x.to(lib.float32).sum(), rand(3, 4), grad_rtol=1e-6, grad_atol=1e-6)
    check(lambda lib, x: x.bfloat16().double(), rand(3, 4), rtol=1e-2, atol=1e-2)
    check(lambda lib, x: x.long(), rand(3, 4) * 10)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
def test_low_precision_arithmetic(dtype):
    a, b = rand(4, 5, seed=1).detach().to(dtype), rand(4, 5, seed=2).detach().to(dtype)
    for fn in (lambda lib, a, b: a + b, lambda lib, a, b: a * b - b, lambda lib, a, b: a / (b.abs() + 1),
               lambda lib, a, b: (a * b).sum(1), lambda lib, a, b: a.exp() + b.sigmoid(),
               lambda lib, a, b: a.mean(0), lambda lib, a, b: a.softmax(-1), lambda lib, a, b: a @ b.mT):
        check(fn, a, b, rtol=2e-2, atol=2e-2)
    check(lambda lib, a, b: a + b, a.clone().requires_grad_(), b.clone().requires_grad_(), rtol=2e-2, atol=2e-2)


def test_item_and_python_conversions_by_dtype():
    for dtype in ALL:
        t = torch.tensor(1).to(dtype)
        g = to_genesis(t)
        assert g.item() == t.item() and type(g.item()) is type(t.item())
        assert float(g) == float(t) and int(g) == int(t) and bool(g) == bool(t)


def test_element_size_by_dtype():
    for dtype in ALL:
        t = torch.zeros(3, dtype=dtype)
        g = to_genesis(t)
        assert g.element_size() == t.element_size()
        assert g.nbytes == t.nbytes
        assert g.is_floating_point() == t.is_floating_point()
        assert genesis.is_floating_point(g) == torch.is_floating_point(t)


@pytest.mark.parametrize("name", ["float16", "bfloat16", "float32", "float64"])
def test_finfo_matches_torch(name):
    g, t = genesis.finfo(getattr(genesis, name)), torch.finfo(getattr(torch, name))
    for attr in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype"):
        assert getattr(g, attr) == getattr(t, attr), attr
    assert repr(g) == str(g) == repr(t)
    assert genesis.finfo().eps == torch.finfo().eps
    with pytest.raises(TypeError):
        genesis.finfo(genesis.int32)


def test_finfo_and_iinfo_compare_by_dtype():
    pairs = [("float32", "float32"), ("float16", "float32"), ("complex64", "float32"), ("bfloat16", "float16")]
    for a, b in pairs:
        assert (genesis.finfo(getattr(genesis, a)) == genesis.finfo(getattr(genesis, b))) == \
            (torch.finfo(getattr(torch, a)) == torch.finfo(getattr(torch, b)))
    assert genesis.iinfo(genesis.int8) == genesis.iinfo(genesis.int8) != genesis.iinfo(genesis.uint8)
    with pytest.raises(TypeError):
        hash(genesis.finfo(genesis.float32))  # unhashable, as torch's


def test_from_numpy_names_the_unsupported_type_as_torch():
    for array in (np.array(["a"]), np.array([object()]), np.array([1.0], dtype=np.longdouble)):
        with pytest.raises(TypeError) as t_err:
            torch.from_numpy(array)
        with pytest.raises(TypeError) as g_err:
            genesis.from_numpy(array)
        name = str(t_err.value).split(". The only")[0]  # "can't convert np.ndarray of type numpy.str_"
        assert str(g_err.value).startswith(name + ". The only supported types are: float64")
