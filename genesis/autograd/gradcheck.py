"""Gradient checks (``torch.autograd.gradcheck``): ``gradcheck`` and ``gradgradcheck``.

``gradcheck`` compares, for every input that requires grad and every differentiable output, the numerical Jacobian
(central differences ``(f(x + eps) - f(x - eps)) / 2 eps``, one input element at a time, perturbed in place in the
input's dtype) with the analytical one (one backward pass per output element, with a one-hot ``grad_outputs``),
entry by entry as ``allclose``: ``|analytical - numerical| <= atol + rtol * |numerical|``. It also runs every backward
twice (the results must agree within ``nondet_tol``), checks that backward handles zero gradients of the outputs,
and with ``check_grad_dtypes`` that each gradient has its input's dtype and shape. ``gradgradcheck`` is ``gradcheck``
of the function's vector-Jacobian product, so second derivatives are checked the same way.

With ``check_forward_ad`` the Jacobian of forward-mode AD (:mod:`genesis.autograd.forward_ad`: one pass per input
element, with that element's one-hot tangent) is compared with the numerical one the same way; ``check_backward_ad``
switches the reverse-mode checks off or on.

Differences from torch: ``fast_mode=True`` runs the full check (torch's fast mode checks a random projection of
the same Jacobians, so its verdicts are a subset of these); batched gradients, complex inputs and gradgradcheck's
forward-over-reverse check are not supported and raise NotImplementedError when asked for.
"""

from __future__ import annotations

import math
import warnings
from typing import Any, Callable

from genesis import dtypes
from genesis.autograd import forward_ad
from genesis.autograd import function as _fn
from genesis.autograd.engine import grad
from genesis.autograd.grad_mode import no_grad


class GradcheckError(RuntimeError):
    """Raised by :func:`gradcheck` and :func:`gradgradcheck` when a check fails (torch's name)."""


def _as_tuple(x: Any) -> tuple:
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _differentiable_outputs(outputs: Any) -> tuple:
    return tuple(o for o in _as_tuple(outputs) if isinstance(o, _fn.Tensor) and o.requires_grad)


def _positions(shape: tuple) -> list[tuple[int, ...]]:
    """Every index of a tensor of ``shape``, in row-major order (the order of ``reshape(-1)``)."""
    result: list[tuple[int, ...]] = [()]
    for n in shape:
        result = [p + (i,) for p in result for i in range(n)]
    return result


def _flat_values(outputs: tuple) -> list[list[float]]:
    return [o.detach().reshape(-1).tolist() for o in outputs]


def _numerical_jacobians(func: Callable, inputs: tuple, diff_inputs: list[int], n_outputs: int,
                         eps: float) -> list[list[list[list[float]]]]:
    """``[input][output]`` -> rows (one per input element) of d output / d input element, by central differences."""
    jacobians = []
    for i in diff_inputs:
        x = inputs[i]
        # Shares the input's memory (so func sees the perturbation) but not its version counter: restoring each value
        # leaves the input as it was, and graphs that saved it stay valid (torch perturbs ``x.data`` the same way).
        data = _fn.Tensor._wrap(x.ndarray)
        rows: list[list[list[float]]] = [[] for _ in range(n_outputs)]
        for pos in _positions(tuple(x.shape)):
            with no_grad():
                original = data[pos].item()
                data[pos] = original - eps
            minus = _flat_values(_as_tuple(func(*inputs)))
            with no_grad():
                data[pos] = original + eps
            plus = _flat_values(_as_tuple(func(*inputs)))
            with no_grad():
                data[pos] = original
            for j in range(n_outputs):
                rows[j].append([(p - m) / (2 * eps) for p, m in zip(plus[j], minus[j])])
        jacobians.append(rows)
    return jacobians


