"""MkDocs hook: the API reference pages, generated at build time from each module's public names.

One page per module of ``MODULES`` (``docs/reference/genesis-nn.md`` for ``genesis.nn``, git-ignored), with one
mkdocstrings block per name of the module's ``__all__`` (or its public attributes where it has none). A module that
does not import yet is left out of the pages and the navigation, so the build stays strict while it is absent; adding
a module is one line here.
"""

from __future__ import annotations

import importlib
import inspect
import logging
import os
from types import ModuleType

from mkdocs.config.defaults import MkDocsConfig

MODULES = (
    "genesis",
    "genesis.nn",
    "genesis.nn.functional",
    "genesis.optim",
    "genesis.cuda",
    "genesis.profiler",
    "genesis.models",
    "genesis.distributed",
    "genesis.distributed.nn",
    "genesis.futures",
    "genesis.distributions",
    "genesis.func",
    "genesis.fft",
)
# The navigation section the pages go under (its title in mkdocs.yml's nav).
SECTION = "API reference"
log = logging.getLogger("mkdocs.hooks.api_reference")


def _module(name: str) -> ModuleType | None:
    try:
        return importlib.import_module(name)
    except ImportError as e:
        log.info("api_reference: %s is left out (%s)", name, e)
        return None


def public_names(module: ModuleType) -> list[str]:
    """The names the reference documents: ``__all__``, else every public attribute that is not a module."""
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n, v in vars(module).items() if not n.startswith("_") and not inspect.ismodule(v)
                 and n != "annotations"]
    return sorted(set(names), key=lambda n: (n.lower(), n))


def page(name: str, module: ModuleType) -> str:
    """The Markdown of one module's reference page."""
    lines = [f"# `{name}`", "", f"::: {name}", "    options:", "      members: false", "      show_root_heading: false",
             ""]
    for member in public_names(module):
        value = getattr(module, member, None)
        if value is None or not (inspect.isclass(value) or callable(value)):
            lines += [f"## `{name}.{member}`", "", f"`{member}` = `{value!r}`"[:400], ""]
            continue
        lines += [f"::: {name}.{member}", "    options:", "      heading_level: 2", ""]
    return "\n".join(lines)


def present_modules() -> list[tuple[str, ModuleType]]:
    found = [(name, _module(name)) for name in MODULES]
    return [(name, module) for name, module in found if module is not None]


def page_file(name: str) -> str:
    """The page's file name: ``genesis.nn`` -> ``genesis-nn.md`` (a dotted suffix would read as a language)."""
    return name.replace(".", "-") + ".md"


def write_pages(folder: str) -> list[str]:
    """Write one page per module present into ``folder`` (stale pages removed, unchanged ones left untouched so
    ``mkdocs serve`` does not rebuild in a loop); returns the module names written."""
    os.makedirs(folder, exist_ok=True)
    written = []
    for name, module in present_modules():
        path = os.path.join(folder, page_file(name))
        text = page(name, module)
        if not os.path.exists(path) or open(path).read() != text:
            with open(path, "w") as f:
                f.write(text)
        written.append(name)
    for stale in set(os.listdir(folder)) - {page_file(name) for name in written}:
        os.remove(os.path.join(folder, stale))
    return written


def on_config(config: MkDocsConfig) -> MkDocsConfig:
    """Write the pages into ``docs/reference/`` (git-ignored) and list them in the navigation's API reference
    section; MkDocs then collects them with the hand-written pages."""
    names = write_pages(os.path.join(config.docs_dir, "reference"))
    for item in config.nav or []:
        if isinstance(item, dict) and SECTION in item:
            item[SECTION] = [{name: f"reference/{page_file(name)}"} for name in names]
    return config
