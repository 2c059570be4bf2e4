"""Checkpoints: ``genesis.save`` / ``genesis.load`` in the safetensors format, and training checkpoints.

A file is a plain safetensors file: every tensor is stored as raw bytes under a name, and the structure around
the tensors (nested dicts, lists, tuples and sets of numbers, strings, bytes, bools and None; sizes, dtypes and
devices) is stored as JSON in the file's metadata, where each tensor appears as a reference to its name. Tensors
that are views of one storage are stored as that storage once and load sharing memory again, as torch's.
Nothing is pickled, so loading an untrusted file cannot run code, and any safetensors reader opens the file. A
flat ``{name: tensor}`` dict of tensors on storages of their own is stored under its own names, so a saved
``state_dict()`` is a standard weights file. Writes are atomic (a temporary file in the
same folder, then ``os.replace``); every tensor carries a CRC-32 checksum, so a truncated or corrupted file is
reported by name and yields nothing. Sharded Hugging Face checkpoints load through their
``*.safetensors.index.json``.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import os
import types
import zlib
from collections import OrderedDict
from typing import Any, BinaryIO, Union

import numpy as np
import safetensors.numpy

from genesis import cuda, dtypes, torch_pickle
from genesis.device import device as Device
from genesis.device import to_device
from genesis.nn.modules.module import Module
from genesis.nn.parameter import Parameter
from genesis.ops.sparse import SparseTensor, sparse_coo_tensor
from genesis.ops.sparse_base import SparseBase
from genesis.ops.sparse_csr import sparse_csr_tensor
from genesis.random import default_generator
from genesis.safe_globals import add_safe_globals, clear_safe_globals, get_safe_globals, lookup, safe_globals
from genesis.safetensors_io import (
    STORABLE_DTYPES,
    iter_tensors,
    read_bytes,
    read_header,
    read_metadata,
    read_weight_map,
    write_file,
)
from genesis.tensor import Size, Tensor, tensor
from genesis.torch_pickle import CheckpointError, WeightsOnlyError

PathLike = Union[str, "os.PathLike[str]"]
FileLike = Union[PathLike, BinaryIO]

# Metadata keys: the JSON structure, the format version and the per-tensor checksums.
_STRUCTURE_KEY = "genesis.structure"
_FORMAT_KEY = "genesis.format"
_CHECKSUM_KEY = "genesis.crc32"
_FORMAT_VERSION = "1"


# ------------------------------------------------------------------ encoding


class _Encoder:
    """Turns an object tree into JSON-ready data plus a dict of named numpy arrays."""

    def __init__(self) -> None:
        self.arrays: dict[str, np.ndarray] = {}
        self.names_by_id: dict[int, str] = {}
        self.refs_by_id: dict[int, list[dict[str, Any]]] = {}
        # The distinct tensors found on each storage, by (device, dtype, storage address).
        self.by_storage: dict[tuple[str, str, int], list[Tensor]] = {}
        # Where each module or plain object was first stored: a second reference (a module used twice, a hook
        # object two hook tables share) is stored as a reference to that place and loads as the same object.
        self.objects_by_id: dict[int, str] = {}

    def encode(self, obj: Any, path: str) -> Any:
        if isinstance(obj, SparseBase):
            return self._sparse(obj, path)
        if isinstance(obj, Tensor):
            return self._tensor(obj, path)
        if obj is None or isinstance(obj, (bool, int, float, str)):
            return obj
        if isinstance(obj, complex):
            return {"__complex__": [obj.real, obj.imag]}
        if isinstance(obj, bytes):
            return {"__bytes__": obj.hex()}
        if isinstance(obj, (np.ndarray, np.generic)):  # torch.save stores numpy data too; it loads as numpy
            return self._numpy(obj, path)
        if isinstance(obj, dtypes.dtype):
            return {"__dtype__": obj.name}
        if isinstance(obj, Device):
            return {"__device__": str(obj)}
        if isinstance(obj, Size):
            return {"__size__": list(obj)}
        if isinstance(obj, set):
            return {"__set__": [self.encode(v, f"{path}.{i}") for i, v in enumerate(sorted(obj, key=repr))]}
        if isinstance(obj, tuple) and hasattr(type(obj), "_fields"):  # a namedtuple: its class by import name
            return {"__namedtuple__": _import_name(type(obj), path),
                    "items": [self.encode(v, _join(path, f)) for f, v in zip(obj._fields, obj)]}
        if isinstance(obj, tuple):
            return {"__tuple__": [self.encode(v, f"{path}.{i}") for i, v in enumerate(obj)]}
        if isinstance(obj, list):
            return [self.encode(v, f"{path}.{i}") for i, v in enumerate(obj)]
        if isinstance(obj, dict):
            plain = all(isinstance(k, str) and not k.startswith("__") for k in obj)
            if plain and isinstance(obj, OrderedDict):  # a state_dict() loads back as an OrderedDict, as torch's
                encoded = {"__odict__": [[k, self.encode(v, _join(path, k))] for k, v in obj.items()]}
                if vars(obj):  # a state_dict()'s `_metadata` (the modules' versions), kept as torch's pickle does
                    encoded["attributes"] = {k: self.encode(v, _join(path, k)) for k, v in vars(obj).items()}
                return encoded
            if plain:
                return {k: self.encode(v, _join(path, k)) for k, v in obj.items()}
            return {"__dict__": [[self.encode(k, f"{path}.<key>"), self.encode(v, _join(path, str(k)))]
                                 for k, v in obj.items()]}
        if id(obj) in self.objects_by_id:
            return {"__same__": self.objects_by_id[id(obj)]}
        if isinstance(obj, Module):
            self.objects_by_id[id(obj)] = path
            return self._module(obj, path)
        if isinstance(obj, (type, types.FunctionType, types.BuiltinFunctionType)):
            # A class or function (a module's hook in its hook table, an activation class): by import name.
            return {"__callable__": _import_name(obj, path)}
        if _is_plain_class(type(obj)) and hasattr(obj, "__dict__"):
            # A dataclass or another plain object (argparse.Namespace): its class by import name and its attributes
            # (loaded with weights_only=False, or with the class marked safe).
            self.objects_by_id[id(obj)] = path
            return {"__object__": _import_name(type(obj), path),
                    "state": {k: self.encode(v, _join(path, k)) for k, v in vars(obj).items()}}
        raise TypeError(f"save: cannot store an object of type {type(obj).__name__} at '{path or '<root>'}'; "
                        "only tensors, numpy arrays, dicts, lists, tuples, sets, numbers, strings, bytes, bools, "
                        "None, namedtuples, whole modules and objects whose state is their attributes (dataclasses, "
                        "argparse.Namespace) can be saved")

    def _module(self, module: Module, path: str) -> dict[str, Any]:
        """A whole module as its class's import name and its attributes: tensors and plain values as anywhere,
        the parameter/buffer/submodule/hook tables as ordered pairs, sets as lists, and functions or classes (an
        activation attribute) by import name. Nothing is pickled: loading imports the named classes and
        functions only, and only with ``weights_only=False``."""
        state = {}
        for key, value in module.__dict__.items():
            where = _join(path, key)
            if isinstance(value, OrderedDict):
                state[key] = {"__odict__": [[k, self.encode(v, _join(where, str(k)))] for k, v in value.items()]}
            elif isinstance(value, (set, frozenset)):
                state[key] = {"__set__": [self.encode(v, f"{where}.{i}")
                                          for i, v in enumerate(sorted(value, key=repr))]}
            elif callable(value) and not isinstance(value, (Module, Tensor)):
                state[key] = {"__callable__": _import_name(value, where)}
            else:
                state[key] = self.encode(value, where)
        return {"__object__": _import_name(type(module), path), "state": state}

    def _name(self, path: str) -> str:
        name = path or "tensor"
        suffix = 1
        while name in self.arrays:
            name = f"{path}#{suffix}"
            suffix += 1
        return name

    def _store(self, array: np.ndarray, path: str, ref: dict[str, Any]) -> str:
        """Keep ``array`` under a new name; complex128, which safetensors lacks, as its float64 parts (``ref``
        records it)."""
        if array.dtype == np.complex128:
            array = np.ascontiguousarray(array).view(np.float64).reshape(array.shape + (2,))
            ref["complex128"] = True
        elif array.dtype not in STORABLE_DTYPES:
            raise TypeError(f"save: cannot store an array of dtype {array.dtype} at '{path or '<root>'}'")
        name = self._name(path)
        # np.ascontiguousarray would turn a 0-d array into 1-d; copy only what is strided.
        self.arrays[name] = array if array.flags.c_contiguous else array.copy(order="C")
        return name

    def _numpy(self, value: np.ndarray | np.generic, path: str) -> dict[str, Any]:
        ref: dict[str, Any] = {"scalar": isinstance(value, np.generic)}
        ref["__numpy__"] = self._store(np.array(value), path, ref)
        return ref

    def _sparse(self, t: SparseBase, path: str) -> dict[str, Any]:
        """A sparse COO or CSR tensor as its layout, size and parts (indices and values, stored as tensors); as
        torch's, it loads without ``requires_grad``."""
        if isinstance(t, SparseTensor):
            parts = {"indices": t._indices(), "values": t._values()}
        else:
            parts = {"crow_indices": t.crow_indices(), "col_indices": t.col_indices(), "values": t.values()}
        encoded = {k: self._tensor(v.detach(), _join(path, k)) for k, v in parts.items()}
        coalesced = isinstance(t, SparseTensor) and t.is_coalesced()
        return {"__sparse__": str(t.layout).split(".")[-1], "size": list(t.shape), "coalesced": coalesced, **encoded}

    def _tensor(self, t: Tensor, path: str) -> dict[str, Any]:
        ref: dict[str, Any] = {"device": str(t.device)}
        name = self.names_by_id.get(id(t))
        if name is None:
            name = self.names_by_id[id(t)] = self._store(t.detach().cpu().numpy(), path, ref)
            address = t.untyped_storage().data_ptr()
            if address:
                self.by_storage.setdefault((str(t.device), t.dtype.name, address), []).append(t)
        elif t.dtype is dtypes.complex128:
            ref["complex128"] = True
        ref["__tensor__"] = name
        self.refs_by_id.setdefault(id(t), []).append(ref)
        if t.requires_grad:
            ref["requires_grad"] = True
        if isinstance(t, Parameter):
            ref["parameter"] = True
        return ref

    def share_storages(self) -> None:
        """Store the tensors that are views of one storage as that storage once, each as its view into it
        (offset, size, stride): they load sharing memory again, as torch's. A tensor alone on its storage keeps
        its own compact array, so a plain ``state_dict()`` stays a standard weights file."""
        for members in self.by_storage.values():
            first = members[0]
            numel = first.untyped_storage().nbytes() // first.element_size()
            if len(members) < 2 or numel * first.element_size() != first.untyped_storage().nbytes():
                continue
            name = self.names_by_id[id(first)]
            for t in members:
                del self.arrays[self.names_by_id[id(t)]]
            flat = first.detach().as_strided((numel,), (1,), 0)
            storage_ref: dict[str, Any] = {}
            name = self._store(flat.cpu().numpy(), name, storage_ref)
            for k, t in enumerate(members):
                for ref in self.refs_by_id[id(t)]:
                    ref.pop("complex128", None)
                    ref.update(storage_ref, __tensor__=name, member=k,
                               view=[t.storage_offset(), list(t.shape), list(t.stride())])


