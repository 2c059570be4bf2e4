"""The recurrent cells of the CPU backend on torch CPU tensors: one time step of an LSTM, GRU or Elman cell and its
gradient (the ``rnn_cell_`` and ``rnn_cell_backward_`` primitives; ``cpu.py`` passes the torch views in).

Half-precision arrays are computed in float32 and rounded once when written, as torch's fused cells do. The formulas
are those of ``genesis.ops.recurrent``; the gates are in torch's order (LSTM i, f, g, o; GRU r, z, n).
"""

from __future__ import annotations

import torch

_HALF = (torch.float16, torch.bfloat16)


def _f32(x: torch.Tensor) -> torch.Tensor:
    return x.float() if x.dtype in _HALF else x


def cell(mode: str, gi: torch.Tensor, gh: torch.Tensor, h: torch.Tensor, c: torch.Tensor | None,
         h_out: torch.Tensor, saved: torch.Tensor | None) -> None:
    """One step: the new hidden state into ``h_out``; the activations backward needs into ``saved``."""
    H = h_out.shape[-1]
    gi, gh = _f32(gi), _f32(gh)
    if mode == "LSTM":
        act = gi + gh  # (B, 4H) pre-activations, activated in place
        act[:, :2 * H].sigmoid_()
        act[:, 2 * H:3 * H].tanh_()
        act[:, 3 * H:].sigmoid_()
        i, f, g, o = act.split(H, 1)
        c_new = torch.addcmul(f * _f32(c), i, g)
        h_out.copy_(o * c_new.tanh())
        saved[:, :4 * H].copy_(act)
        saved[:, 4 * H:].copy_(c_new)
    elif mode == "GRU":
        rz = torch.sigmoid(gi[:, :2 * H] + gh[:, :2 * H])
        r, z = rz.split(H, 1)
        gh_n = gh[:, 2 * H:]
        n = torch.addcmul(gi[:, 2 * H:], r, gh_n).tanh_()
        h_out.copy_(torch.addcmul(n, z, _f32(h) - n))  # (1 - z) n + z h
        saved[:, :2 * H].copy_(rz)
        saved[:, 2 * H:3 * H].copy_(n)
        saved[:, 3 * H:].copy_(gh_n)
    else:
        pre = gi + gh
        h_out.copy_(pre.tanh_() if mode == "RNN_TANH" else pre.relu_())


def _total(parts: tuple[torch.Tensor | None, ...], like: torch.Tensor) -> torch.Tensor:
    """The float sum of the given gradient parts (zeros where none is given)."""
    total = None
    for p in parts:
        if p is not None:
            total = _f32(p).clone() if total is None else total.add_(p)
    return total if total is not None else torch.zeros(like.shape, dtype=_f32(like).dtype)


def cell_backward(mode: str, grad_out: torch.Tensor | None, grad_h: torch.Tensor | None,
                  grad_state: torch.Tensor | None, h: torch.Tensor, c: torch.Tensor | None, saved: torch.Tensor,
                  grad_gi: torch.Tensor, grad_gh: torch.Tensor | None, grad_state_prev: torch.Tensor | None) -> None:
    """The gradients of one step (see the ``rnn_cell_backward_`` entry of the backend contract)."""
    H = h.shape[-1]
    s = _f32(saved)
    if mode == "LSTM":
        dh = _total((grad_out, grad_h), h)
        i, f, g, o, c_new = s.split(H, 1)
        tc = c_new.tanh()
        dc = dh * o * (1 - tc * tc)
        if grad_state is not None:
            dc += grad_state
        grad_gi[:, :H].copy_(dc * g * i * (1 - i))
        grad_gi[:, H:2 * H].copy_(dc * _f32(c) * f * (1 - f))
        grad_gi[:, 2 * H:3 * H].copy_(dc * i * (1 - g * g))
        grad_gi[:, 3 * H:].copy_(dh * tc * o * (1 - o))
        grad_state_prev.copy_(dc * f)
    elif mode == "GRU":
        dh = _total((grad_out, grad_h, grad_state), h)
        r, z, n, gh_n = s.split(H, 1)
        dn = dh * (1 - z) * (1 - n * n)
        dr = dn * gh_n * r * (1 - r)
        dz = dh * (_f32(h) - n) * z * (1 - z)
        for out in (grad_gi, grad_gh):
            out[:, :H].copy_(dr)
            out[:, H:2 * H].copy_(dz)
        grad_gi[:, 2 * H:].copy_(dn)
        grad_gh[:, 2 * H:].copy_(dn * r)
        grad_state_prev.copy_(dh * z)
    else:
        dh = _total((grad_out, grad_h), h)
        grad_gi.copy_(dh * (1 - s * s) if mode == "RNN_TANH" else dh * (s > 0))
