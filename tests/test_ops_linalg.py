"""Matrix products against torch: matmul in every rank combination, mm/bmm/mv/outer/dot, addmm, einsum."""

import pytest
import torch

import genesis
from tests.helpers import DEVICE, assert_same, check, check_error, rand, to_genesis

MATMUL_SHAPES = [
    ((3,), (3,)),
    ((3,), (3, 4)),
    ((2, 3), (3,)),
    ((2, 3), (3, 4)),
    ((5, 2, 3), (5, 3, 4)),
    ((5, 2, 3), (3, 4)),
    ((2, 3), (5, 3, 4)),
    ((3,), (5, 3, 4)),
    ((5, 2, 3), (3,)),
    ((2, 1, 2, 3), (5, 3, 4)),
    ((1, 2, 3), (4, 1, 3, 2)),
    ((0, 3), (3, 4)),
    ((2, 0), (0, 4)),
    ((2, 3), (3, 0)),
    ((0,), (0,)),
]


@pytest.mark.parametrize("shapes", MATMUL_SHAPES, ids=str)
def test_matmul(shapes):
    a, b = rand(*shapes[0], seed=1), rand(*shapes[1], seed=2)
    check(lambda lib, a, b: lib.matmul(a, b), a, b)
    check(lambda lib, a, b: a @ b, a, b)


@pytest.mark.parametrize("shapes", [((2, 3), (3, 4)), ((5, 2, 3), (5, 3, 4)), ((4, 3), (3,))], ids=str)
def test_matmul_noncontiguous(shapes):
    a, b = rand(*shapes[0], seed=3), rand(*shapes[1], seed=4)
    check(lambda lib, a, b: a.mT.contiguous().mT @ b, a, b)
    check(lambda lib, a, b: (a.mT @ a) @ b if b.ndim > 1 else a.mT.contiguous().mT @ b, a, b)
    check(lambda lib, a, b: a @ b.flip(0) if b.ndim == 1 else a @ b.mT.contiguous().mT, a, b)
    check(lambda lib, a, b: a[..., ::2, :] @ b, a, b)
    check(lambda lib, a, b: a.expand(2, *a.shape) @ b, a, b)


def test_matmul_one_input_requires_grad():
    a, b = rand(2, 3, seed=5), rand(3, 4, seed=6, requires_grad=False)
    check(lambda lib, a, b: a @ b, a, b)
    check(lambda lib, b, a: b @ a, rand(4, 2, seed=7, requires_grad=False), a)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.int32])
def test_matmul_dtypes(dtype):
    if dtype.is_floating_point:
        a, b = rand(4, 8, seed=8).detach().to(dtype), rand(8, 3, seed=9).detach().to(dtype)
        tol = {"rtol": 2e-2, "atol": 2e-2} if dtype in (torch.float16, torch.bfloat16) else {}
        check(lambda lib, a, b: a @ b, a, b, **tol)
    else:
        a = torch.arange(12, dtype=dtype).reshape(3, 4)
        check(lambda lib, a, b: a @ b, a, a.T.contiguous())
        check(lambda lib, a: a @ a[0], a)


def test_matmul_errors():
    check_error(RuntimeError, lambda lib, a, b: a @ b, rand(2, 3), rand(4, 5), match=r"\(2, 3\).*\(4, 5\)")
    check_error(RuntimeError, lambda lib, a, b: lib.matmul(a, b), rand(3), rand(4))
    check_error(RuntimeError, lambda lib, a, b: a @ b, rand(2, 3, 4), rand(3, 5, 6))
    check_error(RuntimeError, lambda lib, a, b: a @ b, rand(3, 2, 3), rand(2, 3, 4))
    check_error(RuntimeError, lambda lib, a, b: a @ b, rand(), rand(3))
    check_error(RuntimeError, lambda lib, a, b: a @ b, rand(2, 3), rand(3, 4).float())


