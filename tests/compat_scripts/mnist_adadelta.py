"""MNIST-style training as in PyTorch's examples: a CNN, Adadelta, StepLR, DataLoader; synthetic 14x14 digits."""

import argparse

import torch
import torch.nn.functional as F
from cnn_models import Net, deterministic_init_
from torch.optim.lr_scheduler import StepLR
from torch.utils.data import DataLoader, TensorDataset


def synthetic_digits(n: int) -> TensorDataset:
    i = torch.arange(n * 14 * 14, dtype=torch.float32).reshape(n, 1, 14, 14)
    images = torch.cos(i * 0.013) * torch.sin(i * 0.0071)
    labels = (torch.arange(n) * 7) % 10
    return TensorDataset(images, labels)


def train(model, device, loader, optimizer, losses):
    model.train()
    for data, target in loader:
        data, target = data.to(device), target.to(device)
        optimizer.zero_grad()
        output = model(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())


def test(model, device, loader):
    model.eval()
    test_loss, correct = 0.0, 0
    with torch.no_grad():
        for data, target in loader:
            data, target = data.to(device), target.to(device)
            output = model(data)
            test_loss += F.nll_loss(output, target, reduction="sum").item()
            pred = output.argmax(dim=1, keepdim=True)
            correct += pred.eq(target.view_as(pred)).sum().item()
    return test_loss / len(loader.dataset), correct


def main():
    parser = argparse.ArgumentParser(description="MNIST-style example")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--lr", type=float, default=1.0)
    parser.add_argument("--gamma", type=float, default=0.7)
    parser.add_argument("--dropout", type=float, default=0.25)
    parser.add_argument("--no-accel", action="store_true")
    args = parser.parse_args()

    use_accel = not args.no_accel and torch.accelerator.is_available()
    device = torch.accelerator.current_accelerator() if use_accel else torch.device("cpu")
    torch.manual_seed(1)
    train_loader = DataLoader(synthetic_digits(64), batch_size=args.batch_size, shuffle=False)
    test_loader = DataLoader(synthetic_digits(32), batch_size=args.batch_size)
    model = Net(args.dropout).to(device)
    deterministic_init_(model)
    optimizer = torch.optim.Adadelta(model.parameters(), lr=args.lr)
    scheduler = StepLR(optimizer, step_size=1, gamma=args.gamma)
    losses = []
    for epoch in range(1, args.epochs + 1):
        train(model, device, train_loader, optimizer, losses)
        test_loss, correct = test(model, device, test_loader)
        losses.append(test_loss)
        print(f"epoch {epoch}: test loss {test_loss:.6f}, {correct} correct, lr {scheduler.get_last_lr()[0]}")
        scheduler.step()
    return losses


if __name__ == "__main__":
    losses = main()
