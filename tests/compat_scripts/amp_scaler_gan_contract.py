"""A GAN trained with bfloat16 autocast on the CPU and one GradScaler over two optimizers, as the AMP recipes write
it: the discriminator's gradients unscaled and clipped, an injected inf that skips a step and backs the scale off,
growth after clean steps, the scaler's state dict round trip and pickling, and the scaler's refusals (no scale() yet,
an optimizer without gradients, a second unscale_ or step) in torch's words and exception classes. Around it the
autocast switches (``set_autocast_enabled`` / ``set_autocast_dtype``, a region without a dtype takes the current one,
a disabled region inside an enabled one) and the deprecated ``torch.cuda.amp`` / ``torch.cpu.amp`` spellings with
their FutureWarnings."""
import math
import pickle
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F

losses = []


def init(m, s):
    with torch.no_grad():
        for i, p in enumerate(m.parameters()):
            p.copy_(torch.sin(torch.arange(p.numel(), dtype=torch.float32) * (s + 0.13 * i)).reshape(p.shape) * 0.4)


gen = nn.Sequential(nn.Linear(6, 12), nn.Tanh(), nn.Linear(12, 6))
disc = nn.Sequential(nn.Linear(6, 8), nn.LeakyReLU(0.2), nn.Linear(8, 1))
init(gen, 0.3)
init(disc, 0.7)
opt_g = torch.optim.SGD(gen.parameters(), lr=0.05, momentum=0.5)
opt_d = torch.optim.SGD(disc.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-3)
scaler = torch.amp.GradScaler("cpu", init_scale=2.0 ** 10, growth_interval=2, backoff_factor=0.25, growth_factor=4.0)
losses.append(scaler.get_scale())
z = torch.cos(torch.arange(48, dtype=torch.float32).reshape(8, 6) * 0.3)
real = torch.sin(torch.arange(48, dtype=torch.float32).reshape(8, 6) * 0.17)
for step in range(6):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        fake = gen(z)
        scores = disc(torch.cat([real, fake.detach()]))  # one discriminator call per region
        target = torch.cat([torch.ones(8, 1), torch.zeros(8, 1)])
        loss_d = F.binary_cross_entropy_with_logits(scores, target)
    opt_d.zero_grad(set_to_none=True)
    scaler.scale(loss_d).backward()
    if step == 3:
        disc[0].weight.grad[0, 0] = float("inf")
    scaler.unscale_(opt_d)
    norm = nn.utils.clip_grad_norm_(disc.parameters(), max_norm=1.0)
    losses.append(norm.item() if math.isfinite(norm.item()) else -1.0)
    scaler.step(opt_d)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss_g = F.binary_cross_entropy_with_logits(disc(gen(z)), torch.ones(8, 1))
    opt_g.zero_grad()
    scaled = scaler.scale(loss_g)
    losses.append(scaled.dim() == 0 and scaled.dtype == torch.float32)
    scaled.backward()
    scaler.unscale_(opt_g)
    nn.utils.clip_grad_value_(gen.parameters(), clip_value=0.05)
    losses.append(scaler.step(opt_g) is None)
    scaler.update()
    losses += [scaler.get_scale(), loss_d.item(), loss_g.item(), gen[0].weight.sum().item()]

state = scaler.state_dict()
losses += [state["scale"], state["_growth_tracker"], state["growth_interval"], scaler._get_growth_tracker()]
resumed = torch.amp.GradScaler("cpu")
resumed.load_state_dict(state)
losses.append(resumed.get_scale())
copy = pickle.loads(pickle.dumps(scaler))
losses.append(copy.state_dict() == state)


FIX = "This may indicate your script did not use scaler.scale(loss or outputs) earlier in the iteration."


def refuses(fn, expected):
    try:
        fn()
        return expected == "ok"
    except (AssertionError, RuntimeError, ValueError) as e:
        return f"{type(e).__name__}: {e}" == expected


fresh = torch.amp.GradScaler("cpu")
losses += [refuses(lambda: fresh.unscale_(opt_g), f"AssertionError: Attempted unscale_ but _scale is None.  {FIX}"),
           refuses(lambda: fresh.step(opt_g), f"AssertionError: Attempted step but _scale is None.  {FIX}"),
           refuses(fresh.update, f"AssertionError: Attempted update but _scale is None.  {FIX}")]
