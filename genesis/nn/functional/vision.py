"""Spatial transforms (``affine_grid``, ``grid_sample``): the sampling grid of an affine map and bilinear
(trilinear), nearest or bicubic sampling of an image (a volume) at arbitrary points, as torch's (spatial transformer
networks, augmentation, optical flow, 3-D registration).

Both are written once for 2-D and 3-D. ``affine_grid`` is one graph node (``AffineGridGenerator``: the affine maps
applied to a constant grid of base points). ``grid_sample`` of 4-D input, bilinear or nearest, is one graph node too
(``GridSample2d``, over the backend's ``grid_sample_2d`` primitives: torch's kernel on the CPU, one Triton kernel on
cuda each way). Bicubic and volumetric sampling, and the double backward of any of them, are a composite of tensor
ops: it gathers the neighbours of every sampling point (2 per dim for linear, 4 for bicubic, 1 for nearest) from the
flattened input and blends them with the products of their per-dim weights, so gradients reach the input (a
scatter-add) and the grid (through the weights), as torch's.
"""

from __future__ import annotations

import math
from typing import Sequence

from genesis import amp, autograd, dtypes
from genesis import ops as T
from genesis.autograd import Primitive, is_grad_enabled
from genesis.ndarray import NDArray
from genesis.nn.functional.upsampling import cubic_convolution_weights
from genesis.ops.creation import linspace
from genesis.ops.nn import AffineGridGenerator
from genesis.tensor import Tensor, zeros


def _base_coords(n: int, align_corners: bool, like: Tensor) -> Tensor:
    """The normalized coordinates of ``n`` pixel centres in [-1, 1] (pixel corners at +-1 unless ``align_corners``)."""
    if n <= 1:
        return zeros(n, dtype=like.dtype, device=like.device)
    # torch's arithmetic, so that every coordinate has torch's rounding: the grid's points often sit exactly on pixel
    # centres, where bilinear sampling has a kink and the side a point rounds to picks the gradient.
    coords = linspace(-1.0, 1.0, n, dtype=like.dtype, device=like.device)
    return coords if align_corners else coords * (n - 1) / n


def affine_grid(theta: Tensor, size: Sequence[int], align_corners: bool | None = None) -> Tensor:
    """The sampling grid of the affine maps ``theta``: (N, 2, 3) for a 4-D ``size`` (N, C, H, W), giving (N, H, W, 2)
    (x, y) points in [-1, 1] coordinates; (N, 3, 4) for a 5-D ``size``, giving (N, D, H, W, 3)."""
    align = bool(align_corners)
    if not theta.dtype.is_floating_point:
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    size = tuple(size)
    spatial = len(size) - 2
    if spatial not in (2, 3):
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
                                  f"respectively. Got size {list(size)}.")
    if theta.ndim != 3 or tuple(theta.shape[1:]) != (spatial, spatial + 1):
        raise ValueError(f"Expected a batch of {spatial}D affine matrices of shape Nx{spatial}x{spatial + 1} for size "
                         f"{list(size)}. Got {list(theta.shape)}.")
    if theta.shape[0] != size[0]:
        raise RuntimeError(f"affine_grid: the batch of theta ({theta.shape[0]}) differs from size's ({size[0]})")
    if min(size[2:]) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {list(size)}")
    dims = size[2:]  # (H, W) or (D, H, W)
    coords = [_base_coords(n, align, theta) for n in reversed(dims)]  # x first, as torch's grids
    mesh = T.meshgrid(*reversed(coords), indexing="ij")  # (D, )H, W each; the last one varies along W (x)
    base = T.stack([*reversed(mesh), T.ones_like(mesh[0])], dim=-1)  # (..., spatial + 1): (x, y[, z], 1)
    flat = base.reshape(1, -1, spatial + 1)  # (1, P, spatial + 1)
    return AffineGridGenerator.apply(theta, base=flat.ndarray, shape=(size[0], *dims, spatial))


def _unnormalize(coord: Tensor, n: int, align_corners: bool, planar: bool) -> Tensor:
    """Grid coordinates in [-1, 1] as pixel positions along a dim of ``n`` pixels, in torch's arithmetic (its
    rounding decides which side of a pixel centre a point falls on, and with it the gradient there): for 4-D input
    (``planar``) its vectorized kernel's ``(x + 1) * s`` and ``(x + 1) * n/2 - 0.5`` (one fused multiply-add: one
    rounding, exact for float32 when computed in float64), for 5-D input its scalar formulas."""
    if planar:
        if align_corners:
            return (coord + 1.0) * ((n - 1) / 2.0)
        if coord.dtype is dtypes.float32:
            return ((coord + 1.0).double() * (n / 2.0) - 0.5).float()
        return (coord + 1.0) * (n / 2.0) - 0.5
    if align_corners:
        return (coord + 1.0) / 2.0 * (n - 1)
    return ((coord + 1.0) * n - 1.0) / 2.0


