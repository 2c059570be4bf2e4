"""Train a small GPT-style model with its whole training step captured in one CUDA graph.

The step (forward under bf16 autocast, backward, ``clip_grad_norm_``, a capturable fused AdamW step with a tensor
learning rate) is run eagerly three times on the static batch buffers, captured once, and then replayed every
iteration after copying the next batch into those buffers: one launch per step instead of several hundred.

    python examples/cuda_graph_training.py --steps 200
"""

from __future__ import annotations

import argparse
import math

import numpy as np

import genesis
import genesis.nn as nn
import genesis.nn.functional as F


class Block(nn.Module):
    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.ln_1 = nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width, bias=False)
        self.proj = nn.Linear(width, width, bias=False)
        self.ln_2 = nn.LayerNorm(width)
        self.fc = nn.Linear(width, 4 * width, bias=False)
        self.out = nn.Linear(4 * width, width, bias=False)

    def forward(self, x: genesis.Tensor) -> genesis.Tensor:
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln_1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v))  # (B, H, T, D)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).contiguous().view(B, T, C))  # (B, T, C)
        return x + self.out(F.gelu(self.fc(self.ln_2(x))))


class GPT(nn.Module):
    def __init__(self, vocab: int, block: int, width: int, layers: int, heads: int) -> None:
        super().__init__()
        self.wte = nn.Embedding(vocab, width)
        self.wpe = nn.Embedding(block, width)
        self.blocks = nn.ModuleList([Block(width, heads) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(width)
        self.lm_head = nn.Linear(width, vocab, bias=False)

    def forward(self, idx: genesis.Tensor, targets: genesis.Tensor) -> genesis.Tensor:
        B, T = idx.shape
        x = self.wte(idx) + self.wpe(genesis.arange(T, device=idx.device))  # (B, T, width)
        for block in self.blocks:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))  # (B, T, vocab)
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


def batches(rng: np.random.Generator, vocab: int, batch: int, block: int):
    """Endless batches of a learnable sequence: each token is the previous one plus one (mod vocab)."""
    while True:
        start = rng.integers(0, vocab, (batch, 1))
        seq = (start + np.arange(block + 1)) % vocab
        yield seq[:, :-1].astype(np.int64), seq[:, 1:].astype(np.int64)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--block", type=int, default=128)
    args = parser.parse_args()
    if not genesis.cuda.is_available():
        raise SystemExit("this example captures CUDA graphs: it needs a CUDA GPU")
    genesis.manual_seed(0)
    vocab, device = 256, "cuda"
    model = GPT(vocab, args.block, width=128, layers=2, heads=4).to(device)
    lr = genesis.tensor(3e-3, device=device)  # a tensor: the captured step reads its current value
    optimizer = genesis.optim.AdamW(model.parameters(), lr=lr, fused=True, capturable=True)
    data = batches(np.random.default_rng(0), vocab, args.batch, args.block)

    # Static buffers: the graph reads the batch from these addresses on every replay.
    static_x = genesis.zeros(args.batch, args.block, dtype=genesis.int64, device=device)
    static_y = genesis.zeros(args.batch, args.block, dtype=genesis.int64, device=device)

    def step() -> genesis.Tensor:
        with genesis.autocast(device_type="cuda", dtype=genesis.bfloat16):
            loss = model(static_x, static_y)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        return loss.detach()

    # Warm-up: kernels compile, cuBLASLt plans and workspaces are made, AdamW creates its state.
    for _ in range(3):
        x, y = next(data)
        static_x.copy_(genesis.from_numpy(x))
        static_y.copy_(genesis.from_numpy(y))
        step()
        optimizer.zero_grad(set_to_none=True)
    optimizer.zero_grad(set_to_none=True)  # the gradients are then allocated inside the graph's memory
    g = genesis.cuda.CUDAGraph()
    with genesis.cuda.graph(g):
        static_loss = step()
    print(f"captured one training step: {g.num_nodes()} graph nodes")

    for i in range(args.steps):
        x, y = next(data)
        static_x.copy_(genesis.from_numpy(x))
        static_y.copy_(genesis.from_numpy(y))
        lr.fill_(3e-3 * 0.5 * (1 + math.cos(math.pi * i / args.steps)))  # cosine schedule, read by the replay
        g.replay()
        if i % 20 == 0 or i == args.steps - 1:
            print(f"step {i:4d}  loss {static_loss.item():.4f}")


if __name__ == "__main__":
    main()
