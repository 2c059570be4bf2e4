"""Reading files written by ``torch.save`` without PyTorch and without running code from them.

A ``torch.save`` file is a pickle whose tensors point at raw storage bytes: in the zip format (torch >= 1.6) the
pickle is ``<archive>/data.pkl`` and each storage is the entry ``<archive>/data/<key>``; in the legacy format the
storages follow the pickle in the same stream. A pickle is a small program that may import and call anything, so
it is read here by the standard library's unpickler with one change: every global it asks for goes through
:meth:`RestrictedUnpickler.find_class`, which knows only torch's tensor and storage rebuild functions (mapped to
Genesis's own record constructors, never to torch), ``collections.OrderedDict``, and the plain ``set`` /
``frozenset`` / bytes constructors, and the globals a user marked safe (:mod:`genesis.safe_globals`). Anything
else (a module class, ``os.system``...) raises CheckpointError naming it before it is imported or called, which is
what torch's ``weights_only=True`` allows too.

The unpickled tree holds :class:`TensorRecord` leaves; :func:`records_to_tensors` turns them into Genesis tensors
(tensors that shared a storage in torch share memory again) and :func:`records_to_arrays` into numpy arrays.
"""

from __future__ import annotations

import argparse
import collections
import io
import os
import pickle
import struct
import types
import zipfile
from typing import Any, BinaryIO, Callable

import numpy as np

try:  # numpy's array rebuilders: numpy._core since numpy 2, numpy.core before
    from numpy._core import multiarray as _multiarray
except ImportError:  # pragma: no cover - numpy 1
    from numpy.core import multiarray as _multiarray

from genesis import dtypes, safe_globals
from genesis.device import device as Device
from genesis.tensor import Tensor, tensor


class CheckpointError(RuntimeError):
    """A checkpoint file that cannot be read: truncated, corrupted, written by neither a safetensors writer nor
    ``torch.save``, or a PyTorch pickle asking for more than tensors, storages and plain containers."""


class WeightsOnlyError(CheckpointError, pickle.UnpicklingError):
    """A file that asks to import a class or function, refused by a weights-only load: an
    ``pickle.UnpicklingError`` as torch's ``weights_only=True`` refusal, and a :class:`CheckpointError`."""


ZIP_MAGIC = b"PK\x03\x04"
# The legacy format starts with the pickled magic number 0x1950a86a20f9469cfc6c (protocol 2, LONG1 of 10 bytes).
LEGACY_MAGIC = b"\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19"
_LEGACY_MAGIC_NUMBER = 0x1950A86A20F9469CFC6C
_LEGACY_PROTOCOL = 1001

# torch's typed storage classes, by the name the pickle imports them under.
_STORAGE_DTYPES = {
    "FloatStorage": dtypes.float32, "DoubleStorage": dtypes.float64, "HalfStorage": dtypes.float16,
    "BFloat16Storage": dtypes.bfloat16, "LongStorage": dtypes.int64, "IntStorage": dtypes.int32,
    "ShortStorage": dtypes.int16, "CharStorage": dtypes.int8, "ByteStorage": dtypes.uint8,
    "BoolStorage": dtypes.bool_, "ComplexFloatStorage": dtypes.complex64, "ComplexDoubleStorage": dtypes.complex128,
}


class _Sealed:
    """An object a pickle cannot change: no ``__dict__``, and setting an attribute (pickle's BUILD opcode with slot
    state) raises. Fields are set once, by the constructor."""

    __slots__ = ()

    def _init(self, **fields: Any) -> None:
        for name, value in fields.items():
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: Any) -> None:
        raise CheckpointError(f"load: the pickle tries to set '{name}' of a {type(self).__name__}")


class StorageType(_Sealed):
    """What the pickle's ``torch.FloatStorage`` (or another typed storage) stands for: its element dtype."""

    __slots__ = ("dtype",)

    def __init__(self, dtype: dtypes.dtype) -> None:
        self._init(dtype=dtype)


