"""Live views of agents at work, for the demo and the CLI: progress bars, notes, and game moves.

`RichObserver` is an `offchain.agents.base.Observer` drawn with rich: a progress bar per
trainer and task (steps done, last loss), and each agent's notes as a line above the bars.

`GameFeed` reads what the agents did from the chain itself, one transaction at a time:
every transaction to the task market, the dispute game or the recompute oracle becomes a
`FeedLine` (a game move with its game id, side, stage and interval or position before and
after it; an oracle's answer; a timeout; a settlement; a payout). It needs nothing but an
RPC URL, so `refereed watch` shows the same view of games it does not play. A move's stage
and position are the game's view (`gameOf`) at the block before the move and at its block.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, cast

from eth_typing import HexStr
from eth_utils.crypto import keccak
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from web3.contract.contract import Contract
from web3.exceptions import Web3RPCError

from offchain.contracts import element_referee as er
from offchain.contracts.dispute_game import GameView, Outcome, Side, Stage
from offchain.contracts.protocol import Protocol
from offchain.contracts.recompute_oracle import ORACLE_INAPPLICABLE, ORACLE_UNAVAILABLE, QuestionStatus

# Agents' notes about transactions a `GameFeed` shows from the chain (with side, stage and
# result): a view with a feed can leave them out. Notes about what happens off chain
# (joining a game, publishing a node's inputs, the verdict for its author) stay.
_FEED_SHOWS = re.compile(
    r"^game \d+: (?!playing as|published|won|lost|the contract refused)"
    r"|^task \d+: groups \d+ and \d+ disagree"
    r"|^task \d+: group \d+ revealed another result"
    r"|^question \d+: (answered|challenge window over|the answer is wrong|voted|the committee)"
)

_GAME_MOVES = frozenset(
    {
        "descend",
        "bisect",
        "openPostStateCount",
        "revealNode",
        "proveStateInput",
        "proveConstantInput",
        "proveNodeInput",
        "proveBatchInput",
        "provePostState",
    }
)
# Moves on the ElementReferee's game of a dispute game in stage ELEMENT (docs/game.md 2.7).
_ELEMENT_MOVES = frozenset({"openHeaders", "descend", "openChunk", "proveElement"})


def default_style(name: str) -> str:
    """The colour of an agent's name: honest trainers green, cheaters red, the others by role."""
    for prefix, style in (
        ("honest", "green"),
        ("cheater", "red"),
        ("trainer", "green"),
        ("oracle", "magenta"),
        ("liar", "red"),
        ("client", "cyan"),
        ("watcher", "blue"),
    ):
        if name.startswith(prefix):
            return style
    return "white"


