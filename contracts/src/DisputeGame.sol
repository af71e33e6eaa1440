// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {IDisputeGame} from "./interfaces/IDisputeGame.sol";
import {IRecomputeOracle} from "./interfaces/IRecomputeOracle.sol";
import {IElementReferee} from "./interfaces/IElementReferee.sol";
import {MerkleLib} from "./lib/MerkleLib.sol";
import {BatchVerifier} from "./BatchVerifier.sol";
import {
    DisputeGameUnknown,
    DisputeGameBadConfig,
    DisputeGameNoDispute,
    DisputeGameNoDifference,
    DisputeGameWrongStage,
    DisputeGameNotPlaying,
    DisputeGameNotYourTurn,
    DisputeGameClockExpired,
    DisputeGameClockRunning,
    DisputeGameWidth,
    DisputeGamePaddingNode,
    DisputeGameFoldMismatch,
    DisputeGameOpponentMismatch,
    DisputeGameEndpointMismatch,
    DisputeGameRecordMismatch,
    DisputeGameMalformed,
    DisputeGameDescriptorMismatch,
    DisputeGameWrongReference,
    DisputeGameValueMismatch,
    DisputeGameProgramMismatch,
    DisputeGameTooManyEntries,
    DisputeGameOracleNotDone,
    DisputeGameNotDeployer,
    DisputeGameMarketAlreadyBound,
    DisputeGameNotMarket,
    DisputeGameRefereeAlreadyBound,
    DisputeGameElementNotDone
} from "./lib/GameErrors.sol";

