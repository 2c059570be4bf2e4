"""Activation checkpointing: trade compute for memory by recomputing a block's activations in backward.

Two variants, as torch's. Both recompute under the random-number state of the first run (so dropout draws the same
mask) and under the autocast settings of the forward, so a checkpointed block inside ``autocast`` recomputes in the
same precision.

- Reentrant (``use_reentrant=True``, the default, with a warning to choose): ``fn`` runs without recording a graph,
  one node keeps its inputs; its backward runs ``fn`` again with gradients enabled and backpropagates through the
  recomputed graph, accumulating into the ``.grad`` of the parameters ``fn`` uses. So, as in torch, it serves
  ``.backward()`` only (not ``autograd.grad`` or ``backward(inputs=...)``), and records nothing when no input
  requires grad: the block's parameters then get no gradient.
- Non-reentrant (``use_reentrant=False``): ``fn`` records its graph as usual, but every tensor an op saves for
  backward goes through saved-tensor hooks (``genesis.autograd.graph``) that keep a placeholder instead; the first
  time a backward pass reads one, ``fn`` reruns and the placeholders get the recomputed tensors for that pass. The
  graph is the plain one, so ``autograd.grad``, ``backward(inputs=...)`` and double backward work, keyword arguments
  reach ``fn``, and ``context_fn`` gives the contexts the forward and the recomputation run in. Tensors an op keeps
  outside ``save_for_backward`` stay in memory (correct, only less memory is saved).
"""

from __future__ import annotations

import contextlib
import itertools
import warnings
import weakref
from typing import Any, Callable, Sequence

from genesis.amp import autocast, get_autocast_dtype, is_autocast_cache_enabled, is_autocast_enabled
from genesis.autograd import Function, backward, enable_grad, engine, is_grad_enabled
from genesis.autograd.graph import saved_tensors_hooks
from genesis.random import get_rng_state, set_rng_state
from genesis.tensor import Tensor, empty

_DETERMINISM_CHECKS = ("default", "none")


def noop_context_fn() -> tuple[contextlib.nullcontext, contextlib.nullcontext]:
    """The default ``context_fn`` of :func:`checkpoint`: no context around the forward or the recomputation."""
    return contextlib.nullcontext(), contextlib.nullcontext()


def detach_variable(inputs: tuple) -> tuple:
    """``inputs`` with each tensor detached, keeping its ``requires_grad`` (other values pass as they are): the
    leaves a reentrant checkpoint recomputes from, as torch's helper."""
    if not isinstance(inputs, tuple):
        raise RuntimeError(f"Only tuple of tensors is supported. Got Unsupported input type: {type(inputs).__name__}")
    out = []
    for value in inputs:
        if isinstance(value, Tensor):
            detached = value.detach()
            detached.requires_grad = value.requires_grad
            value = detached
        out.append(value)
    return tuple(out)


_AUTOCAST_DEVICES = ("cpu", "cuda")


def _autocast_state() -> list[tuple[str, bool, Any, bool]]:
    """The autocast settings in force, per device type: what the recomputation runs under, as the forward did."""
    return [(d, is_autocast_enabled(d), get_autocast_dtype(d), is_autocast_cache_enabled()) for d in _AUTOCAST_DEVICES]


def _recompute_under(forward_rng: Any, autocast_state: list, contexts: Sequence[Any]) -> contextlib.ExitStack:
    """The contexts a recomputation runs in: grad on, the forward's random-number state (when it was kept; the
    outer state comes back after) and autocast settings, then ``contexts``."""
    stack = contextlib.ExitStack()
    stack.enter_context(enable_grad())
    if forward_rng is not None:
        outer_rng = get_rng_state()
        set_rng_state(forward_rng)
        stack.callback(set_rng_state, outer_rng)
    for device_type, enabled, dtype, cache in autocast_state:
        stack.enter_context(autocast(device_type, dtype, enabled, cache))
    for context in contexts:
        stack.enter_context(context)
    return stack


