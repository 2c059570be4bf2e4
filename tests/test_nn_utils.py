"""genesis.nn.utils against torch.nn.utils: gradient clipping, vector conversion, activation checkpointing."""

from __future__ import annotations

import contextlib
import math

import pytest
import torch
import torch.utils.checkpoint as tc

import genesis
import genesis.utils.checkpoint as gc
from genesis.nn.utils import (
    checkpoint,
    clip_grad_norm_,
    clip_grad_value_,
    parameters_to_vector,
    vector_to_parameters,
)
from tests.helpers import DEVICE, assert_same, rand, to_genesis


def _params_with_grads(scale: float = 1.0) -> tuple[list, list]:
    shapes = [(3, 4), (4,), (2, 2, 2)]
    t_params, g_params = [], []
    for i, shape in enumerate(shapes):
        t = rand(*shape, seed=i)
        g = to_genesis(t)
        t.grad = rand(*shape, seed=10 + i, requires_grad=False) * scale
        g.grad = to_genesis(t.grad)
        t_params.append(t)
        g_params.append(g)
    return g_params, t_params


@pytest.mark.parametrize("max_norm, norm_type", [(0.5, 2.0), (100.0, 2.0), (0.3, 1.0), (0.2, math.inf),
                                                 (1.0, 3.0), (0.1, "inf")])
def test_clip_grad_norm_matches_torch(max_norm: float, norm_type: float) -> None:
    g_params, t_params = _params_with_grads()
    g_total = clip_grad_norm_(g_params, max_norm, norm_type=norm_type)
    t_total = torch.nn.utils.clip_grad_norm_(t_params, max_norm, norm_type=norm_type)
    assert_same(g_total, t_total)
    for g, t in zip(g_params, t_params):
        assert_same(g.grad, t.grad)


def test_clip_grad_norm_single_tensor_missing_grads_and_empty() -> None:
    g_params, t_params = _params_with_grads()
    g_params[1].grad = None
    t_params[1].grad = None
    assert_same(clip_grad_norm_(g_params, 0.1), torch.nn.utils.clip_grad_norm_(t_params, 0.1))
    assert_same(clip_grad_norm_(g_params[0], 0.01), torch.nn.utils.clip_grad_norm_(t_params[0], 0.01))
    assert_same(g_params[0].grad, t_params[0].grad)
    assert float(clip_grad_norm_([], 1.0).item()) == 0.0


def test_clip_grad_norm_nonfinite() -> None:
    g_params, t_params = _params_with_grads()
    g_params[0].grad[0, 0] = math.inf
    t_params[0].grad[0, 0] = math.inf
    before = g_params[1].grad.clone()
    with pytest.raises(RuntimeError, match="non-finite"):
        clip_grad_norm_(g_params, 1.0, error_if_nonfinite=True)
    assert genesis.equal(g_params[1].grad, before)
    assert_same(clip_grad_norm_(g_params, 1.0), torch.nn.utils.clip_grad_norm_(t_params, 1.0))
    for g, t in zip(g_params, t_params):
        assert_same(g.grad, t.grad)


def test_clip_grad_value_matches_torch() -> None:
    g_params, t_params = _params_with_grads(scale=3.0)
    assert clip_grad_value_(g_params, 0.7) is None
    torch.nn.utils.clip_grad_value_(t_params, 0.7)
    for g, t in zip(g_params, t_params):
        assert_same(g.grad, t.grad)


def test_parameters_to_vector_and_back() -> None:
    g_params, t_params = _params_with_grads()
    g_vec = parameters_to_vector(g_params)
    assert_same(g_vec, torch.nn.utils.parameters_to_vector(t_params))
    new = rand(g_vec.numel(), seed=42, requires_grad=False)
    vector_to_parameters(to_genesis(new), g_params)
    torch.nn.utils.vector_to_parameters(new, t_params)
    for g, t in zip(g_params, t_params):
        assert_same(g, t)
    with pytest.raises(TypeError, match="expected torch.Tensor"):
        vector_to_parameters([1.0, 2.0], g_params)
    for lib, params in ((genesis, g_params), (torch, t_params)):
        with pytest.raises(RuntimeError, match=r"shape '\[3, 4\]' is invalid for input of size 5"):
            lib.nn.utils.vector_to_parameters(lib.zeros(5, device=params[0].device), params)
        lib.nn.utils.vector_to_parameters(lib.ones(30, device=params[0].device), params)  # the rest is ignored
        assert all(bool((p == 1).all()) for p in params)
        transposed = lib.zeros(3, 2, device=params[0].device).t()
        with pytest.raises(RuntimeError, match="is not compatible with input"):
            lib.nn.utils.parameters_to_vector([transposed])  # view(-1), as torch: contiguous parameters only


