"""torch's top-level spellings of neural-network ops (``torch.dropout(input, p, train)``, ``torch.layer_norm``,
``torch.batch_norm`` in its positional order, ``torch.embedding(weight, indices)``...) against torch: signatures,
values, gradients and errors."""

import inspect

import pytest
import torch

import genesis
from tests.helpers import DEVICE, assert_same, check, check_error, rand, to_genesis

ALIASES = genesis.nn.functional.namespace_aliases.__all__


def _torch_names(name: str) -> list[str]:
    """The parameter names of torch's first schema for ``torch.<name>`` (its builtins name the tensor ``self``)."""
    schema = torch._C._jit_get_schemas_for_operator(f"aten::{name}")[0]
    names = [a.name for a in schema.arguments if not a.kwarg_only]
    return ["input" if n == "self" else n for n in names]


@pytest.mark.parametrize("name", ALIASES)
def test_every_alias_is_in_both_namespaces(name: str) -> None:
    assert hasattr(torch, name), name
    assert getattr(genesis, name) is getattr(genesis.nn.functional.namespace_aliases, name)


@pytest.mark.parametrize("name", ["dropout", "alpha_dropout", "feature_dropout", "feature_alpha_dropout", "dropout_",
                                  "layer_norm", "group_norm", "batch_norm", "instance_norm", "embedding", "rrelu",
                                  "rrelu_", "selu", "celu", "threshold", "threshold_", "hardshrink", "prelu",
                                  "pixel_shuffle", "pixel_unshuffle", "channel_shuffle", "pdist",
                                  "binary_cross_entropy_with_logits", "kl_div", "cosine_embedding_loss",
                                  "margin_ranking_loss", "hinge_embedding_loss", "triplet_margin_loss",
                                  "poisson_nll_loss", "ctc_loss", "max_pool1d", "max_pool2d", "max_pool3d",
                                  "max_pool1d_with_indices", "adaptive_max_pool1d", "avg_pool1d",
                                  "adaptive_avg_pool1d", "constant_pad_nd", "rms_norm", "conv_tbc", "lstm_cell",
                                  "gru_cell", "rnn_tanh_cell", "rnn_relu_cell", "embedding_renorm_"])
def test_positional_parameters_are_torch_schema(name: str) -> None:
    got = [p.name for p in inspect.signature(getattr(genesis, name)).parameters.values()
           if p.kind is p.POSITIONAL_OR_KEYWORD]
    assert got == _torch_names(name)


def test_namespace_order_differs_from_functional() -> None:
    # torch.batch_norm(input, weight, bias, running_mean, running_var, ...) vs F.batch_norm(input, running_mean, ...)
    x, w, b = rand(4, 3, 2), rand(3), rand(3)
    mean, var = torch.rand(3, dtype=torch.float64), torch.rand(3, dtype=torch.float64) + 0.5
    check(lambda lib, x, w, b, m, v: lib.batch_norm(x, w, b, m, v, False, 0.1, 1e-5, True), x, w, b, mean, var)
    check(lambda lib, w, i: lib.embedding(w, i), rand(6, 3), torch.tensor([[0, 5], [2, 2]]))


# ------------------------------------------------------------------ dropout


@pytest.mark.parametrize("name", ["dropout", "alpha_dropout", "feature_dropout", "feature_alpha_dropout"])
def test_dropout_is_identity_when_not_training(name: str) -> None:
    x = to_genesis(rand(4, 5))
    assert getattr(genesis, name)(x, 0.3, False) is x
    assert getattr(genesis, name)(input=x, p=0.3, train=False) is x


@pytest.mark.parametrize("name", ["dropout", "alpha_dropout", "feature_dropout", "feature_alpha_dropout"])
@pytest.mark.parametrize("p", [1.5, -0.1])
@pytest.mark.parametrize("train", [True, False])
def test_dropout_probability_out_of_range_raises_runtime_error(name: str, p: float, train: bool) -> None:
    # torch.nn.functional raises ValueError here; the namespace ops raise RuntimeError (their kernel's check).
    check_error(RuntimeError, lambda lib, x: getattr(lib, name)(x, p, train), rand(3, 4))


