"""CUDA graphs behind ``genesis.compile(module, mode="reduce-overhead")`` (torch's mode of the same name).

A compiled module in that mode replays CUDA graphs instead of launching its kernels one by one, which removes the
host cost of the forward and the backward pass:

- Each call is keyed by its arguments' structure (positional and keyword, tensors also in tuples, lists and
  dicts), the tensors' shapes, dtypes and ``requires_grad``, the values of the other arguments (None, numbers,
  strings: constants of the capture), the module's ``training`` flag, grad mode and the autocast state. The first call
  of a key runs eagerly (kernels compile, plans and workspaces are made); the second captures the forward (and,
  with grad enabled, the backward into a second graph, as ``make_graphed_callables``) and replays it; later calls
  only replay. At most ``genesis._dynamo.config.cache_size_limit`` keys are captured; others run eagerly.
- Random numbers drawn inside (dropout in training) are new at every replay, taken from the default generator as
  eager calls take them (``genesis.cuda.CUDAGraph``).
- A capture that updated buffers (batch norm's running statistics in training: the extra pass of a recomputation,
  below, would update them twice) is dropped and its key runs eagerly from then on, so results are those of eager
  execution. So does a capture that failed (a host read of a device value inside), and a module with forward or
  backward hooks (their Python code would run at the capture only).
- Outputs are copied out of the graph's memory, so tensors a program keeps stay valid across calls; several
  forward calls before one backward pass are fine too: a backward whose forward replay was overwritten by a later
  call replays its forward again first, with the same random numbers (the captured work has no other side effects,
  see above).
- A call with no CUDA tensor, with a CPU tensor or another kind of object among its arguments, or to a module not
  on CUDA runs eagerly; so does a module that returns anything but tensors and constants (in tuples, lists or
  dicts).
- The forward's Python code runs at the capture only: decisions it takes from other Python state (a step counter)
  are replayed as taken then; ``genesis.compiler.reset()`` drops the graphs.
"""

from __future__ import annotations

import warnings
from typing import Any, Callable

from genesis import compiler, ops
from genesis.autograd import Function, is_grad_enabled
from genesis.autograd import grad as autograd_grad
from genesis.cuda.graphs import CUDAGraph, graph
from genesis.func.pytree import TreeSpec, tree_flatten, tree_unflatten
from genesis.nn.modules import module as module_hooks
from genesis.tensor import Tensor, empty_like

GRAPH_MODES = ("reduce-overhead", "max-autotune")


class _Graphed:
    """The captured forward (and backward) of one key, with the buffers they read and write."""

    def __init__(self, module: Any, leaves: list, spec: TreeSpec, grad: bool) -> None:
        self.static_args = tuple(a.detach().clone().requires_grad_(a.requires_grad) for a in leaves
                                 if isinstance(a, Tensor))
        self.params = tuple(p for p in module.parameters() if p.requires_grad) if grad else ()
        self.generation = 0  # how many forward replays so far: a backward checks its forward is the latest
        self.fwd, self.bwd = CUDAGraph(), None
        statics = iter(self.static_args)
        args, kwargs = tree_unflatten([next(statics) if isinstance(a, Tensor) else a for a in leaves], spec)
        with graph(self.fwd):
            out = module(*args, **kwargs)
        out_leaves, self.out_spec = tree_flatten(out)
        # Non-tensor outputs (None, numbers, strings) are constants of the capture, returned as they were.
        if not all(isinstance(o, (Tensor, *_CONSTANTS)) for o in out_leaves):
            raise TypeError("the module returned something other than tensors and constants (in tuples, lists or "
                            "dicts)")
        self.out_leaves = out_leaves
        outs = tuple(o for o in out_leaves if isinstance(o, Tensor))
        if not outs:
            raise TypeError("the module returned no tensor")
        self.static_outputs = outs
        self.static_grad_outputs: tuple[Tensor | None, ...] = ()
        self.static_grad_inputs: tuple[Tensor | None, ...] = ()
        wanted = [x for x in self.static_args + self.params if x.requires_grad]
        differentiable = [o for o in outs if o.requires_grad]
        if grad and wanted and differentiable:
            self.static_grad_outputs = tuple(empty_like(o) if o.requires_grad else None for o in outs)
            self.bwd = CUDAGraph()
            grad_outputs = [g for g in self.static_grad_outputs if g is not None]
            with graph(self.bwd):
                grads = iter(autograd_grad(differentiable, wanted, grad_outputs, allow_unused=True))
            self.static_grad_inputs = tuple(next(grads) if x.requires_grad else None
                                            for x in self.static_args + self.params)

    def run_forward(self, values: tuple[Tensor, ...], rng_bases: tuple[int, ...] | None = None) -> None:
        """Replay the forward on ``values``; with ``rng_bases`` (an earlier replay's) it draws that replay's random
        numbers again."""
        for static, value in zip(self.static_args, values):
            static.copy_(value.detach())
        if rng_bases is None:
            self.fwd.replay()
        else:
            self.fwd._replay_at(rng_bases)
        self.generation += 1

    def __call__(self, values: list[Tensor]) -> Any:
        if self.bwd is None:
            self.run_forward(values)
            outs = tuple(o.detach().clone() for o in self.static_outputs)
        else:
            outs = _Replay.apply(self, *values, *self.params)
        outs = iter(outs if isinstance(outs, tuple) else (outs,))
        return tree_unflatten([next(outs) if isinstance(o, Tensor) else o for o in self.out_leaves], self.out_spec)

    def reset(self) -> None:
        self.fwd.reset()
        if self.bwd is not None:
            self.bwd.reset()


