"""Tensor methods and operators, bound to the functions of ``genesis.functional`` and ``genesis.random``.

Out-of-place methods are the functional ops themselves (their first argument is the tensor). In-place methods
write into the tensor's memory: directly through the backend's ``out=`` when no graph is recorded, otherwise by
recording the out-of-place op and taking over its history (``Tensor._assign_inplace``).
"""

from __future__ import annotations

from typing import Any, Callable

from genesis import autograd, dtypes
from genesis import functional as F
from genesis import linalg as LA
from genesis import random as R
from genesis import tensor as tensor_module
from genesis.autograd import is_grad_enabled
from genesis.tensor import Tensor

tensor_module.F = F

OUT_OF_PLACE: dict[str, Callable] = {
    # arithmetic and math
    "add": F.add, "sub": F.sub, "subtract": F.sub, "mul": F.mul, "multiply": F.mul, "div": F.div,
    "divide": F.div, "true_divide": F.true_divide, "floor_divide": F.floor_divide, "remainder": F.remainder,
    "fmod": F.fmod, "pow": F.pow, "neg": F.neg, "negative": F.neg, "abs": F.abs, "absolute": F.abs,
    "reciprocal": F.reciprocal, "maximum": F.maximum, "minimum": F.minimum, "atan2": F.atan2, "exp": F.exp,
    "exp2": F.exp2, "expm1": F.expm1, "log": F.log, "log2": F.log2, "log10": F.log10, "log1p": F.log1p,
    "sqrt": F.sqrt, "rsqrt": F.rsqrt, "square": F.square, "sin": F.sin, "cos": F.cos, "tan": F.tan,
    "tanh": F.tanh, "sigmoid": F.sigmoid, "relu": F.relu, "erf": F.erf, "sign": F.sign, "floor": F.floor,
    "ceil": F.ceil, "round": F.round, "trunc": F.trunc, "clamp": F.clamp, "clip": F.clamp,
    "clamp_min": F.clamp_min, "clamp_max": F.clamp_max, "lerp": F.lerp,
    "isnan": F.isnan, "isinf": F.isinf, "isfinite": F.isfinite, "nan_to_num": F.nan_to_num,
    # comparison and logic
    "eq": F.eq, "ne": F.ne, "lt": F.lt, "le": F.le, "gt": F.gt, "ge": F.ge, "logical_and": F.logical_and,
    "logical_or": F.logical_or, "logical_xor": F.logical_xor, "logical_not": F.logical_not,
    "bitwise_and": F.bitwise_and, "bitwise_or": F.bitwise_or, "bitwise_xor": F.bitwise_xor,
    "bitwise_not": F.bitwise_not, "equal": F.equal, "allclose": F.allclose, "isclose": F.isclose,
    # reductions
    "sum": F.sum, "mean": F.mean, "prod": F.prod, "max": F.max, "min": F.min, "amax": F.amax, "amin": F.amin,
    "argmax": F.argmax, "argmin": F.argmin, "var": F.var, "std": F.std, "norm": F.norm,
    "logsumexp": F.logsumexp, "softmax": F.softmax, "log_softmax": F.log_softmax, "cumsum": F.cumsum,
    "cumprod": F.cumprod, "all": F.all, "any": F.any, "count_nonzero": F.count_nonzero, "median": F.median,
    "kthvalue": F.kthvalue,
    # shapes and views
    "reshape": F.reshape, "view": F.view, "flatten": F.flatten, "unflatten": F.unflatten, "squeeze": F.squeeze,
    "unsqueeze": F.unsqueeze, "permute": F.permute, "transpose": F.transpose, "swapaxes": F.transpose,
    "movedim": F.movedim, "moveaxis": F.movedim, "swapdims": F.transpose, "ravel": F.ravel,
    "t": F.t, "expand": F.expand, "broadcast_to": F.broadcast_to, "contiguous": F.contiguous,
    "clone": F.clone, "split": F.split, "chunk": F.chunk, "tensor_split": F.tensor_split, "unbind": F.unbind,
    "repeat": F.repeat, "tile": F.tile, "repeat_interleave": F.repeat_interleave, "flip": F.flip, "roll": F.roll,
    "narrow": F.narrow, "select": F.select, "tril": F.tril, "triu": F.triu, "diagonal": F.diagonal, "diag": F.diag,
    "unfold": F.unfold, "trace": F.trace,
    # indexing
    "gather": F.gather, "scatter": F.scatter, "scatter_add": F.scatter_add, "index_select": F.index_select,
    "index_add": F.index_add, "index_copy": F.index_copy, "index_fill": F.index_fill, "masked_fill": F.masked_fill,
    "masked_select": F.masked_select, "masked_scatter": F.masked_scatter, "take_along_dim": F.take_along_dim,
    "take": F.take, "topk": F.topk, "sort": F.sort, "argsort": F.argsort, "nonzero": F.nonzero,
    "argwhere": F.argwhere, "unique": F.unique, "index_put": F.index_put,
    # linear algebra
    "matmul": F.matmul, "mm": F.mm, "bmm": F.bmm, "mv": F.mv, "dot": F.dot, "inner": F.dot, "outer": F.outer,
    "addmm": F.addmm, "baddbmm": F.baddbmm,
}
for _name, _fn in OUT_OF_PLACE.items():
    setattr(Tensor, _name, _fn)


