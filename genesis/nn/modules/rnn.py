"""Recurrent layers: RNN, LSTM, GRU and their single-step cells, with torch's parameters, shapes and errors.

The layers hold parameters and check inputs; the cell steps and the time and layer loops are in
``genesis.nn.functional.rnn``. A :class:`~genesis.nn.utils.rnn.PackedSequence` input runs every step on the
sequences still going.
"""

from __future__ import annotations

import math
import numbers
import warnings
from typing import Any

from genesis import amp
from genesis.nn import functional as F
from genesis.nn import init
from genesis.nn.functional.rnn import _gru_step, _lstm_step, _recurrent, _rnn_step
from genesis.nn.modules.module import Module
from genesis.nn.parameter import Parameter
from genesis.nn.utils.rnn import PackedSequence
from genesis.tensor import Tensor, empty, zeros

# Gate rows per hidden unit in each mode's weight matrices (torch's order: LSTM i, f, g, o; GRU r, z, n).
_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


class RNNBase(Module):
    """The shared machinery of RNN, LSTM and GRU: parameters, checks and states.

    Parameters per layer ``k`` and direction (suffix ``_reverse`` for the backward one), with torch's names and
    shapes: ``weight_ih_l{k}`` (gates * hidden_size, layer input size), ``weight_hh_l{k}`` (gates * hidden_size,
    hidden or projection size), ``bias_ih_l{k}`` / ``bias_hh_l{k}`` (gates * hidden_size) and, for an LSTM with
    ``proj_size > 0``, ``weight_hr_l{k}`` (proj_size, hidden_size). All start ``U(-1/sqrt(hidden_size),
    1/sqrt(hidden_size))``.
    """

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, proj_size: int = 0,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        if not isinstance(dropout, numbers.Number) or isinstance(dropout, bool) or not 0 <= dropout <= 1:
            raise ValueError("dropout should be a number in range [0, 1] representing the probability of an element "
                             "being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so non-zero dropout "
                          f"expects num_layers greater than 1, but got dropout={dropout} and num_layers={num_layers}",
                          stacklevel=2)
        if not isinstance(bias, bool):
            raise TypeError(f"bias should be of type bool, got: {type(bias).__name__}")
        if not isinstance(batch_first, bool):
            raise TypeError(f"batch_first should be of type bool, got: {type(batch_first).__name__}")
        if not isinstance(input_size, int):
            raise TypeError(f"input_size should be of type int, got: {type(input_size).__name__}")
        if input_size <= 0:
            raise ValueError("input_size must be greater than zero")
        if not isinstance(hidden_size, int):
            raise TypeError(f"hidden_size should be of type int, got: {type(hidden_size).__name__}")
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if mode not in _GATES:
            raise ValueError(f"Unrecognized RNN mode: {mode}")
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        factory = {"device": device, "dtype": dtype}
        gate_size = _GATES[mode] * hidden_size
        real_hidden_size = proj_size if proj_size > 0 else hidden_size
        self._flat_weights_names: list[str] = []
        self._all_weights: list[list[str]] = []
        for layer in range(num_layers):
            layer_input_size = input_size if layer == 0 else real_hidden_size * self._num_directions
            for direction in range(self._num_directions):
                suffix = "_reverse" if direction == 1 else ""
                shapes = {"weight_ih": (gate_size, layer_input_size), "weight_hh": (gate_size, real_hidden_size)}
                if bias:
                    shapes.update({"bias_ih": (gate_size,), "bias_hh": (gate_size,)})
                if proj_size > 0:
                    shapes["weight_hr"] = (proj_size, hidden_size)
                names = []
                for kind, shape in shapes.items():
                    name = f"{kind}_l{layer}{suffix}"
                    setattr(self, name, Parameter(empty(shape, **factory)))
                    names.append(name)
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    @property
    def _num_directions(self) -> int:
        return 2 if self.bidirectional else 1

    @property
    def _flat_weights(self) -> list[Parameter]:
        return [getattr(self, name) for name in self._flat_weights_names]

    @property
    def all_weights(self) -> list[list[Parameter]]:
        """The parameters grouped per layer and direction, in torch's order."""
        return [[getattr(self, name) for name in names] for names in self._all_weights]

    def flatten_parameters(self) -> None:
        """Kept for torch compatibility: Genesis keeps no fused weight buffer, so there is nothing to flatten."""

    def reset_parameters(self) -> None:
        stdv = 1.0 / math.sqrt(self.hidden_size)
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s

    # ---- checks (torch's methods and messages; forward calls them, so a subclass may override them) ----

    def check_input(self, input: Tensor, batch_sizes: Tensor | None) -> None:
        """The input's dtype matches the weights' (unless autocast is on), it has 2 dims when packed (else 3) and
        ``input_size`` features."""
        weight_dtype = self._flat_weights[0].dtype
        if input.dtype != weight_dtype and not amp.is_autocast_enabled(input.device.type):
            raise ValueError(f"RNN input dtype ({input.dtype}) does not match weight dtype ({weight_dtype}). "
                             f"Convert input: input.to({weight_dtype}), or convert model: model.to({input.dtype})")
        expected_dim = 2 if batch_sizes is not None else 3
        if input.ndim != expected_dim:
            raise RuntimeError(f"input must have {expected_dim} dimensions, got {input.ndim}")
        if input.shape[-1] != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, "
                               f"got {input.shape[-1]}")

    def get_expected_hidden_size(self, input: Tensor, batch_sizes: Tensor | None) -> tuple[int, int, int]:
        """(num_layers * num_directions, batch, proj_size or hidden_size): the shape of ``h_0``."""
        if batch_sizes is not None:
            mini_batch = int(batch_sizes[0])
        else:
            mini_batch = input.shape[0] if self.batch_first else input.shape[1]
        return self.num_layers * self._num_directions, mini_batch, self.proj_size or self.hidden_size

    def check_hidden_size(self, hx: Tensor, expected_hidden_size: tuple[int, int, int],
                          msg: str = "Expected hidden size {}, got {}") -> None:
        """RuntimeError ``msg.format(expected, actual)`` unless ``hx`` has the expected shape."""
        if tuple(hx.shape) != tuple(expected_hidden_size):
            raise RuntimeError(msg.format(expected_hidden_size, list(hx.shape)))

    def check_forward_args(self, input: Tensor, hidden: Any, batch_sizes: Tensor | None) -> None:
        """:meth:`check_input`, then the shape of the initial state ``hidden``."""
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden, self.get_expected_hidden_size(input, batch_sizes))

    def permute_hidden(self, hx: Any, permutation: Tensor | None) -> Any:
        """The state with its batch (dim 1) reordered by ``permutation`` (a packed batch's sort order)."""
        return hx if permutation is None else hx.index_select(1, permutation)

    def _state_sizes(self) -> tuple[int, ...]:
        """Feature sizes of the states: (h,) or, for an LSTM, (h, c) — h has proj_size features when projected."""
        if self.mode == "LSTM":
            return (self.proj_size or self.hidden_size, self.hidden_size)
        return (self.hidden_size,)

    def _hidden(self, states: tuple[Tensor, ...]) -> Any:
        """The states as torch's methods take them: ``(h, c)`` for an LSTM, else ``h``."""
        return states if self.mode == "LSTM" else states[0]

    def _states(self, hidden: Any) -> tuple[Tensor, ...]:
        """The inverse of :meth:`_hidden`: always a tuple."""
        return tuple(hidden) if self.mode == "LSTM" else (hidden,)

    def _batched(self, name: str, input: Tensor, states: tuple[Tensor, ...] | None) -> tuple:
        """Validate dimensions; give unbatched (L, H_in) input a batch dim and its states one at dim 1."""
        if input.ndim not in (2, 3):
            noun = "tensor " if name == "RNN" else ""
            raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.ndim}D {noun}instead")
        is_batched = input.ndim == 3
        if states is not None:
            want = 3 if is_batched else 2
            if any(s.ndim != want for s in states):
                kind = "batched 3-D" if is_batched else "unbatched 2-D"
                if len(states) == 1:
                    raise RuntimeError(f"For {kind} input, hx should also be {want}-D but got "
                                       f"{states[0].ndim}-D tensor")
                raise RuntimeError(f"For {kind} input, hx and cx should also be {want}-D but got "
                                   f"({states[0].ndim}-D, {states[1].ndim}-D) tensors")
            if not is_batched:
                states = tuple(s.unsqueeze(1) for s in states)
        if not is_batched:
            input = input.unsqueeze(0 if self.batch_first else 1)
        return input, states, is_batched

    def _zero_states(self, mini_batch: int, like: Tensor) -> tuple[Tensor, ...]:
        return tuple(zeros((self.num_layers * self._num_directions, mini_batch, size), dtype=like.dtype,
                           device=like.device) for size in self._state_sizes())

    # ---- forward ----

    def _forward(self, name: str, input: Tensor | PackedSequence,
                 hx: tuple[Tensor, ...] | None) -> tuple[Tensor | PackedSequence, tuple[Tensor, ...]]:
        """Checks, default states, layout changes around :meth:`_run`; returns (output, final states)."""
        if isinstance(input, PackedSequence):
            data, batch_sizes, sorted_indices, unsorted_indices = input
            steps = [int(b) for b in batch_sizes.tolist()]
            if hx is None:
                states = self._zero_states(steps[0], data)
            else:
                # Initial states are given in the caller's batch order; the packed batch is sorted by length.
                states = self._states(self.permute_hidden(self._hidden(hx), sorted_indices))
            self.check_forward_args(data, self._hidden(states), batch_sizes)
            output, states = self._run(data, steps, states)
            states = self._states(self.permute_hidden(self._hidden(states), unsorted_indices))
            return PackedSequence(output, batch_sizes, sorted_indices, unsorted_indices), states
        input, states, is_batched = self._batched(name, input, hx)
        batch_dim = 0 if self.batch_first else 1
        if states is None:
            states = self._zero_states(input.shape[batch_dim], input)
        self.check_forward_args(input, self._hidden(states), None)
        if input.shape[1 - batch_dim] == 0:
            raise RuntimeError("Expected sequence length to be larger than 0 in RNN")
        output, states = self._run(input.transpose(0, 1) if self.batch_first else input, None, states)
        if self.batch_first:
            output = output.transpose(0, 1)
        if not is_batched:
            return output.squeeze(batch_dim), tuple(s.squeeze(1) for s in states)
        return output, states

    def _run(self, x: Tensor, batch_sizes: list[int] | None,
             states: tuple[Tensor, ...]) -> tuple[Tensor, tuple[Tensor, ...]]:
        """Every layer and direction over padded (L, N, H_in) input, or packed (sum of lengths, H_in) input with its
        ``batch_sizes``."""
        # "weight_ih_l1_reverse" -> "weight_ih"
        weights = [{name.split("_l")[0]: getattr(self, name) for name in names} for names in self._all_weights]
        return _recurrent(self.mode, x, batch_sizes, states, weights, self._num_directions, self.dropout,
                          self.training)


