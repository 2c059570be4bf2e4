"""Fuzzed op arguments: shapes (empty ones included), dtypes, NaN/Inf values, negative and huge sizes, dims and
counts out of range. Genesis raises torch's exception class or returns torch's result (``check_like_torch``); each
case runs in a guarded child process (``tests/fuzz_runner.py``), so a case that kills the interpreter fails."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import genesis
from tests.fuzz_runner import SETTINGS, Guard
from tests.helpers import check_like_torch, to_genesis


@pytest.fixture(scope="module")
def guard():
    g = Guard()
    yield g
    g.close()


DTYPES = {"float32": torch.float32, "float64": torch.float64, "int64": torch.int64, "bool": torch.bool}
# Large values stay below 1e19: their squares fit float32, whose reductions torch's CPU accumulates in float64.
SPECIAL = [0.0, -0.0, 1.0, -2.5, 3.0, math.nan, math.inf, -math.inf, 1e18, -1e-30]
HUGE = [2**40, 2**62, 2**63 - 1, -(2**63)]

# Unary ops with up to three integer arguments (a, b, c) and a list of sizes: name -> fn(lib, x, a, b, c, sizes).
OPS = {
    "sum": lambda lib, x, a, b, c, s: x.sum(a),
    "mean": lambda lib, x, a, b, c, s: x.mean(a),
    "prod": lambda lib, x, a, b, c, s: x.prod(a),
    "amax": lambda lib, x, a, b, c, s: x.amax(a),
    "amin_all": lambda lib, x, a, b, c, s: x.amin(),
    "max_all": lambda lib, x, a, b, c, s: x.max(),
    "argmax": lambda lib, x, a, b, c, s: x.argmax(a),
    "logsumexp": lambda lib, x, a, b, c, s: x.logsumexp(a),
    "softmax": lambda lib, x, a, b, c, s: x.softmax(a),
    "log_softmax": lambda lib, x, a, b, c, s: x.log_softmax(a),
    "cumsum": lambda lib, x, a, b, c, s: x.cumsum(a),
    "cummax": lambda lib, x, a, b, c, s: tuple(x.cummax(a)),
    "sort": lambda lib, x, a, b, c, s: x.sort(dim=a, stable=True)[0],
    "topk": lambda lib, x, a, b, c, s: x.topk(b, a)[0],
    "kthvalue": lambda lib, x, a, b, c, s: x.kthvalue(b, a)[0],
    "median": lambda lib, x, a, b, c, s: x.median(),
    "median_dim": lambda lib, x, a, b, c, s: x.median(a)[0],
    "nanmedian": lambda lib, x, a, b, c, s: x.nanmedian(),
    "std": lambda lib, x, a, b, c, s: x.std(a),
    "norm": lambda lib, x, a, b, c, s: x.norm(),
    "reshape": lambda lib, x, a, b, c, s: x.reshape(s),
    "view": lambda lib, x, a, b, c, s: x.view(s),
    "repeat": lambda lib, x, a, b, c, s: x.repeat(s),
    "expand": lambda lib, x, a, b, c, s: x.expand(s),
    "permute": lambda lib, x, a, b, c, s: x.permute(s),
    "narrow": lambda lib, x, a, b, c, s: x.narrow(a, b, c),
    "select": lambda lib, x, a, b, c, s: x.select(a, b),
    "unsqueeze": lambda lib, x, a, b, c, s: x.unsqueeze(a),
    "squeeze": lambda lib, x, a, b, c, s: x.squeeze(a),
    "flip": lambda lib, x, a, b, c, s: x.flip(a),
    "roll": lambda lib, x, a, b, c, s: x.roll(b, a),
    "transpose": lambda lib, x, a, b, c, s: x.transpose(a, b),
    "chunk": lambda lib, x, a, b, c, s: x.chunk(b, a),
    "split": lambda lib, x, a, b, c, s: x.split(b, a),
    "unfold": lambda lib, x, a, b, c, s: x.unfold(a, b, c),
    "tril": lambda lib, x, a, b, c, s: x.tril(b),
    "diagonal": lambda lib, x, a, b, c, s: x.diagonal(b),
    "index_select": lambda lib, x, a, b, c, s: x.index_select(a, lib.tensor(s, dtype=lib.int64)),
    "getitem": lambda lib, x, a, b, c, s: x[b],
    "clamp": lambda lib, x, a, b, c, s: x.clamp(b, c),
    "pow": lambda lib, x, a, b, c, s: x ** b,
    "div": lambda lib, x, a, b, c, s: x / b,
    "floor_divide": lambda lib, x, a, b, c, s: x // b,
    "remainder": lambda lib, x, a, b, c, s: x % b,
    "sqrt": lambda lib, x, a, b, c, s: x.sqrt(),
    "log": lambda lib, x, a, b, c, s: x.log(),
    "exp": lambda lib, x, a, b, c, s: x.exp(),
    "sigmoid": lambda lib, x, a, b, c, s: x.sigmoid(),
    "nan_to_num": lambda lib, x, a, b, c, s: x.nan_to_num(),
    "isfinite": lambda lib, x, a, b, c, s: x.isfinite(),
    "abs": lambda lib, x, a, b, c, s: x.abs(),
    "neg": lambda lib, x, a, b, c, s: -x,
    "bitwise_not": lambda lib, x, a, b, c, s: ~x,
    "to_int": lambda lib, x, a, b, c, s: x.nan_to_num().clamp(-100, 100).to(lib.int64),
    "histc": lambda lib, x, a, b, c, s: x.histc(bins=max(b, 1), min=-3, max=3),
    "bincount": lambda lib, x, a, b, c, s: lib.bincount(x.reshape(-1)),
    "multinomial": lambda lib, x, a, b, c, s: tuple(lib.multinomial(x, b).shape),
    "one_hot": lambda lib, x, a, b, c, s: lib.nn.functional.one_hot(x, b),
}


@st.composite
def tensors(draw) -> torch.Tensor:
    """A small tensor of a fuzzed shape and dtype, holding ordinary and special values."""
    shape = draw(st.lists(st.integers(0, 4), max_size=3))
    dtype = DTYPES[draw(st.sampled_from(sorted(DTYPES)))]
    n = math.prod(shape)
    if dtype.is_floating_point:
        values = draw(st.lists(st.sampled_from(SPECIAL) | st.floats(-10, 10, width=32), min_size=n, max_size=n))
    elif dtype is torch.bool:
        values = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    else:
        values = draw(st.lists(st.integers(-5, 5), min_size=n, max_size=n))
    return torch.tensor(values, dtype=dtype).reshape(shape)


small = st.integers(-4, 5)
sizes = st.lists(st.integers(-2, 6), max_size=4)


def torch_skips_checks(name: str, x: torch.Tensor, s: list[int]) -> bool:
    """Cases where torch skips its own argument checks, so its answer is no oracle: on an empty tensor it accepts
    out-of-range dims (roll, cummax), negative repeats and sizes, integer softmax and bool medians; it expands to
    negative sizes when another size is 0; on a 0-d tensor index_select checks the index count before its values.
    There Genesis may refuse the arguments (any exception of torch's kinds) or return; the process still must not
    die."""
    return (x.numel() == 0 or (x.ndim == 0 and name in ("index_select", "expand", "kthvalue"))
            or (name == "expand" and any(n < -1 for n in s)))


def op_case(name: str, x: torch.Tensor, a: int, b: int, c: int, s: list[int]) -> None:
    fn = OPS[name]
    if torch_skips_checks(name, x, s):
        try:
            fn(genesis, to_genesis(x), a, b, c, s)
        except (RuntimeError, IndexError, ValueError, TypeError, NotImplementedError):
            pass
        return
    check_like_torch(lambda lib, t: fn(lib, t, a, b, c, s), x)


@SETTINGS
@given(name=st.sampled_from(sorted(OPS)), x=tensors(), a=small, b=small, c=small, s=sizes)
def test_fuzzed_op_arguments(guard, name, x, a, b, c, s):
    guard.run(op_case, name, x, a, b, c, s)


def binary_case(op: str, x: torch.Tensor, y: torch.Tensor) -> None:
    if op == "matmul" and x.dtype != y.dtype:
        # torch's matmul answers a dtype mix by its kernel's path: nothing for an empty operand, NotImplementedError
        # from bmm for a batched bool one, RuntimeError otherwise. Genesis refuses every mix (or returns).
        try:
            genesis.matmul(to_genesis(x), to_genesis(y))
        except (RuntimeError, NotImplementedError):
            pass
        return
    fns = {"add": lambda lib, p, q: p + q, "mul": lambda lib, p, q: p * q, "div": lambda lib, p, q: p / q,
           "maximum": lambda lib, p, q: lib.maximum(p, q), "eq": lambda lib, p, q: p == q,
           "matmul": lambda lib, p, q: p @ q, "where": lambda lib, p, q: lib.where(p > 0, p, q),
           "cat": lambda lib, p, q: lib.cat([p, q]), "stack": lambda lib, p, q: lib.stack([p, q])}
    check_like_torch(fns[op], x, y)


@SETTINGS
@given(op=st.sampled_from(["add", "mul", "div", "maximum", "eq", "matmul", "where", "cat", "stack"]),
       x=tensors(), y=tensors())
def test_fuzzed_binary_ops(guard, op, x, y):
    guard.run(binary_case, op, x, y)


def creation_case(name: str, sizes: list[int], value: float, dtype: str | None) -> None:
    kw = {}
    if name == "linspace" and not math.isfinite(value):
        # torch's vectorized linspace gives position-dependent NaN/inf patterns for an infinite or NaN bound (no
        # formula of its own documentation); Genesis returns NaN there. Only a clean outcome is required.
        try:
            genesis.linspace(value, sizes[0] if sizes else 0, sizes[1] if len(sizes) > 1 else 0)
        except (RuntimeError, ValueError, TypeError):
            pass
        return

    def fn(lib):
        if dtype is not None:
            kw["dtype"] = getattr(lib, dtype)
        n = sizes[0] if sizes else 0
        out = {"zeros": lambda: lib.zeros(sizes, **kw), "ones": lambda: lib.ones(*sizes, **kw),
               "full": lambda: lib.full(sizes, value, **kw), "empty": lambda: lib.empty(sizes, **kw),
               "arange": lambda: lib.arange(n, value, (sizes[1] if len(sizes) > 1 else 1), **kw),
               "linspace": lambda: lib.linspace(value, n, sizes[1] if len(sizes) > 1 else n, **kw),
               "eye": lambda: lib.eye(n, sizes[1] if len(sizes) > 1 else n, **kw),
               "randperm": lambda: lib.randperm(n), "randn": lambda: lib.randn(sizes)}[name]()
        if name in ("empty", "randperm", "randn") or out.numel() == 0:  # values undefined, random or none
            return tuple(out.shape), str(out.dtype).split(".")[-1]
        return out

    check_like_torch(fn)


@SETTINGS
@given(name=st.sampled_from(["zeros", "ones", "full", "empty", "arange", "linspace", "eye", "randperm", "randn"]),
       sizes=st.lists(st.integers(-3, 6) | st.sampled_from(HUGE), max_size=3),
       value=st.sampled_from([0.0, 2.5, -7.0, math.nan, math.inf]),
       dtype=st.sampled_from([None, "float32", "int64", "bool"]))
def test_fuzzed_creation_sizes(guard, name, sizes, value, dtype):
    guard.run(creation_case, name, sizes, value, dtype)
