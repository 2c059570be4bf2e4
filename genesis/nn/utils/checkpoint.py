"""Activation checkpointing: trade compute for memory by recomputing a block's activations in backward.

``checkpoint(fn, *args)`` runs ``fn`` without recording a graph, keeping only its inputs. In backward it runs
``fn`` again with gradients enabled on the saved inputs (and the random-number state of the first run, so
dropout draws the same mask) and backpropagates through the recomputed graph, which also accumulates the
gradients of the parameters ``fn`` uses. The recomputation runs under the autocast settings of the forward (as
torch's), so a checkpointed block inside ``autocast`` recomputes in the same precision. ``context_fn`` gives the
contexts the forward and the recomputation run in (torch's non-reentrant variant); keyword arguments reach ``fn``
with ``use_reentrant=False``, as in torch. As torch's, the reentrant variant (the default, with a warning to choose)
records nothing when no input requires grad: the block's parameters then get no gradient.
"""

from __future__ import annotations

import contextlib
import warnings
from typing import Any, Callable, Sequence

from genesis.amp import autocast, get_autocast_dtype, is_autocast_cache_enabled, is_autocast_enabled
from genesis.autograd import Function, backward, enable_grad, is_grad_enabled
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


class CheckpointError(RuntimeError):
    """The recomputation in backward differs from the checkpointed forward (torch's ``CheckpointError``)."""


_AUTOCAST_DEVICES = ("cpu", "cuda")


def _autocast_state() -> list[tuple[str, bool, Any, bool]]:
    """The autocast settings in force, per device type: what the recomputation runs under, as the forward did."""
    return [(d, is_autocast_enabled(d), get_autocast_dtype(d), is_autocast_cache_enabled()) for d in _AUTOCAST_DEVICES]


def _metadata(outputs: Any) -> list[Any]:
    """Shape, dtype and device of every tensor among ``outputs`` (the ``"default"`` determinism check)."""
    outputs = outputs if isinstance(outputs, tuple) else (outputs,)
    return [(tuple(o.shape), o.dtype, o.device) for o in outputs if isinstance(o, Tensor)]


class _Checkpoint(Function):
    @staticmethod
    def forward(ctx: Any, fn: Callable, preserve_rng_state: bool, contexts: tuple[Any, Any], check: bool,
                anchor: Tensor, *args: Any) -> Any:
        forward_context, ctx.recompute_context = contexts
        ctx.fn = fn
        ctx.autocast = _autocast_state()
        ctx.rng_state = get_rng_state() if preserve_rng_state else None
        ctx.tensor_positions = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        ctx.args = list(args)
        ctx.save_for_backward(*(args[i] for i in ctx.tensor_positions))
        with forward_context:
            outputs = fn(*args)
        ctx.metadata = _metadata(outputs) if check else None
        return outputs

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> Any:
        args = list(ctx.args)
        saved = ctx.saved_tensors
        for i, t in zip(ctx.tensor_positions, saved):
            args[i] = t.detach().requires_grad_(t.requires_grad)
        outer_rng = get_rng_state()
        if ctx.rng_state is not None:
            set_rng_state(ctx.rng_state)
        try:
            with contextlib.ExitStack() as stack:
                stack.enter_context(enable_grad())
                for device_type, enabled, dtype, cache in ctx.autocast:  # the forward's mixed precision, as torch
                    stack.enter_context(autocast(device_type, dtype, enabled, cache))
                stack.enter_context(ctx.recompute_context)
                outputs = ctx.fn(*args)
        finally:
            set_rng_state(outer_rng)
        if ctx.metadata is not None and _metadata(outputs) != ctx.metadata:
            raise CheckpointError(f"torch.utils.checkpoint: Recomputed values have different metadata than during "
                                  f"the forward pass: forward gave (shape, dtype, device) {ctx.metadata}, the "
                                  f"recomputation {_metadata(outputs)}")
        outputs = outputs if isinstance(outputs, tuple) else (outputs,)
        pairs = [(o, g) for o, g in zip(outputs, grads)
                 if isinstance(o, Tensor) and o.requires_grad and g is not None]
        if pairs:
            backward([o for o, _ in pairs], [g for _, g in pairs])
        input_grads = [args[i].grad if isinstance(args[i], Tensor) else None for i in range(len(args))]
        return (None, None, None, None, None, *input_grads)


def checkpoint(function: Callable[..., Any], *args: Any, use_reentrant: bool | None = None,
               context_fn: Callable[[], tuple[Any, Any]] = noop_context_fn, determinism_check: str = "default",
               debug: bool = False, preserve_rng_state: bool = True, **kwargs: Any) -> Any:
    """Run ``function(*args, **kwargs)`` without storing its activations; recompute them during backward.

    Args:
        function: the block to run (it may use parameters; their gradients accumulate as usual).
        args: its arguments; tensors among them receive gradients.
        use_reentrant: torch's choice of variant (None means True, as torch). Genesis has one implementation;
            the flag decides only which arguments are allowed, as in torch: keyword arguments for ``function``,
            ``context_fn`` and ``debug`` need ``use_reentrant=False``.
        context_fn: returns two context managers, entered around the forward and around the recomputation.
        determinism_check: ``"default"`` checks that the recomputation gives outputs of the forward's shapes,
            dtypes and devices (raising :class:`CheckpointError`); ``"none"`` checks nothing. torch compares every
            tensor saved for backward; Genesis compares the block's outputs.
        debug: accepted (torch adds the recorded ops to error messages; Genesis's messages stay as they are).
        preserve_rng_state: replay the random-number state in the recomputation (same dropout masks).
        kwargs: keyword arguments for ``function`` (tensors among them receive gradients too).
    """
    if use_reentrant is None:
        warnings.warn("torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. In version "
                      "2.9 we will raise an exception if use_reentrant is not passed. use_reentrant=False is "
                      "recommended, but if you need to preserve the current default behavior, you can pass "
                      "use_reentrant=True. Refer to docs for more details on the differences between the two "
                      "variants.", stacklevel=2)
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
    names = list(kwargs)
    count = len(args)
    call = function
    if names:
        def call(*flat: Any) -> Any:
            return function(*flat[:count], **dict(zip(names, flat[count:])))

    # Non-reentrant: a leaf that requires grad makes the graph record this node even when no input requires grad,
    # so the parameters inside ``function`` still receive gradients. The reentrant variant records it only when an
    # input requires grad, as torch's (which warns that the block's parameters then get no gradient).
    if use_reentrant:
        anchor = empty(0)
        if is_grad_enabled() and not any(isinstance(a, Tensor) and a.requires_grad for a in args):
            warnings.warn("None of the inputs have requires_grad=True. Gradients will be None", stacklevel=2)
    else:
        anchor = empty(0, requires_grad=True)
    check = not use_reentrant and determinism_check == "default"
    return _Checkpoint.apply(call, preserve_rng_state, context_fn(), check, anchor, *args,
                             *(kwargs[n] for n in names))


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
