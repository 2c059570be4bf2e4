"""Ops on sparse COO and CSR tensors on the test device, compared with torch on the CPU: transposes, products and
quotients, the zero-preserving unary ops, casts and moves, sums, index_select, sparse softmax, addmm, sparse @ sparse
and CSR matrices.

Each op is checked for its values, layout, dtype, the coalesced flag and nnz (``assert_same_sparse``), and for the
gradients of the values it was built from where torch has them; where torch's sparse kernel has no backward, the
gradient is compared with torch's on the strided equivalent of the op.
"""

from __future__ import annotations

import math

import pytest
import torch

import genesis
from genesis.ops.sparse import COALESCING_UNARY_OPS, SUPPORTED, SparseTensor
from genesis.ops.sparse_csr import SUPPORTED_CSR, SparseCsrTensor
from tests.helpers import DEVICE, assert_same, check, check_error, rand, to_genesis
from tests.test_sparse import INDICES, assert_same_sparse, coo, on_test_device  # noqa: F401 (an autouse fixture)

pytestmark = pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta state")

# Another pattern of the same size: (0, 2) twice again, (2, 3) and (1, 0).
OTHER = [[0, 0, 2, 1], [2, 2, 3, 0]]


def run_both(fn, *inputs):
    """``fn(lib, *inputs)`` in Genesis and torch, on copies of the torch ``inputs`` (no gradients)."""
    g = fn(genesis, *[to_genesis(x, requires_grad=False) if isinstance(x, torch.Tensor) else x for x in inputs])
    t = fn(torch, *[x.detach() if isinstance(x, torch.Tensor) else x for x in inputs])
    return g, t


