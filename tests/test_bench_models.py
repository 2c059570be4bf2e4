"""benchmark/bench_models.py in its ``--small`` mode on the CPU: every row runs in both libraries and the losses
of the two agree within the row's tolerance."""

from __future__ import annotations

import pytest

from benchmark import bench_models

KEYS = bench_models.MODEL_ROWS + bench_models.CPU_ROWS


@pytest.mark.parametrize("key", KEYS)
def test_row_runs_and_losses_agree(key: str) -> None:
    rows = bench_models.run([key], "cpu", small=True, steps=1)
    assert rows, f"no rows for {key}"
    for r in rows:
        assert r["status"] == "ok", (r["name"], r["note"], r["loss_rel_diff"])
        assert r["genesis"] > 0 and r["torch"] > 0 and r["ratio"] > 0
        assert len(r["genesis_losses"]) == len(r["torch_losses"]) == 2
        assert r["loss_rel_diff"] <= r["loss_tol"]


def test_cli_rejects_unknown_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.argv", ["bench_models.py", "--rows", "gpt2,nope", "--small"])
    with pytest.raises(SystemExit):
        bench_models.main()
