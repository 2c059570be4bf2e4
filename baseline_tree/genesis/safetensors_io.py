"""Reading safetensors files with every dtype, bfloat16 included, without loading them whole.

A safetensors file is an 8-byte little-endian header length, a JSON header mapping each tensor name to its dtype,
shape and byte range, then the raw little-endian data. The ``safetensors`` package's numpy reader has no bfloat16
(numpy lacks the type), which Hugging Face checkpoints use, so the header is read here, the bfloat16 type comes from
``ml_dtypes``, and tensors are handed out as views of a memory map one at a time.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import ml_dtypes
import numpy as np

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
