"""The backend contract: every backend implements every primitive of ``genesis._impl.contract.PRIMITIVES``, with
the parameters listed there.

The CPU backend is imported. The CUDA backend is imported where a GPU is present; elsewhere its source is parsed
(following its package's imports to the module of each primitive), so a missing primitive or a signature that drifted
from the contract shows on any machine. The op lists
(UNARY_OPS, BINARY_OPS, REDUCE_OPS) are run through the backend of the test device and compared with torch.
"""

from __future__ import annotations

import ast
import inspect
import math
from pathlib import Path
from typing import Any

import pytest
import torch

import genesis
from genesis._impl import contract
from genesis.device import device as Device
from genesis.ndarray import NDArray
from tests.helpers import DEVICE, TORCH_DTYPE, assert_same, to_genesis, to_torch

PACKAGE = Path(genesis.__file__).parent
CUDA_PACKAGE = PACKAGE / "_impl" / "cuda"


def _contract_parameters(name: str) -> list[str]:
    """The parameter names the contract lists for ``name``: its entry starts with ``(a, b, ...):``."""
    entry = contract.PRIMITIVES[name]
    return [p.strip() for p in entry[1:entry.index("):")].split(",")]


def _cpu_parameters(name: str) -> list[str]:
    import genesis._impl.cpu as cpu

    return list(inspect.signature(getattr(cpu, name)).parameters)


def _ast_parameters(node: ast.FunctionDef) -> list[str]:
    args = node.args
    names = [a.arg for a in args.posonlyargs + args.args]
    if args.vararg:
        names.append(args.vararg.arg)
    names += [a.arg for a in args.kwonlyargs]
    if args.kwarg:
        names.append(args.kwarg.arg)
    return names


def _module_definitions(path: Path, memo: dict[Path, dict[str, ast.AST]] | None = None) -> dict[str, ast.AST]:
    """Top-level names a module defines, or imports from a module of the package (followed to the definition)."""
    memo = memo if memo is not None else {}
    if path in memo:
        return memo[path]
    names: dict[str, ast.AST] = memo.setdefault(path, {})
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names[node.name] = node
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    names[target.id] = node
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names[node.target.id] = node
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            defined: dict[str, ast.AST] = {}
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("genesis."):
                source = PACKAGE.parent / Path(*node.module.split("."))
                source = source.with_suffix(".py") if source.with_suffix(".py").exists() else source / "__init__.py"
                if source.exists():
                    defined = _module_definitions(source, memo)
            for alias in node.names:
                if alias.name == "*":
                    names.update(defined)
                else:
                    names[alias.asname or alias.name.split(".")[0]] = defined.get(alias.name, node)
    return names


# ------------------------------------------------------------------ the list itself

def test_every_primitive_lists_its_parameters_and_what_it_computes() -> None:
    malformed = [name for name, entry in contract.PRIMITIVES.items()
                 if not entry.startswith("(") or "): " not in entry or not entry.split("): ", 1)[1].strip()]
    assert not malformed, f"contract entries not written as '(parameters): what it computes': {malformed}"


def test_op_lists_are_unique_and_comparisons_are_binary_ops() -> None:
    for ops in (contract.UNARY_OPS, contract.BINARY_OPS, contract.REDUCE_OPS):
        assert len(set(ops)) == len(ops)
    assert set(contract.COMPARISON_OPS) <= set(contract.BINARY_OPS)


# ------------------------------------------------------------------ every backend implements every primitive

def test_every_kernel_the_registry_names_is_in_the_contract() -> None:
    """The op registry's in-place kernels run on the backends' ``unary``/``binary``: their op lists must hold them."""
    from genesis.ops import registry

    missing = {name: k for name, k in registry.kernels().items()
               if k not in contract.UNARY_OPS and k not in contract.BINARY_OPS}
    assert not missing, f"registry ops whose kernel the backend contract lacks: {missing}"


def test_no_cuda_backend_module_is_named_like_a_primitive() -> None:
    """The package ``genesis._impl.cuda`` is the backend: a submodule named like a primitive would be shadowed."""
    modules = {p.stem for p in CUDA_PACKAGE.glob("*.py")} | {p.name for p in CUDA_PACKAGE.iterdir() if p.is_dir()}
    assert not modules & set(contract.PRIMITIVES), modules & set(contract.PRIMITIVES)


def test_cpu_backend_implements_every_primitive() -> None:
    import genesis._impl.cpu as cpu

    missing = [name for name in contract.PRIMITIVES if not callable(getattr(cpu, name, None))]
    assert not missing, f"CPU backend lacks primitives: {missing}"


