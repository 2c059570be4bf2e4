"""Hugging Face checkpoints: safetensors files, sharded or not, read by streaming and written for transformers.

Reading goes through ``genesis.safetensors_io`` (headers checked first, then tensors streamed from a memory map one
at a time, bfloat16 included), so peak host memory stays near one tensor of the shard being read. Writing uses the
``safetensors`` package, which accepts ``ml_dtypes`` arrays.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from safetensors.numpy import save_file

from genesis.safetensors_io import TensorInfo, read_header

SINGLE_FILE = "model.safetensors"
INDEX_FILE = "model.safetensors.index.json"

def checkpoint_files(directory: str | Path) -> list[Path]:
    """The safetensors files of a model directory: ``model.safetensors`` or the shards its index lists.

    Raises:
        FileNotFoundError: no checkpoint in the directory, or a shard the index names is missing.
        ValueError: the index file is corrupt.
    """
    directory = Path(directory)
    index = directory / INDEX_FILE
    if index.is_file():
        try:
            weight_map = json.loads(index.read_text())["weight_map"]
            shards = list(dict.fromkeys(weight_map.values()))
        except (json.JSONDecodeError, KeyError, TypeError, AttributeError) as err:
            raise ValueError(f"{index}: corrupt checkpoint index ({err!r})") from None
        files = [directory / name for name in shards]
        for f in files:
            if not f.is_file():
                raise FileNotFoundError(f"checkpoint shard {f} listed in {index} not found")
        return files
    single = directory / SINGLE_FILE
    if single.is_file():
        return [single]
    if not directory.is_dir():
        raise FileNotFoundError(f"model directory not found: {directory}")
    raise FileNotFoundError(f"no {SINGLE_FILE} or {INDEX_FILE} in {directory} (only safetensors checkpoints "
                            "are supported)")


def read_index(directory: str | Path) -> dict[str, TensorInfo]:
    """Every tensor of a checkpoint directory, from the headers of all its files (checked before any data is read).

    Raises:
        ValueError: a tensor name appears in two files, or a file is corrupt (the message names it).
    """
    tensors: dict[str, TensorInfo] = {}
    for path in checkpoint_files(directory):
        for name, info in read_header(path).items():
            if name in tensors:
                raise ValueError(f"tensor {name!r} appears in both {tensors[name].file} and {path}")
            tensors[name] = info
    return tensors


def _size_limit(max_shard_size: int | str) -> int:
    """Bytes from ``5GB`` / ``200MB`` / ``10KB`` / an int, as transformers' ``max_shard_size``."""
    if isinstance(max_shard_size, int):
        return max_shard_size
    text = max_shard_size.upper().strip()
    for suffix, scale in (("GB", 10**9), ("MB", 10**6), ("KB", 10**3), ("B", 1)):
        if text.endswith(suffix):
            return int(float(text[: -len(suffix)]) * scale)
    raise ValueError(f"save_checkpoint: max_shard_size must be an int or like '5GB', got {max_shard_size!r}")


def save_checkpoint(arrays: dict[str, np.ndarray], directory: str | Path,
                    max_shard_size: int | str = "5GB") -> list[Path]:
    """Write arrays as ``model.safetensors``, or as shards plus ``model.safetensors.index.json`` when larger.

    Shards are named as transformers names them (``model-00001-of-00002.safetensors``) and carry the
    ``{"format": "pt"}`` metadata transformers checks for.
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
    for stale in [directory / SINGLE_FILE, directory / INDEX_FILE, *directory.glob("model-*-of-*.safetensors")]:
        stale.unlink(missing_ok=True)
    metadata = {"format": "pt"}
    if len(shards) == 1:
        path = directory / SINGLE_FILE
        save_file(shards[0], str(path), metadata=metadata)
        return [path]
    paths = []
    weight_map = {}
    for i, shard in enumerate(shards):
        path = directory / f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors"
        save_file(shard, str(path), metadata=metadata)
        paths.append(path)
        weight_map.update(dict.fromkeys(shard, path.name))
    total = sum(a.nbytes for a in arrays.values())
    index = {"metadata": {"total_size": total}, "weight_map": weight_map}
    (directory / INDEX_FILE).write_text(json.dumps(index, indent=2))
    return paths
