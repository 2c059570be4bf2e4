"""torch.autograd APIs against torch: ``ctx.mark_dirty`` in custom Functions, ``graph.register_multi_grad_hook`` and
forward-mode AD (``autograd.forward_ad``)."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
import torch

import genesis
from tests.helpers import DEVICE, to_genesis, to_torch

LIBS = (genesis, torch)


def _tensor(lib: Any, values: np.ndarray, requires_grad: bool = False) -> Any:
    t = torch.tensor(values)
    return to_genesis(t, requires_grad=requires_grad) if lib is genesis else t.requires_grad_(requires_grad)


def _numpy(t: Any) -> np.ndarray:
    return (to_torch(t) if isinstance(t, genesis.Tensor) else t.detach()).numpy()


def _version(t: Any) -> int:
    return t._version


# ------------------------------------------------------------------ ctx.mark_dirty


def _dirty_functions(lib: Any) -> dict[str, type]:
    function = lib.autograd.Function

    class Double(function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 2

    class AddInto(function):
        """x += y in place; returns (x, 3 y)."""

        @staticmethod
        def forward(ctx, x, y):
            x.add_(y)
            ctx.mark_dirty(x)
            return x, y * 3

        @staticmethod
        def backward(ctx, gx, gy):
            return gx, gx + 3 * gy

    class SquareSaved(function):
        """x = x * x in place, saving the result (the dirty output) for backward."""

        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x.clone())
            x.mul_(x)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            (old,) = ctx.saved_tensors
            return 2 * old * g

    class NotReturned(function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return g

    return {"Double": Double, "AddInto": AddInto, "SquareSaved": SquareSaved, "NotReturned": NotReturned}


def test_mark_dirty_returns_the_input_with_the_node_as_history() -> None:
    values = np.array([1.0, -2.0, 3.0])
    results = []
    for lib in LIBS:
        fns = _dirty_functions(lib)
        a = _tensor(lib, values, requires_grad=True)
        b = a.clone()
        before = _version(b)
        c = fns["Double"].apply(b)
        assert c is b and c.grad_fn is b.grad_fn and type(c.grad_fn).__name__ == "DoubleBackward"
        steps = _version(b) - before
        (c * c).sum().backward()
        results.append((steps, _numpy(b), _numpy(a.grad)))
    (g_steps, g_val, g_grad), (t_steps, t_val, t_grad) = results
    assert g_steps == t_steps == 2  # forward's mul_ and mark_dirty, as torch counts
    np.testing.assert_allclose(g_val, t_val)
    np.testing.assert_allclose(g_grad, t_grad)


def test_mark_dirty_of_one_of_several_outputs_and_of_an_input_without_grad() -> None:
    results = []
    for lib in LIBS:
        fns = _dirty_functions(lib)
        p = _tensor(lib, np.array([1.0, 2.0]), requires_grad=True)
        q = _tensor(lib, np.array([2.0, 5.0]), requires_grad=True)
        pc = p.clone()
        o1, o2 = fns["AddInto"].apply(pc, q)
        assert o1 is pc and o1.grad_fn is o2.grad_fn
        (o1 * 5 + o2).sum().backward()
        plain = _tensor(lib, np.array([1.0, 1.0]))
        r1, _ = fns["AddInto"].apply(plain, q)  # an input without grad changed in place takes the node's history
        assert r1 is plain and plain.requires_grad and plain.grad_fn is not None
        results.append((_numpy(p.grad), _numpy(q.grad), _numpy(plain)))
    for g, t in zip(*results):
        np.testing.assert_allclose(g, t)


def test_mark_dirty_saved_output_view_and_earlier_saved_values() -> None:
    results = []
    for lib in LIBS:
        fns = _dirty_functions(lib)
        a = _tensor(lib, np.array([1.0, 2.0, 3.0]), requires_grad=True)
        s = fns["SquareSaved"].apply(a.clone())
        s.sum().backward()
        grad_saved = _numpy(a.grad)
        a.grad = None
        base = a.clone()
        view = base[:2]
        out = fns["Double"].apply(view)  # through a view: the base's history records the write
        assert out is view and type(base.grad_fn).__name__ == "CopySlices"
        base.sum().backward()
        grad_view = _numpy(a.grad)
        stale = a.clone()
        product = stale * stale  # saved stale at its old version
        fns["Double"].apply(stale)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            product.sum().backward()
        results.append((grad_saved, grad_view, _numpy(base)))
    for g, t in zip(*results):
        np.testing.assert_allclose(g, t)


def test_mark_dirty_errors_as_torch() -> None:
    for lib in LIBS:
        fns = _dirty_functions(lib)
        leaf = _tensor(lib, np.ones(3), requires_grad=True)
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad has been used in an in-place"):
            fns["Double"].apply(leaf)
        with pytest.raises(RuntimeError, match="view of a leaf Variable that requires grad"):
            fns["Double"].apply(_tensor(lib, np.ones(3), requires_grad=True)[:2])
        for x in (_tensor(lib, np.ones(3), requires_grad=True).clone(), _tensor(lib, np.ones(3))):
            with pytest.raises(RuntimeError, match="marked as dirty during the forward method were not returned"):
                fns["NotReturned"].apply(x)
        plain = _tensor(lib, np.ones(3))
        out = fns["Double"].apply(plain)  # nothing recorded: the input itself, changed, its version moved on
        assert out is plain and not out.requires_grad and _version(plain) == 2
        np.testing.assert_allclose(_numpy(plain), 2.0)


# ------------------------------------------------------------------ graph.register_multi_grad_hook


def test_multi_grad_hook_all_mode_as_torch() -> None:
    results = []
    for lib in LIBS:
        a = _tensor(lib, np.ones((2, 3)), requires_grad=True)
        b = _tensor(lib, np.full((2, 3), 2.0), requires_grad=True)
        c, d = a * b, a * b
        seen: list = []
        handle = lib.autograd.graph.register_multi_grad_hook(
            (a, b, c, d), lambda grads, seen=seen: seen.append([None if g is None else float(g.sum()) for g in grads]))
        c.sum().backward(retain_graph=True)
        c.sum().backward(inputs=(a,), retain_graph=True)  # b is not on the way to the inputs
        (c.sum() + 2 * d.sum()).backward(retain_graph=True)
        handle.remove()
        c.sum().backward(retain_graph=True)
        results.append(seen)
    assert results[0] == results[1] == [[12.0, 6.0, 6.0, None], [12.0, None, 6.0, None], [36.0, 18.0, 6.0, 12.0]]


def test_multi_grad_hook_all_mode_with_autograd_grad_of_a_non_leaf() -> None:
    results = []
    for lib in LIBS:
        a = _tensor(lib, np.ones(3), requires_grad=True)
        c = a * 2
        e = c.exp()
        seen: list = []
        lib.autograd.graph.register_multi_grad_hook(
            (c, e), lambda grads, seen=seen: seen.append([g is not None for g in grads]))
        lib.autograd.grad(e.sum(), c, retain_graph=True)
        lib.autograd.grad(c.sum(), a)
        results.append(seen)
    assert results[0] == results[1] == [[True, True], [True, False]]


def test_multi_grad_hook_any_mode_and_bad_mode() -> None:
    results = []
    for lib in LIBS:
        a = _tensor(lib, np.ones(2), requires_grad=True)
        b = _tensor(lib, np.ones(3), requires_grad=True)
        plain = _tensor(lib, np.ones(2))
        seen: list = []
        handle = lib.autograd.graph.register_multi_grad_hook(
            (a, b, plain), lambda g, seen=seen: seen.append(tuple(g.shape)), mode="any")
        (a.sum() * b.sum()).backward()
        (3 * b).sum().backward()
        handle.remove()
        a.sum().backward()
        results.append(seen)
        with pytest.raises(ValueError, match="Expects mode to be one of"):
            lib.autograd.graph.register_multi_grad_hook((a,), print, mode="some")
    assert len(results[0]) == len(results[1]) == 2 and results[0][1] == results[1][1] == (3,)


def test_leaf_hooks_run_in_autograd_grad_before_capture() -> None:
    """torch runs a leaf's tensor hooks in ``autograd.grad`` too, and returns the hooked gradient."""
    results = []
    for lib in LIBS:
        x = _tensor(lib, np.ones(2), requires_grad=True)
        x.register_hook(lambda g: g * 3)
        (g,) = lib.autograd.grad((x * 2).sum(), x)
        y = _tensor(lib, np.ones(2), requires_grad=True)
        y.register_hook(lambda g: g * 5)
        (y * 2).sum().backward(inputs=[y])
        results.append((_numpy(g), _numpy(y.grad)))
    for g, t in zip(*results):
        np.testing.assert_allclose(g, t)