def test_cpu_backend_signatures_match_the_contract() -> None:
    drifted = {name: (_contract_parameters(name), _cpu_parameters(name)) for name in contract.PRIMITIVES
               if _cpu_parameters(name) != _contract_parameters(name)}
    assert not drifted, f"signatures differ from the contract (contract, cpu): {drifted}"


def test_cuda_backend_implements_every_primitive() -> None:
    if genesis.cuda.is_available():
        import genesis._impl.cuda as cuda_backend

        missing = [name for name in contract.PRIMITIVES if not callable(getattr(cuda_backend, name, None))]
    else:
        names = _module_definitions(CUDA_PACKAGE / "__init__.py")
        missing = [name for name in contract.PRIMITIVES if name not in names]
    assert not missing, f"CUDA backend lacks primitives: {missing}"


def test_cuda_backend_signatures_match_the_contract() -> None:
    """The layers above call primitives positionally and by keyword, so every backend names arguments alike."""
    names = _module_definitions(CUDA_PACKAGE / "__init__.py")
    not_functions = [name for name in contract.PRIMITIVES if not isinstance(names.get(name), ast.FunctionDef)]
    assert not not_functions, f"CUDA primitives not found as functions in their modules: {not_functions}"
    drifted = {name: (_contract_parameters(name), _ast_parameters(names[name])) for name in contract.PRIMITIVES
               if _ast_parameters(names[name]) != _contract_parameters(name)}
    assert not drifted, f"signatures differ from the contract (contract, cuda): {drifted}"


def test_the_device_backend_is_the_module_for_its_device() -> None:
    dev = Device(DEVICE)
    backend = dev.backend
    assert backend.__name__ == f"genesis._impl.{dev.type}"
    assert all(callable(getattr(backend, name, None)) for name in contract.PRIMITIVES)


def test_torch_is_imported_only_by_the_cpu_backend() -> None:
    """Layering: nothing above the backends (and not the CUDA backend) imports torch. The CPU backend's collective
    engine (torch.distributed's gloo over the CPU backend's torch tensors) is part of the CPU backend."""
    offenders = []
    cpu_backend = PACKAGE / "_impl" / "cpu"
    for path in sorted(PACKAGE.rglob("*.py")):
        if cpu_backend in path.parents or path == PACKAGE / "_impl" / "distributed_gloo.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            modules = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            if any(m == "torch" or m.startswith("torch.") for m in modules):
                offenders.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}")
    assert not offenders, f"torch imported outside the CPU backend: {offenders}"


# ------------------------------------------------------------------ every listed op runs on the test device

def _backend() -> Any:
    return Device(DEVICE).backend


def _nd(t: torch.Tensor) -> NDArray:
    return to_genesis(t, requires_grad=False).ndarray


TORCH_UNARY = {
    "neg": torch.neg, "abs": torch.abs, "exp": torch.exp, "exp2": torch.exp2, "log": torch.log, "log2": torch.log2,
    "log1p": torch.log1p, "expm1": torch.expm1, "sqrt": torch.sqrt, "rsqrt": torch.rsqrt,
    "reciprocal": torch.reciprocal, "sin": torch.sin, "cos": torch.cos, "tan": torch.tan, "tanh": torch.tanh,
    "sigmoid": torch.sigmoid, "relu": torch.relu, "gelu": torch.nn.functional.gelu,
    "gelu_tanh": lambda x: torch.nn.functional.gelu(x, approximate="tanh"), "silu": torch.nn.functional.silu,
    "softplus": torch.nn.functional.softplus, "erf": torch.erf, "sign": torch.sign, "floor": torch.floor,
    "ceil": torch.ceil, "round": torch.round, "trunc": torch.trunc, "isnan": torch.isnan, "isinf": torch.isinf,
    "logical_not": torch.logical_not, "bitwise_not": torch.bitwise_not,
    "asin": torch.asin, "acos": torch.acos, "atan": torch.atan, "sinh": torch.sinh, "cosh": torch.cosh,
    "asinh": torch.asinh, "acosh": torch.acosh, "atanh": torch.atanh, "erfc": torch.erfc, "erfinv": torch.erfinv,
    "lgamma": torch.lgamma, "digamma": torch.digamma, "trigamma": lambda x: torch.polygamma(1, x), "i0": torch.i0,
    "i1": torch.special.i1, "signbit": torch.signbit,
}


