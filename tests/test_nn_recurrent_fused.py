"""The fused recurrent layers (one ``RecurrentLayer`` autograd node per layer and direction) against torch: outputs
and every gradient (input, h0, c0, all weights and biases) in float32 and float64, the gradients of partly used
outputs, inputs without gradient, half precision, the paths that keep the per-step composite (packed sequences,
``proj_size``), and the checks on saved values; on cuda, cuDNN's RNN against the time loop and the TF32 switches."""

import pytest
import torch

import genesis
from tests.helpers import DEVICE, check_module, rand, requires_cuda, to_genesis, to_torch

pytestmark = pytest.mark.usefixtures("full_float32")  # cuDNN's layers in full float32 unless a test turns TF32 on

GENESIS_DTYPE = {torch.float32: genesis.float32, torch.float64: genesis.float64}

CONFIGS = [
    {},
    {"num_layers": 2, "bidirectional": True},
    {"num_layers": 2, "batch_first": True, "bias": False},
    {"bidirectional": True, "batch_first": True},
]
MODES = [("RNN", {}), ("RNN", {"nonlinearity": "relu"}), ("LSTM", {}), ("GRU", {})]


def _pair(name: str, kwargs: dict, dtype: torch.dtype, input_size: int = 4, hidden: int = 6):
    torch.manual_seed(0)
    t = getattr(torch.nn, name)(input_size, hidden, **kwargs).to(dtype)
    g = getattr(genesis.nn, name)(input_size, hidden, **kwargs).to(DEVICE, GENESIS_DTYPE[dtype])
    return g, t


def _flat(out):
    if isinstance(out, tuple):
        return tuple(x for o in out for x in _flat(o))
    return (out,)


def _states(name: str, kwargs: dict, batch: int, dtype: torch.dtype, hidden: int = 6) -> tuple:
    lead = kwargs.get("num_layers", 1) * (2 if kwargs.get("bidirectional") else 1)
    count = 2 if name == "LSTM" else 1
    return tuple(rand(lead, batch, hidden, dtype=dtype, seed=1 + k) for k in range(count))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("config", CONFIGS, ids=["plain", "2layer-bidir", "2layer-batchfirst-nobias", "bidir-bf"])
@pytest.mark.parametrize("name,extra", MODES, ids=["rnn-tanh", "rnn-relu", "lstm", "gru"])
def test_fused_layers_match_torch(name, extra, config, dtype):
    kwargs = {**extra, **config}
    g, t = _pair(name, kwargs, dtype)
    shape = (3, 5, 4) if kwargs.get("batch_first") else (5, 3, 4)
    tol = {"rtol": 1e-4, "atol": 1e-5} if dtype is torch.float32 else {}
    states = _states(name, kwargs, 3, dtype)
    if name == "LSTM":
        check_module(g, t, rand(*shape, dtype=dtype), *states, call=lambda m, x, h, c: _flat(m(x, (h, c))), **tol)
    else:
        check_module(g, t, rand(*shape, dtype=dtype), *states, call=lambda m, x, h: _flat(m(x, h)), **tol)
    check_module(g, t, rand(*shape, dtype=dtype, seed=5), call=lambda m, x: _flat(m(x)), **tol)


