"""The op registry: every tensor op Genesis offers, declared once.

One row per public name (an alias is a row of its own, pointing at the same function). A row says:

- ``name`` and ``fn``: the function; with ``function=True`` (the default) it is ``genesis.<name>``;
- ``method``: whether it is also ``Tensor.<name>`` (the tensor is the first argument);
- ``inplace``: how ``Tensor.<name>_`` is built: ``BINARY`` (``add_(other, alpha=)``, written straight into memory
  when no graph is recorded), ``KERNEL`` (a unary op whose backend ``kernel`` writes in place) or ``GENERAL`` (any
  op: the result is written back); ``None``: no in-place variant;
- ``kernel``: the backend elementwise op (``unary``/``binary`` of the backend contract) the op runs on, where the
  registry relies on it (in-place kernels; the contract test checks every backend has it);
- ``autocast``: the autocast rule on (cpu, cuda): ``LOWER`` (cast floating inputs to the autocast dtype), ``FP32``,
  ``PROMOTE`` (to the widest input), ``BANNED``, or None.

Everything else is generated from the table: ``genesis.ops.__all__`` (hence the ``genesis`` namespace), the Tensor
methods, in-place methods and operators (:func:`bind`, the one binding step, run once when ``genesis.ops`` is
imported), and the autocast policy (:func:`autocast_policy`). Adding an op is one row here beside its
implementation.
"""

from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass
from typing import Any, Callable

from genesis import autograd
from genesis import linalg as LA
from genesis import random as R
from genesis import tensor as _tensor_module
from genesis.linalg import legacy, lowrank
from genesis.ops import (
    arithmetic,
    autocast,
    compare,
    complex,
    conversion,
    creation,
    floating,
    foreach,
    foreach_elementwise,
    gather_scatter,
    indexing,
    inplace,
    join,
    linalg,
    math_special,
    matrices,
    methods,
    quantization,
    reduce,
    scans,
    shape,
    sorting,
    sparse,
    sparse_csr,
    spectral,
    statistics,
    storage,
    unary,
    views,
    windows,
)
from genesis.ops.autocast import BANNED, FP16, FP32, LOWER, PROMOTE
from genesis.tensor import Tensor

BINARY, KERNEL, GENERAL = "binary", "kernel", "general"


@dataclass(frozen=True)
class Op:
    """One public name of a tensor op (see the module docstring for the fields)."""

    name: str
    fn: Callable
    function: bool = True
    method: bool = False
    inplace: str | None = None
    kernel: str | None = None
    autocast: tuple[str | None, str | None] | None = None


