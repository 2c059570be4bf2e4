"""The memory behind tensors against torch: ``untyped_storage()``, the deprecated ``storage()``, ``is_set_to``,
``record_stream``, and the process settings that go with them (``set_warn_always``)."""

import warnings

import pytest
import torch

import genesis
from tests.helpers import DEVICE, to_genesis


def _pair() -> tuple[genesis.Tensor, torch.Tensor]:
    t = torch.arange(6.0).reshape(2, 3)
    return to_genesis(t, requires_grad=False), t


def test_untyped_storage_counts_the_whole_buffer_in_bytes() -> None:
    g, t = _pair()
    gs, ts = g[1].untyped_storage(), t[1].untyped_storage()
    assert (gs.nbytes(), gs.size(), len(gs), gs.element_size()) == (ts.nbytes(), ts.size(), len(ts), ts.element_size())
    assert gs.device == g.device
    if DEVICE == "cpu":
        assert gs.tolist() == ts.tolist()


def test_views_of_one_tensor_share_the_storage_and_its_address() -> None:
    g, t = _pair()
    for view in (lambda x: x[1], lambda x: x.t(), lambda x: x.reshape(6)[2:]):
        assert view(g).untyped_storage().data_ptr() == g.untyped_storage().data_ptr()
        assert view(t).untyped_storage().data_ptr() == t.untyped_storage().data_ptr()
    assert g.untyped_storage().data_ptr() == g.data_ptr()
    assert g.untyped_storage() is g[0].untyped_storage()  # one object while it is alive, as torch's
    assert g.clone().untyped_storage().data_ptr() != g.untyped_storage().data_ptr()


def test_typed_storage_counts_elements_and_warns_as_torch() -> None:
    g, t = _pair()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        genesis.set_warn_always(True)
        try:
            gs = g[1].storage()
        finally:
            genesis.set_warn_always(False)
    assert any("TypedStorage is deprecated" in str(w.message) for w in caught)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ts = t[1].storage()
    assert (gs.size(), len(gs), gs.nbytes(), gs.element_size()) == (ts.size(), len(ts), ts.nbytes(), ts.element_size())
    assert gs.dtype == genesis.float32 and gs.tolist() == ts.tolist()
    assert gs.untyped() is gs._untyped_storage is g.untyped_storage()
    assert gs.data_ptr() == g.data_ptr()


def test_warn_always_flag() -> None:
    assert genesis.is_warn_always_enabled() is torch.is_warn_always_enabled() is False
    genesis.set_warn_always(True)
    try:
        assert genesis.is_warn_always_enabled()
    finally:
        genesis.set_warn_always(False)


def test_is_set_to() -> None:
    g, t = _pair()
    for other in (lambda x: x, lambda x: x[1], lambda x: x.view(6), lambda x: x.clone(), lambda x: x[:]):
        assert g.is_set_to(other(g)) == t.is_set_to(other(t))


@pytest.mark.skipif(DEVICE != "cpu", reason="torch raises for CPU tensors only")
def test_record_stream_raises_for_cpu_tensors_as_torch() -> None:
    with pytest.raises(NotImplementedError):
        torch.ones(2).record_stream(torch.Stream(device="cpu"))
    with pytest.raises(NotImplementedError, match="record_stream"):
        genesis.ones(2).record_stream(None)


@pytest.mark.skipif(DEVICE != "cuda", reason="streams are CUDA's")
def test_record_stream_accepts_a_cuda_stream() -> None:
    x = genesis.ones(1024, device="cuda")
    s = genesis.cuda.Stream()
    with genesis.cuda.stream(s):
        y = x * 2
    x.record_stream(s)
    del x
    s.synchronize()
    assert float(y.sum().item()) == 2048.0