class _SingleStateRNN(RNNBase):
    """RNN and GRU: one hidden state ``h`` of shape (num_layers * num_directions, N, hidden_size)."""

    def forward(self, input: Tensor | PackedSequence,
                hx: Tensor | None = None) -> tuple[Tensor | PackedSequence, Tensor]:
        """``input`` (L, N, H_in), (N, L, H_in) with ``batch_first``, unbatched (L, H_in) or a PackedSequence;
        returns (output, h_n)."""
        output, (h_n,) = self._forward("GRU" if self.mode == "GRU" else "RNN", input, None if hx is None else (hx,))
        return output, h_n


class RNN(_SingleStateRNN):
    """Elman RNN: ``h_t = act(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)`` with ``act`` tanh or relu.

    Args mirror ``torch.nn.RNN(input_size, hidden_size, num_layers=1, nonlinearity='tanh', bias=True,
    batch_first=False, dropout=0.0, bidirectional=False)``: ``dropout`` applies to every layer's output but the last
    (training only); a bidirectional layer concatenates both directions' outputs. ``forward(input, hx=None)``
    returns ``(output, h_n)`` with output (L, N, D * hidden_size) and h_n (D * num_layers, N, hidden_size).
    """

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, nonlinearity: str = "tanh",
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False,
                 device: Any = None, dtype: Any = None) -> None:
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
        self.nonlinearity = nonlinearity
        super().__init__("RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU", input_size, hidden_size, num_layers,
                         bias, batch_first, dropout, bidirectional, device=device, dtype=dtype)


