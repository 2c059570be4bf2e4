"""Sparse COO tensors on the test device: construction, coalesce, conversions, moves between devices, the
sparse-times-dense product and sparse.sum, with values and gradients compared with torch on the CPU; other ops raise
clear errors. The other sparse ops (value-wise ops, transposes, products, softmax, CSR) are ``test_sparse_ops.py``,
which reuses ``coo``, ``assert_same_sparse`` and the ``on_test_device`` fixture."""

from __future__ import annotations

import warnings

import pytest
import torch

import genesis
from tests.helpers import DEVICE, assert_same, check, check_error, rand, to_genesis

needs_two_devices = pytest.mark.skipif(DEVICE == "cpu", reason="parts on two devices need a GPU "
                                                                "(GENESIS_TEST_DEVICE=cuda)")

# Uncoalesced: (0, 2) appears twice.
INDICES = [[0, 1, 1, 0, 2], [2, 0, 2, 2, 1]]
SIZE = (3, 4)
torch.sparse.check_sparse_tensor_invariants.disable()  # torch's default, stated to silence its warning


@pytest.fixture(autouse=True)
def on_test_device():
    """Genesis tensors made without a device (indices, scalars, modules) go to the test device, as the values made by
    ``to_genesis`` do; torch's stay on the CPU."""
    with genesis.device(DEVICE):
        yield


def coo(lib, values, indices=INDICES, size=SIZE, **kwargs):
    return lib.sparse_coo_tensor(lib.tensor(indices), values, size, **kwargs)


def assert_same_sparse(g, t, flags: bool = True, nnz: bool = True) -> None:
    """A Genesis sparse tensor equals torch's: layout, size, dtype, coalesced indices and values, and (with ``flags``)
    whether it is marked coalesced and (with ``nnz``) how many entries it stores."""
    assert g.layout is genesis.sparse_coo and g.is_sparse and t.is_sparse
    assert tuple(g.shape) == tuple(t.shape), f"size {tuple(g.shape)} != torch {tuple(t.shape)}"
    assert g._nnz() == t._nnz() or not nnz, f"nnz {g._nnz()} != torch {t._nnz()}"
    assert (g.sparse_dim(), g.dense_dim()) == (t.sparse_dim(), t.dense_dim())
    assert g.is_coalesced() == t.is_coalesced() or not flags, f"is_coalesced {g.is_coalesced()} != torch"
    g, t = g.coalesce(), t.coalesce()
    assert_same(g.indices(), t.indices(), what="indices")
    assert_same(g.values(), t.values(), what="values")


def test_construction_metadata_and_to_dense() -> None:
    v = rand(5, requires_grad=False)
    g, t = coo(genesis, to_genesis(v)), coo(torch, v)
    assert_same_sparse(g, t)
    assert g.layout is genesis.sparse_coo and genesis.ones(2).layout is genesis.strided
    assert not genesis.ones(2).is_sparse and repr(g.layout) == "genesis.sparse_coo"
    assert g.dtype is genesis.float64 and g.dim() == 2 and g.size(1) == 4 and g.device == genesis.device(DEVICE)
    assert_same(g.to_dense(), t.to_dense())
    assert_same(g._values(), t._values())
    assert_same(g._indices(), t._indices())
    # Size inferred from the largest index; hybrid tensors (dense trailing dims) as torch.
    assert_same_sparse(genesis.sparse_coo_tensor(genesis.tensor(INDICES), to_genesis(v)),
                       torch.sparse_coo_tensor(torch.tensor(INDICES), v))
    h = rand(5, 2, requires_grad=False)
    assert_same_sparse(coo(genesis, to_genesis(h), size=(3, 4, 2)), coo(torch, h, size=(3, 4, 2)))
    assert_same(coo(genesis, to_genesis(h), size=(3, 4, 2)).to_dense(), coo(torch, h, size=(3, 4, 2)).to_dense())
    assert_same(coo(genesis, [1, 2, 3, 4, 5], dtype=genesis.float32).to_dense(),
                coo(torch, [1, 2, 3, 4, 5], dtype=torch.float32).to_dense())


def test_coalesce_and_values_of_uncoalesced() -> None:
    v = rand(5, requires_grad=False)
    g, t = coo(genesis, to_genesis(v)), coo(torch, v)
    assert not g.is_coalesced()
    assert_same_sparse(g.coalesce(), t.coalesce())
    c = g.coalesce()
    assert c.is_coalesced() and c.coalesce() is c
    check_error(RuntimeError, lambda lib, v: coo(lib, v).values(), v, match="values: Cannot get values")
    check_error(RuntimeError, lambda lib, v: coo(lib, v).indices(), v, match="uncoalesced")
    # Gradient through coalesce, to the values' duplicates.
    check(lambda lib, v: coo(lib, v).coalesce().values() * lib.arange(4.0, dtype=lib.float64), rand(5))


