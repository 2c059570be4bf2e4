"""``nn.Module``: the base class of every layer and model.

A module owns three ordered registries filled by attribute assignment: ``_parameters`` (``nn.Parameter``),
``_buffers`` (tensors registered with ``register_buffer``) and ``_modules`` (child modules). Everything else —
``state_dict`` names, ``parameters()``, ``to()``, ``train()`` — walks these registries, exactly as torch's does, so
the dotted names of a Genesis model equal those of the same torch architecture.
"""

from __future__ import annotations

import itertools
import warnings
from collections import OrderedDict
from typing import Any, Callable, Iterator

from genesis import dtypes
from genesis.autograd import no_grad
from genesis.device import device as Device
from genesis.nn.modules.backward_hooks import BackwardHook
from genesis.nn.modules.module_state import StateDictMixin
from genesis.nn.parameter import Buffer, Parameter
from genesis.ops.foreach import _foreach_zero_
from genesis.tensor import Tensor, parse_to_args


class RemovableHandle:
    """Removes a hook from the ordered dict it was registered in (returned by ``register_*_hook``)."""

    _next_id = itertools.count()

    def __init__(self, *hook_dicts: dict) -> None:
        self.hook_dicts = hook_dicts
        self.id = next(RemovableHandle._next_id)

    def remove(self) -> None:
        for d in self.hook_dicts:
            d.pop(self.id, None)

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()


# Hooks on every module (torch.nn.modules.module.register_module_*_hook, below): run before each module's own.
_STATE_DICT_HOOKS = ("_state_dict_pre_hooks", "_state_dict_hooks", "_load_state_dict_pre_hooks",
                     "_load_state_dict_post_hooks")

_global_forward_pre_hooks: OrderedDict[int, Callable] = OrderedDict()
_global_forward_hooks: OrderedDict[int, Callable] = OrderedDict()
_global_forward_hooks_with_kwargs: OrderedDict[int, bool] = OrderedDict()
_global_forward_hooks_always_called: OrderedDict[int, bool] = OrderedDict()
_global_backward_pre_hooks: OrderedDict[int, Callable] = OrderedDict()
_global_backward_hooks: OrderedDict[int, Callable] = OrderedDict()
_global_buffer_registration_hooks: OrderedDict[int, Callable] = OrderedDict()
_global_parameter_registration_hooks: OrderedDict[int, Callable] = OrderedDict()
_global_module_registration_hooks: OrderedDict[int, Callable] = OrderedDict()


def _registered(hooks: OrderedDict, module: Module, name: str, value: Any) -> Any:
    """``value`` after the global registration ``hooks`` (each may return a replacement)."""
    for hook in hooks.values():
        output = hook(module, name, value)
        if output is not None:
            value = output
    return value


def _addindent(text: str, num_spaces: int) -> str:
    lines = text.split("\n")
    if len(lines) == 1:
        return text
    return lines[0] + "\n" + "\n".join(" " * num_spaces + line for line in lines[1:])


def _typename(value: Any) -> str:
    """A tensor's legacy type name (``genesis.FloatTensor``) or a value's class name, as torch's messages say."""
    return value.type() if isinstance(value, Tensor) else type(value).__name__


def _parse_to(*args: Any, **kwargs: Any) -> tuple[Device | None, dtypes.dtype | None]:
    """The (device, dtype) of ``Module.to``'s arguments: a device, a dtype, both, or a tensor."""
    device, dtype, _ = parse_to_args(*args, **kwargs)
    if dtype is not None and not (dtype.is_floating_point or dtype.is_complex):
        raise TypeError(f"nn.Module.to only accepts floating point or complex dtypes, but got desired dtype={dtype}")
    if dtype is not None and dtype.is_complex:
        warnings.warn("Complex modules are a new feature under active development whose design may change, and some "
                      "modules might not work as expected when using complex tensors as parameters or buffers.",
                      stacklevel=3)
    return device, dtype


