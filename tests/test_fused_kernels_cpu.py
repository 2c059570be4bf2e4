"""The fused neural-network Triton kernels on a machine without a GPU: each compiles ahead of time for sm_90, and
each computes the right values (float32, against torch) under the Triton interpreter on CPU tensors.

A third check runs the CUDA backend's launchers themselves (``genesis/_impl/cuda/nn_fused.py``: layouts, strides,
broadcast tables and masks, grouped-query heads, block choices) under the interpreter, with CPU arrays standing in for
device memory, against the CPU backend's implementation of the same primitives.

Skips with a reason when Triton is not installed. The interpreter checks run in subprocesses because
``TRITON_INTERPRET=1`` must be set before any ``@triton.jit`` function is created. Triton 3.6's interpreter turns
runtime loop bounds into 1-element numpy arrays, which numpy >= 2.4 refuses to convert with ``int()`` (fixed in
Triton 3.9): the subprocess converts them through ``reshape(-1)[0]`` instead, so the looping kernels run too.
"""

from __future__ import annotations

import os

import pytest

from tests.kernel_modules import compile_for_sm90, kernel_modules, run_interpreted

triton = pytest.importorskip("triton", reason="Triton is not installed (pip install triton): kernel checks skipped")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAMES = ("nn_norm", "nn_cross_entropy", "nn_rope_swiglu", "nn_softmax", "nn_attention", "nn_adamw")


