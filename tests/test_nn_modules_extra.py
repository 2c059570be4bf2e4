"""Padding, folding, shuffling, shrink/RReLU, distance, pooling/unpooling, 3-d norm/dropout, margin and triplet
losses, EmbeddingBag and lazy layers against torch: values, every input and parameter gradient, repr, state_dict
keys and errors."""

import numpy as np
import pytest
import torch

import genesis
import genesis.nn as nn
from tests.helpers import DEVICE, check, check_error, check_module, expected_repr, rand, to_genesis, to_torch


def pair(make):
    t = make(torch).double()
    g = make(genesis).to(DEVICE, genesis.float64)
    assert list(g.state_dict()) == list(t.state_dict())
    assert repr(g) == expected_repr(t)
    return g, t


def long(values):
    return torch.tensor(values, dtype=torch.long)


@pytest.mark.parametrize("make,shape", [
    (lambda lib: lib.nn.ZeroPad1d(2), (2, 3, 4)),
    (lambda lib: lib.nn.ZeroPad2d((1, 2, 0, 1)), (2, 3, 4, 4)),
    (lambda lib: lib.nn.ZeroPad3d(1), (1, 2, 3, 3, 3)),
    (lambda lib: lib.nn.ConstantPad1d((1, -1), 2.5), (2, 3, 4)),
    (lambda lib: lib.nn.ConstantPad2d(1, -1.0), (3, 4, 4)),
    (lambda lib: lib.nn.ConstantPad3d((1, 0, 0, 1, 1, 0), 0.5), (1, 2, 3, 3, 3)),
    (lambda lib: lib.nn.ReflectionPad1d(2), (2, 3, 5)),
    (lambda lib: lib.nn.ReflectionPad2d((1, 2, 2, 1)), (2, 3, 4, 4)),
    (lambda lib: lib.nn.ReflectionPad2d(1), (3, 4, 4)),
    (lambda lib: lib.nn.ReflectionPad3d(1), (1, 2, 3, 3, 3)),
    (lambda lib: lib.nn.ReplicationPad1d((3, 1)), (2, 3, 4)),
    (lambda lib: lib.nn.ReplicationPad2d((0, 2, 1, 3)), (2, 2, 3, 4)),
    (lambda lib: lib.nn.ReplicationPad3d(1), (1, 2, 2, 3, 3)),
    (lambda lib: lib.nn.CircularPad1d(2), (2, 3, 4)),
    (lambda lib: lib.nn.CircularPad2d((1, 2, 1, 0)), (2, 2, 3, 4)),
    (lambda lib: lib.nn.CircularPad3d(1), (1, 2, 2, 3, 3)),
    (lambda lib: lib.nn.Fold((4, 5), 2), (2, 12, 12)),
    (lambda lib: lib.nn.Fold(4, (2, 3), padding=1, stride=2), (12, 6)),
    (lambda lib: lib.nn.Unfold((2, 3), padding=1, stride=2), (2, 3, 5, 5)),
    (lambda lib: lib.nn.Unfold(2, dilation=2), (2, 4, 5)),
    (lambda lib: lib.nn.PixelUnshuffle(2), (2, 3, 4, 6)),
    (lambda lib: lib.nn.PixelUnshuffle(3), (2, 2, 3, 3, 6)),
    (lambda lib: lib.nn.ChannelShuffle(2), (2, 4, 3, 3)),
    (lambda lib: lib.nn.ChannelShuffle(3), (2, 6, 5)),
    (lambda lib: lib.nn.Softmax2d(), (2, 3, 4, 4)),
    (lambda lib: lib.nn.Softmax2d(), (3, 4, 4)),
    (lambda lib: lib.nn.Hardshrink(), (3, 4)),
    (lambda lib: lib.nn.Hardshrink(1.2), (3, 4)),
    (lambda lib: lib.nn.Softshrink(), (3, 4)),
    (lambda lib: lib.nn.Softshrink(1.0), (3, 4)),
    (lambda lib: lib.nn.RReLU().eval(), (3, 4)),
    (lambda lib: lib.nn.RReLU(0.1, 0.4).eval(), (3, 4)),
    (lambda lib: lib.nn.AvgPool1d(3, stride=2, padding=1, ceil_mode=True), (2, 3, 8)),
    (lambda lib: lib.nn.AvgPool1d(2, count_include_pad=False), (3, 7)),
    (lambda lib: lib.nn.AdaptiveMaxPool1d(3), (2, 3, 7)),
    (lambda lib: lib.nn.AdaptiveMaxPool1d(4), (3, 8)),
    (lambda lib: lib.nn.AdaptiveMaxPool3d(2), (1, 2, 5, 4, 3)),
    (lambda lib: lib.nn.AdaptiveMaxPool3d((3, None, 2)), (2, 4, 3, 5)),
    (lambda lib: lib.nn.AdaptiveAvgPool3d((2, 3, 2)), (2, 2, 5, 7, 4)),
    (lambda lib: lib.nn.AdaptiveAvgPool3d((None, 2, 3)), (2, 3, 4, 6)),
    (lambda lib: lib.nn.AdaptiveAvgPool3d(1), (1, 2, 3, 3, 3)),
    (lambda lib: lib.nn.InstanceNorm3d(3), (2, 3, 3, 4, 2)),
    (lambda lib: lib.nn.InstanceNorm3d(3, affine=True), (3, 3, 4, 2)),
    (lambda lib: lib.nn.Dropout3d().eval(), (2, 3, 2, 2, 2)),
    (lambda lib: lib.nn.FeatureAlphaDropout(0.2).eval(), (2, 3, 4)),
])
def test_layer_parity(make, shape):
    g, t = pair(make)
    check_module(g, t, rand(*shape, low=-3, high=3))


@pytest.mark.parametrize("make", [
    # torch's Hardswish and Hardsigmoid leave ``inplace`` out of their repr; its other activations print it
    *(lambda lib, name=name: getattr(lib.nn, name)(inplace=True)
      for name in ("Hardswish", "Hardsigmoid", "ReLU", "ReLU6", "SiLU", "Mish", "SELU")),
    # Upsample keeps a tuple of factors as floats; AvgPool1d its sizes as 1-tuples
    lambda lib: lib.nn.Upsample(scale_factor=(1, 2), mode="bilinear"),
    lambda lib: lib.nn.Upsample(scale_factor=3),
    lambda lib: lib.nn.AvgPool1d(3, padding=1),
])
def test_reprs_as_torch(make):
    assert repr(make(genesis)) == repr(make(torch))


