"""Losses against torch: every reduction, ignore_index, label smoothing, class weights, probabilities, N-d."""

import pytest
import torch

import genesis
import genesis.nn as nn
from tests.helpers import ACC, DEVICE, check, check_bits, check_error, rand, to_genesis, to_torch

REDUCTIONS = ["mean", "sum", "none"]


def targets(*shape: int, classes: int, ignore: int | None = None, seed: int = 0) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    t = torch.randint(0, classes, shape, generator=gen)
    if ignore is not None:
        t[torch.rand(shape, generator=gen) < 0.3] = ignore
    return t


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("smoothing", [0.0, 0.2])
@pytest.mark.parametrize("weighted", [False, True])
def test_cross_entropy_class_indices(reduction, smoothing, weighted):
    w = rand(5, low=0.2, high=2.0, requires_grad=False, seed=9) if weighted else None
    for x, t, ignore in ((rand(6, 5), targets(6, classes=5), -100),
                         (rand(4, 5, 3, 2), targets(4, 3, 2, classes=5, ignore=2), 2),
                         (rand(6, 5), targets(6, classes=5, ignore=-1), -1)):
        check(lambda lib, x, t, *w_, ignore=ignore: lib.nn.functional.cross_entropy(
            x, t, *w_, ignore_index=ignore, reduction=reduction, label_smoothing=smoothing), x, t,
            *([w] if w is not None else []))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16, torch.float64], ids=str)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
def test_cross_entropy_gradient_rounds_as_torchs_kernels(dtype, reduction, weighted):
    # torch's gradient is nll_loss's followed by log_softmax's (``g - exp(logp) * sum g``): the same bits, with ignored
    # rows and class weights, in every floating dtype. The bits are those of torch's CPU kernels: on CUDA Genesis runs
    # its fused cross-entropy kernel, whose values the other tests of this file compare within tolerances.
    if DEVICE != "cpu":
        pytest.skip("bit-equality with torch's CPU kernels (CUDA runs the fused kernel)")
    if weighted and reduction == "mean":
        pytest.skip("torch sums the mean's total weight in cascaded blocks: the divisor differs in its last bits")

    def grad(lib, x, t, *w):
        x = x.detach().requires_grad_()
        loss = lib.nn.functional.cross_entropy(x, t, *w, reduction=reduction)
        return lib.autograd.grad(loss.sum(), x)[0]

    x = rand(64, 10, seed=4).detach().mul(3).to(dtype)
    t = targets(64, classes=10, ignore=-100)
    w = [rand(10, low=0.5, high=2.0, requires_grad=False, seed=5).to(dtype)] if weighted else []
    check_bits(grad, x, t, *w)


def test_cross_entropy_unbatched_and_all_ignored():
    check(lambda lib, x, t: lib.nn.functional.cross_entropy(x, t), rand(5), torch.tensor(3))
    check(lambda lib, x, t: lib.nn.functional.cross_entropy(x, t, label_smoothing=0.1), rand(5), torch.tensor(3))
    check(lambda lib, x, t: lib.nn.functional.cross_entropy(x, t, ignore_index=1), rand(3, 4),
          torch.tensor([1, 1, 1]))


@pytest.mark.parametrize("weighted", [False, True])
def test_cross_entropy_ignored_rows_are_positive_zeros(weighted):
    # Per-token losses (reduction='none') of ignored targets are +0, as torch's: they print as 0., not -0.
    w = to_genesis(rand(5, low=0.5, high=1.5, requires_grad=False, seed=3)) if weighted else None
    for x, t in ((rand(4, 5), torch.tensor([1, -100, 3, -100])), (rand(2, 5, 3), torch.tensor([[1, -100, 0]] * 2))):
        out = to_torch(genesis.nn.functional.cross_entropy(to_genesis(x), to_genesis(t), w, reduction="none"))
        assert not torch.signbit(out).any(), out


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("smoothing", [0.0, 0.3])
def test_cross_entropy_probabilities(reduction, smoothing):
    probs = torch.softmax(rand(4, 5, 3, requires_grad=False, seed=4), 1)
    check(lambda lib, x, p: lib.nn.functional.cross_entropy(x, p, reduction=reduction, label_smoothing=smoothing),
          rand(4, 5, 3), probs)
    w = rand(5, low=0.5, high=1.5, requires_grad=False, seed=5)
    check(lambda lib, x, p, w: lib.nn.functional.cross_entropy(x, p, w, reduction=reduction,
                                                               label_smoothing=smoothing), rand(4, 5), probs[..., 0], w)


