"""``nn.utils.parametrizations.orthogonal`` and ``linalg.householder_product`` against torch: the parametrized
matrices, their originals and ``base`` buffers, gradients through the parametrization, state dicts, assignment
through ``right_inverse`` and training steps, for every map, with and without the trivialization (float64)."""

import pytest
import torch

import genesis
from tests.helpers import DEVICE, assert_same, check, check_error, rand, to_genesis, to_torch

MAPS = ["matrix_exp", "cayley", "householder"]
# square, tall, wide, and batches of tall and square matrices
SHAPES = [(4, 4), (5, 3), (3, 5), (2, 4, 3), (2, 3, 3)]


def pair(weight: torch.Tensor) -> tuple[torch.nn.Module, genesis.nn.Module]:
    """A torch and a Genesis module holding the same ``weight`` parameter."""
    t_module, g_module = torch.nn.Module(), genesis.nn.Module()
    t_module.weight = torch.nn.Parameter(weight.detach().clone())
    g_module.weight = genesis.nn.Parameter(to_genesis(weight, requires_grad=False))
    return t_module, g_module


def register(modules: tuple, **kwargs) -> tuple:
    """``orthogonal`` on both modules of a pair, with the same arguments."""
    torch.nn.utils.parametrizations.orthogonal(modules[0], **kwargs)
    genesis.nn.utils.parametrizations.orthogonal(modules[1], **kwargs)
    return modules


def state_to_genesis(module: torch.nn.Module) -> dict:
    return {key: to_genesis(value) for key, value in module.state_dict().items()}


def assert_orthogonal(weight: genesis.Tensor) -> None:
    """Orthonormal columns (tall or square) or rows (wide)."""
    n, k = weight.shape[-2], weight.shape[-1]
    product = weight.mT @ weight if n >= k else weight @ weight.mT
    identity = torch.eye(min(n, k), dtype=torch.float64).expand(product.shape)
    assert_same(product, identity, atol=1e-12, what="Q^T Q")