@pytest.mark.parametrize("make,shape", [
    (lambda lib: lib.nn.LPPool1d(2, 3), (2, 3, 7)),
    (lambda lib: lib.nn.LPPool1d(3, 2, stride=1, ceil_mode=True), (2, 3, 6)),
    (lambda lib: lib.nn.LPPool2d(2, (2, 3)), (2, 3, 5, 6)),
    (lambda lib: lib.nn.LPPool2d(1.5, 2, stride=1), (1, 2, 4, 4)),
])
def test_lp_pool(make, shape):
    g, t = pair(make)
    check_module(g, t, rand(*shape, low=0.1, high=2))


def test_lp_pool3d():
    g, t = pair(lambda lib: lib.nn.LPPool3d(2, (2, 1, 2)))
    check_module(g, t, rand(1, 2, 4, 3, 4, low=0.1, high=2))
    check(lambda lib, x: lib.nn.functional.lp_pool3d(x, 3.0, 2, stride=1), rand(2, 3, 3, 3, low=0.1, high=2))


@pytest.mark.parametrize("fn,shape", [
    (lambda lib, x: lib.nn.functional.max_pool1d_with_indices(x, 3, 2, 1), (2, 3, 8)),
    (lambda lib, x: lib.nn.functional.max_pool2d_with_indices(x, 2, ceil_mode=True), (1, 2, 5, 5)),
    (lambda lib, x: lib.nn.functional.max_pool3d_with_indices(x, 2), (1, 2, 4, 4, 4)),
    (lambda lib, x: lib.nn.functional.adaptive_max_pool2d_with_indices(x, (3, 2)), (2, 3, 7, 5)),
    (lambda lib, x: lib.nn.functional.adaptive_max_pool2d_with_indices(x, 2), (3, 4, 4)),
])
def test_pool_with_indices(fn, shape):
    check(fn, rand(*shape))


def test_instance_norm3d_running_stats():
    g, t = pair(lambda lib: lib.nn.InstanceNorm3d(2, affine=True, track_running_stats=True))
    for step in range(2):
        check_module(g, t, rand(2, 2, 3, 3, 2, seed=step))
        g.load_state_dict({k: to_genesis(v) for k, v in t.state_dict().items()})
    g.eval()
    t.eval()
    check_module(g, t, rand(2, 2, 3, 3, 2, seed=5))


@pytest.mark.parametrize("fn,shape", [
    (lambda lib, x: lib.nn.functional.adaptive_max_pool1d(x, 3, return_indices=True), (2, 3, 8)),
    (lambda lib, x: lib.nn.functional.adaptive_max_pool1d(x, 5, True), (3, 7)),
    (lambda lib, x: lib.nn.functional.adaptive_max_pool3d(x, (2, 3, 2), return_indices=True), (2, 2, 5, 7, 4)),
    (lambda lib, x: lib.nn.functional.adaptive_max_pool3d(x, 2, True), (2, 4, 3, 5)),
    (lambda lib, x: lib.nn.AdaptiveMaxPool3d(2, return_indices=True)(x), (1, 1, 4, 4, 4)),
    (lambda lib, x: lib.nn.functional.adaptive_max_pool2d(x, (3, None), return_indices=True), (2, 2, 7, 5)),
    (lambda lib, x: lib.nn.AdaptiveMaxPool2d(2, return_indices=True)(x), (3, 5, 4)),
])
def test_adaptive_max_pool_indices(fn, shape):
    check(fn, rand(*shape))


@pytest.mark.parametrize("fn", [
    lambda lib, x: lib.nn.functional.hardshrink(x, 0.7),
    lambda lib, x: lib.nn.functional.softshrink(x, 0.0),
    lambda lib, x: lib.nn.functional.rrelu(x, 0.2, 0.3),
    lambda lib, x: lib.nn.functional.pixel_unshuffle(x.reshape(2, 2, 2, 2), 2),
    lambda lib, x: lib.nn.functional.channel_shuffle(x.reshape(2, 4, 2), 4),
    lambda lib, x: lib.nn.functional.adaptive_avg_pool3d(x.reshape(1, 2, 2, 2, 2), (3, 1, 2)),
    lambda lib, x: lib.nn.functional.lp_pool1d(x.abs().reshape(2, 8), 2, 3, 2),
    lambda lib, x: lib.nn.functional.dropout3d(x.reshape(2, 1, 2, 2, 2), 0.5, training=False),
    lambda lib, x: lib.nn.functional.feature_alpha_dropout(x.reshape(4, 4), 0.5),
])
def test_functional_forms(fn):
    check(fn, rand(16, low=-2, high=2))


def test_rrelu_inplace():
    check(lambda lib, x: lib.nn.functional.rrelu_(x * 1.0, 0.1, 0.2), rand(3, 4))
    g, t = pair(lambda lib: lib.nn.RReLU(0.1, 0.4, inplace=True).eval())
    check_module(g, t, rand(3, 4), call=lambda m, x: m(x * 1.0))


@pytest.mark.parametrize("fn", [
    lambda lib, x: lib.nn.functional.relu_(x * 1.0),
    lambda lib, x: lib.nn.functional.elu_(x * 1.0, 0.5),
    lambda lib, x: lib.nn.functional.leaky_relu_(x * 1.0, 0.2),
    lambda lib, x: lib.nn.functional.hardtanh_(x * 1.0, -0.5, 0.7),
    lambda lib, x: lib.nn.functional.selu_(x * 1.0),
    lambda lib, x: lib.nn.functional.celu_(x * 1.0, 2.0),
    lambda lib, x: lib.nn.functional.threshold_(x * 1.0, 0.1, -2.0),
    lambda lib, x: lib.nn.functional.upsample_nearest(x.reshape(1, 2, 2, 4), scale_factor=2),
    lambda lib, x: lib.nn.functional.upsample_bilinear(x.reshape(1, 2, 2, 4), size=(3, 5)),
])
@pytest.mark.filterwarnings("ignore:.*is deprecated")  # torch's upsample_* aliases warn
def test_inplace_activations_and_upsample_aliases(fn):
    check(fn, rand(16, low=-2, high=2))


