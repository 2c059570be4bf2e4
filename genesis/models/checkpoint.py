"""Hugging Face checkpoints: safetensors files, sharded or not, read by streaming and written for transformers.

A safetensors file is an 8-byte little-endian header length, a JSON header mapping each tensor name to its dtype,
shape and byte range, then the raw little-endian data. Reading memory-maps the file and hands out numpy views one
tensor at a time, so peak host memory stays near one tensor of the shard being read. The ``safetensors`` package's
numpy reader has no bfloat16 (numpy lacks the type), which Qwen checkpoints use, so the header is read here and the
bfloat16 type comes from ``ml_dtypes``. Writing uses the ``safetensors`` package, which accepts ``ml_dtypes`` arrays.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import ml_dtypes
import numpy as np
from safetensors.numpy import save_file

SINGLE_FILE = "model.safetensors"
INDEX_FILE = "model.safetensors.index.json"

_DTYPES = {
    "F64": np.dtype(np.float64), "F32": np.dtype(np.float32), "F16": np.dtype(np.float16),
    "BF16": np.dtype(ml_dtypes.bfloat16), "I64": np.dtype(np.int64), "I32": np.dtype(np.int32),
    "I16": np.dtype(np.int16), "I8": np.dtype(np.int8), "U8": np.dtype(np.uint8), "BOOL": np.dtype(np.bool_),
}
# Headers larger than this are not safetensors files (the format itself caps them at 100 MB).
_MAX_HEADER = 100_000_000


@dataclass(frozen=True)
class TensorInfo:
    """Where one tensor lives in a safetensors file."""

    file: Path
    dtype: np.dtype
    shape: tuple[int, ...]
    start: int  # absolute byte offset in the file
    end: int


def read_header(path: Path) -> dict[str, TensorInfo]:
    """The tensors of a safetensors file, checked against the file's size (nothing of the data is read).

    Raises:
        FileNotFoundError: the file does not exist.
        ValueError: the file is truncated or its header is corrupt (the message names the file).
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"checkpoint file not found: {path}")
    size = path.stat().st_size
    with open(path, "rb") as f:
        raw = f.read(8)
        if len(raw) < 8:
            raise ValueError(f"{path}: not a safetensors file (only {size} bytes)")
        (header_len,) = struct.unpack("<Q", raw)
        if header_len > min(_MAX_HEADER, size - 8):
            raise ValueError(f"{path}: corrupt safetensors header (header length {header_len}, file size {size})")
        try:
            header = json.loads(f.read(header_len))
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            raise ValueError(f"{path}: corrupt safetensors header ({err})") from None
    if not isinstance(header, dict):
        raise ValueError(f"{path}: corrupt safetensors header (not a JSON object)")
    data_start = 8 + header_len
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        try:
            dtype = _DTYPES[entry["dtype"]]
            shape = tuple(int(s) for s in entry["shape"])
            begin, end = (int(o) for o in entry["data_offsets"])
        except (KeyError, TypeError, ValueError):
            raise ValueError(f"{path}: corrupt or unsupported header entry for tensor {name!r}: {entry!r}") from None
        expected = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        if end - begin != expected or begin < 0:
            raise ValueError(f"{path}: tensor {name!r} of shape {list(shape)} and dtype {entry['dtype']} needs "
                             f"{expected} bytes but its offsets span {end - begin}")
        if data_start + end > size:
            raise ValueError(f"{path}: file is truncated (tensor {name!r} ends at byte {data_start + end}, "
                             f"file has {size})")
        tensors[name] = TensorInfo(path, dtype, shape, data_start + begin, data_start + end)
    return tensors


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


def iter_tensors(tensors: dict[str, TensorInfo]) -> Iterator[tuple[str, np.ndarray]]:
    """Yield ``(name, array)`` file by file; arrays are read-only views of a memory map of the current file."""
    by_file: dict[Path, list[str]] = {}
    for name, info in tensors.items():
        by_file.setdefault(info.file, []).append(name)
    for path, names in by_file.items():
        mapped = np.memmap(path, dtype=np.uint8, mode="r")
        for name in sorted(names, key=lambda n: tensors[n].start):
            info = tensors[name]
            yield name, mapped[info.start:info.end].view(info.dtype).reshape(info.shape)
        del mapped


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
