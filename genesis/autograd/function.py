"""Graph nodes and the ``Function`` base: one ``apply`` does all graph bookkeeping, and the view machinery that keeps
histories right when a tensor changes in place through a view.

``Function.apply`` runs ``forward`` and, when grad mode is on and some input requires grad, records a graph node:
the ctx object itself, with links to the nodes that produced its inputs (``next_functions``). ``backward`` computes
with Tensors, so gradients are themselves differentiable when ``create_graph=True``.

This layer sits below the Tensor class; the tensor layer registers its class once with :func:`set_tensor_type`
(Genesis's one binding step, :func:`genesis.ops.registry.bind`, does it).
"""

from __future__ import annotations

import functools
import inspect
import itertools
import math
import warnings
import weakref
from typing import Any, Callable

from genesis import dtypes
from genesis.autograd.grad_mode import _state, enable_grad, no_grad
from genesis.autograd.node_names import node_name, qualified_name
from genesis.ndarray import NDArray

#: The tensor class outputs are wrapped in (``genesis.Tensor``), set once by :func:`set_tensor_type`.
Tensor: Any = None


def set_tensor_type(cls: type) -> None:
    """Register the tensor class the engine wraps results in (called once, by the binding step of the op layer)."""
    global Tensor
    Tensor = cls


#: True while a profile records (``genesis.profiler``) or a forward-AD level is open: ``Function.apply`` and the engine
#: check it once per op.
_profiling = False
#: The interceptor while ``_profiling``: ``claims()`` says whether the op entering ``apply`` is to be intercepted (not
#: when it is the interceptor's own call running that op), ``record_op(cls, args, kwargs)`` runs it, and
#: ``recorder(name, inputs, run, *args)`` runs a backward node. The profiler's recorder, or forward AD's, which hands
#: on to the profiler's (``profiler_recorder``) what it does not handle itself.
_recorder: Any = None
profiler_recorder: Any = None
_forward_ad: Any = None


#: The open ``genesis.autograd.graph.saved_tensors_hooks`` blocks, innermost last (process-wide). While it is not
#: empty, a recorded op that saves values hands its ctx to the innermost block's ``pack`` (one check per such op).
saved_tensors_hooks_stack: list[Any] = []


def set_recorder(recorder: Any) -> None:
    """Install the profiler's recorder (None removes it and turns the check in ``Function.apply`` off)."""
    global profiler_recorder
    profiler_recorder = recorder
    _install_interceptor()


def set_forward_ad(interceptor: Any) -> None:
    """Install forward AD's interceptor while a dual level is open (None removes it); see ``_recorder``."""
    global _forward_ad
    _forward_ad = interceptor
    _install_interceptor()


def _install_interceptor() -> None:
    global _profiling, _recorder
    _recorder = _forward_ad if _forward_ad is not None else profiler_recorder
    _profiling = _recorder is not None


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
    """A node of the backward graph; ``next_functions`` lists ``(node, output_nr)`` per tensor input."""

    _edges: tuple = ()  # (node, output_nr) per argument of the recorded call, (None, 0) where it is no tensor
    _n_outputs = 1  # how many outputs the recorded call returned (the gradients backward receives)
    _released = False
    _output_hooks: dict[int, list[Callable]] | None = None  # tensor hooks of this node's outputs, by output number
    _retain_hooks: dict[int, Callable] | None = None  # retain_grad of outputs: run after the other hooks
    _pre_hooks: list[Callable] | None = None
    _post_hooks: list[Callable] | None = None
    _seq = 0  # creation order of a recorded op's node: backward runs the latest-made ready node first, as torch

    def name(self) -> str:
        return qualified_name(type(self).__name__)

    @property
    def next_functions(self) -> tuple:
        """``(node, output_nr)`` for each tensor input of the recorded call (``(None, 0)`` where that input needs no
        gradient), as torch lists them: arguments that are not tensors have no entry."""
        meta = getattr(self, "_input_meta", None)
        if meta is None:
            return self._edges
        return tuple([edge for edge, m in zip(self._edges, meta) if m is not None])

    def register_hook(self, hook: Callable) -> RemovableHandle:
        """Call ``hook(grad_inputs, grad_outputs)`` after this node's backward, with the gradients of its tensor
        inputs; a returned tuple replaces them (torch semantics)."""
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
    _seq = 1 << 64  # torch's highest priority: a leaf's gradient is accumulated as soon as it is complete

    def __init__(self, variable: Any) -> None:
        self.variable = variable