class _Checkpoint(Function):
    """The reentrant variant: one node that keeps the block's inputs and recomputes it in its backward."""

    @staticmethod
    def forward(ctx: Any, fn: Callable, preserve_rng_state: bool, anchor: Tensor, *args: Any) -> Any:
        ctx.fn = fn
        ctx.autocast = _autocast_state()
        ctx.rng_state = get_rng_state() if preserve_rng_state else None
        ctx.tensor_positions = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        ctx.args = list(args)
        ctx.save_for_backward(*(args[i] for i in ctx.tensor_positions))
        return fn(*args)

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> Any:
        if not engine.is_checkpoint_valid():
            raise RuntimeError("When use_reentrant=True, torch.utils.checkpoint is incompatible with .grad() or "
                               "passing an `inputs` parameter to .backward(). To resolve this error, you can either "
                               "set use_reentrant=False, or call .backward() without passing the `inputs` argument.")
        args = list(ctx.args)
        for i, t in zip(ctx.tensor_positions, ctx.saved_tensors):
            args[i] = t.detach().requires_grad_(t.requires_grad)
        with _recompute_under(ctx.rng_state, ctx.autocast, ()):
            outputs = ctx.fn(*args)
        outputs = outputs if isinstance(outputs, tuple) else (outputs,)
        if not any(isinstance(o, Tensor) and o.requires_grad for o in outputs):
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is not necessary")
        pairs = [(o, g) for o, g in zip(outputs, grads)
                 if isinstance(o, Tensor) and o.requires_grad and g is not None]
        if pairs:
            backward([o for o, _ in pairs], [g for _, g in pairs])
        input_grads = [args[i].grad if isinstance(args[i], Tensor) else None for i in range(len(args))]
        return (None, None, None, *input_grads)


class _SaveInputs(Function):
    """Keeps the inputs of a non-reentrant checkpoint for its recomputation, with the in-place checks every saved
    tensor gets (torch's ``_NoopSaveInputs``). Its output is dropped; the frame holds the node."""

    @staticmethod
    def forward(ctx: Any, anchor: Tensor, *args: Any) -> Tensor:
        ctx.save_for_backward(*(a for a in args if isinstance(a, Tensor)))
        return empty(0)

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> Any:
        raise AssertionError("Did not expect to backward on this graph")


class CheckpointError(RuntimeError):
    """The recomputation in backward differs from the checkpointed forward (torch's ``CheckpointError``)."""


class _StopRecomputation(Exception):
    """Raised by the recomputation's pack hook once every placeholder has its tensor (torch's early stop)."""


class _Holder:
    """What the graph keeps for one saved tensor of a non-reentrant checkpoint: the recomputed tensor per backward
    pass, until that pass ends."""

    __slots__ = ("values", "__weakref__")

    def __init__(self) -> None:
        self.values: dict[int, Tensor] = {}


_unpack_ids = itertools.count(-2, -1)  # stand-ins for the pass id of an unpack outside backward (torch's uuid)


