"""The extending-torch.func tutorial: autograd.Functions with setup_context that call NumPy in forward (vmap
staticmethods with in_dims and info.batch_size), generate_vmap_rule for a Function returning an intermediate for
double backward, and a jvp staticmethod under jvp/jacfwd. ``losses`` collects gradients and values."""

import numpy as np
import torch
from torch.func import grad, jacrev, jvp, vjp, vmap

losses = []

def to_numpy(tensor):
    return tensor.cpu().numpy()

class NumpySort(torch.autograd.Function):
    @staticmethod
    def forward(x, dim):
        device = x.device
        x = to_numpy(x)
        ind = np.argsort(x, axis=dim)
        ind_inv = np.argsort(ind, axis=dim)
        result = np.take_along_axis(x, ind, axis=dim)
        return (torch.tensor(result, device=device), torch.tensor(ind, device=device),
                torch.tensor(ind_inv, device=device))

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, dim = inputs
        _, ind, ind_inv = output
        ctx.mark_non_differentiable(ind, ind_inv)
        ctx.save_for_backward(ind, ind_inv)
        ctx.dim = dim

    @staticmethod
    def backward(ctx, grad_output, _0, _1):
        ind, ind_inv = ctx.saved_tensors
        return NumpyTake.apply(grad_output, ind_inv, ind, ctx.dim), None

    @staticmethod
    def vmap(info, in_dims, x, dim):
        x_bdim, _ = in_dims
        logical_dim = dim if dim >= 0 else dim + x.dim() - 1
        x = x.movedim(x_bdim, 0)
        result = NumpySort.apply(x, logical_dim + 1)
        return result, (0, 0, 0)

class NumpyTake(torch.autograd.Function):
    @staticmethod
    def forward(x, ind, ind_inv, dim):
        device = x.device
        x = to_numpy(x)
        ind = to_numpy(ind)
        return torch.tensor(np.take_along_axis(x, ind, dim), device=device)

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, ind, ind_inv, dim = inputs
        ctx.save_for_backward(ind, ind_inv)
        ctx.dim = dim

    @staticmethod
    def backward(ctx, grad_output):
        ind, ind_inv = ctx.saved_tensors
        result = NumpyTake.apply(grad_output, ind_inv, ind, ctx.dim)
        return result, None, None, None

    @staticmethod
    def vmap(info, in_dims, x, ind, ind_inv, dim):
        x_bdim, ind_bdim, ind_inv_bdim, _ = in_dims
        logical_dim = dim if dim >= 0 else dim + (x.dim() - (0 if x_bdim is None else 1))
        def maybe_expand_bdim_at_front(x, x_bdim):
            if x_bdim is None:
                return x.expand(info.batch_size, *x.shape)
            return x.movedim(x_bdim, 0)
        x = maybe_expand_bdim_at_front(x, x_bdim)
        ind = maybe_expand_bdim_at_front(ind, ind_bdim)
        ind_inv = maybe_expand_bdim_at_front(ind_inv, ind_inv_bdim)
        return NumpyTake.apply(x, ind, ind_inv, logical_dim + 1), 0

def numpy_sort(x, dim=-1):
    result, _, _ = NumpySort.apply(x, dim)
    return result

x = torch.tensor([[0.3, -1.2, 2.5, 0.7], [1.1, 0.2, -0.5, 3.0]])
grad_x = grad(lambda x: (numpy_sort(x) * torch.arange(4.)).sum())(x)
losses.append(grad_x.tolist())
losses.append(vmap(numpy_sort)(x).tolist())
losses.append(vmap(numpy_sort, in_dims=1)(x).tolist())
y = x.clone().requires_grad_()
(numpy_sort(y) * torch.arange(4.)).sum().backward()
losses.append(y.grad.tolist())

class MyCube(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(x):
        result = x ** 3
        dx = 3 * x ** 2
        return result, dx

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, = inputs
        result, dx = output
        ctx.save_for_backward(x, dx)

    @staticmethod
    def backward(ctx, grad_output, grad_dx):
        x, dx = ctx.saved_tensors
        result = grad_output * dx + grad_dx * 6 * x
        return result

def my_cube(x):
    result, _ = MyCube.apply(x)
    return result

x = torch.linspace(-1, 2, 5)
losses.append(grad(lambda t: my_cube(t).sum())(x).tolist())
losses.append(vmap(grad(my_cube))(x).tolist())
losses.append(vmap(grad(grad(my_cube)))(x).tolist())
losses.append(jacrev(my_cube)(x).sum().item())

class MySin(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(x):
        return x.sin()

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, = inputs
        ctx.save_for_backward(x)
        ctx.save_for_forward(x)
        ctx.x = x

    @staticmethod
    def backward(ctx, gy):
        x, = ctx.saved_tensors
        return gy * x.cos()

    @staticmethod
    def jvp(ctx, x_t):
        return x_t * ctx.x.cos()

out, t = jvp(MySin.apply, (x,), (torch.ones(5),))
losses.append(out.tolist())
losses.append(t.tolist())
out, fn = vjp(MySin.apply, x)
losses.append(fn(torch.ones(5))[0].tolist())
losses.append(torch.func.jacfwd(MySin.apply)(x).diagonal().tolist())
losses.append(vmap(MySin.apply)(x.reshape(5, 1)).flatten().tolist())


def flatten(value):
    if isinstance(value, (list, tuple)):
        return [x for item in value for x in flatten(item)]
    return [float(value)]


losses = flatten(losses)