@pytest.mark.parametrize("lengths", [None, [5, 2, 4, 1]], ids=["padded", "packed"])
@pytest.mark.parametrize("used", ["output", "h_n", "c_n"])
@pytest.mark.parametrize("name", ["LSTM", "GRU", "RNN"])
def test_gradients_of_partly_used_outputs(name, used, lengths):
    """Only one output feeds the loss; packed, the final states' gradients enter each sequence at its own last
    step."""
    if used == "c_n" and name != "LSTM":
        pytest.skip("only an LSTM has a cell state")
    kwargs = {"num_layers": 2, "bidirectional": True}
    g, t = _pair(name, kwargs, torch.float64)
    g.load_state_dict({k: to_genesis(v, requires_grad=False) for k, v in t.state_dict().items()})
    x = rand(5, 4, 4)
    states = _states(name, kwargs, 4, torch.float64)
    results = []
    for lib, m in ((genesis, g), (torch, t)):
        xs = [to_genesis(v) if lib is genesis else v.detach().clone().requires_grad_() for v in (x, *states)]
        data = xs[0] if lengths is None else lib.nn.utils.rnn.pack_padded_sequence(xs[0], lengths,
                                                                                     enforce_sorted=False)
        out, hidden = m(data, tuple(xs[1:]) if name == "LSTM" else xs[1])
        out = out if lengths is None else out.data
        hidden = hidden if name == "LSTM" else (hidden,)
        pick = {"output": out, "h_n": hidden[0], "c_n": hidden[-1]}[used]
        (pick * pick).sum().backward()
        results.append([v.grad for v in xs] + [p.grad for p in m.parameters()])
    for got, ref in zip(*results):
        torch.testing.assert_close(to_torch(got), ref)


def test_inputs_without_gradient_and_frozen_weights():
    g, t = _pair("LSTM", {"num_layers": 2}, torch.float64)
    g.load_state_dict({k: to_genesis(v, requires_grad=False) for k, v in t.state_dict().items()})
    for m in (g, t):
        m.weight_ih_l0.requires_grad_(False)
        m.bias_hh_l1.requires_grad_(False)
    x = rand(4, 3, 4, requires_grad=False)
    out, _ = g(to_genesis(x))
    ref, _ = t(x)
    (out * out).sum().backward()
    (ref * ref).sum().backward()
    assert g.weight_ih_l0.grad is None and g.bias_hh_l1.grad is None
    for (name, p), q in zip(g.named_parameters(), t.parameters()):
        if q.grad is not None:
            torch.testing.assert_close(to_torch(p.grad), q.grad, msg=name)


@pytest.mark.parametrize("name", ["LSTM", "GRU"])
def test_bfloat16_computes_cells_in_float32(name):
    g, t = _pair(name, {"bidirectional": True}, torch.float64)
    g.load_state_dict({k: to_genesis(v, requires_grad=False) for k, v in t.state_dict().items()})
    g = g.to(genesis.bfloat16)
    x = rand(6, 2, 4)
    out, _ = g(to_genesis(x.to(torch.bfloat16)))
    ref, _ = t(x.to(torch.bfloat16).double())
    assert out.dtype is genesis.bfloat16
    torch.testing.assert_close(to_torch(out).double(), ref.detach(), rtol=0.05, atol=0.03)
    out.float().sum().backward()
    ref.sum().backward()
    torch.testing.assert_close(to_torch(g.weight_hh_l0.grad).double(), t.weight_hh_l0.grad, rtol=0.05, atol=0.05)


def test_one_node_per_layer_direction_and_the_composite_paths():
    """Padded and packed input, and LSTM projections, run one node per layer and direction."""
    lstm = genesis.nn.LSTM(3, 4, num_layers=2).to(DEVICE)
    out, (h, c) = lstm(genesis.randn(5, 2, 3, device=DEVICE))
    assert "RecurrentLayer" in out.grad_fn.name()
    projected = genesis.nn.LSTM(3, 4, proj_size=2).to(DEVICE)
    out, _ = projected(genesis.randn(5, 2, 3, device=DEVICE))
    assert out.grad_fn.name() == "RecurrentLayerBackward0"
    packed = genesis.nn.utils.rnn.pack_padded_sequence(genesis.randn(5, 2, 3, device=DEVICE), [5, 3])
    out, _ = lstm(packed)
    assert out.data.grad_fn.name() == "RecurrentLayerBackward0"