def test_cross_entropy_probabilities_refuse_an_ignore_index():
    # Any negative ignore_index passes (the default -100 too); a class index is refused, as torch.
    probs = torch.softmax(rand(4, 5, 3, requires_grad=False, seed=4), 1)
    check(lambda lib, x, p: lib.nn.functional.cross_entropy(x, p, ignore_index=-1), rand(4, 5, 3), probs)
    check_error(RuntimeError, lambda lib, x, p: lib.nn.functional.cross_entropy(x, p, ignore_index=0),
                rand(4, 5, 3), probs, match="ignore_index is not supported for floating point target")


def test_cross_entropy_label_smoothing_bounds_as_torch():
    # torch smooths only by a positive amount (a negative one is no smoothing) and refuses one above 1.
    probs = torch.softmax(rand(4, 5, requires_grad=False, seed=4), 1)
    for t in (targets(4, classes=5), probs):
        check(lambda lib, x, t: lib.nn.functional.cross_entropy(x, t, label_smoothing=-0.3), rand(4, 5), t)
        check_error(RuntimeError, lambda lib, x, t: lib.nn.functional.cross_entropy(x, t, label_smoothing=1.5),
                    rand(4, 5), t, match=r"label_smoothing must be between 0.0 and 1.0. Got: 1.5")


def test_cross_entropy_float32_and_errors():
    check(lambda lib, x, t: lib.nn.functional.cross_entropy(x, t), rand(8, 10, dtype=torch.float32),
          targets(8, classes=10))
    check_error(IndexError, lambda lib, x, t: lib.nn.functional.cross_entropy(x, t), rand(3, 4),
                torch.tensor([0, 4, 1]))
    check_error(ValueError, lambda lib, x, t: lib.nn.functional.cross_entropy(x, t, reduction="avg"), rand(3, 4),
                torch.tensor([0, 1, 1]))
    check_error(ValueError, lambda lib, x, t: lib.nn.functional.cross_entropy(x, t), rand(3, 4),
                torch.tensor([0, 1]))
    check_error(RuntimeError, lambda lib, x, t, w: lib.nn.functional.cross_entropy(x, t, w), rand(3, 4),
                torch.tensor([0, 1, 1]), rand(3, requires_grad=False))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_nll_loss(reduction):
    w = rand(5, low=0.2, high=2.0, requires_grad=False, seed=9)
    logp = torch.log_softmax(rand(6, 5, requires_grad=False), 1).requires_grad_()
    check(lambda lib, x, t: lib.nn.functional.nll_loss(x, t, reduction=reduction), logp, targets(6, classes=5))
    check(lambda lib, x, t, w: lib.nn.functional.nll_loss(x, t, w, ignore_index=0, reduction=reduction), logp,
          targets(6, classes=5, seed=3), w)
    check(lambda lib, x, t: lib.nn.functional.nll_loss(x, t, reduction=reduction), rand(2, 5, 3, 4),
          targets(2, 3, 4, classes=5))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("name,kwargs", [
    ("mse_loss", {}), ("l1_loss", {}), ("smooth_l1_loss", {}), ("smooth_l1_loss", {"beta": 0.3}),
    ("smooth_l1_loss", {"beta": 0.0}), ("huber_loss", {}), ("huber_loss", {"delta": 0.4}),
])
def test_regression_losses(reduction, name, kwargs):
    check(lambda lib, a, b: getattr(lib.nn.functional, name)(a, b, reduction=reduction, **kwargs), rand(4, 5),
          rand(4, 5, seed=1, low=-2, high=2))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_binary_cross_entropy(reduction):
    p = rand(4, 5, low=0.05, high=0.95)
    t = rand(4, 5, low=0.0, high=1.0, requires_grad=False, seed=1)
    w = rand(5, low=0.5, high=2.0, requires_grad=False, seed=2)
    check(lambda lib, p, t: lib.nn.functional.binary_cross_entropy(p, t, reduction=reduction), p, t)
    check(lambda lib, p, t, w: lib.nn.functional.binary_cross_entropy(p, t, w, reduction=reduction), p, t, w)
    edge = torch.tensor([0.0, 1.0, 0.5], dtype=torch.float64)
    check(lambda lib, p, t: lib.nn.functional.binary_cross_entropy(p, t, reduction=reduction), edge,
          torch.tensor([1.0, 0.0, 1.0], dtype=torch.float64), backward=False)
    check_error(RuntimeError, lambda lib, p, t: lib.nn.functional.binary_cross_entropy(p, t), p * 3, t)
    check_error(ValueError, lambda lib, p, t: lib.nn.functional.binary_cross_entropy(p, t), p, t[:2],
                match=r"^Using a target size \(\w+\.Size\(\[2, 5\]\)\) that is different to the input size "
                      r"\(\w+\.Size\(\[4, 5\]\)\) is deprecated")
    # A target that requires grad gets log1p(-p) - log p, as torch's
    tg = rand(4, 5, low=0.0, high=1.0, seed=3)
    check(lambda lib, p, t: lib.nn.functional.binary_cross_entropy(p, t, reduction=reduction), p, tg)


