"""``spawn`` / ``start_processes`` (torch.multiprocessing.spawn): start ``nprocs`` processes that each run
``fn(i, *args)``, wait for them, and bring a child's failure back to the parent as an exception.

Each child gets a file for its traceback (a one-shot message: a queue can deadlock when a child dies while writing to
it). When a child exits with a non-zero code, the parent terminates the others (SIGTERM, then SIGKILL after a grace
period) and raises ``ProcessRaisedException`` with the child's traceback when it raised, or
``ProcessExitedException`` with its exit code or signal when it died or called ``sys.exit`` / ``os._exit``.
"""

from __future__ import annotations

import ctypes
import logging
import multiprocessing
import multiprocessing.connection
import os
import shutil
import signal
import sys
import tempfile
import time
import traceback
import warnings
import weakref
from collections.abc import Callable
from typing import Any

from genesis.multiprocessing.children import ScriptCall, compat_script, main_without_file

__all__ = ["ProcessContext", "ProcessException", "ProcessExitedException", "ProcessRaisedException", "SpawnContext",
           "spawn", "start_processes"]

log = logging.getLogger(__name__)

_PR_SET_PDEATHSIG = 1  # prctl(2) option: the signal this process gets when its parent thread ends


class ProcessException(Exception):
    """A spawned process failed.

    Attributes:
        msg: the message.
        error_index: the failed process's index ``i`` (the first argument of ``fn``).
        error_pid: its process id (``pid`` reads the same).
    """

    def __init__(self, msg: str, error_index: int, error_pid: int) -> None:
        super().__init__(msg)
        self.msg = msg
        self.error_index = error_index
        self.error_pid = error_pid

    @property
    def pid(self) -> int:
        """The failed process's id (torch names it ``error_pid``)."""
        return self.error_pid

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (self.msg, self.error_index, self.error_pid)


class ProcessRaisedException(ProcessException):
    """A spawned process raised an exception; the message holds its traceback."""


class ProcessExitedException(ProcessException):
    """A spawned process was killed by a signal or exited with a non-zero code without raising.

    Attributes:
        exit_code: the exit code, negative for a signal (``-9`` for SIGKILL), as ``Process.exitcode``.
        signal_name: the signal's name (``"SIGKILL"``), or None when the process exited by itself.
    """

    def __init__(self, msg: str, error_index: int, error_pid: int, exit_code: int,
                 signal_name: str | None = None) -> None:
        super().__init__(msg, error_index, error_pid)
        self.exit_code = exit_code
        self.signal_name = signal_name

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (self.msg, self.error_index, self.error_pid, self.exit_code, self.signal_name)


