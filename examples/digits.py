"""Train a small CNN and an MLP on scikit-learn's handwritten digits with Genesis, on the CPU or a GPU.

    python examples/digits.py [--epochs 20] [--out runs/digits] [--device cuda]

The 1,797 8x8 images are split 80/20 into train and test sets. Each model trains with AdamW and a one-cycle
learning-rate schedule; a tqdm bar shows the epoch, loss and test accuracy. The script writes loss and accuracy
curves (``curves.png``) and a resumable training checkpoint per model (``<model>.safetensors``) under ``--out``.
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits
from tqdm import tqdm

import genesis
import genesis.nn as nn
import genesis.nn.functional as F
from genesis.utils.data import DataLoader, TensorDataset


def make_cnn(layers: Any = nn) -> nn.Module:
    """Two conv blocks (conv, batch norm, ReLU, 2x2 max pool) and a small classifier head.

    ``layers`` is the namespace the layers come from (``genesis.nn``; the benchmark passes ``torch.nn`` too).
    """
    nn = layers
    return nn.Sequential(
        nn.Conv2d(1, 16, kernel_size=3, padding=1),  # (B, 16, 8, 8)
        nn.BatchNorm2d(16),
        nn.ReLU(),
        nn.MaxPool2d(2),  # (B, 16, 4, 4)
        nn.Conv2d(16, 32, kernel_size=3, padding=1),  # (B, 32, 4, 4)
        nn.BatchNorm2d(32),
        nn.ReLU(),
        nn.MaxPool2d(2),  # (B, 32, 2, 2)
        nn.Flatten(),  # (B, 128)
        nn.Linear(128, 64),
        nn.ReLU(),
        nn.Dropout(0.2),
        nn.Linear(64, 10),
    )


def make_mlp() -> nn.Module:
    """64 pixels -> 128 -> 64 -> 10 classes."""
    return nn.Sequential(nn.Flatten(), nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(),
                         nn.Linear(64, 10))


def load_data(seed: int, device: str = "cpu") -> tuple[TensorDataset, TensorDataset]:
    """Digits scaled to [0, 1] as (N, 1, 8, 8) float32 images on ``device``; a seeded 80/20 split."""
    digits = load_digits()
    images = (digits.images / 16.0).astype(np.float32)[:, None]  # (N, 1, 8, 8)
    labels = digits.target.astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(labels))
    n_test = len(labels) // 5
    test, train = order[:n_test], order[n_test:]
    return (TensorDataset(genesis.tensor(images[train], device=device), genesis.tensor(labels[train], device=device)),
            TensorDataset(genesis.tensor(images[test], device=device), genesis.tensor(labels[test], device=device)))


def accuracy(model: nn.Module, data: TensorDataset) -> float:
    model.eval()
    with genesis.no_grad():
        images, labels = data.tensors
        predicted = model(images).argmax(dim=1)
    model.train()
    return float((predicted == labels).float().mean().item())


def train(name: str, model: nn.Module, train_set: TensorDataset, test_set: TensorDataset, epochs: int,
          batch_size: int, lr: float, out: str) -> dict[str, list[float]]:
    """Train one model; returns per-epoch mean training loss and test accuracy."""
    loader = DataLoader(train_set, batch_size=batch_size, shuffle=True, generator=genesis.Generator().manual_seed(0))
    optimizer = genesis.optim.AdamW(model.parameters(), lr=lr, weight_decay=1e-4)
    scheduler = genesis.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=lr, epochs=epochs,
                                                      steps_per_epoch=len(loader))
    history: dict[str, list[float]] = {"loss": [], "accuracy": []}
    bar = tqdm(range(epochs), desc=f"{name:>3}", unit="epoch")
    for _ in bar:
        total, batches = 0.0, 0
        for images, labels in loader:
            loss = F.cross_entropy(model(images), labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            scheduler.step()
            total += float(loss.item())
            batches += 1
        history["loss"].append(total / batches)
        history["accuracy"].append(accuracy(model, test_set))
        bar.set_postfix(loss=f"{history['loss'][-1]:.4f}", test_acc=f"{history['accuracy'][-1]:.2%}")
    genesis.save_checkpoint(os.path.join(out, f"{name}.safetensors"), model=model, optimizer=optimizer,
                            scheduler=scheduler, step=epochs * len(loader))
    return history


def plot(histories: dict[str, dict[str, list[float]]], path: str) -> None:
    fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(10, 4))
    for name, history in histories.items():
        epochs = range(1, len(history["loss"]) + 1)
        ax_loss.plot(epochs, history["loss"], label=name)
        ax_acc.plot(epochs, [100 * a for a in history["accuracy"]], label=name)
    ax_loss.set(title="training loss", xlabel="epoch", yscale="log")
    ax_acc.set(title="test accuracy (%)", xlabel="epoch", ylim=(80, 100))
    for ax in (ax_loss, ax_acc):
        ax.grid(alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=1e-2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="runs/digits")
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    train_set, test_set = load_data(args.seed, args.device)
    histories = {}
    start = time.perf_counter()
    for name, make in (("cnn", make_cnn), ("mlp", make_mlp)):
        genesis.manual_seed(args.seed)
        histories[name] = train(name, make().to(args.device), train_set, test_set, args.epochs, args.batch_size,
                                args.lr, args.out)
    elapsed = time.perf_counter() - start
    plot(histories, os.path.join(args.out, "curves.png"))
    for name, history in histories.items():
        print(f"{name}: final test accuracy {history['accuracy'][-1]:.2%}")
    print(f"trained both models in {elapsed:.1f} s; curves and checkpoints in {args.out}/")


if __name__ == "__main__":
    main()