@pytest.mark.parametrize("p,shape", [(2, (5, 3)), (1, (4, 6)), (3.5, (3, 2)), (2, (1, 3))])
def test_pdist(p, shape):
    check(lambda lib, x: lib.nn.functional.pdist(x, p), rand(*shape))


def test_gumbel_softmax():
    genesis.manual_seed(0)
    logits = to_genesis(rand(6, 5))
    soft = nn.functional.gumbel_softmax(logits, tau=0.5)
    torch.testing.assert_close(to_torch(soft).sum(-1), torch.ones(6, dtype=torch.float64))
    hard = nn.functional.gumbel_softmax(logits, hard=True, dim=0)
    hard_t = to_torch(hard)
    assert torch.equal(hard_t.sum(0), torch.ones(5, dtype=torch.float64)) and set(hard_t.unique().tolist()) <= {0, 1}
    # Straight-through: the hard sample's gradient is the soft sample's.
    (hard * to_genesis(rand(6, 5, seed=3), requires_grad=False)).sum().backward()
    assert logits.grad is not None and to_torch(logits.grad).abs().sum() > 0
    draws = torch.stack([to_torch(nn.functional.gumbel_softmax(logits, hard=True)).argmax(-1) for _ in range(30)])
    assert len(draws.unique()) > 1


@pytest.mark.parametrize("make", [
    lambda lib: lib.nn.CosineSimilarity(),
    lambda lib: lib.nn.CosineSimilarity(dim=-1, eps=1e-3),
    lambda lib: lib.nn.PairwiseDistance(),
    lambda lib: lib.nn.PairwiseDistance(p=1.0, eps=1e-3, keepdim=True),
])
def test_distance_layers(make):
    g, t = pair(make)
    check_module(g, t, rand(4, 5), rand(4, 5, seed=1))


@pytest.mark.parametrize("fn,shapes", [
    (lambda lib, x: lib.nn.ReflectionPad2d((1, 0, 2, 1))(x), [(2, 3, 4, 4)]),
    (lambda lib, x: lib.nn.functional.adaptive_max_pool3d(x, (2, 3, 1)), [(1, 2, 5, 4, 3)]),
    (lambda lib, x: lib.nn.functional.adaptive_avg_pool3d(x, 2), [(2, 3, 5, 3)]),
    (lambda lib, x: lib.nn.functional.softshrink(x, 0.2), [(3, 4)]),
    (lambda lib, x: lib.nn.functional.pixel_unshuffle(x, 2), [(1, 2, 4, 4)]),
    (lambda lib, w, i: lib.nn.functional.embedding_bag(i, w, mode="max"), [(3, 4), [[0, 2], [1, 1]]]),
    (lambda lib, a, p, n: lib.nn.functional.triplet_margin_loss(a, p, n, swap=True), [(3, 4), (3, 4), (3, 4)]),
    (lambda lib, x, y: lib.nn.functional.multi_margin_loss(x, y, p=2), [(3, 4), [1, 0, 3]]),
    (lambda lib, x: lib.nn.functional.multilabel_soft_margin_loss(x, (x > 0).to(x.dtype)), [(3, 4)]),
])
def test_float32(fn, shapes):
    # Tuples are the shapes of float32 inputs; lists are index values (int64 inputs on the tested device).
    check(fn, *[rand(*shape, dtype=torch.float32, seed=k) if isinstance(shape, tuple) else long(shape)
                for k, shape in enumerate(shapes)])


# ------------------------------------------------------------------ unpooling


@pytest.mark.parametrize("n,shape,kernel,stride,padding,output_size", [
    (1, (2, 3, 8), 2, None, 0, None),
    (1, (3, 9), 3, 2, 1, None),
    (2, (2, 2, 4, 6), 2, None, 0, None),
    (2, (1, 2, 5, 5), 3, 2, 1, None),
    (2, (1, 2, 5, 5), 2, 2, 0, (1, 2, 5, 5)),
    (3, (1, 2, 4, 4, 4), 2, None, 0, None),
])
def test_max_unpool(n, shape, kernel, stride, padding, output_size):
    def fn(lib, x):
        pool = getattr(lib.nn.functional, f"max_pool{n}d")
        unpool = getattr(lib.nn.functional, f"max_unpool{n}d")
        values, indices = pool(x, kernel, stride, padding, return_indices=True)
        return unpool(values, indices, kernel, stride, padding, output_size)

    check(fn, rand(*shape))


def test_max_unpool_module():
    g, t = pair(lambda lib: lib.nn.MaxUnpool2d(2, 1, 1))
    assert repr(nn.MaxUnpool1d(2)) == repr(torch.nn.MaxUnpool1d(2))
    x = rand(1, 2, 4, 4)
    values, indices = torch.nn.functional.max_pool2d(x.detach(), 2, 1, 1, return_indices=True)
    check_module(g, t, values.requires_grad_(), indices)


# ------------------------------------------------------------------ losses


def signs(*shape, seed=0):
    return torch.where(rand(*shape, requires_grad=False, seed=seed) > 0, 1.0, -1.0).double()


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_hinge_embedding_loss(reduction):
    g, t = pair(lambda lib: lib.nn.HingeEmbeddingLoss(margin=0.5, reduction=reduction))
    check_module(g, t, rand(3, 4, low=-2, high=2), signs(3, 4))
    check(lambda lib, x, y: lib.nn.functional.hinge_embedding_loss(x, y), rand(5), signs(5, seed=1))


@pytest.mark.parametrize("p,margin,weighted,reduction", [
    (1, 1.0, False, "mean"), (2, 0.5, False, "sum"), (1, 2.0, True, "none"), (2, 1.0, True, "mean"),
])
def test_multi_margin_loss(p, margin, weighted, reduction):
    def make(lib):
        weight = lib.tensor([0.5, 1.0, 2.0, 1.5], dtype=lib.float64) if weighted else None
        return lib.nn.MultiMarginLoss(p=p, margin=margin, weight=weight, reduction=reduction)

    g, t = pair(make)
    check_module(g, t, rand(5, 4, low=-2, high=2), long([0, 3, 1, 1, 2]))
    check(lambda lib, x, y: lib.nn.functional.multi_margin_loss(x, y, p, margin, reduction=reduction), rand(4),
          long(2))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_multilabel_margin_loss(reduction):
    g, t = pair(lambda lib: lib.nn.MultiLabelMarginLoss(reduction=reduction))
    target = long([[3, 0, -1, 1], [1, 2, 3, 0], [-1, 1, 1, 1], [2, 2, -1, -1]])
    check_module(g, t, rand(4, 4, low=-2, high=2), target)
    check(lambda lib, x, y: lib.nn.functional.multilabel_margin_loss(x, y, reduction=reduction), rand(4),
          long([1, 3, -1, 0]))


