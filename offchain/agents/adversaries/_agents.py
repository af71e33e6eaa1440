"""The catalogue's agents that attack the recompute oracle: moves beyond a strategy's, by trainers and oracles.

- `ColludingOracle`: a liar that answers and votes the outputs its allied trainer claimed in the
  game that asked (read from the game's `NodeRevealed` events), so that a lie it got final would
  win its ally the game.
- `LateOracle`: an honest oracle that registers only once a question has been asked.
- `CommitteeGrinder`: a cheating trainer that tries to choose who decides its games: it tries to
  challenge and draw in one transaction through a contract of its own, and before each draw of
  its questions it runs the draw with `eth_call` at several blocks, sending it only when the
  outcome suits it (its allied oracle answers, or sits on the committee).
- `OracleStarver`: a cheating trainer that tries to get questions asked of the oracles outside
  its task's games (`ask` straight at the oracle, `open` straight at the game, between two of its
  own accounts), which would let it tie up or slash honest oracles before its game reaches them.

Every attempt the contracts refuse is expected: the agent writes down the error and goes on
playing its games as any trainer does.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any, Final

from web3.contract import Contract

from offchain.agents.base import BUSY, Tick, idle
from offchain.agents.oracle import ANVIL_CHAIN_ID, OracleAgent
from offchain.agents.trainer import TrainerAgent
from offchain.chain.build import Artifact, compile_sources
from offchain.chain.errors import ContractRevert
from offchain.contracts._base import address
from offchain.contracts.dispute_game import Side, Stage
from offchain.contracts.recompute_oracle import RACES, Question, QuestionStatus, outputs_hash
from offchain.game.errors import GameError
from offchain.game.records import parse_node_record

# The grinder's contract. It is no part of the protocol (it is not under contracts/src): the agent
# compiles it with the protocol's settings when it first needs it.
GRINDER_SOURCE_NAME: Final = "offchain/agents/adversaries/DrawGrinder.sol"
GRINDER_SOURCE: Final = """// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {IRecomputeOracle} from "contracts/src/interfaces/IRecomputeOracle.sol";

/// @notice What a contract can try against the oracle's draws: challenge and draw the committee in one
///         transaction (reverts: the randomness of a draw is never readable in the block that requests
///         it), and run a draw to see whom it picks (with eth_call, before deciding to send it).
contract DrawGrinder {
    IRecomputeOracle private immutable _oracle;

    constructor(IRecomputeOracle oracle_) {
        _oracle = oracle_;
    }

    function challengeAndDraw(uint256 questionId) external payable {
        _oracle.challenge{value: msg.value}(questionId);
        _oracle.draw(questionId);
    }

    function drawAndShow(uint256 questionId) external returns (address answerer, address[] memory committee) {
        _oracle.draw(questionId);
        answerer = _oracle.question(questionId).oracle;
        committee = _oracle.committeeOf(questionId);
    }
}
"""
GRINDER: Final = "DrawGrinder"
EXTRA_BLOCKS: Final = 4  # blocks the grinder mines, at most, to make a draw's randomness readable before others


def grinder_artifact() -> Artifact:
    """The grinder's contract, compiled (cached under out/pybuild like the protocol's)."""
    return compile_sources({GRINDER_SOURCE_NAME: GRINDER_SOURCE})[GRINDER]


def _mine(agent: TrainerAgent) -> None:
    agent.chain.read(lambda: agent.chain.w3.provider.make_request("evm_mine", []), "evm_mine")  # type: ignore[arg-type]


class ColludingOracle(OracleAgent):
    """A liar (`liar=True`) whose lies are its allies' claims: the outputs its allied trainer's NODE record
    gives in the game that asked the question; a question that is not an ally's gets the plain lie."""

    def __init__(self, name: str, *, allies: Mapping[str, str], **kwargs: Any) -> None:
        super().__init__(name, **kwargs)
        self.allies = frozenset(address(a) for a in allies.values())

    def _lie(self, qid: int, q: Question, outputs: tuple[bytes, ...]) -> tuple[bytes, ...]:
        game = self.protocol.game
        for asked in game._logs("OracleAsked", {"questionId": qid}):
            game_id = int(asked["gameId"])
            players = game.game_of(game_id).players
            for side in Side:
                if players[side] not in self.allies:
                    continue
                for revealed in reversed(game.node_revealed(game_id)):
                    if revealed.side is side:
                        return parse_node_record(revealed.record).outputs
        return super()._lie(qid, q, outputs)


