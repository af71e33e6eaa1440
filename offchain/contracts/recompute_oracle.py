"""Typed client of RecomputeOracle (contracts/src/interfaces/IRecomputeOracle.sol).

Bonded oracles answer a dispute's last question: the output commitments of one program node
on agreed inputs. A question goes through draws (`draw`, once the randomness requested for
it is readable: `draw_ready`), an answer, an optional challenge and a committee that
commits to its votes (`vote_commitment`, `commit_vote`) before revealing them
(`reveal_vote`). Every custom error of the contract (contracts/src/lib/OracleErrors.sol)
surfaces as a subclass of `RecomputeOracleError` named after it, and those of the
randomness source it calls (contracts/src/BlockhashRandomness.sol) as subclasses of
`BlockhashRandomnessError`.

The two refusal answers are defined here, once: `ORACLE_UNAVAILABLE` (the inputs could not
be fetched; the contract knows it and charges a wrong one only `silenceSlash`) and
`ORACLE_INAPPLICABLE` (the inputs were fetched, but the node cannot run on them, e.g. their
shapes do not fit it; an ordinary answer to the contract). Each is posted as a one-word
output list, like Solidity's right-padded `bytes32` string literal.
"""

from __future__ import annotations

import enum
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from eth_abi import encode
from eth_typing import ChecksumAddress
from eth_utils import keccak

from offchain.chain.client import Receipt, Wei
from offchain.contracts._base import (
    LIBRARY_ERRORS,
    ContractClient,
    QuestionId,
    TypedRevert,
    Withdrawal,
    address,
    error_table,
    word,
    words,
)

CONTRACT_NAME: Final = "RecomputeOracle"


def _bytes32_literal(text: str) -> bytes:
    """`bytes32 constant X = "text"` in Solidity: the UTF-8 bytes, right-padded with zeros."""
    raw = text.encode()
    if len(raw) > 32:
        raise ValueError(f"{text!r} does not fit in 32 bytes")
    return raw.ljust(32, b"\0")


ORACLE_UNAVAILABLE: Final = _bytes32_literal("refereed:inputs-unavailable")
"""The one output of "the inputs could not be fetched" (IRecomputeOracle.sol's ORACLE_UNAVAILABLE)."""
ORACLE_INAPPLICABLE: Final = _bytes32_literal("refereed:inputs-inapplicable")
"""The one output of "the inputs were fetched, but the node cannot run on them" (an ordinary answer)."""


def outputs_hash(outputs: Sequence[bytes]) -> bytes:
    """`sha256(outputs[0] || outputs[1] || ...)`: what the contract keeps of an answer or a vote."""
    return hashlib.sha256(b"".join(words(outputs, "outputs"))).digest()


UNAVAILABLE_HASH: Final = hashlib.sha256(ORACLE_UNAVAILABLE).digest()  # the contract's `unavailableHash()`
INAPPLICABLE_HASH: Final = hashlib.sha256(ORACLE_INAPPLICABLE).digest()


def vote_commitment(question_id: int, member: str, votes_hash: bytes, salt: bytes) -> bytes:
    """`keccak256(abi.encode(questionId, member, outputsHash, salt))`: what `commitVote` takes."""
    return keccak(
        encode(
            ["uint256", "address", "bytes32", "bytes32"],
            [question_id, address(member), word(votes_hash, "outputs hash"), word(salt, "salt")],
        )
    )


class QuestionStatus(enum.IntEnum):
    NONE = 0
    DRAWING = 1  # the answering oracle is drawn once the randomness is readable
    ASSIGNED = 2  # the assigned oracle answers until `deadline`
    ANSWERED = 3  # challengeable until `deadline`
    COMMITTEE_DRAWING = 4  # challenged; the committee is drawn once the randomness is readable
    VOTING = 5  # the committee commits until `commit_deadline`, then reveals until `deadline`
    FINAL = 6
    ABANDONED = 7

    @property
    def drawing(self) -> bool:
        return self in (QuestionStatus.DRAWING, QuestionStatus.COMMITTEE_DRAWING)

    @property
    def ended(self) -> bool:
        return self in (QuestionStatus.FINAL, QuestionStatus.ABANDONED)