def check_sparse(fn, *inputs, grad: bool = True, analog=None, nnz: bool = True) -> None:
    """``fn(lib, *inputs)`` gives torch's sparse (or strided) result (``nnz``: with as many stored entries), and, with
    ``grad``, the same gradients of the inputs through the result's strided form, torch's from
    ``analog(torch, *inputs)`` where its sparse kernel has no backward (torch's sparse gradients of strided inputs
    are compared densified)."""
    g, t = run_both(fn, *inputs)
    if t.layout is torch.sparse_coo:
        assert_same_sparse(g, t, nnz=nnz)
    else:
        assert_same(g, t)
    if not grad:
        return
    g_in = [to_genesis(x) if isinstance(x, torch.Tensor) else x for x in inputs]
    t_in = [x.detach().clone().requires_grad_(x.requires_grad) if isinstance(x, torch.Tensor) else x for x in inputs]
    g_out, t_out = to_dense(fn(genesis, *g_in)), to_dense((analog or fn)(torch, *t_in))
    weight = torch.randn(t_out.shape, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    # On the result's device: an op may move it (``.cpu()``).
    (g_out * to_genesis(weight.to(t_out.dtype), requires_grad=False, device=str(g_out.device))).sum().backward()
    (t_out * weight.to(t_out.dtype)).sum().backward()
    for k, (gx, tx) in enumerate(zip(g_in, t_in)):
        if not isinstance(tx, torch.Tensor) or not tx.requires_grad:
            continue
        if tx.grad is None:
            assert gx.grad is None or not gx.grad.any().item(), f"grad of input {k}: torch has none"
        else:
            assert_same(gx.grad, to_dense(tx.grad), what=f"grad of input {k}")


def to_dense(x):
    return x.to_dense() if x.layout is not torch.strided and x.layout is not genesis.strided else x


def coalesced(lib, v, indices=INDICES, size=(3, 4)):
    return coo(lib, v, indices, size).coalesce()


# ---------------------------------------------------------------- structure
@pytest.mark.parametrize("make", [coo, coalesced])
@pytest.mark.parametrize("op", [lambda s: s.t(), lambda s: s.T, lambda s: s.mT, lambda s: s.transpose(0, 1),
                                lambda s: s.transpose(-1, -2), lambda s: s.transpose(1, 1), lambda s: s.swapaxes(0, 1),
                                lambda s: s.t().t()])
def test_transposes(make, op) -> None:
    check_sparse(lambda lib, v: op(make(lib, v)), rand(5))


def test_transpose_of_three_sparse_dims_and_small_tensors() -> None:
    idx = [[0, 1, 1], [1, 2, 0], [2, 0, 3]]
    check_sparse(lambda lib, v: coo(lib, v, idx, (2, 3, 4)).transpose(0, 2), rand(3))
    check_sparse(lambda lib, v: coo(lib, v, [[1]], (3, 2)).coalesce().transpose(0, 0), rand(1, 2))
    check_sparse(lambda lib, v: coo(lib, v, [[1], [2]], (3, 4)).t(), rand(1))  # one entry: not marked coalesced
    check_sparse(lambda lib, v: coo(lib, v, [[0, 2]], (3,)).coalesce().t(), rand(2))  # 1-D: as it is
    empty = lambda lib: lib.sparse_coo_tensor(lib.zeros(2, 0, dtype=lib.int64), lib.zeros(0), (3, 4))  # noqa: E731
    g, t = empty(genesis).t(), empty(torch).t()
    assert_same_sparse(g, t)


def test_transpose_errors() -> None:
    v = rand(5, 2)
    check_error(RuntimeError, lambda lib, v: coo(lib, v, size=(3, 4, 2)).t(), v, match="expects a tensor with <= 2")
    check_error(RuntimeError, lambda lib, v: coo(lib, v, size=(3, 4, 2)).transpose(1, 2), v,
                match="transposed dimensions must be sparse")
    check_error(IndexError, lambda lib, v: coo(lib, v, size=(3, 4, 2)).transpose(0, 5), v)


# ---------------------------------------------------------------- products and quotients by numbers and strided
@pytest.mark.parametrize("make", [coo, coalesced])
@pytest.mark.parametrize("op", [lambda lib, s: s * 2.5, lambda lib, s: 2 * s, lambda lib, s: s.mul(-3),
                                lambda lib, s: s * lib.tensor(3.0, dtype=lib.float64), lambda lib, s: s / 4,
                                lambda lib, s: s.div(lib.tensor(2.0)), lambda lib, s: -s, lambda lib, s: s.neg(),
                                lambda lib, s: s.multiply(2), lambda lib, s: s.true_divide(2), lambda lib, s: +s])
def test_scalar_products_and_quotients(make, op) -> None:
    check_sparse(lambda lib, v: op(lib, make(lib, v)), rand(5))


@pytest.mark.parametrize("make", [coo, coalesced])
@pytest.mark.parametrize("op", [lambda s: s // 0.25, lambda s: s.floor_divide(0.5),
                                lambda s: s.div(0.3, rounding_mode="trunc")])
def test_rounded_quotients_coalesce(make, op) -> None:
    check_sparse(lambda lib, v: op(make(lib, v)), rand(5), grad=False)


@pytest.mark.parametrize("op", [lambda s: s * 2.5, lambda s: s / 2, lambda s: s * True, lambda s: s // 2,
                                lambda s: s.float() * 2])
def test_scalar_products_promote_as_torch(op) -> None:
    check_sparse(lambda lib, v: op(coo(lib, v)), torch.tensor([1, -2, 3, 4, -5]), grad=False)


@pytest.mark.parametrize("make", [coo, coalesced])
@pytest.mark.parametrize("op", [lambda s, d: s * d, lambda s, d: d * s, lambda s, d: s.mul(d[1]),
                                lambda s, d: s * d[:, :1]])
def test_products_with_strided(make, op) -> None:
    # torch's sparse * strided has no backward where the strided operand broadcasts: the strided product's.
    check_sparse(lambda lib, v, d: op(make(lib, v), d), rand(5), rand(3, 4, seed=1),
                 analog=lambda lib, v, d: op(make(lib, v).to_dense(), d))


def test_hybrid_product_with_strided() -> None:
    check_sparse(lambda lib, v, d: coo(lib, v, size=(3, 4, 2)) * d, rand(5, 2), rand(3, 4, 2, seed=1))


def test_quotient_and_power_errors() -> None:
    v, d = rand(5), rand(3, 4)
    check_error(RuntimeError, lambda lib, v, d: coo(lib, v) / d, v, d, match="scalar or zero-dim dense tensor")
    check_error(RuntimeError, lambda lib, v: coo(lib, v) / coo(lib, v), v, match="scalar or zero-dim dense tensor")
    check_error(RuntimeError, lambda lib, v: coo(lib, v).pow(0), v, match="zeroth power")
    check_error(NotImplementedError, lambda lib, v: coo(lib, v).pow(lib.tensor(2.0)), v, match="tensor exponent")
    check_error(RuntimeError, lambda lib, v: coo(lib, v) * coo(lib, v, size=(3, 5)), v, match="equal dimensionality")


# ---------------------------------------------------------------- sparse * sparse (torch's intersection kernel)
@pytest.mark.parametrize("first", [coo, coalesced])
@pytest.mark.parametrize("second", [coo, coalesced])
def test_sparse_products(first, second) -> None:
    check_sparse(lambda lib, v, w: first(lib, v) * second(lib, w, OTHER), rand(5), rand(4, seed=1))
    check_sparse(lambda lib, v, w: second(lib, w, OTHER).mul(first(lib, v)), rand(5), rand(4, seed=1))
    check_sparse(lambda lib, v: first(lib, v) * second(lib, v), rand(5))


def test_sparse_products_with_hybrid_values_dtypes_and_empty_operands() -> None:
    check_sparse(lambda lib, v, w: coalesced(lib, v, size=(3, 4, 2)) * coalesced(lib, w, OTHER, (3, 4, 2)),
                 rand(5, 2), rand(4, 2, seed=1))
    check_sparse(lambda lib, v, w: coo(lib, v) * coo(lib, w.float(), OTHER), rand(5), rand(4, seed=1), grad=False)
    check_sparse(lambda lib, v, d: coo(lib, v.float()) * d, rand(5), rand(3, 4, seed=1), grad=False)

    def empty(lib, v):
        return lib.sparse_coo_tensor(lib.zeros(2, 0, dtype=lib.int64), v[:0], (3, 4))

    check_sparse(lambda lib, v: coo(lib, v) * empty(lib, v), rand(5), grad=False)
    check_sparse(lambda lib, v: empty(lib, v) * coalesced(lib, v), rand(5), grad=False)


# ---------------------------------------------------------------- sums and differences
@pytest.mark.parametrize("op, nnz", [(lambda lib, s, w: s - w, False), (lambda lib, s, w: s.sub(w, alpha=2), False),
                                     (lambda lib, s, w: s.add(w, alpha=0.5), False),
                                     (lambda lib, s, w: s - s * 2, True),
                                     (lambda lib, s, w: s.coalesce() - w.coalesce(), True),
                                     (lambda lib, s, w: s.coalesce() + s.coalesce(), True),
                                     (lambda lib, s, w: lib.ones(3, 4, dtype=lib.float64) - s, True)])
def test_sums_and_differences(op, nnz) -> None:
    # torch merges some duplicates when it adds uncoalesced tensors: their nnz is an accident of its kernel.
    check_sparse(lambda lib, v, w: op(lib, coo(lib, v), coo(lib, w, OTHER)), rand(5), rand(4, seed=1), nnz=nnz)


# ---------------------------------------------------------------- zero-preserving unary ops
@pytest.mark.parametrize("name", COALESCING_UNARY_OPS)
def test_unary_ops_coalesce_and_apply_to_values(name) -> None:
    v = rand(5, low=-0.4, high=0.4)  # duplicates add up to (-0.8, 0.8): inside every op's domain
    check_sparse(lambda lib, v: getattr(coo(lib, v), name)(), v, grad=False)
    if v.is_floating_point() and not getattr(torch, name)(torch.zeros(1)).dtype == torch.bool:
        # The gradient of the values, as torch's of the same op on the coalesced values.
        check(lambda lib, v: getattr(coo(lib, v), name)().values() if lib is genesis else
              getattr(coo(lib, v).coalesce().values(), name)(), v)


@pytest.mark.parametrize("op", [lambda s: s.abs(), lambda s: s.pow(2), lambda s: s ** 3, lambda s: s.pow(-1.0),
                                lambda s: s.relu(), lambda s: s.square(), lambda s: s.nan_to_num(0.5)])
def test_unary_ops_with_torch_gradients(op) -> None:
    check_sparse(lambda lib, v: op(coo(lib, v)), rand(5), analog=lambda lib, v: op(coo(lib, v).to_dense()))


def test_nan_results_and_bool_results() -> None:
    g, t = run_both(lambda lib, v: coo(lib, v).sqrt(), rand(5))
    assert_same(g.values(), t.values())
    assert g.is_coalesced() and g._nnz() == t._nnz() == 4
    check_sparse(lambda lib, v: coo(lib, v).sqrt().isnan(), rand(5), grad=False)


# ---------------------------------------------------------------- casts and devices
@pytest.mark.parametrize("make", [coo, coalesced])
@pytest.mark.parametrize("op", [lambda lib, s: s.float(), lambda lib, s: s.double(), lambda lib, s: s.half(),
                                lambda lib, s: s.to(lib.float32), lambda lib, s: s.to(dtype=lib.float32),
                                lambda lib, s: s.to("cpu", lib.float32), lambda lib, s: s.to(lib.float64, copy=True),
                                lambda lib, s: s.cpu()])
def test_casts(make, op) -> None:
    check_sparse(lambda lib, v: op(lib, make(lib, v)), rand(5))


def test_casts_to_integers_and_identity() -> None:
    check_sparse(lambda lib, v: coo(lib, v * 4).long(), rand(5), grad=False)
    check_sparse(lambda lib, v: coo(lib, v).bool(), rand(5), grad=False)
    check_sparse(lambda lib, v: coo(lib, v * 4).int(), rand(5), grad=False)
    s = coalesced(genesis, to_genesis(rand(5, requires_grad=False)))
    assert s.to(genesis.float64) is s and s.double() is s and s.to(DEVICE) is s and s.to(s.device, s.dtype) is s
    assert (s.cpu() is s) == (DEVICE == "cpu")
    copy = s.to(genesis.float64, copy=True)
    assert copy is not s and copy._values() is not s._values() and copy.is_coalesced()


# ---------------------------------------------------------------- sums
@pytest.mark.parametrize("op", [lambda lib, s: s.sum(), lambda lib, s: s.sum(0), lambda lib, s: s.sum(-1),
                                lambda lib, s: s.sum((0, 1)), lambda lib, s: s.sum(1, keepdim=True),
                                lambda lib, s: s.sum((0, 1), keepdim=True), lambda lib, s: s.sum(dtype=lib.float32)])
@pytest.mark.parametrize("make", [coo, coalesced])
def test_tensor_sum(op, make) -> None:
    # torch's Tensor.sum over dims of a sparse tensor has no backward: the strided sum's gradient.
    check_sparse(lambda lib, v: op(lib, make(lib, v)), rand(5), analog=lambda lib, v: op(lib, make(lib, v).to_dense()))


def test_sum_over_no_dims_coalesces() -> None:
    check_sparse(lambda lib, v: coo(lib, v).sum(()), rand(5), analog=lambda lib, v: coo(lib, v).to_dense())
    check_sparse(lambda lib, v: lib.sparse.sum(coo(lib, v), ()), rand(5))


@pytest.mark.parametrize("dim", [0, 2, (0, 2), (0, 1), (0, 1, 2), -1])
def test_hybrid_sums(dim) -> None:
    check_sparse(lambda lib, h: coo(lib, h, size=(3, 4, 2)).sum(dim), rand(5, 2),
                 analog=lambda lib, h: coo(lib, h, size=(3, 4, 2)).to_dense().sum(dim))
    check_sparse(lambda lib, h: lib.sparse.sum(coo(lib, h, size=(3, 4, 2)), dim), rand(5, 2))


def test_hybrid_sum_keepdim() -> None:
    check_sparse(lambda lib, h: coo(lib, h, size=(3, 4, 2)).sum(0, keepdim=True), rand(5, 2),
                 analog=lambda lib, h: coo(lib, h, size=(3, 4, 2)).to_dense().sum(0, keepdim=True))
    # torch turns a kept dense dim into a sparse one; Genesis keeps it dense: the strided results agree.
    g, t = run_both(lambda lib, h: coo(lib, h, size=(3, 4, 2)).sum(2, keepdim=True), rand(5, 2))
    assert_same(g.to_dense(), t.to_dense())
    check(lambda lib, h: coo(lib, h, size=(3, 4, 2)).sum(2, keepdim=True).to_dense() if lib is genesis else
          coo(lib, h, size=(3, 4, 2)).to_dense().sum(2, keepdim=True), rand(5, 2))


@pytest.mark.parametrize("op", [lambda lib, s: s.sum(), lambda lib, s: s.sum(0), lambda lib, s: s.bool().sum(),
                                lambda lib, s: s.bool().sum(1), lambda lib, s: lib.sparse.sum(s),
                                lambda lib, s: lib.sparse.sum(s, 0), lambda lib, s: lib.sparse.sum(s.bool(), 0),
                                lambda lib, s: lib.sparse.sum(s, 0, dtype=lib.float64)])
def test_integer_sums(op) -> None:
    check_sparse(lambda lib, v: op(lib, coo(lib, v)), torch.tensor([1, -2, 3, 4, -5]), grad=False)


def test_sum_errors() -> None:
    check_error(RuntimeError, lambda lib, v: lib.sparse.sum(coo(lib, v), (0, 0)), rand(5), match="multiple times")
    check_error(IndexError, lambda lib, v: lib.sparse.sum(coo(lib, v), 2), rand(5))
    check_error(IndexError, lambda lib, v: coo(lib, v).sum(-3), rand(5))


def test_leaf_gradient_of_a_full_sum() -> None:
    """torch gives a sparse leaf a strided gradient for ``sum()``; Genesis's is sparse over the pattern (the same
    numbers there)."""
    v = rand(5, requires_grad=False)
    g, t = coo(genesis, to_genesis(v), requires_grad=True), coo(torch, v, requires_grad=True)
    (g.sum() * 3).backward()
    (t.sum() * 3).backward()
    mask = coo(torch, torch.ones(5, dtype=torch.float64)).coalesce().to_dense() != 0
    assert_same(g.grad.to_dense(), t.grad * mask)


# ---------------------------------------------------------------- index_select
@pytest.mark.parametrize("make", [coo, coalesced])
@pytest.mark.parametrize("dim, index", [(0, [2, 0, 0]), (1, [2, 1]), (-1, [3, 3, 0, 2]), (0, [-1]), (1, []),
                                        (0, [1])])
def test_index_select(make, dim, index) -> None:
    idx = torch.tensor(index, dtype=torch.int64)
    # torch's sparse index_select has no backward: the gradient of the strided equivalent.
    check_sparse(lambda lib, v: make(lib, v).index_select(dim, lib.tensor(idx.numpy())), rand(5),
                 analog=lambda lib, v: make(lib, v).to_dense().index_select(dim, idx % (3, 4)[dim]))


def test_index_select_over_a_dense_dim_and_errors() -> None:
    idx = torch.tensor([1, 1, 0])
    check_sparse(lambda lib, h: coo(lib, h, size=(3, 4, 2)).index_select(2, lib.tensor(idx.numpy())), rand(5, 2),
                 grad=False)
    v = rand(5)
    check_error(IndexError, lambda lib, v: coo(lib, v).index_select(0, lib.tensor([3])), v, match="contains 3")
    check_error(IndexError, lambda lib, v: coo(lib, v).index_select(0, lib.tensor([-4])), v, match="out of range")
    check_error(IndexError, lambda lib, v: coo(lib, v).index_select(0, lib.tensor([[0]])), v, match="1-D")
    check_error(IndexError, lambda lib, v: coo(lib, v).index_select(0, lib.tensor([0], dtype=lib.int32)), v,
                match="long-tensor")
    check_error(IndexError, lambda lib, v: coo(lib, v).index_select(2, lib.tensor([0])), v)


# ---------------------------------------------------------------- unsqueeze, select, indexing, narrow_copy, permute
def _narrow(s, dim, start, length):
    """``narrow_copy`` of a sparse tensor; for the strided analog, ``narrow`` (the same values and gradients: torch
    2.11's strided ``narrow_copy`` has no derivative)."""
    return s.narrow_copy(dim, start, length) if s.is_sparse else s.narrow(dim, start, length)


SHAPE_OPS = [lambda s: s.unsqueeze(0), lambda s: s.unsqueeze(1), lambda s: s.unsqueeze(-1),
             lambda s: s.select(0, 1), lambda s: s.select(1, -2), lambda s: s.select(1, 3),
             lambda s: _narrow(s, 0, 1, 2), lambda s: _narrow(s, 1, 2, 0), lambda s: _narrow(s, 1, 0, 4),
             lambda s: s.permute(1, 0), lambda s: s.permute((0, 1)), lambda s: s.permute(-2, -1),
             lambda s: s[1], lambda s: s[:, 2], lambda s: s[None, -1, None], lambda s: s[..., 0],
             lambda s: s[0, 2], lambda s: s[2, 1, ...], lambda s: s[1][0]]


@pytest.mark.parametrize("make", [coo, coalesced])
@pytest.mark.parametrize("op", SHAPE_OPS)
def test_shape_ops(make, op) -> None:
    # Entries, coalesced marks and results as torch's kernels; the gradients of the strided equivalents.
    check_sparse(lambda lib, v: op(make(lib, v)), rand(5), analog=lambda lib, v: op(make(lib, v).to_dense()))


@pytest.mark.parametrize("op", [lambda s: s.select(2, 1), lambda s: s.unsqueeze(2), lambda s: s.unsqueeze(3),
                                lambda s: _narrow(s, 2, 1, 1), lambda s: s.permute(1, 0, 2), lambda s: s[1],
                                lambda s: s[1, 2], lambda s: s[0, 2, 1], lambda s: s[:, :, 0]])
def test_shape_ops_of_hybrid_tensors(op) -> None:
    check_sparse(lambda lib, h: op(coo(lib, h, size=(3, 4, 2))), rand(5, 2),
                 analog=lambda lib, h: op(coo(lib, h, size=(3, 4, 2)).to_dense()))


@pytest.mark.parametrize("make, op", [(coo, lambda s: s.permute(0, 2, 1)), (coalesced, lambda s: s.permute(0, 2, 1)),
                                      (coalesced, lambda s: s.permute(2, 0, 1)), (coo, lambda s: s.select(1, 2)),
                                      (coalesced, lambda s: s.select(0, 0)),
                                      (coalesced, lambda s: _narrow(s, 2, 1, 3))])
def test_shape_ops_of_three_sparse_dims(make, op) -> None:
    three = [[0, 1, 1, 0], [2, 0, 2, 2], [1, 3, 0, 1]]
    check_sparse(lambda lib, v: op(make(lib, v, three, (2, 3, 4))), rand(4),
                 analog=lambda lib, v: op(make(lib, v, three, (2, 3, 4)).to_dense()))


@pytest.mark.parametrize("index", [0, 1, 2])  # a repeated entry (summed), a missing one (zeros), a single one
def test_select_of_the_only_sparse_dim_is_strided(index) -> None:
    check_sparse(lambda lib, v: coo(lib, v, [[0, 2, 0]], (3, 2)).select(0, index), rand(3, 2), grad=False)
    g, t = run_both(lambda lib, v: coo(lib, v, [[0, 0]], (2,)).select(0, 0), torch.tensor([3, 4], dtype=torch.int8))
    assert_same(g, t)  # the sum keeps the values' dtype
    check_sparse(lambda lib, v: coo(lib, v, [[1], [2]], (3, 4)).unsqueeze(0), rand(1), grad=False)  # coalesced


def test_shape_op_errors() -> None:
    v, h = rand(5, requires_grad=False), rand(5, 2, requires_grad=False)
    check_error(IndexError, lambda lib, v: coo(lib, v).select(0, 3), v, match=r"select\(\): index 3 out of range")
    check_error(IndexError, lambda lib, v: coo(lib, v).select(2, 0), v)
    check_error(IndexError, lambda lib, v: coo(lib, v)[-4], v, match="out of bounds for dimension 0 with size 3")
    check_error(IndexError, lambda lib, v: coo(lib, v)[0, 0, 0], v, match="too many indices")
    check_error(IndexError, lambda lib, v: coo(lib, v)[1.0], v, match="only integers")
    check_error(NotImplementedError, lambda lib, v: coo(lib, v)[0:2], v)
    check_error(NotImplementedError, lambda lib, v: coo(lib, v)[[0, 1]], v)
    check_error(IndexError, lambda lib, v: coo(lib, v).unsqueeze(3), v)
    check_error(RuntimeError, lambda lib, v: coo(lib, v).narrow_copy(0, 2, 2), v, match="Invalid range to narrow")
    check_error(RuntimeError, lambda lib, v: coo(lib, v).narrow_copy(0, -1, 1), v, match="Invalid range to narrow")
    check_error(RuntimeError, lambda lib, v: coo(lib, v).narrow_copy(-1, 0, 1), v, match="Dimension -1 out of range")
    check_error(RuntimeError, lambda lib, v: coo(lib, v).narrow_copy(0, 0, -1), v, match="must be non-negative")
    check_error(RuntimeError, lambda lib, v: coo(lib, v).permute(0, 0), v, match="duplicate dims")
    check_error(RuntimeError, lambda lib, v: coo(lib, v).permute(1), v, match="does not match the length")
    check_error(RuntimeError, lambda lib, h: coo(lib, h, size=(3, 4, 2)).permute(2, 1, 0), h,
                match="transpositions between sparse and dense dimensions")


# ---------------------------------------------------------------- softmax and log_softmax
@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("make", [coo, coalesced])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmax(name, make, dim) -> None:
    # torch's backward of a sparse softmax over a negative dim is wrong (the gradients of a slice do not sum to
    # zero): the gradient of the same dim counted from the front.
    check_sparse(lambda lib, v: getattr(lib.sparse, name)(make(lib, v * 3), dim), rand(5),
                 analog=lambda lib, v: getattr(lib.sparse, name)(make(lib, v * 3), dim % 2))


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("dim", [0, 1, 2])
def test_softmax_of_hybrid_tensors(name, dim) -> None:
    check_sparse(lambda lib, h: getattr(lib.sparse, name)(coo(lib, h, size=(3, 4, 2)), dim), rand(5, 2))


def test_softmax_dtype_and_errors() -> None:
    check_sparse(lambda lib, v: lib.sparse.softmax(coo(lib, v), 1, dtype=lib.float32), rand(5))
    check_sparse(lambda lib, v: lib.sparse.log_softmax(coo(lib, v.float()), 0, dtype=lib.float64), rand(5))
    check_error(IndexError, lambda lib, v: lib.sparse.softmax(coo(lib, v), 2), rand(5))
    check_error(NotImplementedError, lambda lib, v: lib.sparse.softmax(coo(lib, v).long(), 1), rand(5))
    check_error(NotImplementedError, lambda lib, v: lib.sparse.softmax(coo(lib, v).half(), 1), rand(5))
    check_error(NotImplementedError, lambda lib, v: lib.sparse.softmax(v.reshape(5, 1), 1), rand(5))


def test_gnn_attention_with_a_sparse_leaf() -> None:
    """Edge scores normalized per node with sparse.softmax, then aggregated: the leaf's sparse gradient as torch's."""
    v, x = rand(5, requires_grad=False), rand(4, 3, seed=1)
    g, t = coo(genesis, to_genesis(v), requires_grad=True), coo(torch, v, requires_grad=True)
    gx, tx = to_genesis(x), x.detach().clone().requires_grad_(True)
    genesis.sparse.mm(genesis.sparse.softmax(g * 2, 1), gx).tanh().sum().backward()
    torch.sparse.mm(torch.sparse.softmax(t * 2, 1), tx).tanh().sum().backward()
    assert_same_sparse(g.grad, t.grad, flags=False)
    assert_same(gx.grad, tx.grad)


# ---------------------------------------------------------------- addmm and sparse @ sparse
@pytest.mark.parametrize("make", [coo, coalesced])
@pytest.mark.parametrize("beta, alpha", [(1, 1), (0.5, 2), (2, -1)])
def test_sparse_addmm(make, beta, alpha) -> None:
    check(lambda lib, m, v, d: lib.sparse.addmm(m, make(lib, v), d, beta=beta, alpha=alpha), rand(3, 2), rand(5),
          rand(4, 2, seed=1))
    check(lambda lib, m, v, d: lib.addmm(m, make(lib, v), d, beta=beta, alpha=alpha), rand(3, 2), rand(5),
          rand(4, 2, seed=1))


def test_sparse_addmm_broadcasts_ignores_nan_at_beta_zero_and_raises_as_torch() -> None:
    check(lambda lib, m, v, d: lib.sparse.addmm(m, coo(lib, v), d), rand(2), rand(5), rand(4, 2, seed=1))
    check(lambda lib, v, d: lib.sparse.addmm(lib.full((3, 2), math.nan, dtype=lib.float64), coo(lib, v), d, beta=0),
          rand(5), rand(4, 2, seed=1))
    v, d = rand(5), rand(4, 2)
    check_error(RuntimeError, lambda lib, v, d: lib.sparse.addmm(lib.ones(3, 2), coo(lib, v), d), v, d,
                match="expected scalar type")
    check_error(RuntimeError, lambda lib, v, d: lib.sparse.addmm(lib.ones(2, 2, dtype=lib.float64), coo(lib, v), d),
                v, d)
    check_error(RuntimeError, lambda lib, v: lib.sparse.addmm(coo(lib, v), coo(lib, v),
                                                              lib.ones(4, 4, dtype=lib.float64)), v)


@pytest.mark.parametrize("make", [coo, coalesced])
@pytest.mark.parametrize("op", [lambda lib, a, b: lib.sparse.mm(a, b), lambda lib, a, b: a @ b,
                                lambda lib, a, b: lib.mm(a, b), lambda lib, a, b: lib.sparse.mm(a, a.t())])
def test_sparse_times_sparse(make, op) -> None:
    b_idx = [[0, 2, 3, 2], [1, 0, 0, 0]]
    check_sparse(lambda lib, v, w: op(lib, make(lib, v), coo(lib, w, b_idx, (4, 2))), rand(5), rand(4, seed=1))


def test_sparse_times_sparse_leaf_gradients() -> None:
    """torch's gradient of a sparse @ sparse operand is not masked to its pattern; on the pattern the two agree."""
    v, w = rand(5, requires_grad=False), rand(3, requires_grad=False, seed=1)
    b_idx = [[0, 2, 3], [1, 0, 0]]
    ga, ta = coo(genesis, to_genesis(v), requires_grad=True), coo(torch, v, requires_grad=True)
    gb, tb = coo(genesis, to_genesis(w), b_idx, (4, 2), requires_grad=True), coo(torch, w, b_idx, (4, 2),
                                                                               requires_grad=True)
    weight = torch.arange(6.0, dtype=torch.float64).reshape(3, 2)
    (genesis.sparse.mm(ga, gb).to_dense() * to_genesis(weight)).sum().backward()
    (torch.sparse.mm(ta, tb).to_dense() * weight).sum().backward()
    for g, t, pattern in ((ga, ta, coo(torch, v)), (gb, tb, coo(torch, w, b_idx, (4, 2)))):
        on_pattern = t.grad.to_dense() * (pattern.coalesce().to_dense() != 0)
        assert_same(g.grad.to_dense(), on_pattern)


def test_leaf_gradients_through_transpose_and_scaling() -> None:
    v, x = rand(5, requires_grad=False), rand(3, 2, seed=1)
    g, t = coo(genesis, to_genesis(v), requires_grad=True), coo(torch, v, requires_grad=True)
    gx, tx = to_genesis(x), x.detach().clone().requires_grad_(True)
    (genesis.sparse.mm((g.t() * 0.5).double(), gx).relu() ** 2).sum().backward()
    (torch.sparse.mm((t.t() * 0.5).double(), tx).relu() ** 2).sum().backward()
    assert_same_sparse(g.grad, t.grad, flags=False)
    assert_same(gx.grad, tx.grad)


@pytest.mark.parametrize("use", [lambda lib, s, d: lib.sparse.mm(s, d).sum(),
                                 lambda lib, s, d: (s.to_dense() ** 2).sum(),
                                 lambda lib, s, d: lib.sparse.mm(s.coalesce(), d).exp().sum()])
def test_requires_grad_on_an_existing_sparse_tensor(use) -> None:
    v, d = rand(5, requires_grad=False), rand(4, 2, requires_grad=False, seed=1)
    g, t = coo(genesis, to_genesis(v)).requires_grad_(), coo(torch, v).requires_grad_()
    assert g.requires_grad and g.is_leaf
    use(genesis, g, to_genesis(d)).backward()
    use(torch, t, d).backward()
    assert_same_sparse(g.grad, t.grad, flags=False)


# ---------------------------------------------------------------- strided with sparse operands, in-place ops
@pytest.mark.parametrize("op", [lambda lib, d, s: lib.add(d, s), lambda lib, d, s: lib.add(d, s, alpha=-0.5),
                                lambda lib, d, s: d.sub(s, alpha=2), lambda lib, d, s: lib.sub(d, s.coalesce()),
                                lambda lib, d, s: lib.mul(d, s), lambda lib, d, s: d.mul(s),
                                lambda lib, d, s: d.clone().add_(s, alpha=-0.5),
                                lambda lib, d, s: d.clone().sub_(s), lambda lib, d, s: d.clone().mul_(s),
                                lambda lib, d, s: d.clone().__iadd__(s), lambda lib, d, s: d.clone().__isub__(s)])
def test_strided_with_a_sparse_operand(op) -> None:
    # A sparse gradient added into a parameter by hand: the sum is strided, the product sparse (in place: strided).
    check_sparse(lambda lib, d, v: op(lib, d, coo(lib, v)), rand(3, 4, seed=2), rand(5))


def test_strided_with_a_sparse_operand_broadcasts_in_products_only() -> None:
    g, t = run_both(lambda lib, d, v: lib.mul(d, coo(lib, v)), rand(4), rand(5))
    assert_same_sparse(g, t)
    check_error(RuntimeError, lambda lib, d, v: lib.add(d, coo(lib, v)), rand(4, requires_grad=False),
                rand(5, requires_grad=False), match="add: expected 'self' and 'other' to have same size")
    check_error(RuntimeError, lambda lib, d, v: d.sub_(coo(lib, v)), rand(4, requires_grad=False),
                rand(5, requires_grad=False), match="does not currently support broadcasting")
    check_error(RuntimeError, lambda lib, d, v: d.long().add_(coo(lib, v)), rand(3, 4, requires_grad=False),
                rand(5, requires_grad=False), match="can't be cast")


@pytest.mark.parametrize("op", [lambda lib, s, w: s.mul_(2.5), lambda lib, s, w: s.coalesce().mul_(2.5),
                                lambda lib, s, w: s.mul_(lib.tensor(3.0, dtype=lib.float64)),
                                lambda lib, s, w: s.mul_(lib.arange(4.0, dtype=lib.float64)),
                                lambda lib, s, w: s.coalesce().mul_(w.coalesce()), lambda lib, s, w: s.div_(4),
                                lambda lib, s, w: s.coalesce().div_(4),
                                lambda lib, s, w: s.div_(0.5, rounding_mode="floor"),
                                lambda lib, s, w: s.neg_(), lambda lib, s, w: s.coalesce().neg_(),
                                lambda lib, s, w: s.add_(w), lambda lib, s, w: s.sub_(w, alpha=2),
                                lambda lib, s, w: s.coalesce().add_(w.coalesce()), lambda lib, s, w: s.__iadd__(w),
                                lambda lib, s, w: s.__isub__(w), lambda lib, s, w: s.__imul__(2),
                                lambda lib, s, w: s.__itruediv__(2), lambda lib, s, w: s.int().mul_(3)])
def test_in_place_ops_on_sparse(op) -> None:
    g, t = run_both(lambda lib, v, w: op(lib, coo(lib, v), coo(lib, w, OTHER)), rand(5), rand(4, seed=1))
    # torch merges some duplicates when it adds uncoalesced tensors in place: their nnz is an accident of its kernel.
    assert_same_sparse(g, t, nnz=False)


def test_in_place_sparse_ops_write_into_or_replace_the_values_as_torch() -> None:
    def run(lib, v):
        result = []
        for op in (lambda s: s.mul_(10), lambda s: s.div_(10), lambda s: s.neg_(), lambda s: s.add_(s)):
            s = coo(lib, v).coalesce()
            values, data = s._values(), s.data
            assert op(s) is s
            result += [values, data.coalesce().values(), s.is_coalesced()]
        return result

    g, t = run_both(run, rand(5))
    for gx, tx in zip(g, t):
        if isinstance(tx, bool):
            assert gx == tx
        else:
            assert_same(gx, tx)


def test_in_place_ops_on_sparse_errors() -> None:
    check_error(RuntimeError, lambda lib, v, d: coo(lib, v).add_(d), rand(5, requires_grad=False),
                rand(3, 4, requires_grad=False), match=r"add\(sparse, dense\) is not supported")
    check_error(RuntimeError, lambda lib, v: coo(lib, v).add_(1), rand(5, requires_grad=False))
    check_error(RuntimeError, lambda lib, v: coo(lib, v.long()).div_(2), rand(5, requires_grad=False),
                match="can't be cast")
    check_error(RuntimeError, lambda lib, v: coo(lib, v.detach()).requires_grad_().mul_(2),
                rand(5, requires_grad=False), match="leaf Variable")


@pytest.mark.parametrize("p", [2, "fro", 1, 3, float("inf"), 0])
def test_data_length_and_norm_of_sparse(p) -> None:
    g, t = run_both(lambda lib, v: coo(lib, v).requires_grad_().data, rand(5, requires_grad=False))
    assert_same_sparse(g, t)
    assert not g.requires_grad
    assert (len(g), g.nelement()) == (len(t), t.nelement())
    check(lambda lib, v: coo(lib, v).norm(p), rand(5), backward=False)
    check(lambda lib, v: coo(lib, v).norm(p, dim=(0, 1)), rand(5), backward=False)
    check_error(RuntimeError, lambda lib, v: coo(lib, v).norm(p, dim=1), rand(5), match="only supports full reductions")
    check_error(RuntimeError, lambda lib, v: coo(lib, v).norm(p, keepdim=True), rand(5), match="keepdim=True")


# ---------------------------------------------------------------- construction flags
@pytest.mark.parametrize("idx, flag", [([[1], [2]], None), ([[0, 1], [2, 3]], None), ([[1], [2]], False),
                                       ([[0, 1], [2, 3]], True), ([[], []], None)])
def test_coalesced_flag_of_constructed_tensors(idx, flag) -> None:
    """By default a tensor of fewer than two entries is marked coalesced, as torch marks it."""
    g, t = run_both(lambda lib, v: lib.sparse_coo_tensor(lib.tensor(idx, dtype=lib.int64), v, (3, 4),
                                                         is_coalesced=flag), torch.ones(len(idx[0])))
    assert_same_sparse(g, t)


# ---------------------------------------------------------------- CSR
def csr(lib, values, crow=(0, 1, 3), col=(1, 0, 2), size=(2, 3), **kwargs):
    return lib.sparse_csr_tensor(lib.tensor(list(crow)), lib.tensor(list(col)), values, size, **kwargs)


def assert_same_csr(g, t) -> None:
    assert g.layout is genesis.sparse_csr and t.layout is torch.sparse_csr
    assert g.is_sparse_csr and not g.is_sparse and tuple(g.shape) == tuple(t.shape) and g._nnz() == t._nnz()
    assert_same(g.crow_indices(), t.crow_indices(), what="crow_indices")
    assert_same(g.col_indices(), t.col_indices(), what="col_indices")
    assert_same(g.values(), t.values(), what="values")


@pytest.mark.parametrize("make, differentiable", [
    (lambda lib, v: csr(lib, v[:3]), True),
    # torch has no derivative for a CSR matrix whose size is inferred.
    (lambda lib, v: lib.sparse_csr_tensor(lib.tensor([0, 1, 3]), lib.tensor([1, 0, 2]), v[:3]), False),
    (lambda lib, v: csr(lib, v[:3]).detach(), False),
    (lambda lib, v: csr(lib, v[:3]).clone(), True),
    (lambda lib, v: csr(lib, v[:3]).float(), True),
    (lambda lib, v: coo(lib, v).to_sparse_csr(), True),
    (lambda lib, v: coo(lib, v).coalesce().to_sparse_csr(), True),
    (lambda lib, v: coo(lib, v).to_sparse(layout=lib.sparse_csr), True),
    (lambda lib, v: coo(lib, v).to_dense().to_sparse_csr(), True),
    (lambda lib, v: coo(lib, v).to_dense().to_sparse(layout=lib.sparse_csr), True),
    (lambda lib, v: coo(lib, v).to_sparse_csr().to_sparse_csr(), True),
    (lambda lib, v: csr(lib, v[:3]).cpu().to(v.device), True),
])
def test_csr_construction_and_conversions(make, differentiable) -> None:
    g, t = run_both(make, rand(5))
    assert_same_csr(g, t)
    check_sparse(lambda lib, v: make(lib, v).to_sparse(), rand(5), grad=differentiable)
    if differentiable:
        check(lambda lib, v: make(lib, v).to_dense(), rand(5))
        check(lambda lib, v: make(lib, v).values() * 2, rand(5))


def test_csr_with_int32_indices_metadata_and_repr() -> None:
    def make(lib, v):
        return lib.sparse_csr_tensor(lib.tensor([0, 2, 2], dtype=lib.int32), lib.tensor([0, 2], dtype=lib.int32), v,
                                     (2, 3))

    g, t = run_both(make, rand(2))
    assert_same_csr(g, t)
    assert (g.dim(), g.sparse_dim(), g.dense_dim(), g.dtype, g.device) == (2, 2, 0, genesis.float64,
                                                                            genesis.device(DEVICE))
    assert "layout=genesis.sparse_csr" in repr(g) and "crow_indices" in repr(g)
    assert not genesis.ones(2).is_sparse_csr and genesis.ones(2).layout is genesis.strided
    assert_same(g.to_dense(), t.to_dense())


@pytest.mark.parametrize("op", [lambda lib, c, d: c @ d, lambda lib, c, d: c.mm(d), lambda lib, c, d: c.matmul(d),
                                lambda lib, c, d: lib.sparse.mm(c, d), lambda lib, c, d: (c @ d).relu(),
                                lambda lib, c, d: lib.sparse.addmm(lib.ones(2, 4, dtype=lib.float64), c, d, beta=2)])
def test_csr_products(op) -> None:
    check(lambda lib, v, d: op(lib, csr(lib, v), d), rand(3), rand(3, 4, seed=1))


def test_dense_times_csr() -> None:
    check(lambda lib, d, v: d @ csr(lib, v), rand(4, 2), rand(3))


def test_csr_leaf_gradient() -> None:
    v, d = rand(3, requires_grad=False), rand(3, 4, seed=1)
    g, t = csr(genesis, to_genesis(v), requires_grad=True), csr(torch, v, requires_grad=True)
    assert g.is_leaf and g.requires_grad
    weight = torch.arange(6.0, dtype=torch.float64).reshape(2, 3)
    (g.to_dense() * to_genesis(weight)).sum().backward()
    (t.to_dense() * weight).sum().backward()
    assert_same_csr(g.grad, t.grad)
    # torch gives ``csr @ strided`` a strided gradient; Genesis's is CSR over the pattern (the same numbers there).
    g.grad = None
    (g @ to_genesis(d)).sum().backward()
    tg = csr(torch, v, requires_grad=True)
    (tg @ d).sum().backward()
    assert_same(g.grad.to_dense(), tg.grad * (csr(torch, v).to_dense() != 0))


@pytest.mark.parametrize("crow, col, message", [
    ([0, 1, 3], [1, 0, 5], "`0 <= col_indices < ncols` is not satisfied"),
    ([0, 3, 1], [1, 0, 2], "`crow_indices[..., -1] == nnz` is not satisfied"),
    ([1, 1, 3], [1, 0, 2], "`crow_indices[..., 0] == 0` is not satisfied"),
    ([0, 2, 3], [1, 0, 2], "sorted and distinct"),
    ([0, 2, 3], [1, 1, 2], "sorted and distinct"),
    ([0, 3], [0, 1, 2], "crow_indices.size(-1) must be equal to size[-2] + 1"),
])
def test_csr_invariants(crow, col, message) -> None:
    check_error(RuntimeError, lambda lib, v: lib.sparse_csr_tensor(lib.tensor(crow), lib.tensor(col), v, (2, 3),
                                                                   check_invariants=True), rand(3),
                match=message.replace("[", r"\[").replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")
                .replace("+", r"\+"))


def test_csr_unsupported_conversions_and_ops() -> None:
    check_error(RuntimeError, lambda lib, v: coo(lib, v, [[0, 1], [1, 2], [2, 0]], (2, 3, 4)).to_sparse_csr(),
                rand(2), match="sparse_dim")
    with pytest.raises(NotImplementedError, match=r"^exp: not supported for sparse CSR tensors \(layout "
                                                  r"genesis.sparse_csr\); they support only to_dense"):
        csr(genesis, genesis.ones(3)).exp()
    with pytest.raises(NotImplementedError, match="2-D"):
        genesis.ones(2, 2, 2).to_sparse_csr()


# ---------------------------------------------------------------- the lists of supported ops stay true
def _reachable(name: str, cls: type) -> bool:
    if name.startswith("genesis."):
        owner = genesis
        for part in name.split(".")[1:]:
            owner = getattr(owner, part, None)
        return owner is not None
    return not name.isidentifier() or hasattr(cls, name)


def test_supported_lists_name_real_ops() -> None:
    for names, cls in ((SUPPORTED, SparseTensor), (SUPPORTED_CSR, SparseCsrTensor)):
        missing = [name for name in names if not _reachable(name, cls)]
        assert not missing, f"{cls.__name__}: listed as supported but missing: {missing}"
    assert set(COALESCING_UNARY_OPS) <= set(SUPPORTED)


@pytest.mark.parametrize("offsets, shape", [([0, -1, 2], (4, 4)), ([0, 1, -2], (3, 5)), ([0, -1, 2], (2, 6)),
                                            ([0, -1, 2], (5, 5))])
def test_spdiags(offsets, shape) -> None:
    diagonals = rand(3, 4)
    check_sparse(lambda lib, d: lib.sparse.spdiags(d, lib.tensor(offsets), shape), diagonals, grad=False)
    g, t = run_both(lambda lib, d: lib.sparse.spdiags(d, lib.tensor(offsets), shape, layout=lib.sparse_csr),
                    diagonals)
    assert_same_csr(g, t)
    # torch has no derivative for spdiags: the gradient is the strided scatter of the same entries.
    check(lambda lib, d: genesis.sparse.spdiags(d, genesis.tensor(offsets), shape).to_dense() if lib is genesis
          else _spdiags_dense(d, offsets, shape), diagonals)


def _spdiags_dense(diagonals: torch.Tensor, offsets: list[int], shape: tuple[int, int]) -> torch.Tensor:
    out = torch.zeros(shape, dtype=diagonals.dtype)
    for row, k in zip(diagonals, offsets):
        cols = torch.arange(min(shape[1], row.shape[0]))
        inside = (cols - k >= 0) & (cols - k < shape[0])
        out = out.index_put((cols[inside] - k, cols[inside]), row[:len(cols)][inside])
    return out


def test_spdiags_vector_and_errors() -> None:
    g, t = run_both(lambda lib, d: lib.sparse.spdiags(d, lib.tensor(1), (4, 4)), rand(4))
    assert_same_sparse(g, t)
    d = rand(3, 4, requires_grad=False)
    check_error(RuntimeError, lambda lib, d: lib.sparse.spdiags(d, lib.tensor([0, 0, 2]), (4, 4)), d,
                match="duplicate")
    check_error(RuntimeError, lambda lib, d: lib.sparse.spdiags(d, lib.tensor([0, 1]), (4, 4)), d,
                match=r"Number of diagonals \(3\) does not match the number of offsets \(2\)")
    check_error(RuntimeError, lambda lib, d: lib.sparse.spdiags(d, lib.tensor([0, 1, 2], dtype=lib.int32), (4, 4)),
                d, match="must have dtype Long")
    check_error(RuntimeError, lambda lib, d: lib.sparse.spdiags(d, lib.tensor([0, 1, 2]), (4, 4, 4)), d,
                match="Output shape must be 2d")
    check_error(RuntimeError, lambda lib, d: lib.sparse.spdiags(d, lib.tensor([0, 1, 2]), (4, 4), layout=lib.strided),
                d, match="Only output layouts")
    check_error(TypeError, lambda lib, d: lib.sparse.spdiags(d, [0, 1, 2], (4, 4)), d)
