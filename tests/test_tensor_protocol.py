"""The Python protocol of tensors against torch: repr, len, iteration, metadata, conversions, DLPack, pickling."""

from __future__ import annotations

import copy
import math
import operator
import pickle
from typing import Any, Callable

import numpy as np
import pytest
import torch
from torch.utils import dlpack as torch_dlpack

import genesis
from genesis.utils import dlpack as genesis_dlpack
from tests.helpers import DEVICE, assert_same, to_genesis, to_torch


def same_repr(g: Any, t: Any) -> None:
    """Genesis prints what torch prints, but for the library prefix."""
    expected = repr(t).replace("torch.", "genesis.")
    assert repr(g) == expected
    assert str(g) == expected


def build(lib: Any, make: Callable[[Any], Any]) -> Any:
    return make(lib)


REPR_CASES = {
    "floats_integral": lambda lib: lib.tensor([1.0, 2.0, 3.0]),
    "floats": lambda lib: lib.tensor([1.5, -2.25, 3.0]),
    "floats_widths": lambda lib: lib.tensor([[0.1234567, 12.5], [100.25, -3.0]]),
    "floats_sci_small": lambda lib: lib.tensor([1e-5, 1.0]),
    "floats_sci_large": lambda lib: lib.tensor([1e10, 1.0]),
    "floats_sci_range": lambda lib: lib.tensor([123456.0, 1.5]),
    "nonfinite": lambda lib: lib.tensor([float("nan"), float("inf"), -float("inf"), 1.0]),
    "only_nonfinite": lambda lib: lib.tensor([float("nan"), float("inf")]),
    "zeros": lambda lib: lib.zeros(2, 3),
    "signed_zero": lambda lib: lib.tensor([0.0, -0.0, 1.0]),
    "ints": lambda lib: lib.tensor([[1, -20], [300, 4]]),
    "bools": lambda lib: lib.tensor([True, False]),
    "scalar_float": lambda lib: lib.tensor(3.5),
    "scalar_int": lambda lib: lib.tensor(3),
    "scalar_bool": lambda lib: lib.tensor(True),
    "float64": lambda lib: lib.tensor([1.0, 2.5], dtype=lib.float64),
    "float16": lambda lib: lib.tensor([1.0, 2.5], dtype=lib.float16),
    "bfloat16": lambda lib: lib.tensor([1.0, 2.5], dtype=lib.bfloat16),
    "int32": lambda lib: lib.tensor([1, 2], dtype=lib.int32),
    "uint8": lambda lib: lib.tensor([1, 2], dtype=lib.uint8),
    "int8": lambda lib: lib.tensor([-1, 2], dtype=lib.int8),
    "empty": lambda lib: lib.zeros(0),
    "empty_2d": lambda lib: lib.zeros(2, 0),
    "empty_int64": lambda lib: lib.zeros(0, dtype=lib.int64),
    "empty_int32_3d": lambda lib: lib.zeros(0, 2, 1, dtype=lib.int32),
    "requires_grad": lambda lib: lib.tensor([1.0, 2.0], requires_grad=True),
    "grad_fn": lambda lib: lib.tensor([1.0, 2.0], requires_grad=True) * 2,
    "grad_fn_scalar": lambda lib: lib.tensor([[1.0, 2.0]], requires_grad=True).sum(),
    "float64_requires_grad": lambda lib: lib.tensor(2.5, dtype=lib.float64, requires_grad=True),
    "3d": lambda lib: lib.arange(24).reshape(2, 3, 4),
    "3d_float": lambda lib: lib.arange(24).reshape(2, 3, 4) / 7,
    "summarized_1d": lambda lib: lib.arange(2000).float(),
    "summarized_2d": lambda lib: lib.arange(5000).reshape(50, 100) * 0.5,
    "summarized_3d_int": lambda lib: lib.arange(3000).reshape(10, 15, 20),
    "wrapped_line": lambda lib: lib.arange(30) * 1000,
    "wrapped_suffix": lambda lib: (lib.arange(12, dtype=lib.float64) / 3).requires_grad_(),
    "transposed_view": lambda lib: lib.arange(6).reshape(2, 3).T,
}


@pytest.mark.parametrize("name", list(REPR_CASES))
def test_repr_matches_torch(name: str) -> None:
    same_repr(REPR_CASES[name](genesis), REPR_CASES[name](torch))


