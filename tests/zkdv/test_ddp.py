"""DDP with gloo, two CPU processes: each rank commits its rank-local batch and state; the
ranks' transcripts agree on the global update; every sampled check (each step) passes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from zkdv.transcript import read_records

HERE = Path(__file__).parent
ROOT = HERE.parents[1]
STEPS = 4


def test_two_ranks_agree_on_the_global_update(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, str(HERE / "ddp_run.py"), str(tmp_path), str(STEPS)], env=env,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-4000:]
    ranks = [[r for r, _ in read_records(tmp_path / "proof" / f"rank{k}" / "records.cborl")] for k in range(2)]
    for k, recs in enumerate(ranks):
        assert recs[0]["world"] == {"rank": k, "size": 2}
        checks = [r for r in recs if r["type"] == "check"]
        assert len(checks) == STEPS and all(c["ok"] for c in checks), checks
    steps = [[r for r in recs if r["type"] == "step"] for recs in ranks]
    assert ranks[0][0]["program"] == ranks[1][0]["program"]
    for a, b in zip(*steps, strict=True):
        assert a["batch"]["root"] != b["batch"]["root"]  # rank-local batches
        assert a["global_batch"] == b["global_batch"]
        assert a["pre"] == b["pre"] and a["post"] == b["post"] and a["update"] == b["update"]
        assert a["loss"] != b["loss"]  # rank-local losses
    assert steps[0][0]["pre"] != steps[0][-1]["post"]
