"""``genesis.autograd.forward_ad`` (``torch.autograd.forward_ad``): forward-mode AD with dual tensors.

    with forward_ad.dual_level():
        dual = forward_ad.make_dual(x, v)          # x carrying the tangent v
        y = f(dual)                                # every op carries tangents on: J_op @ tangent
        primal, tangent = forward_ad.unpack_dual(y)   # f(x) and J_f(x) @ v

How it works: while a level is open, an interceptor sits in ``Function.apply`` (the profiler's slot, so no op pays an
extra check outside a level). An op with a dual input runs once, recorded on aliases of its dual inputs, and its
output's tangent is the Jacobian-vector product of that one op by the double-backward trick (the backward of the op
applied to a dummy cotangent ``u``, differentiated in ``u``), as :func:`genesis.autograd.functional.jvp` does for a
whole function. So every built-in op whose backward Genesis can differentiate (elementwise math, matmul, reductions,
views, indexing, convolutions, normalization...) is supported, in any grad mode, with the primal's reverse-mode graph
kept as without forward AD. A user's ``autograd.Function`` needs a ``jvp`` staticmethod, as in torch (its ``ctx``
has what forward stored, and ``ctx.saved_tensors`` gives what forward passed to ``ctx.save_for_forward``).

An in-place op with a dual operand (``z.add_(dual)``, ``dual.mul_(2)``) runs as its out-of-place op written back,
and the changed tensor takes that op's tangent (:func:`written_in_place`), as in torch.

Not supported, and reported by ``NotImplementedError`` rather than a wrong tangent: an op whose backward is not
differentiable (``once_differentiable``); a dual tensor as a keyword argument or inside a list argument, or an op
writing into ``out=``; using a dual tensor after an in-place change that did not carry its tangent (a write through
one of its views, a plain fill, an indexed assignment: its version moved on since its tangent was set);
``mark_dirty`` in a Function under forward AD; nested levels (as torch). Unlike torch, tangents carry no
reverse-mode history (no backward through a tangent), each dual op costs about three times the op (its forward,
backward and double backward), and a level is process-wide rather than per thread.
"""

from __future__ import annotations

import contextlib
import weakref
from typing import Any, Iterator, NamedTuple

from genesis.autograd import function as _function
from genesis.autograd.engine import grad
from genesis.autograd.function import Function
from genesis.autograd.grad_mode import enable_grad, is_grad_enabled, no_grad

__all__ = ["UnpackedDualTensor", "dual_level", "enter_dual_level", "exit_dual_level", "make_dual", "unpack_dual"]


class UnpackedDualTensor(NamedTuple):
    """What :func:`unpack_dual` returns: the primal (a view of the tensor, without tangent) and its tangent."""

    primal: Any
    tangent: Any


#: The open level (torch allows one at a time) and, per dual tensor (by id), (weak reference, tangent, version the
#: tensor had when the tangent was set).
_level: int | None = None
_tangents: dict[int, tuple[weakref.ref, Any, int]] = {}


def enter_dual_level() -> int:
    """Open a forward-AD level and return it (0): dual tensors made in it keep their tangents until it is exited."""
    global _level
    if _level is not None:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    _level = 0
    _function.set_forward_ad(_Interceptor())
    return _level


def exit_dual_level(*, level: int | None = None) -> None:
    """Close the open level: every tangent made in it is dropped (``unpack_dual`` then gives None)."""
    global _level
    if _level is None:
        raise RuntimeError("exit_dual_level: no forward AD level is open")
    if level is not None and level != _level:
        raise RuntimeError("Trying to exit a forward AD level that was not the last one that was created. This is "
                           "not supported.")
    _function.set_forward_ad(None)
    _tangents.clear()
    _level = None


class dual_level(contextlib.ContextDecorator):
    """A forward-AD level for the block (or the decorated function): :func:`enter_dual_level` on entry, returning
    the level, and :func:`exit_dual_level` on exit."""

    def __enter__(self) -> int:
        return enter_dual_level()

    def __exit__(self, *exc: object) -> None:
        exit_dual_level()


def _check_level(level: int | None, api: str) -> None:
    if _level is None:
        raise RuntimeError(f"Trying to {api} for forward AD but no level exists, make sure to enter_dual_level() "
                           "first.")
    if level is not None and level != _level:
        raise RuntimeError(f"Invalid level given to {api}: {level} (the open level is {_level})")


def _set_tangent(t: Any, tangent: Any) -> None:
    key = id(t)
    _tangents[key] = (weakref.ref(t, lambda _: _tangents.pop(key, None)), tangent, t._vc[0])


def _entry(t: Any) -> tuple[weakref.ref, Any, int] | None:
    """``t``'s record in ``_tangents`` (None without one, or where the id now names another, newer object)."""
    entry = _tangents.get(id(t))
    return entry if entry is not None and entry[0]() is t else None