def test_repr_names_a_non_cpu_device() -> None:
    g = genesis.tensor([1.5, 2.0], device=DEVICE, requires_grad=True)
    suffix = "" if g.device.type == "cpu" else f", device='{g.device}'"
    assert repr(g) == f"tensor([1.5000, 2.0000]{suffix}, requires_grad=True)"


def test_repr_respects_default_dtype() -> None:
    genesis.set_default_dtype(genesis.float64)
    torch.set_default_dtype(torch.float64)
    try:
        for make in (lambda lib: lib.tensor([1.5, 2.0]), lambda lib: lib.tensor([1.5], dtype=lib.float32),
                     lambda lib: lib.zeros(0), lambda lib: lib.zeros(0, dtype=lib.float32)):
            same_repr(make(genesis), make(torch))
    finally:
        genesis.set_default_dtype(genesis.float32)
        torch.set_default_dtype(torch.float32)


def test_format_spec_on_scalars() -> None:
    for make in (lambda lib: lib.tensor(3.14159), lambda lib: lib.tensor(7), lambda lib: lib.tensor([1.5, 2.0])):
        for spec in (".2f", ">8", ""):
            if make(torch).dim() and spec:
                with pytest.raises(TypeError):
                    format(make(torch), spec)
                with pytest.raises(TypeError):
                    format(make(genesis), spec)
                continue
            assert format(make(genesis), spec) == format(make(torch), spec).replace("torch.", "genesis.")
            assert f"{make(genesis)}" == f"{make(torch)}".replace("torch.", "genesis.")


# ------------------------------------------------------------------ len, iteration, metadata

def test_len_and_iteration() -> None:
    src = torch.arange(12, dtype=torch.float64).reshape(3, 4)
    g = to_genesis(src)
    assert len(g) == len(src) == 3
    rows = list(g)
    assert len(rows) == 3
    for gr, tr in zip(rows, src):
        assert_same(gr, tr)
    assert [float(v) for v in g[1]] == [float(v) for v in src[1]]
    assert len(to_genesis(torch.zeros(0, 2))) == 0 and list(to_genesis(torch.zeros(0, 2))) == []


def test_len_and_iteration_of_0d_raise() -> None:
    for fn in (len, iter):
        with pytest.raises(TypeError):
            fn(torch.tensor(1.0))
        with pytest.raises(TypeError, match="0-d"):
            fn(genesis.tensor(1.0, device=DEVICE))


def test_iteration_is_differentiable() -> None:
    g = genesis.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True, device=DEVICE)
    t = torch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    sum(r * (i + 1) for i, r in enumerate(g)).sum().backward()
    sum(r * (i + 1) for i, r in enumerate(t)).sum().backward()
    assert_same(g.grad, t.grad)


VIEWS = {
    "contiguous": lambda x: x,
    "transposed": lambda x: x.transpose(0, 2),
    "sliced": lambda x: x[1:, ::2, 1:3],
    "expanded": lambda x: x[:, :1].expand(2, 5, 4),
    "selected": lambda x: x[1, 2],
    "scalar": lambda x: x[0, 0, 0],
    "flattened": lambda x: x.reshape(-1),
    "narrowed": lambda x: x.narrow(2, 1, 2),
    "diagonal": lambda x: x[0].diagonal(),
    "empty": lambda x: x[:, 3:3],
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.float16, torch.bool])
@pytest.mark.parametrize("view", list(VIEWS))
def test_metadata_matches_torch(view: str, dtype: torch.dtype) -> None:
    base_t = torch.arange(2 * 3 * 4).reshape(2, 3, 4).to(dtype)
    base_g = to_genesis(base_t)
    t = VIEWS[view](base_t)
    g = VIEWS[view](base_g)
    assert g.shape == t.shape and tuple(g.shape) == tuple(t.shape)
    assert g.size() == tuple(t.size())
    for d in range(-t.dim(), t.dim()):
        assert g.size(d) == t.size(d) and g.stride(d) == t.stride(d)
    assert g.dim() == g.ndim == g.ndimension() == t.dim()
    assert g.numel() == g.nelement() == t.numel()
    assert g.element_size() == t.element_size() and g.itemsize == t.itemsize
    assert g.nbytes == t.nbytes
    assert g.stride() == t.stride()
    assert g.is_contiguous() == t.is_contiguous()
    if t.numel():  # an empty view's offset is arbitrary (Genesis keeps 0, torch keeps the slice start)
        assert g.storage_offset() == t.storage_offset()
        assert g.data_ptr() - base_g.data_ptr() == t.data_ptr() - base_t.data_ptr()
    assert_same(g, t)


