"""Hypothesis-generated shapes: broadcasting binary ops, reductions, views and indexing against torch."""

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.helpers import check, check_error, rand

SETTINGS = settings(max_examples=60, deadline=None, derandomize=True)

dims = st.integers(min_value=0, max_value=4)
shapes = st.lists(dims, min_size=0, max_size=4).map(tuple)


@st.composite
def broadcast_pair(draw):
    """Two shapes that broadcast: the second is the first with some dims set to 1 or dropped from the left."""
    shape = draw(shapes)
    other = [1 if draw(st.booleans()) else n for n in shape]
    drop = draw(st.integers(min_value=0, max_value=len(other)))
    other = other[drop:]
    if draw(st.booleans()):
        return shape, tuple(other)
    return tuple(other), shape


@st.composite
def reduction_case(draw):
    shape = draw(st.lists(st.integers(min_value=1, max_value=4), min_size=1, max_size=4).map(tuple))
    dim = draw(st.one_of(
        st.none(),
        st.integers(min_value=-len(shape), max_value=len(shape) - 1),
        st.lists(st.integers(min_value=0, max_value=len(shape) - 1), min_size=1, max_size=len(shape), unique=True)
        .map(tuple),
    ))
    return shape, dim, draw(st.booleans())


BINARY = {
    "add": lambda lib, a, b: a + b,
    "sub": lambda lib, a, b: a - b,
    "mul": lambda lib, a, b: a * b,
    "div": lambda lib, a, b: a / (b.abs() + 0.5),
    "maximum": lambda lib, a, b: lib.maximum(a, b),
    "where": lambda lib, a, b: lib.where(a > b, a, b * 2),
    "pow": lambda lib, a, b: (a.abs() + 0.5) ** b,
}


@SETTINGS
@given(pair=broadcast_pair(), op=st.sampled_from(sorted(BINARY)))
def test_broadcast_binary(pair, op):
    a, b = rand(*pair[0], seed=1), rand(*pair[1], seed=2)
    check(BINARY[op], a, b)


@SETTINGS
@given(pair=broadcast_pair(), op=st.sampled_from(sorted(BINARY)))
def test_broadcast_binary_noncontiguous(pair, op):
    """The same pairs, with the first input handed over transposed."""
    a, b = rand(*reversed(pair[0]), seed=3), rand(*pair[1], seed=4)
    check(lambda lib, a, b: BINARY[op](lib, a.permute(tuple(reversed(range(a.ndim)))), b), a, b)


@SETTINGS
@given(a=shapes, b=shapes)
def test_broadcast_or_raise(a, b):
    """Arbitrary shape pairs either broadcast like torch or raise RuntimeError like torch."""
    x, y = rand(*a, seed=5), rand(*b, seed=6)
    try:
        torch.broadcast_shapes(a, b)
    except RuntimeError:
        check_error(RuntimeError, lambda lib, x, y: x + y, x, y)
        return
    check(lambda lib, x, y: x * y, x, y)


REDUCTIONS = {
    "sum": lambda lib, x, kw: x.sum(**kw),
    "mean": lambda lib, x, kw: x.mean(**kw),
    "amax": lambda lib, x, kw: x.amax(**kw),
    "amin": lambda lib, x, kw: x.amin(**kw),
    "prod": None,
    "var": lambda lib, x, kw: x.var(**kw),
    "std": lambda lib, x, kw: x.std(correction=0, **kw),
    "logsumexp": lambda lib, x, kw: x.logsumexp(**kw),
    "norm": lambda lib, x, kw: x.norm(**kw),
    "all": lambda lib, x, kw: (x > 0).all(**kw),
    "any": lambda lib, x, kw: (x > 0.5).any(**kw),
}


@SETTINGS
@given(case=reduction_case(), op=st.sampled_from(sorted(n for n in REDUCTIONS if n != "prod")))
def test_reductions(case, op):
    shape, dim, keepdim = case
    if op == "logsumexp" and dim is None:
        dim = tuple(range(len(shape)))
    if op == "norm" and isinstance(dim, tuple) and len(dim) > 2:
        dim = None
    if op in ("all", "any") and isinstance(dim, tuple) and len(dim) > 1:
        dim = dim[0]
    kw = {} if dim is None else {"dim": dim, "keepdim": keepdim}
    check(lambda lib, x: REDUCTIONS[op](lib, x, kw), rand(*shape, seed=7))


@SETTINGS
@given(case=reduction_case(), op=st.sampled_from(["max", "min", "argmax", "argmin", "softmax", "log_softmax",
                                                    "cumsum", "cumprod", "prod", "sort"]))