def _reflect(x: Tensor, twice_low: float, twice_high: float) -> Tensor:
    """``x`` mirrored into [twice_low / 2, twice_high / 2] (torch's ``reflect_coordinates``)."""
    if twice_low == twice_high:
        return x * 0.0
    low, span = twice_low / 2.0, (twice_high - twice_low) / 2.0
    dist = (x - low).abs()
    flips = T.floor(dist / span)
    extra = dist - flips * span
    return T.where(T.remainder(flips, 2) == 0, extra + low, span - extra + low)


def _bounded(x: Tensor, n: int, padding_mode: str, align_corners: bool) -> Tensor:
    """Positions along a dim of ``n`` pixels moved into [0, n - 1] by the padding mode's border rule (border:
    clipped, reflection: mirrored then clipped; zeros: left as they are). torch's ``compute_coordinates``."""
    if padding_mode == "reflection":
        x = _reflect(x, 0.0, 2.0 * (n - 1)) if align_corners else _reflect(x, -1.0, 2.0 * n - 1.0)
    if padding_mode in ("border", "reflection"):
        # torch's derivative of this clip is 0 at the bounds too, where a point of an align_corners grid lands
        x = T.where((x > 0) & (x < n - 1), x, x.clamp(0, n - 1).detach())
    return x


def _source(coord: Tensor, n: int, mode: str, padding_mode: str, align_corners: bool, planar: bool) -> Tensor:
    """Pixel positions of grid coordinates along a dim of ``n`` pixels, after the padding mode's border rule; for
    bicubic the rule applies to each tap instead (``_taps``), as torch's."""
    x = _unnormalize(coord, n, align_corners, planar)
    return x if mode == "bicubic" else _bounded(x, n, padding_mode, align_corners)


def _check_grid_sample(input: Tensor, grid: Tensor, mode: str, padding_mode: str) -> None:
    """torch's argument checks of ``grid_sample``, with its error types and messages."""
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', but "
                         f"got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
                         f"'reflection', but got: '{padding_mode}'")
    if input.ndim not in (4, 5) or grid.ndim != input.ndim:
        raise RuntimeError(f"grid_sampler(): expected 4D or 5D input and grid with same number of dimensions, but got "
                           f"input with sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    if grid.shape[0] != input.shape[0]:
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, but got input with sizes "
                           f"{list(input.shape)} and grid with sizes {list(grid.shape)}")
    if grid.shape[-1] != input.ndim - 2:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {input.ndim - 2} in last dimension, but got "
                           f"grid with sizes {list(grid.shape)}")
    for d in range(2, input.ndim):
        if input.shape[d] == 0:
            raise RuntimeError(f"grid_sampler(): expected input to have non-empty spatial dimensions, but input has "
                               f"sizes {list(input.shape)} with dimension {d} being empty")
    if mode == "bicubic" and input.ndim == 5:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    if not input.dtype.is_floating_point:  # torch's sampling kernels are real floating only, whatever the grid
        raise NotImplementedError(f"\"grid_sampler_{input.ndim - 2}d\" not implemented for "
                                  f"'{dtypes.SCALAR_TYPE_NAMES[input.dtype]}'")


def _taps(position: Tensor, n: int, mode: str, padding_mode: str,
          align_corners: bool) -> list[tuple[Tensor, Tensor | None]]:
    """The pixels a sampling point reads along a dim of ``n`` pixels, as (index clamped into the image (int64),
    weight or None for 1): one for nearest, the two neighbours for linear, the four around it for bicubic (cubic
    convolution with torch's ``A = -0.75``).

    With zeros padding a pixel outside the image gets weight 0. For nearest and linear the other padding modes have
    already moved every point into [0, n - 1], so only the upper neighbour of a point on the last pixel falls
    outside, with linear weight 0; unmasked, it reads the last pixel, which also gives that point's coordinate
    torch's zero gradient there. For bicubic the border rule moves each of the four taps on its own (torch's
    ``get_value_bounded``)."""
    def tap(index: Tensor, weight: Tensor | None) -> tuple[Tensor, Tensor | None]:
        if padding_mode == "zeros":  # a bool mask: products with it promote to the weights' dtype
            inside = (index >= 0) & (index <= n - 1)
            weight = inside if weight is None else weight * inside
        return index.clamp(0, n - 1).to(dtypes.int64), weight

    if mode == "nearest":
        return [tap(T.round(position), None)]  # half to even, as torch's nearbyint
    low = T.floor(position)
    frac = position - low
    if mode == "bilinear":
        return [tap(low, 1.0 - frac), tap(low + 1.0, frac)]
    return [tap(_bounded(low + (k - 1), n, padding_mode, align_corners), weight)
            for k, weight in enumerate(cubic_convolution_weights(frac))]


def _times(a: Tensor | None, b: Tensor | None) -> Tensor | None:
    """``a * b`` where None stands for 1."""
    if a is None or b is None:
        return b if a is None else a
    return a * b