def test_size_and_stride_bad_dim_raise() -> None:
    for fn in (lambda x: x.size(3), lambda x: x.stride(-4)):
        with pytest.raises(IndexError):
            fn(torch.zeros(2, 3, 4))
        with pytest.raises(IndexError):
            fn(genesis.zeros(2, 3, 4, device=DEVICE))


def test_size_is_a_tuple_like_torch_size() -> None:
    g = genesis.zeros(2, 3, device=DEVICE).shape
    t = torch.zeros(2, 3).shape
    assert isinstance(g, tuple) and g == (2, 3) and g == t
    assert g.numel() == t.numel() == 6
    assert repr(g) == repr(t).replace("torch.", "genesis.")
    assert g[1:] == (3,) and list(g) == [2, 3]


# ------------------------------------------------------------------ conversions to Python

@pytest.mark.parametrize("value", [2.5, -3, True, 0])
def test_single_element_conversions(value: Any) -> None:
    for shape in ((), (1,), (1, 1)):
        t = torch.tensor(value).reshape(shape)
        g = genesis.tensor(value, device=DEVICE).reshape(shape)
        assert float(g) == float(t) and int(g) == int(t) and bool(g) == bool(t)
        assert g.item() == t.item() and type(g.item()) is type(t.item())
        if not t.dtype.is_floating_point and t.dtype != torch.bool:
            assert operator.index(g) == operator.index(t)
            assert [10, 20, 30, 40][g] == [10, 20, 30, 40][t]


def test_conversion_errors_like_torch() -> None:
    cases: list[tuple[type[BaseException], Callable[[Any], Any]]] = [
        (ValueError, lambda lib: float(lib.ones(2))),
        (ValueError, lambda lib: int(lib.ones(3))),
        (RuntimeError, lambda lib: bool(lib.ones(2))),
        (RuntimeError, lambda lib: bool(lib.ones(0))),
        (RuntimeError, lambda lib: lib.ones(2).item()),
        (TypeError, lambda lib: operator.index(lib.tensor(1.5))),
        (TypeError, lambda lib: operator.index(lib.tensor([1, 2]))),
        (TypeError, lambda lib: [1, 2][lib.tensor(0.0)]),
    ]
    for exc, fn in cases:
        with pytest.raises(exc):
            fn(torch)
        with pytest.raises(exc):
            fn(genesis)


def test_bool_of_one_element_in_conditions() -> None:
    g = genesis.tensor([3.0, -1.0], device=DEVICE)
    assert bool(g[0] > 0) and not bool(g[1] > 0)
    assert (g[0] if g[0] > g[1] else g[1]).item() == 3.0


@pytest.mark.parametrize("values", [[], [1.0, 2.0]], ids=["empty", "two"])
def test_bool_of_empty_or_several_elements_says_which(values: list) -> None:
    with pytest.raises(RuntimeError) as expected:
        bool(torch.tensor(values))
    with pytest.raises(RuntimeError, match=str(expected.value)):
        bool(genesis.tensor(values, device=DEVICE))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.bool, torch.float16,
                                   torch.bfloat16, torch.uint8])
def test_tolist_and_item(dtype: torch.dtype) -> None:
    t = (torch.arange(6).reshape(2, 3) - 2).to(dtype) if dtype != torch.uint8 else torch.arange(6).reshape(2, 3)
    t = t.to(dtype)
    g = to_genesis(t)
    assert g.tolist() == t.tolist()
    assert g[1].tolist() == t[1].tolist()
    assert g[1, 2].tolist() == t[1, 2].tolist()
    assert type(g[1, 2].tolist()) is type(t[1, 2].tolist())
    assert g[0, 1].item() == t[0, 1].item() and type(g[0, 1].item()) is type(t[0, 1].item())
    assert g.T.tolist() == t.T.tolist()


