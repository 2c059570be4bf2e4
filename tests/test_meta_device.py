"""The meta device against torch's: tensors with a shape and dtype but no data, models built there and then given
memory (``to_empty``) or a checkpoint (``load_state_dict(assign=True)``), and torch's errors where data is read."""

from __future__ import annotations

import pytest
import torch

import genesis
from tests.helpers import DEVICE, assert_same, to_genesis


def _layout(t: object) -> tuple:
    return tuple(t.shape), str(t.dtype).split(".")[-1], t.device.type


OPS = {
    "embedding_layer_norm": lambda lib, F: F.layer_norm(F.embedding(lib.randint(0, 50, (2, 5), device="meta"),
                                                                    lib.empty(50, 8, device="meta")), (8,)),
    "linear_cross_entropy": lambda lib, F: F.cross_entropy(F.linear(lib.empty(10, 8, device="meta"),
                                                                    lib.empty(6, 8, device="meta")),
                                                           lib.zeros(10, dtype=lib.int64, device="meta")),
    "sdpa_causal": lambda lib, F: F.scaled_dot_product_attention(*[lib.empty(2, 3, 5, 4, device="meta")] * 3,
                                                                 is_causal=True),
    "conv_pool_interpolate": lambda lib, F: F.interpolate(F.max_pool2d(F.conv2d(
        lib.empty(2, 3, 8, 8, device="meta"), lib.empty(4, 3, 3, 3, device="meta"), padding=1), 2), scale_factor=2),
    "matmul_softmax_topk": lambda lib, F: (lib.empty(2, 5, 4, device="meta") @ lib.empty(4, 7, device="meta"))
    .softmax(-1).topk(3).indices,
    "reductions_and_casts": lambda lib, F: (lib.empty(3, 4, device="meta").mean(0).to(lib.float16),
                                            lib.empty(3, 4, device="meta").argmax(1),
                                            lib.cat([lib.ones(2, 3, device="meta")] * 2, 1),
                                            lib.arange(7, device="meta"), lib.full((2,), 3, device="meta")),
    "dropout_where_einsum": lambda lib, F: lib.einsum("bij,bkj->bik", *[F.dropout(lib.where(
        lib.empty(2, 3, 4, device="meta") > 0, lib.empty(2, 3, 4, device="meta"), 0.0), 0.5)] * 2),
}


@pytest.mark.parametrize("name", sorted(OPS))
def test_ops_give_torch_shapes_and_dtypes(name: str) -> None:
    got, expected = OPS[name](genesis, genesis.nn.functional), OPS[name](torch, torch.nn.functional)
    got = got if isinstance(got, tuple) else (got,)
    expected = expected if isinstance(expected, tuple) else (expected,)
    assert [_layout(g) for g in got] == [_layout(t) for t in expected]


def _model(lib: object) -> object:
    nn = lib.nn
    return nn.Sequential(nn.Embedding(20, 8), nn.LayerNorm(8), nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0,
                                                                                         batch_first=True),
                         nn.Linear(8, 20))


def test_model_built_on_meta_then_backward() -> None:
    models = {}
    for lib in (torch, genesis):
        with lib.device("meta"):
            model = _model(lib)
            loss = model(lib.randint(0, 20, (2, 6))).logsumexp(-1).sum()
        loss.backward()
        models[lib] = model
    g_params, t_params = dict(models[genesis].named_parameters()), dict(models[torch].named_parameters())
    assert list(g_params) == list(t_params)
    for name, t in t_params.items():
        assert _layout(g_params[name]) == _layout(t) and g_params[name].is_meta
        assert _layout(g_params[name].grad) == _layout(t.grad)


def test_to_empty_and_assign_give_real_weights() -> None:
    reference = _model(torch)
    with genesis.device("meta"):
        model = _model(genesis)
    assert all(p.is_meta for p in model.parameters())
    model.to_empty(device=DEVICE)
    assert all(p.device.type == DEVICE.split(":")[0] and not p.is_meta for p in model.parameters())
    model.load_state_dict({k: to_genesis(v, requires_grad=False) for k, v in reference.state_dict().items()})
    ids = torch.tensor([[1, 4, 7], [2, 3, 19]])
    assert_same(model.eval()(to_genesis(ids)), reference.eval()(ids), rtol=1e-5, atol=1e-6)
    # A checkpoint assigned into a meta model: its tensors become the parameters.
    with genesis.device("meta"):
        fresh = _model(genesis)
    fresh.load_state_dict({k: to_genesis(v, requires_grad=False) for k, v in reference.state_dict().items()},
                          assign=True)
    assert not any(p.is_meta for p in fresh.parameters())
    assert_same(fresh.eval()(to_genesis(ids)), reference.eval()(ids), rtol=1e-5, atol=1e-6)
    # recurse=False moves this module's own tensors only.
    with genesis.device("meta"):
        outer = genesis.nn.Sequential(genesis.nn.Linear(2, 2))
    outer.register_buffer("scale", genesis.ones(2, device="meta"))
    outer.to_empty(device="cpu", recurse=False)
    assert not outer.scale.is_meta and outer[0].weight.is_meta


def test_printing_and_errors_as_torch() -> None:
    for make in (lambda lib: lib.empty(3, 4, device="meta"), lambda lib: lib.empty(2, dtype=lib.int64, device="meta"),
                 lambda lib: lib.empty((), device="meta"),
                 lambda lib: lib.nn.Linear(2, 3, device="meta").weight):
        assert repr(make(genesis)).replace("genesis.", "torch.") == repr(make(torch))
    reads = {
        "item of many": (lambda lib, t: t.item(), RuntimeError),
        "item": (lambda lib, t: t.sum().item(), RuntimeError),
        "bool": (lambda lib, t: bool(t.sum() > 0), RuntimeError),
        "numpy": (lambda lib, t: t.numpy(), TypeError),
        "tolist": (lambda lib, t: t.tolist(), NotImplementedError),
        "to cpu": (lambda lib, t: t.to("cpu"), NotImplementedError),
        "mixed devices": (lambda lib, t: t + lib.ones(3, 4), RuntimeError),
    }
    for name, (fn, error) in reads.items():
        messages = []
        for lib in (torch, genesis):
            with pytest.raises(error) as info:
                fn(lib, lib.empty(3, 4, device="meta"))
            messages.append(str(info.value))
        if name != "mixed devices":  # Genesis names the op and both devices in its own words
            assert messages[0] == messages[1], name
    assert genesis.device("meta").index is None and genesis.device("meta").is_available()
    moved = genesis.ones(2, 3).to("meta")
    assert moved.is_meta and tuple(moved.shape) == (2, 3) and moved.data_ptr() == 0
