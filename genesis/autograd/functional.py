"""Higher-order derivatives of functions (``torch.autograd.functional``): ``jacobian``, ``hessian``, ``vjp``,
``jvp``, ``hvp`` and ``vhp``.

Each is built on :func:`genesis.autograd.grad`: a Jacobian is one backward pass per output element (torch's
``vectorize=True`` runs them batched; here they run one after another, with the same results), a Jacobian-vector
product is the double-backward trick (the vector-Jacobian product of a dummy vector, differentiated in that vector),
and a Hessian is the Jacobian of the gradient. As torch's, inputs and outputs may be a tensor or a tuple of tensors,
and the results take the matching structure; without ``create_graph`` the results are detached.
"""

from __future__ import annotations

from typing import Any, Callable

from genesis.autograd import function as _fn
from genesis.autograd.engine import grad
from genesis.autograd.grad_mode import enable_grad


def _as_tuple(name: str, value: Any) -> tuple[bool, tuple]:
    """(whether ``value`` was a tuple, ``value`` as a tuple of tensors)."""
    is_tuple = isinstance(value, (tuple, list))
    items = tuple(value) if is_tuple else (value,)
    for i, t in enumerate(items):
        if not isinstance(t, _fn.Tensor):
            raise TypeError(f"The {name} given to {'' if is_tuple else 'the function '}must be either a Tensor or a "
                            f"tuple of Tensors but the value at index {i} has type {type(t).__name__}.")
    return is_tuple, items


def _prepared(inputs: tuple, create_graph: bool) -> tuple:
    """Inputs that require grad: fresh leaves, or (``create_graph``) views that keep the caller's graph."""
    return tuple(t.view_as(t) if create_graph and t.requires_grad else t.detach().requires_grad_(True) for t in inputs)


def _finish(values: Any, create_graph: bool) -> Any:
    if isinstance(values, tuple):
        return tuple(_finish(v, create_graph) for v in values)
    return values if values is None or create_graph else values.detach()


def _grads(outputs: tuple, inputs: tuple, grad_outputs: tuple, create_graph: bool, strict: bool,
           what: str) -> tuple:
    """The gradients of ``outputs`` (weighted by ``grad_outputs``) in every input; zeros where one does not depend
    on an output (an error with ``strict``)."""
    needed = [(o, g) for o, g in zip(outputs, grad_outputs) if o.requires_grad]
    if needed:
        found = grad([o for o, _ in needed], inputs, [g for _, g in needed], retain_graph=True,
                     create_graph=create_graph, allow_unused=True)
    else:
        found = (None,) * len(inputs)
    result = []
    for i, (g, x) in enumerate(zip(found, inputs)):
        if g is None:
            if strict:
                raise RuntimeError(f"The output of the user-provided function is independent of input {i}. This is "
                                   f"not allowed in strict mode{what}.")
            g = x.new_zeros(tuple(x.shape))
        result.append(g)
    return tuple(result)


def _vectors(name: str, v: Any, like: tuple) -> tuple:
    if v is None:
        if any(t.numel() != 1 for t in like):
            raise RuntimeError(f"The vector v can only be None if the {name} is a single element Tensor.")
        return tuple(t.new_ones(tuple(t.shape)) for t in like)
    _, vs = _as_tuple("v", v)
    if len(vs) != len(like) or any(tuple(a.shape) != tuple(b.shape) for a, b in zip(vs, like)):
        raise RuntimeError(f"The given v should have the shapes of the {name}: got {[list(a.shape) for a in vs]}, "
                           f"expected {[list(b.shape) for b in like]}.")
    return vs


def vjp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple[Any, Any]:
    """``(func(*inputs), v^T J)``: the vector-Jacobian product of ``func`` at ``inputs``."""
    in_tuple, xs = _as_tuple("inputs", inputs)
    with enable_grad():
        xs = _prepared(xs, create_graph)
        out = func(*xs)
        out_tuple, outs = _as_tuple("outputs of the user-provided function", out)
        result = _grads(outs, xs, _vectors("outputs of the user-provided function", v, outs), create_graph, strict,
                        "")
    outs = _finish(outs, create_graph)
    return (outs if out_tuple else outs[0]), (_finish(result, create_graph) if in_tuple else
                                               _finish(result[0], create_graph))


