"""Short-time Fourier transforms: ``stft`` and its inverse ``istft`` (torch's, also as Tensor methods).

Both are composites over Genesis ops, so they run on every device and are differentiable (a spectral loss such as the
distance between STFT magnitudes backpropagates to the signal and to the window). ``stft`` cuts the (centre-padded)
signal into frames with ``unfold``, multiplies them by the window and takes one DFT stage of :mod:`genesis.fft.dft`
per frame: a product with an O(n_fft^2) matrix, exact to float tolerance, fine for the frame sizes audio uses.
``istft`` inverts each frame, multiplies by the window again, overlap-adds the frames (the adjoint of ``unfold``) and
divides by the overlap-added squared window, as torch's.

Differences from torch: a window whose overlap-added square vanishes (the NOLA condition) is reported without the
envelope's minimum value, and on CUDA at the next synchronization (the check stays on the device); float16 and
bfloat16 inputs raise as on torch's CPU (torch computes them on CUDA, in complex32, which Genesis lacks), and
autocast runs both in float32 on every device.
"""

from __future__ import annotations

import warnings

from genesis.fft.dft import as_complex, dft_matrix, stage
from genesis.fft.transforms import compute_dtype
from genesis.ops.autocast import autocast_args
from genesis.ops.complex import view_as_real
from genesis.ops.join import cat
from genesis.ops.linalg import Matmul
from genesis.ops.nn import check_all
from genesis.ops.views import ViewBackwardFill
from genesis.tensor import Tensor, ones, zeros

_PAD_MODES = ("constant", "reflect", "replicate", "circular")


def _pad_signal(x: Tensor, pad: int, mode: str) -> Tensor:
    """``x`` (B, L) padded by ``pad`` samples on both sides of its last dim, as ``F.pad(x, [pad, pad], mode)``."""
    if mode not in _PAD_MODES:
        raise NotImplementedError(f"stft: Unrecognised padding mode {mode}")
    size = x.shape[-1]
    if mode == "reflect" and pad >= size:
        raise RuntimeError(f"stft: Argument #4: Padding size should be less than the corresponding input dimension, "
                           f"but got: padding ({pad}, {pad}) at dimension {x.ndim - 1} of input {tuple(x.shape)}")
    if mode == "circular" and pad > size:
        raise RuntimeError("stft: Padding value causes wrapping around more than once.")
    if pad == 0:
        return x
    if mode == "reflect":
        left, right = x.narrow(-1, 1, pad).flip(-1), x.narrow(-1, size - 1 - pad, pad).flip(-1)
    elif mode == "replicate":
        shape = (*x.shape[:-1], pad)
        left, right = x.narrow(-1, 0, 1).expand(shape), x.narrow(-1, size - 1, 1).expand(shape)
    elif mode == "circular":
        left, right = x.narrow(-1, size - pad, pad), x.narrow(-1, 0, pad)
    else:
        left = right = zeros(*x.shape[:-1], pad, dtype=x.dtype, device=x.device)
    return cat([left, x, right], -1)


def _overlap_add(frames: Tensor, hop: int) -> Tensor:
    """(B, T, n) frames summed into (B, n + hop * (T - 1)) signals, frame t starting at ``t * hop``: the adjoint
    of ``unfold`` (torch's ``unfold_backward``), differentiable. Complex frames are summed as their real parts and
    imaginary parts (a real scatter-add, which every backend has)."""
    b, t, n = frames.shape
    if frames.dtype.is_complex:
        pairs = view_as_real(frames).movedim(-1, -2)  # (B, T, 2, n): how unfold views a (B, L, 2) signal
        return as_complex(ViewBackwardFill.apply(pairs, (b, n + hop * (t - 1), 2), lambda x: x.unfold(1, n, hop)))
    return ViewBackwardFill.apply(frames, (b, n + hop * (t - 1)), lambda x: x.unfold(1, n, hop))


def _check_sizes(op: str, n_fft: int, hop: int, win: int, window: Tensor | None) -> None:
    if hop <= 0:
        raise RuntimeError(f"{op}: expected hop_length > 0, but got hop_length={hop}")
    if win <= 0 or win > n_fft:
        raise RuntimeError(f"{op}: expected 0 < win_length <= n_fft={n_fft}, but got win_length={win}")
    if window is not None and (window.ndim != 1 or window.shape[0] != win):
        raise RuntimeError(f"{op}: expected a 1D window tensor of size equal to win_length={win}, but got window "
                           f"with size {tuple(window.shape)}")


