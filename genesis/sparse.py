"""``genesis.sparse``: torch's sparse namespace for sparse COO (and CSR) tensors (``genesis.ops.sparse`` and
``genesis.ops.sparse_csr`` hold the tensor classes and their ops).

:func:`mm` and :func:`addmm` multiply a sparse matrix and a strided one, :func:`sum` reduces, :func:`softmax` and
:func:`log_softmax` normalize over the stored entries only (unspecified entries count as minus infinity, as torch).
"""

from __future__ import annotations

import warnings
from typing import Any, Callable, Sequence

from genesis import dtypes
from genesis.autograd import Function
from genesis.device import factory_device
from genesis.memory_format import layout, sparse_coo, sparse_csr
from genesis.ndarray import normalize_dim
from genesis.ops import linalg
from genesis.ops.join import stack
from genesis.ops.sparse import SparseTensor, linear_index, sparse_coo_tensor, sparse_matmul, sparse_sum
from genesis.ops.sparse_base import SparseBase
from genesis.ops.sparse_csr import SparseCsrTensor
from genesis.tensor import Size, Tensor, arange, zeros

__all__ = ["BFloat16Tensor", "ByteTensor", "CharTensor", "DoubleTensor", "FloatTensor", "HalfTensor", "IntTensor",
           "LongTensor", "ShortTensor", "addmm", "check_sparse_tensor_invariants", "log_softmax", "mm", "softmax",
           "spdiags", "sum"]


class check_sparse_tensor_invariants:
    """torch's switch of the invariant checks in sparse constructors: a context manager, a decorator, and
    ``enable()`` / ``disable()`` / ``is_enabled()`` (off by default, as torch's).

    Genesis's constructors check the indices of a COO tensor against its size whatever the switch says; the switch
    keeps its state for the programs (and libraries) that save, set and restore it.
    """

    _enabled = False

    @staticmethod
    def is_enabled() -> bool:
        """Whether the checks are switched on."""
        return check_sparse_tensor_invariants._enabled

    @staticmethod
    def enable() -> None:
        """Switch the checks on."""
        check_sparse_tensor_invariants._enabled = True

    @staticmethod
    def disable() -> None:
        """Switch the checks off."""
        check_sparse_tensor_invariants._enabled = False

    def __init__(self, enable: bool = True) -> None:
        self.state = enable
        self.saved_state: bool | None = None

    def __enter__(self) -> None:
        if self.saved_state is not None:
            raise RuntimeError("This context manager instance is already activated. Use a different context manager "
                               "instance for context nesting.")
        self.saved_state = self.is_enabled()
        check_sparse_tensor_invariants._enabled = self.state

    def __exit__(self, *exc: Any) -> None:
        check_sparse_tensor_invariants._enabled = self.saved_state
        self.saved_state = None

    def __call__(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """``fn`` run with the switch in this instance's state."""

        def with_switch(*args: Any, **kwargs: Any) -> Any:
            with type(self)(self.state):
                return fn(*args, **kwargs)

        return with_switch


class _SparseTypedMeta(type):
    """torch's deprecated sparse legacy constructors (``torch.sparse.FloatTensor(indices, values, size)``): calling
    the class makes a sparse COO tensor (on the CPU from sizes, on the device of the parts from indices and values,
    as torch's); ``isinstance`` asks for a sparse COO CPU tensor of its dtype."""

    dtype: dtypes.dtype
    device_type = "cpu"

    def __call__(cls, *args: Any, device: Any = None) -> SparseTensor:
        if device is not None and factory_device(device).type != cls.device_type:
            raise RuntimeError(f"{cls.__name__}: legacy constructor expects device type: {cls.device_type} but "
                               f"device type: {device} was passed")
        if len(args) in (2, 3) and isinstance(args[0], Tensor) and isinstance(args[1], Tensor):
            # As torch's, the values keep their own dtype (the class's is not imposed on them).
            form = "indices, values, shape" if len(args) == 3 else "indices, values"
            warnings.warn(f"torch.sparse.SparseTensor({form}, *, device=) is deprecated.  Please use "
                          f"torch.sparse_coo_tensor({form}, dtype=, device=).", UserWarning, stacklevel=2)
            return sparse_coo_tensor(*args)
        sizes = tuple(args[0]) if len(args) == 1 and isinstance(args[0], Size) else args
        if not all(isinstance(n, int) and not isinstance(n, bool) for n in sizes):
            raise TypeError(f"{cls.__name__}(): expected (indices, values), (indices, values, size) or sizes, got "
                            f"({', '.join(type(a).__name__ for a in args)})")
        if sizes:
            warnings.warn("torch.sparse.SparseTensor(shape, *, device=) is deprecated.  Please use "
                          "torch.sparse_coo_tensor(shape, dtype=, device=).", UserWarning, stacklevel=2)
        sizes = sizes or (0,)  # no arguments: a 1-d tensor of size 0, as torch's
        empty = zeros(len(sizes), 0, dtype=dtypes.int64, device=cls.device_type)
        return SparseTensor(empty, zeros(0, dtype=cls.dtype, device=cls.device_type), sizes, coalesced=True)

    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, SparseTensor) and obj.dtype is cls.dtype and obj.device.type == cls.device_type


