"""``genesis.signal.windows``: torch.signal.windows's window functions (SciPy's names and conventions: symmetric by
default, ``sym=False`` for the periodic form spectral analysis uses), written with Genesis ops so they run on every
device. Each follows torch's recipe (a ``linspace`` of the scaled sample positions, then the window's formula) in the
requested dtype, float32 or float64."""

from genesis.signal.windows.windows import (
    bartlett,
    blackman,
    cosine,
    exponential,
    gaussian,
    general_cosine,
    general_hamming,
    hamming,
    hann,
    kaiser,
    nuttall,
)

__all__ = ["bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine", "general_hamming",
           "hamming", "hann", "kaiser", "nuttall"]
