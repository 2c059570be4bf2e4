"""Fused neural-network ops (``genesis.ops.fused``, and ``genesis.ops.reduce.Softmax``) and the nn.functional calls
that use them on CUDA.

Each case runs on ``DEVICE`` twice: through ``genesis.nn.functional`` (the fused kernels on CUDA, the composites on
the CPU) and through the fused primitive itself (the backend's kernel: Triton on CUDA, torch on the CPU). Outputs
and every gradient are compared with torch in float64 on the same input values, by the normwise relative error
``||got - ref|| / ||ref||``: float32 under 2e-5, float16 and bfloat16 under 1e-2. Sizes include rows of length
1, non-power-of-two rows and rows longer than one register tile (the kernels' chunked paths).
"""

from __future__ import annotations

import contextlib

import pytest
import torch

import genesis
import genesis.nn.functional as F
from genesis.nn.attention import SDPBackend, sdpa_kernel
from genesis.ops import fused, reduce
from tests.helpers import ACC, DEVICE, TORCH_DTYPE, to_genesis, to_torch

DTYPES = [genesis.float32, genesis.bfloat16, genesis.float16]
BOUND = {genesis.float32: 2e-5, genesis.bfloat16: 1e-2, genesis.float16: 1e-2}
PATHS = ["functional", "primitive"]


def _rand(shape: tuple[int, ...], dtype: genesis.dtype, seed: int, scale: float = 1.0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(shape, generator=g, dtype=torch.float64) * scale).to(TORCH_DTYPE[dtype])


def _leaf(t: torch.Tensor) -> genesis.Tensor:
    return to_genesis(t, requires_grad=True)


def _ref(t: torch.Tensor) -> torch.Tensor:
    return t.detach().double().requires_grad_()


def _close(got: genesis.Tensor, ref: torch.Tensor, dtype: genesis.dtype, what: str) -> None:
    assert got is not None, f"{what}: no gradient"
    assert tuple(got.shape) == tuple(ref.shape), f"{what}: shape {tuple(got.shape)} != {tuple(ref.shape)}"
    assert got.dtype is dtype, f"{what}: dtype {got.dtype} != {dtype}"
    g = to_torch(got).double()
    r = ref.detach().double()
    assert not torch.isnan(g).any() or torch.isnan(r).any(), f"{what}: NaN"
    # A reference that is exactly zero (e.g. the query gradient of attention over a single key) leaves only the
    # rounding noise of the low-precision forward: the norm floor turns the bound into an absolute one there.
    err = ((g - r).norm() / r.norm().clamp_min(1e-3)).item() if r.numel() else 0.0
    assert err < BOUND[dtype], f"{what}: relative error {err:.2e} >= {BOUND[dtype]:.0e} ({dtype})"


def _backward(out: genesis.Tensor, ref: torch.Tensor, seed: int) -> None:
    dy = _rand(tuple(ref.shape), out.dtype, seed)
    out.backward(to_genesis(dy))
    ref.backward(dy.double())


# ---------------------------------------------------------------- softmax


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape,dim", [((7, 37), 1), ((3, 1), -1), ((4, 5, 6), 1), ((2, 20000), 1)],
                         ids=["odd", "len1", "middle-dim", "long"])
@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
def test_softmax(path: str, dtype: genesis.dtype, shape: tuple, dim: int, log: bool) -> None:
    x = _rand(shape, dtype, 0, 3.0)
    xg, xr = _leaf(x), _ref(x)
    if path == "functional":
        out = F.log_softmax(xg, dim) if log else F.softmax(xg, dim)
    else:
        out = reduce.Softmax.apply(xg, dim % len(shape), log)
    ref = torch.log_softmax(xr, dim) if log else torch.softmax(xr, dim)
    _close(out, ref, dtype, "output")
    _backward(out, ref, 1)
    _close(xg.grad, xr.grad, dtype, "grad input")


# ---------------------------------------------------------------- layer_norm / rms_norm


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", [(6, 37), (3, 1), (2, 3, 64), (2, 20000), (67, 48), (5, 4096)],
                         ids=["odd", "len1", "3d", "long", "narrow-many-rows", "wide"])
