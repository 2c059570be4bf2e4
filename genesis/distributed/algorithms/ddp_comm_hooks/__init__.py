"""DistributedDataParallel communication hooks (torch.distributed.algorithms.ddp_comm_hooks): the ready-made hooks
of ``default_hooks`` and ``register_ddp_comm_hook`` to install one by name."""

from __future__ import annotations

import enum
import functools
from typing import Any

from genesis.distributed.algorithms.ddp_comm_hooks import default_hooks


class DDPCommHookType(enum.Enum):
    """The built-in hooks by name (torch's members of the same names)."""

    ALLREDUCE = functools.partial(default_hooks.allreduce_hook)
    FP16_COMPRESS = functools.partial(default_hooks.fp16_compress_hook)
    BF16_COMPRESS = functools.partial(default_hooks.bf16_compress_hook)


def register_ddp_comm_hook(comm_hook_type: DDPCommHookType, model: Any, state: Any = None) -> None:
    """Install the hook ``comm_hook_type`` on the DistributedDataParallel ``model`` (``state``: its process group,
    None for the default group)."""
    model.register_comm_hook(state, comm_hook_type.value)


__all__ = ["DDPCommHookType", "default_hooks", "register_ddp_comm_hook"]
