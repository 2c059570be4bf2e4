"""torch API that PyTorch programs use and Genesis added for them: ``genesis.accelerator``, default devices and
``with genesis.device(...)``, the legacy typed constructors, ``tensor()`` from any sequence, and dropout2d/3d on
every input rank as torch draws and warns."""

from __future__ import annotations

import collections
import subprocess
import sys
import typing
import warnings

import numpy as np
import pytest
import torch

import genesis
import genesis.nn.functional as F
from tests.helpers import DEVICE, TORCH_DTYPE, assert_same, to_genesis


def test_accelerator_matches_cuda() -> None:
    available = genesis.cuda.is_available()
    assert genesis.accelerator.is_available() is available
    assert genesis.accelerator.device_count() == (genesis.cuda.device_count() if available else 0)
    if available:
        assert genesis.accelerator.current_accelerator() == genesis.device("cuda")
        assert genesis.accelerator.current_device_index() == genesis.cuda.current_device()
        genesis.accelerator.set_device_index(0)
        genesis.accelerator.synchronize()
    else:
        assert genesis.accelerator.current_accelerator() is None
        for fn, torch_fn in ((genesis.accelerator.current_device_index, torch.accelerator.current_device_index),
                             (genesis.accelerator.synchronize, torch.accelerator.synchronize)):
            with pytest.raises(RuntimeError, match="none is available") as err:
                fn()
            if not torch.accelerator.is_available():
                with pytest.raises(RuntimeError) as torch_err:
                    torch_fn()
                assert str(err.value) == str(torch_err.value)


def test_device_pick_idiom() -> None:
    """The idiom of PyTorch's examples picks the GPU when there is one, else the CPU."""
    acc = genesis.accelerator.current_accelerator()
    dev = acc if genesis.accelerator.is_available() else genesis.device("cpu")
    assert genesis.zeros(2, device=dev).device.type == ("cuda" if genesis.cuda.is_available() else "cpu")


def test_default_device_and_device_context() -> None:
    assert genesis.get_default_device() == genesis.device("cpu")
    with genesis.device(DEVICE) as dev:
        assert dev == genesis.device(DEVICE) and genesis.get_default_device() == dev
        for t in (genesis.zeros(2), genesis.randn(2), genesis.tensor([1, 2]), genesis.arange(3),
                  genesis.empty(2), genesis.full((2,), 3.0), genesis.randint(0, 3, (2,))):
            assert t.device == dev
        with genesis.device("cpu"):
            assert genesis.ones(1).device.type == "cpu"
        assert genesis.get_default_device() == dev
    assert genesis.get_default_device() == genesis.device("cpu")
    # An explicit device wins; a tensor argument keeps its own device.
    with genesis.device(DEVICE):
        assert genesis.zeros(1, device="cpu").device.type == "cpu"
        assert genesis.tensor(genesis.ones(1, device="cpu")).device.type == "cpu"
    if not genesis.cuda.is_available():
        with genesis.device("cuda"), pytest.raises(RuntimeError, match="CUDA is not available"):
            genesis.zeros(1)
        assert genesis.zeros(1).device.type == "cpu"  # the context was left on the error
    genesis.set_default_device(DEVICE)
    try:
        assert genesis.zeros(1).device == genesis.device(DEVICE)
    finally:
        genesis.set_default_device(None)
    assert genesis.zeros(1).device.type == "cpu"


def test_default_dtype() -> None:
    assert genesis.get_default_dtype() is genesis.float32
    genesis.set_default_dtype(genesis.float64)
    try:
        assert genesis.zeros(1).dtype is genesis.float64 and genesis.tensor([1.5]).dtype is genesis.float64
    finally:
        genesis.set_default_dtype(genesis.float32)


@pytest.mark.parametrize("name", ["FloatTensor", "DoubleTensor", "HalfTensor", "ByteTensor", "CharTensor",
                                  "ShortTensor", "IntTensor", "LongTensor", "BoolTensor"])
def test_legacy_typed_constructors(name: str) -> None:
    g_cls, t_cls = getattr(genesis, name), getattr(torch, name)
    for args in (([1, 0, 1],), ([[1, 2], [3, 4]],), ((1, 1),)):
        assert_same(g_cls(*args), t_cls(*args))
    for sizes in ((2, 3), (4,), ()):
        g, t = g_cls(*sizes), t_cls(*sizes)
        assert tuple(g.shape) == tuple(t.shape) and TORCH_DTYPE[g.dtype] == t.dtype
    assert isinstance(g_cls([1]), g_cls) and g_cls([1]).device.type == "cpu"
    assert not isinstance(genesis.zeros(1, dtype=genesis.int8 if name != "CharTensor" else genesis.int16), g_cls)
    assert g_cls(genesis.Size([2, 2])).shape == (2, 2)


def test_legacy_constructor_refuses_other_devices() -> None:
    with pytest.raises(RuntimeError, match="legacy constructor expects device type: cpu"):
        genesis.FloatTensor(2, device="cuda")
    with pytest.raises(RuntimeError, match="legacy constructor expects device type: cuda"):
        genesis.cuda.FloatTensor(2, device="cpu")


