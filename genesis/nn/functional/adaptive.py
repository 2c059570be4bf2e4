"""The math of the adaptive softmax (Grave et al., 2016, "Efficient softmax approximation for GPUs") behind
``nn.AdaptiveLogSoftmaxWithLoss``.

torch has no functional form of it, so the helpers are private to ``genesis.nn``. The projections are passed in as
callables (the layer's ``head`` and ``tail`` modules): the head gives the shortlist's logits and one logit per
cluster, each tail a cluster's logits.
"""

from __future__ import annotations

from typing import Callable, Sequence

from genesis import ops as T
from genesis.nn.functional.activations import log_softmax
from genesis.tensor import Tensor, zeros


def _adaptive_log_softmax_target(input: Tensor, target: Tensor, head: Callable[[Tensor], Tensor],
                                 tails: Sequence[Callable[[Tensor], Tensor]],
                                 cutoffs: Sequence[int]) -> tuple[Tensor, Tensor]:
    """(the target's log-probability per sample (N,), the mean negative log-likelihood) for (N, in_features)
    input and (N,) int64 targets; ``cutoffs`` ends with ``n_classes``. Each tail runs on its cluster's rows only."""
    shortlist_size = cutoffs[0]
    output = zeros((target.shape[0],), dtype=input.dtype, device=input.device)
    head_column = target  # the head's logit of each sample: its class, or its cluster's entry
    for i in range(len(cutoffs) - 1):
        low, high = cutoffs[i], cutoffs[i + 1]
        in_cluster = (target >= low) & (target < high)
        rows = T.nonzero(in_cluster).reshape(-1)
        if rows.numel() == 0:
            continue
        head_column = T.where(in_cluster, shortlist_size + i, head_column)
        cluster_logprob = log_softmax(tails[i](T.index_select(input, 0, rows)), dim=1)
        relative = T.index_select(target, 0, rows) - low
        output = output.index_add(0, rows, T.gather(cluster_logprob, 1, relative.unsqueeze(1)).squeeze(1))
    head_logprob = log_softmax(head(input), dim=1)
    output = output + T.gather(head_logprob, 1, head_column.unsqueeze(1)).squeeze(1)
    return output, (-output).mean()


def _adaptive_log_softmax_full(input: Tensor, head_output: Tensor, tails: Sequence[Callable[[Tensor], Tensor]],
                               shortlist_size: int) -> Tensor:
    """Log-probabilities of every class, (N, n_classes): the shortlist's from the head, each cluster's from its
    tail plus the head's log-probability of the cluster."""
    head_logprob = log_softmax(head_output, dim=1)
    parts = [head_logprob[:, :shortlist_size]]
    for i, tail in enumerate(tails):
        cluster_logprob = log_softmax(tail(input), dim=1)
        parts.append(cluster_logprob + head_logprob[:, shortlist_size + i].unsqueeze(1))
    return T.cat(parts, 1)
