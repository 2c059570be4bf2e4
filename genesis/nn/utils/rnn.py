"""Variable-length sequences for recurrent layers: padding and packing, as ``torch.nn.utils.rnn``.

A :class:`PackedSequence` holds the time steps of a batch sorted by decreasing length, one after the other:
``data`` (sum of lengths, *) has step ``t``'s ``batch_sizes[t]`` rows (the sequences still running) at offset
``sum(batch_sizes[:t])``. Packing and unpacking are each one gather (``index_select``) with an index built on the
host, so gradients flow through them.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Sequence

from genesis import dtypes
from genesis import ops as T
from genesis.tensor import Tensor, arange, empty_like, full, tensor


class _PackedSequenceFields(NamedTuple):
    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None
    unsorted_indices: Tensor | None


class PackedSequence(_PackedSequenceFields):
    """Packed time steps (``data``), the batch size of every step (``batch_sizes``, int64 on the CPU) and, when the
    batch was sorted by length here, the permutation that sorted it (``sorted_indices``) and its inverse
    (``unsorted_indices``).

    As torch's, ``PackedSequence(data, batch_sizes, sorted_indices)`` computes ``unsorted_indices`` from
    ``sorted_indices``, and ``PackedSequence((data, batch_sizes))`` takes the first two fields as one pair.
    """

    __slots__ = ()

    def __new__(cls, data: Any, batch_sizes: Tensor | None = None, sorted_indices: Tensor | None = None,
                unsorted_indices: Tensor | None = None) -> PackedSequence:
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:
            if not (isinstance(data, (list, tuple)) and len(data) == 2):
                raise AssertionError("Expected data to be a list or tuple of length 2")
            data, batch_sizes = data
        elif batch_sizes.device.type != "cpu":
            raise ValueError("batch_sizes should always be on CPU. Instances of PackedSequence should never be "
                             "created manually. They should be instantiated by functions like pack_sequence and "
                             "pack_padded_sequences in nn.utils.rnn. "
                             "https://pytorch.org/docs/stable/nn.html#torch.nn.utils.rnn.pack_sequence")
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args: Any, **kwargs: Any) -> PackedSequence:
        """``data`` converted as ``Tensor.to(*args, **kwargs)``; the indices follow it to its device and
        ``batch_sizes`` stays on the CPU, as torch's."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        indices = [None if i is None else i.to(data.device) for i in (self.sorted_indices, self.unsorted_indices)]
        return PackedSequence(data, self.batch_sizes, *indices)

    def cuda(self, device: Any = None, non_blocking: bool = False) -> PackedSequence:
        """``to`` the current GPU, or GPU ``device``."""
        target = "cuda" if device is None else (f"cuda:{device}" if isinstance(device, int) else device)
        return self.to(target, non_blocking=non_blocking)

    def cpu(self) -> PackedSequence:
        """``to("cpu")``."""
        return self.to("cpu")

    def double(self) -> PackedSequence:
        return self.to(dtypes.float64)

    def float(self) -> PackedSequence:
        return self.to(dtypes.float32)

    def half(self) -> PackedSequence:
        return self.to(dtypes.float16)

    def long(self) -> PackedSequence:
        return self.to(dtypes.int64)

    def int(self) -> PackedSequence:
        return self.to(dtypes.int32)

    def short(self) -> PackedSequence:
        return self.to(dtypes.int16)

    def char(self) -> PackedSequence:
        return self.to(dtypes.int8)

    def byte(self) -> PackedSequence:
        return self.to(dtypes.uint8)

    @property
    def is_cuda(self) -> bool:
        """Whether ``data`` is on a GPU."""
        return self.data.is_cuda

    def is_pinned(self) -> bool:
        """Whether ``data`` is in pinned host memory."""
        return self.data.is_pinned()

    def pin_memory(self) -> PackedSequence:
        """``data`` and the indices in pinned host memory (``batch_sizes`` stays as it is, as torch's)."""
        indices = [None if i is None else i.pin_memory() for i in (self.sorted_indices, self.unsorted_indices)]
        return type(self)(self.data.pin_memory(), self.batch_sizes, *indices)


def invert_permutation(permutation: Tensor | None) -> Tensor | None:
    """The inverse of a 1-D ``permutation`` (``out[permutation[i]] = i``); None for None. It turns a
    :class:`PackedSequence`'s ``sorted_indices`` into its ``unsorted_indices``."""
    if permutation is None:
        return None
    return empty_like(permutation).scatter_(0, permutation, arange(permutation.numel(), device=permutation.device))


def _lengths_list(lengths: Tensor | Sequence[int]) -> list[int]:
    """The lengths as Python ints: a 1-D tensor or a sequence of numbers (0-d tensors included)."""
    if isinstance(lengths, Tensor):
        ndim = lengths.ndim
    else:
        lengths = list(lengths)
        ndim = 2 if any(isinstance(n, (list, tuple)) for n in lengths) else 1
    if ndim != 1:
        raise RuntimeError(f"'lengths' argument should be a 1D CPU int64 tensor, but got {ndim}D cpu Long tensor")
    return [int(n) for n in (lengths.tolist() if isinstance(lengths, Tensor) else lengths)]


def _batch_sizes(lengths: list[int]) -> list[int]:
    """Sequences still running at every step, for lengths sorted in decreasing order."""
    return [sum(1 for n in lengths if n > t) for t in range(lengths[0])]


