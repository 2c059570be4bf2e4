"""Mixed precision against torch: autocast output dtypes op by op, autocast state, GradScaler trajectory."""

from __future__ import annotations

import math
import threading
import warnings

import pytest
import torch

import genesis
from genesis import amp, optim
from genesis.cuda import amp as cuda_amp
from tests.helpers import DEVICE, assert_same, check, rand, to_genesis

LOOSE = {"rtol": 3e-2, "atol": 3e-2}


# The lower precision autocast picks by default: torch's choice per device.
LOW = genesis.bfloat16 if DEVICE == "cpu" else genesis.float16


def _autocast(lib: object) -> object:
    # The torch oracle computes on the CPU; Genesis applies the same op policy on every device.
    return lib.autocast(DEVICE if lib is genesis else "cpu", dtype=lib.bfloat16)


def _nn_f(lib: object) -> object:
    return lib.nn.functional


OPS = {
    "matmul": (lambda lib, a, b: a @ b, [(4, 5), (5, 3)]),
    "mm": (lambda lib, a, b: lib.mm(a, b), [(4, 5), (5, 3)]),
    "bmm": (lambda lib, a, b: lib.bmm(a, b), [(2, 4, 5), (2, 5, 3)]),
    "baddbmm": (lambda lib, c, a, b: lib.baddbmm(c, a, b), [(2, 4, 3), (2, 4, 5), (2, 5, 3)]),
    "addmm": (lambda lib, c, a, b: lib.addmm(c, a, b), [(4, 3), (4, 5), (5, 3)]),
    "linear": (lambda lib, x, w, b: _nn_f(lib).linear(x, w, b), [(3, 5), (4, 5), (4,)]),
    "linear_3d": (lambda lib, x, w: _nn_f(lib).linear(x, w), [(2, 3, 5), (4, 5)]),
    "conv2d": (lambda lib, x, w, b: _nn_f(lib).conv2d(x, w, b, padding=1), [(2, 3, 5, 5), (4, 3, 3, 3), (4,)]),
    "conv1d": (lambda lib, x, w: _nn_f(lib).conv1d(x, w), [(2, 3, 6), (4, 3, 2)]),
    "conv_transpose2d": (lambda lib, x, w: _nn_f(lib).conv_transpose2d(x, w, stride=2), [(1, 3, 4, 4), (3, 2, 3, 3)]),
    "sdpa": (lambda lib, q, k, v: _nn_f(lib).scaled_dot_product_attention(q, k, v), [(1, 2, 4, 8)] * 3),
    "softmax": (lambda lib, x: lib.softmax(x, -1), [(3, 5)]),
    "log_softmax": (lambda lib, x: _nn_f(lib).log_softmax(x, -1), [(3, 5)]),
    "layer_norm": (lambda lib, x: _nn_f(lib).layer_norm(x, (5,)), [(3, 5)]),
    "exp": (lambda lib, x: x.exp(), [(3, 5)]),
    "log": (lambda lib, x: (x.abs() + 1).log(), [(3, 5)]),
    "sum": (lambda lib, x: x.sum(), [(3, 5)]),
    "prod": (lambda lib, x: (x * 0.1 + 1).prod(), [(3, 5)]),
    "mse_loss": (lambda lib, x, y: _nn_f(lib).mse_loss(x, y), [(3, 5), (3, 5)]),
    "l1_loss": (lambda lib, x, y: _nn_f(lib).l1_loss(x, y), [(3, 5), (3, 5)]),
    "smooth_l1_loss": (lambda lib, x, y: _nn_f(lib).smooth_l1_loss(x, y), [(3, 5), (3, 5)]),
    "huber_loss": (lambda lib, x, y: _nn_f(lib).huber_loss(x, y), [(3, 5), (3, 5)]),
    "kl_div": (lambda lib, x, y: _nn_f(lib).kl_div(x, y.sigmoid(), reduction="batchmean"), [(3, 5), (3, 5)]),
    "bce_with_logits": (lambda lib, x, y: _nn_f(lib).binary_cross_entropy_with_logits(x, y.sigmoid()),
                        [(3, 5), (3, 5)]),
    "bce": (lambda lib, x, y: _nn_f(lib).binary_cross_entropy(x.sigmoid(), y.sigmoid()), [(3, 5), (3, 5)]),
    "matmul_then_loss": (lambda lib, a, b: _nn_f(lib).mse_loss(a @ b, (a @ b).detach() * 0.5), [(4, 5), (5, 3)]),
    "dot": (lambda lib, a, b: lib.dot(a, b), [(6,), (6,)]),
    "prelu": (lambda lib, x, w: _nn_f(lib).prelu(x, w), [(2, 3, 4), (3,)]),
}


