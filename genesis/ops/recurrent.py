"""One layer in one direction of ``nn.RNN``, ``nn.LSTM`` or ``nn.GRU`` as one autograd node, and one step of their
cells (``nn.LSTMCell``, ...) as one node.

``RecurrentLayer`` runs a padded (T, B, I) sequence, or a packed one (``PackedSequence`` data and batch sizes),
through the backend's ``rnn_layer`` primitive and its gradient through ``rnn_layer_backward``. On cuda that is
cuDNN's RNN (one call per direction and pass, weights packed into cuDNN's layout); on the CPU, and on cuda without
cuDNN, it is a time loop of fused cells (``genesis._impl.recurrent_loop``). The cells follow torch: LSTM
``c' = σ(f) c + σ(i) tanh(g)``, ``h' = σ(o) tanh(c')``; GRU ``n = tanh(gi_n + r (h W_hn^T + b_hn))``,
``h' = (1 - z) n + z h``; Elman ``h' = tanh`` or ``relu(gi + gh)``. Half-precision cells compute in float32. Under
``create_graph`` the layer's and the cell's gradients are taken through the same steps written in tensor ops, so
that they are differentiable again (double backward, as torch's CPU layers).
"""

from __future__ import annotations

from genesis.autograd import Primitive, is_grad_enabled
from genesis.autograd import grad as autograd_grad
from genesis.ndarray import NDArray
from genesis.ops.join import cat, stack
from genesis.tensor import Tensor


class RecurrentLayer(Primitive):
    """Inputs ``x`` (T, B, I), or packed (N, I) with ``batch_sizes`` as a ``PackedSequence``'s, ``h0`` (B, P),
    ``c0`` (B, H) or None, ``w_ih`` (G*H, I), ``w_hh`` (G*H, P), ``b_ih``/``b_hh`` (G*H,) or None, and an LSTM's
    projection ``w_hr`` (P, H) or None (P = H), all one dtype. Returns (output (T, B, P) or packed (N, P), h_n) or,
    for LSTM, (output, h_n, c_n); ``reverse`` runs the steps from T - 1 down to 0 (the backward direction of a
    bidirectional layer)."""

    @staticmethod
    def forward(ctx, x: NDArray, h0: NDArray, c0: NDArray | None, w_ih: NDArray, w_hh: NDArray, b_ih: NDArray | None,
                b_hh: NDArray | None, w_hr: NDArray | None, mode: str, reverse: bool,
                batch_sizes: tuple[int, ...] | None) -> tuple:
        out, h_n, c_n, saved = x.backend.rnn_layer(mode, x, h0, c0, w_ih, w_hh, b_ih, b_hh, w_hr, reverse,
                                                   any(ctx.needs_input_grad), batch_sizes)
        ctx.save_for_backward(x, h0, c0, w_ih, w_hh, w_hr, out, b_ih, b_hh, *saved)
        ctx.params = (mode, reverse, b_ih is not None, batch_sizes)
        ctx.set_materialize_grads(False)
        return (out, h_n, c_n) if mode == "LSTM" else (out, h_n)

    @staticmethod
    def backward(ctx, grad_out, grad_h, grad_c=None):
        x, h0, c0, w_ih, w_hh, w_hr, out, b_ih, b_hh, *saved = ctx.saved_tensors
        mask = tuple(ctx.needs_input_grad[:8])  # (x, h0, c0, w_ih, w_hh, b_ih, b_hh, w_hr): only these are computed
        if is_grad_enabled():  # create_graph: differentiate the layer written in tensor ops, itself differentiable
            mode, reverse, _, batch_sizes = ctx.params
            inputs = (x, h0, c0, w_ih, w_hh, b_ih, b_hh, w_hr)
            # Each input through a view of its own, so that the gradient of one does not run on through the graph
            # to another.
            args = [t.view_as(t) if wanted else t for t, wanted in zip(inputs, mask)]
            outs = _layer_composite(mode, *args, reverse, batch_sizes)
            pairs = [(o, g) for o, g in zip(outs, (grad_out, grad_h, grad_c)) if g is not None]
            grads = iter(autograd_grad([o for o, _ in pairs], [a for a, wanted in zip(args, mask) if wanted],
                                       [g for _, g in pairs], create_graph=True, allow_unused=True))
            return (*(next(grads) if wanted else None for wanted in mask), None, None, None)
        grads = RecurrentLayerBackward.apply(grad_out, grad_h, grad_c, x, h0, c0, w_ih, w_hh, w_hr, out, *saved,
                                             *ctx.params, mask)
        return (*grads, None, None, None)


