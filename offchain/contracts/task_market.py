"""Typed client of TaskMarket (contracts/src/interfaces/ITaskMarket.sol).

Clients post tasks (`post_task`), trainers join with a bond and submit their checkpoint list
(`submit` with its state roots, or `submit_list` with an `offchain.game.CheckpointList`; the
market builds the root), anyone opens
disputes between groups and settles them; `finalize` pays out and `withdraw` collects.
Every custom error of the contract (contracts/src/lib/MarketErrors.sol) surfaces as a
subclass of `TaskMarketError` named after it; errors of the game and oracle it calls keep
their own classes (e.g. `DisputeGameBadConfig` from `open_dispute`).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from eth_typing import ChecksumAddress

from offchain.chain.client import Receipt, Wei
from offchain.contracts._base import (
    LIBRARY_ERRORS,
    ContractClient,
    GameId,
    TaskId,
    TypedRevert,
    Withdrawal,
    address,
    error_table,
    word,
    words,
)
from offchain.contracts.dispute_game import DISPUTE_GAME_ERRORS, Config, Outcome
from offchain.contracts.recompute_oracle import RECOMPUTE_ORACLE_ERRORS

if TYPE_CHECKING:
    from offchain.game.records import CheckpointList

CONTRACT_NAME: Final = "TaskMarket"


class TaskStatus(enum.IntEnum):
    NONE = 0
    OPEN = 1
    FINALIZED = 2


@dataclass(frozen=True, slots=True)
class TaskSpec:
    """A task as posted (ITaskMarket.TaskSpec). Deadlines are unix seconds."""

    program_hash: bytes
    graph_root: bytes
    dataset_root: bytes
    initial_state_root: bytes
    seed: int
    dataset_size: int
    steps: int
    checkpoint_interval: int
    batch_size: int
    node_count: int
    arity: int  # a power of two in [2, 64]
    clock: int  # seconds per side per game
    slots: int  # trainers at most
    bond: Wei  # per trainer, >= min_bond(spec)
    gas_price_cap: Wei  # wei per gas the bond sizing assumes
    join_deadline: int
    submit_deadline: int
    dispute_deadline: int

    @property
    def checkpoint_count(self) -> int:
        return self.steps // self.checkpoint_interval + 1

    def config(self) -> Config:
        """The game config the market copies from this spec."""
        return Config(
            self.program_hash,
            self.graph_root,
            self.dataset_root,
            self.seed,
            self.steps,
            self.checkpoint_interval,
            self.node_count,
            self.dataset_size,
            self.batch_size,
            self.arity,
            self.clock,
        )

    def to_abi(self) -> tuple[Any, ...]:
        return (
            word(self.program_hash, "program hash"),
            word(self.graph_root, "graph root"),
            word(self.dataset_root, "dataset root"),
            word(self.initial_state_root, "initial state root"),
            self.seed,
            self.dataset_size,
            self.steps,
            self.checkpoint_interval,
            self.batch_size,
            self.node_count,
            self.arity,
            self.clock,
            self.slots,
            self.bond,
            self.gas_price_cap,
            self.join_deadline,
            self.submit_deadline,
            self.dispute_deadline,
        )

    @classmethod
    def from_abi(cls, v: Sequence[Any]) -> TaskSpec:
        return cls(
            program_hash=bytes(v[0]),
            graph_root=bytes(v[1]),
            dataset_root=bytes(v[2]),
            initial_state_root=bytes(v[3]),
            seed=int(v[4]),
            dataset_size=int(v[5]),
            steps=int(v[6]),
            checkpoint_interval=int(v[7]),
            batch_size=int(v[8]),
            node_count=int(v[9]),
            arity=int(v[10]),
            clock=int(v[11]),
            slots=int(v[12]),
            bond=Wei(int(v[13])),
            gas_price_cap=Wei(int(v[14])),
            join_deadline=int(v[15]),
            submit_deadline=int(v[16]),
            dispute_deadline=int(v[17]),
        )


@dataclass(frozen=True, slots=True)
class TaskView:
    client: ChecksumAddress
    status: TaskStatus
    reward: Wei
    joined: int
    submitted: int
    group_count: int
    live_groups: int
    active_games: int

    @classmethod
    def from_abi(cls, v: Sequence[Any]) -> TaskView:
        return cls(address(v[0]), TaskStatus(v[1]), Wei(int(v[2])), *(int(x) for x in v[3:8]))


@dataclass(frozen=True, slots=True)
class GroupView:
    checkpoint_root: bytes
    final_state_root: bytes
    members: tuple[ChecksumAddress, ...]  # in submission order
    live: int  # members not eliminated
    eliminated: bool  # every member lost a game
    pool: Wei  # what is left of its eliminated members' bonds

    @classmethod
    def from_abi(cls, v: Sequence[Any]) -> GroupView:
        return cls(bytes(v[0]), bytes(v[1]), tuple(address(a) for a in v[2]), int(v[3]), bool(v[4]), Wei(int(v[5])))


@dataclass(frozen=True, slots=True)
class TrainerView:
    joined: bool
    submitted: bool
    eliminated: bool
    group: int
    pool: Wei  # once eliminated: what is left of its bond

    @classmethod
    def from_abi(cls, v: Sequence[Any]) -> TrainerView:
        return cls(bool(v[0]), bool(v[1]), bool(v[2]), int(v[3]), Wei(int(v[4])))


@dataclass(frozen=True, slots=True)
class DisputeView:
    task_id: TaskId
    defender: ChecksumAddress
    challenger: ChecksumAddress
    defender_group: int
    challenger_group: int
    settled: bool

    @classmethod
    def from_abi(cls, v: Sequence[Any]) -> DisputeView:
        return cls(TaskId(int(v[0])), address(v[1]), address(v[2]), int(v[3]), int(v[4]), bool(v[5]))


@dataclass(frozen=True, slots=True)
class Finalized:
    """`TaskFinalized`: the winning group (-1: the client was refunded) and the task's reward."""

    task_id: TaskId
    winning_group: int
    reward: Wei


