"""Graph node names against torch: ``type(y.grad_fn).__name__`` and ``y.grad_fn.name()`` for the common ops, leaves'
``AccumulateGrad``, a user's Function, and the node machinery (next_functions, hooks) on the named node classes."""

from __future__ import annotations

import importlib

import pytest
import torch

import genesis
from genesis.autograd.function import BackwardCtx, Function
from genesis.autograd.node_names import TORCH_NAMES
from tests.helpers import DEVICE, to_genesis


def _inputs(lib: object) -> dict:
    gen = torch.Generator().manual_seed(0)
    shapes = {"x": (3, 4), "y": (3, 4), "m": (4, 5), "w": (5, 4), "b": (5,), "v": (4,), "img": (1, 2, 5, 5),
              "cw": (3, 2, 3, 3)}
    values = {k: torch.randn(s, generator=gen) for k, s in shapes.items()}
    values["y"] = values["y"].abs() + 0.5
    if lib is torch:
        inputs = {k: v.requires_grad_() for k, v in values.items()}
    else:
        inputs = {k: to_genesis(v, requires_grad=True) for k, v in values.items()}
    device = {} if lib is torch else {"device": DEVICE}
    inputs["rows"] = lib.tensor([0, 2], **device)
    inputs["cols"] = lib.tensor([[0], [1], [2]], **device)
    inputs["labels"] = lib.tensor([0, 1, 2], **device)
    return inputs


