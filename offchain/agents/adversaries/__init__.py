"""The adversary catalogue: cheating trainers (and a lying oracle) as plug-ins.

Each `Adversary` names a way to cheat and builds the `Strategy` its cheating trainers
play (`strategy(config)`, which picks the step to cheat at from the run's config). A
scenario casts it with `cast(adversary, k)`: k trainers of which `cheaters` cheat, and the
oracles the scenario needs (liars that lie when drawn to answer, when `lying_oracle`). The
entries that attack the recompute oracle cast their own parties (`casting`): a cheater with an
agent of its own (`offchain.agents.adversaries._agents`) and an oracle it controls, oracles that
come late, or two sybils of one attacker.

    refereed demo --cheat <name>     any entry, by its name

`decided_by` says what ended the games against honest trainers in the agent tests
(tests/agents/test_adversaries.py), where every cheater submits first (it skips the audit)
and so defends: "oracle" when the recompute oracle's answer decided; "<kind> proof" or
"node reveal" when the cheater's move at that stage was refused (it cannot back its claim)
and it lost on time; "timeout" when it stopped moving of its own accord.

`decided_by` is for a deployment that binds the ElementReferee (the default; without it,
`deploy_all(element_referee=False)`, an entry decided in the element phase goes to the oracle
instead). `copy-then-diverge` is decided in stage ELEMENT, on chain and without the oracle: its
first wrong node is a tensor-tensor `sub.Tensor`, which the element table covers
(tests/agents/test_element_stage.py); so is `eager-kernels`, whose first wrong node is an addmm, decided
by the dot phase (tests/agents/test_dot_stage.py), and `one-ulp-exp`, whose first wrong node is an exp,
decided by the trace game (tests/agents/test_trace_stage.py). The others end as listed: the oracle-bound ones
get `ORACLE_OP` (the log-softmax) wrong, an operator the element phase does not decide yet.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from offchain.agents.adversaries._agents import ColludingOracle, CommitteeGrinder, LateOracle, OracleStarver
from offchain.agents.adversaries._strategies import (
    ORACLE_OP,
    Cheater,
    DeviatingStrategy,
    EagerKernels,
    ForgedRoots,
    HostileQuestion,
    Lazy,
    OneUlp,
    PoisonedBatch,
    RefusesToMove,
    WrongGraph,
    WrongInput,
    WrongLearningRate,
)
from offchain.agents.scenario import ORACLES, OracleRole, TrainerRole, oracle_roles
from offchain.agents.strategy import HONEST, Strategy
from offchain.agents.trainer import TrainerAgent
from offchain.game.witness import Deviation, DeviationKind
from trainer.runner.runner import RunConfig

__all__ = [
    "ACCOMPLICE",
    "CATALOGUE",
    "DEFAULT",
    "Adversary",
    "Cheater",
    "ColludingOracle",
    "CommitteeGrinder",
    "DeviatingStrategy",
    "EagerKernels",
    "ForgedRoots",
    "HostileQuestion",
    "LateOracle",
    "Lazy",
    "OneUlp",
    "OracleStarver",
    "PoisonedBatch",
    "RefusesToMove",
    "WrongGraph",
    "WrongInput",
    "WrongLearningRate",
    "cast",
    "early_step",
    "late_step",
    "register",
]

# The lying-oracle entry's oracles. Two questions (one per honest trainer) may each be answered by a
# different liar; once one is slashed it is no longer eligible, and the other question still needs a
# committee of 3 besides its answerer and its challenger: 3 + 3 = 6, and one more for slack.
LYING_ORACLES = ORACLES + 2


Casting = Callable[["Adversary", int, RunConfig], tuple[list[TrainerRole], list[OracleRole]]]


@dataclass(frozen=True)
class Adversary:
    name: str  # the CLI's name for it
    summary: str  # one line, for --help and the report
    make: Callable[[RunConfig], Strategy]  # the cheating trainers' strategy for a run of this config
    cheaters: int = 1  # cheating trainers (2: they collude, with the same wrong run)
    lying_oracle: bool = False  # the oracle drawn to answer lies (every oracle would, if drawn)
    decided_by: str = ""  # what ends the game against an honest trainer, e.g. "oracle", "post-state proof"
    casting: Casting | None = None  # its own parties for `cast` (default: the honest trainers, the cheaters, oracles)

    def strategy(self, config: RunConfig) -> Strategy:
        return self.make(config)


def early_step(config: RunConfig) -> int:
    """A step in the first checkpoint interval (not its first step, when c > 1)."""
    return min(config.steps - 1, config.checkpoint_interval // 2)


def late_step(config: RunConfig) -> int:
    """A step in the second half of the run, inside a checkpoint interval (not its first step)."""
    return min(config.steps - 1, config.steps // 2 + config.checkpoint_interval // 2 + 1)


def last_step(config: RunConfig) -> int:
    return config.steps - 1


def middle_checkpoint(config: RunConfig) -> int:
    """The last checkpoint step in the first half of the run (0 if none)."""
    c = config.checkpoint_interval
    return (config.steps // 2) // c * c


CATALOGUE: dict[str, Adversary] = {}


def register(adversary: Adversary) -> Adversary:
    if adversary.name in CATALOGUE:
        raise ValueError(f"adversary {adversary.name!r} is registered twice")
    CATALOGUE[adversary.name] = adversary
    return adversary


PROOF_REFUSED = "refused, it loses on time"

register(
    Adversary(
        "faulty-kernel",
        "one operator of one step, its log-softmax, computes a wrong value (off by 1e-3), the rest follows from it",
        lambda c: DeviatingStrategy("faulty-kernel", Deviation(late_step(c), DeviationKind.KERNEL, ORACLE_OP)),
        decided_by="oracle",
    )
)
register(
    Adversary(
        "one-ulp",
        "the state one step hands on has one parameter element moved by one ulp",
        lambda c: OneUlp("one-ulp", late_step(c)),
        decided_by=f"post-state proof ({PROOF_REFUSED})",
    )
)
register(
    Adversary(
        "lazy",
        "skips the work: from one step on it hands on the state it was given",
        lambda c: Lazy("lazy", early_step(c)),
        decided_by=f"post-state proof ({PROOF_REFUSED})",
    )
)
register(
    Adversary(
        "poisoned-batch",
        "trains on other data (the batches of another seed) from one step on",
        lambda c: PoisonedBatch("poisoned-batch", early_step(c)),
        decided_by=f"batch input proof ({PROOF_REFUSED})",
    )
)
register(
    Adversary(
        "wrong-lr",
        "trains the task's model with the learning rate times 1.01 (a program of its own)",
        lambda c: WrongLearningRate("wrong-lr", 1.01),
        decided_by=f"node reveal (the descriptor of its lr node is not in the task's graph: {PROOF_REFUSED})",
    )
)
register(
    Adversary(
        "eager-kernels",
        "trains with torch's eager ATen kernels instead of RepOps (its bits differ from step 0)",
        lambda c: EagerKernels("eager-kernels"),
        decided_by="element phase (its first wrong node is an addmm: the dot phase bisects the exact prefix sums "
        "to one term the contract recomputes)",
    )
)
register(
    Adversary(
        "forged-roots",
        "honest up to a checkpoint, then submits roots of states it never trained to",
        lambda c: ForgedRoots("forged-roots", middle_checkpoint(c)),
        decided_by="timeout (it has no state inside the disputed interval: it stops at the step bisection)",
    )
)
register(
    Adversary(
        "wrong-graph",
        "computes one node of one step with another op (an add for a sub), and says so in its trace",
        lambda c: WrongGraph("wrong-graph", late_step(c)),
        decided_by=f"node reveal (its descriptor is not in the task's graph: {PROOF_REFUSED})",
    )
)
register(
    Adversary(
        "wrong-input",
        "one node of one step reads another node's output (skips the activation)",
        lambda c: WrongInput("wrong-input", early_step(c)),
        decided_by=f"node input proof ({PROOF_REFUSED})",
    )
)
register(
    Adversary(
        "refuses-to-move",
        "a faulty kernel at one step, and it stops moving after 3 moves of a game",
        lambda c: RefusesToMove("refuses-to-move", Deviation(late_step(c), DeviationKind.KERNEL), moves=3),
        decided_by="timeout (it stops moving in the trace descent)",
    )
)
register(
    Adversary(
        "one-ulp-exp",
        "at one step exp's largest output element is one ulp off, the rest follows from it",
        lambda c: DeviatingStrategy(
            "one-ulp-exp", Deviation(late_step(c), DeviationKind.KERNEL, "aten.exp.default", ulps=1)
        ),
        decided_by="element (on chain, by the ElementReferee)",
    )
)
register(
    Adversary(
        "copy-then-diverge",
        "the honest run up to the last step, whose parameter update uses a faulty kernel",
        lambda c: DeviatingStrategy(
            "copy-then-diverge", Deviation(last_step(c), DeviationKind.KERNEL, "aten.sub.Tensor")
        ),
        decided_by="element (on chain, by the ElementReferee)",
    )
)
register(
    Adversary(
        "lying-oracle",
        "a faulty kernel, and the oracle drawn to answer lies; an honest oracle challenges it",
        lambda c: DeviatingStrategy("faulty-kernel", Deviation(late_step(c), DeviationKind.KERNEL, ORACLE_OP)),
        lying_oracle=True,
        decided_by="oracle (the liar's answer is challenged and overturned by the committee)",
    )
)
register(
    Adversary(
        "colluding",
        "two trainers submit the same wrong run (a tampered state input at one step)",
        lambda c: DeviatingStrategy("colluding", Deviation(early_step(c), DeviationKind.STATE_INPUT)),
        cheaters=2,
        decided_by=f"state input proof ({PROOF_REFUSED})",
    )
)

# -- attacks on the recompute oracle ---------------------------------------------------------------

ACCOMPLICE = "cheater-oracle"  # the oracle a cheater controls


def _honest(adversary: Adversary, k: int) -> list[TrainerRole]:
    if not 1 <= adversary.cheaters < k:
        raise ValueError(f"{adversary.name}: {adversary.cheaters} cheaters need k > {adversary.cheaters}, not {k}")
    return [TrainerRole(f"honest-{i + 1}", HONEST) for i in range(k - adversary.cheaters)]


def _accomplice() -> OracleRole:
    return OracleRole(ACCOMPLICE, liar=True, agent=ColludingOracle, allies=("cheater",))


def _cheater_with_an_oracle(agent: type[TrainerAgent]) -> Casting:
    """One cheater (its own `agent`) and the oracle it controls, listed after five honest ones: in a devnet
    round the oracles tick after the trainers, in this order, so the cheater sees every answer first."""

    def casting(adversary: Adversary, k: int, config: RunConfig) -> tuple[list[TrainerRole], list[OracleRole]]:
        cheater = TrainerRole("cheater", adversary.strategy(config), agent=agent, allies=(ACCOMPLICE,))
        return [*_honest(adversary, k), cheater], [*oracle_roles(), _accomplice()]

    return casting


def _lone_liar(adversary: Adversary, k: int, config: RunConfig) -> tuple[list[TrainerRole], list[OracleRole]]:
    """The cheater's oracle registers at once; five honest ones only once a question has been asked."""
    late = [OracleRole(f"oracle-{i + 1}", agent=LateOracle) for i in range(ORACLES)]
    return [*_honest(adversary, k), TrainerRole("cheater", adversary.strategy(config))], [_accomplice(), *late]


