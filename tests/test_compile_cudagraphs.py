"""``genesis.compile(module, mode="reduce-overhead")``: CUDA graphs of the forward and backward that give the eager
results (training, several calls before one backward, inference), and eager execution where a graph would not."""

from __future__ import annotations

import warnings

import numpy as np

import genesis
import genesis.nn as nn
import genesis.nn.functional as F
from genesis._dynamo.cudagraphs import _Graphed
from tests.helpers import DEVICE, requires_cuda


def _mlp(seed: int = 0) -> nn.Module:
    genesis.manual_seed(seed)
    return nn.Sequential(nn.Linear(8, 32), nn.GELU(), nn.LayerNorm(32), nn.Linear(32, 4)).to(DEVICE)


def _copy(module: nn.Module) -> nn.Module:
    other = _mlp(1)
    other.load_state_dict(module.state_dict())
    return other


def _graphs(compiled: nn.Module) -> list:
    return [e for e in compiled._graphs.entries.values() if isinstance(e, _Graphed)]


def _assert_same_results(got: tuple, expected: tuple, rtol: float, atol: float) -> None:
    """(output, gradients) of the compiled model against the eager one's."""
    np.testing.assert_allclose(got[0], expected[0], rtol=rtol, atol=atol)
    for g, e in zip(got[1], expected[1]):
        np.testing.assert_allclose(g, e, rtol=rtol, atol=atol)


def test_compiled_training_equals_eager() -> None:
    eager = _mlp()
    compiled = genesis.compile(_copy(eager), mode="reduce-overhead")
    opts = [genesis.optim.Adam(m.parameters(), lr=1e-2) for m in (eager, compiled)]
    x = genesis.randn(16, 8, device=DEVICE)
    y = genesis.randn(16, 4, device=DEVICE)
    for step in range(5):
        losses = []
        for model, opt in zip((eager, compiled), opts):
            loss = F.mse_loss(model(x * (step + 1)), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        np.testing.assert_allclose(losses[1], losses[0], rtol=1e-5, atol=1e-6)
    for p, q in zip(eager.parameters(), compiled.parameters()):
        np.testing.assert_allclose(q.detach().cpu().numpy(), p.detach().cpu().numpy(), rtol=1e-5, atol=1e-6)
    assert len(_graphs(compiled)) == (1 if DEVICE == "cuda" else 0)  # the CPU runs eagerly


@requires_cuda
def test_two_forward_calls_before_one_backward() -> None:
    eager = _mlp()
    compiled = genesis.compile(_copy(eager), mode="reduce-overhead")
    a, b = genesis.randn(16, 8, device="cuda"), genesis.randn(16, 8, device="cuda")
    grads = []
    for model in (eager, compiled):
        for _ in range(3):  # the compiled model captures at its second call and replays at the third
            model.zero_grad()
            first, second = model(a), model(b)  # the second replay overwrites the first one's activations
            (first.square().mean() - second.mean()).backward()
        grads.append([p.grad.cpu().numpy() for p in model.parameters()])
    assert _graphs(compiled)
    for g, e in zip(grads[1], grads[0]):
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)


@requires_cuda
def test_inference_outputs_stay_valid_across_calls() -> None:
    model = _mlp().eval()
    compiled = genesis.compile(model, mode="reduce-overhead")
    xs = [genesis.randn(4, 8, device="cuda") for _ in range(4)]
    with genesis.no_grad():
        outs = [compiled(x) for x in xs]
        expected = [model(x) for x in xs]
    assert _graphs(compiled)
    for out, ref in zip(outs, expected):
        np.testing.assert_allclose(out.cpu().numpy(), ref.cpu().numpy(), rtol=1e-5, atol=1e-6)


@requires_cuda
def test_batch_norm_in_training_runs_eagerly() -> None:
    genesis.manual_seed(0)
    norm = nn.BatchNorm1d(32)
    compiled = genesis.compile(nn.Sequential(nn.Linear(8, 32), norm, nn.Linear(32, 4)).to("cuda"),
                               mode="reduce-overhead")
    x = genesis.randn(16, 8, device="cuda")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            compiled(x)
    assert not _graphs(compiled)
    assert any("running eagerly" in str(w.message) for w in caught)
    assert int(norm.num_batches_tracked.item()) == 3  # the running statistics were updated once per call


