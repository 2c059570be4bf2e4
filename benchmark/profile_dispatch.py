"""Where the host time of one op goes: each layer of the dispatch path timed alone, and the Python calls per op.

    python benchmark/profile_dispatch.py [--device cpu|cuda] [--trace] [--python N] [--ops WORD,...]

The tiny-op rows time the same 8x8 ``add`` entered at each layer (operator, op function, ``Function.apply``,
``NDArray.binary``, the backend), so the differences between rows are what each layer costs. The op rows count the
Python-level calls that one call of a common training op makes (``--trace`` also lists them) and time it, with
torch's time for the same op on the same device beside it when torch can use that device. The calls are counted
(and traced) on a warm op: a first call that compiles kernels is made before. ``--python N`` also prints, per op,
the N Python functions with the most own time over 300 calls (``cProfile``).
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import timeit

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import genesis
from genesis.ops.arithmetic import Add


def per_call_us(fn, sync, number: int = 2000) -> float:
    """The best of five repeats, in microseconds per call (device work drained by ``sync`` after each repeat)."""
    def run() -> None:
        for _ in range(number):
            fn()
        sync()
    run()
    return min(timeit.repeat(run, number=1, repeat=5)) / number * 1e6


def python_calls(fn) -> list[str]:
    """The Python functions (and C functions) that one call of ``fn`` enters, in order, once caches are warm."""
    fn()
    calls: list[str] = []

    def hook(frame, event, arg) -> None:
        if event == "call":
            code = frame.f_code
            calls.append(f"{code.co_filename.rsplit('genesis/', 1)[-1]}:{code.co_name}")
        elif event == "c_call":
            calls.append(f"[c] {getattr(arg, '__qualname__', arg)}")
    sys.setprofile(hook)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return calls[:-1]  # the last one is setprofile itself


def op_cases(lib, device: str) -> list[tuple[str, object]]:
    """Common training ops as closures over ``lib`` (torch or genesis) on ``device``."""
    lib.manual_seed(0)
    x = lib.randn(8, 64, 768, device=device, requires_grad=True)
    w = lib.randn(768, 768, device=device, requires_grad=True)
    ln_w = lib.ones(768, device=device, requires_grad=True)
    logits = lib.randn(512, 1000, device=device, requires_grad=True)
    target = lib.randint(0, 1000, (512,), device=device)
    table = lib.randn(1000, 768, device=device, requires_grad=True)
    ids = lib.randint(0, 1000, (8, 64), device=device)
    a, b = lib.randn(8, 8, device=device), lib.randn(8, 8, device=device)
    fn = lib.nn.functional
    autocast_dtype = lib.bfloat16
    # A small channels_last bfloat16 convolution block (ResNet's layers at a size whose GPU time is short).
    cl = lib.channels_last
    img = lib.randn(8, 64, 14, 14, device=device).to(autocast_dtype).to(memory_format=cl).requires_grad_()
    kernel = lib.randn(64, 64, 3, 3, device=device).to(autocast_dtype).to(memory_format=cl).requires_grad_()
    bn_w, bn_b = lib.ones(64, device=device, requires_grad=True), lib.zeros(64, device=device, requires_grad=True)
    stats = lib.zeros(64, device=device), lib.ones(64, device=device)
    # A Qwen-style attention input: a (B, T, H, D) bf16 projection viewed as (B, H, T, D), RoPE tables (T, D).
    heads = lib.randn(8, 64, 12 * 64, device=device).to(autocast_dtype).requires_grad_()
    q = heads.view(8, 64, 12, 64).transpose(1, 2)
    cos = lib.randn(64, 64, device=device).to(autocast_dtype)
    rms_w = lib.ones(768, device=device, requires_grad=True)
    # The style-transfer network's layers in float32 NCHW (reflection pad, 3x3 convolution with bias, affine
    # instance norm), at a size whose GPU time is short.
    plane = lib.randn(4, 32, 32, 32, device=device, requires_grad=True)
    conv_w = lib.randn(32, 32, 3, 3, device=device, requires_grad=True)
    conv_b, in_w, in_b = (lib.zeros(32, device=device, requires_grad=True) for _ in range(3))

    def rope():
        x1, x2 = q.chunk(2, dim=-1)
        return q * cos + lib.cat([-x2, x1], dim=-1) * cos

    def linear_autocast():
        with lib.autocast(device_type=device, dtype=autocast_dtype):
            return fn.linear(x, w)

    def conv_block_step():
        y = fn.relu(fn.batch_norm(fn.conv2d(img, kernel, padding=1), *stats, bn_w, bn_b, training=True))
        y.sum().backward()

    def style_block_step():
        y = fn.conv2d(fn.pad(plane, (1, 1, 1, 1), mode="reflect"), conv_w, conv_b)
        fn.relu(fn.instance_norm(y, weight=in_w, bias=in_b)).sum().backward()
    return [
        ("add 8x8", lambda: a + b),
        ("add 8x8, grad", lambda: x + x),
        ("view", lambda: x.view(512, 768)),
        ("linear (autocast bf16)", linear_autocast),
        ("layer_norm", lambda: fn.layer_norm(x, (768,), ln_w)),
        ("gelu", lambda: fn.gelu(x)),
        ("cross_entropy", lambda: fn.cross_entropy(logits, target, ignore_index=-1)),
        # The CPU runs the fused cross-entropy node (the one CUDA runs for every call) only for label smoothing.
        ("cross_entropy, smoothing", lambda: fn.cross_entropy(logits, target, ignore_index=-1, label_smoothing=0.1)),
        ("embedding", lambda: fn.embedding(ids, table)),
        ("index_select", lambda: lib.index_select(table, 0, ids.view(-1))),
        ("conv2d 3x3 (bf16, NHWC)", lambda: fn.conv2d(img, kernel, padding=1)),
        ("batch_norm (train, NHWC)", lambda: fn.batch_norm(img, *stats, bn_w, bn_b, training=True)),
        ("relu (NHWC)", lambda: fn.relu(img)),
        ("conv+bn+relu fwd+bwd", conv_block_step),
        ("reflection pad (fp32)", lambda: fn.pad(plane, (1, 1, 1, 1), mode="reflect")),
        ("conv2d 3x3 + bias (fp32)", lambda: fn.conv2d(plane, conv_w, conv_b, padding=1)),
        ("instance_norm affine", lambda: fn.instance_norm(plane, weight=in_w, bias=in_b)),
        ("pad+conv+in+relu fwd+bwd", style_block_step),
        ("transpose (view)", lambda: heads.view(8, 64, 12, 64).transpose(1, 2)),
        ("mul strided x table (bf16)", lambda: q * cos),
        ("cat 2 halves (bf16)", lambda: lib.cat([q, q], dim=-1)),
        ("rope (chunk, neg, cat, 3 ops)", rope),
        ("rms_norm", lambda: fn.rms_norm(x, (768,), rms_w, 1e-6)),
        ("silu * mul", lambda: fn.silu(x) * x),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--trace", action="store_true", help="list the calls of each op")
    parser.add_argument("--python", type=int, default=0, metavar="N",
                        help="also print each op's N Python functions with the most own time")
    parser.add_argument("--ops", default="", help="only the op rows whose name contains one of these comma-separated "
                                                  "words")
    args = parser.parse_args()
    dev = args.device
    sync = genesis.cuda.synchronize if dev == "cuda" else (lambda: None)

    a, b = genesis.randn(8, 8, device=dev), genesis.randn(8, 8, device=dev)
    na, nb = a.ndarray, b.ndarray
    backend = na.device.backend
    print(f"tiny add 8x8 on {dev}, entered at each layer (us per call)")
    for name, fn in [("a + b", lambda: a + b), ("genesis.add", lambda: genesis.add(a, b)),
                     ("Add.apply", lambda: Add.apply(a, b)), ("NDArray.binary", lambda: na.binary("add", nb)),
                     ("backend.binary", lambda: backend.binary("add", na, nb))]:
        print(f"  {name:20s} {per_call_us(fn, sync):8.2f}")

    try:
        import torch
        torch_ok = dev == "cpu" or torch.cuda.is_available()
    except ImportError:
        torch, torch_ok = None, False
    torch_cases = dict(op_cases(torch, dev)) if torch_ok else {}
    print(f"\n{'op':26s} {'py calls':>8s} {'genesis us':>11s} {'torch us':>9s}")
    words = [w for w in args.ops.split(",") if w]
    for name, fn in op_cases(genesis, dev):
        if words and not any(w in name for w in words):
            continue
        fn()  # compile what the op needs first: the calls counted are those of a warm op
        calls = python_calls(fn)
        t_us = per_call_us(torch_cases[name], torch.cuda.synchronize if dev == "cuda" else (lambda: None), 300) \
            if name in torch_cases else float("nan")
        print(f"{name:26s} {sum(not c.startswith('[c]') for c in calls):8d} {per_call_us(fn, sync, 300):11.2f} "
              f"{t_us:9.2f}")
        if args.trace:
            print("    " + "\n    ".join(calls))
        if args.python:
            profiler = cProfile.Profile()
            def calls(op=fn) -> None:  # each result dropped at once, as a program drops its temporaries
                for _ in range(300):
                    op()
            profiler.runcall(calls)
            sync()
            pstats.Stats(profiler, stream=sys.stdout).sort_stats("tottime").print_stats(args.python)


if __name__ == "__main__":
    main()
