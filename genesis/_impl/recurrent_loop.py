"""One recurrent layer-direction as a time loop over backend primitives: the ``rnn_layer`` and ``rnn_layer_backward``
primitives of the CPU backend, and of the CUDA backend where cuDNN cannot run the layer.

- forward: one matrix product for every step's input projection ``gi = x W_ih^T + b_ih``; then per step one
  product ``gh = h W_hh^T + b_hh`` and one fused cell (``rnn_cell_``), which writes the new hidden state straight
  into the output and keeps the activations backward needs (LSTM: the four gates and c'; GRU: r, z, n and
  ``h W_hn^T + b_hn``; RNN: the output itself);
- backward: per step in reverse one fused cell gradient (``rnn_cell_backward_``) and one product
  ``d_gh @ W_hh`` for the previous hidden state's gradient; then one product each for ``dW_hh = sum_t d_gh_t^T
  h_{t-1}``, ``dW_ih`` and ``dx``, and one sum each for the biases.

The loop is written once against the backend of its arrays (``x.backend``), so every backend shares it.
"""

from __future__ import annotations

from genesis.ndarray import NDArray

GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}
# Columns of the per-step activations kept for backward, in hidden units (RNN keeps none: its output serves).
_SAVED = {"LSTM": 5, "GRU": 4}


def _step(a: NDArray, t: int) -> NDArray:
    """Row block ``t`` of a (T, B, n) array: a (B, n) view."""
    return a.as_strided(a.shape[1:], a.strides[1:], a.offset + t * a.strides[0])


def _cols(a: NDArray, start: int, width: int) -> NDArray:
    """Columns [start, start + width) of a (B, n) view."""
    return a.as_strided((a.shape[0], width), a.strides, a.offset + start * a.strides[1])


def _states(out: NDArray, reverse: bool) -> NDArray:
    """The (T + 1, B, H) buffer behind the output: h0 at one end (index 0 going forward, T going backward)."""
    T, B, H = out.shape
    return out.as_strided((T + 1, B, H), out.strides, out.offset - (0 if reverse else out.strides[0]))


def rnn_layer(mode: str, x: NDArray, h0: NDArray, c0: NDArray | None, w_ih: NDArray, w_hh: NDArray,
              b_ih: NDArray | None, b_hh: NDArray | None, reverse: bool, training: bool) -> tuple:
    """(output (T, B, H), h_n, c_n or None, saved): ``saved`` holds the per-step activations (None for RNN)."""
    be = x.backend
    T, B, I = x.shape
    H = h0.shape[-1]
    gi = be.linear(x.reshape((T * B, I)), w_ih, b_ih).reshape((T, B, GATES[mode] * H))
    hs = be.empty((T + 1, B, H), x.dtype, x.device)
    be.copy_(_step(hs, T if reverse else 0), h0)
    saved = be.empty((T, B, _SAVED[mode] * H), x.dtype, x.device) if mode in _SAVED else None
    h, c = h0, c0
    for t in (range(T - 1, -1, -1) if reverse else range(T)):
        h_out = _step(hs, t if reverse else t + 1)
        s = _step(saved, t) if saved is not None else None
        be.rnn_cell_(mode, _step(gi, t), be.linear(h, w_hh, b_hh), h, c, h_out, s)
        h = h_out
        if mode == "LSTM":
            c = _cols(s, 4 * H, H)
    out = hs.as_strided((T, B, H), hs.strides, hs.offset + (0 if reverse else hs.strides[0]))
    return out, be.contiguous(h), be.contiguous(c) if mode == "LSTM" else None, (saved,)


def rnn_layer_backward(mode: str, grad_out: NDArray | None, grad_h: NDArray | None, grad_c: NDArray | None,
                       x: NDArray, h0: NDArray, c0: NDArray | None, w_ih: NDArray, w_hh: NDArray, out: NDArray,
                       saved: tuple, reverse: bool, has_bias: bool, mask: tuple) -> tuple:
    """(dx, dh0, dc0, dw_ih, dw_hh, db_ih, db_hh), None where ``mask`` is False."""
    be = x.backend
    saved = saved[0]
    T, B, I = x.shape
    H = h0.shape[-1]
    G = GATES[mode] * H
    hs = _states(out, reverse)
    d_gi = be.empty((T, B, G), x.dtype, x.device)
    d_gh = be.empty((T, B, G), x.dtype, x.device) if mode == "GRU" else d_gi
    carried = mode in _SAVED  # LSTM carries dc, GRU the z part of dh, from step to step
    buffers = [be.empty((B, H), x.dtype, x.device) for _ in range(2)] if carried else [None, None]
    state = grad_c
    order = range(T) if reverse else range(T - 1, -1, -1)
    for k, t in enumerate(order):
        prev = t + 1 if reverse else t - 1  # the step run before t (-1 or T: the initial state)
        first = prev in (-1, T)
        c_prev = (c0 if first else _cols(_step(saved, prev), 4 * H, H)) if mode == "LSTM" else None
        h_prev = _step(hs, t + 1 if reverse else t)
        s = _step(saved, t) if saved is not None else _step(out, t)
        g_out = _step(grad_out, t) if grad_out is not None else None
        new_state = buffers[k % 2]
        be.rnn_cell_backward_(mode, g_out, grad_h, state, h_prev, c_prev, s, _step(d_gi, t),
                              _step(d_gh, t) if mode == "GRU" else None, new_state)
        state = new_state
        if k < T - 1 or mask[1]:
            grad_h = be.matmul(_step(d_gh, t), w_hh)
    dh0 = dc0 = None
    if mask[1]:
        dh0 = be.binary("add", grad_h, state) if mode == "GRU" else grad_h
    if mask[2] and mode == "LSTM":
        dc0 = be.contiguous(state)
    flat_gi = d_gi.reshape((T * B, G))
    flat_gh = d_gh.reshape((T * B, G))
    dx = be.matmul(flat_gi, w_ih).reshape((T, B, I)) if mask[0] else None
    dw_ih = be.matmul(flat_gi.transpose(0, 1), x.reshape((T * B, I))) if mask[3] else None
    if mask[4]:
        h_prev_all = hs.as_strided((T, B, H), hs.strides, hs.offset + (hs.strides[0] if reverse else 0))
        dw_hh = be.matmul(flat_gh.transpose(0, 1), h_prev_all.reshape((T * B, H)))
    else:
        dw_hh = None
    db_ih = be.reduce("sum", flat_gi, (0,), False) if has_bias and mask[5] else None
    db_hh = be.reduce("sum", flat_gh, (0,), False) if has_bias and mask[6] else None
    return dx, dh0, dc0, dw_ih, dw_hh, db_ih, db_hh
