"""genesis.utils.data against torch.utils.data: datasets, samplers, collation, DataLoader (incl. workers), and the
submodule paths scripts import from (``torch.utils.data.sampler``, ``.dataset``, ``.dataloader``, ``._utils``)."""

from __future__ import annotations

import collections
import importlib
import textwrap

import numpy as np
import pytest
import torch
import torch.utils.data as tdata

import genesis
from genesis import torch_compat
from genesis.utils import data as gdata
from tests.helpers import DEVICE, assert_same, check_like_torch, to_genesis


def _tensor_datasets(n: int = 10) -> tuple[gdata.TensorDataset, tdata.TensorDataset]:
    x = torch.arange(n * 3, dtype=torch.float32).reshape(n, 3)
    y = torch.arange(n) % 3
    return gdata.TensorDataset(to_genesis(x), to_genesis(y)), tdata.TensorDataset(x, y)


def _same_batches(g_loader: gdata.DataLoader, t_loader: tdata.DataLoader) -> None:
    g_batches, t_batches = list(g_loader), list(t_loader)
    assert len(g_batches) == len(t_batches) == len(g_loader) == len(t_loader)
    for g, t in zip(g_batches, t_batches):
        assert_same(g, t)


@pytest.mark.parametrize("batch_size, drop_last", [(1, False), (3, False), (3, True), (10, False), (4, True)])
def test_sequential_batches_match_torch(batch_size: int, drop_last: bool) -> None:
    g_ds, t_ds = _tensor_datasets()
    _same_batches(gdata.DataLoader(g_ds, batch_size=batch_size, drop_last=drop_last),
                  tdata.DataLoader(t_ds, batch_size=batch_size, drop_last=drop_last))


def test_batch_size_none_yields_samples() -> None:
    g_ds, t_ds = _tensor_datasets(4)
    _same_batches(gdata.DataLoader(g_ds, batch_size=None), tdata.DataLoader(t_ds, batch_size=None))


def test_sampler_and_batch_sampler_match_torch() -> None:
    g_ds, t_ds = _tensor_datasets()
    order = [9, 0, 4, 4, 7, 1]
    _same_batches(gdata.DataLoader(g_ds, batch_size=4, sampler=order),
                  tdata.DataLoader(t_ds, batch_size=4, sampler=order))
    batches = [[1, 2], [9], [0, 5, 3]]
    _same_batches(gdata.DataLoader(g_ds, batch_sampler=batches), tdata.DataLoader(t_ds, batch_sampler=batches))
    sampler = gdata.BatchSampler(gdata.SequentialSampler(range(10)), 3, drop_last=False)
    assert list(sampler) == list(tdata.BatchSampler(tdata.SequentialSampler(range(10)), 3, False))
    assert len(sampler) == 4 and len(gdata.BatchSampler(range(10), 3, True)) == 3


def test_shuffle_is_a_permutation_reproducible_with_a_generator() -> None:
    g_ds, _ = _tensor_datasets(12)

    def epoch_orders(seed: int) -> list[list[int]]:
        loader = gdata.DataLoader(g_ds, batch_size=5, shuffle=True, generator=genesis.Generator().manual_seed(seed))
        return [[int(v) for b in loader for v in (b[0][:, 0] / 3).tolist()] for _ in range(2)]

    first, second = epoch_orders(1), epoch_orders(1)
    assert first == second
    assert sorted(first[0]) == list(range(12)) and first[0] != first[1]
    assert epoch_orders(2) != first
    genesis.manual_seed(5)
    a = [b[1].tolist() for b in gdata.DataLoader(g_ds, batch_size=12, shuffle=True)]
    genesis.manual_seed(5)
    b = [b[1].tolist() for b in gdata.DataLoader(g_ds, batch_size=12, shuffle=True)]
    assert a == b


