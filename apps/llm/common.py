"""What the LLM apps share: the training loop, its command-line flags, loss curves, and text generation.

``train.py`` (pre-training) and ``sft.py`` (fine-tuning) differ only in how they build batches; both hand a batch
function to :func:`train`, which runs AdamW with warmup and cosine decay, gradient accumulation and clipping, bf16
autocast on the GPU, periodic evaluation, checkpoints that a later run resumes exactly, and saves the result as a
Hugging Face directory. ``chat.py`` and the demo generate text through :func:`generate_text`.

Started by the launcher (``python -m genesis.distributed.run --nproc-per-node N apps/llm/train.py ...``), every
process joins the job, trains a DistributedDataParallel replica on its own micro-batches (one GPU each), and rank 0
alone logs, shows the progress bar and writes checkpoints and results.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tqdm import tqdm

import genesis
import genesis.distributed as dist
from genesis.generation import stream_generate
from genesis.models import QwenForCausalLM
from genesis.nn.parallel import DistributedDataParallel
from genesis.nn.utils import clip_grad_norm_
from genesis.optim import AdamW
from genesis.optim.lr_scheduler import warmup_cosine
from genesis.tokenizer import Tokenizer

# A batch: input ids (B, T), labels (B, T) with -100 where no loss is taken, and an optional attention mask.
Batch = tuple[genesis.Tensor, genesis.Tensor, "genesis.Tensor | None"]
CHECKPOINT = "checkpoint.safetensors"


class UsageError(Exception):
    """A problem with the user's input, reported as one line without a traceback."""


@dataclass
class TrainSettings:
    """Optimization and bookkeeping settings shared by pre-training and fine-tuning."""

    steps: int = 200
    batch_size: int = 8
    grad_accum: int = 1
    lr: float = 1e-3
    min_lr_ratio: float = 0.1
    warmup: int = 20
    weight_decay: float = 0.1
    clip: float = 1.0
    eval_every: int = 50
    eval_batches: int = 4
    save_every: int = 0
    log_every: int = 10
    seed: int = 0
    device: str = "cpu"
    bf16: bool = False
    history: dict[str, list] = field(default_factory=lambda: {"step": [], "loss": [], "eval_step": [],
                                                              "eval_loss": []})


def add_train_flags(parser: argparse.ArgumentParser, defaults: TrainSettings | None = None) -> None:
    """The optimization flags of :class:`TrainSettings` (plus --output and --resume)."""
    d = defaults or TrainSettings()
    g = parser.add_argument_group("training")
    g.add_argument("--output", type=Path, required=True, help="directory for the trained model (Hugging Face format), "
                                                   "checkpoints and the loss curve")
    g.add_argument("--steps", type=int, default=d.steps, help="optimizer steps")
    g.add_argument("--batch-size", type=int, default=d.batch_size, help="sequences per micro-batch")
    g.add_argument("--grad-accum", type=int, default=d.grad_accum, help="micro-batches per optimizer step")
    g.add_argument("--lr", type=float, default=d.lr, help="peak learning rate")
    g.add_argument("--min-lr-ratio", type=float, default=d.min_lr_ratio, help="final LR as a fraction of --lr")
    g.add_argument("--warmup", type=int, default=d.warmup, help="linear warmup steps")
    g.add_argument("--weight-decay", type=float, default=d.weight_decay, help="AdamW decoupled weight decay")
    g.add_argument("--clip", type=float, default=d.clip, help="gradient-norm clipping (0 disables)")
    g.add_argument("--eval-every", type=int, default=d.eval_every, help="evaluate every N steps (0 disables)")
    g.add_argument("--eval-batches", type=int, default=d.eval_batches, help="batches per evaluation")
    g.add_argument("--save-every", type=int, default=d.save_every, help="checkpoint every N steps (0: at the end)")
    g.add_argument("--log-every", type=int, default=d.log_every, help="record the training loss every N steps")
    g.add_argument("--resume", action="store_true", help=f"continue from OUTPUT/{CHECKPOINT}")
    g.add_argument("--seed", type=int, default=d.seed, help="random seed (weights, batches, sampling)")
    g.add_argument("--device", default=d.device, help="cpu or cuda")
    g.add_argument("--bf16", action=argparse.BooleanOptionalAction, default=None,
                   help="bf16 autocast (default: on for cuda, off for cpu)")


