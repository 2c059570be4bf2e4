"""genesis.save / genesis.load (safetensors), sharded indexes, corrupt files, and exact training resumption."""

from __future__ import annotations

import argparse
import collections
import dataclasses
import io
import json
import math
import os
import pickle
from collections import OrderedDict

import numpy as np
import pytest
import safetensors
import safetensors.numpy
import safetensors.torch
import torch

import genesis
from genesis import optim
from genesis.safetensors_io import read_metadata, read_weight_map, write_file
from genesis.serialization import CheckpointError
from tests.helpers import DEVICE, to_genesis, to_torch

DTYPES = [genesis.float32, genesis.float64, genesis.float16, genesis.bfloat16, genesis.int8, genesis.uint8,
          genesis.int16, genesis.int32, genesis.int64, genesis.bool, genesis.complex64, genesis.complex128]


def _bits(t: genesis.Tensor) -> bytes:
    return t.detach().cpu().numpy().tobytes(order="C")


def _sample(dtype: genesis.dtype, shape: tuple[int, ...]) -> genesis.Tensor:
    values = torch.randn(shape, generator=torch.Generator().manual_seed(1), dtype=torch.float64) * 50
    if dtype is genesis.bool:
        return to_genesis(values > 0)
    if dtype.is_complex:
        return to_genesis(torch.complex(values, values.flip(-1) if values.ndim else -values)).to(dtype)
    if not dtype.is_floating_point:
        values = values.round().clamp(0 if dtype is genesis.uint8 else -100, 100)
    return to_genesis(values).to(dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_round_trip_is_exact_for_every_dtype(tmp_path, dtype: genesis.dtype) -> None:
    tensors = {"matrix": _sample(dtype, (5, 7)), "scalar": _sample(dtype, ()), "empty": _sample(dtype, (0, 3))}
    if dtype.is_floating_point or dtype.is_complex:
        tensors["special"] = genesis.tensor([math.inf, -math.inf, math.nan, -0.0, 1e-30], dtype=dtype,
                                            device=DEVICE)
    path = tmp_path / "t.safetensors"
    genesis.save(tensors, path)
    loaded = genesis.load(path)
    assert list(loaded) == list(tensors)
    for key, t in tensors.items():
        assert loaded[key].dtype is dtype and loaded[key].shape == t.shape
        assert str(loaded[key].device) == str(t.device)
        assert _bits(loaded[key]) == _bits(t), key


def test_file_opens_with_the_safetensors_library(tmp_path) -> None:
    state = {"layer.weight": _sample(genesis.float32, (3, 4)), "layer.bias": _sample(genesis.bfloat16, (4,))}
    path = tmp_path / "model.safetensors"
    genesis.save(state, path)
    with safetensors.safe_open(str(path), framework="np") as f:
        assert sorted(f.keys()) == ["layer.bias", "layer.weight"]
    arrays = safetensors.numpy.load_file(str(path))
    np.testing.assert_array_equal(arrays["layer.weight"], state["layer.weight"].cpu().numpy())
    assert arrays["layer.bias"].dtype.name == "bfloat16"
    loaded = safetensors.torch.load_file(str(path))
    assert loaded["layer.bias"].dtype == torch.bfloat16
    assert torch.equal(loaded["layer.bias"], to_torch(state["layer.bias"]))


def test_plain_safetensors_file_loads_as_a_dict(tmp_path) -> None:
    path = tmp_path / "plain.safetensors"
    safetensors.numpy.save_file({"a": np.arange(6, dtype=np.int32).reshape(2, 3), "b": np.ones(2)}, str(path))
    loaded = genesis.load(path)
    assert loaded["a"].dtype is genesis.int32 and loaded["a"].tolist() == [[0, 1, 2], [3, 4, 5]]
    assert loaded["b"].dtype is genesis.float64


def test_nested_structure_round_trip(tmp_path) -> None:
    obj = {
        "state": {0: {"step": 3, "buf": genesis.arange(4, device=DEVICE)}, 1: {}},
        "groups": [{"lr": 0.1, "betas": (0.9, 0.999), "nesterov": False, "name": None}],
        "values": [math.inf, -math.inf, 1e-300, "text", True, (1, (2, [3]))],
        "dtype": genesis.bfloat16,
        "__private": 1,
        "device": genesis.device("cpu"),
        (1, 2): "tuple key",
    }
    path = tmp_path / "nested.safetensors"
    genesis.save(obj, path)
    loaded = genesis.load(path)
    assert loaded["state"][0]["step"] == 3 and loaded["state"][1] == {}
    assert loaded["state"][0]["buf"].tolist() == [0, 1, 2, 3]
    assert loaded["groups"] == obj["groups"]
    assert loaded["values"] == obj["values"]
    assert loaded["dtype"] is genesis.bfloat16 and loaded["__private"] == 1
    assert loaded["device"] == genesis.device("cpu") and loaded[(1, 2)] == "tuple key"


def test_single_tensor_views_and_requires_grad(tmp_path) -> None:
    base = genesis.arange(12, dtype=genesis.float32, device=DEVICE).reshape(3, 4)
    view = base.t()[1:]
    path = tmp_path / "view.safetensors"
    genesis.save(view, path)
    loaded = genesis.load(path)
    assert genesis.equal(loaded, view) and loaded.is_contiguous()
    w = genesis.ones(2, requires_grad=True)
    genesis.save({"w": w}, path)
    assert genesis.load(path)["w"].requires_grad


@pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta state")
@pytest.mark.filterwarnings("ignore:Sparse invariant checks are implicitly disabled")
def test_sparse_tensors_round_trip_as_torch(tmp_path) -> None:
    def build(lib):
        device = DEVICE if lib is genesis else "cpu"
        uncoalesced = lib.sparse_coo_tensor(lib.tensor([[0, 1, 0], [1, 0, 1]]), lib.tensor([1.0, 2.0, 3.0]), (2, 3),
                                            device=device)
        leaf = lib.sparse_coo_tensor(lib.tensor([[0, 1], [1, 0]]), lib.tensor([1.0, 2.0]), (2, 2),
                                     requires_grad=True, device=device)
        return {"adj": uncoalesced, "norm": uncoalesced.coalesce(), "leaf": leaf,
                "csr": uncoalesced.coalesce().to_sparse_csr(), "dense": lib.ones(2)}

    buffer = io.BytesIO()
    torch.save(build(torch), buffer)
    buffer.seek(0)
    expected = torch.load(buffer)
    path = tmp_path / "sparse.safetensors"
    genesis.save(build(genesis), path)
    loaded = genesis.load(path)
    for key in ("adj", "norm", "leaf"):
        g, t = loaded[key], expected[key]
        assert g.layout is genesis.sparse_coo and (g.is_coalesced(), g._nnz()) == (t.is_coalesced(), t._nnz())
        assert g.requires_grad == t.requires_grad  # torch's sparse tensors load without requires_grad
        assert g.device == g._indices().device == genesis.device(DEVICE)  # loaded where it was saved
        assert g._indices().tolist() == t._indices().tolist() and g._values().tolist() == t._values().tolist()
    csr = loaded["csr"]
    assert csr.layout is genesis.sparse_csr and csr.crow_indices().tolist() == expected["csr"].crow_indices().tolist()
    assert csr.to_dense().tolist() == expected["csr"].to_dense().tolist()
    structure = json.loads(read_metadata(str(path))["genesis.structure"])
    structure["adj"]["size"] = [1, 3]  # an index past the size: refused as a corrupt file
    safetensors.numpy.save_file(safetensors.numpy.load_file(str(path)), str(path),
                                metadata={"genesis.format": "1", "genesis.structure": json.dumps(structure)})
    with pytest.raises(CheckpointError, match="at 'adj'.*size is inconsistent with indices"):
        genesis.load(path)


def test_shared_tensor_stored_once_and_stays_shared(tmp_path) -> None:
    w = genesis.randn(4, 4)
    path = tmp_path / "tied.safetensors"
    genesis.save({"embed.weight": w, "lm_head.weight": w}, path)
    assert len(safetensors.numpy.load_file(str(path))) == 1
    loaded = genesis.load(path)
    assert loaded["embed.weight"] is loaded["lm_head.weight"]


Pair = collections.namedtuple("Pair", ["first", "second"])


def test_views_of_one_storage_load_sharing_memory_as_torch(tmp_path) -> None:
    def build(lib):
        qkv = lib.arange(24, dtype=lib.float64).reshape(6, 4)
        z = lib.arange(6, dtype=lib.float64).to(lib.complex128).reshape(2, 3)
        base = lib.tensor([1, 2, 3], dtype=lib.int32)
        return {"qkv": qkv, "parts": qkv.split(2), "kT": qkv[2:4].t(), "z": z, "z1": z[1],
                "base": base, "wide": base.expand(2, 3), "odd": base[::2], "same": [base[:], base.view(3)]}

    def check(lib, obj) -> list:
        obj["qkv"].mul_(10)
        obj["z"][1, 2] = 1j
        obj["base"][0] = 7
        obj["same"][0][1] = 9
        return [obj["parts"][1], obj["kT"], obj["z1"], obj["wide"], obj["odd"], obj["same"][1],
                [t.storage_offset() for t in obj["parts"]], obj["kT"].stride(), obj["wide"].stride(),
                obj["same"][0] is obj["same"][1]]

    path = tmp_path / "views.pt"
    genesis.save(build(genesis), path)
    torch.save(build(torch), tmp_path / "views.torch")
    got = check(genesis, genesis.load(path, map_location="cpu"))
    want = check(torch, torch.load(tmp_path / "views.torch"))
    for g, w in zip(got, want):
        if isinstance(w, torch.Tensor):
            assert g.dtype == to_genesis(w).dtype and torch.equal(to_torch(g), w)
        else:
            assert g == w
    # a tensor alone on its storage keeps its own compact array under its name
    alone = genesis.arange(10.0)[2:4]
    genesis.save({"a": alone}, path)
    assert safetensors.numpy.load_file(str(path))["a"].tolist() == [2.0, 3.0]


@dataclasses.dataclass(frozen=True)
class RunInfo:
    epoch: int
    name: str


def test_namedtuples_and_dataclasses_round_trip_and_need_weights_only_false(tmp_path) -> None:
    path = tmp_path / "pair.pt"
    genesis.save({"p": Pair(genesis.ones(2), [1, "x"]), "info": RunInfo(3, "a")}, path)
    loaded = genesis.load(path, weights_only=False)
    assert type(loaded["p"]) is Pair and loaded["p"].second == [1, "x"] and loaded["p"].first.tolist() == [1.0, 1.0]
    assert loaded["info"] == RunInfo(3, "a")
    # refused as torch's weights-only load refuses them: an UnpicklingError
    with pytest.raises(pickle.UnpicklingError, match="weights_only=False"):
        genesis.load(path)
    with pytest.raises(CheckpointError):
        genesis.load(path)


class _Config:
    """A plain class: its state is its attributes (as argparse.Namespace)."""

    def __init__(self, lr: float, layers: list) -> None:
        self.lr, self.layers = lr, layers


class _Slotted:
    __slots__ = ("x",)


class _Reducing:
    def __reduce__(self) -> tuple:
        return (_Reducing, ())


def test_plain_objects_round_trip_as_torch_and_follow_the_safe_globals(tmp_path) -> None:
    # argparse.Namespace and other plain objects (state = __dict__) are saved as torch pickles them.
    path = tmp_path / "args.pt"
    genesis.save({"args": argparse.Namespace(lr=0.1, name="run"), "cfg": _Config(0.5, [genesis.ones(2), 3])}, path)
    loaded = genesis.load(path, weights_only=False)
    assert loaded["args"] == argparse.Namespace(lr=0.1, name="run")
    assert type(loaded["cfg"]) is _Config and loaded["cfg"].lr == 0.5 and loaded["cfg"].layers[0].tolist() == [1, 1]
    with pytest.raises(pickle.UnpicklingError, match="argparse:Namespace"):
        genesis.load(path)
    with genesis.serialization.safe_globals([argparse.Namespace, _Config]):
        assert genesis.load(path)["args"] == argparse.Namespace(lr=0.1, name="run")
    # A torch file: refused by a weights-only load in both, read in both once the class is marked safe.
    buffer = io.BytesIO()
    torch.save({"args": argparse.Namespace(lr=0.2)}, buffer)
    for lib in (genesis, torch):
        buffer.seek(0)
        with pytest.raises(pickle.UnpicklingError):
            lib.load(buffer)
        with lib.serialization.safe_globals([argparse.Namespace]):
            buffer.seek(0)
            assert lib.load(buffer)["args"] == argparse.Namespace(lr=0.2)
        assert argparse.Namespace not in lib.serialization.get_safe_globals()
    # marked under the name the file uses, until cleared (torch keeps entries of its own there too)
    genesis.serialization.add_safe_globals([(argparse.Namespace, "argparse.Namespace")])
    assert genesis.serialization.get_safe_globals() == [(argparse.Namespace, "argparse.Namespace")]
    buffer.seek(0)
    assert genesis.load(buffer)["args"] == argparse.Namespace(lr=0.2)
    genesis.serialization.clear_safe_globals()
    assert genesis.serialization.get_safe_globals() == []
    buffer.seek(0)
    with pytest.raises(CheckpointError, match="'argparse.Namespace'"):
        genesis.load(buffer)
    # Objects that pickle otherwise (slots, their own __reduce__) are refused by name, as before.
    for bad in (_Slotted(), _Reducing()):
        with pytest.raises(TypeError, match=f"object of type {type(bad).__name__}"):
            genesis.save({"x": bad}, tmp_path / "bad.pt")


def test_plain_python_values_round_trip_as_torch(tmp_path) -> None:
    def values(lib) -> dict:
        return {"c": 1 - 2.5j, "b": b"\x00xy", "size": lib.Size([2, 3]), "s": {3, 1, (2, "x")},
                "big": 2 ** 70, "neg": -0.0, "inf": float("inf")}

    genesis.save(values(genesis), tmp_path / "v.pt")
    torch.save(values(torch), tmp_path / "v.torch")
    got, want = genesis.load(tmp_path / "v.pt"), torch.load(tmp_path / "v.torch")
    assert {k: type(v).__name__ for k, v in got.items()} == {k: type(v).__name__ for k, v in want.items()}
    assert got.pop("s") == want.pop("s")  # a set's printed order depends on string hashing
    assert repr(got) == repr(want).replace("torch.", "genesis.")


def test_file_objects(tmp_path) -> None:
    buffer = io.BytesIO()
    genesis.save({"x": genesis.arange(3), "n": 7}, buffer)
    buffer.seek(0)
    loaded = genesis.load(buffer)
    assert loaded["n"] == 7 and loaded["x"].tolist() == [0, 1, 2]


def test_torch_keywords_of_save_and_load(tmp_path) -> None:
    """torch's pickle options are accepted and ignored (the file is safetensors either way); ``mmap`` is accepted
    and ignored, and as in torch needs a path."""
    path = tmp_path / "k.pt"
    genesis.save({"x": genesis.arange(3)}, path, _use_new_zipfile_serialization=False, pickle_protocol=4)
    for mmap in (True, False, None):
        assert genesis.load(path, mmap=mmap)["x"].tolist() == [0, 1, 2]
    buffer = io.BytesIO()
    genesis.save({"x": genesis.arange(3)}, buffer, pickle_protocol=2)
    buffer.seek(0)
    assert genesis.load(buffer, mmap=False)["x"].tolist() == [0, 1, 2]
    for lib in (torch, genesis):
        buffer = io.BytesIO()
        lib.save({"x": lib.arange(3)}, buffer)
        buffer.seek(0)
        with pytest.raises(ValueError, match="file path"):
            lib.load(buffer, mmap=True)
    torch_file = tmp_path / "torch.pt"
    torch.save({"x": torch.arange(3)}, torch_file)
    assert genesis.load(torch_file, mmap=True)["x"].tolist() == [0, 1, 2]


def test_map_location(tmp_path) -> None:
    path = tmp_path / "m.safetensors"
    genesis.save({"x": genesis.ones(2, device=DEVICE)}, path)
    assert genesis.load(path, map_location="cpu")["x"].device == genesis.device("cpu")
    saved_on = str(genesis.device(DEVICE))  # a location string as saved: "cpu" or "cuda:0"
    assert genesis.load(path, map_location={saved_on: "cpu"})["x"].device == genesis.device("cpu")
    # torch's callable form: (storage, location) -> the storage where it should go, or None for the default
    locations = []
    loaded = genesis.load(path, map_location=lambda storage, loc: locations.append(loc) or storage)
    assert loaded["x"].device == genesis.device("cpu") and locations == [saved_on]
    assert genesis.load(path, map_location=lambda storage, loc: None)["x"].device == genesis.device(DEVICE)
    if not genesis.cuda.is_available():
        with pytest.raises(RuntimeError, match="CUDA is not available"):
            genesis.load(path, map_location="cuda")


def test_ordered_dicts_load_as_ordered_dicts(tmp_path) -> None:
    # As torch.load: a saved state_dict() (an OrderedDict) comes back as one, nested or not; plain dicts stay dicts.
    path = tmp_path / "sd.safetensors"
    state = genesis.nn.Linear(2, 3).state_dict()
    genesis.save({"model": state, "meta": {"epoch": 1}}, path)
    loaded = genesis.load(path)
    assert type(loaded["model"]) is OrderedDict and list(loaded["model"]) == ["weight", "bias"]
    assert type(loaded["meta"]) is dict
    genesis.save(state, path)
    assert type(genesis.load(path)) is OrderedDict and sorted(safetensors.numpy.load_file(str(path))) == ["bias",
                                                                                                         "weight"]
    # A state_dict()'s `_metadata` (the module versions its loading reads) survives, as in torch's pickle.
    model = genesis.nn.Sequential(genesis.nn.Linear(2, 3), genesis.nn.BatchNorm1d(3))
    genesis.save({"model": model.state_dict()}, path)
    loaded = genesis.load(path)["model"]
    assert loaded._metadata == model.state_dict()._metadata and loaded._metadata["1"] == {"version": 2}
    torch_state = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.BatchNorm1d(3)).state_dict()
    assert loaded._metadata == torch_state._metadata


