"""Stand-ins that run the CUDA backend's launchers under the Triton interpreter on CPU arrays.

Imported by the CI kernel tests' subprocesses after ``TRITON_INTERPRET=1`` is set. ``patch_loop_bounds()`` lets
Triton 3.6's interpreter take runtime loop bounds with numpy >= 2.4 (it turns them into 1-element arrays, which
numpy no longer converts with ``int()``; fixed in Triton 3.9). ``install(module)`` makes a launcher module
(``nn_fused``, ``nn_layers``) allocate CPU arrays, pass torch views as "pointers" (which the interpreter reads) and
launch every kernel through the interpreter with its constexpr values by name.
"""

from __future__ import annotations

from typing import Any


def patch_loop_bounds() -> None:
    """Interpreter tensors convert to ``int`` through their first element (see the module docstring)."""
    from triton.runtime import interpreter

    patch_tensor = interpreter._patch_lang_tensor

    def patched(tensor: Any, scope: Any) -> None:
        patch_tensor(tensor, scope)
        scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data.reshape(-1)[0]))

    interpreter._patch_lang_tensor = patched


class Runtime:
    """The parts of ``genesis._impl.cuda.runtime`` the launchers use, for a pretend GPU of three SMs."""

    def ensure_device(self, index: int) -> None:
        pass

    def multiprocessor_count(self, index: int | None = None) -> int:
        return 3


def launcher(self: Any, types: tuple, consts: tuple, num_warps: int = 4, num_stages: int = 3) -> Any:
    """``Kernel.launcher`` through the interpreter: checks the argument counts of every launch."""
    fn = self.fn
    assert len(types) + len(consts) == len(fn.arg_names), fn.__name__
    meta = dict(zip(fn.arg_names[len(types):], consts))

    def go(gx: int, gy: int, gz: int, *args: Any) -> None:
        assert len(args) == len(types), fn.__name__
        fn[(gx, gy, gz)](*args, **meta)
    return go


def _new_channels_last(shape: tuple, dtype: Any, device: Any) -> Any:
    """A CPU array laid out channels_last (channels_last_3d for 5-d)."""
    import torch

    import genesis._impl.cpu as cpu
    from genesis._impl.cpu.tensors import wrap

    fmt = torch.channels_last if len(shape) == 4 else torch.channels_last_3d
    return wrap(torch.empty(shape, dtype=cpu.TORCH_DTYPE[dtype], memory_format=fmt))


def install(module: Any) -> None:
    """Point ``module``'s allocation, pointer and launch helpers at CPU arrays and the interpreter."""
    import genesis._impl.cpu as cpu
    from genesis._impl.cuda import triton_driver as td

    td.Kernel.launcher = launcher
    module.rt = Runtime()
    module._new = lambda shape, dtype, device: cpu.empty(shape, dtype, device)
    module._new_channels_last = _new_channels_last
    module._ptr = cpu.native
    module._psig = lambda x, p: "*fp32"
    module._pointers = lambda arrays: ([cpu.native(a) for a in arrays], ("*fp32",) * len(arrays))
    module._contig = lambda x: x.is_contiguous()