class RichObserver:
    """Progress bars per trainer and task, agents' notes as lines above them.

    `feed_shown` leaves out the agents' notes about game and oracle transactions, for a view
    that shows them from a `GameFeed`; every note is kept in `notes` either way.
    """

    def __init__(
        self,
        console: Console | None = None,
        *,
        feed_shown: bool = False,
        style: Callable[[str], str] = default_style,
        name_width: int = 10,
        stamp: bool = False,
    ) -> None:
        self.console = console or Console(highlight=False)
        self.stamp = stamp  # each line starts with the local time, and the agent's name with its address
        self.addresses: dict[str, str] = {}  # agent name -> address, shown after the name when stamping
        self.feed_shown = feed_shown
        self.style = style
        self.name_width = name_width
        self.started = time.time()
        self.notes: list[tuple[float, str, str]] = []  # (unix s, agent, message)
        self.losses: dict[tuple[str, int], dict[int, float]] = {}  # (agent, task) -> step -> loss (checkpoints)
        self._progress: Progress | None = None
        self._bars: dict[tuple[str, int], TaskID] = {}

    # -- Observer --------------------------------------------------------------------------

    def event(self, agent: str, message: str) -> None:
        self.notes.append((time.time(), agent, message))
        if self.feed_shown and _FEED_SHOWS.match(message):
            return
        self.console.print(f"{self._name(agent)} {escape(message)}")

    def progress(self, agent: str, task_id: int, done: int, total: int, loss: float | None) -> None:
        key = (agent, task_id)
        if loss is not None:
            self.losses.setdefault(key, {})[done] = loss
        bars = self._bars_on()
        bar = self._bars.get(key)
        loss_text = f"loss {loss:.4f}" if loss is not None else ""
        if bar is None:
            label = f"[{self.style(agent)}]{escape(agent.ljust(self.name_width))}[/] task {task_id}"
            bar = bars.add_task(label, total=total, completed=done, loss=loss_text)
            self._bars[key] = bar
        else:
            bars.update(bar, total=total, completed=done, loss=loss_text)
        if all(t.finished for t in bars.tasks):
            self.close()

    # -- the rest --------------------------------------------------------------------------

    def print(self, text: str) -> None:
        """A line of the view (rich markup), above the bars if they are shown."""
        self.console.print(text)

    def close(self) -> None:
        """Stop drawing the bars (they stay on screen as last drawn)."""
        if self._progress is not None:
            self._progress.stop()
            self._progress = None
            self._bars.clear()

    def _bars_on(self) -> Progress:
        if self._progress is None:
            self._progress = Progress(
                TextColumn("{task.description}"),
                BarColumn(bar_width=32),
                MofNCompleteColumn(),
                TextColumn("steps"),
                TextColumn("{task.fields[loss]}"),
                TimeElapsedColumn(),
                console=self.console,
                refresh_per_second=8,
            )
            self._progress.start()
        return self._progress

    def _name(self, agent: str) -> str:
        name = f"[{self.style(agent)}]{escape(agent.ljust(self.name_width))}[/]"
        if not self.stamp:
            return name
        address = self.addresses.get(agent)
        who = f"{name} [dim]{address[:10]}..[/]" if address else name
        return f"[dim]{time.strftime('%H:%M:%S')}[/] {who}"

    @contextmanager
    def live(self) -> Iterator[RichObserver]:
        """`with observer.live():` closes the bars on the way out, whatever happens."""
        try:
            yield self
        finally:
            self.close()


# -- the feed of what happened on chain ------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FeedLine:
    """One transaction to the protocol, as a person reads it."""

    at: float  # unix s, wall clock, when the feed saw it
    block: int
    chain_time: int  # the block's timestamp
    tx: str
    sender: str  # a party's name (or its short address)
    contract: str  # TaskMarket, DisputeGame, RecomputeOracle, ElementReferee
    function: str
    kind: str  # move, open, timeout, resolve, settle, oracle, task, payout
    text: str
    gas: int
    game_id: int | None = None
    side: Side | None = None
    stage: Stage | None = None
    question_id: int | None = None
    ok: bool = True
    where: str = ""  # a move's position before it, and after it if it moved ("steps 4..8 -> steps 5..6")

    def to_json(self) -> dict[str, Any]:
        return {
            "at": round(self.at, 3),
            "block": self.block,
            "chain_time": self.chain_time,
            "tx": self.tx,
            "sender": self.sender,
            "call": f"{self.contract}.{self.function}",
            "kind": self.kind,
            "game": self.game_id,
            "side": self.side.name.lower() if self.side is not None else None,
            "stage": stage_name(self.stage) if self.stage is not None else None,
            "question": self.question_id,
            "text": self.text,
            "where": self.where or None,
            "gas": self.gas,
            "ok": self.ok,
        }


def stage_name(stage: Stage) -> str:
    return stage.name.lower().replace("_", " ")


def outcome_name(outcome: Outcome) -> str:
    return outcome.name.lower().replace("_", " ")


