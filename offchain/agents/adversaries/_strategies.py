"""The catalogue's cheating strategies: which wrong run each claims, and how it plays.

Every cheater skips the self-audit (a RepOps replay would catch every one of them) and
names `deviates_at`, the step whose claimed post-state is the first one that is wrong
(None when the claim is not wrong at one step), which is the step a game isolates.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from offchain.agents.adversaries._witnesses import (
    EagerWitness,
    ForgedWitness,
    HostileInputsWitness,
    LazyWitness,
    OneUlpWitness,
    PoisonedBatchWitness,
    RewiredWitness,
    first_op_after,
    replace_input,
    replace_op,
    skipped_input,
    swapped_op,
)
from offchain.agents.strategy import Strategy
from offchain.contracts.dispute_game import GameView, Stage
from offchain.game.errors import GameError
from offchain.game.witness import Deviation, DeviationKind, RunWitness, State
from trainer.data.dataset import Dataset
from trainer.program import Program, SGDConfig, capture
from trainer.runner.runner import RunConfig
from trainer.workloads import Workload, mlp_digits


class Cheater(Strategy):
    """A strategy that claims a run other than the RepOps run of the task."""

    audits = False  # an audit would catch it; a cheater does not look
    opens_games = False  # nor does it start a game: a game against the honest result is one it loses

    def __init__(self, name: str, summary: str, deviates_at: int | None) -> None:
        self.name = name
        self.summary = summary
        self.deviates_at = deviates_at


class DeviatingStrategy(Cheater):
    """A trainer that leaves the honest run at one step (`offchain.game.witness.Deviation`) and defends it."""

    def __init__(self, name: str, deviation: Deviation) -> None:
        super().__init__(name, f"{deviation.kind.value} deviation at step {deviation.step}", deviation.step)
        self.deviation = deviation

    def witness(self, program: Program, dataset: Dataset, config: RunConfig, initial: State) -> RunWitness:
        return RunWitness(program, dataset, config, initial, self.deviation)


class RefusesToMove(DeviatingStrategy):
    """A deviating trainer that stops moving after `moves` moves of a game and lets its clock run out."""

    def __init__(self, name: str, deviation: Deviation, moves: int = 3) -> None:
        super().__init__(name, deviation)
        self.moves = moves
        self.summary += f", stops moving after {moves} moves"

    def will_move(self, game_id: int, view: GameView, moves_made: int) -> bool:
        return moves_made < self.moves


class OneUlp(Cheater):
    """The state after step `step` has `target` moved by one ulp (one element, or all of it)."""

    def __init__(self, name: str, step: int, target: str = "", *, whole_tensor: bool = False) -> None:
        where = "every element" if whole_tensor else "one element"
        super().__init__(name, f"one ulp added to {where} of {target or 'the last parameter'} after step {step}", step)
        self.deviation = Deviation(step, DeviationKind.POST_STATE, target)
        self.whole_tensor = whole_tensor

    def witness(self, program: Program, dataset: Dataset, config: RunConfig, initial: State) -> RunWitness:
        return OneUlpWitness(program, dataset, config, initial, self.deviation, whole_tensor=self.whole_tensor)


class Lazy(Cheater):
    def __init__(self, name: str, step: int) -> None:
        super().__init__(name, f"copies the state instead of training from step {step} on", step)

    def witness(self, program: Program, dataset: Dataset, config: RunConfig, initial: State) -> RunWitness:
        return LazyWitness(program, dataset, config, initial, lazy_from=self.deviates_at or 0)


class PoisonedBatch(Cheater):
    def __init__(self, name: str, step: int, seed_offset: int = 1) -> None:
        super().__init__(name, f"trains on the batches of seed + {seed_offset} from step {step} on", step)
        self.seed_offset = seed_offset

    def witness(self, program: Program, dataset: Dataset, config: RunConfig, initial: State) -> RunWitness:
        return PoisonedBatchWitness(
            program,
            dataset,
            config,
            initial,
            poisoned_from=self.deviates_at or 0,
            other_seed=config.seed + self.seed_offset,
        )


class EagerKernels(Cheater):
    """Trains with torch's eager ATen kernels. With `audits=True` it is an honest trainer with
    the wrong kernels: its own RepOps self-audit catches it before it submits."""

    def __init__(self, name: str, *, audits: bool = False) -> None:
        super().__init__(name, "trains with torch's eager ATen kernels instead of RepOps", 0)
        self.audits = audits

    def witness(self, program: Program, dataset: Dataset, config: RunConfig, initial: State) -> RunWitness:
        return EagerWitness(program, dataset, config, initial)


def mlp_digits_for(config: RunConfig) -> Workload:
    return mlp_digits(config.steps, config.checkpoint_interval, config.batch_size, config.seed)


class WrongLearningRate(Cheater):
    """Trains the program captured from the task's model with the learning rate times `factor`.

    The learning rate is not a tensor of the program: capture records it as the scalar
    argument of the optimizer update's `aten.mul.Tensor` nodes (`p - lr * buf`), so it is in
    those nodes' descriptors, the graph root and the program hash. The cheater claims the run
    of its own program for the task's: the first node whose descriptor differs cannot be
    opened in the task's graph root.
    """

    def __init__(self, name: str, factor: float = 1.01, workload: Callable[[RunConfig], Workload] = mlp_digits_for):
        super().__init__(name, f"trains with the learning rate times {factor}", 0)
        self.factor = factor
        self.workload = workload
        self._programs: dict[bytes, Program] = {}

    def program(self, task: Program, config: RunConfig, initial: State) -> Program:
        """The task's step recaptured with the wrong learning rate (it must be the same model)."""
        if task.program_hash not in self._programs:
            w = self.workload(config)
            optimizer = w.step.optimizer
            if not isinstance(optimizer, SGDConfig):
                raise GameError(f"{self.name} rebuilds SGD steps only, not {type(optimizer).__name__}")
            step = dataclasses.replace(w.step, optimizer=dataclasses.replace(optimizer, lr=optimizer.lr * self.factor))
            wrong = capture(step, initial, w.dataset.batch(config.seed, 0, config.batch_size))
            same = (task.inputs, task.outputs, task.constants) == (wrong.inputs, wrong.outputs, wrong.constants)
            if not same or [(n.op, n.inputs) for n in task.nodes] != [(n.op, n.inputs) for n in wrong.nodes]:
                raise GameError(f"{self.name}: the task's program is not the {w.name} step it knows how to rebuild")
            self._programs[task.program_hash] = wrong
        return self._programs[task.program_hash]

    def witness(self, program: Program, dataset: Dataset, config: RunConfig, initial: State) -> RunWitness:
        return RunWitness(self.program(program, config, initial), dataset, config, initial)


