"""``Tensor.view(dtype)``: the same memory read as another dtype, bit for bit as torch's.

Every case runs in Genesis and torch on the same values (``check``, on ``DEVICE``) and compares shape, dtype, strides,
storage offset and the raw bytes of the result; errors are torch's class with torch's message (``check_error``).
"""

from __future__ import annotations

import math
import re
from typing import Any, Callable

import numpy as np
import pytest
import torch

import genesis
from tests.helpers import DEVICE, GENESIS_DTYPE, check, check_error, to_genesis, to_torch


def _values(dtype: torch.dtype, shape: tuple[int, ...], seed: int = 0) -> torch.Tensor:
    """Values of ``dtype`` covering its bits: random numbers with nan, infinities, -0.0 and a subnormal for floats,
    the whole range for integers, 0 and 1 for bool."""
    gen = torch.Generator().manual_seed(seed)
    if dtype is torch.bool:
        return torch.randint(0, 2, shape, generator=gen).bool()
    if not (dtype.is_floating_point or dtype.is_complex):
        info = torch.iinfo(dtype)
        return torch.randint(info.min, info.max, shape, generator=gen, dtype=torch.int64).to(dtype)
    x = torch.randn(shape, generator=gen, dtype=torch.complex128 if dtype.is_complex else torch.float64).to(dtype)
    tiny = torch.finfo(dtype.to_real() if dtype.is_complex else dtype).smallest_normal / 4
    specials = torch.tensor([math.nan, math.inf, -math.inf, -0.0, tiny], dtype=torch.float64).to(dtype)
    n = min(len(specials), x.numel())
    x.view(-1)[:n] = specials[:n]
    return x


def _raw(t: Any) -> bytes:
    """The bytes of a tensor's elements in row-major order (torch's or Genesis's, on any device)."""
    if isinstance(t, torch.Tensor):
        return t.detach().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()
    return np.ascontiguousarray(t.detach().cpu().numpy()).tobytes()


def check_view(fn: Callable, x: torch.Tensor) -> genesis.Tensor:
    """``fn(lib, x)`` in both libraries: shape, dtype and values (``check``), then strides, offset and raw bytes."""
    g = check(fn, x)
    t = fn(torch, x)
    assert g.stride() == t.stride(), f"strides {g.stride()} != torch {t.stride()}"
    assert g.storage_offset() == t.storage_offset(), f"offset {g.storage_offset()} != torch {t.storage_offset()}"
    assert _raw(g) == _raw(t), "the bits differ from torch's"
    return g


def _dtype(lib: Any, t_dtype: torch.dtype) -> Any:
    return t_dtype if lib is torch else GENESIS_DTYPE[t_dtype]


# ------------------------------------------------------------------ equal element sizes: any layout

SAME_SIZE = [
    (torch.float32, torch.int32), (torch.int32, torch.float32), (torch.float64, torch.int64),
    (torch.int64, torch.float64), (torch.float64, torch.complex64), (torch.complex64, torch.int64),
    (torch.complex128, torch.complex128), (torch.float16, torch.int16), (torch.bfloat16, torch.int16),
    (torch.int16, torch.bfloat16), (torch.float16, torch.bfloat16), (torch.uint8, torch.int8),
    (torch.int8, torch.uint8), (torch.bool, torch.uint8), (torch.float32, torch.float32),
]
SAME_SIZE_LAYOUTS = {
    "contiguous": lambda x: x,
    "transposed": lambda x: x.t(),
    "stepped slice": lambda x: x[::2, 1::2],
    "expanded": lambda x: x[:1].expand(4, 6),
    "0-dim": lambda x: x[1, 2],
}


@pytest.mark.parametrize("layout", SAME_SIZE_LAYOUTS)
@pytest.mark.parametrize(("src", "dst"), SAME_SIZE, ids=lambda d: str(d).replace("torch.", ""))
def test_same_element_size_keeps_any_layout(src: torch.dtype, dst: torch.dtype, layout: str) -> None:
    make = SAME_SIZE_LAYOUTS[layout]
    check_view(lambda lib, x: make(x).view(_dtype(lib, dst)), _values(src, (4, 6)))


def test_uint8_as_bool() -> None:
    check_view(lambda lib, x: x.view(lib.bool), _values(torch.bool, (3, 5)).to(torch.uint8))


# ------------------------------------------------------------------ different sizes: the last dim scales

