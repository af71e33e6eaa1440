"""Runner mechanics with a small eager step (bitwise claims about RepOps live in tests/repops)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from trainer.commit import state_root, verify
from trainer.data.dataset import Dataset
from trainer.runner.runner import RunConfig, RunError, Runner, checkpoint_leaf
from trainer.runner.snapshots import SnapshotError, SnapshotStore


def toy_dataset() -> Dataset:
    g = torch.Generator().manual_seed(0)
    xs = torch.randn(50, 4, generator=g)
    ys = (xs.sum(1) > 0).to(torch.int64)
    return Dataset("toy", [{"x": xs[i].clone(), "y": ys[i].clone()} for i in range(50)])


def step(
    state: dict[str, torch.Tensor], batch: dict[str, torch.Tensor]
) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
    w = state["w"].clone().requires_grad_(True)
    loss = torch.nn.functional.cross_entropy(batch["x"] @ w, batch["y"])
    (g,) = torch.autograd.grad(loss, [w])
    return {"w": (w - 0.1 * g).detach()}, loss.detach()


INIT = {"w": torch.linspace(-0.5, 0.5, 8).reshape(4, 2)}
CFG = RunConfig(steps=12, checkpoint_interval=4, batch_size=8, seed=11)


def test_two_runs_same_roots_and_checkpoint_openings(tmp_path: Path) -> None:
    a = Runner(step, toy_dataset(), CFG, tmp_path / "a").run(INIT)
    b = Runner(step, toy_dataset(), CFG, tmp_path / "b").run(INIT)
    assert a.checkpoints == b.checkpoints and sorted(a.checkpoints) == [0, 4, 8, 12]
    assert a.losses[11] < a.losses[0]
    tree = a.tree()
    for i, s in enumerate(sorted(a.checkpoints)):
        verify(a.checkpoint_list_root, 4, i, checkpoint_leaf(s, a.checkpoints[s]), tree.open(i).siblings)


def test_resume_and_replay_give_the_same_roots(tmp_path: Path) -> None:
    runner = Runner(step, toy_dataset(), CFG, tmp_path)
    full = runner.run(INIT)
    resumed = runner.resume_from(4, full.checkpoints[4])
    assert resumed.final_root == full.final_root
    # replay step 9 from checkpoint 8, and step 11 from checkpoint 8, match a fresh run's states
    root_after_11, _ = runner.replay(11, full.checkpoints[8])
    assert root_after_11 == full.final_root


def test_killed_run_resumes_from_its_journal(tmp_path: Path) -> None:
    calls = {"n": 0}

    def dying(state: dict[str, torch.Tensor], batch: dict[str, torch.Tensor]):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        if calls["n"] == 7:
            raise KeyboardInterrupt
        return step(state, batch)

    with pytest.raises(KeyboardInterrupt):
        Runner(dying, toy_dataset(), CFG, tmp_path).run(INIT)
    resumed = Runner(step, toy_dataset(), CFG, tmp_path).run(INIT, resume=True)
    fresh = Runner(step, toy_dataset(), CFG, tmp_path / "fresh").run(INIT)
    assert resumed.checkpoints == fresh.checkpoints


def test_one_ulp_in_the_initial_state_changes_the_final_root(tmp_path: Path) -> None:
    nudged = {"w": INIT["w"].clone()}
    nudged["w"].view(torch.int32)[1, 1] += 1
    a = Runner(step, toy_dataset(), CFG, tmp_path / "a").run(INIT)
    b = Runner(step, toy_dataset(), CFG, tmp_path / "b").run(nudged)
    assert a.final_root != b.final_root


def test_bad_configs_are_refused() -> None:
    with pytest.raises(RunError, match="multiple"):
        RunConfig(steps=10, checkpoint_interval=4, batch_size=1, seed=0)
    with pytest.raises(RunError, match="positive"):
        RunConfig(steps=0, checkpoint_interval=1, batch_size=1, seed=0)


def test_corrupt_and_missing_snapshots_are_errors(tmp_path: Path) -> None:
    store = SnapshotStore(tmp_path)
    root = store.put({"w": torch.ones(3)})
    assert state_root(store.get(root)) == root
    with pytest.raises(SnapshotError, match="no snapshot"):
        store.get(bytes(32))
    other = store.put({"w": torch.zeros(3)})
    store.path(other).replace(store.path(root))  # a swapped file
    with pytest.raises(SnapshotError, match="corrupt"):
        store.get(root)
    store.path(root).write_bytes(b"garbage")
    with pytest.raises(SnapshotError, match="unreadable"):
        store.get(root)
    with pytest.raises(SnapshotError, match="not the claimed"):
        store.put({"w": torch.ones(3)}, root=bytes(32))
