"""The op registry (``genesis.ops.registry``) is the one declaration of every op: each row is reachable where it
says, nothing is declared twice, and the tables generated from it (the namespace, Tensor methods, in-place
variants, operators, the autocast policy) agree with it.
"""

from collections import Counter

import pytest

import genesis
from genesis.ops import autocast, registry


def test_no_name_is_declared_twice_for_the_same_role() -> None:
    functions = Counter(op.name for op in registry.OPS if op.function)
    methods = Counter(op.name for op in registry.OPS if op.method)
    twice = [n for n, k in functions.items() if k > 1] + [n for n, k in methods.items() if k > 1]
    assert not twice, f"declared twice: {twice}"


def _is_row_fn(found, op: registry.Op) -> bool:
    """``found`` is the row's function, or wrappers of exactly it (numpy's keyword names, the namespace's ``out=``)."""
    while found is not op.fn and hasattr(found, "__wrapped__"):
        found = found.__wrapped__
    return found is op.fn


def test_every_function_row_is_the_genesis_function() -> None:
    for op in registry.OPS:
        if op.function:
            assert _is_row_fn(getattr(genesis, op.name), op), op.name
    assert genesis.ops.__all__ == registry.namespace()


def test_every_method_row_is_bound_on_tensor() -> None:
    for op in registry.OPS:
        if op.method:
            assert _is_row_fn(getattr(genesis.Tensor, op.name), op), op.name
        if op.inplace:
            assert getattr(genesis.Tensor, f"{op.name}_").__name__ == f"{op.name}_", op.name


@pytest.mark.parametrize("op", [op for op in registry.OPS if op.inplace], ids=lambda op: op.name)
def test_inplace_kinds_are_known(op: registry.Op) -> None:
    assert op.inplace in (registry.BINARY, registry.KERNEL, registry.GENERAL)
    assert (op.inplace == registry.KERNEL) == (op.kernel is not None)


def test_operators_are_bound() -> None:
    for dunder, target in registry.OPERATORS.items():
        expected = getattr(genesis.Tensor, target) if isinstance(target, str) else target
        assert getattr(genesis.Tensor, dunder) is expected, dunder


def test_the_autocast_policy_is_the_registry_rules() -> None:
    assert autocast.POLICY == registry.autocast_policy()
    rules = {autocast.LOWER, autocast.FP32, autocast.FP16, autocast.PROMOTE, autocast.BANNED}
    for table in autocast.POLICY.values():
        assert set(table.values()) <= rules
    # The nn.functional rows name real functions of the layer above.
    missing = [name for name in registry.NN_AUTOCAST if not hasattr(genesis.nn.functional, name)]
    assert not missing, missing
    # The recurrent rows name the modes of the recurrent layers.
    assert {m.lower() for m in ("LSTM", "GRU", "RNN_TANH", "RNN_RELU")} == set(registry.RNN_AUTOCAST)


def test_ops_with_dim_take_numpy_keyword_names() -> None:
    # torch's argument parser accepts axis= for dim= and keepdims= for keepdim= (numpy's names)
    x = genesis.arange(6.0).reshape(2, 3)
    assert x.sum(1, keepdims=True).tolist() == [[3.0], [12.0]]
    assert genesis.mean(x, axis=0).tolist() == [1.5, 2.5, 3.5]
    assert tuple(genesis.cat([x, x], axis=1).shape) == (2, 6)
    assert x.argmax(axis=1).tolist() == [2, 2]
    with pytest.raises(TypeError):
        x.sum(dim=1, axis=1)
    wrapped = [op.name for op, fn in registry.callables().items() if fn is not op.fn]
    assert "sum" in wrapped and "add" not in wrapped  # ops without dim/keepdim are not wrapped
