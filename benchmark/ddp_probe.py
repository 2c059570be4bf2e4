"""Where a DistributedDataParallel step's time goes: the same training step under several DDP settings, in one job.

    python -m genesis.distributed.run --nproc-per-node 4 benchmark/ddp_probe.py [--batch 4] [--seq 1024] \
        [--graph] [--timeline]

Every rank builds the Qwen2.5-0.5B-shape model of ``bench_distributed`` for each variant and times synchronized
steps (median); rank 0 prints each variant's median per rank. Variants: the plain model on every rank at once (no
communication), DDP as configured by default, larger buckets, gradients as bucket views, and DDP whose all-reduces
are replaced by nothing (the DDP machinery's own cost). A last row times
the all-reduces of a step's gradients alone (same buckets), with no compute beside them.

``--graph`` captures each variant's whole step in a CUDA graph (as ``bench_distributed --graph``), so that the rows
measure the cards and the communication without the host. ``--timeline`` (needs torch, whose profiler reads the
device's kernel timeline) also records a step of each variant and prints, for rank 0, how much of the NCCL
kernels' time overlaps compute kernels, how much is exposed, when each all-reduce ran within the step, and the
kernels that took the most time.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import genesis
import genesis.distributed as dist
from benchmark.bench_distributed import qwen_training_step
from benchmark.common import QWEN25_05B, QWEN_SMALL, timed
from genesis.distributed import collectives


class _Done:
    def wait(self) -> bool:
        return True


def _variant(name: str, kwargs: dict | None, shape: dict, device: str, dtype, sync, args) -> list[tuple]:
    """[(name, median seconds per step)] of one variant (``kwargs`` None: the plain model), its timeline with
    ``--timeline``, and for plain DDP the step's all-reduces alone."""
    real = collectives.all_reduce
    if name == "ddp no all-reduce":  # before the step is built: a captured step keeps what it captured
        collectives.all_reduce = lambda *a, **k: _Done()
    try:
        step, net = qwen_training_step(shape, device, dtype, args.batch, args.seq, kwargs, graph=args.graph)
        dist.barrier()
        out = [(name, timed(step, sync, 3, args.repeat))]
        if args.timeline:
            out.append((f"timeline of {name}", _timeline(step, sync)))
    finally:
        collectives.all_reduce = real
    if name == "ddp":
        buffers = [b.buffer for b in net._buckets]

        def reduce_all() -> None:
            works = [dist.all_reduce(b, dist.ReduceOp.AVG, async_op=True) for b in buffers]
            for w in works:
                w.wait()

        dist.barrier()
        out.append((f"all-reduces alone ({len(buffers)} buckets)", timed(reduce_all, sync, 3, args.repeat)))
    return out


def _union(spans: list[tuple[float, float]]) -> list[tuple[float, float]]:
    merged: list[list[float]] = []
    for a, b in sorted(spans):
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    return [(a, b) for a, b in merged]


def _length(spans: list[tuple[float, float]]) -> float:
    return sum(b - a for a, b in spans)


def _intersect(x: list[tuple[float, float]], y: list[tuple[float, float]]) -> float:
    total, i, j = 0.0, 0, 0
    while i < len(x) and j < len(y):
        a, b = max(x[i][0], y[j][0]), min(x[i][1], y[j][1])
        total += max(0.0, b - a)
        if x[i][1] < y[j][1]:
            i += 1
        else:
            j += 1
    return total


def _timeline(step, sync) -> str:
    """The kernel timeline of one step (torch's profiler reads every kernel of the process, the Genesis and NCCL ones
    included), summarized by ``_summary``."""
    import json
    import tempfile

    from torch.profiler import ProfilerActivity, profile

    step()
    sync()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        step()
        sync()
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "trace.json")
        prof.export_chrome_trace(path)
        with open(path) as f:
            events = json.load(f)["traceEvents"]
    return _summary([e for e in events if e.get("cat") == "kernel"])


