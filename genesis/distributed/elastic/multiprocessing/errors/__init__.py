"""``record``: the decorator torchrun scripts put on their entry point (torch.distributed.elastic's).

It runs the function; an exception is written to the file named by ``TORCHELASTIC_ERROR_FILE`` (when a launcher
sets it) in torchelastic's JSON layout, then raised again. ``SystemExit(0)`` ends the function quietly.
"""

from __future__ import annotations

import functools
import json
import os
import time
import traceback
from typing import Any, Callable


def _write_error_file(e: BaseException) -> None:
    path = os.environ.get("TORCHELASTIC_ERROR_FILE")
    if not path:
        return
    data = {"message": {"message": f"{type(e).__name__}: {e}",
                        "extraInfo": {"py_callstack": traceback.format_exc(), "timestamp": str(int(time.time()))}}}
    with open(path, "w") as f:
        json.dump(data, f)


def record(fn: Callable[..., Any], error_handler: Any = None) -> Callable[..., Any]:
    """Wrap ``fn`` so that an exception it raises is recorded for the launcher before it propagates."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except SystemExit as e:
            if e.code == 0:
                return None
            raise
        except Exception as e:
            if error_handler is not None:
                error_handler.record_exception(e)
            else:
                _write_error_file(e)
            raise

    return wrapper


__all__ = ["record"]
