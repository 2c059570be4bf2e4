"""Differentiable collectives (torch.distributed.nn.functional): each returns new tensors and has a backward.

Gradients flow back through the matching collective: ``all_gather``'s backward reduce-scatters the gradients of its
outputs (each rank gets the sum of the gradients for its own tensor), ``all_reduce``'s all-reduces the gradient with
the same op, ``broadcast``'s reduces onto the source (other ranks get zeros), ``reduce``'s broadcasts from the
destination, ``gather`` and ``scatter`` are each other's backward, ``reduce_scatter``'s all-gathers, and the
all-to-alls send the gradients back the way the values came. Contrastive losses that gather embeddings from every
rank (``all_gather`` then a loss over the whole batch) train through these, as in torch.
"""

from __future__ import annotations

from typing import Any

from genesis.autograd import Function
from genesis.distributed import collectives as C
from genesis.distributed import list_collectives as L
from genesis.distributed.process_group import ProcessGroup, ReduceOp, resolve
from genesis.tensor import Tensor, empty, empty_like, zeros_like


def _group_rank(group: ProcessGroup | None) -> tuple[ProcessGroup, int]:
    pg = resolve("torch.distributed.nn", group)
    return pg, pg.ranks[pg.rank()]


class _AllGather(Function):
    @staticmethod
    def forward(ctx: Any, group: ProcessGroup | None, tensor: Tensor) -> tuple[Tensor, ...]:
        ctx.group = group
        pg, _ = _group_rank(group)
        tensor = tensor.contiguous()
        out = [empty_like(tensor) for _ in range(pg.size())]
        C.all_gather(out, tensor, pg)
        return tuple(out)

    @staticmethod
    def backward(ctx: Any, *grads: Tensor) -> tuple[Any, ...]:
        pg, _ = _group_rank(ctx.group)
        return None, _ReduceScatter.apply(ReduceOp.SUM, ctx.group, empty_like(grads[pg.rank()]), *grads)


class _ReduceScatter(Function):
    @staticmethod
    def forward(ctx: Any, op: ReduceOp, group: ProcessGroup | None, output: Tensor, *inputs: Tensor) -> Tensor:
        ctx.group = group
        output = output.contiguous()
        L.reduce_scatter(output, [t.contiguous() for t in inputs], op, resolve("reduce_scatter", group))
        return output

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Any, ...]:
        return (None, None, None) + _AllGather.apply(ctx.group, grad)


class _AllReduce(Function):
    @staticmethod
    def forward(ctx: Any, op: ReduceOp, group: ProcessGroup | None, tensor: Tensor) -> Tensor:
        ctx.group, ctx.op = group, op
        out = tensor.contiguous().clone()
        C.all_reduce(out, op, resolve("all_reduce", group))
        return out

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Any, ...]:
        return None, None, _AllReduce.apply(ctx.op, ctx.group, grad)


class _Broadcast(Function):
    @staticmethod
    def forward(ctx: Any, src: int, group: ProcessGroup | None, tensor: Tensor) -> Tensor:
        ctx.src, ctx.group = src, group
        out = tensor.contiguous().clone()
        C.broadcast(out, src, resolve("broadcast", group))
        return out

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Any, ...]:
        gx = _Reduce.apply(ctx.src, ReduceOp.SUM, ctx.group, grad)
        _, me = _group_rank(ctx.group)
        return None, None, gx if me == ctx.src else zeros_like(gx)


class _Reduce(Function):
    @staticmethod
    def forward(ctx: Any, dst: int, op: ReduceOp, group: ProcessGroup | None, tensor: Tensor) -> Tensor:
        ctx.dst, ctx.group = dst, group
        out = tensor.contiguous().clone()
        C.reduce(out, dst, op, resolve("reduce", group))
        return out

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Any, ...]:
        return None, None, None, _Broadcast.apply(ctx.dst, ctx.group, grad)


class _Gather(Function):
    @staticmethod
    def forward(ctx: Any, dst: int, group: ProcessGroup | None, tensor: Tensor) -> tuple[Tensor, ...]:
        ctx.dst, ctx.group = dst, group
        pg, me = _group_rank(group)
        out = [zeros_like(tensor) for _ in range(pg.size())]
        L.gather(tensor.contiguous(), out if me == dst else None, dst, pg)
        return tuple(out)

    @staticmethod
    def backward(ctx: Any, *grads: Tensor) -> tuple[Any, ...]:
        return None, None, _Scatter.apply(ctx.dst, ctx.group, *grads)


