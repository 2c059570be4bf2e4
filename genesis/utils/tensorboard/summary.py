"""The ``Summary`` messages TensorBoard reads, built as PyTorch's ``torch.utils.tensorboard.summary`` builds them.

Each function returns an encoded ``tensorboard.Summary`` (``tensorboard/compat/proto/summary.proto``): ``value = 1``
repeated, each value with ``tag = 1``, ``metadata = 9`` and one of ``simple_value = 2`` (float), ``image = 4``,
``histo = 5`` or ``tensor = 8``. Values are read into numpy first: Genesis tensors through
``.detach().cpu().numpy()`` (a device-to-host copy for GPU tensors), numpy arrays as they are, numbers as
one-element arrays.
"""

from __future__ import annotations

import math
import struct
import zlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from genesis import dtypes
from genesis.tensor import Tensor
from genesis.utils.tensorboard.event_file import (
    field_bytes,
    field_double,
    field_float,
    field_packed_doubles,
    field_packed_floats,
    field_string,
    field_varint,
)

# TensorProto.dtype values (tensorboard/compat/proto/types.proto).
_DT_FLOAT, _DT_DOUBLE, _DT_STRING = 1, 2, 7


def make_np(value: Any, what: str) -> np.ndarray:
    """``value`` as a numpy array: a Genesis tensor (detached, copied to the host, bfloat16 as float32), a numpy
    array, or a number (a one-element array, as torch's ``make_np``)."""
    if isinstance(value, Tensor):
        value = value.detach()
        if value.dtype is dtypes.bfloat16:
            value = value.float()
        return value.cpu().numpy()
    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, (bool, int, float, np.generic)):
        return np.array([value])
    raise TypeError(f"{what}: expected a Tensor, a numpy array or a number, got {type(value).__name__}")


def _summary(tag: str, *, metadata: bytes | None = None, value_field: bytes = b"") -> bytes:
    """A ``Summary`` with one value: its tag, the encoded value field and optional ``SummaryMetadata`` (in field
    number order, as protobuf writes them)."""
    value = field_string(1, tag) + value_field
    if metadata is not None:
        value += field_bytes(9, metadata)
    return field_bytes(1, value)


def _plugin_metadata(plugin_name: str, content: bytes = b"") -> bytes:
    """``SummaryMetadata`` naming the plugin that reads the value (``plugin_data = 1``: ``plugin_name = 1``,
    ``content = 2``)."""
    plugin_data = field_string(1, plugin_name)
    if content:
        plugin_data += field_bytes(2, content)
    return field_bytes(1, plugin_data)


def _tensor_shape(dims: Sequence[int]) -> bytes:
    """``TensorShapeProto``: ``dim = 2`` repeated, each ``Dim`` with ``size = 1``."""
    return b"".join(field_bytes(2, field_varint(1, size)) for size in dims)


# ---------------------------------------------------------------------------------------------------------------
# Scalars and histograms


def scalar(tag: str, value: Any, new_style: bool = False, double_precision: bool = False) -> bytes:
    """One number: ``simple_value`` (float32), or with ``new_style`` a rank-0 tensor for the scalars plugin
    (``float_val = 5`` as DT_FLOAT, or ``double_val = 6`` as DT_DOUBLE with ``double_precision``)."""
    array = make_np(value, "add_scalar").squeeze()
    if array.ndim != 0:
        raise ValueError(f"add_scalar: '{tag}' needs one value, got an array of shape {tuple(array.shape)}")
    number = float(array)
    if not new_style:
        return _summary(tag, value_field=field_float(2, number))
    if double_precision:
        tensor = field_varint(1, _DT_DOUBLE) + field_packed_doubles(6, [number])
    else:
        tensor = field_varint(1, _DT_FLOAT) + field_packed_floats(5, [number])
    return _summary(tag, metadata=_plugin_metadata("scalars"), value_field=field_bytes(8, tensor))


def default_bins() -> list[float]:
    """TensorBoard's default histogram edges (``bins="tensorflow"``): ±1e-12 growing by 10% to 1e20, and 0."""
    v, positive = 1e-12, []
    while v < 1e20:
        positive.append(v)
        v *= 1.1
    return [-b for b in reversed(positive)] + [0] + positive


