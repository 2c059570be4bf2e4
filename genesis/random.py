"""Random numbers: counter-based generators and the random creation functions.

A ``Generator`` is a (seed, offset) pair. Every draw asks the backend for numbers from stream ``(seed, offset)`` and
advances the offset, so a seed reproduces the same sequence run to run, a state can be saved as two integers, and
the CPU and CUDA backends share one semantics (``manual_seed`` seeds every device's default generator).
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import operator
import time
import warnings
from typing import Any, Iterator, Sequence

from genesis import dtypes
from genesis import memory_format as _mf
from genesis.autograd import is_grad_enabled
from genesis.device import device as Device
from genesis.device import factory_device, to_device
from genesis.ndarray import NDArray, broadcast_shapes
from genesis.ops.complex import view_as_complex
from genesis.ops.join import stack
from genesis.ops.nn import check_all
from genesis.tensor import Tensor, _like, _made, _shape_from, _size_args, tensor

#: The size of torch's CPU generator state (``torch.get_rng_state()``): its Mersenne Twister and normal-sample cache.
TORCH_CPU_STATE_BYTES = 5056


class Generator:
    """A counter-based random generator for one device (``genesis.Generator(device="cpu")``)."""

    def __init__(self, device: Any = "cpu") -> None:
        self.device = to_device(device)
        self._seed = 67280421310721
        self._offset = 0

    def manual_seed(self, seed: int) -> Generator:
        """Restart the stream from ``seed``, a Python int (RuntimeError for a float, bool, tensor... as torch's
        generator; ``genesis.manual_seed`` converts with ``int()`` first)."""
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise RuntimeError(f"manual_seed expected a long, but got {type(seed).__name__}")
        if not -(1 << 63) <= seed < (1 << 64):
            raise RuntimeError(f"manual_seed: seed must be within the range [-0x8000_0000_0000_0000, "
                               f"0xffff_ffff_ffff_ffff], got {seed}")
        self._seed = seed % (1 << 64)
        self._offset = 0
        return self

    def seed(self) -> int:
        """Seed from the clock and return the new seed."""
        self.manual_seed(time.time_ns() % (1 << 63))
        return self._seed

    def initial_seed(self) -> int:
        return self._seed

    def get_state(self) -> Tensor:
        """The generator's state as a uint8 CPU tensor, as torch's (here 16 bytes: the seed and the count of numbers
        drawn, little-endian)."""
        raw = self._seed.to_bytes(8, "little") + self._offset.to_bytes(8, "little")
        return tensor(list(raw), dtype=dtypes.uint8)

    def set_state(self, state: Tensor) -> Generator:
        """Restore a state from ``get_state`` (also the int64 triple that Genesis wrote before).

        torch's CPU state (``torch.get_rng_state()``, 5056 bytes of Mersenne Twister, as in a Hugging Face Trainer's
        ``rng_state.pth``) cannot be continued by this counter-based generator: it seeds the generator from a hash of
        those bytes (the same state always gives the same numbers) and warns that torch's stream is not reproduced.
        torch's CUDA state (seed and offset, 16 bytes) is read as Genesis's own.
        """
        if state.dtype is dtypes.int64 and tuple(state.shape) == (3,):  # the earlier format
            low, high, offset = (int(v) for v in state.tolist())
            self._seed, self._offset = low + (high << 63), offset
            return self
        if state.dtype is not dtypes.uint8:
            raise TypeError(f"expected a genesis.ByteTensor, but got {state.dtype.name}")
        raw = bytes(state.reshape(-1).tolist())
        if len(raw) == TORCH_CPU_STATE_BYTES:
            warnings.warn("set_rng_state: this is torch's CPU generator state (Mersenne Twister), which Genesis's "
                          "counter-based generator cannot continue; the generator is seeded deterministically from "
                          "its bytes instead, so torch's random stream is not reproduced exactly", UserWarning,
                          stacklevel=2)
            self._seed, self._offset = int.from_bytes(hashlib.blake2b(raw, digest_size=8).digest(), "little"), 0
            return self
        if len(raw) != 16:
            raise RuntimeError(f"Expected a generator state of 16 bytes (from get_state / get_rng_state) or torch's "
                               f"CPU state of {TORCH_CPU_STATE_BYTES} bytes, got {len(raw)}")
        self._seed = int.from_bytes(raw[:8], "little")
        self._offset = int.from_bytes(raw[8:], "little")
        return self

    def next_stream(self, numel: int) -> tuple[int, int]:
        """Reserve ``numel`` numbers: returns (seed, offset) for the backend and advances the offset."""
        offset = self._offset
        self._offset += max(int(numel), 1)  # a Python int: a numpy count here would overflow every later draw
        return self._seed, offset


_default_generators: dict[Device, Generator] = {}


def default_generator(device: Any = "cpu") -> Generator:
    dev = to_device(device)
    gen = _default_generators.get(dev)
    if gen is None:
        gen = _default_generators[dev] = Generator(dev)
        if _global_seed is not None:
            gen.manual_seed(_global_seed)  # a device first used after manual_seed starts from that seed
    return gen


_global_seed: int | None = None


def manual_seed(seed: int) -> Generator:
    """Seed the default generators of every device (also those first used later); returns the CPU one."""
    global _global_seed
    seed = int(seed)
    cpu_gen = default_generator("cpu").manual_seed(seed)
    _global_seed = seed
    for gen in _default_generators.values():
        gen.manual_seed(seed)
    return cpu_gen


def seed() -> int:
    return default_generator("cpu").seed()


def initial_seed() -> int:
    return default_generator("cpu").initial_seed()


def get_rng_state() -> Tensor:
    return default_generator("cpu").get_state()


def set_rng_state(state: Tensor) -> None:
    default_generator("cpu").set_state(state)


@contextlib.contextmanager
def fork_rng(devices: Any = None, enabled: bool = True, _caller: str = "fork_rng", _devices_kw: str = "devices",
             device_type: str = "cuda") -> Iterator[None]:
    """Run a block with the random states saved before it and restored after it (``torch.random.fork_rng``): draws
    inside the block leave the draws after it unchanged, on the CPU and on ``devices`` (GPU indices or devices;
    by default every device whose generator was used)."""
    if not enabled:
        yield
        return
    if devices is None:
        targets = [default_generator("cpu"), *(g for d, g in _default_generators.items() if d.type != "cpu")]
    else:
        targets = [default_generator("cpu")] + [
            default_generator(Device(device_type, d) if isinstance(d, int) else d) for d in devices]
    saved = [(g, g.get_state()) for g in targets]
    try:
        yield
    finally:
        for g, state in saved:
            g.set_state(state)


def _stream(generator: Generator | None, device: Device, numel: int) -> tuple[int, int]:
    gen = generator if generator is not None else default_generator(device)
    return gen.next_stream(numel)


#: torch's kernel that refuses an integer or bool dtype, named in its error, per sample.
_FLOAT_KERNELS = {"uniform": "check_uniform_bounds", "normal": "normal_kernel_cpu"}


def _float_dtype(dtype: Any, sample: str) -> dtypes.dtype:
    """The dtype of random floats: floating or complex, else NotImplementedError with torch's message."""
    d = dtypes.to_dtype(dtype) if dtype is not None else dtypes.get_default_dtype()
    if d.category < 2:
        raise NotImplementedError(f"\"{_FLOAT_KERNELS[sample]}\" not implemented for "
                                  f"'{dtypes.SCALAR_TYPE_NAMES.get(d, d.name)}'")
    return d