@pytest.mark.parametrize("name", ["dropout", "alpha_dropout", "feature_dropout", "feature_alpha_dropout"])
def test_dropout_of_everything_is_zero(name: str) -> None:
    check(lambda lib, x: getattr(lib, name)(x, 1.0, True), rand(3, 4, 2))


def test_dropout_statistics_and_channel_masks() -> None:
    genesis.manual_seed(0)
    x = genesis.ones(200, 100, dtype=genesis.float64, device=DEVICE)
    out = genesis.dropout(x, 0.25, True)
    kept = (out != 0).float().mean().item()
    assert abs(kept - 0.75) < 0.02
    assert set(out.unique().tolist()) <= {0.0, 1 / 0.75}
    channels = genesis.feature_dropout(genesis.ones(64, 32, 5, device=DEVICE), 0.5, True)
    per_channel = channels.amax(-1) == channels.amin(-1)  # a whole channel is kept or dropped
    assert bool(per_channel.all())


def test_feature_dropout_needs_two_dims_in_training() -> None:
    check_error(RuntimeError, lambda lib, x: lib.feature_dropout(x, 0.5, True), rand(3))
    check(lambda lib, x: lib.feature_dropout(x, 0.5, False), rand(3))


def test_dropout_of_integers_raises() -> None:
    check_error(RuntimeError, lambda lib, x: lib.dropout(x, 0.5, True), torch.arange(4))


def test_inplace_dropout_writes_into_the_input() -> None:
    x = genesis.ones(50, 40, device=DEVICE)
    out = genesis.dropout_(x, 0.5, True)
    assert out is x and bool((x == 0).any()) and bool((x == 2).any())
    y = genesis.ones(8, 6, 4, device=DEVICE)
    assert genesis.feature_dropout_(y, 0.5, True) is y
    z = genesis.ones(8, 6, device=DEVICE)
    assert genesis.alpha_dropout_(z, 0.5, True) is z and genesis.feature_alpha_dropout_(z, 0.5, False) is z


def test_dropout_gradient_follows_the_mask() -> None:
    x = to_genesis(rand(30, 20))
    out = genesis.dropout(x, 0.5, True)
    out.sum().backward()
    assert genesis.equal(x.grad, (out != 0).to(x.dtype) * 2.0)


# ------------------------------------------------------------------ convolution, shuffles, bilinear, activations


def test_convolutions() -> None:
    check(lambda lib, x, w, b: lib.conv1d(x, w, b, 2, 1), rand(2, 3, 9), rand(4, 3, 3), rand(4))
    check(lambda lib, x, w: lib.conv2d(x, w, None, 1, "same"), rand(2, 4, 6, 6), rand(6, 4, 3, 3))
    check(lambda lib, x, w: lib.conv2d(x, w, None, 1, 1, 2, 2), rand(1, 4, 7, 7), rand(6, 2, 3, 3))
    check(lambda lib, x, w: lib.conv3d(x, w), rand(1, 2, 4, 4, 4), rand(3, 2, 2, 2, 2))
    check(lambda lib, x, w, b: lib.conv_transpose1d(x, w, b, 2, 1, 1), rand(2, 3, 5), rand(3, 2, 3), rand(2))
    check(lambda lib, x, w: lib.conv_transpose2d(x, w, None, 2), rand(1, 2, 3, 3), rand(2, 3, 2, 2))
    check(lambda lib, x, w: lib.conv_transpose3d(x, w, None, 1, 0, 0, 1, 2), rand(1, 2, 3, 3, 3), rand(2, 2, 2, 2, 2))


def test_convolution_errors() -> None:
    check_error(RuntimeError, lambda lib, x, w: lib.conv2d(x, w), rand(1, 3, 5, 5), rand(4, 2, 3, 3))


