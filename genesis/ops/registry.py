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

from dataclasses import dataclass
from typing import Any, Callable

from genesis import autograd
from genesis import functional as F
from genesis import linalg as LA
from genesis import random as R
from genesis import tensor as _tensor_module
from genesis.functional.extra_misc import broadcast_shapes
from genesis.ops import conversion, inplace, methods
from genesis.tensor import Tensor

BINARY, KERNEL, GENERAL = "binary", "kernel", "general"
LOWER, FP32, PROMOTE, BANNED = "lower", "fp32", "promote", "banned"


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
    Op("add", F.add, method=True, inplace=BINARY),
    Op("sub", F.sub, method=True, inplace=BINARY),
    Op("mul", F.mul, method=True, inplace=BINARY),
    Op("div", F.div, method=True, inplace=BINARY),
    Op("true_divide", F.true_divide, method=True, inplace=BINARY),
    Op("floor_divide", F.floor_divide, method=True, inplace=BINARY),
    Op("remainder", F.remainder, method=True, inplace=BINARY),
    Op("fmod", F.fmod, method=True, inplace=GENERAL),
    Op("pow", F.pow, method=True, inplace=BINARY, autocast=(None, FP32)),
    Op("neg", F.neg, method=True, inplace=KERNEL, kernel="neg"),
    Op("abs", F.abs, method=True, inplace=KERNEL, kernel="abs"),
    Op("reciprocal", F.reciprocal, method=True, inplace=KERNEL, kernel="reciprocal", autocast=(None, FP32)),
    Op("maximum", F.maximum, method=True, inplace=BINARY),
    Op("minimum", F.minimum, method=True, inplace=BINARY),
    Op("atan2", F.atan2, method=True, inplace=GENERAL, autocast=(PROMOTE, PROMOTE)),
    Op("exp", F.exp, method=True, inplace=KERNEL, kernel="exp", autocast=(None, FP32)),
    Op("exp2", F.exp2, method=True, inplace=KERNEL, kernel="exp2"),
    Op("expm1", F.expm1, method=True, inplace=KERNEL, kernel="expm1", autocast=(None, FP32)),
    Op("log", F.log, method=True, inplace=KERNEL, kernel="log", autocast=(None, FP32)),
    Op("log2", F.log2, method=True, inplace=KERNEL, kernel="log2", autocast=(None, FP32)),
    Op("log10", F.log10, method=True, inplace=GENERAL, autocast=(None, FP32)),
    Op("log1p", F.log1p, method=True, inplace=KERNEL, kernel="log1p", autocast=(None, FP32)),
    Op("sqrt", F.sqrt, method=True, inplace=KERNEL, kernel="sqrt"),
    Op("rsqrt", F.rsqrt, method=True, inplace=KERNEL, kernel="rsqrt", autocast=(None, FP32)),
    Op("square", F.square, method=True, inplace=GENERAL),
    Op("sin", F.sin, method=True, inplace=KERNEL, kernel="sin"),
    Op("cos", F.cos, method=True, inplace=KERNEL, kernel="cos"),
    Op("tan", F.tan, method=True, inplace=KERNEL, kernel="tan", autocast=(None, FP32)),
    Op("tanh", F.tanh, method=True, inplace=KERNEL, kernel="tanh"),
    Op("sigmoid", F.sigmoid, method=True, inplace=KERNEL, kernel="sigmoid"),
    Op("relu", F.relu, method=True, inplace=KERNEL, kernel="relu"),
    Op("gelu", F.gelu),
    Op("silu", F.silu),
    Op("softplus", F.softplus, autocast=(None, FP32)),
    Op("erf", F.erf, method=True, inplace=KERNEL, kernel="erf"),
    Op("sign", F.sign, method=True, inplace=KERNEL, kernel="sign"),
    Op("floor", F.floor, method=True, inplace=KERNEL, kernel="floor"),
    Op("ceil", F.ceil, method=True, inplace=KERNEL, kernel="ceil"),
    Op("round", F.round, method=True, inplace=KERNEL, kernel="round"),
    Op("trunc", F.trunc, method=True, inplace=KERNEL, kernel="trunc"),
    Op("clamp", F.clamp, method=True, inplace=GENERAL),
    Op("lerp", F.lerp, method=True, inplace=GENERAL),
    Op("where", F.where),
    Op("isnan", F.isnan, method=True),
    Op("isinf", F.isinf, method=True),
    Op("isfinite", F.isfinite, method=True),
    Op("nan_to_num", F.nan_to_num, method=True, inplace=GENERAL),
    Op("eq", F.eq, method=True, inplace=GENERAL),
    Op("ne", F.ne, method=True, inplace=GENERAL),
    Op("lt", F.lt, method=True, inplace=GENERAL),
    Op("le", F.le, method=True, inplace=GENERAL),
    Op("gt", F.gt, method=True, inplace=GENERAL),
    Op("ge", F.ge, method=True, inplace=GENERAL),
    Op("logical_and", F.logical_and, method=True, inplace=BINARY),
    Op("logical_or", F.logical_or, method=True, inplace=BINARY),
    Op("logical_xor", F.logical_xor, method=True, inplace=GENERAL),
    Op("logical_not", F.logical_not, method=True, inplace=GENERAL),
    Op("bitwise_and", F.bitwise_and, method=True, inplace=BINARY),
    Op("bitwise_or", F.bitwise_or, method=True, inplace=BINARY),
    Op("bitwise_xor", F.bitwise_xor, method=True, inplace=BINARY),
    Op("bitwise_not", F.bitwise_not, method=True, inplace=GENERAL),
    Op("equal", F.equal, method=True),
    Op("isclose", F.isclose, method=True),
    Op("allclose", F.allclose, method=True),
    Op("sum", F.sum, method=True, autocast=(None, FP32)),
    Op("mean", F.mean, method=True),
    Op("prod", F.prod, method=True, autocast=(FP32, FP32)),
    Op("amax", F.amax, method=True),
    Op("amin", F.amin, method=True),
    Op("max", F.max, method=True),
    Op("min", F.min, method=True),
    Op("argmax", F.argmax, method=True),
    Op("argmin", F.argmin, method=True),
    Op("var", F.var, method=True),
    Op("std", F.std, method=True),
    Op("var_mean", F.var_mean),
    Op("norm", F.norm, method=True, autocast=(None, FP32)),
    Op("logsumexp", F.logsumexp, method=True),
    Op("softmax", F.softmax, method=True, autocast=(None, FP32)),
    Op("log_softmax", F.log_softmax, method=True, autocast=(None, FP32)),
    Op("cumsum", F.cumsum, method=True, inplace=GENERAL, autocast=(None, FP32)),
    Op("cumprod", F.cumprod, method=True, inplace=GENERAL, autocast=(None, FP32)),
    Op("all", F.all, method=True),
    Op("any", F.any, method=True),
    Op("count_nonzero", F.count_nonzero, method=True),
    Op("reshape", F.reshape, method=True),
    Op("view", F.view, method=True),
    Op("flatten", F.flatten, method=True),
    Op("unflatten", F.unflatten, method=True),
    Op("squeeze", F.squeeze, method=True),
    Op("unsqueeze", F.unsqueeze, method=True),
    Op("permute", F.permute, method=True),
    Op("transpose", F.transpose, method=True),
    Op("movedim", F.movedim, method=True),
    Op("moveaxis", F.moveaxis, method=True),
    Op("swapaxes", F.swapaxes, method=True),
    Op("swapdims", F.swapdims, method=True),
    Op("ravel", F.ravel, method=True),
    Op("t", F.t, method=True),
    Op("expand", F.expand, method=True),
    Op("broadcast_to", F.broadcast_to, method=True),
    Op("broadcast_tensors", F.broadcast_tensors),
    Op("narrow", F.narrow, method=True),
    Op("select", F.select, method=True),
    Op("diagonal", F.diagonal, method=True),
    Op("unfold", F.unfold, method=True),
    Op("contiguous", F.contiguous, method=True),
    Op("clone", F.clone, method=True),
    Op("cat", F.cat, autocast=(PROMOTE, PROMOTE)),
    Op("stack", F.stack, autocast=(PROMOTE, PROMOTE)),
    Op("hstack", F.hstack),
    Op("vstack", F.vstack),
    Op("split", F.split, method=True),
    Op("chunk", F.chunk, method=True),
    Op("tensor_split", F.tensor_split, method=True),
    Op("unbind", F.unbind, method=True),
    Op("repeat", F.repeat, method=True),
    Op("tile", F.tile, method=True),
    Op("repeat_interleave", F.repeat_interleave, method=True),
    Op("flip", F.flip, method=True),
    Op("fliplr", F.fliplr, method=True),
    Op("flipud", F.flipud, method=True),
    Op("roll", F.roll, method=True),
    Op("triu", F.triu, method=True, inplace=GENERAL),
    Op("tril", F.tril, method=True, inplace=GENERAL),
    Op("diag", F.diag, method=True),
    Op("diagonal_copy", F.diagonal_copy),
    Op("trace", F.trace, method=True),
    Op("gather", F.gather, method=True),
    Op("take_along_dim", F.take_along_dim, method=True),
    Op("take", F.take, method=True),
    Op("scatter", F.scatter, method=True, inplace=GENERAL),
    Op("scatter_add", F.scatter_add, method=True, inplace=GENERAL, autocast=(PROMOTE, PROMOTE)),
    Op("index_select", F.index_select, method=True),
    Op("index_add", F.index_add, method=True, inplace=GENERAL),
    Op("index_copy", F.index_copy, method=True, inplace=GENERAL),
    Op("index_put", F.index_put, method=True, inplace=GENERAL, autocast=(PROMOTE, PROMOTE)),
    Op("index_fill", F.index_fill, method=True, inplace=GENERAL),
    Op("masked_fill", F.masked_fill, method=True, inplace=GENERAL),
    Op("masked_select", F.masked_select, method=True),
    Op("masked_scatter", F.masked_scatter, method=True, inplace=GENERAL),
    Op("nonzero", F.nonzero, method=True),
    Op("argwhere", F.argwhere, method=True),
    Op("sort", F.sort, method=True),
    Op("argsort", F.argsort, method=True),
    Op("topk", F.topk, method=True),
    Op("kthvalue", F.kthvalue, method=True),
    Op("median", F.median, method=True),
    Op("unique", F.unique, method=True),
    Op("searchsorted", F.searchsorted),
    Op("bucketize", F.bucketize),
    Op("one_hot", F.one_hot),
    Op("matmul", F.matmul, method=True, autocast=(LOWER, LOWER)),
    Op("mm", F.mm, method=True, autocast=(LOWER, LOWER)),
    Op("bmm", F.bmm, method=True, autocast=(LOWER, LOWER)),
    Op("mv", F.mv, method=True, autocast=(None, LOWER)),
    Op("dot", F.dot, method=True, autocast=(PROMOTE, PROMOTE)),
    Op("outer", F.outer, method=True),
    Op("addmm", F.addmm, method=True, inplace=GENERAL, autocast=(LOWER, LOWER)),
    Op("baddbmm", F.baddbmm, method=True, inplace=GENERAL, autocast=(LOWER, LOWER)),
    Op("einsum", F.einsum),
    Op("negative", F.negative, method=True, inplace=KERNEL, kernel="neg"),
    Op("clip", F.clip, method=True, inplace=GENERAL),
    Op("clamp_min", F.clamp_min, method=True, inplace=GENERAL),
    Op("clamp_max", F.clamp_max, method=True, inplace=GENERAL),
    Op("concat", F.concat),
    Op("concatenate", F.concatenate),
    Op("inner", F.inner, method=True),
    Op("ger", F.ger),
    Op("asin", F.asin, method=True, inplace=KERNEL, kernel="asin", autocast=(None, FP32)),
    Op("acos", F.acos, method=True, inplace=KERNEL, kernel="acos", autocast=(None, FP32)),
    Op("atan", F.atan, method=True, inplace=KERNEL, kernel="atan"),
    Op("sinh", F.sinh, method=True, inplace=KERNEL, kernel="sinh", autocast=(None, FP32)),
    Op("cosh", F.cosh, method=True, inplace=KERNEL, kernel="cosh", autocast=(None, FP32)),
    Op("asinh", F.asinh, method=True, inplace=KERNEL, kernel="asinh"),
    Op("acosh", F.acosh, method=True, inplace=KERNEL, kernel="acosh"),
    Op("atanh", F.atanh, method=True, inplace=KERNEL, kernel="atanh"),
    Op("arcsin", F.arcsin, method=True, inplace=KERNEL, kernel="asin"),
    Op("arccos", F.arccos, method=True, inplace=KERNEL, kernel="acos"),
    Op("arctan", F.arctan, method=True, inplace=KERNEL, kernel="atan"),
    Op("arcsinh", F.arcsinh, method=True, inplace=KERNEL, kernel="asinh"),
    Op("arccosh", F.arccosh, method=True, inplace=KERNEL, kernel="acosh"),
    Op("arctanh", F.arctanh, method=True, inplace=KERNEL, kernel="atanh"),
    Op("arctan2", F.arctan2, method=True, inplace=GENERAL),
    Op("erfc", F.erfc, method=True, inplace=KERNEL, kernel="erfc"),
    Op("erfinv", F.erfinv, method=True, inplace=KERNEL, kernel="erfinv", autocast=(None, FP32)),
    Op("lgamma", F.lgamma, method=True, inplace=KERNEL, kernel="lgamma"),
    Op("mvlgamma", F.mvlgamma, method=True, inplace=GENERAL),
    Op("digamma", F.digamma, method=True, inplace=KERNEL, kernel="digamma"),
    Op("i0", F.i0, method=True, inplace=KERNEL, kernel="i0"),
    Op("sinc", F.sinc, method=True, inplace=GENERAL),
    Op("logit", F.logit, method=True, inplace=GENERAL),
    Op("xlogy", F.xlogy, method=True, inplace=GENERAL),
    Op("hypot", F.hypot, method=True, inplace=GENERAL),
    Op("copysign", F.copysign, method=True, inplace=GENERAL),
    Op("fmax", F.fmax, method=True),
    Op("fmin", F.fmin, method=True),
    Op("float_power", F.float_power, method=True),
    Op("logaddexp", F.logaddexp, method=True),
    Op("logaddexp2", F.logaddexp2, method=True),
    Op("heaviside", F.heaviside, method=True, inplace=GENERAL),
    Op("ldexp", F.ldexp, method=True, inplace=GENERAL),
    Op("gcd", F.gcd, method=True, inplace=GENERAL),
    Op("lcm", F.lcm, method=True, inplace=GENERAL),
    Op("signbit", F.signbit, method=True),
    Op("frac", F.frac, method=True, inplace=GENERAL),
    Op("fix", F.fix, method=True, inplace=GENERAL),
    Op("sgn", F.sgn, method=True, inplace=GENERAL),
    Op("positive", F.positive, method=True),
    Op("deg2rad", F.deg2rad, method=True, inplace=GENERAL),
    Op("rad2deg", F.rad2deg, method=True, inplace=GENERAL),
    Op("greater", F.greater, method=True, inplace=GENERAL),
    Op("greater_equal", F.greater_equal, method=True, inplace=GENERAL),
    Op("less", F.less, method=True, inplace=GENERAL),
    Op("less_equal", F.less_equal, method=True, inplace=GENERAL),
    Op("not_equal", F.not_equal, method=True, inplace=GENERAL),
    Op("angle", F.angle, method=True),
    Op("isposinf", F.isposinf, method=True),
    Op("isneginf", F.isneginf, method=True),
    Op("isreal", F.isreal, method=True),
    Op("real", F.real),
    Op("imag", F.imag),
    Op("conj", F.conj, method=True),
    Op("conj_physical", F.conj_physical, method=True),
    Op("resolve_conj", F.resolve_conj, method=True),
    Op("resolve_neg", F.resolve_neg, method=True),
    Op("std_mean", F.std_mean),
    Op("nansum", F.nansum, method=True),
    Op("nanmean", F.nanmean, method=True),
    Op("aminmax", F.aminmax, method=True),
    Op("cummax", F.cummax, method=True),
    Op("cummin", F.cummin, method=True),
    Op("logcumsumexp", F.logcumsumexp, method=True),
    Op("nanmedian", F.nanmedian, method=True),
    Op("mode", F.mode, method=True),
    Op("quantile", F.quantile, method=True),
    Op("nanquantile", F.nanquantile, method=True),
    Op("bincount", F.bincount, method=True),
    Op("histc", F.histc, method=True),
    Op("cov", F.cov, method=True),
    Op("corrcoef", F.corrcoef, method=True),
    Op("diff", F.diff, method=True),
    Op("cross", F.cross, method=True, autocast=(PROMOTE, PROMOTE)),
    Op("vdot", F.vdot, method=True),
    Op("kron", F.kron, method=True),
    Op("cdist", F.cdist),
    Op("dist", F.dist, method=True),
    Op("addcmul", F.addcmul, method=True, autocast=(PROMOTE, PROMOTE)),
    Op("addcdiv", F.addcdiv, method=True, autocast=(PROMOTE, PROMOTE)),
    Op("addmv", F.addmv, method=True, inplace=GENERAL, autocast=(None, LOWER)),
    Op("addr", F.addr, method=True, inplace=GENERAL),
    Op("addbmm", F.addbmm, method=True, inplace=GENERAL, autocast=(LOWER, LOWER)),
    Op("renorm", F.renorm, method=True, inplace=GENERAL),
    Op("meshgrid", F.meshgrid),
    Op("atleast_1d", F.atleast_1d),
    Op("atleast_2d", F.atleast_2d),
    Op("atleast_3d", F.atleast_3d),
    Op("dstack", F.dstack),
    Op("column_stack", F.column_stack),
    Op("row_stack", F.row_stack),
    Op("hsplit", F.hsplit, method=True),
    Op("vsplit", F.vsplit, method=True),
    Op("dsplit", F.dsplit, method=True),
    Op("split_with_sizes", F.split_with_sizes, method=True),
    Op("rot90", F.rot90, method=True),
    Op("block_diag", F.block_diag),
    Op("cartesian_prod", F.cartesian_prod),
    Op("combinations", F.combinations),
    Op("triu_indices", F.triu_indices),
    Op("tril_indices", F.tril_indices),
    Op("vander", F.vander),
    Op("diag_embed", F.diag_embed, method=True),
    Op("diagflat", F.diagflat, method=True),
    Op("select_scatter", F.select_scatter, method=True),
    Op("slice_scatter", F.slice_scatter, method=True),
    Op("diagonal_scatter", F.diagonal_scatter, method=True),
    Op("scatter_reduce", F.scatter_reduce, method=True, inplace=GENERAL),
    Op("index_reduce", F.index_reduce, method=True, inplace=GENERAL),
    Op("unique_consecutive", F.unique_consecutive, method=True),
    Op("msort", F.msort, method=True),
    Op("is_same_size", F.is_same_size, method=True),
    Op("is_nonzero", F.is_nonzero, method=True),
    Op("is_signed", F.is_signed, method=True),
    Op("can_cast", F.can_cast),
    Op("tensordot", F.tensordot),
    Op("trapezoid", F.trapezoid),
    Op("trapz", F.trapz),
    Op("cumulative_trapezoid", F.cumulative_trapezoid),
    Op("unravel_index", F.unravel_index),
    Op("isin", F.isin),
    Op("histogram", F.histogram, method=True),
    Op("broadcast_shapes", broadcast_shapes),
    Op("subtract", F.sub, method=True, inplace=BINARY),
    Op("multiply", F.mul, method=True, inplace=BINARY),
    Op("divide", F.div, method=True, inplace=BINARY),
    Op("absolute", F.abs, method=True, inplace=KERNEL, kernel="abs"),
    Op("broadcast_shapes", broadcast_shapes),
    Op("subtract", F.sub, method=True, inplace=BINARY),
    Op("multiply", F.mul, method=True, inplace=BINARY),
    Op("divide", F.div, method=True, inplace=BINARY),
    Op("absolute", F.abs, method=True, inplace=KERNEL, kernel="abs"),
    # ---------------------------------------------------------------- creation (genesis.tensor)
    Op("tensor", _tensor_module.tensor),
    Op("as_tensor", _tensor_module.as_tensor),
    Op("from_numpy", _tensor_module.from_numpy),
    Op("from_dlpack", _tensor_module.from_dlpack),
    Op("scalar_tensor", _tensor_module.scalar_tensor),
    Op("zeros", _tensor_module.zeros),
    Op("ones", _tensor_module.ones),
    Op("full", _tensor_module.full),
    Op("empty", _tensor_module.empty),
    Op("zeros_like", _tensor_module.zeros_like),
    Op("ones_like", _tensor_module.ones_like),
    Op("full_like", _tensor_module.full_like),
    Op("empty_like", _tensor_module.empty_like),
    Op("arange", _tensor_module.arange),
    Op("linspace", _tensor_module.linspace),
    Op("logspace", _tensor_module.logspace),
    Op("eye", _tensor_module.eye),
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
    Op("cholesky", methods.cholesky, function=False, method=True),
    # ---------------------------------------------------------------- methods only
    Op("to", conversion.to, function=False, method=True),
    Op("where", methods.where, function=False, method=True),
    Op("expand_as", methods.expand_as, function=False, method=True),
    Op("view_as", methods.view_as, function=False, method=True),
    Op("reshape_as", methods.reshape_as, function=False, method=True),
    Op("sum_to_size", methods.sum_to_size, function=False, method=True),
    Op("is_conj", methods.is_conj, function=False, method=True),
    Op("is_neg", methods.is_conj, function=False, method=True),
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
    Op("conj_physical_", F.resolve_conj, function=False, method=True),
    Op("_index_nd", F.index_tensor, function=False, method=True),  # x[indices] for NDArray indices (autograd)
)