# ------------------------------------------------------------------ forward_ad


def _forward_cases(lib: Any) -> dict[str, Any]:
    F = lib.nn.functional
    return {
        "sin_exp": lambda d, w: d.sin() * d.exp(),
        "matmul": lambda d, w: d @ w,
        "sum": lambda d, w: (d * d).sum(dim=1),
        "softmax_mean": lambda d, w: lib.softmax(d, dim=-1).mean(),
        "index": lambda d, w: d[1:, ::2] * 2,
        "tanh_pow_div": lambda d, w: lib.tanh(d) ** 3 / (1 + d * d),
        "linear_relu": lambda d, w: F.linear(d, w.T).relu(),
        "layer_norm": lambda d, w: F.layer_norm(d, (4,)),
        "cat_reshape": lambda d, w: lib.cat([d, d * 2]).reshape(-1),
        "max_dim": lambda d, w: d.max(dim=1)[0],
        "floor": lambda d, w: d.floor() + d,
        "dual_times_dual": lambda d, w: d * d.cos(),
        "lstm_layers": lambda d, w: _recurrent(lib, "LSTM", d)[0],
        "gru_final_state": lambda d, w: _recurrent(lib, "GRU", d)[1],
    }


def _recurrent(lib: Any, name: str, d: Any) -> Any:
    """A bidirectional two-layer ``name`` (weights from a formula, frozen) over the (3, 4) dual as an unbatched
    sequence: (output, final hidden state)."""
    module = getattr(lib.nn, name)(4, 5, num_layers=2, bidirectional=True, dtype=lib.float64, device=d.device)
    module.requires_grad_(False)  # only the dual carries a gradient, as in the other cases
    with lib.no_grad():
        for i, p in enumerate(module.parameters()):
            p.copy_(lib.sin(lib.arange(p.numel(), dtype=lib.float64, device=d.device) * 0.7 + i).reshape(p.shape))
    out, state = module(d)
    return out, state[0] if name == "LSTM" else state