def _is_plain_class(cls: type) -> bool:
    """Whether instances of ``cls`` pickle as their class and their ``__dict__`` (what a file can hold without
    pickling): a dataclass, or a class that keeps object's pickling protocol (no ``__reduce__``, ``__getstate__``
    or ``__setstate__`` of its own, no slots). Classes whose instances are not plain objects (functions, types)
    have no import name and are refused there."""
    if dataclasses.is_dataclass(cls):
        return True
    return (cls.__reduce_ex__ is object.__reduce_ex__ and cls.__reduce__ is object.__reduce__
            and getattr(cls, "__getstate__", object.__getstate__) is object.__getstate__
            and not hasattr(cls, "__setstate__") and "__slots__" not in vars(cls))


def _import_name(obj: Any, path: str) -> str:
    """``module:qualname`` of a class or function that an import finds again; TypeError for anything else (a
    lambda, a closure, a bound method)."""
    name = f"{getattr(obj, '__module__', None)}:{getattr(obj, '__qualname__', None)}"
    try:
        found = _resolve(name)
    except (ImportError, AttributeError, ValueError):
        found = None
    if found is not obj:
        raise TypeError(f"save: cannot store {obj!r} at '{path or '<root>'}': only classes and functions that an "
                        "import finds by name can be saved (not lambdas, closures or bound methods)")
    return name