def _random_floats(sample: str, shape: tuple[int, ...], dtype: Any, generator: Generator | None, device: Any,
                   requires_grad: bool, layout: Any, pin_memory: bool, op: str) -> Tensor:
    """``sample`` ("uniform" or "normal") of ``shape`` in ``dtype`` (the default float dtype if None). A complex
    tensor draws its real and imaginary parts as the last dim of a real one, as torch fills a complex tensor's real
    view (normal parts with variance 1/2 each, so that the complex samples have variance 1). ``layout``: None or
    ``strided``; ``pin_memory`` as ``genesis.tensor._made``."""
    _mf.check_strided(op, layout)
    d, device = _float_dtype(dtype, sample), factory_device(device)
    if d.category != 3:
        s, o = _stream(generator, device, math.prod(shape))
        return _made(getattr(device.backend, sample)(shape, d, device, s, o), requires_grad, pin_memory)
    parts = shape + (2,)
    s, o = _stream(generator, device, math.prod(parts))
    nd = getattr(device.backend, sample)(parts, d.to_real, device, s, o)
    if sample == "normal":
        nd = nd.binary("mul", math.sqrt(0.5))
    return view_as_complex(_made(nd, False, pin_memory)).requires_grad_(requires_grad)


def rand(*sizes: Any, size: Any = None, generator: Generator | None = None, dtype: Any = None, layout: Any = None,
         device: Any = None, requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """Uniform samples from [0, 1)."""
    return _random_floats("uniform", _shape_from(sizes, size), dtype, generator, device, requires_grad, layout,
                          pin_memory, "rand")


def randn(*sizes: Any, size: Any = None, generator: Generator | None = None, dtype: Any = None, layout: Any = None,
          device: Any = None, requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """Standard normal samples."""
    return _random_floats("normal", _shape_from(sizes, size), dtype, generator, device, requires_grad, layout,
                          pin_memory, "randn")


def randint(low: int, high: int | Sequence[int] | None = None, size: Sequence[int] | None = None,
            generator: Generator | None = None, dtype: Any = None, device: Any = None, requires_grad: bool = False,
            *, layout: Any = None, pin_memory: bool = False) -> Tensor:
    """Integers uniformly from [low, high); ``randint(high, size)`` starts at 0, as torch. ``size`` is required and
    must be a sequence of ints (TypeError otherwise, as torch's binding)."""
    _mf.check_strided("randint", layout)
    if isinstance(high, (tuple, list)):
        low, high, size = 0, low, high
    if isinstance(size, int):
        raise TypeError(f"randint(): argument 'size' (position {2 if high is None else 3}) must be tuple of ints, "
                        f"not int")
    if high is None and size is not None:
        low, high = 0, low
    if size is None:
        raise TypeError("randint() missing required argument 'size'" if high is None else
                        f"randint(): argument 'size' (position 2) must be tuple of ints, not {type(high).__name__}")
    if low >= high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    shape, dev = _size_args(tuple(size)), factory_device(device)
    d = dtypes.to_dtype(dtype) if dtype is not None else dtypes.int64
    s, o = _stream(generator, dev, math.prod(shape))
    nd = dev.backend.randint(int(low), int(high), shape, dtypes.int64, dev, s, o)
    return _made(nd.astype(d), requires_grad, pin_memory)


def randperm(n: int, generator: Generator | None = None, dtype: Any = None, device: Any = None, *,
             layout: Any = None, requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """A random permutation of 0..n-1 (argsort of uniform keys); torch's factory keywords (``layout`` None or
    ``strided``)."""
    _mf.check_strided("randperm", layout)
    if n < 0:
        raise RuntimeError(f"randperm: n must be non-negative, got {n}")
    keys = rand(n, generator=generator, dtype=dtypes.float64, device=device)
    out = keys.argsort()
    out = out.to(dtypes.to_dtype(dtype)) if dtype is not None else out
    return _made(out.ndarray, requires_grad, pin_memory)


def rand_like(input: Tensor, dtype: Any = None, device: Any = None, generator: Generator | None = None, *,
              layout: Any = None, requires_grad: bool = False, memory_format: Any = _mf.preserve_format) -> Tensor:
    """Uniform samples from [0, 1) shaped and (``preserve_format``) laid out like ``input``; NotImplementedError for
    an integer or bool dtype, as torch."""
    out = _random_floats("uniform", tuple(input.shape), dtype or input.dtype, generator, device or input.device,
                         requires_grad, layout, False, "rand_like")
    return _like(input, out, memory_format, "rand_like")


def randn_like(input: Tensor, dtype: Any = None, device: Any = None, generator: Generator | None = None, *,
               layout: Any = None, requires_grad: bool = False, memory_format: Any = _mf.preserve_format) -> Tensor:
    """Standard normal samples shaped and (``preserve_format``) laid out like ``input``; NotImplementedError for an
    integer or bool dtype, as torch."""
    out = _random_floats("normal", tuple(input.shape), dtype or input.dtype, generator, device or input.device,
                         requires_grad, layout, False, "randn_like")
    return _like(input, out, memory_format, "randn_like")


def randint_like(input: Tensor, low: int | None = None, high: int | None = None, dtype: Any = None,
                 device: Any = None, *, generator: Generator | None = None, layout: Any = None,
                 requires_grad: bool = False, memory_format: Any = _mf.preserve_format) -> Tensor:
    """Integers uniformly from [low, high) shaped and laid out like ``input``, in its dtype unless given (any dtype,
    integer ones included); ``randint_like(input, high)`` starts at 0, as torch."""
    if high is None:
        if low is None:
            raise TypeError("randint_like() missing 1 required positional argument: 'high'")
        low, high = 0, low
    out = randint(0 if low is None else low, high, input.shape, generator=generator, dtype=dtype or input.dtype,
                  device=device or input.device, requires_grad=requires_grad, layout=layout)
    return _like(input, out, memory_format, "randint_like")


def normal(mean: Any = 0.0, std: Any = 1.0, size: Sequence[int] | None = None, generator: Generator | None = None,
           dtype: Any = None, device: Any = None, *, layout: Any = None, requires_grad: bool = False,
           pin_memory: bool = False) -> Tensor:
    """Normal samples with the given mean and std (numbers or broadcastable tensors); with numbers and ``size``,
    torch's factory keywords (``layout`` None or ``strided``)."""
    _mf.check_strided("normal", layout)
    _check_std(std)
    if isinstance(mean, Tensor) or isinstance(std, Tensor):
        ref = mean if isinstance(mean, Tensor) else std
        from genesis.ndarray import broadcast_shapes

        shape = broadcast_shapes("normal", getattr(mean, "shape", ()), getattr(std, "shape", ()))
        noise = randn(shape, generator=generator, dtype=ref.dtype, device=ref.device)
        return (noise * std + mean).detach()
    shape = tuple(size) if size is not None else ()
    out = randn(shape, generator=generator, dtype=dtype, device=device) * std + mean
    return _made(out.ndarray, requires_grad, pin_memory)


def _check_std(std: Any) -> None:
    """Refuse a negative or NaN standard deviation, as torch does (``not std >= 0`` also catches NaN)."""
    if isinstance(std, Tensor):
        if std.numel() and not bool((std.detach() >= 0).all()):
            raise RuntimeError("normal expects all elements of std >= 0.0")
    elif not std >= 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")


def bernoulli(input: Tensor, p: float | None = None, generator: Generator | None = None) -> Tensor:
    """0/1 samples with probability ``input`` (or ``p``) of a one, in input's dtype."""
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"bernoulli: not implemented for '{dtypes.SCALAR_TYPE_NAMES[input.dtype]}' (floating "
                                  "inputs only)")
    probs = input if p is None else full_like_value(input, p)
    _check_probabilities("bernoulli", probs)
    u = rand(probs.shape, generator=generator, dtype=dtypes.float64 if probs.dtype is dtypes.float64 else
             dtypes.float32, device=probs.device)
    return (u < probs.detach()).to(input.dtype)


def _check_probabilities(op: str, probs: Tensor) -> None:
    """RuntimeError unless every probability lies in [0, 1] (NaN fails too, as in torch). Read on the CPU (free
    there); on a GPU checked on the device: no host read."""
    if not probs.numel():
        return
    probs = probs.detach()
    message = f"{op}: all probabilities must be in [0, 1] (Expected p_in >= 0 && p_in <= 1)"
    if probs.device.type == "cpu":
        low, high = stack([probs.amin(), probs.amax()]).tolist()
        if not (low >= 0 and high <= 1):
            raise RuntimeError(message)
    else:
        check_all((probs >= 0) & (probs <= 1), RuntimeError, message)


def full_like_value(x: Tensor, value: float) -> Tensor:
    return Tensor._wrap(NDArray.full(x.shape, value, x.dtype, x.device))


_BAD_WEIGHTS = "multinomial: probability tensor contains either `inf`, `nan` or element < 0"
_BAD_TOTAL = "multinomial: invalid multinomial distribution (sum of probabilities <= 0)"


def _check_weights(probs: NDArray, totals: NDArray) -> None:
    """multinomial's checks of its (rows, categories) weights and their row ``totals``, in torch's order: NaN,
    negative and -inf weights fail ">= 0", and a +inf weight makes its row's total inf. Read on the CPU, where that
    costs nothing; on a GPU checked on the device, so that sampling never makes the host wait (the second check
    passes where the first fails, so the device reports the first error)."""
    if probs.device.type == "cpu":
        weights, sums = probs.backend.to_numpy(probs), totals.backend.to_numpy(totals)
        if not (weights.min() >= 0 and sums.max() < math.inf):
            raise RuntimeError(_BAD_WEIGHTS)
        if sums.min() <= 0:
            raise RuntimeError(_BAD_TOTAL)
        return
    p, t = Tensor._wrap(probs), Tensor._wrap(totals)
    valid = (p >= 0).all() & (t < math.inf).all()
    check_all(valid, RuntimeError, _BAD_WEIGHTS)
    check_all(~valid | (t > 0).all(), RuntimeError, _BAD_TOTAL)


def multinomial(input: Tensor, num_samples: int, replacement: bool = False, generator: Generator | None = None
                ) -> Tensor:
    """Sample category indices from rows of non-negative weights.

    With replacement: inverse-CDF sampling (searchsorted into the cumulative weights). Without, and for a single
    draw: the Gumbel-top-k trick (keys ``log(u) / w`` ordered), which draws the same distribution as sequential
    sampling. The weights are checked on the device (a GPU reports bad weights at the next synchronization, as
    torch's device-side asserts), so sampling never makes the host wait. A sampler has no gradient: it runs on the
    arrays, below autograd.
    """
    if input.ndim not in (1, 2):
        raise RuntimeError(f"multinomial: prob_dist must be 1 or 2 dim, got {input.ndim}")
    num_samples = operator.index(num_samples)
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: {input.dtype.name}")
    probs = input.ndarray.astype(dtypes.float64)
    squeeze = len(probs.shape) == 1
    if squeeze:
        probs = probs.reshape((1,) + probs.shape)
    rows, n_cat = probs.shape
    if n_cat == 0:
        raise RuntimeError("multinomial: cannot sample from an empty set of categories (the weights have no entries)")
    totals = probs.sum((1,))
    if probs.size:
        _check_weights(probs, totals)
    if not replacement and num_samples > n_cat:
        raise RuntimeError(f"multinomial: cannot sample n_sample > prob_dist.size(-1) samples without replacement "
                           f"({num_samples} > {n_cat})")
    if num_samples <= 0:
        raise RuntimeError(f"multinomial: cannot sample n_sample <= 0 samples ({num_samples})")
    backend, device = probs.backend, probs.device
    if replacement and num_samples > 1:
        cdf = backend.cumulative("cumsum", probs, 1) / totals.reshape((rows, 1))
        s, o = _stream(generator, device, rows * num_samples)
        u = backend.uniform((rows, num_samples), dtypes.float64, device, s, o)
        out = backend.searchsorted(cdf, u, True).binary("minimum", n_cat - 1)
    else:
        # Gumbel-top-k: the keys log(u) / w in decreasing order draw as sequential sampling without replacement
        # does; a single draw (with or without replacement alike) is their argmax.
        s, o = _stream(generator, device, probs.size)
        u = backend.uniform(probs.shape, dtypes.float64, device, s, o)
        keys = u.binary("maximum", 1e-300).unary("log") / probs
        out = backend.arg_reduce("argmax", keys, 1, True) if num_samples == 1 else \
            backend.sort(keys, 1, True, False)[1].narrow(1, 0, num_samples)
    return Tensor._wrap(out.reshape(out.shape[1:]) if squeeze else out)


def uniform_(t: Tensor, a: float = 0.0, b: float = 1.0, generator: Generator | None = None) -> Tensor:
    """Fill ``t`` with samples from U[a, b) in place."""
    if not a <= b:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={a:g} > to={b:g}")
    u = rand(t.shape, generator=generator, dtype=t.dtype, device=t.device)
    return t._fill_from((u * (b - a) + a).ndarray)


def normal_(t: Tensor, mean: float = 0.0, std: float = 1.0, generator: Generator | None = None) -> Tensor:
    """Fill ``t`` with samples from N(mean, std²) in place."""
    _check_std(std)
    n = randn(t.shape, generator=generator, dtype=t.dtype, device=t.device)
    return t._fill_from((n * std + mean).ndarray)


def bernoulli_(t: Tensor, p: float | Tensor = 0.5, generator: Generator | None = None) -> Tensor:
    """Fill ``t`` in place with 0/1 samples of probability ``p`` of a one: a number, or a tensor of probabilities
    that broadcasts to ``t``; the tensor is left unchanged where ``p`` is refused."""
    if isinstance(p, Tensor):
        if broadcast_shapes("bernoulli_", t.shape, p.shape) != t.shape:
            raise RuntimeError(f"bernoulli_: the probabilities of shape {list(p.shape)} cannot be broadcast to the "
                               f"tensor's shape {list(t.shape)}")
        _check_probabilities("bernoulli_", p)
    elif not 0 <= p <= 1:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p}")
    u = rand(t.shape, generator=generator, dtype=dtypes.float32, device=t.device)
    return t._fill_from((u < p).to(t.dtype).ndarray)


#: torch's ``random_()`` without bounds draws from [0, high): an integer type's non-negative values, a floating
#: type's integers up to 2 ** its mantissa digits inclusive (int64's last value is left out: ``randint`` takes an
#: int64 ``high``).
_RANDOM_HIGH = {
    dtypes.bool_: 2, dtypes.uint8: 1 << 8, dtypes.int8: 1 << 7, dtypes.int16: 1 << 15, dtypes.int32: 1 << 31,
    dtypes.int64: (1 << 63) - 1, dtypes.float16: (1 << 11) + 1, dtypes.bfloat16: (1 << 8) + 1,
    dtypes.float32: (1 << 24) + 1, dtypes.float64: (1 << 53) + 1,
}

#: The range of values of the narrow types, named as torch's bound errors name them.
_RANDOM_LIMITS = {
    dtypes.bool_: (0, 1, "bool"), dtypes.uint8: (0, 255, "unsigned char"), dtypes.int8: (-128, 127, "signed char"),
    dtypes.int16: (-(1 << 15), (1 << 15) - 1, "short int"), dtypes.int32: (-(1 << 31), (1 << 31) - 1, "int"),
    dtypes.float16: (-65504, 65504, "c10::Half"),
}


def random_(t: Tensor, low: int = 0, high: int | None = None, generator: Generator | None = None) -> Tensor:
    """Fill ``t`` in place with integers drawn uniformly from [low, high) (``random_(high)``: from [0, high);
    ``random_()``: from the values its dtype holds, see ``_RANDOM_HIGH``). Bounds that ``t``'s dtype cannot hold
    raise torch's RuntimeError, leaving ``t`` unchanged."""
    bounded = high is not None or low != 0
    if high is None:
        low, high = (0, _RANDOM_HIGH.get(t.dtype, 1 << 24)) if low == 0 else (0, low)
    if bounded and t.dtype in _RANDOM_LIMITS:
        lo, hi, name = _RANDOM_LIMITS[t.dtype]
        if not lo <= low <= hi:
            raise RuntimeError(f"random_: from is out of bounds for {name} (from={low})")
        if low < high and not lo <= high - 1 <= hi:
            raise RuntimeError(f"random_: to - 1 is out of bounds for {name} (to={high})")
    r = randint(low, high, t.shape, generator=generator, device=t.device)
    return t._fill_from(r.to(t.dtype).ndarray)


def _continuous(t: Tensor, name: str) -> None:
    """torch's refusal to fill an integer tensor from a continuous distribution."""
    if not t.dtype.is_floating_point:
        raise RuntimeError(f"{name} distribution is a continuous probability distribution. dtype must be a floating "
                           f"point but you specified {t.dtype.name}")


def exponential_(t: Tensor, lambd: float = 1.0, *, generator: Generator | None = None) -> Tensor:
    """Fill ``t`` in place with samples of the exponential distribution of rate ``lambd``: ``-log(1 - u) / lambd``."""
    if not lambd > 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd}")
    _continuous(t, "Exponential")
    u = rand(t.shape, generator=generator, dtype=t.dtype, device=t.device)
    return t._fill_from(((1 - u).log() * (-1.0 / lambd)).ndarray)