class _Replay(Function):
    """One call of a captured module: forward replays the forward graph, backward the backward graph."""

    @staticmethod
    def forward(ctx: Any, entry: _Graphed, *values: Tensor) -> tuple[Tensor, ...]:
        n = len(entry.static_args)
        entry.run_forward(values[:n])
        ctx.entry, ctx.generation, ctx.rng_bases = entry, entry.generation, entry.fwd._last_bases
        ctx.save_for_backward(*values[:n])
        outs = tuple(o.detach().clone() for o in entry.static_outputs)
        # Outputs that needed no gradient in the capture (detached ones, integer ones) need none here either.
        ctx.mark_non_differentiable(*(c for c, o in zip(outs, entry.static_outputs) if not o.requires_grad))
        return outs

    @staticmethod
    def backward(ctx: Any, *grads_out: Tensor | None) -> tuple[Tensor | None, ...]:
        entry = ctx.entry
        if entry.generation != ctx.generation:  # a later call overwrote this call's activations: recompute them
            entry.run_forward(ctx.saved_tensors, ctx.rng_bases)
        for static, g in zip(entry.static_grad_outputs, grads_out):
            if static is not None:
                if g is None:
                    static.zero_()
                else:
                    static.copy_(g)
        entry.bwd.replay()
        # Copies: the buffers are overwritten by the next replay, and a leaf adopts its first gradient as .grad.
        return (None,) + tuple(None if g is None else g.detach().clone() for g in entry.static_grad_inputs)


_CONSTANTS = (type(None), bool, int, float, str)  # argument and output values a capture keeps as they are


def _key(module: Any, leaves: list, spec: TreeSpec) -> tuple | None:
    """The capture key of a call whose arguments flatten to ``leaves``, or None when the call must run eagerly: one
    with no CUDA tensor, or with a value that is neither a CUDA tensor nor a constant."""
    parts = []
    tensors = 0
    for a in leaves:
        if isinstance(a, Tensor):
            if a.device.type != "cuda":
                return None
            parts.append((tuple(a.shape), a.dtype, a.requires_grad))
            tensors += 1
        elif isinstance(a, _CONSTANTS):
            parts.append((type(a), a))  # a constant of the capture: another value is another key
        else:
            return None
    if not tensors:
        return None
    amp = (ops.autocast.is_autocast_enabled("cuda"), ops.autocast.get_autocast_dtype("cuda"),
           ops.autocast.is_autocast_cache_enabled())
    return (spec, tuple(parts), module.training, is_grad_enabled(), amp)


def _has_hooks(module: Any) -> bool:
    """Whether forward or backward hooks (global, or of ``module`` or a submodule) would run: their Python code
    would run at the capture only."""
    if (module_hooks._global_forward_pre_hooks or module_hooks._global_forward_hooks
            or module_hooks._global_backward_hooks or module_hooks._global_backward_pre_hooks):
        return True
    return any(m._forward_pre_hooks or m._forward_hooks or m._backward_hooks or m._backward_pre_hooks
               for m in module.modules())


def _state(module: Any) -> tuple:
    """What a capture free of side effects leaves as it was: the buffers' versions."""
    return tuple(b._vc[0] for b in module.buffers())


class GraphCache:
    """The captured graphs of one compiled module, by call key."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.entries: dict[tuple, _Graphed | int | None] = {}  # key -> graphs, or calls so far, or None (eager)
        compiler.graph_caches.add(self)

    def clear(self) -> None:
        """Drop every captured graph (parameters moved or replaced: the graphs read their old addresses)."""
        for entry in self.entries.values():
            if isinstance(entry, _Graphed):
                entry.reset()
        self.entries.clear()

    def call(self, module: Any, eager: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
        leaves, spec = tree_flatten((args, kwargs))
        key = _key(module, leaves, spec)
        if key is None:
            return eager(*args, **kwargs)
        entry = self.entries.get(key, 0)
        if isinstance(entry, _Graphed):
            return entry([a for a in leaves if isinstance(a, Tensor)])
        if entry is None or (entry == 0 and len(self.entries) >= self.limit):
            return eager(*args, **kwargs)
        if entry == 0:
            self.entries[key] = 1
            return eager(*args, **kwargs)  # the warm-up call: kernels compile and plans are made
        captured = self._capture(module, leaves, spec, key)
        if captured is None:
            return eager(*args, **kwargs)
        return captured([a for a in leaves if isinstance(a, Tensor)])

    def _capture(self, module: Any, leaves: list, spec: TreeSpec, key: tuple) -> _Graphed | None:
        if any(t.device.type != "cuda" for t in (*module.parameters(), *module.buffers())):
            self.entries[key] = None
            return None
        if _has_hooks(module):
            self.entries[key] = None
            warnings.warn("compile(mode='reduce-overhead'): running eagerly, the module has forward or backward "
                          "hooks, which a CUDA graph would not call again", stacklevel=4)
            return None
        before = _state(module)
        # Casts made inside the capture stay in the graph: a cached cast from outside it would be read at an address
        # the next autocast region no longer holds.
        cache = ops.autocast.is_autocast_cache_enabled()
        ops.autocast.set_autocast_cache_enabled(False)
        try:
            entry = _Graphed(module, leaves, spec, grad=key[3])
        except (RuntimeError, TypeError) as err:
            self.entries[key] = None
            warnings.warn(f"compile(mode='reduce-overhead'): running eagerly, the call could not be captured "
                          f"in a CUDA graph ({err})", stacklevel=4)
            return None
        finally:
            ops.autocast.set_autocast_cache_enabled(cache)
        if _state(module) != before:
            entry.reset()
            self.entries[key] = None
            warnings.warn("compile(mode='reduce-overhead'): running eagerly, the module updates buffers (batch norm "
                          "in training), which a recomputed forward would update twice", stacklevel=4)
            return None
        self.entries[key] = entry
        return entry
