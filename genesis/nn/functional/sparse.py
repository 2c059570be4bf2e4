"""Lookup tables: ``embedding``, ``embedding_bag`` and ``one_hot``."""

from __future__ import annotations

from genesis import dtypes
from genesis import ops as T
from genesis.autograd import no_grad
from genesis.ops.nn import Embedding, check_all
from genesis.ops.sparse import EmbeddingSparseGrad
from genesis.tensor import Tensor, arange, full, ones_like, zeros, zeros_like


def embedding(input: Tensor, weight: Tensor, padding_idx: int | None = None, max_norm: float | None = None,
              norm_type: float = 2.0, scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """Rows of ``weight`` picked by the integer ``input``; positions equal to ``padding_idx`` get no gradient.

    With ``sparse=True`` the gradient of ``weight`` is a sparse COO tensor with one entry per looked-up position
    (as torch's, on the weight's device), for optimizers such as :class:`genesis.optim.SparseAdam`;
    ``scale_grad_by_freq`` then raises in backward, as torch. Dense gradients take one autograd node for any shape
    of ``input`` (plus one for ``padding_idx`` or ``scale_grad_by_freq`` when the weight requires grad).
    """
    index_dtype = input.ndarray.dtype
    if index_dtype not in (dtypes.int64, dtypes.int32):
        raise RuntimeError(f"Expected tensor for argument #1 'indices' to have one of the following scalar types: "
                           f"Long, Int; but got {index_dtype} instead (while checking arguments for embedding)")
    wshape = weight.ndarray.shape
    if len(wshape) != 2:
        raise RuntimeError(f"embedding: 'weight' must be 2-D, got {len(wshape)}-D")
    num = wshape[0]
    if padding_idx is not None:
        if padding_idx < 0:
            if padding_idx < -num:
                raise AssertionError("Padding_idx must be within num_embeddings")
            padding_idx += num
        elif padding_idx >= num:
            raise AssertionError("Padding_idx must be within num_embeddings")
    index = input if index_dtype is dtypes.int64 else input.long()
    if max_norm is not None:
        _embedding_renorm_(weight, index.reshape(-1), max_norm, norm_type)
    index = T._check_bounds("embedding", index, num, 0, False)
    if sparse:
        rows = EmbeddingSparseGrad.apply(weight, index.reshape(-1), padding_idx=padding_idx,
                                         scale_grad_by_freq=scale_grad_by_freq)
        return rows.reshape(*input.shape, wshape[1])
    rows = Embedding.apply(weight, index)  # (*input.shape, D)
    if scale_grad_by_freq and weight.requires_grad:
        flat = index.reshape(-1)
        counts = zeros_like(weight[:, 0]).index_add(0, flat, ones_like(flat, dtype=weight.dtype))
        scale = 1.0 / T.index_select(counts, 0, flat).reshape(index.shape).unsqueeze(-1)
        rows = rows.detach() + (rows - rows.detach()) * scale
    if padding_idx is not None and weight.requires_grad:
        # Same values; the rows read at padding_idx are cut from the graph so that row's gradient stays zero.
        rows = T.where((index == padding_idx).unsqueeze(-1), rows.detach(), rows)
    return rows


def _embedding_renorm_(weight: Tensor, indices: Tensor, max_norm: float, norm_type: float) -> None:
    """Rescale in place the referenced rows whose norm exceeds ``max_norm`` (torch's ``embedding_renorm_``)."""

    with no_grad():
        rows = T.unique(indices)
        picked = weight[rows]
        # torch reads each norm as a double and divides in double; the scale is rounded to the weight's dtype.
        norms = T.norm(picked, norm_type, dim=1).to(dtypes.float64)
        scale = T.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0).to(weight.dtype).unsqueeze(1)
        weight[rows] = picked * scale


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """One-hot encoding of an integer tensor: a new last dim of ``num_classes`` (from the data when -1)."""
    return T.one_hot(tensor, num_classes)