def _flat_floats(values: Any, what: str) -> list[float]:
    if isinstance(values, Tensor):
        values = make_np(values, what)
    return np.asarray(values, dtype=np.float64).reshape(-1).tolist()


def histogram_raw(tag: str, min: float, max: float, num: float, sum: float, sum_squares: float,
                  bucket_limits: Any, bucket_counts: Any) -> bytes:
    """A histogram given by its statistics and buckets (``HistogramProto``: ``min = 1``, ``max = 2``, ``num = 3``,
    ``sum = 4``, ``sum_squares = 5`` as doubles; ``bucket_limit = 6`` and ``bucket = 7`` packed doubles; each
    bucket counts the values up to its limit)."""
    limits = _flat_floats(bucket_limits, "add_histogram_raw")
    counts = _flat_floats(bucket_counts, "add_histogram_raw")
    if len(limits) != len(counts):
        raise ValueError(f"add_histogram_raw: '{tag}' has {len(limits)} bucket limits and {len(counts)} counts")
    histo = (field_double(1, min) + field_double(2, max) + field_double(3, num) + field_double(4, sum)
             + field_double(5, sum_squares) + field_packed_doubles(6, limits) + field_packed_doubles(7, counts))
    return _summary(tag, value_field=field_bytes(5, histo))


def histogram(tag: str, values: Any, bins: Any, max_bins: int | None = None) -> bytes:
    """A histogram of ``values`` over ``bins`` (anything ``np.histogram`` takes), as torch's ``make_histogram``:
    at most ``max_bins`` buckets (neighbours merged), trimmed to the span of non-empty buckets plus one empty
    bucket on the left that carries the lowest edge (TensorBoard stores right edges only)."""
    values = make_np(values, "add_histogram").astype(np.float64).reshape(-1)
    if values.size == 0:
        raise ValueError(f"add_histogram: '{tag}' has no values")
    counts, limits = np.histogram(values, bins=bins)
    if max_bins is not None and len(counts) > max_bins:
        group = len(counts) // max_bins
        if len(counts) % group:
            counts = np.pad(counts, (0, group - len(counts) % group))
        counts = counts.reshape(-1, group).sum(axis=-1)
        limits = np.concatenate([limits[:-1:group], limits[-1:]])
    # The first and last non-empty buckets bound the support.
    nonzero = np.cumsum(counts > 0)
    start, end = (int(i) for i in np.searchsorted(nonzero, [0, nonzero[-1] - 1], side="right"))
    end += 1
    counts = counts[start - 1:end] if start > 0 else np.concatenate([[0], counts[:end]])
    limits = limits[start:end + 1]
    if counts.size == 0 or limits.size == 0:
        raise ValueError(f"add_histogram: '{tag}' has no values inside the bins")
    return histogram_raw(tag, values.min(), values.max(), values.size, values.sum(), values.dot(values),
                         limits.tolist(), counts.tolist())


# ---------------------------------------------------------------------------------------------------------------
# Text


def text(tag: str, text_string: str) -> bytes:
    """Text for the text plugin (markdown): a DT_STRING tensor of shape (1,) with ``string_val = 8``, under the
    tag ``{tag}/text_summary`` as torch writes it."""
    if not isinstance(text_string, str):
        raise TypeError(f"add_text: '{tag}' needs a str, got {type(text_string).__name__}")
    tensor = field_varint(1, _DT_STRING) + field_bytes(2, _tensor_shape([1])) + field_bytes(8, text_string.encode())
    return _summary(f"{tag}/text_summary", metadata=_plugin_metadata("text"), value_field=field_bytes(8, tensor))


# ---------------------------------------------------------------------------------------------------------------
# Images


def _transpose_to(array: np.ndarray, dataformats: str, target: str) -> np.ndarray:
    return array.transpose([dataformats.find(c) for c in target])