class Storage(_Sealed):
    """One storage: its elements as a 1-D numpy array (filled after unpickling in the legacy format)."""

    __slots__ = ("dtype", "numel", "location", "array")

    def __init__(self, dtype: dtypes.dtype, numel: int, location: str) -> None:
        self._init(dtype=dtype, numel=numel, location=location, array=None)

    def fill(self, array: np.ndarray) -> None:
        object.__setattr__(self, "array", array)


class TensorRecord(_Sealed):
    """A tensor as the pickle describes it: a strided window of a storage."""

    __slots__ = ("storage", "offset", "size", "stride", "requires_grad")

    def __init__(self, storage: Storage, offset: int, size: tuple[int, ...], stride: tuple[int, ...],
                 requires_grad: bool = False) -> None:
        self._init(storage=storage, offset=offset, size=size, stride=stride, requires_grad=requires_grad)


def _ints(value: Any, what: str) -> tuple[int, ...]:
    if not isinstance(value, (tuple, list)) or not all(isinstance(v, int) and v >= 0 for v in value):
        raise CheckpointError(f"load: a tensor's {what} is not a tuple of non-negative ints: {value!r}")
    return tuple(value)


def _rebuild_tensor(storage: Any, storage_offset: Any, size: Any, stride: Any, requires_grad: Any = False,
                    backward_hooks: Any = None, metadata: Any = None) -> TensorRecord:
    """Stands in for ``torch._utils._rebuild_tensor_v2``: checks the window lies inside the storage."""
    if not isinstance(storage, Storage):
        raise CheckpointError(f"load: a tensor refers to {type(storage).__name__}, not to a storage")
    size, stride = _ints(size, "size"), _ints(stride, "stride")
    if not isinstance(storage_offset, int) or storage_offset < 0 or len(size) != len(stride):
        raise CheckpointError(f"load: a tensor has an invalid layout (offset {storage_offset!r}, size {size}, "
                              f"stride {stride})")
    if 0 not in size:
        last = storage_offset + sum((n - 1) * s for n, s in zip(size, stride))
        if last >= storage.numel:
            raise CheckpointError(f"load: a tensor of size {list(size)}, stride {list(stride)} at offset "
                                  f"{storage_offset} reaches past its storage of {storage.numel} elements")
    return TensorRecord(storage, storage_offset, size, stride, bool(requires_grad))


def _rebuild_parameter(data: Any, requires_grad: Any, backward_hooks: Any = None) -> TensorRecord:
    """Stands in for ``torch._utils._rebuild_parameter``: a tensor that requires grad."""
    if not isinstance(data, TensorRecord):
        raise CheckpointError(f"load: a parameter wraps {type(data).__name__}, not a tensor")
    return TensorRecord(data.storage, data.offset, data.size, data.stride, bool(requires_grad))


def _encode(text: Any, encoding: Any = "latin1") -> bytes:
    """Stands in for ``_codecs.encode``, which protocol-2 pickles use to write bytes objects."""
    if not isinstance(text, str) or encoding not in ("latin1", "latin-1"):
        raise CheckpointError("load: _codecs.encode may only rebuild bytes from a latin1 string")
    return text.encode("latin1")


