"""Validity checks without host reads: eager and exact on the CPU; on CUDA they run on the device and raise at the
next synchronizing call (``genesis._impl.cuda.device_checks``), and a valid training step never synchronizes."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import pytest
import torch

import genesis
import genesis.nn.functional as F
from tests.helpers import check_error, requires_cuda


def test_cpu_checks_stay_eager() -> None:
    x = genesis.tensor([[1.0, 2.0], [3.0, 4.0]])
    with pytest.raises(RuntimeError, match="gather: index 5 is out of bounds for dimension 1 with size 2"):
        x.gather(1, genesis.tensor([[0, 5], [1, 0]]))
    with pytest.raises(IndexError, match="Target 7 is out of bounds"):
        F.cross_entropy(x, genesis.tensor([0, 7]))
    assert F.cross_entropy(x, genesis.tensor([1, -100])).item() == pytest.approx(
        torch.nn.functional.cross_entropy(torch.tensor([[1.0, 2.0], [3.0, 4.0]]), torch.tensor([1, -100])).item())


def test_negative_indices_are_wrapped() -> None:
    x = genesis.tensor([10.0, 11.0, 12.0])
    np.testing.assert_array_equal(x[genesis.tensor([-1, 0, -3])].numpy(), [12.0, 10.0, 10.0])


def test_integer_division_by_a_zero_tensor_raises_like_torch() -> None:
    a, b = torch.tensor([4, 5]), torch.tensor([2, 0])
    check_error(RuntimeError, lambda lib, a, b: lib.floor_divide(a, b), a, b)
    check_error(RuntimeError, lambda lib, a, b: lib.remainder(a, b), a, b)


def test_one_hot_class_out_of_range() -> None:
    check_error(RuntimeError, lambda lib, t: lib.nn.functional.one_hot(t, 3), torch.tensor([0, 3]))


def test_prod_gradient_with_and_without_zeros() -> None:
    for values in ([2.0, 3.0, 4.0], [2.0, 0.0, 4.0], [0.0, 0.0, 4.0]):
        g = genesis.tensor(values, requires_grad=True)
        t = torch.tensor(values, requires_grad=True)
        g.prod().backward()
        t.prod().backward()
        np.testing.assert_allclose(g.grad.numpy(), t.grad.numpy())


# ---------------------------------------------------------------- CUDA: deferred reports


@pytest.fixture
def deferred() -> Iterator[None]:
    """Device-side checks that report at the next synchronization (the suite runs them eagerly on CUDA)."""
    from genesis._impl.cuda import device_checks

    saved = device_checks.sync_checks
    device_checks.sync_checks = False
    try:
        yield
    finally:
        device_checks.sync_checks = saved


def _embedding(bad: int) -> genesis.Tensor:
    return F.embedding(genesis.tensor([[0, bad]], device="cuda"), genesis.randn(4, 3, device="cuda"))


def _gather(bad: int) -> genesis.Tensor:
    return genesis.randn(2, 4, device="cuda").gather(1, genesis.tensor([[0, bad], [1, 2]], device="cuda"))


def _index_select(bad: int) -> genesis.Tensor:
    return genesis.randn(4, 3, device="cuda").index_select(0, genesis.tensor([bad, 1], device="cuda"))


def _cross_entropy(bad: int) -> genesis.Tensor:
    return F.cross_entropy(genesis.randn(3, 4, device="cuda"), genesis.tensor([1, -100, bad], device="cuda"))


def _binary_cross_entropy(bad: int) -> genesis.Tensor:
    probabilities = genesis.tensor([0.5, float(bad)], device="cuda")  # 9 is out of [0, 1], 1 is in it
    return F.binary_cross_entropy(probabilities, genesis.tensor([1.0, 0.0], device="cuda"))


def _multinomial(bad: int) -> genesis.Tensor:
    weights = genesis.tensor([[0.5, 1.0], [1.0, 1.0 - bad]], device="cuda")  # a negative weight where bad = 9
    return genesis.multinomial(weights, 1)


def _bernoulli(bad: int) -> genesis.Tensor:
    return genesis.bernoulli(genesis.tensor([0.5, float(bad)], device="cuda"))  # 9 is out of [0, 1]


def _embedding_bag(bad: int) -> genesis.Tensor:
    # The first bag must start at 0: bad = 9 starts it at 3 (the offsets stay ordered and within the input).
    offsets = genesis.tensor([(bad - 1) * 3 // 8, 3], device="cuda")
    return F.embedding_bag(genesis.tensor([0, 2, 1, 3], device="cuda"), genesis.randn(4, 3, device="cuda"), offsets)


CASES = [
    (_embedding_bag, r"offsets\[0\] has to be 0, .* However, got 3"),
    (_multinomial, "multinomial: probability tensor contains either `inf`, `nan` or element < 0"),
    (_bernoulli, r"bernoulli: all probabilities must be in \[0, 1\]"),
    (_embedding, "embedding: index 9 is out of bounds for dimension 0 with size 4"),
    (_binary_cross_entropy, "all elements of input should be between 0 and 1"),
    (_gather, "gather: index 9 is out of bounds for dimension 1 with size 4"),
    (_index_select, "index_select: index 9 is out of bounds for dimension 0 with size 4"),
    (_cross_entropy, "Target 9 is out of bounds"),
]


@requires_cuda
@pytest.mark.parametrize("op,message", CASES, ids=lambda c: getattr(c, "__name__", ""))
@pytest.mark.parametrize("sync", ["item", "synchronize", "cpu", "stream", "event"])
def test_bad_index_raises_at_the_next_synchronization(deferred: None, op: Callable, message: str, sync: str) -> None:
    out = op(9)  # no exception here: nothing was read from the device
    with pytest.raises(RuntimeError, match=message + r".*detected on the device"):
        if sync == "item":
            out.sum().item()
        elif sync == "synchronize":
            genesis.cuda.synchronize()
        elif sync == "cpu":
            out.cpu()  # a device-to-host copy
        elif sync == "stream":
            genesis.cuda.current_stream().synchronize()
        else:
            genesis.cuda.current_stream().record_event().synchronize()
    genesis.cuda.synchronize()  # the flag was cleared: the next synchronization is clean
    assert np.isfinite(op(1).sum().item())  # and the context still works


@requires_cuda
def test_bad_index_is_made_safe_for_the_kernels_after_it(deferred: None) -> None:
    w = genesis.randn(4, 3, device="cuda")
    out = F.embedding(genesis.tensor([10**12, 1], device="cuda"), w)  # far out of range: no wild read
    with pytest.raises(RuntimeError, match="embedding: index 1000000000000 is out of bounds"):
        genesis.cuda.synchronize()
    np.testing.assert_array_equal(out[1].cpu().numpy(), w[1].cpu().numpy())


@requires_cuda
def test_sync_checks_mode_raises_the_cpu_class_at_the_call() -> None:
    from genesis._impl.cuda import device_checks

    saved = device_checks.sync_checks
    device_checks.sync_checks = True
    try:
        with pytest.raises(RuntimeError, match="gather: index 9 is out of bounds"):
            _gather(9)
        with pytest.raises(IndexError, match="Target 9 is out of bounds"):
            _cross_entropy(9)
    finally:
        device_checks.sync_checks = saved
    genesis.cuda.synchronize()


@requires_cuda
def test_checks_are_captured_into_graphs(deferred: None) -> None:
    w = genesis.randn(8, 4, device="cuda")
    idx = genesis.tensor([1, 2, 3], device="cuda")
    genesis.cuda.synchronize()
    g = genesis.cuda.CUDAGraph()
    with genesis.cuda.graph(g):
        out = F.embedding(idx, w)
    idx.copy_(genesis.tensor([7, 0, 5], device="cuda"))
    g.replay()
    np.testing.assert_array_equal(out.cpu().numpy(), w.cpu().numpy()[[7, 0, 5]])
    idx.copy_(genesis.tensor([7, 0, 8], device="cuda"))
    g.replay()
    with pytest.raises(RuntimeError, match="embedding: index 8 is out of bounds"):
        genesis.cuda.synchronize()


# ---------------------------------------------------------------- CUDA: a training step without synchronization


class _Block(genesis.nn.Module):
    def __init__(self, vocab: int, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.emb = genesis.nn.Embedding(vocab, dim)
        self.norm = genesis.nn.LayerNorm(dim)
        self.qkv = genesis.nn.Linear(dim, 3 * dim)
        self.out = genesis.nn.Linear(dim, dim)
        self.head = genesis.nn.Linear(dim, vocab, bias=False)

    def forward(self, tokens: genesis.Tensor) -> genesis.Tensor:
        B, T = tokens.shape
        x = self.emb(tokens)  # (B, T, dim)
        q, k, v = self.qkv(self.norm(x)).split(x.shape[-1], dim=-1)
        q, k, v = (t.reshape(B, T, self.heads, -1).transpose(1, 2) for t in (q, k, v))  # (B, heads, T, head_dim)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(B, T, -1)
        return self.head(x + self.out(y))  # (B, T, vocab)


@requires_cuda
def test_training_step_does_not_synchronize(deferred: None) -> None:
    if not hasattr(genesis.cuda, "synchronization_count"):
        pytest.skip("genesis.cuda.synchronization_count() is not available yet")
    vocab = 64
    model = _Block(vocab, 32, 4).to("cuda")
    opt = genesis.optim.AdamW(model.parameters(), lr=1e-3, fused=True)
    tokens = genesis.randint(0, vocab, (2, 16), device="cuda")
    targets = genesis.randint(0, vocab, (2, 16), device="cuda")
    targets[:, :2] = -100  # ignored positions

    def step() -> genesis.Tensor:
        with genesis.autocast("cuda", dtype=genesis.bfloat16):
            logits = model(tokens)
            loss = F.cross_entropy(logits.reshape(-1, vocab).float(), targets.reshape(-1), ignore_index=-100)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss

    _assert_steps_do_not_synchronize(step)


def _assert_steps_do_not_synchronize(step: Callable[[], genesis.Tensor]) -> None:
    step()  # the first step compiles kernels and creates the optimizer state
    genesis.cuda.synchronize()
    before = genesis.cuda.synchronization_count()
    for _ in range(3):
        loss = step()
    assert genesis.cuda.synchronization_count() == before, "a training step synchronized host and device"
    assert np.isfinite(loss.item())


@requires_cuda
def test_gan_step_does_not_synchronize(deferred: None) -> None:
    """A DCGAN-style discriminator step (LeakyReLU, sigmoid, BCELoss, Adam): the loss's range checks run on the
    device."""
    model = genesis.nn.Sequential(genesis.nn.Linear(8, 16), genesis.nn.LeakyReLU(0.2), genesis.nn.Linear(16, 1),
                                  genesis.nn.Sigmoid()).to("cuda")
    opt = genesis.optim.Adam(model.parameters(), lr=1e-3)
    x, label = genesis.randn(4, 8, device="cuda"), genesis.full((4,), 1.0, device="cuda")

    def step() -> genesis.Tensor:
        opt.zero_grad()
        loss = genesis.nn.BCELoss()(model(x).view(-1), label)
        loss.backward()
        opt.step()
        return loss

    _assert_steps_do_not_synchronize(step)


@requires_cuda
def test_text_classification_step_does_not_synchronize(deferred: None) -> None:
    """The text-classification tutorial's step: EmbeddingBag over a flat batch of tokens with offsets, Linear,
    cross-entropy, SGD; the offsets are checked on the device."""
    bag = genesis.nn.EmbeddingBag(50, 8, mode="mean").to("cuda")
    fc = genesis.nn.Linear(8, 4).to("cuda")
    opt = genesis.optim.SGD([*bag.parameters(), *fc.parameters()], lr=0.5)
    text = genesis.tensor([3, 7, 1, 4, 4, 9, 2], device="cuda")
    offsets, label = genesis.tensor([0, 3, 5], device="cuda"), genesis.tensor([1, 0, 3], device="cuda")

    def step() -> genesis.Tensor:
        opt.zero_grad()
        loss = F.cross_entropy(fc(bag(text, offsets)), label)
        loss.backward()
        opt.step()
        return loss

    _assert_steps_do_not_synchronize(step)


@requires_cuda
def test_median_of_all_elements_does_not_synchronize(deferred: None) -> None:
    """``median()``'s NaN rule (a NaN anywhere makes it NaN) is decided on the device, forward and backward."""
    x = genesis.randn(100, device="cuda", requires_grad=True)

    def step() -> genesis.Tensor:
        m = x.median()
        m.backward()
        return m.detach()

    _assert_steps_do_not_synchronize(step)


@requires_cuda
def test_policy_gradient_step_does_not_synchronize(deferred: None) -> None:
    """A REINFORCE step (actions drawn with multinomial, log_softmax, gather, Adam) and Bernoulli sampling: the
    weights' checks run on the device."""
    policy = genesis.nn.Sequential(genesis.nn.Linear(4, 16), genesis.nn.Tanh(), genesis.nn.Linear(16, 3)).to("cuda")
    opt = genesis.optim.Adam(policy.parameters(), lr=1e-2)
    obs = genesis.randn(8, 4, device="cuda")
    returns = genesis.randn(8, device="cuda")

    def step() -> genesis.Tensor:
        logits = policy(obs)
        with genesis.no_grad():
            actions = genesis.multinomial(F.softmax(logits, dim=-1), 1)  # (8, 1)
            keep = genesis.bernoulli(genesis.full((8,), 0.9, device="cuda"))
        log_prob = F.log_softmax(logits, dim=-1).gather(1, actions).squeeze(1)
        loss = -(log_prob * returns * keep).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    _assert_steps_do_not_synchronize(step)