def test_numpy_arrays_and_scalars_round_trip(tmp_path) -> None:
    """As torch.save, numpy data can be saved beside tensors; it loads as numpy, dtype, shape and bits kept."""
    obj = {"a": np.arange(6.0).reshape(2, 3), "b": np.float32(2.5), "c": [np.int64(3), genesis.ones(2)],
           "empty": np.zeros((0, 3), np.int8), "zero_dim": np.array(7), "strided": np.arange(10)[::3],
           "z": np.array([1 + 2j, 3 - 1j], np.complex128), "zs": np.complex64(1 - 1j)}
    genesis.save(obj, tmp_path / "np.pt")
    loaded = genesis.load(tmp_path / "np.pt")
    for key in ("a", "empty", "zero_dim", "strided", "z"):
        assert isinstance(loaded[key], np.ndarray) and loaded[key].dtype == obj[key].dtype
        np.testing.assert_array_equal(loaded[key], obj[key])
    for key in ("b", "zs"):
        assert type(loaded[key]) is type(obj[key]) and loaded[key] == obj[key]
    assert type(loaded["c"][0]) is np.int64 and loaded["c"][0] == 3
    with pytest.raises(TypeError, match="cannot store an array of dtype <U1 at 'text'"):
        genesis.save({"text": np.array(["a"])}, tmp_path / "bad.pt")



