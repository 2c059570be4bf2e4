"""``genesis.testing`` against ``torch.testing``: ``assert_close`` passes and fails on the same inputs with the same
exception class and message (torch's type names read as Genesis's), ``assert_allclose`` keeps its older defaults,
``make_tensor`` draws what torch's does; ``torch.testing`` in a script resolves to ``genesis.testing``."""

import math
import textwrap
import warnings

import numpy as np
import pytest
import torch

import genesis
import genesis.testing
from genesis import torch_compat
from tests.helpers import DEVICE, to_torch


def _genesis(value: object, device: str = DEVICE) -> object:
    """The Genesis counterpart of a torch input, with its strides (containers converted item by item)."""
    if isinstance(value, torch.Tensor):
        if value.dtype == torch.bfloat16:
            dense = genesis.tensor(value.float().numpy(), dtype=genesis.bfloat16, device=device)
        else:
            dense = genesis.tensor(value.numpy(), device=device)
        if value.is_contiguous():
            return dense
        return genesis.empty_strided(tuple(value.shape), value.stride(), dtype=dense.dtype, device=device).copy_(dense)
    if isinstance(value, list):
        return [_genesis(v, device) for v in value]
    if isinstance(value, dict):
        return {k: _genesis(v, device) for k, v in value.items()}
    return value


def _outcome(fn, *args, **kwargs) -> tuple:
    try:
        fn(*args, **kwargs)
    except Exception as err:  # the class and message are the comparison
        text = str(err).replace("torch.", "genesis.").replace("<class 'genesis.Tensor'>",
                                                               "<class 'genesis.tensor.Tensor'>")
        return type(err), text
    return ("passed",)


def _same_outcome(actual: object, expected: object, **kwargs: object) -> None:
    t = _outcome(torch.testing.assert_close, actual, expected, **kwargs)
    g = _outcome(genesis.testing.assert_close, _genesis(actual), _genesis(expected), **kwargs)
    assert g == t


T = torch.tensor
CASES = {
    "close": (T([1.0, 2.0]), T([1.0, 2.0 + 1e-7]), {}),
    "float32": (T([1.0, 2, 3]), T([1.0, 2.5, 3]), {}),
    "2-d": (T([[1.0, 2], [3, 4]]), T([[1.0, 2.5], [3, 5]]), {}),
    "int": (T([1, 2, 3]), T([1, 3, 3]), {}),
    "bool": (T([True, False]), T([True, True]), {}),
    "0-d": (T(1.0), T(1.5), {}),
    "shape": (T([1.0]), T([1.0, 2]), {}),
    "dtype": (T([1.0]), T([1.0], dtype=torch.float64), {}),
    "dtype unchecked": (T([1.0]), T([1.0], dtype=torch.float64), {"check_dtype": False}),
    "int vs float unchecked": (T([1, 2]), T([1.0, 2.5]), {"check_dtype": False}),
    "nan": (T([math.nan]), T([math.nan]), {}),
    "equal nan": (T([math.nan, 1.0]), T([math.nan, 1.0]), {"equal_nan": True}),
    "nan mismatch": (T([[1.0, 2.0], [3.0, math.nan]]), T([[1.0, 2.0], [3.0, 4.0]]), {}),
    "inf": (T([1.0, 2]), T([1.0, math.inf]), {}),
    "relative inf": (T([0.0, 2]), T([1e-6, 0.0]), {}),
    "complex": (T([3 + 4j]), T([3 + 5j]), {}),  # exact moduli: the message's digits agree on every device
    "float16": (T([1.0, 2.0], dtype=torch.float16), T([1.0, 2.001], dtype=torch.float16), {}),
    "float16 far": (T([1.0, 2.0], dtype=torch.float16), T([1.0, 2.01], dtype=torch.float16), {}),
    "bfloat16": (T([1.0, 2.0], dtype=torch.bfloat16), T([1.0, 2.02], dtype=torch.bfloat16), {}),
    "float64": (T([1.0], dtype=torch.float64), T([1.0 + 1e-6], dtype=torch.float64), {}),
    "tolerances": (T([1.0]), T([1.1]), {"rtol": 0, "atol": 0.2}),
    "tight tolerances": (T([1.0]), T([1.1]), {"rtol": 0.01, "atol": 0.01}),
    "only rtol": (T([1.0]), T([1.0]), {"rtol": 0.1}),
    "only atol": (T([1.0]), T([1.0]), {"atol": 0.1}),
    "stride": (torch.zeros(2, 2), torch.zeros(2, 2).t(), {"check_stride": True}),
    "stride unchecked": (torch.zeros(2, 2), torch.zeros(2, 2).t(), {}),
    "msg": (T([1.0]), T([2.0]), {"msg": "custom"}),
    "msg function": (T([1.0]), T([2.0]), {"msg": lambda m: "prefix: " + m}),
    "empty": (torch.zeros(0), torch.zeros(0), {}),
    "python floats": (1.0, 1.5, {}),
    "python ints": (1, 2, {}),
    "python float vs int": (1.0, 1, {}),
    "python float vs int unchecked": (1.0, 1, {"check_dtype": False}),
    "python complex": (1 + 1j, 1 + 1j, {}),
    "python nan": (math.nan, math.nan, {"equal_nan": True}),
    "booleans": (True, False, {}),
    "none": (None, None, {}),
    "none vs number": (None, 1, {}),
    "strings": ("a", "b", {}),
    "tensor vs list": (T([1.0]), [1.0], {}),
    "float vs tensor": (1.0, T(1.0), {}),
    "lists": ([T([1.0]), T([2.0])], [T([1.0]), T([3.0])], {}),
    "list lengths": ([1.0], [1.0, 2.0], {}),
    "dicts": ({"a": T([1.0])}, {"a": T([2.0])}, {}),
    "dict keys": ({"a": T([1.0])}, {"b": T([2.0])}, {}),
    "nested": ({"x": [T([1.0]), {"y": T([2, 3])}]}, {"x": [T([1.0]), {"y": T([2, 4])}]}, {}),
    "numpy": (np.array([1.0, 2.0]), np.array([1.0, 3.0]), {}),
}


