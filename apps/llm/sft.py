"""Supervised fine-tuning of a Qwen model on chat conversations (JSONL), with the loss on assistant tokens only.

    python apps/llm/sft.py path/to/model data.jsonl --output runs/sft

Each line of the data file is one conversation: ``{"messages": [{"role": "user", "content": "..."},
{"role": "assistant", "content": "..."}, ...]}``. Conversations are rendered with the tokenizer's chat template;
only the tokens of assistant turns (including the end-of-turn token) are scored. The output is a Hugging Face
model directory like the input, plus loss.png, training.json and a resumable checkpoint.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import genesis
from apps.llm.common import (
    Batch,
    TrainSettings,
    UsageError,
    add_train_flags,
    finish_distributed,
    log,
    settings_from_args,
    train,
)
from genesis.models import AutoModelForCausalLM, QwenForCausalLM
from genesis.models.qwen import IGNORE_INDEX
from genesis.tokenizer import Tokenizer


def read_conversations(path: Path) -> list[list[dict[str, str]]]:
    """The ``messages`` of every line of a JSONL file (errors name the file and line)."""
    if not path.is_file():
        raise UsageError(f"no such data file: {path}")
    conversations = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as err:
                raise UsageError(f"{path}:{number}: not valid JSON ({err.msg})") from None
            messages = record.get("messages") if isinstance(record, dict) else None
            if not isinstance(messages, list) or not messages:
                raise UsageError(f"{path}:{number}: expected {{\"messages\": [...]}} with at least one message")
            for m in messages:
                if not isinstance(m, dict) or not isinstance(m.get("role"), str) or \
                        not isinstance(m.get("content"), str):
                    raise UsageError(f"{path}:{number}: each message needs a string 'role' and 'content', got {m!r}")
            if not any(m["role"] == "assistant" for m in messages):
                raise UsageError(f"{path}:{number}: the conversation has no assistant message to learn from")
            conversations.append(messages)
    if not conversations:
        raise UsageError(f"{path}: no conversations")
    return conversations


def encode_conversation(tokenizer: Tokenizer, messages: list[dict[str, str]],
                        max_len: int) -> tuple[list[int], list[int]]:
    """Token ids of the rendered conversation and labels that keep only the assistant turns (-100 elsewhere).

    An assistant turn's tokens are found by rendering the conversation up to the turn with the generation prompt
    and up to its end: the difference is the reply and its end-of-turn marker.
    """
    ids = tokenizer.apply_chat_template(messages)
    labels = [IGNORE_INDEX] * len(ids)
    for i, message in enumerate(messages):
        if message["role"] != "assistant":
            continue
        start = len(tokenizer.apply_chat_template(messages[:i], add_generation_prompt=True))
        upto = tokenizer.apply_chat_template(messages[:i + 1])
        if ids[:len(upto)] != upto:
            raise UsageError("the chat template renders a conversation differently from its beginning; the "
                             "assistant turns cannot be located")
        labels[start:len(upto)] = ids[start:len(upto)]
    return ids[:max_len], labels[:max_len]


@dataclass
class ChatData:
    """Encoded conversations served as right-padded batches (no attention mask needed: padding comes last)."""

    examples: list[tuple[list[int], list[int]]]
    batch_size: int
    pad_id: int
    seed: int
    device: Any

    def _collate(self, chosen: list[tuple[list[int], list[int]]]) -> Batch:
        width = max(len(ids) for ids, _ in chosen)
        ids = np.full((len(chosen), width), self.pad_id, dtype=np.int64)
        labels = np.full((len(chosen), width), IGNORE_INDEX, dtype=np.int64)
        for row, (x, y) in enumerate(chosen):
            ids[row, :len(x)] = x
            labels[row, :len(y)] = y
        return genesis.tensor(ids, device=self.device), genesis.tensor(labels, device=self.device), None

    def batch(self, step: int, micro: int) -> Batch:
        rng = np.random.default_rng([self.seed, step, micro])
        picks = rng.integers(0, len(self.examples), size=self.batch_size)
        return self._collate([self.examples[i] for i in picks])

    def all_batches(self) -> list[Batch]:
        return [self._collate(self.examples[i:i + self.batch_size])
                for i in range(0, len(self.examples), self.batch_size)]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description="Fine-tune a Qwen model on chat JSONL (loss on assistant turns).",
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("model", type=Path, help="Hugging Face model directory to start from")
    parser.add_argument("data", type=Path, help='JSONL file, one {"messages": [...]} per line')
    parser.add_argument("--eval-data", type=Path, help="held-out JSONL (default: --val-fraction of the data)")
    parser.add_argument("--val-fraction", type=float, default=0.05, help="share of conversations held out")
    parser.add_argument("--seq-len", type=int, default=1024, help="truncate conversations to this many tokens")
    add_train_flags(parser, TrainSettings(steps=100, batch_size=4, lr=1e-4, warmup=10, eval_every=25,
                                          weight_decay=0.0))
    return parser


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Fine-tune as the flags say; returns the loss history and the output folder."""
    settings = settings_from_args(args)
    try:
        tokenizer = Tokenizer.from_pretrained(args.model)
        model: QwenForCausalLM = AutoModelForCausalLM.from_pretrained(args.model, device=settings.device)
    except (FileNotFoundError, ValueError) as err:
        raise UsageError(str(err)) from None
    if tokenizer.chat_template is None:
        raise UsageError(f"{args.model}: the tokenizer has no chat template to render conversations with")
    conversations = read_conversations(args.data)
    if args.eval_data is not None:
        held_out = read_conversations(args.eval_data)
    else:
        n_val = int(len(conversations) * args.val_fraction)
        order = np.random.default_rng(settings.seed).permutation(len(conversations))
        held_out = [conversations[i] for i in order[:n_val]]
        conversations = [conversations[i] for i in order[n_val:]]
    max_len = min(args.seq_len, model.config.max_position_embeddings)
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else (tokenizer.eos_token_id or 0)
    encode = [encode_conversation(tokenizer, m, max_len) for m in conversations]
    scored = sum(sum(1 for t in y[1:] if t != IGNORE_INDEX) for _, y in encode)
    if scored == 0:
        raise UsageError(f"no assistant tokens left to learn from within --seq-len {max_len}")
    log(f"data: {len(encode)} conversations ({scored:,} assistant tokens), {len(held_out)} held out")
    data = ChatData(encode, settings.batch_size, pad_id, settings.seed, settings.device)
    eval_data = ChatData([encode_conversation(tokenizer, m, max_len) for m in held_out], settings.batch_size,
                         pad_id, settings.seed, settings.device)
    genesis.manual_seed(settings.seed)
    meta = {"base_model": str(args.model), "conversations": len(encode), "assistant_tokens": scored}
    train(model, tokenizer, data.batch, eval_data.all_batches()[:settings.eval_batches], settings, args.output,
          args.resume, meta)
    return {"output": args.output, "history": settings.history, "model": model, "tokenizer": tokenizer}


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        result = run(args)
        log(f"saved to {result['output']}")
    except UsageError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    finally:
        finish_distributed()
    return 0


if __name__ == "__main__":
    sys.exit(main())