def test_binary_cross_entropy_gradient_at_saturated_probabilities():
    # A sigmoid of 17 is exactly 1 in float32: torch's gradient stays finite there (0 for a right prediction, the
    # 1e-12 clamp of p (1 - p) for a wrong one) where the chain rule through clamped logs gives 0 * inf = NaN.
    logits = torch.tensor([17.0, 2.0, -20.0, 0.5])
    target = torch.tensor([1.0, 1.0, 1.0, 0.0])
    check(lambda lib, x, t: lib.nn.functional.binary_cross_entropy(x.sigmoid(), t, reduction="sum"),
          logits.requires_grad_(True), target)
    check(lambda lib, p, t: lib.nn.BCELoss()(p, t), torch.tensor([1.0, 0.0, 1e-30], requires_grad=True),
          torch.tensor([0.0, 1.0, 1.0]))


def test_binary_cross_entropy_double_backward():
    p = rand(6, low=0.1, high=0.9, dtype=torch.float64)
    t = rand(6, low=0.0, high=1.0, seed=4, dtype=torch.float64)

    def penalty(lib, p, t):
        gp, gt = lib.autograd.grad(lib.nn.functional.binary_cross_entropy(p, t), (p, t), create_graph=True)
        return (gp * gp).sum() + (gt * gt).sum()

    check(penalty, p, t)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_binary_cross_entropy_with_logits(reduction):
    x = rand(4, 5, low=-30, high=30)
    t = rand(4, 5, low=0.0, high=1.0, requires_grad=False, seed=1)
    pw = rand(5, low=0.5, high=3.0, requires_grad=False, seed=2)
    w = rand(4, 5, low=0.5, high=2.0, requires_grad=False, seed=3)
    f = "binary_cross_entropy_with_logits"
    check(lambda lib, x, t: getattr(lib.nn.functional, f)(x, t, reduction=reduction), x, t)
    check(lambda lib, x, t, w, pw: getattr(lib.nn.functional, f)(x, t, w, reduction=reduction, pos_weight=pw),
          x, t, w, pw)
    check_error(ValueError, lambda lib, x, t: getattr(lib.nn.functional, f)(x, t), x, t[:, :3],
                match=r"^Target size \(\w+\.Size\(\[4, 3\]\)\) must be the same as input size "
                      r"\(\w+\.Size\(\[4, 5\]\)\)$")


@pytest.mark.parametrize("x_dtype, t_dtype, w_dtype", [(torch.float64, torch.float32, torch.float64),
                                                       (torch.float32, torch.float64, torch.float32),
                                                       (torch.float32, torch.float16, torch.float64),
                                                       (torch.bfloat16, torch.float32, torch.float32)])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_binary_cross_entropy_with_logits_has_the_targets_dtype(x_dtype, t_dtype, w_dtype, reduction):
    # torch accumulates in place into `1 - target` (the loss has the target's dtype, whatever the logits' and the
    # weights' dtypes) and scales the log-sigmoid by pos_weight in the logits' dtype.
    x = rand(4, 5, low=-4, high=4, dtype=x_dtype)
    t = rand(4, 5, low=0.0, high=1.0, requires_grad=False, seed=1, dtype=t_dtype)
    pw = rand(5, low=0.5, high=3.0, requires_grad=False, seed=2, dtype=w_dtype)
    w = rand(4, 5, low=0.5, high=2.0, requires_grad=False, seed=3, dtype=w_dtype)
    f = "binary_cross_entropy_with_logits"
    # The values round as the least precise dtype involved (torch's backward is a formula of its own).
    tol = 2e-2 if {x_dtype, t_dtype} & {torch.float16, torch.bfloat16} else 1e-5
    check(lambda lib, x, t, w, pw: getattr(lib.nn.functional, f)(x, t, w, reduction=reduction, pos_weight=pw),
          x, t, w, pw, rtol=tol, atol=tol)
    check(lambda lib, x, t: getattr(lib.nn.functional, f)(x, t, reduction=reduction), x, t, rtol=tol, atol=tol)


