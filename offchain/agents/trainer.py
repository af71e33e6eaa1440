"""The trainer agent: join (or enter), train with RepOps, checkpoint, self-audit, commit, reveal, open
games, defend, claim, get paid.

Per task it takes on, a tick does the first thing that is due:

1. join a slot (with the task's bond) while the join window is open and a slot is free; a
   trainer that finds the task full (or joining closed) trains it anyway as an outside
   challenger when `challenge_if_full` is set (step 4);
2. train one checkpoint interval, store the checkpoint state in its private store and its
   root and the losses in its db. When the task's program is one of the bundled workloads
   (matched by program hash, `trainer.runner.attested.bundled_step`) and its strategy claims
   the honest run, it trains through zkdv (`trainer.runner.attested.AttestedRun` under
   `home/zkdv/task-<id>`, docs/zkdv.md): the eager step on RepOps kernels, every update in a
   transcript, the checkpoint roots read from the transcript; otherwise (a program it has no
   `TrainStep` for, a cheater's run) with the RepOps interpreter, and it says why;
3. once trained, self-audit. Through zkdv: close the run, which waits for zkdv's sampled
   checks (each replays the program with the interpreter from the latest replay snapshot, on
   a background worker; a step is drawn with probability `audit_samples / steps`, or every
   `zkdv_check_every` steps) and compare the transcript's checkpoint roots with the recorded
   ones; a poisoned run (`ZKDVPoisonedError`) is not committed. With the interpreter: replay
   `audit_samples` checkpoint intervals, drawn from the task's seed and its own address, from
   the stored checkpoint before them with a fresh RepOps interpreter, and compare the roots
   bit for bit. A failed audit stops the agent from committing (it would lose its bond);
4. commit to its checkpoint list before the submit deadline (`commit`, on a slot), or, as an
   outside challenger, bond and commit at once (`enter`) unless a group already holds its
   result (entering then would be a copy). The salt is random and written to the records
   before the transaction is sent, so a restarted agent reveals what it committed to;
5. reveal the list (`submit`) after the submit deadline, in a later block than the commit, within
   the reveal window; then publish the checkpoint states of the list to the public store, so
   that a client can replay sampled intervals of it;
6. open a game against every live entrant of another group it has not played (it challenges,
   or defends with `opener_defends`; another opener may win the race: that is no error);
7. play each game it is a player of: its move when it is its turn, `timeout` when the
   opponent's clock ran out, publish the disputed node's inputs once the game reaches a node reveal,
   `resolveOracle` when the answer is final, `settleDispute` once resolved. A node the element
   table covers goes to stage ELEMENT instead of the oracle (when the game is bound to an
   ElementReferee): it plays its side of the referee's game from the node's agreed inputs and its
   own output (`offchain.agents._element`), times out a silent opponent there, and calls
   `resolveElement` once the referee decided;
8. once the task is finalized (after the dispute deadline), claim its bond and share for
   itself, and withdraw what the market credited it.

Every transaction it sends for a task bids at most the task's `gasPriceCap` per gas.

After a restart it rebuilds each run from its records: the checkpoint states come from the
private store; a lost snapshot is recomputed from the checkpoint before it (and must
reproduce the recorded root). A zkdv run resumes from its transcript's last persisted replay
snapshot (`proof.start(resume=True)`, at most one interval behind its records) and trains on
from there; the self-audit then checks that the transcript's roots are the recorded ones. A
game resumes from the chain's view of it.
"""

from __future__ import annotations

