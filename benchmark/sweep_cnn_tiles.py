"""Time tile configurations of Genesis's batch-norm, pooling, resampling and padding kernels on one CUDA GPU.

Each sweep sets module-level knobs of ``genesis/_impl/cuda/nn_layers.py`` (batch norm: ``_BN_BLOCK``, ``_BN_WARPS``,
``_BN_APPLY_WARPS`` and ``_BN_PROGRAMS_PER_SM``; pooling: ``_POOL_PLANE_BLOCK`` for 2-d max pooling, ``_POOL_BLOCK``
and ``_POOL_WARPS`` for the rest; resampling: ``_UP_BLOCK`` and ``_UP_WARPS``)
or ``nn_padding.py`` (``_TILE`` and ``_TILE_WIDTH``) to every combination of its candidates, forgets the launch
plans made with the old values, and times the op's forward and forward+backward through ``nn.functional``, torch's
times beside them when torch can use the GPU; the fastest configurations print first. The knobs are restored
afterwards.

    python benchmark/sweep_cnn_tiles.py
"""

from __future__ import annotations

import itertools
import os
import sys
from typing import Any, Callable

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import genesis
from genesis._impl.cuda import nn_layers, nn_padding
from genesis._impl.cuda.triton_driver import do_bench

BLOCKS = [256, 512, 1024, 2048]
SWEEPS: list[tuple[str, Any, dict[str, list[int]], list[tuple[int, ...]], Callable[[Any, Any], Any]]] = [
    ("batch_norm train", nn_layers, {"_BN_BLOCK": [512, 1024, 2048], "_BN_WARPS": [4, 8], "_BN_APPLY_WARPS": [4, 8],
                                     "_BN_PROGRAMS_PER_SM": [4, 8, 16]},
     [(32, 128, 56, 56), (64, 256, 56, 56), (64, 64, 112, 112), (64, 2048, 7, 7)],
     lambda lib, x: lib.nn.functional.batch_norm(x, None, None, training=True)),
    ("max_pool2d 3x3 s2 p1", nn_layers, {"_POOL_PLANE_BLOCK": [64, 128, 256, 512]},
     [(32, 128, 56, 56), (64, 64, 112, 112)], lambda lib, x: lib.nn.functional.max_pool2d(x, 3, 2, 1)),
    ("interpolate nearest x2", nn_layers, {"_UP_BLOCK": BLOCKS, "_UP_WARPS": [4, 8]},
     [(32, 128, 56, 56)], lambda lib, x: lib.nn.functional.interpolate(x, scale_factor=2)),
    ("reflection pad", nn_padding, {"_TILE": [1024, 2048, 4096], "_TILE_WIDTH": [64, 128, 256, 512, 1024]},
     [(4, 32, 256, 256), (4, 3, 256, 256), (4, 128, 64, 64)],
     lambda lib, x: lib.nn.functional.pad(x, (4, 4, 4, 4), mode="reflect")),
]


def forget_plans() -> None:
    """Drop the launch plans and tile choices cached with the knobs' previous values."""
    nn_layers._bn_chunks.cache_clear()
    nn_layers._POOL_PLANS.clear()
    nn_padding._PLANS.clear()
    nn_padding._BACKWARD_PLANS.clear()


def timings(lib: Any, shape: tuple[int, ...], op: Callable[[Any, Any], Any]) -> tuple[Callable, Callable]:
    """(forward, forward+backward) closures of ``op`` on a float32 input of ``shape`` on the GPU."""
    x = lib.randn(*shape, device="cuda", requires_grad=True)
    g = lib.randn(*op(lib, x).shape, device="cuda")

    def fwd() -> None:
        with lib.no_grad():
            op(lib, x)

    def fwd_bwd() -> None:
        op(lib, x).backward(g)
    return fwd, fwd_bwd


def main() -> None:
    try:
        import torch
    except ImportError:
        torch = None
    for name, module, knobs, shapes, op in SWEEPS:
        saved = {k: getattr(module, k) for k in knobs}
        for shape in shapes:
            fwd, fwd_bwd = timings(genesis, shape, op)
            rows = []
            for values in itertools.product(*knobs.values()):
                for k, v in zip(knobs, values):
                    setattr(module, k, v)
                forget_plans()
                rows.append((do_bench(fwd), do_bench(fwd_bwd), values))
            for k, v in saved.items():
                setattr(module, k, v)
            forget_plans()
            # Both libraries work on the legacy default stream, so Genesis's events time torch's work too.
            tf, tfb = (do_bench(f) for f in timings(torch, shape, op)) if torch else (float("nan"),) * 2
            print(f"{name} {'x'.join(map(str, shape))} fp32: torch fwd {tf:.3f} ms, fwd+bwd {tfb:.3f} ms "
                  f"(now {', '.join(f'{k}={v}' for k, v in saved.items())})")
            for f, fb, values in sorted(rows, key=lambda r: r[0] + r[1])[:5]:
                print(f"  {', '.join(f'{k}={v}' for k, v in zip(knobs, values))}: fwd {f:.3f} ms, "
                      f"fwd+bwd {fb:.3f} ms")
            current = next(r for r in rows if r[2] == tuple(saved.values()))
            print(f"  current: fwd {current[0]:.3f} ms, fwd+bwd {current[1]:.3f} ms")


if __name__ == "__main__":
    main()
