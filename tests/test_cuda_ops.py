"""CUDA kernel paths the shape-generic suites rarely reach: split reductions, >4-dim strided copies, long rows,
two-pass softmax, host-fallback sorts, repeated-index assignment, cuBLASLt layouts and the fused bias (skip without a
GPU)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import genesis
from tests.helpers import assert_same, requires_cuda, to_genesis, to_torch

pytestmark = requires_cuda


def _pair(*shape: int, dtype: torch.dtype = torch.float32, seed: int = 0) -> tuple[torch.Tensor, genesis.Tensor]:
    t = torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64).to(dtype)
    return t, to_genesis(t, requires_grad=False, device="cuda")


@pytest.mark.parametrize("dim", [0, 1, None])
def test_long_reductions_split_over_programs(dim: int | None) -> None:
    t, g = _pair(3000, 700)
    if dim is None:
        assert_same(g.sum(), t.sum(), rtol=1e-4, atol=1e-3)
        assert_same(g.amax(), t.amax())
    else:
        assert_same(g.sum(dim), t.sum(dim), rtol=1e-4, atol=1e-4)
        assert_same(g.amin(dim), t.amin(dim))
        assert_same(g.argmax(dim), t.argmax(dim))


def test_bf16_reductions_accumulate_in_float32() -> None:
    t, g = _pair(64, 4096, dtype=torch.bfloat16)
    assert_same(g.sum(1), t.sum(1))
    assert_same(g.sum(0), t.sum(0))


def test_copy_of_a_six_dim_permuted_view() -> None:
    t, g = _pair(2, 3, 4, 5, 6, 7)
    order = (5, 0, 3, 1, 4, 2)
    assert_same(g.permute(order).contiguous(), t.permute(order).contiguous())
    assert_same(g.permute(order)[:3] + g.permute(order)[4:], t.permute(order)[:3] + t.permute(order)[4:])


def test_argmax_picks_the_first_nan_and_the_first_max() -> None:
    t = torch.tensor([[1.0, 3.0, 3.0, 2.0], [1.0, float("nan"), 5.0, float("nan")]])
    g = to_genesis(t, requires_grad=False, device="cuda")
    assert_same(g.argmax(1), t.argmax(1))
    assert_same(g.argmin(1), t.argmin(1))


@pytest.mark.parametrize("k", [7, 5000])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_gpu_short_and_long_rows(k: int, descending: bool) -> None:
    t = torch.randint(-5, 5, (3, k)).float()
    t[0, 1], t[1, 2], t[2, 0] = float("nan"), -0.0, float("nan")
    g = to_genesis(t, requires_grad=False, device="cuda")
    gv, gi = genesis.sort(g, 1, descending=descending, stable=True)
    tv, ti = torch.sort(t, dim=1, descending=descending, stable=True)
    assert_same(gv, tv)
    assert_same(gi, ti)


def test_sort_along_a_leading_dim_and_int_types() -> None:
    t = torch.randint(-100, 100, (50, 6), dtype=torch.int32)
    g = to_genesis(t, device="cuda")
    gv, gi = genesis.sort(g, 0, stable=True)
    tv, ti = torch.sort(t, dim=0, stable=True)
    assert_same(gv, tv)
    assert_same(gi, ti)


def test_cumsum_over_a_middle_dim_and_long_rows() -> None:
    t, g = _pair(4, 300, 5)
    assert_same(g.cumsum(1), t.cumsum(1), rtol=1e-4, atol=1e-4)
    t, g = _pair(2, 5000)
    assert_same(g.cumsum(1), t.cumsum(1), rtol=1e-4, atol=1e-3)


def test_softmax_of_rows_longer_than_one_pass() -> None:
    t, g = _pair(3, 10000)
    assert_same(g.softmax(1), t.softmax(1))
    assert_same(g.log_softmax(1), t.log_softmax(1), atol=1e-5)


def test_assignment_through_repeated_indices_keeps_the_last_write() -> None:
    t = torch.zeros(5)
    idx = torch.tensor([1, 3, 1, 1, 3])
    vals = torch.arange(5.0)
    t[idx] = vals  # on the CPU torch assigns in order: the last write wins
    g = genesis.zeros(5, device="cuda")
    g[to_genesis(idx, device="cuda")] = to_genesis(vals, requires_grad=False, device="cuda")
    assert_same(g, t)


def test_matmul_layouts_and_fused_bias() -> None:
    from genesis._impl.cuda import blas

    a, ga = _pair(2, 1, 33, 40)
    b, gb = _pair(3, 40, 17, seed=1)
    assert_same(ga @ gb, a @ b, rtol=1e-4, atol=1e-4)
    assert_same(ga.transpose(-1, -2).transpose(-1, -2) @ gb[0].t().t(), a @ b[0], rtol=1e-4, atol=1e-4)
    assert_same(gb[0].t() @ ga[0, 0].t(), b[0].t() @ a[0, 0].t(), rtol=1e-4, atol=1e-4)
    x, gx = _pair(8, 40, dtype=torch.bfloat16)
    w, gw = _pair(24, 40, dtype=torch.bfloat16, seed=2)
    bias, gbias = _pair(24, dtype=torch.bfloat16, seed=3)
    out = genesis.Tensor._wrap(blas.linear(gx.ndarray, gw.ndarray, gbias.ndarray))
    ref = torch.nn.functional.linear(x.float(), w.float(), bias.float())
    torch.testing.assert_close(to_torch(out).float(), ref, rtol=2e-2, atol=5e-2)


def test_random_integers_cover_the_range() -> None:
    g = genesis.randint(-3, 4, (20000,), device="cuda")
    values = np.unique(g.cpu().numpy())
    assert values.tolist() == list(range(-3, 4))


@pytest.mark.parametrize("dtype", [torch.int32, torch.float32, torch.int64])
def test_unique_with_inverse_and_counts(dtype: torch.dtype) -> None:
    t = torch.randint(-6, 6, (3, 40), generator=torch.Generator().manual_seed(4)).to(dtype)
    g = to_genesis(t, device="cuda")
    gv, gi, gc = genesis.unique(g, return_inverse=True, return_counts=True)
    tv, ti, tc = torch.unique(t, return_inverse=True, return_counts=True)
    assert_same(gv, tv)
    assert_same(gi, ti)
    assert_same(gc, tc)
