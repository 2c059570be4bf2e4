"""The fused recurrent cell kernels (``genesis/_impl/cuda/kernels/nn_rnn.py``) on a machine without a GPU: each
compiles ahead of time for sm_90, and under ``TRITON_INTERPRET=1`` they compute the CPU backend's values (its cells
are torch composites) for every mode, in float32 and float64, with strided row views as the layer passes them
(steps of (T, B, n) buffers, column blocks of the saved activations) and with absent incoming gradients.

The interpreter runs in a subprocess: ``TRITON_INTERPRET`` must be set before any kernel is created.
"""

from __future__ import annotations

import os

import pytest

from tests.kernel_modules import compile_for_sm90, kernel_modules, run_interpreted

triton = pytest.importorskip("triton", reason="Triton is not installed (pip install triton): kernel checks skipped")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _specs() -> list[tuple]:
    rk = kernel_modules(("nn_rnn",))["nn_rnn"]
    specs = []
    cases = [("*fp32:16", False, mode) for mode in ("LSTM", "GRU", "RNN_TANH", "RNN_RELU")]
    cases += [(ptr, ptr == "*fp64:16", mode) for ptr in ("*bf16:16", "*fp64:16") for mode in ("LSTM", "GRU")]
    for ptr, f64, mode in cases:
        specs.append((f"fwd {mode} {ptr}", rk.rnn_cell_fwd, (ptr,) * 6 + ("i32",) * 7, (mode, f64, 256)))
        specs.append((f"bwd {mode} {ptr}", rk.rnn_cell_bwd, (ptr,) * 9 + ("i32",) * 10,
                      (mode, True, True, mode in ("LSTM", "GRU"), f64, 1024)))
    return specs


@pytest.mark.parametrize("spec", _specs(), ids=lambda s: s[0])
def test_kernel_compiles_for_sm90(spec: tuple) -> None:
    _, fn, types_, consts = spec
    compile_for_sm90(fn, types_, consts)


_INTERPRETED = r"""
import importlib, sys
import torch
root = sys.argv[1]
from tests.kernel_modules import bare_cuda_package
bare_cuda_package(root)
rk = importlib.import_module("genesis._impl.cuda.kernels.nn_rnn")
import genesis._impl.cpu as cpu

g = torch.Generator().manual_seed(0)
GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}
SAVED = {"LSTM": 5, "GRU": 4}


def randn(*shape, dtype):
    return (torch.randn(*shape, generator=g, dtype=torch.float64) * 2).to(dtype)


def step(a, t):  # a (B, n) row view of a (T, B, n) buffer, as the layer passes steps
    return a[t]


for dtype in (torch.float32, torch.float64):
    tol = dict(rtol=1e-5, atol=1e-6) if dtype is torch.float32 else dict(rtol=1e-12, atol=1e-12)
    for mode in GATES:
        for B, H, block in ((3, 5, 16), (2, 40, 16)):  # H=40 over three programs of 16 columns
            G = GATES[mode] * H
            gi, gh = randn(2, B, G, dtype=dtype), randn(B, G, dtype=dtype)
            h = randn(B, H, dtype=dtype)
            c = randn(B, 2 * H, dtype=dtype)[:, H:] if mode == "LSTM" else None  # a column block of a wider row
            S = SAVED.get(mode, 0) * H
            outs = [torch.zeros(2, B, H, dtype=dtype), torch.zeros(2, B, H, dtype=dtype)]
            saved = [torch.zeros(2, B, S, dtype=dtype), torch.zeros(2, B, S, dtype=dtype)]
            grid = (B, (H + block - 1) // block)
            cc = c if c is not None else h
            sv = saved[0][1] if S else outs[0][1]
            rk.rnn_cell_fwd[grid](gi[1], gh, h, cc, outs[0][1], sv, H, gi[1].stride(0), gh.stride(0),
                                  h.stride(0), cc.stride(0), outs[0][1].stride(0), sv.stride(0),
                                  MODE=mode, F64=dtype is torch.float64, BLOCK_H=block)
            nd = cpu.wrap
            cpu.rnn_cell_(mode, nd(gi[1]), nd(gh), nd(h), nd(c) if c is not None else None, nd(outs[1][1]),
                          nd(saved[1][1]) if S else None)
            torch.testing.assert_close(outs[0], outs[1], **tol, msg=lambda m: f"fwd {mode} {dtype} h: {m}")
            torch.testing.assert_close(saved[0], saved[1], **tol, msg=lambda m: f"fwd {mode} {dtype} saved: {m}")
            s_arr = saved[1][1] if S else outs[1][1]
            for has in ((True, True, True), (False, True, False), (True, False, True), (False, False, False)):
                g_out = randn(B, H, dtype=dtype) if has[0] else None
                g_h = randn(B, H, dtype=dtype) if has[1] else None
                g_state = randn(B, H, dtype=dtype) if has[2] and mode in SAVED else None
                res = []
                for backend in ("kernel", "cpu"):
                    d_gi = torch.zeros(2, B, G, dtype=dtype)
                    d_gh = torch.zeros(2, B, G, dtype=dtype) if mode == "GRU" else None
                    d_state = torch.zeros(B, H, dtype=dtype) if mode in SAVED else None
                    if backend == "kernel":
                        args = [a if a is not None else h for a in (g_out, g_h, g_state, h, c)]
                        args += [s_arr, d_gi[1], d_gh[1] if d_gh is not None else d_gi[1],
                                 d_state if d_state is not None else d_gi[1]]
                        rk.rnn_cell_bwd[grid](*args, H, *[a.stride(0) for a in args],
                                              MODE=mode, HAS_OUT=has[0], HAS_H=has[1], HAS_STATE=g_state is not None,
                                              F64=dtype is torch.float64, BLOCK_H=block)
                    else:
                        opt = lambda a: nd(a) if a is not None else None
                        cpu.rnn_cell_backward_(mode, opt(g_out), opt(g_h), opt(g_state), nd(h), opt(c), nd(s_arr),
                                               nd(d_gi[1]), opt(d_gh[1] if d_gh is not None else None),
                                               opt(d_state))
                    res.append((d_gi, d_gh, d_state))
                for got, ref, what in zip(res[0], res[1], ("d_gi", "d_gh", "d_state")):
                    if ref is not None:
                        torch.testing.assert_close(got, ref, **tol, msg=lambda m: f"bwd {mode} {what} {has}: {m}")
print("ok")
"""


def test_kernels_compute_the_cpu_cells_under_the_interpreter() -> None:
    run_interpreted(_INTERPRETED, ROOT)