def test_to_sparse_and_back_with_gradients() -> None:
    x = rand(3, 4)
    x.data[0, 1] = 0.0
    x.data[2] = 0.0
    g, t = to_genesis(x).to_sparse(), x.to_sparse()
    assert_same_sparse(g, t)
    assert_same_sparse(to_genesis(x).to_sparse(1), x.to_sparse(1))
    check(lambda lib, x: x.to_sparse().to_dense() * 3, x)
    check(lambda lib, x: x.to_sparse().values().exp(), x)
    check(lambda lib, x: x.to_dense(), x)
    assert g.to_sparse() is g


@pytest.mark.parametrize("name", ["sparse.mm", "spmm", "mm", "matmul", "@"])
def test_sparse_times_dense_values_and_gradients(name: str) -> None:
    def product(lib, v, d):
        s = coo(lib, v)
        if name == "sparse.mm":
            return lib.sparse.mm(s, d)
        if name == "@":
            return s @ d
        return getattr(lib, name)(s, d)

    check(product, rand(5), rand(4, 6, seed=1))
    check(product, rand(5, dtype=torch.float32), rand(4, 6, dtype=torch.float32, seed=1))


def test_dense_times_sparse() -> None:
    check(lambda lib, d, v: d @ coo(lib, v, size=(3, 4)), rand(2, 3), rand(5))
    check(lambda lib, d, v: lib.mm(d, coo(lib, v)), rand(2, 3), rand(5))


def test_leaf_sparse_gradient_as_torch_sparse_mm() -> None:
    v, d = rand(5, requires_grad=False), rand(4, 6, seed=1)
    g = coo(genesis, to_genesis(v), requires_grad=True)
    t = coo(torch, v, requires_grad=True)
    assert g.is_leaf and g.requires_grad and g.grad_fn is None
    gd, td = to_genesis(d), d.detach().clone().requires_grad_(True)
    genesis.sparse.mm(g, gd).tanh().sum().backward()
    torch.sparse.mm(t, td).tanh().sum().backward()
    assert_same_sparse(g.grad, t.grad, flags=False)  # torch leaves its gradient unmarked; Genesis's is coalesced
    assert_same(gd.grad, td.grad)
    g.grad = None
    assert g.grad is None and g._values().grad is None
    # A sparse tensor over values that require grad is a graph node, not a leaf (as torch).
    assert not coo(genesis, to_genesis(rand(5))).is_leaf


@pytest.mark.parametrize("dim", [None, 0, 1, (0, 1), -1])
def test_sparse_sum(dim) -> None:
    v = rand(5)
    g, t = genesis.sparse.sum(coo(genesis, to_genesis(v)), dim), torch.sparse.sum(coo(torch, v), dim)
    if t.is_sparse:
        assert_same_sparse(g, t)
        check(lambda lib, v: lib.sparse.sum(coo(lib, v), dim).to_dense(), v)
    else:
        check(lambda lib, v: lib.sparse.sum(coo(lib, v), dim), v)


@pytest.mark.parametrize("dim", [2, (1, 2), (0, 1)])
def test_sparse_sum_over_dense_dims(dim) -> None:
    check(lambda lib, h: lib.sparse.sum(coo(lib, h, size=(3, 4, 2)), dim).to_dense(), rand(5, 2))


def test_bad_arguments_raise_as_torch() -> None:
    v, d = rand(5), rand(4, 6)
    check_error(RuntimeError, lambda lib, v, d: lib.sparse.mm(coo(lib, v), d.t()), v, d, match="sparse.mm: mat1")
    check_error(RuntimeError, lambda lib, v, d: lib.sparse.mm(coo(lib, v), d.float()), v, d, match="same dtype")
    check_error(RuntimeError, lambda lib, v: lib.sparse_coo_tensor(lib.tensor(INDICES), v[:4], SIZE), v,
                match="same nnz")
    check_error(RuntimeError, lambda lib, v: lib.sparse_coo_tensor(lib.tensor(INDICES), v, (2, 4),
                                                                   check_invariants=True), v,
                match="for dim 0, size is 2 but found index 2")


@pytest.mark.parametrize("op", [lambda s: s + 1, lambda s: s.exp(), lambda s: s.view(12), lambda s: s.mean(),
                                lambda s: genesis.mul(s, 2), lambda s: genesis.add(s, s),
                                lambda s: s.detach().cpu().numpy(), lambda s: genesis.relu(s), lambda s: s.flip(0)])