@pytest.mark.parametrize("input_dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("name", sorted(OPS))
def test_output_dtypes_match_torch_autocast(name: str, input_dtype: torch.dtype) -> None:
    fn, shapes = OPS[name]

    def under_autocast(lib: object, *xs: object) -> object:
        with _autocast(lib):
            return fn(lib, *xs)

    inputs = [rand(*shape, seed=i, dtype=input_dtype) for i, shape in enumerate(shapes)]
    if DEVICE == "cpu":
        check(under_autocast, *inputs, **LOOSE)
        return
    # On a GPU the oracle is torch's CUDA autocast, which has its own op lists: run torch on the GPU too.
    try:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            expected = fn(torch, *[x.detach().cuda() for x in inputs])
    except RuntimeError as err:  # ops torch refuses under CUDA autocast must be refused alike
        with pytest.raises(RuntimeError, match="unsafe to autocast"), genesis.autocast(DEVICE, dtype=genesis.bfloat16):
            fn(genesis, *[to_genesis(x, requires_grad=False) for x in inputs])
        assert "unsafe to autocast" in str(err)
        return
    with genesis.autocast(DEVICE, dtype=genesis.bfloat16):
        got = fn(genesis, *[to_genesis(x, requires_grad=False) for x in inputs])
    assert_same(got, expected.cpu(), **LOOSE)


def test_sdpa_casts_its_float_mask_too() -> None:
    # torch's autocast casts every floating argument: finfo(float32).min becomes -inf in bfloat16, so a query whose
    # keys are all masked (HF's padding rows) gets zeros, not the mean of the values.
    if DEVICE != "cpu":
        pytest.skip("torch's CPU kernel is the oracle of fully masked rows")
    mask = torch.zeros(4, 4)
    mask[0] = torch.finfo(torch.float32).min

    def f(lib: object, q: object, m: object) -> object:
        with _autocast(lib):
            return _nn_f(lib).scaled_dot_product_attention(q, q * 0.5, q.flip(-1), attn_mask=m)

    out = check(f, rand(1, 2, 4, 8, dtype=torch.float32), mask, **LOOSE)
    assert not out[0, :, 0].any()


def test_cross_entropy_and_nll_run_in_float32() -> None:
    target = torch.tensor([0, 2, 1])

    def ce(lib: object, x: object, t: object) -> object:
        with _autocast(lib):
            logits = x @ x.T
            return _nn_f(lib).cross_entropy(logits, t), _nn_f(lib).nll_loss(logits.log_softmax(1), t)

    check(ce, rand(3, 3, seed=1, dtype=torch.float32), target, **LOOSE)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_of_half_logits_under_autocast(reduction: str) -> None:
    """Half-precision logits (a linear layer's output under autocast): the loss is float32 and every gradient as
    torch's, with ignored rows (on CUDA the fused kernel reads the half logits without a float32 copy)."""
    target = torch.tensor([0, -1, 3, 2, -1, 1])

    def ce(lib: object, x: object, w: object, t: object) -> object:
        with _autocast(lib):
            return _nn_f(lib).cross_entropy(x @ w, t, ignore_index=-1, reduction=reduction)

    check(ce, rand(6, 5, seed=2, dtype=torch.float32), rand(5, 4, seed=3, dtype=torch.float32), target, **LOOSE)


def test_float64_is_never_cast_and_other_devices_are_untouched() -> None:
    a = genesis.ones(2, 2, dtype=genesis.float64, device=DEVICE)
    with genesis.autocast(DEVICE):
        assert (a @ a).dtype is genesis.float64
    other = "cuda" if DEVICE == "cpu" else "cpu"
    b = genesis.ones(2, 2, device=DEVICE)
    with genesis.autocast(other, enabled=other == "cpu" or genesis.cuda.is_available()):
        assert (b @ b).dtype is genesis.float32


def test_nesting_disable_and_decorator() -> None:
    a = genesis.ones(2, 2, device=DEVICE)
    assert not amp.is_autocast_enabled(DEVICE)
    with genesis.autocast(DEVICE):
        assert amp.is_autocast_enabled(DEVICE) and (a @ a).dtype is LOW
        with genesis.autocast(DEVICE, enabled=False):
            assert (a @ a).dtype is genesis.float32
            with genesis.autocast(DEVICE, dtype=genesis.float16):
                assert (a @ a).dtype is genesis.float16
                assert amp.get_autocast_dtype(DEVICE) is genesis.float16
            assert (a @ a).dtype is genesis.float32
        assert (a @ a).dtype is LOW
    assert (a @ a).dtype is genesis.float32 and not amp.is_autocast_enabled(DEVICE)

    @genesis.autocast(DEVICE)
    def product(x: genesis.Tensor) -> genesis.Tensor:
        return x @ x

    assert product(a).dtype is LOW
    assert (a @ a).dtype is genesis.float32


def test_autocast_exits_cleanly_on_exceptions() -> None:
    with pytest.raises(ValueError):
        with genesis.autocast(DEVICE):
            raise ValueError("boom")
    assert not amp.is_autocast_enabled(DEVICE)


def test_state_is_thread_local() -> None:
    a = genesis.ones(2, 2, device=DEVICE)
    seen = []
    with genesis.autocast(DEVICE):
        thread = threading.Thread(target=lambda: seen.append((a @ a).dtype))
        thread.start()
        thread.join()
        assert (a @ a).dtype is LOW
    assert seen == [genesis.float32]


def test_bad_arguments() -> None:
    with pytest.raises(RuntimeError, match="unsupported autocast device_type 'tpu'"):
        genesis.autocast("tpu")
    with pytest.raises(RuntimeError):
        torch.autocast("tpu")
    with pytest.warns(UserWarning, match="Disabling autocast"):
        ctx = genesis.autocast("cpu", dtype=genesis.float64)
    with ctx:
        assert not amp.is_autocast_enabled("cpu")


def test_cuda_autocast_without_cuda_is_disabled_with_a_warning() -> None:
    """Older scripts enter ``torch.cuda.amp.autocast()`` unconditionally; without CUDA torch warns and the region
    runs in full precision."""
    if genesis.cuda.is_available():
        pytest.skip("needs a machine without CUDA")
    a = genesis.ones(2, 2)
    for make in (lambda: genesis.autocast("cuda"), cuda_amp.autocast):
        with pytest.warns(UserWarning, match="CUDA is not available"):
            ctx = make()
        with ctx:
            assert not amp.is_autocast_enabled("cuda") and not amp.is_autocast_enabled()
            assert (a @ a).dtype is genesis.float32
    with pytest.warns(UserWarning, match="CUDA is not available"), torch.autocast("cuda"):
        assert not torch.is_autocast_enabled("cuda")


def test_older_amp_spellings_warn_as_torch() -> None:
    """``torch.cuda.amp`` / ``torch.cpu.amp`` constructors and decorators are deprecated in torch: a FutureWarning
    naming the new spelling (the disabled CUDA scaler also warns that CUDA is missing)."""
    if genesis.cuda.is_available():
        pytest.skip("needs a machine without CUDA, as torch's oracle here")
    seen = []
    for lib in (torch, genesis):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            lib.cuda.amp.GradScaler()
            lib.cpu.amp.GradScaler()
            lib.cpu.amp.autocast()
            lib.cuda.amp.custom_fwd(lambda: None)
            lib.cuda.amp.custom_bwd(lambda: None)
        seen.append([(w.category.__name__, str(w.message)) for w in caught])
    assert seen[0] == seen[1]


def test_gradients_reach_float32_parameters_in_float32() -> None:
    w_t = rand(5, 3, seed=3, dtype=torch.float32)
    x_t = rand(4, 5, seed=4, dtype=torch.float32, requires_grad=False)
    w, x = to_genesis(w_t), to_genesis(x_t)
    with genesis.autocast(DEVICE):
        loss = genesis.nn.functional.mse_loss(x @ w, genesis.zeros(4, 3, device=DEVICE))
    loss.backward()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        t_loss = torch.nn.functional.mse_loss(x_t @ w_t, torch.zeros(4, 3))
    t_loss.backward()
    assert loss.dtype is genesis.float32
    assert_same(w.grad, w_t.grad, **LOOSE)


# ------------------------------------------------------------------ GradScaler


def _scaler_run(lib: object, inf_steps: set[int], steps: int = 14) -> tuple[list, list, object, dict]:
    w_t = torch.linspace(-1, 1, 6, dtype=torch.float32).reshape(2, 3)
    w = w_t.clone().requires_grad_() if lib is torch else to_genesis(w_t, requires_grad=True)
    x_t = torch.linspace(0.5, 1.5, 6, dtype=torch.float32).reshape(3, 2)
    x = x_t if lib is torch else to_genesis(x_t)
    opt = lib.optim.SGD([w], lr=0.01, momentum=0.9)
    scaler = (lib.amp.GradScaler("cpu", init_scale=2.0**10, growth_factor=4.0, backoff_factor=0.25,
                                 growth_interval=3))
    scales, skipped = [], []
    for step in range(steps):
        opt.zero_grad()
        loss = ((w @ x) ** 2).mean()
        if step in inf_steps:
            loss = loss * math.inf
        scaler.scale(loss).backward()
        before = w.detach().clone()
        scaler.step(opt)
        skipped.append(bool((w.detach() == before).all()))
        scaler.update()
        scales.append(scaler.get_scale())
    return scales, skipped, w, scaler.state_dict()


def test_grad_scaler_follows_torch_trajectory_with_injected_inf() -> None:
    inf_steps = {2, 7, 8, 12}
    g_scales, g_skipped, g_w, g_state = _scaler_run(genesis, inf_steps)
    t_scales, t_skipped, t_w, t_state = _scaler_run(torch, inf_steps)
    assert g_scales == t_scales
    assert g_skipped == t_skipped == [s in inf_steps for s in range(14)]
    assert_same(g_w, t_w)
    assert g_state == t_state


def test_grad_scaler_unscale_then_clip_and_stage_errors() -> None:
    w = genesis.ones(3, requires_grad=True)
    opt = optim.SGD([w], lr=0.1)
    scaler = amp.GradScaler("cpu", init_scale=8.0)
    scaled = scaler.scale((w * 2).sum())
    assert scaled.item() == 48.0
    scaled.backward()
    assert w.grad.tolist() == [16.0, 16.0, 16.0]
    scaler.unscale_(opt)
    assert w.grad.tolist() == [2.0, 2.0, 2.0]
    with pytest.raises(RuntimeError, match="unscale_\\(\\) has already been called"):
        scaler.unscale_(opt)
    scaler.step(opt)
    with pytest.raises(RuntimeError, match="step\\(\\) has already been called"):
        scaler.step(opt)
    with pytest.raises(RuntimeError, match="after step"):
        scaler.unscale_(opt)
    scaler.update()
    assert w.tolist() == pytest.approx([0.8, 0.8, 0.8])
    with pytest.raises(RuntimeError, match="Closure"):
        scaler.step(opt, closure=lambda: None)


def test_grad_scaler_state_dict_and_disabled() -> None:
    scaler = amp.GradScaler("cpu", init_scale=4.0, growth_interval=7)
    other = amp.GradScaler("cpu")
    other.load_state_dict(scaler.state_dict())
    assert other.get_scale() == 4.0 and other.get_growth_interval() == 7
    off = amp.GradScaler("cpu", enabled=False)
    loss = genesis.ones((), device=DEVICE)
    assert off.scale(loss) is loss and off.get_scale() == 1.0 and off.state_dict() == {}
    with pytest.raises(RuntimeError, match="empty"):
        other.load_state_dict({})
    with pytest.raises(AssertionError, match="growth factor must be > 1.0"):
        amp.GradScaler("cpu", growth_factor=0.5)
    w = genesis.ones(2, requires_grad=True)
    opt = optim.SGD([w], lr=1.0)
    (w.sum() * 1).backward()
    off.step(opt)
    assert w.tolist() == [0.0, 0.0]


def test_grad_scaler_rejects_fp16_gradients_and_update_before_scale() -> None:
    w = genesis.ones(2, dtype=genesis.float16, requires_grad=True)
    opt = optim.SGD([w], lr=1.0)
    scaler = amp.GradScaler("cpu")
    with pytest.raises(AssertionError, match="Attempted update but _scale is None"):
        scaler.update()
    scaler.scale(w.float().sum()).backward()
    with pytest.raises(ValueError, match="FP16 gradients"):
        scaler.unscale_(opt)


def test_grad_scaler_with_two_optimizers_matches_torch() -> None:
    """An inf in one optimizer's gradients skips only that optimizer's step, and the scale backs off for both."""
    results = []
    for lib in (genesis, torch):
        a = lib.ones(3, requires_grad=True)
        b = lib.ones(2, requires_grad=True)
        opt_a, opt_b = lib.optim.SGD([a], lr=0.1), lib.optim.Adam([b], lr=0.1)
        scaler = lib.amp.GradScaler("cpu", init_scale=16.0, growth_interval=2)
        trace = []
        for step in range(5):
            opt_a.zero_grad()
            opt_b.zero_grad()
            loss_b = (b**2).sum() * (math.inf if step == 1 else 1.0)
            scaler.scale((a**2).sum() + loss_b).backward()
            scaler.step(opt_a)
            scaler.step(opt_b)
            scaler.update()
            trace.append((scaler.get_scale(), a.detach().tolist(), b.detach().tolist()))
        results.append(trace)
    g_trace, t_trace = results
    for (gs, ga, gb), (ts, ta, tb) in zip(g_trace, t_trace):
        assert gs == ts
        assert ga == pytest.approx(ta, rel=1e-6) and gb == pytest.approx(tb, rel=1e-6)


def _scaler_contract(lib: object) -> list:
    """What a GradScaler says on misuse and where it keeps its scale: the errors before the first ``scale()``, an
    optimizer without gradients, pickling mid-iteration, a tensor ``new_scale``."""
    seen = []

    def attempt(fn: object) -> None:
        try:
            seen.append(("ok", fn()))
        except Exception as e:  # the class and message are what is compared
            seen.append((type(e).__name__, str(e)))

    w = lib.ones(2, requires_grad=True)
    opt = lib.optim.SGD([w], lr=0.1)
    scaler = lib.amp.GradScaler("cpu", init_scale=8.0)
    for name in ("unscale_", "step", "update"):
        attempt(lambda name=name: getattr(scaler, name)(*([opt] if name != "update" else [])))
    attempt(lambda: lib.amp.GradScaler("cpu", backoff_factor=1.5))
    attempt(lambda: lib.amp.GradScaler("cpu", enabled=False, growth_factor=0.5).is_enabled())
    attempt(lambda: lib.amp.GradScaler("cpu", growth_interval=0).get_growth_interval())
    scaled = scaler.scale(lib.tensor(3.0))
    seen.append((tuple(scaled.shape), scaled.item()))
    seen.append(type(scaler.scale(iter([lib.tensor(1.0)]))).__name__)
    attempt(lambda: scaler.step(opt))  # no parameter has a gradient: no inf check recorded
    attempt(lambda: scaler.update())
    attempt(lambda: __import__("pickle").dumps(scaler))  # the per-optimizer state of this iteration is pending
    scaler.update(lib.tensor(32.0))
    seen.append((scaler.get_scale(), scaler._get_growth_tracker()))
    attempt(lambda: scaler.update(lib.tensor([1.0, 2.0])))
    copy = __import__("pickle").loads(__import__("pickle").dumps(scaler))
    seen.append((copy.get_scale(), copy.state_dict()))
    return seen


def test_grad_scaler_errors_and_lazy_scale_match_torch() -> None:
    assert _scaler_contract(genesis) == _scaler_contract(torch)


def test_binary_cross_entropy_is_unsafe_under_cuda_autocast() -> None:
    from genesis.amp import POLICY

    assert POLICY["cuda"]["binary_cross_entropy"] == "banned"
    assert POLICY["cpu"]["binary_cross_entropy"] == "fp32"


def test_autocast_queries_and_the_cpu_amp_spelling() -> None:
    """``torch.is_autocast_enabled`` / ``get_autocast_dtype`` at the top level and ``torch.cpu.amp.autocast``."""
    for lib in (torch, genesis):
        assert not lib.is_autocast_enabled("cpu")
        with lib.autocast("cpu", dtype=lib.bfloat16):
            assert lib.is_autocast_enabled("cpu") and lib.get_autocast_dtype("cpu") == lib.bfloat16
    with genesis.cpu.amp.autocast():
        assert genesis.is_autocast_enabled("cpu")
        x = genesis.ones(2, 3)
        assert (x @ x.T).dtype is genesis.bfloat16
    assert not genesis.is_autocast_enabled("cpu")
    assert genesis.cpu.is_available() and genesis.cpu.device_count() == 1


def _autocast_switches(lib: object) -> list:
    """torch's per-thread switches: set directly, set by regions (restored when they exit), read inside."""
    x = lib.ones(2, 2)
    seen = []

    def state() -> None:
        seen.append((lib.is_autocast_enabled("cpu"), str(lib.get_autocast_dtype("cpu")).split(".")[-1],
                     str((x @ x).dtype).split(".")[-1]))

    try:
        lib.set_autocast_enabled("cpu", True)
        state()
        lib.set_autocast_dtype("cpu", lib.float16)
        state()
        with lib.autocast("cpu"):  # no dtype: the current one
            state()
            with lib.autocast("cpu", dtype=lib.bfloat16, enabled=False):
                state()
                lib.set_autocast_enabled("cpu", True)
                state()
            state()
        state()
        lib.set_autocast_enabled("cpu", False)
        lib.set_autocast_dtype("cpu", lib.bfloat16)
        state()
        with pytest.raises(RuntimeError):
            lib.set_autocast_enabled("tpu", True)
    finally:
        lib.set_autocast_enabled("cpu", False)
        lib.set_autocast_dtype("cpu", lib.bfloat16)
    return seen


def test_autocast_switches_and_region_defaults_as_torch() -> None:
    assert _autocast_switches(genesis) == _autocast_switches(torch)


def _custom_function(lib: object, device_type: str, cast_inputs: object) -> type:
    """A Function whose forward and backward record the autocast state they run under (``amp.custom_fwd/bwd``)."""

    class Scaled(lib.autograd.Function):
        seen: list = []

        @staticmethod
        @lib.amp.custom_fwd(device_type=device_type, cast_inputs=cast_inputs)
        def forward(ctx, a, b):
            Scaled.seen.append(f"forward {str(a.dtype).split('.')[1]} {lib.is_autocast_enabled(device_type)}")
            ctx.save_for_backward(a, b)
            return a @ b

        @staticmethod
        @lib.amp.custom_bwd(device_type=device_type)
        def backward(ctx, grad):
            a, b = ctx.saved_tensors
            Scaled.seen.append(f"backward {lib.is_autocast_enabled(device_type)}")
            return grad @ b.T, a.T @ grad

    return Scaled


@pytest.mark.parametrize("cast_inputs", [None, "float32"])
def test_custom_fwd_and_bwd_follow_torch(cast_inputs: str | None) -> None:
    results = []
    for lib, device_type in ((torch, "cpu"), (genesis, DEVICE)):
        fn = _custom_function(lib, device_type, cast_inputs and getattr(lib, cast_inputs))
        device = "cpu" if lib is torch else DEVICE
        a = lib.ones(2, 3, device=device, dtype=lib.bfloat16, requires_grad=True)
        b = lib.ones(3, 2, device=device, requires_grad=True)
        with lib.autocast(device_type, dtype=lib.bfloat16):
            out = fn.apply(a, b)
        out.float().sum().backward()
        outside = fn.apply(a.float(), b)  # autocast off: no casts, and the backward runs without autocast too
        outside.sum().backward()
        results.append([*fn.seen] + [str(t.dtype).split(".")[1] for t in (out, outside, a.grad, b.grad)])
    assert results[0] == results[1]
    assert genesis.amp.is_autocast_available("cpu") and not genesis.amp.is_autocast_available("mps")
    with pytest.raises(ValueError, match="device_type"):
        genesis.amp.custom_fwd(device_type=0)


def test_cuda_amp_custom_fwd_spelling() -> None:
    from genesis.cuda.amp import custom_bwd, custom_fwd

    class Double(genesis.autograd.Function):
        @staticmethod
        @custom_fwd(cast_inputs=genesis.float32)
        def forward(ctx, x):
            return x * 2

        @staticmethod
        @custom_bwd
        def backward(ctx, grad):
            return grad * 2

    x = genesis.ones(3, dtype=genesis.float16, requires_grad=True)
    Double.apply(x).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0, 2.0]