def _specs() -> list[tuple]:
    k = kernel_modules(NAMES)
    nk, ck, rk, sk = k["nn_norm"], k["nn_cross_entropy"], k["nn_rope_swiglu"], k["nn_softmax"]
    ak, adk = k["nn_attention"], k["nn_adamw"]
    bf = "*bf16:16"
    f16 = "*fp16:16"
    f32 = "*fp32:16"
    attn = ("i64:16",) * 13 + ("i32", "i32", "i32", "i32", "fp32")  # strides marked 16-aligned, as the launcher does
    attn_bwd = ("i64:16",) * 16 + ("i32", "i32", "i32", "i32", "fp32")  # ... and dO's strides
    mt = ("*i64:16", "*i64:16", "*i32:16", "*i32:16", "i32")  # multi-tensor tables and the tensor count
    return [
        ("adam step fp32", adk.adam_step, (f32, f32, f32, f32, "i64", *("fp32",) * 7), (2048,)),
        ("adam step bf16 params fp32 states", adk.adam_step, (bf, bf, f32, f32, "i64", *("fp32",) * 7), (2048,)),
        ("attention fwd bf16 d128 causal", ak.attn_fwd, (bf, bf, bf, bf, bf, f32, *attn), (128, 128, 64, True, False)),
        ("attention fwd fp16 d64 mask", ak.attn_fwd, (f16, f16, f16, f32, f16, f32, *attn), (64, 128, 64, False, True)),
        ("attention bwd pre", ak.attn_bwd_pre, (bf, bf, f32, "i64:16", "i64:16", "i64:16", "i32", "i32", "i32"),
         (128, 64)),
        ("attention bwd dk dv bf16 d128", ak.attn_bwd_dkdv, (bf, bf, bf, bf, bf, f32, f32, bf, bf, *attn_bwd),
         (128, 32, 64, True, False)),
        ("attention bwd dq fp16 d64 mask", ak.attn_bwd_dq, (f16, f16, f16, f16, f16, f32, f32, f16, *attn_bwd),
         (64, 64, 64, False, True)),
        ("adam multi-tensor fp32", adk.adam_multi_step, (f32,) * 5 + mt + ("fp32",) * 11,
         (False, False, False, 4096, 4, 4, 4, 4, 4)),
        ("adam multi-tensor bf16 master weights", adk.adam_multi_step, (bf, bf, f32, f32, f32) + mt + ("fp32",) * 11,
         (True, False, False, 4096, 8, 8, 4, 4, 1)),
        ("adam multi-tensor capturable (lr, step on the device)", adk.adam_multi_step,
         (f32,) * 5 + mt + ("fp32",) * 8 + (f32, f32, "fp32"), (False, True, True, 4096, 4, 4, 4, 4, 4)),
        ("sgd multi-tensor nesterov", adk.sgd_multi_step, (f32,) * 3 + mt + ("fp32",) * 5,
         (True, False, True, 4096, 4, 4, 4)),
        ("unscale multi-tensor bf16", adk.unscale_multi, (bf, f32) + mt + ("fp32",), (4096, 8)),
        ("layer_norm fwd bf16", nk.norm_fwd, (bf, bf, bf, bf, f32, f32, "i32", "i32:16", "fp32"),
         (False, True, True, 1, 4096, True)),
        ("rms_norm fwd narrow rows", nk.norm_fwd, (bf, bf, bf, bf, f32, f32, "i32", "i32:16", "fp32"),
         (True, True, False, 16, 256, True)),
        ("rms_norm fwd long rows", nk.norm_fwd, (f32, f32, f32, f32, f32, f32, "i32", "i32", "fp32"),
         (True, True, False, 1, 4096, False)),
        ("layer_norm bwd bf16", nk.norm_bwd, (bf, bf, bf, f32, f32, bf, f32, f32, "i32", "i32:16"),
         (False, True, True, True, 1, 4096, True)),
        ("layer_norm bwd narrow rows", nk.norm_bwd, (bf, bf, bf, f32, f32, bf, f32, f32, "i32", "i32:16"),
         (False, True, True, True, 8, 256, True)),
        ("rms_norm bwd long rows", nk.norm_bwd, (f32, f32, f32, f32, f32, f32, f32, f32, "i32", "i32"),
         (True, True, True, False, 1, 2048, False)),
        ("norm weight/bias gradient reduction", nk.norm_bwd_reduce, (f32, f32, bf, f32, "i32", "i32:16"),
         (True, True, 32, 64)),
        ("cross_entropy fwd bf16", ck.cross_entropy_fwd,
         (bf, "*i64:16", f32, f32, "*i64", "i32:16", "i64", "fp32", "i64"), (4096, True)),
        ("cross_entropy mean reduction", ck.cross_entropy_reduce, (f32, "*i64:16", bf, f32, "i64", "i64"),
         (True, 1024)),
        ("cross_entropy bwd bf16", ck.cross_entropy_bwd,
         (bf, "*i64:16", f32, bf, f32, bf, "i32:16", "i64", "fp32", "i64"), (4096, True)),
        ("swiglu fwd bf16", rk.swiglu_fwd, (bf, bf, bf, "i32:16", "i32:16", "i32:16", "i32:16"), (1024,)),
        ("swiglu bwd bf16", rk.swiglu_bwd, (bf, bf, bf, bf, bf, "i32", "i32", "i32"), (1024,)),
        ("rope bf16 fp32 tables", rk.rope_kernel, (bf, f32, f32, bf, "i32", "i32", "i32", "i64", "i64", "i64"),
         (64, 16, 64, False)),
        ("rope inverse fp16", rk.rope_kernel,
         ("*fp16:16", "*fp16:16", "*fp16:16", "*fp16:16", "i32", "i32", "i32", "i64", "i64", "i64"),
         (32, 16, 32, True)),
        ("softmax bwd bf16", sk.softmax_bwd, (bf, bf, bf, "i32"), (False, 8192, True)),
        ("log_softmax bwd long rows", sk.softmax_bwd, (f32, f32, f32, "i32"), (True, 4096, False)),
    ]


@pytest.mark.parametrize("spec", _specs(), ids=lambda s: s[0])
def test_kernel_compiles_for_sm90(spec: tuple) -> None:
    _, fn, types_, consts = spec
    compile_for_sm90(fn, types_, consts)


