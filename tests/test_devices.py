"""Devices: ``genesis.device`` objects against torch.device, CUDA availability, and clear errors without a GPU."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from typing import Any, Callable

import pytest
import torch

import genesis
from genesis.ndarray import check_same_device
from tests.helpers import DEVICE, assert_same, to_genesis

no_cuda = pytest.mark.skipif(genesis.cuda.is_available(), reason="checks behaviour on machines without a CUDA GPU")


@pytest.mark.parametrize("spec", [("cpu",), ("cuda:1",), ("cuda", 1), ("cuda:0",), ("cuda", 0), ("cuda:12",)])
def test_device_fields_str_repr_like_torch(spec: tuple) -> None:
    g, t = genesis.device(*spec), torch.device(*spec)
    assert g.type == t.type and g.index == t.index
    assert str(g) == str(t) and repr(g) == repr(t)


def test_bare_cuda_means_device_zero() -> None:
    # torch keeps index None on a bare "cuda" (and then puts tensors on cuda:0); Genesis resolves it at once.
    d = genesis.device("cuda")
    assert d.type == "cuda" and d.index == 0 and str(d) == "cuda:0"
    assert d == genesis.device("cuda:0") == genesis.device("cuda", 0) == genesis.device(0)


def test_device_equality_hash_and_identity() -> None:
    assert genesis.device("cuda:1") == genesis.device("cuda", 1)
    assert genesis.device("cuda:1") != genesis.device("cuda:0")
    assert genesis.device("cpu") != genesis.device("cuda:0")
    assert genesis.device("cpu") != "cpu" and torch.device("cpu") != "cpu"
    assert genesis.device(genesis.device("cuda:1")) is genesis.device("cuda:1")
    table = {genesis.device("cpu"): 1, genesis.device("cuda:1"): 2}
    assert table[genesis.device("cpu")] == 1 and table[genesis.device("cuda", 1)] == 2


def test_device_pickles() -> None:
    for spec in ("cpu", "cuda:1"):
        back = pickle.loads(pickle.dumps(genesis.device(spec)))
        assert back == genesis.device(spec) and str(back) == spec


@pytest.mark.parametrize("args", [("gpu",), ("cuda:x",), ("cuda:-1",), ("cuda:1", 2), ("",), ("cuda:",), (-1,),
                                  ("cuda", -1)])
def test_invalid_device_specs_raise_runtime_error(args: tuple) -> None:
    with pytest.raises(RuntimeError):
        torch.device(*args)
    with pytest.raises(RuntimeError):
        genesis.device(*args)


def test_device_of_wrong_type_raises_type_error() -> None:
    for bad in ((1.5,), (None,), (["cpu"],), ("cuda", 1.5)):
        with pytest.raises(TypeError):
            torch.device(*bad)
        with pytest.raises(TypeError):
            genesis.device(*bad)


def test_cpu_is_always_available() -> None:
    assert genesis.device("cpu").is_available()


def test_cuda_availability_is_consistent() -> None:
    available = genesis.cuda.is_available()
    count = genesis.cuda.device_count()
    assert isinstance(available, bool) and isinstance(count, int)
    assert available == (count > 0)
    assert genesis.device("cuda").is_available() == available
    assert not genesis.device("cuda", max(count, 1) + 7).is_available()


@no_cuda
def test_no_cuda_here() -> None:
    assert genesis.cuda.is_available() is False
    assert genesis.cuda.device_count() == 0
    assert not genesis.device("cuda").is_available()
    assert not genesis.device("cuda:1").is_available()


CUDA_REQUESTS: dict[str, Callable[[], Any]] = {
    "zeros": lambda: genesis.zeros(2, device="cuda"),
    "ones_device_object": lambda: genesis.ones(2, device=genesis.device("cuda", 1)),
    "tensor": lambda: genesis.tensor([1.0, 2.0], device="cuda"),
    "tensor_int_device": lambda: genesis.tensor([1.0], device=0),
    "full": lambda: genesis.full((2,), 3.0, device="cuda:0"),
    "arange": lambda: genesis.arange(3, device="cuda"),
    "empty": lambda: genesis.empty(2, device="cuda"),
    "eye": lambda: genesis.eye(2, device="cuda"),
    "randn": lambda: genesis.randn(2, device="cuda"),
    "rand": lambda: genesis.rand(2, device="cuda"),
    "zeros_like": lambda: genesis.zeros_like(genesis.ones(2), device="cuda"),
    "dot_cuda": lambda: genesis.ones(2).cuda(),
    "dot_cuda_index": lambda: genesis.ones(2).cuda(1),
    "to_string": lambda: genesis.ones(2).to("cuda"),
    "to_device_and_dtype": lambda: genesis.ones(2).to("cuda", genesis.float64),
    "to_keyword": lambda: genesis.ones(2).to(device="cuda:0"),
    "requires_grad_to": lambda: genesis.ones(2, requires_grad=True).to("cuda"),
    "from_numpy_then_cuda": lambda: genesis.from_numpy(__import__("numpy").ones(2)).cuda(),
}


@no_cuda
@pytest.mark.parametrize("name", list(CUDA_REQUESTS))
def test_asking_for_cuda_without_one_raises_clear_runtime_error(name: str) -> None:
    with pytest.raises(RuntimeError, match="CUDA is not available"):
        CUDA_REQUESTS[name]()


@no_cuda
def test_failed_cuda_request_leaves_the_tensor_alone() -> None:
    x = genesis.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError):
        x.to("cuda")
    assert x.device == genesis.device("cpu") and x.tolist() == [1.0, 2.0] and x.grad_fn is None


def test_tensor_device_attributes() -> None:
    g = genesis.ones(2, device=DEVICE)
    t = torch.ones(2)
    assert g.device == genesis.device(DEVICE)
    assert g.is_cuda == (g.device.type == "cuda") and g.is_cpu == (g.device.type == "cpu")
    if g.device.type == "cpu":
        assert g.get_device() == t.get_device() == -1
        assert g.device.index is None
    else:
        assert g.get_device() == g.device.index


def test_to_same_device_or_dtype_returns_self() -> None:
    for lib, dev in ((genesis, DEVICE), (torch, "cpu")):
        x = lib.ones(2, device=dev)
        assert x.to(dev) is x and x.to(x.device) is x and x.to(x.dtype) is x
        assert x.to(dev, x.dtype) is x and x.to(x) is x
        assert x.to(dev, copy=True) is not x
    cpu = genesis.ones(2)
    assert cpu.cpu() is cpu


def test_to_changes_dtype_and_keeps_gradient() -> None:
    def scenario(lib: Any, x: Any) -> Any:
        return (x.to(lib.float32) * 3).to(lib.float64).sum() if lib is torch else \
            (x.to(genesis.float32) * 3).to(genesis.float64).sum()

    t = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    g = to_genesis(t)
    scenario(torch, t).backward()
    scenario(genesis, g).backward()
    assert_same(g.grad, t.grad)


def test_cpu_round_trip_on_test_device() -> None:
    g = genesis.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True, device=DEVICE)
    h = g.cpu().to(DEVICE) * 2
    h.sum().backward()
    assert h.device == g.device and g.grad.tolist() == [[2.0, 2.0], [2.0, 2.0]]


# torch's wording (TensorIterator), after the op name Genesis puts in front of every error.
MISMATCH = (r"Expected all tensors to be on the same device, but found at least two devices, "
            r"(cpu and cuda:0|cuda:0 and cpu)!")


def test_ops_on_mismatched_devices_raise_when_cuda_exists() -> None:
    if not genesis.cuda.is_available():
        pytest.skip("needs a CUDA GPU to hold tensors on two devices")
    a = genesis.ones(2)
    b = genesis.ones(2, device="cuda")
    with pytest.raises(RuntimeError, match=MISMATCH):
        a + b


def test_device_check_message_is_torchs() -> None:
    cpu, cuda = genesis.device("cpu"), genesis.device("cuda:0")
    check_same_device("add", cpu, None, 1.0, cpu)
    with pytest.raises(RuntimeError, match=r"^add: " + MISMATCH + "$"):
        check_same_device("add", cpu, None, cuda)
    with pytest.raises(RuntimeError, match="^linear: Expected .* cuda:0 and cpu!$"):
        check_same_device("linear", cuda, genesis.ones(2).ndarray)


def test_version_is_exposed() -> None:
    assert isinstance(genesis.__version__, str) and genesis.__version__[0].isdigit()


@pytest.mark.parametrize("setting,frozen", [(None, True), ("0", False)])
def test_backend_load_freezes_the_import_heap(setting, frozen):
    # Full garbage collections over torch's and Triton's import-time objects stall training steps; the first use of a
    # backend moves them out of the collector's reach unless GENESIS_GC_FREEZE=0.
    env = {k: v for k, v in os.environ.items() if k != "GENESIS_GC_FREEZE"}
    if setting is not None:
        env["GENESIS_GC_FREEZE"] = setting
    code = "import gc, genesis; n = gc.get_freeze_count(); genesis.ones(2) + 1; print(n, gc.get_freeze_count())"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    before, after = map(int, out.stdout.split())  # an environment may freeze some objects at startup itself
    assert (after > before) is frozen