MARGIN_LOSSES = {
    "hinge_embedding_loss": lambda F, v: F.hinge_embedding_loss(v, torch_like_ones(v)),
    "poisson_nll_loss": lambda F, v: F.poisson_nll_loss(v, v),
    "triplet_margin_loss": lambda F, v: F.triplet_margin_loss(v, v * 2, v),
    "cosine_embedding_loss": lambda F, v: F.cosine_embedding_loss(v, v * 2, torch_like_ones(v)[:, 0]),
    "margin_ranking_loss": lambda F, v: F.margin_ranking_loss(v[0], v[1], torch_like_ones(v)[0]),
    "soft_margin_loss": lambda F, v: F.soft_margin_loss(v, torch_like_ones(v)),
}


def torch_like_ones(v):
    """Ones of ``v``'s shape in float32, on its device, for either library."""
    return (v * 0 + 1).float()


@pytest.mark.parametrize("name", list(MARGIN_LOSSES))
def test_margin_losses_run_in_float32_under_autocast(name):
    fn = MARGIN_LOSSES[name]
    device_type = "cuda" if DEVICE.startswith("cuda") else "cpu"
    v = torch.linspace(0.1, 1, 12).view(3, 4)
    with torch.autocast("cpu", dtype=torch.bfloat16):  # torch's rule, float32, is the same on both device types
        expected = fn(torch.nn.functional, v.bfloat16())
    g = genesis.tensor(v.numpy(), device=DEVICE).bfloat16()
    with genesis.autocast(device_type, dtype=genesis.bfloat16):
        got = fn(genesis.nn.functional, g)
    assert got.dtype is genesis.float32 and expected.dtype == torch.float32