def test_tolist_of_empty_and_requires_grad() -> None:
    assert genesis.zeros(0, 3, device=DEVICE).tolist() == torch.zeros(0, 3).tolist()
    g = genesis.tensor([1.5, 2.5], requires_grad=True, device=DEVICE)
    t = torch.tensor([1.5, 2.5], requires_grad=True)
    assert g.tolist() == t.tolist() and g[0].item() == t[0].item()


# ------------------------------------------------------------------ numpy and DLPack (zero-copy on the CPU)

cpu_only = pytest.mark.skipif(DEVICE != "cpu", reason="zero-copy host exchange is for CPU tensors")


@cpu_only
def test_numpy_shares_memory() -> None:
    g = genesis.tensor([[1.0, 2.0], [3.0, 4.0]])
    a = g.numpy()
    assert a.dtype == np.float32 and a.shape == (2, 2)
    a[0, 0] = 10.0
    g[1, 1] = 40.0
    assert g.tolist() == [[10.0, 2.0], [3.0, 40.0]]
    assert a.tolist() == [[10.0, 2.0], [3.0, 40.0]]
    view = g.T.numpy()
    assert view.strides == (4, 8) and np.shares_memory(view, a)
    assert g.numpy().__array_interface__["data"][0] == g.data_ptr()


@cpu_only
def test_numpy_of_requires_grad_raises() -> None:
    for lib in (torch, genesis):
        x = lib.tensor([1.0], requires_grad=True)
        with pytest.raises(RuntimeError, match="requires grad"):
            x.numpy()
        with pytest.raises(RuntimeError, match="requires grad"):
            np.asarray(x)
        assert x.detach().numpy().tolist() == [1.0]
        assert x.numpy(force=True).tolist() == [1.0]
        with lib.no_grad():  # as in a custom Function's forward, which runs without grad mode
            assert x.numpy().tolist() == [1.0] and np.asarray(x).tolist() == [1.0]


@cpu_only
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int64", "int32", "int16", "int8", "uint8",
                                   "bool"])
def test_from_numpy_shares_memory(dtype: str) -> None:
    a = np.arange(12).reshape(3, 4).astype(dtype)
    g = genesis.from_numpy(a)
    t = torch.from_numpy(a.copy())
    assert_same(g, t)
    assert g.data_ptr() == a.__array_interface__["data"][0]
    one = np.array(1).astype(dtype)
    a[0, 0] = one
    assert g[0, 0].item() == a[0, 0].item()
    if dtype != "bool":
        g[2] = 0
        assert a[2].tolist() == [0, 0, 0, 0]


@cpu_only
def test_from_numpy_of_strided_array() -> None:
    a = np.arange(12.0).reshape(3, 4)
    g = genesis.from_numpy(a[::2, 1::2])
    t = torch.from_numpy(a[::2, 1::2])
    assert g.stride() == t.stride() and g.storage_offset() == t.storage_offset()
    g.mul_(10)
    assert a[2, 3] == 110.0 and a[0, 0] == 0.0


def test_from_numpy_errors() -> None:
    for lib in (torch, genesis):
        with pytest.raises(TypeError):
            lib.from_numpy([1, 2])
        with pytest.raises(TypeError):
            lib.from_numpy(np.array(["a"]))
    with pytest.raises(TypeError, match="uint16"):
        genesis.from_numpy(np.zeros(2, dtype=np.uint16))


@cpu_only
def test_array_protocol() -> None:
    g = genesis.tensor([[1.5, 2.5], [3.5, 4.5]])
    a = np.asarray(g)
    assert a.dtype == np.float32 and a.tolist() == g.tolist()
    assert np.asarray(g, dtype=np.float64).dtype == np.float64
    assert np.shares_memory(np.asarray(g), g.numpy())
    assert (np.array(g.T) == np.array(g).T).all()
    assert np.add(np.ones(2), genesis.tensor([1.0, 2.0])).tolist() == [2.0, 3.0]


@cpu_only
def test_dlpack_device() -> None:
    g = genesis.zeros(2)
    assert g.__dlpack_device__() == torch.zeros(2).__dlpack_device__() == (1, 0)


