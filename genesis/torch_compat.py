"""Run a PyTorch script on Genesis unchanged: ``python -m genesis.torch_compat script.py args...``.

The script runs as ``__main__`` (through ``runpy``, with ``sys.argv`` set to ``[script.py, args...]`` and the script's
folder first on ``sys.path``, as ``python script.py`` would). Every ``import torch`` / ``import torch.x.y`` /
``from torch.x import y`` written in the script, or in a module imported from the script's own folder, resolves to
Genesis's module of the same path (``torch.nn.functional`` -> ``genesis.nn.functional``, ``torch.utils.data`` ->
``genesis.utils.data``). Nothing else changes: installed libraries, Genesis itself and PyTorch's own internals (the
CPU backend computes with real PyTorch tensors) keep importing the real ``torch``, and ``sys.modules["torch"]`` is
never replaced.

How: the script's code and the modules of its folder run with a ``__builtins__`` of their own, whose ``__import__``
resolves ``torch`` names to Genesis (Python looks ``__import__`` up in the importing code's builtins, so only that
code sees the redirection). A ``sys.meta_path`` finder gives every module imported from the script's folder those
builtins, and ``importlib.import_module`` resolves ``torch`` names to Genesis while the script runs (unless torch
or Genesis itself calls it), for code that picks modules from a configuration. A ``torch`` name Genesis lacks raises
AttributeError (or ModuleNotFoundError for a module) naming ``torch.X``, the Genesis module searched, and the
script's file and line that used it.
"""

from __future__ import annotations

import builtins
import importlib
import importlib.abc
import importlib.machinery
import os
import re
import runpy
import sys
from collections.abc import Sequence
from types import FrameType, ModuleType
from typing import Any

_THIS_FILE = os.path.abspath(__file__)
_FRAMEWORK = "genesis"


def _user_location(frame: FrameType | None) -> str:
    """``file:line`` of the innermost frame outside this module and the import machinery."""
    while frame is not None:
        filename = frame.f_code.co_filename
        if os.path.abspath(filename) != _THIS_FILE and not filename.startswith("<frozen"):
            return f"{filename}:{frame.f_lineno}"
        frame = frame.f_back
    return "<unknown>"


class TorchAlias(ModuleType):
    """The ``torch.X`` module a redirected script sees: every attribute comes from the Genesis module ``genesis.X``.

    Submodules come back as aliases too, so ``torch.nn.functional.gelu`` reads ``genesis.nn.functional.gelu``; a
    name Genesis lacks raises AttributeError naming ``torch.X.name``, the Genesis module and where it was used.
    """

    def __init__(self, torch_name: str, target: ModuleType) -> None:
        super().__init__(torch_name, target.__doc__)
        self.__dict__["_target"] = target

    def __getattr__(self, name: str) -> Any:
        target = self.__dict__["_target"]
        if name.startswith("__") and name.endswith("__"):
            return getattr(target, name)
        try:
            value = getattr(target, name)
        except AttributeError:
            try:
                value = importlib.import_module(f"{target.__name__}.{name}")
            except ModuleNotFoundError:
                raise AttributeError(
                    f"torch_compat: '{self.__name__}.{name}' is not available in Genesis (module "
                    f"'{target.__name__}' has no attribute '{name}'), used at {_user_location(sys._getframe(1))}"
                ) from None
        if isinstance(value, ModuleType) and value.__name__.startswith(_FRAMEWORK + "."):
            return alias(value.__name__)
        return value

    def __setattr__(self, name: str, value: Any) -> None:
        # A script's monkeypatch (HF's no_init_weights replacing torch.nn.init.normal_, torch.load wrapped in a
        # partial) must reach the Genesis code that reads it, as it reaches torch's own; the import system's dunder
        # attributes stay the alias's.
        if name.startswith("__") and name.endswith("__"):
            super().__setattr__(name, value)
        else:
            setattr(self.__dict__["_target"], name, value)

    def __delattr__(self, name: str) -> None:
        if name.startswith("__") and name.endswith("__"):
            super().__delattr__(name)
        else:
            delattr(self.__dict__["_target"], name)

    def __dir__(self) -> list[str]:
        return dir(self.__dict__["_target"])

    def __repr__(self) -> str:
        return f"<module '{self.__name__}' (Genesis: '{self.__dict__['_target'].__name__}')>"


_ALIASES: dict[str, TorchAlias] = {}


#: The torch release whose API Genesis follows (its test oracle): what a redirected script reads as
#: ``torch.__version__``, so its version checks (``>= "2.0"``, ``packaging.version.parse``) take torch 2's branches.
TORCH_API_VERSION = "2.13.0"