def _resolve(name: str) -> Any:
    """The class or function a ``module:qualname`` names (imports the module)."""
    module_name, _, qualname = name.partition(":")
    if not module_name or not qualname or "<" in qualname:
        raise ValueError(name)
    obj = importlib.import_module(module_name)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _checksum(array: np.ndarray) -> str:
    return format(zlib.crc32(array.reshape(-1).view(np.uint8)) if array.size else 0, "08x")


def save(obj: Any, f: FileLike, *, pickle_protocol: int = 2, _use_new_zipfile_serialization: bool = True) -> None:
    """Save tensors, state dicts and nested containers of plain values to a safetensors file.

    Args:
        obj: a tensor, or dicts / lists / tuples / sets nesting tensors, numbers, strings, bytes, bools, None,
            sizes, dtypes, devices; namedtuples, dataclass instances or whole modules (their class by import name,
            their attributes, parameters and buffers; they load back with ``load(..., weights_only=False)``). A
            tensor referenced twice (tied weights) is stored once and loads as one tensor, and so does a module or
            object (a submodule used twice); views of one storage load as views of one storage. Functions and
            classes (a module's hooks) are stored by import name.
        f: a path (written atomically) or a writable binary file object.
        pickle_protocol, _use_new_zipfile_serialization: accepted so that torch's calls run, and ignored: the file
            is safetensors whatever they say (nothing is pickled, and there is no zip or legacy format to choose).
    """
    if callable(getattr(obj, "state_dict", None)) and not isinstance(obj, Module):
        raise TypeError(f"save: cannot store a whole {type(obj).__name__} object: Genesis files hold tensors and "
                        f"plain values, never pickled code; save its state_dict() instead "
                        f"(genesis.save(obj.state_dict(), path)) and load it with load_state_dict()")
    encoder = _Encoder()
    structure = encoder.encode(obj, "")
    encoder.share_storages()
    if "__metadata__" in encoder.arrays:
        # Tensors are stored under their key; this one would collide with the header's metadata entry and make
        # a file no reader accepts.
        raise ValueError("save: '__metadata__' is reserved by the safetensors format and cannot name a tensor; "
                         "store the tensor under another key")
    metadata = {
        _FORMAT_KEY: _FORMAT_VERSION,
        _STRUCTURE_KEY: json.dumps(structure, separators=(",", ":")),
        _CHECKSUM_KEY: json.dumps({name: _checksum(a) for name, a in encoder.arrays.items()}, separators=(",", ":")),
    }
    if not isinstance(f, (str, os.PathLike)):
        f.write(safetensors.numpy.save(encoder.arrays, metadata=metadata))
        return
    write_file(encoder.arrays, f, metadata)


