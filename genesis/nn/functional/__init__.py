"""``genesis.nn.functional``: the PyTorch-compatible functional namespace of neural-network operations.

Every function here composes the differentiable tensor ops of ``genesis.functional`` (or, for convolution and
pooling, dedicated backend primitives), so gradients come from autograd. Signatures follow
``torch.nn.functional``; the LLM helpers (``rope``, ``swiglu``, ``causal_softmax``, ``random_sample``) and the
``out=`` arguments are Genesis extensions documented in docs/functional.md.
"""

from genesis.nn.functional.activations import (
    celu,
    elu,
    gelu,
    glu,
    hardsigmoid,
    hardswish,
    hardtanh,
    leaky_relu,
    log_softmax,
    logsigmoid,
    mish,
    prelu,
    relu,
    relu6,
    selu,
    sigmoid,
    silu,
    softmax,
    softmin,
    softplus,
    softsign,
    tanh,
    tanhshrink,
    threshold,
)
from genesis.nn.functional.attention import multi_head_attention_forward, scaled_dot_product_attention
from genesis.nn.functional.basic import (
    alpha_dropout,
    bilinear,
    cosine_similarity,
    dropout,
    dropout1d,
    dropout2d,
    embedding,
    fold,
    linear,
    normalize,
    one_hot,
    pad,
    pairwise_distance,
    unfold,
)
from genesis.nn.functional.conv import (
    conv1d,
    conv2d,
    conv3d,
    conv_transpose1d,
    conv_transpose2d,
    conv_transpose3d,
)
from genesis.nn.functional.llm import (
    causal_softmax,
    decode_attention,
    kv_cache_write_,
    random_sample,
    rope,
    rope_kv_cache_write_,
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
    huber_loss,
    kl_div,
    l1_loss,
    margin_ranking_loss,
    mse_loss,
    nll_loss,
    poisson_nll_loss,
    smooth_l1_loss,
    soft_margin_loss,
)
from genesis.nn.functional.norms import (
    batch_norm,
    group_norm,
    instance_norm,
    layer_norm,
    local_response_norm,
    rms_norm,
)
from genesis.nn.functional.pooling import (
    adaptive_avg_pool1d,
    adaptive_avg_pool2d,
    adaptive_max_pool2d,
    avg_pool1d,
    avg_pool2d,
    avg_pool3d,
    interpolate,
    lp_pool2d,
    max_pool1d,
    max_pool2d,
    max_pool3d,
    pixel_shuffle,
    upsample,
)

__all__ = [
    "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_max_pool2d", "avg_pool1d", "avg_pool2d", "avg_pool3d",
    "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "interpolate",
    "lp_pool2d", "max_pool1d", "max_pool2d", "max_pool3d", "pixel_shuffle", "upsample",
    "alpha_dropout", "batch_norm", "bilinear", "binary_cross_entropy", "binary_cross_entropy_with_logits",
    "causal_softmax", "celu", "cosine_embedding_loss", "cosine_similarity", "cross_entropy", "decode_attention",
    "dropout", "dropout1d",
    "dropout2d", "elu", "embedding", "fold", "gaussian_nll_loss", "gelu", "glu", "group_norm", "hardsigmoid",
    "hardswish", "hardtanh", "huber_loss", "instance_norm", "kl_div", "kv_cache_write_", "l1_loss", "layer_norm",
    "leaky_relu",
    "linear", "local_response_norm", "log_softmax", "logsigmoid", "margin_ranking_loss", "mish", "mse_loss",
    "multi_head_attention_forward", "nll_loss", "normalize", "one_hot", "pad", "pairwise_distance",
    "poisson_nll_loss", "prelu", "random_sample", "relu", "relu6", "rms_norm", "rope",
    "rope_kv_cache_write_", "rope_tables", "rotate_half",
    "scaled_dot_product_attention", "selu", "sigmoid", "silu", "smooth_l1_loss", "soft_margin_loss", "softmax",
    "softmin", "softplus", "softsign", "swiglu", "tanh", "tanhshrink", "threshold", "unfold",
]
