"""Chat with a Qwen model from a Hugging Face directory, with streamed replies.

    python apps/llm/chat.py path/to/Qwen2.5-0.5B-Instruct               # interactive
    python apps/llm/chat.py runs/demo --prompt "def fib(n):"             # one reply, then exit
    python apps/llm/chat.py MODEL --system "Answer in French." --temperature 0

Interactive commands: /reset clears the history, /exit (or Ctrl-D) quits. The conversation is rendered with the
tokenizer's chat template; a model without one (a freshly pre-trained base model) continues the raw text instead.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TextIO

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import genesis
from apps.llm.common import UsageError, add_sampling_flags, generate_text, sampling_kwargs
from genesis.models import AutoModelForCausalLM, QwenForCausalLM
from genesis.tokenizer import Tokenizer


class ChatSession:
    """A conversation: the message history and how to turn it into a streamed reply."""

    def __init__(self, model: QwenForCausalLM, tokenizer: Tokenizer, system: str | None, use_template: bool,
                 sampling: dict) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.system = system
        self.use_template = use_template
        self.sampling = sampling
        self.messages: list[dict[str, str]] = []
        self.reset()

    def reset(self) -> None:
        self.messages = [{"role": "system", "content": self.system}] if self.system else []

    def prompt_ids(self, user_text: str) -> list[int]:
        if not self.use_template:
            return self.tokenizer.encode(user_text)
        self.messages.append({"role": "user", "content": user_text})
        return self.tokenizer.apply_chat_template(self.messages, add_generation_prompt=True)

    def reply(self, user_text: str, out: TextIO) -> str:
        """Stream the reply to ``user_text`` into ``out`` and add it to the history."""
        ids = self.prompt_ids(user_text)
        limit = self.model.config.max_position_embeddings
        if len(ids) >= limit:
            if self.use_template:
                self.messages.pop()
            raise UsageError(f"the conversation is {len(ids)} tokens, the model holds {limit}: use /reset")
        pieces = []
        for piece in generate_text(self.model, self.tokenizer, ids, **self.sampling):
            out.write(piece)
            out.flush()
            pieces.append(piece)
        out.write("\n")
        text = "".join(pieces)
        if self.use_template:
            self.messages.append({"role": "assistant", "content": text})
        return text


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description="Chat with a Qwen model (Hugging Face directory) in Genesis.",
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("model", type=Path, help="model directory (config.json, safetensors, tokenizer.json)")
    parser.add_argument("--prompt", help="answer this one message and exit")
    parser.add_argument("--system", default=None, help="system prompt")
    parser.add_argument("--raw", action="store_true", help="continue raw text instead of using the chat template")
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    parser.add_argument("--dtype", default="auto", help="float32, bfloat16, float16 or auto (the checkpoint's)")
    add_sampling_flags(parser)
    return parser


def load(args: argparse.Namespace) -> tuple[QwenForCausalLM, Tokenizer]:
    if args.device.startswith("cuda") and not genesis.cuda.is_available():
        raise UsageError("--device cuda: no CUDA GPU is available")
    dtype = args.dtype
    if dtype == "auto" and args.device == "cpu":
        dtype = "float32"  # half precision is slow on CPUs
    try:
        tokenizer = Tokenizer.from_pretrained(args.model)
        model = AutoModelForCausalLM.from_pretrained(args.model, dtype=dtype, device=args.device)
    except (FileNotFoundError, ValueError) as err:
        raise UsageError(str(err)) from None
    return model, tokenizer


def main(argv: list[str] | None = None, stdin: TextIO = sys.stdin, stdout: TextIO = sys.stdout) -> int:
    args = build_parser().parse_args(argv)
    try:
        sampling = sampling_kwargs(args)
        model, tokenizer = load(args)
        use_template = tokenizer.chat_template is not None and not args.raw
        session = ChatSession(model, tokenizer, args.system, use_template, sampling)
        if args.prompt is not None:
            session.reply(args.prompt, stdout)
            return 0
        stdout.write(f"Genesis chat with {args.model} ({'chat template' if use_template else 'raw text'}); "
                     "/reset clears the history, /exit quits.\n")
        while True:
            stdout.write("> ")
            stdout.flush()
            line = stdin.readline()
            if not line or line.strip() == "/exit":
                return 0
            text = line.rstrip("\n")
            if text.strip() == "/reset":
                session.reset()
                stdout.write("(history cleared)\n")
                continue
            if not text.strip():
                continue
            try:
                session.reply(text, stdout)
            except UsageError as err:
                stdout.write(f"error: {err}\n")
    except (UsageError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
