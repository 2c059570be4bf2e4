"""Shared test helpers: run the same function in Genesis and PyTorch and compare everything.

``check(fn, *inputs)`` calls ``fn(lib, *tensors)`` once with ``lib=genesis`` and once with ``lib=torch`` on
tensors holding the same values, then compares shape, dtype and values of every output and, for differentiable
inputs, the gradient of every input after backpropagating the same random output gradient. Inputs are torch
tensors (the oracle's copies); Genesis copies are made on ``DEVICE``.
"""

from __future__ import annotations

import os
import re
from typing import Any, Callable

import numpy as np
import pytest
import torch

import genesis

DEVICE = os.environ.get("GENESIS_TEST_DEVICE", "cpu")
ACC = "torch::autograd::AccumulateGrad"  # torch's name() of a leaf's gradient-accumulating node

requires_cuda = pytest.mark.skipif(
    DEVICE != "cuda" and not genesis.cuda.is_available(), reason="needs a CUDA GPU (set GENESIS_TEST_DEVICE=cuda)"
)


def _torch_has_lanczos() -> bool:
    try:
        torch.nn.functional.interpolate(torch.zeros(1, 1, 2, 2), size=1, mode="lanczos", antialias=True)
    except (ValueError, NotImplementedError, RuntimeError):
        return False
    return True


#: Tests of interpolate's lanczos mode and torch 2.13's resize messages need that torch as the oracle (a GPU machine
#: may have an older one).
requires_torch_lanczos = pytest.mark.skipif(not _torch_has_lanczos(),
                                            reason="the torch oracle predates interpolate's lanczos mode (torch 2.13)")

TORCH_DTYPE = {
    genesis.float16: torch.float16, genesis.bfloat16: torch.bfloat16, genesis.float32: torch.float32,
    genesis.float64: torch.float64, genesis.int8: torch.int8, genesis.uint8: torch.uint8,
    genesis.int16: torch.int16, genesis.int32: torch.int32, genesis.int64: torch.int64, genesis.bool: torch.bool,
    genesis.complex64: torch.complex64, genesis.complex128: torch.complex128,
}
GENESIS_DTYPE = {v: k for k, v in TORCH_DTYPE.items()}

# Default tolerances per dtype (relative, absolute).
TOLERANCE = {
    torch.float64: (1e-9, 1e-10), torch.float32: (1e-5, 1e-6), torch.float16: (2e-3, 2e-3),
    torch.bfloat16: (1.6e-2, 1e-2), torch.complex128: (1e-9, 1e-10), torch.complex64: (1e-5, 1e-6),
}


def to_genesis(t: torch.Tensor, requires_grad: bool | None = None, device: str = DEVICE) -> genesis.Tensor:
    """A Genesis copy of a torch tensor on ``device`` (keeps dtype; requires_grad follows ``t`` by default)."""
    data = t.detach()
    if data.dtype == torch.bfloat16:
        out = genesis.tensor(data.float().numpy(), dtype=genesis.bfloat16, device=device)
    else:
        out = genesis.tensor(data.numpy(), device=device)
    if requires_grad if requires_grad is not None else t.requires_grad:
        out.requires_grad_(True)
    return out


def to_torch(t: genesis.Tensor) -> torch.Tensor:
    """A torch CPU copy of a Genesis tensor."""
    t = t.detach().cpu()
    if t.dtype is genesis.bfloat16:
        return torch.from_numpy(np.array(t.float().numpy())).to(torch.bfloat16)
    return torch.from_numpy(np.array(t.numpy()))


