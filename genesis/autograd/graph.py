"""``genesis.autograd.graph`` (``torch.autograd.graph``): hooks on the tensors the graph saves for backward.

    with genesis.autograd.graph.saved_tensors_hooks(pack_hook, unpack_hook):
        loss = model(x).sum()     # every tensor an op saves for backward goes through pack_hook now
    loss.backward()               # ... and through unpack_hook when backward reads it

``pack_hook(tensor)`` may return any object; the graph keeps that object instead of the tensor, and
``unpack_hook(packed)`` must give back a tensor with the same values (activation offloading: :class:`save_on_cpu`;
compression, recomputation). As in torch, the hooks in effect when a value is saved are the ones that unpack it,
a tensor read twice (``retain_graph=True``) is unpacked twice, and packed values are not checked for in-place
changes made after they were saved. The unpacked tensor takes the original's place in the graph (its ``grad_fn``,
or the leaf it was), so double backward (``create_graph=True``) still differentiates through it.

Where the hooks act: every op recorded by ``Function.apply`` (built-in ops and custom Functions alike) keeps its
saved values on its graph node; while a hooks block is open the node hands them to the innermost block right after
the op ran, and then keeps only what ``pack_hook`` returned (it drops its references to its inputs too, so offloaded
tensors can be freed). With no block open this costs one check per recorded op that saves something.

Unlike torch, whose hooks stack is per thread, the stack here is per process (as the profiler's recording).
"""

from __future__ import annotations

import contextlib
import weakref
from typing import Any, Callable, Iterator, Sequence

from genesis.autograd import engine as _engine
from genesis.autograd import function as _function
from genesis.autograd.function import Node, RemovableHandle
from genesis.autograd.grad_mode import no_grad
from genesis.device import device as _device

__all__ = ["saved_tensors_hooks", "save_on_cpu", "disable_saved_tensors_hooks", "Node", "increment_version",
           "register_multi_grad_hook"]

#: The message of the innermost open ``disable_saved_tensors_hooks`` block (None: hooks are allowed).
_disabled_message: str | None = None


class _Entry:
    """One saved tensor as packed: what ``pack_hook`` returned and the original's place in the graph."""

    __slots__ = ("packed", "node", "output_nr", "accumulator", "own_output", "source")

    def __init__(self, packed: Any, tensor: Any, ctx: Any) -> None:
        self.packed = packed
        node = tensor._grad_fn
        self.own_output = node is ctx  # kept as a flag: a reference to ctx itself would be a cycle
        self.node = None if self.own_output else node
        self.output_nr = tensor._output_nr
        # A leaf that requires grad: its accumulator (the graph's edges hold it anyway) routes gradients to it.
        self.accumulator = tensor._accumulator() if node is None and tensor._requires_grad else None
        self.source = weakref.ref(tensor)

    def restore(self, tensor: Any, ctx: Any) -> Any:
        """``tensor`` (what ``unpack_hook`` returned) in the original's place in the graph."""
        node = ctx if self.own_output else self.node
        if node is None and self.accumulator is None:
            return tensor
        if node is not None and tensor._grad_fn is node and tensor._output_nr == self.output_nr:
            return tensor
        if node is None and tensor._grad_fn is None and tensor._grad_accumulator is not None \
                and tensor._grad_accumulator() is self.accumulator:
            return tensor
        alias = _function.Tensor._wrap(tensor.ndarray)
        alias._requires_grad = True
        if node is not None:
            alias._grad_fn = node
            alias._output_nr = self.output_nr
        else:
            alias._grad_accumulator = weakref.ref(self.accumulator)
        return alias