@pytest.mark.parametrize("default", [genesis.float64, genesis.float32])
def test_multilabel_margin_loss_under_any_default_dtype(default):
    # The loss must not depend on the default dtype: float64 inputs with float64 as the default.
    before = genesis.get_default_dtype()
    genesis.set_default_dtype(default)
    try:
        check(lambda lib, x, y: lib.nn.functional.multilabel_margin_loss(x, y), rand(3, 5, seed=4),
              long([[0, 3, -1, 0, 0], [4, -1, 0, 0, 0], [1, 2, 3, -1, 0]]))
    finally:
        genesis.set_default_dtype(before)


@pytest.mark.parametrize("weighted,reduction", [(False, "mean"), (True, "sum"), (True, "none")])
def test_multilabel_soft_margin_loss(weighted, reduction):
    def make(lib):
        weight = lib.tensor([0.5, 1.0, 2.0], dtype=lib.float64) if weighted else None
        return lib.nn.MultiLabelSoftMarginLoss(weight=weight, reduction=reduction)

    g, t = pair(make)
    check_module(g, t, rand(4, 3, low=-3, high=3), (signs(4, 3) > 0).double())
    check(lambda lib, x, y: lib.nn.functional.multilabel_soft_margin_loss(x, y), rand(3), rand(3, seed=1, low=0))


@pytest.mark.parametrize("kwargs", [
    {}, {"margin": 0.5, "p": 1.0}, {"swap": True, "reduction": "sum"}, {"p": 3.0, "eps": 1e-3, "reduction": "none"},
])
def test_triplet_margin_loss(kwargs):
    g, t = pair(lambda lib: lib.nn.TripletMarginLoss(**kwargs))
    check_module(g, t, rand(4, 5), rand(4, 5, seed=1), rand(4, 5, seed=2))
    check(lambda lib, a, p, n: lib.nn.functional.triplet_margin_loss(a, p, n, **kwargs), rand(5), rand(5, seed=1),
          rand(5, seed=2))


@pytest.mark.parametrize("kwargs", [{}, {"margin": 0.3, "swap": True, "reduction": "sum"}])
def test_triplet_margin_with_distance_loss(kwargs):
    g, t = pair(lambda lib: lib.nn.TripletMarginWithDistanceLoss(**kwargs))
    check_module(g, t, rand(4, 5), rand(4, 5, seed=1), rand(4, 5, seed=2))

    def cosine(lib):
        return lambda x, y: 1.0 - lib.nn.functional.cosine_similarity(x, y)

    check(lambda lib, a, p, n: lib.nn.functional.triplet_margin_with_distance_loss(
        a, p, n, distance_function=cosine(lib), **kwargs), rand(3, 4), rand(3, 4, seed=1), rand(3, 4, seed=2))
    g, t = pair(lambda lib: lib.nn.TripletMarginWithDistanceLoss(distance_function=lib.nn.CosineSimilarity()))
    check_module(g, t, rand(4, 5), rand(4, 5, seed=1), rand(4, 5, seed=2))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("targets,input_lengths,target_lengths,blank,zero_infinity", [
    ([[1, 2, 2, 0], [3, 1, 4, 4], [1, 1, 1, 2]], [10, 8, 5], [3, 4, 2], 0, False),
    ([1, 2, 2, 3, 1, 4], [10, 2, 7], [3, 3, 0], 0, True),
    ([1, 2, 2, 3, 1, 0], [10, 10, 7], [3, 3, 0], 4, False),
])
def test_ctc_loss(reduction, targets, input_lengths, target_lengths, blank, zero_infinity):
    # Through log_softmax, as CTC is used (the gradient of log_probs itself is the test below).
    def fn(lib, x, y):
        loss = lib.nn.CTCLoss(blank, reduction, zero_infinity)
        return loss(x.log_softmax(2), y, lib.tensor(input_lengths), lib.tensor(target_lengths))

    check(fn, rand(10, 3, 5, low=-2, high=2), long(targets))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_ctc_loss_gradient_of_log_probs_is_torchs(reduction):
    # The gradient of log_probs itself (a leaf): torch's is exp(log_probs) - posterior, which Genesis returns too.
    def fn(lib, x, y):
        return lib.nn.functional.ctc_loss(x, y, (6, 4), (2, 1), reduction=reduction, zero_infinity=True)

    lp = torch.randn(6, 2, 4, generator=torch.Generator().manual_seed(3)).log_softmax(2).requires_grad_()
    check(fn, lp, long([[1, 3], [2, 0]]))


@pytest.mark.parametrize("targets,target_lengths", [
    ([[1, 2], [3, 3]], [3, 2]),  # a target length beyond the padded targets
    ([1, 2, 3, 3], [3, 2]),  # concatenated targets shorter than the lengths add up to
    ([1, 2, 3], [2, 2]),
    ([[1, 2], [3, 3]], [-1, 2]),
])
def test_ctc_loss_refuses_target_lengths_the_targets_do_not_hold(targets, target_lengths):
    check_error(RuntimeError, lambda lib, x, y: lib.nn.functional.ctc_loss(x.log_softmax(2), y, (6, 6),
                                                                           target_lengths), rand(6, 2, 5),
                long(targets))


@pytest.mark.parametrize("targets,target_lengths", [([[1, 7], [2, -1]], [2, 1]), ([1, 2, -3], [1, 2])])
def test_ctc_loss_refuses_labels_outside_the_classes(targets, target_lengths):
    # torch's CPU kernel reads past the row there (its result is undefined); Genesis names the label. Padding
    # beyond a target's length (the -1 of the first case) is never read and stays allowed.
    log_probs = to_genesis(rand(6, 2, 5)).log_softmax(2)
    with pytest.raises(RuntimeError, match="out of range for 5 classes"):
        genesis.nn.functional.ctc_loss(log_probs, genesis.tensor(targets, device=DEVICE), (6, 6), target_lengths)
    genesis.nn.functional.ctc_loss(log_probs, genesis.tensor([[1, 2], [2, -1]], device=DEVICE), (6, 6), (2, 1))