def _sybils(adversary: Adversary, k: int, config: RunConfig) -> tuple[list[TrainerRole], list[OracleRole]]:
    """Sybils of one attacker, in variants (`HostileQuestion`), and five honest oracles."""
    step = late_step(config)
    sybils = [
        TrainerRole(f"sybil-{i + 1}", HostileQuestion("hostile-question", step, variant=i))
        for i in range(adversary.cheaters)
    ]
    return [*_honest(adversary, k), *sybils], list(oracle_roles())


register(
    Adversary(
        "committee-grinder",
        "a faulty kernel; it controls an oracle and tries to choose the committee: challenges and draws in one "
        "transaction through its own contract, and runs every draw at several blocks, sending it only when its "
        "oracle is picked",
        lambda c: DeviatingStrategy("committee-grinder", Deviation(late_step(c), DeviationKind.KERNEL, ORACLE_OP)),
        decided_by="oracle (the draws are fixed by randomness requested before them: every block gives the same "
        "picks; its oracle, one among six, never holds a committee majority)",
        casting=_cheater_with_an_oracle(CommitteeGrinder),
    )
)
register(
    Adversary(
        "oracle-starver",
        "a faulty kernel; before its game reaches the oracle it asks the oracle directly and opens a game "
        "between two of its own accounts (both refused), and registers an oracle of its own (a liar)",
        lambda c: DeviatingStrategy("oracle-starver", Deviation(late_step(c), DeviationKind.KERNEL, ORACLE_OP)),
        decided_by="oracle (drawn among the honest oracles and its own, none of them slashed or deactivated)",
        casting=_cheater_with_an_oracle(OracleStarver),
    )
)
register(
    Adversary(
        "lone-liar",
        "a faulty kernel, and the only oracle registered when its question is asked is its own liar",
        lambda c: DeviatingStrategy("lone-liar", Deviation(late_step(c), DeviationKind.KERNEL, ORACLE_OP)),
        decided_by="oracle (the question waits in its draw until five oracles are eligible, then is drawn among them)",
        casting=_lone_liar,
    )
)
register(
    Adversary(
        "hostile-question",
        "two sybils claim a 1-d input for an mm node at the step they cheat at, publish it, and differ on the "
        "node's outputs: their game asks the oracle a question the node cannot run",
        lambda c: HostileQuestion("hostile-question", late_step(c), variant=0),
        cheaters=2,
        decided_by="oracle (against the honest trainer, an ordinary question; between the sybils the oracles "
        "answer refereed:inputs-inapplicable and both lose)",
        casting=_sybils,
    )
)