@cpu_only
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "uint8", "bool", "float16"])
def test_dlpack_with_numpy_both_ways(dtype: str) -> None:
    g = genesis.tensor(np.arange(6).reshape(2, 3).astype(dtype))
    a = np.from_dlpack(g)
    assert a.dtype == np.dtype(dtype) and a.tolist() == g.tolist()
    assert a.__array_interface__["data"][0] == g.data_ptr()
    value = np.array(0).astype(dtype).item()
    a[0, 0] = value
    assert g[0, 0].item() == value
    b = np.arange(6).reshape(3, 2).astype(dtype)
    h = genesis.from_dlpack(b)
    assert h.tolist() == b.tolist() and h.data_ptr() == b.__array_interface__["data"][0]
    if dtype != "bool":
        h[1] = 0
        assert b[1].tolist() == [0, 0]


@cpu_only
def test_dlpack_with_torch_both_ways() -> None:
    g = genesis.tensor([[1.0, 2.0], [3.0, 4.0]])
    t = torch.from_dlpack(g)
    assert t.data_ptr() == g.data_ptr() and t.dtype == torch.float32
    t[0, 1] = 20.0
    g[1, 0] = 30.0
    assert g.tolist() == t.tolist() == [[1.0, 20.0], [30.0, 4.0]]
    src = torch.arange(8, dtype=torch.int64).reshape(2, 4)[:, 1::2]
    h = genesis.from_dlpack(src)
    assert h.stride() == src.stride() and h.data_ptr() == src.data_ptr()
    h.add_(100)
    assert src.tolist() == [[101, 103], [105, 107]]
    transposed = torch.from_dlpack(genesis.tensor([[1, 2], [3, 4]]).T)
    assert transposed.tolist() == [[1, 3], [2, 4]] and transposed.stride() == (1, 2)


@cpu_only
def test_utils_dlpack_capsules_share_memory() -> None:
    g = genesis.arange(6, dtype=genesis.float32).reshape(2, 3)
    back = genesis_dlpack.from_dlpack(genesis_dlpack.to_dlpack(g.t()))
    back[0, 1] = 50.0
    assert g[1, 0].item() == 50.0 and back.stride() == (1, 3)
    t = torch_dlpack.from_dlpack(genesis_dlpack.to_dlpack(g))
    t[0, 0] = -1.0
    assert g[0, 0].item() == -1.0
    h = genesis_dlpack.from_dlpack(torch_dlpack.to_dlpack(t))
    assert h.data_ptr() == g.data_ptr()
    assert [(m.name, int(m)) for m in genesis_dlpack.DLDeviceType] == [
        (m.name, int(m)) for m in torch_dlpack.DLDeviceType]


@cpu_only
def test_dlpack_of_requires_grad_raises() -> None:
    for lib in (torch, genesis):
        with pytest.raises(BufferError, match="require"):
            lib.ones(2, requires_grad=True).__dlpack__()
    assert torch.from_dlpack(genesis.ones(2, requires_grad=True).detach()).tolist() == [1.0, 1.0]


# ------------------------------------------------------------------ pickling and copying

@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.int32, torch.bool])
def test_pickle_round_trip(dtype: torch.dtype) -> None:
    t = (torch.arange(6).reshape(2, 3) % 4).to(dtype)
    g = to_genesis(t)
    back = pickle.loads(pickle.dumps(g))
    assert_same(back, t)
    assert back.device == g.device and not back.requires_grad
    strided = pickle.loads(pickle.dumps(g.T))
    assert_same(strided, t.T)


def test_pickle_keeps_requires_grad() -> None:
    g = genesis.tensor([1.0, 2.0], requires_grad=True, device=DEVICE)
    back = pickle.loads(pickle.dumps(g))
    assert back.requires_grad and back.is_leaf and back.tolist() == [1.0, 2.0]


def test_deepcopy() -> None:
    for lib in (torch, genesis):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        (x * 3).sum().backward()
        y = copy.deepcopy(x)
        assert y is not x and y.requires_grad and y.is_leaf and y.tolist() == [1.0, 2.0]
        assert y.grad is not None and y.grad.tolist() == [3.0, 3.0]
        with lib.no_grad():
            y.add_(1)
        assert x.tolist() == [1.0, 2.0], "the copy owns its memory"
        pair = copy.deepcopy([x, x])
        assert pair[0] is pair[1], "deepcopy keeps identity through the memo"
        with pytest.raises(RuntimeError, match="graph leaves"):
            copy.deepcopy(x * 2)


def test_copy_module_copy_shares_nothing_surprising() -> None:
    g = genesis.tensor([1.0, 2.0], device=DEVICE)
    c = copy.copy(g)
    assert c.tolist() == g.tolist()


