"""``genesis.multiprocessing`` (torch.multiprocessing): ``spawn`` / ``start_processes`` with torch's failure
reporting, a DDP script launched by ``mp.spawn`` through ``python -m genesis.torch_compat``, Hogwild training on
shared memory with forked children, and tensors pickled for other processes."""

from __future__ import annotations

import json
import multiprocessing as std_mp
import os
import pickle
import signal
import socket
import subprocess
import sys
import textwrap
import time
from multiprocessing.reduction import ForkingPickler

import numpy as np
import pytest

import genesis
import genesis.multiprocessing as mp
from genesis import nn

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WAIT = 120  # seconds: generous, for a loaded two-core machine
needs_fork = pytest.mark.skipif("fork" not in std_mp.get_all_start_methods(), reason="needs the fork start method")


# The functions children run are defined at the top level: spawned children import this module to find them.
def _square_into_queue(i: int, queue: object, base: genesis.Tensor) -> None:
    queue.put((i, base * (i + 1), type(base).__module__))


def _fail_on_one(i: int, ready: object) -> None:
    if i == 1:
        ready.wait(WAIT)  # the other process is running when this one fails: it must be terminated
        raise ValueError(f"child {i} cannot go on")
    ready.set()
    time.sleep(WAIT)


def _exit_three(i: int) -> None:
    if i == 0:
        os._exit(3)
    time.sleep(WAIT)


def _kill_self(i: int) -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def _wait_for(i: int, go: object, out: str) -> None:
    go.wait(WAIT)
    with open(os.path.join(out, f"done{i}"), "w") as f:
        f.write(str(os.getpid()))


def _hogwild_train(rank: int, model: nn.Module, counter: genesis.Tensor, lock: object) -> None:
    with lock:  # whole runs one after the other: the result is the same in either order
        optimizer = genesis.optim.SGD(model.parameters(), lr=0.05)
        for _ in range(3):
            optimizer.zero_grad()
            loss = (model(genesis.arange(8.0).reshape(2, 4) / 8) - 1.0).pow(2).mean()
            loss.backward()
            optimizer.step()
        counter.add_(rank + 1)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_spawn_runs_fn_with_its_index_and_args() -> None:
    queue = std_mp.get_context("spawn").SimpleQueue()
    assert mp.spawn(_square_into_queue, args=(queue, genesis.tensor([1.0, 2.0])), nprocs=2) is None
    results = sorted((queue.get() for _ in range(2)), key=lambda r: r[0])
    assert [r[0] for r in results] == [0, 1]
    assert [r[1].tolist() for r in results] == [[1.0, 2.0], [2.0, 4.0]]
    assert {r[2] for r in results} == {"genesis.tensor"}


def test_an_exception_in_a_child_is_raised_in_the_parent() -> None:
    ready = std_mp.get_context("spawn").Event()
    start = time.monotonic()
    with pytest.raises(mp.ProcessRaisedException, match="child 1 cannot go on") as info:
        mp.spawn(_fail_on_one, args=(ready,), nprocs=2)
    assert time.monotonic() - start < WAIT / 2  # the sleeping process was terminated, not waited for
    err = info.value
    assert isinstance(err, mp.ProcessException)
    assert err.error_index == 1 and err.pid == err.error_pid > 0
    assert "-- Process 1 terminated with the following error:" in str(err)
    assert "Traceback" in str(err) and "ValueError" in str(err)
    again = pickle.loads(pickle.dumps(err))
    assert (type(again), again.error_index, again.error_pid, str(again)) == (type(err), 1, err.pid, str(err))


def test_a_child_exiting_with_a_code_raises_process_exited() -> None:
    with pytest.raises(mp.ProcessExitedException, match="process 0 terminated with exit code 3") as info:
        mp.spawn(_exit_three, nprocs=2)
    assert (info.value.error_index, info.value.exit_code, info.value.signal_name) == (0, 3, None)


@needs_fork
def test_a_child_killed_by_a_signal_names_it() -> None:
    with pytest.raises(mp.ProcessExitedException, match="terminated with signal SIGKILL") as info:
        mp.start_processes(_kill_self, nprocs=1, start_method="fork")
    assert (info.value.exit_code, info.value.signal_name) == (-signal.SIGKILL, "SIGKILL")


