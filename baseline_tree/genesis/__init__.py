"""Genesis: a deep learning framework you can read, on PyTorch's API.

Layers, each importing only the one below: Tensor (``genesis.tensor``) → Function and autograd
(``genesis.autograd``, ``genesis.functional``) → NDArray (``genesis.ndarray``) → device backends
(``genesis.backends``).
"""

import builtins as _builtins

from genesis import amp, autograd, backends, cuda, linalg, nn, optim, special, utils
from genesis import dtypes as _dtypes
from genesis import tensor_methods as _tensor_methods  # noqa: F401 - binds the Tensor methods
from genesis.amp import autocast
from genesis.autograd import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from genesis.device import device
from genesis.dtypes import (
    bfloat16,
    dtype,
    float16,
    float32,
    float64,
    get_default_dtype,
    int8,
    int16,
    int32,
    int64,
    promote_types,
    set_default_dtype,
    uint8,
)
from genesis.functional import *  # noqa: F403 - the torch-style namespace of tensor ops
from genesis.functional import __all__ as _functional_all
from genesis.functional.extra_misc import broadcast_shapes
from genesis.linalg import det, logdet, matrix_exp, matrix_power, slogdet
from genesis.linalg import inv as inverse
from genesis.linalg.solvers import cholesky_inverse, cholesky_solve
from genesis.linalg.spectral import pinverse
from genesis.memory_format import channels_last, channels_last_3d, contiguous_format, memory_format, preserve_format
from genesis.random import (
    Generator,
    bernoulli,
    get_rng_state,
    initial_seed,
    manual_seed,
    multinomial,
    normal,
    rand,
    rand_like,
    randint,
    randint_like,
    randn,
    randn_like,
    randperm,
    seed,
    set_rng_state,
)
from genesis.serialization import load, load_checkpoint, save, save_checkpoint
from genesis.tensor import (
    Size,
    Tensor,
    arange,
    as_tensor,
    empty,
    empty_like,
    eye,
    from_dlpack,
    from_numpy,
    full,
    full_like,
    linspace,
    logspace,
    ones,
    ones_like,
    scalar_tensor,
    tensor,
    zeros,
    zeros_like,
)

__version__ = "0.1.0"

bool = _dtypes.bool_  # noqa: A001 - torch names its dtype genesis.bool too
float = float32  # noqa: A001
double = float64
half = float16
long = int64
int = int32  # noqa: A001
short = int16


def is_tensor(obj: object) -> _builtins.bool:
    """Whether ``obj`` is a Genesis tensor."""
    return isinstance(obj, Tensor)


def is_floating_point(t: Tensor) -> _builtins.bool:
    return t.dtype.is_floating_point


def numel(t: Tensor) -> _builtins.int:
    return t.numel()


def result_type(a: object, b: object) -> dtype:
    """The dtype an op on ``a`` and ``b`` (tensors or numbers) would produce."""
    if isinstance(a, Tensor) and isinstance(b, Tensor):
        return _dtypes.result_type(a.dtype, a.ndim, b.dtype, b.ndim)
    if isinstance(a, Tensor):
        return _dtypes.result_type_scalar(a.dtype, b)
    if isinstance(b, Tensor):
        return _dtypes.result_type_scalar(b.dtype, a)
    return _dtypes.promote_types(_dtypes.scalar_dtype(a), _dtypes.scalar_dtype(b))


def synchronize(device: object = None) -> None:  # noqa: F811 - torch names the argument device
    """Wait for queued work on a device (the CPU is always synchronous)."""
    from genesis.device import to_device

    dev = to_device(device if device is not None else "cpu")
    dev.backend.synchronize(dev)
