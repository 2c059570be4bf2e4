"""Indexing against torch: basic and advanced keys, assignment through each, gather/scatter and friends, sorting."""

import numpy as np
import pytest
import torch

import genesis
from tests.helpers import DEVICE, assert_same, check, check_error, rand, to_genesis

IDX = torch.tensor([2, 0, 2])
IDX2 = torch.tensor([[1, 0], [3, 3]])
MASK_ROWS = torch.tensor([True, False, True, True])

# Keys built from torch tensors; index tensors are converted per library inside the test.
KEYS = {
    "int": lambda lib, i: 1,
    "neg_int": lambda lib, i: -1,
    "slice": lambda lib, i: slice(1, 3),
    "slice_step": lambda lib, i: (slice(None, None, 2), slice(1, None, 3)),
    "slice_neg": lambda lib, i: (slice(-3, -1), slice(None, -2)),
    "slice_out_of_range": lambda lib, i: (slice(2, 10), slice(-10, 2)),
    "slice_empty": lambda lib, i: slice(3, 1),
    "none": lambda lib, i: (None, 1, None),
    "ellipsis": lambda lib, i: (Ellipsis, 1),
    "ellipsis_mid": lambda lib, i: (0, Ellipsis, slice(None, 2)),
    "ellipsis_none": lambda lib, i: (None, Ellipsis, None),
    "int_int": lambda lib, i: (1, 2),
    "full": lambda lib, i: (1, 2, 3),
    "tensor": lambda lib, i: i["idx"],
    "tensor_2d": lambda lib, i: i["idx2"],
    "tensor_neg": lambda lib, i: i["neg"],
    "tensor_dim1": lambda lib, i: (slice(None), i["idx"]),
    "tensor_pair": lambda lib, i: (i["idx"], i["idx"]),
    "tensor_broadcast": lambda lib, i: (i["col"], i["idx"]),
    "tensor_separated": lambda lib, i: (i["idx"], slice(None), i["idx"]),
    "tensor_and_int": lambda lib, i: (1, i["idx"]),
    "tensor_ellipsis": lambda lib, i: (Ellipsis, i["idx"]),
    "tensor_none": lambda lib, i: (None, i["idx"]),
    "tensor_slice_step": lambda lib, i: (i["idx"], slice(None, None, 2)),
    "list": lambda lib, i: [0, 3, 1],
    "list_pair": lambda lib, i: ([0, 1], [2, 2]),
    "mask_rows": lambda lib, i: i["mask"],
    "mask_full": lambda lib, i: i["mask_full"],
    "mask_dim1": lambda lib, i: (slice(None), i["mask3"]),
    "mask_and_tensor": lambda lib, i: (i["mask"], i["three"]),
    "bool_scalar_true": lambda lib, i: True,
    "bool_scalar_false": lambda lib, i: False,
    "empty_index": lambda lib, i: i["empty"],
    # A 0-d integer tensor selects as an int would: a view, and dims placed as around an int.
    "tensor_0d": lambda lib, i: i["zero_d"],
    "tensor_0d_int32_pair": lambda lib, i: (i["zero_d_int32"], i["zero_d"]),
    "tensor_0d_separated": lambda lib, i: (i["zero_d"], slice(None), i["three"]),
    "tensor_0d_neg_ellipsis": lambda lib, i: (Ellipsis, i["zero_d_neg"], None),
}


def _index_tensors(lib, x_shape):
    conv = (lambda t: t) if lib is torch else (lambda t: to_genesis(t))
    g = torch.Generator().manual_seed(0)
    return {
        "idx": conv(IDX),
        "idx2": conv(IDX2),
        "neg": conv(torch.tensor([-1, 0, -4])),
        "col": conv(torch.tensor([[0], [3]])),
        "mask": conv(MASK_ROWS),
        "mask_full": conv(torch.rand(x_shape, generator=g) > 0.5),
        "mask3": conv(torch.tensor([True, False, True, False, True])),
        "three": conv(torch.tensor([0, 4, 1])),
        "empty": conv(torch.tensor([], dtype=torch.int64)),
        "zero_d": conv(torch.tensor(2)),
        "zero_d_int32": conv(torch.tensor(1, dtype=torch.int32)),
        "zero_d_neg": conv(torch.tensor(-2)),
    }


@pytest.mark.parametrize("name", list(KEYS))
def test_getitem(name):
    x = rand(4, 5, 6, seed=1)

    def fn(lib, x):
        return x[KEYS[name](lib, _index_tensors(lib, x.shape))]

    check(fn, x)


@pytest.mark.parametrize("name", ["int", "tensor", "tensor_2d", "tensor_dim1", "tensor_pair", "tensor_separated",
                                  "mask_rows", "mask_full", "mask_dim1", "list"])
def test_getitem_graph_is_torchs(name):
    # An advanced key whose other entries are whole-dim slices indexes the tensor itself: no view node between the
    # index node and the leaf, as in torch's graph.
    def nodes(lib, x):
        y = x[KEYS[name](lib, _index_tensors(lib, x.shape))]
        return y.grad_fn.name(), [n.name() for n, _ in y.grad_fn.next_functions if n is not None]

    x = rand(4, 5, 6, seed=1)
    assert nodes(genesis, to_genesis(x)) == nodes(torch, x.detach().requires_grad_(True))


@pytest.mark.parametrize("name", ["int", "slice_step", "ellipsis", "tensor", "tensor_dim1", "tensor_separated",
                                  "mask_rows", "list_pair", "none"])
def test_getitem_noncontiguous(name):
    def fn(lib, x):
        y = x.permute(2, 0, 1)[1:].mT.transpose(0, 1)
        return y[KEYS[name](lib, _index_tensors(lib, y.shape))]

    check(fn, rand(6, 4, 6, seed=2))


def test_getitem_list_keys_follow_torch():
    x = rand(3, 4, seed=30)
    check(lambda lib, x: x[[0, 2]], x)
    check(lambda lib, x: x[[True, False, True]], x)
    # A list holding lists is read as a tuple of indices (torch's legacy rule), not one 2-D index.
    check(lambda lib, x: x[[[0, 1], [1, 2]]], x)
    check(lambda lib, x: x[[slice(None), 1]], x)
    check(lambda lib, x: x[[0, 1], [1, 2]], x)
    # A range is a list of indices (makemore's logprobs[range(n), Yb])
    check(lambda lib, x: x[range(3), [1, 0, 3]], x)
    check(lambda lib, x: x[:, range(1, 3)], x)
    check(lambda lib, x: x[range(2)], x)


def test_getitem_python_and_numpy_keys():
    # Keys of Python integers or bools and integer or bool numpy arrays are checked and wrapped on the host.
    x = rand(4, 5, seed=31)
    check(lambda lib, x: x[[-1, 0, -4]], x)
    check(lambda lib, x: x[:, (4, -5, 2)], x)
    check(lambda lib, x: x[[]], x)
    check(lambda lib, x: x[:, []], x)
    check(lambda lib, x: x[[True, 2]], x)  # a mix of bools and integers is an integer index, as torch reads it
    check(lambda lib, x: x[np.array([3, -2, 0])], x)
    check(lambda lib, x: x[np.array([1, 2], dtype=np.int32), np.array([4, 0])], x)
    check(lambda lib, x: x[np.array([True, False, True, True])], x)
    check(lambda lib, x: x[:, np.array([False, True, True, False, True])], x)
    check(lambda lib, x: x[np.ones((4, 5), dtype=bool)], x)
    check(lambda lib, x: x[1:, range(-5, 5, 3)], x)
    check(lambda lib, x: x[..., [0, 0, 4]], rand(2, 3, 5, seed=32))
    check_error(IndexError, lambda lib, x: x[[0, 4]], x, match="index 4 is out of bounds for dimension 0 with size 4")
    check_error(IndexError, lambda lib, x: x[:, [1, -6]], x, match="-6")
    check_error(IndexError, lambda lib, x: x[np.array([7])], x, match="7")
    check_error(IndexError, lambda lib, x: x[:, range(6)], x, match="5")
    check_error(IndexError, lambda lib, x: x[[True, False]], x)
    check_error(IndexError, lambda lib, x: x[:, np.array([True, False])], x)


