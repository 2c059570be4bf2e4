"""The optimizers' step counts: torch's 0-d tensor in each parameter's state, with its value kept on the host.

torch keeps ``state["step"]`` as a 0-d floating tensor per parameter (float32, float64 under a float64 default
dtype) on the CPU, or on the parameter's device for capturable and fused steps (and always for ASGD), and its
updates read the count as a number (bias corrections, decays). Reading a tensor costs an op, and a device sync for a
GPU tensor, so Genesis keeps the value of each count on the host beside its tensor and only ever writes the tensor:

- a record per step tensor holds the count the optimizer last wrote there and the tensor's version counter at that
  time; a user's in-place change (``state["step"].fill_(0)``) bumps the counter, and the count is then read from the
  tensor once. The optimizer's own writes leave the counter alone (nothing differentiates through a step count).
- the step tensors of parameters updated together (the multi-tensor paths) are 0-d views into one buffer, so a step
  writes the new count of all of them with one fill (one launch on a GPU) instead of one op per parameter. The
  views are made when such a batch first steps, or again when its members change (a parameter without a gradient
  in one step, a loaded state dict): then the batch's step tensors are replaced by new views holding the same count.
"""

from __future__ import annotations

import struct
from typing import Any, Callable

from genesis import dtypes
from genesis.device import device as Device
from genesis.tensor import Tensor, full

# The largest count a float32 tensor holds exactly: a float32 count stops there (count + 1 rounds back), as torch's.
_FLOAT32_EXACT = 2.0**24


def float32_scalar(value: float) -> float:
    """``value`` rounded to float32: torch keeps some optimizer scalars (NAdam's ``mu_product``, ASGD's ``eta`` and
    ``mu``, the step counts) as float32 tensors, and the updates read them back at that precision."""
    return struct.unpack("f", struct.pack("f", value))[0]


def scalar_dtype() -> dtypes.dtype:
    """The dtype of a new step count (torch's ``_get_scalar_dtype``): float32, float64 under a float64 default."""
    return dtypes.float64 if dtypes.get_default_dtype() is dtypes.float64 else dtypes.float32


class _Count:
    """The count held by the step tensors ``steps``: one tensor (then ``buffer`` is that tensor) or all the 0-d views
    of ``buffer``, written together. ``version``: their version counter when recorded; ``whole``: False once one of
    the views was written alone, so that they no longer hold one count."""

    __slots__ = ("steps", "arrays", "buffer", "host", "value", "version", "whole")

    def __init__(self, steps: tuple[Tensor, ...], buffer: Tensor, value: float) -> None:
        self.steps = steps
        self.arrays = tuple(step.ndarray for step in steps)  # a step given another memory (``.data =``) is unknown
        self.buffer = buffer
        # A CPU tensor's numpy() shares its memory (as torch's): a write through it costs a tenth of a tensor op.
        self.host = buffer.numpy() if buffer.device.type == "cpu" else None
        self.value = value
        self.version = buffer._vc[0]
        self.whole = True

    def fill(self, value: float) -> None:
        """Write ``value`` into every step tensor of the record (on a GPU: one fill launch, no sync)."""
        if self.host is not None:
            self.host.fill(value)
        else:
            self.buffer.ndarray.copy_(value)
        self.value = value


