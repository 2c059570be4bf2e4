"""Parametrizations (``torch.nn.utils.parametrize``): express a parameter or buffer as a function of other tensors.

After ``register_parametrization(module, "weight", p)``, reading ``module.weight`` returns ``p(original)``, where
``original`` is the tensor the module held, now stored as ``module.parametrizations.weight.original`` (or
``original0``, ``original1``... when ``p.right_inverse`` splits it into several tensors). As in torch, the module's
class is swapped for a subclass ``Parametrized<Class>`` that carries one property per parametrized name, so the
state-dict keys (``parametrizations.weight.original``) equal torch's and torch checkpoints load unchanged.

A Genesis ``Module`` finds registered tensors through ``__getattr__``, which Python calls only when the ordinary
lookup fails; the class property is found first, so ``module.weight`` runs the parametrization, and assigning a
tensor to ``module.weight`` reaches the property's setter (``right_inverse``) through ``object.__setattr__``.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import contextmanager
from copy import deepcopy
from typing import Any, Iterator

from genesis.autograd import no_grad
from genesis.nn.modules.container import ModuleDict, ModuleList
from genesis.nn.modules.module import Module
from genesis.nn.parameter import Parameter
from genesis.tensor import Tensor

__all__ = ["cached", "ParametrizationList", "register_parametrization", "is_parametrized", "remove_parametrizations",
           "transfer_parametrizations_and_params", "type_before_parametrizations"]

_cache_enabled = 0
_cache: dict[tuple[int, str], Tensor] = {}


@contextmanager
def cached() -> Iterator[None]:
    """Within this context each parametrized tensor is computed once, on first use, and reused until the outermost
    ``cached()`` exits (useful when a parametrized weight is read many times, e.g. in an RNN loop)."""
    global _cache_enabled
    _cache_enabled += 1
    try:
        yield
    finally:
        _cache_enabled -= 1
        if not _cache_enabled:
            _cache.clear()


def _register_parameter_or_buffer(module: Module, name: str, value: Tensor) -> None:
    if isinstance(value, Parameter):
        module.register_parameter(name, value)
    else:
        module.register_buffer(name, value)


# torch's wording of the checks of a safe parametrization, by check: the first registration's result, a chained
# registration's result, and a chained registration's right_inverse (``{name}``: the parametrized tensor's name).
_KIND_MESSAGES = {
    "first": ("A parametrization must return a tensor. Got {got}.",
              "Registering a parametrization may not change the {attr} of the tensor, unless `unsafe` flag is "
              "enabled.\nunparametrized {attr}: {expected}\nparametrized {attr}: {value}"),
    "chained": ("A parametrization must return a tensor. Got {got}.",
                "Registering a parametrization may not change the {attr} of the tensor, unless the `unsafe` flag is "
                "enabled.\nmodule.{name}.{attr}: {expected}\nparametrization(module.{name}).{attr}: {value}"),
    "inverse": ("parametrization.right_inverse must return a tensor. Got: {got}",
                "The tensor returned by parametrization.right_inverse must have the same {attr} as module.{name}, "
                "unless the `unsafe` flag is enabled.\nmodule.{name}.{attr}: {expected}\nreturned {attr}: {value}"),
}


def _check_same_kind(value: Any, like: Tensor, check: str, name: str = "") -> None:
    """``value`` must be a tensor with ``like``'s dtype and shape (the checks of a safe parametrization); ``check``
    picks torch's wording (a key of ``_KIND_MESSAGES``)."""
    not_tensor, changed = _KIND_MESSAGES[check]
    if not isinstance(value, Tensor):
        raise ValueError(not_tensor.format(got=type(value).__name__))
    for attr in ("dtype", "shape"):
        if getattr(value, attr) != getattr(like, attr):
            raise ValueError(changed.format(attr=attr, name=name, expected=getattr(like, attr),
                                            value=getattr(value, attr)))


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor, in registration order, and the tensor(s) they start from.

    It is ``module.parametrizations[tensor_name]`` once ``tensor_name`` is parametrized; calling it evaluates the
    parametrized tensor. When the first parametrization's ``right_inverse`` returns one tensor (or is absent: the
    identity), the original is kept as ``original`` (the same Parameter object, so optimizers keep tracking it);
    when it returns several, they are ``original0``, ``original1``, ... Created by ``register_parametrization``.

    Args:
        modules: the parametrizations (at least one).
        original: the parameter or buffer being parametrized.
        unsafe: whether the parametrization may change the tensor's dtype and shape (not checked then).
    """

    original: Tensor
    unsafe: bool

    def __init__(self, modules: Sequence[Module], original: Tensor, unsafe: bool = False) -> None:
        if len(modules) == 0:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        with no_grad():
            new: Any = original
            for module in reversed(list(self)):
                if hasattr(module, "right_inverse"):
                    try:
                        new = module.right_inverse(new)
                    except NotImplementedError:
                        pass  # a right_inverse that declines is the identity, as a missing one
        if not isinstance(new, (Tensor, Sequence)):
            raise ValueError("'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...). "
                             f"Got {type(new).__name__}")
        self.is_tensor = isinstance(new, Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            for attr in ("dtype", "device"):
                if getattr(new, attr) != getattr(original, attr):
                    raise ValueError(f"When `right_inverse` outputs one tensor, it may not change the {attr}.\n"
                                     f"original.{attr}: {getattr(original, attr)}\n"
                                     f"right_inverse(original).{attr}: {getattr(new, attr)}")
            # Keep the original object (optimizers hold it) and give it the new values.
            with no_grad():
                original.data = new
            _register_parameter_or_buffer(self, "original", original)
        else:
            for i, original_i in enumerate(new):
                if not isinstance(original_i, Tensor):
                    raise ValueError("'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...)."
                                     f" Got element {i} of the sequence with type {type(original_i).__name__}.")
                # New tensors: the caller adds them to its optimizer (as documented by torch).
                if isinstance(original, Parameter):
                    original_i = Parameter(original_i, original.requires_grad)
                original_i.requires_grad_(original.requires_grad)
                _register_parameter_or_buffer(self, f"original{i}", original_i)
        if not self.unsafe:
            _check_same_kind(self(), original, "first")

    def right_inverse(self, value: Tensor) -> None:
        """Set the original tensor(s) so that the parametrized tensor becomes ``value``: the parametrizations'
        ``right_inverse`` applied in reverse registration order, the result written into ``original`` (in place)
        or ``original0``, ``original1``, ..."""
        with no_grad():
            for module in reversed(list(self)):
                if not hasattr(module, "right_inverse"):
                    raise RuntimeError(f"parametrization {type(module).__name__} does not implement right_inverse.")
                value = module.right_inverse(value)
            if self.is_tensor:
                if not isinstance(value, Tensor):
                    raise ValueError(f"`right_inverse` should return a tensor. Got {type(value).__name__}")
                if value.dtype != self.original.dtype:
                    raise ValueError(f"The tensor returned by `right_inverse` has dtype {value.dtype} while "
                                     f"`original` has dtype {self.original.dtype}")
                self.original.data = value
                return
            if not isinstance(value, Sequence):
                raise ValueError(f"'right_inverse' must return a sequence of tensors. Got {type(value).__name__}.")
            if len(value) != self.ntensors:
                raise ValueError(f"'right_inverse' must return a sequence of tensors of length {self.ntensors}. "
                                 f"Got a sequence of length {len(value)}.")
            for i, tensor in enumerate(value):
                original_i = getattr(self, f"original{i}")
                if not isinstance(tensor, Tensor):
                    raise ValueError(f"'right_inverse' must return a sequence of tensors. Got element {i} of type "
                                     f"{type(tensor).__name__}.")
                if tensor.dtype != original_i.dtype:
                    raise ValueError(f"Tensor {i} returned by `right_inverse` has dtype {tensor.dtype} while "
                                     f"`original{i}` has dtype {original_i.dtype}")
                original_i.data = tensor

    def forward(self) -> Tensor:
        """The parametrized tensor: the first parametrization on the original(s), then each following one."""
        if self.is_tensor:
            x = self[0](self.original)
        else:
            x = self[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for module in list(self)[1:]:
            x = module(x)
        return x


def _deepcopy_parametrized(self: Module, memo: dict) -> Module:
    """``copy.deepcopy`` of a parametrized module (its ``__getstate__`` refuses pickling, which deepcopy uses)."""
    replica = memo.get(id(self))
    if replica is not None:
        return replica
    replica = self.__new__(type(self))
    memo[id(self)] = replica
    replica.__dict__.update(deepcopy(self.__dict__, memo))
    return replica


def _refuse_pickling(self: Module) -> None:
    raise RuntimeError("Serialization of parametrized modules is only supported through state_dict(). See:\n"
                       "https://pytorch.org/tutorials/beginner/saving_loading_models.html"
                       "#saving-loading-a-general-checkpoint-for-inference-and-or-resuming-training")


def _inject_new_class(module: Module) -> None:
    """Give ``module`` a class of its own, ``Parametrized<Class>``, to hold the parametrized tensors' properties."""
    cls = type(module)
    namespace: dict[str, Any] = {"__getstate__": _refuse_pickling}
    if not hasattr(cls, "__deepcopy__"):
        namespace["__deepcopy__"] = _deepcopy_parametrized
    module.__class__ = type(f"Parametrized{cls.__name__}", (cls,), namespace)


