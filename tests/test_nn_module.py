"""nn.Module semantics: registration, naming, state_dict round trips, modes, device/dtype moves, hooks, repr."""

import collections
import warnings
from collections import OrderedDict

import pytest
import torch

import genesis
import genesis.nn as nn
from tests.helpers import DEVICE, expected_repr, requires_cuda, to_genesis, to_torch


class Block(nn.Module):
    def __init__(self, lib: object) -> None:
        super().__init__()
        self.fc = lib.nn.Linear(3, 4)
        self.norm = lib.nn.BatchNorm1d(4)
        self.register_buffer("scale", lib.ones(4))
        self.register_buffer("cache", lib.zeros(2), persistent=False)

    def forward(self, x: object) -> object:
        return self.norm(self.fc(x)) * self.scale


class TorchBlock(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(3, 4)
        self.norm = torch.nn.BatchNorm1d(4)
        self.register_buffer("scale", torch.ones(4))
        self.register_buffer("cache", torch.zeros(2), persistent=False)

    def _get_name(self) -> str:
        return "Block"


def make_pair() -> tuple[nn.Module, torch.nn.Module]:
    g = nn.Sequential(OrderedDict(block=Block(genesis), act=nn.ReLU(), head=nn.ModuleList([nn.Linear(4, 2)])))
    t = torch.nn.Sequential(OrderedDict(block=TorchBlock(), act=torch.nn.ReLU(),
                                        head=torch.nn.ModuleList([torch.nn.Linear(4, 2)])))
    return g.to(DEVICE), t


def test_state_dict_names_match_torch():
    g, t = make_pair()
    assert list(g.state_dict()) == list(t.state_dict())
    assert [n for n, _ in g.named_parameters()] == [n for n, _ in t.named_parameters()]
    assert [n for n, _ in g.named_buffers()] == [n for n, _ in t.named_buffers()]
    assert [n for n, _ in g.named_modules()] == [n for n, _ in t.named_modules()]
    assert [n for n, _ in g.named_children()] == [n for n, _ in t.named_children()]
    assert g.state_dict()["block.norm.num_batches_tracked"].dtype is genesis.int64


def test_state_dict_round_trip_shares_and_copies():
    g, t = make_pair()
    result = g.load_state_dict({k: to_genesis(v) for k, v in t.state_dict().items()})
    assert result.missing_keys == [] and result.unexpected_keys == []
    for k, v in t.state_dict().items():
        assert torch.equal(to_torch(g.state_dict()[k]), v), k
    sd = g.state_dict()
    assert not sd["block.fc.weight"].requires_grad
    sd["block.fc.weight"].fill_(3.0)  # state_dict shares memory with the module, as in torch
    assert float(g.block.fc.weight.sum()) == 36.0
    assert g.state_dict(keep_vars=True)["block.fc.weight"] is g.block.fc.weight


def test_load_state_dict_strict_and_non_strict():
    g, t = make_pair()
    sd = {k: to_genesis(v) for k, v in t.state_dict().items()}
    del sd["head.0.bias"]
    sd["extra.weight"] = genesis.zeros(1)
    before = {k: to_torch(v).clone() for k, v in g.state_dict().items()}
    with pytest.raises(RuntimeError, match=r'Missing key\(s\) in state_dict: "head.0.bias"') as info:
        g.load_state_dict(sd)
    assert 'Unexpected key(s) in state_dict: "extra.weight"' in str(info.value)
    for k, v in g.state_dict().items():
        assert torch.equal(to_torch(v), before[k]), f"strict failure changed {k}"
    result = g.load_state_dict(sd, strict=False)
    assert result.missing_keys == ["head.0.bias"]
    assert result.unexpected_keys == ["extra.weight"]
    assert torch.equal(to_torch(g.block.fc.weight), t.block.fc.weight.detach())


def test_load_state_dict_shape_mismatch_names_key_and_shapes_and_changes_nothing():
    g, t = make_pair()
    sd = {k: to_genesis(v) for k, v in t.state_dict().items()}
    sd["head.0.weight"] = genesis.zeros(3, 4)
    before = {k: to_torch(v).clone() for k, v in g.state_dict().items()}
    for strict in (True, False):
        with pytest.raises(RuntimeError, match=r"size mismatch for head\.0\.weight: copying a param with shape "
                                               r".*\[3, 4\].* the shape in current model is .*\[2, 4\]"):
            g.load_state_dict(sd, strict=strict)
        for k, v in g.state_dict().items():
            assert torch.equal(to_torch(v), before[k]), f"failed load changed {k}"


def test_load_state_dict_assign_and_old_batchnorm_checkpoint():
    bn = nn.BatchNorm1d(3)
    sd = {"weight": genesis.full((3,), 2.0), "bias": genesis.zeros(3), "running_mean": genesis.ones(3),
          "running_var": genesis.ones(3)}
    # A checkpoint without num_batches_tracked loads (as an older torch checkpoint does).
    assert bn.load_state_dict(sd).missing_keys == []
    lin = nn.Linear(2, 2)
    w = genesis.ones(2, 2)
    lin.load_state_dict({"weight": w, "bias": genesis.zeros(2)}, assign=True)
    assert isinstance(lin.weight, nn.Parameter) and lin.weight.requires_grad
    assert lin.weight.data_ptr() == w.data_ptr()


def test_registration_semantics():
    m = nn.Module()
    m.w = nn.Parameter(genesis.ones(2))
    assert list(m._parameters) == ["w"]
    m.sub = nn.Linear(2, 2)
    m.register_buffer("b", genesis.zeros(1))
    assert set(dict(m.named_parameters())) == {"w", "sub.weight", "sub.bias"}
    with pytest.raises(TypeError):
        m.w = genesis.ones(2)  # a plain tensor cannot replace a parameter
    m.w = None
    assert "w" in m._parameters and m._parameters["w"] is None
    assert "w" not in m.state_dict()
    m.b = genesis.ones(1)  # assigning a tensor to a buffer name updates the buffer
    assert float(m.b.item()) == 1.0 and "b" in m._buffers
    with pytest.raises(KeyError):
        m.register_buffer("a.b", genesis.zeros(1))
    with pytest.raises(KeyError):
        m.register_parameter("sub", nn.Parameter(genesis.ones(1)))
    with pytest.raises(AttributeError):
        _ = m.missing
    del m.sub
    assert "sub" not in m._modules
    m.add_module("child", nn.ReLU())
    assert m.get_submodule("child") is m.child
    m.w = nn.Parameter(genesis.ones(2))
    assert m.get_parameter("w") is m.w
    with pytest.raises(AttributeError):
        m.get_parameter("child.nothing")


def test_shared_parameters_listed_once_and_tied_weights():
    emb = nn.Embedding(5, 3)
    head = nn.Linear(3, 5, bias=False)
    head.weight = emb.weight
    model = nn.ModuleDict({"emb": emb, "head": head})
    assert len(list(model.parameters())) == 1
    assert [n for n, _ in model.named_parameters(remove_duplicate=False)] == ["emb.weight", "head.weight"]
    assert list(model.state_dict()) == ["emb.weight", "head.weight"]
    x = genesis.tensor([[0, 1, 4]], device=DEVICE)
    model.to(DEVICE)
    out = head(emb(x)).sum()
    out.backward()
    assert emb.weight.grad is head.weight.grad
    shared = nn.Sequential(head, head)
    assert len(list(shared.modules())) == 2 and len(list(shared.parameters())) == 1


def test_train_eval_zero_grad_requires_grad_apply():
    g, _ = make_pair()
    g.eval()
    assert all(not m.training for m in g.modules())
    g.train()
    assert all(m.training for m in g.modules())
    with pytest.raises(ValueError):
        g.train("yes")
    out = g.head[0](g.act(g.block(genesis.randn(5, 3, device=DEVICE)))).sum()
    out.backward()
    assert all(p.grad is not None for p in g.parameters())
    before = [p.grad for p in g.parameters()]
    g.zero_grad(set_to_none=False)  # in place: the same .grad tensors, as torch
    assert all(p.grad is b and float(p.grad.abs().sum()) == 0 for p, b in zip(g.parameters(), before))
    g.zero_grad()
    assert all(p.grad is None for p in g.parameters())
    g.requires_grad_(False)
    assert not any(p.requires_grad for p in g.parameters())
    seen = []
    g.apply(lambda m: seen.append(type(m).__name__))
    assert seen[-1] == "Sequential" and seen[0] == "Linear"


def test_to_dtype_keeps_parameter_identity_and_integer_buffers():
    g, _ = make_pair()
    weight = g.block.fc.weight
    g.double()
    assert g.block.fc.weight is weight and weight.dtype is genesis.float64
    assert isinstance(weight, nn.Parameter) and weight.requires_grad
    assert g.block.norm.num_batches_tracked.dtype is genesis.int64
    assert g.block.norm.running_mean.dtype is genesis.float64
    g.half()
    assert weight.dtype is genesis.float16
    g.bfloat16()
    assert weight.dtype is genesis.bfloat16
    g.float()
    assert weight.dtype is genesis.float32
    g.to(genesis.float64)
    assert weight.dtype is genesis.float64
    g.to(DEVICE, genesis.float32)
    assert weight.dtype is genesis.float32 and weight.device.type == DEVICE.split(":")[0]
    with pytest.raises(TypeError):
        g.to(genesis.int32)
    g.cpu()
    assert weight.device.type == "cpu"


def test_forward_hooks():
    lin = nn.Linear(2, 2)
    calls = []
    h1 = lin.register_forward_pre_hook(lambda m, args: (args[0] * 0,))
    h2 = lin.register_forward_hook(lambda m, args, out: calls.append(out.shape) or out + 1)
    out = lin(genesis.ones(1, 2))
    assert calls == [genesis.Size([1, 2])]
    assert torch.allclose(to_torch(out), to_torch(lin.bias.detach() + 1).unsqueeze(0))
    h1.remove()
    h2.remove()
    out = lin(genesis.ones(1, 2))
    assert len(calls) == 1
    h3 = lin.register_forward_pre_hook(lambda m, args, kwargs: ((args[0] * 2,), kwargs), with_kwargs=True)
    out2 = lin(genesis.ones(1, 2))
    h3.remove()
    assert torch.allclose(to_torch(out2), to_torch(lin(genesis.full((1, 2), 2.0))))


def test_repr_matches_torch():
    g, t = make_pair()
    assert repr(g).replace("genesis", "torch") == expected_repr(t)
    layers = [(nn.Conv2d(3, 8, 3, stride=2, padding=1), torch.nn.Conv2d(3, 8, 3, stride=2, padding=1)),
              (nn.MaxPool2d(2), torch.nn.MaxPool2d(2)), (nn.LayerNorm(8), torch.nn.LayerNorm(8)),
              (nn.Embedding(10, 4, padding_idx=0), torch.nn.Embedding(10, 4, padding_idx=0)),
              (nn.Dropout(0.2), torch.nn.Dropout(0.2)), (nn.GELU("tanh"), torch.nn.GELU("tanh")),
              (nn.Flatten(), torch.nn.Flatten())]
    for gm, tm in layers:
        assert repr(gm) == expected_repr(tm)


class _LayerNormReprBefore213(torch.nn.LayerNorm):
    def extra_repr(self) -> str:  # torch < 2.13: no bias field
        return "{normalized_shape}, eps={eps}, elementwise_affine={elementwise_affine}".format(**self.__dict__)


class _BatchNormReprBefore213(torch.nn.BatchNorm2d):
    def extra_repr(self) -> str:  # torch < 2.13: no bias field
        return ("{num_features}, eps={eps}, momentum={momentum}, affine={affine}, "
                "track_running_stats={track_running_stats}".format(**self.__dict__))


def test_expected_repr_restores_the_bias_field_of_older_torch_norm_layers():
    t = torch.nn.Sequential(_LayerNormReprBefore213(4, bias=False), _BatchNormReprBefore213(3, affine=False))
    assert expected_repr(t) == ("Sequential(\n"
                                "  (0): _LayerNormReprBefore213((4,), eps=1e-05, elementwise_affine=True, bias=False)\n"
                                "  (1): _BatchNormReprBefore213(3, eps=1e-05, momentum=0.1, affine=False, bias=False, "
                                "track_running_stats=True)\n)")
    assert "bias=" not in repr(t)  # the layers' own repr is left as it was
    layers = torch.nn.Sequential(torch.nn.LayerNorm(4), torch.nn.GroupNorm(1, 2), torch.nn.InstanceNorm1d(2))
    assert expected_repr(layers).count("bias=") == 3  # torch's own field (2.13 on) or the restored one


def test_parameter_basics():
    p = nn.Parameter(genesis.ones(2, 3))
    assert p.requires_grad and isinstance(p, genesis.Tensor)
    assert repr(p).startswith("Parameter containing:")
    y = p * 2
    assert type(y) is genesis.Tensor
    q = nn.Parameter(genesis.ones(2), requires_grad=False)
    assert not q.requires_grad
    import copy

    c = copy.deepcopy(nn.Linear(2, 3))
    assert isinstance(c.weight, nn.Parameter)
    with pytest.raises(RuntimeError):
        nn.Parameter(genesis.ones(2, dtype=genesis.int64))


def test_parameter_subclass_with_more_constructor_arguments():
    # Quantized parameters (bitsandbytes' Int8Params, Params4bit) take more arguments in __new__; torch's Parameter
    # has no __init__ to refuse them.
    class QuantParam(nn.Parameter):
        def __new__(cls, data, requires_grad=False, quant_state=None, blocksize=64):
            param = super().__new__(cls, data, requires_grad)
            param.quant_state, param.blocksize = quant_state, blocksize
            return param

    p = QuantParam(genesis.ones(2, 3), quant_state=genesis.ones(2), blocksize=32)
    assert type(p) is QuantParam and not p.requires_grad and p.blocksize == 32 and p.quant_state.shape == (2,)
    lin = nn.Linear(3, 2)
    lin.weight = p
    assert lin.weight is p and lin._parameters["weight"] is p


def test_make_subclass_shares_memory_and_version():
    # How bitsandbytes-style Parameter subclasses build themselves: torch.Tensor._make_subclass(cls, data, grad).
    class Packed(nn.Parameter):
        pass

    for lib, cls in ((torch, type("Packed", (torch.nn.Parameter,), {})), (genesis, Packed)):
        data = lib.ones(2, 3)
        p = lib.Tensor._make_subclass(cls, data, True)
        assert type(p) is cls and p.requires_grad and p.data_ptr() == data.data_ptr()
        data.add_(1)
        assert p._version == data._version and float(p.sum()) == 12.0


def test_containers():
    seq = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
    assert len(seq) == 3 and isinstance(seq[1], nn.ReLU) and isinstance(seq[-1], nn.Linear)
    sub = seq[1:]
    assert isinstance(sub, nn.Sequential) and len(sub) == 2 and sub[1] is seq[2]
    assert list(sub.state_dict()) == list(torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.ReLU(),
                                                              torch.nn.Linear(3, 1))[1:].state_dict())
    with pytest.raises(IndexError):
        seq[5]
    seq.append(nn.Sigmoid())
    assert len(seq) == 4
    ml = nn.ModuleList([nn.Linear(1, 1) for _ in range(3)])
    ml.append(nn.ReLU())
    ml.extend([nn.Tanh()])
    assert len(ml) == 5 and list(ml.state_dict())[:2] == ["0.weight", "0.bias"]
    del ml[0]
    assert list(ml.state_dict())[0] == "0.weight" and len(ml) == 4
    md = nn.ModuleDict({"b": nn.ReLU(), "a": nn.Linear(1, 1)})
    assert list(md.keys()) == ["b", "a"] and "a" in md
    pl = nn.ParameterList([genesis.ones(2), nn.Parameter(genesis.zeros(3))])
    assert isinstance(pl[0], nn.Parameter) and [n for n, _ in pl.named_parameters()] == ["0", "1"]
    pd = nn.ParameterDict({"x": genesis.ones(1)})
    pd["y"] = nn.Parameter(genesis.zeros(1))
    assert list(pd.state_dict()) == ["x", "y"] and isinstance(pd["x"], nn.Parameter)
    tpl = torch.nn.ParameterList([torch.nn.Parameter(torch.ones(2))])
    assert repr(nn.ParameterList([genesis.ones(2)])).replace("genesis.", "torch.") == repr(tpl)
    # a ParameterDict names the legacy tensor type instead of the dtype, as torch's
    tpd = torch.nn.ParameterDict({"w": torch.ones(2, 3), "b": torch.ones(3, dtype=torch.float64)})
    gpd = nn.ParameterDict({"w": genesis.ones(2, 3), "b": genesis.ones(3, dtype=genesis.float64)})
    assert repr(gpd).replace("genesis.", "torch.") == repr(tpd)
    # extend takes any iterable of modules, another ModuleList or a Sequential too; insert(-1) goes before the last
    for lib in (genesis, torch):
        lml = lib.nn.ModuleList([lib.nn.ReLU()])
        lml += lib.nn.ModuleList([lib.nn.Tanh()])
        lml.extend(lib.nn.Sequential(lib.nn.Sigmoid()))
        assert [type(m).__name__ for m in lml] == ["ReLU", "Tanh", "Sigmoid"]
        with pytest.raises(TypeError, match="ModuleList.extend should be called with an iterable, but got Linear"):
            lml.extend(lib.nn.Linear(1, 1))
        lseq = lib.nn.Sequential(lib.nn.ReLU(), lib.nn.Tanh())
        lseq.insert(-1, lib.nn.GELU())
        lseq.insert(-3, lib.nn.Sigmoid())
        assert [type(m).__name__ for m in lseq] == ["Sigmoid", "ReLU", "GELU", "Tanh"]
    ident = nn.Identity(54, unused="x")
    x = genesis.ones(2)
    assert ident(x) is x


