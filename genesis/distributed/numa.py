"""CPU binding of the launcher's ranks to the cores near their GPU (``--numa-binding``, as torchrun's).

A rank's host thread launches every kernel of its GPU: its writes to the GPU's command queue and to pinned host
memory cross the link between sockets when the thread runs on the other socket's cores. Binding each rank to the
CPUs of its GPU's NUMA node keeps that traffic local.

Modes (local rank ``i`` drives GPU ``i`` of the visible ones):

- ``node``: rank ``i`` may run on every CPU of the NUMA node that holds GPU ``i``;
- ``exclusive``: the CPUs of that node are split into equal contiguous shares among the ranks whose GPUs sit on it,
  so no two ranks share a core.

CPUs outside the launcher's own affinity (a container's cpuset) are never used. Where the system reports no NUMA node
for a GPU (one-socket machines), the launcher's whole CPU set stands for its node.
"""

from __future__ import annotations

import os

from genesis._impl import cuda_probe

MODES = ("node", "exclusive")


def parse_cpulist(text: str) -> list[int]:
    """The CPUs of a Linux cpulist such as ``"0-3,8,10-11"``, in increasing order."""
    cpus: set[int] = set()
    for part in text.strip().split(","):
        if not part:
            continue
        first, _, last = part.partition("-")
        cpus.update(range(int(first), int(last or first) + 1))
    return sorted(cpus)


def _read(path: str) -> str:
    with open(path) as f:
        return f.read().strip()


def gpu_pci_addresses(count: int) -> list[str]:
    """The PCI addresses of the first ``count`` visible GPUs, in CUDA's order."""
    try:
        return cuda_probe.pci_addresses(count)
    except RuntimeError as exc:
        raise RuntimeError(f"--numa-binding: {exc}") from None


def node_of(address: str, sys_root: str = "/sys") -> int:
    """The NUMA node of the PCI device at ``address`` (-1 where the system does not say)."""
    try:
        return int(_read(os.path.join(sys_root, "bus/pci/devices", address, "numa_node")))
    except (OSError, ValueError):
        return -1


def node_cpus(node: int, allowed: list[int], sys_root: str = "/sys") -> list[int]:
    """The CPUs of NUMA node ``node`` that are in ``allowed`` (all of ``allowed`` for node -1 or an empty share)."""
    if node < 0:
        return list(allowed)
    try:
        cpus = parse_cpulist(_read(os.path.join(sys_root, f"devices/system/node/node{node}/cpulist")))
    except OSError:
        return list(allowed)
    allowed_set = set(allowed)
    return [c for c in cpus if c in allowed_set] or list(allowed)


def bindings(mode: str, nodes: list[int], allowed: list[int], sys_root: str = "/sys") -> list[list[int]]:
    """The CPU set of each local rank, given the NUMA node of each rank's GPU (``nodes[i]`` for local rank i)."""
    if mode not in MODES:
        raise ValueError(f"--numa-binding must be one of {', '.join(MODES)}, got {mode!r}")
    sets = [node_cpus(n, allowed, sys_root) for n in nodes]
    if mode == "node":
        return sets
    out = []
    for rank, node in enumerate(nodes):
        sharing = [r for r, n in enumerate(nodes) if n == node]
        cpus, share = sets[rank], len(sharing)
        k = sharing.index(rank)
        if len(cpus) < share:  # fewer CPUs than ranks: they share, one CPU each in turn
            out.append([cpus[k % len(cpus)]])
            continue
        size = len(cpus) // share
        out.append(cpus[k * size:(k + 1) * size])
    return out


def rank_cpus(mode: str, nproc: int) -> list[list[int]]:
    """The CPU set of each of this node's ``nproc`` ranks under ``mode``, for this machine."""
    allowed = sorted(os.sched_getaffinity(0))
    nodes = [node_of(a) for a in gpu_pci_addresses(nproc)]
    return bindings(mode, nodes, allowed)
