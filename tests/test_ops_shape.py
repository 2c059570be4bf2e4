"""Shape and view ops against torch: values, gradients, which results share memory, and bad-input errors."""

import numpy as np
import pytest
import torch

import genesis
from tests.helpers import assert_same, check, check_error, rand, to_genesis, to_torch

VIEW_CASES = {
    "reshape": lambda lib, x: x.reshape(4, 6),
    "reshape_infer": lambda lib, x: x.reshape(-1, 3),
    "reshape_fn": lambda lib, x: lib.reshape(x, (2, -1)),
    "view": lambda lib, x: x.view(2, 12),
    "view_tuple": lambda lib, x: x.view((6, -1)),
    "view_as": lambda lib, x: x.view_as(x.new_zeros(24)),
    "flatten": lambda lib, x: x.flatten(),
    "flatten_range": lambda lib, x: lib.flatten(x, 1),
    "flatten_mid": lambda lib, x: x.flatten(0, 1),
    "unflatten": lambda lib, x: x.unflatten(2, (2, 2)),
    "unflatten_infer": lambda lib, x: lib.unflatten(x, -1, (-1, 2)),
    "squeeze": lambda lib, x: x.unsqueeze(0).squeeze(),
    "squeeze_dim": lambda lib, x: x.unsqueeze(1).squeeze(1),
    "squeeze_noop": lambda lib, x: x.squeeze(0),
    "squeeze_tuple": lambda lib, x: x.reshape(1, 2, 1, 3, 4).squeeze((0, 2)),
    "unsqueeze": lambda lib, x: x.unsqueeze(-1),
    "unsqueeze_0": lambda lib, x: lib.unsqueeze(x, 0),
    "permute": lambda lib, x: x.permute(2, 0, 1),
    "permute_neg": lambda lib, x: lib.permute(x, (-1, -3, -2)),
    "transpose": lambda lib, x: x.transpose(0, 2),
    "transpose_fn": lambda lib, x: lib.transpose(x, -1, -2),
    "swapaxes": lambda lib, x: x.swapaxes(0, 1),
    "movedim": lambda lib, x: lib.movedim(x, 0, -1),
    "t": lambda lib, x: x[0].t(),
    "T": lambda lib, x: x.T,
    "mT": lambda lib, x: x.mT,
    "expand": lambda lib, x: x[:, :1].expand(2, 5, 4),
    "expand_new_dims": lambda lib, x: x.expand(2, 2, 3, 4),
    "expand_minus_one": lambda lib, x: x[:1].expand(3, -1, -1),
    "expand_as": lambda lib, x: x[:, :, :1].expand_as(x),
    "broadcast_to": lambda lib, x: lib.broadcast_to(x[:, :1], (3, 2, 3, 4)),
    "contiguous": lambda lib, x: x.mT.contiguous(),
    "narrow": lambda lib, x: x.narrow(1, 1, 2),
    "narrow_neg": lambda lib, x: lib.narrow(x, -1, -3, 2),
    "select": lambda lib, x: x.select(1, -1),
    "diagonal": lambda lib, x: x.diagonal(),
    "diagonal_offset": lambda lib, x: x.diagonal(1, 1, 2),
    "diagonal_neg": lambda lib, x: lib.diagonal(x, -1, -1, 0),
    "unfold": lambda lib, x: x.unfold(2, 2, 1),
    "clone": lambda lib, x: x.mT.clone(),
}


@pytest.mark.parametrize("name", list(VIEW_CASES))
def test_view_ops(name):
    check(VIEW_CASES[name], rand(2, 3, 4, seed=1))


@pytest.mark.parametrize("name", ["reshape", "flatten", "permute", "transpose", "expand_new_dims", "narrow",
                                  "diagonal", "unsqueeze", "squeeze_dim", "mT", "select", "unfold"])
def test_view_ops_share_memory(name):
    """Views write through to their base, as in torch (reshape of a contiguous tensor is a view too)."""
    fn = VIEW_CASES[name]
    t = rand(2, 3, 4, seed=2, requires_grad=False)
    g = to_genesis(t)
    tv, gv = fn(torch, t), fn(genesis, g)
    if tv.numel() == 0:
        return
    index = (0,) * tv.ndim
    tv[index] = 42.0
    gv[index] = 42.0
    assert_same(g, t)
    assert gv.data_ptr() != 0