def pad_sequence(sequences: Sequence[Tensor], batch_first: bool = False, padding_value: float = 0.0,
                 padding_side: str = "right") -> Tensor:
    """Stack (L_i, *) tensors into (max L, B, *) — (B, max L, *) with ``batch_first`` — filling with
    ``padding_value`` on the ``padding_side`` ("right" or "left")."""
    if padding_side not in ("right", "left"):
        raise RuntimeError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    if len(sequences) == 0:
        raise RuntimeError("received an empty list of sequences")
    max_len = max(s.shape[0] for s in sequences)
    dtype = sequences[0].dtype  # torch copies every sequence into a tensor of the first one's dtype
    padded = []
    for s in sequences:
        fill = full((max_len - s.shape[0], *s.shape[1:]), padding_value, dtype=dtype, device=s.device)
        padded.append(T.cat([s.to(dtype), fill] if padding_side == "right" else [fill, s.to(dtype)], 0))
    return T.stack(padded, 0 if batch_first else 1)


def pack_padded_sequence(input: Tensor, lengths: Tensor | Sequence[int], batch_first: bool = False,
                         enforce_sorted: bool = True) -> PackedSequence:
    """Pack a padded (T, B, *) batch — (B, T, *) with ``batch_first`` — of sequences of the given ``lengths``.

    With ``enforce_sorted`` the lengths must already decrease; otherwise the batch is sorted here and the
    permutation kept, so that :func:`pad_packed_sequence` and the recurrent layers restore the original order.
    """
    lengths = _lengths_list(lengths)
    batch_dim = 0 if batch_first else 1
    if len(lengths) != input.shape[batch_dim]:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got {len(lengths)} "
                           f"(batch_size={input.shape[batch_dim]})")
    sorted_indices = unsorted_indices = None
    if enforce_sorted and any(a < b for a, b in zip(lengths, lengths[1:])):
        raise RuntimeError("`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. "
                           "You can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to "
                           "sidestep this requirement if you do not need ONNX exportability.")
    if any(n <= 0 for n in lengths):
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element in 'lengths' "
                           "that is <= 0")
    order = list(range(len(lengths)))
    if not enforce_sorted:
        order.sort(key=lambda i: -lengths[i])
        inverse = sorted(range(len(order)), key=lambda i: order[i])
        sorted_indices = tensor(order, device=input.device)
        unsorted_indices = tensor(inverse, device=input.device)
        lengths = [lengths[i] for i in order]
    steps, batch = input.shape[1 - batch_dim], input.shape[batch_dim]
    if lengths[0] > steps:
        raise RuntimeError(f"pack_padded_sequence: a length of {lengths[0]} exceeds the padded sequence length "
                           f"{steps}")
    batch_sizes = _batch_sizes(lengths)
    # One gather: packed row k of step t is element (t, order[k]) of the padded batch.
    index = [order[k] * steps + t if batch_first else t * batch + order[k]
             for t, b in enumerate(batch_sizes) for k in range(b)]
    data = input.flatten(0, 1).index_select(0, tensor(index, device=input.device))
    return PackedSequence(data, tensor(batch_sizes), sorted_indices, unsorted_indices)


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False, padding_value: float = 0.0,
                        total_length: int | None = None) -> tuple[Tensor, Tensor]:
    """Inverse of :func:`pack_padded_sequence`: ``(padded, lengths)`` in the batch's original order, ``lengths``
    int64 on the CPU; ``total_length`` pads the time dim further (e.g. to the input's length)."""
    data, batch_sizes, _, unsorted_indices = sequence
    batch_sizes = _lengths_list(batch_sizes)
    max_len = len(batch_sizes)
    if total_length is not None:
        if total_length < max_len:
            raise ValueError(f"Expected total_length to be at least the length of the longest sequence in input, "
                             f"but got total_length={total_length} and max sequence length being {max_len}")
        max_len = total_length
    batch = batch_sizes[0]
    feature = tuple(data.shape[1:])
    lengths = [sum(1 for b in batch_sizes if b > i) for i in range(batch)]
    rank = list(range(batch))  # the sorted position of each sequence of the original batch
    if unsorted_indices is not None:
        rank = unsorted_indices.tolist()
        lengths = [lengths[i] for i in rank]
    # One gather from the packed rows and a padding row after them: element (t, j) of the padded batch.
    offsets = [0]
    for b in batch_sizes:
        offsets.append(offsets[-1] + b)
    pad_row = offsets[-1]

    def source(t: int, j: int) -> int:
        return offsets[t] + rank[j] if t < len(batch_sizes) and rank[j] < batch_sizes[t] else pad_row

    index = ([source(t, j) for j in range(batch) for t in range(max_len)] if batch_first else
             [source(t, j) for t in range(max_len) for j in range(batch)])
    rows = T.cat([data, full((1, *feature), padding_value, dtype=data.dtype, device=data.device)], 0)
    padded = rows.index_select(0, tensor(index, device=data.device))
    shape = (batch, max_len) if batch_first else (max_len, batch)
    return padded.reshape(*shape, *feature), tensor(lengths)


def pack_sequence(sequences: Sequence[Tensor], enforce_sorted: bool = True) -> PackedSequence:
    """Pack a list of (L_i, *) tensors (``pad_sequence`` then ``pack_padded_sequence``)."""
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpad_sequence(padded_sequences: Tensor, lengths: Tensor | Sequence[int],
                   batch_first: bool = False) -> list[Tensor]:
    """Split a padded batch back into its (L_i, *) sequences."""
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)  # (B, T, *)
    return [padded_sequences[i, :n] for i, n in enumerate(_lengths_list(lengths))]


def unpack_sequence(packed_sequences: PackedSequence) -> list[Tensor]:
    """Split a packed batch back into its (L_i, *) sequences, in the original order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
