"""The padding kernels on a machine without a GPU: they compile ahead of time for sm_90, and the CUDA backend's
launchers (``genesis/_impl/cuda/nn_padding.py``; ``nn_layers.py``'s group norm in the instance-norm configuration,
one channel per group) compute the same values as the CPU backend under ``TRITON_INTERPRET=1``, with CPU arrays
standing in for device memory, with 32-bit and with 64-bit index arithmetic.

Covers reflect, replicate and circular padding of 1 to 3 dims (batched and unbatched, full-width amounts, one side
zero), strided and channels_last input (the output stays channels_last), float64, float32, bfloat16 and int64
values, and the atomic-free gathering backward (replicate's long lists at the edges included).

The launcher modules import the CUDA runtime, which needs cuda-python and a driver: the subprocess puts stand-ins
for the runtime, the Triton driver, the allocation helpers and the reduction in their place, so the launchers' own
code runs as is.
"""

from __future__ import annotations

import os

import pytest

from tests.kernel_modules import compile_for_sm90, kernel_modules, run_interpreted

triton = pytest.importorskip("triton", reason="Triton is not installed (pip install triton): kernel checks skipped")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _specs() -> list[tuple]:
    pk = kernel_modules(("nn_pad",))["nn_pad"]
    i32 = "*i32:16"
    sizes = ("i64",) + ("i32",) * 5 + ("i64",) * 6
    axes = ("i32",) * 6  # the forward's input sizes and amounts in front
    return [
        ("pad fwd fp32 reflect", pk.pad_fwd, ("*fp32:16", "*fp32:16") + sizes + axes, (0, True, False, 32, 64)),
        ("pad fwd bf16 replicate wide", pk.pad_fwd, ("*bf16:16", "*bf16:16") + sizes + axes, (1, False, True, 16, 128)),
        ("pad fwd int64 circular channels_last", pk.pad_fwd, ("*i64:16", "*i64:16") + sizes + axes,
         (2, False, False, 8, 256)),
        ("pad bwd fp32", pk.pad_bwd, ("*fp32:16", "*fp32:16") + (i32,) * 9 + sizes, (True, False, False, 16, 64)),
        ("pad bwd fp16 channels_last", pk.pad_bwd, ("*fp16:16", "*fp16:16") + (i32,) * 9 + sizes,
         (False, False, False, 4, 256)),
        ("pad bwd fp64 wide", pk.pad_bwd, ("*fp64:16", "*fp64:16") + (i32,) * 9 + sizes, (True, True, True, 32, 32)),
    ]


@pytest.mark.parametrize("spec", _specs(), ids=lambda s: s[0])
def test_kernel_compiles_for_sm90(spec: tuple) -> None:
    _, fn, types_, consts = spec
    compile_for_sm90(fn, types_, consts)