@dataclass(frozen=True, slots=True)
class OracleParams:
    """The constructor's `Params`, in its order (`to_abi`)."""

    fee: Wei
    min_bond: Wei
    challenge_bond: Wei
    silence_slash: Wei
    answer_window: int  # seconds
    challenge_window: int
    vote_window: int  # the commit phase, and again the reveal phase
    exit_delay: int
    wait_limit: int  # how long one draw may wait for enough eligible oracles
    committee_size: int
    max_attempts: int
    max_rounds: int

    def to_abi(self) -> tuple[int, ...]:
        return (
            self.fee,
            self.min_bond,
            self.challenge_bond,
            self.silence_slash,
            self.answer_window,
            self.challenge_window,
            self.vote_window,
            self.exit_delay,
            self.wait_limit,
            self.committee_size,
            self.max_attempts,
            self.max_rounds,
        )

    @classmethod
    def from_abi(cls, v: Sequence[Any]) -> OracleParams:
        return cls(Wei(int(v[0])), Wei(int(v[1])), Wei(int(v[2])), Wei(int(v[3])), *(int(x) for x in v[4:12]))

    @property
    def oracles_needed(self) -> int:
        """Distinct eligible oracles (besides the parties) a question needs to be assigned at all."""
        return self.committee_size + 2

    @property
    def max_resolution_time(self) -> int:
        """The contract's `maxResolutionTime()`."""
        return (
            self.max_attempts * (self.wait_limit + self.answer_window + 2)
            + self.challenge_window
            + 1
            + self.max_rounds * (self.wait_limit + 2 * self.vote_window + 2)
        )


@dataclass(frozen=True, slots=True)
class Question:
    program_hash: bytes
    node: int
    inputs_hash: bytes
    parties: tuple[ChecksumAddress, ChecksumAddress]
    status: QuestionStatus
    attempts: int  # answering oracles assigned so far
    round: int  # committees seated so far
    fee_paid: bool
    oracle: ChecksumAddress  # the assigned (or answering) oracle
    deadline: int  # by status: draw, answer, challenge or reveal deadline
    commit_deadline: int  # VOTING: end of the commit phase
    request_block: int  # DRAWING, COMMITTEE_DRAWING: the block of the pending randomness request
    slot_count: int  # stake units that existed at that request
    request_id: int
    outputs_hash: bytes  # the posted answer, then the final one
    challenger: ChecksumAddress

    @classmethod
    def from_abi(cls, v: Sequence[Any]) -> Question:
        return cls(
            bytes(v[0]),
            int(v[1]),
            bytes(v[2]),
            (address(v[3][0]), address(v[3][1])),
            QuestionStatus(v[4]),
            int(v[5]),
            int(v[6]),
            bool(v[7]),
            address(v[8]),
            int(v[9]),
            int(v[10]),
            int(v[11]),
            int(v[12]),
            int(v[13]),
            bytes(v[14]),
            address(v[15]),
        )


@dataclass(frozen=True, slots=True)
class Assignment:
    """`QuestionAssigned`: `oracle` must answer before `deadline`."""

    question_id: QuestionId
    oracle: ChecksumAddress
    deadline: int


@dataclass(frozen=True, slots=True)
class Seating:
    """`CommitteeSeated`: committee `round` commits until `commit_deadline`, reveals until `reveal_deadline`."""

    question_id: QuestionId
    round: int
    committee: tuple[ChecksumAddress, ...]
    commit_deadline: int
    reveal_deadline: int
    block: int = 0  # where it was seated (0 when read from a receipt)


@dataclass(frozen=True, slots=True)
class Draw:
    """What one `draw` did: assigned the question, seated a committee, requested fresh randomness
    (too few eligible oracles, or the randomness expired; `waiting`), or abandoned the question."""

    question_id: QuestionId
    assignment: Assignment | None = None
    seating: Seating | None = None
    abandoned: bool = False
    block: int = 0

    @property
    def waiting(self) -> bool:
        return self.assignment is None and self.seating is None and not self.abandoned


# -- errors ------------------------------------------------------------------------------------


class RecomputeOracleError(TypedRevert):
    """Root of RecomputeOracle's custom errors."""


class RecomputeOracleInvalidCommitteeSize(RecomputeOracleError):
    """The committee size must be odd and non-zero, so that a majority exists."""


