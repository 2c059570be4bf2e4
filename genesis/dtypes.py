"""Genesis data types and PyTorch's type-promotion rules.

A ``dtype`` is a small immutable object (``genesis.float32`` ...). Backends map it to their native type by name.
Promotion follows PyTorch: tensors of higher category (bool < integer < floating < complex) win; within a category
the wider type wins; Python scalars only raise the category, never the width (``int8 tensor + 1000`` stays ``int8``,
``int tensor + 2.5`` becomes the default float dtype); zero-dim tensors count like scalars against dimensioned ones.
A complex operand that wins over a floating one keeps the floating one's width (``float64 + complex64`` is
``complex128``; ``float32 tensor + 1j`` is ``complex64``).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np


class dtype:
    """A Genesis element type: name, size in bytes and category."""

    __slots__ = ("name", "itemsize", "category", "is_signed", "_rank")

    def __init__(self, name: str, itemsize: int, category: int, is_signed: bool, rank: int) -> None:
        self.name = name
        self.itemsize = itemsize
        self.category = category  # 0 bool, 1 integer, 2 floating, 3 complex
        self.is_signed = is_signed
        self._rank = rank

    @property
    def is_floating_point(self) -> bool:
        return self.category == 2

    @property
    def is_complex(self) -> bool:
        return self.category == 3

    @property
    def to_real(self) -> dtype:
        """The real dtype of a complex one's parts (``complex64`` -> ``float32``); a real dtype itself."""
        return _REAL_OF.get(self, self)

    @property
    def to_complex(self) -> dtype:
        """The complex dtype whose parts have this floating dtype's width (``float64`` -> ``complex128``; narrower
        floats give ``complex64``, Genesis has no complex32); a complex dtype itself."""
        if self.category == 3:
            return self
        return complex128 if self is float64 else complex64

    def __repr__(self) -> str:
        return f"genesis.{self.name}"

    def __reduce__(self) -> str:
        return self.name


bool_ = dtype("bool", 1, 0, False, 0)
uint8 = dtype("uint8", 1, 1, False, 1)
int8 = dtype("int8", 1, 1, True, 2)
int16 = dtype("int16", 2, 1, True, 3)
int32 = dtype("int32", 4, 1, True, 4)
int64 = dtype("int64", 8, 1, True, 5)
float16 = dtype("float16", 2, 2, True, 6)
bfloat16 = dtype("bfloat16", 2, 2, True, 7)
float32 = dtype("float32", 4, 2, True, 8)
float64 = dtype("float64", 8, 2, True, 9)
complex64 = dtype("complex64", 8, 3, True, 10)
complex128 = dtype("complex128", 16, 3, True, 11)
_REAL_OF = {complex64: float32, complex128: float64}

ALL_DTYPES = (bool_, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64, complex64, complex128)
BY_NAME = {d.name: d for d in ALL_DTYPES}
BY_NAME.update({"float": float32, "double": float64, "half": float16, "long": int64, "int": int32, "short": int16,
                "cfloat": complex64, "cdouble": complex128})

_default_float = float32


def get_default_dtype() -> dtype:
    """The floating dtype used for Python floats and float-producing factories (``float32`` unless changed)."""
    return _default_float


def set_default_dtype(d: dtype) -> None:
    """Set the default floating dtype; only floating dtypes are allowed, as in torch."""
    global _default_float
    if not isinstance(d, dtype) or not d.is_floating_point:
        raise TypeError(f"set_default_dtype: only floating-point types are supported as the default type, got {d}")
    _default_float = d