def test_join_false_returns_a_context(tmp_path: object) -> None:
    go = std_mp.get_context("spawn").Event()
    with pytest.warns(FutureWarning, match="only supports start_method=spawn"):
        context = mp.spawn(_wait_for, args=(go, str(tmp_path)), nprocs=2, join=False, start_method="forkserver")
    assert isinstance(context, mp.ProcessContext)
    assert context.pids() == [p.pid for p in context.processes] and len(context.processes) == 2
    assert all(p.is_alive() for p in context.processes)
    assert context.join(timeout=0.05) is False
    go.set()
    deadline = time.monotonic() + WAIT
    while not context.join(timeout=1):
        assert time.monotonic() < deadline
    assert context.join() is True
    assert sorted(os.listdir(tmp_path)) == ["done0", "done1"]
    assert [int((tmp_path / f"done{i}").read_text()) for i in range(2)] == context.pids()
    folder = os.path.dirname(context.error_files[0])
    del context
    assert not os.path.exists(folder)  # the traceback files go with the context


_DDP_SCRIPT = """
import json, os, sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn


class Scale(nn.Module):
    def __init__(self, k):
        super().__init__()
        self.k = nn.Parameter(torch.tensor(k))

    def forward(self, x):
        return x * self.k


def main(rank, world_size, out_dir, model):
    dist.init_process_group("gloo", rank=rank, world_size=world_size)
    t = model(torch.arange(4, dtype=torch.float32) + rank).detach()
    dist.all_reduce(t)
    with open(os.path.join(out_dir, f"rank{rank}.json"), "w") as f:
        json.dump({"sum": t.tolist(), "world": dist.get_world_size(), "tensor": type(t).__module__,
                   "model": type(model).__module__, "param": type(model.k).__module__}, f)
    dist.destroy_process_group()


def report(queue, name):
    queue.put((name, torch.nn.Module.__module__))


if __name__ == "__main__":
    world_size = 2
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = sys.argv[2]
    mp.spawn(main, args=(world_size, sys.argv[1], Scale(2.0)), nprocs=world_size, join=True)
    print("parent", type(torch.zeros(1)).__module__)
    mp.set_start_method("spawn", force=True)
    queue = mp.Queue()
    process = mp.Process(target=report, args=(queue,), kwargs={"name": "process"})
    process.start()
    print("child", *queue.get(timeout=120))
    process.join()
"""


def test_ddp_script_with_mp_spawn_through_torch_compat(tmp_path: object) -> None:
    script = tmp_path / "ddp_spawn.py"
    script.write_text(textwrap.dedent(_DDP_SCRIPT))
    out = subprocess.run([sys.executable, "-m", "genesis.torch_compat", str(script), str(tmp_path),
                          str(_free_port())], capture_output=True, text=True, timeout=WAIT * 2, cwd=ROOT,
                         env=dict(os.environ, PYTHONPATH=ROOT))
    assert out.returncode == 0, out.stderr[-3000:]
    assert "parent genesis.tensor" in out.stdout
    assert "child process genesis.nn.modules.module" in out.stdout  # mp.Process under spawn: torch is Genesis too
    for rank in range(2):
        got = json.loads((tmp_path / f"rank{rank}.json").read_text())
        # (2 * (arange + 0)) + (2 * (arange + 1)): the children computed with Genesis, as the script's torch.
        assert got == {"sum": [2.0, 6.0, 10.0, 14.0], "world": 2, "tensor": "genesis.tensor", "model": "__mp_main__",
                       "param": "genesis.nn.parameter"}


@needs_fork
def test_hogwild_with_forked_children_updates_shared_parameters() -> None:
    genesis.manual_seed(0)
    model = nn.Linear(4, 1)
    assert model.share_memory() is model
    assert all(p.is_shared() for p in model.parameters())
    reference = nn.Linear(4, 1)
    reference.load_state_dict(model.state_dict())
    counter = genesis.zeros(2, dtype=genesis.int64).share_memory_()
    ctx = mp.get_context("fork")
    lock = ctx.Lock()
    processes = [mp.get_context("fork").Process(target=_hogwild_train, args=(rank, model, counter, lock))
                 for rank in range(2)]
    for p in processes:
        p.start()
    for p in processes:
        p.join(WAIT)
    assert [p.exitcode for p in processes] == [0, 0]
    assert counter.tolist() == [3, 3]  # both children's writes reached the parent's tensor
    for rank in range(2):  # the same six steps, here
        _hogwild_train(rank, reference, genesis.zeros(2, dtype=genesis.int64), ctx.Lock())
    genesis.testing.assert_close(model.weight, reference.weight, rtol=1e-6, atol=1e-7)
    genesis.testing.assert_close(model.bias, reference.bias, rtol=1e-6, atol=1e-7)
    # start_processes with fork hands the same shared objects over.
    mp.start_processes(_hogwild_train, args=(model, counter, lock), nprocs=2, start_method="fork")
    assert counter.tolist() == [6, 6]


