"""Pre-train a Qwen-architecture language model from scratch on text files.

    python apps/llm/train.py --stdlib --output runs/stdlib            # the Python standard library as corpus
    python apps/llm/train.py my_texts/ notes.md --output runs/mine    # your own files or folders
    python apps/llm/train.py --stdlib --output runs/stdlib --resume   # continue from the last checkpoint

Without --tokenizer a byte-level BPE tokenizer is trained on the corpus first. Documents are joined with the EOS
token and packed into fixed-length training windows. The output directory is a Hugging Face model directory
(config.json, model.safetensors, tokenizer.json, tokenizer_config.json) that chat.py, Genesis and transformers
load; it also holds loss.png, training.json and the resumable checkpoint.
"""

from __future__ import annotations

import argparse
import random
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import genesis
import genesis.distributed as dist
from apps.llm.common import (
    Batch,
    UsageError,
    add_train_flags,
    finish_distributed,
    generate_text,
    log,
    rank_and_world,
    settings_from_args,
    train,
)
from genesis.models import AutoModelForCausalLM, QwenConfig, QwenForCausalLM
from genesis.tokenizer import Tokenizer, train_bpe_tokenizer

DEFAULT_PATTERNS = "*.py,*.txt,*.md,*.rst"


def stdlib_dir() -> Path:
    """The folder of the running Python's standard library (present on every installation)."""
    return Path(sysconfig.get_paths()["stdlib"])


def collect_files(paths: list[Path], patterns: str, max_bytes: int, seed: int) -> list[Path]:
    """Files named by ``paths`` (folders searched recursively for ``patterns``), shuffled, up to ``max_bytes``."""
    files: list[Path] = []
    for path in paths:
        if path.is_file():
            files.append(path)
        elif path.is_dir():
            for pattern in patterns.split(","):
                # Test suites are mostly data and fixtures; they teach a small model little.
                files.extend(f for f in path.rglob(pattern.strip()) if f.is_file() and not
                             {"test", "tests", "site-packages"} & set(f.relative_to(path).parts[:-1]))
        else:
            raise UsageError(f"no such file or folder: {path}")
    files = sorted(set(files))
    random.Random(seed).shuffle(files)
    chosen, total = [], 0
    for f in files:
        size = f.stat().st_size
        if size == 0:
            continue
        if total and total + size > max_bytes:
            continue
        chosen.append(f)
        total += size
        if total >= max_bytes:
            break
    if not chosen:
        raise UsageError(f"no text files matching {patterns} in {', '.join(map(str, paths))}")
    return chosen


def read_documents(files: list[Path]) -> list[str]:
    """The files' texts (undecodable bytes replaced)."""
    return [f.read_text(encoding="utf-8", errors="replace") for f in files]


@dataclass
class PackedData:
    """A token stream cut into random training windows and fixed evaluation windows.

    The window offsets of step ``s``, micro-batch ``m`` come from a generator seeded with ``(seed, s, m)``, so a
    resumed run sees exactly the batches an uninterrupted one would.
    """

    train_tokens: np.ndarray
    val_tokens: np.ndarray
    seq_len: int
    batch_size: int
    seed: int
    device: Any

    def _windows(self, tokens: np.ndarray, starts: np.ndarray) -> Batch:
        rows = np.stack([tokens[s:s + self.seq_len] for s in starts]).astype(np.int64)  # (B, seq_len)
        ids = genesis.tensor(rows, device=self.device)
        return ids, ids, None

    def batch(self, step: int, micro: int) -> Batch:
        rng = np.random.default_rng([self.seed, step, micro])
        starts = rng.integers(0, len(self.train_tokens) - self.seq_len, size=self.batch_size)
        return self._windows(self.train_tokens, starts)

    def eval_batches(self, count: int) -> list[Batch]:
        n = len(self.val_tokens) // self.seq_len
        starts = np.arange(min(n, count * self.batch_size)) * self.seq_len
        return [self._windows(self.val_tokens, starts[i:i + self.batch_size])
                for i in range(0, len(starts), self.batch_size)]


def pack(tokenizer: Tokenizer, documents: list[str], val_fraction: float) -> tuple[np.ndarray, np.ndarray]:
    """All documents tokenized and joined with EOS, split into (train, validation) token streams."""
    eos = tokenizer.eos_token_id
    if eos is None:
        raise UsageError("the tokenizer has no eos_token (needed to separate documents)")
    stream: list[int] = []
    for ids in tokenizer.encode_batch(documents, add_special_tokens=False):
        stream.extend(ids)
        stream.append(eos)
    tokens = np.asarray(stream, dtype=np.int32)
    n_val = int(len(tokens) * val_fraction)
    return tokens[:len(tokens) - n_val], tokens[len(tokens) - n_val:]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description="Pre-train a Qwen-architecture model from scratch on text files.",
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    data = parser.add_argument_group("data")
    data.add_argument("inputs", nargs="*", type=Path, help="text files or folders to train on")
    data.add_argument("--stdlib", action="store_true", help="add the Python standard library's sources as corpus")
    data.add_argument("--patterns", default=DEFAULT_PATTERNS, help="file patterns searched in folders")
    data.add_argument("--max-mb", type=float, default=4.0, help="read at most this many MB of text")
    data.add_argument("--val-fraction", type=float, default=0.02, help="share of tokens held out for evaluation")
    data.add_argument("--tokenizer", type=Path, help="a folder with tokenizer.json (default: train a BPE)")
    data.add_argument("--vocab-size", type=int, default=4096, help="vocabulary of the trained BPE tokenizer")
    model = parser.add_argument_group("model")
    model.add_argument("--arch", choices=["qwen2", "qwen3"], default="qwen2", help="model family")
    model.add_argument("--hidden-size", type=int, default=256)
    model.add_argument("--layers", type=int, default=4)
    model.add_argument("--heads", type=int, default=4)
    model.add_argument("--kv-heads", type=int, default=2)
    model.add_argument("--intermediate-size", type=int, default=None, help="default: 8/3 of the hidden size")
    model.add_argument("--seq-len", type=int, default=256, help="training window in tokens")
    model.add_argument("--rope-theta", type=float, default=10000.0)
    add_train_flags(parser)
    sample = parser.add_argument_group("sample")
    sample.add_argument("--sample-prompt", default="def ", help="prompt of the sample printed at the end")
    sample.add_argument("--sample-tokens", type=int, default=120, help="length of the sample (0: none)")
    return parser


