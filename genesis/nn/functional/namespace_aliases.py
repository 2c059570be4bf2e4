"""The neural-network ops torch also offers at the top of its namespace (``torch.conv2d``, ``torch.dropout``,
``torch.layer_norm``...), with the signatures of ``torch.<name>`` — which are not always those of
``torch.nn.functional.<name>``: ``dropout(input, p, train)``, ``batch_norm`` and ``instance_norm`` with the weights
first and every argument positional, ``embedding(weight, indices, ...)`` with the weight first, ``rrelu`` with a
generator. ``genesis/__init__.py`` re-exports ``__all__``.

Where the signatures agree the function is ``genesis.nn.functional``'s own; the others are thin wrappers over it.
As torch's kernels, they skip the Python-level checks of ``torch.nn.functional`` (a dropout probability out of range
is a RuntimeError here, a ValueError there; batch norm of a single value per channel normalizes to zeros).
"""

from __future__ import annotations

from typing import Sequence

from genesis.nn.functional import activations
from genesis.nn.functional import ctc as _ctc
from genesis.nn.functional import losses as _losses
from genesis.nn.functional import pooling as _pooling
from genesis.nn.functional.activations import celu_, hardshrink, prelu, randomized_relu, selu_, threshold_
from genesis.nn.functional.conv import (
    conv1d,
    conv2d,
    conv3d,
    conv_tbc,
    conv_transpose1d,
    conv_transpose2d,
    conv_transpose3d,
)
from genesis.nn.functional.distance import pdist
from genesis.nn.functional.dropout import _channel_dropout
from genesis.nn.functional.dropout import alpha_dropout as _alpha_dropout
from genesis.nn.functional.dropout import dropout as _dropout
from genesis.nn.functional.dropout import feature_alpha_dropout as _feature_alpha_dropout
from genesis.nn.functional.linear import bilinear, linear
from genesis.nn.functional.normalization import batch_norm_unchecked, instance_norm_unchecked, rms_norm
from genesis.nn.functional.normalization import group_norm as _group_norm
from genesis.nn.functional.normalization import layer_norm as _layer_norm
from genesis.nn.functional.padding import pad as _pad
from genesis.nn.functional.pooling import adaptive_avg_pool1d, avg_pool1d
from genesis.nn.functional.rnn import _gru_step, _lstm_step, _rnn_step
from genesis.nn.functional.shuffle import channel_shuffle, pixel_shuffle, pixel_unshuffle
from genesis.nn.functional.sparse import _embedding_renorm_
from genesis.nn.functional.sparse import embedding as _embedding
from genesis.random import Generator
from genesis.tensor import Tensor

__all__ = [
    "alpha_dropout", "alpha_dropout_", "batch_norm", "bilinear", "celu", "celu_", "channel_shuffle", "conv1d",
    "conv2d", "conv3d", "conv_tbc", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "dropout", "dropout_",
    "embedding", "embedding_renorm_", "gru_cell", "lstm_cell", "rnn_relu_cell", "rnn_tanh_cell",
    "feature_alpha_dropout", "feature_alpha_dropout_", "feature_dropout", "feature_dropout_", "group_norm",
    "hardshrink", "instance_norm", "layer_norm", "pdist", "pixel_shuffle", "pixel_unshuffle", "prelu", "rrelu",
    "rrelu_", "selu", "selu_", "threshold", "threshold_",
    # losses with torch's integer reductions, pooling with its tuple results, padding and RMS norm
    "binary_cross_entropy_with_logits", "kl_div", "cosine_embedding_loss", "margin_ranking_loss",
    "hinge_embedding_loss", "triplet_margin_loss", "poisson_nll_loss", "ctc_loss", "max_pool1d", "max_pool2d",
    "max_pool3d", "max_pool1d_with_indices", "avg_pool1d", "adaptive_avg_pool1d", "adaptive_max_pool1d",
    "constant_pad_nd", "rms_norm",
]


def _check_probability(p: float) -> None:
    if p < 0 or p > 1:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {p}")


def dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """``nn.functional.dropout(input, p, training=train)``; ``input`` itself when not training."""
    _check_probability(p)
    return _dropout(input, p, train)


def dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    """In-place ``dropout``."""
    _check_probability(p)
    return _dropout(input, p, train, inplace=True)


def alpha_dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """``nn.functional.alpha_dropout(input, p, training=train)``."""
    _check_probability(p)
    return _alpha_dropout(input, p, train)


def alpha_dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    """In-place ``alpha_dropout``."""
    _check_probability(p)
    return _alpha_dropout(input, p, train, inplace=True)


def feature_dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """Dropout of whole channels: one draw per entry of the first two dims of an input of at least 2 dims, shared by
    the rest (``nn.functional.dropout2d``'s kernel)."""
    _check_probability(p)
    return _channel_dropout(input, p, train)


def feature_dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    """In-place ``feature_dropout``."""
    _check_probability(p)
    out = _channel_dropout(input, p, train)
    return input if out is input else input.copy_(out)


def feature_alpha_dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """``nn.functional.feature_alpha_dropout(input, p, training=train)``."""
    _check_probability(p)
    return _feature_alpha_dropout(input, p, train)


def feature_alpha_dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    """In-place ``feature_alpha_dropout``."""
    _check_probability(p)
    return _feature_alpha_dropout(input, p, train, inplace=True)


def layer_norm(input: Tensor, normalized_shape: Sequence[int], weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5, cudnn_enable: bool = True) -> Tensor:
    """``nn.functional.layer_norm``; ``cudnn_enable`` is accepted and ignored, as on torch's CPU."""
    if isinstance(normalized_shape, int):
        raise TypeError("layer_norm(): argument 'normalized_shape' (position 2) must be tuple of ints, not int")
    return _layer_norm(input, normalized_shape, weight, bias, eps)


def group_norm(input: Tensor, num_groups: int, weight: Tensor | None = None, bias: Tensor | None = None,
               eps: float = 1e-5, cudnn_enabled: bool = True) -> Tensor:
    """``nn.functional.group_norm``; ``cudnn_enabled`` is accepted and ignored."""
    return _group_norm(input, num_groups, weight, bias, eps)


def _check_momentum(momentum: float) -> None:
    if isinstance(momentum, bool) or not isinstance(momentum, (int, float)):
        raise TypeError(f"batch_norm(): argument 'momentum' (position 7) must be float, not "
                        f"{type(momentum).__name__}")


def batch_norm(input: Tensor, weight: Tensor | None, bias: Tensor | None, running_mean: Tensor | None,
               running_var: Tensor | None, training: bool, momentum: float, eps: float,
               cudnn_enabled: bool) -> Tensor:
    """Batch norm in torch's namespace order (weight and bias first, every argument required); the running
    statistics are updated in place in training. ``cudnn_enabled`` is accepted and ignored."""
    _check_momentum(momentum)
    if not training and (running_mean is None or running_var is None):
        raise RuntimeError("running_mean must be defined in evaluation mode")
    return batch_norm_unchecked(input, running_mean, running_var, weight, bias, training, momentum, eps)


def instance_norm(input: Tensor, weight: Tensor | None, bias: Tensor | None, running_mean: Tensor | None,
                  running_var: Tensor | None, use_input_stats: bool, momentum: float, eps: float,
                  cudnn_enabled: bool) -> Tensor:
    """Instance norm in torch's namespace order (weight and bias first, every argument required)."""
    _check_momentum(momentum)
    return instance_norm_unchecked(input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps)


