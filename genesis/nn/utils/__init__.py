"""``genesis.nn.utils``: gradient clipping, parameter/vector conversion, activation checkpointing, sequence
padding and packing (``rnn``)."""

from genesis.nn.utils import checkpoint, rnn
from genesis.nn.utils.clip_grad import clip_grad_norm_, clip_grad_value_, clip_grads_with_norm_, get_total_norm
from genesis.nn.utils.convert_parameters import parameters_to_vector, vector_to_parameters

__all__ = ["checkpoint", "rnn", "clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_", "get_total_norm",
           "parameters_to_vector", "vector_to_parameters"]