def test_cuda_legacy_constructors() -> None:
    # PyTorch-GAN's idiom: Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor; Tensor(n, 1).fill_(1.0)
    assert not isinstance(genesis.ones(1), genesis.cuda.FloatTensor)
    assert genesis.cuda.LongTensor.dtype is genesis.int64
    if DEVICE == "cuda":
        t = genesis.cuda.FloatTensor(3, 1).fill_(1.0)
        assert t.device.type == "cuda" and isinstance(t, genesis.cuda.FloatTensor)
        assert not isinstance(t, genesis.FloatTensor)
        assert genesis.cuda.LongTensor([1, 2]).tolist() == [1, 2]


def test_legacy_type_conversions_and_names() -> None:
    t = torch.tensor([1.5, -2.0])
    g = to_genesis(t, device="cpu")
    for target in ("LongTensor", "IntTensor", "DoubleTensor", "BoolTensor"):
        assert_same(g.type(getattr(genesis, target)), t.type(getattr(torch, target)))
        assert_same(g.type(f"torch.{target}"), t.type(f"torch.{target}"))
    assert_same(g.type(genesis.int16), t.type(torch.int16))
    assert g.type() == "genesis.FloatTensor" and t.type() == "torch.FloatTensor"
    assert genesis.zeros(1, dtype=genesis.int64).type() == "genesis.LongTensor"
    with pytest.raises(ValueError):
        g.type("torch.NoSuchTensor")
    with pytest.raises(ValueError):
        t.type("torch.NoSuchTensor")


def test_legacy_new_and_resize() -> None:
    t = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=torch.float64)
    g = to_genesis(t)
    assert tuple(g.new(2, 3).shape) == (2, 3) and g.new(2, 3).dtype is genesis.float64
    assert g.new(2, 3).device == g.device
    assert_same(g.new([1, 2]), t.new([1, 2]))
    assert tuple(g.new().shape) == tuple(t.new().shape) == (0,)
    assert tuple(g.new(genesis.Size([4])).shape) == (4,)
    g.resize_(3, 1)
    t.resize_(3, 1)
    assert_same(g, t)
    g.resize_((2, 2))
    t.resize_((2, 2))
    assert tuple(g.shape) == (2, 2) and g.view(-1)[:3].tolist() == t.view(-1)[:3].tolist()
    with pytest.raises(RuntimeError):
        genesis.ones(2, requires_grad=True).resize_(3)


def test_size_slices_sums_and_products_are_sizes() -> None:
    g, t = genesis.zeros(2, 3, 4).shape, torch.zeros(2, 3, 4).shape
    for fn in (lambda s: s[1:], lambda s: s + (5,), lambda s: (5,) + s, lambda s: s * 2, lambda s: s + s):
        assert isinstance(fn(g), genesis.Size) and tuple(fn(g)) == tuple(fn(t))
    assert g[1:].numel() == t[1:].numel() == 12
    assert isinstance(g[0], int)


@pytest.mark.parametrize("data", [
    collections.deque([1, 2, 3]), range(5), (1.5, 2), collections.deque([(1, 2), (3, 4)]),
    [range(2), collections.deque([3, 4])], collections.deque([True, False]), range(0),
    [collections.deque([1.0, 2.0]), (3, 4)],
], ids=["deque", "range", "tuple", "deque_of_tuples", "list_of_range_and_deque", "bools", "empty_range",
        "mixed_nested"])
def test_tensor_from_any_sequence(data: object) -> None:
    assert_same(genesis.tensor(data, device=DEVICE), torch.tensor(data))
    assert_same(genesis.tensor(data, dtype=genesis.float64, device=DEVICE), torch.tensor(data, dtype=torch.float64))


def test_tensor_from_non_sequences_raises_as_torch() -> None:
    for data in ({1, 2}, (x for x in range(2)), object()):
        with pytest.raises(RuntimeError, match=f"Could not infer dtype of {type(data).__name__}"):
            torch.tensor(data)
        with pytest.raises(RuntimeError, match=f"tensor\\(\\): Could not infer dtype of {type(data).__name__}"):
            genesis.tensor(data)


def _zero_pattern(t: object) -> torch.Tensor:
    return torch.tensor(t.detach().cpu().numpy() == 0) if isinstance(t, genesis.Tensor) else (t == 0)


def _shared_axes(pattern: torch.Tensor) -> tuple[int, ...]:
    """The axes along which every slice of the zero pattern is the same (the mask was drawn without them)."""
    return tuple(d for d in range(pattern.ndim) if pattern.shape[d] > 1 and
                 bool((pattern == pattern.narrow(d, 0, 1)).all()))


@pytest.mark.parametrize(("fn", "shape"), [
    ("dropout2d", (8, 6)), ("dropout2d", (8, 6, 5)), ("dropout2d", (4, 6, 3, 3)), ("dropout2d", (4, 6, 2, 2, 2)),
    ("dropout3d", (8, 6)), ("dropout3d", (8, 6, 5)), ("dropout3d", (8, 6, 2, 2)), ("dropout3d", (4, 6, 2, 2, 2)),
    ("dropout1d", (8, 6)), ("dropout1d", (4, 8, 6)),
])
def test_channel_dropout_masks_have_torch_structure(fn: str, shape: tuple[int, ...]) -> None:
    """Masks drawn per element of the same leading axes as torch's (RNGs differ: compared by structure), the same
    warnings, the kept values scaled by 1 / (1 - p)."""
    torch.manual_seed(0)
    genesis.manual_seed(0)
    x_t = torch.rand(shape) + 1.0
    with warnings.catch_warnings(record=True) as t_warned:
        warnings.simplefilter("always")
        t_out = getattr(torch.nn.functional, fn)(x_t, 0.5)
    with warnings.catch_warnings(record=True) as g_warned:
        warnings.simplefilter("always")
        g_out = getattr(F, fn)(to_genesis(x_t), 0.5)
    assert [str(w.message) for w in g_warned] == [str(w.message) for w in t_warned]
    assert all(w.filename == __file__ for w in g_warned)
    t_pattern, g_pattern = _zero_pattern(t_out), _zero_pattern(g_out)
    assert _shared_axes(g_pattern) == _shared_axes(t_pattern)
    kept = ~g_pattern
    torch.testing.assert_close(torch.tensor(g_out.cpu().numpy())[kept], x_t[kept] * 2.0)
    assert 0 < int(g_pattern.sum()) < g_pattern.numel()


