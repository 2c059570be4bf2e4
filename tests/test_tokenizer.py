"""genesis.tokenizer against transformers' AutoTokenizer on a byte-level BPE tokenizer built in the test."""

from __future__ import annotations

import json

import pytest

transformers = pytest.importorskip("transformers")

from genesis.tokenizer import CHATML_TEMPLATE, Tokenizer, train_bpe_tokenizer  # noqa: E402

CORPUS = [
    "The quick brown fox jumps over the lazy dog. " * 20,
    "def add(a, b):\n    return a + b\n\nprint(add(1, 2))\n" * 20,
    "Grüße aus München! Ça va? 你好，世界。 こんにちは 🙂🚀 " * 20,
]

# A Qwen2.5-style template: a default system turn, optional tools, ChatML turns.
QWEN_TEMPLATE = (
    "{%- if tools %}{{- '<|im_start|>system\\n' }}"
    "{%- if messages[0]['role'] == 'system' %}{{- messages[0]['content'] }}"
    "{%- else %}{{- 'You are a helpful assistant.' }}{%- endif %}"
    "{{- '\\n\\n# Tools\\n<tools>' }}{%- for tool in tools %}{{- '\\n' }}{{- tool | tojson }}{%- endfor %}"
    "{{- '\\n</tools><|im_end|>\\n' }}"
    "{%- else %}"
    "{%- if messages[0]['role'] == 'system' %}"
    "{{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}"
    "{%- else %}{{- '<|im_start|>system\\nYou are a helpful assistant.<|im_end|>\\n' }}{%- endif %}"
    "{%- endif %}"
    "{%- for message in messages %}"
    "{%- if (message.role == 'user') or (message.role == 'system' and not loop.first) or "
    "(message.role == 'assistant') %}"
    "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}"
    "{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)

CHATS = [
    [{"role": "user", "content": "Hello there"}],
    [{"role": "system", "content": "Be terse."}, {"role": "user", "content": "2+2?"},
     {"role": "assistant", "content": "4"}, {"role": "user", "content": "Grüße 🙂"}],
]

TEXTS = ["The quick brown fox", "  leading spaces and\ttabs\n\nnewlines", "Grüße 你好 🙂🚀",
         "<|im_start|>user\nhi<|im_end|>\n", "def f(x):\n    return x<|endoftext|>", ""]


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory: pytest.TempPathFactory):
    directory = tmp_path_factory.mktemp("tok")
    tok = train_bpe_tokenizer(CORPUS, vocab_size=400, chat_template=QWEN_TEMPLATE)
    tok.save_pretrained(directory)
    return directory


@pytest.fixture(scope="module")
def pair(tokenizer_dir):
    return Tokenizer.from_pretrained(tokenizer_dir), transformers.AutoTokenizer.from_pretrained(str(tokenizer_dir))


@pytest.mark.parametrize("text", TEXTS)
def test_encode_decode_match_transformers(pair, text: str) -> None:
    ours, ref = pair
    for add in (True, False):
        assert ours.encode(text, add_special_tokens=add) == ref(text, add_special_tokens=add)["input_ids"]
    ids = ref(text)["input_ids"]
    for skip in (False, True):
        assert ours.decode(ids, skip_special_tokens=skip) == ref.decode(ids, skip_special_tokens=skip)
    assert ours.decode(ids) == text


@pytest.mark.parametrize("chat", CHATS)
@pytest.mark.parametrize("add_generation_prompt", [False, True])
def test_chat_template_matches_transformers(pair, chat: list, add_generation_prompt: bool) -> None:
    ours, ref = pair
    text = ref.apply_chat_template(chat, add_generation_prompt=add_generation_prompt, tokenize=False)
    assert ours.apply_chat_template(chat, add_generation_prompt=add_generation_prompt, tokenize=False) == text
    ids = ref.apply_chat_template(chat, add_generation_prompt=add_generation_prompt, tokenize=True,
                                  return_dict=False)
    assert ours.apply_chat_template(chat, add_generation_prompt=add_generation_prompt) == list(ids)


def test_chat_template_with_tools_matches_transformers(pair) -> None:
    ours, ref = pair
    tools = [{"type": "function", "function": {"name": "get_weather", "description": "Wetter <heute>",
                                               "parameters": {"type": "object", "properties": {}}}}]
    chat = CHATS[0]
    expected = ref.apply_chat_template(chat, tools=tools, add_generation_prompt=True, tokenize=False)
    assert ours.apply_chat_template(chat, tools=tools, add_generation_prompt=True, tokenize=False) == expected


def test_special_tokens_match_transformers(pair) -> None:
    ours, ref = pair
    assert ours.eos_token == ref.eos_token == "<|endoftext|>"
    assert ours.eos_token_id == ref.eos_token_id
    assert ours.pad_token_id == ref.pad_token_id
    assert ours.vocab_size == len(ref)
    for token in ("<|im_start|>", "<|im_end|>"):
        assert ours.token_to_id(token) == ref.convert_tokens_to_ids(token)
    assert set(ours.all_special_ids) == set(ref.all_special_ids) | {ours.token_to_id("<|im_start|>"),
                                                                     ours.token_to_id("<|im_end|>")}


def test_chat_template_file_and_chatml_default(tokenizer_dir, tmp_path) -> None:
    # transformers writes the template to chat_template.jinja; it takes precedence over tokenizer_config.json.
    for name in ("tokenizer.json", "tokenizer_config.json"):
        (tmp_path / name).write_bytes((tokenizer_dir / name).read_bytes())
    (tmp_path / "chat_template.jinja").write_text(CHATML_TEMPLATE)
    ours = Tokenizer.from_pretrained(tmp_path)
    ref = transformers.AutoTokenizer.from_pretrained(str(tmp_path))
    chat = CHATS[1]
    assert ours.apply_chat_template(chat, tokenize=False) == ref.apply_chat_template(chat, tokenize=False)


def test_stream_decoder_yields_valid_utf8_pieces(pair) -> None:
    ours, _ = pair
    text = "Grüße aus München 你好 🙂🚀 done, 日本語 😀 Ωmega"
    ids = ours.encode(text)
    stream = ours.stream_decoder()
    pieces = [stream.put(i) for i in ids]
    pieces.append(stream.flush())
    assert "".join(pieces) == text
    assert all("\ufffd" not in p for p in pieces)
    # Multi-byte characters span several byte-level tokens, so some steps must have held text back.
    assert len(ids) > len([p for p in pieces if p])


def test_bad_inputs(tokenizer_dir, tmp_path, pair) -> None:
    ours, _ = pair
    with pytest.raises(FileNotFoundError, match="tokenizer.json"):
        Tokenizer.from_pretrained(tmp_path)
    (tmp_path / "tokenizer.json").write_text("{ not json")
    with pytest.raises(ValueError, match="tokenizer.json"):
        Tokenizer.from_pretrained(tmp_path)
    (tmp_path / "tokenizer.json").write_bytes((tokenizer_dir / "tokenizer.json").read_bytes())
    (tmp_path / "tokenizer_config.json").write_text("{ broken")
    with pytest.raises(ValueError, match="tokenizer_config.json"):
        Tokenizer.from_pretrained(tmp_path)
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"eos_token": "<|endoftext|>"}))
    with pytest.raises(ValueError, match="no chat template"):
        Tokenizer.from_pretrained(tmp_path).apply_chat_template(CHATS[0])
    with pytest.raises(IndexError, match="out of range"):
        ours.decode([ours.vocab_size])
    with pytest.raises(ValueError, match="vocab_size"):
        train_bpe_tokenizer(CORPUS, vocab_size=100)
