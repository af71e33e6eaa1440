"""The watcher, an optional helper: open the games nobody opened, and keep every game moving to its end.

Trainers open their own games (a trainer that sees a revealed result other than its own
opens a game against each live entrant of another group); the watcher backs them up. For
each open task it reads the revealed results: entrants whose checkpoint roots differ are in
different groups, and once both results of a pair have been revealed for `grace` seconds
(chain time) without a game between them, the watcher opens it (the earlier group defends,
or with `defender="last"` the later one; the rules are the same for both sides). Per-entrant
games are what the market needs: an entrant is eliminated only by losing a game itself, so
every member of a wrong group must be beaten, and each trainer's bond covers `slots - 1`
games. The games of one task run in parallel.

It is also the protocol's janitor, for everyone's games: it calls `timeout` when the side
to move let its clock run out, re-assigns an oracle question whose oracle stayed silent,
settles oracle questions whose windows passed (and draws one whose draw deadline passed),
resolves a game whose oracle answer is final, in stage ELEMENT times out the side to move on the
referee once its clock ran out and calls `resolveElement` once the referee decided, settles
resolved games in the market, and, once a task is finalized, claims the bond and share of every
live entrant that has not claimed (the credit is the entrant's; it withdraws it). All of these are permissionless; the
players do the same for their own games. Its transactions for a task bid at most the task's
`gasPriceCap` per gas.
"""

from __future__ import annotations

from typing import Any

from offchain.agents._element import element_due
from offchain.agents._questions import tend
from offchain.agents.base import BUSY, Agent, Tick, idle
from offchain.contracts.dispute_game import PLAYING, Stage
from offchain.contracts.task_market import (
    TaskMarketAlreadyPlayed,
    TaskMarketNothingToClaim,
    TaskMarketTrainerEliminated,
    TaskStatus,
)

GRACE_S = 120  # chain seconds the players have to open a game themselves before the watcher does


class WatcherAgent(Agent):
    role = "watcher"

    def __init__(
        self,
        name: str,
        *,
        task_ids: set[int] | None = None,
        defender: str = "first",
        grace: int = GRACE_S,
        **kwargs: Any,
    ) -> None:
        super().__init__(name, **kwargs)  # rpc_url, private_key, deployment, artifacts, home, public, observer
        self.task_ids = task_ids
        if defender not in ("first", "last"):
            raise ValueError(f"defender must be 'first' or 'last' (which group defends), not {defender!r}")
        self.defender = defender
        self.grace = grace
        self._times: dict[int, int] = {}  # block -> timestamp

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
            since = int(rec.get("posted_block", 0))
            if market.task(task_id).status is not TaskStatus.OPEN:
                with self.chain.capped(market.spec_of(task_id).gas_price_cap):
                    t = self._claim_for_everyone(task_id, since)
                if t.busy:
                    return t
                self.db.update("task", task_id, status="closed")
                continue
            with self.chain.capped(market.spec_of(task_id).gas_price_cap):
                t = self._watch(task_id, since)
            if t.busy:
                return t
            block = block or t.block
            if t.until is not None:
                waits.append(t.until)
        return idle(min(waits) if waits else None, block=block)

    def _time(self, block: int) -> int:
        if block not in self._times:
            w3 = self.chain.w3
            self._times[block] = int(self.chain.read(lambda: w3.eth.get_block(block)["timestamp"], "eth_getBlock"))
        return self._times[block]

    def _claim_for_everyone(self, task_id: int, since: int) -> Tick:
        """After finalization: claims for each live entrant that revealed and has not claimed (one per tick)."""
        market = self.protocol.market
        for s in market.submissions(task_id, from_block=since):
            view = market.trainer_of(task_id, s.trainer)
            if view.eliminated or view.claimed:
                continue
            try:
                c = market.claim(task_id, s.trainer)
            except TaskMarketNothingToClaim:  # it claimed for itself first
                return BUSY
            self.say(f"task {task_id}: claimed {c.amount / 1e18:.6f} ETH for {s.trainer[:10]}..")
            return BUSY
        return idle()

    def _watch(self, task_id: int, since: int) -> Tick:
        market, game = self.protocol.market, self.protocol.game
        subs = market.submissions(task_id, from_block=since)  # since: the block the task was posted in
        disputes = market.disputes(task_id, from_block=since)
        played = {frozenset((d.defender, d.challenger)) for d in disputes}
        now = self.chain_time()
        waits: list[int] = []
        block = False
        if now <= market.spec_of(task_id).dispute_deadline:
            live = [
                (s.group, s.trainer, self._time(s.block))
                for s in subs
                if not market.trainer_of(task_id, s.trainer).eliminated
            ]
            for ga, a, ta in live:
                for gb, b, tb in live:
                    if ga < gb and frozenset((a, b)) not in played:
                        due = max(ta, tb) + self.grace  # the players' own chance to open it first
                        if now < due:
                            waits.append(due)
                            continue
                        if self.defender == "last":
                            a, b = b, a
                        try:
                            game_id = market.open_dispute(task_id, a, b)
                        except (TaskMarketAlreadyPlayed, TaskMarketTrainerEliminated):
                            return BUSY  # a player opened it first, or it lost meanwhile
                        self.say(
                            f"task {task_id}: groups {ga} and {gb} disagree and nobody opened a game: opened game "
                            f"{game_id}, {a[:10]}.. defends against {b[:10]}.."
                        )
                        return BUSY
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
            elif view.stage is Stage.ELEMENT and self.protocol.referee is not None:
                t, said = element_due(game, self.protocol.referee, d.game_id, view, now)
                if said:
                    self.say(f"game {d.game_id}: {said}")
                if t.busy:
                    return t
                if t.until is not None:
                    waits.append(t.until)
            elif view.stage is Stage.RESOLVED and not market.dispute_of(d.game_id).settled:
                outcome = market.settle_dispute(d.game_id)
                self.say(f"game {d.game_id}: settled in the market ({outcome.name.lower()})")
                return BUSY
        return idle(min(waits) if waits else None, block=block)
