"""Complex dtypes (complex64, complex128) against torch: promotion, creation, printing, the complex ops and
arithmetic with their gradients (torch's conjugate Wirtinger convention), on every device the suite runs on; on cuda,
the error for an op without a complex kernel is checked."""

from __future__ import annotations

import pytest
import torch

import genesis
from tests.helpers import DEVICE, assert_same, check, check_error, to_genesis


def crand(*shape: int, dtype: torch.dtype = torch.complex128, seed: int = 0, requires_grad: bool = True
          ) -> torch.Tensor:
    """A reproducible random complex torch tensor."""
    gen = torch.Generator().manual_seed(seed)
    parts = torch.randn((*shape, 2), generator=gen, dtype=torch.float64)
    return torch.view_as_complex(parts).to(dtype).requires_grad_(requires_grad)


def rrand(*shape: int, dtype: torch.dtype = torch.float64, seed: int = 1, requires_grad: bool = True) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=gen, dtype=torch.float64).to(dtype).requires_grad_(requires_grad)


# ---------------------------------------------------------------- dtypes and promotion (no tensors: every device)

REAL = ("bool", "uint8", "int8", "int16", "int32", "int64", "bfloat16", "float32", "float64")
COMPLEX = ("complex64", "complex128")


@pytest.mark.parametrize("a", REAL + COMPLEX)
@pytest.mark.parametrize("b", COMPLEX)
def test_promote_types_as_torch(a: str, b: str) -> None:
    got = genesis.promote_types(getattr(genesis, a), getattr(genesis, b))
    assert got.name == str(torch.promote_types(getattr(torch, a), getattr(torch, b))).replace("torch.", "")
    assert genesis.promote_types(getattr(genesis, b), getattr(genesis, a)) is got


def test_dtype_properties() -> None:
    assert genesis.complex64.is_complex and not genesis.complex64.is_floating_point
    assert genesis.cfloat is genesis.complex64 and genesis.cdouble is genesis.complex128
    assert genesis.complex128.itemsize == 16 and repr(genesis.complex64) == "genesis.complex64"
    assert genesis.finfo(genesis.complex64).eps == torch.finfo(torch.complex64).eps
    assert not genesis.float32.is_complex


# ---------------------------------------------------------------- creation, conversion, printing

@pytest.mark.parametrize("data", [[1 + 2j, 3.5, -1], 2 - 1j, [[1j, 2], [3, 4.5 - 0.25j]], [1, 2j, True]])
def test_tensor_from_python_complex(data: object) -> None:
    assert_same(genesis.tensor(data), torch.tensor(data))
    assert_same(genesis.tensor(data, dtype=genesis.complex128), torch.tensor(data, dtype=torch.complex128))


def test_factories_and_joins() -> None:
    assert_same(genesis.full((2, 3), 1 - 2j), torch.full((2, 3), 1 - 2j))
    assert_same(genesis.zeros(2, dtype=genesis.complex128), torch.zeros(2, dtype=torch.complex128))
    assert_same(genesis.ones(2) * genesis.tensor(1j), torch.ones(2) * torch.tensor(1j))
    assert_same(genesis.cat([genesis.tensor([1j]), genesis.tensor([2 + 0j])]),
                torch.cat([torch.tensor([1j]), torch.tensor([2 + 0j])]))
    check(lambda lib, z: lib.stack([z, z * 2])[:, 1:], crand(3))
    check(lambda lib, z: z[lib.tensor([2, 0])], crand(3))


def test_item_to_and_numpy() -> None:
    t = torch.tensor([1.5, -2.0, 0.25])
    g = to_genesis(t)
    assert_same(g.to(genesis.complex64), t.to(torch.complex64))
    assert_same(g.to(genesis.complex128), t.to(torch.complex128))
    z = genesis.tensor([1 + 2j])
    assert z.item() == 1 + 2j and isinstance(z.item(), complex)
    assert z.is_complex() and genesis.is_complex(z) and not g.is_complex()
    assert_same(z.to(genesis.float32), torch.tensor([1 + 2j]).real)  # the real part, as torch's cast
    assert z.numpy().dtype.name == "complex64"
    # complex(t) reads any one-element tensor; float() and int() of a complex one fail as torch's
    assert complex(genesis.tensor(1 + 2j)) == 1 + 2j and complex(genesis.tensor([3])) == 3 + 0j
    for convert in (float, int):
        check_error(RuntimeError, lambda lib, z, convert=convert: convert(z), torch.tensor(1 + 2j))
    check_error(ValueError, lambda lib, z: complex(z), torch.tensor([1j, 2j]))


