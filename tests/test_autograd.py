"""Autograd semantics, case by case against torch: every scenario runs in Genesis and in torch and must agree."""

from __future__ import annotations

import gc
import itertools
import threading
import weakref
from typing import Any, Callable

import pytest
import torch

import genesis
from tests.helpers import DEVICE, assert_same, to_genesis, to_torch

LIBS = (genesis, torch)


def version(x: Any) -> int:
    """The in-place version counter of a tensor, as torch reports it."""
    return x._version


def t(lib: Any, data: Any, requires_grad: bool = False, dtype: Any = None) -> Any:
    """A float64 tensor of ``data`` in ``lib`` (on ``DEVICE`` for Genesis)."""
    dtype = dtype or lib.float64
    if lib is genesis:
        return genesis.tensor(data, dtype=dtype, device=DEVICE, requires_grad=requires_grad)
    return torch.tensor(data, dtype=dtype, requires_grad=requires_grad)


def both(scenario: Callable[[Any], Any], what: str = "result") -> None:
    """Run ``scenario(lib)`` in Genesis and torch and compare what it returns (tensors, numbers, bools, None)."""
    g, r = scenario(genesis), scenario(torch)
    _compare(g, r, what)


def _compare(g: Any, r: Any, what: str) -> None:
    if isinstance(r, (tuple, list)):
        assert isinstance(g, (tuple, list)) and len(g) == len(r), f"{what}: {g!r} vs {r!r}"
        for i, (gi, ri) in enumerate(zip(g, r)):
            _compare(gi, ri, f"{what}[{i}]")
    elif r is None:
        assert g is None, f"{what}: expected None, got {g!r}"
    elif isinstance(r, torch.Tensor):
        assert_same(g, r, what=what)
    else:
        assert g == r, f"{what}: {g!r} != {r!r}"


def raises_both(exc: type[BaseException], scenario: Callable[[Any], Any], match: str | None = None) -> None:
    """``scenario`` raises ``exc`` in torch and in Genesis."""
    with pytest.raises(exc):
        scenario(torch)
    with pytest.raises(exc, match=match):
        scenario(genesis)


X = [[0.5, -1.5, 2.0], [1.0, 0.25, -0.75]]
Y = [[1.5, 2.0, -0.5], [0.3, -1.2, 0.8]]
Z = [[-0.4, 0.9, 1.1], [2.2, -0.6, 0.35]]


# ------------------------------------------------------------------ requires_grad and leaves

def test_requires_grad_flags_and_leaves() -> None:
    def scenario(lib: Any) -> list:
        a = t(lib, X)
        b = t(lib, Y, requires_grad=True)
        c = a * 2
        d = a * b
        e = a.requires_grad_()
        return [a.requires_grad, a.is_leaf, b.is_leaf, c.requires_grad, c.is_leaf, d.requires_grad, d.is_leaf,
                e is a, (a * 3).requires_grad, d.grad_fn is None, c.grad_fn is None]

    both(scenario)


def test_requires_grad_on_integer_tensor_raises() -> None:
    raises_both(RuntimeError, lambda lib: lib.tensor([1, 2]).requires_grad_(), match="floating point")
    raises_both(RuntimeError, lambda lib: lib.tensor([1, 2], requires_grad=True), match="floating point")
    raises_both(RuntimeError, lambda lib: lib.zeros(3, dtype=lib.int64, requires_grad=True))

    def set_attr(lib: Any) -> None:
        x = lib.tensor([True, False])
        x.requires_grad = True

    raises_both(RuntimeError, set_attr)


def test_requires_grad_false_on_non_leaf_raises() -> None:
    raises_both(RuntimeError, lambda lib: (t(lib, X, True) * 2).requires_grad_(False), match="leaf")


def test_integer_outputs_do_not_require_grad() -> None:
    def scenario(lib: Any) -> list:
        x = t(lib, X, True)
        return [x.argmax().requires_grad, (x > 0).requires_grad, x.max(dim=1)[1].requires_grad,
                x.max(dim=1)[0].requires_grad, x.sort(dim=1)[1].requires_grad, x.long().requires_grad]

    both(scenario)


# ------------------------------------------------------------------ backward and .grad

def test_grad_accumulates_over_backward_calls() -> None:
    def scenario(lib: Any) -> list:
        x = t(lib, X, True)
        (x * x).sum().backward()
        first = x.grad.clone()
        (x.sin()).sum().backward()
        (3 * x).sum().backward()
        return [first, x.grad]

    both(scenario)


def test_grad_is_none_before_backward_and_for_unreached_leaves() -> None:
    def scenario(lib: Any) -> list:
        x = t(lib, X, True)
        y = t(lib, Y, True)
        before = x.grad
        (x * 2).sum().backward()
        return [before, x.grad, y.grad]

    both(scenario)


def test_backward_with_gradient_argument() -> None:
    def scenario(lib: Any) -> Any:
        x = t(lib, X, True)
        (x.exp() * 2).backward(t(lib, Z))
        return x.grad

    both(scenario)


def test_backward_on_non_scalar_without_gradient_raises() -> None:
    raises_both(RuntimeError, lambda lib: (t(lib, X, True) * 2).backward(), match="scalar")


def test_backward_gradient_shape_mismatch_raises() -> None:
    raises_both(RuntimeError, lambda lib: (t(lib, X, True) * 2).backward(t(lib, [1.0, 2.0])), match="shape")


def test_backward_on_tensor_without_grad_raises() -> None:
    raises_both(RuntimeError, lambda lib: t(lib, X).sum().backward(), match="does not require grad")


def test_backward_on_leaf_itself() -> None:
    def scenario(lib: Any) -> Any:
        x = t(lib, 2.0, True)
        x.backward()
        x.backward()
        return x.grad

    both(scenario)


def test_backward_twice_through_freed_graph_raises() -> None:
    def scenario(lib: Any) -> None:
        x = t(lib, X, True)
        y = (x * x).sum()
        y.backward()
        y.backward()

    raises_both(RuntimeError, scenario, match="second time")


def test_backward_twice_with_retain_graph() -> None:
    def scenario(lib: Any) -> Any:
        x = t(lib, X, True)
        y = (x * x.exp()).sum()
        y.backward(retain_graph=True)
        y.backward()
        return x.grad

    both(scenario)


def test_backward_twice_through_graph_without_saved_tensors() -> None:
    # Nodes that save nothing (add, sum) can be traversed again; torch allows it too.
    def scenario(lib: Any) -> Any:
        x = t(lib, X, True)
        y = (x + 1).sum()
        y.backward()
        y.backward()
        return x.grad

    both(scenario)


def test_backward_of_several_tensors_at_once() -> None:
    def scenario(lib: Any) -> list:
        x = t(lib, X, True)
        a = (x * x).sum()
        b = x.exp()
        lib.autograd.backward([a, b], [None, t(lib, Z)])
        return [x.grad]

    both(scenario)


def test_backward_inputs_argument_limits_accumulation() -> None:
    def scenario(lib: Any) -> list:
        x = t(lib, X, True)
        y = t(lib, Y, True)
        (x * y).sum().backward(inputs=[y])
        return [x.grad, y.grad]

    both(scenario)


@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph=True")
def test_create_graph_grad_has_history() -> None:
    def scenario(lib: Any) -> list:
        x = t(lib, X, True)
        (x ** 3).sum().backward(create_graph=True)
        g = x.grad
        flags = [g.requires_grad, g.grad_fn is not None]
        x.grad = None
        g.sum().backward()
        return flags + [x.grad]

    both(scenario)


def test_grad_is_not_aliased_to_the_incoming_gradient() -> None:
    def scenario(lib: Any) -> list:
        x = t(lib, X, True)
        gout = t(lib, Z)
        (x + 0).backward(gout)
        gout.mul_(100)
        x.grad.add_(1)
        return [x.grad, gout]

    both(scenario)


# ------------------------------------------------------------------ autograd.grad

def test_autograd_grad_returns_gradients_and_leaves_grad_untouched() -> None:
    def scenario(lib: Any) -> list:
        x = t(lib, X, True)
        y = t(lib, Y, True)
        out = (x * y.sin()).sum()
        gx, gy = lib.autograd.grad(out, [x, y])
        return [gx, gy, x.grad, y.grad, gx.requires_grad]

    both(scenario)


def test_autograd_grad_with_grad_outputs_and_single_input() -> None:
    def scenario(lib: Any) -> Any:
        x = t(lib, X, True)
        (gx,) = lib.autograd.grad(x.tanh(), x, grad_outputs=t(lib, Z))
        return gx

    both(scenario)


def test_autograd_grad_of_intermediate() -> None:
    def scenario(lib: Any) -> list:
        x = t(lib, X, True)
        h = x.exp()
        out = (h * h).sum()
        return list(lib.autograd.grad(out, [h, x]))

    both(scenario)


def test_autograd_grad_allow_unused() -> None:
    def scenario(lib: Any) -> list:
        x = t(lib, X, True)
        y = t(lib, Y, True)
        return list(lib.autograd.grad((x * 2).sum(), [x, y], allow_unused=True))

    both(scenario)
    raises_both(RuntimeError, lambda lib: lib.autograd.grad((t(lib, X, True) * 2).sum(), [t(lib, Y, True)]),
                match="not have been used")


def test_autograd_grad_materialize_grads() -> None:
    def scenario(lib: Any) -> list:
        x = t(lib, X, True)
        y = t(lib, Y, True)
        return list(lib.autograd.grad((x * 2).sum(), [x, y], materialize_grads=True))

    both(scenario)


def test_autograd_grad_input_not_requiring_grad_raises() -> None:
    raises_both(RuntimeError, lambda lib: lib.autograd.grad((t(lib, X, True) * 2).sum(), [t(lib, Y)]))


def test_autograd_grad_frees_graph_unless_retained() -> None:
    def scenario(lib: Any) -> None:
        x = t(lib, X, True)
        out = (x * x).sum()
        lib.autograd.grad(out, x)
        lib.autograd.grad(out, x)

    raises_both(RuntimeError, scenario, match="second time")

    def retained(lib: Any) -> list:
        x = t(lib, X, True)
        out = (x * x).sum()
        a = lib.autograd.grad(out, x, retain_graph=True)[0]
        b = lib.autograd.grad(out, x)[0]
        return [a, b]

    both(retained)


def test_autograd_grad_runs_hooks_on_the_way() -> None:
    def scenario(lib: Any) -> list:
        x = t(lib, X, True)
        h = x * 2
        h.register_hook(lambda g: g * 10)
        (gh,) = lib.autograd.grad((h * h).sum(), h, retain_graph=True)
        (gx,) = lib.autograd.grad((h * h).sum(), x)
        return [gh, gx, x.grad]

    both(scenario)


# ------------------------------------------------------------------ higher order