def test_missing_forward_and_init_order():
    class NoForward(nn.Module):
        pass

    with pytest.raises(NotImplementedError):
        NoForward()(genesis.ones(1))

    class Early(nn.Module):
        def __init__(self) -> None:
            self.w = nn.Parameter(genesis.ones(1))

    with pytest.raises(AttributeError):
        Early()


@requires_cuda
def test_module_moves_between_devices_keeping_parameters():
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    weight = model[0].weight
    before = to_torch(weight).clone()
    model(genesis.randn(5, 3)).sum().backward()
    model.cuda()
    assert model[0].weight is weight and weight.device.type == "cuda" and weight.grad.device.type == "cuda"
    assert model[1].running_mean.device.type == "cuda" and model[1].num_batches_tracked.dtype is genesis.int64
    out = model(genesis.randn(5, 3, device="cuda"))
    assert out.device.type == "cuda"
    model.cpu()
    assert weight.device.type == "cpu" and torch.equal(to_torch(weight), before)


def test_forward_hook_always_call_and_prepend():
    lin = nn.Linear(2, 2)
    order = []
    lin.register_forward_hook(lambda m, a, o: order.append("second"))
    lin.register_forward_hook(lambda m, a, o: order.append("first"), prepend=True)
    lin(genesis.ones(1, 2))
    assert order == ["first", "second"]
    seen = []
    lin.register_forward_hook(lambda m, a, o: seen.append(o), always_call=True)
    with pytest.raises(RuntimeError):
        lin(genesis.ones(1, 3))
    assert seen == [None]


