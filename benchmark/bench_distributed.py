"""Data-parallel training across GPUs: Genesis DDP (NCCL) and torch DDP (NCCL) side by side on the same cards.

Rows (``ratio`` as stated per row, the issue's goal beside it):

- ``train_step_<N>gpu``: Qwen2.5-0.5B-shape bf16 training step (forward + backward + AdamW, batch 4 x 1024 per GPU)
  under DistributedDataParallel on N GPUs, global tokens/s; ratio = Genesis / torch (goal >= 1.0). N = 1 runs the
  plain model (the baseline of scaling).
- ``scaling_<N>gpu``: tokens/s on N GPUs / (N x tokens/s on one GPU), Genesis in ``genesis``, torch in ``torch``;
  ratio = Genesis's efficiency (goal >= 0.95 on 2, >= 0.90 on 4).
- ``independent_scaling_<N>gpu``: the same efficiency for N processes that each train the plain model on their own
  GPU at the same time, with no communication at all, counted at the slowest process (DDP moves at the pace of its
  slowest rank): the ceiling that the host and the cards leave for DDP's scaling; ratio = Genesis's.
- ``train_step_graph_<N>gpu`` / ``scaling_graph_<N>gpu`` (``--graph``): the same step with the fused capturable
  AdamW, captured whole (forward, backward with DDP's all-reduces, optimizer) in one CUDA graph and replayed, in each
  library (torch: its documented recipe, 11 warm-up steps on a side stream; nan where its capture fails). A replay
  costs the host one launch, so these rows measure the cards and the communication, not the host.
- ``all_reduce_busbw_<N>gpu``: bus bandwidth of all_reduce on 256 MiB of bf16 (size / time x 2(N-1)/N), GB/s;
  ratio = Genesis / torch (goal >= 0.95).
- ``two_nodes_*``: the same on 2 "nodes" of one GPU each on this host, NCCL's shared-memory and peer-to-peer
  transports disabled so that traffic takes the network path.

Every measurement runs in its own job started by the launcher (Genesis: ``python -m genesis.distributed.run``,
torch: ``python -m torch.distributed.run``); this script starts them with ``--worker`` and gathers the numbers. A
training step is timed alone (synchronized), and the median over the timed steps is kept, so that one slow step does
not move the row.

    python benchmark/bench_distributed.py --gpus 1,2,4 --two-nodes  # results/<card>x<N>-<date>-distributed.json
    python benchmark/bench_distributed.py --gpus 1,2,4 --graph --no-all-reduce --no-independent
    python benchmark/bench_distributed.py --small                   # a tiny model on the CPU through gloo
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from benchmark.common import QWEN25_05B, QWEN_SMALL, print_table, row, timed, write_json  # noqa: E402

# ---------------------------------------------------------------- one rank of a measurement job

def _timed_mean(step, sync, warmup: int, repeat: int) -> float:
    """The mean time of ``step`` over ``repeat`` calls queued back to back (for collectives)."""
    for _ in range(warmup):
        step()
    sync()
    start = time.perf_counter()
    for _ in range(repeat):
        step()
    sync()
    return (time.perf_counter() - start) / repeat


def qwen_training_step(shape: dict, device: str, dtype: object, batch: int, seq: int,
                       ddp_kwargs: dict | None, graph: bool = False) -> tuple:
    """(step, model as called) of the Genesis training step this benchmark times: the Qwen-shape model (seed 0),
    wrapped in DistributedDataParallel(**ddp_kwargs) unless ddp_kwargs is None, AdamW, one fixed batch of tokens.

    With ``graph`` the optimizer is the fused capturable AdamW, two eager steps warm up, and the step returned
    replays the whole step (forward, backward with DDP's all-reduces, optimizer) captured in one CUDA graph."""
    import genesis
    from genesis.models.qwen import QwenConfig, QwenForCausalLM

    genesis.manual_seed(0)
    model = QwenForCausalLM(QwenConfig(**shape), device=device, dtype=dtype)
    net = model if ddp_kwargs is None else genesis.nn.parallel.DistributedDataParallel(model, **ddp_kwargs)
    opt = genesis.optim.AdamW(model.parameters(), lr=1e-5, **({"fused": True, "capturable": True} if graph else {}))
    ids = genesis.randint(0, shape["vocab_size"], (batch, seq), device=device)

    def step() -> None:
        net(ids, labels=ids).loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    if not graph:
        return step, net
    for _ in range(2):
        step()
    captured = genesis.cuda.CUDAGraph()
    with genesis.cuda.graph(captured):
        net(ids, labels=ids).loss.backward()  # the gradients made here live in the graph's memory
        opt.step()
    return captured.replay, net


def _worker_genesis(args: argparse.Namespace) -> dict:
    import genesis
    import genesis.distributed as dist

    cuda = not args.small
    n = int(os.environ.get("WORLD_SIZE", "1"))
    if cuda:
        genesis.cuda.set_device(dist.get_local_rank())
    device = f"cuda:{dist.get_local_rank()}" if cuda else "cpu"
    dtype = genesis.bfloat16 if cuda else genesis.float32
    options = dist.ProcessGroupNCCL.Options(is_high_priority_stream=args.high_priority_stream)
    dist.init_process_group("nccl" if cuda else "gloo", pg_options=options)
    result = {}
    if args.measure in ("train", "independent", "graph"):
        shape = QWEN_SMALL if args.small else QWEN25_05B
        ddp = n > 1 and args.measure != "independent"
        step, _ = qwen_training_step(shape, device, dtype, args.batch, args.seq, {} if ddp else None,
                                     graph=args.measure == "graph")
        seconds = timed(step, lambda: genesis.cuda.synchronize() if cuda else None, args.warmup, args.repeat)
        result["tokens_per_s"] = n * args.batch * args.seq / seconds
    else:
        x = genesis.ones(args.numel, dtype=genesis.bfloat16 if cuda else genesis.float32, device=device)
        seconds = _timed_mean(lambda: dist.all_reduce(x), lambda: genesis.cuda.synchronize() if cuda else None,
                              args.warmup, 4 * args.repeat)
        result["busbw_gbps"] = x.numel() * x.element_size() / seconds * 2 * (n - 1) / n / 1e9
    dist.barrier()
    dist.destroy_process_group()
    return result


def _worker_torch(args: argparse.Namespace) -> dict:
    import torch
    import torch.distributed as dist
    import transformers

    cuda = not args.small
    n = int(os.environ.get("WORLD_SIZE", "1"))
    local = int(os.environ.get("LOCAL_RANK", "0"))
    if args.measure == "graph":  # torch's rule for capturing DDP: no NCCL watchdog error handling
        os.environ["TORCH_NCCL_ASYNC_ERROR_HANDLING"] = "0"
    if cuda:
        torch.cuda.set_device(local)
    device = f"cuda:{local}" if cuda else "cpu"
    dtype = torch.bfloat16 if cuda else torch.float32
    if cuda:
        options = dist.ProcessGroupNCCL.Options(is_high_priority_stream=args.high_priority_stream)
        dist.init_process_group("nccl", pg_options=options)
    else:
        dist.init_process_group("gloo")
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    result = {}
    if args.measure in ("train", "independent", "graph"):
        torch.manual_seed(0)
        shape = QWEN_SMALL if args.small else QWEN25_05B
        config = transformers.Qwen2Config(**shape)
        model = transformers.AutoModelForCausalLM.from_config(config, attn_implementation="sdpa", dtype=dtype)
        model = model.to(device)
        ddp = n > 1 and args.measure != "independent"
        graph = args.measure == "graph"
        side = torch.cuda.Stream() if graph else None  # torch's recipe: DDP built and warmed up on a side stream
        if side is not None:
            side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side) if side is not None else contextlib.nullcontext():
            net = torch.nn.parallel.DistributedDataParallel(model) if ddp else model
        opt = torch.optim.AdamW(model.parameters(), lr=1e-5, **({"fused": True, "capturable": True} if graph else {}))
        ids = torch.randint(0, shape["vocab_size"], (args.batch, args.seq), device=device)

        def step() -> None:
            net(input_ids=ids, labels=ids).loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)

        if graph:
            try:
                step = _torch_graphed(torch, side, net, opt, ids, step)
            except Exception as e:  # recorded as nan: the row says torch's capture failed
                print(f"torch could not capture the step: {type(e).__name__}: {e}", flush=True)
                step = None
        if step is None:
            result["tokens_per_s"] = float("nan")
        else:
            result["tokens_per_s"] = n * args.batch * args.seq / timed(step, sync, args.warmup, args.repeat)
    else:
        x = torch.ones(args.numel, dtype=torch.bfloat16 if cuda else torch.float32, device=device)
        seconds = _timed_mean(lambda: dist.all_reduce(x), sync, args.warmup, 4 * args.repeat)
        result["busbw_gbps"] = x.numel() * x.element_size() / seconds * 2 * (n - 1) / n / 1e9
    dist.barrier()
    dist.destroy_process_group()
    return result