def test_binary_cross_entropy_with_logits_rounds_saturated_logits_as_torch():
    """torch computes ``(1 - t) x - logsigmoid(x)``: a saturated logit that agrees with its target gives an exact
    zero (a Bernoulli's log-probability of a clamped certain outcome), not the tiny ``log1p(exp(-|x|))``."""
    x = torch.tensor([-100.0, 100.0, -15.942385, 15.942385, -30.0, 0.0], requires_grad=True)
    t = torch.tensor([0.0, 1.0, 0.0, 1.0, 0.0, 0.5])
    bce = "binary_cross_entropy_with_logits"
    for dtype in (torch.float32, torch.float64):
        check(lambda lib, x, t: getattr(lib.nn.functional, bce)(x, t, reduction="none"),
              x.detach().to(dtype).requires_grad_(), t.to(dtype), rtol=0, atol=0, grad_rtol=1e-6)
    probs = torch.tensor([0.0, 1.0, 0.5])
    check(lambda lib, p, v: lib.distributions.Bernoulli(probs=p).log_prob(v), probs, torch.tensor([0.0, 1.0, 1.0]),
          rtol=0, atol=0)


@pytest.mark.parametrize("reduction", REDUCTIONS + ["batchmean"])
@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div(reduction, log_target):
    inp = torch.log_softmax(rand(4, 5, requires_grad=False), 1).requires_grad_()
    target = torch.softmax(rand(4, 5, requires_grad=False, seed=1), 1)
    target[0, 0] = 0.0
    if log_target:
        target = torch.log_softmax(rand(4, 5, requires_grad=False, seed=1), 1)
    check(lambda lib, x, t: lib.nn.functional.kl_div(x, t, reduction=reduction, log_target=log_target), inp, target)


def test_kl_div_target_zero_negative_and_its_gradient():
    # torch's xlogy(target, target): 0 at a zero target, NaN at a negative one; the target's gradient is NaN at both.
    target = torch.tensor([[0.5, -0.2, 0.0], [0.3, 0.0, 0.7]], dtype=torch.float64, requires_grad=True)
    check(lambda lib, x, t: lib.nn.functional.kl_div(x, t, reduction="none"), rand(2, 3), target)
    check(lambda lib, x, t: lib.nn.functional.kl_div(x, t, reduction="batchmean"), rand(2, 3), target.abs())


def test_other_losses():
    check(lambda lib, x, y: lib.nn.functional.soft_margin_loss(x, y), rand(3, 4),
          torch.tensor([[1.0, -1.0, 1.0, 1.0]] * 3, dtype=torch.float64))
    check(lambda lib, x, t: lib.nn.functional.poisson_nll_loss(x, t), rand(3, 4), rand(3, 4, low=0, high=3,
                                                                                        requires_grad=False))
    check(lambda lib, x, t: lib.nn.functional.poisson_nll_loss(x, t, log_input=False, full=True),
          rand(3, 4, low=0.1, high=2), rand(3, 4, low=0, high=3, requires_grad=False))
    check(lambda lib, x, t, v: lib.nn.functional.gaussian_nll_loss(x, t, v), rand(3, 4), rand(3, 4, seed=1),
          rand(3, 4, low=0.1, high=1.0, seed=2))
    y = torch.tensor([1.0, -1.0, 1.0], dtype=torch.float64)
    check(lambda lib, a, b, y: lib.nn.functional.cosine_embedding_loss(a, b, y, margin=0.1), rand(3, 4),
          rand(3, 4, seed=1), y)
    check(lambda lib, a, b, y: lib.nn.functional.margin_ranking_loss(a, b, y, margin=0.2), rand(3), rand(3, seed=1),
          y)