def test_parameters_to_vector_is_differentiable() -> None:
    g_params, t_params = _params_with_grads()
    for p in g_params:
        p.grad = None
    for p in t_params:
        p.grad = None
    (parameters_to_vector(g_params) ** 2).sum().backward()
    (torch.nn.utils.parameters_to_vector(t_params) ** 2).sum().backward()
    for g, t in zip(g_params, t_params):
        assert_same(g.grad, t.grad)


def _block(lib: object, w: object, x: object, noise: bool = False) -> object:
    h = (x @ w).tanh()
    if noise:
        h = h * (lib.rand(h.shape, dtype=h.dtype) > 0.5)
    return (h @ w.T).sigmoid()


def test_checkpoint_gives_the_same_gradients() -> None:
    w_t = rand(4, 4, seed=1)
    x_t = rand(3, 4, seed=2)
    w1, x1 = to_genesis(w_t), to_genesis(x_t)
    out1 = checkpoint.checkpoint(lambda a: _block(genesis, w1, a), x1)
    (out1**2).sum().backward()
    w2, x2 = to_genesis(w_t), to_genesis(x_t)
    (_block(genesis, w2, x2) ** 2).sum().backward()
    assert genesis.allclose(w1.grad, w2.grad, rtol=1e-12) and genesis.allclose(x1.grad, x2.grad, rtol=1e-12)
    (_block(torch, w_t, x_t) ** 2).sum().backward()
    assert_same(w1.grad, w_t.grad)
    assert_same(x1.grad, x_t.grad)


def test_checkpoint_without_input_grad_still_trains_parameters() -> None:
    w = genesis.randn(4, 4, dtype=genesis.float64, requires_grad=True)
    x = genesis.randn(3, 4, dtype=genesis.float64)
    out = checkpoint.checkpoint(lambda a: _block(genesis, w, a), x, use_reentrant=False)
    assert out.requires_grad
    out.sum().backward()
    expected = w.grad.clone()
    w.grad = None
    _block(genesis, w, x).sum().backward()
    assert genesis.allclose(w.grad, expected, rtol=1e-12)


def test_reentrant_checkpoint_without_input_grad_trains_nothing_as_torch() -> None:
    # torch's reentrant variant (its default) records nothing when no input requires grad, and warns so.
    for lib in (torch, genesis):
        lin = lib.nn.Linear(3, 3)
        x = lib.ones(2, 3)
        with pytest.warns(UserWarning) as caught:
            h = lib.utils.checkpoint.checkpoint(lin, x)
        messages = [str(w.message) for w in caught]
        assert any("use_reentrant parameter should be passed" in m for m in messages), lib
        assert any("None of the inputs have requires_grad=True" in m for m in messages), lib
        assert not h.requires_grad and lin.weight.grad is None


def test_checkpoint_recomputes_under_the_forwards_autocast() -> None:
    results = {}
    for lib in (torch, genesis):
        lin = lib.nn.Linear(4, 4)
        with lib.no_grad():
            lin.weight.copy_(lib.linspace(-1, 1, 16).view(4, 4))
            lin.bias.fill_(0.1)
        grads = []
        for reentrant in (False, True):
            x = lib.linspace(-1, 1, 8).view(2, 4).requires_grad_()
            with lib.autocast("cpu", dtype=lib.bfloat16):
                y = lib.utils.checkpoint.checkpoint(lin, x, use_reentrant=reentrant)
                z = lib.utils.checkpoint.checkpoint(lin, y, use_reentrant=reentrant)
            assert y.dtype == lib.bfloat16 and z.dtype == lib.bfloat16
            z.float().sum().backward()
            grads.append(x.grad.tolist())
        results[lib.__name__] = grads
    assert results["genesis"] == results["torch"]


def test_checkpoint_replays_the_random_state() -> None:
    w = genesis.randn(4, 4, dtype=genesis.float64, requires_grad=True)
    x = genesis.randn(3, 4, dtype=genesis.float64)
    genesis.manual_seed(7)
    out = checkpoint.checkpoint(lambda a: _block(genesis, w, a, noise=True), x, use_reentrant=False)
    after_forward = genesis.rand(1).item()
    out.sum().backward()
    expected = w.grad.clone()
    w.grad = None
    genesis.manual_seed(7)
    _block(genesis, w, x, noise=True).sum().backward()
    assert genesis.allclose(w.grad, expected, rtol=1e-12)
    genesis.manual_seed(7)
    _block(genesis, w, x, noise=True)
    assert genesis.rand(1).item() == after_forward


