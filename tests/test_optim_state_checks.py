"""Optimizer state that does not fit its parameters never reaches a kernel: a state dict from another model, a
parameter replaced by one of another shape, a checkpoint whose state was edited. Each is refused with an error
(torch: RuntimeError at the step) instead of handing mismatched buffers to a fused kernel, which corrupted the
process's memory. The crash routes run in a subprocess, so a regression fails the test instead of killing the run.
"""

import subprocess
import sys
import textwrap

import pytest

import genesis
from genesis import nn, optim
from tests.helpers import DEVICE

# Every route to the fused and multi-tensor steps: Adam's per-parameter fused kernel, the multi-tensor kernel
# (fused=True), the flat multi-tensor path (foreach=True), the plain path (amsgrad), and SGD's.
_OPTIMIZERS = {
    "adam": lambda ps: optim.Adam(ps),
    "adam_fused": lambda ps: optim.Adam(ps, fused=True),
    "adamw_foreach": lambda ps: optim.AdamW(ps, foreach=True),
    "adam_amsgrad": lambda ps: optim.Adam(ps, amsgrad=True),
    "sgd_fused": lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9, fused=True),
    "sgd_foreach": lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9, foreach=True),
    "rmsprop": lambda ps: optim.RMSprop(ps),
    "adagrad": lambda ps: optim.Adagrad(ps),
}


def _stepped(make, out_features: int = 4) -> tuple[nn.Module, optim.Optimizer]:
    model = nn.Linear(3, out_features).to(DEVICE)
    opt = make(model.parameters())
    model(genesis.randn(2, 3, device=DEVICE)).sum().backward()
    opt.step()
    return model, opt


@pytest.mark.parametrize("name", sorted(_OPTIMIZERS))
def test_load_state_dict_checks_state_shapes(name):
    _, opt = _stepped(_OPTIMIZERS[name])
    other = nn.Linear(3, 64).to(DEVICE)
    opt2 = _OPTIMIZERS[name](other.parameters())
    before = opt2.state_dict()
    with pytest.raises(ValueError, match=r"state '\w+' of shape \(4, 3\) for parameter 0 of shape \(64, 3\)"):
        opt2.load_state_dict(opt.state_dict())
    assert opt2.state_dict() == before  # nothing changed


class _NormTracking(optim.Optimizer):
    """A hand-written optimizer (its own step, as LAMB's reference code) keeping 0-d norms beside its moments."""

    def __init__(self, params) -> None:
        super().__init__(params, {"lr": 0.1})

    @genesis.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                state["weight_norm"] = p.norm()
                state["momentum"] = state.get("momentum", genesis.zeros_like(p)).add_(p.grad)
                p.add_(state["momentum"], alpha=-group["lr"])


def test_load_state_dict_leaves_the_state_of_a_hand_written_optimizer_unchecked():
    # torch checks no state shapes: they belong to the optimizer's own step, which Genesis's update never reads.
    model, opt = _stepped(_NormTracking)
    opt2 = _NormTracking(model.parameters())
    opt2.load_state_dict(opt.state_dict())
    state, saved = opt2.state[model.weight], opt.state[model.weight]
    assert state["weight_norm"].shape == () and state["weight_norm"].item() == saved["weight_norm"].item()
    assert state["momentum"].shape == model.weight.shape


@pytest.mark.parametrize("name", sorted(_OPTIMIZERS))
def test_step_refuses_a_parameter_replaced_by_another_shape(name):
    model, opt = _stepped(_OPTIMIZERS[name])
    model.weight.data = genesis.zeros(50, 3, device=DEVICE)
    model.weight.grad = genesis.ones(50, 3, device=DEVICE)
    with pytest.raises(RuntimeError, match=r"\(4, 3\).*\(50, 3\)"):
        opt.step()


def _run(script: str) -> subprocess.CompletedProcess:
    code = f"import genesis\nfrom genesis import nn, optim\nDEVICE = {DEVICE!r}\n" + textwrap.dedent(script)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


def test_state_dict_of_another_model_does_not_crash_the_process():
    proc = _run("""
        m = nn.Linear(3, 4).to(DEVICE); o = optim.Adam(m.parameters())
        m(genesis.randn(2, 3, device=DEVICE)).sum().backward(); o.step()
        m2 = nn.Linear(3, 64).to(DEVICE); o2 = optim.Adam(m2.parameters())
        try:
            o2.load_state_dict(o.state_dict())
        except ValueError as err:
            print("refused:", err)
        m2(genesis.randn(2, 3, device=DEVICE)).sum().backward(); o2.step()
        print("stepped")
    """)
    assert proc.returncode == 0, proc.stderr
    assert "refused: loaded state dict contains a state 'exp_avg'" in proc.stdout and "stepped" in proc.stdout


def test_parameter_resized_after_a_step_does_not_crash_the_process():
    proc = _run("""
        emb = nn.Embedding(10, 3).to(DEVICE); o = optim.Adam(emb.parameters())
        emb(genesis.tensor([1, 2], device=DEVICE)).sum().backward(); o.step(); o.zero_grad()
        emb.weight.data = genesis.zeros(50000, 3, device=DEVICE)
        emb(genesis.tensor([1, 2], device=DEVICE)).sum().backward()
        try:
            o.step()
        except RuntimeError as err:
            print("refused:", err)
    """)
    assert proc.returncode == 0, proc.stderr
    # The per-parameter step (CPU) or the multi-tensor kernel's own check (CUDA) names both shapes.
    assert "refused:" in proc.stdout and "(10, 3)" in proc.stdout and "(50000, 3)" in proc.stdout


def test_edited_checkpoint_state_does_not_crash_the_process(tmp_path):
    path = tmp_path / "run.safetensors"
    proc = _run(f"""
        m = nn.Linear(3, 4).to(DEVICE); o = optim.Adam(m.parameters())
        m(genesis.randn(2, 3, device=DEVICE)).sum().backward(); o.step()
        genesis.save_checkpoint({str(path)!r}, model=m, optimizer=o, step=1)
        state = genesis.load({str(path)!r})
        state["optimizer"]["state"][0]["exp_avg"] = genesis.zeros(1)
        genesis.save(state, {str(path)!r})  # valid checksums: only the content is hostile
        m2 = nn.Linear(3, 4).to(DEVICE); o2 = optim.Adam(m2.parameters())
        try:
            genesis.load_checkpoint({str(path)!r}, model=m2, optimizer=o2)
        except ValueError as err:  # as the optimizer's load_state_dict
            print("refused:", err)
        m2(genesis.randn(2, 3, device=DEVICE)).sum().backward(); o2.step()
        print("stepped", o2.state_dict()["state"][0]["step"].item())
    """)
    assert proc.returncode == 0, proc.stderr
    assert "refused: loaded state dict contains a state 'exp_avg' of shape (1,) for parameter 0" in proc.stdout
    assert "stepped 1.0" in proc.stdout  # the failed load left the fresh optimizer as it was
