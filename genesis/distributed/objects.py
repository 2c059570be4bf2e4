"""The restricted format of the object collectives (``broadcast_object_list``, ``all_gather_object``).

Objects travel as JSON with tags for the types JSON lacks, so decoding data from another rank can never run code
(torch pickles; Genesis does not). Supported: None, bool, int, float (inf and nan included), str, bytes, list, tuple,
and dict with str, int, float, bool or None keys, nested freely. Anything else raises TypeError naming the type;
send tensors with the tensor collectives.
"""

from __future__ import annotations

import base64
import json
import math
from typing import Any

_KEY_TYPES = (str, int, float, bool, type(None))


def _encode(obj: Any) -> Any:
    if obj is None or isinstance(obj, (bool, str)):
        return obj
    if isinstance(obj, int):
        return obj
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else {"__float__": repr(obj)}
    if isinstance(obj, list):
        return [_encode(v) for v in obj]
    if isinstance(obj, tuple):
        return {"__tuple__": [_encode(v) for v in obj]}
    if isinstance(obj, (bytes, bytearray)):
        return {"__bytes__": base64.b64encode(bytes(obj)).decode()}
    if isinstance(obj, dict):
        for k in obj:
            if not isinstance(k, _KEY_TYPES):
                raise TypeError(f"object collectives: dict keys of type {type(k).__name__} are not supported")
        return {"__dict__": [[_encode(k), _encode(v)] for k, v in obj.items()]}
    raise TypeError(f"object collectives: objects of type {type(obj).__name__} are not supported (None, bool, int, "
                    "float, str, bytes, list, tuple and dict are; send tensors with the tensor collectives)")


def _decode(obj: Any) -> Any:
    if isinstance(obj, list):
        return [_decode(v) for v in obj]
    if not isinstance(obj, dict):
        return obj
    (tag, value), = obj.items()
    if tag == "__float__":
        return float(value)
    if tag == "__tuple__":
        return tuple(_decode(v) for v in value)
    if tag == "__bytes__":
        return base64.b64decode(value)
    if tag == "__dict__":
        return {_decode(k): _decode(v) for k, v in value}
    raise ValueError(f"object collectives: unknown tag {tag!r} in received data")


def dumps(obj: Any) -> bytes:
    """Encode ``obj`` (see the module docstring for what is supported)."""
    return json.dumps(_encode(obj), allow_nan=False, separators=(",", ":")).encode()


def loads(data: bytes) -> Any:
    """Decode what :func:`dumps` produced on any rank."""
    return _decode(json.loads(data.decode()))