def test_getitem_masks():
    x = rand(4, 3, 2, seed=33)
    rows, cells = torch.tensor([True, False, True, True]), rand(4, 3, seed=34) > 0
    check(lambda lib, x, m: x[m], x, rows)
    check(lambda lib, x, m: x[m], x, cells)
    check(lambda lib, x, m: x[m], x, rand(4, 3, 2, seed=35) > 0)
    check(lambda lib, x, m: x[m], x, torch.zeros(4, dtype=torch.bool))
    check(lambda lib, x, m: x[1:, m], x, torch.tensor([False, True, True]))
    check_error(IndexError, lambda lib, x, m: x[m], x, torch.ones(4, 3, 2, 1, dtype=torch.bool))
    check_error(IndexError, lambda lib, x, m: x[m], x, torch.ones(4, 2, dtype=torch.bool))


def test_setitem_python_keys():
    def fn(lib, x):
        y = x * 1
        y[[0, -1]] = 5.0
        y[:, np.array([True, False, True])] = -1.0
        y[range(2), [2, 0]] = y[range(2), [0, 2]] * 2
        return y

    check(fn, rand(4, 3, seed=36))
    check_error(IndexError, lambda lib, x: (x * 1).__setitem__([4], 1.0), rand(4, 3, seed=37), match="4")


def test_getitem_int_dtypes_and_0d():
    x = torch.arange(24).reshape(2, 3, 4)
    check(lambda lib, x: x[1, ::2], x)
    check(lambda lib, x, i: x[i], x, torch.tensor([1, 0], dtype=torch.int32))
    check(lambda lib, x, i: x[:, i], x, torch.tensor([2, 1], dtype=torch.uint8).long())
    check(lambda lib, x, i: x[i], x, torch.tensor(1))
    check(lambda lib, x, i: x[0, i], x, torch.tensor([[0, 1], [2, 2]]))
    s = rand(seed=3)
    check(lambda lib, x: x[None], s)
    check(lambda lib, x: x[...], s)
    check(lambda lib, x: x[True], s)
    check(lambda lib, x: x[None, ..., None], s)


def test_getitem_results_share_memory_for_basic_keys():
    t = torch.zeros(3, 4)
    g = to_genesis(t)
    g[1:, ::2].fill_(1.0)
    t[1:, ::2].fill_(1.0)
    g[0][2] = 5.0
    t[0][2] = 5.0
    g[..., -1].add_(2.0)
    t[..., -1].add_(2.0)
    g[torch.tensor([0]).item()].mul_(3.0)
    t[0].mul_(3.0)
    assert_same(g, t)
    # Advanced indexing copies: writing to the result leaves the base alone.
    g[to_genesis(torch.tensor([0, 1]))].fill_(-9.0)
    assert_same(g, t)
    # A 0-d integer tensor selects: a view of the base (torch's rule), so in-place changes reach it.
    g[to_genesis(torch.tensor(1))].add_(4.0)
    t[torch.tensor(1)].add_(4.0)
    assert_same(g, t)


def test_confusion_matrix_counts_with_0d_tensor_keys():
    # `conf[t, p] += 1` over zipped tensors: a read through a view and a write back through it.
    targets, preds = torch.tensor([0, 1, 1, 2, 2, 2]), torch.tensor([0, 2, 1, 2, 0, 2])
    conf_t = torch.zeros(3, 3, dtype=torch.long)
    for t, p in zip(targets, preds):
        conf_t[t, p] += 1
    conf_g = genesis.zeros(3, 3, dtype=genesis.int64)
    for t, p in zip(to_genesis(targets), to_genesis(preds)):
        conf_g[t, p] += 1
    assert_same(conf_g, conf_t)


def test_getitem_errors():
    x = rand(3, 4)
    check_error(IndexError, lambda lib, x: x[3], x, match="3")
    check_error(IndexError, lambda lib, x: x[0, -5], x, match="-5")
    check_error(IndexError, lambda lib, x: x[0, 0, 0], x)
    check_error(IndexError, lambda lib, x, i: x[i], x, torch.tensor([0, 3]), match="3")
    check_error(IndexError, lambda lib, x, i: x[:, i], x, torch.tensor([-5]), match="-5")
    check_error(IndexError, lambda lib, x, m: x[m], x, torch.tensor([True, False]))
    check_error(IndexError, lambda lib, x, i: x[i], x, torch.tensor([0.0, 1.0]))
    check_error(ValueError, lambda lib, x: x[::-1], x)
    check_error(IndexError, lambda lib, x, i, j: x[i, j], x, torch.tensor([0, 1]), torch.tensor([0, 1, 2]))
    check_error(IndexError, lambda lib, x: x[1.5], x)
    check_error(IndexError, lambda lib, x: x[0], rand(seed=4))


@pytest.mark.parametrize("key", [0, -1, 2, slice(None), slice(0, 1), (0,), (slice(None),)])
def test_int_or_slice_key_of_a_0d_tensor_raises_torch_error(key: object) -> None:
    """Older scripts' ``loss.data[0]``: torch names ``tensor.item()`` in the message (``x[0] = v`` too)."""
    messages = []
    for lib in (torch, genesis):
        x = lib.tensor(2.0)
        for fn in (x.__getitem__, lambda k, x=x: x.__setitem__(k, 1.0)):
            with pytest.raises(IndexError) as err:
                fn(key)
            messages.append(str(err.value))
    assert messages[:2] == messages[2:]


# ------------------------------------------------------------------ assignment

SET_KEYS = ["int", "neg_int", "slice_step", "slice_neg", "none", "ellipsis", "ellipsis_mid", "int_int", "full",
            "tensor", "tensor_2d", "tensor_neg", "tensor_dim1", "tensor_pair", "tensor_broadcast", "tensor_separated",
            "list", "list_pair", "mask_rows", "mask_full", "mask_dim1", "tensor_ellipsis", "tensor_and_int",
            "tensor_slice_step", "empty_index", "slice_empty", "tensor_0d", "tensor_0d_int32_pair",
            "tensor_0d_separated", "tensor_0d_neg_ellipsis"]


def _value_shape(name):
    x = torch.zeros(4, 5, 6)
    return tuple(x[KEYS[name](torch, _index_tensors(torch, x.shape))].shape)


@pytest.mark.parametrize("name", SET_KEYS)
@pytest.mark.parametrize("value", ["scalar", "tensor", "broadcast"])
def test_setitem(name, value):
    shape = _value_shape(name)
    if name in ("tensor", "tensor_2d", "list"):
        # Duplicate indices make the winner of a plain assignment unspecified: assign at unique ones.
        name = "list" if name != "tensor_2d" else "tensor_neg"
        shape = _value_shape(name)

    def fn(lib, x, v):
        y = x * 1.0
        key = KEYS[name](lib, _index_tensors(lib, y.shape))
        if value == "scalar":
            y[key] = 2.5
        elif value == "tensor":
            y[key] = v.reshape(shape) if len(shape) else v.reshape(())
        else:
            y[key] = v.reshape(-1)[: shape[-1]] if len(shape) else v.reshape(-1)[0]
        return y

    n = 1
    for s in shape:
        n *= s
    if value == "broadcast" and n == 0:
        # A (0,)-shaped value does not broadcast to an empty (0, 5, 6) selection in torch either.
        check_error(RuntimeError, fn, rand(4, 5, 6, seed=5), rand(0, seed=6))
        return
    check(fn, rand(4, 5, 6, seed=5), rand(max(n, 1), seed=6) if n else rand(0, seed=6))