# ------------------------------------------------------------------ misc

def test_hash_is_identity_and_tensors_are_dict_keys() -> None:
    a = genesis.ones(2, device=DEVICE)
    b = genesis.ones(2, device=DEVICE)
    seen = {a: "a", b: "b"}
    assert seen[a] == "a" and seen[b] == "b" and hash(a) != hash(b)


def test_is_tensor_and_type_strings() -> None:
    g = genesis.ones(2, device=DEVICE)
    assert genesis.is_tensor(g) and not genesis.is_tensor([1.0])
    assert g.type() == "genesis.float32" or g.type().startswith("genesis.")
    assert genesis.is_floating_point(g) and not genesis.is_floating_point(g.long())
    assert g.is_leaf and not g.requires_grad and g.grad is None and g.grad_fn is None


def test_version_string() -> None:
    parts = genesis.__version__.split(".")
    assert len(parts) >= 2 and all(p.isdigit() for p in parts[:2])


def test_round_trip_helpers_are_exact() -> None:
    t = torch.randn(3, 4, dtype=torch.float64)
    assert torch.equal(to_torch(to_genesis(t)), t)
    assert math.isclose(to_genesis(t)[1, 2].item(), t[1, 2].item(), rel_tol=0, abs_tol=0)


def _random_case(rng: np.random.Generator) -> torch.Tensor:
    shape = tuple(int(s) for s in rng.integers(0, 7, int(rng.integers(0, 4))))
    if rng.random() < 0.05:
        shape = (int(rng.integers(1001, 1300)),)
    values = rng.standard_normal(shape) * 10.0 ** int(rng.integers(-6, 10))
    if rng.random() < 0.3:
        values = np.round(values)
    if rng.random() < 0.1 and values.size:
        values.flat[0] = math.nan
    if rng.random() < 0.1 and values.size:
        values.flat[-1] = math.inf
    t = torch.tensor(values, dtype=torch.float64)
    dtype = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int32, torch.bool,
             torch.uint8, torch.int8][int(rng.integers(0, 9))]
    if dtype == torch.bool:
        return t > 0
    if not dtype.is_floating_point:
        low = 0 if dtype == torch.uint8 else -100
        return t.nan_to_num(0, 0, 0).clamp(low, 100).to(dtype)
    return t.to(dtype)


def test_repr_matches_torch_on_random_tensors() -> None:
    rng = np.random.default_rng(1234)
    for _ in range(300):
        t = _random_case(rng)
        g = to_genesis(t, device="cpu")  # the text is device-independent but for the device suffix
        # torch's dtype names are two characters shorter, which can move a suffix to a line of its own.
        expected = repr(t).replace("torch.", "genesis.").replace(",\n       dtype=", ", dtype=")
        assert repr(g).replace(",\n       dtype=", ", dtype=") == expected


@cpu_only
@pytest.mark.filterwarnings("ignore:__array__ implementation doesn't accept a copy keyword")  # torch's __array__
def test_array_protocol_copy_keyword() -> None:
    for lib in (torch, genesis):
        x = lib.tensor([1.0, 2.0])
        copied = np.array(x)  # numpy asks for a copy
        copied[0] = 9.0
        shared = np.asarray(x)  # numpy accepts a view
        shared[1] = 7.0
        assert x.tolist() == [1.0, 7.0], lib.__name__
    g = genesis.tensor([1.0, 2.0])
    assert np.array(g, copy=False).__array_interface__["data"][0] == g.data_ptr()
    assert np.asarray(g, dtype=np.float64).dtype == np.float64
    with pytest.raises(ValueError):
        np.array(g, dtype=np.float64, copy=False)


def test_in_operator_as_torch() -> None:
    """``element in t``: any element equal to a number or a tensor; other objects raise torch's RuntimeError."""
    def run(lib: Any) -> list:
        t = lib.tensor([[1.0, 2.0], [3.0, 4.0]], **({} if lib is torch else {"device": DEVICE}))
        found = [1 in t, 5 in t, np.float32(4.0) in t, t[0] in t, t in t]
        for bad in ("a", None, [1.0]):
            with pytest.raises(RuntimeError, match="only supports Tensor or scalar"):
                bad in t  # noqa: B015
        return found

    assert run(genesis) == run(torch)
