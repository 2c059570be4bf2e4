"""Automatic differentiation (``genesis.autograd``, as ``torch.autograd``).

- :mod:`~genesis.autograd.grad_mode`: whether ops are recorded (per thread) and the context managers that switch it.
- :mod:`~genesis.autograd.function`: graph nodes, the ``Function`` base whose one ``apply`` does all graph
  bookkeeping, the ``Primitive`` base of built-in ops, and the view machinery of in-place changes.
- :mod:`~genesis.autograd.engine`: the backward pass (``backward``, ``grad``).
- :mod:`~genesis.autograd.anomaly_mode`: NaN checks of every node's gradients while debugging.
- :mod:`~genesis.autograd.gradcheck`: ``gradcheck`` and ``gradgradcheck``, analytical against numerical Jacobians.
- :mod:`~genesis.autograd.functional`: Jacobians, Hessians and their products with vectors.
- :mod:`~genesis.autograd.variable`: ``Variable``, the legacy wrapper (a tensor, as in torch since 0.4).
- :mod:`~genesis.autograd.graph`: hooks on the tensors saved for backward (``saved_tensors_hooks``, ``save_on_cpu``)
  and on several tensors' gradients at once (``register_multi_grad_hook``).
- :mod:`~genesis.autograd.forward_ad`: forward-mode AD with dual tensors (``dual_level``, ``make_dual``,
  ``unpack_dual``).
- ``genesis.autograd.profiler``: torch's legacy profiler API over :mod:`genesis.profiler` (a layer above this
  package, so imported by ``genesis`` itself rather than here).

Every differentiable op is a small ``Function`` subclass with ``forward`` and ``backward`` side by side.
"""

from genesis.autograd import forward_ad, functional, graph
from genesis.autograd.anomaly_mode import (
    detect_anomaly,
    is_anomaly_check_nan_enabled,
    is_anomaly_enabled,
    set_detect_anomaly,
)
from genesis.autograd.engine import backward, grad, run_backward
from genesis.autograd.function import (
    AccumulateGrad,
    BackwardCtx,
    CopySlices,
    Function,
    Node,
    Overwrite,
    Primitive,
    RemovableHandle,
    ViewOfBase,
    once_differentiable,
    record_write_through_view,
    refresh_view_history,
    retain_grad,
    set_tensor_type,
    take_history,
    view_positions,
    warn_non_leaf_grad,
)
from genesis.autograd.grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    is_multithreading_enabled,
    no_grad,
    set_grad_enabled,
    set_multithreading_enabled,
)
from genesis.autograd.gradcheck import GradcheckError, gradcheck, gradgradcheck
from genesis.autograd.variable import Variable

__all__ = [
    "Function", "Primitive", "no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "is_grad_enabled",
    "is_inference_mode_enabled", "is_multithreading_enabled", "set_multithreading_enabled", "grad", "backward",
    "Node", "AccumulateGrad", "BackwardCtx", "RemovableHandle",
    "Variable", "forward_ad", "functional", "graph", "detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled",
    "is_anomaly_check_nan_enabled", "gradcheck", "gradgradcheck", "GradcheckError", "once_differentiable",
    # the engine and view machinery, for the layers above
    "run_backward", "set_tensor_type", "Overwrite", "CopySlices", "ViewOfBase", "view_positions", "take_history",
    "refresh_view_history", "record_write_through_view", "retain_grad", "warn_non_leaf_grad",
]
