"""Multi-tensor ops (``genesis._foreach_*``) and the gradient clipping built on them, against torch on the same
tensors: every norm type, dtypes and their grouping, 0-d, empty and non-contiguous tensors, inf and nan,
``error_if_nonfinite`` and ``foreach=``. With ``GENESIS_TEST_DEVICE=cuda`` the same tests run the Triton kernels;
the ``requires_cuda`` ones mix devices."""

from __future__ import annotations

import math

import pytest
import torch

import genesis
from genesis.nn.utils import clip_grad_norm_, clip_grad_value_, clip_grads_with_norm_, get_total_norm
from tests.helpers import DEVICE, assert_same, rand, requires_cuda, to_genesis, to_torch

ORDS = (2.0, 1.0, math.inf, -math.inf, 0.0, 3.0, 0.5, -1.5)


def _pairs(dtype: torch.dtype = torch.float32) -> list[tuple[torch.Tensor, genesis.Tensor]]:
    """(torch, Genesis) tensors with equal values and layouts: 0-d, vector (with a zero), matrix, a transposed and a
    column view (non-contiguous), one tensor of several kernel blocks."""
    bases = [rand(*shape, seed=i, requires_grad=False).to(dtype)
             for i, shape in enumerate(((), (7,), (5, 6), (6, 5), (7, 3), (9000,)))]
    bases[1][2] = 0.0
    views = [lambda b: b, lambda b: b, lambda b: b, lambda b: b.t(), lambda b: b[:, 1], lambda b: b]
    return [(view(b), view(to_genesis(b))) for b, view in zip(bases, views)]


def _tensors(dtype: torch.dtype = torch.float32) -> tuple[list[torch.Tensor], list[genesis.Tensor]]:
    pairs = _pairs(dtype)
    return [t for t, _ in pairs], [g for _, g in pairs]


def _genesis(ts: list[torch.Tensor]) -> list[genesis.Tensor]:
    """Genesis copies of contiguous torch tensors."""
    return [to_genesis(t, requires_grad=False) for t in ts]


@pytest.mark.parametrize("ord", ORDS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64])
def test_foreach_norm_matches_torch(ord: float, dtype: torch.dtype) -> None:
    ts, gs = _tensors(dtype)
    assert not gs[3].is_contiguous() and not gs[4].is_contiguous()
    assert_same(genesis._foreach_norm(gs, ord), torch._foreach_norm(ts, ord), rtol=1e-5 if dtype != torch.bfloat16
                else None)


def test_foreach_norm_mixed_dtypes_dtype_argument_and_errors() -> None:
    ts = [rand(n, seed=n, requires_grad=False).to(d) for n, d in ((4, torch.bfloat16), (3, torch.float32),
                                                                (5, torch.float64), (2, torch.float16))]
    gs = _genesis(ts)
    assert_same(genesis._foreach_norm(gs), torch._foreach_norm(ts))
    assert_same(genesis._foreach_norm(gs[:2], 2, dtype=genesis.float64),
                torch._foreach_norm(ts[:2], 2, dtype=torch.float64))
    with pytest.raises(RuntimeError, match="narrowing"):
        genesis._foreach_norm(gs[1:3], dtype=genesis.float32)
    with pytest.raises(RuntimeError, match="at least one tensor"):
        genesis._foreach_norm([])
    with pytest.raises(RuntimeError, match="floating point"):
        genesis._foreach_norm([genesis.arange(3, device=DEVICE)])


def test_foreach_norm_empty_tensors_and_nonfinite() -> None:
    empty, nan = torch.zeros(0), torch.tensor([1.0, float("nan"), 2.0])
    inf = torch.tensor([1.0, -float("inf")])
    ts = [empty, nan, inf, rand(3, seed=1, requires_grad=False)]
    for ord in (2.0, 1.0, 0.0, 3.0):
        assert_same(genesis._foreach_norm(_genesis(ts), ord), torch._foreach_norm(ts, ord))
    assert_same(genesis._foreach_norm(_genesis(ts[1:]), math.inf), torch._foreach_norm(ts[1:], math.inf))
    assert_same(genesis._foreach_norm(_genesis(ts[1:]), -math.inf), torch._foreach_norm(ts[1:], -math.inf))
    for ord in (math.inf, -math.inf, -1.0):  # no identity: torch refuses
        with pytest.raises(RuntimeError, match="empty tensor"):
            genesis._foreach_norm(_genesis(ts), ord)


