"""Where the host time of Genesis's Qwen prefill and decode goes: cProfile of each, Genesis alone.

Builds a randomly initialized Qwen2.5-0.5B-shaped model (see bench_qwen.py) and prints, for a 512-token prefill and
for greedy decoding, the wall time per call and the functions with the most cumulative and own time.

    python benchmark/profile_qwen.py --device cuda [--out DIR]
    python benchmark/profile_qwen.py --small          # a tiny model on the CPU, to check the script itself
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import sys
import time
from typing import Any, Callable

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import genesis
from benchmark.common import QWEN25_05B, QWEN_SMALL
from genesis.models import AutoModelForCausalLM, Qwen2Config


def profile(name: str, fn: Callable[[], Any], sync: Callable[[], None], repeat: int, out: str | None) -> None:
    fn()
    sync()
    start = time.perf_counter()
    for _ in range(repeat):
        fn()
    sync()
    per_call = (time.perf_counter() - start) / repeat
    prof = cProfile.Profile()
    prof.enable()
    fn()
    sync()
    prof.disable()
    text = io.StringIO()
    stats = pstats.Stats(prof, stream=text)
    stats.sort_stats("cumulative").print_stats(35)
    stats.sort_stats("tottime").print_stats(35)
    print(f"==== {name}: {per_call * 1e3:.2f} ms per call")
    print(text.getvalue())
    if out:
        stats.dump_stats(os.path.join(out, f"{name}.pstats"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="cuda" if genesis.cuda.is_available() else "cpu")
    parser.add_argument("--small", action="store_true")
    parser.add_argument("--out", default=None, help="folder for the .pstats files")
    args = parser.parse_args()
    shape = QWEN_SMALL if args.small else QWEN25_05B
    dtype = genesis.bfloat16 if args.device.startswith("cuda") else genesis.float32
    model = AutoModelForCausalLM.from_config(Qwen2Config(**shape), dtype=dtype, device=args.device)
    model.eval()
    prefill, prompt, new_tokens = (32, 8, 16) if args.small else (512, 32, 64)
    ids = genesis.randint(0, shape["vocab_size"], (1, prefill), device=args.device)

    def sync() -> None:
        genesis.synchronize(args.device) if args.device.startswith("cuda") else None

    def run_prefill() -> None:
        with genesis.no_grad():
            model(ids, cache=model.new_cache(1, prefill), logits_to_keep=1)

    def run_decode() -> None:
        model.generate(ids[:, :prompt], max_new_tokens=new_tokens, eos_token_id=None, pad_token_id=0)

    profile("prefill", run_prefill, sync, 5, args.out)
    profile("decode", run_decode, sync, 2, args.out)
    print(f"decode: {new_tokens} new tokens per call")


if __name__ == "__main__":
    main()
