"""The client agent: capture the program, publish it with the dataset, post the task, verify, finalize, withdraw.

`TaskOrder` is what a client wants trained: an ordinary torch training step (a
`trainer.workloads.Workload`: module, loss, optimizer, dataset, run config) and the terms
(reward, trainers, game parameters, windows). The agent captures the step into a program
with RepOps operators, publishes the program, the dataset and the initial state to the
public store by their commitments, and posts the task with the reward in escrow. Then it
follows the task, finalizes it once the dispute deadline passed and no game runs (never
earlier: an outside challenger may still come), and withdraws what the market credits it.

It verifies by default: once results are revealed, for each group it replays `verify_samples`
checkpoint intervals of the group's list, drawn at random when it looks (so no trainer can
know them in advance), from the checkpoint states the trainers publish to the public store,
with its own RepOps interpreter, and compares the roots bit for bit. It says clearly when a
result does not replay (`VERIFICATION FAILED`) or cannot be checked (a state nobody
published), and keeps each verdict in its records (`verdicts`). Verifying detects a wrong
result; it does not overturn one: that takes a game, which only an entrant can play. With
`challenge=True` the client is also an outside challenger of its own task: it trains the task
itself with a trainer agent over the same key and home, and enters unless a revealed group
already holds its very result, so a wrong result cannot win unopposed.

Posting is the one action that is not idempotent on chain, so the agent writes down its
intent (and the block) first: after a crash it looks for its own `TaskPosted` event before
posting again.
"""

from __future__ import annotations

import dataclasses
import secrets
from dataclasses import dataclass
from typing import Any

from offchain.agents.base import BUSY, DONE, Agent, Tick, idle
from offchain.agents.task import TaskMaterials, TaskRejected, check_workload, load_materials
from offchain.contracts.task_market import MIN_SUBMIT_TO_DISPUTE, TaskSpec, TaskStatus, Wei
from offchain.store import StoreError
from trainer.commit import state_root
from trainer.interp import Interpreter
from trainer.workloads import Workload

GWEI = 10**9
VERIFY = "verify"  # AgentDB kind: one record per (task, group), key "<task>/<group>"


@dataclass(frozen=True)
class TaskOrder:
    workload: Workload
    reward: int  # wei
    slots: int = 3
    arity: int = 4
    clock: int = 3600  # seconds per side per game
    gas_price_cap: int = GWEI
    join_window: int = 600  # seconds after posting
    submit_window: int = 3600
    dispute_window: int = 9000  # >= submit_window + 75 min: the reveals (15 min), then an hour of disputes

    def __post_init__(self) -> None:
        if not 0 < self.join_window <= self.submit_window:
            raise ValueError("the join window must be positive and end before the submit window does")
        if self.dispute_window - self.submit_window < MIN_SUBMIT_TO_DISPUTE:
            raise ValueError(
                f"the dispute window must end at least {MIN_SUBMIT_TO_DISPUTE} s after the submit window "
                f"(reveals, then an hour of disputes), not {self.dispute_window - self.submit_window} s"
            )


