"""Genesis's Triton kernels on machines without cuda-python or a GPU driver (helpers of the CI kernel tests).

The kernel modules need only Triton; their package ``genesis._impl.cuda`` initializes the CUDA runtime on import.
Where that fails, the kernels are loaded through a bare stand-in package, which is removed again afterwards.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import types
from collections.abc import Iterable

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def bare_cuda_package(root: str) -> types.ModuleType:
    """Register (and return) ``genesis._impl.cuda`` as a bare package, its ``__init__`` not run, so that its kernel
    modules and launchers import without cuda-python or a driver."""
    pkg = types.ModuleType("genesis._impl.cuda")
    pkg.__path__ = [os.path.join(root, "genesis", "_impl", "cuda")]
    sys.modules["genesis._impl.cuda"] = pkg
    return pkg


# ``tl`` stand-ins for the libdevice functions the kernels call, for scripts under ``run_interpreted`` (the Triton
# interpreter runs no libdevice): looser than libdevice, exact enough to check a formula's logic. A script starts with
# this source and sets ``<kernel module>.libdevice = LIBDEVICE`` before it launches.
LIBDEVICE_STANDINS = r"""
import types
import triton
import triton.language as tl


@triton.jit
def _exp(x):
    return tl.exp(x)


@triton.jit
def _exp2(x):
    return tl.exp(x * 0.6931471805599453)


@triton.jit
def _expm1(x):
    return tl.exp(x) - 1.0


@triton.jit
def _log(x):
    return tl.log(x)


@triton.jit
def _log1p(x):
    return tl.log(1.0 + x)


@triton.jit
def _tanh(x):
    return 1.0 - 2.0 / (tl.exp(2.0 * x) + 1.0)


@triton.jit
def _sin(x):
    return tl.sin(x)


@triton.jit
def _tan(x):
    return tl.sin(x) / tl.cos(x)


@triton.jit
def _floor(x):
    return tl.floor(x)


@triton.jit
def _signbit(x):
    return (x < 0) | ((x == 0) & (1.0 / x < 0))


LIBDEVICE = types.SimpleNamespace(exp=_exp, exp2=_exp2, expm1=_expm1, log=_log, log1p=_log1p, tanh=_tanh, sin=_sin,
                                  tan=_tan, floor=_floor, signbit=_signbit)
"""


def run_interpreted(script: str, *args: str) -> None:
    """Run ``script`` (Python source) in a subprocess under the Triton interpreter, with the repository importable,
    and check that it ends by printing ``ok`` (``TRITON_INTERPRET`` must be set before any kernel is created)."""
    env = dict(os.environ, TRITON_INTERPRET="1")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (ROOT, env.get("PYTHONPATH", "")) if p)
    out = subprocess.run([sys.executable, "-c", script, *args], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stdout[-1000:] + out.stderr[-3000:]


def kernel_modules(names: Iterable[str]) -> dict[str, types.ModuleType]:
    """``{name: genesis._impl.cuda.kernels.<name>}``, importable without cuda-python or a driver."""
    saved = {k: v for k, v in sys.modules.items() if k == "genesis._impl.cuda" or k.startswith("genesis._impl.cuda.")}
    try:
        importlib.import_module("genesis._impl.cuda")
        loaded = True
    except Exception:  # no cuda-python here: load the kernels through a bare package
        loaded = False
        bare_cuda_package(ROOT)
    try:
        return {n: importlib.import_module(f"genesis._impl.cuda.kernels.{n}") for n in names}
    finally:
        if not loaded:
            for k in [k for k in sys.modules if k == "genesis._impl.cuda" or k.startswith("genesis._impl.cuda.")]:
                del sys.modules[k]
            sys.modules.update(saved)


def compile_for_sm90(fn: object, types_: tuple[str, ...], consts: tuple) -> None:
    """Compile a ``@triton.jit`` kernel ahead of time for sm_90 (no GPU needed) and check a cubin came out.

    ``types_`` are Triton signature types of the leading arguments (``"*fp32:16"`` marks a 16-byte-aligned pointer,
    ``"1"`` a constant 1); ``consts`` are the values of the trailing ``tl.constexpr`` arguments.
    """
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    names = fn.arg_names
    signature, constexprs, attrs = {}, {}, {}
    for i, ty in enumerate(types_):
        if ty == "1":
            signature[names[i]], constexprs[names[i]] = "constexpr", 1
            continue
        if ty.endswith(":16"):
            ty = ty[:-3]
            attrs[(i,)] = [["tt.divisibility", 16]]
        signature[names[i]] = ty
    for j, value in enumerate(consts):
        signature[names[len(types_) + j]] = "constexpr"
        constexprs[names[len(types_) + j]] = value
    compiled = triton.compile(ASTSource(fn, signature, constexprs, attrs), target=GPUTarget("cuda", 90, 32))
    assert compiled.asm["cubin"] and compiled.metadata.name == fn.__name__