OPS: tuple[Op, ...] = (
    # ---------------------------------------------------------------- ops of genesis.ops
    Op("add", arithmetic.add, method=True, inplace=BINARY),
    Op("sub", arithmetic.sub, method=True, inplace=BINARY),
    Op("rsub", arithmetic.rsub),
    Op("mul", arithmetic.mul, method=True, inplace=BINARY),
    Op("div", arithmetic.div, method=True, inplace=BINARY),
    Op("true_divide", arithmetic.true_divide, method=True, inplace=BINARY),
    Op("floor_divide", arithmetic.floor_divide, method=True, inplace=BINARY),
    Op("remainder", arithmetic.remainder, method=True, inplace=BINARY),
    Op("fmod", arithmetic.fmod, method=True, inplace=GENERAL),
    Op("pow", arithmetic.pow, method=True, inplace=BINARY, autocast=(None, FP32)),
    Op("neg", unary.neg, method=True, inplace=KERNEL, kernel="neg"),
    Op("abs", unary.abs, method=True, inplace=KERNEL, kernel="abs"),
    Op("reciprocal", unary.reciprocal, method=True, inplace=KERNEL, kernel="reciprocal", autocast=(None, FP32)),
    Op("maximum", arithmetic.maximum, method=True, inplace=BINARY),
    Op("minimum", arithmetic.minimum, method=True, inplace=BINARY),
    Op("atan2", arithmetic.atan2, method=True, inplace=GENERAL, autocast=(PROMOTE, PROMOTE)),
    Op("exp", unary.exp, method=True, inplace=KERNEL, kernel="exp", autocast=(None, FP32)),
    Op("exp2", unary.exp2, method=True, inplace=KERNEL, kernel="exp2"),
    Op("expm1", unary.expm1, method=True, inplace=KERNEL, kernel="expm1", autocast=(None, FP32)),
    Op("log", unary.log, method=True, inplace=KERNEL, kernel="log", autocast=(None, FP32)),
    Op("log2", unary.log2, method=True, inplace=KERNEL, kernel="log2", autocast=(None, FP32)),
    Op("log10", unary.log10, method=True, inplace=GENERAL, autocast=(None, FP32)),
    Op("log1p", unary.log1p, method=True, inplace=KERNEL, kernel="log1p", autocast=(None, FP32)),
    Op("sqrt", unary.sqrt, method=True, inplace=KERNEL, kernel="sqrt"),
    Op("rsqrt", unary.rsqrt, method=True, inplace=KERNEL, kernel="rsqrt", autocast=(None, FP32)),
    Op("square", unary.square, method=True, inplace=GENERAL),
    Op("sin", unary.sin, method=True, inplace=KERNEL, kernel="sin"),
    Op("cos", unary.cos, method=True, inplace=KERNEL, kernel="cos"),
    Op("tan", unary.tan, method=True, inplace=KERNEL, kernel="tan", autocast=(None, FP32)),
    Op("tanh", unary.tanh, method=True, inplace=KERNEL, kernel="tanh"),
    Op("sigmoid", unary.sigmoid, method=True, inplace=KERNEL, kernel="sigmoid"),
    Op("relu", unary.relu, method=True, inplace=KERNEL, kernel="relu"),
    Op("gelu", unary.gelu),
    Op("silu", unary.silu),
    Op("softplus", unary.softplus, autocast=(None, FP32)),
    Op("erf", unary.erf, method=True, inplace=KERNEL, kernel="erf"),
    Op("sign", unary.sign, method=True, inplace=KERNEL, kernel="sign"),
    Op("floor", unary.floor, method=True, inplace=KERNEL, kernel="floor"),
    Op("ceil", unary.ceil, method=True, inplace=KERNEL, kernel="ceil"),
    Op("round", unary.round, method=True, inplace=KERNEL, kernel="round"),
    Op("trunc", unary.trunc, method=True, inplace=KERNEL, kernel="trunc"),
    Op("clamp", arithmetic.clamp, method=True, inplace=GENERAL),
    Op("lerp", arithmetic.lerp, method=True, inplace=GENERAL),
    Op("where", compare.where),
    Op("isnan", compare.isnan, method=True),
    Op("isinf", compare.isinf, method=True),
    Op("isfinite", compare.isfinite, method=True),
    Op("nan_to_num", unary.nan_to_num, method=True, inplace=GENERAL),
    Op("eq", compare.eq, method=True, inplace=GENERAL),
    Op("ne", compare.ne, method=True, inplace=GENERAL),
    Op("lt", compare.lt, method=True, inplace=GENERAL),
    Op("le", compare.le, method=True, inplace=GENERAL),
    Op("gt", compare.gt, method=True, inplace=GENERAL),
    Op("ge", compare.ge, method=True, inplace=GENERAL),
    Op("logical_and", compare.logical_and, method=True, inplace=BINARY),
    Op("logical_or", compare.logical_or, method=True, inplace=BINARY),
    Op("logical_xor", compare.logical_xor, method=True, inplace=GENERAL),
    Op("logical_not", compare.logical_not, method=True, inplace=GENERAL),
    Op("bitwise_and", compare.bitwise_and, method=True, inplace=BINARY),
    Op("bitwise_or", compare.bitwise_or, method=True, inplace=BINARY),
    Op("bitwise_xor", compare.bitwise_xor, method=True, inplace=BINARY),
    Op("bitwise_left_shift", compare.bitwise_left_shift, method=True, inplace=GENERAL),
    Op("bitwise_right_shift", compare.bitwise_right_shift, method=True, inplace=GENERAL),
    Op("bitwise_not", compare.bitwise_not, method=True, inplace=GENERAL),
    Op("equal", compare.equal, method=True),
    Op("isclose", compare.isclose, method=True),
    Op("allclose", compare.allclose, method=True),
    Op("sum", reduce.sum, method=True, autocast=(None, FP32)),
    Op("mean", reduce.mean, method=True),
    Op("prod", reduce.prod, method=True, autocast=(FP32, FP32)),
    Op("amax", reduce.amax, method=True),
    Op("amin", reduce.amin, method=True),
    Op("max", reduce.max, method=True),
    Op("min", reduce.min, method=True),
    Op("argmax", reduce.argmax, method=True),
    Op("argmin", reduce.argmin, method=True),
    Op("var", reduce.var, method=True),
    Op("std", reduce.std, method=True),
    Op("var_mean", reduce.var_mean),
    Op("norm", reduce.norm, method=True, autocast=(None, FP32)),
    Op("logsumexp", reduce.logsumexp, method=True, autocast=(None, FP32)),
    Op("softmax", reduce.softmax, method=True, autocast=(None, FP32)),
    Op("log_softmax", reduce.log_softmax, method=True, autocast=(None, FP32)),
    Op("cumsum", scans.cumsum, method=True, inplace=GENERAL, autocast=(None, FP32)),
    Op("cumprod", scans.cumprod, method=True, inplace=GENERAL, autocast=(None, FP32)),
    Op("all", reduce.all, method=True),
    Op("any", reduce.any, method=True),
    Op("count_nonzero", reduce.count_nonzero, method=True),
    Op("reshape", views.reshape, method=True),
    Op("view", views.view, method=True),
    Op("flatten", views.flatten, method=True),
    Op("unflatten", views.unflatten, method=True),
    Op("squeeze", views.squeeze, method=True),
    Op("unsqueeze", views.unsqueeze, method=True),
    Op("permute", views.permute, method=True),
    Op("transpose", views.transpose, method=True),
    Op("movedim", views.movedim, method=True),
    Op("moveaxis", views.moveaxis, method=True),
    Op("swapaxes", views.swapaxes, method=True),
    Op("swapdims", views.swapdims, method=True),
    Op("ravel", views.ravel, method=True),
    Op("t", views.t, method=True),
    Op("expand", views.expand, method=True),
    Op("broadcast_to", views.broadcast_to, method=True),
    Op("broadcast_tensors", views.broadcast_tensors),
    Op("narrow", views.narrow, method=True),
    Op("select", views.select, method=True),
    Op("as_strided", views.as_strided, method=True),
    Op("diagonal", views.diagonal, method=True),
    Op("unfold", views.unfold, method=True),
    Op("contiguous", views.contiguous, method=True),
    Op("clone", views.clone, method=True),
    Op("cat", join.cat, autocast=(PROMOTE, PROMOTE)),
    Op("stack", join.stack, autocast=(PROMOTE, PROMOTE)),
    Op("hstack", join.hstack),
    Op("vstack", join.vstack),
    Op("split", join.split),
    Op("chunk", join.chunk, method=True),
    Op("tensor_split", join.tensor_split, method=True),
    Op("unbind", join.unbind, method=True),
    Op("repeat", shape.repeat, method=True),
    Op("tile", shape.tile, method=True),
    Op("repeat_interleave", shape.repeat_interleave, method=True),
    Op("flip", shape.flip, method=True),
    Op("fliplr", shape.fliplr, method=True),
    Op("flipud", shape.flipud, method=True),
    Op("roll", shape.roll, method=True),
    Op("triu", matrices.triu, method=True, inplace=GENERAL),
    Op("tril", matrices.tril, method=True, inplace=GENERAL),
    Op("diag", matrices.diag, method=True),
    Op("diagonal_copy", matrices.diagonal_copy),
    Op("trace", matrices.trace, method=True, autocast=(FP32, None)),
    Op("gather", gather_scatter.gather, method=True),
    Op("take_along_dim", gather_scatter.take_along_dim, method=True),
    Op("take", gather_scatter.take, method=True),
    Op("scatter", gather_scatter.scatter, method=True, inplace=GENERAL),
    Op("scatter_add", gather_scatter.scatter_add, method=True, inplace=GENERAL, autocast=(PROMOTE, PROMOTE)),
    Op("index_select", gather_scatter.index_select, method=True),
    Op("index_add", gather_scatter.index_add, method=True, inplace=GENERAL),
    Op("index_copy", gather_scatter.index_copy, method=True, inplace=GENERAL),
    Op("index_put", indexing.index_put, method=True, inplace=GENERAL, autocast=(PROMOTE, PROMOTE)),
    Op("index_fill", gather_scatter.index_fill, method=True, inplace=GENERAL),
    Op("masked_fill", gather_scatter.masked_fill, method=True, inplace=GENERAL),
    Op("masked_select", gather_scatter.masked_select, method=True),
    Op("masked_scatter", gather_scatter.masked_scatter, method=True, inplace=GENERAL),
    Op("nonzero", compare.nonzero, method=True),
    Op("argwhere", compare.argwhere, method=True),
    Op("sort", sorting.sort, method=True),
    Op("argsort", sorting.argsort, method=True),
    Op("topk", sorting.topk, method=True),
    Op("kthvalue", sorting.kthvalue, method=True),
    Op("median", sorting.median, method=True),
    Op("unique", sorting.unique, method=True),
    Op("searchsorted", sorting.searchsorted),
    Op("bucketize", sorting.bucketize),
    Op("one_hot", indexing.one_hot),
    Op("matmul", linalg.matmul, method=True, autocast=(LOWER, LOWER)),
    Op("mm", linalg.mm, method=True, autocast=(LOWER, LOWER)),
    Op("bmm", linalg.bmm, method=True, autocast=(LOWER, LOWER)),
    Op("mv", linalg.mv, method=True, autocast=(None, LOWER)),
    Op("dot", linalg.dot, method=True, autocast=(PROMOTE, PROMOTE)),
    Op("outer", linalg.outer, method=True),
    Op("addmm", linalg.addmm, method=True, inplace=GENERAL, autocast=(LOWER, LOWER)),
    Op("baddbmm", linalg.baddbmm, method=True, inplace=GENERAL, autocast=(LOWER, LOWER)),
    Op("einsum", linalg.einsum),
    Op("negative", unary.negative, method=True, inplace=KERNEL, kernel="neg"),
    Op("clip", arithmetic.clip, method=True, inplace=GENERAL),
    Op("clamp_min", arithmetic.clamp_min, method=True, inplace=GENERAL),
    Op("clamp_max", arithmetic.clamp_max, method=True, inplace=GENERAL),
    Op("concat", join.concat),
    Op("concatenate", join.concatenate),
    Op("inner", linalg.inner, method=True),
    Op("ger", linalg.ger, method=True),
    Op("asin", math_special.asin, method=True, inplace=KERNEL, kernel="asin", autocast=(None, FP32)),
    Op("acos", math_special.acos, method=True, inplace=KERNEL, kernel="acos", autocast=(None, FP32)),
    Op("atan", math_special.atan, method=True, inplace=KERNEL, kernel="atan"),
    Op("sinh", math_special.sinh, method=True, inplace=KERNEL, kernel="sinh", autocast=(None, FP32)),
    Op("cosh", math_special.cosh, method=True, inplace=KERNEL, kernel="cosh", autocast=(None, FP32)),
    Op("asinh", math_special.asinh, method=True, inplace=KERNEL, kernel="asinh"),
    Op("acosh", math_special.acosh, method=True, inplace=KERNEL, kernel="acosh"),
    Op("atanh", math_special.atanh, method=True, inplace=KERNEL, kernel="atanh"),
    Op("arcsin", math_special.arcsin, method=True, inplace=KERNEL, kernel="asin"),
    Op("arccos", math_special.arccos, method=True, inplace=KERNEL, kernel="acos"),
    Op("arctan", math_special.arctan, method=True, inplace=KERNEL, kernel="atan"),
    Op("arcsinh", math_special.arcsinh, method=True, inplace=KERNEL, kernel="asinh"),
    Op("arccosh", math_special.arccosh, method=True, inplace=KERNEL, kernel="acosh"),
    Op("arctanh", math_special.arctanh, method=True, inplace=KERNEL, kernel="atanh"),
    Op("arctan2", arithmetic.arctan2, method=True, inplace=GENERAL),
    Op("erfc", math_special.erfc, method=True, inplace=KERNEL, kernel="erfc"),
    Op("erfinv", math_special.erfinv, method=True, inplace=KERNEL, kernel="erfinv", autocast=(None, FP32)),
    Op("lgamma", math_special.lgamma, method=True, inplace=KERNEL, kernel="lgamma"),
    Op("mvlgamma", math_special.mvlgamma, method=True, inplace=GENERAL),
    Op("digamma", math_special.digamma, method=True, inplace=KERNEL, kernel="digamma"),
    Op("i0", math_special.i0, method=True, inplace=KERNEL, kernel="i0"),
    Op("sinc", math_special.sinc, method=True, inplace=GENERAL),
    Op("logit", math_special.logit, method=True, inplace=GENERAL),
    Op("xlogy", math_special.xlogy, method=True, inplace=GENERAL),
    Op("hypot", math_special.hypot, method=True, inplace=GENERAL),
    Op("copysign", math_special.copysign, method=True, inplace=GENERAL),
    Op("fmax", math_special.fmax, method=True),
    Op("fmin", math_special.fmin, method=True),
    Op("float_power", arithmetic.float_power, method=True),
    Op("logaddexp", math_special.logaddexp, method=True),
    Op("logaddexp2", math_special.logaddexp2, method=True),
    Op("heaviside", math_special.heaviside, method=True, inplace=GENERAL),
    Op("ldexp", math_special.ldexp, method=True, inplace=GENERAL),
    Op("gcd", math_special.gcd, method=True, inplace=GENERAL),
    Op("lcm", math_special.lcm, method=True, inplace=GENERAL),
    Op("signbit", unary.signbit, method=True),
    Op("frac", unary.frac, method=True, inplace=GENERAL),
    Op("fix", unary.fix, method=True, inplace=GENERAL),
    Op("sgn", unary.sgn, method=True, inplace=GENERAL),
    Op("positive", unary.positive, method=True),
    Op("deg2rad", unary.deg2rad, method=True, inplace=GENERAL),
    Op("rad2deg", unary.rad2deg, method=True, inplace=GENERAL),
    Op("greater", compare.greater, method=True, inplace=GENERAL),
    Op("greater_equal", compare.greater_equal, method=True, inplace=GENERAL),
    Op("less", compare.less, method=True, inplace=GENERAL),
    Op("less_equal", compare.less_equal, method=True, inplace=GENERAL),
    Op("not_equal", compare.not_equal, method=True, inplace=GENERAL),
    Op("angle", complex.angle, method=True),
    Op("isposinf", compare.isposinf, method=True),
    Op("isneginf", compare.isneginf, method=True),
    Op("isreal", complex.isreal, method=True),
    Op("real", complex.real),
    Op("imag", complex.imag),
    Op("conj", complex.conj, method=True),
    Op("conj_physical", complex.conj_physical, method=True),
    Op("resolve_conj", complex.resolve_conj, method=True),
    Op("view_as_real", complex.view_as_real),
    Op("view_as_complex", complex.view_as_complex),
    Op("complex", complex.complex),
    Op("polar", complex.polar),
    Op("is_complex", complex.is_complex),
    Op("adjoint", complex.adjoint, method=True),
    Op("resolve_neg", complex.resolve_neg, method=True),
    Op("std_mean", reduce.std_mean),
    Op("nansum", reduce.nansum, method=True),
    Op("nanmean", reduce.nanmean, method=True),
    Op("aminmax", reduce.aminmax, method=True),
    Op("cummax", scans.cummax, method=True),
    Op("cummin", scans.cummin, method=True),
    Op("logcumsumexp", scans.logcumsumexp, method=True),
    Op("nanmedian", statistics.nanmedian, method=True),
    Op("mode", statistics.mode, method=True),
    Op("quantile", statistics.quantile, method=True),
    Op("nanquantile", statistics.nanquantile, method=True),
    Op("bincount", statistics.bincount, method=True),
    Op("histc", statistics.histc, method=True),
    Op("cov", statistics.cov, method=True),
    Op("corrcoef", statistics.corrcoef, method=True),
    Op("diff", scans.diff, method=True),
    Op("gradient", scans.gradient),
    Op("cross", linalg.cross, method=True, autocast=(PROMOTE, PROMOTE)),
    Op("vdot", linalg.vdot, method=True),
    Op("kron", linalg.kron, method=True),
    Op("cdist", linalg.cdist, autocast=(FP32, FP32)),
    Op("dist", linalg.dist, method=True, autocast=(None, FP32)),
    Op("addcmul", arithmetic.addcmul, method=True, autocast=(PROMOTE, PROMOTE)),
    Op("addcdiv", arithmetic.addcdiv, method=True, autocast=(PROMOTE, PROMOTE)),
    Op("addmv", linalg.addmv, method=True, inplace=GENERAL, autocast=(None, LOWER)),
    Op("addr", linalg.addr, method=True, inplace=GENERAL, autocast=(None, LOWER)),
    Op("addbmm", linalg.addbmm, method=True, inplace=GENERAL, autocast=(LOWER, LOWER)),
    Op("renorm", linalg.renorm, method=True, inplace=GENERAL, autocast=(None, FP32)),
    Op("meshgrid", shape.meshgrid),
    Op("atleast_1d", join.atleast_1d),
    Op("atleast_2d", join.atleast_2d),
    Op("atleast_3d", join.atleast_3d),
    Op("dstack", join.dstack),
    Op("column_stack", join.column_stack),
    Op("row_stack", join.row_stack),
    Op("hsplit", join.hsplit, method=True),
    Op("vsplit", join.vsplit, method=True),
    Op("dsplit", join.dsplit, method=True),
    Op("split_with_sizes", join.split_with_sizes, method=True),
    Op("rot90", shape.rot90, method=True),
    Op("block_diag", matrices.block_diag),
    Op("cartesian_prod", shape.cartesian_prod),
    Op("combinations", shape.combinations),
    Op("triu_indices", matrices.triu_indices),
    Op("tril_indices", matrices.tril_indices),
    Op("vander", matrices.vander),
    Op("diag_embed", matrices.diag_embed, method=True),
    Op("diagflat", matrices.diagflat, method=True),
    Op("select_scatter", gather_scatter.select_scatter, method=True),
    Op("slice_scatter", gather_scatter.slice_scatter, method=True),
    Op("diagonal_scatter", gather_scatter.diagonal_scatter, method=True),
    Op("scatter_reduce", gather_scatter.scatter_reduce, method=True, inplace=GENERAL),
    Op("index_reduce", gather_scatter.index_reduce, method=True, inplace=GENERAL),
    Op("unique_consecutive", sorting.unique_consecutive, method=True),
    Op("msort", sorting.msort, method=True),
    Op("is_same_size", compare.is_same_size, method=True),
    Op("is_nonzero", compare.is_nonzero, method=True),
    Op("is_signed", compare.is_signed, method=True),
    Op("can_cast", compare.can_cast),
    Op("tensordot", linalg.tensordot),
    Op("trapezoid", scans.trapezoid),
    Op("trapz", scans.trapz),
    Op("cumulative_trapezoid", scans.cumulative_trapezoid),
    Op("unravel_index", indexing.unravel_index),
    Op("isin", sorting.isin),
    Op("histogram", statistics.histogram, method=True),
    Op("histogramdd", statistics.histogramdd),
    Op("broadcast_shapes", shape.broadcast_shapes),
    Op("subtract", arithmetic.sub, method=True, inplace=BINARY),
    Op("multiply", arithmetic.mul, method=True, inplace=BINARY),
    Op("divide", arithmetic.div, method=True, inplace=BINARY),
    Op("absolute", unary.abs, method=True, inplace=KERNEL, kernel="abs"),
    Op("polygamma", math_special.polygamma),
    Op("frexp", floating.frexp, method=True),
    Op("nextafter", floating.nextafter, method=True, inplace=GENERAL),
    Op("narrow_copy", views.narrow_copy, method=True),
    Op("fake_quantize_per_tensor_affine", quantization.fake_quantize_per_tensor_affine),
    Op("fake_quantize_per_channel_affine", quantization.fake_quantize_per_channel_affine),
    Op("put", gather_scatter.put, method=True, inplace=GENERAL),
    Op("stft", spectral.stft, method=True, autocast=(FP32, FP32)),
    Op("istft", spectral.istft, method=True, autocast=(FP32, FP32)),
    # ---------------------------------------------------------------- creation (genesis.tensor)
    Op("tensor", _tensor_module.tensor),
    Op("as_tensor", _tensor_module.as_tensor),
    Op("from_numpy", _tensor_module.from_numpy),
    Op("from_dlpack", _tensor_module.from_dlpack),
    Op("scalar_tensor", creation.scalar_tensor),
    Op("zeros", _tensor_module.zeros),
    Op("ones", _tensor_module.ones),
    Op("full", _tensor_module.full),
    Op("empty", _tensor_module.empty),
    Op("zeros_like", _tensor_module.zeros_like),
    Op("ones_like", _tensor_module.ones_like),
    Op("full_like", _tensor_module.full_like),
    Op("empty_like", _tensor_module.empty_like),
    Op("arange", _tensor_module.arange),
    Op("linspace", creation.linspace),
    Op("logspace", creation.logspace),
    Op("eye", creation.eye),
    Op("empty_strided", creation.empty_strided),
    Op("asarray", creation.asarray),
    Op("frombuffer", creation.frombuffer),
    Op("range", creation.range),
    Op("hann_window", windows.hann_window),
    Op("hamming_window", windows.hamming_window),
    Op("blackman_window", windows.blackman_window),
    Op("bartlett_window", windows.bartlett_window),
    Op("kaiser_window", windows.kaiser_window),
    # ---------------------------------------------------------------- random numbers (genesis.random)
    Op("rand", R.rand),
    Op("rand_like", R.rand_like),
    Op("randn", R.randn),
    Op("randn_like", R.randn_like),
    Op("randint", R.randint),
    Op("randint_like", R.randint_like),
    Op("randperm", R.randperm),
    Op("normal", R.normal),
    Op("bernoulli", R.bernoulli, method=True),
    Op("multinomial", R.multinomial, method=True),
    Op("uniform_", R.uniform_, function=False, method=True),
    Op("normal_", R.normal_, function=False, method=True),
    Op("bernoulli_", R.bernoulli_, function=False, method=True),
    Op("random_", R.random_, function=False, method=True),
    Op("exponential_", R.exponential_, function=False, method=True),
    Op("cauchy_", R.cauchy_, function=False, method=True),
    Op("log_normal_", R.log_normal_, function=False, method=True),
    Op("geometric_", R.geometric_, function=False, method=True),
    # ---------------------------------------------------------------- multi-tensor ops (one launch per group)
    Op("_foreach_norm", foreach._foreach_norm),
    Op("_foreach_mul_", foreach._foreach_mul_),
    Op("_foreach_add_", foreach._foreach_add_),
    Op("_foreach_zero_", foreach._foreach_zero_),
    Op("_foreach_sub_", foreach._foreach_sub_),
    Op("_foreach_div_", foreach._foreach_div_),
    Op("_foreach_lerp_", foreach._foreach_lerp_),
    Op("_foreach_addcmul_", foreach._foreach_addcmul_),
    Op("_foreach_addcdiv_", foreach._foreach_addcdiv_),
    Op("_foreach_copy_", foreach._foreach_copy_),
    Op("_foreach_sqrt_", foreach._foreach_sqrt_),
    Op("_foreach_add", foreach._foreach_add),
    Op("_foreach_sub", foreach._foreach_sub),
    Op("_foreach_mul", foreach._foreach_mul),
    Op("_foreach_div", foreach._foreach_div),
    Op("_foreach_lerp", foreach._foreach_lerp),
    Op("_foreach_sqrt", foreach._foreach_sqrt),
    Op("_foreach_neg", foreach._foreach_neg),
    *(Op(name, fn) for name, fn in foreach_elementwise.FUNCTIONS.items()),  # one op per tensor each
    # ---------------------------------------------------------------- linear algebra (genesis.linalg)
    Op("det", LA.det, method=True),
    Op("logdet", LA.logdet, method=True),
    Op("slogdet", LA.slogdet, method=True),
    Op("matrix_power", LA.matrix_power, method=True),
    Op("matrix_exp", LA.matrix_exp, method=True),
    Op("inverse", LA.inv, method=True),
    Op("pinverse", LA.spectral.pinverse, method=True),
    Op("cholesky_solve", LA.solvers.cholesky_solve, method=True),
    Op("cholesky_inverse", LA.solvers.cholesky_inverse, method=True),
    Op("cholesky", legacy.cholesky, method=True),
    Op("svd", legacy.svd, method=True),
    Op("qr", legacy.qr, method=True),
    Op("geqrf", LA.solvers.geqrf, method=True),
    Op("triangular_solve", legacy.triangular_solve, method=True),
    Op("lu", legacy.lu, method=True),
    Op("lu_solve", legacy.lu_solve, method=True),
    Op("lu_unpack", legacy.lu_unpack),
    Op("chain_matmul", legacy.chain_matmul),
    Op("eig", legacy.eig, method=True),
    Op("svd_lowrank", lowrank.svd_lowrank),
    Op("pca_lowrank", lowrank.pca_lowrank),
    # ---------------------------------------------------------------- methods only
    Op("to", conversion.to, function=False, method=True),
    Op("pin_memory", conversion.pin_memory, function=False, method=True),
    Op("is_pinned", conversion.is_pinned, function=False, method=True),
    Op("where", methods.where, function=False, method=True),
    Op("split", methods.split, function=False, method=True),
    Op("expand_as", methods.expand_as, function=False, method=True),
    Op("view_as", methods.view_as, function=False, method=True),
    Op("_make_subclass", methods._make_subclass, function=False, method=True),
    Op("reshape_as", methods.reshape_as, function=False, method=True),
    Op("sum_to_size", methods.sum_to_size, function=False, method=True),
    Op("is_conj", methods.is_conj, method=True),
    Op("is_neg", methods.is_conj, method=True),
    Op("type", methods.legacy_type, function=False, method=True),
    Op("new", methods.new, function=False, method=True),
    Op("resize_", methods.resize_, function=False, method=True),
    Op("resize_as_", methods.resize_as_, function=False, method=True),
    Op("new_tensor", creation.new_tensor, function=False, method=True),
    Op("new_zeros", creation.new_zeros, function=False, method=True),
    Op("new_ones", creation.new_ones, function=False, method=True),
    Op("new_full", creation.new_full, function=False, method=True),
    Op("new_empty", creation.new_empty, function=False, method=True),
    Op("new_empty_strided", creation.new_empty_strided, function=False, method=True),
    Op("cfloat", methods.cfloat, function=False, method=True),
    Op("cdouble", methods.cdouble, function=False, method=True),
    Op("polygamma", methods.polygamma, function=False, method=True, inplace=GENERAL),
    Op("is_inference", methods.is_inference, method=True),
    Op("share_memory_", conversion.share_memory_, function=False, method=True),
    Op("is_shared", conversion.is_shared, function=False, method=True),
    Op("fill_diagonal_", matrices.fill_diagonal_, function=False, method=True),
    Op("fill_", inplace.fill_, function=False, method=True),
    Op("_fill_from", inplace.fill_from, function=False, method=True),
    Op("zero_", inplace.zero_, function=False, method=True),
    Op("copy_", inplace.copy_, function=False, method=True),
    Op("squeeze_", inplace.squeeze_, function=False, method=True),
    Op("unsqueeze_", inplace.unsqueeze_, function=False, method=True),
    Op("transpose_", inplace.transpose_, function=False, method=True),
    Op("swapaxes_", inplace.transpose_, function=False, method=True),
    Op("swapdims_", inplace.transpose_, function=False, method=True),
    Op("t_", inplace.t_, function=False, method=True),
    Op("addcmul_", inplace.addcmul_, function=False, method=True),
    Op("addcdiv_", inplace.addcdiv_, function=False, method=True),
    Op("float_power_", inplace.float_power_, function=False, method=True),
    Op("conj_physical_", complex.conj_physical_, function=False, method=True),
    # ---------------------------------------------------------------- sparse COO and CSR tensors (CPU)
    Op("sparse_coo_tensor", sparse.sparse_coo_tensor),
    Op("sparse_csr_tensor", sparse_csr.sparse_csr_tensor),
    Op("spmm", sparse.spmm),
    Op("to_sparse", sparse_csr.to_sparse, function=False, method=True),
    Op("to_sparse_csr", sparse_csr.to_sparse_csr, function=False, method=True),
    Op("to_dense", sparse.to_dense, function=False, method=True),
    Op("_index_nd", indexing.index_tensor, function=False, method=True),  # x[indices] for NDArray indices (autograd)
    Op("dense_dim", sparse.dense_dim, function=False, method=True),
    Op("sparse_dim", sparse.sparse_dim, function=False, method=True),
    Op("to_sparse_coo", sparse.to_sparse_coo, function=False, method=True),
    *(Op(name, fn, function=False, method=True) for name, fn in sparse.SPARSE_ONLY.items()),
    # ---------------------------------------------------------------- torch's other spellings and legacy forms
    Op("unsafe_chunk", join.chunk, method=True),
    Op("unsafe_split", join.split),
    Op("unsafe_split", methods.split, function=False, method=True),
    Op("unsafe_split_with_sizes", join.split_with_sizes, method=True),
    Op("nonzero_static", compare.nonzero_static, method=True),
    Op("as_strided_", inplace.as_strided_, method=True),
    Op("as_strided_scatter", gather_scatter.as_strided_scatter, method=True),
    Op("fill", inplace.fill),
    Op("detach", methods.detach),
    Op("prelu", unary.prelu, function=False, method=True),
    Op("hardshrink", unary.hardshrink, function=False, method=True),
    Op("frobenius_norm", legacy.frobenius_norm),
    Op("nuclear_norm", legacy.nuclear_norm),
    Op("empty_permuted", creation.empty_permuted),
    Op("resize", methods.resize, function=False, method=True),
    Op("resize_as", methods.resize_as, function=False, method=True),
    Op("apply_", methods.apply_, function=False, method=True),
    Op("map_", methods.map_, function=False, method=True),
    Op("map2_", methods.map2_, function=False, method=True),
    # ---------------------------------------------------------------- the memory behind tensors
    Op("untyped_storage", storage.untyped_storage, function=False, method=True),
    Op("storage", storage.storage, function=False, method=True),
    Op("is_set_to", storage.is_set_to, function=False, method=True),
    Op("record_stream", storage.record_stream, function=False, method=True),
)