def settings_from_args(args: argparse.Namespace) -> TrainSettings:
    """Checked :class:`TrainSettings` from parsed flags."""
    s = TrainSettings(steps=args.steps, batch_size=args.batch_size, grad_accum=args.grad_accum, lr=args.lr,
                      min_lr_ratio=args.min_lr_ratio, warmup=args.warmup, weight_decay=args.weight_decay,
                      clip=args.clip, eval_every=args.eval_every, eval_batches=args.eval_batches,
                      save_every=args.save_every, log_every=args.log_every, seed=args.seed, device=args.device,
                      bf16=args.bf16 if args.bf16 is not None else args.device.startswith("cuda"))
    for name in ("steps", "batch_size", "grad_accum", "log_every"):
        if getattr(s, name) < 1:
            raise UsageError(f"--{name.replace('_', '-')} must be at least 1, got {getattr(s, name)}")
    if not s.lr > 0:
        raise UsageError(f"--lr must be positive, got {s.lr}")
    if not 0 <= s.warmup <= s.steps:
        raise UsageError(f"--warmup must be between 0 and --steps ({s.steps}), got {s.warmup}")
    if s.device.startswith("cuda") and not genesis.cuda.is_available():
        raise UsageError("--device cuda: no CUDA GPU is available")
    start_distributed(s)
    return s


def start_distributed(settings: TrainSettings) -> None:
    """Join the job when the launcher started several processes: one GPU per rank (NCCL), or gloo on the CPU."""
    if int(os.environ.get("WORLD_SIZE", "1")) <= 1 or dist.is_initialized():
        return
    if settings.device.startswith("cuda"):
        local = dist.get_local_rank()
        genesis.cuda.set_device(local)
        settings.device = f"cuda:{local}"
    dist.init_process_group("nccl" if settings.device.startswith("cuda") else "gloo")


def rank_and_world() -> tuple[int, int]:
    """This process's rank and the number of processes (0 and 1 outside a distributed job)."""
    return (dist.get_rank(), dist.get_world_size()) if dist.is_initialized() else (0, 1)


def log(*args: Any) -> None:
    """Print on rank 0 only."""
    if rank_and_world()[0] == 0:
        print(*args)


def finish_distributed() -> None:
    """Leave the distributed job, if this process joined one."""
    if dist.is_initialized():
        dist.destroy_process_group()


def _autocast(settings: TrainSettings) -> Any:
    """bf16 autocast for the forward pass when enabled (the GPU default), else nothing."""
    if settings.bf16:
        return genesis.autocast(device_type=genesis.device(settings.device).type, dtype=genesis.bfloat16)
    return contextlib.nullcontext()


def evaluate(model: QwenForCausalLM, batches: list[Batch], settings: TrainSettings) -> float:
    """Mean loss over fixed batches, without gradients."""
    model.eval()
    total = 0.0
    with genesis.no_grad(), _autocast(settings):
        for ids, labels, mask in batches:
            total += model(ids, attention_mask=mask, labels=labels).loss.item()
    model.train()
    return total / max(1, len(batches))


