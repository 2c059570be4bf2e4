"""Shape ops of sparse COO tensors: ``unsqueeze``, ``select`` and integer indexing, ``narrow_copy`` and ``permute``.

Each follows torch's sparse kernel: which stored entries it keeps, how their indices move, and whether the result is
marked coalesced (torch's rules differ by op: ``narrow_copy`` keeps the input's mark, ``permute`` keeps it when the
first dim stays first, the others mark a result coalesced only when it holds fewer than two entries). Values go
through ordinary Tensor ops (``index_select``, ``select``, ``narrow``, ``permute``), so gradients flow to them.
These functions are ``SparseTensor``'s methods (``genesis.ops.sparse``); they build their results with the input's
own class.
"""

from __future__ import annotations

import operator
from typing import Any

from genesis import dtypes
from genesis.ndarray import normalize_dim
from genesis.ops.join import cat
from genesis.tensor import Tensor
from genesis.tensor import tensor as _from_data


def _index_value(index: Any) -> int:
    """An integer index (a Python int or a 0-d integer tensor) as an int; TypeError for anything else."""
    if isinstance(index, Tensor):
        if index.ndim or index.dtype.category != 1:
            raise TypeError(f"select(): expected an integer index, got a tensor of shape {list(index.shape)} and "
                            f"dtype {index.dtype}")
        return int(index.item())
    return operator.index(index)


def unsqueeze(self: Any, dim: int) -> Any:
    """A new dim of size one at ``dim``: sparse (a row of zero indices) at or before the last sparse dim, dense
    after it (the values unsqueezed)."""
    d = normalize_dim("unsqueeze", dim, self.ndim + 1)
    k = self.sparse_dim()
    indices, values = self._indices_t, self._values_t
    if d <= k:
        indices = cat([indices[:d], indices.new_zeros(1, indices.shape[1]), indices[d:]])
    else:
        values = values.unsqueeze(d - k + 1)
    size = self._size[:d] + (1,) + self._size[d:]
    return type(self)(indices, values, size, values.shape[0] < 2)


def select(self: Any, dim: int, index: Any) -> Tensor:
    """The slice at ``index`` along ``dim``, without that dim: the entries whose coordinate there equals ``index``
    (for a sparse dim) or the values' slice (for a dense one). Selecting the only sparse dim leaves a strided
    tensor: the sum of the matching values (zeros when none match), as torch."""
    if self.ndim == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = normalize_dim("select", dim, self.ndim)
    i, n = _index_value(index), self._size[d]
    if not -n <= i < n:
        raise IndexError(f"select(): index {i} out of range for tensor of size {list(self._size)} at dimension {d}")
    i %= n
    k = self.sparse_dim()
    size = self._size[:d] + self._size[d + 1:]
    if d >= k:
        values = self._values_t.select(d - k + 1, i)
        return type(self)(self._indices_t, values, size, values.shape[0] < 2)
    hits = (self._indices_t[d] == i).nonzero().reshape(-1)
    values = self._values_t.index_select(0, hits)
    if k == 1:
        return values[0] if values.shape[0] == 1 else values.sum(0, dtype=values.dtype)
    rows = _from_data([j for j in range(k) if j != d], dtype=dtypes.int64, device=self.device)
    indices = self._indices_t.index_select(1, hits).index_select(0, rows)
    return type(self)(indices, values, size, values.shape[0] < 2)


def narrow_copy(self: Any, dim: int, start: int, length: int) -> Any:
    """The entries with ``start <= coordinate < start + length`` along ``dim`` (coordinates shifted by ``start``),
    or the values narrowed along a dense dim; a copy. ``dim`` and ``start`` are not wrapped, as torch's sparse
    kernel."""
    if not 0 <= dim < self.ndim:
        raise RuntimeError(f"Dimension {dim} out of range. Expecting 0 <= dim < {self.ndim}.")
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    n = self._size[dim]
    if start < 0 or start + length > n:
        raise RuntimeError(f"Invalid range to narrow. range(start, start+length) must be a subset of range(0, {n}).")
    k = self.sparse_dim()
    size = self._size[:dim] + (length,) + self._size[dim + 1:]
    if dim >= k:
        values = self._values_t.narrow(dim - k + 1, start, length).clone()
        return type(self)(self._indices_t, values, size, self._coalesced)
    coordinates = self._indices_t[dim]
    hits = ((coordinates >= start) & (coordinates < start + length)).nonzero().reshape(-1)
    indices = self._indices_t.index_select(1, hits)
    shift = _from_data([start if j == dim else 0 for j in range(k)], dtype=dtypes.int64, device=self.device)
    return type(self)(indices - shift.unsqueeze(1), self._values_t.index_select(0, hits), size, self._coalesced)


