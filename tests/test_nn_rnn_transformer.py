"""Recurrent and Transformer layers against torch with identical weights: outputs, input and parameter gradients."""

import math
import warnings

import pytest
import torch

import genesis
from tests.helpers import (
    DEVICE,
    GENESIS_DTYPE,
    check,
    check_error,
    check_module,
    expected_repr,
    rand,
    to_genesis,
    to_torch,
)

# Full float32 in cuDNN's recurrent layers (torch's CPU oracle has no TF32); torch-side notices only: its mask-type
# deprecation and its nested-tensor remarks.
pytestmark = [pytest.mark.usefixtures("full_float32"),
              pytest.mark.filterwarnings("ignore:Support for mismatched:UserWarning"),
              pytest.mark.filterwarnings("ignore:enable_nested_tensor is True:UserWarning"),
              pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors:UserWarning")]


def pair(make):
    """The same module in Genesis and torch (float64), with equal state-dict keys and repr."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's nested-tensor fast-path notice
        t = make(torch).double()
    g = make(genesis).to(DEVICE, genesis.float64)
    assert list(g.state_dict()) == list(t.state_dict())
    for name, tp in t.state_dict().items():
        assert tuple(g.state_dict()[name].shape) == tuple(tp.shape), name
    assert repr(g) == expected_repr(t)
    return g, t


def flat(out):
    """(output, h_n) or (output, (h_n, c_n)) as one flat tuple, so every tensor gets an output gradient."""
    if isinstance(out, tuple):
        return tuple(x for o in out for x in flat(o))
    return (out,)


# ---------------------------------------------------------------- RNN, LSTM, GRU

RNN_CASES = [
    ("RNN", {}),
    ("RNN", {"nonlinearity": "relu", "num_layers": 2}),
    ("RNN", {"bias": False, "bidirectional": True}),
    ("RNN", {"num_layers": 2, "bidirectional": True, "batch_first": True}),
    ("LSTM", {}),
    ("LSTM", {"num_layers": 2, "bidirectional": True}),
    ("LSTM", {"proj_size": 3}),
    ("LSTM", {"proj_size": 2, "num_layers": 2, "bidirectional": True, "batch_first": True}),
    ("LSTM", {"bias": False, "batch_first": True}),
    ("GRU", {}),
    ("GRU", {"num_layers": 2, "bidirectional": True}),
    ("GRU", {"bias": False, "batch_first": True, "num_layers": 2}),
]


def _state_shape(name, kwargs, batch=None):
    d = 2 if kwargs.get("bidirectional") else 1
    lead = (kwargs.get("num_layers", 1) * d,)
    mid = () if batch is None else (batch,)
    h = kwargs.get("proj_size") or 5
    return lead + mid + (h,), lead + mid + (5,)


@pytest.mark.parametrize("name,kwargs", RNN_CASES)
def test_recurrent_layers(name, kwargs):
    g, t = pair(lambda lib: getattr(lib.nn, name)(4, 5, **kwargs))
    seq_shape = (2, 3, 4) if kwargs.get("batch_first") else (3, 2, 4)
    # Zero initial state.
    check_module(g, t, rand(*seq_shape), call=lambda m, x: flat(m(x)))
    # Given initial state(s).
    h_shape, c_shape = _state_shape(name, kwargs, batch=2)
    if name == "LSTM":
        check_module(g, t, rand(*seq_shape), rand(*h_shape, seed=1), rand(*c_shape, seed=2),
                     call=lambda m, x, h, c: flat(m(x, (h, c))))
    else:
        check_module(g, t, rand(*seq_shape), rand(*h_shape, seed=1), call=lambda m, x, h: flat(m(x, h)))


@pytest.mark.parametrize("name,kwargs", RNN_CASES[::3])
def test_recurrent_layers_unbatched(name, kwargs):
    g, t = pair(lambda lib: getattr(lib.nn, name)(4, 5, **kwargs))
    check_module(g, t, rand(3, 4), call=lambda m, x: flat(m(x)))
    h_shape, c_shape = _state_shape(name, kwargs)
    if name == "LSTM":
        check_module(g, t, rand(3, 4), rand(*h_shape, seed=1), rand(*c_shape, seed=2),
                     call=lambda m, x, h, c: flat(m(x, (h, c))))
    else:
        check_module(g, t, rand(3, 4), rand(*h_shape, seed=1), call=lambda m, x, h: flat(m(x, h)))


@pytest.mark.parametrize("name", ["RNN", "LSTM", "GRU"])
def test_recurrent_dropout_between_layers(name):
    # p=1 zeroes the first layer's output in training: deterministic, so both frameworks must agree exactly;
    # in evaluation mode dropout is off.
    g, t = pair(lambda lib: getattr(lib.nn, name)(4, 5, num_layers=2, dropout=1.0))
    check_module(g, t, rand(3, 2, 4), call=lambda m, x: flat(m(x)))
    g.eval()
    t.eval()
    check_module(g, t, rand(3, 2, 4), call=lambda m, x: flat(m(x)))


def test_recurrent_parameters_and_init():
    lstm = genesis.nn.LSTM(6, 8, num_layers=2, bidirectional=True, proj_size=3)
    ref = torch.nn.LSTM(6, 8, num_layers=2, bidirectional=True, proj_size=3)
    assert [(n, tuple(p.shape)) for n, p in lstm.named_parameters()] == \
        [(n, tuple(p.shape)) for n, p in ref.named_parameters()]
    assert [[tuple(p.shape) for p in ws] for ws in lstm.all_weights] == \
        [[tuple(p.shape) for p in ws] for ws in ref.all_weights]
    bound = 1 / math.sqrt(8)
    values = torch.cat([to_torch(p).flatten() for p in lstm.parameters()])
    assert values.abs().max() <= bound
    assert values.abs().max() > 0.9 * bound and abs(values.mean()) < 0.05  # uniform over the whole range
    lstm.flatten_parameters()  # a no-op kept for torch code that calls it
    assert lstm.weight_ih_l0.dtype is genesis.float32
    gru = genesis.nn.GRU(3, 4, bias=False, dtype=genesis.float64)
    assert [n for n, _ in gru.named_parameters()] == ["weight_ih_l0", "weight_hh_l0"]
    assert gru.weight_hh_l0.dtype is genesis.float64 and tuple(gru.weight_hh_l0.shape) == (12, 4)


def test_recurrent_state_dict_from_torch():
    torch.manual_seed(0)
    ref = torch.nn.GRU(3, 4, num_layers=2, bidirectional=True, batch_first=True)
    gru = genesis.nn.GRU(3, 4, num_layers=2, bidirectional=True, batch_first=True).to(DEVICE)
    gru.load_state_dict({k: to_genesis(v, requires_grad=False, device="cpu") for k, v in ref.state_dict().items()})
    # Loading copies into the existing parameters: they keep the module's device, whatever the checkpoint's.
    assert {p.device.type for p in gru.parameters()} == {DEVICE.split(":")[0]}
    x = torch.randn(2, 5, 3)
    out, h = gru(to_genesis(x))
    ref_out, ref_h = ref(x)
    torch.testing.assert_close(to_torch(out), ref_out.detach(), rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(to_torch(h), ref_h.detach(), rtol=1e-5, atol=1e-6)


def _lstm(lib):
    return lib.nn.LSTM(4, 5, dtype=lib.float64)


@pytest.mark.parametrize("fn,inputs,exc,match", [
    (lambda lib, x: lib.nn.RNN(4, 5, dtype=lib.float64)(x), (rand(3, 2, 6),), RuntimeError,
     r"input.size\(-1\) must be equal to input_size. Expected 4, got 6"),
    (lambda lib, x: lib.nn.GRU(4, 5, dtype=lib.float64)(x), (rand(3, 4, 2, 4),), ValueError,
     "GRU: Expected input to be 2D or 3D, got 4D instead"),
    (lambda lib, x: lib.nn.RNN(4, 5, dtype=lib.float64)(x), (rand(4),), ValueError,
     "RNN: Expected input to be 2D or 3D, got 1D tensor instead"),
    (lambda lib, x, h: lib.nn.GRU(4, 5, dtype=lib.float64)(x, h), (rand(3, 2, 4), rand(1, 3, 5, seed=1)),
     RuntimeError, r"Expected hidden size \(1, 2, 5\), got \[1, 3, 5\]"),
    (lambda lib, x, h: lib.nn.RNN(4, 5, dtype=lib.float64)(x, h), (rand(3, 2, 4), rand(2, 5, seed=1)),
     RuntimeError, "For batched 3-D input, hx should also be 3-D but got 2-D tensor"),
    (lambda lib, x, h: lib.nn.RNN(4, 5, dtype=lib.float64)(x, h), (rand(3, 4), rand(1, 1, 5, seed=1)),
     RuntimeError, "For unbatched 2-D input, hx should also be 2-D but got 3-D tensor"),
    (lambda lib, x, h, c: _lstm(lib)(x, (h, c)), (rand(3, 2, 4), rand(1, 2, 5, seed=1), rand(1, 2, 6, seed=2)),
     RuntimeError, r"Expected hidden\[1\] size \(1, 2, 5\), got \[1, 2, 6\]"),
    (lambda lib, x, h, c: _lstm(lib)(x, (h, c)), (rand(3, 2, 4), rand(2, 5, seed=1), rand(1, 2, 5, seed=2)),
     RuntimeError, r"For batched 3-D input, hx and cx should also be 3-D but got \(2-D, 3-D\) tensors"),
    (lambda lib, x: lib.nn.LSTM(4, 5)(x), (rand(3, 2, 4),), ValueError,
     r"RNN input dtype \(genesis.float64\) does not match weight dtype \(genesis.float32\)"),
    (lambda lib, x: lib.nn.RNNCell(4, 5, dtype=lib.float64)(x), (rand(3, 6),), RuntimeError,
     "input has inconsistent input_size: got 6 expected 4"),
    (lambda lib, x, h: lib.nn.GRUCell(4, 5, dtype=lib.float64)(x, h), (rand(3, 4), rand(2, 5, seed=1)),
     RuntimeError, "Input batch size 3 doesn't match hidden0 batch size 2"),
    (lambda lib, x, h, c: lib.nn.LSTMCell(4, 5, dtype=lib.float64)(x, (h, c)),
     (rand(3, 4), rand(3, 5, seed=1), rand(3, 6, seed=2)), RuntimeError,
     "hidden1 has inconsistent hidden_size: got 6, expected 5"),
    (lambda lib, x: lib.nn.GRUCell(4, 5, dtype=lib.float64)(x), (rand(2, 3, 4),), ValueError,
     "GRUCell: Expected input to be 1D or 2D, got 3D instead"),
    (lambda lib, x, h, c: lib.nn.LSTMCell(4, 5, dtype=lib.float64)(x, (h, c)),
     (rand(3, 4), rand(1, 3, 5, seed=1), rand(3, 5, seed=2)), ValueError,
     r"LSTMCell: Expected hx\[0\] to be 1D or 2D, got 3D instead"),
    # One tensor where LSTM takes (h, c): torch reads hx[0] and hx[1] of it.
    (lambda lib, x, h: _lstm(lib)(x, h), (rand(3, 2, 4), rand(1, 2, 5, seed=1)), IndexError,
     "index 1 is out of bounds for dimension 0 with size 1"),
    (lambda lib, x, h: lib.nn.LSTM(4, 5, 2, dtype=lib.float64)(x, h), (rand(3, 2, 4), rand(2, 2, 5, seed=1)),
     RuntimeError, r"For batched 3-D input, hx and cx should also be 3-D but got \(2-D, 2-D\) tensors"),
    (lambda lib, x, h: lib.nn.LSTMCell(4, 5, dtype=lib.float64)(x, h), (rand(3, 4), rand(3, 5, seed=1)),
     TypeError, r"lstm_cell\(\): argument 'hx' \(position 2\) must be tuple of Tensors, not Tensor"),
])
def test_recurrent_errors(fn, inputs, exc, match):
    check_error(exc, fn, *inputs, match=match)


@pytest.mark.parametrize("make,exc,match", [
    (lambda lib: lib.nn.RNN(4, 5, nonlinearity="sigmoid"), ValueError, "Unknown nonlinearity 'sigmoid'"),
    (lambda lib: lib.nn.LSTM(4, 5, dropout=1.5), ValueError, r"dropout should be a number in range \[0, 1\]"),
    (lambda lib: lib.nn.LSTM(4, 5, proj_size=5), ValueError, "proj_size has to be smaller than hidden_size"),
    (lambda lib: lib.nn.LSTM(4, 5, proj_size=-1), ValueError, "proj_size should be a positive integer or zero"),
    (lambda lib: lib.nn.GRU(4, 0), ValueError, "hidden_size must be greater than zero"),
    (lambda lib: lib.nn.GRU(4, 5, num_layers=0), ValueError, "num_layers must be greater than zero"),
    (lambda lib: lib.nn.GRU(4.0, 5), TypeError, "input_size should be of type int, got: float"),
    (lambda lib: lib.nn.RNN(4, 5, batch_first=1), TypeError, "batch_first should be of type bool, got: int"),
])
def test_recurrent_constructor_errors(make, exc, match):
    with pytest.raises(exc, match=match):
        make(torch)
    with pytest.raises(exc, match=match):
        make(genesis)


def test_recurrent_dropout_warning():
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
        genesis.nn.GRU(4, 5, dropout=0.5)


# ---------------------------------------------------------------- cells

@pytest.mark.parametrize("name,kwargs", [
    ("RNNCell", {}), ("RNNCell", {"nonlinearity": "relu", "bias": False}),
    ("LSTMCell", {}), ("LSTMCell", {"bias": False}),
    ("GRUCell", {}), ("GRUCell", {"bias": False}),
])
def test_cells(name, kwargs):
    g, t = pair(lambda lib: getattr(lib.nn, name)(4, 5, **kwargs))
    check_module(g, t, rand(3, 4), call=lambda m, x: flat(m(x)))
    check_module(g, t, rand(4), call=lambda m, x: flat(m(x)))  # unbatched
    if name == "LSTMCell":
        check_module(g, t, rand(3, 4), rand(3, 5, seed=1), rand(3, 5, seed=2),
                     call=lambda m, x, h, c: flat(m(x, (h, c))))
        check_module(g, t, rand(4), rand(5, seed=1), rand(5, seed=2), call=lambda m, x, h, c: flat(m(x, (h, c))))
    else:
        check_module(g, t, rand(3, 4), rand(3, 5, seed=1), call=lambda m, x, h: m(x, h))
        check_module(g, t, rand(4), rand(5, seed=1), call=lambda m, x, h: m(x, h))


def test_cell_unrolled_matches_layer():
    # A cell stepped over a sequence equals the one-layer module with the same weights.
    torch.manual_seed(0)
    cell = genesis.nn.LSTMCell(3, 4, dtype=genesis.float64, device=DEVICE)
    layer = genesis.nn.LSTM(3, 4, dtype=genesis.float64, device=DEVICE)
    layer.load_state_dict({f"{k}_l0": v for k, v in cell.state_dict().items()})
    x = to_genesis(rand(5, 2, 3, requires_grad=False))
    out, (h_n, c_n) = layer(x)
    h = c = genesis.zeros((2, 4), dtype=genesis.float64, device=DEVICE)
    for step in range(5):
        h, c = cell(x[step], (h, c))
        torch.testing.assert_close(to_torch(h), to_torch(out[step]), rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(to_torch(c), to_torch(c_n[0]), rtol=1e-12, atol=1e-12)


# ---------------------------------------------------------------- Transformer

def _relu_module(lib):
    return lib.nn.ReLU()


@pytest.mark.parametrize("kwargs", [
    {},
    {"activation": "gelu", "norm_first": True},
    {"batch_first": True, "bias": False, "layer_norm_eps": 1e-3},
    {"activation": _relu_module},
])
def test_transformer_encoder_layer(kwargs):
    def make(lib):
        kw = dict(kwargs)
        if callable(kw.get("activation")):
            kw["activation"] = kw["activation"](lib)
        return lib.nn.TransformerEncoderLayer(6, 2, dim_feedforward=8, dropout=0.0, **kw)

    g, t = pair(make)
    shape = (2, 4, 6) if kwargs.get("batch_first") else (4, 2, 6)
    check_module(g, t, rand(*shape))
    # Float attention mask and bool key padding mask (True = ignored key).
    mask = rand(4, 4, seed=1, requires_grad=False)
    padding = torch.tensor([[False, False, False, True], [False, True, False, False]])
    check_module(g, t, rand(*shape), mask, padding,
                 call=lambda m, x, a, p: m(x, src_mask=a, src_key_padding_mask=p))
    causal = torch.nn.Transformer.generate_square_subsequent_mask(4, dtype=torch.float64)
    check_module(g, t, rand(*shape), causal, call=lambda m, x, c: m(x, src_mask=c, is_causal=True))
    check_module(g, t, rand(4, 6))  # unbatched


def test_transformer_encoder_layer_callable_activation():
    g, t = pair(lambda lib: lib.nn.TransformerEncoderLayer(6, 3, 8, 0.0, activation=lib.nn.functional.silu))
    assert g.activation_relu_or_gelu == t.activation_relu_or_gelu == 0
    check_module(g, t, rand(3, 2, 6))


@pytest.mark.parametrize("kwargs", [{}, {"norm_first": True, "activation": "gelu"}, {"batch_first": True}])
def test_transformer_decoder_layer(kwargs):
    g, t = pair(lambda lib: lib.nn.TransformerDecoderLayer(6, 2, 8, 0.0, **kwargs))
    tgt_shape, mem_shape = ((2, 3, 6), (2, 5, 6)) if kwargs.get("batch_first") else ((3, 2, 6), (5, 2, 6))
    check_module(g, t, rand(*tgt_shape), rand(*mem_shape, seed=1))
    causal = torch.nn.Transformer.generate_square_subsequent_mask(3, dtype=torch.float64)
    memory_mask = torch.tensor([[False, True, False, False, False]] * 3)
    tgt_padding = torch.tensor([[False, False, True], [False, False, False]])
    memory_padding = torch.tensor([[False, False, False, False, True], [True, False, False, False, False]])
    check_module(g, t, rand(*tgt_shape), rand(*mem_shape, seed=1), causal, memory_mask, tgt_padding, memory_padding,
                 call=lambda m, x, mem, c, mm, tp, mp: m(x, mem, tgt_mask=c, memory_mask=mm, tgt_key_padding_mask=tp,
                                                         memory_key_padding_mask=mp, tgt_is_causal=True))


def test_transformer_encoder_and_decoder_stacks():
    def encoder(lib):
        layer = lib.nn.TransformerEncoderLayer(6, 2, 8, 0.0)
        return lib.nn.TransformerEncoder(layer, 2, norm=lib.nn.LayerNorm(6), enable_nested_tensor=False)

    g, t = pair(encoder)
    # Clones of one layer: every layer starts with the same weights, as in torch.
    assert torch.equal(to_torch(g.layers[0].linear1.weight), to_torch(g.layers[1].linear1.weight))
    assert g.layers[0].linear1.weight is not g.layers[1].linear1.weight
    causal = torch.nn.Transformer.generate_square_subsequent_mask(4, dtype=torch.float64)
    padding = torch.tensor([[False, False, True, True], [False, False, False, False]])
    check_module(g, t, rand(4, 2, 6), causal, padding, call=lambda m, x, c, p: m(x, mask=c, src_key_padding_mask=p))

    g, t = pair(lambda lib: lib.nn.TransformerDecoder(lib.nn.TransformerDecoderLayer(6, 2, 8, 0.0), 2))
    causal = torch.nn.Transformer.generate_square_subsequent_mask(3, dtype=torch.float64)
    check_module(g, t, rand(3, 2, 6), rand(4, 2, 6, seed=1), causal, call=lambda m, x, mem, c: m(x, mem, tgt_mask=c))


@pytest.mark.parametrize("kwargs", [{}, {"batch_first": True, "norm_first": True, "activation": "gelu"}])
def test_transformer(kwargs):
    g, t = pair(lambda lib: lib.nn.Transformer(6, 2, 2, 1, 8, dropout=0.0, **kwargs))
    src_shape, tgt_shape = ((2, 5, 6), (2, 4, 6)) if kwargs.get("batch_first") else ((5, 2, 6), (4, 2, 6))
    causal = torch.nn.Transformer.generate_square_subsequent_mask(4, dtype=torch.float64)
    padding = torch.tensor([[False, False, False, True, True], [False, False, False, False, False]])
    check_module(g, t, rand(*src_shape), rand(*tgt_shape, seed=1), causal, padding,
                 call=lambda m, s, x, c, p: m(s, x, tgt_mask=c, src_key_padding_mask=p,
                                              memory_key_padding_mask=p))
    check_module(g, t, rand(5, 6), rand(4, 6, seed=1))  # unbatched


def test_transformer_eval_mode_ignores_dropout():
    g, t = pair(lambda lib: lib.nn.Transformer(6, 2, 1, 1, 8))
    g.eval()
    t.eval()
    check_module(g, t, rand(5, 2, 6), rand(4, 2, 6, seed=1))


def test_transformer_init_and_names():
    model = genesis.nn.Transformer(8, 2, 1, 1, 16)
    ref = torch.nn.Transformer(8, 2, 1, 1, 16)
    assert [(n, tuple(p.shape)) for n, p in model.named_parameters()] == \
        [(n, tuple(p.shape)) for n, p in ref.named_parameters()]
    weight = to_torch(model.encoder.layers[0].linear1.weight)  # xavier-uniform: bound sqrt(6 / (fan_in + fan_out))
    bound = math.sqrt(6 / (8 + 16))
    assert weight.abs().max() <= bound and weight.abs().max() > 0.8 * bound
    assert to_torch(model.encoder.layers[0].self_attn.in_proj_bias).abs().max() == 0
    assert to_torch(model.decoder.norm.weight).eq(1).all()
    assert (model.d_model, model.nhead, model.batch_first) == (8, 2, False)


@pytest.mark.parametrize("dtype", [None, torch.float64])
def test_generate_square_subsequent_mask(dtype):
    got = genesis.nn.Transformer.generate_square_subsequent_mask(
        4, device=DEVICE, dtype=None if dtype is None else genesis.float64)
    want = torch.nn.Transformer.generate_square_subsequent_mask(4, dtype=dtype)
    assert got.dtype is (genesis.float32 if dtype is None else genesis.float64)
    assert torch.equal(to_torch(got), want)


def test_transformer_errors():
    def batch_mismatch(lib, s, x):
        return lib.nn.Transformer(6, 2, 1, 1, 8, dtype=lib.float64)(s, x)

    check_error(RuntimeError, batch_mismatch, rand(5, 2, 6), rand(4, 3, 6, seed=1),
                match="the batch number of src and tgt must be equal")
    check_error(RuntimeError, batch_mismatch, rand(5, 2, 6), rand(4, 2, 4, seed=1),
                match="the feature number of src and tgt must be equal to d_model")
    for lib in (torch, genesis):
        with pytest.raises(RuntimeError, match="activation should be relu/gelu, not tanh"):
            lib.nn.TransformerEncoderLayer(6, 2, activation="tanh")
        with pytest.raises(RuntimeError, match="activation should be relu/gelu, not swish"):
            lib.nn.TransformerDecoderLayer(6, 2, activation="swish")


# ---------------------------------------------------------------- packed sequences

def _lib(module):
    return torch if isinstance(module, torch.nn.Module) else genesis


def _run_packed(m, x, *hx, lengths, enforce_sorted):
    utils = _lib(m).nn.utils.rnn
    packed = utils.pack_padded_sequence(x, lengths, enforce_sorted=enforce_sorted)
    out, state = m(packed, None if not hx else (hx if len(hx) == 2 else hx[0]))
    padded, out_lengths = utils.pad_packed_sequence(out, total_length=x.shape[0])
    return (padded, out.data, out.batch_sizes, out_lengths) + flat(state)


@pytest.mark.parametrize("name,kwargs", [
    ("RNN", {"num_layers": 2, "bidirectional": True}),
    ("LSTM", {"num_layers": 2, "bidirectional": True, "proj_size": 3}),
    ("LSTM", {}),
    ("GRU", {"bidirectional": True}),
])
@pytest.mark.parametrize("enforce_sorted", [True, False])
def test_recurrent_packed_input(name, kwargs, enforce_sorted):
    g, t = pair(lambda lib: getattr(lib.nn, name)(4, 5, **kwargs))
    lengths = [4, 3, 1] if enforce_sorted else [3, 4, 1]
    check_module(g, t, rand(4, 3, 4), call=lambda m, x: _run_packed(m, x, lengths=lengths,
                                                                   enforce_sorted=enforce_sorted))
    h_shape, c_shape = _state_shape(name, kwargs, batch=3)
    states = (rand(*h_shape, seed=1), rand(*c_shape, seed=2)) if name == "LSTM" else (rand(*h_shape, seed=1),)
    check_module(g, t, rand(4, 3, 4), *states,
                 call=lambda m, x, *hx: _run_packed(m, x, *hx, lengths=lengths, enforce_sorted=enforce_sorted))


def _gradient_penalty(m, x, *hx, lengths=None):
    """The squared norm of the first gradients (of the input and every parameter), taken with create_graph: its
    own gradients need the layers' backward to be differentiable."""
    lib = genesis if isinstance(m, genesis.nn.Module) else torch
    seq = x if lengths is None else lib.nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=m.batch_first,
                                                                          enforce_sorted=False)
    out, state = m(seq, *((tuple(hx),) if len(hx) == 2 else hx))
    outs = [out.data if lengths is not None else out, *(state if isinstance(state, tuple) else (state,))]
    first = sum((o * o.sin()).sum() for o in outs)
    grads = lib.autograd.grad(first, [x, *hx, *m.parameters()], create_graph=True)
    return sum((g ** 2).sum() for g in grads)


