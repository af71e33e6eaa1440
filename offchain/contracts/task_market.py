"""Typed client of TaskMarket (contracts/src/interfaces/ITaskMarket.sol).

Clients post tasks (`post_task`). Trainers join a slot with a bond (`join`) and `commit` to
their result before the submit deadline; outside challengers bond and commit in one call
(`enter`), without a slot, until `MIN_DISPUTE_WINDOW` before the dispute deadline. Every
entrant reveals its checkpoint list after the submit deadline, in a later block than its
commit, within `REVEAL_WINDOW` (`submit` with its state roots and the commitment's salt, or
`submit_list` with an `offchain.game.CheckpointList`; the market builds the root). The
commitment is `result_commitment(task_id, trainer, roots, salt)`. Anyone opens disputes between
entrants of different groups and settles them; after the dispute deadline `finalize` credits
the client, `claim` each live entrant (its bond, and its share if its group won), and
`withdraw` collects.

Every custom error of the contract (contracts/src/lib/MarketErrors.sol) surfaces as a
subclass of `TaskMarketError` named after it; errors of the game and oracle it calls keep
their own classes (e.g. `DisputeGameBadConfig` from `open_dispute`).
"""

from __future__ import annotations

import enum
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from eth_abi import encode as abi_encode
from eth_typing import ChecksumAddress
from eth_utils.crypto import keccak
from hexbytes import HexBytes

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

# The market's windows (TaskMarket's constants), in seconds.
MIN_JOIN_WINDOW: Final = 5 * 60
REVEAL_WINDOW: Final = 15 * 60  # to reveal, after the submit deadline (or after a later commit)
MIN_DISPUTE_WINDOW: Final = 60 * 60  # disputes stay open this long after the reveals
# disputeDeadline - submitDeadline must be at least this: the reveals, then an hour of disputes.
MIN_SUBMIT_TO_DISPUTE: Final = REVEAL_WINDOW + MIN_DISPUTE_WINDOW


def result_commitment(task_id: int, trainer: str, state_roots: Sequence[bytes], salt: bytes) -> bytes:
    """What an entrant commits to before revealing its checkpoint list (`commit`, `enter`):
    `keccak256(abi.encode(uint256 taskId, address trainer, keccak256(abi.encodePacked(stateRoots)), bytes32 salt))`.
    Binding the trainer makes a commitment useless to anyone else."""
    listed = keccak(b"".join(words(state_roots, "state roots")))
    return keccak(
        abi_encode(
            ["uint256", "address", "bytes32", "bytes32"], [int(task_id), address(trainer), listed, word(salt, "salt")]
        )
    )


def new_salt() -> bytes:
    """A fresh random 32-byte salt for a commitment."""
    return secrets.token_bytes(32)


def reveal_window(spec: TaskSpec, committed_at: int) -> tuple[int, int]:
    """`(opens_after, closes_at)`: a result committed at chain time `committed_at` is revealed at a time
    `t` with `opens_after < t <= closes_at` (and in a later block than its commit)."""
    opens_after = spec.submit_deadline
    return opens_after, max(committed_at, opens_after) + REVEAL_WINDOW


