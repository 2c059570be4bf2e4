"""The ready-made DistributedDataParallel communication hooks (torch's ``default_hooks``).

Each is ``hook(process_group, bucket) -> Future`` for ``DistributedDataParallel.register_comm_hook(state, hook)``,
with ``state`` the process group (None: the default group). ``allreduce_hook`` averages as DDP does without a hook;
the compress hooks average in float16 or bfloat16, halving the bytes on the wire, and write the result back in the
gradients' dtype.
"""

from __future__ import annotations

from typing import Any, Callable

from genesis import dtypes
from genesis.distributed import collectives
from genesis.distributed.grad_bucket import GradBucket
from genesis.distributed.process_group import ProcessGroup, resolve
from genesis.futures import Future
from genesis.tensor import Tensor


def _group(process_group: ProcessGroup | None) -> ProcessGroup:
    return resolve("ddp communication hook", process_group)


def _allreduce_fut(process_group: ProcessGroup | None, tensor: Tensor) -> Future[Tensor]:
    """Average ``tensor`` over the group in place (divide, then sum); a future of the tensor."""
    group = _group(process_group)
    tensor.div_(group.size())
    work = collectives.all_reduce(tensor, group=group, async_op=True)
    return work.get_future().then(lambda fut: fut.value()[0])


def allreduce_hook(process_group: ProcessGroup | None, bucket: GradBucket) -> Future[Tensor]:
    """Average the bucket's gradients over the group (DDP's own reduction, as a hook)."""
    return _allreduce_fut(process_group, bucket.buffer())


def _compress_hook(dtype: dtypes.dtype, process_group: ProcessGroup | None, bucket: GradBucket) -> Future[Tensor]:
    group = _group(process_group)
    buffer = bucket.buffer()
    compressed = buffer.to(dtype).div_(group.size())

    def decompress(fut: Future) -> Tensor:
        buffer.copy_(fut.value()[0])
        return buffer

    return collectives.all_reduce(compressed, group=group, async_op=True).get_future().then(decompress)


def fp16_compress_hook(process_group: ProcessGroup | None, bucket: GradBucket) -> Future[Tensor]:
    """Average the bucket's gradients in float16 (half the bytes of float32 on the wire)."""
    return _compress_hook(dtypes.float16, process_group, bucket)


def bf16_compress_hook(process_group: ProcessGroup | None, bucket: GradBucket) -> Future[Tensor]:
    """Average the bucket's gradients in bfloat16."""
    return _compress_hook(dtypes.bfloat16, process_group, bucket)


def _compress_wrapper(dtype: dtypes.dtype, hook: Callable[[Any, GradBucket], Future]) -> Callable:
    def wrapped(hook_state: Any, bucket: GradBucket) -> Future[Tensor]:
        original = bucket.buffer()
        bucket.set_buffer(original.to(dtype))
        fut = hook(hook_state, bucket)

        def decompress(done: Future) -> Tensor:
            value = done.value()
            original.copy_(value[0] if isinstance(value, (list, tuple)) else value)
            return original

        return fut.then(decompress)

    return wrapped


def fp16_compress_wrapper(hook: Callable[[Any, GradBucket], Future]) -> Callable:
    """``hook`` run on a float16 copy of the bucket, its result written back in the gradients' dtype."""
    return _compress_wrapper(dtypes.float16, hook)


def bf16_compress_wrapper(hook: Callable[[Any, GradBucket], Future]) -> Callable:
    """``hook`` run on a bfloat16 copy of the bucket, its result written back in the gradients' dtype."""
    return _compress_wrapper(dtypes.bfloat16, hook)


__all__ = ["allreduce_hook", "bf16_compress_hook", "bf16_compress_wrapper", "fp16_compress_hook",
           "fp16_compress_wrapper"]
