"""Custom autograd Functions in both of torch's styles (ctx in forward; torch >= 2.0's forward without ctx plus
setup_context), once_differentiable, and gradcheck / gradgradcheck imported by both of torch's paths. ``losses``
collects gradients and verdicts (1.0 / 0.0) for the comparison with torch."""

import torch
from torch.autograd import Function, gradcheck, gradgradcheck
from torch.autograd.function import once_differentiable
from torch.autograd.gradcheck import gradcheck as gradcheck_from_module


class LinearFn(Function):
    @staticmethod
    def forward(ctx, input, weight, bias=None):
        ctx.save_for_backward(input, weight, bias)
        output = input.mm(weight.t())
        if bias is not None:
            output += bias.unsqueeze(0).expand_as(output)
        return output

    @staticmethod
    def backward(ctx, grad_output):
        input, weight, bias = ctx.saved_tensors
        grad_input = grad_weight = grad_bias = None
        if ctx.needs_input_grad[0]:
            grad_input = grad_output.mm(weight)
        if ctx.needs_input_grad[1]:
            grad_weight = grad_output.t().mm(input)
        if bias is not None and ctx.needs_input_grad[2]:
            grad_bias = grad_output.sum(0)
        return grad_input, grad_weight, grad_bias


class ScaledExp(Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(x, scale=2.0):
        return x.exp() * scale

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, scale = inputs
        ctx.scale = scale
        ctx.save_for_backward(output)

    @staticmethod
    def backward(ctx, g):
        y, = ctx.saved_tensors
        return g * y, None


class SortWithIndices(Function):
    @staticmethod
    def forward(x):
        return torch.sort(x, dim=-1)

    @staticmethod
    def setup_context(ctx, inputs, output):
        values, idx = output
        ctx.mark_non_differentiable(idx)
        ctx.save_for_backward(idx)

    @staticmethod
    @once_differentiable
    def backward(ctx, g_values, g_idx):
        idx, = ctx.saved_tensors
        grad = torch.zeros_like(g_values)
        grad.scatter_(-1, idx, g_values)
        return grad


class Bad(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g * 3


losses = []
x = torch.linspace(-1, 1, 12, dtype=torch.float64).view(3, 4).requires_grad_()
w = torch.linspace(0.5, -0.5, 20, dtype=torch.float64).view(5, 4).requires_grad_()
b = torch.linspace(0, 1, 5, dtype=torch.float64).requires_grad_()
losses.append(float(gradcheck(LinearFn.apply, (x, w, b), eps=1e-6, atol=1e-4)))
losses.append(float(gradcheck_from_module(ScaledExp.apply, (x,))))
losses.append(float(gradgradcheck(ScaledExp.apply, (x,))))
losses.append(float(gradcheck(Bad.apply, (x,), raise_exception=False)))

LinearFn.apply(x, w.detach(), b).pow(2).sum().backward()
losses += [x.grad.sum().item(), float(w.grad is None)] + b.grad.tolist()

y = ScaledExp.apply(x, 0.5)
y.sum().backward()
losses.append(x.grad.sum().item())
with torch.no_grad():
    losses.append(ScaledExp.apply(x).sum().item())

v = torch.tensor([[3.0, 1.0, 2.0], [0.5, -1.0, 4.0]], requires_grad=True)
vals, idx = SortWithIndices.apply(v)
losses.append(float(idx.requires_grad))
(vals * torch.tensor([1.0, 2.0, 3.0])).sum().backward()
losses += v.grad.flatten().tolist()
g, = torch.autograd.grad(SortWithIndices.apply(v)[0].pow(2).sum(), v, create_graph=True)
try:
    g.sum().backward()
    losses.append(0.0)
except RuntimeError as err:
    losses.append(float("once_differentiable" in str(err)))
print(losses)
