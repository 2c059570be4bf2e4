"""``genesis.fft``: torch.fft's discrete Fourier transforms, written over Genesis ops.

Every transform is a chain of one-dim discrete Fourier transforms computed as matrix products with cosine and sine
matrices (:mod:`genesis.fft.dft`), so it runs on every device, needs no FFT library, and is differentiable: its
gradients are the exact adjoints, the same as torch's. The price is O(n^2) work per transformed dim of n points, where
an FFT does O(n log n); the values are exact to float tolerance. That suits the sizes scripts use Fourier transforms
for: audio frames up to a few thousand samples (``genesis.stft``), images, spectral losses, Fourier neural operators.
For a 1-D signal of hundreds of thousands of points, it does not.

The transforms (``fft``, ``ifft``, ``rfft``, ``irfft``, ``hfft``, ``ihfft`` and their ``2`` and ``n`` forms) are in
:mod:`genesis.fft.transforms`; the frequency and shift helpers in :mod:`genesis.fft.helpers`.
"""

from genesis.fft.helpers import fftfreq, fftshift, ifftshift, rfftfreq
from genesis.fft.transforms import (
    fft,
    fft2,
    fftn,
    hfft,
    hfft2,
    hfftn,
    ifft,
    ifft2,
    ifftn,
    ihfft,
    ihfft2,
    ihfftn,
    irfft,
    irfft2,
    irfftn,
    rfft,
    rfft2,
    rfftn,
)

__all__ = ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2", "rfftn", "irfftn",
           "hfft", "ihfft", "hfft2", "ihfft2", "hfftn", "ihfftn", "fftfreq", "rfftfreq", "fftshift", "ifftshift"]