def test_ctc_loss_takes_targets_on_the_host():
    # torch's cuDNN path wants host targets beside cuda log-probabilities: the loss is the same either way.
    log_probs = to_genesis(rand(6, 2, 5)).log_softmax(2)
    targets = [[1, 2], [3, 3]]
    on_host = genesis.nn.functional.ctc_loss(log_probs, genesis.tensor(targets), (6, 5), (2, 2))
    beside = genesis.nn.functional.ctc_loss(log_probs, genesis.tensor(targets, device=DEVICE), (6, 5), (2, 2))
    np.testing.assert_allclose(on_host.item(), beside.item(), rtol=1e-12)


def test_ctc_loss_unbatched_and_float32():
    check(lambda lib, x, y: lib.nn.functional.ctc_loss(x.log_softmax(1), y, (7,), (3,), reduction="none"),
          rand(9, 4), long([1, 3, 3]))
    check(lambda lib, x, y: lib.nn.functional.ctc_loss(x.log_softmax(2), y, (6, 5), (2, 1)),
          rand(6, 2, 3, dtype=torch.float32), long([[1, 2], [2, 0]]))
    assert repr(nn.CTCLoss()) == repr(torch.nn.CTCLoss())


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_ctc_loss_impossible_alignment_has_nan_gradient(reduction):
    # Without zero_infinity torch's gradient is NaN over the valid steps of a sample whose loss is infinite (its
    # target needs 7 steps, it has 5), whatever gradient reaches that loss; the steps after its length get zero.
    def fn(lib, x, y):
        loss = lib.nn.functional.ctc_loss(x.log_softmax(2), y, (5, 4), (4, 2), reduction=reduction)
        return loss * lib.tensor([0.0, 1.0], dtype=loss.dtype, device=loss.device) if reduction == "none" else loss

    check(fn, rand(6, 2, 4), long([[1, 1, 1, 1], [1, 2, 0, 0]]))


@pytest.mark.parametrize("shape,dtype,targets,input_lengths,target_lengths", [
    ((5, 2, 3), "float32", [[1, 2]], (5, 5), (2, 2)),  # padded targets of another batch size
    ((5, 2, 3), "float32", [[1, 2]], (6, 5), (2, 2)),  # ... reported before a bad input length, as torch
    ((5, 2, 3), "float32", [[[1, 2], [1, 2]]], (5, 5), (2, 2)),  # 3-D targets
    ((5, 2, 3), "float32", [[1, 2], [1, 2]], (5, 5, 5), (2, 2)),  # an input length too many
    ((5, 2, 3), "float32", [[1, 2], [1, 2]], (5, 5), (2,)),
    ((5, 2, 3), "float32", [[1, 2], [1, 2]], (5, -1), (2, 2)),
    ((5, 2, 3), "float32", [[1, 2], [1, 2]], (6, 5), (2, 2)),
    ((5,), "float32", [1], (5,), (1,)),  # 1-D log_probs: unbatched, one dim short
    ((5, 2, 3), "int64", [[1, 2], [1, 2]], (5, 5), (2, 2)),
    ((5, 2, 3), "float16", [[1, 2], [1, 2]], (5, 5), (2, 2)),
])
def test_ctc_loss_argument_errors_are_torchs(shape, dtype, targets, input_lengths, target_lengths):
    def message(lib):
        log_probs = lib.zeros(shape, dtype=getattr(lib, dtype))
        with pytest.raises((RuntimeError, NotImplementedError)) as caught:
            lib.nn.functional.ctc_loss(log_probs, lib.tensor(targets), input_lengths, target_lengths)
        return caught.type, str(caught.value)

    assert message(genesis) == message(torch)


@pytest.mark.parametrize("cutoffs,div_value,head_bias", [([3, 6], 2.0, False), ([2], 4.0, True)])
def test_adaptive_log_softmax(cutoffs, div_value, head_bias):
    g, t = pair(lambda lib: lib.nn.AdaptiveLogSoftmaxWithLoss(8, 10, cutoffs, div_value, head_bias))
    check_module(g, t, rand(6, 8), long([0, 9, 4, 2, 7, 3]))
    check_module(g, t, rand(8), long(5))
    check_module(g, t, rand(5, 8), call=lambda m, x: m.log_prob(x))
    x = rand(7, 8, low=-3, high=3, requires_grad=False)
    assert torch.equal(to_torch(g.predict(to_genesis(x))), t.predict(x))


def test_adaptive_log_softmax_errors():
    for lib in (torch, genesis):
        with pytest.raises(ValueError):
            lib.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [6, 3])
        module = lib.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3])
        with pytest.raises(RuntimeError):
            module(lib.ones(2, 8), lib.tensor([1, 10]))
        with pytest.raises(RuntimeError):
            module(lib.ones(2, 8), lib.tensor([1, 2, 3]))
        with pytest.raises(RuntimeError):
            module(lib.ones(2, 8), lib.tensor([[1, 2]]))


def test_adaptive_log_softmax_names_the_target_range_as_torch():
    # On the CPU, where the check raises at the call (CUDA's runs on the device and reports later).
    messages = []
    for lib in (torch, genesis):
        with pytest.raises(RuntimeError) as info:
            lib.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3])(lib.ones(3, 8), lib.tensor([-1, 4, 12]))
        messages.append(str(info.value))
    assert messages[0] == messages[1] == "Target values should be in [0, 9], but values in range [-1, 12] were found. "


@pytest.mark.filterwarnings("ignore:.*NLLLoss2d.*deprecated")
def test_nll_loss_2d():
    g, t = pair(lambda lib: lib.nn.NLLLoss2d(ignore_index=1))
    check_module(g, t, rand(2, 3, 4, 4), torch.randint(0, 3, (2, 4, 4), generator=torch.Generator().manual_seed(0)))