@pytest.mark.parametrize("pad", [0, 1, 3, -1])
def test_conv_tbc_time_first_convolution(pad: int) -> None:
    # fairseq's ConvTBC: (T, B, C_in) input, (k, C_in, C_out) weight; a negative pad drops steps at both ends.
    check(lambda lib, x, w, b: lib.conv_tbc(x, w, b, pad), rand(7, 2, 3), rand(3, 3, 4), rand(4))
    check(lambda lib, x, w, b: lib.nn.functional.conv_tbc(x, w, b, pad), rand(5, 1, 2), rand(2, 2, 3), rand(3))


def test_conv_tbc_empty_output_and_errors() -> None:
    check(lambda lib, x, w, b: lib.conv_tbc(x, w, b), rand(3, 2, 4), rand(4, 4, 5), rand(5))
    for w, b, match in (((3, 2, 5), (5,), "Input dim 2"), ((3, 4, 5), (3,), "Bias size must equal dim 2"),
                        ((3, 4, 5, 1), (5,), "Weight tensor must have 3 dims"), ((6, 4, 5), (5,), "negative")):
        check_error(RuntimeError, lambda lib, x, w, b: lib.conv_tbc(x, w, b), rand(3, 2, 4), rand(*w), rand(*b),
                    match=match)


@pytest.mark.parametrize("name", ["rnn_tanh_cell", "rnn_relu_cell", "gru_cell", "lstm_cell"])
@pytest.mark.parametrize("biased", [True, False])
def test_recurrent_cell_steps(name: str, biased: bool) -> None:
    gates = {"gru_cell": 3, "lstm_cell": 4}.get(name, 1)

    def step(lib, x, h, c, w_ih, w_hh, b_ih, b_hh):
        hx = (h, c) if name == "lstm_cell" else h
        return getattr(lib, name)(x, hx, w_ih, w_hh, *((b_ih, b_hh) if biased else ()))

    check(step, rand(2, 3), rand(2, 4, seed=1), rand(2, 4, seed=2), rand(gates * 4, 3, seed=3),
          rand(gates * 4, 4, seed=4), rand(gates * 4, seed=5), rand(gates * 4, seed=6))


def test_embedding_renorm_in_place() -> None:
    def renorm(lib, w):
        w = w.detach().clone()
        out = lib.embedding_renorm_(w, lib.tensor([[3, 1], [1, 0]], device=w.device), 1.5, 1.0)
        assert out is w
        return w

    check(renorm, rand(5, 3, low=-2, high=2))


def test_shuffles_bilinear_pdist() -> None:
    check(lambda lib, x: lib.pixel_shuffle(x, 2), rand(2, 8, 3, 3))
    check(lambda lib, x: lib.pixel_unshuffle(x, 3), rand(1, 2, 6, 3))
    check(lambda lib, x: lib.channel_shuffle(x, 3), rand(2, 6, 2, 2))
    check(lambda lib, a, b, w, bias: lib.bilinear(a, b, w, bias), rand(4, 3), rand(4, 2), rand(5, 3, 2), rand(5))
    check(lambda lib, x: lib.pdist(x), rand(5, 3))
    check(lambda lib, x: lib.pdist(x, 1.5), rand(4, 2))
    check_error(RuntimeError, lambda lib, x: lib.pixel_shuffle(x, 3), rand(1, 8, 2, 2))


def test_activations() -> None:
    x = rand(3, 4, 5) * 3
    check(lambda lib, t: lib.selu(t), x)
    check(lambda lib, t: lib.celu(t, 0.7), x, grad_rtol=1e-7)  # torch's CPU celu backward rounds 1/alpha to float32
    check(lambda lib, t: lib.celu(t), x)
    check(lambda lib, t: lib.threshold(t, 0.5, -2.0), x)
    check(lambda lib, t: lib.hardshrink(t), x)
    check(lambda lib, t: lib.hardshrink(t, 1.2), x)
    check(lambda lib, t, w: lib.prelu(t, w), x, rand(4))
    check(lambda lib, t: lib.rrelu(t), x)
    check(lambda lib, t: lib.rrelu(t, 0.2, 0.4, False, None), x)


