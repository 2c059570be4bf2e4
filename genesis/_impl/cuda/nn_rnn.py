"""Launchers of the fused recurrent cells (``kernels/nn_rnn.py``): check, allocate, launch.

They implement the ``rnn_cell_`` and ``rnn_cell_backward_`` primitives of the backend contract; the time loop and
the products around each step are in ``genesis.ops.recurrent`` (the products through cuBLASLt, ``blas.py``).
"""

from __future__ import annotations

from genesis import dtypes
from genesis._impl.cuda import runtime as rt
from genesis._impl.cuda import triton_driver as td
from genesis._impl.cuda.creation import contiguous
from genesis._impl.cuda.kernels import nn_rnn as rk
from genesis._impl.cuda.launch import _next_pow2, _pointers
from genesis.ndarray import NDArray, check_same_device

_FWD = td.Kernel(rk.rnn_cell_fwd)
_BWD = td.Kernel(rk.rnn_cell_bwd)
_MODES = ("LSTM", "GRU", "RNN_TANH", "RNN_RELU")


def _rows(x: NDArray) -> tuple[NDArray, int]:
    """``x`` (B, n), or a contiguous copy where its columns are not adjacent, and its row stride."""
    if x.strides[1] != 1 and x.shape[1] > 1:
        x = contiguous(x)
    return x, x.strides[0]


def _out_rows(x: NDArray, what: str) -> int:
    """The row stride of an array the kernel writes (it must have adjacent columns: no copy can stand in)."""
    if x.strides[1] != 1 and x.shape[1] > 1:
        raise RuntimeError(f"rnn_cell: {what} must have unit column stride, got strides {x.strides}")
    return x.strides[0]


def _block(h: int) -> tuple[int, int]:
    """(BLOCK_H, num_warps): one program per row and up to 1024 hidden units."""
    block = min(max(_next_pow2(h), 16), 1024)
    return block, 4 if block <= 512 else 8


def rnn_cell_(mode: str, gi: NDArray, gh: NDArray, h: NDArray, c: NDArray | None, h_out: NDArray,
              saved: NDArray | None) -> None:
    if mode not in _MODES:
        raise ValueError(f"rnn_cell_: unknown mode {mode!r} (expected one of {_MODES})")
    check_same_device("rnn_cell_", gi, gh, h, c, h_out, saved)
    B, H = h_out.shape
    if B == 0 or H == 0:
        return
    (gi, s_gi), (gh, s_gh), (h, s_h) = _rows(gi), _rows(gh), _rows(h)
    c, s_c = _rows(c) if c is not None else (h, s_h)
    s_out = _out_rows(h_out, "h_out")
    s_saved = _out_rows(saved, "saved") if saved is not None else s_out
    saved = saved if saved is not None else h_out  # unused by the Elman cells
    arrays = (gi, gh, h, c, h_out, saved)
    ptrs, sig = _pointers(arrays)
    block, warps = _block(H)
    sig = sig + ("i32",) * 7
    rt.ensure_device(h_out.device.index)
    go = _FWD.launcher(sig, (mode, h_out.dtype is dtypes.float64, block), warps)
    go(B, (H + block - 1) // block, 1, *ptrs, H, s_gi, s_gh, s_h, s_c, s_out, s_saved)


def rnn_cell_backward_(mode: str, grad_out: NDArray | None, grad_h: NDArray | None, grad_state: NDArray | None,
                       h: NDArray, c: NDArray | None, saved: NDArray, grad_gi: NDArray, grad_gh: NDArray | None,
                       grad_state_prev: NDArray | None) -> None:
    if mode not in _MODES:
        raise ValueError(f"rnn_cell_backward_: unknown mode {mode!r} (expected one of {_MODES})")
    check_same_device("rnn_cell_backward_", grad_out, grad_h, grad_state, h, c, saved, grad_gi, grad_gh,
                      grad_state_prev)
    B, H = h.shape
    if B == 0 or H == 0:
        return
    (h, s_h), (saved, s_saved) = _rows(h), _rows(saved)
    # Absent inputs are replaced by h (never read: the kernel's HAS_* flags are off, or the mode ignores them).
    g_out, s_go = _rows(grad_out) if grad_out is not None else (h, s_h)
    g_h, s_gh = _rows(grad_h) if grad_h is not None else (h, s_h)
    g_state, s_gs = _rows(grad_state) if grad_state is not None else (h, s_h)
    c, s_c = _rows(c) if c is not None else (h, s_h)
    s_dgi = _out_rows(grad_gi, "grad_gi")
    d_gh, s_dgh = (grad_gh, _out_rows(grad_gh, "grad_gh")) if grad_gh is not None else (grad_gi, s_dgi)
    d_state, s_ds = ((grad_state_prev, _out_rows(grad_state_prev, "grad_state_prev"))
                     if grad_state_prev is not None else (grad_gi, s_dgi))
    arrays = (g_out, g_h, g_state, h, c, saved, grad_gi, d_gh, d_state)
    ptrs, sig = _pointers(arrays)
    block, warps = _block(H)
    sig = sig + ("i32",) * 10
    consts = (mode, grad_out is not None, grad_h is not None, grad_state is not None,
              grad_gi.dtype is dtypes.float64, block)
    rt.ensure_device(h.device.index)
    go = _BWD.launcher(sig, consts, warps)
    go(B, (H + block - 1) // block, 1, *ptrs, H, s_go, s_gh, s_gs, s_h, s_c, s_saved, s_dgi, s_dgh, s_ds)