def test_other_ops_name_themselves_and_list_what_is_supported(op) -> None:
    s = coo(genesis, to_genesis(rand(5, requires_grad=False)))
    with pytest.raises(NotImplementedError, match=r"^(add|exp|view|mean|mul|numpy|relu|flip): not supported for "
                                                  r"sparse COO tensors .*they support only to_dense"):
        op(s)
    assert_same(s.to_dense(), coo(torch, rand(5, requires_grad=False)).to_dense())  # unchanged


def test_parts_and_results_on_the_device_of_the_values() -> None:
    device = genesis.device(DEVICE)
    v = to_genesis(rand(5, requires_grad=False))
    with genesis.device("cpu"):  # indices given as data follow the values, whatever the default device (as torch)
        made = [genesis.sparse_coo_tensor(INDICES, v, SIZE),
                genesis.sparse_coo_tensor(INDICES, v.cpu(), SIZE, device=DEVICE)]  # device=: both parts go there
    with genesis.device(DEVICE):  # values given as data honour the default device (as torch)
        made.append(genesis.sparse_coo_tensor(INDICES, [1.0, 2.0, 3.0, 4.0, 5.0], SIZE))
    for s in made:
        c = s.coalesce()
        results = [s, s._indices(), s._values(), c.indices(), c.values(), s.to_dense(), s.t(), s.sum(1),
                   s.to_dense().to_sparse(), genesis.sparse.mm(s, genesis.ones(4, 2, dtype=s.dtype)),
                   c.to_sparse_csr().crow_indices()]
        assert [r.device for r in results] == [device] * len(results)


def test_to_cpu_and_back_move_every_part_and_pass_gradients() -> None:
    def there_and_back(lib, v):
        s = coo(lib, v)
        host = s.cpu()
        assert [p.device.type for p in (host, host._indices(), host._values())] == ["cpu"] * 3
        back = host.to(v.device)
        assert [p.device for p in (back, back._indices(), back._values())] == [v.device] * 3
        return back

    v = rand(5)
    assert_same_sparse(there_and_back(genesis, to_genesis(v, requires_grad=False)), coo(torch, v.detach()))
    check(lambda lib, v: there_and_back(lib, v).to_dense(), v)
    check(lambda lib, v: coo(lib, v).to(device="cpu", dtype=lib.float32).to_dense().to(v.device), v)


@needs_two_devices
def test_parts_on_two_devices_raise_and_device_moves_them_as_torch() -> None:
    v = to_genesis(rand(5, requires_grad=False))
    host_indices = genesis.tensor(INDICES, device="cpu")
    with pytest.raises(RuntimeError, match=r"sparse_coo_tensor: Expected all tensors to be on the same device, but "
                                           r"found at least two devices, cpu and cuda"):
        genesis.sparse_coo_tensor(host_indices, v, SIZE)
    s = genesis.sparse_coo_tensor(host_indices, v.cpu(), SIZE, device=DEVICE)
    assert s.device == s._indices().device == s._values().device == v.device
    with pytest.raises(RuntimeError, match=r"device of crow_indices \(=cpu\) must match device of values \(=cuda"):
        genesis.sparse_csr_tensor(genesis.tensor([0, 1, 3], device="cpu"), genesis.tensor([1, 0, 2], device="cpu"),
                                  v[:3], (2, 3))
    with pytest.raises(RuntimeError, match="sparse.mm: Expected all tensors to be on the same device"):
        genesis.sparse.mm(s, genesis.ones(4, 2, dtype=s.dtype, device="cpu"))
    moved = s.cpu().cuda()
    assert moved.is_cuda and moved._indices().is_cuda and moved.coalesce().is_cuda
    assert moved.type() == f"genesis.cuda.sparse.{s.cpu().type().rsplit('.', 1)[1]}"  # torch.cuda.sparse.DoubleTensor


def test_check_sparse_tensor_invariants_switch_as_torch() -> None:
    # The switch's protocol (the state it reports, restores and lends a decorated function); Genesis's COO
    # constructor checks indices against the size either way.
    for lib in (torch, genesis):
        switch = lib.sparse.check_sparse_tensor_invariants
        before = switch.is_enabled()
        switch.enable()
        assert switch.is_enabled()
        with switch(False):
            assert not switch.is_enabled()
        assert switch.is_enabled()
        switch.disable()
        assert switch(True)(switch.is_enabled)() and not switch.is_enabled()
        manager = switch()
        with manager, pytest.raises(RuntimeError, match="already activated"):
            manager.__enter__()
        (switch.enable if before else switch.disable)()