def test_random_sampler_with_replacement_and_num_samples() -> None:
    gen = genesis.Generator().manual_seed(0)
    draws = list(gdata.RandomSampler(range(5), replacement=True, num_samples=50, generator=gen))
    assert len(draws) == 50 and set(draws) <= set(range(5)) and len(set(draws)) > 1
    more = list(gdata.RandomSampler(range(4), num_samples=10, generator=gen))
    assert len(more) == 10 and sorted(more[:4]) == [0, 1, 2, 3] and sorted(more[4:8]) == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="num_samples"):
        gdata.RandomSampler(range(4), num_samples=0)
    subset = list(gdata.SubsetRandomSampler([3, 5, 7], generator=gen))
    assert sorted(subset) == [3, 5, 7]


def _weighted(lib: object, *args: object, **kwargs: object) -> list[int]:
    return list(lib.utils.data.WeightedRandomSampler(*args, **kwargs))


@pytest.mark.parametrize("replacement", [True, False])
def test_weighted_random_sampler_lengths(replacement: bool) -> None:
    weights = [0.1, 0.9, 0.4, 0.7, 3.0, 0.6]
    g_sampler = gdata.WeightedRandomSampler(weights, 5, replacement=replacement)
    t_sampler = tdata.WeightedRandomSampler(weights, 5, replacement=replacement)
    assert len(g_sampler) == len(t_sampler) == 5
    assert g_sampler.weights.dtype == genesis.float64 and g_sampler.weights.tolist() == t_sampler.weights.tolist()
    draws = list(g_sampler)
    assert len(draws) == 5 and set(draws) <= set(range(6)) and all(isinstance(i, int) for i in draws)
    if not replacement:
        assert len(set(draws)) == 5
        assert sorted(_weighted(genesis, weights, 6, replacement=False)) == list(range(6))


def test_weighted_random_sampler_generator_and_seed() -> None:
    weights = genesis.tensor([1.0, 2.0, 3.0, 0.0])

    def draws(seed: int) -> list[int]:
        return list(gdata.WeightedRandomSampler(weights, 50, generator=genesis.Generator().manual_seed(seed)))

    assert draws(3) == draws(3) and draws(3) != draws(4)
    assert 3 not in draws(3)  # a zero weight is never drawn
    genesis.manual_seed(7)
    first = list(gdata.WeightedRandomSampler(weights, 50))
    genesis.manual_seed(7)
    assert list(gdata.WeightedRandomSampler(weights, 50)) == first


@pytest.mark.parametrize("replacement", [True, False])
def test_weighted_random_sampler_follows_the_weights(replacement: bool) -> None:
    weights = [1.0, 2.0, 3.0, 4.0]
    expected = np.array(weights) / sum(weights)
    g_gen, t_gen = genesis.Generator().manual_seed(0), torch.Generator().manual_seed(0)
    if replacement:  # one pass of many draws
        g_draws = _weighted(genesis, weights, 40000, generator=g_gen)
        t_draws = _weighted(torch, weights, 40000, generator=t_gen)
    else:  # the first index of many passes without replacement
        g_draws = [_weighted(genesis, weights, 4, replacement=False, generator=g_gen)[0] for _ in range(3000)]
        t_draws = [_weighted(torch, weights, 4, replacement=False, generator=t_gen)[0] for _ in range(3000)]
    g_freq = np.bincount(g_draws, minlength=4) / len(g_draws)
    t_freq = np.bincount(t_draws, minlength=4) / len(t_draws)
    tol = 0.01 if replacement else 0.035
    assert np.abs(t_freq - expected).max() < tol
    assert np.abs(g_freq - expected).max() < tol, (g_freq, expected)


@pytest.mark.parametrize("args, kwargs", [
    (([1.0, 2.0], 0), {}),
    (([1.0, 2.0], -3), {}),
    (([1.0, 2.0], 2.0), {}),
    (([1.0, 2.0], True), {}),
    (([1.0, 2.0], 2), {"replacement": 1}),
    (([[1.0, 2.0]], 2), {}),
    ((3.0, 2), {}),
    (("ab", 2), {}),
    (([1.0, 2.0], 3), {"replacement": False}),
    (([1.0, -1.0], 2), {}),
    (([1.0, float("nan")], 2), {}),
    (([0.0, 0.0], 2), {}),
])
def test_weighted_random_sampler_errors_match_torch(args: tuple, kwargs: dict) -> None:
    assert check_like_torch(lambda lib: _weighted(lib, *args, **kwargs)) is not None


