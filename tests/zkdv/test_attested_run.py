"""A task trained through zkdv has the checkpoint roots of the task's program run by the RepOps
interpreter (trainer.runner.Runner): the eager loop's bits are the posted program's bits."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainer.commit import state_root
from trainer.interp import Interpreter
from trainer.runner.attested import AttestedRun, train_attested
from trainer.runner.runner import Runner
from trainer.workloads import char_transformer, mlp_digits
from zkdv.transcript import read_records


@pytest.mark.parametrize("make", [mlp_digits, char_transformer], ids=["mlp", "transformer"])
def test_zkdv_run_has_the_programs_checkpoint_roots(tmp_path: Path, make) -> None:  # type: ignore[no-untyped-def]
    w = make(steps=4, checkpoint_interval=2, batch_size=8)
    interp = Interpreter(w.program)
    want = Runner(interp.run, w.dataset, w.config, tmp_path / "runner").run(w.initial_state())
    run = AttestedRun(w.step, w.dataset, w.config, w.initial_state(), tmp_path / "zkdv", check_every=1)
    at_two = run.advance(2)  # interval by interval, as a trainer agent ticks
    assert state_root(at_two) == want.checkpoints[2]
    run.advance(4)
    got = run.close()
    assert got.checkpoints == want.checkpoints
    assert got.losses == want.losses
    checks = [r for r, _ in read_records(tmp_path / "zkdv" / "zkdv" / "records.cborl") if r["type"] == "check"]
    assert len(checks) == 4 and all(c["ok"] for c in checks)


def test_train_attested_is_advance_then_close(tmp_path: Path) -> None:
    w = mlp_digits(steps=2, checkpoint_interval=1, batch_size=4)
    got = train_attested(w.step, w.dataset, w.config, w.initial_state(), tmp_path, check_every=1)
    want = Runner(Interpreter(w.program).run, w.dataset, w.config, tmp_path / "runner").run(w.initial_state())
    assert got.checkpoints == want.checkpoints and sorted(got.losses) == [0, 1]