@pytest.mark.parametrize("name", ["int", "slice_step", "tensor_pair", "mask_full", "ellipsis", "tensor_dim1"])
def test_setitem_without_grad_and_dtype_cast(name):
    for dtype in (torch.float64, torch.int64, torch.bool):
        t = torch.zeros(4, 5, 6, dtype=dtype)
        g = to_genesis(t)
        t[KEYS[name](torch, _index_tensors(torch, t.shape))] = 1
        g[KEYS[name](genesis, _index_tensors(genesis, t.shape))] = 1
        assert_same(g, t)
        true = torch.tensor(True, dtype=dtype)
        t[KEYS[name](torch, _index_tensors(torch, t.shape))] = true
        g[KEYS[name](genesis, _index_tensors(genesis, t.shape))] = to_genesis(true)
        assert_same(g, t)


def test_setitem_advanced_dtype_mismatch_raises():
    check_error(RuntimeError, lambda lib, x, i, v: x.__setitem__(i, v), rand(3, 4, requires_grad=False),
                torch.tensor([0, 2]), torch.tensor(True))
    check_error(RuntimeError, lambda lib, x, i, v: x.__setitem__(i, v), rand(3, 4, requires_grad=False),
                torch.tensor([0, 2]), torch.ones(4, dtype=torch.float32))


def test_setitem_float_into_int_and_accumulating_views():
    t = torch.zeros(3, 4, dtype=torch.int32)
    g = to_genesis(t)
    t[1] = torch.tensor([1.7, -2.7, 3.2, 0.5])
    g[1] = to_genesis(torch.tensor([1.7, -2.7, 3.2, 0.5]))
    t[:, 0] = 7.9
    g[:, 0] = 7.9
    assert_same(g, t)
    view_t, view_g = t[1:], g[1:]
    view_t[torch.tensor([0, 1]), torch.tensor([2, 3])] = 9
    view_g[to_genesis(torch.tensor([0, 1])), to_genesis(torch.tensor([2, 3]))] = 9
    assert_same(g, t)


def test_setitem_gradients_reach_value_and_base():
    def fn(lib, x, v, w):
        y = x * 2.0
        y[0, 1:3] = v * 3.0
        y[:, -1] = w.sum()
        y[y > 1.0] = 0.0
        return y.exp()

    check(fn, rand(3, 4, seed=7), rand(2, seed=8), rand(5, seed=9))


def test_setitem_recorded_nodes_and_double_backward():
    for lib in (torch, genesis):
        x = lib.ones(4, 3, requires_grad=True)
        names = []
        for key, value in ((1, 0.0), ((slice(None), 0), lib.ones(4)), (lib.tensor([0, 2]), lib.ones(3)),
                           ([3], 2.0)):
            y = x * 1
            y[key] = value
            names.append(y.grad_fn.name())
        y = x * 1
        y[y > 0] = 0.0
        names.append(type(y.grad_fn).__name__)
        if lib is torch:
            expected = names
        else:
            assert names == expected

    def second_order(lib, x, v):
        y = x * x
        y[1:, 0] = (v * v)[:2]
        y[lib.tensor([0])] = v.sin()
        gx, gv = lib.autograd.grad((y * y).sum(), (x, v), create_graph=True)
        return gx.sum() + gv.pow(2).sum()

    check(second_order, rand(3, 3, seed=60), rand(3, seed=61))


def test_setitem_mask_with_one_value():
    # x[mask] = number (or a 0-d tensor): a select on the device, no read of the mask; gradients as torch's.
    def fn(lib, x, v):
        y = x * 1
        y[y > 0.2] = -1.0
        y[(x < 0)[:, 0]] = 3
        y[x.sum(1) > 0] = v.sum()
        return y * y

    check(fn, rand(5, 3, seed=64), rand(2, seed=65))
    for dtype in (torch.int64, torch.bool, torch.float16):
        t = torch.zeros(4, 3, dtype=dtype)
        mask = torch.tensor([True, False, True, False])
        g = to_genesis(t)
        t[mask] = 1
        g[to_genesis(mask)] = 1
        assert_same(g, t)
        t[mask.unsqueeze(1).expand(4, 3)] = torch.tensor(0, dtype=dtype)
        g[to_genesis(mask.unsqueeze(1).expand(4, 3))] = to_genesis(torch.tensor(0, dtype=dtype))
        assert_same(g, t)
    check_error(IndexError, lambda lib, x, m: x.__setitem__(m, 1.0), rand(4, 3, seed=66, requires_grad=False),
                torch.tensor([True, False]))

    def second_order(lib, x, v):
        y = x * x
        y[x > 0] = v * v
        gx, gv = lib.autograd.grad(y.pow(2).sum(), (x, v), create_graph=True)
        return gx.sum() + gv

    check(second_order, rand(3, 3, seed=67), rand(seed=68))


def test_setitem_into_a_saved_tensor_fails_at_backward():
    # The write is in place, as torch's: a node that saved the old value refuses to run.
    for lib, error in ((torch, RuntimeError), (genesis, RuntimeError)):
        x = lib.ones(3, requires_grad=True)
        y = x.exp()
        y[0] = 2.0
        with pytest.raises(error, match="modified by an inplace operation"):
            y.sum().backward()


def test_setitem_value_gradient_does_not_alias():
    def fn(lib, x, v):
        y = x * 1
        y[0] = v
        return (y * 2).sum()

    check(fn, rand(3, 4, seed=62), rand(4, seed=63))
    g = to_genesis(rand(4, seed=63))
    y = genesis.zeros(3, 4, device=g.device)
    y[1] = g
    y.sum().backward()
    assert g.grad is not None and genesis.equal(g.grad, genesis.ones(4, dtype=g.dtype, device=g.device))


def test_setitem_errors():
    check_error(RuntimeError, lambda lib, x, v: x.__setitem__(0, v), rand(3, 4, requires_grad=False),
                rand(3, requires_grad=False))
    check_error(IndexError, lambda lib, x: x.__setitem__(5, 1.0), rand(3, 4, requires_grad=False))
    check_error(IndexError, lambda lib, x, i: x.__setitem__(i, 1.0), rand(3, 4, requires_grad=False),
                torch.tensor([0, 4]))
    check_error(RuntimeError, lambda lib, x, i, v: x.__setitem__(i, v), rand(3, 4, requires_grad=False),
                torch.tensor([0, 1]), rand(3, 4, requires_grad=False))
    check_error(RuntimeError, lambda lib, x: x.__setitem__(0, 1.0), rand(3, 4))


# ------------------------------------------------------------------ gather / scatter family

@pytest.mark.parametrize("dim", [0, 1, -1])
def test_gather(dim):
    x = rand(3, 4, seed=10)
    index = torch.tensor([[0, 2, 1, 0], [2, 2, 0, 1]]) if dim == 0 else torch.tensor([[3, 0], [1, 1], [0, 2]])
    check(lambda lib, x, i: lib.gather(x, dim, i), x, index)
    check(lambda lib, x, i: x.gather(dim, i), x, index)
    check(lambda lib, x, i: x.mT.mT.gather(dim, i[:2, :1]), x, index)
    check(lambda lib, x, i: lib.take_along_dim(x, i, dim), x, index)
    check(lambda lib, x, i: x.gather(dim, i), torch.arange(12).reshape(3, 4), index)