def test_deepcopy_and_pickle_keep_parameters_and_ties():
    import copy
    import pickle

    emb = nn.Embedding(4, 2)
    head = nn.Linear(2, 4, bias=False)
    head.weight = emb.weight
    model = nn.ModuleDict({"emb": emb, "head": head, "bn": nn.BatchNorm1d(2)})
    for clone in (copy.deepcopy(model), pickle.loads(pickle.dumps(model))):
        assert clone["emb"].weight is clone["head"].weight and clone["emb"].weight is not emb.weight
        assert isinstance(clone["emb"].weight, nn.Parameter) and clone["emb"].weight.requires_grad
        assert clone["bn"].num_batches_tracked.dtype is genesis.int64
        for k, v in model.state_dict().items():
            assert torch.equal(to_torch(clone.state_dict()[k]), to_torch(v)), k
    # A deep copy of a trained model (an EMA copy) starts without gradients, as torch's
    model["head"](model["emb"](genesis.tensor([1]))).sum().backward()
    assert emb.weight.grad is not None and copy.deepcopy(model)["emb"].weight.grad is None


def test_load_state_dict_casts_dtype_and_rejects_non_tensors():
    lin = nn.Linear(2, 2).to(DEVICE)
    sd = {"weight": genesis.ones(2, 2, dtype=genesis.float64), "bias": genesis.zeros(2, dtype=genesis.float64)}
    lin.load_state_dict(sd)
    assert lin.weight.dtype is genesis.float32 and float(lin.weight.sum()) == 4.0
    before = to_torch(lin.weight).clone()
    with pytest.raises(RuntimeError, match='parameter named "bias"'):
        lin.load_state_dict({"weight": genesis.zeros(2, 2), "bias": [0.0, 0.0]})
    assert torch.equal(to_torch(lin.weight), before)
    with pytest.raises(TypeError):
        lin.load_state_dict([("weight", genesis.zeros(2, 2))])


