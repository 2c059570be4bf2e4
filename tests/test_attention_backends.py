"""The kernels of ``scaled_dot_product_attention``: the torch-style switches, ``sdpa_kernel``, and on CUDA the choice
between Genesis's Triton flash attention and cuDNN's (the backward on its forward's kernel, one timing per shape
class, errors where nothing may run). Values are checked against torch in float64."""

from __future__ import annotations

import contextlib

import pytest
import torch

import genesis
import genesis.nn.functional as F
from genesis.backends import cuda as sdp
from genesis.nn.attention import SDPBackend, sdpa_kernel
from tests.helpers import DEVICE, requires_cuda, to_genesis, to_torch


def test_sdpa_kernel_sets_the_switches_and_restores_them() -> None:
    before = sdp.state()
    with sdpa_kernel([SDPBackend.CUDNN_ATTENTION, SDPBackend.MATH]):
        assert (sdp.flash_sdp_enabled(), sdp.cudnn_sdp_enabled(), sdp.math_sdp_enabled()) == (False, True, True)
        assert sdp.priority() is None
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            assert (sdp.flash_sdp_enabled(), sdp.cudnn_sdp_enabled(), sdp.math_sdp_enabled()) == (True, False, False)
        assert sdp.cudnn_sdp_enabled() and not sdp.flash_sdp_enabled()
    assert sdp.state() == before


def test_sdpa_kernel_priority_order_and_restore_after_error() -> None:
    before = sdp.state()
    with pytest.raises(ValueError):
        with sdpa_kernel([SDPBackend.CUDNN_ATTENTION, SDPBackend.MATH, SDPBackend.FLASH_ATTENTION], set_priority=True):
            assert sdp.priority() == (sdp.CUDNN, sdp.FLASH)
            raise ValueError("leaves the block")
    assert sdp.state() == before


def test_sdpa_kernel_rejects_other_values() -> None:
    before = sdp.state()
    with pytest.raises(TypeError, match="SDPBackend"):
        with sdpa_kernel(["flash"]):
            pass
    assert sdp.state() == before


def test_backend_members_print_as_torch() -> None:
    from torch.nn.attention import SDPBackend as TorchBackend

    for member in SDPBackend:
        theirs = TorchBackend.__members__[member.name]
        assert (str(member), f"{member}", member.value) == (str(theirs), f"{theirs}", theirs.value)


@pytest.mark.parametrize("backend", [None, SDPBackend.MATH])
def test_cpu_kernels_give_torchs_values_to_the_last_bit(backend: SDPBackend | None) -> None:
    # By default torch's CPU flash kernel; under sdpa_kernel(MATH) the composite, which scales q and k by
    # sqrt(scale) before their product as torch's does.
    if DEVICE != "cpu":
        pytest.skip("torch's CPU kernels are the oracle")
    from torch.nn.attention import SDPBackend as TorchBackend
    from torch.nn.attention import sdpa_kernel as torch_sdpa_kernel

    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 3, 9, 16, generator=g) for _ in range(3))
    mask = torch.randn(9, 9, generator=g)
    with torch_sdpa_kernel(TorchBackend.__members__[backend.name]) if backend else contextlib.nullcontext():
        ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=0.3)
    with sdpa_kernel(backend) if backend else contextlib.nullcontext():
        out = F.scaled_dot_product_attention(*(to_genesis(t) for t in (q, k, v, mask)), scale=0.3)
    assert torch.equal(to_torch(out), ref)


def test_cpu_flash_only_raises_where_it_cannot_run() -> None:
    if DEVICE != "cpu":
        pytest.skip("the CPU's kernel choice")
    q = genesis.ones(1, 2, 4, 8)
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        assert F.scaled_dot_product_attention(q, q, q).shape == (1, 2, 4, 8)
        with pytest.raises(RuntimeError, match="no available kernel"):
            F.scaled_dot_product_attention(q, q, q, dropout_p=0.5)


def test_process_wide_switches() -> None:
    before = sdp.state()
    try:
        sdp.enable_flash_sdp(False)
        sdp.enable_cudnn_sdp(False)
        assert not sdp.flash_sdp_enabled() and not sdp.cudnn_sdp_enabled() and sdp.math_sdp_enabled()
        # With both fused kernels off the composite runs, on every device.
        q, k, v = (to_genesis(torch.randn(1, 2, 5, 16, dtype=torch.float16)) for _ in range(3))
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        ref = torch.nn.functional.scaled_dot_product_attention(*(to_torch(t).float() for t in (q, k, v)),
                                                               is_causal=True)
        torch.testing.assert_close(to_torch(out).float(), ref, rtol=1e-2, atol=1e-2)
    finally:
        sdp.restore(before)


# ---------------------------------------------------------------- CUDA: the two fused kernels


def _inputs(B: int, H: int, HK: int, L: int, S: int, D: int, seed: int) -> tuple:
    g = torch.Generator().manual_seed(seed)
    ts = [torch.randn(shape, generator=g, dtype=torch.float64).to(torch.bfloat16)
          for shape in ((B, H, L, D), (B, HK, S, D), (B, HK, S, D), (B, H, L, D))]
    return ts, [to_genesis(t, requires_grad=True) for t in ts[:3]] + [to_genesis(ts[3])]


def _reference(ts: list[torch.Tensor], causal: bool) -> tuple[torch.Tensor, ...]:
    q, k, v = (t.double().requires_grad_() for t in ts[:3])
    group = q.shape[1] // k.shape[1]
    out = torch.nn.functional.scaled_dot_product_attention(q, k.repeat_interleave(group, 1),
                                                           v.repeat_interleave(group, 1), is_causal=causal)
    out.backward(ts[3].double())
    return out.detach(), q.grad, k.grad, v.grad