def test_dropout2d_module_and_inplace_and_errors() -> None:
    x = genesis.ones(8, 6, device=DEVICE)
    with pytest.warns(UserWarning, match="Received a 2-D input to dropout2d"):
        out = genesis.nn.Dropout2d(0.5)(x)
    assert out.shape == (8, 6)
    y = genesis.ones(2, 3, 4, device=DEVICE)
    with pytest.warns(UserWarning, match="Received a 3-D input to dropout3d"):
        F.dropout3d(y, 0.5, inplace=True)  # (2, 3, 4) is one unbatched sample: one draw per first-axis entry
    assert bool(((y == 0).all(2).all(1) | (y != 0).all(2).all(1)).all())
    with pytest.raises(RuntimeError, match="Feature dropout requires at least 2 dimensions"), \
            pytest.warns(UserWarning):
        F.dropout2d(genesis.ones(3, device=DEVICE), 0.5)
    with pytest.raises(RuntimeError, match="dropout1d: Expected 2D or 3D input, but received a 4D input"):
        F.dropout1d(genesis.ones(1, 2, 3, 4, device=DEVICE))
    with pytest.warns(UserWarning):
        assert F.dropout2d(genesis.ones(3, device=DEVICE), 0.5, training=False).shape == (3,)


def test_process_settings_as_torch() -> None:
    # Scripts set these at the top; each behaves as torch's.
    try:
        genesis.set_float32_matmul_precision("high")
        assert genesis.get_float32_matmul_precision() == "high" and genesis.backends.cuda.matmul.allow_tf32
        with pytest.warns(UserWarning):
            genesis.set_float32_matmul_precision("fastest")
        assert genesis.get_float32_matmul_precision() == "high"
    finally:
        genesis.set_float32_matmul_precision("highest")
    assert genesis.get_float32_matmul_precision() == "highest" and not genesis.backends.cuda.matmul.allow_tf32
    try:
        genesis.use_deterministic_algorithms(True, warn_only=True)
        assert genesis.are_deterministic_algorithms_enabled()
        assert genesis.is_deterministic_algorithms_warn_only_enabled()
    finally:
        genesis.use_deterministic_algorithms(False)
    assert not genesis.are_deterministic_algorithms_enabled()
    assert genesis.backends.mps.is_available() is False and genesis.backends.mps.is_built() is False


def test_deterministic_debug_mode_and_argument_types_as_torch() -> None:
    seen = []
    for lib in (torch, genesis):
        row = []
        try:
            for mode in ("warn", 2, "default", 1, 0):
                lib.set_deterministic_debug_mode(mode)
                row.append((lib.get_deterministic_debug_mode(), lib.are_deterministic_algorithms_enabled(),
                            lib.is_deterministic_algorithms_warn_only_enabled()))
            for fn, args, kwargs in ((lib.set_deterministic_debug_mode, ("loud",), {}),
                                     (lib.set_deterministic_debug_mode, (3,), {}),
                                     (lib.set_deterministic_debug_mode, (1.0,), {}),
                                     (lib.use_deterministic_algorithms, ("yes",), {}),
                                     (lib.use_deterministic_algorithms, (True,), {"warn_only": 1})):
                with pytest.raises((RuntimeError, TypeError)) as info:
                    fn(*args, **kwargs)
                row.append((type(info.value).__name__, str(info.value).split(": ")[-1][:30]))
        finally:
            lib.use_deterministic_algorithms(False)
        seen.append(row)
    assert seen[0] == seen[1]


def test_module_compile_in_place_keeps_the_module() -> None:
    for lib in (torch, genesis):
        model = lib.nn.Linear(2, 2)
        assert model.compile(mode="reduce-overhead", fullgraph=True) is None  # in place, as torch's
        assert list(model.state_dict()) == ["weight", "bias"]
    x = genesis.ones(1, 2, device=DEVICE)
    model = genesis.nn.Linear(2, 2).to(DEVICE)
    expected = model(x)
    model.compile(dynamic=True)
    assert genesis.equal(model(x), expected)