def entry_closes(spec: TaskSpec) -> int:
    """The last chain second an outside challenger may `enter`."""
    return spec.dispute_deadline - MIN_DISPUTE_WINDOW


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
    joined: int  # trainers on slots
    submitted: int  # entrants that revealed a result
    group_count: int
    live_groups: int
    active_games: int
    entrants: int  # trainers on slots and outside challengers
    won: bool  # finalized with one live group, `winning_group`
    winning_group: int
    share: Wei  # once won: the reward share of each live member of the winning group

    @classmethod
    def from_abi(cls, v: Sequence[Any]) -> TaskView:
        joined, submitted, groups, live, games, entrants = (int(x) for x in v[3:9])
        return cls(
            address(v[0]),
            TaskStatus(v[1]),
            Wei(int(v[2])),
            joined,
            submitted,
            groups,
            live,
            games,
            entrants,
            bool(v[9]),
            int(v[10]),
            Wei(int(v[11])),
        )


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
    joined: bool  # bonded: on a slot, or as an outside challenger
    submitted: bool  # revealed its result
    eliminated: bool
    group: int
    pool: Wei  # once eliminated: what is left of its bond
    challenger: bool  # entered with `enter`, not on a slot
    committed: bool
    claimed: bool

    @classmethod
    def from_abi(cls, v: Sequence[Any]) -> TrainerView:
        return cls(bool(v[0]), bool(v[1]), bool(v[2]), int(v[3]), Wei(int(v[4])), bool(v[5]), bool(v[6]), bool(v[7]))


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
class Commitment:
    """`ResultCommitted` (from `commit` or `enter`), with the block and chain time it landed at."""

    task_id: TaskId
    trainer: ChecksumAddress
    commitment: bytes
    block: int
    timestamp: int


@dataclass(frozen=True, slots=True)
class Claim:
    """`Claimed`: a live entrant's bond, and its share of the reward if its group won."""

    task_id: TaskId
    trainer: ChecksumAddress
    amount: Wei


@dataclass(frozen=True, slots=True)
class Submission:
    """`ResultSubmitted`."""

    task_id: TaskId
    trainer: ChecksumAddress
    group: int
    checkpoint_root: bytes
    final_state_root: bytes
    block: int = 0  # where it was revealed (0: not known, e.g. read from a receipt's events)


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
    """The task asks more than `maxSlots` trainers (`TaskMarket.MAX_SLOTS`): each trainer's bond must cover a
    game against every other one, so lower `slots` to at most `maxSlots`."""


class TaskMarketBadDeadlines(TaskMarketError):
    """The deadlines must satisfy now < joinDeadline <= submitDeadline <= disputeDeadline; take them from the
    latest block's timestamp."""


class TaskMarketJoinWindowTooShort(TaskMarketError):
    """Joining closes too soon after posting (`window` < `minWindow` seconds, `TaskMarket.MIN_JOIN_WINDOW`):
    move `joinDeadline` later so that other trainers can see the task and join."""


class TaskMarketDisputeWindowTooShort(TaskMarketError):
    """Disputes close too soon after the submit deadline (`window` < `minWindow` seconds,
    `TaskMarket.REVEAL_WINDOW + TaskMarket.MIN_DISPUTE_WINDOW`, 75 minutes): the results are revealed
    after the submit deadline, and one revealed last must still be disputable for an hour; move
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
    """Every slot of the task is taken; `enter` it as an outside challenger instead."""


class TaskMarketAlreadyJoined(TaskMarketError):
    """The trainer already joined this task."""


class TaskMarketBondTooSmall(TaskMarketError):
    """`join` was sent less than the task's bond (`required`); send at least that."""


class TaskMarketNotJoined(TaskMarketError):
    """The trainer has no slot on this task (an outside challenger commits with `enter`); `join` it before
    committing."""


class TaskMarketCheckpointCount(TaskMarketError):
    """The checkpoint list has `count` state roots; the task's has `expected` (`steps / checkpointInterval + 1`,
    the states after steps 0, c, ..., steps): submit the whole list."""


class TaskMarketInitialStateMismatch(TaskMarketError):
    """The checkpoint list does not start at the task's initial state (`stateRoot` != `initialStateRoot`):
    train from the task's initial state."""


class TaskMarketSubmitClosed(TaskMarketError):
    """Commitments of trainers on slots closed at `submitDeadline`; an uncommitted trainer forfeits its bond."""


class TaskMarketAlreadySubmitted(TaskMarketError):
    """The trainer already revealed its result on this task (into `group`)."""


class TaskMarketDisputeClosed(TaskMarketError):
    """Disputes on this task closed at `disputeDeadline`; `finalize` it instead."""


class TaskMarketNotSubmitted(TaskMarketError):
    """The trainer has not revealed a result on this task, so it cannot play a dispute on it."""


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
    """The task cannot be finalized before `disputeDeadline` (an outside challenger may still come); wait for it."""