def test_numpy_random_state_and_unsigned_arrays_round_trip(tmp_path) -> None:
    """Training checkpoints carry ``np.random.get_state()`` (a uint32 key array); unsigned arrays of every width
    load back as saved, to a file and to a file object."""
    np.random.seed(7)
    obj = {"np_rng": np.random.get_state(), "u16": np.arange(4, dtype=np.uint16),
           "u64": np.uint64(2**63 + 5), "u32": np.array([0, 2**32 - 1], np.uint32)}
    expected = np.random.rand(3)
    buffer = io.BytesIO()
    genesis.save(obj, buffer)
    buffer.seek(0)
    genesis.save(obj, tmp_path / "rng.pt")
    for loaded in (genesis.load(buffer, weights_only=False), genesis.load(tmp_path / "rng.pt", weights_only=False)):
        assert loaded["np_rng"][0] == "MT19937" and loaded["np_rng"][1].dtype == np.uint32
        np.random.set_state(loaded["np_rng"])
        np.testing.assert_array_equal(np.random.rand(3), expected)
        for key in ("u16", "u32"):
            assert loaded[key].dtype == obj[key].dtype
            np.testing.assert_array_equal(loaded[key], obj[key])
        assert type(loaded["u64"]) is np.uint64 and loaded["u64"] == obj["u64"]