# a loaded scale is created by the next scale() call
losses.append(refuses(lambda: resumed.update(512.0), f"AssertionError: Attempted update but _scale is None.  {FIX}"))
resumed.scale(torch.tensor(1.0))
resumed.update(torch.tensor(64.0))
losses.append(resumed.get_scale())
losses.append(refuses(lambda: resumed.update(torch.tensor([1.0, 2.0])),
                      "AssertionError: new_scale should be a float or a 1-element torch.cuda.FloatTensor or "
                      "torch.FloatTensor with requires_grad=False."))
unused = torch.optim.SGD([nn.Parameter(torch.zeros(2))], lr=0.1)
fresh.scale(torch.tensor(1.0, requires_grad=True)).backward()
losses += [refuses(lambda: fresh.step(unused), "AssertionError: No inf checks were recorded for this optimizer."),
           refuses(fresh.update, "AssertionError: No inf checks were recorded prior to update."),
           refuses(lambda: pickle.dumps(fresh), "AssertionError: A GradScaler instance may only be pickled at the "
                   "beginning of an iteration, or at the end after scaler.update().")]
opt_g.zero_grad()
scaler.scale(gen(z).sum()).backward()
scaler.unscale_(opt_g)
losses.append(refuses(lambda: scaler.unscale_(opt_g),
                      "RuntimeError: unscale_() has already been called on this optimizer since the last update()."))
scaler.step(opt_g)
losses += [refuses(lambda: scaler.step(opt_g), "RuntimeError: step() has already been called since the last update()."),
           refuses(lambda: scaler.step(opt_g, closure=lambda: 0),
                   "RuntimeError: Closure use is not currently supported if GradScaler is enabled.")]
scaler.update()
losses += [refuses(lambda: torch.amp.GradScaler("cpu", growth_factor=0.5),
                   "AssertionError: The growth factor must be > 1.0."),
           refuses(lambda: torch.amp.GradScaler("cpu", enabled=False, growth_factor=0.5).get_scale(), "ok")]
outs = scaler.scale((torch.tensor(1.0), [torch.tensor(2.0)], iter([torch.tensor(3.0)])))
losses += [type(outs) is tuple, type(outs[1]) is list, type(outs[2]) is map, outs[1][0].item()]

# the autocast switches
x = torch.ones(2, 2)
torch.set_autocast_enabled("cpu", True)
torch.set_autocast_dtype("cpu", torch.float16)
losses.append((x @ x).dtype == torch.float16)
with torch.autocast("cpu"):  # no dtype: the current one
    losses.append(torch.get_autocast_dtype("cpu") == torch.float16)
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=False):
        losses += [torch.is_autocast_enabled("cpu"), (x @ x).dtype == torch.float32]
        losses.append(torch.get_autocast_dtype("cpu") == torch.bfloat16)
    losses.append((x @ x).dtype == torch.float16)
torch.set_autocast_enabled("cpu", False)
torch.set_autocast_dtype("cpu", torch.bfloat16)
losses += [torch.is_autocast_enabled("cpu"), (x @ x).dtype == torch.float32]

# the older spellings
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    old = torch.cuda.amp.GradScaler()
    with torch.cpu.amp.autocast():
        losses.append((x @ x).dtype == torch.bfloat16)
    legacy = torch.cpu.amp.GradScaler(init_scale=8.0)
losses += [old.is_enabled(), old.get_scale(), legacy.get_scale()]
losses.append([f"{w.category.__name__}: {w.message}" for w in caught] == [
    "FutureWarning: `torch.cuda.amp.GradScaler(args...)` is deprecated. Please use "
    "`torch.amp.GradScaler('cuda', args...)` instead.",
    "UserWarning: torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.",
    "FutureWarning: `torch.cpu.amp.autocast(args...)` is deprecated. Please use `torch.amp.autocast('cpu', args...)` "
    "instead.",
    "FutureWarning: `torch.cpu.amp.GradScaler(args...)` is deprecated. Please use "
    "`torch.amp.GradScaler('cpu', args...)` instead."])
