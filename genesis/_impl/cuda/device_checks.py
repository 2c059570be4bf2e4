"""Device-side validity checks: the error flag that check kernels set and the next synchronization reports.

A check kernel (``check_index_kernel``) never makes the host wait: when it finds a bad value (an index out of
range, a class target outside [0, C)) it stores three int64 into the flag: the check's code, the value and the size
it was checked against. The flag lives in mapped pinned host memory, so the kernel writes it directly and the host
reads it without a copy. Every synchronizing call of the runtime (``synchronize``, ``Stream.synchronize``,
``Event.synchronize``, device-to-host copies) calls :func:`raise_pending` after it has waited: the device's writes
are visible then, the read costs a few hundred nanoseconds, and a set flag is cleared and raised as ``RuntimeError``
(torch's class for a device-side assert) with the op's message. The check kernels also replace a bad value by a
safe one, so later kernels stay in bounds and the context survives the error.

``GENESIS_SYNC_CHECKS=1`` in the environment restores eager checks for debugging: each check synchronizes at the
call and raises the CPU's exception class and message there.
"""

from __future__ import annotations

import ctypes
import os

from cuda.bindings import driver as cu

sync_checks = os.environ.get("GENESIS_SYNC_CHECKS", "0") not in ("", "0")

_MAPPED = 1 | 2  # CU_MEMHOSTALLOC_PORTABLE (every context) | CU_MEMHOSTALLOC_DEVICEMAP (a device address)
_SLOTS = 3  # int64 slots: code (0: no error), offending value, size
_host = 0  # host address of the flag (0 until the first check allocates it)
_device = 0  # the same memory as a device address
_messages: list[tuple[type[Exception], str]] = []  # code - 1 -> (the CPU's exception class, message template)
_codes: dict[tuple[type[Exception], str], int] = {}


def flag_pointer() -> int:
    """The flag's device address; allocated on first use (needs a current context)."""
    global _host, _device
    if not _host:
        err, host = cu.cuMemHostAlloc(_SLOTS * 8, _MAPPED)
        if err != cu.CUresult.CUDA_SUCCESS:
            raise RuntimeError(f"CUDA error in cuMemHostAlloc: {err}")
        ctypes.memset(int(host), 0, _SLOTS * 8)
        err, device = cu.cuMemHostGetDevicePointer(int(host), 0)
        if err != cu.CUresult.CUDA_SUCCESS:
            raise RuntimeError(f"CUDA error in cuMemHostGetDevicePointer: {err}")
        _host, _device = int(host), int(device)
    return _device


def code(error: type[Exception], message: str) -> int:
    """The code a check kernel stores for (exception class, message template); templates name ``{value}`` and
    ``{size}`` and are built per op and dim, so there are few of them."""
    key = (error, message)
    c = _codes.get(key)
    if c is None:
        _messages.append(key)
        c = _codes[key] = len(_messages)
    return c


def raise_pending() -> None:
    """Raise the error a check kernel recorded, if any, and clear the flag. Call only after a synchronization."""
    if not _host:
        return
    slots = (ctypes.c_int64 * _SLOTS).from_address(_host)
    c = slots[0]
    if c == 0:
        return
    value, size = slots[1], slots[2]
    slots[0] = 0
    error, message = _messages[c - 1]
    text = message.format(value=value, size=size)
    if sync_checks:
        raise error(text)
    raise RuntimeError(f"{text} (detected on the device at the next synchronization; set GENESIS_SYNC_CHECKS=1 "
                       "to raise at the call)")