def test_unsupported_object_raises_and_keeps_the_old_file(tmp_path) -> None:
    path = tmp_path / "keep.safetensors"
    genesis.save({"x": genesis.ones(2)}, path)
    before = path.read_bytes()
    with pytest.raises(TypeError, match="object at 'bad.1'"):
        genesis.save({"x": genesis.zeros(2), "bad": [1, object()]}, path)
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["keep.safetensors"]


def test_truncated_file_raises_naming_the_file(tmp_path) -> None:
    path = tmp_path / "trunc.safetensors"
    genesis.save({"x": genesis.randn(100), "step": 1}, path)
    data = path.read_bytes()
    for cut in (4, 20, len(data) - 10):
        path.write_bytes(data[:cut])
        with pytest.raises(CheckpointError, match="trunc.safetensors"):
            genesis.load(path)


def test_corrupt_bytes_fail_the_checksum(tmp_path) -> None:
    path = tmp_path / "flip.safetensors"
    genesis.save({"x": genesis.randn(100)}, path)
    data = bytearray(path.read_bytes())
    data[-5] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match="checksum mismatch in tensor 'x'"):
        genesis.load(path)
    path.write_bytes(b"\x00" * 64)
    with pytest.raises(CheckpointError, match="flip.safetensors"):
        genesis.load(path)
    with pytest.raises(FileNotFoundError):
        genesis.load(tmp_path / "missing.safetensors")


