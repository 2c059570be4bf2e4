"""The names of graph nodes, as torch's: ``type(y.grad_fn).__name__`` and ``y.grad_fn.name()``.

torch names the node of a built-in op after the ATen op it records, with an overload number (``MulBackward0``,
``MmBackward0``, ``ConvolutionBackward0``), and the node of a user's ``autograd.Function`` subclass ``<Name>Backward``.
Genesis makes one node class per Function class, once, when the class is defined (so recording an op costs no more
than before). A Genesis op whose class is named as torch's op gets ``<Name>Backward0``; the table below names the
rest after the torch op they stand for. Where one Genesis class serves ops torch tells apart (``sum()`` and
``sum(dim)``: ``SumBackward0`` and ``SumBackward1``; ``x[0]`` and ``x[1:]``: ``SelectBackward0`` and
``SliceBackward0``), a subclass per torch op carries the name (``SumDims``, ``Select``...).
"""

from __future__ import annotations

# Genesis Function class (module.qualname) -> torch's node name, where the class is named otherwise than torch's op.
TORCH_NAMES: dict[str, str] = {
    "genesis.autograd.function.CopySlices": "CopySlices",
    "genesis.autograd.function.ViewOfBase": "AsStridedBackward0",
    "genesis.autograd.function.Overwrite": "FillBackward0",
    "genesis.autograd.function._DelayedError": "DelayedError",
    "genesis.linalg.solvers._CholeskySolve": "CholeskySolveBackward0",
    "genesis.linalg.solvers._Qr": "LinalgQrBackward0",
    "genesis.linalg.spectral._Eigh": "LinalgEighBackward0",
    "genesis.linalg.spectral._Svd": "LinalgSvdBackward0",
    "genesis.nn.functional.sync_batch_norm._SyncBatchNorm": "SyncBatchNormBackward",
    "genesis.nn.modules.backward_hooks._Identity": "BackwardHookFunctionBackward",
    "genesis.nn.utils.checkpoint._Checkpoint": "CheckpointFunctionBackward",
    "genesis.ops.arithmetic.AddScaled": "AddBackward0",  # add with alpha
    "genesis.ops.arithmetic.SubScaled": "SubBackward0",
    "genesis.ops.arithmetic.Clamp": "ClampBackward1",  # number bounds (ClampBackward0 takes tensor bounds)
    "genesis.ops.arithmetic.ClampTensors": "ClampBackward0",
    "genesis.ops.arithmetic.ClampMinTensors": "ClampMinBackward1",
    "genesis.ops.arithmetic.ClampMaxTensors": "ClampMaxBackward1",
    "genesis.ops.arithmetic.Lerp": "LerpBackward1",  # a tensor weight
    "genesis.ops.arithmetic.LerpScalar": "LerpBackward0",
    "genesis.ops.arithmetic.RDiv": "MulBackward0",  # torch computes ``2 / x`` as ``x.reciprocal() * 2``
    "genesis.ops.arithmetic.RPow": "PowBackward2",
    "genesis.ops.arithmetic.RSub": "RsubBackward1",
    "genesis.ops.arithmetic.RoundedDiv": "DivBackward2",
    "genesis.ops.complex.ComplexAbs": "AbsBackward0",
    "genesis.ops.gather_scatter.MaskedFillTensor": "MaskedFillBackward1",
    "genesis.ops.indexing.SetIndexed": "IndexPutBackward0",
    "genesis.ops.indexing.SetMasked": "IndexPutBackward0",
    "genesis.ops.indexing.SetSlice": "CopySlices",
    "genesis.ops.inplace.Copy": "CopyBackwards",
    "genesis.ops.inplace.Fill": "FillBackward2",
    "genesis.ops.inplace.FillTensor": "FillBackward3",
    "genesis.ops.dropout.Dropout": "NativeDropoutBackward0",
    "genesis.ops.floating.FrexpMantissa": "FrexpBackward0",
    "genesis.ops.fused.Attention": "ScaledDotProductFlashAttentionBackward0",
    "genesis.ops.fused.CpuAttention": "ScaledDotProductFlashAttentionForCpuBackward0",
    "genesis.ops.fused.FusedCrossEntropy": "NllLossBackward0",  # as genesis.ops.nn.CrossEntropy, on cuda
    "genesis.ops.fused.LayerNorm": "NativeLayerNormBackward0",
    "genesis.ops.linalg.Matmul": "MmBackward0",  # torch: MmBackward0 for 2-D operands (DotBackward0, BmmBackward0...)
    "genesis.ops.math_special.Entr": "SpecialEntrBackward0",
    "genesis.ops.nn.BatchNorm": "NativeBatchNormBackward0",
    "genesis.ops.nn.CastConv": "ConvolutionBackward0",  # torch: after one cast node per parameter
    "genesis.ops.nn.CastLinear": "AddmmBackward0",  # torch: AddmmBackward0 after one cast node per parameter
    "genesis.ops.nn.Conv": "ConvolutionBackward0",
    "genesis.ops.nn.CrossEntropy": "NllLossBackward0",  # torch: log_softmax then nll_loss, the last node
    "genesis.ops.nn.GroupNorm": "NativeGroupNormBackward0",
    "genesis.ops.nn.Linear": "AddmmBackward0",  # torch: AddmmBackward0 for a 2-D input with bias
    "genesis.ops.nn.NllLoss": "NllLossBackward0",
    "genesis.ops.reduce._NanToZero": "NanToNumBackward0",
    "genesis.ops.sparse.EmbeddingSparseGrad": "EmbeddingBackward0",
    "genesis.ops.unary.Cast": "ToCopyBackward0",
    "genesis.ops.unary.GeluTanh": "GeluBackward0",
    "genesis.ops.unary.Log1p": "Log1PBackward0",
    "genesis.ops.unary.ReluBackward": "ThresholdBackwardBackward0",  # relu's gradient is threshold_backward
    "genesis.ops.views.Reshape": "UnsafeViewBackward0",  # a reshape that copies
    "genesis.ops.views.ToDevice": "ToCopyBackward0",
    "genesis.ops.views.ToMemoryFormat": "CloneBackward0",
    "genesis.ops.views.ViewOf": "AsStridedBackward0",  # Genesis's strided view (as_strided; its subclasses below)
    "genesis.ops.views.IndexUnsqueeze": "UnsqueezeBackward0",
    "genesis.ops.reduce.SumDims": "SumBackward1",
    "genesis.ops.reduce.MeanDims": "MeanBackward1",
    "genesis.ops.reduce.ProdDim": "ProdBackward1",
    "genesis.ops.reduce.MaxAll": "MaxBackward1",
    "genesis.ops.reduce.MinAll": "MinBackward1",
    "genesis.special._LogNdtr": "SpecialLogNdtrBackward0",
    "genesis.special._Ndtri": "SpecialNdtriBackward0",
}


#: Nodes of torch's own autograd (no ATen op's): their ``name()`` carries its C++ namespace.
_QUALIFIED = {name: f"torch::autograd::{name}" for name in ("AccumulateGrad", "CopySlices", "CopyBackwards")}


def qualified_name(name: str) -> str:
    """What ``node.name()`` returns for a node class named ``name`` (the name itself but for :data:`_QUALIFIED`)."""
    return _QUALIFIED.get(name, name)


def node_name(fn: type) -> str:
    """The name of the graph node that records a call of the Function class ``fn``."""
    key = f"{fn.__module__}.{fn.__qualname__}"
    if key in TORCH_NAMES:
        return TORCH_NAMES[key]
    if fn.__module__.split(".")[0] == "genesis":
        return fn.__name__.lstrip("_") + "Backward0"
    return fn.__name__ + "Backward"  # a user's Function, as torch names it