def model_config(args: argparse.Namespace, tokenizer: Tokenizer | None = None) -> QwenConfig:
    """The model shape from the flags: vocabulary and special tokens from the tokenizer (``--vocab-size`` when
    there is none yet), positions from the training window."""
    intermediate = args.intermediate_size or (args.hidden_size * 8 // 3 + 31) // 32 * 32
    head_dim = args.hidden_size // args.heads
    try:
        return QwenConfig(model_type=args.arch, vocab_size=tokenizer.vocab_size if tokenizer else args.vocab_size,
                          hidden_size=args.hidden_size,
                          intermediate_size=intermediate, num_hidden_layers=args.layers,
                          num_attention_heads=args.heads, num_key_value_heads=args.kv_heads, head_dim=head_dim,
                          max_position_embeddings=max(args.seq_len, 512), rope_theta=args.rope_theta,
                          tie_word_embeddings=True, attention_bias=args.arch == "qwen2",
                          qk_norm=args.arch == "qwen3", eos_token_id=tokenizer.eos_token_id if tokenizer else None,
                          pad_token_id=tokenizer.pad_token_id if tokenizer else None)
    except ValueError as err:
        raise UsageError(str(err)) from None


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Train as the flags say; returns the loss history, the sample text and the output folder."""
    settings = settings_from_args(args)
    output: Path = args.output
    paths = list(args.inputs) + ([stdlib_dir()] if args.stdlib else [])
    if not paths:
        raise UsageError("give text files or folders to train on, or --stdlib")
    if not 0 < args.val_fraction < 0.5:
        raise UsageError(f"--val-fraction must be in (0, 0.5), got {args.val_fraction}")
    files = collect_files(paths, args.patterns, int(args.max_mb * 1e6), settings.seed)
    documents = read_documents(files)
    n_bytes = sum(len(d.encode()) for d in documents)
    log(f"corpus: {len(files)} files, {n_bytes / 1e6:.2f} MB")
    rank, world = rank_and_world()
    output.mkdir(parents=True, exist_ok=True)
    if args.resume and (output / "tokenizer.json").is_file():
        tokenizer = Tokenizer.from_pretrained(output)
    elif args.tokenizer is not None:
        tokenizer = Tokenizer.from_pretrained(args.tokenizer)
    elif rank == 0:
        tokenizer = train_bpe_tokenizer(documents, vocab_size=args.vocab_size)
        log(f"trained a byte-level BPE tokenizer with {tokenizer.vocab_size} tokens")
    if rank == 0:
        tokenizer.save_pretrained(output)
    if world > 1:
        dist.barrier()  # every rank uses the tokenizer rank 0 saved
        tokenizer = Tokenizer.from_pretrained(output)
    train_tokens, val_tokens = pack(tokenizer, documents, args.val_fraction)
    if len(train_tokens) <= args.seq_len or len(val_tokens) <= args.seq_len:
        raise UsageError(f"the corpus is too small for --seq-len {args.seq_len} ({len(train_tokens)} train and "
                         f"{len(val_tokens)} eval tokens)")
    log(f"tokens: {len(train_tokens):,} train, {len(val_tokens):,} eval "
          f"({n_bytes / (len(train_tokens) + len(val_tokens)):.2f} bytes/token)")
    genesis.manual_seed(settings.seed)
    config = model_config(args, tokenizer)
    model = AutoModelForCausalLM.from_config(config, device=settings.device)
    n_params = sum(p.numel() for p in model.parameters())
    log(f"model: {config.model_type}, {config.num_hidden_layers} layers, hidden {config.hidden_size}, "
          f"{n_params / 1e6:.2f}M parameters")
    data = PackedData(train_tokens, val_tokens, args.seq_len, settings.batch_size, settings.seed, settings.device)
    meta = {"files": len(files), "bytes": n_bytes, "train_tokens": len(train_tokens), "parameters": n_params}
    train(model, tokenizer, data.batch, data.eval_batches(settings.eval_batches), settings, output, args.resume,
          meta)
    sample = ""
    if args.sample_tokens > 0 and rank == 0:
        sample = args.sample_prompt + "".join(sample_text(model, tokenizer, args.sample_prompt, args.sample_tokens,
                                                          settings.seed))
    return {"output": output, "history": settings.history, "sample": sample, "model": model,
            "tokenizer": tokenizer}


def sample_text(model: QwenForCausalLM, tokenizer: Tokenizer, prompt: str, max_new_tokens: int,
                seed: int) -> Any:
    """Stream a sampled continuation of ``prompt`` (the generation path chat.py uses)."""
    return generate_text(model, tokenizer, tokenizer.encode(prompt), max_new_tokens=max_new_tokens, do_sample=True,
                         temperature=0.8, top_k=50, top_p=0.95, repetition_penalty=1.1, seed=seed)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        result = run(args)
        if result["sample"]:
            print(f"\n--- sample ---\n{result['sample']}\n--------------")
        log(f"saved to {result['output']}")
    except UsageError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    finally:
        finish_distributed()
    return 0


if __name__ == "__main__":
    sys.exit(main())