class LateOracle(OracleAgent):
    """An honest oracle that registers only once some question has been asked (until then it waits)."""

    def tick(self) -> Tick:
        if not self.db.get("oracle", "registered") and not self.protocol.oracle.asked():
            return idle()
        return super().tick()


class _Ally(TrainerAgent):
    """A cheating trainer that controls other parties (`allies`: name -> address)."""

    def __init__(self, name: str, *, allies: Mapping[str, str], **kwargs: Any) -> None:
        super().__init__(name, **kwargs)
        self.allies = frozenset(address(a) for a in allies.values())

    def tick(self) -> Tick:
        t = self.attack()
        return t if t is not None else super().tick()

    def attack(self) -> Tick | None:
        """One move of the attack, if one is due (None: play as a trainer does)."""
        raise NotImplementedError


class CommitteeGrinder(_Ally):
    """Tries to choose who decides its games (see the module's notes).

    Once per question it sends `challengeAndDraw` through its own `DrawGrinder` (reverts with
    `RecomputeOracleRandomnessPending`); when the answer is not its claim it then challenges the
    plain way, so that a committee is drawn. Before each draw of its questions (the answering
    oracle, a committee) it mines the blocks that make the randomness readable (it gets there
    first), then runs the draw with `eth_call` at `probes` successive blocks and sends it only if
    its ally is picked. What each probe saw is written down (`probe` records, by question and
    randomness request); the test compares it with the draw that was made.
    """

    def __init__(self, name: str, *, probes: int = 3, **kwargs: Any) -> None:
        super().__init__(name, **kwargs)
        self.probes = probes
        self._grinder: Contract | None = None

    def attack(self) -> Tick | None:
        game, oracle = self.protocol.game, self.protocol.oracle
        for key, rec in list(self.db.all("game")):
            if rec.get("status") == "done":
                continue
            game_id = int(key)
            view = game.game_of(game_id)
            if view.stage is not Stage.ORACLE:
                continue
            qid = view.question_id
            q = oracle.question(qid)
            answered = q.status is QuestionStatus.ANSWERED and self.chain_time() <= q.deadline
            if answered and not self.db.get("grind", qid):
                return self._challenge_and_draw(game_id, Side(int(rec["side"])), qid, q)
            if q.status.drawing and not self.db.get("probe", f"{qid}:{q.request_id}"):
                return self._probe(qid, q)
        return None

    def grinder(self) -> Contract:
        """Its `DrawGrinder`, deployed on first use (the address is kept in its records)."""
        if self._grinder is None:
            artifact = grinder_artifact()
            rec = self.db.get("grinder", "contract")
            if rec is None:
                deployed = self.chain.deploy(artifact, self.protocol.oracle.address)
                self.db.put("grinder", "contract", {"address": deployed.address})
                self.say(f"deployed its DrawGrinder at {deployed.address}")
                self._grinder = deployed.contract
            else:
                self.chain.register(artifact)
                self._grinder = self.chain.contract(artifact, rec["address"])
        return self._grinder

    def _claimed(self, game_id: int, side: Side) -> bytes:
        """The outputs hash of the NODE record it revealed in game `game_id`."""
        for revealed in reversed(self.protocol.game.node_revealed(game_id)):
            if revealed.side is side:
                return outputs_hash(parse_node_record(revealed.record).outputs)
        raise GameError(f"game {game_id}: no NODE record of ours was revealed")

    def _challenge_and_draw(self, game_id: int, side: Side, qid: int, q: Question) -> Tick:
        oracle = self.protocol.oracle
        grinder = self.grinder()
        try:
            self.chain.send(grinder.functions.challengeAndDraw(qid), value=oracle.challenge_bond())
            refused = ""
        except ContractRevert as e:
            refused = e.error_name or str(e)
        self.db.put("grind", qid, {"challenge_and_draw": refused or "went through"})
        if refused:
            self.say(f"question {qid}: tried to challenge and draw the committee in one transaction: {refused}")
        else:
            self.say(f"question {qid}: challenged and drew the committee in one transaction")
            return BUSY
        if q.outputs_hash != self._claimed(game_id, side):
            try:
                oracle.challenge(qid)
            except RACES:
                return BUSY
            self.db.update("grind", qid, challenged=True)
            self.say(f"question {qid}: challenged the answer, to have a committee drawn")
            return self._probe(qid, oracle.question(qid)) or BUSY  # before anyone else can draw it
        return BUSY

    def _probe(self, qid: int, q: Question) -> Tick | None:
        oracle = self.protocol.oracle
        anvil = self.chain.chain_id == ANVIL_CHAIN_ID
        for _ in range(EXTRA_BLOCKS):
            if oracle.draw_ready(qid) or not anvil:
                break
            _mine(self)  # on anvil a block comes only with a transaction: it mines the ones it waits for, first
        if not oracle.draw_ready(qid):
            return None
        committee = q.status is QuestionStatus.COMMITTEE_DRAWING
        seated_before = len(oracle.committee_of(qid))
        grinder = self.grinder()
        probes: list[dict[str, Any]] = []
        drew = False
        for i in range(self.probes):
            block = self.chain.block_number()
            try:
                answerer, seated = self.chain.call(grinder.functions.drawAndShow(qid))
            except ContractRevert as e:
                probes.append({"block": block, "error": e.error_name or str(e)})
                break
            if committee:
                picked = [address(a) for a in seated[seated_before:]]
            else:
                picked = [address(answerer)] if address(answerer) != q.oracle else []
            favourable = bool(self.allies & set(picked))
            probes.append({"block": block, "picked": picked, "favourable": favourable})
            if favourable:
                try:
                    oracle.draw(qid)
                    drew = True
                except RACES:
                    pass
                break
            if i + 1 < self.probes and anvil:
                _mine(self)  # the next block: perhaps another outcome (there is none: the seed is fixed)
        what = "committee" if committee else "answering oracle"
        self.db.put("probe", f"{qid}:{q.request_id}", {"question": qid, "request": q.request_id, "probes": probes})
        outcomes = {tuple(p.get("picked", ())) for p in probes}
        verdict = "drew it (its ally is picked)" if drew else "left the draw to others"
        self.say(
            f"question {qid}: ran the {what} draw at blocks {[p['block'] for p in probes]}: "
            f"{len(outcomes)} outcome(s); {verdict}"
        )
        return BUSY


