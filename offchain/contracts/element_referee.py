"""Typed errors of ElementReferee (contracts/src/interfaces/IElementReferee.sol, docs/game.md 2.7).

Every custom error of the contract (contracts/src/lib/ElementRefereeErrors.sol) is a subclass of
`ElementRefereeError` named after it, and the errors of the one-element evaluator it calls
(`RepOpsElement`, contracts/src/lib/FloatErrors.sol) subclasses of `ElementArithmeticError`; the
Merkle and tensor libraries' errors keep their classes (`LIBRARY_ERRORS`). `ElementRefereeClient`
sends the moves `offchain.game.element.ElementSide` computes, and reads back what the defender posted
(`defender_nodes`, `defender_chunk`) for the challenger to pass back. DisputeGame opens a game here for
a covered node once a referee is bound (stage ELEMENT); the trainer agents play it
(`offchain.agents._element`).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

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
    words,
)

if TYPE_CHECKING:  # annotations only: offchain.game.element needs torch, a chain client does not
    from offchain.contracts.dot_referee import DotRefereeClient
    from offchain.game.element import InputOpening, TensorHeader

CONTRACT_NAME: Final = "ElementReferee"


class Stage(enum.IntEnum):
    NONE = 0
    HEADER = 1
    CHUNK_DESCENT = 2
    ELEMENT_OPEN = 3
    ELEMENT_PROOF = 4
    RESOLVED = 5
    DELEGATED = 6  # mm, addmm: the DotReferee game decides, then settles this one (docs/game.md 2.8)
    ARGS = 7  # a Tensor-Scalar node: the defender opens its argument bytes (openArgs), then HEADER


class Outcome(enum.IntEnum):
    PENDING = 0
    DEFENDER_WINS = 1
    CHALLENGER_WINS = 2
    BOTH_LOSE = 3  # neither side's element is the one the contract computed
    INAPPLICABLE = 4  # an agreed input is not of the dtype the operator's spec takes: the oracle decides


# -- errors ------------------------------------------------------------------------------------


class ElementRefereeError(TypedRevert):
    """Root of ElementReferee's custom errors."""


class ElementRefereeUnknown(ElementRefereeError):
    """No element game has this id; use the id `open` returned (its GameOpened event)."""


class ElementRefereeBadParams(ElementRefereeError):
    """A parameter of `open` is out of range (`field`: 1 op code, 2 input count, 3 players, 4 outputs equal,
    5 a zero clock, 6 arity not a power of two in [2, 64], 7 a scalar the operator does not take); fix it."""


class ElementRefereeWrongStage(ElementRefereeError):
    """The game is in another stage than this move needs; read `gameOf(id).stage` and make that stage's move."""


class ElementRefereeNotPlaying(ElementRefereeError):
    """The game is resolved, so nobody can be timed out."""


class ElementRefereeNotYourTurn(ElementRefereeError):
    """It is not the caller's turn: wait for the opponent's move, or send from the key of the player to move
    (`expected`)."""


class ElementRefereeClockExpired(ElementRefereeError):
    """The mover's clock ran out at `deadline`: the move is too late, and the game can only end by `timeout`."""


class ElementRefereeClockRunning(ElementRefereeError):
    """The player to move still has time until `deadline`; call `timeout` after it."""


class ElementRefereeWidth(ElementRefereeError):
    """A list in the move has `got` entries, not the `expected` ones: the defender opens one header per input,
    the challenger none; a descent level posts 2^min(log2 arity, height) nodes and the challenger passes the
    defender's back; the defender passes back no chunk; the proof opens one element per input."""


class ElementRefereeHeaderMismatch(ElementRefereeError):
    """The opened header (dtype, shape, data root) of tensor `tensor` (0 the output, 1 + k input k) gives the
    commitment `computed`, not the committed `expected`: open the header of the tensor that was committed."""


class ElementRefereeDtype(ElementRefereeError):
    """Tensor `tensor` (0 the output, 1 + k input k) has dtype `got`, but the operator takes or gives `expected`;
    the game's op code does not fit the node's tensors."""


class ElementRefereeShape(ElementRefereeError):
    """Dimension `dim` of tensor `tensor` (0 the output, 1 + k input k; dim 2^256 - 1 stands for the number of
    dimensions) is `got`, but broadcasting the input shapes makes it `expected`."""


