"""The style-transfer network's non-convolution layers, forward + backward, in Genesis and torch side by side.

Instance norm (affine), reflection padding and nearest x2 upsampling at 4x32x256x256 float32 (the sizes of the
style-transfer row of ``bench_models.py``), each checked against torch before it is timed. Runs on the CPU by
default (``--device cuda`` on a GPU machine).
"""

from __future__ import annotations

import argparse
from typing import Any, Callable

import torch

import genesis
from benchmark.common import print_table, row, time_per_call, write_json

SHAPE = (4, 32, 256, 256)


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()
        genesis.cuda.synchronize()


def _cases() -> list[tuple[str, Callable[[Any, Any, Any, Any], Any]]]:
    """(name, fn(lib, x, w, b)) of each layer."""
    return [
        ("instance_norm affine", lambda lib, x, w, b: lib.nn.functional.instance_norm(x, weight=w, bias=b)),
        ("reflection pad 1", lambda lib, x, w, b: lib.nn.functional.pad(x, (1, 1, 1, 1), mode="reflect")),
        ("nearest upsample x2", lambda lib, x, w, b: lib.nn.functional.interpolate(x, scale_factor=2)),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=None, help="torch intra-op threads (both libraries)")
    parser.add_argument("--json", default=None, help="write the rows to this JSON file")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(*SHAPE, generator=gen)
    w, b = torch.randn(SHAPE[1], generator=gen), torch.randn(SHAPE[1], generator=gen)
    tin = tuple(t.clone().to(args.device).requires_grad_() for t in (x, w, b))
    gin = tuple(genesis.tensor(t.numpy(), device=args.device).requires_grad_() for t in (x, w, b))
    rows = []
    for name, fn in _cases():
        ty = fn(torch, *tin)
        gy = fn(genesis, *gin)
        torch.testing.assert_close(torch.from_numpy(gy.detach().cpu().numpy()), ty.detach().cpu(), rtol=1e-4,
                                   atol=1e-4)
        dy = torch.randn(ty.shape, generator=gen)
        tdy, gdy = dy.to(args.device), genesis.tensor(dy.numpy(), device=args.device)

        def t_step(fn=fn, tdy=tdy) -> None:
            torch.autograd.grad(fn(torch, *tin), tin, tdy, allow_unused=True)
            _sync(args.device)

        def g_step(fn=fn, gdy=gdy) -> None:
            genesis.autograd.grad(fn(genesis, *gin), gin, gdy, allow_unused=True)
            _sync(args.device)

        tt, tg = time_per_call(t_step), time_per_call(g_step)
        rows.append(row(f"{name} {'x'.join(map(str, SHAPE))} fwd+bwd ms", tg * 1e3, tt * 1e3, "ms", tt / tg,
                        ">= 1.00"))
        print(f"  {name}: genesis {tg * 1e3:.2f} ms, torch {tt * 1e3:.2f} ms", flush=True)
    write_json(rows, args.json)
    print_table(rows)


if __name__ == "__main__":
    main()