def jvp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple[Any, Any]:
    """``(func(*inputs), J v)``: the Jacobian-vector product, by differentiating a vector-Jacobian product in its
    vector (the double-backward trick)."""
    in_tuple, xs = _as_tuple("inputs", inputs)
    vs = _vectors("inputs", v, xs)
    with enable_grad():
        xs = _prepared(xs, create_graph)
        out = func(*xs)
        out_tuple, outs = _as_tuple("outputs of the user-provided function", out)
        dummies = tuple(o.new_zeros(tuple(o.shape)).requires_grad_(True) for o in outs)
        back = _grads(outs, xs, dummies, True, strict, "")
        result = _grads(back, dummies, vs, create_graph, strict, "")
    outs = _finish(outs, create_graph)
    result = _finish(result, create_graph)
    return (outs if out_tuple else outs[0]), (result if out_tuple else result[0])


def jacobian(func: Callable, inputs: Any, create_graph: bool = False, strict: bool = False, vectorize: bool = False,
             strategy: str = "reverse-mode") -> Any:
    """The Jacobian of ``func`` at ``inputs``: for output ``i`` and input ``j`` a tensor of shape
    ``outputs[i].shape + inputs[j].shape`` (a tensor, a tuple per input or per output, or a tuple of tuples, as the
    structures of ``inputs`` and the outputs). ``strategy`` "forward-mode" gives the same values."""
    if strategy not in ("reverse-mode", "forward-mode"):
        raise ValueError('Expected strategy to be either "forward-mode" or "reverse-mode".')
    in_tuple, xs = _as_tuple("inputs", inputs)
    with enable_grad():
        xs = _prepared(xs, create_graph)
        out = func(*xs)
        out_tuple, outs = _as_tuple("outputs of the user-provided function", out)
        blocks = []
        for o in outs:
            flat = o.reshape(-1)
            rows = [_grads((flat[k],), xs, (flat[k].new_ones(()),), create_graph, strict,
                           " (the Jacobian)") for k in range(flat.shape[0])]
            per_input = []
            for j, x in enumerate(xs):
                block = x.new_zeros((flat.shape[0],) + tuple(x.shape))
                for k, row in enumerate(rows):
                    block[k] = row[j]
                per_input.append(_finish(block.reshape(tuple(o.shape) + tuple(x.shape)), create_graph))
            blocks.append(tuple(per_input) if in_tuple else per_input[0])
    return tuple(blocks) if out_tuple else blocks[0]


def hessian(func: Callable, inputs: Any, create_graph: bool = False, strict: bool = False, vectorize: bool = False,
            outer_jacobian_strategy: str = "reverse-mode") -> Any:
    """The Hessian of the scalar function ``func`` at ``inputs``: the Jacobian of its gradient (``inputs[i].shape +
    inputs[j].shape`` blocks, nested tuples for tuple inputs)."""
    in_tuple, xs = _as_tuple("inputs", inputs)

    def gradient(*args: Any) -> Any:
        out = func(*args)
        _, outs = _as_tuple("outputs of the user-provided function", out)
        if len(outs) != 1 or outs[0].numel() != 1:
            raise RuntimeError("The function given to hessian should return a single Tensor with a single element")
        g = _grads(outs, args, (outs[0].new_ones(tuple(outs[0].shape)),), True, strict, " (the Hessian)")
        return g if in_tuple else g[0]

    return jacobian(gradient, inputs if in_tuple else xs[0], create_graph, strict, vectorize,
                    outer_jacobian_strategy)


def vhp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple[Any, Any]:
    """``(func(*inputs), v^T H)``: the vector-Hessian product of the scalar function ``func``."""
    in_tuple, xs = _as_tuple("inputs", inputs)
    vs = _vectors("inputs", v, xs)
    with enable_grad():
        xs = _prepared(xs, create_graph)
        out = func(*xs)
        _, outs = _as_tuple("outputs of the user-provided function", out)
        if len(outs) != 1 or outs[0].numel() != 1:
            raise RuntimeError("The function given to vhp should return a single Tensor with a single element")
        g = _grads(outs, xs, (outs[0].new_ones(tuple(outs[0].shape)),), True, strict, "")
        result = _grads(g, xs, vs, create_graph, strict, "")
    result = _finish(result, create_graph)
    return _finish(outs[0], create_graph), (result if in_tuple else result[0])


def hvp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple[Any, Any]:
    """``(func(*inputs), H v)``: the Hessian-vector product of the scalar function ``func`` (equal to ``vhp`` for
    the symmetric Hessians of twice-differentiable functions)."""
    return vhp(func, inputs, v, create_graph, strict)


__all__ = ["hessian", "hvp", "jacobian", "jvp", "vhp", "vjp"]
