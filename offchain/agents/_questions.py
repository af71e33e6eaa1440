"""The permissionless calls on an oracle question that anyone makes once they are due.

Trainers and the watcher keep their games' questions moving whether or not an oracle agent
does: a silent answering oracle is re-assigned, an answer whose challenge window passed (or
a committee round whose reveal window passed) is settled, and a draw whose deadline passed
is made, which abandons the question when still too few oracles are eligible. Each call may
lose a race to another party that made it first; that is not an error.
"""

from __future__ import annotations

from offchain.agents.base import BUSY, Tick, idle
from offchain.contracts.recompute_oracle import RACES, Question, QuestionStatus, RecomputeOracleClient


def tend(oracle: RecomputeOracleClient, qid: int, q: Question, now: int) -> tuple[Tick, str | None]:
    """The due call on question `qid` (read as `q` at chain time `now`), made; what to say about it, if any."""
    if now <= q.deadline or q.status.ended:
        return idle(q.deadline + 1), None
    try:
        if q.status is QuestionStatus.ASSIGNED:
            oracle.reassign(qid)
            return BUSY, "the drawn oracle stayed silent; re-assigned the question"
        if q.status in (QuestionStatus.ANSWERED, QuestionStatus.VOTING):
            status = oracle.settle(qid)
            return BUSY, f"settled oracle question {qid} ({status.name.lower()})"
        if q.status.drawing:
            if not oracle.draw_ready(qid):
                return idle(block=True), None
            d = oracle.draw(qid)
            return BUSY, f"oracle question {qid}: drew after the deadline{' (abandoned)' if d.abandoned else ''}"
    except RACES:
        return BUSY, None
    return idle(), None
