"""Training-step time of Genesis against PyTorch on the CPU, side by side in one process.

Cases: an MLP 784-512-512-10 at batch 128 (SGD with momentum, and AdamW) and the digits CNN of
``examples/digits.py`` at batch 64 (AdamW). One step is forward, cross-entropy, backward and the optimizer update;
both frameworks start from the same weights and see the same batch. ``ratio`` = Genesis time / torch time per
step (lower is better; goal at most 1.3).

    python benchmark/bench_training.py [--json out.json] [--threads N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from typing import Any, Callable

import numpy as np
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "examples"))

from digits import make_cnn  # noqa: E402

import genesis  # noqa: E402
from benchmark.common import print_table, row, time_per_call, write_json  # noqa: E402

GOAL = 1.3


def make_mlp(layers: Any) -> Any:
    return layers.Sequential(layers.Linear(784, 512), layers.ReLU(), layers.Linear(512, 512), layers.ReLU(),
                             layers.Linear(512, 10))


def copy_weights(torch_model: torch.nn.Module, genesis_model: genesis.nn.Module) -> None:
    state = {k: genesis.tensor(v.detach().numpy()) for k, v in torch_model.state_dict().items()}
    genesis_model.load_state_dict(state)


def step_fn(lib: Any, model: Any, optimizer: Any, x: Any, y: Any) -> Callable[[], None]:
    cross_entropy = lib.nn.functional.cross_entropy

    def step() -> None:
        loss = cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    return step


def interleaved(g_step: Callable[[], None], t_step: Callable[[], None], rounds: int = 7) -> tuple[float, float]:
    """Median milliseconds per step of each, timing them in alternating rounds so load drifts hit both alike."""
    g_times, t_times = [], []
    for _ in range(rounds):
        g_times.append(time_per_call(g_step, min_time=0.2, repeat=1))
        t_times.append(time_per_call(t_step, min_time=0.2, repeat=1))
    return statistics.median(g_times) * 1e3, statistics.median(t_times) * 1e3


def case(name: str, make: Callable[[Any], Any], input_shape: tuple[int, ...], make_opt: Callable[[Any, Any], Any]
         ) -> dict:
    torch.manual_seed(0)
    t_model = make(torch.nn)
    g_model = make(genesis.nn)
    copy_weights(t_model, g_model)
    rng = np.random.default_rng(0)
    x = rng.standard_normal(input_shape).astype(np.float32)
    y = rng.integers(0, 10, input_shape[0])
    t_step = step_fn(torch, t_model, make_opt(torch.optim, t_model), torch.from_numpy(x), torch.from_numpy(y))
    g_step = step_fn(genesis, g_model, make_opt(genesis.optim, g_model), genesis.tensor(x), genesis.tensor(y))
    g_ms, t_ms = interleaved(g_step, t_step)
    return row(name, g_ms, t_ms, "ms", g_ms / t_ms, f"time ratio <= {GOAL}")


def sgd(optim: Any, model: Any) -> Any:
    return optim.SGD(model.parameters(), lr=0.01, momentum=0.9)


def adamw(optim: Any, model: Any) -> Any:
    return optim.AdamW(model.parameters(), lr=1e-3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="write the rows to this JSON file")
    parser.add_argument("--threads", type=int, help="torch intra-op threads (both frameworks compute with them)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    rows = [
        case("mlp 784-512-512-10 b128 sgd", make_mlp, (128, 784), sgd),
        case("mlp 784-512-512-10 b128 adamw", make_mlp, (128, 784), adamw),
        case("digits cnn b64 adamw", make_cnn, (64, 1, 8, 8), adamw),
    ]
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    print_table(rows)
    write_json(rows, args.json)


if __name__ == "__main__":
    main()