def test_weighted_random_sampler_in_a_loader() -> None:
    g_ds, t_ds = _tensor_datasets(10)
    weights = [0.0] * 5 + [1.0] * 5
    g_loader = gdata.DataLoader(g_ds, batch_size=4, sampler=gdata.WeightedRandomSampler(weights, 10))
    t_loader = tdata.DataLoader(t_ds, batch_size=4, sampler=tdata.WeightedRandomSampler(weights, 10))
    g_batches, t_batches = list(g_loader), list(t_loader)
    assert len(g_loader) == len(t_loader) == len(g_batches) == len(t_batches) == 3
    assert [len(b[1]) for b in g_batches] == [len(b[1]) for b in t_batches] == [4, 4, 2]
    assert all(row[0] >= 15 for b in g_batches for row in b[0].tolist())  # only samples 5..9 have weight


SUBMODULE_NAMES = {
    "sampler": ["Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler", "WeightedRandomSampler",
                "BatchSampler"],
    "dataset": ["Dataset", "IterableDataset", "TensorDataset", "ConcatDataset", "Subset", "random_split"],
    "dataloader": ["DataLoader", "default_collate", "default_convert", "get_worker_info"],
    "_utils.collate": ["default_collate", "default_convert"],
    "distributed": ["DistributedSampler"],
}


@pytest.mark.parametrize("module, name", [(m, n) for m, names in SUBMODULE_NAMES.items() for n in names])
def test_submodule_paths_match_torch(module: str, name: str) -> None:
    assert hasattr(importlib.import_module(f"torch.utils.data.{module}"), name)
    assert getattr(importlib.import_module(f"genesis.utils.data.{module}"), name) is getattr(gdata, name)
    assert hasattr(tdata, name)


def test_submodule_imports_in_a_torch_script(tmp_path) -> None:
    script = tmp_path / "paths.py"
    script.write_text(textwrap.dedent("""
        from torch.utils.data import DistributedSampler, WeightedRandomSampler
        from torch.utils.data._utils.collate import default_collate
        from torch.utils.data.dataloader import DataLoader
        from torch.utils.data.dataset import Subset, TensorDataset
        from torch.utils.data.sampler import SubsetRandomSampler
        import torch.utils.data.sampler as sampler_module
        FOUND = [DistributedSampler, WeightedRandomSampler, default_collate, DataLoader, Subset, TensorDataset,
                 SubsetRandomSampler, sampler_module.BatchSampler]
    """))
    found = torch_compat.run(str(script))["FOUND"]
    assert found == [gdata.DistributedSampler, gdata.WeightedRandomSampler, gdata.default_collate, gdata.DataLoader,
                     gdata.Subset, gdata.TensorDataset, gdata.SubsetRandomSampler, gdata.BatchSampler]


class _Row(list):
    """A list subclass: collation keeps a mutable sequence's type."""


Point = collections.namedtuple("Point", ["x", "label"])
_COUNTS = collections.defaultdict(int, a=1, b=2)
COLLATE_BATCHES = [
    [1.5, 2.0, -3.25],
    [1, 2, 3],
    [1, 2.5],
    [True, False],
    [True, 2],
    [np.arange(3, dtype=np.float32), np.ones(3, dtype=np.float32)],
    [np.arange(4, dtype=np.int16).reshape(2, 2), np.zeros((2, 2), dtype=np.int16)],
    [np.array(1.0), np.array(2.5)],
    [np.int64(3), np.int64(4)],
    [np.float32(1.5), np.float32(2.0)],
    [np.int32(1), np.int32(2)],
    [np.bool_(True), np.bool_(False)],
    [{"a": 1, "b": np.zeros(2)}, {"a": 2, "b": np.ones(2)}],
    [collections.OrderedDict(z=1.0, a=2), collections.OrderedDict(z=3.0, a=4)],
    [_COUNTS, _COUNTS],
    [(1, 2.0), (3, 4.0)],
    [("a", 1), ("b", 2)],
    [("a", b"x", np.str_("p")), ("b", b"y", np.str_("q"))],
    [[1, 2], [3, 4]],
    [[1, [2.0, "s"]], [3, [4.0, "t"]]],
    [[("x", 1)], [("y", 2)]],
    [_Row([1, 2]), _Row([3, 4])],
    [range(2), range(2)],
    [Point(np.float32(1.0), 0), Point(np.float32(2.0), 1)],
    [Point("cat", 0), Point("dog", 1)],
    ["a", "b"],
    ("a", "b"),
    [b"a", b"b"],
]