OTHER_SIZE = [
    (torch.float32, torch.uint8), (torch.float32, torch.int16), (torch.float32, torch.float64),
    (torch.float32, torch.complex64), (torch.float32, torch.complex128), (torch.float64, torch.float32),
    (torch.complex128, torch.float32), (torch.complex64, torch.float16), (torch.int64, torch.int8),
    (torch.bfloat16, torch.int32), (torch.float16, torch.float32), (torch.uint8, torch.float32),
    (torch.int8, torch.int64), (torch.bool, torch.int16), (torch.uint8, torch.complex128),
    (torch.int16, torch.float64),
]
# Each keeps the last dim contiguous with sizes, strides and offset that divide by any ratio of sizes up to 16.
OTHER_SIZE_LAYOUTS = {
    "contiguous": lambda x: x,
    "rows from an offset": lambda x: x[1:3],
    "last dim contiguous, rows strided": lambda x: x[::2],
    "a column block": lambda x: x[:, 16:],
    "broadcast rows": lambda x: x[1].expand(3, 32),
    "1-d": lambda x: x[2],
}


@pytest.mark.parametrize("layout", OTHER_SIZE_LAYOUTS)
@pytest.mark.parametrize(("src", "dst"), OTHER_SIZE, ids=lambda d: str(d).replace("torch.", ""))
def test_other_element_size_scales_the_last_dim(src: torch.dtype, dst: torch.dtype, layout: str) -> None:
    make = OTHER_SIZE_LAYOUTS[layout]
    check_view(lambda lib, x: make(x).view(_dtype(lib, dst)), _values(src, (4, 32)))


def test_round_trips_give_the_input_back() -> None:
    check_view(lambda lib, x: x.view(lib.uint8).view(lib.float64).view(lib.int16).view(lib.float32),
               _values(torch.float32, (3, 8)))
    check_view(lambda lib, x: x[:, 8:].view(lib.complex128).view(lib.bfloat16), _values(torch.bfloat16, (2, 16)))


def test_empty_tensors() -> None:
    check_view(lambda lib, x: x[:0].view(lib.float64), _values(torch.float32, (3, 4)))
    check_view(lambda lib, x: x[:, :0].view(lib.uint8), _values(torch.int32, (3, 4)))


# ------------------------------------------------------------------ errors, as torch's

def _torch_message(fn: Callable, x: torch.Tensor) -> str:
    with pytest.raises(RuntimeError) as info:
        fn(torch, x)
    return str(info.value)


ERRORS = {
    "0-dim, other size": (lambda x: x[0, 0], torch.float64),
    "0-dim to bytes": (lambda x: x[0, 0], torch.uint8),
    "last size not divisible": (lambda x: x[:, :3], torch.float64),
    "odd offset": (lambda x: x[:, 1:5], torch.float64),
    "transposed, growing": (lambda x: x[:, :4].t(), torch.float64),
    "transposed, shrinking": (lambda x: x.t(), torch.int16),
    "stepped last dim": (lambda x: x[:, ::2], torch.uint8),
    "size-1 last dim with a stride": (lambda x: x[:, ::8], torch.int16),
    "odd row stride": (lambda x: x.reshape(-1)[:30].reshape(5, 6)[:, :2].as_strided((3, 2), (3, 1)), torch.float64),
    "last dim of size 1": (lambda x: x[:, :1], torch.float64),
}


@pytest.mark.parametrize("case", ERRORS)
def test_errors_as_torch(case: str) -> None:
    make, dst = ERRORS[case]

    def fn(lib: Any, x: Any) -> Any:
        return make(x).view(_dtype(lib, dst))

    x = _values(torch.float32, (4, 8))
    check_error(RuntimeError, fn, x, match=f"^{re.escape(_torch_message(fn, x))}$")


def test_arguments_as_torch() -> None:
    x = _values(torch.float32, (2, 4))
    check_view(lambda lib, x: x.view(dtype=_dtype(lib, torch.int16)), x)
    check_view(lambda lib, x: (torch.Tensor if lib is torch else genesis.Tensor).view(x, _dtype(lib, torch.uint8)), x)
    check_view(lambda lib, x: (torch.Tensor if lib is torch else genesis.Tensor).view(
        x, dtype=_dtype(lib, torch.complex64)), x)
    check_view(lambda lib, x: x.view(float), x)  # a Python type names a dtype, float64 as torch's parser has it
    check_view(lambda lib, x: x.view(int), _values(torch.float64, (2, 4)))
    check(lambda lib, x: x.view(8), x)  # shapes still work, in every spelling
    check(lambda lib, x: x.view(-1, 2), x)
    check(lambda lib, x: x.view((4, 2)), x)
    check_error(TypeError, lambda lib, x: x.view(_dtype(lib, torch.int32), 2), x)
    check_error(TypeError, lambda lib, x: x.view(8, dtype=_dtype(lib, torch.int32)), x)


# ------------------------------------------------------------------ memory, version counter and autograd

def test_writes_through_the_view_change_the_input() -> None:
    def fn(lib: Any, x: Any) -> Any:
        bits = x[1:].view(lib.int32)
        bits.bitwise_and_(0x7FFFFFFF)  # clear the sign bits of the last rows
        bits[0, 0] = 0x3F800000  # the bits of 1.0
        return x

    check_view(fn, _values(torch.float32, (3, 4)))


