"""One recurrent layer-direction as a time loop over backend primitives: the ``rnn_layer`` and ``rnn_layer_backward``
primitives of the CPU backend, and of the CUDA backend where cuDNN cannot run the layer.

- forward: one matrix product for every step's input projection ``gi = x W_ih^T + b_ih``; then per step one
  product ``gh = h W_hh^T + b_hh`` and one fused cell (``rnn_cell_``), which writes the new hidden state straight
  into the output and keeps the activations backward needs (LSTM: the four gates and c'; GRU: r, z, n and
  ``h W_hn^T + b_hn``; RNN: the output itself);
- backward: per step in reverse one fused cell gradient (``rnn_cell_backward_``) and one product
  ``d_gh @ W_hh`` for the previous hidden state's gradient; then one product each for ``dW_hh = sum_t d_gh_t^T
  h_{t-1}``, ``dW_ih`` and ``dx``, and one sum each for the biases.

Every array is handled as rows: a padded (T, B, n) sequence is T steps of B rows, a packed one (``batch_sizes``,
as ``torch.nn.utils.rnn.PackedSequence``) steps of ``batch_sizes[t]`` rows, the sequences sorted by decreasing
length, so that step t's rows are the first rows of the step before it. Going forward a sequence ends at its own
last step, where its final state is read; going backward (``reverse``) it joins at its own last step, from its
initial state. The loop is written once against the backend of its arrays (``x.backend``), so every backend shares
it.
"""

from __future__ import annotations

from genesis.ndarray import NDArray

GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}
# Columns of the per-step activations kept for backward, in hidden units (RNN keeps none: its output serves).
_SAVED = {"LSTM": 5, "GRU": 4}


def _rows(a: NDArray, start: int, n: int) -> NDArray:
    """Rows [start, start + n) of a 2-D array: a view."""
    return a.as_strided((n, a.shape[1]), a.strides, a.offset + start * a.strides[0])


def _cols(a: NDArray, start: int, width: int) -> NDArray:
    """Columns [start, start + width) of a 2-D array: a view."""
    return a.as_strided((a.shape[0], width), a.strides, a.offset + start * a.strides[1])


class _Steps:
    """Where each step's rows are, in which order the steps run, and which rows carry on from the step before."""

    def __init__(self, sizes: tuple[int, ...], reverse: bool) -> None:
        self.sizes, self.reverse = sizes, reverse
        self.T, self.B = len(sizes), sizes[0]
        self.offsets = [0]
        for b in sizes:
            self.offsets.append(self.offsets[-1] + b)
        self.N = self.offsets[-1]
        self.uniform = all(b == self.B for b in sizes)
        self.order = range(self.T - 1, -1, -1) if reverse else range(self.T)

    def before(self, t: int) -> int | None:
        """The step run just before step t, or None for the first one."""
        s = t + 1 if self.reverse else t - 1
        return s if 0 <= s < self.T else None

    def carried(self, t: int) -> int:
        """How many of step t's rows carry on from the step run before it (the others start from the initial
        state)."""
        s = self.before(t)
        return 0 if s is None else min(self.sizes[t], self.sizes[s])

    def step(self, a: NDArray, t: int, n: int | None = None) -> NDArray:
        """The first ``n`` (default: all) of step t's rows of a packed (N, m) array."""
        return _rows(a, self.offsets[t], self.sizes[t] if n is None else n)


def as_rows(x: NDArray, batch_sizes: tuple[int, ...] | None) -> tuple[NDArray, tuple[int, ...]]:
    """``x`` as packed rows (N, I) and its steps' sizes."""
    if batch_sizes is not None:
        return x, tuple(batch_sizes)
    T, B, I = x.shape
    return x.reshape((T * B, I)), (B,) * T


def _joined(be, top: NDArray | None, k: int, rest: NDArray | None, b: int, like: NDArray) -> NDArray | None:
    """A (b, H) array: rows [0, k) from ``top``, rows [k, b) from the same rows of ``rest`` (zero where None);
    None when every row is zero."""
    if k == b:
        return _rows(top, 0, b)
    if k == 0:
        return _rows(rest, 0, b) if rest is not None else None
    out = be.full((b, like.shape[-1]), 0, like.dtype, like.device) if rest is None else be.empty(
        (b, like.shape[-1]), like.dtype, like.device)
    be.copy_(_rows(out, 0, k), _rows(top, 0, k))
    if rest is not None:
        be.copy_(_rows(out, k, b - k), _rows(rest, k, b - k))
    return out


