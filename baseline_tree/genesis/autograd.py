"""Automatic differentiation: grad mode, the Function base with all graph bookkeeping, and the backward engine.

Every differentiable op is a small ``Function`` subclass with ``forward`` and ``backward`` side by side.
``Function.apply`` runs ``forward`` and, when grad mode is on and some input requires grad, records a graph node:
the ctx object itself, with links to the nodes that produced its inputs (``next_functions``). ``backward`` computes
with Tensors, so gradients are themselves differentiable when ``create_graph=True``.

The engine (:func:`run_backward`) counts, for every reachable node, how many gradients it waits for, then visits
each node exactly once in topological order, sums incoming gradients, calls the node's backward and frees its saved
tensors unless ``retain_graph``.
"""

from __future__ import annotations

import functools
import math
import threading
import weakref
from typing import Any, Callable, Sequence

from genesis.ndarray import NDArray


class _GradState(threading.local):
    """Per-thread grad mode flags (plain attributes: read on every op, so kept cheap)."""

    def __init__(self) -> None:
        self.enabled = True
        self.inference = False


_state = _GradState()
#: genesis.tensor.Tensor, bound by genesis.tensor when it is imported (it imports this module).
Tensor: Any = None


def is_grad_enabled() -> bool:
    """Whether operations are currently recorded for differentiation."""
    return _state.enabled


def _set_enabled(mode: bool) -> None:
    _state.enabled = mode


def is_inference_mode_enabled() -> bool:
    """Whether an ``inference_mode`` block is active on this thread."""
    return _state.inference


class _GradModeContext:
    """Base of the grad-mode context managers; each one also works as a function decorator."""

    mode: bool = True

    def __enter__(self) -> None:
        self._prev = is_grad_enabled()
        _set_enabled(self.mode)

    def __exit__(self, *exc: object) -> None:
        _set_enabled(self._prev)

    def __call__(self, fn: Callable) -> Callable:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with self.__class__():
                return fn(*args, **kwargs)

        return wrapper


class _NoParamGradModeContext(_GradModeContext):
    """A grad-mode context that takes no arguments, so it also decorates without parentheses (``@no_grad``)."""

    def __new__(cls, orig_func: Callable | None = None) -> Any:
        if orig_func is None:
            return super().__new__(cls)
        return cls()(orig_func)


class no_grad(_NoParamGradModeContext):
    """Disable gradient recording inside the block (outputs do not require grad)."""

    mode = False


class enable_grad(_NoParamGradModeContext):
    """Enable gradient recording inside the block, also within ``no_grad``."""

    mode = True


class set_grad_enabled(_GradModeContext):
    """Set grad mode on or off; takes effect immediately and, used as a context manager, restores it on exit."""

    def __init__(self, mode: bool) -> None:
        self._prev = is_grad_enabled()
        self.mode = bool(mode)
        _set_enabled(self.mode)

    def __enter__(self) -> None:
        pass

    def __call__(self, fn: Callable) -> Callable:
        _set_enabled(self._prev)
        mode = self.mode

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with set_grad_enabled(mode):
                return fn(*args, **kwargs)

        return wrapper


class inference_mode(_GradModeContext):
    """Like ``no_grad``, for inference code; ``inference_mode(False)`` enables grad mode inside the block."""

    def __new__(cls, mode: bool | Callable = True) -> Any:
        if callable(mode):
            return cls(True)(mode)
        return super().__new__(cls)

    def __init__(self, mode: bool = True) -> None:
        self.enabled_flag = mode
        self.mode = not mode

    def __enter__(self) -> None:
        self._prev = is_grad_enabled()
        self._prev_inference = is_inference_mode_enabled()
        # As in torch, inference_mode(False) turns grad mode on even inside no_grad.
        _set_enabled(not self.enabled_flag)
        _state.inference = self.enabled_flag

    def __exit__(self, *exc: object) -> None:
        _set_enabled(self._prev)
        _state.inference = self._prev_inference

    def __call__(self, fn: Callable) -> Callable:
        flag = self.enabled_flag

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with inference_mode(flag):
                return fn(*args, **kwargs)

        return wrapper


# ------------------------------------------------------------------------ graph nodes

