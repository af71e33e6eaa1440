"""Errors of TraceReferee (contracts/src/interfaces/ITraceReferee.sol, docs/game.md 2.9).

Every custom error of the contract (contracts/src/lib/TraceRefereeErrors.sol) is a subclass of
`TraceRefereeError` named after it, its docstring the sentence a person reads. The programs the game
referees are trainer/repops/programs.py (`run` gives the trace an honest defender posts, 8 bytes per
step, big endian). No client yet: ElementReferee does not hand these operators over.
"""

from __future__ import annotations

import enum
from typing import Final

from offchain.contracts._base import LIBRARY_ERRORS, ErrorTable, TypedRevert, error_table

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