# ------------------------------------------------------------------ embedding bags


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("offsets,include_last,padding_idx", [
    ([0, 2, 2, 5], False, None),
    ([0, 3, 3, 6, 8], True, None),
    ([0, 1, 4], False, 2),
    ([0], False, -1),
])
def test_embedding_bag(mode, offsets, include_last, padding_idx):
    indices = long([1, 2, 4, 2, 0, 3, 2, 1])
    check(lambda lib, w, i, o: lib.nn.functional.embedding_bag(i, w, o, mode=mode, include_last_offset=include_last,
                                                               padding_idx=padding_idx),
          rand(5, 3), indices, long(offsets))


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_2d(mode):
    check(lambda lib, w, i: lib.nn.functional.embedding_bag(i, w, mode=mode, padding_idx=0), rand(6, 4),
          long([[1, 0, 5], [0, 0, 0], [2, 2, 3]]))


def test_embedding_bag_per_sample_weights():
    check(lambda lib, w, i, o, s: lib.nn.functional.embedding_bag(i, w, o, mode="sum", per_sample_weights=s),
          rand(5, 3), long([1, 2, 4, 2, 0]), long([0, 2, 2]), rand(5, seed=1))
    check(lambda lib, w, i, s: lib.nn.functional.embedding_bag(i, w, mode="sum", per_sample_weights=s, padding_idx=1),
          rand(5, 3), long([[1, 2], [4, 1]]), rand(2, 2, seed=1))


@pytest.mark.parametrize("kwargs", [{}, {"mode": "max", "padding_idx": 0}, {"mode": "sum", "max_norm": 1.0},
                                    {"mode": "sum", "include_last_offset": True, "padding_idx": -2}])
def test_embedding_bag_module(kwargs):
    g, t = pair(lambda lib: lib.nn.EmbeddingBag(6, 3, **kwargs))
    # With include_last_offset the last offset is the number of indices (CSR).
    offsets = long([0, 2, 3, 6] if kwargs.get("include_last_offset") else [0, 2, 3])
    check_module(g, t, long([1, 0, 5, 4, 4, 2]), offsets)


def test_embedding_bag_module_init_and_pretrained():
    bag = nn.EmbeddingBag(4, 3, padding_idx=1, mode="sum")
    assert to_torch(bag.weight)[1].eq(0).all() and to_torch(bag.weight).abs().sum() > 0
    weight = rand(4, 3, requires_grad=False)
    g = nn.EmbeddingBag.from_pretrained(to_genesis(weight), mode="max")
    t = torch.nn.EmbeddingBag.from_pretrained(weight, mode="max")
    assert repr(g) == expected_repr(t) and not g.weight.requires_grad
    check_module(g, t, long([[0, 3], [2, 1]]))
    # Sizes are shown as given (numpy integers from a config too), as torch's repr.
    sizes = (np.int64(4), np.int64(3))
    assert repr(nn.EmbeddingBag(*sizes)) == expected_repr(torch.nn.EmbeddingBag(*sizes))


# ------------------------------------------------------------------ lazy layers


@pytest.mark.parametrize("make,shape", [
    (lambda lib: lib.nn.LazyLinear(3), (4, 5)),
    (lambda lib: lib.nn.LazyLinear(2, bias=False), (2, 3, 4)),
    (lambda lib: lib.nn.LazyConv1d(4, 3, padding=1), (2, 3, 6)),
    (lambda lib: lib.nn.LazyConv2d(4, 3, stride=2, groups=2, bias=False), (2, 4, 5, 5)),
    (lambda lib: lib.nn.LazyConv2d(2, 3), (3, 5, 5)),
    (lambda lib: lib.nn.LazyConv3d(2, 2), (1, 2, 3, 3, 3)),
])
def test_lazy_layers(make, shape):
    g, t = make(genesis).to(DEVICE), make(torch)
    assert repr(g) == expected_repr(t)
    assert list(g.state_dict()) == list(t.state_dict())
    assert g.has_uninitialized_params()
    params = list(g.parameters())
    x = rand(*shape)
    t(x.float())
    out = g(to_genesis(x.float(), requires_grad=False))
    assert type(g).__name__ == type(t).__name__ and repr(g) == expected_repr(t)
    assert [p is q for p, q in zip(params, g.parameters())] == [True] * len(params)
    assert [tuple(p.shape) for p in g.parameters()] == [tuple(p.shape) for p in t.parameters()]
    # torch's initialization: weight and bias uniform within 1 / sqrt(fan_in); then torch's values.
    fan_in = to_torch(g.weight)[0].numel()
    for gp in g.parameters():
        assert to_torch(gp).abs().max() <= fan_in ** -0.5 and to_torch(gp).std() > 0
    assert tuple(out.shape) == tuple(t(x.float()).shape)
    g, t = g.double(), t.double()
    check_module(g, t, x)


@pytest.mark.parametrize("make,shape", [
    (lambda lib: lib.nn.LazyConvTranspose1d(3, 2, stride=2), (2, 4, 5)),
    (lambda lib: lib.nn.LazyConvTranspose2d(4, 3, stride=2, output_padding=1, groups=2), (1, 2, 3, 3)),
    (lambda lib: lib.nn.LazyConvTranspose3d(2, 2, bias=False), (1, 3, 2, 2, 2)),
    (lambda lib: lib.nn.LazyBatchNorm1d(), (4, 3)),
    (lambda lib: lib.nn.LazyBatchNorm2d(momentum=None, affine=False), (2, 3, 2, 2)),
    (lambda lib: lib.nn.LazyBatchNorm3d(track_running_stats=False), (2, 2, 2, 2, 2)),
    (lambda lib: lib.nn.LazyInstanceNorm1d(), (2, 3, 5)),
    (lambda lib: lib.nn.LazyInstanceNorm2d(affine=False, track_running_stats=False), (2, 3, 3, 3)),
    (lambda lib: lib.nn.LazyInstanceNorm3d(), (2, 2, 2, 3, 2)),
])
def test_lazy_transposed_conv_and_norms(make, shape):
    g, t = make(genesis).to(DEVICE), make(torch)
    assert repr(g) == expected_repr(t) and list(g.state_dict()) == list(t.state_dict())
    x = rand(*shape)
    t(x.float())
    g(to_genesis(x.float(), requires_grad=False))
    assert type(g).__name__ == type(t).__name__ and repr(g) == expected_repr(t)
    assert {k: tuple(v.shape) for k, v in g.state_dict().items()} == {k: tuple(v.shape) for k, v in
                                                                       t.state_dict().items()}
    if type(t).__name__.startswith(("BatchNorm", "InstanceNorm")):
        # Norm layers start from torch's fixed values: compare the whole state after one training step.
        for key, value in t.state_dict().items():
            assert_close = torch.testing.assert_close
            assert_close(to_torch(g.state_dict()[key]).to(value.dtype), value, rtol=1e-5, atol=1e-6)
    g, t = g.double(), t.double()
    check_module(g, t, x)