class _Frame:
    """One call of a non-reentrant checkpoint: the inputs, the placeholders of the tensors its ops saved (weakly:
    a node freed by backward drops its own), their metadata, and how to rerun the block."""

    def __init__(self, fn: Callable, args: tuple, preserve_rng_state: bool, recompute_context: Any,
                 check: bool) -> None:
        self.fn = fn
        self.tensor_positions = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        self.args = [None if isinstance(a, Tensor) else a for a in args]
        self.inputs_node = _SaveInputs.apply(empty(0, requires_grad=True), *args).grad_fn
        self.rng_state = get_rng_state() if preserve_rng_state else None
        self.autocast = _autocast_state()
        self.recompute_context = recompute_context
        self.check = check
        self.holders: list[weakref.ref] = []
        self.metadata: list[Any] = []
        self.recomputed: dict[int, int] = {}  # pass id -> how many tensors the recomputation saved

    def pack(self, x: Tensor) -> _Holder:
        holder = _Holder()
        self.holders.append(weakref.ref(holder))
        self.metadata.append(_tensor_metadata(x) if self.check else None)
        return holder

    def unpack(self, holder: _Holder) -> Tensor:
        gid = engine.current_graph_task_id()
        if gid == -1:  # read outside backward: a recomputation for this read alone
            gid = next(_unpack_ids)
            self._recompute(gid)
            value = holder.values[gid]
            self._forget(gid)
            return value
        if gid not in self.recomputed:
            self._recompute(gid)
            # A node may read its saved tensors more than once; the pass's recomputed tensors go when it ends (or
            # earlier, with the nodes that hold them, when the graph is freed as it runs).
            engine.queue_callback(lambda: self._forget(gid))
        return holder.values[gid]

    def _forget(self, gid: int) -> None:
        """Drop what the recomputation for pass ``gid`` made."""
        self.recomputed.pop(gid, None)
        for ref in self.holders:
            holder = ref()
            if holder is not None:
                holder.values.pop(gid, None)

    def _recompute(self, gid: int) -> None:
        self.recomputed[gid] = 0

        def pack(x: Tensor) -> Tensor:
            index = self.recomputed[gid]
            if index >= len(self.holders):
                raise CheckpointError("torch.utils.checkpoint: trying to save more tensors during recomputation "
                                      "than during the original forward pass.")
            self.recomputed[gid] = index + 1
            holder = self.holders[index]()
            if holder is not None:
                holder.values[gid] = x.detach() if x.requires_grad else x
            if index + 1 == len(self.holders):
                raise _StopRecomputation
            return x

        args = list(self.args)
        for i, t in zip(self.tensor_positions, self.inputs_node.saved_tensors):
            args[i] = t
        try:
            with saved_tensors_hooks(pack, lambda x: x), _recompute_under(self.rng_state, self.autocast,
                                                                          (self.recompute_context,)):
                self.fn(*args)
        except _StopRecomputation:
            pass
        self._check_recomputed(gid)

    def _check_recomputed(self, gid: int) -> None:
        """torch's determinism check: as many tensors saved as in the forward, each with the forward's shape, dtype
        and device (the metadata only with ``determinism_check="default"``)."""
        if self.recomputed[gid] != len(self.holders):
            raise CheckpointError("torch.utils.checkpoint: A different number of tensors was saved during the "
                                  "original forward and recomputation.\nNumber of tensors saved during forward: "
                                  f"{len(self.holders)}\nNumber of tensors saved during recomputation: "
                                  f"{self.recomputed[gid]}.")
        if not self.check:
            return
        different = ""
        for index, (ref, saved) in enumerate(zip(self.holders, self.metadata)):
            holder = ref()
            if holder is not None and _tensor_metadata(holder.values[gid]) != saved:
                different += (f"tensor at position {index}:\nsaved metadata: {saved}\n"
                              f"recomputed metadata: {_tensor_metadata(holder.values[gid])}\n")
        if different:
            raise CheckpointError("torch.utils.checkpoint: Recomputed values for the following tensors have "
                                  f"different metadata than during the forward pass.\n{different}.")


def _tensor_metadata(x: Tensor) -> dict[str, Any]:
    """What the determinism check compares (torch's ``_default_meta_extractor``)."""
    return {"shape": x.shape, "dtype": x.dtype, "device": x.device}


def _checkpoint_without_reentrant(call: Callable, args: tuple, preserve_rng_state: bool,
                                  contexts: tuple[Any, Any], check: bool) -> Any:
    """Run ``call(*args)`` recording its graph, with the tensors its ops save replaced by placeholders that the
    first read in backward fills by recomputation."""
    forward_context, recompute_context = contexts
    if not is_grad_enabled():
        with forward_context:
            return call(*args)
    frame = _Frame(call, args, preserve_rng_state, recompute_context, check)
    with saved_tensors_hooks(frame.pack, frame.unpack), forward_context:
        return call(*args)