def train(model: QwenForCausalLM, tokenizer: Tokenizer, batch_fn: Callable[[int, int], Batch],
          eval_batches: list[Batch], settings: TrainSettings, output: Path, resume: bool = False,
          meta: dict[str, Any] | None = None) -> TrainSettings:
    """Optimize ``model`` for ``settings.steps`` steps and save it with its tokenizer to ``output``.

    Args:
        batch_fn: ``batch_fn(step, micro)`` returns the micro-batch ``micro`` of optimizer step ``step``; it must
            be a pure function of its arguments so that a resumed run sees the same data.
        eval_batches: held-out batches for the periodic evaluation.
        resume: continue from ``output/checkpoint.safetensors`` (same settings expected).
        meta: plain values stored in the checkpoint and the run summary (dataset description, ...).

    Returns:
        The settings with the loss history filled in.
    """
    output.mkdir(parents=True, exist_ok=True)
    decay = [p for n, p in model.named_parameters() if p.ndim >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.ndim < 2]
    optimizer = AdamW([{"params": decay, "weight_decay": settings.weight_decay},
                       {"params": no_decay, "weight_decay": 0.0}], lr=settings.lr, betas=(0.9, 0.95))
    scheduler = warmup_cosine(optimizer, settings.warmup, settings.steps, min_lr_ratio=settings.min_lr_ratio)
    start = 0
    history = settings.history
    checkpoint = output / CHECKPOINT
    if resume:
        if not checkpoint.is_file():
            raise UsageError(f"--resume: no checkpoint at {checkpoint}")
        state = genesis.load_checkpoint(checkpoint, model=model, optimizer=optimizer, scheduler=scheduler)
        start = int(state["step"])
        history.update(json.loads(state["extra"]["history"]))
        log(f"resumed from {checkpoint} at step {start}")
    model.train()
    rank, world = rank_and_world()
    main = rank == 0
    net = DistributedDataParallel(model) if world > 1 else model  # rank 0's (possibly resumed) weights everywhere
    tokens_per_step = 0
    bar = tqdm(range(start, settings.steps), initial=start, total=settings.steps, desc="train", unit="step",
               dynamic_ncols=True, disable=not main)
    t0 = time.perf_counter()
    running = []
    for step in bar:
        loss_sum = 0.0
        for micro in range(settings.grad_accum):
            ids, labels, mask = batch_fn(step, micro * world + rank)  # each rank its own micro-batches
            tokens_per_step = ids.numel() * settings.grad_accum * world
            last = micro == settings.grad_accum - 1
            with net.no_sync() if world > 1 and not last else contextlib.nullcontext():
                with _autocast(settings):
                    loss = net(ids, attention_mask=mask, labels=labels).loss
                (loss / settings.grad_accum).backward()
            loss_sum += loss.item()
        if world > 1:
            mean = genesis.tensor([loss_sum], device=settings.device)
            dist.all_reduce(mean, op=dist.ReduceOp.AVG)
            loss_sum = mean.item()
        if settings.clip > 0:
            clip_grad_norm_(model.parameters(), settings.clip)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        scheduler.step()
        loss_value = loss_sum / settings.grad_accum
        if not math.isfinite(loss_value):
            raise RuntimeError(f"training diverged at step {step + 1}: loss {loss_value} (lower --lr?)")
        running.append(loss_value)
        done = step + 1
        if done % settings.log_every == 0 or done == settings.steps:
            history["step"].append(done)
            history["loss"].append(sum(running) / len(running))
            running = []
        elapsed = time.perf_counter() - t0
        bar.set_postfix(loss=f"{loss_value:.3f}", lr=f"{scheduler.get_last_lr()[0]:.2e}",
                        tok_s=f"{tokens_per_step * (done - start) / elapsed:.0f}")
        if settings.eval_every and (done % settings.eval_every == 0 or done == settings.steps) and eval_batches:
            eval_loss = evaluate(model, eval_batches, settings)
            history["eval_step"].append(done)
            history["eval_loss"].append(eval_loss)
            if main:
                tqdm.write(f"step {done:5d}  train loss "
                           f"{history['loss'][-1] if history['loss'] else loss_value:.4f}  eval loss {eval_loss:.4f}")
        if main and ((settings.save_every and done % settings.save_every == 0) or done == settings.steps):
            genesis.save_checkpoint(checkpoint, model=model, optimizer=optimizer, scheduler=scheduler, step=done,
                                    history=json.dumps(history), meta=json.dumps(meta or {}))
    bar.close()
    model.eval()
    if not main:
        return settings
    model.save_pretrained(output)
    tokenizer.save_pretrained(output)
    summary = {"settings": {k: v for k, v in asdict(settings).items() if k != "history"}, "history": history,
               "meta": meta or {}, "seconds": time.perf_counter() - t0}
    (output / "training.json").write_text(json.dumps(summary, indent=2))
    plot_losses(history, output / "loss.png")
    return settings