@pytest.mark.parametrize("data,dtype", [
    ([1 + 2j, -3.5 - 1j], None), ([1 + 2j, 3 - 1j], None), ([1e-5 + 2j, 3000 - 1j], None), (1 + 2j, None),
    ([[1.25 + 2j, 3 - 1j], [0, 1j]], "complex128"), ([0.1 * k - 0.3j * k for k in range(30)], None),
])
def test_repr_as_torch(data: object, dtype: str | None) -> None:
    g = genesis.tensor(data, dtype=getattr(genesis, dtype) if dtype else None)
    t = torch.tensor(data, dtype=getattr(torch, dtype) if dtype else None)
    assert repr(g) == repr(t).replace("torch.", "genesis.")


def test_requires_grad_and_repr_of_graph_nodes() -> None:
    z = genesis.tensor([1 + 1j], requires_grad=True)
    assert z.requires_grad and "requires_grad=True" in repr(z)
    with pytest.raises(RuntimeError, match="floating point and complex"):
        genesis.tensor([1, 2]).requires_grad_()


# ---------------------------------------------------------------- ops and gradients

@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
@pytest.mark.parametrize("dt", [torch.complex64, torch.complex128])
def test_arithmetic_complex_complex(op: str, dt: torch.dtype) -> None:
    check(lambda lib, a, b: getattr(lib, op)(a, b), crand(3, 4, dtype=dt), crand(4, dtype=dt, seed=2))


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
@pytest.mark.parametrize("cdt,rdt", [(torch.complex64, torch.float32), (torch.complex64, torch.float64),
                                     (torch.complex128, torch.float32), (torch.complex128, torch.float64)])
def test_arithmetic_promotes_real_with_complex(op: str, cdt: torch.dtype, rdt: torch.dtype) -> None:
    check(lambda lib, a, b: getattr(lib, op)(a, b), crand(3, 2, dtype=cdt), rrand(3, 2, dtype=rdt), rtol=1e-5)
    check(lambda lib, a, b: getattr(lib, op)(b, a), crand(3, 2, dtype=cdt), rrand(3, 2, dtype=rdt), rtol=1e-5)
    # A zero-dim complex tensor against a dimensioned real one (torch's combine_categories).
    check(lambda lib, a, b: getattr(lib, op)(b, a), crand(dtype=cdt), rrand(3, dtype=rdt), rtol=1e-5)



@pytest.mark.parametrize("op", ["mul", "div", "add"])
def test_complex_parameter_operands_conjugate_in_backward(op: str) -> None:
    # A complex nn.Parameter (a Tensor subclass) as one factor: the other factor's gradient uses its conjugate.
    z, a, b = crand(3, 4), rrand(3, 4), rrand(3, 4, seed=2)
    t_z = torch.nn.Parameter(z.detach().clone())
    g_z = genesis.nn.Parameter(to_genesis(z, requires_grad=False))
    t_a, t_b = a.detach().clone().requires_grad_(), b.detach().clone().requires_grad_()
    g_a, g_b = to_genesis(a), to_genesis(b)
    t_out = getattr(torch, op)(t_z, torch.complex(t_a, t_b))
    g_out = getattr(genesis, op)(g_z, genesis.complex(g_a, g_b))
    assert_same(g_out, t_out)
    (t_out.real.sum() + 2 * t_out.imag.sum()).backward()
    (g_out.real.sum() + 2 * g_out.imag.sum()).backward()
    for g, t in ((g_z, t_z), (g_a, t_a), (g_b, t_b)):
        assert_same(g.grad, t.grad)

