"""Genesis vs PyTorch on one CUDA GPU, op by op, in the same process on the same inputs.

Device ops are timed with CUDA events (Genesis with its own event-based benchmarker, torch with torch.cuda.Event),
median of repeated calls after warm-up. Host-overhead rows (tiny op, 100-op chain) are wall-clock per call with one
synchronization at the end. Every row's ``ratio`` is Genesis throughput / torch throughput (for host rows: torch
time / Genesis time), so ``ratio >= goal`` is a met goal.

    python benchmark/bench_ops.py [--quick] [--json PATH]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any, Callable

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch

import genesis
from benchmark.common import print_table, row, write_json

GOALS = {"elementwise": 0.95, "broadcast": 0.95, "reduce": 1.0, "argmax": 1.0, "index": 0.9, "matmul": 0.97,
         "bmm": 0.95, "tiny": 1.0, "chain": 1.0}
TD = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16, "int64": torch.int64}


def g_bench(fn: Callable[[], Any], rep: int) -> float:
    from genesis._impl.cuda.triton_driver import do_bench

    return do_bench(fn, warmup=3, rep=rep)


def t_bench(fn: Callable[[], Any], rep: int) -> float:
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(rep)]
    for s, e in events:
        s.record()
        fn()
        e.record()
    torch.cuda.synchronize()
    times = sorted(s.elapsed_time(e) for s, e in events)
    return times[len(times) // 2]


def to_g(t: torch.Tensor) -> genesis.Tensor:
    """A Genesis CUDA copy of a torch CUDA tensor (through the host)."""
    if t.dtype == torch.bfloat16:
        return genesis.tensor(t.float().cpu().numpy(), dtype=genesis.bfloat16, device="cuda")
    return genesis.tensor(t.cpu().numpy(), device="cuda")


def check_close(name: str, g: genesis.Tensor, t: torch.Tensor, tol: float) -> None:
    got = np.asarray(g.float().cpu().numpy() if g.dtype.is_floating_point else g.cpu().numpy(), dtype=np.float64)
    ref = t.double().cpu().numpy()
    err = np.linalg.norm(got - ref) / max(np.linalg.norm(ref), 1e-30)
    if not err <= tol:
        raise AssertionError(f"{name}: Genesis differs from torch (relative error {err:.3g} > {tol})")


def device_row(rows: list, name: str, kind: str, unit: str, work: float, gfn: Callable, tfn: Callable,
               rep: int) -> None:
    """Time both sides; ``work`` is bytes (unit GB/s) or flops (unit TFLOP/s) per call."""
    tg = g_bench(gfn, rep)
    tt = t_bench(tfn, rep)
    scale = 1e-9 if unit == "GB/s" else 1e-12
    g_rate, t_rate = work / (tg * 1e-3) * scale, work / (tt * 1e-3) * scale
    rows.append(row(name, g_rate, t_rate, unit, g_rate / t_rate, f">= {GOALS[kind]:.2f}"))
    print(f"  {name}: genesis {tg:.4f} ms, torch {tt:.4f} ms", flush=True)


def bench_elementwise(rows: list, quick: bool, rep: int) -> None:
    sizes = [1 << 24] if quick else [1 << 24, 1 << 26]
    for dt in ("float32", "bfloat16"):
        for n in sizes:
            a, b = torch.randn(n, device="cuda", dtype=TD[dt]), torch.randn(n, device="cuda", dtype=TD[dt])
            ga, gb = to_g(a), to_g(b)
            check_close(f"add {dt}", ga + gb, a + b, 1e-2)
            isz = a.element_size()
            device_row(rows, f"add {dt} 2^{n.bit_length() - 1}", "elementwise", "GB/s", 3 * n * isz,
                       lambda: ga + gb, lambda: a + b, rep)  # noqa: B023 - called before the loop moves on
            device_row(rows, f"exp {dt} 2^{n.bit_length() - 1}", "elementwise", "GB/s", 2 * n * isz,
                       lambda: ga.exp(), lambda: a.exp(), rep)  # noqa: B023 - called before the loop moves on
    a, b = torch.randn(8192, 8192, device="cuda"), torch.randn(8192, device="cuda")
    ga, gb = to_g(a), to_g(b)
    check_close("broadcast add", ga + gb, a + b, 1e-6)
    device_row(rows, "broadcast add 8192x8192+8192 fp32", "broadcast", "GB/s", (2 * a.numel() + b.numel()) * 4,
               lambda: ga + gb, lambda: a + b, rep)


def bench_reduce(rows: list, quick: bool, rep: int) -> None:
    x = torch.randn(8192, 8192, device="cuda")
    gx = to_g(x)
    check_close("row sum", gx.sum(1), x.sum(1), 1e-5)
    check_close("col sum", gx.sum(0), x.sum(0), 1e-5)
    nbytes = x.numel() * 4
    device_row(rows, "row sum 8192^2 fp32", "reduce", "GB/s", nbytes, lambda: gx.sum(1), lambda: x.sum(1), rep)
    device_row(rows, "column sum 8192^2 fp32", "reduce", "GB/s", nbytes, lambda: gx.sum(0), lambda: x.sum(0), rep)
    assert np.array_equal(gx.argmax(1).cpu().numpy(), x.argmax(1).cpu().numpy()), "argmax differs from torch"
    device_row(rows, "argmax rows 8192^2 fp32", "argmax", "GB/s", nbytes, lambda: gx.argmax(1),
               lambda: x.argmax(1), rep)
    if not quick:
        check_close("softmax", genesis.softmax(gx, 1), torch.softmax(x, 1), 1e-5)
        device_row(rows, "softmax rows 8192^2 fp32", "reduce", "GB/s", 2 * nbytes, lambda: genesis.softmax(gx, 1),
                   lambda: torch.softmax(x, 1), rep)


def bench_index(rows: list, quick: bool, rep: int) -> None:
    x = torch.randn(8192, 8192, device="cuda")
    idx = torch.randint(0, 8192, (8192, 1024), device="cuda")
    gx, gi = to_g(x), to_g(idx)
    check_close("gather", genesis.gather(gx, 1, gi), torch.gather(x, 1, idx), 0)
    device_row(rows, "gather dim1 8192x8192 -> 8192x1024 fp32", "index", "GB/s", idx.numel() * (8 + 4 + 4),
               lambda: genesis.gather(gx, 1, gi), lambda: torch.gather(x, 1, idx), rep)
    from genesis._impl import cuda as backend

    nx, ni = gx.ndarray, gi.ndarray
    device_row(rows, "gather kernel only (backend primitive)", "index", "GB/s", idx.numel() * (8 + 4 + 4),
               lambda: backend.gather(nx, 1, ni), lambda: torch.gather(x, 1, idx), rep)
    table = torch.randn(65536, 1024, device="cuda")
    rows_idx = torch.randint(0, 65536, (16384,), device="cuda")
    gt, gr = to_g(table), to_g(rows_idx)
    check_close("index_select", genesis.index_select(gt, 0, gr), torch.index_select(table, 0, rows_idx), 0)
    device_row(rows, "index_select rows 65536x1024 -> 16384 fp32", "index", "GB/s", 16384 * 1024 * 8,
               lambda: genesis.index_select(gt, 0, gr), lambda: torch.index_select(table, 0, rows_idx), rep)
    nt, nr = gt.ndarray, gr.ndarray
    device_row(rows, "index_select kernel only (backend primitive)", "index", "GB/s", 16384 * 1024 * 8,
               lambda: backend.index_select(nt, 0, nr), lambda: torch.index_select(table, 0, rows_idx), rep)


def bench_matmul(rows: list, quick: bool, rep: int) -> None:
    cases = [("bfloat16", 4096), ("float16", 4096)] if quick else \
        [("bfloat16", 4096), ("bfloat16", 8192), ("float16", 4096), ("float16", 8192)]
    for dt, n in cases:
        a, b = torch.randn(n, n, device="cuda", dtype=TD[dt]), torch.randn(n, n, device="cuda", dtype=TD[dt])
        ga, gb = to_g(a), to_g(b)
        check_close(f"matmul {dt}", ga @ gb, a @ b, 1e-2)
        device_row(rows, f"matmul {dt} {n}^3", "matmul", "TFLOP/s", 2 * n ** 3, lambda: ga @ gb, lambda: a @ b,  # noqa: B023 - called before the loop moves on
                   rep)
    n = 4096
    a, b = torch.randn(n, n, device="cuda"), torch.randn(n, n, device="cuda")
    ga, gb = to_g(a), to_g(b)
    for tf32 in (False, True):
        torch.backends.cuda.matmul.allow_tf32 = tf32
        genesis.cuda.set_allow_tf32(tf32)
        check_close(f"matmul fp32 tf32={tf32}", ga @ gb, a @ b, 2e-3 if tf32 else 1e-5)
        device_row(rows, f"matmul fp32 {n}^3 TF32 {'on' if tf32 else 'off'}", "matmul", "TFLOP/s", 2 * n ** 3,
                   lambda: ga @ gb, lambda: a @ b, rep)
    torch.backends.cuda.matmul.allow_tf32 = False
    genesis.cuda.set_allow_tf32(False)
    a, b = torch.randn(32, 1024, 1024, device="cuda", dtype=torch.bfloat16), \
        torch.randn(32, 1024, 1024, device="cuda", dtype=torch.bfloat16)
    ga, gb = to_g(a), to_g(b)
    check_close("bmm", ga @ gb, a @ b, 1e-2)
    device_row(rows, "batched matmul bf16 32x1024^3", "bmm", "TFLOP/s", 2 * 32 * 1024 ** 3, lambda: ga @ gb,
               lambda: a @ b, rep)
    at = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    gat = to_g(at)
    check_close("matmul transposed", gat.t() @ gat, at.t() @ at, 1e-2)
    device_row(rows, "matmul bf16 4096^3 A^T (view)", "matmul", "TFLOP/s", 2 * 4096 ** 3, lambda: gat.t() @ gat,
               lambda: at.t() @ at, rep)


def host_row(rows: list, name: str, kind: str, gfn: Callable, tfn: Callable, n: int) -> None:
    def per_call(fn: Callable, sync: Callable) -> float:
        for _ in range(50):
            fn()
        sync()
        best = float("inf")
        for _ in range(5):
            start = time.perf_counter()
            for _ in range(n):
                fn()
            sync()
            best = min(best, (time.perf_counter() - start) / n)
        return best * 1e6

    tg = per_call(gfn, genesis.cuda.synchronize)
    tt = per_call(tfn, torch.cuda.synchronize)
    rows.append(row(name, tg, tt, "us", tt / tg, f">= {GOALS[kind]:.2f}"))
    print(f"  {name}: genesis {tg:.2f} us, torch {tt:.2f} us", flush=True)


def bench_host(rows: list, quick: bool) -> None:
    a, b = torch.randn(16, device="cuda"), torch.randn(16, device="cuda")
    ga, gb = to_g(a), to_g(b)
    host_row(rows, "tiny op a+b (16 floats), per op", "tiny", lambda: ga + gb, lambda: a + b, 2000)
    # A small product is host-bound: the path down to cuBLASLt (plan lookup, allocation, launch) against torch's.
    m, w = torch.randn(64, 64, device="cuda", dtype=torch.bfloat16), torch.randn(64, 64, device="cuda",
                                                                                 dtype=torch.bfloat16)
    gm, gw = to_g(m), to_g(w)
    host_row(rows, "small matmul 64x64 bf16, per op", "tiny", lambda: gm @ gw, lambda: m @ w, 2000)
    idx = torch.randint(0, 64, (32,), device="cuda")
    gidx = to_g(idx)
    host_row(rows, "small index_select 32 of 64 rows, per op", "tiny", lambda: genesis.index_select(gm, 0, gidx),
             lambda: torch.index_select(m, 0, idx), 2000)

    def chain(lib: Any, x: Any) -> Any:
        y = x
        for _ in range(24):
            y = (y * 1.01 + 0.1).relu() - 0.05
        return y.sum()

    x = torch.randn(1024, device="cuda", requires_grad=True)
    gx = to_g(x.detach()).requires_grad_(True)

    def g_step() -> None:
        chain(genesis, gx).backward()
        gx.grad = None

    def t_step() -> None:
        chain(torch, x).backward()
        x.grad = None

    host_row(rows, "100-op forward+backward chain, per step", "chain", g_step, t_step, 50 if quick else 200)


def bench_allocator(rows: list) -> None:
    """Host time of a cached 1 MiB alloc+free pair: Genesis's free list and the driver pool vs torch's allocator."""
    from genesis._impl.cuda import allocator, runtime

    def pair_us(alloc: allocator.CachingAllocator) -> float:
        stream = runtime.stream_handle()
        for _ in range(100):
            p, s = alloc.malloc(1 << 20, stream)
            alloc.free(p, s, stream)
        n = 20000
        start = time.perf_counter()
        for _ in range(n):
            p, s = alloc.malloc(1 << 20, stream)
            alloc.free(p, s, stream)
        return (time.perf_counter() - start) / n * 1e6

    def torch_pair_us() -> float:
        for _ in range(100):
            torch.empty(1 << 18, device="cuda")
        n = 20000
        start = time.perf_counter()
        for _ in range(n):
            torch.empty(1 << 18, device="cuda")
        return (time.perf_counter() - start) / n * 1e6

    dev = runtime.current_device()
    free_list = pair_us(allocator.get(dev))
    pool = pair_us(allocator.CachingAllocator(dev, mode="pool"))
    t = torch_pair_us()
    rows.append(row("alloc+free 1 MiB, Genesis free list (default)", free_list, t, "us", t / free_list, "info"))
    rows.append(row("alloc+free 1 MiB, Genesis on the driver pool", pool, t, "us", t / pool, "info"))
    print(f"  allocator pair: free list {free_list:.3f} us, driver pool {pool:.3f} us, torch {t:.3f} us", flush=True)


def bench_copies(rows: list) -> None:
    host = np.random.default_rng(0).standard_normal(64 << 20, dtype=np.float32)  # 256 MiB

    def per_call(fn: Callable[[], Any]) -> float:
        fn()
        times = []
        for _ in range(5):
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
        return sorted(times)[2]

    def torch_h2d() -> None:
        torch.from_numpy(host).cuda()
        torch.cuda.synchronize()

    tg = per_call(lambda: genesis.tensor(host, device="cuda"))
    tt = per_call(torch_h2d)
    rows.append(row("host->device copy 256 MiB (pageable numpy)", host.nbytes / tg / 1e9, host.nbytes / tt / 1e9,
                    "GB/s", tt / tg, "info"))
    g, t = genesis.tensor(host, device="cuda"), torch.from_numpy(host).cuda()
    tg = per_call(lambda: g.cpu().numpy())
    tt = per_call(lambda: t.cpu().numpy())
    rows.append(row("device->host copy 256 MiB", host.nbytes / tg / 1e9, host.nbytes / tt / 1e9, "GB/s", tt / tg,
                    "info"))
    print(f"  copies: {rows[-2]['genesis']:.1f}/{rows[-2]['torch']:.1f} GB/s H2D, "
          f"{rows[-1]['genesis']:.1f}/{rows[-1]['torch']:.1f} GB/s D2H (genesis/torch)", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer sizes, for a smoke run")
    parser.add_argument("--json", default=None, help="write the rows as JSON to this path")
    parser.add_argument("--only", default=None, help="comma-separated groups: ew,reduce,index,matmul,host,alloc,copy")
    args = parser.parse_args()
    if not genesis.cuda.is_available():
        raise SystemExit("bench_ops: needs a CUDA GPU")
    torch.backends.cuda.matmul.allow_tf32 = False
    rep = 10 if args.quick else 30
    groups = args.only.split(",") if args.only else ["ew", "reduce", "index", "matmul", "host", "alloc", "copy"]
    print(f"device: {genesis.cuda.get_device_name()} | torch {torch.__version__}", flush=True)
    rows: list = []
    for g in groups:
        try:
            if g == "ew":
                bench_elementwise(rows, args.quick, rep)
            elif g == "reduce":
                bench_reduce(rows, args.quick, rep)
            elif g == "index":
                bench_index(rows, args.quick, rep)
            elif g == "matmul":
                bench_matmul(rows, args.quick, rep)
            elif g == "host":
                bench_host(rows, args.quick)
            elif g == "alloc":
                bench_allocator(rows)
            elif g == "copy":
                bench_copies(rows)
        except Exception as e:  # one failing group must not hide the others' numbers
            print(f"  group {g} failed: {type(e).__name__}: {e}", flush=True)
            rows.append(row(f"{g} (failed: {type(e).__name__})", float("nan"), float("nan"), "", float("nan"), ""))
    print_table(rows)
    write_json(rows, args.json)


if __name__ == "__main__":
    main()