def test_sharded_index_loads(tmp_path) -> None:
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.ones(4, dtype=np.float32)
    c = np.full((2,), 7, dtype=np.int64)
    safetensors.numpy.save_file({"model.a": a, "model.b": b}, str(tmp_path / "model-00001-of-00002.safetensors"))
    safetensors.numpy.save_file({"lm_head.c": c}, str(tmp_path / "model-00002-of-00002.safetensors"))
    index = {"metadata": {"total_size": 48}, "weight_map": {"model.a": "model-00001-of-00002.safetensors",
                                                            "model.b": "model-00001-of-00002.safetensors",
                                                            "lm_head.c": "model-00002-of-00002.safetensors"}}
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(index))
    loaded = genesis.load(tmp_path / "model.safetensors.index.json")
    assert sorted(loaded) == ["lm_head.c", "model.a", "model.b"]
    np.testing.assert_array_equal(loaded["model.a"].cpu().numpy(), a)
    assert loaded["lm_head.c"].dtype is genesis.int64
    index["weight_map"]["model.d"] = "model-00002-of-00002.safetensors"
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(index))
    with pytest.raises(CheckpointError, match="lacks tensors \\['model.d'\\]"):
        genesis.load(tmp_path / "model.safetensors.index.json")


def test_optimizer_state_survives_save_and_load(tmp_path) -> None:
    w = genesis.randn(3, 3, dtype=genesis.float64, requires_grad=True)
    opt = optim.Adam([{"params": [w], "lr": 0.01}], betas=(0.8, 0.9), amsgrad=True)
    for _ in range(3):
        opt.zero_grad()
        (w**2).sum().backward()
        opt.step()
    path = tmp_path / "opt.safetensors"
    genesis.save(opt.state_dict(), path)
    loaded = genesis.load(path)
    assert loaded["param_groups"][0]["betas"] == (0.8, 0.9)
    assert set(loaded["state"][0]) == {"step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"}
    assert _bits(loaded["state"][0]["exp_avg"]) == _bits(opt.state[w]["exp_avg"])