@pytest.mark.parametrize("name", CASES)
def test_assert_close_matches_torch(name: str) -> None:
    actual, expected, kwargs = CASES[name]
    _same_outcome(actual, expected, **kwargs)


def test_assert_close_message_shape() -> None:
    with pytest.raises(AssertionError) as info:
        genesis.testing.assert_close(genesis.tensor([1.0, 2.0, 3.0]), genesis.tensor([1.0, 2.5, 3.0]))
    assert str(info.value).splitlines() == [
        "Tensor-likes are not close!", "", "Mismatched elements: 1 / 3 (33.3%)",
        "Greatest absolute difference: 0.5 at index (1,) (up to 1e-05 allowed)",
        "Greatest relative difference: 0.20000000298023224 at index (1,) (up to 1.3e-06 allowed)"]


def test_assert_close_across_devices() -> None:
    on_device, on_cpu = genesis.ones(3, device=DEVICE), genesis.ones(3)
    genesis.testing.assert_close(on_device, on_cpu, check_device=False)
    if DEVICE != "cpu":
        with pytest.raises(AssertionError, match="attribute 'device'"):
            genesis.testing.assert_close(on_device, on_cpu)


def test_assert_close_of_tensors_that_require_grad() -> None:
    x = genesis.ones(2, requires_grad=True, device=DEVICE)
    genesis.testing.assert_close(x * 2, genesis.full((2,), 2.0, device=DEVICE))


@pytest.mark.parametrize("actual, expected, kwargs", [
    ([1.0, 2.0], T([1.0, 2.00001]), {}), (T([1.0]), 1.1, {}), (T([1.0], dtype=torch.float64), T([1.00002]), {}),
    (T([1.0, math.nan]), T([1.0, math.nan]), {}), (T([1.0]), T([1.5]), {"rtol": 0.1}),
    (T([1.0]), T([1.5]), {"rtol": 0.5, "atol": 0.0}),
])
def test_assert_allclose_matches_torch(actual: object, expected: object, kwargs: dict) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = _outcome(torch.testing.assert_allclose, actual, expected, **kwargs)
    # A list becomes a CPU tensor in both libraries, so its counterpart stays on the CPU too.
    device = DEVICE if isinstance(actual, torch.Tensor) else "cpu"
    with pytest.warns(FutureWarning, match="assert_close"):
        g = _outcome(genesis.testing.assert_allclose, _genesis(actual, device), _genesis(expected, device), **kwargs)
    assert g == t