class TaskMarketNothingToWithdraw(TaskMarketError):
    """The account has no credit at the market to withdraw."""


class TaskMarketTransferFailed(TaskMarketError):
    """Sending the credit to the account failed (a contract that refuses ether?); the credit is kept."""


class TaskMarketAlreadyCommitted(TaskMarketError):
    """The trainer already committed to a result on this task; reveal it with `submit` after the submit deadline."""


class TaskMarketNotCommitted(TaskMarketError):
    """The trainer has no commitment on this task: `commit` (on a slot) or `enter` (outside) before revealing."""


class TaskMarketRevealMismatch(TaskMarketError):
    """The revealed state roots and salt do not hash to the trainer's commitment
    (`result_commitment(task_id, trainer, roots, salt)`): reveal exactly the list and salt committed to."""


class TaskMarketRevealClosed(TaskMarketError):
    """A reveal is allowed only after `opensAfter` (the submit deadline), in a later block than its commit, and
    until `closesAt`; outside that window it is refused (after it, the bond is forfeit)."""


class TaskMarketCopiedResult(TaskMarketError):
    """The revealed result joins `group`, which was revealed (block `groupCreatedBlock`) before this entrant
    committed (block `committedBlock`): a copy of a result already seen is not the entrant's own work."""


class TaskMarketEntryClosed(TaskMarketError):
    """Outside challengers enter until `closesAt`, `MIN_DISPUTE_WINDOW` before the dispute deadline."""


class TaskMarketNotFinalized(TaskMarketError):
    """Payouts are claimed once the task is finalized; `finalize` it after the dispute deadline first."""


