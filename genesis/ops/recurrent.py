"""One layer in one direction of ``nn.RNN``, ``nn.LSTM`` or ``nn.GRU`` as one autograd node.

``RecurrentLayer`` runs a padded (T, B, I) sequence, or a packed one (``PackedSequence`` data and batch sizes),
through the backend's ``rnn_layer`` primitive and its gradient through ``rnn_layer_backward``. On cuda that is
cuDNN's RNN (one call per direction and pass, weights packed into cuDNN's layout); on the CPU, and on cuda without
cuDNN, it is a time loop of fused cells (``genesis._impl.recurrent_loop``). The cells follow torch: LSTM
``c' = σ(f) c + σ(i) tanh(g)``, ``h' = σ(o) tanh(c')``; GRU ``n = tanh(gi_n + r (h W_hn^T + b_hn))``,
``h' = (1 - z) n + z h``; Elman ``h' = tanh`` or ``relu(gi + gh)``. Half-precision cells compute in float32. The
backward is not itself differentiable (``create_graph`` raises).
"""

from __future__ import annotations

from genesis.autograd import Primitive, is_grad_enabled
from genesis.ndarray import NDArray
from genesis.tensor import Tensor


class RecurrentLayer(Primitive):
    """Inputs ``x`` (T, B, I), or packed (N, I) with ``batch_sizes`` as a ``PackedSequence``'s, ``h0`` (B, H),
    ``c0`` (B, H) or None, ``w_ih`` (G*H, I), ``w_hh`` (G*H, H), ``b_ih``/``b_hh`` (G*H,) or None, all one dtype.
    Returns (output (T, B, H) or packed (N, H), h_n) or, for LSTM, (output, h_n, c_n); ``reverse`` runs the steps
    from T - 1 down to 0 (the backward direction of a bidirectional layer)."""

    @staticmethod
    def forward(ctx, x: NDArray, h0: NDArray, c0: NDArray | None, w_ih: NDArray, w_hh: NDArray, b_ih: NDArray | None,
                b_hh: NDArray | None, mode: str, reverse: bool, batch_sizes: tuple[int, ...] | None) -> tuple:
        out, h_n, c_n, saved = x.backend.rnn_layer(mode, x, h0, c0, w_ih, w_hh, b_ih, b_hh, reverse,
                                                   any(ctx.needs_input_grad), batch_sizes)
        ctx.save_for_backward(x, h0, c0, w_ih, w_hh, out, *saved)
        ctx.params = (mode, reverse, b_ih is not None, batch_sizes)
        ctx.set_materialize_grads(False)
        return (out, h_n, c_n) if mode == "LSTM" else (out, h_n)

    @staticmethod
    def backward(ctx, grad_out, grad_h, grad_c=None):
        if is_grad_enabled():
            raise NotImplementedError("double backward through the fused recurrent layer is not supported")
        mask = tuple(ctx.needs_input_grad[:7])  # (x, h0, c0, w_ih, w_hh, b_ih, b_hh): only these are computed
        grads = RecurrentLayerBackward.apply(grad_out, grad_h, grad_c, *ctx.saved_tensors, *ctx.params, mask)
        return (*grads, None, None, None)


class RecurrentLayerBackward(Primitive):
    """The gradients of :class:`RecurrentLayer`: (dx, dh0, dc0, dw_ih, dw_hh, db_ih, db_hh), None where not in
    ``mask``; incoming gradients may be None (zero). ``saved`` are the arrays the backend's ``rnn_layer`` kept."""

    @staticmethod
    def forward(ctx, grad_out: NDArray | None, grad_h: NDArray | None, grad_c: NDArray | None, x: NDArray,
                h0: NDArray, c0: NDArray | None, w_ih: NDArray, w_hh: NDArray, out: NDArray, *rest) -> tuple:
        *saved, mode, reverse, has_bias, batch_sizes, mask = rest
        return x.backend.rnn_layer_backward(mode, grad_out, grad_h, grad_c, x, h0, c0, w_ih, w_hh, out,
                                            tuple(saved), reverse, has_bias, mask, batch_sizes)

    @staticmethod
    def backward(ctx, *grads):
        raise NotImplementedError("double backward through the fused recurrent layer is not supported")


def recurrent_layer(mode: str, x: Tensor, h0: Tensor, c0: Tensor | None, w_ih: Tensor, w_hh: Tensor,
                    b_ih: Tensor | None, b_hh: Tensor | None, reverse: bool,
                    batch_sizes: list[int] | None = None) -> tuple[Tensor, tuple[Tensor, ...]]:
    """One layer-direction over padded (T, B, I) input, or packed (N, I) input with its ``batch_sizes``:
    (output (T, B, H) or (N, H), (h_n,) or (h_n, c_n))."""
    for what, group in (("hidden", (h0, c0)), ("parameter", (w_ih, w_hh, b_ih, b_hh))):
        for t in group:
            if t is not None and t.device != x.device:
                raise RuntimeError(f"Input and {what} tensors are not at the same device, found input tensor at "
                                   f"{x.device} and {what} tensor at {t.device}")
    sizes = tuple(int(b) for b in batch_sizes) if batch_sizes is not None else None
    outs = RecurrentLayer.apply(x, h0, c0, w_ih, w_hh, b_ih, b_hh, mode, reverse, sizes)
    return outs[0], tuple(outs[1:])