class RecomputeOracleZeroMinBond(RecomputeOracleError):
    """The oracles' minimum bond (one stake unit) must be non-zero."""


class RecomputeOracleSilenceSlashTooLarge(RecomputeOracleError):
    """The silence slash must not exceed the minimum bond an oracle holds."""


class RecomputeOracleZeroWindow(RecomputeOracleError):
    """The answer, challenge and vote windows must all be non-zero seconds."""


class RecomputeOracleZeroMaxAttempts(RecomputeOracleError):
    """`maxAttempts` must be at least 1: at least one oracle is drawn per question."""


class RecomputeOracleZeroMaxRounds(RecomputeOracleError):
    """`maxRounds` must be at least 1: a challenged answer gets at least one committee."""


class RecomputeOracleResolutionTimeTooLong(RecomputeOracleError):
    """The longest resolution (`maxResolutionTime()`: draws, answers, the challenge window and every committee
    round) exceeds the allowed maximum; shorten the windows or the wait limit."""


class RecomputeOracleExitDelayTooLong(RecomputeOracleError):
    """The exit delay exceeds the allowed maximum; choose a shorter one."""


class RecomputeOracleNotDeployer(RecomputeOracleError):
    """Only the oracle's deployer (`deployer`) may bind the dispute game; send from its key."""


class RecomputeOracleGameAlreadyBound(RecomputeOracleError):
    """The dispute game was already bound (to `game`); it is bound once, at deployment."""


class RecomputeOracleNotGame(RecomputeOracleError):
    """Only the bound dispute game (`game`) may ask questions; a zero game means the deployment never bound
    it (run `refereed deploy` again)."""


class RecomputeOracleBondTooSmall(RecomputeOracleError):
    """`register` was sent less than the bond still required (`required`); send at least that."""


class RecomputeOracleNotRegistered(RecomputeOracleError):
    """The account holds no oracle bond; `register` first."""


class RecomputeOracleExitAlreadyRequested(RecomputeOracleError):
    """The oracle already asked to exit; call `exit` once `availableAt` has passed."""


class RecomputeOracleExitNotRequested(RecomputeOracleError):
    """Call `requestExit` before `exit`."""


class RecomputeOracleExitTooEarly(RecomputeOracleError):
    """The exit delay has not passed: `exit` works from `availableAt` on."""


class RecomputeOracleOpenDuties(RecomputeOracleError):
    """The oracle is still on duty for open questions (as answering oracle or committee member); wait until
    they are settled or abandoned."""


class RecomputeOracleWrongStatus(RecomputeOracleError):
    """The question's status does not allow this call (another party may have made it first); read
    `question(id).status` (1 Drawing, 2 Assigned, 3 Answered, 4 CommitteeDrawing, 5 Voting, 6 Final,
    7 Abandoned; 0: no such question)."""


class RecomputeOracleRandomnessPending(RecomputeOracleError):
    """The randomness of the question's draw is not readable yet: wait for a later block (`drawReady`)."""


class RecomputeOracleNotAssignedOracle(RecomputeOracleError):
    """Only the assigned oracle (`oracle`) may answer this question; send from its key."""


class RecomputeOracleDeadlinePassed(RecomputeOracleError):
    """The question's deadline has passed; the call comes too late (`reassign` or `settle` it instead)."""


class RecomputeOracleDeadlineNotPassed(RecomputeOracleError):
    """The question's deadline has not passed yet; call again after `deadline` (or, for a committee, once every
    member revealed)."""


class RecomputeOracleWrongChallengeBond(RecomputeOracleError):
    """A challenge takes exactly `challengeBond()` wei (`required`)."""


class RecomputeOracleSelfChallenge(RecomputeOracleError):
    """The answering oracle cannot challenge its own answer."""


class RecomputeOracleNotCommitteeMember(RecomputeOracleError):
    """The caller is not seated on the question's current committee; only its members vote."""


class RecomputeOracleAlreadyCommitted(RecomputeOracleError):
    """This member already committed to a vote in this round; reveal it once the commit phase is over."""


class RecomputeOracleNotCommitted(RecomputeOracleError):
    """This member did not commit to a vote in this round, so it has nothing to reveal."""


class RecomputeOracleAlreadyRevealed(RecomputeOracleError):
    """This member already revealed its vote in this round."""