def _inject_property(module: Module, tensor_name: str) -> None:
    """Add the property ``tensor_name`` to ``module``'s parametrized class: reading evaluates the parametrization
    (once per ``cached()`` context when caching), assigning calls its ``right_inverse``."""
    assert not hasattr(module, tensor_name), f"Module already has an attribute named '{tensor_name}'"

    def get_parametrized(self: Module) -> Tensor:
        parametrization = self.parametrizations[tensor_name]
        if not _cache_enabled:
            return parametrization()
        key = (id(self), tensor_name)
        if key not in _cache:
            _cache[key] = parametrization()
        return _cache[key]

    def set_original(self: Module, value: Tensor) -> None:
        self.parametrizations[tensor_name].right_inverse(value)

    setattr(type(module), tensor_name, property(get_parametrized, set_original))


def register_parametrization(module: Module, tensor_name: str, parametrization: Module, *,
                             unsafe: bool = False) -> Module:
    """Make ``module.<tensor_name>`` read as ``parametrization(original)``.

    The first registration on a tensor moves the parameter or buffer to
    ``module.parametrizations.<tensor_name>.original`` (after ``parametrization.right_inverse``, if it has one; a
    ``right_inverse`` returning several tensors stores ``original0``, ``original1``...). Later registrations on the
    same tensor are chained after the earlier ones. Gradients flow through the parametrization to the originals.
    Assigning to ``module.<tensor_name>`` sets the originals through the ``right_inverse`` chain. The
    parametrization takes the module's training mode.

    Args:
        module: the module holding the tensor.
        tensor_name: the name of a parameter, a buffer or an already parametrized tensor.
        parametrization: a module whose ``forward`` maps the original tensor(s) to the parametrized one; optionally
            with ``right_inverse(X)`` returning a tensor or a sequence of tensors.
        unsafe: skip the checks that the parametrization keeps the tensor's dtype and shape.

    Returns:
        ``module`` itself.

    Raises:
        ValueError: if ``module`` has no parameter, buffer or parametrized tensor named ``tensor_name``, or a check
            fails.
    """
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        if not unsafe:
            current = getattr(module, tensor_name)
            value = parametrization(current)
            _check_same_kind(value, current, "chained", tensor_name)
            if hasattr(parametrization, "right_inverse"):
                try:
                    inverse = parametrization.right_inverse(value)
                except NotImplementedError:
                    pass  # right_inverse is the identity then
                else:
                    _check_same_kind(inverse, current, "inverse", tensor_name)
        parametrizations = module.parametrizations[tensor_name]
        parametrizations.append(parametrization)
        parametrizations.unsafe |= unsafe  # once unsafe, the chain stays unchecked
    elif tensor_name in module._buffers or tensor_name in module._parameters:
        original = getattr(module, tensor_name)
        parametrizations = ParametrizationList([parametrization], original, unsafe=unsafe)
        delattr(module, tensor_name)
        if not is_parametrized(module):
            _inject_new_class(module)
            module.parametrizations = ModuleDict()
        _inject_property(module, tensor_name)
        module.parametrizations[tensor_name] = parametrizations
    else:
        raise ValueError(f"Module '{module}' does not have a parameter, a buffer, or a parametrized element with "
                         f"name '{tensor_name}'")
    return module