def test_gather_takes_sparse_grad():
    x, index = rand(3, 4, seed=10), torch.tensor([[3, 0], [1, 1], [0, 3]])
    check(lambda lib, x, i: lib.gather(x, 1, i, sparse_grad=False), x, index)
    check(lambda lib, x, i: x.gather(1, i, sparse_grad=False), x, index)
    # sparse_grad=True: torch's gradient of x is sparse COO, Genesis's the same values dense.
    t = x.detach().clone().requires_grad_()
    t.gather(1, index, sparse_grad=True).sum().backward()
    g = to_genesis(x.detach(), requires_grad=True)
    out = genesis.gather(g, 1, to_genesis(index), sparse_grad=True)
    assert_same(out, t.gather(1, index))
    out.sum().backward()
    assert_same(g.grad, t.grad.to_dense())


def test_take_along_dim_with_sort_and_broadcast():
    x = rand(3, 5, seed=11)
    check(lambda lib, x: lib.take_along_dim(x, x.argsort(1), 1), x)
    check(lambda lib, x: lib.take_along_dim(x, x.argmax(1, keepdim=True), 1), x)
    check(lambda lib, x, i: lib.take_along_dim(x, i), x, torch.tensor([14, 0, 3]))
    check(lambda lib, x, i: lib.take_along_dim(x, i, 0), x, torch.tensor([[2], [0]]))
    check(lambda lib, x, i: lib.take(x, i), x, torch.tensor([[14, 0], [3, -3]]))
    check_error(IndexError, lambda lib, x, i: lib.take(x, i), x, torch.tensor([15]), match="15")


def test_gather_errors():
    x = rand(3, 4)
    check_error(RuntimeError, lambda lib, x, i: x.gather(0, i), x, torch.tensor([0, 1]))
    check_error(RuntimeError, lambda lib, x, i: x.gather(0, i), x, torch.tensor([[0, 1, 0, 0, 1]]))
    check_error(IndexError, lambda lib, x, i: x.gather(2, i), x, torch.tensor([[0]]))
    check_error(RuntimeError, lambda lib, x, i: x.gather(1, i), x, torch.tensor([[4]]), match="4")
    check_error(RuntimeError, lambda lib, x, i: x.gather(1, i), x, torch.tensor([[-1]]), match="-1")
    check_error(RuntimeError, lambda lib, x, i: x.gather(1, i), x, torch.tensor([[0.0]]))


@pytest.mark.parametrize("dim", [0, 1])
def test_scatter_scatter_add(dim):
    x = rand(3, 4, seed=12)
    src = rand(2, 3, seed=13)
    index = torch.tensor([[0, 1, 2], [2, 0, 1]]) if dim == 0 else torch.tensor([[3, 0, 1], [2, 1, 0]])
    check(lambda lib, x, i, s: x.scatter(dim, i, s), x, index, src)
    check(lambda lib, x, i, s: lib.scatter(x, dim, i, s), x, index, src)
    check(lambda lib, x, i: x.scatter(dim, i, 1.5), x, index)
    check(lambda lib, x, i: x.scatter(dim, i, value=-2.0), x, index)
    dup = torch.tensor([[0, 0, 2], [2, 0, 2]]) if dim == 0 else torch.tensor([[3, 3, 1], [1, 1, 1]])
    check(lambda lib, x, i, s: x.scatter_add(dim, i, s), x, dup, src)
    check(lambda lib, x, i, s: lib.scatter_add(x, dim, i, s), x, dup, src)
    # torch has no derivative for scatter with reduce: values only.
    check(lambda lib, x, i, s: x.scatter(dim, i, s, reduce="add"), x, dup, src, backward=False)
    check(lambda lib, x, i, s: (x * 1).scatter_(dim, i, s), x, index, src)
    check(lambda lib, x, i, s: (x * 1).scatter_add_(dim, i, s), x, dup, src)
    check(lambda lib, x, i, s: x.scatter_add(dim, i, s), torch.zeros(3, 4, dtype=torch.int64), dup,
          torch.ones(2, 3, dtype=torch.int64))


def test_scatter_errors():
    x, s = rand(3, 4), rand(2, 3)
    check_error(RuntimeError, lambda lib, x, i, s: x.scatter(0, i, s), x, torch.tensor([0, 1]), s)
    check_error(RuntimeError, lambda lib, x, i, s: x.scatter(0, i, s), x, torch.tensor([[3]]), s)
    check_error(RuntimeError, lambda lib, x, i, s: x.scatter_add(1, i, s), x, torch.tensor([[4]]), s)
    check_error(IndexError, lambda lib, x, i, s: x.scatter(2, i, s), x, torch.tensor([[0]]), s)
    check_error(RuntimeError, lambda lib, x, i, s: x.scatter(1, i, s), x, torch.tensor([[0, 1, 2, 3]]), s,
                match="scatter")
    check_error(RuntimeError, lambda lib, x, i, s: x.scatter_add(1, i, s), x, torch.tensor([[0, 1], [1, 0], [2, 2]]),
                s, match="scatter_add")


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_index_select_add_copy_fill(dim):
    x = rand(3, 4, seed=14)
    n = x.shape[dim]
    index = torch.tensor([n - 1, 0, n - 1])
    unique = torch.tensor([n - 1, 0])
    src_shape = list(x.shape)
    src_shape[dim] = 3
    src = rand(*src_shape, seed=15)
    usrc_shape = list(x.shape)
    usrc_shape[dim] = 2
    usrc = rand(*usrc_shape, seed=16)
    check(lambda lib, x, i: x.index_select(dim, i), x, index)
    check(lambda lib, x, i: lib.index_select(x.mT.mT, dim, i), x, index)
    check(lambda lib, x, i: x.index_select(dim, i), x, torch.tensor([], dtype=torch.int64))
    check(lambda lib, x, i, s: x.index_add(dim, i, s), x, index, src)
    check(lambda lib, x, i, s: lib.index_add(x, dim, i, s, alpha=-2.0), x, index, src)
    check(lambda lib, x, i, s: (x * 1).index_add_(dim, i, s), x, index, src)
    check(lambda lib, x, i, s: x.index_copy(dim, i, s), x, unique, usrc)
    check(lambda lib, x, i, s: (x * 1).index_copy_(dim, i, s), x, unique, usrc)
    check(lambda lib, x, i: x.index_fill(dim, i, 7.0), x, index)
    check(lambda lib, x, i, v: x.index_fill(dim, i, v), x, index, rand(seed=17))  # a 0-d value takes a gradient
    check(lambda lib, x, i: x.index_select(dim, i), torch.arange(12).reshape(3, 4), index)


def test_index_select_errors():
    x = rand(3, 4)
    check_error(IndexError, lambda lib, x, i: x.index_select(0, i), x, torch.tensor([3]), match="3")
    check_error(IndexError, lambda lib, x, i: x.index_select(2, i), x, torch.tensor([0]))
    check_error(IndexError, lambda lib, x, i: x.index_select(0, i), x, torch.tensor([[0]]))
    check_error(RuntimeError, lambda lib, x, i, s: x.index_add(0, i, s), x, torch.tensor([0, 1]), rand(3, 4))
    check_error(RuntimeError, lambda lib, x, i, s: x.index_add(0, i, s), x, torch.tensor([5]), rand(1, 4))
    check_error(IndexError, lambda lib, x, i: x.index_select(0, i), x, torch.tensor([-1]))
    check_error(IndexError, lambda lib, x, i, s: x.index_copy(1, i, s), x, torch.tensor([4]), rand(3, 1))
    # Sources of another dtype are refused, not cast.
    check_error(RuntimeError, lambda lib, x, i, s: x.index_add(0, i, s), x, torch.tensor([1]), rand(1, 4).float())
    check_error(RuntimeError, lambda lib, x, i, s: x.index_copy(0, i, s), x, torch.tensor([1]), rand(1, 4).float())
    check_error(RuntimeError, lambda lib, x, i, s: x.scatter(0, i, s), x, torch.tensor([[1]]), rand(1, 1).float())