def _expand_as(self: Tensor, other: Tensor) -> Tensor:
    return F.expand(self, other.shape)


def _view_as(self: Tensor, other: Tensor) -> Tensor:
    return F.view(self, other.shape)


def _reshape_as(self: Tensor, other: Tensor) -> Tensor:
    return F.reshape(self, other.shape)


Tensor.expand_as = _expand_as
Tensor.view_as = _view_as
Tensor.reshape_as = _reshape_as
Tensor.T = property(lambda self: F.permute(self, tuple(reversed(range(self.ndim)))))
Tensor.mT = property(lambda self: F.transpose(self, -2, -1))
Tensor.H = Tensor.T
Tensor.mH = Tensor.mT


# ------------------------------------------------------------------ operators

def _reflected(fn: Callable) -> Callable:
    def method(self: Tensor, other: Any) -> Tensor:
        return fn(other, self)

    method.__name__ = f"__r{fn.__name__}__"
    return method


Tensor.__add__ = F.add
Tensor.__radd__ = F.add
Tensor.__sub__ = F.sub
Tensor.__rsub__ = _reflected(F.sub)
Tensor.__mul__ = F.mul
Tensor.__rmul__ = F.mul
Tensor.__truediv__ = F.div
Tensor.__rtruediv__ = _reflected(F.div)
Tensor.__floordiv__ = F.floor_divide
Tensor.__rfloordiv__ = _reflected(F.floor_divide)
Tensor.__mod__ = F.remainder
Tensor.__rmod__ = _reflected(F.remainder)
Tensor.__pow__ = F.pow
Tensor.__rpow__ = _reflected(F.pow)
Tensor.__matmul__ = F.matmul
Tensor.__rmatmul__ = _reflected(F.matmul)
Tensor.__neg__ = F.neg
Tensor.__pos__ = lambda self: self
Tensor.__abs__ = F.abs
def _invert(self: Tensor) -> Tensor:
    if self.dtype.is_floating_point:
        raise TypeError(f"~ (operator.invert) is only implemented on integer and Boolean-type tensors, got "
                        f"{self.dtype.name}")
    return F.logical_not(self) if self.dtype is dtypes.bool_ else F.bitwise_not(self)


def _where_method(self: Tensor, condition: Tensor, other: Any) -> Tensor:
    """``self`` where ``condition`` holds, else ``other`` (torch's ``Tensor.where``)."""
    return F.where(condition, self, other)


