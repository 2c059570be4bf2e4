"""Memory formats and layouts, as torch's: how the elements of an (N, C, *spatial) tensor are ordered in memory,
and whether a tensor is dense (``strided``) or sparse.

A memory format is only a choice of strides. ``contiguous_format`` is row-major (N, C, H, W); ``channels_last``
stores a 4-d tensor as (N, H, W, C) and ``channels_last_3d`` a 5-d one as (N, D, H, W, C), while the tensor keeps
its logical (N, C, ...) shape. ``preserve_format`` asks a conversion to keep the source's layout. Convolutions on
``cuda`` read channels_last inputs in place and return channels_last outputs, which cuDNN runs faster in half
precision.

A layout (``strided``, ``sparse_coo``, ``sparse_csr``) is the kind of tensor: dense tensors are ``strided``; the
sparse ones are ``genesis.ops.sparse``'s. The dense creation functions check their ``layout=`` with
:func:`check_strided`.
"""

from __future__ import annotations

from genesis.memo import remember
from genesis.ndarray import contiguous_strides


class memory_format:  # torch's name
    """One of ``genesis.contiguous_format``, ``channels_last``, ``channels_last_3d``, ``preserve_format``."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"genesis.{self.name}"


contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")
preserve_format = memory_format("preserve_format")

_RANK = {channels_last: 4, channels_last_3d: 5}


class layout:  # torch's name
    """A tensor's memory layout, as ``torch.layout``: :data:`strided` (dense), :data:`sparse_coo` or
    :data:`sparse_csr`."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"genesis.{self.name}"

    def __reduce__(self) -> str:
        return self.name


strided = layout("strided")
sparse_coo = layout("sparse_coo")
sparse_csr = layout("sparse_csr")


def check_strided(op: str, value: object) -> None:
    """Accept ``layout=`` None or ``strided`` for a dense creation function; TypeError for a non-layout and
    NotImplementedError for a sparse layout (build the dense tensor, then ``.to_sparse()``), naming the op."""
    if value is None or value is strided:
        return
    if not isinstance(value, layout):
        raise TypeError(f"{op}(): argument 'layout' must be genesis.layout, not {type(value).__name__}")
    raise NotImplementedError(f"{op}(): layout={value} is not supported, only genesis.strided (create the dense "
                              "tensor, then call .to_sparse())")


def check(op: str, fmt: object) -> memory_format:
    """``fmt`` if it is a memory format, else TypeError naming the op."""
    if not isinstance(fmt, memory_format):
        raise TypeError(f"{op}(): argument 'memory_format' must be genesis.memory_format, not {type(fmt).__name__}")
    return fmt


_STRIDES: dict[tuple, tuple[int, ...]] = {}  # (shape, format) -> strides: layers ask for the same few each step


def strides(shape: tuple[int, ...], fmt: memory_format) -> tuple[int, ...]:
    """The dense strides of ``shape`` in ``fmt`` (contiguous or a channels_last format of the matching rank)."""
    key = (tuple(shape), fmt)
    cached = _STRIDES.get(key)
    if cached is not None:
        return cached
    rank = _RANK.get(fmt)
    if rank is None:
        out = contiguous_strides(shape)
    elif len(shape) != rank:
        raise RuntimeError(f"required rank {rank} tensor to use {fmt.name} format")
    else:
        stored = contiguous_strides((shape[0],) + tuple(shape[2:]) + (shape[1],))
        out = (stored[0], stored[-1]) + stored[1:-1]
    return remember(_STRIDES, key, out)


def is_dense_in(shape: tuple[int, ...], tensor_strides: tuple[int, ...], fmt: memory_format) -> bool:
    """Whether (shape, strides) is dense in ``fmt``; size-1 dims may have any stride (torch's rule)."""
    rank = _RANK.get(fmt)
    if rank is not None and len(shape) != rank:
        return False
    if 0 in shape:
        return True
    dense = strides(shape, fmt)
    return tuple(tensor_strides) == dense or all(n == 1 or s == t for n, s, t in zip(shape, tensor_strides, dense))


def is_dense(shape: tuple[int, ...], tensor_strides: tuple[int, ...]) -> bool:
    """Whether (shape, strides) covers one block of memory without gaps or overlaps, in any dim order (torch's
    "non-overlapping and dense"): row-major, channels_last, a transpose..."""
    expected = 1
    for stride, n in sorted((s, n) for n, s in zip(shape, tensor_strides) if n != 1):
        if stride != expected:
            return False
        expected *= n
    return True


def preserved_strides(shape: tuple[int, ...], tensor_strides: tuple[int, ...]) -> tuple[int, ...]:
    """The strides ``preserve_format`` gives a new tensor like one of (shape, strides): the same where that one is
    dense (or empty), else dense strides in the dim order its strides follow (torch's ``empty_like`` rule)."""
    if 0 in shape or is_dense(shape, tensor_strides):
        return tuple(tensor_strides)
    # Not dense (a strided slice, say): dense strides in the dim order its strides follow, as torch's
    # infer_dense_strides: a stable insertion sort from the innermost dim, where a broadcast dim (stride 0) compares
    # as unordered and so keeps its row-major place, and equal strides put the smaller dim inside.
    def after(a: int, b: int) -> int:  # 1: dim a goes outside dim b, -1: inside, 0: unordered
        sa, sb = tensor_strides[a], tensor_strides[b]
        if sa == 0 or sb == 0:
            return 0
        if sa != sb:
            return 1 if sa > sb else -1
        return 1 if shape[a] > shape[b] else 0

    perm = list(range(len(shape)))[::-1]  # innermost first
    for i in range(1, len(perm)):
        k = i
        for j in range(i - 1, -1, -1):
            order = after(perm[j], perm[k])
            if order > 0:
                perm[j], perm[k] = perm[k], perm[j]
                k = j
            elif order < 0:
                break
    out = [0] * len(shape)
    step = 1
    for d in perm:
        out[d] = step
        step *= max(shape[d], 1)
    return tuple(out)


def suggest(shape: tuple[int, ...], tensor_strides: tuple[int, ...]) -> memory_format:
    """The channels_last format a 4-d or 5-d tensor is stored in (when dense in it and not plainly contiguous), else
    ``contiguous_format``: what ``preserve_format`` keeps."""
    for fmt in (channels_last, channels_last_3d):
        if is_dense_in(shape, tensor_strides, fmt) and not is_dense_in(shape, tensor_strides, contiguous_format):
            return fmt
    return contiguous_format