def where(view: GameView, *, within: GameView | None = None) -> str:
    """Where a game stands, in the words of its stage; `within` a view of the same stage and step,
    only what differs from it (a descent's height and position)."""
    s = view.stage
    if s is Stage.CHECKPOINT_DESCENT:
        return f"height {view.height}, position {view.position}"
    if s is Stage.STEP_BISECTION:
        return f"steps {view.lo}..{view.hi}"
    if s in (Stage.TRACE_DESCENT, Stage.POST_STATE_DESCENT):
        at = f"height {view.height}, position {view.position}"
        return at if within is not None and within.lo == view.lo else f"step {view.lo}, {at}"
    if s is Stage.POST_STATE_COUNT:
        return f"step {view.lo}"
    if s is Stage.NODE_REVEAL:
        return f"node {view.position} of step {view.lo}"
    if s is Stage.INPUT_PROOF:
        return f"input {view.input_index} of node {view.position}, step {view.lo}"
    if s is Stage.POST_STATE_PROOF:
        return f"entry {view.position} of step {view.lo}'s post-state"
    if s is Stage.ORACLE:
        return f"question {view.question_id} (node {view.position} of step {view.lo})"
    if s is Stage.ELEMENT:
        return f"element game {view.element_game} (node {view.position} of step {view.lo})"
    if s is Stage.RESOLVED:
        return outcome_name(view.outcome)
    return ""


def short(addr: str) -> str:
    return f"{addr[:6]}..{addr[-4:]}"


@dataclass
class GameTally:
    """What the feed saw of one game."""

    game_id: int
    players: dict[Side, str] = field(default_factory=dict)  # side -> party name
    moves: dict[Side, int] = field(default_factory=lambda: {Side.DEFENDER: 0, Side.CHALLENGER: 0})
    gas: dict[Side, int] = field(default_factory=lambda: {Side.DEFENDER: 0, Side.CHALLENGER: 0})
    question_id: int | None = None
    element_game: int | None = None  # its ElementReferee game, once in stage ELEMENT
    outcome: Outcome = Outcome.PENDING
    settled: bool = False


# How nodes refuse a call at a block whose state they pruned: anvil, geth, erigon/reth.
_PRUNED = re.compile(r"BlockOutOfRange|missing trie node|header not found|state .*not available|pruned", re.I)