def test_dict_containers_update_from_each_other():
    md = nn.ModuleDict({"a": nn.ReLU()})
    md.update(nn.ModuleDict({"b": nn.Tanh(), "c": nn.ReLU()}))
    assert list(md.keys()) == ["a", "b", "c"]
    pd = nn.ParameterDict({"z": genesis.ones(1), "y": genesis.ones(1)})
    assert list(pd.keys()) == ["y", "z"]  # a plain dict is inserted in sorted key order, as torch does
    pd.update(nn.ParameterDict([("x", nn.Parameter(genesis.zeros(1)))]))
    pd.update([("w", genesis.zeros(2))])
    assert list(pd.keys()) == ["y", "z", "x", "w"] and isinstance(pd["w"], nn.Parameter)
    tpd = torch.nn.ParameterDict({"z": torch.ones(1), "y": torch.ones(1)})
    tpd.update(torch.nn.ParameterDict([("x", torch.nn.Parameter(torch.zeros(1)))]))
    tpd.update([("w", torch.zeros(2))])
    assert list(tpd.keys()) == list(pd.keys())


def test_sequential_delete_renumbers_like_torch():
    from collections import OrderedDict as OD

    for lib in (genesis, torch):
        seq = lib.nn.Sequential(OD(a=lib.nn.ReLU(), b=lib.nn.Tanh(), c=lib.nn.Sigmoid()))
        del seq[0]
        assert list(seq._modules) == ["0", "1"] and type(seq[1]).__name__ == "Sigmoid"


