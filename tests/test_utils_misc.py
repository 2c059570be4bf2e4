"""Small torch modules scripts import: ``genesis.utils.hooks``, ``genesis.backends.mkldnn``,
``genesis.backends.cuda.sdp_kernel``, ``genesis.utils.benchmark`` (Timer, Measurement, Compare), and one PyTorch
script using pruning, ``save_on_cpu``, the legacy profiler, ``RemovableHandle`` and ``Timer`` through
``genesis.torch_compat`` with torch's losses."""

from __future__ import annotations

import re
import statistics
import warnings
from collections import OrderedDict

import pytest
import torch
import torch.utils.benchmark as torch_benchmark

import genesis
from genesis.backends import cuda as sdp
from genesis.backends import mkldnn
from genesis.nn import functional as F
from genesis.utils import benchmark, hooks
from tests.helpers import DEVICE, assert_same, to_genesis
from tests.test_torch_compat import _compare

# ------------------------------------------------------------------ genesis.utils.hooks


def test_removable_handle_is_torchs_shape() -> None:
    registry: OrderedDict = OrderedDict()
    handle = hooks.RemovableHandle(registry)
    registry[handle.id] = print
    other = hooks.RemovableHandle(registry)
    assert other.id != handle.id
    with handle:
        assert handle.id in registry
    assert handle.id not in registry
    handle.remove()  # twice is fine
    module = genesis.nn.Linear(2, 2)
    assert isinstance(module.register_forward_hook(lambda *a: None), hooks.RemovableHandle)


def test_unserializable_hook_silences_warn_if_has_hooks() -> None:
    x = genesis.ones(2, requires_grad=True)
    y = x * 2

    @hooks.unserializable_hook
    def quiet(grad: genesis.Tensor) -> None:
        return None

    assert quiet.__torch_unserializable__ is True
    y.register_hook(quiet)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        hooks.warn_if_has_hooks(y)
    x.register_hook(lambda grad: None)
    with pytest.warns(UserWarning, match="will not be serialized"):
        hooks.warn_if_has_hooks(x)


# ------------------------------------------------------------------ backends


def test_mkldnn_switches() -> None:
    assert mkldnn.is_available() is False and genesis.backends.mkldnn is mkldnn
    assert (mkldnn.enabled, mkldnn.deterministic, mkldnn.allow_tf32) == (True, False, True)
    with mkldnn.flags():  # torch's defaults: enabled=False
        assert (mkldnn.enabled, mkldnn.deterministic, mkldnn.allow_tf32) == (False, False, True)
        with mkldnn.flags(enabled=True, deterministic=True):
            assert mkldnn.enabled and mkldnn.deterministic
        assert not mkldnn.enabled
    assert (mkldnn.enabled, mkldnn.deterministic) == (True, False)
    with pytest.raises(KeyError):
        with mkldnn.flags(enabled=True):
            raise KeyError("restored after an error too")
    assert mkldnn.enabled and not mkldnn.deterministic


@pytest.mark.parametrize("flash, math, mem_efficient, cudnn", [(True, True, True, True), (False, True, True, False),
                                                               (True, False, False, True), (False, False, True, True)])
def test_sdp_kernel_selects_backends_as_torch(flash: bool, math: bool, mem_efficient: bool, cudnn: bool) -> None:
    before = sdp.state()
    with pytest.warns(FutureWarning, match="sdp_kernel"):
        with torch.backends.cuda.sdp_kernel(enable_flash=flash, enable_math=math, enable_mem_efficient=mem_efficient,
                                            enable_cudnn=cudnn):
            expected = (torch.backends.cuda.flash_sdp_enabled(), torch.backends.cuda.math_sdp_enabled(),
                        torch.backends.cuda.cudnn_sdp_enabled())
    with pytest.warns(FutureWarning, match="sdp_kernel"):
        with sdp.sdp_kernel(enable_flash=flash, enable_math=math, enable_mem_efficient=mem_efficient,
                            enable_cudnn=cudnn):
            assert (sdp.flash_sdp_enabled(), sdp.math_sdp_enabled(), sdp.cudnn_sdp_enabled()) == expected
            assert sdp.priority() is None
    assert sdp.state() == before


