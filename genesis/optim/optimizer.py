"""The optimizer base class: parameter groups, per-parameter state, hyperparameter checks, state dicts.

A subclass declares its defaults and writes one per-parameter update, ``_update(p, grad, state, group, step)``; the
base class walks the groups, skips parameters without a gradient, creates each parameter's state dict on first use,
counts its steps and runs the update under ``no_grad``. The state dict layout is torch's: ``state`` keyed by the
parameter's index across all groups, ``param_groups`` holding the hyperparameters and the ``params`` index lists;
``state[i]["step"]`` is torch's 0-d tensor (see ``step_counts.py``).
"""

from __future__ import annotations

import copy
import functools
import math
import warnings
from collections import OrderedDict, defaultdict
from itertools import chain
from typing import Any, Callable, Iterable

from genesis import dtypes
from genesis.autograd import enable_grad, no_grad
from genesis.device import device
from genesis.ops import cat, view_as_complex, view_as_real
from genesis.ops.foreach import _foreach_zero_
from genesis.optim.step_counts import StepCounts, scalar_dtype
from genesis.tensor import Tensor, empty, full
from genesis.utils.hooks import RemovableHandle

# Hyperparameter checks: name -> (message prefix, predicate the value must satisfy). torch's wording.
_CHECKS: dict[str, tuple[str, Callable[[Any], bool]]] = {
    "lr": ("Invalid learning rate", lambda v: v >= 0.0),
    "eps": ("Invalid epsilon value", lambda v: v >= 0.0),
    "momentum": ("Invalid momentum value", lambda v: v >= 0.0),
    "dampening": ("Invalid dampening value", lambda v: v >= 0.0),
    "weight_decay": ("Invalid weight_decay value", lambda v: v >= 0.0),
    "alpha": ("Invalid alpha value", lambda v: v >= 0.0),
    "lr_decay": ("Invalid lr_decay value", lambda v: v >= 0.0),
    "initial_accumulator_value": ("Invalid initial_accumulator_value value", lambda v: v >= 0.0),
    "rho": ("Invalid rho value", lambda v: 0.0 <= v <= 1.0),
    "momentum_decay": ("Invalid momentum_decay value", lambda v: v >= 0.0),
}


_CPU = device("cpu")

# Parameters up to this many elements take the multi-tensor path: below it, per-op overhead costs more than the
# extra copies of concatenating (about 128 KiB of float32).
_FLAT_MAX_NUMEL = 32768


class _Required:
    """Marks a hyperparameter without a default (``SGD(params)`` with no lr)."""

    def __repr__(self) -> str:
        return "<required parameter>"


required = _Required()


# Step hooks of every optimizer (torch.optim.optimizer's registries): pre hooks run before each instance's own, post
# hooks after them.
_global_optimizer_pre_hooks: OrderedDict[int, Callable] = OrderedDict()
_global_optimizer_post_hooks: OrderedDict[int, Callable] = OrderedDict()


def register_optimizer_step_pre_hook(hook: Callable) -> RemovableHandle:
    """Register ``hook(optimizer, args, kwargs) -> None or (new_args, new_kwargs)``, called before the ``step`` of
    every optimizer; returns the handle that removes it."""
    return _register(_global_optimizer_pre_hooks, hook, False)


def register_optimizer_step_post_hook(hook: Callable) -> RemovableHandle:
    """Register ``hook(optimizer, args, kwargs) -> None``, called after the ``step`` of every optimizer; returns the
    handle that removes it."""
    return _register(_global_optimizer_post_hooks, hook, False)


def _hooked(step: Callable) -> Callable:
    """An optimizer class's ``step`` running the step hooks around it, as torch wraps every optimizer class's step
    (a user's subclass too): pre hooks may replace the arguments (``args`` starts with the optimizer itself)."""

    @functools.wraps(step)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        self = args[0]
        for pre_hook in chain(_global_optimizer_pre_hooks.values(), self._optimizer_step_pre_hooks.values()):
            result = pre_hook(self, args, kwargs)
            if result is not None:
                if not (isinstance(result, tuple) and len(result) == 2):
                    raise RuntimeError(f"{step} must return None or a tuple of (new_args, new_kwargs), but got "
                                       f"{result}.")
                args, kwargs = result
        out = step(*args, **kwargs)
        for post_hook in chain(self._optimizer_step_post_hooks.values(), _global_optimizer_post_hooks.values()):
            post_hook(self, args, kwargs)
        return out

    wrapper.hooked = True
    return wrapper


