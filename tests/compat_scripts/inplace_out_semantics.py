"""In-place semantics: version-counter errors, .data vs detach(), views of leaves, out= arguments (dtype casts,
resizing, tuples, autograd refusal) and in-place type rules."""
import warnings

import torch

losses = []


def err(fn):
    """0: no error; 1: RuntimeError; 2: RuntimeError about an inplace operation; 3: another exception."""
    try:
        fn()
        return 0
    except RuntimeError as e:
        return 2 if "inplace operation" in str(e) else 1
    except Exception:
        return 3


a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
b = a * 2
c = b.sigmoid()
b.mul_(3)
losses.append(err(lambda: c.sum().backward()))
a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
b = a.exp()
b.add_(1)
losses.append(err(lambda: b.sum().backward()))
a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
b = a * 1
y = b.exp()
b += 1
losses.append(err(lambda: y.sum().backward()))
a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
losses.append(err(lambda: a.add_(1)))
with torch.no_grad():
    a.add_(1)
losses.append(a.tolist())
x = torch.zeros(3)
x.add_(1)
x[0] = 5
x.copy_(torch.ones(3))
losses.append(x.tolist())
y = x.view(3)
y.mul_(2)
losses.append(x.tolist())
# inplace on a view of a leaf
w = torch.ones(4, requires_grad=True)
losses.append(err(lambda: w[:2].mul_(2)))
# inplace on a view of a non-leaf works with autograd
w = torch.ones(4, requires_grad=True)
h = w * 1
h[:2] *= torch.tensor([2.0, 3.0])
h.sum().backward()
losses.append(w.grad.tolist())
w = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
z = w.clone()
z[1] = 0.0
(z * z).sum().backward()
losses.append(w.grad.tolist())
w = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
z = w * 2
z.relu_()
z.sum().backward()
losses.append(w.grad.tolist())
w = torch.tensor([-1.0, 2.0, 3.0], requires_grad=True)
z = w.clone()
torch.nn.functional.relu(z, inplace=True)
z.sum().backward()
losses.append(w.grad.tolist())
# detach shares storage
w = torch.tensor([1.0, 2.0], requires_grad=True)
d = w.detach()
d.zero_()
losses.append(w.tolist())
w2 = torch.tensor([1.0, 2.0], requires_grad=True)
out = w2.sin()
out.detach().zero_()
losses.append(err(lambda: out.sum().backward()))
w3 = torch.tensor([1.0, 2.0], requires_grad=True)
o3 = w3.exp()
o3.data.mul_(0)
o3.sum().backward()
losses.append(w3.grad.tolist())
# out= arguments
o = torch.empty(3)
r = torch.add(torch.ones(3), torch.ones(3), out=o)
losses.append(r is o)
losses.append(o.tolist())
o = torch.empty(0)
torch.mul(torch.ones(2, 2), 3, out=o)
losses.append(list(o.shape))
o = torch.empty(5)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    torch.sub(torch.ones(2), 1, out=o)
losses.append(list(o.shape))
losses.append(len(caught) > 0)
o = torch.empty(3, dtype=torch.long)
losses.append(err(lambda: torch.add(torch.ones(3), 1, out=o)))
o = torch.empty(3, dtype=torch.float64)
torch.add(torch.ones(3), 1, out=o)
losses.append(o.dtype == torch.float64)
o = torch.empty(2, 2)
torch.matmul(torch.eye(2), torch.ones(2, 2) * 2, out=o)
losses.append(o.tolist())
o = torch.empty(3)
torch.sum(torch.ones(3, 3), dim=0, out=o)
losses.append(o.tolist())
vals, idx = torch.empty(2), torch.empty(2, dtype=torch.long)
torch.max(torch.tensor([[1.0, 5.0], [7.0, 2.0]]), dim=1, out=(vals, idx))
losses.append(vals.tolist() + idx.tolist())
o = torch.empty(4)
torch.cat([torch.ones(2), torch.zeros(2)], out=o)
losses.append(o.tolist())
o = torch.empty(3)
torch.clamp(torch.tensor([-1.0, 0.5, 2.0]), 0, 1, out=o)
losses.append(o.tolist())
o = torch.empty(3, dtype=torch.bool)
torch.gt(torch.tensor([1, 2, 3]), 2, out=o)
losses.append(o.tolist())
o = torch.zeros(2, 2)
torch.exp(torch.zeros(2, 2), out=o[0:1] if False else o)
losses.append(o.tolist())
o = torch.empty(3)
torch.arange(3, out=o)
losses.append(o.tolist())
o = torch.empty(3)
torch.linspace(0, 1, 3, out=o)
losses.append(o.tolist())
gradable = torch.ones(3, requires_grad=True)
losses.append(err(lambda: torch.add(gradable, 1, out=torch.empty(3, requires_grad=True))))
o = torch.empty(3)
torch.where(torch.tensor([True, False, True]), torch.ones(3), torch.zeros(3), out=o)
losses.append(o.tolist())
# in-place type rules
i = torch.tensor([1, 2, 3])
losses.append(err(lambda: i.div_(2)))
losses.append(err(lambda: i.mul_(1.5)))
i.mul_(2)
losses.append(i.tolist())
f = torch.tensor([1.0, 2.0])
f.add_(torch.tensor([1, 1]))
losses.append(f.tolist())
losses.append(err(lambda: torch.ones(2).add_(torch.ones(3))))
losses.append(err(lambda: torch.ones(1).add_(torch.ones(3))))
t = torch.ones(3, 1)
losses.append(err(lambda: t.add_(torch.ones(3, 2))))
m = torch.zeros(3)
m.masked_fill_(torch.tensor([True, False, True]), 2.0)
losses.append(m.tolist())
m.clamp_(max=1.0).sub_(0.5).abs_()
losses.append(m.tolist())
m.fill_(torch.tensor(4.0))
losses.append(m.tolist())
losses.append(err(lambda: m.fill_(torch.ones(2))))
e = torch.ones(2, 3)
e.t_()
losses.append(list(e.shape))
e.unsqueeze_(0).squeeze_(0).transpose_(0, 1)
losses.append(list(e.shape))
e.resize_(3, 3)
losses.append(list(e.shape))
ov = torch.arange(4.0)
ov[1:].copy_(ov[:-1].clone())
losses.append(ov.tolist())
ex = torch.zeros(1, 3).expand(2, 3)
losses.append(err(lambda: ex.add_(1)))
losses.append(err(lambda: ex.copy_(torch.ones(2, 3))))
losses.append(err(lambda: torch.zeros(2).exp_().requires_grad_().exp_()))

def _flat(v):
    if isinstance(v, (list, tuple)):
        return [x for item in v for x in _flat(item)]
    return [float(v)]


losses = _flat(losses)
print(losses)