#: Python operators: dunder -> the op it calls; reflected ones swap the operands.
OPERATORS: dict[str, Callable | str] = {
    "__add__": arithmetic.add, "__radd__": arithmetic.add, "__sub__": arithmetic.sub,
    "__rsub__": methods.reflected(arithmetic.sub), "__mul__": arithmetic.mul, "__rmul__": arithmetic.mul,
    "__truediv__": arithmetic.div, "__rtruediv__": methods.reflected_div,
    "__floordiv__": arithmetic.floor_divide, "__rfloordiv__": methods.reflected(arithmetic.floor_divide),
    "__mod__": arithmetic.remainder, "__rmod__": methods.reflected(arithmetic.remainder), "__pow__": arithmetic.pow,
    "__rpow__": methods.reflected(arithmetic.pow), "__matmul__": linalg.matmul,
    "__rmatmul__": methods.reflected(linalg.matmul), "__neg__": unary.neg, "__pos__": unary.positive,
    "__abs__": unary.abs, "__invert__": methods.invert, "__and__": compare.bitwise_and,
    "__rand__": compare.bitwise_and, "__or__": compare.bitwise_or, "__ror__": compare.bitwise_or,
    "__xor__": compare.bitwise_xor, "__rxor__": compare.bitwise_xor, "__eq__": methods.equality(compare.eq),
    "__ne__": methods.equality(compare.ne),
    "__lt__": compare.lt, "__le__": compare.le, "__gt__": compare.gt, "__ge__": compare.ge,
    "__lshift__": compare.bitwise_left_shift, "__rlshift__": methods.reflected(compare.bitwise_left_shift),
    "__rshift__": compare.bitwise_right_shift, "__rrshift__": methods.reflected(compare.bitwise_right_shift),
    "__getitem__": indexing.getitem, "__contains__": methods.contains, "__setitem__": indexing.setitem,
    "__complex__": methods.python_complex,
    # in place: the in-place method of the op
    "__iadd__": "add_", "__isub__": "sub_", "__imul__": "mul_", "__itruediv__": "div_", "__ipow__": "pow_",
    "__imod__": "remainder_", "__ifloordiv__": "floor_divide_", "__iand__": "bitwise_and_", "__ior__": "bitwise_or_",
    "__ixor__": "bitwise_xor_", "__ilshift__": "bitwise_left_shift_", "__irshift__": "bitwise_right_shift_",
}