class BackwardCtx(Node):
    """Context of one recorded op: saved tensors, flags and links to the input nodes.

    Each Function class records its calls in a subclass of its own, made once with the class and named as torch
    names the node (``MulBackward0``; see ``node_names.py``): ``type(y.grad_fn).__name__`` and ``y.grad_fn.name()``.
    """

    # Defaults live on the class (immutable values): one ctx is built per recorded op, so its __init__ sets only
    # what differs per op.
    _saved: tuple = ()
    _saved_versions: tuple = ()
    _output_nrs: tuple = ()  # per saved value: the index of the output holding it, or None
    _inputs: tuple = ()
    _outputs: tuple = ()
    needs_input_grad: tuple[bool, ...] = ()
    non_differentiable: tuple = ()
    dirty_tensors: tuple = ()  # inputs forward changed in place (``mark_dirty``)
    forward_saved: tuple = ()  # tensors kept for ``jvp`` (``save_for_forward``)
    materialize_grads = True
    _packed: Any = None  # the saved values as saved_tensors_hooks packed them (genesis.autograd.graph), if any
    _fn: type | None = None  # the Function class whose call this node records (set on each node class)

    def save_for_backward(self, *values: Any) -> None:
        """Keep tensors (or NDArrays of inputs/outputs) for backward; in-place changes to them are detected."""
        self._saved = values

    def mark_non_differentiable(self, *outputs: Any) -> None:
        """Declare outputs that never receive gradients (e.g. indices)."""
        self.non_differentiable = outputs

    def mark_dirty(self, *tensors: Any) -> None:
        """Declare inputs that forward changed in place; forward must return each of them (see
        :func:`_adopt_dirty`)."""
        self.dirty_tensors = tensors

    def save_for_forward(self, *tensors: Any) -> None:
        """Keep tensors for the Function's ``jvp`` (forward-mode AD, :mod:`genesis.autograd.forward_ad`)."""
        self.forward_saved = tensors

    def set_materialize_grads(self, value: bool) -> None:
        """Whether backward receives zeros (True, the default) or None for outputs that got no gradient."""
        self.materialize_grads = value

    @property
    def saved_tensors(self) -> tuple:
        """The saved values as Tensors, after checking none was modified in place since it was saved."""
        if self._check_saved():
            return self._packed.unpack(self)
        return tuple([self._as_tensor(value) for value in self._saved])

    def saved_arrays(self) -> tuple:
        """The saved values with Tensors as their NDArrays, after the checks of ``saved_tensors``: for a backward
        that computes on arrays (no graph recorded), without wrapping each saved array in a Tensor first."""
        if self._check_saved():
            return tuple([v.ndarray if isinstance(v, Tensor) else v for v in self._packed.unpack(self)])
        return tuple([v.ndarray if isinstance(v, Tensor) else v for v in self._saved])

    def _check_saved(self) -> bool:
        """Raise if the saved values were freed or one was modified in place since it was saved; True when they were
        packed by saved-tensor hooks (to be unpacked)."""
        if self._released:
            raise RuntimeError(
                "Trying to backward through the graph a second time (or directly access saved tensors after they "
                "have already been freed). Saved intermediate values of the graph are freed when you call "
                ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
                "graph a second time or if you need to access saved tensors after calling backward."
            )
        if self._packed is not None:
            return True
        for value, version in zip(self._saved, self._saved_versions):
            if version is not None and version[0][0] != version[1]:
                tensor = self._as_tensor(value)
                producer = f", which is output {tensor._output_nr} of {tensor.grad_fn.name()}," \
                    if tensor.grad_fn is not None else ","
                raise RuntimeError(
                    "one of the variables needed for gradient computation has been modified by an inplace "
                    f"operation: [{tensor.dtype}{list(tensor.shape)}]{producer} is at version {version[0][0]}; "
                    f"expected version {version[1]} instead. (needed by {self.name()})"
                )
        return False

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
        for saved, nr in zip(self._saved, self._output_nrs):
            if saved is value and nr is not None:
                # An output the program dropped: this node as its history unless it is not differentiable (as torch).
                t = Tensor._wrap(value)
                if value.dtype.category >= 2 and not any(value is getattr(n, "ndarray", n)
                                                         for n in self.non_differentiable):
                    t._requires_grad, t._grad_fn, t._output_nr = True, self, nr
                return t
        return Tensor._wrap(value)

    def _record_versions(self, outputs: tuple) -> None:
        """Remember, per saved value, the version counter of the input or output holding it and its version now;
        keep only the inputs that hold saved values (unless the Function ``keeps_inputs``)."""
        versions, nrs = [], []
        inputs = self._inputs
        held = []  # the inputs holding saved values: what _as_tensor maps saved arrays back to
        for value in self._saved:
            holder = nr = None
            if value.__class__ is NDArray:
                for t in inputs:  # inputs first: an input holding the value is preferred
                    if isinstance(t, Tensor) and t.ndarray is value:
                        holder = t
                        held.append(t)
                        break
                else:
                    for i, t in enumerate(outputs):
                        if isinstance(t, Tensor) and t.ndarray is value:
                            holder, nr = t, i
                            break
            elif isinstance(value, Tensor):  # a Tensor holds itself; None and other values have no version
                holder = value
            if holder is not None and holder._inference:
                raise RuntimeError("Inference tensors cannot be saved for backward. Please do not use "
                                   "Tensors created in inference mode in computation tracked by autograd. To work "
                                   "around this, you can make a clone to get a normal tensor and use it in autograd, "
                                   "or use `torch.no_grad()` instead of `torch.inference_mode()`.")
            versions.append((holder._vc, holder._vc[0]) if holder is not None else None)
            nrs.append(nr)
        self._saved_versions = tuple(versions)
        self._output_nrs = tuple(nrs)
        if not self._fn.keeps_inputs:
            self._inputs = tuple(held)

    def _snapshot_saved(self, target: Any) -> None:
        """Before ``target`` is overwritten by this node's own in-place op, keep a copy of it where it was saved.

        The copy carries ``target``'s history, so double backward still differentiates through the old value.
        """
        if self._packed is not None:
            self._packed.replace(self, target)
            return
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
        self._packed = None
        self._inputs = ()
        self._released = True