def _analytical_jacobians(outputs: tuple, inputs: tuple, diff_inputs: list[int],
                          check_grad_dtypes: bool) -> list[list[list[list[float]]]]:
    """``[input][output]`` -> rows (one per input element) of the Jacobian, one backward pass per output element."""
    targets = [inputs[i] for i in diff_inputs]
    jacobians: list[list[list[list[float]]]] = [[[] for _ in outputs] for _ in diff_inputs]
    for j, out in enumerate(outputs):
        columns: list[list[list[float]]] = [[] for _ in diff_inputs]
        for k in range(out.numel()):
            one_hot = out.new_zeros(tuple(out.shape))
            one_hot.view(-1)[k] = 1.0
            grads = grad(out, targets, one_hot, retain_graph=True, allow_unused=True)
            for slot, (g, x) in enumerate(zip(grads, targets)):
                if g is None:
                    columns[slot].append([0.0] * x.numel())
                    continue
                if check_grad_dtypes and g.dtype != x.dtype:
                    raise GradcheckError("Gradient has dtype mismatch")
                if tuple(g.shape) != tuple(x.shape):
                    raise GradcheckError("Gradient has shape mismatch")
                columns[slot].append(g.detach().reshape(-1).tolist())
        for slot, cols in enumerate(columns):
            # cols holds one column per output element: transpose to one row per input element.
            n_in = targets[slot].numel()
            jacobians[slot][j] = [[col[r] for col in cols] for r in range(n_in)]
    return jacobians


def _forward_jacobians(func: Callable, inputs: tuple, diff_inputs: list[int],
                       out_positions: list[int]) -> list[list[list[list[float]]]]:
    """``[input][output]`` -> rows (one per input element) of the Jacobian by forward-mode AD: every input that
    requires grad made dual, with a one-hot tangent for the element of the row and zero tangents elsewhere."""
    jacobians = []
    for i in diff_inputs:
        rows: list[list[list[float]]] = [[] for _ in out_positions]
        for k in range(inputs[i].numel()):
            with forward_ad.dual_level():
                args = list(inputs)
                for slot in diff_inputs:
                    x = inputs[slot].detach()
                    tangent = x.new_zeros(tuple(x.shape))
                    if slot == i:
                        tangent.view(-1)[k] = 1.0
                    args[slot] = forward_ad.make_dual(x, tangent)
                outputs = _as_tuple(func(*args))
                for j, position in enumerate(out_positions):
                    out = outputs[position]
                    tangent = forward_ad.unpack_dual(out).tangent
                    rows[j].append(tangent.reshape(-1).tolist() if tangent is not None else [0.0] * out.numel())
        jacobians.append(rows)
    return jacobians


def _mismatch(analytical: list[list[list[list[float]]]], numerical: list[list[list[list[float]]]], outputs: tuple,
              inputs: tuple, diff_inputs: list[int], atol: float, rtol: float, mode: str) -> str | None:
    """The message for the first (input, output) whose Jacobians differ beyond ``atol + rtol * |numerical|``."""
    for slot in range(len(diff_inputs)):
        for j, out in enumerate(outputs):
            a_rows, n_rows = analytical[slot][j], numerical[slot][j]
            if any(abs(a - n) > atol + rtol * abs(n) or math.isnan(a) != math.isnan(n)
                   for a_row, n_row in zip(a_rows, n_rows) for a, n in zip(a_row, n_row)):
                like = inputs[diff_inputs[slot]]
                return (f"Jacobian {mode}mismatch for output {j:d} with respect to input {slot:d},\n"
                        f"numerical:{_as_matrix(like, n_rows, out.numel())}\n"
                        f"analytical:{_as_matrix(like, a_rows, out.numel())}\n")
    return None


def _as_matrix(like: Any, rows: list[list[float]], n_out: int) -> Any:
    """The Jacobian as a (n_in, n_out) tensor, for the error message."""
    return like.new_tensor(rows if rows else [[]]).reshape(len(rows), n_out)


def _fail(message: str, raise_exception: bool) -> bool:
    if raise_exception:
        raise GradcheckError(message)
    return False


