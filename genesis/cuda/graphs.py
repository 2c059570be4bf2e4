"""CUDA graphs for users: ``CUDAGraph``, the ``graph`` context manager and ``make_graphed_callables`` (torch's API).

A graph records the CUDA work of a piece of code once and replays it with one launch. A whole training step can be
captured (forward, backward, ``clip_grad_norm_``, the optimizer step) when it meets the rules of ``docs/gpu.md``
("Capturing a whole training step"): static shapes, inputs copied into static buffers, a few eager warm-up steps
first (kernels compile, plans and workspaces are created, the optimizer creates its state), no host reads of device
values inside, ``optimizer.zero_grad(set_to_none=True)`` before the capture so that the gradients live in the
graph's memory, and an optimizer built with ``capturable=True`` so that its step count lives on the device.
"""

from __future__ import annotations

import sys
from typing import Any, Callable

import genesis.cuda as cuda_api
from genesis import random as R
from genesis.autograd import Function
from genesis.autograd import grad as autograd_grad
from genesis.tensor import Tensor, empty_like, ones_like


def is_current_stream_capturing() -> bool:
    """True while a CUDA graph capture is in progress (torch's name)."""
    graphs = sys.modules.get("genesis._impl.cuda.graphs")
    return graphs is not None and graphs.capturing > 0


class CUDAGraph:
    """A captured sequence of CUDA work, replayed with one launch (``torch.cuda.CUDAGraph``).

    Capture with ``with genesis.cuda.graph(g): out = fn(static_input)``; then fill ``static_input`` in place and
    call ``g.replay()`` to recompute ``out`` in place. Run the code once before capturing (kernels compile and the
    allocator warms up on the first run). Inside the capture nothing may read device values on the host. Tensors
    created during capture live in the graph's private memory pool and are overwritten by every replay.

    Random numbers drawn inside the capture from the device's default generator (dropout, ``rand``) are new at
    every replay, as torch's: each replay takes the next counters of the generator, as the same code run eagerly
    would.
    """

    def __init__(self) -> None:
        cuda_api._runtime()
        from genesis._impl.cuda import graphs

        self._graph = graphs.Graph()
        self._generator: R.Generator | None = None
        self._consumed = 0
        self._last_bases: tuple[int, ...] = ()  # the counter bases of the last replay

    def capture_begin(self) -> None:
        self._generator = R.default_generator(f"cuda:{cuda_api.current_device()}")
        self._graph.capture_begin(((self._generator._seed, self._generator._offset),))

    def capture_end(self) -> None:
        self._graph.capture_end()
        self._consumed = self._graph.rng_consumed()[0]

    def replay(self) -> None:
        """Run the captured work again on the current stream (the host does not wait for it)."""
        bases: tuple[int, ...] = ()
        if self._consumed:
            bases = (self._generator._offset,)
            self._generator._offset += self._consumed
        self._replay_at(bases)

    def _replay_at(self, bases: tuple[int, ...]) -> None:
        """Replay drawing the random numbers of the counter ``bases`` (those of an earlier replay: the same
        numbers again)."""
        self._last_bases = bases
        self._graph.replay(bases)

    def reset(self) -> None:
        """Free the graph and its memory pool; the object can capture again."""
        self._graph.reset()

    def num_nodes(self) -> int:
        """The number of nodes (kernels, copies) in the captured graph."""
        return self._graph.num_nodes()


class graph:  # torch's name
    """``with genesis.cuda.graph(g):`` captures the CUDA work of the block into the :class:`CUDAGraph` ``g``.

    The device is synchronized first, the block runs on the graph's own stream, and the previous stream is current
    again afterwards. An exception inside the block abandons the capture and is re-raised.
    """

    def __init__(self, cuda_graph: CUDAGraph) -> None:
        self.cuda_graph = cuda_graph

    def __enter__(self) -> CUDAGraph:
        cuda_api.synchronize()
        self.cuda_graph.capture_begin()
        return self.cuda_graph

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is None:
            self.cuda_graph.capture_end()
            return
        try:
            self.cuda_graph.capture_end()
        except RuntimeError:
            pass  # the capture was invalidated by the error being raised
        self.cuda_graph.reset()


# ---------------------------------------------------------------- make_graphed_callables


def _flatten(out: Any) -> tuple[tuple[Tensor, ...], bool]:
    """(the output tensors, whether the callable returned one tensor rather than a tuple or list)."""
    if isinstance(out, Tensor):
        return (out,), True
    if isinstance(out, (tuple, list)) and all(isinstance(o, Tensor) for o in out):
        return tuple(out), False
    raise TypeError("make_graphed_callables: a callable must return a Tensor or a tuple of Tensors, got "
                    f"{type(out).__name__}")


def _grads(outputs: tuple[Tensor, ...], inputs: tuple[Tensor, ...], grad_outputs: list[Tensor],
           allow_unused: bool) -> tuple[Tensor | None, ...]:
    """The gradients of ``inputs`` (those requiring grad) from ``outputs`` (those requiring grad)."""
    outs = [o for o in outputs if o.requires_grad]
    wanted = [x for x in inputs if x.requires_grad]
    if not outs or not wanted:
        return ()
    return autograd_grad(outs, wanted, grad_outputs=grad_outputs, allow_unused=allow_unused)


