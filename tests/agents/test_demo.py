"""The demo end to end (`python -m offchain.demo --quick`), its report, and its argument checks."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from offchain.agents.scenario import JournalEntry, phases
from offchain.demo import main

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.mark.anvil
def test_the_quick_demo_catches_the_cheater_and_reports_it(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "offchain.demo", "--quick", "--cheat", "faulty-kernel", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    report = json.loads((tmp_path / "report.json").read_text())
    assert (tmp_path / "report.png").read_bytes()[:8] == PNG

    assert report["honest_won"] and all(report["checks"].values())
    assert report["cheat"]["name"] == "faulty-kernel" and report["cheat"]["summary"]
    assert report["trainers"] == {"honest-1": "honest", "honest-2": "honest", "cheater": "cheater"}
    assert report["eliminated"] == {"honest-1": False, "honest-2": False, "cheater": True}
    assert sorted(report["verdicts"].values()) == ["mismatch", "verified"]  # the client replayed both results
    assert report["verdicts"][str(report["winning_group"])] == "verified"
    w = report["workload"]
    assert (w["steps"], w["checkpoint_interval"], w["batch_size"]) == (32, 8, 16)

    # one game per honest trainer, each won by it at the step the cheat is at, each move seen on chain
    assert len(report["games"]) == 2
    for g in report["games"]:
        assert g["challenger"].startswith("honest") and g["defender"] == "cheater"
        assert g["outcome"] == "challenger_wins" and g["decided_by"] == "oracle" and g["phase"] == "oracle"
        assert g["isolated_step"] == 21 and g["node"] is not None
        sides = g["moves_by_side"]
        assert sides["defender"] + sides["challenger"] == g["moves"] <= 2 * g["round_bound"]
        assert report["rounds"][str(g["game_id"])]["moves"] == g["moves"]

    ref = report["recompute"]["referee"]
    oracles = {f"oracle-{i}" for i in range(1, 6)}
    # Every oracle runs each question's node once: one to answer it, the others to check the answer.
    assert ref["questions"] == 2 and ref["oracles"] == len(oracles) and set(ref["nodes_recomputed_by"]) == oracles
    assert ref["nodes_recomputed"] == sum(ref["nodes_recomputed_by"].values()) == 2 * len(oracles)
    assert ref["training_nodes"] == 32 * w["node_count"]
    assert ref["fraction"] == pytest.approx(ref["nodes_recomputed"] / ref["training_nodes"])
    assert len(ref["distinct_nodes"]) == 1  # both games end at the same node of the same step
    for name, t in report["recompute"]["trainers"].items():
        assert 0 < t["steps_replayed"] <= w["arity"] * w["checkpoint_interval"], name
        assert t["within_goal"]

    parties = {"client", "honest-1", "honest-2", "cheater", "watcher", *oracles}
    assert set(report["gas"]) == set(report["balances"]) == parties
    assert all(report["gas"][p]["gas"] > 0 for p in parties)
    kept = sum(
        int(report["balances"][o]["net_wei"]) + int(report["balances"][o]["held_by_contracts_wei"]) for o in oracles
    )
    assert kept > 0, "the oracles earn the fees (their bonds still staked count as theirs)"
    assert float(report["balances"]["honest-1"]["net_eth"]) > 0 > float(report["balances"]["cheater"]["net_eth"])
    assert report["warped_s"] > 0 and f"{report['warped_s']:,} s" in report["warped"]

    for phase in ("build", "chain", "deploy", "post", "join", "train", "submit", "dispute", "finalize"):
        assert report["phases_s"][phase] >= 0, phase
    assert report["dispute_s"] == report["phases_s"]["dispute"] < report["wall_s"]
    assert len(report["losses"]["honest-1"]) == 32
    kinds = {t["kind"] for t in report["timeline"]}
    assert {"open", "move", "oracle", "resolve", "settle"} <= kinds
    assert "summary" in proc.stdout and "honest trainers not eliminated" in proc.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--cheat", "no-such-cheat"], "is not in the catalogue"),
        (["--steps", "30", "--interval", "8"], "--interval must divide --steps"),
        (["--batch", "97"], "--batch be 1..96"),
    ],
)
def test_bad_demo_arguments_exit_2(args: list[str], message: str) -> None:
    demo = typer.Typer()
    demo.command()(main)
    result = CliRunner().invoke(demo, args)
    assert result.exit_code == 2 and message in result.stderr, result.output


def test_phases_come_from_the_journals() -> None:
    def tx(at: float, agent: str, fn: str) -> JournalEntry:
        return JournalEntry(at, agent, "tx", f"TaskMarket.{fn}", 1, 1, f"0x{at}")

    journal = [
        tx(101.0, "client", "postTask"),
        tx(102.0, "a", "join"),
        tx(103.0, "b", "join"),
        JournalEntry(110.0, "a", "note", "task 1: trained 32 steps, last loss 0.5", 0, 0, ""),
        JournalEntry(111.0, "b", "note", "task 1: trained 32 steps, last loss 0.5", 0, 0, ""),
        tx(112.0, "a", "submit"),
        tx(113.0, "b", "submit"),
        tx(114.0, "watcher", "openDispute"),
        tx(130.0, "client", "finalize"),
        tx(131.0, "a", "withdraw"),
    ]
    got = {p.name: (p.start, p.end) for p in phases(journal, 100.0, 140.0)}
    assert got == {
        "post": (0.0, 1.0),
        "join": (1.0, 3.0),
        "train": (3.0, 11.0),
        "submit": (11.0, 13.0),
        "dispute": (14.0, 31.0),
        "finalize": (30.0, 31.0),
    }
    assert "dispute" not in {p.name for p in phases([j for j in journal if j.function != "openDispute"], 100.0, 140.0)}


def test_the_command_line_keeps_the_quick_defaults_it_does_not_override() -> None:
    from offchain.demo import DemoConfig, config_from_options

    cfg = config_from_options(True, "faulty-kernel", None, None, None)
    assert cfg == DemoConfig.quick("faulty-kernel")
    assert cfg.client_samples == 4  # the quick demo's client replays every interval (it once fell back to 2)
    full = config_from_options(False, "none", 64, None, None)
    assert full.cheat is None and full.steps == 64 and full.client_samples == DemoConfig().client_samples


@pytest.mark.anvil
def test_the_quick_demo_says_the_element_phase_decided(tmp_path: Path) -> None:
    """With the ElementReferee bound, copy-then-diverge's faulty sub is decided on chain: the report and the
    summary say the element phase decided each game, and no oracle recomputed anything."""
    args = ["--quick", "--cheat", "copy-then-diverge", "--element-referee", "--out", str(tmp_path)]
    proc = subprocess.run(
        [sys.executable, "-m", "offchain.demo", *args],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["honest_won"] and all(report["checks"].values())
    assert len(report["games"]) == 2
    for g in report["games"]:
        assert g["outcome"] == "challenger_wins" and g["defender"] == "cheater", g
        assert (g["decided_by"], g["phase"], g["ended_in"]) == ("element phase", "element", "element"), g
        assert g["question_id"] is None and g["element_game"] and g["isolated_step"] == 31
        sides = g["moves_by_side"]
        assert sides["defender"] + sides["challenger"] > g["moves"], "the element game's moves were not seen"
    assert report["recompute"]["referee"]["nodes_recomputed"] == 0
    assert "no recomputation (decided on chain, without the oracle)" in proc.stdout
    assert "by element phase (element game" in proc.stdout
