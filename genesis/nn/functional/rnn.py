"""Recurrent layers' math: one step of an Elman, LSTM or GRU cell and the time and layer loops of ``nn.RNN``,
``nn.LSTM`` and ``nn.GRU``, on padded or packed sequences.

torch has no public functional form of these (its layers call fused kernels), so the helpers here are private to
``genesis.nn``. A padded or packed sequence runs each layer and direction as one autograd node
(``genesis.ops.recurrent.RecurrentLayer``: cuDNN's RNN on cuda, a time loop of fused cells on the CPU); under
autocast the whole layer is cast as torch casts it (float16 on cuda, the region's dtype for the CPU's LSTM). Where
autocast's policy leaves the layer to its products (GRU and Elman RNN on the CPU) the time loop runs in Python over
Genesis ops: the input projection of a whole sequence is one matrix product, then every time step adds the hidden
projection and applies the gates.
"""

from __future__ import annotations

from genesis import ops as T
from genesis.nn.functional.dropout import dropout
from genesis.nn.functional.linear import linear
from genesis.ops.autocast import autocast_args, autocast_rule, is_autocast_enabled
from genesis.ops.recurrent import recurrent_cell, recurrent_layer
from genesis.tensor import Tensor


def _rnn_step(mode: str, gi: Tensor, h: Tensor, w_hh: Tensor, b_hh: Tensor | None) -> Tensor:
    """One Elman step ``act(gi + h W_hh^T + b_hh)``, ``gi`` being the input's projection ``x W_ih^T + b_ih``."""
    return recurrent_cell(mode, gi, linear(h, w_hh, b_hh), h)[0]


def _lstm_step(gi: Tensor, h: Tensor, c: Tensor, w_hh: Tensor, b_hh: Tensor | None,
               w_hr: Tensor | None) -> tuple[Tensor, Tensor]:
    """One LSTM step (Hochreiter & Schmidhuber, 1997); ``w_hr`` projects the new hidden state (Sak et al., 2014)."""
    h, c = recurrent_cell("LSTM", gi, linear(h, w_hh, b_hh), h, c)
    if w_hr is not None:
        h = linear(h, w_hr)
    return h, c


def _gru_step(gi: Tensor, h: Tensor, w_hh: Tensor, b_hh: Tensor | None) -> Tensor:
    """One GRU step (Cho et al., 2014) as torch: ``n = tanh(i_n + r * (h W_hn^T + b_hn))``, ``h' = (1-z) n + z h``."""
    return recurrent_cell("GRU", gi, linear(h, w_hh, b_hh), h)[0]


def _cell_step(mode: str, gi: Tensor, state: tuple[Tensor, ...], w: dict[str, Tensor]) -> tuple[Tensor, ...]:
    """One step of ``mode``'s cell from the input projection ``gi``: the new (h,) or (h, c)."""
    if mode == "LSTM":
        return _lstm_step(gi, state[0], state[1], w["weight_hh"], w.get("bias_hh"), w.get("weight_hr"))
    if mode == "GRU":
        return (_gru_step(gi, state[0], w["weight_hh"], w.get("bias_hh")),)
    return (_rnn_step(mode, gi, state[0], w["weight_hh"], w.get("bias_hh")),)


def _fused(x: Tensor, initial: tuple[Tensor, ...], w: dict[str, Tensor], autocast_layer: bool) -> bool:
    """Whether one layer-direction runs as one ``RecurrentLayer`` node: padded or packed non-empty input, every
    tensor of one dtype; under autocast only where its policy casts the whole layer (``autocast_layer``; otherwise
    each product casts on its own in the per-step composite)."""
    if x.shape[0] == 0 or x.shape[1] == 0:
        return False
    if is_autocast_enabled(x.device.type) and not autocast_layer:
        return False
    return all(t.dtype == x.dtype for t in (*initial, *w.values()))


