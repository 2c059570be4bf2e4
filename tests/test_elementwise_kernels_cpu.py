"""The elementwise and dropout Triton kernels (``genesis/_impl/cuda/kernels/elementwise.py`` and ``random.py``) on a
machine without a GPU: the variants whose code depends on the dtype (float64 computed in float64, the special
functions written in Triton) compile ahead of time for sm_90. Their values run on the GPU suite
(``tests/test_ops_floating.py``, ``tests/test_namespace_aliases.py`` with ``GENESIS_TEST_DEVICE=cuda``).

Skips with a reason when Triton is not installed.
"""

from __future__ import annotations

import pytest

from tests.kernel_modules import compile_for_sm90, kernel_modules

triton = pytest.importorskip("triton", reason="Triton is not installed (pip install triton): kernel checks skipped")

UNARY = ("i32", "i32", "i32:16")  # the unused second and third inputs, the element count


def _specs() -> list[tuple]:
    k = kernel_modules(("elementwise", "random"))
    ew, drop = k["elementwise"].ew_contig, k["random"].dropout_kernel
    specs = []
    for op in ("trigamma", "digamma", "lgamma", "erfinv"):
        for ptr in ("*fp32:16", "*fp64:16"):
            # OP, NIN, M0, M1, M2, BLOCK, I64: one contiguous input
            specs.append((f"{op} {ptr[1:5]}", ew, (ptr, ptr) + UNARY, (op, 1, 1, 0, 0, 1024, False)))
    for ptr, scale in (("*fp64:16", "fp64"), ("*fp32:16", "fp32"), ("*bf16:16", "fp32"), ("*fp16:16", "fp32")):
        # x, out, n, seed, offset, base, p, scale; FROM_DEVICE, BLOCK (the base read from device memory in a graph)
        for from_device in (False, True):
            specs.append((f"dropout {ptr[1:5]}{' graph' if from_device else ''}", drop,
                          (ptr, ptr, "i64", "u64", "i64", "*i64", "fp32", scale), (from_device, 1024)))
    return specs


@pytest.mark.parametrize("spec", _specs(), ids=lambda s: s[0])
def test_kernel_compiles_for_sm90(spec: tuple) -> None:
    _, fn, types_, consts = spec
    compile_for_sm90(fn, types_, consts)
