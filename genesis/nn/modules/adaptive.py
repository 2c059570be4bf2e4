"""``AdaptiveLogSoftmaxWithLoss``: the adaptive softmax of Grave et al. (2016), "Efficient softmax approximation
for GPUs", with torch's parameters (``head``, ``tail.{i}.0``, ``tail.{i}.1``), checks and outputs."""

from __future__ import annotations

from collections import namedtuple
from typing import Any, Sequence

from genesis.nn.functional.adaptive import _adaptive_log_softmax_full, _adaptive_log_softmax_target
from genesis.nn.modules.container import ModuleList, Sequential
from genesis.nn.modules.linear import Linear
from genesis.nn.modules.module import Module
from genesis.ops import _check_range
from genesis.tensor import Tensor

_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])


class AdaptiveLogSoftmaxWithLoss(Module):
    """Log-probabilities over ``n_classes`` split by ``cutoffs`` into a frequent shortlist, predicted by the
    ``head`` together with one logit per rarer cluster, and clusters predicted by smaller ``tail`` projections
    (hidden size ``in_features // div_value ** (i + 1)``).

    ``forward(input, target)`` returns ``(output, loss)``: the target's log-probability per sample and the mean
    negative log-likelihood. ``log_prob(input)`` gives the full (N, n_classes) distribution, ``predict(input)``
    its argmax.
    """

    def __init__(self, in_features: int, n_classes: int, cutoffs: Sequence[int], div_value: float = 4.0,
                 head_bias: bool = False, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        cutoffs = list(cutoffs)
        if len(cutoffs) == 0:
            raise ValueError("cutoffs should be a sequence of length larger than 0")
        if (cutoffs != sorted(cutoffs) or min(cutoffs) <= 0 or max(cutoffs) > n_classes - 1
                or len(set(cutoffs)) != len(cutoffs) or any(int(c) != c for c in cutoffs)):
            raise ValueError("cutoffs should be a sequence of unique, positive integers sorted in an increasing "
                             "order, where each value is between 1 and n_classes-1")
        self.in_features = in_features
        self.n_classes = n_classes
        self.cutoffs = cutoffs + [n_classes]
        self.div_value = div_value
        self.head_bias = head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head = Linear(in_features, self.head_size, bias=head_bias, device=device, dtype=dtype)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hidden = int(in_features // (div_value ** (i + 1)))
            size = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(Sequential(Linear(in_features, hidden, bias=False, device=device, dtype=dtype),
                                        Linear(hidden, size, bias=False, device=device, dtype=dtype)))

    def reset_parameters(self) -> None:
        self.head.reset_parameters()
        for to_hidden, to_output in self.tail:
            to_hidden.reset_parameters()
            to_output.reset_parameters()

    def forward(self, input_: Tensor, target_: Tensor) -> _ASMoutput:
        if target_.ndim == 1:
            if input_.shape[0] != target_.shape[0]:
                raise RuntimeError("Input and target should have the same size in the batch dimension.")
            if input_.ndim != 2:
                raise RuntimeError(f"1D target tensor expects 2D input tensors, but found inputs with size "
                                   f"{input_.shape}")
        elif target_.ndim == 0:
            if input_.ndim != 1:
                raise RuntimeError(f"0D target tensor expects 1D input tensors, but found inputs with size "
                                   f"{input_.shape}")
        else:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        batched = target_.ndim > 0
        input = input_ if batched else input_.unsqueeze(0)
        target = (target_ if batched else target_.unsqueeze(0)).long()
        limits = f"Target values should be in [0, {self.n_classes - 1}], but"
        try:
            target = _check_range(target, 0, self.n_classes, RuntimeError, limits + " {value} was found.")
        except RuntimeError:  # raised at the call (the CPU): torch's message names the range of the targets
            raise RuntimeError(f"{limits} values in range [{target.min().item()}, {target.max().item()}] were "
                               "found. ") from None
        output, loss = _adaptive_log_softmax_target(input, target, self.head, self.tail, self.cutoffs)
        return _ASMoutput(output if batched else output.squeeze(0), loss)

    def log_prob(self, input: Tensor) -> Tensor:
        """Log-probabilities of all ``n_classes`` for (N, in_features) input: (N, n_classes)."""
        return _adaptive_log_softmax_full(input, self.head(input), self.tail, self.shortlist_size)

    def predict(self, input: Tensor) -> Tensor:
        """The most likely class of each row of (N, in_features) input: (N,)."""
        return self.log_prob(input).argmax(1)
