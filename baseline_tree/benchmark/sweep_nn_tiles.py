"""Time tile configurations of Genesis's fused norm, cross-entropy and SwiGLU kernels on one CUDA GPU.

Each kernel is launched through its backend primitive (no autograd, little host overhead) for every candidate
entry of its table in ``genesis/backends/cuda/nn_fused.py`` (``NORM_CONFIGS``, ``CE_CONFIGS``, ``SWIGLU_CONFIGS``),
and the candidates are printed fastest first with the bandwidth of the bytes the kernel must move. The last lines
give the host time of one ``nn.functional`` call on a tiny input (what a launch costs on the CPU side).

    python benchmark/sweep_nn_tiles.py
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any, Callable

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import genesis  # noqa: E402
import genesis.nn.functional as F  # noqa: E402
from genesis.backends.cuda import nn_fused as nf  # noqa: E402
from genesis.backends.cuda.triton_driver import do_bench  # noqa: E402


def _nd(shape: tuple[int, ...], dtype: genesis.dtype) -> Any:
    return genesis.randn(*shape, dtype=dtype, device="cuda").ndarray


def sweep(name: str, table: dict, key: Any, candidates: list, fn: Callable[[], Any], nbytes: float) -> None:
    """Time ``fn`` with ``table[key]`` set to each candidate; print them fastest first; restore the entry."""
    default = table[key]
    results = []
    for cfg in candidates:
        table[key] = cfg
        try:
            ms = do_bench(fn, warmup=3, rep=20)
        except Exception as err:  # noqa: BLE001 - a tile that does not fit this GPU is reported and skipped
            print(f"  {name} {cfg}: failed ({type(err).__name__}: {str(err)[:100]})", flush=True)
            continue
        results.append((ms, cfg))
    table[key] = default
    for ms, cfg in sorted(results):
        mark = " (default)" if cfg == default else ""
        print(f"  {name} {cfg}: {ms * 1e3:.1f} us, {nbytes / ms / 1e6:.0f} GB/s{mark}", flush=True)


def sweep_norms() -> None:
    bf = genesis.bfloat16
    for M, N, fwd, bwd in (
        (8192, 4096, [(1, 4), (1, 8), (1, 16), (2, 8), (2, 16)],
         [(1, 8, 4), (1, 8, 2), (1, 16, 2), (1, 16, 4), (1, 8, 8), (2, 16, 2), (1, 4, 8)]),
        (32768, 1024, [(1, 4), (2, 4), (4, 4), (4, 8), (8, 8), (16, 16)],
         [(2, 4, 4), (2, 8, 4), (4, 8, 4), (4, 8, 2), (8, 16, 2), (1, 4, 8), (2, 4, 8)]),
    ):
        x, w, b, dy = _nd((M, N), bf), _nd((N,), bf), _nd((N,), bf), _nd((M, N), bf)
        nbytes = M * N * 2
        _, mean, rstd = nf.layer_norm(x, w, b, 1e-5, False)
        sweep(f"layer_norm fwd {M}x{N} (BLOCK_M, warps)", nf.NORM_CONFIGS, ("fwd", N), fwd,
              lambda: nf.layer_norm(x, w, b, 1e-5, False), 2 * nbytes)  # noqa: B023 - called in the loop
        sweep(f"rms_norm fwd {M}x{N} (BLOCK_M, warps)", nf.NORM_CONFIGS, ("fwd", N), fwd[:3],
              lambda: nf.layer_norm(x, w, None, 1e-5, True), 2 * nbytes)  # noqa: B023 - called in the loop
        sweep(f"layer_norm bwd {M}x{N} (BLOCK_M, warps, programs/SM)", nf.NORM_CONFIGS, ("bwd", N), bwd,
              lambda: nf.layer_norm_backward(dy, x, w, mean, rstd, False, (True, True, True)),  # noqa: B023
              3 * nbytes)
        sweep(f"rms_norm bwd {M}x{N} (BLOCK_M, warps, programs/SM)", nf.NORM_CONFIGS, ("bwd", N), bwd,
              lambda: nf.layer_norm_backward(dy, x, w, mean, rstd, True, (True, True, False)),  # noqa: B023
              3 * nbytes)


def sweep_cross_entropy() -> None:
    M, V = 8192, 151936
    x = _nd((M, V), genesis.bfloat16)
    t = genesis.randint(0, V, (M,), device="cuda").ndarray
    dl = _nd((M,), genesis.float32)
    _, lse = nf.cross_entropy(x, t, -100, 0.0)
    sweep("cross_entropy fwd (BLOCK_V, warps)", nf.CE_CONFIGS, ("fwd", 2),
          [(2048, 4), (2048, 8), (4096, 8), (4096, 16), (8192, 8), (8192, 16)],
          lambda: nf.cross_entropy(x, t, -100, 0.0), M * V * 2)
    sweep("cross_entropy bwd (BLOCK_V, warps)", nf.CE_CONFIGS, ("bwd", 2),
          [(1024, 4), (2048, 4), (4096, 8), (8192, 8), (8192, 16), (16384, 16)],
          lambda: nf.cross_entropy_backward(dl, x, t, lse, -100, 0.0), 2 * M * V * 2)


def sweep_swiglu() -> None:
    M, H = 8192, 8192
    g, u, dy = (_nd((M, H), genesis.bfloat16) for _ in range(3))
    cands = [(1024, 4), (2048, 4), (2048, 8), (4096, 8), (4096, 16), (8192, 16)]
    sweep("swiglu fwd (BLOCK_H, warps)", nf.SWIGLU_CONFIGS, "fwd", cands, lambda: nf.swiglu(g, u), 3 * M * H * 2)
    sweep("swiglu bwd (BLOCK_H, warps)", nf.SWIGLU_CONFIGS, "bwd", cands, lambda: nf.swiglu_backward(dy, g, u),
          5 * M * H * 2)


def host_overhead() -> None:
    x = genesis.randn(4, 64, device="cuda")
    w = genesis.randn(64, device="cuda")
    for name, fn in (("layer_norm", lambda: F.layer_norm(x, (64,), w)), ("rms_norm", lambda: F.rms_norm(x, (64,), w)),
                     ("swiglu", lambda: F.swiglu(x, x))):
        with genesis.no_grad():
            for _ in range(200):
                fn()
            genesis.cuda.synchronize()
            start = time.perf_counter()
            for _ in range(2000):
                fn()
            host = (time.perf_counter() - start) / 2000
            genesis.cuda.synchronize()
        print(f"  host time per nn.functional.{name} call (no grad): {host * 1e6:.1f} us", flush=True)


if __name__ == "__main__":
    for group in (sweep_norms, sweep_cross_entropy, sweep_swiglu, host_overhead):
        print(group.__name__, flush=True)
        group()