def _allowed(numpy_arrays: bool = False) -> dict[tuple[str, str], Any]:
    """The globals a pickle may ask for, made fresh for each file, so that one file cannot alter what the next
    one gets (functions come as bound methods, whose attributes a pickle cannot set). ``numpy_arrays``
    (``load(..., weights_only=False)``) adds numpy's array, dtype and scalar rebuilders and the two attribute bags
    that training scripts save beside their weights, ``argparse.Namespace`` and ``types.SimpleNamespace`` (data
    only: an object array's elements and a bag's attributes still pass this table). Each bag is handed out as a
    subclass made for this file, so that a pickle setting attributes on the class it gets changes only that one."""
    helpers = _Helpers()
    numpy_globals = {}
    if numpy_arrays:
        for core in ("numpy._core.multiarray", "numpy.core.multiarray"):  # numpy 2's module name, and numpy 1's
            numpy_globals[(core, "_reconstruct")] = _multiarray._reconstruct
            numpy_globals[(core, "scalar")] = _multiarray.scalar
        numpy_globals[("numpy", "ndarray")] = np.ndarray
        numpy_globals[("numpy", "dtype")] = np.dtype
        numpy_globals[("argparse", "Namespace")] = type("Namespace", (argparse.Namespace,), {})
        numpy_globals[("types", "SimpleNamespace")] = type("SimpleNamespace", (types.SimpleNamespace,), {})
    return {
        **numpy_globals,
        ("torch._utils", "_rebuild_tensor_v2"): helpers.rebuild_tensor,
        ("torch._utils", "_rebuild_parameter"): helpers.rebuild_parameter,
        ("collections", "OrderedDict"): collections.OrderedDict,
        ("builtins", "set"): set,
        ("builtins", "frozenset"): frozenset,
        ("__builtin__", "set"): set,  # protocol 2 writes Python 2's module name
        ("__builtin__", "frozenset"): frozenset,
        ("_codecs", "encode"): helpers.encode,
        **{("torch", name): StorageType(dtype) for name, dtype in _STORAGE_DTYPES.items()},
    }


class _Helpers:
    """The rebuild functions, as methods of one object per file."""

    def rebuild_tensor(self, *args: Any) -> TensorRecord:
        return _rebuild_tensor(*args)

    def rebuild_parameter(self, *args: Any) -> TensorRecord:
        return _rebuild_parameter(*args)

    def encode(self, *args: Any) -> bytes:
        return _encode(*args)


class RestrictedUnpickler(pickle.Unpickler):
    """An unpickler that builds only tensor records, storages and plain containers.

    Args:
        file: the pickle stream.
        name: the file's name, for messages.
        storage: maps a persistent id ``('storage', type, key, location, numel, ...)`` to its :class:`Storage`.
    """

    def __init__(self, file: BinaryIO, name: str, storage: Callable[[tuple], Storage],
                 numpy_arrays: bool = False) -> None:
        super().__init__(file)
        self.name = name
        self.storage = storage
        self.allowed = _allowed(numpy_arrays)

    def find_class(self, module: str, name: str) -> Any:
        found = self.allowed.get((module, name))
        if found is None:
            found = safe_globals.lookup(f"{module}.{name}")
        if found is None:
            raise WeightsOnlyError(
                f"load: '{self.name}' asks for the global '{module}.{name}'; Genesis reads only tensors, storages, "
                "plain containers and the globals marked safe (genesis.serialization.add_safe_globals) from PyTorch "
                "files and never imports or calls anything else (save a state_dict() in PyTorch rather than whole "
                "objects)")
        return found

    def persistent_load(self, pid: Any) -> Storage:
        if (not isinstance(pid, tuple) or len(pid) < 5 or pid[0] != "storage"
                or not isinstance(pid[1], StorageType) or not isinstance(pid[4], int)):
            raise CheckpointError(f"load: '{self.name}' holds an unknown persistent reference {pid!r}")
        return self.storage(pid)


def _unpickle(data: BinaryIO, name: str, storage: Callable[[tuple], Storage], numpy_arrays: bool = False) -> Any:
    try:
        return RestrictedUnpickler(data, name, storage, numpy_arrays).load()
    except CheckpointError:
        raise
    except Exception as err:  # a damaged pickle: the unpickler's own errors
        raise CheckpointError(f"load: '{name}' is not a readable PyTorch file (truncated or corrupt?): "
                              f"{type(err).__name__}: {err}") from None


def _storage_array(raw: bytes, dtype: dtypes.dtype, numel: int, name: str, big_endian: bool = False) -> np.ndarray:
    np_dtype = dtypes.to_numpy(dtype)
    if len(raw) < numel * np_dtype.itemsize:
        raise CheckpointError(f"load: '{name}' has a storage of {len(raw)} bytes where {numel} {dtype.name} "
                              "elements were promised")
    array = np.frombuffer(raw, dtype=np_dtype.newbyteorder(">") if big_endian else np_dtype, count=numel)
    return array.astype(np_dtype) if big_endian else array


