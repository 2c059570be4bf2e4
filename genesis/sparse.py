"""``genesis.sparse``: torch's sparse namespace for sparse COO (and CSR) tensors on the CPU (``genesis.ops.sparse``
and ``genesis.ops.sparse_csr`` hold the tensor classes and their ops).

:func:`mm` and :func:`addmm` multiply a sparse matrix and a strided one, :func:`sum` reduces, :func:`softmax` and
:func:`log_softmax` normalize over the stored entries only (unspecified entries count as minus infinity, as torch).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from genesis import dtypes
from genesis.ndarray import normalize_dim
from genesis.ops import linalg
from genesis.ops.sparse import SparseTensor, linear_index, sparse_matmul, sparse_sum
from genesis.ops.sparse_base import SparseBase
from genesis.ops.sparse_csr import SparseCsrTensor
from genesis.tensor import Tensor, zeros

__all__ = ["addmm", "check_sparse_tensor_invariants", "log_softmax", "mm", "softmax", "sum"]


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
    # Shift by each slice's maximum for stability; softmax does not depend on the shift, so it needs no gradient.
    top = zeros(per_slice, dtype=values.dtype).index_reduce(0, slices, values.detach(), "amax", include_self=False)
    shifted = values - top[slices]
    total = zeros(per_slice, dtype=values.dtype).index_add(0, slices, shifted.exp())[slices]
    out = shifted - total.log() if op == "log_softmax" else shifted.exp() / total
    return SparseTensor(c._indices(), out, c.shape, coalesced=True)