def _run_dual(lib: Any, name: str, requires_grad: bool, grad_mode: bool) -> tuple:
    fw = lib.autograd.forward_ad
    rng = np.random.default_rng(0)
    x = _tensor(lib, rng.standard_normal((3, 4)), requires_grad=requires_grad)
    tangent = _tensor(lib, rng.standard_normal((3, 4)))
    w = _tensor(lib, rng.standard_normal((4, 5)))
    with lib.set_grad_enabled(grad_mode), fw.dual_level():
        dual = fw.make_dual(x, tangent)
        y = _forward_cases(lib)[name](dual, w)
        primal, out_tangent = fw.unpack_dual(y)
        flags = (dual.requires_grad, y.requires_grad, primal.requires_grad)
    grad = None
    if y.requires_grad:
        (y * y).sum().backward()  # reverse mode through the dual's history works as without forward AD
        grad = _numpy(x.grad)
    return _numpy(primal), _numpy(out_tangent), flags, grad


@pytest.mark.parametrize("name", list(_forward_cases(torch)))
@pytest.mark.parametrize("requires_grad,grad_mode", [(False, True), (True, True), (True, False)])
def test_forward_ad_matches_torch(name: str, requires_grad: bool, grad_mode: bool) -> None:
    g = _run_dual(genesis, name, requires_grad, grad_mode)
    t = _run_dual(torch, name, requires_grad, grad_mode)
    np.testing.assert_allclose(g[0], t[0], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(g[1], t[1], rtol=1e-9, atol=1e-10)
    assert g[2] == t[2]
    assert (g[3] is None) == (t[3] is None)
    if t[3] is not None:
        np.testing.assert_allclose(g[3], t[3], rtol=1e-9, atol=1e-10)


def test_forward_ad_levels_and_unpacking() -> None:
    for lib in LIBS:
        fw = lib.autograd.forward_ad
        x, v = _tensor(lib, np.ones(3)), _tensor(lib, np.arange(3.0))
        assert fw.unpack_dual(x).tangent is None and fw.unpack_dual(x).primal is x
        with pytest.raises(RuntimeError, match="no level exists"):
            fw.make_dual(x, v)
        with fw.dual_level() as level:
            assert level == 0
            dual = fw.make_dual(x, v)
            unpacked = fw.unpack_dual(dual)
            assert isinstance(unpacked, fw.UnpackedDualTensor) and unpacked._fields == ("primal", "tangent")
            assert unpacked.tangent is v and fw.unpack_dual(unpacked.primal).tangent is None
            assert fw.unpack_dual(dual.argmax()).tangent is None  # integer outputs carry no tangent
            assert fw.unpack_dual(dual.detach()).tangent is None
            with pytest.raises(RuntimeError, match="Nested forward mode AD is not supported"):
                fw.enter_dual_level()
            with pytest.raises(RuntimeError, match="already has a forward gradient"):
                fw.make_dual(dual, v)
            with pytest.raises(RuntimeError, match="different size"):
                fw.make_dual(x, _tensor(lib, np.ones(2)))
            with pytest.raises(ValueError, match="Expected tangent to be floating point"):
                fw.make_dual(x, _tensor(lib, np.ones(3, dtype=np.int64)))
            with pytest.raises(ValueError, match="Expected primal to be floating point"):
                fw.make_dual(_tensor(lib, np.ones(3, dtype=np.int64)), v)
        assert fw.unpack_dual(dual).tangent is None  # tangents go with their level
        with pytest.raises(RuntimeError):
            fw.exit_dual_level()
        assert fw.enter_dual_level() == 0
        fw.exit_dual_level(level=0)


def _custom_functions(lib: Any) -> tuple[type, type]:
    class ScaleWithJvp(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, y, k):
            ctx.save_for_forward(x, y)
            ctx.k = k
            return x * y * k

        @staticmethod
        def jvp(ctx, tx, ty, tk):
            assert tk is None  # not a tensor
            x, y = ctx.saved_tensors
            return (tx * y + x * ty) * ctx.k

        @staticmethod
        def backward(ctx, g):
            return g, g, None

    class NoJvp(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    return ScaleWithJvp, NoJvp


def test_forward_ad_custom_functions_as_torch() -> None:
    results = []
    for lib in LIBS:
        fw = lib.autograd.forward_ad
        with_jvp, no_jvp = _custom_functions(lib)
        x, y = _tensor(lib, np.array([1.0, 2.0])), _tensor(lib, np.array([3.0, -1.0]))
        with fw.dual_level():
            out = with_jvp.apply(fw.make_dual(x, _tensor(lib, np.array([1.0, 0.5]))), y, 2.0)
            results.append(_numpy(fw.unpack_dual(out).tangent))
            with pytest.raises(NotImplementedError, match="You must implement the jvp function"):
                no_jvp.apply(fw.make_dual(x, y))
            assert fw.unpack_dual(no_jvp.apply(x)).tangent is None  # no dual input: no jvp needed
    np.testing.assert_allclose(results[0], results[1])


def test_forward_ad_custom_jvp_uses_and_deletes_ctx_attributes() -> None:
    # The forward-mode AD tutorial's Function keeps its result on ctx and deletes it in jvp.
    results = []
    for lib in LIBS:
        fw = lib.autograd.forward_ad

        class Exp(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.result = x.exp()
                return ctx.result

            @staticmethod
            def jvp(ctx, t):
                out = t * ctx.result
                del ctx.result
                ctx.used = True
                return out

        with fw.dual_level():
            out = Exp.apply(fw.make_dual(_tensor(lib, np.array([0.0, 1.0])), _tensor(lib, np.array([1.0, 2.0]))))
            results.append(_numpy(fw.unpack_dual(out).tangent))
    np.testing.assert_allclose(results[0], results[1])


def test_forward_ad_unsupported_cases_raise() -> None:
    fw = genesis.autograd.forward_ad
    x = genesis.randn(5, 2, 3, device=DEVICE)
    with fw.dual_level():
        dual = fw.make_dual(x, genesis.ones_like(x))
        changed = dual * 2
        changed[0].mul_(3)  # through a view: the base's tangent is not updated
        with pytest.raises(NotImplementedError, match="modified in place"):
            fw.unpack_dual(changed)
        with pytest.raises(NotImplementedError, match="modified in place"):
            changed.sin()


def _inplace_cases(lib: Any) -> dict[str, Any]:
    """name -> f(dual, plain): an in-place op on a plain tensor or on a dual one; returns the changed tensor."""
    return {
        "plain_add_dual": lambda d, z: z.add_(d),
        "plain_mul_dual": lambda d, z: z.mul_(d),
        "plain_sub_dual_alpha": lambda d, z: z.sub_(d, alpha=2.5),
        "plain_copy_dual": lambda d, z: z.copy_(d),
        "plain_addcmul_dual": lambda d, z: z.addcmul_(d, d, value=0.5),
        "dual_mul_number": lambda d, z: (d * 1).mul_(3),
        "dual_exp": lambda d, z: (d * 1).exp_(),
        "dual_add_plain": lambda d, z: (d * 1).add_(z),
        "dual_pow": lambda d, z: (d * 1).pow_(2),
        "dual_view_tangent": lambda d, z: (d * 2)[1:, ::2],
        "dual_view_of_view": lambda d, z: d.t().reshape(-1)[2:5],
    }


@pytest.mark.parametrize("name", list(_inplace_cases(torch)))
@pytest.mark.parametrize("requires_grad", [False, True])
def test_forward_ad_in_place_and_views_match_torch(name: str, requires_grad: bool) -> None:
    """An in-place op with a dual operand gives the changed tensor a tangent, as torch's; so does a view."""
    results = []
    for lib in LIBS:
        fw = lib.autograd.forward_ad
        rng = np.random.default_rng(1)
        x = _tensor(lib, rng.standard_normal((3, 4)), requires_grad=requires_grad)
        tangent, plain = _tensor(lib, rng.standard_normal((3, 4))), _tensor(lib, rng.standard_normal((3, 4)))
        with fw.dual_level():
            out = _inplace_cases(lib)[name](fw.make_dual(x, tangent), plain)
            primal, out_tangent = fw.unpack_dual(out)
            results.append((_numpy(primal), _numpy(out_tangent)))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-12)
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-10, atol=1e-12)


def test_forward_ad_inside_a_profile() -> None:
    """The forward-AD interceptor and the profiler's recorder share ``Function.apply``'s hook: both work at once."""
    fw = genesis.autograd.forward_ad
    x = genesis.ones(3, device=DEVICE)
    with genesis.profiler.profile() as prof, fw.dual_level():
        tangent = fw.unpack_dual(fw.make_dual(x, genesis.ones_like(x)).sin()).tangent
    np.testing.assert_allclose(_numpy(tangent), np.cos(1.0), rtol=1e-6)
    assert any(e.name == "Sin" for e in prof.events())


def test_reading_the_grad_of_a_non_leaf_warns_as_torch() -> None:
    for lib in (torch, genesis):
        x = lib.ones(2, requires_grad=True)
        y = x * 2
        with pytest.warns(UserWarning, match="The .grad attribute of a Tensor that is not a leaf Tensor"):
            assert y.grad is None
        y.retain_grad()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            y.sum().backward()
            assert y.grad is not None and x.grad is not None  # retained, and a leaf: no warning
        z = x * 3
        (z * z).sum().backward(inputs=[z])  # filled by backward(inputs=...): no warning either
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert z.grad is not None


def test_unused_input_message_is_torchs() -> None:
    # torch 2.13's wording (an older torch oracle words it differently: only its class is checked)
    for lib, match in ((torch, None), (genesis, "The differentiated Tensor at index 1 appears to not have been used")):
        x, w = lib.ones(2, requires_grad=True), lib.ones(2, requires_grad=True)
        with pytest.raises(RuntimeError, match=match):
            lib.autograd.grad((x * 2).sum(), [x, w])


@pytest.mark.parametrize("op", ["sort", "topk", "kthvalue"])
def test_dropped_non_differentiable_output_unpacks_without_history(op: str) -> None:
    # The indices these ops save are an output the program drops at once: unpacked for the gradient, they are not
    # differentiable, so the first-order gradient of a piecewise-linear function has no history (as torch's).
    values = np.array([[3.0, 1.0, 2.0], [0.5, 4.0, -1.0]], dtype=np.float32)
    results = []
    for lib in LIBS:
        x = _tensor(lib, values, requires_grad=True)
        picked = {"sort": lambda t: t.sort(dim=1)[0], "topk": lambda t: t.topk(2, dim=1)[0],
                  "kthvalue": lambda t: t.kthvalue(2, dim=1)[0]}[op](x)
        (g,) = lib.autograd.grad((picked * -1.5).sum(), x, create_graph=True)
        results.append((g.requires_grad, _numpy(g)))
    assert results[0][0] == results[1][0]
    np.testing.assert_allclose(results[0][1], results[1][1])


def test_version_counter_is_an_int_shared_with_views_as_torch() -> None:
    def counts(lib: Any) -> list:
        x = lib.zeros(4)
        v = x[1:]
        d = x.detach()
        out = [x._version]
        x.add_(1)
        v.mul_(2)
        d[0] = 3
        out += [x._version, v._version, d._version, type(x._version).__name__]
        return out

    assert counts(genesis) == counts(torch)