def test_checkpoint_sequential() -> None:
    w = [genesis.randn(4, 4, dtype=genesis.float64, requires_grad=True) for _ in range(4)]
    fns = [lambda h, m=m: (h @ m).tanh() for m in w]
    x = genesis.randn(2, 4, dtype=genesis.float64, requires_grad=True)
    checkpoint.checkpoint_sequential(fns, 2, x).sum().backward()
    grads = [m.grad.clone() for m in w] + [x.grad.clone()]
    for t in (*w, x):
        t.grad = None
    h = x
    for fn in fns:
        h = fn(h)
    h.sum().backward()
    for a, b in zip(grads, [m.grad for m in w] + [x.grad]):
        assert genesis.allclose(a, b, rtol=1e-12)


def test_checkpoint_passes_keyword_arguments_and_contexts_as_torch() -> None:
    w_t, x_t = rand(4, 4, seed=1), rand(3, 4, seed=2)
    entered = []

    def contexts() -> tuple:
        @contextlib.contextmanager
        def mark(name: str):
            entered.append(name)
            yield

        return mark("forward"), mark("recompute")

    def block(lib, w, x, scale=1.0, shift=None):
        return _block(lib, w, x) * scale + shift

    grads = []
    for lib, w, x in ((genesis, to_genesis(w_t), to_genesis(x_t)), (torch, w_t.detach().clone().requires_grad_(),
                                                                      x_t.detach().clone().requires_grad_())):
        shift = lib.ones(4, dtype=w.dtype, device=w.device, requires_grad=True)
        fn = lib.utils.checkpoint.checkpoint
        out = fn(lambda a, lib=lib, w=w, **k: block(lib, w, a, **k), x, scale=0.5, shift=shift, use_reentrant=False,
                 context_fn=contexts, determinism_check="none", debug=False)
        (out ** 2).sum().backward()
        grads.append((w.grad, x.grad, shift.grad))
    for g, t in zip(*grads):
        assert_same(g, t)
    assert entered == ["forward", "recompute"] * 2
    assert genesis.utils.checkpoint.noop_context_fn()[0].__enter__() is None


@pytest.mark.parametrize("kwargs, message", [
    ({"scale": 2.0}, "Unexpected keyword arguments: scale"),
    ({"use_reentrant": True, "context_fn": lambda: (None, None)}, "Passing `context_fn` or `debug` is only supported"),
    ({"use_reentrant": False, "determinism_check": "all"}, "determinism_check should be one of"),
])
def test_checkpoint_argument_errors_as_torch(kwargs: dict, message: str) -> None:
    for lib in (genesis, torch):
        with pytest.raises(ValueError, match=message):
            lib.utils.checkpoint.checkpoint(lambda a, scale=1.0: a * scale, lib.ones(2, requires_grad=True), **kwargs)


@pytest.mark.parametrize("variant", ["reshaped", "fewer"])
def test_checkpoint_determinism_check_compares_saved_tensors_as_torch(variant: str) -> None:
    # torch checks the tensors the block saved for backward, not its outputs: the same count, and with the default
    # check the same shapes, dtypes and devices.
    errors = []
    for lib in (torch, genesis):
        calls = []

        def block(a, lib=lib, calls=calls):
            calls.append(1)
            if variant == "fewer":
                return a.exp().exp() if len(calls) == 1 else a.exp()
            b = a[: len(calls)]
            return b * b

        out = lib.utils.checkpoint.checkpoint(block, lib.ones(3, requires_grad=True), use_reentrant=False)
        with pytest.raises(RuntimeError) as info:
            out.sum().backward()
        errors.append((type(info.value).__name__, str(info.value).splitlines()[0]))
    assert errors[0] == errors[1]
    calls = []

    def scaled(a):  # a product with a number saves no tensor: nothing to compare, as torch
        calls.append(1)
        return a[: len(calls)] * 2

    x = genesis.ones(3, requires_grad=True)
    checkpoint.checkpoint(scaled, x, use_reentrant=False).sum().backward()
    assert x.grad.tolist() == [2.0, 0.0, 0.0]


