"""genesis.func against torch.func on the same inputs: functional_call (buffers, tied weights, restoring on errors),
grad / grad_and_value / vjp / jvp / jacrev / jacfwd / hessian (values, pytree structures, composition), vmap as a
per-sample loop (in_dims / out_dims, per-sample gradients, ensembles), and a script using ``torch.func`` through
``genesis.torch_compat``."""

from __future__ import annotations

import runpy
import textwrap
import warnings
from collections import namedtuple
from typing import Any

import pytest
import torch
import torch.func as tf
import torch.utils._pytree as tp

import genesis
import genesis.func as gf
import genesis.utils._pytree as gp
from genesis import torch_compat
from tests.helpers import DEVICE, assert_same, rand, to_genesis, to_torch


def _g(tree: Any, requires_grad: bool = False) -> Any:
    """A Genesis copy of a pytree of torch tensors."""
    if isinstance(tree, torch.Tensor):
        return to_genesis(tree, requires_grad=requires_grad)
    if isinstance(tree, dict):
        return {k: _g(v, requires_grad) for k, v in tree.items()}
    if isinstance(tree, (tuple, list)):
        return type(tree)(_g(v, requires_grad) for v in tree)
    return tree


def _same(g: Any, t: Any, what: str = "result", rtol: float | None = None, atol: float | None = None) -> None:
    """The same pytree structure (container types, dict keys in order) and the same tensors."""
    if isinstance(t, dict):
        assert isinstance(g, dict) and list(g) == list(t), f"{what}: keys {list(g)} != torch {list(t)}"
        for k in t:
            _same(g[k], t[k], f"{what}[{k!r}]", rtol, atol)
    elif isinstance(t, (tuple, list)):
        assert type(g) is type(t) and len(g) == len(t), f"{what}: {type(g).__name__} != {type(t).__name__}"
        for i, (gi, ti) in enumerate(zip(g, t)):
            _same(gi, ti, f"{what}[{i}]", rtol, atol)
    else:
        assert_same(g, t, rtol, atol, what)


def _mlp(lib: Any) -> Any:
    return lib.nn.Sequential(lib.nn.Linear(4, 8), lib.nn.Tanh(), lib.nn.Linear(8, 3))


def _pair(make: Any = _mlp, seed: int = 0) -> tuple[Any, torch.nn.Module]:
    """The same model in Genesis and torch (float64, torch's weights)."""
    torch.manual_seed(seed)
    t_model = make(torch).double()
    g_model = make(genesis).to(DEVICE).double()
    g_model.load_state_dict({k: to_genesis(v, requires_grad=False) for k, v in t_model.state_dict().items()})
    return g_model, t_model


# ------------------------------------------------------------------------ functional_call


def test_functional_call_uses_given_tensors_and_gradients_reach_them() -> None:
    g_model, t_model = _pair()
    t_new = {k: rand(*v.shape, seed=i) for i, (k, v) in enumerate(t_model.named_parameters())}
    g_new = _g(t_new, requires_grad=True)
    x = rand(5, 4, requires_grad=False, seed=9)
    t_out = tf.functional_call(t_model, t_new, (x,))
    g_out = gf.functional_call(g_model, g_new, (to_genesis(x),))
    _same(g_out, t_out)
    t_out.pow(2).sum().backward()
    g_out.pow(2).sum().backward()
    for k in t_new:
        assert_same(g_new[k].grad, t_new[k].grad, what=f"grad of {k}")
    assert all(p.grad is None for p in g_model.parameters())  # the module's own parameters took no part
    originals = dict(g_model.named_parameters())
    assert all(isinstance(p, genesis.nn.Parameter) for p in originals.values())
    _same(g_model(to_genesis(x)), t_model(x))  # back to its own weights
    # A tuple of dicts (params, buffers), a lone argument that is not a tuple, keyword arguments.
    split = ({k: v for k, v in g_new.items() if "0." in k}, {k: v for k, v in g_new.items() if "2." in k})
    assert_same(gf.functional_call(g_model, split, to_genesis(x)), t_out)
    # Keyword arguments only; a weight given, the module's own bias used.
    lin_g = genesis.nn.Linear(4, 2).to(DEVICE).double()
    lin_t = torch.nn.Linear(4, 2).double()
    w, bias = rand(2, 4, seed=3), to_torch(lin_g.bias)
    _same(gf.functional_call(lin_g, {"weight": _g(w)}, (), {"input": to_genesis(x)}),
          tf.functional_call(lin_t, {"weight": w, "bias": bias}, (), {"input": x}))