class RemovableHandle:
    """Returned by hook registrations; ``remove()`` unregisters the hook."""

    def __init__(self, hooks: list, hook: Callable) -> None:
        self._hooks = hooks
        self._hook = hook

    def remove(self) -> None:
        if self._hook in self._hooks:
            self._hooks.remove(self._hook)

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()



class Node:
    """A node of the backward graph; ``next_functions`` lists ``(node, output_nr)`` per input."""

    next_functions: tuple = ()
    _released = False
    _output_hooks: dict[int, list[Callable]] | None = None  # tensor hooks of this node's outputs, by output number
    _retain_hooks: dict[int, Callable] | None = None  # retain_grad of outputs: run after the other hooks
    _pre_hooks: list[Callable] | None = None
    _post_hooks: list[Callable] | None = None

    def name(self) -> str:
        return type(self).__name__

    def register_hook(self, hook: Callable) -> RemovableHandle:
        """Call ``hook(grad_inputs, grad_outputs)`` after this node's backward (torch semantics)."""
        if self._post_hooks is None:
            self._post_hooks = []
        self._post_hooks.append(hook)
        return RemovableHandle(self._post_hooks, hook)

    def register_prehook(self, hook: Callable) -> RemovableHandle:
        """Call ``hook(grad_outputs)`` before this node's backward; a returned tuple replaces ``grad_outputs``."""
        if self._pre_hooks is None:
            self._pre_hooks = []
        self._pre_hooks.append(hook)
        return RemovableHandle(self._pre_hooks, hook)

    def __repr__(self) -> str:
        return f"<{self.name()} object at {id(self):#x}>"


class AccumulateGrad(Node):
    """Sink node for a leaf tensor that requires grad: adds incoming gradients into ``variable.grad``."""

    def __init__(self, variable: Any) -> None:
        self.variable = variable

    def name(self) -> str:
        return "AccumulateGrad"


class BackwardCtx(Node):
    """Context of one recorded op: saved tensors, flags and links to the input nodes."""

    def __init__(self, fn: type) -> None:
        self._fn = fn
        self._saved: tuple = ()
        self._saved_versions: tuple = ()
        self._inputs: tuple = ()
        self._outputs: tuple = ()
        self.needs_input_grad: tuple[bool, ...] = ()
        self.non_differentiable: tuple = ()
        self.materialize_grads = True

    def name(self) -> str:
        return self._fn.__name__ + "Backward"

    def save_for_backward(self, *values: Any) -> None:
        """Keep tensors (or NDArrays of inputs/outputs) for backward; in-place changes to them are detected."""
        self._saved = values

    def mark_non_differentiable(self, *outputs: Any) -> None:
        """Declare outputs that never receive gradients (e.g. indices)."""
        self.non_differentiable = outputs

    def set_materialize_grads(self, value: bool) -> None:
        """Whether backward receives zeros (True, the default) or None for outputs that got no gradient."""
        self.materialize_grads = value

    @property
    def saved_tensors(self) -> tuple:
        """The saved values as Tensors, after checking none was modified in place since it was saved."""
        if self._released:
            raise RuntimeError(
                "Trying to backward through the graph a second time (or directly access saved tensors after they "
                "have already been freed). Saved intermediate values of the graph are freed when you call "
                ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
                "graph a second time or if you need to access saved tensors after calling backward."
            )
        result = []
        for value, version in zip(self._saved, self._saved_versions):
            tensor = self._as_tensor(value)
            if version is not None and version[0][0] != version[1]:
                producer = f", which is output {tensor._output_nr} of {tensor.grad_fn.name()}," \
                    if tensor.grad_fn is not None else ","
                raise RuntimeError(
                    "one of the variables needed for gradient computation has been modified by an inplace "
                    f"operation: [{tensor.dtype}{list(tensor.shape)}]{producer} is at version {version[0][0]}; "
                    f"expected version {version[1]} instead. (needed by {self.name()})"
                )
            result.append(tensor)
        return tuple(result)

    def _as_tensor(self, value: Any) -> Any:
        """Map a saved NDArray back to the input or output Tensor holding it, so double backward sees the graph."""
        if not isinstance(value, NDArray):
            return value
        for t in self._inputs:
            if isinstance(t, Tensor) and t.ndarray is value:
                return t
        for ref in self._outputs:
            t = ref()
            if t is not None and t.ndarray is value:
                return t
        return Tensor._wrap(value)

    def _record_versions(self, outputs: tuple) -> None:
        """Remember, per saved value, the version counter of the input or output holding it and its version now."""
        if not self._saved:
            return
        versions = []
        for value in self._saved:
            holder = value if isinstance(value, Tensor) else _holder(value, self._inputs, outputs)
            versions.append((holder._version, holder._version[0]) if holder is not None else None)
        self._saved_versions = tuple(versions)

    def _snapshot_saved(self, target: Any) -> None:
        """Before ``target`` is overwritten by this node's own in-place op, keep a copy of it where it was saved.

        The copy carries ``target``'s history, so double backward still differentiates through the old value.
        """
        snapshot = None
        saved = list(self._saved)
        versions = list(self._saved_versions)
        for i, value in enumerate(saved):
            if value is target.ndarray or value is target:
                if snapshot is None:
                    nd = target.ndarray
                    snapshot = Tensor._wrap(nd.backend.contiguous(nd))
                    snapshot.requires_grad = target.requires_grad
                    snapshot._grad_fn = target._grad_fn
                    snapshot._output_nr = target._output_nr
                saved[i] = snapshot
                versions[i] = None
        if snapshot is not None:
            self._saved = tuple(saved)
            self._saved_versions = tuple(versions)

    def _release(self) -> None:
        self._saved = ()
        self._inputs = ()
        self._released = True