def test_every_unary_op_has_a_torch_reference_here() -> None:
    assert set(TORCH_UNARY) == set(contract.UNARY_OPS)


@pytest.mark.parametrize("op", contract.UNARY_OPS)
def test_backend_unary_ops(op: str) -> None:
    if op == "bitwise_not":
        x = torch.tensor([[0, 1, -7], [12, 255, -128]], dtype=torch.int64)
    elif op == "logical_not":
        x = torch.tensor([[True, False, True], [False, False, True]])
    else:
        x = torch.tensor([[0.25, 1.5, 2.75], [-0.5, -1.25, 3.5]], dtype=torch.float32)
        if op in ("log", "log2", "sqrt", "rsqrt", "log1p"):
            x = x.abs() + 0.1
        if op in ("isnan", "isinf"):
            x = torch.tensor([[0.0, math.nan, math.inf], [-math.inf, 1.0, math.nan]])
    out = _backend().unary(op, _nd(x), None)
    assert_same(genesis.Tensor._wrap(out), TORCH_UNARY[op](x), what=f"unary {op}")


def test_backend_unary_writes_into_strided_out() -> None:
    x = torch.tensor([[0.25, 1.5], [-0.5, 3.5]], dtype=torch.float32)
    out = genesis.zeros(2, 2, device=DEVICE)
    _backend().unary("exp", _nd(x), out.ndarray.transpose(0, 1))
    assert_same(out, torch.exp(x).T)


TORCH_BINARY = {
    "add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div, "floor_divide": torch.floor_divide,
    "remainder": torch.remainder, "pow": torch.pow, "maximum": torch.maximum, "minimum": torch.minimum,
    "atan2": torch.atan2, "eq": torch.eq, "ne": torch.ne, "lt": torch.lt, "le": torch.le, "gt": torch.gt,
    "ge": torch.ge, "logical_and": torch.logical_and, "logical_or": torch.logical_or,
    "logical_xor": torch.logical_xor, "bitwise_and": torch.bitwise_and, "bitwise_or": torch.bitwise_or,
    "bitwise_xor": torch.bitwise_xor, "hypot": torch.hypot, "copysign": torch.copysign,
    "logaddexp": torch.logaddexp, "logaddexp2": torch.logaddexp2,
    # torch's CPU float32 exact gelu_backward needs operands of one shape
    "gelu_backward": lambda g, x: torch.ops.aten.gelu_backward(*torch.broadcast_tensors(g, x), approximate="none"),
    "gelu_tanh_backward": lambda g, x: torch.ops.aten.gelu_backward(g, x, approximate="tanh"),
    "silu_backward": torch.ops.aten.silu_backward,
    "relu_backward": lambda g, out: torch.ops.aten.threshold_backward(*torch.broadcast_tensors(g, out), 0),
}
ACTIVATION_GRADIENTS = ("gelu_backward", "gelu_tanh_backward", "silu_backward", "relu_backward")


def test_every_binary_op_has_a_torch_reference_here() -> None:
    assert set(TORCH_BINARY) == set(contract.BINARY_OPS)


# Bitwise ops exist for integers only; atan2, hypot, copysign, logaddexp and true division of integers are promoted
# to float above the backend; activation gradients are for floating arrays only.
BINARY_CASES = [(op, dtype) for op in contract.BINARY_OPS for dtype in (torch.float32, torch.int64)
                if not (op.startswith("bitwise") and dtype.is_floating_point)
                and not (op in ("atan2", "div", "hypot", "copysign", "logaddexp", "logaddexp2",
                                *ACTIVATION_GRADIENTS) and not dtype.is_floating_point)]


@pytest.mark.parametrize(("op", "dtype"), BINARY_CASES)
def test_backend_binary_ops(op: str, dtype: torch.dtype) -> None:
    a = torch.tensor([[3, -7, 8], [5, 0, -2]]).to(dtype)
    b = torch.tensor([[2, 3, -3]]).to(dtype)  # broadcast along the first dim
    if op == "pow" and not dtype.is_floating_point:
        b = b.abs()
    out = genesis.Tensor._wrap(_backend().binary(op, _nd(a), _nd(b), None))
    expected = TORCH_BINARY[op](a, b)
    assert out.dtype is (genesis.bool if op in contract.COMPARISON_OPS else genesis.float32
                         if dtype.is_floating_point else genesis.int64)
    assert_same(out, expected, what=f"binary {op}")