def test_functional_call_with_batch_norm_buffers() -> None:
    g_bn, t_bn = _pair(lambda lib: lib.nn.BatchNorm1d(3))
    x = rand(6, 3, requires_grad=False, seed=1)
    t_state = {k: v.clone() for k, v in t_bn.state_dict().items()}
    t_state["running_mean"] = rand(3, requires_grad=False, seed=2)
    g_state = _g(t_state)
    g_before = {k: to_torch(v).clone() for k, v in g_bn.state_dict().items()}
    # Training mode: the given running statistics are updated in place (torch's semantics), the module's are not.
    _same(gf.functional_call(g_bn, g_state, to_genesis(x)), tf.functional_call(t_bn, t_state, x))
    _same(g_state, t_state, "given buffers after the call")
    assert all(torch.equal(to_torch(v), g_before[k]) for k, v in g_bn.state_dict().items())  # the module's own
    t_bn.eval(), g_bn.eval()
    _same(gf.functional_call(g_bn, g_state, to_genesis(x)), tf.functional_call(t_bn, t_state, x))


class _Tied:
    """A model whose two linear layers share one weight (``b.weight is a.weight``)."""

    @staticmethod
    def make(lib: Any) -> Any:
        model = lib.nn.Sequential(lib.nn.Linear(3, 3, bias=False), lib.nn.Linear(3, 3, bias=False))
        model[1].weight = model[0].weight
        return model


@pytest.mark.parametrize("tie_weights", [True, False])
def test_functional_call_tied_weights(tie_weights: bool) -> None:
    g_model, t_model = _pair(_Tied.make)
    assert g_model[1].weight is g_model[0].weight
    w = rand(3, 3, seed=4)
    x = rand(2, 3, requires_grad=False, seed=5)
    t_out = tf.functional_call(t_model, {"0.weight": w}, x, tie_weights=tie_weights)
    g_w = to_genesis(w)
    g_out = gf.functional_call(g_model, {"0.weight": g_w}, to_genesis(x), tie_weights=tie_weights)
    _same(g_out, t_out)
    t_out.sum().backward()
    g_out.sum().backward()
    assert_same(g_w.grad, w.grad)
    assert g_model[1].weight is g_model[0].weight  # still tied afterwards
    same_value = {"0.weight": g_w, "1.weight": g_w}
    _same(gf.functional_call(g_model, same_value, to_genesis(x), tie_weights=tie_weights),
          tf.functional_call(t_model, {"0.weight": w, "1.weight": w}, x, tie_weights=tie_weights))
    two = {"0.weight": g_w, "1.weight": g_w * 2}
    if tie_weights:
        with pytest.raises(ValueError, match="which are tied"):
            gf.functional_call(g_model, two, to_genesis(x))
    else:
        _same(gf.functional_call(g_model, two, to_genesis(x), tie_weights=False),
              tf.functional_call(t_model, {"0.weight": w, "1.weight": w * 2}, x, tie_weights=False))


