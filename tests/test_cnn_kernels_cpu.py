"""The CNN-layer kernels and the embedding gradient on a machine without a GPU: each compiles ahead of time for
sm_90, and the CUDA backend's launchers (``genesis/_impl/cuda/nn_layers.py``) compute the same values as the CPU
backend under ``TRITON_INTERPRET=1``, with CPU arrays standing in for device memory (float32), with 32-bit and with
64-bit index arithmetic.

Covers pooling (adaptive; max with NaN and of integers, dilation, padding, ceil_mode, strided and 3-d input; avg
with each divisor rule), batch norm (training with the running-statistics update, eval, with and without affine),
group norm, nearest and bilinear resampling (align_corners both ways, explicit scales, length 1) and the
deterministic embedding gradient.

The interpreter runs in a subprocess (``TRITON_INTERPRET`` must be set before any kernel is created); runtime loop
bounds are converted as in ``tests/test_fused_kernels_cpu.py``.
"""

from __future__ import annotations

import os

import pytest

from tests.kernel_modules import compile_for_sm90, kernel_modules, run_interpreted

triton = pytest.importorskip("triton", reason="Triton is not installed (pip install triton): kernel checks skipped")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAMES = ("nn_pool", "nn_batchnorm", "nn_upsample", "nn_embedding")


