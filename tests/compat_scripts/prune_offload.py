"""Pruning a small network, training it with its saved activations kept on the CPU under the legacy autograd
profiler, a hook registry of its own built on torch's RemovableHandle, and a benchmark Timer on the result."""

from collections import OrderedDict

import torch
import torch.autograd.profiler as profiler
import torch.nn as nn
import torch.nn.utils.prune as prune
from torch.utils import benchmark
from torch.utils.hooks import RemovableHandle

model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 3))
with torch.no_grad():
    for i, p in enumerate(model.parameters()):
        p.copy_(torch.sin(torch.arange(p.numel()) * 0.7 + i).reshape(p.shape) * 0.5)
x = torch.cos(torch.arange(48.0).reshape(8, 6) * 0.3)
target = torch.sin(torch.arange(24.0).reshape(8, 3))

prune.l1_unstructured(model[0], "weight", amount=0.3)
prune.ln_structured(model[2], "weight", amount=1, n=2, dim=0)
prune.global_unstructured([(model[0], "weight"), (model[2], "weight")], pruning_method=prune.L1Unstructured,
                          amount=0.2)
assert prune.is_pruned(model) and "0.weight_orig" in model.state_dict() and "0.weight_mask" in model.state_dict()


class StepHooks:
    """Callbacks after each step, registered the way torch's own hook registries do it."""

    def __init__(self):
        self.hooks = OrderedDict()

    def register(self, fn):
        handle = RemovableHandle(self.hooks)
        self.hooks[handle.id] = fn
        return handle


step_hooks = StepHooks()
seen = []
handle = step_hooks.register(seen.append)

optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
losses = []
with profiler.profile(record_shapes=True) as prof:
    for _ in range(6):
        optimizer.zero_grad()
        with profiler.record_function("forward"):
            with torch.autograd.graph.save_on_cpu():
                loss = nn.functional.mse_loss(model(x), target)
        loss.backward()
        optimizer.step()
        for fn in step_hooks.hooks.values():
            fn(loss.item())
        losses.append(loss.item())
handle.remove()
assert len(seen) == 6 and not step_hooks.hooks
assert any(row.key == "forward" and row.count == 6 for row in prof.key_averages())

prune.remove(model[0], "weight")
prune.remove(model[2], "weight")
losses.append(nn.functional.mse_loss(model(x), target).item())
losses.append(float((model[0].weight == 0).sum()) + float((model[2].weight == 0).sum()))

measurement = benchmark.Timer("model(x)", globals={"model": model, "x": x}, label="mlp").timeit(5)
assert measurement.number_per_run == 5 and measurement.median > 0 and "mlp" in repr(measurement)
print("losses", losses)