@pytest.mark.parametrize("var_shape", [(3, 4), (3, 1), (3,), (1, 4)])
def test_gaussian_nll_loss_var_shapes(var_shape):
    check(lambda lib, x, t, v: lib.nn.functional.gaussian_nll_loss(x, t, v, full=True, reduction="sum"), rand(3, 4),
          rand(3, 4, seed=1), rand(*var_shape, low=0.1, high=1.0, seed=2))


def test_gaussian_nll_loss_float_var_and_bad_shapes():
    check(lambda lib, x, t: lib.nn.functional.gaussian_nll_loss(x, t, 0.5), rand(3, 4), rand(3, 4, seed=1))
    for var_shape in [(3, 5), (4,), (1, 1)]:
        check_error(ValueError, lambda lib, x, t, v: lib.nn.functional.gaussian_nll_loss(x, t, v), rand(3, 4),
                    rand(3, 4, seed=1), rand(*var_shape, low=0.1, high=1.0, seed=2), match="var is of incorrect size")
    check_error(ValueError, lambda lib, x, t, v: lib.nn.functional.gaussian_nll_loss(x, t, v, reduction="max"),
                rand(3, 4), rand(3, 4, seed=1), rand(3, 4, low=0.1, high=1.0, seed=2), match="max is not valid")


@pytest.mark.parametrize("make,kind", [
    (lambda lib: lib.nn.CrossEntropyLoss(), "class"),
    (lambda lib: lib.nn.CrossEntropyLoss(weight=lib.linspace(0.5, 2.0, 5, dtype=lib.float64), ignore_index=1,
                                         label_smoothing=0.1, reduction="sum"), "class"),
    (lambda lib: lib.nn.NLLLoss(reduction="none"), "class"),
    (lambda lib: lib.nn.MSELoss(), "reg"), (lambda lib: lib.nn.L1Loss(reduction="sum"), "reg"),
    (lambda lib: lib.nn.SmoothL1Loss(beta=0.5), "reg"), (lambda lib: lib.nn.HuberLoss(delta=0.5), "reg"),
    (lambda lib: lib.nn.BCEWithLogitsLoss(pos_weight=lib.full((5,), 2.0, dtype=lib.float64)), "prob"),
    (lambda lib: lib.nn.BCELoss(), "bce"), (lambda lib: lib.nn.KLDivLoss(reduction="batchmean"), "reg"),
])
def test_loss_modules(make, kind):
    g, t = make(genesis), make(torch)
    assert list(g.state_dict()) == list(t.state_dict())
    def run(lib, x, y):
        return make(lib).to(x.device)(x, y)  # buffers (weight, pos_weight) on the inputs' device

    if kind == "class":
        check(run, rand(6, 5), targets(6, classes=5))
    elif kind == "bce":
        check(run, rand(6, 5, low=0.1, high=0.9), rand(6, 5, low=0, high=1, requires_grad=False))
    else:
        check(run, rand(6, 5), rand(6, 5, low=0, high=1, seed=1))


def test_legacy_reduction_flags():
    check(lambda lib, x, y: lib.nn.functional.mse_loss(x, y, size_average=False), rand(3, 4), rand(3, 4, seed=1))
    check(lambda lib, x, y: lib.nn.functional.mse_loss(x, y, reduce=False), rand(3, 4), rand(3, 4, seed=1))
    assert nn.MSELoss(size_average=False).reduction == torch.nn.MSELoss(size_average=False).reduction


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
def test_cross_entropy_double_backward(reduction, weighted):
    # With class weights and an ignored row as well: the gradient's own graph (create_graph) weighs the rows too.
    w = rand(5, low=0.2, high=2.0, requires_grad=False, seed=9) if weighted else None

    def f(lib, x, *w_):
        t = torch.tensor([0, 2, -100, 1]) if lib is torch else genesis.tensor([0, 2, -100, 1], device=x.device)
        loss = lib.nn.functional.cross_entropy(x, t, *w_, reduction=reduction)
        (g,) = lib.autograd.grad((loss * loss).sum(), x, create_graph=True)
        return (g * g).sum()
    check(f, rand(4, 5), *([w] if w is not None else []))


