"""The LLM apps end to end on tiny settings: pre-training, resuming, fine-tuning, chat, and their errors."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from tests.helpers import DEVICE, to_genesis, to_torch

transformers = pytest.importorskip("transformers")

import genesis  # noqa: E402
from apps.llm import chat, sft  # noqa: E402
from apps.llm import train as train_app  # noqa: E402
from genesis.models import AutoModelForCausalLM  # noqa: E402
from genesis.tokenizer import Tokenizer  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
TINY = ["--hidden-size", "32", "--layers", "1", "--heads", "2", "--kv-heads", "1", "--seq-len", "32",
        "--vocab-size", "300", "--batch-size", "2", "--grad-accum", "2", "--lr", "1e-2", "--warmup", "2",
        "--eval-every", "6", "--eval-batches", "2", "--log-every", "2", "--device", DEVICE]


def write_corpus(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    words = ["alpha", "beta", "gamma", "delta", "the", "cat", "sat", "on", "mat", "def", "return", "self"]
    rng = np.random.default_rng(0)
    for i in range(6):
        lines = [" ".join(rng.choice(words, 8)) for _ in range(60)]
        (folder / f"doc{i}.txt").write_text("\n".join(lines))
    return folder


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> tuple[Path, dict]:
    base = tmp_path_factory.mktemp("train")
    corpus = write_corpus(base / "corpus")
    result = train_app.run(train_app.build_parser().parse_args(
        [str(corpus), "--output", str(base / "out"), "--steps", "12", "--save-every", "6", *TINY,
         "--sample-tokens", "8"]))
    return base, result


def test_help_of_every_app(capsys) -> None:
    out = subprocess.run([sys.executable, str(ROOT / "apps/llm/train.py"), "--help"], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0 and "--stdlib" in out.stdout and "--grad-accum" in out.stdout
    for module, flag in [(sft, "--eval-data"), (chat, "--system")]:
        with pytest.raises(SystemExit) as exit_info:
            module.main(["--help"])
        assert exit_info.value.code == 0
        assert flag in capsys.readouterr().out


def test_pretraining_writes_a_hf_directory(trained) -> None:
    base, result = trained
    out = base / "out"
    for name in ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "loss.png",
                 "training.json", "checkpoint.safetensors"):
        assert (out / name).is_file(), name
    history = result["history"]
    assert history["step"][-1] == 12 and len(history["eval_loss"]) == 2
    assert history["loss"][-1] < history["loss"][0] - 0.5
    assert result["sample"].startswith("def ")
    # transformers reads the directory and computes the same logits.
    model = AutoModelForCausalLM.from_pretrained(out, device=DEVICE)
    ref = transformers.AutoModelForCausalLM.from_pretrained(out, attn_implementation="eager").eval()
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(out))
    ids = torch.tensor([tokenizer("the cat sat on the mat")["input_ids"]])
    with torch.no_grad():
        expected = ref(input_ids=ids).logits
    torch.testing.assert_close(to_torch(model(to_genesis(ids)).logits), expected, rtol=1e-4, atol=1e-5)


def test_resume_reproduces_the_uninterrupted_run(trained, tmp_path, monkeypatch) -> None:
    base, _ = trained
    flags = [str(base / "corpus"), "--output", str(tmp_path), "--steps", "12", "--save-every", "6", *TINY,
             "--sample-tokens", "0"]
    original = train_app.PackedData.batch

    def interrupted(self, step: int, micro: int):
        if step == 8:
            raise KeyboardInterrupt
        return original(self, step, micro)

    monkeypatch.setattr(train_app.PackedData, "batch", interrupted)
    with pytest.raises(KeyboardInterrupt):
        train_app.run(train_app.build_parser().parse_args(flags))
    monkeypatch.setattr(train_app.PackedData, "batch", original)
    train_app.run(train_app.build_parser().parse_args([*flags, "--resume"]))
    resumed = AutoModelForCausalLM.from_pretrained(tmp_path).state_dict()
    uninterrupted = AutoModelForCausalLM.from_pretrained(base / "out").state_dict()
    for name, value in uninterrupted.items():
        assert np.array_equal(resumed[name].numpy(), value.numpy()), name
    history = json.loads((tmp_path / "training.json").read_text())["history"]
    assert history["step"] == list(range(2, 13, 2))


def test_training_errors(tmp_path, capsys) -> None:
    assert train_app.main([str(tmp_path / "nope"), "--output", str(tmp_path / "o")]) == 2
    assert "no such file or folder" in capsys.readouterr().err
    assert train_app.main(["--output", str(tmp_path / "o")]) == 2
    assert "--stdlib" in capsys.readouterr().err
    (tmp_path / "small.txt").write_text("tiny")
    assert train_app.main([str(tmp_path / "small.txt"), "--output", str(tmp_path / "o"), *TINY]) == 2
    assert "too small" in capsys.readouterr().err
    assert train_app.main([str(tmp_path / "small.txt"), "--output", str(tmp_path / "o"), "--steps", "0"]) == 2
    assert "--steps" in capsys.readouterr().err
    assert train_app.main([str(tmp_path / "small.txt"), "--output", str(tmp_path / "o"), "--resume", *TINY]) == 2


def test_sft_scores_assistant_tokens_only(trained) -> None:
    base, _ = trained
    tokenizer = Tokenizer.from_pretrained(base / "out")
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "the cat"},
                {"role": "assistant", "content": "sat on"}, {"role": "user", "content": "the"},
                {"role": "assistant", "content": "mat"}]
    ids, labels = sft.encode_conversation(tokenizer, messages, 1000)
    assert ids == tokenizer.apply_chat_template(messages)
    kept = [t for t in labels if t != -100]
    assert tokenizer.decode(kept) == "sat on<|im_end|>\nmat<|im_end|>\n"
    ids, labels = sft.encode_conversation(tokenizer, messages, 10)
    assert len(ids) == len(labels) == 10


def test_sft_then_chat(trained, tmp_path, capsys) -> None:
    base, _ = trained
    data = tmp_path / "chat.jsonl"
    rows = [{"messages": [{"role": "user", "content": f"say {w}"}, {"role": "assistant", "content": w}]}
            for w in ["alpha", "beta", "gamma", "delta"] * 5]
    data.write_text("\n".join(json.dumps(r) for r in rows))
    out = tmp_path / "sft"
    assert sft.main([str(base / "out"), str(data), "--output", str(out), "--steps", "10", "--batch-size", "4",
                     "--lr", "1e-2", "--warmup", "1", "--eval-every", "5", "--log-every", "2", "--device", DEVICE]) == 0
    summary = json.loads((out / "training.json").read_text())
    assert summary["history"]["loss"][-1] < summary["history"]["loss"][0]
    assert (out / "model.safetensors").is_file() and (out / "loss.png").is_file()
    capsys.readouterr()
    stdout = io.StringIO()
    assert chat.main([str(out), "--prompt", "say beta", "--temperature", "0", "--max-new-tokens", "6",
                      "--device", DEVICE], stdout=stdout) == 0
    assert stdout.getvalue().endswith("\n")
    stdin = io.StringIO("say alpha\n/reset\nsay gamma\n/exit\n")
    stdout = io.StringIO()
    assert chat.main([str(out), "--system", "Be brief.", "--max-new-tokens", "4", "--seed", "0", "--device", DEVICE],
                     stdin=stdin, stdout=stdout) == 0
    text = stdout.getvalue()
    assert "(history cleared)" in text and text.count("> ") == 4


def test_sft_and_chat_errors(trained, tmp_path, capsys) -> None:
    base, _ = trained
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]}\n'
                   "{oops\n")
    assert sft.main([str(base / "out"), str(bad), "--output", str(tmp_path / "o")]) == 2
    assert "bad.jsonl:2" in capsys.readouterr().err
    bad.write_text('{"messages": [{"role": "user", "content": "hi"}]}\n')
    assert sft.main([str(base / "out"), str(bad), "--output", str(tmp_path / "o")]) == 2
    assert "no assistant message" in capsys.readouterr().err
    assert chat.main([str(tmp_path / "missing"), "--prompt", "hi"]) == 2
    assert "tokenizer.json" in capsys.readouterr().err
    assert chat.main([str(base / "out"), "--prompt", "hi", "--top-p", "2"]) == 2
    assert "top_p" in capsys.readouterr().err


def test_demo_runs_end_to_end(tmp_path, capsys) -> None:
    import examples.demo as demo

    assert demo.main(["--steps", "3", "--max-mb", "0.2", "--output", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "training loss" in out and "--- sample" in out
    assert (tmp_path / "loss.png").is_file() and (tmp_path / "model.safetensors").is_file()


def test_pretraining_under_the_launcher(tmp_path) -> None:
    # Two ranks on one machine (gloo on the CPU, NCCL with GENESIS_TEST_DEVICE=cuda and two GPUs): rank 0 alone
    # logs and writes the results; both join and leave the job.
    if DEVICE == "cuda" and genesis.cuda.device_count() < 2:
        pytest.skip("needs at least 2 GPUs on cuda")
    corpus = write_corpus(tmp_path / "corpus")
    out = tmp_path / "out"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    result = subprocess.run(
        [sys.executable, "-m", "genesis.distributed.run", "--nproc-per-node", "2", "--master-port", "0",
         str(ROOT / "apps/llm/train.py"), str(corpus), "--output", str(out), "--steps", "4", "--save-every", "2",
         *TINY, "--sample-tokens", "0"], env=env, capture_output=True, text=True, timeout=240)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "[rank0]:saved to" in result.stdout and "[rank1]:saved to" not in result.stdout
    assert "[rank1]:corpus" not in result.stdout
    summary = json.loads((out / "training.json").read_text())
    assert summary["history"]["step"] == [2, 4] and (out / "model.safetensors").is_file()