Tensor.__invert__ = _invert
Tensor.where = _where_method
Tensor.__and__ = F.bitwise_and
Tensor.__rand__ = F.bitwise_and
Tensor.__or__ = F.bitwise_or
Tensor.__ror__ = F.bitwise_or
Tensor.__xor__ = F.bitwise_xor
Tensor.__rxor__ = F.bitwise_xor
Tensor.__eq__ = F.eq
Tensor.__ne__ = F.ne
Tensor.__lt__ = F.lt
Tensor.__le__ = F.le
Tensor.__gt__ = F.gt
Tensor.__ge__ = F.ge
Tensor.__getitem__ = F.getitem
Tensor.__setitem__ = F.setitem


# ------------------------------------------------------------------ in-place

_INPLACE_BINARY = {"add": F.add, "sub": F.sub, "mul": F.mul, "div": F.div, "pow": F.pow, "remainder": F.remainder,
                   "floor_divide": F.floor_divide, "bitwise_and": F.bitwise_and, "bitwise_or": F.bitwise_or,
                   "bitwise_xor": F.bitwise_xor, "logical_and": F.logical_and, "logical_or": F.logical_or,
                   "maximum": F.maximum, "minimum": F.minimum}


def _make_inplace_binary(op: str, fn: Callable) -> Callable:
    def method(self: Tensor, other: Any, alpha: float | None = None, rounding_mode: str | None = None) -> Tensor:
        if alpha is not None and alpha != 1:
            other = other * alpha
        if rounding_mode is not None:
            recording = is_grad_enabled() and (self.requires_grad or isinstance(other, Tensor) and other.requires_grad)
            source = self._inplace_source() if recording else self
            return self._assign_inplace(F.div(source, other, rounding_mode=rounding_mode))
        return self._inplace_binary(op, fn, other)

    method.__name__ = f"{op}_"
    method.__doc__ = f"In-place {op}."
    return method


for _op, _fn in _INPLACE_BINARY.items():
    setattr(Tensor, f"{_op}_", _make_inplace_binary(_op, _fn))
Tensor.sub_ = _make_inplace_binary("sub", F.sub)
Tensor.__iadd__ = Tensor.add_
Tensor.__isub__ = Tensor.sub_
Tensor.__imul__ = Tensor.mul_
Tensor.__itruediv__ = Tensor.div_
Tensor.__ipow__ = Tensor.pow_
Tensor.__imod__ = Tensor.remainder_
Tensor.__ifloordiv__ = Tensor.floor_divide_
Tensor.__iand__ = Tensor.bitwise_and_
Tensor.__ior__ = Tensor.bitwise_or_
Tensor.__ixor__ = Tensor.bitwise_xor_
Tensor.multiply_ = Tensor.mul_
Tensor.divide_ = Tensor.div_
Tensor.subtract_ = Tensor.sub_
Tensor.true_divide_ = Tensor.div_

_INPLACE_UNARY = ("exp", "log", "sqrt", "rsqrt", "sin", "cos", "tanh", "sigmoid", "relu", "abs", "neg", "floor",
                  "ceil", "round", "trunc", "reciprocal", "sign", "log1p", "expm1", "erf", "exp2", "log2", "tan")


def _make_inplace_unary(op: str) -> Callable:
    fn = OUT_OF_PLACE[op]

    def method(self: Tensor) -> Tensor:
        if is_grad_enabled() and self.requires_grad or not self.dtype.is_floating_point:
            return self._assign_inplace(fn(self))
        self.ndarray.unary(op, out=self.ndarray)
        self._bump_version()
        return self

    method.__name__ = f"{op}_"
    method.__doc__ = f"In-place {op}."
    return method


for _op in _INPLACE_UNARY:
    setattr(Tensor, f"{_op}_", _make_inplace_unary(_op))