#: Read-only Tensor properties computed by ops.
PROPERTIES: dict[str, Callable] = {
    "T": methods.reversed_dims, "mT": methods.matrix_transpose, "H": methods.conj_reversed_dims,
    "mH": complex.adjoint, "real": complex.real, "imag": complex.imag, "layout": sparse.layout_of,
    "is_sparse": sparse.is_sparse, "is_sparse_csr": sparse.is_sparse_csr, "output_nr": methods.output_nr,
    **dict.fromkeys(("is_mps", "is_xpu", "is_ipu", "is_maia", "is_mtia", "is_vulkan", "is_mkldnn", "is_quantized",
                     "is_nested"), methods.never),
}

#: Autocast rules of the ``genesis.nn.functional`` ops (defined in the nn layer above; named here so the whole
#: policy reads in one place).
NN_AUTOCAST: dict[str, tuple[str | None, str | None]] = {
    # torch's CPU policy runs these in float32 (its CUDA policy leaves them in the input's dtype)
    "adaptive_avg_pool3d": (FP32, None),
    "avg_pool3d": (FP32, None),
    "grid_sample": (FP32, None),
    "max_pool3d": (FP32, None),
    "max_unpool2d": (FP32, None),
    "max_unpool3d": (FP32, None),
    "bilinear": (PROMOTE, PROMOTE),
    # As torch: probabilities that came out of a float16 sigmoid are unsafe to feed to this loss on CUDA.
    "binary_cross_entropy": (FP32, BANNED),
    "binary_cross_entropy_with_logits": (FP32, FP32),
    "conv1d": (LOWER, LOWER),
    "conv2d": (LOWER, LOWER),
    "conv3d": (LOWER, LOWER),
    "conv_transpose1d": (LOWER, LOWER),
    "conv_transpose2d": (LOWER, LOWER),
    "conv_transpose3d": (LOWER, LOWER),
    "cosine_embedding_loss": (FP32, FP32),
    "cosine_similarity": (None, FP32),
    "cross_entropy": (FP32, FP32),
    "gaussian_nll_loss": (FP32, FP32),
    "group_norm": (None, FP32),
    "hinge_embedding_loss": (FP32, FP32),
    "huber_loss": (FP32, FP32),
    "kl_div": (FP32, FP32),
    "l1_loss": (FP32, FP32),
    "layer_norm": (None, FP32),
    "linear": (LOWER, LOWER),
    "margin_ranking_loss": (FP32, FP32),
    "mse_loss": (FP32, FP32),
    "multi_margin_loss": (FP32, FP32),
    "multilabel_margin_loss": (FP32, FP32),
    "pdist": (None, FP32),
    "nll_loss": (FP32, FP32),
    "normalize": (None, FP32),
    "poisson_nll_loss": (FP32, FP32),
    "prelu": (LOWER, LOWER),
    "rms_norm": (None, FP32),
    "scaled_dot_product_attention": (LOWER, LOWER),
    "smooth_l1_loss": (FP32, FP32),
    "soft_margin_loss": (FP32, FP32),
    "softmin": (None, FP32),
    "triplet_margin_loss": (FP32, FP32),
}