def test_non_reentrant_checkpoint_serves_grad_inputs_and_double_backward_as_torch() -> None:
    """The non-reentrant variant records the plain graph: ``autograd.grad`` leaves ``.grad`` alone, ``backward``
    with ``inputs`` and double backward work, outputs keep their own nodes; the reentrant one refuses the first two
    with torch's error, and both see an input changed in place after the forward."""
    seen = []
    for lib in (torch, genesis):
        lin = lib.nn.Linear(4, 4).double()
        with lib.no_grad():
            lin.weight.copy_(lib.linspace(-1, 1, 16, dtype=lib.float64).view(4, 4))
            lin.bias.fill_(0.1)
        x = lib.linspace(-1, 1, 8, dtype=lib.float64).view(2, 4).requires_grad_()
        for reentrant in (False, True):
            row = []
            for mode in ("grad", "inputs", "double", "inplace"):
                z = x.detach().clone().requires_grad_() if mode == "double" else x * 1
                out = lib.utils.checkpoint.checkpoint(lambda t, lib=lib, lin=lin: (lib.tanh(lin(t)) ** 3).view(8), z,
                                                      use_reentrant=reentrant)
                try:
                    if mode == "grad":
                        grads = lib.autograd.grad(out.sum(), [lin.weight, x])
                        row.append((f"{grads[0].abs().sum().item():.10g}", f"{grads[1].abs().sum().item():.10g}",
                                    lin.weight.grad is None))
                    elif mode == "inputs":
                        out.sum().backward(inputs=[x])
                        row.append((f"{x.grad.abs().sum().item():.10g}", lin.weight.grad is None))
                    elif mode == "double":
                        g, = lib.autograd.grad(out.sum(), z, create_graph=True)
                        g.pow(2).sum().backward()
                        row.append((f"{z.grad.abs().sum().item():.10g}", f"{lin.weight.grad.abs().sum().item():.10g}"))
                    else:
                        with lib.no_grad():
                            z.mul_(2)
                        out.sum().backward()
                except RuntimeError as e:
                    row.append(str(e)[:60])
                x.grad = lin.weight.grad = lin.bias.grad = None
            row.append(out.grad_fn.name())
            seen.append(row)
    assert seen[:2] == seen[2:]


def test_non_reentrant_checkpoint_recomputes_once_per_pass_and_frees_with_the_graph() -> None:
    calls = []
    w = genesis.linspace(-1, 1, 16, dtype=genesis.float64).view(4, 4).requires_grad_()

    def block(t):
        calls.append(1)
        return (t @ w).tanh() @ w

    x = genesis.linspace(-1, 1, 8, dtype=genesis.float64).view(2, 4).requires_grad_()
    out = checkpoint.checkpoint(block, x, use_reentrant=False)
    out.sum().backward(retain_graph=True)
    first = w.grad.clone()
    out.sum().backward()  # a second pass recomputes again
    assert len(calls) == 3 and genesis.allclose(w.grad, 2 * first, rtol=1e-12)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        out.sum().backward()
    nested = checkpoint.checkpoint(lambda t: checkpoint.checkpoint(block, t, use_reentrant=False).sin(), x,
                                   use_reentrant=False)
    w.grad = None
    nested.sum().backward()
    w2 = w.detach().requires_grad_()
    x2 = x.detach()
    ((x2 @ w2).tanh() @ w2).sin().sum().backward()
    assert genesis.allclose(w.grad, w2.grad, rtol=1e-12)


@pytest.mark.parametrize("transpose", [False, True])
def test_fuse_conv_bn_eval_matches_torch(transpose: bool) -> None:
    torch.manual_seed(0)
    conv_t = (torch.nn.ConvTranspose2d(3, 4, 3) if transpose else torch.nn.Conv2d(3, 4, 3)).double().eval()
    bn_t = torch.nn.BatchNorm2d(4).double()
    bn_t.train()
    bn_t(conv_t(torch.randn(2, 3, 6, 6, dtype=torch.float64)))  # running statistics away from 0 and 1
    bn_t.eval()
    with torch.no_grad():
        bn_t.weight.uniform_(0.5, 1.5)
        bn_t.bias.uniform_(-0.5, 0.5)
    conv_g = (genesis.nn.ConvTranspose2d(3, 4, 3) if transpose else genesis.nn.Conv2d(3, 4, 3)).double().to(DEVICE)
    bn_g = genesis.nn.BatchNorm2d(4).double().to(DEVICE).eval()
    conv_g.eval()
    conv_g.load_state_dict({k: to_genesis(v) for k, v in conv_t.state_dict().items()})
    bn_g.load_state_dict({k: to_genesis(v) for k, v in bn_t.state_dict().items()})
    fused_t = torch.nn.utils.fusion.fuse_conv_bn_eval(conv_t, bn_t, transpose)
    fused_g = genesis.nn.utils.fusion.fuse_conv_bn_eval(conv_g, bn_g, transpose)
    assert_same(fused_g.weight, fused_t.weight)
    assert_same(fused_g.bias, fused_t.bias)
    x = torch.randn(2, 3, 6, 6, dtype=torch.float64)
    assert_same(fused_g(to_genesis(x)), bn_t(conv_t(x)))
    assert isinstance(fused_g.weight, genesis.nn.Parameter) and conv_g.weight is not fused_g.weight
    with pytest.raises(AssertionError):
        genesis.nn.utils.fusion.fuse_conv_bn_eval(conv_g.train(), bn_g)