def _holder(value: Any, inputs: tuple, outputs: tuple) -> Any:
    """The input (preferred) or output Tensor whose NDArray is ``value``, or None."""
    for group in (inputs, outputs):
        for t in group:
            if isinstance(t, Tensor) and t.ndarray is value:
                return t
    return None


class _NoGradCtx:
    """Stand-in ctx for forward passes that record nothing: saving is a no-op."""

    needs_input_grad: tuple = ()
    materialize_grads = True

    def save_for_backward(self, *values: Any) -> None:
        pass

    def mark_non_differentiable(self, *outputs: Any) -> None:
        pass

    def set_materialize_grads(self, value: bool) -> None:
        pass


_NO_GRAD_CTX = _NoGradCtx()


class Function:
    """Base class of differentiable operations (``genesis.autograd.Function``, as ``torch.autograd.Function``).

    Subclasses define static ``forward(ctx, *args)`` and ``backward(ctx, *grads)`` and are called through
    ``apply``. ``forward`` receives Tensors, runs without recording, and returns Tensors; ``backward`` receives
    one gradient per output and returns one gradient (or None) per input of ``forward``.
    """

    #: Built-in primitives set this: their forward receives and returns NDArrays, which is cheaper.
    takes_ndarrays = False
    #: View primitives set this: an output over the input's memory shares its version counter and base (an op that
    #: may return a copy instead, as reshape, sets it too).
    is_view = False

    @staticmethod
    def forward(ctx: Any, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> Any:
        raise NotImplementedError

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Any:
        # One pass over the arguments: unwrap Tensors to NDArrays and see whether any of them requires grad.
        record = False
        raw = []
        for a in args:
            if isinstance(a, Tensor):
                record = record or a._requires_grad
                raw.append(a.ndarray)
            else:
                raw.append(a)
        record = record and _state.enabled
        if not record:
            if cls.takes_ndarrays:
                # The hot path of every op without autograd: unwrap, compute, wrap; nothing else.
                out = cls.forward(_NO_GRAD_CTX, *raw, **kwargs)
                out = Tensor._wrap(out) if out.__class__ is NDArray else _wrap_outputs(out, None)
                if cls.is_view and out.ndarray.buffer is args[0].ndarray.buffer:
                    out._version = args[0]._version
                    out._base = args[0] if args[0]._base is None else args[0]._base
                return out
            with no_grad():
                out = cls.forward(_NoGradCtx(), *args, **kwargs)
            return _detach_outputs(out)

        ctx = BackwardCtx(cls)
        ctx._inputs = args
        ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a._requires_grad for a in args)
        if cls.takes_ndarrays:
            out = cls.forward(ctx, *raw, **kwargs)
        else:
            with no_grad():
                out = cls.forward(ctx, *args, **kwargs)
            out = _unwrap_outputs(out)
            # Tensors created inside forward are saved by memory, so they map to the recorded outputs.
            ctx._saved = tuple(v.ndarray if isinstance(v, Tensor) and not any(v is a for a in args) else v
                               for v in ctx._saved)
        edges, meta = [], []
        for a in args:
            if isinstance(a, Tensor):
                edges.append(_edge(a))
                nd = a.ndarray
                meta.append((nd.shape, nd.dtype, nd.device))
            else:
                edges.append((None, 0))
                meta.append(None)
        ctx.next_functions = tuple(edges)
        ctx._input_meta = tuple(meta)
        outputs = _wrap_outputs(out, ctx)
        ctx._record_versions(outputs if isinstance(outputs, tuple) else (outputs,))
        if cls.is_view and outputs.ndarray.buffer is args[0].ndarray.buffer:
            outputs._version = args[0]._version
            outputs._base = args[0] if args[0]._base is None else args[0]._base
            outputs._view_version = outputs._version[0]
        return outputs


