"""The multi-tensor Triton kernels (``genesis/_impl/cuda/kernels/multi_tensor.py``) on a machine without a GPU: each
compiles ahead of time for sm_90, and each computes torch's values under the Triton interpreter on CPU tensors
(float32; the interpreter computes bfloat16 on raw bits). The launchers themselves run on the GPU suite
(``tests/test_foreach.py`` with ``GENESIS_TEST_DEVICE=cuda``).

Skips with a reason when Triton is not installed. The interpreter check runs in a subprocess because
``TRITON_INTERPRET=1`` must be set before any ``@triton.jit`` function is created.
"""

from __future__ import annotations

import os

import pytest

from tests.kernel_modules import compile_for_sm90, kernel_modules, run_interpreted

triton = pytest.importorskip("triton", reason="Triton is not installed (pip install triton): kernel checks skipped")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MT = ("*i64:16", "*i64:16", "*i32:16", "*i32:16", "i32")  # offsets, sizes, block tensor, block first; tensor count
FIN = ("*i64:16", "*i32:16", "fp64")  # sizes, block first; p


def _specs() -> list[tuple]:
    k = kernel_modules(("multi_tensor",))["multi_tensor"]
    part, fin = k.multi_norm_partials, k.multi_norm_finish
    return [
        ("norm partials l2 bf16", part, ("*bf16:16", "*fp32:16") + MT + ("fp64",), ("l2", 4096, 8)),
        ("norm partials l1 unaligned", part, ("*fp32", "*fp32:16") + MT + ("fp64",), ("l1", 4096, 1)),
        ("norm partials max fp16", part, ("*fp16:16", "*fp32:16") + MT + ("fp64",), ("max", 4096, 8)),
        ("norm partials min", part, ("*fp32:16", "*fp32:16") + MT + ("fp64",), ("min", 4096, 4)),
        ("norm partials l0", part, ("*fp32:16", "*fp32:16") + MT + ("fp64",), ("l0", 4096, 4)),
        ("norm partials lp fp64", part, ("*fp64:16", "*fp64:16") + MT + ("fp64",), ("lp", 4096, 2)),
        ("norm finish l2", fin, ("*fp32:16", "*fp32:16") + FIN, ("l2", 4096, 1024)),
        ("norm finish max into fp64", fin, ("*fp32:16", "*fp64") + FIN, ("max", 4096, 1024)),
        ("norm finish min", fin, ("*fp32:16", "*fp32") + FIN, ("min", 4096, 1024)),
        ("norm finish lp fp64", fin, ("*fp64:16", "*fp64:16") + FIN, ("lp", 4096, 1024)),
        ("scale bf16 by fp32", k.multi_scale, ("*bf16:16", "*fp32") + MT, (False, 4096, 8)),
        ("scale fp64", k.multi_scale, ("*fp64:16", "*fp64") + MT, (True, 4096, 2)),
        ("fill fp16", k.multi_fill, ("*fp16:16",) + MT + ("fp64",), (4096, 8)),
        ("clamp bf16", k.multi_clamp, ("*bf16:16",) + MT + ("fp64", "fp64"), (True, True, False, 4096, 8)),
        ("clamp fp64 min only", k.multi_clamp, ("*fp64",) + MT + ("fp64", "fp64"), (True, False, True, 4096, 1)),
    ]


@pytest.mark.parametrize("spec", _specs(), ids=lambda s: s[0])
def test_kernel_compiles_for_sm90(spec: tuple) -> None:
    _, fn, types_, consts = spec
    compile_for_sm90(fn, types_, consts)