class ClientAgent(Agent):
    role = "client"

    def __init__(
        self,
        name: str,
        *,
        order: TaskOrder | None = None,
        verify: bool = True,
        verify_samples: int = 2,
        challenge: bool = False,
        **kwargs: Any,
    ) -> None:
        if order is not None:
            check_workload(order.workload)  # WorkloadRejected before anything is published or posted
        super().__init__(name, **kwargs)  # rpc_url, private_key, deployment, artifacts, home, public, observer
        self.order = order
        self.verify = verify
        self.verify_samples = verify_samples
        self.challenge = challenge
        self._kwargs = kwargs  # for the challenger it runs, over the same key and home
        self._challenger: Agent | None = None
        self._materials: TaskMaterials | None = None

    @property
    def task_id(self) -> int | None:
        rec = self.db.get("order", "task")
        return int(rec["task_id"]) if rec and "task_id" in rec else None

    def verdicts(self, task_id: int) -> dict[int, dict[str, Any]]:
        """Group -> what verifying it found: `status` ("verified", "mismatch", "unverified" or "pending"),
        the sampled intervals, and for a mismatch the step range and both roots."""
        prefix = f"{task_id}/"
        return {int(k[len(prefix) :]): rec for k, rec in self.db.all(VERIFY) if k.startswith(prefix)}

    def tick(self) -> Tick:
        rec = self.db.get("order", "task")
        if rec is None or "task_id" not in rec:
            if self.order is None:
                return DONE
            with self.chain.capped(self.order.gas_price_cap):
                return self._post(rec)
        task_id = int(rec["task_id"])
        if rec.get("status") == "done":
            return DONE
        spec = self.protocol.market.spec_of(task_id)
        with self.chain.capped(spec.gas_price_cap):
            return self._follow(task_id, spec)

    def _follow(self, task_id: int, spec: TaskSpec) -> Tick:
        market = self.protocol.market
        task = market.task(task_id)
        now = self.chain_time()
        waits: list[int] = []
        block = False
        challenger = self._challenger_for(task_id)
        if challenger is not None:
            t = challenger.tick()
            if t.busy:
                return t
            block = t.block
            if t.until is not None:
                waits.append(t.until)
            if task.status is TaskStatus.FINALIZED and not t.done:
                return idle(min(waits) if waits else None, block=block)
        if task.status is TaskStatus.FINALIZED:
            credit = market.credit_of(self.address)
            if credit > 0:
                w = market.withdraw()
                self.say(f"task {task_id}: withdrew {w.amount / 1e18:.6f} ETH")
                return BUSY
            self.db.update("order", "task", status="done")
            return DONE
        if self.verify and now > spec.submit_deadline:
            t = self._verify(task_id, spec)
            if t.busy:
                return t
        if task.active_games == 0 and now > spec.dispute_deadline:
            self._give_up_verifying(task_id)
            fin = market.finalize(task_id)
            who = "refunded to the client" if fin.winning_group < 0 else f"won by group {fin.winning_group}"
            self.say(f"task {task_id}: finalized; the reward of {fin.reward / 1e18:.4f} ETH is {who}")
            return BUSY
        if now > spec.dispute_deadline:  # games still run: their moves and deadlines wake us
            return idle(min(waits) if waits else None, block=block)
        if now <= spec.submit_deadline:
            waits.append(spec.submit_deadline + 1)
        waits.append(spec.dispute_deadline + 1)
        return idle(min(waits), block=block)

    def _challenger_for(self, task_id: int) -> Agent | None:
        if not self.challenge:
            return None
        if self._challenger is None:
            from offchain.agents.trainer import TrainerAgent  # the trainer imports nothing of the client

            self._challenger = TrainerAgent(
                self.name,
                task_ids={task_id},
                challenge_if_full=True,
                joins_slots=False,
                **self._kwargs,
            )
        return self._challenger

    def close(self) -> None:
        if self._challenger is not None:
            self._challenger.close()
        super().close()

    # -- verifying -------------------------------------------------------------------------

    def _verify(self, task_id: int, spec: TaskSpec) -> Tick:
        """One piece of verification: pick a group's samples, or replay one sampled interval of it."""
        market = self.protocol.market
        since = int((self.db.get("order", "task") or {}).get("from_block", 0))
        groups: dict[int, str] = {}
        for s in market.submissions(task_id, from_block=since):
            groups.setdefault(s.group, s.trainer)
        for group, member in sorted(groups.items()):
            key = f"{task_id}/{group}"
            rec = self.db.get(VERIFY, key)
            if rec is not None and rec["status"] != "pending":
                continue
            if rec is None:
                count = spec.steps // spec.checkpoint_interval
                picked = sorted(_sample(count, min(self.verify_samples, count)))
                rec = {"status": "pending", "member": member, "samples": picked, "done": []}
                self.db.put(VERIFY, key, rec)
            t = self._replay_one(task_id, spec, group, key, rec)
            if t.busy:
                return t
        return idle()

    def _replay_one(self, task_id: int, spec: TaskSpec, group: int, key: str, rec: dict[str, Any]) -> Tick:
        market = self.protocol.market
        roots = market.revealed_roots(task_id, rec["member"])
        if roots is None:  # pragma: no cover - a group exists only once a member revealed
            return idle()
        c = spec.checkpoint_interval
        todo = [j for j in rec["samples"] if j not in rec["done"]]
        if not todo:
            steps = ", ".join(f"{j * c}..{(j + 1) * c - 1}" for j in rec["samples"])
            self.db.update(VERIFY, key, status="verified")
            self.say(
                f"task {task_id}: verified group {group}'s result: replaying steps {steps} from its published "
                "checkpoint states reproduces its roots bit for bit"
            )
            return BUSY
        j = todo[0]
        try:
            state = self.public.get_state(roots[j])
        except StoreError:  # not published yet (trainers publish right after revealing), or never
            return idle()
        m = self._task_materials(spec)
        if m is None:
            return idle()
        interp = Interpreter(m.program)
        for step in range(j * c, (j + 1) * c):
            state, _ = interp.run(state, m.dataset.batch(spec.seed, step, spec.batch_size))
        got = state_root(state)
        if got != roots[j + 1]:
            first, last = j * c, (j + 1) * c - 1
            self.db.update(
                VERIFY, key, status="mismatch", steps=[first, last], claimed=roots[j + 1].hex(), replayed=got.hex()
            )
            self.say(
                f"task {task_id}: VERIFICATION FAILED for group {group}: replaying steps {first}..{last} from its "
                f"published state at step {first} gives root 0x{got.hex()[:16]}.., the group claims "
                f"0x{roots[j + 1].hex()[:16]}.. after step {last + 1}: its result is not the task's RepOps run"
            )
            return BUSY
        self.db.update(VERIFY, key, done=[*rec["done"], j])
        return BUSY

    def _give_up_verifying(self, task_id: int) -> None:
        for group, rec in self.verdicts(task_id).items():
            if rec["status"] == "pending":
                self.db.update(VERIFY, f"{task_id}/{group}", status="unverified")
                self.say(
                    f"task {task_id}: could not verify group {group}'s result: the checkpoint states it would "
                    "replay from were never published"
                )

    def _task_materials(self, spec: TaskSpec) -> TaskMaterials | None:
        if self._materials is None or self._materials.spec != spec:
            try:
                self._materials = load_materials(spec, self.public)
            except TaskRejected as e:
                self.say(f"cannot verify: {e}")
                return None
        return self._materials

    # -- posting ---------------------------------------------------------------------------

    def spec_for(self, order: TaskOrder, now: int) -> TaskSpec:
        w = order.workload
        program = w.program
        spec = TaskSpec(
            program_hash=program.program_hash,
            graph_root=program.graph_root,
            dataset_root=w.dataset.root,
            initial_state_root=self.public.put_state(w.initial_state()),
            seed=w.config.seed,
            dataset_size=len(w.dataset),
            steps=w.config.steps,
            checkpoint_interval=w.config.checkpoint_interval,
            batch_size=w.config.batch_size,
            node_count=len(program.nodes),
            arity=order.arity,
            clock=order.clock,
            slots=order.slots,
            bond=Wei(0),
            gas_price_cap=Wei(order.gas_price_cap),
            join_deadline=now + order.join_window,
            submit_deadline=now + order.submit_window,
            dispute_deadline=now + order.dispute_window,
        )
        return dataclasses.replace(spec, bond=self.protocol.market.min_bond(spec))

    def _post(self, rec: dict[str, Any] | None) -> Tick:
        assert self.order is not None
        market = self.protocol.market
        if rec is not None and "from_block" in rec:
            # A post may have landed before a crash: adopt it rather than post twice.
            for e in market._logs("TaskPosted", {"client": self.address}, from_block=int(rec["from_block"])):
                # (web3 decodes the event's spec struct by field name, not position: read it back typed)
                if market.spec_of(int(e["taskId"])).program_hash == bytes.fromhex(rec["program_hash"]):
                    self.db.update("order", "task", task_id=int(e["taskId"]))
                    self.say(f"task {int(e['taskId'])}: found the task posted before the restart")
                    return BUSY
        w = self.order.workload
        program = w.program
        self.public.put_program(program)
        self.public.put_dataset(w.dataset)
        spec = self.spec_for(self.order, self.chain_time())
        self.db.put("order", "task", {"from_block": self.chain.block_number(), "program_hash": spec.program_hash.hex()})
        task_id = market.post_task(spec, self.order.reward)
        self.db.update("order", "task", task_id=int(task_id))
        self.say(
            f"task {task_id}: posted {w.name} ({spec.steps} steps, {spec.node_count} operators per step, "
            f"batch {spec.batch_size}) for {self.order.reward / 1e18:.4f} ETH; bond {spec.bond / 1e18:.4f} ETH, "
            f"{spec.slots} trainers"
        )
        return BUSY


def _sample(count: int, n: int) -> list[int]:
    """`n` distinct interval indices below `count`, at random (the client's own randomness)."""
    picked: list[int] = []
    while len(picked) < n:
        j = secrets.randbelow(count)
        if j not in picked:
            picked.append(j)
    return picked


__all__ = ["VERIFY", "ClientAgent", "TaskOrder"]