def test_sequential_pop_and_parameter_dict_dict_methods_as_torch():
    for lib in (genesis, torch):
        seq = lib.nn.Sequential(lib.nn.ReLU(), lib.nn.Tanh(), lib.nn.Sigmoid(), lib.nn.Identity())
        assert type(seq.pop(1)).__name__ == "Tanh" and list(seq._modules) == ["0", "1", "2"]
        popped = seq.pop(slice(0, 2))
        assert [type(m).__name__ for m in popped] == ["ReLU", "Sigmoid"] and len(seq) == 1
        pd = lib.nn.ParameterDict({"a": lib.ones(1), "b": lib.zeros(2)})
        assert pd.setdefault("a", lib.zeros(3)).shape == (1,) and pd.setdefault("c", lib.ones(4)).shape == (4,)
        assert isinstance(pd["c"], lib.nn.Parameter)
        key, value = pd.popitem()
        assert key == "c" and value.shape == (4,) and list(pd.keys()) == ["a", "b"]
        copied = pd.copy()
        assert type(copied) is lib.nn.ParameterDict and copied["b"] is pd["b"]
        fresh = pd.fromkeys(["x", "y"], lib.ones(2))
        assert list(fresh.keys()) == ["x", "y"] and isinstance(fresh["y"], lib.nn.Parameter)