def checkpoint(function: Callable[..., Any], *args: Any, use_reentrant: bool | None = None,
               context_fn: Callable[[], tuple[Any, Any]] = noop_context_fn, determinism_check: str = "default",
               debug: bool = False, preserve_rng_state: bool = True, **kwargs: Any) -> Any:
    """Run ``function(*args, **kwargs)`` without storing its activations; recompute them during backward.

    Args:
        function: the block to run (it may use parameters; their gradients accumulate as usual).
        args: its arguments; tensors among them receive gradients.
        use_reentrant: torch's choice of variant (None means True, as torch, with a warning); see the module's
            docstring. Keyword arguments for ``function``, ``context_fn`` and ``debug`` need
            ``use_reentrant=False``.
        context_fn: returns two context managers, entered around the forward and around the recomputation.
        determinism_check: ``"default"`` checks that the recomputation saves as many tensors as the forward, of
            the same shapes, dtypes and devices (raising :class:`CheckpointError`); ``"none"`` checks the count only.
        debug: accepted (torch adds the recorded ops to error messages; Genesis's messages stay as they are).
        preserve_rng_state: replay the random-number state in the recomputation (same dropout masks).
        kwargs: keyword arguments for ``function`` (tensors among them receive gradients too).
    """
    if use_reentrant is None:
        warnings.warn("torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. Starting in "
                      "PyTorch 2.9, calling checkpoint without use_reentrant will raise an exception. "
                      "use_reentrant=False is recommended, but if you need to preserve the current default behavior, "
                      "you can pass use_reentrant=True. Refer to docs for more details on the differences between "
                      "the two variants.", stacklevel=2)
        use_reentrant = True
    if kwargs and use_reentrant:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    if use_reentrant and (context_fn is not noop_context_fn or debug is not False):
        raise ValueError("Passing `context_fn` or `debug` is only supported when use_reentrant=False.")
    if debug and context_fn is not noop_context_fn:
        raise ValueError("debug=True is incompatible with non-default context_fn")
    if determinism_check not in _DETERMINISM_CHECKS:
        raise ValueError(f"determinism_check should be one of {list(_DETERMINISM_CHECKS)}, but got "
                         f"{determinism_check}")
    if not use_reentrant:
        def call(*flat: Any) -> Any:
            return function(*flat, **kwargs)

        return _checkpoint_without_reentrant(call, args, preserve_rng_state, context_fn(),
                                             determinism_check == "default")
    # As torch's, the reentrant node is recorded only when an input requires grad (the parameters inside
    # ``function`` then get no gradient, with a warning).
    if is_grad_enabled() and not any(isinstance(a, Tensor) and a.requires_grad for a in args):
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None", stacklevel=2)
    return _Checkpoint.apply(function, preserve_rng_state, empty(0), *args)


def checkpoint_sequential(functions: Sequence[Callable[[Any], Any]], segments: int, input: Any,
                          use_reentrant: bool | None = None, preserve_rng_state: bool = True) -> Any:
    """Run a sequence of blocks in ``segments`` checkpointed chunks (the last chunk runs normally)."""
    if use_reentrant is None:
        warnings.warn("torch.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter should be passed "
                      "explicitly. In version 2.9 we will raise an exception if use_reentrant is not passed. "
                      "use_reentrant=False is recommended, but if you need to preserve the current default behavior, "
                      "you can pass use_reentrant=True. Refer to docs for more details on the differences between "
                      "the two variants.", stacklevel=2)
        use_reentrant = True
    functions = list(functions.children()) if hasattr(functions, "children") else list(functions)
    if segments <= 0:
        raise ValueError(f"checkpoint_sequential: segments must be positive, got {segments}")
    size = max(1, len(functions) // segments)

    def run(start: int, end: int) -> Callable[[Any], Any]:
        def forward(x: Any) -> Any:
            for fn in functions[start:end]:
                x = fn(x)
            return x

        return forward

    end = 0
    for start in range(0, size * (segments - 1), size):
        end = start + size
        input = checkpoint(run(start, end), input, use_reentrant=use_reentrant, preserve_rng_state=preserve_rng_state)
    return run(end, len(functions))(input)