# ------------------------------------------------------------------ decoding


def _read(f: FileLike) -> tuple[dict[str, np.ndarray], dict[str, str], str]:
    """All arrays and the metadata of one safetensors file; any defect raises CheckpointError naming it."""
    name = os.fspath(f) if isinstance(f, (str, os.PathLike)) else getattr(f, "name", "<file object>")
    try:
        if isinstance(f, (str, os.PathLike)):
            if not os.path.exists(name):
                raise FileNotFoundError(f"load: no such file: '{name}'")
            metadata = read_metadata(name)
            # Genesis's own reader: numpy's safetensors loader has no bfloat16, which Hugging Face files use.
            arrays = {key: np.array(view) for key, view in iter_tensors(read_header(name))}
        else:
            data = f.read()
            metadata = read_metadata(data)
            arrays = read_bytes(data)
    except FileNotFoundError:
        raise
    except Exception as err:  # the reader's ValueError, or numpy's errors on a damaged file
        raise CheckpointError(f"load: '{name}' is not a readable safetensors file (truncated or corrupt?): "
                              f"{err}") from None
    if _CHECKSUM_KEY in metadata:
        sums = _json(metadata[_CHECKSUM_KEY], name)
        if not isinstance(sums, dict):
            raise CheckpointError(f"load: '{name}' has corrupt metadata: the checksums are not a map")
        for key, expected in sums.items():
            if key not in arrays:
                raise CheckpointError(f"load: '{name}' is missing tensor '{key}' listed in its metadata")
            if _checksum(arrays[key]) != expected:
                raise CheckpointError(f"load: '{name}' is corrupt: checksum mismatch in tensor '{key}'")
    return arrays, metadata, name


def _json(text: str, name: str) -> Any:
    try:
        return json.loads(text)
    except (json.JSONDecodeError, RecursionError) as err:
        raise CheckpointError(f"load: '{name}' has corrupt metadata: {type(err).__name__}: {err}") from None


def _target_device(saved: str, map_location: Any) -> Device:
    if map_location is None:
        target = saved
    elif isinstance(map_location, dict):
        target = map_location.get(saved, saved)
    elif callable(map_location):
        # torch's map_location(storage, location): called with the data as loaded on the CPU, it returns the
        # data where it should go (``lambda s, loc: s`` keeps the CPU, ``s.cuda(0)`` moves), or None for the default.
        moved = map_location(tensor([], device="cpu"), saved)
        target = saved if moved is None else moved.device
    else:
        target = map_location
    dev = to_device(target)
    if dev.type == "cuda":
        if not cuda.is_available():
            raise RuntimeError(f"load: attempting to place a tensor saved on '{saved}' on a CUDA device, but CUDA "
                               "is not available; pass map_location='cpu' to load it on the CPU")
    return dev


# Nesting deeper than this in a file's structure is refused (a state dict nests a few levels; a crafted file could
# nest thousands and exhaust the interpreter's stack).
_MAX_DEPTH = 100