def _sparse_typed(dtype: dtypes.dtype) -> type:
    name = dtypes.LEGACY_TYPE_NAMES[dtype]
    doc = (f"A sparse COO CPU tensor of dtype {dtype.name} (deprecated legacy constructor, as ``torch.sparse.{name}``):"
           " (indices, values), (indices, values, size), or sizes (an empty tensor).")
    return _SparseTypedMeta(name, (), {"dtype": dtype, "__doc__": doc, "__module__": "genesis.sparse"})


FloatTensor = _sparse_typed(dtypes.float32)
DoubleTensor = _sparse_typed(dtypes.float64)
HalfTensor = _sparse_typed(dtypes.float16)
BFloat16Tensor = _sparse_typed(dtypes.bfloat16)
ByteTensor = _sparse_typed(dtypes.uint8)
CharTensor = _sparse_typed(dtypes.int8)
ShortTensor = _sparse_typed(dtypes.int16)
IntTensor = _sparse_typed(dtypes.int32)
LongTensor = _sparse_typed(dtypes.int64)


def _as_coo(x: Tensor) -> Tensor:
    """A CSR matrix as its COO tensor (products and sums go through COO); anything else as it is."""
    return x.to_sparse() if isinstance(x, SparseCsrTensor) else x


def mm(mat1: Tensor, mat2: Tensor) -> Tensor:
    """``mat1 @ mat2`` where ``mat1`` (or ``mat2``) is a 2-D sparse matrix (COO or CSR) and the other a 2-D strided
    one, as ``torch.sparse.mm``: a strided result (sparse @ sparse: a coalesced COO tensor), with gradients for the
    strided operand and the sparse values (a leaf sparse tensor's gradient is sparse, over its coalesced pattern)."""
    if not isinstance(mat1, SparseBase) and not isinstance(mat2, SparseBase):
        raise RuntimeError("sparse.mm: expected a sparse COO operand, got two strided tensors (use genesis.mm)")
    return sparse_matmul(_as_coo(mat1), _as_coo(mat2), "sparse.mm")


def addmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """``beta * input + alpha * (mat1 @ mat2)`` for a sparse ``mat1`` (COO or CSR) and strided ``input`` and
    ``mat2``, as ``torch.sparse.addmm``: a strided result; ``input`` broadcasts to the product's shape and, with
    ``beta=0``, is ignored (NaN in it does not propagate)."""
    if isinstance(input, SparseBase):
        raise RuntimeError(f"sparse.addmm: expected a strided input tensor, got layout {input.layout}")
    product = linalg.mm(_as_coo(mat1), _as_coo(mat2))
    if input.dtype is not product.dtype:
        raise RuntimeError(f"sparse.addmm: expected scalar type {product.dtype} but found {input.dtype}")
    base = input.expand(product.shape)
    out = product if alpha == 1 else product * alpha
    if beta == 0:
        return out
    return out + (base if beta == 1 else base * beta)


def sum(input: Tensor, dim: int | Sequence[int] | None = None, dtype: Any = None) -> Tensor:
    """Sum of a sparse COO tensor over ``dim`` (all dims by default), as ``torch.sparse.sum``: a strided tensor once
    every sparse dimension is summed, else a coalesced sparse tensor."""
    return sparse_sum(input, dim, dtype)


def spdiags(diagonals: Tensor, offsets: Tensor, shape: Sequence[int], layout: layout | None = None) -> SparseBase:
    """A sparse (m, n) matrix from diagonals, as ``torch.sparse.spdiags`` (SciPy's ``spdiags``): the element
    ``diagonals[i, j]`` lands at ``(j - offsets[i], j)``, the columns past ``n`` or rows outside ``[0, m)``
    dropped. An uncoalesced COO tensor, entries diagonal by diagonal (``layout=genesis.sparse_csr``: a CSR one);
    differentiable in ``diagonals``.

    Args:
        diagonals: (d, k) values, one row per diagonal (a vector for one diagonal).
        offsets: int64 (d,) distinct offsets: 0 the main diagonal, positive above it, negative below.
        shape: the matrix's (m, n).
        layout: ``genesis.sparse_coo`` (the default) or ``genesis.sparse_csr``.
    """
    if layout is not None and layout not in (sparse_coo, sparse_csr):
        raise RuntimeError(f"spdiags: Only output layouts (Sparse, SparseCsr) are supported, got {layout}")
    if not isinstance(offsets, Tensor):
        raise TypeError(f"spdiags(): argument 'offsets' (position 2) must be Tensor, not {type(offsets).__name__}")
    if offsets.dtype is not dtypes.int64:
        raise RuntimeError(f"spdiags: Offset Tensor must have dtype Long but got {offsets.dtype}")
    if diagonals.ndim not in (1, 2):
        raise RuntimeError("spdiags: Diagonals must be vector or matrix")
    if offsets.ndim > 1:
        raise RuntimeError("spdiags: Offsets must be scalar or vector")
    if len(shape) != 2:
        raise RuntimeError("spdiags: Output shape must be 2d")
    rows_of_diagonals = diagonals.reshape(1, -1) if diagonals.ndim == 1 else diagonals
    offsets = offsets.reshape(-1)
    if rows_of_diagonals.shape[0] != offsets.shape[0]:
        raise RuntimeError(f"spdiags: Number of diagonals ({rows_of_diagonals.shape[0]}) does not match the number "
                           f"of offsets ({offsets.shape[0]})")
    if offsets.unique().shape[0] != offsets.shape[0]:
        raise RuntimeError("spdiags: Offset tensor contains duplicate values")
    m, n = (int(size) for size in shape)
    width = min(n, rows_of_diagonals.shape[1])
    cols = arange(width, device=diagonals.device).expand(offsets.shape[0], width)  # (d, width)
    rows = cols - offsets.unsqueeze(1)
    inside = (rows >= 0) & (rows < m)
    out = SparseTensor(stack([rows[inside], cols[inside]]), rows_of_diagonals[:, :width][inside], (m, n))
    return out.to_sparse_csr() if layout is sparse_csr else out