def test_fuse_linear_bn_eval_matches_torch() -> None:
    torch.manual_seed(1)
    lin_t, bn_t = torch.nn.Linear(5, 4).double().eval(), torch.nn.BatchNorm1d(4).double()
    bn_t.train()
    bn_t(lin_t(torch.randn(8, 5, dtype=torch.float64)))
    bn_t.eval()
    lin_g = genesis.nn.Linear(5, 4).double().to(DEVICE).eval()
    bn_g = genesis.nn.BatchNorm1d(4).double().to(DEVICE).eval()
    lin_g.load_state_dict({k: to_genesis(v) for k, v in lin_t.state_dict().items()})
    bn_g.load_state_dict({k: to_genesis(v) for k, v in bn_t.state_dict().items()})
    fused_t = torch.nn.utils.fusion.fuse_linear_bn_eval(lin_t, bn_t)
    fused_g = genesis.nn.utils.fusion.fuse_linear_bn_eval(lin_g, bn_g)
    assert_same(fused_g.weight, fused_t.weight)
    assert_same(fused_g.bias, fused_t.bias)
    with pytest.raises(AssertionError):
        genesis.nn.utils.fusion.fuse_linear_bn_eval(lin_g, genesis.nn.BatchNorm1d(3).to(DEVICE).eval())


def test_skip_init_and_conv_weight_memory_format_as_torch() -> None:
    # skip_init builds on the meta device and gives empty memory on the asked device; a module without a device
    # argument is refused with torch's error. The conversion relays out every (transposed) convolution's weight.
    for lib in (torch, genesis):
        device = "cpu" if lib is torch else DEVICE
        m = lib.nn.utils.skip_init(lib.nn.Linear, 3, 4, device=device, dtype=lib.float64)
        assert tuple(m.weight.shape) == (4, 3) and m.weight.device.type == device.split(":")[0]
        assert m.bias.dtype is lib.float64 and not m.weight.is_meta
        with pytest.raises(RuntimeError, match="device' arg"):
            lib.nn.utils.skip_init(lib.nn.ReLU)
    layouts = []
    for lib in (torch, genesis):
        net = lib.nn.Sequential(lib.nn.Conv2d(3, 4, 3), lib.nn.Sequential(lib.nn.ConvTranspose2d(4, 2, 3)),
                                lib.nn.Conv3d(2, 2, 1), lib.nn.Linear(2, 2))
        assert lib.nn.utils.convert_conv2d_weight_memory_format(net, lib.channels_last) is net
        lib.nn.utils.convert_conv3d_weight_memory_format(net, lib.channels_last_3d)
        layouts.append([p.stride() for p in net.parameters()] + [net[0].weight.is_leaf])
    assert layouts[0] == layouts[1]


def test_checkpoint_detach_variable_as_torch() -> None:
    outs = []
    for lib, mod in ((torch, tc), (genesis, gc)):
        x, y = lib.ones(2, requires_grad=True), lib.ones(2)
        out = mod.detach_variable((x, y, 3))
        outs.append([(type(o).__name__, getattr(o, "requires_grad", None), getattr(o, "grad_fn", None)) for o in out])
        assert out[0] is not x and out[2] == 3
        with pytest.raises(RuntimeError) as info:
            mod.detach_variable([x])
        if lib is genesis:  # torch 2.13's message (older torch printed it as a tuple)
            assert str(info.value) == "Only tuple of tensors is supported. Got Unsupported input type: list"
    assert outs[0] == outs[1]
