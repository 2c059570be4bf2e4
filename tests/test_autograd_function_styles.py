"""Custom ``autograd.Function`` in torch >= 2.0's style (forward without ctx, ``setup_context``) and
``once_differentiable``, against torch."""

from __future__ import annotations

from typing import Any

import pytest
import torch

import genesis
from tests.helpers import DEVICE
from tests.test_torch_compat import _compare

LIBS = (genesis, torch)


def make_functions(lib: Any) -> dict[str, type]:
    """The same custom Functions written against ``lib``."""
    function = lib.autograd.Function
    once = lib.autograd.function.once_differentiable

    class Scale(function):
        generate_vmap_rule = True

        @staticmethod
        def forward(x, k, shift=1.0):
            return x * k + shift

        @staticmethod
        def setup_context(ctx, inputs, output):
            x, k, shift = inputs  # defaults bound, as torch does
            ctx.k = k
            ctx.flags = ctx.needs_input_grad

        @staticmethod
        def backward(ctx, g):
            return g * ctx.k, None, None

        @staticmethod
        def vmap(info, in_dims, x, k, shift):
            raise AssertionError("never called")

    class MulSaved(function):
        @staticmethod
        def forward(a, b):
            return a * b, (a > 0).to(lib.int64)

        @staticmethod
        def setup_context(ctx, inputs, output):
            a, b = inputs
            ctx.save_for_backward(a, b)
            ctx.mark_non_differentiable(output[1])
            ctx.flags = ctx.needs_input_grad

        @staticmethod
        def backward(ctx, g, g_mask):
            a, b = ctx.saved_tensors
            return (g * b if ctx.needs_input_grad[0] else None), (g * a if ctx.needs_input_grad[1] else None)

    class Cube(function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        @once
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return 3 * x ** 2 * g

    return {"Scale": Scale, "MulSaved": MulSaved, "Cube": Cube}


def tensor(lib: Any, data: Any, requires_grad: bool = False) -> Any:
    if lib is genesis:
        return genesis.tensor(data, dtype=genesis.float64, device=DEVICE, requires_grad=requires_grad)
    return torch.tensor(data, dtype=torch.float64, requires_grad=requires_grad)


def test_new_style_is_decided_per_class() -> None:
    fns = make_functions(genesis)
    assert fns["Scale"]._new_style and fns["MulSaved"]._new_style and not fns["Cube"]._new_style
    assert not genesis.autograd.Primitive._new_style


def test_setup_context_values_gradients_and_flags() -> None:
    results = []
    for lib in LIBS:
        fns = make_functions(lib)
        a = tensor(lib, [1.0, -2.0, 3.0], requires_grad=True)
        b = tensor(lib, [0.5, 4.0, -1.0])
        y = fns["Scale"].apply(a, 3.0)
        prod, mask = fns["MulSaved"].apply(a, b)
        (y.sum() + (prod * prod).sum()).backward()
        results.append((y.tolist(), prod.tolist(), mask.tolist(), mask.requires_grad, prod.requires_grad,
                        a.grad.tolist(), y.grad_fn is not None, mask.dtype == lib.int64))
    assert results[0] == results[1]


def test_setup_context_needs_input_grad() -> None:
    flags = []
    for lib in LIBS:
        fns = make_functions(lib)
        a = tensor(lib, [1.0, 2.0], requires_grad=True)
        b = tensor(lib, [3.0, 4.0])
        captured = []
        original = fns["MulSaved"].setup_context

        def spy(ctx, inputs, output, original=original, captured=captured):
            original(ctx, inputs, output)
            captured.append(tuple(ctx.flags))

        fns["MulSaved"].setup_context = staticmethod(spy)
        fns["MulSaved"].apply(a, b)
        fns["Scale"].apply(b, 2.0)
        flags.append(captured)
    assert flags[0] == flags[1] == [(True, False)]


@pytest.mark.parametrize("grad_mode", ["no_grad", "no_input_requires_grad"])
def test_setup_context_without_recording(grad_mode: str) -> None:
    values = []
    for lib in LIBS:
        fns = make_functions(lib)
        a = tensor(lib, [1.0, 2.0], requires_grad=grad_mode == "no_grad")
        if grad_mode == "no_grad":
            with lib.no_grad():
                y = fns["Scale"].apply(a, 2.0, 0.5)
        else:
            y = fns["Scale"].apply(a, 2.0, 0.5)
        values.append((y.tolist(), y.requires_grad, y.grad_fn is None))
    assert values[0] == values[1]


def test_once_differentiable_works_once_and_raises_on_double_backward() -> None:
    outcomes = []
    for lib in LIBS:
        cube = make_functions(lib)["Cube"]
        x = tensor(lib, [1.0, -2.0], requires_grad=True)
        g, = lib.autograd.grad(cube.apply(x).sum(), x)
        plain = (g.tolist(), g.requires_grad)
        # The gradient reaching Cube's backward depends on x (through pow), so the double backward goes through it.
        g2, = lib.autograd.grad(cube.apply(x).pow(2).sum(), x, create_graph=True)
        with pytest.raises(RuntimeError, match="trying to differentiate twice a function that was marked with "
                                               "@once_differentiable"):
            g2.sum().backward()
        outcomes.append((plain, g2.tolist(), g2.requires_grad))
    assert outcomes[0] == outcomes[1]


def test_once_differentiable_import_path_under_torch_compat() -> None:
    assert genesis.autograd.function.once_differentiable is genesis.autograd.once_differentiable


def test_custom_function_script_under_torch_compat() -> None:
    _compare("custom_functions.py", [], rtol=1e-12)
