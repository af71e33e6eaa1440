// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {IElementReferee} from "./IElementReferee.sol";

/// @title IDisputeGame
/// @notice The referee: a two-phase bisection game between two trainers (a defender and a
///         challenger) who claim different checkpoint lists for the same task. Whenever one of
///         them computed honestly, that one wins. docs/game.md gives the rules in prose; this
///         interface is their exact form.
///
///         Notation (docs/commitments.md): `H` = SHA-256, `leaf`, `node`, `listRoot`, `PAD`;
///         records `tag || 32-byte words`.
///
///         **Descent.** Three stages narrow two Merkle trees of the same leaf count `n` to their
///         first differing leaf: the checkpoint lists (`n = steps / checkpointInterval + 1`, CKPT
///         records), the traces of the disputed step (`n = nodeCount`, NODE records) and, when
///         both traces agree, the post-states (`n` = the pre-state's entry count, STEN records).
///         View the tree as complete with `2^D` leaf positions, `D = depth(n)`; position `p` at
///         height `h` is `PAD` if `p * 2^h >= n`, else `node(left, right)` of its children (a leaf
///         at height 0). A descent move at the current node (height `h`, position `p`) reveals
///         the mover's `w = 2^t` nodes at height `h - t`, positions `p*w .. p*w + w - 1`, where
///         `t = min(log2(arity), h)`. The contract folds them up (padding positions must be PAD)
///         and checks the result against the mover's current node; at the top (`h = D`) it checks
///         `listRoot(n, fold)` against the mover's root instead. The defender moves first (passing
///         an empty `theirs`); the challenger passes its own nodes and the defender's; the first
///         index where they differ becomes the current position of both. After `ceil(D / log2
///         arity)` levels the current nodes are the two differing leaves.
///
///         **Bisection** (stage StepBisection). After the checkpoint descent isolates checkpoint
///         `j`, the steps `lo = (j-1) c .. hi = j c` are narrowed: with `L = hi - lo` and
///         `w = min(arity, L)`, the split points are `p_i = lo + (i * L) / w`, `i = 0..w`. Each
///         side posts its state roots at all `w + 1` points (`mine[0]` the agreed root at `lo`,
///         `mine[w]` its own root at `hi`). In the first round the roots at `lo` and `hi` are
///         proven: the defender's `mine[0]` by `loProof`, the opening of `leaf("CKPT" ||
///         u256(lo) || mine[0])` at index `j - 1` of its checkpoint list; each side's `mine[w]` by
///         `leaf("CKPT" || u256(hi) || mine[w])` equal to its differing leaf. The first `i` where the
///         two lists differ gives `lo = p_{i-1}, hi = p_i`. When `hi = lo + 1` the game has
///         isolated step `s = lo`: the agreed pre-state root and the two post-state roots. The first
///         round is played even when `c = 1` (`w = 1`, roots at lo and hi), as it proves the endpoints.
///
///         **Phase 2.** The trace descent's first move of each side commits its trace root of step
///         `s` (the contract keeps only the defender's, which proofs open records in). If both first
///         levels are equal (equal trace roots), the post-states are descended instead (the
///         defender first calls `openPostStateCount`) and the defender must then `provePostState`.
///         Otherwise `revealNode` opens both NODE records at the first differing node `d`
///         (with the descriptor, proven against the graph root); the first differing input `k` must
///         be proven by the defender (`prove*Input`, by the kind of input `k`'s reference); if all
///         inputs agree the recompute oracle is asked and `resolveOracle` decides.
///
///         **Players.** Each side is one account, and only it moves for that side: a game decides
///         about the two accounts that played it (docs/game.md, "Why games are between trainers").
///
///         **Clocks.** Each side has `clock` seconds for the whole game; it runs while that side
///         must move. `timeout` ends the game against a side whose clock ran out. No clock runs
///         while the oracle works; the oracle ends every question within its
///         `maxResolutionTime`. So every game ends within `timeBound(cfg)`.
interface IDisputeGame {
    enum Side {
        Defender,
        Challenger
    }

    enum Stage {
        None,
        CheckpointDescent,
        StepBisection,
        TraceDescent,
        PostStateCount,
        PostStateDescent,
        NodeReveal,
        InputProof,
        PostStateProof,
        Oracle,
        Resolved,
        Element // the ElementReferee game `elementGame` decides (docs/game.md 2.7); after Resolved to keep codes
    }

    enum Outcome {
        Pending,
        DefenderWins,
        ChallengerWins,
        BothLose, // the oracle's answer matches neither side
        NoDecision // the oracle abandoned the question
    }