def test_inplace_activations() -> None:
    x = rand(3, 4, requires_grad=False) * 3
    check(lambda lib, t: lib.selu_(t.clone()), x)
    check(lambda lib, t: lib.celu_(t.clone(), 2.0), x)
    check(lambda lib, t: lib.threshold_(t.clone(), 0.0, 5.0), x)
    check(lambda lib, t: lib.rrelu_(t.clone(), 0.1, 0.3), x)


def test_rrelu_training_draws_from_the_generator() -> None:
    x = -genesis.rand(50, device=DEVICE) - 0.1
    first = genesis.rrelu(x, 0.1, 0.3, True, genesis.Generator(DEVICE).manual_seed(5))
    again = genesis.rrelu(x, 0.1, 0.3, True, genesis.Generator(DEVICE).manual_seed(5))
    assert genesis.equal(first, again)
    slopes = first / x
    assert 0.1 <= slopes.min().item() and slopes.max().item() <= 0.3
    check_error(RuntimeError, lambda lib, t: lib.rrelu(t, 0.5, 0.1, True), rand(3))


def test_activation_signatures_take_no_inplace_flag() -> None:
    x = to_genesis(rand(3))
    for name, args in (("selu", (True,)), ("celu", (1.0, True)), ("threshold", (0.0, 1.0, True))):
        with pytest.raises(TypeError):
            getattr(torch, name)(torch.zeros(3), *args)
        with pytest.raises(TypeError):
            getattr(genesis, name)(x, *args)


# ------------------------------------------------------------------ normalization


def test_layer_norm() -> None:
    check(lambda lib, x: lib.layer_norm(x, [5]), rand(2, 3, 5))
    check(lambda lib, x, w, b: lib.layer_norm(x, (3, 5), w, b, 1e-3, False), rand(2, 3, 5), rand(3, 5), rand(3, 5))
    check_error(RuntimeError, lambda lib, x: lib.layer_norm(x, [4]), rand(2, 3))
    check_error(TypeError, lambda lib, x: lib.layer_norm(x, 3), rand(2, 3))


def test_group_norm() -> None:
    check(lambda lib, x, w, b: lib.group_norm(x, 2, w, b), rand(2, 4, 5), rand(4), rand(4))
    check(lambda lib, x: lib.group_norm(x, 3, None, None, 1e-4, False), rand(2, 6, 2, 2))
    check_error(RuntimeError, lambda lib, x: lib.group_norm(x, 2), rand(2, 3, 4))


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_updates_running_statistics(training: bool) -> None:
    x, w, b = rand(4, 3, 5), rand(3), rand(3)
    t_mean, t_var = torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
    g_mean, g_var = to_genesis(t_mean), to_genesis(t_var)
    out_g = genesis.batch_norm(to_genesis(x), to_genesis(w), to_genesis(b), g_mean, g_var, training, 0.3, 1e-5, True)
    out_t = torch.batch_norm(x, w, b, t_mean, t_var, training, 0.3, 1e-5, True)
    assert_same(out_g, out_t)
    assert_same(g_mean, t_mean)
    assert_same(g_var, t_var)


def test_batch_norm_gradients_and_degenerate_batches() -> None:
    check(lambda lib, x, w, b: lib.batch_norm(x, w, b, None, None, True, 0.1, 1e-5, False), rand(4, 3, 2), rand(3),
          rand(3))
    # A single value per channel normalizes to zeros (torch.nn.functional would raise ValueError).
    check(lambda lib, x: lib.batch_norm(x, None, None, None, None, True, 0.1, 1e-5, False), rand(1, 3))


def test_batch_norm_errors() -> None:
    check_error(RuntimeError, lambda lib, x: lib.batch_norm(x, None, None, None, None, False, 0.1, 1e-5, False),
                rand(2, 3))
    check_error(TypeError, lambda lib, x: lib.batch_norm(x, None, None, None, None, True, None, 1e-5, False),
                rand(2, 3))
    check_error(TypeError, lambda lib, x: lib.batch_norm(x, None, None, None, None, True), rand(2, 3))