#: The legacy typed-tensor names of the dtypes that have one (``FloatTensor``...): ``Tensor.type()`` and the
#: legacy constructors of ``genesis.tensor_types``.
LEGACY_TYPE_NAMES = {
    float32: "FloatTensor", float64: "DoubleTensor", float16: "HalfTensor", bfloat16: "BFloat16Tensor",
    uint8: "ByteTensor", int8: "CharTensor", int16: "ShortTensor", int32: "IntTensor", int64: "LongTensor",
    bool_: "BoolTensor",
}
BY_LEGACY_NAME = {name: d for d, name in LEGACY_TYPE_NAMES.items()}
#: torch's C++ names of the dtypes (``c10::ScalarType``), as torch's error messages print them.
SCALAR_TYPE_NAMES = {
    bool_: "Bool", uint8: "Byte", int8: "Char", int16: "Short", int32: "Int", int64: "Long", float16: "Half",
    bfloat16: "BFloat16", float32: "Float", float64: "Double", complex64: "ComplexFloat", complex128: "ComplexDouble",
}
#: torch's C++ names of the element types, as its dtype-mismatch and overflow messages print them.
CPP_TYPE_NAMES = {
    float32: "float", float64: "double", float16: "c10::Half", bfloat16: "c10::BFloat16",
    complex64: "c10::complex<float>", complex128: "c10::complex<double>", int64: "long int", int32: "int",
    int16: "short int", int8: "signed char", uint8: "unsigned char", bool_: "bool",
}


def to_dtype(d: object) -> dtype:
    """Turn a dtype, a name ("float32") or a Python type (float, int, bool) into a Genesis dtype."""
    if isinstance(d, dtype):
        return d
    if d is float:
        return _default_float
    if d is int:
        return int64
    if d is bool:
        return bool_
    if d is complex:
        return _default_float.to_complex
    if isinstance(d, str) and d in BY_NAME:
        return BY_NAME[d]
    name = getattr(d, "name", None) or str(d).replace("torch.", "")
    if name in BY_NAME:
        return BY_NAME[name]
    raise TypeError(f"unknown dtype: {d!r}")


def _promote_pair(a: dtype, b: dtype) -> dtype:
    if a is b:
        return a
    if a.category != b.category:
        high, low = (a, b) if a.category > b.category else (b, a)
        # Complex wins over floating with the wider of the two widths (complex64 with float64 is complex128).
        return complex128 if high.category == 3 and low is float64 else high
    if a.category == 3:
        return a if a._rank > b._rank else b
    if a.category == 2 and {a, b} == {float16, bfloat16}:
        return float32
    if a.category == 1 and {a, b} == {uint8, int8}:
        return int16
    return a if a._rank > b._rank else b


_PROMOTE = {(a, b): _promote_pair(a, b) for a in ALL_DTYPES for b in ALL_DTYPES}


def promote_types(a: dtype, b: dtype) -> dtype:
    """The smallest dtype both ``a`` and ``b`` convert to without losing category (torch.promote_types)."""
    return _PROMOTE[(a, b)]


def scalar_dtype(value: object) -> dtype:
    """The dtype category a Python scalar brings to promotion."""
    if isinstance(value, bool):
        return bool_
    if isinstance(value, int):
        return int64
    if isinstance(value, float):
        return _default_float
    if isinstance(value, complex):
        return _default_float.to_complex
    raise TypeError(f"expected a Python number, got {type(value).__name__}")


def scalar_kind_dtype(kind: int) -> dtype:
    """The dtype of Python scalars of a kind: 0 bool, 1 int (int64), 2 float (the default), 3 complex (its
    complex counterpart)."""
    return (bool_, int64, _default_float, _default_float.to_complex)[kind]


def result_type_scalar(t: dtype, value: object) -> dtype:
    """Result dtype of a dimensioned tensor of dtype ``t`` combined with the Python scalar ``value``."""
    if isinstance(value, bool):
        return t
    if isinstance(value, int):
        return t if t.category >= 1 else int64
    if isinstance(value, float):
        return t if t.category >= 2 else _default_float
    if isinstance(value, complex):
        return t.to_complex if t.category >= 2 else _default_float.to_complex
    raise TypeError(f"expected a Python number, got {type(value).__name__}")