class GridSample2d(Primitive):
    """``grid_sample`` of (N, C, H, W) input, bilinear or nearest: one node over the backend's primitives. A
    backward that records a graph (double backward) differentiates the composite instead."""

    @staticmethod
    def forward(ctx, x: NDArray, grid: NDArray, mode: str, padding_mode: str, align_corners: bool) -> NDArray:
        if ctx.needs_input_grad:
            ctx.save_for_backward(x, grid)
            ctx.args = (mode, padding_mode, align_corners)
        return x.backend.grid_sample_2d(x, grid, mode, padding_mode, align_corners)

    @staticmethod
    def backward(ctx, grad: Tensor) -> tuple:
        x, grid = ctx.saved_tensors
        mode, padding_mode, align = ctx.args
        needs = ctx.needs_input_grad[:2]
        if is_grad_enabled():
            wanted = [t for t, need in zip((x, grid), needs) if need]
            grads = iter(autograd.grad(_composite(x, grid, mode, padding_mode, align), wanted, grad,
                                       create_graph=True))
            return (next(grads) if needs[0] else None), (next(grads) if needs[1] else None), None, None, None
        backend = x.ndarray.backend
        grad_x, grad_grid = backend.grid_sample_2d_backward(grad.ndarray, x.ndarray, grid.ndarray, mode, padding_mode,
                                                            align, needs[0], needs[1])
        return grad_x, grad_grid, None, None, None


def grid_sample(input: Tensor, grid: Tensor, mode: str = "bilinear", padding_mode: str = "zeros",
                align_corners: bool | None = None) -> Tensor:
    """Sample ``input`` at the ``grid`` points: (N, C, H, W) at an (N, Ho, Wo, 2) grid of (x, y) points gives
    (N, C, Ho, Wo); volumetric (N, C, D, H, W) at an (N, Do, Ho, Wo, 3) grid of (x, y, z) points gives
    (N, C, Do, Ho, Wo). Coordinates are in [-1, 1] (x along W, y along H, z along D).

    ``mode``: "bilinear" (trilinear on 5-D input, as torch names it), "nearest" (rounding half to even, as torch)
    or "bicubic" (4-D input only: cubic convolution over the 4x4 pixels around each point with torch's
    ``A = -0.75``, the padding rule applied to each of the 16 taps); ``padding_mode``: "zeros" (outside points read
    0), "border" (clamped to the edge) or "reflection" (mirrored at the border); ``align_corners`` as in
    ``interpolate``. Gradients reach the input and the grid (zero for nearest), as torch's, with torch's choice of
    derivative where sampling has a kink (points on pixels and on the border).
    """
    input, grid = amp.autocast_args("grid_sample", input, grid)
    _check_grid_sample(input, grid, mode, padding_mode)
    if grid.dtype is not input.dtype:
        raise RuntimeError(f"expected scalar type {dtypes.SCALAR_TYPE_NAMES[input.dtype]} but found "
                           f"{dtypes.SCALAR_TYPE_NAMES[grid.dtype]}")
    align = bool(align_corners)
    if input.ndim == 4 and mode != "bicubic":
        return GridSample2d.apply(input, grid, mode, padding_mode, align)
    return _composite(input, grid, mode, padding_mode, align)


def _composite(input: Tensor, grid: Tensor, mode: str, padding_mode: str, align: bool) -> Tensor:
    """``grid_sample`` in tensor ops (arguments checked)."""
    n, c = input.shape[0], input.shape[1]
    sizes = tuple(input.shape[2:])  # (H, W) or (D, H, W)
    out_sizes = tuple(grid.shape[1:-1])
    points = math.prod(out_sizes)
    grid = grid.to(input.dtype)
    # Every corner of every point: a flat offset into the input and a weight, built one dim at a time (the last
    # dim, W, varies fastest) so that corners share the partial sums and products of the dims before.
    corners: list[tuple[Tensor, Tensor | None]] = []
    for d, size in enumerate(sizes):
        stride = math.prod(sizes[d + 1:])
        coord = grid[..., len(sizes) - 1 - d]  # the grid lists x (along the last dim) first
        position = _source(coord, size, mode, padding_mode, align, len(sizes) == 2).reshape(n, 1, points)
        taps = [(index * stride if stride > 1 else index, weight)
                for index, weight in _taps(position, size, mode, padding_mode, align)]
        if corners:
            taps = [(offset + index, _times(scale, weight)) for offset, scale in corners for index, weight in taps]
        corners = taps
    if mode == "nearest" and grid.requires_grad:
        # torch gives the grid a zero gradient, not none: ones that hold the grid's rounding (derivative 0).
        rounded = T.round(grid)
        ones = (rounded - rounded.detach()).sum(-1).reshape(n, 1, points) + 1.0
        corners = [(offset, _times(weight, ones)) for offset, weight in corners]
    flat = input.reshape(n, c, -1)
    out = None
    for offset, weight in corners:  # (N, 1, P) each
        term = _times(flat.gather(2, offset.expand(n, c, points)), weight)  # (N, C, P)
        out = term if out is None else out + term
    return out.reshape((n, c) + out_sizes)
