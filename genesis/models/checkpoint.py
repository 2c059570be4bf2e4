"""Hugging Face checkpoints: safetensors files, sharded or not, read by streaming and written for transformers;
``pytorch_model.bin`` files (and their shards) read through Genesis's restricted unpickler.

Files and indexes are read and written through ``genesis.safetensors_io`` (headers checked first, then tensors
streamed from a memory map one at a time, bfloat16 included, so peak host memory stays near one tensor of the shard
being read; files written atomically); this module knows the layout of a model directory.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from genesis import torch_pickle
from genesis.safetensors_io import TensorInfo, iter_tensors, read_header, read_weight_map, write_file, write_text
from genesis.torch_pickle import CheckpointError

SINGLE_FILE = "model.safetensors"
INDEX_FILE = "model.safetensors.index.json"
# PyTorch-format weights (``torch.save`` pickles), read by Genesis's restricted unpickler when no safetensors exist.
BIN_FILE = "pytorch_model.bin"
BIN_INDEX_FILE = "pytorch_model.bin.index.json"


def checkpoint_files(directory: str | Path) -> list[Path]:
    """The safetensors files of a model directory: ``model.safetensors`` or the shards its index lists.

    Raises:
        FileNotFoundError: no checkpoint in the directory, or a shard the index names is missing.
        ValueError: the index file is corrupt.
    """
    directory = Path(directory)
    index = directory / INDEX_FILE
    if index.is_file():
        return list(dict.fromkeys(read_weight_map(index).values()))
    single = directory / SINGLE_FILE
    if single.is_file():
        return [single]
    bin_index = directory / BIN_INDEX_FILE
    if bin_index.is_file():
        return list(dict.fromkeys(read_weight_map(bin_index).values()))
    if (directory / BIN_FILE).is_file():
        return [directory / BIN_FILE]
    if not directory.is_dir():
        raise FileNotFoundError(f"model directory not found: {directory}")
    raise FileNotFoundError(f"no {SINGLE_FILE}, {INDEX_FILE}, {BIN_FILE} or {BIN_INDEX_FILE} in {directory}")


@dataclass
class LoadedArray:
    """A tensor of a PyTorch-format file, already read (pickles cannot be read tensor by tensor)."""

    file: Path
    array: np.ndarray

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.array.shape)


def _pytorch_arrays(path: Path) -> dict[str, np.ndarray]:
    """The state dict of a ``pytorch_model*.bin`` file as numpy arrays."""
    try:
        state = torch_pickle.records_to_arrays(torch_pickle.read(path))
    except CheckpointError as err:
        raise ValueError(str(err)) from None
    if not isinstance(state, dict) or not all(isinstance(v, np.ndarray) for v in state.values()):
        raise ValueError(f"{path}: not a state dict of tensors")
    return state


def read_index(directory: str | Path) -> dict[str, TensorInfo | LoadedArray]:
    """Every tensor of a checkpoint directory, from the headers of all its files (checked before any data is read;
    PyTorch ``.bin`` files have no header and are read whole).

    Raises:
        ValueError: a tensor name appears in two files, or a file is corrupt (the message names it).
    """
    tensors: dict[str, TensorInfo | LoadedArray] = {}
    for path in checkpoint_files(directory):
        if path.suffix == ".bin":
            found = {name: LoadedArray(path, array) for name, array in _pytorch_arrays(path).items()}
        else:
            found = read_header(path)
        for name, info in found.items():
            if name in tensors:
                raise ValueError(f"tensor {name!r} appears in both {tensors[name].file} and {path}")
            tensors[name] = info
    return tensors


def iter_weights(tensors: dict[str, TensorInfo | LoadedArray]) -> Iterator[tuple[str, np.ndarray]]:
    """The arrays of :func:`read_index` entries, safetensors ones streamed from their files."""
    streamed = {name: info for name, info in tensors.items() if isinstance(info, TensorInfo)}
    yield from iter_tensors(streamed)
    for name, info in tensors.items():
        if isinstance(info, LoadedArray):
            yield name, info.array


def _size_limit(max_shard_size: int | str) -> int:
    """Bytes from ``5GB`` / ``200MB`` / ``10KB`` / an int, as transformers' ``max_shard_size``."""
    if isinstance(max_shard_size, int):
        return max_shard_size
    text = max_shard_size.upper().strip()
    for suffix, scale in (("GB", 10**9), ("MB", 10**6), ("KB", 10**3), ("B", 1)):
        if text.endswith(suffix):
            return int(float(text[: -len(suffix)]) * scale)
    raise ValueError(f"save_checkpoint: max_shard_size must be an int or like '5GB', got {max_shard_size!r}")


def _new_shard_paths(directory: Path, index_path: Path, n: int) -> list[Path]:
    """Shard files for a new sharded save that no file of the live index names.

    transformers' names (``model-00001-of-00002.safetensors``), or the same with ``-b`` when the live checkpoint uses
    those: replacing a sharded checkpoint then never overwrites one of its shards, so a save killed half-way leaves
    the old index with all its old shards (the loader finds shards through the index, whatever their names).
    """
    live: set[str] = set()
    try:
        live = set(json.loads(index_path.read_text())["weight_map"].values())
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        pass  # no index, or one no loader could use: no shard of it is live
    for suffix in ("", "-b"):
        paths = [directory / f"model-{i + 1:05d}-of-{n:05d}{suffix}.safetensors" for i in range(n)]
        if not live.intersection(p.name for p in paths):
            break
    return paths


def save_checkpoint(arrays: dict[str, np.ndarray], directory: str | Path,
                    max_shard_size: int | str = "5GB") -> list[Path]:
    """Write arrays as ``model.safetensors``, or as shards plus ``model.safetensors.index.json`` when larger.

    Shards are named as transformers names them (``model-00001-of-00002.safetensors``) and carry the
    ``{"format": "pt"}`` metadata transformers checks for. (This writes model weights for transformers;
    ``genesis.save_checkpoint`` writes a training run's whole state into one file through the same file writer.)
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    limit = _size_limit(max_shard_size)
    shards: list[dict[str, np.ndarray]] = [{}]
    size = 0
    for name, array in arrays.items():
        if shards[-1] and size + array.nbytes > limit:
            shards.append({})
            size = 0
        shards[-1][name] = np.ascontiguousarray(array)
        size += array.nbytes
    # The old checkpoint stays loadable until the new one is complete: new files are written atomically beside it,
    # the index (which the loader prefers to model.safetensors) is written or removed last, then obsolete files go.
    old_files = {directory / SINGLE_FILE, *directory.glob("model-*-of-*.safetensors")}
    metadata = {"format": "pt"}
    index_path = directory / INDEX_FILE
    if len(shards) == 1:
        path = directory / SINGLE_FILE
        write_file(shards[0], path, metadata)
        index_path.unlink(missing_ok=True)
        paths = [path]
    else:
        paths = _new_shard_paths(directory, index_path, len(shards))
        weight_map = {}
        for path, shard in zip(paths, shards):
            write_file(shard, path, metadata)
            weight_map.update(dict.fromkeys(shard, path.name))
        total = sum(a.nbytes for a in arrays.values())
        write_text(index_path, json.dumps({"metadata": {"total_size": total}, "weight_map": weight_map}, indent=2))
    for stale in old_files - set(paths):
        stale.unlink(missing_ok=True)
    return paths
