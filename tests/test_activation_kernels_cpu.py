"""The activation kernel (``genesis/_impl/cuda/kernels/activation.py``, the CUDA backend's ``activation`` and
``activation_backward``) on a machine without a GPU: every op compiles ahead of time for sm_90 both ways, and its
math runs under the Triton interpreter in float64 against torch's activations and their gradients (with ``tl``
stand-ins for the libdevice calls, which the interpreter cannot run). The kinks, NaN and half precision run on the
GPU suite (``tests/test_nn_functional.py`` with ``GENESIS_TEST_DEVICE=cuda``).
"""

from __future__ import annotations

import pytest

from tests.kernel_modules import LIBDEVICE_STANDINS, ROOT, compile_for_sm90, kernel_modules, run_interpreted

triton = pytest.importorskip("triton", reason="Triton is not installed (pip install triton): kernel checks skipped")

OPS = ("elu", "hardswish", "hardsigmoid", "hardtanh", "softplus", "softshrink", "hardshrink", "threshold", "mish",
       "log_sigmoid", "logit")


@pytest.mark.parametrize("backward", [False, True], ids=["forward", "backward"])
@pytest.mark.parametrize("op", OPS)
def test_activation_kernel_compiles_for_sm90(op: str, backward: bool) -> None:
    kernel = kernel_modules(("activation",))["activation"].activation_kernel
    for ptr, scalar in (("*fp32:16", "fp32"), ("*bf16:16", "fp32"), ("*fp64:16", "fp64")):
        # out, x, grad (an unused int forward), n, three parameters; OP, BACKWARD, G_ONE, BLOCK, I64
        types_ = (ptr, ptr, ptr if backward else "i32", "i32", scalar, scalar, scalar)
        compile_for_sm90(kernel, types_, (op, backward, False, 1024, False))
    if backward:  # the gradient of a sum: one element broadcast
        compile_for_sm90(kernel, ("*fp32:16",) * 3 + ("i32", "fp32", "fp32", "fp32"), (op, True, True, 1024, False))


_INTERPRETED = LIBDEVICE_STANDINS + r"""
import importlib, sys
import torch
from tests.kernel_modules import bare_cuda_package
bare_cuda_package(sys.argv[1])
ak = importlib.import_module("genesis._impl.cuda.kernels.activation")
ak.libdevice = LIBDEVICE
F = torch.nn.functional
CASES = [
    ("elu", (0.7, 1.0, 1.0), lambda x: F.elu(x, 0.7)),
    ("elu", (1.6732632423543772, 1.0507009873554805, 1.0), F.selu),
    ("elu", (1.3, 1.0, 1 / 1.3), lambda x: F.celu(x, 1.3)),
    ("hardswish", (), F.hardswish), ("hardsigmoid", (), F.hardsigmoid),
    ("hardtanh", (-0.5, 0.7), lambda x: F.hardtanh(x, -0.5, 0.7)),
    ("softplus", (1.0, 20.0), F.softplus), ("softplus", (2.0, 1.0), lambda x: F.softplus(x, 2.0, 1.0)),
    ("softshrink", (0.45,), lambda x: F.softshrink(x, 0.45)), ("hardshrink", (0.45,), lambda x: F.hardshrink(x, 0.45)),
    ("threshold", (0.15, -2.0), lambda x: F.threshold(x, 0.15, -2.0)),
    ("mish", (), F.mish), ("log_sigmoid", (), F.logsigmoid),
    ("logit", (0.1,), lambda x: torch.logit(x, 0.1)), ("logit", (-1.0,), torch.logit),
]
# Off the kinks (torch's CPU kernels choose differently there in their vector and scalar paths).
x = torch.linspace(-9.13, 9.07, 500, dtype=torch.float64)
x = torch.cat([x, torch.tensor([40.0, -40.0, 25.0, -25.0], dtype=torch.float64)])
g = torch.linspace(-2.0, 3.0, x.numel(), dtype=torch.float64)
n = x.numel()
for op, params, fn in CASES:
    p = tuple(params) + (0.0,) * (3 - len(params))
    v = x / 20 + 0.5 if op == "logit" else x  # logit's inputs around [0, 1]
    out, grad = torch.empty_like(v), torch.empty_like(v)
    ak.activation_kernel[(2,)](out, v, v, n, *p, OP=op, BACKWARD=False, G_ONE=False, BLOCK=256, I64=False)
    ak.activation_kernel[(2,)](grad, v, g, n, *p, OP=op, BACKWARD=True, G_ONE=False, BLOCK=256, I64=False)
    vr = v.clone().requires_grad_()
    (ref,) = torch.autograd.grad(fn(vr), vr, g)
    torch.testing.assert_close(out, fn(v), rtol=1e-9, atol=1e-12, equal_nan=True, msg=f"{op} {params}")
    # torch's CPU celu gradient rounds 1 / alpha to float32, in the exponent too (3e-8 relative, times x).
    rtol = 1e-6 if fn is CASES[2][2] else 1e-9
    torch.testing.assert_close(grad, ref, rtol=rtol, atol=1e-12, equal_nan=True, msg=f"{op} {params} gradient")
    # One gradient element broadcast (the gradient of a sum).
    ak.activation_kernel[(2,)](grad, v, g[3:4], n, *p, OP=op, BACKWARD=True, G_ONE=True, BLOCK=256, I64=False)
    (ref,) = torch.autograd.grad(fn(vr), vr, g[3].expand(n))
    torch.testing.assert_close(grad, ref, rtol=rtol, atol=1e-12, equal_nan=True,
                               msg=f"{op} {params} gradient of a sum")
print("ok")
"""


def test_activation_kernel_math_under_the_interpreter() -> None:
    run_interpreted(_INTERPRETED, ROOT)
