"""genesis.distributed: the rendezvous store, the object format, init errors, the sampler, and multi-process jobs
started by the launcher (every collective, DDP and ZeRO against single-process references, a torch-style script,
a failing rank stopping the job).

The multi-process jobs run on the CPU through gloo; with ``GENESIS_TEST_DEVICE=cuda`` and at least two GPUs the
same worker runs on cuda through NCCL.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from datetime import timedelta

import pytest
import torch.utils.data as tdata

import genesis
import genesis.distributed as dist
from genesis.distributed import objects
from genesis.utils.data.distributed import DistributedSampler

from .helpers import DEVICE

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def _launch(script: str, *args: str, nproc: int = 2, env: dict | None = None,
            timeout: float = 240) -> subprocess.CompletedProcess:
    environ = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""), **(env or {}))
    command = [sys.executable, "-m", "genesis.distributed.run", "--nproc-per-node", str(nproc), "--master-port", "0",
               script, *args]  # script may be "-m", with the module name first in args (the launcher's -m)
    return subprocess.run(command, env=environ, capture_output=True, text=True, timeout=timeout)


# ---------------------------------------------------------------- the store

def test_store_set_get_add_wait() -> None:
    server = dist.TCPStore("127.0.0.1", 0, is_master=True, timeout=5)
    client = dist.TCPStore("127.0.0.1", server.port, timeout=5)
    try:
        client.set("a", b"\x00\x01")
        assert server.get("a") == b"\x00\x01"
        assert client.add("n", 2) == 2 and server.add("n", 3) == 5
        assert client.check(["a", "n"]) and not client.check(["b"])
        threading.Timer(0.1, lambda: server.set("later", "x")).start()
        client.wait(["later"], timeout=5)
        assert client.get("later") == b"x"
        prefixed = dist.PrefixStore("p", client)
        prefixed.set("k", b"v")
        assert server.get("p/k") == b"v" and prefixed.delete_key("k") and not server.check(["p/k"])
    finally:
        client.close()
        server.close()


def test_store_timeout_names_the_key() -> None:
    server = dist.TCPStore("127.0.0.1", 0, is_master=True, timeout=5)
    try:
        start = time.monotonic()
        with pytest.raises(TimeoutError, match=r"TCPStore: timed out after 0.2 s waiting for key\(s\) \['missing'\]"):
            server.get("missing", timeout=0.2)
        assert time.monotonic() - start < 4
    finally:
        server.close()


# ---------------------------------------------------------------- the object format

def test_objects_round_trip() -> None:
    value = {"a": [1, 2.5, None, True], 3: (b"\xff", "x"), "f": [float("inf"), -float("inf")], None: {"n": {}}}
    assert objects.loads(objects.dumps(value)) == value
    nan = objects.loads(objects.dumps(float("nan")))
    assert nan != nan


@pytest.mark.parametrize("bad", [object(), {1, 2}, genesis.zeros(1), {(1, 2): 1}])
def test_objects_reject_other_types(bad: object) -> None:
    with pytest.raises(TypeError, match="object collectives: .* not supported"):
        objects.dumps(bad)


def test_objects_never_unpickle() -> None:
    import pickle

    with pytest.raises(ValueError):
        objects.loads(pickle.dumps({"a": 1}))


# ---------------------------------------------------------------- init_process_group errors

@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE", "LOCAL_RANK"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_init_missing_variable(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("MASTER_ADDR", "127.0.0.1")
    with pytest.raises(ValueError, match="environment variable MASTER_PORT expected, but not set"):
        dist.init_process_group("gloo")
    assert not dist.is_initialized()


def test_init_rank_out_of_range(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("MASTER_ADDR", "127.0.0.1")
    clean_env.setenv("MASTER_PORT", "1")
    with pytest.raises(ValueError, match=r"rank 2 is out of range for world_size 2"):
        dist.init_process_group("gloo", rank=2, world_size=2)
    with pytest.raises(ValueError, match="backend 'mpi' is not supported"):
        dist.init_process_group("mpi", rank=0, world_size=1)


def test_init_timeout_names_missing_ranks(clean_env: pytest.MonkeyPatch) -> None:
    with pytest.raises(TimeoutError, match=r"timed out after 0.5 s waiting for rank\(s\) \[1, 2\] of 3 to join"):
        dist.init_process_group("gloo", init_method="tcp://127.0.0.1:0", rank=0, world_size=3,
                                timeout=timedelta(seconds=0.5))
    assert not dist.is_initialized()


def test_pg_options_reach_the_groups(clean_env: pytest.MonkeyPatch) -> None:
    with pytest.raises(TypeError, match="init_process_group: pg_options must be a ProcessGroupNCCL.Options, got str"):
        dist.init_process_group("gloo", init_method="tcp://127.0.0.1:0", rank=0, world_size=1, pg_options="fast")
    assert not dist.is_initialized()
    options = dist.ProcessGroupNCCL.Options(is_high_priority_stream=True)
    dist.init_process_group(init_method="tcp://127.0.0.1:0", rank=0, world_size=1, pg_options=options)
    try:
        assert dist.group.WORLD.options.is_high_priority_stream
        assert not dist.new_group([0]).options.is_high_priority_stream  # torch's default: a normal priority
        assert dist.new_group([0], pg_options=options).options is options
        with pytest.raises(TypeError, match="new_group: pg_options must be"):
            dist.new_group([0], pg_options={"is_high_priority_stream": True})
        x = genesis.arange(3.0)
        dist.all_reduce(x)
        assert x.tolist() == [0.0, 1.0, 2.0]
    finally:
        dist.destroy_process_group()


def test_rooted_collectives_and_helpers_in_one_process(clean_env: pytest.MonkeyPatch) -> None:
    """Argument errors read as torch's; the helpers answer as torch's on a one-rank job."""
    assert dist.get_pg_count() == 0 and dist.GroupMember.WORLD is None
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:0", rank=0, world_size=1)
    try:
        x = genesis.arange(3.0)
        with pytest.raises(ValueError, match=r"Argument ``gather_list`` must be specified on destination rank."):
            dist.gather(x, None, dst=0)
        with pytest.raises(ValueError, match=r"Argument ``scatter_list`` must be specified on source rank."):
            dist.scatter(x, None, src=0)
        with pytest.raises(ValueError, match="gather: gather_list has 2 tensors, expected the group size 1"):
            dist.gather(x, [genesis.zeros(3), genesis.zeros(3)])
        with pytest.raises(ValueError, match="reduce_scatter: input_list has 2 tensors"):
            dist.reduce_scatter(genesis.zeros(3), [x, x])
        with pytest.raises(ValueError, match="a list of size at least 1"):
            dist.scatter_object_list([], [1])
        with pytest.raises(ValueError, match="destination rank should not be the same as the rank of the current"):
            dist.send_object_list([1], dst=0)
        with pytest.raises(ValueError, match="pass dst or group_dst, not both"):
            dist.gather(x, [genesis.zeros(3)], dst=0, group_dst=0)
        with pytest.raises(ValueError, match=r"Invalid ``op``. Expected ``op`` to be of type"):
            dist.P2POp(dist.send, x, 1)
        with pytest.raises(ValueError, match="is this process's own rank"):
            dist.P2POp(dist.isend, x, group_peer=0)
        with pytest.raises(ValueError, match="Can't specify both dst and group_dst"):
            dist.isend(x, 0, group_dst=0)
        with pytest.raises(ValueError, match=r"Invalid ``p2p_op_list``. Each op is expected"):
            dist.batch_isend_irecv([x])
        with pytest.raises(ValueError, match=r"Invalid ``p2p_op_list``"):
            dist.batch_isend_irecv([])
        out = [genesis.zeros(3)]
        work = dist.gather(x, out, group_dst=0, async_op=True)
        assert work.is_completed() and work.wait()
        assert out[0].tolist() == [0.0, 1.0, 2.0] and work.get_future().wait() == out
        objs = [None]
        dist.gather_object({"k": (1, 2)}, objs)
        assert objs == [{"k": (1, 2)}]
        assert dist.get_pg_count() == 1 and dist.GroupMember.WORLD is dist.group.WORLD
        assert dist.get_global_rank(dist.group.WORLD, 3) == 3  # the default group maps ranks to themselves
        dist.new_group([0])
        assert dist.get_pg_count() == 2
        dist.monitored_barrier(wait_all_ranks=True)
    finally:
        dist.destroy_process_group()
    assert dist.get_default_backend_for_device("cuda:1") == "nccl"
    assert dist.get_default_backend_for_device(genesis.device("cpu")) == "gloo"
    with pytest.raises(ValueError, match="Default backend not registered for device : meta"):
        dist.get_default_backend_for_device("meta")
    assert dist.is_backend_available("gloo") and not dist.is_backend_available("mpi")
    assert not dist.is_mpi_available() and not dist.is_ucc_available()
    assert not dist.is_torchelastic_launched() or "TORCHELASTIC_RUN_ID" in os.environ
    clean_env.setenv("LOCAL_RANK", "3")
    assert dist.get_node_local_rank() == 3
    clean_env.delenv("LOCAL_RANK")
    assert dist.get_node_local_rank(fallback_rank=2) == 2
    with pytest.raises(RuntimeError, match="LOCAL_RANK is not in the environment"):
        dist.get_node_local_rank()


def test_not_initialized_errors() -> None:
    with pytest.raises(RuntimeError, match="all_reduce: Default process group has not been initialized"):
        dist.all_reduce(genesis.zeros(1))
    assert dist.get_local_rank() == int(os.environ.get("LOCAL_RANK", "0"))


# ---------------------------------------------------------------- DistributedSampler

@pytest.mark.parametrize("drop_last", [False, True])
@pytest.mark.parametrize("size", [10, 11, 2])
def test_sampler_matches_torch_without_shuffle(size: int, drop_last: bool) -> None:
    data = list(range(size))
    for rank in range(3):
        ours = DistributedSampler(data, num_replicas=3, rank=rank, shuffle=False, drop_last=drop_last)
        theirs = tdata.distributed.DistributedSampler(data, num_replicas=3, rank=rank, shuffle=False,
                                                      drop_last=drop_last)
        assert list(ours) == list(theirs) and len(ours) == len(theirs)


def test_sampler_shuffles_by_epoch_and_partitions() -> None:
    data = list(range(13))
    shards = [DistributedSampler(data, num_replicas=3, rank=r, seed=5) for r in range(3)]
    first = [list(s) for s in shards]
    assert set(sum(first, [])) == set(data) and len(sum(first, [])) == 15
    assert first == [list(s) for s in shards]  # the same epoch gives the same order
    for s in shards:
        s.set_epoch(1)
    assert [list(s) for s in shards] != first


def test_sampler_errors() -> None:
    with pytest.raises(ValueError, match=r"Invalid rank 3, rank should be in the interval \[0, 2\]"):
        DistributedSampler(range(4), num_replicas=3, rank=3)
    with pytest.raises(RuntimeError, match="DistributedSampler: num_replicas and rank are required"):
        DistributedSampler(range(4))


# ---------------------------------------------------------------- multi-process jobs

def _device_for_jobs() -> str:
    if DEVICE != "cuda":
        return "cpu"
    if genesis.cuda.device_count() < 2:
        pytest.skip("the CUDA multi-process tests need at least 2 GPUs")
    return "cuda"


def test_collectives_ddp_zero_sampler_across_processes() -> None:
    device = _device_for_jobs()
    result = _launch(os.path.join(HERE, "distributed_worker.py"), device)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    for rank in range(2):
        assert f"[rank{rank}]:WORKER OK {rank}" in result.stdout, result.stdout[-4000:]


def test_torch_style_script_runs_under_the_launcher(tmp_path: object) -> None:
    _device_for_jobs()
    checkpoint = os.path.join(str(tmp_path), "ddp.pt")
    result = _launch(os.path.join(HERE, "distributed_torch_style.py"), env={"CHECKPOINT": checkpoint})
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    assert "[rank0]:epoch 1 mean loss" in result.stdout and "[rank1]:TORCH-STYLE OK 1" in result.stdout
    state = genesis.load(checkpoint)
    assert sorted(state) == ["module.fc1.bias", "module.fc1.weight", "module.fc2.bias", "module.fc2.weight"]


def _numbers(output: str, tag: str) -> list[float]:
    return [float(line.split()[-1]) for line in output.splitlines() if line.split(":")[-1].startswith(tag)]


def _process_tree(pid: int) -> list[int]:
    """``pid`` and its descendants, from /proc (torch's launcher starts each worker in a session of its own, so
    killing the launcher's process group leaves them running)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    parent = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(parent, []).append(int(entry))
    tree, stack = [], [pid]
    while stack:
        p = stack.pop()
        tree.append(p)
        stack.extend(children.get(p, ()))
    return tree


def _run_torch_job(command: list[str], tmp_path: object) -> str:
    """The output of a job under torch's launcher. torch's processes sometimes do not exit after printing everything
    and destroying their group (about one run in four here): 15 s after the last line (CHECKSUM) is out, or after
    90 s in all, the job and its workers are stopped. The output goes to files, so that a worker left running
    cannot keep the test waiting for the end of a pipe."""
    out_path, err_path = os.path.join(str(tmp_path), "torch.out"), os.path.join(str(tmp_path), "torch.err")
    with open(out_path, "w") as out_file, open(err_path, "w") as err_file:
        proc = subprocess.Popen(command, stdout=out_file, stderr=err_file, text=True, cwd=HERE,
                                start_new_session=True)
        start, finished = time.monotonic(), None
        while proc.poll() is None and time.monotonic() - start < 90:
            time.sleep(0.5)
            if finished is None:
                with open(out_path) as f:
                    finished = time.monotonic() if "CHECKSUM" in f.read() else None
            elif time.monotonic() - finished > 15:
                break
        stopped = proc.poll() is None
        if stopped:
            for pid in reversed(_process_tree(proc.pid)):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            proc.wait()
    with open(out_path) as f:
        out = f.read()
    with open(err_path) as f:
        err = f.read()
    if stopped:
        assert "CHECKSUM" in out, "torch's job did not finish:\n" + out[-3000:] + err[-3000:]
        return out
    assert proc.returncode == 0, out[-3000:] + err[-3000:]
    return out


def test_a_torch_contrastive_ddp_script_trains_as_under_torch(tmp_path: object) -> None:
    """The same torch script (gathered embeddings with gradients, a DDP communication hook, @record, gather_object)
    under torch's launcher with torch, and under Genesis's launcher through torch_compat: the losses of every step
    and the final weights agree. (The script has no monitored_barrier: torch's once hung there under the parallel
    test runner; the worker tests Genesis's.)"""
    script = os.path.join(HERE, "distributed_contrastive.py")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    torch_stdout = _run_torch_job([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2",
                                   "--master-port", str(port), script], tmp_path)
    genesis_run = _launch("-m", "genesis.torch_compat", script)
    assert genesis_run.returncode == 0, genesis_run.stdout[-3000:] + genesis_run.stderr[-3000:]
    for tag in ("LOSS", "CHECKSUM"):
        want, got = _numbers(torch_stdout, tag), _numbers(genesis_run.stdout, tag)
        assert len(want) == len(got) > 0, (torch_stdout, genesis_run.stdout)
        assert all(abs(g - w) <= 1e-5 * max(1.0, abs(w)) for g, w in zip(got, want)), (got, want)


def test_a_failing_rank_stops_the_job(tmp_path: object) -> None:
    script = os.path.join(str(tmp_path), "fail.py")
    with open(script, "w") as f:
        f.write("import os, sys, time\n"
                "print('started', os.environ['RANK'], os.environ['LOCAL_RANK'], os.environ['WORLD_SIZE'])\n"
                "if os.environ['RANK'] == '1':\n    sys.exit(7)\n"
                "time.sleep(120)\n")
    start = time.monotonic()
    result = _launch(script, nproc=3, timeout=60)
    assert time.monotonic() - start < 30
    assert result.returncode == 7
    assert "[rank1]:started 1 1 3" in result.stdout
    assert "rank 1 (local rank 1" in result.stderr and "failed with exit code 7; stopping the job" in result.stderr


def test_launcher_argument_errors() -> None:
    from genesis.distributed import run

    with pytest.raises(SystemExit):
        run.launch(["--nnodes", "2", "--node-rank", "2", "x.py"])
    with pytest.raises(SystemExit):
        run.launch(["--nproc-per-node", "0", "x.py"])


def test_torch_is_absent_from_the_import_of_genesis_distributed() -> None:
    # The public package reaches torch.distributed only through the gloo engine, imported by init_process_group.
    code = "import sys, genesis.distributed; assert 'torch.distributed' not in sys.modules, 'imported'"
    subprocess.run([sys.executable, "-c", code], check=True, env=dict(os.environ, PYTHONPATH=ROOT))


def test_queue_callback_runs_once_backward_ends() -> None:
    # The hook DDP relies on: a callback queued during backward runs after every gradient is accumulated.
    from genesis.autograd.engine import queue_callback

    w = genesis.ones(3, requires_grad=True)
    b = genesis.ones(3, requires_grad=True)
    seen = []
    w.register_post_accumulate_grad_hook(lambda p: queue_callback(lambda: seen.append((w.grad is not None,
                                                                                      b.grad is not None))))
    (w * b * 2).sum().backward()
    assert seen == [(True, True)]
    with pytest.raises(RuntimeError, match="queue_callback: callbacks can only be queued while a backward pass runs"):
        queue_callback(lambda: None)


def test_record_writes_the_error_file_and_reraises(tmp_path: object, monkeypatch: pytest.MonkeyPatch) -> None:
    from genesis.distributed.elastic.multiprocessing.errors import record

    path = os.path.join(str(tmp_path), "error.json")
    monkeypatch.setenv("TORCHELASTIC_ERROR_FILE", path)

    @record
    def main(fail: bool) -> str:
        if fail:
            raise ValueError("bad batch")
        return "done"

    assert main(False) == "done" and not os.path.exists(path)
    with pytest.raises(ValueError, match="bad batch"):
        main(True)
    with open(path) as f:
        message = json.load(f)["message"]
    assert message["message"] == "ValueError: bad batch" and "bad batch" in message["extraInfo"]["py_callstack"]
    assert record(lambda: sys.exit(0))() is None
    with pytest.raises(SystemExit):
        record(lambda: sys.exit(3))()


def test_torch_module_paths_of_distributed_resolve() -> None:
    import genesis.distributed.nn.functional as functional
    from genesis.torch_compat import alias

    assert alias("genesis.distributed.nn").all_gather is functional.all_gather
    assert callable(alias("genesis.distributed.elastic.multiprocessing.errors").record)


def test_file_store_and_file_rendezvous(tmp_path: object) -> None:
    path = os.path.join(str(tmp_path), "store")
    a, b = dist.FileStore(path, 2, timeout=2), dist.FileStore(path, 2, timeout=2)
    a.set("k", bytes([118, 0, 255]))
    assert b.get("k") == bytes([118, 0, 255]) and b.add("n", 2) == 2 and a.add("n", 3) == 5 and a.get("n") == b"5"
    assert b.check(["k", "n"]) and not b.check(["k", "missing"]) and a.num_keys() == 2
    assert a.delete_key("k") and not a.delete_key("k")
    with pytest.raises(TimeoutError, match=r"waiting for key\(s\) \['late'\]"):
        b.wait(["late"], timedelta(seconds=0.05))
    a.close()
    assert os.path.exists(path)
    b.close()
    assert not os.path.exists(path)  # the last store open on the file removes it
    script = os.path.join(str(tmp_path), "job.py")
    with open(script, "w") as f:
        f.write("import os, sys\nimport genesis, genesis.distributed as dist\n"
                "dist.init_process_group('gloo', init_method='file://' + sys.argv[1],\n"
                "                        rank=int(os.environ['RANK']), world_size=2)\n"
                "t = genesis.tensor([float(dist.get_rank() + 1)])\ndist.all_reduce(t)\n"
                "print('SUM', t.item())\ndist.destroy_process_group()\n")
    rendezvous = os.path.join(str(tmp_path), "rendezvous")
    result = _launch(script, rendezvous, timeout=120)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert result.stdout.count("SUM 3.0") == 2 and not os.path.exists(rendezvous)
