"""`./scripts/demo --ledger` end to end on anvil with a small T (the default is 24 steps): the report
gives each contributor Σφ, the exact-Shapley check on the sampled steps, payout, share, claimed and
gas; the balance checks hold and the figure is a PNG."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rich.console import Console

from offchain.ledger.demo import STEPS, run

pytestmark = pytest.mark.anvil
PNG = b"\x89PNG\r\n\x1a\n"


def test_the_ledger_demo_reports_attribution_shapley_and_payouts(tmp_path: Path) -> None:
    assert STEPS == 24
    console = Console(file=open(tmp_path / "log.txt", "w"), width=200)  # noqa: SIM115
    report = run(console, tmp_path, steps=2, shapley_every=1)
    assert all(report["checks"].values()) and not report["frozen"]
    assert json.loads((tmp_path / "report.json").read_text()) == json.loads(json.dumps(report))
    assert (tmp_path / "report.png").read_bytes()[:8] == PNG
    assert report["shapley_steps"] == [1, 2]  # shapley_every = 1: every step
    pool = report["pool_wei"]
    total = sum(c["payout_wei"] for c in report["contributors"]) + sum(b["fee_wei"] for b in report["builders"])
    assert total == pool
    for c in report["contributors"]:
        sc = c["shapley_check"]
        assert sc["steps"] == [1, 2] and c["claimed"] and c["share"] == c["payout_wei"] / pool
        assert sc["relative_error"] == abs(sc["phi_sum"] - sc["shapley_sum"]) / abs(sc["shapley_sum"])
        assert sc["spearman"] is None or -1 <= sc["spearman"] <= 1
    console.file.close()
    log = (tmp_path / "log.txt").read_text()
    assert "Σ Shapley" in log and "every balance change is payout minus gas" in log