def test_masked_fill_select_scatter():
    x = rand(3, 4, seed=17)
    mask = torch.tensor([[True, False, True, False]])
    full_mask = torch.rand(3, 4, generator=torch.Generator().manual_seed(1)) > 0.5
    check(lambda lib, x, m: x.masked_fill(m, -1.0), x, mask)
    check(lambda lib, x, m: lib.masked_fill(x, m, 2), x, full_mask)
    check(lambda lib, x, m, v: x.masked_fill(m, v), x, mask, rand(seed=18))
    check(lambda lib, x, m: (x * 1).masked_fill_(m, 0.0), x, full_mask)
    check(lambda lib, x, m: x.masked_fill(m, 3), torch.arange(12).reshape(3, 4), mask)
    check(lambda lib, x, m: x.masked_fill(m, True), torch.zeros(3, 4, dtype=torch.bool), mask)
    check(lambda lib, x, m: x.masked_select(m), x, mask)
    check(lambda lib, x, m: lib.masked_select(x, m), x, full_mask)
    check(lambda lib, x, m: x.mT.masked_select(m.mT), x, full_mask)
    check(lambda lib, x, m, s: x.masked_scatter(m, s), x, full_mask, rand(12, seed=19))
    for m in (torch.tensor(True), torch.tensor(False)):  # 0-d input and mask
        check(lambda lib, x, m, s: x.masked_scatter(m, s), rand(seed=20), m, rand(3, seed=21))
    check_error(RuntimeError, lambda lib, x, m: x.masked_fill(m, 1.0), x, torch.tensor([1, 0, 1, 0]))
    check_error(RuntimeError, lambda lib, x, m: x.masked_fill(m, 1.0), x, torch.tensor([True, False]))
    check_error(RuntimeError, lambda lib, x, m, v: x.masked_fill(m, v), x, mask, rand(2))
    # Out of place the result is contiguous whatever the input's layout (torch fills a contiguous clone).
    check(lambda lib, x, m: x.mT.masked_fill(m.mT, 0.5).view(-1), x, full_mask)
    assert to_genesis(x).mT.masked_fill(to_genesis(full_mask).mT, 0.0).is_contiguous()


@pytest.mark.filterwarnings("ignore:indexing with dtype torch.uint8 is now deprecated")
def test_uint8_masks_are_masks_as_in_torch():
    # Old code and `(ids != PAD).byte()` index with uint8 masks: torch reads them as bool masks (deprecated), and
    # refuses them where it fills through masked_fill_ or selects through masked_select.
    x = rand(4, 3, seed=20)
    byte = torch.tensor([1, 0, 1, 1], dtype=torch.uint8)
    check(lambda lib, x, m: x[m], x, byte)
    check(lambda lib, x, m: x[m, 1:], x, byte)
    check(lambda lib, x, m, v: (x * 1).index_put((m,), v), x, byte, rand(3, 3, seed=21))
    with pytest.warns(UserWarning, match="indexing with dtype torch.uint8 is now deprecated"):
        to_genesis(x.detach())[to_genesis(byte)]
    check_error(RuntimeError, lambda lib, x, m: x.masked_select(m.unsqueeze(1)), x, byte)
    check_error(RuntimeError, lambda lib, x, m: x.masked_scatter(m.unsqueeze(1), x), x, byte)

    def fill(lib, x, m):
        y = x.detach().clone()
        y[m] = 0.0
        return y
    check_error(RuntimeError, fill, x, byte)


def test_index_put_with_bool_masks():
    x = rand(3, 4, seed=22)
    mask = torch.rand(3, 4, generator=torch.Generator().manual_seed(2)) > 0.5
    rows = torch.tensor([True, False, True])
    check(lambda lib, x, m: (x * 1).index_put((m,), lib.tensor(0.5, dtype=x.dtype, device=x.device)), x, mask)
    check(lambda lib, x, m, v: (x * 1).index_put((m,), v), x, rows, rand(4, seed=23))
    check(lambda lib, x, m, v: (x * 1).index_put_((m,), v, accumulate=True), x, rows, rand(2, 4, seed=24))


# ------------------------------------------------------------------ sorting, searching, uniqueness

@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_argsort(dim, descending):
    x = rand(4, 5, seed=20)
    check(lambda lib, x: tuple(x.sort(dim, descending)), x)
    check(lambda lib, x: lib.sort(x, dim=dim, descending=descending).values, x)
    check(lambda lib, x: x.mT.sort(dim, descending).indices, x)
    check(lambda lib, x: x.argsort(dim, descending), x)
    check(lambda lib, x: lib.argsort(x, dim=dim, descending=descending), x)
    ties = torch.tensor([[3, 1, 3, 1, 2], [0, 0, 0, 0, 0]])
    check(lambda lib, x: tuple(x.sort(dim=dim, descending=descending, stable=True)), ties)
    check(lambda lib, x: tuple(lib.sort(x, dim=dim, descending=descending, stable=True)), ties.double())


def test_sort_0d_empty_and_nan():
    check(lambda lib, x: tuple(x.sort()), rand(seed=21))
    check(lambda lib, x: tuple(x.sort(0)), rand(0, seed=21))
    check(lambda lib, x: tuple(x.sort()), torch.tensor([2.0, float("nan"), -1.0, float("inf")]))
    check(lambda lib, x: tuple(x.sort(descending=True)), torch.tensor([2.0, float("nan"), -1.0, float("inf")]))
    check(lambda lib, x: tuple(x.sort()), torch.tensor([True, False, True]))


@pytest.mark.parametrize("dtype", [torch.float32, torch.int32, torch.bfloat16, torch.int16, torch.float64,
                                   torch.int64])
def test_sort_rows_longer_than_one_tile(dtype):
    # Rows past 4096 elements (on cuda: tiles sorted, then merged in global memory; 64-bit types as two sorts of
    # 32-bit words). Few distinct values make many ties (a stable sort keeps them by position), NaN sorts last; both
    # orders, the last and a leading dim, a long 1-d row, and unique over it.
    gen = torch.Generator().manual_seed(27)
    rows = torch.randint(-50, 50, (3, 20000), generator=gen).to(dtype)
    if dtype.is_floating_point:
        rows[0, 7] = rows[2, 19000] = float("nan")
    for descending in (False, True):
        check(lambda lib, x, d=descending: tuple(x.sort(dim=-1, descending=d, stable=True)), rows)
    check(lambda lib, x: tuple(x.sort(dim=0, descending=True, stable=True)), rows[:, :4500].T.contiguous())
    flat = torch.randint(-1000, 1000, (70000,), generator=gen).to(dtype)
    check(lambda lib, x: x.argsort(stable=True), flat)
    many = torch.randint(-1000, 1000, (70, 9000), generator=gen).to(dtype)  # rows enough for the largest tiles
    check(lambda lib, x: x.argsort(dim=1, descending=True, stable=True), many)
    check(lambda lib, x: tuple(lib.unique(x, return_inverse=True, return_counts=True)), flat)


