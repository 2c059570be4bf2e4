"""Genesis: a deep learning framework you can read, on PyTorch's API.

Layers, lowest first, each importing only those below it (``tests/test_import_layers.py`` checks):
dtypes and devices → NDArray (``genesis.ndarray``) → backend implementations (``genesis._impl``) → autograd
(``genesis.autograd``) → Tensor (``genesis.tensor``) → ops and their registry (``genesis.ops``) → nn, optim, amp,
cuda, serialization → models. The ops of this namespace come from the registry (``genesis.ops.registry``).
"""

import builtins as _builtins
import math as _math

from genesis import (
    _dynamo,
    accelerator,
    amp,
    autograd,
    backends,
    compiler,
    cpu,
    cuda,
    distributed,
    distributions,
    fft,
    func,
    futures,
    jit,
    linalg,
    multiprocessing,
    nn,
    onnx,
    ops,
    optim,
    profiler,
    random,
    return_types,
    serialization,
    signal,
    sparse,
    special,
    testing,
    utils,
    version,
)
from genesis import dtypes as _dtypes
from genesis.amp import (
    autocast,
    clear_autocast_cache,
    get_autocast_dtype,
    is_autocast_cache_enabled,
    is_autocast_enabled,
    set_autocast_cache_enabled,
    set_autocast_dtype,
    set_autocast_enabled,
)
from genesis.autograd import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from genesis.autograd import profiler as _autograd_profiler  # torch.autograd.profiler, above autograd
from genesis.autograd.anomaly_mode import is_anomaly_check_nan_enabled, is_anomaly_enabled, set_anomaly_enabled
from genesis.backends import (
    are_deterministic_algorithms_enabled,
    get_deterministic_debug_mode,
    is_deterministic_algorithms_warn_only_enabled,
    set_deterministic_debug_mode,
    use_deterministic_algorithms,
)
from genesis.backends.cuda import get_float32_matmul_precision, set_float32_matmul_precision
from genesis.device import (
    device,
    get_default_device,
    get_num_interop_threads,
    get_num_threads,
    is_warn_always_enabled,
    set_default_device,
    set_flush_denormal,
    set_num_interop_threads,
    set_num_threads,
    set_warn_always,
)
from genesis.dtypes import (
    bfloat16,
    complex64,
    complex128,
    dtype,
    finfo,
    float16,
    float32,
    float64,
    get_default_dtype,
    iinfo,
    int8,
    int16,
    int32,
    int64,
    promote_types,
    set_default_dtype,
    uint8,
)
from genesis.func import vmap
from genesis.memory_format import channels_last, channels_last_3d, contiguous_format, memory_format, preserve_format
from genesis.nn.functional.distance import cosine_similarity, pairwise_distance
from genesis.nn.functional.namespace_aliases import *  # noqa: F403 - torch's top-level spellings of nn ops
from genesis.ops import *  # noqa: F403 - the torch-style namespace of tensor ops, from the op registry
from genesis.ops.autocast import get_autocast_cpu_dtype, get_autocast_gpu_dtype, is_autocast_cpu_enabled
from genesis.ops.out_args import with_out as _with_out
from genesis.ops.segment import segment_reduce
from genesis.ops.sparse import layout, sparse_coo, sparse_csr, strided
from genesis.ops.storage import TypedStorage, UntypedStorage
from genesis.printing import set_printoptions
from genesis.random import Generator, get_rng_state, initial_seed, manual_seed, seed, set_rng_state
from genesis.samplers import binomial, poisson
from genesis.serialization import load, load_checkpoint, save, save_checkpoint
from genesis.special import gammainc as igamma
from genesis.special import gammaincc as igammac
from genesis.tensor import Size, Tensor
from genesis.tensor_types import (
    BFloat16Tensor,
    BoolTensor,
    ByteTensor,
    CharTensor,
    DoubleTensor,
    FloatTensor,
    HalfTensor,
    IntTensor,
    LongTensor,
    ShortTensor,
    set_default_tensor_type,
)

__version__ = version.__version__