#: Autocast rules of ``nn.functional.pad`` by mode, named as torch's kernels: its CPU policy runs reflection and
#: replication padding in float32 (constant and circular padding keep the input's dtype).
PAD_AUTOCAST: dict[str, tuple[str | None, str | None]] = {
    "reflection_pad": (FP32, None),
    "replication_pad": (FP32, None),
}


#: Autocast rules of the recurrent layers (``nn.LSTM``, ``nn.GRU``, ``nn.RNN``; named by their modes), as torch's:
#: on cuda cuDNN's RNN in float16 whatever the region's dtype; on the CPU the LSTM in the region's dtype (oneDNN's
#: layer there), GRU and Elman RNN left to their products' own rules.
RNN_AUTOCAST: dict[str, tuple[str | None, str | None]] = {
    "lstm": (LOWER, FP16),
    "gru": (None, FP16),
    "rnn_tanh": (None, FP16),
    "rnn_relu": (None, FP16),
}


#: Autocast rules of the linear-algebra functions (torch's kernel names: ``linalg_inv_ex`` for ``linalg.inv``...):
#: torch's CPU policy runs the factorizations and solvers in float32 (its CUDA policy leaves them in the input's
#: dtype); both lower ``linalg.vecdot``. Genesis writes them with other ops, whose own rules stay off inside
#: (``autocast.one_op``).
LINALG_AUTOCAST: dict[str, tuple[str | None, str | None]] = {
    **{name: (FP32, None) for name in ("linalg_inv_ex", "linalg_cholesky_ex", "linalg_qr", "linalg_svd", "linalg_eigh",
                                       "linalg_eig", "linalg_eigvals", "linalg_lstsq", "cholesky", "cholesky_inverse",
                                       "cholesky_solve", "pinverse", "qr", "svd", "triangular_solve", "lu_solve")},
    "linalg_vecdot": (LOWER, LOWER),
}