def test_cross_entropy_fused_node_checks_and_dtypes():
    # Label smoothing takes the fused node on the CPU too (on CUDA every class-index call does): the same checks.
    f32 = torch.float32

    def ce(**kw):
        return lambda lib, x, t: lib.nn.functional.cross_entropy(x, t, label_smoothing=0.1, **kw)
    check_error(IndexError, ce(), rand(3, 4, dtype=f32), torch.tensor([0, 4, 1]), match="Target 4 is out of bounds")
    check_error(IndexError, ce(ignore_index=-1), rand(3, 4, dtype=f32), torch.tensor([0, -2, 1]), match="-2")
    check_error(ValueError, ce(), rand(3, 4, dtype=f32), torch.tensor([0, 1]))
    check_error(ValueError, ce(reduction="avg"), rand(3, 4, dtype=f32), torch.tensor([0, 1, 1]))
    check_error(RuntimeError, ce(), rand(3, 4, dtype=f32), torch.tensor([0.0, 1.0, 1.0]))
    for dtype in (f32, torch.bfloat16, torch.float16):
        for reduction in REDUCTIONS:
            check(ce(reduction=reduction, ignore_index=3), rand(6, 5, dtype=dtype),
                  targets(6, classes=5, ignore=3, seed=2))
    check(ce(reduction="sum"), rand(0, 5, dtype=f32), targets(0, classes=5))
    check(ce(), rand(0, 5, dtype=f32), targets(0, classes=5))


def test_nll_loss_is_one_node_with_torch_edge_cases():
    logp = rand(6, 5, seed=3).log_softmax(1).detach().requires_grad_()
    t = targets(6, classes=5)
    out = to_genesis(logp)
    loss = genesis.nn.functional.nll_loss(out, to_genesis(t))
    assert loss.grad_fn.name() == "NllLossBackward0"
    assert [n.name() for n, _ in loss.grad_fn.next_functions if n is not None] == [ACC]
    # Every target ignored: the mean is nan and no nan flows back, as in torch.
    ignored = torch.full((6,), -100)
    check(lambda lib, x, tt: lib.nn.functional.nll_loss(x, tt), logp, ignored)
    # Double backward through the loss's gradient (linear in the incoming gradient).
    w = rand(5, seed=4, low=0.5, high=2.0, requires_grad=False)
    for reduction in ("mean", "sum", "none"):
        def twice(lib, x, tt, ww, reduction=reduction):
            loss = lib.nn.functional.nll_loss(x * x, tt, ww, reduction=reduction)
            (g,) = lib.autograd.grad(loss.sum(), x, create_graph=True)
            return (g * g).sum()
        check(twice, logp, t, w)
    check_error(RuntimeError, lambda lib, x, tt: lib.nn.functional.nll_loss(x, tt, lib.ones(3, dtype=x.dtype)),
                logp, t, match="weight tensor should be defined either for all 5 classes")


def test_class_target_dtype_and_shape_checks_like_torch():
    nll, ce = (lambda lib, x, tt: lib.nn.functional.nll_loss(x, tt)), (
        lambda lib, x, tt: lib.nn.functional.cross_entropy(x, tt))
    for loss in (nll, ce):
        for dtype in (torch.int32, torch.int16, torch.bool):  # only int64 (and uint8 for 1-D or 2-D input)
            check_error(RuntimeError, loss, rand(4, 5), torch.tensor([0, 1, 1, 0], dtype=dtype), match="int64")
        check_error(RuntimeError, loss, rand(4, 5, 2), torch.zeros(4, 2, dtype=torch.uint8))
        check_error(RuntimeError, loss, rand(5), torch.tensor([[1]]), match="multi-target")
        check_error(RuntimeError, loss, rand(4, 5, 2), torch.zeros(4, 3, dtype=torch.long), match=r"\[4, 2\]")
        check_error(ValueError, loss, rand(5), torch.tensor([1, 2]), match="size 1")
        check_error(ValueError, loss, rand(4, 5), torch.tensor(1), match="batch_size")
        check_error(ValueError if loss is nll else RuntimeError, loss, torch.tensor(1.0), torch.tensor(1))
        check(loss, rand(5, requires_grad=False), torch.tensor([1]))  # one-element target, 1-D input (forward only)
        check(loss, rand(4, 5), torch.tensor([0, 4, 1, 0], dtype=torch.uint8))


