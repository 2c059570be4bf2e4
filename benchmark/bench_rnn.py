"""One recurrent layer, forward + backward, Genesis vs PyTorch eager in the same process on the same inputs.

The layer of the word-language-model rows of ``bench_models.py``: 650 -> 650 hidden units over 35 steps x batch 20,
for LSTM and GRU, padded and packed (sequences of 11 to 35 steps), and an LSTM projected to 256. Each row times
Genesis's fused layer (one autograd node per layer and direction) and, as the "before" column, Genesis's per-step
composite (the path packed sequences and projections took before), against torch's layer (oneDNN's fused LSTM on
the CPU, cuDNN on cuda). On cuda Genesis's layer is cuDNN's RNN too, and a further column times the time loop of
fused cells that runs without cuDNN. Rounds of the libraries alternate and each keeps its best round, so a shared
machine's load hits both alike. ``ratio`` is torch's time over Genesis's fused time (goal >= 0.5 on the CPU, >= 0.9
on cuda). Both libraries compute float32 in full precision unless ``--tf32`` (TF32 tensor cores in both; torch's
own default is TF32 in cuDNN's RNN).

    python benchmark/bench_rnn.py --device cpu|cuda [--threads 2] [--tf32] [--json PATH]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any, Callable

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch

import genesis
import genesis.nn.functional.rnn as rnn_functional
from benchmark.common import print_table, row, write_json

STEPS, BATCH, SIZE = 35, 20, 650


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()
        genesis.cuda.synchronize()


def _best(fn: Callable[[], None], device: str, rounds: list[float]) -> None:
    _sync(device)
    start = time.perf_counter()
    fn()
    fn()
    _sync(device)
    rounds.append((time.perf_counter() - start) / 2)


PROJ = 256  # the projected LSTM row's proj_size
# The packed rows' sequence lengths: from 35 steps down to 11, unsorted (pack_padded_sequence sorts them).
LENGTHS = [35 - (7 * k) % 25 for k in range(BATCH)]


def bench(mode: str, device: str, rounds: int, packed: bool = False, proj: int = 0) -> dict:
    torch.manual_seed(0)
    extra = {"proj_size": proj} if proj else {}
    tm = getattr(torch.nn, mode)(SIZE, SIZE, **extra).to(device)
    gm = getattr(genesis.nn, mode)(SIZE, SIZE, **extra).to(device)
    gm.load_state_dict({k: genesis.tensor(v.detach().cpu().numpy()) for k, v in tm.state_dict().items()})
    xt = torch.randn(STEPS, BATCH, SIZE, device=device, requires_grad=True)
    xg = genesis.tensor(xt.detach().cpu().numpy(), device=device, requires_grad=True)

    def step(m: Any, x: Any) -> Callable[[], None]:
        lib = torch if isinstance(m, torch.nn.Module) else genesis

        def run() -> None:
            data = lib.nn.utils.rnn.pack_padded_sequence(x, LENGTHS, enforce_sorted=False) if packed else x
            out, _ = m(data)
            (out.data if packed else out).sum().backward()
        return run

    fused = rnn_functional._fused
    times: dict[str, list[float]] = {"torch": [], "fused": [], "composite": []}
    for fn in (step(tm, xt), step(gm, xg)):
        fn()
    for _ in range(rounds):
        _best(step(tm, xt), device, times["torch"])
        _best(step(gm, xg), device, times["fused"])
    if device == "cuda":  # the time loop of fused cells, which cuda runs where cuDNN cannot serve
        times["loop"] = []
        with genesis.backends.cudnn.flags(enabled=False):
            step(gm, xg)()
            for _ in range(max(1, rounds // 2)):
                _best(step(gm, xg), device, times["loop"])
        loop = min(times["loop"]) * 1e3
    rnn_functional._fused = lambda *args: False  # the per-step composite, as before the fused layer
    try:
        step(gm, xg)()
        for _ in range(max(1, rounds // 2)):
            _best(step(gm, xg), device, times["composite"])
    finally:
        rnn_functional._fused = fused
    t, g, c = (min(times[k]) * 1e3 for k in ("torch", "fused", "composite"))
    variant = (" packed" if packed else "") + (f" proj {proj}" if proj else "")
    what = mode + variant
    print(f"{what}: per-step composite {c:.1f} ms ({t / c:.2f}x torch)")
    if device == "cuda":
        print(f"{what}: time loop of fused cells {loop:.1f} ms ({t / loop:.2f}x torch)")
    goal = ">= 0.9" if device == "cuda" else ">= 0.5"
    name = f"{mode.lower()} layer {STEPS}x{BATCH} {SIZE}{variant} fwd+bwd"
    return row(name, g, t, "ms", t / g, goal)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--threads", type=int, help="torch intra-op threads (both libraries use them on the CPU)")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--json", help="write the rows to this file")
    parser.add_argument("--tf32", action="store_true",
                        help="float32 products on TF32 tensor cores in both libraries; without it both compute in "
                             "full float32 (torch's default is TF32 in cuDNN's RNN, Genesis's full float32)")
    args = parser.parse_args()
    torch.backends.cudnn.allow_tf32 = genesis.backends.cuda.matmul.allow_tf32 = args.tf32
    if args.threads:
        torch.set_num_threads(args.threads)
    print(f"device {args.device}, torch {torch.__version__}, {torch.get_num_threads()} threads")
    rows = [bench(mode, args.device, args.rounds, packed) for packed in (False, True) for mode in ("LSTM", "GRU")]
    rows.append(bench("LSTM", args.device, args.rounds, proj=PROJ))
    print_table(rows)
    write_json(rows, args.json)


if __name__ == "__main__":
    main()