def test_mm_bmm_mv_dot_outer():
    check(lambda lib, a, b: lib.mm(a, b), rand(2, 3, seed=10), rand(3, 4, seed=11))
    check(lambda lib, a, b: a.mm(b.mT), rand(2, 3, seed=10), rand(4, 3, seed=11))
    check(lambda lib, a, b: lib.bmm(a, b), rand(5, 2, 3, seed=12), rand(5, 3, 4, seed=13))
    check(lambda lib, a, b: a.bmm(b.mT), rand(5, 2, 3, seed=12), rand(5, 4, 3, seed=13))
    check(lambda lib, a, v: lib.mv(a, v), rand(2, 3, seed=14), rand(3, seed=15))
    check(lambda lib, a, v: a.mT.mv(v), rand(3, 2, seed=14), rand(3, seed=15))
    check(lambda lib, a, b: lib.dot(a, b), rand(4, seed=16), rand(4, seed=17))
    check(lambda lib, a, b: a.dot(b[::2]), rand(3, seed=16), rand(6, seed=17))
    check(lambda lib, a, b: lib.inner(a, b), rand(4, seed=16), rand(4, seed=17))
    check(lambda lib, a, b: lib.outer(a, b), rand(3, seed=18), rand(4, seed=19))
    check(lambda lib, a, b: a.outer(b), torch.arange(3), torch.arange(2))
    check(lambda lib, a, b: lib.dot(a, b), torch.tensor([1, 2, 3]), torch.tensor([4, 5, 6]))
    check(lambda lib, c, a, b: lib.addmm(c, a, b), rand(2, 4, seed=20), rand(2, 3, seed=21), rand(3, 4, seed=22))
    check(lambda lib, c, a, b: lib.addmm(c, a, b, beta=0.5, alpha=2.0), rand(4, seed=20), rand(2, 3, seed=21),
          rand(3, 4, seed=22))
    check(lambda lib, c, a, b: lib.baddbmm(c, a, b, alpha=-1.0), rand(2, 4, seed=23), rand(3, 2, 5, seed=24),
          rand(3, 5, 4, seed=25))


def test_inner_contracts_the_last_dims_of_any_ranks():
    # Result shape is input.shape[:-1] + other.shape[:-1]; a 0-D operand scales the other.
    check(lambda lib, a, b: lib.inner(a, b), rand(2, 3, 4, seed=30), rand(5, 4, seed=31))
    check(lambda lib, a, b: a.inner(b), rand(4, seed=32), rand(2, 4, seed=33))
    check(lambda lib, a, b: lib.inner(a, b), rand(seed=34), rand(2, 3, seed=35))
    check_error(RuntimeError, lambda lib, a, b: lib.inner(a, b), rand(2, 3, seed=36), rand(4, 5, seed=37),
                match=r"inner\(\) the last dimension must match on both input tensors but got shapes \[2, 3\] and "
                      r"\[4, 5\]")


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_half_precision_blends_round_once(dtype):
    # torch adds beta * input and alpha * product in float32 and rounds once. On the CPU every form matches exactly
    # (a bias row goes through the product's bias epilogue, Hugging Face's Conv1D; the others multiply in float32);
    # on CUDA within one rounding (the libraries' products may accumulate in another order).
    # One rounding of a product of size ~8 (64 unit terms): 2 ulps there, absolute, where the blend cancels.
    rounding = {"rtol": 1.6e-2, "atol": 0.25} if dtype is torch.bfloat16 else {"rtol": 2e-3, "atol": 0.03}
    blended = {"rtol": 0.0, "atol": 0.0} if DEVICE == "cpu" else rounding
    c, a, b = rand(32, seed=30).to(dtype), rand(16, 64, seed=31).to(dtype), rand(64, 32, seed=32).to(dtype)
    check(lambda lib, c, a, b: lib.addmm(c, a, b), c, a, b, **blended, backward=False)
    check(lambda lib, c, a, b: lib.addmm(c, a, b, beta=0.5, alpha=2.0), c, a, b, **blended, backward=False)
    check(lambda lib, c, a, b: lib.baddbmm(c, a.reshape(2, 8, 64), b.expand(2, 64, 32), alpha=0.125), c, a, b,
          **blended, backward=False)
    check(lambda lib, c, a, b: lib.addmv(c[:16], a, b[:, 0], beta=2.0), c, a, b, **blended, backward=False)