@pytest.mark.parametrize("batch", COLLATE_BATCHES)
def test_default_collate_matches_torch(batch: list) -> None:
    _compare_collated(gdata.default_collate(batch), tdata.default_collate(batch))


@pytest.mark.parametrize("sample", [sample for batch in COLLATE_BATCHES for sample in batch[:1]] + [
    np.array(["a"]), np.array([1, 2], dtype=np.uint8), ((np.zeros(2), "s"),),
])
def test_default_convert_matches_torch(sample: object) -> None:
    _compare_collated(gdata.default_convert(sample), tdata.default_convert(sample))


def _compare_collated(got: object, expected: object) -> None:
    """Equal tensors, and containers of exactly torch's types (a mapping of the same type, a tuple where torch
    returns a tuple, a defaultdict with its factory) holding equal fields."""
    if isinstance(expected, torch.Tensor):
        assert_same(got, expected)
        return
    assert type(got) is type(expected), f"{type(got).__name__} != torch's {type(expected).__name__}"
    if isinstance(expected, dict):
        assert list(got) == list(expected)
        assert getattr(got, "default_factory", None) is getattr(expected, "default_factory", None)
        for key in expected:
            _compare_collated(got[key], expected[key])
    elif isinstance(expected, (list, tuple)):
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            _compare_collated(g, e)
    elif isinstance(expected, np.ndarray):
        assert np.array_equal(got, expected)
    else:
        assert got == expected


@pytest.mark.parametrize("batch", [
    [object(), object()],
    [np.array(["a"]), np.array(["b"])],
    [np.array([None]), np.array([None])],
    [np.datetime64("2020-01-01"), np.datetime64("2020-01-02")],
    [[1, 2], [3]],
    [np.zeros(2), np.zeros(3)],
])
def test_default_collate_errors_match_torch(batch: list) -> None:
    with pytest.raises(Exception) as expected:
        tdata.default_collate(batch)
    with pytest.raises(type(expected.value)) as got:
        gdata.default_collate(batch)
    if "default_collate" in str(expected.value) or "equal size" in str(expected.value):
        assert str(got.value) == str(expected.value)


def test_default_collate_stacks_tensors() -> None:
    a, b = torch.randn(2, 3), torch.randn(2, 3)
    assert_same(gdata.default_collate([to_genesis(a), to_genesis(b)]), tdata.default_collate([a, b]))
    samples = [(to_genesis(a), "first"), (to_genesis(b), "second")]
    got = gdata.default_collate(samples)
    assert_same(got[0], torch.stack([a, b]))
    assert got[1] == ("first", "second")


def test_collate_fn_is_used() -> None:
    g_ds, _ = _tensor_datasets(6)
    loader = gdata.DataLoader(g_ds, batch_size=4, collate_fn=lambda samples: len(samples))
    assert list(loader) == [4, 2]