#: Python operators: dunder -> the op it calls; reflected ones swap the operands.
OPERATORS: dict[str, Callable] = {
    "__add__": F.add, "__radd__": F.add, "__sub__": F.sub, "__rsub__": methods.reflected(F.sub),
    "__mul__": F.mul, "__rmul__": F.mul, "__truediv__": F.div, "__rtruediv__": methods.reflected(F.div),
    "__floordiv__": F.floor_divide, "__rfloordiv__": methods.reflected(F.floor_divide),
    "__mod__": F.remainder, "__rmod__": methods.reflected(F.remainder), "__pow__": F.pow,
    "__rpow__": methods.reflected(F.pow), "__matmul__": F.matmul, "__rmatmul__": methods.reflected(F.matmul),
    "__neg__": F.neg, "__pos__": methods.positive, "__abs__": F.abs, "__invert__": methods.invert,
    "__and__": F.bitwise_and, "__rand__": F.bitwise_and, "__or__": F.bitwise_or, "__ror__": F.bitwise_or,
    "__xor__": F.bitwise_xor, "__rxor__": F.bitwise_xor, "__eq__": F.eq, "__ne__": F.ne, "__lt__": F.lt,
    "__le__": F.le, "__gt__": F.gt, "__ge__": F.ge, "__getitem__": F.getitem, "__setitem__": F.setitem,
    # in place: the in-place method of the op
    "__iadd__": "add_", "__isub__": "sub_", "__imul__": "mul_", "__itruediv__": "div_", "__ipow__": "pow_",
    "__imod__": "remainder_", "__ifloordiv__": "floor_divide_", "__iand__": "bitwise_and_", "__ior__": "bitwise_or_",
    "__ixor__": "bitwise_xor_",
}