def cauchy_(t: Tensor, median: float = 0.0, sigma: float = 1.0, *, generator: Generator | None = None) -> Tensor:
    """Fill ``t`` in place with Cauchy samples: ``median + sigma * tan(pi * (u - 1/2))``."""
    if not sigma > 0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma}")
    _continuous(t, "Cauchy")
    u = rand(t.shape, generator=generator, dtype=dtypes.float64, device=t.device)
    return t._fill_from((((u - 0.5) * math.pi).tan() * sigma + median).to(t.dtype).ndarray)


def log_normal_(t: Tensor, mean: float = 1.0, std: float = 2.0, *, generator: Generator | None = None) -> Tensor:
    """Fill ``t`` in place with log-normal samples ``exp(N(mean, std^2))`` (``mean`` and ``std`` of the logarithm)."""
    if not std > 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std}")
    if not t.dtype.is_floating_point:
        raise NotImplementedError(f"log_normal_: not implemented for '{dtypes.SCALAR_TYPE_NAMES[t.dtype]}' (floating "
                                  "tensors only)")
    n = randn(t.shape, generator=generator, dtype=dtypes.float64, device=t.device)
    return t._fill_from((n * std + mean).exp().to(t.dtype).ndarray)


def geometric_(t: Tensor, p: float, *, generator: Generator | None = None) -> Tensor:
    """Fill ``t`` in place with the number of Bernoulli(``p``) trials up to the first success (1, 2, ...):
    ``ceil(log(1 - u) / log(1 - p))``; integer tensors too, as torch."""
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p}")
    if t.dtype is dtypes.bool_:
        raise NotImplementedError("geometric_: not implemented for 'Bool'")
    u = rand(t.shape, generator=generator, dtype=dtypes.float64, device=t.device)
    trials = ((1 - u).log() / math.log1p(-p)).ceil().clamp(min=1)
    return t._fill_from(trials.to(t.dtype).ndarray)


