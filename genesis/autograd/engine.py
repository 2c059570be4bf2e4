"""The backward engine: :func:`run_backward` counts, for every reachable node, how many gradients it waits for, then
visits each node exactly once in topological order, sums incoming gradients, calls the node's backward and frees its
saved tensors unless ``retain_graph``. :func:`backward` and :func:`grad` are torch's entry points.
"""

from __future__ import annotations

import itertools
from heapq import heapify, heappop, heappush
from typing import Any, Callable, Sequence

from genesis.autograd import anomaly_mode
from genesis.autograd import function as _fn
from genesis.autograd.function import AccumulateGrad, BackwardCtx, Node, _edge
from genesis.autograd.grad_mode import _state
from genesis.memory_format import contiguous_format, is_dense
from genesis.ndarray import NDArray

# ------------------------------------------------------------------------ the engine

_depth = 0  # how many backward passes are running (a hook may start another)
_callbacks: list[Callable[[], None]] = []
#: The running backward passes, innermost last: (id, roots, dependency counts, the nodes that run where only some
#: inputs' gradients are asked for, else None), for :func:`current_graph_task_id` and :func:`will_execute`.
_tasks: list[tuple[int, list, dict, set | None]] = []
_task_ids = itertools.count()


def queue_callback(callback: Callable[[], None]) -> None:
    """Run ``callback()`` once the running backward pass has finished (torch's
    ``Variable._execution_engine.queue_callback``): DistributedDataParallel waits for its last gradient buckets there.
    """
    if _depth == 0:
        raise RuntimeError("queue_callback: callbacks can only be queued while a backward pass runs")
    _callbacks.append(callback)

def current_graph_task_id() -> int:
    """An id of the innermost running backward pass, unique in the process, or -1 outside backward (torch's
    ``torch._C._current_graph_task_id``): hooks tell one pass from the next by it."""
    return _tasks[-1][0] if _tasks else -1


def is_checkpoint_valid() -> bool:
    """Whether the running backward pass may run a reentrant checkpoint (torch's ``_is_checkpoint_valid``): none
    runs, or a plain ``backward()`` does, not ``autograd.grad`` or ``backward(inputs=...)``, whose gradients a
    recomputed graph cannot deliver."""
    return not _tasks or _tasks[-1][3] is None


