"""Module backward hooks (``register_full_backward_hook``, ``register_full_backward_pre_hook``), as torch runs them.

A call of a module with backward hooks routes its tensor inputs and its outputs through two identity graph nodes.
The backward of the output node receives the gradients of the outputs: the pre-hooks see (and may replace) them.
The backward of the input node receives the gradients of the inputs: the full hooks see ``(module, grad_input,
grad_output)`` and may return a replacement ``grad_input``. Entries for positional arguments that are not tensors
requiring grad are None; keyword arguments are not part of ``grad_input`` (torch's rules); a tensor argument that
does not require grad, beside one that does, has a zero gradient (torch's hook node marks it non-differentiable and
materializes its gradient). When no input requires grad, the full hooks run with an all-None ``grad_input`` as
soon as the output gradients are known. Only a tensor or a tuple (named tuples included) of outputs is hooked, as in
torch: ``grad_output`` has one entry per tuple item, None for the items that are not tensors requiring grad; any
other output (a list, a dict) gets a warning and no hook runs, and neither do the full hooks of a call whose inputs
get gradients that did not pass through its outputs.
"""

from __future__ import annotations

import warnings
from typing import Any, Callable

from genesis.autograd import Function, is_grad_enabled
from genesis.tensor import Tensor, zeros_like


class _Identity(Function):
    """The given tensors themselves as one graph node; its backward hands their gradients to ``on_grads``."""

    is_view = True

    @staticmethod
    def forward(ctx: Any, *tensors: Tensor, on_grads: Callable[[tuple], tuple]) -> Any:
        ctx.on_grads = on_grads
        ctx.set_materialize_grads(False)  # an output that got no gradient reaches the hooks as None, as in torch
        return tensors if len(tensors) > 1 else tensors[0]

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> tuple:
        return tuple(ctx.on_grads(grads))


def _replaced(hook_kind: str, what: str, result: Any, count: int) -> tuple:
    """A hook's replacement of ``what`` ("grad_input" or "grad_output"), checked to hold ``count`` entries;
    ``hook_kind`` ("Backward hook" or "Backward pre hook") names the hook in the error."""
    result = tuple(result) if isinstance(result, (tuple, list)) else (result,)
    if len(result) != count:
        raise RuntimeError(f"{hook_kind} returned an invalid number of {what}, got {len(result)}, but expected {count}")
    return result


class BackwardHook:
    """The backward hooks of one module call: wrap the inputs before forward and the outputs after it."""

    def __init__(self, module: Any, full_hooks: list[Callable], pre_hooks: list[Callable]) -> None:
        self.module = module
        self.full_hooks = full_hooks
        self.pre_hooks = pre_hooks
        self.n_args = 0
        self.positions: list[int] = []
        self.constants: dict[int, Tensor] = {}
        self.n_outputs = 0
        self.output_positions: list[int] = []
        self.grad_output: tuple | None = None

    def setup_inputs(self, args: tuple) -> tuple:
        """``args`` with the tensors requiring grad routed through the input node."""
        self.n_args = len(args)
        if not is_grad_enabled():
            return args
        self.positions = [i for i, a in enumerate(args) if isinstance(a, Tensor) and a.requires_grad]
        if not self.positions:
            return args
        self.constants = {i: a for i, a in enumerate(args) if isinstance(a, Tensor) and not a.requires_grad}
        wrapped = _Identity.apply(*(args[i] for i in self.positions), on_grads=self._input_grads)
        wrapped = wrapped if isinstance(wrapped, tuple) else (wrapped,)
        args = list(args)
        for i, t in zip(self.positions, wrapped):
            args[i] = t
        return tuple(args)

    def setup_outputs(self, output: Any) -> Any:
        """``output`` (a tensor or a tuple) with its tensors requiring grad routed through the output node."""
        if not isinstance(output, (Tensor, tuple)):
            warnings.warn("For backward hooks to be called, module output should be a Tensor or a tuple of Tensors "
                          f"but received {type(output)}", UserWarning, stacklevel=3)
            return output
        if not is_grad_enabled():
            return output
        items = [output] if isinstance(output, Tensor) else list(output)
        positions = [i for i, t in enumerate(items) if isinstance(t, Tensor) and t.requires_grad]
        if not positions:
            return output
        self.n_outputs = len(items)
        self.output_positions = positions
        wrapped = _Identity.apply(*(items[i] for i in positions), on_grads=self._output_grads)
        wrapped = wrapped if isinstance(wrapped, tuple) else (wrapped,)
        for i, t in zip(positions, wrapped):
            items[i] = t
        if isinstance(output, Tensor):
            return items[0]
        return tuple(items) if type(output) is tuple else type(output)(*items)

    def _output_grads(self, grads: tuple) -> tuple:
        grad_output: tuple = tuple(_scattered(self.output_positions, grads, self.n_outputs))
        for hook in self.pre_hooks:
            result = hook(self.module, grad_output)
            if result is not None:
                grad_output = _replaced("Backward pre hook", "grad_output", result, len(grad_output))
        self.grad_output = grad_output
        if not self.positions and self.full_hooks:  # no input requires grad: the full hooks run now, all-None input
            warnings.warn("Full backward hook is firing when gradients are computed with respect to module outputs "
                          "since no inputs require gradients.", UserWarning, stacklevel=2)
            for hook in self.full_hooks:
                result = hook(self.module, (None,) * self.n_args, grad_output)
                if result is not None and not (isinstance(result, tuple) and all(g is None for g in result)):
                    raise RuntimeError("Backward hook for Modules where no input requires gradient should always "
                                       "return None or None for all gradients.")
            self.grad_output = None
        return tuple(grad_output[i] for i in self.output_positions)

    def _input_grads(self, grads: tuple) -> tuple:
        if self.grad_output is None:  # the gradient reached the inputs without passing through the outputs
            return grads
        grad_input = _scattered(self.positions, grads, self.n_args)
        for i, t in self.constants.items():
            grad_input[i] = zeros_like(t)
        grad_input = tuple(grad_input)
        for hook in self.full_hooks:
            result = hook(self.module, grad_input, self.grad_output)
            if result is not None:
                grad_input = _replaced("Backward hook", "grad_input", result, self.n_args)
        self.grad_output = None
        return tuple(grad_input[i] for i in self.positions)


def _scattered(positions: list[int], values: tuple, size: int) -> list:
    """A list of ``size`` entries holding ``values`` at ``positions`` and None elsewhere."""
    out: list = [None] * size
    for i, v in zip(positions, values):
        out[i] = v
    return out