def test_lazy_load_state_dict_materializes():
    t = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.Flatten(),
                            torch.nn.Linear(16, 2)).double()
    g = nn.Sequential(nn.LazyConv2d(4, 3), nn.LazyBatchNorm2d(), nn.Flatten(), nn.LazyLinear(2)).to(DEVICE,
                                                                                                    genesis.float64)
    check_module(g, t, rand(2, 3, 4, 4))
    assert repr(g) == expected_repr(t)


# ------------------------------------------------------------------ errors


@pytest.mark.parametrize("exc,fn,inputs", [
    (RuntimeError, lambda lib, x: lib.nn.functional.softshrink(x, -1.0), (rand(3),)),
    (RuntimeError, lambda lib, x: lib.nn.functional.rrelu(x, 0.5, 0.2, training=True), (rand(3),)),
    (RuntimeError, lambda lib, x: lib.nn.functional.pixel_unshuffle(x, 2), (rand(1, 2, 5, 4),)),
    (RuntimeError, lambda lib, x: lib.nn.functional.pixel_unshuffle(x, 2), (rand(1, 2, 4, 5),)),
    (RuntimeError, lambda lib, x: lib.nn.functional.pixel_unshuffle(x, 0), (rand(1, 2, 4, 4),)),
    (RuntimeError, lambda lib, x: lib.nn.functional.channel_shuffle(x, 3), (rand(2, 4, 3),)),
    (RuntimeError, lambda lib, x: lib.nn.functional.channel_shuffle(x, 0), (rand(2, 4, 3),)),
    (RuntimeError, lambda lib, x: lib.nn.functional.channel_shuffle(x, 2), (rand(4),)),
    (ValueError, lambda lib, x: lib.nn.Softmax2d()(x), (rand(2, 3),)),
    (ValueError, lambda lib, x: lib.nn.CircularPad2d(1)(x), (rand(2, 3),)),
    (RuntimeError, lambda lib, x: lib.nn.ReflectionPad1d(3)(x), (rand(2, 3),)),
    (RuntimeError, lambda lib, x: lib.nn.ReflectionPad1d(1)(x), (rand(1, 2, 0),)),
    (NotImplementedError, lambda lib, x: lib.nn.ReflectionPad2d(1)(x), (rand(3, 3),)),
    (NotImplementedError, lambda lib, x: lib.nn.ReplicationPad1d(1)(x), (rand(2, 3, 4, 5),)),
    (NotImplementedError, lambda lib, x: lib.nn.ReplicationPad3d(1)(x), (rand(2, 3, 3),)),
    (RuntimeError, lambda lib, x: lib.nn.ConstantPad2d((1, 2, 3), 0.0)(x), (rand(2, 3, 3),)),
    (RuntimeError, lambda lib, x: lib.nn.ZeroPad2d(1)(x), (rand(3),)),
    (RuntimeError, lambda lib, x: lib.nn.functional.adaptive_max_pool1d(x, 2), (rand(2, 3, 4, 5),)),
    (RuntimeError, lambda lib, x: lib.nn.functional.adaptive_avg_pool3d(x, 2), (rand(2, 3),)),
    (RuntimeError, lambda lib, x: lib.nn.functional.adaptive_max_pool3d(x, 2), (rand(2, 3, 4),)),
    (ValueError, lambda lib, x: lib.nn.functional.dropout3d(x, 1.5), (rand(2, 3, 2, 2, 2),)),
    (ValueError, lambda lib, x: lib.nn.functional.feature_alpha_dropout(x, -0.1, True), (rand(2, 3),)),
    (RuntimeError, lambda lib, x, i: lib.nn.functional.max_unpool2d(x, i, 2), (rand(1, 1, 2, 2),
                                                                               long([[[[0, 1], [2, 99]]]]))),
    (ValueError, lambda lib, x, i: lib.nn.functional.max_unpool2d(x, i, 2, output_size=(7, 7)),
     (rand(1, 1, 2, 2), long([[[[0, 1], [2, 3]]]]))),
    (ValueError, lambda lib, x, y: lib.nn.functional.multi_margin_loss(x, y, p=3), (rand(3, 4), long([0, 1, 2]))),
    (RuntimeError, lambda lib, x, y: lib.nn.functional.multi_margin_loss(x, y), (rand(3, 4), long([0, 1, 5]))),
    (RuntimeError, lambda lib, x, y: lib.nn.functional.multi_margin_loss(x, y), (rand(3, 4), long([0, 1]))),
    (RuntimeError, lambda lib, x, y, w: lib.nn.functional.multi_margin_loss(x, y, weight=w),
     (rand(3, 4), long([0, 1, 2]), rand(3))),
    (RuntimeError, lambda lib, x, y: lib.nn.functional.multilabel_margin_loss(x, y), (rand(3, 4), long([0, 1, 2]))),
    (RuntimeError, lambda lib, x, y: lib.nn.functional.multilabel_margin_loss(x, y),
     (rand(2, 3), long([[0, 4, -1], [1, -1, 0]]))),
    (RuntimeError, lambda lib, a, p, n: lib.nn.functional.triplet_margin_loss(a, p, n),
     (rand(3, 4), rand(4), rand(3, 4, seed=1))),
    (ValueError, lambda lib, a, p, n: lib.nn.functional.triplet_margin_with_distance_loss(a, p, n, margin=0.0),
     (rand(3, 4), rand(3, 4, seed=1), rand(3, 4, seed=2))),
    (ValueError, lambda lib, a, p, n: lib.nn.functional.triplet_margin_loss(a, p, n, reduction="avg"),
     (rand(3, 4), rand(3, 4, seed=1), rand(3, 4, seed=2))),
    (ValueError, lambda lib, x, y: lib.nn.functional.ctc_loss(x, y, (3,), (1,), reduction="avg"),
     (rand(3, 1, 4), long([[1]]))),
    (RuntimeError, lambda lib, x, y: lib.nn.functional.ctc_loss(x, y, (4,), (1,)), (rand(3, 1, 4), long([[1]]))),
    (RuntimeError, lambda lib, x, y: lib.nn.functional.ctc_loss(x, y, (3,), (1,), blank=4),
     (rand(3, 1, 4), long([[1]]))),
    (RuntimeError, lambda lib, x: lib.nn.functional.pdist(x), (rand(2, 3, 4),)),
    (RuntimeError, lambda lib, x: lib.nn.functional.pdist(x, -1.0), (rand(3, 4),)),
    # cdist reads both operands in the first one's dtype: no promotion, as torch's kernel.
    (RuntimeError, lambda lib, a, b: lib.cdist(a, b), (rand(3, 2, dtype=torch.float32), rand(2, 2))),
    (RuntimeError, lambda lib, a, b: lib.cdist(a, b.int()), (rand(3, 2), rand(2, 2, requires_grad=False))),
    (ValueError, lambda lib, w, i: lib.nn.functional.embedding_bag(i, w), (rand(5, 3), long([1, 2]))),
    (ValueError, lambda lib, w, i, o: lib.nn.functional.embedding_bag(i, w, o), (rand(5, 3), long([[1, 2]]),
                                                                               long([0]))),
    (RuntimeError, lambda lib, w, i, o: lib.nn.functional.embedding_bag(i, w, o), (rand(5, 3), long([1, 2]),
                                                                                 long([1]))),
    (ValueError, lambda lib, w, i, o: lib.nn.functional.embedding_bag(i, w, o, mode="x"), (rand(5, 3), long([1, 2]),
                                                                                         long([0]))),
    (NotImplementedError, lambda lib, w, i, o, s: lib.nn.functional.embedding_bag(i, w, o, per_sample_weights=s),
     (rand(5, 3), long([1, 2]), long([0]), rand(2))),
    (ValueError, lambda lib, w, i, o, s: lib.nn.functional.embedding_bag(i, w, o, mode="sum", per_sample_weights=s),
     (rand(5, 3), long([1, 2]), long([0]), rand(3))),
    (RuntimeError, lambda lib, w, i, o: lib.nn.functional.embedding_bag(i, w, o), (rand(5, 3), long([1, 7]),
                                                                                 long([0]))),
    # offsets that run past the input, and an integer table (decreasing offsets: see the test after this one)
    (RuntimeError, lambda lib, w, i, o: lib.nn.functional.embedding_bag(i, w, o, include_last_offset=True),
     (rand(5, 3), long([1, 2, 3]), long([0, 2, 4]))),
    (RuntimeError, lambda lib, w, i, o: lib.nn.functional.embedding_bag(i, w, o, mode="max"),
     (rand(5, 3), long([1, 2, 3]), long([0, 4]))),
    (RuntimeError, lambda lib, w, i, o: lib.nn.functional.embedding_bag(i, w.long(), o),
     (rand(5, 3), long([1, 2, 3]), long([0, 2]))),
])
def test_errors(exc, fn, inputs):
    check_error(exc, fn, *inputs)