class ElementRefereeHeaderDiffers(ElementRefereeError):
    """The output's dtype and shape hash to `computed`, not to those the defender opened (`expected`): both
    outputs must have the same header, and the proof must name the opened output shape."""


class ElementRefereeNoDifference(ElementRefereeError):
    """The two outputs agree where the game knows they differ (equal data roots, equal node lists or equal
    chunks); only a hash collision could do that: post your own tensor's data."""


class ElementRefereePaddingNode(ElementRefereeError):
    """Entry `index` of the descent move lies at a padding position of the chunk tree (no chunk there) and must
    be PAD (32 zero bytes)."""


class ElementRefereeFoldMismatch(ElementRefereeError):
    """The posted nodes fold (at the top: listRoot(K, fold)) to `computed`, not to the mover's committed node or
    data root `expected`: post the nodes of the tensor that was committed."""


class ElementRefereeOpponentMismatch(ElementRefereeError):
    """The defender's list or chunk, passed back, hashes to `computed`, not to what it posted (`expected`); pass
    it back exactly as the defender sent it."""


class ElementRefereeChunkMismatch(ElementRefereeError):
    """The chunk's leaf hash is `computed`, not the mover's differing leaf `expected`: open chunk j of your own
    output."""


class ElementRefereeChunkLength(ElementRefereeError):
    """The chunk is `got` bytes long; the output's shape makes it `expected` (4096, or what is left for the
    last chunk)."""


class ElementRefereeNotOwner(ElementRefereeError):
    """Only the game's opener (`owner`, e.g. the DisputeGame that opened it) may read its outcome with
    `ownedOutcome`; a game opened by `caller` or anyone else decides nothing for it."""


class ElementRefereeApplicable(ElementRefereeError):
    """Input `tensor` has `dtype`, the one the operator's spec takes: the element phase applies to this node,
    so play it with `openHeaders` instead of `proveInapplicable`."""


class ElementRefereeNotDot(ElementRefereeError):
    """Only the DotReferee this ElementReferee deployed (`ElementReferee.dot()`) may hand a game over or settle
    it; `caller` is another account. Play the dot phase on that DotReferee (`start`)."""


class ElementRefereeArgsMismatch(ElementRefereeError):
    """The argument bytes given hash (SHA-256) to `computed`, not to the node's argument hash `expected`: open
    the node's own argument bytes, `encode_args(node.args)` of the task's program (docs/program.md)."""


class ElementArithmeticError(TypedRevert):
    """Root of the one-element evaluator's errors (RepOpsElement, docs/repops/ieee.md)."""


class ElementUnknownOp(ElementArithmeticError):
    """`op` is not an operator code of RepOpsElement (the table in docs/repops/ieee.md)."""


class ElementArgTooWide(ElementArithmeticError):
    """Argument `index` of the operator (`value`) does not fit its `bits`-bit pattern: an agreed input holds a
    value its dtype cannot (a bool other than 0 or 1)."""


class ElementPowExponent(ElementArithmeticError):
    """pow has a RepOps definition for the exponents 0, 1, 2, 3, -1, -2, 0.5 and -0.5 only; `exponent` (binary64
    bits) is none of them."""


ELEMENT_REFEREE_ERRORS: Final = error_table(ElementRefereeError)
ELEMENT_ARITHMETIC_ERRORS: Final = error_table(ElementArithmeticError)
ERRORS: Final[tuple[ErrorTable, ...]] = (ELEMENT_REFEREE_ERRORS, ELEMENT_ARITHMETIC_ERRORS, LIBRARY_ERRORS)


# -- the client --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Params:
    """What `open` agrees (IElementReferee.Params)."""

    op: int
    inputs: tuple[bytes, ...]
    outputs: tuple[bytes, bytes]  # (defender's, challenger's)
    players: tuple[str, str]
    clocks: tuple[int, int]
    arity: int
    scalars: tuple[int, int] = (0, 0)

    def to_abi(self) -> tuple[Any, ...]:
        return (
            self.op,
            words(self.inputs, "inputs"),
            list(self.scalars),
            words(self.outputs, "outputs"),
            [address(p) for p in self.players],
            list(self.clocks),
            self.arity,
        )