class _Packed:
    """The saved values of one graph node after packing; the node reads them back through :meth:`unpack`."""

    __slots__ = ("hooks", "entries")

    def __init__(self, hooks: saved_tensors_hooks, entries: list[Any]) -> None:
        self.hooks = hooks
        self.entries = entries  # an _Entry per saved tensor; other saved values (None, numbers) as they are

    def unpack(self, ctx: Any) -> tuple:
        """The saved values, each tensor through ``unpack_hook`` (called again on every read, as torch)."""
        result = []
        for entry in self.entries:
            if not isinstance(entry, _Entry):
                result.append(entry)
                continue
            tensor = self.hooks.unpack_hook(entry.packed)
            if not isinstance(tensor, _function.Tensor):
                raise TypeError("Output of saved tensor unpack_hook expected to be a Tensor but got result of type "
                                f"{type(tensor).__name__}")
            result.append(entry.restore(tensor, ctx))
        return tuple(result)

    def replace(self, ctx: Any, target: Any) -> None:
        """``target`` is about to be overwritten in place by the op of ``ctx``: pack a copy of its current values
        instead (what ``pack_hook`` returned may share its memory). ``pack_hook`` runs once more for it."""
        snapshot = None
        for i, entry in enumerate(self.entries):
            if isinstance(entry, _Entry) and entry.source() is target:
                if snapshot is None:
                    nd = target.ndarray
                    snapshot = _function.Tensor._wrap(nd.backend.contiguous(nd))
                    snapshot._requires_grad = target._requires_grad
                    snapshot._grad_fn = target._grad_fn
                    snapshot._output_nr = target._output_nr
                    snapshot._grad_accumulator = target._grad_accumulator
                self.entries[i] = self.hooks._entry(snapshot, ctx)


class saved_tensors_hooks:
    """Within the block, tensors saved for backward go through ``pack_hook`` when saved and ``unpack_hook`` when
    backward reads them (``torch.autograd.graph.saved_tensors_hooks``).

    Args:
        pack_hook: ``pack_hook(tensor) -> Any``, called (under ``no_grad``) with each tensor an op saves, right
            after the op ran; it must not change the tensor in place. To avoid a reference cycle its result should
            not hold the tensor itself (``x.detach()`` rather than ``x``).
        unpack_hook: ``unpack_hook(packed) -> Tensor``, called with what ``pack_hook`` returned each time backward
            reads the saved tensor; it should return a tensor of the original's values, shape, dtype and device.

    Only the innermost block's hooks apply when blocks nest.
    """

    def __init__(self, pack_hook: Callable[[Any], Any], unpack_hook: Callable[[Any], Any]) -> None:
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self) -> None:
        if _disabled_message is not None:
            raise RuntimeError(_disabled_message)
        _function.saved_tensors_hooks_stack.append(self)

    def __exit__(self, *exc: object) -> None:
        stack = _function.saved_tensors_hooks_stack
        if stack and stack[-1] is self:
            stack.pop()
        elif self in stack:
            stack.remove(self)

    def _entry(self, tensor: Any, ctx: Any) -> _Entry:
        with no_grad():
            return _Entry(self.pack_hook(tensor), tensor, ctx)

    def pack(self, ctx: Any) -> None:
        """Pack the values ``ctx`` saved (called by ``Function.apply`` after the op ran, outputs wrapped)."""
        if _disabled_message is not None:
            raise RuntimeError(_disabled_message)
        entries = []
        for value in ctx._saved:
            tensor = ctx._as_tensor(value)
            entries.append(self._entry(tensor, ctx) if isinstance(tensor, _function.Tensor) else value)
        ctx._packed = _Packed(self, entries)
        ctx._saved = ()
        if not ctx._fn.keeps_inputs:
            ctx._inputs = ()  # only needed to map saved arrays back to their tensors, done above


class save_on_cpu(saved_tensors_hooks):
    """Within the block, tensors saved for backward are kept in host memory and copied back to their device when
    backward reads them (``torch.autograd.graph.save_on_cpu``): GPU memory traded for copies.

    Args:
        pin_memory: pack into page-locked host memory (copied again from there, ``non_blocking``) where a CUDA GPU
            is available; otherwise a plain host copy. Without it a tensor already on the CPU is kept as it is.
        device_type: the accelerator whose availability decides whether memory can be pinned (torch's argument).

    Genesis copies a GPU tensor to pageable host memory first and pins that copy (torch copies straight into a
    pinned buffer, asynchronously).
    """

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda") -> None:
        def pack_to_cpu(tensor: Any) -> tuple[Any, Any]:
            packed = tensor.detach().cpu()
            if pin_memory:
                if _device(device_type).is_available() and not tensor.is_sparse:
                    packed = packed.pin_memory()
                elif tensor.device.type == "cpu":
                    packed = packed.clone()  # asked to pin, torch always packs into a new buffer
            return tensor.device, packed

        def unpack_from_cpu(packed: tuple[Any, Any]) -> Any:
            device, tensor = packed
            return tensor.to(device, non_blocking=pin_memory)

        super().__init__(pack_to_cpu, unpack_from_cpu)