@pytest.mark.parametrize("name", ["reshape", "flatten", "permute", "transpose", "narrow", "diagonal", "unfold",
                                  "expand", "squeeze", "unflatten"])
def test_view_ops_on_noncontiguous_input(name):
    fn = VIEW_CASES[name]
    check(lambda lib, x: fn(lib, x.permute(1, 2, 0).mT.contiguous().mT.permute(2, 0, 1)), rand(4, 3, 2, seed=3)
          .permute(2, 1, 0).contiguous().detach().requires_grad_())
    check(lambda lib, x: fn(lib, x[:, :, ::2]), rand(2, 3, 8, seed=4))


def test_view_on_noncontiguous_raises():
    check_error(RuntimeError, lambda lib, x: x.mT.view(-1), rand(3, 4), match="view")
    check_error(RuntimeError, lambda lib, x: x[:, 1:3].view(6), rand(3, 4))
    check_error(RuntimeError, lambda lib, x: x.permute(1, 0, 2).view(6, 4), rand(2, 3, 4))
    # Views that torch can make from non-contiguous strides work in Genesis too.
    check(lambda lib, x: x.mT.view(4, 3), rand(3, 4))
    check(lambda lib, x: x[:, :2].view(3, 2, 1), rand(3, 4))
    check(lambda lib, x: x[:, ::2].view(6), rand(3, 4))
    check(lambda lib, x: x.permute(1, 0, 2).view(3, 2, 2, 2), rand(2, 3, 4))
    check(lambda lib, x: x.expand(3, 4).view(3, 2, 2), rand(4))
    check(lambda lib, x: x.mT.reshape(-1), rand(3, 4))


def test_view_shape_arguments():
    # Plain ints take the fast path; numpy integers, a Size and a list still convert; a float is refused.
    check(lambda lib, x: x.view(np.int64(4), 3), rand(2, 6))
    check(lambda lib, x: x.view(x.shape), rand(2, 6))
    check(lambda lib, x: x.view([3, np.int32(4)]), rand(2, 6))
    check_error(TypeError, lambda lib, x: x.view(2.0, 6), rand(2, 6))
    check_error(TypeError, lambda lib, x: x.reshape((2, 6.0)), rand(2, 6))


def test_reshape_errors():
    check_error(RuntimeError, lambda lib, x: x.reshape(5, 5), rand(2, 3, 4), match="24")
    check_error(RuntimeError, lambda lib, x: x.reshape(-1, -1), rand(2, 3))
    check_error(TypeError, lambda lib, x: x.reshape(1.5, 4), rand(2, 3))
    check_error(RuntimeError, lambda lib, x: x.view(7, -1), rand(2, 3))
    check_error(RuntimeError, lambda lib, x: x.unflatten(1, (2, 2)), rand(2, 3))
    check_error(RuntimeError, lambda lib, x: x.flatten(2, 1), rand(2, 3, 4))
    check_error(IndexError, lambda lib, x: x.flatten(0, 3), rand(2, 3, 4))
    check_error(RuntimeError, lambda lib, x: x.permute(0, 0, 1), rand(2, 3, 4))
    check_error(RuntimeError, lambda lib, x: x.permute(0, 1), rand(2, 3, 4))
    check_error(IndexError, lambda lib, x: x.transpose(0, 3), rand(2, 3, 4))
    check_error(IndexError, lambda lib, x: x.unsqueeze(4), rand(2, 3, 4))
    check_error(IndexError, lambda lib, x: x.squeeze(3), rand(2, 3, 4))
    check_error(RuntimeError, lambda lib, x: x.expand(3, 4), rand(2, 4), match="2")
    check_error(RuntimeError, lambda lib, x: x.expand(4), rand(2, 4))
    check_error(RuntimeError, lambda lib, x: x.t(), rand(2, 3, 4))
    check_error(RuntimeError, lambda lib, x: x.narrow(0, 1, 3), rand(2, 3))
    check_error(IndexError, lambda lib, x: x.select(0, 2), rand(2, 3))
    check_error(RuntimeError, lambda lib, x: x.diagonal(0, 1, 1), rand(2, 3))
    check_error(RuntimeError, lambda lib, x: lib.broadcast_to(x, (3, 3)), rand(2, 3))


