"""``gradcheck`` / ``gradgradcheck``: the same verdicts as ``torch.autograd.gradcheck`` on the same cases."""

from __future__ import annotations

import warnings
from typing import Any, Callable

import pytest
import torch

import genesis
from genesis.autograd.gradcheck import GradcheckError
from tests.helpers import DEVICE

LIBS = (genesis, torch)


def inputs(lib: Any, dtype: str = "float64") -> tuple:
    kw = {"device": DEVICE} if lib is genesis else {}
    x = lib.linspace(-1.0, 1.0, 6, dtype=getattr(lib, dtype), **kw).reshape(2, 3).requires_grad_()
    w = lib.linspace(0.5, -0.3, 12, dtype=getattr(lib, dtype), **kw).reshape(3, 4).requires_grad_()
    return x, w


def functions(lib: Any) -> dict[str, tuple[Callable, bool]]:
    """name -> (function, whether its backward is right)."""

    class Exp(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            y, = ctx.saved_tensors
            return g * y

    class WrongScale(lib.autograd.Function):
        @staticmethod
        def forward(x):
            return x * 2

        @staticmethod
        def setup_context(ctx, inputs, output):
            pass

        @staticmethod
        def backward(ctx, g):
            return g * 3

    return {
        "matmul_tanh": (lambda x, w: (x @ w).tanh(), True),
        "two_outputs": (lambda x, w: (x.sin(), (x @ w).sum(0)), True),
        "exp_function": (lambda x, w: Exp.apply(x) * w.sum(), True),
        "wrong_backward": (lambda x, w: WrongScale.apply(x) + w.sum(), False),
    }


@pytest.mark.parametrize("name", ["matmul_tanh", "two_outputs", "exp_function", "wrong_backward"])
def test_gradcheck_verdicts_match_torch(name: str) -> None:
    verdicts = []
    for lib in LIBS:
        fn, _ = functions(lib)[name]
        verdicts.append(lib.autograd.gradcheck(fn, inputs(lib), raise_exception=False))
    assert verdicts[0] == verdicts[1] == functions(genesis)[name][1]


@pytest.mark.parametrize("name", ["matmul_tanh", "two_outputs", "exp_function"])
def test_gradgradcheck_verdicts_match_torch(name: str) -> None:
    verdicts = []
    for lib in LIBS:
        fn, _ = functions(lib)[name]
        verdicts.append(lib.autograd.gradgradcheck(fn, inputs(lib)))
    assert verdicts == [True, True]


def test_gradgradcheck_catches_a_wrong_double_backward() -> None:
    verdicts = []
    for lib in LIBS:
        class NoDouble(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x ** 2

            @staticmethod
            def backward(ctx, g):
                x, = ctx.saved_tensors
                return g * 2 * x.detach()  # first derivative right, second derivative lost

        x = inputs(lib)[0]
        verdicts.append(lib.autograd.gradgradcheck(NoDouble.apply, (x,), raise_exception=False))
    assert verdicts == [False, False]


def test_mismatch_message_has_torchs_shape() -> None:
    fn, _ = functions(genesis)["wrong_backward"]
    with pytest.raises(GradcheckError, match=r"(?s)Jacobian mismatch for output 0 with respect to input 0,\n"
                                             r"numerical:tensor\(.*\nanalytical:tensor\(") as info:
        genesis.autograd.gradcheck(fn, inputs(genesis))
    assert isinstance(info.value, RuntimeError)


def test_both_import_paths() -> None:
    from genesis.autograd.gradcheck import gradcheck as from_module

    assert from_module is genesis.autograd.gradcheck
    x = inputs(genesis)[0]
    assert from_module(lambda t: t.sin(), (x,))


def test_single_precision_warns_like_torch() -> None:
    messages = []
    for lib in LIBS:
        x = inputs(lib, "float32")[0]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            lib.autograd.gradcheck(lambda t: t * 2, (x,), eps=1e-3, atol=1e-2, rtol=1e-2)
        messages.append([str(w.message).strip() for w in caught if "double precision" in str(w.message)])
    assert messages[0] == messages[1] and messages[0]


def test_inputs_restored_and_errors() -> None:
    x, w = inputs(genesis)
    before = x.tolist()
    genesis.autograd.gradcheck(lambda a, b: a @ b, (x, w))
    assert x.tolist() == before and x.grad is None
    with pytest.raises(ValueError, match="at least one input tensor to require gradient"):
        genesis.autograd.gradcheck(lambda a: a * 2, (x.detach(),))
    with pytest.raises(NotImplementedError, match="batched gradients"):
        genesis.autograd.gradcheck(lambda a: a * 2, (x,), check_batched_grad=True)
    with pytest.raises(NotImplementedError, match="forward-over-reverse"):
        genesis.autograd.gradgradcheck(lambda a: a * 2, (x,), check_fwd_over_rev=True)
    assert genesis.autograd.gradcheck(lambda a: a * 2, (x,), check_forward_ad=False, fast_mode=True)


def _jvp_functions(lib: Any) -> dict[str, tuple[Callable, bool]]:
    """name -> (function with a user Function whose jvp is right or wrong, whether it is right)."""

    class Cube(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_forward(x)
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return g * 3 * x ** 2

        @staticmethod
        def jvp(ctx, t):
            x, = ctx.saved_tensors
            return t * 3 * x ** 2

    class WrongJvp(Cube):
        @staticmethod
        def jvp(ctx, t):
            x, = ctx.saved_tensors
            return t * 2 * x ** 2

    return {
        "cube_jvp": (lambda x, w: Cube.apply(x) @ w, True),
        "wrong_jvp": (lambda x, w: WrongJvp.apply(x) @ w, False),
    }


@pytest.mark.parametrize("name", ["matmul_tanh", "two_outputs", "cube_jvp", "wrong_jvp"])
@pytest.mark.parametrize("check_backward_ad", [True, False])
def test_gradcheck_forward_ad_verdicts_match_torch(name: str, check_backward_ad: bool) -> None:
    """check_forward_ad compares forward-mode AD's Jacobian with the numerical one, as torch's."""
    verdicts = []
    for lib in LIBS:
        fn, right = {**functions(lib), **_jvp_functions(lib)}[name]
        verdicts.append(lib.autograd.gradcheck(fn, inputs(lib), check_forward_ad=True,
                                               check_backward_ad=check_backward_ad, raise_exception=False))
    assert verdicts[0] == verdicts[1] == right


def test_gradcheck_forward_ad_mismatch_message_as_torch() -> None:
    fn, _ = _jvp_functions(genesis)["wrong_jvp"]
    with pytest.raises(GradcheckError, match=r"(?s)Jacobian computed with forward mode mismatch for output 0 with "
                                             r"respect to input 0,\nnumerical:tensor\(.*\nanalytical:tensor\("):
        genesis.autograd.gradcheck(fn, inputs(genesis), check_forward_ad=True)
    # The backward of wrong_jvp is right: without the forward check, or with check_undefined_grad off, it passes.
    assert genesis.autograd.gradcheck(fn, inputs(genesis), check_undefined_grad=False)