class WrongGraph(Cheater):
    """At one step, one node (the first subtraction of two node outputs) is computed as an
    addition, and its record names that descriptor, which the task's graph root does not hold."""

    def __init__(self, name: str, step: int) -> None:
        super().__init__(name, f"computes one node of step {step} with another op (add for sub)", step)

    def witness(self, program: Program, dataset: Dataset, config: RunConfig, initial: State) -> RunWitness:
        node = swapped_op(program)
        rewired = replace_op(program, node, "aten.add.Tensor")
        return RewiredWitness(
            program, dataset, config, initial, at_step=self.deviates_at or 0, rewired=rewired, node=node
        )


class WrongInput(Cheater):
    """At one step, one node reads another node's output than its graph says (it skips a node),
    and its record names the task's descriptor: its claimed input cannot be proven."""

    def __init__(self, name: str, step: int) -> None:
        super().__init__(name, f"feeds one node of step {step} another node's output (skips an activation)", step)

    def witness(self, program: Program, dataset: Dataset, config: RunConfig, initial: State) -> RunWitness:
        node, k, source = skipped_input(program)
        rewired = replace_input(program, node, k, source)
        return RewiredWitness(
            program,
            dataset,
            config,
            initial,
            at_step=self.deviates_at or 0,
            rewired=rewired,
            node=node,
            claims_task_descriptors=True,
        )