class RecurrentLayerBackward(Primitive):
    """The gradients of :class:`RecurrentLayer`: (dx, dh0, dc0, dw_ih, dw_hh, db_ih, db_hh, dw_hr), None where not
    in ``mask``; incoming gradients may be None (zero). ``saved`` are the arrays the backend's ``rnn_layer`` kept."""

    @staticmethod
    def forward(ctx, grad_out: NDArray | None, grad_h: NDArray | None, grad_c: NDArray | None, x: NDArray,
                h0: NDArray, c0: NDArray | None, w_ih: NDArray, w_hh: NDArray, w_hr: NDArray | None, out: NDArray,
                *rest) -> tuple:
        *saved, mode, reverse, has_bias, batch_sizes, mask = rest
        return x.backend.rnn_layer_backward(mode, grad_out, grad_h, grad_c, x, h0, c0, w_ih, w_hh, w_hr, out,
                                            tuple(saved), reverse, has_bias, mask, batch_sizes)

    @staticmethod
    def backward(ctx, *grads):
        raise NotImplementedError("double backward through the fused recurrent layer's backward is not supported")


_SAVED = {"LSTM": 5, "GRU": 4}  # columns of a cell's saved activations, in hidden units (RNN keeps none)


def _cell_composite(mode: str, gi: Tensor, gh: Tensor, h: Tensor, c: Tensor | None) -> tuple[Tensor, ...]:
    """One step of ``mode``'s cell in differentiable tensor ops (mixed dtypes promote as the ops do): (h',) or
    (h', c')."""
    if mode == "LSTM":
        i, f, g, o = (gi + gh).chunk(4, -1)
        c = f.sigmoid() * c + i.sigmoid() * g.tanh()
        return o.sigmoid() * c.tanh(), c
    if mode == "GRU":
        i_r, i_z, i_n = gi.chunk(3, -1)
        h_r, h_z, h_n = gh.chunk(3, -1)
        r = (i_r + h_r).sigmoid()
        z = (i_z + h_z).sigmoid()
        n = (i_n + r * h_n).tanh()
        return ((1 - z) * n + z * h,)
    pre = gi + gh
    return (pre.tanh() if mode == "RNN_TANH" else pre.relu(),)