class TorchVersion(str):
    """A version string that also compares by release numbers with strings and tuples, as torch's
    ``torch.__version__`` does (``torch.__version__ >= (2, 0)``, ``>= "2.10"``); equality stays the string's."""

    @staticmethod
    def _release(version: object) -> tuple[tuple[int, ...], bool]:
        """(release numbers, whether a local label follows): ``"2.13.0+cpu"`` -> ((2, 13, 0), True)."""
        if isinstance(version, tuple):
            return tuple(int(v) for v in version), False
        release, plus, _ = str(version).partition("+")
        return tuple(int(re.match(r"\d*", part).group() or 0) for part in release.split(".")), bool(plus)

    def _compare(self, other: object) -> int:
        (a, a_local), (b, b_local) = self._release(self), self._release(other)
        width = max(len(a), len(b))
        # A local label sorts after its plain release, as in Python's version ordering.
        a, b = a + (0,) * (width - len(a)) + (a_local,), b + (0,) * (width - len(b)) + (b_local,)
        return (a > b) - (a < b)

    def __lt__(self, other: object) -> bool:
        return self._compare(other) < 0

    def __le__(self, other: object) -> bool:
        return self._compare(other) <= 0

    def __gt__(self, other: object) -> bool:
        return self._compare(other) > 0

    def __ge__(self, other: object) -> bool:
        return self._compare(other) >= 0

    __hash__ = str.__hash__


def alias(genesis_name: str) -> TorchAlias:
    """The alias module for a Genesis module name (``genesis.nn`` -> the module seen as ``torch.nn``)."""
    found = _ALIASES.get(genesis_name)
    if found is None:
        torch_name = "torch" + genesis_name[len(_FRAMEWORK):]
        found = _ALIASES[genesis_name] = TorchAlias(torch_name, importlib.import_module(genesis_name))
        if genesis_name in (_FRAMEWORK, _FRAMEWORK + ".version"):
            # torch's API version, with Genesis's own as the local label: "2.13.0+genesis.0.1.0"
            genesis_version = importlib.import_module(_FRAMEWORK + ".version").__version__
            found.__dict__["__version__"] = TorchVersion(f"{TORCH_API_VERSION}+genesis.{genesis_version}")
    return found


def _genesis_module(torch_name: str) -> TorchAlias:
    """The alias of ``torch_name``'s Genesis counterpart, importing each package on its path."""
    genesis_name = _FRAMEWORK + torch_name[len("torch"):]
    parts = genesis_name.split(".")
    for i in range(1, len(parts) + 1):
        name = ".".join(parts[:i])
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as err:
            if err.name is not None and err.name != name:
                raise  # a missing dependency inside an existing Genesis module
            parent = ".".join(parts[:i - 1])
            raise ModuleNotFoundError(
                f"torch_compat: module '{torch_name}' is not available in Genesis (no module '{name}' in "
                f"'{parent}'), imported at {_user_location(sys._getframe(2))}", name=torch_name) from None
    return alias(genesis_name)


def _is_torch(name: str) -> bool:
    return name == "torch" or name.startswith("torch.")


def compat_import(name: str, globals: dict[str, Any] | None = None, locals: dict[str, Any] | None = None,
                  fromlist: Sequence[str] | None = (), level: int = 0) -> Any:
    """``__import__`` with ``torch`` names resolved to Genesis (all other imports are Python's own)."""
    if level != 0 or not _is_torch(name):
        return builtins.__import__(name, globals, locals, fromlist, level)
    module = _genesis_module(name)
    if fromlist:
        for item in fromlist:
            if item != "*" and not hasattr(module.__dict__["_target"], item):
                getattr(module, item)  # a submodule is imported; a missing name raises the named AttributeError
        return module
    return _genesis_module("torch")


def compat_builtins() -> dict[str, Any]:
    """A copy of the builtins whose ``__import__`` is :func:`compat_import`."""
    namespace = dict(vars(builtins))
    namespace["__import__"] = compat_import
    return namespace


class _CompatLoader(importlib.abc.Loader):
    """Runs a module of the script's folder with the redirecting builtins, then hands over to its own loader."""

    def __init__(self, loader: importlib.abc.Loader, namespace: dict[str, Any]) -> None:
        self.loader = loader
        self.namespace = namespace

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self.loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        module.__dict__["__builtins__"] = self.namespace  # exec keeps builtins that are already there
        self.loader.exec_module(module)


