"""The layers of ``genesis.nn``, one theme per file."""

from genesis.nn.modules.activation import (
    CELU,
    ELU,
    GELU,
    GLU,
    SELU,
    Hardsigmoid,
    Hardswish,
    Hardtanh,
    LeakyReLU,
    LogSigmoid,
    LogSoftmax,
    Mish,
    PReLU,
    ReLU,
    ReLU6,
    Sigmoid,
    SiLU,
    Softmax,
    Softmin,
    Softplus,
    Softsign,
    Tanh,
    Tanhshrink,
    Threshold,
)
from genesis.nn.modules.attention import FeedForwardSwiGLU, MultiheadAttention, RotaryEmbedding
from genesis.nn.modules.container import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from genesis.nn.modules.conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from genesis.nn.modules.dropout import AlphaDropout, Dropout, Dropout1d, Dropout2d
from genesis.nn.modules.linear import Bilinear, Flatten, Identity, Linear, Unflatten
from genesis.nn.modules.loss import (
    BCELoss,
    BCEWithLogitsLoss,
    CosineEmbeddingLoss,
    CrossEntropyLoss,
    GaussianNLLLoss,
    HuberLoss,
    KLDivLoss,
    L1Loss,
    MarginRankingLoss,
    MSELoss,
    NLLLoss,
    PoissonNLLLoss,
    SmoothL1Loss,
    SoftMarginLoss,
)
from genesis.nn.modules.module import Module
from genesis.nn.modules.normalization import (
    BatchNorm1d,
    BatchNorm2d,
    BatchNorm3d,
    GroupNorm,
    InstanceNorm1d,
    InstanceNorm2d,
    LayerNorm,
    LocalResponseNorm,
    RMSNorm,
)
from genesis.nn.modules.pooling import (
    AdaptiveAvgPool1d,
    AdaptiveAvgPool2d,
    AdaptiveMaxPool2d,
    AvgPool1d,
    AvgPool2d,
    AvgPool3d,
    MaxPool1d,
    MaxPool2d,
    MaxPool3d,
    PixelShuffle,
    Upsample,
    UpsamplingBilinear2d,
    UpsamplingNearest2d,
)
from genesis.nn.modules.rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell, RNNCellBase
from genesis.nn.modules.sparse import Embedding
from genesis.nn.modules.transformer import (
    Transformer,
    TransformerDecoder,
    TransformerDecoderLayer,
    TransformerEncoder,
    TransformerEncoderLayer,
)

__all__ = [
    "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveMaxPool2d", "AvgPool1d", "AvgPool2d", "AvgPool3d", "Conv1d",
    "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d", "MaxPool1d", "MaxPool2d",
    "MaxPool3d", "PixelShuffle", "Upsample", "UpsamplingBilinear2d", "UpsamplingNearest2d",
    "AlphaDropout", "BCELoss", "BCEWithLogitsLoss", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "Bilinear", "CELU",
    "CosineEmbeddingLoss", "CrossEntropyLoss", "Dropout", "Dropout1d", "Dropout2d", "ELU", "Embedding",
    "FeedForwardSwiGLU", "Flatten", "GELU", "GLU", "GaussianNLLLoss", "GroupNorm", "Hardsigmoid", "Hardswish",
    "Hardtanh", "HuberLoss", "Identity", "InstanceNorm1d", "InstanceNorm2d", "KLDivLoss", "L1Loss", "LayerNorm",
    "LeakyReLU", "Linear", "LocalResponseNorm", "LogSigmoid", "LogSoftmax", "MSELoss", "MarginRankingLoss", "Mish",
    "Module", "ModuleDict", "ModuleList", "MultiheadAttention", "NLLLoss", "PReLU", "ParameterDict",
    "ParameterList", "PoissonNLLLoss", "RMSNorm", "ReLU", "ReLU6", "RotaryEmbedding", "SELU", "Sequential",
    "SiLU", "Sigmoid", "SmoothL1Loss", "SoftMarginLoss", "Softmax", "Softmin", "Softplus", "Softsign", "Tanh",
    "Tanhshrink", "Threshold", "Unflatten",
    "GRU", "GRUCell", "LSTM", "LSTMCell", "RNN", "RNNBase", "RNNCell", "RNNCellBase", "Transformer",
    "TransformerDecoder", "TransformerDecoderLayer", "TransformerEncoder", "TransformerEncoderLayer",
]
