"""Tabular risk model: binning with integer and quantile edges, target encoding through logit, a heteroscedastic
regression head (Gaussian NLL) next to a classifier, temperature scaling with LBFGS and calibration metrics."""
import torch
import torch.nn as nn
import torch.nn.functional as F

losses = []
N = 64
i = torch.arange(N, dtype=torch.float32)
age = 18.0 + (i * 7.3) % 60 + 0.5 * torch.sin(i)          # float ages
income = torch.exp(9.0 + 1.2 * torch.sin(i * 0.37))       # skewed
city = (i.long() * 5) % 7
debt = torch.relu(torch.cos(i * 0.21) * 3.0 - 0.5)
y = ((age < 30) | (debt > 1.5)).float() * (torch.sin(i * 1.3) > -0.6).float()
amount = 2.0 + 0.03 * age + 0.5 * debt + 0.2 * torch.cos(i)

# binning: integer edges on float data, quantile edges, right-closed bins
age_edges = torch.tensor([25, 35, 50, 65])
age_bin = torch.bucketize(age, age_edges)
age_bin_r = torch.bucketize(age, age_edges, right=True)
losses += torch.bincount(age_bin, minlength=5).tolist()
losses.append((age_bin != age_bin_r).sum().item())
inc_edges = torch.quantile(income.log(), torch.linspace(0, 1, 5)[1:-1])
inc_bin = torch.searchsorted(inc_edges, income.log(), side="right")
losses += torch.bincount(inc_bin, minlength=4).tolist()
debt_bin = torch.searchsorted(torch.tensor([0, 1, 2]), debt)  # int boundaries, float values
losses += debt_bin.tolist()[:12]
try:
    torch.searchsorted(inc_edges, income, side="left", right=True)
except RuntimeError as e:
    losses.append(str(e) == "torch.searchsorted(): side and right can't be set to opposites, got side of left while "
                  "right was True")
try:
    torch.bucketize(age, age_edges.view(2, 2))
except RuntimeError as e:
    losses.append(str(e) == "boundaries tensor must be 1 dimension, but got dim(2)")

# target encoding with smoothing, then logit (eps keeps certain cities finite)
counts = torch.bincount(city, minlength=7).float()
pos = torch.bincount(city, weights=y, minlength=7)
prior = y.mean()
rate = (pos + 5 * prior) / (counts + 5)
raw_rate = pos / counts.clamp_min(1)
losses += raw_rate.tolist()
city_logit = torch.logit(raw_rate, eps=1e-3)
losses += city_logit.tolist()
losses.append(torch.logit(rate).sum().item())

# features
num = torch.stack([age, income.log(), debt], 1)
mu, sd = num.mean(0), num.std(0, correction=1)
num = (num - mu) / sd
num = F.threshold(num, -2.5, -2.5)  # winsorize the lower tail
cat_feats = torch.cat([F.one_hot(age_bin, 5), F.one_hot(inc_bin, 4), F.one_hot(debt_bin, 4)], 1).float()


class RiskNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.city = nn.Embedding(7, 3)
        self.body = nn.Sequential(nn.Linear(3 + 13 + 3 + 1, 24), nn.SELU(), nn.Linear(24, 16), nn.Hardswish())
        self.cls = nn.Linear(16, 1)
        self.reg = nn.Linear(16, 2)  # mean and log-variance

    def forward(self, num, cat, city, city_logit):
        h = self.body(torch.cat([num, cat, self.city(city), city_logit[city].unsqueeze(1)], 1))
        mean, log_var = self.reg(h).unbind(-1)
        return self.cls(h).squeeze(-1), mean, log_var.exp()


model = RiskNet()
with torch.no_grad():
    for k, p in enumerate(model.parameters()):
        p.copy_(torch.sin(torch.arange(p.numel(), dtype=torch.float32) * 0.53 + k).view_as(p) * 0.3)
opt = torch.optim.AdamW(model.parameters(), lr=5e-3)
sched = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, factor=0.5, patience=0)
for _ in range(5):
    opt.zero_grad()
    logit, mean, var = model(num, cat_feats, city, city_logit)
    bce = F.binary_cross_entropy_with_logits(logit, y)
    nll = F.gaussian_nll_loss(mean.unsqueeze(1), amount.unsqueeze(1), var, full=True)
    loss = bce + 0.5 * nll
    loss.backward()
    opt.step()
    sched.step(loss.item())
    losses += [bce.item(), nll.item()]
losses.append(F.gaussian_nll_loss(mean, amount, 0.25).item())
try:
    F.gaussian_nll_loss(mean.unsqueeze(1).expand(N, 2), amount.unsqueeze(1).expand(N, 2), var[:3])
except ValueError as e:
    losses.append(str(e) == "var is of incorrect size")

# temperature scaling with LBFGS on the logits (in float64: the objective is flat near its optimum)
logit = logit.detach().double()
log_t = torch.zeros(1, requires_grad=True, dtype=torch.float64)
lbfgs = torch.optim.LBFGS([log_t], lr=0.1, max_iter=20, line_search_fn="strong_wolfe")


def closure():
    lbfgs.zero_grad()
    l = F.binary_cross_entropy_with_logits(logit / log_t.exp(), y.double())
    l.backward()
    return l


lbfgs.step(closure)
losses.append(log_t.exp().item())
prob = torch.sigmoid(logit / log_t.exp()).float()
# expected calibration error over 5 bins
edges = torch.linspace(0, 1, 6)
b = torch.bucketize(prob, edges[1:-1])
conf = torch.zeros(5).scatter_reduce(0, b, prob, "mean", include_self=False)
acc = torch.zeros(5).scatter_reduce(0, b, y, "mean", include_self=False)
frac = torch.bincount(b, minlength=5).float() / N
losses.append((frac * (conf - acc).abs()).sum().item())
losses += torch.quantile(prob, torch.tensor([0.1, 0.5, 0.9])).tolist()
try:
    torch.quantile(prob.half(), 0.5)
except RuntimeError as e:
    losses.append(str(e) == "quantile() input tensor must be either float or double dtype")
try:
    torch.quantile(prob, 1.5)
except RuntimeError as e:
    losses.append(str(e) == "quantile() q must be in the range [0, 1] but got 1.5")