@pytest.mark.parametrize("rms", [False, True], ids=["layer_norm", "rms_norm"])
def test_norm(path: str, dtype: genesis.dtype, shape: tuple, rms: bool) -> None:
    n = shape[-1]
    x, w, b = _rand(shape, dtype, 0, 2.0), _rand((n,), dtype, 1), _rand((n,), dtype, 2)
    xg, wg, bg = _leaf(x), _leaf(w), _leaf(b)
    xr, wr, br = _ref(x), _ref(w), _ref(b)
    eps = 1e-5
    if rms:
        out = (F.rms_norm(xg, (n,), wg, eps) if path == "functional"
               else fused.LayerNorm.apply(xg, wg, None, eps, True))
        ref = torch.nn.functional.rms_norm(xr, (n,), wr, eps)
    else:
        out = (F.layer_norm(xg, (n,), wg, bg, eps) if path == "functional"
               else fused.LayerNorm.apply(xg, wg, bg, eps, False))
        ref = torch.nn.functional.layer_norm(xr, (n,), wr, br, eps)
    _close(out, ref, dtype, "output")
    _backward(out, ref, 3)
    if not (rms and n == 1):  # d/dx of x / sqrt(x^2 + eps) is O(eps): a float cancellation, not a kernel's error
        _close(xg.grad, xr.grad, dtype, "grad input")
    _close(wg.grad, wr.grad, dtype, "grad weight")
    if not rms:
        _close(bg.grad, br.grad, dtype, "grad bias")


@pytest.mark.parametrize("dtype", [genesis.float32, genesis.bfloat16], ids=str)
def test_norm_without_affine_and_multi_dim_shape(dtype: genesis.dtype) -> None:
    x = _rand((3, 4, 5), dtype, 0)
    xg, xr = _leaf(x), _ref(x)
    out = F.layer_norm(xg, (4, 5))
    ref = torch.nn.functional.layer_norm(xr, (4, 5))
    _close(out, ref, dtype, "output")
    _backward(out, ref, 1)
    _close(xg.grad, xr.grad, dtype, "grad input")


@pytest.mark.parametrize("path", PATHS)
def test_norm_half_input_with_float32_parameters(path: str) -> None:
    x, w, b = _rand((5, 40), genesis.bfloat16, 0), _rand((40,), genesis.float32, 1), _rand((40,), genesis.float32, 2)
    xg, wg, bg = _leaf(x), _leaf(w), _leaf(b)
    xr, wr, br = _ref(x), _ref(w), _ref(b)
    out = (F.layer_norm(xg, (40,), wg, bg) if path == "functional"
           else fused.LayerNorm.apply(xg, wg, bg, 1e-5, False))
    ref = torch.nn.functional.layer_norm(xr, (40,), wr, br)
    _close(out, ref, genesis.bfloat16, "output")
    _backward(out, ref, 3)
    _close(xg.grad, xr.grad, genesis.bfloat16, "grad input")
    _close(wg.grad, wr.grad, genesis.float32, "grad weight")
    _close(bg.grad, br.grad, genesis.float32, "grad bias")


def test_norm_weight_gradient_is_reproducible() -> None:
    x, w = _rand((300, 48), genesis.float32, 0), _rand((48,), genesis.float32, 1)
    grads = []
    for _ in range(2):
        wg = _leaf(w)
        F.rms_norm(to_genesis(x), (48,), wg).sum().backward()
        grads.append(to_torch(wg.grad))
    assert torch.equal(grads[0], grads[1])