class Overwrite(Function):
    """The history of a tensor whose whole value an in-place op replaced with a constant (``fill_``, ``zero_``...).

    Forward returns the new value; backward sends zeros to the overwritten tensor, as torch does.
    """

    takes_ndarrays = True

    @staticmethod
    def forward(ctx: Any, old: NDArray, new: NDArray) -> NDArray:
        return new

    @staticmethod
    def backward(ctx: Any, grad: Any) -> tuple:
        from genesis.tensor import Tensor

        return Tensor._wrap(NDArray.full(grad.shape, 0, grad.dtype, grad.device)), None


# ------------------------------------------------------------------------ in-place changes through views

def view_positions(view: NDArray, base: NDArray) -> NDArray:
    """Flat indices, in ``base``'s logical order, of every element of ``view`` (both over the same buffer)."""
    from genesis import dtypes

    def last(nd: NDArray) -> int:
        return nd.offset + sum((n - 1) * abs(st) for n, st in zip(nd.shape, nd.strides))

    extent = max(last(view), last(base)) + 1
    backend = base.backend
    buffer_positions = backend.arange(0, extent, 1, dtypes.int64, base.device)
    base_positions = backend.contiguous(buffer_positions.as_strided(base.shape, base.strides, base.offset))
    logical = NDArray.full((extent,), 0, dtypes.int64, base.device)
    order = backend.arange(0, base.size, 1, dtypes.int64, base.device)
    backend.index_put_(logical, (base_positions.reshape((base.size,)),), order, False)
    return backend.contiguous(logical.as_strided(view.shape, view.strides, view.offset))


class CopySlices(Function):
    """New history of a base tensor after an in-place op wrote ``value`` into one of its views.

    The memory already holds the new values; backward sends the view's part of the gradient to ``value`` and the
    rest to the base's previous history.
    """

    takes_ndarrays = True

    @staticmethod
    def forward(ctx: Any, base: NDArray, value: NDArray, positions: NDArray) -> NDArray:
        ctx.positions = positions
        return base

    @staticmethod
    def backward(ctx: Any, grad: Any) -> tuple:
        from genesis.functional import index_put, index_tensor

        flat = grad.reshape(-1)
        grad_value = index_tensor(flat, (ctx.positions,)) if ctx.needs_input_grad[1] else None
        grad_base = index_put(flat, (ctx.positions,), 0.0).reshape(grad.shape) if ctx.needs_input_grad[0] else None
        return grad_base, grad_value, None


class ViewOfBase(Function):
    """History of a view whose base changed in place after the view was made: the view reads the base anew."""

    takes_ndarrays = True

    @staticmethod
    def forward(ctx: Any, base: NDArray, view: NDArray, positions: NDArray) -> NDArray:
        ctx.positions = positions
        return view

    @staticmethod
    def backward(ctx: Any, grad: Any) -> tuple:
        from genesis.functional import index_put

        base_shape = ctx._input_meta[0][0]
        zeros = Tensor._wrap(NDArray.full((math.prod(base_shape),), 0, grad.dtype, grad.device))
        scattered = index_put(zeros, (ctx.positions,), grad, accumulate=True)
        return scattered.reshape(base_shape), None, None


