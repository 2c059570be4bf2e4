"""Genesis Triton kernels on a machine without a GPU: every kernel compiles ahead of time for sm_90, and the
elementwise and softmax kernels compute the right values under the Triton interpreter (float32; not the ops that
call libdevice, which the interpreter cannot run). Kernels with loops over runtime bounds are checked on the GPU
only: Triton 3.6's interpreter fails on them with numpy >= 2.4.

Skips with a reason when Triton is not installed. The interpreter checks run in a subprocess because
``TRITON_INTERPRET=1`` must be set before any ``@triton.jit`` function is created.
"""

from __future__ import annotations

import os

import pytest

from tests.kernel_modules import compile_for_sm90, kernel_modules, run_interpreted

triton = pytest.importorskip("triton", reason="Triton is not installed (pip install triton): kernel checks skipped")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ST4 = ["i64:16", "i64", "i64", "1"]


def _specs() -> list[tuple]:
    k = kernel_modules(("elementwise", "reduce", "index", "random", "complex", "nn_grid_sample"))
    ek, rk, ik, rnd, ck = k["elementwise"], k["reduce"], k["index"], k["random"], k["complex"]
    gs = k["nn_grid_sample"]
    c64, c128 = ("*fp32:16",) * 3 + ("fp32", "fp32", "i32"), ("*fp64:16",) * 3 + ("fp64", "fp64", "i32")
    ptr3 = ("*fp32:16", "*fp32:16", "*fp32:16")
    return [
        ("add fp32", ek.ew_contig, (*ptr3, "i32", "i32:16"), ("add", 2, 1, 1, 0, 2048, False)),
        ("mul bf16 scalar", ek.ew_contig, ("*bf16:16", "*bf16:16", "fp32", "i32", "i32"),
         ("mul", 2, 1, 2, 0, 4096, False)),
        ("gelu fp16", ek.ew_contig, ("*fp16:16", "*fp16:16", "i32", "i32", "i32"), ("gelu", 1, 1, 0, 0, 4096, False)),
        ("gelu_backward bf16", ek.ew_contig, ("*bf16:16", "*bf16:16", "*bf16:16", "i32", "i32:16"),
         ("gelu_backward", 2, 1, 1, 0, 4096, False)),
        ("relu_backward bf16", ek.ew_contig, ("*bf16:16", "*bf16:16", "*bf16:16", "i32", "i32:16"),
         ("relu_backward", 2, 1, 1, 0, 4096, False)),
        ("gelu_tanh_backward fp16", ek.ew_contig, ("*fp16:16", "*fp16:16", "*fp16:16", "i32", "i32:16"),
         ("gelu_tanh_backward", 2, 1, 1, 0, 4096, False)),
        ("silu_backward fp32", ek.ew_contig, (*ptr3, "i32", "i32:16"), ("silu_backward", 2, 1, 1, 0, 2048, False)),
        ("silu_backward fp64", ek.ew_contig, ("*fp64:16", "*fp64:16", "*fp64:16", "i32", "i32:16"),
         ("silu_backward", 2, 1, 1, 0, 1024, False)),
        ("strided gelu_backward", ek.ew_strided, (*ptr3, "i32", "i32", "i32:16", "i32", "i32", "i32", *ST4 * 4),
         ("gelu_backward", 2, 1, 1, 0, 2, 1024)),
        ("floor_divide i64", ek.ew_contig, ("*i64:16", "*i64:16", "*i64:16", "i32", "i32"),
         ("floor_divide", 2, 1, 1, 0, 1024, False)),
        ("reciprocal fp32", ek.ew_contig, ("*fp32:16", "*fp32:16", "i32", "i32", "i32"),
         ("reciprocal", 1, 1, 0, 0, 2048, False)),
        ("reciprocal bf16", ek.ew_contig, ("*bf16:16", "*bf16:16", "i32", "i32", "i32"),
         ("reciprocal", 1, 1, 0, 0, 4096, False)),
        ("i0 fp64", ek.ew_contig, ("*fp64:16", "*fp64:16", "i32", "i32", "i32"), ("i0", 1, 1, 0, 0, 1024, False)),
        ("where fp64", ek.ew_contig, ("*fp64:16", "*i1:16", "*fp64:16", "*fp64", "i32"),
         ("where", 3, 1, 1, 3, 1024, True)),
        ("strided add", ek.ew_strided, (*ptr3, "i32", "i32", "i32:16", "i32", "i32", "i32", *ST4 * 4),
         ("add", 2, 1, 1, 0, 2, 1024)),
        ("triu bf16", ek.triangle_kernel, ("*bf16:16", "*bf16:16", "i32", "i32:16", "i32", "i64", "i32"),
         (True, 4, 1024)),
        ("arange", ek.arange_kernel, ("*fp32:16", "fp64", "fp64", "i32"), (1024,)),
        ("sum rows", rk.reduce_rows, ("*fp32:16", "*fp32:16", "i32", "i32", "i64", "1", "i32", "i32", "fp32", "fp32"),
         ("sum", 1, 2048)),
        ("mean rows bf16", rk.reduce_rows, ("*bf16:16", "*bf16:16", "i32", "i32", "i64", "1", "i32", "i32", "fp32",
                                            "fp32"), ("mean", 1, 2048)),
        ("amax cols bf16", rk.reduce_cols, ("*bf16:16", "*fp32:16", "i32", "i32", "i64", "1", "i32", "fp32", "fp32"),
         ("amax", 16, 256)),
        ("sumsq rows bf16", rk.reduce_rows, ("*bf16:16", "*fp32:16", "i32", "i32", "i64", "1", "i32", "i32", "fp32",
                                             "fp32"), ("sumsq", 1, 2048)),
        ("var rows", rk.var_rows, ("*fp32:16", "*fp32:16", "*fp32:16", "i32", "i32", "i64", "1", "i32", "i32", "fp32"),
         (False, False, False, 1, 2048)),
        ("std rows bf16 split", rk.var_rows, ("*bf16:16", "*bf16:16", "*fp32:16", "i32", "i32", "i64", "1", "i32",
                                              "i32", "fp32"), (True, True, False, 4, 512)),
        ("var cols fp64", rk.var_cols, ("*fp64:16", "*fp64:16", "*fp64:16", "i32", "i32", "i64", "i32", "i32", "fp64"),
         (False, False, True, 16, 256)),
        ("std merge fp64", rk.var_merge, ("*fp64:16", "*fp64:16", "i32", "i32", "fp64"), (True, 64, 32)),
        ("argmax", rk.arg_reduce_rows, ("*fp32:16", "*i64:16", "*i64", "i32", "i32", "i64", "1"),
         (True, False, 1, 2048)),
        ("min with index bf16", rk.arg_reduce_rows,
         ("*bf16:16", "*i64:16", "*bf16:16", "i32", "i32:16", "i64:16", "1"), (False, True, 4, 256)),
        ("cumsum rows", rk.scan_rows, ("*fp32:16", "*fp32:16", "i32", "i32"), ("cumsum", 1, 1024)),
        ("cumprod cols", rk.scan_cols, ("*fp16:16", "*fp16:16", "i32", "i32", "i32"), ("cumprod", 256)),
        ("softmax", rk.softmax_rows, ("*fp32:16", "*fp32:16", "i32", "i32"), (False, 1024, True, False)),
        ("safe softmax online", rk.softmax_rows, ("*bf16:16", "*bf16:16", "i32", "i32"), (False, 2048, False, True)),
        ("log_softmax online", rk.softmax_rows, ("*bf16:16", "*bf16:16", "i32", "i32"), (True, 2048, False, False)),
        ("softmax fp64", rk.softmax_rows64, ("*fp64:16", "*fp64:16", "i32", "i32"), (False, 1024, True)),
        ("gather", ik.gather_kernel, ("*fp32:16", "*fp32:16", "*i64:16", *["i32"] * 5, *(ST4 * 3), "i64"),
         (True, 4, 256)),
        ("scatter add", ik.scatter_kernel, ("*bf16:16", "*bf16:16", "*i64:16", *["i32"] * 5, *ST4 * 3, "i64"),
         (True, 1, False, 4, 256)),
        ("searchsorted", ik.searchsorted_kernel, ("*fp32:16", "*fp32:16", "*i64:16", "i32", "i32", "i32", "i32"),
         (True, 12, 256)),
        ("check index", ik.check_index_kernel, ("*i64:16", "*i64:16", "*i64", "i64", "i64", "i64", "i64", "i64"),
         (False, 1024)),
        ("check target", ik.check_index_kernel, ("*i32:16", "*i32:16", "*i64", "i64", "i64", "i64", "i64", "i64"),
         (True, 1024)),
        ("check unit interval bf16", ik.unit_interval_kernel, ("*bf16:16", "*i64", "i64", "i64"), (1024,)),
        ("grid sample bilinear reflection", gs.grid_sample_fwd, ("*fp32:16", "*fp32:16", "*fp32:16", *["i32"] * 4),
         (False, 2, False, False, 64, 16)),
        ("grid sample backward nearest fp64", gs.grid_sample_bwd, ("*fp64:16",) * 5 + ("i32",) * 4,
         (True, False, True, 0, True, True, 64, 4)),
        ("grid sample backward bilinear bf16", gs.grid_sample_bwd,
         ("*bf16:16", "*bf16:16", "*bf16:16", "*fp32:16", "*bf16:16", *["i32"] * 4), (True, True, False, 1, True, False,
                                                                                    64, 16)),
        ("pivot order", ik.pivot_order_kernel, ("*i32:16", "*i64:16", "i32", "i32"), (64,)),
        ("sort", ik.sort_rows_kernel, ("*fp32:16", "*fp32:16", "*i64:16", "i32"), (False, 64)),
        ("split 64-bit sort keys", ik.split_keys64_kernel, ("*fp64:16", "*i32:16", "*i32:16", "i64"), (True, 1024)),
        ("sort tiles bf16", ik.sort_tiles_kernel, ("*bf16:16", "*u64:16", "i32", "i64"), (True, 4096)),
        ("bitonic flip", ik.bitonic_stage_kernel, ("*u64:16", "i64", "i64"), (True, 1024)),
        ("sort tile keys, last", ik.sort_tile_keys_kernel,
         ("*u64:16", "*i32:16", "*i32:16", "*i64:16", "i32", "i64"), (True, 4096)),
        ("topk bf16", ik.topk_rows_kernel, ("*bf16:16", "*bf16:16", "*i64:16", "i32", "i32"), (True, 4096)),
        ("topk smallest int32", ik.topk_rows_kernel, ("*i32:16", "*i32:16", "*i64:16", "i32", "i32"), (False, 64)),
        ("normal", rnd.random_kernel, ("*bf16:16", "i64", "u64", "i64", "*i64", "i64", "u64"),
         ("normal", 0.99609375, False, 1024)),
        ("uniform graph", rnd.random_kernel, ("*fp32:16", "i64", "u64", "i64", "*i64:16", "i64", "u64"),
         ("uniform", 0.99999994, True, 1024)),
        ("dropout bf16", rnd.dropout_kernel, ("*bf16:16", "*bf16:16", "i64", "u64", "i64", "*i64", "fp32", "fp32"),
         (False, 1024)),
        ("complex64 mul", ck.complex_ew, c64, ("mul", 2, 1, 1, 512, False)),
        ("complex128 div by a scalar", ck.complex_ew, c128, ("div", 2, 1, 2, 512, False)),
        ("complex64 div by one element", ck.complex_ew, c64, ("div", 2, 1, 3, 512, False)),
        ("complex64 exp", ck.complex_ew, c64, ("exp", 1, 1, 2, 512, False)),
        ("complex128 exp", ck.complex_ew, c128, ("exp", 1, 1, 2, 512, True)),
        ("complex128 reciprocal", ck.complex_ew, c128, ("reciprocal", 1, 1, 2, 512, False)),
        ("complex64 conj", ck.complex_ew, c64, ("conj", 1, 1, 2, 512, False)),
        ("cat bf16", ek.cat_rows, ("*bf16:16", "*bf16:16", "*bf16", "*bf16:16", "*bf16:16", *("i64",) * 25),
         (2, 2048)),
        ("cat bool", ek.cat_rows, ("*i1:16",) * 5 + ("i64",) * 25, (8, 512)),
    ]