# ---------------------------------------------------------------- cross-entropy


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", [(5, 37), (1, 1), (3, 50000)], ids=["odd", "one-class", "long-vocab"])
@pytest.mark.parametrize("smoothing", [0.0, 0.1])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy(path: str, dtype: genesis.dtype, shape: tuple, smoothing: float, reduction: str) -> None:
    n, c = shape
    x = _rand(shape, dtype, 0, 3.0)
    target = torch.randint(0, c, (n,), generator=torch.Generator().manual_seed(1))
    if n > 2:
        target[1] = -100  # ignored row
    xg, xr = _leaf(x), _ref(x)
    tg = to_genesis(target)
    if path == "functional":
        out = F.cross_entropy(xg, tg, reduction=reduction, label_smoothing=smoothing)
    else:
        out = fused.FusedCrossEntropy.apply(xg, tg, -100, smoothing, reduction)
    ref = torch.nn.functional.cross_entropy(xr, target, reduction=reduction, label_smoothing=smoothing)
    _close(out, ref, dtype, "loss")
    _backward(out, ref, 2)
    _close(xg.grad, xr.grad, xg.dtype, "grad logits")


@pytest.mark.parametrize("dtype", [genesis.float32, genesis.bfloat16], ids=str)
def test_cross_entropy_masked_classes(dtype: genesis.dtype) -> None:
    # -inf logits (classes masked out of the vocabulary), including a whole first chunk of a long row.
    x = _rand((3, 9000), dtype, 0, 3.0)
    x[:, :4200] = float("-inf")
    x[1, 5000:] = float("-inf")
    target = torch.tensor([4500, 4300, 8999])
    xg, xr = _leaf(x), _ref(x)
    out = F.cross_entropy(xg, to_genesis(target))
    ref = torch.nn.functional.cross_entropy(xr, target)
    _close(out, ref, dtype, "loss")
    _backward(out, ref, 2)
    _close(xg.grad, xr.grad, dtype, "grad logits")


def test_cross_entropy_every_row_ignored() -> None:
    x = _rand((3, 7), genesis.float32, 0)
    xg = _leaf(x)
    target = torch.full((3,), -100)
    out = F.cross_entropy(xg, to_genesis(target))
    ref = torch.nn.functional.cross_entropy(x.clone().requires_grad_(), target)
    assert torch.isnan(ref) and bool(to_torch(out).isnan())
    F.cross_entropy(xg, to_genesis(target), reduction="sum").backward()
    assert not to_torch(xg.grad).any()


def test_cross_entropy_bad_target_raises() -> None:
    xg = _leaf(_rand((2, 5), genesis.float32, 0))
    with pytest.raises(IndexError):
        F.cross_entropy(xg, to_genesis(torch.tensor([1, 5])))


CE_TARGETS = {"some ignored": [1, -100, 5, 0], "all ignored": [-100, -100, -100, -100]}


def _fused_ce(lib, path: str, x, t, reduction: str):
    """The fused node itself (no smoothing), or nn.functional with label smoothing, which takes the fused node on
    the CPU too (on CUDA every class-index call does)."""
    if lib is genesis and path == "primitive":
        return fused.FusedCrossEntropy.apply(x, t, -100, 0.0, reduction)
    return lib.nn.functional.cross_entropy(x, t, reduction=reduction, label_smoothing=0.1 if path == "functional"
                                           else 0.0)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("targets", list(CE_TARGETS), ids=str)
def test_cross_entropy_one_node_and_double_backward(path: str, reduction: str, targets: str) -> None:
    # One node straight onto the logits, whatever the reduction; with create_graph its gradient is differentiable
    # in the logits and in the output gradient. Every row ignored: mean is nan, every gradient of the logits 0, and
    # the second derivative in the output gradient nan, all as torch.
    x, target = _rand((4, 6), genesis.float32, 0, 2.0), torch.tensor(CE_TARGETS[targets])
    v = _rand((4,) if reduction == "none" else (), genesis.float32, 3)
    xg, vg, tg = _leaf(x), _leaf(v), to_genesis(target)
    xr, vr = _ref(x), _ref(v)
    out = _fused_ce(genesis, path, xg, tg, reduction)
    ref = _fused_ce(torch, path, xr, target, reduction)
    assert out.dtype is genesis.float32 and tuple(out.shape) == tuple(ref.shape)
    assert out.grad_fn.name() == "NllLossBackward0"  # torch's last node of cross_entropy
    assert [n.name() for n, _ in out.grad_fn.next_functions if n is not None] == [ACC]
    (g,) = genesis.autograd.grad(out, xg, vg, create_graph=True)
    (gr,) = torch.autograd.grad(ref, xr, vr, create_graph=True)
    (g * g).sum().backward()
    (gr * gr).sum().backward()
    for got, want, what in ((out, ref, "loss"), (g, gr, "grad"), (xg.grad, xr.grad, "grad of grad . grad in x"),
                            (vg.grad, vr.grad, "... in the output gradient")):
        torch.testing.assert_close(to_torch(got).double(), want.detach(), rtol=1e-4, atol=1e-5, equal_nan=True,
                                   msg=lambda m, what=what: f"{what}: {m}")