@pytest.mark.parametrize("name", ["cube", "tanh", "sigmoid", "exp_sin", "div", "softmax"])
def test_second_and_third_derivatives(name: str) -> None:
    fns = {
        "cube": lambda lib, x: x ** 3,
        "tanh": lambda lib, x: x.tanh(),
        "sigmoid": lambda lib, x: x.sigmoid(),
        "exp_sin": lambda lib, x: x.sin().exp(),
        "div": lambda lib, x: 1 / (x * x + 1),
        "softmax": lambda lib, x: x.softmax(dim=1) * t(lib, Z),
    }

    def scenario(lib: Any) -> list:
        x = t(lib, X, True)
        y = fns[name](lib, x).sum()
        (g1,) = lib.autograd.grad(y, x, create_graph=True)
        (g2,) = lib.autograd.grad(g1.sum(), x, create_graph=True)
        (g3,) = lib.autograd.grad(g2.sum(), x)
        return [g1, g2, g3]

    both(scenario)


def test_hessian_vector_product_of_small_mlp() -> None:
    w1_data = [[0.3, -0.2, 0.5, 0.1], [-0.4, 0.6, 0.2, -0.3], [0.25, 0.15, -0.35, 0.45]]
    w2_data = [[0.7], [-0.5], [0.2], [0.9]]
    x_data = [[1.0, -2.0, 0.5], [0.3, 0.8, -1.2]]

    def scenario(lib: Any) -> list:
        w1 = t(lib, w1_data, True)
        w2 = t(lib, w2_data, True)
        x = t(lib, x_data)
        loss = ((x @ w1).tanh() @ w2).sigmoid().pow(2).mean()
        g1, g2 = lib.autograd.grad(loss, [w1, w2], create_graph=True)
        v1, v2 = lib.ones_like(w1) * 0.5, lib.ones_like(w2) * -0.25
        dot = (g1 * v1).sum() + (g2 * v2).sum()
        dot.backward()
        return [g1, g2, w1.grad, w2.grad]

    both(scenario)


@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph=True")
def test_double_backward_through_backward_create_graph() -> None:
    def scenario(lib: Any) -> Any:
        x = t(lib, X, True)
        y = t(lib, Y, True)
        (x * x * y).sum().backward(create_graph=True)
        gx = x.grad
        x.grad = None
        y.grad = None
        (gx * gx).sum().backward()
        return [x.grad, y.grad]

    both(scenario)


# ------------------------------------------------------------------ grad modes

def test_no_grad_outputs_never_require_grad() -> None:
    def scenario(lib: Any) -> list:
        x = t(lib, X, True)
        with lib.no_grad():
            outs = [x * 2, x + x, x.exp(), x.sum(), x @ x.T, x.clone(), x.detach(), lib.where(x > 0, x, x * 0),
                    x.max(dim=1)[0], x.reshape(3, 2) * 1]
            flags = [o.requires_grad for o in outs] + [o.grad_fn is None for o in outs]
            flags.append(lib.is_grad_enabled())
        flags.append(lib.is_grad_enabled())
        return flags

    both(scenario)


def test_no_grad_views_do_not_require_grad() -> None:
    # Genesis departs from torch on purpose: torch marks views made under no_grad as requiring grad (yet no
    # gradient reaches the base through them); in Genesis nothing made under no_grad requires grad.
    x = genesis.tensor(X, requires_grad=True, device=DEVICE)
    with genesis.no_grad():
        views = [x[0], x.view(3, 2), x.T, x.reshape(6), x.unsqueeze(0), x.expand(2, 2, 3), x.narrow(1, 0, 2)]
    assert [v.requires_grad for v in views] == [False] * len(views)
    assert all(v.grad_fn is None for v in views)


def test_grad_mode_nesting() -> None:
    def scenario(lib: Any) -> list:
        x = t(lib, X, True)
        flags = []
        with lib.no_grad():
            flags.append((x * 2).requires_grad)
            with lib.enable_grad():
                flags.append((x * 2).requires_grad)
                with lib.set_grad_enabled(False):
                    flags.append((x * 2).requires_grad)
                flags.append(lib.is_grad_enabled())
            flags.append(lib.is_grad_enabled())
        flags.append(lib.is_grad_enabled())
        return flags

    both(scenario)


def test_set_grad_enabled_as_function_and_context() -> None:
    def scenario(lib: Any) -> list:
        x = t(lib, X, True)
        flags = []
        lib.set_grad_enabled(False)
        flags.append((x * 2).requires_grad)
        lib.set_grad_enabled(True)
        flags.append((x * 2).requires_grad)
        with lib.set_grad_enabled(False):
            flags.append((x * 2).requires_grad)
        flags.append(lib.is_grad_enabled())
        return flags

    both(scenario)


def test_grad_modes_as_decorators() -> None:
    def scenario(lib: Any) -> list:
        x = t(lib, X, True)

        @lib.no_grad()
        def f1(v: Any) -> Any:
            return v * 2

        @lib.enable_grad()
        def f2(v: Any) -> Any:
            return v * 2

        @lib.set_grad_enabled(False)
        def f3(v: Any) -> Any:
            return v * 2

        @lib.inference_mode()
        def f4(v: Any) -> Any:
            return v * 2

        flags = [f1(x).requires_grad, lib.is_grad_enabled(), f3(x).requires_grad, lib.is_grad_enabled(),
                 f4(x).requires_grad, lib.is_grad_enabled()]
        with lib.no_grad():
            flags.append(f2(x).requires_grad)
        return flags

    both(scenario)


def test_no_grad_decorator_without_parentheses() -> None:
    def scenario(lib: Any) -> list:
        x = t(lib, X, True)

        @lib.no_grad
        def f(v: Any) -> Any:
            return v * 2

        return [f(x).requires_grad, lib.is_grad_enabled()]

    both(scenario)


def test_grad_mode_decorators_on_generator_functions() -> None:
    # As torch's: the mode holds while the generator's body runs (each resumption), not while its caller's does.
    def scenario(lib: Any) -> list:
        x = t(lib, X, True)

        @lib.no_grad()
        def no_grad_gen(n: int) -> Any:
            for _ in range(n):
                received = yield lib.is_grad_enabled(), (x * 2).requires_grad
                if received is not None:
                    yield received
            return "done"

        @lib.inference_mode()
        def inference_gen() -> Any:
            yield lib.is_inference_mode_enabled()

        @lib.set_grad_enabled(False)
        def set_gen() -> Any:
            yield lib.is_grad_enabled()

        gen = no_grad_gen(2)
        flags = [next(gen), lib.is_grad_enabled(), (x * 2).requires_grad, gen.send("sent"), next(gen)]
        with pytest.raises(StopIteration) as stop:
            next(gen)
        flags.append(stop.value.value)
        with lib.no_grad():
            flags += [list(inference_gen()), list(set_gen()), lib.is_grad_enabled()]
        closing = no_grad_gen(3)
        next(closing)
        closing.close()
        flags += [lib.is_grad_enabled(), lib.is_inference_mode_enabled()]
        return flags

    both(scenario)


def test_set_multithreading_enabled() -> None:
    def scenario(lib: Any) -> list:
        flags = [lib.autograd.is_multithreading_enabled()]
        with lib.autograd.set_multithreading_enabled(False):
            flags.append(lib.autograd.is_multithreading_enabled())
            x = t(lib, X, True)
            (x * 3).sum().backward()
            flags.append(x.grad)
        flags.append(lib.autograd.is_multithreading_enabled())
        switch = lib.autograd.set_multithreading_enabled(False)  # takes effect at once, as a function call
        flags.append(lib.autograd.is_multithreading_enabled())
        lib.autograd.set_multithreading_enabled(True)
        del switch
        flags.append(lib.autograd.is_multithreading_enabled())
        return flags

    both(scenario)


def test_grad_mode_restored_after_exception() -> None:
    def scenario(lib: Any) -> list:
        try:
            with lib.no_grad():
                raise ValueError("boom")
        except ValueError:
            pass
        return [lib.is_grad_enabled()]

    both(scenario)


def test_inference_mode() -> None:
    def scenario(lib: Any) -> list:
        x = t(lib, X, True)
        with lib.inference_mode():
            y = x * 2
            flags = [y.requires_grad, lib.is_grad_enabled(), lib.is_inference_mode_enabled()]
            with lib.inference_mode(False):
                flags.append(lib.is_grad_enabled())
            with lib.enable_grad():  # grad mode on, but inference mode still records nothing
                z = (x * 2).exp()
                flags += [lib.is_grad_enabled(), z.requires_grad, z.grad_fn is None, z.is_inference()]
        flags += [lib.is_grad_enabled(), lib.is_inference_mode_enabled()]
        return flags

    both(scenario)


def test_grad_mode_is_thread_local() -> None:
    seen = {}

    def worker() -> None:
        x = genesis.ones(2, requires_grad=True)
        seen["enabled"] = genesis.is_grad_enabled()
        seen["requires_grad"] = (x * 2).requires_grad

    with genesis.no_grad():
        thread = threading.Thread(target=worker)
        thread.start()
        thread.join()
        assert not genesis.is_grad_enabled()
    assert seen == {"enabled": True, "requires_grad": True}


# ------------------------------------------------------------------ detach, retain_grad, hooks

def test_detach_shares_memory_and_stops_gradients() -> None:
    def scenario(lib: Any) -> list:
        x = t(lib, X, True)
        d = x.detach()
        flags = [d.requires_grad, d.is_leaf, d.grad_fn is None]
        d[0, 0] = 7.0
        y = (x * d).sum()
        y.backward()
        return flags + [x.grad, x]

    both(scenario)


def test_detach_in_place() -> None:
    def scenario(lib: Any) -> list:
        x = t(lib, X, True)
        h = x * 2
        h.detach_()
        flags = [h.requires_grad, h.is_leaf, h.grad_fn is None]
        out = (x * h).sum()
        out.backward()
        return flags + [x.grad]

    both(scenario)


def test_retain_grad() -> None:
    def scenario(lib: Any) -> list:
        x = t(lib, X, True)
        h = x.exp()
        h.retain_grad()
        k = h * 3
        out = (k * h).sum()
        out.backward(retain_graph=True)
        first = h.grad.clone()
        out.backward()
        return [h.retains_grad, k.retains_grad, first, h.grad, k.grad, x.grad]

    with pytest.warns(UserWarning):
        k_grad = (torch.ones(1, requires_grad=True) * 2).grad  # torch warns on .grad of a non-leaf
    assert k_grad is None
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        both(scenario)


def test_retain_grad_on_leaf_is_a_no_op() -> None:
    def scenario(lib: Any) -> list:
        x = t(lib, X, True)
        x.retain_grad()
        (x * 2).sum().backward()
        return [x.grad]

    both(scenario)


