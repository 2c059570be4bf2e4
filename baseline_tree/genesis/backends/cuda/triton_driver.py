"""Genesis's own Triton driver and a lean launch path for compiled kernels.

Triton's stock CUDA driver asks PyTorch for the current device and stream. Genesis installs a driver that answers
from its own runtime instead, so kernels launch on Genesis's current stream and torch is never imported.

Kernels are compiled ahead of the first launch with ``triton.compile`` for an explicit signature (Genesis decides
what is specialized: 16-byte pointer alignment, unit strides as constants) and the compiled kernel's C launcher is
bound once per specialization. A launch is then one Python call into that launcher, not the generic
``kernel[grid](...)`` path that binds and specializes every argument on every call.
"""

from __future__ import annotations

import sys
from typing import Any, Callable, Sequence

import triton
from triton.backends.compiler import BaseBackend, GPUTarget
from triton.backends.nvidia.driver import CudaDriver, CudaLauncher, CudaUtils
from triton.compiler import ASTSource

from genesis.backends.cuda import runtime as rt


class GenesisCudaDriver(CudaDriver):
    """Triton's CUDA driver with device and stream queries answered by Genesis's runtime (no torch)."""

    def __init__(self) -> None:  # GPUDriver.__init__ imports torch: do not call it
        self.utils = CudaUtils()
        self.launcher_cls = CudaLauncher

    def get_current_device(self) -> int:
        return rt.current_device()

    def set_current_device(self, index: int) -> None:
        rt.set_device(index)

    def get_current_stream(self, device: int | None = None) -> int:
        return rt.stream_handle()

    def get_device_capability(self, device: int | None = None) -> tuple[int, int]:
        return rt.capability(device)

    def get_active_torch_device(self) -> Any:
        raise RuntimeError("Genesis's Triton driver has no torch device")

    def get_device_interface(self) -> Any:
        raise RuntimeError("Genesis's Triton driver has no torch device interface")

    @staticmethod
    def is_active() -> bool:
        return True

    def get_benchmarker(self) -> Callable:
        return do_bench


_installed: GenesisCudaDriver | None = None


def _fix_specializer() -> None:
    # Triton's C++ specializer imports torch on its first use when torch is installed (to recognize torch types).
    # Initialize it once while torch is hidden, so later launches never import it.
    if "torch" in sys.modules:
        return
    from triton.runtime import jit

    sys.modules["torch"] = None  # type: ignore[assignment]
    try:
        jit.native_specialize_impl(BaseBackend, 1, False, True, True)
    except Exception:  # noqa: BLE001 - older/newer Triton without this entry point: nothing to fix
        pass
    finally:
        del sys.modules["torch"]


def install() -> GenesisCudaDriver:
    """Make Genesis's driver Triton's active driver (once) and route Triton's scratch allocations to Genesis."""
    global _installed
    if _installed is None:
        _fix_specializer()
        drv = GenesisCudaDriver()
        sys.modules["triton.runtime.driver"].driver.set_active(drv)
        triton.set_allocator(_scratch_alloc)
        _installed = drv
    return _installed


def _scratch_alloc(size: int, alignment: int, stream: int | None) -> Any:
    from genesis.backends.cuda import storage

    return storage.alloc(size, rt.current_device())


# ---------------------------------------------------------------- compilation


