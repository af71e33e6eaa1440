"""Typed client and errors of DotReferee (contracts/src/interfaces/IDotReferee.sol, docs/game.md 2.8).

Every custom error of the contract (contracts/src/lib/DotRefereeErrors.sol) is a subclass of
`DotRefereeError` named after it; the tensor and Merkle libraries' errors keep their classes
(`LIBRARY_ERRORS`), and ElementReferee's bubble up through `start`. `DotRefereeClient` sends the moves
`offchain.game.dot.DotSide` computes and reads back the defender's last prefix sums (`defender_splits`)
for the challenger to pass back. ElementReferee hands an mm or addmm game to it once the element is
isolated; the trainer agents play it (`offchain.agents._element`). It hands a transcendental function's element
to a TraceReferee game (`start_trace`) and a sum's to a SumReferee game (`start_sum`), and settles them back.
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
from offchain.contracts.element_referee import ELEMENT_REFEREE_ERRORS
from offchain.contracts.sum_referee import SUM_REFEREE_ERRORS, SumRefereeClient
from offchain.contracts.trace_referee import TRACE_REFEREE_ERRORS, TraceRefereeClient
from offchain.game.dot import Claim, Opening
from offchain.game.element import InputOpening, TensorHeader

CONTRACT_NAME: Final = "DotReferee"


class Stage(enum.IntEnum):
    NONE = 0
    CLAIM = 1  # defender: claim (or start, for a takeover)
    PICK = 2  # challenger: pick or refute
    SPLIT = 3  # defender: split
    TERM = 4  # defender: proveTerm
    RESOLVED = 5


# -- errors ------------------------------------------------------------------------------------


class DotRefereeError(TypedRevert):
    """Root of DotReferee's custom errors."""


class DotRefereeUnknown(DotRefereeError):
    """No dot game has this id; use the id `open` or `start` returned (its GameOpened event), or
    `takenOver(elementGame)` for the game that took over an element game."""


class DotRefereeBadParams(DotRefereeError):
    """A parameter of `open` is out of range (`field`: 1 op code, 2 input count, 3 players, 4 equal values, 5 a
    zero or too large clock, 6 arity not a power of two in [2, 64], 7 N = 0); fix it."""


class DotRefereeWrongStage(DotRefereeError):
    """The dot game is in another stage than this move needs; read `gameOf(id).stage` and make that stage's move."""


class DotRefereeNotPlaying(DotRefereeError):
    """The dot game is resolved, so nobody can be timed out."""


class DotRefereeNotYourTurn(DotRefereeError):
    """It is not the caller's turn (or, for `start`, the caller is not the element game's defender): send from
    the key of the player to move (`expected`)."""


class DotRefereeClockExpired(DotRefereeError):
    """The mover's clock ran out at `deadline`: the move is too late, and the game can only end by `timeout`."""


class DotRefereeClockRunning(DotRefereeError):
    """The player to move still has time until `deadline`; call `timeout` after it."""


class DotRefereeWidth(DotRefereeError):
    """A list or index in the move has `got`, not what the game needs (`expected`; an index must be below it):
    post one prefix sum per split point (`splitPoints(lo, hi, arity)`), pick a sub-range 0 .. splits, open a
    witness at a position below K."""


class DotRefereeShape(DotRefereeError):
    """Opened tensor `tensor` (0 the bias, 1 A, 2 B, 3 the output) has `got` at dimension `dim` (2^256 - 1: the
    number of dimensions), not the `expected` an mm of K and N makes (A [M, K], B [K, N], output [M, N], a
    bias broadcast to [M, N])."""


class DotRefereeInconsistent(DotRefereeError):
    """The claim (witness exponents, S, bias) makes the element `computed`, not the defender's own value `value`:
    claim the S and witnesses your output element follows from."""


class DotRefereeOpponentMismatch(DotRefereeError):
    """The defender's prefix sums, passed back, hash to `computed`, not to what it posted (`expected`); pass
    them back exactly as its Claimed or SplitPosted event shows them."""


class DotRefereeNotGreater(DotRefereeError):
    """The refuting element's magnitude class `key` does not exceed the claimed `claimed`: it does not disprove
    the defender's exponent; pick a sub-range instead."""


class DotRefereeNotOwner(DotRefereeError):
    """Only the game's opener (`owner`; the ElementReferee for a takeover) may read its outcome with
    `ownedOutcome`."""