def _previous(be, steps: _Steps, t: int, out: NDArray, saved: NDArray | None, h0: NDArray, c0: NDArray | None,
              mode: str) -> tuple[NDArray, NDArray | None]:
    """Step t's previous hidden state (B_t, P) and, for LSTM, cell state (B_t, H)."""
    b, k, s = steps.sizes[t], steps.carried(t), steps.before(t)
    h = _joined(be, steps.step(out, s, k) if k else None, k, h0, b, h0)
    c = None
    if mode == "LSTM":
        H = c0.shape[-1]
        c = _joined(be, _cols(steps.step(saved, s, k), 4 * H, H) if k else None, k, c0, b, c0)
    return h, c


def _finals(be, steps: _Steps, a: NDArray) -> NDArray:
    """Each sequence's row of the (N, m) per-step array ``a`` at its last step (step 0 going backward)."""
    if steps.reverse or steps.uniform:
        return be.contiguous(steps.step(a, 0 if steps.reverse else steps.T - 1))
    final = be.empty((steps.B, a.shape[1]), a.dtype, a.device)
    for t in range(steps.T):
        k = steps.sizes[t + 1] if t + 1 < steps.T else 0  # rows [k, sizes[t]) end at step t
        if k < steps.sizes[t]:
            be.copy_(_rows(final, k, steps.sizes[t] - k), _rows(a, steps.offsets[t] + k, steps.sizes[t] - k))
    return final


def rnn_layer(mode: str, x: NDArray, h0: NDArray, c0: NDArray | None, w_ih: NDArray, w_hh: NDArray,
              b_ih: NDArray | None, b_hh: NDArray | None, w_hr: NDArray | None, reverse: bool, training: bool,
              batch_sizes: tuple[int, ...] | None) -> tuple:
    """(output, h_n, c_n or None, saved): ``saved`` holds the per-step activations (None for RNN) and, with an LSTM
    projection ``w_hr`` (P, H), the hidden states before it."""
    be = x.backend
    flat, sizes = as_rows(x, batch_sizes)
    steps = _Steps(sizes, reverse)
    N, B, P = steps.N, steps.B, h0.shape[-1]  # P: the width of h (the projection's, or H)
    H = w_hh.shape[0] // GATES[mode]
    gi = be.linear(flat, w_ih, b_ih)
    # The outputs sit in one buffer with h0 beside them (before them going forward, after them going backward), so
    # that for padded input every step's previous hidden state is one strided view of it, in both passes.
    hs = be.empty((N + B, P), x.dtype, x.device)
    be.copy_(_rows(hs, N if reverse else 0, B), h0)
    out = _rows(hs, 0 if reverse else B, N)
    saved = be.empty((N, _SAVED[mode] * H), x.dtype, x.device) if mode in _SAVED else None
    raw = be.empty((N, H), x.dtype, x.device) if w_hr is not None else None
    for t in steps.order:
        h, c = _previous(be, steps, t, out, saved, h0, c0, mode)
        s = steps.step(saved, t) if saved is not None else None
        cell_out = steps.step(raw if w_hr is not None else out, t)
        be.rnn_cell_(mode, steps.step(gi, t), be.linear(h, w_hh, b_hh), cell_out if w_hr is not None else h, c,
                     cell_out, s)
        if w_hr is not None:
            be.copy_(steps.step(out, t), be.linear(cell_out, w_hr, None))
    c_n = _finals(be, steps, _cols(saved, 4 * H, H)) if mode == "LSTM" else None
    output = out if batch_sizes is not None else out.reshape((steps.T, B, P))
    return output, _finals(be, steps, out), c_n, (saved, raw)