def test_create_graph_differentiates_the_layer_in_tensor_ops():
    # The fused node's gradients come back differentiable (compared with torch's double backward in
    # test_nn_rnn_transformer.py); without create_graph they come from the fused backward, not recorded.
    gru = genesis.nn.GRU(3, 4).to(DEVICE)
    out, _ = gru(genesis.randn(5, 2, 3, device=DEVICE, requires_grad=True))
    grads = genesis.autograd.grad(out.sum(), list(gru.parameters()), create_graph=True, retain_graph=True)
    assert all(g.requires_grad for g in grads)
    assert not any(g.requires_grad for g in genesis.autograd.grad(out.sum(), list(gru.parameters())))


def test_output_changed_in_place_is_detected():
    lstm = genesis.nn.LSTM(3, 4).to(DEVICE)
    out, _ = lstm(genesis.randn(5, 2, 3, device=DEVICE))
    out.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()


def test_inference_without_grad_matches_torch():
    g, t = _pair("GRU", {"num_layers": 2, "bidirectional": True}, torch.float64)
    g.load_state_dict({k: to_genesis(v, requires_grad=False) for k, v in t.state_dict().items()})
    x = rand(4, 3, 4, requires_grad=False)
    with genesis.no_grad():
        out, h = g(to_genesis(x))
    with torch.no_grad():
        ref, ref_h = t(x)
    assert out.grad_fn is None
    torch.testing.assert_close(to_torch(out), ref)
    torch.testing.assert_close(to_torch(h), ref_h)


@requires_cuda
def test_states_on_another_device_are_refused():
    lstm = genesis.nn.LSTM(3, 4).to("cuda")
    h = genesis.zeros(1, 2, 4)
    with pytest.raises(RuntimeError, match="Input and hidden tensors are not at the same device"):
        lstm(genesis.randn(5, 2, 3, device="cuda"), (h, h))


def _run_all(m, x, states, name, lengths=None):
    data = x if lengths is None else genesis.nn.utils.rnn.pack_padded_sequence(x, lengths, enforce_sorted=False)
    out, hidden = m(data, states if name == "LSTM" else states[0])
    out = out if lengths is None else out.data
    hidden = hidden if name == "LSTM" else (hidden,)
    loss = (out * out).sum() + sum((h * h).sum() for h in hidden)
    loss.backward()
    return [out, *hidden, x.grad, *(s.grad for s in states), *(p.grad for p in m.parameters())]


@requires_cuda
@pytest.mark.parametrize("lengths", [None, [9, 4, 9, 1, 6]], ids=["padded", "packed"])
@pytest.mark.parametrize("name,extra", MODES, ids=["rnn-tanh", "rnn-relu", "lstm", "gru"])
def test_cudnn_layers_match_the_time_loop(name, extra, lengths):
    """On cuda the layers run through cuDNN's RNN API where cuDNN is there; with cuDNN switched off they run the
    time loop of fused cells. Both give the same values and gradients, padded or packed, bidirectional and over two
    layers."""
    if not genesis.backends.cudnn.is_available():
        pytest.skip("cuDNN is not available")
    from genesis._impl.cuda import rnn_cudnn

    torch.manual_seed(0)
    kwargs = {**extra, "num_layers": 2, "bidirectional": True}
    m = getattr(genesis.nn, name)(24, 40, **kwargs).to("cuda")
    x = rand(9, 5, 24, dtype=torch.float32)
    states = _states(name, kwargs, 5, torch.float32, hidden=40)
    results = []
    for enabled in (True, False):
        rnn_cudnn._plans.clear()
        m.zero_grad()
        with genesis.backends.cudnn.flags(enabled=enabled):
            got = _run_all(m, to_genesis(x, device="cuda"), tuple(to_genesis(s, device="cuda") for s in states), name,
                           lengths)
        assert any(p is not None for p in rnn_cudnn._plans.values()) is enabled
        results.append([to_torch(v) for v in got])
    for k, (a, b) in enumerate(zip(*results)):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5, msg=f"result {k}")


