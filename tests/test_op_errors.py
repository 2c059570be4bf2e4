"""Bad op inputs, table-driven: Genesis raises torch's exception class (``genesis.linalg.LinAlgError`` where torch
raises ``torch.linalg.LinAlgError``) with a message, or returns torch's result; the inputs stay unchanged. The same
table runs on every device through GENESIS_TEST_DEVICE."""

import math

import pytest
import torch

import genesis
from tests.helpers import DEVICE, check_error, check_like_torch, to_genesis

F, I = torch.zeros(3), torch.tensor([5])
SQ0 = torch.zeros(2, 2)
F23, LONG, BOOLS, CPLX = torch.arange(6.0).reshape(2, 3), torch.tensor([1, -2, 3]), torch.tensor([True, False]), \
    torch.tensor([1 + 1j, 2j])

# name -> (fn(lib, *inputs), inputs)
def _index(lib: object, x: object, values: list) -> object:
    """An int64 index tensor on ``x``'s device."""
    return lib.tensor(values, dtype=lib.int64, device=x.device)


#: Refusals of torch's CPU kernels that its CUDA kernels do not make (run on the CPU only).
CPU_ONLY = {"nansum of complex", "nanmean of complex"}

CASES = {
    "cat of nothing": (lambda lib: lib.cat([]), ()),
    "concat of nothing": (lambda lib: lib.concat([]), ()),
    "stack of nothing": (lambda lib: lib.stack([]), ()),
    "hstack of nothing": (lambda lib: lib.hstack([]), ()),
    "cat of a 0-d tensor": (lambda lib, x: lib.cat([x, x]), (torch.tensor(1.0),)),
    "cat of other ranks": (lambda lib, a, b: lib.cat([a, b]), (torch.zeros(2, 2), torch.zeros(2, 2, 2))),
    "index_add out of bounds": (lambda lib, x, i, s: x.index_add(0, i, s), (F, I, torch.ones(1))),
    "index_add negative index": (lambda lib, x, i, s: x.index_add(0, i, s), (F, torch.tensor([-1]), torch.ones(1))),
    "index_select out of bounds": (lambda lib, x, i: x.index_select(0, i), (F, I)),
    "index_copy out of bounds": (lambda lib, x, i, s: x.index_copy(0, i, s), (F, I, torch.ones(1))),
    "index_fill out of bounds": (lambda lib, x, i: x.index_fill(0, i, 1.0), (F, I)),
    "gather out of bounds": (lambda lib, x, i: x.gather(0, i), (F, I)),
    "scatter out of bounds": (lambda lib, x, i: x.scatter(0, i, 1.0), (F, I)),
    "take out of bounds": (lambda lib, x, i: x.take(i), (F, I)),
    "getitem out of bounds": (lambda lib, x: x[5], (F,)),
    "embedding out of bounds": (lambda lib, i, w: lib.nn.functional.embedding(i, w), (I, torch.zeros(3, 2))),
    "one_hot out of bounds": (lambda lib, i: lib.nn.functional.one_hot(i, 3), (I,)),
    "cross_entropy target out of bounds": (lambda lib, x, t: lib.nn.functional.cross_entropy(x, t),
                                           (torch.zeros(2, 3), torch.tensor([0, 5]))),
    "softmax of int": (lambda lib, x: x.softmax(0), (torch.tensor([1, 2, 3]),)),
    "log_softmax of int": (lambda lib, x: x.log_softmax(0), (torch.tensor([1, 2, 3]),)),
    "mean of int": (lambda lib, x: x.mean(), (torch.tensor([1, 2]),)),
    "lerp of int": (lambda lib, a, b: lib.lerp(a, b, 0.5), (torch.tensor([1]), torch.tensor([2]))),
    "bitwise and of floats": (lambda lib, a: a & a, (torch.zeros(2),)),
    "amax of empty": (lambda lib, x: x.amax(), (torch.zeros(0),)),
    "amin of empty": (lambda lib, x: x.amin(), (torch.zeros(0),)),
    "amax over an empty dim": (lambda lib, x: x.amax(0), (torch.zeros(0, 3),)),
    "amax over a non-empty dim": (lambda lib, x: x.amax(1), (torch.zeros(0, 3),)),
    "max of empty": (lambda lib, x: x.max(), (torch.zeros(0),)),
    "argmax of empty": (lambda lib, x: x.argmax(), (torch.zeros(0),)),
    "median of empty": (lambda lib, x: x.median(), (torch.zeros(0),)),
    "nanmedian of empty": (lambda lib, x: x.nanmedian(), (torch.zeros(0),)),
    "median over an empty dim": (lambda lib, x: x.median(0), (torch.zeros(0),)),
    "kthvalue k too large": (lambda lib, x: x.kthvalue(5), (F,)),
    "kthvalue k zero": (lambda lib, x: x.kthvalue(0), (F,)),
    "topk k too large": (lambda lib, x: x.topk(5), (F,)),
    "sum over a missing dim": (lambda lib, x: x.sum(2), (F,)),
    "softmax over a missing dim": (lambda lib, x: x.softmax(2), (F,)),
    "cumsum over a missing dim": (lambda lib, x: x.cumsum(3), (F,)),
    "sort over a missing dim": (lambda lib, x: x.sort(1), (F,)),
    "inv of singular": (lambda lib, a: lib.linalg.inv(a), (SQ0,)),
    "inverse of singular": (lambda lib, a: lib.inverse(a), (SQ0,)),
    "solve with singular": (lambda lib, a, b: lib.linalg.solve(a, b), (SQ0, torch.ones(2))),
    "cholesky of negative definite": (lambda lib, a: lib.linalg.cholesky(a), (-torch.eye(2),)),
    "det of non-square": (lambda lib, a: lib.linalg.det(a), (torch.zeros(2, 3),)),
    "trace of 3-d": (lambda lib, a: lib.trace(a), (torch.zeros(2, 2, 2),)),
    "trace of 1-d": (lambda lib, a: lib.trace(a), (torch.zeros(2),)),
    "matmul shapes": (lambda lib, a, b: a @ b, (torch.zeros(2, 3), torch.zeros(4, 5))),
    "bmm of 2-d": (lambda lib, a: lib.bmm(a, a), (SQ0,)),
    "dot of other lengths": (lambda lib, a, b: lib.dot(a, b), (torch.zeros(2), torch.zeros(3))),
    "reshape to a bad size": (lambda lib, x: x.reshape(4, -1), (torch.zeros(6),)),
    "view to a bad size": (lambda lib, x: x.view(5), (torch.zeros(6),)),
    "expand to a bad size": (lambda lib, x: x.expand(4), (F,)),
    "permute with a repeat": (lambda lib, x: x.permute(0, 0), (torch.zeros(3, 2),)),
    "narrow past the end": (lambda lib, x: x.narrow(0, 2, 5), (F,)),
    "split of size zero": (lambda lib, x: x.split(0), (torch.zeros(4),)),
    "chunk of zero": (lambda lib, x: x.chunk(0), (torch.zeros(4),)),
    "repeat negative": (lambda lib, x: x.repeat(-1), (torch.zeros(4),)),
    "unfold past the end": (lambda lib, x: x.unfold(0, 5, 1), (F,)),
    "where of other shapes": (lambda lib, a, b, c: lib.where(a, b, c),
                              (torch.zeros(2, dtype=torch.bool), torch.zeros(3), torch.zeros(4))),
    "masked_fill of another shape": (lambda lib, x, m: x.masked_fill(m, 1.0), (F, torch.zeros(4, dtype=torch.bool))),
    "linear shapes": (lambda lib, x, w: lib.nn.functional.linear(x, w), (torch.zeros(2, 3), torch.zeros(4, 5))),
    "conv2d channels": (lambda lib, x, w: lib.nn.functional.conv2d(x, w),
                        (torch.zeros(1, 3, 4, 4), torch.zeros(2, 4, 3, 3))),
    "layer_norm shape": (lambda lib, x: lib.nn.functional.layer_norm(x, (4,)), (torch.zeros(2, 3),)),
    "group_norm groups": (lambda lib, x: lib.nn.functional.group_norm(x, 4), (torch.zeros(2, 6),)),
    "dropout p above one": (lambda lib, x: lib.nn.functional.dropout(x, p=2.0), (F,)),
    "max_pool window too large": (lambda lib, x: lib.nn.functional.max_pool2d(x, 5), (torch.zeros(1, 1, 2, 2),)),
    "bincount of negative": (lambda lib, x: lib.bincount(x), (torch.tensor([-1]),)),
    "multinomial of zeros": (lambda lib, p: lib.multinomial(p, 1), (torch.zeros(3),)),
    "randperm negative": (lambda lib: lib.randperm(-1), ()),
    "arange step zero": (lambda lib: lib.arange(0, 10, 0), ()),
    "zeros negative": (lambda lib: lib.zeros(-1), ()),
    "full negative": (lambda lib: lib.full((-2,), 1.0), ()),
    "eye negative": (lambda lib: lib.eye(-1), ()),
    "linspace negative steps": (lambda lib: lib.linspace(0, 1, -1), ()),
    # matrix views and their dims
    "mT of 1-d": (lambda lib, x: x.mT, (F,)),
    "mH of 1-d": (lambda lib, x: x.mH, (F,)),
    "adjoint of 1-d": (lambda lib, x: x.adjoint(), (F,)),
    "mT of 0-d": (lambda lib, x: x.mT, (torch.tensor(2.0),)),
    "mH of 0-d": (lambda lib, x: lib.adjoint(x), (torch.tensor(2.0),)),
    "H of 1-d": (lambda lib, x: x.H, (F,)),
    "H of 3-d": (lambda lib, x: x.H, (torch.zeros(2, 3, 4),)),
    "fliplr of 1-d": (lambda lib, x: lib.fliplr(x), (F,)),
    "flipud of 0-d": (lambda lib, x: lib.flipud(x), (torch.tensor(1.0),)),
    "select of 0-d": (lambda lib, x: x.select(0, 0), (torch.tensor(1.0),)),
    "unbind of 0-d": (lambda lib, x: x.unbind(), (torch.tensor(1.0),)),
    "unflatten of 0-d": (lambda lib, x: x.unflatten(0, (1,)), (torch.tensor(1.0),)),
    "split with a negative size": (lambda lib, x: x.split([4, -1], 1), (F23,)),
    "split_with_sizes negative": (lambda lib, x: lib.split_with_sizes(x, [4, -1], 1), (F23,)),
    "movedim repeated destination": (lambda lib, x: x.movedim((0, 1), (0, 0)), (F23,)),
    "movedim repeated source": (lambda lib, x: x.movedim((1, -1), (0, 1)), (F23,)),
    "movedim of other lengths": (lambda lib, x: x.movedim((0, 1), (0,)), (F23,)),
    "roll of two shifts without dims": (lambda lib, x: x.roll((1, 1)), (F23,)),
    "roll by a float": (lambda lib, x: x.roll(1.5, 0), (F23,)),
    "einsum with a digit": (lambda lib, x: lib.einsum("i1->i", x), (F23,)),
    "einsum with a digit in the output": (lambda lib, x: lib.einsum("ij->i1", x), (F23,)),
    "einsum of no operands": (lambda lib: lib.einsum("i->i"), ()),
    "getitem with a string": (lambda lib, x: x["a"], (F23,)),
    "getitem with bytes in a tuple": (lambda lib, x: x[0, b"a"], (F23,)),
    "atleast_1d of a list of numbers": (lambda lib: lib.atleast_1d([1, 2]), ()),
    "meshgrid of numbers": (lambda lib: lib.meshgrid(1, 2), ()),
    # creation
    "tensor beyond int64": (lambda lib: lib.tensor([2 ** 70]), ()),
    "tensor of NaN into int64": (lambda lib: lib.tensor([math.nan], dtype=lib.int64), ()),
    "tensor of -1 into uint8": (lambda lib: lib.tensor([-1, 2], dtype=lib.uint8), ()),
    "tensor of -256 into uint8": (lambda lib: lib.tensor([-256], dtype=lib.uint8), ()),
    "tensor of -1.5 into uint8": (lambda lib: lib.tensor([-1.5], dtype=lib.uint8), ()),
    "zeros into a long out": (lambda lib: lib.zeros(2, out=lib.empty(2, dtype=lib.int64)), ()),
    "full into a long out": (lambda lib: lib.full((2,), 3.5, out=lib.empty(2, dtype=lib.int64)), ()),
    "eye into a long out": (lambda lib: lib.eye(2, out=lib.empty(2, 2, dtype=lib.int64)), ()),
    "zeros of a dtype other than out's": (lambda lib: lib.zeros(2, dtype=lib.float32, out=lib.empty(2, dtype=lib.long)),
                                          ()),
    "cat into a long out": (lambda lib, x: lib.cat([x, x], out=lib.empty(6, dtype=lib.int64)), (F,)),
    "stack into a long out": (lambda lib, x: lib.stack([x, x], out=lib.empty(2, 3, dtype=lib.int64)), (F,)),
    # values torch converts to an integer result's type
    "prod into int8": (lambda lib, x: (x * 50).prod(dtype=lib.int8), (F23 + 1,)),
    "prod over a dim into int16": (lambda lib, x: (x * 50).prod(0, dtype=lib.int16), (F23 + 1,)),
    "addmm of longs with a float beta": (lambda lib, c, a: lib.addmm(c, a, a.t(), beta=0.5, alpha=1.5),
                                         (torch.ones(2, 2, dtype=torch.long), torch.arange(6).reshape(2, 3))),
    "addmv of longs with a float alpha": (lambda lib, c, a: lib.addmv(c, a, a[0], alpha=2.5),
                                          (torch.ones(2, dtype=torch.long), torch.arange(4).reshape(2, 2))),
    "index_add of longs with a float alpha": (lambda lib, x: x.index_add(0, _index(lib, x, [0]), x[:1], alpha=2.7),
                                              (LONG,)),
    "index_fill with a 0-d tensor": (lambda lib, x: x.index_fill(0, _index(lib, x, [0, 2]),
                                                                lib.tensor(5.5, device=x.device)), (LONG,)),
    "index_fill with a 1-d tensor": (lambda lib, x: x.index_fill(0, _index(lib, x, [0]), x.new_ones(2)), (F,)),
    "addcmul of longs with a float value": (lambda lib, x: x.clone().addcmul_(x, x, value=0.5), (LONG,)),
    "hardtanh of longs": (lambda lib, x: lib.nn.functional.hardtanh(x, -0.5, 1.5), (LONG,)),
    "relu6 of longs": (lambda lib, x: lib.nn.functional.relu6(x), (LONG,)),
    "relu6 of bools": (lambda lib, x: lib.nn.functional.relu6(x), (BOOLS,)),
    # kernels torch has for floating point only
    **{f"{name} of longs": (fn, (LONG,)) for name, fn in {
        "elu": lambda lib, x: lib.nn.functional.elu(x), "selu": lambda lib, x: lib.nn.functional.selu(x),
        "celu": lambda lib, x: lib.nn.functional.celu(x), "leaky_relu": lambda lib, x: lib.nn.functional.leaky_relu(x),
        "rrelu": lambda lib, x: lib.nn.functional.rrelu(x), "glu": lambda lib, x: lib.nn.functional.glu(x[:2]),
        "rrelu in training": lambda lib, x: lib.nn.functional.rrelu(x, training=True),
        "hardswish": lambda lib, x: lib.nn.functional.hardswish(x),
        "hardsigmoid": lambda lib, x: lib.nn.functional.hardsigmoid(x),
        "hardshrink": lambda lib, x: lib.nn.functional.hardshrink(x),
        "softshrink": lambda lib, x: lib.nn.functional.softshrink(x),
        "prelu": lambda lib, x: lib.nn.functional.prelu(x, lib.ones(1, dtype=lib.int64)),
        "prelu with a float weight": lambda lib, x: lib.nn.functional.prelu(x, lib.ones(1)),
        "layer_norm": lambda lib, x: lib.nn.functional.layer_norm(x, (3,)),
        "rms_norm": lambda lib, x: lib.nn.functional.rms_norm(x, (3,)),
        "group_norm": lambda lib, x: lib.nn.functional.group_norm(x.view(1, 3), 1),
        "batch_norm": lambda lib, x: lib.nn.functional.batch_norm(x.view(3, 1), None, None, training=True),
        "instance_norm": lambda lib, x: lib.nn.functional.instance_norm(x.view(1, 1, 3)),
        "max_pool1d": lambda lib, x: lib.nn.functional.max_pool1d(x.view(1, 1, 3), 2),
    }.items()},
    **{f"{name} of longs": (fn, (LONG,)) for name, fn in {
        "mse_loss": lambda lib, x: lib.nn.functional.mse_loss(x, x, reduction="none"),
        "smooth_l1_loss": lambda lib, x: lib.nn.functional.smooth_l1_loss(x, x),
        "huber_loss": lambda lib, x: lib.nn.functional.huber_loss(x, x),
        "huber_loss with a float target": lambda lib, x: lib.nn.functional.huber_loss(x, x.float()),
        "kl_div": lambda lib, x: lib.nn.functional.kl_div(x.float(), x, reduction="sum"),
        "soft_margin_loss": lambda lib, x: lib.nn.functional.soft_margin_loss(x, x),
        "mse_loss with a float target": lambda lib, x: lib.nn.functional.mse_loss(x, x.float()),
        "binary_cross_entropy": lambda lib, x: lib.nn.functional.binary_cross_entropy(x.abs() // 3, x.abs() // 3),
        "binary_cross_entropy_with_logits": lambda lib, x: lib.nn.functional.binary_cross_entropy_with_logits(x, x),
        "binary_cross_entropy_with_logits of a long target": lambda lib, x: (
            lib.nn.functional.binary_cross_entropy_with_logits(x.float(), x)),
    }.items()},
    "threshold of bools": (lambda lib, x: lib.nn.functional.threshold(x, 0.5, 1.0), (BOOLS,)),
    "addcmul of bools": (lambda lib, x: lib.addcmul(x, x, x), (BOOLS,)),
    # kernels torch has for real numbers only
    **{f"{name} of complex": (fn, (CPLX,)) for name, fn in {
        "copysign": lambda lib, z: lib.copysign(lib.ones(2), z), "xlogy": lambda lib, z: lib.xlogy(z, 2.0),
        "xlog1py": lambda lib, z: lib.special.xlog1py(z, z), "heaviside": lambda lib, z: lib.heaviside(z, z),
        "rad2deg": lambda lib, z: lib.rad2deg(z), "deg2rad": lambda lib, z: lib.deg2rad(z),
        "nansum": lambda lib, z: z.nansum(), "nanmean": lambda lib, z: z.nanmean(),
        "median": lambda lib, z: z.median(), "median over a dim": lambda lib, z: z.median(0),
        "nanmedian": lambda lib, z: z.nanmedian(), "kthvalue": lambda lib, z: z.kthvalue(1),
        "mode": lambda lib, z: z.mode(), "cummax": lambda lib, z: z.cummax(0), "cummin": lambda lib, z: z.cummin(0),
    }.items()},
    "isposinf of complex": (lambda lib, z: z.isposinf(), (CPLX,)),
    "isneginf of complex": (lambda lib, z: lib.isneginf(z), (CPLX,)),
    "median of bools over a dim": (lambda lib, x: x.median(0), (BOOLS,)),
    "mode of bools": (lambda lib, x: x.mode(), (BOOLS,)),
    "cummax of bools": (lambda lib, x: x.cummax(0), (BOOLS,)),
    "norm of an unknown order": (lambda lib, x: x.norm(p="foo"), (F,)),
    "nuclear norm of 1-d": (lambda lib, x: lib.norm(x, p="nuc"), (F,)),
    "vector_norm of a string order": (lambda lib, x: lib.linalg.vector_norm(x, ord="fro"), (F,)),
    "tensordot over more dims than it has": (lambda lib, x: lib.tensordot(x, x, dims=3), (F23,)),
    "type of an unknown name": (lambda lib, x: x.type("foo"), (F,)),
    # nn.functional arguments
    "conv2d with an unknown padding string": (lambda lib, x, w: lib.nn.functional.conv2d(x, w, padding="full"),
                                              (torch.zeros(1, 1, 4, 4), torch.zeros(2, 1, 3, 3))),
    "conv_transpose2d with padding='same'": (lambda lib, x, w: lib.nn.functional.conv_transpose2d(x, w, padding="same"),
                                             (torch.zeros(1, 1, 4, 4), torch.zeros(1, 1, 3, 3))),
    "gelu with an unknown approximation": (lambda lib, x: lib.nn.functional.gelu(x, approximate="fast"), (F,)),
    "celu with alpha zero": (lambda lib, x: lib.nn.functional.celu(x, alpha=0.0), (F,)),
    "prelu of other dtypes": (lambda lib, x: lib.nn.functional.prelu(x, lib.ones(1, dtype=lib.float64)), (F,)),
    "prelu with a 2-d weight": (lambda lib, x: lib.nn.functional.prelu(x, lib.ones(3, 1)), (F23,)),
    "prelu with a weight per other channels": (lambda lib, x: lib.nn.functional.prelu(x, lib.ones(2)), (F23,)),
    "prelu of 0-d": (lambda lib, x: lib.nn.functional.prelu(x, lib.full((1,), 0.25)), (torch.tensor(-2.0),)),
    "linear of 0-d": (lambda lib, x, w: lib.nn.functional.linear(x, w), (torch.tensor(1.0), torch.zeros(2, 3))),
    "layer_norm of an empty shape": (lambda lib, x: lib.nn.functional.layer_norm(x, ()), (F23,)),
    "batch_norm of 1-d in training": (lambda lib, x: lib.nn.functional.batch_norm(x, None, None, training=True), (F,)),
    "batch_norm of 1-d in evaluation": (lambda lib, x: lib.nn.functional.batch_norm(x, F, F + 1), (F,)),
    "pixel_shuffle by zero": (lambda lib, x: lib.nn.functional.pixel_shuffle(x, 0), (torch.zeros(4, 2, 2),)),
    "pixel_shuffle of 2-d": (lambda lib, x: lib.nn.functional.pixel_shuffle(x, 2), (torch.zeros(4, 2),)),
    "interpolate to a float size": (lambda lib, x: lib.nn.functional.interpolate(x, size=2.5), (torch.zeros(1, 1, 4),)),
    "scaled_dot_product_attention of 1-d": (lambda lib, q: lib.nn.functional.scaled_dot_product_attention(q, q, q),
                                            (torch.zeros(4),)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_bad_input_raises_like_torch(name):
    if name in CPU_ONLY and DEVICE != "cpu":
        pytest.skip("torch's CUDA kernel takes this input")
    fn, inputs = CASES[name]
    check_like_torch(fn, *inputs)


# name -> (fn(lib, target, *others), torch's class, (target, *others)): in-place ops torch refuses; the target is
# unchanged after Genesis raises (check_error compares every input before and after).
IN_PLACE = {
    "sub_ of a bool tensor from longs": (lambda lib, x, b: x.sub_(b), RuntimeError, (LONG, BOOLS.repeat(2)[:3])),
    "subtract_ of a bool": (lambda lib, x: x.subtract_(True), RuntimeError, (LONG,)),
    "true_divide_ of longs": (lambda lib, x: x.true_divide_(2), RuntimeError, (LONG,)),
    "divide_ of longs": (lambda lib, x: x.divide_(2), RuntimeError, (LONG,)),
    "multiply_ of longs by a float": (lambda lib, x: x.multiply_(0.5), RuntimeError, (LONG,)),
    "bitwise_and_ of halves": (lambda lib, x: x.bitwise_and_(x), NotImplementedError, (F.half(),)),
    "bitwise_or_ of floats by an int": (lambda lib, x: x.bitwise_or_(1), NotImplementedError, (F,)),
    "t_ of 3-d": (lambda lib, x: x.t_(), RuntimeError, (torch.zeros(2, 3, 4),)),
    "masked_scatter_ of too few values": (lambda lib, x, m: x.masked_scatter_(m, lib.ones(1)), RuntimeError,
                                          (F[:2], BOOLS | True)),
    "bernoulli_ with p above one": (lambda lib, x: x.bernoulli_(1.5), RuntimeError, (F,)),
    "bernoulli_ with p NaN": (lambda lib, x: x.bernoulli_(math.nan), RuntimeError, (F,)),
    "bernoulli_ with probabilities above one": (lambda lib, x, p: x.bernoulli_(p), RuntimeError,
                                                (F, torch.tensor([0.5, 1.5, 0.0]))),
    "bernoulli_ with probabilities of another shape": (lambda lib, x, p: x.bernoulli_(p), RuntimeError,
                                                       (F, torch.tensor([0.5, 0.5]))),
    "random_ beyond int8": (lambda lib, x: x.random_(0, 1000), RuntimeError, (LONG.to(torch.int8),)),
    "random_ below uint8": (lambda lib, x: x.random_(-1, 5), RuntimeError, (LONG.abs().to(torch.uint8),)),
    "random_ to beyond bool": (lambda lib, x: x.random_(3), RuntimeError, (BOOLS,)),
    "random_ beyond float16": (lambda lib, x: x.random_(0, 100000), RuntimeError, (F.half(),)),
    "lerp_ of another dtype": (lambda lib, x: x.lerp_(x.float(), 0.5), RuntimeError, (LONG,)),
    "addcmul_ of bools": (lambda lib, x: x.addcmul_(x, x), NotImplementedError, (BOOLS,)),
    "addcdiv_ of longs": (lambda lib, x: x.addcdiv_(x, x), RuntimeError, (LONG,)),
    "addcmul_ of a wider shape": (lambda lib, x, y: x.addcmul_(y, y), RuntimeError, (F, F23)),
    "index_fill_ with a 1-d value": (lambda lib, x: x.index_fill_(0, lib.tensor([0]), lib.ones(1)), RuntimeError,
                                     (F,)),
    "elu_ of longs": (lambda lib, x: lib.nn.functional.elu_(x), NotImplementedError, (LONG,)),
    "leaky_relu_ of longs": (lambda lib, x: lib.nn.functional.leaky_relu_(x), NotImplementedError, (LONG,)),
    "threshold_ of bools": (lambda lib, x: lib.nn.functional.threshold_(x, 0.5, 1.0), NotImplementedError, (BOOLS,)),
    "hardtanh_ of bools": (lambda lib, x: lib.nn.functional.hardtanh_(x), RuntimeError, (BOOLS,)),
}


@pytest.mark.parametrize("name", sorted(IN_PLACE))
def test_refused_in_place_op_leaves_its_target(name):
    fn, error, inputs = IN_PLACE[name]
    check_error(error, fn, *inputs)


@pytest.mark.parametrize("op", ["subtract_", "multiply_", "divide_", "true_divide_"])
def test_in_place_aliases_write_as_their_ops(op):
    check_like_torch(lambda lib, x, y: getattr(x, op)(y), F23 + 1, torch.tensor([2.0, 4.0, 8.0]))
    check_like_torch(lambda lib, x: getattr(x, op)(2), F23 + 1)


# op -> fn(lib, a, b) computed in Genesis from other ops: operands that do not broadcast raise torch's class with a
# message naming the op the user called and both shapes, not one of the ops inside it.
BROADCASTS = {
    "fmod": lambda lib, a, b: lib.fmod(a, b), "fmax": lambda lib, a, b: lib.fmax(a, b),
    "fmin": lambda lib, a, b: lib.fmin(a, b), "xlogy": lambda lib, a, b: lib.xlogy(a, b),
    "addcmul": lambda lib, a, b: lib.addcmul(a, b, b), "addcdiv": lambda lib, a, b: lib.addcdiv(a, b, b),
    "addcmul_": lambda lib, a, b: a.addcmul_(b, b), "clamp": lambda lib, a, b: lib.clamp(a, min=b),
    "lerp": lambda lib, a, b: lib.lerp(a, b, 0.5), "logaddexp": lambda lib, a, b: lib.logaddexp(a, b),
    "nextafter": lambda lib, a, b: lib.nextafter(a, b), "ldexp": lambda lib, a, b: lib.ldexp(a, b),
    "heaviside": lambda lib, a, b: lib.heaviside(a, b), "isclose": lambda lib, a, b: lib.isclose(a, b),
    "xlog1py": lambda lib, a, b: lib.special.xlog1py(a, b), "add": lambda lib, a, b: lib.add(a, b, alpha=2),
    "sub": lambda lib, a, b: lib.sub(a, b, alpha=2), "gcd": lambda lib, a, b: lib.gcd(a.long(), b.long()),
    "bitwise_left_shift": lambda lib, a, b: a.long() << b.long(),
}


@pytest.mark.parametrize("op", sorted(BROADCASTS))
def test_broadcast_error_names_the_op(op):
    a, b = torch.ones(2, 3), torch.ones(4)
    check_like_torch(BROADCASTS[op], a, b)
    with pytest.raises(RuntimeError, match=rf"^{op}: shapes \(2, 3\) and \(4,\) are not broadcastable"):
        BROADCASTS[op](genesis, to_genesis(a), to_genesis(b))


@pytest.mark.parametrize("op", ["hstack", "vstack", "dstack", "column_stack", "row_stack"])
def test_stacks_of_nothing_or_of_a_bare_tensor(op):
    check_like_torch(lambda lib: getattr(lib, op)([]))
    check_like_torch(lambda lib, x: getattr(lib, op)(x), torch.zeros(3))


@pytest.mark.parametrize("shape", [(3,), (3, 2)])
@pytest.mark.parametrize("index", [5, -1, -5])
def test_index_add_out_of_bounds_by_rank(shape, index):
    """torch's 1-d kernel raises IndexError, the others RuntimeError."""
    check_like_torch(lambda lib, x, i, s: x.index_add(0, i, s), torch.zeros(shape), torch.tensor([index]),
                     torch.ones((1,) + shape[1:]))


# torch takes int64 index tensors everywhere and int32 ones in most index ops; other integer dtypes raise.
INDEX_DTYPE_OPS = {
    "getitem": lambda lib, x, i: x[i],
    "setitem": lambda lib, x, i: x.__setitem__(i, 1.0),
    "index_put": lambda lib, x, i: x.index_put((i,), lib.tensor(1.0)),
    "index_select": lambda lib, x, i: x.index_select(0, i),
    "gather": lambda lib, x, i: x.gather(0, i),
    "take_along_dim": lambda lib, x, i: lib.take_along_dim(x, i),
    "scatter": lambda lib, x, i: x.scatter(0, i, 1.0),
    "scatter_add": lambda lib, x, i: x.scatter_add(0, i, x[:2]),
    "index_add": lambda lib, x, i: x.index_add(0, i, x[:2]),
    "index_copy": lambda lib, x, i: x.index_copy(0, i, x[:2]),
    "index_fill": lambda lib, x, i: x.index_fill(0, i, 1.0),
    "take": lambda lib, x, i: x.take(i),
    "embedding": lambda lib, x, i: lib.nn.functional.embedding(i, x.view(3, 2)),
    "max_unpool1d": lambda lib, x, i: lib.nn.functional.max_unpool1d(x[:2].view(1, 1, 2), i.view(1, 1, 2), 2),
}


@pytest.mark.parametrize("dtype", [torch.int32, torch.int16, torch.int8], ids=str)
@pytest.mark.parametrize("name", sorted(INDEX_DTYPE_OPS))
def test_index_dtypes_as_torch_takes_them(name, dtype):
    check_like_torch(INDEX_DTYPE_OPS[name], torch.arange(6.0), torch.tensor([1, 0], dtype=dtype))


# name -> (fn(lib, *inputs), inputs): bad inputs whose message holds torch's own (after Genesis's op-name prefix),
# the words a user's ``pytest.raises(match=...)`` or ``in str(err)`` looks for.
L, B = torch.tensor([1, 2, 3]), torch.tensor([True, False, True])
MESSAGES = {
    "in-place add of a float into long": (lambda lib, x: x.add_(0.5), (L,)),
    "in-place mul of a float tensor into long": (lambda lib, x, y: x.mul_(y), (L, torch.tensor(2.0))),
    "in-place div of long": (lambda lib, x: x.div_(2), (L,)),
    "out= of a float result into long": (lambda lib, x: lib.add(x, 0.5, out=lib.empty_like(x)), (L,)),
    "mean of uint8": (lambda lib, x: x.mean(), (L.to(torch.uint8),)),
    "var of long": (lambda lib, x: x.var(), (L,)),
    "std_mean of long": (lambda lib, x: lib.std_mean(x), (L,)),
    "sub of two bools": (lambda lib, b: b - b, (B,)),
    "sub of a bool": (lambda lib, b, x: x - b, (B, L)),
    "neg of a bool": (lambda lib, b: -b, (B,)),
    "aminmax of empty": (lambda lib, x: lib.aminmax(x), (torch.zeros(0),)),
    "amax over an empty dim": (lambda lib, x: x.amax(0), (torch.zeros(0, 3),)),
    "histc of an infinite range": (lambda lib, x: lib.histc(x), (torch.tensor([0.0, math.inf]),)),
    "isclose of two dtypes": (lambda lib, x: lib.isclose(x, x.double()), (F,)),
    "isclose with a negative rtol": (lambda lib, x: lib.isclose(x, x, rtol=-1.0), (F,)),
    "index_add of another dtype": (lambda lib, x, i: x.index_add_(0, i, x[:1].float()), (L, torch.tensor([0]))),
    "index_copy of another dtype": (lambda lib, x, i: x.index_copy(0, i, x[:1].float()), (L, torch.tensor([0]))),
    "index_reduce of another dtype": (lambda lib, x, i: x.index_reduce(0, i, x[:1].float(), "prod"),
                                      (L, torch.tensor([0]))),
    "scatter of another dtype": (lambda lib, x, i: x.scatter(0, i, x[:1].float()), (L, torch.tensor([0]))),
    "scatter_add of another dtype": (lambda lib, x, i: x.scatter_add(0, i, x[:1].float()), (L, torch.tensor([0]))),
    "index_put of another dtype": (lambda lib, x, i: x.index_put((i,), x[:1].float()), (L, torch.tensor([0]))),
    "complex of two dtypes": (lambda lib, x: lib.complex(x, x.double()), (F,)),
    "complex of longs": (lambda lib, x: lib.complex(x, x), (L,)),
    "masked_fill beyond float16": (lambda lib, x, m: x.masked_fill(m, 65505.0), (F.half(), B)),
    "masked_fill beyond int8": (lambda lib, x, m: x.masked_fill(m, 128), (L.to(torch.int8), B)),
    "masked_fill of NaN into int": (lambda lib, x, m: x.masked_fill(m, math.nan), (L.int(), B)),
    "masked_fill beyond float32": (lambda lib, x, m: x.masked_fill(m, -1e39), (F, B)),
    "index_fill beyond uint8": (lambda lib, x, i: x.index_fill(0, i, 256), (L.to(torch.uint8), torch.tensor([0]))),
    "clamp of complex": (lambda lib, x: x.clamp(0, 1), (torch.tensor([1j]),)),
    "finfo of an integer dtype": (lambda lib: lib.finfo(lib.int32), ()),
    "iinfo of a float dtype": (lambda lib: lib.iinfo(lib.float32), ()),
    "iinfo of bool": (lambda lib: lib.iinfo(lib.bool), ()),
    "add of longs with a float alpha": (lambda lib, x: lib.add(x, x, alpha=0.5), (L,)),
    "add_ of longs with a float alpha": (lambda lib, x: x.add_(x, alpha=1.0), (L,)),
    "sub of floats with a bool alpha": (lambda lib, x: lib.sub(x, x, alpha=True), (F,)),
    "add of floats with a complex alpha": (lambda lib, x: x.add(x, alpha=1j), (F,)),
    "mean with an integer dtype": (lambda lib, x: x.mean(dtype=lib.int64), (F,)),
    "nanmean of longs with a float dtype": (lambda lib, x: lib.nanmean(x, dtype=lib.float64), (L,)),
    "nanmean with an integer dtype": (lambda lib, x: lib.nanmean(x, 0, dtype=lib.int64), (F,)),
    "norm of longs": (lambda lib, x: lib.norm(x, dim=0), (L,)),
    "norm of longs with a float dtype": (lambda lib, x: lib.norm(x, dim=0, dtype=lib.float64), (L,)),
    "norm narrowing to its dtype": (lambda lib, x: lib.norm(x, dim=0, dtype=lib.float16), (F,)),
    "norm with an integer dtype": (lambda lib, x: x.norm(dim=0, dtype=lib.int64), (F,)),
    "dist of longs": (lambda lib, x: lib.dist(x, x.flip(0)), (L,)),
    "dist of bools": (lambda lib, b: lib.dist(b, b), (B,)),
    "trace of bools": (lambda lib, b: lib.trace(b.reshape(1, 3)), (B,)),
    "in-place sub of a bool tensor": (lambda lib, x, b: x.sub_(b), (L, B)),
    "t_ of 3-d": (lambda lib, x: x.t_(), (torch.zeros(2, 3, 4),)),
    "mT of 1-d": (lambda lib, x: x.mT, (F,)),
    "H of 3-d": (lambda lib, x: x.H, (torch.zeros(2, 3, 4),)),
    "bernoulli_ with p above one": (lambda lib, x: x.bernoulli_(1.5), (F,)),
    "masked_scatter_ of too few values": (lambda lib, x, m: x.masked_scatter_(m, lib.ones(1)), (F, B)),
    "split_with_sizes negative": (lambda lib, x: x.split([4, -1]), (F,)),
    "movedim repeated destination": (lambda lib, x: x.movedim((0, 1), (0, 0)), (SQ0,)),
    "einsum with a digit": (lambda lib, x: lib.einsum("i1->i", x), (SQ0,)),
    "select of 0-d": (lambda lib, x: x.select(0, 0), (torch.tensor(1.0),)),
    "random_ beyond int8": (lambda lib, x: x.random_(0, 1000), (L.to(torch.int8),)),
    "tensor of NaN into int64": (lambda lib: lib.tensor([math.nan], dtype=lib.int64), ()),
    "zeros of a dtype other than out's": (lambda lib: lib.zeros(2, dtype=lib.float32, out=lib.empty(2, dtype=lib.long)),
                                          ()),
    "index_fill with a 1-d value": (lambda lib, x: x.index_fill(0, _index(lib, x, [0]), x.new_ones(2)), (F,)),
    "elu of longs": (lambda lib, x: lib.nn.functional.elu(x), (L,)),
    "layer_norm of longs": (lambda lib, x: lib.nn.functional.layer_norm(x, (3,)), (L,)),
    "median of complex": (lambda lib, z: z.median(), (torch.tensor([1j]),)),
    "heaviside of complex": (lambda lib, z: lib.heaviside(z, z), (torch.tensor([1j]),)),
    "nansum of complex": (lambda lib, z: z.nansum(), (torch.tensor([1j]),)),
    "celu with alpha zero": (lambda lib, x: lib.nn.functional.celu(x, alpha=0.0), (F,)),
    "prelu of other dtypes": (lambda lib, x: lib.nn.functional.prelu(x, lib.ones(1, dtype=lib.float64)), (F,)),
    "prelu with a weight per other channels": (lambda lib, x: lib.nn.functional.prelu(x, lib.ones(2)), (SQ0[:, :1],)),
    "linear of 0-d": (lambda lib, x, w: lib.nn.functional.linear(x, w), (torch.tensor(1.0), SQ0)),
    "layer_norm of an empty shape": (lambda lib, x: lib.nn.functional.layer_norm(x, ()), (SQ0,)),
    "pixel_shuffle by zero": (lambda lib, x: lib.nn.functional.pixel_shuffle(x, 0), (torch.zeros(4, 2, 2),)),
    "binary_cross_entropy_with_logits of a long target": (
        lambda lib, x: lib.nn.functional.binary_cross_entropy_with_logits(x.float(), x), (L,)),
    "kl_div of longs": (lambda lib, x: lib.nn.functional.kl_div(x.float(), x, reduction="sum"), (L,)),
}


#: Cases whose error torch 2.13 words (or classes) differently from torch 2.11.
NEWER_TORCH_MESSAGES = {"nanmean with an integer dtype"}


@pytest.mark.parametrize("name", sorted(MESSAGES))
def test_bad_input_message_holds_torchs(name):
    if name in CPU_ONLY and DEVICE != "cpu":
        pytest.skip("torch's CUDA kernel takes this input")
    fn, inputs = MESSAGES[name]
    if name in NEWER_TORCH_MESSAGES and tuple(int(v) for v in torch.__version__.split(".")[:2]) < (2, 13):
        pytest.skip("Genesis follows torch 2.13 here; older torch raises another error for this input")
    expected = check_like_torch(fn, *inputs)
    assert expected is not None, "torch accepts it"
    with pytest.raises(type(expected)) as info:
        fn(genesis, *(to_genesis(x) if isinstance(x, torch.Tensor) else x for x in inputs))
    assert str(expected).rstrip(".") in str(info.value).replace("genesis.", "torch.")


@pytest.mark.parametrize("value,dtype", [(-1, "uint8"), (-255, "uint8"), (127, "int8"), (65504.0, "float16"),
                                         (math.inf, "float16"), (math.nan, "bfloat16"), (2.7, "int64")])
def test_fill_values_that_convert(value, dtype):
    # torch's checked conversion lets an unsigned type wrap small negative numbers and a float take inf and NaN.
    check_like_torch(lambda lib, x, m: x.to(getattr(lib, dtype)).masked_fill(m, value), L, B)
    check_like_torch(lambda lib, x, i: x.to(getattr(lib, dtype)).index_fill(0, i, value), L, torch.tensor([1]))
