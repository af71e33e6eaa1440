"""Stage ELEMENT of a dispute game, as the agents play it (docs/game.md section 2.7).

When a node whose operator the element table covers is disputed on agreed inputs, DisputeGame opens a
game on its bound ElementReferee (`GameView.element_game`) and waits in stage ELEMENT. The players move
there, on the referee: `element_move` makes the move of one side from its `ElementSide` (the agreed
inputs and its own output, from its `RunWitness`); `element_due` is what anyone may do for the game
(the referee's `timeout` once the side to move let its clock run out, DisputeGame's `resolveElement`
once the referee game is decided). Every call reads the referee's state first, so a tick taken again
(after a crash, or a lost race) makes the move that is due then, never one twice.
"""

from __future__ import annotations

from offchain.agents.base import BUSY, Tick, idle
from offchain.contracts import element_referee as er
from offchain.contracts.dispute_game import (
    DisputeGameClient,
    DisputeGameWrongStage,
    GameView,
    Side,
)
from offchain.game.element import ElementSide
from offchain.game.witness import RunWitness

# Lost races on the permissionless calls: someone else timed the game out or resolved it first.
RACES = (er.ElementRefereeNotPlaying, er.ElementRefereeClockRunning, DisputeGameWrongStage)


def element_side(witness: RunWitness, step: int, node: int) -> ElementSide:
    """One side of node `node` of step `step`: the inputs it agreed on and its own (first) output."""
    inputs = [t.contiguous() for t in witness.node_inputs(step, node)]
    _, outputs = witness.node_io(step, node)
    return ElementSide(inputs, outputs[0])


def element_due(
    game: DisputeGameClient, referee: er.ElementRefereeClient, game_id: int, view: GameView, now: int
) -> tuple[Tick, str | None]:
    """The permissionless call due on game `game_id` in stage ELEMENT, made (`resolveElement` once the referee
    game is decided, the referee's `timeout` once the mover's clock ran out); what to say about it."""
    rv = referee.game_of(view.element_game)
    try:
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
    referee refuses raises its typed `ContractRevert`."""
    rv = referee.game_of(element_game)
    if rv.stage in (er.Stage.NONE, er.Stage.RESOLVED) or rv.to_move != int(side):
        return None
    gid = element_game
    defender = side is Side.DEFENDER
    if rv.stage is er.Stage.HEADER:
        if defender:  # an agreed input of another dtype than the operator's: the phase does not apply
            want = referee.input_dtypes(rv.op)
            for k, h in enumerate(mine.input_headers()):
                if k < len(want) and h.dtype != want[k]:
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
    # ELEMENT_PROOF: the defender opens the inputs at element e; the contract computes it and decides.
    outcome = referee.prove_element(gid, tuple(mine.output.shape), mine.openings(rv.element))
    return f"element game {gid}: opened the inputs at element {rv.element}; the contract computed it: " + (
        outcome.name.lower()
    )