def test_compile_wraps_modules_as_torch_and_leaves_functions() -> None:
    """A module comes back in an OptimizedModule (torch's ``_orig_mod.`` state-dict keys, so checkpoints of compiled
    torch models load); functions come back unchanged; the compiler markers and dynamo settings are accepted."""
    for lib in (torch, genesis):
        model = lib.nn.Linear(2, 2)
        compiled = lib.compile(model, mode="max-autotune", fullgraph=True)
        assert type(compiled).__name__ == "OptimizedModule" and compiled._orig_mod is model
        assert compiled.weight is model.weight and compiled.in_features == 2
        assert list(compiled.state_dict()) == ["_orig_mod.weight", "_orig_mod.bias"]
        assert lib.compile(model, disable=True) is model
        x = lib.ones(1, 2)
        assert lib.equal(compiled(x), model(x))
        assert lib.compiler.is_compiling() is False
        assert lib.compiler.disable(lambda v: v + 1)(1) == 2
        lib._dynamo.config.suppress_errors = True
        lib._dynamo.reset()
    genesis._dynamo.config.suppress_errors = torch._dynamo.config.suppress_errors = False
    # Importing torch's dynamo turns torch's distribution argument checks off for the whole process: turn them back
    # on, or later tests that expect torch to refuse invalid parameters see it accept them.
    torch.distributions.Distribution.set_default_validate_args(True)

    @genesis.compile
    def f(x):
        return x + 1

    @genesis.compile(dynamic=True)
    def g(x):
        return x * 2

    assert f(1) == 2 and g(2) == 4


def test_iinfo_typename_and_inplace_functions() -> None:
    for name in ("uint8", "int8", "int16", "int32", "int64"):
        g, t = genesis.iinfo(getattr(genesis, name)), torch.iinfo(getattr(torch, name))
        assert (g.bits, g.min, g.max, repr(g)) == (t.bits, t.min, t.max, repr(t))
    with pytest.raises(TypeError):
        genesis.iinfo(genesis.float32)
    with pytest.raises(TypeError):
        torch.iinfo(torch.float32)
    assert genesis.typename(genesis.zeros(1, dtype=genesis.int64)) == "genesis.LongTensor"
    assert genesis.typename(3) == torch.typename(3) == "int"
    assert genesis.typename(genesis.nn.Linear(1, 1)) == "genesis.nn.modules.linear.Linear"
    t = torch.tensor([-1.5, 0.25, 2.0])
    for name in ("relu_", "sigmoid_", "tanh_", "exp_", "neg_", "abs_", "zero_"):
        g, r = to_genesis(t.clone()), t.clone()
        assert getattr(genesis, name)(g) is g
        getattr(torch, name)(r)
        assert_same(g, r)


def test_assert_raises_assertion_error_as_torch() -> None:
    for cond in (True, 1, genesis.tensor(True, device=DEVICE)):
        genesis._assert(cond, "unused")
    for cond, t_cond in ((False, False), (genesis.tensor(0.0, device=DEVICE), torch.tensor(0.0))):
        with pytest.raises(AssertionError, match="height 7 != 16"):
            torch._assert(t_cond, "height 7 != 16")
        with pytest.raises(AssertionError, match="height 7 != 16"):
            genesis._assert(cond, "height 7 != 16")


def test_set_printoptions_as_torch() -> None:
    t = torch.tensor([1.123456, 2.5, -3.0])
    g = to_genesis(t, device="cpu")
    cases = [dict(precision=2), dict(sci_mode=True), dict(profile="short"), dict(precision=6, sci_mode=False)]
    try:
        for options in cases:
            genesis.set_printoptions(**options)
            torch.set_printoptions(**options)
            assert repr(g) == repr(t), options
    finally:
        genesis.set_printoptions(profile="default")
        torch.set_printoptions(profile="default")
    assert repr(g) == repr(t)


def test_torch_module_paths_scripts_import() -> None:
    import importlib

    for path, names in {
        "genesis.nn.modules.batchnorm": ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "_BatchNorm", "_NormBase"],
        "genesis.nn.modules.instancenorm": ["InstanceNorm1d", "InstanceNorm2d", "_InstanceNorm"],
        "genesis.nn.modules.pixelshuffle": ["PixelShuffle", "PixelUnshuffle"],
        "genesis.nn.modules.channelshuffle": ["ChannelShuffle"],
        "genesis.nn.modules.flatten": ["Flatten", "Unflatten"],
        "genesis.nn.modules.fold": ["Fold", "Unfold"],
        "genesis.utils.checkpoint": ["checkpoint", "checkpoint_sequential"],
        "genesis.cuda.amp": ["autocast", "GradScaler"],
    }.items():
        module, twin = importlib.import_module(path), importlib.import_module(path.replace("genesis", "torch", 1))
        for name in names:
            assert hasattr(module, name) and hasattr(twin, name), (path, name)
    # the weight-decay idiom: norm layers singled out by their base class
    from genesis.nn.modules.batchnorm import _BatchNorm

    model = genesis.nn.Sequential(genesis.nn.Linear(2, 2), genesis.nn.BatchNorm1d(2), genesis.nn.LazyBatchNorm1d())
    assert [isinstance(m, _BatchNorm) for m in model] == [False, True, True]


