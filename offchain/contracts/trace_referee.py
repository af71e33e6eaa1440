"""Typed client and errors of TraceReferee (contracts/src/interfaces/ITraceReferee.sol, docs/game.md 2.9).

Every custom error of the contract (contracts/src/lib/TraceRefereeErrors.sol) is a subclass of
`TraceRefereeError` named after it, its docstring the sentence a person reads. The programs the game
referees are trainer/repops/programs.py: `programs.pack(programs.run(fn, x))` is the trace an honest
defender posts (8 bytes per step, big endian), `programs.first_wrong_step` the step an honest challenger
names. `TraceRefereeClient` sends the moves and reads the defender's trace back from its Claimed event.
The trainer agents play it (offchain/agents/_element.py): an element game on a transcendental function is
handed over by its defender through `DotReferee.startTrace` and settled back with `settleTrace`.
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

CONTRACT_NAME: Final = "TraceReferee"


class Stage(enum.IntEnum):
    NONE = 0
    CLAIM = 1  # defender: claim
    REFUTE = 2  # challenger: refute
    RESOLVED = 3


class TraceRefereeError(TypedRevert):
    """Root of TraceReferee's custom errors."""


class TraceRefereeUnknown(TraceRefereeError):
    """No trace game has this id; use the id `open` returned (its GameOpened event)."""


class TraceRefereeNoFunction(TraceRefereeError):
    """`fn` is not one of the nine function ids (0 exp, 1 log, 2 log1p, 3 rsqrt, 4 tanh, 5 sigmoid, 6 erf, 7 gelu,
    8 gelu tanh form: trainer.repops.programs.FUNCTIONS)."""


class TraceRefereeBadParams(TraceRefereeError):
    """A parameter of `open` is out of range (`field`: 1 players equal or zero, 2 equal values, 3 a zero clock or
    one of 2^40 seconds or more); fix it."""


class TraceRefereeWrongStage(TraceRefereeError):
    """The trace game is in another stage than this move needs; read `gameOf(id).stage` and make that stage's
    move (the defender claims, then the challenger refutes)."""


class TraceRefereeNotPlaying(TraceRefereeError):
    """The trace game is resolved, so nobody can be timed out."""


class TraceRefereeNotYourTurn(TraceRefereeError):
    """It is not the caller's turn: send from the key of the player to move (`expected`)."""


class TraceRefereeClockExpired(TraceRefereeError):
    """The mover's clock ran out at `deadline`: the move is too late, and the game can only end by `timeout`."""


class TraceRefereeClockRunning(TraceRefereeError):
    """The player to move still has time until `deadline`; call `timeout` after it."""


class TraceRefereeLength(TraceRefereeError):
    """The trace has `got` bytes, not the `expected` 8 per step of the function's program: post every step's value
    as trainer.repops.programs.run gives it, 8 bytes each, big endian."""


class TraceRefereeInconsistent(TraceRefereeError):
    """The trace's last step (its fp32 output, zero-extended to 8 bytes) is `last`, not the defender's value
    `value`: claim the trace your value comes from."""


class TraceRefereeMismatch(TraceRefereeError):
    """The trace passed back hashes to `computed`, not to the defender's claimed `expected`; pass it back exactly
    as the Claimed event shows it."""


class TraceRefereeStep(TraceRefereeError):
    """The named step is not below the program's step count (`steps`): name a step 0 .. steps - 1, the first whose
    posted value differs from your own evaluation."""


class TraceRefereeNotOwner(TraceRefereeError):
    """Only the game's opener (`owner`) may read its outcome with `ownedOutcome`."""


class Binary64NotPositiveNormal(TraceRefereeError):
    """Binary64's log split was given `x`, not a positive normal binary64 value. TraceReferee's log steps answer +0
    and their argument for such a value instead (the programs feed the split through a guard), so this names a
    bug in the contract, not a bad move."""


TRACE_REFEREE_ERRORS: Final = error_table(TraceRefereeError)
ERRORS: Final[tuple[ErrorTable, ...]] = (TRACE_REFEREE_ERRORS, LIBRARY_ERRORS)


# -- the client --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TraceView:
    owner: ChecksumAddress
    players: tuple[ChecksumAddress, ChecksumAddress]
    stage: Stage
    outcome: int  # IElementReferee.Outcome
    to_move: int  # 0 defender, 1 challenger
    fn: int
    x: int
    values: tuple[int, int]
    clock_left: tuple[int, int]
    turn_started_at: int
    steps: int
    trace_hash: bytes
    moves: int

    @property
    def deadline(self) -> int:
        return self.turn_started_at + self.clock_left[self.to_move]

    @classmethod
    def from_abi(cls, v: Sequence[Any]) -> TraceView:
        return cls(
            address(v[0]),
            (address(v[1][0]), address(v[1][1])),
            Stage(v[2]),
            int(v[3]),
            int(v[4]),
            int(v[5]),
            int(v[6]),
            (int(v[7][0]), int(v[7][1])),
            (int(v[8][0]), int(v[8][1])),
            int(v[9]),
            int(v[10]),
            bytes(v[11]),
            int(v[12]),
        )


class TraceRefereeClient(ContractClient):
    """Calls a deployed TraceReferee through a `ChainClient` (moves are sent from its key)."""

    CONTRACT_NAME = CONTRACT_NAME
    ERRORS = ERRORS

    def open(
        self, fn: int, x: int, values: tuple[int, int], players: tuple[str, str], clocks: tuple[int, int]
    ) -> GameId:
        receipt = self._send(
            self.contract.functions.open(fn, x, list(values), [address(p) for p in players], list(clocks))
        )
        return GameId(int(self._event(receipt, "GameOpened")["gameId"]))

    def claim(self, game_id: int, trace: bytes) -> Receipt:
        return self._send(self.contract.functions.claim(game_id, bytes(trace)))

    def refute(self, game_id: int, trace: bytes, step: int) -> tuple[int, Receipt]:
        """Names `step`; returns the outcome (IElementReferee.Outcome) and the receipt."""
        receipt = self._send(self.contract.functions.refute(game_id, bytes(trace), step))
        return int(self._event(receipt, "GameResolved")["outcome"]), receipt

    def timeout(self, game_id: int) -> int:
        receipt = self._send(self.contract.functions.timeout(game_id))
        return int(self._event(receipt, "GameResolved")["outcome"])

    def evaluate(self, fn: int, x: int) -> list[int]:
        return [int(v) for v in self._call(self.contract.functions.evaluate(fn, x))]

    def game_of(self, game_id: int) -> TraceView:
        return TraceView.from_abi(self._call(self.contract.functions.gameOf(game_id)))

    def outcome(self, game_id: int) -> int:
        return int(self._call(self.contract.functions.outcome(game_id)))

    def meter_of(self, game_id: int) -> tuple[int, int]:
        gas = self._call(self.contract.functions.meterOf(game_id))
        return int(gas[0]), int(gas[1])

    def claimed_trace(self, game_id: int, *, from_block: int = 0) -> bytes:
        """The defender's trace, from its Claimed event (what the challenger passes back to `refute`)."""
        claimed = self._logs("Claimed", {"gameId": game_id}, from_block=from_block)
        if not claimed:
            raise ChainError(f"trace game {game_id}: the defender has not claimed yet")
        return bytes(claimed[-1]["trace"])