#: Autocast rules of the ``genesis.fft`` transforms (torch's ``fft_*`` ops): float32 on both device types, as torch's.
FFT_AUTOCAST: dict[str, tuple[str | None, str | None]] = {
    f"fft_{name}": (FP32, FP32) for name in ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2",
                                             "irfft2", "hfft2", "ihfft2", "fftn", "ifftn", "rfftn", "irfftn", "hfftn",
                                             "ihfftn")
}


#: numpy's keyword names that torch's argument parser accepts for ``dim`` and ``keepdim`` (``x.sum(axis=1,
#: keepdims=True)``, ``genesis.cat(ts, axis=0)``).
NUMPY_NAMES = {"axis": "dim", "keepdims": "keepdim"}


def public(op: Op) -> Callable:
    """``op.fn`` as users call it (``genesis.<name>`` and ``Tensor.<name>``): where it takes ``dim`` or ``keepdim``,
    it also takes them under numpy's names, as torch does; other ops are their function itself. The wrapper keeps
    the names it renames as ``numpy_aliases`` (``genesis.ops.out_args`` folds them into its own wrapper)."""
    params = inspect.signature(op.fn).parameters
    aliases = {alias: name for alias, name in NUMPY_NAMES.items() if name in params and alias not in params}
    if not aliases:
        return op.fn
    fn = op.fn

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        if kwargs:
            rename_numpy_names(op.name, aliases, kwargs)
        return fn(*args, **kwargs)

    call.numpy_aliases = aliases
    return call


