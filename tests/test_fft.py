"""``genesis.fft`` and ``genesis.stft`` / ``istft`` against torch.fft, torch.stft and torch.istft: values (complex
results compared through their parts), dtypes, shapes, every norm, padding and trimming to ``n`` / ``s``, several
dims, gradients (torch's, the transforms' adjoints), spectral losses, and the errors torch raises, on every device
the suite runs on."""

from __future__ import annotations

import inspect
import re

import pytest
import torch

import genesis
from genesis.fft import dft
from tests.helpers import DEVICE, assert_same, check, check_error, rand, to_genesis, to_torch

NORMS = (None, "backward", "forward", "ortho")
# torch's advice to pass a window and to prefer complex results: the cases without them are meant.
pytestmark = [pytest.mark.filterwarnings("ignore:A window was not provided"),
              pytest.mark.filterwarnings("ignore:stft with return_complex=False is deprecated")]


def crand(*shape: int, dtype: torch.dtype = torch.complex128, seed: int = 0, requires_grad: bool = True
          ) -> torch.Tensor:
    """A reproducible random complex torch tensor."""
    gen = torch.Generator().manual_seed(seed)
    parts = torch.randn((*shape, 2), generator=gen, dtype=torch.float64)
    return torch.view_as_complex(parts).to(dtype).requires_grad_(requires_grad)


def hann(n: int, dtype: torch.dtype = torch.float64, requires_grad: bool = False) -> torch.Tensor:
    """torch's periodic Hann window (Genesis's window functions are not what this file tests)."""
    return torch.hann_window(n, dtype=dtype).requires_grad_(requires_grad)


# ---------------------------------------------------------------- the namespace


def _torch_parameters(name: str) -> list[str]:
    """Parameter names (``*`` marking keyword-only ones, ``out`` left out) of the signature line that opens
    ``torch.fft.<name>``'s docstring, with their defaults."""
    line = getattr(torch.fft, name).__doc__.lstrip().splitlines()[0]
    inner = line[line.index("(") + 1:line.rindex(")")]
    inner = re.sub(r"\([^()]*\)", lambda m: m.group(0).replace(",", ";"), inner)  # (-2, -1) stays one default
    names = [part.strip().replace(";", ",").replace("torch.", "") for part in inner.split(",")]
    names = [n for n in names if not n.startswith("out=")]
    return names[:-1] if names[-1] == "*" else names


def _genesis_parameters(name: str) -> list[str]:
    names, star = [], False
    for p in inspect.signature(getattr(genesis.fft, name)).parameters.values():
        if p.kind is p.KEYWORD_ONLY and not star:
            names.append("*")
            star = True
        default = p.default
        if name.endswith("freq") and p.name == "layout":
            default = "strided"  # torch's default layout, which Genesis spells None
        names.append(p.name if default is p.empty else f"{p.name}={default!r}".replace("'", ""))
    return names


@pytest.mark.parametrize("name", genesis.fft.__all__)
def test_signatures_match_torch(name: str) -> None:
    assert _genesis_parameters(name) == _torch_parameters(name)


def test_every_torch_fft_function_exists() -> None:
    # torch.fft's __all__ leaves out the hfft2/hfftn family it has.
    assert set(torch.fft.__all__) - {"Tensor"} <= set(genesis.fft.__all__)
    assert all(hasattr(torch.fft, name) for name in genesis.fft.__all__)


# ---------------------------------------------------------------- one dim

@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("name", ["fft", "ifft", "rfft", "ihfft"])
@pytest.mark.parametrize("n", [None, 5, 12])
def test_real_input_transforms(name: str, norm: str | None, n: int | None) -> None:
    check(lambda lib, x: getattr(lib.fft, name)(x, n=n, norm=norm), rand(3, 8))


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("name", ["fft", "ifft", "irfft", "hfft"])
@pytest.mark.parametrize("n", [None, 4, 7, 16])
def test_complex_input_transforms(name: str, norm: str | None, n: int | None) -> None:
    # The spectra are not Hermitian: irfft/hfft must ignore what torch's c2r ignores (imaginary parts of bin 0 and
    # of bin n/2) and read only the first n // 2 + 1 bins; the gradients say so too.
    check(lambda lib, z: getattr(lib.fft, name)(z, n=n, norm=norm), crand(2, 9))


@pytest.mark.parametrize("dim", [0, 1, -3])
@pytest.mark.parametrize("name", ["fft", "rfft", "irfft", "ihfft", "hfft", "ifft"])
def test_transform_along_other_dims(name: str, dim: int) -> None:
    x = crand(5, 6, 4) if name in ("irfft", "hfft") else rand(5, 6, 4)
    check(lambda lib, x: getattr(lib.fft, name)(x, dim=dim), x)