def test_0d_and_empty_shapes():
    s = rand(seed=5)
    check(lambda lib, x: x.reshape(1, 1), s)
    check(lambda lib, x: x.view(-1), s)
    check(lambda lib, x: x.flatten(), s)
    check(lambda lib, x: x.unsqueeze(0), s)
    check(lambda lib, x: x.squeeze(), s)
    check(lambda lib, x: x.squeeze(0), s)
    check(lambda lib, x: x.expand(2, 3), s)
    check(lambda lib, x: x.t(), s)
    check(lambda lib, x: x.T, s)
    check(lambda lib, x: x.permute(()), s)
    check(lambda lib, x: x.transpose(0, -1), s)
    e = rand(0, 3, seed=6)
    check(lambda lib, x: x.reshape(3, 0), e)
    check(lambda lib, x: x.view(0, 3, 1), e)
    check(lambda lib, x: x.mT.flatten(), e)
    check(lambda lib, x: x.unsqueeze(1).expand(0, 2, 3), e)
    check(lambda lib, x: x.permute(1, 0), e)
    check(lambda lib, x: x.flip(0), e)
    check(lambda lib, x: x.roll(1, 1), e)
    check(lambda lib, x: x.repeat(2, 2), e)


def test_t_and_T_on_1d():
    check(lambda lib, x: x.t(), rand(4, seed=7))
    check(lambda lib, x: x.T, rand(4, seed=7))
    check(lambda lib, x: x.mT, rand(2, 3, 4, seed=7))
    check(lambda lib, x: x.T, rand(2, 3, 4, seed=7))


def test_is_contiguous_matches_torch():
    t = torch.zeros(2, 3, 4)
    g = to_genesis(t)
    for fn in (lambda x: x, lambda x: x.mT, lambda x: x[:, 1:], lambda x: x[:, :, ::2], lambda x: x[0],
               lambda x: x.expand(5, 2, 3, 4), lambda x: x[:, :1], lambda x: x.permute(0, 2, 1).contiguous(),
               lambda x: x.unsqueeze(1), lambda x: x[:, :, :1].squeeze(-1), lambda x: x.reshape(6, 4)[::3]):
        assert fn(g).is_contiguous() == fn(t).is_contiguous()
        assert fn(g).stride() == fn(t).stride()
        assert fn(g).storage_offset() == fn(t).storage_offset()


# ------------------------------------------------------------------ joining and splitting

def test_cat_stack():
    a, b, c = rand(2, 3, seed=8), rand(4, 3, seed=9), rand(2, 5, seed=10)
    check(lambda lib, a, b: lib.cat([a, b]), a, b)
    check(lambda lib, a, b: lib.cat((a, b), dim=0), a, b)
    check(lambda lib, a, c: lib.cat([a, c], 1), a, c)
    check(lambda lib, a, c: lib.cat([a, c.mT.mT, a], -1), a, c)
    check(lambda lib, a: lib.cat([a]), a)
    check(lambda lib, a, e: lib.cat([a, e]), a, rand(0, seed=11))
    check(lambda lib, a, e: lib.cat([a, e], 0), a, rand(0, 3, seed=11))
    check(lambda lib, a, b: lib.cat([a, b]), a, torch.tensor([[1, 2, 3]]))
    check(lambda lib, a, b: lib.cat([a, b]), torch.tensor([[1, 2, 3]], dtype=torch.int8),
          torch.tensor([[True, False, True]]))
    check(lambda lib, a, b: lib.concat([a, b]), a, b)
    check(lambda lib, a, b: lib.stack([a, a * 2]), a, b)
    check(lambda lib, a: lib.stack([a, a.mT.mT], 1), a)
    check(lambda lib, a: lib.stack([a, a], -1), a)
    check(lambda lib, a: lib.stack([a[0, 0], a[1, 1]]), a)
    check(lambda lib, a: lib.hstack([a, a]), a)
    check(lambda lib, a: lib.vstack([a[0], a[1]]), a)