def _backward_hook_trace(lib):
    """What a module's backward hooks see and do, in the same program for either library."""
    lin = lib.nn.Linear(3, 2)
    with lib.no_grad():
        lin.weight.copy_(lib.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]))
        lin.bias.zero_()
    seen = []
    lin.register_full_backward_pre_hook(lambda m, go: seen.append(("pre", [g.tolist() for g in go])))

    def full(m, grad_input, grad_output):
        seen.append(("full", [None if g is None else g.tolist() for g in grad_input],
                     [g.tolist() for g in grad_output]))
        return (grad_input[0] * 2,) if grad_input[0] is not None else None  # replaces the input's gradient

    handle = lin.register_full_backward_hook(full)
    x = lib.tensor([[1.0, 1.0, 1.0]], requires_grad=True)
    (lin(x) * lib.tensor([[1.0, 10.0]])).sum().backward()
    seen.append(("x.grad", x.grad.tolist()))
    with pytest.warns(UserWarning, match="no inputs require gradients"):
        lin(lib.ones(1, 3)).sum().backward()  # no input requires grad: the hook fires with grad_input (None,)
    handle.remove()
    x.grad = None
    lin(x).sum().backward()
    seen.append(("removed", x.grad.tolist()))
    conv, shapes = lib.nn.Conv2d(1, 2, 3), []
    conv.register_backward_hook(lambda m, gi, go: shapes.append(tuple(go[0].shape)))  # Grad-CAM's idiom
    conv(lib.ones(1, 1, 5, 5, requires_grad=True)).sum().backward()
    seen.append(("grad_output shapes", shapes))
    return seen


def test_module_backward_hooks_as_torch():
    assert _backward_hook_trace(genesis) == _backward_hook_trace(torch)


def _constant_tensor_input_trace(lib):
    """grad_input of a full backward hook on a module whose tensor inputs do not all require grad."""
    class Product(lib.nn.Module):
        def forward(self, a, b, c=None):
            return a * b if c is None else a * b * c

    module, seen = Product(), []
    module.register_full_backward_hook(
        lambda m, gi, go: seen.append([None if g is None else (g.tolist(), str(g.dtype)[-7:]) for g in gi]))
    a = lib.tensor([1.0, 2.0], requires_grad=True)
    b = lib.tensor([3.0, 4.0], dtype=lib.float64)
    module(a, b).sum().backward()  # b: zeros (torch's hook node materializes it), not None
    module(b, a).sum().backward()
    module(a, 2.0).sum().backward()  # a number: None
    module(a, b, c=b).sum().backward()  # keyword arguments are not part of grad_input
    return seen


def test_full_backward_hook_gives_zeros_for_tensor_inputs_without_grad():
    assert _constant_tensor_input_trace(genesis) == _constant_tensor_input_trace(torch)


def _unused_output_trace(lib):
    """The hooks of a module returning two tensors, of which the loss uses one: the other's gradient is None."""
    class Split(lib.nn.Module):
        def forward(self, x):
            return x * 2, x * 3

    module, seen = Split(), []
    module.register_full_backward_pre_hook(lambda m, go: seen.append(("pre", [g is None for g in go])))
    module.register_full_backward_hook(
        lambda m, gi, go: seen.append(("full", [g.tolist() for g in gi], [None if g is None else g.tolist()
                                                                         for g in go])))
    x = lib.ones(2, requires_grad=True)
    first, _ = module(x)
    first.sum().backward()
    _, second = module(x)
    (second * 2).sum().backward()
    seen.append(x.grad.tolist())
    return seen


def test_full_backward_hooks_see_none_for_an_unused_output():
    assert _unused_output_trace(genesis) == _unused_output_trace(torch)


def _output_kinds_trace(lib):
    """The backward hooks of modules returning a tuple with a number, a named tuple, a list and a dict: grad_output
    has one entry per tuple item; only a tensor or a tuple is hooked (a list or a dict warns and runs no hook)."""
    pair = collections.namedtuple("Pair", "a b")
    outputs = {"tuple": lambda h: (h, 3), "named": lambda h: pair(h, h * 3), "list": lambda h: [h, h * 2],
               "dict": lambda h: {"a": h}}
    x = lib.tensor([[1.0, -1.0]], requires_grad=True)
    seen = []
    for kind, make in outputs.items():
        class Out(lib.nn.Module):
            def __init__(self, make):
                super().__init__()
                self.make = make

            def forward(self, x, c):
                return self.make(x * 2)

        module = Out(make)
        module.register_full_backward_pre_hook(lambda m, go: seen.append(("pre", [g is None for g in go])))
        module.register_full_backward_hook(
            lambda m, gi, go: seen.append(("full", [None if g is None else g.tolist() for g in gi], len(go))))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = module(x, lib.ones(1))
        seen.append((kind, type(out).__name__, [str(w.message)[:48] for w in caught]))
        (out["a"] if kind == "dict" else out[0]).sum().backward()
    return seen