    /// @notice What a game needs of its task, copied at `open`.
    struct Config {
        bytes32 programHash;
        bytes32 graphRoot;
        bytes32 datasetRoot;
        uint256 seed;
        uint64 steps; // T >= 1
        uint64 checkpointInterval; // c, divides T
        uint64 nodeCount; // M >= 1, nodes of the program
        uint64 datasetSize; // examples in the dataset, >= 1
        uint64 batchSize; // B >= 1
        uint64 arity; // N, a power of two in [2, 64]
        uint64 clock; // seconds per side, >= 1
    }

    /// @notice A game's state, for clients.
    struct GameView {
        address owner;
        address[2] players; // [defender, challenger]
        bytes32[2] checkpointRoots;
        Stage stage;
        Outcome outcome;
        Side toMove;
        bool halfDone; // the defender has moved at this level/round; the challenger is to answer
        uint64[2] clockLeft; // seconds left, not counting the running turn
        uint64 turnStartedAt;
        uint64 height; // descent: current height
        uint64 position; // descent: current position; NodeReveal/InputProof: node d; PostStateProof: entry e
        uint64 lo; // bisection interval, then the isolated step (lo)
        uint64 hi;
        uint64 leafCount; // the tree being descended
        bytes32 agreedRoot; // bisection: the root both agree on at lo; phase 2: the pre-state root
        bytes32[2] current; // descent: current nodes (then the differing leaves); bisection: roots at hi
        // (the post-state roots of the isolated step are in StepIsolated)
        bytes32 defenderTrace; // the defender's trace root (both are in TraceCommitted)
        uint256 inputIndex; // InputProof: the disputed input
        uint256 questionId; // Oracle
        uint256 moves; // moves played so far
        uint256 elementGame; // Element: the ElementReferee game (docs/game.md 2.7)
    }

    event GameOpened(
        uint256 indexed gameId,
        address indexed owner,
        address defender,
        address challenger,
        bytes32 defenderCheckpoints,
        bytes32 challengerCheckpoints
    );
    /// @notice The defender posted `nodes` in a descent (its nodes at the level below the current
    ///         node), which the challenger passes back. The challenger's lists are not emitted.
    event NodesPosted(
        uint256 indexed gameId, Side side, Stage stage, uint64 height, uint64 position, bytes32[] nodes
    );
    /// @notice A descent level was settled: the first difference is at `position`, height `height`.
    event DescentNarrowed(uint256 indexed gameId, Stage stage, uint64 height, uint64 position);
    /// @notice The defender posted state roots at the split points of `lo..hi` (the challenger's
    ///         are not emitted).
    event RootsPosted(uint256 indexed gameId, Side side, uint64 lo, uint64 hi, bytes32[] roots);
    /// @notice The bisection narrowed the interval to `lo..hi`.
    event IntervalNarrowed(uint256 indexed gameId, uint64 lo, uint64 hi);
    /// @notice Step `step` is isolated.
    event StepIsolated(
        uint256 indexed gameId, uint64 step, bytes32 preRoot, bytes32 defenderPost, bytes32 challengerPost
    );
    /// @notice The defender committed its trace root of the isolated step (the challenger's is not
    ///         kept: nothing reads it).
    event TraceCommitted(uint256 indexed gameId, Side side, bytes32 traceRoot);
    /// @notice Both traces agree: the post-states (of `count` entries) are descended.
    event PostStateCountOpened(uint256 indexed gameId, uint64 count);
    /// @notice `side` opened its NODE record of node `node`.
    event NodeRevealed(uint256 indexed gameId, Side side, uint64 node, bytes record);
    /// @notice The records differ first at input `inputIndex`, whose reference is of kind `refKind`
    ///         (1 state, 2 batch, 3 constant, 4 node output); the defender must prove it.
    event InputDisputed(uint256 indexed gameId, uint64 node, uint256 inputIndex, uint256 refKind);
    /// @notice The records agree on every input: the oracle was asked `questionId`.
    event OracleAsked(uint256 indexed gameId, uint256 indexed questionId);
    /// @notice The game ended.
    event GameResolved(uint256 indexed gameId, Outcome outcome);

    /// @notice The market that alone may open games was bound (once, by the deployer).
    event MarketBound(address indexed market);

    /// @notice The records agree on every input and the node's operator is in the referee's element
    ///         table: the element game `elementGame` of the bound ElementReferee decides (docs/game.md 2.7).
    event ElementOpened(uint256 indexed gameId, uint256 indexed elementGame);
    /// @notice The ElementReferee that decides elementwise nodes was bound (once, by the deployer).
    event RefereeBound(address indexed referee);

