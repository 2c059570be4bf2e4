"""A training script written for torch's DDP, with ``import genesis as torch`` in place of ``import torch``.

tests/test_distributed.py runs it under ``python -m genesis.distributed.run``; nothing else differs from the torch
script it was copied from.
"""

import os

import genesis as torch

nn = torch.nn


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(8, 32)
        self.fc2 = nn.Linear(32, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.relu(self.fc1(x)))


def main() -> None:
    local_rank = int(os.environ["LOCAL_RANK"])
    use_cuda = torch.cuda.is_available() and torch.cuda.device_count() >= int(os.environ["WORLD_SIZE"])
    if use_cuda:
        torch.cuda.set_device(local_rank)
    device = torch.device(f"cuda:{local_rank}" if use_cuda else "cpu")
    torch.distributed.init_process_group(backend="nccl" if use_cuda else "gloo")
    rank = torch.distributed.get_rank()
    world_size = torch.distributed.get_world_size()

    torch.manual_seed(0)
    data = torch.utils.data.TensorDataset(torch.randn(64, 8), torch.randint(0, 4, (64,)))
    sampler = torch.utils.data.distributed.DistributedSampler(data, num_replicas=world_size, rank=rank, shuffle=True)
    loader = torch.utils.data.DataLoader(data, batch_size=8, sampler=sampler)

    model = Net().to(device)
    model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[local_rank] if use_cuda else None)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()

    for epoch in range(2):
        sampler.set_epoch(epoch)
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
        total = loss.detach().clone()
        torch.distributed.all_reduce(total, op=torch.distributed.ReduceOp.SUM)
        if rank == 0:
            print(f"epoch {epoch} mean loss {total.item() / world_size:.4f}")

    weights = model.module.fc1.weight.detach().clone()
    gathered = [torch.zeros_like(weights) for _ in range(world_size)]
    torch.distributed.all_gather(gathered, weights)
    assert all(torch.equal(g, gathered[0]) for g in gathered), "replicas diverged"
    if rank == 0:
        torch.save(model.state_dict(), os.environ["CHECKPOINT"])
    torch.distributed.barrier()
    torch.distributed.destroy_process_group()
    print(f"TORCH-STYLE OK {rank}")


if __name__ == "__main__":
    main()