_LAUNCHERS = r"""
import importlib, os, sys, types
import torch
from tests.interpreter_stubs import launcher, patch_loop_bounds

patch_loop_bounds()
import genesis._impl.cpu as cpu

root = sys.argv[1]
from tests.kernel_modules import bare_cuda_package
pkg = bare_cuda_package(root)
stubs = {
    "runtime": {"ensure_device": lambda index: None, "multiprocessor_count": lambda index=None: 3},
    "triton_driver": {"Kernel": type("Kernel", (), {"__init__": lambda self, fn: setattr(self, "fn", fn),
                                                     "launcher": launcher})},
    "creation": {"from_numpy": cpu.from_numpy, "contiguous": cpu.contiguous, "full": cpu.full, "copy_": cpu.copy_},
    "launch": {"_new": lambda shape, dtype, device: cpu.empty(shape, dtype, device), "_ptr": cpu.native,
               "_new_channels_last": lambda shape, dtype, device: cpu.empty(
                   (shape[0], *shape[2:], shape[1]), dtype, device).permute(
                       (0, len(shape) - 1, *range(1, len(shape) - 1))),
               "_psig": lambda x, p: "*fp32", "_contig": lambda x: x.is_contiguous(),
               "_pointers": lambda arrays: ([cpu.native(a) for a in arrays], ("*fp32",) * len(arrays)),
               "_next_pow2": lambda n: 1 << max(n - 1, 0).bit_length()},
    "reductions": {"reduce": cpu.reduce},
}
for name, attrs in stubs.items():
    module = types.ModuleType("genesis._impl.cuda." + name)
    module.__dict__.update(attrs)
    sys.modules[module.__name__] = module
    setattr(pkg, name, module)
nl = importlib.import_module("genesis._impl.cuda.nn_padding")
layers = importlib.import_module("genesis._impl.cuda.nn_layers")
wide = sys.argv[2:] == ["wide"]
if wide:  # the 64-bit index arithmetic variants, as for arrays of 2**31 elements or more (a few cases: it is slow)
    nl._wide = layers._wide = lambda *sizes: True
g = torch.Generator().manual_seed(0)
nd = cpu.wrap

cases = [
    ((2, 5), (1, 2)), ((2, 3, 6), (3, 2)), ((2, 3, 4, 5), (1, 2, 3, 1)), ((3, 4, 5), (2, 0, 0, 3)),
    ((1, 2, 3, 4, 5), (1, 1, 2, 0, 2, 1)), ((2, 3, 4, 5, 3), (0, 2, 1, 1, 0, 0)), ((1, 2, 5), (4, 4)),
    ((1, 1, 1, 2), (0, 0, 3, 2)),
]
cases = cases[2:5] if wide else cases
for mode in ("reflect", "replicate", "circular"):
    for shape, pad in cases:
        if mode == "reflect" and any(p >= n for p, n in zip(pad, [s for s in shape[::-1] for _ in (0, 1)])):
            continue
        if mode == "circular" and any(p > n for p, n in zip(pad, [s for s in shape[::-1] for _ in (0, 1)])):
            continue
        layouts = [torch.randn(*shape, generator=g, dtype=torch.float64)]
        layouts.append(torch.randn(*shape[:-2], shape[-1], shape[-2], generator=g).transpose(-1, -2))  # strided
        if len(shape) == len(pad) // 2 + 2 and len(shape) in (4, 5):
            fmt = torch.channels_last if len(shape) == 4 else torch.channels_last_3d
            layouts.append(torch.randn(*shape, generator=g).to(memory_format=fmt))
            layouts.append(torch.randn(*shape, generator=g).bfloat16().to(memory_format=fmt))
        layouts.append(torch.randint(-50, 50, shape, generator=g))
        for x in layouts:
            what = f"{mode} {shape} {pad} {x.dtype} {x.stride()}"
            got, ref = cpu.native(nl.pad(nd(x), pad, mode)), cpu.native(cpu.pad(nd(x), pad, mode))
            assert got.shape == ref.shape and got.dtype == ref.dtype and torch.equal(got, ref), what
            if x.dim() >= 4 and x.is_contiguous(memory_format=fmt) and not x.is_contiguous():
                assert got.is_contiguous(memory_format=fmt), what + ": the output left channels_last"
            if not x.is_floating_point():
                continue
            dy = torch.randn(*ref.shape, generator=g, dtype=torch.float64).to(x.dtype)
            if x.dim() >= 4 and not x.is_contiguous():
                dy = dy.contiguous(memory_format=torch.channels_last if x.dim() == 4 else torch.channels_last_3d)
            got = cpu.native(nl.pad_backward(nd(dy), shape, pad, mode))
            ref = cpu.native(cpu.pad_backward(nd(dy.double()), shape, pad, mode))
            assert got.shape == ref.shape and got.dtype == x.dtype, what
            tol = 1e-2 if x.dtype == torch.bfloat16 else 1e-12 if x.dtype == torch.float64 else 1e-5
            torch.testing.assert_close(got.double(), ref, rtol=tol, atol=tol, msg=lambda m: what + ": " + m)
try:
    nl.pad(nd(torch.ones(2, 3, 4, dtype=torch.bool)), (1, 1), "reflect")
    raise AssertionError("bool reflect padding did not raise")
except NotImplementedError as e:
    assert "reflection_pad1d" in str(e) and "Bool" in str(e), e
print("pad ok")

# instance norm: group norm's kernels with one channel per group, planes longer than one block; channels_last input;
# planes split over several programs (fewer planes than 2 per multiprocessor, the stand-in runtime's 3); and group
# norm with two channels per group split the same way (its backward is not split)
instance_cases = (((2, 3, 2500), None, 3), ((2, 4, 5, 6), torch.channels_last, 4), ((1, 2, 3, 1, 7), None, 2),
                  ((1, 2, 9000), None, 2), ((1, 4, 2100), None, 2))
for shape, fmt, G in instance_cases[1:2] if wide else instance_cases:
    C = shape[1]
    K = C // G * torch.Size(shape[2:]).numel()  # elements per group
    assert (layers._gn_split(shape[0] * G, K, 0) is not None) == (K >= 8192), shape
    x = torch.randn(*shape, generator=g) * 2 + 1
    x = x.to(memory_format=fmt) if fmt is not None else x
    w, b = torch.randn(C, generator=g), torch.randn(C, generator=g)
    for W, B in ((nd(w), nd(b)), (None, None)):
        got = layers.group_norm(nd(x), W, B, G, 1e-5)
        W64, B64 = (nd(w.double()), nd(b.double())) if W is not None else (None, None)
        ref = cpu.group_norm(nd(x.double()), W64, B64, G, 1e-5)
        for a, r, name in zip(got, ref, ("out", "mean", "rstd")):
            torch.testing.assert_close(cpu.native(a).double(), cpu.native(r), rtol=1e-4, atol=1e-5,
                                       msg=lambda m: f"instance norm {name} {shape}: {m}")
        dy = torch.randn(*shape, generator=g)
        mask = (True, W is not None, W is not None)
        for a, r, name in zip(layers.group_norm_backward(nd(dy), nd(x), W, got[1], got[2], G, mask),
                              cpu.group_norm_backward(nd(dy.double()), nd(x.double()), W64, ref[1], ref[2], G, mask),
                              ("dx", "dw", "db")):
            assert (a is None) == (r is None), name
            if a is not None:
                torch.testing.assert_close(cpu.native(a).double(), cpu.native(r), rtol=1e-4, atol=1e-5,
                                           msg=lambda m: f"instance norm {name} {shape}: {m}")
print("ok")
"""


@pytest.mark.parametrize("index_bits", ["narrow", "wide"])
def test_padding_launchers_under_the_interpreter(index_bits: str) -> None:
    run_interpreted(_LAUNCHERS, ROOT, index_bits)
