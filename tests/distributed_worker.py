"""One rank of the multi-process tests (tests/test_distributed.py starts it under the launcher).

``python distributed_worker.py DEVICE``: every collective against a reference computed here from every rank's
(deterministic) input, DistributedDataParallel and ZeroRedundancyOptimizer against single-process training on the
concatenated batch (on cuda also with the whole step captured in a CUDA graph), DistributedSampler, and SyncBatchNorm
against BatchNorm on the whole batch. Prints ``WORKER OK <rank>`` when everything matched.
"""

from __future__ import annotations

import contextlib
import sys
from datetime import timedelta

import numpy as np

import genesis
import genesis.distributed as dist
from genesis import nn
from genesis.distributed.optim import ZeroRedundancyOptimizer
from genesis.nn.parallel import DistributedDataParallel as DDP
from genesis.utils.data import DataLoader, TensorDataset
from genesis.utils.data.distributed import DistributedSampler

DEVICE = sys.argv[1] if len(sys.argv) > 1 else "cpu"
if DEVICE == "cuda":
    DEVICE = f"cuda:{dist.get_local_rank()}"  # one GPU per rank


def base(r: int, n: int = 6) -> np.ndarray:
    return (np.arange(n, dtype=np.float32) - 2.0) * (r + 1) + r


def same(what: str, got: genesis.Tensor, want: np.ndarray, tol: float = 1e-6) -> None:
    g = got.float().cpu().numpy()
    if g.shape != want.shape or not np.allclose(g, want, rtol=tol, atol=tol):
        raise AssertionError(f"{what}: got {g.tolist()}, expected {want.tolist()}")


def t(a: np.ndarray, dtype: genesis.dtype = genesis.float32) -> genesis.Tensor:
    return genesis.tensor(a, dtype=dtype, device=DEVICE)


