"""Spawned children of a script run through ``python -m genesis.torch_compat``: they see ``torch`` as Genesis too.

The standard library only: both ``genesis.multiprocessing`` (torch.multiprocessing's processes and ``spawn``) and the
DataLoader's workers start such children, and the DataLoader sits below ``genesis.multiprocessing``.

A child started with the "spawn" or "forkserver" method is a fresh interpreter. Python's own start-up there re-runs
the parent's ``__main__`` file (as ``__mp_main__``) so that pickled references to its functions resolve; it would run
the script with the real ``torch``. So while Genesis starts such a child, the parent's ``__main__`` is shown without
its ``__file__`` (:func:`main_without_file`): the child's start-up leaves ``__main__`` alone. The child's target is a
:class:`ScriptCall`, which holds the real target and its arguments pickled: in the child it first runs the script as
``__mp_main__`` with torch_compat's import redirection (and keeps the finder for the script's folder installed), and
only then unpickles and calls the target, whose references to ``__main__`` now find the script's Genesis-backed
functions and classes.

``genesis.torch_compat`` is imported only inside the child (:func:`run_script_as_main`): importing it while the
``genesis`` package loads would make ``python -m genesis.torch_compat`` run a second copy of that module.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import runpy
import sys
import types
from collections.abc import Callable, Iterator
from multiprocessing.reduction import ForkingPickler
from typing import Any

_COMPAT_MODULE = "genesis.torch_compat"


def compat_script() -> str | None:
    """The script this process runs through ``genesis.torch_compat`` (``__main__`` runs with its redirecting
    ``__import__``), or None for an ordinary program."""
    main = sys.modules.get("__main__")
    namespace = vars(main).get("__builtins__") if main is not None else None
    importer = namespace.get("__import__") if isinstance(namespace, dict) else None
    module_globals = getattr(importer, "__globals__", {})
    if getattr(module_globals.get("__spec__"), "name", None) != _COMPAT_MODULE:
        return None
    script = getattr(main, "__file__", None)
    return os.path.abspath(script) if isinstance(script, str) else None


@contextlib.contextmanager
def main_without_file() -> Iterator[None]:
    """While a child starts: ``sys.modules["__main__"]`` is a copy of the script's module without ``__file__``, so
    the child's start-up does not re-run the script with the real torch (pickling by reference still finds every
    name of the script)."""
    main = sys.modules["__main__"]
    stand_in = types.ModuleType("__main__")
    stand_in.__dict__.update({name: value for name, value in vars(main).items() if name != "__file__"})
    sys.modules["__main__"] = stand_in
    try:
        yield
    finally:
        sys.modules["__main__"] = main


def run_script_as_main(script: str) -> None:
    """In a spawned child: run ``script`` as ``__mp_main__`` with its ``torch`` imports on Genesis and make it this
    process's ``__main__`` (as multiprocessing's own start-up does with the real imports); modules of the script's
    folder imported later get the redirection too."""
    compat = importlib.import_module(_COMPAT_MODULE)
    namespace = compat.compat_builtins()
    sys.meta_path.insert(0, compat.ScriptFolderFinder(os.path.dirname(script), namespace))
    main = types.ModuleType("__mp_main__")
    main.__dict__.update(runpy.run_path(script, init_globals={"__builtins__": namespace}, run_name="__mp_main__"))
    sys.modules["__main__"] = sys.modules["__mp_main__"] = main


def _load_call(script: str, payload: bytes) -> ScriptCall:
    """A :class:`ScriptCall` as unpickled in the child: the target still pickled in ``payload``."""
    call = ScriptCall.__new__(ScriptCall)
    call.script, call.call, call.payload = script, None, payload
    return call


class ScriptCall:
    """A target with its arguments, carried to a spawned child of a torch_compat script.

    They are pickled when the process object is (inside ``Process.start``, so queues, locks and pipes among the
    arguments are accepted), and unpickled in the child only after :func:`run_script_as_main`. Calling it calls
    ``target(*lead, *args, **kwargs)``.
    """

    def __init__(self, script: str, target: Callable[..., Any], args: tuple = (),
                 kwargs: dict[str, Any] | None = None) -> None:
        self.script = script
        self.call: tuple[Callable[..., Any], tuple, dict[str, Any]] | None = (target, tuple(args), dict(kwargs or {}))
        self.payload: bytes | None = None

    def __reduce__(self) -> tuple[Any, ...]:
        payload = self.payload if self.call is None else bytes(ForkingPickler.dumps(self.call))
        return _load_call, (self.script, payload)

    def __call__(self, *lead: Any) -> Any:
        if self.call is None:
            run_script_as_main(self.script)
            self.call = ForkingPickler.loads(self.payload)
        target, args, kwargs = self.call
        return target(*lead, *args, **kwargs)
