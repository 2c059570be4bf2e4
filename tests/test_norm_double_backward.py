"""Double backward (``create_graph=True``) through the normalization layers against torch (float64 unless noted).

Gradient penalties (WGAN-GP, R1), MAML-style meta-learning and Hessian-vector products differentiate a norm's
gradient again. Each case takes the gradient of a cubic loss with ``create_graph`` and returns it with a penalty on
it; ``check`` compares those first-order gradients with torch's, then backpropagates a random combination of them
and compares every second-order gradient (to the input, the weight and the bias).
"""

from typing import Any, Callable

import pytest
import torch

import genesis
import genesis.nn.functional as F
from tests.helpers import DEVICE, check, check_module, rand, to_genesis, to_torch

F32 = torch.float32
# float32 against torch's float32: the second-order gradients sum hundreds of products of values up to ~1e4, computed
# in a different order (the fused kernels, the recorded tensor ops); the largest differences seen are ~3e-5 relative.
F32_TOL = {"rtol": 1e-4, "atol": 1e-3}


def penalty(op: Callable) -> Callable:
    """A check() function: the recorded gradients of ``sum(op(...)^3)`` with respect to every tensor input, and the
    penalty ``sum(g^2)`` over them; ``op`` may return extra non-differentiable tensors (running statistics)."""
    def fn(lib: Any, *inputs: Any) -> tuple:
        result = op(lib, *inputs)
        out, *extra = result if isinstance(result, tuple) else (result,)
        leaves = [x for x in inputs if isinstance(x, (torch.Tensor, genesis.Tensor))]
        grads = lib.autograd.grad((out ** 3).sum(), leaves, create_graph=True)
        return (*grads, sum((g * g).sum() for g in grads), *extra)
    return fn


def running_stats(lib: Any, x: Any) -> tuple:
    """Running mean and variance buffers (C,) of distinct values, in ``x``'s dtype and device."""
    c = x.shape[1]
    return (lib.linspace(-0.3, 0.2, c, dtype=x.dtype, device=x.device),
            lib.linspace(0.5, 1.5, c, dtype=x.dtype, device=x.device))


def batch_norm_op(training: bool, stats: bool = True) -> Callable:
    """``batch_norm`` with fresh running statistics (returned too, to compare their update), weight and bias when
    given as inputs."""
    def op(lib: Any, x: Any, *params: Any) -> tuple:
        mean, var = running_stats(lib, x) if stats else (None, None)
        out = lib.nn.functional.batch_norm(x, mean, var, *params, training=training, momentum=0.2)
        return (out, mean, var) if stats else (out,)
    return op


@pytest.mark.parametrize("shape", [(6, 3), (4, 3, 5), (2, 3, 4, 4), (2, 2, 3, 2, 2)], ids=["1d", "1d-L", "2d", "3d"])
@pytest.mark.parametrize("affine", [True, False], ids=["affine", "plain"])
@pytest.mark.parametrize("training", [True, False], ids=["train", "eval"])
def test_batch_norm(training: bool, affine: bool, shape: tuple) -> None:
    params = [rand(shape[1], seed=1, low=0.5, high=1.5), rand(shape[1], seed=2)] if affine else []
    check(penalty(batch_norm_op(training)), rand(*shape), *params)


def test_batch_norm_without_running_stats_and_weight_only() -> None:
    # Training without buffers (track_running_stats=False), and a weight without a bias.
    check(penalty(batch_norm_op(True, stats=False)), rand(4, 3, 5), rand(3, seed=1), rand(3, seed=2))
    check(penalty(lambda lib, x, w: lib.nn.functional.batch_norm(x, None, None, w, training=True)),
          rand(5, 4), rand(4, seed=1))


@pytest.mark.parametrize("groups, shape", [(1, (2, 4, 3, 3)), (2, (2, 4, 3, 3)), (4, (2, 4, 3, 3)), (3, (3, 6, 5)),
                                           (2, (2, 4, 2, 3, 2))])
@pytest.mark.parametrize("affine", [True, False], ids=["affine", "plain"])
def test_group_norm(groups: int, shape: tuple, affine: bool) -> None:
    params = [rand(shape[1], seed=1, low=0.5, high=1.5), rand(shape[1], seed=2)] if affine else []
    check(penalty(lambda lib, x, *p: lib.nn.functional.group_norm(x, groups, *p, eps=1e-3)), rand(*shape), *params)


@pytest.mark.parametrize("shape", [(2, 3, 6), (2, 3, 4, 4)], ids=["1d", "2d"])
@pytest.mark.parametrize("stats", [False, True], ids=["no-stats", "running-stats"])
@pytest.mark.parametrize("affine", [True, False], ids=["affine", "plain"])
def test_instance_norm(affine: bool, stats: bool, shape: tuple) -> None:
    def op(lib: Any, x: Any, *params: Any) -> tuple:
        mean, var = running_stats(lib, x) if stats else (None, None)
        out = lib.nn.functional.instance_norm(x, mean, var, *params, momentum=0.3)
        return (out, mean, var) if stats else (out,)
    params = [rand(shape[1], seed=1, low=0.5, high=1.5), rand(shape[1], seed=2)] if affine else []
    check(penalty(op), rand(*shape), *params)


