"""Typed client of DisputeGame (contracts/src/interfaces/IDisputeGame.sol).

One method per contract function; moves take the nodes and roots `offchain.game` computes,
and the event readers give a player what its opponent posted (`nodes_posted`,
`roots_posted`, `node_revealed`). Every custom error of the contract
(contracts/src/lib/GameErrors.sol) surfaces as a subclass of `DisputeGameError` named after
it; errors of the oracle it calls and of the Merkle/tensor libraries keep their own classes.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from eth_typing import ChecksumAddress

from offchain.chain.client import Receipt
from offchain.chain.errors import ChainError
from offchain.contracts._base import (
    LIBRARY_ERRORS,
    ContractClient,
    GameId,
    QuestionId,
    TypedRevert,
    address,
    error_table,
    word,
    words,
)
from offchain.contracts.element_referee import ELEMENT_ARITHMETIC_ERRORS, ELEMENT_REFEREE_ERRORS
from offchain.contracts.recompute_oracle import RECOMPUTE_ORACLE_ERRORS
from trainer.commit import Opening

CONTRACT_NAME: Final = "DisputeGame"


class Side(enum.IntEnum):
    DEFENDER = 0
    CHALLENGER = 1

    @property
    def other(self) -> Side:
        return Side(1 - self)


class Stage(enum.IntEnum):
    NONE = 0
    CHECKPOINT_DESCENT = 1
    STEP_BISECTION = 2
    TRACE_DESCENT = 3
    POST_STATE_COUNT = 4
    POST_STATE_DESCENT = 5
    NODE_REVEAL = 6
    INPUT_PROOF = 7
    POST_STATE_PROOF = 8
    ORACLE = 9
    RESOLVED = 10
    ELEMENT = 11  # the bound ElementReferee's game `element_game` decides (docs/game.md 2.7)

    @property
    def is_descent(self) -> bool:
        return self in (Stage.CHECKPOINT_DESCENT, Stage.TRACE_DESCENT, Stage.POST_STATE_DESCENT)


# The stages in which a side must move before the game's clock runs out.
PLAYING = frozenset(
    {
        Stage.CHECKPOINT_DESCENT,
        Stage.STEP_BISECTION,
        Stage.TRACE_DESCENT,
        Stage.POST_STATE_COUNT,
        Stage.POST_STATE_DESCENT,
        Stage.NODE_REVEAL,
        Stage.INPUT_PROOF,
        Stage.POST_STATE_PROOF,
    }
)


class Outcome(enum.IntEnum):
    PENDING = 0
    DEFENDER_WINS = 1
    CHALLENGER_WINS = 2
    BOTH_LOSE = 3  # the oracle's answer matches neither side
    NO_DECISION = 4  # the oracle abandoned the question


# -- structs -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Config:
    """What a game needs of its task (IDisputeGame.Config)."""

    program_hash: bytes
    graph_root: bytes
    dataset_root: bytes
    seed: int
    steps: int  # T >= 1
    checkpoint_interval: int  # c, divides T
    node_count: int  # M >= 1
    dataset_size: int
    batch_size: int
    arity: int  # N, a power of two in [2, 64]
    clock: int  # seconds per side

    @property
    def checkpoint_count(self) -> int:
        """`T / c + 1` leaves of a checkpoint list."""
        return self.steps // self.checkpoint_interval + 1

    def to_abi(self) -> tuple[Any, ...]:
        return (
            word(self.program_hash, "program hash"),
            word(self.graph_root, "graph root"),
            word(self.dataset_root, "dataset root"),
            self.seed,
            self.steps,
            self.checkpoint_interval,
            self.node_count,
            self.dataset_size,
            self.batch_size,
            self.arity,
            self.clock,
        )

    @classmethod
    def from_abi(cls, v: Sequence[Any]) -> Config:
        return cls(bytes(v[0]), bytes(v[1]), bytes(v[2]), *(int(x) for x in v[3:11]))


@dataclass(frozen=True, slots=True)
class GameView:
    """A game's state (IDisputeGame.GameView); pairs are indexed by `Side`."""

    owner: ChecksumAddress
    players: tuple[ChecksumAddress, ChecksumAddress]  # (defender, challenger)
    checkpoint_roots: tuple[bytes, bytes]
    stage: Stage
    outcome: Outcome
    to_move: Side
    half_done: bool
    clock_left: tuple[int, int]
    turn_started_at: int
    height: int
    position: int
    lo: int
    hi: int
    leaf_count: int
    agreed_root: bytes
    current: tuple[bytes, bytes]
    defender_trace: bytes  # the defender's trace root (the challenger's is not kept)
    input_index: int
    question_id: QuestionId
    moves: int
    element_game: int = 0  # stage ELEMENT: the ElementReferee game (0: none)

    @property
    def mover(self) -> ChecksumAddress:
        return self.players[self.to_move]

    @property
    def deadline(self) -> int:
        """When the mover's clock runs out (a later move reverts; `timeout` works after it)."""
        return self.turn_started_at + self.clock_left[self.to_move]

    def side_of(self, player: str) -> Side:
        a = address(player)
        if a == self.players[Side.DEFENDER]:
            return Side.DEFENDER
        if a == self.players[Side.CHALLENGER]:
            return Side.CHALLENGER
        raise ChainError(f"{a} plays neither side of this game")

    @classmethod
    def from_abi(cls, v: Sequence[Any]) -> GameView:
        return cls(
            owner=address(v[0]),
            players=(address(v[1][0]), address(v[1][1])),
            checkpoint_roots=(bytes(v[2][0]), bytes(v[2][1])),
            stage=Stage(v[3]),
            outcome=Outcome(v[4]),
            to_move=Side(v[5]),
            half_done=bool(v[6]),
            clock_left=(int(v[7][0]), int(v[7][1])),
            turn_started_at=int(v[8]),
            height=int(v[9]),
            position=int(v[10]),
            lo=int(v[11]),
            hi=int(v[12]),
            leaf_count=int(v[13]),
            agreed_root=bytes(v[14]),
            current=(bytes(v[15][0]), bytes(v[15][1])),
            defender_trace=bytes(v[16]),
            input_index=int(v[17]),
            question_id=QuestionId(int(v[18])),
            moves=int(v[19]),
            element_game=int(v[20]),
        )


