// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

/// @title IElementReferee
/// @notice The element phase of docs/game.md section 2.7, as a standalone two-party game over one node
///         whose input tensors both sides agree on and whose output tensor they commit differently.
///         Stages: each side opens its output header (the defender also the inputs' headers); an N-ary
///         descent of the two output data roots to the first differing 4096-byte chunk; both open that
///         chunk and the contract finds the first differing element `e`; the defender opens the input
///         elements at `e`'s broadcast positions, and the contract computes the element itself with
///         `RepOpsElement.evaluate`: the side whose element equals it wins. A side that does not move
///         before its clock runs out loses (`timeout`).
/// @dev Holds no funds. Anyone may open a game; its opener (`owner`) is recorded and is the one who
///      should act on `outcome`/`winner`. DisputeGame opens one (`openNode`) for a covered node and reads `ownedOutcome` (docs/game.md 2.7).
interface IElementReferee {
    enum Stage {
        None,
        Header, // defender, then challenger: openHeaders
        ChunkDescent, // defender, then challenger, per level: descend
        ElementOpen, // defender, then challenger: openChunk
        ElementProof, // defender: proveElement (mm, addmm: DotReferee.start; codes EXP..: DotReferee.startTrace)
        Resolved,
        Delegated, // mm, addmm, EXP..: the DotReferee (2.8) or TraceReferee (2.9) game decides, then settles this one
        Args // defender: openArgs (a Tensor-Scalar node opened by openNode), then Header
    }

    enum Side {
        Defender,
        Challenger
    }

    enum Outcome {
        Pending,
        DefenderWins,
        ChallengerWins,
        BothLose, // neither side's element is the computed one
        Inapplicable // an agreed input is not of the dtype the operator's spec takes: the phase does not apply
    }

    /// @notice What the opener agrees for the disputed node.
    /// @param op The `RepOpsElement` operator code (docs/repops/ieee.md; the table of docs/game.md 2.7).
    /// @param inputs The agreed input tensor commitments, in the operator's argument order.
    /// @param scalars The binary64 patterns of the operator's Python scalar arguments (alpha, clamp bounds,
    ///        pow's exponent, threshold), which fill the argument slots after the tensor inputs; unused ones 0.
    /// @param outputs The output tensor commitments of the defender and of the challenger (they differ).
    /// @param players The defender and the challenger.
    /// @param clocks Seconds each side has for all its moves (a chess clock, as in DisputeGame).
    /// @param arity The descent's arity N (a power of two in [2, 64]).
    struct Params {
        uint256 op;
        bytes32[] inputs;
        uint64[2] scalars;
        bytes32[2] outputs;
        address[2] players;
        uint64[2] clocks;
        uint64 arity;
    }

    /// @notice An opened tensor header: `commitment = H(0x03 || u8(dtype) || u8(ndim) || u64 dims || dataRoot)`.
    struct Header {
        uint8 dtype;
        uint64[] shape;
        bytes32 dataRoot;
    }

    /// @notice An element opening of an input (the element index is computed by the contract).
    struct InputOpening {
        uint8 dtype;
        uint64[] shape;
        bytes chunk;
        bytes32[] siblings;
    }

    struct GameView {
        address owner;
        address[2] players;
        Stage stage;
        Outcome outcome;
        Side toMove;
        uint256 op;
        uint64[2] clockLeft; // seconds left, not counting the running turn
        uint64 turnStartedAt;
        uint64 chunkCount; // K, the output's chunk count (after the header stage)
        uint64 height; // the descent's current height (0: the differing chunk was found)
        uint64 position; // the descent's current position (at height 0: the chunk index j)
        bytes32[2] current; // each side's current node (its data root, then nodes, then its chunk's leaf)
        uint256 element; // the first differing element e (after ElementOpen)
        uint64[2] values; // each side's element e (after ElementOpen)
        uint32 moves;
    }

