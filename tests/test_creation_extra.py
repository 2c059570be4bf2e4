"""Creation functions beyond ``tensor``/``zeros``/``arange`` against torch: the window functions, the deprecated
inclusive ``range``, ``asarray`` (memory sharing, copies, requires_grad), ``frombuffer`` and ``empty_strided`` /
``Tensor.new_empty_strided``."""

import array
import warnings

import numpy as np
import pytest
import torch

import genesis
from tests.helpers import DEVICE, assert_same, check_error, to_genesis, to_torch

WINDOWS = ["hann_window", "hamming_window", "blackman_window", "bartlett_window", "kaiser_window"]
G_DTYPE = {torch.float16: genesis.float16, torch.bfloat16: genesis.bfloat16, torch.float32: genesis.float32,
           torch.float64: genesis.float64}
# Half-precision windows round each step; torch's vectorized cosine may land one unit in the last place away.
HALF_TOLERANCE = {torch.float16: 4e-3, torch.bfloat16: 3e-2}


@pytest.mark.parametrize("name", WINDOWS)
@pytest.mark.parametrize("length", [0, 1, 2, 5, 8, 33])
@pytest.mark.parametrize("periodic", [True, False])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16], ids=str)
def test_windows(name: str, length: int, periodic: bool, dtype: torch.dtype) -> None:
    got = getattr(genesis, name)(length, periodic, dtype=G_DTYPE[dtype], device=DEVICE)
    tol = HALF_TOLERANCE.get(dtype)
    assert_same(got, getattr(torch, name)(length, periodic, dtype=dtype), rtol=tol, atol=tol)
    assert got.device.type == DEVICE.split(":")[0]


def test_window_parameters() -> None:
    assert_same(genesis.hamming_window(6, True, 0.6, 0.3, device=DEVICE), torch.hamming_window(6, True, 0.6, 0.3))
    assert_same(genesis.hamming_window(7, False, alpha=0.5, beta=0.5, device=DEVICE),
                torch.hamming_window(7, False, 0.5, 0.5))
    assert_same(genesis.kaiser_window(9, True, 5.0, device=DEVICE), torch.kaiser_window(9, True, 5.0))
    assert_same(genesis.kaiser_window(9, False, 0.0, device=DEVICE), torch.kaiser_window(9, False, 0.0))
    assert_same(genesis.hann_window(10, device=DEVICE), torch.hann_window(10))


def test_window_defaults_and_requires_grad() -> None:
    genesis.set_default_dtype(genesis.float64)
    try:
        assert genesis.hann_window(4).dtype is genesis.float64
    finally:
        genesis.set_default_dtype(genesis.float32)
    w = genesis.blackman_window(5, requires_grad=True, device=DEVICE)
    assert w.requires_grad and w.is_leaf
    (w * 2).sum().backward()
    assert genesis.equal(w.grad, genesis.full((5,), 2.0, device=DEVICE))


@pytest.mark.parametrize("name", WINDOWS)
def test_window_errors(name: str) -> None:
    check_error(RuntimeError, lambda lib: getattr(lib, name)(-1))
    check_error(RuntimeError, lambda lib: getattr(lib, name)(4, dtype=lib.int64))
    check_error(NotImplementedError, lambda lib: getattr(lib, name)(4, dtype=lib.complex64))
    check_error(TypeError, lambda lib: getattr(lib, name)(4.0))


SIGNAL_WINDOWS = ["bartlett", "blackman", "cosine", "exponential", "gaussian", "hamming", "hann", "kaiser", "nuttall"]


@pytest.mark.parametrize("name", SIGNAL_WINDOWS)
@pytest.mark.parametrize("length", [0, 1, 2, 7, 16])
@pytest.mark.parametrize("sym", [True, False])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_signal_windows(name: str, length: int, sym: bool, dtype: torch.dtype) -> None:
    # torch.signal.windows: SciPy's conventions, symmetric unless sym=False.
    got = getattr(genesis.signal.windows, name)(length, sym=sym, dtype=G_DTYPE[dtype], device=DEVICE)
    assert_same(got, getattr(torch.signal.windows, name)(length, sym=sym, dtype=dtype), rtol=2e-6, atol=1e-7)
    assert got.device.type == DEVICE.split(":")[0]