# op -> f(lib, inputs); ops where Genesis's op is one torch op (or its usual form, as matmul of 2-D operands).
OPS = {
    "mul": lambda lib, a: a["x"] * a["y"],
    "mul_scalar": lambda lib, a: a["x"] * 2,
    "add": lambda lib, a: a["x"] + a["y"],
    "add_scalar": lambda lib, a: a["x"] + 1,
    "sub": lambda lib, a: a["x"] - a["y"],
    "rsub": lambda lib, a: 1 - a["x"],
    "div": lambda lib, a: a["x"] / a["y"],
    "rdiv": lambda lib, a: 2 / a["y"],
    "neg": lambda lib, a: -a["x"],
    "matmul": lambda lib, a: a["x"] @ a["m"],
    "sum": lambda lib, a: a["x"].sum(),
    "mean": lambda lib, a: a["x"].mean(),
    "relu": lambda lib, a: a["x"].relu(),
    "view": lambda lib, a: a["x"].view(12),
    "reshape_view": lambda lib, a: a["x"].reshape(2, 6),
    "reshape_copy": lambda lib, a: (a["x"] * 1).t().reshape(12),
    "transpose": lambda lib, a: a["x"].transpose(0, 1),
    "permute": lambda lib, a: a["img"].permute(0, 2, 3, 1),
    "unsqueeze": lambda lib, a: a["x"].unsqueeze(0),
    "expand": lambda lib, a: a["v"].expand(3, 4),
    "exp": lambda lib, a: a["x"].exp(),
    "log": lambda lib, a: a["y"].log(),
    "log1p": lambda lib, a: a["y"].log1p(),
    "sqrt": lambda lib, a: a["y"].sqrt(),
    "pow": lambda lib, a: a["y"] ** 3,
    "rpow": lambda lib, a: 2 ** a["x"],
    "tanh": lambda lib, a: a["x"].tanh(),
    "sigmoid": lambda lib, a: a["x"].sigmoid(),
    "abs": lambda lib, a: a["x"].abs(),
    "sin": lambda lib, a: a["x"].sin(),
    "cos": lambda lib, a: a["x"].cos(),
    "erf": lambda lib, a: a["x"].erf(),
    "reciprocal": lambda lib, a: a["y"].reciprocal(),
    "maximum": lambda lib, a: lib.maximum(a["x"], a["y"]),
    "where": lambda lib, a: lib.where(a["x"] > 0, a["x"], a["y"]),
    "cat": lambda lib, a: lib.cat([a["x"], a["y"]]),
    "split": lambda lib, a: a["x"].split(2)[0],
    "unbind": lambda lib, a: a["x"].unbind(0)[0],
    "index": lambda lib, a: a["x"][a["rows"]],
    "index_select": lambda lib, a: a["x"].index_select(0, a["rows"]),
    "gather": lambda lib, a: a["x"].gather(1, a["cols"]),
    "clone": lambda lib, a: a["x"].clone(),
    "to_dtype": lambda lib, a: a["x"].double(),
    "cumsum": lambda lib, a: a["x"].cumsum(0),
    "prod": lambda lib, a: a["x"].prod(),
    "sort": lambda lib, a: a["x"].sort()[0],
    "atan2": lambda lib, a: lib.atan2(a["x"], a["y"]),
    "linear": lambda lib, a: lib.nn.functional.linear(a["x"], a["w"], a["b"]),
    "softmax": lambda lib, a: lib.nn.functional.softmax(a["x"], dim=-1),
    "log_softmax": lambda lib, a: lib.nn.functional.log_softmax(a["x"], dim=-1),
    "gelu": lambda lib, a: lib.nn.functional.gelu(a["x"]),
    "gelu_tanh": lambda lib, a: lib.nn.functional.gelu(a["x"], approximate="tanh"),
    "silu": lambda lib, a: lib.nn.functional.silu(a["x"]),
    "softplus": lambda lib, a: lib.nn.functional.softplus(a["x"]),
    "leaky_relu": lambda lib, a: lib.nn.functional.leaky_relu(a["x"]),
    "sign": lambda lib, a: a["x"].sign(),
    "floor": lambda lib, a: a["x"].floor(),
    "ceil": lambda lib, a: lib.ceil(a["x"]),
    "trunc": lambda lib, a: a["x"].trunc(),
    "round": lambda lib, a: a["x"].round(),
    "hardtanh": lambda lib, a: lib.nn.functional.hardtanh(a["x"]),
    "relu6": lambda lib, a: lib.nn.functional.relu6(a["x"]),
    "threshold": lambda lib, a: lib.nn.functional.threshold(a["x"], 0.1, 2.0),
    "hardshrink": lambda lib, a: a["x"].hardshrink(),
    "softshrink": lambda lib, a: lib.nn.functional.softshrink(a["x"]),
    "clamp": lambda lib, a: a["x"].clamp(-0.5, 0.5),
    "clamp_min": lambda lib, a: lib.clamp_min(a["x"], 0.0),
    "clamp_max": lambda lib, a: a["x"].clamp_max(0.5),
    "clamp_tensors": lambda lib, a: a["x"].clamp(a["v"], a["y"]),
    "clamp_min_tensor": lambda lib, a: lib.clamp_min(a["x"], a["v"]),
    "clamp_max_tensor": lambda lib, a: a["x"].clamp_max(a["y"]),
    "lerp": lambda lib, a: lib.lerp(a["x"], a["y"], 0.3),
    "lerp_tensor_weight": lambda lib, a: lib.lerp(a["x"], a["y"], a["y"]),
    "add_alpha": lambda lib, a: lib.add(a["x"], a["y"], alpha=2),
    "sub_alpha": lambda lib, a: a["x"].sub(a["y"], alpha=0.5),
    "layer_norm": lambda lib, a: lib.nn.functional.layer_norm(a["x"], (4,)),
    "group_norm": lambda lib, a: lib.nn.functional.group_norm(a["img"], 1),
    "batch_norm": lambda lib, a: lib.nn.functional.batch_norm(a["img"], None, None, training=True),
    "embedding": lambda lib, a: lib.nn.functional.embedding(a["rows"], a["m"]),
    "cross_entropy": lambda lib, a: lib.nn.functional.cross_entropy(a["x"], a["labels"]),
    "conv2d": lambda lib, a: lib.nn.functional.conv2d(a["img"], a["cw"]),
    # reductions over every element and over dims are separate torch ops
    "sum_dim": lambda lib, a: a["x"].sum(0),
    "sum_dims_keepdim": lambda lib, a: a["x"].sum((0, 1), keepdim=True),
    "mean_dim": lambda lib, a: a["x"].mean(1),
    "prod_dim": lambda lib, a: a["x"].prod(0),
    "amax": lambda lib, a: a["x"].amax(0),
    "amin": lambda lib, a: a["x"].amin(),
    "max_all": lambda lib, a: a["x"].max(),
    "max_dim": lambda lib, a: a["x"].max(0)[0],
    "min_all": lambda lib, a: a["x"].min(),
    "min_dim": lambda lib, a: a["x"].min(1).values,
    "std": lambda lib, a: a["x"].std(0),
    "var": lambda lib, a: a["x"].var(),
    # basic indexing: the node of the last entry torch applies
    "select": lambda lib, a: a["x"][0],
    "select_then_full_slice": lambda lib, a: a["x"][0, :],
    "full_slice_then_select": lambda lib, a: a["x"][:, 1],
    "slice": lambda lib, a: a["x"][1:],
    "full_slice_alone": lambda lib, a: a["x"][:],
    "select_then_slice": lambda lib, a: a["x"][0, 1:3],
    "ellipsis": lambda lib, a: a["x"][...],
    "none_index": lambda lib, a: a["x"][0, None],
    "ellipsis_select": lambda lib, a: a["img"][..., 2],
    "narrow": lambda lib, a: a["x"].narrow(1, 1, 2),
    "select_method": lambda lib, a: a["x"].select(1, 2),
    "diagonal": lambda lib, a: a["x"].diagonal(),
    "unfold": lambda lib, a: a["x"].unfold(1, 2, 1),
    "as_strided": lambda lib, a: a["x"].as_strided((2, 2), (1, 2)),
    # Ops that overwrite a tensor: torch names each node after the op, not after a select.
    "masked_fill": lambda lib, a: a["x"].masked_fill(a["x"] > 0, 1.0),
    "masked_fill tensor": lambda lib, a: a["x"].detach().masked_fill(a["x"] > 0, a["b"][0]),
    "masked_fill_": lambda lib, a: (a["x"] * 1).masked_fill_(a["x"] > 0, 1.0),
    "fill_": lambda lib, a: (a["x"] * 1).fill_(2.0),
    "fill_ tensor": lambda lib, a: (a["x"] * 1).fill_(a["b"][0]),
    "zero_": lambda lib, a: (a["x"] * 1).zero_(),
    "copy_": lambda lib, a: (a["x"] * 1).copy_(a["y"]),
}


