"""``torch.nn.utils.memory_format``: convolution weights in another memory format (``channels_last``)."""

from __future__ import annotations

from typing import Any

from genesis.nn.modules.conv import Conv2d, Conv3d, ConvTranspose2d, ConvTranspose3d
from genesis.nn.modules.module import Module


def _convert(module: Module, kinds: tuple[type, ...], memory_format: Any) -> Module:
    if isinstance(module, kinds):
        module.weight.data = module.weight.detach().clone(memory_format=memory_format)
    for child in module.children():
        _convert(child, kinds, memory_format)
    return module


def convert_conv2d_weight_memory_format(module: Module, memory_format: Any) -> Module:
    """Lay out the weights of every ``Conv2d`` / ``ConvTranspose2d`` in ``module`` (recursively) in
    ``memory_format``; returns ``module``."""
    return _convert(module, (Conv2d, ConvTranspose2d), memory_format)


def convert_conv3d_weight_memory_format(module: Module, memory_format: Any) -> Module:
    """Lay out the weights of every ``Conv3d`` / ``ConvTranspose3d`` in ``module`` (recursively) in
    ``memory_format``; returns ``module``."""
    return _convert(module, (Conv3d, ConvTranspose3d), memory_format)