class _NoGradCtx:
    """Stand-in ctx for forward passes that record nothing: saving is a no-op."""

    needs_input_grad: tuple = ()
    materialize_grads = True
    dirty_tensors: tuple = ()

    def _ignore(self, *values: Any) -> None:
        """Saving values and setting flags: nothing to keep when nothing is recorded."""

    save_for_backward = save_for_forward = mark_non_differentiable = set_materialize_grads = _ignore

    def mark_dirty(self, *tensors: Any) -> None:
        self.dirty_tensors = tensors  # a fresh ctx per call of a Tensor-level forward (primitives never mark)


_NO_GRAD_CTX = _NoGradCtx()


class Function:
    """Base class of differentiable operations (``genesis.autograd.Function``, as ``torch.autograd.Function``).

    Subclasses define static ``forward(ctx, *args)`` and ``backward(ctx, *grads)`` and are called through
    ``apply``. ``forward`` receives Tensors, runs without recording, and returns Tensors; ``backward`` receives
    one gradient per output and returns one gradient (or None) per input of ``forward``. As in torch >= 2.0, a
    subclass may instead define ``forward(*args)`` without ctx plus ``setup_context(ctx, inputs, output)``, which
    fills the ctx from forward's inputs (its defaults bound) and output.
    """

    #: Built-in primitives set this: their forward receives and returns NDArrays, which is cheaper.
    takes_ndarrays = False
    #: View primitives set this: an output over the input's memory shares its version counter and base (an op that
    #: may return a copy instead, as reshape, sets it too).
    is_view = False
    #: Whether a recorded call keeps all its input Tensors until backward (a backward that recomputes from them under
    #: ``create_graph``, as the autocast-folded linear and convolution). Otherwise the node keeps only the inputs
    #: holding values it saved: an intermediate that no node saved is freed as soon as the program drops it, as in
    #: torch (a ResNet-50 step's peak held every batch-norm output before).
    keeps_inputs = False
    #: Whether forward takes no ctx and ``setup_context`` fills it (torch >= 2.0's style): decided once per class.
    _new_style = False
    #: torch's flag for ``torch.func.vmap`` rules; Genesis's vmap runs the function per sample, so it is not read.
    generate_vmap_rule = False
    #: The graph node class recording this class's calls, made once per subclass and named as torch's node
    #: (``MulBackward0``, a user's ``MyFnBackward``).
    _node_type: type[BackwardCtx]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # As torch: the new style is a subclass that overrides setup_context.
        cls._new_style = cls.setup_context is not Function.setup_context
        name = node_name(cls)
        cls._node_type = type(name, (BackwardCtx,), {"_fn": cls, "__module__": __name__, "__qualname__": name})

    @staticmethod
    def forward(ctx: Any, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple, output: Any) -> None:
        """Fill ``ctx`` from forward's ``inputs`` and ``output`` (new style only: forward then takes no ctx)."""
        raise NotImplementedError

    @staticmethod
    def vmap(info: Any, in_dims: Any, *args: Any) -> Any:
        """torch's batching rule hook; Genesis's vmap runs the function per sample and never calls it."""
        raise NotImplementedError

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> Any:
        raise NotImplementedError

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Any:
        if _profiling and _recorder.claims():
            return _recorder.record_op(cls, args, kwargs)
        # One pass over the arguments: unwrap Tensors to NDArrays and see whether any of them requires grad.
        record = False
        raw = []
        for a in args:
            if isinstance(a, Tensor):
                if a._requires_grad:
                    record = True
                raw.append(a.ndarray)
            else:
                raw.append(a)
        if record and _state.enabled and not _state.inference:  # inference mode records nothing, grad mode or not
            return _apply_recorded(cls, args, raw, kwargs)
        if not cls.takes_ndarrays:
            if cls._new_style:
                args, kwargs = _bind_defaults(cls, args, kwargs)
            ctx = _NoGradCtx()
            out = _run_forward(cls, ctx, args, kwargs)
            if ctx.dirty_tensors:
                _check_dirty_returned(ctx.dirty_tensors, out)
            return _detach_outputs(out, ctx.dirty_tensors)
        # The hot path of every op without autograd: unwrap, compute, wrap; nothing else.
        out = cls.forward(_NO_GRAD_CTX, *raw, **kwargs)
        if out.__class__ is not NDArray:
            outputs = _wrap_outputs(out, None)
            if cls.is_view:
                _share_base(outputs, args[0], recorded=False)
            return outputs
        t = Tensor._wrap(out)
        if cls.is_view and out.buffer is raw[0].buffer:
            t._vc = args[0]._vc
            t._base = args[0] if args[0]._base is None else args[0]._base
        return t


