"""Scaled dot-product attention on CUDA: which kernel runs a call, Genesis's Triton flash attention or cuDNN's.

The choice, per call:
1. Only the kernels the switches allow (``genesis.backends.cuda``; ``genesis.nn.attention.sdpa_kernel``) and that
   apply (cuDNN: ``cudnn_sdpa.supports`` and a graph cuDNN agrees to build).
2. With a priority order set, the first of those; otherwise, where both apply, the faster one for the call's shape
   class, timed once (forward plus backward, on the call's own inputs) and cached. A shape class rounds both lengths
   up to a power of two, so growing sequences (decoding) do not time every length; tiny calls, where launch cost
   decides, take the Triton kernel without timing, and so do calls inside a CUDA graph capture until an eager call
   of their class has been timed.

The backward runs on the kernel of its forward: the row statistics say which wrote them (Triton: (B * H, L) base-2
log-sum-exp; cuDNN: (B, H, L, 1) natural-log log-sum-exp). Where cuDNN refuses a backward (s_q = s_kv = 1), the
Triton backward takes over from the same statistics.
"""

from __future__ import annotations

from cuda.bindings import driver as cu

from genesis._impl.cuda import attention_cudnn as cd
from genesis._impl.cuda import nn_fused
from genesis._impl.cuda import runtime as rt
from genesis._impl.cuda import triton_driver as td
from genesis._impl.cuda.creation import contiguous
from genesis.backends import cuda as sdp
from genesis.ndarray import NDArray, check_same_device

_LOG2E = 1.4426950408889634
_SMALL_WORK = 1 << 26  # B * H * L * S * D below which timing is not worth it (a few microseconds of GPU work)
_choices: dict[tuple, str] = {}
timings: dict[tuple, dict[str, float]] = {}  # shape class -> milliseconds (forward + backward) per kernel


def _bucket(n: int) -> int:
    return 1 << max(n - 1, 0).bit_length()


def _key(q: NDArray, k: NDArray, mask: NDArray | None, is_causal: bool) -> tuple:
    B, H, L, D = q.shape
    mask_key = None if mask is None else (mask.dtype, tuple(n != 1 for n in mask.shape))
    return (q.dtype, q.device.index, B, H, k.shape[1], _bucket(L), _bucket(k.shape[2]), D, is_causal, mask_key)


def _capturing() -> bool:
    """True while the current stream records a CUDA graph (timing would synchronize inside the capture)."""
    err, status = cu.cuStreamIsCapturing(rt.stream_handle())
    return status != cu.CUstreamCaptureStatus.CU_STREAM_CAPTURE_STATUS_NONE


def _measure(q: NDArray, k: NDArray, v: NDArray, mask: NDArray | None, is_causal: bool, scale: float) -> str:
    """The kernel with the shorter forward + backward on these inputs (cuDNN only if it builds the graphs)."""
    ms = {}
    for name, fwd, bwd in ((sdp.FLASH, nn_fused.attention, nn_fused.attention_backward),
                           (sdp.CUDNN, cd.attention, cd.attention_backward)):
        def step(fwd=fwd, bwd=bwd) -> None:  # bound now, not when the loop ends
            out, stats = fwd(q, k, v, mask, is_causal, scale)
            bwd(out, q, k, v, mask, out, stats, is_causal, scale)  # out stands in for the output gradient

        try:
            ms[name] = td.do_bench(step, warmup=1, rep=3)
        except Exception:  # cuDNN refused the graph or its run: the Triton kernel it is
            continue
    timings[_key(q, k, mask, is_causal)] = ms
    return min(ms, key=ms.get)


def _choose(q: NDArray, k: NDArray, v: NDArray, mask: NDArray | None, is_causal: bool, scale: float) -> str:
    flash = sdp.flash_sdp_enabled()
    reason = cd.supports(q, k, v, mask) if sdp.cudnn_sdp_enabled() else "disabled"
    if reason is not None:
        if not flash:
            raise RuntimeError(f"scaled_dot_product_attention: no available kernel: the flash kernel is disabled "
                               f"and cuDNN attention cannot run this call ({reason})")
        return sdp.FLASH
    if not flash:
        return sdp.CUDNN
    order = sdp.priority()
    if order:
        return order[0]
    key = _key(q, k, mask, is_causal)
    choice = _choices.get(key)
    if choice is None:
        B, H, L, D = q.shape
        if B * H * L * k.shape[2] * D < _SMALL_WORK:
            choice = sdp.FLASH
        elif _capturing():
            # No timing inside a CUDA graph capture (it synchronizes), and no cuDNN graph built there either: the
            # Triton kernels are known to capture. Decided for good at the next eager call.
            return sdp.FLASH
        else:
            choice = _measure(q, k, v, mask, is_causal, scale)
        _choices[key] = choice
    return choice


def attention(q: NDArray, k: NDArray, v: NDArray, mask: NDArray | None, is_causal: bool,
              scale: float) -> tuple[NDArray, NDArray]:
    """The ``attention`` primitive: (out, row statistics) from the chosen kernel."""
    check_same_device("attention", q, k, v, mask)
    if _choose(q, k, v, mask, is_causal, scale) == sdp.CUDNN:
        try:
            return cd.attention(q, k, v, mask, is_causal, scale)
        except RuntimeError:
            if not sdp.flash_sdp_enabled():
                raise
            # cuDNN refused this exact shape (the choice was made for its shape class): Triton runs it.
    return nn_fused.attention(q, k, v, mask, is_causal, scale)


def attention_backward(grad: NDArray, q: NDArray, k: NDArray, v: NDArray, mask: NDArray | None, out: NDArray,
                       lse: NDArray, is_causal: bool, scale: float) -> tuple[NDArray, NDArray, NDArray]:
    """The ``attention_backward`` primitive, on the kernel that wrote ``lse`` (its row statistics)."""
    if lse.ndim == 4:
        try:
            return cd.attention_backward(grad, q, k, v, mask, out, lse, is_causal, scale)
        except RuntimeError:
            # cuDNN refuses this backward (it takes no s_q = s_kv = 1): the Triton backward runs from the same
            # statistics, converted to its base-2 layout.
            B, H, L, _ = q.shape
            lse = lse.reshape((B * H, L)).binary("mul", _LOG2E)
            out, grad = contiguous(out), contiguous(grad)  # cuDNN's out may be laid out as its q; Triton reads rows
    return nn_fused.attention_backward(grad, q, k, v, mask, out, lse, is_causal, scale)

