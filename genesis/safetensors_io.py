"""Safetensors files and sharded indexes: the one reader and the one writer every checkpoint goes through.

A safetensors file is an 8-byte little-endian header length, a JSON header mapping each tensor name to its dtype,
shape and byte range (plus an optional ``__metadata__`` dict of strings), then the raw little-endian data. The
``safetensors`` package's numpy reader has no bfloat16 (numpy lacks the type), which Hugging Face checkpoints use,
so the header is read here, the bfloat16 type comes from ``ml_dtypes``, and tensors are handed out as views of a
memory map one at a time. A sharded checkpoint adds an index (``model.safetensors.index.json``) whose
``weight_map`` names the shard of every tensor. Files are written atomically by ``write_file``.
"""

from __future__ import annotations

import io
import json
import os
import struct
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import ml_dtypes
import numpy as np
import safetensors.numpy

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


def _parse_header(f: BinaryIO, size: int, name: str | Path) -> tuple[dict[str, Any], int]:
    """The JSON header of the safetensors data of ``size`` bytes that ``f`` starts at, and where the data begins.

    Raises:
        ValueError: the data is too short or its header is corrupt (the message names ``name``).
    """
    raw = f.read(8)
    if len(raw) < 8:
        raise ValueError(f"{name}: not a safetensors file (only {size} bytes)")
    (header_len,) = struct.unpack("<Q", raw)
    if header_len > min(_MAX_HEADER, size - 8):
        raise ValueError(f"{name}: corrupt safetensors header (header length {header_len}, file size {size})")
    try:
        header = json.loads(f.read(header_len))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ValueError(f"{name}: corrupt safetensors header ({err})") from None
    if not isinstance(header, dict):
        raise ValueError(f"{name}: corrupt safetensors header (not a JSON object)")
    return header, 8 + header_len


def _open_header(path: Path) -> tuple[dict[str, Any], int, int]:
    """``_parse_header`` of a file, and the file's size."""
    if not path.is_file():
        raise FileNotFoundError(f"checkpoint file not found: {path}")
    size = path.stat().st_size
    with open(path, "rb") as f:
        header, data_start = _parse_header(f, size, path)
    return header, data_start, size


def read_header(path: Path) -> dict[str, TensorInfo]:
    """The tensors of a safetensors file, checked against the file's size (nothing of the data is read).

    Raises:
        FileNotFoundError: the file does not exist.
        ValueError: the file is truncated or its header is corrupt (the message names the file).
    """
    path = Path(path)
    header, data_start, size = _open_header(path)
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


def read_metadata(source: str | Path | bytes) -> dict[str, str]:
    """The ``__metadata__`` of a safetensors file, or of its bytes already in memory (empty when it has none).

    Raises:
        FileNotFoundError: the file does not exist.
        ValueError: the header is corrupt (the message names the file).
    """
    if isinstance(source, bytes):
        header, _ = _parse_header(io.BytesIO(source), len(source), "<bytes>")
    else:
        header, _, _ = _open_header(Path(source))
    return header.get("__metadata__") or {}


def read_weight_map(index: Path) -> dict[str, Path]:
    """Tensor name -> shard file of a sharded checkpoint, from its index (``model.safetensors.index.json``).

    The shards are resolved beside the index and must exist; nothing of them is read.

    Raises:
        FileNotFoundError: the index or a shard it names does not exist.
        ValueError: the index is corrupt (not JSON, or no ``weight_map`` of file names).
    """
    index = Path(index)
    if not index.is_file():
        raise FileNotFoundError(f"checkpoint index not found: {index}")
    try:
        weight_map = json.loads(index.read_text())["weight_map"]
        shards = {name: index.parent / file for name, file in weight_map.items()}
    except (json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError, AttributeError) as err:
        raise ValueError(f"{index}: corrupt checkpoint index ({err!r})") from None
    for path in dict.fromkeys(shards.values()):
        if not path.is_file():
            raise FileNotFoundError(f"checkpoint shard {path} listed in {index} not found")
    return shards


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


def write_file(arrays: dict[str, np.ndarray], path: str | Path, metadata: dict[str, str] | None = None) -> None:
    """Write C-contiguous arrays as one safetensors file, atomically: a temporary file in the same folder is
    written, flushed to disk, then renamed over ``path``, so a crash never leaves a half-written file behind."""
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=os.path.basename(path) + ".", suffix=".tmp", dir=folder)
    os.close(fd)
    try:
        safetensors.numpy.save_file(arrays, tmp, metadata=metadata)
        with open(tmp, "rb+") as handle:
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise
