"""How a trainer behaves: the honest strategy, and the hooks a cheater overrides.

A trainer agent does the protocol's bookkeeping (join or enter, checkpoint, commit, reveal,
publish, open games, play, settle, claim, withdraw); a `Strategy` decides what run it claims
and whether it plays on. The honest strategy claims the RepOps run, self-audits it before
committing, reveals as soon as the market allows, opens a game against every entrant of
another group, and makes every move. The cheaters of `offchain.agents.adversaries` claim
another run (a `RunWitness` subclass or a `Deviation`), skip the audit, reveal late, copy,
or stop moving. A trainer agent asks `joins` before joining a task, `witness` for the run it
trains and defends (again after a restart), `reveal_time` and `reveal_roots` when it may
reveal, and `will_move` before each move of a game.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from offchain.contracts.dispute_game import GameView
from offchain.contracts.task_market import TaskSpec
from offchain.game.witness import RunWitness, State
from trainer.data.dataset import Dataset
from trainer.program import Program
from trainer.runner.runner import RunConfig


class Strategy:
    name = "honest"
    summary = "trains with RepOps, self-audits sampled intervals, submits, plays every move"
    audits = True  # replay sampled checkpoint intervals before submitting
    audit_samples = 2
    deviates_at: int | None = None  # a cheater: the first step whose claimed post-state is wrong (None: no one step)
    trains = True  # False: it never trains, and commits blind (a commitment to nothing it holds)
    opens_games = True  # open a game against each live entrant of another group it has not played
    publishes = True  # publish the checkpoint states of its revealed list to the public store

    @property
    def honest(self) -> bool:
        return type(self) is Strategy

    def witness(self, program: Program, dataset: Dataset, config: RunConfig, initial: State) -> RunWitness:
        """The run this trainer claims (and defends)."""
        return RunWitness(program, dataset, config, initial)

    def joins(self, spec: TaskSpec) -> bool:
        return True

    def will_move(self, game_id: int, view: GameView, moves_made: int) -> bool:
        """Whether to make the move the game asks for now (False: let the clock run)."""
        return True

    def reveal_time(self, opens_after: int, closes_at: int) -> int:
        """The chain time from which it reveals (a reveal is allowed at `opens_after < t <= closes_at`)."""
        return opens_after + 1

    def reveal_roots(
        self, own: Sequence[bytes] | None, revealed: Callable[[], list[tuple[bytes, ...]]]
    ) -> Sequence[bytes] | None:
        """The checkpoint list it reveals: its own (None when it holds none: it waits). `revealed()` lists the
        lists others revealed so far, read from their transactions."""
        return own

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


HONEST = Strategy()
