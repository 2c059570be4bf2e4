"""The ``out=`` convention shared by the inference-oriented functions (linear, rms_norm, silu, swiglu, rope)."""

from __future__ import annotations

from genesis.autograd import is_grad_enabled
from genesis.tensor import Tensor


def write_out(op: str, result: Tensor, out: Tensor | None) -> Tensor:
    """Return ``result``, or copy it into ``out`` (same shape and dtype required) and return ``out``."""
    if out is None:
        return result
    check_out(op, out, tuple(result.shape), result)
    out.ndarray.copy_(result.ndarray)
    out._bump_version()
    return out


def check_out(op: str, out: Tensor, shape: tuple[int, ...], like: Tensor, inputs: tuple = ()) -> None:
    """``out=`` must match the result (``like`` gives its dtype) and cannot take part in autograd (as in torch):
    neither ``out``, ``like`` nor any of the other ``inputs`` (None allowed) may require grad in grad mode."""
    if not isinstance(out, Tensor):
        raise TypeError(f"{op}: out must be a Tensor, got {type(out).__name__}")
    if is_grad_enabled() and (out.requires_grad or any(t is not None and t.requires_grad for t in (like, *inputs))):
        raise RuntimeError(f"{op}(): functions with out=... arguments don't support automatic differentiation, "
                           "but one of the arguments requires grad.")
    if tuple(out.shape) != shape:
        raise RuntimeError(f"{op}: out has shape {tuple(out.shape)} but the result has shape {shape}")
    if out.dtype is not like.dtype:
        raise RuntimeError(f"{op}: out has dtype {out.dtype} but the result has dtype {like.dtype}")