CAT_LAYOUTS = {
    # more inputs than one batched copy takes, along the last, a middle and the first dim
    "six along the last dim": lambda lib, x: lib.cat([x * k for k in range(6)], -1),
    "five along a middle dim": lambda lib, x: lib.cat([x[:, :k + 1] for k in range(5)], 1),
    "along dim 0": lambda lib, x: lib.cat([x, x * 2, x[:1]], 0),
    # slices along the last dim (rows that are not contiguous with each other), as RoPE's rotate_half
    "halves swapped": lambda lib, x: lib.cat([-x[..., 2:], x[..., :2]], -1),
    # a transposed input (copied on its own) between row inputs
    "transposed input": lambda lib, x: lib.cat([x, x.transpose(1, 2).contiguous().transpose(1, 2), x], 2),
    "permuted rows": lambda lib, x: lib.cat([x.permute(1, 0, 2), x.permute(1, 0, 2) * 3], 2),
    "broadcast input": lambda lib, x: lib.cat([x, x[:, :1].expand(2, 3, 4)], 1),
    "size-1 dims": lambda lib, x: lib.cat([x[:1, 1:2], x[1:, :1]], 0),
    "split backward": lambda lib, x: lib.cat([p.reshape(2, 3, 2).exp() for p in x.split(2, dim=2)], 2),
    # RoPE's rotate_half on heads viewed (B, H, T, D) out of a (B, T, H, D) projection: rows in three strided dims
    "halves of transposed heads": lambda lib, x: (lambda q: lib.cat([-q[..., 1:], q[..., :1]], -1))(
        x.reshape(2, 3, 2, 2).transpose(1, 2)),
    "permuted, along a middle dim": lambda lib, x: lib.cat([x.permute(2, 1, 0), x.permute(2, 1, 0)[:, :2]], 1),
}


@pytest.mark.parametrize("name", list(CAT_LAYOUTS))
def test_cat_layouts(name):
    check(CAT_LAYOUTS[name], rand(2, 3, 4, seed=12))


def test_cat_many_strided_lead_dims():
    # four dims before the concatenated one that no two fold together: each input is copied on its own
    x = rand(2, 3, 2, 3, 2, seed=14)
    check(lambda lib, x: lib.cat([x.permute(4, 2, 0, 3, 1), x.permute(4, 2, 0, 3, 1) * 2], -1), x)
    check(lambda lib, x: lib.cat([x.permute(4, 2, 0, 3, 1), x.permute(4, 2, 0, 3, 1)[:, :, :, :, :1]], -1), x)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.int32, torch.bool, torch.complex64, torch.float16])
def test_cat_dtypes(dtype):
    x = (rand(3, 8, seed=13, requires_grad=False) * 5).to(dtype)
    check(lambda lib, x: lib.cat([x, x[:, ::2], x[:, 1:3]], 1), x)
    check(lambda lib, x: lib.cat([x, x.mT.contiguous().mT, x[:2]], 0), x)


def test_cat_stack_errors():
    check_error(RuntimeError, lambda lib, a, b: lib.cat([a, b]), rand(2, 3), rand(2, 4), match="3.*4|4.*3")
    check_error(RuntimeError, lambda lib, a, b: lib.cat([a, b], 1), rand(2, 3), rand(3, 3))
    check_error(RuntimeError, lambda lib, a, b: lib.cat([a, b]), rand(2, 3), rand(3))
    check_error(IndexError, lambda lib, a, b: lib.cat([a, b], 2), rand(2, 3), rand(2, 3))
    check_error(RuntimeError, lambda lib, a: lib.cat([a]), rand())
    check_error(RuntimeError, lambda lib, a, b: lib.stack([a, b]), rand(2, 3), rand(3, 2))
    check_error(IndexError, lambda lib, a: lib.stack([a, a], 3), rand(2, 3))
    check_error(TypeError, lambda lib, a: lib.cat(a), rand(2, 3))