def _specs() -> list[tuple]:
    k = kernel_modules(NAMES)
    pk, bk, uk, ek = k["nn_pool"], k["nn_batchnorm"], k["nn_upsample"], k["nn_embedding"]
    bf, f32, f64, i32, i64 = "*bf16:16", "*fp32:16", "*fp64:16", "*i32:16", "*i64:16"
    pool2d = (1, 3, 3, 1, 2, 2, 0, 1, 1)  # KD..PW for a 3x3 stride-2 pad-1 window
    return [
        ("max pool fwd bf16 2d, no indices", pk.max_pool_fwd, (bf, bf, bf, "i64") + ("i32",) * 7 + ("i32",) * 5,
         pool2d + (1, 1, 1, float("-inf"), False, False, False, 512)),
        ("max pool fwd fp32 3d dilated", pk.max_pool_fwd, (f32, f32, i64, "i64") + ("i32",) * 7 + ("i64",) * 5,
         (2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 2, 2, float("-inf"), True, True, False, 512)),
        ("max pool 2d planes fwd fp32", pk.max_pool2d_planes_fwd, (f32, f32, i64) + ("i32",) * 9,
         (3, 3, 2, 2, 1, 1, 1, 1, float("-inf"), False, True, 128)),
        ("max pool 2d planes fwd bf16 64-bit, no indices", pk.max_pool2d_planes_fwd,
         (bf, bf, bf) + ("i32",) * 5 + ("i64",) * 4, (2, 2, 2, 2, 0, 0, 1, 1, float("-inf"), True, False, 64)),
        ("max pool fwd int64", pk.max_pool_fwd, (i64, i64, i64, "i64") + ("i32",) * 7 + ("i32",) * 5,
         pool2d + (1, 1, 1, -2 ** 63, False, True, False, 512)),
        ("max pool fwd bf16 channels_last", pk.max_pool_fwd, (bf, bf, i64, "i64") + ("i32",) * 7 + ("i32",) * 5,
         pool2d + (1, 1, 1, float("-inf"), False, True, True, 512)),
        ("avg pool fwd int64", pk.avg_pool_fwd, (i64, i64, "i64") + ("i32",) * 8 + ("i64",) * 5,
         pool2d + (1, 2, False, False, 512)),
        ("avg pool fwd bf16 channels_last", pk.avg_pool_fwd, (bf, bf, "i64") + ("i32",) * 8 + ("i64",) * 5,
         pool2d + (1, 0, False, True, 512)),
        ("max pool bwd bf16", pk.max_pool_bwd, (bf, i64, bf, "i64") + ("i32",) * 7,
         pool2d + (1, 1, 1, False, False, False, 512)),
        ("max pool bwd fp32 channels_last", pk.max_pool_bwd, (f32, i64, f32, "i64") + ("i32",) * 7,
         pool2d + (1, 1, 1, False, False, True, 512)),
        ("avg pool fwd fp16 exclude pad", pk.avg_pool_fwd,
         ("*fp16:16", "*fp16:16", "i64") + ("i32",) * 8 + ("i64",) * 5, pool2d + (2, 0, False, False, 512)),
        ("avg pool bwd fp64 override", pk.avg_pool_bwd, (f64, f64, "i64") + ("i32",) * 8,
         pool2d + (0, True, True, False, 512)),
        ("avg pool bwd fp32 channels_last", pk.avg_pool_bwd, (f32, f32, "i64") + ("i32",) * 8,
         pool2d + (1, False, False, True, 512)),
        ("adaptive max pool fwd bf16", pk.adaptive_pool_fwd, (bf, bf, i64, i32, i32, i32, i32, "i64") + ("i32",) * 4
         + ("i64",) * 4, (True, 3, 4, float("-inf"), False, False, 512)),
        ("adaptive avg pool bwd fp32", pk.adaptive_pool_bwd, (f32, f32, f32) + (i32,) * 8 + ("i64",) + ("i32",) * 6,
         (False, False, False, 512)),
        ("batch norm partials bf16 straddle", bk.bn_partials, (bf, bf, f32, f32) + ("i32",) * 5,
         (False, True, False, False, 256)),
        ("batch norm bwd partials fp32 flat 64-bit", bk.bn_partials,
         (f32, f32, f32, f32, "i64", "i32", "i32", "i64", "i32"), (True, False, False, True, 1024)),
        ("batch norm partials fp64 straddle 64-bit", bk.bn_partials,
         (f64, f64, f64, f64, "i64", "i32", "i32", "i64", "i32"), (False, True, True, True, 1024)),
        ("batch norm finalize", bk.bn_finalize, (f32,) * 8 + ("i32", "i32", "fp32", "fp32"),
         (True, True, True, True, False, 256)),
        ("batch norm finalize fp64 eval", bk.bn_finalize, (f64,) * 8 + ("i32", "i32", "fp64", "fp64"),
         (False, True, True, True, True, 256)),
        ("group norm fwd fp64", bk.gn_fwd, (f64,) * 4 + (f64, f64, "i32", "i32", "i32", "fp64"),
         (True, True, True, 1024)),
        ("batch norm apply bf16 straddle", bk.bn_apply, (bf, bf, f32, bf, "i32", "i32", "i64"),
         (False, True, False, 256)),
        ("batch norm bwd apply fp64 flat", bk.bn_apply, (f64, f64, f64, f64, "i32", "i32", "i64"),
         (True, False, True, 1024)),
        ("batch norm bwd finalize", bk.bn_bwd_finalize, (f32,) * 7 + ("i32", "i32", "fp32", "fp32"),
         (True, True, False, 256)),
        ("group norm fwd bf16", bk.gn_fwd, (bf, bf, bf, bf, f32, f32, "i32", "i32", "i32", "fp32"),
         (True, True, False, 2048)),
        ("group norm bwd bf16", bk.gn_bwd, (bf, bf, bf, f32, f32, bf, f32, "i32", "i32", "i32", "i32"),
         (True, False, 2048, 1024)),
        ("group norm split partials bf16", bk.gn_partials, (bf, bf, f32, f32, f32, "i32", "i32", "i32"),
         (False, False, 1024)),
        ("group norm split bwd partials fp64", bk.gn_partials, (f64,) * 5 + ("i32", "i32", "i32"), (True, True, 1024)),
        ("group norm split apply bf16", bk.gn_apply, (bf, bf, bf, bf, bf, f32, f32, f32, f32) + ("i32",) * 5
         + ("fp32",), (False, True, True, False, False, 8, 1024)),
        ("group norm split bwd apply fp32", bk.gn_apply, (f32,) * 9 + ("i32",) * 5 + ("fp32",),
         (True, True, False, True, False, 16, 1024)),
        ("group norm split apply fp64", bk.gn_apply, (f64,) * 9 + ("i32",) * 5 + ("fp64",),
         (False, True, True, True, True, 4, 1024)),
        ("group norm split bwd apply fp64", bk.gn_apply, (f64,) * 9 + ("i32",) * 5 + ("fp64",),
         (True, False, False, True, True, 4, 1024)),
        ("upsample bilinear bf16", uk.upsample_fwd, (bf, bf, i32, i32, f32, i32, i32, f32, "i64", "i32", "i32",
                                                     "i32") + ("i64",) * 4, (False, False, False, 512)),
        ("upsample nearest fp32", uk.upsample_fwd, (f32, f32, i32, i32, f32, i32, i32, f32, "i64", "i32", "i32",
                                                    "i32") + ("i64",) * 4, (True, False, True, 512)),
        ("upsample bwd bf16", uk.upsample_bwd, (bf, bf) + (i32, i32, f32, i32, i32) * 2 + ("i64",) + ("i32",) * 6,
         (False, False, 256)),
        ("embedding rank", ek.embedding_rank, (i64, i32, i32, "i32"), (128, 128)),
        ("embedding segment sum bf16", ek.embedding_segment_sum, (bf, i64, i32, i32, bf, "i32", "i64"),
         (8, 1024, False)),
    ]


