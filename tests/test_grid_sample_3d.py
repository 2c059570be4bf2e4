"""Volumetric ``grid_sample`` (5-D input, trilinear and nearest) and 5-D ``affine_grid`` against torch: values and
the gradients of the input, the grid and the affine matrices, for every padding mode and ``align_corners``."""

import itertools

import pytest
import torch

import genesis
from tests.helpers import check, check_error, rand, to_genesis, to_torch

PADDING_MODES = ["zeros", "border", "reflection"]


def sample(mode: str, padding_mode: str, align_corners: bool):
    """A check() function: grid_sample(input, grid) with these options in lib."""
    return lambda lib, x, g: lib.nn.functional.grid_sample(x, g, mode=mode, padding_mode=padding_mode,
                                                           align_corners=align_corners)


def random_grid(*shape: int, seed: int, spread: float = 1.4) -> torch.Tensor:
    """Points in [-spread, spread): inside and (for spread > 1) outside the volume."""
    gen = torch.Generator().manual_seed(seed)
    return (torch.rand(shape, generator=gen, dtype=torch.float64) * 2 * spread - spread).requires_grad_(True)


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding_mode", PADDING_MODES)
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample_5d(mode, padding_mode, align_corners):
    # Points inside and outside a (3, 4, 5) volume; torch gives nearest sampling's grid a zero gradient
    volume = rand(2, 3, 3, 4, 5, seed=1)
    grid = random_grid(2, 2, 3, 4, 3, seed=2)
    check(sample(mode, padding_mode, align_corners), volume, grid)


@pytest.mark.parametrize("dims", [2, 3])
@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding_mode", PADDING_MODES)
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample_points_on_pixels_and_borders(dims, mode, padding_mode, align_corners):
    # Every combination of coordinates on the borders (+-1), on pixel centres, half-way between them (nearest
    # rounds half to even) and outside: where sampling has a kink torch picks one derivative, and Genesis the same
    coords = [-1.0, 1.0, 0.0, -0.5, 0.5, 0.25, 1.5, -3.0]
    points = torch.tensor(list(itertools.product(coords, repeat=dims)), dtype=torch.float64)
    grid = points.reshape(1, *([1] * (dims - 1)), -1, dims).requires_grad_(True)
    check(sample(mode, padding_mode, align_corners), rand(1, 2, *[4, 5, 3][:dims], seed=13), grid)


@pytest.mark.parametrize("padding_mode", PADDING_MODES)
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample_5d_far_outside_and_thin_volumes(padding_mode, align_corners):
    # Points far outside (several reflections) and volumes one voxel thick along a dim (D = 1 and W = 1)
    grid = random_grid(1, 3, 2, 4, 3, seed=3, spread=4.5)
    for shape in [(1, 2, 1, 4, 3), (1, 2, 3, 2, 1)]:
        check(sample("bilinear", padding_mode, align_corners), rand(*shape, seed=4), grid)


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
def test_grid_sample_5d_float32_and_grid_without_gradient(mode):
    volume = rand(1, 2, 4, 3, 5, dtype=torch.float32, seed=5)
    grid = random_grid(1, 3, 3, 2, 3, seed=6).detach().float()
    check(sample(mode, "zeros", False), volume, grid)


def test_grid_sample_5d_identity_reproduces_the_volume():
    volume = rand(2, 3, 3, 4, 5, seed=7).detach()
    theta = torch.tensor([[1.0, 0, 0, 0], [0, 1.0, 0, 0], [0, 0, 1.0, 0]], dtype=torch.float64).repeat(2, 1, 1)
    for align_corners in (False, True):
        for mode in ("bilinear", "nearest"):
            g_grid = genesis.nn.functional.affine_grid(to_genesis(theta), (2, 3, 3, 4, 5), align_corners=align_corners)
            out = genesis.nn.functional.grid_sample(to_genesis(volume), g_grid, mode=mode,
                                                    align_corners=align_corners)
            torch.testing.assert_close(to_torch(out), volume)


@pytest.mark.parametrize("align_corners", [False, True])
def test_affine_grid_5d(align_corners):
    gen = torch.Generator().manual_seed(8)
    theta = (torch.eye(3, 4, dtype=torch.float64) + 0.2 * torch.randn(2, 3, 4, generator=gen, dtype=torch.float64))
    check(lambda lib, t: lib.nn.functional.affine_grid(t, (2, 4, 3, 5, 6), align_corners=align_corners),
          theta.requires_grad_(True))
    # A size of one along a dim: its coordinate is 0 (align_corners=True) or the single voxel's centre
    check(lambda lib, t: lib.nn.functional.affine_grid(t, (2, 1, 1, 5, 1), align_corners=align_corners),
          theta.detach().requires_grad_(True))


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding_mode", PADDING_MODES)
def test_spatial_transformer_3d(mode, padding_mode):
    # A volumetric STN: affine_grid then grid_sample, differentiated in the volume and in theta
    gen = torch.Generator().manual_seed(9)
    theta = (torch.eye(3, 4, dtype=torch.float64) + 0.15 * torch.randn(2, 3, 4, generator=gen, dtype=torch.float64))
    volume = rand(2, 2, 4, 3, 5, seed=10)

    def transform(lib, x, t):
        grid = lib.nn.functional.affine_grid(t, (2, 2, 3, 4, 3), align_corners=False)
        return lib.nn.functional.grid_sample(x, grid, mode=mode, padding_mode=padding_mode, align_corners=False)
    check(transform, volume, theta.requires_grad_(True))


def test_grid_sample_errors():
    volume, grid = rand(1, 2, 3, 4, 5), random_grid(1, 2, 2, 2, 3, seed=11)
    check_error(RuntimeError, lambda lib, x, g: lib.nn.functional.grid_sample(x, g[..., :2], align_corners=False),
                volume, grid, match="expected grid to have size 3 in last dimension")
    check_error(RuntimeError, lambda lib, x, g: lib.nn.functional.grid_sample(x, g[0], align_corners=False),
                volume, grid, match="same number of dimensions")
    check_error(RuntimeError, lambda lib, x, g: lib.nn.functional.grid_sample(x.expand(2, -1, -1, -1, -1), g,
                                                                             align_corners=False),
                volume, grid, match="same batch size")
    check_error(RuntimeError, lambda lib, x, g: lib.nn.functional.grid_sample(x, g, mode="bicubic",
                                                                             align_corners=False),
                volume, grid, match="bicubic interpolation only supports 4D input")
    check_error(RuntimeError, lambda lib, x, g: lib.nn.functional.grid_sample(x[:, :, :0], g, align_corners=False),
                volume, grid, match="non-empty spatial dimensions")
    check_error(ValueError, lambda lib, x, g: lib.nn.functional.grid_sample(x, g, mode="area", align_corners=False),
                volume, grid, match="expected mode to be")
    check_error(ValueError, lambda lib, x, g: lib.nn.functional.grid_sample(x, g, padding_mode="wrap",
                                                                           align_corners=False),
                volume, grid, match="expected padding_mode to be")