def test_split_chunk_unbind():
    x = rand(7, 4, seed=12)
    check(lambda lib, x: x.split(3), x)
    check(lambda lib, x: lib.split(x, 2, dim=1), x)
    check(lambda lib, x: x.split([1, 4, 2]), x)
    check(lambda lib, x: x.split([0, 4], dim=1), x)
    check(lambda lib, x: x.split(10), x)
    check(lambda lib, x: x.chunk(3), x)
    check(lambda lib, x: x.chunk(2, 1), x)
    check(lambda lib, x: lib.chunk(x, 7), x)
    check(lambda lib, x: x.chunk(3, -1), x)
    check(lambda lib, x: x.mT.chunk(4), x)
    check(lambda lib, x: x.unbind(), x)
    check(lambda lib, x: lib.unbind(x, 1), x)
    check(lambda lib, x: x.unbind(1)[2] * 3, x)  # the other slices' gradients are zeros
    check(lambda lib, x: x.tensor_split(3), x)
    check(lambda lib, x: x.chunk(2), rand(0, 4, seed=13))
    check(lambda lib, x: x.split(2), rand(0, 4, seed=13))
    check(lambda lib, x: x.split(3, 1), rand(2, 0, seed=13))
    check_error(RuntimeError, lambda lib, x: x.split([1, 2]), x)
    check_error(RuntimeError, lambda lib, x: x.chunk(0), x)
    check_error(IndexError, lambda lib, x: x.unbind(2), x)


def test_split_results_are_views():
    t = torch.zeros(6, 2)
    g = to_genesis(t)
    parts_g, parts_t = g.split(2), t.split(2)
    parts_g[1].fill_(3.0)
    parts_t[1].fill_(3.0)
    g.unbind(1)[0].add_(1.0)
    t.unbind(1)[0].add_(1.0)
    assert_same(g, t)


# ------------------------------------------------------------------ repeating and rearranging

def test_repeat_tile_repeat_interleave():
    x = rand(2, 3, seed=14)
    check(lambda lib, x: x.repeat(2, 3), x)
    check(lambda lib, x: x.repeat(2, 1, 2), x)
    check(lambda lib, x: x.repeat(1, 1), x)
    check(lambda lib, x: x.repeat(0, 2), x)
    check(lambda lib, x: x.mT.repeat(2, 2), x)
    check(lambda lib, x: x.tile((2,)), x)
    check(lambda lib, x: lib.tile(x, (2, 1, 3)), x)
    check(lambda lib, x: x.repeat_interleave(2), x)
    check(lambda lib, x: x.repeat_interleave(3, dim=1), x)
    check(lambda lib, x: lib.repeat_interleave(x, 2, 0), x)
    check(lambda lib, x, r: x.repeat_interleave(r, dim=0), x, torch.tensor([1, 3]))
    check(lambda lib, x, r: x.repeat_interleave(r, dim=1), x, torch.tensor([0, 2, 1]))
    check(lambda lib, x, r: x.repeat_interleave(r, dim=1), x, torch.tensor([2]))
    check(lambda lib, r: lib.repeat_interleave(r), torch.tensor([2, 0, 3]))
    check(lambda lib, x: x.repeat(3), rand(seed=15))
    check_error(RuntimeError, lambda lib, x: x.repeat(2), x)
    check_error(RuntimeError, lambda lib, x: x.repeat(-1, 2), x, match="repeat")
    check_error(RuntimeError, lambda lib, x, r: x.repeat_interleave(r, dim=0), x, torch.tensor([1, 2, 3]))


def test_flip_roll():
    x = rand(3, 4, 2, seed=16)
    check(lambda lib, x: x.flip(0), x)
    check(lambda lib, x: x.flip((0, 2)), x)
    check(lambda lib, x: lib.flip(x, [-1, 1]), x)
    check(lambda lib, x: x.mT.flip(1), x)
    check(lambda lib, x: lib.fliplr(x), x)
    check(lambda lib, x: lib.flipud(x), x)
    check(lambda lib, x: x.roll(1), x)
    check(lambda lib, x: x.roll(-5), x)
    check(lambda lib, x: x.roll(2, 1), x)
    check(lambda lib, x: x.roll((1, -1), (0, 2)), x)
    check(lambda lib, x: lib.roll(x, 7, -2), x)
    check(lambda lib, x: x.flip(0), torch.tensor([1, 2, 3]))
    check(lambda lib, x: x.roll(1), torch.tensor([True, False, False]))
    check(lambda lib, x: x.flip(()), x)
    check(lambda lib, x: x.flip(0), rand(seed=17))
    check_error(IndexError, lambda lib, x: x.flip(3), x)
    check_error(RuntimeError, lambda lib, x: x.roll((1, 2), 0), x)


