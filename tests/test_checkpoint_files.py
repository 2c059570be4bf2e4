"""Checkpoint files stay whole and loadable: atomic writes (a kill mid-save keeps the old directory loadable),
file modes from the umask, stale temporary files cleaned, and a header whose byte ranges overlap refused."""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import struct
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
import safetensors

import genesis
from genesis.models.qwen import Qwen2Config, Qwen2ForCausalLM
from genesis.safetensors_io import read_header, write_file
from genesis.serialization import CheckpointError

ROOT = Path(__file__).resolve().parents[1]


def _raw_safetensors(entries: dict, data: bytes) -> bytes:
    header = json.dumps(entries).encode()
    return struct.pack("<Q", len(header)) + header + data


@pytest.mark.parametrize("offsets, match", [
    ([[0, 16], [8, 24]], "overlaps"), ([[0, 16], [0, 16]], "overlaps"),
    ([[0, 16], [20, 36]], "gap"), ([[0, 16], [16, 32]], None)])
def test_overlapping_or_gapped_offsets_are_refused(tmp_path, offsets, match) -> None:
    entries = {name: {"dtype": "F32", "shape": [4], "data_offsets": o} for name, o in zip("ab", offsets)}
    path = tmp_path / "x.safetensors"
    path.write_bytes(_raw_safetensors(entries, bytes(max(e for _, e in offsets))))
    if match is None:
        assert sorted(genesis.load(path)) == ["a", "b"]
        return
    with pytest.raises(ValueError, match=f"x.safetensors.*{match}"):
        read_header(path)
    with pytest.raises(CheckpointError, match=match):
        genesis.load(path)
    with pytest.raises(CheckpointError, match=match), open(path, "rb") as f:
        genesis.load(f)


@pytest.mark.parametrize("entry", [{"dtype": "F32", "shape": [4], "data_offsets": [0, 12]},
                                   {"dtype": "F32", "shape": [-4], "data_offsets": [0, 16]},
                                   {"dtype": "F32", "shape": [4], "data_offsets": [0, 16.0]}])
def test_sizes_must_match_shape_and_dtype(tmp_path, entry) -> None:
    path = tmp_path / "x.safetensors"
    path.write_bytes(_raw_safetensors({"a": entry}, bytes(16)))
    with pytest.raises(CheckpointError):
        genesis.load(path)


def test_trailing_bytes_and_bad_metadata_are_refused(tmp_path) -> None:
    path = tmp_path / "x.safetensors"
    path.write_bytes(_raw_safetensors({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}, bytes(8)))
    with pytest.raises(CheckpointError, match="after the last tensor"):
        genesis.load(path)
    path.write_bytes(_raw_safetensors({"__metadata__": "x"}, b""))
    with pytest.raises(CheckpointError, match="__metadata__"):
        genesis.load(path)


def test_reserved_key_refused_before_writing(tmp_path) -> None:
    path = tmp_path / "good.safetensors"
    genesis.save({"w": genesis.ones(2)}, path)
    before = path.read_bytes()
    with pytest.raises(ValueError, match="'__metadata__' is reserved"):
        genesis.save({"__metadata__": genesis.ones(2), "w": genesis.zeros(2)}, path)
    with pytest.raises(ValueError, match="'__metadata__' is reserved"):
        genesis.save({"__metadata__": genesis.ones(2)}, io.BytesIO())
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["good.safetensors"]


def test_bfloat16_through_a_file_object() -> None:
    t = genesis.randn(3, 2).to(genesis.bfloat16)
    buffer = io.BytesIO()
    genesis.save({"t": t, "n": 3}, buffer)
    buffer.seek(0)
    back = genesis.load(buffer)
    assert back["n"] == 3 and back["t"].dtype is genesis.bfloat16
    assert np.array_equal(back["t"].float().numpy(), t.float().numpy())


def test_file_mode_follows_the_umask(tmp_path) -> None:
    old = os.umask(0o022)
    try:
        genesis.save({"w": genesis.ones(2)}, tmp_path / "a.safetensors")
        _tiny_model().save_pretrained(tmp_path / "m")
    finally:
        os.umask(old)
    for path in [tmp_path / "a.safetensors", *(tmp_path / "m").iterdir()]:
        assert path.stat().st_mode & 0o777 == 0o644, path


def test_temporaries_removed_on_failure_and_stale_ones_on_the_next_save(tmp_path) -> None:
    path = tmp_path / "w.safetensors"
    with pytest.raises(safetensors.SafetensorError, match="Unknown dtype"):
        write_file({"a": np.array([object()])}, path)
    assert os.listdir(tmp_path) == []
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    stale = tmp_path / f"w.safetensors.{int(dead.stdout)}.0123abcd.tmp"
    stale.write_bytes(b"half a file")
    mine = tmp_path / f"w.safetensors.{os.getpid()}.0123abcd.tmp"  # a live writer's: kept
    mine.write_bytes(b"")
    genesis.save({"a": genesis.ones(2)}, path)
    assert sorted(os.listdir(tmp_path)) == sorted(["w.safetensors", mine.name])