_sequence = itertools.count(1)  # the creation number of each recorded node (Node._seq)


def _apply_recorded(cls: type[Function], args: tuple, raw: list, kwargs: dict) -> Any:
    """``cls.apply`` when the op is recorded: run forward with a fresh ctx, then link it into the graph."""
    if cls._new_style:
        args, kwargs = _bind_defaults(cls, args, kwargs)
    ctx = cls._node_type()
    ctx._seq = next(_sequence)
    ctx._inputs = args
    # One pass over the inputs: which need a gradient, the edges to their nodes (taken before forward, as torch's)
    # and the metadata their gradients are checked against.
    needs, edges, meta = [], [], []
    for a in args:
        if isinstance(a, Tensor):
            nd = a.ndarray
            meta.append((nd.shape, nd.dtype, nd.device))
            if a._requires_grad:
                needs.append(True)
                edges.append(_edge(a))
                continue
        else:
            meta.append(None)
        needs.append(False)
        edges.append(_NO_EDGE)
    ctx.needs_input_grad = tuple(needs)
    ctx._edges = tuple(edges)
    ctx._input_meta = tuple(meta)
    if cls.takes_ndarrays:
        out = cls.forward(ctx, *raw, **kwargs)
    else:
        returned = _run_forward(cls, ctx, args, kwargs)
        dirty = ctx.dirty_tensors
        if dirty:
            _check_dirty_returned(dirty, returned)
        out = _unwrap_outputs(returned)
        # Tensors created inside forward (and inputs it changed in place, now outputs) are saved by memory, so they
        # map to the recorded outputs.
        ctx._saved = tuple(v.ndarray if isinstance(v, Tensor) and (not any(v is a for a in args)
                                                                   or any(v is d for d in dirty)) else v
                           for v in ctx._saved)
    outputs = _wrap_outputs(out, ctx)
    if ctx.dirty_tensors:
        outputs = _adopt_dirty(ctx, outputs)
    if ctx._saved:
        if saved_tensors_hooks_stack:
            saved_tensors_hooks_stack[-1].pack(ctx)
        else:
            ctx._record_versions(outputs if isinstance(outputs, tuple) else (outputs,))
    elif not cls.keeps_inputs:
        ctx._inputs = ()  # nothing saved: the node holds no input alive (see ``Function.keeps_inputs``)
    if cls.is_view:
        _share_base(outputs, args[0], recorded=True)
    return outputs