def read_zip(source: str | BinaryIO, name: str, numpy_arrays: bool = False) -> Any:
    """The object tree of a zip-format ``torch.save`` file, with :class:`TensorRecord` leaves."""
    try:
        archive = zipfile.ZipFile(source)
    except (zipfile.BadZipFile, OSError) as err:
        raise CheckpointError(f"load: '{name}' is not a readable PyTorch zip file: {err}") from None
    with archive:
        pickles = [entry for entry in archive.namelist() if entry.endswith("data.pkl")]
        if not pickles:
            raise CheckpointError(f"load: '{name}' is a zip file without a data.pkl: not written by torch.save")
        prefix = pickles[0][: -len("data.pkl")]
        entries = set(archive.namelist())
        big_endian = (prefix + "byteorder" in entries
                      and archive.read(prefix + "byteorder").strip() == b"big")
        storages: dict[str, Storage] = {}

        def storage(pid: tuple) -> Storage:
            _, storage_type, key, location, numel = pid[:5]
            key = str(key)
            if key not in storages:
                entry = f"{prefix}data/{key}"
                if entry not in entries:
                    raise CheckpointError(f"load: '{name}' refers to storage '{key}' that the file does not hold")
                found = Storage(storage_type.dtype, numel, str(location))
                found.fill(_storage_array(archive.read(entry), found.dtype, numel, name, big_endian))
                storages[key] = found
            return storages[key]

        return _unpickle(io.BytesIO(archive.read(pickles[0])), name, storage, numpy_arrays)


def read_legacy(data: BinaryIO, name: str, numpy_arrays: bool = False) -> Any:
    """The object tree of a legacy-format ``torch.save`` file (``_use_new_zipfile_serialization=False``)."""
    def no_storage(pid: tuple) -> Storage:  # the header pickles and the key list hold no storages
        raise CheckpointError(f"load: '{name}' has a storage reference outside its object pickle")

    if _unpickle(data, name, no_storage) != _LEGACY_MAGIC_NUMBER:
        raise CheckpointError(f"load: '{name}' is not a PyTorch file (wrong magic number)")
    if _unpickle(data, name, no_storage) != _LEGACY_PROTOCOL:
        raise CheckpointError(f"load: '{name}' uses an unknown legacy protocol version")
    sys_info = _unpickle(data, name, no_storage)
    little = not isinstance(sys_info, dict) or sys_info.get("little_endian", True)
    storages: dict[str, Storage] = {}

    def storage(pid: tuple) -> Storage:
        _, storage_type, key, location, numel = pid[:5]
        if len(pid) > 5 and pid[5] is not None:
            raise CheckpointError(f"load: '{name}' uses legacy storage views, which Genesis does not read")
        return storages.setdefault(str(key), Storage(storage_type.dtype, numel, str(location)))

    tree = _unpickle(data, name, storage, numpy_arrays)
    keys = _unpickle(data, name, no_storage)
    if not isinstance(keys, list):
        raise CheckpointError(f"load: '{name}' has a corrupt storage list")
    for key in keys:
        found = storages.get(str(key))
        header = data.read(8)
        if found is None or len(header) < 8:
            raise CheckpointError(f"load: '{name}' is truncated or lists storage '{key}' that no tensor uses")
        (numel,) = struct.unpack("<q" if little else ">q", header)
        if numel != found.numel:
            raise CheckpointError(f"load: '{name}': storage '{key}' holds {numel} elements, {found.numel} expected")
        raw = data.read(numel * dtypes.to_numpy(found.dtype).itemsize)
        found.fill(_storage_array(raw, found.dtype, numel, name, big_endian=not little))
    missing = [key for key, s in storages.items() if s.array is None]
    if missing:
        raise CheckpointError(f"load: '{name}' lacks the data of storages {missing[:5]}")
    return tree


def is_torch_file(head: bytes) -> bool:
    """Whether the first bytes of a file are those of a ``torch.save`` file (zip or legacy format)."""
    return head.startswith(ZIP_MAGIC) or head.startswith(LEGACY_MAGIC)