def test_instance_norm() -> None:
    check(lambda lib, x, w, b: lib.instance_norm(x, w, b, None, None, True, 0.1, 1e-5, False), rand(2, 3, 6),
          rand(3), rand(3))
    check(lambda lib, x: lib.instance_norm(x, None, None, None, None, True, 0.1, 1e-5, False), rand(2, 3, 1))
    t_mean, t_var = torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
    g_mean, g_var = to_genesis(t_mean), to_genesis(t_var)
    x = rand(2, 3, 4, 4, requires_grad=False)
    assert_same(genesis.instance_norm(to_genesis(x), None, None, g_mean, g_var, True, 0.2, 1e-5, False),
                torch.instance_norm(x, None, None, t_mean, t_var, True, 0.2, 1e-5, False))
    assert_same(g_mean, t_mean)
    assert_same(g_var, t_var)
    assert_same(genesis.instance_norm(to_genesis(x), None, None, g_mean, g_var, False, 0.2, 1e-5, False),
                torch.instance_norm(x, None, None, t_mean, t_var, False, 0.2, 1e-5, False))
    check_error(RuntimeError, lambda lib, x: lib.instance_norm(x, None, None, None, None, False, 0.1, 1e-5, False),
                rand(2, 3, 4))


# ------------------------------------------------------------------ embedding


@pytest.mark.parametrize("padding_idx", [-1, 0, 4, -3, 9])
def test_embedding_padding_index(padding_idx: int) -> None:
    # torch.embedding: a negative padding_idx means none (nn.functional.embedding counts it from the end).
    indices = torch.tensor([[0, 1, 4], [4, 3, 0]])
    check(lambda lib, w, i: lib.embedding(w, i, padding_idx), rand(5, 3), indices)


def test_embedding_options() -> None:
    indices = torch.tensor([0, 2, 2, 1, 2])
    check(lambda lib, w, i: lib.embedding(w, i, -1, True), rand(4, 2), indices)
    check(lambda lib, w, i: lib.embedding(w, i), rand(4, 2), indices.int())
    check_error(RuntimeError, lambda lib, w, i: lib.embedding(w, i), rand(4, 2), indices.float())
    check_error(IndexError, lambda lib, w, i: lib.embedding(w, i), rand(4, 2), torch.tensor([7]))


def test_embedding_sparse_gradient() -> None:
    w = to_genesis(rand(4, 2))
    genesis.embedding(w, genesis.tensor([0, 3], device=DEVICE), sparse=True).sum().backward()
    assert w.grad.is_sparse and w.grad.device == w.device
    assert genesis.equal(w.grad.to_dense(), genesis.tensor([[1.0, 1.0], [0, 0], [0, 0], [1, 1]], dtype=w.dtype,
                                                           device=DEVICE))


# ------------------------------------------------------------------ losses with integer reductions, pooling, padding

