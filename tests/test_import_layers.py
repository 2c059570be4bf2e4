"""The layering of ``docs/layers.md`` holds: no module imports from a layer above its own, not even inside a
function, and nothing above the backend implementations imports torch, Triton or the CUDA bindings.

Layers, lowest first (a module may import its own layer and those below):

0. dtypes, device, the switch namespaces ``genesis.backends`` (plain settings), the memo tables (``genesis.memo``)
   and the version numbers (``genesis.version``)
1. NDArray and memory formats
2. backend implementations (``genesis._impl``: the contract, the CPU backend, the CUDA backend); they build
   NDArrays, and NDArray reaches them only through its device (``Device.backend``)
3. autograd (Function, Primitive, the engine, grad mode)
4. Tensor
5. ops (``genesis.ops``: the registry and the ops by theme), random numbers, linalg, special functions, fft
6. nn, optim, amp, cuda (the public GPU API), serialization, data loading, profiler, distributions
7. models and the LLM stack
"""

from __future__ import annotations

import ast
import os

import pytest

ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "genesis")

LAYERS: list[tuple[str, ...]] = [
    ("genesis.dtypes", "genesis.device", "genesis.backends", "genesis.memo", "genesis.version"),
    ("genesis.ndarray", "genesis.memory_format"),
    ("genesis._impl",),
    ("genesis.autograd",),
    ("genesis.tensor", "genesis.tensor_data", "genesis.printing"),
    ("genesis.ops", "genesis.tensor_methods", "genesis.random", "genesis.linalg", "genesis.special",
     "genesis.tensor_types", "genesis.sparse", "genesis.fft", "genesis.signal", "genesis.return_types"),
    ("genesis.nn", "genesis.optim", "genesis.amp", "genesis.cuda", "genesis.cpu", "genesis.serialization",
     "genesis.safetensors_io", "genesis.compiler", "genesis._dynamo",
     "genesis.utils", "genesis.profiler", "genesis.distributed", "genesis.futures", "genesis.accelerator",
     "genesis.jit", "genesis.onnx",
     "genesis.func",
     "genesis.torch_pickle", "genesis.safe_globals", "genesis.distributions", "genesis.testing", "genesis.samplers",
     "genesis.autograd.profiler"),
    ("genesis.models", "genesis.generation", "genesis.tokenizer"),
    ("genesis.torch_compat", "genesis.multiprocessing"),
]
# Packages only the backend implementations may import.
FOREIGN = ("torch", "triton", "cuda", "cudnn", "nvmath", "nccl")
BACKEND = 2
# (importing module, imported module): each a documented exception to the rules above.
ALLOWED: dict[tuple[str, str], str] = {
    ("genesis.device", "genesis._impl.cpu"): "a device loads its backend on first use",
    ("genesis.device", "genesis._impl.cpu.meta"): "a device loads its backend on first use (the meta device's: the "
                                                  "CPU backend's primitives over torch's meta tensors)",
    ("genesis.device", "genesis._impl.cuda"): "a device loads its backend on first use (no GPU packages needed before)",
    # Whether a CUDA device exists must be known before its backend is imported (that import needs the GPU packages
    # and a driver); the probe imports nothing of Genesis, and the device layer may not import the CUDA packages.
    ("genesis.device", "genesis._impl.cuda_probe"): "a device asks whether CUDA can run before loading its backend",
}


def _layer(module: str) -> int | None:
    """The level of the longest prefix in ``LAYERS`` that names ``module`` or a package above it (a module may sit
    above its package: ``genesis.autograd.profiler`` imports ``genesis.profiler``)."""
    found, length = None, -1
    for level, prefixes in enumerate(LAYERS):
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and len(p) > length:
                found, length = level, len(p)
    return found


def _modules() -> dict[str, str]:
    found = {}
    for dirpath, _, files in os.walk(ROOT):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, os.path.dirname(ROOT))[:-3].replace(os.sep, ".")
                found[rel.removesuffix(".__init__")] = path
    return found


def _imports(module: str, path: str) -> list[tuple[str, int]]:
    """Every module ``module`` imports (top level or inside functions), with its line."""
    with open(path) as f:
        tree = ast.parse(f.read(), path)
    package = module if path.endswith("__init__.py") else module.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "import_module" and node.args:
            # importlib.import_module("genesis.x") with a literal name is an import too.
            if isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                found.append((node.args[0].value, node.lineno))
        elif isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            found.append((base, node.lineno))
            # ``from genesis import nn`` imports the submodule genesis.nn.
            found += [(f"{base}.{alias.name}", node.lineno) for alias in node.names]
    return found


def _violations() -> list[str]:
    modules = _modules()
    bad = []
    for module, path in sorted(modules.items()):
        own = _layer(module)
        for target, line in _imports(module, path):
            if (module, target) in ALLOWED:
                continue
            where = f"{os.path.relpath(path, os.path.dirname(ROOT))}:{line}"
            if target.split(".")[0] in FOREIGN and own != BACKEND and module != "genesis":
                bad.append(f"{where}: {module} imports {target} above the backend")
            if own is None or target not in modules or module == "genesis":
                continue
            theirs = _layer(target)
            if theirs is not None and theirs > own:
                bad.append(f"{where}: {module} (layer {own}) imports {target} (layer {theirs})")
    return sorted(set(bad))


def test_every_module_has_a_layer() -> None:
    unplaced = [m for m in _modules() if m != "genesis" and _layer(m) is None]
    assert not unplaced, f"modules outside the layer map of this test: {unplaced}"


def test_no_upward_imports() -> None:
    bad = _violations()
    assert not bad, f"{len(bad)} imports break the layering:\n" + "\n".join(bad)


@pytest.mark.parametrize("pair", sorted(ALLOWED))
def test_exceptions_are_still_needed(pair: tuple[str, str]) -> None:
    module, target = pair
    path = _modules()[module]
    assert any(t == target for t, _ in _imports(module, path)), f"{module} no longer imports {target}: drop it"