def test_instance_norm_with_running_statistics_as_eval() -> None:
    # use_input_stats=False normalizes with the running statistics (eval batch norm).
    def op(lib: Any, x: Any, w: Any, b: Any) -> Any:
        return lib.nn.functional.instance_norm(x, *running_stats(lib, x), w, b, use_input_stats=False)
    check(penalty(op), rand(2, 3, 6), rand(3, seed=1), rand(3, seed=2))


@pytest.mark.parametrize("norm_shape", [(5,), (3, 5)], ids=["1-dim", "2-dims"])
@pytest.mark.parametrize("params", ["weight+bias", "weight", "none"])
@pytest.mark.parametrize("dtype", [torch.float64, F32], ids=["float64", "float32"])
def test_layer_norm(norm_shape: tuple, params: str, dtype: torch.dtype) -> None:
    # float32 takes the fused LayerNorm node (its recorded backward in tensor ops), float64 the composite on the CPU.
    tensors = {"weight+bias": [rand(*norm_shape, seed=1, dtype=dtype), rand(*norm_shape, seed=2, dtype=dtype)],
               "weight": [rand(*norm_shape, seed=1, dtype=dtype)], "none": []}[params]
    tol = F32_TOL if dtype is F32 else {}
    check(penalty(lambda lib, x, *p: lib.nn.functional.layer_norm(x, norm_shape, *p)), rand(2, 3, 5, dtype=dtype),
          *tensors, **tol)


@pytest.mark.parametrize("norm_shape", [(5,), (3, 5)], ids=["1-dim", "2-dims"])
@pytest.mark.parametrize("weight", [True, False], ids=["weight", "plain"])
@pytest.mark.parametrize("dtype", [torch.float64, F32], ids=["float64", "float32"])
def test_rms_norm(norm_shape: tuple, weight: bool, dtype: torch.dtype) -> None:
    tensors = [rand(*norm_shape, seed=1, dtype=dtype)] if weight else []
    tol = F32_TOL if dtype is F32 else {}
    check(penalty(lambda lib, x, *p: lib.nn.functional.rms_norm(x, norm_shape, *p, eps=1e-6)),
          rand(2, 3, 5, dtype=dtype), *tensors, **tol)


@pytest.mark.parametrize("name", ["batch_norm train", "batch_norm eval", "group_norm", "instance_norm"])
def test_float32_fused_nodes(name: str) -> None:
    op = {"batch_norm train": lambda lib, x, w, b: batch_norm_op(True)(lib, x, w, b),
          "batch_norm eval": lambda lib, x, w, b: batch_norm_op(False)(lib, x, w, b),
          "group_norm": lambda lib, x, w, b: lib.nn.functional.group_norm(x, 2, w, b),
          "instance_norm": lambda lib, x, w, b: lib.nn.functional.instance_norm(x, weight=w, bias=b)}[name]
    check(penalty(op), rand(2, 4, 3, 3, dtype=F32), rand(4, seed=1, dtype=F32), rand(4, seed=2, dtype=F32),
          **F32_TOL)


HALF_CASES = {
    "batch_norm mixed": (lambda lib, x, w, b: lib.nn.functional.batch_norm(x, None, None, w, b, training=True),
                         torch.bfloat16, F32),
    "batch_norm bf16": (lambda lib, x, w, b: lib.nn.functional.batch_norm(x, None, None, w, b, training=True),
                        torch.bfloat16, torch.bfloat16),
    "group_norm fp16": (lambda lib, x, w, b: lib.nn.functional.group_norm(x, 2, w, b), torch.float16, torch.float16),
    "layer_norm bf16": (lambda lib, x, w, b: lib.nn.functional.layer_norm(x, (5,), w, b), torch.bfloat16,
                        torch.bfloat16),
}


@pytest.mark.parametrize("name", list(HALF_CASES))
def test_half_precision_against_float64(name: str) -> None:
    # Half-precision norms compute their statistics in float32: the first and second-order gradients keep each
    # input's dtype (torch's) and agree with the float64 result to the half type's precision (torch's half-precision
    # CPU kernels are no closer to it).
    op, x_dtype, p_dtype = HALF_CASES[name]
    inputs = [rand(4, 4, 5, dtype=x_dtype), rand(5 if "layer" in name else 4, seed=1, dtype=p_dtype),
              rand(5 if "layer" in name else 4, seed=2, dtype=p_dtype)]

    def run(lib: Any, leaves: list) -> list:
        out = op(lib, *leaves)
        grads = lib.autograd.grad((out * out * out).sum(), leaves, create_graph=True)
        sum((g.float() ** 2).sum() for g in grads).backward()
        return [*grads, *(x.grad for x in leaves)]

    got = run(genesis, [to_genesis(t) for t in inputs])
    want = run(torch, [t.detach().double().requires_grad_() for t in inputs])
    dtypes = [x_dtype, p_dtype, p_dtype] * 2
    for k, (g, w, dtype) in enumerate(zip(got, want, dtypes)):
        assert to_torch(g).dtype == dtype, f"result {k}: dtype {g.dtype}, expected {dtype}"
        err = (to_torch(g).double() - w).abs().max() / w.abs().max()
        assert err < (2e-2 if dtype is torch.bfloat16 else 5e-3), f"result {k}: relative error {err:.2e}"