@requires_cuda
def test_dropout_draws_a_new_mask_at_every_replay() -> None:
    genesis.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 64), nn.Dropout(0.5)).to("cuda")
    compiled = genesis.compile(model, mode="reduce-overhead")
    x = genesis.randn(16, 8, device="cuda")
    kept = []
    for _ in range(4):
        model.zero_grad()
        out = compiled(x)
        out.sum().backward()
        y = out.detach().cpu().numpy()
        # The backward replays the forward's mask: a weight's gradient is the sum of x over the rows that kept it.
        grad = model[0].weight.grad.cpu().numpy()
        expected = (y != 0).astype(np.float32).T @ x.cpu().numpy() * 2.0
        np.testing.assert_allclose(grad, expected, rtol=1e-4, atol=1e-4)
        kept.append(y != 0)
    assert _graphs(compiled)
    assert not np.array_equal(kept[2], kept[3])  # two replays, two masks
    assert 0.4 < np.mean(kept[3]) < 0.6


@requires_cuda
def test_whole_step_graph_draws_new_random_numbers() -> None:
    x = genesis.ones(4096, device="cuda")
    static = {}

    def step() -> genesis.Tensor:
        return F.dropout(x, 0.5) + genesis.rand(4096, device="cuda")

    step()
    g = genesis.cuda.CUDAGraph()
    with genesis.cuda.graph(g):
        static["out"] = step()
    results = []
    for _ in range(2):
        g.replay()
        results.append(static["out"].cpu().numpy())
    eager = step().cpu().numpy()  # eager draws after the replays take counters of their own
    assert not np.array_equal(results[0], results[1])
    assert not np.array_equal(results[1], eager)


@requires_cuda
def test_moving_the_module_drops_its_graphs() -> None:
    compiled = genesis.compile(_mlp(), mode="reduce-overhead")
    x = genesis.randn(4, 8, device="cuda")
    for _ in range(3):
        compiled(x).sum().backward()
    assert _graphs(compiled)
    compiled.double()
    assert not compiled._graphs.entries
    out = compiled(x.double())
    assert out.dtype is genesis.float64
    genesis.compiler.reset()


def test_keyword_arguments() -> None:
    model = _mlp()
    compiled = genesis.compile(model, mode="reduce-overhead")
    x = genesis.randn(4, 8, device=DEVICE)
    for _ in range(3):
        out = compiled(input=x)
    np.testing.assert_allclose(out.detach().cpu().numpy(), model(x).detach().cpu().numpy(), rtol=1e-6)
    assert len(_graphs(compiled)) == (1 if DEVICE == "cuda" else 0)  # the CPU runs eagerly
    assert type(genesis.compile(model)) is type(compiled) and genesis.compile(model)._graphs is None


class _TokenModel(nn.Module):
    """A Hugging Face-style call: keyword arguments, optional labels, a dict of outputs with None entries."""

    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(32, 16)
        self.head = nn.Linear(16, 32)

    def forward(self, input_ids: genesis.Tensor, attention_mask: genesis.Tensor | None = None,
                labels: genesis.Tensor | None = None, output_hidden_states: bool = False) -> dict:
        hidden = self.emb(input_ids)  # (B, T, 16)
        if attention_mask is not None:
            hidden = hidden * attention_mask.unsqueeze(-1)
        logits = self.head(hidden)  # (B, T, 32)
        loss = None if labels is None else F.cross_entropy(logits.view(-1, 32), labels.view(-1), ignore_index=-100)
        return {"loss": loss, "logits": logits, "hidden_states": hidden if output_hidden_states else None}


@requires_cuda
def test_hugging_face_style_calls() -> None:
    genesis.manual_seed(0)
    eager = _TokenModel().to("cuda")
    other = _TokenModel().to("cuda")
    other.load_state_dict(eager.state_dict())
    compiled = genesis.compile(other, mode="reduce-overhead")
    ids = genesis.randint(0, 32, (2, 6), device="cuda")
    mask = genesis.ones(2, 6, device="cuda")
    labels = ids.clone()
    labels[:, :2] = -100
    results = []
    for model in (eager, compiled):
        for _ in range(3):
            model.zero_grad()
            out = model(ids, attention_mask=mask, labels=labels)
            out["loss"].backward()
        assert out["hidden_states"] is None
        with genesis.no_grad():
            logits = model(ids, attention_mask=mask)["logits"]  # another key: no labels, no grad
        results.append((out["loss"].item(), (logits.cpu().numpy(), [p.grad.cpu().numpy() for p in model.parameters()])))
    assert len(_graphs(compiled)) == 1  # the no-grad call ran once: its warm-up
    np.testing.assert_allclose(results[1][0], results[0][0], rtol=1e-5)
    _assert_same_results(results[1][1], results[0][1], 1e-5, 1e-6)


