"""The oracle agent: register with a bond, answer the questions drawn for it, challenge wrong answers, vote.

A question names a program (by hash), one node, and the sha256 of its input commitments.
The players publish the input tensors and the list of their commitments (a blob keyed by
exactly that hash) to the public store; the oracle fetches them (every tensor is checked
against its commitment by the store), runs the single node with the RepOps interpreter
and answers the output commitments. It recomputes every other oracle's answers too, and
challenges one it can prove wrong (it is then excluded from the committee); drawn onto a
committee, it votes what it computed. Once a window has passed it settles the question.

`liar=True` makes the catalogue's lying oracle: it answers (and votes) a wrong output.

`registers_after_question=True` is a test arrangement: the oracle registers only once some
question has been assigned, so that an oracle registered before it (the lying one of the
catalogue's `lying-oracle` entry) is the one drawn for the first question, and it is there
to challenge the answer and to sit on the committee. A real oracle registers at once.
"""

from __future__ import annotations

import contextlib
import hashlib
from typing import Any

from offchain.agents.base import BUSY, Agent, Tick, idle
from offchain.contracts.recompute_oracle import QuestionStatus, RecomputeOracleAlreadyVoted
from offchain.game.player import recompute
from offchain.store import StoreError
from trainer.interp import Interpreter


def outputs_hash(outputs: list[bytes]) -> bytes:
    return hashlib.sha256(b"".join(outputs)).digest()


class OracleAgent(Agent):
    role = "oracle"

    def __init__(
        self,
        name: str,
        *,
        liar: bool = False,
        registers_after_question: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(name, **kwargs)  # rpc_url, private_key, deployment, artifacts, home, public, observer
        self.liar = liar
        self.registers_after_question = registers_after_question
        self._interpreters: dict[bytes, Interpreter] = {}
        self.nodes_recomputed = 0

    def tick(self) -> Tick:
        oracle = self.protocol.oracle
        if not self.db.get("oracle", "registered"):
            if self.registers_after_question and not oracle._logs("QuestionAssigned"):
                return idle()
            if not oracle.is_active(self.address):
                oracle.register()
                self.say(f"registered as an oracle with a bond of {oracle.min_bond() / 1e18:.2f} ETH")
            self.db.put("oracle", "registered", {"at": self.chain_time()})
            return BUSY
        self._discover()
        now = self.chain_time()
        waits: list[int] = []
        for key, rec in list(self.db.all("question")):
            if rec.get("status") == "done":
                continue
            t = self._handle(int(key), rec, now)
            if t.busy:
                return t
            if t.until is not None:
                waits.append(t.until)
        if not waits:
            credit = oracle.credit_of(self.address)
            if credit > 0:  # fees, a challenger's reward and its bond back
                w = oracle.withdraw()
                self.say(f"withdrew {w.amount / 1e18:.6f} ETH of fees and rewards")
                return BUSY
        return idle(min(waits) if waits else None)

    def _discover(self) -> None:
        oracle = self.protocol.oracle
        head = self.chain.block_number()
        start = self.db.cursor("questions")
        if start > head:
            return
        for event in ("QuestionAssigned", "QuestionAnswered", "AnswerChallenged"):
            for e in oracle._logs(event, from_block=start):
                qid = int(e["questionId"])
                if self.db.get("question", qid) is None:
                    self.db.put("question", qid, {"status": "open"})
        self.db.set_cursor("questions", head + 1)

    def _handle(self, qid: int, rec: dict[str, Any], now: int) -> Tick:
        oracle = self.protocol.oracle
        q = oracle.question(qid)
        me = self.address
        if q.status in (QuestionStatus.FINAL, QuestionStatus.ABANDONED):
            self.db.update("question", qid, status="done")
            return BUSY
        if q.status is QuestionStatus.ASSIGNED:
            if q.oracle != me:
                return idle(q.deadline + 1)
            if now > q.deadline:
                return idle()
            outputs = self._outputs(qid, q.program_hash, q.node, q.inputs_hash)
            if outputs is None:
                return idle(q.deadline)
            if self.liar:
                outputs = _wrong(outputs)
            oracle.answer(qid, outputs)
            self.say(f"question {qid}: answered node {q.node}{' (a lie)' if self.liar else ''}")
            return BUSY
        if q.status is QuestionStatus.ANSWERED:
            if now > q.deadline:
                oracle.settle(qid)
                self.say(f"question {qid}: challenge window over; the answer is final")
                return BUSY
            if q.oracle != me and not self.liar and not rec.get("checked"):
                outputs = self._outputs(qid, q.program_hash, q.node, q.inputs_hash)
                if outputs is None:
                    return idle(q.deadline + 1)
                self.db.update("question", qid, checked=True)
                if outputs_hash(outputs) != q.outputs_hash:
                    committee = oracle.challenge(qid)
                    self.say(f"question {qid}: the answer is wrong; challenged it (committee of {len(committee)})")
                    return BUSY
            return idle(q.deadline + 1)
        if q.status is QuestionStatus.CHALLENGED:
            committee = oracle.committee_of(qid)
            if me in committee and not rec.get("voted"):
                outputs = self._outputs(qid, q.program_hash, q.node, q.inputs_hash)
                if outputs is None:
                    return idle(q.deadline)
                if self.liar:
                    outputs = _wrong(outputs)
                with contextlib.suppress(RecomputeOracleAlreadyVoted):  # it landed, but its answer was lost
                    oracle.vote(qid, outputs)
                self.db.update("question", qid, voted=True)
                self.say(f"question {qid}: voted on the challenged answer")
                return BUSY
            votes = len(oracle._logs("CommitteeVoted", {"questionId": qid}))
            if now > q.deadline or votes >= len(committee):
                oracle.settle(qid)
                self.say(f"question {qid}: the committee's vote is counted")
                return BUSY
            return idle(q.deadline + 1)
        return idle()

    def _outputs(self, qid: int, program_hash: bytes, node: int, inputs_hash: bytes) -> list[bytes] | None:
        """The node's output commitments, or None while its inputs are not (validly) published."""
        try:
            listing = self.public.get_blob(inputs_hash)
            if len(listing) % 32:
                raise StoreError(f"the input list of question {qid} is {len(listing)} bytes, not a list of words")
            inputs = [listing[i : i + 32] for i in range(0, len(listing), 32)]
            interpreter = self._interpreters.get(program_hash)
            if interpreter is None:
                interpreter = Interpreter(self.public.get_program(program_hash))
                self._interpreters[program_hash] = interpreter
            outputs = recompute(interpreter, node, inputs, self.public.get_tensor)
        except StoreError as e:
            rec = self.db.get("question", qid) or {}
            if not rec.get("missing"):
                self.say(f"question {qid}: cannot recompute yet: {e}")
                self.db.update("question", qid, missing=True)
            return None
        self.nodes_recomputed += 1
        return outputs


def _wrong(outputs: list[bytes]) -> list[bytes]:
    first = outputs[0]
    return [bytes([first[0] ^ 1]) + first[1:], *outputs[1:]]
