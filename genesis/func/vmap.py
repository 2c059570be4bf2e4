"""``vmap`` (``torch.func.vmap``) as a per-sample loop, and ``replace_all_batch_norm_modules_``.

Genesis has no batching rules: ``vmap(f)(x)`` calls ``f`` once per index of the mapped dimension, on the slices
``x.select(in_dim, i)`` (views, so in-place changes reach the input as they do under torch's vmap), and stacks the
outputs along ``out_dims``. The results are torch's; the cost is ``B`` calls of ``f`` instead of one batched call,
so it is correct, not fast. Because ``f`` runs on real tensors, everything composes: ``vmap(grad(loss))`` gives
per-sample gradients, ``vmap(functional_call)`` over ``stack_module_state`` runs an ensemble, and vmap nests.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

from genesis.device import device as Device
from genesis.func.pytree import TreeSpec, broadcast_prefix, tree_flatten, tree_unflatten
from genesis.nn.modules.batchnorm import _BatchNorm
from genesis.nn.modules.module import Module
from genesis.ops import equal, stack
from genesis.random import default_generator
from genesis.tensor import Tensor


def _name(func: Callable) -> str:
    if isinstance(func, functools.partial):
        return f"functools.partial({_name(func.func)}, ...)"
    return getattr(func, "__name__", repr(func))


def _not_a_prefix(call: str, what: str, dims: Any, of: str, spec: TreeSpec) -> ValueError:
    return ValueError(f"{call}(<inputs>): {what} is not compatible with the structure of `{of}`. {what} has structure "
                      f"{tree_flatten(dims)[1]} but {of} has structure {spec}.")


def _mapped_inputs(func: Callable, in_dims: Any, args: tuple) -> tuple[int, list, list, TreeSpec]:
    """(batch size, the in_dim of every leaf of ``args``, the leaves, the spec of ``args``), checked as torch."""
    name = _name(func)
    if not isinstance(in_dims, (int, tuple)):
        raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): expected `in_dims` to be int or a "
                         f"(potentially nested) tuple matching the structure of inputs, got: {type(in_dims)}.")
    if not args:
        raise ValueError(f"vmap({name})(<inputs>): got no inputs. Maybe you forgot to add inputs, or you are trying "
                         "to vmap over a function with no inputs. The latter is unsupported.")
    flat_args, spec = tree_flatten(args)
    flat_dims = broadcast_prefix(in_dims, spec)
    if flat_dims is None:
        raise _not_a_prefix(f"vmap({name}, in_dims={in_dims}, ...)", "in_dims", in_dims, "inputs", spec)
    sizes = []
    for i, (arg, dim) in enumerate(zip(flat_args, flat_dims)):
        if dim is None:
            continue
        if not isinstance(dim, int) or isinstance(dim, bool):
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={dim} for an input but "
                             "in_dim must be either an integer dimension or None.")
        if not isinstance(arg, Tensor):
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={dim} for an input but "
                             f"the input is of type {type(arg)}. We cannot vmap over non-Tensor arguments, please "
                             "use None as the respective in_dim")
        if not -arg.dim() <= dim < arg.dim():
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={dim} for some input, but "
                             f"that input is a Tensor of dimensionality {arg.dim()} so expected in_dim to satisfy "
                             f"-{arg.dim()} <= in_dim < {arg.dim()}.")
        flat_dims[i] = dim % arg.dim()
        sizes.append(arg.shape[flat_dims[i]])
    if not sizes:
        raise ValueError("vmap: Expected at least one Tensor to vmap over")
    if any(s != sizes[0] for s in sizes):
        raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped dimension, got sizes "
                         f"{sizes} for the mapped dimension")
    if sizes[0] == 0:
        raise ValueError(f"vmap({name}): the mapped dimension has size 0; Genesis's vmap calls the function once "
                         "per index and has no sample to learn the output shapes from")
    return sizes[0], flat_dims, flat_args, spec


def _check_out_dims(func: Callable, out_dims: Any) -> None:
    leaves, _ = tree_flatten(out_dims)
    if any(d is not None and (not isinstance(d, int) or isinstance(d, bool)) for d in leaves):
        raise ValueError(f"vmap({_name(func)}, ..., out_dims={out_dims}): `out_dims` must be an int, None or a python "
                         "collection of ints representing where in the outputs the vmapped dimension should appear.")


def _stacked(func: Callable, outputs: list, out_dims: Any) -> Any:
    """The per-sample outputs joined: each tensor leaf stacked along its out_dim (a leaf with out_dim None is
    the first sample's)."""
    name = _name(func)
    flat0, spec = tree_flatten(outputs[0])
    flats = [flat0]
    for out in outputs[1:]:
        flat, other = tree_flatten(out)
        if other != spec:
            raise ValueError(f"vmap({name}, ...): `{name}` returned outputs of different structures for different "
                             f"samples ({spec} and {other})")
        flats.append(flat)
    if spec.kind is None:  # one output: out_dims is an int, None or a tuple of one of them, as in torch
        if out_dims is None or isinstance(out_dims, int):
            dims = [out_dims]
        else:
            dims = list(out_dims) if isinstance(out_dims, tuple) and len(out_dims) == 1 else None
    else:
        dims = broadcast_prefix(out_dims, spec)
    if dims is None:
        raise _not_a_prefix(f"vmap({name}, ..., out_dims={out_dims})", "out_dims", out_dims, "outputs", spec)
    joined = []
    for j, dim in enumerate(dims):
        if dim is None:
            joined.append(flat0[j])
            continue
        column = [flat[j] for flat in flats]
        if not all(isinstance(t, Tensor) for t in column):
            bad = next(type(t) for t in column if not isinstance(t, Tensor))
            raise ValueError(f"vmap({name}, ...): `{name}` must only return Tensors, got type {bad}. Did you mean "
                             "to set out_dims= to None for output?")
        joined.append(stack(column, dim))
    return tree_unflatten(joined, spec)


def vmap(func: Callable, in_dims: Any = 0, out_dims: Any = 0, randomness: str = "error", *,
         chunk_size: int | None = None) -> Callable:
    """``func`` mapped over a dimension of its inputs: a per-sample loop with torch.func.vmap's results.

    ``vmap(func, in_dims)(*args)`` calls ``func`` once for each index ``i`` of the mapped dimension, with every
    mapped input replaced by its slice at ``i`` (the other inputs and all keyword arguments unchanged), and stacks
    each output along its ``out_dims``. It is correct but not fast: ``B`` Python calls of ``func``, where torch runs
    one batched call.

    Args:
        func: a function of tensors and pytrees of tensors (and anything else, passed unmapped).
        in_dims: the dimension mapped in each input: an int for all, or a tuple with one entry per positional
            argument, each an int, None (not mapped) or a pytree prefix of that argument (``({"w": 0, "b": None},
            0)``). Negative dims count from the end.
        out_dims: where the mapped dimension goes in each output: an int, or a pytree prefix of the outputs. None
            for an output that does not depend on the mapped inputs: it comes back as the first sample returned it
            (torch checks that it is unbatched; this loop cannot).
        randomness: "error" (a RuntimeError when ``func`` draws random numbers from a default generator, as torch
            raises; seen once the sample returns, with the generators put back as they were), "different" (each
            sample draws its own numbers: what the loop does naturally) or "same" (every sample draws the same
            numbers: the default generators of the CPU and of the inputs' devices are reset to their starting
            state before each sample).
        chunk_size: how many samples torch batches at once; accepted and checked, the loop takes one at a time.

    Returns:
        The function that maps ``func``.
    """
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. Got {randomness}")
    if not (chunk_size is None or chunk_size > 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")

    @functools.wraps(func)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        _check_out_dims(func, out_dims)
        size, flat_dims, flat_args, spec = _mapped_inputs(func, in_dims, args)
        generators = []
        if randomness != "different":
            devices = {Device("cpu")} | {a.device for a in flat_args if isinstance(a, Tensor)}
            generators = [(g, g.get_state()) for g in map(default_generator, devices)]
        outputs = []
        for i in range(size):
            if i and randomness == "same":
                for generator, state in generators:
                    generator.set_state(state)
            sample = [a if d is None else a.select(d, i) for a, d in zip(flat_args, flat_dims)]
            outputs.append(func(*tree_unflatten(sample, spec), **kwargs))
            if randomness == "error":
                _check_no_random_draws(generators)
        return _stacked(func, outputs, out_dims)

    return wrapped


def _check_no_random_draws(generators: list[tuple[Any, Tensor]]) -> None:
    """torch's error of ``vmap(randomness="error")`` when a sample drew numbers from one of ``generators`` (each
    with its state before the call); the generators are put back first."""
    drawn = [(g, state) for g, state in generators if not equal(g.get_state(), state)]
    for generator, state in drawn:
        generator.set_state(state)
    if drawn:
        raise RuntimeError("vmap: called random operation while in randomness error mode. Please either use the "
                           "'same' or 'different' randomness flags on vmap or perform the randomness operation out "
                           "of vmap")


def replace_all_batch_norm_modules_(root: Module) -> Module:
    """Make every batch-norm layer in ``root`` (``root`` included) stop tracking running statistics, in place, as
    torch.func's helper for vmapping models with batch norm: its running buffers become None, so in training mode
    each call normalizes with the statistics of its own input. Returns ``root``."""
    for module in root.modules():
        if isinstance(module, _BatchNorm) and module.track_running_stats:
            module.running_mean = None
            module.running_var = None
            module.num_batches_tracked = None
            module.track_running_stats = False
    return root