CPU_FLOAT32_OPS = {
    "grid_sample": lambda F, x: F.grid_sample(x, (x[:, 0, :3, :2].unsqueeze(-1) * 0.5).expand(
        2, 3, 2, 2).contiguous(), align_corners=False),
    "avg_pool3d": lambda F, x: F.avg_pool3d(x.unsqueeze(2).expand(2, 3, 2, 4, 4), 2),
    "max_pool3d": lambda F, x: F.max_pool3d(x.unsqueeze(2).expand(2, 3, 2, 4, 4), 2),
    "adaptive_avg_pool3d": lambda F, x: F.adaptive_avg_pool3d(x.unsqueeze(2), 1),
    "pad reflect": lambda F, x: F.pad(x, (1, 1, 1, 1), mode="reflect"),
    "pad replicate": lambda F, x: F.pad(x[0], (1, 1), mode="replicate"),
    "max_unpool2d": lambda F, x: F.max_unpool2d(*F.max_pool2d(x, 2, return_indices=True), 2),
}


@pytest.mark.parametrize("name", list(CPU_FLOAT32_OPS))
def test_cpu_autocast_float32_ops(name):
    # torch's CPU policy runs these in float32; on CUDA they keep the input's dtype.
    fn = CPU_FLOAT32_OPS[name]
    v = torch.linspace(0.1, 1, 2 * 3 * 4 * 4).view(2, 3, 4, 4)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        expected = fn(torch.nn.functional, v.bfloat16())
    assert expected.dtype == torch.float32
    device_type = "cuda" if DEVICE.startswith("cuda") else "cpu"
    g = genesis.tensor(v.numpy(), device=DEVICE).bfloat16()
    with genesis.autocast(device_type, dtype=genesis.bfloat16):
        got = fn(genesis.nn.functional, g)
    assert got.dtype is (genesis.float32 if device_type == "cpu" else genesis.bfloat16)
    if device_type == "cpu":
        assert_same(got, expected)


