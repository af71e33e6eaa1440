"""The oracle agent: register with a bond, draw, answer, challenge wrong answers, commit and reveal votes.

A question names a program (by hash), one node, and the sha256 of its input commitments.
The players publish the input tensors and the list of their commitments (a blob keyed by
exactly that hash) to the public store; the oracle fetches them (every tensor is checked
against its commitment by the store), runs the single node with the RepOps interpreter
and answers the output commitments. On every question it sees, in whatever role:

- **Draws.** A question waiting for its draw (`Drawing`, `CommitteeDrawing`) is drawn by
  anyone once its randomness is readable; the oracle calls `draw` (losing the race to
  another caller is normal). On anvil (chain 31337), where a block is mined only with a
  transaction, it mines one so that the randomness becomes readable. A draw that found too
  few eligible oracles requested fresh randomness: it is tried again only once an oracle
  registered since, or after the draw's deadline (when it abandons the question).
- **Answers.** Drawn to answer, it answers what it computed. Two refusals are answers too:
  inputs it cannot fetch (missing or corrupt in the store) are answered
  `[ORACLE_UNAVAILABLE]` once half the answer window has passed without them; inputs it
  fetched but on which the node does not run (shapes that do not fit it, any exception of
  the interpreter or a kernel) are answered `[ORACLE_INAPPLICABLE]`. Both rules come from
  `offchain.contracts.recompute_oracle`, and the verdict and its reason are written to the
  agent's records.
- **Challenges.** It recomputes every other oracle's answer by the same rules and challenges
  one that differs from its own verdict (a wrong value, or an UNAVAILABLE where it did fetch
  the inputs); it never challenges when it cannot fetch the inputs itself.
- **Committees.** Seated on the current committee round, it computes its verdict, draws a
  random 32-byte salt and writes (question, round, outputs hash, salt) to its records before
  sending `commitVote`; it reveals once the commit phase is over (or every member
  committed), from the records, so a restarted agent reveals with the salt it committed to.
- **Housekeeping.** It re-assigns a silent oracle, settles questions whose windows passed
  (or whose committee all revealed), and withdraws its fees and rewards.

A question whose handling fails (any exception but an unreachable RPC) is written down with
the error and left for the next tick; the other questions go on.

`liar=True` makes the catalogue's lying oracle: it answers (and votes) a wrong output, and
checks nobody. With `lies_only_when_answering=True` it lies only in its own answers and
checks others' answers and votes honestly (the catalogue's `lying-oracle` entry casts every
oracle so, since the draw decides who answers).
"""

from __future__ import annotations

import contextlib
import secrets
from dataclasses import dataclass
from typing import Any, Final

import torch

from offchain.agents.base import BUSY, Agent, Tick, idle
from offchain.chain.errors import ChainUnreachableError, InsufficientFundsError
from offchain.contracts.recompute_oracle import (
    ORACLE_INAPPLICABLE,
    ORACLE_UNAVAILABLE,
    RACES,
    Question,
    QuestionStatus,
    RecomputeOracleAlreadyCommitted,
    RecomputeOracleAlreadyRevealed,
    RecomputeOracleDeadlinePassed,
    RecomputeOracleRevealTooEarly,
    outputs_hash,
    vote_commitment,
)
from offchain.game.errors import GameError
from offchain.game.player import recompute
from offchain.store import StoreError
from trainer.interp import Interpreter
from trainer.program import Program

ANVIL_CHAIN_ID: Final = 31337
EXPIRY_BLOCKS: Final = 256  # a randomness request older than this many blocks has expired (BlockhashRandomness)
FETCH_GRACE: Final = 0.5  # of a window: how long missing inputs are waited for before answering UNAVAILABLE

COMPUTED: Final = "computed"
UNAVAILABLE: Final = "unavailable"
INAPPLICABLE: Final = "inapplicable"


@dataclass(frozen=True, slots=True)
class Verdict:
    """What the oracle finds a question's answer to be, and why."""

    kind: str  # COMPUTED, UNAVAILABLE or INAPPLICABLE
    outputs: tuple[bytes, ...]
    reason: str = ""

    @property
    def hash(self) -> bytes:
        return outputs_hash(self.outputs)

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "outputs": [o.hex() for o in self.outputs], "reason": self.reason}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Verdict:
        return cls(str(d["kind"]), tuple(bytes.fromhex(o) for o in d["outputs"]), str(d.get("reason", "")))