def test_writes_to_the_input_are_seen_through_the_view() -> None:
    def fn(lib: Any, x: Any) -> Any:
        view = x.view(lib.uint8)
        x.mul_(-2)
        x[0] = 1.5
        return view

    check_view(fn, _values(torch.float32, (2, 3)))


def test_writes_through_a_bytes_view_of_a_strided_input() -> None:
    def fn(lib: Any, x: Any) -> Any:
        view = x[::2, 2:].view(lib.uint8)
        view[:, ::2] = 0
        return x

    check_view(fn, _values(torch.float16, (4, 6)))


def test_the_view_is_outside_the_graph_as_torch() -> None:
    for t_dtype in (torch.float32, torch.int32, torch.float64, torch.bfloat16):
        x = genesis.randn(2, 4, device=DEVICE, requires_grad=True)
        t = torch.randn(2, 4, requires_grad=True)
        for g_in, t_in in ((x, t), (x * 2, t * 2)):
            g_out, t_out = g_in.view(GENESIS_DTYPE[t_dtype]), t_in.view(t_dtype)
            assert (g_out.requires_grad, g_out.grad_fn, g_out._base, g_out.is_leaf) == \
                (t_out.requires_grad, t_out.grad_fn, t_out._base, t_out.is_leaf) == (False, None, None, True)
            assert g_out is not g_in


def test_a_write_through_the_view_is_seen_by_the_version_counter() -> None:
    """The view shares its input's version counter: a tensor saved for backward and changed through the view fails
    backward, as in torch."""
    for lib in (genesis, torch):
        x = lib.ones(4, requires_grad=True) if lib is torch else genesis.ones(4, device=DEVICE, requires_grad=True)
        y = x * 2
        z = y.sin()  # saves y
        y.view(lib.int32).add_(1)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            z.sum().backward()


# ------------------------------------------------------------------ idioms from real code

def test_float_sign_bit_tricks() -> None:
    x = _values(torch.float32, (3, 7))
    check(lambda lib, x: (x.view(lib.int32) & 0x7FFFFFFF).view(lib.float32).view(lib.int32), x)  # abs, bit for bit
    check(lambda lib, x: x.view(lib.int32) < 0, x)  # the sign bit, -0.0 and -nan included
    check(lambda lib, x: (x.view(lib.int32) ^ -0x80000000).view(lib.float32).view(lib.int32), x)  # negation


def test_bfloat16_is_the_high_half_of_float32() -> None:
    def fn(lib: Any, x: Any) -> Any:  # truncation to bfloat16 through the integers, and back
        high = (x.view(lib.int32) >> 16).to(lib.int16).view(lib.bfloat16)
        return high.view(lib.int16).to(lib.int32).bitwise_left_shift(16).view(lib.float32).view(lib.int32)

    check(fn, _values(torch.float32, (4, 5)))
    check_view(lambda lib, x: x.view(lib.int16), _values(torch.bfloat16, (4, 5)))
    check_view(lambda lib, x: x.view(lib.bfloat16), _values(torch.int16, (4, 5)))


def test_bytes_of_a_float_tensor() -> None:
    x = _values(torch.float64, (5,))
    g = check_view(lambda lib, x: x.view(lib.uint8), x)
    assert bytes(to_torch(g).tolist()) == x.numpy().tobytes()


def test_frombuffer_bytes_as_float16() -> None:
    data = bytearray(np.array([1.0, -2.5, 65504.0, 6.0e-8, -0.0, np.inf], dtype=np.float16).tobytes())
    for lib in (torch, genesis):
        halves = lib.frombuffer(data, dtype=lib.uint8).view(lib.float16)
        assert halves.dtype is (torch.float16 if lib is torch else genesis.float16)
        assert halves.shape == (6,)
        assert np.asarray(halves.numpy()).tobytes() == bytes(data)
    halves = genesis.frombuffer(data, dtype=genesis.uint8).to(DEVICE).view(genesis.float16)
    assert _raw(halves) == bytes(data)
    halves.view(genesis.int16)[0] = 0  # the frombuffer tensor shares the bytearray
    shared = genesis.frombuffer(data, dtype=genesis.uint8).view(genesis.float16)
    shared.view(genesis.int16)[1] = 0
    assert data[2:4] == b"\x00\x00"


def test_non_contiguous_input_with_a_contiguous_last_dim() -> None:
    x = _values(torch.float32, (6, 8))
    check_view(lambda lib, x: x[1::2, 2:6].view(lib.float64), x)
    check_view(lambda lib, x: x[1::2, 2:6].view(lib.uint8), x)
    check_view(lambda lib, x: x.reshape(2, 3, 8).permute(1, 0, 2).view(lib.int16), x)
    g = to_genesis(x, requires_grad=False)
    assert not g[1::2, 2:6].is_contiguous()
