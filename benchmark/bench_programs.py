"""Whole PyTorch programs timed under torch and under Genesis: where a user's program is slow, program by program.

Each program (by default every script of ``tests/compat_scripts``: plain torch programs of many kinds) runs with
real torch, and with its ``torch`` imports on Genesis (``genesis.torch_compat.run``), all of one library's programs
in one process of their own. With ``--device cuda`` the library's default device is set to cuda first
(``set_default_device``), so the tensors a program creates without naming a device live on the GPU. Each program
runs ``--runs`` times (the first pays one-time costs: kernel compilation, plan caches) and the fastest later run is
kept. Rows: ``{name, genesis, torch, unit: "s", ratio, goal}`` with ``ratio`` = torch's time / Genesis's (>= 1.0:
Genesis is as fast), sorted slowest ratio first: the top of the table is where to look. A program that fails under
either library is listed after the table with its error, and its row has no ratio.

    python benchmark/bench_programs.py [--device cuda] [--runs 3] [--json PATH] [PROGRAM.py ...]
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from benchmark.common import print_table, row, write_json  # noqa: E402

# One library's runs of the programs, in a process of its own (one start-up for all); prints, per program, a JSON
# line with the seconds of each run or the error. The library's global settings are put back after each program.
# A program that leaves the GPU unusable (a device-side assert ends the CUDA context) ends the process: the
# remaining programs go to a new one.
_WORKER = """
import json, os, runpy, sys, time
lib, device, runs, scripts = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
if lib == "torch":
    import torch as module
    go = lambda script: runpy.run_path(script, run_name="__main__")
else:
    import genesis as module
    from genesis import torch_compat
    go = lambda script: torch_compat.run(script, [])
sync = module.cuda.synchronize if device.startswith("cuda") else (lambda: None)
for script in scripts:
    sys.argv, folder = [script], os.path.dirname(script)
    sys.path.insert(0, folder)
    os.chdir(folder)
    result = {"times": []}
    try:
        for _ in range(runs):
            if device != "cpu":
                module.set_default_device(device)
            start = time.perf_counter()
            go(script)
            sync()
            result["times"].append(time.perf_counter() - start)
    except BaseException as error:
        result = {"error": f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"[:200]}
    print("@@" + json.dumps(result), flush=True)
    if "device-side assert" in result.get("error", "") or "CUDA error" in result.get("error", ""):
        sys.exit(3)
    module.set_default_device(None)
    module.set_default_dtype(module.float32)
    module.set_grad_enabled(True)
    sys.path.remove(folder)
"""


def time_programs(scripts: list[str], lib: str, device: str, runs: int, timeout: float) -> list[tuple]:
    """Per program: (fastest run after the first, in seconds, or None; the error when the program failed)."""
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    deadline = time.monotonic() + timeout
    timed: list[tuple] = []
    while len(timed) < len(scripts):
        rest = scripts[len(timed):]
        try:
            done = subprocess.run([sys.executable, "-c", _WORKER, lib, device, str(runs), *rest], capture_output=True,
                                  text=True, timeout=max(1.0, deadline - time.monotonic()), env=env)
        except subprocess.TimeoutExpired as expired:
            out = expired.stdout.decode() if isinstance(expired.stdout, bytes) else (expired.stdout or "")
            timed += _results(out)
            return timed + [(None, f"timed out after {timeout:.0f} s")] * (len(scripts) - len(timed))
        results = _results(done.stdout)
        timed += results
        if len(results) < len(rest):  # the process died in a program: that one failed, the rest go on
            tail = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
            timed.append((None, tail))
    return timed


def _results(stdout: str) -> list[tuple]:
    results = [json.loads(line[2:]) for line in stdout.splitlines() if line.startswith("@@")]
    return [(min(r["times"][1:] or r["times"]), "") if "times" in r else (None, r["error"]) for r in results]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("programs", nargs="*", help="program files (default: tests/compat_scripts/*.py)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--runs", type=int, default=3, help="runs per library and program; the first is not kept")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds per library for all the programs")
    parser.add_argument("--json", default=None, help="write the rows as JSON to this path")
    args = parser.parse_args()
    programs = args.programs or sorted(glob.glob(os.path.join(ROOT, "tests", "compat_scripts", "*.py")))
    programs = [os.path.abspath(p) for p in programs]
    torch_times = time_programs(programs, "torch", args.device, args.runs, args.timeout)
    genesis_times = time_programs(programs, "genesis", args.device, args.runs, args.timeout)
    rows, failures = [], []
    for script, (t, t_err), (g, g_err) in zip(programs, torch_times, genesis_times):
        name = os.path.relpath(script, ROOT)
        if t is None or g is None:
            failures.append({**row(name, g, t, "s", None, ">= 1.0"),
                             "note": f"torch: {t_err}" if t is None else f"genesis: {g_err}"})
            continue
        rows.append(row(name, g, t, "s", t / g, ">= 1.0"))
    rows.sort(key=lambda r: r["ratio"])
    print_table(rows)
    for r in failures:
        print(f"{r['name']}: failed ({r['note']})")
    write_json(rows + failures, args.json)


if __name__ == "__main__":
    main()