def _make_inplace_general(fn: Callable) -> Callable:
    def method(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        recording = is_grad_enabled() and (self.requires_grad or any(
            isinstance(a, Tensor) and a.requires_grad for a in (*args, *kwargs.values())))
        return self._assign_inplace(fn(self._inplace_source() if recording else self, *args, **kwargs))

    method.__name__ = f"{fn.__name__}_"
    method.__doc__ = f"In-place {fn.__name__}."
    return method


for _fn in (F.clamp, F.lerp, F.masked_fill, F.scatter, F.scatter_add, F.index_add, F.index_copy, F.index_fill,
            F.tril, F.triu, F.nan_to_num, F.fmod, F.atan2, F.masked_scatter, F.index_put, F.clamp_min, F.clamp_max):
    setattr(Tensor, f"{_fn.__name__}_", _make_inplace_general(_fn))
Tensor.clip_ = Tensor.clamp_


def _reshape_inplace(self: Tensor, op: str, view: Callable[[Tensor], Tensor]) -> Tensor:
    """Finish an in-place op that only changes the shape (``squeeze_``, ``transpose_`` ...): this tensor takes the
    view's shape and strides and, when autograd records, the view's history (as torch's in-place view ops do)."""
    self._check_inplace(op)
    out = view(self)
    if out.grad_fn is not None and is_grad_enabled():
        autograd.take_history(self, out)
    self.ndarray = out.ndarray
    return self


def _squeeze_(self: Tensor, dim: Any = None) -> Tensor:
    return _reshape_inplace(self, "squeeze_", lambda t: F.squeeze(t, dim))


def _unsqueeze_(self: Tensor, dim: int) -> Tensor:
    return _reshape_inplace(self, "unsqueeze_", lambda t: F.unsqueeze(t, dim))


def _transpose_(self: Tensor, dim0: int, dim1: int) -> Tensor:
    return _reshape_inplace(self, "transpose_", lambda t: F.transpose(t, dim0, dim1))


def _t_(self: Tensor) -> Tensor:
    return _transpose_(self, 0, 1) if self.ndim == 2 else self


Tensor.squeeze_ = _squeeze_
Tensor.unsqueeze_ = _unsqueeze_
Tensor.transpose_ = _transpose_
Tensor.t_ = _t_


def _fill_from(self: Tensor, nd: Any) -> Tensor:
    """Overwrite the contents in place from an NDArray or number (no gradient flows)."""
    self._check_inplace("fill")
    self.ndarray.copy_(nd)
    self._bump_version()
    return self


def _fill_(self: Tensor, value: Any) -> Tensor:
    """Fill with a number (or a 0-d tensor, differentiably)."""
    if isinstance(value, Tensor):
        if value.ndim:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with {value.ndim} "
                               "dimensions.")
        if not (value.requires_grad and is_grad_enabled()):
            value = value.item()
    if is_grad_enabled() and (self.requires_grad or isinstance(value, Tensor)):
        return self._assign_inplace(_overwrite(self, value.to(self.dtype) if isinstance(value, Tensor) else value))
    return self._fill_from(value)


def _overwrite(self: Tensor, value: Any) -> Tensor:
    """``value`` broadcast to ``self`` as a graph node: the old values of ``self`` receive a zero gradient."""
    return F.where(F.ones_like_bool(self), value, self)


def _zero_(self: Tensor) -> Tensor:
    return _fill_(self, 0)


def _copy_(self: Tensor, src: Any, non_blocking: bool = False) -> Tensor:
    """Copy ``src`` (broadcast, cast, any device) into this tensor; differentiable with respect to ``src``."""
    if not isinstance(src, (Tensor, int, float, bool)):
        src = self.new_tensor(src, dtype=self.dtype)
    if isinstance(src, Tensor):
        from genesis.ndarray import broadcast_shapes

        if broadcast_shapes("copy_", self.shape, src.shape) != self.shape:
            raise RuntimeError(f"copy_: the size of src {list(src.shape)} cannot be broadcast to the destination "
                               f"size {list(self.shape)}")
    needs_graph = is_grad_enabled() and (self.requires_grad or (isinstance(src, Tensor) and src.requires_grad))
    if needs_graph:
        value = src.to(self.device).to(self.dtype) if isinstance(src, Tensor) else src
        return self._assign_inplace(_overwrite(self, value))
    return self._fill_from(src.ndarray if isinstance(src, Tensor) else src)