# ------------------------------------------------------------------ training checkpoints


def _training_setup() -> tuple:
    genesis.manual_seed(0)
    model = genesis.nn.Sequential(genesis.nn.Linear(4, 8), genesis.nn.ReLU(), genesis.nn.Dropout(0.3),
                                  genesis.nn.Linear(8, 3))
    opt = optim.AdamW(model.parameters(), lr=0.01, amsgrad=True)
    sched = optim.lr_scheduler.OneCycleLR(opt, max_lr=0.05, total_steps=20)
    scaler = genesis.amp.GradScaler("cpu", init_scale=64.0, growth_interval=2)
    return model, opt, sched, scaler


def _train(model, opt, sched, scaler, steps: range) -> None:
    x_all = genesis.linspace(-1, 1, 64).reshape(16, 4)
    y_all = genesis.arange(16) % 3
    for _ in steps:
        idx = genesis.randint(0, 16, (6,))  # batches drawn from the global RNG: resuming must restore it
        loss = genesis.nn.functional.cross_entropy(model(x_all[idx]), y_all[idx])
        opt.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        sched.step()


def test_resumed_run_equals_uninterrupted_run_bitwise(tmp_path) -> None:
    model, opt, sched, scaler = _training_setup()
    _train(model, opt, sched, scaler, range(20))
    straight = {k: _bits(v) for k, v in model.state_dict().items()}

    model, opt, sched, scaler = _training_setup()
    _train(model, opt, sched, scaler, range(8))
    path = tmp_path / "ckpt.safetensors"
    genesis.save_checkpoint(path, model=model, optimizer=opt, scheduler=sched, scaler=scaler, step=8, note="hi")
    genesis.manual_seed(123)  # the resumed process starts from another state

    model, opt, sched, scaler = _training_setup()
    genesis.manual_seed(999)
    state = genesis.load_checkpoint(path, model=model, optimizer=opt, scheduler=sched, scaler=scaler)
    assert state["step"] == 8 and state["extra"] == {"note": "hi"}
    _train(model, opt, sched, scaler, range(state["step"], 20))
    resumed = {k: _bits(v) for k, v in model.state_dict().items()}
    assert resumed == straight