class _Decoder:
    """Rebuilds the saved object from a file's structure; anything that :func:`save` could not have written raises
    CheckpointError naming the file and the place in the structure."""

    def __init__(self, arrays: dict[str, np.ndarray], map_location: Any, name: str,
                 weights_only: bool = True) -> None:
        self.arrays = arrays
        self.map_location = map_location
        self.name = name
        self.weights_only = weights_only
        self.tensors: dict[Any, Tensor] = {}
        self.storages: dict[str, Tensor] = {}
        self.objects: dict[str, Any] = {}  # the modules and plain objects rebuilt so far, by place in the structure

    def _bad(self, path: str, what: str) -> CheckpointError:
        return CheckpointError(f"load: '{self.name}' has a corrupt structure at '{path or '<root>'}': {what}")

    def decode(self, data: Any, path: str = "", depth: int = 0) -> Any:
        if depth > _MAX_DEPTH:
            raise self._bad(path, f"nested deeper than {_MAX_DEPTH} levels")
        if isinstance(data, list):
            return [self.decode(v, f"{path}.{i}", depth + 1) for i, v in enumerate(data)]
        if not isinstance(data, dict):
            return data
        if "__tensor__" in data:
            return self._tensor(data, path)
        if "__sparse__" in data:
            return self._sparse(data, path)
        if "__numpy__" in data:
            key = data["__numpy__"]
            if not isinstance(key, str) or key not in self.arrays:
                raise CheckpointError(f"load: '{self.name}' refers to array {key!r} that the file does not hold")
            array = _restore(self.arrays[key], data).copy()
            return array[()] if data.get("scalar") else array
        if "__tuple__" in data:
            items = data["__tuple__"]
            if not isinstance(items, list):
                raise self._bad(path, f"'__tuple__' holds {type(items).__name__}, not a list")
            return tuple(self.decode(v, f"{path}.{i}", depth + 1) for i, v in enumerate(items))
        if "__namedtuple__" in data:
            return self._namedtuple(data, path, depth)
        if "__complex__" in data:
            parts = data["__complex__"]
            if not (isinstance(parts, list) and len(parts) == 2 and all(isinstance(v, (int, float)) for v in parts)):
                raise self._bad(path, f"a complex number must be [real, imag], got {parts!r}")
            return complex(*parts)
        if "__bytes__" in data:
            try:
                return bytes.fromhex(_text(data["__bytes__"]))
            except (TypeError, ValueError):
                raise self._bad(path, "'__bytes__' must hold a hex string") from None
        if "__size__" in data:
            sizes = data["__size__"]
            if not (isinstance(sizes, list) and all(isinstance(v, int) and v >= 0 for v in sizes)):
                raise self._bad(path, f"a Size must be a list of sizes, got {sizes!r}")
            return Size(sizes)
        if "__dict__" in data:
            return self._dict(data["__dict__"], path, depth)
        if "__dtype__" in data:
            try:
                return dtypes.to_dtype(_text(data["__dtype__"]))
            except (TypeError, ValueError, KeyError, AttributeError):
                raise self._bad(path, f"unknown dtype {data['__dtype__']!r}") from None
        if "__device__" in data:
            return self._device(data["__device__"], path)
        if "__object__" in data:
            return self._module(data, path, depth)
        if "__same__" in data:
            if data["__same__"] not in self.objects:
                raise self._bad(path, f"'__same__' refers to {data['__same__']!r}, where no object was stored")
            return self.objects[data["__same__"]]
        if "__odict__" in data:
            pairs = data["__odict__"]
            if not isinstance(pairs, list) or not all(isinstance(p, list) and len(p) == 2 for p in pairs):
                raise self._bad(path, "'__odict__' must hold a list of [key, value] pairs")
            odict = OrderedDict((k, self.decode(v, _join(path, str(k)), depth + 1)) for k, v in pairs)
            attributes = data.get("attributes", {})
            if not (isinstance(attributes, dict) and all(k.isidentifier() for k in attributes)):
                raise self._bad(path, "an OrderedDict's 'attributes' must map attribute names to values")
            for k, v in attributes.items():
                setattr(odict, k, self.decode(v, _join(path, k), depth + 1))
            return odict
        if "__set__" in data:
            items = data["__set__"]
            if not isinstance(items, list):
                raise self._bad(path, f"'__set__' holds {type(items).__name__}, not a list")
            return set(_hashable(self.decode(v, f"{path}.{i}", depth + 1)) for i, v in enumerate(items))
        if "__callable__" in data:
            return self._named(data["__callable__"], path, "function or class")
        return {k: self.decode(v, _join(path, k), depth + 1) for k, v in data.items()}

    def _named(self, name: Any, path: str, what: str) -> Any:
        """The class or function ``name`` refers to: imported with ``weights_only=False``, else only one marked safe
        (``add_safe_globals``)."""
        if self.weights_only:
            found = lookup(name.replace(":", ".", 1)) if isinstance(name, str) else None
            if found is not None:
                return found
            raise WeightsOnlyError(f"load: '{self.name}' holds an object of a class named in the file ({what} "
                                  f"{name!r} at '{path or '<root>'}'): load(..., weights_only=False) rebuilds it, "
                                  "importing that name; only do so for files you trust, or save a state_dict() "
                                  "and plain containers instead")
        try:
            return _resolve(_text(name))
        except (ImportError, AttributeError, ValueError, TypeError) as err:
            raise CheckpointError(f"load: '{self.name}' needs {what} {name!r} at '{path or '<root>'}', which "
                                  f"cannot be imported here ({type(err).__name__}: {err})") from None

    def _namedtuple(self, data: dict[str, Any], path: str, depth: int) -> tuple:
        cls = self._named(data["__namedtuple__"], path, "namedtuple class")
        items = data.get("items")
        if not (isinstance(cls, type) and issubclass(cls, tuple) and hasattr(cls, "_fields")):
            raise self._bad(path, f"{data['__namedtuple__']!r} is not a namedtuple class")
        if not isinstance(items, list) or len(items) != len(cls._fields):
            raise self._bad(path, f"a {cls.__name__} needs a list of {len(cls._fields)} items")
        return cls(*(self.decode(v, _join(path, f), depth + 1) for f, v in zip(cls._fields, items)))

    def _module(self, data: dict[str, Any], path: str, depth: int) -> Any:
        """A whole module or a plain object: its class, created without ``__init__``, and its attributes."""
        cls = self._named(data["__object__"], path, "class")
        if not (isinstance(cls, type) and (issubclass(cls, Module) or _is_plain_class(cls))):
            raise self._bad(path, f"{data['__object__']!r} is neither a module class nor a plain class")
        state = data.get("state")
        if not isinstance(state, dict):
            raise self._bad(path, "an object's 'state' must be a map of its attributes")
        obj = cls.__new__(cls)
        self.objects[path] = obj
        obj.__dict__.update({k: self.decode(v, _join(path, k), depth + 1) for k, v in state.items()})
        return obj

    def _dict(self, pairs: Any, path: str, depth: int) -> dict[Any, Any]:
        if not isinstance(pairs, list) or not all(isinstance(p, list) and len(p) == 2 for p in pairs):
            raise self._bad(path, "'__dict__' must hold a list of [key, value] pairs")
        out = {}
        for k, v in pairs:
            key = _hashable(self.decode(k, f"{path}.<key>", depth + 1))
            try:
                hash(key)
            except TypeError:
                raise self._bad(path, f"a key of type {type(key).__name__} cannot key a dict") from None
            out[key] = self.decode(v, _join(path, str(key)), depth + 1)
        return out

    def _device(self, text: Any, path: str) -> Device:
        try:
            return to_device(_text(text))
        except (TypeError, ValueError, RuntimeError, AttributeError):
            raise self._bad(path, f"unknown device {text!r}") from None

    def _tensor(self, ref: dict[str, Any], path: str) -> Tensor:
        key = ref["__tensor__"]
        if not isinstance(key, str):
            raise self._bad(path, f"a tensor reference names {type(key).__name__}, not a string")
        view = ref.get("view")
        cache_key = key if view is None else (key, ref.get("member"))
        if cache_key in self.tensors:
            return self.tensors[cache_key]
        if key not in self.arrays:
            raise CheckpointError(f"load: '{self.name}' refers to tensor '{key}' that the file does not hold")
        saved = ref.get("device", "cpu")
        self._device(saved, path)
        requires_grad = ref.get("requires_grad", False)
        if not isinstance(requires_grad, bool):
            raise self._bad(path, f"requires_grad is {requires_grad!r}, not a bool")
        if view is None:
            t = tensor(_restore(self.arrays[key], ref), device=_target_device(saved, self.map_location))
        else:
            t = self._view(key, ref, view, path)
        if ref.get("parameter") is True:
            t = Parameter(t, requires_grad)
            self.tensors[cache_key] = t
            return t
        if requires_grad:
            if not t.dtype.is_floating_point:
                raise self._bad(path, f"tensor '{key}' of dtype {t.dtype} cannot require gradients")
            t.requires_grad_(True)
        self.tensors[cache_key] = t
        return t

    def _sparse(self, data: dict[str, Any], path: str) -> SparseBase:
        """A sparse COO or CSR tensor from its saved parts; its indices are checked against its size."""
        names = {"sparse_coo": ("indices", "values"), "sparse_csr": ("crow_indices", "col_indices", "values")}
        kind = data["__sparse__"]
        if kind not in names:
            raise self._bad(path, f"unknown sparse layout {kind!r}")
        size = data.get("size")
        if not (isinstance(size, list) and all(isinstance(n, int) and n >= 0 for n in size)):
            raise self._bad(path, f"a sparse tensor's size must be a list of sizes, got {size!r}")
        parts = []
        for key in names[kind]:
            ref = data.get(key)
            if not (isinstance(ref, dict) and "__tensor__" in ref):
                raise self._bad(path, f"a {kind} tensor needs its '{key}' tensor")
            parts.append(self._tensor(ref, _join(path, key)))
        try:
            if kind == "sparse_coo":
                return sparse_coo_tensor(*parts, size, is_coalesced=data.get("coalesced") is True)
            return sparse_csr_tensor(*parts, size)
        except RuntimeError as err:
            raise self._bad(path, str(err)) from None

    def _view(self, key: str, ref: dict[str, Any], view: Any, path: str) -> Tensor:
        """One of the tensors saved as views of the shared storage ``key`` (loaded once, on the target device)."""
        if not (isinstance(view, list) and len(view) == 3 and isinstance(view[0], int) and view[0] >= 0
                and all(isinstance(v, list) and all(isinstance(i, int) and i >= 0 for i in v) for v in view[1:])
                and len(view[1]) == len(view[2])):
            raise self._bad(path, f"a view must be [offset, size, stride], got {view!r}")
        offset, size, stride = view
        flat = self.storages.get(key)
        if flat is None:
            array = _restore(self.arrays[key], ref)
            if array.ndim != 1:
                raise self._bad(path, f"the storage '{key}' of a view is not 1-d")
            flat = self.storages[key] = tensor(array, device=_target_device(ref.get("device", "cpu"),
                                                                           self.map_location))
        if all(size) and offset + sum((n - 1) * s for n, s in zip(size, stride)) >= flat.numel():
            raise self._bad(path, f"the view {view!r} reaches past the {flat.numel()} elements of storage '{key}'")
        return flat.as_strided(tuple(size), tuple(stride), offset)