def read(f: str | os.PathLike | BinaryIO, numpy_arrays: bool = False) -> Any:
    """The object tree of a ``torch.save`` file (path or binary file object), with :class:`TensorRecord` leaves;
    ``numpy_arrays``: numpy arrays and scalars in the file load as such (``load(..., weights_only=False)``)."""
    name = os.fspath(f) if isinstance(f, (str, os.PathLike)) else getattr(f, "name", "<file object>")
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as file:
            return _read_open(file, name, numpy_arrays)
    return _read_open(f, name, numpy_arrays)


def _read_open(file: BinaryIO, name: str, numpy_arrays: bool = False) -> Any:
    head = file.read(len(LEGACY_MAGIC))
    file.seek(-len(head), io.SEEK_CUR)
    if head.startswith(ZIP_MAGIC):
        return read_zip(file, name, numpy_arrays)
    if head.startswith(LEGACY_MAGIC):
        return read_legacy(file, name, numpy_arrays)
    raise CheckpointError(f"load: '{name}' is not a PyTorch file (neither the zip nor the legacy format)")


def _map(tree: Any, leaf: Callable[[TensorRecord], Any]) -> Any:
    """The tree with every tensor record replaced by ``leaf(record)``; containers keep their types."""
    if isinstance(tree, TensorRecord):
        return leaf(tree)
    if isinstance(tree, collections.OrderedDict):
        return collections.OrderedDict((k, _map(v, leaf)) for k, v in tree.items())
    if isinstance(tree, dict):
        return {k: _map(v, leaf) for k, v in tree.items()}
    if isinstance(tree, list):
        return [_map(v, leaf) for v in tree]
    if isinstance(tree, tuple):
        return tuple(_map(v, leaf) for v in tree)
    for bag in (argparse.Namespace, types.SimpleNamespace):  # rebuilt as the library's own class, attributes mapped
        if isinstance(tree, bag):
            out = bag()
            out.__dict__.update({k: _map(v, leaf) for k, v in vars(tree).items()})
            return out
    if isinstance(tree, Storage):
        raise CheckpointError("load: a bare storage outside a tensor is not supported")
    return tree


def _checked(record: TensorRecord) -> TensorRecord:
    """The record, once more checked against the data its storage really holds (the last word before memory is
    read through its window)."""
    storage = record.storage
    array = storage.array
    if not isinstance(array, np.ndarray) or array.ndim != 1 or array.dtype != dtypes.to_numpy(storage.dtype):
        raise CheckpointError("load: a tensor's storage holds no data")
    _rebuild_tensor(Storage(storage.dtype, array.size, storage.location), record.offset, record.size, record.stride)
    return record


def records_to_arrays(tree: Any) -> Any:
    """The tree with numpy arrays (copies, C-contiguous) in place of tensor records."""
    def leaf(record: TensorRecord) -> np.ndarray:
        _checked(record)
        itemsize = record.storage.array.itemsize
        view = np.lib.stride_tricks.as_strided(record.storage.array[record.offset:], shape=record.size,
                                               strides=tuple(s * itemsize for s in record.stride))
        return np.array(view)

    return _map(tree, leaf)


def records_to_tensors(tree: Any, place: Callable[[str], Device]) -> Any:
    """The tree with Genesis tensors in place of tensor records; ``place(saved location)`` picks each device.

    Each storage becomes one Genesis buffer and its tensors strided views of it, so tensors that shared memory in
    torch (views, tied weights) share it again.
    """
    bases: dict[int, Tensor] = {}

    def leaf(record: TensorRecord) -> Tensor:
        storage = _checked(record).storage
        base = bases.get(id(storage))
        if base is None:
            base = bases[id(storage)] = tensor(storage.array, device=place(storage.location))
        out = Tensor._wrap(base.ndarray.as_strided(record.size, record.stride, base.ndarray.offset + record.offset))
        if record.requires_grad:
            out.requires_grad_(True)
        return out

    return _map(tree, leaf)