def test_failed_checkpoint_load_changes_nothing(tmp_path) -> None:
    model, opt, sched, scaler = _training_setup()
    _train(model, opt, sched, scaler, range(3))
    path = tmp_path / "ckpt.safetensors"
    genesis.save_checkpoint(path, model=model, optimizer=opt, step=3)
    _train(model, opt, sched, scaler, range(2))
    before = ({k: _bits(v) for k, v in model.state_dict().items()}, opt.state_dict()["param_groups"][0]["lr"],
              genesis.get_rng_state().tolist())
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError, match="ckpt.safetensors"):
        genesis.load_checkpoint(path, model=model, optimizer=opt)
    path.write_bytes(data)
    other_opt = optim.SGD(list(model.parameters())[:2], lr=0.1)  # a different optimizer: restoring it fails
    with pytest.raises(ValueError):
        genesis.load_checkpoint(path, model=model, optimizer=other_opt)
    after = ({k: _bits(v) for k, v in model.state_dict().items()}, opt.state_dict()["param_groups"][0]["lr"],
             genesis.get_rng_state().tolist())
    assert after == before
    with pytest.raises(KeyError, match="scheduler"):
        genesis.load_checkpoint(path, model=model, scheduler=sched)


def test_safetensors_io_writes_atomically_and_reads_metadata(tmp_path) -> None:
    arrays = {"w": np.arange(6, dtype=np.float32).reshape(2, 3)}
    path = tmp_path / "w.safetensors"
    write_file(arrays, path, {"format": "pt"})
    assert os.listdir(tmp_path) == ["w.safetensors"]  # no temporary file left behind
    assert read_metadata(path) == read_metadata(path.read_bytes()) == {"format": "pt"}
    np.testing.assert_array_equal(safetensors.numpy.load_file(str(path))["w"], arrays["w"])
    with pytest.raises(ValueError, match="<bytes>: not a safetensors file"):
        read_metadata(b"\x01")


def test_safetensors_io_reads_sharded_index(tmp_path) -> None:
    write_file({"a": np.ones(2, dtype=np.float32)}, tmp_path / "s1.safetensors")
    index = tmp_path / "model.safetensors.index.json"
    index.write_text(json.dumps({"weight_map": {"a": "s1.safetensors", "b": "s1.safetensors"}}))
    assert read_weight_map(index) == {"a": tmp_path / "s1.safetensors", "b": tmp_path / "s1.safetensors"}
    index.write_text(json.dumps({"weight_map": {"a": "s2.safetensors"}}))
    with pytest.raises(FileNotFoundError, match="s2.safetensors"):
        read_weight_map(index)
    index.write_text(json.dumps({"shards": []}))
    with pytest.raises(ValueError, match="corrupt checkpoint index"):
        read_weight_map(index)
    with pytest.raises(CheckpointError, match="corrupt checkpoint index"):
        genesis.load(index)