@pytest.mark.parametrize("name", ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"])
def test_float32_and_integer_dtypes(name: str) -> None:
    real = rand(4, 30, dtype=torch.float32)
    x = crand(4, 30, dtype=torch.complex64) if name in ("irfft", "hfft") else real
    check(lambda lib, x: getattr(lib.fft, name)(x), x, rtol=1e-4, atol=1e-4)
    ints = torch.arange(12).reshape(3, 4) % 5 - 2
    check(lambda lib, x: getattr(lib.fft, name)(x, norm="ortho"), ints, rtol=1e-5, atol=1e-5)
    check(lambda lib, x: getattr(lib.fft, name)(x), torch.tensor([True, False, True, True]), rtol=1e-5, atol=1e-5)


def test_float64_default_dtype_for_integer_input() -> None:
    genesis.set_default_dtype(genesis.float64)
    torch.set_default_dtype(torch.float64)
    try:
        check(lambda lib, x: lib.fft.rfft(x), torch.arange(6))
    finally:
        genesis.set_default_dtype(genesis.float32)
        torch.set_default_dtype(torch.float32)


def test_longer_float32_signal_stays_accurate() -> None:
    x = rand(2, 1000, dtype=torch.float32)
    check(lambda lib, x: lib.fft.rfft(x, norm="ortho"), x, rtol=1e-4, atol=2e-5)
    z = crand(2, 513, dtype=torch.complex64)
    check(lambda lib, z: lib.fft.irfft(z, norm="ortho"), z, rtol=1e-4, atol=2e-5)


def test_real_signal_bins_on_the_axes_are_exactly_real() -> None:
    # Bin 0 and the Nyquist bin of a real signal have imaginary parts exactly 0 (angle() is 0 or pi, never -pi);
    # a two-sided STFT's Nyquist row is exactly real too.
    x = rand(3, 16, dtype=torch.float32, requires_grad=False)
    for name in ("rfft", "fft"):
        got = to_torch(getattr(genesis.fft, name)(to_genesis(x)))
        want = getattr(torch.fft, name)(x)
        assert torch.equal(got.imag[:, [0, 8]], torch.zeros(3, 2))
        assert torch.equal(got.angle()[:, [0, 8]], want.angle()[:, [0, 8]])
    window = torch.hann_window(16)
    spec = to_torch(genesis.stft(to_genesis(x), 16, 4, window=to_genesis(window), center=False, onesided=False,
                                 return_complex=True))
    assert torch.equal(spec.imag[:, [0, 8]], torch.zeros(3, 2, spec.shape[-1]))


def test_round_trips() -> None:
    x = to_genesis(rand(3, 10, requires_grad=False))
    assert_same(genesis.fft.irfft(genesis.fft.rfft(x), n=10), to_torch(x))
    assert_same(genesis.fft.ifft(genesis.fft.fft(x)).real, to_torch(x))
    assert_same(genesis.fft.irfftn(genesis.fft.rfftn(x), s=x.shape), to_torch(x))


# ---------------------------------------------------------------- several dims

@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("name", ["fft2", "ifft2", "rfft2", "ihfft2", "fftn", "ifftn", "rfftn", "ihfftn"])
def test_nd_transforms_of_real_input(name: str, norm: str | None) -> None:
    check(lambda lib, x: getattr(lib.fft, name)(x, norm=norm), rand(2, 5, 6))


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("name", ["fft2", "ifft2", "irfft2", "hfft2", "fftn", "ifftn", "irfftn", "hfftn"])
def test_nd_transforms_of_complex_input(name: str, norm: str | None) -> None:
    check(lambda lib, z: getattr(lib.fft, name)(z, norm=norm), crand(3, 4, 5))


@pytest.mark.parametrize("s, dim", [((4, 9), None), ((3, -1), (0, 2)), (None, (2, 0)), ((7,), None), (None, 1),
                                    ((2, 3, 8), None), ((6, 6), (-1, -3))])
@pytest.mark.parametrize("name", ["fftn", "ifftn", "rfftn", "irfftn", "hfftn", "ihfftn"])
def test_nd_sizes_and_dims(name: str, s: tuple | None, dim: object) -> None:
    x = crand(3, 5, 6) if name in ("irfftn", "hfftn", "fftn") else rand(3, 5, 6)
    check(lambda lib, x: getattr(lib.fft, name)(x, s=s, dim=dim), x)


def test_nd_without_dims() -> None:
    check(lambda lib, x: lib.fft.fftn(x, dim=()), rand(3, 2))
    check(lambda lib, x: lib.fft.fftn(x), rand())


# ---------------------------------------------------------------- gradients of spectral losses

def test_fourier_layer_gradients() -> None:
    """A Fourier-neural-operator layer: rfft, a complex weight on the lowest modes, irfft."""

    def layer(lib: object, x: object, wr: object, wi: object) -> object:
        modes = lib.fft.rfft2(x)[..., :3, :3]  # (B, H, 3)
        weighted = modes * lib.complex(wr, wi)
        return lib.fft.irfft2(weighted, s=x.shape[-2:])

    check(layer, rand(2, 6, 8), rand(3, 3, seed=1), rand(3, 3, seed=2))


def test_magnitude_loss_gradients() -> None:
    check(lambda lib, x: (lib.fft.rfft(x, norm="ortho").abs() ** 2).sum(-1), rand(3, 16))
    check(lambda lib, x: lib.fft.fft(x).abs().log1p().mean(), rand(4, 11))


# ---------------------------------------------------------------- helpers

@pytest.mark.parametrize("n", [0, 1, 6, 7])
@pytest.mark.parametrize("d", [1.0, 0.25])
def test_fftfreq_and_rfftfreq(n: int, d: float) -> None:
    for name in ("fftfreq", "rfftfreq"):
        assert_same(getattr(genesis.fft, name)(n, d, device=DEVICE), getattr(torch.fft, name)(n, d))
        got = getattr(genesis.fft, name)(n, d, dtype=genesis.float64, requires_grad=True, device=DEVICE)
        want = getattr(torch.fft, name)(n, d, dtype=torch.float64, requires_grad=True)
        assert_same(got, want)
        assert got.requires_grad and got.is_leaf
    assert genesis.fft.fftfreq(4, device=DEVICE).device.type == DEVICE.split(":")[0]


@pytest.mark.parametrize("dim", [None, 0, 1, (0, 1), (-1,)])
@pytest.mark.parametrize("name", ["fftshift", "ifftshift"])
def test_shifts(name: str, dim: object) -> None:
    check(lambda lib, x: getattr(lib.fft, name)(x, dim=dim), rand(5, 6))
    check(lambda lib, x: getattr(lib.fft, name)(x), torch.arange(7))


# ---------------------------------------------------------------- stft / istft

STFT_CASES = [
    dict(n_fft=16),
    dict(n_fft=16, center=False),
    dict(n_fft=16, hop_length=3, normalized=True),
    dict(n_fft=16, win_length=12, window=12),
    dict(n_fft=15, hop_length=5, window=15, pad_mode="constant"),
    dict(n_fft=16, window=16, pad_mode="replicate", onesided=False),
    dict(n_fft=16, window=16, pad_mode="circular"),
    dict(n_fft=16, win_length=10, window=10, center=False, align_to_window=True),
    dict(n_fft=16, win_length=10, center=False, align_to_window=False),
]


def _stft_args(lib: object, case: dict, window: object) -> dict:
    args = {k: v for k, v in case.items() if k != "window"}
    if "window" in case:
        args["window"] = window
    return args


@pytest.mark.parametrize("case", STFT_CASES, ids=lambda c: "-".join(f"{k}={v}" for k, v in c.items()))
@pytest.mark.parametrize("batch", [(), (2,)])
def test_stft_matches_torch(case: dict, batch: tuple) -> None:
    window = hann(case.get("window", 1), requires_grad=True)
    check(lambda lib, x, w: lib.stft(x, return_complex=True, **_stft_args(lib, case, w)), rand(*batch, 70), window)


def test_stft_real_pairs_complex_input_and_float32() -> None:
    check(lambda lib, x: lib.stft(x, 8, return_complex=False), rand(2, 40))
    check(lambda lib, x: lib.stft(x, 8, hop_length=2, return_complex=True), crand(40))
    check(lambda lib, x: lib.stft(x, 8, window=lib.ones(8, dtype=lib.complex128, device=x.device), return_complex=True),
          rand(40))
    check(lambda lib, x, w: lib.stft(x, 64, window=w, return_complex=True), rand(2, 400, dtype=torch.float32),
          hann(64, torch.float32), rtol=1e-4, atol=1e-4)
    # A float64 window promotes float32 frames, as torch's multiplication does.
    check(lambda lib, x, w: lib.stft(x, 8, window=w, return_complex=True), rand(30, dtype=torch.float32), hann(8))


def test_stft_tensor_method_and_default_complex_output() -> None:
    check(lambda lib, x, w: x.stft(16, 4, window=w, return_complex=True), rand(64), hann(16))
    check(lambda lib, z: lib.stft(z, 8), crand(32))


def test_spectral_loss_gradients() -> None:
    """The multi-resolution STFT magnitude loss of audio models, against a target signal."""
    target = rand(2, 120, seed=3, requires_grad=False)

    def loss(lib: object, x: object, w16: object, w32: object) -> object:
        y = to_genesis(target) if lib is genesis else target
        total = 0
        for n_fft, w in ((16, w16), (32, w32)):
            a = lib.stft(x, n_fft, n_fft // 4, window=w, return_complex=True).abs()
            b = lib.stft(y, n_fft, n_fft // 4, window=w, return_complex=True).abs()
            total = total + ((a - b) ** 2).mean() + (a.clamp_min(1e-7).log() - b.clamp_min(1e-7).log()).abs().mean()
        return total

    check(loss, rand(2, 120), hann(16, requires_grad=True), hann(32))


ISTFT_CASES = [
    dict(n_fft=16, window=16),
    dict(n_fft=16, window=16, length=60),
    dict(n_fft=16, window=16, hop_length=8, normalized=True),
    dict(n_fft=16, win_length=12, window=12, hop_length=3),
    dict(n_fft=16, center=False),
    dict(n_fft=16, window=16, onesided=False),
    dict(n_fft=15, window=15, hop_length=5),
]


@pytest.mark.parametrize("case", ISTFT_CASES, ids=lambda c: "-".join(f"{k}={v}" for k, v in c.items()))
@pytest.mark.parametrize("batch", [(), (2,)])
def test_istft_matches_torch(case: dict, batch: tuple) -> None:
    window = hann(case.get("window", 1))
    stft_args = {k: v for k, v in _stft_args(torch, case, window).items() if k != "length"}
    spec = torch.stft(rand(*batch, 70, requires_grad=False), return_complex=True, **stft_args).requires_grad_()

    def run(lib: object, z: object, w: object) -> object:
        return lib.istft(z, **_stft_args(lib, case, w))

    check(run, spec, window.requires_grad_())


def test_istft_lengths_and_complex_output() -> None:
    spec = crand(9, 11)
    check(lambda lib, z: lib.istft(z, 16, 4, length=30), spec)
    with pytest.warns(UserWarning, match="padded with zeros"):
        check(lambda lib, z: lib.istft(z, 16, 4, length=100), spec)
    check(lambda lib, z: lib.istft(z, 8, 2, onesided=False, return_complex=True), crand(2, 8, 10))
    check(lambda lib, z: z.istft(8, 2, window=lib.ones(8, dtype=lib.float64, device=z.device)), crand(5, 10))


def test_stft_istft_round_trip() -> None:
    x = to_genesis(rand(2, 200, requires_grad=False))
    w = to_genesis(hann(32))
    spec = genesis.stft(x, 32, 8, window=w, return_complex=True)
    assert_same(genesis.istft(spec, 32, 8, window=w, length=200), to_torch(x))


# ---------------------------------------------------------------- autocast and the matrix cache

def test_autocast_computes_in_float32() -> None:
    x = rand(3, 16, dtype=torch.bfloat16, requires_grad=False)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        want = torch.fft.rfft(x)
        want_stft = torch.stft(x, 8, return_complex=True)
    with genesis.autocast(DEVICE, dtype=genesis.bfloat16):
        got = genesis.fft.rfft(to_genesis(x))
        got_stft = genesis.stft(to_genesis(x), 8, return_complex=True)
    assert_same(got, want)
    assert_same(got_stft, want_stft, rtol=1e-5, atol=1e-5)


def test_matrix_cache_is_bounded() -> None:
    dft.clear_cache()
    assert dft.cache_info() == (0, 0)
    x = to_genesis(rand(2, 40, requires_grad=False))
    for n in range(1, dft.CACHE_ENTRIES + 10):
        genesis.fft.rfft(x, n=n)
    count, size = dft.cache_info()
    assert count == dft.CACHE_ENTRIES and 0 < size <= dft.CACHE_BYTES
    first = dft.dft_matrix("rfft", 40, 40, -1, 1.0, genesis.float64, x.device)
    assert dft.dft_matrix("rfft", 40, 40, -1, 1.0, genesis.float64, x.device) is first
    dft.clear_cache()


# ---------------------------------------------------------------- errors

FFT_ERRORS = [
    (RuntimeError, lambda lib, x: lib.fft.fft(x, n=0)),
    (RuntimeError, lambda lib, x: lib.fft.irfft(x[..., :1])),
    (RuntimeError, lambda lib, x: lib.fft.fft(x, norm="bogus")),
    (RuntimeError, lambda lib, x: lib.fft.rfftn(x, norm="bogus")),
    (IndexError, lambda lib, x: lib.fft.fft(x, dim=2)),
    (IndexError, lambda lib, x: lib.fft.fft(x.sum())),
    (IndexError, lambda lib, x: lib.fft.fft2(x[0])),
    (RuntimeError, lambda lib, x: lib.fft.rfft(lib.complex(x, x))),
    (RuntimeError, lambda lib, x: lib.fft.ihfft2(lib.complex(x, x))),
    (RuntimeError, lambda lib, x: lib.fft.fftn(x, dim=(0, 0))),
    (RuntimeError, lambda lib, x: lib.fft.fftn(x, s=(2, 3, 4))),
    (RuntimeError, lambda lib, x: lib.fft.fftn(x, s=(2, 3), dim=(0,))),
    (RuntimeError, lambda lib, x: lib.fft.fftn(x, s=(0, 3))),
    (RuntimeError, lambda lib, x: lib.fft.rfftn(x, dim=())),
    (RuntimeError, lambda lib, x: lib.fft.fft(x.half())),
    (RuntimeError, lambda lib, x: lib.fft.rfft(x.bfloat16())),
    (RuntimeError, lambda lib, x: lib.fft.fftfreq(4, dtype=lib.int64)),
]


@pytest.mark.parametrize("case", range(len(FFT_ERRORS)))
def test_fft_errors_as_torch(case: int) -> None:
    exc, fn = FFT_ERRORS[case]
    check_error(exc, fn, rand(3, 4, requires_grad=False))


STFT_ERRORS = [
    (RuntimeError, lambda lib, x: lib.stft(x, 8)),  # return_complex is required for real input
    (RuntimeError, lambda lib, x: lib.stft(x, 100, center=False, return_complex=True)),
    (RuntimeError, lambda lib, x: lib.stft(x, 8, 0, return_complex=True)),
    (RuntimeError, lambda lib, x: lib.stft(x, 8, 2, 9, return_complex=True)),
    (RuntimeError, lambda lib, x: lib.stft(x, 8, window=lib.ones(5, dtype=x.dtype, device=x.device),
                                           return_complex=True)),
    (RuntimeError, lambda lib, x: lib.stft(x.reshape(2, 2, 10), 8, return_complex=True)),
    (RuntimeError, lambda lib, x: lib.stft(x.long(), 8, return_complex=True)),
    (RuntimeError, lambda lib, x: lib.stft(lib.complex(x, x), 8, onesided=True, return_complex=True)),
    (RuntimeError, lambda lib, x: lib.stft(x, 8, align_to_window=True, return_complex=True)),
    (RuntimeError, lambda lib, x: lib.stft(x[:4], 16, return_complex=True)),  # reflect padding too large
    (NotImplementedError, lambda lib, x: lib.stft(x, 8, pad_mode="bogus", return_complex=True)),
    (RuntimeError, lambda lib, x: lib.istft(x.reshape(5, 8), 8)),  # a real spectrogram
    (RuntimeError, lambda lib, x: lib.istft(lib.complex(x, x).reshape(4, 10), 8)),  # wrong frequency size
    (RuntimeError, lambda lib, x: lib.istft(lib.complex(x, x).reshape(5, 8), 8, 4, 2)),  # hop > win_length
    (RuntimeError, lambda lib, x: lib.istft(lib.complex(x, x).reshape(5, 8), 8,
                                            window=lib.zeros(8, dtype=x.dtype, device=x.device))),
    (RuntimeError, lambda lib, x: lib.istft(lib.complex(x, x).reshape(5, 8), 8, return_complex=True)),
    (RuntimeError, lambda lib, x: lib.istft(lib.complex(x, x).reshape(1, 5, 4, 2), 8)),
]


@pytest.mark.parametrize("case", range(len(STFT_ERRORS)))
def test_stft_errors_as_torch(case: int) -> None:
    exc, fn = STFT_ERRORS[case]
    check_error(exc, fn, rand(40, requires_grad=False))


def test_nola_error_names_the_condition() -> None:
    z = to_genesis(crand(5, 8, requires_grad=False))
    with pytest.raises(RuntimeError, match="NOLA"):
        y = genesis.istft(z, 8, window=genesis.zeros(8, dtype=genesis.float64, device=DEVICE))
        y.cpu()  # on CUDA the check reports at the next synchronization
