"""The profiler's table for one training step of a ``bench_models`` program (Genesis's step, on cuda by default).

    python benchmark/profile_models.py [--row gpt2] [--batch 8] [--device cuda] [--sort cuda_time_total]
                                       [--limit 25] [--steps 1] [--small] [--variant WORD] [--python N]
                                       [--lib torch] [--shapes] [--kernels]

Builds the same program ``bench_models.py`` times (same weights, same batches), runs warm-up steps, then profiles
one step with ``genesis.profiler`` and prints the table, the host-device synchronizations and the step's wall time.
``--python N`` also prints the N Python functions with the most own time over three steps (``cProfile``), to find
where the host time of a host-bound step goes; ``--pstats FILE`` also writes those three steps' raw statistics (for
``pstats`` / snakeviz: callers and callees). ``--lib torch`` runs the same program on torch and prints
``torch.profiler``'s table of the same step instead, to compare op by op; ``--shapes`` groups the table's rows by
input shapes (each convolution of a network on its own row). ``--kernels`` also records the GPU kernels of one
more step with torch's profiler (CUPTI sees every kernel of the process, whichever library launched it) and
prints them by GPU time: the device time of either library's step, kernel by kernel, without host gaps.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import os
import pstats
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import genesis
from benchmark.bench_models import CASES, initial_state, start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--row", default="gpt2", help="a --rows name of bench_models")
    parser.add_argument("--batch", type=int, default=8, help="batch of the GPT rows")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--sort", default="cuda_time_total")
    parser.add_argument("--limit", type=int, default=25)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--small", action="store_true", help="the program's small configuration (a CPU check)")
    parser.add_argument("--steps", type=int, default=1,
                        help="unprofiled steps to time, each split into host time (until the step returns) and wall")
    parser.add_argument("--python", type=int, default=0, metavar="N",
                        help="also print the N Python functions with the most own time over three steps")
    parser.add_argument("--pstats", default="", metavar="FILE", help="with --python: write the raw statistics here")
    parser.add_argument("--variant", default="", help="a word of the row's name, for rows that share a --rows name "
                                                      "(e.g. --row resnet50 --variant bf16)")
    parser.add_argument("--lib", default="genesis", choices=("genesis", "torch"),
                        help="the library that runs the program (torch: torch.profiler's table)")
    parser.add_argument("--shapes", action="store_true", help="one row per op and input shapes")
    parser.add_argument("--kernels", action="store_true", help="also the GPU kernels of a step, recorded by CUPTI")
    args = parser.parse_args()
    lib = genesis
    if args.lib == "torch":
        import torch
        lib = torch
    case = next(c for c in CASES if c.key == args.row and (c.key != "gpt2" or f"b{args.batch}x" in c.name)
                and args.variant in c.name)
    cfg = case.small if args.small else case.full
    rng = np.random.default_rng(0)
    # Warm-up and timed steps, the profiled step, and the three cProfile steps of --python.
    timed_end = args.warmup + args.steps
    batches = [case.data(rng, cfg) for _ in range(timed_end + 1 + (3 if args.python else 0))]
    program = start(lib, case, cfg, args.device, initial_state(case, cfg), parity=False)
    for batch in batches[:args.warmup]:
        program.step(batch)
    sync = lib.cuda.synchronize if args.device == "cuda" else (lambda: None)
    sync()
    if args.device == "cuda" and lib is genesis:
        stats = genesis.cuda.memory_stats
    else:  # torch counts no driver allocations of its own
        stats = lambda: {"driver_alloc_calls": 0}  # noqa: E731
    walls = []
    collections: list[list[float]] = []  # [generation, seconds] of each garbage collection in the step

    def on_gc(phase: str, info: dict) -> None:
        if phase == "start":
            collections.append([info["generation"], time.perf_counter()])
        else:
            collections[-1][1] = time.perf_counter() - collections[-1][1]
    gc.callbacks.append(on_gc)
    for i, batch in enumerate(batches[args.warmup:timed_end]):
        calls = stats()["driver_alloc_calls"]
        collections.clear()
        begin = time.perf_counter()
        program.step(batch)
        host = time.perf_counter() - begin
        sync()
        walls.append(time.perf_counter() - begin)
        gcs = ", ".join(f"gen{g} {t * 1e3:.1f} ms" for g, t in collections if g > 0 or t > 1e-3)
        print(f"step {i}: host {host * 1e3:.1f} ms, wall {walls[-1] * 1e3:.1f} ms, "
              f"driver allocations {stats()['driver_alloc_calls'] - calls}, "
              f"{len(collections)} garbage collections ({sum(t for _, t in collections) * 1e3:.2f} ms)"
              f"{': ' + gcs if gcs else ''}")
    gc.callbacks.remove(on_gc)
    wall = min(walls)
    activities = [lib.profiler.ProfilerActivity.CPU]
    if args.device == "cuda":
        activities.append(lib.profiler.ProfilerActivity.CUDA)
    with lib.profiler.profile(activities=activities, record_shapes=args.shapes) as prof:
        program.step(batches[timed_end])
        sync()
    print(f"{case.name}: fastest unprofiled step {wall * 1e3:.1f} ms")
    print(prof.key_averages(group_by_input_shape=args.shapes).table(sort_by=args.sort, row_limit=args.limit))
    if args.kernels:
        import torch
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as kernels:
            program.step(batches[timed_end])
            sync()
        print(kernels.key_averages().table(sort_by="self_cuda_time_total", row_limit=args.limit))
    if args.python:
        profiler = cProfile.Profile()
        profiler.enable()
        for batch in batches[timed_end + 1:]:
            program.step(batch)
        sync()
        profiler.disable()
        if args.pstats:
            profiler.dump_stats(args.pstats)
        pstats.Stats(profiler, stream=sys.stdout).sort_stats("tottime").print_stats(args.python)


if __name__ == "__main__":
    main()