def test_nn_modules_utils_as_torch() -> None:
    import torch.nn.modules.utils as torch_utils

    from genesis.nn.modules import utils

    for name in ("_single", "_pair", "_triple", "_quadruple"):
        for value in (3, (1, 2), [4, 5, 6], 0.5):
            assert getattr(utils, name)(value) == getattr(torch_utils, name)(value), (name, value)
    assert utils._ntuple(2)(None) == torch_utils._ntuple(2)(None) == (None, None)
    assert utils._reverse_repeat_tuple((1, 2, 3), 2) == torch_utils._reverse_repeat_tuple((1, 2, 3), 2)
    # A DistributedDataParallel checkpoint loads into the bare model, metadata and key order as torch leaves them.
    states = []
    for lib, consume in ((torch, torch_utils.consume_prefix_in_state_dict_if_present),
                         (genesis, utils.consume_prefix_in_state_dict_if_present)):
        wrapped = lib.nn.Sequential(lib.nn.Linear(2, 2), lib.nn.ReLU(), lib.nn.Linear(2, 1))
        sd = lib.nn.DataParallel(wrapped).state_dict() if lib is genesis else collections.OrderedDict(
            (f"module.{k}", v) for k, v in wrapped.state_dict().items())
        sd["other.key"] = lib.zeros(1)
        sd._metadata = collections.OrderedDict([("", {"version": 1}), ("module", {"version": 1}),
                                                ("module.0", {"version": 1}), ("other", {})])
        consume(sd, "module.")
        wrapped.load_state_dict(sd, strict=False)
        states.append((list(sd), list(sd._metadata)))
    assert states[0] == states[1]


def test_cuda_queries_that_cpu_programs_make() -> None:
    # Memory statistics read 0 and empty_cache does nothing until CUDA is used; Stream and Event exist as classes
    # (annotations, hasattr); bfloat16 support is a bool.
    cuda = genesis.cuda
    assert hasattr(cuda, "Stream") and hasattr(cuda, "Event") and not hasattr(cuda, "NoSuchThing")
    assert isinstance(cuda.is_bf16_supported(), bool) and isinstance(cuda.is_initialized(), bool)
    if cuda.is_available():
        assert cuda.is_bf16_supported(including_emulation=False) is (cuda.get_device_capability() >= (8, 0))
        return
    assert cuda.is_bf16_supported() is torch.cuda.is_bf16_supported() is False
    assert not cuda.is_initialized()
    cuda.empty_cache()
    cuda.reset_peak_memory_stats()
    assert cuda.memory_allocated() == cuda.max_memory_allocated() == cuda.memory_reserved() == 0
    assert cuda.memory_allocated() == torch.cuda.memory_allocated() and cuda.memory_stats() == {}
    assert not isinstance(genesis.ones(1), cuda.Stream) and cuda.Event is cuda.Event
    with pytest.raises(RuntimeError, match="CUDA is not available"):
        cuda.Stream()


def test_cuda_memory_statistics_read_zero_until_a_device_context_exists() -> None:
    # Importing the GPU backend (as kernel checks do on a machine with the GPU packages and no GPU) starts nothing:
    # the statistics still read 0 (they raised "CUDA is not available" before).
    pytest.importorskip("cuda.bindings", reason="the GPU packages are not installed")
    code = ("import genesis, genesis._impl.cuda.runtime; c = genesis.cuda; "
            "print(c.is_initialized(), c.memory_allocated(), c.max_memory_allocated(), c.memory_stats())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["False", "0", "0", "{}"]


def test_cuda_seeding_rng_states_and_nvtx_ranges() -> None:
    # Seeding is lazy (a CPU-only program may seed CUDA, as with torch); reading a state needs CUDA; every device's
    # state round-trips; NVTX ranges label regions in Genesis's profiler.
    cuda = genesis.cuda
    cuda.manual_seed(7)
    cuda.manual_seed_all(7)
    assert isinstance(cuda.seed(), int)
    cuda.seed_all()
    if cuda.is_available():
        states = cuda.get_rng_state_all()
        assert len(states) == cuda.device_count() and states[0].dtype is genesis.uint8
        cuda.manual_seed(11)
        first = genesis.rand(4, device="cuda")
        cuda.set_rng_state_all(states)
        cuda.set_rng_state(states[0], "cuda")
        cuda.manual_seed(11)
        assert genesis.equal(genesis.rand(4, device="cuda"), first) and cuda.initial_seed() == 11
        assert cuda.get_arch_list() == ["sm_{}{}".format(*cuda.get_device_capability())]
    else:
        assert cuda.get_rng_state_all() == torch.cuda.get_rng_state_all() == []
        assert cuda.get_arch_list() == torch.cuda.get_arch_list() == [] and not cuda.is_tf32_supported()
        for call in (cuda.get_rng_state, cuda.initial_seed, cuda.ipc_collect):
            with pytest.raises(RuntimeError, match="CUDA is not available"):
                call()
    assert cuda.memory_cached() == cuda.memory_reserved()
    cuda.reset_max_memory_allocated()
    from genesis.cuda import nvtx

    assert (nvtx.range_push("outer"), nvtx.range_push("inner"), nvtx.range_pop(), nvtx.range_pop(),
            nvtx.range_pop()) == (0, 1, 1, 0, -1)
    with genesis.profiler.profile() as prof:
        with nvtx.range("step {}", 3):
            genesis.ones(3, device=DEVICE) + 1
        nvtx.mark("done")
    assert {"step 3", "done"} <= {e.key for e in prof.key_averages()}


def test_cuda_amp_spelling() -> None:
    from genesis.cuda.amp import GradScaler, autocast

    scaler = GradScaler(enabled=False)
    x = genesis.ones(2, 2, device=DEVICE, requires_grad=True)
    with autocast(enabled=DEVICE == "cuda"):
        y = x @ x
    assert y.dtype is (genesis.float16 if DEVICE == "cuda" else genesis.float32)
    scaler.scale(y.float().sum()).backward()
    assert x.grad is not None

    @autocast(dtype=genesis.bfloat16)
    def product(a):
        return a @ a

    assert product(x).dtype is (genesis.bfloat16 if DEVICE == "cuda" else genesis.float32)


def test_data_parallel_runs_the_module_on_one_device() -> None:
    model = genesis.nn.Linear(3, 2).to(DEVICE)
    wrapped = genesis.nn.DataParallel(model)
    assert wrapped.module is model and list(wrapped.state_dict()) == ["module.weight", "module.bias"]
    out = wrapped(genesis.ones(4, 3))  # inputs go to the module's device
    assert tuple(out.shape) == (4, 2) and out.device == model.weight.device
    if DEVICE == "cuda":
        with pytest.raises(RuntimeError, match="device_ids"):
            genesis.nn.DataParallel(genesis.nn.Linear(3, 2))(genesis.ones(1, 3))


def test_jit_entry_points_leave_code_eager() -> None:
    @genesis.jit.script
    def gelu_tanh(x):
        return 0.5 * x * (1.0 + genesis.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))

    @torch.jit.script
    def gelu_tanh_torch(x):
        return 0.5 * x * (1.0 + torch.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))

    t = torch.linspace(-3, 3, 7)
    assert_same(gelu_tanh(to_genesis(t)), gelu_tanh_torch(t))
    model = genesis.nn.Linear(2, 2)
    assert genesis.jit.trace(model, genesis.ones(1, 2)) is model and genesis.jit.script(model) is model
    assert genesis.jit.ignore(len) is len and genesis.jit.ignore(drop=True)(len) is len
    assert genesis.jit.unused(len) is len and genesis.jit.export(len) is len
    assert not genesis.jit.is_scripting() and not genesis.jit.is_tracing() and genesis.jit.annotate(int, 3) == 3
    with pytest.raises(NotImplementedError, match="state_dict"):
        genesis.jit.save(model, "model.pt")
    for lib in (torch, genesis):
        futures = [lib.jit.fork(lambda a, b=0: a * 2 + b, i, b=1) for i in range(3)]
        assert [lib.jit.wait(f) for f in futures] == [1, 3, 5]
    assert genesis.jit.freeze(model) is model and genesis.jit.optimize_for_inference(model) is model
    assert genesis.jit.script_if_tracing(len) is len and genesis.jit.interface(int) is int
    with genesis.jit.optimized_execution(False), genesis.jit.fuser("fuser1"):
        # typing.Final, as torch's: `num_tags: jit.Final[int]` in a class body subscripts it
        assert genesis.jit.Final is torch.jit.Final and genesis.jit.Final[int] == torch.jit.Final[int]