def assert_same_gradients(modules: tuple, seed: int = 0) -> None:
    """The gradient of the same weighted sum of the parametrized weight reaches the originals alike."""
    t_module, g_module = modules
    weights = torch.randn(t_module.weight.shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    (t_module.weight * weights).sum().backward()
    (g_module.weight * to_genesis(weights)).sum().backward()
    t_original = t_module.parametrizations.weight.original
    g_original = g_module.parametrizations.weight.original
    assert_same(g_original.grad, t_original.grad, what="grad of original")


@pytest.mark.parametrize("use_trivialization", [True, False])
@pytest.mark.parametrize("orthogonal_map", MAPS)
@pytest.mark.parametrize("shape", SHAPES)
def test_orthogonal_matches_torch(shape, orthogonal_map, use_trivialization):
    modules = register(pair(rand(*shape, seed=1)), orthogonal_map=orthogonal_map,
                       use_trivialization=use_trivialization)
    t_module, g_module = modules
    assert_orthogonal(g_module.weight)
    assert_same(g_module.weight, t_module.weight, what="weight")
    t_list, g_list = t_module.parametrizations.weight, g_module.parametrizations.weight
    assert_same(g_list.original, t_list.original, what="original")
    if use_trivialization:
        # A non-square weight is completed into base with random columns (each library's own generator): the
        # columns that the weight spans agree
        k = min(shape[-2:])
        assert_same(g_list[0].base[..., :k], t_list[0].base[..., :k], what="base")
    else:
        assert not hasattr(g_list[0], "base")
    # With torch's state (base included), the gradients through the parametrization agree
    g_module.load_state_dict(state_to_genesis(t_module))
    assert_same_gradients(modules)


@pytest.mark.parametrize("orthogonal_map", MAPS)
def test_orthogonal_keeps_an_orthogonal_weight_and_orthogonalizes_others(orthogonal_map):
    # An orthogonal weight is kept as it is; another one becomes the Q of its QR decomposition (diag(R) > 0)
    q = torch.linalg.qr(rand(5, 5, seed=2).detach())[0]
    for weight in (q, rand(5, 5, seed=3), -torch.eye(5, dtype=torch.float64)):
        t_module, g_module = register(pair(weight), orthogonal_map=orthogonal_map)
        assert_same(g_module.weight, t_module.weight)
    assert_same(g_module.weight, -torch.eye(5, dtype=torch.float64))


@pytest.mark.parametrize("orthogonal_map", MAPS)
def test_orthogonal_float32(orthogonal_map):
    t_module, g_module = register(pair(rand(6, 4, dtype=torch.float32, seed=21)), orthogonal_map=orthogonal_map)
    assert_same(g_module.weight, t_module.weight, atol=1e-5)


def test_default_map_and_linear_layer():
    modules = register((torch.nn.Linear(3, 3, dtype=torch.float64), genesis.nn.Linear(3, 3, dtype=genesis.float64)))
    assert modules[1].parametrizations.weight[0].orthogonal_map.name == "matrix_exp"
    t_linear, g_linear = torch.nn.Linear(3, 6, dtype=torch.float64), genesis.nn.Linear(3, 6, dtype=genesis.float64)
    g_linear.to(DEVICE).load_state_dict(state_to_genesis(t_linear))
    register((t_linear, g_linear))
    assert g_linear.parametrizations.weight[0].orthogonal_map.name == "householder"
    assert type(g_linear).__name__ == "ParametrizedLinear"
    x = rand(4, 3, seed=4)
    assert_same(g_linear(to_genesis(x)), t_linear(x))


@pytest.mark.parametrize("use_trivialization", [True, False])
def test_state_dict_keys_and_round_trip(use_trivialization):
    t_module, g_module = register((torch.nn.Linear(4, 6, dtype=torch.float64),
                                   genesis.nn.Linear(4, 6, dtype=genesis.float64).to(DEVICE)),
                                  use_trivialization=use_trivialization)
    keys = sorted(g_module.state_dict())
    assert keys == sorted(t_module.state_dict())
    expected = {"bias", "parametrizations.weight.original"} | ({"parametrizations.weight.0.base"}
                                                               if use_trivialization else set())
    assert set(keys) == expected
    # Genesis's own state into a fresh parametrized module, then torch's state into Genesis
    fresh = genesis.nn.utils.parametrizations.orthogonal(genesis.nn.Linear(4, 6, dtype=genesis.float64).to(DEVICE),
                                                         use_trivialization=use_trivialization)
    fresh.load_state_dict(g_module.state_dict())
    assert_same(fresh.weight, to_torch(g_module.weight))
    g_module.load_state_dict(state_to_genesis(t_module))
    assert_same(g_module.weight, t_module.weight)


@pytest.mark.parametrize("orthogonal_map", MAPS)
@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5), (2, 4, 3)])
def test_assignment_goes_through_right_inverse(shape, orthogonal_map):
    # With the trivialization, assigning sets base to the (completed, orthogonalized) value and the original to -I
    value = rand(*shape, seed=5).detach()
    t_module, g_module = register(pair(rand(*shape, seed=6)), orthogonal_map=orthogonal_map)
    t_module.weight = value
    g_module.weight = to_genesis(value)
    assert_same(g_module.weight, t_module.weight)
    assert_same(g_module.parametrizations.weight.original, t_module.parametrizations.weight.original)
    assert_orthogonal(g_module.weight)
    # An orthogonal value is kept
    t_module.weight = t_module.weight.detach()
    g_module.weight = to_genesis(t_module.weight)
    assert_same(g_module.weight, t_module.weight)


@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5), (2, 4, 3)])
def test_householder_without_trivialization_assignment(shape):
    # The original becomes geqrf's reflections with diag(R)'s signs on the diagonal (torch's right_inverse)
    value = rand(*shape, seed=7).detach()
    modules = register(pair(rand(*shape, seed=8)), orthogonal_map="householder", use_trivialization=False)
    t_module, g_module = modules
    t_module.weight = value
    g_module.weight = to_genesis(value)
    assert_same(g_module.parametrizations.weight.original, t_module.parametrizations.weight.original)
    assert_same(g_module.weight, t_module.weight)
    assert_same_gradients(modules, seed=1)


@pytest.mark.parametrize("orthogonal_map", ["matrix_exp", "cayley"])
def test_assignment_without_trivialization_is_refused(orthogonal_map):
    for lib, module in zip((torch, genesis), pair(rand(3, 3, seed=9))):
        lib.nn.utils.parametrizations.orthogonal(module, orthogonal_map=orthogonal_map, use_trivialization=False)
        value = torch.eye(3, dtype=torch.float64)
        with pytest.raises(NotImplementedError, match="not possible to assign"):
            module.weight = value if lib is torch else to_genesis(value)


