"""Read-only views of the protocol's state as JSON-ready data: what `refereed task show`, `account` and the
dashboard (`refereed serve`) print. Addresses are checksummed strings, amounts are wei as decimal strings
(JSON numbers lose precision above 2^53), times are the chain's unix seconds."""

from __future__ import annotations

from typing import Any

from offchain.contracts.dispute_game import PLAYING
from offchain.contracts.task_market import REVEAL_WINDOW, TaskStatus, entry_closes
from offchain.errors import OffchainError


class UnknownTask(OffchainError):
    """No task of that id on the chain."""


def _decided_on_chain(p: Any, element_game: int) -> dict[str, Any] | None:
    """The element game (and, for an mm or addmm node, the dot game; for a transcendental function's, the trace
    game) deciding a game's node on chain, or None."""
    referee = getattr(p, "referee", None)
    if not element_game or referee is None:
        return None
    rv = referee.game_of(element_game)
    out: dict[str, Any] = {
        "element_game": element_game,
        "stage": rv.stage.name.lower(),
        "dot_game": None,
        "trace_game": None,
        "sum_game": None,
    }
    if rv.stage.name in ("DELEGATED", "RESOLVED"):
        dot = referee.dot()
        did = dot.taken_over(element_game)
        if did:
            dv = dot.game_of(did)
            out["dot_game"] = {"game": did, "stage": dv.stage.name.lower(), "k": dv.k, "range": [dv.lo, dv.hi]}
        tid = dot.traced_by(element_game)
        if tid:
            from offchain.game.element_table import trace_function

            tv = dot.trace().game_of(tid)
            out["trace_game"] = {
                "game": tid,
                "stage": tv.stage.name.lower(),
                "function": trace_function(int(rv.op)),
                "steps": tv.steps,
            }
        sid = dot.summed_by(element_game)
        if sid:
            sv = dot.sum().game_of(sid)
            out["sum_game"] = {
                "game": sid,
                "stage": sv.stage.name.lower(),
                "length": sv.length,
                "range": [sv.lo, sv.hi],
            }
    return out


def task_state(p: Any, task_id: int) -> dict[str, Any]:
    """Everything `task show` says about a task, as JSON-ready data (addresses, wei, chain times)."""
    m = p.market
    task = m.task(task_id)
    if task.status is TaskStatus.NONE:
        raise UnknownTask(f"there is no task {task_id} on chain {m.chain.chain_id} (tasks 1..{m.task_count()})")
    spec = m.spec_of(task_id)
    now = int(m.chain.w3.eth.get_block("latest")["timestamp"])
    trainers = m.trainers_of(task_id)
    views = {t: m.trainer_of(task_id, t) for t in trainers}
    groups = [m.group_of(task_id, g) for g in range(task.group_count)]
    games = []
    for d in m.disputes(task_id):
        view = p.game.game_of(d.game_id)
        games.append(
            {
                "game": d.game_id,
                "defender": d.defender,
                "defender_group": d.defender_group,
                "challenger": d.challenger,
                "challenger_group": d.challenger_group,
                "stage": view.stage.name.lower(),
                "moves": view.moves,
                "outcome": view.outcome.name.lower(),
                "to_move": view.to_move.name.lower() if view.stage in PLAYING else None,
                "deadline": view.deadline if view.stage in PLAYING else None,
                "question": view.question_id if view.question_id else None,
                "on_chain": _decided_on_chain(p, view.element_game),
                "settled": m.dispute_of(d.game_id).settled,
            }
        )
    reveal_by = spec.submit_deadline + REVEAL_WINDOW
    deadlines = {
        "join": spec.join_deadline,
        "commit": spec.submit_deadline,
        "reveal": reveal_by,
        "enter": entry_closes(spec),
        "dispute": spec.dispute_deadline,
    }
    # What it waits for, and when `finalize` can succeed (after the dispute deadline, once no game runs).
    finalize_at: int | None = spec.dispute_deadline + 1
    if task.status is TaskStatus.FINALIZED:
        waits, finalize_at = "nothing: it is finalized", None
    elif task.status is not TaskStatus.OPEN:
        waits, finalize_at = f"nothing: it is {task.status.name.lower()}", None
    elif now <= spec.join_deadline and task.joined < spec.slots:
        waits = f"trainers to join ({task.joined} of {spec.slots} slots taken) until the join deadline"
    elif now <= spec.submit_deadline:
        committed = sum(v.committed for v in views.values())
        waits = f"the trainers' commitments ({committed} of {len(views)} committed) until the commit deadline"
    elif now <= reveal_by and task.submitted < sum(v.committed for v in views.values()):
        waits = f"the reveals ({task.submitted} revealed) until the reveal deadline"
    elif task.active_games:
        waits = f"{task.active_games} running game(s) to end (see games); finalize waits for them"
        finalize_at = max(spec.dispute_deadline + 1, max((g["deadline"] or 0) for g in games) + 1)
    elif now <= spec.dispute_deadline:
        waits = "the dispute deadline (games may still be opened until then)"
    else:
        waits = f"`refereed task finalize {task_id}`: anyone may finalize it now"
    return {
        "task": task_id,
        "chain_id": m.chain.chain_id,
        "now": now,
        "status": task.status.name.lower(),
        "waits_for": waits,
        "finalize_at": finalize_at,
        "client": task.client,
        "reward_wei": str(task.reward),
        "bond_wei": str(spec.bond),
        "steps": spec.steps,
        "checkpoint_interval": spec.checkpoint_interval,
        "batch_size": spec.batch_size,
        "program_hash": "0x" + spec.program_hash.hex(),
        "node_count": spec.node_count,
        "dataset_root": "0x" + spec.dataset_root.hex(),
        "dataset_size": spec.dataset_size,
        "seed": spec.seed,
        "initial_state_root": "0x" + spec.initial_state_root.hex(),
        "arity": spec.arity,
        "clock": spec.clock,
        "slots": spec.slots,
        "joined": task.joined,
        "submitted": task.submitted,
        "outside_challengers": task.entrants - task.joined,
        "deadlines": deadlines,
        "group_count": task.group_count,
        "live_groups": task.live_groups,
        "active_games": task.active_games,
        "won": task.won,
        "winning_group": task.winning_group if task.won else None,
        "share_wei": str(task.share) if task.won else None,
        "entrants": [
            {
                "address": t,
                "on": "challenger" if v.challenger else "slot",
                "committed": v.committed,
                "revealed": v.submitted,
                "group": v.group if v.submitted else None,
                "eliminated": v.eliminated,
                "claimed": v.claimed,
            }
            for t, v in views.items()
        ],
        "groups": [
            {
                "group": i,
                "checkpoint_root": "0x" + g.checkpoint_root.hex(),
                "final_state_root": "0x" + g.final_state_root.hex(),
                "members": list(g.members),
                "live": g.live,
                "eliminated": g.eliminated,
            }
            for i, g in enumerate(groups)
        ],
        "games": games,
    }
