"""Typed client and errors of SumReferee (contracts/src/interfaces/ISumReferee.sol, docs/game.md 2.10).

Every custom error of the contract (contracts/src/lib/SumRefereeErrors.sol) is a subclass of `SumRefereeError`
named after it, its docstring the sentence a person reads; the tensor and Merkle libraries' errors keep their
classes (`LIBRARY_ERRORS`). `SumRefereeClient` sends the moves `offchain.game.sum.SumSide` computes and reads back
the defender's last prefix sums (`defender_splits`) for the challenger to pass back. ElementReferee isolates an
element of a `sum.dim_IntList` node, the defender hands it over with `DotReferee.startSum`, and the trainer agents
play the game here (`offchain.agents._element`).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from eth_typing import ChecksumAddress

from offchain.chain.client import Receipt
from offchain.chain.errors import ChainError
from offchain.contracts._base import (
    LIBRARY_ERRORS,
    ContractClient,
    ErrorTable,
    GameId,
    TypedRevert,
    address,
    error_table,
)
from offchain.game.dot import Opening
from offchain.game.sum import SumClaim

CONTRACT_NAME: Final = "SumReferee"


class Stage(enum.IntEnum):
    NONE = 0
    CLAIM = 1  # defender: claim
    PICK = 2  # challenger: pick (or refute)
    SPLIT = 3  # defender: split
    TERM = 4  # defender: proveTerm
    REFUTE = 5  # challenger: refute an infinite claim (nothing else: a true claim wins on time)
    RESOLVED = 6


# -- errors ------------------------------------------------------------------------------------


class SumRefereeError(TypedRevert):
    """Root of SumReferee's custom errors."""


class SumRefereeUnknown(SumRefereeError):
    """No sum game has this id; use the id `open` returned (its GameOpened event), or `DotReferee.summedBy(element
    game)` for the game that decides an element game."""


class SumRefereeBadParams(SumRefereeError):
    """A parameter of `open` is out of range (`field`: 1 the dims variant, 3 players equal or zero, 4 equal values,
    5 a zero clock or one of 2^40 seconds or more, 6 arity not a power of two in [2, 64]); fix it."""


class SumRefereeWrongStage(SumRefereeError):
    """The sum game is in another stage than this move needs; read `gameOf(id).stage` and make that stage's move
    (the defender claims, splits and opens the last term; the challenger picks or refutes)."""


class SumRefereeNotPlaying(SumRefereeError):
    """The sum game is resolved, so nobody can be timed out."""


class SumRefereeNotYourTurn(SumRefereeError):
    """It is not the caller's turn: send from the key of the player to move (`expected`)."""


class SumRefereeClockExpired(SumRefereeError):
    """The mover's clock ran out at `deadline`: the move is too late, and the game can only end by `timeout`."""


class SumRefereeClockRunning(SumRefereeError):
    """The player to move still has time until `deadline`; call `timeout` after it."""


class SumRefereeWidth(SumRefereeError):
    """A list or index in the move has `got`, not what the game needs (`expected`; an index must be below it):
    post one prefix sum per split point (`splitPoints(lo, hi, arity)`), pick a sub-range 0 .. splits, open a
    term below L."""


class SumRefereeShape(SumRefereeError):
    """The output shape is not the input's summed over the node's dims (`dim` 2^256 - 1: the number of dimensions;
    2^256 - 2: a reduced dim the input does not have): open the agreed input's header and the output's shape."""


class SumRefereeHeader(SumRefereeError):
    """An opened header (`tensor` 0 the output's dtype and shape, 1 the input's) hashes to `computed`, not to the
    agreed `expected`, or the input is not fp32: open the headers the element game agreed."""


class SumRefereeInconsistent(SumRefereeError):
    """The claim (witness class, S) makes the element `computed`, not the defender's own value `value`: claim the
    witness and S your output element follows from."""


class SumRefereeOpponentMismatch(SumRefereeError):
    """The defender's prefix sums, passed back, hash to `computed`, not to what it posted (`expected`); pass them
    back exactly as its Claimed or SplitPosted event shows them."""


class SumRefereeNotGreater(SumRefereeError):
    """The refuting element `bits` does not disprove the claim (its class does not exceed the claimed one; against
    an infinity it is neither a NaN nor the opposite infinity): pick a sub-range instead."""


class SumRefereeWitness(SumRefereeError):
    """The claim's second witness `bits` is not the infinity opposite to its first (`first`): open the slice's
    opposite infinity, or claim the first infinity alone."""


class SumRefereeNotOwner(SumRefereeError):
    """Only the game's opener (`owner`; the DotReferee for a hand-over) may read its outcome with `ownedOutcome`."""


SUM_REFEREE_ERRORS: Final = error_table(SumRefereeError)
ERRORS: Final[tuple[ErrorTable, ...]] = (SUM_REFEREE_ERRORS, LIBRARY_ERRORS)


# -- the client --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SumParams:
    """What a standalone `open` agrees (ISumReferee.Params)."""

    variant: int
    input: bytes
    header: bytes
    element: int
    values: tuple[int, int]
    players: tuple[str, str]
    clocks: tuple[int, int]
    arity: int

    def to_abi(self) -> tuple[Any, ...]:
        return (
            self.variant,
            bytes(self.input),
            bytes(self.header),
            self.element,
            list(self.values),
            [address(p) for p in self.players],
            list(self.clocks),
            self.arity,
        )


