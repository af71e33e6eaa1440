"""Stage ELEMENT of a dispute game, as the agents play it (docs/game.md section 2.7).

When a node whose operator the element table covers is disputed on agreed inputs, DisputeGame opens a
game on its bound ElementReferee (`GameView.element_game`) and waits in stage ELEMENT. The players move
there, on the referee: `element_move` makes the move of one side from its `ElementSide` (the agreed
inputs and its own output, from its `RunWitness`); `element_due` is what anyone may do for the game
(the referee's `timeout` once the side to move let its clock run out, DisputeGame's `resolveElement`
once the referee game is decided). Every call reads the referee's state first, so a tick taken again
(after a crash, or a lost race) makes the move that is due then, never one twice.

An isolated element of an mm or addmm node goes to a dot game (docs/game.md 2.8, `dot_move`), of a
transcendental function to a trace game (2.9, `trace_move`), of a `sum.dim_IntList` node to a sum game
(2.10, `sum_move`): the defender hands it over at stage ElementProof (`DotReferee.start`, `startTrace`,
`startSum`), both play there, and anyone settles the outcome back (`settleTrace`, `settleSum`; the dot game
settles itself) once that game is decided. Which game took an element over is read from the chain
(`takenOver`, `tracedBy`, `summedBy`), never from an agent's memory.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import torch

from offchain.agents.base import BUSY, Tick, idle
from offchain.contracts import dot_referee as dr
from offchain.contracts import element_referee as er
from offchain.contracts import sum_referee as sr
from offchain.contracts import trace_referee as tr
from offchain.contracts.dispute_game import (
    DisputeGameClient,
    DisputeGameWrongStage,
    GameView,
    Side,
)
from offchain.game.dot import DotSide
from offchain.game.element import ElementSide
from offchain.game.element_table import (
    DOT_OPS,
    PERMUTE,
    SUM_OPS,
    TRACE_BASE,
    TRACE_OPS,
    permute_dims,
    trace_function,
)
from offchain.game.sum import SumSide
from offchain.game.witness import RunWitness
from trainer.program.program import encode_args
from trainer.repops import programs

# Lost races on the permissionless calls: someone else timed the game out or resolved it first.
RACES = (
    er.ElementRefereeNotPlaying,
    er.ElementRefereeClockRunning,
    DisputeGameWrongStage,
    dr.DotRefereeNotPlaying,
    dr.DotRefereeClockRunning,
    tr.TraceRefereeNotPlaying,
    tr.TraceRefereeClockRunning,
    sr.SumRefereeNotPlaying,
    sr.SumRefereeClockRunning,
    er.ElementRefereeWrongStage,  # someone else settled the trace (or sum) game first
)


class NoMove(Exception):
    """The side to move has no move the referee would take (a challenger facing a true infinite sum claim: only a
    refutation is a move there, and none exists); it lets its clock run out. `deadline` is when."""

    def __init__(self, what: str, deadline: int) -> None:
        super().__init__(what)
        self.deadline = deadline


@dataclass(frozen=True, slots=True)
class Turn:
    """Whose move it is in an element game, counting the dot game (docs/game.md 2.8), the trace game (2.9) or the
    sum game (2.10) that took it over."""

    to_move: int | None  # 0 defender, 1 challenger; None once decided
    deadline: int
    moves: int  # both games' moves: changes whenever anyone moved
    dot_game: int  # 0: no dot game
    trace_game: int = 0  # 0: no trace game
    sum_game: int = 0  # 0: no sum game


def element_turn(referee: er.ElementRefereeClient, element_game: int) -> Turn:
    rv = referee.game_of(element_game)
    if rv.stage is er.Stage.DELEGATED:
        dot = referee.dot()
        tid = dot.traced_by(element_game)
        if tid:
            tv = dot.trace().game_of(tid)
            done = tv.stage is tr.Stage.RESOLVED
            return Turn(None if done else tv.to_move, tv.deadline, rv.moves + tv.moves, 0, tid)
        sid = dot.summed_by(element_game)
        if sid:
            sv = dot.sum().game_of(sid)
            done = sv.stage is sr.Stage.RESOLVED
            return Turn(None if done else sv.to_move, sv.deadline, rv.moves + sv.moves, 0, 0, sid)
        did = dot.taken_over(element_game)
        dv = dot.game_of(did)
        done = dv.stage is dr.Stage.RESOLVED
        return Turn(None if done else dv.to_move, dv.deadline, rv.moves + dv.moves, did)
    done = rv.stage in (er.Stage.NONE, er.Stage.RESOLVED)
    return Turn(None if done else rv.to_move, rv.deadline, rv.moves, 0)


def element_side(witness: RunWitness, step: int, node: int) -> ElementSide:
    """One side of node `node` of step `step`: the inputs it agreed on and its own (first) output."""
    inputs = [t.contiguous() for t in witness.node_inputs(step, node)]
    _, outputs = witness.node_io(step, node)
    return ElementSide(inputs, outputs[0], encode_args(witness.program.nodes[node].args))


def element_due(
    game: DisputeGameClient, referee: er.ElementRefereeClient, game_id: int, view: GameView, now: int
) -> tuple[Tick, str | None]:
    """The permissionless call due on game `game_id` in stage ELEMENT, made (`resolveElement` once the referee
    game is decided, the referee's `timeout` once the mover's clock ran out); what to say about it."""
    rv = referee.game_of(view.element_game)
    try:
        if rv.stage is er.Stage.DELEGATED:
            dot = referee.dot()
            tid = dot.traced_by(view.element_game)
            if tid:
                trace = dot.trace()
                tv = trace.game_of(tid)
                if tv.stage is tr.Stage.RESOLVED:  # decided there: hand the outcome back to the element game
                    dot.settle_trace(view.element_game)
                    return BUSY, f"trace game {tid} settled its element game {view.element_game}"
                if now > tv.deadline:
                    trace.timeout(tid)
                    return BUSY, f"trace game {tid}: {Side(tv.to_move).name.lower()}'s clock ran out"
                return idle(tv.deadline + 1), None
            sid = dot.summed_by(view.element_game)
            if sid:
                summer = dot.sum()
                sv = summer.game_of(sid)
                if sv.stage is sr.Stage.RESOLVED:  # decided there: hand the outcome back to the element game
                    dot.settle_sum(view.element_game)
                    return BUSY, f"sum game {sid} settled its element game {view.element_game}"
                if now > sv.deadline:
                    summer.timeout(sid)
                    return BUSY, f"sum game {sid}: {Side(sv.to_move).name.lower()}'s clock ran out"
                return idle(sv.deadline + 1), None
            did = dot.taken_over(view.element_game)
            dv = dot.game_of(did)
            if dv.stage is not dr.Stage.RESOLVED and now > dv.deadline:
                dot.timeout(did)
                mover = Side(dv.to_move).name.lower()
                return BUSY, f"dot game {did}: {mover}'s clock ran out"
            return idle(dv.deadline + 1), None
        if rv.stage is er.Stage.RESOLVED:
            outcome = game.resolve_element(game_id)
            if outcome is None:
                return BUSY, "the element phase does not apply to the node (an input's dtype): the oracle decides"
            return BUSY, f"the element game decided on chain: {outcome.name.lower()}"
        if now > rv.deadline:
            ended = referee.timeout(view.element_game)
            mover = Side(rv.to_move).name.lower()
            return BUSY, f"element game {view.element_game}: {mover}'s clock ran out ({ended.name.lower()})"
    except RACES:
        return BUSY, None
    return idle(rv.deadline + 1), None


def element_move(
    referee: er.ElementRefereeClient, element_game: int, side: Side, mine: ElementSide, arity: int
) -> str | None:
    """This side's move in element game `element_game` if it is its turn (what it did), else None. A move the
    referee refuses raises its typed `ContractRevert`; a side with no move raises `NoMove`."""
    rv = referee.game_of(element_game)
    if rv.stage is er.Stage.DELEGATED:
        dot = referee.dot()
        if dot.traced_by(element_game):
            return trace_move(referee, element_game, side, mine)
        if dot.summed_by(element_game):
            return sum_move(referee, element_game, side, mine, arity)
        return dot_move(referee, element_game, side, mine, arity)
    if rv.stage in (er.Stage.NONE, er.Stage.RESOLVED) or rv.to_move != int(side):
        return None
    gid = element_game
    defender = side is Side.DEFENDER
    if rv.stage is er.Stage.ARGS:  # Tensor-Scalar, permute or creation node: the defender opens its args first
        scalar = referee.open_args(gid, mine.args)
        what = "dims" if rv.op == PERMUTE else "number"
        if scalar is None:
            return f"element game {gid}: the node's arguments hold no {what} the referee reads; the oracle decides"
        if rv.op == PERMUTE:
            return f"element game {gid}: opened the node's arguments (the dims {permute_dims(mine.args)})"
        return f"element game {gid}: opened the node's arguments (the number {_f64(scalar)!r})"
    if rv.stage is er.Stage.HEADER:
        if defender:  # an agreed input of another dtype than the operator's: the phase does not apply
            want = referee.input_dtypes(rv.op)
            for k, h in enumerate(mine.input_headers()):
                if k < len(want) and want[k] != 0 and h.dtype != want[k]:  # 0: any dtype (data movement)
                    referee.prove_inapplicable(gid, k, h)
                    return f"element game {gid}: input {k} is not of the operator's dtype; the oracle will decide"
        referee.open_headers(gid, mine.header(), mine.input_headers() if defender else ())
        extra = " and the inputs' headers" if defender else ""
        return f"element game {gid}: opened the output header{extra}"
    if rv.stage is er.Stage.CHUNK_DESCENT:
        nodes = mine.nodes(rv.height, rv.position, arity)
        referee.descend(gid, nodes, () if defender else referee.defender_nodes(gid))
        return f"element game {gid}: chunk descent at height {rv.height}, position {rv.position}"
    if rv.stage is er.Stage.ELEMENT_OPEN:
        j = rv.position
        referee.open_chunk(gid, mine.chunk(j), b"" if defender else referee.defender_chunk(gid))
        return f"element game {gid}: opened chunk {j}"
    if rv.op in DOT_OPS:  # mm, addmm: the defender takes the element over to the dot phase with its claim
        dside = _dot_side(rv.op - min(DOT_OPS), mine, rv.element, side)
        claim = dside.claim(arity)
        a, b = mine.input_headers()[-2:]
        referee.dot().start(gid, tuple(mine.output.shape), a, b, claim)
        return (
            f"element game {gid}: element {rv.element} of an exact dot product goes to the dot phase; claimed "
            f"S = {claim.total} with the row's and column's largest elements at {claim.row_at}, {claim.col_at}"
        )
    if rv.op in TRACE_OPS:  # a transcendental function: the defender hands the element to the trace game
        tid = referee.dot().start_trace(gid, mine.openings(rv.element)[0])
        name = trace_function(rv.op)
        return f"element game {gid}: element {rv.element} of {name} goes to trace game {tid} (docs/game.md 2.9)"
    if rv.op in SUM_OPS:  # a sum: the defender hands the element to a sum game, where it claims next
        sid = referee.dot().start_sum(gid)
        return f"element game {gid}: element {rv.element} of a sum goes to sum game {sid} (docs/game.md 2.10)"
    # ELEMENT_PROOF: the defender opens the inputs at element e; the contract computes it and decides.
    outcome = referee.prove_element(gid, tuple(mine.output.shape), mine.openings(rv.element, rv.op))
    return f"element game {gid}: opened the inputs at element {rv.element}; the contract computed it: " + (
        outcome.name.lower()
    )


def dot_move(
    referee: er.ElementRefereeClient, element_game: int, side: Side, mine: ElementSide, arity: int
) -> str | None:
    """This side's move in the dot game that took over `element_game`, if it is its turn (what it did); the
    dot game's arity is the element game's (DisputeGame's)."""
    dot = referee.dot()
    did = dot.taken_over(element_game)
    dv = dot.game_of(did)
    if dv.stage is dr.Stage.RESOLVED or dv.to_move != int(side):
        return None
    ds = _dot_side(dv.op, mine, dv.element, side)
    if side is Side.CHALLENGER:  # stage PICK: refute a wrong exponent, else pick the first wrong sub-range
        refutation = ds.refutation(dv.keys)
        if refutation is not None:
            which, at, opening = refutation
            dot.refute(did, which, at, opening)
            return f"dot game {did}: refuted the defender's {('row', 'column')[which]} exponent with element {at}"
        theirs = dot.defender_splits(did)
        m = ds.pick(dv.lo, dv.hi, arity, theirs)
        dot.pick(did, theirs, m)
        return f"dot game {did}: disputes sub-range {m} of the prefix sums over [{dv.lo}, {dv.hi}]"
    if dv.stage is dr.Stage.SPLIT:
        dot.split(did, ds.splits(dv.lo, dv.hi, arity))
        return f"dot game {did}: posted the prefix sums splitting [{dv.lo}, {dv.hi}]"
    a, b = ds.term_openings(dv.lo)
    outcome = dot.prove_term(did, a, b)
    return f"dot game {did}: opened term {dv.lo}; the contract recomputed it: " + er.Outcome(outcome).name.lower()


def trace_move(referee: er.ElementRefereeClient, element_game: int, side: Side, mine: ElementSide) -> str | None:
    """This side's move in the trace game that decides `element_game`, if it is its turn (what it did). The
    defender posts the program's trace on the agreed input x ending in its own value (an honest output's is
    the true trace; another's has a wrong step, its last, which the challenger names); the challenger names
    the first step where the posted trace leaves the true one (the last step if there is none: a challenger
    that is wrong loses there)."""
    dot = referee.dot()
    tid = dot.traced_by(element_game)
    trace = dot.trace()
    tv = trace.game_of(tid)
    if tv.stage is tr.Stage.RESOLVED or tv.to_move != int(side):
        return None
    name = trace_function(TRACE_BASE + tv.fn)
    if side is Side.DEFENDER:
        steps = programs.run(name, tv.x)
        mine_value = tv.values[0]
        if steps[-1] != mine_value:
            steps = programs.run(name, tv.x, {len(steps) - 1: mine_value})
        trace.claim(tid, programs.pack(steps))
        return f"trace game {tid}: posted the {len(steps)}-step trace of {name} on x = {tv.x:#010x}"
    packed = trace.claimed_trace(tid)
    posted = programs.unpack(packed)
    wrong = programs.first_wrong_step(name, tv.x, posted)
    step = len(posted) - 1 if wrong is None else wrong
    outcome, _ = trace.refute(tid, packed, step)
    return f"trace game {tid}: named step {step}; the contract recomputed it: " + er.Outcome(outcome).name.lower()


def sum_move(
    referee: er.ElementRefereeClient, element_game: int, side: Side, mine: ElementSide, arity: int
) -> str | None:
    """This side's move in the sum game that decides `element_game`, if it is its turn (what it did); its arity is
    the element game's. The defender claims the slice's largest class with a witness, the S its own value follows
    from and the true prefix sums, then splits and opens the last term; the challenger refutes a claim it can
    disprove (a larger element; against an infinity a NaN or the opposite one), else picks the first sub-range
    whose end the defender got wrong (an honest output's claim is the spec's; another's is found out at the last
    term)."""
    dot = referee.dot()
    sid = dot.summed_by(element_game)
    summer = dot.sum()
    sv = summer.game_of(sid)
    if sv.stage is sr.Stage.RESOLVED or sv.to_move != int(side):
        return None
    ss = _sum_side(sv.variant, mine, sv.element, side)
    if side is Side.CHALLENGER:  # stage PICK or REFUTE
        refutation = ss.refutation(sv.key, sv.witness)
        if refutation is not None:
            at, opening = refutation
            outcome = summer.refute(sid, at, opening)
            return f"sum game {sid}: refuted the defender's claim with term {at}: " + er.Outcome(outcome).name.lower()
        if sv.stage is sr.Stage.REFUTE:
            raise NoMove(f"sum game {sid}: the defender's infinite claim holds; nothing refutes it", sv.deadline)
        theirs = summer.defender_splits(sid)
        m = ss.pick(sv.lo, sv.hi, arity, theirs)
        summer.pick(sid, theirs, m)
        return f"sum game {sid}: disputes sub-range {m} of the prefix sums over [{sv.lo}, {sv.hi}]"
    if sv.stage is sr.Stage.CLAIM:
        claim = ss.claim(arity)
        summer.claim(sid, claim)
        return (
            f"sum game {sid}: claimed S = {claim.total} over L = {ss.length} terms with the slice's largest element "
            f"at term {claim.at}"
        )
    if sv.stage is sr.Stage.SPLIT:
        summer.split(sid, ss.splits(sv.lo, sv.hi, arity))
        return f"sum game {sid}: posted the prefix sums splitting [{sv.lo}, {sv.hi}]"
    outcome = summer.prove_term(sid, ss.term_opening(sv.lo))
    return f"sum game {sid}: opened term {sv.lo}; the contract recomputed it: " + er.Outcome(outcome).name.lower()


def _sum_side(variant: int, mine: ElementSide, element: int, side: Side) -> SumSide:
    """The sum game's side from the agreed input; the defender claims the S its own output's value follows from
    (as `_dot_side`)."""
    ss = SumSide(variant, mine.inputs[0], tuple(mine.output.shape), element)
    if side is Side.DEFENDER:
        ss.defend(int(mine.output.contiguous().view(torch.int32).reshape(-1)[element]) & 0xFFFFFFFF)
    return ss


def _f64(bits: int) -> float:
    return float(struct.unpack(">d", bits.to_bytes(8, "big"))[0])


def _dot_side(op: int, mine: ElementSide, element: int, side: Side) -> DotSide:
    """The dot game's side from the agreed inputs; the defender claims the S its own output's value follows
    from (an honest output's is the spec's; another's is found out by the bisection, at the last term)."""
    ds = DotSide(op, mine.inputs, element)
    if side is Side.DEFENDER:
        value = int(mine.output.contiguous().view(torch.int32).reshape(-1)[element]) & 0xFFFFFFFF
        ds.defend(value)
    return ds