def test_hook_on_leaf_replaces_gradient() -> None:
    def scenario(lib: Any) -> list:
        x = t(lib, X, True)
        seen = []
        x.register_hook(lambda g: seen.append(g.clone()))
        x.register_hook(lambda g: g * 2)
        x.register_hook(lambda g: seen.append(g.clone()))
        (x * x).sum().backward()
        return [x.grad] + seen

    both(scenario)


def test_hook_on_non_leaf_replaces_gradient_flowing_on() -> None:
    def scenario(lib: Any) -> list:
        x = t(lib, X, True)
        h = x.sin()
        h.register_hook(lambda g: g * 0 + 1)
        (h * h).sum().backward()
        return [x.grad]

    both(scenario)


def test_hook_handle_remove() -> None:
    def scenario(lib: Any) -> list:
        x = t(lib, X, True)
        h = x * 1
        calls = []
        handle_leaf = x.register_hook(lambda g: calls.append("leaf"))
        handle_mid = h.register_hook(lambda g: calls.append("mid"))
        (h * 2).sum().backward()
        handle_leaf.remove()
        handle_mid.remove()
        (x * 1 * 2).sum().backward()
        return [calls, x.grad]

    both(scenario)


def test_hook_on_tensor_without_grad_raises() -> None:
    raises_both(RuntimeError, lambda lib: t(lib, X).register_hook(lambda g: g))


def test_hook_called_once_with_summed_gradient() -> None:
    def scenario(lib: Any) -> list:
        x = t(lib, X, True)
        h = x * 2
        seen = []
        h.register_hook(lambda g: seen.append(g.clone()))
        (h * 3 + h.exp()).sum().backward()
        return seen + [x.grad]

    both(scenario)


def test_post_accumulate_grad_hook() -> None:
    def scenario(lib: Any) -> list:
        x = t(lib, X, True)
        seen = []
        x.register_post_accumulate_grad_hook(lambda p: seen.append(p.grad.clone()))
        (x * 2).sum().backward()
        (x * 3).sum().backward()
        return seen

    both(scenario)


# ------------------------------------------------------------------ grad_fn graph

def test_grad_fn_next_functions() -> None:
    def names(node: Any) -> list:
        return [type(n).__name__ if n is not None else None for n, _ in node.next_functions]

    for lib in LIBS:
        x = t(lib, X, True)
        c = t(lib, Y)
        y = x * c
        z = y + x
        assert names(y.grad_fn) == ["AccumulateGrad", None]
        assert names(z.grad_fn)[1] == "AccumulateGrad"
        (mul, nr), (acc, _) = z.grad_fn.next_functions
        assert mul is y.grad_fn and nr == 0
        assert acc.variable is x
        assert y.grad_fn.next_functions[0][0] is acc, "a leaf has one AccumulateGrad node"
        assert "Mul" in y.grad_fn.name() and "Add" in z.grad_fn.name()
        assert x.grad_fn is None and c.grad_fn is None


def test_output_nr_of_multi_output_function() -> None:
    for lib in LIBS:
        class Split(lib.autograd.Function):
            @staticmethod
            def forward(ctx: Any, x: Any) -> tuple:
                return x * 1, x * 2

            @staticmethod
            def backward(ctx: Any, g1: Any, g2: Any) -> Any:
                return g1 + 2 * g2

        x = t(lib, X, True)
        a, b = Split.apply(x)
        out = b * 3
        node, nr = out.grad_fn.next_functions[0]
        assert node is a.grad_fn is b.grad_fn and nr == 1
        assert a.grad_fn.next_functions[0][0].variable is x


# ------------------------------------------------------------------ gradient routing for every requires_grad mix

BINARY = {
    "add": lambda lib, a, b: a + b,
    "sub": lambda lib, a, b: a - b,
    "mul": lambda lib, a, b: a * b,
    "div": lambda lib, a, b: a / b,
    "pow": lambda lib, a, b: a.abs() ** b,
    "maximum": lambda lib, a, b: lib.maximum(a, b),
    "minimum": lambda lib, a, b: lib.minimum(a, b),
    "atan2": lambda lib, a, b: lib.atan2(a, b),
    "matmul": lambda lib, a, b: a @ b.T,
    "broadcast_mul": lambda lib, a, b: a * b[:1],
}


@pytest.mark.parametrize("mix", list(itertools.product([False, True], repeat=2)))
@pytest.mark.parametrize("op", list(BINARY))
def test_gradients_reach_exactly_the_inputs_that_require_them_binary(op: str, mix: tuple) -> None:
    def scenario(lib: Any) -> list:
        a = t(lib, X, mix[0])
        b = t(lib, Y, mix[1])
        out = BINARY[op](lib, a, b)
        flags = [out.requires_grad]
        if out.requires_grad:
            (out * t(lib, Z)[: out.shape[0], : out.shape[1]]).sum().backward()
        return flags + [a.grad, b.grad]

    both(scenario)


TERNARY = {
    "where": lambda lib, a, b, c: lib.where(c > 0, a, b) * c,
    "lerp": lambda lib, a, b, c: lib.lerp(a, b, c),
    "addcmul": lambda lib, a, b, c: a.addcmul(b, c, value=0.5),
    "addcdiv": lambda lib, a, b, c: a.addcdiv(b, c + 3, value=2),
    "clamp": lambda lib, a, b, c: lib.clamp(a, b - 1, c + 1),
}


@pytest.mark.parametrize("mix", list(itertools.product([False, True], repeat=3)))
@pytest.mark.parametrize("op", list(TERNARY))
def test_gradients_reach_exactly_the_inputs_that_require_them_ternary(op: str, mix: tuple) -> None:
    def scenario(lib: Any) -> list:
        a = t(lib, X, mix[0])
        b = t(lib, Y, mix[1])
        c = t(lib, Z, mix[2])
        out = TERNARY[op](lib, a, b, c)
        flags = [out.requires_grad]
        if out.requires_grad:
            (out * out).sum().backward()
        return flags + [a.grad, b.grad, c.grad]

    both(scenario)


def test_same_tensor_on_both_sides() -> None:
    def scenario(lib: Any) -> list:
        x = t(lib, X, True)
        (x * x + x / (x + 3) - x).sum().backward()
        return [x.grad]

    both(scenario)


def test_gradient_dtype_follows_input_in_mixed_precision() -> None:
    def scenario(lib: Any) -> list:
        a = t(lib, X, True, dtype=lib.float32)
        b = t(lib, Y, True, dtype=lib.float64)
        (a * b).sum().backward()
        return [a.grad, b.grad]

    both(scenario)


# ------------------------------------------------------------------ custom Functions

def _custom_functions(lib: Any) -> dict:
    class ScaledExp(lib.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any, scale: float, y: Any) -> Any:
            out = (x * scale).exp() + y
            ctx.save_for_backward(out, y)
            ctx.scale = scale
            ctx.flags = tuple(ctx.needs_input_grad)
            return out

        @staticmethod
        def backward(ctx: Any, grad: Any) -> tuple:
            out, y = ctx.saved_tensors
            gx = grad * (out - y) * ctx.scale if ctx.needs_input_grad[0] else None
            gy = grad if ctx.needs_input_grad[2] else None
            return gx, None, gy

    class SortWithIndex(lib.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any) -> tuple:
            values, idx = x.sort(dim=-1)
            ctx.mark_non_differentiable(idx)
            ctx.save_for_backward(idx)
            return values, idx

        @staticmethod
        def backward(ctx: Any, grad: Any, grad_idx: Any) -> Any:
            (idx,) = ctx.saved_tensors
            return lib.zeros_like(grad).scatter(-1, idx, grad)

    return {"ScaledExp": ScaledExp, "SortWithIndex": SortWithIndex}


@pytest.mark.parametrize("mix", list(itertools.product([False, True], repeat=2)))
def test_custom_function_with_non_tensor_arg_and_needs_input_grad(mix: tuple) -> None:
    def scenario(lib: Any) -> list:
        fn = _custom_functions(lib)["ScaledExp"]
        x = t(lib, X, mix[0])
        y = t(lib, Y, mix[1])
        out = fn.apply(x, 0.5, y)
        result = [out, out.requires_grad]
        if out.requires_grad:
            (out * out).sum().backward()
            result.append(list(out.grad_fn.flags))
        return result + [x.grad, y.grad]

    both(scenario)


def test_custom_function_mark_non_differentiable() -> None:
    def scenario(lib: Any) -> list:
        fn = _custom_functions(lib)["SortWithIndex"]
        x = t(lib, X, True)
        values, idx = fn.apply(x)
        (values * t(lib, Z)).sum().backward()
        return [values, idx, values.requires_grad, idx.requires_grad, x.grad]

    both(scenario)


def test_custom_function_double_backward() -> None:
    def scenario(lib: Any) -> list:
        class Cube(lib.autograd.Function):
            @staticmethod
            def forward(ctx: Any, x: Any) -> Any:
                ctx.save_for_backward(x)
                return x ** 3

            @staticmethod
            def backward(ctx: Any, grad: Any) -> Any:
                (x,) = ctx.saved_tensors
                return grad * 3 * x * x

        x = t(lib, X, True)
        (g,) = lib.autograd.grad(Cube.apply(x).sum(), x, create_graph=True)
        (gg,) = lib.autograd.grad(g.sum(), x)
        return [g, gg]

    both(scenario)


def test_custom_function_wrong_number_of_gradients_raises() -> None:
    def scenario(lib: Any) -> None:
        class Bad(lib.autograd.Function):
            @staticmethod
            def forward(ctx: Any, x: Any, y: Any) -> Any:
                return x * y

            @staticmethod
            def backward(ctx: Any, grad: Any) -> Any:
                return grad

        Bad.apply(t(lib, X, True), t(lib, Y, True)).sum().backward()

    raises_both(RuntimeError, scenario, match="incorrect number of gradients")


def test_custom_function_under_no_grad() -> None:
    def scenario(lib: Any) -> list:
        fn = _custom_functions(lib)["ScaledExp"]
        x = t(lib, X, True)
        with lib.no_grad():
            out = fn.apply(x, 2.0, t(lib, Y))
        return [out, out.requires_grad, out.grad_fn is None]

    both(scenario)


def test_custom_function_returning_an_input_view() -> None:
    def scenario(lib: Any) -> list:
        class Double(lib.autograd.Function):
            @staticmethod
            def forward(ctx: Any, x: Any) -> Any:
                return x * 2

            @staticmethod
            def backward(ctx: Any, grad: Any) -> Any:
                return grad * 2

        x = t(lib, X, True)
        y = Double.apply(Double.apply(x)[1:])
        y.sum().backward()
        return [y, x.grad]

    both(scenario)


# ------------------------------------------------------------------ engine order and memory