def stft(input: Tensor, n_fft: int, hop_length: int | None = None, win_length: int | None = None,
         window: Tensor | None = None, center: bool = True, pad_mode: str = "reflect", normalized: bool = False,
         onesided: bool | None = None, return_complex: bool | None = None,
         align_to_window: bool | None = None) -> Tensor:
    """The short-time Fourier transform of a signal ``(L,)`` or batch ``(B, L)``:
    ``X[b, f, t] = sum_k window[k] input[b, t * hop_length + k] exp(-2 pi i f k / n_fft)``.

    Args:
        input: real or complex signal(s).
        n_fft: the DFT size of each frame.
        hop_length: the step between frames (default ``n_fft // 4``).
        win_length: the window's length (default ``n_fft``); a shorter window is centred in the frame.
        window: a 1-D tensor of ``win_length`` values (default: all ones).
        center: pad ``n_fft // 2`` samples on both sides (with ``pad_mode``: "reflect", "constant", "replicate",
            "circular") so frame t is centred at ``t * hop_length``.
        normalized: multiply by ``n_fft ** -0.5``.
        onesided: keep the ``n_fft // 2 + 1`` non-negative frequencies (default for real input and window).
        return_complex: a complex result, or its real and imaginary parts in a last dim of 2; required for real
            inputs, as torch.
        align_to_window: with ``center=False``, start frame t's window (rather than its ``n_fft`` samples) at
            ``t * hop_length``.

    Returns:
        ``(B?, n_freqs, n_frames)`` complex (or ``(B?, n_freqs, n_frames, 2)`` real), ``n_frames`` being
        ``1 + L // hop_length`` with ``center``.
    """
    if center and align_to_window is not None:
        raise RuntimeError("stft align_to_window should only be set when center = false")
    input, window = autocast_args("stft", input, window)
    hop = n_fft // 4 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length
    if return_complex is None:
        if not (input.dtype.is_complex or (window is not None and window.dtype.is_complex)):
            raise RuntimeError("stft requires the return_complex parameter be given for real inputs, and will further "
                               "require that return_complex=True in a future PyTorch release.")
        return_complex = True
    if not (input.dtype.is_floating_point or input.dtype.is_complex):
        raise RuntimeError(f"stft: expected a tensor of floating point or complex values, got {input.dtype}")
    if input.ndim not in (1, 2):
        raise RuntimeError(f"stft: expected a 1D or 2D tensor, got a {input.ndim}D tensor of shape "
                           f"{tuple(input.shape)}")
    x = input if input.ndim == 2 else input.unsqueeze(0)
    if center:
        x = _pad_signal(x, n_fft // 2, pad_mode)
    length = x.shape[1]
    if n_fft <= 0 or n_fft > length:
        raise RuntimeError(f"stft: expected 0 < n_fft <= {length} (the padded signal's length), but got n_fft={n_fft}")
    _check_sizes("stft", n_fft, hop, win, window)
    # Frames of the window's length only: the zeros a shorter window is padded with would multiply nothing. Their
    # samples sit at offset ``left`` in the n_fft-point frame, so they meet the DFT matrix's rows from ``left``.
    left = (n_fft - win) // 2
    start = 0 if align_to_window else left
    n_frames = 1 + (length - (win if align_to_window else n_fft)) // hop
    frames = x.narrow(1, start, length - start).unfold(1, win, hop).narrow(1, 0, n_frames)  # (B, T, win)
    if window is not None:
        frames = frames * window
    is_complex = frames.dtype.is_complex
    onesided = not is_complex if onesided is None else onesided
    if is_complex and onesided:
        raise RuntimeError("stft: Cannot have onesided output if window or input is complex")
    scale = n_fft ** -0.5 if normalized else 1.0
    dtype = compute_dtype("stft", frames)
    if is_complex:
        matrix = dft_matrix("c2c", n_fft, n_fft, -1, scale, dtype, x.device).narrow(0, 2 * left, 2 * win)
        frames = view_as_real(frames).reshape(*frames.shape[:-1], 2 * win)
    else:
        kind = "rfft" if onesided else "r2c"
        matrix = dft_matrix(kind, n_fft, n_fft, -1, scale, dtype, x.device).narrow(0, left, win)
    spectrum = Matmul.apply(frames, matrix)  # (B, T, 2 * n_freqs)
    pairs = spectrum.reshape(*spectrum.shape[:-1], matrix.shape[1] // 2, 2).transpose(1, 2)  # (B, n_freqs, T, 2)
    if input.ndim == 1:
        pairs = pairs.squeeze(0)
    return as_complex(pairs) if return_complex else pairs


def istft(input: Tensor, n_fft: int, hop_length: int | None = None, win_length: int | None = None,
          window: Tensor | None = None, center: bool = True, normalized: bool = False, onesided: bool | None = None,
          length: int | None = None, return_complex: bool = False) -> Tensor:
    """The inverse of :func:`stft`: the least-squares signal of a complex spectrogram ``(B?, n_freqs, n_frames)``
    (Griffin and Lim, 1984), by overlap-adding the inverse transforms of the frames times the window and dividing by
    the overlap-added squared window.

    Args:
        input: the complex spectrogram, as ``stft(..., return_complex=True)`` gives it.
        n_fft, hop_length, win_length, window, center, normalized: as given to :func:`stft`.
        onesided: whether the spectrogram holds the ``n_fft // 2 + 1`` non-negative frequencies only (default: when
            its frequency dim is not ``n_fft``).
        length: the output's length (trimmed, or zero-padded at the end); default ``(n_frames - 1) * hop_length``
            with ``center``, else ``n_fft + (n_frames - 1) * hop_length``.
        return_complex: a complex signal (needs a two-sided spectrogram) rather than a real one.

    Returns:
        ``(B?, length)``; RuntimeError where the overlap-added squared window is below 1e-11 (the NOLA condition).
    """
    if not isinstance(input, Tensor) or not input.dtype.is_complex:
        raise RuntimeError("istft requires a complex-valued input tensor matching the output from stft with "
                           "return_complex=True.")
    (window,) = autocast_args("istft", window)
    hop = n_fft // 4 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length
    if input.numel() == 0:
        raise RuntimeError("istft: input tensor cannot be empty.")
    if input.ndim not in (2, 3):
        raise RuntimeError(f"istft: expected a tensor with 2 or 3 dimensions of complex dtype, but got {input.ndim}")
    fft_size, n_frames = input.shape[-2], input.shape[-1]
    onesided = fft_size != n_fft if onesided is None else onesided
    expected = n_fft // 2 + 1 if onesided else n_fft
    if fft_size != expected:
        raise RuntimeError(f"istft: expected the frequency dimension (2nd to the last) of the input tensor to match "
                           f"{'n_fft / 2 + 1' if onesided else 'n_fft'}={expected} when onesided={onesided}, but got "
                           f"{fft_size}")
    if not 0 < hop <= win:
        raise RuntimeError(f"istft: expected 0 < hop_length <= win_length, but got hop_length={hop}, win_length={win}")
    _check_sizes("istft", n_fft, hop, win, window)
    dtype = input.dtype.to_real
    full_window = ones(win, dtype=dtype, device=input.device) if window is None else window
    if win != n_fft:  # centred in the frame
        left = (n_fft - win) // 2
        pad_left = zeros(left, dtype=full_window.dtype, device=input.device)
        pad_right = zeros(n_fft - win - left, dtype=full_window.dtype, device=input.device)
        full_window = cat([pad_left, full_window, pad_right])
    x = input if input.ndim == 3 else input.unsqueeze(0)
    pairs = view_as_real(x).transpose(1, 2)  # (B, T, n_freqs, 2)
    scale = n_fft ** -0.5 if normalized else 1 / n_fft
    if return_complex:
        if onesided:
            raise RuntimeError("istft: Cannot have onesided output if window or input is complex")
        frames = as_complex(stage(pairs, 2, "c2c", n_fft, 1, scale))
    else:
        if window is not None and window.dtype.is_complex:
            raise RuntimeError("istft: Complex windows are incompatible with return_complex=False")
        frames = stage(pairs, 2, "c2r", n_fft, 1, scale)  # reads the n_fft // 2 + 1 first bins
    signal_length = n_fft + hop * (n_frames - 1)
    y = _overlap_add(frames * full_window, hop)  # (B, signal_length)
    envelope = _overlap_add((full_window * full_window).expand(1, n_frames, n_fft), hop)
    start = n_fft // 2 if center else 0
    if length is not None:
        end = start + length
    else:
        end = signal_length - n_fft // 2 if center else signal_length
    stop = min(end, signal_length)
    count = max(stop - start, 0)
    y, envelope = y.narrow(1, start, count), envelope.narrow(1, start, count)
    check_all(envelope.abs() >= 1e-11, RuntimeError, "istft: window overlap add min < 1e-11: the squared window, "
              "overlap-added, vanishes inside the signal (the NOLA condition fails for this window and hop_length)")
    y = y / envelope
    if input.ndim == 2:
        y = y.squeeze(0)
    if end > signal_length:
        warnings.warn("The length of signal is shorter than the length parameter. Result is being padded with zeros "
                      "in the tail. Please check your center and hop_length settings.", stacklevel=2)
        y = cat([y, zeros(*y.shape[:-1], end - signal_length, dtype=y.dtype, device=y.device)], -1)
    return y
