"""Safetensors files and sharded indexes: the one reader and the one writer every checkpoint goes through.

A safetensors file is an 8-byte little-endian header length, a JSON header mapping each tensor name to its dtype,
shape and byte range (plus an optional ``__metadata__`` dict of strings), then the raw little-endian data. The
``safetensors`` package's numpy reader has no bfloat16 (numpy lacks the type), which Hugging Face checkpoints use,
so the header is read here, the bfloat16 type comes from ``ml_dtypes``, and tensors are handed out as views of a
memory map one at a time. A sharded checkpoint adds an index (``model.safetensors.index.json``) whose
``weight_map`` names the shard of every tensor. Files are written atomically by ``write_file``.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import re
import secrets
import struct
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
    "I16": np.dtype(np.int16), "I8": np.dtype(np.int8), "U64": np.dtype(np.uint64), "U32": np.dtype(np.uint32),
    "U16": np.dtype(np.uint16), "U8": np.dtype(np.uint8), "BOOL": np.dtype(np.bool_),
    "C64": np.dtype(np.complex64),
}
#: The numpy dtypes a safetensors file holds (and this reader reads back).
STORABLE_DTYPES = frozenset(_DTYPES.values())
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
    metadata = header.get("__metadata__", {})
    if metadata is not None and not (isinstance(metadata, dict) and
                                     all(isinstance(v, str) for v in metadata.values())):
        raise ValueError(f"{name}: corrupt safetensors header (__metadata__ is not a map of strings)")
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
    return _tensor_infos(header, data_start, size, path)


def _tensor_infos(header: dict[str, Any], data_start: int, size: int, path: Path) -> dict[str, TensorInfo]:
    """Check a parsed header as the ``safetensors`` package does and say where each tensor lives.

    Each tensor's byte range must hold exactly shape × itemsize bytes, and the ranges, in order, must tile the data
    that follows the header: no overlap (two tensors sharing bytes), no gap, nothing past the end of the file.
    """
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        try:
            dtype = _DTYPES[entry["dtype"]]
            shape = tuple(entry["shape"])
            begin, end = entry["data_offsets"]
            if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in (*shape, begin, end)):
                raise ValueError
        except (KeyError, TypeError, ValueError):
            raise ValueError(f"{path}: corrupt or unsupported header entry for tensor {name!r}: {entry!r}") from None
        expected = math.prod(shape) * dtype.itemsize
        if end - begin != expected:
            raise ValueError(f"{path}: tensor {name!r} of shape {list(shape)} and dtype {entry['dtype']} needs "
                             f"{expected} bytes but its offsets span {end - begin}")
        if data_start + end > size:
            raise ValueError(f"{path}: file is truncated (tensor {name!r} ends at byte {data_start + end}, "
                             f"file has {size})")
        tensors[name] = TensorInfo(path, dtype, shape, data_start + begin, data_start + end)
    position = data_start
    for name, info in sorted(tensors.items(), key=lambda item: (item[1].start, item[1].end)):
        if info.start != position:
            kind = "overlaps the previous tensor" if info.start < position else "leaves a gap after the previous one"
            raise ValueError(f"{path}: corrupt safetensors header: the data of tensor {name!r} (bytes "
                             f"{info.start - data_start}..{info.end - data_start}) {kind}")
        position = info.end
    if position != size:
        raise ValueError(f"{path}: corrupt safetensors file: {size - position} bytes after the last tensor's data")
    return tensors


def read_bytes(data: bytes) -> dict[str, np.ndarray]:
    """Every tensor of safetensors data already in memory (bfloat16 included), as arrays that own their data.

    Raises:
        ValueError: the data is truncated or its header is corrupt.
    """
    header, data_start = _parse_header(io.BytesIO(data), len(data), "<bytes>")
    infos = _tensor_infos(header, data_start, len(data), Path("<bytes>"))
    view = memoryview(data)
    return {name: np.frombuffer(view[i.start:i.end], dtype=i.dtype).reshape(i.shape).copy()
            for name, i in infos.items()}


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
    """Write C-contiguous arrays as one safetensors file, atomically (see ``atomic_write``)."""
    with atomic_write(path) as tmp:
        safetensors.numpy.save_file(arrays, tmp, metadata=metadata)


def write_text(path: str | Path, text: str) -> None:
    """Write a text file (a ``config.json``, an index) atomically (see ``atomic_write``)."""
    with atomic_write(path) as tmp, open(tmp, "w", encoding="utf-8") as f:
        f.write(text)


@contextlib.contextmanager
def atomic_write(path: str | Path) -> Iterator[str]:
    """Yield a temporary path beside ``path``; once the caller has written it, it is flushed to disk and renamed
    over ``path``, so ``path`` always holds either the old file or the whole new one, even after a crash or kill.

    The temporary file is created with mode 0666 less the umask (as ``open`` would create ``path``), and named
    ``<name>.<pid>.<random>.tmp``: removed on any error, and, if the writer was killed, by the next write of
    ``path`` once that process is gone.
    """
    path = os.path.abspath(os.fspath(path))
    folder, base = os.path.split(path)
    _remove_stale_temporaries(folder, base)
    tmp = os.path.join(folder, f"{base}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    os.close(os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666))
    mode = os.stat(tmp).st_mode & 0o777  # 0666 less the umask
    try:
        yield tmp
        os.chmod(tmp, mode)  # a writer may have replaced the file with its own (safetensors' is 0600)
        with open(tmp, "rb+") as handle:
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.remove(tmp)
        raise
    _fsync_folder(folder)


def _remove_stale_temporaries(folder: str, base: str) -> None:
    """Remove the temporary files a killed writer of ``base`` left behind (those of live processes stay)."""
    pattern = re.compile(re.escape(base) + r"\.(\d+)\.[0-9a-f]+\.tmp")
    with os.scandir(folder) as entries:
        stale = [e.path for e in entries if (m := pattern.fullmatch(e.name)) and not _alive(int(m.group(1)))]
    for name in stale:
        with contextlib.suppress(FileNotFoundError):
            os.remove(name)


def _alive(pid: int) -> bool:
    """Whether process ``pid`` still runs (a zombie, killed but not yet reaped, does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):  # no /proc (macOS): trust the signal test
        return True


def _fsync_folder(folder: str) -> None:
    """Make a rename in ``folder`` durable (a no-op where folders cannot be opened, as on Windows)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