class _Scaled(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 4)

    def forward(self, x: genesis.Tensor, factor: object) -> genesis.Tensor:
        return self.lin(x) * factor.value


@requires_cuda
def test_calls_with_other_objects_run_eagerly() -> None:
    class Factor:
        value = 2.0

    compiled = genesis.compile(_Scaled().to("cuda"), mode="reduce-overhead")
    x = genesis.randn(4, 8, device="cuda")
    for _ in range(3):
        out = compiled(x, Factor())  # an object the key cannot compare: never captured
    assert not compiled._graphs.entries
    np.testing.assert_allclose(out.detach().cpu().numpy(), (compiled._orig_mod.lin(x) * 2.0).detach().cpu().numpy())


@requires_cuda
def test_modules_with_hooks_run_eagerly() -> None:
    model = _mlp()
    seen = []
    model[1].register_forward_hook(lambda module, args, out: seen.append(out.shape))
    compiled = genesis.compile(model, backend="cudagraphs")  # torch's other spelling of CUDA graphs
    x = genesis.randn(4, 8, device="cuda")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            compiled(x)
    assert not _graphs(compiled) and len(seen) == 3  # the hook ran at every call
    assert any("hooks" in str(w.message) for w in caught)


@requires_cuda
def test_transformer_encoder_with_a_causal_mask() -> None:
    """nn.TransformerEncoder asks whether its mask is causal (a read of the mask's values): the capture goes on
    with the mask applied as given, which computes the same."""
    genesis.manual_seed(0)
    layer = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0)
    eager = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False).to("cuda")
    other = nn.TransformerEncoder(nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0), 2,
                                  enable_nested_tensor=False).to("cuda")
    other.load_state_dict(eager.state_dict())
    compiled = genesis.compile(other, mode="reduce-overhead")
    x = genesis.randn(6, 3, 16, device="cuda")
    mask = nn.Transformer.generate_square_subsequent_mask(6, device="cuda")
    outs = []
    for model in (eager, compiled):
        for _ in range(3):
            model.zero_grad()
            out = model(x, mask=mask)
            out.square().mean().backward()
        outs.append((out.detach().cpu().numpy(), [p.grad.cpu().numpy() for p in model.parameters()]))
    assert _graphs(compiled)
    _assert_same_results(outs[1], outs[0], 1e-4, 1e-5)


class _TwoOutputs(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 4)

    def forward(self, x: genesis.Tensor) -> tuple[genesis.Tensor, genesis.Tensor]:
        y = self.lin(x)
        return y, y.argmax(-1)


@requires_cuda
def test_outputs_without_gradient_stay_so() -> None:
    compiled = genesis.compile(_TwoOutputs().to("cuda"), mode="reduce-overhead")
    x = genesis.randn(4, 8, device="cuda")
    for _ in range(3):
        y, labels = compiled(x)
        y.sum().backward()
    assert _graphs(compiled)
    assert y.requires_grad and not labels.requires_grad and labels.dtype is genesis.int64


@requires_cuda
def test_recurrent_module_with_nested_arguments_and_outputs() -> None:
    genesis.manual_seed(0)
    eager = nn.LSTM(8, 16, num_layers=2).to("cuda")
    other = nn.LSTM(8, 16, num_layers=2).to("cuda")
    other.load_state_dict(eager.state_dict())
    compiled = genesis.compile(other, mode="reduce-overhead")
    x = genesis.randn(5, 3, 8, device="cuda")
    state = (genesis.zeros(2, 3, 16, device="cuda"), genesis.zeros(2, 3, 16, device="cuda"))
    results = []
    for model in (eager, compiled):
        hidden = state
        for _ in range(3):
            model.zero_grad()
            out, hidden = model(x, hidden)  # (T, B, 16), ((2, B, 16), (2, B, 16))
            (out.square().mean() + hidden[1].sum()).backward()
            hidden = tuple(h.detach() for h in hidden)
        results.append((out.detach().cpu().numpy(), [p.grad.cpu().numpy() for p in model.parameters()]))
    assert _graphs(compiled)
    _assert_same_results(results[1], results[0], 1e-4, 1e-5)