def test_subset_concat_random_split() -> None:
    g_ds, t_ds = _tensor_datasets(10)
    g_sub, t_sub = gdata.Subset(g_ds, [7, 2, 5]), tdata.Subset(t_ds, [7, 2, 5])
    assert len(g_sub) == 3
    assert_same(list(g_sub[1]), list(t_sub[1]))
    g_cat = gdata.ConcatDataset([g_sub, g_ds])
    t_cat = tdata.ConcatDataset([t_sub, t_ds])
    assert len(g_cat) == len(t_cat) == 13 and g_cat.cumulative_sizes == t_cat.cumulative_sizes
    for i in (0, 2, 3, 12, -1, -13):
        assert_same(list(g_cat[i]), list(t_cat[i]))
    with pytest.raises(ValueError):
        g_cat[-14]
    assert len(g_sub + g_ds) == 13
    parts = gdata.random_split(g_ds, [0.5, 0.3, 0.2], generator=genesis.Generator().manual_seed(0))
    torch_parts = tdata.random_split(t_ds, [0.5, 0.3, 0.2])
    assert [len(p) for p in parts] == [len(p) for p in torch_parts]
    assert sorted(i for p in parts for i in p.indices) == list(range(10))
    odd = gdata.random_split(range(7), [0.5, 0.5])
    assert [len(p) for p in odd] == [len(p) for p in tdata.random_split(range(7), [0.5, 0.5])]
    with pytest.raises(ValueError, match="Sum of input lengths"):
        gdata.random_split(g_ds, [3, 3])


@pytest.mark.parametrize("lengths", [[3, 3], [1.5, -0.5], [0.25, 0.25, 0.5 + 1e-12]])
def test_random_split_errors_read_as_torchs(lengths: list) -> None:
    messages = []
    for lib in (tdata, gdata):
        with pytest.raises(ValueError) as info:
            lib.random_split(range(10), lengths)
        messages.append(str(info.value))
    assert messages[0] == messages[1]


def test_random_split_warns_of_an_empty_split_as_torch() -> None:
    for lib in (tdata, gdata):
        with pytest.warns(UserWarning, match="Length of split at index 1 is 0"):
            parts = lib.random_split(range(3), [0.1, 0.1, 0.8])
        assert [len(p) for p in parts] == [1, 0, 2]


def test_tensor_dataset_size_mismatch() -> None:
    with pytest.raises(ValueError, match="Size mismatch"):
        gdata.TensorDataset(genesis.zeros(3, device=DEVICE), genesis.zeros(4, device=DEVICE))


class _Squares(gdata.Dataset):
    def __len__(self) -> int:
        return 11

    def __getitem__(self, i: int) -> dict:
        if i == 99:
            raise KeyError("bad index 99")
        return {"x": np.full(2, i * i, dtype=np.float32), "i": i}


def test_workers_produce_the_same_batches_in_order() -> None:
    single = list(gdata.DataLoader(_Squares(), batch_size=3))
    multi = list(gdata.DataLoader(_Squares(), batch_size=3, num_workers=2))
    assert len(multi) == len(single) == 4
    for a, b in zip(single, multi):
        assert genesis.equal(a["x"], b["x"]) and genesis.equal(a["i"], b["i"])


def test_worker_error_is_raised_in_the_main_process() -> None:
    loader = gdata.DataLoader(_Squares(), batch_size=2, sampler=[0, 1, 99, 3], num_workers=2)
    with pytest.raises(KeyError, match="bad index 99"):
        list(loader)


class _Stream(gdata.IterableDataset):
    def __iter__(self):
        info = gdata.get_worker_info()
        start, step = (0, 1) if info is None else (info.id, info.num_workers)
        return iter(range(start, 11, step))

    def __len__(self) -> int:
        return 11


class _TorchStream(tdata.IterableDataset):
    def __iter__(self):
        info = tdata.get_worker_info()
        start, step = (0, 1) if info is None else (info.id, info.num_workers)
        return iter(range(start, 11, step))


@pytest.mark.parametrize("num_workers", [0, 2])
def test_iterable_dataset_matches_torch(num_workers: int) -> None:
    got = [b.tolist() for b in gdata.DataLoader(_Stream(), batch_size=2, num_workers=num_workers)]
    expected = [b.tolist() for b in tdata.DataLoader(_TorchStream(), batch_size=2, num_workers=num_workers)]
    assert got == expected
    assert len(gdata.DataLoader(_Stream(), batch_size=2)) == 6