def _restore(array: np.ndarray, ref: dict[str, Any]) -> np.ndarray:
    """A stored array as saved: complex128 back from its float64 parts."""
    if ref.get("complex128") and array.dtype == np.float64 and array.ndim and array.shape[-1] == 2:
        return array.view(np.complex128).reshape(array.shape[:-1])
    return array


def _text(value: Any) -> str:
    """``value`` if it is a string; TypeError otherwise (the decoder turns it into CheckpointError)."""
    if not isinstance(value, str):
        raise TypeError(type(value).__name__)
    return value


def _hashable(key: Any) -> Any:
    return tuple(_hashable(k) for k in key) if isinstance(key, (list, tuple)) else key


def _load_index(path: str, map_location: Any) -> dict[str, Tensor]:
    """A sharded Hugging Face checkpoint: ``{"weight_map": {tensor name: shard file}}`` beside its shards."""
    try:
        weight_map = read_weight_map(path)
    except ValueError as err:
        raise CheckpointError(f"load: {err}") from None
    out: dict[str, Tensor] = {}
    for shard in dict.fromkeys(weight_map.values()):
        arrays, shard_name = _shard_arrays(shard)
        wanted = [name for name, file in weight_map.items() if file == shard]
        missing = [name for name in wanted if name not in arrays]
        if missing:
            raise CheckpointError(f"load: shard '{shard_name}' lacks tensors {missing[:5]} listed in '{path}'")
        for name in wanted:
            out[name] = tensor(arrays[name], device=_target_device("cpu", map_location))
    return {name: out[name] for name in weight_map}