def rnn_layer_backward(mode: str, grad_out: NDArray | None, grad_h: NDArray | None, grad_c: NDArray | None,
                       x: NDArray, h0: NDArray, c0: NDArray | None, w_ih: NDArray, w_hh: NDArray,
                       w_hr: NDArray | None, out: NDArray, saved: tuple, reverse: bool, has_bias: bool, mask: tuple,
                       batch_sizes: tuple[int, ...] | None) -> tuple:
    """(dx, dh0, dc0, dw_ih, dw_hh, db_ih, db_hh, dw_hr), None where ``mask`` is False (and dw_hr without a
    projection)."""
    be = x.backend
    saved, raw = saved
    flat, sizes = as_rows(x, batch_sizes)
    steps = _Steps(sizes, reverse)
    N, B, P = steps.N, steps.B, h0.shape[-1]
    H = w_hh.shape[0] // GATES[mode]
    out = out.reshape((N, P))
    grad_out = grad_out.reshape((N, P)) if grad_out is not None else None
    G = GATES[mode] * H
    d_gi = be.empty((N, G), x.dtype, x.device)
    d_gh = be.empty((N, G), x.dtype, x.device) if mode == "GRU" else d_gi
    d_proj = be.empty((N, P), x.dtype, x.device) if w_hr is not None else None  # gradients of the projected h
    carried = mode in _SAVED  # LSTM carries dc, GRU the z part of dh, from step to step
    buffers = [be.empty((B, H), x.dtype, x.device) for _ in range(2)] if carried else [None, None]
    dh0 = be.empty((B, P), x.dtype, x.device) if mask[1] else None
    dc0 = be.empty((B, H), x.dtype, x.device) if mask[2] and mode == "LSTM" else None
    # Each step's incoming gradients: rows that carry on into the step run after it (in the forward pass) get that
    # step's gradients; the rows whose sequence ends at it get the final states' gradients (grad_h, grad_c).
    rec = state = None  # from the step handled just before (the one run after, in the forward pass)
    prev_t = None
    for k, t in enumerate(reversed(steps.order)):
        b = steps.sizes[t]
        n = min(b, steps.sizes[prev_t]) if prev_t is not None else 0  # rows fed by the step run after t
        dh = _joined(be, rec, n, grad_h, b, h0)
        st = _joined(be, state, n, grad_c if mode == "LSTM" else None, b, c0 if mode == "LSTM" else h0) \
            if carried else None
        h, c = _previous(be, steps, t, out, saved, h0, c0, mode)
        s = steps.step(saved, t) if saved is not None else steps.step(out, t)
        g_out = steps.step(grad_out, t) if grad_out is not None else None
        if w_hr is not None:  # through the projection: the cell's output gradient is (g_out + dh) W_hr
            dp = steps.step(d_proj, t)
            if g_out is None and dh is None:
                be.copy_(dp, 0)
            else:
                be.copy_(dp, g_out if dh is None else dh if g_out is None else be.binary("add", g_out, dh))
            g_out, dh = be.matmul(dp, w_hr), None
        new_state = _rows(buffers[k % 2], 0, b) if carried else None
        be.rnn_cell_backward_(mode, g_out, dh, st, steps.step(raw, t) if w_hr is not None else h, c, s,
                              steps.step(d_gi, t), steps.step(d_gh, t) if mode == "GRU" else None, new_state)
        state = new_state
        starts = steps.carried(t)  # rows [starts, b) began from the initial state at this step
        if k < steps.T - 1 or mask[1]:
            rec = be.matmul(steps.step(d_gh, t), w_hh)
        if starts < b:
            rows = b - starts
            if dh0 is not None:
                dh_first = _rows(rec, starts, rows)
                be.copy_(_rows(dh0, starts, rows),
                         be.binary("add", dh_first, _rows(state, starts, rows)) if mode == "GRU" else dh_first)
            if dc0 is not None:
                be.copy_(_rows(dc0, starts, rows), _rows(state, starts, rows))
        prev_t = t
    dx = be.matmul(d_gi, w_ih) if mask[0] else None
    if dx is not None and batch_sizes is None:
        dx = dx.reshape(x.shape)
    dw_ih = be.matmul(d_gi.transpose(0, 1), flat) if mask[3] else None
    dw_hh = None
    if mask[4]:
        if steps.uniform:
            hs = out.as_strided((N + B, P), out.strides, out.offset - (0 if reverse else B * out.strides[0]))
            h_prev_all = _rows(hs, B if reverse else 0, N)
        else:
            h_prev_all = be.empty((N, P), x.dtype, x.device)
            for t in range(steps.T):
                be.copy_(steps.step(h_prev_all, t), _previous(be, steps, t, out, saved, h0, c0, mode)[0])
        dw_hh = be.matmul(d_gh.transpose(0, 1), h_prev_all)
    db_ih = be.reduce("sum", d_gi, (0,), False) if has_bias and mask[5] else None
    db_hh = be.reduce("sum", d_gh, (0,), False) if has_bias and mask[6] else None
    dw_hr = be.matmul(d_proj.transpose(0, 1), raw) if w_hr is not None and mask[7] else None
    return dx, dh0, dc0, dw_ih, dw_hh, db_ih, db_hh, dw_hr