def assert_same(g: Any, t: Any, rtol: float | None = None, atol: float | None = None, what: str = "output") -> None:
    """Shape, dtype and values of a Genesis result equal torch's (within tolerance for floats)."""
    if isinstance(t, (tuple, list)):
        assert isinstance(g, (tuple, list)) and len(g) == len(t), f"{what}: {type(g)} vs {type(t)}"
        for i, (gi, ti) in enumerate(zip(g, t)):
            assert_same(gi, ti, rtol, atol, f"{what}[{i}]")
        return
    if not isinstance(t, torch.Tensor):
        assert g == t or (isinstance(t, float) and np.isclose(g, t, rtol=rtol or 1e-6)), f"{what}: {g} != {t}"
        return
    assert isinstance(g, genesis.Tensor), f"{what}: expected a Tensor, got {type(g).__name__}"
    assert tuple(g.shape) == tuple(t.shape), f"{what}: shape {tuple(g.shape)} != torch {tuple(t.shape)}"
    assert TORCH_DTYPE[g.dtype] == t.dtype, f"{what}: dtype {g.dtype} != torch {t.dtype}"
    assert str(g.device).split(":")[0] == DEVICE.split(":")[0] or g.device.type == "cpu", f"{what}: device {g.device}"
    got = to_torch(g)
    if t.dtype.is_floating_point or t.dtype.is_complex:
        r, a = TOLERANCE[t.dtype]
        wide = torch.complex128 if t.dtype.is_complex else torch.float64
        torch.testing.assert_close(got.to(wide), t.detach().to(wide), rtol=rtol or r, atol=atol or a,
                                   equal_nan=True, msg=lambda m: f"{what}: {m}")
    else:
        assert torch.equal(got, t.detach()), f"{what}: values differ\n{got}\n{t}"


def _leaves(inputs: tuple) -> tuple[list, list]:
    g_inputs, t_inputs = [], []
    for x in inputs:
        if isinstance(x, torch.Tensor):
            t_leaf = x.detach().clone().requires_grad_(x.requires_grad)
            g_inputs.append(to_genesis(x))
            t_inputs.append(t_leaf)
        else:
            g_inputs.append(x)
            t_inputs.append(x)
    return g_inputs, t_inputs


def _backward_same(pairs: list[tuple[genesis.Tensor, torch.Tensor]]) -> None:
    """Backpropagate the same random output gradients through each (Genesis, torch) output pair."""
    gen = torch.Generator().manual_seed(0)
    t_total, g_total = 0, 0
    for g, t in pairs:
        if t.dtype.is_complex:  # a real loss: the real part of a complex-weighted sum
            w = torch.view_as_complex(torch.randn((*t.shape, 2), generator=gen, dtype=torch.float64)).to(t.dtype)
            t_total = t_total + (t * w).real.sum()
            g_total = g_total + (g * to_genesis(w, requires_grad=False)).real.sum()
            continue
        w = torch.randn(t.shape, generator=gen, dtype=torch.float64).to(t.dtype)
        t_total = t_total + (t * w).sum()
        g_total = g_total + (g * to_genesis(w, requires_grad=False)).sum()
    t_total.backward()
    g_total.backward()


def check(fn: Callable, *inputs: Any, rtol: float | None = None, atol: float | None = None,
          grad_rtol: float | None = None, grad_atol: float | None = None, backward: bool = True) -> Any:
    """Run ``fn(lib, *inputs)`` in Genesis and torch; compare outputs and the gradient of every input."""
    g_inputs, t_inputs = _leaves(inputs)
    g_out = fn(genesis, *g_inputs)
    t_out = fn(torch, *t_inputs)
    assert_same(g_out, t_out, rtol, atol)
    t_outs = t_out if isinstance(t_out, (tuple, list)) else (t_out,)
    g_outs = g_out if isinstance(g_out, (tuple, list)) else (g_out,)
    needs_grad = [x for x in t_inputs if isinstance(x, torch.Tensor) and x.requires_grad]
    if not backward or not needs_grad:
        return g_out
    pairs = [(g, t) for g, t in zip(g_outs, t_outs) if isinstance(t, torch.Tensor) and t.requires_grad]
    if not pairs:
        return g_out
    _backward_same(pairs)
    for k, (gx, tx) in enumerate(zip(g_inputs, t_inputs)):
        if isinstance(tx, torch.Tensor) and tx.requires_grad:
            if tx.grad is None:
                assert gx.grad is None or not to_torch(gx.grad).any(), f"grad of input {k}: torch has none"
                continue
            assert gx.grad is not None, f"grad of input {k}: Genesis produced none"
            assert_same(gx.grad, tx.grad, grad_rtol or rtol, grad_atol or atol, f"grad of input {k}")
    return g_out


