"""Kill-and-resume: a wrapped run killed mid-way and resumed from its last snapshot writes the
same transcript, byte for byte, as the run that was never killed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from zkdv.errors import TranscriptError
from zkdv.transcript import read_records

HERE = Path(__file__).parent
ROOT = HERE.parents[1]
STEPS = 11


def _run(path: Path, kill_at: int, resume: bool) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, str(HERE / "resume_run.py"), str(path), str(STEPS), str(kill_at), "1" if resume else "0"],
        env=env, capture_output=True, text=True, timeout=600,
    )


def test_kill_and_resume_gives_the_same_transcript(tmp_path: Path) -> None:
    whole = _run(tmp_path / "whole", -1, False)
    assert whole.returncode == 0, whole.stderr
    killed = _run(tmp_path / "killed", 10, False)
    assert killed.returncode == -signal.SIGKILL
    records = tmp_path / "killed" / "records.cborl"
    # tear the last line as a kill in the middle of a write would
    data = records.read_bytes()
    records.write_bytes(data + data[-40:-1])
    resumed = _run(tmp_path / "killed", -1, True)
    assert resumed.returncode == 0, resumed.stderr
    # The resume starts at the last snapshot on disk (interval 4): step 8's, or step 4's when the
    # background writer had not finished step 8's before the kill. Either must give the same bytes.
    assert "resume_step 8" in resumed.stdout or "resume_step 4" in resumed.stdout, resumed.stdout
    assert records.read_bytes() == (tmp_path / "whole" / "records.cborl").read_bytes()
    types = [r["type"] for r, _ in read_records(records)]
    assert types.count("step") == STEPS and types[-1] == "close"
    # a tampered transcript is refused: two records swapped, a torn last line
    lines = records.read_bytes().split(b"\n")
    lines[2], lines[3] = lines[3], lines[2]
    records.write_bytes(b"\n".join(lines))
    with pytest.raises(TranscriptError, match="does not chain"):
        read_records(records)
    records.write_bytes(b"\n".join(lines)[:-1])
    with pytest.raises(TranscriptError):
        read_records(records)