import hashlib
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from offchain.agents._element import NoMove, element_due, element_move, element_side, element_turn
from offchain.agents._questions import tend
from offchain.agents.base import BUSY, DONE, Agent, Tick, idle
from offchain.agents.strategy import HONEST, Strategy
from offchain.agents.task import TaskMaterials, TaskRejected, load_materials
from offchain.chain.errors import ContractRevert
from offchain.contracts.dispute_game import GameView, Outcome, Side, Stage
from offchain.contracts.protocol import Protocol
from offchain.contracts.task_market import (
    Dispute,
    TaskMarketAlreadyPlayed,
    TaskMarketCopiedResult,
    TaskMarketDisputeClosed,
    TaskMarketNothingToClaim,
    TaskMarketRevealClosed,
    TaskMarketRevealMismatch,
    TaskMarketTrainerEliminated,
    TaskSpec,
    TaskStatus,
    TaskView,
    TrainerView,
    entry_closes,
    new_salt,
    result_commitment,
    reveal_window,
)
from offchain.game.element import ElementSide
from offchain.game.player import PLAYING, GamePlayer
from offchain.game.witness import RunWitness
from offchain.store import StoreError
from trainer.commit import commit_tensor, state_root
from trainer.interp import Interpreter
from trainer.program.step import TrainStep
from trainer.runner.attested import AttestedRun, bundled_step
from zkdv.errors import TranscriptError, ZKDVPoisonedError

MAX_MOVE_FAILURES = 3
RECHECK_S = 15.0  # wall seconds before a task rejected for a cause that may change is examined again


@dataclass(frozen=True, slots=True)
class TrainerPolicy:
    """What a trainer takes on: a task is passed over (and re-examined later) when its bond is above
    `max_bond` wei, it has more than `max_steps` steps, or its reward per step and slot is below
    `min_reward_per_step` wei. `approve(task_id, spec)`, when set, is asked before any bond is sent
    (a person's confirmation on a chain that is not local); False passes the task over."""

    max_bond: int | None = None
    max_steps: int | None = None
    min_reward_per_step: int | None = None
    approve: Any = None  # Callable[[int, TaskSpec], bool] | None

    def refuses(self, spec: TaskSpec, reward: int) -> str | None:
        if self.max_bond is not None and spec.bond > self.max_bond:
            most = self.max_bond / 1e18
            return f"its bond of {spec.bond / 1e18:.6f} ETH is above the policy's maximum of {most:.6f} ETH"
        if self.max_steps is not None and spec.steps > self.max_steps:
            return f"its {spec.steps} steps are more than the policy's maximum of {self.max_steps}"
        per_step = reward // max(1, spec.steps * spec.slots)
        if self.min_reward_per_step is not None and per_step < self.min_reward_per_step:
            return (
                f"its reward per step and slot is {per_step} wei, below the policy's minimum of "
                f"{self.min_reward_per_step} wei"
            )
        return None


class AuditFailed(Exception):
    """The replay of a sampled interval does not reproduce the recorded root."""


@dataclass
class _Run:
    materials: TaskMaterials
    witness: RunWitness
    players: dict[int, GamePlayer] = field(default_factory=dict)
    elements: dict[int, ElementSide] = field(default_factory=dict)  # game id -> its side of the element phase
    zkdv_step: TrainStep | None = None  # the bundled workload's step it trains through zkdv
    zkdv_why: str | None = None  # None: not decided yet; else the workload it matched, or why not zkdv
    attested: AttestedRun | None = None  # the zkdv run, built when training or auditing is due