def test_sort_of_long_rows_gradient():
    check(lambda lib, x: x.sort(-1, descending=True).values * 2, rand(2, 5000, dtype=torch.float32, seed=28))


@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("dim", [0, -1])
def test_topk(largest, dim):
    x = rand(4, 6, seed=22)
    for k in (0, 1, 3, x.shape[dim]):
        check(lambda lib, x, k=k: tuple(x.topk(k, dim, largest)), x)
        check(lambda lib, x, k=k: lib.topk(x, k, dim=dim, largest=largest).values, x)
    ints = torch.tensor([[5, 1, 7, 3], [2, 4, 9, 0]])
    check(lambda lib, x: tuple(x.topk(2, dim, largest)), ints.T.contiguous() if dim == 0 else ints)
    check_error(RuntimeError, lambda lib, x: x.topk(7, dim), x)


@pytest.mark.parametrize("dtype", [torch.float32, torch.int32, torch.bfloat16])
def test_topk_over_long_rows(dtype):
    # A vocabulary's logits: rows longer than one GPU sort takes, k small (sampling), and k past the first round.
    gen = torch.Generator().manual_seed(26)
    rows = torch.stack([torch.randperm(20000, generator=gen) for _ in range(3)]).to(dtype)
    x = rows.requires_grad_(True) if dtype is torch.float32 else rows
    # bfloat16 rounds these integers into ties, whose indices may come in any order: its values are compared.
    pick = (lambda r: r.values) if dtype is torch.bfloat16 else tuple
    for k, largest in ((1, True), (50, True), (7, False), (2000, True)):
        check(lambda lib, x, k=k, largest=largest: pick(x.topk(k, -1, largest)), x)
    check(lambda lib, x: pick(x.topk(5, 0)), rows.detach().T.contiguous())


def test_kthvalue_median():
    x = rand(3, 5, seed=23)
    check(lambda lib, x: tuple(x.kthvalue(2, 1)), x)
    check(lambda lib, x: tuple(x.kthvalue(3, 0, keepdim=True)), x)
    check(lambda lib, x: x.median(), x)
    check(lambda lib, x: tuple(x.median(1)), x)
    check(lambda lib, x: tuple(x.median(0, keepdim=True)), rand(4, 3, seed=24))



def test_topk_kthvalue_results_are_contiguous():
    # As torch's, fresh tensors a caller may view(): not strided slices of the sorted input.
    x = rand(4, 9, seed=25)
    check(lambda lib, x: x.topk(3, dim=1).values.view(-1), x)
    check(lambda lib, x: x.topk(2, dim=0).indices.view(-1), x)
    check(lambda lib, x: x.kthvalue(2, dim=1).values.view(2, 2), x)
    check(lambda lib, x: x.t().kthvalue(3, dim=0, keepdim=True).indices.view(-1), x)
    g = to_genesis(x)
    assert g.topk(3, dim=1).values.is_contiguous() and g.kthvalue(2, dim=1).indices.is_contiguous()

def test_nonzero_argwhere():
    x = torch.tensor([[0.0, 1.5, 0.0], [2.0, 0.0, -1.0]])
    check(lambda lib, x: x.nonzero(), x)
    check(lambda lib, x: lib.nonzero(x, as_tuple=True), x)
    check(lambda lib, x: lib.argwhere(x), x)
    check(lambda lib, x: x.nonzero(), x > 0)
    check(lambda lib, x: x.nonzero(), torch.zeros(2, 0))
    check(lambda lib, x: x.nonzero(), torch.tensor(3))
    check(lambda lib, x: lib.nonzero(x, as_tuple=True), torch.tensor(0))
    # as_tuple reads a 0-d tensor as a one-element 1-D one (numpy's convention): (tensor([0]),) when nonzero.
    check(lambda lib, x: lib.nonzero(x, as_tuple=True), torch.tensor(3))
    check(lambda lib, x: x.nonzero(as_tuple=True), torch.tensor(True))
    check(lambda lib, x: lib.where(x > 0), torch.tensor(2.5))
    check(lambda lib, x: x.mT.nonzero(), x)


def test_unique():
    x = torch.tensor([[3, 1, 2], [1, 3, 5]])
    check(lambda lib, x: lib.unique(x), x)
    check(lambda lib, x: x.unique(return_inverse=True), x)
    check(lambda lib, x: x.unique(return_counts=True), x)
    check(lambda lib, x: lib.unique(x, return_inverse=True, return_counts=True), x)
    check(lambda lib, x: lib.unique(x), torch.tensor([2.5, -1.0, 2.5, 0.0]))
    check(lambda lib, x: lib.unique(x), torch.tensor([True, False, True]))
    check(lambda lib, x: lib.unique(x, return_counts=True), torch.tensor([], dtype=torch.int64))


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_unique_dim(dim):
    x = torch.tensor([[[1, 2], [1, 2], [3, 0]], [[1, 2], [1, 2], [3, 1]], [[1, 2], [1, 2], [3, 0]]])
    check(lambda lib, x: lib.unique(x, dim=dim), x)
    check(lambda lib, x: x.unique(dim=dim, return_inverse=True, return_counts=True), x)
    check(lambda lib, x: x.unique(dim=dim, return_inverse=True), x.double() / 2)
    check(lambda lib, x: x.unique(dim=dim, return_counts=True), x > 1)


def test_one_hot():
    f = torch.nn.functional
    x = torch.tensor([[0, 2], [1, 2]])
    check(lambda lib, x: f.one_hot(x) if lib is torch else lib.one_hot(x), x)
    check(lambda lib, x: f.one_hot(x, 5) if lib is torch else lib.one_hot(x, 5), x)
    check(lambda lib, x: f.one_hot(x, 3) if lib is torch else lib.one_hot(x, num_classes=3), torch.tensor(1))
    check(lambda lib, x: f.one_hot(x, 3) if lib is torch else lib.one_hot(x, 3), torch.tensor([], dtype=torch.int64))
    check_error(RuntimeError, lambda lib, x: f.one_hot(x, 2) if lib is torch else lib.one_hot(x, 2), x)
    check_error(RuntimeError, lambda lib, x: f.one_hot(x) if lib is torch else lib.one_hot(x), torch.tensor([-1]))
    check_error(RuntimeError, lambda lib, x: f.one_hot(x) if lib is torch else lib.one_hot(x), torch.tensor([1.0]))


@pytest.mark.parametrize("right", [False, True])
def test_searchsorted_bucketize(right):
    seq = torch.tensor([1.0, 2.0, 2.0, 4.0, 7.0])
    values = torch.tensor([[0.0, 2.0, 3.0], [7.0, 8.0, 1.0]])
    check(lambda lib, s, v: lib.searchsorted(s, v, right=right), seq, values)
    check(lambda lib, s, v: lib.searchsorted(s, v, side="right" if right else "left"), seq, values)
    check(lambda lib, s, v: lib.searchsorted(s, v, out_int32=True, right=right), seq, values)
    check(lambda lib, s: lib.searchsorted(s, 2.0, right=right) if lib is torch
          else lib.searchsorted(s, 2.0, right=right), seq)
    rows = torch.tensor([[1, 3, 5], [2, 4, 6]])
    check(lambda lib, s, v: lib.searchsorted(s, v, right=right), rows, torch.tensor([[3, 6], [1, 4]]))
    check(lambda lib, v, s: lib.bucketize(v, s, right=right), values, seq)
    check_error(RuntimeError, lambda lib, s, v: lib.searchsorted(s, v), rows, torch.tensor([[1], [2], [3]]))