_INTERPRETED = r"""
import importlib, os, sys
import torch
from tests.interpreter_stubs import patch_loop_bounds

patch_loop_bounds()
root = sys.argv[1]
from tests.kernel_modules import bare_cuda_package
bare_cuda_package(root)
nk = importlib.import_module("genesis._impl.cuda.kernels.nn_norm")
ck = importlib.import_module("genesis._impl.cuda.kernels.nn_cross_entropy")
rk = importlib.import_module("genesis._impl.cuda.kernels.nn_rope_swiglu")
sk = importlib.import_module("genesis._impl.cuda.kernels.nn_softmax")
g = torch.Generator().manual_seed(0)


def close(got, ref, what):
    torch.testing.assert_close(got, ref.float(), rtol=1e-4, atol=1e-5, msg=lambda m: what + ": " + m)


# layer_norm / rms_norm (N = 37: a non-power-of-two row; one-pass and chunked variants)
M, N = 5, 37
x = torch.randn(M, N, generator=g, dtype=torch.float64)
w, b = torch.randn(N, generator=g, dtype=torch.float64), torch.randn(N, generator=g, dtype=torch.float64)
dy = torch.randn(M, N, generator=g, dtype=torch.float64)
for rms in (False, True):
    for one_pass, block in ((True, 64), (False, 16)):
        xr, wr, br = (t.clone().requires_grad_() for t in (x, w, b))
        if rms:
            ref = torch.nn.functional.rms_norm(xr, (N,), wr, 1e-5)
        else:
            ref = torch.nn.functional.layer_norm(xr, (N,), wr, br, 1e-5)
        ref.backward(dy)
        y, mean, rstd = torch.empty(M, N), torch.empty(M), torch.empty(M)
        xf, wf, bf = x.float(), w.float(), b.float()
        rows = 2 if one_pass else 1  # two rows per program: the last block is half empty
        nk.norm_fwd[((M + rows - 1) // rows,)](xf, wf, bf, y, mean, rstd, M, N, 1e-5, RMS=rms, HAS_W=True,
                                               HAS_B=not rms, BLOCK_M=rows, BLOCK_N=block, ONE_PASS=one_pass)
        close(y, ref.detach(), f"norm fwd rms={rms} one_pass={one_pass}")
        G = 2
        dx, dwp, dbp = torch.empty(M, N), torch.empty(G, N), torch.empty(G, N)
        nk.norm_bwd[(G,)](dy.float(), xf, wf, mean, rstd, dx, dwp, dbp, M, N, RMS=rms, HAS_W=True, NEED_DW=True,
                          NEED_DB=not rms, BLOCK_M=rows, BLOCK_N=block, ONE_PASS=one_pass)
        close(dx, xr.grad, f"norm dx rms={rms} one_pass={one_pass}")
        dw, db = torch.empty(N), torch.empty(N)
        nk.norm_bwd_reduce[(3,)](dwp, dbp, dw, db, G, N, NEED_DW=True, NEED_DB=not rms, BLOCK_P=4, BLOCK_N=16)
        close(dw, wr.grad, f"norm dw rms={rms} one_pass={one_pass}")
        if not rms:
            close(db, br.grad, f"norm db one_pass={one_pass}")

# cross-entropy: V = 50 over 16-wide chunks, an ignored row, label smoothing
M, V = 4, 50
logits = torch.randn(M, V, generator=g, dtype=torch.float64) * 3
target = torch.tensor([3, -100, 49, 0])
for smoothing in (0.0, 0.1):
    xr = logits.clone().requires_grad_()
    ref = torch.nn.functional.cross_entropy(xr, target, reduction="none", label_smoothing=smoothing)
    dl = torch.randn(M, generator=g, dtype=torch.float64)
    ref.backward(dl)
    loss, lse, flag = torch.empty(M), torch.empty(M), torch.zeros(3, dtype=torch.int64)
    ck.cross_entropy_fwd[(M,)](logits.float(), target, loss, lse, flag, V, -100, smoothing, 7, BLOCK_V=16,
                               SMOOTH=smoothing > 0)
    close(loss, ref.detach(), f"cross_entropy loss smoothing={smoothing}")
    close(lse, torch.logsumexp(logits, 1), "cross_entropy lse")
    assert flag.tolist() == [0, 0, 0], "cross_entropy flagged a valid target"
    dx, one = torch.empty(M, V), torch.ones(1)
    ck.cross_entropy_bwd[(M, 4)](logits.float(), target, lse, dl.float(), one, dx, V, -100, smoothing, 1,
                                 BLOCK_V=16, DIVIDE=False)
    close(dx, xr.grad, f"cross_entropy dlogits smoothing={smoothing}")
    # The reduced forms: a mean over the 3 non-ignored rows (block 2: the loop runs twice), its gradient divided
    # by that count from a single (stride 0) loss gradient.
    out, count = torch.empty(1), torch.empty(1)
    ck.cross_entropy_reduce[(1,)](loss, target, out, count, M, -100, MEAN=True, BLOCK=2)
    xm = logits.clone().requires_grad_()
    mean = torch.nn.functional.cross_entropy(xm, target, label_smoothing=smoothing)
    mean.backward()
    close(out[0], mean.detach(), f"cross_entropy mean smoothing={smoothing}")
    assert count.item() == 3.0
    ck.cross_entropy_bwd[(M, 4)](logits.float(), target, lse, one, count, dx, V, -100, smoothing, 0,
                                 BLOCK_V=16, DIVIDE=True)
    close(dx, xm.grad, f"cross_entropy mean dlogits smoothing={smoothing}")
masked = logits.clone()
masked[0, :20] = float("-inf")  # a whole 16-wide chunk and part of the next hold masked-out classes
masked[2, 30:49] = float("-inf")
ref = torch.nn.functional.cross_entropy(masked, target, reduction="none")
loss, lse, flag = torch.empty(M), torch.empty(M), torch.zeros(3, dtype=torch.int64)
ck.cross_entropy_fwd[(M,)](masked.float(), target, loss, lse, flag, V, -100, 0.0, 7, BLOCK_V=16, SMOOTH=False)
close(loss, ref, "cross_entropy loss with -inf logits")
# A target outside [0, V) is recorded in the flag (code, value, size) and read as class 0, never out of bounds.
ck.cross_entropy_fwd[(M,)](logits.float(), torch.tensor([3, -100, 50, 0]), loss, lse, flag, V, -100, 0.0, 7,
                           BLOCK_V=16, SMOOTH=False)
assert flag.tolist() == [7, 50, V], flag

# SwiGLU on the halves of a packed (M, 2H) array (row stride 2H), H = 24 over 16-wide blocks
M, H = 3, 24
packed = torch.randn(M, 2 * H, generator=g, dtype=torch.float64)
gr, ur = packed[:, :H].clone().requires_grad_(), packed[:, H:].clone().requires_grad_()
ref = torch.nn.functional.silu(gr) * ur
dy = torch.randn(M, H, generator=g, dtype=torch.float64)
ref.backward(dy)
pf = packed.float()
out = torch.empty(M, H)
rk.swiglu_fwd[(M, 2)](pf[:, :H], pf[:, H:], out, H, 2 * H, 2 * H, H, BLOCK_H=16)
close(out, ref.detach(), "swiglu fwd")
dg, du = torch.empty(M, H), torch.empty(M, H)
rk.swiglu_bwd[(M, 2)](dy.float(), pf[:, :H], pf[:, H:], dg, du, H, 2 * H, 2 * H, BLOCK_H=16)
close(dg, gr.grad, "swiglu dgate")
close(du, ur.grad, "swiglu dup")

# RoPE: x (B, H, T, D) with (T, D) tables broadcast over batch and heads; the inverse is the gradient
B, Hh, T, D = 2, 3, 5, 12
x = torch.randn(B, Hh, T, D, generator=g, dtype=torch.float64)
ang = torch.randn(T, D // 2, generator=g, dtype=torch.float64)
cos, sin = torch.cat([ang, ang], -1).cos(), torch.cat([ang, ang], -1).sin()
xr = x.clone().requires_grad_()
ref = xr * cos + torch.cat([-xr[..., D // 2:], xr[..., :D // 2]], -1) * sin
dy = torch.randn(B, Hh, T, D, generator=g, dtype=torch.float64)
ref.backward(dy)
out = torch.empty(B, Hh, T, D)
R = B * Hh * T
rk.rope_kernel[(3,)](x.float(), cos.float(), sin.float(), out, R, Hh, T, 0, 0, D, HALF=D // 2, BLOCK_R=16,
                     BLOCK_D=8, INVERSE=False)
close(out, ref.detach(), "rope")
rk.rope_kernel[(3,)](dy.float(), cos.float(), sin.float(), out, R, Hh, T, 0, 0, D, HALF=D // 2, BLOCK_R=16,
                     BLOCK_D=8, INVERSE=True)
close(out, xr.grad, "rope inverse")

# softmax / log_softmax backward, K = 37 (one pass and chunked)
M, K = 4, 37
x = torch.randn(M, K, generator=g, dtype=torch.float64)
dy = torch.randn(M, K, generator=g, dtype=torch.float64)
for log in (False, True):
    xr = x.clone().requires_grad_()
    y = torch.log_softmax(xr, 1) if log else torch.softmax(xr, 1)
    y.backward(dy)
    for one_pass, block in ((True, 64), (False, 16)):
        dx = torch.empty(M, K)
        sk.softmax_bwd[(M,)](dy.float(), y.detach().float(), dx, K, LOG=log, BLOCK_K=block, ONE_PASS=one_pass)
        close(dx, xr.grad, f"softmax bwd log={log} one_pass={one_pass}")

# flash attention: GQA (4 query heads over 2 key heads), ragged lengths, an additive mask, causal with L > S and
# L < S; nested tiles (32-row query blocks over 16-key blocks, 16-row query blocks inside 32-key blocks) so that both
# the unmasked loops and the diagonal / tail loops run
ak = importlib.import_module("genesis._impl.cuda.kernels.nn_attention")
for B, H, HK, L, S, D, causal, use_mask in ((1, 4, 2, 19, 33, 16, False, True), (1, 2, 1, 40, 17, 16, True, False),
                                            (1, 2, 1, 70, 96, 16, True, True)):
    q = torch.randn(B, H, L, D, generator=g, dtype=torch.float64)
    k, v = (torch.randn(B, HK, S, D, generator=g, dtype=torch.float64) for _ in range(2))
    mask = torch.randn(L, S, generator=g, dtype=torch.float64) if use_mask else None
    qr, kr, vr = (t.clone().requires_grad_() for t in (q, k, v))
    scores = qr @ kr.repeat_interleave(H // HK, 1).transpose(-1, -2) * D ** -0.5
    if use_mask:
        scores = scores + mask
    if causal:
        scores = scores.masked_fill(~torch.ones(L, S, dtype=torch.bool).tril(), float("-inf"))
    ref = torch.softmax(scores, -1) @ vr.repeat_interleave(H // HK, 1)
    # dO as the gradient of a (B, L, H, D) output transposed to (B, H, L, D): read through its strides
    dy = torch.randn(B, L, H, D, generator=g, dtype=torch.float64).transpose(1, 2)
    ref.backward(dy)
    qf, kf, vf, dyf = q.float(), k.float(), v.float(), dy.float()
    do_strides = dyf.stride()[:3]
    mf = mask.float().expand(B, H, L, S) if use_mask else qf
    strides = [*qf.stride()[:3], *kf.stride()[:3], *vf.stride()[:3], *(mf.stride() if use_mask else (0,) * 4)]
    args = (*strides, H, H // HK, L, S, D ** -0.5)
    meta = dict(HEAD_D=D, BLOCK_M=32, BLOCK_N=16, CAUSAL=causal, HAS_MASK=use_mask)
    meta_kv = dict(meta, BLOCK_M=16, BLOCK_N=32)
    o, lse, delta = torch.empty(B, H, L, D), torch.empty(B * H, L), torch.empty(B * H * L)
    ak.attn_fwd[((L + 31) // 32, B * H)](qf, kf, vf, mf, o, lse, *args, **meta)
    close(o, ref.detach(), f"attention out causal={causal}")
    ak.attn_bwd_pre[((B * H * L + 15) // 16,)](o, dyf, delta, *do_strides, B * H * L, H, L, HEAD_D=D, BLOCK_M=16)
    dq, dk, dv = torch.empty(B, H, L, D), torch.empty(B, HK, S, D), torch.empty(B, HK, S, D)
    bwd_args = (*strides, *do_strides, H, H // HK, L, S, D ** -0.5)
    ak.attn_bwd_dkdv[((S + 31) // 32, B * HK)](qf, kf, vf, mf, dyf, lse, delta, dk, dv, *bwd_args, **meta_kv)
    ak.attn_bwd_dq[((L + 31) // 32, B * H)](qf, kf, vf, mf, dyf, lse, delta, dq, *bwd_args, **meta)
    close(dq, qr.grad, "attention dq")
    close(dk, kr.grad, "attention dk")
    close(dv, vr.grad, "attention dv")

# Adam / AdamW step against torch's optimizers, three steps
adk = importlib.import_module("genesis._impl.cuda.kernels.nn_adamw")
for decoupled in (True, False):
    p0 = torch.randn(100, generator=g)
    ref = torch.nn.Parameter(p0.double())
    opt = (torch.optim.AdamW if decoupled else torch.optim.Adam)([ref], lr=1e-2, betas=(0.8, 0.95), eps=1e-6,
                                                                weight_decay=0.1)
    p, m, v = p0.clone(), torch.zeros(100), torch.zeros(100)
    for step in range(1, 4):
        grad = torch.randn(100, generator=g)
        ref.grad = grad.double()
        opt.step()
        l2, decay = (0.0, 1 - 1e-2 * 0.1) if decoupled else (0.1, 1.0)
        adk.adam_step[(1,)](p, grad, m, v, 100, 0.8, 0.95, 1e-6, l2, decay, 1e-2 / (1 - 0.8 ** step),
                            (1 - 0.95 ** step) ** 0.5, BLOCK=128)
        close(p, ref.detach(), f"adam step {step} decoupled={decoupled}")
        close(m, opt.state[ref]["exp_avg"], "adam exp_avg")
        close(v, opt.state[ref]["exp_avg_sq"], "adam exp_avg_sq")

# Multi-tensor Adam over three tensors (sizes 300, 1, 130 in 128-element programs: whole and masked blocks), each
# list held in one buffer at element offsets; maximize with L2 weight decay
sizes, starts = (300, 1, 130), (0, 304, 320)
p, m, v = torch.randn(512, generator=g), torch.zeros(512), torch.zeros(512)
grad = torch.randn(512, generator=g)
refs = [torch.nn.Parameter(p[s:s + n].double()) for s, n in zip(starts, sizes)]
opt = torch.optim.Adam(refs, lr=1e-2, betas=(0.8, 0.95), eps=1e-6, weight_decay=0.1, maximize=True)
blocks = [(n + 127) // 128 for n in sizes]
owner = torch.tensor([t for t, b in enumerate(blocks) for _ in range(b)], dtype=torch.int32)
first = torch.tensor([0, blocks[0], blocks[0] + blocks[1]], dtype=torch.int32)
offsets = torch.tensor([starts] * 5, dtype=torch.int64)
for step in range(1, 3):
    for r, s, n in zip(refs, starts, sizes):
        r.grad = grad[s:s + n].double()
    opt.step()
    adk.adam_multi_step[(int(sum(blocks)),)](p, grad, m, v, p, offsets, torch.tensor(sizes), owner, first, 3, 0.8,
                                             0.95, 1e-6, 0.1, 1.0, 1e-2 / (1 - 0.8 ** step),
                                             (1 - 0.95 ** step) ** 0.5, -1.0, 0.0, 0.0, 0.0, HAS_MASTER=False,
                                             LR_PTR=False, STEP_PTR=False, BLOCK=128, AP=1, AG=1, AM=1, AV=1, AW=1)
    for r, s, n in zip(refs, starts, sizes):
        close(p[s:s + n], r.detach(), f"multi-tensor adam step {step}")

# The same step with the learning rate and the step count read from the device (capturable), AdamW's decay
p, m, v = torch.randn(512, generator=g), torch.zeros(512), torch.zeros(512)
refs = [torch.nn.Parameter(p[s:s + n].double()) for s, n in zip(starts, sizes)]
opt = torch.optim.AdamW(refs, lr=1e-2, betas=(0.8, 0.95), eps=1e-6, weight_decay=0.1)
for step in range(1, 3):
    for r, s, n in zip(refs, starts, sizes):
        r.grad = grad[s:s + n].double()
    opt.step()
    adk.adam_multi_step[(int(sum(blocks)),)](p, grad, m, v, p, offsets, torch.tensor(sizes), owner, first, 3, 0.8,
                                             0.95, 1e-6, 0.0, 1.0, 0.0, 1.0, 1.0, torch.tensor([1e-2]),
                                             torch.tensor([float(step)]), 0.1, HAS_MASTER=False, LR_PTR=True,
                                             STEP_PTR=True, BLOCK=128, AP=1, AG=1, AM=1, AV=1, AW=1)
    for r, s, n in zip(refs, starts, sizes):
        close(p[s:s + n], r.detach(), f"capturable multi-tensor adam step {step}")

# Multi-tensor SGD (Nesterov momentum, weight decay, maximize) over the same three tensors; the first step fills the
# momentum buffers
for nesterov, dampening in ((True, 0.0), (False, 0.3)):
    p, buf = torch.randn(512, generator=g), torch.zeros(512)
    refs = [torch.nn.Parameter(p[s:s + n].double()) for s, n in zip(starts, sizes)]
    opt = torch.optim.SGD(refs, lr=0.1, momentum=0.9, dampening=dampening, nesterov=nesterov, weight_decay=0.01,
                          maximize=True)
    for step in range(2):
        grad = torch.randn(512, generator=g)
        for r, s, n in zip(refs, starts, sizes):
            r.grad = grad[s:s + n].double()
        opt.step()
        adk.sgd_multi_step[(int(sum(blocks)),)](p, grad, buf, offsets[:3], torch.tensor(sizes), owner, first, 3, 0.1,
                                                0.9, dampening, 0.01, -1.0, MOMENTUM=True, FIRST=step == 0,
                                                NESTEROV=nesterov, BLOCK=128, AP=1, AG=1, AB=1)
        for r, s, n in zip(refs, starts, sizes):
            close(p[s:s + n], r.detach(), f"multi-tensor sgd step {step} nesterov={nesterov}")

# fused unscale: one inf among three tensors sets the flag; every value is scaled
grad = torch.randn(512, generator=g)
expect = grad * 0.5
grad[449] = float("inf")  # in the masked last block of the third tensor
expect[449] = float("inf")
found = torch.zeros(1)
adk.unscale_multi[(int(sum(blocks)),)](grad, found, offsets[:1], torch.tensor(sizes), owner, first, 3, 0.5,
                                       BLOCK=128, AG=1)
assert found.item() == 1.0
for s, n in zip(starts, sizes):
    close(grad[s:s + n], expect[s:s + n], "unscale")
print("ok")
"""