def _graph_one(fn: Callable[..., Any], args: tuple[Tensor, ...], params: tuple[Tensor, ...], warmup: int,
               allow_unused: bool) -> Callable[..., Any]:
    """Warm up ``fn`` on ``args``, capture its forward and backward, and return the replaying callable."""
    if not all(isinstance(a, Tensor) for a in args):
        raise TypeError("make_graphed_callables: sample_args must hold only Tensors")
    inputs = args + params
    outputs = None
    for _ in range(warmup):  # kernels compile, plans and workspaces are made, the allocator fills
        outputs, _ = _flatten(fn(*args))
        _grads(outputs, inputs, [ones_like(o) for o in outputs if o.requires_grad], allow_unused)
    del outputs
    fwd_graph, bwd_graph = CUDAGraph(), CUDAGraph()
    with graph(fwd_graph):
        static_outputs, single = _flatten(fn(*args))
    static_grad_outputs = [empty_like(o) if o.requires_grad else None for o in static_outputs]
    with graph(bwd_graph):
        grads = iter(_grads(static_outputs, inputs, [g for g in static_grad_outputs if g is not None], allow_unused))
    static_grad_inputs = tuple(next(grads) if x.requires_grad else None for x in inputs)

    class Graphed(Function):
        @staticmethod
        def forward(ctx: Any, *values: Tensor) -> tuple[Tensor, ...]:
            for static, value in zip(args, values):
                if static.data_ptr() != value.data_ptr():
                    static.copy_(value)
            fwd_graph.replay()
            return tuple(o.detach() for o in static_outputs)

        @staticmethod
        def backward(ctx: Any, *grads_out: Tensor | None) -> tuple[Tensor | None, ...]:
            for static, g in zip(static_grad_outputs, grads_out):
                if static is not None and g is not None and static.data_ptr() != g.data_ptr():
                    static.copy_(g)
            bwd_graph.replay()
            # Copies: the static buffers are overwritten by the next replay, and a leaf's first gradient is
            # adopted as its .grad (the next accumulation would add into the buffer itself).
            return tuple(None if g is None else g.detach().clone() for g in static_grad_inputs)

    def replay(*values: Tensor) -> Any:
        if len(values) != len(args):
            raise TypeError(f"graphed callable: expected {len(args)} arguments (as sample_args), got {len(values)}")
        out = Graphed.apply(*values, *params)
        out = out if isinstance(out, tuple) else (out,)
        return out[0] if single else out

    replay.graphs = (fwd_graph, bwd_graph)  # kept alive with the callable
    return replay


def make_graphed_callables(callables: Any, sample_args: tuple, num_warmup_iters: int = 3,
                           allow_unused_input: bool = False) -> Any:
    """Graphed versions of callables (``torch.cuda.make_graphed_callables``): forward and backward replay CUDA graphs.

    Each callable (a function or an ``nn.Module``) is run ``num_warmup_iters`` times with its sample arguments
    (forward and backward), then its forward and its backward are captured into two graphs. Calling the result
    copies the arguments into the sample tensors (the static inputs), replays the forward graph and returns its
    outputs; their backward copies the incoming gradients into static buffers and replays the backward graph, which
    yields the gradients of the arguments that require grad and of the module's parameters (accumulated into their
    ``.grad`` as usual). Shapes, dtypes and ``requires_grad`` of the arguments must match the sample arguments.
    A module is returned itself with its ``forward`` replaced; the graphs serve only while ``module.training`` is as
    it was at capture (otherwise the original forward runs).

    Args:
        callables: one callable or a tuple of them.
        sample_args: the arguments of the callable (a tuple of Tensors), or one such tuple per callable.
        num_warmup_iters: eager forward+backward runs before capturing.
        allow_unused_input: let inputs that do not reach the outputs get no gradient (else the backward raises).

    Returns:
        The graphed callable, or a tuple of them in the order given.
    """
    one = not isinstance(callables, tuple)
    fns = (callables,) if one else callables
    all_args = (sample_args,) if one else sample_args
    if len(fns) != len(all_args):
        raise ValueError(f"make_graphed_callables: {len(fns)} callables but {len(all_args)} sample_args")
    graphed = []
    for fn, args in zip(fns, all_args):
        args = tuple(args)
        module = fn if hasattr(fn, "parameters") and hasattr(fn, "training") else None
        params = tuple(p for p in module.parameters() if p.requires_grad) if module is not None else ()
        replay = _graph_one(fn, args, params, num_warmup_iters, allow_unused_input)
        if module is None:
            graphed.append(replay)
            continue
        eager, training = module.forward, module.training

        def forward(*values: Tensor, _replay: Callable = replay, _eager: Callable = eager, _module: Any = module,
                    _training: bool = training) -> Any:
            return _replay(*values) if _module.training == _training else _eager(*values)

        module.forward = forward
        graphed.append(module)
    return graphed[0] if one else tuple(graphed)