class ForgedRoots(Cheater):
    """Trains honestly up to checkpoint step `honest_until`, then submits roots of random states.

    It holds no state between its forged checkpoints, so it plays the checkpoint descent (its
    roots are all it has) and stops when the game asks for anything else: its clock runs out.
    """

    def __init__(self, name: str, honest_until: int) -> None:
        super().__init__(name, f"honest up to step {honest_until}, then checkpoint roots it never computed", None)
        self.honest_until = honest_until

    def witness(self, program: Program, dataset: Dataset, config: RunConfig, initial: State) -> RunWitness:
        return ForgedWitness(program, dataset, config, initial, forged_from=self.honest_until)

    def will_move(self, game_id: int, view: GameView, moves_made: int) -> bool:
        return view.stage is Stage.CHECKPOINT_DESCENT


# The operator the oracle-bound cheaters get wrong: the element phase does not take a log-softmax (docs/game.md
# 2.7, "What the oracle still decides"), so their games reach the oracle these attacks are aimed at. (Node 0's
# op, the default, is a permute, which the referee now decides on chain.)
ORACLE_OP = "aten._log_softmax.default"
# The node whose input the hostile question flattens: the first gather (over dim 1, which a 1-d input lacks),
# after the faulty log-softmax. An mm or a view would do too, but the element table covers them (decided on
# chain), so between two sybils they would never reach the oracle this attack is aimed at.
HOSTILE_OP = "aten.gather.default"


class HostileQuestion(Cheater):
    """A sybil of an attacker who plays several (`variant` 0, 1, ...): a faulty log-softmax kernel at step `step`
    (ORACLE_OP), and in that step's trace the first gather after it claims a 1-d input (`HostileInputsWitness`).
    Against an honest trainer its first wrong record is the log-softmax's, an ordinary question; between two of
    its variants it is the gather node, whose inputs they agree on and publish: a question the node cannot
    run."""

    def __init__(self, name: str, step: int, variant: int) -> None:
        summary = f"a faulty kernel at step {step}; claims a 1-d input for a gather node (variant {variant})"
        super().__init__(name, summary, step)
        self.deviation = Deviation(step, DeviationKind.KERNEL, ORACLE_OP)
        self.variant = variant

    def witness(self, program: Program, dataset: Dataset, config: RunConfig, initial: State) -> RunWitness:
        return HostileInputsWitness(
            program,
            dataset,
            config,
            initial,
            self.deviation,
            node=first_op_after(program, first_op_after(program, -1, ORACLE_OP), HOSTILE_OP),
            variant=self.variant,
        )


# -- commit-reveal cheats (issue 12): copying, squatting, revealing late --------------------------

from collections.abc import Sequence  # noqa: E402


class Copier(Cheater):
    """Never trains: it takes a slot and, having no result, commits blind before the submit deadline; once
    another trainer reveals, it reveals that list as its own. The commitment binds the committer and the
    list, so the market refuses the reveal (`TaskMarketRevealMismatch`) and the copier forfeits its bond. (An
    outside challenger that enters after seeing a result and reveals it is refused as a copy instead:
    `TaskMarketCopiedResult`, tests/chain/test_game_clients.py.)"""

    trains = False
    publishes = False

    def __init__(self, name: str) -> None:
        super().__init__(name, "never trains: commits blind, then reveals the first result another revealed", None)

    def reveal_roots(
        self, own: Sequence[bytes] | None, revealed: Callable[[], list[tuple[bytes, ...]]]
    ) -> Sequence[bytes] | None:
        seen = revealed()
        return seen[0] if seen else None


class Squatter(Lazy):
    """A sybil of a ring that takes a slot the moment the task is posted and submits an untrained result:
    from step 0 on it hands on the initial state. The honest trainer, finding every slot taken, trains
    the task anyway and enters as an outside challenger."""

    def __init__(self, name: str) -> None:
        super().__init__(name, 0)
        self.summary = "takes a slot as soon as the task is posted and submits the untrained initial state"


class LastSecond(DeviatingStrategy):
    """A liar (a faulty kernel at one step) that reveals as late as it can: its reveal is sent once the chain
    stands one second before the reveal window closes, so it lands in the window's last second, leaving
    the honest trainers the least time to see it. They still have the market's dispute hour to open a game."""

    def __init__(self, name: str, deviation: Deviation) -> None:
        super().__init__(name, deviation)
        self.summary += ", revealed in the last second of the reveal window"

    def reveal_time(self, opens_after: int, closes_at: int) -> int:
        return closes_at - 1