def test_full_backward_hooks_by_output_kind_as_torch():
    assert _output_kinds_trace(genesis) == _output_kinds_trace(torch)


def test_backward_hook_return_count_errors_as_torch():
    for lib in (torch, genesis):
        x = lib.ones(1, 3, requires_grad=True)
        pre = lib.nn.Linear(3, 2)
        pre.register_full_backward_pre_hook(lambda m, go: (go[0], go[0]))
        with pytest.raises(RuntimeError, match="^Backward pre hook returned an invalid number of grad_output, got 2, "
                                               "but expected 1$"):
            pre(x).sum().backward()
        frozen = lib.nn.Linear(3, 2)
        frozen.register_full_backward_hook(lambda m, gi, go: (gi[0], go[0]))
        with pytest.warns(UserWarning, match="no inputs require gradients"), pytest.raises(
                RuntimeError, match="^Backward hook for Modules where no input requires gradient should always"):
            frozen(lib.ones(1, 3)).sum().backward()


def test_global_module_hooks_run_for_every_module_before_its_own():
    from genesis.nn.modules import module as M

    events = []
    net = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
    net[0].register_forward_hook(lambda m, i, o: events.append("own " + type(m).__name__))
    handles = [
        M.register_module_forward_pre_hook(lambda m, i: events.append("pre " + type(m).__name__)),
        M.register_module_forward_hook(lambda m, i, o: events.append("post " + type(m).__name__)),
        M.register_module_forward_hook(lambda m, i, k, o: o * 2 if isinstance(m, nn.ReLU) else None,
                                       with_kwargs=True),
        M.register_module_full_backward_hook(lambda m, gi, go: events.append("backward " + type(m).__name__)),
    ]
    try:
        x = genesis.ones(1, 2, requires_grad=True)
        out = net(x)
        out.sum().backward()
    finally:
        for h in handles:
            h.remove()
    assert events[:6] == ["pre Sequential", "pre Linear", "post Linear", "own Linear", "pre ReLU", "post ReLU"]
    assert events[6] == "post Sequential" and sorted(events[7:]) == ["backward Linear", "backward ReLU",
                                                                     "backward Sequential"]
    assert bool((out == 2 * genesis.relu(net[0](genesis.ones(1, 2)))).all())  # the kwargs hook doubled ReLU's output
    events.clear()
    net(x)
    assert events == ["own Linear"]  # removed


def test_global_registration_hooks_may_replace_values():
    from genesis.nn.modules import module as M

    seen = []
    handles = [M.register_module_parameter_registration_hook(lambda m, n, p: seen.append(("param", n))),
               M.register_module_buffer_registration_hook(lambda m, n, b: b * 0 if n == "running_mean" else None),
               M.register_module_module_registration_hook(lambda m, n, s: seen.append(("module", n)))]
    try:
        bn = nn.BatchNorm1d(3)
        bn.register_buffer("running_mean", genesis.ones(3))
        seq = nn.Sequential()
        seq.add_module("lin", nn.Linear(1, 1))
        seq.extra = nn.ReLU()
    finally:
        for h in handles:
            h.remove()
    assert ("param", "weight") in seen and ("module", "lin") in seen and ("module", "extra") in seen
    assert bn.running_mean.tolist() == [0.0, 0.0, 0.0]
    for name in ("register_module_forward_pre_hook", "register_module_forward_hook",
                 "register_module_full_backward_pre_hook", "register_module_full_backward_hook",
                 "register_module_buffer_registration_hook", "register_module_parameter_registration_hook",
                 "register_module_module_registration_hook"):
        assert hasattr(torch.nn.modules.module, name) and hasattr(M, name)


def test_layers_live_in_torchs_module_paths():
    """``torch.nn.modules.activation.MultiheadAttention``, ``torch.nn.modules.linear.LazyLinear`` and the like
    (scripts name them so, in safe_globals lists) are the same classes in Genesis's modules of those names."""
    import importlib
    import inspect

    misplaced = []
    for name in dir(torch.nn):
        obj = getattr(torch.nn, name)
        if not (inspect.isclass(obj) and hasattr(genesis.nn, name) and obj.__module__.startswith("torch.nn.modules.")):
            continue
        module = importlib.import_module("genesis" + obj.__module__[len("torch"):])
        if getattr(module, name, None) is not getattr(genesis.nn, name):
            misplaced.append(name)
    assert misplaced == []


