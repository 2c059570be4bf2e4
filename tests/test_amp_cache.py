"""The autocast cast cache against torch's: which casts are cached, for how long, and what autograd sees.

Genesis casts are counted by spies on the ``Cast`` primitive and on the casts a linear layer folds into its own node;
torch's by a dispatch mode on ``aten::_to_copy``.
"""

from __future__ import annotations

import threading
from typing import Any, Iterator

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

import genesis
from genesis.ops import autocast
from genesis.ops.unary import Cast
from tests.helpers import DEVICE, assert_same, to_genesis, to_torch

LOOSE = {"rtol": 3e-2, "atol": 3e-2}
W_SHAPE = (6, 6)  # a shape no activation has, so casts of the weight can be told apart


class _TorchCasts(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.shapes: list[tuple[int, ...]] = []

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        if func is torch.ops.aten._to_copy.default:
            self.shapes.append(tuple(args[0].shape))
        return func(*args, **(kwargs or {}))


@pytest.fixture
def casts(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[tuple[int, ...], Any]]]:
    """Every Genesis cast of this thread and others: (source shape, thread id)."""
    seen: list[tuple[tuple[int, ...], Any]] = []
    forward = Cast.forward

    def spy(ctx: Any, x: Any, dtype: Any) -> Any:
        seen.append((tuple(x.shape), threading.get_ident()))
        return forward(ctx, x, dtype)

    convert = autocast._convert

    def spy_folded(x: Any, dtype: Any) -> Any:  # the casts a linear layer folds into its own node
        seen.append((tuple(x.shape), threading.get_ident()))
        return convert(x, dtype)

    monkeypatch.setattr(Cast, "forward", staticmethod(spy))
    monkeypatch.setattr(autocast, "_convert", spy_folded)
    yield seen


def _weight_casts(seen: list) -> int:
    return sum(1 for shape, _ in seen if shape == W_SHAPE)


def _params() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(0)
    w = (torch.randn(*W_SHAPE, generator=gen) / 3).requires_grad_(True)
    emb = torch.randn(10, 6, generator=gen).requires_grad_(True)
    x = torch.randn(4, 6, generator=gen)
    return w, emb, x


def _program(lib: Any, w: Any, emb: Any, x: Any, tokens: Any) -> Any:
    """A Linear weight used twice and an embedding tied to the output head."""
    f = lib.nn.functional
    h = f.embedding(tokens, emb) + x
    h = f.relu(f.linear(h, w))
    h = f.linear(h, w)
    return f.linear(h, emb)  # (4, 10) logits through the tied embedding


def test_a_weight_used_twice_is_cast_once_and_matches_torch(casts: list) -> None:
    w, emb, x = _params()
    tokens = torch.tensor([1, 3, 3, 7])
    gw, gemb, gx = to_genesis(w), to_genesis(emb), to_genesis(x, requires_grad=False)
    with genesis.autocast(DEVICE, dtype=genesis.bfloat16):
        out = _program(genesis, gw, gemb, gx, to_genesis(tokens))
    with _TorchCasts() as oracle, torch.autocast("cpu", dtype=torch.bfloat16):
        expected = _program(torch, w, emb, x, tokens)
    assert _weight_casts(casts) == oracle.shapes.count(W_SHAPE) == 1
    assert [s for s, _ in casts].count((10, 6)) == oracle.shapes.count((10, 6)) == 1
    assert_same(out, expected, **LOOSE)
    out.float().sum().backward()
    expected.float().sum().backward()
    assert gw.grad.dtype is genesis.float32 and gemb.grad.dtype is genesis.float32
    assert_same(gw.grad, w.grad, **LOOSE)
    assert_same(gemb.grad, emb.grad, **LOOSE)


def test_cache_empties_when_the_region_exits(casts: list) -> None:
    w, _, x = _params()
    gw, gx = to_genesis(w), to_genesis(x, requires_grad=False)
    with genesis.autocast(DEVICE, dtype=genesis.bfloat16):
        first = gx @ gw
    with genesis.no_grad():
        gw.mul_(2.0)  # an optimizer step between regions
    with genesis.autocast(DEVICE, dtype=genesis.bfloat16):
        second = gx @ gw
    assert _weight_casts(casts) == 2
    assert_same(second, to_torch(first) * 2, rtol=0, atol=0)  # doubling is exact in bfloat16


def test_nested_regions_clear_only_at_the_outermost_exit(casts: list) -> None:
    w, _, x = _params()
    gw, gx = to_genesis(w), to_genesis(x, requires_grad=False)
    with genesis.autocast(DEVICE, dtype=genesis.bfloat16):
        gx @ gw
        with genesis.autocast(DEVICE, dtype=genesis.bfloat16):
            gx @ gw
        with genesis.autocast(DEVICE, enabled=False):
            assert (gx @ gw).dtype is genesis.float32
        gx @ gw
        assert _weight_casts(casts) == 1
    with genesis.autocast(DEVICE, dtype=genesis.bfloat16):
        gx @ gw
    assert _weight_casts(casts) == 2


def test_cache_enabled_false_and_the_flag_functions_follow_torch(casts: list) -> None:
    w, _, x = _params()
    gw, gx = to_genesis(w), to_genesis(x, requires_grad=False)
    with genesis.autocast(DEVICE, cache_enabled=False):
        gx @ gw
        gx @ gw
    assert _weight_casts(casts) == 2

    def flags(lib: Any) -> list[bool]:
        seen = [lib.is_autocast_cache_enabled()]
        with lib.autocast("cpu", cache_enabled=False):
            seen.append(lib.is_autocast_cache_enabled())
            with lib.autocast("cpu"):  # None inherits the current setting
                seen.append(lib.is_autocast_cache_enabled())
            lib.set_autocast_cache_enabled(True)
            seen.append(lib.is_autocast_cache_enabled())
        seen.append(lib.is_autocast_cache_enabled())
        return seen

    assert flags(genesis) == flags(torch) == [True, False, False, True, True]
    genesis.set_autocast_cache_enabled(False)
    try:
        with genesis.autocast(DEVICE, dtype=genesis.bfloat16):
            gx @ gw
            gx @ gw
    finally:
        genesis.set_autocast_cache_enabled(True)
    assert _weight_casts(casts) == 4