@pytest.mark.parametrize("spec", _specs(), ids=lambda s: s[0])
def test_kernel_compiles_for_sm90(spec: tuple) -> None:
    _, fn, types_, consts = spec
    compile_for_sm90(fn, types_, consts)


_INTERPRETED = r"""
import importlib, sys
import torch
from tests.interpreter_stubs import patch_loop_bounds

patch_loop_bounds()  # the chunked softmax loops to a runtime bound (see tests/interpreter_stubs.py)
root = sys.argv[1]
from tests.kernel_modules import bare_cuda_package
bare_cuda_package(root)
ek = importlib.import_module("genesis._impl.cuda.kernels.elementwise")
rk = importlib.import_module("genesis._impl.cuda.kernels.reduce")
g = torch.Generator().manual_seed(0)
a, b = torch.randn(1000, generator=g), torch.randn(1000, generator=g)
out = torch.empty(1000)
for op, ref in (("add", a + b), ("mul", a * b), ("maximum", torch.maximum(a, b)), ("sub", a - b)):
    ek.ew_contig[(4,)](out, a, b, a, 1000, OP=op, NIN=2, M0=1, M1=1, M2=0, BLOCK=256, I64=False)
    torch.testing.assert_close(out, ref, msg=op)
# silu_backward (the GELU gradients call libdevice, which only a GPU runs)
ek.ew_contig[(4,)](out, b, a * 8, a, 1000, OP="silu_backward", NIN=2, M0=1, M1=1, M2=0, BLOCK=256, I64=False)
torch.testing.assert_close(out, torch.ops.aten.silu_backward(b, a * 8), msg="silu_backward")
ek.ew_contig[(4,)](out, b, a.relu(), a, 1000, OP="relu_backward", NIN=2, M0=1, M1=1, M2=0, BLOCK=256, I64=False)
torch.testing.assert_close(out, torch.ops.aten.threshold_backward(b, a.relu(), 0), msg="relu_backward")
for op, ref in (("relu", a.relu()), ("neg", -a), ("abs", a.abs())):
    ek.ew_contig[(4,)](out, a, a, a, 1000, OP=op, NIN=1, M0=1, M1=0, M2=0, BLOCK=256, I64=False)
    torch.testing.assert_close(out, ref, msg=op)
x = torch.randn(6, 40, generator=g)
s = torch.empty(6)
y = torch.empty(6, 40)
rk.softmax_rows[(6,)](x, y, 6, 40, LOG=False, BLOCK_K=64, ONE_PASS=True, SAFE=False)
torch.testing.assert_close(y, x.softmax(1))
rk.softmax_rows[(6,)](x, y, 6, 40, LOG=True, BLOCK_K=64, ONE_PASS=True, SAFE=False)
torch.testing.assert_close(y, x.log_softmax(1))
masked = x.clone()
masked[2] = float("-inf")  # a row that attends nothing: zeros with SAFE, in both the one-pass and chunked kernels
masked[4, :30] = float("-inf")
for one_pass, block in ((True, 64), (False, 16)):
    rk.softmax_rows[(6,)](masked, y, 6, 40, LOG=False, BLOCK_K=block, ONE_PASS=one_pass, SAFE=True)
    torch.testing.assert_close(y, torch._safe_softmax(masked, 1))
# the sum of squares; Welford's variance of rows (in chunks of 16, and split over 3 programs per row merged by
# var_merge) and of columns, rows of large mean and a single element (nan), Bessel's correction and none (float32
# accumulation against float64: rows of mean 1000 and deviation 3 agree to about 1e-5)
xv = torch.randn(6, 40, generator=g) * 3 + 1000
xv[5, 1:] = 0.0
sq = torch.empty(6)
rk.reduce_rows[(6, 1)](xv, sq, 6, 40, 40, 1, 40, 1, 0.0, 1.0, OP="sumsq", BLOCK_M=1, BLOCK_K=16)
torch.testing.assert_close(sq, (xv.double() ** 2).sum(1).float())
for correction, root in ((1, False), (0, True)):
    ref = xv.double().var(1, correction=correction)
    ref = (ref.sqrt() if root else ref).float()
    got = torch.empty(6)
    rk.var_rows[(3, 1)](xv, got, got, 6, 40, 40, 1, 40, 1, 40.0 - correction, ROOT=root, SPLIT=False, F64=False,
                        BLOCK_M=2, BLOCK_K=16)
    torch.testing.assert_close(got, ref, rtol=1e-4, atol=0, msg=f"var rows {correction}")
    part = torch.empty(3, 6, 3)
    rk.var_rows[(6, 3)](xv, got, part, 6, 40, 40, 1, 16, 3, 0.0, ROOT=root, SPLIT=True, F64=False, BLOCK_M=1,
                        BLOCK_K=8)
    got.zero_()
    rk.var_merge[(2,)](part, got, 6, 3, 40.0 - correction, ROOT=root, BLOCK_M=4, BLOCK_P=4)
    torch.testing.assert_close(got, ref, rtol=1e-4, atol=0, msg=f"var split {correction}")
    got = torch.empty(6)
    rk.var_cols[(2, 1)](xv.t().contiguous(), got, got, 40, 6, 6, 40, 1, 40.0 - correction, ROOT=root, SPLIT=False,
                        F64=False, BLOCK_K=8, BLOCK_N=4)
    torch.testing.assert_close(got, ref, rtol=1e-4, atol=0, msg=f"var cols {correction}")
one = torch.empty(6)
rk.var_rows[(6, 1)](xv[:, :1].contiguous(), one, one, 6, 1, 1, 1, 1, 1, 0.0, ROOT=False, SPLIT=False, F64=False,
                    BLOCK_M=1, BLOCK_K=1)
assert one.isnan().all(), one
ik = importlib.import_module("genesis._impl.cuda.kernels.index")
flag = torch.zeros(3, dtype=torch.int64)
idx = torch.tensor([0, -1, 3, -4, 2])
res = torch.empty_like(idx)
ik.check_index_kernel[(1,)](idx, res, flag, 5, -4, 4, 0, 7, HAS_IGNORE=False, BLOCK=8)
assert res.tolist() == [0, 3, 3, 0, 2] and flag.tolist() == [0, 0, 0], (res, flag)
ik.check_index_kernel[(2,)](idx, res, flag, 5, 0, 3, 0, 7, HAS_IGNORE=False, BLOCK=4)
assert res.tolist() == [0, 0, 0, 0, 2] and flag[0] == 7 and flag[2] == 3 and flag[1] in (-1, 3, -4), (res, flag)
flag.zero_()
target = torch.tensor([1, -100, 2, 0], dtype=torch.int32)
res = torch.empty_like(target)
ik.check_index_kernel[(1,)](target, res, flag, 4, 0, 3, -100, 2, HAS_IGNORE=True, BLOCK=4)
assert res.tolist() == [1, -100, 2, 0] and flag.tolist() == [0, 0, 0], (res, flag)
target[2] = 5
ik.check_index_kernel[(1,)](target, res, flag, 4, 0, 3, -100, 2, HAS_IGNORE=True, BLOCK=4)
assert res.tolist() == [1, -100, -100, 0] and flag.tolist() == [2, 5, 3], (res, flag)
flag.zero_()
probabilities = torch.tensor([0.0, 0.5, 1.0, 0.25, 1.0, 0.0])
ik.unit_interval_kernel[(2,)](probabilities, flag, 6, 9, BLOCK=4)
assert flag.tolist() == [0, 0, 0], flag
for bad in (-1e-7, 1.0000001, float("nan")):
    probabilities[4] = bad
    ik.unit_interval_kernel[(2,)](probabilities, flag, 6, 9, BLOCK=4)
    assert flag[0] == 9, (bad, flag)
    flag.zero_()
# tril / triu of a batch of 3 x 5 matrices in tiles of 2 rows x 4 columns, diagonals below, on and above the main one
tri = torch.randn(2, 3, 5, generator=g)
for upper in (False, True):
    for kk in (-1, 0, 2):
        got = torch.full((2, 3, 5), 9.0)
        ek.triangle_kernel[(3 * 2,)](tri, got, 6, 5, 3, kk, 2, UPPER=upper, BLOCK_R=2, BLOCK_C=4)
        assert torch.equal(got, tri.triu(kk) if upper else tri.tril(kk)), (upper, kk)
# max / min along rows with the first extremum's position: ties to the first, NaN the extremum, rows shorter and
# longer than the lanes (a lane that sees no element loses), strided rows
ext = torch.tensor([[3.0, 1.0, 3.0, float("nan"), 2.0, float("nan")], [-1.0, -5.0, 4.0, -5.0, 4.0, 0.0],
                    [float("-inf")] * 6])
for is_max in (True, False):
    for lanes in (4, 8):
        pos, best = torch.empty(3, dtype=torch.int64), torch.empty(3)
        rk.arg_reduce_rows[(3,)](ext, pos, best, 3, 6, 6, 1, IS_MAX=is_max, VALUES=True, BLOCK_M=1, BLOCK_K=lanes)
        ref = ext.max(1) if is_max else ext.min(1)
        assert torch.equal(pos, ref.indices), (is_max, lanes, pos)
        torch.testing.assert_close(best, ref.values, equal_nan=True)
    pos = torch.empty(6, dtype=torch.int64)
    rk.arg_reduce_rows[(3,)](ext, pos, pos, 6, 3, 1, 6, IS_MAX=is_max, VALUES=False, BLOCK_M=2, BLOCK_K=2)
    assert torch.equal(pos, ext.argmax(0) if is_max else ext.argmin(0)), (is_max, pos)
# topk by selection: the first k of a stable sort (ties by position, NaN the largest), largest and smallest
vals = torch.tensor([[3.0, float("nan"), 3.0, -1.0, 7.0, 3.0, 0.0], [1.0, 1.0, 1.0, 1.0, 2.0, -5.0, -0.0]])
for largest in (True, False):
    tv, ti = torch.empty(2, 4), torch.empty(2, 4, dtype=torch.int64)
    ik.topk_rows_kernel[(2,)](vals, tv, ti, 7, 4, DESCENDING=largest, BLOCK=8)
    rv, ri = torch.sort(vals, dim=1, descending=largest, stable=True)
    assert torch.equal(ti, ri[:, :4]), (largest, ti, ri)
    torch.testing.assert_close(tv, rv[:, :4], equal_nan=True)
# sort of rows longer than a tile: tiles of 8 keys sorted, then bitonic merges (a flip stage, half-cleaners across
# tiles, tiles sorted again), as indexing._sort_long runs them; ties by position, NaN the largest, both orders
rows = torch.randint(-4, 5, (3, 37), generator=g).float()
rows[1, 5], rows[2, :20] = float("nan"), 2.0
P, tile = 64, 8
for descending in (False, True):
    keys = torch.empty(3 * P, dtype=torch.uint64)  # unsigned, as the launcher declares them on the GPU
    sv, si = torch.empty(3, 37), torch.empty(3, 37, dtype=torch.int64)
    ik.sort_tiles_kernel[(3 * P // tile,)](rows, keys, 37, P, DESCENDING=descending, BLOCK=tile)
    run = 2 * tile
    while run <= P:
        ik.bitonic_stage_kernel[(3 * P // 2 // 16,)](keys, 3 * P // 2, run // 2, FLIP=True, BLOCK=16)
        j = run // 4
        while j >= tile:
            ik.bitonic_stage_kernel[(3 * P // 2 // 16,)](keys, 3 * P // 2, j, FLIP=False, BLOCK=16)
            j //= 2
        ik.sort_tile_keys_kernel[(3 * P // tile,)](keys, rows, sv, si, 37, P, LAST=run == P, BLOCK=tile)
        run *= 2
    rv, ri = torch.sort(rows, dim=1, descending=descending, stable=True)
    assert torch.equal(si, ri), (descending, si, ri)
    torch.testing.assert_close(sv, rv, equal_nan=True)
# 64-bit values as two int32 keys: sorting stably by the low words, then by the high ones, sorts the values (ties
# by position, NaN the largest, -0.0 equal to 0.0, integers to their extremes)
wide = [torch.tensor([3.5, float("nan"), -0.0, 0.0, float("-inf"), 3.5, -2.0, 1e300, float("inf"), -1e-300] * 3,
                     dtype=torch.float64),
        torch.tensor([5, -1, 2**62, -2**63, 2**63 - 1, 0, 5, -1, 2**32, 2**32 - 1] * 3, dtype=torch.int64)]
for xw in wide:
    for descending in (False, True):
        hi, lo = torch.empty(30, dtype=torch.int32), torch.empty(30, dtype=torch.int32)
        ik.split_keys64_kernel[(2,)](xw, hi, lo, 30, DESCENDING=descending, BLOCK=16)
        by_low = torch.sort(lo, stable=True).indices
        order = by_low[torch.sort(hi[by_low], stable=True).indices]
        assert torch.equal(order, torch.sort(xw, descending=descending, stable=True).indices), (xw.dtype, descending)
# complex products and quotients on interleaved parts (exp calls libdevice: GPU only); divisors with a larger real
# or imaginary part take the two branches of Smith's algorithm, 0 gives infinities and NaN as torch
ck = importlib.import_module("genesis._impl.cuda.kernels.complex")
z = torch.view_as_complex(torch.randn(300, 2, generator=g, dtype=torch.float64))
w = torch.view_as_complex(torch.randn(300, 2, generator=g, dtype=torch.float64))
w[:3] = torch.tensor([0j, 1e-200 + 1e200j, 3.0 + 0j])
for dt in (torch.complex64, torch.complex128):
    zz, ww = z.to(dt), w.to(dt)
    got = torch.empty_like(zz)
    real = torch.view_as_real
    for op, nin, mb, bb, ref in (("mul", 2, 1, ww, zz * ww), ("div", 2, 1, ww, zz / ww), ("div", 2, 3, ww[2:], zz / 3),
                                 ("reciprocal", 1, 2, zz, 1 / zz), ("conj", 1, 2, zz, zz.conj())):
        ck.complex_ew[(3,)](real(got), real(zz), real(bb), 0.0, 0.0, 300, OP=op, NIN=nin, MA=1, MB=mb, BLOCK=128,
                            I64=False)
        torch.testing.assert_close(got, ref.resolve_conj(), equal_nan=True, msg=f"{op} {dt}")
    ck.complex_ew[(3,)](real(got), real(zz), real(zz), 2.0, -0.5, 300, OP="mul", NIN=2, MA=1, MB=2, BLOCK=128,
                        I64=False)
    torch.testing.assert_close(got, zz * (2 - 0.5j), msg=f"mul by a scalar {dt}")
# nearest x2 resampling: the 2 x 2 replicas and their summed gradient, rows of odd width
uk = importlib.import_module("genesis._impl.cuda.kernels.nn_upsample")
xi = torch.randn(2, 3, 5, 7, generator=g)
yo = torch.empty(2, 3, 10, 14)
uk.nearest2x_fwd[(2,)](xi, yo, xi.numel(), 7, I64=False, BLOCK=128)
torch.testing.assert_close(yo, torch.nn.functional.interpolate(xi, scale_factor=2), rtol=0, atol=0)
gy = torch.randn(2, 3, 10, 14, generator=g)
dxi = torch.empty(2, 3, 5, 7)
uk.nearest2x_bwd[(2,)](gy, dxi, xi.numel(), 7, F64=False, I64=False, BLOCK=128)
xr = xi.clone().requires_grad_(True)
torch.nn.functional.interpolate(xr, scale_factor=2).backward(gy)
torch.testing.assert_close(dxi, xr.grad)
# cat: three inputs in one launch, one of them rows of a wider array (a slice along the last dim), blocks narrower
# than the widest input
xa, xb = torch.randn(5, 6, generator=g), torch.randn(5, 10, generator=g)
xc = torch.randn(5, 2, generator=g)
cat_out = torch.full((5, 11), -1.0)
nb = 2  # column blocks of 4 over the widest input (6 columns)
ek.cat_rows[(3 * nb, 3)](cat_out, xa, xb[:, 3:], xc, cat_out, 6, 3, 2, 0, 6, 10, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                         0, 6, 9, 0, 5, 1, 1, 11, nb, ROWS=2, BLOCK=4)
torch.testing.assert_close(cat_out, torch.cat([xa, xb[:, 3:6], xc], 1), rtol=0, atol=0)
# cat of a transposed input (rows not evenly spaced) and a contiguous one along the last dim: rows numbered over
# (2, 3) as (2, 1, 3)
xt = torch.randn(3, 2, 4, generator=g).transpose(0, 1)  # (2, 3, 4), strides (4, 8, 1)
xd = torch.randn(2, 3, 5, generator=g)
cat_out = torch.full((2, 3, 9), -1.0)
ek.cat_rows[(2, 2)](cat_out, xt, xd, cat_out, cat_out, 4, 5, 0, 0, 4, 15, 0, 0, 0, 0, 0, 0, 8, 5, 0, 0, 0, 4, 0, 0,
                    6, 1, 3, 9, 1, ROWS=4, BLOCK=8)
torch.testing.assert_close(cat_out, torch.cat([xt, xd], 2), rtol=0, atol=0)
print("ok")
"""


def test_kernels_compute_right_values_under_the_interpreter() -> None:
    run_interpreted(_INTERPRETED, ROOT)
