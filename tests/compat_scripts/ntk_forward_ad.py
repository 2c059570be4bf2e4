"""The neural tangent kernel and forward-mode AD tutorials: an empirical NTK by Jacobian contraction and by NTK-vector
products (vmap over vjp/jvp with functional_call), dual tensors in modules, and a custom Function whose jvp reads
and deletes what forward kept on ctx. ``losses`` collects kernel sums, tangents and verdicts."""


import torch
import torch.autograd.forward_ad as fwAD
import torch.nn as nn
from torch.func import functional_call, jacrev, jvp, vjp, vmap

losses = []

class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, (3, 3))
        self.conv2 = nn.Conv2d(8, 8, (3, 3))
        self.fc = nn.Linear(8, 5)

    def forward(self, x):
        x = self.conv1(x).relu()
        x = self.conv2(x).relu()
        x = x.mean(dim=(-2, -1))
        return self.fc(x)

net = CNN()
with torch.no_grad():
    for i, p in enumerate(net.parameters()):
        p.copy_(torch.sin(torch.arange(p.numel(), dtype=torch.float32) * (0.41 + i)).reshape(p.shape) * 0.3)
x_train = torch.cos(torch.arange(4 * 3 * 8 * 8, dtype=torch.float32) * 0.23).reshape(4, 3, 8, 8)
x_test = torch.sin(torch.arange(3 * 3 * 8 * 8, dtype=torch.float32) * 0.19).reshape(3, 3, 8, 8)
params = {k: v.detach() for k, v in net.named_parameters()}

def fnet_single(params, x):
    return functional_call(net, params, (x.unsqueeze(0),)).squeeze(0)

def empirical_ntk_jacobian_contraction(fnet_single, params, x1, x2, compute="full"):
    jac1 = vmap(jacrev(fnet_single), (None, 0))(params, x1)
    jac1 = jac1.values()
    jac1 = [j.flatten(2) for j in jac1]
    jac2 = vmap(jacrev(fnet_single), (None, 0))(params, x2)
    jac2 = jac2.values()
    jac2 = [j.flatten(2) for j in jac2]
    einsum_expr = {"full": "Naf,Mbf->NMab", "trace": "Naf,Maf->NM", "diagonal": "Naf,Maf->NMa"}[compute]
    result = torch.stack([torch.einsum(einsum_expr, j1, j2) for j1, j2 in zip(jac1, jac2)])
    return result.sum(0)

result = empirical_ntk_jacobian_contraction(fnet_single, params, x_train, x_test)
losses += list(result.shape)
losses.append(result.sum().item())
result_t = empirical_ntk_jacobian_contraction(fnet_single, params, x_train, x_test, "trace")
losses.append(result_t.sum().item())

def empirical_ntk_ntk_vps(func, params, x1, x2, compute="full"):
    def get_ntk(x1, x2):
        def func_x1(params):
            return func(params, x1)
        def func_x2(params):
            return func(params, x2)
        output, vjp_fn = vjp(func_x1, params)
        def get_ntk_slice(vec):
            vjps = vjp_fn(vec)
            _, jvps = jvp(func_x2, (params,), vjps)
            return jvps
        basis = torch.eye(output.numel(), dtype=output.dtype, device=output.device).view(output.numel(), -1)
        return vmap(get_ntk_slice)(basis)
    result = vmap(vmap(get_ntk, (None, 0)), (0, None))(x1, x2)
    if compute == "diagonal":
        result = torch.diagonal(result, dim1=-1, dim2=-2)
    return result

result_from_ntk_vps = empirical_ntk_ntk_vps(fnet_single, params, x_train, x_test)
losses.append(torch.allclose(result, result_from_ntk_vps, atol=1e-5))
losses.append(result_from_ntk_vps.sum().item())

# forward-mode AD
primal = torch.linspace(-1, 1, 10)
tangent = torch.linspace(0, 1, 10)
def fn(x, y):
    return x ** 2 + y ** 2
with fwAD.dual_level():
    dual_input = fwAD.make_dual(primal, tangent)
    losses.append(fwAD.unpack_dual(dual_input).tangent is tangent)
    dual_input_alt = fwAD.make_dual(primal, tangent.T)
    losses.append(fwAD.unpack_dual(dual_input_alt).tangent is not tangent)
    plain_tensor = torch.linspace(2, 3, 10)
    dual_output = fn(dual_input, plain_tensor)
    jvp_ = fwAD.unpack_dual(dual_output).tangent
    losses.append(jvp_.sum().item())
    p, t = fwAD.unpack_dual(dual_output)
    losses.append(p.sum().item())
losses.append(fwAD.unpack_dual(dual_output).tangent is None)
model = nn.Linear(5, 5)
with torch.no_grad():
    model.weight.copy_(torch.arange(25.).reshape(5, 5) / 25)
    model.bias.fill_(0.1)
input = torch.linspace(0, 1, 16 * 5).reshape(16, 5)
params = {name: p for name, p in model.named_parameters()}
tangents = {name: torch.ones_like(p) * 0.5 for name, p in params.items()}
with fwAD.dual_level():
    for name, p in params.items():
        delattr(model, name)
        setattr(model, name, fwAD.make_dual(p, tangents[name]))
    out = model(input)
    jvp_ = fwAD.unpack_dual(out).tangent
    losses.append(jvp_.sum().item())
model = nn.Linear(5, 5)
with torch.no_grad():
    model.weight.copy_(torch.arange(25.).reshape(5, 5) / 25)
    model.bias.fill_(0.1)
with fwAD.dual_level():
    dual_params = {name: fwAD.make_dual(p, tangents[name]) for name, p in params.items()}
    out = functional_call(model, dual_params, input)
    jvp_ = fwAD.unpack_dual(out).tangent
    losses.append(jvp_.sum().item())

class Fn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, foo):
        result = torch.exp(foo)
        ctx.result = result
        return result

    @staticmethod
    def jvp(ctx, gI):
        gO = gI * ctx.result
        del ctx.result
        return gO

fn_ = Fn.apply
primal = torch.linspace(-1, 1, 10, dtype=torch.double).requires_grad_()
tangent = torch.linspace(1, 2, 10, dtype=torch.double)
with fwAD.dual_level():
    dual_input = fwAD.make_dual(primal, tangent)
    dual_output = fn_(dual_input)
    jvp_ = fwAD.unpack_dual(dual_output).tangent
losses.append(jvp_.sum().item())
losses.append(torch.autograd.gradcheck(Fn.apply, (primal,), check_forward_ad=True, check_backward_ad=False,
                                       check_undefined_grad=False, check_batched_grad=False))
# functorch jvp
primal0 = torch.linspace(0, 1, 10)
primal1 = torch.linspace(1, 2, 10)
def fn2(x, y):
    return x ** 2 + y ** 2
out, jvp_out = jvp(fn2, (primal0, primal1), (torch.ones(10), torch.ones(10)))
losses.append(jvp_out.sum().item())


def flatten(value):
    if isinstance(value, (list, tuple)):
        return [x for item in value for x in flatten(item)]
    return [float(value)]


losses = flatten(losses)