def test_batch_norm_state_without_num_batches_tracked_loads_as_torch():
    for lib in (torch, genesis):
        enc = lib.nn.Sequential(lib.nn.Linear(4, 4))
        clf = lib.nn.Sequential(lib.nn.Linear(4, 4), lib.nn.BatchNorm1d(4))
        result = clf.load_state_dict(enc.state_dict(), strict=False)
        assert result.missing_keys == ["1.weight", "1.bias", "1.running_mean", "1.running_var"], lib
        bn = lib.nn.BatchNorm1d(3)
        old = {k: v for k, v in bn.state_dict().items() if k != "num_batches_tracked"}
        assert not lib.nn.BatchNorm1d(3).load_state_dict(old).missing_keys


def test_attention_out_proj_is_torchs_own_linear_class():
    m = nn.MultiheadAttention(4, 2)
    assert type(m.out_proj) is not nn.Linear and isinstance(m.out_proj, nn.Linear)
    assert type(m.out_proj).__name__ == type(torch.nn.MultiheadAttention(4, 2).out_proj).__name__


def test_set_submodule_as_torch():
    """``set_submodule`` replaces or adds a submodule at a dotted path; torch's errors for the bad cases."""
    for lib in (genesis, torch):
        net = lib.nn.Sequential(lib.nn.Linear(2, 2), lib.nn.Sequential(lib.nn.ReLU()))
        net.set_submodule("1.0", lib.nn.Tanh())
        net.set_submodule("1.extra", lib.nn.Identity())
        assert isinstance(net[1][0], lib.nn.Tanh) and isinstance(net[1].extra, lib.nn.Identity)
        net.register_buffer("scale", lib.ones(1))
        for target, module, strict, error in [("", lib.nn.ReLU(), False, ValueError),
                                              ("1.0", "relu", False, ValueError),
                                              ("1.new", lib.nn.ReLU(), True, AttributeError),
                                              ("2.0", lib.nn.ReLU(), False, AttributeError),
                                              ("scale", lib.nn.ReLU(), False, AttributeError)]:
            with pytest.raises(error):
                net.set_submodule(target, module, strict=strict)


def _member_lookups(lib: object) -> list:
    """get_submodule / get_parameter / get_buffer on a parametrized linear and a batch norm: results or errors."""
    class Double(lib.nn.Module):
        def forward(self, x: object) -> object:
            return x * 2

    m = lib.nn.Sequential(lib.nn.Linear(2, 2), lib.nn.BatchNorm1d(2))
    lib.nn.utils.parametrize.register_parametrization(m[0], "weight", Double())
    out = []
    for method, target in [("get_submodule", "0"), ("get_submodule", "0.weight"), ("get_submodule", "5"),
                           ("get_submodule", "0.parametrizations.weight"), ("get_parameter", "0.bias"),
                           ("get_parameter", "0.weight"), ("get_parameter", "1.running_mean"),
                           ("get_buffer", "1.running_mean"), ("get_buffer", "1.weight"), ("get_buffer", "1.nothing")]:
        try:
            out.append((method, target, type(getattr(m, method)(target)).__name__))
        except AttributeError as exc:
            out.append((method, target, str(exc)))
    return out


def test_member_lookups_by_dotted_path_as_torch() -> None:
    assert _member_lookups(genesis) == _member_lookups(torch)


def test_module_to_complex_dtype_as_torch() -> None:
    for lib in (torch, genesis):
        m = lib.nn.Linear(2, 2)
        m.register_buffer("count", lib.tensor([1]))
        with pytest.warns(UserWarning, match="Complex modules are a new feature"):
            m.to(lib.complex64)
        assert str(m.weight.dtype).split(".")[1] == "complex64" and str(m.count.dtype).split(".")[1] == "int64"
        with pytest.raises(TypeError, match="only accepts floating point or complex dtypes"):
            m.to(lib.int32)


def test_parameter_registration_hooks_skip_none() -> None:
    for lib in (torch, genesis):
        seen: list = []
        handle = lib.nn.modules.module.register_module_parameter_registration_hook(
            lambda module, name, param, seen=seen: seen.append(name))
        try:
            m = lib.nn.Module()
            m.register_parameter("absent", None)
            m.register_parameter("present", lib.nn.Parameter(lib.ones(1)))
        finally:
            handle.remove()
        assert seen == ["present"]


def _registration_errors(lib: object) -> list:
    m = lib.nn.Linear(2, 2)
    found = []
    for fn in (lambda: setattr(m, "weight", lib.ones(2)), lambda: m.register_parameter("p", lib.ones(2)),
               lambda: m.add_module("a.b", lib.nn.ReLU()), lambda: m.register_parameter("a.b", None)):
        with pytest.raises((TypeError, KeyError)) as info:
            fn()
        found.append((info.type, str(info.value).replace("genesis", "torch")))
    return found


def test_registration_errors_name_the_value_as_torch() -> None:
    assert _registration_errors(genesis) == _registration_errors(torch)