@pytest.mark.parametrize("right", [False, True])
def test_searchsorted_bucketize_mixed_dtypes(right):
    """Values and boundaries of different dtypes are compared in their promoted dtype (no truncation)."""
    ints_, floats = torch.tensor([1, 2, 5]), torch.tensor([0.5, 1.0, 1.5, 2.5, 5.0, 6.5])
    check(lambda lib, v, s: lib.bucketize(v, s, right=right), floats, ints_)
    check(lambda lib, s, v: lib.searchsorted(s, v, right=right), floats, torch.tensor([0, 1, 2, 7]))
    check(lambda lib, s, v: lib.searchsorted(s, v, right=right), ints_, floats.double())
    check(lambda lib, s: lib.searchsorted(s, 2.5, right=right), ints_)
    check(lambda lib, v, s: lib.bucketize(v, s, right=right, out_int32=True), floats.half(), floats[::2])


def test_searchsorted_bucketize_argument_errors():
    seq, values = torch.tensor([1.0, 2.0, 4.0]), torch.tensor([0.0, 3.0])
    check_error(RuntimeError, lambda lib, s, v: lib.searchsorted(s, v, side="left", right=True), seq, values,
                match="side and right can't be set to opposites")
    check_error(RuntimeError, lambda lib, s, v: lib.searchsorted(s, v, side="middle"), seq, values,
                match="side can only be 'left' or 'right' but got middle")
    check(lambda lib, s, v: lib.searchsorted(s, v, side="right", right=False), seq, values)
    for bad in (torch.ones(2, 2), torch.tensor(1.0)):
        check_error(RuntimeError, lambda lib, v, s: lib.bucketize(v, s), values, bad,
                    match=rf"boundaries tensor must be 1 dimension, but got dim\({bad.ndim}\)")


@pytest.mark.parametrize("right", [False, True])
def test_searchsorted_sorter(right):
    """``sorter`` holds the indices that sort an unsorted sequence (its argsort); results index the sorted order."""
    seq = torch.tensor([4.0, 1.0, 7.0, 2.0, 2.0])
    order = torch.tensor([1, 3, 4, 0, 2])
    values = torch.tensor([[0.0, 2.0, 3.0], [7.0, 8.0, 1.0]])
    check(lambda lib, s, v, o: lib.searchsorted(s, v, right=right, sorter=o), seq, values, order)
    check(lambda lib, s, o: lib.searchsorted(s, 2.0, side="right" if right else "left", sorter=o), seq, order)
    rows, row_order = torch.tensor([[5, 1, 3], [2, 6, 4]]), torch.tensor([[1, 2, 0], [0, 2, 1]])
    check(lambda lib, s, v, o: lib.searchsorted(s, v, right=right, sorter=o), rows, torch.tensor([[3, 6], [1, 4]]),
          row_order)
    check(lambda lib, s, v: lib.searchsorted(s, v, sorter=s.argsort()), rows, torch.tensor([[3, 6], [1, 4]]))
    check_error(RuntimeError, lambda lib, s, v, o: lib.searchsorted(s, v, sorter=o.int()), seq, values, order)
    check_error(RuntimeError, lambda lib, s, v, o: lib.searchsorted(s, v, sorter=o[:3]), seq, values, order)
    for bad in ([1, 3, 4, 0, 5], [1, 3, 4, 0, -1]):  # out of range
        check_error(RuntimeError, lambda lib, s, v, o: lib.searchsorted(s, v, sorter=o), seq, values,
                    torch.tensor(bad))
    check_error(TypeError, lambda lib, s, v: lib.searchsorted(s, v, sorter=[1, 3, 4, 0, 2]), seq, values)


def _long(lib, values, shape):
    if lib is torch:
        return torch.tensor(values, dtype=torch.int64).reshape(shape)
    return genesis.tensor(values, dtype=genesis.int64, device=DEVICE).reshape(shape)


def test_index_ops_on_0d_and_empty():
    s, e = rand(seed=40), rand(0, 3, seed=41)
    check(lambda lib, x: x.gather(0, _long(lib, [0], ())), s)
    check(lambda lib, x: x.index_select(0, _long(lib, [0], (1,))), s)
    check(lambda lib, x: x.masked_select(x > 0), s)
    check(lambda lib, x: tuple(x.topk(1)), s)
    check(lambda lib, x: x.argsort(), s)
    check(lambda lib, x: x.scatter(1, _long(lib, [], (1, 0)), 1.0), rand(2, 3, seed=42))
    check(lambda lib, x: x.gather(1, _long(lib, [], (1, 0))), rand(2, 3, seed=42))
    check(lambda lib, x: x[_long(lib, [], (0,))], e)
    check(lambda lib, x: x[x > 0], e)
    check(lambda lib, x: tuple(x.sort(1)), rand(2, 0, seed=43))
    check(lambda lib, x: tuple(x.topk(0)), rand(0, seed=43))
    check(lambda lib, x, src: x.index_add(0, _long(lib, [], (0,)), src), rand(2, 3, seed=44), rand(0, 3, seed=45))
    check(lambda lib, x: x.nonzero(), e)
    check(lambda lib, x: tuple(x.max(1)), e)
    check(lambda lib, x: x.unique(), rand(0, seed=46, requires_grad=False))
    check(lambda lib, s, v: lib.searchsorted(s, v), torch.tensor([1.0, 2.0]), torch.zeros(0))


def test_setitem_through_views_gradients():
    def through_rows(lib, x, v):
        y = x * 1.0
        y[0][1] = v.sum()
        y[1:, ::2] = v[:2] * 3
        return y * y

    def through_mask_of_a_row(lib, x, v):
        y = x * 1.0
        row = y[1]
        row[row > 0] = v[0]
        return y.exp()

    def through_transpose(lib, x, v):
        y = x * 1.0
        y.mT[_long(lib, [0, 2], (2,))] = v[:3]
        return y.sin()

    for fn in (through_rows, through_mask_of_a_row, through_transpose):
        check(fn, rand(3, 4, seed=50), rand(4, seed=51))


def test_index_put():
    x, v = rand(4, 3, seed=70), rand(2, 3, seed=71)
    rows = torch.tensor([0, 2])
    check(lambda lib, x, i, v: x.index_put((i,), v), x, rows, v)
    check(lambda lib, x, i, v: lib.index_put(x, (i,), v, accumulate=True), x, torch.tensor([1, 1]), v)
    check(lambda lib, x, i, j, v: x.index_put((i, j), v[0, :2]), x, rows, torch.tensor([2, 0]), v)
    check(lambda lib, x, i, v: (x * 1).index_put_((i,), v), x, rows, v)
    check_error(RuntimeError, lambda lib, x, i, v: x.index_put((i,), v), x, rows, v.float())
    check_error(IndexError, lambda lib, x, i, v: x.index_put((i,), v), x, torch.tensor([0, 4]), v)


def test_scatter_reduce_argument_and_scalar_values():
    index = torch.tensor([[2, 0], [1, 1]])
    src = torch.full((2, 2), 2.0, dtype=torch.float64)
    with pytest.warns(UserWarning, match="deprecated"):
        check(lambda lib, x, i, s: x.scatter(1, i, s, reduce="multiply"), torch.ones(2, 3, dtype=torch.float64),
              index, src, backward=False)
    check(lambda lib, x, i: x.scatter(1, i, 1.5, reduce="add"), torch.zeros(2, 3, dtype=torch.float64), index,
          backward=False)
    check(lambda lib, x, i: x.scatter(1, i, 3.0, reduce="multiply"), torch.ones(2, 3, dtype=torch.float64), index,
          backward=False)
    check(lambda lib, x, i: x.clone().scatter_(1, i, 1.0, reduce="add"), torch.zeros(2, 3, dtype=torch.float64),
          index, backward=False)
    check_error(RuntimeError, lambda lib, x, i: x.scatter(1, i, 1.0, reduce="mean"), torch.zeros(2, 3), index)