@pytest.mark.parametrize("rdt", [torch.float32, torch.float64, torch.int64])
def test_python_complex_scalars(rdt: torch.dtype) -> None:
    x = rrand(3, dtype=torch.float64, requires_grad=False).to(rdt) if rdt is torch.int64 else rrand(3, dtype=rdt)
    check(lambda lib, a: a * (2 - 1j) + 1j, x)
    check(lambda lib, a: (0.5 + 1j) / (a + 3) - (1 + 1j), x)
    check(lambda lib, z: 1j * z / (2 + 1j) - z * 0.5, crand(4, dtype=torch.complex64))


@pytest.mark.parametrize("fn", [
    lambda lib, z: lib.exp(z), lambda lib, z: z.abs(), lambda lib, z: lib.abs(z), lambda lib, z: lib.angle(z),
    lambda lib, z: z.conj(), lambda lib, z: lib.conj_physical(z), lambda lib, z: z.resolve_conj(),
    lambda lib, z: z.real, lambda lib, z: z.imag, lambda lib, z: lib.real(z) * lib.imag(z),
    lambda lib, z: lib.view_as_real(z), lambda lib, z: z.sum(), lambda lib, z: z.sum(dim=1),
    lambda lib, z: z.mean(), lambda lib, z: z.mean(dim=0, keepdim=True), lambda lib, z: lib.sgn(z),
    lambda lib, z: -z, lambda lib, z: z.T, lambda lib, z: z.mH, lambda lib, z: z.reshape(-1)[1:4],
], ids=["exp", "abs", "abs_fn", "angle", "conj", "conj_physical", "resolve_conj", "real", "imag", "real_imag",
        "view_as_real", "sum", "sum_dim", "mean", "mean_dim", "sgn", "neg", "T", "mH", "reshape_slice"])
@pytest.mark.parametrize("dt", [torch.complex64, torch.complex128])
def test_unary_and_reductions(fn, dt: torch.dtype) -> None:
    check(fn, crand(3, 4, dtype=dt))


@pytest.mark.parametrize("dt", [torch.complex64, torch.complex128])
def test_matmul(dt: torch.dtype) -> None:
    check(lambda lib, a, b: a @ b, crand(2, 3, 4, dtype=dt), crand(4, 5, dtype=dt, seed=3), rtol=1e-4)
    check(lambda lib, a, b: lib.matmul(a, b), crand(4, dtype=dt), crand(4, dtype=dt, seed=3), rtol=1e-4)
    # vdot conjugates its first argument (dot and inner do not)
    check(lambda lib, a, b: lib.vdot(a, b), crand(4, dtype=dt), crand(4, dtype=dt, seed=3), rtol=1e-4)


def test_constructors_and_views() -> None:
    check(lambda lib, a, b: lib.polar(a, b), rrand(5, dtype=torch.float32).abs().detach().requires_grad_(),
          rrand(5, dtype=torch.float32, seed=4))
    check(lambda lib, a, b: lib.complex(a, b), rrand(2, 3), rrand(3, seed=5))
    check(lambda lib, x: lib.view_as_complex(x * 2), rrand(4, 2))
    check(lambda lib, x: lib.view_as_real(lib.view_as_complex(x) * (1 + 1j)).flatten(1), rrand(3, 2, 2))


def test_real_loss_gradients_as_torch() -> None:
    # The losses the issue names: |z * w| summed, and a view_as_real loss.
    check(lambda lib, z, w: (z * w).abs().sum(), crand(6), crand(6, seed=9))
    check(lambda lib, x, w: (lib.view_as_real(lib.view_as_complex(x) * w) ** 2).sum(), rrand(4, 2),
          crand(4, seed=9))
    check(lambda lib, z: lib.view_as_real(lib.exp(z) @ z.conj().T).sum(), crand(3, 3))