@dataclass(frozen=True, slots=True)
class EntryProof:
    """An opening of `leaf(STEN || nameHash || value)` at `index` of a list of `count` entries."""

    count: int
    index: int
    siblings: tuple[bytes, ...]

    @classmethod
    def of(cls, opening: Opening) -> EntryProof:
        return cls(opening.count, opening.index, tuple(opening.siblings))

    def to_abi(self) -> tuple[Any, ...]:
        return (self.count, self.index, words(self.siblings, "siblings"))


@dataclass(frozen=True, slots=True)
class BatchProof:
    """The batch tensor of a batch input with its rows proven against the dataset (IDisputeGame.BatchProof)."""

    dtype: int
    shape: tuple[int, ...]
    data: bytes
    example_roots: tuple[bytes, ...]
    dataset_siblings: tuple[bytes, ...]  # batchSize * depth(datasetSize), row after row
    field_count: int
    field_index: tuple[int, ...]
    field_siblings: tuple[bytes, ...]  # batchSize * depth(fieldCount), row after row

    def to_abi(self) -> tuple[Any, ...]:
        return (
            self.dtype,
            list(self.shape),
            bytes(self.data),
            words(self.example_roots, "example roots"),
            words(self.dataset_siblings, "dataset siblings"),
            self.field_count,
            list(self.field_index),
            words(self.field_siblings, "field siblings"),
        )


@dataclass(frozen=True, slots=True)
class PostStateProof:
    """How post-state entry `e` follows from the agreed trace (IDisputeGame.PostStateProof)."""

    name_hash: bytes
    commitment: bytes
    pre_siblings: tuple[bytes, ...]
    pre_commitment: bytes
    program_roots: tuple[bytes, bytes, bytes, bytes]  # graph, inputs, outputs, constants
    output_count: int
    output_index: int
    type_hash: bytes
    ref: tuple[int, int, int]  # (4, j, slot) or (1, nameHash', 0)
    output_siblings: tuple[bytes, ...]
    source_record: bytes = b""
    source_siblings: tuple[bytes, ...] = ()
    source_entry: EntryProof = field(default_factory=lambda: EntryProof(0, 0, ()))

    def to_abi(self) -> tuple[Any, ...]:
        return (
            word(self.name_hash, "name hash"),
            word(self.commitment, "commitment"),
            words(self.pre_siblings, "pre siblings"),
            word(self.pre_commitment, "pre commitment"),
            words(self.program_roots, "program roots"),
            self.output_count,
            self.output_index,
            word(self.type_hash, "type hash"),
            list(self.ref),
            words(self.output_siblings, "output siblings"),
            bytes(self.source_record),
            words(self.source_siblings, "source siblings"),
            self.source_entry.to_abi(),
        )