def make_grid(images: np.ndarray, ncols: int = 8) -> np.ndarray:
    """Images (N, C, H, W) with C = 1 or 3 laid out in rows of ``ncols`` on a zero canvas (3, rows * H, cols * W)."""
    if images.shape[1] == 1:
        images = np.concatenate([images] * 3, axis=1)
    if images.shape[1] != 3:
        raise ValueError(f"add_images: images need 1 or 3 channels, got {images.shape[1]}")
    n, _, h, w = images.shape
    ncols = min(n, ncols)
    nrows = math.ceil(n / ncols)
    canvas = np.zeros((3, h * nrows, w * ncols), dtype=images.dtype)
    for i in range(n):
        y, x = divmod(i, ncols)
        canvas[:, y * h:(y + 1) * h, x * w:(x + 1) * w] = images[i]
    return canvas


_DATAFORMAT_LETTERS = {4: "NCHW", 3: "CHW", 2: "HW"}


def convert_to_hwc(array: np.ndarray, dataformats: str) -> np.ndarray:
    """An image array in ``dataformats`` (NCHW/NHWC-like for a batch, CHW/HWC-like, HW) as (H, W, C); a batch
    becomes one grid image and grayscale becomes RGB, as torch's ``convert_to_HWC``."""
    dataformats = dataformats.upper()
    if sorted(dataformats) != sorted(_DATAFORMAT_LETTERS.get(len(dataformats), "")):
        raise ValueError(f"add_image: dataformats must order the letters NCHW (a batch), CHW or HW, got "
                         f"'{dataformats}'")
    if array.ndim != len(dataformats):
        raise ValueError(f"add_image: an image of shape {tuple(array.shape)} does not match dataformats "
                         f"'{dataformats}'")
    if len(dataformats) == 4:
        return make_grid(_transpose_to(array, dataformats, "NCHW")).transpose(1, 2, 0)
    if len(dataformats) == 3:
        hwc = _transpose_to(array, dataformats, "HWC")
        return np.concatenate([hwc] * 3, axis=2) if hwc.shape[2] == 1 else hwc
    return np.stack([_transpose_to(array, dataformats, "HW")] * 3, axis=2)


# PNG color types by channel count: gray, gray + alpha, RGB, RGBA.
_PNG_COLOR_TYPE = {1: 0, 2: 4, 3: 2, 4: 6}


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    """A PNG chunk: big-endian length, type, data, CRC-32 of type and data."""
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def encode_png(pixels: np.ndarray) -> bytes:
    """An (H, W, C) uint8 array with C in 1..4 as a PNG file: 8 bits per sample, no interlacing, every scanline
    with filter type 0 (none), the scanlines deflated into one IDAT chunk."""
    height, width, channels = pixels.shape
    if channels not in _PNG_COLOR_TYPE:
        raise ValueError(f"add_image: an image needs 1 to 4 channels, got {channels}")
    header = struct.pack(">IIBBBBB", width, height, 8, _PNG_COLOR_TYPE[channels], 0, 0, 0)
    rows = np.ascontiguousarray(pixels, dtype=np.uint8).reshape(height, width * channels)
    scanlines = np.concatenate([np.zeros((height, 1), np.uint8), rows], axis=1)  # filter byte 0 before each row
    return (b"\x89PNG\r\n\x1a\n" + _png_chunk(b"IHDR", header)
            + _png_chunk(b"IDAT", zlib.compress(scanlines.tobytes())) + _png_chunk(b"IEND", b""))


def image(tag: str, img: Any, dataformats: str = "NCHW") -> bytes:
    """An image (or a batch, as a grid) as PNG in ``Summary.Image`` (``height = 1``, ``width = 2``,
    ``colorspace = 3`` (the channel count), ``encoded_image_string = 4``). uint8 values are taken as they are,
    any other dtype is scaled by 255 (values in [0, 1]); both are clipped to [0, 255] and truncated to uint8, as
    torch does."""
    array = convert_to_hwc(make_np(img, "add_image"), dataformats)
    scale = 1 if array.dtype == np.uint8 else 255
    pixels = (array.astype(np.float32) * scale).clip(0, 255).astype(np.uint8)
    height, width, channels = pixels.shape
    encoded = (field_varint(1, height) + field_varint(2, width) + field_varint(3, channels)
               + field_bytes(4, encode_png(pixels)))
    return _summary(tag, value_field=field_bytes(4, encoded))