@pytest.mark.parametrize("op", sorted(OPS))
def test_node_names_match_torch(op: str) -> None:
    t_node = OPS[op](torch, _inputs(torch)).grad_fn
    g_node = OPS[op](genesis, _inputs(genesis)).grad_fn
    assert (type(g_node).__name__, g_node.name()) == (type(t_node).__name__, t_node.name())


def test_leaves_are_accumulate_grad_and_next_functions_link_named_nodes() -> None:
    results = []
    for lib in (torch, genesis):
        x = lib.ones(2, requires_grad=True, **({} if lib is torch else {"device": DEVICE}))
        y = (x * 2).exp().sum()
        exp_node = y.grad_fn.next_functions[0][0]
        mul_node = exp_node.next_functions[0][0]
        results.append((y.grad_fn.name(), exp_node.name(), mul_node.name(),
                        [type(f).__name__ for f, _ in mul_node.next_functions if f is not None]))
    assert results[0] == results[1] == ("SumBackward0", "ExpBackward0", "MulBackward0", ["AccumulateGrad"])


def test_a_users_function_is_named_as_torch_names_it() -> None:
    names = []
    for lib in (torch, genesis):
        class Square(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x

            @staticmethod
            def backward(ctx, grad):
                (x,) = ctx.saved_tensors
                return 2 * x * grad

        node = Square.apply(lib.ones(2, requires_grad=True)).grad_fn
        names.append(type(node).__name__)  # (torch 2.11 refuses name() on such a node; 2.13 gives the same name)
    assert names[0] == names[1] == node.name() == "SquareBackward"


def test_one_node_class_per_function_with_hooks_working() -> None:
    """Nodes of one op share one class, made with the op's class; hooks on the named nodes run as before."""
    x = genesis.ones(3, requires_grad=True, device=DEVICE)
    a, b = x * 2, x * 3
    assert type(a.grad_fn) is type(b.grad_fn) and isinstance(a.grad_fn, BackwardCtx)
    seen = []
    a.grad_fn.register_prehook(lambda grad_outputs: seen.append("pre"))
    a.grad_fn.register_hook(lambda grad_inputs, grad_outputs: seen.append("post"))
    a.register_hook(lambda grad: grad * 10)
    a.sum().backward()
    assert seen == ["pre", "post"] and x.grad.tolist() == [20.0, 20.0, 20.0]


def test_every_renamed_class_exists() -> None:
    """The table of torch names lists existing Function classes (a renamed class must be renamed there too)."""
    for key, name in TORCH_NAMES.items():
        module, _, qualname = key.rpartition(".")
        cls = getattr(importlib.import_module(module), qualname)
        assert issubclass(cls, Function) and cls._node_type.__name__ == name


def _edge_names(node: object) -> list:
    return [None if n is None else type(n).__name__ for n, _ in node.next_functions]


def _edges_of(lib: object, op: str) -> list:
    x = _inputs(lib)["x"]

    class Scale(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a, factor: float, flag: bool):
            return a * factor

        @staticmethod
        def backward(ctx, grad):
            return grad * 2.0, None, None

    y = {"sum_dim": lambda: (x * 1).sum(1, keepdim=True), "mean_dim": lambda: (x * 1).mean((0, 1)),
         "transpose": lambda: (x * 1).transpose(0, 1), "pow_scalar": lambda: (x * 1) ** 3,
         "softmax": lambda: (x * 1).softmax(1), "custom": lambda: Scale.apply(x, 2.0, True)}[op]()
    return _edge_names(y.grad_fn)


@pytest.mark.parametrize("op", ["sum_dim", "mean_dim", "transpose", "pow_scalar", "softmax", "custom"])
def test_next_functions_list_tensor_inputs_only(op: str) -> None:
    assert _edges_of(torch, op) == _edges_of(genesis, op)


def _node_hooks(lib: object) -> tuple:
    x = _inputs(lib)["x"]
    y = (x * 2).sum(1)
    seen = []
    y.grad_fn.register_hook(lambda grad_inputs, grad_outputs: (grad_inputs[0] * 10,))
    y.grad_fn.register_hook(lambda grad_inputs, grad_outputs: seen.append(len(grad_inputs)))
    y.sum().backward()
    return seen, x.grad.tolist()


def test_node_hook_sees_tensor_inputs_and_may_replace_their_gradients() -> None:
    assert _node_hooks(torch) == _node_hooks(genesis)


def test_node_hook_returning_the_wrong_count_raises() -> None:
    for lib in (torch, genesis):
        x = _inputs(lib)["x"]
        y = (x * 2).sum(1)
        y.grad_fn.register_hook(lambda grad_inputs, grad_outputs: (grad_inputs[0], grad_inputs[0]))
        with pytest.raises(RuntimeError, match="incorrect number of values"):
            y.sum().backward()


def _leaf_node_hooks(lib: object) -> list:
    """What the pre- and post-hooks of a leaf's AccumulateGrad node see over two backward passes (the hook on
    ``p.expand_as(p).grad_fn.next_functions[0][0]`` that data-parallel wrappers register), and the node's names."""
    p = lib.ones(3, requires_grad=True, **({} if lib is torch else {"device": DEVICE}))
    node = p.expand_as(p).grad_fn.next_functions[0][0]
    seen = [type(node).__name__, node.name()]
    def grad() -> list | None:
        return None if p.grad is None else p.grad.tolist()

    node.register_prehook(lambda go: seen.append(("pre", [g.tolist() for g in go], grad())))
    node.register_hook(lambda gi, go: seen.append(("post", gi, [g.tolist() for g in go], grad())))
    (p * 2).sum().backward()
    (p * 3).sum().backward()
    return seen


def test_leaf_node_hooks_run_as_torch() -> None:
    assert _leaf_node_hooks(genesis) == _leaf_node_hooks(torch)


@pytest.mark.parametrize("returned", ["int", "double", "shape"])
def test_tensor_hook_returning_another_kind_of_value_raises_as_torch(returned: str) -> None:
    errors = []
    for lib in (torch, genesis):
        x = lib.ones(2, requires_grad=True, **({} if lib is torch else {"device": DEVICE}))
        x.register_hook({"int": lambda g: 1, "double": lambda g: g.double(), "shape": lambda g: g[:1]}[returned])
        with pytest.raises((TypeError, RuntimeError)) as info:
            (x * 2).sum().backward()
        errors.append((info.type, str(info.value).replace("genesis.", "torch.").replace("cuda.", "")))
    assert errors[0] == errors[1]


def test_post_accumulate_grad_hook_needs_a_tensor_that_requires_grad() -> None:
    for lib in (torch, genesis):
        with pytest.raises(RuntimeError, match="cannot register a hook on a tensor that doesn't require gradient"):
            lib.ones(2).register_post_accumulate_grad_hook(lambda t: None)