def test_foreach_norm_records_a_graph_when_grad_is_needed() -> None:
    t = rand(5, seed=1, requires_grad=True)
    g = to_genesis(t, requires_grad=True)
    (gn,), (tn,) = genesis._foreach_norm([g]), torch._foreach_norm([t])
    gn.backward()
    tn.backward()
    assert_same(g.grad, t.grad)


@pytest.mark.parametrize("other", [0.5, 3, "tensor", "tensor64", "list"])
def test_foreach_mul_matches_torch(other: object) -> None:
    ts, gs = _tensors()
    ts.append(rand(4, seed=9, requires_grad=False).bfloat16())
    gs.append(to_genesis(ts[-1]))
    if other == "tensor":
        t_other, g_other = torch.tensor(0.3), genesis.tensor(0.3, device=DEVICE)
    elif other == "tensor64":
        t_other, g_other = torch.tensor(0.3, dtype=torch.float64), genesis.tensor(0.3, dtype=genesis.float64)
    elif other == "list":
        t_other = g_other = [0.5 * i for i in range(len(ts))]
    else:
        t_other = g_other = other
    versions = [g._version for g in gs]
    assert genesis._foreach_mul_(gs, g_other) is gs  # as torch's: the list itself, updated in place
    assert torch._foreach_mul_(ts, t_other) is ts
    assert_same(gs, ts)
    assert all(g._version > v for g, v in zip(gs, versions))