@requires_cuda
def test_tf32_follows_the_cudnn_switch():
    """float32 layers on cuda use TF32 tensor cores where ``genesis.backends.cudnn.allow_tf32`` is on (the default),
    as torch's cuDNN RNN, whatever ``genesis.backends.cuda.matmul.allow_tf32`` says: the results then stay within
    TF32's precision of torch's float32 ones and differ from the full-float32 ones, which match torch's to float32's
    precision."""
    assert genesis.backends.cudnn.allow_tf32 is False  # the module's fixture; the library default is True
    g, t = _pair("LSTM", {"num_layers": 2}, torch.float32, input_size=64, hidden=128)
    g.load_state_dict({k: to_genesis(v, requires_grad=False, device="cuda") for k, v in t.state_dict().items()})
    g = g.to("cuda")
    x = rand(12, 8, 64, dtype=torch.float32)
    ref, (ref_h, ref_c) = t(x)
    ref.sum().backward()
    outputs = {}
    tf32, fp32 = {"rtol": 2e-2, "atol": 2e-3}, {"rtol": 1e-4, "atol": 1e-5}
    for matmul, cudnn, tol in ((False, True, tf32), (True, True, tf32), (False, False, fp32), (True, False, fp32)):
        g.zero_grad()
        genesis.backends.cuda.matmul.allow_tf32 = matmul
        try:
            with genesis.backends.cudnn.flags(allow_tf32=cudnn):
                out, (h, c) = g(to_genesis(x, device="cuda"))
                out.sum().backward()
        finally:
            genesis.backends.cuda.matmul.allow_tf32 = False
        for got, want in ((out, ref), (h, ref_h), (c, ref_c), (g.weight_hh_l0.grad, t.weight_hh_l0.grad)):
            torch.testing.assert_close(to_torch(got), want.detach(), **tol)
        outputs[cudnn] = to_torch(out)
    assert not torch.equal(outputs[True], outputs[False])  # TF32 did run


def _run_packed(m, x, *hx, lengths):
    lib = torch if isinstance(m, torch.nn.Module) else genesis
    packed = lib.nn.utils.rnn.pack_padded_sequence(x, lengths, enforce_sorted=False)
    out, state = m(packed, None if not hx else (hx if len(hx) == 2 else hx[0]))
    return (out.data,) + _flat(state)


PACKED_LENGTHS = [[6, 6, 3, 2, 2, 1], [2, 6, 1, 6, 2, 3], [4, 4, 4, 4, 4, 4], [6, 1, 1, 1, 1, 1]]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("lengths", PACKED_LENGTHS, ids=["sorted-repeats", "unsorted", "equal", "one-long"])
@pytest.mark.parametrize("config", [{}, {"num_layers": 2, "bidirectional": True}], ids=["plain", "2layer-bidir"])
@pytest.mark.parametrize("name,extra", MODES, ids=["rnn-tanh", "rnn-relu", "lstm", "gru"])
def test_packed_layers_match_torch(name, extra, config, lengths, dtype):
    """Packed sequences run one node per layer and direction too: every sequence ends (going forward) or starts
    (going backward) at its own last step, with its own final state, and every gradient matches torch's."""
    kwargs = {**extra, **config}
    g, t = _pair(name, kwargs, dtype)
    tol = {"rtol": 1e-4, "atol": 1e-5} if dtype is torch.float32 else {}
    states = _states(name, kwargs, len(lengths), dtype)
    check_module(g, t, rand(max(lengths), len(lengths), 4, dtype=dtype), *states,
                 call=lambda m, x, *hx: _run_packed(m, x, *hx, lengths=lengths), **tol)
    check_module(g, t, rand(max(lengths), len(lengths), 4, dtype=dtype, seed=7),
                 call=lambda m, x: _run_packed(m, x, lengths=lengths), **tol)


