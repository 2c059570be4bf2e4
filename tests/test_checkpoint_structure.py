"""A Genesis checkpoint's ``genesis.structure`` metadata, crafted by hand: anything ``genesis.save`` could not have
written raises ``CheckpointError`` naming the file and the place, never TypeError, ValueError, RecursionError or
AttributeError from deep inside the decoder, and nesting depth is bounded."""

from __future__ import annotations

import json
import zlib

import numpy as np
import pytest

import genesis
from genesis.safetensors_io import write_file
from genesis.serialization import CheckpointError


def crafted(path, structure, arrays: dict[str, np.ndarray] | None = None, *, raw: str | None = None,
            checksums: object = None) -> str:
    """A safetensors file whose Genesis metadata holds ``structure`` (or the ``raw`` JSON text) and valid
    checksums (or ``checksums`` as given)."""
    arrays = arrays if arrays is not None else {"w": np.arange(4, dtype=np.float32)}
    sums = {k: format(zlib.crc32(a.reshape(-1).view(np.uint8)), "08x") for k, a in arrays.items()}
    metadata = {"genesis.format": "1", "genesis.structure": raw if raw is not None else json.dumps(structure),
                "genesis.crc32": json.dumps(sums if checksums is None else checksums)}
    write_file(arrays, path, metadata)
    return str(path)


BAD_STRUCTURES = {
    "tensor name a number": {"a": {"__tensor__": 5}},
    "tensor name a list": {"a": {"__tensor__": ["w"]}},
    "tensor missing": {"a": {"__tensor__": "nope"}},
    "device a number": {"a": {"__tensor__": "w", "device": 3}},
    "device unknown": {"a": {"__tensor__": "w", "device": "tpu:0"}},
    "device index bad": {"a": {"__tensor__": "w", "device": "cuda:x"}},
    "requires_grad a string": {"a": {"__tensor__": "w", "requires_grad": "yes"}},
    "tuple not a list": {"__tuple__": 7},
    "tuple a dict": {"__tuple__": {"x": 1}},
    "dict not a list": {"__dict__": 7},
    "dict pair of three": {"__dict__": [[1, 2, 3]]},
    "dict pair a string": {"__dict__": ["ab"]},
    "dict key unhashable": {"__dict__": [[{"x": 1}, 2]]},
    "dict key a tensor of no file": {"__dict__": [[{"__tensor__": 1}, 2]]},
    "dtype unknown": {"__dtype__": "float128"},
    "dtype a number": {"__dtype__": 3},
    "dtype a list": {"__dtype__": ["float32"]},
    "device marker a dict": {"__device__": {"type": "cpu"}},
    "device marker unknown": {"__device__": "gpu"},
    "view not a list": {"a": {"__tensor__": "w", "view": 3, "member": 0}},
    "view of two parts": {"a": {"__tensor__": "w", "view": [0, [2]], "member": 0}},
    "view negative offset": {"a": {"__tensor__": "w", "view": [-1, [2], [1]], "member": 0}},
    "view past the storage": {"a": {"__tensor__": "w", "view": [2, [2, 2], [2, 1]], "member": 0}},
    "view sizes and strides differ": {"a": {"__tensor__": "w", "view": [0, [2, 2], [1]], "member": 0}},
    "namedtuple of a plain class": {"__namedtuple__": "collections:OrderedDict", "items": []},
    "namedtuple items not a list": {"__namedtuple__": "genesis.return_types:max", "items": 3},
    "complex of one part": {"__complex__": [1.0]},
    "complex of strings": {"__complex__": ["1", "2"]},
    "bytes not hex": {"__bytes__": "xyz"},
    "bytes a number": {"__bytes__": 5},
    "size negative": {"__size__": [2, -1]},
    "size a string": {"__size__": "2,3"},
    "set a number": {"__set__": 3},
}


@pytest.mark.parametrize("name", sorted(BAD_STRUCTURES))
def test_crafted_structure_raises_checkpoint_error(tmp_path, name):
    path = crafted(tmp_path / "x.safetensors", BAD_STRUCTURES[name])
    with pytest.raises(CheckpointError, match="x.safetensors"):
        genesis.load(path, weights_only=not name.startswith("namedtuple"))


def test_requires_grad_on_an_integer_tensor_is_refused(tmp_path):
    path = crafted(tmp_path / "x.safetensors", {"a": {"__tensor__": "i", "requires_grad": True}},
                   {"i": np.arange(3, dtype=np.int64)})
    with pytest.raises(CheckpointError, match="cannot require gradients"):
        genesis.load(path)


@pytest.mark.parametrize("depth", [150, 100_000])
def test_nesting_depth_is_bounded(tmp_path, depth):
    path = crafted(tmp_path / "x.safetensors", None, raw="[" * depth + "]" * depth)
    with pytest.raises(CheckpointError, match="nested deeper than|corrupt metadata"):
        genesis.load(path)
    nested = crafted(tmp_path / "y.safetensors", None, raw='{"a":' * depth + "1" + "}" * depth)
    with pytest.raises(CheckpointError):
        genesis.load(nested)


@pytest.mark.parametrize("raw", ["{", "nan-ish", '"\\ud800"x'])
def test_structure_that_is_not_json_is_refused(tmp_path, raw):
    with pytest.raises(CheckpointError, match="corrupt metadata"):
        genesis.load(crafted(tmp_path / "x.safetensors", None, raw=raw))


@pytest.mark.parametrize("checksums", [[1, 2], "abc", 5])
def test_checksums_that_are_not_a_map_are_refused(tmp_path, checksums):
    with pytest.raises(CheckpointError, match="checksums are not a map"):
        genesis.load(crafted(tmp_path / "x.safetensors", {"a": {"__tensor__": "w"}}, checksums=checksums))


def test_plain_values_and_a_moderate_depth_still_load(tmp_path):
    structure = {"a": {"__tensor__": "w", "requires_grad": True}, "n": None, "t": {"__tuple__": [1, "x"]},
                 "d": {"__dict__": [[1, 2], [{"__tuple__": [1, 2]}, 3]]}, "deep": [[[[[[[[[[1]]]]]]]]]]}
    out = genesis.load(crafted(tmp_path / "x.safetensors", structure))
    assert out["a"].requires_grad and out["a"].tolist() == [0.0, 1.0, 2.0, 3.0]
    assert out["t"] == (1, "x") and out["d"] == {1: 2, (1, 2): 3} and out["n"] is None