def _check_hyperparameters(group: dict[str, Any]) -> None:
    """Raise ValueError naming the first invalid hyperparameter value of a group."""
    for name, value in group.items():
        if name in _CHECKS and isinstance(value, (int, float)):
            prefix, ok = _CHECKS[name]
            if math.isnan(value) or not ok(value):
                raise ValueError(f"{prefix}: {value}")
    betas = group.get("betas")
    if betas is not None:
        for i, beta in enumerate(betas):
            if not 0.0 <= beta < 1.0:
                raise ValueError(f"Invalid beta parameter at index {i}: {beta}")


def _register(hooks: OrderedDict[int, Callable], hook: Callable, prepend: bool) -> RemovableHandle:
    """Add ``hook`` to ``hooks`` (first with ``prepend``); the handle removes it."""
    handle = RemovableHandle(hooks)
    hooks[handle.id] = hook
    if prepend:
        hooks.move_to_end(handle.id, last=False)
    return handle


def _torch_group_keys(defaults: dict[str, Any], builtin: bool) -> dict[str, Any]:
    """``defaults`` with the keys torch's optimizers have in every parameter group (and state dict).

    A built-in optimizer with ``foreach`` carries torch's ``differentiable=False`` too (Genesis updates under no_grad,
    so True is refused at ``step()``). Adam's and AdamW's Genesis-only ``master_weights`` is kept only where it is on,
    so that by default their groups hold exactly torch's keys.
    """
    defaults = dict(defaults)
    if builtin and "foreach" in defaults:
        defaults.setdefault("differentiable", False)
    if defaults.get("master_weights") is False:
        del defaults["master_weights"]
    return defaults