    event GameOpened(
        uint256 indexed gameId,
        address indexed owner,
        uint256 op,
        address defender,
        address challenger,
        bytes32 defenderOutput,
        bytes32 challengerOutput
    );
    /// @notice `side` opened its output header: its data root and the output's chunk count K.
    event HeaderOpened(uint256 indexed gameId, Side side, bytes32 dataRoot, uint64 chunkCount);
    /// @notice The defender's descent nodes at `height`, positions `position * w ..` (the challenger
    ///         passes them back).
    event NodesPosted(uint256 indexed gameId, uint64 height, uint64 position, bytes32[] nodes);
    /// @notice Both sides moved at this level: their first differing node is at (`height`, `position`).
    event DescentNarrowed(uint256 indexed gameId, uint64 height, uint64 position);
    /// @notice `side` opened its chunk `chunkIndex` (the bytes are in the transaction's calldata).
    event ChunkOpened(uint256 indexed gameId, Side side, uint64 chunkIndex);
    /// @notice The first differing element `element` and the two sides' values there.
    event ElementIsolated(
        uint256 indexed gameId, uint256 element, uint64 defenderValue, uint64 challengerValue
    );
    /// @notice The contract computed element `element`: `args` are the operator's arguments, `value` its result.
    event ElementComputed(uint256 indexed gameId, uint256 element, uint256[3] args, uint256 value);
    event GameResolved(uint256 indexed gameId, Outcome outcome);
    /// @notice A Tensor-Scalar game's number or a creation game's fill value, read from the node's argument bytes
    ///         (binary64 pattern); a permute game's dims (the count in the low 4 bits, then 4 bits a dim, the first
    ///         lowest).
    event ArgsOpened(uint256 indexed gameId, uint64 scalar);

    /// @notice Opens a game; the caller is its owner. The defender moves first.
    /// @dev Reverts `ElementRefereeBadParams` (unknown op code, wrong input count, equal or zero players,
    ///      equal outputs, a zero clock, an arity that is not a power of two in [2, 64], a scalar the op does
    ///      not take, or an exponent pow does not define).
    function open(Params calldata p) external returns (uint256 gameId);

    /// @notice Header stage. The defender opens its output header and the headers of the agreed inputs
    ///         (`inputs`, one per input); the challenger its output header only (`inputs` empty).
    /// @dev Checks: each header's commitment (`ElementRefereeHeaderMismatch`), the dtypes the operator takes
    ///      and gives (`ElementRefereeDtype`), the output shape is the broadcast of the input shapes
    ///      (`ElementRefereeShape`), and it can be committed (`TensorTooLarge`); the challenger's dtype and
    ///      shape equal the defender's
    ///      (`ElementRefereeHeaderDiffers`) and its data root differs (`ElementRefereeNoDifference`).
    /// @notice Opens a game for a program node if its operator is in the element table (docs/game.md 2.7),
    ///         keyed by `keccak256(abi.encode(opHash, argHash, inputs.length))` with `opHash = H(utf8(op))`
    ///         and `argHash = H(argBytes)` from the node's descriptor; no scalars. A node not keyed so is looked
    ///         up again with argHash 0: a Tensor-Scalar call (`mul.Tensor(x, 0.9)`, codes MUL_SCALAR..), whose
    ///         game starts in stage `Args` (`openArgs`). Returns 0 (and opens nothing) for a node outside the
    ///         table. The caller is the game's owner.
    /// @dev Reverts as `open` for a covered node with bad parameters.
    function openNode(
        bytes32 opHash,
        bytes32 argHash,
        bytes32[] calldata inputs,
        bytes32[2] calldata outputs,
        address[2] calldata players,
        uint64[2] calldata clocks,
        uint64 arity
    ) external returns (uint256 gameId);

    /// @notice Args stage (a Tensor-Scalar, permute or creation node opened by `openNode`): the defender opens the
    ///         node's argument bytes, whose SHA-256 must be the node's argument hash (`ElementRefereeArgsMismatch`).
    ///         If they are the call's template with a number the referee reads (a CBOR float, or an int below 2^53
    ///         in magnitude) or dims it reads (a permutation of 0 .. n - 1, n <= 15), that is the game's scalar
    ///         (`ArgsOpened`) and the game goes on to the header stage; otherwise it resolves `Inapplicable` and
    ///         the dispute game asks the oracle.
    function openArgs(uint256 gameId, bytes calldata args) external;

    /// @notice The element table: the `RepOpsElement` code + 1 of a node's operator, 0 when it is not covered.
    function elementOp(bytes32 opHash, bytes32 argHash, uint256 nIn) external pure returns (uint256);

    /// @notice The outcome of a game, for its owner only (`ElementRefereeNotOwner` for anyone else): what
    ///         DisputeGame reads, so that a game opened by anyone else can decide nothing for it.
    function ownedOutcome(uint256 gameId) external view returns (Outcome);

    function openHeaders(uint256 gameId, Header calldata output, Header[] calldata inputs) external;