def gradcheck(func: Callable, inputs: Any, *, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
              raise_exception: bool = True, nondet_tol: float = 0.0, check_undefined_grad: bool = True,
              check_grad_dtypes: bool = False, check_batched_grad: bool = False,
              check_batched_forward_grad: bool = False, check_forward_ad: bool = False,
              check_backward_ad: bool = True, fast_mode: bool = False, masked: bool | None = None) -> bool:
    """Check the gradients of ``func`` at ``inputs`` against finite differences (``torch.autograd.gradcheck``).

    Args:
        func: takes ``*inputs`` and returns a Tensor or a tuple of Tensors.
        inputs: a Tensor or a tuple of arguments; Tensors with ``requires_grad`` are checked (best in float64).
        eps: the finite-difference step. atol, rtol: the ``allclose`` tolerances between the Jacobians.
        raise_exception: raise :class:`GradcheckError` on failure (else return False).
        nondet_tol: how far two backward passes on the same values may differ.
        check_undefined_grad: check that backward handles zero output gradients (gives zero or no input gradient).
        check_grad_dtypes: check that each gradient has its input's dtype.
        check_forward_ad: also check the Jacobian of forward-mode AD (dual tensors) against the numerical one.
        check_backward_ad: check the Jacobian of reverse-mode AD (backward); False checks forward mode only.

    Returns:
        True when every check passes.
    """
    if check_batched_grad or check_batched_forward_grad:
        raise NotImplementedError("gradcheck: batched gradients are not supported by Genesis "
                                  "(check_batched_grad and check_batched_forward_grad must be False)")
    if masked:
        raise NotImplementedError("gradcheck: masked (sparse) gradients are not supported by Genesis")
    inputs = _as_tuple(inputs)
    diff_inputs = [i for i, x in enumerate(inputs) if isinstance(x, _fn.Tensor) and x.requires_grad]
    if not diff_inputs:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but none of the them "
                         "have requires_grad=True.")
    for n, i in enumerate(diff_inputs):
        x = inputs[i]
        if x.is_complex():
            raise NotImplementedError("gradcheck: complex inputs are not supported by Genesis")
        if x.dtype is not dtypes.float64:
            warnings.warn(f"Input #{n} requires gradient and is not a double precision floating point or complex. "
                          "This check will likely fail if all the inputs are not of double precision floating point "
                          "or complex. ", stacklevel=2)
    returned = _as_tuple(func(*inputs))
    outputs = _differentiable_outputs(returned)
    if not outputs:
        # No output requires grad: the function must then not depend on its inputs.
        every = [o for o in _as_tuple(func(*inputs)) if isinstance(o, _fn.Tensor) and o.is_floating_point()]
        numerical = _numerical_jacobians(func, inputs, diff_inputs, len(every), eps)
        if any(abs(v) > nondet_tol for per_in in numerical for per_out in per_in for row in per_out for v in row):
            return _fail("Numerical gradient for function expected to be zero", raise_exception)
        return True
    numerical = _numerical_jacobians(func, inputs, diff_inputs, len(outputs), eps)
    if check_forward_ad:
        positions = [p for p, o in enumerate(returned) if isinstance(o, _fn.Tensor) and o.requires_grad]
        forward = _forward_jacobians(func, inputs, diff_inputs, positions)
        message = _mismatch(forward, numerical, outputs, inputs, diff_inputs, atol, rtol, "computed with forward mode ")
        if message is not None:
            return _fail(message, raise_exception)
    if not check_backward_ad:
        return True
    analytical = _analytical_jacobians(outputs, inputs, diff_inputs, check_grad_dtypes)
    message = _mismatch(analytical, numerical, outputs, inputs, diff_inputs, atol, rtol, "")
    if message is not None:
        return _fail(message, raise_exception)
    repeated = _analytical_jacobians(outputs, inputs, diff_inputs, check_grad_dtypes)
    if any(abs(a - b) > nondet_tol for first, second in zip(analytical, repeated) for f_out, s_out in zip(first, second)
           for f_row, s_row in zip(f_out, s_out) for a, b in zip(f_row, s_row)):
        return _fail("Backward is not reentrant, i.e., running backward with same input and grad_output multiple "
                     "times gives different values, although analytical gradient matches numerical gradient."
                     f"The tolerance for nondeterminism was {nondet_tol}.", raise_exception)
    if check_undefined_grad and not _zero_grads_ok(outputs, inputs, diff_inputs):
        return _fail('Expected backward function to handle undefined output grads. Please look at "Notes about '
                     'undefined output gradients" in "tools/autograd/derivatives.yaml"', raise_exception)
    return True