def test_legacy_sparse_constructors_and_type_names() -> None:
    # pygcn's torch.sparse.FloatTensor(indices, values, shape): the values keep their dtype, as torch's.
    # They are CPU types (as torch's): the parts are made there.
    indices, values = torch.tensor(INDICES), rand(5, dtype=torch.float32, requires_grad=False)
    for name in ("FloatTensor", "DoubleTensor"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch warns once a process
            t = getattr(torch.sparse, name)(indices, values, torch.Size(SIZE))
        with pytest.warns(UserWarning, match="deprecated"):
            g = getattr(genesis.sparse, name)(to_genesis(indices, device="cpu"), to_genesis(values, device="cpu"),
                                              genesis.Size(SIZE))
        assert_same_sparse(g, t)
        assert g.type() == t.type().replace("torch.", "genesis.") == "genesis.sparse.FloatTensor"
    for args in ((2, 3), ([2, 3],), ()):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            g = genesis.sparse.LongTensor(*(genesis.Size(a) if isinstance(a, list) else a for a in args))
            t = torch.sparse.LongTensor(*(torch.Size(a) if isinstance(a, list) else a for a in args))
        assert_same_sparse(g, t)
    assert isinstance(g, genesis.sparse.LongTensor) and not isinstance(g, genesis.sparse.FloatTensor)
    assert g.device.type == "cpu"  # whatever the default device
    assert not isinstance(genesis.zeros(2, dtype=genesis.int64), genesis.sparse.LongTensor)
    s = coo(genesis, to_genesis(values))
    assert s.type(genesis.sparse.DoubleTensor).dtype is genesis.float64
    assert s.type("torch.sparse.DoubleTensor").type() == "genesis.sparse.DoubleTensor"
    assert genesis.ones(2).type("torch.sparse.DoubleTensor").type() == "genesis.DoubleTensor"  # as torch: no layout
    with pytest.raises(RuntimeError, match="legacy constructor expects device type: cpu"):
        genesis.sparse.FloatTensor(2, 3, device="cuda")
    with pytest.raises(TypeError):
        genesis.sparse.FloatTensor(to_genesis(indices), [1.0, 2.0, 3.0, 4.0, 5.0])


@pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta state")
@pytest.mark.parametrize("layout", ["coo", "csr"])
def test_products_with_vectors_and_csr_through_the_namespace(layout: str) -> None:
    # matmul / mv / @ take a 1-D strided operand (a column on the right, a row on the left), COO or CSR.
    def make(lib, v):
        return coo(lib, v) if layout == "coo" else coo(lib, v).coalesce().to_sparse_csr()

    check(lambda lib, v, x: make(lib, v) @ x, rand(5), rand(4, seed=1))
    check(lambda lib, v, x: lib.matmul(make(lib, v), x), rand(5), rand(4, seed=1))
    check(lambda lib, v, x: lib.mv(make(lib, v), x), rand(5), rand(4, seed=1))
    check(lambda lib, v, x: x @ make(lib, v), rand(5), rand(3, seed=1))
    check(lambda lib, v, x: lib.mm(make(lib, v), x), rand(5), rand(4, 2, seed=1))
    check(lambda lib, v, x: lib.matmul(x, make(lib, v)), rand(5), rand(2, 3, seed=1))


def test_size_only_construction_int_indices_and_numel() -> None:
    for make in (lambda lib: lib.sparse_coo_tensor(size=(3, 4)), lambda lib: lib.sparse_coo_tensor((3, 4)),
                 lambda lib: lib.sparse_coo_tensor([2, 5], dtype=lib.float64)):
        assert_same_sparse(make(genesis), make(torch))
    v = rand(5, requires_grad=False)
    # Any integer indices are taken as int64, as torch.
    assert_same_sparse(*run_both_coo(v, lambda lib: lib.tensor(INDICES, dtype=lib.int32)))
    assert_same_sparse(*run_both_coo(v, lambda lib: lib.tensor(INDICES, dtype=lib.int16)))
    assert coo(genesis, genesis.ones(5)).numel() == coo(torch, torch.ones(5)).numel() == 12


def run_both_coo(values: torch.Tensor, indices) -> tuple:
    """``sparse_coo_tensor(indices(lib), values, SIZE)`` in Genesis and torch."""
    return (genesis.sparse_coo_tensor(indices(genesis), to_genesis(values), SIZE),
            torch.sparse_coo_tensor(indices(torch), values, SIZE))