def torch_differentiates(fn: Callable) -> bool:
    """Whether the installed torch has a derivative for ``fn(x)`` (older releases lack some): tests compare only
    values where the oracle cannot give gradients."""
    x = torch.ones(2, dtype=torch.float64, requires_grad=True)
    try:
        fn(x).sum().backward()
    except (NotImplementedError, RuntimeError):
        return False
    return True


def rand(*shape: int, dtype: torch.dtype = torch.float64, requires_grad: bool = True, low: float = -1.0,
         high: float = 1.0, seed: int = 0) -> torch.Tensor:
    """A reproducible random torch tensor (uniform in [low, high))."""
    gen = torch.Generator().manual_seed(seed + 7919 * len(shape) + sum(shape))
    t = (torch.rand(shape, generator=gen, dtype=torch.float64) * (high - low) + low).to(dtype)
    return t.requires_grad_(requires_grad and dtype.is_floating_point)


def check_error(exc: type[BaseException], fn: Callable, *inputs: Any, match: str | None = None) -> None:
    """Genesis raises the same exception type as torch for ``fn(lib, *inputs)``, and inputs stay unchanged."""
    g_inputs, t_inputs = _leaves(inputs)
    with pytest.raises(exc):
        fn(torch, *t_inputs)
    before = [to_torch(x).clone() if isinstance(x, genesis.Tensor) else None for x in g_inputs]
    with pytest.raises(exc, match=match):
        fn(genesis, *g_inputs)
    for x, b in zip(g_inputs, before):
        if b is not None:
            after = to_torch(x)
            same = torch.equal(after, b) or (b.is_floating_point() and torch.allclose(after, b, 0, 0, equal_nan=True))
            assert same, "bad input changed an input tensor"


def check_module(g_module: Any, t_module: torch.nn.Module, *inputs: Any, rtol: float | None = None,
                 atol: float | None = None, grad_rtol: float | None = None, grad_atol: float | None = None,
                 call: Callable | None = None) -> Any:
    """A Genesis module with a torch module's weights (copied through state_dict) gives torch's results.

    Compares parameter names, outputs, the gradient of every input and every parameter (after backpropagating
    the same random output gradient), and the buffers afterwards (e.g. batch-norm running statistics).
    ``call(module, *inputs)`` customizes how the module is invoked.
    """
    g_module.load_state_dict({k: to_genesis(v, requires_grad=False) for k, v in t_module.state_dict().items()})
    g_params = dict(g_module.named_parameters())
    t_params = dict(t_module.named_parameters())
    assert list(g_params) == list(t_params), f"parameter names {list(g_params)} != torch {list(t_params)}"
    call = call or (lambda m, *xs: m(*xs))
    g_inputs, t_inputs = _leaves(inputs)
    g_out = call(g_module, *g_inputs)
    t_out = call(t_module, *t_inputs)
    assert_same(g_out, t_out, rtol, atol)
    t_outs = t_out if isinstance(t_out, (tuple, list)) else (t_out,)
    g_outs = g_out if isinstance(g_out, (tuple, list)) else (g_out,)
    pairs = [(g, t) for g, t in zip(g_outs, t_outs) if isinstance(t, torch.Tensor) and t.requires_grad]
    if pairs:
        _backward_same(pairs)
        for k, (gx, tx) in enumerate(zip(g_inputs, t_inputs)):
            if isinstance(tx, torch.Tensor) and tx.requires_grad:
                assert_same(gx.grad, tx.grad, grad_rtol or rtol, grad_atol or atol, f"grad of input {k}")
        for name, tp in t_params.items():
            if tp.grad is None:
                assert g_params[name].grad is None, f"grad of {name}: torch has none"
            else:
                assert g_params[name].grad is not None, f"grad of {name}: Genesis produced none"
                assert_same(g_params[name].grad, tp.grad, grad_rtol or rtol, grad_atol or atol, f"grad of {name}")
    for name, tb in t_module.named_buffers():
        assert_same(dict(g_module.named_buffers())[name], tb, rtol, atol, f"buffer {name}")
    return g_out


