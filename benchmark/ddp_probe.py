"""Where a DistributedDataParallel step's time goes: the same training step under several DDP settings, in one job.

    python -m genesis.distributed.run --nproc-per-node 4 benchmark/ddp_probe.py [--batch 4] [--seq 1024]

Every rank builds the Qwen2.5-0.5B-shape model of ``bench_distributed`` for each variant and times synchronized
steps (median); rank 0 prints each variant's median per rank. Variants: the plain model on every rank at once (no
communication), DDP as configured by default, larger buckets, gradients as bucket views, and DDP whose all-reduces
are replaced by nothing (the DDP machinery's own cost). A last row times the all-reduces of a step's gradients
alone (same buckets), with no compute beside them.
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
    """[(name, median seconds per step)] of one variant (``kwargs`` None: the plain model), and for plain DDP the
    step's all-reduces alone."""
    step, net = qwen_training_step(shape, device, dtype, args.batch, args.seq, kwargs)
    real_all_reduce = collectives.all_reduce
    if name == "ddp no all-reduce":
        collectives.all_reduce = lambda *a, **k: _Done()
    dist.barrier()
    try:
        out = [(name, timed(step, sync, 3, args.repeat))]
    finally:
        collectives.all_reduce = real_all_reduce
    if name == "ddp":
        buffers = [b.buffer for b in net._buckets]

        def reduce_all() -> None:
            works = [dist.all_reduce(b, dist.ReduceOp.AVG, async_op=True) for b in buffers]
            for w in works:
                w.wait()

        dist.barrier()
        out.append((f"all-reduces alone ({len(buffers)} buckets)", timed(reduce_all, sync, 3, args.repeat)))
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--seq", type=int, default=1024)
    parser.add_argument("--repeat", type=int, default=12)
    parser.add_argument("--small", action="store_true", help="a tiny model on the CPU through gloo (checks the script)")
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
    results = []
    for name, kwargs in variants:
        results += _variant(name, kwargs, shape, device, dtype, sync, args)
        gc.collect()  # the variant's model and optimizer state go before the next is built
    everyone: list = [None] * dist.get_world_size()
    dist.all_gather_object(everyone, results)
    if dist.get_rank() == 0:
        print(f"{'variant':<40} " + " ".join(f"rank{r:<5}" for r in range(len(everyone))) + "  (ms, median)")
        for i, (name, _) in enumerate(results):
            print(f"{name:<40} " + " ".join(f"{res[i][1] * 1e3:9.1f}" for res in everyone))
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
