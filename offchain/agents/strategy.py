"""How a trainer behaves: the honest strategy, and the hooks a cheater overrides.

A trainer agent does the protocol's bookkeeping (join, checkpoint, submit, publish, play,
settle, withdraw); a `Strategy` decides what run it claims and whether it plays on. The
honest strategy claims the RepOps run, self-audits it before submitting, and makes every
move. The cheaters of `offchain.agents.adversaries` claim another run (a `RunWitness`
subclass or a `Deviation`), skip the audit, or stop moving. A trainer agent asks `joins`
before joining a task, `witness` for the run it trains and defends (again after a restart),
and `will_move` before each move of a game.
"""

from __future__ import annotations

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

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


HONEST = Strategy()
