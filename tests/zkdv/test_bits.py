"""The bits of the user's loop are the bits of the program: every step's committed post-state is
what the RepOps interpreter computes from the same pre-state and batch; checks catch a poisoned run."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch.nn import functional as F
from zkdv_cases import batch, make_proof, mlp, train_step

import zkdv
from trainer.commit import state_root
from trainer.interp import Interpreter
from trainer.repops import KERNELS, OpSpec
from zkdv.torch import batch_names
from zkdv.transcript import read_records


@pytest.mark.parametrize("optimizer", ["adamw", "sgd", "adam"])
def test_every_committed_post_state_is_the_interpreters(tmp_path: Path, optimizer: str) -> None:
    make = {
        "adamw": lambda ps: torch.optim.AdamW(ps, lr=1e-2),
        "sgd": lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9, weight_decay=1e-4),
        "adam": lambda ps: torch.optim.Adam(ps, lr=1e-2, weight_decay=1e-3),
    }[optimizer]
    proof, model, opt = make_proof(tmp_path / "p", optimizer=make)
    steps = 6
    for t in range(steps):
        train_step(proof, model, opt, t)
        if t == 0:
            assert proof.program is not None
            interp = Interpreter(proof.program)
            # the pre-state of step 0, rebuilt from the initial model (same seed) and a fresh optimizer state
            fresh = mlp()
            state = {f"param/{n}": p.detach().clone() for n, p in fresh.named_parameters()}
            state.update(proof._form.init_state({n: p.detach() for n, p in fresh.named_parameters()}))
    proof.close()
    records = [r for r, _ in read_records(tmp_path / "p" / "records.cborl") if r["type"] == "step"]
    assert len(records) == steps
    assert records[0]["pre"] == state_root(state)
    eager_torch_differs = False
    for t, rec in enumerate(records):
        x, y = batch(t)
        new_state, loss = interp.run(state, dict(zip(batch_names(2), (x, y), strict=True)))
        assert rec["post"] == state_root(new_state), f"step {t}"
        assert rec["loss"] == loss.to(torch.float32).reshape(1).numpy().tobytes()
        # torch's own kernels give other bits at some step: the comparison is not vacuous
        with torch.no_grad():
            params = {n.removeprefix("param/"): v for n, v in state.items() if n.startswith("param/")}
            plain = F.cross_entropy(torch.func.functional_call(mlp(), params, (x,)), y)
        eager_torch_differs |= plain.reshape(1).numpy().tobytes() != rec["loss"]
        state = new_state
    assert eager_torch_differs or optimizer != "adamw"


def _poisoned(
    tmp_path: Path, corrupt: bool, swap: bool, at: int = 5
) -> pytest.ExceptionInfo[zkdv.ZKDVPoisonedError]:
    proof, model, opt = make_proof(tmp_path / "p", policy=zkdv.SamplingPolicy.DEBUGCheckEvery(1),
                                   model=mlp(hidden=96))
    if swap:  # the eager side computes matrix products with torch's own kernel
        mm = torch.ops.aten.mm.default
        proof._kernels = {**KERNELS, "aten.mm.default": OpSpec("aten.mm.default", mm, mm, "swapped")}
    with pytest.raises(zkdv.ZKDVPoisonedError) as info:
        for t in range(8):
            if corrupt and t == at:
                with torch.no_grad():
                    model[0].weight.data[3, 4] += 1e-3
            train_step(proof, model, opt, t)
        proof.close()
    return info


def test_a_parameter_corrupted_between_steps_is_caught_and_named(tmp_path: Path) -> None:
    info = _poisoned(tmp_path, corrupt=True, swap=False)
    assert info.value.step == 5
    assert "param/0.weight" in info.value.detail and "between steps 4 and 5" in info.value.detail


def test_a_parameter_corrupted_right_before_a_replay_snapshot_is_caught(tmp_path: Path) -> None:
    """Step 4 takes a replay snapshot (interval 4): the checks of its window start from the corrupted state,
    so only comparing its pre-state with the post-state of step 3 catches the change."""
    info = _poisoned(tmp_path, corrupt=True, swap=False, at=4)
    assert info.value.step == 4
    assert "param/0.weight" in info.value.detail and "between steps 3 and 4" in info.value.detail


def test_a_kernel_swapped_for_torchs_own_is_caught(tmp_path: Path) -> None:
    info = _poisoned(tmp_path, corrupt=False, swap=True)
    assert info.value.step == 0
    assert "post-state" in info.value.detail and "param/" in info.value.detail


def test_poison_blocks_later_operations_and_close_reraises(tmp_path: Path) -> None:
    proof, model, opt = make_proof(tmp_path / "p", policy=zkdv.SamplingPolicy.DEBUGCheckEvery(1),
                                   model=mlp(hidden=96))
    mm = torch.ops.aten.mm.default
    proof._kernels = {**KERNELS, "aten.mm.default": OpSpec("aten.mm.default", mm, mm, "swapped")}
    train_step(proof, model, opt, 0)
    with pytest.raises(zkdv.ZKDVPoisonedError):
        proof.join()
    with pytest.raises(zkdv.ZKDVPoisonedError, match="step 0"):
        train_step(proof, model, opt, 1)
    with pytest.raises(zkdv.ZKDVPoisonedError):
        proof.close()
    recs = [r for r, _ in read_records(tmp_path / "p" / "records.cborl")]
    checks = [r for r in recs if r["type"] == "check"]
    assert checks and checks[0]["ok"] is False and recs[-1]["type"] == "close" and recs[-1]["failed"] == 1


def test_honest_run_passes_every_check(tmp_path: Path) -> None:
    proof, model, opt = make_proof(tmp_path / "p", policy=zkdv.SamplingPolicy.DEBUGCheckEvery(1), interval=3)
    for t in range(7):
        train_step(proof, model, opt, t)
    proof.close()
    recs = [r for r, _ in read_records(tmp_path / "p" / "records.cborl")]
    checks = [r for r in recs if r["type"] == "check"]
    assert [c["step"] for c in checks] == list(range(7)) and all(c["ok"] for c in checks)
    # at most N - 1 preceding transitions are replayed (N = 3): the base is the last multiple of 3
    assert [c["base"] for c in checks] == [0, 0, 0, 3, 3, 3, 6]
    assert [c["replayed"] for c in checks] == [1, 2, 3, 1, 2, 3, 1]


def test_a_snapshot_that_cannot_be_persisted_poisons_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from trainer.runner.snapshots import SnapshotStore

    def broken(self: SnapshotStore, state: object, root: object = None) -> bytes:
        raise OSError("disk full")

    monkeypatch.setattr(SnapshotStore, "put", broken)
    proof, model, opt = make_proof(tmp_path / "p")
    with pytest.raises(zkdv.ZKDVPoisonedError, match="disk full"):  # at the next operation or at close()
        for t in range(3):
            train_step(proof, model, opt, t)
        proof.close()
    with pytest.raises(zkdv.ZKDVPoisonedError, match="disk full"):
        proof.close()