@dataclass(frozen=True, slots=True)
class Submission:
    """`ResultSubmitted`."""

    task_id: TaskId
    trainer: ChecksumAddress
    group: int
    checkpoint_root: bytes
    final_state_root: bytes


@dataclass(frozen=True, slots=True)
class Dispute:
    """`DisputeOpened`."""

    task_id: TaskId
    game_id: GameId
    defender_group: int
    challenger_group: int
    defender: ChecksumAddress
    challenger: ChecksumAddress


# -- errors ------------------------------------------------------------------------------------


class TaskMarketError(TypedRevert):
    """Root of TaskMarket's custom errors."""


class TaskMarketZeroReward(TaskMarketError):
    """A task must escrow a reward: send it as the value of `postTask`."""


class TaskMarketZeroSteps(TaskMarketError):
    """A task must train at least one step."""


class TaskMarketBadCheckpointInterval(TaskMarketError):
    """The checkpoint interval must be non-zero and divide `steps`."""


class TaskMarketTooManyCheckpoints(TaskMarketError):
    """The task has more than `maxCheckpoints` checkpoints (`steps / checkpointInterval`,
    `TaskMarket.MAX_CHECKPOINTS`): `submit` carries the whole list, so raise the checkpoint interval."""


class TaskMarketZeroNodeCount(TaskMarketError):
    """The program must have at least one node (`nodeCount`)."""


class TaskMarketZeroDatasetSize(TaskMarketError):
    """The dataset must have at least one example."""


class TaskMarketZeroBatchSize(TaskMarketError):
    """A batch must have at least one example."""


class TaskMarketBadArity(TaskMarketError):
    """The bisection arity must be a power of two in [2, 64]."""


class TaskMarketZeroClock(TaskMarketError):
    """Each side of a game needs a non-zero clock (seconds)."""


class TaskMarketZeroSlots(TaskMarketError):
    """A task takes at least one trainer (`slots`)."""