def _shard_arrays(shard: PathLike) -> tuple[dict[str, np.ndarray], str]:
    """The arrays of one shard of a sharded checkpoint: a safetensors file or a ``pytorch_model-*.bin``."""
    name = os.fspath(shard)
    if os.path.exists(name) and _is_torch_file(name):
        arrays = torch_pickle.records_to_arrays(torch_pickle.read(name))
        if not isinstance(arrays, dict):
            raise CheckpointError(f"load: shard '{name}' holds a {type(arrays).__name__}, not a state dict")
        return arrays, name
    return _read(shard)[0], name


def _is_torch_file(f: FileLike) -> bool:
    """Whether ``f`` starts as a ``torch.save`` file does (a file object is left where it was)."""
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as file:
            return torch_pickle.is_torch_file(file.read(len(torch_pickle.LEGACY_MAGIC)))
    head = f.read(len(torch_pickle.LEGACY_MAGIC))
    f.seek(-len(head), os.SEEK_CUR)
    return torch_pickle.is_torch_file(head)


def load(f: FileLike, map_location: Any = None, weights_only: bool = True, *, mmap: bool | None = None) -> Any:
    """Load what :func:`save` wrote, a plain safetensors file, a sharded ``*.index.json``, or a PyTorch file.

    PyTorch files (``.pt`` / ``.bin`` written by ``torch.save``, zip or legacy format) are read without PyTorch by
    a restricted unpickler (``genesis.torch_pickle``): tensors (bfloat16, float16, integer and bool dtypes; views
    and tensors sharing a storage share memory again), storages, dicts, OrderedDicts, lists, tuples and plain
    values. A pickle that asks for anything else (a module's class, a function) raises CheckpointError naming it,
    before anything is imported or called.

    Args:
        f: a path or a readable binary file object.
        map_location: where tensors go: None (the device they were saved from), a device or device string, a
            dict mapping saved device strings to new ones (``{"cuda:0": "cpu"}``), or torch's callable
            ``(storage, location) -> storage``, called with a CPU tensor standing for the storage: the device of
            what it returns is the target (None: the saved device).
        weights_only: as torch's (True by default): a file holding a whole module (written by
            ``save(model, ...)``) loads only with ``weights_only=False``, which imports the module's class and any
            function it names (nothing is unpickled: the file holds names, attributes and tensors). PyTorch pickles
            are restricted to tensors, containers and the globals marked safe; ``weights_only=False`` also lets
            them hold numpy arrays and scalars (data only) and ``argparse.Namespace`` / ``types.SimpleNamespace``
            attribute bags, never other classes or functions.
        mmap: accepted for torch compatibility and ignored: the file is read into memory either way (tensors are
            checksummed, and converted where their format differs). As torch, ``mmap=True`` needs a path (ValueError
            for a file object).

    Returns:
        The saved object; a plain safetensors file (or a sharded index) loads as a ``{name: tensor}`` dict.
    """
    if mmap and not isinstance(f, (str, os.PathLike)):
        raise ValueError("f must be a file path in order to use the mmap argument")
    if isinstance(f, (str, os.PathLike)) and os.fspath(f).endswith(".index.json"):
        return _load_index(os.fspath(f), map_location)
    if (not isinstance(f, (str, os.PathLike)) or os.path.exists(f)) and _is_torch_file(f):
        tree = torch_pickle.read(f, numpy_arrays=not weights_only)
        return torch_pickle.records_to_tensors(tree, lambda saved: _target_device(saved, map_location))
    arrays, metadata, name = _read(f)
    decoder = _Decoder(arrays, map_location, name, weights_only)
    if _STRUCTURE_KEY not in metadata:
        return {key: decoder.decode({"__tensor__": key}) for key in arrays}
    return decoder.decode(_json(metadata[_STRUCTURE_KEY], name))


