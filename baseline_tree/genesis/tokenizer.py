"""Tokenizer for Hugging Face model directories: ``tokenizer.json`` plus the chat template.

:class:`Tokenizer` wraps the ``tokenizers`` library for encoding and decoding, and renders the chat template of
``tokenizer_config.json`` (or ``chat_template.jinja``) with jinja2 exactly as transformers' ``apply_chat_template``
does: a sandboxed environment with ``trim_blocks`` and ``lstrip_blocks``, the special tokens as template variables,
and the rendered text tokenized without adding special tokens. :class:`StreamDecoder` turns a growing list of token
ids into text pieces that are always valid UTF-8, for streaming output.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any, Iterable

import jinja2
import jinja2.ext
import jinja2.sandbox
from tokenizers import Tokenizer as _HFTokenizer
from tokenizers import decoders, models, pre_tokenizers, trainers

SPECIAL_TOKEN_NAMES = ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token")

# Qwen's ChatML format: every turn is "<|im_start|>{role}\n{content}<|im_end|>\n".
CHATML_SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
CHATML_TEMPLATE = (
    "{%- for message in messages %}"
    "{%- if loop.first and message['role'] != 'system' %}"
    "{{- '<|im_start|>system\\nYou are a helpful assistant.<|im_end|>\\n' }}"
    "{%- endif %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}"
    "{{- '<|im_start|>assistant\\n' }}"
    "{%- endif %}"
)


def _read_json(path: Path) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}: not valid JSON ({err})") from None


def _token_content(value: Any) -> str | None:
    """A special token as written in tokenizer_config.json: a string or an AddedToken dict with ``content``."""
    if isinstance(value, dict):
        return value.get("content")
    return value


def _compile_template(template: str) -> jinja2.Template:
    """The chat template compiled in transformers' sandboxed jinja2 environment."""

    def raise_exception(message: str) -> None:
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x: Any, ensure_ascii: bool = False, indent: int | None = None, separators: Any = None,
               sort_keys: bool = False) -> str:
        # jinja2's own tojson escapes HTML characters; chat templates expect plain JSON.
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(fmt: str) -> str:
        return datetime.now().strftime(fmt)

    env = jinja2.sandbox.ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                                       extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    try:
        return env.from_string(template)
    except jinja2.exceptions.TemplateSyntaxError as err:
        raise ValueError(f"chat template: syntax error on line {err.lineno}: {err.message}") from None


