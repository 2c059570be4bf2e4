"""ChainDataset and StackDataset against torch, ``collate`` with a type map, datasets that read whole batches
(``__getitems__``), ``DataLoader(in_order=...)``, and spawn-context workers of a script run through
``genesis.torch_compat`` (they compute with Genesis, not the real torch)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch.utils.data as tdata
import torch.utils.data._utils.collate as tcollate

import genesis.utils.data._utils.collate as gcollate
from genesis.utils import data as gdata
from tests.helpers import DEVICE, assert_same, rand, to_genesis

ROOT = Path(__file__).resolve().parents[1]


def _stream(lib_data, values: list[int]):
    class Stream(lib_data.IterableDataset):
        def __iter__(self):
            return iter(values)

        def __len__(self) -> int:
            return len(values)

    return Stream()


def test_chain_dataset_matches_torch() -> None:
    g = gdata.ChainDataset([_stream(gdata, [1, 2]), _stream(gdata, [3])])
    t = tdata.ChainDataset([_stream(tdata, [1, 2]), _stream(tdata, [3])])
    assert list(g) == list(t) and len(g) == len(t) == 3
    g_batches = [b.tolist() for b in gdata.DataLoader(g, batch_size=2)]
    assert g_batches == [b.tolist() for b in tdata.DataLoader(t, batch_size=2)]
    for lib_data in (gdata, tdata):
        with pytest.raises(AssertionError, match="ChainDataset only supports IterableDataset"):
            list(lib_data.ChainDataset([[1, 2]]))


def test_adding_streams_chains_them_and_concat_refuses_them_as_torch() -> None:
    for lib_data in (gdata, tdata):
        both = _stream(lib_data, [1, 2]) + _stream(lib_data, [5])
        assert type(both).__name__ == "ChainDataset" and list(both) == [1, 2, 5]
        with pytest.raises(AssertionError, match="ConcatDataset does not support IterableDataset"):
            lib_data.ConcatDataset([_stream(lib_data, [1])])
        with pytest.raises(AssertionError, match="datasets should not be an empty iterable"):
            lib_data.ConcatDataset([])


def test_stack_dataset_tuple_and_dict_forms_match_torch() -> None:
    x, y = rand(4, 3), rand(4, seed=1)
    gx, gy = to_genesis(x, requires_grad=False), to_genesis(y, requires_grad=False)
    g_tuple, t_tuple = gdata.StackDataset(gx, gy), tdata.StackDataset(x, y)
    assert len(g_tuple) == len(t_tuple) == 4
    for a, b in zip(g_tuple[2], t_tuple[2]):
        assert_same(a, b)
    g_dict, t_dict = gdata.StackDataset(image=gx, label=gy), tdata.StackDataset(image=x, label=y)
    assert list(g_dict[1]) == list(t_dict[1]) == ["image", "label"]
    g_batch = next(iter(gdata.DataLoader(g_dict, batch_size=3)))
    t_batch = next(iter(tdata.DataLoader(t_dict, batch_size=3)))
    assert_same(g_batch["image"], t_batch["image"])
    for lib_data, a, b in ((gdata, gx, gy), (tdata, x, y)):
        with pytest.raises(ValueError, match="Size mismatch between datasets"):
            lib_data.StackDataset(a, b[:3])
        with pytest.raises(ValueError, match="but both types are given"):
            lib_data.StackDataset(a, label=b)
        with pytest.raises(ValueError, match="At least one dataset should be passed"):
            lib_data.StackDataset()


def test_collate_with_a_custom_type_map_matches_torch() -> None:
    def join_strings(batch, *, collate_fn_map=None):
        return "|".join(batch)

    batch = [{"name": "a", "x": [1.0, np.float32(2.0)]}, {"name": "b", "x": [3.0, np.float32(4.0)]}]
    for lib_data, collate in ((gdata, gcollate), (tdata, tcollate)):
        custom = {**collate.default_collate_fn_map, str: join_strings}
        got = collate.collate(batch, collate_fn_map=custom)
        assert got["name"] == "a|b"
        assert [v.tolist() for v in got["x"]] == [[1.0, 3.0], [2.0, 4.0]]
        assert [str(v.dtype).split(".")[-1] for v in got["x"]] == ["float64", "float32"]
        assert lib_data.default_collate(batch)["name"] == ["a", "b"]  # the default map is unchanged
        # A map keyed by a base class serves its subclasses; without a map, leaves are an error.
        assert collate.collate([True, False], collate_fn_map={int: lambda b, collate_fn_map: len(b)}) == 2
        with pytest.raises(TypeError, match="default_collate: batch must contain"):
            collate.collate([1.0, 2.0])


class _Batched:
    """A dataset that reads whole batches (``__getitems__``); ``__getitem__`` must not be used by a loader."""

    def __init__(self, lib_data):
        self.calls = []

    def __len__(self) -> int:
        return 6

    def __getitem__(self, i):
        raise AssertionError("the loader must read batches through __getitems__")

    def __getitems__(self, indices):
        self.calls.append(list(indices))
        return [float(i) for i in indices]


def test_loader_reads_batches_through_getitems_as_torch() -> None:
    for lib_data in (gdata, tdata):
        data = _Batched(lib_data)
        batches = [b.tolist() for b in lib_data.DataLoader(data, batch_size=4)]
        assert batches == [[0.0, 1.0, 2.0, 3.0], [4.0, 5.0]] and data.calls == [[0, 1, 2, 3], [4, 5]]
        subset = lib_data.Subset(_Batched(lib_data), [5, 3, 1])
        assert [b.tolist() for b in lib_data.DataLoader(subset, batch_size=2)] == [[5.0, 3.0], [1.0]]
        assert subset.dataset.calls == [[5, 3], [1]]
        stacked = lib_data.StackDataset(a=_Batched(lib_data), b=list(range(10, 16)))
        assert stacked.__getitems__([4, 1]) == [{"a": 4.0, "b": 14}, {"a": 1.0, "b": 11}]
        pairs = lib_data.StackDataset(_Batched(lib_data), list(range(6)))
        assert pairs.__getitems__([2]) == [(2.0, 2)]


def test_subset_subclass_overriding_only_getitem_is_refused_as_torch() -> None:
    messages = []
    for lib_data in (gdata, tdata):
        class Shifted(lib_data.Subset):
            def __getitem__(self, i):
                return super().__getitem__(i) + 1

        with pytest.raises(NotImplementedError) as err:
            Shifted(list(range(4)), [0, 1])
        messages.append(str(err.value))

        class ShiftedBatches(Shifted):
            def __getitems__(self, indices):
                return [self[i] for i in indices]

        assert [b.tolist() for b in lib_data.DataLoader(ShiftedBatches(list(range(4)), [2, 3]), batch_size=2)] \
            == [[3, 4]]
    assert messages[0] == messages[1]


def test_loader_iterator_is_torchs_kind_of_object() -> None:
    # iter(loader) is an iterator object as torch's: its class name, len() (the loader's), the batches yielded.
    for lib_data in (gdata, tdata):
        loader = lib_data.DataLoader(list(range(7)), batch_size=3)
        it = iter(loader)
        assert type(it).__name__ == "_SingleProcessDataLoaderIter" and iter(it) is it
        assert len(it) == len(loader) == 3
        assert next(it).tolist() == [0, 1, 2] and it._num_yielded == 1
        assert [b.tolist() for b in it] == [[3, 4, 5], [6]] and it._num_yielded == 3
        with pytest.raises(StopIteration):
            next(it)
        assert isinstance(it, lib_data.dataloader._BaseDataLoaderIter)


@pytest.mark.parametrize("in_order", [True, False])
def test_in_order_is_accepted(in_order: bool) -> None:
    loader = gdata.DataLoader(list(range(6)), batch_size=2, in_order=in_order)
    assert len(loader) == 3 and loader.in_order is in_order
    assert [b.tolist() for b in loader] == [[0, 1], [2, 3], [4, 5]]  # Genesis keeps the order in both cases


@pytest.mark.skipif(DEVICE != "cpu", reason="workers run on the CPU; one run is enough")
def test_spawn_workers_of_a_torch_compat_script_use_genesis(tmp_path: Path) -> None:
    script = tmp_path / "spawn_loader.py"
    script.write_text(textwrap.dedent("""
        import torch
        from torch.utils.data import DataLoader, Dataset

        class Rows(Dataset):
            def __len__(self):
                return 4

            def __getitem__(self, i):
                return torch.tensor([float(i)]), type(torch.ones(1)).__module__

        if __name__ == "__main__":
            loader = DataLoader(Rows(), batch_size=2, num_workers=2, multiprocessing_context="spawn")
            batches = list(loader)
            print([b[0].tolist() for b in batches], sorted({m for b in batches for m in b[1]}),
                  type(batches[0][0]).__module__)
    """))
    done = subprocess.run([sys.executable, "-m", "genesis.torch_compat", str(script)], capture_output=True,
                          text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split("\n")[0] == "[[[0.0], [1.0]], [[2.0], [3.0]]] ['genesis.tensor'] genesis.tensor"