# -- events ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class NodesPosted:
    """`side` posted `nodes`, its nodes one level group below `(height, position)`."""

    game_id: GameId
    side: Side
    stage: Stage
    height: int
    position: int
    nodes: tuple[bytes, ...]
    block_number: int


@dataclass(frozen=True, slots=True)
class RootsPosted:
    """`side` posted its state roots at the split points of `lo .. hi`."""

    game_id: GameId
    side: Side
    lo: int
    hi: int
    roots: tuple[bytes, ...]
    block_number: int


@dataclass(frozen=True, slots=True)
class NodeRevealed:
    game_id: GameId
    side: Side
    node: int
    record: bytes
    block_number: int


@dataclass(frozen=True, slots=True)
class StepIsolated:
    game_id: GameId
    step: int
    pre_root: bytes
    post_roots: tuple[bytes, bytes]  # (defender, challenger)


@dataclass(frozen=True, slots=True)
class InputDisputed:
    game_id: GameId
    node: int
    input_index: int
    ref_kind: int  # 1 state, 2 batch, 3 constant, 4 node output


# -- errors ------------------------------------------------------------------------------------


class DisputeGameError(TypedRevert):
    """Root of DisputeGame's custom errors."""


class DisputeGameUnknown(DisputeGameError):
    """No game has this id; use the id `openDispute` returned (TaskMarket's DisputeOpened event)."""


class DisputeGameBadConfig(DisputeGameError):
    """A config field is out of range (`field`: 1 steps, 2 checkpointInterval, 3 nodeCount, 4 datasetSize,
    5 batchSize, 6 arity, 7 clock); fix that field of the task."""


class DisputeGameNoDispute(DisputeGameError):
    """The players are the same account (or one is zero), or both claim the same checkpoint root: there is
    nothing to dispute."""


class DisputeGameNoDifference(DisputeGameError):
    """The challenger's nodes equal the defender's where the game knows they differ; post the nodes of your
    own tree at the current position."""


class DisputeGameWrongStage(DisputeGameError):
    """The game is in another stage than this move needs; read `game_of(id).stage` and make that stage's move."""


class DisputeGameNotPlaying(DisputeGameError):
    """The game is resolved or waiting for the oracle, so nobody can be timed out (call `resolveOracle` once
    the oracle decided)."""


class DisputeGameNotYourTurn(DisputeGameError):
    """It is not the caller's turn: wait for the opponent's move, or send from the key of the player to move
    (`expected`)."""


class DisputeGameClockExpired(DisputeGameError):
    """The mover's clock ran out at `deadline`: the move is too late, and the game can only end by `timeout`."""


class DisputeGameClockRunning(DisputeGameError):
    """The player to move still has time until `deadline`; call `timeout` after it."""


class DisputeGameWidth(DisputeGameError):
    """A list in the move has `got` entries, not the `expected` ones: a descent posts 2^min(log2 arity, height)
    nodes, a bisection w + 1 roots, the challenger passes back the defender's list as posted, and lists a
    role does not send must be empty."""


class DisputeGamePaddingNode(DisputeGameError):
    """Entry `index` of the descent move lies at a padding position of the tree and must be PAD (32 zero
    bytes)."""


class DisputeGameFoldMismatch(DisputeGameError):
    """The posted nodes fold (at the top: listRoot(n, fold)) to `computed`, not to the mover's committed node
    or root `expected`: post the nodes of the tree that was committed."""


class DisputeGameOpponentMismatch(DisputeGameError):
    """The opponent's list passed back is not what it posted; pass the defender's nodes or roots exactly as in
    its NodesPosted or RootsPosted event."""


class DisputeGameEndpointMismatch(DisputeGameError):
    """An end of the bisection list is wrong: `mine[0]` must be the agreed root at lo (the defender's in the
    challenger's list), `mine[w]` the mover's own root at hi from the previous round."""


class DisputeGameRecordMismatch(DisputeGameError):
    """The record (the CKPT leaf of the root at hi, a NODE record, or a STEN entry) hashes to `computed`, not to
    the mover's differing leaf `expected`."""


class DisputeGameMalformed(DisputeGameError):
    """A record or descriptor is malformed (`reason`: 1 tag, 2 length, 3 node index, 4 counts, 5 output slot);
    `value` is the offending value."""


