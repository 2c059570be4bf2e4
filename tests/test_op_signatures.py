"""The ops' parameter names follow torch's, so keyword calls (``genesis.exp(input=t)``, ``genesis.sum(input=t,
dim=0)``) port as they are. torch's names come from ``inspect.signature`` for its Python functions and from the
signature line that opens a builtin's docstring (its first overload)."""

import inspect

import pytest
import torch

import genesis
from genesis.ops import registry
from tests.helpers import check, rand

# Public names whose positional parameters deliberately differ from torch's, with the reason.
_SHARED_WITH_METHOD = ("one function serves torch.{0}(input, {1}) and Tensor.{0}(*{1}): {1} come as varargs or one "
                       "sequence")
_LINALG = "the genesis.linalg function, whose torch.linalg counterpart names the matrix A"
EXCEPTIONS: dict[str, str] = {
    "permute": _SHARED_WITH_METHOD.format("permute", "dims"),
    "reshape": _SHARED_WITH_METHOD.format("reshape", "shape"),
    "tile": _SHARED_WITH_METHOD.format("tile", "dims"),
    "flip": _SHARED_WITH_METHOD.format("flip", "dims") + " (or dims=)",
    "concatenate": "cat's function (dim); torch's docstring says axis, but torch takes dim= as well",
    "true_divide": "torch's docstring says (dividend, divisor); its schema takes input, other, as Genesis",
    "det": _LINALG,
    "inverse": _LINALG + " (linalg.inv)",
    "logdet": _LINALG,
    "slogdet": _LINALG,
    "matrix_power": _LINALG,
    "nuclear_norm": "one function serves torch's overloads nuclear_norm(input, keepdim) and (input, dim, keepdim)",
}


def _positional(fn: object) -> list[str]:
    """Positional parameter names; ``*`` for a ``*args`` parameter (whose name no call can spell). ``out`` is left
    out: Genesis takes no ``out=`` argument where torch's Python functions take it positionally."""
    names = []
    for p in inspect.signature(fn).parameters.values():
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.name != "out":
            names.append(p.name)
        elif p.kind is p.VAR_POSITIONAL:
            names.append("*")
    return names


def _split_top_level(text: str) -> list[str]:
    """Split a parameter list at the commas outside brackets (``dims=[0, 1]`` stays whole)."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += ch in "([{"
        depth -= ch in ")]}"
        if ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    return parts + [text[start:]]


def _closing(text: str, start: int) -> int:
    """The index of the bracket that closes the one at ``start``."""
    depth = 0
    for i in range(start, len(text)):
        depth += text[i] in "([{"
        depth -= text[i] in ")]}"
        if depth == 0:
            return i
    return len(text)


# Parameters of some torch builds' docstring signatures that Genesis does not take: torch 2.11 documents an
# ``out_dtype`` overload of mm/bmm/addmm/baddbmm first (torch 2.13, the CPU oracle, lists the plain signature).
_NOT_TAKEN = ("out", "out_dtype")


def _from_docstring(name: str) -> list[str] | None:
    """The positional parameters of the signature line that opens ``torch.<name>``'s docstring, or None."""
    doc = (getattr(torch, name).__doc__ or "").lstrip()
    if not doc.startswith(f"{name}("):
        return None
    names = []
    for part in _split_top_level(doc[len(name) + 1:_closing(doc, len(name))]):
        part = part.replace("\\", "").split("=")[0].split(":")[0].strip()
        if part == "*":
            break
        if part.startswith("*"):
            names.append("*")
        elif part and part not in _NOT_TAKEN:
            names.append(part)
    return names


# torch's documented signatures of functions whose Python signature and docstring give no names (a dispatcher taking
# ``*args, **kwargs``, a docstring opening with prose, a builtin documented only under ``Tensor.put_``).
DOCUMENTED: dict[str, list[str]] = {
    "lu": ["A", "pivot", "get_infos"],
    "chain_matmul": ["*"],
    "put": ["input", "index", "source", "accumulate"],
    "as_strided_": ["input", "size", "stride", "storage_offset"],
    "detach": ["input"],
    "fill": ["input", "value"],
    "frobenius_norm": ["input", "dim", "keepdim"],
    "nuclear_norm": ["input", "keepdim"],
    "unsafe_split_with_sizes": ["input", "split_sizes", "dim"],
}


def torch_positional(name: str) -> tuple[list[str], bool] | None:
    """torch's positional parameter names for ``torch.<name>`` and whether they are all of them (a Python
    signature) or those of the first overload (a builtin's docstring); None when neither can be read. A Python
    function taking only ``*args`` (einsum, unique's dispatcher) is read from its docstring too; the few in
    ``DOCUMENTED`` come from torch's documentation."""
    if name in DOCUMENTED:
        return DOCUMENTED[name], True
    try:
        names = _positional(getattr(torch, name))
    except (TypeError, ValueError):
        names = None
    if names is not None and names != ["*"]:
        return names, True
    names = _from_docstring(name)
    return None if names is None else (names, False)


SHARED = sorted({name for name in registry.namespace() if hasattr(torch, name)})
READ = {name: torch_positional(name) for name in SHARED}


@pytest.mark.parametrize("name", SHARED)
def test_parameter_names_match_torch(name: str) -> None:
    if READ[name] is None:
        pytest.skip(f"torch.{name} has no readable signature")
    if name in EXCEPTIONS:
        pytest.skip(EXCEPTIONS[name])
    expected, complete = READ[name]
    got = _positional(getattr(genesis, name))
    assert got[:1] == expected[:1], f"{name}: first parameter {got[:1]} != torch's {expected[:1]}"
    if complete:
        assert got == expected, f"{name}: positional parameters {got} != torch's {expected}"
    else:  # Genesis may take more positionally, from torch's other overloads (sum's dim, keepdim...)
        assert got[:len(expected)] == expected, f"{name}: positional parameters {got} don't start with {expected}"


def test_most_torch_signatures_are_read() -> None:
    # torch's private builtins (the _foreach_* family) carry no docstring to read: the share counts public names.
    public = [name for name in SHARED if not name.startswith("_")]
    unreadable = sorted(name for name in public if READ[name] is None)
    assert len(unreadable) <= len(public) // 10, f"{len(unreadable)} of {len(public)} unreadable: {unreadable}"


def test_exceptions_are_shared_names() -> None:
    assert set(EXCEPTIONS) <= set(SHARED)


def test_keyword_calls_port_from_torch() -> None:
    x, y = rand(3, 4), rand(3, 4, seed=1)
    check(lambda lib, t: lib.exp(input=t), x)
    check(lambda lib, t: lib.sum(input=t, dim=0), x)
    check(lambda lib, t: lib.clamp(input=t, min=0.2), x)
    check(lambda lib, t: lib.clip(input=t, min=0.2, max=0.7), x)
    check(lambda lib, t: lib.nan_to_num(input=t, nan=0.0), x)
    check(lambda lib, t: lib.round(input=t, decimals=1), x)
    check(lambda lib, t, u: lib.add(input=t, other=u, alpha=2), x, y)
    check(lambda lib, t, u: lib.dot(input=t[0], tensor=u[0]), x, y)
    check(lambda lib, t: lib.swapaxes(input=t, axis0=0, axis1=1), x)
    check(lambda lib, t: lib.split(tensor=t, split_size_or_sections=2, dim=1), x)
    check(lambda lib, t: lib.isnan(input=t), x)