class Tokenizer:
    """A text tokenizer with special tokens and a chat template, loaded from a Hugging Face directory.

    Args:
        tokenizer: a ``tokenizers.Tokenizer`` (the contents of ``tokenizer.json``).
        config: the contents of ``tokenizer_config.json`` (special tokens, ``chat_template``, ...).
        chat_template: the jinja2 chat template, if any (overrides ``config["chat_template"]``).
    """

    def __init__(self, tokenizer: _HFTokenizer, config: dict[str, Any] | None = None,
                 chat_template: str | None = None) -> None:
        self.backend = tokenizer
        self.config = dict(config or {})
        template = chat_template if chat_template is not None else self.config.get("chat_template")
        if isinstance(template, list):
            # Several named templates: transformers uses the one named "default".
            named = {t["name"]: t["template"] for t in template}
            template = named.get("default")
        self.chat_template: str | None = template
        self._compiled: jinja2.Template | None = None
        self.special_tokens: dict[str, str] = {}
        for name in SPECIAL_TOKEN_NAMES:
            token = _token_content(self.config.get(name))
            if token is not None:
                self.special_tokens[name] = token

    # ------------------------------------------------------------ loading and saving
    @classmethod
    def from_pretrained(cls, path: str | Path) -> Tokenizer:
        """Load ``tokenizer.json``, ``tokenizer_config.json`` and the chat template from a model directory.

        Raises:
            FileNotFoundError: the directory has no ``tokenizer.json``.
            ValueError: a file is corrupt (the message names it).
        """
        directory = Path(path)
        tokenizer_file = directory / "tokenizer.json"
        if not tokenizer_file.is_file():
            raise FileNotFoundError(f"Tokenizer.from_pretrained: no tokenizer.json in {directory}")
        try:
            backend = _HFTokenizer.from_file(str(tokenizer_file))
        except Exception as err:  # the tokenizers library raises a bare Exception on bad files
            raise ValueError(f"{tokenizer_file}: not a valid tokenizer file ({err})") from None
        config_file = directory / "tokenizer_config.json"
        config = _read_json(config_file) if config_file.is_file() else {}
        template = None
        if (directory / "chat_template.jinja").is_file():
            template = (directory / "chat_template.jinja").read_text(encoding="utf-8")
        elif (directory / "chat_template.json").is_file():
            template = _read_json(directory / "chat_template.json").get("chat_template")
        return cls(backend, config, template)

    def save_pretrained(self, path: str | Path) -> None:
        """Write ``tokenizer.json`` and ``tokenizer_config.json`` (with the chat template) into ``path``."""
        directory = Path(path)
        directory.mkdir(parents=True, exist_ok=True)
        self.backend.save(str(directory / "tokenizer.json"))
        config = dict(self.config)
        config.update(self.special_tokens)
        config.setdefault("tokenizer_class", "PreTrainedTokenizerFast")
        if self.chat_template is not None:
            config["chat_template"] = self.chat_template
        with open(directory / "tokenizer_config.json", "w", encoding="utf-8") as f:
            json.dump(config, f, indent=2, ensure_ascii=False)

    # ------------------------------------------------------------ vocabulary
    @property
    def vocab_size(self) -> int:
        """Number of ids, added tokens included (as ``len(AutoTokenizer)``)."""
        return self.backend.get_vocab_size(with_added_tokens=True)

    def __len__(self) -> int:
        return self.vocab_size

    def token_to_id(self, token: str) -> int | None:
        return self.backend.token_to_id(token)

    def id_to_token(self, index: int) -> str | None:
        return self.backend.id_to_token(index)

    def _special_id(self, name: str) -> int | None:
        token = self.special_tokens.get(name)
        return None if token is None else self.backend.token_to_id(token)

    @property
    def eos_token(self) -> str | None:
        return self.special_tokens.get("eos_token")

    @property
    def eos_token_id(self) -> int | None:
        return self._special_id("eos_token")

    @property
    def bos_token_id(self) -> int | None:
        return self._special_id("bos_token")

    @property
    def pad_token_id(self) -> int | None:
        return self._special_id("pad_token")

    @property
    def all_special_ids(self) -> list[int]:
        """Ids of every special token: the named ones and the added tokens marked special."""
        ids = {self.backend.token_to_id(t) for t in self.special_tokens.values()}
        ids.update(i for i, tok in self.backend.get_added_tokens_decoder().items() if tok.special)
        return sorted(i for i in ids if i is not None)

    # ------------------------------------------------------------ text <-> ids
    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        """Token ids of ``text`` (as ``AutoTokenizer(text)["input_ids"]``)."""
        if not isinstance(text, str):
            raise TypeError(f"encode: text must be a str, got {type(text).__name__}")
        return self.backend.encode(text, add_special_tokens=add_special_tokens).ids

    def encode_batch(self, texts: list[str], add_special_tokens: bool = True) -> list[list[int]]:
        return [e.ids for e in self.backend.encode_batch(texts, add_special_tokens=add_special_tokens)]

    def decode(self, ids: Any, skip_special_tokens: bool = False) -> str:
        """The text of a sequence of token ids (a list, or a 1-D tensor)."""
        if hasattr(ids, "tolist"):
            ids = ids.tolist()
        if isinstance(ids, int):
            ids = [ids]
        vocab = self.vocab_size
        for i in ids:
            if not 0 <= i < vocab:
                raise IndexError(f"decode: token id {i} is out of range for a vocabulary of {vocab}")
        return self.backend.decode(list(ids), skip_special_tokens=skip_special_tokens)

    def __call__(self, text: str, add_special_tokens: bool = True) -> dict[str, list[int]]:
        ids = self.encode(text, add_special_tokens)
        return {"input_ids": ids, "attention_mask": [1] * len(ids)}

    # ------------------------------------------------------------ chat
    def apply_chat_template(self, messages: list[dict[str, Any]], add_generation_prompt: bool = False,
                            tokenize: bool = True, chat_template: str | None = None,
                            **kwargs: Any) -> list[int] | str:
        """Render a conversation with the chat template; token ids when ``tokenize`` else the text.

        Args:
            messages: dicts with ``role`` ("system", "user", "assistant", ...) and ``content``.
            add_generation_prompt: append the text that opens an assistant turn.
            tokenize: return token ids (encoded without adding special tokens) instead of the string.
            chat_template: a template to use instead of the tokenizer's.
            **kwargs: further variables for the template (``tools``, ``enable_thinking``, ...).
        """
        template = chat_template if chat_template is not None else self.chat_template
        if template is None:
            raise ValueError("apply_chat_template: this tokenizer has no chat template (add \"chat_template\" to "
                             "tokenizer_config.json or pass chat_template=)")
        for m in messages:
            if not isinstance(m, dict) or "role" not in m:
                raise TypeError(f"apply_chat_template: each message must be a dict with a 'role', got {m!r}")
        if chat_template is None:
            if self._compiled is None:
                self._compiled = _compile_template(template)
            compiled = self._compiled
        else:
            compiled = _compile_template(template)
        variables = {**self.special_tokens, **kwargs}
        variables.setdefault("tools", None)
        variables.setdefault("documents", None)
        text = compiled.render(messages=messages, add_generation_prompt=add_generation_prompt, **variables)
        return self.encode(text, add_special_tokens=False) if tokenize else text

    def stream_decoder(self, skip_special_tokens: bool = True) -> StreamDecoder:
        """A :class:`StreamDecoder` over this tokenizer."""
        return StreamDecoder(self, skip_special_tokens)