@dataclass(frozen=True, slots=True)
class GameView:
    owner: ChecksumAddress
    players: tuple[ChecksumAddress, ChecksumAddress]
    stage: Stage
    outcome: Outcome
    to_move: int  # 0 defender, 1 challenger
    op: int
    clock_left: tuple[int, int]
    turn_started_at: int
    chunk_count: int
    height: int
    position: int
    current: tuple[bytes, bytes]
    element: int
    values: tuple[int, int]
    moves: int

    @property
    def deadline(self) -> int:
        """When the mover's clock runs out (a later move reverts; `timeout` works after it)."""
        return self.turn_started_at + self.clock_left[self.to_move]

    @classmethod
    def from_abi(cls, v: Sequence[Any]) -> GameView:
        return cls(
            address(v[0]),
            (address(v[1][0]), address(v[1][1])),
            Stage(v[2]),
            Outcome(v[3]),
            int(v[4]),
            int(v[5]),
            (int(v[6][0]), int(v[6][1])),
            int(v[7]),
            int(v[8]),
            int(v[9]),
            int(v[10]),
            (bytes(v[11][0]), bytes(v[11][1])),
            int(v[12]),
            (int(v[13][0]), int(v[13][1])),
            int(v[14]),
        )


class ElementRefereeClient(ContractClient):
    """Calls a deployed ElementReferee through a `ChainClient` (moves are sent from its key)."""

    CONTRACT_NAME = CONTRACT_NAME
    ERRORS = ERRORS

    def open(self, params: Params) -> GameId:
        """Opens a game owned by the caller; its id (from GameOpened)."""
        receipt = self._send(self.contract.functions.open(params.to_abi()))
        return GameId(int(self._event(receipt, "GameOpened")["gameId"]))

    def open_headers(self, game_id: int, output: TensorHeader, inputs: Sequence[TensorHeader] = ()) -> Receipt:
        """The header move: the output header; the defender also the inputs' headers."""
        fn = self.contract.functions.openHeaders(game_id, output.to_abi(), [h.to_abi() for h in inputs])
        return self._send(fn)

    def descend(self, game_id: int, mine: Sequence[bytes], theirs: Sequence[bytes] = ()) -> Receipt:
        """A chunk-descent level: the caller's `w` nodes; the challenger also passes the defender's."""
        return self._send(self.contract.functions.descend(game_id, words(mine, "mine"), words(theirs, "theirs")))

    def open_chunk(self, game_id: int, mine: bytes, theirs: bytes = b"") -> Receipt:
        """The caller's chunk `j`; the challenger also passes the defender's back."""
        return self._send(self.contract.functions.openChunk(game_id, bytes(mine), bytes(theirs)))

    def prove_element(self, game_id: int, output_shape: Sequence[int], openings: Sequence[InputOpening]) -> Outcome:
        """The defender's input openings at element e; the outcome the contract computed."""
        fn = self.contract.functions.proveElement(game_id, list(output_shape), [o.to_abi() for o in openings])
        return self._resolved(self._send(fn))

    def open_args(self, game_id: int, args: bytes) -> int | None:
        """The defender's first move in a Tensor-Scalar game (stage ARGS): the node's argument bytes. The number
        the referee read (binary64 pattern, event ArgsOpened), or None if it resolved the game INAPPLICABLE."""
        receipt = self._send(self.contract.functions.openArgs(game_id, bytes(args)))
        opened = self._events(receipt, "ArgsOpened")
        return int(opened[0]["scalar"]) if opened else None

    def prove_inapplicable(self, game_id: int, k: int, header: TensorHeader) -> Outcome:
        """Instead of the header move: agreed input `k`'s header, whose dtype is not the operator's (the game
        resolves INAPPLICABLE and its owner asks the oracle)."""
        return self._resolved(self._send(self.contract.functions.proveInapplicable(game_id, k, header.to_abi())))

    def input_dtypes(self, op: int) -> tuple[int, ...]:
        """The dtype codes (trainer.commit.dtype_code) the operator `op`'s spec takes, one per input; 0 for any dtype,
        the output's (data movement)."""
        n_in, _, packed, _ = self._call(self.contract.functions.opSpec(op))
        return tuple((int(packed) >> (8 * k)) & 0xFF for k in range(int(n_in)))

    def meter_of(self, game_id: int) -> tuple[int, int]:
        """Each side's metered gas on the game (defender, challenger): what the market repays the winner at
        the task's gas price cap."""
        gas = self._call(self.contract.functions.meterOf(game_id))
        return int(gas[0]), int(gas[1])

    def inputs_of(self, game_id: int) -> list[bytes]:
        """The game's agreed input commitments."""
        return [bytes(x) for x in self._call(self.contract.functions.inputsOf(game_id))]

    def timeout(self, game_id: int) -> Outcome:
        return self._resolved(self._send(self.contract.functions.timeout(game_id)))

    def _resolved(self, receipt: Receipt) -> Outcome:
        return Outcome(int(self._event(receipt, "GameResolved")["outcome"]))

    def nodes_posted(self, receipt: Receipt) -> list[bytes]:
        """The defender's descent nodes in its move's receipt (what the challenger passes back)."""
        return [bytes(x) for x in self._event(receipt, "NodesPosted")["nodes"]]

    def defender_nodes(self, game_id: int, *, from_block: int = 0) -> list[bytes]:
        """The defender's descent nodes at the current level (what the challenger passes back), from its
        NodesPosted event."""
        view = self.game_of(game_id)
        for e in reversed(self._logs("NodesPosted", {"gameId": game_id}, from_block=from_block)):
            if (int(e["height"]), int(e["position"])) == (view.height, view.position):
                return [bytes(x) for x in e["nodes"]]
        raise ChainError(f"element game {game_id}: the defender has not posted nodes at the current level yet")

    def defender_chunk(self, game_id: int, *, from_block: int = 0) -> bytes:
        """The chunk the defender opened (what the challenger passes back), read from the calldata of the
        transaction that emitted its ChunkOpened event."""
        found = [e for e in self._logs("ChunkOpened", {"gameId": game_id}, from_block=from_block) if e["side"] == 0]
        if not found:
            raise ChainError(f"element game {game_id}: the defender has not opened its chunk yet")
        w3 = self.chain.w3
        tx_hash = found[-1]["_tx"]
        tx = self.chain.read(lambda: w3.eth.get_transaction(tx_hash), "eth_getTransactionByHash")  # type: ignore[arg-type]
        fn, args = self.contract.decode_function_input(tx["input"])
        if fn.fn_name != "openChunk":  # the defender's move came through another contract: not readable here
            raise ChainError(f"element game {game_id}: the defender's chunk came in a call to {fn.fn_name}")
        return bytes(args["mine"])

    def outcome(self, game_id: int) -> Outcome:
        return Outcome(self._call(self.contract.functions.outcome(game_id)))

    def element_op(self, op_hash: bytes, arg_hash: bytes, n_in: int) -> int | None:
        """The table's RepOpsElement code of a node (`offchain.game.element_table`), None when not covered."""
        code = int(self._call(self.contract.functions.elementOp(op_hash, arg_hash, n_in)))
        return code - 1 if code else None

    def winner(self, game_id: int) -> ChecksumAddress | None:
        """The winning player, None while the game runs or when neither side wins (from `gameOf`)."""
        v = self.game_of(game_id)
        if v.outcome is Outcome.DEFENDER_WINS:
            return v.players[0]
        if v.outcome is Outcome.CHALLENGER_WINS:
            return v.players[1]
        return None

    def game_of(self, game_id: int) -> GameView:
        return GameView.from_abi(self._call(self.contract.functions.gameOf(game_id)))

    def dot_address(self) -> ChecksumAddress:
        """The DotReferee this referee hands mm and addmm elements to (its constructor deployed it)."""
        return address(self._call(self.contract.functions.dot()))

    def dot(self) -> DotRefereeClient:
        """A client of `dot_address()` through the same connection."""
        from offchain.chain.build import compile_contracts
        from offchain.contracts.dot_referee import DotRefereeClient

        cached = getattr(self, "_dot", None)
        if cached is None:
            compiled = compile_contracts()
            callees = [compiled[name] for name in DotRefereeClient.CALLEES]
            cached = DotRefereeClient(self.chain, self.dot_address(), compiled[DotRefereeClient.CONTRACT_NAME], callees)
            self._dot = cached
        return cached