# ---------------------------------------------------------------- SwiGLU and RoPE


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", [(3, 37), (1, 1), (2, 4, 3000), (3, 4112)], ids=["odd", "len1", "3d-long", "wide"])
def test_swiglu(path: str, dtype: genesis.dtype, shape: tuple) -> None:
    gate, up = _rand(shape, dtype, 0, 2.0), _rand(shape, dtype, 1)
    gg, ug, gr, ur = _leaf(gate), _leaf(up), _ref(gate), _ref(up)
    out = F.swiglu(gg, ug) if path == "functional" else fused.SwiGLU.apply(gg, ug)
    ref = torch.nn.functional.silu(gr) * ur
    _close(out, ref, dtype, "output")
    _backward(out, ref, 2)
    _close(gg.grad, gr.grad, dtype, "grad gate")
    _close(ug.grad, ur.grad, dtype, "grad up")


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("half", [19, 32])
def test_swiglu_packed_halves(dtype: genesis.dtype, half: int) -> None:
    x = _rand((5, 2 * half), dtype, 0)
    xg, xr = _leaf(x), _ref(x)
    out = F.swiglu(xg)
    g, u = xr.chunk(2, -1)
    ref = torch.nn.functional.silu(g) * u
    _close(out, ref, dtype, "output")
    _backward(out, ref, 1)
    _close(xg.grad, xr.grad, dtype, "grad input")