class RecomputeOracleRevealTooEarly(RecomputeOracleError):
    """Votes are revealed only after the commit phase (`commitDeadline`), or once every member committed."""


class RecomputeOracleRevealMismatch(RecomputeOracleError):
    """The revealed outputs hash and salt do not hash to the member's commitment; reveal exactly what was
    committed (`keccak256(abi.encode(questionId, member, outputsHash, salt))`)."""


class RecomputeOracleFeeAlreadyPaid(RecomputeOracleError):
    """The question's fee was already paid."""


class RecomputeOracleWrongFee(RecomputeOracleError):
    """`payFee` takes exactly `fee()` wei (`required`)."""


class RecomputeOracleNothingToWithdraw(RecomputeOracleError):
    """The account has no credit at the oracle contract to withdraw."""


class RecomputeOracleTransferFailed(RecomputeOracleError):
    """Sending the credit to the account failed (a contract that refuses ether?); the credit is kept."""


RECOMPUTE_ORACLE_ERRORS: Final = error_table(RecomputeOracleError)


class BlockhashRandomnessError(TypedRevert):
    """Root of BlockhashRandomness's custom errors (the oracle's randomness source)."""


class BlockhashRandomnessNotReady(BlockhashRandomnessError):
    """The randomness request is unknown or not readable in this block (`status`: 1 pending, 3 expired)."""


class BlockhashRandomnessBadDelay(BlockhashRandomnessError):
    """The randomness delay must be 1 to 64 blocks."""


RANDOMNESS_ERRORS: Final = error_table(BlockhashRandomnessError)

# Races: another party made the call first, or the chain moved on since the caller read it. An agent that
# loses one reads the question again; it is not an error.
RACES: Final = (
    RecomputeOracleWrongStatus,
    RecomputeOracleRandomnessPending,
    RecomputeOracleDeadlinePassed,
    RecomputeOracleDeadlineNotPassed,
    RecomputeOracleAlreadyCommitted,
    RecomputeOracleAlreadyRevealed,
    RecomputeOracleRevealTooEarly,
    RecomputeOracleNothingToWithdraw,
)


# -- the client --------------------------------------------------------------------------------


