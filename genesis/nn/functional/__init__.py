"""``genesis.nn.functional``: the PyTorch-compatible functional namespace of neural-network operations.

Every function here composes the differentiable tensor ops of ``genesis.ops`` (or, for convolution and
pooling, dedicated backend primitives), so gradients come from autograd. Signatures follow
``torch.nn.functional``; the LLM helpers (``rope``, ``swiglu``, ``causal_softmax``, ``random_sample``) and the
``out=`` arguments are Genesis extensions documented in docs/functional.md.
"""

from genesis.nn.functional.activations import (
    celu,
    celu_,
    elu,
    elu_,
    gelu,
    glu,
    gumbel_softmax,
    hardshrink,
    hardsigmoid,
    hardswish,
    hardtanh,
    hardtanh_,
    leaky_relu,
    leaky_relu_,
    log_softmax,
    logsigmoid,
    mish,
    prelu,
    relu,
    relu6,
    relu_,
    rrelu,
    rrelu_,
    selu,
    selu_,
    sigmoid,
    silu,
    softmax,
    softmin,
    softplus,
    softshrink,
    softsign,
    tanh,
    tanhshrink,
    threshold,
    threshold_,
)
from genesis.nn.functional.attention import multi_head_attention_forward, scaled_dot_product_attention
from genesis.nn.functional.conv import (
    conv1d,
    conv2d,
    conv3d,
    conv_tbc,
    conv_transpose1d,
    conv_transpose2d,
    conv_transpose3d,
    fold,
    unfold,
)
from genesis.nn.functional.ctc import ctc_loss
from genesis.nn.functional.distance import cosine_similarity, pairwise_distance, pdist
from genesis.nn.functional.dropout import alpha_dropout, dropout, dropout1d, dropout2d, dropout3d, feature_alpha_dropout
from genesis.nn.functional.linear import bilinear, linear
from genesis.nn.functional.llm import (
    causal_softmax,
    random_sample,
    rope,
    rope_tables,
    rotate_half,
    swiglu,
)
from genesis.nn.functional.losses import (
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    cosine_embedding_loss,
    cross_entropy,
    gaussian_nll_loss,
    hinge_embedding_loss,
    huber_loss,
    kl_div,
    l1_loss,
    margin_ranking_loss,
    mse_loss,
    multi_margin_loss,
    multilabel_margin_loss,
    multilabel_soft_margin_loss,
    nll_loss,
    poisson_nll_loss,
    smooth_l1_loss,
    soft_margin_loss,
    triplet_margin_loss,
    triplet_margin_with_distance_loss,
)
from genesis.nn.functional.normalization import (
    batch_norm,
    group_norm,
    instance_norm,
    layer_norm,
    local_response_norm,
    normalize,
    rms_norm,
)
from genesis.nn.functional.padding import pad
from genesis.nn.functional.pooling import (
    adaptive_avg_pool1d,
    adaptive_avg_pool2d,
    adaptive_avg_pool3d,
    adaptive_max_pool1d,
    adaptive_max_pool1d_with_indices,
    adaptive_max_pool2d,
    adaptive_max_pool2d_with_indices,
    adaptive_max_pool3d,
    adaptive_max_pool3d_with_indices,
    avg_pool1d,
    avg_pool2d,
    avg_pool3d,
    fractional_max_pool2d,
    fractional_max_pool2d_with_indices,
    fractional_max_pool3d,
    fractional_max_pool3d_with_indices,
    lp_pool1d,
    lp_pool2d,
    lp_pool3d,
    max_pool1d,
    max_pool1d_with_indices,
    max_pool2d,
    max_pool2d_with_indices,
    max_pool3d,
    max_pool3d_with_indices,
    max_unpool1d,
    max_unpool2d,
    max_unpool3d,
)
from genesis.nn.functional.shuffle import channel_shuffle, native_channel_shuffle, pixel_shuffle, pixel_unshuffle
from genesis.nn.functional.sparse import embedding, embedding_bag, one_hot
from genesis.nn.functional.upsampling import interpolate, upsample, upsample_bilinear, upsample_nearest
from genesis.nn.functional.vision import affine_grid, grid_sample
from genesis.ops.llm import decode_attention, kv_cache_write_, rope_kv_cache_write_

__all__ = [
    "affine_grid", "grid_sample",
    "celu", "celu_", "elu", "elu_", "gelu", "glu", "gumbel_softmax", "hardshrink", "hardsigmoid", "hardswish",
    "hardtanh", "hardtanh_", "leaky_relu", "leaky_relu_", "log_softmax", "logsigmoid", "mish", "prelu", "relu",
    "relu6", "relu_", "rrelu", "rrelu_", "selu", "selu_", "sigmoid", "silu", "softmax", "softmin", "softplus",
    "softshrink", "softsign", "tanh", "tanhshrink", "threshold", "threshold_",
    "multi_head_attention_forward", "scaled_dot_product_attention",
    "conv1d", "conv2d", "conv3d", "conv_tbc", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "fold",
    "unfold",
    "cosine_similarity", "pairwise_distance", "pdist",
    "alpha_dropout", "dropout", "dropout1d", "dropout2d", "dropout3d", "feature_alpha_dropout",
    "bilinear", "linear",
    "causal_softmax", "decode_attention", "kv_cache_write_", "random_sample", "rope", "rope_kv_cache_write_",
    "rope_tables", "rotate_half", "swiglu",
    "binary_cross_entropy", "binary_cross_entropy_with_logits", "cosine_embedding_loss", "cross_entropy",
    "ctc_loss", "gaussian_nll_loss", "hinge_embedding_loss", "huber_loss", "kl_div", "l1_loss",
    "margin_ranking_loss", "mse_loss", "multi_margin_loss", "multilabel_margin_loss", "multilabel_soft_margin_loss",
    "nll_loss", "poisson_nll_loss", "smooth_l1_loss", "soft_margin_loss", "triplet_margin_loss",
    "triplet_margin_with_distance_loss",
    "batch_norm", "group_norm", "instance_norm", "layer_norm", "local_response_norm", "normalize", "rms_norm",
    "pad",
    "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d", "adaptive_max_pool1d",
    "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d", "adaptive_max_pool2d_with_indices",
    "adaptive_max_pool3d", "adaptive_max_pool3d_with_indices", "avg_pool1d", "avg_pool2d", "avg_pool3d",
    "fractional_max_pool2d", "fractional_max_pool2d_with_indices", "fractional_max_pool3d",
    "fractional_max_pool3d_with_indices", "lp_pool1d", "lp_pool2d", "lp_pool3d", "max_pool1d",
    "max_pool1d_with_indices", "max_pool2d", "max_pool2d_with_indices", "max_pool3d", "max_pool3d_with_indices",
    "max_unpool1d", "max_unpool2d", "max_unpool3d",
    "channel_shuffle", "native_channel_shuffle", "pixel_shuffle", "pixel_unshuffle",
    "embedding", "embedding_bag", "one_hot",
    "interpolate", "upsample", "upsample_bilinear", "upsample_nearest",
]
