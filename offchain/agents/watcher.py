"""The watcher: compare submissions, open games, and keep every game moving to its end.

For each open task it reads the submissions: trainers whose checkpoint roots differ are in
different groups, and the watcher opens a game for every pair of live trainers from
different groups that have not played each other (the earlier group defends, or with
`defender="last"` the later one; the rules are the same for both sides). Per-trainer
games are what the market needs: a trainer is eliminated only by losing a game itself, so
every member of a wrong group must be beaten, and each trainer's bond covers `slots - 1`
games. The games of one task run in parallel.

It is also the protocol's janitor, for everyone's games: it calls `timeout` when the side
to move let its clock run out, re-assigns an oracle question whose oracle stayed silent,
settles oracle questions whose windows passed (and draws one whose draw deadline passed),
resolves a game whose oracle answer is final, and settles resolved games in the market.
All of these are permissionless; the players do the same for their own games.
"""

from __future__ import annotations

from typing import Any

from offchain.agents._questions import tend
from offchain.agents.base import BUSY, Agent, Tick, idle
from offchain.contracts.dispute_game import Stage
from offchain.contracts.task_market import TaskStatus
from offchain.game.player import PLAYING


class WatcherAgent(Agent):
    role = "watcher"

    def __init__(
        self,
        name: str,
        *,
        task_ids: set[int] | None = None,
        defender: str = "first",
        **kwargs: Any,
    ) -> None:
        super().__init__(name, **kwargs)  # rpc_url, private_key, deployment, artifacts, home, public, observer
        self.task_ids = task_ids
        if defender not in ("first", "last"):
            raise ValueError(f"defender must be 'first' or 'last' (which group defends), not {defender!r}")
        self.defender = defender

    def tick(self) -> Tick:
        market = self.protocol.market
        head = self.chain.block_number()
        start = self.db.cursor("tasks")
        if start <= head:
            for e in market._logs("TaskPosted", from_block=start):
                task_id = int(e["taskId"])
                wanted = self.task_ids is None or task_id in self.task_ids
                if wanted and self.db.get("task", task_id) is None:
                    self.db.put("task", task_id, {"status": "open", "posted_block": int(e["_block"])})
            self.db.set_cursor("tasks", head + 1)
        waits: list[int] = []
        block = False
        for key, rec in list(self.db.all("task")):
            if rec.get("status") != "open":
                continue
            task_id = int(key)
            if market.task(task_id).status is not TaskStatus.OPEN:
                self.db.update("task", task_id, status="closed")
                continue
            t = self._watch(task_id, int(rec.get("posted_block", 0)))
            if t.busy:
                return t
            block = block or t.block
            if t.until is not None:
                waits.append(t.until)
        return idle(min(waits) if waits else None, block=block)

    def _watch(self, task_id: int, since: int) -> Tick:
        market, game = self.protocol.market, self.protocol.game
        subs = market.submissions(task_id, from_block=since)  # since: the block the task was posted in
        disputes = market.disputes(task_id, from_block=since)
        played = {frozenset((d.defender, d.challenger)) for d in disputes}
        live = [(s.group, s.trainer) for s in subs if not market.trainer_of(task_id, s.trainer).eliminated]
        for ga, a in live:
            for gb, b in live:
                if ga < gb and frozenset((a, b)) not in played:
                    if self.defender == "last":
                        a, b = b, a
                    game_id = market.open_dispute(task_id, a, b)
                    self.say(
                        f"task {task_id}: groups {ga} and {gb} disagree: opened game {game_id}, "
                        f"{a[:10]}.. defends against {b[:10]}.."
                    )
                    return BUSY
        now = self.chain_time()
        waits: list[int] = []
        block = False
        for d in disputes:
            view = game.game_of(d.game_id)
            if view.stage in PLAYING:
                if now > view.deadline:
                    outcome = game.timeout(d.game_id)
                    self.say(f"game {d.game_id}: {view.to_move.name.lower()}'s clock ran out: {outcome.name.lower()}")
                    return BUSY
                waits.append(view.deadline + 1)
            elif view.stage is Stage.ORACLE:
                q = self.protocol.oracle.question(view.question_id)
                if q.status.ended:
                    outcome = game.resolve_oracle(d.game_id)
                    self.say(f"game {d.game_id}: resolved by the oracle's final answer: {outcome.name.lower()}")
                    return BUSY
                t, said = tend(self.protocol.oracle, view.question_id, q, now)
                if said:
                    self.say(f"game {d.game_id}: {said}")
                if t.busy:
                    return t
                block = block or t.block
                if t.until is not None:
                    waits.append(t.until)
            elif view.stage is Stage.RESOLVED and not market.dispute_of(d.game_id).settled:
                outcome = market.settle_dispute(d.game_id)
                self.say(f"game {d.game_id}: settled in the market ({outcome.name.lower()})")
                return BUSY
        return idle(min(waits) if waits else None, block=block)