class OracleAgent(Agent):
    role = "oracle"

    def __init__(
        self,
        name: str,
        *,
        liar: bool = False,
        lies_only_when_answering: bool = False,
        mine_blocks: bool | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(name, **kwargs)  # rpc_url, private_key, deployment, artifacts, home, public, observer
        self.liar = liar
        self.lies_only_when_answering = lies_only_when_answering
        # None: mine a block when a draw waits for one, on anvil only (elsewhere blocks come by themselves).
        self.mine_blocks = self.chain.chain_id == ANVIL_CHAIN_ID if mine_blocks is None else mine_blocks
        self._interpreters: dict[bytes, Interpreter] = {}
        self.nodes_recomputed = 0

    @property
    def lies_in_votes(self) -> bool:
        return self.liar and not self.lies_only_when_answering

    def tick(self) -> Tick:
        oracle = self.protocol.oracle
        if not self.db.get("oracle", "registered"):
            # bond_of, not is_active: an oracle is active only from the block after it registered.
            if oracle.bond_of(self.address) < oracle.min_bond():
                try:
                    oracle.register()
                except InsufficientFundsError as e:
                    raise InsufficientFundsError(
                        e.address,
                        e.balance,
                        e.needed,
                        f"an oracle registers with a bond of {oracle.min_bond() / 1e18:.2f} ETH (the oracle's "
                        "minBond) plus gas",
                    ) from None
                self.say(f"registered as an oracle with a bond of {oracle.min_bond() / 1e18:.2f} ETH")
            self.db.put("oracle", "registered", {"at": self.chain_time(), "block": self.chain.block_number()})
            return BUSY
        self._discover()
        now = self.chain_time()
        waits: list[int] = []
        block = False
        for key, rec in list(self.db.all("question")):
            if rec.get("status") == "done":
                continue
            qid = int(key)
            try:
                t = self._handle(qid, rec, now)
            except ChainUnreachableError:
                raise
            except Exception as e:  # one question's trouble is written down; the others go on
                self._failed(qid, rec, e)
                continue
            if t.busy:
                return t
            block = block or t.block
            if t.until is not None:
                waits.append(t.until)
        if not waits and not block:
            credit = oracle.credit_of(self.address)
            if credit > 0:  # fees, a challenger's reward and its bond back
                try:
                    w = oracle.withdraw()
                except RACES:
                    return BUSY
                self.say(f"withdrew {w.amount / 1e18:.6f} ETH of fees and rewards")
                return BUSY
        return idle(min(waits) if waits else None, block=block)

    def _discover(self) -> None:
        oracle = self.protocol.oracle
        head = self.chain.block_number()
        start = self.db.cursor("questions")
        if start > head:
            return
        for e in oracle._logs("QuestionAsked", from_block=start):
            qid = int(e["questionId"])
            if self.db.get("question", qid) is None:
                self.db.put("question", qid, {"status": "open", "asked_block": int(e["_block"])})
        self.db.set_cursor("questions", head + 1)

    def _failed(self, qid: int, rec: dict[str, Any], e: Exception) -> None:
        error = f"{type(e).__name__}: {e}"
        errors = int(rec.get("errors", 0)) + 1
        self.db.update("question", qid, errors=errors, last_error=error)
        if rec.get("last_error") != error:  # say each new trouble once
            self.say(f"question {qid}: handling it failed ({error}); will try again")

    # -- one question --------------------------------------------------------------------------

    def _handle(self, qid: int, rec: dict[str, Any], now: int) -> Tick:
        oracle = self.protocol.oracle
        q = oracle.question(qid)
        me = self.address
        if q.status.ended:
            self.db.update("question", qid, status="done", outcome=q.status.name.lower(), final=q.outputs_hash.hex())
            return BUSY
        if q.status.drawing:
            return self._draw(qid, rec, q, now)
        if q.status is QuestionStatus.ASSIGNED:
            if q.oracle != me:
                return self._reassign_if_due(qid, q, now)
            if now > q.deadline:
                if not rec.get("missed"):
                    self.db.update("question", qid, missed=True)
                    self.say(f"question {qid}: the answer window closed before we answered")
                return self._reassign_if_due(qid, q, now)
            return self._answer(qid, q, now)
        if q.status is QuestionStatus.ANSWERED:
            if now > q.deadline:
                return self._settle(qid, "the challenge window is over; the answer is final")
            if q.oracle != me and not self.lies_in_votes and not rec.get("checked"):
                return self._check(qid, q, now)
            return idle(q.deadline + 1)
        if q.status is QuestionStatus.VOTING:
            return self._vote(qid, q, now)
        return idle()

    def _draw(self, qid: int, rec: dict[str, Any], q: Question, now: int) -> Tick:
        """Draw the question's answering oracle or committee once its randomness is readable."""
        oracle = self.protocol.oracle
        since = self._failed_draw_since(qid, rec, q)
        if since is not None and now <= q.deadline and not self._registered_since(since):
            # The last draw found too few eligible oracles; nothing changed since: wait for the deadline.
            return idle(q.deadline + 1)
        if not oracle.draw_ready(qid):
            if self.mine_blocks:
                self.chain.read(lambda: self.chain.w3.provider.make_request("evm_mine", []), "evm_mine")  # type: ignore[arg-type]
                return BUSY
            return idle(block=True)
        what = "committee" if q.status is QuestionStatus.COMMITTEE_DRAWING else "answering oracle"
        try:
            d = oracle.draw(qid)
        except RACES:  # another party drew first, or the randomness is not readable in this block after all
            return BUSY
        if d.assignment is not None:
            mine = " (us)" if d.assignment.oracle == self.address else ""
            self.say(f"question {qid}: drew the answering oracle {d.assignment.oracle}{mine}")
        elif d.seating is not None:
            seated = " (we sit on it)" if self.address in d.seating.committee else ""
            self.say(f"question {qid}: drew committee round {d.seating.round}{seated}")
        elif d.abandoned:
            self.say(f"question {qid}: no {what} could be drawn before the deadline; the question is abandoned")
        else:
            self.say(f"question {qid}: too few eligible oracles for the {what}; waiting for more")
        return BUSY

    def _failed_draw_since(self, qid: int, rec: dict[str, Any], q: Question) -> int | None:
        """The block of the request whose draw failed (and made the pending request), if the pending one came
        from a failed draw; None if it came from `ask`, a re-assignment, a challenge or a failed round."""
        oracle = self.protocol.oracle
        start = int(rec.get("asked_block", 0))
        requests = [int(e["_block"]) for e in oracle._logs("DrawRequested", {"questionId": qid}, from_block=start)]
        if len(requests) < 2:
            return None
        previous = requests[-2]
        for event in ("QuestionAssigned", "AnswerChallenged", "RoundFailed"):
            causes = oracle._logs(event, {"questionId": qid}, from_block=previous)
            if any(int(e["_block"]) <= requests[-1] for e in causes):
                return None  # something else happened between the two requests
        if requests[-1] - previous > EXPIRY_BLOCKS:
            return None  # the earlier randomness expired: the fresh one may well draw
        return previous

    def _registered_since(self, block: int) -> bool:
        return bool(self.protocol.oracle._logs("OracleRegistered", from_block=block))

    def _reassign_if_due(self, qid: int, q: Question, now: int) -> Tick:
        if now <= q.deadline:
            return idle(q.deadline + 1)
        try:
            self.protocol.oracle.reassign(qid)
        except RACES:
            return BUSY
        self.say(f"question {qid}: the drawn oracle stayed silent; re-assigned it")
        return BUSY

    def _settle(self, qid: int, what: str) -> Tick:
        try:
            status = self.protocol.oracle.settle(qid)
        except RACES:  # someone settled first
            return BUSY
        self.say(f"question {qid}: {what} ({status.name.lower()})")
        return BUSY

    def _answer(self, qid: int, q: Question, now: int) -> Tick:
        window = self.protocol.oracle.params().answer_window
        verdict, wait = self._verdict(qid, q, now, since=q.deadline - window, window=window)
        if verdict is None:
            return idle(min(wait, q.deadline))
        outputs = self._lie(qid, q, verdict.outputs) if self.liar else verdict.outputs
        self.db.update("question", qid, answered=outputs_hash(outputs).hex(), answered_kind=verdict.kind)
        try:
            self.protocol.oracle.answer(qid, list(outputs))
        except RACES:
            return BUSY
        lie = " (a lie)" if self.liar else ""
        kinds = {
            COMPUTED: f"answered node {q.node}{lie}",
            UNAVAILABLE: f"answered UNAVAILABLE{lie}: {verdict.reason}",
            INAPPLICABLE: f"answered INAPPLICABLE{lie}: {verdict.reason}",
        }
        self.say(f"question {qid}: {kinds[verdict.kind]}")
        return BUSY

    def _check(self, qid: int, q: Question, now: int) -> Tick:
        """Recompute another oracle's answer; challenge it if it differs from our verdict."""
        window = self.protocol.oracle.params().challenge_window
        verdict, wait = self._verdict(qid, q, now, since=q.deadline - window, window=window)
        if verdict is None:
            return idle(min(wait, q.deadline + 1))
        self.db.update("question", qid, checked=True)
        if verdict.hash == q.outputs_hash:
            return idle(q.deadline + 1)
        if verdict.kind == UNAVAILABLE:
            self.say(f"question {qid}: cannot fetch the inputs to check the answer ({verdict.reason}); no challenge")
            return idle(q.deadline + 1)
        try:
            self.protocol.oracle.challenge(qid)
        except RACES:  # someone challenged first, or the window closed
            return BUSY
        self.db.update("question", qid, challenged=True)
        self.say(f"question {qid}: the answer differs from ours ({verdict.kind}); challenged it")
        return BUSY

    def _vote(self, qid: int, q: Question, now: int) -> Tick:
        oracle = self.protocol.oracle
        members = oracle.current_committee(qid, q.round)
        seatings = oracle.seatings(qid)
        seated_at = seatings[-1].block if seatings else 0
        me = self.address
        if me in members:
            t = self._ballot(qid, q, now, members, seated_at)
            if t is not None:
                return t
        revealed = oracle.reveals(qid, from_block=seated_at)
        if now > q.deadline or all(m in revealed for m in members):
            return self._settle(qid, f"counted committee round {q.round}")
        if now <= q.commit_deadline:
            return idle(q.commit_deadline + 1)
        return idle(q.deadline + 1)

    def _ballot(self, qid: int, q: Question, now: int, members: tuple[str, ...], seated_at: int) -> Tick | None:
        """A seated member's commit, then reveal; None when it has nothing to do now."""
        oracle = self.protocol.oracle
        key = f"{qid}:{q.round}"
        vote = self.db.get("vote", key)
        if vote is None:
            if now > q.commit_deadline:
                self.db.put("vote", key, {"question": qid, "round": q.round, "missed": True})
                self.say(f"question {qid}: the commit phase of round {q.round} closed before we voted")
                return BUSY
            window = oracle.params().vote_window
            verdict, wait = self._verdict(qid, q, now, since=q.commit_deadline - window, window=window)
            if verdict is None:
                return idle(min(wait, q.commit_deadline))
            votes = self._lie(qid, q, verdict.outputs) if self.lies_in_votes else verdict.outputs
            votes_hash = outputs_hash(votes)
            salt = secrets.token_bytes(32)
            commitment = vote_commitment(qid, self.address, votes_hash, salt)
            vote = {
                "question": qid,
                "round": q.round,
                "outputs_hash": votes_hash.hex(),
                "salt": salt.hex(),
                "commitment": commitment.hex(),
                "kind": verdict.kind,
                "reason": verdict.reason,
                "committed": False,
                "revealed": False,
            }
            self.db.put("vote", key, vote)  # before commitVote: a restart must reveal this very salt
        if vote.get("missed"):
            return None
        if not vote["committed"]:
            if now > q.commit_deadline:
                self.db.update("vote", key, missed=True)
                self.say(f"question {qid}: the commit phase of round {q.round} closed before our commitment landed")
                return BUSY
            with contextlib.suppress(RecomputeOracleAlreadyCommitted):  # it landed before; its answer was lost
                oracle.commit_vote(qid, bytes.fromhex(vote["commitment"]))
            self.db.update("vote", key, committed=True)
            self.say(f"question {qid}: committed to our vote in round {q.round} ({vote['kind']})")
            return BUSY
        if vote["revealed"]:
            return None
        committed = oracle.commitments(qid, from_block=seated_at)
        if now <= q.commit_deadline and not all(m in committed for m in members):
            return idle(q.commit_deadline + 1)
        if now > q.deadline:
            self.db.update("vote", key, missed=True)
            return None
        try:
            oracle.reveal_vote(qid, bytes.fromhex(vote["outputs_hash"]), bytes.fromhex(vote["salt"]))
        except RecomputeOracleAlreadyRevealed:
            pass
        except RecomputeOracleRevealTooEarly:
            return idle(q.commit_deadline + 1)
        except RecomputeOracleDeadlinePassed:
            self.db.update("vote", key, missed=True)
            return BUSY
        self.db.update("vote", key, revealed=True)
        self.say(f"question {qid}: revealed our vote in round {q.round}")
        return BUSY

    def _lie(self, qid: int, q: Question, outputs: tuple[bytes, ...]) -> tuple[bytes, ...]:
        """What a liar answers or votes instead of `outputs` (its verdict): the verdict with one bit flipped."""
        return _wrong(outputs)

    # -- the verdict ---------------------------------------------------------------------------

    def _verdict(self, qid: int, q: Question, now: int, *, since: int, window: int) -> tuple[Verdict | None, int]:
        """Our verdict on the question, or (None, t): the inputs are not (validly) published yet, and we wait
        for them until chain time t (`FETCH_GRACE` of the window that began at `since`), then say UNAVAILABLE.

        Computed and inapplicable verdicts are kept in the records (the node runs once per question); an
        unavailable one is not, so a later role (a committee seat) tries the store again.
        """
        rec = self.db.get("question", qid) or {}
        if rec.get("verdict"):
            return Verdict.from_json(rec["verdict"]), now
        try:
            program, inputs, tensors = self._fetch(qid, q)
        except (StoreError, GameError, OSError) as e:
            grace_end = since + int(window * FETCH_GRACE)
            reason = f"{type(e).__name__}: {e}"
            if now < grace_end:
                if not rec.get("missing"):
                    self.say(f"question {qid}: cannot fetch the inputs yet ({reason}); waiting until {grace_end}")
                    self.db.update("question", qid, missing=True)
                return None, grace_end
            verdict = Verdict(UNAVAILABLE, (ORACLE_UNAVAILABLE,), reason)
            self.db.update("question", qid, unavailable=reason)
            return verdict, now
        try:
            interpreter = self._interpreters.get(q.program_hash)
            if interpreter is None:
                assert program is not None
                interpreter = self._interpreters[q.program_hash] = Interpreter(program)
            outputs = recompute(interpreter, q.node, inputs, tensors.__getitem__)
            verdict = Verdict(COMPUTED, tuple(outputs))
        except Exception as e:  # the node does not run on these inputs: shapes, dtypes, a kernel's own checks
            verdict = Verdict(INAPPLICABLE, (ORACLE_INAPPLICABLE,), f"{type(e).__name__}: {e}")
        self.nodes_recomputed += 1
        self.db.update("question", qid, verdict=verdict.to_json(), missing=False)
        return verdict, now

    def _fetch(self, qid: int, q: Question) -> tuple[Program | None, list[bytes], dict[bytes, torch.Tensor]]:
        """The program (None when its interpreter is cached), the input commitments and the tensors, from the
        public store (each get re-checks its commitment); a StoreError when one is missing or corrupt."""
        listing = self.public.get_blob(q.inputs_hash)
        if len(listing) % 32:
            raise StoreError(f"the input list of question {qid} is {len(listing)} bytes, not a list of words")
        inputs = [listing[i : i + 32] for i in range(0, len(listing), 32)]
        tensors = {c: self.public.get_tensor(c) for c in inputs}
        program = None if q.program_hash in self._interpreters else self.public.get_program(q.program_hash)
        return program, inputs, tensors


def _wrong(outputs: tuple[bytes, ...]) -> tuple[bytes, ...]:
    first = outputs[0]
    return (bytes([first[0] ^ 1]) + first[1:], *outputs[1:])
