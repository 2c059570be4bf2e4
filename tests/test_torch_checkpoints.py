"""Reading files written by torch.save: tensors of every dtype, views and shared storages, nested containers, the
zip and legacy formats, file objects, map_location, pytorch_model.bin checkpoints (sharded too) in
from_pretrained; pickles asking for more than tensors and containers raise CheckpointError and run nothing."""

from __future__ import annotations

import collections
import io
import json
import os
import pickle
import shutil
import zipfile

import pytest
import torch

import genesis
from genesis.serialization import CheckpointError
from tests.helpers import DEVICE, TORCH_DTYPE, assert_same


def _tree_same(g: object, t: object) -> None:
    assert type(g) is type(t) or (isinstance(t, torch.Tensor) and isinstance(g, genesis.Tensor)), (g, t)
    if isinstance(t, torch.Tensor):
        assert_same(g, t.detach())
        assert g.requires_grad == t.requires_grad
    elif isinstance(t, dict):
        assert list(g) == list(t)
        for key in t:
            _tree_same(g[key], t[key])
    elif isinstance(t, (list, tuple)):
        assert len(g) == len(t)
        for a, b in zip(g, t):
            _tree_same(a, b)
    else:
        assert g == t


@pytest.mark.parametrize("dtype", sorted(TORCH_DTYPE.values(), key=str), ids=str)
@pytest.mark.parametrize("legacy", [False, True], ids=["zip", "legacy"])
def test_tensors_of_every_dtype(tmp_path, dtype: torch.dtype, legacy: bool) -> None:
    t = (torch.randn(3, 4) * 10).to(dtype)
    path = tmp_path / "t.pt"
    torch.save({"t": t, "scalar": t[0, 0].clone(), "empty": t[:0]}, path, _use_new_zipfile_serialization=not legacy)
    _tree_same(genesis.load(path, map_location=DEVICE), {"t": t, "scalar": t[0, 0].clone(), "empty": t[:0]})


@pytest.mark.parametrize("legacy", [False, True], ids=["zip", "legacy"])
def test_nested_containers_and_parameters(tmp_path, legacy: bool) -> None:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.LayerNorm(4))
    obj = {"model": model.state_dict(), "list": [torch.arange(5), (1.5, "text", None, True)],
           "param": torch.nn.Parameter(torch.randn(2)), "nested": {"deep": [{"x": torch.ones(2, 2)}]},
           "bytes": b"\x00\xff", "set": {1, 2}, "step": 7}
    path = tmp_path / "obj.pt"
    torch.save(obj, path, _use_new_zipfile_serialization=not legacy)
    loaded = genesis.load(path, map_location=DEVICE)
    assert isinstance(loaded["model"], collections.OrderedDict)
    _tree_same(loaded, obj)
    net = genesis.nn.Sequential(genesis.nn.Linear(3, 4), genesis.nn.LayerNorm(4))
    net.load_state_dict(loaded["model"])
    assert_same(net[0].weight, model[0].weight.detach())


def test_views_and_shared_storages_share_memory_again(tmp_path) -> None:
    base = torch.arange(24.0).reshape(4, 6)
    obj = {"base": base, "col": base[:, 2], "window": base[1:3, 1:5], "t": base.t(), "tied": base}
    path = tmp_path / "views.pt"
    torch.save(obj, path)
    loaded = genesis.load(path, map_location=DEVICE)
    _tree_same(loaded, obj)
    loaded["base"].add_(100)
    assert_same(loaded["col"], base[:, 2] + 100)
    assert_same(loaded["window"], base[1:3, 1:5] + 100)
    assert_same(loaded["t"], base.t() + 100)
    assert loaded["tied"] is not loaded["base"] and genesis.equal(loaded["tied"], loaded["base"])


