"""Model loading idioms: HF no_init_weights (patching torch.nn.init functions), accelerate init_empty_weights
(patching nn.Module.register_parameter), torch.device('meta') context + to_empty, load_state_dict(assign=True),
_load_from_state_dict overrides, state-dict pre/post hooks, torch.save/load through BytesIO, key renaming."""
import io
from contextlib import contextmanager

import torch
import torch.nn as nn

losses = []

TORCH_INIT_FUNCTIONS = {
    "uniform_": nn.init.uniform_, "normal_": nn.init.normal_, "trunc_normal_": nn.init.trunc_normal_,
    "constant_": nn.init.constant_, "xavier_uniform_": nn.init.xavier_uniform_,
    "xavier_normal_": nn.init.xavier_normal_, "kaiming_uniform_": nn.init.kaiming_uniform_,
    "kaiming_normal_": nn.init.kaiming_normal_, "uniform": nn.init.uniform, "normal": nn.init.normal,
    "xavier_uniform": nn.init.xavier_uniform, "xavier_normal": nn.init.xavier_normal,
    "kaiming_uniform": nn.init.kaiming_uniform, "kaiming_normal": nn.init.kaiming_normal,
}
calls = []


@contextmanager
def no_init_weights():
    def _skip_init(*args, **kwargs):
        calls.append(kwargs.get("a", None))
    for name in TORCH_INIT_FUNCTIONS.keys():
        setattr(torch.nn.init, name, _skip_init)
    try:
        yield
    finally:
        for name, init_func in TORCH_INIT_FUNCTIONS.items():
            setattr(torch.nn.init, name, init_func)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(10, 6)
        self.fc = nn.Linear(6, 4)
        self.norm = nn.LayerNorm(4)
        self.conv = nn.Conv1d(4, 4, 3, padding=1)
        self.register_buffer("counter", torch.zeros(1, dtype=torch.long))

    def forward(self, ids):
        h = self.norm(self.fc(self.embed(ids)))
        return self.conv(h.transpose(1, 2)).transpose(1, 2)


with no_init_weights():
    m = Net()
losses.append(len(calls))
losses.append(calls.count(None))
losses.append(sum(a for a in calls if a is not None))
losses.append(nn.init.normal_ is TORCH_INIT_FUNCTIONS["normal_"])


@contextmanager
def init_on_device(device, include_buffers=False):
    old_register_parameter = nn.Module.register_parameter
    if include_buffers:
        old_register_buffer = nn.Module.register_buffer

    def register_empty_parameter(module, name, param):
        old_register_parameter(module, name, param)
        if param is not None:
            param_cls = type(module._parameters[name])
            module._parameters[name] = param_cls(module._parameters[name].to(device), requires_grad=param.requires_grad)

    def register_empty_buffer(module, name, buffer, persistent=True):
        old_register_buffer(module, name, buffer, persistent=persistent)
        if buffer is not None:
            module._buffers[name] = module._buffers[name].to(device)

    try:
        nn.Module.register_parameter = register_empty_parameter
        if include_buffers:
            nn.Module.register_buffer = register_empty_buffer
        yield
    finally:
        nn.Module.register_parameter = old_register_parameter
        if include_buffers:
            nn.Module.register_buffer = old_register_buffer


with init_on_device(torch.device("meta")):
    em = Net()
losses.append(all(p.is_meta for p in em.parameters()))
losses.append(em.counter.is_meta)
with init_on_device(torch.device("meta"), include_buffers=True):
    em2 = Net()
losses.append(em2.counter.is_meta)
losses.append(em2.fc.weight.is_meta)
losses.append(type(em2.fc.weight) is nn.Parameter)

with torch.device("meta"):
    mm = Net()
losses.append(mm.fc.weight.is_meta)
losses.extend(mm.conv.weight.shape)
mm.to_empty(device="cpu")
losses.append(mm.fc.weight.is_meta)

src = Net()
with torch.no_grad():
    for i, p in enumerate(src.parameters()):
        p.copy_(torch.sin(torch.arange(p.numel(), dtype=torch.float32).view_as(p) + i))
