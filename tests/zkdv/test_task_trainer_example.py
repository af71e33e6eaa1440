"""examples/torch/task_trainer.py: a user's own zkdv-wrapped script trains a posted task's program and imports
its checkpoints into a trainer agent's home, root for root the interpreter's run of the task."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from offchain.agents.db import AgentDB
from offchain.store import Store
from trainer.interp import Interpreter
from trainer.runner.runner import Runner
from trainer.workloads import mlp_digits

ROOT = Path(__file__).resolve().parents[2]


def test_the_task_trainer_example_imports_the_interpreters_checkpoints(tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    subprocess.run(
        [sys.executable, str(ROOT / "examples/torch/task_trainer.py"), "--out", str(tmp_path / "proof"),
         "--home", str(home), "--task-id", "7"],
        check=True, env=env, capture_output=True, timeout=600,
    )
    w = mlp_digits(steps=8, checkpoint_interval=4, batch_size=8, seed=11)
    want = Runner(Interpreter(w.program).run, w.dataset, w.config, tmp_path / "runner").run(w.initial_state())
    db = AgentDB(home / "agent.db")
    assert db.checkpoints(7) == want.checkpoints
    assert sorted(db.losses(7)) == list(range(8))
    store = Store(home / "store")
    for root in want.checkpoints.values():
        store.get_state(root)  # every checkpoint state is there, checked against its root