class DotRefereeHeader(DotRefereeError):
    """An opened header (`tensor` 0 the output's dtype and shape, 1 A, 2 B) hashes to `computed`, not to the
    element game's `expected`: open the headers of the tensors that game agreed."""


class DotRefereeTracePending(DotRefereeError):
    """The trace game `traceGame` has no outcome yet, so its element game cannot be settled: let the side to move
    there move, or time it out once its clock ran out."""


DOT_REFEREE_ERRORS: Final = error_table(DotRefereeError)
ERRORS: Final[tuple[ErrorTable, ...]] = (
    DOT_REFEREE_ERRORS,
    ELEMENT_REFEREE_ERRORS,
    TRACE_REFEREE_ERRORS,
    SUM_REFEREE_ERRORS,
    LIBRARY_ERRORS,
)


# -- the client --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DotParams:
    """What a standalone `open` agrees (IDotReferee.Params)."""

    op: int  # 0 mm, 1 addmm
    inputs: tuple[bytes, ...]
    k: int
    n: int
    element: int
    values: tuple[int, int]
    players: tuple[str, str]
    clocks: tuple[int, int]
    arity: int

    def to_abi(self) -> tuple[Any, ...]:
        return (
            self.op,
            [bytes(x) for x in self.inputs],
            self.k,
            self.n,
            self.element,
            list(self.values),
            [address(p) for p in self.players],
            list(self.clocks),
            self.arity,
        )


@dataclass(frozen=True, slots=True)
class DotView:
    owner: ChecksumAddress
    players: tuple[ChecksumAddress, ChecksumAddress]
    element_game: int
    stage: Stage
    outcome: int  # IElementReferee.Outcome
    to_move: int  # 0 defender, 1 challenger
    op: int
    clock_left: tuple[int, int]
    turn_started_at: int
    k: int
    n: int
    element: int
    values: tuple[int, int]
    keys: tuple[int, int]
    lo: int
    hi: int
    p_lo: int
    p_hi: int
    moves: int

    @property
    def deadline(self) -> int:
        return self.turn_started_at + self.clock_left[self.to_move]

    @classmethod
    def from_abi(cls, v: Sequence[Any]) -> DotView:
        return cls(
            address(v[0]),
            (address(v[1][0]), address(v[1][1])),
            int(v[2]),
            Stage(v[3]),
            int(v[4]),
            int(v[5]),
            int(v[6]),
            (int(v[7][0]), int(v[7][1])),
            int(v[8]),
            int(v[9]),
            int(v[10]),
            int(v[11]),
            (int(v[12][0]), int(v[12][1])),
            (int(v[13][0]), int(v[13][1])),
            int(v[14]),
            int(v[15]),
            int(v[16]),
            int(v[17]),
            int(v[18]),
        )