def _standard_gamma(concentration: Tensor, generator: Generator | None = None) -> Tensor:
    """Samples of Gamma(concentration, rate=1), differentiable in ``concentration`` (``torch._standard_gamma``).

    Sampling is Marsaglia and Tsang's rejection method ("A simple method for generating gamma variables", 2000),
    written with tensor ops: every round draws one normal and one uniform per element and keeps the first accepted
    proposal (more than 95% are accepted for every concentration); a concentration below 1 is boosted,
    ``Gamma(a) = Gamma(a + 1) * U^(1/a)``. Results are clamped to the dtype's smallest normal number, as torch.

    The gradient is the implicit reparameterization ``dx/da = -(dF(x; a)/da) / f(x; a)`` (F the CDF, f the density),
    computed by :func:`_standard_gamma_grad`; it enters through ``x + g * (a - a.detach())``, whose value is ``x``
    and whose derivative in ``a`` is ``g``.
    """
    if not concentration.dtype.is_floating_point:
        raise RuntimeError(f"_standard_gamma: expected a floating-point concentration, got {concentration.dtype}")
    alpha = concentration.detach().to(dtypes.float64)
    shape, dev = tuple(alpha.shape), alpha.device
    boosted = alpha < 1
    a = alpha + boosted.to(dtypes.float64)
    d = a - 1.0 / 3.0
    c = (9.0 * d).rsqrt()
    out = full_like_value(alpha, 0.0)
    pending = alpha == alpha  # NaN concentrations give NaN below, never accepted here
    while bool(pending.any().item()):
        x = randn(shape, generator=generator, dtype=dtypes.float64, device=dev)
        u = rand(shape, generator=generator, dtype=dtypes.float64, device=dev)
        v = (1 + c * x) ** 3
        accept = (v > 0) & (u.log() < 0.5 * x * x + d - d * v + d * v.clamp(min=1e-300).log()) & pending
        out = (d * v).where(accept, out)
        pending = pending & ~accept
    u = rand(shape, generator=generator, dtype=dtypes.float64, device=dev)
    out = (out * u ** (1.0 / alpha)).where(boosted, out)
    out = out.where(alpha == alpha, alpha)
    sample = out.to(concentration.dtype).clamp(min=dtypes.finfo(concentration.dtype).tiny)
    if not (concentration.requires_grad and is_grad_enabled()):
        return sample
    grad = _standard_gamma_grad(concentration.detach(), sample)
    return sample + grad * (concentration - concentration.detach())