def rename_numpy_names(name: str, aliases: dict[str, str], kwargs: dict) -> None:
    """Rename numpy's keywords among ``kwargs`` (``axis``, ``keepdims``) to torch's, in place; TypeError where both
    names are given."""
    for alias, torch_name in aliases.items():
        if alias in kwargs:
            if torch_name in kwargs:
                raise TypeError(f"{name}() got multiple values for argument '{torch_name}' ('{alias}' is its numpy "
                                "name)")
            kwargs[torch_name] = kwargs.pop(alias)


@functools.cache
def callables() -> dict[Op, Callable]:
    """Every row's public callable (:func:`public`): the functions of the ``genesis`` namespace and the Tensor
    methods (a name may have a function row and a method row, as ``where``)."""
    return {op: public(op) for op in OPS}


#: The in-place variants torch also offers as functions of its namespace (``genesis.relu_(x)`` is ``x.relu_()``);
#: ``genesis/__init__.py`` binds them from the Tensor methods.
INPLACE_FUNCTIONS = ("abs", "acos", "acosh", "arccos", "arccosh", "arcsin", "arcsinh", "arctan", "arctanh", "asin",
                     "asinh", "atan", "atanh", "ceil", "clamp", "clamp_max", "clamp_min", "clip", "conj_physical",
                     "cos", "cosh", "deg2rad", "detach", "erf", "erfc", "exp", "exp2", "expm1", "fill", "fix", "floor",
                     "frac", "gcd", "i0", "lcm", "ldexp", "log", "log10", "log1p", "log2", "logit", "nan_to_num", "neg",
                     "negative", "rad2deg", "reciprocal", "relu", "round", "rsqrt", "sigmoid", "sin", "sinc", "sinh",
                     "sqrt", "square", "tan", "tanh", "trunc", "xlogy", "zero")