class TaskMarketNothingToClaim(TaskMarketError):
    """The trainer has nothing to claim on this task: it did not reveal a result, was eliminated, or already
    claimed."""


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
        """Joins a slot with `bond` wei (default: the task's bond; any excess is credited back)."""
        value = self.spec_of(task_id).bond if bond is None else bond
        return self._send(self.contract.functions.join(task_id), value=value)

    def commit(self, task_id: int, commitment: bytes) -> Commitment:
        """A trainer on a slot commits to its result before the submit deadline (`result_commitment`)."""
        receipt = self._send(self.contract.functions.commit(task_id, word(commitment, "commitment")))
        return self._commitment(receipt)

    def enter(self, task_id: int, commitment: bytes, bond: int | None = None) -> Commitment:
        """An outside challenger bonds (default: the task's bond; any excess is credited back) and commits, without
        a slot, until `entry_closes(spec)`."""
        value = self.spec_of(task_id).bond if bond is None else bond
        receipt = self._send(self.contract.functions.enter(task_id, word(commitment, "commitment")), value=value)
        return self._commitment(receipt)

    def submit(self, task_id: int, state_roots: Sequence[bytes], salt: bytes) -> Submission:
        """Reveals the committed checkpoint list: the state roots after steps `0, c, 2c, ..., T` (`T / c + 1` of them,
        the first the task's initial state) and the commitment's salt. The market builds the list's root; the
        event carries it."""
        fn = self.contract.functions.submit(task_id, words(state_roots, "state roots"), word(salt, "salt"))
        receipt = self._send(fn)
        return _submission({**self._event(receipt, "ResultSubmitted"), "_block": receipt.block_number})

    def submit_list(self, task_id: int, checkpoints: CheckpointList, salt: bytes) -> Submission:
        """Reveals a whole checkpoint list (its state roots)."""
        return self.submit(task_id, checkpoints.roots, salt)

    def claim(self, task_id: int, trainer: str) -> Claim:
        """Anyone, once the task is finalized: credits a live entrant that revealed its bond and, if its group won,
        its share of the reward."""
        receipt = self._send(self.contract.functions.claim(task_id, address(trainer)))
        e = self._event(receipt, "Claimed")
        return Claim(TaskId(int(e["taskId"])), address(e["trainer"]), Wei(int(e["amount"])))

    def open_dispute(self, task_id: int, defender: str, challenger: str) -> GameId:
        """Opens the game between two trainers of different groups; the game id (from DisputeOpened)."""
        receipt = self._send(self.contract.functions.openDispute(task_id, address(defender), address(challenger)))
        return GameId(int(self._event(receipt, "DisputeOpened")["gameId"]))

    def settle_dispute(self, game_id: int) -> Outcome:
        """Eliminates the loser(s) of an ended game and pays compensation and the oracle fee."""
        receipt = self._send(self.contract.functions.settleDispute(game_id))
        return Outcome(int(self._event(receipt, "DisputeSettled")["outcome"]))

    def finalize(self, task_id: int) -> Finalized:
        """After the dispute deadline, once no game runs: credits the client (forfeited bonds, and the reward unless
        one group is left); the live entrants then `claim`."""
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

    def reveal_window(self) -> int:
        return int(self._call(self.contract.functions.REVEAL_WINDOW()))

    def min_dispute_window(self) -> int:
        return int(self._call(self.contract.functions.MIN_DISPUTE_WINDOW()))

    def open_gas_bound(self) -> int:
        return int(self._call(self.contract.functions.OPEN_GAS_BOUND()))

    def oracle(self) -> ChecksumAddress:
        return address(self._call(self.contract.functions.oracle()))

    # -- events ----------------------------------------------------------------------------

    def submissions(self, task_id: int, *, from_block: int = 0) -> list[Submission]:
        return [_submission(e) for e in self._logs("ResultSubmitted", {"taskId": task_id}, from_block=from_block)]

    def commitments(self, task_id: int, trainer: str | None = None, *, from_block: int = 0) -> list[Commitment]:
        """`ResultCommitted` events of the task (of one trainer), with their blocks' timestamps."""
        filters: dict[str, Any] = {"taskId": task_id}
        if trainer is not None:
            filters["trainer"] = address(trainer)
        out = []
        for e in self._logs("ResultCommitted", filters, from_block=from_block):
            block = int(e["_block"])
            out.append(
                Commitment(
                    TaskId(int(e["taskId"])), address(e["trainer"]), bytes(e["commitment"]), block, self._time(block)
                )
            )
        return out

    def claims(self, task_id: int, *, from_block: int = 0) -> list[Claim]:
        return [
            Claim(TaskId(int(e["taskId"])), address(e["trainer"]), Wei(int(e["amount"])))
            for e in self._logs("Claimed", {"taskId": task_id}, from_block=from_block)
        ]

    def revealed_roots(self, task_id: int, trainer: str, *, from_block: int = 0) -> tuple[bytes, ...] | None:
        """The checkpoint list `trainer` revealed on the task, read from its `submit` transaction's calldata
        (public once mined; the event carries only the list's root): None if it has not revealed."""
        logs = self._logs("ResultSubmitted", {"taskId": task_id, "trainer": address(trainer)}, from_block=from_block)
        if not logs:
            return None
        tx_hash = HexBytes(logs[0]["_tx"])
        tx = self.chain.read(lambda: self.chain.w3.eth.get_transaction(tx_hash), "eth_getTransactionByHash")
        fn, args = self.contract.decode_function_input(tx["input"])
        if fn.fn_name != "submit":  # pragma: no cover - only `submit` emits ResultSubmitted
            raise ValueError(f"transaction {tx_hash.hex()} called {fn.fn_name}, not submit")
        return tuple(bytes(r) for r in args["stateRoots"])

    def _time(self, block: int) -> int:
        return int(self.chain.read(lambda: self.chain.w3.eth.get_block(block)["timestamp"], "eth_getBlockByNumber"))

    def _commitment(self, receipt: Receipt) -> Commitment:
        e = self._event(receipt, "ResultCommitted")
        block = receipt.block_number
        return Commitment(
            TaskId(int(e["taskId"])), address(e["trainer"]), bytes(e["commitment"]), block, self._time(block)
        )

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
        int(e.get("_block", 0)),
    )
