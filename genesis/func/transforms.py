"""Derivatives as function transforms (``torch.func``): ``grad``, ``grad_and_value``, ``vjp``, ``jvp``,
``linearize``, ``jacrev``, ``jacfwd`` and ``hessian``.

Each takes a function and gives a function (``grad(loss)(params, x, y)``), with torch.func's pytrees: the arguments
differentiated and the outputs may be tensors or nested tuples, lists and dicts of tensors, and the results take the
matching structure. Genesis has one autograd tape instead of functorch's levels, and the transforms are built on it:
``grad``, ``grad_and_value`` and ``vjp`` on :func:`genesis.autograd.grad`; ``jvp``, ``jacrev``, ``jacfwd`` (and
``hessian``, ``jacfwd(jacrev(f))`` as in torch) on :mod:`genesis.autograd.functional`, through a flat view of the
function. A Jacobian is one backward pass per output element, a Jacobian-vector product the double-backward trick
(``linearize`` records the first backward once and runs only the second per call of its ``jvp_fn``).

What makes them behave as torch.func's transforms:

- the arguments differentiated enter as fresh leaves (or, if they already require grad, as views that keep their
  history), and the function runs with grad enabled whatever the mode outside, as torch's transforms do;
- a result stays attached to the graph only where grad mode was on at the call and the function's outputs reach a
  tensor from outside the transform (an argument that required grad, a captured parameter): then ``create_graph``
  is used, so ``grad(grad(f))``, MAML's fast weights and gradient penalties differentiate further, and
  ``grad(f)(x).sum().backward()`` reaches the parameters ``f`` captured. Otherwise results come back detached and
  ``grad`` runs a plain backward pass, without recording the graph of the backward;
- the leaves a transform makes are its own: a transform running inside another (``grad(grad(f))``) sees the outer
  one's leaves as outside tensors and differentiates through them; the outer one, once the inner is done, sees the
  inner one's leaves as its own (the per-thread stack of ``_levels``).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Callable, Union

from genesis.autograd import functional as autograd_functional
from genesis.autograd.engine import grad as autograd_grad
from genesis.autograd.function import AccumulateGrad
from genesis.autograd.functional import _grads
from genesis.autograd.grad_mode import enable_grad, is_grad_enabled
from genesis.func.pytree import TreeSpec, tree_flatten, tree_map, tree_unflatten
from genesis.tensor import Tensor

ArgNums = Union[int, tuple[int, ...]]

_levels = threading.local()


@contextmanager
def _transform_level() -> Iterator[list[Tensor]]:
    """The list of leaves one transform call makes. On exit they join the enclosing call's list: nothing outside can
    reach them, so for the enclosing transform they are as much its own."""
    stack = _levels.__dict__.setdefault("stack", [])
    own: list[Tensor] = []
    stack.append(own)
    try:
        yield own
    finally:
        stack.pop()
        if stack:
            stack[-1].extend(own)


def _reaches_outside(tensors: list, own: list[Tensor]) -> bool:
    """Whether the graph of ``tensors`` reaches a leaf that requires grad and is not one of ``own``."""
    own_ids = {id(t) for t in own}
    nodes = []
    for t in tensors:
        if isinstance(t, Tensor) and t.requires_grad:
            if t.grad_fn is None:
                if id(t) not in own_ids:
                    return True
            else:
                nodes.append(t.grad_fn)
    seen = set()
    while nodes:
        node = nodes.pop()
        if node in seen:
            continue
        seen.add(node)
        if isinstance(node, AccumulateGrad):
            if id(node.variable) not in own_ids:
                return True
            continue
        nodes.extend(nxt for nxt, _ in node._edges if nxt is not None)
    return False


def _lift(tree: Any, own: list[Tensor], attach: bool) -> Any:
    """``tree`` with every tensor detached unless ``attach`` and its graph reaches outside the transform."""
    def lift(t: Any) -> Any:
        if isinstance(t, Tensor) and t.requires_grad and not (attach and _reaches_outside([t], own)):
            return t.detach()
        return t

    return tree_map(lift, tree)


def _detached(tree: Any) -> Any:
    return tree_map(lambda t: t.detach() if isinstance(t, Tensor) and t.requires_grad else t, tree)


def _differentiable(x: Any, own: list[Tensor]) -> Tensor:
    """``x`` as a tensor to differentiate in: a view keeping its history if it requires grad, else a fresh leaf."""
    if not isinstance(x, Tensor):
        raise ValueError(f"Thing passed to transform API must be Tensor, got {type(x)}")
    if x.requires_grad:
        return x.view_as(x)
    leaf = x.detach().requires_grad_(True)
    own.append(leaf)
    return leaf


def _normalize_argnums(argnums: ArgNums, num_args: int) -> ArgNums:
    """``argnums`` checked against ``num_args`` positional arguments, negative ones wrapped."""
    def one(n: Any) -> int:
        if not isinstance(n, int) or isinstance(n, bool):
            raise RuntimeError(f"argnum must be int, got: {type(n)}")
        if not -num_args <= n < num_args:
            raise RuntimeError(f"Got argnum={n}, but only {num_args} positional inputs")
        return n % num_args

    if isinstance(argnums, tuple):
        if not argnums:
            raise RuntimeError("argnums must be non-empty")
        if len(set(argnums)) != len(argnums):
            raise RuntimeError(f"argnums elements must be unique, got {argnums}")
        return tuple(one(n) for n in argnums)
    if isinstance(argnums, int) and not isinstance(argnums, bool):
        return one(argnums)
    raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")


def _diff_args(args: tuple, argnums: ArgNums) -> Any:
    return args[argnums] if isinstance(argnums, int) else tuple(args[i] for i in argnums)


def _replace_args(args: tuple, new: Any, argnums: ArgNums) -> tuple:
    if isinstance(argnums, int):
        return tuple(new if i == argnums else a for i, a in enumerate(args))
    return tuple(new[argnums.index(i)] if i in argnums else a for i, a in enumerate(args))


def _split_aux(output: Any, has_aux: bool, api: str) -> tuple[Any, Any]:
    if not has_aux:
        return output, None
    if not (isinstance(output, tuple) and len(output) == 2):
        raise RuntimeError(f"{api}: output of function f should be a tuple: (output, aux) if has_aux is True")
    return output


def _check_outputs(flat: list, api: str) -> None:
    if not flat or (len(flat) == 1 and flat[0] is None):
        raise RuntimeError(f"{api}: Expected f to be a function that has non-empty output (got output = {flat})")
    for o in flat:
        if not isinstance(o, Tensor):
            raise RuntimeError(f"{api}: expected f(*primals) to return only tensors, got unsupported type {type(o)}")
        if not (o.dtype.is_floating_point or o.dtype.is_complex):
            raise RuntimeError(f"{api}: All outputs of f must be floating-point or complex Tensors, got Tensor with "
                               f"dtype {o.dtype}")


def _check_real(flat: list, api: str, what: str) -> None:
    for i, t in enumerate(flat):
        if isinstance(t, Tensor) and t.dtype.is_complex:
            raise RuntimeError(f"{api}: Expected all {what} to be real but received complex tensor at flattened "
                               f"input idx: {i}")


# ------------------------------------------------------------------------ reverse mode on the engine


def grad_and_value(func: Callable, argnums: ArgNums = 0, has_aux: bool = False) -> Callable:
    """``func`` transformed to return ``(gradient, value)``: the gradient of its scalar output with respect to the
    arguments at ``argnums``, and the output itself.

    Args:
        func: a function whose output is a 0-dim tensor (with ``has_aux``: a tuple ``(output, aux)``).
        argnums: the positional argument differentiated (each a tensor or a pytree of tensors), or a tuple of them.
        has_aux: ``func`` returns ``(output, aux)``; ``aux`` comes back as it is, undifferentiated.

    Returns:
        A function returning ``(grad, value)`` (``(grad, (value, aux))`` with ``has_aux``): ``grad`` has the
        structure of the argument at ``argnums`` (a tuple of them for a tuple), zeros where the output does not
        depend on an input.
    """
    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> tuple[Any, Any]:
        attach = is_grad_enabled()
        with _transform_level() as own, enable_grad():
            nums = _normalize_argnums(argnums, len(args))
            diff = tree_map(lambda x: _differentiable(x, own), _diff_args(args, nums))
            output = func(*_replace_args(args, diff, nums), **kwargs)
            output, aux = _split_aux(output, has_aux, "grad_and_value(f)(*args)")
            if not isinstance(output, Tensor):
                raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a Tensor, got "
                                   f"{type(output)}")
            if output.dim() != 0:
                raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, got "
                                   f"tensor with {output.dim()} dims. Maybe you wanted to use the vjp or jacrev APIs "
                                   "instead?")
            flat, spec = tree_flatten(diff)
            create_graph = attach and _reaches_outside([output], own)
            grads = _grads((output,), tuple(flat), (output.new_ones(()),), create_graph, False, "")
            result = _lift(tree_unflatten(list(grads), spec), own, create_graph)
            value = output if create_graph else output.detach()
            if has_aux:
                return result, (value, _lift(aux, own, attach))
            return result, value

    return wrapper


def grad(func: Callable, argnums: ArgNums = 0, has_aux: bool = False) -> Callable:
    """``func`` transformed to return the gradient of its scalar output with respect to the arguments at
    ``argnums`` (torch.func's ``grad``). Transforms compose: ``grad(grad(f))`` is the second derivative and
    ``vmap(grad(loss), in_dims=(None, 0, 0))`` gives per-sample gradients.

    Args:
        func: a function whose output is a 0-dim tensor (with ``has_aux``: a tuple ``(output, aux)``).
        argnums: the positional argument differentiated (each a tensor or a pytree of tensors), or a tuple of them.
        has_aux: ``func`` returns ``(output, aux)``; the transformed function then returns ``(grad, aux)``.

    Returns:
        A function returning the gradient, with the structure of the argument at ``argnums`` (a tuple of them for a
        tuple ``argnums``).
    """
    transformed = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        gradient, value = transformed(*args, **kwargs)
        return (gradient, value[1]) if has_aux else gradient

    return wrapper


def vjp(func: Callable, *primals: Any, has_aux: bool = False) -> tuple:
    """``(func(*primals), vjp_fn)``: the output and a function that maps cotangents (a pytree shaped as the output)
    to the vector-Jacobian products, one per primal, as a tuple shaped as ``primals``.

    ``vjp_fn(cotangents, retain_graph=True, create_graph=None)`` may be called many times; the graph is always kept
    (``retain_graph=False`` is accepted and changes nothing). ``create_graph`` None records the graph of the
    products where grad mode is on and the output or a cotangent reaches tensors from outside the transform.

    Args:
        func: a function of tensors or pytrees of tensors returning a tensor or a pytree of floating-point tensors.
        primals: the arguments, each differentiated.
        has_aux: ``func`` returns ``(output, aux)``; the result is then ``(output, vjp_fn, aux)``.
    """
    attach = is_grad_enabled()
    with _transform_level() as own, enable_grad():
        diff = tree_map(lambda x: _differentiable(x, own), primals)
        output = func(*diff)
        output, aux = _split_aux(output, has_aux, "vjp(f, *primals)")
        flat_out, out_spec = tree_flatten(output)
        _check_outputs(flat_out, "vjp(f, *primals)")
        flat_in, in_spec = tree_flatten(diff)
        outside = _reaches_outside(flat_out, own)
        value = _lift(output, own, attach)
        aux = _lift(aux, own, attach)

    def vjp_fn(cotangents: Any, retain_graph: bool = True, create_graph: bool | None = None) -> tuple:
        flat_ct, ct_spec = tree_flatten(cotangents)
        if ct_spec != out_spec:
            raise RuntimeError(f"Expected pytree structure of cotangents to be the same as pytree structure of outputs "
                               f"to the function. cotangents: {ct_spec}, primal output: {out_spec}")
        if create_graph is None:
            create_graph = is_grad_enabled() and (outside or any(isinstance(c, Tensor) and c.requires_grad
                                                                 for c in flat_ct))
        with enable_grad():
            grads = _grads(tuple(flat_out), tuple(flat_in), tuple(flat_ct), create_graph, False, "")
        return tree_unflatten(list(grads), in_spec)

    return (value, vjp_fn, aux) if has_aux else (value, vjp_fn)


# ------------------------------------------------------------------------ on genesis.autograd.functional


class _FlatCall:
    """``func`` as a function of a flat tuple of tensors, for :mod:`genesis.autograd.functional`: rebuilds the
    arguments from the tensors it is given, calls ``func`` and returns its outputs flattened. It records the
    output structure, the aux value, and whether the outputs reach tensors from outside the transform."""

    def __init__(self, func: Callable, args: tuple, argnums: ArgNums | None, spec: TreeSpec, has_aux: bool,
                 own: list[Tensor], api: str, strict: bool = False, real: bool = False) -> None:
        self.func, self.args, self.argnums, self.spec = func, args, argnums, spec
        self.has_aux, self.own, self.api, self.strict, self.real = has_aux, own, api, strict, real
        self.out_spec: TreeSpec | None = None
        self.aux: Any = None
        self.outside = False

    def __call__(self, *flat: Tensor) -> tuple:
        # The functional module hands fresh leaves (or, under create_graph, views of inputs that require grad).
        self.own.extend(x for x in flat if x.grad_fn is None)
        diff = tree_unflatten(list(flat), self.spec)
        args = diff if self.argnums is None else _replace_args(self.args, diff, self.argnums)
        output, self.aux = _split_aux(self.func(*args), self.has_aux, self.api)
        flat_out, self.out_spec = tree_flatten(output)
        _check_outputs(flat_out, self.api)
        if self.real:
            _check_real(flat_out, self.api, "outputs")
        if self.strict and not all(o.requires_grad for o in flat_out):
            raise RuntimeError(f"{self.api}, strict=True: The output of f is independent of the inputs. This is not "
                               "allowed with strict=True.")
        self.outside = _reaches_outside(flat_out, self.own)
        return tuple(flat_out)

    def finish(self, result: Any, attach: bool) -> Any:
        """A result of the functional module, detached unless it should stay in the caller's graph."""
        return result if attach and self.outside else _detached(result)


def _check_inputs(flat: list, api: str, what: str) -> None:
    if not flat:
        raise RuntimeError(f"{api}: Expected {what} to contain at least one Tensor.")
    for t in flat:
        if not isinstance(t, Tensor):
            raise RuntimeError(f"{api}: Expected {what} to only contain Tensors, got {type(t)}")


def jvp(func: Callable, primals: tuple, tangents: Any, *, strict: bool = False, has_aux: bool = False) -> tuple:
    """``(func(*primals), J @ tangents)``: the output and the Jacobian-vector product (forward-mode in torch; here
    the double-backward trick of :func:`genesis.autograd.functional.jvp`, with the same values).

    Args:
        func: a function of tensors or pytrees of tensors returning a tensor or a pytree of tensors.
        primals: the arguments, a tuple.
        tangents: the vector, shaped as ``primals``.
        strict: raise if an output depends on no tensor that requires grad (torch: on none of the primals).
        has_aux: ``func`` returns ``(output, aux)``; the result is then ``(output, jvp_out, aux)``.
    """
    api = "jvp(f, primals, tangents)"
    if not isinstance(primals, tuple):
        raise RuntimeError(f"{api}: Expected primals to be a tuple. E.g. it should be valid to call f(*primals).")
    flat_p, p_spec = tree_flatten(primals)
    flat_t, t_spec = tree_flatten(tangents)
    if p_spec != t_spec:
        raise RuntimeError(f"{api}: Expected primals and tangents to have the same python structure. For example, if "
                           f"primals is a tuple of 3 tensors, tangents also must be. Got primals with structure "
                           f"{p_spec} and tangents with structure {t_spec}")
    _check_inputs(flat_p, api, "primals")
    _check_inputs(flat_t, api, "tangents")
    attach = is_grad_enabled()
    with _transform_level() as own:
        call = _FlatCall(func, primals, None, p_spec, has_aux, own, api, strict)
        out, tangent_out = autograd_functional.jvp(call, tuple(flat_p), tuple(flat_t), create_graph=attach)
        out = tree_unflatten(list(call.finish(out, attach)), call.out_spec)
        tangent_out = tree_unflatten(list(call.finish(tangent_out, attach)), call.out_spec)
        if has_aux:
            return out, tangent_out, _lift(call.aux, own, attach)
        return out, tangent_out


def linearize(func: Callable, *primals: Any) -> tuple[Any, Callable]:
    """``(func(*primals), jvp_fn)``: the output and its linear approximation at ``primals`` (torch.func's
    ``linearize``): ``jvp_fn(*tangents)`` is the Jacobian-vector product ``J @ tangents``, shaped as the output.

    The backward of ``func`` applied to dummy cotangents ``u`` is recorded once (the double-backward trick); each
    ``jvp_fn`` call is one backward pass of that graph in ``u``, so the graph (and the memory it holds) lives as long
    as ``jvp_fn``.

    Args:
        func: a function of tensors (or pytrees of tensors) returning a tensor or a pytree of floating-point tensors.
        primals: the point, each argument differentiated.

    Returns:
        The output (attached to the caller's graph where it reaches tensors that require grad, as ``func(*primals)``)
        and ``jvp_fn``, which takes tangents with the structure, shapes, dtypes and devices of ``primals``.
    """
    api = "linearize"
    attach = is_grad_enabled()
    flat_p, p_spec = tree_flatten(primals)
    _check_inputs(flat_p, api, "primals")
    with _transform_level() as own, enable_grad():
        diff = [_differentiable(x, own) for x in flat_p]
        output = func(*tree_unflatten(diff, p_spec))
        flat_out, out_spec = tree_flatten(output)
        _check_outputs(flat_out, api)
        dummies = tuple(o.new_zeros(tuple(o.shape)).requires_grad_(True) for o in flat_out)
        needed = [(o, u) for o, u in zip(flat_out, dummies) if o.requires_grad]
        back = autograd_grad([o for o, _ in needed], diff, [u for _, u in needed], retain_graph=True, create_graph=True,
                    allow_unused=True) if needed else (None,) * len(diff)
        # The parts of the backward that depend on the dummies: the products are their derivatives in them.
        linear = [(i, g) for i, g in enumerate(back) if g is not None and g.requires_grad]
        value = _lift(output, own, attach)
    metadata = [(tuple(p.shape), p.device, p.dtype) for p in flat_p]

    def jvp_fn(*tangents: Any) -> Any:
        flat_t, t_spec = tree_flatten(tangents)
        if t_spec != p_spec:
            raise RuntimeError(f"Expected the tangents {t_spec} to have the same argspec as the primals {p_spec}")
        for idx, (t, (shape, dev, dtype)) in enumerate(zip(flat_t, metadata)):
            for what, got, want in (("shape", tuple(t.shape), shape), ("device", t.device, dev),
                                    ("dtype", t.dtype, dtype)):
                if got != want:
                    raise RuntimeError(f"tangent:{idx} with {what} {got} in flattened pytree doesn't match the {what} "
                                       f"{want} of the corresponding primal.")
        create_graph = is_grad_enabled() and any(t.requires_grad for t in flat_t)
        found = (None,) * len(dummies)
        if linear:
            with enable_grad():
                found = autograd_grad([g for _, g in linear], dummies, [flat_t[i] for i, _ in linear],
                                      retain_graph=True, create_graph=create_graph, allow_unused=True)
        result = [f if f is not None else o.new_zeros(tuple(o.shape)).detach() for f, o in zip(found, flat_out)]
        return tree_unflatten(result, out_spec)

    return value, jvp_fn


def _jacobian(api: str, func: Callable, argnums: ArgNums, has_aux: bool, args: tuple, strategy: str) -> Any:
    """jacrev / jacfwd: one Jacobian block per (output leaf, input leaf), nested as torch.func nests them: the
    output's structure outside, the structure of the arguments at ``argnums`` inside."""
    nums = _normalize_argnums(argnums, len(args))
    flat_in, in_spec = tree_flatten(_diff_args(args, nums))
    for x in flat_in:
        if not isinstance(x, Tensor):
            raise ValueError(f"Thing passed to transform API must be Tensor, got {type(x)}")
    _check_real(flat_in, api, "inputs")
    attach = is_grad_enabled()
    with _transform_level() as own:
        call = _FlatCall(func, args, nums, in_spec, has_aux, own, api, real=True)
        blocks = autograd_functional.jacobian(call, tuple(flat_in), create_graph=attach, strategy=strategy)
        per_output = [tree_unflatten(list(call.finish(row, attach)), in_spec) for row in blocks]
        result = tree_unflatten(per_output, call.out_spec)
        return (result, _lift(call.aux, own, attach)) if has_aux else result


def jacrev(func: Callable, argnums: ArgNums = 0, *, has_aux: bool = False, chunk_size: int | None = None,
           _preallocate_and_copy: bool = False) -> Callable:
    """``func`` transformed to return its Jacobian with respect to the arguments at ``argnums``, by reverse mode
    (one backward pass per output element).

    For an output leaf of shape ``O`` and an input leaf of shape ``I`` the block has shape ``O + I``; blocks nest as
    the output's pytree, each holding the structure of the argument at ``argnums`` (a tuple of them for a tuple).

    Args:
        func: a function of tensors or pytrees of tensors returning a tensor or a pytree of real tensors.
        argnums: the positional argument (or tuple of them) differentiated.
        has_aux: ``func`` returns ``(output, aux)``; the result is then ``(jacobian, aux)``.
        chunk_size: how many rows torch computes at once; the rows here are computed one at a time either way.
    """
    if not (chunk_size is None or chunk_size > 0):
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")

    @functools.wraps(func)
    def wrapper(*args: Any) -> Any:
        return _jacobian("jacrev", func, argnums, has_aux, args, "reverse-mode")

    return wrapper


def jacfwd(func: Callable, argnums: ArgNums = 0, has_aux: bool = False, *, randomness: str = "error") -> Callable:
    """``func`` transformed to return its Jacobian with respect to the arguments at ``argnums``, in jacrev's
    structure. torch computes it by forward mode; here the values come from the same backward passes as
    :func:`jacrev` (``strategy="forward-mode"`` of :func:`genesis.autograd.functional.jacobian`).

    Args:
        func: a function of tensors or pytrees of tensors returning a tensor or a pytree of real tensors.
        argnums: the positional argument (or tuple of them) differentiated.
        has_aux: ``func`` returns ``(output, aux)``; the result is then ``(jacobian, aux)``.
        randomness: "error", "different" or "same", checked as torch does; ``func`` runs once, so it has no effect.
    """
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. Got {randomness}")

    @functools.wraps(func)
    def wrapper(*args: Any) -> Any:
        return _jacobian("jacfwd", func, argnums, has_aux, args, "forward-mode")

    return wrapper


def hessian(func: Callable, argnums: ArgNums = 0) -> Callable:
    """``func`` transformed to return its Hessian with respect to the arguments at ``argnums``: ``jacfwd(jacrev(func,
    argnums), argnums)``, as in torch (for a scalar function of a tensor of shape ``I``, a block of shape ``I + I``).
    """
    return jacfwd(jacrev(func, argnums), argnums)