class TaskMarketTooManySlots(TaskMarketError):
    """The task asks more than `maxSlots` trainers (`TaskMarket.MAX_SLOTS`): `finalize` pays every trainer in
    one transaction, so lower `slots` to at most `maxSlots`."""


class TaskMarketBadDeadlines(TaskMarketError):
    """The deadlines must satisfy now < joinDeadline <= submitDeadline <= disputeDeadline; take them from the
    latest block's timestamp."""


class TaskMarketJoinWindowTooShort(TaskMarketError):
    """Joining closes too soon after posting (`window` < `minWindow` seconds, `TaskMarket.MIN_JOIN_WINDOW`):
    move `joinDeadline` later so that other trainers can see the task and join."""


class TaskMarketDisputeWindowTooShort(TaskMarketError):
    """Disputes close too soon after the submit deadline (`window` < `minWindow` seconds,
    `TaskMarket.MIN_DISPUTE_WINDOW`): a result submitted last could not be disputed; move
    `disputeDeadline` later."""


class TaskMarketClockTooShort(TaskMarketError):
    """The game clock (`clock` seconds per side) is below `minClock` = the game's `roundBound` times
    `TaskMarket.MIN_MOVE_TIME`: give each side at least `minClock` seconds."""


class TaskMarketProofTooLarge(TaskMarketError):
    """The largest proof a game of this task could need may cost `proofGas` gas, more than one transaction may
    spend on it (`maxProofGas`, `TaskMarket.MAX_PROOF_GAS`): lower `batch_size` (or use a smaller dataset or
    program); `proof_gas_bound(spec)` gives the figure."""


class TaskMarketBondBelowMinimum(TaskMarketError):
    """The spec's bond is below `minBond` (what every game a group can lose costs); raise it to at least
    `min_bond(spec)`."""


class TaskMarketTaskNotOpen(TaskMarketError):
    """The task is not open (`status`: 0 no such task, 2 finalized)."""


class TaskMarketJoinClosed(TaskMarketError):
    """Joining this task closed at `joinDeadline`."""


class TaskMarketTaskFull(TaskMarketError):
    """Every slot of the task is taken."""


class TaskMarketAlreadyJoined(TaskMarketError):
    """The trainer already joined this task."""


class TaskMarketBondTooSmall(TaskMarketError):
    """`join` was sent less than the task's bond (`required`); send at least that."""


class TaskMarketNotJoined(TaskMarketError):
    """The trainer has not joined this task; `join` it before submitting."""


class TaskMarketCheckpointCount(TaskMarketError):
    """The checkpoint list has `count` state roots; the task's has `expected` (`steps / checkpointInterval + 1`,
    the states after steps 0, c, ..., steps): submit the whole list."""


class TaskMarketInitialStateMismatch(TaskMarketError):
    """The checkpoint list does not start at the task's initial state (`stateRoot` != `initialStateRoot`):
    train from the task's initial state."""


class TaskMarketSubmitClosed(TaskMarketError):
    """Submissions to this task closed at `submitDeadline`."""


class TaskMarketAlreadySubmitted(TaskMarketError):
    """The trainer already submitted to this task (into `group`)."""


class TaskMarketDisputeClosed(TaskMarketError):
    """Disputes on this task closed at `disputeDeadline`; `finalize` it instead."""


class TaskMarketNotSubmitted(TaskMarketError):
    """The trainer has not submitted a result to this task, so it cannot play a dispute on it."""


class TaskMarketSameGroup(TaskMarketError):
    """Both trainers submitted the same result (`group`): there is nothing to dispute; pick trainers of
    two different groups."""


class TaskMarketTrainerEliminated(TaskMarketError):
    """The trainer lost a game on this task and plays no more."""


class TaskMarketAlreadyPlayed(TaskMarketError):
    """These two trainers already played each other on this task (in either role)."""


class TaskMarketUnknownDispute(TaskMarketError):
    """The game was not opened by this market."""


