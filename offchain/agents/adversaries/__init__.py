"""The adversary catalogue: cheating trainers (and a lying oracle) as plug-ins.

Each `Adversary` names a way to cheat and builds the `Strategy` its cheating trainers
play (`strategy(config)`, which picks the step to cheat at from the run's config). A
scenario casts it with `cast(adversary, k)`: k trainers of which `cheaters` cheat, and the
oracles the scenario needs (with the liar first when `lying_oracle`).

    refereed demo --cheat <name>     any entry, by its name
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from offchain.agents.scenario import OracleRole, TrainerRole
from offchain.agents.strategy import HONEST, Strategy
from offchain.game.witness import Deviation, DeviationKind, RunWitness, State
from trainer.data.dataset import Dataset
from trainer.program import Program
from trainer.runner.runner import RunConfig


@dataclass(frozen=True)
class Adversary:
    name: str  # the CLI's name for it
    summary: str  # one line, for --help and the report
    make: Callable[[RunConfig], Strategy]  # the cheating trainers' strategy for a run of this config
    cheaters: int = 1  # cheating trainers (2: they collude, with the same wrong run)
    lying_oracle: bool = False  # an oracle that answers wrong is drawn first
    decided_by: str = ""  # what ends the game against an honest trainer, e.g. "oracle", "post-state proof"

    def strategy(self, config: RunConfig) -> Strategy:
        return self.make(config)


class DeviatingStrategy(Strategy):
    """A trainer that leaves the honest run at one step (`offchain.game.witness.Deviation`) and defends it."""

    audits = False  # an audit would catch it; a cheater does not look

    def __init__(self, name: str, deviation: Deviation) -> None:
        self.name = name
        self.deviation = deviation
        self.summary = f"{deviation.kind.value} deviation at step {deviation.step}"

    def witness(self, program: Program, dataset: Dataset, config: RunConfig, initial: State) -> RunWitness:
        return RunWitness(program, dataset, config, initial, self.deviation)


def late_step(config: RunConfig) -> int:
    """A step in the second half of the run, inside a checkpoint interval (not its first step)."""
    return min(config.steps - 1, config.steps // 2 + config.checkpoint_interval // 2 + 1)


CATALOGUE: dict[str, Adversary] = {}


def register(adversary: Adversary) -> Adversary:
    if adversary.name in CATALOGUE:
        raise ValueError(f"adversary {adversary.name!r} is registered twice")
    CATALOGUE[adversary.name] = adversary
    return adversary


register(
    Adversary(
        "faulty-kernel",
        "one operator of one step computes a wrong value (off by 1e-3), the rest follows from it",
        lambda c: DeviatingStrategy("faulty-kernel", Deviation(late_step(c), DeviationKind.KERNEL)),
        decided_by="oracle",
    )
)

DEFAULT = "faulty-kernel"


def cast(
    adversary: Adversary, k: int = 3, config: RunConfig | None = None
) -> tuple[list[TrainerRole], list[OracleRole]]:
    """The trainers (honest ones first) and oracles of a k-trainer scenario against `adversary`."""
    if not 1 <= adversary.cheaters < k:
        raise ValueError(f"{adversary.name}: {adversary.cheaters} cheaters need k > {adversary.cheaters}, not {k}")
    if config is None:
        raise ValueError("cast needs the run's config to place the cheat")
    honest = [TrainerRole(f"honest-{i + 1}", HONEST) for i in range(k - adversary.cheaters)]
    cheat = adversary.strategy(config)
    cheaters = [
        TrainerRole(f"cheater-{i + 1}" if adversary.cheaters > 1 else "cheater", cheat)
        for i in range(adversary.cheaters)
    ]
    oracles = [OracleRole("oracle")]
    return honest + cheaters, oracles