# Parameters for each activation of contract.ACTIVATION_OPS, and torch's op with those parameters.
ACTIVATIONS = {
    "elu": ((0.7, 1.2, 0.9), torch.ops.aten.elu), "hardswish": ((), torch.ops.aten.hardswish),
    "hardsigmoid": ((), torch.ops.aten.hardsigmoid), "hardtanh": ((-0.5, 0.7), torch.ops.aten.hardtanh),
    "softplus": ((2.0, 3.0), torch.ops.aten.softplus), "softshrink": ((0.4,), torch.ops.aten.softshrink),
    "hardshrink": ((0.4,), torch.ops.aten.hardshrink), "threshold": ((0.1, -2.0), torch.ops.aten.threshold),
    "mish": ((), torch.ops.aten.mish), "log_sigmoid": ((), torch.nn.functional.logsigmoid),
    "logit": ((0.1,), torch.logit),
}


def test_every_activation_has_a_torch_reference_here() -> None:
    assert {op: len(params) for op, (params, _) in ACTIVATIONS.items()} == {
        op: len(names) for op, names in contract.ACTIVATION_OPS.items()}


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.bfloat16])
@pytest.mark.parametrize("op", sorted(contract.ACTIVATION_OPS))
def test_backend_activations(op: str, dtype: torch.dtype) -> None:
    # x transposed in memory (a dense layout the kernel walks flat, its result laid out alike); gradients laid out
    # as x, laid out otherwise, and one element broadcast (a sum's).
    params, fn = ACTIVATIONS[op]
    gen = torch.Generator().manual_seed(0)
    x = (torch.rand(64, 4, generator=gen, dtype=torch.float64) * 16 - 8).to(dtype).T
    if op == "logit":  # inside and around [eps, 1 - eps]
        x = x / 14 + 0.5
    g = torch.randn(4, 64, generator=gen, dtype=torch.float64).to(dtype)
    backend = _backend()
    out = genesis.Tensor._wrap(backend.activation(op, _nd(x), params))
    assert_same(out, fn(x, *params), what=op)
    xr = x.clone().requires_grad_()
    for grad in (g.T.contiguous().T, g, g[:1, :1].expand(4, 64)):
        (ref,) = torch.autograd.grad(fn(xr, *params), xr, grad)
        got = genesis.Tensor._wrap(backend.activation_backward(op, _nd(grad), _nd(x), params))
        assert_same(got, ref, what=f"{op} gradient")


@pytest.mark.parametrize("complete", [False, True])
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4), (2, 6, 2)])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_backend_qr(shape: tuple, complete: bool, dtype: torch.dtype) -> None:
    # LAPACK's factors, signs included (cuSOLVER's geqrf and orgqr on cuda).
    a = torch.randn(*shape, generator=torch.Generator().manual_seed(0), dtype=torch.float64).to(dtype)
    Q, R = _backend().qr(_nd(a), complete)
    ref = torch.linalg.qr(a, mode="complete" if complete else "reduced")
    assert_same(genesis.Tensor._wrap(Q), ref.Q, what="Q")
    assert_same(genesis.Tensor._wrap(R), ref.R, what="R")


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.bfloat16])
@pytest.mark.parametrize("dim", [0, 1])
def test_backend_glu(dim: int, dtype: torch.dtype) -> None:
    gen = torch.Generator().manual_seed(0)
    x = (torch.rand(6, 8, generator=gen, dtype=torch.float64) * 12 - 6).to(dtype)
    g = torch.randn(*((3, 8) if dim == 0 else (6, 4)), generator=gen, dtype=torch.float64).to(dtype)
    backend = _backend()
    assert_same(genesis.Tensor._wrap(backend.glu(_nd(x), dim)), torch.ops.aten.glu(x, dim), what="glu")
    got = genesis.Tensor._wrap(backend.glu_backward(_nd(g), _nd(x), dim))
    assert_same(got, torch.ops.aten.glu_backward(g, x, dim), what="glu_backward")


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.bfloat16])
def test_backend_binary_cross_entropy(dtype: torch.dtype) -> None:
    gen = torch.Generator().manual_seed(0)
    p = torch.rand(5, 7, generator=gen, dtype=torch.float64)
    p[0, :3] = torch.tensor([0.0, 1.0, 1e-30])  # logs clamped at -100, the gradient's floor
    p, t = p.to(dtype), torch.rand(5, 7, generator=gen, dtype=torch.float64).to(dtype)
    g = torch.randn(5, 7, generator=gen, dtype=torch.float64).to(dtype)
    backend = _backend()
    out = genesis.Tensor._wrap(backend.binary_cross_entropy(_nd(p), _nd(t)))
    assert_same(out, torch.ops.aten.binary_cross_entropy(p, t, None, 0), what="binary_cross_entropy")
    got = genesis.Tensor._wrap(backend.binary_cross_entropy_backward(_nd(g), _nd(p), _nd(t)))
    assert_same(got, torch.ops.aten.binary_cross_entropy_backward(g, p, t, None, 0), what="its gradient")