# ---------------------------------------------------------------------------------------------------------------
# Hyperparameters (the hparams plugin: tensorboard/plugins/hparams/plugin_data.proto and api.proto)

_HPARAMS_PLUGIN = "hparams"
EXPERIMENT_TAG = "_hparams_/experiment"
SESSION_START_INFO_TAG = "_hparams_/session_start_info"
SESSION_END_INFO_TAG = "_hparams_/session_end_info"
# api.proto's DataType and Status.
_DATA_TYPE_STRING, _DATA_TYPE_FLOAT64 = 1, 3
_STATUS_SUCCESS = 1


def _struct_value(value: float | str) -> bytes:
    """``google.protobuf.Value``: ``number_value = 2`` (double) or ``string_value = 3``."""
    if isinstance(value, str):
        return field_string(3, value)
    return field_double(2, float(value))


def _hparams_summary(tag: str, plugin_data_field: bytes) -> bytes:
    """A value for the hparams plugin: ``HParamsPluginData`` (``version = 1`` is 0, left out as protobuf does)
    holding one of ``experiment = 2``, ``session_start_info = 3``, ``session_end_info = 4``."""
    return _summary(tag, metadata=_plugin_metadata(_HPARAMS_PLUGIN, plugin_data_field))


def hparams(hparam_dict: dict[str, Any], metric_dict: dict[str, Any],
            hparam_domain_discrete: dict[str, list[Any]] | None = None) -> tuple[bytes, bytes, bytes]:
    """The three summaries of one hparams session, as torch's ``summary.hparams``: the experiment (each
    hyperparameter's name, type and optional discrete domain; each metric's tag), the session start (the values)
    and the session end (success).

    Values may be numbers (bools included: like torch, they are numbers, since ``bool`` is an ``int``), strings,
    or tensors (their first element); None values are skipped.
    """
    if not isinstance(hparam_dict, dict) or not isinstance(metric_dict, dict):
        raise TypeError("add_hparams: hparam_dict and metric_dict should be dictionaries, nothing logged")
    hparam_domain_discrete = hparam_domain_discrete or {}
    if not isinstance(hparam_domain_discrete, dict):
        raise TypeError("add_hparams: hparam_domain_discrete should be a dictionary, nothing logged")
    for name, domain in hparam_domain_discrete.items():
        if name not in hparam_dict or not isinstance(domain, list) or \
                not all(isinstance(d, type(hparam_dict[name])) for d in domain):
            raise TypeError(f"add_hparams: hparam_domain_discrete['{name}'] should be a list of values of the type "
                            f"of hparam_dict['{name}']")
    infos, values = b"", b""
    for name, value in hparam_dict.items():
        if value is None:
            continue
        if isinstance(value, Tensor):
            value = float(make_np(value, "add_hparams").reshape(-1)[0])
        if isinstance(value, (int, float, np.integer, np.floating, np.bool_)):
            value, kind = float(value), _DATA_TYPE_FLOAT64
        elif isinstance(value, str):
            kind = _DATA_TYPE_STRING
        else:
            raise ValueError(f"add_hparams: '{name}' should be an int, float, str, bool or Tensor, got "
                             f"{type(value).__name__}")
        info = field_string(1, name) + field_varint(4, kind)
        if name in hparam_domain_discrete:  # domain_discrete = 5: a ListValue (values = 1)
            domain = b"".join(field_bytes(1, _struct_value(d)) for d in hparam_domain_discrete[name])
            info += field_bytes(5, domain)
        infos += field_bytes(4, info)  # Experiment.hparam_infos = 4
        values += field_bytes(1, field_string(1, name) + field_bytes(2, _struct_value(value)))  # map entry
    metrics = b"".join(field_bytes(5, field_bytes(1, field_string(2, tag))) for tag in metric_dict)
    experiment = _hparams_summary(EXPERIMENT_TAG, field_bytes(2, infos + metrics))
    start = _hparams_summary(SESSION_START_INFO_TAG, field_bytes(3, values))
    end = _hparams_summary(SESSION_END_INFO_TAG, field_bytes(4, field_varint(1, _STATUS_SUCCESS)))
    return experiment, start, end