Tensor._fill_from = _fill_from
Tensor.fill_ = _fill_
Tensor.zero_ = _zero_
Tensor.copy_ = _copy_


def _addcmul_(self: Tensor, tensor1: Tensor, tensor2: Tensor, value: float = 1) -> Tensor:
    return self.add_(tensor1 * tensor2 * value if value != 1 else tensor1 * tensor2)


def _addcdiv_(self: Tensor, tensor1: Tensor, tensor2: Tensor, value: float = 1) -> Tensor:
    return self.add_(tensor1 / tensor2 * value if value != 1 else tensor1 / tensor2)


def _addcmul(self: Tensor, tensor1: Tensor, tensor2: Tensor, value: float = 1) -> Tensor:
    return self + tensor1 * tensor2 * value


def _addcdiv(self: Tensor, tensor1: Tensor, tensor2: Tensor, value: float = 1) -> Tensor:
    return self + tensor1 / tensor2 * value


Tensor.addcmul_ = _addcmul_
Tensor.addcdiv_ = _addcdiv_
Tensor.addcmul = _addcmul
Tensor.addcdiv = _addcdiv

# ------------------------------------------------------------------ random fills

Tensor.uniform_ = R.uniform_
Tensor.normal_ = R.normal_
Tensor.bernoulli_ = R.bernoulli_
Tensor.random_ = R.random_
Tensor.exponential_ = R.exponential_
Tensor.bernoulli = lambda self, p=None, generator=None: R.bernoulli(self, p, generator)
Tensor.multinomial = R.multinomial

# ------------------------------------------------------------------ elementwise math (genesis.functional.math_extra)

_MATH_EXTRA = ("asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "arcsin", "arccos", "arctan",
               "arcsinh", "arccosh", "arctanh", "arctan2", "erfc", "erfinv", "lgamma", "digamma", "i0", "sinc", "logit",
               "xlogy", "hypot", "copysign", "fmax", "fmin", "float_power", "logaddexp", "logaddexp2", "heaviside",
               "ldexp", "gcd", "lcm", "signbit", "frac", "fix", "sgn", "positive", "deg2rad", "rad2deg", "greater",
               "greater_equal", "less", "less_equal", "not_equal", "mvlgamma", "angle", "isposinf", "isneginf",
               "isreal", "conj", "conj_physical", "resolve_conj", "resolve_neg")
for _name in _MATH_EXTRA:
    setattr(Tensor, _name, getattr(F, _name))

# Unary ops with a backend kernel write straight into memory when no graph is recorded.
for _name, _op in (("asin", "asin"), ("acos", "acos"), ("atan", "atan"), ("sinh", "sinh"), ("cosh", "cosh"),
                   ("asinh", "asinh"), ("acosh", "acosh"), ("atanh", "atanh"), ("arcsin", "asin"),
                   ("arccos", "acos"), ("arctan", "atan"), ("arcsinh", "asinh"), ("arccosh", "acosh"),
                   ("arctanh", "atanh"), ("erfc", "erfc"), ("erfinv", "erfinv"), ("lgamma", "lgamma"),
                   ("digamma", "digamma"), ("i0", "i0")):
    OUT_OF_PLACE.setdefault(_op, getattr(F, _op))
    _method = _make_inplace_unary(_op)
    _method.__name__ = f"{_name}_"
    setattr(Tensor, f"{_name}_", _method)