def test_only_float32_leaves_that_require_grad_are_cached(casts: list) -> None:
    w, _, x = _params()
    cases = {
        "no requires_grad": lambda lib, w: w.detach(),
        "non-leaf": lambda lib, w: w * 1.0,
        "view of a parameter": lambda lib, w: w.t(),
        "float16 parameter": lambda lib, w: w.detach().to(lib.float16).requires_grad_(True),
    }
    for name, make in cases.items():
        tw, gw, gx = make(torch, w), make(genesis, to_genesis(w)), to_genesis(x, requires_grad=False)
        with _TorchCasts() as oracle, torch.autocast("cpu", dtype=torch.bfloat16):
            x @ tw
            x @ tw
        casts.clear()
        with genesis.autocast(DEVICE, dtype=genesis.bfloat16):
            gx @ gw
            gx @ gw
        assert _weight_casts(casts) == oracle.shapes.count(W_SHAPE) == 2, name


def test_float64_is_never_cast(casts: list) -> None:
    gw = to_genesis(torch.randn(*W_SHAPE, dtype=torch.float64), requires_grad=True)
    gx = to_genesis(torch.randn(4, 6, dtype=torch.float64), requires_grad=False)
    with genesis.autocast(DEVICE, dtype=genesis.bfloat16):
        assert (gx @ gw).dtype is genesis.float64
    assert _weight_casts(casts) == 0


def test_a_cast_cached_under_no_grad_still_carries_gradients(casts: list) -> None:
    w, _, x = _params()
    gw, gx = to_genesis(w), to_genesis(x, requires_grad=False)
    with genesis.autocast(DEVICE, dtype=genesis.bfloat16):
        with genesis.no_grad():
            assert not (gx @ gw).requires_grad
        out = gx @ gw
    assert _weight_casts(casts) == 1
    out.float().sum().backward()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        with torch.no_grad():
            x @ w
        expected = x @ w
    expected.float().sum().backward()
    assert_same(gw.grad, w.grad, **LOOSE)


def test_inference_mode_does_not_cache(casts: list) -> None:
    w, _, x = _params()
    gw, gx = to_genesis(w), to_genesis(x, requires_grad=False)
    with genesis.autocast(DEVICE, dtype=genesis.bfloat16):
        with genesis.inference_mode():
            gx @ gw
        out = gx @ gw
    assert _weight_casts(casts) == 2 and out.requires_grad


def test_in_place_change_inside_a_region_is_not_seen_as_in_torch(casts: list) -> None:
    def run(lib: Any, w: Any, x: Any) -> tuple[Any, Any]:
        with lib.autocast("cpu" if lib is torch else DEVICE, dtype=lib.bfloat16):
            before = x @ w
            with lib.no_grad():
                w.add_(1.0)
            return before, x @ w  # the cached cast: still the old values

    w, _, x = _params()
    g_before, g_after = run(genesis, to_genesis(w), to_genesis(x, requires_grad=False))
    t_before, t_after = run(torch, w, x)
    assert_same(g_after, t_after, **LOOSE)
    assert_same(g_after, to_torch(g_before), rtol=0, atol=0)


def test_two_backward_passes_in_one_region_match_torch() -> None:
    w, _, x = _params()
    gw, gx = to_genesis(w), to_genesis(x, requires_grad=False)
    for lib, wt, xt in ((genesis, gw, gx), (torch, w, x)):
        with lib.autocast("cpu" if lib is torch else DEVICE, dtype=lib.bfloat16):
            for _ in range(2):  # gradient accumulation over micro-batches
                (xt @ wt).float().pow(2).sum().backward()
    assert_same(gw.grad, w.grad, **LOOSE)


def test_the_cache_is_per_thread(casts: list) -> None:
    w, _, x = _params()
    gw, gx = to_genesis(w), to_genesis(x, requires_grad=False)
    done = threading.Event()
    go_on = threading.Event()

    def worker() -> None:
        assert genesis.is_autocast_cache_enabled()
        with genesis.autocast(DEVICE, dtype=genesis.bfloat16):
            gx @ gw
            gx @ gw
        done.set()
        go_on.wait(timeout=10)

    with genesis.autocast(DEVICE, cache_enabled=True):
        gx @ gw
        genesis.set_autocast_cache_enabled(True)
        thread = threading.Thread(target=worker)
        thread.start()
        assert done.wait(timeout=10)
        gx @ gw  # the worker's exit did not empty this thread's cache
        go_on.set()
        thread.join()
    by_thread: dict[Any, int] = {}
    for shape, ident in casts:
        if shape == W_SHAPE:
            by_thread[ident] = by_thread.get(ident, 0) + 1
    assert sorted(by_thread.values()) == [1, 1]


def test_clear_autocast_cache_drops_the_casts(casts: list) -> None:
    w, _, x = _params()
    gw, gx = to_genesis(w), to_genesis(x, requires_grad=False)
    with genesis.autocast(DEVICE, dtype=genesis.bfloat16):
        gx @ gw
        genesis.clear_autocast_cache()
        gx @ gw
    assert _weight_casts(casts) == 2
    assert genesis.amp.clear_autocast_cache is genesis.clear_autocast_cache