@pytest.mark.parametrize("name,kwargs", RNN_CASES[1::2])
@pytest.mark.parametrize("lengths", [None, [3, 4, 1]])
def test_recurrent_layers_double_backward(name, kwargs, lengths):
    g, t = pair(lambda lib: getattr(lib.nn, name)(4, 5, **kwargs))
    shape = (3, 4, 4) if kwargs.get("batch_first") else (4, 3, 4)
    h_shape, c_shape = _state_shape(name, kwargs, batch=3)
    states = (rand(*h_shape, seed=1), rand(*c_shape, seed=2)) if name == "LSTM" else (rand(*h_shape, seed=1),)
    check_module(g, t, rand(*shape), *states, call=lambda m, x, *hx: _gradient_penalty(m, x, *hx, lengths=lengths))


def test_packed_input_matches_per_sequence_runs():
    # Each packed sequence ends where its length says: its final state equals running it alone.
    gru = genesis.nn.GRU(3, 4, bidirectional=True, dtype=genesis.float64, device=DEVICE)
    x = to_genesis(rand(5, 2, 3, requires_grad=False))
    packed = genesis.nn.utils.rnn.pack_padded_sequence(x, [2, 5], enforce_sorted=False)
    _, h_n = gru(packed)
    for i, n in enumerate([2, 5]):
        _, h_alone = gru(x[:n, i])
        torch.testing.assert_close(to_torch(h_n[:, i]), to_torch(h_alone), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("padding_side", ["right", "left"])
def test_pad_sequence(batch_first, padding_side):
    def fn(lib, a, b, c):
        return lib.nn.utils.rnn.pad_sequence([a, b, c], batch_first=batch_first, padding_value=-2.0,
                                             padding_side=padding_side)

    check(fn, rand(3, 2), rand(5, 2, seed=1), rand(1, 2, seed=2))


def test_packed_sequence_conversions():
    def fn(lib, x):
        packed = lib.nn.utils.rnn.pack_padded_sequence(x, [3, 2], enforce_sorted=False)
        assert packed.is_cuda == (packed.data.device.type == "cuda") and not packed.is_pinned()
        out = [packed.double(), packed.float(), packed.half(), packed.long(), packed.int()]
        assert all(p.batch_sizes is packed.batch_sizes for p in out)
        assert packed.cpu().data.device.type == "cpu"
        return tuple(p.data for p in out) + (out[0].unsorted_indices,)

    check(fn, rand(3, 2, 4))


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("enforce_sorted", [True, False])
def test_pack_and_pad_round_trip(batch_first, enforce_sorted):
    lengths = [5, 3, 3, 1] if enforce_sorted else [3, 5, 1, 2]

    def fn(lib, x):
        utils = lib.nn.utils.rnn
        packed = utils.pack_padded_sequence(x, lengths, batch_first=batch_first, enforce_sorted=enforce_sorted)
        padded, out_lengths = utils.pad_packed_sequence(packed, batch_first=batch_first, padding_value=0.5,
                                                        total_length=6)
        return padded, out_lengths, packed.batch_sizes

    check(fn, rand(4, 5, 2) if batch_first else rand(5, 4, 2))

    def seqs(lib, a, b, c):
        utils = lib.nn.utils.rnn
        packed = utils.pack_sequence([a, b, c], enforce_sorted=enforce_sorted)
        return (packed.data, packed.batch_sizes, *utils.unpack_sequence(packed),
                *utils.unpad_sequence(utils.pad_sequence([a, b, c]), lib.tensor([a.shape[0], b.shape[0], 1])))

    sizes = (4, 2, 1) if enforce_sorted else (2, 4, 1)
    check(seqs, rand(sizes[0], 3), rand(sizes[1], 3, seed=1), rand(sizes[2], 3, seed=2))


@pytest.mark.parametrize("fn,exc,match", [
    (lambda lib, x: lib.nn.utils.rnn.pack_padded_sequence(x, [3, 4]), RuntimeError,
     "must be sorted in decreasing order"),
    (lambda lib, x: lib.nn.utils.rnn.pack_padded_sequence(x, [3, 0]), RuntimeError,
     "Length of all samples has to be greater than 0"),
    (lambda lib, x: lib.nn.utils.rnn.pack_padded_sequence(x, [3, 2, 1]), RuntimeError,
     r"Expected `len\(lengths\)` to be equal to batch_size, but got 3 \(batch_size=2\)"),
    (lambda lib, x: lib.nn.utils.rnn.pad_packed_sequence(lib.nn.utils.rnn.pack_padded_sequence(x, [4, 2]),
                                                         total_length=3), ValueError,
     "Expected total_length to be at least the length of the longest sequence in input, but got total_length=3 "
     "and max sequence length being 4"),
    (lambda lib, x: lib.nn.utils.rnn.pad_sequence([x[0], x[1]], padding_side="top"), RuntimeError,
     "Expected padding_side to be one of left or right, but got top."),
    (lambda lib, x: lib.nn.GRU(3, 4, dtype=lib.float64)(lib.nn.utils.rnn.pack_padded_sequence(x, [4, 2]),
                                                        lib.zeros((1, 3, 4), dtype=lib.float64)), RuntimeError,
     r"Expected hidden size \(1, 2, 4\), got \[1, 3, 4\]"),
])
def test_packing_errors(fn, exc, match):
    check_error(exc, fn, rand(4, 2, 3), match=match)


@pytest.mark.parametrize("nhead,padding", [
    (2, [[False, False, True, True], [False, False, False, False]]),  # left-aligned: torch's nested-tensor path
    (2, [[False, True, False, True], [False, False, False, False]]),  # not left-aligned: the masked computation
    (3, [[False, False, False, True], [False, False, True, True]]),  # odd head count: no fast path
])
@pytest.mark.parametrize("float_mask", [False, True])
def test_transformer_encoder_inference_matches_torch(nhead, padding, float_mask):
    # Evaluation mode without gradients: torch's encoder returns zeros at padded positions (before the final norm)
    # when it can run on nested tensors; the outputs must agree everywhere.
    def make(lib):
        layer = lib.nn.TransformerEncoderLayer(6, nhead, 8, batch_first=True)
        return lib.nn.TransformerEncoder(layer, 2, norm=lib.nn.LayerNorm(6)).eval()

    g, t = pair(make)
    g.load_state_dict({k: to_genesis(v, requires_grad=False) for k, v in t.state_dict().items()})
    x = rand(2, 4, 6, requires_grad=False)
    mask = torch.tensor(padding)
    if float_mask:
        mask = torch.zeros(mask.shape, dtype=torch.float64).masked_fill(mask, float("-inf"))
    with torch.no_grad(), genesis.no_grad():
        want = t(x, src_key_padding_mask=mask)
        got = g(to_genesis(x), src_key_padding_mask=to_genesis(mask))
    torch.testing.assert_close(to_torch(got), want, rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("switch_off", ["use_nested_tensor", "set_fastpath_enabled"])
def test_transformer_encoder_nested_tensor_path_switches(switch_off):
    # torch keeps the padded positions' values where the path is off: by the stack's use_nested_tensor, or by
    # torch.backends.mha.set_fastpath_enabled(False).
    def make(lib):
        layer = lib.nn.TransformerEncoderLayer(6, 2, 8, batch_first=True)
        return lib.nn.TransformerEncoder(layer, 2).eval()

    g, t = pair(make)
    g.load_state_dict({k: to_genesis(v, requires_grad=False) for k, v in t.state_dict().items()})
    assert g.use_nested_tensor is t.use_nested_tensor is True
    x = rand(2, 4, 6, requires_grad=False)
    mask = torch.tensor([[False, False, True, True], [False, False, False, False]])
    for lib, model in ((genesis, g), (torch, t)):
        if switch_off == "use_nested_tensor":
            model.use_nested_tensor = False
        else:
            lib.backends.mha.set_fastpath_enabled(False)
    try:
        with torch.no_grad(), genesis.no_grad():
            want = t(x, src_key_padding_mask=mask)
            got = g(to_genesis(x), src_key_padding_mask=to_genesis(mask))
    finally:
        genesis.backends.mha.set_fastpath_enabled(True)
        torch.backends.mha.set_fastpath_enabled(True)
    assert want[0, 2:].abs().sum() > 0
    torch.testing.assert_close(to_torch(got), want, rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("kwargs", [{}, {"batch_first": True, "norm_first": True}, {"batch_first": True, "nhead": 1},
                                    {"batch_first": True, "bias": False}])
def test_transformer_encoder_use_nested_tensor_and_its_warning(kwargs):
    def make(lib):
        options = dict(kwargs)
        layer = lib.nn.TransformerEncoderLayer(6, options.pop("nhead", 2), 8, **options)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            stack = lib.nn.TransformerEncoder(layer, 1)
        return stack, [str(w.message) for w in caught if "enable_nested_tensor" in str(w.message)]

    (g, g_warned), (t, t_warned) = make(genesis), make(torch)
    assert g.use_nested_tensor is t.use_nested_tensor is False
    assert g_warned == t_warned and len(t_warned) == 1


def test_packed_sequence_to():
    x = rand(3, 2, 4, requires_grad=False)
    got = genesis.nn.utils.rnn.pack_padded_sequence(to_genesis(x), [2, 3], enforce_sorted=False).to(genesis.float32)
    want = torch.nn.utils.rnn.pack_padded_sequence(x, [2, 3], enforce_sorted=False).to(torch.float32)
    assert isinstance(got, genesis.nn.utils.rnn.PackedSequence)
    for g, t in zip(got, want):
        assert g.dtype is GENESIS_DTYPE[t.dtype] and torch.equal(to_torch(g), t)
    same = genesis.nn.utils.rnn.pack_sequence([to_genesis(x[:, 0])])
    assert same.to(genesis.float64) is same


def test_packed_sequence_built_by_hand_and_invert_permutation():
    # As torch's constructor: unsorted_indices follow from sorted_indices, and a (data, batch_sizes) pair is taken
    # as the first two fields; a layer's output packed by hand unpacks in the original order.
    def fn(lib, x):
        utils = lib.nn.utils.rnn
        packed = utils.pack_padded_sequence(x, [2, 4, 3], enforce_sorted=False)
        projected = utils.PackedSequence(packed.data * 2, packed.batch_sizes, packed.sorted_indices)
        pair_form = utils.PackedSequence((packed.data, packed.batch_sizes))
        assert pair_form.sorted_indices is None and pair_form.unsorted_indices is None
        assert type(projected._replace(data=x)).__name__ == "PackedSequence"
        return (projected.unsorted_indices, utils.invert_permutation(lib.tensor([2, 0, 3, 1], device=x.device)),
                utils.pad_packed_sequence(projected)[0], pair_form.batch_sizes)

    check(fn, rand(4, 3, 2))
    assert genesis.nn.utils.rnn.invert_permutation(None) is None
    with pytest.raises(AssertionError, match="Expected data to be a list or tuple of length 2"):
        genesis.nn.utils.rnn.PackedSequence(genesis.ones(2))


@pytest.mark.parametrize("name, kwargs", [("LSTM", {"proj_size": 2}), ("GRU", {"batch_first": True}),
                                          ("RNN", {"bidirectional": True})])
def test_recurrent_check_methods_are_torchs_and_forward_calls_them(name, kwargs):
    # torch's public check methods: the same answers, and a subclass's override is what forward consults.
    seen = {}
    for lib in (torch, genesis):
        class Recording(getattr(lib.nn, name)):
            def check_forward_args(self, input, hidden, batch_sizes, lib=lib):
                seen[lib] = (tuple(input.shape), None if batch_sizes is None else batch_sizes.tolist())
                super().check_forward_args(input, hidden, batch_sizes)

        layer = Recording(3, 4, num_layers=2, **kwargs)
        x = lib.ones(5, 2, 3)
        layer(lib.nn.utils.rnn.pack_padded_sequence(x, [5, 3], enforce_sorted=False))
        layer(x)
        batch = 5 if layer.batch_first else 2
        assert tuple(layer.get_expected_hidden_size(x, None)) == (2 * (1 + layer.bidirectional), batch,
                                                                   2 if name == "LSTM" else 4)
        with pytest.raises(RuntimeError, match=r"Expected hidden size \(1, 2, 3\), got \[1, 2, 4\]"):
            layer.check_hidden_size(lib.ones(1, 2, 4), (1, 2, 3))
        with pytest.raises(RuntimeError, match="input must have 2 dimensions, got 3"):
            layer.check_input(x, lib.tensor([2, 1]))
        h = lib.arange(6.0).reshape(1, 3, 2)
        permuted = layer.permute_hidden((h, h) if name == "LSTM" else h, lib.tensor([2, 0, 1]))
        assert (permuted[0] if name == "LSTM" else permuted)[0, :, 0].tolist() == [4.0, 0.0, 2.0]
    assert seen[torch] == seen[genesis] == ((5, 2, 3), None)


def test_recurrent_layers_refuse_empty_sequences_as_torch():
    check_error(RuntimeError, lambda lib, x: lib.nn.GRU(3, 4, dtype=lib.float64)(x), rand(0, 2, 3),
                match="Expected sequence length to be larger than 0 in RNN")
    check_error(RuntimeError, lambda lib, x: lib.nn.LSTM(3, 4, batch_first=True, dtype=lib.float64)(x),
                rand(2, 0, 3), match="Expected sequence length to be larger than 0 in RNN")


def test_pad_sequence_takes_the_first_sequences_dtype_and_lengths_must_be_1d():
    # torch copies every sequence into a tensor of the first one's dtype (a float padding value is truncated).
    for lib in (torch, genesis):
        utils = lib.nn.utils.rnn
        out = utils.pad_sequence([lib.tensor([1, 2]), lib.tensor([3.7])], padding_value=0.5)
        assert out.dtype == lib.int64 and out.tolist() == [[1, 3], [2, 0]]
        out = utils.pad_sequence([lib.tensor([1.5]), lib.tensor([3, 2])], batch_first=True, padding_value=-1)
        assert out.dtype == lib.float32 and out.tolist() == [[1.5, -1.0], [3.0, 2.0]]
        for lengths, ndim in ((lib.tensor([[3, 2]]), 2), (lib.tensor(3), 0), ([[3, 2]], 2)):
            with pytest.raises(RuntimeError, match=f"should be a 1D CPU int64 tensor, but got {ndim}D cpu Long"):
                utils.pack_padded_sequence(lib.ones(3, 2), lengths)