def test_kernels_compute_right_values_under_the_interpreter() -> None:
    run_interpreted(_INTERPRETED, ROOT)


_LAUNCHERS = _INTERPRETED.split("root = sys.argv[1]")[0] + r"""
import math
import types
import genesis._impl.cpu as cpu
from genesis import dtypes
from genesis._impl.cuda import nn_fused as nf
from tests.interpreter_stubs import install

# CPU arrays stand in for device memory: a "pointer" is the torch view itself, which the interpreter reads.
install(nf)
nf.contiguous, nf.full = cpu.contiguous, cpu.full
nf._row_tile = lambda n, itemsize: (16, False, 4) if n > 16 else (16, True, 4)  # small tiles: chunked paths run
nf._NORM_LONG = 16
nf._norm_block = lambda n, itemsize: (16, False) if n > 16 else (16, True)
nf.CE_CONFIGS = {key: (16, 4) for key in nf.CE_CONFIGS}
g = torch.Generator().manual_seed(0)
nd = cpu.wrap


def close(got, ref, what):
    got = cpu.native(got) if got is not None else None
    ref = cpu.native(ref) if ref is not None else None
    if ref is None:
        assert got is None, what
        return
    torch.testing.assert_close(got, ref, rtol=1e-4, atol=1e-5, msg=lambda m: what + ": " + m)


for shape in ((5, 37), (3, 4, 9)):
    x, dy = torch.randn(shape, generator=g), torch.randn(shape, generator=g)
    w, b = torch.randn(shape[-1], generator=g), torch.randn(shape[-1], generator=g)
    for rms in (False, True):
        bias = None if rms else nd(b)
        got, ref = nf.layer_norm(nd(x), nd(w), bias, 1e-5, rms), cpu.layer_norm(nd(x), nd(w), bias, 1e-5, rms)
        for a, r in zip(got, ref):
            close(a, r, f"layer_norm {shape} rms={rms}")
        grads = nf.layer_norm_backward(nd(dy), nd(x), nd(w), got[1], got[2], rms, (True, True, True))
        refs = cpu.layer_norm_backward(nd(dy), nd(x), nd(w), ref[1], ref[2], rms, (True, True, True))
        for a, r in zip(grads, refs):
            close(a, r, f"layer_norm backward {shape} rms={rms}")
    for dim in range(len(shape)):
        y = cpu.softmax(nd(x), dim, True, False)
        close(nf.softmax_backward(nd(dy), y, dim, True), cpu.softmax_backward(nd(dy), y, dim, True), "softmax bwd")
x, t = torch.randn(4, 50, generator=g) * 3, torch.tensor([3, -100, 49, 0])
flag = torch.zeros(3, dtype=torch.int64)
nf.device_checks = types.SimpleNamespace(flag_pointer=lambda: flag, code=lambda error, message: 1, sync_checks=False)
check = (IndexError, "Target {value} is out of bounds.")
for reduction in ("none", "sum", "mean"):
    loss, lse, count = nf.cross_entropy(nd(x), nd(t), -100, 0.1, reduction, dtypes.float32, check)
    ref_loss, ref_lse, ref_count = cpu.cross_entropy(nd(x), nd(t), -100, 0.1, reduction, dtypes.float32, check)
    close(loss, ref_loss, f"cross_entropy {reduction}")
    close(count, ref_count, f"cross_entropy {reduction} count")
    dl = nd(torch.randn(4, generator=g)) if reduction == "none" else nd(torch.tensor(0.7))
    close(nf.cross_entropy_backward(dl, nd(x), nd(t), lse, count, -100, 0.1),
          cpu.cross_entropy_backward(dl, nd(x), nd(t), ref_lse, ref_count, -100, 0.1),
          f"cross_entropy {reduction} backward")
assert flag.tolist() == [0, 0, 0]
packed = torch.randn(2, 3, 40, generator=g)
for gate, up in ((packed[..., :20], packed[..., 20:]), (torch.randn(7, 3, generator=g).t(), torch.randn(3, 7))):
    dy = nd(torch.randn(gate.shape, generator=g))
    close(nf.swiglu(nd(gate), nd(up)), cpu.swiglu(nd(gate), nd(up)), "swiglu")
    for a, r in zip(nf.swiglu_backward(dy, nd(gate), nd(up)), cpu.swiglu_backward(dy, nd(gate), nd(up))):
        close(a, r, "swiglu backward")
for xs, cs in (((2, 3, 5, 8), (2, 1, 5, 8)), ((2, 5, 3, 8), (1, 5, 1, 8)), ((2, 2, 3, 5, 8), (5, 8))):
    x, c, s = (torch.randn(n, generator=g) for n in (xs, cs, cs))
    for inverse in (False, True):
        close(nf.rope(nd(x), nd(c), nd(s), inverse), cpu.rope(nd(x), nd(c), nd(s), inverse), f"rope {xs} {cs}")
# (the last case: a negative scale, which the unmasked forward cannot fold into its running max)
for B, H, HK, L, S, D, causal, mshape, scale in ((1, 2, 1, 70, 70, 16, True, None, 0.25),
                                                (2, 4, 2, 19, 45, 32, False, (19, 45), 32 ** -0.5),
                                                (1, 2, 2, 20, 20, 16, True, None, -0.3)):
    q = torch.randn(B, L, H, D, generator=g).transpose(1, 2)  # strided (B, H, L, D) view
    k, v = torch.randn(B, HK, S, D, generator=g), torch.randn(B, HK, S, D, generator=g)
    mask = nd(torch.randn(mshape, generator=g)) if mshape else None
    out, lse = nf.attention(nd(q), nd(k), nd(v), mask, causal, scale)
    ref, ref_lse = cpu.attention(nd(q), nd(k), nd(v), mask, causal, scale)
    close(out, ref, f"attention scale={scale}")
    dy = nd(torch.randn(B, H, L, D, generator=g))
    grads = nf.attention_backward(dy, nd(q), nd(k), nd(v), mask, out, lse, causal, scale)
    for a, r in zip(grads, cpu.attention_backward(dy, nd(q), nd(k), nd(v), mask, ref, ref_lse, causal, scale)):
        close(a, r, f"attention backward scale={scale}")
p, m, v = (torch.randn(300, generator=g) for _ in range(3))
v = v.abs()
p2, m2, v2 = p.clone(), m.clone(), v.clone()
grad = nd(torch.randn(300, generator=g))
nf.adam_step_(nd(p), grad, nd(m), nd(v), 1e-2, 0.9, 0.99, 1e-8, 0.1, True, 3)
cpu.adam_step_(nd(p2), grad, nd(m2), nd(v2), 1e-2, 0.9, 0.99, 1e-8, 0.1, True, 3)
close(nd(p), nd(p2), "adam param")
print("ok")
"""


def test_cuda_launchers_under_the_interpreter() -> None:
    pytest.importorskip("cuda.bindings", reason="cuda-python is not installed: the CUDA backend cannot be imported")
    run_interpreted(_LAUNCHERS)
