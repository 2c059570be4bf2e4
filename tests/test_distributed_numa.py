"""The launcher's ``--numa-binding``: CPU lists, the CPU set of each rank per mode, and the binding of real processes.

The GPUs' NUMA nodes come from a fake sysfs tree (or a stub), so the tests run on any Linux machine.
"""

from __future__ import annotations

import os

import pytest

from genesis.distributed import numa, run


def test_parse_cpulist() -> None:
    assert numa.parse_cpulist("0-3,8,10-11\n") == [0, 1, 2, 3, 8, 10, 11]
    assert numa.parse_cpulist("5") == [5]
    assert numa.parse_cpulist("") == []


def _fake_sys(root, nodes: dict[int, str], gpus: dict[str, int]) -> str:
    for node, cpulist in nodes.items():
        path = root / "devices" / "system" / "node" / f"node{node}"
        path.mkdir(parents=True)
        (path / "cpulist").write_text(cpulist + "\n")
    for address, node in gpus.items():
        path = root / "bus" / "pci" / "devices" / address
        path.mkdir(parents=True)
        (path / "numa_node").write_text(f"{node}\n")
    return str(root)


def test_node_and_exclusive_bindings_on_two_sockets(tmp_path) -> None:
    root = _fake_sys(tmp_path, {0: "0-7", 1: "8-15"},
                     {"0000:1b:00.0": 0, "0000:2b:00.0": 0, "0000:9b:00.0": 1, "0000:ab:00.0": 1})
    nodes = [numa.node_of(a, root) for a in ("0000:1b:00.0", "0000:2b:00.0", "0000:9b:00.0", "0000:ab:00.0")]
    assert nodes == [0, 0, 1, 1]
    allowed = list(range(16))
    assert numa.bindings("node", nodes, allowed, root) == [list(range(8))] * 2 + [list(range(8, 16))] * 2
    assert numa.bindings("exclusive", nodes, allowed, root) == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11],
                                                               [12, 13, 14, 15]]
    # CPUs outside the launcher's own set are never given out.
    assert numa.bindings("node", [1], [0, 1, 8, 9], root) == [[8, 9]]
    assert numa.bindings("exclusive", [0, 0], [2, 3, 4], root) == [[2], [3]]


def test_unknown_nodes_and_more_ranks_than_cpus(tmp_path) -> None:
    root = _fake_sys(tmp_path, {0: "0-3"}, {"0000:01:00.0": -1})
    assert numa.node_of("0000:01:00.0", root) == -1
    assert numa.node_of("0000:ff:00.0", root) == -1  # no such device
    assert numa.bindings("node", [-1, -1], [0, 1, 2, 3], root) == [[0, 1, 2, 3]] * 2
    assert numa.bindings("exclusive", [0, 0, 0], [0, 1], root) == [[0], [1], [0]]
    with pytest.raises(ValueError, match="--numa-binding must be one of node, exclusive, got 'core'"):
        numa.bindings("core", [0], [0], root)


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="CPU affinity is a Linux call")
def test_launcher_binds_each_rank(tmp_path, monkeypatch, capfdbinary) -> None:
    allowed = sorted(os.sched_getaffinity(0))
    if len(allowed) < 2:
        pytest.skip("needs two CPUs to tell the ranks' shares apart")
    # Two ranks whose GPUs sit on no reported node: each gets its half of the launcher's CPUs.
    monkeypatch.setattr(numa, "gpu_pci_addresses", lambda count: [f"0000:0{i}:00.0" for i in range(count)])
    monkeypatch.setattr(numa, "node_of", lambda address, sys_root="/sys": -1)
    script = tmp_path / "affinity.py"
    script.write_text("import os\nprint('cpus', sorted(os.sched_getaffinity(0)))\n")
    assert run.launch(["--nproc-per-node", "2", "--master-port", "0", "--numa-binding", "exclusive", str(script)]) == 0
    out = capfdbinary.readouterr().out.decode()
    half = len(allowed) // 2
    assert f"[rank0]:cpus {allowed[:half]}" in out
    assert f"[rank1]:cpus {allowed[half:2 * half]}" in out


def test_launcher_reports_missing_gpus(monkeypatch, capsys) -> None:
    def none(count: int) -> list[str]:
        raise RuntimeError(f"--numa-binding: {count} ranks on this node but only 0 visible GPU(s)")

    monkeypatch.setattr(numa, "gpu_pci_addresses", none)
    with pytest.raises(SystemExit) as exc:
        run.launch(["--nproc-per-node", "2", "--numa-binding", "node", "train.py"])
    assert exc.value.code == 2
    assert "2 ranks on this node but only 0 visible GPU(s)" in capsys.readouterr().err


def test_without_gpus_the_launcher_says_so(capsys) -> None:
    if numa.cuda_probe._probe() >= 2:
        pytest.skip("this machine has the GPUs")
    with pytest.raises(SystemExit):
        run.launch(["--nproc-per-node", "2", "--numa-binding", "node", "train.py"])
    assert "--numa-binding: 2 GPU(s) needed but" in capsys.readouterr().err