@dataclass(frozen=True, slots=True)
class SumView:
    owner: ChecksumAddress
    players: tuple[ChecksumAddress, ChecksumAddress]
    stage: Stage
    outcome: int  # IElementReferee.Outcome
    to_move: int  # 0 defender, 1 challenger
    variant: int
    clock_left: tuple[int, int]
    turn_started_at: int
    input: bytes
    element: int
    values: tuple[int, int]
    key: int  # the claimed magnitude class (after the claim)
    witness: int  # the claimed witness's bits
    length: int  # L (after the claim)
    reduced: int
    lo: int
    hi: int
    p_lo: int
    p_hi: int
    moves: int

    @property
    def deadline(self) -> int:
        return self.turn_started_at + self.clock_left[self.to_move]

    @classmethod
    def from_abi(cls, v: Sequence[Any]) -> SumView:
        return cls(
            address(v[0]),
            (address(v[1][0]), address(v[1][1])),
            Stage(v[2]),
            int(v[3]),
            int(v[4]),
            int(v[5]),
            (int(v[6][0]), int(v[6][1])),
            int(v[7]),
            bytes(v[8]),
            int(v[9]),
            (int(v[10][0]), int(v[10][1])),
            int(v[11]),
            int(v[12]),
            int(v[13]),
            int(v[14]),
            int(v[15]),
            int(v[16]),
            int(v[17]),
            int(v[18]),
            int(v[19]),
        )


class SumRefereeClient(ContractClient):
    """Calls a deployed SumReferee through a `ChainClient` (moves are sent from its key)."""

    CONTRACT_NAME = CONTRACT_NAME
    ERRORS = ERRORS

    def open(self, params: SumParams) -> GameId:
        receipt = self._send(self.contract.functions.open(params.to_abi()))
        return GameId(int(self._event(receipt, "GameOpened")["gameId"]))

    def claim(self, game_id: int, claim: SumClaim) -> Receipt:
        return self._send(self.contract.functions.claim(game_id, claim.to_abi()))

    def pick(self, game_id: int, theirs: Sequence[int], m: int) -> Receipt:
        return self._send(self.contract.functions.pick(game_id, list(theirs), m))

    def refute(self, game_id: int, at: int, o: Opening) -> int:
        """Opens term `at`, which disproves the claim; returns the outcome (IElementReferee.Outcome)."""
        receipt = self._send(self.contract.functions.refute(game_id, at, o.to_abi()))
        return int(self._event(receipt, "GameResolved")["outcome"])

    def split(self, game_id: int, splits: Sequence[int]) -> Receipt:
        return self._send(self.contract.functions.split(game_id, list(splits)))

    def prove_term(self, game_id: int, o: Opening) -> int:
        """Opens the last term; the contract recomputes it. Returns the outcome (IElementReferee.Outcome)."""
        receipt = self._send(self.contract.functions.proveTerm(game_id, o.to_abi()))
        return int(self._event(receipt, "GameResolved")["outcome"])

    def timeout(self, game_id: int) -> int:
        receipt = self._send(self.contract.functions.timeout(game_id))
        return int(self._event(receipt, "GameResolved")["outcome"])

    def input_index(self, element: int, k: int, shape: Sequence[int], reduced: int) -> int:
        return int(self._call(self.contract.functions.inputIndex(element, k, list(shape), reduced)))

    def split_points(self, lo: int, hi: int, arity: int) -> list[int]:
        return [int(x) for x in self._call(self.contract.functions.splitPoints(lo, hi, arity))]

    def game_of(self, game_id: int) -> SumView:
        return SumView.from_abi(self._call(self.contract.functions.gameOf(game_id)))

    def outcome(self, game_id: int) -> int:
        return int(self._call(self.contract.functions.outcome(game_id)))

    def owned_outcome(self, game_id: int) -> int:
        """The outcome, for the game's owner only (`SumRefereeNotOwner` for anyone else)."""
        return int(self._call(self.contract.functions.ownedOutcome(game_id)))

    def meter_of(self, game_id: int) -> tuple[int, int]:
        gas = self._call(self.contract.functions.meterOf(game_id))
        return int(gas[0]), int(gas[1])

    def game_count(self) -> int:
        return int(self._call(self.contract.functions.gameCount()))

    def defender_splits(self, game_id: int, *, from_block: int = 0) -> list[int]:
        """The defender's prefix sums at the current range's split points (what the challenger passes back): its
        SplitPosted event for the range, or its Claimed event for the first range [0, L]."""
        v = self.game_of(game_id)
        for e in reversed(self._logs("SplitPosted", {"gameId": game_id}, from_block=from_block)):
            if (int(e["lo"]), int(e["hi"])) == (v.lo, v.hi):
                return [int(x) for x in e["splits"]]
        if (v.lo, v.hi) == (0, v.length):
            claimed = self._logs("Claimed", {"gameId": game_id}, from_block=from_block)
            if claimed:
                return [int(x) for x in claimed[-1]["splits"]]
        raise ChainError(f"sum game {game_id}: the defender has not posted prefix sums for [{v.lo}, {v.hi}] yet")