def train_bpe_tokenizer(texts: Iterable[str], vocab_size: int,
                        special_tokens: tuple[str, ...] = CHATML_SPECIAL_TOKENS,
                        chat_template: str | None = CHATML_TEMPLATE) -> Tokenizer:
    """Train a byte-level BPE tokenizer (as GPT-2's and Qwen's) on an iterator of texts.

    Every byte is in the initial alphabet, so any text encodes without unknown tokens. The first special token
    becomes the EOS and padding token; the ChatML template makes the result usable with ``apply_chat_template``.

    Args:
        texts: training texts (whole documents or chunks).
        vocab_size: the size of the vocabulary, special tokens included.
        special_tokens: tokens added as single ids, never split.
        chat_template: the chat template stored with the tokenizer.
    """
    if vocab_size < 256 + len(special_tokens):
        raise ValueError(f"train_bpe_tokenizer: vocab_size must be at least {256 + len(special_tokens)} (the 256 "
                         f"bytes plus the special tokens), got {vocab_size}")
    backend = _HFTokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=list(special_tokens),
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    backend.train_from_iterator(texts, trainer=trainer)
    config: dict[str, Any] = {"model_max_length": 1 << 30, "clean_up_tokenization_spaces": False}
    if special_tokens:
        config["eos_token"] = special_tokens[0]
        config["pad_token"] = special_tokens[0]
    return Tokenizer(backend, config, chat_template)


class StreamDecoder:
    """Incremental detokenization: feed ids one at a time, get back the new text once it is valid UTF-8.

    Byte-level BPE splits multi-byte characters across tokens, and decoding a token alone can change how the
    previous ones read (leading spaces, merges). So the decoder keeps a window of recent ids, decodes it with and
    without the new ids, and emits only the difference, holding it back while it ends in an incomplete character
    (U+FFFD).
    """

    def __init__(self, tokenizer: Tokenizer, skip_special_tokens: bool = True) -> None:
        self.tokenizer = tokenizer
        self.skip_special_tokens = skip_special_tokens
        self.ids: list[int] = []
        self.prefix_offset = 0
        self.read_offset = 0

    def put(self, token_id: int) -> str:
        """Add one token id; returns the text it completes (possibly empty)."""
        self.ids.append(int(token_id))
        decode = self.tokenizer.decode
        prefix = decode(self.ids[self.prefix_offset:self.read_offset], self.skip_special_tokens)
        full = decode(self.ids[self.prefix_offset:], self.skip_special_tokens)
        if len(full) > len(prefix) and not full.endswith("\ufffd"):
            self.prefix_offset = self.read_offset
            self.read_offset = len(self.ids)
            return full[len(prefix):]
        return ""

    def flush(self) -> str:
        """The text still held back at the end of the stream (an incomplete character decodes as U+FFFD)."""
        decode = self.tokenizer.decode
        prefix = decode(self.ids[self.prefix_offset:self.read_offset], self.skip_special_tokens)
        full = decode(self.ids[self.prefix_offset:], self.skip_special_tokens)
        self.prefix_offset = self.read_offset = len(self.ids)
        return full[len(prefix):]