def collectives(r: int, n: int) -> None:
    inputs = [base(k) for k in range(n)]
    reference = {"sum": sum(inputs), "avg": sum(inputs) / n, "max": np.max(inputs, 0), "min": np.min(inputs, 0),
                 "product": np.prod(inputs, 0)}
    for name, want in reference.items():
        x = t(inputs[r])
        dist.all_reduce(x, op=getattr(dist.ReduceOp, name.upper()))
        same(f"all_reduce {name}", x, want, 1e-5)
        y = t(inputs[r])
        work = dist.all_reduce(y, op=getattr(dist.ReduceOp, name.upper()), async_op=True)
        work.wait()
        same(f"all_reduce {name} async", y, want, 1e-5)
    x = t(inputs[r], genesis.bfloat16)
    dist.all_reduce(x)
    same("all_reduce bfloat16", x, sum(inputs), 0.1)
    x = t(inputs[r])
    dist.broadcast(x, src=n - 1)
    same("broadcast", x, inputs[n - 1])
    x = t(inputs[r])
    dist.reduce(x, dst=0)
    if r == 0:
        same("reduce", x, sum(inputs))
    outs = [genesis.zeros(6, device=DEVICE) for _ in range(n)]
    dist.all_gather(outs, t(inputs[r]))
    for k in range(n):
        same(f"all_gather[{k}]", outs[k], inputs[k])
    out = genesis.zeros(6 * n, device=DEVICE)
    dist.all_gather_into_tensor(out, t(inputs[r]))
    same("all_gather_into_tensor", out, np.concatenate(inputs))
    big = [np.concatenate([base(k + j, 2) for j in range(n)]) for k in range(n)]
    for op in ("sum", "avg"):
        out = genesis.zeros(2, device=DEVICE)
        dist.reduce_scatter_tensor(out, t(big[r]), op=getattr(dist.ReduceOp, op.upper()))
        same(f"reduce_scatter_tensor {op}", out, (sum(big) / (n if op == "avg" else 1))[2 * r: 2 * r + 2])
    # all_to_all_single: rank k sends its rows [j*2, j*2+2) to rank j.
    src = np.stack([base(r * 10 + j, 3) for j in range(2 * n)])
    out = genesis.zeros(2 * n, 3, device=DEVICE)
    dist.all_to_all_single(out, t(src))
    want = np.stack([base(k * 10 + j, 3) for k in range(n) for j in (2 * r, 2 * r + 1)])
    same("all_to_all_single", out, want)
    # Uneven splits: rank k sends k + 1 rows to every rank.
    src = np.stack([base(r * 10 + j, 3) for j in range((r + 1) * n)])
    out = genesis.zeros(sum(k + 1 for k in range(n)), 3, device=DEVICE)
    dist.all_to_all_single(out, t(src), [k + 1 for k in range(n)], [r + 1] * n)
    want = np.stack([base(k * 10 + j, 3) for k in range(n) for j in range(r * (k + 1), (r + 1) * (k + 1))])
    same("all_to_all_single uneven", out, want)
    # send/recv around a ring; even ranks send first, odd ranks receive first (NCCL orders both on one stream).
    got = genesis.zeros(6, device=DEVICE)
    if r % 2 == 0:
        dist.send(t(inputs[r]), (r + 1) % n)
        dist.recv(got, (r - 1) % n)
    else:
        dist.irecv(got, (r - 1) % n).wait()
        dist.isend(t(inputs[r]), (r + 1) % n).wait()
    same("send/recv", got, inputs[(r - 1) % n])
    # batch_isend_irecv around the ring with every rank's send listed first: on NCCL only the batch's grouping keeps
    # the ranks from waiting on each other. Peers as job ranks and as ranks within the group.
    got = genesis.zeros(6, device=DEVICE)
    ops = [dist.P2POp(dist.isend, t(inputs[r]), (r + 1) % n), dist.P2POp(dist.irecv, got, group_peer=(r - 1) % n)]
    for work in dist.batch_isend_irecv(ops):
        work.wait()
    same("batch_isend_irecv", got, inputs[(r - 1) % n])
    got = genesis.zeros(6, device=DEVICE)
    if r % 2 == 0:
        dist.send(t(inputs[r]), group_dst=(r + 1) % n)
        assert dist.recv(got, group_src=(r - 1) % n) == (r - 1) % n
    else:
        dist.recv(got, group_src=(r - 1) % n)
        dist.send(t(inputs[r]), group_dst=(r + 1) % n)
    same("send/recv by group rank", got, inputs[(r - 1) % n])
    objs: list = [None] * n
    dist.all_gather_object(objs, {"rank": r, "pair": (r, "x" * r), "nan": float("inf")})
    assert objs == [{"rank": k, "pair": (k, "x" * k), "nan": float("inf")} for k in range(n)], objs
    lst = [r, None] if r == 0 else [None, None]
    dist.broadcast_object_list(lst, src=0)
    assert lst == [0, None], lst
    members = list(range(n - 1)) if n > 2 else [0, 1]
    group = dist.new_group(members)
    if r in members:
        x = t(inputs[r])
        dist.all_reduce(x, group=group)
        same("all_reduce on a subgroup", x, sum(inputs[k] for k in members))
        assert dist.get_world_size(group) == len(members) and dist.get_rank(group) == members.index(r)
    else:
        assert group is None
    dist.barrier()
    for bad, error in ((lambda: dist.all_reduce(genesis.zeros(3, 2, device=DEVICE).t()), ValueError),
                       (lambda: dist.all_reduce(genesis.zeros(2, dtype=genesis.int64, device=DEVICE),
                                                op=dist.ReduceOp.AVG), ValueError),
                       (lambda: dist.broadcast(genesis.zeros(2, device=DEVICE), src=n), ValueError),
                       (lambda: dist.all_gather_object([None], 1), ValueError)):
        try:
            bad()
        except error as e:
            assert str(e).split(":")[0] in ("all_reduce", "broadcast", "all_gather_object"), e
        else:
            raise AssertionError("a bad collective call raised nothing")