def will_execute(node: Node) -> bool:
    """Whether the innermost running backward pass runs ``node`` (torch's ``torch._C._will_engine_execute_node``):
    every node reachable from the outputs, or, where only some inputs' gradients are asked for, the nodes on their
    way."""
    if not _tasks:
        raise RuntimeError("will_execute: only valid while a backward pass runs")
    _, roots, deps, needed = _tasks[-1]
    return node in needed if needed is not None else (node in deps or node in roots)


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
        for nxt, _ in node._edges:
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
        buf = buffers.setdefault(node, [None] * node._n_outputs)
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
    # Ready nodes by priority, as torch's ready queue: the node made last first (leaves' accumulation before all),
    # ties in the order they became ready.
    ready = [(-n._seq, i, n) for i, n in enumerate(roots) if deps.get(n, 0) == 0]
    heapify(ready)
    order = itertools.count(len(ready))
    # Grad mode is create_graph while backward runs (set_grad_enabled's effect, without building its object).
    prev_mode = _state.enabled
    _state.enabled = create_graph
    global _depth
    _depth += 1
    _tasks.append((next(_task_ids), roots, deps, needed if inputs is not None else None))
    try:
        while ready:
            node = heappop(ready)[2]
            grads = buffers.pop(node, None) or [None]
            if inputs is not None and node not in needed:
                # No gradient asked for goes through this node: as in torch, it does not run, nor do its hooks.
                in_grads: tuple = (None,) * len(node._edges)
            else:
                if node._output_hooks or node._retain_hooks:
                    grads = [_run_output_hooks(node, i, g) for i, g in enumerate(grads)]
                if node._pre_hooks:
                    grads = _run_prehooks(node, grads)
                if captures:
                    if node.__class__ is AccumulateGrad and node.variable._hooks and grads[0] is not None:
                        grads = [_run_hooks(node.variable._hooks, grads[0])]  # a leaf's hooks run before capture
                    for i, g in enumerate(grads):
                        k = captures.get((node, i))
                        if k is not None:
                            results[k] = g
                if node.__class__ is AccumulateGrad:
                    if inputs is None:
                        _accumulate_leaf(node.variable, grads[0], create_graph, handed)
                        for hook in node._post_hooks or ():  # a leaf node's hooks see () and its gradient
                            hook((), tuple(grads))
                    continue
                if _fn._profiling:
                    in_grads = _fn._recorder(node.name(), grads, _call_backward, node, grads, retain_graph,
                                             create_graph)
                else:
                    in_grads = _call_backward(node, grads, retain_graph, create_graph)
                if anomaly_mode._enabled:
                    anomaly_mode.check_gradients(node.name(), in_grads)
            for (nxt, idx), g in zip(node._edges, in_grads):
                if nxt is None:
                    continue
                # Sum the gradient into nxt's buffer (inlined: this runs once per edge of the graph).
                buf = buffers.get(nxt)
                if buf is None:
                    buf = buffers[nxt] = [None] * nxt._n_outputs
                if g is not None:
                    old = buf[idx]
                    buf[idx] = g if old is None else old + g
                left = deps[nxt] - 1
                deps[nxt] = left
                if left == 0:
                    heappush(ready, (-nxt._seq, next(order), nxt))
        if _depth == 1:
            while _callbacks:
                _callbacks.pop(0)()
    finally:
        _state.enabled = prev_mode
        _depth -= 1
        _tasks.pop()
        if _depth == 0:
            _callbacks.clear()  # a failed pass drops its callbacks
    if inputs is None:
        return None
    for k, r in enumerate(results):
        if r is None and not allow_unused:
            raise RuntimeError(
                f"The differentiated Tensor at index {k} appears to not have been used in the graph. "
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
                stack.extend(n for n, _ in node._edges if n is not None and n not in state)
                continue
            stack.pop()
            if state[node]:
                continue
            state[node] = True
            if node in targets or any(n in result for n, _ in node._edges if n is not None):
                result.add(node)
    return result


def _run_hooks(hooks: Sequence[Callable], g: Any) -> Any:
    """Call tensor hooks in order; a hook's returned tensor (of the same shape and type) replaces the gradient."""
    for hook in hooks:
        new = hook(g)
        if new is not None:
            if not isinstance(new, _fn.Tensor):
                raise TypeError(f"expected Variable, but hook returned '{type(new).__name__}'")
            name = getattr(hook, "__name__", type(hook).__name__)
            if new.dtype is not g.dtype or new.device != g.device:
                raise RuntimeError(f"hook '{name}' has changed the type of value (was {g.type()} got {new.type()})")
            if new.shape != g.shape:
                raise RuntimeError(f"hook '{name}' has changed the size of value")
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
                grads[i] = _fn.Tensor._wrap(NDArray.full(shape, 0, dtype, device))
    out = node._fn.backward(node, *grads)
    if not isinstance(out, tuple):
        out = (out,)
    edges = node._edges
    if len(out) < len(edges):
        raise RuntimeError(f"function {node.name()} returned an incorrect number of gradients "
                           f"(expected {len(edges)}, got {len(out)})")
    result = []
    tensor = _fn.Tensor
    for (nxt, _), g, meta in zip(edges, out, node._input_meta):
        if g is None or nxt is None:
            result.append(None)
            continue
        cls = g.__class__
        if cls is NDArray:
            if g.dtype is not meta[1] and g.shape == meta[0]:
                g = g.astype(meta[1])  # widened as an array: no Tensor-level cast (a broadcast one is summed first)
            g = tensor._wrap(g)
        elif cls is not tensor and g.is_sparse:
            # A sparse gradient (Embedding(sparse=True)) reaches a leaf as it is; any other node gets it dense.
            result.append(g if nxt.__class__ is AccumulateGrad else g.to_dense())
            continue
        # Compare the NDArray's metadata: Tensor.shape would build a Size per gradient.
        nd = g.ndarray
        if nd.shape != meta[0]:
            g = _sum_to_shape(g, meta[0])
        if nd.dtype is not meta[1]:
            g = g.to(meta[1])
        result.append(g)
    if node._post_hooks:
        _run_post_hooks(node, result, grads)
    if not retain_graph:
        node._release()
    return tuple(result)


def _run_post_hooks(node: BackwardCtx, result: list, grads: list) -> None:
    """Run ``node``'s hooks on the gradients of its tensor inputs (torch's ``grad_inputs``); a hook's returned
    gradients replace them in ``result``."""
    slots = [i for i, meta in enumerate(node._input_meta) if meta is not None]
    grad_inputs = tuple(result[i] for i in slots)
    for hook in node._post_hooks:
        new = hook(grad_inputs, tuple(grads))
        if new is None:
            continue
        new = tuple(new) if isinstance(new, (tuple, list)) else (new,)
        if len(new) != len(slots):
            raise RuntimeError(f"hook '{getattr(hook, '__name__', hook)}' has returned an incorrect number of values "
                               f"(got {len(new)}, but expected {len(slots)})")
        grad_inputs = new
    for i, g in zip(slots, grad_inputs):
        result[i] = g


def _accumulate_leaf(t: Any, g: Any, create_graph: bool, handed: set[int], run_hooks: bool = True) -> None:
    """Add ``g`` into ``t.grad`` (after ``t``'s hooks unless ``run_hooks`` is False). A new ``.grad`` never aliases
    a gradient handed elsewhere in this run."""
    if g is None:
        return
    if run_hooks and t._hooks:
        g = _run_hooks(t._hooks, g)
    if not create_graph and (g._grad_fn is not None or g._requires_grad):
        g = g.detach()
    if _is_sparse(g) or (t._grad is not None and _is_sparse(t._grad)):
        _accumulate_sparse(t, g, create_graph, handed)
    elif t._grad is None:
        gn, tn = g.ndarray, t.ndarray
        owned = id(gn.buffer) not in handed and _obeys_layout(gn, tn)
        if owned or create_graph:
            t.grad = g
        elif is_dense(tn.shape, tn.strides):
            t.grad = g.new_empty_strided(tn.shape, tn.strides).copy_(g)  # laid out as the parameter
        else:
            t.grad = g.clone(memory_format=contiguous_format)
        handed.add(id(t.grad.ndarray.buffer))
    elif create_graph:
        t.grad = t.grad + g
    else:
        t.grad.ndarray.binary("add", g.ndarray.astype(t.grad.dtype), out=t.grad.ndarray)
        t.grad._vc[0] += 1
    for hook in t._post_accumulate_hooks or ():
        hook(t)


def _obeys_layout(g: NDArray, t: NDArray) -> bool:
    """Whether a gradient may become ``.grad`` as it is (torch's layout contract): laid out as the leaf (strides of
    size-one dims aside) where the leaf is dense in some dim order (row-major, channels_last...), else row-major."""
    if g.strides == t.strides:
        return t.is_contiguous() or is_dense(t.shape, t.strides)
    if is_dense(t.shape, t.strides):
        return all(gs == ts if n != 1 else gs != 0 for n, gs, ts in zip(g.shape, g.strides, t.strides))
    return g.is_contiguous()


def _is_sparse(g: Any) -> bool:
    """Whether a gradient is a sparse COO tensor (a Tensor subclass that reports ``is_sparse``)."""
    return g.__class__ is not _fn.Tensor and g.is_sparse


def _accumulate_sparse(t: Any, g: Any, create_graph: bool, handed: set[int]) -> None:
    """Add ``g`` into ``t.grad`` where either is sparse, as torch: sparse + sparse stays sparse (entries
    concatenated, uncoalesced), a dense gradient receives a sparse one in place, and a sparse gradient plus a dense
    one becomes dense."""
    if t._grad is None:
        owned = not _is_sparse(g) or id(g._values().ndarray.buffer) not in handed
        t.grad = g if owned or create_graph else g.clone()
    elif create_graph or _is_sparse(t._grad):
        t.grad = t._grad + g
    else:
        t._grad.ndarray.binary("add", g.to_dense().ndarray.astype(t._grad.dtype), out=t._grad.ndarray)
        t._grad._vc[0] += 1


def backward(tensors: Any, grad_tensors: Any = None, retain_graph: bool | None = None,
             create_graph: bool = False, inputs: Any = None) -> None:
    """Compute and accumulate gradients of ``tensors`` into the leaves' ``.grad`` (torch.autograd.backward)."""
    tensors = (tensors,) if isinstance(tensors, _fn.Tensor) else tuple(tensors)
    grads = _make_grads(tensors, grad_tensors)
    if retain_graph is None:
        retain_graph = create_graph
    if inputs is not None:
        inputs = (inputs,) if isinstance(inputs, _fn.Tensor) else tuple(inputs)
        result = run_backward(tensors, grads, retain_graph, create_graph, inputs, allow_unused=True)
        handed = {id(g.ndarray.buffer) for g in grads}
        for t, g in zip(inputs, result):
            # A non-leaf that retains its gradient got it from its retain_grad hook during the pass already.
            if g is not None and not (t._retains_grad and t._grad_fn is not None):
                _accumulate_leaf(t, g, create_graph, handed, run_hooks=False)  # they ran during the pass
        return
    run_backward(tensors, grads, retain_graph, create_graph)


def grad(outputs: Any, inputs: Any, grad_outputs: Any = None, retain_graph: bool | None = None,
         create_graph: bool = False, only_inputs: bool = True, allow_unused: bool | None = None,
         is_grads_batched: bool = False, materialize_grads: bool = False) -> tuple:
    """Return the gradients of ``outputs`` with respect to ``inputs`` without touching ``.grad``.

    As torch's: ``only_inputs`` is accepted and ignored (deprecated there too); with ``is_grads_batched`` the first
    dim of every ``grad_outputs`` entry is a batch of vectors, each propagated in turn (torch vectorizes this), and
    every gradient gets that leading dim.
    """
    outputs = (outputs,) if isinstance(outputs, _fn.Tensor) else tuple(outputs)
    inputs_t = (inputs,) if isinstance(inputs, _fn.Tensor) else tuple(inputs)
    for t in inputs_t:
        if not t.requires_grad:
            raise RuntimeError("grad: one of the differentiated Tensors does not require grad")
    if is_grads_batched:
        return _batched_grad(outputs, inputs_t, grad_outputs, retain_graph, create_graph, allow_unused,
                             materialize_grads)
    grads = _make_grads(outputs, grad_outputs)
    if retain_graph is None:
        retain_graph = create_graph
    allow = bool(allow_unused) or materialize_grads
    result = run_backward(outputs, grads, retain_graph, create_graph, inputs_t, allow_unused=allow)
    if materialize_grads:
        result = tuple(_fn.Tensor._wrap(NDArray.full(t.shape, 0, t.dtype, t.device)) if g is None else g
                       for t, g in zip(inputs_t, result))
    return result


def _batched_grad(outputs: tuple, inputs: tuple, grad_outputs: Any, retain_graph: bool | None, create_graph: bool,
                  allow_unused: bool | None, materialize_grads: bool) -> tuple:
    """``grad`` with ``is_grads_batched``: one pass per vector of the batch, results stacked along a new dim 0."""
    if grad_outputs is None:
        raise RuntimeError("grad: is_grads_batched=True needs grad_outputs with a leading batch dim")
    batch = (grad_outputs,) if isinstance(grad_outputs, _fn.Tensor) else tuple(grad_outputs)
    n = batch[0].shape[0]
    passes = []
    for i in range(n):
        vectors = tuple(g[i] if g is not None else None for g in batch)
        passes.append(grad(outputs, inputs, vectors, True if i < n - 1 else retain_graph, create_graph,
                           allow_unused=allow_unused, materialize_grads=materialize_grads))
    result = []
    for k in range(len(inputs)):
        column = [p[k] for p in passes]
        if any(g is None for g in column):
            result.append(None)
            continue
        # Stacked through Tensor methods (this layer imports no op); under create_graph the writes are recorded.
        stacked = column[0].new_zeros((n,) + tuple(column[0].shape))
        for i, g in enumerate(column):
            stacked[i] = g
        result.append(stacked)
    return tuple(result)


def _make_grads(outputs: Sequence[Any], grad_outputs: Any) -> list:
    if grad_outputs is None or isinstance(grad_outputs, _fn.Tensor):
        grad_outputs = [grad_outputs] * len(outputs) if grad_outputs is None else [grad_outputs]
    grad_outputs = list(grad_outputs)
    for g in grad_outputs:
        if g is not None and not isinstance(g, _fn.Tensor):
            raise TypeError(f"gradients can be either Tensors or None, but got {type(g).__name__}")
    if len(grad_outputs) != len(outputs):
        raise RuntimeError(f"got {len(outputs)} tensors and {len(grad_outputs)} gradients")
    result = []
    for i, (out, g) in enumerate(zip(outputs, grad_outputs)):
        if not isinstance(out, _fn.Tensor):
            raise TypeError(f"tensors to differentiate must be Tensors, but element {i} is a {type(out).__name__}")
        if not out.requires_grad:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
        if g is None:
            nd = out.ndarray
            if nd.size != 1:
                raise RuntimeError(
                    f"grad can be implicitly created only for scalar outputs (got an output of shape "
                    f"{tuple(out.shape)})"
                )
            g = _fn.Tensor._wrap(NDArray.full(nd.shape, 1, nd.dtype, nd.device))
        elif g.shape != out.shape:
            raise RuntimeError(
                f"Mismatch in shape: grad_output[0] has a shape of {tuple(g.shape)} and output[0] has a shape of "
                f"{tuple(out.shape)}."
            )
        elif g.device != out.device:
            raise RuntimeError(f"invalid gradient at index {i} - expected device {out.device} but got {g.device}")
        result.append(g)
    return result
