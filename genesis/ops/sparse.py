"""Sparse COO tensors: :class:`SparseTensor`, its constructors, its ops and the sparse products.

A sparse COO tensor is ``(indices, values, size)``: ``indices`` an int64 (sparse_dim, nnz) tensor of coordinates and
``values`` a (nnz, *dense_shape) tensor of the entries there (duplicates add up). Genesis keeps both parts as
ordinary dense Tensors instead of asking a backend for a sparse array: an NDArray is a strided view over one buffer,
which a sparse tensor is not, and every sparse op here is a short composition of dense ops (``index_add``,
``index_select``, ``unique``, ``searchsorted``), so autograd, dtype checks and devices come from the ops beneath with
no new backend primitive. Gradients flow through ``values``: a sparse tensor made with ``requires_grad=True`` owns a
leaf ``values`` tensor whose gradient is shown as a sparse tensor over the coalesced pattern (as torch's
``sparse.mm`` gives it).

The ops follow torch's sparse COO kernels, down to whether a result is marked coalesced: the ops that distribute
over duplicate entries (``neg``, products and quotients by a scalar or a strided tensor, ``transpose``, casts) keep
the entries as they are; the other zero-preserving ops (``abs``, ``sqrt``, ``relu``, ``pow``, ... listed in
:data:`COALESCING_UNARY_OPS`) coalesce first and apply to the values. Sparse tensors support only the operations
listed in :data:`SUPPORTED`; any other op raises NotImplementedError naming the op (as torch does for ops without a
sparse kernel). A sparse tensor lives on the device of its parts (the CPU or a GPU: the dense ops beneath run on
both), and ``to(device)`` / ``cuda()`` / ``cpu()`` move indices and values together. What COO and CSR tensors share
(the layouts, the base class) is ``genesis.ops.sparse_base``; CSR tensors are ``genesis.ops.sparse_csr``.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence

from genesis import dtypes
from genesis.autograd import Primitive, is_grad_enabled
from genesis.device import device as Device
from genesis.memory_format import layout, sparse_coo, sparse_csr, strided  # also importable from here, as before
from genesis.ndarray import NDArray, broadcast_shapes, check_same_device, normalize_dim, normalize_dims
from genesis.ops import sparse_shape
from genesis.ops.join import cat, stack
from genesis.ops.shape import repeat_interleave
from genesis.ops.sorting import searchsorted
from genesis.ops.sparse_base import SparseBase, coerce_tensor
from genesis.tensor import Size, Tensor, arange, zeros

#: torch's zero-preserving unary ops on sparse COO tensors (``f(0) == 0``): they coalesce, then apply to the values.
COALESCING_UNARY_OPS = ("abs", "absolute", "sgn", "sign", "sqrt", "square", "sin", "sinh", "tan", "tanh", "asin",
                        "arcsin", "asinh", "arcsinh", "atan", "arctan", "atanh", "arctanh", "ceil", "floor", "round",
                        "trunc", "fix", "frac", "expm1", "log1p", "erf", "erfinv", "relu", "rad2deg", "deg2rad",
                        "signbit", "isnan", "isinf", "isposinf", "isneginf", "nan_to_num")

#: The operations a sparse COO tensor supports (everything else raises NotImplementedError naming the op).
SUPPORTED = ("to_dense", "to_sparse", "to_sparse_csr", "coalesce", "is_coalesced", "indices", "values", "_indices",
             "_values", "_nnz", "sparse_dim", "dense_dim", "size", "shape", "dim", "ndim", "numel", "dtype", "device",
             "layout", "is_sparse", "to", "float", "double", "half", "long", "int", "bool", "cpu", "requires_grad",
             "requires_grad_", "grad", "detach", "clone", "zero_", "+", "-", "*", "/", "//", "**", "add", "sub",
             "mul", "div", "floor_divide", "neg", "positive", "pow", "t", "T", "mT", "transpose", "swapaxes",
             "index_select", "sum", "norm", "mm", "matmul", "@", "data", "add_", "sub_", "mul_", "div_", "neg_",
             "negative_", "+=", "-=", "*=", "/=", "unsqueeze", "select", "narrow_copy", "permute", "cuda",
             "[] (integers, None, ..., :)") + COALESCING_UNARY_OPS + (
                "genesis.sparse.mm", "genesis.sparse.addmm", "genesis.sparse.sum", "genesis.sparse.softmax",
                "genesis.sparse.log_softmax", "genesis.spmm")


class SparseTensor(SparseBase):
    """A sparse COO tensor: int64 ``indices`` (sparse_dim, nnz), ``values`` (nnz, *dense_shape) and a size.

    Made by :func:`sparse_coo_tensor` or ``Tensor.to_sparse()``; ``to_dense()`` turns it back into a strided tensor.
    """

    _KIND = "COO"
    _SUPPORTED = SUPPORTED

    def __init__(self, indices: Tensor, values: Tensor, size: tuple[int, ...], coalesced: bool = False) -> None:
        self._indices_t = indices
        self._values_t = values
        self._size = Size(size)
        self._coalesced = coalesced
        self._vc = [0]

    def _with_values(self, values: Tensor) -> SparseTensor:
        return SparseTensor(self._indices_t, values, self._size[:self.sparse_dim()] + tuple(values.shape[1:]),
                            self._coalesced)

    def _to_device(self, device: Device) -> SparseTensor:
        return SparseTensor(self._indices_t.to(device), self._values_t.to(device), self._size, self._coalesced)

    # ------------------------------------------------------------ metadata
    @property
    def layout(self) -> layout:
        return sparse_coo

    @property
    def is_sparse(self) -> bool:
        return True

    def sparse_dim(self) -> int:
        """The number of sparse dimensions (rows of ``indices``)."""
        return self._indices_t.shape[0]

    def dense_dim(self) -> int:
        """The number of dense dimensions (trailing dims of each value)."""
        return self._values_t.ndim - 1

    def _nnz(self) -> int:
        """The number of stored entries (duplicates included until coalesced)."""
        return self._values_t.shape[0]

    def is_coalesced(self) -> bool:
        """Whether the indices are sorted and unique (as produced by :meth:`coalesce`)."""
        return self._coalesced

    def __repr__(self) -> str:
        extra = f", grad_fn=<{self.grad_fn.name()}>" if self.grad_fn is not None else ""
        extra += ", requires_grad=True" if self.requires_grad and self.grad_fn is None else ""
        return (f"tensor(indices={self._indices_t!r},\n       values={self._values_t.detach()!r},\n       "
                f"size={tuple(self._size)}, nnz={self._nnz()}, layout=genesis.sparse_coo{extra})")

    # ------------------------------------------------------------ parts
    def _indices(self) -> Tensor:
        """The indices as stored (possibly uncoalesced)."""
        return self._indices_t

    def _values(self) -> Tensor:
        """The values as stored (possibly uncoalesced), with their autograd history."""
        return self._values_t

    def indices(self) -> Tensor:
        """The indices of a coalesced tensor; RuntimeError on an uncoalesced one (as torch)."""
        self._check_coalesced("indices")
        return self._indices_t

    def values(self) -> Tensor:
        """The values of a coalesced tensor; RuntimeError on an uncoalesced one (as torch)."""
        self._check_coalesced("values")
        return self._values_t

    def _check_coalesced(self, op: str) -> None:
        if not self._coalesced:
            raise RuntimeError(f"{op}: Cannot get {op} on an uncoalesced tensor, please call .coalesce() first")

    # ------------------------------------------------------------ autograd
    def _grad_from(self, g: Tensor) -> SparseTensor:
        """A leaf's gradient over its coalesced pattern, from the gradient of its stored values."""
        # Every duplicate of one position received the gradient of that position: average them, not add.
        summed = SparseTensor(self._indices_t, g, self._size).coalesce()
        counts = SparseTensor(self._indices_t, _ones_for(g), self._size).coalesce()._values_t
        return SparseTensor(summed._indices_t, summed._values_t / counts, self._size, coalesced=True)

    def clone(self) -> SparseTensor:
        """A copy with indices and values of its own."""
        return SparseTensor(self._indices_t.clone(), self._values_t.clone(), self._size, self._coalesced)

    def zero_(self) -> SparseTensor:
        """Drop every stored entry in place (nnz becomes 0), as torch's ``zero_`` on a sparse tensor."""
        self._indices_t = self._indices_t[:, :0]
        self._values_t = self._values_t[:0].detach()
        self._coalesced = True
        self._vc[0] += 1
        return self

    # ------------------------------------------------------------ addition (gradients accumulate with it)
    def __add__(self, other: Tensor) -> Tensor:
        """sparse + sparse: a sparse tensor holding both sets of entries (uncoalesced, as torch's gradient
        accumulation; coalesced when both are; one set with added values where both share their indices tensor);
        sparse + strided: a strided tensor. A number is not supported."""
        if not isinstance(other, Tensor):
            return Tensor.__add__(self, other)
        if not isinstance(other, SparseTensor):
            return self.to_dense() + other
        if other._size != self._size:
            raise RuntimeError(f"add: sparse tensors of sizes {list(self._size)} and {list(other._size)} cannot be "
                               "added (the sizes must be equal)")
        if other.sparse_dim() != self.sparse_dim():
            raise RuntimeError(f"add: sparse tensors with {self.sparse_dim()} and {other.sparse_dim()} sparse "
                               "dimensions cannot be added")
        if other._indices_t is self._indices_t:  # one pattern (x + 2 * x): its values add, as torch's
            return SparseTensor(self._indices_t, self._values_t + other._values_t, self._size, self._coalesced)
        out = SparseTensor(cat([self._indices_t, other._indices_t], 1), cat([self._values_t, other._values_t]),
                           self._size)
        return out.coalesce() if self._coalesced and other._coalesced else out

    def __radd__(self, other: Tensor) -> Tensor:
        """strided + sparse: a strided tensor."""
        if not isinstance(other, Tensor):
            return Tensor.__radd__(self, other)
        return other + self.to_dense()

    def add(self, other: Tensor, *, alpha: Any = 1) -> Tensor:
        """``self + alpha * other`` (see ``+``)."""
        return self + (other if alpha == 1 else other * alpha)

    def sub(self, other: Tensor, *, alpha: Any = 1) -> Tensor:
        """``self - alpha * other``: sparse - sparse is sparse, sparse - strided is strided."""
        return self + other * -alpha

    __sub__ = subtract = sub

    def __rsub__(self, other: Tensor) -> Tensor:
        """strided - sparse: a strided tensor."""
        if not isinstance(other, Tensor):
            return Tensor.__rsub__(self, other)
        return other - self.to_dense()

    # ------------------------------------------------------------ products and quotients
    def mul(self, other: Any) -> SparseTensor:
        """The elementwise product, sparse as torch's: by a number or 0-d tensor, or by a strided tensor that
        broadcasts to this size, the entries are scaled where they are (coalesced or not, as this tensor); by a sparse
        tensor of the same size, see :func:`_mul_sparse`."""
        if isinstance(other, SparseTensor):
            return _mul_sparse(self, other)
        if not isinstance(other, Tensor) or other.ndim == 0:
            return self._with_values(self._values_t * other)
        return self._with_values(self._values_t * _strided_at(other, self, "mul"))

    __mul__ = __rmul__ = multiply = mul

    def div(self, other: Any, *, rounding_mode: str | None = None) -> SparseTensor:
        """The quotient by a number or a 0-d strided tensor (torch divides a sparse tensor by nothing else); with a
        ``rounding_mode`` the values are coalesced first."""
        if isinstance(other, Tensor) and (other.ndim != 0 or isinstance(other, SparseBase)):
            raise RuntimeError(f"div: Sparse division requires a scalar or zero-dim dense tensor divisor (got shape "
                               f"{list(other.shape)} for divisor)")
        if rounding_mode is None:
            return self._with_values(self._values_t / other)
        return self._map_coalesced(lambda v: v.div(other, rounding_mode=rounding_mode))

    __truediv__ = divide = true_divide = div

    def floor_divide(self, other: Any) -> SparseTensor:
        """``div(other, rounding_mode="floor")``."""
        return self.div(other, rounding_mode="floor")

    __floordiv__ = floor_divide

    def neg(self) -> SparseTensor:
        """The negated entries (not coalesced)."""
        return self._with_values(-self._values_t)

    __neg__ = negative = neg

    def positive(self) -> SparseTensor:
        """The tensor itself (``+x``)."""
        return self

    __pos__ = positive

    def pow(self, exponent: Any) -> SparseTensor:
        """The coalesced values raised to a nonzero number (a zeroth power would be dense; a tensor exponent is not
        supported, as in torch)."""
        if isinstance(exponent, Tensor):
            raise NotImplementedError("pow: a tensor exponent is not supported for sparse COO tensors (as in torch); "
                                      "pass a Python number")
        if exponent == 0:
            raise RuntimeError("pow: cannot raise to zeroth power on sparse tensor; it would make the result tensor "
                               "dense")
        return self._map_coalesced(lambda v: v.pow(exponent))

    __pow__ = pow

    def _map_coalesced(self, fn: Callable[[Tensor], Tensor]) -> SparseTensor:
        """``fn`` of the coalesced values, over the coalesced pattern: a zero-preserving op that does not distribute
        over duplicates."""
        c = self.coalesce()
        return SparseTensor(c._indices_t, fn(c._values_t), c._size, coalesced=True)

    # ------------------------------------------------------------ in place (a gradient scaled or summed by hand)
    def add_(self, other: Tensor, *, alpha: Any = 1) -> SparseTensor:
        """``self += alpha * other`` for a sparse ``other`` (a strided one or a number is refused, as torch's)."""
        if not isinstance(other, SparseTensor):
            raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) instead.")
        return self._assign("add_", self.add(other, alpha=alpha))

    def sub_(self, other: Tensor, *, alpha: Any = 1) -> SparseTensor:
        """``self -= alpha * other`` for a sparse ``other``."""
        return self.add_(other, alpha=-alpha)

    def mul_(self, other: Any) -> SparseTensor:
        """``self *= other`` (see :meth:`mul`); as torch's kernel, a product by a number or a strided tensor leaves
        the tensor marked uncoalesced."""
        out = self.mul(other)
        if not isinstance(other, SparseTensor):
            out._coalesced = False
        return self._assign("mul_", out)

    def div_(self, other: Any, *, rounding_mode: str | None = None) -> SparseTensor:
        """``self /= other`` (see :meth:`div`), written into the stored values."""
        return self._assign("div_", self.div(other, rounding_mode=rounding_mode))

    def neg_(self) -> SparseTensor:
        """The entries negated, written into the stored values."""
        return self._assign("neg_", self.neg())

    __iadd__, __isub__, __imul__, __itruediv__ = add_, sub_, mul_, div_
    negative_ = neg_

    def _assign(self, op: str, out: SparseTensor) -> SparseTensor:
        """Make this tensor ``out``, keeping its dtype. As torch's kernels: ``div_`` and ``neg_`` write into the
        stored values where the pattern stays (views of them see the change); the other ops give the tensor new
        indices and values."""
        if is_grad_enabled() and self.requires_grad and self.is_leaf:
            raise RuntimeError(f"{op}: a leaf Variable that requires grad is being used in an in-place operation.")
        if out.dtype.category > self.dtype.category:
            raise RuntimeError(f"{op}: result type {dtypes.SCALAR_TYPE_NAMES[out.dtype]} can't be cast to the desired "
                               f"output type {dtypes.SCALAR_TYPE_NAMES[self.dtype]}")
        if op in ("div_", "neg_") and out._indices_t is self._indices_t:
            self._values_t.copy_(out._values_t)
        else:
            self._indices_t, self._coalesced = out._indices_t, out._coalesced
            self._values_t = out._values_t if out.dtype is self.dtype else out._values_t.to(self.dtype)
        self._vc[0] += 1
        return self

    # ------------------------------------------------------------ structure
    def transpose(self, dim0: int, dim1: int) -> SparseTensor:
        """Two sparse dimensions swapped (their rows of indices); the result is uncoalesced, as torch marks it."""
        d0, d1 = normalize_dim("transpose", dim0, self.ndim), normalize_dim("transpose", dim1, self.ndim)
        if d0 == d1:
            return SparseTensor(self._indices_t, self._values_t, self._size, self._coalesced)
        k = self.sparse_dim()
        if max(d0, d1) >= k:
            raise RuntimeError(f"transpose: sparse transpose: transposed dimensions must be sparse Got sparse_dim: "
                               f"{k}, d0: {d0}, d1: {d1}")
        order, size = list(range(k)), list(self._size)
        order[d0], order[d1] = d1, d0
        size[d0], size[d1] = size[d1], size[d0]
        return SparseTensor(self._indices_t[order], self._values_t, tuple(size),
                            coalesced=self._coalesced and self._nnz() == 0)

    swapaxes = swapdims = transpose

    def t(self) -> SparseTensor:
        """The transpose of a matrix with two sparse dims (a 0-d or 1-d tensor is returned as it is)."""
        if self.sparse_dim() > 2 or self.dense_dim():
            raise RuntimeError(f"t: t() expects a tensor with <= 2 sparse and 0 dense dimensions, but got "
                               f"{self.sparse_dim()} sparse and {self.dense_dim()} dense dimensions")
        return self.transpose(0, 1) if self.ndim == 2 else self

    @property
    def T(self) -> SparseTensor:
        """``t()``: the transpose of a sparse matrix."""
        return self.t()

    @property
    def mT(self) -> SparseTensor:
        """The last two dims swapped (both must be sparse)."""
        return self.transpose(-2, -1)

    # The shape ops written in genesis.ops.sparse_shape: unsqueeze, select and integer indexing, narrow_copy, permute.
    unsqueeze = sparse_shape.unsqueeze
    select = sparse_shape.select
    narrow_copy = sparse_shape.narrow_copy
    permute = sparse_shape.permute
    __getitem__ = sparse_shape.getitem

    def index_select(self, dim: int, index: Tensor) -> SparseTensor:
        """The slices at ``index`` along ``dim`` (negative indices count from the end), uncoalesced as torch marks
        it: for a sparse dim, one entry per stored entry and matching index, ordered by index position."""
        d = normalize_dim("index_select", dim, self.ndim)
        if not isinstance(index, Tensor) or isinstance(index, SparseBase) or index.ndim != 1 or \
                index.dtype is not dtypes.int64:
            raise IndexError("index_select(): argument index must be 1-D strided (non-sparse) long-tensor.")
        n = self._size[d]
        if index.shape[0]:
            low, high = index.min().item(), index.max().item()
            if low < -n or high >= n:
                raise IndexError(f"index_select(): index contains {high if high >= n else low} that is out of range "
                                 f"for tensor of size {list(self._size)} at dimension {d}")
            index = index % n
        size = list(self._size)
        size[d] = index.shape[0]
        k = self.sparse_dim()
        if d >= k:
            indices, values = self._indices_t, self._values_t.index_select(d - k + 1, index)
        else:
            position, entry = _equal_pairs(self._indices_t[d], index)
            rows = self._indices_t.index_select(1, entry)
            indices = stack([position if j == d else rows[j] for j in range(k)])
            values = self._values_t.index_select(0, entry)
        return SparseTensor(indices, values, tuple(size), coalesced=values.shape[0] < 2)

    def sum(self, dim: int | Sequence[int] | None = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
        """The sum over ``dim`` (all dims by default: a strided 0-d tensor); see :func:`sparse_sum`. Integer and
        bool values sum to int64, as ``Tensor.sum``."""
        if dtype is None and self.dtype.category < 2:
            dtype = dtypes.int64
        return sparse_sum(self, dim, dtype, keepdim)

    def norm(self, p: Any = "fro", dim: Any = None, keepdim: bool = False, dtype: Any = None) -> Tensor:
        """The p-norm of all entries (duplicates added first): a strided 0-d tensor, differentiable in the values.
        As torch's, only the full reduction is supported."""
        if dim is not None and sorted(normalize_dims("norm", dim, self.ndim)) != list(range(self.ndim)):
            raise RuntimeError("norm: norm_sparse currently only supports full reductions, so 'dim' must either be "
                               "empty or contain all dimensions of the input")
        if keepdim:
            raise RuntimeError("norm: norm_sparse currently does not support keepdim=True")
        if isinstance(p, str) and p != "fro":
            raise NotImplementedError(f"norm: p={p!r} is not supported for sparse COO tensors")
        return self.coalesce()._values_t.norm(2 if p == "fro" else p, dtype=dtype)

    # ------------------------------------------------------------ conversions
    def to_dense(self, dtype: Any = None, *, masked_grad: bool | None = None) -> Tensor:
        """The strided tensor of the same values (duplicates added); differentiable in the values."""
        values = self._values_t if dtype is None else self._values_t.to(dtypes.to_dtype(dtype))
        sparse_shape = self._size[:self.sparse_dim()]
        flat = zeros((math.prod(sparse_shape),) + tuple(values.shape[1:]), dtype=values.dtype, device=self.device)
        return flat.index_add(0, linear_index(self._indices_t, sparse_shape), values).reshape(self._size)

    def coalesce(self) -> SparseTensor:
        """The same tensor with sorted, unique indices (values at repeated indices added); differentiable."""
        if self._coalesced:
            return self
        sparse_shape = self._size[:self.sparse_dim()]
        linear = linear_index(self._indices_t, sparse_shape)
        unique, inverse = linear.unique(return_inverse=True)
        values = zeros((unique.shape[0],) + tuple(self._values_t.shape[1:]), dtype=self.dtype, device=self.device)
        values = values.index_add(0, inverse, self._values_t)
        rows = []
        for n in reversed(sparse_shape):  # unravel the linear index, last dimension first
            rows.append(unique % n)
            unique = unique // n
        indices = stack(rows[::-1]) if rows else linear.new_zeros(0, unique.shape[0])
        return SparseTensor(indices, values, self._size, coalesced=True)


def _map_values(name: str) -> Callable[..., SparseTensor]:
    """``SparseTensor.<name>``: the zero-preserving unary op ``name`` of the coalesced values."""

    def op(self: SparseTensor, *args: Any, **kwargs: Any) -> SparseTensor:
        return self._map_coalesced(lambda v: getattr(v, name)(*args, **kwargs))

    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"``{name}`` of the coalesced values, over the coalesced pattern (zeros stay zeros)."
    return op


for _name in COALESCING_UNARY_OPS:
    setattr(SparseTensor, _name, _map_values(_name))


class EmbeddingSparseGrad(Primitive):
    """Rows of a (V, D) ``weight`` picked by an int64 ``index`` (n,), whose weight gradient is a sparse COO tensor
    (torch's ``embedding(..., sparse=True)``): one entry per looked-up position, the positions equal to
    ``padding_idx`` left out, duplicates not summed (uncoalesced)."""

    @staticmethod
    def forward(ctx, weight: NDArray, index: NDArray, *, padding_idx: int | None,
                scale_grad_by_freq: bool) -> NDArray:
        ctx.save_for_backward(index)
        ctx.weight_shape = tuple(weight.shape)
        ctx.padding_idx = padding_idx
        ctx.scale_grad_by_freq = scale_grad_by_freq
        return weight.backend.index_select(weight, 0, index)

    @staticmethod
    def backward(ctx, grad: Tensor) -> tuple[SparseTensor, None]:
        if ctx.scale_grad_by_freq:
            raise RuntimeError("embedding_backward: scale_grad_by_freq not supported with sparse gradients")
        (index,) = ctx.saved_tensors
        if ctx.padding_idx is not None:
            keep = index != ctx.padding_idx
            index, grad = index[keep], grad[keep]
        # Values of their own, as torch's accumulation gives a leaf: the incoming gradient may be a broadcast view
        # (the gradient of a sum), which an in-place unscale or scaling of ``.grad`` could not write into.
        return SparseTensor(index.unsqueeze(0), grad.contiguous(), ctx.weight_shape), None


def _ones_for(g: Tensor) -> Tensor:
    return zeros(g.shape, dtype=g.dtype, device=g.device) + 1


def linear_index(indices: Tensor, sparse_shape: Sequence[int]) -> Tensor:
    """Row-major linear positions of the (sparse_dim, nnz) coordinates in ``sparse_shape`` (ascending along the
    entries of a coalesced tensor)."""
    linear = indices.new_zeros(indices.shape[1])
    for d, n in enumerate(sparse_shape):
        linear = linear * n + indices[d]
    return linear


def _equal_pairs(keys: Tensor, queries: Tensor) -> tuple[Tensor, Tensor]:
    """Every (query position, key position) with ``keys[key] == queries[query]``, ordered by query, then by key
    position: the join behind ``index_select`` and sparse @ sparse, by sorting the keys and searching them."""
    order = keys.argsort(stable=True)
    sorted_keys = keys[order]
    first = searchsorted(sorted_keys, queries)
    counts = searchsorted(sorted_keys, queries, right=True) - first
    query = repeat_interleave(arange(queries.shape[0], device=keys.device), counts)
    starts = counts.cumsum(0) - counts
    within = arange(query.shape[0], device=keys.device) - starts[query]  # the pair's rank among its query's keys
    return query, order[first[query] + within]


def _lookup(sorted_keys: Tensor, queries: Tensor) -> tuple[Tensor, Tensor]:
    """For each query, the position of the equal key in the ascending, unique, nonempty ``sorted_keys`` (any
    position where there is none) and whether there is one."""
    position = searchsorted(sorted_keys, queries).clamp(max=sorted_keys.shape[0] - 1)
    return position, sorted_keys[position] == queries


def _mul_sparse(x: SparseTensor, y: SparseTensor) -> SparseTensor:
    """sparse * sparse, as torch's intersection kernel: two coalesced operands give their coalesced intersection;
    otherwise the entries of one operand (the uncoalesced one, else the one with fewer entries, else ``y``) each
    times the other's summed value at that position (zero where it has none), uncoalesced."""
    k = x.sparse_dim()
    if x.ndim != y.ndim or k != y.sparse_dim() or x.shape[:k] != y.shape[:k]:
        raise RuntimeError(f"mul: expects sparse inputs with equal dimensionality, number of sparse dimensions, and "
                           f"shape of sparse dimensions, got sizes {list(x.shape)} and {list(y.shape)} with {k} and "
                           f"{y.sparse_dim()} sparse dimensions")
    size = tuple(x.shape[:k]) + tuple(broadcast_shapes("mul", x.shape[k:], y.shape[k:]))
    if not x._nnz() or not y._nnz():
        return SparseTensor(x._indices_t[:, :0], x._values_t[:0] * y._values_t[:0], size, coalesced=True)
    if x._coalesced and y._coalesced:
        position, hit = _lookup(linear_index(y._indices_t, size[:k]), linear_index(x._indices_t, size[:k]))
        values = x._values_t[hit] * y._values_t[position[hit]]
        return SparseTensor(x._indices_t[:, hit], values, size, coalesced=True)
    if x._coalesced != y._coalesced:
        source, other = (y, x) if x._coalesced else (x, y)
    else:
        source, other = (y, x) if x._nnz() >= y._nnz() else (x, y)
    other = other.coalesce()
    position, hit = _lookup(linear_index(other._indices_t, size[:k]), linear_index(source._indices_t, size[:k]))
    found = other._values_t[position] * hit.reshape((-1,) + (1,) * other.dense_dim())
    return SparseTensor(source._indices_t, source._values_t * found, size)


def _strided_at(dense: Tensor, input: SparseTensor, op: str) -> Tensor:
    """A strided tensor, broadcast to ``input``'s size, at ``input``'s stored positions: (nnz, *dense_shape)."""
    if tuple(broadcast_shapes(op, dense.shape, input.shape)) != tuple(input.shape):
        raise NotImplementedError(f"{op}: a strided operand of shape {list(dense.shape)} would broadcast the sparse "
                                  f"tensor of size {list(input.shape)} to a larger size; not supported")
    full = dense.expand(input.shape)
    return full[tuple(input._indices_t[d] for d in range(input.sparse_dim()))]


def sparse_coo_tensor(indices: Any = None, values: Any = None, size: Sequence[int] | None = None, *,
                      dtype: Any = None, device: Any = None, requires_grad: bool = False,
                      check_invariants: bool | None = None, is_coalesced: bool | None = None) -> SparseTensor:
    """A sparse COO tensor with entries ``values`` at the coordinates ``indices`` (as ``torch.sparse_coo_tensor``);
    given only a size (``sparse_coo_tensor(size)`` or ``sparse_coo_tensor(size=...)``), an empty one of that size.

    Args:
        indices: integer coordinates, shape (sparse_dim, nnz), taken as int64 (as torch, whatever their dtype).
        values: the entries, shape (nnz, *dense_shape); gradients flow back to it when it requires them.
        size: the tensor's size; inferred from the largest index of each sparse dimension when None.
        dtype: of the values.
        device: where both parts go. Without it, tensors stay on their devices, which must agree (RuntimeError
            otherwise, as torch); indices given as Python data go to the values' device, values given as data to
            the default device.
        requires_grad: make the sparse tensor a leaf that records a gradient (through its own copy of ``values``).
        check_invariants: accepted for torch's signature; indices are always checked against ``size``.
        is_coalesced: declare the indices sorted and unique (or not); by default only a tensor of fewer than two
            entries is marked coalesced, as torch.

    Returns:
        The sparse tensor.
    """
    d = dtypes.to_dtype(dtype) if dtype is not None else None
    if values is None:  # the size-only form: no entries
        shape = size if indices is None else indices
        if shape is None or (indices is not None and size is not None):
            raise TypeError("sparse_coo_tensor() takes (indices, values, size=None) or (size) alone")
        empty = zeros(len(shape), 0, dtype=dtypes.int64, device=device)
        values = zeros(0, dtype=d or dtypes.get_default_dtype(), device=device)
        return SparseTensor(empty, values.requires_grad_(requires_grad), tuple(int(n) for n in shape), True)
    values = coerce_tensor(values, d, device)
    indices = coerce_tensor(indices, dtypes.int64, device, values.device)
    check_same_device("sparse_coo_tensor", indices.device, values.device)
    if d is not None and values.dtype is not d:
        values = values.to(d)
    if indices.dtype is not dtypes.int64:
        indices = indices.to(dtypes.int64)
    if indices.ndim != 2:
        raise RuntimeError(f"sparse_coo_tensor: indices must be sparse_dim x nnz, but got: {list(indices.shape)}")
    if values.ndim == 0:
        raise RuntimeError("sparse_coo_tensor: values must have at least one dimension (nnz), got a 0-d tensor")
    if indices.shape[1] != values.shape[0]:
        raise RuntimeError(f"sparse_coo_tensor: indices and values must have same nnz, but got nnz from indices: "
                           f"{indices.shape[1]}, nnz from values: {values.shape[0]}")
    sparse_dim, nnz = indices.shape
    if nnz and indices.min().item() < 0:
        raise RuntimeError(f"sparse_coo_tensor: found negative index {indices.min().item()}")
    largest = indices.max(1).values.tolist() if nnz else [-1] * sparse_dim
    if size is None:
        size = tuple(n + 1 for n in largest) + tuple(values.shape[1:])
    size = tuple(int(n) for n in size)
    if len(size) != sparse_dim + values.ndim - 1:
        raise RuntimeError(f"sparse_coo_tensor: number of dimensions must be sparse_dim ({sparse_dim}) + dense_dim "
                           f"({values.ndim - 1}), but got {len(size)}")
    if size[sparse_dim:] != tuple(values.shape[1:]):
        raise RuntimeError(f"sparse_coo_tensor: values has dense shape {list(values.shape[1:])}, but size "
                           f"{list(size)} has {list(size[sparse_dim:])}")
    for dim, (n, top) in enumerate(zip(size, largest)):
        if top >= n:
            raise RuntimeError(f"sparse_coo_tensor: size is inconsistent with indices: for dim {dim}, size is {n} "
                               f"but found index {top}")
    if requires_grad:
        values = values.detach().requires_grad_(True)
    elif values.requires_grad:
        values = values.view(values.shape)  # a node of its own, so the sparse tensor is not a leaf (as torch)
    return SparseTensor(indices, values, size, coalesced=nnz < 2 if is_coalesced is None else bool(is_coalesced))


def to_sparse(input: Tensor, sparse_dim: int | None = None, *, layout: Any = None) -> SparseTensor:
    """The sparse COO tensor of a strided one's nonzero entries (the first ``sparse_dim`` dims sparse, all by default);
    differentiable: the gradient comes back dense. A sparse COO tensor is returned as it is."""
    if layout is not None and layout is not sparse_coo:
        raise RuntimeError(f"to_sparse: only layout genesis.sparse_coo is supported here, got {layout}")
    if isinstance(input, SparseTensor):
        if sparse_dim is not None and sparse_dim != input.sparse_dim():
            raise RuntimeError(f"to_sparse: conversion from sparse_coo with sparse_dim {input.sparse_dim()} to "
                               f"sparse_dim {sparse_dim} is not supported")
        return input
    sparse_dim = input.ndim if sparse_dim is None else sparse_dim
    if not 0 < sparse_dim <= input.ndim:
        raise RuntimeError(f"to_sparse: sparse_dim argument must be in [1, {input.ndim}] range, but {sparse_dim} "
                           "is given")
    nonzero = input.detach() != 0
    if sparse_dim < input.ndim:
        nonzero = nonzero.reshape(input.shape[:sparse_dim] + (-1,)).any(-1)
    indices = nonzero.nonzero().t().contiguous()
    values = input[tuple(indices[d] for d in range(sparse_dim))]
    return SparseTensor(indices, values, tuple(input.shape), coalesced=True)


def to_dense(input: Tensor, dtype: Any = None, *, masked_grad: bool | None = None) -> Tensor:
    """The strided tensor of a sparse one (a strided tensor is returned as it is, as torch)."""
    if isinstance(input, SparseBase):
        return input.to_dense(dtype)
    return input if dtype is None else input.to(dtypes.to_dtype(dtype))


def is_sparse(input: Tensor) -> bool:
    """Whether ``input`` is a sparse COO tensor (``Tensor.is_sparse``; False for CSR, as torch)."""
    return isinstance(input, SparseTensor)


def layout_of(input: Tensor) -> layout:
    """The layout of a tensor (``Tensor.layout``): :data:`strided`, :data:`sparse_coo` or :data:`sparse_csr`."""
    return input.layout if isinstance(input, SparseBase) else strided


def dense_dim(input: Tensor) -> int:
    """The number of dense dims: all of a strided tensor's (sparse tensors answer with their own method)."""
    return input.ndim


def sparse_dim(input: Tensor) -> int:
    """The number of sparse dims: none for a strided tensor."""
    return 0


def to_sparse_coo(input: Tensor) -> SparseTensor:
    """This tensor in the sparse COO layout (``to_sparse()``)."""
    return input.to_sparse()


def _needs_sparse(name: str, what: str) -> Callable[..., Any]:
    def method(input: Tensor) -> Any:
        raise RuntimeError(f"{name} expected sparse {what} layout but got Strided")

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"Sparse tensors only: a strided tensor raises RuntimeError, as torch's ``Tensor.{name}``."
    return method


#: The sparse-only methods that a strided tensor answers with torch's RuntimeError.
SPARSE_ONLY = {name: _needs_sparse(name, "coordinate tensor") for name in ("is_coalesced", "indices", "coalesce")}
SPARSE_ONLY["values"] = _needs_sparse("values", "tensor")


def is_sparse_csr(input: Tensor) -> bool:
    """Whether ``input`` is a sparse CSR tensor (``Tensor.is_sparse_csr``)."""
    return layout_of(input) is sparse_csr


def sparse_mm(sparse: SparseTensor, dense: Tensor, op: str = "sparse.mm") -> Tensor:
    """``sparse @ dense`` for a 2-D sparse COO matrix and a 2-D strided one, as a strided tensor (sparse @ sparse:
    a coalesced sparse tensor).

    Each stored entry ``(i, k, v)`` adds ``v * dense[k]`` to row ``i`` of the result; gradients flow to ``dense``
    and to the sparse tensor's values.
    """
    if not isinstance(sparse, SparseTensor):
        raise RuntimeError(f"{op}: expected a sparse COO first argument, got a strided tensor")
    if sparse.ndim != 2 or sparse.sparse_dim() != 2 or dense.ndim != 2:
        raise RuntimeError(f"{op}: expected 2-D sparse (with 2 sparse dims) and 2-D dense matrices, got "
                           f"{sparse.ndim}-D and {dense.ndim}-D")
    if sparse.shape[1] != dense.shape[0]:
        raise RuntimeError(f"{op}: mat1 and mat2 shapes cannot be multiplied ({sparse.shape[0]}x{sparse.shape[1]} "
                           f"and {dense.shape[0]}x{dense.shape[1]})")
    if sparse.dtype is not dense.dtype:
        raise RuntimeError(f"{op}: expected mat1 and mat2 to have the same dtype, but got: {sparse.dtype} != "
                           f"{dense.dtype}")
    check_same_device(op, sparse.device, dense.device)
    rows, cols = sparse._indices_t[0], sparse._indices_t[1]
    if isinstance(dense, SparseTensor):
        if dense.sparse_dim() != 2:
            raise RuntimeError(f"{op}: expected a 2-D sparse COO second matrix with 2 sparse dims")
        # Every pair of entries (i, k, a) and (k, j, b) adds a * b at (i, j).
        left, right = _equal_pairs(dense._indices_t[0], cols)
        indices = stack([rows[left], dense._indices_t[1][right]])
        values = sparse._values_t[left] * dense._values_t[right]
        return SparseTensor(indices, values, (sparse.shape[0], dense.shape[1])).coalesce()
    products = sparse._values_t.unsqueeze(1) * dense.index_select(0, cols)  # (nnz, m)
    out = zeros(sparse.shape[0], dense.shape[1], dtype=dense.dtype, device=dense.device)
    return out.index_add(0, rows, products)


def sparse_matmul(input: Tensor, other: Tensor, op: str) -> Tensor:
    """``mm`` / ``matmul`` / ``@`` with a sparse COO operand: sparse @ dense (or @ sparse), or dense @ sparse as
    ``(sparse.T @ dense.T).T``; a strided result but for sparse @ sparse. ``matmul`` (and ``mv``) also takes a
    1-D strided operand, as a column on the right or a row on the left, and drops its dim from the result."""
    if op == "matmul" and not isinstance(other, SparseBase) and other.ndim == 1:
        return sparse_matmul(input, other.unsqueeze(1), op).squeeze(1)
    if op == "matmul" and not isinstance(input, SparseBase) and input.ndim == 1:
        return sparse_matmul(input.unsqueeze(0), other, op).squeeze(0)
    if isinstance(input, SparseTensor):
        return sparse_mm(input, other, op)
    if input.ndim != 2 or other.ndim != 2:
        raise RuntimeError(f"{op}: expected 2-D matrices, got {input.ndim}-D and {other.ndim}-D")
    return sparse_mm(other.t(), input.mT, op).mT


def spmm(input: SparseTensor, mat2: Tensor) -> Tensor:
    """``input @ mat2`` for a 2-D sparse COO ``input`` and a 2-D strided ``mat2`` (as ``torch.spmm``)."""
    return sparse_mm(input, mat2, "spmm")


def sparse_sum(input: SparseTensor, dim: int | Sequence[int] | None = None, dtype: Any = None,
               keepdim: bool = False) -> Tensor:
    """Sum of a sparse COO tensor's entries over ``dim`` (all by default), as ``torch.sparse.sum``.

    Summing over every sparse dimension gives a strided tensor; otherwise a coalesced sparse tensor over the
    remaining dimensions. ``keepdim`` (``Tensor.sum``'s) keeps the summed dims with size one: summed sparse dims as
    rows of zero indices (the result then not marked coalesced, as torch), summed dense dims dense (torch makes
    them sparse).
    """
    if not isinstance(input, SparseTensor):
        raise RuntimeError("sparse.sum: expected a sparse COO tensor, got a strided tensor")
    values = input._values_t if dtype is None else input._values_t.to(dtypes.to_dtype(dtype))
    if dim is None:
        return values.sum()
    dims = normalize_dims("sparse.sum", dim, input.ndim)
    kept_size = [1 if d in dims else n for d, n in enumerate(input.shape)]
    k = input.sparse_dim()
    dense_dims = [d - k + 1 for d in dims if d >= k]
    if dense_dims:
        values = values.sum(dense_dims, keepdim=keepdim)
    kept = [d for d in range(k) if d not in dims]
    if not kept:
        total = values.sum(0)
        return total.reshape(kept_size) if keepdim else total
    size = tuple(input.shape[d] for d in kept) + tuple(values.shape[1:])
    out = SparseTensor(input._indices_t[kept], values, size).coalesce()
    if not keepdim or len(kept) == k:
        return out
    zero = out._indices_t.new_zeros(out._nnz())
    rows = [out._indices_t[kept.index(d)] if d in kept else zero for d in range(k)]
    return SparseTensor(stack(rows), out._values_t, tuple(kept_size), coalesced=out._nnz() < 2)