class GRU(_SingleStateRNN):
    """Gated recurrent unit layers (Cho et al., 2014), gates in torch's order (reset, update, new).

    ``r = σ(x W_ir^T + b_ir + h W_hr^T + b_hr)``, ``z = σ(x W_iz^T + b_iz + h W_hz^T + b_hz)``,
    ``n = tanh(x W_in^T + b_in + r * (h W_hn^T + b_hn))``, ``h' = (1 - z) * n + z * h``. Arguments and return
    values as :class:`RNN` (no ``nonlinearity``).
    """

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         device=device, dtype=dtype)


class LSTM(RNNBase):
    """Long short-term memory layers, gates in torch's order (input, forget, cell, output).

    ``c' = σ(f) * c + σ(i) * tanh(g)``, ``h' = σ(o) * tanh(c')``, then ``h' = h' W_hr^T`` when ``proj_size > 0``
    (the output and h_n then have proj_size features; c_n keeps hidden_size). ``forward(input, hx=None)`` takes
    ``hx = (h_0, c_0)`` and returns ``(output, (h_n, c_n))``; other arguments as :class:`RNN`.
    """

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, proj_size: int = 0,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         proj_size, device=device, dtype=dtype)

    def get_expected_cell_size(self, input: Tensor, batch_sizes: Tensor | None) -> tuple[int, int, int]:
        """(num_layers * num_directions, batch, hidden_size): the shape of ``c_0``."""
        layers, mini_batch, _ = self.get_expected_hidden_size(input, batch_sizes)
        return layers, mini_batch, self.hidden_size

    def check_forward_args(self, input: Tensor, hidden: Any, batch_sizes: Tensor | None) -> None:
        """:meth:`check_input`, then the shapes of ``hidden = (h_0, c_0)``."""
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden[0], self.get_expected_hidden_size(input, batch_sizes),
                               "Expected hidden[0] size {}, got {}")
        self.check_hidden_size(hidden[1], self.get_expected_cell_size(input, batch_sizes),
                               "Expected hidden[1] size {}, got {}")

    def permute_hidden(self, hx: Any, permutation: Tensor | None) -> Any:
        """``(h, c)`` with their batch (dim 1) reordered by ``permutation``."""
        if permutation is None:
            return hx
        return hx[0].index_select(1, permutation), hx[1].index_select(1, permutation)

    def forward(self, input: Tensor | PackedSequence,
                hx: tuple[Tensor, Tensor] | None = None) -> tuple[Tensor | PackedSequence, tuple[Tensor, Tensor]]:
        # hx[0] and hx[1] as torch reads them: a lone tensor fails there (IndexError) or at the dimension check.
        output, states = self._forward("LSTM", input, None if hx is None else (hx[0], hx[1]))
        return output, states