def softmax(input: Tensor, dim: int, *, dtype: Any = None) -> SparseTensor:
    """Softmax of a sparse COO tensor along ``dim`` over its stored entries only, as ``torch.sparse.softmax``:
    ``exp(x_i) / sum_j exp(x_j)`` within each slice, unspecified entries treated as minus infinity (they stay
    unspecified). A coalesced result over the coalesced pattern; ``dtype`` casts the values first."""
    return _softmax("softmax", input, dim, dtype)


def log_softmax(input: Tensor, dim: int, *, dtype: Any = None) -> SparseTensor:
    """``log(softmax(input, dim))`` over the stored entries, as ``torch.sparse.log_softmax`` (see :func:`softmax`)."""
    return _softmax("log_softmax", input, dim, dtype)


def _softmax(op: str, input: Tensor, dim: int, dtype: Any) -> SparseTensor:
    if not isinstance(input, SparseTensor):
        raise NotImplementedError(f"sparse.{op}: expected a sparse COO tensor, got layout {input.layout}")
    d = normalize_dim(f"sparse.{op}", dim, input.ndim)
    c = input.coalesce()
    values = c._values() if dtype is None else c._values().to(dtypes.to_dtype(dtype))
    if values.dtype not in (dtypes.float32, dtypes.float64):
        raise NotImplementedError(f'sparse.{op}: "softmax" not implemented for {values.dtype}')
    k = c.sparse_dim()
    if d >= k:  # a dense dim: each stored value's own softmax
        out = getattr(values, op)(d - k + 1)
        return SparseTensor(c._indices(), out, c.shape, coalesced=True)
    # The entries that share every sparse coordinate but ``d`` form one slice.
    others = [j for j in range(k) if j != d]
    _, slices = linear_index(c._indices()[others], [c.shape[j] for j in others]).unique(return_inverse=True)
    per_slice = (int(slices.max().item()) + 1 if slices.shape[0] else 0,) + tuple(values.shape[1:])
    out = _SliceSoftmax.apply(values, slices, per_slice, op == "log_softmax")
    return SparseTensor(c._indices(), out, c.shape, coalesced=True)


def _slice_sums(x: Tensor, slices: Tensor, per_slice: tuple[int, ...]) -> Tensor:
    """Each entry's slice total of ``x``, summed in entry order (as torch's kernel walks a slice)."""
    return zeros(per_slice, dtype=x.dtype, device=x.device).index_add(0, slices, x)[slices]


class _SliceSoftmax(Function):
    """Softmax (``log``: log-softmax) of stored values within the slices that ``slices`` numbers, rounded as torch's
    sparse CPU kernel: ``exp(x - max) * (1 / sum)`` (``x - (max + log(sum))``), and differentiated as it:
    ``out * (grad - sum(out * grad))`` (``grad - exp(out) * sum(grad)``) within each slice."""

    @staticmethod
    def forward(ctx, values: Tensor, slices: Tensor, per_slice: tuple[int, ...], log: bool) -> Tensor:
        start = zeros(per_slice, dtype=values.dtype, device=values.device)
        top = start.index_reduce(0, slices, values, "amax", include_self=False)[slices]
        shifted = (values - top).exp()
        total = _slice_sums(shifted, slices, per_slice)
        out = values - (top + total.log()) if log else shifted * total.reciprocal()
        ctx.save_for_backward(out, slices)
        ctx.per_slice, ctx.log = per_slice, log
        return out

    @staticmethod
    def backward(ctx, grad: Tensor) -> tuple[Tensor, None, None, None]:
        out, slices = ctx.saved_tensors
        if ctx.log:
            return grad - out.exp() * _slice_sums(grad, slices, ctx.per_slice), None, None, None
        return out * (grad - _slice_sums(out * grad, slices, ctx.per_slice)), None, None, None