def take_history(target: Any, result: Any) -> None:
    """Make ``target`` the output of ``result``'s graph node (an in-place op's tensor keeps its identity).

    ``retain_grad`` follows the tensor to its new history; other hooks stay with the value they were registered on.
    """
    node = result._grad_fn
    old = target._grad_fn
    if target._retains_grad and old is not None and old._retain_hooks and target._output_nr in old._retain_hooks:
        keep = old._retain_hooks.pop(target._output_nr)
        if node._retain_hooks is None:
            node._retain_hooks = {}
        node._retain_hooks[result._output_nr] = keep
    target._grad_fn = node
    target._output_nr = result._output_nr
    target.requires_grad = True
    outs = list(node._outputs)
    outs[result._output_nr] = weakref.ref(target)
    node._outputs = tuple(outs)


def refresh_view_history(view: Any, positions: NDArray | None = None) -> None:
    """Give a view whose base changed in place since the view's history was recorded a history through the base."""
    base = view._base
    if base.ndarray.buffer is not view.ndarray.buffer:
        return
    if positions is None:
        positions = view_positions(view.ndarray, base.ndarray)
    with enable_grad():  # the history is rebuilt whatever the grad mode (backward may run under no_grad)
        take_history(view, ViewOfBase.apply(base, view.ndarray, positions))
    view._view_version = view._version[0]


def retain_grad(t: Any) -> None:
    """Keep the gradient of the non-leaf ``t`` in ``t.grad`` after backward (after ``t``'s hooks ran)."""
    ref = weakref.ref(t)

    def keep(grad: Any) -> None:
        target = ref()
        if target is not None:
            g = grad.detach()
            target.grad = g.clone() if target.grad is None else target.grad + g

    node = t._grad_fn
    if node._retain_hooks is None:
        node._retain_hooks = {}
    node._retain_hooks[t._output_nr] = keep


def _edge(a: Any) -> tuple[Node | None, int]:
    if not isinstance(a, Tensor) or not a.requires_grad:
        return (None, 0)
    if a._base is not None and a._view_version != a._version[0] and a._base.requires_grad:
        refresh_view_history(a)
    if a._grad_fn is not None:
        return (a._grad_fn, a._output_nr)
    return (a._accumulator(), 0)


def _unwrap_outputs(out: Any) -> Any:
    if isinstance(out, tuple):
        return tuple(o.ndarray if isinstance(o, Tensor) else o for o in out)
    return out.ndarray if isinstance(out, Tensor) else out


def _detach_outputs(out: Any) -> Any:
    if isinstance(out, tuple):
        return tuple(Tensor._wrap(o.ndarray) if isinstance(o, Tensor) else o for o in out)
    return Tensor._wrap(out.ndarray) if isinstance(out, Tensor) else out


def _wrap_outputs(out: Any, ctx: BackwardCtx | None) -> Any:
    if ctx is None:
        if isinstance(out, NDArray):
            return Tensor._wrap(out)
        return tuple(Tensor._wrap(o) if isinstance(o, NDArray) else o for o in out)
    non_diff = ctx.non_differentiable
    if out.__class__ is NDArray and not non_diff:
        # The common case, one output: the loop below without its lists.
        t = Tensor._wrap(out)
        if out.dtype.is_floating_point:
            t._requires_grad = True
            t._grad_fn = ctx
        ctx._outputs = (weakref.ref(t),)
        ctx._n_outputs = 1
        ctx._output_meta = ((out.shape, out.dtype, out.device),)
        return t
    single = isinstance(out, NDArray)
    outs = (out,) if single else out
    wrapped = []
    refs = []
    for i, o in enumerate(outs):
        if not isinstance(o, NDArray):
            wrapped.append(o)
            refs.append(lambda: None)
            continue
        differentiable = o.dtype.is_floating_point and not any(o is n or getattr(n, "ndarray", None) is o
                                                                for n in non_diff)
        t = Tensor._wrap(o)
        if differentiable:
            t._requires_grad = True
            t._grad_fn = ctx
            t._output_nr = i
        wrapped.append(t)
        refs.append(weakref.ref(t))
    ctx._outputs = tuple(refs)
    ctx._n_outputs = len(outs)
    ctx._output_meta = tuple((o.shape, o.dtype, o.device) if isinstance(o, NDArray) else None for o in outs)
    return wrapped[0] if single else tuple(wrapped)