#: Read-only Tensor properties computed by ops.
PROPERTIES: dict[str, Callable] = {
    "T": methods.reversed_dims, "mT": methods.matrix_transpose, "H": methods.reversed_dims,
    "mH": methods.matrix_transpose, "real": F.real, "imag": F.imag,
}

#: Autocast rules of the ``genesis.nn.functional`` ops (defined in the nn layer above; named here so the whole
#: policy reads in one place).
NN_AUTOCAST: dict[str, tuple[str | None, str | None]] = {
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
    "huber_loss": (FP32, FP32),
    "kl_div": (FP32, FP32),
    "l1_loss": (FP32, FP32),
    "layer_norm": (None, FP32),
    "linear": (LOWER, LOWER),
    "margin_ranking_loss": (FP32, FP32),
    "mse_loss": (FP32, FP32),
    "nll_loss": (FP32, FP32),
    "normalize": (None, FP32),
    "poisson_nll_loss": (FP32, FP32),
    "prelu": (LOWER, LOWER),
    "rms_norm": (None, FP32),
    "scaled_dot_product_attention": (LOWER, LOWER),
    "smooth_l1_loss": (FP32, FP32),
    "soft_margin_loss": (FP32, FP32),
    "softmin": (None, FP32),
}


def namespace() -> list[str]:
    """The names of the ``genesis`` namespace that are ops (``genesis.ops.__all__``)."""
    return [op.name for op in OPS if op.function]