class DisputeGameDescriptorMismatch(DisputeGameError):
    """The descriptor hashes to `computed`, not to the hash the record or the game holds (`expected`); send
    node d's descriptor from the task's program."""


class DisputeGameWrongReference(DisputeGameError):
    """The disputed input has reference kind `kind` (1 state, 2 batch, 3 constant, 4 node output); call the
    prove function of that kind."""


class DisputeGameValueMismatch(DisputeGameError):
    """The proof establishes `proven`, but the defender's record claims `claimed`."""


class DisputeGameProgramMismatch(DisputeGameError):
    """The program roots do not hash to the task's program hash, or their graph root is not the task's; send
    the graph, inputs, outputs and constants roots of the task's program."""


class DisputeGameBatchTooLarge(DisputeGameError):
    """The batch carries more bytes than a proof may (`maxBytes`)."""


class DisputeGameTooManyEntries(DisputeGameError):
    """The state's entry count is 0 or more than a game handles (`maxCount`)."""


class DisputeGameOracleNotDone(DisputeGameError):
    """The oracle has not decided the question yet (`status`); call `resolveOracle` once it is Final (6) or
    Abandoned (7)."""


class DisputeGameNotDeployer(DisputeGameError):
    """Only the game's deployer (`deployer`) may bind the task market; send from its key."""


class DisputeGameMarketAlreadyBound(DisputeGameError):
    """The task market was already bound (to `market`); it is bound once, at deployment."""


class DisputeGameNotMarket(DisputeGameError):
    """Only the bound task market (`market`) may open games (`TaskMarket.openDispute`); a zero market means
    the deployment never bound it (run `refereed deploy` again)."""


class DisputeGameRefereeAlreadyBound(DisputeGameError):
    """The ElementReferee was already bound (to `referee`); it is bound once, at deployment."""


class DisputeGameElementNotDone(DisputeGameError):
    """The element game (`elementGame`, on the bound ElementReferee) has not ended yet; call `resolveElement`
    once its outcome is known (a player wins it by its moves, or by `timeout` on the referee)."""


DISPUTE_GAME_ERRORS: Final = error_table(DisputeGameError)


# -- the client --------------------------------------------------------------------------------