class GameFeed:
    """Every transaction to the protocol's contracts since `from_block`, read block by block.

    `names` maps addresses to the parties' names (the others show as short addresses).
    `poll()` returns the lines of the blocks mined since the last poll; `lines` and `games`
    keep everything seen.
    """

    def __init__(self, protocol: Protocol, names: Mapping[str, str] | None = None, *, from_block: int = 1) -> None:
        self.protocol = protocol
        self.chain = protocol.market.chain
        self.names = {a.lower(): n for a, n in (names or {}).items()}
        self.next_block = max(1, from_block)
        self.lines: list[FeedLine] = []
        self.games: dict[int, GameTally] = {}
        self._questions: dict[int, int] = {}  # question id -> game id
        self._elements: dict[int, int] = {}  # ElementReferee game id -> game id
        clients: list[tuple[str, Any]] = [
            ("TaskMarket", protocol.market),
            ("DisputeGame", protocol.game),
            ("RecomputeOracle", protocol.oracle),
        ]
        if protocol.referee is not None:
            clients.append(("ElementReferee", protocol.referee))
        self._contracts: dict[str, tuple[str, Contract]] = {
            c.address.lower(): (name, c.contract) for name, c in clients
        }
        self._events: dict[str, dict[bytes, str]] = {}  # contract address -> topic0 -> event name
        for addr, (_, contract) in self._contracts.items():
            topics = {}
            for item in cast(list[dict[str, Any]], contract.abi):
                if item.get("type") == "event":
                    sig = f"{item['name']}({','.join(_abi_type(i) for i in item['inputs'])})"
                    topics[keccak(text=sig)] = str(item["name"])
            self._events[addr] = topics

    def name(self, addr: str) -> str:
        return self.names.get(addr.lower()) or short(addr)

    def poll(self) -> list[FeedLine]:
        head = self.chain.block_number()
        out: list[FeedLine] = []
        while self.next_block <= head:
            n = self.next_block
            block = self._block(n)
            for tx in block["transactions"]:
                to = tx.get("to")
                if to is None or str(to).lower() not in self._contracts:
                    continue
                line = self._line(tx, n, int(block["timestamp"]))
                if line is not None:
                    out.append(line)
            self.next_block = n + 1
        self.lines.extend(out)
        return out

    # -- decoding --------------------------------------------------------------------------

    def _block(self, n: int) -> Mapping[str, Any]:
        w3 = self.chain.w3
        return cast(
            Mapping[str, Any], self.chain.read(lambda: w3.eth.get_block(n, full_transactions=True), "eth_getBlock")
        )

    def _line(self, tx: Mapping[str, Any], block: int, chain_time: int) -> FeedLine | None:
        cname, contract = self._contracts[str(tx["to"]).lower()]
        try:
            fn, args = contract.decode_function_input(tx["input"])
        except ValueError:
            return None
        tx_hash = "0x" + bytes(tx["hash"]).hex()
        w3 = self.chain.w3
        receipt = self.chain.read(lambda: w3.eth.get_transaction_receipt(HexStr(tx_hash)), "eth_getReceipt")
        events = self._decode(receipt)
        common = {
            "at": time.time(),
            "block": block,
            "chain_time": chain_time,
            "tx": tx_hash,
            "sender": self.name(str(tx["from"])),
            "contract": cname,
            "function": fn.fn_name,
            "gas": int(receipt["gasUsed"]),
            "ok": int(receipt["status"]) == 1,
        }
        if not common["ok"]:
            return FeedLine(kind="failed", text=f"{cname}.{fn.fn_name} reverted", **common)
        try:
            if cname == "DisputeGame":
                return self._game_line(fn.fn_name, args, events, common)
            if cname == "RecomputeOracle":
                return self._oracle_line(fn.fn_name, args, events, common)
            if cname == "ElementReferee":
                return self._element_line(fn.fn_name, args, events, common)
            return self._market_line(fn.fn_name, args, events, common)
        except Web3RPCError as e:
            # A move is described by the game's state before and after its block; a node that keeps
            # only recent states (a full node; our anvil keeps 512 blocks) refuses older ones. Say
            # so on that line and go on: the current state the views show is not affected.
            if not _PRUNED.search(str(e)):
                raise
            return FeedLine(
                kind="game",
                text=f"{common['sender']} called {cname}.{fn.fn_name} (block {block}: the node keeps no state "
                "that old, so the move cannot be described)",
                **common,
            )

    def _decode(self, receipt: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
        out = []
        for log in receipt["logs"]:
            addr = str(log["address"]).lower()
            if addr not in self._contracts or not log["topics"]:
                continue
            name = self._events[addr].get(bytes(log["topics"][0]))
            if name is None:
                continue
            contract = self._contracts[addr][1]
            out.append((name, contract.events[name]().process_log(log)["args"]))
        return out

    def _view(self, game_id: int, block: int) -> GameView:
        fn = self.protocol.game.contract.functions.gameOf(game_id)
        return GameView.from_abi(self.chain.read(lambda: fn.call(block_identifier=block), "eth_call gameOf"))

    def _tally(self, game_id: int) -> GameTally:
        tally = self.games.get(game_id)
        if tally is None:
            tally = self.games[game_id] = GameTally(game_id)
        return tally

    def _players(self, tally: GameTally, view: GameView) -> None:
        if not tally.players:
            tally.players = {side: self.name(view.players[side]) for side in Side}

    def _game_line(
        self, fn: str, args: Mapping[str, Any], events: list[tuple[str, Mapping[str, Any]]], common: dict[str, Any]
    ) -> FeedLine:
        if "gameId" not in args:  # the deployer's bindMarket
            return FeedLine(kind="game", text=f"{common['sender']} called DisputeGame.{fn}", **common)
        game_id = int(args["gameId"])
        block = int(common["block"])
        before, after = self._view(game_id, block - 1), self._view(game_id, block)
        tally = self._tally(game_id)
        self._players(tally, after)
        tally.outcome = after.outcome
        if after.stage is Stage.ORACLE and tally.question_id is None:
            tally.question_id = int(after.question_id)
            self._questions[int(after.question_id)] = game_id
        if after.stage is Stage.ELEMENT and tally.element_game is None:
            tally.element_game = int(after.element_game)
            self._elements[int(after.element_game)] = game_id
        head = f"game {game_id}"
        if fn in _GAME_MOVES:
            side = before.to_move
            tally.moves[side] += 1
            tally.gas[side] += int(common["gas"])
            moved = where(before)
            if after.stage is not before.stage:
                moved += f" → {stage_name(after.stage)}: {where(after)}"
            elif where(after) != where(before):
                moved += f" → {where(after, within=before)}"
            return FeedLine(
                kind="move",
                text=f"{head} {side.name.lower()} ({tally.players[side]}): {stage_name(before.stage)}, {moved}",
                game_id=game_id,
                side=side,
                stage=before.stage,
                question_id=tally.question_id,
                where=moved,
                **common,
            )
        if fn == "timeout":
            late = before.to_move
            return FeedLine(
                kind="timeout",
                text=f"{head}: the {late.name.lower()}'s clock ran out ({tally.players[late]}): "
                f"{outcome_name(after.outcome)}",
                game_id=game_id,
                side=late,
                stage=before.stage,
                **common,
            )
        if fn == "resolveOracle":
            return FeedLine(
                kind="resolve",
                text=f"{head}: resolved by the oracle's final answer: {outcome_name(after.outcome)}",
                game_id=game_id,
                stage=before.stage,
                question_id=int(before.question_id),
                **common,
            )
        if fn == "resolveElement":
            text = (
                f"{head}: the element phase does not apply (an input's dtype): the oracle is asked"
                if after.question_id
                else f"{head}: resolved by its element game, computed on chain: {outcome_name(after.outcome)}"
            )
            return FeedLine(
                kind="resolve",
                text=text,
                game_id=game_id,
                stage=before.stage,
                **common,
            )
        return FeedLine(kind="game", text=f"{head}: {fn}", game_id=game_id, **common)

    def _element_line(
        self, fn: str, args: Mapping[str, Any], events: list[tuple[str, Mapping[str, Any]]], common: dict[str, Any]
    ) -> FeedLine:
        """A transaction to the ElementReferee: a move (or a timeout) in the element game of a dispute game."""
        element = int(args.get("gameId", 0))
        game_id = self._elements.get(element)
        if game_id is None:  # an element game no dispute game of this feed opened
            return FeedLine(kind="game", text=f"{common['sender']} called ElementReferee.{fn}", **common)
        assert self.protocol.referee is not None
        block = int(common["block"])
        view_fn = self.protocol.referee.contract.functions.gameOf(element)

        def at(b: int) -> er.GameView:
            return er.GameView.from_abi(self.chain.read(lambda: view_fn.call(block_identifier=b), "eth_call gameOf"))

        before, after = at(block - 1), at(block)
        tally = self._tally(game_id)
        head = f"game {game_id}"
        side = Side(before.to_move)
        if fn == "timeout":
            return FeedLine(
                kind="timeout",
                text=f"{head}: the {side.name.lower()}'s clock ran out in element game {element} "
                f"({tally.players.get(side, '?')}): {after.outcome.name.lower().replace('_', ' ')}",
                game_id=game_id,
                side=side,
                stage=Stage.ELEMENT,
                **common,
            )
        if fn not in _ELEMENT_MOVES:
            return FeedLine(kind="game", text=f"{head}: ElementReferee.{fn}", game_id=game_id, **common)
        tally.moves[side] += 1
        tally.gas[side] += int(common["gas"])
        stage = before.stage.name.lower().replace("_", " ")
        if fn == "descend":
            moved = f"chunks at height {before.height}, position {before.position}"
        elif fn == "openChunk":
            moved = f"chunk {before.position}"
            if after.stage is er.Stage.ELEMENT_PROOF:
                moved += f" → element {after.element}"
        elif fn == "proveElement":
            computed = [a for name, a in events if name == "ElementComputed"]
            moved = f"element {before.element} computed on chain"
            if computed:
                moved += f" ({int(computed[0]['value']):#010x})"
            moved += f": {after.outcome.name.lower().replace('_', ' ')}"
        else:
            moved = "headers"
        return FeedLine(
            kind="move",
            text=f"{head} {side.name.lower()} ({tally.players.get(side, '?')}): element {stage}, {moved}",
            game_id=game_id,
            side=side,
            stage=Stage.ELEMENT,
            where=moved,
            **common,
        )

    def _oracle_line(
        self, fn: str, args: Mapping[str, Any], events: list[tuple[str, Mapping[str, Any]]], common: dict[str, Any]
    ) -> FeedLine:
        if "questionId" not in args:
            what = {
                "register": "registered as an oracle",
                "withdraw": "withdrew from the oracle",
                "bindGame": "bound the oracle to the dispute game",
            }.get(fn, fn)
            return FeedLine(kind="oracle", text=f"{common['sender']} {what}", **common)
        qid = int(args["questionId"])
        game_id = self._questions.get(qid)
        q = self.protocol.oracle.question(qid)
        about = f"question {qid}" + (
            f" (game {game_id}, node {q.node})" if game_id is not None else f" (node {q.node})"
        )
        if fn == "answer":
            answered = next((e for n, e in events if n == "QuestionAnswered"), None)
            outputs = [bytes(o) for o in answered["outputs"]] if answered else []
            refusals: dict[tuple[bytes, ...], str] = {
                (ORACLE_UNAVAILABLE,): "answered UNAVAILABLE (it could not fetch the inputs)",
                (ORACLE_INAPPLICABLE,): "answered INAPPLICABLE (the node does not run on the inputs)",
            }
            said = refusals.get(tuple(outputs), "answered the node's output commitments")
            text = f"{about}: {common['sender']} {said}"
        elif fn == "draw":
            assigned = next((e for n, e in events if n == "QuestionAssigned"), None)
            seated = next((e for n, e in events if n == "CommitteeSeated"), None)
            if assigned is not None:
                text = f"{about}: drawn to answer: {self.name(assigned['oracle'])}"
            elif seated is not None:
                members = ", ".join(self.name(m) for m in seated["committee"])
                text = f"{about}: committee round {seated['round']} drawn: {members}"
            elif any(n == "QuestionAbandoned" for n, _ in events):
                text = f"{about}: too few eligible oracles before the deadline; abandoned"
            else:
                text = f"{about}: too few eligible oracles; the draw waits for more"
        elif fn == "challenge":
            text = f"{about}: {common['sender']} challenged the answer; a committee will be drawn"
        elif fn == "commitVote":
            text = f"{about}: {common['sender']} committed to a vote"
        elif fn == "revealVote":
            text = f"{about}: {common['sender']} revealed its vote"
        elif fn == "reassign":
            text = f"{about}: the drawn oracle stayed silent; re-assigned"
        elif fn == "settle":
            status = next((QuestionStatus.FINAL for n, _ in events if n == "QuestionSettled"), None) or next(
                (QuestionStatus.ABANDONED for n, _ in events if n == "QuestionAbandoned"), q.status
            )
            slashed = [e for n, e in events if n == "OracleSlashed"]
            if any(n == "RoundFailed" for n, _ in events) and not status.ended:
                text = f"{about}: the committee round had no majority; another committee will be drawn"
            else:
                text = f"{about}: settled, the answer is {status.name.lower()}"
            if slashed:
                text += "; " + ", ".join(f"oracle {self.name(e['oracle'])} slashed" for e in slashed)
        else:
            text = f"{about}: {fn}"
        return FeedLine(kind="oracle", text=text, game_id=game_id, question_id=qid, **common)

    def _market_line(
        self, fn: str, args: Mapping[str, Any], events: list[tuple[str, Mapping[str, Any]]], common: dict[str, Any]
    ) -> FeedLine:
        ev = dict(events)  # the last of each name is enough for the one-per-call events
        who = common["sender"]
        game_id: int | None = None
        kind = "task"
        if fn == "postTask":
            text = f"task {ev['TaskPosted']['taskId']} posted by {who}, reward {_eth(ev['TaskPosted']['reward'])}"
        elif fn == "join":
            text = f"task {args['taskId']}: {who} joined, bond {_eth(ev['TrainerJoined']['bond'])}"
        elif fn == "commit":
            text = f"task {args['taskId']}: {who} committed to its result"
        elif fn == "enter":
            bond = _eth(ev["ChallengerEntered"]["bond"])
            text = f"task {args['taskId']}: {who} entered as an outside challenger, bond {bond}, and committed"
        elif fn == "submit":
            e = ev["ResultSubmitted"]
            text = f"task {args['taskId']}: {who} revealed its checkpoint list (group {e['group']})"
        elif fn == "claim":
            kind = "payout"
            e = ev["Claimed"]
            text = f"task {args['taskId']}: {who} claimed {_eth(e['amount'])} for {self.name(e['trainer'])}"
        elif fn == "openDispute":
            e = ev["DisputeOpened"]
            game_id = int(e["gameId"])
            tally = self._tally(game_id)
            tally.players = {Side.DEFENDER: self.name(e["defender"]), Side.CHALLENGER: self.name(e["challenger"])}
            kind = "open"
            text = (
                f"game {game_id} opened: {tally.players[Side.DEFENDER]} (group {e['defenderGroup']}) defends "
                f"against {tally.players[Side.CHALLENGER]} (group {e['challengerGroup']})"
            )
        elif fn == "settleDispute":
            game_id = int(args["gameId"])
            tally = self._tally(game_id)
            tally.settled = True
            tally.outcome = Outcome(int(ev["DisputeSettled"]["outcome"]))
            kind = "settle"
            parts = [f"game {game_id} settled in the market: {outcome_name(tally.outcome)}"]
            for n, e in events:
                if n == "TrainerEliminated":
                    parts.append(f"{self.name(e['trainer'])} eliminated, bond slashed ({_eth(e['slashed'])})")
                elif n == "CompensationPaid":
                    parts.append(f"{self.name(e['winner'])} repaid its gas, {_eth(e['amount'])}")
                elif n == "OpenerRepaid":
                    parts.append(f"opener {self.name(e['opener'])} repaid {_eth(e['amount'])}")
            text = "; ".join(parts)
        elif fn == "finalize":
            e = ev["TaskFinalized"]
            g = int(e["winningGroup"])
            whom = "refunded to the client" if g < 0 else f"won by group {g} (its live members claim it)"
            text = f"task {args['taskId']} finalized: reward {_eth(e['reward'])} {whom}"
            if "BondsForfeited" in ev:
                f = ev["BondsForfeited"]
                text += f"; {f['count']} unrevealed bond(s), {_eth(f['amount'])}, forfeit to the client"
        elif fn == "withdraw":
            kind = "payout"
            text = f"{who} withdrew {_eth(ev['Withdrawn']['amount'])}" if "Withdrawn" in ev else f"{who} withdrew"
        else:
            text = f"{who}: {fn}"
        return FeedLine(kind=kind, text=text, game_id=game_id, **common)


def _abi_type(item: Mapping[str, Any]) -> str:
    t = str(item["type"])
    if t.startswith("tuple"):
        return "(" + ",".join(_abi_type(c) for c in item["components"]) + ")" + t[len("tuple") :]
    return t


def _eth(wei: int) -> str:
    return f"{int(wei) / 10**18:.4f} ETH"


_KIND_STYLE = {
    "open": "bold yellow",
    "timeout": "bold red",
    "resolve": "bold",
    "settle": "bold",
    "oracle": "magenta",
    "payout": "green",
    "task": "cyan",
    "failed": "red",
}


def render(line: FeedLine, since: float | None = None) -> str:
    """A feed line as rich markup: time, then what happened, then its gas.

    A move reads `game 2  challenger  step bisection     steps 16..24 → steps 20..22`.
    """
    t = f"[dim]{line.at - since:6.1f}s[/] " if since is not None else ""
    gas = f" [dim]({line.gas:,} gas)[/]"
    if line.kind == "move" and line.side is not None and line.stage is not None:
        colour = "cyan" if line.side is Side.DEFENDER else "yellow"
        return (
            f"{t}game {line.game_id}  [{colour}]{line.side.name.lower():<10}[/] "
            f"{stage_name(line.stage):<18} {escape(line.where)}{gas}"
        )
    style = _KIND_STYLE.get(line.kind, "")
    text = f"[{style}]{escape(line.text)}[/]" if style else escape(line.text)
    return f"{t}{text}{gas}"