def autocast_policy() -> dict[str, dict[str, str]]:
    """device type -> op name -> autocast rule, from the rows' ``autocast`` and :data:`NN_AUTOCAST`."""
    policy: dict[str, dict[str, str]] = {"cpu": {}, "cuda": {}}
    rules = [(op.name, op.autocast) for op in OPS if op.autocast] + list(NN_AUTOCAST.items())
    for name, (cpu, cuda) in rules:
        for device_type, rule in (("cpu", cpu), ("cuda", cuda)):
            if rule is not None:
                policy[device_type][name] = rule
    return policy


def _inplace_method(op: Op) -> Callable:
    if op.inplace == BINARY:
        return inplace.binary_method(op.name, op.fn)
    if op.inplace == KERNEL:
        return inplace.kernel_method(op.name, op.kernel, op.fn)
    return inplace.general_method(op.name, op.fn)


def bind(tensor_type: type = Tensor) -> None:
    """The one binding step: give the autograd engine the tensor class and give the class its ops as methods,
    in-place methods, operators and properties. Run once, when ``genesis.ops`` is imported."""
    autograd.set_tensor_type(tensor_type)
    for op in OPS:
        if op.method:
            setattr(tensor_type, op.name, op.fn)
        if op.inplace:
            setattr(tensor_type, f"{op.name}_", _inplace_method(op))
    for dunder, target in OPERATORS.items():
        setattr(tensor_type, dunder, getattr(tensor_type, target) if isinstance(target, str) else target)
    for name, fget in PROPERTIES.items():
        setattr(tensor_type, name, property(fget))


def kernels() -> dict[str, Any]:
    """The backend elementwise ops the registry relies on (for the backend contract test)."""
    return {op.name: op.kernel for op in OPS if op.kernel}