class RecomputeOracleClient(ContractClient):
    """Calls a deployed RecomputeOracle through a `ChainClient`."""

    CONTRACT_NAME = CONTRACT_NAME
    CALLEES = ("BlockhashRandomness",)
    ERRORS = (RECOMPUTE_ORACLE_ERRORS, RANDOMNESS_ERRORS, LIBRARY_ERRORS)

    _params: OracleParams | None = None

    # -- oracles ---------------------------------------------------------------------------

    def register(self, bond: int | None = None) -> Receipt:
        """Bonds `bond` wei (default: `minBond()`): one stake unit per whole `minBond()`."""
        value = self.min_bond() if bond is None else bond
        return self._send(self.contract.functions.register(), value=value)

    def request_exit(self) -> int:
        """Leaves the draws requested from now on; returns when the bond can be taken out."""
        receipt = self._send(self.contract.functions.requestExit())
        return int(self._event(receipt, "OracleExitRequested")["availableAt"])

    def exit(self) -> Wei:
        """Credits the remaining bond; returns it."""
        receipt = self._send(self.contract.functions.exit())
        return Wei(int(self._event(receipt, "OracleExited")["bond"]))

    def bind_game(self, game: str) -> Receipt:
        """The deployer binds the dispute game that alone may ask (once)."""
        return self._send(self.contract.functions.bindGame(address(game)))

    # -- questions -------------------------------------------------------------------------

    def ask(self, program_hash: bytes, node: int, inputs: Sequence[bytes], parties: tuple[str, str]) -> QuestionId:
        """Asks a question (only the bound game may); its id. The answering oracle is drawn later (`draw`)."""
        fn = self.contract.functions.ask(
            word(program_hash, "program hash"), node, words(inputs, "inputs"), [address(p) for p in parties]
        )
        receipt = self._send(fn)
        return QuestionId(int(self._event(receipt, "QuestionAsked")["questionId"]))

    def draw(self, question_id: int) -> Draw:
        """Draws the answering oracle or the committee, once `draw_ready`; what the draw did."""
        receipt = self._send(self.contract.functions.draw(question_id))
        qid = QuestionId(question_id)
        assigned = self._events(receipt, "QuestionAssigned")
        seated = self._events(receipt, "CommitteeSeated")
        return Draw(
            qid,
            assignment=_assignment(assigned[0]) if assigned else None,
            seating=_seating(seated[0]) if seated else None,
            abandoned=bool(self._events(receipt, "QuestionAbandoned")),
            block=receipt.block_number,
        )

    def answer(self, question_id: int, outputs: Sequence[bytes]) -> Receipt:
        return self._send(self.contract.functions.answer(question_id, words(outputs, "outputs")))

    def reassign(self, question_id: int) -> Receipt:
        """Slashes the silent oracle and requests another draw (or abandons after `maxAttempts()`)."""
        return self._send(self.contract.functions.reassign(question_id))

    def challenge(self, question_id: int, bond: int | None = None) -> Receipt:
        """Challenges the answer with `bond` (default `challengeBond()`); a committee is drawn later (`draw`)."""
        value = self.challenge_bond() if bond is None else bond
        return self._send(self.contract.functions.challenge(question_id), value=value)

    def commit_vote(self, question_id: int, commitment: bytes) -> Receipt:
        """A seated member commits to its vote (`vote_commitment`) before the commit deadline."""
        return self._send(self.contract.functions.commitVote(question_id, word(commitment, "commitment")))

    def reveal_vote(self, question_id: int, votes_hash: bytes, salt: bytes) -> Receipt:
        """A member that committed reveals its vote's outputs hash and salt."""
        fn = self.contract.functions.revealVote(question_id, word(votes_hash, "outputs hash"), word(salt, "salt"))
        return self._send(fn)

    def settle(self, question_id: int) -> QuestionStatus:
        """Finalizes the answer or counts the committee's votes; the status after it."""
        self._send(self.contract.functions.settle(question_id))
        return self.result(question_id)[0]

    def pay_fee(self, question_id: int, fee: int | None = None) -> Receipt:
        value = self.fee() if fee is None else fee
        return self._send(self.contract.functions.payFee(question_id), value=value)

    def withdraw(self) -> Withdrawal:
        """Sends the caller its whole credit."""
        receipt = self._send(self.contract.functions.withdraw())
        return Withdrawal(Wei(int(self._event(receipt, "Withdrawn")["amount"])), receipt)

    # -- views -----------------------------------------------------------------------------

    def result(self, question_id: int) -> tuple[QuestionStatus, bytes]:
        status, final_hash = self._call(self.contract.functions.result(question_id))
        return QuestionStatus(status), bytes(final_hash)

    def question(self, question_id: int) -> Question:
        return Question.from_abi(self._call(self.contract.functions.question(question_id)))

    def committee_of(self, question_id: int) -> tuple[ChecksumAddress, ...]:
        """Every member seated on the question, round after round (`committee_size` per round)."""
        return tuple(address(a) for a in self._call(self.contract.functions.committeeOf(question_id)))

    def current_committee(self, question_id: int, round_: int) -> tuple[ChecksumAddress, ...]:
        """The members seated in committee round `round_` (1, 2, ...)."""
        size = self.params().committee_size
        return self.committee_of(question_id)[(round_ - 1) * size : round_ * size]

    def draw_ready(self, question_id: int) -> bool:
        """Whether the pending randomness of a drawing question is readable now (a `draw` would not revert
        `RecomputeOracleRandomnessPending`)."""
        return bool(self._call(self.contract.functions.drawReady(question_id)))

    def is_active(self, oracle: str) -> bool:
        return bool(self._call(self.contract.functions.isActive(address(oracle))))

    def slot_count(self) -> int:
        """Stake units ever created (the draws' sample space)."""
        return int(self._call(self.contract.functions.slotCount()))

    def slot_owner(self, slot: int) -> ChecksumAddress:
        return address(self._call(self.contract.functions.slotOwner(slot)))

    def units_of(self, oracle: str) -> int:
        return int(self._call(self.contract.functions.unitsOf(address(oracle))))

    def bond_of(self, oracle: str) -> Wei:
        return Wei(int(self._call(self.contract.functions.bondOf(address(oracle)))))

    def credit_of(self, account: str) -> Wei:
        return Wei(int(self._call(self.contract.functions.creditOf(address(account)))))

    def total_bonds(self) -> Wei:
        return Wei(int(self._call(self.contract.functions.totalBonds())))

    def total_challenge_bonds(self) -> Wei:
        return Wei(int(self._call(self.contract.functions.totalChallengeBonds())))

    def total_credits(self) -> Wei:
        return Wei(int(self._call(self.contract.functions.totalCredits())))

    def total_burnt(self) -> Wei:
        return Wei(int(self._call(self.contract.functions.totalBurnt())))

    def game(self) -> ChecksumAddress:
        """The bound dispute game (the zero address until `bindGame`)."""
        return address(self._call(self.contract.functions.game()))

    def randomness(self) -> ChecksumAddress:
        return address(self._call(self.contract.functions.randomness()))

    def fee(self) -> Wei:
        return Wei(int(self._call(self.contract.functions.fee())))

    def min_bond(self) -> Wei:
        return Wei(int(self._call(self.contract.functions.minBond())))

    def challenge_bond(self) -> Wei:
        return Wei(int(self._call(self.contract.functions.challengeBond())))

    def max_attempts(self) -> int:
        return int(self._call(self.contract.functions.maxAttempts()))

    def unavailable_hash(self) -> bytes:
        """`sha256(ORACLE_UNAVAILABLE)`, as the contract computed it."""
        return bytes(self._call(self.contract.functions.unavailableHash()))

    def max_resolution_time(self) -> int:
        return int(self._call(self.contract.functions.maxResolutionTime()))

    def params(self) -> OracleParams:
        """Every constructor parameter, read back (once: they are immutable)."""
        if self._params is None:
            self._params = OracleParams.from_abi(self._call(self.contract.functions.params()))
        return self._params

    # -- events ----------------------------------------------------------------------------

    def asked(self, *, from_block: int = 0) -> list[QuestionId]:
        """Every question asked from `from_block` on, oldest first."""
        return [QuestionId(int(e["questionId"])) for e in self._logs("QuestionAsked", from_block=from_block)]

    def assignments(self, question_id: int, *, from_block: int = 0) -> list[Assignment]:
        """Every `QuestionAssigned` of the question, oldest first."""
        return [
            _assignment(a) for a in self._logs("QuestionAssigned", {"questionId": question_id}, from_block=from_block)
        ]

    def answers(self, question_id: int, *, from_block: int = 0) -> list[tuple[ChecksumAddress, tuple[bytes, ...]]]:
        """(oracle, outputs) of every `QuestionAnswered` of the question."""
        return [
            (address(a["oracle"]), tuple(bytes(o) for o in a["outputs"]))
            for a in self._logs("QuestionAnswered", {"questionId": question_id}, from_block=from_block)
        ]

    def seatings(self, question_id: int, *, from_block: int = 0) -> list[Seating]:
        """Every committee seated on the question (`CommitteeSeated`), round after round."""
        return [_seating(e) for e in self._logs("CommitteeSeated", {"questionId": question_id}, from_block=from_block)]

    def commitments(self, question_id: int, *, from_block: int = 0) -> dict[ChecksumAddress, bytes]:
        """member -> commitment of every `VoteCommitted` of the question from `from_block` on."""
        logs = self._logs("VoteCommitted", {"questionId": question_id}, from_block=from_block)
        return {address(e["member"]): bytes(e["commitment"]) for e in logs}

    def reveals(self, question_id: int, *, from_block: int = 0) -> dict[ChecksumAddress, bytes]:
        """member -> outputs hash of every `VoteRevealed` of the question from `from_block` on."""
        logs = self._logs("VoteRevealed", {"questionId": question_id}, from_block=from_block)
        return {address(e["member"]): bytes(e["outputsHash"]) for e in logs}


def _assignment(args: Any) -> Assignment:
    return Assignment(QuestionId(int(args["questionId"])), address(args["oracle"]), int(args["deadline"]))


def _seating(args: Any) -> Seating:
    return Seating(
        QuestionId(int(args["questionId"])),
        int(args["round"]),
        tuple(address(a) for a in args["committee"]),
        int(args["commitDeadline"]),
        int(args["revealDeadline"]),
        int(args.get("_block", 0)),
    )