class OracleStarver(_Ally):
    """Once it has submitted, asks a junk question straight at the oracle, then opens a game straight
    at the dispute game between itself and its ally (both refused: only the game asks, only the market
    opens games); its ally oracle registers on its own (a `ColludingOracle`)."""

    def attack(self) -> Tick | None:
        for key, rec in list(self.db.all("task")):
            if rec.get("status") != "submitted":
                continue
            task_id = int(key)
            done = self.db.get("starve", task_id) or {}
            if "ask" not in done:
                return self._ask(task_id)
            if "open" not in done:
                return self._open(task_id)
        return None

    def _sybil(self) -> str:
        return min(self.allies)

    def _ask(self, task_id: int) -> Tick:
        spec = self.protocol.market.spec_of(task_id)
        junk = [hashlib.sha256(f"junk/{task_id}/{i}".encode()).digest() for i in range(2)]
        try:
            qid = self.protocol.oracle.ask(spec.program_hash, 0, junk, (self.address, self._sybil()))
            refused, what = "", f"asked junk question {qid}"
        except ContractRevert as e:
            refused = e.error_name or str(e)
            what = f"asked the oracle a junk question directly: refused ({refused})"
        self.db.put("starve", task_id, {"ask": refused or "went through"})
        self.say(f"task {task_id}: {what}")
        return BUSY

    def _open(self, task_id: int) -> Tick:
        market, game = self.protocol.market, self.protocol.game
        spec = market.spec_of(task_id)
        mine = self._runs[task_id].witness.checkpoints.root if task_id in self._runs else b"\x01" * 32
        other = hashlib.sha256(b"sybil/" + mine).digest()
        try:
            game_id = game.open(spec.config(), self.address, mine, self._sybil(), other)
            refused, what = "", f"opened game {game_id} against its own sybil"
        except ContractRevert as e:
            refused = e.error_name or str(e)
            what = f"opened a game against its own sybil directly: refused ({refused})"
        self.db.update("starve", task_id, open=refused or "went through")
        self.say(f"task {task_id}: {what}")
        return BUSY
