"""The client agent: capture the program, publish it with the dataset, post the task, follow, finalize, withdraw.

`TaskOrder` is what a client wants trained: an ordinary torch training step (a
`trainer.workloads.Workload`: module, loss, optimizer, dataset, run config) and the terms
(reward, trainers, game parameters, windows). The agent captures the step into a program
with RepOps operators, publishes the program, the dataset and the initial state to the
public store by their commitments, and posts the task with the reward in escrow. Then it
follows the task and finalizes it as soon as the market allows (one live group left and
no game running, or the dispute window over), and withdraws what the market credits it.

Posting is the one action that is not idempotent on chain, so the agent writes down its
intent (and the block) first: after a crash it looks for its own `TaskPosted` event before
posting again.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from offchain.agents.base import BUSY, DONE, Agent, Tick, idle
from offchain.contracts.task_market import TaskSpec, TaskStatus, Wei
from trainer.workloads import Workload

GWEI = 10**9


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
    dispute_window: int = 7200


class ClientAgent(Agent):
    role = "client"

    def __init__(
        self,
        name: str,
        *,
        order: TaskOrder | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(name, **kwargs)  # rpc_url, private_key, deployment, artifacts, home, public, observer
        self.order = order

    @property
    def task_id(self) -> int | None:
        rec = self.db.get("order", "task")
        return int(rec["task_id"]) if rec and "task_id" in rec else None

    def tick(self) -> Tick:
        rec = self.db.get("order", "task")
        if rec is None or "task_id" not in rec:
            if self.order is None:
                return DONE
            return self._post(rec)
        task_id = int(rec["task_id"])
        if rec.get("status") == "done":
            return DONE
        market = self.protocol.market
        task, spec = market.task(task_id), market.spec_of(task_id)
        if task.status is TaskStatus.FINALIZED:
            credit = market.credit_of(self.address)
            if credit > 0:
                w = market.withdraw()
                self.say(f"task {task_id}: withdrew {w.amount / 1e18:.6f} ETH")
                return BUSY
            self.db.update("order", "task", status="done")
            return DONE
        now = self.chain_time()
        everyone_in = task.joined == spec.slots and task.submitted == task.joined
        early = task.live_groups <= 1 and (now > spec.submit_deadline or everyone_in)
        if task.active_games == 0 and (now > spec.dispute_deadline or early):
            fin = market.finalize(task_id)
            who = "refunded to the client" if fin.winning_group < 0 else f"paid to group {fin.winning_group}"
            self.say(f"task {task_id}: finalized; the reward of {fin.reward / 1e18:.4f} ETH is {who}")
            return BUSY
        if not everyone_in and now <= spec.submit_deadline:
            return idle(spec.submit_deadline + 1)
        return idle(spec.dispute_deadline + 1)

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