/// @title DisputeGame
/// @notice The referee of docs/game.md: checkpoint descent, step bisection, trace (or post-state)
///         descent, node reveal, and the decision by proof or by the recompute oracle.
/// @dev Holds no funds. Many games run side by side, each with its own clocks; the owner (the task
///      market) reads `outcome` and moves the money.
contract DisputeGame is IDisputeGame {
    /// @notice Gas allowance of opening a game (the config and the game state are written once, and
    ///         the slots moves update are pre-set).
    uint256 public constant OPEN_GAS = 600_000;
    /// @notice Gas allowance of one move, fixed part; a move also pays `MOVE_GAS_PER_WIDTH` per
    ///         entry of the arity (the challenger passes back the defender's list beside its own).
    uint256 public constant MOVE_GAS_BASE = 60_000;
    uint256 public constant MOVE_GAS_PER_WIDTH = 2_600;
    /// @notice Gas allowance of the largest decision proof (a batch input of `BatchVerifier.MAX_BATCH_BYTES`,
    ///         about 1.5M gas).
    uint256 public constant PROOF_GAS = 2_000_000;
    /// @notice Largest state (entries) a post-state descent handles: bounds its rounds.
    uint256 public constant MAX_STATE_ENTRIES = 1 << 16;

    /// @notice Gas a metered call is charged besides what it measures: the transaction's base cost.
    uint256 public constant TX_BASE_GAS = 21_000;
    /// @notice Gas per calldata byte charged to a metered call (the non-zero byte price: an upper
    ///         bound of its calldata cost, floor pricing included).
    uint256 public constant CALLDATA_GAS_PER_BYTE = 40;
    /// @notice Gas charged for the meter's own update and the call's return, not measured.
    uint256 public constant METER_GAS = 6_000;

    bytes4 private constant CKPT = "CKPT";
    bytes4 private constant NODE = "NODE";
    bytes4 private constant DESC = "DESC";
    bytes4 private constant NDSC = "NDSC";
    bytes4 private constant STEN = "STEN";
    bytes4 private constant POUT = "POUT";
    bytes4 private constant PROG = "PROG";
    uint256 private constant REF_STATE = 1;
    uint256 private constant REF_BATCH = 2;
    uint256 private constant REF_CONST = 3;
    uint256 private constant REF_NODE = 4;

    /// @dev The first slot holds everything a move always writes (turn, clocks, count), so a move
    ///      that only posts a list updates one slot besides its list's hash.
    struct Game {
        Stage stage;
        Outcome outcome;
        Side toMove;
        bool checkpointsOpened; // the first bisection round proved the roots at lo and hi
        uint32 moves;
        uint64 defenderClock; // seconds left, not counting the running turn
        uint64 challengerClock;
        uint64 turnStartedAt;
        address owner;
        address[2] players;
        uint64 height;
        uint64 position;
        uint64 lo;
        uint64 hi;
        uint64 leafCount;
        uint64 inputIndex;
        uint64 arity; // the config's, beside the leaf count that every descent move reads
        bytes32[2] checkpointRoots;
        bytes32 agreedRoot;
        bytes32[2] current;
        bytes32 defenderTrace; // the defender's trace root: proofs open records in it (the
        // challenger's is only emitted, nothing reads it)
        bytes32 pending;
        bytes32 descHash;
        bytes32[2] outputsHash;
        uint256 questionId;
        uint256 elementGame; // the ElementReferee game of the Element stage (0: none)
    }

    /// @dev The fixed fields of a NODE record.
    struct NodeFields {
        uint256 index;
        bytes32 descHash;
        uint256 nIn;
        uint256 nOut;
    }

    /// @dev The disputed input of the defender's record and its reference in the descriptor.
    struct InputRef {
        bytes32 value;
        uint256 kind;
        uint256 a;
        uint256 b;
    }

    IRecomputeOracle private immutable _oracle;
    BatchVerifier private immutable _batches;
    address private immutable _deployer;
    address private _market;
    IElementReferee private _referee;
    uint256 private _count;
    mapping(uint256 gameId => Game) private _games;
    mapping(uint256 gameId => Config) private _configs;
    /// @dev Per game and side (0 defender, 1 challenger): gas (high 64 bits) and wei (low 192 bits)
    ///      the side's metered calls cost; the wei part starts at 1 so that no move writes a fresh slot.
    mapping(uint256 gameId => uint256[2]) private _meters;

    constructor(IRecomputeOracle oracle_) {
        _oracle = oracle_;
        // A child contract, so that the game stays under the code size limit; nothing to configure.
        _batches = new BatchVerifier();
        _deployer = msg.sender;
    }

    /// @inheritdoc IDisputeGame
    function bindMarket(address market_) external {
        if (msg.sender != _deployer) revert DisputeGameNotDeployer(msg.sender, _deployer);
        if (_market != address(0)) revert DisputeGameMarketAlreadyBound(_market);
        _market = market_;
        emit MarketBound(market_);
    }

    /// @inheritdoc IDisputeGame
    function bindReferee(IElementReferee referee_) external {
        if (msg.sender != _deployer) revert DisputeGameNotDeployer(msg.sender, _deployer);
        if (address(_referee) != address(0)) revert DisputeGameRefereeAlreadyBound(address(_referee));
        _referee = referee_;
        emit RefereeBound(address(referee_));
    }

    // ---- opening -------------------------------------------------------------------------

    /// @inheritdoc IDisputeGame
    function open(
        Config calldata cfg,
        address defender,
        bytes32 defenderCheckpoints,
        address challenger,
        bytes32 challengerCheckpoints
    ) external returns (uint256 gameId) {
        if (msg.sender != _market || msg.sender == address(0)) revert DisputeGameNotMarket(msg.sender, _market);
        _checkConfig(cfg);
        if (
            defender == challenger || defender == address(0) || challenger == address(0)
                || defenderCheckpoints == challengerCheckpoints
        ) revert DisputeGameNoDispute(defender, challenger, defenderCheckpoints);
        gameId = ++_count;
        _configs[gameId] = cfg;
        Game storage g = _games[gameId];
        g.owner = msg.sender;
        g.stage = Stage.CheckpointDescent;
        g.players = [defender, challenger];
        g.defenderClock = cfg.clock;
        g.challengerClock = cfg.clock;
        g.turnStartedAt = uint64(block.timestamp);
        uint256 n = cfg.steps / cfg.checkpointInterval + 1;
        g.leafCount = uint64(n);
        g.arity = cfg.arity;
        g.height = uint64(MerkleLib.depth(n));
        g.checkpointRoots = [defenderCheckpoints, challengerCheckpoints];
        g.current = [defenderCheckpoints, challengerCheckpoints];
        // Slots that moves overwrite start non-zero, so that the opener pays their first write and
        // every move stays a cheap update (nothing reads these values before a move sets them).
        bytes32 preset = bytes32(uint256(1));
        g.pending = preset;
        g.agreedRoot = preset;
        g.defenderTrace = preset;
        g.descHash = preset;
        _meters[gameId] = [uint256(1), uint256(1)];
        emit GameOpened(gameId, msg.sender, defender, challenger, defenderCheckpoints, challengerCheckpoints);
    }

    // ---- descents ------------------------------------------------------------------------

    /// @inheritdoc IDisputeGame
    function descend(uint256 gameId, bytes32[] calldata mine, bytes32[] calldata theirs)
        external
        metered(gameId)
    {
        Game storage g = _game(gameId);
        Stage stage = g.stage;
        if (
            stage != Stage.CheckpointDescent && stage != Stage.TraceDescent && stage != Stage.PostStateDescent
        ) {
            revert DisputeGameWrongStage(gameId, Stage.CheckpointDescent, stage);
        }
        Side side = _authorize(gameId, g);
        uint256 w = _postNodes(gameId, g, stage, side, mine);
        if (side == Side.Defender) {
            if (theirs.length != 0) revert DisputeGameWidth(theirs.length, 0);
            g.pending = keccak256(abi.encodePacked(mine));
            _pass(g, Side.Challenger);
            return;
        }
        if (theirs.length != w) revert DisputeGameWidth(theirs.length, w);
        _checkPending(g, keccak256(abi.encodePacked(theirs)));
        uint256 i;
        while (i < w && mine[i] == theirs[i]) ++i;
        _pass(g, Side.Defender);
        if (i == w) {
            // Equal lists under differing nodes would be a hash collision: they can only come from
            // the top of the trace descent, where the two trace roots are committed and agree.
            if (stage != Stage.TraceDescent || g.height != MerkleLib.depth(g.leafCount)) {
                revert DisputeGameNoDifference(gameId);
            }
            g.stage = Stage.PostStateCount;
            return;
        }
        uint256 t = _log2(w);
        uint64 height = uint64(g.height - t);
        uint64 position = uint64(g.position * w + i);
        g.current = [theirs[i], mine[i]];
        g.height = height;
        g.position = position;
        emit DescentNarrowed(gameId, stage, height, position);
        if (height == 0) _leafFound(gameId, g, stage);
    }

    /// @dev Checks the width of a descent move and its fold against the mover's node; returns the width.
    function _postNodes(uint256 gameId, Game storage g, Stage stage, Side side, bytes32[] calldata mine)
        private
        returns (uint256 w)
    {
        uint256 h = g.height;
        uint256 t = _log2(g.arity);
        if (t > h) t = h;
        w = 1 << t;
        if (mine.length != w) revert DisputeGameWidth(mine.length, w);
        bytes32 folded = _fold(mine, h - t, g.position * w, g.leafCount);
        _checkMine(gameId, g, stage, side, folded, h == MerkleLib.depth(g.leafCount));
        // Only the defender's list is published: the challenger must pass it back. The challenger's
        // list is in its transaction's calldata for anyone who wants it.
        if (side == Side.Defender) emit NodesPosted(gameId, side, stage, uint64(h), g.position, mine);
    }

    /// @dev Checks the mover's folded nodes against its current node (or its root, at the top).
    function _checkMine(uint256 gameId, Game storage g, Stage stage, Side side, bytes32 folded, bool atTop)
        private
    {
        uint256 s = uint8(side);
        if (atTop) {
            bytes32 root = MerkleLib.listRoot(g.leafCount, folded);
            if (stage == Stage.TraceDescent) {
                // Only the defender's trace root is kept (proofs open records in it) and published.
                if (side == Side.Defender) {
                    g.defenderTrace = root;
                    emit TraceCommitted(gameId, side, root);
                }
                return;
            }
            folded = root;
        }
        if (folded != g.current[s]) revert DisputeGameFoldMismatch(folded, g.current[s]);
    }

    /// @dev A descent reached its first differing leaf `g.position`.
    function _leafFound(uint256 gameId, Game storage g, Stage stage) private {
        if (stage == Stage.CheckpointDescent) {
            uint256 j = g.position;
            if (j == 0) {
                // Both lists open leaf 0 to the task's initial state at submission (TaskMarket), so
                // a market game never gets here; a game opened without that check cannot be decided.
                _resolve(gameId, g, Outcome.NoDecision);
                return;
            }
            uint64 c = _configs[gameId].checkpointInterval;
            g.lo = uint64(j - 1) * c;
            g.hi = uint64(j) * c;
            g.stage = Stage.StepBisection;
        } else if (stage == Stage.TraceDescent) {
            g.stage = Stage.NodeReveal;
        } else {
            g.stage = Stage.PostStateProof;
        }
    }

    /// @inheritdoc IDisputeGame
    function openPostStateCount(uint256 gameId, uint64 count, bytes32 preTop) external metered(gameId) {
        Game storage g = _begin(gameId, Stage.PostStateCount);
        if (count == 0 || count > MAX_STATE_ENTRIES) {
            revert DisputeGameTooManyEntries(count, MAX_STATE_ENTRIES);
        }
        bytes32 root = MerkleLib.listRoot(count, preTop);
        if (root != g.agreedRoot) revert DisputeGameFoldMismatch(root, g.agreedRoot);
        g.leafCount = count;
        g.height = uint64(MerkleLib.depth(count));
        g.position = 0;
        // `current` still holds the two post-state roots: the equal trace lists left it untouched.
        g.stage = Stage.PostStateDescent;
        _pass(g, Side.Defender);
        emit PostStateCountOpened(gameId, count);
    }

    // ---- bisection -----------------------------------------------------------------------

    /// @inheritdoc IDisputeGame
    function bisect(
        uint256 gameId,
        bytes32[] calldata mine,
        bytes32[] calldata theirs,
        bytes32[] calldata loProof
    ) external metered(gameId) {
        Game storage g = _begin(gameId, Stage.StepBisection);
        uint256 span = g.hi - g.lo;
        uint256 arity = g.arity;
        uint256 w = arity < span ? arity : span;
        if (mine.length != w + 1) revert DisputeGameWidth(mine.length, w + 1);
        Side side = _checkHiRoot(gameId, g, mine);
        if (side == Side.Defender) {
            if (theirs.length != 0) revert DisputeGameWidth(theirs.length, 0);
            _bisectDefender(gameId, g, mine[0], loProof);
            g.pending = keccak256(abi.encodePacked(mine));
            _pass(g, Side.Challenger);
            return;
        }
        if (loProof.length != 0) revert DisputeGameWidth(loProof.length, 0);
        if (theirs.length != w + 1) revert DisputeGameWidth(theirs.length, w + 1);
        _checkPending(g, keccak256(abi.encodePacked(theirs)));
        if (mine[0] != theirs[0]) revert DisputeGameEndpointMismatch(mine[0], theirs[0]);
        // mine[w] != theirs[w]: both were checked against the two differing leaves (or roots) at hi.
        uint256 i = 1;
        while (i < w && mine[i] == theirs[i]) ++i;
        g.checkpointsOpened = true;
        g.agreedRoot = theirs[i - 1];
        g.current = [theirs[i], mine[i]];
        _narrowInterval(gameId, g, span, w, i);
    }

    /// @dev Checks the mover's root at hi: against its differing checkpoint leaf in the first round,
    ///      else against its root at hi from the previous round.
    function _checkHiRoot(uint256 gameId, Game storage g, bytes32[] calldata mine)
        private
        returns (Side side)
    {
        side = g.toMove;
        bytes32 own = g.current[uint8(side)];
        bytes32 hiRoot = mine[mine.length - 1];
        if (!g.checkpointsOpened) {
            bytes32 leaf = _ckptLeaf(g.hi, hiRoot);
            if (leaf != own) revert DisputeGameRecordMismatch(leaf, own);
        } else if (hiRoot != own) {
            revert DisputeGameEndpointMismatch(hiRoot, own);
        }
        if (side == Side.Defender) emit RootsPosted(gameId, side, g.lo, g.hi, mine);
    }

    /// @dev The defender's root at lo: proven against its checkpoint list in the first round, else
    ///      the agreed root.
    function _bisectDefender(uint256 gameId, Game storage g, bytes32 loRoot, bytes32[] calldata loProof)
        private
        view
    {
        if (g.checkpointsOpened) {
            if (loProof.length != 0) revert DisputeGameWidth(loProof.length, 0);
            if (loRoot != g.agreedRoot) revert DisputeGameEndpointMismatch(loRoot, g.agreedRoot);
            return;
        }
        Config storage cfg = _configs[gameId];
        uint256 count = cfg.steps / cfg.checkpointInterval + 1;
        uint256 j = g.hi / cfg.checkpointInterval;
        MerkleLib.verify(g.checkpointRoots[0], count, j - 1, _ckptLeaf(g.lo, loRoot), loProof);
    }

    /// @dev Keeps sub-interval `i` of `w`; at one step, the game moves to the trace descent.
    function _narrowInterval(uint256 gameId, Game storage g, uint256 span, uint256 w, uint256 i) private {
        uint256 lo = g.lo;
        uint64 newLo = uint64(lo + ((i - 1) * span) / w);
        uint64 newHi = uint64(lo + (i * span) / w);
        g.lo = newLo;
        g.hi = newHi;
        _pass(g, Side.Defender);
        if (newHi - newLo > 1) {
            emit IntervalNarrowed(gameId, newLo, newHi);
            return;
        }
        // `current` now holds the two post-state roots; the trace descent's first level does not
        // read it, and replaces it only if the traces differ (the post-state path needs it).
        uint256 m = _configs[gameId].nodeCount;
        g.leafCount = uint64(m);
        g.height = uint64(MerkleLib.depth(m));
        g.position = 0;
        g.stage = Stage.TraceDescent;
        emit StepIsolated(gameId, newLo, g.agreedRoot, g.current[0], g.current[1]);
    }

    // ---- node reveal ---------------------------------------------------------------------

    /// @inheritdoc IDisputeGame
    function revealNode(
        uint256 gameId,
        bytes calldata record,
        bytes calldata theirRecord,
        bytes calldata descriptor,
        bytes32[] calldata graphProof
    ) external metered(gameId) {
        _revealNode(gameId, record, theirRecord, descriptor, graphProof);
    }

    function _revealNode(
        uint256 gameId,
        bytes calldata record,
        bytes calldata theirRecord,
        bytes calldata descriptor,
        bytes32[] calldata graphProof
    ) private {
        Game storage g = _begin(gameId, Stage.NodeReveal);
        Side side = g.toMove;
        NodeFields memory mineF = _openRecord(record, g.current[uint8(side)], g.position);
        emit NodeRevealed(gameId, side, g.position, record);
        if (side == Side.Defender) {
            if (theirRecord.length != 0) revert DisputeGameWidth(theirRecord.length, 0);
            _checkDescriptor(descriptor, mineF);
            Config storage cfg = _configs[gameId];
            MerkleLib.verify(
                cfg.graphRoot,
                cfg.nodeCount,
                g.position,
                MerkleLib.leafHash(abi.encodePacked(NDSC, uint256(g.position), mineF.descHash)),
                graphProof
            );
            g.descHash = mineF.descHash;
            _pass(g, Side.Challenger);
            return;
        }
        if (graphProof.length != 0) revert DisputeGameWidth(graphProof.length, 0);
        _compareRecords(gameId, g, record, theirRecord, descriptor, mineF);
    }

    /// @dev The challenger's reveal: the first differing input goes to the defender's proof; equal
    ///      inputs send the node to the element phase if the referee covers its operator, else to the oracle.
    function _compareRecords(
        uint256 gameId,
        Game storage g,
        bytes calldata record,
        bytes calldata theirRecord,
        bytes calldata descriptor,
        NodeFields memory mineF
    ) private {
        NodeFields memory theirF = _openRecord(theirRecord, g.current[0], g.position);
        if (mineF.descHash != g.descHash) revert DisputeGameDescriptorMismatch(mineF.descHash, g.descHash);
        if (mineF.nIn != theirF.nIn || mineF.nOut != theirF.nOut) revert DisputeGameMalformed(4, mineF.nIn);
        for (uint256 k; k < mineF.nIn; ++k) {
            if (_word(record, 100 + 32 * k) != _word(theirRecord, 100 + 32 * k)) {
                bytes32 dh = sha256(descriptor);
                if (dh != g.descHash) revert DisputeGameDescriptorMismatch(dh, g.descHash);
                g.inputIndex = uint64(k);
                g.stage = Stage.InputProof;
                _pass(g, Side.Defender);
                emit InputDisputed(gameId, g.position, k, uint256(_word(descriptor, 132 + 96 * k)));
                return;
            }
        }
        // Same node, same descriptor, same inputs, different records: the outputs differ.
        _decideNode(gameId, g, record, theirRecord, descriptor, mineF.nIn, mineF.nOut);
    }

    /// @dev The records agree on every input: the element phase decides a node whose operator the
    ///      referee covers (one output), the oracle any other.
    function _decideNode(
        uint256 gameId,
        Game storage g,
        bytes calldata record,
        bytes calldata theirRecord,
        bytes calldata descriptor,
        uint256 nIn,
        uint256 nOut
    ) private {
        uint256 outAt = 132 + 32 * nIn;
        g.outputsHash = [sha256(theirRecord[outAt:]), sha256(record[outAt:])];
        _pass(g, Side.Defender);
        bytes32[] memory inputs = new bytes32[](nIn);
        for (uint256 k; k < nIn; ++k) {
            inputs[k] = _word(record, 100 + 32 * k);
        }
        if (nOut == 1) {
            bytes32[2] memory outs;
            outs[0] = _word(theirRecord, outAt);
            outs[1] = _word(record, outAt);
            uint256 id = _openElement(g, descriptor, inputs, outs);
            if (id != 0) {
                g.elementGame = id;
                g.stage = Stage.Element;
                emit ElementOpened(gameId, id);
                return;
            }
        }
        _ask(gameId, g, inputs);
    }

    /// @dev Asks the oracle for node `g.position` on the agreed inputs (after every state change).
    function _ask(uint256 gameId, Game storage g, bytes32[] memory inputs) private {
        g.stage = Stage.Oracle;
        uint256 qid = _oracle.ask(_configs[gameId].programHash, g.position, inputs, g.players);
        g.questionId = qid;
        emit OracleAsked(gameId, qid);
    }

    /// @dev Opens the element game of a one-output node whose operator the referee covers; 0 (nothing
    ///      opened) when no referee is bound or the operator is not in its table.
    function _openElement(Game storage g, bytes calldata descriptor, bytes32[] memory inputs, bytes32[2] memory outs)
        private
        returns (uint256)
    {
        if (address(_referee) == address(0)) return 0;
        {
            // The operator is read from the descriptor the defender proved in the graph root.
            bytes32 dh = sha256(descriptor);
            if (dh != g.descHash) revert DisputeGameDescriptorMismatch(dh, g.descHash);
        }
        // Each side keeps its remaining clock (at least a second: the referee refuses a zero clock).
        uint64[2] memory clocks = [g.defenderClock, g.challengerClock];
        if (clocks[0] == 0) clocks[0] = 1;
        if (clocks[1] == 0) clocks[1] = 1;
        address[2] memory players = g.players;
        return _referee.openNode(
            bytes32(descriptor[4:36]), bytes32(descriptor[36:68]), inputs, outs, players, clocks, g.arity
        );
    }

    // ---- decisions -----------------------------------------------------------------------

    /// @inheritdoc IDisputeGame
    function proveStateInput(
        uint256 gameId,
        bytes calldata record,
        bytes calldata descriptor,
        EntryProof calldata entry
    ) external metered(gameId) {
        (Game storage g, InputRef memory r) = _inputContext(gameId, record, descriptor, REF_STATE);
        MerkleLib.verify(
            g.agreedRoot, entry.count, entry.index, _stenLeaf(bytes32(r.a), r.value), entry.siblings
        );
        _resolve(gameId, g, Outcome.DefenderWins);
    }

    /// @inheritdoc IDisputeGame
    function proveConstantInput(
        uint256 gameId,
        bytes calldata record,
        bytes calldata descriptor,
        bytes32[4] calldata programRoots,
        EntryProof calldata entry
    ) external metered(gameId) {
        (Game storage g, InputRef memory r) = _inputContext(gameId, record, descriptor, REF_CONST);
        _checkProgram(_configs[gameId], programRoots);
        MerkleLib.verify(
            programRoots[3], entry.count, entry.index, _stenLeaf(bytes32(r.a), r.value), entry.siblings
        );
        _resolve(gameId, g, Outcome.DefenderWins);
    }

    /// @inheritdoc IDisputeGame
    function proveNodeInput(
        uint256 gameId,
        bytes calldata record,
        bytes calldata descriptor,
        bytes calldata sourceRecord,
        bytes32[] calldata sourceProof
    ) external metered(gameId) {
        _proveNodeInput(gameId, record, descriptor, sourceRecord, sourceProof);
    }

    function _proveNodeInput(
        uint256 gameId,
        bytes calldata record,
        bytes calldata descriptor,
        bytes calldata sourceRecord,
        bytes32[] calldata sourceProof
    ) private {
        (Game storage g, InputRef memory r) = _inputContext(gameId, record, descriptor, REF_NODE);
        // Records before the first differing one are the same in both traces; a reference to a
        // later node is not a program in topological order.
        if (r.a >= g.position) revert DisputeGameMalformed(3, r.a);
        _checkOutput(sourceRecord, r.a, r.b, r.value);
        MerkleLib.verify(
            g.defenderTrace,
            _configs[gameId].nodeCount,
            r.a,
            MerkleLib.leafHashCalldata(sourceRecord),
            sourceProof
        );
        _resolve(gameId, g, Outcome.DefenderWins);
    }

    /// @inheritdoc IDisputeGame
    function proveBatchInput(
        uint256 gameId,
        bytes calldata record,
        bytes calldata descriptor,
        BatchProof calldata batch
    ) external metered(gameId) {
        (Game storage g, InputRef memory r) = _inputContext(gameId, record, descriptor, REF_BATCH);
        Config storage cfg = _configs[gameId];
        _batches.verify(
            BatchVerifier.Schedule({
                datasetRoot: cfg.datasetRoot,
                datasetSize: cfg.datasetSize,
                batchSize: cfg.batchSize,
                seed: cfg.seed,
                step: g.lo,
                nameHash: bytes32(r.a),
                commitment: r.value
            }),
            batch
        );
        _resolve(gameId, g, Outcome.DefenderWins);
    }

    /// @inheritdoc IDisputeGame
    function provePostState(uint256 gameId, PostStateProof calldata p) external metered(gameId) {
        _provePostState(gameId, p);
    }

    function _provePostState(uint256 gameId, PostStateProof calldata p) private {
        Game storage g = _begin(gameId, Stage.PostStateProof);
        Config storage cfg = _configs[gameId];
        bytes32 leaf = _stenLeaf(p.nameHash, p.commitment);
        if (leaf != g.current[0]) revert DisputeGameRecordMismatch(leaf, g.current[0]);
        // The post-state keeps the pre-state's names: entry e has the same name before the step.
        MerkleLib.verify(
            g.agreedRoot, g.leafCount, g.position, _stenLeaf(p.nameHash, p.preCommitment), p.preSiblings
        );
        _checkProgram(cfg, p.programRoots);
        MerkleLib.verify(
            p.programRoots[2],
            p.outputCount,
            p.outputIndex,
            MerkleLib.leafHash(
                abi.encodePacked(POUT, uint256(1), p.nameHash, p.typeHash, p.ref[0], p.ref[1], p.ref[2])
            ),
            p.outputSiblings
        );
        if (p.ref[0] == REF_NODE) {
            _checkOutput(p.sourceRecord, p.ref[1], p.ref[2], p.commitment);
            MerkleLib.verify(
                g.defenderTrace,
                cfg.nodeCount,
                p.ref[1],
                MerkleLib.leafHashCalldata(p.sourceRecord),
                p.sourceSiblings
            );
        } else if (p.ref[0] == REF_STATE) {
            MerkleLib.verify(
                g.agreedRoot,
                p.sourceEntry.count,
                p.sourceEntry.index,
                _stenLeaf(bytes32(p.ref[1]), p.commitment),
                p.sourceEntry.siblings
            );
        } else {
            revert DisputeGameWrongReference(p.ref[0], REF_NODE);
        }
        _resolve(gameId, g, Outcome.DefenderWins);
    }

    /// @inheritdoc IDisputeGame
    function resolveOracle(uint256 gameId) external metered(gameId) {
        Game storage g = _game(gameId);
        if (g.stage != Stage.Oracle) revert DisputeGameWrongStage(gameId, Stage.Oracle, g.stage);
        (IRecomputeOracle.QuestionStatus status, bytes32 answer) = _oracle.result(g.questionId);
        if (status == IRecomputeOracle.QuestionStatus.Final) {
            if (answer == g.outputsHash[0]) _resolve(gameId, g, Outcome.DefenderWins);
            else if (answer == g.outputsHash[1]) _resolve(gameId, g, Outcome.ChallengerWins);
            else _resolve(gameId, g, Outcome.BothLose);
        } else if (status == IRecomputeOracle.QuestionStatus.Abandoned) {
            _resolve(gameId, g, Outcome.NoDecision);
        } else {
            revert DisputeGameOracleNotDone(g.questionId, uint8(status));
        }
    }

    /// @inheritdoc IDisputeGame
    function resolveElement(uint256 gameId) external metered(gameId) {
        Game storage g = _game(gameId);
        if (g.stage != Stage.Element) revert DisputeGameWrongStage(gameId, Stage.Element, g.stage);
        // Only the game this contract opened (and owns) is read: nobody else's referee game decides.
        IElementReferee.Outcome o = _referee.ownedOutcome(g.elementGame);
        if (o == IElementReferee.Outcome.DefenderWins) _resolve(gameId, g, Outcome.DefenderWins);
        else if (o == IElementReferee.Outcome.ChallengerWins) _resolve(gameId, g, Outcome.ChallengerWins);
        else if (o == IElementReferee.Outcome.BothLose) _resolve(gameId, g, Outcome.BothLose);
        else if (o == IElementReferee.Outcome.Inapplicable) _ask(gameId, g, _referee.inputsOf(g.elementGame));
        else revert DisputeGameElementNotDone(g.elementGame);
    }

    /// @inheritdoc IDisputeGame
    function timeout(uint256 gameId) external metered(gameId) {
        Game storage g = _game(gameId);
        Stage stage = g.stage;
        // In the Element stage the clocks run in the referee's game (its own `timeout`).
        if (stage == Stage.Oracle || stage >= Stage.Resolved) revert DisputeGameNotPlaying(gameId, stage);
        Side side = g.toMove;
        uint256 deadline = uint256(g.turnStartedAt) + _clock(g, side);
        if (block.timestamp <= deadline) revert DisputeGameClockRunning(gameId, deadline);
        if (side == Side.Defender) g.defenderClock = 0;
        else g.challengerClock = 0;
        _resolve(gameId, g, side == Side.Defender ? Outcome.ChallengerWins : Outcome.DefenderWins);
    }

    // ---- views ---------------------------------------------------------------------------

    /// @inheritdoc IDisputeGame
    function outcome(uint256 gameId) external view returns (Outcome) {
        return _game(gameId).outcome;
    }

    /// @inheritdoc IDisputeGame
    function gameOf(uint256 gameId) external view returns (GameView memory v) {
        Game storage g = _game(gameId);
        v.owner = g.owner;
        v.players = g.players;
        v.checkpointRoots = g.checkpointRoots;
        v.stage = g.stage;
        v.outcome = g.outcome;
        v.toMove = g.toMove;
        v.halfDone = g.toMove == Side.Challenger;
        v.clockLeft = [g.defenderClock, g.challengerClock];
        v.turnStartedAt = g.turnStartedAt;
        v.height = g.height;
        v.position = g.position;
        v.lo = g.lo;
        v.hi = g.hi;
        v.leafCount = g.leafCount;
        v.agreedRoot = g.agreedRoot;
        v.current = g.current;
        v.defenderTrace = g.defenderTrace;
        v.inputIndex = g.inputIndex;
        v.questionId = g.questionId;
        v.elementGame = g.elementGame;
        v.moves = g.moves;
    }

    /// @inheritdoc IDisputeGame
    function configOf(uint256 gameId) external view returns (Config memory) {
        _game(gameId);
        return _configs[gameId];
    }

    /// @inheritdoc IDisputeGame
    function gameCount() external view returns (uint256) {
        return _count;
    }

    /// @inheritdoc IDisputeGame
    function oracle() external view returns (address) {
        return address(_oracle);
    }

    /// @inheritdoc IDisputeGame
    function referee() external view returns (address) {
        return address(_referee);
    }

    /// @inheritdoc IDisputeGame
    function market() external view returns (address) {
        return _market;
    }

    /// @inheritdoc IDisputeGame
    function roundBound(Config calldata cfg) public pure returns (uint256 rounds) {
        _checkConfig(cfg);
        uint256 t = _log2(cfg.arity);
        rounds = _ceilDiv(MerkleLib.depth(cfg.steps / cfg.checkpointInterval + 1), t);
        uint256 span = cfg.checkpointInterval;
        uint256 b;
        while (span > 1) {
            uint256 w = cfg.arity < span ? cfg.arity : span;
            span = (span + w - 1) / w;
            ++b;
        }
        // The first bisection round also opens the checkpoints, so there is one even when c = 1.
        rounds += b == 0 ? 1 : b;
        uint256 traceDescent = _ceilDiv(MerkleLib.depth(cfg.nodeCount), t);
        // Trace path: descent, reveal, input proof. Post-state path: the trace top, the count, the
        // post-state descent, the proof.
        // The element path replaces the input proof by the element game: header, chunk descent (an
        // output of up to MAX_STATE_ENTRIES chunks, 256 MiB), chunk, proof; for mm and addmm the proof is
        // DotReferee's claim, one round per N-ary split of the K prefix sums, and the term (docs/game.md 2.8).
        // With every tensor at most 2^26 fp32 values (A [M, K], B [K, N], C [M, N]), MNK <= 2^39, so the
        // chunk descent's depth (log2 MN - 10, rounded up) and the split's (log2 K, rounded up) add to at most
        // 31: at most ceil(31 / t) + 1 rounds for both.
        uint256 depth = MerkleLib.depth(MAX_STATE_ENTRIES);
        uint256 tracePath = (traceDescent == 0 ? 1 : traceDescent) + 5 + _ceilDiv(depth + 15, t);
        uint256 postPath = 3 + _ceilDiv(depth, t);
        rounds += tracePath > postPath ? tracePath : postPath;
    }

    /// @inheritdoc IDisputeGame
    function honestGasBound(Config calldata cfg) external pure returns (uint256) {
        return OPEN_GAS + roundBound(cfg) * (MOVE_GAS_BASE + MOVE_GAS_PER_WIDTH * cfg.arity) + PROOF_GAS;
    }

    /// @inheritdoc IDisputeGame
    function timeBound(Config calldata cfg) external view returns (uint256) {
        _checkConfig(cfg);
        // Deadlines are inclusive, so the last timeout ends a second later; the oracle's bound has its
        // own seconds of slack. The element game runs on the two remaining clocks (each at least a
        // second), its last timeout a second after them: at most 2 seconds more than the clocks.
        return 2 * uint256(cfg.clock) + 3 + _oracle.maxResolutionTime();
    }

    /// @inheritdoc IDisputeGame
    function meterOf(uint256 gameId) external view returns (uint256[2] memory gas, uint256[2] memory weiSpent) {
        _game(gameId);
        for (uint256 s; s < 2; ++s) {
            uint256 m = _meters[gameId][s];
            gas[s] = m >> 192;
            weiSpent[s] = (m & type(uint192).max) - 1;
        }
    }

    // ---- internals -----------------------------------------------------------------------

    /// @dev Charges a player's call to its side's meter (docs/game.md, "Compensation").
    modifier metered(uint256 gameId) {
        uint256 start = gasleft();
        _;
        _meter(gameId, start);
    }

    /// @dev Adds the gas used since `start` (plus the transaction's base and calldata cost and the
    ///      meter's own) at the transaction's gas price to the caller's side, if it is a player.
    function _meter(uint256 gameId, uint256 start) private {
        Game storage g = _games[gameId];
        uint256 s;
        if (msg.sender == g.players[0]) s = 0;
        else if (msg.sender == g.players[1]) s = 1;
        else return;
        uint256 used = start - gasleft() + TX_BASE_GAS + CALLDATA_GAS_PER_BYTE * msg.data.length + METER_GAS;
        uint256 m = _meters[gameId][s];
        // Cannot overflow in practice: 2^64 gas and 2^192 wei are far beyond any game.
        unchecked {
            _meters[gameId][s] = (((m >> 192) + used) << 192) | ((m & type(uint192).max) + used * tx.gasprice);
        }
    }

    function _game(uint256 gameId) private view returns (Game storage g) {
        g = _games[gameId];
        if (g.stage == Stage.None) revert DisputeGameUnknown(gameId);
    }

    /// @dev The game, checked to be in `stage` with the caller to move inside its clock.
    function _begin(uint256 gameId, Stage stage) private view returns (Game storage g) {
        g = _game(gameId);
        if (g.stage != stage) revert DisputeGameWrongStage(gameId, stage, g.stage);
        _authorize(gameId, g);
    }

    function _authorize(uint256 gameId, Game storage g) private view returns (Side side) {
        side = g.toMove;
        address expected = g.players[uint8(side)];
        if (msg.sender != expected) revert DisputeGameNotYourTurn(gameId, msg.sender, expected);
        uint256 deadline = uint256(g.turnStartedAt) + _clock(g, side);
        if (block.timestamp > deadline) revert DisputeGameClockExpired(gameId, deadline);
    }

    function _clock(Game storage g, Side side) private view returns (uint64) {
        return side == Side.Defender ? g.defenderClock : g.challengerClock;
    }

    /// @dev Charges the mover's clock and hands the turn to `next` (one slot written).
    function _pass(Game storage g, Side next) private {
        uint64 used = uint64(block.timestamp) - g.turnStartedAt;
        // _authorize checked block.timestamp <= turnStartedAt + the mover's clock: no underflow.
        unchecked {
            if (g.toMove == Side.Defender) g.defenderClock -= used;
            else g.challengerClock -= used;
        }
        g.turnStartedAt = uint64(block.timestamp);
        g.toMove = next;
        ++g.moves;
    }

    function _resolve(uint256 gameId, Game storage g, Outcome o) private {
        g.stage = Stage.Resolved;
        g.outcome = o;
        emit GameResolved(gameId, o);
    }

    function _checkPending(Game storage g, bytes32 computed) private view {
        if (computed != g.pending) revert DisputeGameOpponentMismatch(computed, g.pending);
    }

    /// @dev Folds `nodes` (at height `baseHeight`, positions from `basePos`) up to one node with the
    ///      padding rule of docs/commitments.md: a position whose subtree holds no leaf is PAD.
    function _fold(bytes32[] calldata nodes, uint256 baseHeight, uint256 basePos, uint256 n)
        private
        pure
        returns (bytes32)
    {
        uint256 w = nodes.length;
        bytes32[] memory level = new bytes32[](w);
        for (uint256 i; i < w; ++i) {
            bytes32 x = nodes[i];
            if (((basePos + i) << baseHeight) >= n && x != MerkleLib.PAD) revert DisputeGamePaddingNode(i);
            level[i] = x;
        }
        uint256 height = baseHeight;
        uint256 pos = basePos;
        while (w > 1) {
            w >>= 1;
            ++height;
            pos >>= 1;
            for (uint256 i; i < w; ++i) {
                level[i] = ((pos + i) << height) >= n
                    ? MerkleLib.PAD
                    : MerkleLib.nodeHash(level[2 * i], level[2 * i + 1]);
            }
        }
        return level[0];
    }

    /// @dev Checks a NODE record's leaf hash against `leaf` and its index against `index`.
    function _openRecord(bytes calldata record, bytes32 leaf, uint256 index)
        private
        pure
        returns (NodeFields memory f)
    {
        bytes32 computed = MerkleLib.leafHashCalldata(record);
        if (computed != leaf) revert DisputeGameRecordMismatch(computed, leaf);
        f = _parseNode(record);
        if (f.index != index) revert DisputeGameMalformed(3, f.index);
    }

    /// @dev The fixed fields of a NODE record; reverts unless its tag and length are right.
    function _parseNode(bytes calldata record) private pure returns (NodeFields memory f) {
        if (record.length < 132 || bytes4(record[0:4]) != NODE) {
            revert DisputeGameMalformed(1, record.length);
        }
        f.index = uint256(_word(record, 4));
        f.descHash = _word(record, 36);
        f.nIn = uint256(_word(record, 68));
        if (f.nIn > (record.length - 132) / 32) revert DisputeGameMalformed(2, record.length);
        f.nOut = uint256(_word(record, 100 + 32 * f.nIn));
        if (f.nOut != (record.length - 132) / 32 - f.nIn || record.length % 32 != 4) {
            revert DisputeGameMalformed(2, record.length);
        }
    }

    /// @dev Checks that `descriptor` is the descriptor the record names and agrees with its counts.
    function _checkDescriptor(bytes calldata descriptor, NodeFields memory f) private pure {
        bytes32 dh = sha256(descriptor);
        if (dh != f.descHash) revert DisputeGameDescriptorMismatch(dh, f.descHash);
        if (descriptor.length < 132 || bytes4(descriptor[0:4]) != DESC) {
            revert DisputeGameMalformed(1, descriptor.length);
        }
        if (uint256(_word(descriptor, 68)) != f.nIn || uint256(_word(descriptor, 100)) != f.nOut) {
            revert DisputeGameMalformed(4, f.nIn);
        }
        if (descriptor.length != 132 + 96 * f.nIn + 32 * f.nOut) {
            revert DisputeGameMalformed(2, descriptor.length);
        }
    }

    /// @dev Checks that output `slot` of NODE record `sourceRecord` (of node `index`) is `value`.
    function _checkOutput(bytes calldata sourceRecord, uint256 index, uint256 slot, bytes32 value)
        private
        pure
    {
        NodeFields memory src = _parseNode(sourceRecord);
        if (src.index != index) revert DisputeGameMalformed(3, src.index);
        if (slot >= src.nOut) revert DisputeGameMalformed(5, slot);
        bytes32 out = _word(sourceRecord, 132 + 32 * (src.nIn + slot));
        if (out != value) revert DisputeGameValueMismatch(out, value);
    }

    /// @dev The defender's disputed input and its reference, checked to be of kind `kind`.
    function _inputContext(uint256 gameId, bytes calldata record, bytes calldata descriptor, uint256 kind)
        private
        view
        returns (Game storage g, InputRef memory r)
    {
        g = _begin(gameId, Stage.InputProof);
        bytes32 leaf = MerkleLib.leafHashCalldata(record);
        if (leaf != g.current[0]) revert DisputeGameRecordMismatch(leaf, g.current[0]);
        bytes32 dh = sha256(descriptor);
        if (dh != g.descHash) revert DisputeGameDescriptorMismatch(dh, g.descHash);
        // Both were validated at the reveal (same leaf, same descriptor hash): offsets are in range.
        uint256 k = g.inputIndex;
        r.value = _word(record, 100 + 32 * k);
        r.kind = uint256(_word(descriptor, 132 + 96 * k));
        r.a = uint256(_word(descriptor, 164 + 96 * k));
        r.b = uint256(_word(descriptor, 196 + 96 * k));
        if (r.kind != kind) revert DisputeGameWrongReference(r.kind, kind);
    }

    function _checkProgram(Config storage cfg, bytes32[4] calldata roots) private view {
        bytes32 computed = sha256(abi.encodePacked(PROG, uint256(1), roots[0], roots[1], roots[2], roots[3]));
        if (computed != cfg.programHash) revert DisputeGameProgramMismatch(computed, cfg.programHash);
        if (roots[0] != cfg.graphRoot) revert DisputeGameProgramMismatch(roots[0], cfg.graphRoot);
    }

    function _ckptLeaf(uint256 step, bytes32 root) private pure returns (bytes32) {
        return MerkleLib.leafHash(abi.encodePacked(CKPT, step, root));
    }

    function _stenLeaf(bytes32 nameHash, bytes32 commitment) private pure returns (bytes32) {
        return MerkleLib.leafHash(abi.encodePacked(STEN, nameHash, commitment));
    }

    function _word(bytes calldata data, uint256 at) private pure returns (bytes32) {
        return bytes32(data[at:at + 32]);
    }

    function _checkConfig(Config calldata cfg) private pure {
        if (cfg.steps == 0) revert DisputeGameBadConfig(1, 0);
        if (
            cfg.checkpointInterval == 0 || cfg.steps % cfg.checkpointInterval != 0
                || cfg.steps / cfg.checkpointInterval >= MerkleLib.MAX_COUNT
        ) {
            revert DisputeGameBadConfig(2, cfg.checkpointInterval);
        }
        if (cfg.nodeCount == 0) revert DisputeGameBadConfig(3, 0);
        if (cfg.datasetSize == 0) revert DisputeGameBadConfig(4, 0);
        if (cfg.batchSize == 0) revert DisputeGameBadConfig(5, 0);
        if (cfg.arity < 2 || cfg.arity > 64 || cfg.arity & (cfg.arity - 1) != 0) {
            revert DisputeGameBadConfig(6, cfg.arity);
        }
        if (cfg.clock == 0) revert DisputeGameBadConfig(7, 0);
    }

    /// @dev log2 of a power of two in [2, 64] (checked by _checkConfig).
    function _log2(uint256 x) private pure returns (uint256 r) {
        while (x > 1) {
            x >>= 1;
            ++r;
        }
    }

    function _ceilDiv(uint256 a, uint256 b) private pure returns (uint256) {
        return (a + b - 1) / b;
    }
}
