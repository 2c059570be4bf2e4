"""Invalid-action masking in policy gradients (-inf / finfo.min logits, zero probabilities, entropies, gradients),
Bernoulli policies at certain outcomes, a Gaussian policy whose covariance is symmetric only up to rounding, and
transforms checked against torch's private inverse class."""
import torch
import torch.nn.functional as F
from torch.distributions import (
    Bernoulli,
    Binomial,
    Categorical,
    MultivariateNormal,
    OneHotCategorical,
    RelaxedOneHotCategorical,
    constraints,
)
from torch.distributions.transforms import ExpTransform, TanhTransform, _InverseTransform

losses = []


def add(*xs):
    for x in xs:
        if isinstance(x, torch.Tensor):
            losses.extend(x.detach().flatten().tolist())
        elif isinstance(x, list):
            losses.extend(x)
        else:
            losses.append(x)


logits = torch.tensor([[1.0, 2.0, 0.5, -1.0], [0.3, 0.1, 0.2, 0.0]], requires_grad=True)
mask = torch.tensor([[True, False, True, True], [False, False, True, True]])
for fill in (float("-inf"), -1e8, torch.finfo(torch.float32).min):
    masked = logits.masked_fill(~mask, fill)
    d = Categorical(logits=masked)
    a = torch.tensor([0, 3])
    lp = d.log_prob(a)
    ent = d.entropy()
    add(lp, ent, d.probs, d.logits.clamp(min=-100))
    (lp.sum() + ent.sum()).backward()
    add(logits.grad)
    logits.grad = None
p = torch.tensor([[0.5, 0.0, 0.5], [0.2, 0.3, 0.0]], requires_grad=True)
d = Categorical(probs=p)
add(d.entropy(), d.log_prob(torch.tensor([1, 2])), d.probs, d.logits.clamp(min=-100))
d.entropy().sum().backward()
add(p.grad)
un = Categorical(probs=torch.tensor([2.0, 6.0, 2.0]))
add(un.probs, un.log_prob(torch.tensor(1)), un.entropy())
oh = OneHotCategorical(logits=torch.tensor([0.0, -float("inf"), 1.0]))
add(oh.log_prob(torch.tensor([0.0, 0.0, 1.0])), oh.entropy(), oh.probs)
add(oh.mode if hasattr(oh, "mode") else 0)
be = Bernoulli(logits=torch.tensor([-100.0, 0.0, 50.0, 100.0]))
add(be.log_prob(torch.tensor([0.0, 1.0, 1.0, 0.0])), be.entropy(), be.probs)
be2 = Bernoulli(probs=torch.tensor([0.0, 1.0, 0.5]))
add(be2.log_prob(torch.tensor([0.0, 1.0, 1.0])), be2.entropy())
bi = Binomial(10, probs=torch.tensor([0.0, 0.3, 1.0]))
add(bi.log_prob(torch.tensor([0.0, 3.0, 10.0])), bi.mean, bi.variance)
rl = RelaxedOneHotCategorical(torch.tensor(0.5), logits=torch.tensor([0.1, 0.2, 0.7]))
add(rl.log_prob(torch.tensor([0.2, 0.3, 0.5])))
# log_softmax with -inf entries and their gradient
z = torch.tensor([0.5, float("-inf"), 1.5], requires_grad=True)
ls = F.log_softmax(z, -1)
add(ls.clamp(min=-1e9))
(ls[0] + ls[2]).backward()
add(z.grad)
sm = F.softmax(torch.tensor([float("-inf"), float("-inf")]), -1)
add(sm.isnan().tolist())
add(torch.logsumexp(torch.tensor([float("-inf"), float("-inf")]), 0).isneginf().item())
add(torch.logsumexp(torch.tensor([float("inf"), 1.0]), 0).isposinf().item())
# xlogy-based entropies
pr = torch.tensor([0.0, 0.25, 0.75])
add(-(torch.special.xlogy(pr, pr)).sum(), torch.xlogy(pr, torch.tensor([1.0, 0.5, 2.0])))
add(F.kl_div(torch.log(torch.tensor([0.5, 0.5, 1e-10])), pr, reduction="sum"))
add(F.kl_div(torch.tensor([0.0, -1.0, -2.0]), torch.tensor([0.0, -1.0, -3.0]), reduction="sum", log_target=True))
# gumbel-max with deterministic noise, argmax tie-breaking
u = torch.tensor([[0.3, 0.3, 0.1], [0.9, 0.05, 0.9]])
g = -torch.log(-torch.log(u))
add((torch.tensor([[1.0, 1.0, 0.0], [0.0, 0.0, 0.0]]) + g).argmax(-1))
add(torch.tensor([1.0, 3.0, 3.0, 2.0]).argmax(), torch.tensor([[2, 2], [1, 3]]).max(1)[1])
add(torch.tensor([float("nan"), 1.0]).argmax(), torch.tensor([1.0, float("nan"), 3.0]).max().isnan().item())
# a covariance assembled from statistics: symmetric up to rounding relative to its size
scale = torch.tensor([[900.0, 300.0], [300.0, 400.0]])
cov = scale + torch.tensor([[0.0, 2e-3], [0.0, 0.0]])
add(constraints.symmetric.check(cov), constraints.positive_definite.check(cov))
mvn = MultivariateNormal(torch.zeros(2), covariance_matrix=cov)
add(mvn.log_prob(torch.tensor([[1.0, -2.0], [30.0, 10.0]])), mvn.entropy())
add(constraints.square.check(torch.ones(3, 2, 3)), constraints.symmetric.check(torch.ones(2, 3)))
add(constraints.positive_semidefinite.check(torch.tensor([[1.0, 2.0], [2.0, 1.0]])))
# a squashing flow's inverse: isinstance checks against torch's private class
inv = ExpTransform().inv
add(isinstance(inv, _InverseTransform), isinstance(TanhTransform(), _InverseTransform), inv(torch.tensor([1.0, 4.0])))