@pytest.mark.parametrize("dtype", [genesis.float32, genesis.float64, genesis.bfloat16, genesis.float16,
                                   genesis.int64, genesis.int32, genesis.uint8, genesis.bool, genesis.complex64])
@pytest.mark.parametrize("dumps", [pickle.dumps, ForkingPickler.dumps], ids=["pickle", "forking"])
def test_tensors_pickle_by_value(dtype: genesis.dtype, dumps: object) -> None:
    data = genesis.arange(12.0).reshape(3, 4)
    t = (data - 5).to(dtype)[:, 1::2]  # a strided view
    back = pickle.loads(dumps(t))
    assert type(back) is genesis.Tensor and back.dtype == dtype and back.shape == (3, 2)
    assert back.device == t.device and back.requires_grad is False
    np.testing.assert_array_equal(back.numpy(), t.numpy())
    scalar = pickle.loads(dumps(genesis.tensor(2.5, dtype=genesis.bfloat16, requires_grad=True)))
    assert (scalar.shape, scalar.dtype, scalar.item(), scalar.requires_grad) == ((), genesis.bfloat16, 2.5, True)
    assert pickle.loads(dumps(genesis.empty(0, 3))).shape == (0, 3)


def test_parameters_and_modules_pickle() -> None:
    frozen = nn.Parameter(genesis.randn(3, dtype=genesis.bfloat16), requires_grad=False)
    back = pickle.loads(pickle.dumps(frozen))
    assert type(back) is nn.Parameter and back.dtype == genesis.bfloat16 and back.requires_grad is False
    np.testing.assert_array_equal(back.float().numpy(), frozen.float().numpy())
    model = nn.Sequential(nn.Linear(3, 2), nn.ReLU())
    copy = pickle.loads(ForkingPickler.dumps(model))
    assert type(copy[0].weight) is nn.Parameter and copy[0].weight.requires_grad
    x = genesis.randn(4, 3)
    np.testing.assert_array_equal(copy(x).detach().numpy(), model(x).detach().numpy())


def test_a_shared_tensor_sent_to_another_process_warns_it_is_a_copy() -> None:
    shared = genesis.ones(3).share_memory_()
    with pytest.warns(UserWarning, match="shared memory is sent to another process as a copy"):
        back = pickle.loads(ForkingPickler.dumps(shared))
    assert back.tolist() == [1.0, 1.0, 1.0] and not back.is_shared()


def test_a_gpu_tensor_unpickled_without_cuda_raises() -> None:
    if genesis.cuda.is_available():
        pytest.skip("a CUDA GPU is present: the tensor comes back on it")

    class FromGpu:  # what a CUDA tensor's pickle holds: host values and the device name
        def __reduce__(self) -> tuple:
            return genesis.tensor([1.0]).__reduce_ex__(2)[0], (np.ones(2, np.float32), "float32", "cuda:0", False)

    with pytest.raises(RuntimeError, match="cuda:0: CUDA is not available"):
        pickle.loads(pickle.dumps(FromGpu()))


def test_standard_api_and_sharing_strategies() -> None:
    for name in std_mp.__all__:
        assert hasattr(mp, name), name
    assert mp.Queue == std_mp.Queue and mp.get_context is std_mp.get_context and mp.cpu_count() >= 1
    assert issubclass(mp.Process, std_mp.Process)
    assert set(mp.__all__) >= {"spawn", "start_processes", "ProcessContext", "ProcessRaisedException",
                               "ProcessExitedException", "set_sharing_strategy", "Pool", "Manager", "Value"}
    default = mp.get_sharing_strategy()
    if sys.platform.startswith("linux"):
        assert mp.get_all_sharing_strategies() == {"file_descriptor", "file_system"} and default == "file_descriptor"
    mp.set_sharing_strategy("file_system")
    try:
        assert mp.get_sharing_strategy() == "file_system"
    finally:
        mp.set_sharing_strategy(default)
    with pytest.raises(ValueError, match="invalid sharing strategy 'shm'"):
        mp.set_sharing_strategy("shm")
    assert genesis.multiprocessing is mp