def is_parametrized(module: Module, tensor_name: str | None = None) -> bool:
    """Whether ``module.<tensor_name>`` is parametrized (any tensor of ``module`` when ``tensor_name`` is None)."""
    parametrizations = getattr(module, "parametrizations", None)
    if not isinstance(parametrizations, ModuleDict):
        return False
    if tensor_name is None:
        return len(parametrizations) > 0
    return tensor_name in parametrizations


def remove_parametrizations(module: Module, tensor_name: str, leave_parametrized: bool = True) -> Module:
    """Remove the parametrizations of ``module.<tensor_name>``, making it a plain parameter or buffer again.

    Args:
        module: the parametrized module.
        tensor_name: the parametrized tensor's name.
        leave_parametrized: keep the current parametrized value (written into the original Parameter object, so
            optimizers keep working) instead of the unparametrized original (possible only when there is a single
            original tensor).

    Returns:
        ``module`` itself; once no tensor is parametrized, its class is the original one again.

    Raises:
        ValueError: if ``module.<tensor_name>`` is not parametrized, or ``leave_parametrized=False`` with several
            original tensors.
    """
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    parametrizations = module.parametrizations[tensor_name]
    if parametrizations.is_tensor:
        original = parametrizations.original
        if leave_parametrized:
            with no_grad():
                original.data = getattr(module, tensor_name)
    elif leave_parametrized:
        # Outside no_grad: whether the value requires grad tells whether it becomes a Parameter.
        value = getattr(module, tensor_name)
        original = Parameter(value) if value.requires_grad else value
    else:
        raise ValueError("Cannot leave unparametrized (`leave_parametrized=False`) a tensor that is parametrized in "
                         "terms of a sequence of tensors.")
    delattr(type(module), tensor_name)
    del module.parametrizations[tensor_name]
    _register_parameter_or_buffer(module, tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = type(module).__bases__[0]
    return module


def type_before_parametrizations(module: Module) -> type:
    """The class ``module`` had before its first parametrization (its own class if it has none)."""
    return type(module).__bases__[0] if is_parametrized(module) else type(module)


def transfer_parametrizations_and_params(from_module: Module, to_module: Module,
                                         tensor_name: str | None = None) -> Module:
    """Register ``from_module``'s parametrizations of ``tensor_name`` (of every parametrized tensor when None) on
    ``to_module``, which then shares ``from_module``'s original tensors (``original`` or ``original0``,
    ``original1``...). A tensor ``to_module`` lacks is first created as a Parameter holding ``from_module``'s
    parametrized value. Nothing happens when ``from_module`` is not parametrized.

    Returns:
        ``to_module``.
    """
    if not is_parametrized(from_module):
        return to_module
    names = list(from_module.parametrizations) if tensor_name is None else [tensor_name]
    for name in names:
        if not hasattr(to_module, name):
            setattr(to_module, name, Parameter(getattr(from_module, name)))
        source = from_module.parametrizations[name]
        for parametrization in source:
            register_parametrization(to_module, name, parametrization)
        target = to_module.parametrizations[name]
        if hasattr(source, "original"):
            target.original = source.original
        else:
            index = 0
            while hasattr(source, f"original{index}"):
                setattr(target, f"original{index}", getattr(source, f"original{index}"))
                index += 1
    return to_module