def test_attention_runs_under_sdp_kernel() -> None:
    q, k, v = (torch.randn(2, 3, 5, 8) for _ in range(3))
    expected = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    with pytest.warns(FutureWarning):
        with sdp.sdp_kernel(enable_flash=False, enable_cudnn=False, enable_mem_efficient=False):
            out = F.scaled_dot_product_attention(to_genesis(q), to_genesis(k), to_genesis(v), is_causal=True)
    assert_same(out, expected, rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------ genesis.utils.benchmark


def test_timer_timeit_and_measurement_statistics() -> None:
    x = genesis.ones(16, device=DEVICE)
    m = benchmark.Timer("x * 2 + 1", globals={"x": x}, label="axpy", sub_label="n=16", description="genesis").timeit(
        50)
    assert isinstance(m, benchmark.Measurement) and m.number_per_run == 50 and len(m.raw_times) == 1
    assert m.times == [m.raw_times[0] / 50] and m.median == m.mean == m.times[0] > 0 and m.iqr == 0
    assert (m.label, m.sub_label, m.description, m.num_threads, m.stmt) == ("axpy", "n=16", "genesis", 1, "x * 2 + 1")
    text = repr(m)
    assert text.splitlines()[1:3] == ["axpy: n=16", "genesis"]
    assert re.search(r"^  \d+\.\d\d (ns|us|ms|s)$", text, re.M) and "1 measurement, 50 runs , 1 thread" in text


def test_measurement_matches_torchs_statistics_and_printout() -> None:
    times = [3e-6, 1e-6, 2e-6, 4e-6, 8e-6, 2.5e-6]
    spec = dict(stmt="f(x)", setup="x = 1", label="L", sub_label="s", description="d", num_threads=2)
    g = benchmark.Measurement(10, [t * 10 for t in times], benchmark.TaskSpec(**spec))
    t = torch_benchmark.Measurement(10, [t * 10 for t in times], torch_benchmark.utils.common.TaskSpec(**spec))
    for name in ("median", "mean", "iqr", "significant_figures", "has_warnings"):
        assert getattr(g, name) == pytest.approx(getattr(t, name)), name
    assert g.times == pytest.approx(t.times) and g.meets_confidence(0.5) == t.meets_confidence(0.5)
    assert repr(g).splitlines()[1:] == repr(t).splitlines()[1:]  # all but the object address line
    merged = benchmark.Measurement.merge([g, g])
    assert len(merged) == 1 and merged[0].number_per_run == 1 and len(merged[0].times) == 12
    assert benchmark.select_unit(2.5e-6) == torch_benchmark.select_unit(2.5e-6)
    assert benchmark.trim_sigfig(123.456, 2) == torch_benchmark.trim_sigfig(123.456, 2)


def test_blocked_and_adaptive_autorange() -> None:
    timer = benchmark.Timer("y = x @ x", setup="x = genesis.randn(8, 8, device=device)", globals={"device": DEVICE})
    seen = []
    m = timer.blocked_autorange(callback=lambda number, seconds: seen.append(number), min_run_time=0.05)
    assert sum(m.raw_times) >= 0.05 and len(seen) == len(m.raw_times) and set(seen) == {m.number_per_run}
    assert m.number_per_run >= 1 and 0 < m.median < 0.05
    assert m.median == pytest.approx(statistics.median(m.times))
    m = timer.adaptive_autorange(threshold=0.5, min_run_time=0.02, max_run_time=1.0)
    assert len(m.raw_times) >= 4 or sum(m.raw_times) > 1.0
    assert benchmark.Timer("torch.ones(2)").timeit(3).median > 0  # torch in a statement means genesis here
    with pytest.raises(ValueError, match="str"):
        benchmark.Timer(lambda: None)
    with pytest.raises(ValueError, match="Python"):
        benchmark.Timer("x", language="c++")
    with pytest.raises(NotImplementedError, match="blocked_autorange"):
        timer.autorange()


def test_timer_restores_the_thread_count() -> None:
    before = genesis.get_num_threads()
    benchmark.Timer("pass", num_threads=1).timeit(2)
    assert genesis.get_num_threads() == before


def test_compare_lays_out_measurements_as_torch() -> None:
    def measurement(lib: object, sub_label: str, description: str, times: list[float], threads: int = 1) -> object:
        spec = lib.utils.common.TaskSpec(stmt="f()", setup="pass", label="ops", sub_label=sub_label,
                                         description=description, num_threads=threads)
        return lib.Measurement(100, [t * 100 for t in times], spec)

    rows = [("n=1", "add", [1.2e-6, 1.3e-6]), ("n=1", "mul", [2.6e-6, 2.5e-6]), ("n=64", "add", [11e-6, 12e-6]),
            ("n=64", "mul", [4.1e-6, 4.4e-6, 4.2e-6, 4.3e-6])]
    outputs = []
    for lib in (benchmark, torch_benchmark):
        compare = lib.Compare([measurement(lib, *row) for row in rows] + [measurement(lib, "n=1", "add", [1e-6], 4)])
        outputs.append([str(compare)])
        compare.trim_significant_figures()
        compare.highlight_warnings()
        outputs[-1].append(str(compare))
        compare.colorize(rowwise=True)
        outputs[-1].append(str(compare))
        compare.colorize()
        outputs[-1].append(str(compare))
    assert outputs[0] == outputs[1]
    with pytest.raises(ValueError, match="Measurement"):
        benchmark.Compare([1.0])


# ------------------------------------------------------------------ a PyTorch script through torch_compat


def test_script_with_prune_save_on_cpu_legacy_profiler_and_timer() -> None:
    losses = _compare("prune_offload.py", [])
    assert losses[5] < losses[0]