@pytest.mark.parametrize("train", [True, False], ids=["train", "eval"])
def test_gradient_penalty_through_a_critic(train: bool) -> None:
    # WGAN-GP / R1: the penalty on the critic's input gradient, differentiated to every parameter of a critic made of
    # every norm layer; the running statistics are compared afterwards (updated once, by the forward).
    def make(lib: Any) -> Any:
        n = lib.nn
        return n.Sequential(n.Conv2d(2, 4, 3, padding=1), n.BatchNorm2d(4), n.Tanh(), n.GroupNorm(2, 4), n.SiLU(),
                            n.InstanceNorm2d(4, affine=True, track_running_stats=True), n.Tanh(),
                            n.LayerNorm([4, 5, 5]), n.Flatten(), n.Linear(100, 1))

    def call(module: Any, x: Any) -> Any:
        lib = torch if isinstance(x, torch.Tensor) else genesis
        (g,) = lib.autograd.grad(module(x).sum(), x, create_graph=True)
        return ((g.flatten(1).norm(2, dim=1) - 1) ** 2).mean()

    t = make(torch).double().train(train)
    g = make(genesis).to(DEVICE, genesis.float64).train(train)
    check_module(g, t, rand(3, 2, 5, 5), call=call)


def test_hessian_vector_product() -> None:
    # autograd.functional.hvp: the double-backward trick through batch norm, group norm and layer norm.
    def f(lib: Any) -> Callable:
        def fn(x: Any) -> Any:
            y = lib.nn.functional.batch_norm(x, None, None, training=True)
            y = lib.nn.functional.group_norm(y.tanh(), 2)
            return (lib.nn.functional.layer_norm(y, (3, 3)) ** 3).sum()
        return fn

    x, v = rand(2, 4, 3, 3, requires_grad=False), rand(2, 4, 3, 3, requires_grad=False, seed=1)
    g_value, g_hvp = genesis.autograd.functional.hvp(f(genesis), to_genesis(x), to_genesis(v))
    t_value, t_hvp = torch.autograd.functional.hvp(f(torch), x, v)
    torch.testing.assert_close(to_torch(g_value), t_value)
    torch.testing.assert_close(to_torch(g_hvp), t_hvp)


FUSED_BACKWARD = {
    "batch_norm": ("batch_norm_backward", lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True)),
    "batch_norm eval": ("batch_norm_backward",
                        lambda x, w, b: F.batch_norm(x, genesis.zeros_like(w), genesis.ones_like(w), w, b)),
    "group_norm": ("group_norm_backward", lambda x, w, b: F.group_norm(x, 2, w, b)),
    "instance_norm": ("group_norm_backward", lambda x, w, b: F.instance_norm(x, weight=w, bias=b)),
    "layer_norm": ("layer_norm_backward", lambda x, w, b: F.layer_norm(x, (4, 4), w[:, None].expand(4, 4).contiguous(),
                                                                        b[:, None].expand(4, 4).contiguous())),
}


@pytest.mark.parametrize("name", list(FUSED_BACKWARD))
def test_first_order_backward_stays_one_fused_call(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # Without create_graph the backward is the backend's fused kernel, called once (the fast path is unchanged);
    # with create_graph it is recorded in tensor ops instead, and both give the same gradients.
    kernel, op = FUSED_BACKWARD[name]
    tensors = [rand(2, 4, 4, 4, dtype=F32), rand(4, seed=1, dtype=F32), rand(4, seed=2, dtype=F32)]
    backend = to_genesis(tensors[0]).ndarray.backend
    fused = getattr(backend, kernel)
    calls = []

    def spy(*args: Any) -> Any:
        calls.append(kernel)
        return fused(*args)

    monkeypatch.setattr(backend, kernel, spy)
    grads = {}
    for create_graph in (False, True):
        leaves = [to_genesis(t) for t in tensors]
        grads[create_graph] = genesis.autograd.grad((op(*leaves) ** 2).sum(), leaves, create_graph=create_graph)
        assert len(calls) == (0 if create_graph else 1), f"{kernel} called {len(calls)} times"
        assert all((g.grad_fn is not None) == create_graph for g in grads[create_graph])
        calls.clear()
    for plain, recorded in zip(grads[False], grads[True]):
        torch.testing.assert_close(to_torch(recorded), to_torch(plain), rtol=1e-5, atol=1e-5)