    /// @notice Header stage, instead of `openHeaders`, by the side to move: input `k`'s header `input`
    ///         opens the agreed input commitment and its dtype is not the one the operator's spec takes
    ///         (e.g. an int64 add: the table is keyed by operator, not by dtype). The game resolves
    ///         `Inapplicable`, and its owner decides the node another way (DisputeGame asks the oracle).
    /// @dev Reverts `ElementRefereeWidth` (no input k), `ElementRefereeHeaderMismatch` (not the agreed
    ///      input's header), `ElementRefereeApplicable` (its dtype is the spec's).
    function proveInapplicable(uint256 gameId, uint256 k, Header calldata input) external;

    /// @notice The agreed input commitments of a game, in order.
    function inputsOf(uint256 gameId) external view returns (bytes32[] memory);

    /// @notice Each side's metered gas for its own calls on game `gameId` (every move, `proveInapplicable`,
    ///         and a `timeout` it sent), as DisputeGame's `meterOf` counts its moves: the gas used plus the
    ///         transaction's base cost, its calldata at 40 gas a byte and the meter's own. Gas only (no wei:
    ///         the meter shares the slot every move writes); the market repays it at the task's gas price
    ///         cap as part of the winner's compensation (docs/game.md 2.7).
    function meterOf(uint256 gameId) external view returns (uint256[2] memory gas);

    /// @notice Chunk descent, one level: the mover posts its `w = 2^min(log2 N, height)` nodes below its
    ///         current node; the challenger also passes the defender's list back (`theirs`; empty for the
    ///         defender). The first index where they differ becomes the new position of both.
    /// @dev The rules of docs/game.md 2.1 on the two data roots (K leaves): `ElementRefereeWidth`,
    ///      `ElementRefereePaddingNode`, `ElementRefereeFoldMismatch`, `ElementRefereeOpponentMismatch`.
    function descend(uint256 gameId, bytes32[] calldata mine, bytes32[] calldata theirs) external;

    /// @notice Element opening: the mover posts its chunk `j` (`mine`); the challenger also passes the
    ///         defender's back (`theirs`; empty for the defender), and the contract finds the first element
    ///         where the two differ.
    /// @dev `ElementRefereeChunkLength` (a chunk is `min(4096, nbytes - 4096 j)` bytes),
    ///      `ElementRefereeChunkMismatch` (its leaf is not the mover's differing leaf),
    ///      `ElementRefereeOpponentMismatch` (the passed-back chunk is not the defender's).
    function openChunk(uint256 gameId, bytes calldata mine, bytes calldata theirs) external;

    /// @notice The defender opens, for each input, the element at `e`'s broadcast position (the flat index
    ///         of `e`'s coordinates, a dimension of size 1 taken at 0) against the agreed input commitment;
    ///         the contract computes the element and decides the game.
    /// @dev `outputShape` must be the opened output shape (`ElementRefereeHeaderDiffers`); the openings
    ///      revert as `TensorLib.verifyElement`, the computation as `RepOpsElement.evaluate`.
    function proveElement(uint256 gameId, uint64[] calldata outputShape, InputOpening[] calldata openings)
        external;

    /// @notice The dot phase's hand-over (only `dot` may call, from DotReferee). With `o` = Pending: the
    ///         takeover of an mm or addmm game whose element is isolated (stage ElementProof): stage
    ///         Delegated, where this game's clocks stop; returns the opened output header's hash
    ///         (keccak256(u8(dtype) || u64 dims)) and the game's arity. With another `o`: the dot game's
    ///         result, which resolves the Delegated game and adds the dot game's metered gas to each side.
    function hand(uint256 gameId, Outcome o, uint256[2] calldata gas) external returns (bytes32, uint64);

    /// @notice Ends the game against the side to move once its clock ran out (anyone may call).
    /// @dev Reverts `ElementRefereeNotPlaying` after the game is resolved or delegated, `ElementRefereeClockRunning`
    ///      before the deadline (inclusive).
    function timeout(uint256 gameId) external;

    function outcome(uint256 gameId) external view returns (Outcome);


    function gameOf(uint256 gameId) external view returns (GameView memory);


    /// @notice The operator's tensor input count, scalar count, input dtypes (one byte each, input 0 in the
    ///         low byte) and output dtype, 0 meaning any dtype, the output's (data movement); reverts
    ///         `ElementRefereeBadParams(1, op)` for an unknown code.
    function opSpec(uint256 op)
        external
        pure
        returns (uint256 nIn, uint256 nScalars, uint256 inDtypes, uint8 outDtype);
}