def parse_signature(fn: Any, types: Sequence[str], consts: Sequence[Any]) -> tuple[dict, dict, dict]:
    """ASTSource pieces for ``fn``: the first ``len(types)`` params get ``types``, the rest are the ``consts``.

    A type ending in ``:16`` marks a pointer (or int) divisible by 16; the type ``"1"`` makes an int param the
    constant 1 (its launch argument is then ignored). Runtime params come first and constexpr params last in every
    Genesis kernel.
    """
    names = fn.arg_names
    if len(types) + len(consts) != len(names):
        raise TypeError(f"{fn.__name__}: {len(names)} params, got {len(types)} types and {len(consts)} constants")
    signature, attrs = {}, {}
    constexprs = {}
    for i, ty in enumerate(types):
        if ty == "1":  # an int known to equal 1 (unit strides): a compile-time constant
            signature[names[i]] = "constexpr"
            constexprs[names[i]] = 1
            continue
        if ty.endswith(":16"):
            ty = ty[:-3]
            attrs[(i,)] = [["tt.divisibility", 16]]
        signature[names[i]] = ty
    for j, value in enumerate(consts):
        name = names[len(types) + j]
        signature[name] = "constexpr"
        constexprs[name] = value
    return signature, constexprs, attrs


def compile_kernel(fn: Any, types: Sequence[str], consts: Sequence[Any], num_warps: int = 4, num_stages: int = 3,
                   target: GPUTarget | None = None) -> Any:
    """``triton.compile`` one specialization of a ``@triton.jit`` function (works without a GPU given a target)."""
    signature, constexprs, attrs = parse_signature(fn, types, consts)
    if target is None:
        major, minor = rt.capability()
        target = GPUTarget("cuda", major * 10 + minor, 32)
    src = ASTSource(fn, signature, constexprs, attrs)
    return triton.compile(src, target=target, options={"num_warps": num_warps, "num_stages": num_stages})


class Kernel:
    """A Triton kernel with one bound launcher per specialization.

    ``launcher(types, consts, num_warps)`` returns ``go(grid_x, grid_y, grid_z, *runtime_args)`` which launches on
    the current stream. Built launchers are cached by (types, consts, num_warps, num_stages, device).
    """

    def __init__(self, fn: Any) -> None:
        self.fn = fn
        self._cache: dict[tuple, Callable] = {}

    def launcher(self, types: tuple[str, ...], consts: tuple, num_warps: int = 4, num_stages: int = 3) -> Callable:
        # Loaded kernels belong to one device's context: each device binds its own.
        key = (types, consts, num_warps, num_stages, rt.state.device)
        go = self._cache.get(key)
        if go is None:
            go = self._cache[key] = self._bind(types, consts, num_warps, num_stages)
        return go

    def _bind(self, types: tuple[str, ...], consts: tuple, num_warps: int, num_stages: int) -> Callable:
        install()
        ck = compile_kernel(self.fn, types, consts, num_warps, num_stages)
        ck._init_handles()
        run = ck.run
        function = ck.function
        meta = ck.packed_metadata
        tail = tuple(consts)
        state = rt.state
        if run.global_scratch_size or run.profile_scratch_size:
            def go(gx: int, gy: int, gz: int, *args: Any) -> None:
                s = state.streams.get(state.device)
                run(gx, gy, gz, 0 if s is None else s.handle, function, meta, None, None, None, *args, *tail)
            return go
        launch = run.launch
        coop = run.launch_cooperative_grid
        pdl = run.launch_pdl

        def go(gx: int, gy: int, gz: int, *args: Any) -> None:
            if rt.custom_streams:
                s = state.streams.get(state.device)
                stream = 0 if s is None else s.handle
            else:
                stream = 0
            launch(gx, gy, gz, stream, function, coop, pdl, None, None, meta, None, None, None, *args, *tail)
        return go


# ---------------------------------------------------------------- benchmarking


def do_bench(fn: Callable[[], Any], warmup: int = 5, rep: int = 20) -> float:
    """Median milliseconds per call of ``fn`` over ``rep`` calls, each bracketed by its own pair of CUDA events."""
    for _ in range(warmup):
        fn()
    rt.synchronize()
    events = [(rt.Event(enable_timing=True), rt.Event(enable_timing=True)) for _ in range(rep)]
    for start, end in events:
        start.record()
        fn()
        end.record()
    rt.synchronize()
    times = sorted(start.elapsed_time(end) for start, end in events)
    return times[len(times) // 2]