def permute(self: Any, *dims: Any) -> Any:
    """The dims reordered, sparse dims among sparse dims and dense among dense (torch refuses a permutation that
    mixes them); marked coalesced when the input is and its first dim stays first."""
    if len(dims) == 1 and isinstance(dims[0], (list, tuple)):
        dims = tuple(dims[0])
    n, k = self.ndim, self.sparse_dim()
    if len(dims) != n:
        raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does not match the length "
                           f"of the desired ordering of dimensions i.e. input.dim() = {n} is not equal to len(dims) = "
                           f"{len(dims)}")
    order = [normalize_dim("permute", d, n) for d in dims]
    if len(set(order)) != n:
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    if sorted(order[:k]) != list(range(k)):
        raise RuntimeError("permute(sparse_coo): transpositions between sparse and dense dimensions are not "
                           "allowed.Only transpositions within sparse and dense dimensions are supported.")
    rows = _from_data(order[:k], dtype=dtypes.int64, device=self.device)
    values = self._values_t.permute(0, *(d - k + 1 for d in order[k:]))
    size = tuple(self._size[d] for d in order)
    return type(self)(self._indices_t.index_select(0, rows), values, size, self._coalesced and dims[0] == 0)


def _key_kind(k: Any) -> str:
    """What one entry of an index key is for a sparse tensor: "none", "ellipsis", "slice" (a full ``:``), "int" (an
    integer or a 0-d integer tensor), "float" or "other"."""
    if k is None:
        return "none"
    if k is Ellipsis:
        return "ellipsis"
    if isinstance(k, slice):
        return "slice" if k == slice(None) else "other"
    if isinstance(k, float):
        return "float"
    if isinstance(k, int) and not isinstance(k, bool):
        return "int"
    if isinstance(k, Tensor) and not k.ndim and k.dtype.category == 1:
        return "int"
    return "other"


def getitem(self: Any, key: Any) -> Tensor:
    """``self[key]`` for the keys torch's sparse tensors take: integers (0-d integer tensors too), ``None``, ``...``
    and full slices ``:``; each integer selects (see :func:`select`), each ``None`` unsqueezes. Once the sparse
    dims are all selected the result is strided and the rest of the key indexes it."""
    key = key if isinstance(key, tuple) else (key,)
    kinds = [_key_kind(k) for k in key]
    if "float" in kinds:
        raise IndexError("only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are valid "
                         "indices (got float)")
    if "other" in kinds:
        bad = key[kinds.index("other")]
        raise NotImplementedError(f"indexing a sparse COO tensor takes integers, None, ... and full slices ':' only, "
                                  f"got {type(bad).__name__}; call .to_dense() first")
    consumed = sum(1 for kind in kinds if kind in ("int", "slice"))
    if consumed > self.ndim:
        raise IndexError(f"too many indices for tensor of dimension {self.ndim}")
    if kinds.count("ellipsis") > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    out, dim = self, 0
    for position, (k, kind) in enumerate(zip(key, kinds)):
        if not isinstance(out, type(self)):  # a strided result: it takes the rest of the key itself
            return out[(slice(None),) * dim + key[position:]]
        if kind == "none":
            out, dim = out.unsqueeze(dim), dim + 1
        elif kind == "ellipsis":
            dim += self.ndim - consumed
        elif kind == "slice":
            dim += 1
        else:
            i, n = _index_value(k), out.shape[dim]
            if not -n <= i < n:
                raise IndexError(f"index {i} is out of bounds for dimension {dim} with size {n}")
            out = out.select(dim, i)
    return out