for _fn in (F.sinc, F.logit, F.xlogy, F.hypot, F.copysign, F.heaviside, F.ldexp, F.gcd, F.lcm, F.frac, F.fix, F.sgn,
            F.deg2rad, F.rad2deg, F.square, F.log10, F.eq, F.ne, F.lt, F.le, F.gt, F.ge,
            F.logical_not, F.logical_xor, F.bitwise_not, F.cumsum, F.cumprod, F.mvlgamma):
    setattr(Tensor, f"{_fn.__name__}_", _make_inplace_general(_fn))
Tensor.arctan2_ = Tensor.atan2_
Tensor.negative_ = Tensor.neg_
Tensor.absolute_ = Tensor.abs_
Tensor.greater_, Tensor.greater_equal_, Tensor.less_, Tensor.less_equal_, Tensor.not_equal_ = (
    Tensor.gt_, Tensor.ge_, Tensor.lt_, Tensor.le_, Tensor.ne_)


def _float_power_(self: Tensor, exponent: Any) -> Tensor:
    """In-place float_power: the tensor must already be float64, the dtype of the result."""
    if self.dtype is not dtypes.float64:
        raise RuntimeError(f"the base given to float_power_ has dtype {self.dtype.name} but the operation's result "
                           "requires dtype float64")
    return _make_inplace_general(F.float_power)(self, exponent)


Tensor.float_power_ = _float_power_
Tensor.real = property(F.real)
Tensor.imag = property(F.imag)
Tensor.is_conj = Tensor.is_neg = lambda self: False
Tensor.conj_physical_ = Tensor.resolve_conj

# ------------------------------------------------------------------ statistics, products and shape composites

for _name in ("nansum", "nanmean", "aminmax", "cummax", "cummin", "logcumsumexp", "nanmedian", "mode", "quantile",
              "nanquantile", "bincount", "histc", "cov", "corrcoef", "diff", "cross", "vdot", "kron", "dist", "addmv",
              "addr", "addbmm", "renorm", "fliplr", "flipud", "rot90", "diag_embed", "diagflat", "hsplit", "vsplit",
              "dsplit", "split_with_sizes", "select_scatter", "slice_scatter", "diagonal_scatter", "scatter_reduce",
              "index_reduce", "unique_consecutive", "msort", "is_same_size", "is_nonzero", "is_signed", "histogram"):
    setattr(Tensor, _name, getattr(F, _name))
for _fn in (F.addmm, F.baddbmm, F.addmv, F.addr, F.addbmm, F.renorm, F.scatter_reduce, F.index_reduce):
    setattr(Tensor, f"{_fn.__name__}_", _make_inplace_general(_fn))
for _name in ("det", "logdet", "slogdet", "matrix_power", "matrix_exp"):
    setattr(Tensor, _name, getattr(LA, _name))
Tensor.inverse = LA.inv
Tensor.pinverse = LA.spectral.pinverse
Tensor.cholesky_solve = LA.solvers.cholesky_solve
Tensor.cholesky_inverse = LA.solvers.cholesky_inverse
Tensor.cholesky = lambda self, upper=False: LA.cholesky(self, upper=upper)
Tensor.swapdims_ = _transpose_
Tensor.swapaxes_ = _transpose_


def _sum_to_size(self: Tensor, *size: Any) -> Tensor:
    """Sum over the dims broadcast from ``size`` (which must expand to this tensor's shape)."""
    target = tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list)) else tuple(size)
    lead = self.ndim - len(target)
    if lead < 0 or any(t not in (1, n) for t, n in zip(target, self.shape[lead:])):
        raise RuntimeError(f"size {{{list(target)}}} is not expandable to size {{{list(self.shape)}}}.")
    dims = [*range(lead), *(lead + k for k, t in enumerate(target) if t == 1 and self.shape[lead + k] != 1)]
    return F.sum(self, dims, keepdim=True).reshape(target) if dims else self


Tensor.sum_to_size = _sum_to_size