def test_jit_isinstance_refines_containers_as_torch() -> None:
    t, g = torch.ones(2), genesis.ones(2)
    cases = [(lambda x: [x, x], lambda lib: list[lib.Tensor]), (lambda x: [x, 1], lambda lib: list[lib.Tensor]),
             (lambda x: {"a": [x]}, lambda lib: dict[str, list[lib.Tensor]]),
             (lambda x: {1: [x]}, lambda lib: dict[str, list[lib.Tensor]]),
             (lambda x: (1, "a"), lambda lib: tuple[int, str]), (lambda x: (1, "a", 2), lambda lib: tuple[int, str]),
             (lambda x: None, lambda lib: list[int] | None), (lambda x: [1.0], lambda lib: list[int] | None),
             (lambda x: "s", lambda lib: int | str), (lambda x: x, lambda lib: (str, lib.Tensor)),
             (lambda x: [[1], [2, "3"]], lambda lib: list[list[int]]), (lambda x: 3, lambda lib: float)]
    for make, target in cases:
        assert genesis.jit.isinstance(make(g), target(genesis)) is torch.jit.isinstance(make(t), target(torch))
    for lib in (torch, genesis):
        with pytest.warns(UserWarning, match="The inner type of a container is lost"):
            assert lib.jit.isinstance([], list[str])
        with pytest.raises(RuntimeError, match="must be a type or a tuple of types"):
            lib.jit.isinstance(1, [int])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # 0 is no empty container: no warning
        assert not genesis.jit.isinstance(0, list[int])
    # A bare container type (no element types) is refused, once the types before it in a tuple did not match.
    for bare in (tuple, dict, typing.List, typing.Optional):  # noqa: UP006 - the typing alias itself
        messages = []
        for lib in (torch, genesis):
            with pytest.raises(RuntimeError) as caught:
                lib.jit.isinstance((1,), (int, bare))
            messages.append(str(caught.value))
        assert messages[0] == messages[1] and messages[0].startswith("Attempted to use")
    assert genesis.jit.isinstance(1, (int, tuple))


def test_jit_legacy_script_module_runs_eagerly() -> None:
    class Scaled(genesis.jit.ScriptModule):
        def __init__(self) -> None:
            super().__init__()
            self.weight = genesis.nn.Parameter(genesis.full((2,), 3.0))

        @genesis.jit.script_method
        def forward(self, x: genesis.Tensor) -> genesis.Tensor:
            return x * self.weight

    model = Scaled()
    assert isinstance(model, genesis.nn.Module) and list(model.state_dict()) == ["weight"]
    assert model(genesis.ones(2)).tolist() == [3.0, 3.0]
    assert not isinstance(genesis.jit.script(len), genesis.jit.ScriptFunction)