def _standard_gamma_grad(concentration: Tensor, x: Tensor) -> Tensor:
    """``dx/da`` for a standard Gamma(a) sample ``x`` (``torch._standard_gamma_grad``), elementwise.

    The three regimes of torch's kernel: a Taylor series of the CDF for ``x < 0.8``, Rice's saddle-point expansion for
    ``a > 8`` and a fitted bivariate rational approximation in ``(log(x / a), log a)`` otherwise.
    """
    alpha, xd = concentration.to(dtypes.float64), x.to(dtypes.float64)
    # Taylor series for small x.
    numer, denom = full_like_value(xd, 1.0), alpha
    series1, series2 = numer / denom, numer / (denom * denom)
    for i in range(1, 6):
        numer = numer * (-xd / i)
        denom = denom + 1
        series1 = series1 + numer / denom
        series2 = series2 + numer / (denom * denom)
    pow_x_alpha = xd ** alpha
    gamma_pdf = xd ** (alpha - 1) * (-xd).exp()
    gamma_cdf = pow_x_alpha * series1
    gamma_cdf_alpha = (xd.log() - alpha.digamma()) * gamma_cdf - pow_x_alpha * series2
    small = -gamma_cdf_alpha / gamma_pdf
    small = small.nan_to_num(nan=0.0, posinf=math.inf, neginf=-math.inf)
    # Rice saddle-point expansion for large alpha.
    near = ((1 + 24 * alpha * (1 + 12 * alpha)) * (1440 * alpha * alpha + 6 * xd * (53 - 120 * xd)
            - 65 * xd * xd / alpha + alpha * (107 + 3600 * xd)) / (1244160 * alpha ** 4))
    denom_rice = (8 * alpha).sqrt()
    term2 = denom_rice / (alpha - xd)
    term3 = (xd - alpha - alpha * (xd / alpha).log()) ** -1.5
    term23 = (term2 - term3).where(xd < alpha, term2 + term3)
    term1 = (xd / alpha).log() * term23 - (2 / alpha).sqrt() * (alpha + xd) / ((alpha - xd) * (alpha - xd))
    stirling = 1 + 1 / (12 * alpha) * (1 + 1 / (24 * alpha))
    far = -stirling * xd * term1 / denom_rice
    large = near.where((0.9 * alpha <= xd) & (xd <= 1.1 * alpha), far)
    # Bivariate rational approximation in between.
    u, v = (xd / alpha).log(), alpha.log()
    coef = [c0 + u * (c1 + u * c2) for c0, c1, c2 in zip(*_GAMMA_GRAD_COEF)]
    p = coef[0] + v * (coef[1] + v * (coef[2] + v * coef[3]))
    q = coef[4] + v * (coef[5] + v * (coef[6] + v * coef[7]))
    mid = (p / q).exp()
    grad = small.where(xd < 0.8, large.where(alpha > 8, mid))
    return grad.to(x.dtype)


# torch's coefficients of the rational approximation to the Gamma reparameterized gradient (rows: 1, u, u²).
_GAMMA_GRAD_COEF = (
    (0.16009398, -0.094634809, 0.025146376, -0.0030648343, 1, 0.32668115, 0.10406089, 0.0014179084),
    (0.53487893, 0.1298071, 0.065735949, -0.0015649758, 0.16639465, 0.020070113, -0.0035938915, -0.00058392623),
    (0.040121004, -0.0065914022, -0.0026286047, -0.0013441777, 0.017050642, -0.0021309326, 0.00085092367,
     -1.5247877e-07),
)