def _assert_close(got: genesis.Tensor, ref: torch.Tensor, what: str) -> None:
    g = to_torch(got).double()
    err = ((g - ref).norm() / ref.norm()).item()
    assert err < 1e-2, f"{what}: relative error {err:.2e}"


@requires_cuda
@pytest.mark.parametrize("forward,backward", [(SDPBackend.CUDNN_ATTENTION, SDPBackend.FLASH_ATTENTION),
                                              (SDPBackend.FLASH_ATTENTION, SDPBackend.CUDNN_ATTENTION)])
def test_backward_runs_on_the_kernel_of_its_forward(forward: SDPBackend, backward: SDPBackend) -> None:
    ts, (q, k, v, dy) = _inputs(2, 4, 2, 70, 70, 64, 0)
    with sdpa_kernel(forward):
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    with sdpa_kernel(backward):  # only the other kernel is allowed now: the saved statistics decide
        out.backward(dy)
    for got, ref, what in zip((out, q.grad, k.grad, v.grad), _reference(ts, True), ("out", "dq", "dk", "dv")):
        _assert_close(got, ref, what)


@requires_cuda
def test_the_faster_kernel_is_timed_once_per_shape_class() -> None:
    from genesis._impl.cuda import sdpa as sdpa

    ts, (q, k, v, dy) = _inputs(1, 8, 8, 500, 500, 128, 1)
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    key = next(key for key in sdpa.timings if key[2:8] == (1, 8, 8, 512, 512, 128) and key[8])
    assert set(sdpa.timings[key]) == {sdp.FLASH, sdp.CUDNN}, sdpa.timings[key]
    assert sdpa._choices[key] == min(sdpa.timings[key], key=sdpa.timings[key].get)
    out.backward(dy)
    for got, ref, what in zip((out, q.grad, k.grad, v.grad), _reference(ts, True), ("out", "dq", "dk", "dv")):
        _assert_close(got, ref, what)
    # Another length of the same class reuses the decision.
    count = len(sdpa.timings)
    ts2, (q2, k2, v2, _) = _inputs(1, 8, 8, 480, 480, 128, 2)
    _assert_close(F.scaled_dot_product_attention(q2, k2, v2, is_causal=True), _reference(ts2, True)[0], "out 480")
    assert len(sdpa.timings) == count


@requires_cuda
def test_no_available_kernel_raises() -> None:
    q, k, v = (to_genesis(torch.randn(1, 2, 8, 64, dtype=torch.bfloat16), device=DEVICE) for _ in range(3))
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        with pytest.raises(RuntimeError, match="no available kernel"):
            F.scaled_dot_product_attention(q, k, v, dropout_p=0.5)
    with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
        q32, k32, v32 = (to_genesis(torch.randn(1, 2, 8, 24, dtype=torch.bfloat16), device=DEVICE) for _ in range(3))
        with pytest.raises(RuntimeError, match="no available kernel"):
            F.scaled_dot_product_attention(q32, k32, v32)


@pytest.mark.parametrize("masks", ["causal hint", "causal bool + padding", "float + padding", "per-head bool"])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_multihead_attention_without_weights_runs_the_fused_kernel_as_torch(masks: str, dtype: str) -> None:
    """``nn.MultiheadAttention(need_weights=False)``: the masks merged as torch merges them, into the fused kernel
    where one applies (torch's own CPU flash kernel on the CPU); outputs and gradients as torch's."""
    torch.manual_seed(0)
    E, H, L, N = 16, 4, 6, 3
    ref = torch.nn.MultiheadAttention(E, H).to(getattr(torch, dtype))
    mha = genesis.nn.MultiheadAttention(E, H, device=DEVICE, dtype=getattr(genesis, dtype))
    mha.load_state_dict({k: to_genesis(v) for k, v in ref.state_dict().items()})
    x = torch.randn(L, N, E, generator=torch.Generator().manual_seed(1)).to(getattr(torch, dtype))
    causal = torch.triu(torch.ones(L, L, dtype=torch.bool), 1)
    padding = torch.zeros(N, L, dtype=torch.bool)
    padding[0, -2:] = True
    attn, kpm, hint = {"causal hint": (causal, None, True), "causal bool + padding": (causal, padding, True),
                       "float + padding": (torch.zeros(L, L).masked_fill(causal, float("-inf")), padding, False),
                       "per-head bool": (torch.rand(N * H, L, L, generator=torch.Generator().manual_seed(2)) > 0.8,
                                         None, False)}[masks]
    xr, xg = x.clone().requires_grad_(), to_genesis(x, requires_grad=True)
    out_r, w_r = ref(xr, xr, xr, key_padding_mask=kpm, attn_mask=attn, need_weights=False, is_causal=hint)
    out_g, w_g = mha(xg, xg, xg, key_padding_mask=None if kpm is None else to_genesis(kpm),
                     attn_mask=to_genesis(attn), need_weights=False, is_causal=hint)
    assert w_r is None and w_g is None
    out_r.float().sum().backward()
    out_g.float().sum().backward()
    tol = {"atol": 5e-2, "rtol": 3e-2} if dtype == "bfloat16" else {"atol": 1e-5, "rtol": 1e-4}
    for got, want in ((out_g, out_r), (xg.grad, xr.grad), (mha.in_proj_weight.grad, ref.in_proj_weight.grad)):
        torch.testing.assert_close(to_torch(got).float(), want.float(), **tol)