# ------------------------------------------------------------------------ the engine

def _sum_to_shape(grad: Any, shape: tuple[int, ...]) -> Any:
    """Sum a broadcast gradient back to ``shape`` (the one unbroadcasting helper)."""
    if grad.shape == shape:
        return grad
    lead = grad.ndim - len(shape)
    dims = tuple(range(lead)) + tuple(i + lead for i, n in enumerate(shape) if n == 1 and grad.shape[i + lead] != 1)
    if dims:
        grad = grad.sum(dim=dims, keepdim=True)
    if lead:
        grad = grad.reshape(shape)
    return grad


def _collect(roots: Sequence[Node]) -> dict[Node, int]:
    """Dependency counts: how many gradients each reachable node waits for."""
    deps: dict[Node, int] = {}
    seen = set()
    stack = list(roots)
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        for nxt, _ in node.next_functions:
            if nxt is not None:
                deps[nxt] = deps.get(nxt, 0) + 1
                stack.append(nxt)
    return deps


def _accumulate(buffer: list, i: int, g: Any) -> None:
    if g is None:
        return
    buffer[i] = g if buffer[i] is None else buffer[i] + g


def run_backward(tensors: Sequence[Any], grad_tensors: Sequence[Any], retain_graph: bool, create_graph: bool,
                 inputs: Sequence[Any] | None = None, allow_unused: bool = False) -> tuple | None:
    """Propagate ``grad_tensors`` from ``tensors`` to the leaves (or, with ``inputs``, return their gradients)."""

    roots: list[Node] = []
    buffers: dict[Node, list] = {}
    for t, g in zip(tensors, grad_tensors):
        _edge(t)  # refreshes the history of a view whose base changed in place
        node = t._grad_fn if t._grad_fn is not None else t._accumulator()
        n_out = getattr(node, "_n_outputs", 1)
        buf = buffers.setdefault(node, [None] * n_out)
        _accumulate(buf, t._output_nr if t._grad_fn is not None else 0, g)
        if node not in roots:
            roots.append(node)

    captures: dict[tuple[Node, int], int] = {}
    results: list = []
    if inputs is not None:
        results = [None] * len(inputs)
        for k, t in enumerate(inputs):
            _edge(t)
            key = (t._grad_fn, t._output_nr) if t._grad_fn is not None else (t._accumulator(), 0)
            captures[key] = k

    # Buffers of gradients already visible to the caller: a leaf's new .grad must not alias them.
    handed = {id(g.ndarray.buffer) for g in grad_tensors if g is not None}
    deps = _collect(roots)
    needed = _leading_to({n for n, _ in captures}, roots) if inputs is not None else set()
    ready = [n for n in roots if deps.get(n, 0) == 0]
    with set_grad_enabled(create_graph):
        while ready:
            node = ready.pop()
            grads = buffers.pop(node, [None])
            if node._output_hooks or node._retain_hooks:
                grads = [_run_output_hooks(node, i, g) for i, g in enumerate(grads)]
            if node._pre_hooks:
                grads = _run_prehooks(node, grads)
            if captures:
                for i, g in enumerate(grads):
                    k = captures.get((node, i))
                    if k is not None:
                        results[k] = g
            if isinstance(node, AccumulateGrad):
                if inputs is None:
                    _accumulate_leaf(node.variable, grads[0], create_graph, handed)
                continue
            if inputs is not None and node not in needed:
                in_grads: tuple = (None,) * len(node.next_functions)
            else:
                in_grads = _call_backward(node, grads, retain_graph, create_graph)
            for (nxt, idx), g in zip(node.next_functions, in_grads):
                if nxt is None:
                    continue
                buf = buffers.get(nxt)
                if buf is None:
                    buf = buffers[nxt] = [None] * getattr(nxt, "_n_outputs", 1)
                _accumulate(buf, idx, g)
                deps[nxt] -= 1
                if deps[nxt] == 0:
                    ready.append(nxt)
    if inputs is None:
        return None
    for k, r in enumerate(results):
        if r is None and not allow_unused:
            raise RuntimeError(
                f"One of the differentiated Tensors (input {k}) appears to not have been used in the graph. "
                "Set allow_unused=True if this is the desired behavior."
            )
    return tuple(r if r is None or create_graph else r.detach() for r in results)