def test_single_dim_reductions(case, op):
    shape, dim, keepdim = case
    d = dim if isinstance(dim, int) else -1
    fns = {
        "max": lambda lib, x: tuple(x.max(d, keepdim)),
        "min": lambda lib, x: tuple(x.min(d, keepdim)),
        "argmax": lambda lib, x: x.argmax(d, keepdim),
        "argmin": lambda lib, x: x.argmin(d, keepdim),
        "softmax": lambda lib, x: x.softmax(d),
        "log_softmax": lambda lib, x: x.log_softmax(d),
        "cumsum": lambda lib, x: x.cumsum(d),
        "cumprod": lambda lib, x: x.cumprod(d),
        "prod": lambda lib, x: x.prod(d, keepdim),
        "sort": lambda lib, x: tuple(x.sort(d)),
    }
    check(fns[op], rand(*shape, seed=8))


@SETTINGS
@given(shape=st.lists(st.integers(min_value=1, max_value=4), min_size=1, max_size=4).map(tuple), data=st.data())
def test_permute_reshape_roundtrip(shape, data):
    order = data.draw(st.permutations(range(len(shape))))
    flat = 1
    for n in shape:
        flat *= n
    check(lambda lib, x: x.permute(*order).reshape(-1).reshape(flat, 1).squeeze(1), rand(*shape, seed=9))


@SETTINGS
@given(shape=st.lists(st.integers(min_value=1, max_value=5), min_size=1, max_size=3).map(tuple), data=st.data())
def test_slicing(shape, data):
    key = []
    for n in shape:
        start = data.draw(st.one_of(st.none(), st.integers(min_value=-n - 1, max_value=n + 1)))
        stop = data.draw(st.one_of(st.none(), st.integers(min_value=-n - 1, max_value=n + 1)))
        step = data.draw(st.one_of(st.none(), st.integers(min_value=1, max_value=3)))
        key.append(slice(start, stop, step))
    key = tuple(key)
    check(lambda lib, x: x[key], rand(*shape, seed=10))
    check(lambda lib, x: x.mT[key[::-1]] if x.ndim >= 2 else x[key], rand(*shape, seed=10))


@SETTINGS
@given(shape=st.lists(st.integers(min_value=1, max_value=4), min_size=1, max_size=3).map(tuple), data=st.data())
def test_integer_array_indexing(shape, data):
    dim = data.draw(st.integers(min_value=0, max_value=len(shape) - 1))
    n = shape[dim]
    idx = data.draw(st.lists(st.integers(min_value=-n, max_value=n - 1), min_size=0, max_size=5))
    index = torch.tensor(idx, dtype=torch.int64)
    key_prefix = (slice(None),) * dim
    check(lambda lib, x, i: x[key_prefix + (i,)], rand(*shape, seed=11), index)
    check(lambda lib, x, i: x.index_select(dim, i % n), rand(*shape, seed=11), index)


DTYPES = [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16, torch.bfloat16,
          torch.float32, torch.float64]


@SETTINGS
@given(pair=broadcast_pair(), da=st.sampled_from(DTYPES), db=st.sampled_from(DTYPES),
       op=st.sampled_from(["add", "mul", "div", "eq", "lt", "maximum", "where"]),
       scalar=st.one_of(st.none(), st.integers(-3, 3), st.floats(-2.0, 2.0, width=32), st.booleans()))
def test_promotion_with_shapes_dtypes_and_scalars(pair, da, db, op, scalar):
    """Result dtype and values follow torch for any dtype pair, broadcast shapes, 0-d tensors and scalars."""
    a = (rand(*pair[0], seed=12, requires_grad=False) * 3).to(da)
    b = (rand(*pair[1], seed=13, requires_grad=False) * 3).to(db)
    fns = {
        "add": lambda lib, a, b: a + b,
        "mul": lambda lib, a, b: a * b,
        "div": lambda lib, a, b: a / (b.abs() + 1) if b.dtype != lib.bool else a / 2,
        "eq": lambda lib, a, b: a == b,
        "lt": lambda lib, a, b: a < b,
        "maximum": lambda lib, a, b: lib.maximum(a, b),
        "where": lambda lib, a, b: lib.where(a > b, a, b),
    }
    fn = fns[op]
    if scalar is not None:
        check(lambda lib, a: fn(lib, a, a) * scalar if op in ("add", "mul", "div", "maximum", "where")
              else fn(lib, a, scalar), a, rtol=2e-2, atol=2e-2)
    check(fn, a, b, rtol=2e-2, atol=2e-2)


@SETTINGS
@given(shape=st.lists(st.integers(min_value=1, max_value=4), min_size=1, max_size=3).map(tuple), data=st.data())
def test_mask_assignment_and_select(shape, data):
    numel = 1
    for n in shape:
        numel *= n
    bits = data.draw(st.lists(st.booleans(), min_size=numel, max_size=numel))
    mask = torch.tensor(bits).reshape(shape)

    def assign(lib, x, m):
        y = x * 1.0
        y[m] = -1.0
        y[~m] = y[~m] * 2
        return y, x[m], x.masked_fill(m, 0.5)

    check(assign, rand(*shape, seed=14), mask)
