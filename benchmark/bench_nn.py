"""Genesis's fused neural-network kernels vs PyTorch eager on one CUDA GPU, in the same process on the same inputs.

Shapes of the GPU kernels issue: softmax 8192^2 (fp32, bf16), layer_norm / rms_norm 8192x4096 bf16 (forward and
forward+backward), cross-entropy 8192x151936 bf16 forward+backward (time and peak extra memory), RoPE and SwiGLU
against torch's composites, SDPA causal bf16 B4 H16 S2048 D128 (forward and forward+backward), one AdamW step over
a 0.5B-parameter model in float32 against torch's fused AdamW; CNN layers (pooling, batch norm, group norm,
resampling) and the deterministic embedding gradient (``--only cnn``).

Times are CUDA-event medians (Genesis through its own event benchmarker, torch through torch.cuda.Event). Every row's
``ratio`` is Genesis throughput / torch throughput (for the memory row: torch's peak extra bytes / Genesis's), so
``ratio >= goal`` is a met goal. Bandwidth rows count the bytes each op must move at least (documented per kernel
in docs/kernels.md). Before timing, each Genesis result is checked against torch.

    python benchmark/bench_nn.py [--quick] [--json PATH] [--only norms rope_swiglu cross_entropy optim ...]
    python benchmark/bench_nn.py --sweep-attention     # times flash-attention tile configurations
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from typing import Any, Callable

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch

import genesis
import genesis.nn.functional as F
from benchmark.bench_ops import check_close, g_bench, t_bench
from benchmark.common import print_table, row, write_json
from genesis.nn.attention import SDPBackend, sdpa_kernel

TF = torch.nn.functional


def to_g(t: torch.Tensor) -> genesis.Tensor:
    """A Genesis CUDA copy of a torch CUDA tensor: a device-to-device copy through DLPack (no host round trip,
    which takes seconds for the 2.5 GB cross-entropy logits)."""
    torch.cuda.synchronize()
    out = genesis.from_dlpack(t.detach()).clone()
    genesis.cuda.synchronize()
    return out


def check(name: str, g: genesis.Tensor, t: torch.Tensor, tol: float) -> None:
    """Genesis's result equals torch's within ``tol`` (normwise relative error) before anything is timed."""
    check_close(name, g.detach(), t.detach(), tol)


def rate_row(rows: list, name: str, unit: str, work: float, goal: float, gfn: Callable, tfn: Callable,
             rep: int) -> None:
    """Time both sides; ``work`` is bytes (GB/s) or flops (TFLOP/s) per call."""
    tg, tt = g_bench(gfn, rep), t_bench(tfn, rep)
    scale = 1e-9 if unit == "GB/s" else 1e-12
    g_rate, t_rate = work / (tg * 1e-3) * scale, work / (tt * 1e-3) * scale
    rows.append(row(name, g_rate, t_rate, unit, g_rate / t_rate, f">= {goal:.2f}"))
    print(f"  {name}: genesis {tg:.4f} ms, torch {tt:.4f} ms", flush=True)


def leaf(t: torch.Tensor) -> tuple[genesis.Tensor, torch.Tensor]:
    """A Genesis copy and a torch leaf of ``t``, both requiring grad."""
    return to_g(t).requires_grad_(True), t.detach().clone().requires_grad_(True)


def fwd_bwd(lib: Any, fn: Callable, inputs: tuple, dy: Any) -> Callable[[], None]:
    """One forward and backward of ``fn(*inputs)`` with output gradient ``dy`` (no .grad accumulation)."""
    def step() -> None:
        lib.autograd.grad(fn(*inputs), inputs, dy)
    return step


def bench_softmax(rows: list, rep: int) -> None:
    for dt in (torch.float32, torch.bfloat16):
        x = torch.randn(8192, 8192, device="cuda", dtype=dt)
        gx = to_g(x)
        check("softmax", F.softmax(gx, 1), torch.softmax(x, 1), 1e-2)
        name = "fp32" if dt == torch.float32 else "bf16"
        rate_row(rows, f"softmax 8192^2 {name} fwd", "GB/s", 2 * x.numel() * x.element_size(), 1.5,
                 lambda: F.softmax(gx, 1), lambda: torch.softmax(x, 1), rep)  # noqa: B023 - called in the loop


def bench_norms(rows: list, rep: int) -> None:
    M, N = 8192, 4096
    x = torch.randn(M, N, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(N, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(N, device="cuda", dtype=torch.bfloat16)
    dy = torch.randn(M, N, device="cuda", dtype=torch.bfloat16)
    (gx, tx), (gw, tw), (gb, tb), gdy = leaf(x), leaf(w), leaf(b), to_g(dy)
    nbytes = M * N * 2
    cases = [
        ("layer_norm", lambda x_, w_, b_: F.layer_norm(x_, (N,), w_, b_),
         lambda x_, w_, b_: TF.layer_norm(x_, (N,), w_, b_), (gx, gw, gb), (tx, tw, tb)),
        ("rms_norm", lambda x_, w_: F.rms_norm(x_, (N,), w_), lambda x_, w_: TF.rms_norm(x_, (N,), w_),
         (gx, gw), (tx, tw)),
    ]
    for name, gfn, tfn, gin, tin in cases:
        check(name, gfn(*gin), tfn(*tin), 1e-2)
        with genesis.no_grad(), torch.no_grad():
            rate_row(rows, f"{name} 8192x4096 bf16 fwd", "GB/s", 2 * nbytes, 1.0, lambda: gfn(*gin),  # noqa: B023
                     lambda: tfn(*tin), rep)  # noqa: B023 - called in the loop
        g_grads = genesis.autograd.grad(gfn(*gin), gin, gdy)
        t_grads = torch.autograd.grad(tfn(*tin), tin, dy)
        for i, (gg, tg) in enumerate(zip(g_grads, t_grads)):
            check(f"{name} grad {i}", gg, tg, 2e-2)
        rate_row(rows, f"{name} 8192x4096 bf16 fwd+bwd", "GB/s", 5 * nbytes, 1.2, fwd_bwd(genesis, gfn, gin, gdy),
                 fwd_bwd(torch, tfn, tin, dy), rep)


def bench_cross_entropy(rows: list, rep: int, quick: bool) -> None:
    M, V = (2048 if quick else 8192), 151936
    logits = torch.randn(M, V, device="cuda", dtype=torch.bfloat16)
    target = torch.randint(0, V, (M,), device="cuda")
    (gx, tx), gt = leaf(logits), to_g(target)
    check("cross_entropy", F.cross_entropy(gx, gt), TF.cross_entropy(tx, target), 1e-2)
    check("cross_entropy grad", genesis.autograd.grad(F.cross_entropy(gx, gt), (gx,))[0],
                torch.autograd.grad(TF.cross_entropy(tx, target), (tx,))[0], 2e-2)
    nbytes = 3 * M * V * 2  # forward reads the logits; backward reads them and writes the gradient

    def g_step() -> None:
        genesis.autograd.grad(F.cross_entropy(gx, gt), (gx,))

    def t_step() -> None:
        torch.autograd.grad(TF.cross_entropy(tx, target), (tx,))

    rate_row(rows, f"cross_entropy {M}x{V} bf16 fwd+bwd", "GB/s", nbytes, 2.0, g_step, t_step, max(5, rep // 4))
    genesis.cuda.synchronize()
    base = genesis.cuda.memory_allocated()
    genesis.cuda.reset_peak_memory_stats()
    g_step()
    genesis.cuda.synchronize()
    g_peak = genesis.cuda.max_memory_allocated() - base
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    t_step()
    torch.cuda.synchronize()
    t_peak = torch.cuda.max_memory_allocated() - base
    rows.append(row(f"cross_entropy {M}x{V} peak extra memory", g_peak / 2 ** 30, t_peak / 2 ** 30, "GiB",
                    t_peak / max(g_peak, 1), ">= 4.00"))
    print(f"  cross_entropy peak extra memory: genesis {g_peak / 2 ** 30:.3f} GiB, torch {t_peak / 2 ** 30:.3f} GiB")


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat([-x[..., half:], x[..., :half]], -1)


def bench_rope_swiglu(rows: list, rep: int) -> None:
    B, H, T, D = 4, 16, 2048, 128
    q = torch.randn(B, H, T, D, device="cuda", dtype=torch.bfloat16)
    gcos, gsin = F.rope_tables(D, T, device="cuda")
    tcos = torch.from_numpy(gcos.cpu().numpy()).cuda().to(torch.bfloat16)
    tsin = torch.from_numpy(gsin.cpu().numpy()).cuda().to(torch.bfloat16)
    (gq, tq), gdq = leaf(q), to_g(q)

    def t_rope(x: torch.Tensor) -> torch.Tensor:
        return x * tcos + _rotate_half(x) * tsin

    def g_rope(x: genesis.Tensor) -> genesis.Tensor:
        return F.rope(x, gcos, gsin)

    check("rope", g_rope(gq), t_rope(tq), 1e-2)
    nbytes = 2 * q.numel() * 2
    with genesis.no_grad(), torch.no_grad():
        rate_row(rows, "rope 4x16x2048x128 bf16 fwd", "GB/s", nbytes, 1.5, lambda: g_rope(gq), lambda: t_rope(tq),
                 rep)
    rate_row(rows, "rope 4x16x2048x128 bf16 fwd+bwd", "GB/s", 2 * nbytes, 1.5, fwd_bwd(genesis, g_rope, (gq,), gdq),
             fwd_bwd(torch, t_rope, (tq,), q), rep)

    M, N = 8192, 8192
    gate = torch.randn(M, N, device="cuda", dtype=torch.bfloat16)
    up = torch.randn(M, N, device="cuda", dtype=torch.bfloat16)
    (gg, tg), (gu, tu), gdy = leaf(gate), leaf(up), to_g(gate)

    def t_swiglu(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return TF.silu(a) * b

    check("swiglu", F.swiglu(gg, gu), t_swiglu(tg, tu), 1e-2)
    nbytes = 3 * M * N * 2
    with genesis.no_grad(), torch.no_grad():
        rate_row(rows, "swiglu 8192x8192 bf16 fwd", "GB/s", nbytes, 1.5, lambda: F.swiglu(gg, gu),
                 lambda: t_swiglu(tg, tu), rep)
    rate_row(rows, "swiglu 8192x8192 bf16 fwd+bwd", "GB/s", nbytes + 5 * M * N * 2, 1.5,
             fwd_bwd(genesis, F.swiglu, (gg, gu), gdy), fwd_bwd(torch, t_swiglu, (tg, tu), gate), rep)


def bench_sdpa(rows: list, rep: int) -> None:
    B, H, S, D = 4, 16, 2048, 128
    q, k, v = (torch.randn(B, H, S, D, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    (gq, tq), (gk, tk), (gv, tv) = leaf(q), leaf(k), leaf(v)
    gdy = to_g(q)

    def g_attn(a: Any, b: Any, c: Any) -> Any:
        return F.scaled_dot_product_attention(a, b, c, is_causal=True)

    def t_attn(a: Any, b: Any, c: Any) -> Any:
        return TF.scaled_dot_product_attention(a, b, c, is_causal=True)

    flops = 4 * B * H * S * S * D / 2  # causal: half of the two (S x S x D) products
    # The default path (the faster fused kernel, timed once per shape class), then each fused kernel forced.
    for suffix, kernel, goal in (("", None, 1.0), (" [triton]", SDPBackend.FLASH_ATTENTION, 0.8),
                                 (" [cudnn]", SDPBackend.CUDNN_ATTENTION, 1.0)):
        with sdpa_kernel(kernel) if kernel is not None else contextlib.nullcontext():
            check(f"sdpa{suffix}", g_attn(gq, gk, gv), t_attn(tq, tk, tv), 2e-2)
            with genesis.no_grad(), torch.no_grad():
                rate_row(rows, f"sdpa causal bf16 B4 H16 S2048 D128 fwd{suffix}", "TFLOP/s", flops, goal,
                         lambda: g_attn(gq, gk, gv), lambda: t_attn(tq, tk, tv), rep)
            rate_row(rows, f"sdpa causal bf16 B4 H16 S2048 D128 fwd+bwd{suffix}", "TFLOP/s", 3.5 * flops, goal,
                     fwd_bwd(genesis, g_attn, (gq, gk, gv), gdy), fwd_bwd(torch, t_attn, (tq, tk, tv), q), rep)


def _qwen05b_shapes() -> list[tuple[int, ...]]:
    """Parameter shapes of a Qwen2.5-0.5B-sized model (494M parameters, tied embedding)."""
    hidden, inter, kv, vocab = 896, 4864, 128, 151936
    layer = [(hidden, hidden), (hidden,), (kv, hidden), (kv,), (kv, hidden), (kv,), (hidden, hidden),
             (inter, hidden), (inter, hidden), (hidden, inter), (hidden,), (hidden,)]
    return [(vocab, hidden)] + layer * 24 + [(hidden,)]


def bench_optim(rows: list, rep: int) -> None:
    """One AdamW step over every parameter of a 0.5B-parameter model, float32 parameters, gradients and moments:
    Genesis's default on CUDA (multi-tensor kernel) vs torch's ``AdamW(fused=True)``. Bytes: 28 per parameter."""
    shapes = _qwen05b_shapes()
    t_params = [torch.nn.Parameter(torch.randn(s, device="cuda") * 0.02) for s in shapes]
    for p in t_params:
        p.grad = torch.randn_like(p) * 1e-3
    g_params = [genesis.nn.Parameter(to_g(p.detach())) for p in t_params]
    for gp, tp in zip(g_params, t_params):
        gp.grad = to_g(tp.grad)
    n = sum(p.numel() for p in t_params)
    g_opt = genesis.optim.AdamW(g_params, lr=1e-4)
    t_opt = torch.optim.AdamW(t_params, lr=1e-4, fused=True)
    g_opt.step()
    t_opt.step()
    check("adamw step", g_params[1], t_params[1], 1e-4)
    rate_row(rows, f"fused AdamW {n / 1e6:.0f}M params fp32", "GB/s", 28 * n, 1.0, g_opt.step, t_opt.step, rep)


SWEEP_CANDIDATES = {  # (BLOCK_M, BLOCK_N, num_warps, num_stages); BLOCK_N | BLOCK_M (fwd, dq), BLOCK_M | BLOCK_N (dkdv)
    "fwd": [(128, 64, 8, 3), (128, 64, 8, 4), (128, 128, 8, 3), (128, 128, 8, 4), (64, 64, 4, 3), (64, 64, 4, 4),
            (128, 64, 8, 2)],
    "dkdv": [(32, 64, 4, 3), (32, 64, 4, 4), (32, 64, 4, 5), (32, 128, 4, 4), (64, 64, 4, 4), (32, 64, 8, 3)],
    "dq": [(128, 64, 8, 3), (128, 64, 8, 4), (64, 64, 4, 4), (128, 32, 8, 4), (64, 32, 4, 4), (128, 128, 8, 3)],
}


def bench_conv(rows: list, rep: int) -> None:
    """conv2d x 32x512x7x7, w 512x512x3x3 (padding 1) and the conv_transpose2d of the same shape (cuDNN on both
    sides, default switches: TF32 on, heuristic plan choice): NCHW fp32 and bf16, and Genesis channels_last bf16
    against torch NCHW (the layout cuDNN runs about twice as fast)."""
    x = torch.randn(32, 512, 7, 7, device="cuda")
    w = torch.randn(512, 512, 3, 3, device="cuda") / 48
    flops = 2 * x.numel() * w.shape[0] * 9  # (output elements = input elements here) x (512 x 3 x 3) x 2
    for name, op, top in (("conv2d", F.conv2d, TF.conv2d), ("conv_transpose2d", F.conv_transpose2d,
                                                             TF.conv_transpose2d)):
        for dt, layout, goal in ((torch.float32, "NCHW", 1.0), (torch.bfloat16, "NCHW", 1.0),
                                 (torch.bfloat16, "NHWC", 1.5)):
            (gx, tx), (gw, tw) = leaf(x.to(dt)), leaf(w.to(dt))
            if layout == "NHWC":
                gx = gx.detach().contiguous(memory_format=genesis.channels_last).requires_grad_(True)
                gw = gw.detach().contiguous(memory_format=genesis.channels_last).requires_grad_(True)
            gdy, tdy = to_g(x.to(dt)), x.to(dt)
            if layout == "NHWC":
                gdy = gdy.contiguous(memory_format=genesis.channels_last)

            def gfn(a: Any, b: Any) -> Any:
                return op(a, b, padding=1)  # noqa: B023 - called in the loop

            def tfn(a: Any, b: Any) -> Any:
                return top(a, b, padding=1)  # noqa: B023 - called in the loop

            tol = 2e-2 if dt == torch.bfloat16 else 5e-3
            check(f"{name} {layout}", gfn(gx, gw), tfn(tx, tw), tol)
            for i, (gg, tg) in enumerate(zip(genesis.autograd.grad(gfn(gx, gw), (gx, gw), gdy),
                                             torch.autograd.grad(tfn(tx, tw), (tx, tw), tdy))):
                check(f"{name} {layout} grad {i}", gg, tg, tol)
            label = f"{name} 32x512x7x7 w512x512x3x3 {'tf32' if dt == torch.float32 else 'bf16'} {layout}"
            with genesis.no_grad(), torch.no_grad():
                rate_row(rows, f"{label} fwd", "TFLOP/s", flops, goal, lambda: gfn(gx, gw),  # noqa: B023
                         lambda: tfn(tx, tw), rep)  # noqa: B023 - called in the loop
            rate_row(rows, f"{label} fwd+bwd", "TFLOP/s", 3 * flops, goal, fwd_bwd(genesis, gfn, (gx, gw), gdy),
                     fwd_bwd(torch, tfn, (tx, tw), tdy), rep)


def bench_cnn(rows: list, rep: int) -> None:
    """Pooling, batch, group and instance norm, resampling, reflection padding and the embedding gradient: Genesis's
    Triton kernels against torch's CUDA kernels (bytes: what the kernels move, docs/kernels.md)."""
    x = torch.randn(32, 128, 56, 56, device="cuda")
    (gx, tx), n = leaf(x), x.numel()
    cases = [  # (name, Genesis fn, torch fn, inputs (Genesis, torch), fwd bytes, fwd+bwd bytes)
        ("max_pool2d 3x3 s2 p1 32x128x56x56 fp32", lambda a: F.max_pool2d(a, 3, 2, 1),
         lambda a: TF.max_pool2d(a, 3, 2, 1), (gx,), (tx,), n * 4 + n // 4 * 4, 8 * n + n // 4 * 24),
        ("batch_norm train 32x128x56x56 fp32", lambda a, w, b: F.batch_norm(a, None, None, w, b, training=True),
         lambda a, w, b: TF.batch_norm(a, None, None, w, b, training=True), None, None, 3 * n * 4, 8 * n * 4),
        ("interpolate bilinear x2 32x128x56x56 fp32",
         lambda a: F.interpolate(a, scale_factor=2, mode="bilinear"),
         lambda a: TF.interpolate(a, scale_factor=2, mode="bilinear"), (gx,), (tx,), 5 * n * 4, 10 * n * 4),
        ("interpolate nearest x2 32x128x56x56 fp32", lambda a: F.interpolate(a, scale_factor=2),
         lambda a: TF.interpolate(a, scale_factor=2), (gx,), (tx,), 5 * n * 4, 10 * n * 4),
    ]
    (gw, tw), (gb, tb) = leaf(torch.randn(128, device="cuda")), leaf(torch.randn(128, device="cuda"))
    xh = torch.randn(16, 256, 64, 64, device="cuda", dtype=torch.bfloat16)
    (gxh, txh), nh = leaf(xh), xh.numel()
    (gwh, twh), (gbh, tbh) = (leaf(torch.randn(256, device="cuda", dtype=torch.bfloat16)) for _ in range(2))
    cases.append(("group_norm G32 16x256x64x64 bf16", lambda a, w, b: F.group_norm(a, 32, w, b),
                  lambda a, w, b: TF.group_norm(a, 32, w, b), (gxh, gwh, gbh), (txh, twh, tbh), 3 * nh * 2,
                  8 * nh * 2))
    xs = torch.randn(4, 32, 256, 256, device="cuda")  # the style-transfer network's first block
    (gxs, txs), ns = leaf(xs), xs.numel()
    (gws, tws), (gbs, tbs) = (leaf(torch.randn(32, device="cuda")) for _ in range(2))
    cases.append(("instance_norm affine 4x32x256x256 fp32", lambda a, w, b: F.instance_norm(a, weight=w, bias=b),
                  lambda a, w, b: TF.instance_norm(a, weight=w, bias=b), (gxs, gws, gbs), (txs, tws, tbs),
                  3 * ns * 4, 8 * ns * 4))
    cases.append(("reflection pad 4 4x32x256x256 fp32", lambda a: F.pad(a, (4, 4, 4, 4), mode="reflect"),
                  lambda a: TF.pad(a, (4, 4, 4, 4), mode="reflect"), (gxs,), (txs,), 2 * ns * 4, 4 * ns * 4))
    for name, gfn, tfn, gin, tin, fwd_bytes, total_bytes in cases:
        gin, tin = gin or (gx, gw, gb), tin or (tx, tw, tb)
        gy, ty = gfn(*gin), tfn(*tin)
        check(name, gy, ty, 2e-2 if ty.dtype == torch.bfloat16 else 1e-4)
        tdy = torch.randn_like(ty)
        gdy = to_g(tdy)
        for i, (gg, tg) in enumerate(zip(genesis.autograd.grad(gfn(*gin), gin, gdy),
                                         torch.autograd.grad(tfn(*tin), tin, tdy))):
            check(f"{name} grad {i}", gg, tg, 2e-2 if ty.dtype == torch.bfloat16 else 1e-4)
        with genesis.no_grad(), torch.no_grad():
            rate_row(rows, f"{name} fwd", "GB/s", fwd_bytes, 1.0, lambda: gfn(*gin),  # noqa: B023
                     lambda: tfn(*tin), rep)  # noqa: B023 - called in the loop
        rate_row(rows, f"{name} fwd+bwd", "GB/s", total_bytes, 1.0, fwd_bwd(genesis, gfn, gin, gdy),
                 fwd_bwd(torch, tfn, tin, tdy), rep)
    V, D, T = 151936, 896, 8192
    (gw, tw) = leaf(torch.randn(V, D, device="cuda", dtype=torch.bfloat16) * 0.02)
    idx = torch.randint(0, V // 8, (T,), device="cuda")  # a narrow vocabulary range: many repeated tokens
    gidx, tdy = to_g(idx), torch.randn(T, D, device="cuda", dtype=torch.bfloat16)
    gdy = to_g(tdy)
    g_grad = genesis.autograd.grad(F.embedding(gidx, gw), (gw,), gdy)[0]
    check("embedding grad", g_grad, torch.autograd.grad(TF.embedding(idx, tw), (tw,), tdy)[0], 2e-2)
    assert bool((g_grad == genesis.autograd.grad(F.embedding(gidx, gw), (gw,), gdy)[0]).all()), "not reproducible"
    rate_row(rows, f"embedding {T} tokens V{V} D{D} bf16 fwd+bwd (deterministic)", "GB/s", (V * D + 3 * T * D) * 2,
             1.0, fwd_bwd(genesis, lambda w: F.embedding(gidx, w), (gw,), gdy),
             fwd_bwd(torch, lambda w: TF.embedding(idx, w), (tw,), tdy), rep)


def sweep_attention(rep: int, head_dims: tuple[int, ...] = (128, 64)) -> dict:
    """Time tile configurations of Genesis's Triton flash-attention kernels (forced, not cuDNN) on the SDPA shape
    (causal bf16 B4 H16 S2048), print them fastest first and return the fastest per (kernel, head dim class)."""
    from genesis._impl.cuda import nn_fused

    best = {}
    default = dict(nn_fused.ATTENTION_CONFIGS)
    for D in head_dims:
        size = "small" if D <= 64 else "large"
        B, H, S = 4, 16, 2048
        q, k, v = (to_g(torch.randn(B, H, S, D, device="cuda", dtype=torch.bfloat16)).requires_grad_(True)
                   for _ in range(3))
        dy = to_g(torch.randn(B, H, S, D, device="cuda", dtype=torch.bfloat16))

        def attn(a: Any, b: Any, c: Any) -> Any:
            return F.scaled_dot_product_attention(a, b, c, is_causal=True)

        for kernel, configs in SWEEP_CANDIDATES.items():
            times = []
            for cfg in configs:
                nn_fused.ATTENTION_CONFIGS.update(default)
                nn_fused.ATTENTION_CONFIGS[(kernel, size)] = cfg
                try:
                    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                        if kernel == "fwd":
                            with genesis.no_grad():
                                ms = g_bench(lambda: attn(q, k, v), rep)  # noqa: B023 - called in the loop
                        else:
                            ms = g_bench(fwd_bwd(genesis, attn, (q, k, v), dy), rep)
                except Exception as err:  # a tile that does not fit this GPU is reported and skipped
                    print(f"  D{D} {kernel} {cfg}: failed ({type(err).__name__}: {err})")
                    continue
                times.append((ms, cfg))
            for ms, cfg in sorted(times):
                print(f"  D{D} {kernel} (BLOCK_M, BLOCK_N, warps, stages)={cfg}: {ms:.3f} ms"
                      f"{' (fwd+bwd)' if kernel != 'fwd' else ''}", flush=True)
            if times:
                best[(kernel, size)] = min(times)[1]
        nn_fused.ATTENTION_CONFIGS.update(default)
    print(f"  fastest: {best}")
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions, smaller cross-entropy batch")
    parser.add_argument("--json", default=None, help="write the rows to this JSON file")
    parser.add_argument("--sweep-attention", action="store_true", help="only time flash-attention tile configs")
    parser.add_argument("--only", nargs="*", default=None, help="run only these groups (e.g. norms optim)")
    args = parser.parse_args()
    rep = 10 if args.quick else 30
    if args.sweep_attention:
        sweep_attention(rep)
        return
    rows: list[dict] = []
    for bench in (bench_softmax, bench_norms, bench_rope_swiglu, bench_sdpa, bench_optim, bench_conv, bench_cnn):
        if args.only is not None and bench.__name__.removeprefix("bench_") not in args.only:
            continue
        print(bench.__name__, flush=True)
        bench(rows, rep)
        write_json(rows, args.json)  # after each group: a run cut short still leaves its rows
    if args.only is None or "cross_entropy" in args.only:
        print("bench_cross_entropy", flush=True)
        bench_cross_entropy(rows, rep, args.quick)
        write_json(rows, args.json)
    print_table(rows)


if __name__ == "__main__":
    main()