def _tangent_of(t: Any) -> Any:
    """``t``'s tangent at the open level, or None; NotImplementedError where ``t`` changed in place since."""
    entry = _entry(t)
    if entry is None:
        return None
    if t._vc[0] != entry[2]:
        raise NotImplementedError("forward AD: a dual tensor was modified in place after its tangent was set, by a "
                                  "write that does not carry tangents (through a view, a fill, an indexed "
                                  "assignment); use the out-of-place op")
    return entry[1]


def involves_dual(*values: Any) -> bool:
    """Whether a level is open and one of ``values`` is a dual tensor: an in-place op on or with it then runs as its
    out-of-place op written back, so that :func:`written_in_place` can hand the tangent over."""
    return _level is not None and any(_entry(v) is not None for v in values)


def written_in_place(t: Any, result: Any) -> None:
    """``result`` (an op's output carrying a tangent) was written into ``t``'s memory: ``t`` takes its tangent, at
    the version the write left ``t`` with."""
    if _level is None:
        return
    tangent = _tangent_of(result)
    if tangent is not None:
        _set_tangent(t, tangent.to(t.dtype) if tangent.dtype is not t.dtype else tangent)


def make_dual(tensor: Any, tangent: Any, *, level: int | None = None) -> Any:
    """A view of ``tensor`` carrying ``tangent`` (same shape) at the open level (``torch.autograd.forward_ad``)."""
    _check_level(level, "create a dual Tensor")
    for name, t in (("primal", tensor), ("tangent", tangent)):
        if not (t.dtype.is_floating_point or t.dtype.is_complex):
            raise ValueError(f"Expected {name} to be floating point or complex, but got: {t.dtype}")
    if tuple(tangent.shape) != tuple(tensor.shape):
        raise RuntimeError(f"Trying to set a forward gradient that has a different size than that of the original "
                           f"Tensor, this is not supported. Tensor is of size {list(tensor.shape)} while the given "
                           f"forward gradient is of size {list(tangent.shape)}.")
    if tangent.device != tensor.device:
        raise RuntimeError(f"make_dual: the tangent is on {tangent.device}, the primal on {tensor.device}")
    if _tangent_of(tensor) is not None:
        raise RuntimeError(f"Making a dual Tensor based on a Tensor that already has a forward gradient at the same "
                           f"level {_level} is not supported.")
    with _function._forward_ad.suspended(), enable_grad():  # as torch's, the view keeps the primal's graph in any mode
        dual = tensor.view_as(tensor)
    _set_tangent(dual, tangent)
    return dual


def unpack_dual(tensor: Any, *, level: int | None = None) -> UnpackedDualTensor:
    """``(primal, tangent)`` of ``tensor``: outside a level, or without tangent, the tangent is None."""
    if _level is None or (level is not None and level != _level):
        return UnpackedDualTensor(tensor, None)
    tangent = _tangent_of(tensor)
    if tangent is None:
        return UnpackedDualTensor(tensor, None)
    with _function._forward_ad.suspended(), enable_grad():
        primal = tensor.view_as(tensor)
    return UnpackedDualTensor(primal, tangent)


class _JvpCtx:
    """The ctx a user's ``Function.jvp`` receives: the forward's ctx, whose ``saved_tensors`` are the tensors forward
    passed to ``save_for_forward``. Attributes set or deleted (``del ctx.result``) are the forward's ctx's."""

    def __init__(self, ctx: Any) -> None:
        object.__setattr__(self, "_ctx", ctx)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ctx, name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._ctx, name, value)

    def __delattr__(self, name: str) -> None:
        delattr(self._ctx, name)

    @property
    def saved_tensors(self) -> tuple:
        return self._ctx.forward_saved


class _Interceptor:
    """Forward AD's hook in ``Function.apply``: runs an op with dual inputs and gives its outputs their tangents;
    other ops, and the ops it runs itself, go on to the profiler's recorder if one records, else run as usual."""

    def __init__(self) -> None:
        self.busy = False

    @contextlib.contextmanager
    def suspended(self) -> Iterator[None]:
        """Ops in the block run without forward AD (the interceptor's own work)."""
        previous, self.busy = self.busy, True
        try:
            yield
        finally:
            self.busy = previous

    def claims(self) -> bool:
        if not self.busy:
            return True
        inner = _function.profiler_recorder
        return inner is not None and inner.claims()

    def record_op(self, cls: type[Function], args: tuple, kwargs: dict) -> Any:
        if self.busy:
            return _function.profiler_recorder.record_op(cls, args, kwargs)
        tangents = [_tangent_of(a) if isinstance(a, _function.Tensor) else None for a in args]
        if _nested_duals(args, kwargs):
            raise NotImplementedError(f"forward AD: {cls.__name__} received a dual tensor as a keyword argument or "
                                      "inside a list; Genesis's forward AD follows positional tensor arguments only")
        with self.suspended():
            if all(t is None for t in tangents):
                return cls.apply(*args, **kwargs)
            if "out" in kwargs:
                raise NotImplementedError(f"forward AD: {cls.__name__} writing into out= (an in-place op) is not "
                                          "supported")
            custom = not cls.__module__.startswith("genesis.")
            if custom and getattr(cls, "jvp", None) is None:
                raise NotImplementedError("You must implement the jvp function for custom autograd.Function to use "
                                          "it with forward mode AD.")
            return _run_dual(cls, args, kwargs, tangents, custom)

    def __call__(self, name: str, inputs: Any, run: Any, *args: Any) -> Any:
        inner = _function.profiler_recorder
        return inner(name, inputs, run, *args) if inner is not None else run(*args)


