"""How multiprocessing pickles Genesis tensors (torch.multiprocessing.reductions): by value, with a warning for a
tensor in shared memory.

torch sends a shared tensor to another process as a handle to the same memory. Genesis's shared memory
(``Tensor.share_memory_``) is an anonymous mapping that only processes forked afterwards see, so a tensor put on a
queue or passed to a spawned process arrives as a copy; for a shared tensor that differs from torch (writes in the
other process are not seen here), and :func:`init_reductions` makes multiprocessing's pickler say so.
"""

from __future__ import annotations

import pickle
import warnings
from multiprocessing.reduction import ForkingPickler
from typing import Any

from genesis.nn.parameter import Buffer, Parameter
from genesis.tensor import Tensor

__all__ = ["init_reductions"]

_COPY_WARNING = ("genesis.multiprocessing: a tensor in shared memory is sent to another process as a copy; Genesis "
                 "shares tensor memory only with processes forked after share_memory_() (the 'fork' start method), "
                 "not through spawn, forkserver or queues as torch does, so writes on either side are not seen by the "
                 "other")


def reduce_tensor(tensor: Tensor) -> Any:
    """The tensor's own pickle reduction (its values, dtype, device and requires_grad); warns when it lives in
    shared memory."""
    if tensor.device.type == "cpu" and tensor.is_shared():
        warnings.warn(_COPY_WARNING, UserWarning, stacklevel=2)
    return tensor.__reduce_ex__(pickle.DEFAULT_PROTOCOL)


def init_reductions() -> None:
    """Register :func:`reduce_tensor` with multiprocessing's pickler (queues, pipes, spawned processes' arguments) for
    ``Tensor``, ``nn.Parameter`` and ``nn.Buffer``. ``genesis.multiprocessing`` calls it when imported."""
    for cls in (Tensor, Parameter, Buffer):
        ForkingPickler.register(cls, reduce_tensor)
