"""A contrastive DDP training script written for torch (``import torch``), run by tests/test_distributed.py twice:
with torch under torch's launcher, and with Genesis (``genesis.torch_compat``) under Genesis's launcher.

It uses what multi-GPU contrastive trainers use: embeddings gathered from every rank with gradients
(``torch.distributed.nn.functional.all_gather``), a DDP communication hook, ``@record`` on the entry point and
objects gathered for logging. Rank 0 prints each step's loss; the test compares the two runs.
"""

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.distributed.elastic.multiprocessing.errors import record
from torch.distributed.nn.functional import all_gather as all_gather_with_grad
from torch.nn.parallel import DistributedDataParallel as DDP


class Encoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.normalize(self.net(x), dim=-1)


def init_(model: nn.Module) -> None:
    """Weights from a formula, the same in every framework."""
    with torch.no_grad():
        for i, p in enumerate(model.parameters()):
            values = np.sin(np.arange(p.numel(), dtype=np.float32) * (i + 1) * 0.37) * 0.3
            p.copy_(torch.from_numpy(values.reshape(tuple(p.shape))))


@record
def main() -> None:
    assert dist.is_torchelastic_launched()
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    model = Encoder()
    init_(model)
    ddp = DDP(model)
    ddp.register_comm_hook(None, default_hooks.allreduce_hook)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.5, momentum=0.9)
    rng = np.random.default_rng(0)
    views = rng.standard_normal((5, 2, world * 4, 8)).astype(np.float32)
    for step in range(5):
        mine = torch.from_numpy(views[step][:, rank * 4: (rank + 1) * 4].reshape(8, 8))
        z = ddp(mine)
        za, zb = z[:4], z[4:]
        all_a = torch.cat(all_gather_with_grad(za))
        all_b = torch.cat(all_gather_with_grad(zb))
        logits = all_a @ all_b.t() / 0.2
        loss = F.cross_entropy(logits, torch.arange(world * 4))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses = [None] * world if rank == 0 else None
        dist.gather_object(round(loss.item(), 6), losses, dst=0)
        if rank == 0:
            assert len(set(losses)) == 1, losses  # every rank computed the loss of the whole batch
            print(f"LOSS {step} {loss.item():.7f}", flush=True)
    dist.barrier()
    checksum = torch.stack([p.detach().double().sum() for p in model.parameters()]).sum()
    if rank == 0:
        print(f"CHECKSUM {checksum.item():.7f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
