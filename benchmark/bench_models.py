"""Real PyTorch-style training programs in Genesis and in torch, side by side in one process.

Each program is written once in ``benchmark/programs.py`` as a function of ``lib`` (``torch`` or ``genesis``) and
run twice: both libraries start from the same weights (torch's initial ``state_dict`` copied through numpy) and see
the same batches (numpy RNG). A row runs, for each library:

1. a parity pass: ``--parity`` steps whose losses are compared step by step (``loss_rel_diff`` = max over steps of
   |genesis - torch| / max(|torch|, 1); the row fails above ``loss_tol``: 2e-2 under bf16 autocast, 5e-3 for
   ResNet-50 fp32 (whose gradients are ill-conditioned: torch's own fp32 ones differ from float64 by 2%), else 1e-4,
   with TF32 convolutions and RNNs turned off in both libraries for the pass). Rows with randomness compare a
   deterministic variant: dropout built with ``p=0`` and the policy's sampled actions replaced by fixed ones; the
   timed pass then builds the program anew, with its dropout and sampling on (and TF32 as each library's default,
   or on in both with ``--tf32``);
2. warm-up steps (8 on cuda, 20 for the CPU rows: a host-bound step reaches its steady speed only after a few
   steps; both libraries get the same), then the ``--steps`` timed steps in alternating rounds (5 for the model
   rows, 7 for the CPU rows; each a device synchronization, the round's steps and a synchronization before the
   clock is read), torch's round then Genesis's; each library's time per step is its median round. Both programs
   stay built side by side, so a drift in the host's speed reaches both libraries alike (on the GPU machines one
   process's host speed was seen to swing by tens of percent from run to run).

Rows (``ratio`` = Genesis throughput / torch throughput; for the CPU rows torch ms / Genesis ms per step):

- ``gpt2``: nanoGPT's GPT-2 124M trainer (bf16 autocast, fused AdamW with weight-decay groups, clip 1.0, pinned
  batches) at batch 2, 8 and 16 x 1024 tokens, tokens/s, goal >= 1.0; on cuda also a peak-memory row each
  (Genesis GiB / torch GiB, goal <= 1.0).
- ``gpt2_graph``: the batch-8 GPT-2 trainer with Genesis's whole step (forward, backward, clip, capturable fused
  AdamW) captured in one CUDA graph and replayed per step, against torch eager, goal >= 1.3; with ``--small`` on
  the CPU Genesis runs the eager program (the note says so).
- ``qwen``: the same trainer with a Qwen-style block (RMSNorm, SwiGLU, RoPE, 12 query / 4 KV heads), batch 8 x 1024.
- ``gpt2_compile`` (batch 2) / ``qwen_compile`` (batch 8): those trainers with Genesis's model wrapped by
  ``compile(model, mode="reduce-overhead")`` (forward and backward replay CUDA graphs; optimizer eager), against
  torch eager, goal >= 1.0.
- ``resnet50``: ResNet-50, batch 64 x 3 x 224 x 224, SGD with Nesterov momentum, fp32 and bf16 autocast in
  channels_last, images/s, goal >= 1.0 (the parity pass runs at lr 0.01: at the timed lr 0.1 the loss diverges on
  random labels and the comparison measures chaos, not correctness).
- ``style``: the fast-neural-style transformer net, 4 x 3 x 256 x 256, Adam, MSE, fp32, images/s, goal >= 1.0.
- ``lstm`` / ``gru``: the word-language-model example (2 layers, 650 hidden, 35 x 20 tokens, 33,278 words,
  dropout 0.5, SGD lr 20, clip 0.25), tokens/s, goal >= 0.9.
- ``transformer``: that example's TransformerEncoder LM (emsize 200, 2 heads, nhid 200, 2 layers, dropout 0.2,
  causal mask), tokens/s, goal >= 1.0.
- ``lstm_compile`` / ``transformer_compile``: those LM trainers with Genesis's model wrapped by
  ``compile(model, mode="reduce-overhead")`` (dropout included in the graphs), against torch eager, goal >= 1.0.
- ``cpu_mlp``: regression MLP 8-64-64-1, batch 32, Adam, MSE; ``cpu_pg``: a REINFORCE step on a 4-64-64-2 policy
  (multinomial sampling, log_softmax + gather), batch 32, Adam. Milliseconds per step, goal >= 1/1.5.

On cuda the default rows are the model rows; on the CPU the two CPU rows. ``--small`` shrinks every model (tiny
widths, few layers, small batches, few steps) so that all rows run on a CPU in seconds: it checks the script itself.

    python benchmark/bench_models.py --device cuda --json benchmark/results/h100-2026-11-27-models.json
    python benchmark/bench_models.py --device cpu                      # the CPU rows at full size
    python benchmark/bench_models.py --small --device cpu --rows gpt2,lstm
    python benchmark/bench_models.py --rows gpt2_graph --torch-compile  # also torch.compile's throughput
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import time
import warnings
from dataclasses import dataclass, replace
from typing import Any, Callable

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import genesis
from benchmark import programs as P
from benchmark.common import row, write_json

warnings.filterwarnings("ignore", message=".*enable_nested_tensor.*")


@dataclass
class Case:
    """One row: a model, its training program, its batches, the full and ``--small`` configs and its goal."""

    key: str  # the --rows name
    name: str
    build: Callable[[Any, Any, bool], Any]
    program: Callable[[Any, Any, str, Any, bool], P.Program]
    data: Callable[[np.random.Generator, Any], tuple[np.ndarray, ...]]
    full: Any
    small: Any
    unit: str  # tok/s, img/s (throughput) or ms (time per step)
    items: Callable[[Any], int]  # tokens or images per step
    goal: float
    bf16: bool = False
    cudnn: bool = False  # convolutions or RNNs: torch computes them in TF32 on cuda by default
    stochastic: bool = False  # dropout or sampling: the parity pass builds a deterministic variant
    memory_row: bool = False
    loss_tol: float | None = None  # instead of the default (see loss_tolerance)


def gpt(batch: int, qwen: bool = False) -> P.GPTConfig:
    return P.GPTConfig(batch=batch, qwen=qwen, n_kv_head=4 if qwen else 12)


GPT_SMALL = P.GPTConfig(block_size=32, vocab_size=128, n_layer=2, n_head=2, n_kv_head=2, n_embd=32, batch=2)
QWEN_SMALL = replace(GPT_SMALL, n_head=4, n_kv_head=2, qwen=True)
RESNET_SMALL = P.ResNetConfig(layers=(1, 1), width=4, image=32, classes=10, batch=2)
STYLE_SMALL = P.StyleConfig(width=4, residual_blocks=1, image=16, batch=2)
LM_SMALL = P.LMConfig(ntoken=50, ninp=16, nhid=16, bptt=5, batch=3)
TRANSFORMER = P.LMConfig(rnn_type="Transformer", ninp=200, nhid=200, dropout=0.2)


def tokens(cfg: Any) -> int:
    return cfg.batch * (cfg.block_size if isinstance(cfg, P.GPTConfig) else cfg.bptt)


def images(cfg: Any) -> int:
    return cfg.batch


CASES = [
    *[Case("gpt2", f"gpt2-124m b{b}x1024 bf16", P.build_gpt, P.gpt_program, P.gpt_data, gpt(b),
           replace(GPT_SMALL, batch=b), "tok/s", tokens, 1.0, bf16=True, memory_row=True) for b in (2, 8, 16)],
    Case("gpt2_graph", "gpt2-124m b8x1024 bf16 cuda-graph", P.build_gpt, P.gpt_graph_program, P.gpt_data, gpt(8),
         replace(GPT_SMALL, batch=8), "tok/s", tokens, 1.3, bf16=True),
    Case("qwen", "gpt-qwen-block b8x1024 bf16", P.build_gpt, P.gpt_program, P.gpt_data, gpt(8, qwen=True),
         QWEN_SMALL, "tok/s", tokens, 1.0, bf16=True, memory_row=True),
    Case("gpt2_compile", "gpt2-124m b2x1024 bf16 compile reduce-overhead", P.build_gpt, P.gpt_compiled_program,
         P.gpt_data, gpt(2), replace(GPT_SMALL, batch=2), "tok/s", tokens, 1.0, bf16=True),
    Case("qwen_compile", "gpt-qwen-block b8x1024 bf16 compile reduce-overhead", P.build_gpt, P.gpt_compiled_program,
         P.gpt_data, gpt(8, qwen=True), QWEN_SMALL, "tok/s", tokens, 1.0, bf16=True),
    # ResNet-50's gradients at initialization are ill-conditioned: against a float64 CPU reference, torch's own fp32
    # cuda gradients differ by 2% (median over parameters) and Genesis's by the same, so fp32 losses part by ~1e-3
    # after one SGD step whatever the library; the row checks that agreement, not 1e-4.
    Case("resnet50", "resnet50 b64 fp32 sgd", P.build_resnet, P.resnet_program, P.image_data, P.ResNetConfig(),
         RESNET_SMALL, "img/s", images, 1.0, cudnn=True, loss_tol=5e-3),
    Case("resnet50", "resnet50 b64 bf16 channels_last", P.build_resnet, P.resnet_program, P.image_data,
         P.ResNetConfig(bf16=True), replace(RESNET_SMALL, bf16=True), "img/s", images, 1.0, bf16=True),
    Case("style", "style-transfer b4x256 fp32 adam", P.build_style, P.style_program, P.style_data, P.StyleConfig(),
         STYLE_SMALL, "img/s", images, 1.0, cudnn=True),
    Case("lstm", "lstm-lm 2x650 35x20", P.build_lm, P.lm_program, P.lm_data, P.LMConfig(), LM_SMALL, "tok/s",
         tokens, 0.9, cudnn=True, stochastic=True),
    Case("gru", "gru-lm 2x650 35x20", P.build_lm, P.lm_program, P.lm_data, P.LMConfig(rnn_type="GRU"),
         replace(LM_SMALL, rnn_type="GRU"), "tok/s", tokens, 0.9, cudnn=True, stochastic=True),
    Case("transformer", "transformer-lm 2x200 35x20", P.build_lm, P.lm_program, P.lm_data, TRANSFORMER,
         replace(LM_SMALL, rnn_type="Transformer"), "tok/s", tokens, 1.0, stochastic=True),
    Case("lstm_compile", "lstm-lm 2x650 35x20 compile reduce-overhead", P.build_lm, P.lm_compiled_program, P.lm_data,
         P.LMConfig(), LM_SMALL, "tok/s", tokens, 1.0, cudnn=True, stochastic=True),
    Case("transformer_compile", "transformer-lm 2x200 35x20 compile reduce-overhead", P.build_lm,
         P.lm_compiled_program, P.lm_data, TRANSFORMER, replace(LM_SMALL, rnn_type="Transformer"), "tok/s", tokens,
         1.0, stochastic=True),
    Case("cpu_mlp", "cpu mlp 8-64-64-1 b32 adam", P.build_mlp, P.regression_program, P.regression_data,
         P.MLPConfig(), P.MLPConfig(), "ms", images, 1 / 1.5),
    Case("cpu_pg", "cpu reinforce 4-64-64-2 b32 adam", P.build_mlp, P.policy_program, P.policy_data,
         P.MLPConfig(inputs=4, outputs=2), P.MLPConfig(inputs=4, outputs=2), "ms", images, 1 / 1.5,
         stochastic=True),
]
ROUNDS = 7  # alternating timing rounds of the CPU rows (cpu_mlp, cpu_pg)
MODEL_ROUNDS = 5  # and of the model rows, on any device (their --steps split among them)
MODEL_ROWS = ["gpt2", "gpt2_graph", "gpt2_compile", "qwen", "qwen_compile", "resnet50", "style", "lstm", "gru",
              "transformer", "lstm_compile", "transformer_compile"]
CPU_ROWS = ["cpu_mlp", "cpu_pg"]


@dataclass
class Plan:
    """How many steps of each kind a row runs."""

    parity: int
    warmup: int
    steps: int


@dataclass
class Result:
    """One library's run of one row."""

    losses: list[float]
    seconds_per_step: float
    peak_gib: float | None
    notes: list[str]