def list_forms(r: int, n: int) -> None:
    """torch's list forms and rooted collectives (gather, scatter, reduce_scatter, all_to_all), the object ones,
    the group-rank helpers and monitored_barrier, against values computed here."""
    dst = n - 1
    out = [genesis.zeros(6, device=DEVICE) for _ in range(n)] if r == dst else None
    dist.gather(t(base(r)), out, dst=dst)
    if r == dst:
        for k in range(n):
            same(f"gather from {k}", out[k], base(k))
    got = genesis.zeros(2, 3, device=DEVICE)
    parts = [t(10 * base(k).reshape(2, 3)) for k in range(n)] if r == 0 else None
    assert dist.scatter(got, parts, async_op=True).wait()
    same("scatter", got, 10 * base(r).reshape(2, 3))
    mine = genesis.zeros(2, 3, device=DEVICE)
    before = mine._version
    dist.reduce_scatter(mine, [t((base(r) + k).reshape(2, 3)) for k in range(n)])
    same("reduce_scatter", mine, (sum(base(q) for q in range(n)) + n * r).reshape(2, 3))
    assert mine._version > before
    outs = [genesis.zeros(k + r + 1, device=DEVICE) for k in range(n)]
    dist.all_to_all(outs, [genesis.full((r + k + 1,), 100.0 * r + k, device=DEVICE) for k in range(n)])
    for k in range(n):
        same(f"all_to_all from {k}", outs[k], np.full(k + r + 1, 100.0 * k + r, np.float32))
    gathered = [None] * n if r == 0 else None
    dist.gather_object({"rank": r, "pair": (r, "x")}, gathered)
    if r == 0:
        assert gathered == [{"rank": k, "pair": (k, "x")} for k in range(n)], gathered
    received = [None]
    dist.scatter_object_list(received, [[k, "s"] for k in range(n)] if r == dst else None, src=dst)
    assert received == [[r, "s"]], received
    if r == 0:
        dist.send_object_list([{"a": 1}, (2, 3.5), None], dst=1)
    elif r == 1:
        objs = [None, None, None]
        assert dist.recv_object_list(objs, src=0) == 0
        assert objs == [{"a": 1}, (2, 3.5), None], objs
    last = dist.new_group([dst])
    if r == dst:
        assert dist.get_global_rank(last, 0) == dst and dist.get_group_rank(last, dst) == 0
        assert dist.get_process_group_ranks(last) == [dst]
    else:
        assert last is dist.GroupMember.NON_GROUP_MEMBER
    assert dist.get_process_group_ranks(None) == list(range(n)) and dist.group.WORLD is not None
    assert dist.is_torchelastic_launched() and dist.get_node_local_rank() == r
    dist.monitored_barrier()
    if r != 1:  # rank 1 stays away: the first rank names it
        try:
            dist.monitored_barrier(timeout=timedelta(seconds=1))
        except RuntimeError as e:
            assert "[1] failed to pass the barrier" in str(e) or r != 0, e
        else:
            raise AssertionError("monitored_barrier passed without rank 1")
    dist.barrier()


