"""The state-dict protocol as torch defines it: ``_load_from_state_dict`` overrides, the four state-dict hooks, extra
state and version metadata. Each scenario runs on torch and on Genesis and the outcomes must agree."""

import pytest
import torch

import genesis
from tests.helpers import DEVICE

LIBS = [torch, genesis]


def _device(lib: object) -> str:
    return DEVICE if lib is genesis else "cpu"


def _renaming_model(lib: object) -> object:
    """A module whose ``_load_from_state_dict`` renames an old layout (``fc.*`` became ``lin.*``)."""
    nn = lib.nn

    class Renamed(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = nn.Linear(3, 2)

        def _load_from_state_dict(self, sd, prefix, metadata, strict, missing, unexpected, errors):
            for key in list(sd):
                if key.startswith(prefix + "fc."):
                    sd[prefix + "lin." + key[len(prefix) + 3:]] = sd.pop(key)
            super()._load_from_state_dict(sd, prefix, metadata, strict, missing, unexpected, errors)

    return nn.Sequential(Renamed()).to(_device(lib))


@pytest.mark.parametrize("strict", [True, False])
def test_load_from_state_dict_override_renames_keys(strict: bool):
    results = []
    for lib in LIBS:
        model = _renaming_model(lib)
        old = {"0.fc.weight": lib.arange(6.0).reshape(2, 3), "0.fc.bias": lib.tensor([5.0, 7.0])}
        keys = model.load_state_dict(old, strict=strict)
        results.append((keys.missing_keys, keys.unexpected_keys, model[0].lin.weight.tolist(),
                        model[0].lin.bias.tolist()))
    assert results[0] == results[1]
    assert results[1][2] == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]


def test_unexpected_and_missing_keys_per_module():
    messages = []
    for lib in LIBS:
        model = _renaming_model(lib)
        bad = {"0.lin.weight": lib.ones(2, 3), "0.lin.extra": lib.zeros(1), "1.x": lib.zeros(1)}
        keys = model.load_state_dict(bad, strict=False)
        assert sorted(keys.unexpected_keys) == ["0.lin.extra", "1.x"]
        assert keys.missing_keys == ["0.lin.bias"]
        with pytest.raises(RuntimeError) as info:
            model.load_state_dict(bad)
        messages.append(str(info.value).split("\n", 1)[1])
    assert messages[0] == messages[1]


def test_failed_load_changes_nothing_even_after_overrides_ran():
    model = _renaming_model(genesis)
    before = model[0].lin.weight.tolist()
    with pytest.raises(RuntimeError, match="size mismatch for 0.lin.bias"):
        model.load_state_dict({"0.fc.weight": genesis.ones(2, 3), "0.fc.bias": genesis.zeros(3)})
    assert model[0].lin.weight.tolist() == before


def _hook_log(lib: object) -> list:
    """What the four state-dict hooks of a Linear see during one save and one partial load."""
    log = []
    lin = lib.nn.Linear(2, 2).to(_device(lib))
    lin.register_state_dict_pre_hook(lambda m, prefix, keep_vars: log.append(("save-pre", prefix, keep_vars)))
    lin.register_state_dict_post_hook(lambda m, sd, prefix, meta: log.append(("save-post", sorted(sd), meta)))
    lin.register_load_state_dict_pre_hook(
        lambda m, sd, prefix, meta, strict, missing, unexpected, errors:
        log.append(("load-pre", type(m).__name__, sorted(sd), prefix, meta, strict)))

    def forgive_bias(m, keys) -> None:
        log.append(("load-post", list(keys.missing_keys)))
        keys.missing_keys.remove("bias")

    lin.register_load_state_dict_post_hook(forgive_bias)
    sd = lin.state_dict()
    keys = lin.load_state_dict({"weight": sd["weight"]})
    log.append(("result", keys.missing_keys, keys.unexpected_keys))
    return log


def test_state_dict_hooks_order_and_arguments():
    assert _hook_log(torch) == _hook_log(genesis)


def test_post_hook_must_not_return_a_value():
    for lib in LIBS:
        lin = lib.nn.Linear(2, 2)
        lin.register_load_state_dict_post_hook(lambda m, keys: keys)
        with pytest.raises((RuntimeError, AssertionError)):
            lin.load_state_dict(lin.state_dict())


def test_extra_state_round_trip():
    for lib in LIBS:
        class Counter(lib.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.count = 3

            def get_extra_state(self) -> dict:
                return {"count": self.count}

            def set_extra_state(self, state: dict) -> None:
                self.count = state["count"]

        module = Counter()
        sd = module.state_dict()
        assert list(sd) == ["_extra_state"]
        module.count = 9
        assert not module.load_state_dict(sd).missing_keys
        assert module.count == 3
        with pytest.raises(RuntimeError, match="Missing key"):
            module.load_state_dict({})


def test_version_metadata_and_old_batchnorm_checkpoints():
    outcomes = []
    for lib in LIBS:
        bn = lib.nn.BatchNorm1d(3).to(_device(lib))
        sd = bn.state_dict()
        assert sd._metadata[""] == {"version": 2}
        del sd["num_batches_tracked"]
        # With version 2 metadata the count is required; a plain dict (no metadata) is an old checkpoint.
        with pytest.raises(RuntimeError) as info:
            bn.load_state_dict(sd)
        outcomes.append(str(info.value).split("\n", 1)[1])
        assert bn.load_state_dict(dict(sd)).missing_keys == []
    assert outcomes[0] == outcomes[1]


def test_metadata_of_nested_modules():
    names = []
    for lib in LIBS:
        model = lib.nn.Sequential(lib.nn.Linear(2, 2), lib.nn.Sequential(lib.nn.BatchNorm1d(2)))
        names.append(dict(model.state_dict()._metadata))
    assert names[0] == names[1]