def _layer_composite(mode: str, x: Tensor, h0: Tensor, c0: Tensor | None, w_ih: Tensor, w_hh: Tensor,
                     b_ih: Tensor | None, b_hh: Tensor | None, w_hr: Tensor | None, reverse: bool,
                     batch_sizes: tuple[int, ...] | None) -> tuple[Tensor, ...]:
    """:class:`RecurrentLayer`'s forward in differentiable tensor ops: (output, h_n) or (output, h_n, c_n).

    Packed input runs ``batch_sizes[t]`` rows at step t (the sequences sorted by decreasing length): going forward a
    sequence leaves the batch after its last step, where its final state is kept; going backward it joins at its
    last step, from its initial state."""
    rows = x if batch_sizes is not None else x.reshape(x.shape[0] * x.shape[1], x.shape[2])
    sizes = batch_sizes if batch_sizes is not None else (x.shape[1],) * x.shape[0]
    offsets = [0]
    for b in sizes:
        offsets.append(offsets[-1] + b)
    gi_all = rows.matmul(w_ih.t()) if b_ih is None else rows.matmul(w_ih.t()) + b_ih  # (N, G*H)
    # Going backward only the longest sequences run the first step taken (the last time step).
    h = h0[:sizes[-1]] if reverse else h0
    c = None if mode != "LSTM" else c0[:sizes[-1]] if reverse else c0
    finals_h, finals_c, outputs = [], [], {}
    for t in (range(len(sizes) - 1, -1, -1) if reverse else range(len(sizes))):
        b = sizes[t]
        if b > h.shape[0]:  # going backward: the sequences whose last step this is join
            h = cat([h, h0[h.shape[0]:b]], 0)
            c = cat([c, c0[c.shape[0]:b]], 0) if c is not None else None
        elif b < h.shape[0]:  # going forward: the sequences whose last step came before leave
            finals_h.append(h[b:])
            h = h[:b]
            if c is not None:
                finals_c.append(c[b:])
                c = c[:b]
        gh = h.matmul(w_hh.t()) if b_hh is None else h.matmul(w_hh.t()) + b_hh
        new = _cell_composite(mode, gi_all[offsets[t]:offsets[t + 1]], gh, h, c)
        h = new[0] if w_hr is None else new[0].matmul(w_hr.t())  # an LSTM's projection, (B_t, P)
        c = new[1] if mode == "LSTM" else None
        outputs[t] = h
    in_time_order = [outputs[t] for t in range(len(sizes))]
    output = cat(in_time_order, 0) if batch_sizes is not None else stack(in_time_order, 0)  # (N, P) or (T, B, P)
    h_n = cat([h, *reversed(finals_h)], 0)
    if mode != "LSTM":
        return output, h_n
    return output, h_n, cat([c, *reversed(finals_c)], 0)


class RecurrentCell(Primitive):
    """One step of an LSTM, GRU or Elman cell from its two products ``gi = x W_ih^T + b_ih`` and ``gh = h W_hh^T +
    b_hh`` (B, G*H), the previous hidden state ``h`` (B, H) and cell state ``c`` (LSTM; else None), all one dtype:
    h' (and c' for LSTM) from one fused ``rnn_cell_``; the gradients from one ``rnn_cell_backward_``."""

    @staticmethod
    def forward(ctx, gi: NDArray, gh: NDArray, h: NDArray, c: NDArray | None, mode: str):
        be = gi.backend
        B, H = c.shape if mode == "LSTM" else h.shape
        h_out = be.empty((B, H), gi.dtype, gi.device)
        saved = be.empty((B, _SAVED[mode] * H), gi.dtype, gi.device) if mode in _SAVED else None
        # An LSTM cell reads c, not h (h reaches it through gh, and may be narrower with a projection): c stands in.
        be.rnn_cell_(mode, gi, gh, c if mode == "LSTM" else h, c, h_out, saved)
        ctx.save_for_backward(gi, gh, h, c, h_out, saved)
        ctx.mode = mode
        ctx.set_materialize_grads(False)
        if mode != "LSTM":
            return h_out
        return h_out, be.contiguous(saved.as_strided((B, H), saved.strides, saved.offset + 4 * H * saved.strides[1]))

    @staticmethod
    def backward(ctx, grad_h, grad_c=None):
        gi, gh, h, c, h_out, saved = ctx.saved_tensors
        mode = ctx.mode
        if is_grad_enabled():  # create_graph: differentiate the step written in tensor ops, itself differentiable
            # Each input through a view of its own, so that the gradient of one does not run on through the graph
            # to another (h also reaches the step through gh).
            args = [t.view_as(t) if t is not None and t.requires_grad else t for t in (gi, gh, h, c)]
            outs = _cell_composite(mode, *args)
            pairs = [(o, g) for o, g in zip(outs, (grad_h, grad_c)) if g is not None]
            inputs = [a for a, t in zip(args, (gi, gh, h, c)) if t is not None and t.requires_grad]
            grads = iter(autograd_grad([o for o, _ in pairs], inputs, [g for _, g in pairs], create_graph=True,
                                       allow_unused=True))
            return (*(next(grads) if t is not None and t.requires_grad else None for t in (gi, gh, h, c)), None)
        return (*RecurrentCellBackward.apply(grad_h, grad_c, gi, gh, h, c, saved if saved is not None else h_out,
                                             mode), None)