def test_grid_sample_refuses_mixed_dtypes_outside_autocast():
    x = torch.linspace(0, 1, 16).view(1, 1, 4, 4)
    grid = torch.zeros(1, 2, 2, 2, dtype=torch.float64)
    with pytest.raises(RuntimeError, match="expected scalar type"):
        torch.nn.functional.grid_sample(x, grid, align_corners=False)
    with pytest.raises(RuntimeError, match="expected scalar type Float but found Double"):
        genesis.nn.functional.grid_sample(to_genesis(x), to_genesis(grid), align_corners=False)


def _spd(lib: object, a: object) -> object:
    return a @ a.mT + 4 * lib.eye(a.shape[-1], device=a.device, dtype=a.dtype)


# Ops that torch runs as one kernel and Genesis writes with other ops: under autocast they follow their own rule
# (float32 factorizations on the CPU, float32 distances on CUDA...), never the rules of the products inside them.
WHOLE_OPS = {
    "mv": (lambda lib, a, v: a.mv(v), [(4, 5), (5,)]),
    "addmv": (lambda lib, a, v: lib.addmv(v[:4], a, v), [(4, 5), (5,)]),
    "addbmm": (lambda lib, c, a, b: lib.addbmm(c, a, b), [(4, 3), (2, 4, 5), (2, 5, 3)]),
    "addr": (lambda lib, c, a, b: lib.addr(c, a, b), [(4, 3), (4,), (3,)]),
    "vecdot": (lambda lib, a, b: lib.linalg.vecdot(a, b), [(4, 5), (4, 5)]),
    "cdist": (lambda lib, a, b: lib.cdist(a, b), [(4, 5), (3, 5)]),
    "dist": (lambda lib, a, b: lib.dist(a, b), [(4, 5), (4, 5)]),
    "pdist": (lambda lib, a: lib.nn.functional.pdist(a), [(4, 5)]),
    "renorm": (lambda lib, a: lib.renorm(a, 2, 0, 1.0), [(4, 5)]),
    "logsumexp": (lambda lib, a: lib.logsumexp(a, 1), [(4, 5)]),
    "trace": (lambda lib, a: lib.trace(a), [(4, 4)]),
    "cholesky": (lambda lib, a: lib.linalg.cholesky(_spd(lib, a)), [(5, 5)]),
    "inv": (lambda lib, a: lib.linalg.inv(_spd(lib, a)), [(5, 5)]),
    "solve": (lambda lib, a, b: lib.linalg.solve(_spd(lib, a), b), [(5, 5), (5, 2)]),
    "eigvalsh": (lambda lib, a: lib.linalg.eigvalsh(_spd(lib, a)), [(5, 5)]),
    "qr": (lambda lib, a: lib.linalg.qr(a).R.abs(), [(5, 4)]),
    "lstsq": (lambda lib, a, b: lib.linalg.lstsq(_spd(lib, a), b).solution, [(5, 5), (5, 2)]),
}


@pytest.mark.parametrize("name", sorted(WHOLE_OPS))
def test_ops_written_with_products_follow_their_own_autocast_rule(name: str) -> None:
    # float32 inputs: the result's dtype is the op's own rule, and its values are float32-accurate (a product
    # inside computed in the lower precision would be off by about 1e-2).
    fn, shapes = WHOLE_OPS[name]
    inputs = [rand(*shape, seed=i, dtype=torch.float32) for i, shape in enumerate(shapes)]
    device_type = "cuda" if DEVICE.startswith("cuda") else "cpu"
    oracle_device = "cuda" if device_type == "cuda" else "cpu"
    with torch.autocast(oracle_device, dtype=torch.bfloat16):
        expected = fn(torch, *[x.to(oracle_device) for x in inputs])
    with genesis.autocast(device_type, dtype=genesis.bfloat16):
        got = fn(genesis, *[to_genesis(x, requires_grad=False) for x in inputs])
    assert str(got.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1]
    tolerance = {"rtol": 2e-2, "atol": 2e-2} if expected.dtype == torch.bfloat16 else {"rtol": 1e-4, "atol": 1e-5}
    assert_same(got, expected.cpu(), **tolerance)