def test_binary_cross_entropy_target_dtype_checks_like_torch():
    check_error(RuntimeError, lambda lib, p, t: lib.nn.functional.binary_cross_entropy(p, t),
                rand(4, low=0.1, high=0.9), torch.ones(4, dtype=torch.long), match="int64")
    check_error(RuntimeError, lambda lib, p, t: lib.nn.functional.binary_cross_entropy(p, t),
                rand(4, dtype=torch.float32, low=0.1, high=0.9), torch.ones(4, dtype=torch.float64), match="float64")
    check_error(RuntimeError, lambda lib, x, t: lib.nn.functional.binary_cross_entropy_with_logits(x, t),
                rand(4), torch.ones(4, dtype=torch.long), match="int64")


@pytest.mark.parametrize("name", ["mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss"])
def test_regression_loss_warns_when_the_target_broadcasts(name):
    x, t = rand(4, 1), rand(4, requires_grad=False, seed=1)
    with pytest.warns(UserWarning, match="different to the input size"):
        getattr(genesis.nn.functional, name)(to_genesis(x), to_genesis(t))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
@pytest.mark.parametrize("constant", [0.7, 1.0, 2.3])
def test_huber_and_smooth_l1_round_as_torchs_kernels(dtype, constant):
    # float16 huber and bfloat16 smooth_l1 in float32, rounded once; the others step by step in their own
    # precision with the constant rounded to it: bit-exact.
    i = torch.arange(2000, dtype=torch.float64)
    x, y = ((i * 0.7311).sin() * 3).to(dtype), ((i * 1.3717).cos() * 3).to(dtype)
    check_bits(lambda lib, x, y: lib.nn.functional.huber_loss(x, y, reduction="none", delta=constant), x, y)
    check_bits(lambda lib, x, y: lib.nn.functional.smooth_l1_loss(x, y, reduction="none", beta=constant), x, y)


@pytest.mark.parametrize("name,kwargs", [("smooth_l1_loss", {"beta": 0.5}), ("huber_loss", {"delta": 0.5})])
def test_huber_and_smooth_l1_second_derivative_at_a_zero_difference(name, kwargs):
    # The quadratic piece's curvature holds at input == target too (1 / beta, 1), as torch's double backward gives.
    def curvature(lib, x):
        loss = getattr(lib.nn.functional, name)(x, lib.zeros_like(x), reduction="sum", **kwargs)
        (g,) = lib.autograd.grad(loss, x, create_graph=True)
        return g
    check(curvature, torch.tensor([0.0, 0.3, -0.3, 2.0], dtype=torch.float64, requires_grad=True))


def test_soft_margin_loss_overflows_as_torch():
    # log(1 + exp(-y x)) as written: beyond a margin of about -88 the float32 exp overflows to inf.
    x = torch.tensor([-100.0, -50.0, 0.0, 30.0], requires_grad=True)
    y = torch.tensor([1.0, 1.0, -1.0, 1.0])
    check(lambda lib, x, y: lib.nn.functional.soft_margin_loss(x, y, reduction="none"), x, y)
    check(lambda lib, x, y: lib.nn.functional.soft_margin_loss(x, y), x.double(), y.double())


def test_legacy_flags_and_kl_div_mean_warn_as_torch():
    x, t = torch.log_softmax(rand(3, 4, requires_grad=False), 1), torch.softmax(rand(3, 4, requires_grad=False), 1)
    gx, gt = to_genesis(x), to_genesis(t)
    with pytest.warns(UserWarning, match="please use reduction='sum' instead"):
        genesis.nn.functional.mse_loss(gx, gt, size_average=False)
    with pytest.warns(UserWarning, match="please use reduction='none' instead"):
        assert nn.KLDivLoss(reduce=False).reduction == "none"
    with pytest.warns(UserWarning, match="'batchmean' divides only by the batch size"):
        genesis.nn.functional.kl_div(gx, gt)
    # The legacy flags win over reduction="batchmean", as torch's.
    check(lambda lib, x, t: lib.nn.functional.kl_div(x, t, reduce=False, reduction="batchmean"), x, t)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cosine_embedding_loss_targets_as_torch(reduction):
    # A target other than 1 and -1 adds nothing; the target's rank picks the inputs' (1-D: rows of 2-D inputs).
    a, b = rand(4, 3), rand(4, 3, seed=1)
    check(lambda lib, a, b, y: lib.nn.functional.cosine_embedding_loss(a, b, y, 0.2, reduction=reduction), a, b,
          torch.tensor([1, 0, -1, 2]))
    check(lambda lib, a, b, y: lib.nn.functional.cosine_embedding_loss(a[0], b[0], y), a, b, torch.tensor(-1))
    loss = lambda lib, a, b, y: lib.nn.functional.cosine_embedding_loss(a, b, y)  # noqa: E731
    check_error(RuntimeError, loss, a, b, torch.ones(1, 4), match="multi-target not supported")
    check_error(RuntimeError, loss, rand(3), rand(3, seed=1), torch.ones(1), match="1D target tensor expects 2D")
    check_error(RuntimeError, loss, a, b, torch.tensor(1), match="0D target tensor expects 1D")