class TaskMarketDisputeAlreadySettled(TaskMarketError):
    """The game was already settled."""


class TaskMarketGamePending(TaskMarketError):
    """The game has not ended; play it on, or call the game's `timeout` once the mover's clock ran out."""


class TaskMarketGamesActive(TaskMarketError):
    """Games of the task are still running; settle them (`settleDispute`) before finalizing."""


class TaskMarketFinalizeTooEarly(TaskMarketError):
    """The task cannot be finalized yet: wait for `disputeDeadline`, or until one live group is left and the
    submit deadline passed (or every slot submitted)."""


class TaskMarketNothingToWithdraw(TaskMarketError):
    """The account has no credit at the market to withdraw."""


class TaskMarketTransferFailed(TaskMarketError):
    """Sending the credit to the account failed (a contract that refuses ether?); the credit is kept."""


TASK_MARKET_ERRORS: Final = error_table(TaskMarketError)


# -- the client --------------------------------------------------------------------------------


class TaskMarketClient(ContractClient):
    """Calls a deployed TaskMarket through a `ChainClient`."""

    CONTRACT_NAME = CONTRACT_NAME
    CALLEES = ("DisputeGame", "BatchVerifier", "RecomputeOracle")
    ERRORS = (TASK_MARKET_ERRORS, DISPUTE_GAME_ERRORS, RECOMPUTE_ORACLE_ERRORS, LIBRARY_ERRORS)

    def post_task(self, spec: TaskSpec, reward: int) -> TaskId:
        """Posts `spec` escrowing `reward` wei; the task id (from TaskPosted)."""
        receipt = self._send(self.contract.functions.postTask(spec.to_abi()), value=reward)
        return TaskId(int(self._event(receipt, "TaskPosted")["taskId"]))

    def join(self, task_id: int, bond: int | None = None) -> Receipt:
        """Joins with `bond` wei (default: the task's bond; any excess is credited back)."""
        value = self.spec_of(task_id).bond if bond is None else bond
        return self._send(self.contract.functions.join(task_id), value=value)

    def submit(self, task_id: int, state_roots: Sequence[bytes]) -> Submission:
        """Submits a checkpoint list: the state roots after steps `0, c, 2c, ..., T` (`T / c + 1` of them, the
        first the task's initial state). The market builds the list's root; the event carries it."""
        fn = self.contract.functions.submit(task_id, words(state_roots, "state roots"))
        return _submission(self._event(self._send(fn), "ResultSubmitted"))

    def submit_list(self, task_id: int, checkpoints: CheckpointList) -> Submission:
        """Submits a whole checkpoint list (its state roots)."""
        return self.submit(task_id, checkpoints.roots)

    def open_dispute(self, task_id: int, defender: str, challenger: str) -> GameId:
        """Opens the game between two trainers of different groups; the game id (from DisputeOpened)."""
        receipt = self._send(self.contract.functions.openDispute(task_id, address(defender), address(challenger)))
        return GameId(int(self._event(receipt, "DisputeOpened")["gameId"]))

    def settle_dispute(self, game_id: int) -> Outcome:
        """Eliminates the loser(s) of an ended game and pays compensation and the oracle fee."""
        receipt = self._send(self.contract.functions.settleDispute(game_id))
        return Outcome(int(self._event(receipt, "DisputeSettled")["outcome"]))

    def finalize(self, task_id: int) -> Finalized:
        receipt = self._send(self.contract.functions.finalize(task_id))
        e = self._event(receipt, "TaskFinalized")
        return Finalized(TaskId(int(e["taskId"])), int(e["winningGroup"]), Wei(int(e["reward"])))

    def withdraw(self) -> Withdrawal:
        """Sends the caller its whole credit."""
        receipt = self._send(self.contract.functions.withdraw())
        return Withdrawal(Wei(int(self._event(receipt, "Withdrawn")["amount"])), receipt)

    # -- views -----------------------------------------------------------------------------

    def task(self, task_id: int) -> TaskView:
        return TaskView.from_abi(self._call(self.contract.functions.task(task_id)))

    def spec_of(self, task_id: int) -> TaskSpec:
        return TaskSpec.from_abi(self._call(self.contract.functions.specOf(task_id)))

    def trainers_of(self, task_id: int) -> tuple[ChecksumAddress, ...]:
        return tuple(address(a) for a in self._call(self.contract.functions.trainersOf(task_id)))

    def group_of(self, task_id: int, group: int) -> GroupView:
        return GroupView.from_abi(self._call(self.contract.functions.groupOf(task_id, group)))

    def group_of_trainer(self, task_id: int, trainer: str) -> int | None:
        """The trainer's group, or None if it has not submitted."""
        submitted, group = self._call(self.contract.functions.groupOfTrainer(task_id, address(trainer)))
        return int(group) if submitted else None

    def trainer_of(self, task_id: int, trainer: str) -> TrainerView:
        return TrainerView.from_abi(self._call(self.contract.functions.trainerOf(task_id, address(trainer))))

    def dispute_of(self, game_id: int) -> DisputeView:
        return DisputeView.from_abi(self._call(self.contract.functions.disputeOf(game_id)))

    def task_count(self) -> int:
        return int(self._call(self.contract.functions.taskCount()))

    def min_bond(self, spec: TaskSpec) -> Wei:
        return Wei(int(self._call(self.contract.functions.minBond(spec.to_abi()))))

    def compensation(self, spec: TaskSpec) -> Wei:
        return Wei(int(self._call(self.contract.functions.compensation(spec.to_abi()))))

    def proof_gas_bound(self, spec: TaskSpec) -> int:
        """Gas of the largest proof any game of `spec` can need, an upper bound (`post_task` refuses a spec
        whose bound exceeds `TaskMarket.MAX_PROOF_GAS`)."""
        return int(self._call(self.contract.functions.proofGasBound(spec.to_abi())))

    def credit_of(self, account: str) -> Wei:
        return Wei(int(self._call(self.contract.functions.creditOf(address(account)))))

    def total_escrow(self) -> Wei:
        return Wei(int(self._call(self.contract.functions.totalEscrow())))

    def total_bonds(self) -> Wei:
        return Wei(int(self._call(self.contract.functions.totalBonds())))

    def total_pools(self) -> Wei:
        return Wei(int(self._call(self.contract.functions.totalPools())))

    def total_credits(self) -> Wei:
        return Wei(int(self._call(self.contract.functions.totalCredits())))

    def total_burnt(self) -> Wei:
        return Wei(int(self._call(self.contract.functions.totalBurnt())))

    def totals(self) -> Wei:
        """`totalEscrow + totalBonds + totalPools + totalCredits + totalBurnt`: the market's balance, always."""
        return Wei(
            self.total_escrow() + self.total_bonds() + self.total_pools() + self.total_credits() + self.total_burnt()
        )

    def game(self) -> ChecksumAddress:
        return address(self._call(self.contract.functions.game()))

    def oracle(self) -> ChecksumAddress:
        return address(self._call(self.contract.functions.oracle()))

    # -- events ----------------------------------------------------------------------------

    def submissions(self, task_id: int, *, from_block: int = 0) -> list[Submission]:
        return [_submission(e) for e in self._logs("ResultSubmitted", {"taskId": task_id}, from_block=from_block)]

    def disputes(self, task_id: int, *, from_block: int = 0) -> list[Dispute]:
        return [
            Dispute(
                TaskId(int(e["taskId"])),
                GameId(int(e["gameId"])),
                int(e["defenderGroup"]),
                int(e["challengerGroup"]),
                address(e["defender"]),
                address(e["challenger"]),
            )
            for e in self._logs("DisputeOpened", {"taskId": task_id}, from_block=from_block)
        ]


def _submission(e: Any) -> Submission:
    return Submission(
        TaskId(int(e["taskId"])),
        address(e["trainer"]),
        int(e["group"]),
        bytes(e["checkpointRoot"]),
        bytes(e["finalStateRoot"]),
    )