@pytest.mark.parametrize("diagonal", [0, 1, -1, 3, -4])
def test_tril_triu(diagonal):
    x = rand(3, 4, seed=18)
    check(lambda lib, x: x.tril(diagonal), x)
    check(lambda lib, x: lib.triu(x, diagonal), x)
    check(lambda lib, x: x.mT.triu(diagonal), x)
    check(lambda lib, x: lib.tril(x, diagonal), rand(2, 3, 3, seed=19))
    check(lambda lib, x: x.triu(diagonal), torch.tensor([[1, 2], [3, 4]], dtype=torch.int32))
    check(lambda lib, x: x.tril(diagonal), torch.ones(2, 3, dtype=torch.bool))
    check(lambda lib, x: x.triu(diagonal), rand(0, 3, seed=20))


def test_tril_triu_inplace_and_errors():
    check(lambda lib, x: (x * 1).tril_(), rand(3, 3, seed=21))
    check(lambda lib, x: (x * 1).triu_(1), rand(3, 3, seed=21))
    check_error(RuntimeError, lambda lib, x: x.tril(), rand(3))


@pytest.mark.parametrize("offset", [0, 1, -2, 5])
def test_diag_diagonal(offset):
    v, m = rand(3, seed=22), rand(3, 4, seed=23)
    check(lambda lib, v: lib.diag(v, offset), v)
    check(lambda lib, m: lib.diag(m, offset), m)
    check(lambda lib, m: m.diagonal(offset), m)
    check(lambda lib, m: m.mT.diagonal(offset), m)
    check(lambda lib, v: v.diag(offset), torch.tensor([1, 2, 3]))
    check(lambda lib, m: lib.diagonal(m, offset, 0, 2), rand(3, 2, 4, seed=24))
    check(lambda lib, m: lib.diag_embed(m), m)
    check(lambda lib, m: lib.trace(m), m)
    check_error(RuntimeError, lambda lib, x: lib.diag(x), rand(2, 2, 2))


def test_diagonal_is_view():
    t = torch.zeros(3, 3)
    g = to_genesis(t)
    g.diagonal().fill_(1.0)
    t.diagonal().fill_(1.0)
    g.diagonal(1).add_(2.0)
    t.diagonal(1).add_(2.0)
    assert_same(g, t)
    assert torch.equal(to_torch(g), torch.eye(3) + 2 * torch.eye(3).roll(1, 1).triu())


def test_chained_views_gradient():
    def fn(lib, x):
        y = x.permute(2, 0, 1)[1:, ::2].reshape(-1, 2).mT.unsqueeze(0).expand(3, -1, -1)
        return (y * y.flip(-1)).sum(0).diagonal(1)

    check(fn, rand(3, 4, 3, seed=25))


def test_reshape_shares_version_only_when_it_is_a_view():
    """A viewing reshape shares memory with its input; a copying one is independent, also for autograd."""
    def copy_then_modify(lib, x):
        a = x * 1.0
        s = a.sin()  # saves a for backward
        c = a.mT.reshape(-1)  # a copy: strides do not allow a view
        c.add_(1.0)
        return s + c.reshape(4, 3).mT

    check(copy_then_modify, rand(3, 4, seed=40))
    t = torch.zeros(3, 4)
    g = to_genesis(t)
    g.reshape(2, 6)[0, 0] = 1.0
    t.reshape(2, 6)[0, 0] = 1.0
    g.mT.reshape(-1)[0] = 5.0
    t.mT.reshape(-1)[0] = 5.0
    assert_same(g, t)


@pytest.mark.parametrize("indices", [[1, 3], [3, 1], [-2], [0, 7], [], [2, 2], 1, 3, 6], ids=str)
def test_tensor_split(indices):
    check(lambda lib, x: x.tensor_split(indices), rand(5, 2, seed=60))
    check(lambda lib, x: lib.tensor_split(x, indices, dim=1), rand(2, 5, seed=61))