def test_foreach_mul_integer_tensors_and_leaf_check() -> None:
    t = torch.arange(4)
    g = genesis.arange(4, device=DEVICE)
    genesis._foreach_mul_([g], 3)
    torch._foreach_mul_([t], 3)
    assert_same(g, t)
    leaf = genesis.ones(2, device=DEVICE, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        genesis._foreach_mul_([leaf], 2.0)
    with genesis.no_grad():
        genesis._foreach_mul_([leaf], 2.0)
    assert to_torch(leaf).tolist() == [2.0, 2.0]


def test_foreach_add_and_zero_match_torch() -> None:
    ts, gs = _tensors()
    genesis._foreach_add_(gs, 1.5)
    torch._foreach_add_(ts, 1.5)
    assert_same(gs, ts)
    others = [rand(*t.shape, seed=20 + i, requires_grad=False) for i, t in enumerate(ts)]
    genesis._foreach_add_(gs, [to_genesis(o) for o in others], alpha=-2)
    torch._foreach_add_(ts, others, alpha=-2)
    assert_same(gs, ts)
    gs.append(genesis.ones(3, dtype=genesis.int64, device=DEVICE))
    ts.append(torch.ones(3, dtype=torch.int64))
    genesis._foreach_zero_(gs)
    torch._foreach_zero_(ts)
    assert_same(gs, ts)


def _grads(dtypes: tuple[torch.dtype, ...], scale: float = 1.0) -> tuple[list, list]:
    """(torch parameters, Genesis parameters) with equal gradients, one (non-contiguous where possible) per dtype."""
    t_params, g_params = [], []
    for i, dtype in enumerate(dtypes):
        t = torch.zeros(6, 5 + i, dtype=dtype, requires_grad=True)
        t.grad = (rand(5 + i, 6, seed=30 + i, requires_grad=False) * scale).to(dtype).t()  # a transposed gradient
        g = genesis.zeros(6, 5 + i, dtype=to_genesis(t.grad).dtype, device=DEVICE, requires_grad=True)
        g.grad = to_genesis(t.grad.t().contiguous()).t()
        t_params.append(t)
        g_params.append(g)
    return t_params, g_params


@pytest.mark.parametrize("norm_type", ORDS[:6])
@pytest.mark.parametrize("dtypes", [(torch.float32,) * 3, (torch.bfloat16,) * 3,
                                    (torch.bfloat16, torch.float32, torch.bfloat16), (torch.float64, torch.float32)])
@pytest.mark.parametrize("foreach", [None, True, False])
def test_clip_grad_norm_matches_torch(norm_type: float, dtypes: tuple, foreach: bool | None) -> None:
    t_params, g_params = _grads(dtypes, scale=3.0)
    t_total = torch.nn.utils.clip_grad_norm_(t_params, 0.5, norm_type, foreach=foreach)
    g_total = clip_grad_norm_(g_params, 0.5, norm_type, foreach=foreach)
    # The total is only as precise as its least precise per-tensor norm (torch rounds each to its gradient's dtype):
    # a float32 norm inside a float64 total differs from torch's by the rounding of float32 sums.
    # ... and so are the gradients it scales.
    rtol = 1e-6 if torch.float32 in dtypes and t_total.dtype == torch.float64 else None
    assert_same(g_total, t_total, rtol=rtol)
    for g, t in zip(g_params, t_params):
        assert_same(g.grad, t.grad, rtol=rtol)


def test_get_total_norm_dtypes_and_clip_with_norm() -> None:
    t_params, g_params = _grads((torch.bfloat16, torch.bfloat16))
    total = get_total_norm([g.grad for g in g_params])
    assert_same(total, torch.nn.utils.get_total_norm([t.grad for t in t_params]))
    assert total.dtype is genesis.bfloat16
    assert_same(get_total_norm(g_params[0].grad), torch.nn.utils.get_total_norm(t_params[0].grad))
    assert get_total_norm([]).item() == 0.0
    clip_grads_with_norm_(g_params, 0.1, total)
    torch.nn.utils.clip_grads_with_norm_(t_params, 0.1, torch.nn.utils.get_total_norm([t.grad for t in t_params]))
    for g, t in zip(g_params, t_params):
        assert_same(g.grad, t.grad)


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_clip_grad_norm_nonfinite(bad: float) -> None:
    t_params, g_params = _grads((torch.float32, torch.float32))
    t_params[1].grad[2, 1] = bad
    g_params[1].grad = to_genesis(t_params[1].grad.t().contiguous()).t()
    with pytest.raises(RuntimeError, match="non-finite"):
        clip_grad_norm_(g_params, 1.0, error_if_nonfinite=True)
    t_total = torch.nn.utils.clip_grad_norm_(t_params, 1.0)
    assert_same(clip_grad_norm_(g_params, 1.0), t_total)
    for g, t in zip(g_params, t_params):
        assert_same(g.grad, t.grad)


def test_clip_grad_norm_empty_and_missing_grads() -> None:
    with pytest.warns(UserWarning, match="empty generator"):
        total = clip_grad_norm_((p for p in []), 1.0)
    assert total.item() == 0.0
    p = genesis.zeros(0, device=DEVICE, requires_grad=True)
    assert clip_grad_norm_([p], 1.0).item() == 0.0
    p.grad = genesis.zeros(0, device=DEVICE)
    assert clip_grad_norm_([p], 1.0).item() == 0.0


@pytest.mark.parametrize("foreach", [None, False])
def test_clip_grad_value_matches_torch(foreach: bool | None) -> None:
    t_params, g_params = _grads((torch.float32, torch.bfloat16), scale=2.0)
    t_params[0].grad[0, 0] = float("nan")
    g_params[0].grad = to_genesis(t_params[0].grad.t().contiguous()).t()
    clip_grad_value_(g_params, 0.7, foreach=foreach)
    torch.nn.utils.clip_grad_value_(t_params, 0.7, foreach=foreach)
    for g, t in zip(g_params, t_params):
        assert_same(g.grad, t.grad)


def test_zero_grad_keeps_the_gradients_and_zeroes_them() -> None:
    params = [genesis.ones(3, device=DEVICE, requires_grad=True), genesis.ones(2, 2, device=DEVICE,
                                                                               requires_grad=True)]
    opt = genesis.optim.SGD(params, lr=0.1)
    for p in params:
        p.grad = genesis.ones(p.shape, device=DEVICE)
    grads = [p.grad for p in params]
    opt.zero_grad(set_to_none=False)
    assert all(p.grad is g for p, g in zip(params, grads))
    assert all(to_torch(p.grad).abs().sum().item() == 0.0 for p in params)


@requires_cuda
def test_clip_grad_norm_across_devices() -> None:
    t_params, g_params = _grads((torch.float32, torch.bfloat16, torch.float32), scale=3.0)
    cpu_param = g_params[1].detach().to("cpu").requires_grad_(True)  # a parameter (and its gradient) on the CPU
    cpu_param.grad = g_params[1].grad.to("cpu")
    g_params[1] = cpu_param
    t_total = torch.nn.utils.clip_grad_norm_(t_params, 0.5)
    g_total = clip_grad_norm_(g_params, 0.5)
    assert g_total.device == g_params[0].grad.device
    assert_same(g_total, t_total)
    for g, t in zip(g_params, t_params):
        assert_same(g.grad, t.grad)
    norms = genesis._foreach_norm([g.grad for g in g_params])
    assert [n.device for n in norms] == [g.grad.device for g in g_params]


def _lists(seed: int) -> list[torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    return [torch.rand(shape, generator=gen, dtype=torch.float64) + 0.5 for shape in ((3,), (2, 4), (5,))]


@pytest.mark.parametrize("name, args", [
    ("_foreach_sub_", lambda a, b, c: (b, )), ("_foreach_sub_", lambda a, b, c: (0.25,)),
    ("_foreach_div_", lambda a, b, c: (b,)), ("_foreach_div_", lambda a, b, c: ([2.0, 3.0, 4.0],)),
    ("_foreach_lerp_", lambda a, b, c: (b, 0.1)), ("_foreach_lerp_", lambda a, b, c: (b, c)),
    ("_foreach_addcmul_", lambda a, b, c: (b, c, 0.5)), ("_foreach_addcdiv_", lambda a, b, c: (b, c, [1, 2, 3])),
    ("_foreach_copy_", lambda a, b, c: (b,)), ("_foreach_sqrt_", lambda a, b, c: ()),
])
def test_per_tensor_inplace_ops_match_torch(name, args):
    t_lists = [_lists(1), _lists(2), _lists(3)]
    g_lists = [[to_genesis(t) for t in lst] for lst in t_lists]
    assert getattr(torch, name)(t_lists[0], *args(*t_lists)) is t_lists[0]  # the list itself, updated
    assert getattr(genesis, name)(g_lists[0], *args(*g_lists)) is g_lists[0]
    for g, t in zip(g_lists[0], t_lists[0]):
        assert_same(g, t)


@pytest.mark.parametrize("name, args", [
    ("_foreach_add", lambda a, b: (b,)), ("_foreach_add", lambda a, b: (2.0,)), ("_foreach_sub", lambda a, b: (b,)),
    ("_foreach_mul", lambda a, b: ([1.0, 2.0, 3.0],)), ("_foreach_div", lambda a, b: (b,)),
    ("_foreach_lerp", lambda a, b: (b, 0.3)), ("_foreach_sqrt", lambda a, b: ()), ("_foreach_neg", lambda a, b: ()),
])
def test_per_tensor_ops_return_new_lists(name, args):
    t_a, t_b = _lists(4), _lists(5)
    g_a, g_b = [to_genesis(t) for t in t_a], [to_genesis(t) for t in t_b]
    assert_same(list(getattr(genesis, name)(g_a, *args(g_a, g_b))), list(getattr(torch, name)(t_a, *args(t_a, t_b))))


def test_per_tensor_ops_check_list_lengths():
    a = [genesis.ones(2), genesis.ones(3)]
    with pytest.raises(RuntimeError):
        genesis._foreach_lerp_(a, [genesis.ones(2)], 0.5)


def test_foreach_copy_converts_broadcasts_and_bumps_versions():
    """Pairs of one shape take the multi-tensor copy (float conversions included); bool, non-contiguous, 0-d, empty
    and broadcasting pairs take copy_; every destination's version moves, as torch's."""
    gen = torch.Generator().manual_seed(11)
    srcs = [torch.randn(3, generator=gen), torch.randn(2, 4, generator=gen), torch.randn(9000, generator=gen).double(),
            torch.randint(-9, 9, (5,), generator=gen), torch.rand(4, generator=gen) > 0.5,
            torch.randn(4, 3, generator=gen), torch.tensor(2.5), torch.randn(0, 2, generator=gen),
            torch.randn(4, generator=gen), torch.randn(6, generator=gen).bfloat16()]
    t_dsts = [torch.zeros(3), torch.zeros(2, 4, dtype=torch.bfloat16), torch.zeros(9000, dtype=torch.float16),
              torch.zeros(5, dtype=torch.int64), torch.zeros(4, dtype=torch.bool), torch.zeros(3, 4).t(),
              torch.zeros(()), torch.zeros(0, 2), torch.zeros(3, 4), torch.zeros(6)]
    g_dsts = [to_genesis(t.contiguous()) for t in t_dsts]
    g_dsts[5] = to_genesis(torch.zeros(3, 4)).t()
    g_srcs = [to_genesis(s) for s in srcs]
    before = [g._version for g in g_dsts]
    torch._foreach_copy_(t_dsts, srcs)
    assert genesis._foreach_copy_(g_dsts, g_srcs) is g_dsts
    for g, t in zip(g_dsts, t_dsts):
        assert_same(g, t)
    assert all(g._version > v for g, v in zip(g_dsts, before))


def test_foreach_copy_refuses_a_leaf_that_requires_grad():
    leaf = genesis.zeros(3, device=DEVICE, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        genesis._foreach_copy_([leaf], [genesis.ones(3, device=DEVICE)])
    with genesis.no_grad():
        genesis._foreach_copy_([leaf], [genesis.ones(3, device=DEVICE)])
    assert leaf.tolist() == [1.0, 1.0, 1.0]


def test_foreach_copy_into_an_expanded_tensor_raises_as_torch():
    dst = genesis.zeros(3, device=DEVICE).unsqueeze(1).expand(3, 2)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        genesis._foreach_copy_([dst], [genesis.ones(3, 2, device=DEVICE)])
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        torch._foreach_copy_([torch.zeros(3).unsqueeze(1).expand(3, 2)], [torch.ones(3, 2)])


def test_multi_tensor_steps_check_their_lists_before_any_write():
    """The backends' multi-tensor optimizer steps refuse lists that do not line up (length, shape, dtype, device)
    with torch's RuntimeError naming the list and position, and leave every tensor unchanged."""
    def arrays(*shapes, dtype=genesis.float32):
        return [genesis.ones(*s, dtype=dtype, device=DEVICE).ndarray for s in shapes]

    backend = genesis.ones(1, device=DEVICE).ndarray.backend
    params = arrays((2,), (3,))

    def step(grads, bufs):
        backend.sgd_multi_step_(params, grads, bufs, 0.1, 0.9, 0.0, 0.0, False, False, False)

    cases = [(arrays((2,)), None, "Tensor lists must have the same number of tensors, got 2 params and 1 grads"),
             (arrays((2,), (4,)), None, r"grads\[1\] has shape \(4,\), but params\[1\] has shape \(3,\)"),
             (arrays((2,), (3,)), arrays((2,), (2,)), r"bufs\[1\] has shape \(2,\), but params\[1\] has shape")]
    for grads, bufs, message in cases:
        with pytest.raises(RuntimeError, match=message):
            step(grads, bufs)
    assert all(bool((genesis.Tensor._wrap(p) == 1).all()) for p in params)


@requires_cuda
def test_multi_tensor_step_refuses_lists_on_two_devices():
    params = [genesis.ones(2, device="cuda").ndarray]
    grads = [genesis.ones(2).ndarray]
    backend = params[0].backend
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        backend.sgd_multi_step_(params, grads, None, 0.1, 0.0, 0.0, 0.0, False, False, False)