class RecurrentCellBackward(Primitive):
    """The gradients of :class:`RecurrentCell`: (d_gi, d_gh, dh, dc); incoming gradients may be None (zero)."""

    @staticmethod
    def forward(ctx, grad_h: NDArray | None, grad_c: NDArray | None, gi: NDArray, gh: NDArray, h: NDArray,
                c: NDArray | None, saved: NDArray, mode: str) -> tuple:
        be = gi.backend
        if mode == "LSTM":
            h = c  # as in the forward
        B, H = h.shape
        d_gi = be.empty(gi.shape, gi.dtype, gi.device)
        d_gh = be.empty(gi.shape, gi.dtype, gi.device) if mode == "GRU" else None
        state = be.empty((B, H), gi.dtype, gi.device) if mode in _SAVED else None  # dc (LSTM), dh z (GRU)
        be.rnn_cell_backward_(mode, grad_h, None, grad_c if mode == "LSTM" else None, h, c, saved, d_gi, d_gh, state)
        # h reaches an LSTM or Elman cell only through gh; a GRU's h' also takes z h directly.
        return d_gi, d_gh if mode == "GRU" else d_gi, state if mode == "GRU" else None, \
            state if mode == "LSTM" else None

    @staticmethod
    def backward(ctx, *grads):
        raise NotImplementedError("double backward through the fused recurrent cell's backward is not supported")


def recurrent_cell(mode: str, gi: Tensor, gh: Tensor, h: Tensor, c: Tensor | None = None) -> tuple[Tensor, ...]:
    """One step of ``mode``'s cell ('LSTM', 'GRU', 'RNN_TANH', 'RNN_RELU') from its two products: (h',) or
    (h', c'). One fused node where every tensor shares a floating dtype and a device; the step in tensor ops
    otherwise (e.g. products in bfloat16 under autocast beside a float32 state)."""
    tensors = [t for t in (gi, gh, h, c) if t is not None]
    if all(t.dtype is gi.dtype and t.device == gi.device for t in tensors) and gi.dtype.is_floating_point \
            and gi.ndim == 2:
        out = RecurrentCell.apply(gi, gh, h, c, mode)
        return tuple(out) if mode == "LSTM" else (out,)
    return _cell_composite(mode, gi, gh, h, c)


def recurrent_layer(mode: str, x: Tensor, h0: Tensor, c0: Tensor | None, w_ih: Tensor, w_hh: Tensor,
                    b_ih: Tensor | None, b_hh: Tensor | None, reverse: bool, batch_sizes: list[int] | None = None,
                    w_hr: Tensor | None = None) -> tuple[Tensor, tuple[Tensor, ...]]:
    """One layer-direction over padded (T, B, I) input, or packed (N, I) input with its ``batch_sizes``:
    (output (T, B, P) or (N, P), (h_n,) or (h_n, c_n)); P is ``w_hr``'s projection width, else the hidden size."""
    for what, group in (("hidden", (h0, c0)), ("parameter", (w_ih, w_hh, b_ih, b_hh, w_hr))):
        for t in group:
            if t is not None and t.device != x.device:
                raise RuntimeError(f"Input and {what} tensors are not at the same device, found input tensor at "
                                   f"{x.device} and {what} tensor at {t.device}")
    sizes = tuple(int(b) for b in batch_sizes) if batch_sizes is not None else None
    outs = RecurrentLayer.apply(x, h0, c0, w_ih, w_hh, b_ih, b_hh, w_hr, mode, reverse, sizes)
    return outs[0], tuple(outs[1:])