def differentiable(r: int, n: int) -> None:
    """genesis.distributed.nn: values and the gradients of every rank's loss summed over ranks, worked out here."""
    import genesis.distributed.nn as dnn

    def leaf(values: np.ndarray) -> genesis.Tensor:
        return t(values).requires_grad_(True)

    x = leaf(base(r))
    outs = dnn.all_gather(x)
    for k in range(n):
        same(f"nn.all_gather value {k}", outs[k].detach(), base(k))
    sum((k + 1) * o.sum() for k, o in enumerate(outs)).backward()
    same("nn.all_gather grad", x.grad, np.full(6, n * (r + 1), np.float32))
    x = leaf(base(r))
    y = dnn.all_reduce(x * 2.0)
    same("nn.all_reduce value", y.detach(), 2 * sum(base(q) for q in range(n)))
    (y * (r + 1)).sum().backward()
    same("nn.all_reduce grad", x.grad, np.full(6, 2.0 * n * (n + 1) / 2, np.float32))
    x = leaf(base(r))
    y = dnn.broadcast(x, src=0)
    same("nn.broadcast value", y.detach(), base(0))
    (y.sum() * (r + 1)).backward()
    same("nn.broadcast grad", x.grad, np.full(6, n * (n + 1) / 2 if r == 0 else 0.0, np.float32))
    x = leaf(base(r))
    y = dnn.reduce_scatter(genesis.zeros(6, device=DEVICE), [x * (k + 1) for k in range(n)])
    same("nn.reduce_scatter value", y.detach(), (r + 1) * sum(base(q) for q in range(n)))
    y.sum().backward()
    same("nn.reduce_scatter grad", x.grad, np.full(6, n * (n + 1) / 2, np.float32))
    x = leaf(base(r))
    outs = dnn.gather(x, dst=0)
    sum((k + 1) * o.sum() for k, o in enumerate(outs)).backward()
    if r == 0:
        for k in range(n):
            same(f"nn.gather value {k}", outs[k].detach(), base(k))
    same("nn.gather grad", x.grad, np.full(6, r + 1, np.float32))
    parts = [leaf(base(k) * 10) for k in range(n)]
    y = dnn.scatter(parts, src=n - 1)
    same("nn.scatter value", y.detach(), base(r) * 10)
    (y.sum() * (r + 1)).backward()
    for k in range(n):
        same(f"nn.scatter grad {k}", parts[k].grad, np.full(6, k + 1 if r == n - 1 else 0.0, np.float32))
    # all_to_all_single with uneven splits: rank r sends k + 1 rows to rank k.
    rows = [k + 1 for k in range(n)]
    x = leaf(np.repeat(np.arange(n, dtype=np.float32) + 10 * r, rows))
    y = dnn.all_to_all_single(genesis.zeros(n * (r + 1), device=DEVICE), x, [r + 1] * n, rows)
    same("nn.all_to_all_single value", y.detach(), np.repeat(10.0 * np.arange(n) + r, r + 1).astype(np.float32))
    (y * (r + 1)).sum().backward()
    same("nn.all_to_all_single grad", x.grad, np.repeat(np.arange(1, n + 1, dtype=np.float32), rows))
    xs = [leaf(np.full(k + 1, 10.0 * r + k, np.float32)) for k in range(n)]
    ys = dnn.all_to_all([genesis.zeros(r + 1, device=DEVICE) for _ in range(n)], xs)
    for k in range(n):
        same(f"nn.all_to_all value {k}", ys[k].detach(), np.full(r + 1, 10.0 * k + r, np.float32))
    sum(y.sum() * (k + 1) for k, y in enumerate(ys)).backward()
    for k in range(n):
        same(f"nn.all_to_all grad {k}", xs[k].grad, np.full(k + 1, r + 1, np.float32))


def make_model(seed: int = 0) -> nn.Module:
    genesis.manual_seed(seed)
    return nn.Sequential(nn.Linear(5, 16), nn.Tanh(), nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 3)).to(DEVICE)


def batches(n: int, steps: int) -> list[tuple[genesis.Tensor, genesis.Tensor]]:
    g = genesis.Generator().manual_seed(7)
    return [(genesis.randn(4 * n, 5, generator=g).to(DEVICE), genesis.randn(4 * n, 3, generator=g).to(DEVICE))
            for _ in range(steps)]


def train(model: nn.Module, opt, data, r: int, n: int, shard: bool, accumulate: int = 1) -> None:
    for x, y in data:
        if shard:
            x, y = x[4 * r: 4 * r + 4], y[4 * r: 4 * r + 4]
        opt.zero_grad()
        chunks = list(zip(x.chunk(accumulate), y.chunk(accumulate)))
        for i, (xc, yc) in enumerate(chunks):
            last = i == len(chunks) - 1
            ctx = model.no_sync() if shard and not last else contextlib.nullcontext()
            with ctx:
                loss = ((model(xc) - yc) ** 2).mean() / accumulate
                loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()