def test_embedding_bag_refuses_decreasing_offsets() -> None:
    """Genesis refuses offsets that decrease for every table dtype. torch checks them only on some of its CPU paths
    (float32 tables, and not under every setting a process may have changed), so torch is no oracle here."""
    weight, index = to_genesis(rand(5, 3, dtype=torch.float32)), to_genesis(long([1, 2, 3]))
    with pytest.raises(RuntimeError, match="offsets must be non-decreasing"):
        genesis.nn.functional.embedding_bag(index, weight, to_genesis(long([0, 2, 1])))
        if DEVICE == "cuda":
            genesis.cuda.synchronize()  # a device-side check reports at the next synchronization


@pytest.mark.parametrize("exc,make", [
    (ValueError, lambda lib: lib.nn.MultiMarginLoss(p=3)),
    (ValueError, lambda lib: lib.nn.TripletMarginLoss(margin=0.0)),
    (ValueError, lambda lib: lib.nn.TripletMarginWithDistanceLoss(margin=-1.0)),
    (AssertionError, lambda lib: lib.nn.EmbeddingBag(3, 2, padding_idx=3)),
    (RuntimeError, lambda lib: lib.nn.LazyConv2d(2, 3)(lib.ones(2, 3))),
    (ValueError, lambda lib: lib.nn.LazyConv2d(4, 3, groups=2)(lib.ones(1, 3, 4, 4))),
])
def test_constructor_and_lazy_errors(exc, make):
    with pytest.raises(exc):
        make(torch)
    with pytest.raises(exc):
        make(genesis)


# ------------------------------------------------------------------ randomness in training mode


def test_rrelu_training_slopes_and_gradient():
    x = to_genesis(rand(200, low=-2, high=2))
    out = nn.RReLU(0.1, 0.3)(x)
    out.sum().backward()
    x_t, out_t, grad_t = to_torch(x), to_torch(out), to_torch(x.grad)
    positive = x_t > 0
    assert torch.equal(out_t[positive], x_t[positive]) and torch.equal(grad_t[positive], torch.ones_like(x_t)[positive])
    slopes = out_t[~positive] / x_t[~positive]
    assert slopes.min() >= 0.1 and slopes.max() <= 0.3 and slopes.std() > 0.01
    torch.testing.assert_close(grad_t[~positive], slopes)


def test_dropout3d_and_feature_alpha_dropout_training():
    genesis.manual_seed(0)
    x = to_genesis(rand(8, 16, 2, 2, 2, low=1, high=2))
    out = to_torch(nn.Dropout3d(0.5)(x)).reshape(8, 16, -1)
    x_t = to_torch(x).reshape(8, 16, -1)
    dropped = (out == 0).all(-1)
    assert 0.2 < dropped.float().mean() < 0.8
    torch.testing.assert_close(out[~dropped], 2 * x_t[~dropped])
    p, alpha = 0.25, 1.7580993408473766
    a = ((alpha * alpha * p + 1) * (1 - p)) ** -0.5
    out = to_torch(nn.FeatureAlphaDropout(p)(x)).reshape(8, 16, -1)
    dropped = (out - (-alpha * a + alpha * a * p)).abs().max(-1).values < 1e-6
    assert 0.05 < dropped.float().mean() < 0.5
    torch.testing.assert_close(out[~dropped], a * x_t[~dropped] + alpha * a * p)