def _rope_ref(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return x * cos + torch.cat([-x[..., half:], x[..., :half]], -1) * sin


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("layout", ["bhtd", "bthd"])
@pytest.mark.parametrize("head_dim", [8, 128])
def test_rope(path: str, dtype: genesis.dtype, layout: str, head_dim: int) -> None:
    B, H, T, P = 2, 3, 5, 11
    shape = (B, H, T, head_dim) if layout == "bhtd" else (B, T, H, head_dim)
    unsqueeze_dim = 1 if layout == "bhtd" else 2
    x = _rand(shape, dtype, 0)
    pos = torch.tensor([[0, 1, 2, 3, 4], [10, 3, 7, 0, 9]])
    cos, sin = F.rope_tables(head_dim, P, device=DEVICE)
    xg, xr = _leaf(x), _ref(x)
    # Reference tables: the same float32 tables rounded to x's dtype (what the composite multiplies with).
    cr, sr = (to_torch(t).to(TORCH_DTYPE[dtype]).double()[pos].unsqueeze(unsqueeze_dim) for t in (cos, sin))
    if path == "functional":
        out = F.rope(xg, cos, sin, to_genesis(pos), unsqueeze_dim=unsqueeze_dim)
    else:
        out = fused.Rope.apply(xg, cos[to_genesis(pos)].unsqueeze(unsqueeze_dim),
                               sin[to_genesis(pos)].unsqueeze(unsqueeze_dim), False)
    ref = _rope_ref(xr, cr, sr)
    _close(out, ref, dtype, "output")
    _backward(out, ref, 1)
    _close(xg.grad, xr.grad, dtype, "grad input")


@pytest.mark.parametrize("path", PATHS)
def test_double_backward_through_fused_norm_and_loss(path: str) -> None:
    x = _rand((4, 9), genesis.float32, 0)
    w = _rand((9,), genesis.float32, 1)
    target = torch.tensor([1, 0, 8, 3])
    xg, wg, xr, wr = _leaf(x), _leaf(w), _ref(x), _ref(w)
    norm = F.layer_norm(xg, (9,), wg) if path == "functional" else fused.LayerNorm.apply(xg, wg, None, 1e-5, False)
    loss = F.cross_entropy(norm, to_genesis(target), label_smoothing=0.1)
    (gx,) = genesis.autograd.grad(loss, (xg,), create_graph=True)
    (gx * gx).sum().backward()
    ref = torch.nn.functional.cross_entropy(torch.nn.functional.layer_norm(xr, (9,), wr), target,
                                            label_smoothing=0.1)
    (gr,) = torch.autograd.grad(ref, (xr,), create_graph=True)
    (gr * gr).sum().backward()
    _close(gx, gr, genesis.float32, "first gradient")
    _close(xg.grad, xr.grad, genesis.float32, "second-order input gradient")
    _close(wg.grad, wr.grad, genesis.float32, "second-order weight gradient")


# ---------------------------------------------------------------- attention


def _attention_ref(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None,
                   causal: bool) -> torch.Tensor:
    group = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(group, 1), v.repeat_interleave(group, 1)
    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf")) if mask.dtype == torch.bool else scores + mask
    if causal:
        L, S = scores.shape[-2:]
        scores = scores.masked_fill(~torch.ones(L, S, dtype=torch.bool).tril(), float("-inf"))
    return torch.softmax(scores, -1) @ v


ATTENTION_CASES = {
    "ragged-causal": (2, 4, 4, 37, 37, 64, True, None),
    "gqa-float-mask": (1, 4, 2, 19, 45, 128, False, "float"),
    "length1": (1, 2, 1, 1, 1, 64, True, None),
    "long-bool-mask": (1, 2, 2, 300, 300, 64, True, "bool"),
}


# On CUDA each case also runs with one fused kernel forced (the composite switched off, so nothing else can run).
ATTENTION_KERNELS = {"default": None, "flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION}


@pytest.mark.parametrize("kernel", list(ATTENTION_KERNELS) if DEVICE == "cuda" else ["default"])
@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("dtype", [genesis.bfloat16, genesis.float16], ids=str)
@pytest.mark.parametrize("case", list(ATTENTION_CASES))
def test_attention(kernel: str, path: str, dtype: genesis.dtype, case: str) -> None:
    forced = ATTENTION_KERNELS[kernel]
    with sdpa_kernel(forced) if forced is not None else contextlib.nullcontext():
        _check_attention(path, dtype, case)


def _check_attention(path: str, dtype: genesis.dtype, case: str) -> None:
    B, H, HK, L, S, D, causal, mask_kind = ATTENTION_CASES[case]
    q, k, v = _rand((B, H, L, D), dtype, 0), _rand((B, HK, S, D), dtype, 1), _rand((B, HK, S, D), dtype, 2)
    mask = None
    if mask_kind == "float":
        mask = _rand((L, S), dtype, 3)
    elif mask_kind == "bool":
        mask = torch.rand((1, 1, L, S), generator=torch.Generator().manual_seed(3)) > 0.2
        mask[..., 0] = True  # every query sees at least one key
    (qg, kg, vg), (qr, kr, vr) = (_leaf(t) for t in (q, k, v)), (_ref(t) for t in (q, k, v))
    mg = to_genesis(mask) if mask is not None else None
    if path == "functional":
        out = F.scaled_dot_product_attention(qg, kg, vg, mg, is_causal=causal, enable_gqa=H != HK)
    else:
        if mg is not None and mg.dtype is genesis.bool:
            mg = genesis.where(mg, 0.0, float("-inf")).float()
        out = fused.Attention.apply(qg, kg, vg, mg, causal, D ** -0.5)
    ref = _attention_ref(qr, kr, vr, mask.double() if mask is not None and mask_kind == "float" else mask, causal)
    _close(out, ref, dtype, "output")
    _backward(out, ref, 4)
    _close(qg.grad, qr.grad, dtype, "grad q")
    _close(kg.grad, kr.grad, dtype, "grad k")
    _close(vg.grad, vr.grad, dtype, "grad v")


@pytest.mark.parametrize("kernel", list(ATTENTION_KERNELS) if DEVICE == "cuda" else ["default"])
@pytest.mark.parametrize("kv_heads", [4, 2], ids=["mha", "gqa"])
def test_attention_on_projection_views(kernel: str, kv_heads: int) -> None:
    """q, k, v as a GPT block makes them: views of one projection, (B, L, H, D) transposed to (B, H, L, D); the
    output goes back through ``transpose(1, 2).reshape``. Values and the projection's gradient as torch's."""
    B, L, H, D = 2, 40, 4, 64
    dtype = genesis.bfloat16
    x = _rand((B, L, (H + 2 * kv_heads) * D), dtype, 5)
    xg, xr = _leaf(x), _ref(x)
    forced = ATTENTION_KERNELS[kernel]

    def run(lib, t):
        q, k, v = t.split([H * D, kv_heads * D, kv_heads * D], dim=2)
        q = q.view(B, L, H, D).transpose(1, 2)
        k, v = (a.view(B, L, kv_heads, D).transpose(1, 2) for a in (k, v))
        if lib is torch:
            y = _attention_ref(q, k, v, None, True)
        else:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=kv_heads != H)
        return y.transpose(1, 2).reshape(B, L, H * D)

    with sdpa_kernel(forced) if forced is not None else contextlib.nullcontext():
        out = run(genesis, xg)
        ref = run(torch, xr)
        _close(out, ref, dtype, "output")
        _backward(out, ref, 6)
    _close(xg.grad, xr.grad, dtype, "grad of the projection")


# ---------------------------------------------------------------- Adam / AdamW step


@pytest.mark.parametrize("dtype", [genesis.float32, genesis.bfloat16], ids=str)
@pytest.mark.parametrize("decoupled", [True, False], ids=["adamw", "adam"])
def test_adam_step(dtype: genesis.dtype, decoupled: bool) -> None:
    n = 1000
    p0 = _rand((n,), dtype, 0)
    pr = torch.nn.Parameter(p0.double())
    opt_cls = torch.optim.AdamW if decoupled else torch.optim.Adam
    opt = opt_cls([pr], lr=1e-2, betas=(0.8, 0.95), eps=1e-6, weight_decay=0.1)
    pg = to_genesis(p0)
    m = genesis.zeros((n,), dtype=genesis.float32, device=DEVICE)
    v = genesis.zeros((n,), dtype=genesis.float32, device=DEVICE)
    for step in range(1, 4):
        grad = _rand((n,), dtype, step)
        pr.grad = grad.double()
        opt.step()
        be = pg.ndarray.backend
        be.adam_step_(pg.ndarray, to_genesis(grad).ndarray, m.ndarray, v.ndarray, 1e-2, 0.8, 0.95, 1e-6, 0.1,
                      decoupled, step)
        # bfloat16 parameters are rounded after every step: compare the update against torch's float64 one.
        _close(pg, pr.detach(), dtype, f"parameter after step {step}")
        _close(m, opt.state[pr]["exp_avg"], genesis.float32, f"exp_avg after step {step}")
        _close(v, opt.state[pr]["exp_avg_sq"], genesis.float32, f"exp_avg_sq after step {step}")
        pr.data.copy_(to_torch(pg).double())  # continue from Genesis's rounded parameters


def test_adamw_optimizer_matches_torch() -> None:
    w0 = _rand((64, 33), genesis.float32, 0)
    wg = genesis.nn.Parameter(to_genesis(w0))
    wr = torch.nn.Parameter(w0.clone())
    og = genesis.optim.AdamW([wg], lr=1e-2)
    ot = torch.optim.AdamW([wr], lr=1e-2)
    for step in range(3):
        grad = _rand((64, 33), genesis.float32, step + 1)
        wg.grad = to_genesis(grad)
        wr.grad = grad
        og.step()
        ot.step()
    _close(wg.detach(), wr.detach(), genesis.float32, "parameter")


# ---------------------------------------------------------------- multi-tensor optimizer steps and unscaling

# Odd sizes: one element, one program's worth plus a tail (4096 elements a program on CUDA), an empty parameter.
OPT_SHAPES = [(1,), (5000,), (3, 7), (0,), (64, 65)]


def _opt_params(lib: object, dtype: genesis.dtype, seed: int) -> list:
    values = [_rand(shape, dtype, seed + i) for i, shape in enumerate(OPT_SHAPES)]
    if lib is torch:
        return [torch.nn.Parameter(v.double()) for v in values]
    return [genesis.nn.Parameter(to_genesis(v)) for v in values]


@pytest.mark.parametrize("opt_name,kwargs", [
    ("AdamW", {"lr": 1e-2, "betas": (0.8, 0.95), "weight_decay": 0.1}),
    ("Adam", {"lr": 1e-2, "weight_decay": 0.1, "maximize": True}),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "dampening": 0.1, "weight_decay": 0.01}),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True, "maximize": True}),
    ("SGD", {"lr": 0.1}),
], ids=["adamw", "adam-l2-maximize", "sgd-momentum", "sgd-nesterov-maximize", "sgd-plain"])
def test_fused_multi_tensor_step_matches_torch(opt_name: str, kwargs: dict) -> None:
    gp, tp = _opt_params(genesis, genesis.float32, 0), _opt_params(torch, genesis.float32, 0)
    og = getattr(genesis.optim, opt_name)(gp, fused=True, **kwargs)
    ot = getattr(torch.optim, opt_name)(tp, **kwargs)
    for step in range(3):
        for i, (a, b) in enumerate(zip(gp, tp)):
            grad = _rand(tuple(b.shape), genesis.float32, 100 * step + i)
            a.grad, b.grad = to_genesis(grad), grad.double()
        og.step()
        ot.step()
    for i, (a, b) in enumerate(zip(gp, tp)):
        _close(a.detach(), b.detach(), genesis.float32, f"parameter {i} after 3 steps")