class RNNCellBase(Module):
    """The parameters of a one-step cell: ``weight_ih`` (chunks * hidden, input), ``weight_hh`` (chunks * hidden,
    hidden), ``bias_ih`` / ``bias_hh`` (chunks * hidden), all ``U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))``."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        factory = {"device": device, "dtype": dtype}
        self.weight_ih = Parameter(empty((num_chunks * hidden_size, input_size), **factory))
        self.weight_hh = Parameter(empty((num_chunks * hidden_size, hidden_size), **factory))
        if bias:
            self.bias_ih = Parameter(empty(num_chunks * hidden_size, **factory))
            self.bias_hh = Parameter(empty(num_chunks * hidden_size, **factory))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s

    def _prepare(self, name: str, input: Tensor, states: tuple[Tensor, ...] | None,
                 state_name: str) -> tuple[Tensor, tuple[Tensor, ...], bool]:
        """Check dimensions and sizes as torch; give 1-D input (and its states) a batch dim; default zero states."""
        if input.ndim not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.ndim}D instead")
        for idx, state in enumerate(states or ()):
            if state.ndim not in (1, 2):
                what = state_name if len(states) == 1 else f"{state_name}[{idx}]"
                raise ValueError(f"{name}: Expected {what} to be 1D or 2D, got {state.ndim}D instead")
        is_batched = input.ndim == 2
        if not is_batched:
            input = input.unsqueeze(0)
        if states is None:
            state = zeros((input.shape[0], self.hidden_size), dtype=input.dtype, device=input.device)
            states = (state,) * (2 if name == "LSTMCell" else 1)
        elif not is_batched:
            states = tuple(s.unsqueeze(0) for s in states)
        if input.shape[1] != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {input.shape[1]} expected {self.input_size}")
        for idx, state in enumerate(states):
            if state.shape[0] != input.shape[0]:
                raise RuntimeError(f"Input batch size {input.shape[0]} doesn't match hidden{idx} batch size "
                                   f"{state.shape[0]}")
            if state.shape[1] != self.hidden_size:
                raise RuntimeError(f"hidden{idx} has inconsistent hidden_size: got {state.shape[1]}, expected "
                                   f"{self.hidden_size}")
        return input, states, is_batched


class RNNCell(RNNCellBase):
    """One Elman step ``h' = act(x W_ih^T + b_ih + h W_hh^T + b_hh)``; ``forward(input, hx=None) -> h'``.

    ``input`` is (N, input_size) or unbatched (input_size); ``hx`` defaults to zeros.
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, nonlinearity: str = "tanh",
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=1, device=device, dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        input, (hx,), is_batched = self._prepare("RNNCell", input, None if hx is None else (hx,), "hidden")
        if self.nonlinearity not in ("tanh", "relu"):
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        mode = "RNN_TANH" if self.nonlinearity == "tanh" else "RNN_RELU"
        h = _rnn_step(mode, F.linear(input, self.weight_ih, self.bias_ih), hx, self.weight_hh, self.bias_hh)
        return h if is_batched else h.squeeze(0)