# torch's constants: genesis.pi, genesis.e, genesis.inf, genesis.nan, and genesis.newaxis (None) for indexing.
pi = _math.pi
e = _math.e
inf = _math.inf
nan = _math.nan
newaxis = None
#: The CPU's default random generator (``torch.default_generator``): ``manual_seed`` and the random ops use it.
default_generator = random.default_generator("cpu")



def _inplace_function(name: str) -> object:
    """torch's in-place function ``name`` of its namespace: ``genesis.relu_(x)`` is ``x.relu_()``."""
    method = getattr(Tensor, name)

    def fn(input: Tensor, *args: object, **kwargs: object) -> Tensor:
        return method(input, *args, **kwargs)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"In place, as ``input.{name}(...)``."
    return fn


globals().update({f"{name}_": _inplace_function(f"{name}_") for name in ops.registry.INPLACE_FUNCTIONS})
# torch's out= keyword on the namespace's op functions (genesis.add(a, b, out=c)); genesis.ops keeps the plain ones.
# One wrapper per function, so that aliases stay the same object (genesis.arcsin is genesis.asin).
_out_wrappers: dict = {}
globals().update({name: _out_wrappers.setdefault(getattr(ops, name), _with_out(name, getattr(ops, name)))
                  for name in ops.__all__})
del _out_wrappers

bool = _dtypes.bool_  # torch names its dtype genesis.bool too
float = float32
double = float64
cfloat = complex64
cdouble = complex128
half = float16
long = int64
int = int32
short = int16


def is_tensor(obj: object) -> _builtins.bool:
    """Whether ``obj`` is a Genesis tensor."""
    return isinstance(obj, Tensor)


def is_floating_point(t: Tensor) -> _builtins.bool:
    return t.dtype.is_floating_point


def _assert(condition: object, message: str) -> None:
    """torch's ``_assert``: a traceable ``assert`` that models call in ``forward`` (``condition`` may be a bool or a
    one-element tensor); raises ``AssertionError(message)`` when it is false."""
    if not condition:
        raise AssertionError(message)


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


def typename(obj: object) -> str:
    """The type name of ``obj`` as torch's ``typename``: a tensor's legacy type (``"genesis.FloatTensor"``), else
    the qualified class name (``"int"``, ``"genesis.nn.modules.linear.Linear"``)."""
    if isinstance(obj, Tensor):
        return obj.type()
    cls = obj if isinstance(obj, type) else type(obj)
    module = cls.__module__
    return cls.__qualname__ if module in (None, "builtins") else f"{module}.{cls.__qualname__}"


def compile(model: object = None, *, fullgraph: _builtins.bool = False, dynamic: object = None,
            backend: object = "inductor", mode: object = None, options: object = None,
            disable: _builtins.bool = False) -> object:
    """torch's ``compile``, for scripts that call it. A module comes back wrapped as torch's, in an
    ``OptimizedModule`` that runs it (its ``_orig_mod``): eagerly, or with ``mode="reduce-overhead"`` (as torch's
    mode of that name; also ``"max-autotune"``, ``backend="cudagraphs"`` and ``options={"triton.cudagraphs":
    True}``) by replaying CUDA graphs of its forward and backward on CUDA, which
    removes their host cost (see ``genesis._dynamo.cudagraphs``). A function comes back unchanged (used as a
    decorator, with or without arguments, it leaves the function as it is). To cut the host cost of a whole
    training step, optimizer included, capture it in a CUDA graph (``genesis.cuda.graph``)."""
    if model is None:
        return lambda fn: compile(fn, backend=backend, mode=mode, options=options, disable=disable)
    if isinstance(model, nn.Module) and not disable:
        if backend == "cudagraphs" or (isinstance(options, dict) and options.get("triton.cudagraphs")):
            mode = "reduce-overhead"  # torch's other spellings of CUDA graphs
        return _dynamo.OptimizedModule(model, mode)  # torch's wrapper: state-dict keys under "_orig_mod."
    return model


def synchronize(device: object = None) -> None:  # noqa: F811 - torch names the argument device
    """Wait for queued work on a device (the CPU is always synchronous)."""
    from genesis.device import to_device

    dev = to_device(device if device is not None else "cpu")
    dev.backend.synchronize(dev)