def plot_losses(history: dict[str, list], path: Path) -> None:
    """Training (and evaluation) loss against the step, as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(history["step"], history["loss"], label="train")
    if history["eval_step"]:
        ax.plot(history["eval_step"], history["eval_loss"], "o-", label="eval")
    ax.set_xlabel("step")
    ax.set_ylabel("cross-entropy (nats/token)")
    ax.set_title("Genesis Qwen training loss")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# ---------------------------------------------------------------------------------------------------- generation

def add_sampling_flags(parser: argparse.ArgumentParser) -> None:
    """Sampling flags shared by chat.py and the demo."""
    g = parser.add_argument_group("sampling")
    g.add_argument("--max-new-tokens", type=int, default=256, help="tokens to generate per reply")
    g.add_argument("--temperature", type=float, default=0.7, help="0 for greedy decoding")
    g.add_argument("--top-k", type=int, default=50, help="keep the k most likely tokens (0: all)")
    g.add_argument("--top-p", type=float, default=0.9, help="nucleus sampling threshold")
    g.add_argument("--min-p", type=float, default=0.0, help="drop tokens below min-p times the top probability")
    g.add_argument("--repetition-penalty", type=float, default=1.1, help="CTRL repetition penalty (1: off)")
    g.add_argument("--seed", type=int, default=None, help="seed for reproducible sampling")


def sampling_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    """``generate`` keyword arguments from the sampling flags."""
    kwargs: dict[str, Any] = {"max_new_tokens": args.max_new_tokens, "repetition_penalty": args.repetition_penalty,
                              "seed": args.seed}
    if args.temperature > 0:
        kwargs.update(do_sample=True, temperature=args.temperature, top_k=args.top_k, top_p=args.top_p,
                      min_p=args.min_p)
    return kwargs


def stop_ids(tokenizer: Tokenizer, model: QwenForCausalLM) -> list[int]:
    """Token ids that end a reply: the model's EOS ids, the tokenizer's EOS and ChatML's ``<|im_end|>``."""
    ids = model.generation_config.get("eos_token_id", model.config.eos_token_id)
    ids = [] if ids is None else ([ids] if isinstance(ids, int) else list(ids))
    for token_id in (tokenizer.eos_token_id, tokenizer.token_to_id("<|im_end|>")):
        if token_id is not None and token_id not in ids:
            ids.append(token_id)
    return ids


def generate_text(model: QwenForCausalLM, tokenizer: Tokenizer, prompt_ids: list[int],
                  **kwargs: Any) -> Iterator[str]:
    """Stream the text of one continuation of ``prompt_ids``, piece by piece (valid UTF-8 each)."""
    ids = genesis.tensor([prompt_ids], dtype=genesis.int64, device=model.device)
    kwargs.setdefault("eos_token_id", stop_ids(tokenizer, model))
    decoder = tokenizer.stream_decoder(skip_special_tokens=True)
    eos = set(kwargs["eos_token_id"])
    for next_ids in stream_generate(model, ids, **kwargs):
        token = int(next_ids[0].item())
        if token in eos:
            break
        piece = decoder.put(token)
        if piece:
            yield piece
    tail = decoder.flush()
    if tail:
        yield tail
