"""The trainer agent trains a bundled workload through zkdv (docs/zkdv.md section 10).

One scenario, two trainers on a two-slot task of the MLP workload:

- alice (honest, zkdv) is killed in the middle of her second checkpoint interval; the fresh agent resumes
  her zkdv run from the transcript's last replay snapshot, and what she commits and reveals are, root for
  root, the checkpoints of the posted program run by the RepOps interpreter;
- mallory (honest strategy, but her machine computes matrix products with torch's own kernel instead of the
  RepOps one) is caught by zkdv's sampled check: `close()` (or the next transaction) raises
  `ZKDVPoisonedError`, and she does not commit.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import pytest
import torch
from recorder import Events

from offchain.agents.base import AgentCrashed, Tick
from offchain.agents.client import TaskOrder
from offchain.agents.scenario import Scenario, TrainerRole
from offchain.agents.strategy import HONEST
from offchain.agents.trainer import TrainerAgent, _Run
from offchain.chain.anvil import Anvil
from offchain.chain.build import Artifact
from offchain.chain.deploy import Deployment
from offchain.contracts.protocol import Protocol
from offchain.contracts.task_market import TaskStatus
from trainer.interp import Interpreter
from trainer.program.step import TrainStep
from trainer.repops import KERNELS, OpSpec
from trainer.runner.attested import AttestedRun
from trainer.runner.runner import Runner
from trainer.workloads import Workload
from zkdv.transcript import read_records

REWARD = 10**17


class KilledMidInterval(TrainerAgent):
    """An honest zkdv trainer whose first instance dies two steps into its second checkpoint interval."""

    killed: ClassVar[list[int]] = []

    def _train(self, task_id: int, run: _Run, trained: dict[int, bytes]) -> Tick:
        c = run.materials.spec.checkpoint_interval
        if not self.killed and max(trained) == c:
            attested = self._zkdv(task_id, run)
            assert attested is not None
            attested.advance(c + 2)
            attested.proof.join()  # the replay snapshot of step c is on disk
            self.killed.append(attested.steps_done)
            raise AgentCrashed(f"killed at step {attested.steps_done}, in the middle of an interval")
        return super()._train(task_id, run, trained)


class SwappedKernel(TrainerAgent):
    """Honest, but its eager step multiplies matrices with torch's own kernel; zkdv checks every step."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, zkdv_check_every=1, **kwargs)

    def _attested_run(self, task_id: int, run: _Run, step: TrainStep) -> AttestedRun:
        attested = super()._attested_run(task_id, run, step)
        mm = torch.ops.aten.mm.default
        attested.proof._kernels = {**KERNELS, "aten.mm.default": OpSpec("aten.mm.default", mm, mm, "swapped")}
        return attested


@pytest.mark.anvil
def test_zkdv_trainer_commits_the_interpreters_roots_and_a_poisoned_run_is_not_committed(
    node: Anvil,
    deployment: Deployment,
    artifacts: dict[str, Artifact],
    workload: Workload,
    protocol: Protocol,
    tmp_path: Path,
) -> None:
    KilledMidInterval.killed.clear()
    events = Events()
    sc = Scenario(
        rpc_url=node.rpc_url,
        accounts=node.accounts,
        deployment=deployment,
        artifacts=artifacts,
        folder=tmp_path,
        order=TaskOrder(workload, reward=REWARD, slots=2),
        trainers=[TrainerRole("alice", HONEST, KilledMidInterval), TrainerRole("mallory", HONEST, SwappedKernel)],
        observer=events,
    )
    r = sc.run(timeout_s=300)

    market = protocol.market
    c = workload.config.checkpoint_interval
    assert r.crashes == ["alice"] and KilledMidInterval.killed == [c + 2]
    assert r.status is TaskStatus.FINALIZED
    # alice: trained through zkdv, resumed at the snapshot of step c, committed the interpreter's roots.
    said = events.of("alice")
    assert any("trains through zkdv" in m and "mlp-digits" in m for m in said), said
    assert any(f"resumed its zkdv run from its transcript at step {c}" in m for m in said), said
    assert any("self-audit: zkdv's sampled checks replayed" in m for m in said), said
    want = Runner(Interpreter(workload.program).run, workload.dataset, workload.config, tmp_path / "interp").run(
        workload.initial_state()
    )
    alice = sc.trainers["alice"]
    assert isinstance(alice, TrainerAgent)
    assert alice.db.checkpoints(r.task_id) == want.checkpoints
    revealed = market.revealed_roots(r.task_id, sc.keys["alice"].address)
    assert revealed == tuple(want.checkpoints[k] for k in sorted(want.checkpoints))
    records = read_records(alice.home / "zkdv" / f"task-{r.task_id}" / "zkdv" / "records.cborl")
    steps = [rec for rec, _ in records if rec["type"] == "step"]
    assert [s["step"] for s in steps] == list(range(workload.config.steps))  # the cut-back transcript, whole
    assert records[-1][0]["type"] == "close" and records[-1][0]["failed"] == 0
    # mallory: poisoned, never committed, lost her bond to no one's game.
    said = events.of("mallory")
    assert any("SELF-AUDIT FAILED: zkdv's sampled check of step 0 failed" in m for m in said), said
    mallory = sc.trainers["mallory"]
    assert isinstance(mallory, TrainerAgent)
    rec = mallory.db.get("task", r.task_id)
    assert rec is not None and rec.get("audit_failed") is True
    assert not market.trainer_of(r.task_id, sc.keys["mallory"].address).committed
    assert market.commitments(r.task_id, sc.keys["mallory"].address) == []
    assert r.winning_group == market.group_of_trainer(r.task_id, sc.keys["alice"].address)