    /// @notice The deployer binds the task market, once; until then nobody can open a game.
    function bindMarket(address market) external;

    /// @notice The deployer binds the ElementReferee, once (`DisputeGameRefereeAlreadyBound` after); until
    ///         then every node whose inputs agree goes to the oracle.
    function bindReferee(IElementReferee referee) external;

    /// @notice The bound market opens a game; it becomes the game's owner. Nobody else can: a game
    ///         reaches the oracle, whose questions cost its oracles work (docs/game.md, threat model).
    /// @dev Reverts `DisputeGameNotMarket` for any other caller, on a malformed config
    ///      (`DisputeGameBadConfig`) or equal claims.
    function open(
        Config calldata cfg,
        address defender,
        bytes32 defenderCheckpoints,
        address challenger,
        bytes32 challengerCheckpoints
    ) external returns (uint256 gameId);

    /// @notice A descent move (stages CheckpointDescent, TraceDescent, PostStateDescent).
    /// @param mine The caller's `w` nodes one level group below its current node.
    /// @param theirs Empty for the defender; the defender's posted nodes for the challenger.
    function descend(uint256 gameId, bytes32[] calldata mine, bytes32[] calldata theirs) external;

    /// @notice A bisection move (stage StepBisection).
    /// @param mine The caller's `w + 1` state roots at the split points.
    /// @param theirs Empty for the defender; the defender's roots for the challenger.
    /// @param loProof First round, defender only: the opening of checkpoint `j - 1`; else empty.
    function bisect(
        uint256 gameId,
        bytes32[] calldata mine,
        bytes32[] calldata theirs,
        bytes32[] calldata loProof
    ) external;

    /// @notice Defender, stage PostStateCount: `count` entries, proven by
    ///         `listRoot(count, preTop) == preRoot` (the agreed pre-state has the post-states' names).
    function openPostStateCount(uint256 gameId, uint64 count, bytes32 preTop) external;

    /// @notice Stage NodeReveal: opens the caller's NODE record at the isolated node `d`.
    /// @param record The caller's record `"NODE" || u256(d) || H(descriptor) || u256(nIn) || inputs ||
    ///        u256(nOut) || outputs`; its leaf hash must be the caller's differing leaf.
    /// @param theirRecord Empty for the defender; the defender's record for the challenger.
    /// @param descriptor The descriptor of node `d` (docs/program.md section 4).
    /// @param graphProof Defender only: the opening of `leaf("NDSC" || u256(d) || H(descriptor))`
    ///        at index `d` of the graph root (`nodeCount` leaves); empty for the challenger.
    function revealNode(
        uint256 gameId,
        bytes calldata record,
        bytes calldata theirRecord,
        bytes calldata descriptor,
        bytes32[] calldata graphProof
    ) external;

    /// @notice An opening of `leaf(STEN || nameHash || value)` at `index` of a list of `count`
    ///         entries (a state root, an example root or the constants root).
    struct EntryProof {
        uint64 count;
        uint64 index;
        bytes32[] siblings;
    }

    /// @notice Defender, stage InputProof, input `k` refers to state `name`: its input `k` equals the
    ///         entry `name` of the agreed pre-state root.
    /// @param record The defender's NODE record (again); @param descriptor node d's descriptor.
    function proveStateInput(
        uint256 gameId,
        bytes calldata record,
        bytes calldata descriptor,
        EntryProof calldata entry
    ) external;

    /// @notice Defender, stage InputProof, input `k` refers to constant `name`: its input equals the
    ///         entry `name` of the program's constants root.
    /// @param programRoots `[graphRoot, inputsRoot, outputsRoot, constantsRoot]`, the preimage of the
    ///        program hash `H("PROG" || u256(1) || ...)`.
    function proveConstantInput(
        uint256 gameId,
        bytes calldata record,
        bytes calldata descriptor,
        bytes32[4] calldata programRoots,
        EntryProof calldata entry
    ) external;

    /// @notice Defender, stage InputProof, input `k` is output `slot` of node `j < d`: its input
    ///         equals that output of NODE record `j` (identical in both traces), opened at index
    ///         `j` of the defender's trace root.
    function proveNodeInput(
        uint256 gameId,
        bytes calldata record,
        bytes calldata descriptor,
        bytes calldata sourceRecord,
        bytes32[] calldata sourceProof
    ) external;

