"""The public surface never shrinks: every name in the snapshot (taken before the package layout changed) is still
reachable under the same import path.

``tests/data/public_surface.json`` maps a module (or a class, written ``genesis.Tensor``) to its public names. New
names may appear; a name that disappears, or a module that no longer imports, fails here.
"""

import importlib
import json
import os

import pytest

import genesis

SNAPSHOT = os.path.join(os.path.dirname(__file__), "data", "public_surface.json")
CLASSES = {"genesis.Tensor": genesis.Tensor, "genesis.nn.Module": genesis.nn.Module,
           "genesis.optim.Optimizer": genesis.optim.Optimizer}

with open(SNAPSHOT) as f:
    _SURFACE = json.load(f)


@pytest.mark.parametrize("path", sorted(_SURFACE))
def test_public_names_still_reachable(path: str) -> None:
    owner = CLASSES[path] if path in CLASSES else importlib.import_module(path)
    missing = [name for name in _SURFACE[path] if not hasattr(owner, name)]
    assert not missing, f"{path} lost public names: {missing}"
