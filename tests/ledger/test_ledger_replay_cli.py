"""`refereed ledger verify-replay` in a separate process against a ledger published to a store:
every model root reproduced bit for bit, the first wrong block named, bad input refused."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from offchain.cli import app
from offchain.ledger.scenario import ScenarioConfig, run
from offchain.store.store import STATE, Store

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ScenarioConfig(steps=3, batch=16, validation_batch=32, shapley_every=2)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "offchain.cli", "ledger", *args], capture_output=True, text=True, env=env, timeout=600
    )


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory):
    folder = tmp_path_factory.mktemp("store")
    return folder, run(Store(folder), CONFIG)


def test_verify_replay_reproduces_every_model_root_in_another_process(published) -> None:
    folder, result = published
    proc = _cli("verify-replay", "0x" + result.head.hex(), "--store", str(folder))
    assert proc.returncode == 0, proc.stderr
    for b in result.blocks:
        assert f"block {b.step:>4}: model root 0x{b.model_root.hex()} reproduced" in proc.stdout
    assert f"ok: {CONFIG.steps} blocks" in proc.stdout


def test_a_block_built_on_a_wrong_state_is_named(tmp_path: Path) -> None:
    def tamper(step: int, state):
        if step != 2:
            return state
        bad = dict(state)
        key = next(k for k in bad if k.startswith("param/"))
        bad[key] = bad[key].clone()
        bad[key].view(-1)[0] += 1.0
        return bad

    result = run(Store(tmp_path), CONFIG, tamper=tamper)
    proc = _cli("verify-replay", result.head.hex(), "--store", str(tmp_path))
    assert proc.returncode == 1
    assert "block 3 does not reproduce" in proc.stderr
    assert "block    2: model root" in proc.stdout  # blocks 1 and 2 were checked first


def test_a_missing_contribution_is_named(published, tmp_path: Path) -> None:
    folder, result = published
    copy = tmp_path / "store"
    subprocess.run(["cp", "-r", str(folder), str(copy)], check=True)
    store = Store(copy)
    store.delete(STATE, result.blocks[0].gradient_commitments[1])
    runner = CliRunner()
    r = runner.invoke(app, ["ledger", "verify-replay", result.head.hex(), "--store", str(copy)])
    assert r.exit_code == 1
    assert "block 1 does not reproduce: its contributors differs" in r.output


def test_show_and_bad_heads(published) -> None:
    folder, result = published
    runner = CliRunner()
    r = runner.invoke(app, ["ledger", "show", result.head.hex(), "--store", str(folder), "--json"])
    assert r.exit_code == 0, r.output
    assert f'"model_id": "0x{result.genesis.model_id.hex()}"' in r.output
    r = runner.invoke(app, ["ledger", "show", result.head.hex(), "--store", str(folder), "--pool", "1.5"])
    assert r.exit_code == 0, r.output
    assert "payout tree:" in r.output and "total 1500000000000000000 wei" in r.output
    r = runner.invoke(app, ["ledger", "show", result.head.hex(), "--store", str(folder), "--pool", "nan"])
    assert r.exit_code == 2 and "--pool" in r.output and "finite decimal" in r.output
    r = runner.invoke(app, ["ledger", "verify-replay", "0x1234", "--store", str(folder)])
    assert r.exit_code == 2 and "HEAD must be 32 bytes" in r.output
    r = runner.invoke(app, ["ledger", "verify-replay", "ab" * 32, "--store", str(folder)])
    assert r.exit_code == 1 and "error:" in r.output


def test_the_figure_and_the_graph(published, tmp_path: Path) -> None:
    from fractions import Fraction

    from offchain.ledger.plot import plot
    from trainer.ledger.graph import attribution_graph, cumulative

    _, result = published
    blocks = result.blocks
    curves = cumulative(blocks)
    for did, ys in curves.items():
        want = Fraction(0)
        for b in blocks:
            i = b.contributors.index(did)
            want += Fraction(b.phi[i]) * Fraction(2) ** b.phi_exponent
        assert ys[-1] == want
    edges = attribution_graph(blocks)
    # Everyone contributes every step: c -> c' sums c's φ over every step but the last.
    for (a, _b), w in edges.items():
        phis = [Fraction(b.phi[b.contributors.index(a)]) * Fraction(2) ** b.phi_exponent for b in blocks[:-1]]
        assert w == sum(phis)
    png = plot(blocks, tmp_path / "attribution.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