def test_loss_kernels_refuse_operands_of_another_dtype_as_torch():
    # nll_loss / cross_entropy (class indices) and multi_margin_loss read the weight in the input's dtype, the margin
    # losses' targets as int64; cross_entropy over probabilities promotes a float64 weight as torch's.
    x32, w64 = rand(3, 4, dtype=torch.float32), torch.linspace(0.5, 2, 4, dtype=torch.float64)
    t = torch.tensor([0, 3, 1])
    for loss in (lambda lib, x, t, w: lib.nn.functional.nll_loss(x, t, w),
                 lambda lib, x, t, w: lib.nn.functional.cross_entropy(x, t, w),
                 lambda lib, x, t, w: lib.nn.functional.cross_entropy(x, t, w, label_smoothing=0.1),
                 lambda lib, x, t, w: lib.nn.functional.multi_margin_loss(x, t, weight=w)):
        check_error(RuntimeError, loss, x32, t, w64, match="expected scalar type Float but found Double")
        check_error(RuntimeError, loss, x32.double(), t, w64.float(), match="expected scalar type Double but found")
    # A float64 weight makes the loss float64; its terms come from float32 log-probabilities (float32's precision).
    check(lambda lib, x, p, w: lib.nn.functional.cross_entropy(x, p, w, label_smoothing=0.1), x32,
          torch.softmax(rand(3, 4, requires_grad=False, seed=1), 1).float(), w64, rtol=1e-6, atol=1e-7,
          grad_rtol=1e-6, grad_atol=1e-7)
    check_error(RuntimeError, lambda lib, x, t: lib.nn.functional.multi_margin_loss(x, t), x32, t.int(),
                match="expected scalar type Long but found Int")
    check_error(RuntimeError, lambda lib, x, t: lib.nn.functional.multilabel_margin_loss(x, t), x32,
                torch.tensor([[3, 0, -1, 1]] * 3, dtype=torch.int32), match="expected scalar type Long but found Int")


@pytest.mark.parametrize("name,make", [
    ("smooth_l1_loss", lambda lib, x, t: lib.nn.functional.smooth_l1_loss(x, t, reduction="elementwise_mean")),
    ("cross_entropy", lambda lib, x, t: lib.nn.functional.cross_entropy(x, t.softmax(1), reduction="elementwise_mean")),
    ("triplet_margin_loss", lambda lib, x, t: lib.nn.functional.triplet_margin_loss(x, t, x.flip(0),
                                                                                     reduction="elementwise_mean")),
    ("kl_div", lambda lib, x, t: lib.nn.functional.kl_div(x, t.softmax(1), reduction="elementwise_mean")),
])
def test_elementwise_mean_is_the_old_name_of_mean(name, make):
    # RKD and other distillation code still pass it: torch takes it as "mean" with a deprecation warning.
    check(make, rand(3, 4), rand(3, 4, seed=1))
    with pytest.warns(UserWarning, match="reduction='elementwise_mean' is deprecated"):
        make(genesis, to_genesis(rand(3, 4)), to_genesis(rand(3, 4, seed=1)))


def test_losses_that_refuse_the_old_reduction_name_as_torch():
    x, t = rand(3, 4), rand(3, 4, low=0, high=1, seed=1)
    check_error(ValueError, lambda lib, x, t: lib.nn.functional.poisson_nll_loss(x, t, reduction="elementwise_mean"),
                x, t, match="elementwise_mean is not a valid value for reduction")
    check_error(ValueError, lambda lib, x, t: lib.nn.functional.multilabel_soft_margin_loss(
        x, t, reduction="elementwise_mean"), x, t, match="^elementwise_mean is not valid$")
    check_error(ValueError, lambda lib, x, t: lib.nn.functional.triplet_margin_with_distance_loss(
        x, t, x, reduction="elementwise_mean"), x, t)