DEFAULT = "eager-kernels"
"""The demo's cheat: the most realistic one. Eager kernels differ from RepOps at every step of the
MLP (53 of 86 nodes a step: addmm, mm, gelu, erf, exp, log-softmax, sums), and the first node that
differs is the first layer's addmm, on inputs both sides agree on: the element phase isolates one output
element and the dot phase decides it on chain (docs/game.md 2.8), with no oracle (`--no-element-referee`
sends it to the oracle)."""


def cast(
    adversary: Adversary, k: int = 3, config: RunConfig | None = None
) -> tuple[list[TrainerRole], list[OracleRole]]:
    """The trainers (honest ones first) and oracles of a k-trainer scenario against `adversary`.

    With `lying_oracle`, every oracle lies when it is drawn to answer (and only then: it checks
    the others' answers and votes honestly). The draw is random, so this is how the scenario makes
    sure that the oracle drawn to answer lies; whoever it is, another oracle recomputes the node,
    challenges the lie, and a committee of three others overturns it.
    """
    if config is None:
        raise ValueError("cast needs the run's config to place the cheat")
    if adversary.casting is not None:
        return adversary.casting(adversary, k, config)
    honest = _honest(adversary, k)
    cheat = adversary.strategy(config)
    cheaters = [
        TrainerRole(f"cheater-{i + 1}" if adversary.cheaters > 1 else "cheater", cheat)
        for i in range(adversary.cheaters)
    ]
    oracles = list(oracle_roles())
    if adversary.lying_oracle:
        oracles = [
            OracleRole(f"oracle-{i + 1}", liar=True, lies_only_when_answering=True) for i in range(LYING_ORACLES)
        ]
    return honest + cheaters, oracles


