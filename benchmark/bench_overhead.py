"""Host overhead of Genesis on the CPU against PyTorch, side by side in one process.

Cases: a tiny op (8x8 add), a tiny forward+backward chain (mul, sum, backward), and large 1024x1024 add and matmul.
Each row reports microseconds per call and ``ratio`` = Genesis time / torch time (lower is better; goals: at most
1.5x on the tiny cases, at most 1.2x on the large ones).

    python benchmark/bench_overhead.py [--json out.json]
"""

from __future__ import annotations

import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import genesis
from benchmark.common import print_table, row, time_per_call, write_json


def cases() -> list[tuple[str, float, object, object]]:
    gen = torch.Generator().manual_seed(0)
    a8, b8 = torch.randn(8, 8, generator=gen), torch.randn(8, 8, generator=gen)
    a1k, b1k = torch.randn(1024, 1024, generator=gen), torch.randn(1024, 1024, generator=gen)
    ga8, gb8 = genesis.tensor(a8.numpy()), genesis.tensor(b8.numpy())
    ga1k, gb1k = genesis.tensor(a1k.numpy()), genesis.tensor(b1k.numpy())

    wt = a8.clone().requires_grad_(True)
    wg = genesis.tensor(a8.numpy(), requires_grad=True)

    def chain(lib_w, x):
        def step():
            lib_w.grad = None
            (lib_w * x).sum().backward()
        return step

    return [
        ("tiny add 8x8", 1.5, lambda: ga8 + gb8, lambda: a8 + b8),
        ("tiny mul+sum+backward 8x8", 1.5, chain(wg, gb8), chain(wt, b8)),
        ("add 1024x1024", 1.2, lambda: ga1k + gb1k, lambda: a1k + b1k),
        ("matmul 1024x1024", 1.2, lambda: ga1k @ gb1k, lambda: a1k @ b1k),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="write the rows to this JSON file")
    args = parser.parse_args()
    rows = []
    for name, goal, g_fn, t_fn in cases():
        g_us = time_per_call(g_fn) * 1e6
        t_us = time_per_call(t_fn) * 1e6
        rows.append(row(name, g_us, t_us, "us", g_us / t_us, f"time ratio <= {goal}"))
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    print_table(rows)
    write_json(rows, args.json)


if __name__ == "__main__":
    main()