class Optimizer:
    """Base class of all optimizers (``genesis.optim.Optimizer``, as ``torch.optim.Optimizer``).

    Args:
        params: an iterable of tensors, or of dicts each holding ``"params"`` plus per-group hyperparameters.
        defaults: hyperparameters used where a group does not set its own.
    """

    #: Whether ``step()`` counts each parameter's updates in ``state["step"]`` (read by bias corrections, decays),
    #: a 0-d tensor as torch's (placed by ``_step_placement``).
    counts_steps = True
    #: Whether the constructor and ``add_param_group`` reject invalid values of the known hyperparameter names (lr,
    #: eps, betas, momentum...): the built-in optimizers do, as torch's; a user's subclass of ``Optimizer`` does not,
    #: since its names may mean something else (SAM's ``rho=2.0``).
    validates_hyperparameters = False
    #: Whether the update accepts the sparse gradient of ``embedding(..., sparse=True)``, as its dense form (SGD and
    #: Adagrad: zero rows change nothing there, so the result is torch's sparse update); others raise as torch's.
    accepts_sparse_grads = False
    #: torch's RuntimeError message for a sparse gradient the update does not accept (``{name}``: the class name).
    sparse_grads_refusal = "{name} does not support sparse gradients"
    #: torch's RuntimeError message for a sparse gradient with a nonzero ``weight_decay``, where one is accepted.
    sparse_weight_decay_refusal = "weight_decay option is not compatible with sparse gradients"
    #: torch's RuntimeError message for a sparse gradient with ``fused=True``, where one is accepted.
    sparse_fused_refusal = "`fused` does not support sparse grad or complex param"
    #: Whether ``_update`` is elementwise, so that small parameters may be updated together as one concatenation
    #: (``_step_flat``); Adafactor's row and column statistics are not.
    elementwise_update = True
    #: State entries not shaped like their parameter (Adafactor's row and column factors): not shape-checked.
    factored_state: tuple[str, ...] = ()
    #: State entries the update keeps as host floats where torch keeps 0-d tensors (NAdam's ``mu_product``, ASGD's
    #: ``eta`` and ``mu``): a loaded tensor (from a torch checkpoint) becomes a float.
    host_scalars: tuple[str, ...] = ()

    def __init__(self, params: Iterable[Any], defaults: dict[str, Any]) -> None:
        self._optimizer_step_pre_hooks: OrderedDict[int, Callable] = OrderedDict()
        self._optimizer_step_post_hooks: OrderedDict[int, Callable] = OrderedDict()
        self._optimizer_state_dict_pre_hooks: OrderedDict[int, Callable] = OrderedDict()
        self._optimizer_state_dict_post_hooks: OrderedDict[int, Callable] = OrderedDict()
        self._optimizer_load_state_dict_pre_hooks: OrderedDict[int, Callable] = OrderedDict()
        self._optimizer_load_state_dict_post_hooks: OrderedDict[int, Callable] = OrderedDict()
        cls = type(self)
        if not getattr(cls.step, "hooked", False):  # once per class, where its step is first seen (as torch)
            cls.step = _hooked(cls.step)
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors or dicts, "
                            f"but got {params.type()}")
        if self.validates_hyperparameters:  # the constructor's values only: as torch, groups' own are not checked
            _check_hyperparameters(defaults)
        self.defaults = _torch_group_keys(defaults, self.validates_hyperparameters)
        # As torch's: a user's optimizer reads ``self.state[p]`` for a parameter it has not seen yet and gets {}.
        self.state: defaultdict[Tensor, dict[str, Any]] = defaultdict(dict)
        self._scratch_buffers: dict[tuple, Tensor] = {}
        self._scratch_views: dict[tuple, Tensor] = {}
        self._flat_cache: dict[tuple, dict[str, Any]] = {}
        self._steps = StepCounts(self._step_placement)
        self.param_groups: list[dict[str, Any]] = []
        groups = list(params)
        if len(groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__} ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            lines.extend(f"    {key}: {group[key]}" for key in sorted(group) if key != "params")
        lines.append(")")
        return "\n".join(lines)

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group of parameters with its own hyperparameters (missing ones come from the defaults).

        The parameters may be given with their names, as ``named_parameters()`` yields them: the group then keeps
        the names under ``"param_names"`` (saved in state dicts), as torch's. Every group has names or none has.
        """
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group).__name__}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, but the ordering of "
                            "tensors in sets will change between runs. Please use a list instead.")
        params = list(params)
        names = [p[0] for p in params if isinstance(p, tuple)]
        params = [p[1] if isinstance(p, tuple) else p for p in params]
        if names and len(names) != len(params):
            raise ValueError("all optimizer params should be with/without names. Some param names are missing")
        for p in params:
            if not isinstance(p, Tensor):
                raise TypeError(f"optimizer can only optimize Tensors, but one of the params is {type(p).__name__}")
            if not p.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor")
        group = dict(param_group, params=params)
        if names:
            group["param_names"] = names
        for name, default in self.defaults.items():
            if default is required and name not in group:
                raise ValueError(f"parameter group didn't specify a value of required optimization parameter {name}")
            group.setdefault(name, default)
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        if len({id(p) for p in params}) != len(params):
            # As torch's: kept, and stepped once per appearance (see step).
            warnings.warn("optimizer contains a parameter group with duplicate parameters; in future, this will cause "
                          "an error; see github.com/pytorch/pytorch/issues/40967 for more information", UserWarning,
                          stacklevel=3)
        for other in self.param_groups:
            if ("param_names" in group) != ("param_names" in other):
                kind = "with names" if "param_names" in group else "without names"
                raise ValueError("all optimizer param groups should be with/without names. cannot add param group "
                                 f"{kind} to the optimizer")
        if any(id(p) in seen for p in params):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(group)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of every parameter: drop them (default) or fill them with zeros (one multi-tensor
        launch per device and dtype on GPUs)."""
        grads = []
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                elif p.grad.is_sparse:
                    p.grad.zero_()  # a sparse gradient keeps its size and drops its entries, as torch's
                else:
                    if p.grad.grad_fn is not None:  # a gradient with history (create_graph=True) is cut loose
                        p.grad = p.grad.detach()
                    grads.append(p.grad)
        if grads:
            with no_grad():
                _foreach_zero_(grads)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Update every parameter that has a gradient; ``closure`` re-evaluates the loss first (returned)."""
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        with no_grad():
            for group in self.param_groups:
                if group.get("differentiable"):
                    raise NotImplementedError(f"{type(self).__name__}: differentiable=True (autograd through the "
                                              "step) is not supported; Genesis's optimizers update under no_grad")
                # Small parameters of one dtype and device are updated together (see _step_flat); large ones one by
                # one, where the arithmetic outweighs the per-op overhead and concatenating would only add copies.
                # By default only on GPUs, where each op costs a kernel launch: on the CPU, concatenating and copying
                # back costs more than it saves.
                foreach = group.get("foreach")
                small: dict[tuple, list[Tensor]] = {}
                params, single = [], []
                fused = group.get("fused")
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    if p.grad.__class__ is not Tensor and p.grad.is_sparse:
                        self._check_sparse_grad(group)
                        single.append(p)  # updated in its dense form, one by one
                    else:
                        # Complex parameters go one by one (their update runs on real views, see _update_complex).
                        (single if p.ndarray.dtype.category == 3 else params).append(p)
                if len({id(p) for p in group["params"]}) != len(group["params"]):
                    # A parameter listed twice is updated twice, one update after the other, as torch's loop does:
                    # never in one multi-tensor launch, where both would read and write it at once.
                    single.extend(params)
                    params = []
                # fused=None fuses unless foreach=False asked for parameter-by-parameter updates.
                if params and (fused or (fused is None and foreach is not False)):
                    params = self._fused_step(group, params)
                for p in params:
                    # Device-side step counts (capturable) stay per parameter: the flat path keeps host counts.
                    flat = (foreach or (foreach is None and p.device.type != "cpu")) and not group.get("capturable") \
                        and self.elementwise_update
                    if not flat or p.numel() > _FLAT_MAX_NUMEL:
                        single.append(p)
                    else:
                        small.setdefault((p.dtype, p.device), []).append(p)
                for params in small.values():
                    if len(params) == 1 or not self._step_flat(group, params):
                        single.extend(params)
                for p in single:
                    state = self._state_for_update(p, group)
                    _check_state(type(self).__name__, p, state, self.factored_state)
                    grad = p.grad
                    if grad.__class__ is not Tensor and grad.is_sparse:
                        grad = grad.to_dense()
                    step = self._count_step(state, p, group) if self.counts_steps else None
                    if p.ndarray.dtype.category == 3:
                        self._update_complex(p, grad, state, group, step)
                    else:
                        self._update(p, grad, state, group, step)
        return loss

    def _keeps_state(self, group: dict[str, Any]) -> bool:
        """Whether ``group``'s updates keep per-parameter state; where they keep none (SGD without momentum) no
        entry of ``self.state`` is made, as torch's."""
        return True

    def _state_for_update(self, p: Tensor, group: dict[str, Any]) -> dict[str, Any]:
        """``p``'s state (made on first use), or a scratch dict where ``group`` keeps no state."""
        return self.state.setdefault(p, {}) if self._keeps_state(group) else {}

    def _check_sparse_grad(self, group: dict[str, Any]) -> None:
        """Raise torch's RuntimeError where ``group``'s update cannot take a sparse gradient: the optimizer takes
        none, or ``fused=True`` or a nonzero ``weight_decay`` is asked for."""
        if not self.accepts_sparse_grads:
            raise RuntimeError(self.sparse_grads_refusal.format(name=type(self).__name__))
        if group.get("fused"):
            raise RuntimeError(self.sparse_fused_refusal)
        if group.get("weight_decay"):
            raise RuntimeError(self.sparse_weight_decay_refusal)

    def _update_complex(self, p: Tensor, grad: Tensor, state: dict[str, Any], group: dict[str, Any],
                        step: float | None) -> None:
        """``_update`` of a complex parameter, as torch's: on the real views of the parameter, its gradient and its
        state, so that every algorithm treats a complex number as a pair of reals (``g * g`` squares each part
        instead of multiplying complex numbers). The state keeps complex tensors of the parameter's shape."""
        views = {k: view_as_real(v) if isinstance(v, Tensor) and v.is_complex() else v for k, v in state.items()}
        before = dict(views)
        self._update(view_as_real(p), view_as_real(grad), views, group, step)
        shape = tuple(p.shape) + (2,)
        for k, v in views.items():
            if v is not before.get(k):  # an entry the update created or replaced
                state[k] = view_as_complex(v) if isinstance(v, Tensor) and tuple(v.shape) == shape else v

    def _fused_step(self, group: dict[str, Any], params: list[Tensor]) -> list[Tensor]:
        """Update ``params`` (all with gradients) with fused multi-tensor kernels, a few launches for the whole
        group; returns the parameters it left for the per-parameter paths. The base class has no fused step."""
        return params

    def _step_flat(self, group: dict[str, Any], params: list[Tensor]) -> bool:
        """Run ``_update`` once on all ``params`` concatenated (the multi-tensor path); False if it can't apply.

        The updates are elementwise, so one update of the concatenation equals the per-parameter updates, with a
        few large ops in place of many small ones. Each parameter's state tensors are views into one flat buffer
        per state entry, kept across steps; it is rebuilt from the per-parameter tensors whenever they were
        replaced (by ``load_state_dict``, say). It applies when all parameters share their step count, their other
        non-tensor state and their set of state entries.
        """
        states = [self._state_for_update(p, group) for p in params]
        first = states[0]
        plain = {k: v for k, v in first.items() if k != "step" and not isinstance(v, Tensor)}
        for state in states[1:]:
            if state.keys() != first.keys() or any(state[k] != v for k, v in plain.items()):
                return False
        step = count = None
        if self.counts_steps:
            count = self._steps.shared_count(states)
            if count is None:
                return False
        key = (id(group), params[0].dtype, params[0].device)
        for p, state in zip(params, states):
            _check_state(type(self).__name__, p, state)
        cache = self._flat_cache.get(key)
        ids = [id(p) for p in params]
        fresh = cache is None or cache["ids"] != ids or any(
            state.get(k) is not views[i] for k, views in cache["views"].items() for i, state in enumerate(states))
        flat_state = dict(plain)
        for k, v in first.items():
            if k != "step" and isinstance(v, Tensor):
                flat_state[k] = cat([s[k].reshape(-1) for s in states]) if fresh else cache["flat"][k]
        if self.counts_steps:
            step = self._steps.advance(states, count, params[0], group)  # one fill for all their step tensors
        flat_p = cat([p.reshape(-1) for p in params])
        self._update(flat_p, cat([p.grad.reshape(-1) for p in params]), flat_state, group, step)
        offsets = [0]
        for p in params:
            offsets.append(offsets[-1] + p.numel())
        for p, start, end in zip(params, offsets, offsets[1:]):
            p.copy_(flat_p[start:end].view(p.shape))
        plain = {k: v for k, v in flat_state.items() if not isinstance(v, Tensor)}
        if not fresh and cache["flat"].keys() == flat_state.keys() - plain.keys():
            for state in states:  # the tensors are still the cached views, updated in place
                state.update(plain)
            return True
        views: dict[str, list[Tensor]] = {}
        for k, v in flat_state.items():
            if isinstance(v, Tensor):
                views[k] = [v[start:end].view(p.shape) for p, start, end in zip(params, offsets, offsets[1:])]
        for i, state in enumerate(states):  # every entry but the step count is replaced
            state.update({k: (views[k][i] if k in views else v) for k, v in flat_state.items()})
        self._flat_cache[key] = {"ids": ids, "flat": {k: flat_state[k] for k in views}, "views": views}
        return True

    def _update(self, p: Tensor, grad: Tensor, state: dict[str, Any], group: dict[str, Any],
                step: float | Tensor | None) -> None:
        """Update one parameter in place from its gradient, its state and its group's hyperparameters.

        ``step`` is the count including this update: a host number (``state["step"]`` already holds it), or with
        ``capturable`` the 0-d step tensor on the device; None where the optimizer counts no steps. ``p`` may be the
        concatenation of several parameters (see ``_step_flat``): the update must be elementwise, create state
        entries only when they are missing, and change existing state tensors in place.
        """
        raise NotImplementedError

    def _step_placement(self, p: Tensor, group: dict[str, Any]) -> tuple[dtypes.dtype, Any]:
        """The dtype and device of a new step count of ``p``, as torch's: a CPU tensor, read on the host for free,
        or with ``capturable`` or ``fused`` one on ``p``'s device; float32, or float64 under a float64 default dtype
        (fused and capturable steps: float32, which Genesis's kernels read)."""
        if group.get("capturable") or group.get("fused"):
            return dtypes.float32, p.device
        return scalar_dtype(), _CPU

    def _count_step(self, state: dict[str, Any], p: Tensor, group: dict[str, Any]) -> float | Tensor:
        """Count one more step of ``p``; returns the new count (see ``_update``'s ``step``).

        With ``capturable`` the count is a float32 0-d tensor on ``p``'s device, incremented in place there, so that
        a step captured in a CUDA graph counts every replay; otherwise the count is read and written on the host.
        """
        if not group.get("capturable"):
            return self._steps.advance_one(state, p, group)
        step = state.get("step")
        if not isinstance(step, Tensor) or step.device != p.device:  # a host count becomes a device tensor, once
            step = state["step"] = full((), self._steps.count(state), dtype=dtypes.float32, device=p.device)
        step.add_(1)
        return step

    def _scratch(self, p: Tensor, slot: int = 0) -> Tensor:
        """A temporary tensor shaped like ``p`` (contents undefined) for the update in progress.

        Updates write their intermediate results into these with in-place ops instead of allocating: on the CPU a
        fresh parameter-sized allocation per op costs more than the arithmetic itself. One flat buffer per slot,
        dtype and device serves every parameter; it is not part of the optimizer's state.
        """
        key = (slot, p.dtype, p.device)
        view = self._scratch_views.get((key, p.shape))
        if view is not None:
            return view
        buf = self._scratch_buffers.get(key)
        if buf is None or buf.numel() < p.numel():
            buf = self._scratch_buffers[key] = empty(p.numel(), dtype=p.dtype, device=p.device)
            self._scratch_views = {k: v for k, v in self._scratch_views.items() if k[0] != key}
        view = self._scratch_views[(key, p.shape)] = buf[:p.numel()].view(p.shape)
        return view

    def _effective_grad(self, p: Tensor, grad: Tensor, group: dict[str, Any], weight_decay: float) -> Tensor:
        """The gradient negated for ``maximize`` plus the L2 term ``weight_decay * p`` (``grad`` itself if neither)."""
        if not group["maximize"] and weight_decay == 0:
            return grad
        g = self._scratch(p, 1).copy_(grad)
        if group["maximize"]:
            g.neg_()
        if weight_decay != 0:
            g.add_(p, alpha=weight_decay)  # rounded once, as torch's grad.add(param, alpha=weight_decay)
        return g

    def _descend(self, p: Tensor, direction: Tensor, lr: float | Tensor) -> None:
        """``p -= lr * direction``, rounded once as torch's ``param.add_(direction, alpha=-lr)``; a tensor ``lr`` (a
        captured step's) is applied on its device, without reading it on the host."""
        if isinstance(lr, Tensor):
            p.add_(self._scratch(p, 1).copy_(direction).mul_(-lr))
        else:
            p.add_(direction, alpha=-lr)

    # ------------------------------------------------------------ hooks
    def register_step_pre_hook(self, hook: Callable) -> RemovableHandle:
        """Register ``hook(optimizer, args, kwargs) -> None or (new_args, new_kwargs)``, called before each
        ``step``; returns the handle that removes it."""
        return _register(self._optimizer_step_pre_hooks, hook, False)

    def register_step_post_hook(self, hook: Callable) -> RemovableHandle:
        """Register ``hook(optimizer, args, kwargs) -> None``, called after each ``step``."""
        return _register(self._optimizer_step_post_hooks, hook, False)

    def register_state_dict_pre_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """Register ``hook(optimizer) -> None``, called at the start of :meth:`state_dict` (first of all with
        ``prepend``)."""
        return _register(self._optimizer_state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """Register ``hook(optimizer, state_dict) -> state_dict or None``, called on the result of
        :meth:`state_dict` (a returned dict replaces it)."""
        return _register(self._optimizer_state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """Register ``hook(optimizer, state_dict) -> state_dict or None``, called on a shallow copy of the state dict
        given to :meth:`load_state_dict` before it is read (a returned dict replaces it)."""
        return _register(self._optimizer_load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """Register ``hook(optimizer) -> None``, called once :meth:`load_state_dict` has restored the state."""
        return _register(self._optimizer_load_state_dict_post_hooks, hook, prepend)

    # ------------------------------------------------------------ state dicts
    def state_dict(self) -> dict[str, Any]:
        """The optimizer state in torch's layout: ``{"state": {index: {...}}, "param_groups": [...]}``.

        Parameters are named by their index in the order of the groups; the tensors in ``state`` are the live
        state tensors (save or clone them to keep a snapshot). The state-dict hooks run before and after.
        """
        for pre_hook in self._optimizer_state_dict_pre_hooks.values():
            pre_hook(self)
        index: dict[int, int] = {}
        groups = []
        start = 0
        for group in self.param_groups:
            packed = {key: value for key, value in group.items() if key != "params"}
            # As torch's: a parameter's index is its position; one listed twice in a group takes its last position.
            index.update({id(p): i for i, p in enumerate(group["params"], start) if id(p) not in index})
            packed["params"] = [index[id(p)] for p in group["params"]]
            start += len(group["params"])
            groups.append(packed)
        state = {index[id(p)]: dict(s) for p, s in self.state.items() if id(p) in index}
        state_dict = {"state": state, "param_groups": groups}
        for post_hook in self._optimizer_state_dict_post_hooks.values():
            result = post_hook(self, state_dict)
            if result is not None:
                state_dict = result
        return state_dict

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore hyperparameters and per-parameter state from :meth:`state_dict` output.

        Everything is checked before anything is changed. Floating-point state tensors are copied to the dtype
        and device of their parameter; the step count as torch's: a number (older checkpoints) becomes a 0-d tensor
        (see ``_step_placement``), a tensor is copied as it is, or with ``capturable`` or ``fused`` to float32 on the
        parameter's device. Other values are copied as they are. The load-state-dict hooks run before and after.
        """
        state_dict = dict(state_dict)  # a shallow copy for the hooks, as torch's
        for pre_hook in self._optimizer_load_state_dict_pre_hooks.values():
            result = pre_hook(self, state_dict)
            if result is not None:
                state_dict = result
        saved_groups = state_dict["param_groups"]
        if len(saved_groups) != len(self.param_groups):
            raise ValueError("loaded state dict has a different number of parameter groups "
                             f"({len(saved_groups)} != {len(self.param_groups)})")
        for i, (group, saved) in enumerate(zip(self.param_groups, saved_groups)):
            if len(group["params"]) != len(saved["params"]):
                raise ValueError(f"loaded state dict contains a parameter group that doesn't match the size of "
                                 f"optimizer's group: group {i} has {len(saved['params'])} parameters, the "
                                 f"optimizer's has {len(group['params'])}")
        by_index = {}
        for group, saved in zip(self.param_groups, saved_groups):
            for p, idx in zip(group["params"], saved["params"]):
                by_index[idx] = p
        unknown = [idx for idx in state_dict["state"] if idx not in by_index]
        if unknown:
            raise ValueError(f"loaded state dict has state for parameter indices {unknown} that no group lists")
        group_of = {idx: saved for saved in saved_groups for idx in saved["params"]}
        new_state = {}
        steps = StepCounts(self._step_placement)
        # Shapes are checked for the state Genesis's own update reads; an optimizer written by a user (its own step,
        # no _update) keeps what it likes there, as torch's (LAMB's 0-d norms), and loads it unchecked as torch does.
        own_update = type(self)._update is not Optimizer._update
        for idx, saved_state in state_dict["state"].items():
            p = by_index[idx]
            if not isinstance(saved_state, dict):
                raise ValueError(f"loaded state dict has a state of type {type(saved_state).__name__} for parameter "
                                 f"{idx}, expected a dict")
            for key, value in saved_state.items():
                if (own_update and key != "step" and key not in self.host_scalars and key not in self.factored_state
                        and isinstance(value, Tensor) and tuple(value.shape) != tuple(p.shape)):
                    raise ValueError(f"loaded state dict contains a state '{key}' of shape {tuple(value.shape)} for "
                                     f"parameter {idx} of shape {tuple(p.shape)}")
            new_state[p] = {key: self._load_value(key, value, p, group_of[idx], steps)
                            for key, value in saved_state.items()}
        new_groups = []
        for group, saved in zip(self.param_groups, saved_groups):
            restored = copy.deepcopy({key: value for key, value in saved.items() if key != "params"})
            # As torch's __setstate__: flags an older state dict lacks take their defaults (an older Genesis one's
            # master_weights=False is dropped, see _torch_group_keys).
            for key, value in self.defaults.items():
                if value is not required:
                    restored.setdefault(key, value)
            if restored.get("master_weights") is False:
                del restored["master_weights"]
            restored["params"] = group["params"]
            if "param_names" in group and "param_names" not in restored:  # names kept over a state dict without
                restored["param_names"] = group["param_names"]
            new_groups.append(restored)
        self.state = defaultdict(dict, new_state)
        self.param_groups = new_groups
        self._steps = steps
        for post_hook in self._optimizer_load_state_dict_post_hooks.values():
            post_hook(self)

    def _load_value(self, key: str, value: Any, p: Tensor, group: dict[str, Any], steps: StepCounts) -> Any:
        """A private copy of the saved state entry ``key`` of ``p`` (``group``: its saved parameter group)."""
        if key == "step":
            return self._load_step(value, p, group, steps)
        if key in self.host_scalars and isinstance(value, Tensor):
            return float(value.item())
        return _cast_state(value, p, bool(group.get("master_weights")))

    def _load_step(self, value: Any, p: Tensor, group: dict[str, Any], steps: StepCounts) -> Any:
        """A private copy of a saved step count of ``p``, placed as torch's ``load_state_dict`` places it; its value
        is recorded in ``steps`` when reading it costs nothing (a number, or a CPU tensor)."""
        if not self.counts_steps:
            return _cast_state(value, p)
        step_function = type(self).step
        if getattr(step_function, "__wrapped__", step_function) is not _BASE_STEP:
            return value  # a subclass's own step keeps its count as it likes (an int...): torch loads it as saved
        if isinstance(value, Tensor):
            host = float(value.item()) if value.device.type == "cpu" else None
            if group.get("capturable") or group.get("fused"):
                step = value.detach().to(device=p.device, dtype=dtypes.float32, copy=True)
            else:
                step = value.detach().clone()
        else:
            host = float(value)
            dtype, device = self._step_placement(p, group)
            step = full((), host, dtype=dtype, device=device)
        if host is not None:
            steps.remember(step, host)
        return step


# The base class's own step (before any class wraps it with the hooks): subclasses that keep it count their steps in
# Genesis's step tensors; those with a step of their own keep their counts as they like.
_BASE_STEP = Optimizer.step


def _check_state(op: str, p: Tensor, state: dict[str, Any], factored: tuple[str, ...] = ()) -> None:
    """RuntimeError unless every state tensor of ``p`` (the step count and ``factored`` entries aside) has its shape:
    a parameter replaced by one of another shape after its state was created (``p.data = ...``) must not reach an
    update."""
    for key, value in state.items():
        if key != "step" and key not in factored and isinstance(value, Tensor) and value.shape != p.shape:
            raise RuntimeError(f"{op}: state '{key}' has shape {tuple(value.shape)}, but its parameter has shape "
                               f"{tuple(p.shape)}")


def _cast_state(value: Any, param: Tensor, master_weights: bool = False) -> Any:
    """A private copy of one saved state value (the step count aside), placed like its parameter.

    Floating-point state takes the parameter's dtype, except with master weights, where the float32 state of a
    half-precision parameter (master copy, moments) stays float32.
    """
    if not isinstance(value, Tensor):
        return copy.deepcopy(value)
    if value.dtype.is_floating_point:
        keep = master_weights and value.dtype is dtypes.float32 and param.dtype in (dtypes.float16, dtypes.bfloat16)
        return value.detach().to(device=param.device, dtype=value.dtype if keep else param.dtype, copy=True)
    return value.detach().to(device=param.device, copy=True)