# torch's norm layers whose repr gained a ``bias=`` field in torch 2.13.
_NORM_LAYERS = (torch.nn.LayerNorm, torch.nn.GroupNorm, torch.nn.modules.batchnorm._NormBase)
_AFFINE_FIELD = re.compile(r"\b((?:elementwise_)?affine=(?:True|False))")


def expected_repr(module: torch.nn.Module) -> str:
    """``repr(module)`` as torch 2.13 prints it: the text Genesis's modules reproduce, whichever torch is installed.

    torch 2.13 prints ``bias=<True|False>`` right after the ``affine=`` / ``elementwise_affine=`` field of LayerNorm,
    GroupNorm, BatchNorm1d/2d/3d, InstanceNorm1d/2d/3d and their Lazy forms (``bias`` there is whether the layer has
    a bias parameter); older releases leave the field out. For each such layer, at any depth, whose own
    ``extra_repr()`` has no ``bias=`` field, this inserts it from the layer's actual ``bias`` attribute. Every
    other character is torch's own repr (with torch 2.13 the result is exactly ``repr(module)``).
    """
    patched = []
    for layer in module.modules():
        text = layer.extra_repr()
        if isinstance(layer, _NORM_LAYERS) and "bias=" not in text:
            field = f", bias={layer.bias is not None}"
            new_text, count = _AFFINE_FIELD.subn(r"\g<1>" + field, text, count=1)
            assert count == 1, f"no affine field in {type(layer).__name__}'s repr: {text}"
            object.__setattr__(layer, "extra_repr", lambda t=new_text: t)
            patched.append(layer)
    try:
        return repr(module)
    finally:
        for layer in patched:
            del layer.__dict__["extra_repr"]


def torch_error_class(err: BaseException) -> type[BaseException]:
    """The Genesis class matching a torch exception: ``torch.linalg.LinAlgError`` is ``genesis.linalg.LinAlgError``;
    any other is torch's class itself (Genesis raises the builtin ones torch raises)."""
    return genesis.linalg.LinAlgError if isinstance(err, torch.linalg.LinAlgError) else type(err)


def check_like_torch(fn: Callable, *inputs: Any) -> BaseException | None:
    """``fn(lib, *inputs)`` raises in Genesis exactly when it raises in torch, an instance of the matching class
    with a message; otherwise the results match (``assert_same``). Returns torch's exception, if any."""
    g_inputs, t_inputs = _leaves(inputs)
    try:
        expected = fn(torch, *t_inputs)
    except Exception as err:  # any class torch raises is the expectation
        with pytest.raises(torch_error_class(err)) as info:
            fn(genesis, *g_inputs)
        assert str(info.value), f"{type(info.value).__name__} without a message"
        return err
    assert_same(fn(genesis, *g_inputs), expected)
    return None


def check_bits(fn: Callable, *inputs: torch.Tensor) -> None:
    """``fn(lib, *inputs)`` gives torch's shape, dtype and exactly its values in Genesis: the roundings of
    half-precision kernels (``check``'s tolerances would hide a step of float16 or bfloat16); NaN where torch's is."""
    g_out = fn(genesis, *(to_genesis(x, requires_grad=False) for x in inputs))
    t_out = fn(torch, *inputs)
    assert TORCH_DTYPE[g_out.dtype] == t_out.dtype and tuple(g_out.shape) == tuple(t_out.shape)
    got = to_torch(g_out)
    same = (got == t_out) | (got.isnan() & t_out.isnan())
    assert bool(same.all()), f"{int((~same).sum())} of {same.numel()} values differ\n{got[~same]}\n{t_out[~same]}"