def namespace() -> list[str]:
    """The names of the ``genesis`` namespace that are ops (``genesis.ops.__all__``)."""
    return [op.name for op in OPS if op.function]


def autocast_policy() -> dict[str, dict[str, str]]:
    """device type -> op name -> autocast rule, from the rows' ``autocast``, :data:`NN_AUTOCAST`,
    :data:`PAD_AUTOCAST`, :data:`RNN_AUTOCAST`, :data:`LINALG_AUTOCAST` and :data:`FFT_AUTOCAST`."""
    policy: dict[str, dict[str, str]] = {"cpu": {}, "cuda": {}}
    rules = [(op.name, op.autocast) for op in OPS if op.autocast] + list(NN_AUTOCAST.items()) + list(
        PAD_AUTOCAST.items()) + list(RNN_AUTOCAST.items()) + list(LINALG_AUTOCAST.items()) + list(
        FFT_AUTOCAST.items())
    for name, (cpu, cuda) in rules:
        for device_type, rule in (("cpu", cpu), ("cuda", cuda)):
            if rule is not None:
                policy[device_type][name] = rule
    return policy


# In-place variants of GENERAL ops that the backend writes straight into memory when nothing is recorded.
DIRECT_WRITERS = {"scatter": gather_scatter.scatter_into, "scatter_add": gather_scatter.scatter_add_into,
                  "masked_fill": gather_scatter.masked_fill_into, "index_add": gather_scatter.index_add_into}


def _inplace_method(op: Op, output_saving: dict[str, type]) -> Callable:
    if op.inplace == BINARY:
        return inplace.binary_method(op.name, op.fn, arithmetic.IN_PLACE_WRITERS.get(op.name))
    if op.inplace == KERNEL:
        return inplace.kernel_method(op.name, op.kernel, op.fn, output_saving.get(op.kernel))
    return inplace.general_method(op.name, op.fn, DIRECT_WRITERS.get(op.name))


def bind(tensor_type: type = Tensor) -> None:
    """The one binding step: give the autograd engine the tensor class, the autocast policy its rules, and the class
    its ops as methods, in-place methods, operators and properties. Run once, when ``genesis.ops`` is imported."""
    autograd.set_tensor_type(tensor_type)
    for device_type, rules in autocast_policy().items():
        autocast.POLICY[device_type].update(rules)
    public_ops = callables()
    output_saving = unary.output_saving()
    for op in OPS:
        if op.method:
            setattr(tensor_type, op.name, public_ops[op])
        if op.inplace:
            setattr(tensor_type, f"{op.name}_", _inplace_method(op, output_saving))
    for dunder, target in OPERATORS.items():
        setattr(tensor_type, dunder, getattr(tensor_type, target) if isinstance(target, str) else target)
    for name, fget in PROPERTIES.items():
        setattr(tensor_type, name, property(fget))


def kernels() -> dict[str, str]:
    """The backend elementwise ops the registry relies on (for the backend contract test)."""
    return {op.name: op.kernel for op in OPS if op.kernel}