@pytest.mark.parametrize("dtype", [genesis.float16, genesis.bfloat16], ids=["float16", "bfloat16"])
@pytest.mark.parametrize("name", ["LSTM", "GRU", "RNN"])
def test_autocast_casts_the_layer_as_torch(name, dtype):
    """Under autocast, torch runs cuDNN's recurrent layers in float16 whatever the region's dtype, and on the CPU
    the LSTM in the region's dtype (oneDNN) while GRU and RNN follow their products. Genesis gives the same dtypes,
    runs the fused node where torch runs a fused layer, and stays close to the float32 result."""
    device_type = DEVICE.split(":")[0]
    if device_type == "cpu" and dtype is genesis.float16:
        pytest.skip("CPU autocast runs bfloat16 here")
    g, t = _pair(name, {"num_layers": 2}, torch.float32)
    g.load_state_dict({k: to_genesis(v, requires_grad=False) for k, v in t.state_dict().items()})
    x = rand(7, 3, 4, dtype=torch.float32)
    ref, _ = t(x)
    xg = to_genesis(x)
    with genesis.autocast(device_type, dtype=dtype):
        out, hidden = g(xg)
    if device_type == "cuda":
        expected, fused = genesis.float16, True
    else:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            expected = GENESIS_DTYPE.get(t(x)[0].dtype, genesis.bfloat16)
        fused = name == "LSTM"
    assert out.dtype is expected
    assert (out.grad_fn.name() == "RecurrentLayerBackward0") is fused
    torch.testing.assert_close(to_torch(out.float()), ref.detach(), rtol=0.05, atol=0.03)
    out.float().sum().backward()
    ref.sum().backward()
    assert g.weight_ih_l0.grad.dtype is genesis.float32
    torch.testing.assert_close(to_torch(g.weight_hh_l0.grad), t.weight_hh_l0.grad, rtol=0.05, atol=0.05)


CELLS = [("RNNCell", {}), ("RNNCell", {"nonlinearity": "relu"}), ("LSTMCell", {}), ("GRUCell", {})]


def _cell_pair(name, kwargs, dtype):
    torch.manual_seed(0)
    t = getattr(torch.nn, name)(4, 5, **kwargs).to(dtype)
    g = getattr(genesis.nn, name)(4, 5, **kwargs).to(DEVICE, GENESIS_DTYPE[dtype])
    g.load_state_dict({k: to_genesis(v, requires_grad=False) for k, v in t.state_dict().items()})
    return g, t


def _cell_states(name, dtype):
    states = (rand(3, 5, dtype=dtype, seed=1),) + ((rand(3, 5, dtype=dtype, seed=2),) if name == "LSTMCell" else ())
    return states


def _cell_call(m, x, states, name):
    out = m(x, tuple(states)) if name == "LSTMCell" else m(x, states[0])
    return out if isinstance(out, tuple) else (out,)