@pytest.mark.parametrize("fn", [
    lambda lib, z: lib.linalg.vector_norm(z),
    lambda lib, z: lib.linalg.vector_norm(z, 1, dim=-1),
    lambda lib, z: lib.linalg.vector_norm(z, float("inf")),
    lambda lib, z: lib.linalg.vector_norm(z, 3.0, dim=0, keepdim=True),
    lambda lib, z: z.norm(),
    lambda lib, z: lib.norm(z, p=1),
    lambda lib, z: lib.linalg.norm(z),
    lambda lib, z: lib.linalg.matrix_norm(z),
    lambda lib, z: lib.linalg.matrix_norm(z, float("inf")),
    lambda lib, z: lib.view_as_real(lib.nn.functional.normalize(z, dim=1)),
], ids=["vector2", "vector1_dim", "vector_inf", "vector3", "Tensor.norm", "norm_p1", "linalg.norm", "fro",
        "matrix_inf", "normalize"])
def test_norms_of_complex_tensors(fn) -> None:
    # The norms of a complex tensor are its magnitudes' (real results); gradients as torch's.
    check(fn, crand(3, 4, dtype=torch.complex64))


def test_clip_grad_norm_of_complex_gradients() -> None:
    results = []
    for lib in (torch, genesis):
        p = lib.nn.Parameter(lib.tensor([3 + 4j, 1 - 1j], device=None if lib is torch else DEVICE))
        p.grad = lib.tensor([3 + 4j, 0j], device=None if lib is torch else DEVICE)
        total = lib.nn.utils.clip_grad_norm_([p], max_norm=1.0)
        results.append((total, p.grad))
    (t_total, t_grad), (g_total, g_grad) = results
    assert_same(g_total, t_total, what="total norm")
    assert_same(g_grad, t_grad, what="clipped gradient")


def test_views_share_memory() -> None:
    x = genesis.tensor([[1.0, 2.0], [3.0, 4.0]])
    z = genesis.view_as_complex(x)
    assert list(z.numpy()) == [1 + 2j, 3 + 4j]
    x[0, 1] = 7.0
    assert z.numpy()[0] == 1 + 7j
    r = genesis.view_as_real(z)
    r[1, 0] = -1.0
    assert x.numpy()[1, 0] == -1.0 and z.real.numpy()[1] == -1.0


def test_real_tensors_unchanged() -> None:
    x = to_genesis(rrand(3))
    assert x.real is x and x.conj() is x and x.resolve_conj() is x and not x.is_conj()
    assert_same(genesis.isreal(genesis.tensor([1 + 0j, 1j])), torch.isreal(torch.tensor([1 + 0j, 1j])))
    assert_same(genesis.isreal(x), torch.isreal(rrand(3)))


def test_bad_input_raises_as_torch() -> None:
    check_error(RuntimeError, lambda lib, x: lib.view_as_complex(x), rrand(3, 3), match="last dimension of size 2")
    check_error(RuntimeError, lambda lib, x: lib.view_as_complex(x), rrand(3, 2, dtype=torch.float64).to(
        torch.int64), match="float and double")
    check_error(RuntimeError, lambda lib, x: lib.view_as_complex(x.T), rrand(2, 4), match="stride")
    check_error(RuntimeError, lambda lib, x: lib.view_as_real(x), rrand(3, 2), match="complex tensors")
    check_error(RuntimeError, lambda lib, x: x.imag, rrand(3), match="non-complex")
    check_error(RuntimeError, lambda lib, z: z.abs_(), crand(3, requires_grad=False),
                match="ComplexFloat|ComplexDouble")
    check_error(RuntimeError, lambda lib, a, b: lib.complex(a, b), rrand(2), rrand(2, dtype=torch.float32),
                match="complex")
    check_error(RuntimeError, lambda lib, a, b: lib.polar(a, b), rrand(2), rrand(2, dtype=torch.float32),
                match="polar")


# ---------------------------------------------------------------- ops without a complex kernel on cuda

@pytest.mark.skipif(DEVICE != "cuda", reason="checks the CUDA backend's error for ops it has no complex kernel for")
def test_cuda_names_unsupported_complex_ops() -> None:
    z = genesis.tensor([1 + 2j, -1j], device="cuda")
    for fn, op in ((lambda: z.sqrt(), "sqrt"), (lambda: z.log(), "log"), (lambda: z.prod(), "prod")):
        with pytest.raises(NotImplementedError, match=rf"{op}: not implemented for 'complex64' on cuda"):
            fn()
    assert z.cpu().numpy().tolist() == [1 + 2j, -1j]  # nothing was changed