def _die_with_parent() -> None:
    """Ask Linux to send SIGINT to this process when its parent ends (as torch), so no child outlives a killed
    parent; elsewhere nothing happens."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGINT)


def _wrap(fn: Callable[..., Any], i: int, args: tuple, error_file: str) -> None:
    """The body of every spawned process: ``fn(i, *args)``; an exception's traceback goes to ``error_file`` and the
    process exits with code 1."""
    _die_with_parent()
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass  # SIGINT: the parent ended or is stopping this process
    except Exception:
        with open(error_file, "w", encoding="utf-8") as f:
            f.write(traceback.format_exc())
        sys.exit(1)


class ProcessContext:
    """The processes started by ``start_processes(..., join=False)``: wait for them with :meth:`join`.

    Attributes:
        processes: the ``multiprocessing.Process`` objects, in index order.
        error_files: the file each process writes its traceback to if it raises.
        sentinels: the sentinels of the processes not joined yet, mapped to their index.
    """

    def __init__(self, processes: list[multiprocessing.process.BaseProcess], error_files: list[str]) -> None:
        self.processes = processes
        self.error_files = error_files
        self.sentinels = {process.sentinel: index for index, process in enumerate(processes)}

    def pids(self) -> list[int]:
        """The process ids, in index order."""
        return [int(process.pid) for process in self.processes]

    def _join_all(self, timeout: float) -> None:
        """Join every process, all within one shared ``timeout`` (seconds)."""
        end = time.monotonic() + timeout
        for process in self.processes:
            process.join(max(0.0, end - time.monotonic()))

    def join(self, timeout: float | None = None, grace_period: float | None = None) -> bool:
        """Wait until every process has ended, one fails, or ``timeout`` seconds pass.

        When a process exited with a non-zero code, the others get ``grace_period`` seconds to end by themselves
        (none when it is None), then SIGTERM, then SIGKILL after ``grace_period`` more (30 s when None), and the
        failure is raised.

        Args:
            timeout: the longest wait in seconds (None: until one process ends).
            grace_period: seconds the other processes get to stop before they are terminated and killed.

        Returns:
            True when every process has ended successfully, False while some still run.

        Raises:
            ProcessRaisedException: a process raised; its traceback is in the message.
            ProcessExitedException: a process was killed by a signal or exited with a non-zero code.
        """
        if not self.sentinels:
            return True
        ready = multiprocessing.connection.wait(list(self.sentinels), timeout=timeout)
        error_index = None
        for sentinel in ready:
            index = self.sentinels.pop(sentinel)
            process = self.processes[index]
            process.join()
            if process.exitcode != 0:
                error_index = index
                break
        if error_index is None:
            return not self.sentinels
        self._stop_all(grace_period)
        raise self._failure(error_index)

    def _stop_all(self, grace_period: float | None) -> None:
        """End every process still running: a grace period, SIGTERM, another grace period, SIGKILL."""
        if grace_period is not None:
            self._join_all(grace_period)
        for process in self.processes:
            if process.is_alive():
                log.warning("Terminating process %s via signal SIGTERM", process.pid)
                process.terminate()
        self._join_all(30.0 if grace_period is None else grace_period)
        for process in self.processes:
            if process.is_alive():
                log.warning("Unable to shutdown process %s via SIGTERM, forcefully exiting via SIGKILL", process.pid)
                process.kill()
            process.join()

    def _failure(self, index: int) -> ProcessException:
        """The exception that tells how process ``index`` failed."""
        process = self.processes[index]
        try:
            with open(self.error_files[index], encoding="utf-8") as f:
                trace = f.read()
        except FileNotFoundError:
            code = process.exitcode
            if code is not None and code < 0:
                try:
                    name = signal.Signals(-code).name
                except ValueError:
                    name = f"<Unknown signal {-code}>"
                return ProcessExitedException(f"process {index} terminated with signal {name}", index, process.pid,
                                              code, name)
            return ProcessExitedException(f"process {index} terminated with exit code {code}", index, process.pid,
                                          code)
        msg = f"\n\n-- Process {index} terminated with the following error:\n{trace}"
        return ProcessRaisedException(msg, index, process.pid)


class SpawnContext(ProcessContext):
    """The old name of :class:`ProcessContext` (deprecated, as in torch)."""

    def __init__(self, processes: list[multiprocessing.process.BaseProcess], error_files: list[str]) -> None:
        warnings.warn("SpawnContext is renamed to ProcessContext since 1.4 release.", stacklevel=2)
        super().__init__(processes, error_files)


def start_processes(fn: Callable[..., Any], args: tuple = (), nprocs: int = 1, join: bool = True,
                    daemon: bool = False, start_method: str = "spawn") -> ProcessContext | None:
    """Start ``nprocs`` processes with ``start_method`` that each run ``fn(i, *args)`` (``i`` = 0 .. nprocs - 1).

    With "spawn" or "forkserver", ``fn`` and ``args`` are pickled: ``fn`` must be defined at the top level of a
    module, and Genesis tensors arrive as copies (Genesis shares tensor memory only with forked processes; torch
    passes shared memory through). With "fork", the children inherit the parent's objects, shared tensors included.
    Under ``python -m genesis.torch_compat script.py`` each spawned child runs the script again (as
    ``__mp_main__``) with its ``torch`` imports on Genesis before it reads ``fn``.

    Args:
        fn: the function each process calls as ``fn(i, *args)``.
        args: the arguments after the index.
        nprocs: how many processes.
        join: wait for all of them (True), or return a :class:`ProcessContext` at once.
        daemon: the processes' daemon flag.
        start_method: "spawn", "fork" or "forkserver".

    Returns:
        None when ``join``; else the :class:`ProcessContext`.

    Raises:
        ProcessRaisedException, ProcessExitedException: (with ``join``) a process failed; the others are ended.
    """
    ctx = multiprocessing.get_context(start_method)
    script = None if start_method == "fork" else compat_script()
    folder = tempfile.mkdtemp(prefix="genesis-spawn-")
    error_files = [os.path.join(folder, f"error-{i}.txt") for i in range(nprocs)]
    target, target_args = (fn, args) if script is None else (ScriptCall(script, fn, args), ())
    processes = []
    for i in range(nprocs):
        process = ctx.Process(target=_wrap, args=(target, i, target_args, error_files[i]), daemon=daemon)
        if script is None:
            process.start()
        else:
            with main_without_file():
                process.start()
        processes.append(process)
    context = ProcessContext(processes, error_files)
    weakref.finalize(context, shutil.rmtree, folder, ignore_errors=True)
    if not join:
        return context
    while not context.join():
        pass
    return None


def spawn(fn: Callable[..., Any], args: tuple = (), nprocs: int = 1, join: bool = True, daemon: bool = False,
          start_method: str = "spawn") -> ProcessContext | None:
    """Start ``nprocs`` processes that run ``fn(i, *args)`` with the "spawn" start method (torch.multiprocessing.spawn).

    The usual DDP launch without a launcher::

        def main(rank, world_size):
            dist.init_process_group("gloo", rank=rank, world_size=world_size)
            ...

        if __name__ == "__main__":
            os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", "29500"
            mp.spawn(main, args=(world_size,), nprocs=world_size, join=True)

    When a process fails, the others are ended and its failure is raised in the parent: ``ProcessRaisedException``
    (with the child's traceback) or ``ProcessExitedException`` (exit code or signal). See :func:`start_processes`.

    Args:
        fn: called as ``fn(i, *args)``; defined at the top level of a module (it is pickled).
        args: the arguments after the index.
        nprocs: how many processes.
        join: wait for all of them, or return a :class:`ProcessContext` at once.
        daemon: the processes' daemon flag.
        start_method: deprecated, as in torch: anything but "spawn" warns and "spawn" is used; call
            :func:`start_processes` for another start method.

    Returns:
        None when ``join``; else the :class:`ProcessContext`.
    """
    if start_method != "spawn":
        warnings.warn(f"This method only supports start_method=spawn (got: {start_method}).\nTo use a different "
                      "start_method use:\n\t\t genesis.multiprocessing.start_processes(...)", FutureWarning,
                      stacklevel=2)
    return start_processes(fn, args, nprocs, join, daemon, start_method="spawn")
