"""torch.multiprocessing's ``Process``, aware of scripts run through ``python -m genesis.torch_compat``.

The machinery that makes a spawned child re-run such a script with its ``torch`` imports on Genesis
(:class:`ScriptCall`, :func:`compat_script`, :func:`main_without_file`) lives in ``genesis.utils.script_children``,
below the DataLoader, whose workers need it too.
"""

from __future__ import annotations

import multiprocessing

from genesis.utils.script_children import ScriptCall, compat_script, main_without_file, run_script_as_main


class Process(multiprocessing.Process):
    """``multiprocessing.Process``, which also runs its ``target`` in a spawned child of a torch_compat script.

    Under ``python -m genesis.torch_compat`` with the "spawn" or "forkserver" start method, the child runs the script
    again with ``torch`` on Genesis before it reads ``target`` and ``args`` (see this module). A subclass that
    overrides ``run()`` instead of passing ``target`` gets no such help there: define it in an imported module that
    uses ``genesis`` directly. Everywhere else it is exactly the standard class.
    """

    def start(self) -> None:
        """Start the process (``multiprocessing.Process.start``)."""
        script = compat_script()
        if script is None or self._target is None or multiprocessing.get_start_method() == "fork":
            super().start()
            return
        self._target = ScriptCall(script, self._target, self._args, self._kwargs)
        self._args, self._kwargs = (), {}
        with main_without_file():
            super().start()


__all__ = ["Process", "ScriptCall", "compat_script", "main_without_file", "run_script_as_main"]
