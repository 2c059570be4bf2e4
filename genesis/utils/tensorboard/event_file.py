"""TensorBoard event files without TensorBoard: TFRecord framing, CRC-32C, protobuf wire encoding, the writer.

An event file is a sequence of TFRecords, each holding one serialized ``tensorboard.Event`` protobuf message::

    uint64 length (little-endian) | uint32 masked CRC-32C of those 8 bytes | data | uint32 masked CRC-32C of data

where the mask is ``((crc >> 15) | (crc << 17)) + 0xa282ead8 (mod 2**32)``. The first record of every file is an
``Event`` whose ``file_version`` is ``"brain.Event:2"``. Messages are encoded by hand here (no ``protobuf``
package): a field is its key (``number << 3 | wire type``) as a varint, followed by a varint (wire type 0), eight
little-endian bytes (1: double), a varint length and the bytes (2: strings, bytes, nested messages, packed
repeated numbers) or four little-endian bytes (5: float). The ``Event`` fields written: ``wall_time = 1``
(double), ``step = 2`` (int64), ``file_version = 3`` (string), ``summary = 5``, ``session_log = 7`` and
``source_metadata = 10`` (``tensorboard/compat/proto/event.proto``).
"""

from __future__ import annotations

import itertools
import math
import os
import socket
import struct
import threading
import time
import weakref
from collections.abc import Iterable
from typing import BinaryIO

FILE_VERSION = "brain.Event:2"
# SessionLog.SessionStatus.START: written with a purge step, so TensorBoard drops the events of a crashed run
# that come after that step.
SESSION_LOG_START = 1
_WRITER_NAME = "genesis.utils.tensorboard"

# ---------------------------------------------------------------------------------------------------------------
# CRC-32C (Castagnoli): reflected polynomial 0x82F63B78, initial value and final XOR 0xFFFFFFFF, one table lookup
# per byte.


def _crc32c_table() -> tuple[int, ...]:
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
        table.append(crc)
    return tuple(table)


_CRC32C_TABLE = _crc32c_table()


def crc32c(data: bytes) -> int:
    """The CRC-32C (Castagnoli) checksum of ``data``, as TFRecords use it (``crc32c(b"123456789") == 0xE3069283``)."""
    table = _CRC32C_TABLE
    crc = 0xFFFFFFFF
    for byte in data:
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked_crc32c(data: bytes) -> int:
    """TFRecord's masked CRC-32C: the checksum rotated right by 15 bits plus 0xa282ead8, modulo 2**32."""
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def tfrecord(data: bytes) -> bytes:
    """One TFRecord: the length, its masked CRC, the data and the data's masked CRC."""
    header = struct.pack("<Q", len(data))
    return header + struct.pack("<I", masked_crc32c(header)) + data + struct.pack("<I", masked_crc32c(data))


# ---------------------------------------------------------------------------------------------------------------
# Protobuf wire format. Each helper returns one encoded field; a message is the concatenation of its fields.

_VARINT, _FIXED64, _LENGTH_DELIMITED, _FIXED32 = 0, 1, 2, 5


def varint(value: int) -> bytes:
    """``value`` as a base-128 varint; negative numbers as their 64-bit two's complement (ten bytes), as int64."""
    value &= 0xFFFFFFFFFFFFFFFF
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _key(number: int, wire_type: int) -> bytes:
    return varint(number << 3 | wire_type)


def field_varint(number: int, value: int) -> bytes:
    """An int32 / int64 / bool / enum field."""
    return _key(number, _VARINT) + varint(int(value))


def field_double(number: int, value: float) -> bytes:
    """A double field (eight little-endian bytes)."""
    return _key(number, _FIXED64) + struct.pack("<d", value)


def _float32(value: float) -> bytes:
    """Four little-endian bytes; values beyond float32's range become infinities, as in a cast."""
    try:
        return struct.pack("<f", value)
    except OverflowError:
        return struct.pack("<f", math.copysign(math.inf, value))


def field_float(number: int, value: float) -> bytes:
    """A float field (four little-endian bytes)."""
    return _key(number, _FIXED32) + _float32(value)


def field_bytes(number: int, data: bytes) -> bytes:
    """A length-delimited field: bytes, or a nested message already encoded."""
    return _key(number, _LENGTH_DELIMITED) + varint(len(data)) + data


def field_string(number: int, text: str) -> bytes:
    """A string field (UTF-8)."""
    return field_bytes(number, text.encode("utf-8"))


def field_packed_doubles(number: int, values: Iterable[float]) -> bytes:
    """A packed ``repeated double`` field."""
    values = [float(v) for v in values]
    return field_bytes(number, struct.pack(f"<{len(values)}d", *values))


