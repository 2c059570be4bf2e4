"""No module of ``genesis`` grows past ``MAX_LINES`` lines: a file that long usually holds two ideas (STYLE.md).

The one exception is the op registry (``genesis/ops/registry.py``): a table with one row per op, which reads best
in one place however many ops there are.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAX_LINES = 800
EXCEPTIONS = {"genesis/ops/registry.py"}


def test_no_module_exceeds_the_line_limit() -> None:
    long = {}
    for path in sorted((ROOT / "genesis").rglob("*.py")):
        name = path.relative_to(ROOT).as_posix()
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > MAX_LINES and name not in EXCEPTIONS:
            long[name] = lines
    assert not long, f"modules over {MAX_LINES} lines (split each by idea): {long}"


def test_the_exceptions_exist() -> None:
    for name in EXCEPTIONS:
        assert (ROOT / name).is_file(), f"{name} is listed as an exception but does not exist"