def test_training_steps_match_torch():
    # A few SGD steps through the parametrized weight move the originals alike; the weight stays orthogonal
    for orthogonal_map, use_trivialization in (("matrix_exp", True), ("cayley", True), ("householder", False)):
        t_layer, g_layer = torch.nn.Linear(4, 5, dtype=torch.float64), genesis.nn.Linear(4, 5, dtype=genesis.float64)
        g_layer.to(DEVICE).load_state_dict(state_to_genesis(t_layer))
        register((t_layer, g_layer), orthogonal_map=orthogonal_map, use_trivialization=use_trivialization)
        g_layer.load_state_dict(state_to_genesis(t_layer))  # the same base
        t_opt = torch.optim.SGD(t_layer.parameters(), lr=0.1)
        g_opt = genesis.optim.SGD(g_layer.parameters(), lr=0.1)
        x, target = rand(8, 4, seed=10, requires_grad=False), rand(8, 5, seed=11, requires_grad=False)
        for _ in range(3):
            for layer, opt, lib, inputs in ((t_layer, t_opt, torch, (x, target)),
                                            (g_layer, g_opt, genesis, (to_genesis(x), to_genesis(target)))):
                opt.zero_grad()
                lib.nn.functional.mse_loss(layer(inputs[0]), inputs[1]).backward()
                opt.step()
        assert_same(g_layer.weight, t_layer.weight, what=f"{orthogonal_map} weight after 3 steps")
        assert_orthogonal(g_layer.weight)


def test_remove_parametrization_keeps_the_orthogonal_weight():
    t_module, g_module = register(pair(rand(4, 3, seed=12)))
    for lib, module in ((torch, t_module), (genesis, g_module)):
        lib.nn.utils.parametrize.remove_parametrizations(module, "weight")
    assert_same(g_module.weight, t_module.weight)
    assert isinstance(g_module.weight, genesis.nn.Parameter)


def test_orthogonal_errors():
    for lib, module in zip((torch, genesis), pair(rand(3, 3, seed=13))):
        orthogonal = lib.nn.utils.parametrizations.orthogonal
        with pytest.raises(ValueError, match="orthogonal_map has to be one of"):
            orthogonal(module, orthogonal_map="qr")
        with pytest.raises(ValueError, match="has no parameter or buffer"):
            orthogonal(module, name="bias")
        module.vector = (torch.nn.Parameter if lib is torch else genesis.nn.Parameter)(
            torch.ones(3) if lib is torch else genesis.ones(3, device=DEVICE))
        with pytest.raises(ValueError, match="Expected a matrix or batch of matrices"):
            orthogonal(module, name="vector")
        orthogonal(module)
        with pytest.raises(ValueError, match="Expected a matrix or batch of matrices of shape"):
            module.weight = torch.eye(2) if lib is torch else genesis.eye(2, device=DEVICE)


def householder_product(lib, A, tau):
    return lib.linalg.householder_product(A, tau)


@pytest.mark.parametrize("shape,k", [((5, 3), 2), ((4, 4), 4), ((2, 6, 3), 3), ((3, 1), 1), ((4, 3), 0)])
def test_householder_product(shape, k):
    A = rand(*shape, seed=14)
    tau = rand(*shape[:-2], k, low=0.2, high=1.8, seed=15)
    check(householder_product, A, tau)


def test_householder_product_of_geqrf_is_q():
    A = rand(2, 5, 3, seed=16).detach()
    reflections, tau = torch.geqrf(A)
    check(householder_product, reflections.requires_grad_(True), tau.requires_grad_(True))
    q = genesis.linalg.householder_product(to_genesis(reflections), to_genesis(tau))
    assert_same(q, torch.linalg.qr(A)[0])


def test_householder_product_complex():
    A = torch.complex(rand(4, 3, seed=17, requires_grad=False), rand(4, 3, seed=18, requires_grad=False))
    tau = torch.complex(rand(3, low=0.2, high=1.5, seed=19, requires_grad=False),
                        rand(3, low=-0.5, high=0.5, seed=20, requires_grad=False))
    check(householder_product, A.requires_grad_(True), tau.requires_grad_(True))


def test_householder_product_errors():
    A, tau = rand(4, 3), rand(2)
    check_error(RuntimeError, householder_product, A.mT, tau, match="must be greater than or equal to input.shape")
    check_error(RuntimeError, householder_product, A, rand(4), match="tau.shape")
    check_error(RuntimeError, householder_product, rand(2, 4, 3), rand(3, 2), match="batch dimensions")
    check_error(RuntimeError, householder_product, A, rand(2, 2), match="one dimension less")
    check_error(RuntimeError, householder_product, A, tau.float(), match="dtype")