def _run_direction(mode: str, x: Tensor, batch_sizes: list[int] | None, initial: tuple[Tensor, ...],
                   w: dict[str, Tensor], reverse: bool,
                   autocast_layer: bool = False) -> tuple[Tensor, tuple[Tensor, ...]]:
    """One layer in one direction: (output, final states).

    Packed input runs at step ``t`` only the ``batch_sizes[t]`` sequences still going (the first rows: the batch
    is sorted by decreasing length). Going forward, a finished sequence keeps its last state; going backward, a
    sequence joins at its own last step, from its initial state.
    """
    if _fused(x, initial, w, autocast_layer):
        return recurrent_layer(mode, x, initial[0], initial[1] if len(initial) > 1 else None, w["weight_ih"],
                               w["weight_hh"], w.get("bias_ih"), w.get("bias_hh"), reverse, batch_sizes,
                               w.get("weight_hr"))
    gi = linear(x, w["weight_ih"], w.get("bias_ih"))  # input projections of all steps at once
    steps = list(gi.unbind(0)) if batch_sizes is None else list(gi.split(batch_sizes, 0))
    outputs: list[Tensor | None] = [None] * len(steps)
    state = initial
    if reverse and steps[-1].shape[0] < state[0].shape[0]:
        state = tuple(s[:steps[-1].shape[0]] for s in initial)
    for t in (reversed(range(len(steps))) if reverse else range(len(steps))):
        b, running = steps[t].shape[0], state[0].shape[0]
        if b > running:  # backward pass: the sequences whose last step is t join
            state = tuple(T.cat([s, s0[running:b]], 0) for s, s0 in zip(state, initial))
            running = b
        new = _cell_step(mode, steps[t], state if b == running else tuple(s[:b] for s in state), w)
        outputs[t] = new[0]
        state = new if b == running else tuple(T.cat([n, s[b:]], 0) for n, s in zip(new, state))
    output = T.stack(outputs, 0) if batch_sizes is None else T.cat(outputs, 0)
    return output, state


def _recurrent(mode: str, x: Tensor, batch_sizes: list[int] | None, states: tuple[Tensor, ...],
               weights: list[dict[str, Tensor]], num_directions: int, dropout_p: float,
               training: bool) -> tuple[Tensor, tuple[Tensor, ...]]:
    """Every layer and direction over padded (L, N, H_in) input, or packed (sum of lengths, H_in) input with its
    ``batch_sizes``. ``states`` are (h_0,) or (h_0, c_0), each (num_layers * num_directions, N, size); ``weights``
    holds one dict per layer and direction (in that order) of ``weight_ih``, ``weight_hh`` and, when present,
    ``bias_ih``, ``bias_hh`` and ``weight_hr``. ``dropout_p`` applies to every layer's output but the last."""
    num_layers = len(weights) // num_directions
    autocast_layer = autocast_rule(mode.lower(), x.device.type) is not None
    if autocast_layer:  # the whole stack in autocast's dtype for recurrent layers, as torch's cuDNN / oneDNN layers
        names = [list(w) for w in weights]
        flat = autocast_args(mode.lower(), x, *states, *(t for w in weights for t in w.values()))
        x, states, rest = flat[0], tuple(flat[1:1 + len(states)]), iter(flat[1 + len(states):])
        weights = [{name: next(rest) for name in keys} for keys in names]
    finals = []
    for layer in range(num_layers):
        outputs = []
        for direction in range(num_directions):
            index = layer * num_directions + direction
            out, last = _run_direction(mode, x, batch_sizes, tuple(s[index] for s in states), weights[index],
                                       reverse=direction == 1, autocast_layer=autocast_layer)
            outputs.append(out)
            finals.append(last)
        x = outputs[0] if len(outputs) == 1 else T.cat(outputs, -1)
        if dropout_p > 0 and training and layer < num_layers - 1:
            x = dropout(x, dropout_p, True)
    return x, tuple(T.stack([last[k] for last in finals], 0) for k in range(len(states)))
