"""Spatial transforms (``affine_grid``, ``grid_sample``): the sampling grid of an affine map and bilinear or nearest
sampling of an image at arbitrary points, as torch's (spatial transformer networks, augmentation, optical flow).

Both are composites of tensor ops: ``grid_sample`` gathers the four neighbours of every sampling point from the
flattened image and blends them with their bilinear weights, so gradients reach the image (a scatter-add) and the
grid (through the weights), as torch's.
"""

from __future__ import annotations

from typing import Sequence

from genesis import dtypes
from genesis import ops as T
from genesis.tensor import Tensor, arange


def _base_coords(n: int, align_corners: bool, like: Tensor) -> Tensor:
    """The normalized coordinates of ``n`` pixel centres in [-1, 1] (pixel corners at +-1 unless ``align_corners``)."""
    steps = arange(n, dtype=like.dtype, device=like.device)
    if align_corners:
        return steps * (2.0 / (n - 1)) - 1.0 if n > 1 else steps * 0.0
    return (steps * 2.0 + 1.0) / n - 1.0


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
    grid = T.matmul(flat, theta.transpose(1, 2))  # (N, P, spatial)
    return grid.reshape((size[0],) + tuple(dims) + (spatial,))


def _unnormalize(coord: Tensor, n: int, align_corners: bool) -> Tensor:
    """Grid coordinates in [-1, 1] as pixel positions along a dim of ``n`` pixels."""
    if align_corners:
        return (coord + 1.0) * ((n - 1) / 2.0)
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


def _source(coord: Tensor, n: int, padding_mode: str, align_corners: bool) -> Tensor:
    """Pixel positions of grid coordinates along a dim of ``n`` pixels, after the padding mode's border rule."""
    x = _unnormalize(coord, n, align_corners)
    if padding_mode == "reflection":
        x = _reflect(x, 0.0, 2.0 * (n - 1)) if align_corners else _reflect(x, -1.0, 2.0 * n - 1.0)
    if padding_mode in ("border", "reflection"):
        x = x.clamp(0, n - 1)
    return x


def grid_sample(input: Tensor, grid: Tensor, mode: str = "bilinear", padding_mode: str = "zeros",
                align_corners: bool | None = None) -> Tensor:
    """Sample the (N, C, H, W) ``input`` at the (N, Ho, Wo, 2) ``grid`` points ((x, y) in [-1, 1]): (N, C, Ho, Wo).

    ``mode``: "bilinear" or "nearest" (rounding half to even, as torch); ``padding_mode``: "zeros" (outside points
    read 0), "border" (clamped to the edge) or "reflection" (mirrored at the border); ``align_corners`` as in
    ``interpolate``. 5-D (volumetric) sampling is not implemented.
    """
    if mode not in ("bilinear", "nearest"):
        raise NotImplementedError(f"grid_sample: mode {mode!r} is not implemented (bilinear and nearest are)")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
                         f"'reflection', but got: '{padding_mode}'")
    if input.ndim != 4:
        raise NotImplementedError(f"grid_sample: only 4-D input (N, C, H, W) is implemented, got {input.ndim}-D")
    if grid.ndim != 4 or grid.shape[-1] != 2 or grid.shape[0] != input.shape[0]:
        raise RuntimeError(f"grid_sample(): expected grid of shape (N, H_out, W_out, 2) with N = {input.shape[0]}, "
                           f"but got {list(grid.shape)}")
    align = bool(align_corners)
    n, c, h, w = input.shape
    ho, wo = grid.shape[1], grid.shape[2]
    grid = grid.to(input.dtype)
    x = _source(grid[..., 0], w, padding_mode, align).reshape(n, 1, ho * wo)
    y = _source(grid[..., 1], h, padding_mode, align).reshape(n, 1, ho * wo)
    flat = input.reshape(n, c, h * w)

    def tap(ix: Tensor, iy: Tensor) -> tuple[Tensor, Tensor]:
        """The input at integer positions (clamped), and whether each position lies inside the image."""
        inside = (ix >= 0) & (ix <= w - 1) & (iy >= 0) & (iy <= h - 1)
        index = (iy.clamp(0, h - 1) * w + ix.clamp(0, w - 1)).to(dtypes.int64).expand(n, c, ho * wo)
        return flat.gather(2, index), inside

    if mode == "nearest":
        value, inside = tap(T.round(x), T.round(y))
        out = value * inside.to(input.dtype)
    else:
        x0, y0 = T.floor(x), T.floor(y)
        fx, fy = x - x0, y - y0
        out = None
        for dx, dy, weight in ((0, 0, (1 - fx) * (1 - fy)), (1, 0, fx * (1 - fy)), (0, 1, (1 - fx) * fy),
                               (1, 1, fx * fy)):
            value, inside = tap(x0 + dx, y0 + dy)
            term = value * (weight * inside.to(input.dtype))
            out = term if out is None else out + term
    return out.reshape(n, c, ho, wo)
