"""Qwen in Genesis against transformers eager, side by side in one process on the same random weights.

Default shape: Qwen2.5-0.5B (hidden 896, 24 layers, 14 heads, 2 KV heads, intermediate 4864, vocab 151936, tied
embeddings, rope_theta 1e6) in bf16. Rows (``ratio`` as stated per row, the issue's goal beside it):

- ``train_step``: forward + backward + AdamW at batch 4 x 1024, tokens/s; ratio = Genesis / torch (goal >= 1.0).
- ``train_peak_memory``: peak device memory of the training step, GiB; ratio = Genesis / torch (goal <= 1.0).
- ``prefill_512``: latency of a 512-token prompt into an empty KV cache (one eager model call), ms; ratio =
  Genesis / torch (goal <= 0.5).
- ``first_token_512``: latency of ``generate(max_new_tokens=1)`` on that prompt (prefill plus the first token as a
  user meets it; on cuda Genesis replays its captured prompt graph), ms; ratio = Genesis / torch.
- ``greedy_decode``: greedy generation of new tokens after a 32-token prompt, tokens/s; ratio = Genesis / torch
  (goal >= 5).

    python benchmark/bench_qwen.py --device cuda --json benchmark/results/h100-2026-11-26-qwen.json
    python benchmark/bench_qwen.py --small            # a tiny model on the CPU, to check the script itself
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from typing import Any

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import genesis
from benchmark.common import QWEN25_05B, QWEN_SMALL, print_table, row, timed, write_json
from genesis.models import AutoModelForCausalLM


def build(shape: dict, dtype: torch.dtype, device: str, folder: str) -> tuple[torch.nn.Module, Any]:
    """transformers' model with random weights and Genesis's copy of it (through a saved HF directory)."""
    import transformers

    torch.manual_seed(0)
    config = transformers.Qwen2Config(**shape)
    ref = transformers.AutoModelForCausalLM.from_config(config, attn_implementation="eager", dtype=dtype)
    ref.save_pretrained(folder)
    ref = ref.to(device)
    ours = AutoModelForCausalLM.from_pretrained(folder, dtype=str(dtype).replace("torch.", ""), device=device)
    return ref, ours


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--small", action="store_true", help="tiny model and sizes (for a CPU check)")
    parser.add_argument("--dtype", default=None, help="bfloat16 (default on cuda) or float32 (default on cpu)")
    parser.add_argument("--json", default=None, help="write the rows to this file")
    args = parser.parse_args()
    dtype = getattr(torch, args.dtype or ("bfloat16" if args.device.startswith("cuda") else "float32"))
    shape = QWEN_SMALL if args.small else QWEN25_05B
    batch, seq, prefill, prompt, new_tokens = (2, 64, 32, 8, 16) if args.small else (4, 1024, 512, 32, 128)
    warmup, repeat = (1, 3) if args.small else (2, 5)
    cuda = args.device.startswith("cuda")

    def sync() -> None:
        if cuda:
            torch.cuda.synchronize()
            genesis.synchronize(args.device)

    rows = []
    with tempfile.TemporaryDirectory() as folder:
        ref, ours = build(shape, dtype, args.device, folder)
    vocab = shape["vocab_size"]
    ids_t = torch.randint(0, vocab, (batch, seq), device=args.device)
    ids_g = genesis.tensor(ids_t.cpu().numpy(), device=args.device)

    # Training step: forward + backward + AdamW.
    ref.train()
    ours.train()
    opt_t = torch.optim.AdamW(ref.parameters(), lr=1e-5)
    opt_g = genesis.optim.AdamW(ours.parameters(), lr=1e-5)

    def step_torch() -> None:
        ref(input_ids=ids_t, labels=ids_t).loss.backward()
        opt_t.step()
        opt_t.zero_grad(set_to_none=True)

    def step_genesis() -> None:
        ours(ids_g, labels=ids_g).loss.backward()
        opt_g.step()
        opt_g.zero_grad(set_to_none=True)

    if cuda:
        torch.cuda.reset_peak_memory_stats()
    t_torch = timed(step_torch, sync, warmup, repeat)
    peak_torch = torch.cuda.max_memory_allocated() / 2**30 if cuda else 0.0
    if cuda and hasattr(genesis.cuda, "reset_peak_memory_stats"):
        genesis.cuda.reset_peak_memory_stats()
    t_genesis = timed(step_genesis, sync, warmup, repeat)
    tokens = batch * seq
    rows.append(row(f"train_step_{batch}x{seq}", tokens / t_genesis, tokens / t_torch, "tok/s",
                    t_torch / t_genesis, ">= 1.0"))
    if cuda and hasattr(genesis.cuda, "max_memory_allocated"):
        peak_genesis = genesis.cuda.max_memory_allocated() / 2**30
        rows.append(row("train_peak_memory", peak_genesis, peak_torch, "GiB", peak_genesis / peak_torch, "<= 1.0"))
    ref.eval()
    ours.eval()
    ref.zero_grad(set_to_none=True)
    ours.zero_grad(set_to_none=True)

    # Prefill: a prompt into an empty KV cache, logits of the last position only (as generate does).
    import transformers

    pre_t = ids_t[:1, :prefill]
    pre_g = ids_g[:1, :prefill]

    def prefill_torch() -> None:
        with torch.no_grad():
            cache = transformers.DynamicCache(config=ref.config)
            ref(input_ids=pre_t, past_key_values=cache, use_cache=True, logits_to_keep=1)

    def prefill_genesis() -> None:
        with genesis.no_grad():
            ours(pre_g, cache=ours.new_cache(1, prefill), logits_to_keep=1)

    t_torch = timed(prefill_torch, sync, warmup, repeat)
    t_genesis = timed(prefill_genesis, sync, warmup, repeat)
    rows.append(row(f"prefill_{prefill}", t_genesis * 1e3, t_torch * 1e3, "ms", t_genesis / t_torch, "<= 0.5"))

    # Time to the first token: generate(max_new_tokens=1) on the same prompt (the prefill as users meet it;
    # Genesis replays its captured prompt graph on cuda).
    def first_torch() -> None:
        with torch.no_grad():
            ref.generate(input_ids=pre_t, max_new_tokens=1, do_sample=False, pad_token_id=0)

    def first_genesis() -> None:
        ours.generate(pre_g, max_new_tokens=1, eos_token_id=None, pad_token_id=0)

    t_torch = timed(first_torch, sync, warmup, repeat)
    t_genesis = timed(first_genesis, sync, warmup, repeat)
    rows.append(row(f"first_token_{prefill}", t_genesis * 1e3, t_torch * 1e3, "ms", t_genesis / t_torch, "<= 0.5"))

    # Greedy decoding: the same prompt, a fixed number of new tokens (no EOS stop).
    gen_t = ids_t[:1, :prompt]
    gen_g = ids_g[:1, :prompt]

    def decode_torch() -> None:
        with torch.no_grad():
            ref.generate(input_ids=gen_t, max_new_tokens=new_tokens, min_new_tokens=new_tokens, do_sample=False,
                         pad_token_id=0)

    def decode_genesis() -> None:
        ours.generate(gen_g, max_new_tokens=new_tokens, eos_token_id=None, pad_token_id=0)

    t_torch = timed(decode_torch, sync, 1, max(1, repeat // 2))
    t_genesis = timed(decode_genesis, sync, 1, max(1, repeat // 2))
    rows.append(row(f"greedy_decode_{new_tokens}", new_tokens / t_genesis, new_tokens / t_torch, "tok/s",
                    t_torch / t_genesis, ">= 5.0"))
    print(f"device {args.device}, dtype {dtype}, model {'small' if args.small else 'Qwen2.5-0.5B shape'}")
    print_table(rows)
    write_json(rows, args.json)


if __name__ == "__main__":
    main()
