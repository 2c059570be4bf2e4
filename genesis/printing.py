"""Torch-like text form of tensors: ``tensor([1., 2.], requires_grad=True)``."""

from __future__ import annotations

from typing import Any

import numpy as np

from genesis import dtypes


def _format_array(t: Any) -> str:
    array = t.detach().cpu().ndarray.numpy()
    if t.dtype is dtypes.bfloat16 or t.dtype is dtypes.float16:
        array = array.astype(np.float32)
    if t.dtype.is_floating_point:
        finite = array[np.isfinite(array)] if array.size else array
        integral = finite.size == 0 or bool(np.all(finite == np.round(finite)))
        big = finite.size and (np.abs(finite).max() >= 1e8 or (np.abs(finite[finite != 0]).min(initial=1) < 1e-4))
        if integral and not big:
            formatter = {"float_kind": lambda v: f"{v:.0f}." if np.isfinite(v) else str(v)}
        elif big:
            formatter = {"float_kind": lambda v: f"{v:.4e}"}
        else:
            formatter = {"float_kind": lambda v: f"{v:.4f}"}
        return np.array2string(array, separator=", ", prefix="tensor(", formatter=formatter, threshold=1000,
                               edgeitems=3, max_line_width=80)
    if t.dtype is dtypes.bool_:
        return np.array2string(array, separator=", ", prefix="tensor(", threshold=1000, edgeitems=3,
                               formatter={"bool": lambda v: "True" if v else "False"}, max_line_width=80)
    return np.array2string(array, separator=", ", prefix="tensor(", threshold=1000, edgeitems=3, max_line_width=80)


def tensor_repr(t: Any) -> str:
    """The text torch would print for a tensor of the same values, dtype, device and autograd state."""
    body = _format_array(t) if t.numel() else "[]"
    extras = []
    if t.numel() == 0 and t.ndim != 1:
        extras.append(f"size={tuple(t.shape)}")
    if t.device.type != "cpu":
        extras.append(f"device='{t.device}'")
    default_shown = (dtypes.get_default_dtype(), dtypes.int64, dtypes.bool_)
    if t.dtype not in default_shown:
        extras.append(f"dtype={t.dtype}")
    if t.grad_fn is not None:
        extras.append(f"grad_fn=<{t.grad_fn.name()}>")
    elif t.requires_grad:
        extras.append("requires_grad=True")
    return "tensor(" + ", ".join([body] + extras) + ")"