def embedding_bag(input: Tensor, weight: Tensor, offsets: Tensor | None = None, max_norm: float | None = None,
                  norm_type: float = 2, scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = False,
                  per_sample_weights: Tensor | None = None, include_last_offset: bool = False,
                  padding_idx: int | None = None) -> Tensor:
    """Sum, mean or max of the embedding rows of each bag of indices, without materializing the per-index rows
    as a batch.

    Bags are the rows of 2-D ``input`` (B, L), or the slices ``input[offsets[b]:offsets[b + 1]]`` of 1-D
    ``input`` (the last one runs to the end unless ``include_last_offset``). Empty bags give zeros; indices equal
    to ``padding_idx`` are left out of their bag (and out of the mean's count). ``per_sample_weights`` scales each
    row before summing (``mode="sum"`` only). With ``sparse=True`` (modes sum and mean) the gradient of
    ``weight`` is a sparse COO tensor as torch's: one uncoalesced entry per index, padding indices left out.

    Returns:
        (B, embedding_dim) tensor of ``weight``'s dtype.
    """
    if weight.ndim != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension {weight.ndim}")
    if input.dtype.is_floating_point or input.dtype.name == "bool":
        raise RuntimeError(f"embedding_bag: expected input to have an integer dtype, but got {input.dtype}")
    if per_sample_weights is not None and input.shape != per_sample_weights.shape:
        raise ValueError(f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) is not None, then it "
                         f"must have the same shape as the input ({input.shape})")
    given = input.ndim == 1  # 2-D input: the bags are its rows, offsets made here
    if input.ndim == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated is a mini-batch of "
                             f"fixed length sequences. However, found offsets of type {type(offsets)}")
        offsets = arange(0, input.numel(), input.shape[1], device=input.device)
        input = input.reshape(-1)
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
    elif input.ndim == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.ndim != 1:
            raise ValueError("offsets has to be a 1D Tensor")
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.ndim}")
    if mode not in ("sum", "mean", "max"):
        raise ValueError("mode has to be one of sum, mean or max")
    if scale_grad_by_freq and mode == "max":
        raise ValueError("max mode does not support scaling the gradient by the frequency")
    if sparse and mode == "max":
        raise ValueError("max mode does not support sparse weights")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                                  f"supported for mode='sum' (got mode='{mode}'). Please open a feature request on "
                                  f"GitHub.")
    if not weight.dtype.is_floating_point:
        raise RuntimeError(f"Expected tensor for argument #1 'weight' to have one of the following scalar types: "
                           f"Half, BFloat16, Float, Double; but got {weight.dtype} instead (while checking arguments "
                           f"for embedding_bag)")
    offsets = offsets.long()
    count = input.shape[0]
    if given and offsets.numel():  # the caller's offsets, checked on the device (no host read on cuda)
        T._check_range(offsets[:1], 0, 1, RuntimeError, "offsets[0] has to be 0, i.e., the first sequence in the "
                       "mini-batch has to start from position 0. However, got {value}")
        check_all(offsets[1:] >= offsets[:-1], RuntimeError, "embedding_bag: offsets must be non-decreasing")
        T._check_range(offsets[-1:], 0, count + 1, RuntimeError, f"offsets[-1] can not be greater than input's "
                       f"length {count} but got offsets[-1] of {{value}}")
    num = weight.shape[0]
    if padding_idx is not None:
        if not -num <= padding_idx < num:
            raise AssertionError("padding_idx must be within the number of embeddings")
        padding_idx = padding_idx % num
    starts = offsets[:-1] if include_last_offset else offsets
    # Where the last bag ends: the input's length, or with include_last_offset the last offset (a 0-d tensor, kept
    # on the device).
    end = offsets[-1] if include_last_offset and offsets.numel() else count
    bags = starts.shape[0]
    if bags == 0:
        return zeros((0, weight.shape[1]), dtype=weight.dtype, device=weight.device)
    indices = T._check_bounds("embedding_bag", input.long(), num, 0, negative=False, error=RuntimeError)
    # With sparse=True the lookup's weight gradient is torch's sparse one: an entry per looked-up index (padding
    # left out), carrying that index's share of its bag's gradient (its per-sample weight, 1 / bag size for mean).
    rows = embedding(indices, weight, padding_idx if sparse else None, max_norm, norm_type, scale_grad_by_freq,
                     sparse)  # (count, D)
    position = arange(count, device=input.device)
    bag = T.searchsorted(starts, position, right=True) - 1  # the bag of every index
    keep = position < end
    if padding_idx is not None:
        keep = keep & (indices != padding_idx)
    if mode == "max":
        return _bag_max(rows, starts, end, keep)
    scale = keep.to(weight.dtype)
    if per_sample_weights is not None:
        scale = scale * per_sample_weights
    bag = T.clamp(bag, min=0)
    out = zeros((bags, weight.shape[1]), dtype=weight.dtype, device=weight.device)
    out = out.index_add(0, bag, rows * scale.unsqueeze(1))
    if mode == "mean":
        sizes = zeros((bags,), dtype=weight.dtype, device=weight.device).index_add(0, bag, keep.to(weight.dtype))
        out = out / T.clamp(sizes, min=1.0).unsqueeze(1)
    return out


def _bag_max(rows: Tensor, starts: Tensor, end: int | Tensor, keep: Tensor) -> Tensor:
    """Per-bag maximum: each bag gathered as a (B, longest bag) block, padded by repeating its last index (the
    longest bag's length is read on the host: it shapes the block)."""
    bags, dim = starts.shape[0], rows.shape[1]
    last = end.reshape(1) if isinstance(end, Tensor) else full((1,), end, dtype=starts.dtype, device=starts.device)
    stops = T.cat([starts[1:], last], 0)
    lengths = T.clamp(stops - starts, min=0)
    longest = int(lengths.max().item())
    if longest == 0 or rows.shape[0] == 0:
        return zeros((bags, dim), dtype=rows.dtype, device=rows.device)
    step = arange(longest, device=rows.device).unsqueeze(0)  # (1, longest)
    gather = T.clamp(starts.unsqueeze(1) + T.minimum(step, T.clamp(lengths - 1, min=0).unsqueeze(1)),
                     max=rows.shape[0] - 1)  # (B, longest)
    valid = T.index_select(keep, 0, gather.reshape(-1)).reshape(bags, longest) & (step < lengths.unsqueeze(1))
    block = T.index_select(rows, 0, gather.reshape(-1)).reshape(bags, longest, dim)
    block = T.where(valid.unsqueeze(2), block, float("-inf"))
    values = block.max(1)[0]
    empty = ~valid.any(1, keepdim=True)
    return T.where(empty, 0.0, values)