# ------------------------------------------------------------------ make_tensor

DTYPES = [genesis.bool, genesis.uint8, genesis.int8, genesis.int16, genesis.int32, genesis.int64, genesis.float16,
          genesis.bfloat16, genesis.float32, genesis.float64, genesis.complex64, genesis.complex128]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_make_tensor_default_ranges(dtype: object) -> None:
    t = genesis.testing.make_tensor(40, 50, dtype=dtype, device=DEVICE)
    assert t.shape == (40, 50) and t.dtype is dtype and t.device.type == DEVICE.split(":")[0]
    values = to_torch(t)
    parts = (values.real, values.imag) if values.is_complex() else (values,)
    low, high = (0, 2) if dtype is genesis.bool else (0, 10) if dtype is genesis.uint8 else \
        (-9, 10) if dtype.category < 2 else (-9, 9)
    for part in parts:
        part = part.double()
        assert part.min() >= low and part.max() < high + (0.05 if dtype.itemsize < 4 else 0)
        assert part.max() - part.min() >= (high - low) / 2  # spread over the range


def test_make_tensor_options() -> None:
    t = genesis.testing.make_tensor((3, 4), dtype=genesis.float32, device=DEVICE, low=-1, high=1,
                                    noncontiguous=True, exclude_zero=True, requires_grad=True)
    assert t.shape == (3, 4) and not t.is_contiguous() and t.requires_grad and t.is_leaf
    assert -1 <= t.min().item() and t.max().item() < 1
    ints = genesis.testing.make_tensor(200, dtype=genesis.int64, device=DEVICE, low=-1, high=2, exclude_zero=True)
    assert set(ints.tolist()) <= {-1, 1}
    clamped = genesis.testing.make_tensor(100, dtype=genesis.uint8, device=DEVICE, low=-100, high=3)
    assert 0 <= clamped.min().item() and clamped.max().item() <= 2
    last = genesis.testing.make_tensor(2, 3, 4, 5, dtype=genesis.float32, device=DEVICE,
                                       memory_format=genesis.channels_last)
    assert last.stride() == torch.empty(2, 3, 4, 5).to(memory_format=torch.channels_last).stride()
    assert genesis.testing.make_tensor([2], dtype=genesis.float64, device=DEVICE).shape == (2,)


@pytest.mark.parametrize("kwargs, error", [
    ({"dtype": "int64", "requires_grad": True}, ValueError), ({"dtype": "float32", "low": 5, "high": 3}, ValueError),
    ({"dtype": "float32", "low": math.nan}, ValueError), ({"dtype": "uint8", "low": -5, "high": -1}, ValueError),
    ({"dtype": "float32", "noncontiguous": True, "memory_format": "channels_last"}, ValueError),
])
def test_make_tensor_errors(kwargs: dict, error: type) -> None:
    for lib in (torch, genesis):
        options = {k: getattr(lib, v) if k in ("dtype", "memory_format") else v for k, v in kwargs.items()}
        with pytest.raises(error):
            lib.testing.make_tensor(2, 2, 2, 2, device="cpu", **options)


def test_make_tensor_low_equal_high_warns() -> None:
    with pytest.warns(FutureWarning, match="low==high"):
        t = genesis.testing.make_tensor(3, dtype=genesis.float32, device=DEVICE, low=2.0, high=2.0)
    assert t.tolist() == [2.0, 2.0, 2.0]


def test_torch_testing_in_a_script_is_genesis_testing(tmp_path) -> None:
    script = tmp_path / "uses_testing.py"
    script.write_text(textwrap.dedent("""
        import torch
        from torch.testing import assert_close, make_tensor
        x = make_tensor(3, dtype=torch.float32, device="cpu")
        assert_close(x * 1, x)
        try:
            torch.testing.assert_close(x, x + 1)
        except AssertionError as err:
            MESSAGE = str(err)
        MODULE = torch.testing
    """))
    env = torch_compat.run(str(script))
    assert env["MODULE"].__name__ == "torch.testing" and isinstance(env["x"], genesis.Tensor)
    assert env["MESSAGE"].startswith("Tensor-likes are not close!")