def test_masked_fill_broadcasts_input_and_mask_together():
    mask = torch.tensor([[True], [False]])
    check(lambda lib, x, m: x.masked_fill(m, 1.0), rand(1, 3, seed=16), mask)
    check(lambda lib, x, m: lib.masked_fill(x, m, -1.0), rand(1, 3, seed=16), mask)
    pad = torch.tensor([[False, False, True, True], [False, False, False, True]]).view(2, 1, 4)
    check(lambda lib, x, m: x.masked_fill(m, float("-inf")), rand(1, 1, 4, seed=17), pad)
    check_error(RuntimeError, lambda lib, x, m: x.clone().masked_fill_(m, 1.0), rand(1, 3, seed=16), mask)


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int16, torch.float32], ids=str)
def test_backend_scatter_writes_in_place(dtype):
    # The backend primitive ``scatter_`` writes into its output array (dtypes without device atomics included) and
    # returns that array; strided outputs get the result copied back.
    base = torch.arange(12, dtype=torch.float64).reshape(3, 4).to(dtype)
    src = (torch.arange(8, dtype=torch.float64).reshape(2, 4) + 20).to(dtype)
    # Duplicate indices only where values add: which duplicate wins a plain scatter is unspecified, as in torch.
    for mode, reduce, index in (("set", None, torch.tensor([[2, 0, 1, 3], [1, 3, 0, 2]])),
                                ("add", "add", torch.tensor([[2, 0, 1, 3], [1, 1, 0, 2]]))):
        for transposed in (False, True):
            x = to_genesis(base.t().contiguous().t() if transposed else base)
            nd = x.ndarray
            got = nd.backend.scatter_(nd, 1, to_genesis(index).ndarray, to_genesis(src).ndarray, mode)
            expected = base.scatter(1, index, src) if reduce is None else base.scatter_add(1, index, src)
            assert got is nd
            assert_same(x, expected)


def test_inplace_scatter_without_a_graph_writes_through_views() -> None:
    """``scatter_``/``scatter_add_`` with nothing recorded write straight into the tensor's memory: through a strided
    view into its base, as a one-hot encoder and a message-passing sum do; the version moves on (a node that saved
    the tensor refuses its backward); a source sharing the tensor's memory reads its old values (the general path)."""
    labels = torch.tensor([3, 0, 2])
    rows = torch.tensor([[0, 1, 0, 2, 1, 0]])
    results = {}
    for lib in (torch, genesis):
        kw = {} if lib is torch else {"device": DEVICE}
        t = (lambda a: a) if lib is torch else to_genesis
        base = lib.zeros(3, 8, dtype=lib.float64, **kw)
        base[:, ::2].scatter_(1, t(labels)[:, None], 1.0)
        msgs = lib.zeros(3, 6, dtype=lib.float64, **kw)
        msgs.scatter_add_(0, t(rows), lib.arange(6, dtype=lib.float64, **kw)[None, :] + 1)
        results[lib] = (base, msgs)
        w = lib.zeros(3, dtype=lib.float64, **kw)
        leaf = lib.ones(3, dtype=lib.float64, requires_grad=True, **kw)
        y = (leaf * w).sum()  # saves w for leaf's gradient
        w.scatter_(0, t(torch.tensor([1])), 5.0)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.backward()
    for g, r in zip(results[genesis], results[torch]):
        assert_same(g, r)
    x = to_genesis(torch.arange(6, dtype=torch.float64).reshape(2, 3))
    x.scatter_add_(1, to_genesis(torch.tensor([[2, 1, 0], [0, 0, 1]])), x)
    assert x.tolist() == [[2.0, 2.0, 2.0], [10.0, 9.0, 5.0]]


def test_inplace_index_add_without_a_graph() -> None:
    """``index_add_`` with nothing recorded adds straight into the tensor: through a strided view into its base,
    with repeated indices and alpha (an integer tensor reads alpha as an integer), the version moving on."""
    index = torch.tensor([2, 0, 2])
    results = []
    for lib in (torch, genesis):
        kw = {} if lib is torch else {"device": DEVICE}
        ix = index if lib is torch else to_genesis(index)
        base = lib.zeros(4, 6, dtype=lib.float64, **kw)
        base[:, ::2].index_add_(0, ix, lib.arange(9, dtype=lib.float64, **kw).reshape(3, 3), alpha=0.5)
        counts = lib.zeros(3, dtype=lib.int64, **kw)
        counts.index_add_(0, ix, lib.ones(3, dtype=lib.int64, **kw), alpha=2.7)
        results.append((base, counts))
        w = lib.zeros(3, dtype=lib.float64, **kw)
        leaf = lib.ones(3, dtype=lib.float64, requires_grad=True, **kw)
        y = (leaf * w).sum()
        w.index_add_(0, ix, lib.ones(3, dtype=lib.float64, **kw))
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.backward()
    for g, t in zip(results[1], results[0]):
        assert_same(g, t)


def test_inplace_masked_fill_without_a_graph() -> None:
    """``masked_fill_`` with nothing recorded writes straight into the tensor: a broadcast mask, a strided view of
    a larger tensor, integer and bool tensors, the version moving on; a mask larger than the tensor is torch's
    error."""
    mask = torch.tensor([[True, False, False, True]])
    for dtype, value in ((torch.float32, float("-inf")), (torch.int64, 7), (torch.bool, True)):
        results = []
        for lib in (torch, genesis):
            kw = {} if lib is torch else {"device": DEVICE}
            m = mask if lib is torch else to_genesis(mask)
            base = lib.zeros(3, 8, dtype=getattr(lib, str(dtype).split(".")[1]), **kw)
            view = base[:, 1::2]  # (3, 4), strided
            view.masked_fill_(m, value)
            results.append(base)
        assert_same(results[1], results[0])
    for lib in (torch, genesis):
        kw = {} if lib is torch else {"device": DEVICE}
        w = lib.zeros(4, dtype=lib.float64, **kw)
        leaf = lib.ones(4, dtype=lib.float64, requires_grad=True, **kw)
        y = (leaf * w).sum()
        w.masked_fill_(w == 0, 2.0)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.backward()
    check_error(RuntimeError, lambda lib, x, m: x.masked_fill_(m, 1.0), torch.zeros(4),
                torch.ones(2, 4, dtype=torch.bool))


def test_fills_take_numpy_scalars_with_and_without_grad() -> None:
    """``masked_fill`` / ``fill_`` of a numpy scalar (a replay buffer's reward): the number it holds, also on a
    tensor that requires grad."""
    for lib in (torch, genesis):
        kw = {} if lib is torch else {"device": DEVICE}
        x = lib.ones(3, **kw)
        assert x.masked_fill(x > 0, np.float32(2.5)).tolist() == [2.5] * 3
        assert lib.ones(3, dtype=lib.int32, **kw).masked_fill(x > 0, np.int64(7)).tolist() == [7] * 3
        leaf = lib.ones(3, requires_grad=True, **kw)
        y = (leaf * 1).masked_fill_(x > 0, np.float64(0.5))
        assert y.tolist() == [0.5] * 3
        y.fill_(np.float32(1.5)).sum().backward()
        assert y.tolist() == [1.5] * 3 and leaf.grad.tolist() == [0.0] * 3