def test_worker_info_and_seeds() -> None:
    assert gdata.get_worker_info() is None

    class Info(gdata.Dataset):
        def __len__(self) -> int:
            return 4

        def __getitem__(self, i: int) -> list:
            info = gdata.get_worker_info()
            return [info.id, info.num_workers, float(genesis.rand(()).item())]

    loader = gdata.DataLoader(Info(), batch_size=1, num_workers=2, generator=genesis.Generator().manual_seed(3))
    rows = [b for b in loader]
    assert [int(r[0]) for r in rows] == [0, 1, 0, 1] and all(int(r[1]) == 2 for r in rows)
    again = list(gdata.DataLoader(Info(), batch_size=1, num_workers=2, generator=genesis.Generator().manual_seed(3)))
    assert [float(r[2]) for r in rows] == [float(r[2]) for r in again]
    assert float(rows[0][2]) != float(rows[1][2])


@pytest.mark.parametrize("kwargs", [
    {"shuffle": True, "sampler": [0, 1]},
    {"batch_sampler": [[0]], "batch_size": 2},
    {"batch_sampler": [[0]], "drop_last": True},
    {"num_workers": -1},
    {"batch_size": None, "drop_last": True},
    {"prefetch_factor": 2},
    {"num_workers": 1, "prefetch_factor": -1},
    {"persistent_workers": True},
])
def test_invalid_loader_arguments(kwargs: dict) -> None:
    g_ds, t_ds = _tensor_datasets(4)
    with pytest.raises(ValueError):
        tdata.DataLoader(t_ds, **kwargs)
    with pytest.raises(ValueError):
        gdata.DataLoader(g_ds, **kwargs)
    with pytest.raises(ValueError, match="shuffle"):
        gdata.DataLoader(_Stream(), shuffle=True)
    with pytest.raises(ValueError, match="batch_size"):
        gdata.BatchSampler(range(3), 0, False)


@pytest.mark.parametrize("kwargs", [{"prefetch_factor": 2}, {"num_workers": 1, "prefetch_factor": -1},
                                    {"persistent_workers": True}])
def test_worker_option_errors_read_as_torchs(kwargs: dict) -> None:
    messages = []
    for lib_data, ds in zip((tdata, gdata), reversed(_tensor_datasets(4))):
        with pytest.raises(ValueError) as info:
            lib_data.DataLoader(ds, **kwargs)
        messages.append(str(info.value))
    assert messages[0] == messages[1]


def test_prefetch_factor_defaults_as_torchs() -> None:
    # None without workers, 2 with them.
    for lib_data, ds in zip((tdata, gdata), reversed(_tensor_datasets(4))):
        assert lib_data.DataLoader(ds).prefetch_factor is None
        assert lib_data.DataLoader(ds, num_workers=2).prefetch_factor == 2
        assert lib_data.DataLoader(ds, num_workers=2, prefetch_factor=4).prefetch_factor == 4


def _resumed_order_matches(lib, lib_data) -> list[bool]:
    """Whether a sampler restarted from the loader generator's saved state replays the epoch: not when every pass
    draws the workers' base seed from that generator first (torch's loader does, with or without workers)."""
    ds = lib_data.TensorDataset(lib.arange(12))
    gen = lib.Generator().manual_seed(3)
    loader = lib_data.DataLoader(ds, batch_size=3, shuffle=True, generator=gen)
    saved = gen.get_state().clone()
    epoch = [b[0].tolist() for b in loader]
    gen.set_state(saved)
    again = [b[0].tolist() for b in loader]
    replay = lib.Generator()
    replay.set_state(saved)
    direct = [b[0].tolist() for b in lib_data.DataLoader(ds, batch_size=3,
                                                          sampler=lib_data.RandomSampler(ds, generator=replay))]
    return [again == epoch, direct == epoch]


def test_every_pass_draws_a_base_seed_from_the_loader_generator() -> None:
    assert _resumed_order_matches(genesis, gdata) == _resumed_order_matches(torch, tdata) == [True, False]
