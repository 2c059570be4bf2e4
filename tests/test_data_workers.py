"""DataLoader workers fail loudly and stop promptly: a worker forked after the parent used torch's thread pool
still computes, a worker that exits is reported, leaving a loop early does not wait for queued batches, and
``timeout`` raises. Each case runs in a subprocess with a time limit, so a hang fails the test instead of the run."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

import genesis

ROOT = Path(__file__).resolve().parents[1]
PRELUDE = """
import os, time
import numpy as np
import genesis
from genesis.utils.data import DataLoader, Dataset
"""


def run_script(body: str, limit: float = 40.0) -> str:
    """Run ``body`` after the imports in a fresh interpreter; its stdout (a hang past ``limit`` fails)."""
    script = PRELUDE + textwrap.dedent(body)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=limit,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_workers_compute_after_the_parent_used_the_thread_pool() -> None:
    out = run_script("""
        x = genesis.randn(512, 512)
        (x @ x).sum()  # the parent's intra-op pool is running when the workers fork
        class D(Dataset):
            def __len__(self): return 8
            def __getitem__(self, i):
                y = genesis.randn(256, 256)
                return float((y @ y).sum().item())
        print(len(list(DataLoader(D(), batch_size=2, num_workers=2))))
    """)
    assert out.split() == ["4"]


def test_workers_use_one_thread_after_a_large_parent_op() -> None:
    """The issue's case: a large elementwise op in the parent (the pool's threads all started), then workers that
    compute; each worker runs on one intra-op thread, the parent keeps its own count."""
    out = run_script("""
        before = genesis.get_num_threads()
        (genesis.ones(64, 250_000) * 2).sum()
        class D(Dataset):
            def __len__(self): return 6
            def __getitem__(self, i):
                y = genesis.ones(64, 25_000) * 2
                return genesis.get_num_threads() * 1000 + int(y.sum().item()) % 7
        print(sorted(set(int(b) for b in DataLoader(D(), batch_size=None, num_workers=2))),
              genesis.get_num_threads() == before)
    """)
    threads = 1000 + (64 * 25_000 * 2) % 7
    assert out.split() == [f"[{threads}]", "True"]


def test_set_num_threads_checks_its_argument() -> None:
    for bad in (0, -1, 1.5, True):
        with pytest.raises(RuntimeError, match="set_num_threads expects a positive integer"):
            genesis.set_num_threads(bad)
    with pytest.raises(RuntimeError):
        torch.set_num_threads(0)
    before = genesis.get_num_threads()
    genesis.set_num_threads(before)
    assert genesis.get_num_threads() == before == torch.get_num_threads()


def test_a_worker_exiting_with_status_zero_is_reported() -> None:
    out = run_script("""
        class D(Dataset):
            def __len__(self): return 100
            def __getitem__(self, i):
                if i == 5:
                    os._exit(0)
                return i
        start = time.monotonic()
        try:
            for _ in DataLoader(D(), num_workers=2):
                pass
        except RuntimeError as err:
            print(err, time.monotonic() - start)
    """)
    assert "exited unexpectedly" in out and "DataLoader worker (pid(s) " in out
    # Detected, not waited for forever; the bound leaves room for the workers' start on a loaded machine.
    assert float(out.split()[-1]) < 20


def test_leaving_a_loop_early_stops_the_workers_promptly() -> None:
    out = run_script("""
        class D(Dataset):
            def __len__(self): return 64
            def __getitem__(self, i): return np.zeros(5_000_000, dtype=np.float32)  # 20 MB
        it = iter(DataLoader(D(), num_workers=4))
        next(it), next(it)
        start = time.monotonic()
        workers = list(it.workers)
        del it
        print(time.monotonic() - start, sum(w.is_alive() for w in workers))
    """)
    seconds, alive = out.split()
    assert float(seconds) < 2 and alive == "0"


def test_timeout_raises_as_torch() -> None:
    out = run_script("""
        class D(Dataset):
            def __len__(self): return 4
            def __getitem__(self, i):
                time.sleep(30)
                return i
        start = time.monotonic()
        try:
            list(DataLoader(D(), num_workers=1, timeout=0.3))
        except RuntimeError as err:
            print(err, "|", time.monotonic() - start)
    """)
    message, seconds = out.split("|")
    assert message.strip() == "DataLoader timed out after 0.3 seconds"
    assert float(seconds) < 20  # well before the 30 s sample: the timeout fired (the workers' start included)