class Module(StateDictMixin):
    """Base class for all neural-network modules (``torch.nn.Module``).

    Subclasses call ``super().__init__()`` first, assign parameters, buffers and submodules as attributes, and
    define ``forward``. Calling the module runs forward pre-hooks, ``forward``, then forward hooks.
    """

    training: bool
    _version: int = 1
    call_super_init: bool = False

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if args or kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() got unexpected arguments {args} {kwargs}")
        setter = object.__setattr__
        setter(self, "training", True)
        setter(self, "_parameters", OrderedDict())
        setter(self, "_buffers", OrderedDict())
        setter(self, "_non_persistent_buffers_set", set())
        setter(self, "_modules", OrderedDict())
        setter(self, "_forward_pre_hooks", OrderedDict())
        setter(self, "_forward_pre_hooks_with_kwargs", OrderedDict())
        setter(self, "_forward_hooks", OrderedDict())
        setter(self, "_forward_hooks_with_kwargs", OrderedDict())
        setter(self, "_forward_hooks_always_called", OrderedDict())
        setter(self, "_backward_hooks", OrderedDict())
        setter(self, "_backward_pre_hooks", OrderedDict())
        for name in _STATE_DICT_HOOKS:
            setter(self, name, OrderedDict())

    forward: Callable[..., Any]

    def forward(self, *args: Any, **kwargs: Any) -> Any:  # the annotation above documents the type
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')

    # ------------------------------------------------------------ registration
    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Add a parameter (or a None placeholder, which state_dict skips) under ``name``."""
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        self._check_name("parameter", name)
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute '{name}' already exists")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{_typename(param)}' object to parameter '{name}' "
                            "(genesis.nn.Parameter or None required)")
        if param is not None and param.grad_fn is not None:
            raise ValueError(f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters must be "
                             "created explicitly. To express '{name}' as a function of another Tensor, compute the "
                             "value in the forward() method.")
        if _global_parameter_registration_hooks and param is not None:
            param = _registered(_global_parameter_registration_hooks, self, name, param)
        self._parameters[name] = param

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """Add a buffer: state that is not a parameter (running statistics, tables); in state_dict if persistent."""
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        self._check_name("buffer", name)
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{type(tensor).__name__}' object to buffer '{name}' "
                            "(genesis Tensor or None required)")
        if isinstance(tensor, Buffer):
            persistent = tensor.persistent
            tensor = tensor.detach()
        if _global_buffer_registration_hooks:
            tensor = _registered(_global_buffer_registration_hooks, self, name, tensor)
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def add_module(self, name: str, module: Module | None) -> None:
        """Add a child module under ``name`` (``self.name`` then returns it)."""
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        self._check_name("module", name)
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        if _global_module_registration_hooks:
            module = _registered(_global_module_registration_hooks, self, name, module)
        self._modules[name] = module

    register_module = add_module

    @staticmethod
    def _check_name(kind: str, name: str) -> None:
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string. Got {type(name).__name__}")
        if name == "":
            raise KeyError(f'{kind} name can\'t be empty string ""')
        if "." in name:
            raise KeyError(f'{kind} name can\'t contain "."' + (f", got: {name}" if kind == "module" else ""))

    def __setattr__(self, name: str, value: Any) -> None:
        def remove_from(*dicts: Any) -> None:
            for d in dicts:
                if name in d:
                    if isinstance(d, dict):
                        del d[name]
                    else:
                        d.discard(name)

        params = self.__dict__.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            remove_from(self.__dict__, self._buffers, self._modules, self._non_persistent_buffers_set)
            self.register_parameter(name, value)
            return
        if params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as parameter '{name}' "
                                "(genesis.nn.Parameter or None expected)")
            self.register_parameter(name, value)
            return
        modules = self.__dict__.get("_modules")
        if isinstance(value, Module):
            if modules is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            remove_from(self.__dict__, self._parameters, self._buffers, self._non_persistent_buffers_set)
            if _global_module_registration_hooks:
                value = _registered(_global_module_registration_hooks, self, name, value)
            modules[name] = value
            return
        if modules is not None and name in modules:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as child module '{name}' "
                                "(genesis.nn.Module or None expected)")
            modules[name] = value
            return
        buffers = self.__dict__.get("_buffers")
        if isinstance(value, Buffer) or (buffers is not None and name in buffers):
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{type(value).__name__}' as buffer '{name}' "
                                "(genesis Tensor or None expected)")
            if isinstance(value, Buffer):
                persistent = value.persistent
            else:
                persistent = name not in self._non_persistent_buffers_set
            remove_from(self.__dict__, self._parameters, self._modules)
            self.register_buffer(name, value, persistent)
            return
        object.__setattr__(self, name, value)

    def __getattr__(self, name: str) -> Any:
        # Only called when normal lookup fails: look in the registries.
        d = self.__dict__
        for registry in ("_parameters", "_buffers", "_modules"):
            if registry in d and name in d[registry]:
                return d[registry][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        if name in self._parameters:
            del self._parameters[name]
        elif name in self._buffers:
            del self._buffers[name]
            self._non_persistent_buffers_set.discard(name)
        elif name in self._modules:
            del self._modules[name]
        else:
            object.__delattr__(self, name)

    def __dir__(self) -> list[str]:
        keys = list(object.__dir__(self)) + list(self._parameters) + list(self._buffers) + list(self._modules)
        return sorted(k for k in set(keys) if not k[0].isdigit())

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        for name in _STATE_DICT_HOOKS:  # modules pickled before these registries existed
            self.__dict__.setdefault(name, OrderedDict())

    def _add_hook(self, hooks: OrderedDict, hook: Callable) -> RemovableHandle:
        """Register ``hook`` in ``hooks``; the handle removes it."""
        handle = RemovableHandle(hooks)
        hooks[handle.id] = hook
        return handle

    # ------------------------------------------------------------ lookup
    def get_submodule(self, target: str) -> Module:
        """The submodule at dotted path ``target`` ("" is the module itself), reached by attribute as torch's."""
        if target == "":
            return self
        mod: Module = self
        for item in target.split("."):
            if not hasattr(mod, item):
                raise AttributeError(f"{mod._get_name()} has no attribute `{item}`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError(f"`{item}` is not an nn.Module")
        return mod

    def set_submodule(self, target: str, module: Module, strict: bool = False) -> None:
        """Put ``module`` at dotted path ``target``, replacing a submodule there or (unless ``strict``) adding one
        to an existing parent, as torch's."""
        if target == "":
            raise ValueError("Cannot set the submodule without a target name!")
        if not isinstance(module, Module):
            raise ValueError(f"`module` is not an nn.Module, found {type(module)}")
        parent_path, _, name = target.rpartition(".")
        parent = self.get_submodule(parent_path)
        if strict and not hasattr(parent, name):
            raise AttributeError(f"{parent._get_name()} has no attribute `{name}`")
        if hasattr(parent, name) and not isinstance(getattr(parent, name), Module):
            raise AttributeError(f"`{name}` is not an nn.Module")
        setattr(parent, name, module)

    def get_parameter(self, target: str) -> Parameter:
        """The parameter at dotted path ``target`` (a parametrized weight is not one, as in torch)."""
        mod, name = self._member_owner(target)
        param = getattr(mod, name)
        if not isinstance(param, Parameter):
            raise AttributeError(f"`{name}` is not an nn.Parameter")
        return param

    def get_buffer(self, target: str) -> Tensor:
        """The buffer at dotted path ``target``."""
        mod, name = self._member_owner(target)
        buffer = getattr(mod, name)
        if name not in mod._buffers:
            raise AttributeError(f"`{name}` is not a buffer")
        return buffer

    def _member_owner(self, target: str) -> tuple[Module, str]:
        """(the submodule holding the attribute at dotted path ``target``, the attribute's name)."""
        module_path, _, name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, name):
            raise AttributeError(f"{mod._get_name()} has no attribute `{name}`")
        return mod, name

    # ------------------------------------------------------------ iteration
    def _named_members(self, get_members: Callable, prefix: str = "", recurse: bool = True,
                       remove_duplicate: bool = True) -> Iterator[tuple[str, Any]]:
        memo = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse else [
            (prefix, self)]
        for module_prefix, module in modules:
            for k, v in get_members(module):
                if v is None or id(v) in memo:
                    continue
                if remove_duplicate:
                    memo.add(id(v))
                yield (module_prefix + ("." if module_prefix else "") + k, v)

    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True) -> Iterator[tuple[str, Parameter]]:
        """(dotted name, parameter) pairs; a parameter shared by several modules is listed once."""
        return self._named_members(lambda m: m._parameters.items(), prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix: str = "", recurse: bool = True,
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Tensor]]:
        return self._named_members(lambda m: m._buffers.items(), prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def named_children(self) -> Iterator[tuple[str, Module]]:
        memo = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in memo:
                memo.add(id(module))
                yield name, module

    def children(self) -> Iterator[Module]:
        for _, m in self.named_children():
            yield m

    def named_modules(self, memo: set | None = None, prefix: str = "",
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Module]]:
        """(dotted name, module) pairs of this module and every descendant, depth first."""
        if memo is None:
            memo = set()
        if id(self) in memo:
            return
        if remove_duplicate:
            memo.add(id(self))
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            sub_prefix = prefix + ("." if prefix else "") + name
            yield from module.named_modules(memo, sub_prefix, remove_duplicate)

    def modules(self) -> Iterator[Module]:
        for _, m in self.named_modules():
            yield m

    # ------------------------------------------------------------ modes and gradients
    def train(self, mode: bool = True) -> Module:
        """Set training mode (dropout active, batch norm uses batch statistics) here and in every descendant."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self) -> Module:
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset every parameter's gradient: drop it (default) or fill it with zeros in place (the same ``.grad``
        tensor, as torch; one with history, from ``create_graph=True``, is cut loose first)."""
        grads = []
        for p in self.parameters():
            if p.grad is None:
                continue
            if set_to_none:
                p.grad = None
            elif p.grad.is_sparse:
                p.grad.zero_()
            else:
                if p.grad.grad_fn is not None:
                    p.grad = p.grad.detach()
                grads.append(p.grad)
        if grads:
            with no_grad():
                _foreach_zero_(grads)

    def apply(self, fn: Callable[[Module], None]) -> Module:
        """Call ``fn`` on every descendant (children first) and then on this module."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    # ------------------------------------------------------------ device and dtype
    def _apply(self, fn: Callable[[Tensor], Tensor], recurse: bool = True) -> Module:
        """Replace every parameter's, gradient's and buffer's data by ``fn(data)``, keeping Parameter objects (the
        submodules' too unless ``recurse`` is False)."""
        for module in self.children() if recurse else ():
            module._apply(fn)
        with no_grad():
            for p in self._parameters.values():
                if p is None:
                    continue
                p.data = fn(p.data)
                if p.grad is not None:
                    p.grad = fn(p.grad)
            for name, b in self._buffers.items():
                if b is not None:
                    self._buffers[name] = fn(b)
        return self

    def to(self, *args: Any, **kwargs: Any) -> Module:
        """Move and/or cast in place: ``to(device)``, ``to(dtype)``, ``to(device, dtype)``, ``to(tensor)``.

        Only floating-point and complex parameters and buffers change dtype (integer buffers such as
        ``num_batches_tracked`` keep theirs), as in torch. ``memory_format`` (e.g. ``genesis.channels_last``)
        applies to the 4-d and 5-d parameters and buffers (convolution weights).
        """
        fmt = kwargs.pop("memory_format", None)
        device, dtype = _parse_to(*args, **kwargs)

        def convert(t: Tensor) -> Tensor:
            if device is not None and t.device is not device:
                t = t.to(device)
            if dtype is not None and (t.dtype.is_floating_point or t.dtype.is_complex) and t.dtype is not dtype:
                t = t.to(dtype)
            if fmt is not None and t.ndim in (4, 5):
                t = t.to(memory_format=fmt)
            return t

        return self._apply(convert)

    def to_empty(self, *, device: Any, recurse: bool = True) -> Module:
        """Give every parameter and buffer new uninitialized memory on ``device``, of the same shapes and dtypes:
        a model built on the meta device (``with genesis.device("meta"):``) gets real storage this way, to be filled
        by ``reset_parameters`` or a checkpoint. ``recurse=False`` keeps the submodules' tensors."""
        target = Device(device)
        return self._apply(lambda t: t.new_empty(t.shape, device=target), recurse)

    def cpu(self) -> Module:
        return self.to("cpu")

    def cuda(self, device: Any = None) -> Module:
        return self.to(f"cuda:{device}" if isinstance(device, int) else (device or "cuda"))

    def type(self, dst_type: Any) -> Module:
        d = dtypes.to_dtype(dst_type)
        return self._apply(lambda t: t.to(d))

    def float(self) -> Module:
        return self._apply(lambda t: t.float() if t.dtype.is_floating_point else t)

    def double(self) -> Module:
        return self._apply(lambda t: t.double() if t.dtype.is_floating_point else t)

    def half(self) -> Module:
        return self._apply(lambda t: t.half() if t.dtype.is_floating_point else t)

    def bfloat16(self) -> Module:
        return self._apply(lambda t: t.bfloat16() if t.dtype.is_floating_point else t)

    def share_memory(self) -> Module:
        """Move every parameter, gradient and buffer into shared memory (``Tensor.share_memory_``), in place:
        processes forked afterwards (Hogwild training) see and make each other's updates."""
        return self._apply(lambda t: t.share_memory_())

    # ------------------------------------------------------------ hooks and calling
    def register_forward_pre_hook(self, hook: Callable, *, prepend: bool = False,
                                  with_kwargs: bool = False) -> RemovableHandle:
        """``hook(module, args)`` (or ``hook(module, args, kwargs)``) runs before forward; may return new args."""
        handle = RemovableHandle(self._forward_pre_hooks, self._forward_pre_hooks_with_kwargs)
        self._forward_pre_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs[handle.id] = True
        if prepend:
            self._forward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_forward_hook(self, hook: Callable, *, prepend: bool = False, with_kwargs: bool = False,
                              always_call: bool = False) -> RemovableHandle:
        """``hook(module, args, output)`` (or with kwargs) runs after forward; may return a new output."""
        handle = RemovableHandle(self._forward_hooks, self._forward_hooks_with_kwargs,
                                 self._forward_hooks_always_called)
        self._forward_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_hooks_with_kwargs[handle.id] = True
        if always_call:
            self._forward_hooks_always_called[handle.id] = True
        if prepend:
            self._forward_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_full_backward_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """``hook(module, grad_input, grad_output)`` runs when the gradients of the module's inputs are computed;
        may return a new ``grad_input`` (see ``backward_hooks.py`` for the rules)."""
        handle = RemovableHandle(self._backward_hooks)
        self._backward_hooks[handle.id] = hook
        if prepend:
            self._backward_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_full_backward_pre_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """``hook(module, grad_output)`` runs when the gradients of the module's outputs are computed; may return a
        new ``grad_output``."""
        handle = RemovableHandle(self._backward_pre_hooks)
        self._backward_pre_hooks[handle.id] = hook
        if prepend:
            self._backward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_backward_hook(self, hook: Callable) -> RemovableHandle:
        """The deprecated spelling, registered as a full backward hook: torch's old hook saw the gradients of the
        module's last operation instead, which differ in ``grad_input`` for modules of several ops (``grad_output``,
        what Grad-CAM reads, is the same)."""
        return self.register_full_backward_hook(hook)

    def compile(self, *args: Any, **kwargs: Any) -> None:
        """torch's in-place ``Module.compile(**compile_kwargs)``, for scripts that call it: Genesis runs eagerly, so
        the module keeps running its ``forward`` as it is, with its hooks and unchanged state-dict keys."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not (self._forward_pre_hooks or self._forward_hooks or self._backward_hooks or self._backward_pre_hooks
                or _global_forward_pre_hooks or _global_forward_hooks or _global_backward_hooks
                or _global_backward_pre_hooks):
            return self.forward(*args, **kwargs)
        for hook_id, hook in [*_global_forward_pre_hooks.items(), *self._forward_pre_hooks.items()]:
            if hook_id in self._forward_pre_hooks_with_kwargs:
                result = hook(self, args, kwargs)
                if result is not None:
                    if not (isinstance(result, tuple) and len(result) == 2):
                        raise RuntimeError("forward pre-hook must return None or a tuple of (new_args, new_kwargs), "
                                           f"but got {result}.")
                    args, kwargs = result
            else:
                result = hook(self, args)
                if result is not None:
                    args = result if isinstance(result, tuple) else (result,)
        backward_hook = None
        if self._backward_hooks or self._backward_pre_hooks or _global_backward_hooks or _global_backward_pre_hooks:
            backward_hook = BackwardHook(self, [*_global_backward_hooks.values(), *self._backward_hooks.values()],
                                         [*_global_backward_pre_hooks.values(), *self._backward_pre_hooks.values()])
            args = backward_hook.setup_inputs(args)
        forward_hooks = [*_global_forward_hooks.items(), *self._forward_hooks.items()]
        try:
            output = self.forward(*args, **kwargs)
        except Exception:
            for hook_id, hook in forward_hooks:
                if hook_id in self._forward_hooks_always_called or hook_id in _global_forward_hooks_always_called:
                    try:
                        hook(self, args, None)
                    except Exception:
                        pass  # the forward error is the one to report
            raise
        for hook_id, hook in forward_hooks:
            if hook_id in self._forward_hooks_with_kwargs or hook_id in _global_forward_hooks_with_kwargs:
                result = hook(self, args, kwargs, output)
            else:
                result = hook(self, args, output)
            if result is not None:
                output = result
        if backward_hook is not None:
            output = backward_hook.setup_outputs(output)
        return output

    # ------------------------------------------------------------ printing
    def _get_name(self) -> str:
        return type(self).__name__

    def extra_repr(self) -> str:
        """Text placed in this module's repr between the parentheses (the constructor's arguments)."""
        return ""

    def __repr__(self) -> str:
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = []
        for name, module in self._modules.items():
            mod_str = _addindent(repr(module), 2)
            child_lines.append(f"({name}): {mod_str}")
        lines = extra_lines + child_lines
        main = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                main += extra_lines[0]
            else:
                main += "\n  " + "\n  ".join(lines) + "\n"
        return main + ")"


# ------------------------------------------------------------ hooks on every module


def _global_handle(hooks: OrderedDict, hook: Callable, *flags: OrderedDict) -> RemovableHandle:
    handle = RemovableHandle(hooks, *flags)
    hooks[handle.id] = hook
    for flag in flags:
        flag[handle.id] = True
    return handle


def register_module_forward_pre_hook(hook: Callable) -> RemovableHandle:
    """``hook(module, args)`` before the forward of every module (before the module's own pre-hooks); may return
    new args. A debugging aid, as in torch: it slows every module call."""
    return _global_handle(_global_forward_pre_hooks, hook)


def register_module_forward_hook(hook: Callable, *, with_kwargs: bool = False,
                                 always_call: bool = False) -> RemovableHandle:
    """``hook(module, args, output)`` (or ``hook(module, args, kwargs, output)``) after the forward of every module,
    before the module's own hooks; may return a new output. ``always_call``: also when forward raised."""
    flags = [d for d, on in ((_global_forward_hooks_with_kwargs, with_kwargs),
                             (_global_forward_hooks_always_called, always_call)) if on]
    return _global_handle(_global_forward_hooks, hook, *flags)


def register_module_full_backward_pre_hook(hook: Callable) -> RemovableHandle:
    """``hook(module, grad_output)`` for every module, before the module's own backward pre-hooks."""
    return _global_handle(_global_backward_pre_hooks, hook)


def register_module_full_backward_hook(hook: Callable) -> RemovableHandle:
    """``hook(module, grad_input, grad_output)`` for every module, before the module's own backward hooks."""
    return _global_handle(_global_backward_hooks, hook)


def register_module_buffer_registration_hook(hook: Callable) -> RemovableHandle:
    """``hook(module, name, buffer)`` when any module registers a buffer; may return a replacement."""
    return _global_handle(_global_buffer_registration_hooks, hook)


def register_module_parameter_registration_hook(hook: Callable) -> RemovableHandle:
    """``hook(module, name, param)`` when any module registers a parameter; may return a replacement."""
    return _global_handle(_global_parameter_registration_hooks, hook)


def register_module_module_registration_hook(hook: Callable) -> RemovableHandle:
    """``hook(module, name, submodule)`` when any module registers a submodule; may return a replacement."""
    return _global_handle(_global_module_registration_hooks, hook)
