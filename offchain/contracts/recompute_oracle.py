"""Typed client of RecomputeOracle (contracts/src/interfaces/IRecomputeOracle.sol).

Bonded oracles answer a dispute's last question: the output commitments of one program node
on agreed inputs. Every custom error of the contract (contracts/src/lib/OracleErrors.sol)
surfaces as a subclass of `RecomputeOracleError` named after it.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from eth_typing import ChecksumAddress

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


class QuestionStatus(enum.IntEnum):
    NONE = 0
    ASSIGNED = 1
    ANSWERED = 2
    CHALLENGED = 3
    FINAL = 4
    ABANDONED = 5


@dataclass(frozen=True, slots=True)
class OracleParams:
    """The constructor's parameters, in its order (`constructor_args`)."""

    fee: Wei
    min_bond: Wei
    challenge_bond: Wei
    silence_slash: Wei
    answer_window: int  # seconds
    challenge_window: int
    vote_window: int
    exit_delay: int
    committee_size: int
    max_attempts: int

    def constructor_args(self) -> tuple[int, ...]:
        return (
            self.fee,
            self.min_bond,
            self.challenge_bond,
            self.silence_slash,
            self.answer_window,
            self.challenge_window,
            self.vote_window,
            self.exit_delay,
            self.committee_size,
            self.max_attempts,
        )

    @property
    def max_resolution_time(self) -> int:
        return self.max_attempts * self.answer_window + self.challenge_window + self.vote_window


@dataclass(frozen=True, slots=True)
class Question:
    program_hash: bytes
    node: int
    inputs_hash: bytes
    asker: ChecksumAddress
    parties: tuple[ChecksumAddress, ChecksumAddress]
    status: QuestionStatus
    attempts: int
    oracle: ChecksumAddress
    deadline: int
    outputs_hash: bytes
    challenger: ChecksumAddress
    fee_paid: bool

    @classmethod
    def from_abi(cls, v: Sequence[Any]) -> Question:
        return cls(
            bytes(v[0]),
            int(v[1]),
            bytes(v[2]),
            address(v[3]),
            (address(v[4][0]), address(v[4][1])),
            QuestionStatus(v[5]),
            int(v[6]),
            address(v[7]),
            int(v[8]),
            bytes(v[9]),
            address(v[10]),
            bool(v[11]),
        )


@dataclass(frozen=True, slots=True)
class Assignment:
    """`QuestionAssigned`: `oracle` must answer before `deadline`."""

    question_id: QuestionId
    oracle: ChecksumAddress
    deadline: int


# -- errors ------------------------------------------------------------------------------------


class RecomputeOracleError(TypedRevert):
    """Root of RecomputeOracle's custom errors."""


class RecomputeOracleInvalidCommitteeSize(RecomputeOracleError):
    """The committee size must be odd and non-zero, so that a majority exists."""


class RecomputeOracleZeroMinBond(RecomputeOracleError):
    """The oracles' minimum bond must be non-zero."""


class RecomputeOracleSilenceSlashTooLarge(RecomputeOracleError):
    """The silence slash must not exceed the minimum bond an oracle holds."""


class RecomputeOracleZeroWindow(RecomputeOracleError):
    """The answer, challenge and vote windows must all be non-zero seconds."""


class RecomputeOracleZeroMaxAttempts(RecomputeOracleError):
    """`maxAttempts` must be at least 1: at least one oracle is drawn per question."""


class RecomputeOracleResolutionTimeTooLong(RecomputeOracleError):
    """`maxAttempts * answerWindow + challengeWindow + voteWindow` exceeds the allowed maximum; shorten the
    windows."""


class RecomputeOracleExitDelayTooLong(RecomputeOracleError):
    """The exit delay exceeds the allowed maximum; choose a shorter one."""


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
    """The oracle is still on duty for open questions (as oracle or committee member); wait until they are
    settled or abandoned."""


class RecomputeOracleWrongStatus(RecomputeOracleError):
    """The question's status does not allow this call; read `question(id).status` (1 Assigned, 2 Answered,
    3 Challenged, 4 Final, 5 Abandoned; 0: no such question)."""


class RecomputeOracleNotAssignedOracle(RecomputeOracleError):
    """Only the assigned oracle (`oracle`) may answer this question; send from its key."""


class RecomputeOracleDeadlinePassed(RecomputeOracleError):
    """The question's deadline has passed; the call comes too late (`reassign` or `settle` it instead)."""


class RecomputeOracleDeadlineNotPassed(RecomputeOracleError):
    """The question's deadline has not passed yet; call again after `deadline` (or once every committee
    member voted)."""


class RecomputeOracleWrongChallengeBond(RecomputeOracleError):
    """A challenge takes exactly `challengeBond()` wei (`required`)."""


class RecomputeOracleSelfChallenge(RecomputeOracleError):
    """The answering oracle cannot challenge its own answer."""


class RecomputeOracleCommitteeUnavailable(RecomputeOracleError):
    """Too few eligible oracles are active to seat a committee; the answer stands unchallenged."""


class RecomputeOracleNotCommitteeMember(RecomputeOracleError):
    """The caller is not on this question's committee; only members vote."""


class RecomputeOracleAlreadyVoted(RecomputeOracleError):
    """This committee member already voted on the question."""


class RecomputeOracleFeeAlreadyPaid(RecomputeOracleError):
    """The question's fee was already paid."""