def _tiny_model(vocab: int = 64, hidden: int = 32, layers: int = 1) -> Qwen2ForCausalLM:
    config = Qwen2Config(vocab_size=vocab, hidden_size=hidden, intermediate_size=2 * hidden, num_hidden_layers=layers,
                         num_attention_heads=4, num_key_value_heads=2, tie_word_embeddings=False)
    return Qwen2ForCausalLM(config)


def test_save_pretrained_switches_layouts_without_losing_weights(tmp_path) -> None:
    model = _tiny_model()
    for shard_size, files in (("5GB", 1), ("10KB", 3), ("5GB", 1)):
        model.save_pretrained(tmp_path, max_shard_size=shard_size)
        names = sorted(p.name for p in tmp_path.iterdir())
        assert len([n for n in names if n.endswith(".safetensors")]) >= files
        assert (files == 1) == ("model.safetensors" in names)
        assert not any(n.endswith(".tmp") for n in names)
        back = Qwen2ForCausalLM.from_pretrained(tmp_path)
        for name, p in model.state_dict().items():
            assert np.array_equal(back.state_dict()[name].numpy(), p.numpy()), name


_SAVER = textwrap.dedent("""
    import os
    import sys
    import torch
    torch.set_num_threads(1)  # OpenMP's pool does not survive fork
    import genesis
    from genesis.models.qwen import Qwen2Config, Qwen2ForCausalLM
    config = Qwen2Config(vocab_size=2048, hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, tie_word_embeddings=False)
    model = Qwen2ForCausalLM(config)  # about 3.5 MB of float32 weights
    # One writer per directory, forked so that the imports are paid once.
    for directory in sys.argv[1:]:
        if os.fork() == 0:
            step = 0
            while True:
                step += 1
                with genesis.no_grad():
                    for p in model.parameters():
                        p.fill_(float(step))
                model.save_pretrained(directory)
                # One write per record: forked writers share the pipe, and a short write is never interleaved.
                os.write(1, f"{directory} {os.getpid()} {step}\\n".encode())
    os.wait()
""")


def test_kill_during_save_keeps_the_directory_loadable(tmp_path) -> None:
    dirs = [str(tmp_path / f"run{i}") for i in range(3)]
    proc = subprocess.Popen([sys.executable, "-c", _SAVER, *dirs], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    writers: dict[str, int] = {}
    try:
        deadline = time.monotonic() + 30
        while len(writers) < len(dirs) and time.monotonic() < deadline:  # each has a complete first save
            directory, pid, _ = proc.stdout.readline().split()
            writers[directory] = int(pid)
        assert len(writers) == len(dirs)
        for pid in writers.values():
            time.sleep(0.03)  # SIGKILL each writer at a different point of a later save
            os.kill(pid, signal.SIGKILL)
    finally:
        for pid in writers.values():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        proc.kill()
        proc.wait(timeout=10)
    for d in map(Path, dirs):
        model = Qwen2ForCausalLM.from_pretrained(d)
        values = {float(p.detach().reshape(-1)[0].item()) for p in model.parameters()}
        assert len(values) == 1 and values.pop() >= 1  # every tensor from the same save
        assert all(p.detach().numpy().min() == p.detach().numpy().max() for p in model.parameters())
        model.save_pretrained(d)  # the next save removes what the killed one left
        assert not any(p.name.endswith(".tmp") for p in d.iterdir())


def test_sharded_save_over_a_sharded_checkpoint_never_overwrites_a_live_shard(tmp_path: Path, monkeypatch) -> None:
    # Replacing a sharded checkpoint writes its shards under names the live index does not use, so a save that dies
    # after its first shard leaves the old index with all of its old shards.
    from genesis.models import checkpoint as ckpt

    def arrays(value: float) -> dict[str, np.ndarray]:
        return {f"w{i}": np.full((64, 64), value + i, np.float32) for i in range(4)}

    def loaded() -> dict[str, np.ndarray]:
        return {k: np.asarray(v) for k, v in ckpt.iter_weights(ckpt.read_index(tmp_path))}

    first = ckpt.save_checkpoint(arrays(1.0), tmp_path, max_shard_size=20_000)
    assert len(first) == 4 and all("-b" not in p.name for p in first)
    written = []

    def dies_after_one(shard, path, metadata=None):
        if written:
            raise OSError("killed")
        written.append(path)
        write_file(shard, path, metadata)

    monkeypatch.setattr(ckpt, "write_file", dies_after_one)
    with pytest.raises(OSError):
        ckpt.save_checkpoint(arrays(2.0), tmp_path, max_shard_size=20_000)
    assert written[0].name.endswith("-b.safetensors")
    assert all(np.array_equal(loaded()[k], v) for k, v in arrays(1.0).items())  # the old checkpoint, intact
    monkeypatch.undo()
    second = ckpt.save_checkpoint(arrays(2.0), tmp_path, max_shard_size=20_000)
    assert all(p.name.endswith("-b.safetensors") for p in second)
    assert all(np.array_equal(loaded()[k], v) for k, v in arrays(2.0).items())
    assert sorted(p.name for p in tmp_path.glob("*.safetensors")) == sorted(p.name for p in second)  # old removed
    third = ckpt.save_checkpoint(arrays(3.0), tmp_path, max_shard_size=20_000)
    assert [p.name for p in third] == [p.name for p in first]  # the names alternate
    assert all(np.array_equal(loaded()[k], v) for k, v in arrays(3.0).items())