@pytest.mark.parametrize("spec", _specs(), ids=lambda s: s[0])
def test_kernel_compiles_for_sm90(spec: tuple) -> None:
    _, fn, types_, consts = spec
    compile_for_sm90(fn, types_, consts)


_LAUNCHERS = r"""
import importlib, os, sys, types
import torch
from tests.interpreter_stubs import patch_loop_bounds

patch_loop_bounds()
import genesis._impl.cpu as cpu
from genesis import dtypes
from genesis._impl.cuda import nn_layers as nl
from tests.interpreter_stubs import install

install(nl)
nl.contiguous, nl.reduce, nl.full, nl.from_numpy = cpu.contiguous, cpu.reduce, cpu.full, cpu.from_numpy
if sys.argv[1:] == ["wide"]:  # the 64-bit index arithmetic variants, as for arrays of 2**31 elements or more
    nl._wide = lambda *sizes: True
g = torch.Generator().manual_seed(0)
nd = cpu.wrap


def close(got, ref, what):
    got = cpu.native(got) if got is not None else None
    ref = cpu.native(ref) if ref is not None else None
    if ref is None:
        assert got is None, what
        return
    assert got.shape == ref.shape and got.dtype == ref.dtype, (what, got.shape, ref.shape, got.dtype, ref.dtype)
    torch.testing.assert_close(got, ref, rtol=1e-4, atol=1e-5, msg=lambda m: what + ": " + m)


def randn(*shape):
    return torch.randn(*shape, generator=g)


# pooling: odd sizes, padding, dilation, ceil_mode, strided input, 3-d, unbatched
cases = [
    ((2, 3, 7, 9), (3, 2), (2, 2), (1, 1), (2, 1), True),
    ((1, 2, 5, 5), (2, 2), (2, 2), (0, 0), (1, 1), False),
    ((1, 1, 1, 1), (1, 1), (1, 1), (0, 0), (1, 1), False),
    ((1, 2, 4, 5, 6), (2, 3, 2), (2, 1, 2), (1, 1, 0), (1, 1, 2), True),
    ((3, 6, 7), (3, 3), (2, 2), (1, 1), (1, 1), True),
]
for shape, k, s, p, d, ceil in cases:
    x = randn(*shape)
    if len(shape) == 4:
        x = randn(*shape[:2], shape[3], shape[2]).transpose(2, 3)  # strided input
    x[..., 0] = float("nan") if shape == (2, 3, 7, 9) else x[..., 0]
    X = nd(x)
    v, i = nl.pool(X, "max", k, s, p, d, ceil, True, None)
    rv, ri = cpu.pool(X, "max", k, s, p, d, ceil, True, None)
    torch.testing.assert_close(cpu.native(v), cpu.native(rv), equal_nan=True)
    assert torch.equal(cpu.native(i), cpu.native(ri)), f"max indices {shape}"
    gy = nd(randn(*cpu.native(v).shape))
    close(nl.pool_backward(gy, X, i, "max", k, s, p, d, ceil, True, None),
          cpu.pool_backward(gy, X, ri, "max", k, s, p, d, ceil, True, None), f"max bwd {shape}")
    for cip, div in ((True, None), (False, None), (True, 5)):
        one = (1,) * len(k)
        v, _ = nl.pool(X, "avg", k, s, p, one, ceil, cip, div)
        rv, _ = cpu.pool(X, "avg", k, s, p, one, ceil, cip, div)
        torch.testing.assert_close(cpu.native(v), cpu.native(rv), equal_nan=True)
        gy = nd(randn(*cpu.native(v).shape))
        close(nl.pool_backward(gy, X, None, "avg", k, s, p, one, ceil, cip, div),
              cpu.pool_backward(gy, X, None, "avg", k, s, p, one, ceil, cip, div), f"avg bwd {shape} {cip} {div}")
x = nd(torch.arange(-20, 43).reshape(1, 1, 7, 9))
v, i = nl.pool(x, "max", (3, 3), (2, 2), (1, 1), (1, 1), True, True, None)
rv, ri = cpu.pool(x, "max", (3, 3), (2, 2), (1, 1), (1, 1), True, True, None)
assert torch.equal(cpu.native(v), cpu.native(rv)) and torch.equal(cpu.native(i), cpu.native(ri)), "int max pool"
x = nd(torch.arange(63).reshape(1, 1, 7, 9))
v, _ = nl.pool(x, "avg", (3, 2), (2, 2), (1, 1), (1, 1), True, False, None)
assert torch.equal(cpu.native(v), cpu.native(cpu.pool(x, "avg", (3, 2), (2, 2), (1, 1), (1, 1), True, False, None)[0]))
for shape, out in (((2, 3, 7, 9), (3, 4)), ((1, 2, 5, 5), (5, 2)), ((1, 1, 1, 1), (1, 1)), ((2, 1, 6, 4), (4, 3))):
    x = randn(*shape)
    x.view(-1)[x.numel() // 2] = float("nan")
    for mode in ("max", "avg"):
        v, i = nl.adaptive_pool(nd(x), mode, out)
        rv, ri = cpu.adaptive_pool(nd(x), mode, out)
        torch.testing.assert_close(cpu.native(v), cpu.native(rv), equal_nan=True)
        if mode == "max":
            assert torch.equal(cpu.native(i), cpu.native(ri)), f"adaptive max indices {shape} {out}"
        gy = nd(randn(*cpu.native(v).shape))
        close(nl.adaptive_pool_backward(gy, nd(x), i, mode), cpu.adaptive_pool_backward(gy, nd(x), ri, mode),
              f"adaptive {mode} bwd {shape} {out}")
print("pool ok")

# batch norm: training (running stats updated) and eval, with and without affine, 2-d and 4-d input
for shape in ((5, 3), (2, 3, 5, 7), (1, 4, 1, 33), (3, 2, 17, 16), (6, 3, 20, 30)):
    C = shape[1]
    x = randn(*shape) * 3 + 2
    w, b = randn(C), randn(C)
    for training in (True, False):
        for affine in (True, False):
            rm, rv = randn(C), randn(C).abs() + 0.5
            rm2, rv2 = rm.clone(), rv.clone()
            W, B = (nd(w), nd(b)) if affine else (None, None)
            got = nl.batch_norm(nd(x), W, B, nd(rm), nd(rv), training, 0.1, 1e-5)
            ref = cpu.batch_norm(nd(x), W, B, nd(rm2), nd(rv2), training, 0.1, 1e-5)
            close(got[0], ref[0], f"bn out {shape} {training}")
            if training:
                close(got[1], ref[1], "bn mean")
                close(got[2], ref[2], "bn invstd")
            torch.testing.assert_close(rm, rm2)
            torch.testing.assert_close(rv, rv2)
            dy = nd(randn(*shape))
            mask = (True, affine, affine)
            gr = nl.batch_norm_backward(dy, nd(x), W, nd(rm), nd(rv), got[1], got[2], training, 1e-5, mask)
            rr = cpu.batch_norm_backward(dy, nd(x), W, nd(rm), nd(rv), ref[1], ref[2], training, 1e-5, mask)
            for a, r, name in zip(gr, rr, ("dx", "dw", "db")):
                close(a, r, f"bn {name} {shape} training={training} affine={affine}")
for shape in ((3, 5, 4, 6), (2, 40, 3, 3, 2)):  # channels_last input: read in place, results in its layout
    C = shape[1]
    fmt = torch.channels_last if len(shape) == 4 else torch.channels_last_3d
    x = (randn(*shape) * 3 + 2).contiguous(memory_format=fmt)
    dy = randn(*shape).contiguous(memory_format=fmt)
    w, b, rm, rv = randn(C), randn(C), randn(C), randn(C).abs() + 0.5
    rm2, rv2 = rm.clone(), rv.clone()
    got = nl.batch_norm(nd(x), nd(w), nd(b), nd(rm), nd(rv), True, 0.1, 1e-5)
    ref = cpu.batch_norm(nd(x), nd(w), nd(b), nd(rm2), nd(rv2), True, 0.1, 1e-5)
    assert cpu.native(got[0]).is_contiguous(memory_format=fmt)
    for a, r, name in zip(got, ref, ("out", "mean", "invstd")):
        close(a, r, f"bn channels_last {name} {shape}")
    torch.testing.assert_close(rm, rm2)
    torch.testing.assert_close(rv, rv2)
    for training in (True, False):
        gr = nl.batch_norm_backward(nd(dy), nd(x), nd(w), nd(rm), nd(rv), got[1], got[2], training, 1e-5, (True,) * 3)
        rr = cpu.batch_norm_backward(nd(dy), nd(x), nd(w), nd(rm), nd(rv), ref[1], ref[2], training, 1e-5,
                                     (True,) * 3)
        for a, r, name in zip(gr, rr, ("dx", "dw", "db")):
            close(a, r, f"bn channels_last {name} {shape} training={training}")
x = (randn(4, 3, 5, 6) * 2 + 1).half()  # half-precision input, float32 parameters and running statistics
w, b, rm, rv = randn(3), randn(3), randn(3), randn(3).abs() + 0.5
rm2, rv2 = rm.clone(), rv.clone()
got = nl.batch_norm(nd(x), nd(w), nd(b), nd(rm), nd(rv), True, 0.1, 1e-5)
ref = cpu.batch_norm(nd(x), nd(w), nd(b), nd(rm2), nd(rv2), True, 0.1, 1e-5)
torch.testing.assert_close(cpu.native(got[0]), cpu.native(ref[0]), rtol=2e-3, atol=2e-3)
torch.testing.assert_close(rm, rm2)
torch.testing.assert_close(rv, rv2)
dy = nd(randn(4, 3, 5, 6).half())
for a, r in zip(nl.batch_norm_backward(dy, nd(x), nd(w), None, None, got[1], got[2], True, 1e-5, (True,) * 3),
                cpu.batch_norm_backward(dy, nd(x), nd(w), None, None, ref[1], ref[2], True, 1e-5, (True,) * 3)):
    assert a.dtype is r.dtype, (a.dtype, r.dtype)
    torch.testing.assert_close(cpu.native(a), cpu.native(r), rtol=2e-3, atol=2e-3)
print("batch_norm ok")

# group norm
for shape, G in (((2, 6, 5), 3), ((3, 4, 2, 3), 2), ((2, 4), 4), ((1, 6, 17), 1)):
    C = shape[1]
    x = randn(*shape) * 2 + 1
    w, b = randn(C), randn(C)
    for affine in (True, False):
        W, B = (nd(w), nd(b)) if affine else (None, None)
        got = nl.group_norm(nd(x), W, B, G, 1e-5)
        # float64 reference: torch's float32 kernel rounds x * scale - mean * scale (groups of one element)
        W64, B64 = (nd(w.double()), nd(b.double())) if affine else (None, None)
        ref = cpu.group_norm(nd(x.double()), W64, B64, G, 1e-5)
        for a, r in zip(got, ref):
            close(a, nd(cpu.native(r).float()), f"gn {shape}")
        dy = randn(*shape)
        mask = (True, affine, affine)
        for a, r, name in zip(nl.group_norm_backward(nd(dy), nd(x), W, got[1], got[2], G, mask),
                              cpu.group_norm_backward(nd(dy.double()), nd(x.double()), W64, ref[1], ref[2], G, mask),
                              ("dx", "dw", "db")):
            close(a, nd(cpu.native(r).float()) if r is not None else None, f"gn {name} {shape} affine={affine}")
print("group_norm ok")

# upsampling
for shape, out, mode, align, scales in (
        ((2, 3, 4, 5), (7, 9), "bilinear", False, (None, None)),
        ((2, 3, 4, 5), (7, 9), "bilinear", True, (None, None)),
        ((1, 2, 5, 3), (2, 6), "bilinear", False, (0.5, 2.0)),
        ((1, 2, 5, 3), (1, 1), "bilinear", True, (None, None)),
        ((2, 3, 4, 5), (8, 10), "nearest", None, (2.0, 2.0)),
        ((2, 3, 4, 5), (6, 3), "nearest", None, (None, None)),
        ((2, 3, 4, 5), (6, 3), "nearest-exact", None, (None, None)),
        ((1, 1, 1, 1), (3, 1), "bilinear", False, (None, None))):
    x = randn(*shape)
    got = nl.upsample(nd(x), out, mode, align, scales)
    close(got, cpu.upsample(nd(x), out, mode, align, scales), f"upsample {mode} {shape} {out} {align}")
    dy = nd(randn(*cpu.native(got).shape))
    close(nl.upsample_backward(dy, shape, mode, align, scales),
          cpu.upsample_backward(dy, shape, mode, align, scales), f"upsample bwd {mode} {shape} {out} {align}")
print("upsample ok")

# embedding backward: repeated indices, one index, a row stride
for n, V, D in ((37, 5, 3), (1, 4, 7), (300, 50, 20)):
    idx = torch.randint(0, V, (n,), generator=g)
    gy = randn(n, D)
    got = nl.embedding_backward(nd(gy), nd(idx), V)
    close(got, cpu.embedding_backward(nd(gy), nd(idx), V), f"embedding {n}")
# an index of any shape, the rows' gradient shaped (*index.shape, D)
idx = torch.randint(0, 6, (4, 9), generator=g)
gy = randn(4, 9, 5)
close(nl.embedding_backward(nd(gy), nd(idx), 6), cpu.embedding_backward(nd(gy), nd(idx), 6), "embedding 2-d index")
print("ok")
"""


@pytest.mark.parametrize("index_bits", ["narrow", "wide"])
def test_cuda_launchers_under_the_interpreter(index_bits: str) -> None:
    pytest.importorskip("cuda.bindings", reason="cuda-python is not installed: the CUDA backend cannot be imported")
    run_interpreted(_LAUNCHERS, index_bits)