def test_aliases_ravel_moveaxis_swapdims():
    x = rand(2, 3, 4, seed=70)
    check(lambda lib, x: x.ravel(), x)
    check(lambda lib, x: lib.ravel(x.mT), x)
    check(lambda lib, x: lib.moveaxis(x, 0, -1), x)
    check(lambda lib, x: x.moveaxis((0, 1), (1, 2)), x)
    check(lambda lib, x: lib.swapaxes(x, 0, 2), x)
    check(lambda lib, x: x.swapdims(1, -1), x)


@pytest.mark.parametrize("op,args,shape", [("transpose_", (0, 2), (2, 3, 4)), ("swapdims_", (1, 0), (2, 3)),
                                           ("t_", (), (2, 3)), ("squeeze_", (1,), (2, 1, 3)),
                                           ("unsqueeze_", (0,), (2, 3))])
def test_inplace_shape_ops_record_history(op, args, shape):
    """Shape-changing in-place ops on a tensor with history: the gradient flows through the new shape."""
    def f(lib, x):
        y = x * 2
        assert getattr(y, op)(*args) is y
        return y * 3

    check(f, rand(*shape))
    leaf = to_genesis(torch.zeros(shape), requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        getattr(leaf, op)(*args)
    assert tuple(leaf.shape) == shape


def test_split_gradient_reaches_only_used_pieces():
    x = rand(6, 9, seed=13)
    check(lambda lib, x: x.split([2, 3, 4], dim=1)[1] * 2.0, x)
    check(lambda lib, x: [p * (i + 1) for i, p in enumerate(x.chunk(3))][2], x)
    check(lambda lib, x: x.split(3, dim=1)[0].exp() + x.split(3, dim=1)[2], x)


def test_split_pieces_share_the_version_counter():
    # An in-place change to a piece after its base was saved for backward is caught, as in torch.
    for lib in (torch, genesis):
        w = lib.ones(4, 2, requires_grad=True) if lib is torch else genesis.ones(4, 2, requires_grad=True)
        y = w * 1.0
        z = y.exp()  # exp saves its output z; changing z through a piece makes backward fail
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            a, _ = z.split(2)
            with lib.no_grad():
                a.add_(1.0)
            z.sum().backward()


def test_as_strided_views_and_overlapping_gradients():
    x = rand(3, 4, seed=40)
    check(lambda lib, x: x.as_strided((3, 2), (1, 2)), x)
    check(lambda lib, x: lib.as_strided(x, (2, 2), (4, 1), 1), x)
    # sliding windows overlap: their gradients add up, as torch's
    check(lambda lib, v: v.as_strided((3, 3), (1, 1))
          * lib.arange(9.0, dtype=lib.float64, device=v.device).reshape(3, 3), rand(5, seed=41))
    check_error(RuntimeError, lambda lib, x: x.as_strided((3, 2), (1,)), x)


# Ops that torch documents as returning a new tensor, at the arguments where Genesis's view-based construction
# could hand back the input itself or a view of it (a write into the result must not reach the input).
NEW_TENSOR_CASES = {
    "repeat_ones": lambda lib, F, x: x.repeat(1, 1),
    "repeat_size_one_dim": lambda lib, F, x: x[:1].repeat(2, 1),
    "tile_ones": lambda lib, F, x: x.tile((1, 1)),
    "tile_varargs": lambda lib, F, x: x.tile(2, 1),
    "repeat_interleave_one": lambda lib, F, x: x.repeat_interleave(1, 0),
    "roll_zero": lambda lib, F, x: lib.roll(x, 0, 0),
    "roll_full_turn": lambda lib, F, x: lib.roll(x, 2, 0),
    "roll_flat_zero": lambda lib, F, x: lib.roll(x, 0),
    "pad_zero": lambda lib, F, x: F.pad(x, (0, 0)),
    "pad_crop": lambda lib, F, x: F.pad(x, (0, -1)),
    "pad_reflect_zero": lambda lib, F, x: F.pad(x[None], (0, 0), mode="reflect")[0],
    "pixel_shuffle_one": lambda lib, F, x: F.pixel_shuffle(x[None], 1)[0],
    "pixel_unshuffle_one": lambda lib, F, x: F.pixel_unshuffle(x[None], 1)[0],
    "channel_shuffle_one": lambda lib, F, x: F.channel_shuffle(x[None], 1)[0],
}


@pytest.mark.parametrize("case", sorted(NEW_TENSOR_CASES))
def test_copying_ops_never_return_a_view_of_their_input(case):
    fn = NEW_TENSOR_CASES[case]
    t = torch.arange(6.0, dtype=torch.float64).reshape(2, 3)
    g = to_genesis(t, requires_grad=False)
    want, got = fn(torch, torch.nn.functional, t.clone()), fn(genesis, genesis.nn.functional, g)
    assert_same(got, want, what=case)
    got[(0,) * got.ndim] = 100.0
    assert_same(g, t, what=f"{case}: the input after writing into the result")


def test_flip_takes_dims_as_varargs_or_keyword():
    x = rand(2, 3, 4, seed=14)
    check(lambda lib, x: x.flip(0, 2), x)
    check(lambda lib, x: x.flip(dims=(1,)), x)
    check(lambda lib, x: lib.flip(x, dims=[0, 1]), x)
    check(lambda lib, x: lib.flip(x, [2]), x)


def test_repeat_interleave_output_size():
    kv = rand(1, 2, 3, seed=15)
    check(lambda lib, x: x.repeat_interleave(2, dim=1, output_size=4), kv)
    check(lambda lib, x: lib.repeat_interleave(x, lib.tensor([1, 3], device=x.device), dim=1, output_size=4), kv)
    check_error(RuntimeError, lambda lib, x: x.repeat_interleave(2, dim=1, output_size=5), kv)


def test_shape_ops_take_torch_keyword_names():
    x = rand(2, 3, 4, seed=16)
    check(lambda lib, x: x.split(split_size=2, dim=2), x)
    check(lambda lib, x: x.split(split_size=[1, 2], dim=1), x)
    check(lambda lib, x: lib.split(x, split_size_or_sections=[1, 1]), x)
    check(lambda lib, x: x.reshape(shape=(4, -1)), x)
    check(lambda lib, x: lib.reshape(x, shape=[6, 4]), x)
    check(lambda lib, x: x.view(size=(6, 4)), x)
    check(lambda lib, x: x.permute(dims=(2, 0, 1)), x)
    check(lambda lib, x: lib.permute(x, dims=[1, 2, 0]), x)
    # Both forms at once, a keyword that is no sequence, and the function's name on the method: TypeError, as torch.
    check_error(TypeError, lambda lib, x: x.split(2, split_size=2), x)
    check_error(TypeError, lambda lib, x: x.split(split_size_or_sections=2), x)
    check_error(TypeError, lambda lib, x: x.reshape(4, 6, shape=(4, 6)), x)
    check_error(TypeError, lambda lib, x: x.reshape(shape=24), x)
    check_error(TypeError, lambda lib, x: x.view(6, 4, size=(6, 4)), x)
    check_error(TypeError, lambda lib, x: x.view(size=(24,), dtype=lib.float64), x)
    check_error(TypeError, lambda lib, x: x.permute(2, dims=(2, 0, 1)), x)
    check_error(TypeError, lambda lib, x: x.permute(dims=0), x)
    check_error(TypeError, lambda lib, x: x.flip(dims=0), x)


@pytest.mark.parametrize("shape, perm", [
    ((35, 4, 3, 2, 10), (2, 1, 3, 0, 4)),      # an attention projection (T, B, 3, H, D) to (3, B, H, T, D)
    ((3, 2, 4, 5, 6, 7), (5, 3, 1, 0, 2, 4)),  # rank 6, the innermost dim moved
    ((2, 1, 9, 3, 1, 4), (3, 0, 2, 5, 1, 4)),  # size-1 dims among them
])
def test_high_rank_permuted_copies(shape, perm):
    # Copies of rank 5 and more run as several rank-4 launches on CUDA; every element must land once, forward and
    # backward (the gradient of a reshape of the permuted tensor is such a copy too).
    check(lambda lib, x: x.permute(*perm).contiguous(), rand(*shape, seed=3))
    check(lambda lib, x: x.permute(*perm).reshape(-1, shape[-1]) * 2, rand(*shape, seed=4))
    check(lambda lib, x: x.permute(*perm) + x.permute(*perm).flip(0), rand(*shape, seed=5))