def test_blends_ignore_input_at_beta_zero():
    nan_input = torch.full((2, 4), float("nan"), dtype=torch.float64)
    check(lambda lib, c, a, b: lib.addmm(c, a, b, beta=0.0), nan_input, rand(2, 3, seed=33), rand(3, 4, seed=34))
    check(lambda lib, c, a, b: lib.baddbmm(c, a, b, beta=0.0, alpha=0.5), nan_input, rand(3, 2, 5, seed=35),
          rand(3, 5, 4, seed=36))


@pytest.mark.parametrize("dtypes", [(torch.float32, torch.float64, torch.float64),
                                    (torch.float64, torch.float32, torch.float64),
                                    (torch.float64, torch.float64, torch.float32),
                                    (torch.int64, torch.float64, torch.float64)])
@pytest.mark.parametrize("op", ["addmm", "baddbmm", "addbmm", "addmv"])
def test_blends_refuse_mixed_dtypes_as_torch(op, dtypes):
    # No promotion: input and both factors share one dtype, with torch's message for each mismatch.
    if op == "addmv" and tuple(int(v) for v in torch.__version__.split(".")[:2]) < (2, 13):
        pytest.skip("Genesis follows torch 2.13's addmv check; older torch promotes some mixes and words others")
    shapes = {"addmm": ((2, 2), (2, 2), (2, 2)), "baddbmm": ((1, 2, 2), (1, 2, 2), (1, 2, 2)),
              "addbmm": ((2, 2), (1, 2, 2), (1, 2, 2)), "addmv": ((2,), (2, 2), (2,))}[op]

    def message(lib):
        tensors = [lib.ones(shape, dtype=getattr(lib, str(dt).split(".")[1])) for shape, dt in zip(shapes, dtypes)]
        with pytest.raises(RuntimeError) as caught:
            getattr(lib, op)(*tensors)
        return str(caught.value)

    assert message(genesis) == message(torch)


def test_mm_family_errors():
    check_error(RuntimeError, lambda lib, a, b: lib.mm(a, b), rand(2, 3), rand(3))
    check_error(RuntimeError, lambda lib, a, b: lib.mm(a, b), rand(2, 3), rand(2, 3))
    check_error(RuntimeError, lambda lib, a, b: lib.bmm(a, b), rand(2, 3), rand(3, 4))
    check_error(RuntimeError, lambda lib, a, b: lib.bmm(a, b), rand(2, 2, 3), rand(3, 3, 4))
    check_error(RuntimeError, lambda lib, a, b: lib.bmm(a, b), rand(2, 2, 3), rand(2, 4, 4))
    check_error(RuntimeError, lambda lib, a, v: lib.mv(a, v), rand(2, 3), rand(2))
    check_error(RuntimeError, lambda lib, a, v: lib.mv(a, v), rand(2, 3), rand(2, 3))
    check_error(RuntimeError, lambda lib, a, b: lib.dot(a, b), rand(3), rand(4))
    check_error(RuntimeError, lambda lib, a, b: lib.dot(a, b), rand(3, 1), rand(3))
    check_error(RuntimeError, lambda lib, a, b: lib.outer(a, b), rand(3, 1), rand(3))