@contextlib.contextmanager
def disable_saved_tensors_hooks(error_message: str) -> Iterator[None]:
    """Within the block, opening a ``saved_tensors_hooks`` block, or saving a tensor for backward under one that is
    already open, raises ``RuntimeError(error_message)`` (``torch.autograd.graph.disable_saved_tensors_hooks``).

    For features that cannot work with packed saved tensors."""
    global _disabled_message
    previous = _disabled_message
    _disabled_message = error_message
    try:
        yield
    finally:
        _disabled_message = previous


def increment_version(tensor: Any) -> None:
    """Mark ``tensor`` as modified in place, as an in-place op would (``torch.autograd.graph.increment_version``):
    graph nodes that saved it refuse to run backward afterwards."""
    tensor._bump_version()


class _MultiHandle(RemovableHandle):
    """The handle of :func:`register_multi_grad_hook`: ``remove()`` removes the hook from every tensor."""

    def __init__(self, handles: tuple[RemovableHandle, ...]) -> None:
        self.handles = handles

    def remove(self) -> None:
        for handle in self.handles:
            handle.remove()


def _node_of(t: Any) -> Node | None:
    """The node whose run computes ``t``'s gradient: its ``grad_fn``, or a leaf's gradient accumulator."""
    if t.grad_fn is not None:
        return t.grad_fn
    return t._accumulator() if t.requires_grad else None


def register_multi_grad_hook(tensors: Sequence[Any], fn: Callable[..., None], *, mode: str = "all"
                             ) -> RemovableHandle:
    """Call ``fn`` once per backward pass about the gradients of several tensors
    (``torch.autograd.graph.register_multi_grad_hook``).

    Args:
        tensors: the tensors watched (each must require grad in ``"all"`` mode).
        fn: with ``mode="all"``, ``fn(grads)`` runs once every watched tensor's gradient that the pass computes has
            been computed, with a list of them in the order of ``tensors``: None for a tensor outside the pass's
            graph, or not on the way to the ``inputs`` of ``backward(inputs=...)`` / ``autograd.grad``. With
            ``mode="any"``, ``fn(grad)`` runs once per pass with the first watched gradient computed. It should not
            change its arguments; what it returns is ignored.
        mode: "all" or "any".

    Returns:
        A handle whose ``remove()`` unregisters the hook from every tensor.

    As torch's, it is built on tensor hooks (``Tensor.register_hook``) and tells passes apart by their id; each
    watched gradient is the one the tensor's other hooks registered before it produced.
    """
    if mode not in ("all", "any"):
        raise ValueError(f"Expects mode to be one of ('all', 'any') but got {mode}")
    tensors = tuple(tensors)
    if mode == "any":
        ran: set[int] = set()

        def first(grad: Any) -> None:
            task = _engine.current_graph_task_id()
            if task not in ran:
                ran.add(task)
                fn(grad)

        return _MultiHandle(tuple(t.register_hook(first) for t in tensors if t.requires_grad))

    nodes = [_node_of(t) for t in tensors]
    counts: dict[int, int] = {}
    expected: dict[int, int] = {}
    buffers: dict[int, list[Any]] = {}

    def watcher(i: int) -> Callable[[Any], None]:
        def hook(grad: Any) -> None:
            task = _engine.current_graph_task_id()
            if task not in counts:  # the pass's first watched gradient: how many of them will it compute?
                counts[task] = 0
                expected[task] = sum(node is not None and _engine.will_execute(node) for node in nodes)
                buffers[task] = [None] * len(tensors)
            buffers[task][i] = grad
            counts[task] += 1
            if counts[task] == expected[task]:
                grads = buffers.pop(task)
                del counts[task], expected[task]
                fn(grads)

        return hook

    return _MultiHandle(tuple(t.register_hook(watcher(i)) for i, t in enumerate(tensors)))