def test_signal_window_parameters_and_errors() -> None:
    w = genesis.signal.windows
    tw = torch.signal.windows
    assert_same(w.gaussian(9, std=2.5, device=DEVICE), tw.gaussian(9, std=2.5))
    assert_same(w.exponential(8, center=2.0, tau=3.0, sym=False, device=DEVICE),
                tw.exponential(8, center=2.0, tau=3.0, sym=False))
    assert_same(w.kaiser(9, beta=5.0, sym=False, device=DEVICE), tw.kaiser(9, beta=5.0, sym=False))
    assert_same(w.general_cosine(8, a=[0.5, 0.3, 0.2], device=DEVICE), tw.general_cosine(8, a=[0.5, 0.3, 0.2]))
    assert_same(w.general_hamming(8, alpha=0.6, device=DEVICE), tw.general_hamming(8, alpha=0.6))
    check_error(ValueError, lambda lib: lib.signal.windows.hann(-1), match="non-negative window length, got M=-1")
    check_error(ValueError, lambda lib: lib.signal.windows.hann(4, dtype=lib.float16), match="float32 or float64")
    check_error(ValueError, lambda lib: lib.signal.windows.gaussian(4, std=0.0), match="got: 0.0")
    check_error(ValueError, lambda lib: lib.signal.windows.exponential(4, center=1.0), match="Center must be None")


# ------------------------------------------------------------------ range


@pytest.mark.parametrize("args, kwargs", [
    ((1, 4), {}), ((0, 1, 0.3), {}), ((4, 1, -1), {}), ((0, 1, 0.1), {}), ((1.5, 3), {}), ((-2, 2, 0.5), {}),
    ((1, 4), {"dtype": "int64"}), ((1, 3.5), {"dtype": "int64"}), ((0, 10, 3), {"dtype": "float64"}),
    ((0, 5, 2), {"dtype": "int32"}), ((2, 2), {}),
])
def test_range_includes_the_end(args: tuple, kwargs: dict) -> None:
    with pytest.warns(UserWarning, match="torch.arange"):
        got = genesis.range(*args, device=DEVICE, **{k: getattr(genesis, v) for k, v in kwargs.items()})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = torch.range(*args, **{k: getattr(torch, v) for k, v in kwargs.items()})
    assert_same(got, expected)


def test_range_keywords_and_requires_grad() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_same(genesis.range(start=1, end=3, step=1, device=DEVICE), torch.range(start=1, end=3, step=1))
        r = genesis.range(1, 4, requires_grad=True, device=DEVICE)
    assert r.requires_grad and r.is_leaf


@pytest.mark.parametrize("args", [(1, 4, 0), (4, 1), (1, 4, -1)])
def test_range_errors(args: tuple) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_error(RuntimeError, lambda lib: lib.range(*args))
    with pytest.raises(TypeError):
        genesis.range(5)


# ------------------------------------------------------------------ asarray


def test_asarray_of_a_tensor_shares_or_converts() -> None:
    x = to_genesis(torch.arange(3.0))
    assert genesis.asarray(x) is x
    assert genesis.asarray(x, device=DEVICE) is x
    copied = genesis.asarray(x, copy=True)
    assert copied is not x and genesis.equal(copied, x)
    assert genesis.asarray(x, dtype=genesis.float64).dtype is genesis.float64
    check_error(ValueError, lambda lib, t: lib.asarray(t, dtype=lib.float64, copy=False), torch.arange(3.0))


def test_asarray_requires_grad_rules() -> None:
    y = to_genesis(torch.ones(2)).requires_grad_() * 2
    with pytest.warns(UserWarning, match="requires_grad"):
        assert genesis.asarray(y) is y
    detached = genesis.asarray(y, requires_grad=False)
    assert not detached.requires_grad and detached.data_ptr() == y.data_ptr()
    leaf = to_genesis(torch.ones(2))
    assert genesis.asarray(leaf, requires_grad=True) is leaf and leaf.requires_grad
    converted = genesis.asarray(y, dtype=genesis.float64, requires_grad=True)
    converted.sum().backward()  # the conversion stays in the graph, as torch's
    assert genesis.asarray([1.0, 2.0], requires_grad=True).requires_grad


@pytest.mark.skipif(DEVICE != "cpu", reason="numpy arrays are host memory")
def test_asarray_of_numpy_shares_memory() -> None:
    a = np.arange(3.0)
    shared, copied = genesis.asarray(a), genesis.asarray(a, copy=True)
    a[0] = 9
    assert shared.tolist() == [9.0, 1.0, 2.0] and copied.tolist() == [0.0, 1.0, 2.0]
    assert shared.dtype is genesis.float64
    assert genesis.asarray(a, dtype=genesis.float32).dtype is genesis.float32
    check_error(ValueError, lambda lib: lib.asarray(np.arange(3.0), dtype=lib.float32, copy=False))