def _zero_grads_ok(outputs: tuple, inputs: tuple, diff_inputs: list[int]) -> bool:
    """Whether backward, given zero gradients for every output, runs and gives zero (or no) input gradients."""
    zeros = [o.new_zeros(tuple(o.shape)) for o in outputs]
    try:
        grads = grad(list(outputs), [inputs[i] for i in diff_inputs], zeros, retain_graph=True, allow_unused=True)
    except RuntimeError:
        return False
    return all(g is None or not any(v != 0 for v in g.detach().reshape(-1).tolist()) for g in grads)


def gradgradcheck(func: Callable, inputs: Any, grad_outputs: Any = None, *, eps: float = 1e-6, atol: float = 1e-5,
                  rtol: float = 1e-3, gen_non_contig_grad_outputs: bool = False, raise_exception: bool = True,
                  nondet_tol: float = 0.0, check_undefined_grad: bool = True, check_grad_dtypes: bool = False,
                  check_batched_grad: bool = False, check_fwd_over_rev: bool = False, check_rev_over_rev: bool = True,
                  fast_mode: bool = False, masked: bool = False) -> bool:
    """Check the second derivatives of ``func`` (``torch.autograd.gradgradcheck``): :func:`gradcheck` of its
    vector-Jacobian product in the inputs and in ``grad_outputs`` (random in [-1, 1) when not given).

    ``check_fwd_over_rev`` raises NotImplementedError: Genesis's forward AD does not reach into a backward pass
    (the tensors a node saved for backward carry no tangents)."""
    if check_fwd_over_rev:
        raise NotImplementedError("gradgradcheck: forward-over-reverse AD is not supported by Genesis "
                                  "(check_fwd_over_rev must be False)")
    inputs = _as_tuple(inputs)
    if grad_outputs is None:
        outputs = _differentiable_outputs(func(*inputs))
        grad_outputs = tuple(_random_like(o, gen_non_contig_grad_outputs) for o in outputs)
    else:
        grad_outputs = _as_tuple(grad_outputs)
    n_outputs = len(grad_outputs)
    diff_inputs = {i for i, x in enumerate(inputs) if isinstance(x, _fn.Tensor) and x.requires_grad}
    diff_grad_outputs = {i for i, g in enumerate(grad_outputs) if g.requires_grad}

    def vjp(*args: Any) -> tuple:
        xs = tuple(x.requires_grad_() if i in diff_inputs else x for i, x in enumerate(args[:-n_outputs]))
        outs = _differentiable_outputs(func(*xs))
        gs = tuple(g.requires_grad_() if i in diff_grad_outputs else g for i, g in enumerate(args[-n_outputs:]))
        found = grad(outs, [x for i, x in enumerate(xs) if i in diff_inputs], gs, create_graph=True,
                     allow_unused=True)
        return tuple(g for g in found if g is not None)

    if not check_rev_over_rev:
        return True
    return gradcheck(vjp, inputs + grad_outputs, eps=eps, atol=atol, rtol=rtol, raise_exception=raise_exception,
                     nondet_tol=nondet_tol, check_undefined_grad=check_undefined_grad,
                     check_grad_dtypes=check_grad_dtypes, check_batched_grad=check_batched_grad,
                     fast_mode=fast_mode, masked=masked)


def _random_like(t: Any, non_contiguous: bool) -> Any:
    """A tensor of ``t``'s shape, dtype and device, uniform in [-1, 1), requiring grad (optionally non-contiguous)."""
    dtype = t.dtype if t.is_floating_point() or t.is_complex() else dtypes.float64
    shape = tuple(t.shape)
    if non_contiguous and shape:
        # Every other element of a tensor twice as long in the last dimension.
        wide = t.new_empty(shape[:-1] + (2 * shape[-1],), dtype=dtype).uniform_(-1, 1)
        return wide[..., ::2].detach().requires_grad_()
    return t.new_empty(shape, dtype=dtype).uniform_(-1, 1).requires_grad_()
