"""The launcher (torchrun): ``python -m genesis.distributed.run --nproc-per-node N script.py args...``.

Starts one process per local rank with torchrun's environment (``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE``,
``LOCAL_WORLD_SIZE``, ``GROUP_RANK``, ``MASTER_ADDR``, ``MASTER_PORT``, ``TORCHELASTIC_RUN_ID``), prefixes every
line of their output with ``[rankN]:``, and stops the whole job as soon as any rank fails, exiting with that rank's
code. Also installed as the console script ``genesis-run``. ``--numa-binding node|exclusive`` binds each rank to the
CPUs near its GPU (``genesis.distributed.numa``).
"""

from __future__ import annotations

import argparse
import functools
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from typing import IO

from genesis.distributed import numa

_GRACE_S = 5.0  # how long ranks get to exit after SIGTERM before SIGKILL


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="genesis-run", description="Launch a Genesis distributed job (as torchrun).")
    p.add_argument("--nproc-per-node", "--nproc_per_node", type=int, default=1, help="processes on this node")
    p.add_argument("--nnodes", type=int, default=1, help="number of nodes")
    p.add_argument("--node-rank", "--node_rank", type=int, default=0, help="this node's index")
    p.add_argument("--master-addr", "--master_addr", default="127.0.0.1", help="address of rank 0's node")
    p.add_argument("--master-port", "--master_port", type=int, default=29500,
                   help="port of the rendezvous store (0: a free port, one node only)")
    p.add_argument("--standalone", action="store_true", help="one node on a free local port")
    p.add_argument("-m", "--module", action="store_true", help="run the script argument as a Python module")
    p.add_argument("--numa-binding", "--numa_binding", choices=numa.MODES, default=None,
                   help="bind local rank i to the CPUs of GPU i's NUMA node (node) or to its own share of them "
                        "(exclusive)")
    p.add_argument("--no-python", "--no_python", action="store_true", help="run the script argument as a program")
    p.add_argument("script", help="the training script (or module / program)")
    p.add_argument("script_args", nargs=argparse.REMAINDER, help="arguments passed to the script")
    return p


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _pump(stream: IO[bytes], prefix: bytes, out: IO[bytes], lock: threading.Lock) -> None:
    """Copy a rank's output line by line, each line prefixed by its rank."""
    for line in iter(stream.readline, b""):
        with lock:
            out.write(prefix + line)
            out.flush()
    stream.close()


def _command(args: argparse.Namespace) -> list[str]:
    if args.no_python:
        return [args.script, *args.script_args]
    if args.module:
        return [sys.executable, "-u", "-m", args.script, *args.script_args]
    return [sys.executable, "-u", args.script, *args.script_args]


def _check(p: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    if args.nproc_per_node < 1:
        p.error(f"--nproc-per-node must be at least 1, got {args.nproc_per_node}")
    if args.nnodes < 1:
        p.error(f"--nnodes must be at least 1, got {args.nnodes}")
    if not 0 <= args.node_rank < args.nnodes:
        p.error(f"--node-rank {args.node_rank} is out of range for --nnodes {args.nnodes}")
    if args.standalone or args.master_port == 0:
        if args.nnodes != 1:
            p.error("a free port (--standalone or --master-port 0) needs --nnodes 1")
        args.master_addr, args.master_port = "127.0.0.1", _free_port()


def _stop(procs: list[subprocess.Popen]) -> None:
    """SIGTERM every running rank, then SIGKILL those still alive after the grace period."""
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + _GRACE_S
    for proc in procs:
        try:
            proc.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def launch(argv: list[str] | None = None) -> int:
    """Run the job described by ``argv`` (the launcher's command line); returns its exit code."""
    p = _parser()
    args = p.parse_args(argv)
    _check(p, args)
    n = args.nproc_per_node
    world = n * args.nnodes
    out = sys.stdout.buffer
    lock = threading.Lock()
    procs: list[subprocess.Popen] = []
    pumps = []
    try:
        cpus = numa.rank_cpus(args.numa_binding, n) if args.numa_binding else [None] * n
    except RuntimeError as exc:
        p.error(str(exc))
    for local in range(n):
        rank = args.node_rank * n + local
        env = dict(os.environ, RANK=str(rank), LOCAL_RANK=str(local), WORLD_SIZE=str(world),
                   LOCAL_WORLD_SIZE=str(n), GROUP_RANK=str(args.node_rank), ROLE_RANK=str(rank),
                   ROLE_WORLD_SIZE=str(world), MASTER_ADDR=args.master_addr, MASTER_PORT=str(args.master_port),
                   TORCHELASTIC_RESTART_COUNT="0", TORCHELASTIC_MAX_RESTARTS="0", PYTHONUNBUFFERED="1")
        env.setdefault("TORCHELASTIC_RUN_ID", "none")  # torchrun's default run id; is_torchelastic_launched reads it
        env.setdefault("OMP_NUM_THREADS", "1")  # as torchrun: N processes must not each take every core
        bind = cpus[local]
        proc = subprocess.Popen(_command(args), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                preexec_fn=functools.partial(os.sched_setaffinity, 0, bind) if bind else None)
        procs.append(proc)
        t = threading.Thread(target=_pump, args=(proc.stdout, f"[rank{rank}]:".encode(), out, lock), daemon=True)
        t.start()
        pumps.append(t)

    def forward(signum: int, _frame: object) -> None:
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signum)

    previous = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM)}
    code = 0
    try:
        running = set(range(n))
        while running and code == 0:
            for local in sorted(running):
                rc = procs[local].poll()
                if rc is None:
                    continue
                running.discard(local)
                if rc != 0:
                    rank = args.node_rank * n + local
                    sys.stderr.write(f"genesis.distributed.run: rank {rank} (local rank {local}, pid "
                                     f"{procs[local].pid}) failed with exit code {rc}; stopping the job\n")
                    code = rc if rc > 0 else 128 - rc  # killed by signal s: 128 + s, as a shell reports it
            time.sleep(0.05)
    finally:
        _stop(procs)
        for s, handler in previous.items():
            signal.signal(s, handler)
        for t in pumps:
            t.join(timeout=1.0)
    return code


def main() -> None:
    """Console entry point (``genesis-run``)."""
    sys.exit(launch())


if __name__ == "__main__":
    main()