NAMESPACE_LOSSES = {
    "binary_cross_entropy_with_logits": (lambda lib, x, y, r: lib.binary_cross_entropy_with_logits(x, y, None, None, r),
                                         lambda: (rand(4, 3, seed=1), rand(4, 3, seed=2, low=0.0))),
    "binary_cross_entropy_with_logits pos_weight": (
        lambda lib, x, y, r: lib.binary_cross_entropy_with_logits(x, y, pos_weight=y[0] + 1, reduction=r),
        lambda: (rand(4, 3, seed=1), rand(4, 3, seed=2, low=0.0, requires_grad=False))),
    "kl_div": (lambda lib, x, y, r: lib.kl_div(x.log_softmax(1), y, r), lambda: (rand(4, 3, seed=3),
                                                                                 rand(4, 3, seed=4, low=0.1))),
    "kl_div log_target": (lambda lib, x, y, r: lib.kl_div(x, y, r, log_target=True),
                          lambda: (rand(4, 3, seed=3), rand(4, 3, seed=4))),
    "cosine_embedding_loss": (lambda lib, x, y, r: lib.cosine_embedding_loss(x, y, (x[:, 0] > 0).double() * 2 - 1,
                                                                             0.1, r),
                              lambda: (rand(5, 3, seed=5), rand(5, 3, seed=6))),
    "margin_ranking_loss": (lambda lib, x, y, r: lib.margin_ranking_loss(x, y, (x > y).double() * 2 - 1, 0.2, r),
                            lambda: (rand(6, seed=7), rand(6, seed=8))),
    "hinge_embedding_loss": (lambda lib, x, y, r: lib.hinge_embedding_loss(x, (y > 0).double() * 2 - 1, 0.5, r),
                             lambda: (rand(6, seed=9), rand(6, seed=10))),
    "triplet_margin_loss": (lambda lib, x, y, r: lib.triplet_margin_loss(x, y, x.flip(0), 1.0, 2, 1e-6, False, r),
                            lambda: (rand(4, 3, seed=11), rand(4, 3, seed=12))),
    "poisson_nll_loss": (lambda lib, x, y, r: lib.poisson_nll_loss(x, y, True, True, 1e-8, r),
                         lambda: (rand(4, 3, seed=13), rand(4, 3, seed=14, low=0.0, high=3.0))),
}


@pytest.mark.parametrize("name", list(NAMESPACE_LOSSES))
@pytest.mark.parametrize("reduction", [0, 1, 2])
def test_namespace_losses_take_integer_reductions(name: str, reduction: int) -> None:
    fn, inputs = NAMESPACE_LOSSES[name]
    check(lambda lib, x, y: fn(lib, x, y, reduction), *inputs())


def test_namespace_loss_defaults_and_bad_reductions() -> None:
    # torch's bindings default to no reduction (0), unlike torch.nn.functional's "mean"
    x, y = rand(4, 3, seed=1), rand(4, 3, seed=2, low=0.0)
    check(lambda lib, x, y: lib.binary_cross_entropy_with_logits(x, y), x, y)
    check(lambda lib, x, y: lib.kl_div(x, y), x, y)
    check(lambda lib, x: lib.hinge_embedding_loss(x, (x > 0).double() * 2 - 1), x)
    check(lambda lib, x, y: lib.kl_div(x, y, 3), x, y)  # an integer other than 1 and 2 reduces nothing
    check_error(TypeError, lambda lib, x, y: lib.kl_div(x, y, "mean"), x, y)
    log_probs = rand(10, 2, 5, seed=3).log_softmax(2).detach().requires_grad_()
    targets = torch.tensor([[1, 2, 3, 4], [2, 2, 3, 0]])
    for reduction in (0, 1, 2):
        check(lambda lib, lp, t, r=reduction: lib.ctc_loss(lp, t, [10, 10], [4, 3], 0, r), log_probs, targets)


def test_namespace_pooling_and_padding() -> None:
    x1, x2, x3 = rand(2, 3, 9, seed=4), rand(1, 2, 7, 8, seed=5), rand(1, 2, 4, 6, 6, seed=6)
    check(lambda lib, x: lib.max_pool1d(x, 3), x1)
    check(lambda lib, x: lib.max_pool1d(x, 2, [], 1, 1, True), x1)
    check(lambda lib, x: lib.max_pool2d(x, 2, (1, 2)), x2)
    check(lambda lib, x: lib.max_pool3d(x, 2), x3)
    check(lambda lib, x: lib.max_pool1d_with_indices(x, 3, 2), x1)
    check(lambda lib, x: lib.adaptive_max_pool1d(x, 4), x1)
    check(lambda lib, x: lib.avg_pool1d(x, 3), x1)
    check(lambda lib, x: lib.adaptive_avg_pool1d(x, 4), x1)
    check(lambda lib, x: lib.constant_pad_nd(x, (1, 2, 0, -1), 0.5), x2)
    check(lambda lib, x, w: lib.rms_norm(x, (8,), w, 1e-5), x2, rand(8, seed=7))