class StepCounts:
    """The host values of one optimizer's step tensors.

    Args:
        placement: ``placement(p, group) -> (dtype, device)`` of a new step tensor for parameter ``p``.
    """

    def __init__(self, placement: Callable[[Tensor, dict[str, Any]], tuple[dtypes.dtype, Device]]) -> None:
        self._placement = placement
        # id(step tensor) -> (the tensor, its record, its position in the record). The tensor is kept, so the id is
        # not reused while listed.
        self._records: dict[int, tuple[Tensor, _Count, int]] = {}

    def count(self, state: dict[str, Any]) -> float:
        """The step count of one parameter's state (0 before its first step), read from the host record."""
        step = state.get("step")
        if step is None:
            return 0.0
        if step.__class__ is not Tensor:
            return float(step)  # a number: a user's, or an older checkpoint's
        record = self._record(step)
        if record is not None:
            return record.value
        return float(step.item())  # changed in place by the user, or not written by this optimizer yet

    def shared_count(self, states: list[dict[str, Any]]) -> float | None:
        """The step count shared by ``states`` (updated together); None if their counts differ."""
        block = self._block(states)
        if block is not None:
            return block.value
        counts = {self.count(state) for state in states}
        return counts.pop() if len(counts) == 1 else None

    def next_count(self, state: dict[str, Any], count: float, p: Tensor, group: dict[str, Any]) -> float:
        """``count + 1`` as the step tensor of ``state`` (of parameter ``p``) holds it: a float32 count stops at
        2**24, as torch's."""
        new = count + 1.0
        if new <= _FLOAT32_EXACT:
            return new
        step = state.get("step")
        dtype = step.dtype if isinstance(step, Tensor) else self._placement(p, group)[0]
        return new if dtype is dtypes.float64 else float32_scalar(new)

    def advance(self, states: list[dict[str, Any]], count: float, p: Tensor, group: dict[str, Any]) -> float:
        """Count one more step for ``states`` (of parameters updated together, ``p`` one of them), which all hold
        ``count``; returns the new count."""
        new = self.next_count(states[0], count, p, group)
        self.write(states, new, p, group)
        return new

    def advance_one(self, state: dict[str, Any], p: Tensor, group: dict[str, Any]) -> float:
        """``advance`` for one parameter updated alone (the per-parameter path, once per parameter and step)."""
        step = state.get("step")
        record = self._record(step) if step.__class__ is Tensor else None
        if record is None or len(record.steps) != 1:
            return self.advance([state], self.count(state), p, group)
        new = record.value + 1.0  # the common case, its own record: advance without its general checks
        if new > _FLOAT32_EXACT and step.dtype is not dtypes.float64:
            new = float32_scalar(new)
        record.fill(new)
        return new

    def write(self, states: list[dict[str, Any]], value: float, p: Tensor, group: dict[str, Any]) -> None:
        """Set the step count of every state in ``states`` to ``value``, making step tensors where missing."""
        block = self._block(states)
        if block is not None:
            block.fill(value)
            return
        if len(states) > 1:
            self._new_block(states, value, p, group)
            return
        state = states[0]
        step = state.get("step")
        if step.__class__ is Tensor:
            self._forget(step)
            record = _Count((step,), step, value)
            record.fill(value)
        else:
            dtype, device = self._placement(p, group)
            step = full((), value, dtype=dtype, device=device)
            _set_step(state, step)
            record = _Count((step,), step, value)
        self._records[id(step)] = (step, record, 0)

    def remember(self, step: Tensor, value: float) -> None:
        """Record the count a step tensor holds (a loaded one, whose value was read for free on the host)."""
        self._records[id(step)] = (step, _Count((step,), step, value), 0)

    def _record(self, step: Tensor) -> _Count | None:
        """The record of ``step`` if it still knows its count (the tensor unchanged since the optimizer wrote it)."""
        entry = self._records.get(id(step))
        if entry is None or entry[0] is not step:
            return None
        record = entry[1]
        if record.version != step._vc[0] or record.arrays[entry[2]] is not step.ndarray:
            return None
        return record

    def _block(self, states: list[dict[str, Any]]) -> _Count | None:
        """The record whose step tensors are exactly those of ``states``, in order, still holding one count."""
        step = states[0].get("step")
        record = self._record(step) if step.__class__ is Tensor else None
        if record is None or not record.whole or len(record.steps) != len(states):
            return None
        if len(states) > 1:
            for state, known, array in zip(states, record.steps, record.arrays):
                known_now = state.get("step")
                if known_now is not known or known_now.ndarray is not array:
                    return None
        return record

    def _forget(self, step: Any) -> None:
        """Drop the record of ``step`` (about to be written alone or replaced): its batch no longer holds one count."""
        entry = self._records.pop(id(step), None)
        if entry is not None and entry[0] is step:
            entry[1].whole = False
        elif entry is not None:
            self._records[id(step)] = entry  # another tensor's: keep it

    def _new_block(self, states: list[dict[str, Any]], value: float, p: Tensor, group: dict[str, Any]) -> None:
        """Give ``states`` step tensors that are views into one new buffer holding ``value``."""
        step = states[0].get("step")
        dtype, device = (step.dtype, step.device) if isinstance(step, Tensor) else self._placement(p, group)
        buffer = full((len(states),), value, dtype=dtype, device=device)
        views = tuple(buffer[i] for i in range(len(states)))
        record = _Count(views, buffer, value)
        for i, (state, view) in enumerate(zip(states, views)):
            self._forget(state.get("step"))
            _set_step(state, view)
            self._records[id(view)] = (view, record, i)


def _set_step(state: dict[str, Any], step: Tensor) -> None:
    """Set ``state["step"]``; a new entry goes first, where torch creates it (state dicts list entries alike)."""
    if "step" in state:
        state["step"] = step
        return
    rest = dict(state)
    state.clear()
    state["step"] = step
    state.update(rest)