def _summary(kernels: list[dict]) -> str:
    """Of a step's kernels (chrome-trace events: name, ts and dur in us): NCCL time overlapped with compute and
    exposed, in ms, the all-reduces' start and end within the step, and the kernels that took the most time."""
    kernels = sorted(kernels, key=lambda e: e["ts"])
    t0 = kernels[0]["ts"]
    comm = [(e["ts"] - t0, e["ts"] - t0 + e["dur"]) for e in kernels if "nccl" in e["name"].lower()]
    compute = [(e["ts"] - t0, e["ts"] - t0 + e["dur"]) for e in kernels if "nccl" not in e["name"].lower()]
    cu, co = _union(comm), _union(compute)
    span = max(b for _, b in comm + compute)
    overlap = _intersect(cu, co)
    lines = [f"step {span / 1e3:.2f} ms: compute busy {_length(co) / 1e3:.2f}, nccl busy {_length(cu) / 1e3:.2f}, "
             f"overlapped {overlap / 1e3:.2f}, exposed {(_length(cu) - overlap) / 1e3:.2f}, "
             f"idle {(span - _length(_union(comm + compute))) / 1e3:.2f}; {len(comm)} nccl kernels"]
    if comm:
        lines.append("  all-reduces (start-end ms): " + " ".join(f"{a / 1e3:.1f}-{b / 1e3:.1f}" for a, b in comm))
    by_name: dict[str, list[float]] = {}
    for e in kernels:
        entry = by_name.setdefault(e["name"][:70], [0, 0.0])
        entry[0] += 1
        entry[1] += e["dur"]
    for kernel, (count, us) in sorted(by_name.items(), key=lambda kv: -kv[1][1])[:12]:
        lines.append(f"  {us / 1e3:7.3f} ms {count:5d}x  {kernel}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--seq", type=int, default=1024)
    parser.add_argument("--repeat", type=int, default=12)
    parser.add_argument("--small", action="store_true", help="a tiny model on the CPU through gloo (checks the script)")
    parser.add_argument("--graph", action="store_true", help="capture each variant's step in a CUDA graph")
    parser.add_argument("--timeline", action="store_true", help="the kernel timeline of a DDP step (needs torch)")
    parser.add_argument("--variants", help="comma-separated names of the variants to run (default: all)")
    args = parser.parse_args()
    local = dist.get_local_rank()
    shape = QWEN_SMALL if args.small else QWEN25_05B
    if args.small:
        dist.init_process_group("gloo")
        device, dtype, sync = "cpu", genesis.float32, (lambda: None)
    else:
        genesis.cuda.set_device(local)
        dist.init_process_group("nccl")
        device, dtype, sync = f"cuda:{local}", genesis.bfloat16, genesis.cuda.synchronize
    variants = [("plain", None), ("ddp", {}), ("ddp bucket 100MB", {"bucket_cap_mb": 100}),
                ("ddp bucket 2GB (one, at the end)", {"bucket_cap_mb": 2048}),
                ("ddp grad as bucket view", {"gradient_as_bucket_view": True}), ("ddp no all-reduce", {})]
    if args.variants:
        variants = [v for v in variants if v[0] in args.variants.split(",")]
    results = []
    for name, kwargs in variants:
        results += _variant(name, kwargs, shape, device, dtype, sync, args)
        gc.collect()  # the variant's model and optimizer state go before the next is built
    everyone: list = [None] * dist.get_world_size()
    dist.all_gather_object(everyone, results)
    if dist.get_rank() == 0:
        print(f"{'variant':<40} " + " ".join(f"rank{r:<5}" for r in range(len(everyone))) + "  (ms, median)")
        for i, (name, value) in enumerate(results):
            if isinstance(value, str):
                print(f"{name} (rank 0): {value}")
                continue
            print(f"{name:<40} " + " ".join(f"{res[i][1] * 1e3:9.1f}" for res in everyone))
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
