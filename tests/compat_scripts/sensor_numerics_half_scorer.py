"""Sensor data cleaning and a half-precision scorer: NaN-aware clipping with per-channel calibration bounds, phase
wrapping of large timestamps, tolerant matching of integer ids, out-of-range fill values, complex spectra statistics,
integer quantization rules, a sparsity penalty at zero and a float16/bfloat16 scoring head with robust losses."""
import math
import warnings

import torch
import torch.nn.functional as F

losses = []


def add(t):
    """Record a tensor's values; NaN and the infinities as marker numbers (the comparison takes numbers only)."""
    for v in t.detach().double().flatten().tolist():
        losses.append(v if math.isfinite(v) else -12345.0 if math.isnan(v) else math.copysign(1e30, v))


def message(fn):
    """The error message fn raises ('' when it runs)."""
    try:
        fn()
    except (RuntimeError, TypeError, NotImplementedError) as e:
        return str(e)
    return ""


# readings with gaps and spikes; calibration bounds per channel, one lower bound missing (NaN)
i = torch.arange(24, dtype=torch.float32)
raw = (torch.sin(i * 0.7) * 5).reshape(6, 4)
raw[1, 2] = float("nan")
raw[3, 0] = float("inf")
raw[4, 1] = -float("inf")
lo = torch.tensor([-2.0, -3.0, float("nan"), -1.0])
hi = torch.tensor([2.0, 3.0, 4.0, 1.5])
clipped = raw.clamp(lo, hi)  # a NaN bound makes its channel NaN, as torch's kernel
add(clipped)
add(torch.isnan(clipped).sum(0))
w = raw.nan_to_num(0.0).clone().requires_grad_()
w.clamp(min=lo, max=hi).sum().backward()
add(w.grad)
add(torch.clamp(torch.tensor([1, 5, 9]), torch.tensor([2, 2, 2]), torch.tensor([4.5, 4.5, 4.5])))

# phase of large timestamps: fmod must not lose the fraction to a rounded quotient
stamps = torch.tensor([1e7 + 0.25, 123456.789, -98765.4321, 0.0, -0.0])
add(torch.fmod(stamps, 0.37))
add(torch.fmod(stamps.double(), 0.37))
add(torch.remainder(stamps, 0.37))
add(torch.signbit(torch.fmod(stamps, 2.0)))

# tolerant matching of integer ids (isclose applies its tolerances to integers too)
ids = torch.tensor([100000, 100001, 5, 6, -3])
add(torch.isclose(ids, ids.roll(1)))
add(torch.isclose(torch.tensor([3e38, 1.0]), torch.tensor([-3e38, 1.0 + 1e-7])))
losses.append("Float did not match Double" in message(lambda: torch.isclose(raw, raw.double())))
losses.append(message(lambda: torch.isclose(raw, raw, rtol=-1.0)).endswith("but got -1"))

# fill values beyond the dtype: masked_fill refuses, nan_to_num turns them into inf
half = raw.half()
mask = torch.isnan(half)
losses.append("c10::Half without overflow" in message(lambda: half.masked_fill(mask, -1e9)))
add(half.masked_fill(mask, torch.finfo(torch.float16).min))
add(half.nan_to_num(nan=0.0, posinf=1e6, neginf=-1e6))
add(raw.nan_to_num(nan=1e39))
add(raw.to(torch.bfloat16).nan_to_num())

# spectra: variance of complex bins is real
spec = torch.fft.rfft(clipped.nan_to_num(0.0), dim=0)
add(spec.var(0))
add(torch.std(spec, 0, correction=0))
add(torch.var_mean(spec.abs(), 0)[0])
losses.append(message(lambda: ids.std()).endswith("std and var only support floating point and complex dtypes"))
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    add(raw[:1, :1].var())
losses.append(any("degrees of freedom is <= 0" in str(c.message) for c in caught))

# integer quantization rules
u8 = torch.tensor([200, 7, 0, 255], dtype=torch.uint8)
add(u8.div(-3, rounding_mode="trunc"))
add(torch.addcmul(ids, ids, ids, value=0.5))
add(torch.add(ids > 5, ids < 100, alpha=2))
losses.append(message(lambda: ids.add(ids, alpha=0.5)).startswith("For integral input tensors"))
losses.append(torch.can_cast(torch.float32, torch.complex64))
losses.append(torch.can_cast(torch.complex64, torch.float64))
add(torch.sum(raw.nan_to_num(0.0, 0.0, 0.0), 1, out=torch.empty(0, dtype=torch.int64)))

# a sparsity penalty: the 0.5-norm passes no gradient to exact zeros
sparse_w = torch.tensor([[0.0, 0.5, -2.0], [0.0, 0.0, 0.0]], requires_grad=True)
torch.norm(sparse_w, p=0.5, dim=1).sum().backward()
add(sparse_w.grad)

# the scoring head in half precision, rounded as torch's kernels round
x = (torch.sin(torch.arange(64, dtype=torch.float32) * 0.731) * 6).reshape(4, 16)
target = x.flip(1)
for dt in (torch.float16, torch.bfloat16):
    h, t = x.to(dt), target.to(dt)
    add(F.mish(h))
    add(F.hardswish(h))
    add(F.selu(h))
    add(F.elu(h, alpha=0.7))
    add(F.glu(h))
    add(torch.logcumsumexp(h, 1)[:, -1])
    add(torch.logaddexp(h, t))
    add(torch.renorm(h, 2, 0, 5))
    add(F.huber_loss(h, t, delta=0.7, reduction="none"))
    add(F.smooth_l1_loss(h, t, beta=0.7, reduction="none"))
add(F.soft_margin_loss(torch.tensor([-100.0, -5.0, 3.0]), torch.tensor([1.0, 1.0, -1.0]), reduction="none"))
