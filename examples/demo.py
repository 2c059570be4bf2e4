"""Genesis demo: fit a small two-layer network with plain tensors and autograd.

Learns y = sin(3x) on [-1, 1] with hand-written parameters, a mean-squared loss, ``loss.backward()`` and a
gradient-descent update under ``no_grad`` — every step goes through Genesis's Tensor, autograd, NDArray and CPU
backend layers.
"""

from __future__ import annotations

import math
import time

import genesis


def main() -> None:
    genesis.manual_seed(0)
    x = genesis.linspace(-1, 1, 256).reshape(256, 1)
    y = (3 * x).sin()

    hidden = 32
    w1 = (genesis.randn(1, hidden) * 1.0).requires_grad_()
    b1 = genesis.zeros(hidden, requires_grad=True)
    w2 = (genesis.randn(hidden, 1) / math.sqrt(hidden)).requires_grad_()
    b2 = genesis.zeros(1, requires_grad=True)
    params = [w1, b1, w2, b2]

    lr = 0.1
    start = time.perf_counter()
    for step in range(1, 2001):
        pred = (x @ w1 + b1).tanh() @ w2 + b2
        loss = ((pred - y) ** 2).mean()
        for p in params:
            p.grad = None
        loss.backward()
        with genesis.no_grad():
            for p in params:
                p -= lr * p.grad
        if step in (1, 10, 100, 500, 1000, 2000):
            print(f"step {step:5d}  loss {loss.item():.6f}")
    elapsed = time.perf_counter() - start
    print(f"trained 2000 steps in {elapsed:.1f} s")
    probe = genesis.tensor([[-0.5], [0.0], [0.5]])
    with genesis.no_grad():
        fit = (probe @ w1 + b1).tanh() @ w2 + b2
    for xi, fi in zip(probe.reshape(-1).tolist(), fit.reshape(-1).tolist()):
        print(f"sin(3 * {xi:+.1f}) = {math.sin(3 * xi):+.4f}   model: {fi:+.4f}")


if __name__ == "__main__":
    main()
