"""The seed's Torch quick start runs (on the CPU) and leaves a transcript."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from zkdv.transcript import read_records

HERE = Path(__file__).parent
ROOT = HERE.parents[1]


def test_quickstart_runs_as_written(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, str(HERE / "quickstart.py")], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    records = [r for r, _ in read_records(tmp_path / "proof" / "records.cborl")]
    assert [r["type"] for r in records] == ["root", "step", "close"]
    root = records[0]
    assert root["prover"] == "whitebox-torch"
    assert root["config"]["rolling_window"] == 32 and root["config"]["probe_ratio"] == 0.01
    assert root["optimizer"]["kind"] == "adamw"
    assert len(root["program"]["artifact_sha256"]) == 32
    import hashlib
    assert hashlib.sha256((tmp_path / "proof" / "program.onnx").read_bytes()).digest() == root["program"][
        "artifact_sha256"]
    assert records[1]["pre"] != records[1]["post"]