def field_packed_floats(number: int, values: Iterable[float]) -> bytes:
    """A packed ``repeated float`` field."""
    return field_bytes(number, b"".join(_float32(float(v)) for v in values))


def encode_event(wall_time: float, step: int | None = None, *, file_version: str | None = None,
                 summary: bytes | None = None, session_log_status: int | None = None,
                 source_writer: str | None = None) -> bytes:
    """An ``Event`` message: its time and step, and one of a file version, an encoded ``Summary`` or a session
    log status (``SessionLog.status = 1``); ``source_writer`` names the program in ``source_metadata``."""
    out = field_double(1, wall_time)
    if step is not None:
        out += field_varint(2, step)
    if file_version is not None:
        out += field_string(3, file_version)
    if summary is not None:
        out += field_bytes(5, summary)
    if session_log_status is not None:
        out += field_bytes(7, field_varint(1, session_log_status))
    if source_writer is not None:
        out += field_bytes(10, field_string(1, source_writer))
    return out


# ---------------------------------------------------------------------------------------------------------------
# The writer.

_FILE_COUNTER = itertools.count()  # the last part of an event file's name, unique in the process (as tensorboard's)


def _write_out(file: BinaryIO, pending: list[bytes], lock: threading.Lock, close: bool) -> None:
    """Write the pending records to the file and flush it (and close it when asked). A module function, so the
    exit hook that calls it holds no reference to the writer."""
    with lock:
        if file.closed:
            return
        if pending:
            file.write(b"".join(pending))
            pending.clear()
        file.flush()
        if close:
            file.close()


class EventFileWriter:
    """Writes ``Event`` records into one new event file in ``log_dir``.

    The file is ``events.out.tfevents.{int(time):010d}.{hostname}.{pid}.{counter}{filename_suffix}``, as PyTorch's
    (through TensorBoard's) writer names it; its first record, written and flushed at once, holds the file version.
    Events are kept in memory and written when ``max_queue`` of them are pending, when an event arrives
    ``flush_secs`` or more after the last write, on :meth:`flush` and :meth:`close`, and when the writer is garbage
    collected or the interpreter exits (``weakref.finalize``). There is no background thread: events logged just
    before a long pause stay in memory until one of those happens. Safe to use from several threads.

    Args:
        log_dir: the folder (created if missing).
        max_queue: how many events may be pending before they are written.
        flush_secs: the longest time between writes while events keep arriving.
        filename_suffix: appended to the file name.
    """

    def __init__(self, log_dir: str | os.PathLike, max_queue: int = 10, flush_secs: float = 120,
                 filename_suffix: str = "") -> None:
        self._log_dir = str(log_dir)
        self._max_queue = max_queue
        self._flush_secs = flush_secs
        os.makedirs(self._log_dir, exist_ok=True)
        name = (f"events.out.tfevents.{int(time.time()):010d}.{socket.gethostname()}.{os.getpid()}."
                f"{next(_FILE_COUNTER)}{filename_suffix}")
        self._path = os.path.join(self._log_dir, name)
        self._file = open(self._path, "wb")
        self._pending: list[bytes] = []
        self._lock = threading.Lock()
        self._last_write = time.monotonic()
        self._finalizer = weakref.finalize(self, _write_out, self._file, self._pending, self._lock, True)
        self.add_event(encode_event(time.time(), file_version=FILE_VERSION, source_writer=_WRITER_NAME))
        self.flush()

    def get_logdir(self) -> str:
        """The folder the event file is in."""
        return self._log_dir

    def add_event(self, event: bytes) -> None:
        """Queue one encoded ``Event`` message; write the queue out when it is full or ``flush_secs`` have passed."""
        if self._file.closed:
            raise OSError(f"EventFileWriter: the event file {self._path} is closed")
        with self._lock:
            self._pending.append(tfrecord(event))
            due = len(self._pending) >= self._max_queue or time.monotonic() - self._last_write >= self._flush_secs
        if due:
            self.flush()

    def add_summary(self, summary: bytes, global_step: int | None = None, walltime: float | None = None) -> None:
        """Queue an ``Event`` holding the encoded ``Summary``, at ``walltime`` (default: now) and ``global_step``."""
        step = None if global_step is None else int(global_step)
        self.add_event(encode_event(time.time() if walltime is None else walltime, step, summary=summary))

    def flush(self) -> None:
        """Write the pending events and flush the file."""
        _write_out(self._file, self._pending, self._lock, close=False)
        self._last_write = time.monotonic()

    def close(self) -> None:
        """Write the pending events and close the file; later events raise ``OSError``."""
        self._finalizer()
