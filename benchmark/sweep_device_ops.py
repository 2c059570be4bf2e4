"""Device time of common ops, Genesis against torch on one CUDA GPU, without host time: each op is captured ten
times in a CUDA graph (Genesis's graph for Genesis, torch's for torch) and the graph is replayed; the printed time is
the median replay divided by ten. Slowest ratio (torch time / Genesis time) last, so the ops to look at next end the
output. An op that cannot be captured (one that reads the device on the host) is reported as such.

    python benchmark/sweep_device_ops.py [WORD ...]     # only the ops whose name contains one of the words
"""

from __future__ import annotations

import os
import sys
from typing import Any, Callable

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch

import genesis
from genesis._impl.cuda.triton_driver import do_bench

N = 4096
CALLS = 10


def inputs() -> dict[str, torch.Tensor]:
    """The operands, made by torch (the same values go to Genesis)."""
    torch.manual_seed(0)
    x, y = torch.randn(N, N, device="cuda"), torch.randn(N, N, device="cuda")
    img = torch.randn(32, 64, 56, 56, device="cuda")
    img128 = torch.randn(32, 128, 56, 56, device="cuda")
    return {
        "X": x, "Y": y, "XB": x.bfloat16(), "YB": y.bfloat16(), "V": torch.randn(N, device="cuda"),
        "MASK": x > 0, "IDX": torch.randint(0, N, (N,), device="cuda"),
        "GI": torch.randint(0, N, (N, 256), device="cuda"),
        "EMB": torch.randn(32000, 1024, device="cuda", dtype=torch.bfloat16),
        "TOK": torch.randint(0, 32000, (16384,), device="cuda"),
        "LOGITS": torch.randn(8192, 32000, device="cuda", dtype=torch.bfloat16),
        "TARGET": torch.randint(0, 32000, (8192,), device="cuda"),
        "A3": torch.randn(64, 256, 256, device="cuda"), "B3": torch.randn(64, 256, 256, device="cuda"),
        "IMG": img, "IMGB": img.bfloat16(), "IMG128": img128,
        "IMGCL": img128.bfloat16().contiguous(memory_format=torch.channels_last),
        "WB": torch.randn(64, 64, 3, 3, device="cuda", dtype=torch.bfloat16) * 0.05,
        "ROWS": torch.randn(64, 4096, device="cuda"),
    }