    /// @notice The batch tensor of a batch input, with its rows proven against the dataset.
    /// @dev Row `j` is example `idx_j = H("BTCH" || u256(seed) || u256(step) || u256(j)) mod datasetSize`
    ///      (docs/data.md): `leaf("EXMP" || u256(idx_j) || exampleRoots[j])` opens at `idx_j` of the
    ///      dataset root, and `leaf("STEN" || nameHash || rowCommitment_j)` opens in
    ///      `exampleRoots[j]` (`fieldCount` entries, at `fieldIndex[j]`), where `rowCommitment_j` is
    ///      the tensor commitment of row `j` of `data` (dtype `dtype`, shape `shape[1:]`). The batch
    ///      commitment is that of `data` with `shape` (`shape[0] == batchSize`).
    struct BatchProof {
        uint8 dtype;
        uint64[] shape;
        bytes data;
        bytes32[] exampleRoots;
        bytes32[] datasetSiblings; // batchSize * depth(datasetSize), row after row
        uint64 fieldCount;
        uint64[] fieldIndex;
        bytes32[] fieldSiblings; // batchSize * depth(fieldCount), row after row
    }

    /// @notice Defender, stage InputProof, input `k` refers to batch `name`: its input is the
    ///         commitment of the batch the schedule gives for the isolated step.
    function proveBatchInput(
        uint256 gameId,
        bytes calldata record,
        bytes calldata descriptor,
        BatchProof calldata batch
    ) external;

    /// @notice How the correct value of post-state entry `e` follows from the agreed trace.
    struct PostStateProof {
        bytes32 nameHash;
        bytes32 commitment; // the defender's entry e: leaf("STEN" || nameHash || commitment) is its leaf
        bytes32[] preSiblings; // entry e of the pre-state (count n) has the same name
        bytes32 preCommitment; // ... and this commitment
        bytes32[4] programRoots; // preimage of the program hash
        uint64 outputCount; // outputs in the program's outputs root
        uint64 outputIndex;
        bytes32 typeHash; // POUT record: "POUT" || u256(1) || nameHash || typeHash || ref (3 words)
        uint256[3] ref; // (4, j, slot): node output; (1, nameHash', 0): state input passed through
        bytes32[] outputSiblings;
        bytes sourceRecord; // ref kind 4: NODE record j, opened at j of the (agreed) trace root
        bytes32[] sourceSiblings;
        EntryProof sourceEntry; // ref kind 1: entry nameHash' of the pre-state (siblings of it)
    }

    /// @notice Defender, stage PostStateProof: its post-state entry `e` is the program's state
    ///         output of that name in the agreed trace.
    function provePostState(uint256 gameId, PostStateProof calldata proof) external;

    /// @notice Anyone, stage Oracle: reads the oracle's verdict and ends the game. Final answer:
    ///         the side whose outputs hash matches wins (BothLose if neither); Abandoned: NoDecision.
    function resolveOracle(uint256 gameId) external;

    /// @notice Anyone, stage Element: reads the outcome of the element game this contract opened and
    ///         ends the game with it (DefenderWins, ChallengerWins or BothLose);
    ///         `DisputeGameElementNotDone` while it runs.
    function resolveElement(uint256 gameId) external;

    /// @notice Anyone: ends the game against the side to move once its clock has run out.
    function timeout(uint256 gameId) external;

    function outcome(uint256 gameId) external view returns (Outcome);
    function gameOf(uint256 gameId) external view returns (GameView memory);
    function configOf(uint256 gameId) external view returns (Config memory);
    function gameCount() external view returns (uint256);
    function oracle() external view returns (address);
    /// @notice The bound ElementReferee (address(0) until bound).
    function referee() external view returns (address);
    function market() external view returns (address);
    /// @notice What each side's calls to this game cost it (index 0 the defender, 1 the challenger):
    ///         gas measured per call plus `TX_BASE_GAS`, `CALLDATA_GAS_PER_BYTE` a calldata byte and
    ///         `METER_GAS`, and that gas at each transaction's gas price. Calls by anyone else are not
    ///         counted. The market repays the winner from this (docs/game.md, "Compensation").
    function meterOf(uint256 gameId) external view returns (uint256[2] memory gas, uint256[2] memory weiSpent);

    /// @notice Moves per side in the longest game of `cfg` (descents, bisection, reveal, proof).
    function roundBound(Config calldata cfg) external pure returns (uint256);
    /// @notice Gas an honest side spends in the longest game of `cfg`, an upper bound
    ///         (`roundBound * MOVE_GAS + PROOF_GAS + OPEN_GAS`, docs/game.md).
    function honestGasBound(Config calldata cfg) external pure returns (uint256);
    /// @notice Seconds after `open` by which every game of `cfg` has ended.
    function timeBound(Config calldata cfg) external view returns (uint256);
}