def _check_dirty_returned(dirty: tuple, returned: Any) -> None:
    """torch's error where forward marked an input dirty (``ctx.mark_dirty``) but did not return it."""
    outs = returned if isinstance(returned, tuple) else (returned,)
    if not all(any(o is d for o in outs) for d in dirty):
        raise RuntimeError("Some elements marked as dirty during the forward method were not returned as output. The "
                           "inputs that are modified inplace must all be outputs of the Function.")


def _adopt_dirty(ctx: BackwardCtx, outputs: Any) -> Any:
    """The recorded outputs with each input forward changed in place (``ctx.mark_dirty``) in its output's place, as
    torch: the input tensor itself, its version moved on and, where the output is differentiable, ``ctx`` as its
    history (a view's base records the write, as after a built-in in-place op)."""
    single = not isinstance(outputs, tuple)
    wrapped = [outputs] if single else list(outputs)
    dirty = ctx.dirty_tensors
    for d in dirty:
        base = d._base
        if d._requires_grad and d._grad_fn is None:
            raise RuntimeError("a leaf Variable that requires grad has been used in an in-place operation.")
        if base is not None and base._requires_grad and base._grad_fn is None:
            raise RuntimeError("a view of a leaf Variable that requires grad is being used in an in-place operation.")
    for i, new in enumerate(wrapped):
        d = next((d for d in dirty if isinstance(new, Tensor) and d.ndarray is new.ndarray), None)
        if d is None:
            continue
        d._bump_version()
        if new._grad_fn is ctx:
            take_history(d, new)
            record_write_through_view(d)
        wrapped[i] = d
    # The dirty inputs are outputs now: the node reaches them (and what it saved of them) through its outputs only,
    # so it holds no reference to a tensor whose history it is.
    ctx._inputs = tuple(None if any(a is d for d in dirty) else a for a in ctx._inputs)
    return wrapped[0] if single else tuple(wrapped)