def synchronize(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()
        genesis.cuda.synchronize()


def reset_peak(lib: Any, device: str) -> None:
    gc.collect()
    if device.startswith("cuda"):
        lib.cuda.empty_cache()
        lib.cuda.reset_peak_memory_stats()


def initial_state(case: Case, cfg: Any) -> dict[str, np.ndarray]:
    """torch's initial weights and buffers (seed 0) as numpy arrays: both libraries load them."""
    torch.manual_seed(0)
    model = case.build(torch, cfg, True)
    return {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}


def start_model(lib: Any, case: Case, cfg: Any, state: dict[str, np.ndarray], parity: bool) -> Any:
    lib.manual_seed(0)
    model = case.build(lib, cfg, parity)
    model.load_state_dict({k: lib.from_numpy(v.copy()) for k, v in state.items()})
    model.train()
    return model


def start(lib: Any, case: Case, cfg: Any, device: str, state: dict[str, np.ndarray], parity: bool) -> P.Program:
    return case.program(lib, start_model(lib, case, cfg, state, parity), device, cfg, parity)


def prepare(lib: Any, case: Case, cfg: Any, device: str, state: dict[str, np.ndarray],
            batches: list[tuple[np.ndarray, ...]], plan: Plan) -> tuple[P.Program, list[float]]:
    """The parity pass (its losses), then the program to time, warmed up."""
    # float32 convolutions, RNNs and products compare exactly: TF32 off in both libraries for the parity pass
    # (torch's cuDNN default is on, and two libraries' TF32 engines round differently).
    exact = not case.bf16 and device.startswith("cuda")
    tf32 = lib.backends.cudnn.allow_tf32, lib.backends.cuda.matmul.allow_tf32
    lib.backends.cudnn.allow_tf32 = tf32[0] and not (exact and case.cudnn)
    lib.backends.cuda.matmul.allow_tf32 = tf32[1] and not exact
    try:
        program = start(lib, case, cfg, device, state, parity=True)
        losses = [float(program.step(batches[i % len(batches)]).item()) for i in range(plan.parity)]
    finally:
        lib.backends.cudnn.allow_tf32, lib.backends.cuda.matmul.allow_tf32 = tf32
    notes = program.notes
    del program  # free the parity pass's model and optimizer state before the timed pass builds its own
    gc.collect()
    program = start(lib, case, cfg, device, state, parity=False)
    program.notes.extend(n for n in notes if n not in program.notes)
    for i in range(plan.warmup):
        program.step(batches[i % len(batches)])
    return program, losses


def seconds_per_step(program: P.Program, batches: list[tuple[np.ndarray, ...]], steps: int, device: str) -> float:
    synchronize(device)
    begin = time.perf_counter()
    for i in range(steps):
        program.step(batches[i % len(batches)])
    synchronize(device)
    return (time.perf_counter() - begin) / steps


def run_interleaved(case: Case, cfg: Any, device: str, state: dict[str, np.ndarray],
                    batches: list[tuple[np.ndarray, ...]], plan: Plan, errors: list[str]) -> dict[str, Result | None]:
    """Both libraries' programs side by side, timed in alternating rounds (the median round per library), so that
    drifts in the host's speed (shared CPUs, virtual machines) hit both alike. On cuda each library's peak
    ``max_memory_allocated`` counts its own allocations only, so the two programs may share the device."""
    programs, results = {}, {}
    for lib in (torch, genesis):
        try:
            reset_peak(lib, device)
            programs[lib.__name__] = prepare(lib, case, cfg, device, state, batches, plan)
        except Exception as exc:
            errors.append(f"{lib.__name__}: {error_text(exc)}")
    rounds = {name: [] for name in programs}
    n_rounds = ROUNDS if case.unit == "ms" else MODEL_ROUNDS
    for _ in range(n_rounds):
        for name, (program, _) in programs.items():
            rounds[name].append(seconds_per_step(program, batches, max(1, plan.steps // n_rounds), device))
    for lib in (torch, genesis):
        name = lib.__name__
        if name in programs:
            program, losses = programs[name]
            peak = lib.cuda.max_memory_allocated() / 2**30 if device.startswith("cuda") else None
            results[name] = Result(losses, statistics.median(rounds[name]), peak, program.notes)
        else:
            results[name] = None
    return results


def torch_compiled_rate(case: Case, cfg: Any, device: str, state: dict[str, np.ndarray],
                        batches: list[tuple[np.ndarray, ...]], plan: Plan) -> float:
    """Throughput of torch's program with its model under ``torch.compile`` (default mode), for the rows' notes:
    the number the captured rows aim past."""
    program = case.program(torch, torch.compile(start_model(torch, case, cfg, state, parity=False)), device, cfg,
                           False)
    for i in range(plan.warmup + 3):  # the first steps compile
        program.step(batches[i % len(batches)])
    return case.items(cfg) / seconds_per_step(program, batches, plan.steps, device)


def loss_tolerance(case: Case) -> float:
    if case.loss_tol is not None:
        return case.loss_tol
    if case.bf16:
        return 2e-2
    return 1e-4


def error_text(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0] if lines else ''}"[:300]


def run_case(case: Case, device: str, small: bool, steps: int | None, torch_compile: bool = False) -> list[dict]:
    """The row (and its memory row on cuda) of one case; a library that fails leaves its numbers None."""
    cfg = case.small if small else case.full
    cpu_row = case.unit == "ms"
    if small:
        plan = Plan(parity=2, warmup=1, steps=steps or (10 if cpu_row else 2))
    else:
        plan = Plan(parity=3, warmup=20 if cpu_row else 8, steps=steps or (200 if cpu_row else 10))
    rng = np.random.default_rng(0)
    batches = [case.data(rng, cfg) for _ in range(max(plan.parity, 2))]
    results: dict[str, Result | None] = {"torch": None, "genesis": None}
    errors: list[str] = []
    try:
        state = initial_state(case, cfg)
    except Exception as exc:
        state, errors = {}, [f"torch: {error_text(exc)}"]
    if state:
        results = run_interleaved(case, cfg, device, state, batches, plan, errors)
    g, t = results["genesis"], results["torch"]
    tol = loss_tolerance(case)
    diff = None
    if g and t:
        diff = max(abs(a - b) / max(abs(b), 1.0) for a, b in zip(g.losses, t.losses))

    def value(r: Result | None) -> float | None:
        if r is None:
            return None
        return r.seconds_per_step * 1e3 if cpu_row else case.items(cfg) / r.seconds_per_step

    gv, tv = value(g), value(t)
    ratio = None
    if gv and tv:
        ratio = tv / gv if cpu_row else gv / tv
    goal = f">= {case.goal:.2f}" + (" (torch ms / genesis ms)" if cpu_row else "")
    name = case.name + (" small" if small else "")
    main = row(name, gv, tv, case.unit, ratio, goal)
    status = "ok"
    if errors:
        status = "error"
    elif diff is None or not diff <= tol:
        status = "loss mismatch"
    main.update(loss_rel_diff=diff, loss_tol=tol, status=status, note="; ".join((g.notes if g else []) + errors),
                genesis_losses=g.losses if g else None, torch_losses=t.losses if t else None)
    if torch_compile and state and not cpu_row:
        try:
            main["torch_compile"] = torch_compiled_rate(case, cfg, device, state, batches, plan)
            main["note"] = "; ".join(filter(None, [main["note"], f"torch.compile {main['torch_compile']:.0f} "
                                                   f"{case.unit} (genesis / torch.compile "
                                                   f"{gv / main['torch_compile']:.2f})" if gv else ""]))
        except Exception as exc:
            main["note"] = "; ".join(filter(None, [main["note"], f"torch.compile failed: {error_text(exc)}"]))
    rows = [main]
    if device.startswith("cuda"):
        gm, tm = (g.peak_gib if g else None), (t.peak_gib if t else None)
        main.update(genesis_peak_gib=gm, torch_peak_gib=tm)
        if case.memory_row:
            rows.append(row(name + " peak memory", gm, tm, "GiB", gm / tm if gm and tm else None, "<= 1.0"))
    return rows


def run(keys: list[str], device: str, small: bool = False, steps: int | None = None,
        torch_compile: bool = False) -> list[dict]:
    """All rows of the chosen cases, printed as they finish."""
    rows = []
    for case in CASES:
        if case.key in keys:
            for r in run_case(case, device, small, steps, torch_compile):
                print_row(r)
                rows.append(r)
    return rows


def fmt(v: float | None, spec: str = ".3f") -> str:
    return "-" if v is None else format(v, spec)


def print_row(r: dict) -> None:
    extra = "" if "status" not in r else f"  loss diff {fmt(r['loss_rel_diff'], '.1e')} {r['status']}"
    if r.get("note"):
        extra += f"  [{r['note']}]"
    print(f"{r['name']:<42} {fmt(r['genesis']):>12} {fmt(r['torch']):>12} {r['unit']:>6} {fmt(r['ratio'], '.2f'):>6}"
          f"  {r['goal']}{extra}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--rows", help=f"comma-separated, from {','.join(MODEL_ROWS + CPU_ROWS)}")
    parser.add_argument("--steps", type=int, help="timed steps per row")
    parser.add_argument("--small", action="store_true", help="tiny models and few steps (checks the script on a CPU)")
    parser.add_argument("--json", help="write the rows to this file")
    parser.add_argument("--threads", type=int, help="torch intra-op threads (both libraries use them on the CPU)")
    parser.add_argument("--tf32", action="store_true",
                        help="float32 matrix products, convolutions and RNNs on TF32 tensor cores in both libraries "
                             "for the timed pass (rows named '... tf32')")
    parser.add_argument("--torch-compile", action="store_true",
                        help="also time torch's program with its model under torch.compile (default mode) and "
                             "record it in the row (torch_compile, and the note)")
    args = parser.parse_args()
    if args.tf32:
        for lib in (torch, genesis):
            lib.backends.cuda.matmul.allow_tf32 = lib.backends.cudnn.allow_tf32 = True
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.rows:
        keys = args.rows.split(",")
        unknown = set(keys) - set(MODEL_ROWS + CPU_ROWS)
        if unknown:
            parser.error(f"unknown rows: {', '.join(sorted(unknown))}")
    elif args.small:
        keys = MODEL_ROWS + CPU_ROWS
    else:
        keys = MODEL_ROWS if args.device.startswith("cuda") else CPU_ROWS
    print(f"device {args.device}, torch {torch.__version__}, {torch.get_num_threads()} threads"
          f"{', small models' if args.small else ''}")
    print(f"{'benchmark':<42} {'genesis':>12} {'torch':>12} {'unit':>6} {'ratio':>6}  goal"
          f"{'  (TF32 on in both libraries)' if args.tf32 else ''}")
    rows = run(keys, args.device, args.small, args.steps, args.torch_compile)
    if args.tf32:
        for r in rows:
            r["name"] += " tf32"
    write_json(rows, args.json)
    failed = [r["name"] for r in rows if r.get("status", "ok") != "ok"]
    if failed:
        print(f"FAILED ({len(failed)}): {', '.join(failed)}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