def _leading_to(targets: set[Node], roots: Sequence[Node]) -> set[Node]:
    """The nodes from which some node of ``targets`` is reachable (targets included): one pass over the graph."""
    result: set[Node] = set()
    state: dict[Node, bool] = {}  # False while a node's inputs are being visited, True once done
    for root in roots:
        stack = [root]
        while stack:
            node = stack[-1]
            if node not in state:
                state[node] = False
                stack.extend(n for n, _ in node.next_functions if n is not None and n not in state)
                continue
            stack.pop()
            if state[node]:
                continue
            state[node] = True
            if node in targets or any(n in result for n, _ in node.next_functions if n is not None):
                result.add(node)
    return result


def _run_hooks(hooks: Sequence[Callable], g: Any) -> Any:
    """Call tensor hooks in order; a hook's returned tensor (of the same shape) replaces the gradient."""
    for hook in hooks:
        new = hook(g)
        if new is not None:
            if new.shape != g.shape:
                name = getattr(hook, "__name__", type(hook).__name__)
                raise RuntimeError(f"hook '{name}' has changed the size of value (from {tuple(g.shape)} to "
                                   f"{tuple(new.shape)})")
            g = new
    return g


def _run_prehooks(node: Node, grads: list) -> list:
    for hook in node._pre_hooks:
        new = hook(tuple(grads))
        if new is not None:
            if len(new) != len(grads):
                raise RuntimeError(f"hook of {node.name()} returned {len(new)} gradients, expected {len(grads)}")
            grads = list(new)
    return grads


def _run_output_hooks(node: Node, i: int, g: Any) -> Any:
    """The gradient of output ``i`` after its tensor hooks (and ``retain_grad``, which sees the final value)."""
    if g is None:
        return g
    hooks = node._output_hooks.get(i) if node._output_hooks else None
    if hooks:
        g = _run_hooks(hooks, g)
    retain = node._retain_hooks.get(i) if node._retain_hooks else None
    if retain is not None:
        retain(g)
    return g


def _call_backward(node: BackwardCtx, grads: list, retain_graph: bool, create_graph: bool) -> tuple:
    if node.materialize_grads:
        for i, g in enumerate(grads):
            if g is None and node._output_meta[i] is not None:
                shape, dtype, device = node._output_meta[i]
                grads[i] = Tensor._wrap(NDArray.full(shape, 0, dtype, device))
    out = node._fn.backward(node, *grads)
    if not isinstance(out, tuple):
        out = (out,)
    n_in = len(node.next_functions)
    if len(out) < n_in:
        raise RuntimeError(
            f"function {node.name()} returned an incorrect number of gradients (expected {n_in}, got {len(out)})"
        )
    result = []
    for i in range(n_in):
        g = out[i]
        if g is None or node.next_functions[i][0] is None:
            result.append(None)
            continue
        if isinstance(g, NDArray):
            g = Tensor._wrap(g)
        shape, dtype, device = node._input_meta[i]
        if g.shape != shape:
            g = _sum_to_shape(g, shape)
        if g.dtype is not dtype:
            g = g.to(dtype)
        result.append(g)
    hooks = node._post_hooks
    if hooks:
        for hook in hooks:
            hook(tuple(result), tuple(grads))
    if not retain_graph:
        node._release()
    return tuple(result)


def _accumulate_leaf(t: Any, g: Any, create_graph: bool, handed: set[int]) -> None:
    """Add ``g`` into ``t.grad``. A new ``.grad`` never aliases a gradient handed elsewhere in this run."""
    if g is None:
        return
    if t._hooks:
        g = _run_hooks(t._hooks, g)
    if not create_graph:
        g = g.detach()
    if t.grad is None:
        owned = id(g.ndarray.buffer) not in handed and g.ndarray.is_contiguous()
        t.grad = g if owned or create_graph else g.clone()
        handed.add(id(t.grad.ndarray.buffer))
    elif create_graph:
        t.grad = t.grad + g
    else:
        t.grad.ndarray.binary("add", g.ndarray.astype(t.grad.dtype), out=t.grad.ndarray)
        t.grad._version[0] += 1
    for hook in t._post_accumulate_hooks or ():
        hook(t)