class RecomputeOracleWrongFee(RecomputeOracleError):
    """`payFee` takes exactly `fee()` wei (`required`)."""


class RecomputeOracleNothingToWithdraw(RecomputeOracleError):
    """The account has no credit at the oracle contract to withdraw."""


class RecomputeOracleTransferFailed(RecomputeOracleError):
    """Sending the credit to the account failed (a contract that refuses ether?); the credit is kept."""


RECOMPUTE_ORACLE_ERRORS: Final = error_table(RecomputeOracleError)


# -- the client --------------------------------------------------------------------------------


class RecomputeOracleClient(ContractClient):
    """Calls a deployed RecomputeOracle through a `ChainClient`."""

    CONTRACT_NAME = CONTRACT_NAME
    ERRORS = (RECOMPUTE_ORACLE_ERRORS, LIBRARY_ERRORS)

    # -- oracles ---------------------------------------------------------------------------

    def register(self, bond: int | None = None) -> Receipt:
        """Bonds `bond` wei (default: `minBond()`) and joins the active set."""
        value = self.min_bond() if bond is None else bond
        return self._send(self.contract.functions.register(), value=value)

    def request_exit(self) -> int:
        """Leaves the active set; returns when the bond can be taken out."""
        receipt = self._send(self.contract.functions.requestExit())
        return int(self._event(receipt, "OracleExitRequested")["availableAt"])

    def exit(self) -> Wei:
        """Credits the remaining bond; returns it."""
        receipt = self._send(self.contract.functions.exit())
        return Wei(int(self._event(receipt, "OracleExited")["bond"]))

    # -- questions -------------------------------------------------------------------------

    def ask(
        self, program_hash: bytes, node: int, inputs: Sequence[bytes], parties: tuple[str, str]
    ) -> tuple[QuestionId, Assignment | None]:
        """Asks a question; its id and its assignment (None if it was abandoned at once)."""
        fn = self.contract.functions.ask(
            word(program_hash, "program hash"), node, words(inputs, "inputs"), [address(p) for p in parties]
        )
        receipt = self._send(fn)
        qid = QuestionId(int(self._event(receipt, "QuestionAsked")["questionId"]))
        assigned = self._events(receipt, "QuestionAssigned")
        return qid, (_assignment(assigned[0]) if assigned else None)

    def answer(self, question_id: int, outputs: Sequence[bytes]) -> Receipt:
        return self._send(self.contract.functions.answer(question_id, words(outputs, "outputs")))

    def reassign(self, question_id: int) -> Assignment | None:
        """Slashes the silent oracle and re-assigns; the new assignment, or None if abandoned."""
        receipt = self._send(self.contract.functions.reassign(question_id))
        assigned = self._events(receipt, "QuestionAssigned")
        return _assignment(assigned[0]) if assigned else None

    def challenge(self, question_id: int, bond: int | None = None) -> tuple[ChecksumAddress, ...]:
        """Challenges the answer with `bond` (default `challengeBond()`); returns the committee."""
        value = self.challenge_bond() if bond is None else bond
        receipt = self._send(self.contract.functions.challenge(question_id), value=value)
        return tuple(address(a) for a in self._event(receipt, "AnswerChallenged")["committee"])

    def vote(self, question_id: int, outputs: Sequence[bytes]) -> Receipt:
        return self._send(self.contract.functions.vote(question_id, words(outputs, "outputs")))

    def settle(self, question_id: int) -> QuestionStatus:
        """Finalizes the answer or counts the votes; the status after it."""
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
        status, outputs_hash = self._call(self.contract.functions.result(question_id))
        return QuestionStatus(status), bytes(outputs_hash)

    def question(self, question_id: int) -> Question:
        return Question.from_abi(self._call(self.contract.functions.question(question_id)))

    def committee_of(self, question_id: int) -> tuple[ChecksumAddress, ...]:
        return tuple(address(a) for a in self._call(self.contract.functions.committeeOf(question_id)))

    def is_active(self, oracle: str) -> bool:
        return bool(self._call(self.contract.functions.isActive(address(oracle))))

    def active_count(self) -> int:
        return int(self._call(self.contract.functions.activeCount()))

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

    def fee(self) -> Wei:
        return Wei(int(self._call(self.contract.functions.fee())))

    def min_bond(self) -> Wei:
        return Wei(int(self._call(self.contract.functions.minBond())))

    def challenge_bond(self) -> Wei:
        return Wei(int(self._call(self.contract.functions.challengeBond())))

    def max_resolution_time(self) -> int:
        return int(self._call(self.contract.functions.maxResolutionTime()))

    def params(self) -> OracleParams:
        """Every constructor parameter, read back."""
        f = self.contract.functions
        return OracleParams(
            fee=self.fee(),
            min_bond=self.min_bond(),
            challenge_bond=self.challenge_bond(),
            silence_slash=Wei(int(self._call(f.silenceSlash()))),
            answer_window=int(self._call(f.answerWindow())),
            challenge_window=int(self._call(f.challengeWindow())),
            vote_window=int(self._call(f.voteWindow())),
            exit_delay=int(self._call(f.exitDelay())),
            committee_size=int(self._call(f.committeeSize())),
            max_attempts=int(self._call(f.maxAttempts())),
        )

    # -- events ----------------------------------------------------------------------------

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


def _assignment(args: Any) -> Assignment:
    return Assignment(QuestionId(int(args["questionId"])), address(args["oracle"]), int(args["deadline"]))