def result_type(a: dtype, a_dim: int, b: dtype, b_dim: int) -> dtype:
    """Promotion between two tensors where zero-dim tensors act like scalars of their category (torch rules)."""
    if (a_dim == 0) == (b_dim == 0) or a.category != b.category:
        if a.category != b.category and (a_dim == 0) != (b_dim == 0):
            # A zero-dim tensor of higher category still wins, with its own dtype; a zero-dim complex one against
            # a dimensioned floating one takes that one's width (torch's combine_categories).
            high, high_dim, low = (a, a_dim, b) if a.category > b.category else (b, b_dim, a)
            return low.to_complex if high.category == 3 and low.category == 2 and high_dim == 0 else high
        return _PROMOTE[(a, b)]
    return a if a_dim != 0 else b


# ------------------------------------------------------------------ numpy element types (the one mapping)

_TO_NUMPY = {d: np.dtype(ml_dtypes.bfloat16 if d is bfloat16 else "bool" if d is bool_ else d.name) for d in ALL_DTYPES}
_FROM_NUMPY = {v: k for k, v in _TO_NUMPY.items()}


def to_numpy(d: dtype) -> np.dtype:
    """The numpy element type holding Genesis dtype ``d`` (bfloat16 is ``ml_dtypes.bfloat16``)."""
    return _TO_NUMPY[d]


def from_numpy(d: np.dtype) -> dtype:
    """The Genesis dtype of numpy element type ``d``; TypeError (torch's message) for types Genesis lacks."""
    found = _FROM_NUMPY.get(np.dtype(d))
    if found is not None:
        return found
    raise TypeError(f"can't convert np.ndarray of type numpy.{np.dtype(d).type.__name__}. The only supported types "
                    "are: float64, float32, float16, complex64, complex128, int64, int32, int16, int8, uint8, and "
                    "bool.")


class iinfo:
    """Machine limits of an integer dtype, as ``torch.iinfo``: ``bits``, ``min``, ``max`` and ``dtype`` (its name)."""

    def __init__(self, type: object) -> None:
        d = to_dtype(type)
        if d is bool_:
            raise TypeError("torch.bool is not supported by torch.iinfo")
        if d.category != 1:
            raise TypeError("torch.iinfo() requires an integer input type. Use torch.finfo to handle 'torch.iinfo'")
        info = np.iinfo(to_numpy(d))
        self.dtype = d.name
        self.bits = int(info.bits)
        self.min = int(info.min)
        self.max = int(info.max)

    def __repr__(self) -> str:
        return f"iinfo(min={float(self.min):g}, max={float(self.max):g}, dtype={self.dtype})"

    def __eq__(self, other: object) -> bool:
        """Equal limits of one dtype (as torch's; unhashable, as torch's)."""
        return isinstance(other, iinfo) and other.dtype == self.dtype

    __hash__ = None  # type: ignore[assignment]


class finfo:
    """Machine limits of a floating dtype, as ``torch.finfo``: ``bits``, ``eps``, ``max``, ``min``, ``tiny`` (the
    smallest positive normal number, also ``smallest_normal``) and ``resolution``; the default dtype without an
    argument; a complex dtype gives its parts' limits."""

    def __init__(self, type: object = None) -> None:
        d = to_dtype(type).to_real if type is not None else _default_float  # complex: its parts' limits, as torch
        if not d.is_floating_point:
            raise TypeError("torch.finfo() requires a floating point input type. Use torch.iinfo to handle "
                            "'torch.finfo'")
        info = ml_dtypes.finfo(to_numpy(d))
        self.dtype = d.name
        self.bits = int(info.bits)
        self.eps = float(info.eps)
        self.max = float(info.max)
        self.min = float(info.min)
        self.tiny = self.smallest_normal = float(info.smallest_normal)
        self.resolution = 10.0 ** -int(info.precision)

    def __repr__(self) -> str:
        # Six significant digits, as torch's C++ stream prints them.
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, eps={self.eps:g}, "
                f"smallest_normal={self.smallest_normal:g}, tiny={self.tiny:g}, dtype={self.dtype})")

    def __eq__(self, other: object) -> bool:
        """Equal limits of one real dtype (a complex dtype's are its parts'; unhashable, as torch's)."""
        return isinstance(other, finfo) and other.dtype == self.dtype

    __hash__ = None  # type: ignore[assignment]