def embedding(weight: Tensor, indices: Tensor, padding_idx: int = -1, scale_grad_by_freq: bool = False,
              sparse: bool = False) -> Tensor:
    """Rows of ``weight`` picked by ``indices`` (the weight first, unlike ``nn.functional.embedding``); a
    non-negative ``padding_idx`` names the row that gets no gradient (-1, and any negative value: none)."""
    padding = padding_idx if 0 <= padding_idx < weight.shape[0] else None
    return _embedding(indices, weight, padding, scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


def embedding_renorm_(input: Tensor, indices: Tensor, max_norm: float, norm_type: float) -> Tensor:
    """Rescale in place the rows of ``input`` named in ``indices`` whose ``norm_type``-norm exceeds ``max_norm``
    to that norm (``embedding(..., max_norm=...)``'s update); returns ``input``."""
    _embedding_renorm_(input, indices.reshape(-1), max_norm, norm_type)
    return input


# ------------------------------------------------------------------ one step of a recurrent cell (torch._VF's)


def rnn_tanh_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None = None,
                  b_hh: Tensor | None = None) -> Tensor:
    """One Elman step ``tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)`` (``nn.RNNCell``'s)."""
    return _rnn_step("RNN_TANH", linear(input, w_ih, b_ih), hx, w_hh, b_hh)


def rnn_relu_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None = None,
                  b_hh: Tensor | None = None) -> Tensor:
    """One Elman step with relu (``nn.RNNCell(nonlinearity="relu")``'s)."""
    return _rnn_step("RNN_RELU", linear(input, w_ih, b_ih), hx, w_hh, b_hh)


def lstm_cell(input: Tensor, hx: Sequence[Tensor], w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None = None,
              b_hh: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """One LSTM step from ``hx = (h, c)``: ``(h', c')`` (``nn.LSTMCell``'s)."""
    h, c = hx
    return _lstm_step(linear(input, w_ih, b_ih), h, c, w_hh, b_hh, None)


def gru_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None = None,
             b_hh: Tensor | None = None) -> Tensor:
    """One GRU step (``nn.GRUCell``'s)."""
    return _gru_step(linear(input, w_ih, b_ih), hx, w_hh, b_hh)


def selu(input: Tensor) -> Tensor:
    """``nn.functional.selu`` (no ``inplace`` argument: ``selu_`` is the in-place form)."""
    return activations.selu(input)


def celu(input: Tensor, alpha: float = 1.0) -> Tensor:
    """``nn.functional.celu`` (no ``inplace`` argument: ``celu_`` is the in-place form)."""
    return activations.celu(input, alpha)


def threshold(input: Tensor, threshold: float, value: float) -> Tensor:
    """``input`` where it is above ``threshold``, else ``value`` (``threshold_`` is the in-place form)."""
    return activations.threshold(input, threshold, value)


def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,
          generator: Generator | None = None) -> Tensor:
    """``nn.functional.rrelu`` drawing its training slopes from ``generator``."""
    return randomized_relu(input, lower, upper, training, False, generator)


def rrelu_(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,
           generator: Generator | None = None) -> Tensor:
    """In-place ``rrelu``."""
    return randomized_relu(input, lower, upper, training, True, generator)


# ------------------------------------------------------------------ losses: torch's integer reductions
# torch's top-level losses take the reduction as an integer: 1 mean, 2 sum, any other value none. Their Python
# bindings default to 0 (each element's loss), unlike torch.nn.functional's "mean"; these follow the bindings.


def _reduction(reduction: int) -> str:
    if isinstance(reduction, bool) or not isinstance(reduction, int):
        raise TypeError(f"argument 'reduction' must be int, not {type(reduction).__name__}")
    return "mean" if reduction == 1 else "sum" if reduction == 2 else "none"


def _reduced(loss: Tensor, reduction: int) -> Tensor:
    """Elementwise ``loss`` reduced as the integer ``reduction`` asks."""
    mode = _reduction(reduction)
    return loss if mode == "none" else loss.mean() if mode == "mean" else loss.sum()


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor, weight: Tensor | None = None,
                                     pos_weight: Tensor | None = None, reduction: int = 0) -> Tensor:
    """``nn.functional.binary_cross_entropy_with_logits`` with an integer ``reduction``."""
    return _losses.binary_cross_entropy_with_logits(input, target, weight, reduction=_reduction(reduction),
                                                    pos_weight=pos_weight)


def kl_div(input: Tensor, target: Tensor, reduction: int = 0, *, log_target: bool = False) -> Tensor:
    """``nn.functional.kl_div`` with an integer ``reduction`` (1 is the mean over every element)."""
    return _reduced(_losses.kl_div(input, target, reduction="none", log_target=log_target), reduction)


