"""Key-value stores for rendezvous: a small TCP store (torch's ``TCPStore``: one process serves, every rank
connects) and a store in a shared file (torch's ``FileStore``).

Keys are strings, values bytes. ``get`` and ``wait`` block until the keys exist or the timeout passes; ``add`` is an
atomic counter. Messages are length-prefixed JSON headers followed by raw bytes: nothing received is unpickled.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import socket
import struct
import threading
import time
from datetime import timedelta
from typing import Any

_HEADER = struct.Struct("!II")  # (length of the JSON header, length of the payload)


def _send(sock: socket.socket, header: dict, payload: bytes = b"") -> None:
    head = json.dumps(header).encode()
    sock.sendall(_HEADER.pack(len(head), len(payload)) + head + payload)


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    chunks = []
    while n:
        chunk = sock.recv(min(n, 1 << 20))
        if not chunk:
            raise ConnectionError("TCPStore: the connection was closed by the other side")
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def _recv(sock: socket.socket) -> tuple[dict, bytes]:
    n_head, n_payload = _HEADER.unpack(_recv_exact(sock, _HEADER.size))
    header = json.loads(_recv_exact(sock, n_head))
    return header, _recv_exact(sock, n_payload) if n_payload else b""


def _seconds(timeout: timedelta | float) -> float:
    return timeout.total_seconds() if isinstance(timeout, timedelta) else float(timeout)


class _Server:
    """The store's data and one thread per connected client."""

    def __init__(self, host: str, port: int) -> None:
        self.data: dict[str, bytes] = {}
        self.cond = threading.Condition()
        self.listener = socket.create_server((host, port), reuse_port=False, backlog=128)
        self.port = self.listener.getsockname()[1]
        self.closed = False
        threading.Thread(target=self._accept, name="genesis-tcpstore", daemon=True).start()

    def _accept(self) -> None:
        while not self.closed:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            while True:
                try:
                    header, payload = _recv(conn)
                except (ConnectionError, OSError):
                    return
                reply, data = self._handle(header, payload)
                try:
                    _send(conn, reply, data)
                except OSError:
                    return

    def _wait_for(self, keys: list[str], timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        with self.cond:
            while not all(k in self.data for k in keys):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.cond.wait(left)
        return True

    def _handle(self, header: dict, payload: bytes) -> tuple[dict, bytes]:
        cmd = header["cmd"]
        if cmd == "set":
            with self.cond:
                self.data[header["key"]] = payload
                self.cond.notify_all()
            return {"ok": True}, b""
        if cmd == "add":
            with self.cond:
                value = int(self.data.get(header["key"], b"0")) + int(header["amount"])
                self.data[header["key"]] = str(value).encode()
                self.cond.notify_all()
            return {"ok": True, "value": value}, b""
        if cmd in ("get", "wait"):
            keys = header["keys"]
            if not self._wait_for(keys, header["timeout"]):
                with self.cond:
                    missing = [k for k in keys if k not in self.data]
                return {"ok": False, "missing": missing}, b""
            return {"ok": True}, self.data[keys[0]] if cmd == "get" else b""
        if cmd == "check":
            with self.cond:
                return {"ok": True, "value": all(k in self.data for k in header["keys"])}, b""
        if cmd == "delete":
            with self.cond:
                return {"ok": True, "value": self.data.pop(header["key"], None) is not None}, b""
        if cmd == "num_keys":
            with self.cond:
                return {"ok": True, "value": len(self.data)}, b""
        return {"ok": False, "error": f"unknown command {cmd!r}"}, b""

    def close(self) -> None:
        self.closed = True
        self.listener.close()


class TCPStore:
    """A key-value store over TCP (torch.distributed.TCPStore).

    Args:
        host_name: address of the serving process.
        port: its port; 0 with ``is_master=True`` picks a free one (read it back from ``port``).
        world_size: number of clients expected (informational, as torch).
        is_master: whether this process serves the store.
        timeout: how long ``get``/``wait`` and connecting may block (seconds or a timedelta).
    """

    def __init__(self, host_name: str, port: int, world_size: int | None = None, is_master: bool = False,
                 timeout: timedelta | float = timedelta(seconds=300)) -> None:
        self.host = host_name
        self.world_size = world_size
        self.timeout = _seconds(timeout)
        self._server = _Server("" if host_name in ("", "0.0.0.0") else host_name, port) if is_master else None
        self.port = self._server.port if self._server is not None else port
        self._lock = threading.Lock()
        self._sock = self._connect()

    def _connect(self) -> socket.socket:
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                sock = socket.create_connection((self.host or "127.0.0.1", self.port), timeout=5)
                sock.settimeout(None)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                return sock
            except OSError as e:
                if time.monotonic() >= deadline:
                    raise TimeoutError(f"TCPStore: could not connect to {self.host}:{self.port} within "
                                       f"{self.timeout:g} s ({e})") from None
                time.sleep(0.05)

    def _call(self, header: dict, payload: bytes = b"") -> tuple[dict, bytes]:
        with self._lock:
            _send(self._sock, header, payload)
            reply, data = _recv(self._sock)
        if not reply["ok"]:
            if "missing" in reply:
                raise TimeoutError(f"TCPStore: timed out after {header['timeout']:g} s waiting for key(s) "
                                   f"{reply['missing']}")
            raise RuntimeError(f"TCPStore: {reply['error']}")
        return reply, data

    def set(self, key: str, value: bytes | str) -> None:
        """Store ``value`` under ``key`` (replacing any earlier value) and wake those waiting for it."""
        self._call({"cmd": "set", "key": key}, value.encode() if isinstance(value, str) else bytes(value))

    def get(self, key: str, timeout: timedelta | float | None = None) -> bytes:
        """The value of ``key``, waiting for it up to the timeout; TimeoutError naming the key otherwise."""
        wait = self.timeout if timeout is None else _seconds(timeout)
        return self._call({"cmd": "get", "keys": [key], "timeout": wait})[1]

    def add(self, key: str, amount: int) -> int:
        """Add ``amount`` to the integer under ``key`` (0 when absent) and return the new value, atomically."""
        return int(self._call({"cmd": "add", "key": key, "amount": int(amount)})[0]["value"])

    def wait(self, keys: list[str], timeout: timedelta | float | None = None) -> None:
        """Block until every key exists; TimeoutError naming the missing ones after the timeout."""
        wait = self.timeout if timeout is None else _seconds(timeout)
        self._call({"cmd": "wait", "keys": list(keys), "timeout": wait})

    def check(self, keys: list[str]) -> bool:
        """Whether every key exists, without waiting."""
        return bool(self._call({"cmd": "check", "keys": list(keys)})[0]["value"])

    def delete_key(self, key: str) -> bool:
        """Remove ``key``; whether it existed."""
        return bool(self._call({"cmd": "delete", "key": key})[0]["value"])

    def num_keys(self) -> int:
        """How many keys the store holds."""
        return int(self._call({"cmd": "num_keys"})[0]["value"])

    def set_timeout(self, timeout: timedelta | float) -> None:
        """Change the default timeout of ``get`` and ``wait``."""
        self.timeout = _seconds(timeout)

    def close(self) -> None:
        """Disconnect (and stop serving when this process serves the store)."""
        self._sock.close()
        if self._server is not None:
            self._server.close()


class PrefixStore:
    """A view of ``store`` whose keys all start with ``prefix + "/"`` (torch.distributed.PrefixStore)."""

    def __init__(self, prefix: str, store: TCPStore | PrefixStore) -> None:
        self.prefix = prefix
        self.store = store

    def _k(self, key: str) -> str:
        return f"{self.prefix}/{key}"

    def set(self, key: str, value: bytes | str) -> None:
        """As ``TCPStore.set`` under the prefix."""
        self.store.set(self._k(key), value)

    def get(self, key: str, timeout: timedelta | float | None = None) -> bytes:
        """As ``TCPStore.get`` under the prefix."""
        return self.store.get(self._k(key), timeout)

    def add(self, key: str, amount: int) -> int:
        """As ``TCPStore.add`` under the prefix."""
        return self.store.add(self._k(key), amount)

    def wait(self, keys: list[str], timeout: timedelta | float | None = None) -> None:
        """As ``TCPStore.wait`` under the prefix."""
        self.store.wait([self._k(k) for k in keys], timeout)

    def check(self, keys: list[str]) -> bool:
        """As ``TCPStore.check`` under the prefix."""
        return self.store.check([self._k(k) for k in keys])

    def delete_key(self, key: str) -> bool:
        """As ``TCPStore.delete_key`` under the prefix."""
        return self.store.delete_key(self._k(key))


class FileStore:
    """A key-value store in a file on a file system every rank sees (torch.distributed.FileStore; the store of
    ``init_method="file://PATH"``).

    Every operation locks the file (``flock``), reads its JSON contents, and writes them back when it changes them;
    ``get`` and ``wait`` poll. The file holds a count of the stores open on it: the last ``close`` removes it, so the
    path can serve the next job. A file left by a job that crashed must be removed by hand, as with torch's.
    """

    def __init__(self, file_name: str, world_size: int | None = None,
                 timeout: timedelta | float = timedelta(seconds=300)) -> None:
        self.path = file_name
        self.world_size = world_size
        self.timeout = _seconds(timeout)
        self._open = True
        self._update(lambda d: d.__setitem__("__users__", str(int(d.get("__users__", "0")) + 1)))

    def _update(self, change: Any = None) -> dict[str, str]:
        """The file's contents (values base64); ``change(contents)`` edits them under the same lock."""
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            raw = b""
            while chunk := os.read(fd, 1 << 16):
                raw += chunk
            contents = json.loads(raw) if raw else {}
            if change is not None:
                result = change(contents)
                os.lseek(fd, 0, os.SEEK_SET)
                os.ftruncate(fd, 0)
                os.write(fd, json.dumps(contents).encode())
                return result
            return contents
        finally:
            os.close(fd)

    def set(self, key: str, value: bytes | str) -> None:
        """Store ``value`` under ``key`` (replacing any earlier value)."""
        data = value.encode() if isinstance(value, str) else bytes(value)
        self._update(lambda d: d.__setitem__(key, base64.b64encode(data).decode()))

    def get(self, key: str, timeout: timedelta | float | None = None) -> bytes:
        """The value of ``key``, waiting for it up to the timeout; TimeoutError naming the key otherwise."""
        self.wait([key], timeout)
        return base64.b64decode(self._update()[key])

    def add(self, key: str, amount: int) -> int:
        """Add ``amount`` to the integer under ``key`` (0 when absent) and return the new value, atomically."""
        def change(d: dict[str, str]) -> int:
            value = int(base64.b64decode(d[key])) + amount if key in d else amount
            d[key] = base64.b64encode(str(value).encode()).decode()
            return value
        return self._update(change)

    def wait(self, keys: list[str], timeout: timedelta | float | None = None) -> None:
        """Block until every key exists; TimeoutError naming the missing ones after the timeout."""
        wait = self.timeout if timeout is None else _seconds(timeout)
        deadline = time.monotonic() + wait
        while True:
            contents = self._update()
            missing = [k for k in keys if k not in contents]
            if not missing:
                return
            if time.monotonic() >= deadline:
                raise TimeoutError(f"FileStore: timed out after {wait:g} s waiting for key(s) {missing}")
            time.sleep(0.01)

    def check(self, keys: list[str]) -> bool:
        """Whether every key exists, without waiting."""
        contents = self._update()
        return all(k in contents for k in keys)

    def delete_key(self, key: str) -> bool:
        """Remove ``key``; whether it existed."""
        return self._update(lambda d: d.pop(key, None) is not None)

    def num_keys(self) -> int:
        """How many keys the store holds."""
        return len([k for k in self._update() if k != "__users__"])

    def set_timeout(self, timeout: timedelta | float) -> None:
        """Change the default timeout of ``get`` and ``wait``."""
        self.timeout = _seconds(timeout)

    def close(self) -> None:
        """Stop using the file; the last store open on it removes it."""
        if not self._open:
            return
        self._open = False
        left = self._update(lambda d: _leave(d))
        if left == 0:
            try:
                os.remove(self.path)
            except FileNotFoundError:
                pass


def _leave(contents: dict[str, str]) -> int:
    users = int(contents.get("__users__", "1")) - 1
    contents["__users__"] = str(users)
    return users