EINSUM = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ij,jk", [(2, 3), (3, 4)]),
    ("bij,bjk->bik", [(5, 2, 3), (5, 3, 4)]),
    ("i,i->", [(4,), (4,)]),
    ("i,j->ij", [(3,), (4,)]),
    ("ii->i", [(3, 3)]),
    ("ii", [(3, 3)]),
    ("ij->ji", [(2, 3)]),
    ("ij->", [(2, 3)]),
    ("ijk->kj", [(2, 3, 4)]),
    ("...ij,...jk->...ik", [(2, 5, 2, 3), (5, 3, 4)]),
    ("b...d,b...d->b...", [(2, 3, 4), (2, 3, 4)]),
    ("bhqd,bhkd->bhqk", [(2, 3, 4, 5), (2, 3, 6, 5)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
    ("ab,cd->abcd", [(2, 3), (4, 1)]),
    ("i,i,i->i", [(3,), (3,), (3,)]),
    ("bij,jk->bik", [(1, 2, 3), (3, 4)]),
    ("ij,ij->ij", [(2, 3), (1, 3)]),
    ("ba", [(2, 3)]),
    ("iij->j", [(3, 3, 2)]),
    ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]),
    ("...,...->...", [(2, 3), (3,)]),
    ("a...b->b...a", [(2, 3, 4, 5)]),
    ("ijk,ikl->ijl", [(2, 0, 3), (2, 3, 4)]),
    ("ij,jk,kl,lm->im", [(2, 3), (3, 4), (4, 5), (5, 2)]),
]


@pytest.mark.parametrize("equation,shapes", EINSUM, ids=[e for e, _ in EINSUM])
def test_einsum(equation, shapes):
    operands = [rand(*s, seed=30 + i) for i, s in enumerate(shapes)]
    check(lambda lib, *ops: lib.einsum(equation, *ops), *operands)
    check(lambda lib, *ops: lib.einsum(equation, list(ops)), *operands)


def test_einsum_noncontiguous_and_errors():
    check(lambda lib, a, b: lib.einsum("ij,jk->ik", a.mT, b[:, ::2]), rand(3, 2, seed=40), rand(3, 8, seed=41))
    check_error(RuntimeError, lambda lib, a: lib.einsum("ijk->i", a), rand(2, 3))
    check_error(RuntimeError, lambda lib, a, b: lib.einsum("ij,jk->ik", a, b), rand(2, 3), rand(4, 5),
                match="einsum.*3|einsum.*4")
    check_error(RuntimeError, lambda lib, a: lib.einsum("ij,jk->ik", a), rand(2, 3))


def test_gram_matrix_gradient_has_torchs_rounding():
    # The gradient of f @ f.T through the transposed operand is computed transposed, as torch's mm backward does:
    # on the CPU (the same products) it equals torch's bit for bit; an LBFGS loop on a Gram loss amplifies any
    # last-bit difference.
    for dtype in (torch.float32, torch.float64):
        gen = torch.Generator().manual_seed(0)
        f = torch.randn(8, 144, generator=gen, dtype=dtype)
        go = torch.randn(8, 8, generator=gen, dtype=dtype)
        ft = f.clone().requires_grad_()
        ft.mm(ft.t()).backward(go)
        fg = to_genesis(f, requires_grad=True)
        fg.mm(fg.t()).backward(to_genesis(go))
        exact = {"rtol": 0, "atol": 0} if DEVICE == "cpu" else {}
        assert_same(fg.grad, ft.grad, what=f"Gram gradient {dtype}", **exact)
    check(lambda lib, a, b: a.t() @ b.t(), rand(4, 3, seed=30), rand(5, 4, seed=31))


def test_einsum_sublist_form():
    a, b = rand(2, 3, seed=5), rand(3, 4, seed=6)
    check(lambda lib, a: lib.einsum(a, [0, 1], a, [0, 1], [0]), a)
    check(lambda lib, a, b: lib.einsum(a, [0, 1], b, [1, 2]), a, b)
    check(lambda lib, a, b: lib.einsum(a, [Ellipsis, 1], b, [1, 2], [Ellipsis, 2]), a, b)
    check(lambda lib, a: lib.einsum(a, [0, 1], [1]), a)