def test_asarray_of_numbers_sequences_and_buffers() -> None:
    for data in (3.5, True, 7, [1, 2, 3], [1.0, 2], [[1, 2], [3, 4.0]], np.float32(2), np.float64(2)):
        assert_same(genesis.asarray(data, device=DEVICE), torch.asarray(data))
    check_error(ValueError, lambda lib: lib.asarray([1, 2], copy=False))
    # Buffer-protocol objects are raw bytes of the requested (or default) dtype, as torch's.
    assert_same(genesis.asarray(array.array("d", [1, 2])), torch.asarray(array.array("d", [1, 2])))
    check_error(ValueError, lambda lib: lib.asarray(bytearray(b"abc")))
    buffer = bytearray(b"abcd")
    view = genesis.asarray(buffer, dtype=genesis.uint8)
    buffer[0] = 0
    assert view.tolist() == [0, 98, 99, 100]


# ------------------------------------------------------------------ frombuffer


@pytest.mark.parametrize("data, kwargs", [
    (b"abcdefgh", {"dtype": "float32"}), (b"abcdefgh", {"dtype": "int16", "offset": 2, "count": 3}),
    (b"abcdefgh", {"dtype": "float32", "offset": 4}), (b"abcd", {"dtype": "bfloat16"}),
    (b"abcd", {"dtype": "bool"}), (b"abcdefgh", {"dtype": "complex64"}), (b"\x01\x02\x03", {"dtype": "uint8"}),
])
def test_frombuffer_reads_the_bytes(data: bytes, kwargs: dict) -> None:
    convert = {k: getattr(genesis, v) if k == "dtype" else v for k, v in kwargs.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch warns that bytes are not writable
        expected = torch.frombuffer(bytearray(data), **{k: getattr(torch, v) if k == "dtype" else v
                                                        for k, v in kwargs.items()})
    assert_same(genesis.frombuffer(bytearray(data), **convert), expected)


@pytest.mark.parametrize("data, kwargs", [
    (b"", {}), (b"abcd", {"count": 2}), (b"abcdefgh", {"offset": 9}), (b"abcdefgh", {"offset": 2}),
    (b"abcdefgh", {"count": 0}), (b"abc", {}), ([1, 2], {}),
])
def test_frombuffer_errors(data: bytes, kwargs: dict) -> None:
    data = bytearray(data) if isinstance(data, bytes) else data
    check_error(ValueError, lambda lib: lib.frombuffer(data, dtype=lib.float32, **kwargs))


def test_frombuffer_shares_memory_and_requires_grad() -> None:
    buffer = bytearray(8)
    t = genesis.frombuffer(buffer, dtype=genesis.int32)
    t[0] = 5
    assert buffer[:4] == b"\x05\x00\x00\x00"
    assert genesis.frombuffer(bytearray(4), dtype=genesis.float16, requires_grad=True).requires_grad
    with pytest.raises(TypeError):
        genesis.frombuffer(bytearray(4))  # dtype is required


# ------------------------------------------------------------------ empty_strided, new_empty_strided


@pytest.mark.parametrize("size, stride", [((2, 3), (1, 2)), ((2, 3), (3, 1)), ((4,), (2,)), ((2, 0, 3), (1, 1, 1)),
                                          ((), ()), ((3, 2), (0, 1))])
def test_empty_strided_layout(size: tuple, stride: tuple) -> None:
    got = genesis.empty_strided(size, stride, device=DEVICE)
    expected = torch.empty_strided(size, stride)
    assert tuple(got.shape) == tuple(expected.shape) and got.stride() == expected.stride()
    assert got.dtype is genesis.float32
    other = got.new_empty_strided(size, stride, dtype=genesis.int64)
    assert other.stride() == expected.stride() and other.dtype is genesis.int64 and other.device == got.device


def test_empty_strided_writes_and_errors() -> None:
    t = genesis.empty_strided((2, 3), (1, 2), dtype=genesis.float64, device=DEVICE, requires_grad=True)
    assert t.requires_grad and t.dtype is genesis.float64
    with genesis.no_grad():
        t.copy_(genesis.arange(6.0, device=DEVICE).reshape(2, 3))
    assert to_torch(t).tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    check_error(RuntimeError, lambda lib: lib.empty_strided((2, 3), (1,)))
