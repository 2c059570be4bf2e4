"""Shared benchmark helpers: timing loops and the JSON row format every benchmark writes.

A row is ``{"name", "genesis", "torch", "unit", "ratio", "goal"}``; ``ratio`` is defined per benchmark file (time
ratio Genesis/torch for host-overhead benchmarks, throughput ratio for device benchmarks) and stated in its doc.
"""

from __future__ import annotations

import json
import os
import statistics
import time
from typing import Any, Callable

# Model shapes of the Qwen benchmarks (bench_qwen, profile_qwen, bench_distributed): Qwen2.5-0.5B, and a tiny one that
# runs on a CPU.
QWEN25_05B = dict(hidden_size=896, intermediate_size=4864, num_hidden_layers=24, num_attention_heads=14,
                  num_key_value_heads=2, vocab_size=151936, max_position_embeddings=32768, rope_theta=1e6,
                  tie_word_embeddings=True)
QWEN_SMALL = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
             num_key_value_heads=2, vocab_size=512, max_position_embeddings=512, rope_theta=1e6,
             tie_word_embeddings=True)


def time_per_call(fn: Callable[[], Any], min_time: float = 0.3, repeat: int = 5) -> float:
    """Median seconds per call of ``fn`` over ``repeat`` rounds of at least ``min_time`` seconds each."""
    fn()
    n = 1
    while True:
        start = time.perf_counter()
        for _ in range(n):
            fn()
        elapsed = time.perf_counter() - start
        if elapsed >= min_time / repeat:
            break
        n *= 2
    rounds = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(n):
            fn()
        rounds.append((time.perf_counter() - start) / n)
    return statistics.median(rounds)


def timed(fn: Callable[[], Any], sync: Callable[[], None], warmup: int, repeat: int) -> float:
    """Median seconds of ``fn`` (each call synchronized) after ``warmup`` calls."""
    for _ in range(warmup):
        fn()
    sync()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - start)
    times.sort()
    return times[len(times) // 2]


def row(name: str, genesis: float, torch: float, unit: str, ratio: float, goal: str) -> dict:
    return {"name": name, "genesis": genesis, "torch": torch, "unit": unit, "ratio": ratio, "goal": goal}


def print_table(rows: list[dict]) -> None:
    print(f"{'benchmark':<40} {'genesis':>12} {'torch':>12} {'unit':>6} {'ratio':>7}  goal")
    for r in rows:
        print(f"{r['name']:<40} {r['genesis']:>12.3f} {r['torch']:>12.3f} {r['unit']:>6} {r['ratio']:>7.2f}"
              f"  {r['goal']}")


def write_json(rows: list[dict], path: str | None) -> None:
    if not path:
        return
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        json.dump(rows, f, indent=2)
