"""torch.multiprocessing: the standard library's :mod:`multiprocessing`, plus ``spawn`` / ``start_processes`` and the
sharing-strategy switches.

Every name of :mod:`multiprocessing` is here (``Queue``, ``Pool``, ``Manager``, ``get_context``,
``set_start_method``...), the standard objects themselves, except ``Process``: a subclass whose spawned children of
a ``python -m genesis.torch_compat`` script see ``torch`` as Genesis too (see ``genesis.multiprocessing.children``).

Sharing tensors, and how it differs from torch:

- ``Tensor.share_memory_()`` / ``Module.share_memory()`` move CPU tensors into an anonymous shared mapping. Processes
  forked afterwards (the "fork" start method, Linux's default before Python 3.14) see and make each other's writes:
  Hogwild training works with ``mp.get_context("fork").Process(target=train, args=(model,))``.
- Through "spawn" or "forkserver", and through queues and pipes, Genesis tensors are pickled by value: the other
  process gets a copy (a warning says so for a shared tensor). torch passes shared memory through these; Genesis
  does not.
- ``set_sharing_strategy`` records the choice among torch's names ("file_descriptor", "file_system" on Linux) and
  ``get_sharing_strategy`` returns it, but Genesis has the one mechanism above whatever is chosen.
"""

from __future__ import annotations

import multiprocessing
import sys
from multiprocessing import *  # noqa: F403  (the standard API, as torch.multiprocessing re-exports it)

from genesis.multiprocessing.children import Process as Process  # the standard class, aware of torch_compat
from genesis.multiprocessing.reductions import init_reductions
from genesis.multiprocessing.spawn import (
    ProcessContext,
    ProcessException,
    ProcessExitedException,
    ProcessRaisedException,
    SpawnContext,
    spawn,
    start_processes,
)

__all__ = ["ProcessContext", "ProcessException", "ProcessExitedException", "ProcessRaisedException", "SpawnContext",
           "get_all_sharing_strategies", "get_sharing_strategy", "set_sharing_strategy", "spawn", "start_processes",
           *multiprocessing.__all__]

if sys.platform in ("darwin", "win32"):
    _all_sharing_strategies = {"file_system"}
    _sharing_strategy = "file_system"
else:
    _all_sharing_strategies = {"file_descriptor", "file_system"}
    _sharing_strategy = "file_descriptor"


def set_sharing_strategy(new_strategy: str) -> None:
    """Record the strategy for sharing CPU tensors between processes (torch's names, one of
    :func:`get_all_sharing_strategies`). Genesis has one mechanism (a shared mapping that forked processes inherit),
    whichever name is recorded.

    Raises:
        ValueError: an unknown strategy.
    """
    global _sharing_strategy
    if new_strategy not in _all_sharing_strategies:
        raise ValueError(f"set_sharing_strategy: invalid sharing strategy {new_strategy!r}, expected one of "
                         f"{sorted(_all_sharing_strategies)}")
    _sharing_strategy = new_strategy


def get_sharing_strategy() -> str:
    """The strategy recorded by :func:`set_sharing_strategy` ("file_descriptor" by default on Linux)."""
    return _sharing_strategy


def get_all_sharing_strategies() -> set[str]:
    """The strategy names torch knows on this system: {"file_descriptor", "file_system"} on Linux."""
    return set(_all_sharing_strategies)


init_reductions()