def _torch_graphed(torch: object, side: object, net: object, opt: object, ids: object, step: object) -> object:
    """torch's recipe for a captured DDP step: DDP built on a side stream, eager warm-up there (11 steps: DDP settles
    its buckets by then), then the step captured in one graph; returns the replay."""
    with torch.cuda.stream(side):
        for _ in range(11):
            step()
    torch.cuda.current_stream().wait_stream(side)
    captured = torch.cuda.CUDAGraph()
    with torch.cuda.graph(captured):
        net(input_ids=ids, labels=ids).loss.backward()
        opt.step()
    return captured.replay


# ---------------------------------------------------------------- the driver

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _job(args: argparse.Namespace, lib: str, measure: str, n: int, two_nodes: bool = False) -> dict:
    """Run one measurement job of ``n`` ranks and return its numbers: each the slowest rank's (for DDP the ranks move
    together; independent processes do not)."""
    launcher = "genesis.distributed.run" if lib == "genesis" else "torch.distributed.run"
    with tempfile.TemporaryDirectory() as folder:
        out = os.path.join(folder, "result.json")
        worker = [__file__, "--worker", lib, "--measure", measure, "--out", out, "--batch", str(args.batch),
                  "--seq", str(args.seq), "--numel", str(args.numel), "--warmup", str(args.warmup),
                  "--repeat", str(args.repeat)] + (["--small"] if args.small else [])
        worker += ["--high-priority-stream"] if args.high_priority_stream else []
        env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
        port = str(_free_port())
        if two_nodes:
            env.update(NCCL_SHM_DISABLE="1", NCCL_P2P_DISABLE="1")
            procs = [subprocess.Popen([sys.executable, "-m", launcher, "--nnodes", "2", "--node-rank", str(node),
                                       "--nproc-per-node", "1", "--master-addr", "127.0.0.1", "--master-port", port,
                                       *worker], env=dict(env, CUDA_VISIBLE_DEVICES=str(node)))
                     for node in range(2)]
            codes = [p.wait() for p in procs]
        else:
            bind = ["--numa-binding", args.numa_binding] if args.numa_binding else []
            codes = [subprocess.call([sys.executable, "-m", launcher, "--nproc-per-node", str(n), "--master-addr",
                                      "127.0.0.1", "--master-port", port, *bind, *worker], env=env)]
        if any(codes):
            raise RuntimeError(f"bench_distributed: the {lib} {measure} job on {n} rank(s) failed ({codes})")
        results = []
        for rank in range(n):
            with open(f"{out}.{rank}") as f:
                results.append(json.load(f))
        return {key: min(r[key] for r in results) for key in results[0]}


