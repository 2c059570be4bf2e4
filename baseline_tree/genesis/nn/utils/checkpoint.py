"""Activation checkpointing: trade compute for memory by recomputing a block's activations in backward.

``checkpoint(fn, *args)`` runs ``fn`` without recording a graph, keeping only its inputs. In backward it runs
``fn`` again with gradients enabled on the saved inputs (and the random-number state of the first run, so
dropout draws the same mask) and backpropagates through the recomputed graph, which also accumulates the
gradients of the parameters ``fn`` uses.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from genesis.autograd import Function, backward, enable_grad
from genesis.random import get_rng_state, set_rng_state
from genesis.tensor import Tensor, empty


class _Checkpoint(Function):
    @staticmethod
    def forward(ctx: Any, fn: Callable, preserve_rng_state: bool, anchor: Tensor, *args: Any) -> Any:
        ctx.fn = fn
        ctx.rng_state = get_rng_state() if preserve_rng_state else None
        ctx.tensor_positions = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        ctx.args = list(args)
        ctx.save_for_backward(*(args[i] for i in ctx.tensor_positions))
        return fn(*args)

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
            with enable_grad():
                outputs = ctx.fn(*args)
        finally:
            set_rng_state(outer_rng)
        outputs = outputs if isinstance(outputs, tuple) else (outputs,)
        pairs = [(o, g) for o, g in zip(outputs, grads)
                 if isinstance(o, Tensor) and o.requires_grad and g is not None]
        if pairs:
            backward([o for o, _ in pairs], [g for _, g in pairs])
        input_grads = [args[i].grad if isinstance(args[i], Tensor) else None for i in range(len(args))]
        return (None, None, None, *input_grads)


def checkpoint(function: Callable[..., Any], *args: Any, use_reentrant: bool | None = None,
               preserve_rng_state: bool = True, **kwargs: Any) -> Any:
    """Run ``function(*args)`` without storing its activations; recompute them during backward.

    Args:
        function: the block to run (it may use parameters; their gradients accumulate as usual).
        args: its arguments; tensors among them receive gradients.
        use_reentrant: accepted for torch compatibility (there is one implementation).
        preserve_rng_state: replay the random-number state in the recomputation (same dropout masks).
    """
    if kwargs:
        raise ValueError(f"checkpoint: unexpected keyword arguments {sorted(kwargs)}")
    # A leaf that requires grad makes the graph record this node even when no input requires grad, so the
    # parameters inside ``function`` still receive gradients.
    anchor = empty(0, requires_grad=True)
    return _Checkpoint.apply(function, preserve_rng_state, anchor, *args)


def checkpoint_sequential(functions: Sequence[Callable[[Any], Any]], segments: int, input: Any,
                          use_reentrant: bool | None = None, preserve_rng_state: bool = True) -> Any:
    """Run a sequence of blocks in ``segments`` checkpointed chunks (the last chunk runs normally)."""
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
        input = checkpoint(run(start, end), input, preserve_rng_state=preserve_rng_state)
    return run(end, len(functions))(input)