@pytest.mark.parametrize("dtype", [genesis.bfloat16, genesis.float16], ids=str)
@pytest.mark.parametrize("path", ["default", "multi-tensor", "per-parameter"])
def test_adamw_master_weights(dtype: genesis.dtype, path: str) -> None:
    gp, tp = _opt_params(genesis, dtype, 0), _opt_params(torch, dtype, 0)
    options = {"default": {}, "multi-tensor": {"fused": False, "foreach": True},
               "per-parameter": {"fused": False, "foreach": False}}[path]
    og = genesis.optim.AdamW(gp, lr=1e-3, master_weights=True, **options)
    ot = torch.optim.AdamW(tp, lr=1e-3)  # float64: what the float32 master copy must track
    for step in range(3):
        for i, (a, b) in enumerate(zip(gp, tp)):
            grad = _rand(tuple(b.shape), dtype, 100 * step + i)
            a.grad, b.grad = to_genesis(grad), grad.double()
        og.step()
        ot.step()
    for i, (a, b) in enumerate(zip(gp, tp)):
        master = og.state[a]["master_param"]
        assert master.dtype is genesis.float32 and og.state[a]["exp_avg"].dtype is genesis.float32
        _close(master, b.detach(), genesis.float32, f"master weight {i}")
        assert genesis.equal(a.detach(), master.to(dtype)), f"parameter {i} is not its rounded master weight"
    # A state dict round trip keeps the float32 state of the half-precision parameters.
    fresh = genesis.optim.AdamW(gp, lr=1e-3, master_weights=True, **options)
    fresh.load_state_dict(og.state_dict())
    assert fresh.state[gp[1]]["master_param"].dtype is genesis.float32


def test_fused_unscale_finds_inf_and_scales_every_gradient() -> None:
    from genesis.ops.fused import fused_unscale_

    values = [_rand((5000,), genesis.float32, 0), _rand((3, 7), genesis.float32, 1), _rand((1,), genesis.float32, 2)]
    for bad in (None, 1, 2):
        grads = [to_genesis(v) for v in values]
        expect = [v * 0.25 for v in values]
        if bad is not None:
            grads[bad] = to_genesis(values[bad].clone().fill_(float("inf")))
        flag = fused_unscale_(grads, 0.25)
        assert float(flag.item()) == (0.0 if bad is None else 1.0)
        for i, (got, ref) in enumerate(zip(grads, expect)):
            if i != bad:
                _close(got, ref, genesis.float32, f"unscaled gradient {i}")