def test_file_objects_and_map_location(tmp_path) -> None:
    buf = io.BytesIO()
    torch.save([torch.ones(2), torch.zeros(1, dtype=torch.int64)], buf)
    buf.seek(0)
    loaded = genesis.load(buf, map_location={"cpu": DEVICE})
    _tree_same(loaded, [torch.ones(2), torch.zeros(1, dtype=torch.int64)])
    assert loaded[0].device.type == DEVICE


class _Shell:
    """Unpickling this would run a shell command (writes a marker file)."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple:
        return (os.system, (f"touch {self.marker}",))


def test_malicious_pickle_raises_and_runs_nothing(tmp_path) -> None:
    marker = tmp_path / "pwned"
    path = tmp_path / "evil.pt"
    torch.save({"weight": torch.ones(2), "payload": _Shell(str(marker))}, path)
    with pytest.raises(CheckpointError, match=r"asks for the global '(posix|os|nt)\.system'"):
        genesis.load(path)
    assert not marker.exists()
    legacy = tmp_path / "evil_legacy.pt"
    torch.save([_Shell(str(marker))], legacy, _use_new_zipfile_serialization=False)
    with pytest.raises(CheckpointError, match=r"\.system'"):
        genesis.load(legacy)
    assert not marker.exists()


def test_handcrafted_global_reduce_pickle(tmp_path) -> None:
    """A zip whose data.pkl is GLOBAL os.system + REDUCE, written by hand (protocol 0 opcodes)."""
    path = tmp_path / "hand.pt"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("hand/data.pkl", b"cos\nsystem\n(S'touch " + str(tmp_path / "x").encode() + b"'\ntR.")
    with pytest.raises(CheckpointError, match="'os.system'"):
        genesis.load(path)
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize("program", [
    b"ctorch\nFloatStorage\n(S'dtype'\nI1\ndb.",  # BUILD with a dict state on a storage type
    b"ctorch\nFloatStorage\n(N(S'dtype'\nI1\ndtb.",  # BUILD with slot state (setattr)
    b"ctorch._utils\n_rebuild_tensor_v2\n(N(S'__defaults__'\n(I1\ntdtb.",  # setattr on a rebuild function
], ids=["dict_state", "slot_state", "function_defaults"])
def test_pickles_cannot_modify_what_they_are_given(tmp_path, program: bytes) -> None:
    """BUILD opcodes aimed at the objects find_class hands out raise, and the next file reads as before."""
    path = tmp_path / "build.pt"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("build/data.pkl", program)
    with pytest.raises(CheckpointError):
        genesis.load(path)
    good = tmp_path / "good.pt"
    torch.save({"w": torch.arange(3.0)}, good)
    _tree_same(genesis.load(good), {"w": torch.arange(3.0)})


def test_numpy_arrays_load_with_weights_only_false(tmp_path) -> None:
    """As torch's load(weights_only=False): numpy arrays and scalars saved beside tensors come back as numpy data
    (pytorch/examples' time-sequence prediction saves its data so); classes and functions are still refused."""
    import numpy as np

    path = tmp_path / "arrays.pt"
    saved = {"x": np.sin(np.arange(6.0)).reshape(2, 3), "i": np.arange(4, dtype=np.int32), "s": np.float32(2.5),
             "t": torch.arange(3.0), "words": np.array(["a", "bc"], dtype=object)}
    torch.save(saved, path)
    with pytest.raises(CheckpointError, match="multiarray._reconstruct'"):
        genesis.load(path)
    loaded = genesis.load(path, weights_only=False)
    for key in ("x", "i", "words"):
        assert type(loaded[key]) is np.ndarray and loaded[key].dtype == saved[key].dtype
        np.testing.assert_array_equal(loaded[key], saved[key])
    assert loaded["s"] == np.float32(2.5) and loaded["s"].dtype == np.float32
    assert isinstance(loaded["t"], genesis.Tensor) and loaded["t"].tolist() == [0.0, 1.0, 2.0]
    legacy = tmp_path / "arrays_legacy.pt"
    torch.save(saved["x"], legacy, _use_new_zipfile_serialization=False)
    np.testing.assert_array_equal(genesis.load(legacy, weights_only=False), saved["x"])
    marker = tmp_path / "pwned"
    evil = tmp_path / "evil.pt"
    torch.save({"x": saved["x"], "payload": _Shell(str(marker))}, evil)
    with pytest.raises(CheckpointError, match=r"\.system'"):
        genesis.load(evil, weights_only=False)
    assert not marker.exists()
    for program in (b"cnumpy\nndarray\n(S'x'\nI1\ndb.", b"cnumpy._core.multiarray\n_reconstruct\n(N(S'f'\nI1\ndtb."):
        hand = tmp_path / "build.pt"
        with zipfile.ZipFile(hand, "w") as archive:
            archive.writestr("build/data.pkl", program)
        with pytest.raises(CheckpointError):
            genesis.load(hand, weights_only=False)


def test_namespaces_load_with_weights_only_false(tmp_path) -> None:
    """A checkpoint holding the parsed command line (argparse.Namespace) or a SimpleNamespace loads with
    weights_only=False as those classes, tensors inside them loaded too; weights_only=True refuses them, as torch.
    A pickle setting attributes on the class it is given changes only a class made for that file."""
    import argparse
    import types

    path = tmp_path / "run.pt"
    torch.save({"args": argparse.Namespace(lr=0.1, name="run", sizes=[1, 2], w=torch.arange(3.0)),
                "extra": types.SimpleNamespace(step=7, t=torch.ones(2))}, path)
    with pytest.raises(CheckpointError, match="argparse.Namespace'"):
        genesis.load(path)
    loaded = genesis.load(path, weights_only=False)
    args, extra = loaded["args"], loaded["extra"]
    assert type(args) is argparse.Namespace and type(extra) is types.SimpleNamespace
    assert (args.lr, args.name, args.sizes, extra.step) == (0.1, "run", [1, 2], 7)
    assert isinstance(args.w, genesis.Tensor) and args.w.tolist() == [0.0, 1.0, 2.0]
    assert extra.t.tolist() == [1.0, 1.0]
    before = argparse.Namespace.__repr__
    for program in (b"cargparse\nNamespace\n(N(S'__repr__'\nI1\ndtb.",
                    b"ctypes\nSimpleNamespace\n(N(S'__init__'\nI1\ndtb."):
        hand = tmp_path / "build.pt"
        with zipfile.ZipFile(hand, "w") as archive:
            archive.writestr("build/data.pkl", program)
        genesis.load(hand, weights_only=False)
    assert argparse.Namespace.__repr__ is before and repr(argparse.Namespace(a=1)) == "Namespace(a=1)"
    assert types.SimpleNamespace(a=1).a == 1


def test_whole_modules_and_other_globals_are_refused(tmp_path) -> None:
    path = tmp_path / "module.pt"
    torch.save(torch.nn.Linear(2, 2), path)
    with pytest.raises(CheckpointError, match="torch.nn.modules.linear.Linear"):
        genesis.load(path)
    path = tmp_path / "dtype.pt"
    torch.save({"dtype": torch.float32}, path)
    with pytest.raises(CheckpointError, match="'torch.float32'"):
        genesis.load(path)


def test_corrupt_files_raise_checkpoint_error(tmp_path) -> None:
    path = tmp_path / "ok.pt"
    torch.save({"w": torch.ones(8)}, path)
    with zipfile.ZipFile(path) as archive:
        entries = {name: archive.read(name) for name in archive.namelist()}
    storage = next(name for name in entries if "/data/" in name)
    broken = tmp_path / "short.pt"
    with zipfile.ZipFile(broken, "w") as archive:
        for name, data in entries.items():
            archive.writestr(name, data[:4] if name == storage else data)
    with pytest.raises(CheckpointError, match="storage of 4 bytes where 8 float32 elements"):
        genesis.load(broken)
    truncated = tmp_path / "truncated.pt"
    truncated.write_bytes(path.read_bytes()[:200])
    with pytest.raises(CheckpointError):
        genesis.load(truncated)
    # A tensor whose window reaches past its storage is refused (no out-of-bounds reads).
    pkl = next(name for name in entries if name.endswith("data.pkl"))
    stretched = tmp_path / "stretched.pt"
    with zipfile.ZipFile(stretched, "w") as archive:
        for name, data in entries.items():
            archive.writestr(name, data.replace(b"K\x08\x85", b"K\x09\x85") if name == pkl else data)
    with pytest.raises(CheckpointError, match="reaches past its storage of 8 elements"):
        genesis.load(stretched)


def test_save_optimizer_refused_with_state_dict_hint(tmp_path) -> None:
    # Whole modules can be saved (tests/test_serialization.py); other objects with a state_dict cannot.
    optimizer = genesis.optim.SGD(genesis.nn.Linear(2, 2).parameters(), lr=0.1)
    with pytest.raises(TypeError, match=r"save its state_dict\(\) instead"):
        genesis.save(optimizer, tmp_path / "o.safetensors")
    assert not (tmp_path / "o.safetensors").exists()


def test_sharded_pytorch_index_loads(tmp_path) -> None:
    shards = {"pytorch_model-00001-of-00002.bin": {"a": torch.ones(2)},
              "pytorch_model-00002-of-00002.bin": {"b": torch.arange(3)}}
    weight_map = {}
    for file, state in shards.items():
        torch.save(state, tmp_path / file)
        weight_map.update(dict.fromkeys(state, file))
    index = tmp_path / "pytorch_model.bin.index.json"
    index.write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    _tree_same(genesis.load(index), {"a": torch.ones(2), "b": torch.arange(3)})


transformers = pytest.importorskip("transformers")


@pytest.mark.parametrize("sharded", [False, True], ids=["single", "sharded"])
def test_from_pretrained_reads_pytorch_model_bin(tmp_path, sharded: bool) -> None:
    from genesis.models import AutoModelForCausalLM

    torch.manual_seed(0)
    config = transformers.Qwen2Config(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                                      num_attention_heads=4, num_key_value_heads=2, tie_word_embeddings=True)
    ref = transformers.AutoModelForCausalLM.from_config(config).eval()
    safe = tmp_path / "safe"
    ref.save_pretrained(safe)
    bins = tmp_path / "bin"
    bins.mkdir()
    shutil.copy(safe / "config.json", bins / "config.json")
    state = ref.state_dict()
    if sharded:
        names = list(state)
        weight_map = {}
        for i, part in enumerate((names[: len(names) // 2], names[len(names) // 2:])):
            file = f"pytorch_model-{i + 1:05d}-of-00002.bin"
            torch.save({n: state[n] for n in part}, bins / file)
            weight_map.update(dict.fromkeys(part, file))
        (bins / "pytorch_model.bin.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    else:
        torch.save(state, bins / "pytorch_model.bin")
    from_safe = AutoModelForCausalLM.from_pretrained(safe, device=DEVICE)
    from_bin = AutoModelForCausalLM.from_pretrained(bins, device=DEVICE)
    for (name, a), (_, b) in zip(from_safe.state_dict().items(), from_bin.state_dict().items()):
        assert genesis.equal(a, b), name


def test_from_pretrained_bin_refuses_pickled_code(tmp_path) -> None:
    from genesis.models import AutoModelForCausalLM

    config = transformers.Qwen2Config(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                                      num_attention_heads=4, num_key_value_heads=2)
    (tmp_path / "config.json").write_text(config.to_json_string())
    with open(tmp_path / "pytorch_model.bin", "wb") as f:
        pickle.dump({"w": _Shell(str(tmp_path / "pwned"))}, f)
    with pytest.raises((ValueError, CheckpointError)):
        AutoModelForCausalLM.from_pretrained(tmp_path)
    assert not (tmp_path / "pwned").exists()