def _nested_duals(args: tuple, kwargs: dict) -> bool:
    """Whether a dual tensor hides where the tangent computation would not see it (a keyword, a list)."""
    def nested(v: Any) -> bool:
        return isinstance(v, (list, tuple)) and any(isinstance(x, _function.Tensor) and _tangent_of(x) is not None
                                                    for x in v)

    return any(nested(a) for a in args) or any(nested(v) or (isinstance(v, _function.Tensor)
                                                             and _tangent_of(v) is not None) for v in kwargs.values())


def _run_dual(cls: type[Function], args: tuple, kwargs: dict, tangents: list, custom: bool) -> Any:
    """Run ``cls`` on ``args`` once, recorded on aliases of its dual inputs, and set its outputs' tangents."""
    keep_graph = is_grad_enabled() and any(isinstance(a, _function.Tensor) and a.requires_grad for a in args)
    sources, run_args = [], []
    for a, t in zip(args, tangents):
        if t is not None:
            # A view keeps the caller's graph (the op is recorded there as without forward AD); else a fresh leaf.
            a = a.view_as(a) if keep_graph and a.requires_grad else a.detach().requires_grad_(True)
            sources.append(a)
        run_args.append(a)
    with enable_grad():
        out = cls.apply(*run_args, **kwargs)
    outs = out if isinstance(out, tuple) else (out,)
    diff = [o for o in outs if isinstance(o, _function.Tensor) and o.requires_grad]
    if diff:
        node = next((o.grad_fn for o in diff if o.grad_fn is not None), None)
        if node is not None and node.dirty_tensors:
            raise NotImplementedError(f"forward AD: {cls.__name__} changes an input in place (mark_dirty), which "
                                      "Genesis's forward AD does not support")
        if custom:
            targets, results = outs, _custom_jvp(cls, node, args, tangents)
        else:
            targets, results = diff, _double_backward_jvp(cls.__name__, diff, sources,
                                                          [t for t in tangents if t is not None])
        for o, t in zip(targets, results):
            if isinstance(o, _function.Tensor) and t is not None:
                _set_tangent(o, t)
    if not keep_graph:
        for o in diff:  # the caller's grad mode or inputs record nothing: neither do the outputs
            o._grad_fn, o._requires_grad = None, False
    return out


def _double_backward_jvp(name: str, outputs: list, sources: list, tangents: list) -> list:
    """The tangents of ``outputs``: J @ tangents, as the derivative in ``u`` of the op's backward applied to ``u``."""
    dummies = [o.new_zeros(tuple(o.shape)).requires_grad_(True) for o in outputs]
    try:  # an op whose backward Genesis cannot differentiate raises in one of the two passes
        grads = grad(outputs, sources, dummies, retain_graph=True, create_graph=True, allow_unused=True)
        pairs = [(g, t) for g, t in zip(grads, tangents) if g is not None and g.requires_grad]
        if not pairs:  # the op's derivative is zero (floor, sign ...)
            return [o.new_zeros(tuple(o.shape)) for o in outputs]
        results = grad([g for g, _ in pairs], dummies, [t.to(g.dtype) for g, t in pairs], allow_unused=True)
    except (RuntimeError, NotImplementedError) as err:
        raise NotImplementedError(f"forward AD: the forward derivative of {name} is not available, as its backward "
                                  f"is not differentiable ({err})") from err
    return [r if r is not None else o.new_zeros(tuple(o.shape)) for r, o in zip(results, outputs)]


def _custom_jvp(cls: type[Function], ctx: Any, args: tuple, tangents: list) -> list:
    """A user's Function: its own ``jvp(ctx, *tangents)``, with zeros for tensor inputs without tangent and None for
    other arguments, as torch calls it."""
    if ctx is None:
        return []
    given = [t if t is not None else (a.new_zeros(tuple(a.shape)) if isinstance(a, _function.Tensor) else None)
             for a, t in zip(args, tangents)]
    with no_grad():
        result = cls.jvp(_JvpCtx(ctx), *given)
    return list(result) if isinstance(result, tuple) else [result]