class ScriptFolderFinder(importlib.abc.MetaPathFinder):
    """A ``sys.meta_path`` finder for the modules of the script's own folder: they import ``torch`` as Genesis."""

    def __init__(self, folder: str, namespace: dict[str, Any]) -> None:
        self.folder = os.path.abspath(folder)
        self.namespace = namespace

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        search = [self.folder] if path is None else [p for p in path if _inside(p, self.folder)]
        if not search or _is_torch(fullname) or _is_framework(fullname):
            return None  # Genesis itself (in a checkout's root, say) imports the real torch
        spec = importlib.machinery.PathFinder.find_spec(fullname, search)
        if spec is None or spec.origin is None or not _inside(spec.origin, self.folder):
            return None
        if isinstance(spec.loader, importlib.machinery.SourceFileLoader):
            spec.loader = _CompatLoader(spec.loader, self.namespace)
        return spec


def _is_framework(name: str) -> bool:
    return name == _FRAMEWORK or name.startswith(_FRAMEWORK + ".")


_real_import_module = importlib.import_module


def compat_import_module(name: str, package: str | None = None) -> ModuleType:
    """``importlib.import_module`` with ``torch`` names resolved to Genesis when the caller is not torch or Genesis
    itself: config-driven code (``importlib.import_module("torch.optim")``, Hydra's ``_target_``) gets the same
    modules as the script's ``import`` statements."""
    caller = sys._getframe(1).f_globals.get("__name__", "")
    if package is None and _is_torch(name) and not (_is_torch(caller) or _is_framework(caller)):
        return _genesis_module(name)
    return _real_import_module(name, package)


def _inside(path: str, folder: str) -> bool:
    if (not path.startswith(folder) and os.path.isabs(path) and f"{os.sep}..{os.sep}" not in path
            and f"{os.sep}.{os.sep}" not in path):
        return False  # a normalized absolute path elsewhere: most of sys.modules, decided without abspath
    path = os.path.abspath(path)
    return path == folder or path.startswith(folder + os.sep)


def run(script: str, args: Sequence[str] = ()) -> dict[str, Any]:
    """Run ``script`` as ``__main__`` with ``sys.argv == [script, *args]`` and its ``torch`` imports on Genesis.

    Returns:
        The script's global namespace when it finishes.
    """
    if not os.path.isfile(script):
        raise FileNotFoundError(f"torch_compat: no such script: '{script}'")
    folder = os.path.dirname(os.path.abspath(script))
    namespace = compat_builtins()
    finder = ScriptFolderFinder(folder, namespace)
    saved_argv, saved_path = sys.argv, list(sys.path)
    # Modules of the folder imported before (with the real torch) are set aside, so the script gets its own copies.
    saved_modules = _folder_modules(folder)
    for name in saved_modules:
        del sys.modules[name]
    before = set(sys.modules)
    sys.argv = [script, *args]
    sys.path.insert(0, folder)
    sys.meta_path.insert(0, finder)
    importlib.import_module = compat_import_module
    try:
        return runpy.run_path(script, init_globals={"__builtins__": namespace}, run_name="__main__")
    finally:
        importlib.import_module = _real_import_module
        sys.meta_path.remove(finder)
        sys.argv = saved_argv
        sys.path[:] = saved_path
        # The script's own modules were imported during the run: only the modules new since its start are looked at.
        for name in _folder_modules(folder, [n for n in sys.modules if n not in before]):
            del sys.modules[name]
        sys.modules.update(saved_modules)


def _folder_modules(folder: str, names: Sequence[str] | None = None) -> dict[str, ModuleType]:
    """The imported modules (of ``names``, else of all of ``sys.modules``) whose file lies in ``folder`` or below.

    A run scans all of ``sys.modules`` (thousands of modules once torch is loaded) once, before the script, so this
    reads each module's ``__file__`` from its ``__dict__``: a module-level ``__getattr__`` never runs."""
    found = {}
    modules = sys.modules
    verdicts = _VERDICTS.setdefault(folder, {})
    for name, module in list(modules.items()) if names is None else [(n, modules[n]) for n in names if n in modules]:
        attrs = getattr(module, "__dict__", None)
        path = attrs.get("__file__") if isinstance(attrs, dict) else None
        if not isinstance(path, str):
            continue
        inside = verdicts.get(path)
        if inside is None:
            inside = verdicts[path] = _inside(path, folder)
        if inside and not _is_framework(name):
            found[name] = module
    return found


# folder -> {module file: whether it lies in the folder}: the scan before each run of a script reads thousands of
# module files (torch's, once loaded), nearly all the same as at the last run.
_VERDICTS: dict[str, dict[str, bool]] = {}


def main(argv: Sequence[str] | None = None) -> None:
    """Command line: ``genesis-torch script.py args...`` (or ``python -m genesis.torch_compat``)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: python -m genesis.torch_compat script.py [args...]\n\nRuns a PyTorch script with its torch "
              "imports resolved to Genesis.")
        raise SystemExit(0 if argv else 2)
    run(argv[0], argv[1:])


if __name__ == "__main__":
    main()