def backward(tensors: Any, grad_tensors: Any = None, retain_graph: bool | None = None,
             create_graph: bool = False, inputs: Any = None) -> None:
    """Compute and accumulate gradients of ``tensors`` into the leaves' ``.grad`` (torch.autograd.backward)."""
    tensors = (tensors,) if isinstance(tensors, Tensor) else tuple(tensors)
    grads = _make_grads(tensors, grad_tensors)
    if retain_graph is None:
        retain_graph = create_graph
    if inputs is not None:
        inputs = (inputs,) if isinstance(inputs, Tensor) else tuple(inputs)
        result = run_backward(tensors, grads, retain_graph, create_graph, inputs, allow_unused=True)
        handed = {id(g.ndarray.buffer) for g in grads}
        for t, g in zip(inputs, result):
            if g is not None:
                _accumulate_leaf(t, g, create_graph, handed)
        return
    run_backward(tensors, grads, retain_graph, create_graph)


def grad(outputs: Any, inputs: Any, grad_outputs: Any = None, retain_graph: bool | None = None,
         create_graph: bool = False, allow_unused: bool | None = None, materialize_grads: bool = False) -> tuple:
    """Return the gradients of ``outputs`` with respect to ``inputs`` without touching ``.grad``."""
    outputs = (outputs,) if isinstance(outputs, Tensor) else tuple(outputs)
    inputs_t = (inputs,) if isinstance(inputs, Tensor) else tuple(inputs)
    for t in inputs_t:
        if not t.requires_grad:
            raise RuntimeError("grad: one of the differentiated Tensors does not require grad")
    grads = _make_grads(outputs, grad_outputs)
    if retain_graph is None:
        retain_graph = create_graph
    allow = bool(allow_unused) or materialize_grads
    result = run_backward(outputs, grads, retain_graph, create_graph, inputs_t, allow_unused=allow)
    if materialize_grads:
        from genesis.tensor import zeros_like

        result = tuple(zeros_like(t) if g is None else g for t, g in zip(inputs_t, result))
    return result


def _make_grads(outputs: Sequence[Any], grad_outputs: Any) -> list:
    if grad_outputs is None or isinstance(grad_outputs, Tensor):
        grad_outputs = [grad_outputs] * len(outputs) if grad_outputs is None else [grad_outputs]
    grad_outputs = list(grad_outputs)
    for g in grad_outputs:
        if g is not None and not isinstance(g, Tensor):
            raise TypeError(f"gradients can be either Tensors or None, but got {type(g).__name__}")
    if len(grad_outputs) != len(outputs):
        raise RuntimeError(f"got {len(outputs)} tensors and {len(grad_outputs)} gradients")
    result = []
    for i, (out, g) in enumerate(zip(outputs, grad_outputs)):
        if not isinstance(out, Tensor):
            raise TypeError(f"tensors to differentiate must be Tensors, but element {i} is a {type(out).__name__}")
        if not out.requires_grad:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
        if g is None:
            if out.numel() != 1:
                raise RuntimeError(
                    f"grad can be implicitly created only for scalar outputs (got an output of shape "
                    f"{tuple(out.shape)})"
                )
            g = Tensor._wrap(NDArray.full(out.shape, 1, out.dtype, out.device))
        elif g.shape != out.shape:
            raise RuntimeError(
                f"Mismatch in shape: grad_output[0] has a shape of {tuple(g.shape)} and output[0] has a shape of "
                f"{tuple(out.shape)}."
            )
        elif g.device != out.device:
            raise RuntimeError(f"invalid gradient at index {i} - expected device {out.device} but got {g.device}")
        result.append(g)
    return result


__all__ = [
    "Function", "no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "is_grad_enabled", "grad",
    "backward", "Node", "AccumulateGrad",
]