class LSTMCell(RNNCellBase):
    """One LSTM step; ``forward(input, hx=None) -> (h', c')`` with ``hx = (h, c)`` (zeros by default)."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=4, device=device, dtype=dtype)

    def forward(self, input: Tensor, hx: tuple[Tensor, Tensor] | None = None) -> tuple[Tensor, Tensor]:
        if isinstance(hx, Tensor) and input.ndim == 2:
            raise TypeError("lstm_cell(): argument 'hx' (position 2) must be tuple of Tensors, not Tensor")
        input, (h, c), is_batched = self._prepare("LSTMCell", input, None if hx is None else (hx[0], hx[1]), "hx")
        h, c = _lstm_step(F.linear(input, self.weight_ih, self.bias_ih), h, c, self.weight_hh, self.bias_hh, None)
        return (h, c) if is_batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(RNNCellBase):
    """One GRU step; ``forward(input, hx=None) -> h'`` (formula as :class:`GRU`)."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=3, device=device, dtype=dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        input, (hx,), is_batched = self._prepare("GRUCell", input, None if hx is None else (hx,), "hidden")
        h = _gru_step(F.linear(input, self.weight_ih, self.bias_ih), hx, self.weight_hh, self.bias_hh)
        return h if is_batched else h.squeeze(0)