def _card() -> str:
    import genesis

    name = genesis.cuda.get_device_name(0).lower()
    for card in ("h200", "h100", "a100", "l40s", "l4"):
        if card in name:
            return card
    return name.replace(" ", "-")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--gpus", default=None, help="comma-separated GPU counts (default 1,2,4 on cuda; 1,2 small)")
    parser.add_argument("--small", action="store_true", help="tiny model and sizes on the CPU through gloo")
    parser.add_argument("--two-nodes", action="store_true", help="also measure 2 simulated nodes of 1 GPU each")
    parser.add_argument("--json", default=None, help="write the rows here (default: benchmark/results/... on cuda)")
    parser.add_argument("--worker", choices=("genesis", "torch"), default=None, help=argparse.SUPPRESS)
    parser.add_argument("--measure", choices=("train", "independent", "graph", "all_reduce"), default="train",
                        help=argparse.SUPPRESS)
    parser.add_argument("--out", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--batch", type=int, default=None)
    parser.add_argument("--seq", type=int, default=None)
    parser.add_argument("--numel", type=int, default=None, help="all_reduce elements (default 256 MiB of bf16)")
    parser.add_argument("--warmup", type=int, default=None)
    parser.add_argument("--repeat", type=int, default=None)
    parser.add_argument("--numa-binding", choices=("node", "exclusive"), default=None,
                        help="passed to both launchers: bind each rank to the CPUs near its GPU")
    parser.add_argument("--libs", default="genesis,torch", help="the libraries to measure (a missing one reads nan)")
    parser.add_argument("--no-all-reduce", action="store_true", help="skip the all_reduce bandwidth rows")
    parser.add_argument("--no-independent", action="store_true", help="skip the independent_scaling rows")
    parser.add_argument("--graph", action="store_true",
                        help="also time the whole step captured in a CUDA graph (cuda only)")
    parser.add_argument("--no-eager", action="store_true", help="skip the eager train_step and scaling rows")
    parser.add_argument("--high-priority-stream", action="store_true",
                        help="both libraries' NCCL groups communicate on a high-priority stream (pg_options)")
    args = parser.parse_args()
    small = args.small
    args.batch = args.batch or (2 if small else 4)
    args.seq = args.seq or (32 if small else 1024)
    args.numel = args.numel or ((1 << 18) if small else (256 << 20) // 2)
    args.warmup = args.warmup if args.warmup is not None else (1 if small else 3)
    args.repeat = args.repeat or (3 if small else 20)
    if args.worker:
        result = (_worker_genesis if args.worker == "genesis" else _worker_torch)(args)
        with open(f"{args.out}.{os.environ.get('RANK', '0')}", "w") as f:
            json.dump(result, f)
        return

    counts = [int(c) for c in (args.gpus or ("1,2" if small else "1,2,4")).split(",")]
    rows = []
    libs = args.libs.split(",")

    def measure(lib: str, what: str, n: int, key: str, two_nodes: bool = False) -> float:
        return _job(args, lib, what, n, two_nodes)[key] if lib in libs else float("nan")

    eager = not args.no_eager
    train = {lib: {n: measure(lib, "train", n, "tokens_per_s") if eager else float("nan") for n in counts}
             for lib in ("genesis", "torch")}
    for n in counts:
        g, t = train["genesis"][n], train["torch"][n]
        if eager:
            rows.append(row(f"train_step_{n}{'cpu' if small else 'gpu'}", g, t, "tok/s", g / t, ">= 1.0"))
    for n in counts:
        if eager and n > 1 and 1 in counts:
            eff = {lib: train[lib][n] / (n * train[lib][1]) for lib in train}
            goal = ">= 0.95" if n == 2 else ">= 0.90"
            rows.append(row(f"scaling_{n}{'cpu' if small else 'gpu'}", eff["genesis"], eff["torch"], "eff",
                            eff["genesis"], goal))
            if not args.no_independent:
                alone = {lib: measure(lib, "independent", n, "tokens_per_s") / (n * train[lib][1]) for lib in train}
                rows.append(row(f"independent_scaling_{n}{'cpu' if small else 'gpu'}", alone["genesis"],
                                alone["torch"], "eff", alone["genesis"], "(the ceiling)"))
    if args.graph and not small:
        graph = {lib: {n: measure(lib, "graph", n, "tokens_per_s") for n in counts} for lib in ("genesis", "torch")}
        for n in counts:
            g, t = graph["genesis"][n], graph["torch"][n]
            rows.append(row(f"train_step_graph_{n}gpu", g, t, "tok/s", g / t, ">= 1.0"))
            if n > 1 and 1 in counts:
                eff = {lib: graph[lib][n] / (n * graph[lib][1]) for lib in graph}
                rows.append(row(f"scaling_graph_{n}gpu", eff["genesis"], eff["torch"], "eff", eff["genesis"],
                                ">= 0.95" if n == 2 else ">= 0.90"))
    for n in counts:
        if n > 1 and not args.no_all_reduce:
            g = measure("genesis", "all_reduce", n, "busbw_gbps")
            t = measure("torch", "all_reduce", n, "busbw_gbps")
            rows.append(row(f"all_reduce_busbw_{n}{'cpu' if small else 'gpu'}", g, t, "GB/s", g / t, ">= 0.95"))
    if args.two_nodes and not small:
        for what, key, unit in (("train", "tokens_per_s", "tok/s"), ("all_reduce", "busbw_gbps", "GB/s")):
            g = measure("genesis", what, 2, key, two_nodes=True)
            t = measure("torch", what, 2, key, two_nodes=True)
            rows.append(row(f"two_nodes_{what}", g, t, unit, g / t, ">= 1.0" if what == "train" else ">= 0.95"))
    print_table(rows)
    path = args.json
    if path is None and not small:
        date = datetime.date.today().isoformat()
        path = os.path.join(ROOT, "benchmark", "results", f"{_card()}x{max(counts)}-{date}-distributed.json")
    write_json(rows, path)


if __name__ == "__main__":
    main()