def test_onnx_export_guard_takes_the_eager_path() -> None:
    assert genesis.onnx.is_in_onnx_export() is torch.onnx.is_in_onnx_export() is False
    for name in ("export", "dynamo_export"):
        with pytest.raises(NotImplementedError, match="state_dict"):
            getattr(genesis.onnx, name)(genesis.nn.Linear(2, 2), (genesis.ones(1, 2),), "model.onnx")


def test_fork_rng_and_namespace_distances() -> None:
    genesis.manual_seed(3)
    with genesis.random.fork_rng():
        inside = genesis.rand(4).tolist()
    assert genesis.rand(4).tolist() == inside  # the draws after the block are those it would have made
    with genesis.random.fork_rng(enabled=False):
        genesis.rand(1)
    a, b = torch.tensor([[1.0, 2.0, 3.0]]), torch.tensor([[1.0, 0.0, -1.0]])
    assert_same(genesis.cosine_similarity(to_genesis(a), to_genesis(b)), torch.cosine_similarity(a, b))
    assert_same(genesis.pairwise_distance(to_genesis(a), to_genesis(b)), torch.pairwise_distance(a, b))


def test_namespace_constants_version_and_default_generator() -> None:
    for name in ("pi", "e", "inf", "nan"):
        value, expected = getattr(genesis, name), getattr(torch, name)
        assert value == expected or (value != value and expected != expected), name
    assert genesis.newaxis is torch.newaxis is None
    assert genesis.arange(3.0)[genesis.newaxis].shape == (1, 3)
    assert genesis.version.__version__ == genesis.__version__
    assert genesis.version.cuda is None or genesis.version.cuda.count(".") == 1
    assert genesis.version.hip is None
    genesis.manual_seed(7)
    assert genesis.default_generator.initial_seed() == 7
    a = genesis.default_generator.get_state()
    first = genesis.rand(3)
    genesis.default_generator.set_state(a)
    assert genesis.equal(genesis.rand(3), first)


def test_namespace_rsub_and_predicates() -> None:
    x = torch.tensor([1.0, 2.0, 3.0])
    g = genesis.tensor([1.0, 2.0, 3.0])
    assert genesis.rsub(g, 10, alpha=2).tolist() == torch.rsub(x, 10, alpha=2).tolist()
    assert genesis.rsub(g, g * 3).tolist() == torch.rsub(x, x * 3).tolist()
    assert genesis.is_conj(g) is torch.is_conj(x) is False
    assert genesis.is_neg(g) is torch.is_neg(x) is False
    with genesis.inference_mode():
        made = genesis.ones(2)
    assert genesis.is_inference(made) and not genesis.is_inference(g)


@pytest.mark.parametrize("write", [
    lambda t: t.add_(1), lambda t: t.mul_(2.0), lambda t: t.exp_(), lambda t: t.zero_(), lambda t: t.fill_(3.0),
    lambda t: t.copy_(t * 0), lambda t: t.__setitem__(0, 5.0), lambda t: t[1].sub_(1), lambda t: t.squeeze_(),
    lambda t: t.clamp_(min=0.5)])
def test_inplace_update_of_inference_tensor_outside_inference_mode(write) -> None:
    for lib in (torch, genesis):
        with lib.inference_mode():
            made = lib.ones(3, 1)
            write(made)  # allowed inside the mode
        with pytest.raises(RuntimeError, match="Inplace update to inference tensor outside InferenceMode is not "
                                               "allowed.You can make a clone"):
            write(made)
        with lib.no_grad(), pytest.raises(RuntimeError, match="Inplace update to inference tensor"):
            write(made)
        normal = made.clone()
        write(normal)
        assert not normal.is_inference()


def test_set_default_tensor_type() -> None:
    try:
        with pytest.warns(UserWarning, match="deprecated"):
            genesis.set_default_tensor_type("torch.DoubleTensor")
        assert genesis.get_default_dtype() is genesis.float64 and genesis.tensor([1.0]).dtype is genesis.float64
        with pytest.warns(UserWarning):
            genesis.set_default_tensor_type(genesis.FloatTensor)
        assert genesis.get_default_dtype() is genesis.float32 and genesis.zeros(1).device.type == "cpu"
        for bad in (genesis.LongTensor, genesis.float64, "torch.Foo"):
            with pytest.warns(UserWarning), pytest.raises(TypeError):
                genesis.set_default_tensor_type(bad)
        if genesis.cuda.is_available():
            with pytest.warns(UserWarning):
                genesis.set_default_tensor_type(genesis.cuda.HalfTensor)
            assert genesis.zeros(2).device.type == "cuda" and genesis.get_default_dtype() is genesis.float16
        else:
            with pytest.warns(UserWarning), pytest.raises(TypeError):
                genesis.set_default_tensor_type("torch.cuda.FloatTensor")
    finally:
        genesis.set_default_dtype(genesis.float32)
        genesis.set_default_device(None)