def test_functional_call_restores_on_exceptions_and_checks_keys() -> None:
    class Boom(genesis.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = genesis.nn.Linear(2, 2)
            self.register_buffer("count", genesis.zeros(()))

        def forward(self, x: genesis.Tensor) -> genesis.Tensor:
            assert self.lin.weight is not own["lin.weight"] and self.extra is not None
            raise KeyError("boom")

    model = Boom()
    own = {**dict(model.named_parameters()), **dict(model.named_buffers())}
    given = {"lin.weight": genesis.ones(2, 2), "count": genesis.ones(()), "extra": genesis.ones(1)}
    with pytest.raises(KeyError, match="boom"):
        gf.functional_call(model, given, genesis.ones(1, 2))
    assert {**dict(model.named_parameters()), **dict(model.named_buffers())} == own
    assert all(a is b for a, b in zip(own.values(), [*model.parameters(), *model.buffers()]))
    assert not hasattr(model, "extra")
    with pytest.raises(RuntimeError, match=r"Unexpected key\(s\): 'extra'.*\n\tMissing key\(s\): 'count', 'lin.bias'"):
        gf.functional_call(model, {"lin.weight": genesis.ones(2, 2), "extra": genesis.ones(1)}, genesis.ones(1, 2),
                           strict=True)
    with pytest.raises(ValueError, match="appeared in multiple dictionaries"):
        gf.functional_call(model, ({"count": genesis.ones(())}, {"count": genesis.ones(())}), genesis.ones(1, 2))
    with pytest.raises(ValueError, match="to be a dict, or a list/tuple of dicts"):
        gf.functional_call(model, genesis.ones(1), genesis.ones(1, 2))
    assert all(a is b for a, b in zip(own.values(), [*model.parameters(), *model.buffers()]))


def test_stateless_functional_call_is_the_older_spelling() -> None:
    g_model, t_model = _pair()
    x = rand(2, 4, requires_grad=False)
    params = {"0.bias": rand(8, seed=7, requires_grad=False)}
    with pytest.warns(FutureWarning, match="torch.func.functional_call"):
        g_out = genesis.nn.utils.stateless.functional_call(g_model, _g(params), to_genesis(x))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        _same(g_out, torch.nn.utils.stateless.functional_call(t_model, params, x))


# ------------------------------------------------------------------------ MAML


def _maml_outer_grads(lib: Any, func: Any, model: Any, data: tuple, through_grad_transform: bool) -> dict:
    """One meta-step: an inner SGD step on the support set, the query loss with the fast weights, backward."""
    xs, ys, xq, yq = data
    params = dict(model.named_parameters())

    def loss(p: dict, x: Any, y: Any) -> Any:
        return lib.nn.functional.mse_loss(func.functional_call(model, p, (x,)), y)

    if through_grad_transform:
        grads = func.grad(loss)(params, xs, ys)
    else:
        grads = dict(zip(params, lib.autograd.grad(loss(params, xs, ys), list(params.values()), create_graph=True)))
    fast = {k: p - 0.1 * grads[k] for k, p in params.items()}
    loss(fast, xq, yq).backward()
    return {k: p.grad for k, p in model.named_parameters()}


@pytest.mark.parametrize("through_grad_transform", [False, True])
def test_maml_second_order_meta_gradient(through_grad_transform: bool) -> None:
    g_model, t_model = _pair()
    data = tuple(rand(*s, requires_grad=False, seed=i) for i, s in enumerate([(5, 4), (5, 3), (6, 4), (6, 3)]))
    t_grads = _maml_outer_grads(torch, tf, t_model, data, through_grad_transform)
    g_grads = _maml_outer_grads(genesis, gf, g_model, _g(data), through_grad_transform)
    _same(g_grads, t_grads)


# ------------------------------------------------------------------------ per-sample gradients, ensembles


def _per_sample_grads(lib: Any, func: Any, model: Any, x: Any, y: Any) -> Any:
    params = {k: v.detach() for k, v in model.named_parameters()}
    buffers = {k: v.detach() for k, v in model.named_buffers()}

    def compute_loss(params: dict, buffers: dict, sample: Any, target: Any) -> Any:
        prediction = func.functional_call(model, (params, buffers), (sample.unsqueeze(0),))
        return lib.nn.functional.cross_entropy(prediction, target.unsqueeze(0))

    return func.vmap(func.grad(compute_loss), in_dims=(None, None, 0, 0))(params, buffers, x, y)


def test_per_sample_gradients_match_torch_func() -> None:
    g_model, t_model = _pair()
    x = rand(7, 4, requires_grad=False, seed=3)
    y = torch.tensor([0, 2, 1, 1, 0, 2, 2])
    t_grads = _per_sample_grads(torch, tf, t_model, x, y)
    g_grads = _per_sample_grads(genesis, gf, g_model, _g(x), _g(y))
    _same(g_grads, t_grads)
    assert all(not g.requires_grad for g in g_grads.values())
    assert all(p.grad is None for p in g_model.parameters())


def test_ensemble_with_stack_module_state() -> None:
    pairs = [_pair(seed=s) for s in range(3)]
    g_models, t_models = [g for g, _ in pairs], [t for _, t in pairs]
    x = rand(5, 4, requires_grad=False, seed=8)

    def run(func: Any, models: list, x: Any) -> tuple:
        params, buffers = func.stack_module_state(models)

        def fmodel(params: dict, buffers: dict, x: Any) -> Any:
            return func.functional_call(models[0], (params, buffers), (x,))

        return params, func.vmap(fmodel, in_dims=(0, 0, None))(params, buffers, x)

    t_params, t_out = run(tf, t_models, x)
    g_params, g_out = run(gf, g_models, to_genesis(x))
    _same(g_params, t_params)
    assert all(p.is_leaf and p.requires_grad for p in g_params.values())
    _same(g_out, t_out)
    t_out.pow(2).sum().backward()
    g_out.pow(2).sum().backward()
    _same({k: p.grad for k, p in g_params.items()}, {k: p.grad for k, p in t_params.items()})
    with pytest.raises(RuntimeError, match="at least one model"):
        gf.stack_module_state([])
    with pytest.raises(RuntimeError, match="same class"):
        gf.stack_module_state([genesis.nn.Linear(2, 2), genesis.nn.Tanh()])
    with pytest.raises(RuntimeError, match="training/eval mode"):
        gf.stack_module_state([genesis.nn.Linear(2, 2), genesis.nn.Linear(2, 2).eval()])


# ------------------------------------------------------------------------ grad, vjp, jvp


def _f_tree(lib: Any, p: dict, xs: tuple, scale: float = 1.0) -> Any:
    """A scalar function of a dict and a tuple of tensors (with a kwarg)."""
    return ((p["w"] * xs[0]).sin().sum() + (p["b"] ** 2 * xs[1]).sum()) * scale


def test_grad_pytrees_argnums_aux_and_value() -> None:
    p = {"w": rand(3, seed=1, requires_grad=False), "b": rand(2, seed=2, requires_grad=False)}
    xs = (rand(3, seed=3, requires_grad=False), rand(2, seed=4, requires_grad=False))
    for argnums in (0, 1, (0, 1), (1, 0), -1):
        t = tf.grad(lambda p, xs, scale=1.0: _f_tree(torch, p, xs, scale), argnums=argnums)(p, xs, scale=2.0)
        g = gf.grad(lambda p, xs, scale=1.0: _f_tree(genesis, p, xs, scale), argnums=argnums)(_g(p), _g(xs),
                                                                                               scale=2.0)
        _same(g, t, f"argnums={argnums}")

    def with_aux(lib: Any) -> Any:
        return lambda p, xs: (_f_tree(lib, p, xs), {"double": 2 * p["w"], "sum": xs[0].sum()})

    t_g, t_aux = tf.grad(with_aux(torch), has_aux=True)(p, xs)
    g_g, g_aux = gf.grad(with_aux(genesis), has_aux=True)(_g(p), _g(xs))
    _same((g_g, g_aux), (t_g, t_aux))
    assert not g_aux["double"].requires_grad
    t_res = tf.grad_and_value(with_aux(torch), argnums=(0, 1), has_aux=True)(p, xs)
    g_res = gf.grad_and_value(with_aux(genesis), argnums=(0, 1), has_aux=True)(_g(p), _g(xs))
    _same(g_res, t_res)
    assert not g_res[1][0].requires_grad and not g_res[0][0]["w"].requires_grad
    # An input the output does not depend on gets zeros; under no_grad the transform still differentiates.
    with genesis.no_grad():
        g = gf.grad(lambda a, b: (a * a).sum(), argnums=(0, 1))(genesis.ones(2), genesis.ones(3))
    _same(g, (torch.full((2,), 2.0, dtype=torch.float32), torch.zeros(3)))


def test_grad_errors_like_torch() -> None:
    x = genesis.ones(3)
    with pytest.raises(RuntimeError, match="scalar Tensor, got tensor with 1 dims"):
        gf.grad(lambda a: a * 2)(x)
    with pytest.raises(RuntimeError, match="to return a Tensor"):
        gf.grad(lambda a: 1.0)(x)
    with pytest.raises(RuntimeError, match=r"should be a tuple: \(output, aux\)"):
        gf.grad(lambda a: a.sum(), has_aux=True)(x)
    with pytest.raises(RuntimeError, match="Got argnum=2, but only 1 positional inputs"):
        gf.grad(lambda a: a.sum(), argnums=2)(x)
    with pytest.raises(RuntimeError, match="argnums elements must be unique"):
        gf.grad(lambda a, b: a.sum(), argnums=(0, 0))(x, x)
    with pytest.raises(ValueError, match="must be Tensor"):
        gf.grad(lambda a: a[0].sum())([x, 2])


def _cube(lib: Any) -> Any:
    return lambda x: (x ** 3).sum() + x.prod()


def test_nested_grad_and_outer_graph() -> None:
    t_x = rand(4, seed=5, requires_grad=False)
    g_x = to_genesis(t_x)
    for depth in (1, 2, 3):
        t_fn, g_fn = _cube(torch), _cube(genesis)
        for _ in range(depth):
            t_fn, g_fn = tf.grad(t_fn), gf.grad(g_fn)
            t_fn, g_fn = (lambda f: lambda x: f(x).sum())(t_fn), (lambda f: lambda x: f(x).sum())(g_fn)
        _same(g_fn(g_x), t_fn(t_x), f"depth {depth}")
    # A result of grad whose inputs require grad stays differentiable (torch.func composes with autograd).
    t_leaf, g_leaf = t_x.clone().requires_grad_(), to_genesis(t_x, requires_grad=True)
    tf.grad(_cube(torch))(t_leaf).pow(2).sum().backward()
    gf.grad(_cube(genesis))(g_leaf).pow(2).sum().backward()
    assert_same(g_leaf.grad, t_leaf.grad)


def test_gradient_penalty_reaches_captured_parameters() -> None:
    g_model, t_model = _pair()
    x = rand(3, 4, requires_grad=False, seed=6)

    def penalty(lib: Any, func: Any, model: Any, x: Any) -> Any:
        grad_x = func.grad(lambda inp: model(inp).tanh().sum())(x)
        return ((grad_x.norm() - 1) ** 2)

    t_pen, g_pen = penalty(torch, tf, t_model, x), penalty(genesis, gf, g_model, to_genesis(x))
    _same(g_pen, t_pen)
    assert g_pen.requires_grad
    t_pen.backward()
    g_pen.backward()
    _same({k: p.grad for k, p in g_model.named_parameters()}, {k: p.grad for k, p in t_model.named_parameters()})


def test_vjp_structures_and_repeated_calls() -> None:
    def f(lib: Any) -> Any:
        return lambda a, bc: {"s": (a * bc[0]).sin(), "t": (a.sum() * bc[1], bc[0] ** 2)}

    a, bc = rand(3, seed=1, requires_grad=False), [rand(3, seed=2, requires_grad=False), rand(2, seed=3,
                                                                                            requires_grad=False)]
    t_out, t_fn = tf.vjp(f(torch), a, bc)
    g_out, g_fn = gf.vjp(f(genesis), _g(a), _g(bc))
    _same(g_out, t_out)
    for seed in (4, 5):
        ct = {"s": rand(3, seed=seed, requires_grad=False), "t": (rand(2, seed=seed + 9, requires_grad=False),
                                                                  rand(3, seed=seed + 7, requires_grad=False))}
        _same(g_fn(_g(ct)), t_fn(ct))
    with pytest.raises(RuntimeError, match="pytree structure of cotangents"):
        g_fn(genesis.ones(3))
    t_out, t_fn, t_aux = tf.vjp(lambda x: (x.exp(), x.sum()), a, has_aux=True)
    g_out, g_fn, g_aux = gf.vjp(lambda x: (x.exp(), x.sum()), _g(a), has_aux=True)
    _same((g_out, g_aux, g_fn(_g(a))), (t_out, t_aux, t_fn(a)))


def test_jvp_matches_torch() -> None:
    def f(lib: Any) -> Any:
        return lambda x, pair: ((x * pair[0]).tanh(), {"y": x.sum() * pair[1]})

    primals = (rand(3, seed=1, requires_grad=False), (rand(3, seed=2, requires_grad=False),
                                                      rand(2, seed=3, requires_grad=False)))
    tangents = (rand(3, seed=4, requires_grad=False), (rand(3, seed=5, requires_grad=False),
                                                       rand(2, seed=6, requires_grad=False)))
    _same(gf.jvp(f(genesis), _g(primals), _g(tangents)), tf.jvp(f(torch), primals, tangents))
    t_res = tf.jvp(lambda x: (x.sin(), x.cos()), (primals[0],), (tangents[0],), has_aux=True)
    g_res = gf.jvp(lambda x: (x.sin(), x.cos()), (_g(primals[0]),), (_g(tangents[0]),), has_aux=True)
    _same(g_res, t_res)
    assert not any(t.requires_grad for t in g_res)
    with pytest.raises(RuntimeError, match="Expected primals to be a tuple"):
        gf.jvp(lambda x: x, genesis.ones(2), genesis.ones(2))
    with pytest.raises(RuntimeError, match="same python structure"):
        gf.jvp(lambda x: x, (genesis.ones(2),), [genesis.ones(2)])


# ------------------------------------------------------------------------ Jacobians and Hessians


def _jac_cases() -> list:
    return [
        (lambda lib: lambda x: x.sin() * x.sum(), ((3,),), 0),
        (lambda lib: lambda x, y: (x @ y, (x ** 2).sum()), ((2, 3), (3,)), (0, 1)),
        (lambda lib: lambda x, y: {"a": x * y[0], "b": y[1].exp()}, ((2,), [(2,), (3,)]), 1),
        (lambda lib: lambda p, x: lib.tanh(p["w"] @ x + p["b"]), ({"w": (2, 3), "b": (2,)}, (3,)), 0),
    ]


def _make_args(shapes: Any, seed: int = 0) -> Any:
    if isinstance(shapes, dict):
        return {k: _make_args(v, seed + i) for i, (k, v) in enumerate(shapes.items())}
    if isinstance(shapes, list):
        return [_make_args(v, seed + i) for i, v in enumerate(shapes)]
    if shapes and isinstance(shapes[0], (tuple, list, dict)):
        return tuple(_make_args(v, seed + 10 * i) for i, v in enumerate(shapes))
    return rand(*shapes, seed=seed, requires_grad=False)


@pytest.mark.parametrize("case", range(4))
@pytest.mark.parametrize("transform", ["jacrev", "jacfwd"])
def test_jacobians_match_torch(case: int, transform: str) -> None:
    make, shapes, argnums = _jac_cases()[case]
    args = _make_args(shapes)
    t_jac = getattr(tf, transform)(make(torch), argnums)(*args)
    g_jac = getattr(gf, transform)(make(genesis), argnums)(*_g(args))
    _same(g_jac, t_jac)
    assert all(not t.requires_grad for t in genesis.func.pytree.tree_flatten(g_jac)[0])


def test_jacobian_aux_hessian_and_per_sample_jacobians() -> None:
    x = rand(4, seed=2, requires_grad=False)
    for transform in ("jacrev", "jacfwd"):
        t_res = getattr(tf, transform)(lambda v: (v.exp(), v.sum()), has_aux=True)(x)
        g_res = getattr(gf, transform)(lambda v: (v.exp(), v.sum()), has_aux=True)(to_genesis(x))
        _same(g_res, t_res)

    def f(lib: Any) -> Any:
        return lambda a, b: (a.sin() * b).sum() + (a ** 2).sum() * b.prod()

    a, b = rand(3, seed=3, requires_grad=False), rand(3, seed=4, requires_grad=False)
    for argnums in (0, 1, (0, 1)):
        _same(gf.hessian(f(genesis), argnums)(to_genesis(a), to_genesis(b)), tf.hessian(f(torch), argnums)(a, b),
              f"hessian argnums={argnums}")
    _same(gf.jacrev(gf.jacrev(f(genesis)))(to_genesis(a), to_genesis(b)),
          tf.jacrev(tf.jacrev(f(torch)))(a, b))
    xs = rand(5, 3, seed=6, requires_grad=False)
    _same(gf.vmap(gf.jacrev(lambda v: v.sin() * v.sum()))(to_genesis(xs)),
          tf.vmap(tf.jacrev(lambda v: v.sin() * v.sum()))(xs))
    with pytest.raises(RuntimeError, match="Expected all inputs to be real"):
        gf.jacrev(lambda v: v)(genesis.ones(2, dtype=genesis.complex64))
    with pytest.raises(ValueError, match="greater than 0"):
        gf.jacrev(lambda v: v, chunk_size=0)


# ------------------------------------------------------------------------ vmap


def _vmap_cases() -> list:
    return [
        (lambda lib: lambda a, b: a @ b, ((4, 2, 3), (3,)), (0, None), 0),
        (lambda lib: lambda a, b: a @ b, ((2, 4, 3), (3, 5)), (1, None), -1),
        (lambda lib: lambda x, y: (x * y, x.sum()), ((3, 4), (4, 3)), (1, 0), (1, 0)),
        (lambda lib: lambda d, s: {"y": d["w"] * s + d["b"]}, ({"w": (3, 2), "b": (2,)}, (3, 2)),
         ({"w": 0, "b": None}, 0), 0),
        (lambda lib: lambda x: x.sum(-1), ((2, 3, 4),), -1, 0),
        (lambda lib: lambda x, c: (x * 2, c), ((3, 2), (2,)), (0, None), (0, None)),
    ]


@pytest.mark.parametrize("case", range(6))
def test_vmap_matches_torch(case: int) -> None:
    make, shapes, in_dims, out_dims = _vmap_cases()[case]
    args = _make_args(shapes)
    _same(gf.vmap(make(genesis), in_dims, out_dims)(*_g(args)), tf.vmap(make(torch), in_dims, out_dims)(*args))


def test_vmap_nesting_kwargs_chunks_and_gradients() -> None:
    x, y = rand(3, 4, seed=1), rand(5, 4, seed=2)
    t_out = tf.vmap(tf.vmap(lambda a, b, scale: a * b * scale, (None, 0)), (0, None), chunk_size=2)(x, y, scale=3.0)
    g_x, g_y = to_genesis(x), to_genesis(y)
    g_out = gf.vmap(gf.vmap(lambda a, b, scale: a * b * scale, (None, 0)), (0, None), chunk_size=2)(g_x, g_y,
                                                                                                   scale=3.0)
    _same(g_out, t_out)
    t_out.sin().sum().backward()
    g_out.sin().sum().backward()
    assert_same(g_x.grad, x.grad)
    assert_same(g_y.grad, y.grad)


def test_vmap_errors_and_randomness() -> None:
    x = genesis.ones(3, 2)
    with pytest.raises(ValueError, match="same size in the mapped dimension"):
        gf.vmap(lambda a, b: a + b)(x, genesis.ones(2, 2))
    with pytest.raises(ValueError, match="cannot vmap over non-Tensor"):
        gf.vmap(lambda a, b: a)(x, 2)
    with pytest.raises(ValueError, match="at least one Tensor to vmap over"):
        gf.vmap(lambda a: a, in_dims=(None,))(x)
    with pytest.raises(ValueError, match="expected `in_dims` to be int or a"):
        gf.vmap(lambda a: a, in_dims=[0])(x)
    with pytest.raises(ValueError, match="in_dims is not compatible"):
        gf.vmap(lambda a, b: a, in_dims=(0,))(x, x)
    with pytest.raises(ValueError, match="expected in_dim to satisfy"):
        gf.vmap(lambda a: a, in_dims=2)(x)
    with pytest.raises(ValueError, match="must only return Tensors"):
        gf.vmap(lambda a: 1.0)(x)
    with pytest.raises(RuntimeError, match="Only allowed values for randomness"):
        gf.vmap(lambda a: a, randomness="sometimes")
    with pytest.raises(ValueError, match="chunk_size should be None or greater than 0"):
        gf.vmap(lambda a: a, chunk_size=0)
    noise = lambda a: a + genesis.rand(2, device=a.device)  # noqa: E731
    same = gf.vmap(noise, randomness="same")(genesis.zeros(4, 2, device=DEVICE))
    assert all(genesis.equal(same[i], same[0]) for i in range(4))
    different = gf.vmap(noise, randomness="different")(genesis.zeros(4, 2, device=DEVICE))
    assert not genesis.equal(different[1], different[0])


@pytest.mark.parametrize("draw", [
    lambda a: a + genesis.rand(2, device=a.device), lambda a: genesis.randn_like(a),
    lambda a: a.clone().uniform_(), lambda a: genesis.nn.functional.dropout(a, 0.5, training=True)])
def test_vmap_randomness_error_mode_refuses_random_draws(draw) -> None:
    state = genesis.get_rng_state()
    message = "vmap: called random operation while in randomness error mode. Please either use the 'same' or"
    with pytest.raises(RuntimeError, match=message):
        gf.vmap(draw)(genesis.zeros(3, 2, device=DEVICE))
    with pytest.raises(RuntimeError, match=message):
        torch.func.vmap(lambda a: a + torch.rand(2))(torch.zeros(3, 2))
    assert genesis.equal(genesis.get_rng_state(), state)  # nothing drawn
    # No draw, no error: dropout with p=0 or outside training, as torch.
    quiet = gf.vmap(lambda a: genesis.nn.functional.dropout(a, 0.0, training=True) + genesis.nn.functional.dropout(
        a, 0.5, training=False))(genesis.ones(3, 2, device=DEVICE))
    assert quiet.tolist() == [[2.0, 2.0]] * 3


def test_replace_all_batch_norm_modules() -> None:
    t_model = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.BatchNorm1d(3))
    g_model = genesis.nn.Sequential(genesis.nn.Linear(3, 3), genesis.nn.BatchNorm1d(3))
    assert gf.replace_all_batch_norm_modules_(g_model) is g_model
    tf.replace_all_batch_norm_modules_(t_model)
    for g_bn, t_bn in ((g_model[1], t_model[1]),):
        assert (g_bn.running_mean, g_bn.running_var, g_bn.num_batches_tracked) == (None, None, None)
        assert g_bn.track_running_stats == t_bn.track_running_stats is False
    assert [k for k, _ in g_model.named_buffers()] == [k for k, _ in t_model.named_buffers()] == []


