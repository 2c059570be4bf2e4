"""Pre-train a small Qwen model from scratch on the CPU in about five minutes, then let it write.

    python examples/demo.py                       # corpus: the Python standard library's own source files
    python examples/demo.py --text my_books/      # your own text files or folders
    python examples/demo.py --minutes 2           # a shorter (or longer) training budget

The run goes through apps/llm/train.py's code path: it trains a byte-level BPE tokenizer on the corpus, packs the
token stream into windows, trains a Qwen2-architecture model with AdamW (warmup + cosine), evaluates on held-out
text, and saves a Hugging Face model directory with the loss curve (loss.png). The number of steps is chosen from a
short timing of the training step on this machine so that training fits the budget. Finally it samples a
continuation through the generation path chat.py uses (KV cache, top-k/top-p sampling, streamed UTF-8 output).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import genesis
from apps.llm import train as train_app
from genesis.models import QwenForCausalLM
from genesis.optim import AdamW

# The model: 4 layers of width 192 with grouped-query attention, about 1.9M parameters with a 2048-token vocabulary.
MODEL_FLAGS = ["--hidden-size", "192", "--layers", "4", "--heads", "6", "--kv-heads", "2", "--seq-len", "128",
               "--vocab-size", "2048"]
BATCH_SIZE = 16


def seconds_per_step(flags: list[str]) -> float:
    """Time two training steps of the model the flags describe, on random tokens (after one warm-up step)."""
    args = train_app.build_parser().parse_args(flags)
    config = train_app.model_config(args)
    model = QwenForCausalLM(config, device=args.device)
    model.train()
    optimizer = AdamW(model.parameters(), lr=1e-3)
    ids = genesis.randint(0, config.vocab_size, (args.batch_size, args.seq_len), device=args.device)
    times = []
    for _ in range(3):
        start = time.perf_counter()
        model(ids, labels=ids).loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        genesis.synchronize(args.device)
        times.append(time.perf_counter() - start)
    return sum(times[1:]) / 2


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--text", nargs="*", type=Path, default=None,
                        help="text files or folders to train on (default: the Python standard library)")
    parser.add_argument("--minutes", type=float, default=4.5, help="training time budget")
    parser.add_argument("--steps", type=int, default=None, help="train this many steps instead of timing the budget")
    parser.add_argument("--output", type=Path, default=Path("runs/demo"), help="where the model and plot go")
    parser.add_argument("--max-mb", type=float, default=3.0, help="read at most this many MB of text")
    parser.add_argument("--prompt", default="def ", help="the prompt of the final sample")
    parser.add_argument("--device", default="cuda" if genesis.cuda.is_available() else "cpu", help="cpu or cuda")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.device.startswith("cuda") and not genesis.cuda.is_available():
        parser.error("--device cuda: no usable GPU here; python -m genesis.utils.collect_env says what is missing")
    if args.minutes <= 0:
        parser.error(f"--minutes must be positive, got {args.minutes}")
    began = time.perf_counter()
    genesis.manual_seed(args.seed)
    corpus = [str(p) for p in args.text] if args.text else ["--stdlib"]
    flags = [*corpus, "--max-mb", str(args.max_mb), *MODEL_FLAGS, "--output", str(args.output),
             "--batch-size", str(BATCH_SIZE), "--seed", str(args.seed), "--device", args.device]
    if args.steps is not None:
        steps = args.steps
        print(f"Genesis demo: {steps} training steps of {BATCH_SIZE}x128 tokens")
    else:
        step_time = seconds_per_step(flags)
        steps = max(20, int(args.minutes * 60 / (step_time * 1.08)))  # 8% for evaluations and checkpoints
        print(f"Genesis demo: {step_time:.2f} s per training step of {BATCH_SIZE}x128 tokens here, so {steps} "
              f"steps fit the {args.minutes:g}-minute budget")
    flags += ["--steps", str(steps), "--lr", "3e-3", "--warmup",
             str(max(1, steps // 20)), "--eval-every", str(max(1, steps // 5)), "--eval-batches", "4",
             "--log-every", str(max(1, steps // 60)), "--sample-prompt", args.prompt,
             "--sample-tokens", "0"]
    try:
        result = train_app.run(train_app.build_parser().parse_args(flags))
    except train_app.UsageError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    history = result["history"]
    first, last = history["loss"][0], history["loss"][-1]
    print(f"\ntraining loss {first:.3f} -> {last:.3f} nats/token; eval loss "
          f"{history['eval_loss'][0]:.3f} -> {history['eval_loss'][-1]:.3f}")
    print(f"loss curve: {args.output / 'loss.png'}")
    print(f"\n--- sample (temperature 0.8, top-p 0.95) ---\n{args.prompt}", end="", flush=True)
    for piece in train_app.sample_text(result["model"], result["tokenizer"], args.prompt, 200, args.seed):
        print(piece, end="", flush=True)
    print(f"\n---\nmodel saved to {args.output} (continue text: python apps/llm/chat.py {args.output} --raw); "
          f"total {time.perf_counter() - began:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