class DisputeGameClient(ContractClient):
    """Calls a deployed DisputeGame through a `ChainClient` (moves are sent from its key)."""

    CONTRACT_NAME = CONTRACT_NAME
    # BatchVerifier: created by the game, reverts with its errors; ElementReferee: opened by the challenger's
    # node reveal (stage ELEMENT) and read by resolveElement.
    CALLEES = ("RecomputeOracle", "BatchVerifier", "ElementReferee")
    ERRORS = (
        DISPUTE_GAME_ERRORS,
        RECOMPUTE_ORACLE_ERRORS,
        ELEMENT_REFEREE_ERRORS,
        ELEMENT_ARITHMETIC_ERRORS,
        LIBRARY_ERRORS,
    )

    # -- opening and moves -----------------------------------------------------------------

    def open(
        self, cfg: Config, defender: str, defender_checkpoints: bytes, challenger: str, challenger_checkpoints: bytes
    ) -> GameId:
        """Opens a game owned by the caller, which must be the bound market; its id (from GameOpened)."""
        fn = self.contract.functions.open(
            cfg.to_abi(),
            address(defender),
            word(defender_checkpoints, "defender checkpoints"),
            address(challenger),
            word(challenger_checkpoints, "challenger checkpoints"),
        )
        return GameId(int(self._event(self._send(fn), "GameOpened")["gameId"]))

    def descend(self, game_id: int, mine: Sequence[bytes], theirs: Sequence[bytes] = ()) -> Receipt:
        """A descent move: the caller's `w` nodes; the challenger also passes the defender's."""
        return self._send(self.contract.functions.descend(game_id, words(mine, "mine"), words(theirs, "theirs")))

    def bisect(
        self, game_id: int, mine: Sequence[bytes], theirs: Sequence[bytes] = (), lo_proof: Sequence[bytes] = ()
    ) -> Receipt:
        """A bisection move: the caller's `w + 1` roots; the challenger also passes the defender's; the
        defender's first round carries the opening of checkpoint `j - 1` (`lo_proof`)."""
        fn = self.contract.functions.bisect(
            game_id, words(mine, "mine"), words(theirs, "theirs"), words(lo_proof, "lo proof")
        )
        return self._send(fn)

    def open_post_state_count(self, game_id: int, count: int, pre_top: bytes) -> Receipt:
        return self._send(self.contract.functions.openPostStateCount(game_id, count, word(pre_top, "pre top")))

    def reveal_node(
        self,
        game_id: int,
        record: bytes,
        descriptor: bytes,
        *,
        their_record: bytes = b"",
        graph_proof: Sequence[bytes] = (),
    ) -> Receipt:
        """Opens the caller's NODE record at node d: the defender with `graph_proof`, the challenger with the
        defender's record (`their_record`, from `node_revealed`)."""
        fn = self.contract.functions.revealNode(
            game_id, bytes(record), bytes(their_record), bytes(descriptor), words(graph_proof, "graph proof")
        )
        return self._send(fn)

    def prove_state_input(self, game_id: int, record: bytes, descriptor: bytes, entry: EntryProof) -> Receipt:
        fn = self.contract.functions.proveStateInput(game_id, bytes(record), bytes(descriptor), entry.to_abi())
        return self._send(fn)

    def prove_constant_input(
        self,
        game_id: int,
        record: bytes,
        descriptor: bytes,
        program_roots: Sequence[bytes],
        entry: EntryProof,
    ) -> Receipt:
        fn = self.contract.functions.proveConstantInput(
            game_id, bytes(record), bytes(descriptor), words(program_roots, "program roots"), entry.to_abi()
        )
        return self._send(fn)

    def prove_node_input(
        self, game_id: int, record: bytes, descriptor: bytes, source_record: bytes, source_proof: Sequence[bytes]
    ) -> Receipt:
        fn = self.contract.functions.proveNodeInput(
            game_id, bytes(record), bytes(descriptor), bytes(source_record), words(source_proof, "source proof")
        )
        return self._send(fn)

    def prove_batch_input(self, game_id: int, record: bytes, descriptor: bytes, batch: BatchProof) -> Receipt:
        fn = self.contract.functions.proveBatchInput(game_id, bytes(record), bytes(descriptor), batch.to_abi())
        return self._send(fn)

    def prove_post_state(self, game_id: int, proof: PostStateProof) -> Receipt:
        return self._send(self.contract.functions.provePostState(game_id, proof.to_abi()))

    def resolve_oracle(self, game_id: int) -> Outcome:
        return self._resolved(self._send(self.contract.functions.resolveOracle(game_id)))

    def meter_of(self, game_id: int) -> tuple[tuple[int, int], tuple[int, int]]:
        """((defender's gas, challenger's gas), (defender's wei, challenger's wei)) metered on the game's moves."""
        gas, spent = self._call(self.contract.functions.meterOf(game_id))
        return (int(gas[0]), int(gas[1])), (int(spent[0]), int(spent[1]))

    def resolve_element(self, game_id: int) -> Outcome | None:
        """Stage ELEMENT: ends the game with the outcome of its element game; the outcome. None when the
        element game was inapplicable (an agreed input of another dtype than the operator's): the game
        then asked the oracle and is in stage ORACLE."""
        receipt = self._send(self.contract.functions.resolveElement(game_id))
        if self._events(receipt, "OracleAsked"):
            return None
        return self._resolved(receipt)

    def timeout(self, game_id: int) -> Outcome:
        """Ends the game against the side whose clock ran out; the outcome."""
        return self._resolved(self._send(self.contract.functions.timeout(game_id)))

    def _resolved(self, receipt: Receipt) -> Outcome:
        return Outcome(int(self._event(receipt, "GameResolved")["outcome"]))

    # -- views -----------------------------------------------------------------------------

    def outcome(self, game_id: int) -> Outcome:
        return Outcome(self._call(self.contract.functions.outcome(game_id)))

    def game_of(self, game_id: int) -> GameView:
        return GameView.from_abi(self._call(self.contract.functions.gameOf(game_id)))

    def config_of(self, game_id: int) -> Config:
        return Config.from_abi(self._call(self.contract.functions.configOf(game_id)))

    def game_count(self) -> int:
        return int(self._call(self.contract.functions.gameCount()))

    def oracle(self) -> ChecksumAddress:
        return address(self._call(self.contract.functions.oracle()))

    def market(self) -> ChecksumAddress:
        """The bound task market, the only opener of games (the zero address until `bindMarket`)."""
        return address(self._call(self.contract.functions.market()))

    def referee(self) -> ChecksumAddress:
        """The bound ElementReferee (the zero address until `bindReferee`: every node goes to the oracle)."""
        return address(self._call(self.contract.functions.referee()))

    def bind_referee(self, referee: str) -> Receipt:
        """The deployer binds the ElementReferee that decides elementwise nodes (once)."""
        return self._send(self.contract.functions.bindReferee(address(referee)))

    def bind_market(self, market: str) -> Receipt:
        """The deployer binds the task market that alone may open games (once)."""
        return self._send(self.contract.functions.bindMarket(address(market)))

    def round_bound(self, cfg: Config) -> int:
        return int(self._call(self.contract.functions.roundBound(cfg.to_abi())))

    def honest_gas_bound(self, cfg: Config) -> int:
        return int(self._call(self.contract.functions.honestGasBound(cfg.to_abi())))

    def time_bound(self, cfg: Config) -> int:
        return int(self._call(self.contract.functions.timeBound(cfg.to_abi())))

    # -- events ----------------------------------------------------------------------------

    def nodes_posted(self, game_id: int, *, from_block: int = 0) -> list[NodesPosted]:
        """Every descent move of the game, oldest first."""
        return [
            NodesPosted(
                GameId(game_id),
                Side(e["side"]),
                Stage(e["stage"]),
                int(e["height"]),
                int(e["position"]),
                tuple(bytes(n) for n in e["nodes"]),
                e["_block"],
            )
            for e in self._logs("NodesPosted", {"gameId": game_id}, from_block=from_block)
        ]

    def roots_posted(self, game_id: int, *, from_block: int = 0) -> list[RootsPosted]:
        """Every bisection move of the game, oldest first."""
        return [
            RootsPosted(
                GameId(game_id),
                Side(e["side"]),
                int(e["lo"]),
                int(e["hi"]),
                tuple(bytes(r) for r in e["roots"]),
                e["_block"],
            )
            for e in self._logs("RootsPosted", {"gameId": game_id}, from_block=from_block)
        ]

    def node_revealed(self, game_id: int, *, from_block: int = 0) -> list[NodeRevealed]:
        return [
            NodeRevealed(GameId(game_id), Side(e["side"]), int(e["node"]), bytes(e["record"]), e["_block"])
            for e in self._logs("NodeRevealed", {"gameId": game_id}, from_block=from_block)
        ]

    def defender_nodes(self, game_id: int, *, from_block: int = 0) -> tuple[bytes, ...]:
        """The defender's nodes at the current level: what the challenger passes back as `theirs`."""
        view = self.game_of(game_id)
        for e in reversed(self.nodes_posted(game_id, from_block=from_block)):
            if (e.side, e.stage, e.height, e.position) == (Side.DEFENDER, view.stage, view.height, view.position):
                return e.nodes
        raise ChainError(f"game {game_id}: the defender has not posted nodes at the current level yet")

    def defender_roots(self, game_id: int, *, from_block: int = 0) -> tuple[bytes, ...]:
        """The defender's roots on the current interval: what the challenger passes back as `theirs`."""
        view = self.game_of(game_id)
        for e in reversed(self.roots_posted(game_id, from_block=from_block)):
            if (e.side, e.lo, e.hi) == (Side.DEFENDER, view.lo, view.hi):
                return e.roots
        raise ChainError(f"game {game_id}: the defender has not posted roots on the current interval yet")

    def step_isolated(self, game_id: int, *, from_block: int = 0) -> StepIsolated | None:
        found = self._logs("StepIsolated", {"gameId": game_id}, from_block=from_block)
        if not found:
            return None
        e = found[-1]
        return StepIsolated(
            GameId(game_id),
            int(e["step"]),
            bytes(e["preRoot"]),
            (bytes(e["defenderPost"]), bytes(e["challengerPost"])),
        )

    def trace_committed(self, game_id: int, *, from_block: int = 0) -> dict[Side, bytes]:
        return {
            Side(e["side"]): bytes(e["traceRoot"])
            for e in self._logs("TraceCommitted", {"gameId": game_id}, from_block=from_block)
        }

    def input_disputed(self, game_id: int, *, from_block: int = 0) -> InputDisputed | None:
        found = self._logs("InputDisputed", {"gameId": game_id}, from_block=from_block)
        if not found:
            return None
        e = found[-1]
        return InputDisputed(GameId(game_id), int(e["node"]), int(e["inputIndex"]), int(e["refKind"]))