# -- commit-reveal cheats (issue 12) ----------------------------------------------------------------
# Their scenario tests are their own (tests/agents/test_adversaries.py, "commit-reveal"): a copier plays no
# game, a squatting ring needs the honest trainer to arrive last, and a last-second reveal is timed to the
# chain second.

from offchain.agents.adversaries._strategies import Copier, LastSecond, Squatter  # noqa: E402

__all__ += ["Copier", "LastSecond", "Squatter", "squatting_cast"]

register(
    Adversary(
        "copier",
        "never trains: commits blind before the submit deadline, then reveals the result an honest trainer revealed",
        lambda c: Copier("copier"),
        decided_by="no game (its reveal does not open its commitment: refused, it forfeits its bond)",
    )
)
register(
    Adversary(
        "squatting-ring",
        "lazy sybils take every slot the moment the task is posted and submit the untrained initial state",
        lambda c: Squatter("squatting-ring"),
        cheaters=2,
        decided_by=f"post-state proof ({PROOF_REFUSED}); the honest trainer plays as an outside challenger",
    )
)
register(
    Adversary(
        "last-second",
        "a faulty kernel at one step, revealed in the last second of the reveal window",
        lambda c: LastSecond("last-second", Deviation(late_step(c), DeviationKind.KERNEL, ORACLE_OP)),
        decided_by="oracle (the game is opened after the late reveal, within the dispute hour)",
    )
)


def squatting_cast(
    adversary: Adversary, k: int = 3, config: RunConfig | None = None
) -> tuple[list[TrainerRole], list[OracleRole], int]:
    """`cast`, with the cheaters first (they take the slots as soon as the task is posted) and the task's
    slot count: as many as there are cheaters, so the honest trainers find the task full."""
    trainers, oracles = cast(adversary, k, config)
    cheaters = [t for t in trainers if not t.strategy.honest]
    return cheaters + [t for t in trainers if t.strategy.honest], oracles, len(cheaters)
