"""``genesis._dynamo``: the parts of ``torch._dynamo`` that training scripts touch around ``torch.compile``
(``config.suppress_errors = True``, ``reset()``, ``mark_dynamic``), and the ``OptimizedModule`` that
``genesis.compile`` returns for a module. Genesis runs eagerly: nothing here changes how ops execute."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from genesis._dynamo.cudagraphs import GRAPH_MODES, GraphCache
from genesis.compiler import allow_in_graph, assume_constant_result, disable, is_compiling, reset
from genesis.nn import Module

#: torch's dynamo settings that scripts assign; Genesis records them and reads none.
config = SimpleNamespace(suppress_errors=False, cache_size_limit=8, accumulated_cache_size_limit=256, verbose=False,
                         capture_scalar_outputs=False, optimize_ddp=True, automatic_dynamic_shapes=True)


def mark_dynamic(t: Any, index: Any, *, min: int | None = None, max: int | None = None) -> None:
    """Mark dims of ``t`` as dynamic for the compiler: nothing to mark under Genesis."""


def mark_static(t: Any, index: Any = None) -> None:
    """Mark dims of ``t`` as static for the compiler: nothing to mark under Genesis."""


maybe_mark_dynamic = mark_dynamic


class OptimizedModule(Module):
    """What ``genesis.compile(module)`` returns, as torch's: a module that runs ``_orig_mod``: eagerly, or, with
    ``mode="reduce-overhead"`` (or ``"max-autotune"``) on CUDA, by replaying CUDA graphs of its forward and backward
    (``genesis._dynamo.cudagraphs`` says when a call is captured and when it runs eagerly).

    It matters for checkpoints: the wrapped module is the child ``_orig_mod``, so ``state_dict()`` keys carry torch's
    ``_orig_mod.`` prefix and a checkpoint saved from a compiled torch model loads as it is. Attributes the wrapper
    lacks are read from the original module.
    """

    def __init__(self, mod: Module, mode: str | None = None) -> None:
        super().__init__()
        self._orig_mod = mod
        self.training = mod.training
        self._graphs = GraphCache(config.cache_size_limit) if mode in GRAPH_MODES else None

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        if self._graphs is None:
            return self._orig_mod(*args, **kwargs)
        return self._graphs.call(self._orig_mod, self._orig_mod, args, kwargs)

    def _apply(self, fn: Any, recurse: bool = True) -> Module:
        if self.__dict__.get("_graphs") is not None:
            self._graphs.clear()  # moved or converted parameters: the graphs read the old ones
        return super()._apply(fn, recurse)

    def __getattr__(self, name: str) -> Any:
        try:
            return super().__getattr__(name)
        except AttributeError:
            wrapped = self.__dict__.get("_modules", {}).get("_orig_mod")
            if wrapped is None:
                raise
            return getattr(wrapped, name)


__all__ = ["OptimizedModule", "allow_in_graph", "assume_constant_result", "config", "disable", "is_compiling",
           "mark_dynamic", "mark_static", "maybe_mark_dynamic", "reset"]