# ------------------------------------------------------------------------ torch_compat


_SCRIPT = """
import torch
import torch.func
from torch.func import functional_call, vmap, grad
from torch.nn.utils import stateless

model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2)).double()
with torch.no_grad():
    for i, p in enumerate(model.parameters()):
        p.copy_(torch.linspace(-1.0, 1.0, p.numel(), dtype=torch.float64).reshape(p.shape) * (i + 1) / 3)
x = torch.linspace(-2.0, 2.0, 15, dtype=torch.float64).reshape(5, 3)
y = torch.tensor([0, 1, 1, 0, 1])
params = {k: v.detach() for k, v in model.named_parameters()}

def loss_fn(params, sample, target):
    out = functional_call(model, params, (sample.unsqueeze(0),))
    return torch.nn.functional.cross_entropy(out, target.unsqueeze(0))

per_sample = vmap(grad(loss_fn), in_dims=(None, 0, 0))(params, x, y)
jac = torch.func.jacrev(lambda inp: model(inp).sum(0))(x)
old = stateless.functional_call(model, params, (x,))
losses = [g.abs().sum().item() for g in per_sample.values()] + [jac.sum().item(), old.sum().item()]
"""


def test_torch_func_script_through_torch_compat(tmp_path) -> None:
    script = tmp_path / "per_sample.py"
    script.write_text(textwrap.dedent(_SCRIPT))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        expected = runpy.run_path(str(script))["losses"]
        got = torch_compat.run(str(script))
    assert got["per_sample"].keys() == {"0.weight", "0.bias", "2.weight", "2.bias"}
    assert got["per_sample"]["0.weight"].shape == (5, 4, 3) and isinstance(got["jac"], genesis.Tensor)
    assert got["losses"] == pytest.approx(expected, rel=1e-10)


def test_utils_pytree_matches_torch() -> None:
    """``torch.utils._pytree``'s functions, registered container types included, as torch's."""
    pair = namedtuple("pair", "a b")
    tree = {"x": [1, (2, 3)], "y": pair(4, {"z": 5}), "w": None}

    class Box:
        def __init__(self, a: object, b: object) -> None:
            self.a, self.b = a, b

    results = []
    for lib in (tp, gp):
        leaves, spec = lib.tree_flatten(tree)
        rebuilt = lib.tree_unflatten([v * 10 if v else v for v in leaves], spec)
        lib.register_pytree_node(Box, lambda b: ([b.a, b.b], None), lambda children, context: Box(*children))
        boxed = lib.tree_map(lambda v: v + 1, [Box(1, [2])])[0]
        results.append((leaves, rebuilt, lib.tree_leaves(lib.tree_map_only(int, lambda v: -v, tree)),
                        lib.tree_any(lambda v: v == 5, tree), lib.tree_all(lambda v: v is not None, tree),
                        boxed.a, boxed.b, lib.tree_leaves(Box(3, (4, 5))), list(lib.tree_iter([6, {"k": 7}]))))
    assert results[0] == results[1]