sd = src.state_dict()
res = mm.load_state_dict(sd, assign=True)
losses.append(len(res.missing_keys))
losses.append(mm.fc.weight.data_ptr() == sd["fc.weight"].data_ptr())
losses.append(isinstance(mm.fc.weight, nn.Parameter))
ids = torch.tensor([[1, 2, 3, 4], [5, 6, 7, 8]])
losses.append(mm(ids).sum().item())
meta2 = Net().to("meta")
meta2.load_state_dict(sd, assign=True)
losses.append(meta2.fc.weight.is_meta)
meta3 = Net().to("meta")
meta3.load_state_dict(src.state_dict())  # copying into meta parameters keeps them meta
losses.append(meta3.fc.weight.is_meta)


class LegacyNorm(nn.Module):
    """Renames old checkpoint keys ('gamma'/'beta') in _load_from_state_dict, as older HF models did."""

    def __init__(self, d):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.bias = nn.Parameter(torch.zeros(d))

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs):
        for old, new in (("gamma", "weight"), ("beta", "bias")):
            if prefix + old in state_dict:
                state_dict[prefix + new] = state_dict.pop(prefix + old)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs)


class Wrap(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln = LegacyNorm(3)
        self.lin = nn.Linear(3, 3)


w = Wrap()
old = {"ln.gamma": torch.full((3,), 2.0), "ln.beta": torch.full((3,), 0.5), "lin.weight": torch.eye(3),
       "lin.bias": torch.zeros(3)}
r = w.load_state_dict(old)
losses.extend(w.ln.weight.tolist())
losses.extend(w.ln.bias.tolist())
losses.append(len(r.missing_keys) + len(r.unexpected_keys))

# state dict hooks
seen = []


def pre_hook(module, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs):
    seen.append(("pre", prefix, sorted(k for k in state_dict if k.startswith(prefix))[:2]))
    key = prefix + "weight_old"
    if key in state_dict:
        state_dict[prefix + "weight"] = state_dict.pop(key)


def post_hook(module, incompatible_keys):
    seen.append(("post", list(incompatible_keys.missing_keys), list(incompatible_keys.unexpected_keys)))
    incompatible_keys.missing_keys[:] = [k for k in incompatible_keys.missing_keys if not k.endswith("bias")]


lin = nn.Linear(2, 2)
h1 = lin._register_load_state_dict_pre_hook(pre_hook, with_module=True)
h2 = lin.register_load_state_dict_post_hook(post_hook)
r = lin.load_state_dict({"weight_old": torch.ones(2, 2)}, strict=True)
losses.append(seen == [("pre", "", ["weight_old"]), ("post", ["bias"], [])])
losses.append(lin.weight.sum().item())
losses.append(len(r.missing_keys))
h1.remove()
h2.remove()


def sd_hook(module, state_dict, prefix, local_metadata):
    state_dict[prefix + "extra_info"] = torch.tensor(module.in_features)
    return state_dict


h3 = lin._register_state_dict_hook(sd_hook)
losses.append(len(lin.state_dict()))
h3.remove()
losses.append(len(lin.state_dict()))
losses.append(getattr(lin.state_dict(), "_metadata", {}).get("", {}).get("version", None))

buf = io.BytesIO()
torch.save({"model": src.state_dict(), "step": 7, "cfg": {"lr": 0.1, "names": ["a", "b"]}}, buf)
buf.seek(0)
ck = torch.load(buf, weights_only=True)
losses.append(ck["step"])
losses.append(ck["cfg"] == {"lr": 0.1, "names": ["a", "b"]})
n2 = Net()
n2.load_state_dict(ck["model"])
losses.append(n2(ids).sum().item())
losses.append(ck["model"]["counter"].dtype == torch.int64)
# prefix stripping of a DDP/compiled checkpoint
wrapped = {"module." + k: v for k, v in src.state_dict().items()}
torch.nn.modules.utils.consume_prefix_in_state_dict_if_present(wrapped, "module.")
losses.append(sorted(wrapped)[:2] == ["conv.bias", "conv.weight"])
compiled = {"_orig_mod." + k: v for k, v in src.state_dict().items()}
stripped = {k.removeprefix("_orig_mod."): v for k, v in compiled.items()}
losses.append(Net().load_state_dict(stripped).missing_keys == [])
