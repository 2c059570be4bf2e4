"""Fuzzed files: safetensors headers (dtypes, shapes, offsets, metadata), Genesis checkpoint structures and
``config.json`` dicts. A damaged or hostile file raises the documented error (``CheckpointError`` for checkpoints,
``ValueError`` naming the file for configs) or loads; Genesis's reader never accepts what the safetensors library
refuses; the process never dies (each case runs in a guarded child process, ``tests/fuzz_runner.py``)."""

from __future__ import annotations

import json
import math
import struct
import tempfile
import zlib
from pathlib import Path

import numpy as np
import pytest
import safetensors.numpy
from hypothesis import given
from hypothesis import strategies as st

import genesis
from genesis.models.qwen import QwenConfig
from genesis.serialization import CheckpointError
from tests.fuzz_runner import SETTINGS, Guard


@pytest.fixture(scope="module")
def guard():
    g = Guard()
    yield g
    g.close()


HUGE = [2**31, 2**40, 2**63 - 1, 2**64]
ints = st.integers(-2, 40) | st.sampled_from(HUGE)
DTYPES = ["F32", "F16", "BF16", "F64", "I64", "I32", "U8", "I8", "BOOL"]

entries = st.fixed_dictionaries(
    {"dtype": st.sampled_from(DTYPES) | st.sampled_from(["X", "f32", 5, None])},
    optional={"shape": st.lists(ints, max_size=3) | st.sampled_from([None, "3", [1.5]]),
              "data_offsets": st.lists(ints, min_size=2, max_size=2) | st.sampled_from([None, [0], [1, 2, 3]])})
metadata = st.none() | st.dictionaries(st.text(max_size=8), st.text(max_size=8) | st.integers(), max_size=3)


def header_case(header: dict, data: bytes, length_delta: int) -> None:
    """Genesis loads exactly what safetensors loads (same arrays) and refuses the rest with CheckpointError."""
    text = json.dumps(header).encode()
    raw = struct.pack("<Q", max(0, len(text) + length_delta)) + text + data
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "x.safetensors"
        path.write_bytes(raw)
        try:
            expected = safetensors.numpy.load_file(str(path))
        except Exception:  # any refusal of the reference reader (or numpy, for bfloat16)
            expected = None
        try:
            got = genesis.load(path)
        except CheckpointError:
            assert expected is None or not expected, f"Genesis refused a file safetensors reads: {header}"
            return
        assert expected is not None or any(e.get("dtype") == "BF16" for e in header.values()
                                           if isinstance(e, dict)), f"Genesis read a file safetensors refuses: {header}"
        if expected is not None:
            assert sorted(got) == sorted(expected)
            for key, array in expected.items():
                np.testing.assert_array_equal(got[key].numpy(), array)


@SETTINGS
@given(header=st.dictionaries(st.text(min_size=1, max_size=4), entries, max_size=3), meta=metadata,
       data=st.binary(max_size=48), length_delta=st.sampled_from([0, 0, 0, -1, 1, 10**6]))
def test_fuzzed_safetensors_headers(guard, header, meta, data, length_delta):
    if meta is not None:
        header = {**header, "__metadata__": meta}
    guard.run(header_case, header, data, length_delta)


MARKERS = ["__tensor__", "__tuple__", "__dict__", "__dtype__", "__device__", "device", "requires_grad"]
json_leaves = (st.none() | st.booleans() | st.integers(-3, 3) | st.floats(allow_nan=False) |
               st.sampled_from(["w", "i", "float32", "cpu", "cuda:0", "tpu", "cuda:x", "int64"]))
structures = st.recursive(json_leaves, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
    st.sampled_from(MARKERS) | st.text(max_size=3), inner, max_size=3), max_leaves=12)


def structure_case(structure: object) -> None:
    """A Genesis checkpoint holding tensors ``w`` and ``i`` under a fuzzed structure: it loads or raises
    CheckpointError (or, for a tensor saved on a CUDA device this machine lacks, torch's RuntimeError that names
    ``map_location``)."""
    arrays = {"w": np.arange(4, dtype=np.float32), "i": np.arange(3, dtype=np.int64)}
    sums = {k: format(zlib.crc32(a.view(np.uint8)), "08x") for k, a in arrays.items()}
    metadata = {"genesis.format": "1", "genesis.structure": json.dumps(structure),
                "genesis.crc32": json.dumps(sums)}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "x.safetensors"
        safetensors.numpy.save_file(arrays, str(path), metadata=metadata)
        try:
            genesis.load(path)
        except CheckpointError:
            pass
        except RuntimeError as err:
            assert "map_location" in str(err), err


@SETTINGS
@given(structure=structures)
def test_fuzzed_checkpoint_structures(guard, structure):
    guard.run(structure_case, structure)


CONFIG_KEYS = ["model_type", "vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
               "num_attention_heads", "num_key_value_heads", "head_dim", "max_position_embeddings", "rope_theta",
               "rms_norm_eps", "tie_word_embeddings", "attention_bias", "eos_token_id", "hidden_act", "rope_scaling",
               "rope_parameters", "use_sliding_window", "layer_types"]
config_values = (st.none() | st.booleans() | st.integers(-4, 64) | st.sampled_from(HUGE) |
                 st.sampled_from([math.nan, math.inf, 1e-6, 0.5, "8", "false", "qwen2", "qwen3", "silu", "linear"]) |
                 st.lists(st.integers(-1, 3) | st.text(max_size=3), max_size=2) |
                 st.dictionaries(st.sampled_from(["type", "rope_type", "rope_theta", "factor"]),
                                 st.sampled_from(["default", "linear", 10000.0, "1e4", None]), max_size=2))


def config_case(overrides: dict) -> None:
    """A small valid config.json with fuzzed fields: it loads, or raises ValueError naming the file."""
    base = {"model_type": "qwen2", "vocab_size": 32, "hidden_size": 16, "intermediate_size": 32,
            "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 1}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "config.json"
        path.write_text(json.dumps({**base, **overrides}))
        try:
            config = QwenConfig.from_json_file(path)
        except ValueError as err:
            assert str(path) in str(err) or "QwenConfig" in str(err), err
            return
        assert config.head_dim > 0 and config.num_attention_heads % config.num_key_value_heads == 0


@SETTINGS
@given(overrides=st.dictionaries(st.sampled_from(CONFIG_KEYS), config_values, max_size=4))
def test_fuzzed_config_dicts(guard, overrides):
    guard.run(config_case, overrides)