def test_out_argument_of_namespace_functions() -> None:
    # torch's out=: the result is written into the given tensor (cast to its dtype, resized with a warning unless
    # empty) and returned; several results take a tuple; no autograd through out=.
    for lib in (torch, genesis):
        dev = "cpu" if lib is torch else DEVICE
        a, b = lib.arange(6.0, device=dev).reshape(2, 3), lib.ones(3, device=dev)
        out = lib.empty(2, 3, dtype=lib.float64, device=dev)
        assert lib.add(a, b, out=out) is out and out.dtype == lib.float64
        assert out.tolist() == [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
        empty = lib.empty(0, device=dev)
        lib.matmul(a, b, out=empty)
        assert tuple(empty.shape) == (2,)
        wrong = lib.empty(5, device=dev)
        with pytest.warns(UserWarning, match="resized"):
            lib.sub(b, 1, out=wrong)
        assert tuple(wrong.shape) == (3,)
        values, indices = lib.empty(2, device=dev), lib.empty(2, dtype=lib.int64, device=dev)
        result = lib.max(a, 1, out=(values, indices))
        assert result.values is values and result.indices is indices and indices.tolist() == [2, 2]
        with pytest.raises(RuntimeError, match="can't be cast to the desired output type"):
            lib.add(a, 0.5, out=lib.empty(2, 3, dtype=lib.int64, device=dev))
        with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
            lib.mul(a.requires_grad_(), 2, out=lib.empty(2, 3, device=dev))
        with lib.no_grad():
            assert lib.exp(a, out=a) is a


_N, _M = np.int64(2), np.int32(3)
_NUMPY_INT_ARGS = {
    "sum dim": lambda L, x: x.sum(dim=np.int64(1)),
    "mean dims": lambda L, x: x.mean(dim=(np.int64(0), 1)),
    "narrow": lambda L, x: x.narrow(0, np.int64(1), _N),
    "diagonal": lambda L, x: x.diagonal(np.int64(1)),
    "unfold": lambda L, x: x.unfold(1, _N, np.int64(1)),
    "chunk": lambda L, x: x.chunk(_N, 1)[0],
    "roll": lambda L, x: x.roll(np.int64(2)),
    "roll dims": lambda L, x: x.roll(_N, np.int64(1)),
    "softmax": lambda L, x: x.softmax(np.int64(1)),
    "F.unfold": lambda L, x: L.nn.functional.unfold(x.reshape(1, 1, 4, 5), kernel_size=_N),
    "LayerNorm": lambda L, x: L.nn.LayerNorm(np.int64(5)).to(x.device)(x),
    "LayerNorm of a numpy shape": lambda L, x: L.nn.LayerNorm(np.array([4, 5])).to(x.device)(x),
    "arange of numpy floats": lambda L, x: L.arange(np.float32(0), np.float32(1), np.float32(0.25), device=x.device),
    "movedim": lambda L, x: x.movedim(np.int64(0), np.int64(1)),
    "tensor_split": lambda L, x: x.tensor_split(np.int64(2), dim=1)[1],
    "index": lambda L, x: x[np.int64(1), np.int32(2):],
    "slice with a numpy step": lambda L, x: x[::np.int64(2), np.int32(1):np.int64(4)],
}


def test_numpy_integer_index_is_a_view_as_torchs():
    # x[np.int64(i)] is basic indexing in torch (a view): an in-place op on it writes into x. It was a copy, so
    # nn.Embedding(..., padding_idx=np.int64(0)) left its padding row random.
    for lib in (torch, genesis):
        w = lib.ones(4, 3, device=DEVICE if lib is genesis else "cpu")
        w[np.int64(0)].fill_(0)
        w[np.int32(1), :].mul_(2)
        w[:, np.int64(2)].add_(5)
        w[np.array(3)].sub_(1)
        if lib is torch:
            expected = w
    assert_same(w, expected)
    emb = genesis.nn.Embedding(4, 2, padding_idx=np.int64(0))
    assert emb.weight[0].tolist() == [0.0, 0.0]


@pytest.mark.parametrize("name", list(_NUMPY_INT_ARGS))
def test_numpy_integers_are_ints_in_size_and_dim_arguments(name):
    # A size or dim computed with numpy (a config array, np.prod) is an int to torch: the result, and its shape as
    # Python ints, are torch's.
    fn = _NUMPY_INT_ARGS[name]
    x = torch.randn(4, 5)
    expected = fn(torch, x)
    got = fn(genesis, to_genesis(x))
    assert all(type(n) is int for n in got.shape), got.shape
    assert_same(got, expected, rtol=1e-5, atol=1e-6)


def test_numpy_counts_in_random_draws_leave_the_generator_usable():
    # A draw sized by numpy integers advanced the generator's offset by a numpy integer; every later draw then
    # overflowed ("Python int too large to convert to C long").
    genesis.manual_seed(0)
    genesis.multinomial(genesis.ones(3, device=DEVICE), np.int64(2), replacement=True)
    genesis.randn(np.int64(2), np.int32(3), device=DEVICE)
    genesis.randint(0, 5, (np.int64(4),), device=DEVICE)
    after = genesis.rand(3, device=DEVICE)
    genesis.manual_seed(0)
    genesis.multinomial(genesis.ones(3, device=DEVICE), 2, replacement=True)
    genesis.randn(2, 3, device=DEVICE)
    genesis.randint(0, 5, (4,), device=DEVICE)
    assert genesis.equal(after, genesis.rand(3, device=DEVICE))  # numpy counts draw exactly as ints do