def cases() -> list[tuple[str, Callable[[Any, dict], Any]]]:
    """(name, op(lib, operands)): the same source runs on both libraries."""
    def F(lib: Any) -> Any:
        return lib.nn.functional

    return [
        ("exp", lambda L, d: L.exp(d["X"])), ("sigmoid", lambda L, d: L.sigmoid(d["X"])),
        ("gelu", lambda L, d: F(L).gelu(d["X"])), ("silu bf16", lambda L, d: F(L).silu(d["XB"])),
        ("add", lambda L, d: d["X"] + d["Y"]), ("add bf16", lambda L, d: d["XB"] + d["YB"]),
        ("add row broadcast", lambda L, d: d["X"] + d["V"]),
        ("add column broadcast", lambda L, d: d["X"] + d["V"][:, None]),
        ("where", lambda L, d: L.where(d["MASK"], d["X"], d["Y"])), ("clamp", lambda L, d: d["X"].clamp(-1, 1)),
        ("sum dim 1", lambda L, d: d["X"].sum(1)), ("sum dim 0", lambda L, d: d["X"].sum(0)),
        ("sum dim 1 bf16", lambda L, d: d["XB"].sum(1)), ("amax dim 1", lambda L, d: d["X"].amax(1)),
        ("max dim 1", lambda L, d: d["X"].max(1)[0]), ("argmax dim 1", lambda L, d: d["X"].argmax(1)),
        ("var dim 1", lambda L, d: d["X"].var(1)),
        ("vector_norm dim 1", lambda L, d: L.linalg.vector_norm(d["X"], dim=1)),
        ("logsumexp dim 1", lambda L, d: L.logsumexp(d["X"], 1)), ("softmax dim 0", lambda L, d: L.softmax(d["X"], 0)),
        ("log_softmax dim 1", lambda L, d: L.log_softmax(d["X"], 1)),
        ("cumsum dim 1", lambda L, d: L.cumsum(d["X"], 1)),
        ("cumsum dim 0", lambda L, d: L.cumsum(d["X"], 0)), ("transpose copy", lambda L, d: d["X"].t().contiguous()),
        ("cat dim 1", lambda L, d: L.cat([d["X"], d["Y"]], 1)), ("flip dim 1", lambda L, d: d["X"].flip(1)),
        ("roll", lambda L, d: d["X"].roll(7, 1)), ("tril", lambda L, d: d["X"].tril()),
        ("index_select dim 0", lambda L, d: d["X"].index_select(0, d["IDX"])),
        ("index_select dim 1", lambda L, d: d["X"].index_select(1, d["IDX"])),
        ("gather dim 1", lambda L, d: d["X"].gather(1, d["GI"])), ("x[idx]", lambda L, d: d["X"][d["IDX"]]),
        ("scatter_add_", lambda L, d: L.zeros(N, N, device="cuda").scatter_add_(1, d["GI"], d["X"][:, :256])),
        ("index_add_", lambda L, d: L.zeros(N, N, device="cuda").index_add_(0, d["IDX"], d["X"])),
        ("masked_fill", lambda L, d: d["X"].masked_fill(d["MASK"], 0.0)),
        ("masked_fill_", lambda L, d: d["Y"].masked_fill_(d["MASK"], 0.0)),
        ("embedding bf16", lambda L, d: F(L).embedding(d["TOK"], d["EMB"])),
        ("topk 10 dim 1", lambda L, d: L.topk(d["ROWS"], 10, 1)[0]),
        ("sort dim 1", lambda L, d: L.sort(d["ROWS"], 1)[0]),
        ("sort vocabulary rows bf16", lambda L, d: L.sort(d["LOGITS"][:8], 1, descending=True)[0]),
        ("argsort int64", lambda L, d: L.argsort(d["IDX"])),
        ("bmm fp32", lambda L, d: L.bmm(d["A3"], d["B3"])), ("matmul bf16", lambda L, d: d["XB"] @ d["YB"]),
        ("cross_entropy bf16", lambda L, d: F(L).cross_entropy(d["LOGITS"], d["TARGET"])),
        ("mse_loss", lambda L, d: F(L).mse_loss(d["X"], d["Y"])),
        ("layer_norm", lambda L, d: F(L).layer_norm(d["X"], (N,))),
        ("conv2d 3x3 bf16", lambda L, d: F(L).conv2d(d["IMGB"], d["WB"], padding=1)),
        ("max_pool2d", lambda L, d: F(L).max_pool2d(d["IMG"], 2)),
        ("max_pool2d 3x3 s2 p1", lambda L, d: F(L).max_pool2d(d["IMG128"], 3, 2, 1)),
        ("batch_norm train", lambda L, d: F(L).batch_norm(d["IMG128"], None, None, training=True)),
        ("batch_norm train bf16 channels_last", lambda L, d: F(L).batch_norm(d["IMGCL"], None, None, training=True)),
        ("interpolate bilinear", lambda L, d: F(L).interpolate(d["IMG"], scale_factor=2, mode="bilinear")),
        ("group_norm", lambda L, d: F(L).group_norm(d["IMG"], 8)),
    ]


def torch_time(fn: Callable[[], Any]) -> float:
    """Microseconds per call of ``fn`` from torch's graph replays."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(CALLS):
            fn()
    for _ in range(3):
        graph.replay()
    torch.cuda.synchronize()
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(20)]
    for start, end in events:
        start.record()
        graph.replay()
        end.record()
    torch.cuda.synchronize()
    times = sorted(start.elapsed_time(end) for start, end in events)
    return times[len(times) // 2] / CALLS * 1e3


def genesis_time(fn: Callable[[], Any]) -> float:
    """Microseconds per call of ``fn`` from Genesis's graph replays."""
    for _ in range(3):
        fn()
    genesis.cuda.synchronize()
    graph = genesis.cuda.CUDAGraph()
    with genesis.cuda.graph(graph):
        for _ in range(CALLS):
            fn()
    return do_bench(graph.replay, warmup=3, rep=20) / CALLS * 1e3


def main() -> None:
    words = sys.argv[1:]
    t_in = inputs()
    torch.cuda.synchronize()
    g_in = {k: genesis.from_dlpack(v).clone() for k, v in t_in.items()}
    genesis.cuda.synchronize()
    rows = []
    for name, op in cases():
        if words and not any(w in name for w in words):
            continue
        with torch.no_grad():
            t = torch_time(lambda: op(torch, t_in))  # noqa: B023 - called in the loop
        try:
            with genesis.no_grad():
                g = genesis_time(lambda: op(genesis, g_in))  # noqa: B023 - called in the loop
        except RuntimeError as error:
            print(f"{name}: Genesis's call could not be captured ({str(error).splitlines()[0][:100]})")
            continue
        rows.append((t / g, name, g, t))
    for ratio, name, g, t in sorted(rows, reverse=True):
        print(f"{name:24s} genesis {g:9.1f} us  torch {t:9.1f} us  ratio {ratio:5.2f}")


if __name__ == "__main__":
    main()