class _TiedLM(genesis.nn.Module):
    """A word-language-model shape: tied embedding and decoder, an LSTM, dropout, plain attributes and an
    activation function kept as an attribute."""

    def __init__(self) -> None:
        super().__init__()
        self.encoder = genesis.nn.Embedding(12, 6)
        self.rnn = genesis.nn.LSTM(6, 6, 2)
        self.decoder = genesis.nn.Linear(6, 12)
        self.decoder.weight = self.encoder.weight
        self.drop = genesis.nn.Dropout(0.2)
        self.act = genesis.nn.functional.relu
        self.rnn_type, self.sizes = "LSTM", (6, 2)
        self.register_buffer("scale", genesis.ones(1), persistent=False)

    def forward(self, x):
        out, _ = self.rnn(self.drop(self.encoder(x)))
        return self.decoder(self.act(out)) * self.scale


def test_whole_module_round_trip(tmp_path):
    genesis.manual_seed(0)
    model = _TiedLM().eval()
    x = genesis.randint(0, 12, (5, 3))
    path = tmp_path / "model.pt"
    with open(path, "wb") as f:
        genesis.save(model, f)
    with open(path, "rb") as f:
        loaded = genesis.load(f, weights_only=False)
    assert type(loaded) is _TiedLM and not loaded.training
    assert loaded.decoder.weight is loaded.encoder.weight and isinstance(loaded.encoder.weight, genesis.nn.Parameter)
    assert loaded.rnn_type == "LSTM" and loaded.sizes == (6, 2) and loaded.act is genesis.nn.functional.relu
    assert list(loaded.state_dict()) == list(model.state_dict())
    assert torch.equal(to_torch(loaded(x)), to_torch(model(x)))
    loaded.train()
    loaded(x).sum().backward()
    assert loaded.encoder.weight.grad is not None
    # a module inside a container, as a checkpoint dict holds it
    genesis.save({"model": model, "epoch": 3}, tmp_path / "ck.pt")
    ck = genesis.load(tmp_path / "ck.pt", weights_only=False)
    assert ck["epoch"] == 3 and torch.equal(to_torch(ck["model"](x)), to_torch(model(x)))


def test_whole_module_needs_weights_only_false_and_importable_names(tmp_path):
    genesis.save(genesis.nn.Linear(2, 2), tmp_path / "lin.pt")
    with pytest.raises(CheckpointError, match="weights_only=False"):
        genesis.load(tmp_path / "lin.pt")  # the default, as torch's since 2.6
    assert isinstance(genesis.load(tmp_path / "lin.pt", weights_only=False), genesis.nn.Linear)
    model = genesis.nn.Linear(2, 2)
    model.act = lambda t: t * 2  # a lambda cannot be found again by name
    with pytest.raises(TypeError, match="only classes and functions that an import finds by name"):
        genesis.save(model, tmp_path / "bad.pt")


def _double_output(module, args, output):
    """A forward hook kept in a saved module's hook table."""
    return output * 2


def test_whole_module_keeps_shared_submodules_and_named_hooks(tmp_path):
    shared = genesis.nn.Linear(3, 3)
    model = genesis.nn.Sequential(shared, genesis.nn.ReLU(), shared)
    model[1].register_forward_hook(_double_output)
    genesis.nn.utils.spectral_norm(model[0])  # one SpectralNorm object in three hook tables
    genesis.save({"model": model, "again": model[2]}, tmp_path / "m.pt")
    ck = genesis.load(tmp_path / "m.pt", weights_only=False)
    loaded = ck["model"]
    assert loaded[0] is loaded[2] and ck["again"] is loaded[0]  # one module, as pickle keeps it
    assert list(loaded[1]._forward_hooks.values()) == [_double_output]
    hooks = [*loaded[0]._forward_pre_hooks.values(), *loaded[0]._state_dict_hooks.values()]
    assert hooks[1].fn is hooks[0]
    model.eval()
    loaded.eval()
    x = genesis.ones(2, 3)
    assert torch.equal(to_torch(loaded(x)), to_torch(model(x)))
    assert loaded.state_dict()._metadata == model.state_dict()._metadata