def _counting_identity(lib: Any, counter: dict) -> Any:
    class Count(lib.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            return x.clone()

        @staticmethod
        def backward(ctx: Any, grad: Any) -> Any:
            counter["calls"] = counter.get("calls", 0) + 1
            counter.setdefault("grads", []).append(grad.clone())
            return grad

    return Count


def test_engine_visits_each_node_once_in_a_diamond() -> None:
    def scenario(lib: Any) -> list:
        counter: dict = {}
        count = _counting_identity(lib, counter)
        x = t(lib, X, True)
        top = count.apply(x * 2)
        left = top.sin()
        right = top * 3
        bottom = count.apply(left + right)
        (bottom * top).sum().backward()
        return [counter["calls"], counter["grads"], x.grad]

    both(scenario)


def test_engine_topological_order_on_deep_chain_with_skip_connections() -> None:
    def scenario(lib: Any) -> list:
        counter: dict = {}
        count = _counting_identity(lib, counter)
        x = t(lib, X, True)
        h = x
        skips = []
        for _ in range(30):
            h = count.apply(h * 0.9 + (skips[-3] if len(skips) >= 3 else 0))
            skips.append(h)
        h.sum().backward()
        return [counter["calls"], x.grad]

    both(scenario)


def test_long_chain_does_not_hit_recursion_limit() -> None:
    x = genesis.tensor([1.0], requires_grad=True)
    h = x
    for _ in range(3000):
        h = h * 1.0001
    h.sum().backward()
    assert abs(x.grad.item() - 1.0001 ** 3000) < 1e-3


def test_saved_tensors_are_freed_after_backward() -> None:
    x = genesis.tensor(X, requires_grad=True, device=DEVICE)
    h = x.exp()
    out = (h * h).sum()
    ref = weakref.ref(h)
    del h
    gc.collect()
    assert ref() is not None, "the graph keeps its saved intermediate alive before backward"
    out.backward()
    gc.collect()
    assert ref() is None, "backward without retain_graph frees saved intermediates"


def test_saved_tensors_survive_with_retain_graph() -> None:
    x = genesis.tensor(X, dtype=genesis.float64, requires_grad=True, device=DEVICE)
    h = x.exp()
    out = (h * h).sum()
    ref = weakref.ref(h)
    del h
    out.backward(retain_graph=True)
    gc.collect()
    assert ref() is not None
    out.backward()
    assert_same(x.grad, 4 * torch.tensor(X, dtype=torch.float64).mul(2).exp())


def test_custom_function_saved_tensors_freed_and_access_after_free_raises() -> None:
    def scenario(lib: Any) -> None:
        class Keep(lib.autograd.Function):
            @staticmethod
            def forward(ctx: Any, x: Any) -> Any:
                ctx.save_for_backward(x)
                return x * 2

            @staticmethod
            def backward(ctx: Any, grad: Any) -> Any:
                return grad * 2

        x = t(lib, X, True)
        out = Keep.apply(x)
        out.sum().backward()
        return out.grad_fn.saved_tensors

    raises_both(RuntimeError, scenario, match="freed")


def test_graph_is_collected_when_outputs_die() -> None:
    x = genesis.tensor(X, requires_grad=True, device=DEVICE)
    h = x.exp()
    out = (h * 2).sum()
    ref = weakref.ref(h)
    del h, out
    gc.collect()
    assert ref() is None


# ------------------------------------------------------------------ in-place and version counter

def test_inplace_on_leaf_requiring_grad_raises() -> None:
    raises_both(RuntimeError, lambda lib: t(lib, X, True).add_(1), match="leaf")
    raises_both(RuntimeError, lambda lib: t(lib, X, True).mul_(t(lib, Y)), match="leaf")
    raises_both(RuntimeError, lambda lib: t(lib, X, True).exp_(), match="leaf")
    raises_both(RuntimeError, lambda lib: t(lib, X, True).zero_(), match="leaf")

    def setitem(lib: Any) -> None:
        x = t(lib, X, True)
        x[0] = 1.0

    raises_both(RuntimeError, setitem, match="leaf")

    def view_of_leaf(lib: Any) -> None:
        x = t(lib, X, True)
        x[0].add_(1)

    raises_both(RuntimeError, view_of_leaf)


def test_inplace_on_leaf_allowed_under_no_grad() -> None:
    def scenario(lib: Any) -> list:
        x = t(lib, X, True)
        with lib.no_grad():
            x.mul_(2)
            x[0, 0] = 5.0
            x.add_(1)
        (x * x).sum().backward()
        return [x, x.requires_grad, x.is_leaf, x.grad]

    both(scenario)


@pytest.mark.parametrize("requires_grad", [False, True])
def test_inplace_write_into_expanded_tensor_raises(requires_grad: bool) -> None:
    """An expanded tensor's rows share memory: in-place ops refuse to write it (torch's error), with or without a
    graph, on every device, and leave the values as they were. (torch's fill_ and zero_ do write it.)"""
    writes = [lambda lib, a: a.mul_(2), lambda lib, a: a.add_(t(lib, Y)), lambda lib, a: a.sigmoid_(),
              lambda lib, a: a.exp_(), lambda lib, a: a.copy_(t(lib, Y)), lambda lib, a: a.clamp_(max=0.0),
              lambda lib, a: a[:, 1:].neg_()]
    for write in writes:
        def scenario(lib: Any, write: Callable = write) -> None:
            expanded = (t(lib, X[:1], requires_grad) * 1).expand(2, 3)
            try:
                write(lib, expanded)
            finally:
                assert expanded.detach().tolist() == [X[0], X[0]], "a refused write changed the values"

        raises_both(RuntimeError, scenario, match="more than one element of the written-to tensor")


def test_inplace_change_of_saved_tensor_raises() -> None:
    def scenario(lib: Any) -> None:
        x = t(lib, X, True)
        h = x * 2
        out = (h * h).sum()
        h.add_(1)
        out.backward()

    raises_both(RuntimeError, scenario, match="modified by an inplace operation")


def test_inplace_change_of_saved_output_raises() -> None:
    def scenario(lib: Any) -> None:
        x = t(lib, X, True)
        h = x.exp()
        h.mul_(2)
        h.sum().backward()

    raises_both(RuntimeError, scenario, match="modified by an inplace operation")


def test_inplace_change_of_saved_leaf_raises() -> None:
    def scenario(lib: Any) -> None:
        x = t(lib, X, True)
        w = t(lib, Y)
        out = (x * w).sum()
        w.add_(1)
        out.backward()

    raises_both(RuntimeError, scenario, match="modified by an inplace operation")


def test_inplace_change_of_saved_tensor_through_a_view_raises() -> None:
    def scenario(lib: Any) -> None:
        x = t(lib, X, True)
        w = t(lib, Y)
        out = (x * w).sum()
        w[0].add_(1)
        out.backward()

    raises_both(RuntimeError, scenario, match="modified by an inplace operation")

    def through_base(lib: Any) -> None:
        x = t(lib, X, True)
        w = t(lib, Y)
        out = (x * w[1]).sum()
        w.mul_(2)
        out.backward()

    raises_both(RuntimeError, through_base, match="modified by an inplace operation")

    def through_setitem(lib: Any) -> None:
        x = t(lib, X, True)
        w = t(lib, Y)
        out = (x * w.T.T).sum()
        w[0, 0] = 3.0
        out.backward()

    raises_both(RuntimeError, through_setitem, match="modified by an inplace operation")


def test_inplace_change_through_a_view_of_saved_output_raises() -> None:
    def scenario(lib: Any) -> None:
        a = t(lib, X, True)
        x = a.exp()
        x[1].add_(2)
        x.sum().backward()

    raises_both(RuntimeError, scenario, match="modified by an inplace operation")


def test_inplace_change_of_unsaved_tensor_is_fine() -> None:
    def scenario(lib: Any) -> list:
        x = t(lib, X, True)
        w = t(lib, Y)
        out = (x + w).sum()
        w.add_(1)
        out.backward()
        return [x.grad]

    both(scenario)


def test_matmul_saves_only_the_operands_its_gradients_read() -> None:
    # torch saves `a` of `a @ b` only when `b` needs a gradient (and `b` only when `a` does): an in-place change of
    # the other operand (an embedding table renormalized by max_norm after a tied projection) is fine.
    def scenario(lib: Any) -> list:
        w = t(lib, X, True)
        v = t(lib, [0.5, -1.0, 2.0])
        out = (w @ v).sum() + (v @ w.T).sum() + (w @ t(lib, Y).T).sum()
        with lib.no_grad():
            w.mul_(0.5)
        out.backward()
        x = t(lib, X)
        m = t(lib, Y, True)
        out = (x.T @ m).sum()
        x.add_(1)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            out.backward()
        return [w.grad]

    both(scenario)


def test_views_share_the_version_counter() -> None:
    def scenario(lib: Any) -> list:
        x = t(lib, X)
        v = x[0]
        w = x.view(3, 2)
        d = x.detach()
        start = [version(x), version(v), version(w)]
        v.add_(1)
        after_view = [version(x), version(v), version(w), version(d)]
        x.mul_(2)
        d.sub_(1)
        return [start, after_view, [version(x), version(v), version(w), version(d)], x]

    both(scenario)


def test_inplace_on_non_leaf_in_graph() -> None:
    def scenario(lib: Any) -> list:
        a = t(lib, X, True)
        x = a * 2
        x.add_(1)
        x.mul_(a)
        x.div_(a + 2)
        x.exp_()
        x.sum().backward()
        return [x, a.grad, x.is_leaf]

    both(scenario)


def test_inplace_using_itself_as_operand() -> None:
    # torch raises here (it saves `other`, the same tensor, and sees its version change); Genesis saves a copy of
    # the old value and gives the exact gradient: d/da sum((2a)^2 / (2a + 1)).
    a = genesis.tensor(X, dtype=genesis.float64, requires_grad=True, device=DEVICE)
    x = a * 2
    x.mul_(x)
    x.div_(a * 2 + 1)
    x.sum().backward()
    ta = torch.tensor(X, dtype=torch.float64, requires_grad=True)
    ((2 * ta) ** 2 / (2 * ta + 1)).sum().backward()
    assert_same(a.grad, ta.grad)


def test_inplace_with_other_requiring_grad_on_plain_tensor() -> None:
    def scenario(lib: Any) -> list:
        b = t(lib, Y, True)
        x = t(lib, X)
        x.mul_(b)
        x += b.exp()
        flags = [x.requires_grad, x.is_leaf]
        x.sum().backward()
        return flags + [x, b.grad]

    both(scenario)


def test_operators_inplace_keep_identity() -> None:
    def scenario(lib: Any) -> list:
        a = t(lib, X, True)
        x = a * 1
        before = x
        x += 1
        x *= a
        x -= 2
        x /= 3
        x **= 2
        x.sum().backward()
        return [x is before, x, a.grad]

    both(scenario)


def test_setitem_in_graph() -> None:
    def scenario(lib: Any) -> list:
        y = t(lib, [1.0, 2.0], True)
        out = lib.zeros(2, 3, dtype=lib.float64) if lib is torch else genesis.zeros(2, 3, dtype=genesis.float64,
                                                                                     device=DEVICE)
        out[:, 1] = y
        out[0, 2] = y[1] * 3
        flags = [out.requires_grad, out.is_leaf]
        (out * t(lib, Z)).sum().backward()
        return flags + [out, y.grad]

    both(scenario)


def test_setitem_overwrites_gradient_path() -> None:
    def scenario(lib: Any) -> list:
        a = t(lib, X, True)
        b = t(lib, [5.0, 6.0, 7.0], True)
        h = a * 3
        h[1] = b
        mask = t(lib, [[True, False, True], [False, False, True]], dtype=lib.bool)
        h[mask] = 0.0
        (h * t(lib, Z)).sum().backward()
        return [h, a.grad, b.grad]

    both(scenario)


def test_inplace_on_view_of_non_leaf_updates_base_gradient() -> None:
    def scenario(lib: Any) -> list:
        a = t(lib, X, True)
        x = a * 2
        v = x[0]
        v.mul_(3)
        x.sum().backward()
        return [x, a.grad]

    both(scenario)


def test_inplace_on_base_seen_through_existing_view() -> None:
    def scenario(lib: Any) -> list:
        a = t(lib, X, True)
        x = a * 2
        v = x[1]
        x.mul_(a)
        v.sum().backward()
        return [v, a.grad]

    both(scenario)


def test_inplace_through_view_of_plain_tensor_gives_it_history() -> None:
    def scenario(lib: Any) -> list:
        y = t(lib, [1.0, 2.0], True)
        out = lib.zeros(2, 3, dtype=lib.float64) if lib is torch else genesis.zeros(2, 3, dtype=genesis.float64,
                                                                                     device=DEVICE)
        out[:, 1].copy_(y)
        out.T[2].add_(y * y)
        flags = [out.requires_grad, out.is_leaf]
        (out * t(lib, Z)).sum().backward()
        return flags + [out, y.grad]

    both(scenario)


def test_inplace_on_view_of_view_and_later_use_of_both() -> None:
    def scenario(lib: Any) -> list:
        a = t(lib, X, True)
        b = t(lib, Y, True)
        x = a * 1.5 + b
        row = x[1]
        part = row[1:]
        part.mul_(b[0, :2])
        other = x.T
        row.add_(2)
        out = (x * t(lib, Z)).sum() + (part ** 2).sum() + (other[0] * 3).sum()
        out.backward()
        return [x, part, other, a.grad, b.grad]

    both(scenario)


def test_inplace_on_transposed_and_strided_views() -> None:
    def scenario(lib: Any) -> list:
        a = t(lib, [[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0], [9.0, 10.0, 11.0, 12.0]], True)
        x = a * 1.5
        x.T[::2].mul_(a.T[1::2])
        x[:, 1::2].sigmoid_()
        (x * x).sum().backward()
        return [x, a.grad]

    both(scenario)


def test_autograd_grad_through_inplace_view_with_create_graph() -> None:
    def scenario(lib: Any) -> list:
        a = t(lib, X, True)
        x = a * a
        x[0].mul_(a[1])
        (g,) = lib.autograd.grad(x.sum(), a, create_graph=True)
        (gg,) = lib.autograd.grad((g * g).sum(), a)
        return [g, gg]

    both(scenario)


@pytest.mark.parametrize("op", ["relu_", "sigmoid_", "tanh_", "exp_", "sqrt_", "reciprocal_"])
def test_recorded_inplace_of_output_saving_op_writes_in_place(op: str) -> None:
    """An in-place op whose backward reads only its output writes the tensor's own memory when recorded (one
    kernel, as torch's): same values, gradients, node name, version and retained gradient as torch."""
    def scenario(lib: Any) -> list:
        a = t(lib, X, True)
        h = a * 1.5 + 4.0  # positive: sqrt_ and reciprocal_ stay finite
        h.retain_grad()
        ptr = h.data_ptr()
        before = version(h)
        out = getattr(h, op)()
        assert out is h and h.data_ptr() == ptr
        name = h.grad_fn.name()
        (h * h).sum().backward(retain_graph=True)
        (g,) = lib.autograd.grad((h * a).sum(), a, create_graph=True)
        return [h, a.grad, h.grad, name, version(h) - before, g]

    both(scenario)


@pytest.mark.parametrize("op", ["relu_", "exp_"])
def test_recorded_inplace_output_changed_again_raises(op: str) -> None:
    """The output such an op saves is the tensor itself: changing it (or its base) in place again before backward
    raises, as torch's."""
    def scenario(lib: Any) -> None:
        h = t(lib, X, True) * 2
        getattr(h, op)()
        out = h.sum() * 1.0
        h.mul_(3)
        (out + (h * 1).sum()).backward()

    def scenario_view(lib: Any) -> None:
        h = t(lib, X, True) * 2 - 3
        getattr(h[:, 1:], op)()
        h.T[0].sigmoid_()
        (h * h).sum().backward()

    raises_both(RuntimeError, scenario, match="modified by an inplace operation")
    raises_both(RuntimeError, scenario_view, match="modified by an inplace operation")


def test_erfinv_output_changed_in_place_before_backward() -> None:
    """erfinv saves its input (its backward computes erfinv again), as torch's: its output, also ``erfinv_``'s,
    may change in place before backward without an error, and the gradients stay torch's."""
    def scenario(lib: Any) -> list:
        a = t(lib, X, True)
        y = (a * 0.3).erfinv()
        y.mul_(3)
        h = a * 0.4
        h.erfinv_()
        h.add_(1)
        (y.sum() + (h * h).sum()).backward()
        return [y, h, a.grad]

    both(scenario)


def test_recorded_inplace_relu_of_a_view_updates_the_base() -> None:
    def scenario(lib: Any) -> list:
        a = t(lib, X, True)
        h = a * 2 - 3
        h[:, 1:].relu_()
        (h * h).sum().backward()
        return [h, a.grad, type(h.grad_fn).__name__]

    both(scenario)


def test_recorded_inplace_add_sub_mul_write_in_place() -> None:
    """``+=``, ``-=`` and ``*=`` (by a number or a constant tensor) on a recorded tensor compute into its memory, as
    torch's; ``*=`` by a tensor that needs a gradient, a partly overlapping operand or a wider dtype take the
    general path. Values, gradients, node names and versions equal torch's either way."""
    def scenario(lib: Any) -> list:
        a = t(lib, X, True)
        b = t(lib, Y[0], True)
        c = t(lib, Y[1])
        h = a * 2
        ptr = h.data_ptr()
        before = version(h)
        h += b
        h -= 1.5
        h *= 3.0
        h.mul_(c)
        h.add_(b, alpha=2)
        h.sub_(c, alpha=0.5)
        h += h  # the very same elements
        names = [type(h.grad_fn).__name__]
        h.mul_(b)  # b needs a gradient: the general path
        names.append(type(h.grad_fn).__name__)
        same = h.data_ptr() == ptr
        (h * h).sum().backward()
        return [h, a.grad, b.grad, names, version(h) - before, same]

    def mixed(lib: Any) -> list:
        a = t(lib, X, True, dtype=lib.bfloat16)
        h = a * 2
        h += t(lib, Y[0], dtype=lib.float32)  # a wider operand: computed in float32, written as bfloat16
        h += t(lib, 0.25, dtype=lib.float64)  # a 0-dim operand keeps bfloat16
        h.sum().backward()
        return [h, a.grad]

    both(scenario)
    both(mixed)


def test_recorded_inplace_add_of_a_saved_tensor_raises() -> None:
    def scenario(lib: Any) -> None:
        h = t(lib, X, True) * 2
        y = h * h
        h += 1
        y.sum().backward()

    raises_both(RuntimeError, scenario, match="modified by an inplace operation")


def test_inplace_ops_bump_version_once() -> None:
    def scenario(lib: Any) -> list:
        x = t(lib, X)
        versions = []
        for op in (lambda: x.add_(1), lambda: x.mul_(2), lambda: x.zero_(), lambda: x.fill_(3.0),
                   lambda: x.copy_(t(lib, Y)), lambda: x.exp_(), lambda: x.clamp_(0, 1),
                   lambda: x.__setitem__((0, 0), 4.0)):
            op()
            versions.append(version(x))
        return versions

    both(scenario)


def test_data_assignment_and_access() -> None:
    def scenario(lib: Any) -> list:
        x = t(lib, X, True)
        d = x.data
        flags = [d.requires_grad, d.is_leaf]
        d.mul_(2)  # writes through, not tracked
        x.data = t(lib, Y)
        (x * 2).sum().backward()
        return flags + [x, x.grad]

    both(scenario)


def test_changes_through_data_escape_the_version_check() -> None:
    # .data has a version counter of its own (detach() shares the tensor's): a saved output changed through it is
    # used as it is now, without the "modified by an inplace operation" error, as in torch.
    def scenario(lib: Any) -> list:
        x = t(lib, X, True)
        h = x.exp()
        h.data.mul_(0.5)
        before = version(h)
        h.sum().backward()
        return [x.grad, version(h) == before]

    both(scenario)

    def through_detach(lib: Any) -> None:
        x = t(lib, X, True)
        h = x.exp()
        h.detach().mul_(0.5)
        h.sum().backward()

    raises_both(RuntimeError, through_detach, match="modified by an inplace operation")


def test_grad_setter_checks() -> None:
    def scenario(lib: Any) -> list:
        x = t(lib, X, True)
        x.grad = t(lib, Y)
        (x * 2).sum().backward()
        return [x.grad]

    both(scenario)


def test_zero_grad_pattern() -> None:
    def scenario(lib: Any) -> list:
        x = t(lib, X, True)
        (x * x).sum().backward()
        x.grad.zero_()
        (x * 3).sum().backward()
        g = x.grad
        x.grad = None
        (x * 5).sum().backward()
        return [g, x.grad]

    both(scenario)


def test_to_genesis_helper_round_trip_keeps_flags() -> None:
    x = to_genesis(torch.tensor(X, dtype=torch.float64, requires_grad=True))
    assert x.requires_grad and x.is_leaf


# ------------------------------------------------------------------ more engine cases

def test_hook_changing_the_size_raises() -> None:
    def non_leaf(lib: Any) -> None:
        x = t(lib, [1.0, 2.0, 3.0], True)
        h = x * 2
        h.register_hook(lambda g: g[:2])
        h.sum().backward()

    def leaf(lib: Any) -> None:
        x = t(lib, [1.0, 2.0, 3.0], True)
        x.register_hook(lambda g: g.sum())
        (x * 2).sum().backward()

    raises_both(RuntimeError, non_leaf, match="changed the size")
    raises_both(RuntimeError, leaf, match="changed the size")


def test_partially_used_outputs_of_multi_output_ops() -> None:
    def scenario(lib: Any) -> list:
        x = t(lib, X, True)
        values, _ = x.max(dim=1)
        first, _, third = x.chunk(3, dim=1)
        sorted_values = x.sort(dim=1)[0]
        (values * 2 + first.sum(1) + third.sum(1) * 3 + sorted_values[:, 0]).sum().backward()
        return [x.grad]

    both(scenario)


def test_custom_function_set_materialize_grads() -> None:
    def scenario(lib: Any) -> list:
        seen = []

        class Two(lib.autograd.Function):
            @staticmethod
            def forward(ctx: Any, x: Any) -> tuple:
                ctx.set_materialize_grads(False)
                return x * 2, x * 3

            @staticmethod
            def backward(ctx: Any, g1: Any, g2: Any) -> Any:
                seen.append((g1 is None, g2 is None))
                return g1 * 2 if g1 is not None else g2 * 3

        class TwoMaterialized(lib.autograd.Function):
            @staticmethod
            def forward(ctx: Any, x: Any) -> tuple:
                return x * 2, x * 3

            @staticmethod
            def backward(ctx: Any, g1: Any, g2: Any) -> Any:
                seen.append((g1 is None, g2 is None, g2))
                return g1 * 2 + g2 * 3

        x = t(lib, X, True)
        Two.apply(x)[1].sum().backward()
        TwoMaterialized.apply(x)[0].sum().backward()
        return [seen, x.grad]

    both(scenario)


def test_custom_function_saving_none_and_output() -> None:
    def scenario(lib: Any) -> list:
        class Exp(lib.autograd.Function):
            @staticmethod
            def forward(ctx: Any, x: Any) -> Any:
                out = x.exp()
                ctx.save_for_backward(None, out)
                return out

            @staticmethod
            def backward(ctx: Any, grad: Any) -> Any:
                nothing, out = ctx.saved_tensors
                assert nothing is None
                return grad * out

        x = t(lib, X, True)
        out = Exp.apply(x)
        (g,) = lib.autograd.grad(out.sum(), x, create_graph=True)
        (gg,) = lib.autograd.grad(g.sum(), x)
        return [out, g, gg]

    both(scenario)


def test_custom_function_output_modified_in_place_raises() -> None:
    def scenario(lib: Any) -> None:
        class Exp(lib.autograd.Function):
            @staticmethod
            def forward(ctx: Any, x: Any) -> Any:
                out = x.exp()
                ctx.save_for_backward(out)
                return out

            @staticmethod
            def backward(ctx: Any, grad: Any) -> Any:
                (out,) = ctx.saved_tensors
                return grad * out

        out = Exp.apply(t(lib, X, True))
        out.mul_(2)
        out.sum().backward()

    raises_both(RuntimeError, scenario, match="modified by an inplace operation")


def test_inplace_through_detached_alias_is_detected() -> None:
    def scenario(lib: Any) -> None:
        x = t(lib, X, True).exp()
        x.detach().add_(1)
        x.sum().backward()

    raises_both(RuntimeError, scenario, match="modified by an inplace operation")


def test_inplace_under_no_grad_on_non_leaf_keeps_history() -> None:
    def scenario(lib: Any) -> list:
        x = t(lib, X, True)
        h = x * 2
        with lib.no_grad():
            h.add_(1)
        flags = [h.requires_grad, h.grad_fn is not None, h.is_leaf]
        (h * 3).sum().backward()
        return flags + [h, x.grad]

    both(scenario)


def test_backward_inputs_may_name_a_non_leaf() -> None:
    def scenario(lib: Any) -> list:
        x = t(lib, X, True)
        h = x.sin()
        (h * h).sum().backward(inputs=[h])
        return [h.grad, x.grad]

    both(scenario)


def test_backward_inputs_with_a_retained_non_leaf_accumulates_once() -> None:
    def scenario(lib: Any) -> list:
        x = t(lib, X, True)
        h = x.sin()
        h.retain_grad()
        h.register_hook(lambda g: g * 10)
        (h * h).sum().backward(inputs=[h], retain_graph=True)
        first = h.grad.clone()
        (h * h).sum().backward(inputs=[h])
        return [first, h.grad, x.grad]

    both(scenario)


def test_grad_of_several_outputs_with_mixed_grad_outputs() -> None:
    def scenario(lib: Any) -> list:
        x = t(lib, X, True)
        a = (x * x).sum()
        b = x.exp()
        return list(lib.autograd.grad([a, b], [x], grad_outputs=[None, t(lib, Z)]))

    both(scenario)


def test_create_graph_keeps_the_graph_by_default() -> None:
    def scenario(lib: Any) -> list:
        x = t(lib, X, True)
        y = (x ** 3).sum()
        (g,) = lib.autograd.grad(y, x, create_graph=True)
        (again,) = lib.autograd.grad(y, x)  # retain_graph defaulted to create_graph
        return [g, again]

    both(scenario)


def test_grad_accumulation_with_create_graph_makes_grad_differentiable() -> None:
    def scenario(lib: Any) -> list:
        x = t(lib, X, True)
        (x * x).sum().backward()
        first = x.grad.clone()
        (x ** 3).sum().backward(create_graph=True)
        flags = [x.grad.requires_grad]
        total = x.grad.sum()
        (gg,) = lib.autograd.grad(total, x)
        x.grad = None
        return flags + [first, gg]

    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        both(scenario)


def test_gradients_of_a_broadcast_leaf_keep_its_shape() -> None:
    def scenario(lib: Any) -> list:
        bias = t(lib, [[0.5, -1.0, 2.0]], True)
        scale = t(lib, 1.5, True)
        x = t(lib, X, True)
        ((x + bias) * scale).pow(2).sum().backward()
        return [bias.grad, scale.grad, x.grad]

    both(scenario)


def test_zero_sized_tensors_in_the_graph() -> None:
    def scenario(lib: Any) -> list:
        x = t(lib, X, True)
        empty = x[:, :0]
        out = (empty * 2).sum() + (x * 3).sum()
        out.backward()
        return [out, x.grad]

    both(scenario)


def test_retain_grad_sees_the_hooked_gradient() -> None:
    def scenario(lib: Any) -> list:
        x = t(lib, X, True)
        h = x * 2
        h.retain_grad()
        h.register_hook(lambda g: g * 10)
        (h * h).sum().backward()
        return [h.grad, x.grad]

    both(scenario)


def test_retain_grad_follows_in_place_changes_and_hooks_stay_with_their_value() -> None:
    def scenario(lib: Any) -> list:
        x = t(lib, X, True)
        h = x * 2
        seen = []
        h.retain_grad()
        h.register_hook(lambda g: seen.append(("before", g.clone())))
        h.mul_(3)
        h.register_hook(lambda g: seen.append(("after", g.clone())))
        h[0].add_(1)
        (h * h).sum().backward()
        return [h.grad, x.grad, [s[0] for s in seen], [s[1] for s in seen]]

    both(scenario)


@pytest.mark.parametrize("make", ["reshape", "flatten", "unflatten", "reshape_as", "view"])
def test_reshape_views_share_memory_history_and_version(make: str) -> None:
    views = {
        "reshape": lambda x: x.reshape(6),
        "flatten": lambda x: x.flatten(),
        "unflatten": lambda x: x.unflatten(1, (3, 1)),
        "reshape_as": lambda x: x.reshape_as(x.T.contiguous()),
        "view": lambda x: x.view(3, 2),
    }

    def scenario(lib: Any) -> list:
        a = t(lib, X, True)
        x = a * 1
        w = views[make](x)
        v0 = version(x)
        w.mul_(2)
        flat = w.reshape(-1)
        flat[5] = flat[4] * 3
        (x * t(lib, Z)).sum().backward()
        return [version(x) - v0, version(w) - v0, x, a.grad]

    both(scenario)


def test_reshape_that_copies_is_not_a_view() -> None:
    def scenario(lib: Any) -> list:
        a = t(lib, X, True)
        x = a * 1
        copy = x.T.reshape(6)  # not expressible as a view: a copy
        copy.mul_(5)
        (x.sum() + copy.sum()).backward()
        return [x, a.grad]

    both(scenario)


def test_autograd_grad_on_a_long_chain_with_an_unrequested_leaf() -> None:
    # The pruning of nodes that lead to no requested input is one pass, not one search per node.
    x = genesis.tensor([1.0], requires_grad=True)
    side = genesis.tensor([2.0], requires_grad=True)
    h = x
    for _ in range(2000):
        h = h * 1.0005 + side * 0.0
    (g,) = genesis.autograd.grad(h.sum(), x)
    assert abs(g.item() - 1.0005 ** 2000) < 1e-3


def test_assigning_a_mismatched_grad_raises() -> None:
    raises_both(TypeError, lambda lib: setattr(t(lib, X, True), "grad", [1.0, 2.0]))
    raises_both(RuntimeError, lambda lib: setattr(t(lib, X, True), "grad", t(lib, [1.0, 2.0])), match="size")
    raises_both(RuntimeError, lambda lib: setattr(t(lib, X, True), "grad", t(lib, X, dtype=lib.float32)),
                match="type")

    def valid(lib: Any) -> list:
        x = t(lib, X, True)
        x.grad = t(lib, Y)
        x.grad = None
        return [x.grad]

    both(valid)


# ------------------------------------------------------------------ random graphs against torch

RANDOM_UNARY = [
    lambda lib, a: a.sin(), lambda lib, a: a.tanh(), lambda lib, a: a * 1.5, lambda lib, a: a.exp().clamp(max=5.0),
    lambda lib, a: a.T.contiguous().T, lambda lib, a: a.flip(0), lambda lib, a: a.sum(0, keepdim=True).expand(3, 4),
    lambda lib, a: a[:, 1:].sum(1, keepdim=True) * a, lambda lib, a: a.reshape(4, 3).T,
]
RANDOM_BINARY = [
    lambda lib, a, b: a + b, lambda lib, a, b: a * b, lambda lib, a, b: a - b * 0.5,
    lambda lib, a, b: lib.maximum(a, b), lambda lib, a, b: lib.where(a > b, a, b * 2),
    lambda lib, a, b: a / (b.abs() + 1), lambda lib, a, b: (a @ b.T).softmax(1) @ b,
]
RANDOM_INPLACE = [
    lambda lib, a: a.mul_(0.5), lambda lib, a: a.add_(1.0), lambda lib, a: a[0].mul_(2),
    lambda lib, a: a[:, ::2].sigmoid_(), lambda lib, a: a.T[1].zero_(), lambda lib, a: a.view(12)[3:7].exp_(),
]


def _random_program(lib: Any, seed: int, perturb: tuple | None = None) -> tuple:
    """A random graph over three (3, 4) leaves: unary, binary and in-place ops on a growing pool of tensors."""
    import random

    rng = random.Random(seed)
    data_rng = torch.Generator().manual_seed(seed)
    leaves = []
    for k in range(3):
        data = torch.randn(3, 4, generator=data_rng, dtype=torch.float64)
        if perturb is not None and perturb[0] == k:
            data[perturb[1]] += perturb[2]
        leaf = torch.tensor(data.tolist(), dtype=torch.float64) if lib is torch else \
            genesis.tensor(data.tolist(), dtype=genesis.float64, device=DEVICE)
        leaves.append(leaf.requires_grad_(rng.random() < 0.7))
    pool = list(leaves)
    for _ in range(12):
        r = rng.random()
        if r < 0.35:
            pool.append(RANDOM_UNARY[rng.randrange(len(RANDOM_UNARY))](lib, rng.choice(pool)))
        elif r < 0.75:
            pool.append(RANDOM_BINARY[rng.randrange(len(RANDOM_BINARY))](lib, rng.choice(pool), rng.choice(pool)))
        elif len(pool) > 3:
            RANDOM_INPLACE[rng.randrange(len(RANDOM_INPLACE))](lib, rng.choice(pool[3:]))
    terms = [(p * (i + 1)).sum() for i, p in enumerate(pool[3:]) if p.requires_grad]
    return sum(terms), leaves


def _outcome(lib: Any, seed: int) -> tuple:
    try:
        out, leaves = _random_program(lib, seed)
    except RuntimeError:
        return ("forward error",)
    if not isinstance(out, (genesis.Tensor, torch.Tensor)):
        return ("nothing requires grad",)
    try:
        out.backward()
    except RuntimeError as err:
        return ("backward error", str(err))
    return ("ok", out, [leaf.grad for leaf in leaves])


@pytest.mark.parametrize("block", range(4))
def test_random_graphs_match_torch(block: int) -> None:
    """Values and gradients agree with torch; where torch refuses (a saved tensor was changed in place) Genesis
    either refuses too or, having kept a copy of the overwritten value, matches finite differences."""
    for seed in range(block * 40, block * 40 + 40):
        g, r = _outcome(genesis, seed), _outcome(torch, seed)
        if r[0] == "ok":
            assert g[0] == "ok", f"seed {seed}: Genesis {g}"
            _compare(g[1:], r[1:], f"seed {seed}")
        elif r[0] == "backward error" and g[0] == "ok":
            assert "modified by an inplace operation" in r[1], f"seed {seed}: torch {r}"
            if abs(g[1].item()) > 1e6:
                continue  # finite differences drown in rounding at this magnitude
            for k, grad in enumerate(g[2]):
                if grad is None:
                    continue
                for idx in ((0, 0), (1, 2), (2, 3)):
                    up = _random_program(genesis, seed, (k, idx, 1e-6))[0].item()
                    down = _random_program(genesis, seed, (k, idx, -1e-6))[0].item()
                    assert abs((up - down) / 2e-6 - grad[idx].item()) < 1e-4 * max(1.0, abs(grad[idx].item())), \
                        f"seed {seed}: gradient of leaf {k} at {idx}"
        else:
            assert g[0] != "ok" or r[0] == "nothing requires grad", f"seed {seed}: Genesis {g[0]}, torch {r}"


def test_bad_gradient_arguments_raise_like_torch() -> None:
    raises_both(TypeError, lambda lib: (t(lib, [1.0, 2.0], True) * 2).backward([1.0, 1.0]), match="Tensors or None")
    raises_both(RuntimeError, lambda lib: lib.autograd.backward([t(lib, X, True).sum(), t(lib, Y, True).sum()],
                                                                [None]), match="2 tensors and 1 gradients")
    raises_both(RuntimeError, lambda lib: lib.autograd.grad([(t(lib, X, True) * 2).sum(), t(lib, 1.0)],
                                                            [t(lib, Y, True)]), match="element 1")

    def integer_gradient(lib: Any) -> Any:
        x = t(lib, [1.0, 2.0], True)
        (x * 2).backward(lib.tensor([1, 3], device=DEVICE) if lib is genesis else lib.tensor([1, 3]))
        return x.grad

    both(integer_gradient)
    if DEVICE != "cpu":  # a gradient on another device than its output (torch's message)
        x = t(genesis, [1.0, 2.0], True)
        with pytest.raises(RuntimeError, match="invalid gradient at index 0 - expected device"):
            (x * 2).backward(genesis.tensor([1.0, 3.0], dtype=genesis.float64))
        assert x.grad is None


def test_backward_in_several_threads_at_once() -> None:
    expected = (torch.tensor(X, dtype=torch.float64) * 2).cos() * 2
    errors: list = []

    def worker(grad_mode_off: bool) -> None:
        try:
            for _ in range(30):
                x = genesis.tensor(X, dtype=genesis.float64, requires_grad=True, device=DEVICE)
                if grad_mode_off:
                    with genesis.no_grad():
                        assert not (x * 2).requires_grad
                (g,) = genesis.autograd.grad((x * 2).sin().sum(), x)
                assert_same(g, expected)
        except BaseException as err:  # reported by the main thread
            errors.append(err)

    threads = [threading.Thread(target=worker, args=(i % 2 == 0,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors


def test_stale_view_reports_its_new_history() -> None:
    def scenario(lib: Any) -> list:
        a = t(lib, X, True)
        x = a * 2
        v = x[1]
        w = x[0]
        before = v.grad_fn
        x.mul_(a)
        after = v.grad_fn
        flags = [before is not after, after is v.grad_fn, v.is_leaf, v.requires_grad]
        with lib.no_grad():
            w.backward(t(lib, [1.0, 2.0, 3.0]))  # w's history is rebuilt here, whatever the grad mode
        return flags + [a.grad]

    both(scenario)


SECOND_ORDER = {
    "mul_div": lambda lib, x, y: x * y / (y * y + 1),
    "pow_tensor": lambda lib, x, y: (x.abs() + 0.5) ** y,
    "matmul": lambda lib, x, y: (x @ y.T).tanh(),
    "softmax": lambda lib, x, y: x.softmax(dim=1) * y,
    "log_softmax": lambda lib, x, y: x.log_softmax(dim=0) * y,
    "logsumexp": lambda lib, x, y: (x * y).logsumexp(dim=1),
    "where_max": lambda lib, x, y: lib.where(x > y, x * x, y.exp()) + lib.maximum(x, y) ** 2,
    "norm_mean_var": lambda lib, x, y: (x - x.mean(1, keepdim=True)) / (x.var(1, keepdim=True) + 1).sqrt() * y,
    "sqrt_log_exp": lambda lib, x, y: (x * x + 1).sqrt() * (y * y + 1).log() + (x * y).exp(),
    "sigmoid_silu": lambda lib, x, y: x.sigmoid() * lib.nn.functional.silu(y) if lib is torch else
    x.sigmoid() * genesis.nn.functional.silu(y),
    "gather_index": lambda lib, x, y: (x[:, [2, 0]] * y[1, :2]).sum(1, keepdim=True) + x.flip(0) ** 3 * y,
    "cumsum_prod": lambda lib, x, y: x.cumsum(1) * y.prod(0),
}


@pytest.mark.parametrize("name", list(SECOND_ORDER))
def test_second_order_gradients_match_torch(name: str) -> None:
    def scenario(lib: Any) -> list:
        x = t(lib, X, True)
        y = t(lib, Y, True)
        out = SECOND_ORDER[name](lib, x, y)
        gx, gy = lib.autograd.grad(out.sum(), [x, y], create_graph=True)
        v = t(lib, Z)
        hvx, hvy = lib.autograd.grad((gx * v).sum() + (gy * v.flip(1)).sum(), [x, y], allow_unused=True)
        return [gx, gy, hvx, hvy]

    both(scenario)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_low_precision_leaves_accumulate_in_their_dtype(dtype: str) -> None:
    def scenario(lib: Any) -> list:
        d = getattr(lib, dtype)
        x = t(lib, X, True, dtype=d)
        w = t(lib, Y, dtype=lib.float32)
        (x * w).sum().backward()  # promoted to float32, the gradient comes back in x's dtype
        (x * x).sum().backward()
        return [x.grad]

    both(scenario)


def test_node_post_hooks_see_input_and_output_gradients() -> None:
    def scenario(lib: Any) -> list:
        x = t(lib, X, True)
        c = t(lib, Y)
        y = x * c
        seen = []
        y.grad_fn.register_hook(lambda grad_inputs, grad_outputs: seen.append((grad_inputs, grad_outputs)))
        (y * 3).sum().backward()
        (grad_inputs, grad_outputs), = seen
        return [list(grad_inputs), list(grad_outputs), x.grad]

    both(scenario)


def test_post_accumulate_grad_hook_on_non_leaf_raises() -> None:
    raises_both(RuntimeError, lambda lib: (t(lib, X, True) * 2).register_post_accumulate_grad_hook(lambda p: None))


def test_saved_tensors_are_freed_as_the_engine_goes() -> None:
    """A node's saved values are released right after its backward, before the nodes below it run."""
    seen = {}

    class Probe(genesis.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            return x * 1.0

        @staticmethod
        def backward(ctx: Any, grad: Any) -> Any:
            gc.collect()
            seen["alive when the node below runs"] = seen["ref"]() is not None
            return grad

    x = genesis.tensor(X, dtype=genesis.float64, requires_grad=True, device=DEVICE)
    m = Probe.apply(x) * 2
    out = (m * m).sum()  # saves m, which nothing else holds once the Python name is gone
    seen["ref"] = weakref.ref(m.ndarray)
    del m
    gc.collect()
    assert seen["ref"]() is not None
    out.backward()
    assert seen["alive when the node below runs"] is False
    assert_same(x.grad, torch.tensor(X, dtype=torch.float64) * 8)


def test_detach_in_place_of_a_view_raises() -> None:
    raises_both(RuntimeError, lambda lib: (t(lib, X, True) * 2)[0].detach_(), match="views in-place")
    raises_both(RuntimeError, lambda lib: t(lib, X).T.detach_(), match="views in-place")


def test_node_prehooks_replace_output_gradients_and_handles_remove() -> None:
    def scenario(lib: Any) -> list:
        x = t(lib, X, True)
        y = x.sin()
        z = y * 3
        seen = []
        handle = y.grad_fn.register_prehook(lambda grads: (grads[0] * 10,))
        y.grad_fn.register_prehook(lambda grads: seen.append(grads[0].clone()))
        accumulate = z.grad_fn.next_functions[0][0].next_functions[0][0]
        accumulate.register_prehook(lambda grads: (grads[0] + 1,))
        post = z.grad_fn.register_hook(lambda gi, go: seen.append("post"))
        z.sum().backward(retain_graph=True)
        first = x.grad.clone()
        handle.remove()
        post.remove()
        z.sum().backward()
        return [first, x.grad, [s for s in seen if isinstance(s, str)], [s for s in seen if not isinstance(s, str)]]

    both(scenario)


def test_grad_takes_torch_keywords_and_batched_vectors():
    x = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64, requires_grad=True)
    g = to_genesis(x)
    (gt,) = torch.autograd.grad(x ** 3, x, torch.eye(3, dtype=torch.float64), is_grads_batched=True)
    (gg,) = genesis.autograd.grad(g ** 3, g, genesis.eye(3, dtype=genesis.float64, device=g.device),
                                  is_grads_batched=True)
    assert_same(gg, gt)  # the Jacobian, one row per vector of the batch
    # only_inputs is accepted (and ignored) as in torch; the positional order is torch's
    (a,) = genesis.autograd.grad((g * g).sum(), g, None, None, False, True)
    (b,) = torch.autograd.grad((x * x).sum(), x, None, None, False, True)
    assert_same(a, b)


def test_variable_is_a_tensor():
    from genesis.autograd import Variable

    base = genesis.ones(2)
    v = Variable(base, requires_grad=True)
    assert v.requires_grad and v.is_leaf and isinstance(v, Variable) and isinstance(base, Variable)
    v.detach().add_(1.0)
    assert base.tolist() == [2.0, 2.0]  # shares memory with its data
    with pytest.raises(TypeError):
        Variable([1.0, 2.0])


def test_detect_anomaly_names_the_node_that_made_a_nan():
    x = genesis.tensor([0.0, 1.0], requires_grad=True)
    with genesis.autograd.detect_anomaly():
        assert genesis.autograd.is_anomaly_enabled()
        with pytest.raises(RuntimeError, match="Function 'DivBackward0' returned nan values in its 1th output"):
            (x.sqrt() * 0 + x / x).sum().backward()
        (x * 2).sum().backward()  # finite gradients pass
    assert not genesis.autograd.is_anomaly_enabled()
    with genesis.autograd.set_detect_anomaly(True):
        assert genesis.autograd.is_anomaly_enabled()
    assert not genesis.autograd.is_anomaly_enabled()


def _nested_close(g, t):
    if isinstance(t, tuple):
        assert isinstance(g, tuple) and len(g) == len(t)
        for a, b in zip(g, t):
            _nested_close(a, b)
        return
    assert_same(g, t)


def _two_outputs(lib):
    return lambda x, y: ((x ** 2 * y.sum()).sin(), x.exp().sum() * y)


def _scalar(lib):
    return lambda x, y: (x ** 3).sum() * y.prod() + (x * y[:3]).sum() ** 2


@pytest.mark.parametrize("name", ["jacobian", "hessian", "vjp", "jvp", "hvp", "vhp"])
def test_autograd_functional_matches_torch(name):
    x = torch.tensor([0.3, -0.5, 0.7], dtype=torch.float64)
    y = torch.tensor([1.2, 0.4, -0.3, 0.9], dtype=torch.float64)
    vx = torch.tensor([1.0, 2.0, -1.0], dtype=torch.float64)
    vy = torch.tensor([0.5, 0.1, -0.2, 0.3], dtype=torch.float64)
    t_fn, g_fn = getattr(torch.autograd.functional, name), getattr(genesis.autograd.functional, name)
    g_in = (to_genesis(x), to_genesis(y))
    if name == "jacobian":
        _nested_close(g_fn(_two_outputs(genesis), g_in), t_fn(_two_outputs(torch), (x, y)))
        _nested_close(g_fn(lambda a: a.sin() * 2, g_in[0]), t_fn(lambda a: a.sin() * 2, x))
    elif name == "hessian":
        _nested_close(g_fn(_scalar(genesis), g_in), t_fn(_scalar(torch), (x, y)))
        _nested_close(g_fn(lambda a: (a ** 3).sum(), g_in[0]), t_fn(lambda a: (a ** 3).sum(), x))
    elif name == "vjp":
        _nested_close(g_fn(lambda a: a.sin() * 2, g_in[0], to_genesis(vx)), t_fn(lambda a: a.sin() * 2, x, vx))
    elif name == "jvp":
        _nested_close(g_fn(_two_outputs(genesis), g_in, (to_genesis(vx), to_genesis(vy))),
                      t_fn(_two_outputs(torch), (x, y), (vx, vy)))
    else:
        _nested_close(g_fn(_scalar(genesis), g_in, (to_genesis(vx), to_genesis(vy))),
                      t_fn(_scalar(torch), (x, y), (vx, vy)))


def test_autograd_functional_create_graph_and_strict():
    x = to_genesis(torch.tensor([0.3, -0.5], dtype=torch.float64), requires_grad=True)
    jac = genesis.autograd.functional.jacobian(lambda a: a ** 3, x, create_graph=True)
    (g,) = genesis.autograd.grad(jac.sum(), x)  # the Jacobian 3 diag(a^2) differentiates to 6 a
    assert g.tolist() == pytest.approx([6 * 0.3, 6 * -0.5])
    assert not genesis.autograd.functional.jacobian(lambda a: a ** 3, x).requires_grad
    with pytest.raises(RuntimeError, match="independent of input 1"):
        genesis.autograd.functional.jacobian(lambda a, b: a * 2, (x, x.detach()), strict=True)


@pytest.mark.parametrize("layout", ["contiguous", "channels_last", "transposed", "strided"])
@pytest.mark.parametrize("op", ["scale", "permute_back", "sum"])
def test_leaf_gradient_layout_follows_torch(layout: str, op: str):
    """A new ``.grad`` obeys torch's layout contract: laid out as its leaf where the leaf is dense in some dim order
    (kept as produced when it already is, copied into that layout when not), row-major where the leaf is not dense;
    its values equal torch's."""
    base = torch.randn(2, 3, 4, 6, dtype=torch.float64)

    def leaf(lib: Any, x: Any) -> Any:
        if layout == "channels_last":
            x = x.contiguous(memory_format=lib.channels_last)
        elif layout == "transposed":
            x = x.transpose(1, 3)
        elif layout == "strided":
            x = x[:, :, :, ::2]
        return x.detach().requires_grad_()

    def loss(x: Any) -> Any:
        if op == "scale":
            return (x * 2).sum()
        if op == "permute_back":  # a gradient laid out in another order than the leaf
            return (x.permute(0, 2, 3, 1).contiguous() * 3).sum()
        return x.sum()

    t, g = leaf(torch, base), leaf(genesis, to_genesis(base))
    loss(t).backward()
    loss(g).backward()
    assert g.grad.stride() == t.grad.stride()
    assert_same(g.grad, t.grad)


def test_graph_nodes_keep_only_saved_inputs_alive() -> None:
    """A recorded op's node keeps an input alive only when it saved it (as torch's graph): an intermediate that no
    node saved is freed as soon as the program drops it, and gradients are unchanged."""
    x = t(genesis, X, True)
    h = x * 3  # saves nothing of x (the factor is a number)
    s = x * 2
    out = (h + 1).sum() + (s * s).sum()  # add saves nothing of h; mul saves both factors s
    dropped, kept = weakref.ref(h), weakref.ref(s)
    del h, s
    gc.collect()
    assert dropped() is None and kept() is not None
    out.backward()
    torch.testing.assert_close(torch.from_numpy(x.grad.cpu().numpy()), 3 + 8 * torch.tensor(X, dtype=torch.float64))


def test_saved_output_of_a_dropped_tensor_keeps_its_history() -> None:
    """An output a node saved (tanh's, exp's) whose tensor the program dropped is unpacked with that node as its
    history, as torch's: double backward through it still differentiates the output."""
    def scenario(lib: Any) -> list:
        x = t(lib, X, True)
        y = x.tanh()
        e = (x * 0.5).exp()
        z = (y * 2).sum() + (e * 3).sum()  # the products by numbers save nothing of y or e
        del y, e
        gc.collect()
        (g,) = lib.autograd.grad(z, x, create_graph=True)
        (gg,) = lib.autograd.grad((g * g).sum(), x)
        return [g, gg]

    both(scenario)


@pytest.mark.parametrize("other", ["detach", "data"])
def test_a_detached_operand_stays_out_of_the_double_backward(other: str) -> None:
    """``x * x.detach()`` (and ``x.data``): the gradient is the detached values, a constant, as in torch; a node
    that saved both operands tells them apart although they share memory."""
    def scenario(lib: Any) -> Any:
        x = t(lib, X, True)
        out = []
        for f in (lambda a, b: a * b, lambda a, b: b * a, lambda a, b: a * b.exp()):
            frozen = x.detach() if other == "detach" else x.data
            (g,) = lib.autograd.grad(f(x, frozen).sum(), x, create_graph=True)
            out += [g, g.requires_grad]
        w = t(lib, X, True)
        w.data = x  # memory shared with x: still a tensor of its own
        (g,) = lib.autograd.grad((w * x).sum(), w, create_graph=True)
        return out + [g, g.requires_grad]

    both(scenario)


def test_backward_runs_nodes_in_torchs_order() -> None:
    """The engine's ready queue orders nodes as torch's (the latest-made first, leaves' accumulation before all):
    tensor hooks fire in torch's order, and gradients summed from several branches round alike, bit for bit."""
    def hook_order(lib: Any) -> list:
        order: list = []
        x = t(lib, X, True)
        a = x * 2
        b = x.exp()
        c = a.sin()
        d = b * a
        a2 = a.cos()
        for name, v in (("a", a), ("b", b), ("c", c), ("d", d), ("a2", a2)):
            v.register_hook(lambda g, name=name: order.append(name))
        ((c + d).sum() + a.cos().sum() + a2.sum()).backward()
        return order

    assert hook_order(genesis) == hook_order(torch)

    values = torch.randn(1000, generator=torch.Generator().manual_seed(0)).tolist()

    def summed(lib: Any) -> Any:
        x = t(lib, values, True, lib.float32)
        total = (x * 0.3).cos()
        for i in range(1, 7):
            y = x * (0.1 * i + 0.3)
            total = total + (y.sin() if i % 2 else y.cos()) * x
        total.sum().backward()
        return x.grad

    got, want = to_torch(summed(genesis)), summed(torch)
    if DEVICE == "cpu":  # the same kernels: the same order of the sums gives the same bits
        assert torch.equal(got, want)
    else:
        torch.testing.assert_close(got, want)
