"""``genesis.nn.utils``: gradient clipping, parameter/vector conversion, activation checkpointing, sequence
padding and packing (``rnn``), weight and spectral normalization, parametrizations (``parametrize``,
``parametrizations``), calling a module with other tensors in place of its parameters (``stateless``), pruning
(``prune``), folding an eval-mode batch norm into the layer before it (``fusion``), building a module without
initializing it (``skip_init``) and convolution weights in another memory format."""

from genesis.nn.utils import (
    checkpoint,
    fusion,
    init,
    memory_format,
    parametrizations,
    parametrize,
    prune,
    rnn,
    stateless,
)
from genesis.nn.utils.clip_grad import (
    clip_grad_norm,
    clip_grad_norm_,
    clip_grad_value_,
    clip_grads_with_norm_,
    get_total_norm,
)
from genesis.nn.utils.convert_parameters import parameters_to_vector, vector_to_parameters
from genesis.nn.utils.fusion import fuse_conv_bn_eval, fuse_conv_bn_weights, fuse_linear_bn_eval, fuse_linear_bn_weights
from genesis.nn.utils.init import skip_init
from genesis.nn.utils.memory_format import convert_conv2d_weight_memory_format, convert_conv3d_weight_memory_format
from genesis.nn.utils.spectral_norm import remove_spectral_norm, spectral_norm
from genesis.nn.utils.weight_norm import remove_weight_norm, weight_norm

__all__ = ["checkpoint", "parametrizations", "parametrize", "prune", "rnn", "stateless", "clip_grad_norm",
           "clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_", "get_total_norm", "parameters_to_vector",
           "vector_to_parameters", "remove_spectral_norm", "spectral_norm", "remove_weight_norm", "weight_norm",
           "fusion", "fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval", "fuse_linear_bn_weights",
           "init", "memory_format", "skip_init", "convert_conv2d_weight_memory_format",
           "convert_conv3d_weight_memory_format"]