def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                          reduction: int = 0) -> Tensor:
    """``nn.functional.cosine_embedding_loss`` with an integer ``reduction``."""
    return _losses.cosine_embedding_loss(input1, input2, target, margin, reduction=_reduction(reduction))


def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                        reduction: int = 0) -> Tensor:
    """``nn.functional.margin_ranking_loss`` with an integer ``reduction``."""
    return _losses.margin_ranking_loss(input1, input2, target, margin, reduction=_reduction(reduction))


def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0, reduction: int = 0) -> Tensor:
    """``nn.functional.hinge_embedding_loss`` with an integer ``reduction``."""
    return _losses.hinge_embedding_loss(input, target, margin, reduction=_reduction(reduction))


def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor, margin: float = 1.0, p: float = 2,
                        eps: float = 1e-6, swap: bool = False, reduction: int = 0) -> Tensor:
    """``nn.functional.triplet_margin_loss`` with an integer ``reduction``."""
    return _losses.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
                                       reduction=_reduction(reduction))


def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool, full: bool, eps: float,
                     reduction: int) -> Tensor:
    """``nn.functional.poisson_nll_loss`` with every argument required and an integer ``reduction``."""
    return _losses.poisson_nll_loss(input, target, log_input, full, eps=eps, reduction=_reduction(reduction))


def ctc_loss(log_probs: Tensor, targets: Tensor, input_lengths: Tensor | Sequence[int],
             target_lengths: Tensor | Sequence[int], blank: int = 0, reduction: int = 0,
             zero_infinity: bool = False) -> Tensor:
    """``nn.functional.ctc_loss`` with an integer ``reduction``."""
    return _ctc.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, _reduction(reduction),
                         zero_infinity)


# ------------------------------------------------------------------ pooling and padding


def _stride(stride: int | Sequence[int]) -> int | Sequence[int] | None:
    """torch's namespace pooling takes an empty stride for "the kernel size"."""
    return None if isinstance(stride, (tuple, list)) and not stride else stride


def max_pool1d(input: Tensor, kernel_size: int | Sequence[int], stride: int | Sequence[int] = (),
               padding: int | Sequence[int] = 0, dilation: int | Sequence[int] = 1, ceil_mode: bool = False) -> Tensor:
    """``nn.functional.max_pool1d``; an empty ``stride`` is the kernel size."""
    return _pooling.max_pool1d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool2d(input: Tensor, kernel_size: int | Sequence[int], stride: int | Sequence[int] = (),
               padding: int | Sequence[int] = 0, dilation: int | Sequence[int] = 1, ceil_mode: bool = False) -> Tensor:
    """``nn.functional.max_pool2d``; an empty ``stride`` is the kernel size."""
    return _pooling.max_pool2d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool3d(input: Tensor, kernel_size: int | Sequence[int], stride: int | Sequence[int] = (),
               padding: int | Sequence[int] = 0, dilation: int | Sequence[int] = 1, ceil_mode: bool = False) -> Tensor:
    """``nn.functional.max_pool3d``; an empty ``stride`` is the kernel size."""
    return _pooling.max_pool3d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool1d_with_indices(input: Tensor, kernel_size: int | Sequence[int], stride: int | Sequence[int] = (),
                            padding: int | Sequence[int] = 0, dilation: int | Sequence[int] = 1,
                            ceil_mode: bool = False) -> tuple[Tensor, Tensor]:
    """``max_pool1d`` returning ``(values, indices)``."""
    return _pooling.max_pool1d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode, True)


def adaptive_max_pool1d(input: Tensor, output_size: int | Sequence[int]) -> tuple[Tensor, Tensor]:
    """``nn.functional.adaptive_max_pool1d`` returning ``(values, indices)``, as torch's namespace function."""
    return _pooling.adaptive_max_pool1d(input, output_size, True)


def constant_pad_nd(input: Tensor, pad: Sequence[int], value: float = 0) -> Tensor:
    """``nn.functional.pad(input, pad, value=value)`` (constant padding; negative amounts crop)."""
    return _pad(input, pad, value=value)