@pytest.mark.parametrize("dtype", [torch.float64, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("op", ACTIVATION_GRADIENTS)
def test_backend_activation_gradients(op: str, dtype: torch.dtype) -> None:
    # Half types compute in float32 and round once, as torch's kernels.
    gen = torch.Generator().manual_seed(0)
    g = torch.randn(4, 64, generator=gen, dtype=torch.float64).to(dtype)
    x = (torch.rand(4, 64, generator=gen, dtype=torch.float64) * 60 - 30).to(dtype)
    out = genesis.Tensor._wrap(_backend().binary(op, _nd(g), _nd(x.T.contiguous().T), None))
    assert_same(out, TORCH_BINARY[op](g, x), what=f"binary {op}")


@pytest.mark.parametrize("op", ["add", "mul", "sub", "maximum", "lt"])
def test_backend_binary_with_python_number(op: str) -> None:
    a = torch.tensor([[1.5, -2.0], [0.25, 4.0]])
    out = genesis.Tensor._wrap(_backend().binary(op, _nd(a), 0.5, None))
    assert_same(out, TORCH_BINARY[op](a, torch.tensor(0.5)), what=f"binary {op} with a number")


def _torch_prod(x: torch.Tensor, dim: tuple, keepdim: bool) -> torch.Tensor:
    for d in sorted(dim, reverse=True):  # torch.prod takes one dim at a time
        x = torch.prod(x, dim=d, keepdim=keepdim)
    return x


TORCH_REDUCE = {"sum": torch.sum, "mean": torch.mean, "prod": _torch_prod, "amax": torch.amax, "amin": torch.amin,
                "any": torch.any, "all": torch.all}


@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("dims", [(0,), (1, 2), (0, 1, 2)])
@pytest.mark.parametrize("op", contract.REDUCE_OPS)
def test_backend_reduce_ops(op: str, dims: tuple, keepdim: bool) -> None:
    assert set(TORCH_REDUCE) == set(contract.REDUCE_OPS)
    x = torch.tensor([[[1.5, -2.0, 0.5], [3.0, 0.25, -1.0]], [[0.0, 2.0, 1.0], [-0.5, 1.25, 2.5]]])
    if op in ("any", "all"):
        x = x > 0
    out = genesis.Tensor._wrap(_backend().reduce(op, _nd(x), dims, keepdim))
    expected = TORCH_REDUCE[op](x, dim=dims, keepdim=keepdim)
    assert_same(out, expected, what=f"reduce {op}")


def test_backend_round_trips_every_dtype() -> None:
    backend = _backend()
    for g_dtype, t_dtype in TORCH_DTYPE.items():
        values = torch.tensor([[0, 1, 2], [3, 4, 5]]).to(t_dtype)
        nd = _nd(values)
        assert nd.dtype is g_dtype
        assert torch.equal(to_torch(genesis.Tensor._wrap(backend.contiguous(nd.transpose(0, 1)))), values.T)
        assert torch.equal(to_torch(genesis.Tensor._wrap(backend.cast(nd, genesis.float64))),
                           (values.real if t_dtype.is_complex else values).to(torch.float64))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_backend_leaky_relu_and_its_gradient(dtype: torch.dtype) -> None:
    gen = torch.Generator().manual_seed(0)
    x = (torch.rand(4, 64, generator=gen, dtype=torch.float64) * 6 - 3).to(dtype)
    g = torch.randn(4, 64, generator=gen, dtype=torch.float64).to(dtype)
    out = genesis.Tensor._wrap(_backend().leaky_relu(_nd(x.T.contiguous().T), 0.2))
    assert_same(out, torch.nn.functional.leaky_relu(x, 0.2), what="leaky_relu")
    grad = genesis.Tensor._wrap(_backend().leaky_relu_backward(_nd(g), _nd(x), 0.2))
    assert_same(grad, torch.ops.aten.leaky_relu_backward(g, x, 0.2, False), what="leaky_relu_backward")