class TrainerAgent(Agent):
    """A trainer (see the module's docstring).

    `challenge_if_full`: train a task whose slots are taken (or whose joining closed) and enter
    it as an outside challenger. `joins_slots=False` never takes a slot (a client that
    challenges its own task). `opens_games=False` leaves opening games to others (a watcher);
    `opener_defends` makes it defend in the games it opens (by default the other side does).
    `zkdv_check_every`: zkdv checks every n-th step (tests; by default steps are drawn with
    probability `audit_samples / steps`).
    """

    role = "trainer"

    def __init__(
        self,
        name: str,
        *,
        strategy: Strategy = HONEST,
        task_ids: set[int] | None = None,
        challenge_if_full: bool = False,
        joins_slots: bool = True,
        opens_games: bool = True,
        opener_defends: bool = False,
        policy: TrainerPolicy | None = None,
        zkdv_check_every: int | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(name, **kwargs)  # rpc_url, private_key, deployment, artifacts, home, public, observer
        self.policy = policy or TrainerPolicy()
        for key, rec in list(self.db.all("task")):  # a restart (perhaps with a new policy) examines them again
            if rec.get("status") == "rejected" and rec.get("recheck"):
                self.db.update("task", key, recheck_at=0.0)
        self.strategy = strategy
        self.task_ids = task_ids  # None: any task; else only these
        self.challenge_if_full = challenge_if_full
        self.joins_slots = joins_slots
        self.opens_games = opens_games and strategy.opens_games
        self.opener_defends = opener_defends
        self.zkdv_check_every = zkdv_check_every
        self._runs: dict[int, _Run] = {}
        self._materials: dict[int, TaskMaterials] = {}  # checked when joining, reused by the run

    # -- the loop --------------------------------------------------------------------------

    def tick(self) -> Tick:
        self._discover()
        waits: list[int] = []
        active = False
        block = False
        for key, rec in list(self.db.all("task")):
            if self.task_ids is not None and int(key) not in self.task_ids:
                continue  # `--task` names the tasks it works on: the records of others wait
            if rec.get("status") == "rejected" and rec.get("recheck") and time.time() >= rec.get("recheck_at", 0.0):
                # The cause may have changed (a store object repaired, a policy changed): look again.
                rec = self.db.update("task", key, status="new", recheck=False)
            if rec.get("status") in ("done", "rejected"):
                continue
            active = True
            t = self._work(int(key), rec)
            if t.busy:
                return t
            block = block or t.block
            if t.until is not None:
                waits.append(t.until)
        if (
            not active
            and self.task_ids is not None
            and all((self.db.get("task", i) or {}).get("status") in ("done", "rejected") for i in self.task_ids)
        ):
            return DONE
        return idle(min(waits) if waits else None, block=block)

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
        spec = self.protocol.market.spec_of(task_id)
        with self.chain.capped(spec.gas_price_cap):  # the market repays gas at most at the task's cap
            return self._step(task_id, rec, spec)

    def _step(self, task_id: int, rec: dict[str, Any], spec: TaskSpec) -> Tick:
        market = self.protocol.market
        task = market.task(task_id)
        me = market.trainer_of(task_id, self.address)
        now = self.chain_time()

        if not me.joined:
            if task.status is not TaskStatus.OPEN or rec["status"] not in ("new", "challenger"):
                return self._wind_up(task_id, "")
            if rec["status"] == "new":
                return self._join(task_id, spec, task, now)
            run = self._run(task_id, spec)  # an outside challenger-to-be: it trains first, then enters
            if run is None:
                return self._wind_up(task_id, "the task's materials are gone")
            trained = self.db.checkpoints(task_id)
            if self.strategy.trains and max(trained) < spec.steps and not rec.get("audit_failed"):
                return self._train(task_id, run, trained)
            if self.strategy.audits and not rec.get("audited"):
                return self._audit(task_id, run)
            if rec.get("audit_failed"):
                return self._wind_up(task_id, "its self-audit failed: not entering")
            return self._enter(task_id, spec, task, run, rec, now)

        run = self._run(task_id, spec)
        if run is None:
            return BUSY
        trained = self.db.checkpoints(task_id)
        if self.strategy.trains and max(trained) < spec.steps and not rec.get("audit_failed"):
            return self._train(task_id, run, trained)

        if not me.committed:  # on a slot
            if now > spec.submit_deadline or task.status is not TaskStatus.OPEN:
                return self._wind_up(task_id, "the submission window closed before it committed: the bond is forfeit")
            if self.strategy.audits and not rec.get("audited"):
                return self._audit(task_id, run)
            if rec.get("audit_failed"):
                return self._wind_up(task_id, "its self-audit failed: not committing (the bond is forfeit)")
            return self._commit(task_id, spec, run, rec)

        if not me.submitted:
            if task.status is not TaskStatus.OPEN or rec.get("reveal_refused"):
                return self._wind_up(task_id, "")
            return self._reveal(task_id, spec, run, rec, now)
        if self.strategy.publishes and self.strategy.trains and not rec.get("published_states"):
            return self._publish_states(task_id, run)

        since = int(rec.get("posted_block", 0))  # no event of the task comes before it was posted
        disputes = market.disputes(task_id, from_block=since)
        if task.status is TaskStatus.OPEN and now <= spec.dispute_deadline:
            opened = self._open_games(task_id, me, disputes, since)
            if opened is not None:
                return opened

        waits: list[int] = []
        block = False
        mine = [d for d in disputes if self.address in (d.defender, d.challenger)]
        # Start after the game moved last, so that parallel games take turns.
        last = int(rec.get("last_game", -1))
        mine.sort(key=lambda d: (d.game_id <= last, d.game_id))
        for d in mine:
            t = self._play(task_id, run, d.game_id, Side.DEFENDER if d.defender == self.address else Side.CHALLENGER)
            if t.busy:
                if len(mine) > 1:
                    self.db.update("task", task_id, last_game=d.game_id)
                return t
            block = block or t.block
            if t.until is not None:
                waits.append(t.until)

        if task.status is TaskStatus.FINALIZED:
            return self._claim(task_id, me)
        if now > spec.dispute_deadline:  # finalize is due (anyone may call it; the client does)
            return idle(min(waits) if waits else None, block=block)
        return idle(min(waits) if waits else spec.dispute_deadline + 1, block=block)

    # -- joining or entering -----------------------------------------------------------------

    def _reject(self, task_id: int, why: str) -> Tick:
        """Passes a task over for a cause that may change; it is examined again after `RECHECK_S`."""
        self.say(f"task {task_id}: {why}")
        self.db.update("task", task_id, status="rejected", reason=why, recheck=True, recheck_at=time.time() + RECHECK_S)
        return BUSY

    def _join(self, task_id: int, spec: TaskSpec, task: TaskView, now: int) -> Tick:
        slot = self.joins_slots and now <= spec.join_deadline and task.joined < spec.slots
        challenge = not slot and self.challenge_if_full and now <= entry_closes(spec)
        if task.status is not TaskStatus.OPEN or not (slot or challenge):
            self.db.update("task", task_id, status="rejected", reason="closed or full")
            why = f"it is {task.status.name.lower()}" if task.status is not TaskStatus.OPEN else "its slots are taken"
            if task.status is TaskStatus.OPEN and now > spec.join_deadline:
                why = "joining closed" + ("" if self.challenge_if_full else " (and it enters no task as a challenger)")
                if self.challenge_if_full:
                    why += " and so did entering as an outside challenger"
            self.say(f"task {task_id}: not taking it on: {why}")
            return BUSY
        if not self.strategy.joins(spec):
            self.db.update("task", task_id, status="rejected", reason="the strategy passes")
            return BUSY
        refused = self.policy.refuses(spec, task.reward)
        if refused is not None:
            return self._reject(task_id, f"not joining: {refused}")
        try:
            self._materials[task_id] = load_materials(spec, self.public)
        except TaskRejected as e:
            return self._reject(task_id, f"not joining: {e} (it is examined again in {RECHECK_S:.0f} s)")
        if self.policy.approve is not None and not self.policy.approve(task_id, spec):
            self.db.update("task", task_id, status="rejected", reason="not approved")
            self.say(f"task {task_id}: not joining: bonding was not approved")
            return BUSY
        if not slot:
            self.db.update("task", task_id, status="challenger")
            why = "every slot is taken" if now <= spec.join_deadline and self.joins_slots else "it takes no slot"
            if now > spec.join_deadline:
                why = "joining has closed"
            self.say(f"task {task_id}: {why}; training it to enter as an outside challenger")
            return BUSY
        receipt = self.protocol.market.join(task_id)
        self.db.update("task", task_id, status="joined", joined_block=receipt.block_number)
        self.say(f"task {task_id}: joined with a bond of {spec.bond / 1e18:.4f} ETH")
        return BUSY

    def _enter(self, task_id: int, spec: TaskSpec, task: TaskView, run: _Run, rec: dict[str, Any], now: int) -> Tick:
        """Bond and commit as an outside challenger, unless entering is closed or pointless."""
        market = self.protocol.market
        if now > entry_closes(spec):
            return self._wind_up(task_id, "entry closed before it could enter as a challenger")
        if self.strategy.trains:
            root = run.witness.checkpoints.root
            for g in range(task.group_count):
                if market.group_of(task_id, g).checkpoint_root == root:
                    # Its result is revealed already (by a trainer that committed before it): a copy, to the market.
                    return self._wind_up(
                        task_id, f"group {g} revealed the very result it trained (bit for bit): nothing to challenge"
                    )
        commitment = self._commitment(task_id, run, rec)
        c = market.enter(task_id, commitment)
        self.db.update(
            "task", task_id, status="entered", commit_block=c.block, commit_time=c.timestamp, joined_block=c.block
        )
        self.say(f"task {task_id}: entered as an outside challenger with a bond of {spec.bond / 1e18:.4f} ETH")
        return BUSY

    # -- commit and reveal -------------------------------------------------------------------

    def _commitment(self, task_id: int, run: _Run, rec: dict[str, Any]) -> bytes:
        """The commitment it sends, and its salt, written to the records before anything is sent (once)."""
        if "commitment" in rec:
            return bytes.fromhex(rec["commitment"])
        salt = new_salt()
        if self.strategy.trains:
            commitment = result_commitment(task_id, self.address, run.witness.checkpoints.roots, salt)
        else:  # nothing to commit to: a commitment it cannot open
            commitment = hashlib.sha256(b"blind" + new_salt()).digest()
        self.db.update("task", task_id, salt=salt.hex(), commitment=commitment.hex())
        return commitment

    def _commit(self, task_id: int, spec: TaskSpec, run: _Run, rec: dict[str, Any]) -> Tick:
        commitment = self._commitment(task_id, run, rec)
        c = self.protocol.market.commit(task_id, commitment)
        self.db.update("task", task_id, status="committed", commit_block=c.block, commit_time=c.timestamp)
        self.say(f"task {task_id}: committed to its result (reveal after the submit deadline)")
        return BUSY

    def _committed(self, task_id: int, rec: dict[str, Any]) -> tuple[int, int]:
        """The block and chain time of its commitment (from its records, else from the chain: a commit that
        landed before a crash)."""
        if "commit_block" in rec:
            return int(rec["commit_block"]), int(rec["commit_time"])
        since = int(rec.get("posted_block", 0))
        [c, *_] = self.protocol.market.commitments(task_id, self.address, from_block=since)
        self.db.update("task", task_id, commit_block=c.block, commit_time=c.timestamp)
        return c.block, c.timestamp

    def _reveal(self, task_id: int, spec: TaskSpec, run: _Run, rec: dict[str, Any], now: int) -> Tick:
        market = self.protocol.market
        block, committed_at = self._committed(task_id, rec)
        opens_after, closes_at = reveal_window(spec, committed_at)
        if now > closes_at:
            self.say(f"task {task_id}: the reveal window closed at {closes_at} before it revealed: the bond is forfeit")
            self.db.update("task", task_id, reveal_refused="RevealClosed")
            return BUSY
        if now <= opens_after:
            return idle(opens_after + 1)
        if self.chain.block_number() <= block:  # a reveal comes in a later block than its commit
            return idle(block=True)
        at = self.strategy.reveal_time(opens_after, closes_at)
        if now < at:
            return idle(at)
        own = run.witness.checkpoints.roots if self.strategy.trains else None
        since = int(rec.get("posted_block", 0))
        roots = self.strategy.reveal_roots(own, lambda: self._revealed(task_id, since))
        if roots is None:
            return idle(closes_at)
        try:
            sub = market.submit(task_id, roots, bytes.fromhex(rec["salt"]))
        except TaskMarketRevealClosed:  # the window passed while the transaction was on its way
            return BUSY
        except (TaskMarketRevealMismatch, TaskMarketCopiedResult) as e:
            self.say(f"task {task_id}: the market refused its reveal ({e.error_name}): the bond is forfeit")
            self.db.update("task", task_id, reveal_refused=e.error_name)
            return BUSY
        self.say(
            f"task {task_id}: revealed its result: {spec.checkpoint_count} checkpoints, final root "
            f"0x{bytes(roots[-1]).hex()[:16]}.. (group {sub.group})"
        )
        self.db.update("task", task_id, status="submitted")
        return BUSY

    def _revealed(self, task_id: int, since: int) -> list[tuple[bytes, ...]]:
        """The checkpoint lists others revealed on the task so far, one per group, read from their transactions."""
        market = self.protocol.market
        out: list[tuple[bytes, ...]] = []
        seen: set[int] = set()
        for s in market.submissions(task_id, from_block=since):
            if s.group in seen or s.trainer == self.address:
                continue
            seen.add(s.group)
            roots = market.revealed_roots(task_id, s.trainer, from_block=since)
            if roots is not None:
                out.append(roots)
        return out

    def _publish_states(self, task_id: int, run: _Run) -> Tick:
        """The checkpoint states of its revealed list, to the public store (a client replays intervals from them)."""
        published = 0
        for step, root in sorted(self.db.checkpoints(task_id).items()):
            try:
                state = self.private.get_state(root)
            except StoreError:
                state = run.witness.state(step)
            self.public.put_state(state)
            published += 1
        self.db.update("task", task_id, published_states=True)
        self.say(f"task {task_id}: published its {published} checkpoint states to the public store")
        return BUSY

    # -- opening games, claiming, winding up ---------------------------------------------------

    def _open_games(self, task_id: int, me: TrainerView, disputes: list[Dispute], since: int) -> Tick | None:
        """Opens a game against one live entrant of another group it has not played, if any (BUSY), else None."""
        if not self.opens_games or me.eliminated:
            return None
        market = self.protocol.market
        played = {
            d.challenger if d.defender == self.address else d.defender
            for d in disputes
            if self.address in (d.defender, d.challenger)
        }
        for s in market.submissions(task_id, from_block=since):
            other = s.trainer
            if other == self.address or s.group == me.group or other in played:
                continue
            if market.trainer_of(task_id, other).eliminated:
                continue
            defender, challenger = (self.address, other) if self.opener_defends else (other, self.address)
            try:
                game_id = market.open_dispute(task_id, defender, challenger)
            except (TaskMarketAlreadyPlayed, TaskMarketTrainerEliminated, TaskMarketDisputeClosed):
                return BUSY  # another opener got there first, or the chain moved on: read it again
            side = "defends" if self.opener_defends else "challenges"
            self.say(
                f"task {task_id}: group {s.group} revealed another result than its own (group {me.group}): opened "
                f"game {game_id}, it {side} against {other[:10]}.."
            )
            return BUSY
        return None

    def _claim(self, task_id: int, me: TrainerView) -> Tick:
        market = self.protocol.market
        if me.submitted and not me.eliminated and not me.claimed:
            try:
                c = market.claim(task_id, self.address)
                self.say(f"task {task_id}: claimed {c.amount / 1e18:.6f} ETH (its bond, and its share if it won)")
            except TaskMarketNothingToClaim:  # someone claimed for it first
                pass
            return BUSY
        return self._wind_up(task_id, "")

    def _wind_up(self, task_id: int, why: str) -> Tick:
        """Withdraws its credit at the market, if any, then marks the task done."""
        market = self.protocol.market
        if market.credit_of(self.address) > 0:
            w = market.withdraw()
            self.say(f"task {task_id}: withdrew {w.amount / 1e18:.6f} ETH")
            return BUSY
        if why:
            self.say(f"task {task_id}: {why}")
        self.db.update("task", task_id, status="done")
        self._runs.pop(task_id, None)
        self.say(f"task {task_id}: done")
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

    def _zkdv(self, task_id: int, run: _Run) -> AttestedRun | None:
        """The run's zkdv run (built, or resumed from its transcript, on first use), None when it trains with
        the interpreter. Raises ZKDVPoisonedError when a resumed transcript holds a failed check."""
        if run.zkdv_why is None:
            m = run.materials
            if not self.strategy.trains or not self.strategy.audits:
                run.zkdv_why = "its strategy does not train, or skips the self-audit that zkdv's checks are"
            elif type(run.witness) is not RunWitness or run.witness.deviation is not None:
                run.zkdv_why = "its strategy claims another run than the program's"
            elif max(self.db.checkpoints(task_id)) > 0 and not self._transcript(task_id).is_file():
                run.zkdv_why = (
                    "its checkpoints were recorded without a zkdv transcript (imported from a training script of "
                    "its own, or trained by an earlier version): it audits them by interpreter replay"
                )
            else:
                run.zkdv_step, run.zkdv_why = bundled_step(m.spec.program_hash, m.dataset, m.config)
            if run.zkdv_step is None:
                self.say(f"task {task_id}: trains with the RepOps interpreter, not through zkdv: {run.zkdv_why}")
            else:
                self.say(f"task {task_id}: trains through zkdv (the program is the bundled {run.zkdv_why} workload's)")
        if run.zkdv_step is None:
            return None
        if run.attested is None:
            run.attested = self._attested_run(task_id, run, run.zkdv_step)
        return run.attested

    def _transcript(self, task_id: int) -> Path:
        return self.home / "zkdv" / f"task-{task_id}" / "zkdv" / "records.cborl"

    def _attested_run(self, task_id: int, run: _Run, step: TrainStep) -> AttestedRun:
        m = run.materials
        folder = self.home / "zkdv" / f"task-{task_id}"
        p = min(1.0, self.strategy.audit_samples / max(1, m.spec.steps))

        def build(resume: bool) -> AttestedRun:
            return AttestedRun(
                step,
                m.dataset,
                m.config,
                m.initial,
                folder,
                state_check_probability=p,
                update_check_probability=p,
                check_every=self.zkdv_check_every,
                resume=resume,
            )

        if not self._transcript(task_id).is_file():
            return build(False)
        try:
            attested = build(True)
        except TranscriptError as e:  # killed before its first replay snapshot was persisted: start over
            self.say(f"task {task_id}: its zkdv transcript cannot be resumed ({e}); starting the zkdv run over")
            shutil.rmtree(folder)
            return build(False)
        self.say(f"task {task_id}: resumed its zkdv run from its transcript at step {attested.steps_done}")
        return attested

    def _poisoned(self, task_id: int, e: ZKDVPoisonedError) -> Tick:
        self.say(
            f"task {task_id}: SELF-AUDIT FAILED: zkdv's sampled check of step {e.step} failed ({e.detail}); "
            "not committing"
        )
        self.db.update("task", task_id, audited=True, audit_failed=True)
        return BUSY

    def _train(self, task_id: int, run: _Run, trained: dict[int, bytes]) -> Tick:
        spec = run.materials.spec
        start = max(trained)
        target = start + spec.checkpoint_interval
        w = run.witness
        try:
            attested = self._zkdv(task_id, run)
            if attested is not None:
                state = attested.advance(target)
        except ZKDVPoisonedError as e:
            return self._poisoned(task_id, e)
        if attested is not None:
            w.keep(target, state)  # the game's witness replays from the checkpoints zkdv computed
            losses, root = attested.losses, attested.roots[target]
            stored = self.private.put_state(state)
            if stored != root:
                raise AuditFailed(
                    f"task {task_id}: the state zkdv returned at step {target} has root {stored.hex()}, its "
                    f"transcript commits {root.hex()}"
                )
        else:
            state = w.state(target)
            losses, root = w.losses, self.private.put_state(state)
        self.db.put_losses(task_id, {s: v for s, v in losses.items() if start <= s < target})
        self.db.put_checkpoint(task_id, target, root)
        loss = losses.get(target - 1)
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
        try:
            attested = self._zkdv(task_id, run)
            if attested is not None:
                if attested.steps_done < spec.steps:  # resumed after a restart, behind its records
                    attested.advance(spec.steps)
                result = attested.close()
        except ZKDVPoisonedError as e:
            return self._poisoned(task_id, e)
        if attested is not None:
            got = result.checkpoints
            differ = sorted(k for k in set(recorded) | set(got) if got.get(k) != recorded.get(k))
            if differ:
                self.say(
                    f"task {task_id}: SELF-AUDIT FAILED: the zkdv transcript's checkpoint roots differ from the "
                    f"recorded ones at steps {differ}; not committing"
                )
                self.db.update("task", task_id, audited=True, audit_failed=True)
                return BUSY
            checked = attested.checked
            self.say(
                f"task {task_id}: self-audit: zkdv's sampled checks replayed "
                + (f"steps {checked}" if checked else "no step (none was drawn)")
                + " and found the bits equal; the transcript's checkpoint roots are the recorded ones"
            )
            self.db.update("task", task_id, audited=True)
            return BUSY
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
                    f"{got.hex()[:16]}.., the run recorded {recorded[first + c].hex()[:16]}..; not committing"
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
                    return self._refused(game_id, rec, e)
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
        if view.stage is Stage.ELEMENT:
            return self._play_element(run, game_id, side, view, rec, now)
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
            run.elements.pop(game_id, None)
            return BUSY
        return idle()

    def _refused(self, game_id: int, rec: dict[str, Any], e: ContractRevert) -> Tick:
        """The contract refused our move in game `game_id`: one more failed attempt; stuck after
        MAX_MOVE_FAILURES."""
        failures = int(rec.get("failures", 0)) + 1
        status = "stuck" if failures >= MAX_MOVE_FAILURES else "playing"
        self.db.update("game", game_id, failures=failures, status=status)
        self.say(f"game {game_id}: the contract refused our move ({e.error_name or e}); attempt {failures}")
        return BUSY if status == "playing" else idle()

    def _play_element(self, run: _Run, game_id: int, side: Side, view: GameView, rec: dict[str, Any], now: int) -> Tick:
        """Stage ELEMENT: this side's move on the referee's game when it is its turn (from the node's agreed
        inputs and its own output), else what is due for anyone (the referee's timeout, resolveElement)."""
        game, referee = self.protocol.game, self.protocol.referee
        if referee is None:  # the game opened an element game, so a referee is bound: read it again
            self.protocol = Protocol.from_deployment(self.chain, self.deployment, self.artifacts)
            game, referee = self.protocol.game, self.protocol.referee
            if referee is None:
                return idle()
        element = view.element_game
        turn = element_turn(referee, element)
        if turn.to_move == int(side) and now <= turn.deadline:
            moves = int(rec.get("element_moves", 0))
            if rec.get("status") == "stuck" or not self.strategy.will_move(game_id, view, int(rec.get("moves", 0))):
                return idle()
            mine = run.elements.get(game_id)
            if mine is None:
                mine = run.elements[game_id] = element_side(run.witness, view.lo, view.position)
                if not rec.get("element_announced"):
                    self.db.update("game", game_id, element_announced=True)
                    self.say(
                        f"game {game_id}: node {view.position} of step {view.lo} goes to the element phase "
                        f"(element game {element} on the referee)"
                    )
            try:
                what = element_move(referee, element, side, mine, game.config_of(game_id).arity)
            except NoMove as e:  # nothing to play: our clock runs out, then anyone times us out
                if not rec.get("no_move"):
                    self.db.update("game", game_id, no_move=True)
                    self.say(f"game {game_id}: {e}; we let our clock run out")
                return idle(e.deadline + 1)
            except ContractRevert as e:
                if element_turn(referee, element).moves != turn.moves:
                    self.say(
                        f"game {game_id}: our element move came after the element game had moved on "
                        f"({e.error_name or e}): it had already landed, or a clock ran out; not counted as refused"
                    )
                    return BUSY
                return self._refused(game_id, rec, e)
            if what is None:  # the turn passed between our two reads of the element game
                return BUSY
            self.db.update("game", game_id, moves=int(rec.get("moves", 0)) + 1, element_moves=moves + 1, failures=0)
            self.say(f"game {game_id}: {what}")
            return BUSY
        t, said = element_due(game, referee, game_id, view, now)
        if said:
            self.say(f"game {game_id}: {said}")
        return t

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
