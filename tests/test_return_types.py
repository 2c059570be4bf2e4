"""Ops that return several tensors return named tuples with torch's field names (``torch.return_types``): the
fields read by name or by position, and unpack as plain tuples."""

from typing import Any, Callable

import pytest
import torch

import genesis
from tests.helpers import DEVICE, assert_same, rand, to_genesis

CASES: dict[str, Callable[[Any, Any], Any]] = {
    "max": lambda lib, x: lib.max(x, 0),
    "min": lambda lib, x: x.min(1, keepdim=True),
    "sort": lambda lib, x: lib.sort(x, descending=True),
    "topk": lambda lib, x: x.topk(2),
    "kthvalue": lambda lib, x: lib.kthvalue(x, 2, 0),
    "median": lambda lib, x: lib.median(x, 1),
    "nanmedian": lambda lib, x: x.nanmedian(0),
    "mode": lambda lib, x: lib.mode(x),
    "cummax": lambda lib, x: lib.cummax(x, 1),
    "cummin": lambda lib, x: x.cummin(0),
    "aminmax": lambda lib, x: lib.aminmax(x, dim=0),
    "histogram": lambda lib, x: lib.histogram(x, 4),
    "slogdet": lambda lib, x: lib.slogdet(x[:, :3]),
}

# torch returns plain tuples here; so does Genesis.
PLAIN = {
    "var_mean": lambda lib, x: lib.var_mean(x, 0),
    "std_mean": lambda lib, x: lib.std_mean(x, 1),
    "unique": lambda lib, x: lib.unique(x, return_counts=True),
}


@pytest.mark.parametrize("name", CASES)
def test_named_result_fields_match_torch(name: str) -> None:
    x = rand(3, 4, seed=7)
    t = CASES[name](torch, x)
    g = CASES[name](genesis, to_genesis(x))
    fields = type(t).__match_args__  # torch.return_types are structseqs: their field names
    assert type(g)._fields == fields, f"{name}: fields {type(g)._fields} != torch's {fields}"
    for i, field in enumerate(fields):
        assert getattr(g, field) is g[i]
        assert_same(getattr(g, field), getattr(t, field), what=f"{name}.{field}")
    first, second = g
    assert first is g[0] and second is g[1]


@pytest.mark.parametrize("name", PLAIN)
def test_plain_tuple_results_stay_plain(name: str) -> None:
    x = rand(3, 4, seed=8)
    assert type(PLAIN[name](torch, x)) is tuple
    assert type(PLAIN[name](genesis, to_genesis(x))) is tuple


@pytest.mark.parametrize("name", [n for n in CASES if n not in ("aminmax", "histogram", "slogdet")])
def test_values_indices_results_are_named_and_print_as_torch(name: str) -> None:
    """Each op's (values, indices) result has its own type, named as torch's (``genesis.return_types.max``) and
    printed as torch's structseq: ``torch.return_types.max(\\nvalues=...,\\nindices=...)``."""
    x = rand(3, 4, seed=9, requires_grad=False)
    t, g = CASES[name](torch, x.to(DEVICE)), CASES[name](genesis, to_genesis(x))  # one device: the same reprs
    assert type(g).__name__ == type(t).__name__ and type(g).__module__ == "genesis.return_types"
    assert isinstance(g, getattr(genesis.return_types, name))
    assert repr(g).replace("genesis.", "torch.") == repr(t)
