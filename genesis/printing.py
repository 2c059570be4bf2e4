"""Torch-like text form of tensors: ``tensor([1., 2.], requires_grad=True)``.

The layout follows torch's printer: one formatter per tensor picks integer, fixed-point (4 decimals) or scientific
notation from the nonzero finite values and pads every element to a common width; tensors of more than 1000
elements show their first and last 3 entries per dimension; lines wrap at 80 columns.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from genesis import dtypes

PRECISION = 4
THRESHOLD = 1000
EDGEITEMS = 3
LINEWIDTH = 80
SCI_MODE: bool | None = None  # None: chosen per tensor from its values

_PROFILES = {"default": (4, 1000, 3, 80), "short": (2, 1000, 2, 80), "full": (4, math.inf, 3, 80)}


def set_printoptions(precision: int | None = None, threshold: float | None = None, edgeitems: int | None = None,
                     linewidth: int | None = None, profile: str | None = None, sci_mode: bool | None = None) -> None:
    """Set how tensors print, as ``torch.set_printoptions``: digits after the point, the element count above which
    a tensor is summarized, the entries shown at each end of a summarized dim, the line width, a ``profile``
    ("default", "short" or "full") applied first, and ``sci_mode`` (True/False forces scientific or fixed notation,
    None lets each tensor choose)."""
    global PRECISION, THRESHOLD, EDGEITEMS, LINEWIDTH, SCI_MODE
    if profile is not None:
        if profile not in _PROFILES:
            raise ValueError(f"set_printoptions: unknown profile {profile!r} (expected one of {list(_PROFILES)})")
        PRECISION, THRESHOLD, EDGEITEMS, LINEWIDTH = _PROFILES[profile]
    if precision is not None:
        PRECISION = precision
    if threshold is not None:
        THRESHOLD = threshold
    if edgeitems is not None:
        EDGEITEMS = edgeitems
    if linewidth is not None:
        LINEWIDTH = linewidth
    SCI_MODE = sci_mode


class _Formatter:
    """Chooses the notation and the common width of the elements of one tensor (torch's ``_Formatter``)."""

    def __init__(self, values: np.ndarray, floating: bool) -> None:
        self.floating = floating
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        flat = values.reshape(-1)
        if not floating:
            for value in flat.tolist():
                self.max_width = max(self.max_width, len(str(value)))
            return
        finite = flat[np.isfinite(flat) & (flat != 0)].astype(np.float64)
        if finite.size == 0:
            return
        magnitudes = np.abs(finite)
        low, high = float(magnitudes.min()), float(magnitudes.max())
        self.int_mode = bool(np.all(finite == np.ceil(finite)))
        if self.int_mode:
            self.sci_mode = high / low > 1000.0 or high > 1.0e8 if SCI_MODE is None else SCI_MODE
            width_of = (lambda v: len(f"{v:.{PRECISION}e}")) if self.sci_mode else (lambda v: len(f"{v:.0f}") + 1)
        else:
            self.sci_mode = high / low > 1000.0 or high > 1.0e8 or low < 1.0e-4 if SCI_MODE is None else SCI_MODE
            width_of = (lambda v: len(f"{v:.{PRECISION}e}")) if self.sci_mode else (lambda v: len(f"{v:.{PRECISION}f}"))
        for value in finite.tolist():
            self.max_width = max(self.max_width, width_of(value))

    def format(self, value: Any) -> str:
        if not self.floating:
            text = str(value)
        elif self.sci_mode:
            text = f"{value:{self.max_width}.{PRECISION}e}"
        elif self.int_mode:
            text = f"{value:.0f}"
            if not (math.isinf(value) or math.isnan(value)):
                text += "."
        else:
            text = f"{value:.{PRECISION}f}"
        return (self.max_width - len(text)) * " " + text


class _ComplexFormatter:
    """Complex elements as torch prints them: real parts and imaginary parts each with a formatter of their own,
    joined as ``1.5000-2.j``."""

    def __init__(self, values: np.ndarray) -> None:
        self.real = _Formatter(values.real, True)
        self.imag = _Formatter(values.imag, True)
        self.max_width = self.real.max_width + self.imag.max_width + 1

    def format(self, value: complex) -> str:
        imag = (self.imag.format(value.imag) + "j").lstrip()
        return self.real.format(value.real) + (imag if imag[0] in "+-" else "+" + imag)


def _summarized(values: np.ndarray) -> np.ndarray:
    """The edge entries shown of a large array (they alone decide the format)."""
    if values.ndim == 0:
        return values
    if values.ndim == 1:
        if values.shape[0] > 2 * EDGEITEMS:
            return np.concatenate((values[:EDGEITEMS], values[-EDGEITEMS:]))
        return values
    rows = list(range(values.shape[0]))
    if values.shape[0] > 2 * EDGEITEMS:
        rows = rows[:EDGEITEMS] + rows[-EDGEITEMS:]
    return np.stack([_summarized(values[i]) for i in rows])


def _vector(values: np.ndarray, indent: int, summarize: bool, formatter: _Formatter | _ComplexFormatter) -> str:
    per_line = max(1, math.floor((LINEWIDTH - indent) / (formatter.max_width + 2)))
    if summarize and values.shape[0] > 2 * EDGEITEMS:
        items = [formatter.format(v) for v in values[:EDGEITEMS].tolist()] + [" ..."] + \
            [formatter.format(v) for v in values[-EDGEITEMS:].tolist()]
    else:
        items = [formatter.format(v) for v in values.tolist()]
    lines = [", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _nested(values: np.ndarray, indent: int, summarize: bool, formatter: _Formatter | _ComplexFormatter) -> str:
    if values.ndim == 0:
        return formatter.format(values.item())
    if values.ndim == 1:
        return _vector(values, indent, summarize, formatter)
    n = values.shape[0]
    if summarize and n > 2 * EDGEITEMS:
        parts = [_nested(values[i], indent + 1, summarize, formatter) for i in range(EDGEITEMS)] + ["..."] + \
            [_nested(values[i], indent + 1, summarize, formatter) for i in range(n - EDGEITEMS, n)]
    else:
        parts = [_nested(values[i], indent + 1, summarize, formatter) for i in range(n)]
    return "[" + ("," + "\n" * (values.ndim - 1) + " " * (indent + 1)).join(parts) + "]"


def _body(t: Any, indent: int) -> str:
    values = t.detach().cpu().ndarray.numpy()
    if t.dtype is dtypes.bfloat16 or t.dtype is dtypes.float16:
        values = values.astype(np.float32)
    summarize = values.size > THRESHOLD
    shown = _summarized(values) if summarize else values
    formatter = _ComplexFormatter(shown) if t.dtype.is_complex else _Formatter(shown, t.dtype.is_floating_point)
    return _nested(values, indent, summarize, formatter)


def tensor_repr(t: Any) -> str:
    """The text torch would print for a tensor of the same values, dtype, device and autograd state."""
    prefix = "tensor("
    indent = len(prefix)
    suffixes = []
    if t.device.type != "cpu":
        suffixes.append(f"device='{t.device}'")
    if t.device.type == "meta":  # no values to print: their shape and dtype
        body = "..."
        suffixes.append(f"size={tuple(t.shape)}")
        if t.dtype is not dtypes.get_default_dtype():
            suffixes.append(f"dtype={t.dtype}")
    elif t.numel() == 0:
        body = "[]"
        if t.ndim != 1:
            suffixes.append(f"size={tuple(t.shape)}")
        if t.dtype is not dtypes.get_default_dtype():
            suffixes.append(f"dtype={t.dtype}")
    else:
        body = _body(t, indent)
        default = dtypes.get_default_dtype()
        if t.dtype not in (default, default.to_complex, dtypes.int64, dtypes.bool_):
            suffixes.append(f"dtype={t.dtype}")
    if t.grad_fn is not None:
        suffixes.append(f"grad_fn=<{t.grad_fn.name()}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    text = prefix + body
    last_line = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        if last_line + len(suffix) + 2 > LINEWIDTH:
            text += ",\n" + " " * indent + suffix
            last_line = indent + len(suffix)
        else:
            text += ", " + suffix
            last_line += len(suffix) + 2
    return text + ")"