def _bind_defaults(cls: type[Function], args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """New style: forward's arguments with its defaults filled in, as torch binds them (so ``setup_context``'s
    inputs, ``needs_input_grad`` and the gradients backward returns count every parameter of forward)."""
    bound = inspect.signature(cls.forward).bind(*args, **kwargs)
    bound.apply_defaults()
    return bound.args, bound.kwargs


def _run_forward(cls: type[Function], ctx: Any, args: tuple, kwargs: dict) -> Any:
    """Run a Tensor-level forward without recording, in either style (the new one then calls setup_context)."""
    with no_grad():
        if not cls._new_style:
            return cls.forward(ctx, *args, **kwargs)
        out = cls.forward(*args, **kwargs)
        cls.setup_context(ctx, args, out)
    return out


def _share_base(outputs: Any, source: Any, recorded: bool) -> None:
    """Outputs of a view op that look into ``source``'s memory share its version counter and base (an op that may
    return a copy instead, as reshape, leaves those alone); ``recorded`` notes the version their history is of."""
    for t in outputs if isinstance(outputs, tuple) else (outputs,):
        if isinstance(t, Tensor) and t.ndarray.buffer is source.ndarray.buffer:
            t._vc = source._vc
            t._base = source if source._base is None else source._base
            if recorded:
                t._view_version = t._vc[0]


class Primitive(Function):
    """A built-in op: forward receives and returns NDArrays."""

    takes_ndarrays = True


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
        return Tensor._wrap(NDArray.full(grad.shape, 0, grad.dtype, grad.device)), None


class _DelayedError(Function):
    """Passes values through; its backward raises: the history ``once_differentiable`` gives a backward's results."""

    @staticmethod
    def forward(ctx: Any, *values: Any) -> tuple:
        return values

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> tuple:
        raise RuntimeError("trying to differentiate twice a function that was marked with @once_differentiable")


def once_differentiable(fn: Callable) -> Callable:
    """Decorate a Function's ``backward`` that is not itself differentiable (``torch.autograd.function``'s).

    The backward runs under ``no_grad``; when a double backward is being recorded (grad mode on, some gradient
    requiring grad), its results get a history whose backward raises, so differentiating them again is an error
    rather than silently wrong.
    """
    @functools.wraps(fn)
    def wrapper(ctx: Any, *args: Any, **kwargs: Any) -> Any:
        with no_grad():
            outputs = fn(ctx, *args, **kwargs)
        if not _state.enabled or _state.inference or not any(isinstance(a, Tensor) and a.requires_grad for a in args):
            return outputs
        single = not isinstance(outputs, tuple)
        values = [o.detach().requires_grad_(True) if isinstance(o, Tensor) and o.is_floating_point() else o
                  for o in ((outputs,) if single else outputs)]
        guarded = _DelayedError.apply(*values)
        return guarded[0] if single else guarded

    return wrapper


# ------------------------------------------------------------------------ in-place changes through views

def view_positions(view: NDArray, base: NDArray) -> NDArray:
    """Flat indices, in ``base``'s logical order, of every element of ``view`` (both over the same buffer)."""
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
        # Tensor methods, bound by the op layer above: this layer imports no op.
        flat = grad.reshape(-1)
        grad_value = flat._index_nd((ctx.positions,)) if ctx.needs_input_grad[1] else None
        grad_base = flat.index_put((ctx.positions,), 0.0).reshape(grad.shape) \
            if ctx.needs_input_grad[0] else None
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
        base_shape = ctx._input_meta[0][0]
        zeros = Tensor._wrap(NDArray.full((math.prod(base_shape),), 0, grad.dtype, grad.device))
        scattered = zeros.index_put((ctx.positions,), grad, accumulate=True)
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


def record_write_through_view(t: Any) -> None:
    """After ``t`` took the history of an in-place write: where ``t`` views a base, the base's history runs through
    the write too (``CopySlices``) and ``t`` reads the base anew."""
    base = t._base
    if base is None or base.ndarray.buffer is not t.ndarray.buffer:
        return
    t._view_version = t._vc[0]  # the history just taken is current
    positions = view_positions(t.ndarray, base.ndarray)
    take_history(base, CopySlices.apply(base, t, positions))
    refresh_view_history(t, positions)


def refresh_view_history(view: Any, positions: NDArray | None = None) -> None:
    """Give a view whose base changed in place since the view's history was recorded a history through the base."""
    base = view._base
    if base.ndarray.buffer is not view.ndarray.buffer:
        return
    if positions is None:
        positions = view_positions(view.ndarray, base.ndarray)
    with enable_grad():  # the history is rebuilt whatever the grad mode (backward may run under no_grad)
        take_history(view, ViewOfBase.apply(base, view.ndarray, positions))
    view._view_version = view._vc[0]


def warn_non_leaf_grad() -> None:
    """torch's warning when the ``.grad`` of a non-leaf tensor that does not retain its gradient is read."""
    warnings.warn("The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad attribute "
                  "won't be populated during autograd.backward(). If you indeed want the .grad field to be populated "
                  "for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. If you access the non-leaf "
                  "Tensor by mistake, make sure you access the leaf Tensor instead.", UserWarning, stacklevel=3)


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


#: The edge of an input that receives no gradient (shared: one tuple for all).
_NO_EDGE = (None, 0)


def _edge(a: Any) -> tuple[Node | None, int]:
    if not isinstance(a, Tensor) or not a._requires_grad:
        return _NO_EDGE
    if a._base is not None and a._view_version != a._vc[0] and a._base.requires_grad:
        refresh_view_history(a)
    if a._grad_fn is not None:
        return (a._grad_fn, a._output_nr)
    return (a._accumulator(), 0)


def _unwrap_outputs(out: Any) -> Any:
    if isinstance(out, tuple):
        return tuple(o.ndarray if isinstance(o, Tensor) else o for o in out)
    return out.ndarray if isinstance(out, Tensor) else out


def _detach_outputs(out: Any, dirty: tuple = ()) -> Any:
    """Outputs of an unrecorded Tensor-level forward as new tensors; an input it changed in place (``dirty``) is
    returned itself, its version moved on."""
    def one(o: Any) -> Any:
        if not isinstance(o, Tensor):
            return o
        if dirty and any(o is d for d in dirty):
            o._bump_version()
            return o
        return Tensor._wrap(o.ndarray)

    return tuple(one(o) for o in out) if isinstance(out, tuple) else one(out)


def _wrap_outputs(out: Any, ctx: BackwardCtx | None) -> Any:
    if ctx is None:
        if isinstance(out, NDArray):
            return Tensor._wrap(out)
        return tuple(Tensor._wrap(o) if isinstance(o, NDArray) else o for o in out)
    non_diff = ctx.non_differentiable
    if out.__class__ is NDArray and not non_diff:
        # The common case, one output: the loop below without its lists.
        t = Tensor._wrap(out)
        if out.dtype.category >= 2:  # floating or complex
            t._requires_grad = True
            t._grad_fn = ctx
        ctx._outputs = (weakref.ref(t),)
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
        differentiable = o.dtype.category >= 2 and not any(o is n or getattr(n, "ndarray", None) is o
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