def ddp(r: int, n: int) -> None:
    data = batches(n, 3)
    reference = make_model()
    train(reference, genesis.optim.AdamW(reference.parameters(), lr=0.05), data, r, n, shard=False)
    want = [p.detach().cpu().numpy() for p in reference.parameters()]
    variants = [{}, {"gradient_as_bucket_view": True, "bucket_cap_mb": 0.001}, {"static_graph": True},
                {"find_unused_parameters": True}]
    for kwargs in variants:
        model = DDP(make_model(seed=r), **kwargs)  # rank 0's parameters are broadcast at construction
        train(model, genesis.optim.AdamW(model.parameters(), lr=0.05), data, r, n, shard=True)
        for p, w in zip(model.module.parameters(), want):
            same(f"DDP {kwargs}", p.detach(), w, 2e-5)
    # .grad keeps its identity across backward passes when zeroed in place, and a gradient held from an earlier
    # step is not touched by the next step's reduction.
    model = DDP(make_model(seed=r), bucket_cap_mb=0.001)
    (x0, y0), (x1, y1) = [(x[4 * r: 4 * r + 4], y[4 * r: 4 * r + 4]) for x, y in data[:2]]
    ((model(x0) - y0) ** 2).mean().backward()
    first = [p.grad for p in model.parameters()]
    values = [g.detach().cpu().numpy().copy() for g in first]
    model.zero_grad(set_to_none=False)
    ((model(x0) - y0) ** 2).mean().backward()
    assert all(p.grad is g for p, g in zip(model.parameters(), first)), "DDP replaced .grad"
    for g, v in zip(first, values):
        same("DDP gradient zeroed in place", g.detach(), v, 1e-6)
    model.zero_grad()
    ((model(x1) - y1) ** 2).mean().backward()
    for g, v in zip(first, values):
        same("DDP gradient held from an earlier step", g.detach(), v, 0.0)
    model = DDP(make_model(), bucket_cap_mb=0.001)
    train(model, genesis.optim.AdamW(model.parameters(), lr=0.05), data, r, n, shard=True, accumulate=2)
    for p, w in zip(model.module.parameters(), want):
        same("DDP no_sync accumulation", p.detach(), w, 2e-5)
    state = model.state_dict()
    assert all(k.startswith("module.") for k in state), list(state)
    fresh = DDP(make_model(seed=3))
    fresh.load_state_dict(state)
    for p, w in zip(fresh.module.parameters(), want):
        same("DDP load_state_dict", p.detach(), w, 2e-5)
    try:
        DDP(nn.Linear(2, 2 + r).to(DEVICE))
    except RuntimeError as e:
        assert "wraps other parameters than rank" in str(e), e
    else:
        raise AssertionError("DDP accepted different models on different ranks")
    # A parameter that no rank uses keeps no gradient; one used on rank 0 only gets the average.
    net = nn.ModuleDict({"a": nn.Linear(2, 2), "b": nn.Linear(2, 2), "c": nn.Linear(2, 2)}).to(DEVICE)

    class Branchy(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.net = net

        def forward(self, x: genesis.Tensor) -> genesis.Tensor:
            return self.net["a"](x) + (self.net["b"](x) if r == 0 else 0)

    model = DDP(Branchy(), find_unused_parameters=True)
    model(genesis.ones(1, 2, device=DEVICE)).sum().backward()
    assert net["c"].weight.grad is None
    same("unused elsewhere", net["b"].bias.grad, np.full(2, 1.0 / n, dtype=np.float32))
    same("used everywhere", net["a"].bias.grad, np.ones(2, dtype=np.float32))
    # Rank 0 uses every parameter, the others not: rank 0 must still take part in the search's all-reduce.
    two = nn.ModuleDict({"a": nn.Linear(2, 2), "b": nn.Linear(2, 2)}).to(DEVICE)

    class Skips(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.net = two

        def forward(self, x: genesis.Tensor) -> genesis.Tensor:
            return self.net["a"](x) + (self.net["b"](x) if r == 0 else 0)

    model = DDP(Skips(), find_unused_parameters=True)
    model(genesis.ones(1, 2, device=DEVICE)).sum().backward()
    same("used on rank 0 only", two["b"].bias.grad, np.full(2, 1.0 / n, dtype=np.float32))


def ddp_graph(r: int, n: int) -> genesis.cuda.CUDAGraph:
    """A whole DDP training step (forward, backward with its bucket all-reduces, clipping, a capturable AdamW step)
    captured in one CUDA graph and replayed equals single-process training on the concatenated batch. Returns the
    graph: destroy_process_group must release it (NCCL waits for graphs holding its collectives)."""
    data = batches(n, 5)
    reference = make_model()
    train(reference, genesis.optim.AdamW(reference.parameters(), lr=0.05), data, r, n, shard=False)
    model = DDP(make_model(seed=r), bucket_cap_mb=0.001)  # several buckets: several all-reduces in the graph
    opt = genesis.optim.AdamW(model.parameters(), lr=0.05, capturable=True)
    static_x, static_y = genesis.zeros(4, 5, device=DEVICE), genesis.zeros(4, 3, device=DEVICE)

    def step() -> None:
        ((model(static_x) - static_y) ** 2).mean().backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()

    graph = genesis.cuda.CUDAGraph()
    for i, (x, y) in enumerate(data):
        static_x.copy_(x[4 * r: 4 * r + 4])
        static_y.copy_(y[4 * r: 4 * r + 4])
        if i < 2:  # eager warm-up steps
            opt.zero_grad(set_to_none=True)
            step()
            continue
        if i == 2:
            opt.zero_grad(set_to_none=True)  # the gradients made inside the capture live in the graph's memory
            with genesis.cuda.graph(graph):
                step()
        graph.replay()
    assert graph.num_nodes() > 0
    for p, w in zip(model.module.parameters(), reference.parameters()):
        same("DDP step captured in a CUDA graph", p.detach(), w.detach().cpu().numpy(), 2e-5)
    return graph


def comm_hooks(r: int, n: int) -> None:
    """DDP communication hooks: the default hooks and a hand-written one train as single-process training on the
    concatenated batch (the compressed ones to their precision); the hook sees every bucket once per backward."""
    from genesis.distributed.algorithms.ddp_comm_hooks import DDPCommHookType, default_hooks, register_ddp_comm_hook

    data = batches(n, 3)
    reference = make_model()
    # SGD: its update is linear in the gradient, so a compressed average moves the weights by its own precision only
    train(reference, genesis.optim.SGD(reference.parameters(), lr=0.1), data, r, n, shard=False)
    want = [p.detach().cpu().numpy() for p in reference.parameters()]
    seen: list[tuple[int, bool, int]] = []

    def by_hand(state: object, bucket: dist.GradBucket) -> genesis.futures.Future:
        seen.append((bucket.index(), bucket.is_last(), len(bucket.parameters())))
        assert all(g.shape == p.shape for g, p in zip(bucket.gradients(), bucket.parameters()))
        return dist.all_reduce(bucket.buffer().div_(n), async_op=True).get_future()  # a list of one tensor

    hooks = [(default_hooks.allreduce_hook, 2e-5), (by_hand, 2e-5), (default_hooks.fp16_compress_hook, 1e-3),
             (default_hooks.bf16_compress_wrapper(default_hooks.allreduce_hook), 5e-3),
             (DDPCommHookType.FP16_COMPRESS, 1e-3)]
    for hook, tol in hooks:
        model = DDP(make_model(seed=r), bucket_cap_mb=0.001)
        if isinstance(hook, DDPCommHookType):
            register_ddp_comm_hook(hook, model)
        else:
            model.register_comm_hook(None, hook)
        train(model, genesis.optim.SGD(model.parameters(), lr=0.1), data, r, n, shard=True)
        for p, w in zip(model.module.parameters(), want):
            same(f"DDP comm hook {getattr(hook, '__name__', hook)}", p.detach(), w, tol)
    buckets = len(DDP(make_model(), bucket_cap_mb=0.001)._buckets)
    for step in range(3):  # each bucket once per backward; is_last marks the bucket of the first parameters
        assert sorted(s[0] for s in seen[step * buckets: (step + 1) * buckets]) == list(range(buckets)), seen
    assert all(last == (i == buckets - 1) for i, last, _ in seen), seen
    try:
        model.register_comm_hook(None, by_hand)
    except RuntimeError as e:
        assert "can only be called once" in str(e), e
    else:
        raise AssertionError("a second hook was accepted")
    model = DDP(make_model())
    model.register_comm_hook(None, lambda state, bucket: bucket.buffer())
    try:
        model(genesis.ones(2, 5, device=DEVICE)).sum().backward()
    except RuntimeError as e:
        assert "must return a genesis.futures.Future" in str(e), e
    else:
        raise AssertionError("a hook returning a tensor was accepted")


def uneven(r: int, n: int) -> None:
    """``model.join()``: rank r has r + 2 batches. Each step averages the gradients of the ranks that still had a
    batch over the initial world size (or over those ranks); the models end equal on every rank; with
    throw_on_early_termination every rank raises when the first runs out."""
    steps = n + 1
    data = [batches(n, steps)[k] for k in range(steps)]

    def reference(divide_by_initial: bool) -> list[np.ndarray]:
        model = make_model()
        opt = genesis.optim.SGD(model.parameters(), lr=0.1)
        for k, (x, y) in enumerate(data):
            active = [q for q in range(n) if q + 2 > k]
            opt.zero_grad()
            scale = n if divide_by_initial else len(active)
            sum(((model(x[4 * q: 4 * q + 4]) - y[4 * q: 4 * q + 4]) ** 2).mean() for q in active).div(scale).backward()
            opt.step()
        return [p.detach().cpu().numpy() for p in model.parameters()]

    for divide_by_initial in (True, False):
        model = DDP(make_model(seed=r), bucket_cap_mb=0.001)
        opt = genesis.optim.SGD(model.parameters(), lr=0.1)
        with model.join(divide_by_initial_world_size=divide_by_initial):
            for x, y in data[: r + 2]:
                opt.zero_grad()
                ((model(x[4 * r: 4 * r + 4]) - y[4 * r: 4 * r + 4]) ** 2).mean().backward()
                opt.step()
        for p, w in zip(model.module.parameters(), reference(divide_by_initial)):
            same(f"join (divide_by_initial_world_size={divide_by_initial})", p.detach(), w, 2e-5)
    model = DDP(make_model())
    try:
        with model.join(throw_on_early_termination=True):
            for x, _ in data[: r + 1]:
                model(x[4 * r: 4 * r + 4]).sum().backward()
    except RuntimeError as e:
        assert "exhausted inputs" in str(e), e
    else:
        raise AssertionError("join(throw_on_early_termination=True) did not raise")


def zero(r: int, n: int) -> None:
    data = batches(n, 3)
    reference = make_model()
    ref_opt = genesis.optim.AdamW(reference.parameters(), lr=0.05)
    train(reference, ref_opt, data, r, n, shard=False)
    model = DDP(make_model())
    opt = ZeroRedundancyOptimizer(model.parameters(), genesis.optim.AdamW, lr=0.05)
    train(model, opt, data, r, n, shard=True)
    for p, w in zip(model.module.parameters(), reference.parameters()):
        same("ZeroRedundancyOptimizer", p.detach(), w.detach().cpu().numpy(), 2e-5)
    owned = sum(p.numel() for p in model.parameters() if opt.owner[id(p)] == r)
    assert 0 < owned < sum(p.numel() for p in model.parameters()), owned
    opt.consolidate_state_dict(to=0)
    if r == 0:
        state = opt.state_dict()
        ref_state = ref_opt.state_dict()
        for i, s in ref_state["state"].items():
            same(f"consolidated exp_avg {i}", state["state"][i]["exp_avg"], s["exp_avg"].cpu().numpy(), 2e-5)
            step = state["state"][i]["step"]  # torch's 0-d CPU tensor, wherever the parameters are
            assert step.device.type == "cpu" and step.dim() == 0 and step.item() == s["step"].item() == 3, step
        assert state["param_groups"][0]["lr"] == 0.05


def sampler(r: int, n: int) -> None:
    data = TensorDataset(genesis.arange(11))
    for shuffle in (False, True):
        for drop_last in (False, True):
            s = DistributedSampler(data, shuffle=shuffle, drop_last=drop_last, seed=3)
            s.set_epoch(1)
            mine = [int(v) for b in DataLoader(data, batch_size=2, sampler=s) for v in b[0].tolist()]
            everyone: list = [None] * n
            dist.all_gather_object(everyone, mine)
            flat = sorted(v for ranks in everyone for v in ranks)
            assert all(len(e) == len(s) for e in everyone), everyone
            if drop_last:
                assert len(set(flat)) == len(flat) == (11 // n) * n, everyone
            else:
                assert set(flat) == set(range(11)) and len(flat) == len(s) * n, everyone


def sync_batch_norm(r: int, n: int) -> None:
    """SyncBatchNorm on each rank's shard equals BatchNorm on the whole batch: outputs, input gradients, running
    statistics, and the weight and bias gradients summed over the ranks."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2 * n, 3, 4, 4)).astype(np.float32)
    target = rng.standard_normal((2 * n, 3, 4, 4)).astype(np.float32)
    weight, bias = np.array([1.5, -0.5, 2.0], np.float32), np.array([0.1, 0.2, -0.3], np.float32)
    shard = slice(2 * r, 2 * r + 2)

    def layer(cls):
        m = cls(3).to(DEVICE)
        with genesis.no_grad():
            m.weight.copy_(t(weight))
            m.bias.copy_(t(bias))
        return m

    ref, synced = layer(nn.BatchNorm2d), nn.SyncBatchNorm.convert_sync_batchnorm(layer(nn.BatchNorm2d))
    assert isinstance(synced, nn.SyncBatchNorm)
    x_all, x_mine = t(x).requires_grad_(True), t(x[shard]).requires_grad_(True)
    out_all, out_mine = ref(x_all), synced(x_mine)
    (out_all * t(target)).sum().backward()
    (out_mine * t(target[shard])).sum().backward()
    same("sync bn output", out_mine.detach(), out_all.detach().cpu().numpy()[shard], 1e-5)
    same("sync bn input grad", x_mine.grad, x_all.grad.cpu().numpy()[shard], 1e-4)
    same("sync bn running mean", synced.running_mean, ref.running_mean.cpu().numpy(), 1e-5)
    same("sync bn running var", synced.running_var, ref.running_var.cpu().numpy(), 1e-5)
    for name in ("weight", "bias"):
        g = getattr(synced, name).grad.clone()
        dist.all_reduce(g)
        same(f"sync bn {name} grad", g, getattr(ref, name).grad.cpu().numpy(), 1e-4)


def main() -> None:
    if DEVICE != "cpu":
        genesis.cuda.set_device(dist.get_local_rank())
    dist.init_process_group("gloo" if DEVICE == "cpu" else "nccl")
    r, n = dist.get_rank(), dist.get_world_size()
    collectives(r, n)
    list_forms(r, n)
    differentiable(r, n)
    ddp(r, n)
    live_graph = ddp_graph(r, n) if DEVICE != "cpu" else None
    comm_hooks(r, n)
    uneven(r, n)
    zero(r, n)
    sampler(r, n)
    sync_batch_norm(r, n)
    dist.destroy_process_group()
    del live_graph
    print(f"WORKER OK {r}")


if __name__ == "__main__":
    main()
