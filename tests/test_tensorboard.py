"""``genesis.utils.tensorboard.SummaryWriter``: the event files are read back with a decoder written here, apart from
the one that wrote them (TFRecord framing with a bit-by-bit CRC-32C, a generic protobuf wire-format parser, PNG
chunks), and every record is checked: the file version first, tags, steps, wall times, values, histogram buckets
against ``np.histogram``, PNG pixels. No ``tensorboard`` or ``protobuf`` package is needed."""

from __future__ import annotations

import glob
import os
import re
import socket
import struct
import subprocess
import sys
import textwrap
import zlib
from collections import defaultdict
from typing import Any

import numpy as np
import pytest

import genesis
from genesis import torch_compat
from genesis.utils.tensorboard import SummaryWriter
from genesis.utils.tensorboard.event_file import crc32c, masked_crc32c, tfrecord, varint
from genesis.utils.tensorboard.summary import default_bins
from tests.helpers import DEVICE

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# ---------------------------------------------------------------------------------------------------------------
# The independent decoder


def _crc32c_bitwise(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def _masked(data: bytes) -> int:
    crc = _crc32c_bitwise(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) % 2**32


def _records(path: str) -> list[bytes]:
    """The TFRecords of a file, with both CRCs of each checked."""
    with open(path, "rb") as f:
        data = f.read()
    records, pos = [], 0
    while pos < len(data):
        header = data[pos:pos + 8]
        (length,) = struct.unpack("<Q", header)
        (header_crc,) = struct.unpack("<I", data[pos + 8:pos + 12])
        body = data[pos + 12:pos + 12 + length]
        (body_crc,) = struct.unpack("<I", data[pos + 12 + length:pos + 16 + length])
        assert header_crc == _masked(header) and body_crc == _masked(body) and len(body) == length
        records.append(body)
        pos += 16 + length
    assert pos == len(data)
    return records


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        byte = data[pos]
        value |= (byte & 0x7F) << shift
        pos, shift = pos + 1, shift + 7
        if not byte & 0x80:
            return value, pos


def _parse(message: bytes) -> dict[int, list[Any]]:
    """A protobuf message as {field number: [values]}: varints as ints, the other wire types as their bytes."""
    fields: dict[int, list[Any]] = defaultdict(list)
    pos = 0
    while pos < len(message):
        key, pos = _read_varint(message, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _read_varint(message, pos)
        elif wire == 1:
            value, pos = message[pos:pos + 8], pos + 8
        elif wire == 2:
            size, pos = _read_varint(message, pos)
            value, pos = message[pos:pos + size], pos + size
        elif wire == 5:
            value, pos = message[pos:pos + 4], pos + 4
        else:
            raise AssertionError(f"wire type {wire}")
        fields[number].append(value)
    assert pos == len(message)
    return dict(fields)


def _double(raw: bytes) -> float:
    return struct.unpack("<d", raw)[0]


def _float(raw: bytes) -> float:
    return struct.unpack("<f", raw)[0]


def _doubles(raw: bytes) -> list[float]:
    return list(struct.unpack(f"<{len(raw) // 8}d", raw))


def _int64(value: int) -> int:
    return value - 2**64 if value >= 2**63 else value


def _event_files(log_dir: str) -> list[str]:
    """The event files in the order they were opened: by the writer counter in their names, compared as a number
    (as text ``.10`` sorts before ``.9``)."""
    def natural(path: str) -> list[tuple[int, int | str]]:
        return [(0, int(part)) if part.isdigit() else (1, part) for part in os.path.basename(path).split(".")]

    return sorted(glob.glob(os.path.join(str(log_dir), "events.out.tfevents.*")), key=natural)


def _events(log_dir: str) -> list[dict[str, Any]]:
    """The events of the one event file in ``log_dir``; the first must hold the file version."""
    (path,) = _event_files(log_dir)
    events = []
    for record in _records(path):
        fields = _parse(record)
        event = {"wall_time": _double(fields[1][0]), "step": _int64(fields.get(2, [0])[0])}
        if 3 in fields:
            event["file_version"] = fields[3][0].decode()
        if 5 in fields:
            event["values"] = [_parse(v) for v in _parse(fields[5][0])[1]]
        if 7 in fields:
            event["session_log"] = _parse(fields[7][0])
        events.append(event)
    assert events[0]["file_version"] == "brain.Event:2" and "values" not in events[0]
    return events


def _summaries(log_dir: str) -> list[tuple[int, str, dict[int, list[Any]]]]:
    """(step, tag, value fields) of every summary value after the file-version event."""
    return [(e["step"], v[1][0].decode(), v) for e in _events(log_dir)[1:] for v in e.get("values", [])]


def _plugin_name(value: dict[int, list[Any]]) -> str:
    return _parse(_parse(value[9][0])[1][0])[1][0].decode()


# ---------------------------------------------------------------------------------------------------------------
# Encoding


def test_crc32c_known_vectors() -> None:
    # The check value of CRC-32C, and the test vectors of RFC 3720 (iSCSI), appendix B.4.
    assert crc32c(b"123456789") == 0xE3069283
    assert crc32c(b"") == 0
    assert crc32c(bytes(32)) == 0x8A9136AA
    assert crc32c(b"\xff" * 32) == 0x62A8AB43
    assert crc32c(bytes(range(32))) == 0x46DD794E
    assert crc32c(bytes(range(31, -1, -1))) == 0x113FDB5C
    data = np.random.RandomState(0).randint(0, 256, 3000).astype(np.uint8).tobytes()
    assert crc32c(data) == _crc32c_bitwise(data)
    assert masked_crc32c(data) == _masked(data)


def test_tfrecord_framing_and_varints() -> None:
    record = tfrecord(b"abc")
    assert record[:8] == struct.pack("<Q", 3) and record[12:15] == b"abc" and len(record) == 19
    assert struct.unpack("<I", record[8:12])[0] == _masked(record[:8])
    assert struct.unpack("<I", record[15:])[0] == _masked(b"abc")
    assert varint(0) == b"\x00" and varint(1) == b"\x01" and varint(300) == b"\xac\x02"
    assert varint(-1) == b"\xff" * 9 + b"\x01"  # int64 -1: ten bytes
    for value in (127, 128, 2**31, 2**63 - 1):
        assert _read_varint(varint(value), 0) == (value, len(varint(value)))


# ---------------------------------------------------------------------------------------------------------------
# The writer


def test_scalars_steps_wall_times_and_file_name(tmp_path) -> None:
    with SummaryWriter(tmp_path) as writer:
        assert writer.get_logdir() == tmp_path
        writer.add_scalar("loss", 0.5, 0, walltime=1000.25)
        writer.add_scalar("loss", genesis.tensor(0.25, device=DEVICE), 1)
        writer.add_scalar("loss", np.array(0.125), 2)
        writer.add_scalar("acc", np.float32(0.75), global_step=-3)
        writer.add_scalar("acc", 7, genesis.tensor(5))
        writer.add_scalar("lr", genesis.tensor([[1e-3]], device=DEVICE))
        writer.add_scalar("new", 2.5, 4, new_style=True)
        writer.add_scalar("new64", 0.1, 4, new_style=True, double_precision=True)
    (path,) = _event_files(tmp_path)
    name = os.path.basename(path)
    assert re.fullmatch(rf"events\.out\.tfevents\.\d{{10}}\.{re.escape(socket.gethostname())}\.{os.getpid()}\.\d+",
                        name)
    events = _events(tmp_path)
    assert events[1]["wall_time"] == 1000.25
    assert all(abs(e["wall_time"] - int(name.split(".")[3])) < 60 for e in events[2:])
    found = [(step, tag, _float(v[2][0])) for step, tag, v in _summaries(tmp_path) if 2 in v]
    assert found == [(0, "loss", 0.5), (1, "loss", 0.25), (2, "loss", 0.125), (-3, "acc", 0.75), (5, "acc", 7.0),
                     (0, "lr", pytest.approx(1e-3, rel=1e-6))]
    (step, tag, new), (_, _, new64) = [s for s in _summaries(tmp_path) if s[1].startswith("new")]
    assert (step, tag, _plugin_name(new), _plugin_name(new64)) == (4, "new", "scalars", "scalars")
    tensor, tensor64 = _parse(new[8][0]), _parse(new64[8][0])
    assert tensor[1] == [1] and _float(tensor[5][0]) == 2.5  # DT_FLOAT, float_val
    assert tensor64[1] == [2] and _doubles(tensor64[6][0]) == [0.1]  # DT_DOUBLE, double_val


def test_scalars_of_several_series_go_to_sub_folders(tmp_path) -> None:
    with SummaryWriter(tmp_path) as writer:
        writer.add_scalars("run/loss", {"train": 1.5, "val": genesis.tensor(2.5)}, 3, walltime=50.0)
        writer.add_scalars("run/loss", {"train": 1.0, "val": 2.0}, 4)
    assert _event_files(tmp_path) != []  # the main file holds the file version only
    assert len(_events(tmp_path)) == 1
    for sub, values in (("train", [1.5, 1.0]), ("val", [2.5, 2.0])):
        folder = tmp_path / f"run_loss_{sub}"
        assert [(step, tag, _float(v[2][0])) for step, tag, v in _summaries(folder)] == \
            [(3, "run/loss", values[0]), (4, "run/loss", values[1])]
        assert _events(folder)[1]["wall_time"] == 50.0


def _histogram(value: dict[int, list[Any]]) -> dict[str, Any]:
    fields = _parse(value[5][0])
    return {"min": _double(fields[1][0]), "max": _double(fields[2][0]), "num": _double(fields[3][0]),
            "sum": _double(fields[4][0]), "sum_squares": _double(fields[5][0]),
            "limits": _doubles(fields[6][0]), "counts": _doubles(fields[7][0])}


def _expected_buckets(values: np.ndarray, bins: Any) -> tuple[list[float], list[float]]:
    """np.histogram's buckets from the first to the last non-empty one, their right edges, and before them an
    empty bucket whose limit is the first one's left edge."""
    counts, edges = np.histogram(values, bins=bins)
    nonzero = np.flatnonzero(counts)
    first, last = nonzero[0], nonzero[-1]
    return edges[first:last + 2].tolist(), [0.0] + counts[first:last + 1].astype(float).tolist()


@pytest.mark.parametrize("bins", ["tensorflow", 10, "auto", [-3.0, -1.0, 0.0, 0.5, 4.0]])
def test_histograms_match_numpy(tmp_path, bins: Any) -> None:
    values = np.random.RandomState(0).randn(500).astype(np.float32)
    with SummaryWriter(tmp_path) as writer:
        writer.add_histogram("weights", values, 7, bins=bins)
        writer.add_histogram("tensor", genesis.tensor(values.reshape(20, 25), device=DEVICE), 8, bins=bins)
    summaries = _summaries(tmp_path)
    assert [(step, tag) for step, tag, _ in summaries] == [(7, "weights"), (8, "tensor")]
    numpy_bins = default_bins() if bins == "tensorflow" else bins
    limits, counts = _expected_buckets(values.astype(np.float64), numpy_bins)
    for _, _, value in summaries:
        histo = _histogram(value)
        v = values.astype(np.float64)
        assert (histo["min"], histo["max"], histo["num"]) == (v.min(), v.max(), 500)
        assert histo["sum"] == pytest.approx(v.sum()) and histo["sum_squares"] == pytest.approx(v.dot(v))
        assert histo["limits"] == limits and histo["counts"] == counts


def test_histogram_max_bins_merges_neighbours(tmp_path) -> None:
    with SummaryWriter(tmp_path) as writer:
        writer.add_histogram("h", np.arange(100.0), bins=10, max_bins=3)
        writer.add_histogram_raw("raw", 0.0, 4.0, 3, 5.0, 17.0, [1.0, 2.0, 4.0], genesis.tensor([0.0, 2.0, 1.0]), 2)
    (_, _, merged), (step, tag, raw) = _summaries(tmp_path)
    histo = _histogram(merged)
    # Ten buckets of ten values merged by threes (the last group padded): 30, 30, 30, 10.
    assert histo["counts"] == [0.0, 30.0, 30.0, 30.0, 10.0]
    assert histo["limits"] == pytest.approx([0.0, 29.7, 59.4, 89.1, 99.0])
    assert (step, tag, _histogram(raw)) == (2, "raw", {"min": 0.0, "max": 4.0, "num": 3.0, "sum": 5.0,
                                                       "sum_squares": 17.0, "limits": [1.0, 2.0, 4.0],
                                                       "counts": [0.0, 2.0, 1.0]})


def test_text(tmp_path) -> None:
    with SummaryWriter(tmp_path) as writer:
        writer.add_text("notes", "**lr** = 3e-4, β₁ = 0.9", 12)
    ((step, tag, value),) = _summaries(tmp_path)
    assert (step, tag, _plugin_name(value)) == (12, "notes/text_summary", "text")
    tensor = _parse(value[8][0])
    assert tensor[1] == [7]  # DT_STRING
    assert _parse(_parse(tensor[2][0])[2][0]) == {1: [1]}  # shape (1,)
    assert tensor[8] == ["**lr** = 3e-4, β₁ = 0.9".encode()]


def _png(value: dict[int, list[Any]]) -> tuple[tuple[int, int, int], np.ndarray]:
    """(height, width, colorspace) of the Summary.Image and the decoded pixels (H, W, C) of its PNG."""
    image = _parse(value[4][0])
    png = image[4][0]
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    chunks, pos = [], 8
    while pos < len(png):
        (length,) = struct.unpack(">I", png[pos:pos + 4])
        kind, data = png[pos + 4:pos + 8], png[pos + 8:pos + 8 + length]
        assert struct.unpack(">I", png[pos + 8 + length:pos + 12 + length])[0] == zlib.crc32(kind + data)
        chunks.append((kind, data))
        pos += 12 + length
    assert [kind for kind, _ in chunks] == [b"IHDR", b"IDAT", b"IEND"]
    width, height, depth, color_type, compression, filtering, interlace = struct.unpack(">IIBBBBB", chunks[0][1])
    channels = {0: 1, 4: 2, 2: 3, 6: 4}[color_type]
    assert (depth, compression, filtering, interlace) == (8, 0, 0, 0)
    rows = np.frombuffer(zlib.decompress(chunks[1][1]), np.uint8).reshape(height, 1 + width * channels)
    assert (rows[:, 0] == 0).all()  # filter type "none" on every scanline
    assert (image[1][0], image[2][0], image[3][0]) == (height, width, channels)
    return (height, width, channels), rows[:, 1:].reshape(height, width, channels)


def test_images_are_png_with_the_pixels(tmp_path) -> None:
    rng = np.random.RandomState(0)
    chw = rng.rand(3, 5, 7).astype(np.float32)
    hwc_rgba = rng.randint(0, 256, (4, 6, 4)).astype(np.uint8)
    gray = rng.rand(5, 7) * 1.5 - 0.2  # out of [0, 1]: clipped
    batch = rng.rand(10, 1, 3, 4).astype(np.float32)
    with SummaryWriter(tmp_path) as writer:
        writer.add_image("chw", genesis.tensor(chw, device=DEVICE), 1)
        writer.add_image("rgba", hwc_rgba, 2, dataformats="HWC")
        writer.add_image("gray", gray, 3, dataformats="HW")
        writer.add_images("batch", batch, 4)
    (_, _, chw_v), (_, _, rgba_v), (_, _, gray_v), (step, tag, batch_v) = _summaries(tmp_path)
    as_uint8 = lambda a: (a.astype(np.float32) * 255).clip(0, 255).astype(np.uint8)  # noqa: E731 - torch's rule
    shape, pixels = _png(chw_v)
    assert shape == (5, 7, 3) and (pixels == as_uint8(chw.transpose(1, 2, 0))).all()
    shape, pixels = _png(rgba_v)
    assert shape == (4, 6, 4) and (pixels == hwc_rgba).all()
    shape, pixels = _png(gray_v)
    assert shape == (5, 7, 3) and all((pixels[..., c] == as_uint8(gray)).all() for c in range(3))
    # Ten gray images as a grid of eight per row, two rows, on a black canvas.
    assert (step, tag) == (4, "batch")
    shape, pixels = _png(batch_v)
    assert shape == (6, 32, 3)
    grid = np.zeros((6, 32), np.uint8)
    for i in range(10):
        y, x = divmod(i, 8)
        grid[y * 3:(y + 1) * 3, x * 4:(x + 1) * 4] = as_uint8(batch[i, 0])
    assert all((pixels[..., c] == grid).all() for c in range(3))


def test_hparams(tmp_path) -> None:
    with SummaryWriter(tmp_path) as writer:
        writer.add_hparams({"lr": 0.01, "optimizer": "adamw", "layers": genesis.tensor(4), "skip": None},
                           {"hparam/accuracy": 0.93}, hparam_domain_discrete={"optimizer": ["adamw", "sgd"]},
                           run_name="trial0")
    summaries = _summaries(tmp_path / "trial0")
    assert [tag for _, tag, _ in summaries] == ["_hparams_/experiment", "_hparams_/session_start_info",
                                                "_hparams_/session_end_info", "hparam/accuracy"]
    assert all(_plugin_name(v) == "hparams" for _, _, v in summaries[:3])
    contents = [_parse(_parse(_parse(v[9][0])[1][0])[2][0]) for _, _, v in summaries[:3]]
    experiment = _parse(contents[0][2][0])
    infos = [_parse(info) for info in experiment[4]]
    assert [(i[1][0], i[4][0]) for i in infos] == [(b"lr", 3), (b"optimizer", 1), (b"layers", 3)]  # FLOAT64, STRING
    domain = [_parse(v)[3][0] for v in _parse(infos[1][5][0])[1]]
    assert domain == [b"adamw", b"sgd"]
    assert [_parse(_parse(m)[1][0])[2][0] for m in experiment[5]] == [b"hparam/accuracy"]
    entries = {_parse(e)[1][0]: _parse(_parse(e)[2][0]) for e in _parse(contents[1][3][0])[1]}
    assert entries == {b"lr": {2: [struct.pack("<d", 0.01)]}, b"optimizer": {3: [b"adamw"]},
                       b"layers": {2: [struct.pack("<d", 4.0)]}}
    assert _parse(contents[2][4][0]) == {1: [1]}  # STATUS_SUCCESS
    assert _float(summaries[3][2][2][0]) == pytest.approx(0.93)


def test_purge_step_and_writing_after_close(tmp_path) -> None:
    writer = SummaryWriter(tmp_path, purge_step=40)
    writer.add_scalar("x", 1.0, 41)
    writer.close()
    writer.close()  # a second close does nothing
    events = _events(tmp_path)
    assert events[1]["step"] == 40 and events[1]["file_version"] == "brain.Event:2"
    assert events[2]["step"] == 40 and events[2]["session_log"] == {1: [1]}  # SessionLog.START
    assert events[3]["step"] == 41
    writer.add_scalar("x", 2.0, 42)  # a new event file, as torch opens one
    writer.close()
    first, second = _event_files(tmp_path)
    assert len(_records(second)) == 2


def test_events_are_buffered_until_the_queue_fills_or_a_flush(tmp_path) -> None:
    writer = SummaryWriter(tmp_path / "queue", max_queue=3)
    (path,) = _event_files(tmp_path / "queue")
    assert len(_records(path)) == 1  # the file version is written at once
    writer.add_scalar("a", 1.0, 0)
    writer.add_scalar("a", 2.0, 1)
    assert len(_records(path)) == 1
    writer.add_scalar("a", 3.0, 2)
    assert len(_records(path)) == 4
    writer.add_scalar("a", 4.0, 3)
    writer.flush()
    assert len(_records(path)) == 5
    writer.close()
    eager = SummaryWriter(tmp_path / "eager", flush_secs=0)
    eager.add_scalar("b", 1.0, 0)  # flush_secs have passed since the last write: written at once
    assert len(_records(_event_files(tmp_path / "eager")[0])) == 2
    eager.close()


def test_pending_events_are_written_at_exit(tmp_path) -> None:
    script = textwrap.dedent(f"""
        from genesis.utils.tensorboard import SummaryWriter
        writer = SummaryWriter({str(tmp_path)!r})
        writer.add_scalar("left_open", 3.0, 9)
    """)
    subprocess.run([sys.executable, "-c", script], cwd=ROOT, check=True, timeout=300)
    (step, tag, value), = _summaries(tmp_path)
    assert (step, tag, _float(value[2][0])) == (9, "left_open", 3.0)


def test_default_log_dir_and_errors(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    with SummaryWriter(comment="_bs64", filename_suffix=".v2") as writer:
        log_dir = writer.get_logdir()
        assert re.fullmatch(rf"runs{re.escape(os.sep)}[A-Z][a-z]{{2}}\d\d_\d\d-\d\d-\d\d_"
                            rf"{re.escape(socket.gethostname())}_bs64", log_dir)
        assert _event_files(log_dir)[0].endswith(".v2")
        with pytest.raises(NotImplementedError, match="add_graph"):
            writer.add_graph(genesis.nn.Linear(2, 2), genesis.zeros(1, 2))
        with pytest.raises(ValueError, match="one value"):
            writer.add_scalar("x", np.ones(2))
        with pytest.raises(TypeError, match="add_scalar: expected a Tensor"):
            writer.add_scalar("x", "1.0")
        with pytest.raises(TypeError, match="needs a str"):
            writer.add_text("x", 3)
        with pytest.raises(ValueError, match="dataformats"):
            writer.add_image("x", np.zeros((3, 4, 4)), dataformats="CWW")
        with pytest.raises(ValueError, match="does not match"):
            writer.add_image("x", np.zeros((4, 4)))
        with pytest.raises(ValueError, match="no values"):
            writer.add_histogram("x", np.zeros(0))
        with pytest.raises(TypeError, match="dictionaries"):
            writer.add_hparams([("lr", 0.1)], {})


def test_torch_compat_script_with_summary_writer(tmp_path) -> None:
    script = tmp_path / "train_logged.py"
    script.write_text(textwrap.dedent("""
        import sys
        import torch
        from torch import nn
        from torch.utils.tensorboard import SummaryWriter

        model = nn.Linear(3, 1)
        with torch.no_grad():
            model.weight.copy_(torch.tensor([[0.5, -0.25, 1.0]]))
            model.bias.fill_(0.0)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        x = torch.linspace(-1, 1, 12).reshape(4, 3)
        y = x.sum(dim=1, keepdim=True)
        writer = SummaryWriter(log_dir=sys.argv[1])
        losses = []
        for step in range(3):
            loss = nn.functional.mse_loss(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            writer.add_scalar("train/loss", loss.item(), step)
            losses.append(loss.item())
        writer.add_histogram("weight", model.weight, 2)
        writer.add_text("config", "lr=0.1", 0)
        writer.close()
    """))
    log_dir = tmp_path / "logs"
    env = torch_compat.run(str(script), [str(log_dir)])
    assert env["SummaryWriter"] is SummaryWriter
    summaries = _summaries(log_dir)
    assert [(step, tag) for step, tag, _ in summaries] == [(0, "train/loss"), (1, "train/loss"), (2, "train/loss"),
                                                           (2, "weight"), (0, "config/text_summary")]
    assert [_float(v[2][0]) for _, _, v in summaries[:3]] == pytest.approx(env["losses"], rel=1e-6)
    assert _histogram(summaries[3][2])["num"] == 3.0