_INTERPRETED = r"""
import importlib, math, sys
import torch
root = sys.argv[1]
sys.path.insert(0, root)
from tests.interpreter_stubs import patch_loop_bounds
patch_loop_bounds()
from tests.kernel_modules import bare_cuda_package
bare_cuda_package(root)
k = importlib.import_module("genesis._impl.cuda.kernels.multi_tensor")
g = torch.Generator().manual_seed(0)

# Four tensors in one buffer at element offsets (sizes 300, 1, 0, 130 in 128-element programs: whole and masked
# blocks, an empty tensor with no program, a tensor of several partials), as the launcher lays them out.
sizes, starts, B = (300, 1, 0, 130), (0, 304, 320, 320), 128
blocks = [(n + B - 1) // B for n in sizes]
owner = torch.tensor([t for t, b in enumerate(blocks) for _ in range(b)], dtype=torch.int32)
first = torch.tensor([sum(blocks[:t]) for t in range(4)], dtype=torch.int32)
offsets, size_t, programs = torch.tensor([starts], dtype=torch.int64), torch.tensor(sizes), int(sum(blocks))
tables = (offsets, size_t, owner, first, 4)


def parts(x):
    return [x[s:s + n] for s, n in zip(starts, sizes)]


x = torch.randn(512, generator=g)
x[5] = 0.0
for ord_, p in (("l2", 2.0), ("l1", 1.0), ("max", math.inf), ("min", -math.inf), ("l0", 0.0), ("lp", 3.0),
                ("lp", -1.5)):
    partials, out = torch.empty(programs), torch.empty(4)
    k.multi_norm_partials[(programs,)](x, partials, *tables, p, ORD=ord_, BLOCK=B, AX=1)
    k.multi_norm_finish[(4,)](partials, out, size_t, first, p, ORD=ord_, BLOCK=B, RBLOCK=2)
    for t, part in enumerate(parts(x)):
        if not part.numel():
            assert out[t].item() == (math.inf if p < 0 else 0.0), (ord_, out[t])  # no identity: inf
            continue
        ref = torch.linalg.vector_norm(part.double(), p).float()
        torch.testing.assert_close(out[t], ref, rtol=1e-5, atol=1e-6, msg=lambda m: f"{ord_} {p} {t}: {m}")

# a nan in the third block of the first tensor: every norm of that tensor is nan, the others are not
y = x.clone()
y[290] = float("nan")
for ord_, p in (("l2", 2.0), ("max", math.inf), ("min", -math.inf), ("lp", 3.0)):
    partials, out = torch.empty(programs), torch.empty(4)
    k.multi_norm_partials[(programs,)](y, partials, *tables, p, ORD=ord_, BLOCK=B, AX=1)
    k.multi_norm_finish[(4,)](partials, out, size_t, first, p, ORD=ord_, BLOCK=B, RBLOCK=2)
    assert math.isnan(out[0].item()) and not math.isnan(out[3].item()), (ord_, out)

# in place: scale by a 0-d tensor, fill, clamp (nan stays nan); the gaps between tensors stay untouched
for F64 in (False, True):
    z = x.double() if F64 else x.clone()
    scale = torch.tensor(0.25, dtype=torch.float64)
    k.multi_scale[(programs,)](z, scale, *tables, F64=F64, BLOCK=B, AX=1)
    expect = x.double() if F64 else x.clone()
    for part in parts(expect):
        part *= 0.25
    torch.testing.assert_close(z, expect)
z = x.clone()
k.multi_fill[(programs,)](z, *tables, 1.5, BLOCK=B, AX=1)
expect = x.clone()
for part in parts(expect):
    part.fill_(1.5)
torch.testing.assert_close(z, expect)
z = y.clone()
k.multi_clamp[(programs,)](z, *tables, -0.5, 0.7, HAS_LO=True, HAS_HI=True, F64=False, BLOCK=B, AX=1)
expect = y.clone()
for part in parts(expect):
    part.clamp_(-0.5, 0.7)
torch.testing.assert_close(z, expect, equal_nan=True)
z = x.clone()
k.multi_clamp[(programs,)](z, *tables, 0.0, 0.3, HAS_LO=False, HAS_HI=True, F64=False, BLOCK=B, AX=1)
expect = x.clone()
for part in parts(expect):
    part.clamp_(max=0.3)
torch.testing.assert_close(z, expect)
print("ok")
"""


def test_kernels_compute_right_values_under_the_interpreter() -> None:
    run_interpreted(_INTERPRETED, ROOT)