class DotRefereeClient(ContractClient):
    """Calls a deployed DotReferee through a `ChainClient` (moves are sent from its key)."""

    CONTRACT_NAME = CONTRACT_NAME
    CALLEES = ("ElementReferee", "TraceReferee", "SumReferee")
    ERRORS = ERRORS

    def open(self, params: DotParams) -> GameId:
        receipt = self._send(self.contract.functions.open(params.to_abi()))
        return GameId(int(self._event(receipt, "GameOpened")["gameId"]))

    def start(
        self,
        element_game: int,
        output_shape: Sequence[int],
        a: TensorHeader,
        b: TensorHeader,
        claim: Claim,
    ) -> Receipt:
        """The takeover of an isolated mm/addmm element game with the defender's claim."""
        takeover = (list(output_shape), a.to_abi(), b.to_abi())
        return self._send(self.contract.functions.start(element_game, takeover, claim.to_abi()))

    def claim(self, game_id: int, claim: Claim) -> Receipt:
        return self._send(self.contract.functions.claim(game_id, claim.to_abi()))

    def pick(self, game_id: int, theirs: Sequence[int], m: int) -> Receipt:
        return self._send(self.contract.functions.pick(game_id, list(theirs), m))

    def refute(self, game_id: int, which: int, at: int, o: Opening) -> Receipt:
        return self._send(self.contract.functions.refute(game_id, which, at, o.to_abi()))

    def split(self, game_id: int, splits: Sequence[int]) -> Receipt:
        return self._send(self.contract.functions.split(game_id, list(splits)))

    def prove_term(self, game_id: int, a: Opening, b: Opening) -> int:
        receipt = self._send(self.contract.functions.proveTerm(game_id, a.to_abi(), b.to_abi()))
        return int(self._event(receipt, "GameResolved")["outcome"])

    def timeout(self, game_id: int) -> int:
        receipt = self._send(self.contract.functions.timeout(game_id))
        return int(self._event(receipt, "GameResolved")["outcome"])

    def start_trace(self, element_game: int, opening: InputOpening) -> int:
        """The defender hands an isolated element of a transcendental function's node to a trace game, opening
        the input element at the output's index; returns the trace game's id (docs/game.md 2.9)."""
        receipt = self._send(self.contract.functions.startTrace(element_game, opening.to_abi()))
        return int(self._event(receipt, "TraceStarted")["traceGame"])

    def settle_trace(self, element_game: int) -> Receipt:
        """Once the trace game is resolved: its outcome and meters back to the element game (anyone may)."""
        return self._send(self.contract.functions.settleTrace(element_game))

    def traced_by(self, element_game: int) -> int:
        """The trace game that decides ElementReferee game `element_game` (0: none yet)."""
        return int(self._call(self.contract.functions.tracedBy(element_game)))

    def trace_address(self) -> ChecksumAddress:
        return address(self._call(self.contract.functions.trace()))

    def trace(self) -> TraceRefereeClient:
        """A client of the TraceReferee this referee hands the transcendental functions to."""
        from offchain.chain.build import compile_contracts

        cached = getattr(self, "_trace", None)
        if cached is None:
            compiled = compile_contracts()
            cached = TraceRefereeClient(self.chain, self.trace_address(), compiled[TraceRefereeClient.CONTRACT_NAME])
            self._trace = cached
        return cached

    def start_sum(self, element_game: int) -> int:
        """The defender hands an isolated element of a `sum.dim_IntList` node to a sum game (the agreed input, both
        values and what is left of both clocks, read from the element game); returns the sum game's id (docs/game.md
        2.10). Its next move is `SumReferee.claim` there."""
        receipt = self._send(self.contract.functions.startSum(element_game))
        return int(self._event(receipt, "SumStarted")["sumGame"])

    def settle_sum(self, element_game: int) -> Receipt:
        """Once the sum game is resolved: its outcome and meters back to the element game (anyone may)."""
        return self._send(self.contract.functions.settleSum(element_game))

    def summed_by(self, element_game: int) -> int:
        """The sum game that decides ElementReferee game `element_game` (0: none yet)."""
        return int(self._call(self.contract.functions.summedBy(element_game)))

    def sum_address(self) -> ChecksumAddress:
        return address(self._call(self.contract.functions.sum()))

    def sum(self) -> SumRefereeClient:
        """A client of the SumReferee this referee hands the sums to."""
        from offchain.chain.build import compile_contracts

        cached = getattr(self, "_sum", None)
        if cached is None:
            compiled = compile_contracts()
            cached = SumRefereeClient(self.chain, self.sum_address(), compiled[SumRefereeClient.CONTRACT_NAME])
            self._sum = cached
        return cached

    def taken_over(self, element_game: int) -> int:
        """The dot game that took over ElementReferee game `element_game` (0: none yet)."""
        return int(self._call(self.contract.functions.takenOver(element_game)))

    def game_of(self, game_id: int) -> DotView:
        return DotView.from_abi(self._call(self.contract.functions.gameOf(game_id)))

    def meter_of(self, game_id: int) -> tuple[int, int]:
        gas = self._call(self.contract.functions.meterOf(game_id))
        return int(gas[0]), int(gas[1])

    def defender_splits(self, game_id: int, *, from_block: int = 0) -> list[int]:
        """The defender's prefix sums at the current range's split points (what the challenger passes back):
        its SplitPosted event for the range, or its Claimed event for the first range [0, K]."""
        v = self.game_of(game_id)
        for e in reversed(self._logs("SplitPosted", {"gameId": game_id}, from_block=from_block)):
            if (int(e["lo"]), int(e["hi"])) == (v.lo, v.hi):
                return [int(x) for x in e["splits"]]
        if (v.lo, v.hi) == (0, v.k):
            claimed = self._logs("Claimed", {"gameId": game_id}, from_block=from_block)
            if claimed:
                return [int(x) for x in claimed[-1]["splits"]]
        raise ChainError(f"dot game {game_id}: the defender has not posted prefix sums for [{v.lo}, {v.hi}] yet")