class _Scatter(Function):
    @staticmethod
    def forward(ctx: Any, src: int, group: ProcessGroup | None, *tensors: Tensor) -> Tensor:
        ctx.src, ctx.group = src, group
        if any(t.shape != tensors[0].shape for t in tensors):
            raise ValueError("scatter: every tensor must have one shape, got "
                             f"{[tuple(t.shape) for t in tensors]}")
        pg, me = _group_rank(group)
        out = zeros_like(tensors[0])
        L.scatter(out, [t.contiguous() for t in tensors] if me == src else None, src, pg)
        return out

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Any, ...]:
        return (None, None) + _Gather.apply(ctx.src, ctx.group, grad)


class _AllToAll(Function):
    @staticmethod
    def forward(ctx: Any, group: ProcessGroup | None, outputs: list[Tensor], *inputs: Tensor) -> tuple[Tensor, ...]:
        ctx.group = group
        ctx.shapes = [t.shape for t in inputs]
        L.all_to_all(list(outputs), [t.contiguous() for t in inputs], resolve("all_to_all", group))
        return tuple(outputs)

    @staticmethod
    def backward(ctx: Any, *grads: Tensor) -> tuple[Any, ...]:
        back = [empty(shape, dtype=grads[0].dtype, device=grads[0].device) for shape in ctx.shapes]
        return (None, None) + _AllToAll.apply(ctx.group, back, *grads)


class _AllToAllSingle(Function):
    @staticmethod
    def forward(ctx: Any, group: ProcessGroup | None, output: Tensor, output_split_sizes: list[int] | None,
                input_split_sizes: list[int] | None, input: Tensor) -> Tensor:
        ctx.group, ctx.input_shape = group, input.shape
        ctx.splits = (input_split_sizes, output_split_sizes)  # the way back: sizes swapped
        C.all_to_all_single(output, input.contiguous(), output_split_sizes, input_split_sizes,
                            resolve("all_to_all_single", group))
        return output

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Any, ...]:
        back = empty(ctx.input_shape, dtype=grad.dtype, device=grad.device)
        return None, None, None, None, _AllToAllSingle.apply(ctx.group, back, *ctx.splits, grad.contiguous())


def all_gather(tensor: Tensor, group: ProcessGroup | None = None) -> tuple[Tensor, ...]:
    """Every rank's ``tensor``, as a tuple in group order; differentiable (see the module docstring)."""
    return _AllGather.apply(group, tensor)


def all_reduce(tensor: Tensor, op: ReduceOp = ReduceOp.SUM, group: ProcessGroup | None = None) -> Tensor:
    """A new tensor holding the reduction of ``tensor`` over the group; differentiable."""
    return _AllReduce.apply(op, group, tensor)


def broadcast(tensor: Tensor, src: int, group: ProcessGroup | None = None) -> Tensor:
    """A new tensor holding rank ``src``'s ``tensor``; differentiable."""
    return _Broadcast.apply(src, group, tensor)


def reduce(tensor: Tensor, dst: int, op: ReduceOp = ReduceOp.SUM, group: ProcessGroup | None = None) -> Tensor:
    """A new tensor holding, on rank ``dst``, the reduction of ``tensor`` over the group; differentiable."""
    return _Reduce.apply(dst, op, group, tensor)


def gather(tensor: Tensor, dst: int = 0, group: ProcessGroup | None = None) -> tuple[Tensor, ...]:
    """Every rank's ``tensor`` on rank ``dst`` (zeros elsewhere), as a tuple; differentiable."""
    return _Gather.apply(dst, group, tensor)


def scatter(tensors: list[Tensor] | None, src: int = 0, group: ProcessGroup | None = None) -> Tensor:
    """Rank ``i``'s entry of rank ``src``'s ``tensors`` (every rank passes a list of the same shapes);
    differentiable."""
    return _Scatter.apply(src, group, *tensors)


def reduce_scatter(output: Tensor, input_list: list[Tensor], op: ReduceOp = ReduceOp.SUM,
                   group: ProcessGroup | None = None) -> Tensor:
    """The reduction over the group of every rank's ``input_list[i]``, on rank ``i``; differentiable."""
    return _ReduceScatter.apply(op, group, output, *input_list)


def all_to_all(output_tensor_list: list[Tensor], input_tensor_list: list[Tensor],
               group: ProcessGroup | None = None) -> tuple[Tensor, ...]:
    """``input_tensor_list[i]`` to rank ``i``, what rank ``i`` sent here in entry ``i``; differentiable."""
    return _AllToAll.apply(group, output_tensor_list, *input_tensor_list)


def all_to_all_single(output: Tensor, input: Tensor, output_split_sizes: list[int] | None = None,
                      input_split_sizes: list[int] | None = None, group: ProcessGroup | None = None) -> Tensor:
    """``all_to_all_single`` into ``output``, returned; differentiable."""
    return _AllToAllSingle.apply(group, output, output_split_sizes, input_split_sizes, input)
