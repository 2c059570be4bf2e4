"""``torch.return_types``: the named tuples of the ops that return several tensors, one type per op
(``genesis.return_types.max(values=..., indices=...)``); their fields read by name or position."""

from genesis.ops.reduce import RESULT_TYPES

globals().update(RESULT_TYPES)  # max, min, sort, topk, kthvalue, median, nanmedian, mode, cummax, cummin

__all__ = sorted(RESULT_TYPES)
