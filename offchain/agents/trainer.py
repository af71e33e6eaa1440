"""The trainer agent: join, train with RepOps, checkpoint, self-audit, submit, defend, get paid.

Per task it takes on, a tick does the first thing that is due:

1. join (with the task's bond) while the join window is open;
2. train one checkpoint interval, store the checkpoint state in its private store and its
   root and the losses in its db;
3. once trained, self-audit: replay `audit_samples` checkpoint intervals, drawn from the
   task's seed and its own address, from the stored checkpoint before them with a fresh
   RepOps interpreter, and compare the roots bit for bit; a failed audit stops the agent
   from submitting (it would lose its bond);
4. submit the checkpoint list;
5. play each game it is a player of: its move when it is its turn, `timeout` when the
   opponent's clock ran out, publish the disputed node's inputs once the game reaches a node reveal,
   `resolveOracle` when the answer is final, `settleDispute` once resolved;
6. withdraw what the market credited it, once the task is finalized.

After a restart it rebuilds each run from its records: the checkpoint states come from the
private store; a lost snapshot is recomputed from the checkpoint before it (and must
reproduce the recorded root). A game resumes from the chain's view of it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from offchain.agents._questions import tend
from offchain.agents.base import BUSY, DONE, Agent, Tick, idle
from offchain.agents.strategy import HONEST, Strategy
from offchain.agents.task import TaskMaterials, TaskRejected, load_materials
from offchain.chain.errors import ContractRevert
from offchain.contracts.dispute_game import Outcome, Side, Stage
from offchain.contracts.task_market import TaskSpec, TaskStatus
from offchain.game.player import PLAYING, GamePlayer
from offchain.game.witness import RunWitness
from offchain.store import StoreError
from trainer.commit import commit_tensor, state_root
from trainer.interp import Interpreter

MAX_MOVE_FAILURES = 3


class AuditFailed(Exception):
    """The replay of a sampled interval does not reproduce the recorded root."""


@dataclass
class _Run:
    materials: TaskMaterials
    witness: RunWitness
    players: dict[int, GamePlayer] = field(default_factory=dict)


class TrainerAgent(Agent):
    role = "trainer"

    def __init__(
        self,
        name: str,
        *,
        strategy: Strategy = HONEST,
        task_ids: set[int] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(name, **kwargs)  # rpc_url, private_key, deployment, artifacts, home, public, observer
        self.strategy = strategy
        self.task_ids = task_ids  # None: any task; else only these
        self._runs: dict[int, _Run] = {}
        self._materials: dict[int, TaskMaterials] = {}  # checked when joining, reused by the run

    # -- the loop --------------------------------------------------------------------------

    def tick(self) -> Tick:
        self._discover()
        waits: list[int] = []
        active = False
        for key, rec in list(self.db.all("task")):
            if rec.get("status") in ("done", "rejected"):
                continue
            active = True
            t = self._work(int(key), rec)
            if t.busy:
                return t
            if t.until is not None:
                waits.append(t.until)
        if (
            not active
            and self.task_ids is not None
            and all((self.db.get("task", i) or {}).get("status") in ("done", "rejected") for i in self.task_ids)
        ):
            return DONE
        return idle(min(waits) if waits else None)

    def _discover(self) -> None:
        market = self.protocol.market
        head = self.chain.block_number()
        start = self.db.cursor("tasks")
        if start > head:
            return
        for e in market._logs("TaskPosted", from_block=start):
            task_id = int(e["taskId"])
            if self.db.get("task", task_id) is not None:
                continue
            if self.task_ids is not None and task_id not in self.task_ids:
                continue
            self.db.put("task", task_id, {"status": "new", "posted_block": int(e["_block"])})
        self.db.set_cursor("tasks", head + 1)

    def _work(self, task_id: int, rec: dict[str, Any]) -> Tick:
        market = self.protocol.market
        spec = market.spec_of(task_id)
        task = market.task(task_id)
        me = market.trainer_of(task_id, self.address)
        now = self.chain_time()

        if not me.joined:
            if rec["status"] != "new":
                self.db.update("task", task_id, status="done")
                return BUSY
            return self._join(task_id, spec, task.status, task.joined, now)

        run = self._run(task_id, spec)
        if run is None:
            return BUSY
        trained = self.db.checkpoints(task_id)
        if max(trained) < spec.steps:
            return self._train(task_id, run, trained)

        if not me.submitted:
            if now > spec.submit_deadline:
                self.say(f"task {task_id}: the submission window closed before the run was submitted")
                self.db.update("task", task_id, status="done")
                return BUSY
            if self.strategy.audits and not rec.get("audited"):
                return self._audit(task_id, run)
            if rec.get("audit_failed"):
                return idle()
            receipt = market.submit_list(task_id, run.witness.checkpoints)
            self.say(
                f"task {task_id}: submitted {spec.checkpoint_count} checkpoints, final root "
                f"0x{run.witness.root(spec.steps).hex()[:16]}.. (group {receipt.group})"
            )
            self.db.update("task", task_id, status="submitted")
            return BUSY

        waits: list[int] = []
        since = int(rec.get("posted_block", 0))  # no event of the task comes before it was posted
        mine = [d for d in market.disputes(task_id, from_block=since) if self.address in (d.defender, d.challenger)]
        # Start after the game moved last, so that parallel games take turns.
        last = int(rec.get("last_game", -1))
        mine.sort(key=lambda d: (d.game_id <= last, d.game_id))
        for d in mine:
            t = self._play(task_id, run, d.game_id, Side.DEFENDER if d.defender == self.address else Side.CHALLENGER)
            if t.busy:
                if len(mine) > 1:
                    self.db.update("task", task_id, last_game=d.game_id)
                return t
            if t.until is not None:
                waits.append(t.until)

        if task.status is TaskStatus.FINALIZED:
            credit = market.credit_of(self.address)
            if credit > 0:
                w = market.withdraw()
                self.say(f"task {task_id}: withdrew {w.amount / 1e18:.6f} ETH")
                return BUSY
            self.db.update("task", task_id, status="done")
            self._runs.pop(task_id, None)
            self.say(f"task {task_id}: done")
            return BUSY
        return idle(min(waits) if waits else spec.dispute_deadline + 1)

    # -- joining ---------------------------------------------------------------------------

    def _join(self, task_id: int, spec: TaskSpec, status: TaskStatus, joined: int, now: int) -> Tick:
        if status is not TaskStatus.OPEN or now > spec.join_deadline or joined >= spec.slots:
            self.db.update("task", task_id, status="rejected", reason="closed or full")
            return BUSY
        if not self.strategy.joins(spec):
            self.db.update("task", task_id, status="rejected", reason="the strategy passes")
            return BUSY
        try:
            self._materials[task_id] = load_materials(spec, self.public)
        except TaskRejected as e:
            self.say(f"task {task_id}: not joining: {e}")
            self.db.update("task", task_id, status="rejected", reason=str(e))
            return BUSY
        receipt = self.protocol.market.join(task_id)
        self.db.update("task", task_id, status="joined", joined_block=receipt.block_number)
        self.say(f"task {task_id}: joined with a bond of {spec.bond / 1e18:.4f} ETH")
        return BUSY

    # -- the run ---------------------------------------------------------------------------

    def _run(self, task_id: int, spec: TaskSpec) -> _Run | None:
        run = self._runs.get(task_id)
        if run is not None:
            return run
        try:
            materials = self._materials.pop(task_id, None) or load_materials(spec, self.public)
        except TaskRejected as e:
            self.say(f"task {task_id}: cannot run it any more: {e}")
            return None
        witness = self.strategy.witness(materials.program, materials.dataset, materials.config, materials.initial)
        recorded = self.db.checkpoints(task_id)
        if recorded:  # an earlier instance of this agent ran it: a restart
            self.say(f"task {task_id}: resumed the run from its records (checkpoints at steps {sorted(recorded)})")
        else:
            self.db.put_checkpoint(task_id, 0, self.private.put_state(materials.initial))
            recorded = self.db.checkpoints(task_id)
        lost = []
        for step, root in sorted(recorded.items()):
            if step == 0:
                continue
            try:
                witness.keep(step, self.private.get_state(root))
            except StoreError as e:
                lost.append(step)
                self.say(f"task {task_id}: checkpoint {step} is not usable ({e}); it will be recomputed")
        run = _Run(materials, witness)
        self._runs[task_id] = run
        for step in lost:
            self._recover(task_id, run, step, recorded[step])
        return run

    def _recover(self, task_id: int, run: _Run, step: int, root: bytes) -> None:
        """Recompute the lost checkpoint `step` from the one before it; it must give the recorded root."""
        before = run.witness.steps_run
        state = run.witness.state(step)
        got = state_root(state)
        if got != root:
            raise AuditFailed(
                f"task {task_id}: recomputing checkpoint {step} gave root {got.hex()}, the record says {root.hex()}"
            )
        self.private.put_state(state)
        self.say(f"task {task_id}: recomputed lost checkpoint {step} ({run.witness.steps_run - before} steps)")

    def _train(self, task_id: int, run: _Run, trained: dict[int, bytes]) -> Tick:
        spec = run.materials.spec
        start = max(trained)
        target = start + spec.checkpoint_interval
        w = run.witness
        state = w.state(target)
        self.private.put_state(state)
        self.db.put_losses(task_id, {s: v for s, v in w.losses.items() if start <= s < target})
        self.db.put_checkpoint(task_id, target, state_root(state))
        loss = w.losses.get(target - 1)
        self.observer.progress(self.name, task_id, target, spec.steps, loss)
        if target == spec.steps:
            last = "unknown" if loss is None else f"{loss:.4f}"
            self.say(f"task {task_id}: trained {spec.steps} steps, last loss {last}")
        return BUSY

    def audit_steps(self, task_id: int, spec: TaskSpec) -> list[int]:
        """The checkpoint intervals (by their first step) this trainer replays before submitting."""
        count = spec.steps // spec.checkpoint_interval
        n = min(self.strategy.audit_samples, count)
        seed = hashlib.sha256(spec.seed.to_bytes(32, "big") + bytes.fromhex(self.address[2:])).digest()
        picked: list[int] = []
        i = 0
        while len(picked) < n:
            j = int.from_bytes(hashlib.sha256(seed + i.to_bytes(4, "big")).digest(), "big") % count
            if j not in picked:
                picked.append(j)
            i += 1
        return sorted(j * spec.checkpoint_interval for j in picked)

    def _audit(self, task_id: int, run: _Run) -> Tick:
        spec, m = run.materials.spec, run.materials
        recorded = self.db.checkpoints(task_id)
        interp = Interpreter(m.program)
        c = spec.checkpoint_interval
        for first in self.audit_steps(task_id, spec):
            state = self.private.get_state(recorded[first])
            for s in range(first, first + c):
                state, _ = interp.run(state, m.dataset.batch(spec.seed, s, spec.batch_size))
            got = state_root(state)
            if got != recorded[first + c]:
                self.say(
                    f"task {task_id}: SELF-AUDIT FAILED: replaying steps {first}..{first + c - 1} gives root "
                    f"{got.hex()[:16]}.., the run recorded {recorded[first + c].hex()[:16]}..; not submitting"
                )
                self.db.update("task", task_id, audited=True, audit_failed=True)
                return BUSY
        steps = self.audit_steps(task_id, spec)
        self.say(f"task {task_id}: self-audit replayed the intervals from steps {steps}: the bits match")
        self.db.update("task", task_id, audited=True)
        return BUSY

    # -- games -----------------------------------------------------------------------------

    def _play(self, task_id: int, run: _Run, game_id: int, side: Side) -> Tick:
        rec = self.db.get("game", game_id) or {}
        if rec.get("status") == "done":
            return idle()
        if not rec:
            self.db.put("game", game_id, {"task_id": task_id, "side": int(side), "status": "playing", "failures": 0})
            rec = self.db.get("game", game_id) or {}
            self.say(f"game {game_id}: playing as {side.name.lower()} in task {task_id}")
        game, market = self.protocol.game, self.protocol.market
        view = game.game_of(game_id)
        now = self.chain_time()
        if view.stage is Stage.NODE_REVEAL and not rec.get("published"):
            # Publish before the reveals: the second one asks the oracle, which then needs the inputs.
            return self._publish(game_id, run, view.lo, view.position)
        if view.stage in PLAYING:
            if view.to_move is side:
                if rec.get("status") == "stuck" or not self.strategy.will_move(game_id, view, int(rec.get("moves", 0))):
                    return idle()
                player = run.players.get(game_id) or GamePlayer(game, game_id, run.witness, side)
                run.players[game_id] = player
                try:
                    what = player.move()
                except ContractRevert as e:
                    if game.game_of(game_id).moves != view.moves:
                        # The game moved on before this move got in: a copy of it already landed (a send whose
                        # answer was lost, delivered again) or a clock ran out. Not a refusal of our move.
                        self.say(
                            f"game {game_id}: our move came after the game had moved on ({e.error_name or e}): "
                            "it had already landed, or a clock ran out; not counted as refused"
                        )
                        return BUSY
                    failures = int(rec.get("failures", 0)) + 1
                    status = "stuck" if failures >= MAX_MOVE_FAILURES else "playing"
                    self.db.update("game", game_id, failures=failures, status=status)
                    self.say(f"game {game_id}: the contract refused our move ({e.error_name or e}); attempt {failures}")
                    return BUSY if status == "playing" else idle()
                if what is None:  # the turn passed between our two reads of the game
                    return BUSY
                self.db.update("game", game_id, moves=int(rec.get("moves", 0)) + 1, failures=0)
                self.say(f"game {game_id}: {what}")
                return BUSY
            if now > view.deadline:
                outcome = game.timeout(game_id)
                self.say(f"game {game_id}: the opponent's clock ran out: {outcome.name.lower()}")
                return BUSY
            return idle(view.deadline + 1)
        if view.stage is Stage.ORACLE:
            if not rec.get("published"):
                return self._publish(game_id, run, view.lo, view.position)
            q = self.protocol.oracle.question(view.question_id)
            if q.status.ended:
                outcome = game.resolve_oracle(game_id)
                self.say(f"game {game_id}: the oracle's answer is final: {outcome.name.lower()}")
                return BUSY
            t, said = tend(self.protocol.oracle, view.question_id, q, now)
            if said:
                self.say(f"game {game_id}: {said}")
            return t
        if view.stage is Stage.RESOLVED:
            if not market.dispute_of(game_id).settled:
                market.settle_dispute(game_id)
                return BUSY
            outcome = game.outcome(game_id)
            won = (outcome is Outcome.DEFENDER_WINS and side is Side.DEFENDER) or (
                outcome is Outcome.CHALLENGER_WINS and side is Side.CHALLENGER
            )
            self.db.update("game", game_id, status="done", outcome=outcome.name, won=won)
            self.say(f"game {game_id}: {'won' if won else 'lost'} ({outcome.name.lower()})")
            run.players.pop(game_id, None)
            return BUSY
        return idle()

    def _publish(self, game_id: int, run: _Run, step: int, node: int) -> Tick:
        self._publish_inputs(run, step, node)
        self.db.update("game", game_id, published=True)
        self.say(f"game {game_id}: published the inputs of node {node} of step {step}")
        return BUSY

    def _publish_inputs(self, run: _Run, step: int, node: int) -> None:
        """The disputed node's input tensors, and the list of their commitments (keyed by the question's hash)."""
        commitments = []
        for t in run.witness.node_inputs(step, node):
            commitments.append(self.public.put_tensor(t))
            assert commitments[-1] == commit_tensor(t.contiguous())
        self.public.put_blob(b"".join(commitments))