@pytest.mark.parametrize("name,extra", CELLS, ids=["rnn-tanh", "rnn-relu", "lstm", "gru"])
def test_cells_are_one_fused_node(name, extra):
    """A cell step is its two products and one fused cell node, in float32 as in float64."""
    g, t = _cell_pair(name, extra, torch.float32)
    x, states = rand(3, 4, dtype=torch.float32), _cell_states(name, torch.float32)
    outs = _cell_call(g, to_genesis(x), [to_genesis(s) for s in states], name)
    assert all(o.grad_fn.name() == "RecurrentCellBackward0" for o in outs)
    check_module(g, t, x, *states, call=lambda m, x, *s: _cell_call(m, x, s, name), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name,extra", CELLS, ids=["rnn-tanh", "rnn-relu", "lstm", "gru"])
def test_cells_double_backward_matches_torch(name, extra):
    """create_graph through a fused cell differentiates the step again in tensor ops: second derivatives (a
    gradient penalty on the input) match torch's."""
    g, t = _cell_pair(name, extra, torch.float64)
    x, states = rand(3, 4), _cell_states(name, torch.float64)
    results = []
    for lib, m in ((genesis, g), (torch, t)):
        xs = [to_genesis(v) if lib is genesis else v.detach().clone().requires_grad_() for v in (x, *states)]
        outs = _cell_call(m, xs[0], xs[1:], name)
        loss = sum((o * o).sum() for o in outs)
        grads = lib.autograd.grad(loss, [xs[0], xs[1]], create_graph=True)
        penalty = sum((gr * gr).sum() for gr in grads)
        penalty.backward()
        results.append([v.grad for v in xs] + [p.grad for p in m.parameters()])
    for got, ref in zip(*results):
        torch.testing.assert_close(to_torch(got), ref)


def test_cells_with_mixed_dtypes_compute_in_tensor_ops():
    """Products in bfloat16 beside a float32 state (autocast on the CPU) take the step in tensor ops, as torch."""
    from genesis.ops.recurrent import recurrent_cell

    gi = genesis.randn(3, 15, dtype=genesis.bfloat16, device=DEVICE)
    gh = genesis.randn(3, 15, dtype=genesis.bfloat16, device=DEVICE)
    h = genesis.randn(3, 5, device=DEVICE)
    (out,) = recurrent_cell("GRU", gi, gh, h)
    assert out.dtype is genesis.float32 and out.grad_fn is None
    i_r, i_z, i_n = to_torch(gi).chunk(3, -1)
    h_r, h_z, h_n = to_torch(gh).chunk(3, -1)
    r, z = (i_r + h_r).sigmoid(), (i_z + h_z).sigmoid()
    n = (i_n + r * h_n).tanh()
    torch.testing.assert_close(to_torch(out), (1 - z) * n + z * to_torch(h))


@requires_cuda
def test_backward_after_cudnn_was_switched_off():
    """A layer that ran forward through cuDNN takes its backward there too, whatever the switch says by then."""
    g, t = _pair("LSTM", {"num_layers": 2}, torch.float64)
    g.load_state_dict({k: to_genesis(v, requires_grad=False, device="cuda") for k, v in t.state_dict().items()})
    g = g.to("cuda")
    x = rand(6, 3, 4)
    out, _ = g(to_genesis(x, device="cuda"))
    with genesis.backends.cudnn.flags(enabled=False):
        out.sum().backward()
    ref, _ = t(x)
    ref.sum().backward()
    torch.testing.assert_close(to_torch(g.weight_ih_l0.grad), t.weight_ih_l0.grad)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("lengths", [None, [6, 2, 5]], ids=["padded", "packed"])
@pytest.mark.parametrize("config", [{}, {"num_layers": 2, "bidirectional": True, "batch_first": True},
                                    {"bias": False}], ids=["plain", "2layer-bidir-bf", "nobias"])
def test_lstm_projection_matches_torch(config, lengths, dtype):
    """LSTM with proj_size: h (and the output) projected to P by weight_hr, c kept H wide; every gradient,
    weight_hr's included, matches torch's, padded and packed."""
    kwargs = {"proj_size": 3, **config}
    g, t = _pair("LSTM", kwargs, dtype)
    tol = {"rtol": 1e-4, "atol": 1e-5} if dtype is torch.float32 else {}
    lead = kwargs.get("num_layers", 1) * (2 if kwargs.get("bidirectional") else 1)
    states = (rand(lead, 3, 3, dtype=dtype, seed=1), rand(lead, 3, 6, dtype=dtype, seed=2))
    shape = (3, 6, 4) if kwargs.get("batch_first") else (6, 3, 4)

    def call(m, x, h, c):
        lib = torch if isinstance(m, torch.nn.Module) else genesis
        data = x if lengths is None else lib.nn.utils.rnn.pack_padded_sequence(
            x, lengths, batch_first=kwargs.get("batch_first", False), enforce_sorted=False)
        out, (h_n, c_n) = m(data, (h, c))
        return (out if lengths is None else out.data, h_n, c_n)
    check_module(g, t, rand(*shape, dtype=dtype), *states, call=call, **tol)