# ------------------------------------------------------------------ training checkpoints


def save_checkpoint(path: PathLike, model: Any = None, optimizer: Any = None, scheduler: Any = None,
                    scaler: Any = None, step: int | None = None, **extra: Any) -> None:
    """Save everything a training run needs to resume exactly: the state dicts of the model, optimizer,
    scheduler and gradient scaler, the step, the random-number state, and any ``extra`` plain values."""
    state: dict[str, Any] = {"step": step, "rng": _rng_states(), "extra": extra}
    for key, component in (("model", model), ("optimizer", optimizer), ("scheduler", scheduler),
                           ("scaler", scaler)):
        if component is not None:
            state[key] = component.state_dict()
    save(state, path)


def load_checkpoint(path: PathLike, model: Any = None, optimizer: Any = None, scheduler: Any = None,
                    scaler: Any = None, map_location: Any = None, strict: bool = True) -> dict[str, Any]:
    """Restore a :func:`save_checkpoint` file into the given components and the random-number state.

    The file is read and verified completely before anything is changed; if restoring any component fails,
    the ones already restored are put back, so a failed load leaves the run as it was.

    Returns:
        The checkpoint dict (``step``, ``extra`` and the raw state dicts).
    """
    state = load(path, map_location=map_location)
    if not isinstance(state, dict) or "rng" not in state:
        raise CheckpointError(f"load_checkpoint: '{os.fspath(path)}' is not a training checkpoint "
                              "(written by genesis.save_checkpoint)")
    components = [(key, c) for key, c in (("model", model), ("optimizer", optimizer), ("scheduler", scheduler),
                                          ("scaler", scaler)) if c is not None]
    for key, _ in components:
        if key not in state:
            raise KeyError(f"load_checkpoint: '{os.fspath(path)}' holds no {key} state")
    backups = [(key, c, _snapshot(c.state_dict())) for key, c in components]
    rng_backup = _rng_states()
    try:
        for key, component in components:
            if key == "model":
                component.load_state_dict(state[key], strict=strict)
            else:
                component.load_state_dict(state[key])
        _set_rng_states(state["rng"])
    except BaseException:
        for key, component, backup in backups:
            if key == "model":
                component.load_state_dict(backup, strict=False)
            else:
                component.load_state_dict(backup)
        _set_rng_states(rng_backup)
        raise
    return state


def _rng_states() -> dict[str, Tensor]:
    """The state of the default generator of the CPU and of every CUDA device."""
    devices = ["cpu"] + ([f"cuda:{i}" for i in range(cuda.device_count())] if cuda.is_available() else [])
    return {dev: default_generator(dev).get_state() for dev in devices}


def _set_rng_states(states: dict[str, Tensor]) -> None:
    """Restore default generator states; CUDA ones are skipped when no such device is present."""
    for dev, rng_state in states.items():
        if dev == "cpu" or (cuda.is_available() and int(dev.split(":")[1]) < cuda.device_count()):
            default_generator(dev).set_state(rng_state)


def _snapshot(obj: Any) -> Any:
    """A deep copy of a state dict whose tensors are cloned (the live ones change when loading)."""
    if isinstance(obj, Tensor):
        return obj.detach().clone()
    if isinstance(obj, dict):
        return {k: _snapshot(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_snapshot(v) for v in obj]
    if isinstance(obj, tuple):
        return tuple(_snapshot(v) for v in obj)
    return obj


__all__ = ["CheckpointError", "add_safe_globals", "clear_safe_globals", "get_safe_globals", "load", "load_checkpoint",
           "safe_globals", "save", "save_checkpoint"]
