// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {Test, Vm} from "forge-std/Test.sol";

import {BatchVerifier} from "../src/BatchVerifier.sol";
import {DisputeGame} from "../src/DisputeGame.sol";
import {RecomputeOracle} from "../src/RecomputeOracle.sol";
import {ElementReferee} from "../src/ElementReferee.sol";
import {TraceReferee} from "../src/TraceReferee.sol";
import {SumReferee} from "../src/SumReferee.sol";
import {IElementReferee} from "../src/interfaces/IElementReferee.sol";
import {IDisputeGame} from "../src/interfaces/IDisputeGame.sol";
import {IRecomputeOracle} from "../src/interfaces/IRecomputeOracle.sol";
import {MerkleRootMismatch} from "../src/lib/Errors.sol";
import {
    DisputeGameUnknown,
    DisputeGameBadConfig,
    DisputeGameNoDispute,
    DisputeGameWrongStage,
    DisputeGameNotPlaying,
    DisputeGameNotMarket,
    DisputeGameNotDeployer,
    DisputeGameMarketAlreadyBound,
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
    DisputeGameBatchTooLarge,
    DisputeGameTooManyEntries,
    DisputeGameOracleNotDone
} from "../src/lib/GameErrors.sol";
import {Lie, Player, Players, Task} from "./utils/Player.sol";
import {Reference} from "./utils/Reference.sol";
import {Trees} from "./utils/Trees.sol";
import {OracleSetup} from "./utils/OracleSetup.sol";

/// @notice Deploys the game with a real recompute oracle and plays matches between an honest
///         player and a liar (utils/Player.sol), one move at a time or to the end.
abstract contract DisputeGameBase is Test {
    uint256 internal constant FEE = 0.01 ether;
    uint256 internal constant MIN_BOND = 1 ether;
    uint256 internal constant CHALLENGE_BOND = 0.5 ether;
    uint256 internal constant SILENCE_SLASH = 0.1 ether;
    uint64 internal constant ANSWER_WINDOW = 1 hours;
    uint64 internal constant EXIT_DELAY = 1 days;
    uint8 internal constant COMMITTEE_SIZE = 1;
    uint8 internal constant MAX_ATTEMPTS = 1;
    uint64 internal constant CLOCK = 1 days;
    uint256 internal constant NEVER = type(uint256).max;

    RecomputeOracle internal oracle;
    DisputeGame internal game;
    address internal market = makeAddr("market");
    address internal defender = makeAddr("defender");
    address internal challenger = makeAddr("challenger");
    address internal oracleNode = makeAddr("oracle node");

    /// @notice A game between `players[0]` (defender) and `players[1]` (challenger).
    struct Match {
        uint256 id;
        Player[2] players;
        address[2] accounts;
        uint256 honestSide; // 0: the honest player defends; 1: it challenges
        uint256 stopAt; // the liar stops (and times out) before its move number `stopAt`
        bytes32[] posted; // the defender's last descent nodes or bisection roots
        bytes revealed; // the defender's revealed record
        uint256[2] moves;
        // the last move played: who, in which stage, its calldata and its gas (lastCallGas)
        uint256 lastSide;
        IDisputeGame.Stage lastStage;
        bytes lastCalldata;
        uint256 lastGas;
    }

    function _deploy() internal {
        oracle = OracleSetup.deploy(
            OracleSetup.params(
                FEE, MIN_BOND, CHALLENGE_BOND, SILENCE_SLASH, ANSWER_WINDOW, EXIT_DELAY, COMMITTEE_SIZE, MAX_ATTEMPTS
            )
        );
        game = new DisputeGame(oracle);
        oracle.bindGame(address(game));
        game.bindMarket(market); // the test opens games as `market`
        // A referee is bound: the fixture's operator is not in its table, so its nodes go to the oracle.
        game.bindReferee(_referee());
    }

    /// @notice The ElementReferee to bind (a subclass may give one with another table).
    function _referee() internal virtual returns (IElementReferee) {
        return new ElementReferee(address(new TraceReferee()), address(new SumReferee()));
    }

    /// @notice `who` and the two more oracles a whole escalation needs (answer, challenge, committee).
    function _registerOracle(address who) internal {
        OracleSetup.register(oracle, who, MIN_BOND);
        OracleSetup.registerMany(oracle, "spare oracle", uint256(COMMITTEE_SIZE) + 1);
    }

    // ---- matches -------------------------------------------------------------------------------

    /// @notice Opens a game between the honest player of `t` and a liar telling `lie` at step `step`,
    ///         node `node`; `honestDefends` picks the honest player's side.
    function _newMatch(Task memory t, Lie lie, uint64 step, uint64 node, bool honestDefends)
        internal
        returns (Match memory m)
    {
        Player memory liar = Players.player(t, lie, step, node);
        return _newMatchWith(t, liar, honestDefends);
    }

    function _newMatchWith(Task memory t, Player memory liar, bool honestDefends)
        internal
        returns (Match memory m)
    {
        Player memory h = Players.honest(t);
        Players.checkpoints(h);
        Players.checkpointsFrom(liar, h.checkpoints);
        m.honestSide = honestDefends ? 0 : 1;
        m.players[m.honestSide] = h;
        m.players[1 - m.honestSide] = liar;
        m.accounts = [defender, challenger];
        m.stopAt = NEVER;
        vm.prank(market);
        m.id = game.open(
            t.cfg, defender, m.players[0].checkpoints.root, challenger, m.players[1].checkpoints.root
        );
    }

    function _view(Match memory m) internal view returns (IDisputeGame.GameView memory) {
        return game.gameOf(m.id);
    }

    /// @notice The honest player's win.
    function _honestWin(Match memory m) internal pure returns (IDisputeGame.Outcome) {
        return m.honestSide == 0 ? IDisputeGame.Outcome.DefenderWins : IDisputeGame.Outcome.ChallengerWins;
    }

    // ---- move arguments (for the side to move) -------------------------------------------------

    function _mover(Match memory m, IDisputeGame.GameView memory v) internal pure returns (Player memory) {
        return m.players[uint256(v.toMove)];
    }

    function _descendArgs(Match memory m)
        internal
        view
        returns (bytes32[] memory mine, bytes32[] memory theirs)
    {
        IDisputeGame.GameView memory v = _view(m);
        mine = Players.descendNodes(_mover(m, v), v);
        theirs = v.toMove == IDisputeGame.Side.Defender ? new bytes32[](0) : m.posted;
    }

    function _bisectArgs(Match memory m)
        internal
        view
        returns (bytes32[] memory mine, bytes32[] memory theirs, bytes32[] memory loProof)
    {
        IDisputeGame.GameView memory v = _view(m);
        bool d = v.toMove == IDisputeGame.Side.Defender;
        (mine, loProof) = Players.bisectRoots(_mover(m, v), v, d);
        theirs = d ? new bytes32[](0) : m.posted;
    }

    function _revealArgs(Match memory m)
        internal
        view
        returns (bytes memory rec, bytes memory theirRec, bytes memory desc, bytes32[] memory graphProof)
    {
        IDisputeGame.GameView memory v = _view(m);
        bool d = v.toMove == IDisputeGame.Side.Defender;
        (rec, desc, graphProof) = Players.reveal(_mover(m, v), v, d);
        theirRec = d ? bytes("") : m.revealed;
    }

    /// @notice The calldata of the mover's next move; remembers what the defender posts.
    function _moveData(Match memory m, IDisputeGame.GameView memory v) internal view returns (bytes memory) {
        IDisputeGame.Stage st = v.stage;
        bool d = v.toMove == IDisputeGame.Side.Defender;
        Player memory p = _mover(m, v);
        if (
            st == IDisputeGame.Stage.CheckpointDescent || st == IDisputeGame.Stage.TraceDescent
                || st == IDisputeGame.Stage.PostStateDescent
        ) {
            bytes32[] memory mine = Players.descendNodes(p, v);
            bytes32[] memory theirs = d ? new bytes32[](0) : m.posted;
            if (d) m.posted = mine;
            return abi.encodeCall(IDisputeGame.descend, (m.id, mine, theirs));
        }
        if (st == IDisputeGame.Stage.StepBisection) {
            (bytes32[] memory mine, bytes32[] memory loProof) = Players.bisectRoots(p, v, d);
            bytes32[] memory theirs = d ? new bytes32[](0) : m.posted;
            if (d) m.posted = mine;
            return abi.encodeCall(IDisputeGame.bisect, (m.id, mine, theirs, loProof));
        }
        if (st == IDisputeGame.Stage.PostStateCount) {
            return abi.encodeCall(
                IDisputeGame.openPostStateCount,
                (m.id, uint64(Players.STATE_ENTRIES), Players.preTop(p, v.lo))
            );
        }
        if (st == IDisputeGame.Stage.NodeReveal) {
            (bytes memory rec, bytes memory desc, bytes32[] memory graphProof) = Players.reveal(p, v, d);
            bytes memory theirRec = d ? bytes("") : m.revealed;
            if (d) m.revealed = rec;
            return abi.encodeCall(IDisputeGame.revealNode, (m.id, rec, theirRec, desc, graphProof));
        }
        if (st == IDisputeGame.Stage.InputProof) return _proofData(m, v, p);
        return
            abi.encodeCall(IDisputeGame.provePostState, (m.id, Players.postStateProof(p, v.lo, v.position)));
    }

    /// @notice The defender's proof of the disputed input, by the kind of its reference.
    function _proofData(Match memory m, IDisputeGame.GameView memory v, Player memory p)
        internal
        pure
        returns (bytes memory)
    {
        uint256 s = v.lo;
        uint256 d = v.position;
        bytes memory rec = Players.record(p, s, d);
        bytes memory desc = Players.descriptorAt(p, d);
        uint256 kind = Players.refKind(d, v.inputIndex);
        if (kind == 1) {
            return
                abi.encodeCall(IDisputeGame.proveStateInput, (m.id, rec, desc, Players.stateEntryProof(p, s)));
        }
        if (kind == 3) {
            return abi.encodeCall(
                IDisputeGame.proveConstantInput,
                (m.id, rec, desc, p.task.programRoots, Players.constantEntryProof(p))
            );
        }
        if (kind == 4) {
            (bytes memory src, bytes32[] memory proof) = Players.sourceOf(p, s, d);
            return abi.encodeCall(IDisputeGame.proveNodeInput, (m.id, rec, desc, src, proof));
        }
        return abi.encodeCall(IDisputeGame.proveBatchInput, (m.id, rec, desc, Players.batchProof(p, s)));
    }

    // ---- playing -------------------------------------------------------------------------------

    /// @notice Sends `cd` to the game from `who`; returns whether it succeeded and its gas
    ///         (`lastCallGas`: with `isolate` on, the whole transaction's).
    function _send(address who, bytes memory cd) internal returns (bool ok, uint256 gas, bytes memory ret) {
        vm.prank(who);
        (ok, ret) = address(game).call(cd);
        gas = vm.lastCallGas().gasTotalUsed;
    }

    function _mustProve(IDisputeGame.GameView memory v) internal pure returns (bool) {
        return v.stage == IDisputeGame.Stage.InputProof || v.stage == IDisputeGame.Stage.PostStateProof;
    }

    /// @notice Plays one move (or the oracle, or a timeout); returns true once the game is over.
    function _step(Match memory m) internal returns (bool done) {
        IDisputeGame.GameView memory v = _view(m);
        if (v.stage == IDisputeGame.Stage.Resolved) return true;
        if (v.stage == IDisputeGame.Stage.Oracle) {
            _answerHonestly(m, v);
            game.resolveOracle(m.id);
            return true;
        }
        uint256 side = uint256(v.toMove);
        bool liar = side != m.honestSide;
        bool proving = _mustProve(v);
        if (liar && m.moves[side] >= m.stopAt) {
            _timeout(v, m);
            return true;
        }
        bytes memory cd = _moveData(m, v);
        (bool ok, uint256 gas,) = _send(m.accounts[side], cd);
        if (!ok) {
            // The liar cannot prove its lie, nor make any move the honest player's moves forced on it.
            assertTrue(liar, "an honest move reverted");
            assertTrue(proving, "a liar's move other than a proof reverted");
            _timeout(v, m);
            return true;
        }
        assertFalse(liar && proving, "a lie was proven");
        m.moves[side]++;
        m.lastSide = side;
        m.lastStage = v.stage;
        m.lastCalldata = cd;
        m.lastGas = gas;
        vm.warp(block.timestamp + 1);
        return false;
    }

    /// @notice Plays to the end.
    function _play(Match memory m) internal returns (IDisputeGame.Outcome) {
        while (!_step(m)) {}
        return game.outcome(m.id);
    }

    /// @notice Plays until the game is in `stage` (and returns its view then).
    function _playUntil(Match memory m, IDisputeGame.Stage stage)
        internal
        returns (IDisputeGame.GameView memory v)
    {
        for (;;) {
            v = _view(m);
            if (v.stage == stage) return v;
            assertTrue(v.stage != IDisputeGame.Stage.Resolved, "resolved before the stage");
            _step(m);
        }
    }

    /// @notice Plays one move of the side to move (it must succeed).
    function _move(Match memory m) internal {
        IDisputeGame.GameView memory v = _view(m);
        bytes memory cd = _moveData(m, v);
        (bool ok,, bytes memory ret) = _send(m.accounts[uint256(v.toMove)], cd);
        if (!ok) {
            assembly ("memory-safe") {
                // Bubbles the game's revert data up.
                revert(add(ret, 0x20), mload(ret))
            }
        }
        m.moves[uint256(v.toMove)]++;
    }

    function _timeout(IDisputeGame.GameView memory v, Match memory m) internal {
        vm.warp(uint256(v.turnStartedAt) + v.clockLeft[uint256(v.toMove)] + 1);
        game.timeout(m.id);
    }

    /// @notice The honest outputs of the isolated node.
    function _honestOutputs(Match memory m, IDisputeGame.GameView memory v)
        internal
        pure
        returns (bytes32[] memory)
    {
        return Players.outputsOf(Players.record(m.players[m.honestSide], v.lo, v.position));
    }

    /// @notice The assigned oracle answers `outputs`; the answer becomes final unchallenged.
    function _answer(IDisputeGame.GameView memory v, bytes32[] memory outputs) internal {
        OracleSetup.answerNow(oracle, v.questionId, outputs);
        vm.warp(block.timestamp + ANSWER_WINDOW + 1);
        oracle.settle(v.questionId);
    }

    function _answerHonestly(Match memory m, IDisputeGame.GameView memory v) internal {
        _answer(v, _honestOutputs(m, v));
    }

    /// @notice `roundBound`, computed again from docs/game.md's rules.
    function _expectedRounds(IDisputeGame.Config memory cfg) internal pure returns (uint256 rounds) {
        uint256 t = Trees.log2(cfg.arity);
        rounds = _ceilDiv(Trees.depth(cfg.steps / cfg.checkpointInterval + 1), t);
        uint256 span = cfg.checkpointInterval;
        uint256 b;
        while (span > 1) {
            uint256 w = cfg.arity < span ? cfg.arity : span;
            span = _ceilDiv(span, w);
            ++b;
        }
        rounds += b == 0 ? 1 : b;
        uint256 trace = _ceilDiv(Trees.depth(cfg.nodeCount), t);
        // The element path: reveal, then header, chunk descent (up to 2^16 chunks), chunk, proof; for mm and
        // addmm the dot phase's bisection of K prefix sums too, the two depths adding to at most 31 bits
        // (tensors of at most 2^26 values): ceil(31 / t) + 1 rounds for both.
        uint256 tracePath = (trace == 0 ? 1 : trace) + 4 + _ceilDiv(31, t) + 1;
        uint256 postPath = 3 + _ceilDiv(16, t);
        rounds += tracePath > postPath ? tracePath : postPath;
    }

    function _ceilDiv(uint256 a, uint256 b) internal pure returns (uint256) {
        return (a + b - 1) / b;
    }
}

/// @notice One test per rule and per revert of every external function of DisputeGame.
/// @dev The task: T = 16 steps, checkpoints every c = 8 (3 leaves, one PAD position at the leaf row),
///      arity 4, M = 6 nodes (depth 3: two trace levels), batches of 2 from 5 examples. The liar's
///      roots agree up to step 9 (two bisection rounds: 8..16, then 8..10, isolate step 9); its
///      trace of step 9 differs from node 3 on.
contract DisputeGameTest is DisputeGameBase {
    uint64 internal constant T = 16;
    uint64 internal constant C = 8;
    uint64 internal constant N = 4;
    uint64 internal constant M = 6;
    uint64 internal constant STEP = 9;
    uint64 internal constant NODE = 3;

    Task internal task;

    function setUp() public {
        _deploy();
        _registerOracle(oracleNode);
        vm.warp(1_000_000);
    }

    function _task() internal pure returns (Task memory) {
        return Players.task(T, C, N, M, 2, 5, CLOCK, 7);
    }

    function _cfg() internal pure returns (IDisputeGame.Config memory cfg) {
        cfg.steps = T;
        cfg.checkpointInterval = C;
        cfg.nodeCount = M;
        cfg.datasetSize = 5;
        cfg.batchSize = 2;
        cfg.arity = N;
        cfg.clock = CLOCK;
    }

    /// @notice A match against a liar; the honest player defends.
    function _defended(Lie lie, uint64 node) internal returns (Match memory) {
        return _newMatch(_task(), lie, STEP, node, true);
    }

    /// @notice A match against a liar; the honest player challenges.
    function _challenged(Lie lie, uint64 node) internal returns (Match memory) {
        return _newMatch(_task(), lie, STEP, node, false);
    }

    function _openWith(IDisputeGame.Config memory cfg) internal {
        vm.prank(market);
        game.open(cfg, defender, bytes32(uint256(1)), challenger, bytes32(uint256(2)));
    }

    function _expectBadConfig(IDisputeGame.Config memory cfg, uint256 field, uint256 value) internal {
        vm.expectRevert(abi.encodeWithSelector(DisputeGameBadConfig.selector, field, value));
        _openWith(cfg);
    }

    // ---- open ----------------------------------------------------------------------------------

    function test_open_validConfig_succeeds() public {
        Task memory t = _task();
        bytes32 a = keccak256("defender list");
        bytes32 b = keccak256("challenger list");
        vm.expectEmit(address(game));
        emit IDisputeGame.GameOpened(1, market, defender, challenger, a, b);
        vm.prank(market);
        uint256 id = game.open(t.cfg, defender, a, challenger, b);
        assertEq(id, 1, "id");
        assertEq(game.gameCount(), 1, "count");
        assertEq(game.oracle(), address(oracle), "oracle");
        IDisputeGame.GameView memory v = game.gameOf(id);
        assertEq(v.owner, market, "owner");
        assertEq(v.players[0], defender, "defender");
        assertEq(v.players[1], challenger, "challenger");
        assertEq(v.checkpointRoots[0], a, "defender root");
        assertEq(v.checkpointRoots[1], b, "challenger root");
        assertEq(uint256(v.stage), uint256(IDisputeGame.Stage.CheckpointDescent), "stage");
        assertEq(uint256(v.outcome), uint256(IDisputeGame.Outcome.Pending), "outcome");
        assertEq(uint256(v.toMove), uint256(IDisputeGame.Side.Defender), "defender first");
        assertEq(v.clockLeft[0], CLOCK, "defender clock");
        assertEq(v.clockLeft[1], CLOCK, "challenger clock");
        assertEq(v.turnStartedAt, block.timestamp, "turn start");
        assertEq(v.leafCount, T / C + 1, "leaves");
        assertEq(v.height, 2, "depth of 3 leaves");
        assertEq(v.position, 0, "position");
        assertEq(v.current[0], a, "current defender");
        assertEq(v.current[1], b, "current challenger");
        assertEq(uint256(game.outcome(id)), uint256(IDisputeGame.Outcome.Pending), "outcome()");
        IDisputeGame.Config memory cfg = game.configOf(id);
        assertEq(cfg.programHash, t.cfg.programHash, "program hash");
        assertEq(cfg.graphRoot, t.cfg.graphRoot, "graph root");
        assertEq(cfg.datasetRoot, t.cfg.datasetRoot, "dataset root");
        assertEq(cfg.seed, t.cfg.seed, "seed");
        assertEq(cfg.steps, T, "steps");
    }

    function test_open_zeroSteps_reverts() public {
        IDisputeGame.Config memory cfg = _cfg();
        cfg.steps = 0;
        _expectBadConfig(cfg, 1, 0);
    }

    function test_open_zeroInterval_reverts() public {
        IDisputeGame.Config memory cfg = _cfg();
        cfg.checkpointInterval = 0;
        _expectBadConfig(cfg, 2, 0);
    }

    function test_open_intervalNotDividingSteps_reverts() public {
        IDisputeGame.Config memory cfg = _cfg();
        cfg.checkpointInterval = 3;
        _expectBadConfig(cfg, 2, 3);
    }

    function test_open_tooManyCheckpoints_reverts() public {
        IDisputeGame.Config memory cfg = _cfg();
        cfg.steps = type(uint64).max;
        cfg.checkpointInterval = 1;
        _expectBadConfig(cfg, 2, 1);
    }

    function test_open_zeroNodeCount_reverts() public {
        IDisputeGame.Config memory cfg = _cfg();
        cfg.nodeCount = 0;
        _expectBadConfig(cfg, 3, 0);
    }

    function test_open_zeroDatasetSize_reverts() public {
        IDisputeGame.Config memory cfg = _cfg();
        cfg.datasetSize = 0;
        _expectBadConfig(cfg, 4, 0);
    }

    function test_open_zeroBatchSize_reverts() public {
        IDisputeGame.Config memory cfg = _cfg();
        cfg.batchSize = 0;
        _expectBadConfig(cfg, 5, 0);
    }

    function test_open_arityOne_reverts() public {
        IDisputeGame.Config memory cfg = _cfg();
        cfg.arity = 1;
        _expectBadConfig(cfg, 6, 1);
    }

    function test_open_arityNotPowerOfTwo_reverts() public {
        IDisputeGame.Config memory cfg = _cfg();
        cfg.arity = 12;
        _expectBadConfig(cfg, 6, 12);
    }

    function test_open_arityAbove64_reverts() public {
        IDisputeGame.Config memory cfg = _cfg();
        cfg.arity = 128;
        _expectBadConfig(cfg, 6, 128);
    }

    function test_open_zeroClock_reverts() public {
        IDisputeGame.Config memory cfg = _cfg();
        cfg.clock = 0;
        _expectBadConfig(cfg, 7, 0);
    }

    function test_open_sameRoots_reverts() public {
        bytes32 r = keccak256("same");
        vm.expectRevert(abi.encodeWithSelector(DisputeGameNoDispute.selector, defender, challenger, r));
        vm.prank(market);
        game.open(_cfg(), defender, r, challenger, r);
    }

    function test_open_samePlayer_reverts() public {
        vm.expectRevert(
            abi.encodeWithSelector(DisputeGameNoDispute.selector, defender, defender, bytes32(uint256(1)))
        );
        vm.prank(market);
        game.open(_cfg(), defender, bytes32(uint256(1)), defender, bytes32(uint256(2)));
    }

    function test_open_zeroPlayer_reverts() public {
        vm.expectRevert(
            abi.encodeWithSelector(DisputeGameNoDispute.selector, defender, address(0), bytes32(uint256(1)))
        );
        vm.prank(market);
        game.open(_cfg(), defender, bytes32(uint256(1)), address(0), bytes32(uint256(2)));
    }

    function test_gameOf_unknownGame_reverts() public {
        vm.expectRevert(abi.encodeWithSelector(DisputeGameUnknown.selector, 7));
        game.gameOf(7);
    }

    // ---- checkpoint descent --------------------------------------------------------------------

    function test_descend_defenderThenChallenger_succeeds() public {
        Match memory m = _defended(Lie.Output, NODE);
        (bytes32[] memory mine,) = _descendArgs(m);
        assertEq(mine.length, 4, "2^min(log2 4, 2) nodes");
        assertEq(mine[3], bytes32(0), "position 3 is padding");
        vm.expectEmit(address(game));
        emit IDisputeGame.NodesPosted(
            m.id, IDisputeGame.Side.Defender, IDisputeGame.Stage.CheckpointDescent, 2, 0, mine
        );
        vm.prank(defender);
        game.descend(m.id, mine, new bytes32[](0));
        m.posted = mine;
        IDisputeGame.GameView memory v = _view(m);
        assertEq(uint256(v.toMove), uint256(IDisputeGame.Side.Challenger), "challenger to move");
        assertTrue(v.halfDone, "half done");
        assertEq(v.moves, 1, "moves");

        (bytes32[] memory theirs2, bytes32[] memory theirs) = _descendArgs(m);
        vm.expectEmit(address(game));
        emit IDisputeGame.DescentNarrowed(m.id, IDisputeGame.Stage.CheckpointDescent, 0, 2);
        vm.prank(challenger);
        game.descend(m.id, theirs2, theirs);
        v = _view(m);
        assertEq(uint256(v.stage), uint256(IDisputeGame.Stage.StepBisection), "bisection");
        assertEq(v.lo, C, "lo = (j - 1) c");
        assertEq(v.hi, 2 * C, "hi = j c");
        assertEq(v.position, 2, "checkpoint 2 differs first");
        assertEq(v.current[0], m.players[0].checkpoints.rows[0][2], "defender's leaf");
        assertEq(v.current[1], m.players[1].checkpoints.rows[0][2], "challenger's leaf");
        assertEq(uint256(v.toMove), uint256(IDisputeGame.Side.Defender), "defender to move");
    }

    function test_descend_wrongStage_reverts() public {
        Match memory m = _defended(Lie.Output, NODE);
        _playUntil(m, IDisputeGame.Stage.StepBisection);
        vm.expectRevert(
            abi.encodeWithSelector(
                DisputeGameWrongStage.selector,
                m.id,
                IDisputeGame.Stage.CheckpointDescent,
                IDisputeGame.Stage.StepBisection
            )
        );
        vm.prank(defender);
        game.descend(m.id, new bytes32[](4), new bytes32[](0));
    }

    function test_descend_unknownGame_reverts() public {
        vm.expectRevert(abi.encodeWithSelector(DisputeGameUnknown.selector, 3));
        game.descend(3, new bytes32[](0), new bytes32[](0));
    }

    function test_descend_notYourTurn_reverts() public {
        Match memory m = _defended(Lie.Output, NODE);
        (bytes32[] memory mine,) = _descendArgs(m);
        vm.expectRevert(abi.encodeWithSelector(DisputeGameNotYourTurn.selector, m.id, challenger, defender));
        vm.prank(challenger);
        game.descend(m.id, mine, new bytes32[](0));
    }

    function test_descend_clockExpired_reverts() public {
        Match memory m = _defended(Lie.Output, NODE);
        (bytes32[] memory mine,) = _descendArgs(m);
        uint256 deadline = block.timestamp + CLOCK;
        vm.warp(deadline + 1);
        vm.expectRevert(abi.encodeWithSelector(DisputeGameClockExpired.selector, m.id, deadline));
        vm.prank(defender);
        game.descend(m.id, mine, new bytes32[](0));
    }

    function test_descend_atDeadline_succeeds() public {
        Match memory m = _defended(Lie.Output, NODE);
        vm.warp(block.timestamp + CLOCK);
        _move(m);
        IDisputeGame.GameView memory v = _view(m);
        assertEq(v.clockLeft[0], 0, "the defender's clock is spent");
        assertEq(v.turnStartedAt, block.timestamp, "challenger's turn starts now");
    }

    function test_descend_wrongWidth_reverts() public {
        Match memory m = _defended(Lie.Output, NODE);
        vm.expectRevert(abi.encodeWithSelector(DisputeGameWidth.selector, 2, 4));
        vm.prank(defender);
        game.descend(m.id, new bytes32[](2), new bytes32[](0));
    }

    function test_descend_defenderPassesTheirs_reverts() public {
        Match memory m = _defended(Lie.Output, NODE);
        (bytes32[] memory mine,) = _descendArgs(m);
        vm.expectRevert(abi.encodeWithSelector(DisputeGameWidth.selector, 1, 0));
        vm.prank(defender);
        game.descend(m.id, mine, new bytes32[](1));
    }

    function test_descend_challengerTheirsWidth_reverts() public {
        Match memory m = _defended(Lie.Output, NODE);
        _move(m);
        m.posted = Players.descendNodes(m.players[0], _view(m));
        (bytes32[] memory mine,) = _descendArgs(m);
        vm.expectRevert(abi.encodeWithSelector(DisputeGameWidth.selector, 3, 4));
        vm.prank(challenger);
        game.descend(m.id, mine, new bytes32[](3));
    }

    function test_descend_paddingNode_reverts() public {
        Match memory m = _defended(Lie.Output, NODE);
        (bytes32[] memory mine,) = _descendArgs(m);
        mine[3] = bytes32(uint256(1));
        vm.expectRevert(abi.encodeWithSelector(DisputeGamePaddingNode.selector, 3));
        vm.prank(defender);
        game.descend(m.id, mine, new bytes32[](0));
    }

    function test_descend_foldMismatchAtTop_reverts() public {
        Match memory m = _defended(Lie.Output, NODE);
        (bytes32[] memory mine,) = _descendArgs(m);
        mine[1] = keccak256("forged");
        bytes32 computed = Trees.listRoot(3, Trees.fold(mine, 0, 0, 3));
        vm.expectRevert(
            abi.encodeWithSelector(DisputeGameFoldMismatch.selector, computed, m.players[0].checkpoints.root)
        );
        vm.prank(defender);
        game.descend(m.id, mine, new bytes32[](0));
    }

    function test_descend_foldMismatchBelowTop_reverts() public {
        Match memory m = _defended(Lie.Output, NODE);
        IDisputeGame.GameView memory v = _playUntil(m, IDisputeGame.Stage.TraceDescent);
        _move(m);
        _move(m); // the first trace level: height 3 -> 1, position 1
        v = _view(m);
        assertEq(v.height, 1, "height");
        assertEq(v.position, 1, "nodes 2..3 hold the first difference");
        (bytes32[] memory mine,) = _descendArgs(m);
        mine[0] = keccak256("forged");
        bytes32 computed = Trees.fold(mine, 0, 2, M);
        vm.expectRevert(abi.encodeWithSelector(DisputeGameFoldMismatch.selector, computed, v.current[0]));
        vm.prank(defender);
        game.descend(m.id, mine, new bytes32[](0));
    }

    function test_descend_opponentMismatch_reverts() public {
        Match memory m = _defended(Lie.Output, NODE);
        _move(m);
        (bytes32[] memory mine,) = _descendArgs(m);
        bytes32[] memory forged = new bytes32[](4);
        forged[0] = keccak256("forged");
        bytes32[] memory defenderNodes = Trees.descent(m.players[0].checkpoints, 2, 0, N);
        vm.expectRevert(
            abi.encodeWithSelector(
                DisputeGameOpponentMismatch.selector,
                keccak256(abi.encodePacked(forged)),
                keccak256(abi.encodePacked(defenderNodes))
            )
        );
        vm.prank(challenger);
        game.descend(m.id, mine, forged);
    }

    function test_descend_firstLeafDiffers_succeeds() public {
        Task memory t = _task();
        Player memory h = Players.honest(t);
        Trees.Tree memory honestList = Players.checkpoints(h);
        bytes32[] memory leaves = new bytes32[](3);
        leaves[0] = Players.ckptLeaf(0, keccak256("another initial state"));
        leaves[1] = honestList.rows[0][1];
        leaves[2] = honestList.rows[0][2];
        Trees.Tree memory other = Trees.build(leaves);
        vm.prank(market);
        uint256 id = game.open(t.cfg, defender, honestList.root, challenger, other.root);
        bytes32[] memory d = Trees.descent(honestList, 2, 0, N);
        vm.prank(defender);
        game.descend(id, d, new bytes32[](0));
        vm.expectEmit(address(game));
        emit IDisputeGame.GameResolved(id, IDisputeGame.Outcome.NoDecision);
        vm.prank(challenger);
        game.descend(id, Trees.descent(other, 2, 0, N), d);
        assertEq(uint256(game.outcome(id)), uint256(IDisputeGame.Outcome.NoDecision), "no decision");
        assertEq(uint256(game.gameOf(id).stage), uint256(IDisputeGame.Stage.Resolved), "resolved");
    }

    // ---- bisection -----------------------------------------------------------------------------

    function test_bisect_twoRounds_isolatesStep_succeeds() public {
        Match memory m = _defended(Lie.Output, NODE);
        _playUntil(m, IDisputeGame.Stage.StepBisection);
        (bytes32[] memory mine, bytes32[] memory theirs, bytes32[] memory loProof) = _bisectArgs(m);
        assertEq(mine.length, 5, "w + 1 roots");
        assertEq(loProof.length, 2, "opening of checkpoint 1");
        vm.expectEmit(address(game));
        emit IDisputeGame.RootsPosted(m.id, IDisputeGame.Side.Defender, C, 2 * C, mine);
        vm.prank(defender);
        game.bisect(m.id, mine, theirs, loProof);
        m.posted = mine;

        (bytes32[] memory mine2, bytes32[] memory theirs2, bytes32[] memory noProof) = _bisectArgs(m);
        assertEq(noProof.length, 0, "the challenger sends no proof");
        vm.expectEmit(address(game));
        emit IDisputeGame.IntervalNarrowed(m.id, C, C + 2);
        vm.prank(challenger);
        game.bisect(m.id, mine2, theirs2, noProof);
        IDisputeGame.GameView memory v = _view(m);
        assertEq(v.lo, 8, "lo");
        assertEq(v.hi, 10, "hi");
        assertEq(v.agreedRoot, Players.stateRoot(m.players[0], 8), "agreed root at lo");
        assertEq(v.current[0], Players.stateRoot(m.players[0], 10), "defender's root at hi");
        assertEq(v.current[1], Players.stateRoot(m.players[1], 10), "challenger's root at hi");

        (mine, theirs, loProof) = _bisectArgs(m);
        assertEq(mine.length, 3, "span 2: w = 2");
        assertEq(loProof.length, 0, "no proof after the first round");
        vm.prank(defender);
        game.bisect(m.id, mine, theirs, loProof);
        m.posted = mine;
        (mine2, theirs2, noProof) = _bisectArgs(m);
        vm.expectEmit(address(game));
        emit IDisputeGame.StepIsolated(
            m.id,
            STEP,
            Players.stateRoot(m.players[0], STEP),
            Players.stateRoot(m.players[0], STEP + 1),
            Players.stateRoot(m.players[1], STEP + 1)
        );
        vm.prank(challenger);
        game.bisect(m.id, mine2, theirs2, noProof);
        v = _view(m);
        assertEq(uint256(v.stage), uint256(IDisputeGame.Stage.TraceDescent), "trace descent");
        assertEq(v.lo, STEP, "isolated step");
        assertEq(v.hi, STEP + 1, "one step");
        assertEq(v.leafCount, M, "trace leaves");
        assertEq(v.height, 3, "trace depth");
        assertEq(v.position, 0, "trace top");
        assertEq(v.agreedRoot, Players.stateRoot(m.players[0], STEP), "pre-state root");
        // No trace node yet: `current` still holds the post-state roots until the first trace move.
        assertEq(v.current[0], Players.stateRoot(m.players[0], STEP + 1), "defender's post-state root");
        assertEq(v.current[1], Players.stateRoot(m.players[1], STEP + 1), "challenger's post-state root");
    }

    function test_bisect_wrongStage_reverts() public {
        Match memory m = _defended(Lie.Output, NODE);
        vm.expectRevert(
            abi.encodeWithSelector(
                DisputeGameWrongStage.selector,
                m.id,
                IDisputeGame.Stage.StepBisection,
                IDisputeGame.Stage.CheckpointDescent
            )
        );
        vm.prank(defender);
        game.bisect(m.id, new bytes32[](5), new bytes32[](0), new bytes32[](0));
    }

    function test_bisect_wrongWidth_reverts() public {
        Match memory m = _defended(Lie.Output, NODE);
        _playUntil(m, IDisputeGame.Stage.StepBisection);
        vm.expectRevert(abi.encodeWithSelector(DisputeGameWidth.selector, 4, 5));
        vm.prank(defender);
        game.bisect(m.id, new bytes32[](4), new bytes32[](0), new bytes32[](0));
    }

    function test_bisect_firstRoundWrongLoProof_reverts() public {
        Match memory m = _defended(Lie.Output, NODE);
        _playUntil(m, IDisputeGame.Stage.StepBisection);
        (bytes32[] memory mine, bytes32[] memory theirs, bytes32[] memory loProof) = _bisectArgs(m);
        loProof[1] = keccak256("forged sibling");
        bytes32 leaf = Players.ckptLeaf(C, mine[0]);
        bytes32 computed = Trees.rootFrom(3, 1, leaf, loProof);
        vm.expectRevert(
            abi.encodeWithSelector(MerkleRootMismatch.selector, computed, m.players[0].checkpoints.root)
        );
        vm.prank(defender);
        game.bisect(m.id, mine, theirs, loProof);
    }

    function test_bisect_firstRoundWrongLoRoot_reverts() public {
        Match memory m = _defended(Lie.Output, NODE);
        _playUntil(m, IDisputeGame.Stage.StepBisection);
        (bytes32[] memory mine, bytes32[] memory theirs, bytes32[] memory loProof) = _bisectArgs(m);
        mine[0] = keccak256("another root at lo");
        bytes32 computed = Trees.rootFrom(3, 1, Players.ckptLeaf(C, mine[0]), loProof);
        vm.expectRevert(
            abi.encodeWithSelector(MerkleRootMismatch.selector, computed, m.players[0].checkpoints.root)
        );
        vm.prank(defender);
        game.bisect(m.id, mine, theirs, loProof);
    }

    function test_bisect_firstRoundHiRootNotTheLeaf_reverts() public {
        Match memory m = _defended(Lie.Output, NODE);
        IDisputeGame.GameView memory v = _playUntil(m, IDisputeGame.Stage.StepBisection);
        (bytes32[] memory mine, bytes32[] memory theirs, bytes32[] memory loProof) = _bisectArgs(m);
        mine[4] = keccak256("another root at hi");
        vm.expectRevert(
            abi.encodeWithSelector(
                DisputeGameRecordMismatch.selector, Players.ckptLeaf(2 * C, mine[4]), v.current[0]
            )
        );
        vm.prank(defender);
        game.bisect(m.id, mine, theirs, loProof);
    }

    function test_bisect_challengerHiRootNotTheLeaf_reverts() public {
        Match memory m = _defended(Lie.Output, NODE);
        IDisputeGame.GameView memory v = _playUntil(m, IDisputeGame.Stage.StepBisection);
        _move(m);
        (m.posted,) = Players.bisectRoots(m.players[0], v, true);
        (bytes32[] memory mine, bytes32[] memory theirs, bytes32[] memory loProof) = _bisectArgs(m);
        mine[4] = Players.stateRoot(m.players[0], 2 * C); // the defender's root, not its own
        vm.expectRevert(
            abi.encodeWithSelector(
                DisputeGameRecordMismatch.selector, Players.ckptLeaf(2 * C, mine[4]), v.current[1]
            )
        );
        vm.prank(challenger);
        game.bisect(m.id, mine, theirs, loProof);
    }

    function test_bisect_challengerLoRootDiffers_reverts() public {
        Match memory m = _defended(Lie.Output, NODE);
        IDisputeGame.GameView memory v = _playUntil(m, IDisputeGame.Stage.StepBisection);
        _move(m);
        (m.posted,) = Players.bisectRoots(m.players[0], v, true);
        (bytes32[] memory mine, bytes32[] memory theirs, bytes32[] memory loProof) = _bisectArgs(m);
        mine[0] = keccak256("another root at lo");
        vm.expectRevert(abi.encodeWithSelector(DisputeGameEndpointMismatch.selector, mine[0], theirs[0]));
        vm.prank(challenger);
        game.bisect(m.id, mine, theirs, loProof);
    }

    function test_bisect_challengerLoProof_reverts() public {
        Match memory m = _defended(Lie.Output, NODE);
        IDisputeGame.GameView memory v = _playUntil(m, IDisputeGame.Stage.StepBisection);
        _move(m);
        (m.posted,) = Players.bisectRoots(m.players[0], v, true);
        (bytes32[] memory mine, bytes32[] memory theirs,) = _bisectArgs(m);
        vm.expectRevert(abi.encodeWithSelector(DisputeGameWidth.selector, 2, 0));
        vm.prank(challenger);
        game.bisect(m.id, mine, theirs, new bytes32[](2));
    }

    function test_bisect_opponentMismatch_reverts() public {
        Match memory m = _defended(Lie.Output, NODE);
        IDisputeGame.GameView memory v = _playUntil(m, IDisputeGame.Stage.StepBisection);
        _move(m);
        (bytes32[] memory posted,) = Players.bisectRoots(m.players[0], v, true);
        m.posted = posted;
        (bytes32[] memory mine, bytes32[] memory theirs, bytes32[] memory loProof) = _bisectArgs(m);
        bytes32[] memory forged = new bytes32[](5);
        for (uint256 i; i < 5; ++i) {
            forged[i] = theirs[i];
        }
        forged[2] = keccak256("forged");
        vm.expectRevert(
            abi.encodeWithSelector(
                DisputeGameOpponentMismatch.selector,
                keccak256(abi.encodePacked(forged)),
                keccak256(abi.encodePacked(posted))
            )
        );
        vm.prank(challenger);
        game.bisect(m.id, mine, forged, loProof);
    }

    function test_bisect_laterRoundLoRoot_reverts() public {
        Match memory m = _defended(Lie.Output, NODE);
        _playUntil(m, IDisputeGame.Stage.StepBisection);
        _move(m);
        _move(m);
        IDisputeGame.GameView memory v = _view(m);
        (bytes32[] memory mine, bytes32[] memory theirs, bytes32[] memory loProof) = _bisectArgs(m);
        mine[0] = keccak256("another root at lo");
        vm.expectRevert(abi.encodeWithSelector(DisputeGameEndpointMismatch.selector, mine[0], v.agreedRoot));
        vm.prank(defender);
        game.bisect(m.id, mine, theirs, loProof);
    }

    function test_bisect_laterRoundHiRoot_reverts() public {
        Match memory m = _defended(Lie.Output, NODE);
        _playUntil(m, IDisputeGame.Stage.StepBisection);
        _move(m);
        _move(m);
        IDisputeGame.GameView memory v = _view(m);
        (bytes32[] memory mine, bytes32[] memory theirs, bytes32[] memory loProof) = _bisectArgs(m);
        mine[2] = keccak256("another root at hi");
        vm.expectRevert(abi.encodeWithSelector(DisputeGameEndpointMismatch.selector, mine[2], v.current[0]));
        vm.prank(defender);
        game.bisect(m.id, mine, theirs, loProof);
    }

    function test_bisect_laterRoundLoProof_reverts() public {
        Match memory m = _defended(Lie.Output, NODE);
        _playUntil(m, IDisputeGame.Stage.StepBisection);
        _move(m);
        _move(m);
        (bytes32[] memory mine, bytes32[] memory theirs,) = _bisectArgs(m);
        vm.expectRevert(abi.encodeWithSelector(DisputeGameWidth.selector, 2, 0));
        vm.prank(defender);
        game.bisect(m.id, mine, theirs, new bytes32[](2));
    }

    // ---- trace descent -------------------------------------------------------------------------

    function test_descend_traceTop_commitsTraceRoots_succeeds() public {
        Match memory m = _defended(Lie.Output, NODE);
        _playUntil(m, IDisputeGame.Stage.TraceDescent);
        (bytes32[] memory mine,) = _descendArgs(m);
        bytes32 defenderTrace = Players.traceTree(m.players[0], STEP).root;
        vm.expectEmit(address(game));
        emit IDisputeGame.TraceCommitted(m.id, IDisputeGame.Side.Defender, defenderTrace);
        vm.prank(defender);
        game.descend(m.id, mine, new bytes32[](0));
        m.posted = mine;
        (bytes32[] memory mine2, bytes32[] memory theirs) = _descendArgs(m);
        // The challenger's trace root is not kept or published: nothing reads it (its first-level
        // nodes are in its calldata).
        vm.recordLogs();
        vm.prank(challenger);
        game.descend(m.id, mine2, theirs);
        Vm.Log[] memory logs = vm.getRecordedLogs();
        for (uint256 i; i < logs.length; ++i) {
            assertTrue(logs[i].topics[0] != IDisputeGame.TraceCommitted.selector, "no TraceCommitted");
        }
        IDisputeGame.GameView memory v = _view(m);
        assertEq(v.defenderTrace, defenderTrace, "defender's trace root");

        v = _playUntil(m, IDisputeGame.Stage.NodeReveal);
        assertEq(v.position, NODE, "the first differing node");
        assertEq(v.height, 0, "a leaf");
        assertEq(v.current[0], Players.traceTree(m.players[0], STEP).rows[0][NODE], "defender's record leaf");
        assertEq(
            v.current[1], Players.traceTree(m.players[1], STEP).rows[0][NODE], "challenger's record leaf"
        );
    }

    // ---- node reveal ---------------------------------------------------------------------------

    function test_revealNode_defender_succeeds() public {
        Match memory m = _defended(Lie.Output, NODE);
        _playUntil(m, IDisputeGame.Stage.NodeReveal);
        (bytes memory rec,, bytes memory desc, bytes32[] memory proof) = _revealArgs(m);
        vm.expectEmit(address(game));
        emit IDisputeGame.NodeRevealed(m.id, IDisputeGame.Side.Defender, NODE, rec);
        vm.prank(defender);
        game.revealNode(m.id, rec, "", desc, proof);
        assertEq(uint256(_view(m).toMove), uint256(IDisputeGame.Side.Challenger), "challenger to reveal");
    }

    function test_revealNode_wrongStage_reverts() public {
        Match memory m = _defended(Lie.Output, NODE);
        vm.expectRevert(
            abi.encodeWithSelector(
                DisputeGameWrongStage.selector,
                m.id,
                IDisputeGame.Stage.NodeReveal,
                IDisputeGame.Stage.CheckpointDescent
            )
        );
        vm.prank(defender);
        game.revealNode(m.id, "", "", "", new bytes32[](0));
    }

    function test_revealNode_recordMismatch_reverts() public {
        Match memory m = _defended(Lie.Output, NODE);
        IDisputeGame.GameView memory v = _playUntil(m, IDisputeGame.Stage.NodeReveal);
        (, bytes memory desc, bytes32[] memory proof) = Players.reveal(m.players[0], v, true);
        bytes memory other = Players.record(m.players[1], STEP, NODE); // the opponent's record
        vm.expectRevert(
            abi.encodeWithSelector(DisputeGameRecordMismatch.selector, Trees.leaf(other), v.current[0])
        );
        vm.prank(defender);
        game.revealNode(m.id, other, "", desc, proof);
    }

    function test_revealNode_descriptorMismatch_reverts() public {
        Match memory m = _defended(Lie.Output, NODE);
        _playUntil(m, IDisputeGame.Stage.NodeReveal);
        (bytes memory rec,,, bytes32[] memory proof) = _revealArgs(m);
        bytes memory other = Players.descriptor(M, NODE - 1);
        vm.expectRevert(
            abi.encodeWithSelector(
                DisputeGameDescriptorMismatch.selector, sha256(other), m.players[0].task.descHashes[NODE]
            )
        );
        vm.prank(defender);
        game.revealNode(m.id, rec, "", other, proof);
    }

    function test_revealNode_wrongGraphProof_reverts() public {
        Match memory m = _defended(Lie.Output, NODE);
        _playUntil(m, IDisputeGame.Stage.NodeReveal);
        (bytes memory rec,, bytes memory desc, bytes32[] memory proof) = _revealArgs(m);
        proof[0] = keccak256("forged sibling");
        bytes32 leaf = Trees.leaf(abi.encodePacked("NDSC", uint256(NODE), sha256(desc)));
        vm.expectRevert(
            abi.encodeWithSelector(
                MerkleRootMismatch.selector,
                Trees.rootFrom(M, NODE, leaf, proof),
                m.players[0].task.graph.root
            )
        );
        vm.prank(defender);
        game.revealNode(m.id, rec, "", desc, proof);
    }

    function test_revealNode_defenderPassesTheirRecord_reverts() public {
        Match memory m = _defended(Lie.Output, NODE);
        _playUntil(m, IDisputeGame.Stage.NodeReveal);
        (bytes memory rec,, bytes memory desc, bytes32[] memory proof) = _revealArgs(m);
        vm.expectRevert(abi.encodeWithSelector(DisputeGameWidth.selector, rec.length, 0));
        vm.prank(defender);
        game.revealNode(m.id, rec, rec, desc, proof);
    }

    function test_revealNode_challengerPassesGraphProof_reverts() public {
        Match memory m = _defended(Lie.Output, NODE);
        _playUntil(m, IDisputeGame.Stage.NodeReveal);
        _move(m);
        m.revealed = Players.record(m.players[0], STEP, NODE);
        (bytes memory rec, bytes memory theirRec, bytes memory desc,) = _revealArgs(m);
        vm.expectRevert(abi.encodeWithSelector(DisputeGameWidth.selector, 3, 0));
        vm.prank(challenger);
        game.revealNode(m.id, rec, theirRec, desc, new bytes32[](3));
    }

    function test_revealNode_challengerWrongTheirRecord_reverts() public {
        Match memory m = _defended(Lie.Output, NODE);
        IDisputeGame.GameView memory v = _playUntil(m, IDisputeGame.Stage.NodeReveal);
        _move(m);
        (bytes memory rec,, bytes memory desc,) = _revealArgs(m);
        vm.expectRevert(
            abi.encodeWithSelector(DisputeGameRecordMismatch.selector, Trees.leaf(rec), v.current[0])
        );
        vm.prank(challenger);
        game.revealNode(m.id, rec, rec, desc, new bytes32[](0));
    }

    /// @notice A liar's raw record at node 3 of step 9 (its other records are honest).
    function _rawMatch(bytes memory raw, bytes memory rawDescriptor, bool honestDefends)
        internal
        returns (Match memory m)
    {
        Task memory t = _task();
        Player memory liar = Players.player(t, Lie.Raw, STEP, NODE);
        liar.raw = raw;
        liar.rawDescriptor = rawDescriptor;
        m = _newMatchWith(t, liar, honestDefends);
        _playUntil(m, IDisputeGame.Stage.NodeReveal);
        if (honestDefends) {
            _move(m);
            m.revealed = Players.record(m.players[0], STEP, NODE);
        }
    }

    function _honestRecord() internal pure returns (bytes memory) {
        return Players.record(Players.honest(_task()), STEP, NODE);
    }

    /// @notice The honest record of node 3 with word `word` set to `value`.
    function _recordWith(uint256 word, bytes32 value) internal pure returns (bytes memory r) {
        r = _honestRecord();
        uint256 at = 4 + 32 * word;
        assembly ("memory-safe") {
            // Overwrites the word at byte offset `at` of r's contents (inside r).
            mstore(add(add(r, 0x20), at), value)
        }
    }

    function _liarReveals(Match memory m, bytes memory expectedError) internal {
        (bytes memory rec, bytes memory theirRec, bytes memory desc, bytes32[] memory proof) = _revealArgs(m);
        vm.expectRevert(expectedError);
        vm.prank(m.accounts[1 - m.honestSide]);
        game.revealNode(m.id, rec, theirRec, desc, proof);
    }

    function test_revealNode_malformedTag_reverts() public {
        bytes memory raw = _honestRecord();
        raw[3] = "X";
        Match memory m = _rawMatch(raw, "", false);
        _liarReveals(m, abi.encodeWithSelector(DisputeGameMalformed.selector, 1, raw.length));
    }

    function test_revealNode_malformedShortRecord_reverts() public {
        bytes memory raw = abi.encodePacked("NODE", uint256(NODE), bytes32(0), uint256(0));
        Match memory m = _rawMatch(raw, "", false);
        _liarReveals(m, abi.encodeWithSelector(DisputeGameMalformed.selector, 1, raw.length));
    }

    function test_revealNode_malformedInputCount_reverts() public {
        bytes memory raw = _recordWith(2, bytes32(uint256(50)));
        Match memory m = _rawMatch(raw, "", false);
        _liarReveals(m, abi.encodeWithSelector(DisputeGameMalformed.selector, 2, raw.length));
    }

    function test_revealNode_malformedLength_reverts() public {
        bytes memory raw = abi.encodePacked(_honestRecord(), bytes32(0));
        Match memory m = _rawMatch(raw, "", false);
        _liarReveals(m, abi.encodeWithSelector(DisputeGameMalformed.selector, 2, raw.length));
    }

    function test_revealNode_malformedIndex_reverts() public {
        bytes memory raw = _recordWith(0, bytes32(uint256(NODE + 1)));
        Match memory m = _rawMatch(raw, "", false);
        _liarReveals(m, abi.encodeWithSelector(DisputeGameMalformed.selector, 3, NODE + 1));
    }

    function test_revealNode_malformedChallengerRecord_reverts() public {
        bytes memory raw = _honestRecord();
        raw[0] = "X";
        Match memory m = _rawMatch(raw, "", true);
        _liarReveals(m, abi.encodeWithSelector(DisputeGameMalformed.selector, 1, raw.length));
    }

    /// @notice The honest record of node 3 with two inputs (its first dropped) and `descHash`.
    function _twoInputRecord(bytes32 descHash) internal pure returns (bytes memory) {
        bytes memory r = _honestRecord();
        return abi.encodePacked(
            "NODE",
            uint256(NODE),
            descHash,
            uint256(2),
            Players.wordAt(r, 132),
            Players.wordAt(r, 164),
            uint256(1),
            Players.wordAt(r, 228)
        );
    }

    function test_revealNode_recordCountsNotTheDescriptors_reverts() public {
        bytes memory raw = _twoInputRecord(sha256(Players.descriptor(M, NODE)));
        Match memory m = _rawMatch(raw, "", false);
        _liarReveals(m, abi.encodeWithSelector(DisputeGameMalformed.selector, 4, 2));
    }

    function test_revealNode_challengerCountsDiffer_reverts() public {
        bytes memory raw = _twoInputRecord(sha256(Players.descriptor(M, NODE)));
        Match memory m = _rawMatch(raw, "", true);
        _liarReveals(m, abi.encodeWithSelector(DisputeGameMalformed.selector, 4, 2));
    }

    function test_revealNode_malformedDescriptorTag_reverts() public {
        bytes memory desc = Players.descriptor(M, NODE);
        desc[3] = "X";
        bytes memory raw = _recordWith(1, sha256(desc));
        Match memory m = _rawMatch(raw, desc, false);
        _liarReveals(m, abi.encodeWithSelector(DisputeGameMalformed.selector, 1, desc.length));
    }

    function test_revealNode_malformedDescriptorLength_reverts() public {
        bytes memory desc = abi.encodePacked(Players.descriptor(M, NODE), bytes32(0));
        bytes memory raw = _recordWith(1, sha256(desc));
        Match memory m = _rawMatch(raw, desc, false);
        _liarReveals(m, abi.encodeWithSelector(DisputeGameMalformed.selector, 2, desc.length));
    }

    function test_revealNode_liarsDescriptorNotInGraph_reverts() public {
        bytes memory desc = Players.descriptor(M, NODE - 1);
        bytes memory raw = _recordWith(1, sha256(desc));
        Match memory m = _rawMatch(raw, desc, false);
        IDisputeGame.GameView memory v = _view(m);
        bytes32 leaf = Trees.leaf(abi.encodePacked("NDSC", uint256(NODE), sha256(desc)));
        bytes32[] memory proof = Trees.opening(m.players[0].task.graph, NODE);
        v;
        _liarReveals(
            m,
            abi.encodeWithSelector(
                MerkleRootMismatch.selector,
                Trees.rootFrom(M, NODE, leaf, proof),
                m.players[0].task.graph.root
            )
        );
    }

    function test_revealNode_challengerDescriptorHashDiffers_reverts() public {
        bytes32 other = sha256(Players.descriptor(M, NODE - 1));
        bytes memory raw = _recordWith(1, other);
        Match memory m = _rawMatch(raw, "", true);
        _liarReveals(
            m,
            abi.encodeWithSelector(
                DisputeGameDescriptorMismatch.selector, other, m.players[0].task.descHashes[NODE]
            )
        );
    }

    function test_revealNode_inputsDiffer_succeeds() public {
        Match memory m = _defended(Lie.StateInput, NODE);
        _playUntil(m, IDisputeGame.Stage.NodeReveal);
        _move(m);
        m.revealed = Players.record(m.players[0], STEP, NODE);
        (bytes memory rec, bytes memory theirRec, bytes memory desc, bytes32[] memory proof) = _revealArgs(m);
        vm.expectEmit(address(game));
        emit IDisputeGame.InputDisputed(m.id, NODE, 1, 1);
        vm.prank(challenger);
        game.revealNode(m.id, rec, theirRec, desc, proof);
        IDisputeGame.GameView memory v = _view(m);
        assertEq(uint256(v.stage), uint256(IDisputeGame.Stage.InputProof), "input proof");
        assertEq(v.inputIndex, 1, "input 1");
        assertEq(uint256(v.toMove), uint256(IDisputeGame.Side.Defender), "the defender proves");
    }

    function test_revealNode_challengerWrongDescriptorOnInputDispute_reverts() public {
        Match memory m = _defended(Lie.StateInput, NODE);
        _playUntil(m, IDisputeGame.Stage.NodeReveal);
        _move(m);
        m.revealed = Players.record(m.players[0], STEP, NODE);
        (bytes memory rec, bytes memory theirRec,,) = _revealArgs(m);
        bytes memory other = Players.descriptor(M, 0);
        vm.expectRevert(
            abi.encodeWithSelector(
                DisputeGameDescriptorMismatch.selector, sha256(other), m.players[0].task.descHashes[NODE]
            )
        );
        vm.prank(challenger);
        game.revealNode(m.id, rec, theirRec, other, new bytes32[](0));
    }

    function test_revealNode_equalInputs_succeeds() public {
        Match memory m = _defended(Lie.Output, NODE);
        _playUntil(m, IDisputeGame.Stage.NodeReveal);
        _move(m);
        m.revealed = Players.record(m.players[0], STEP, NODE);
        (bytes memory rec, bytes memory theirRec, bytes memory desc, bytes32[] memory proof) = _revealArgs(m);
        vm.expectEmit(address(game));
        emit IDisputeGame.OracleAsked(m.id, 1);
        vm.prank(challenger);
        game.revealNode(m.id, rec, theirRec, desc, proof);
        IDisputeGame.GameView memory v = _view(m);
        assertEq(uint256(v.stage), uint256(IDisputeGame.Stage.Oracle), "oracle");
        assertEq(v.questionId, 1, "question");
        IRecomputeOracle.Question memory q = oracle.question(1);
        assertEq(q.programHash, m.players[0].task.cfg.programHash, "program");
        assertEq(q.node, NODE, "node");
        bytes32[3] memory ins = Players.nodeInputs(m.players[0], STEP, NODE);
        assertEq(q.inputsHash, sha256(abi.encodePacked(ins[0], ins[1], ins[2])), "inputs");
        assertEq(q.parties[0], defender, "party 0");
        assertEq(q.parties[1], challenger, "party 1");
        assertEq(uint8(q.status), uint8(IRecomputeOracle.QuestionStatus.Drawing), "drawn once the randomness is readable");
        assertEq(q.oracle, address(0), "nobody assigned in the asking transaction");
        OracleSetup.drawNow(oracle, 1);
        assertTrue(oracle.question(1).oracle != address(0), "assigned");
    }

    // ---- input proofs --------------------------------------------------------------------------

    /// @notice A match in stage InputProof: the liar's input `lie` at `node`, the honest defender to prove.
    function _inputDispute(Lie lie, uint64 node)
        internal
        returns (Match memory m, IDisputeGame.GameView memory v)
    {
        m = _defended(lie, node);
        v = _playUntil(m, IDisputeGame.Stage.InputProof);
    }

    function _expectDefenderWins(Match memory m) internal {
        vm.expectEmit(address(game));
        emit IDisputeGame.GameResolved(m.id, IDisputeGame.Outcome.DefenderWins);
    }

    function _assertOutcome(Match memory m, IDisputeGame.Outcome o) internal view {
        assertEq(uint256(game.outcome(m.id)), uint256(o), "outcome");
        assertEq(uint256(_view(m).stage), uint256(IDisputeGame.Stage.Resolved), "resolved");
    }

    /// @notice Calls the game with `cd` from `who`, bubbling a revert up. Arguments must be built
    ///         before `vm.expectRevert`/`vm.prank`: they hash through the SHA-256 precompile, and a
    ///         precompile call would take the cheatcodes' "next call".
    function _call(address who, bytes memory cd) internal {
        vm.prank(who);
        (bool ok, bytes memory ret) = address(game).call(cd);
        if (!ok) {
            assembly ("memory-safe") {
                // Bubbles the game's revert data up.
                revert(add(ret, 0x20), mload(ret))
            }
        }
    }

    function _stateProofData(Match memory m, Player memory p, IDisputeGame.EntryProof memory e)
        internal
        pure
        returns (bytes memory)
    {
        bytes memory rec = Players.record(p, STEP, NODE);
        return abi.encodeCall(IDisputeGame.proveStateInput, (m.id, rec, Players.descriptor(M, NODE), e));
    }

    function test_proveStateInput_succeeds() public {
        (Match memory m,) = _inputDispute(Lie.StateInput, NODE);
        Player memory h = m.players[0];
        bytes memory cd = _stateProofData(m, h, Players.stateEntryProof(h, STEP));
        _expectDefenderWins(m);
        _call(defender, cd);
        _assertOutcome(m, IDisputeGame.Outcome.DefenderWins);
    }

    function test_proveStateInput_wrongReference_reverts() public {
        (Match memory m,) = _inputDispute(Lie.ConstantInput, NODE);
        Player memory h = m.players[0];
        bytes memory cd = _stateProofData(m, h, Players.stateEntryProof(h, STEP));
        vm.expectRevert(abi.encodeWithSelector(DisputeGameWrongReference.selector, 3, 1));
        _call(defender, cd);
    }

    function test_proveStateInput_wrongEntry_reverts() public {
        (Match memory m, IDisputeGame.GameView memory v) = _inputDispute(Lie.StateInput, NODE);
        Player memory h = m.players[0];
        IDisputeGame.EntryProof memory e = Players.stateEntryProof(h, STEP);
        e.siblings[0] = keccak256("forged sibling");
        bytes memory cd = _stateProofData(m, h, e);
        bytes32 leaf = Players.sten(Players.name("w"), Players.nodeInputs(h, STEP, NODE)[1]);
        bytes32 computed = Trees.rootFrom(3, 2, leaf, e.siblings);
        vm.expectRevert(abi.encodeWithSelector(MerkleRootMismatch.selector, computed, v.agreedRoot));
        _call(defender, cd);
    }

    function test_proveStateInput_recordMismatch_reverts() public {
        (Match memory m, IDisputeGame.GameView memory v) = _inputDispute(Lie.StateInput, NODE);
        Player memory h = m.players[0];
        bytes memory other = Players.record(m.players[1], STEP, NODE);
        bytes memory cd = abi.encodeCall(
            IDisputeGame.proveStateInput,
            (m.id, other, Players.descriptor(M, NODE), Players.stateEntryProof(h, STEP))
        );
        bytes32 leaf = Trees.leaf(other);
        vm.expectRevert(abi.encodeWithSelector(DisputeGameRecordMismatch.selector, leaf, v.current[0]));
        _call(defender, cd);
    }

    function test_proveStateInput_descriptorMismatch_reverts() public {
        (Match memory m,) = _inputDispute(Lie.StateInput, NODE);
        Player memory h = m.players[0];
        bytes memory other = Players.descriptor(M, NODE + 1);
        bytes memory cd = abi.encodeCall(
            IDisputeGame.proveStateInput,
            (m.id, Players.record(h, STEP, NODE), other, Players.stateEntryProof(h, STEP))
        );
        bytes32 dh = sha256(other);
        vm.expectRevert(
            abi.encodeWithSelector(DisputeGameDescriptorMismatch.selector, dh, h.task.descHashes[NODE])
        );
        _call(defender, cd);
    }

    function test_proveStateInput_notYourTurn_reverts() public {
        (Match memory m,) = _inputDispute(Lie.StateInput, NODE);
        Player memory h = m.players[0];
        bytes memory cd = _stateProofData(m, h, Players.stateEntryProof(h, STEP));
        vm.expectRevert(abi.encodeWithSelector(DisputeGameNotYourTurn.selector, m.id, challenger, defender));
        _call(challenger, cd);
    }

    function test_proveStateInput_wrongStage_reverts() public {
        Match memory m = _defended(Lie.StateInput, NODE);
        Player memory h = m.players[0];
        bytes memory cd = _stateProofData(m, h, Players.stateEntryProof(h, STEP));
        vm.expectRevert(
            abi.encodeWithSelector(
                DisputeGameWrongStage.selector,
                m.id,
                IDisputeGame.Stage.InputProof,
                IDisputeGame.Stage.CheckpointDescent
            )
        );
        _call(defender, cd);
    }

    function test_proveStateInput_liarCannotProve_reverts() public {
        Match memory m = _challenged(Lie.StateInput, NODE);
        IDisputeGame.GameView memory v = _playUntil(m, IDisputeGame.Stage.InputProof);
        Player memory liar = m.players[0];
        IDisputeGame.EntryProof memory e = Players.stateEntryProof(liar, STEP);
        bytes memory cd = _stateProofData(m, liar, e);
        bytes32 leaf = Players.sten(Players.name("w"), Players.nodeInputs(liar, STEP, NODE)[1]);
        bytes32 computed = Trees.rootFrom(3, 2, leaf, e.siblings);
        vm.expectRevert(abi.encodeWithSelector(MerkleRootMismatch.selector, computed, v.agreedRoot));
        _call(defender, cd);
        _timeout(v, m);
        _assertOutcome(m, IDisputeGame.Outcome.ChallengerWins);
    }

    function _constantProofData(Match memory m, bytes32[4] memory roots, IDisputeGame.EntryProof memory e)
        internal
        pure
        returns (bytes memory)
    {
        bytes memory rec = Players.record(m.players[0], STEP, NODE);
        return
            abi.encodeCall(
                IDisputeGame.proveConstantInput, (m.id, rec, Players.descriptor(M, NODE), roots, e)
            );
    }

    function test_proveConstantInput_succeeds() public {
        (Match memory m,) = _inputDispute(Lie.ConstantInput, NODE);
        Player memory h = m.players[0];
        bytes memory cd = _constantProofData(m, h.task.programRoots, Players.constantEntryProof(h));
        _expectDefenderWins(m);
        _call(defender, cd);
        _assertOutcome(m, IDisputeGame.Outcome.DefenderWins);
    }

    function test_proveConstantInput_wrongReference_reverts() public {
        (Match memory m,) = _inputDispute(Lie.StateInput, NODE);
        Player memory h = m.players[0];
        bytes memory cd = _constantProofData(m, h.task.programRoots, Players.constantEntryProof(h));
        vm.expectRevert(abi.encodeWithSelector(DisputeGameWrongReference.selector, 1, 3));
        _call(defender, cd);
    }

    function test_proveConstantInput_wrongProgramRoots_reverts() public {
        (Match memory m,) = _inputDispute(Lie.ConstantInput, NODE);
        Player memory h = m.players[0];
        bytes32[4] memory roots = h.task.programRoots;
        roots[3] = keccak256("other constants");
        bytes memory cd = _constantProofData(m, roots, Players.constantEntryProof(h));
        bytes32 computed =
            sha256(abi.encodePacked("PROG", uint256(1), roots[0], roots[1], roots[2], roots[3]));
        vm.expectRevert(
            abi.encodeWithSelector(DisputeGameProgramMismatch.selector, computed, h.task.cfg.programHash)
        );
        _call(defender, cd);
    }

    function test_proveConstantInput_wrongEntry_reverts() public {
        (Match memory m,) = _inputDispute(Lie.ConstantInput, NODE);
        Player memory h = m.players[0];
        IDisputeGame.EntryProof memory e = Players.constantEntryProof(h);
        e.index = 0;
        bytes memory cd = _constantProofData(m, h.task.programRoots, e);
        bytes32 leaf = Players.sten(Players.name("scale"), Players.scale());
        bytes32 computed = Trees.rootFrom(2, 0, leaf, e.siblings);
        vm.expectRevert(abi.encodeWithSelector(MerkleRootMismatch.selector, computed, h.task.constants.root));
        _call(defender, cd);
    }

    function test_proveConstantInput_liarCannotProve_reverts() public {
        Match memory m = _challenged(Lie.ConstantInput, NODE);
        IDisputeGame.GameView memory v = _playUntil(m, IDisputeGame.Stage.InputProof);
        Player memory liar = m.players[0];
        IDisputeGame.EntryProof memory e = Players.constantEntryProof(liar);
        bytes memory cd = _constantProofData(m, liar.task.programRoots, e);
        bytes32 leaf = Players.sten(Players.name("scale"), Players.nodeInputs(liar, STEP, NODE)[2]);
        bytes32 computed = Trees.rootFrom(2, 1, leaf, e.siblings);
        vm.expectRevert(
            abi.encodeWithSelector(MerkleRootMismatch.selector, computed, liar.task.constants.root)
        );
        _call(defender, cd);
        _timeout(v, m);
        _assertOutcome(m, IDisputeGame.Outcome.ChallengerWins);
    }

    function _nodeProofData(Match memory m, bytes memory src, bytes32[] memory proof)
        internal
        pure
        returns (bytes memory)
    {
        bytes memory rec = Players.record(m.players[0], STEP, NODE);
        return
            abi.encodeCall(IDisputeGame.proveNodeInput, (m.id, rec, Players.descriptor(M, NODE), src, proof));
    }

    function test_proveNodeInput_succeeds() public {
        (Match memory m,) = _inputDispute(Lie.FirstInput, NODE);
        (bytes memory src, bytes32[] memory proof) = Players.sourceOf(m.players[0], STEP, NODE);
        bytes memory cd = _nodeProofData(m, src, proof);
        _expectDefenderWins(m);
        _call(defender, cd);
        _assertOutcome(m, IDisputeGame.Outcome.DefenderWins);
    }

    function test_proveNodeInput_wrongReference_reverts() public {
        (Match memory m,) = _inputDispute(Lie.StateInput, NODE);
        (bytes memory src, bytes32[] memory proof) = Players.sourceOf(m.players[0], STEP, NODE);
        bytes memory cd = _nodeProofData(m, src, proof);
        vm.expectRevert(abi.encodeWithSelector(DisputeGameWrongReference.selector, 1, 4));
        _call(defender, cd);
    }

    function test_proveNodeInput_wrongSourceIndex_reverts() public {
        (Match memory m,) = _inputDispute(Lie.FirstInput, NODE);
        (bytes memory src, bytes32[] memory proof) = Players.sourceOf(m.players[0], STEP, NODE - 1);
        bytes memory cd = _nodeProofData(m, src, proof);
        vm.expectRevert(abi.encodeWithSelector(DisputeGameMalformed.selector, 3, NODE - 2));
        _call(defender, cd);
    }

    function test_proveNodeInput_wrongSourceProof_reverts() public {
        (Match memory m, IDisputeGame.GameView memory v) = _inputDispute(Lie.FirstInput, NODE);
        (bytes memory src, bytes32[] memory proof) = Players.sourceOf(m.players[0], STEP, NODE);
        proof[1] = keccak256("forged sibling");
        bytes memory cd = _nodeProofData(m, src, proof);
        bytes32 computed = Trees.rootFrom(M, NODE - 1, Trees.leaf(src), proof);
        vm.expectRevert(abi.encodeWithSelector(MerkleRootMismatch.selector, computed, v.defenderTrace));
        _call(defender, cd);
    }

    function test_proveNodeInput_liarCannotProve_reverts() public {
        Match memory m = _challenged(Lie.FirstInput, NODE);
        IDisputeGame.GameView memory v = _playUntil(m, IDisputeGame.Stage.InputProof);
        Player memory liar = m.players[0];
        (bytes memory src, bytes32[] memory proof) = Players.sourceOf(liar, STEP, NODE);
        bytes memory cd = _nodeProofData(m, src, proof);
        bytes32 out = Players.outputsOf(src)[0];
        bytes32 claimed = Players.nodeInputs(liar, STEP, NODE)[0];
        vm.expectRevert(abi.encodeWithSelector(DisputeGameValueMismatch.selector, out, claimed));
        _call(defender, cd);
        _timeout(v, m);
        _assertOutcome(m, IDisputeGame.Outcome.ChallengerWins);
    }

    function _batchProofData(Match memory m, uint64 node, IDisputeGame.BatchProof memory b)
        internal
        pure
        returns (bytes memory)
    {
        bytes memory rec = Players.record(m.players[0], STEP, node);
        return abi.encodeCall(IDisputeGame.proveBatchInput, (m.id, rec, Players.descriptor(M, node), b));
    }

    function test_proveBatchInput_succeeds() public {
        (Match memory m, IDisputeGame.GameView memory v) = _inputDispute(Lie.FirstInput, 0);
        assertEq(v.position, 0, "node 0");
        assertEq(v.inputIndex, 0, "the batch input");
        bytes memory cd = _batchProofData(m, 0, Players.batchProof(m.players[0], STEP));
        _expectDefenderWins(m);
        _call(defender, cd);
        _assertOutcome(m, IDisputeGame.Outcome.DefenderWins);
    }

    function test_proveBatchInput_wrongReference_reverts() public {
        (Match memory m,) = _inputDispute(Lie.FirstInput, NODE);
        bytes memory cd = _batchProofData(m, NODE, Players.batchProof(m.players[0], STEP));
        vm.expectRevert(abi.encodeWithSelector(DisputeGameWrongReference.selector, 4, 2));
        _call(defender, cd);
    }

    function test_proveBatchInput_otherStepsBatch_reverts() public {
        (Match memory m,) = _inputDispute(Lie.FirstInput, 0);
        Task memory t = m.players[0].task;
        bytes32 other = Players.batchCommitment(t, STEP + 1);
        bytes32 own = Players.batchCommitment(t, STEP);
        assertTrue(other != own, "step 10 draws another batch");
        bytes memory cd = _batchProofData(m, 0, Players.batchProof(m.players[0], STEP + 1));
        vm.expectRevert(abi.encodeWithSelector(DisputeGameValueMismatch.selector, other, own));
        _call(defender, cd);
    }

    function test_proveBatchInput_wrongExampleRoot_reverts() public {
        (Match memory m,) = _inputDispute(Lie.FirstInput, 0);
        Task memory t = m.players[0].task;
        IDisputeGame.BatchProof memory b = Players.batchProof(m.players[0], STEP);
        b.exampleRoots[0] = keccak256("another example");
        bytes memory cd = _batchProofData(m, 0, b);
        uint256 idx = Players.batchIndex(t, STEP, 0);
        bytes32 leaf = Trees.leaf(abi.encodePacked("EXMP", idx, b.exampleRoots[0]));
        bytes32 computed = Trees.rootFrom(5, idx, leaf, Trees.opening(t.dataset, idx));
        vm.expectRevert(abi.encodeWithSelector(MerkleRootMismatch.selector, computed, t.dataset.root));
        _call(defender, cd);
    }

    function test_proveBatchInput_wrongField_reverts() public {
        (Match memory m,) = _inputDispute(Lie.FirstInput, 0);
        Task memory t = m.players[0].task;
        IDisputeGame.BatchProof memory b = Players.batchProof(m.players[0], STEP);
        b.fieldIndex[0] = 1; // field y's position, with x's row
        bytes memory cd = _batchProofData(m, 0, b);
        uint256 idx = Players.batchIndex(t, STEP, 0);
        bytes32 row = Players.tensorCommitment(t.exampleX[idx], Players.dims(t.rowElems));
        bytes32 leaf = Players.sten(Players.name("x"), row);
        bytes32[] memory sibs = new bytes32[](1);
        sibs[0] = b.fieldSiblings[0];
        bytes32 computed = Trees.rootFrom(2, 1, leaf, sibs);
        vm.expectRevert(abi.encodeWithSelector(MerkleRootMismatch.selector, computed, t.examples[idx].root));
        _call(defender, cd);
    }

    function test_proveBatchInput_wrongRowCount_reverts() public {
        (Match memory m,) = _inputDispute(Lie.FirstInput, 0);
        IDisputeGame.BatchProof memory b = Players.batchProof(m.players[0], STEP);
        b.shape[0] = 3;
        bytes memory cd = _batchProofData(m, 0, b);
        vm.expectRevert(abi.encodeWithSelector(DisputeGameMalformed.selector, 4, 2));
        _call(defender, cd);
    }

    function test_proveBatchInput_wrongSiblingCount_reverts() public {
        (Match memory m,) = _inputDispute(Lie.FirstInput, 0);
        IDisputeGame.BatchProof memory b = Players.batchProof(m.players[0], STEP);
        b.datasetSiblings = new bytes32[](5);
        bytes memory cd = _batchProofData(m, 0, b);
        vm.expectRevert(abi.encodeWithSelector(DisputeGameWidth.selector, 5, 6));
        _call(defender, cd);
    }

    function test_proveBatchInput_tooLarge_reverts() public {
        (Match memory m,) = _inputDispute(Lie.FirstInput, 0);
        IDisputeGame.BatchProof memory b = Players.batchProof(m.players[0], STEP);
        uint256 max = new BatchVerifier().MAX_BATCH_BYTES();
        b.data = new bytes(max + 8);
        bytes memory cd = _batchProofData(m, 0, b);
        vm.expectRevert(abi.encodeWithSelector(DisputeGameBatchTooLarge.selector, max + 8, max));
        _call(defender, cd);
    }

    function test_proveBatchInput_liarCannotProve_reverts() public {
        Match memory m = _challenged(Lie.FirstInput, 0);
        IDisputeGame.GameView memory v = _playUntil(m, IDisputeGame.Stage.InputProof);
        Player memory liar = m.players[0];
        bytes memory cd = _batchProofData(m, 0, Players.batchProof(liar, STEP));
        bytes32 batch = Players.batchCommitment(liar.task, STEP);
        bytes32 claimed = Players.nodeInputs(liar, STEP, 0)[0];
        vm.expectRevert(abi.encodeWithSelector(DisputeGameValueMismatch.selector, batch, claimed));
        _call(defender, cd);
        _timeout(v, m);
        _assertOutcome(m, IDisputeGame.Outcome.ChallengerWins);
    }

    // ---- post-state path -----------------------------------------------------------------------

    function test_openPostStateCount_equalTraces_succeeds() public {
        Match memory m = _defended(Lie.PostStateM, NODE);
        IDisputeGame.GameView memory v = _playUntil(m, IDisputeGame.Stage.PostStateCount);
        // PostStateCount is reached only when both first trace levels (hence both roots) are equal.
        assertEq(uint256(v.toMove), uint256(IDisputeGame.Side.Defender), "the defender opens the count");
        bytes32 top = Players.preTop(m.players[0], STEP);
        vm.expectEmit(address(game));
        emit IDisputeGame.PostStateCountOpened(m.id, 3);
        vm.prank(defender);
        game.openPostStateCount(m.id, 3, top);
        v = _view(m);
        assertEq(uint256(v.stage), uint256(IDisputeGame.Stage.PostStateDescent), "post-state descent");
        assertEq(v.leafCount, 3, "entries");
        assertEq(v.height, 2, "depth");
        assertEq(v.current[0], Players.stateRoot(m.players[0], STEP + 1), "defender's post-state");
        assertEq(v.current[1], Players.stateRoot(m.players[1], STEP + 1), "challenger's post-state");
        assertEq(uint256(v.toMove), uint256(IDisputeGame.Side.Defender), "the defender descends first");
    }

    function test_openPostStateCount_wrongTop_reverts() public {
        Match memory m = _defended(Lie.PostStateM, NODE);
        IDisputeGame.GameView memory v = _playUntil(m, IDisputeGame.Stage.PostStateCount);
        bytes32 top = keccak256("another top");
        bytes32 computed = Trees.listRoot(3, top);
        vm.expectRevert(abi.encodeWithSelector(DisputeGameFoldMismatch.selector, computed, v.agreedRoot));
        vm.prank(defender);
        game.openPostStateCount(m.id, 3, top);
    }

    function test_openPostStateCount_wrongCount_reverts() public {
        Match memory m = _defended(Lie.PostStateM, NODE);
        IDisputeGame.GameView memory v = _playUntil(m, IDisputeGame.Stage.PostStateCount);
        bytes32 top = Players.preTop(m.players[0], STEP);
        bytes32 computed = Trees.listRoot(4, top);
        vm.expectRevert(abi.encodeWithSelector(DisputeGameFoldMismatch.selector, computed, v.agreedRoot));
        vm.prank(defender);
        game.openPostStateCount(m.id, 4, top);
    }

    function test_openPostStateCount_zeroCount_reverts() public {
        Match memory m = _defended(Lie.PostStateM, NODE);
        _playUntil(m, IDisputeGame.Stage.PostStateCount);
        uint256 max = game.MAX_STATE_ENTRIES();
        vm.expectRevert(abi.encodeWithSelector(DisputeGameTooManyEntries.selector, 0, max));
        vm.prank(defender);
        game.openPostStateCount(m.id, 0, bytes32(0));
    }

    function test_openPostStateCount_tooManyEntries_reverts() public {
        Match memory m = _defended(Lie.PostStateM, NODE);
        _playUntil(m, IDisputeGame.Stage.PostStateCount);
        uint256 max = game.MAX_STATE_ENTRIES();
        vm.expectRevert(abi.encodeWithSelector(DisputeGameTooManyEntries.selector, max + 1, max));
        vm.prank(defender);
        game.openPostStateCount(m.id, uint64(max + 1), bytes32(0));
    }

    function test_openPostStateCount_wrongStage_reverts() public {
        Match memory m = _defended(Lie.PostStateM, NODE);
        vm.expectRevert(
            abi.encodeWithSelector(
                DisputeGameWrongStage.selector,
                m.id,
                IDisputeGame.Stage.PostStateCount,
                IDisputeGame.Stage.CheckpointDescent
            )
        );
        vm.prank(defender);
        game.openPostStateCount(m.id, 3, bytes32(0));
    }

    function test_descend_postStates_isolatesEntry_succeeds() public {
        Match memory m = _defended(Lie.PostStateM, NODE);
        _playUntil(m, IDisputeGame.Stage.PostStateDescent);
        _move(m);
        (bytes32[] memory mine, bytes32[] memory theirs) = _descendArgs(m);
        vm.expectEmit(address(game));
        emit IDisputeGame.DescentNarrowed(m.id, IDisputeGame.Stage.PostStateDescent, 0, 1);
        vm.prank(challenger);
        game.descend(m.id, mine, theirs);
        IDisputeGame.GameView memory v = _view(m);
        assertEq(uint256(v.stage), uint256(IDisputeGame.Stage.PostStateProof), "post-state proof");
        assertEq(v.position, Players.ENTRY_M, "entry m differs");
        assertEq(v.current[0], Players.stateTree(m.players[0], STEP + 1).rows[0][1], "defender's entry");
        assertEq(v.current[1], Players.stateTree(m.players[1], STEP + 1).rows[0][1], "challenger's entry");
    }

    function _postProofData(Match memory m, IDisputeGame.PostStateProof memory p)
        internal
        pure
        returns (bytes memory)
    {
        return abi.encodeCall(IDisputeGame.provePostState, (m.id, p));
    }

    function test_provePostState_nodeOutput_succeeds() public {
        Match memory m = _defended(Lie.PostStateM, NODE);
        IDisputeGame.GameView memory v = _playUntil(m, IDisputeGame.Stage.PostStateProof);
        assertEq(v.position, Players.ENTRY_M, "entry m differs");
        bytes memory cd = _postProofData(m, Players.postStateProof(m.players[0], STEP, Players.ENTRY_M));
        _expectDefenderWins(m);
        _call(defender, cd);
        _assertOutcome(m, IDisputeGame.Outcome.DefenderWins);
    }

    function test_provePostState_passThrough_succeeds() public {
        Match memory m = _defended(Lie.PostStateK, NODE);
        IDisputeGame.GameView memory v = _playUntil(m, IDisputeGame.Stage.PostStateProof);
        assertEq(v.position, Players.ENTRY_K, "entry k differs");
        bytes memory cd = _postProofData(m, Players.postStateProof(m.players[0], STEP, Players.ENTRY_K));
        _expectDefenderWins(m);
        _call(defender, cd);
        _assertOutcome(m, IDisputeGame.Outcome.DefenderWins);
    }

    function test_provePostState_wrongCommitment_reverts() public {
        Match memory m = _defended(Lie.PostStateM, NODE);
        IDisputeGame.GameView memory v = _playUntil(m, IDisputeGame.Stage.PostStateProof);
        IDisputeGame.PostStateProof memory p = Players.postStateProof(m.players[0], STEP, Players.ENTRY_M);
        p.commitment = keccak256("another commitment");
        bytes memory cd = _postProofData(m, p);
        bytes32 leaf = Players.sten(p.nameHash, p.commitment);
        vm.expectRevert(abi.encodeWithSelector(DisputeGameRecordMismatch.selector, leaf, v.current[0]));
        _call(defender, cd);
    }

    function test_provePostState_wrongPreEntry_reverts() public {
        Match memory m = _defended(Lie.PostStateM, NODE);
        IDisputeGame.GameView memory v = _playUntil(m, IDisputeGame.Stage.PostStateProof);
        IDisputeGame.PostStateProof memory p = Players.postStateProof(m.players[0], STEP, Players.ENTRY_M);
        p.preCommitment = keccak256("another pre-state entry");
        bytes memory cd = _postProofData(m, p);
        bytes32 leaf = Players.sten(p.nameHash, p.preCommitment);
        bytes32 computed = Trees.rootFrom(3, 1, leaf, p.preSiblings);
        vm.expectRevert(abi.encodeWithSelector(MerkleRootMismatch.selector, computed, v.agreedRoot));
        _call(defender, cd);
    }

    function test_provePostState_wrongProgramRoots_reverts() public {
        Match memory m = _defended(Lie.PostStateM, NODE);
        _playUntil(m, IDisputeGame.Stage.PostStateProof);
        IDisputeGame.PostStateProof memory p = Players.postStateProof(m.players[0], STEP, Players.ENTRY_M);
        p.programRoots[2] = keccak256("other outputs");
        bytes memory cd = _postProofData(m, p);
        bytes32 computed = sha256(
            abi.encodePacked(
                "PROG", uint256(1), p.programRoots[0], p.programRoots[1], p.programRoots[2], p.programRoots[3]
            )
        );
        bytes32 programHash = m.players[0].task.cfg.programHash;
        vm.expectRevert(abi.encodeWithSelector(DisputeGameProgramMismatch.selector, computed, programHash));
        _call(defender, cd);
    }

    function test_provePostState_wrongOutputReference_reverts() public {
        Match memory m = _defended(Lie.PostStateM, NODE);
        _playUntil(m, IDisputeGame.Stage.PostStateProof);
        IDisputeGame.PostStateProof memory p = Players.postStateProof(m.players[0], STEP, Players.ENTRY_M);
        p.ref[2] = 1; // claims m is output 1 of the last node (that is w)
        bytes memory cd = _postProofData(m, p);
        bytes32 leaf = Trees.leaf(
            abi.encodePacked("POUT", uint256(1), p.nameHash, p.typeHash, p.ref[0], p.ref[1], p.ref[2])
        );
        bytes32 computed = Trees.rootFrom(4, 1, leaf, p.outputSiblings);
        vm.expectRevert(
            abi.encodeWithSelector(MerkleRootMismatch.selector, computed, m.players[0].task.outputs.root)
        );
        _call(defender, cd);
    }

    function test_provePostState_wrongSourceRecord_reverts() public {
        Match memory m = _defended(Lie.PostStateM, NODE);
        IDisputeGame.GameView memory v = _playUntil(m, IDisputeGame.Stage.PostStateProof);
        IDisputeGame.PostStateProof memory p = Players.postStateProof(m.players[0], STEP, Players.ENTRY_M);
        p.sourceSiblings[0] = keccak256("forged sibling");
        bytes memory cd = _postProofData(m, p);
        bytes32 computed = Trees.rootFrom(M, M - 1, Trees.leaf(p.sourceRecord), p.sourceSiblings);
        vm.expectRevert(abi.encodeWithSelector(MerkleRootMismatch.selector, computed, v.defenderTrace));
        _call(defender, cd);
    }

    function test_provePostState_liarCannotProve_reverts() public {
        Match memory m = _challenged(Lie.PostStateM, NODE);
        IDisputeGame.GameView memory v = _playUntil(m, IDisputeGame.Stage.PostStateProof);
        IDisputeGame.PostStateProof memory p = Players.postStateProof(m.players[0], STEP, Players.ENTRY_M);
        bytes memory cd = _postProofData(m, p);
        bytes32 out = Players.outputsOf(p.sourceRecord)[0];
        vm.expectRevert(abi.encodeWithSelector(DisputeGameValueMismatch.selector, out, p.commitment));
        _call(defender, cd);
        _timeout(v, m);
        _assertOutcome(m, IDisputeGame.Outcome.ChallengerWins);
    }

    function test_provePostState_liarPassThroughCannotProve_reverts() public {
        Match memory m = _challenged(Lie.PostStateK, NODE);
        IDisputeGame.GameView memory v = _playUntil(m, IDisputeGame.Stage.PostStateProof);
        IDisputeGame.PostStateProof memory p = Players.postStateProof(m.players[0], STEP, Players.ENTRY_K);
        bytes memory cd = _postProofData(m, p);
        bytes32 leaf = Players.sten(Players.name("k"), p.commitment);
        bytes32 computed = Trees.rootFrom(3, 0, leaf, p.sourceEntry.siblings);
        vm.expectRevert(abi.encodeWithSelector(MerkleRootMismatch.selector, computed, v.agreedRoot));
        _call(defender, cd);
        _timeout(v, m);
        _assertOutcome(m, IDisputeGame.Outcome.ChallengerWins);
    }

    function test_provePostState_wrongStage_reverts() public {
        Match memory m = _defended(Lie.PostStateM, NODE);
        IDisputeGame.PostStateProof memory p;
        vm.expectRevert(
            abi.encodeWithSelector(
                DisputeGameWrongStage.selector,
                m.id,
                IDisputeGame.Stage.PostStateProof,
                IDisputeGame.Stage.CheckpointDescent
            )
        );
        vm.prank(defender);
        game.provePostState(m.id, p);
    }

    // ---- oracle --------------------------------------------------------------------------------

    function _oracleMatch(bool honestDefends)
        internal
        returns (Match memory m, IDisputeGame.GameView memory v)
    {
        m = _newMatch(_task(), Lie.Output, STEP, NODE, honestDefends);
        v = _playUntil(m, IDisputeGame.Stage.Oracle);
    }

    function test_resolveOracle_defenderRight_succeeds() public {
        (Match memory m, IDisputeGame.GameView memory v) = _oracleMatch(true);
        _answerHonestly(m, v);
        vm.expectEmit(address(game));
        emit IDisputeGame.GameResolved(m.id, IDisputeGame.Outcome.DefenderWins);
        game.resolveOracle(m.id);
        _assertOutcome(m, IDisputeGame.Outcome.DefenderWins);
    }

    function test_resolveOracle_challengerRight_succeeds() public {
        (Match memory m, IDisputeGame.GameView memory v) = _oracleMatch(false);
        _answerHonestly(m, v);
        vm.expectEmit(address(game));
        emit IDisputeGame.GameResolved(m.id, IDisputeGame.Outcome.ChallengerWins);
        game.resolveOracle(m.id);
        _assertOutcome(m, IDisputeGame.Outcome.ChallengerWins);
    }

    function test_resolveOracle_neitherRight_succeeds() public {
        (Match memory m, IDisputeGame.GameView memory v) = _oracleMatch(true);
        bytes32[] memory outs = new bytes32[](1);
        outs[0] = keccak256("a third answer");
        _answer(v, outs);
        game.resolveOracle(m.id);
        _assertOutcome(m, IDisputeGame.Outcome.BothLose);
    }

    function test_resolveOracle_abandoned_succeeds() public {
        (Match memory m, IDisputeGame.GameView memory v) = _oracleMatch(true);
        OracleSetup.drawNow(oracle, v.questionId);
        vm.warp(block.timestamp + ANSWER_WINDOW + 1);
        oracle.reassign(v.questionId); // MAX_ATTEMPTS = 1: abandoned
        vm.expectEmit(address(game));
        emit IDisputeGame.GameResolved(m.id, IDisputeGame.Outcome.NoDecision);
        game.resolveOracle(m.id);
        _assertOutcome(m, IDisputeGame.Outcome.NoDecision);
    }

    /// @notice Too few oracles for a whole escalation: the question waits, with the game's clocks
    ///         stopped, and is abandoned after the wait limit (NoDecision, no one is eliminated).
    function test_resolveOracle_noOracle_succeeds() public {
        vm.prank(oracleNode);
        oracle.requestExit();
        vm.roll(block.number + 1);
        (Match memory m, IDisputeGame.GameView memory v) = _oracleMatch(true);
        OracleSetup.drawNow(oracle, v.questionId);
        (IRecomputeOracle.QuestionStatus status,) = oracle.result(v.questionId);
        assertEq(uint256(status), uint256(IRecomputeOracle.QuestionStatus.Drawing), "waits");
        vm.warp(block.timestamp + ANSWER_WINDOW + 1);
        vm.expectRevert(abi.encodeWithSelector(DisputeGameNotPlaying.selector, m.id, IDisputeGame.Stage.Oracle));
        game.timeout(m.id);
        OracleSetup.drawNow(oracle, v.questionId);
        (status,) = oracle.result(v.questionId);
        assertEq(uint256(status), uint256(IRecomputeOracle.QuestionStatus.Abandoned), "abandoned after the wait");
        game.resolveOracle(m.id);
        _assertOutcome(m, IDisputeGame.Outcome.NoDecision);
    }

    function test_resolveOracle_notDone_reverts() public {
        (Match memory m, IDisputeGame.GameView memory v) = _oracleMatch(true);
        vm.expectRevert(
            abi.encodeWithSelector(
                DisputeGameOracleNotDone.selector,
                v.questionId,
                uint8(IRecomputeOracle.QuestionStatus.Drawing)
            )
        );
        game.resolveOracle(m.id);
        OracleSetup.drawNow(oracle, v.questionId);
        IRecomputeOracle.Question memory q = oracle.question(v.questionId);
        bytes32[] memory outs = _honestOutputs(m, v);
        vm.prank(q.oracle);
        oracle.answer(v.questionId, outs);
        vm.expectRevert(
            abi.encodeWithSelector(
                DisputeGameOracleNotDone.selector,
                v.questionId,
                uint8(IRecomputeOracle.QuestionStatus.Answered)
            )
        );
        game.resolveOracle(m.id);
    }

    function test_resolveOracle_wrongStage_reverts() public {
        Match memory m = _defended(Lie.Output, NODE);
        vm.expectRevert(
            abi.encodeWithSelector(
                DisputeGameWrongStage.selector,
                m.id,
                IDisputeGame.Stage.Oracle,
                IDisputeGame.Stage.CheckpointDescent
            )
        );
        game.resolveOracle(m.id);
    }

    function test_timeout_duringOracle_reverts() public {
        (Match memory m,) = _oracleMatch(true);
        vm.warp(block.timestamp + 10 * CLOCK);
        vm.expectRevert(
            abi.encodeWithSelector(DisputeGameNotPlaying.selector, m.id, IDisputeGame.Stage.Oracle)
        );
        game.timeout(m.id);
    }

    // ---- clocks and timeout --------------------------------------------------------------------

    function test_timeout_tooEarly_reverts() public {
        Match memory m = _defended(Lie.Output, NODE);
        uint256 deadline = block.timestamp + CLOCK;
        vm.warp(deadline);
        vm.expectRevert(abi.encodeWithSelector(DisputeGameClockRunning.selector, m.id, deadline));
        game.timeout(m.id);
    }

    function test_timeout_defenderSilent_succeeds() public {
        Match memory m = _defended(Lie.Output, NODE);
        vm.warp(block.timestamp + CLOCK + 1);
        vm.expectEmit(address(game));
        emit IDisputeGame.GameResolved(m.id, IDisputeGame.Outcome.ChallengerWins);
        game.timeout(m.id);
        _assertOutcome(m, IDisputeGame.Outcome.ChallengerWins);
        assertEq(_view(m).clockLeft[0], 0, "the defender's clock ran out");
    }

    function test_timeout_challengerSilent_succeeds() public {
        Match memory m = _defended(Lie.Output, NODE);
        _move(m);
        vm.warp(block.timestamp + CLOCK + 1);
        game.timeout(m.id);
        _assertOutcome(m, IDisputeGame.Outcome.DefenderWins);
    }

    function test_timeout_clocksAreCharged_succeeds() public {
        Match memory m = _defended(Lie.Output, NODE);
        vm.warp(block.timestamp + 100);
        _move(m); // the defender used 100 s
        m.posted = Trees.descent(m.players[0].checkpoints, 2, 0, N);
        vm.warp(block.timestamp + 250);
        _move(m); // the challenger used 250 s
        IDisputeGame.GameView memory v = _view(m);
        assertEq(v.clockLeft[0], CLOCK - 100, "defender's clock");
        assertEq(v.clockLeft[1], CLOCK - 250, "challenger's clock");
        uint256 deadline = block.timestamp + CLOCK - 100;
        vm.warp(deadline);
        vm.expectRevert(abi.encodeWithSelector(DisputeGameClockRunning.selector, m.id, deadline));
        game.timeout(m.id);
        vm.warp(deadline + 1);
        game.timeout(m.id);
        _assertOutcome(m, IDisputeGame.Outcome.ChallengerWins);
    }

    function test_bisect_afterExpiry_reverts() public {
        Match memory m = _defended(Lie.Output, NODE);
        IDisputeGame.GameView memory v = _playUntil(m, IDisputeGame.Stage.StepBisection);
        (bytes32[] memory mine, bytes32[] memory theirs, bytes32[] memory loProof) = _bisectArgs(m);
        uint256 deadline = uint256(v.turnStartedAt) + v.clockLeft[0];
        vm.warp(deadline + 1);
        vm.expectRevert(abi.encodeWithSelector(DisputeGameClockExpired.selector, m.id, deadline));
        vm.prank(defender);
        game.bisect(m.id, mine, theirs, loProof);
    }

    function test_revealNode_afterExpiry_reverts() public {
        Match memory m = _defended(Lie.Output, NODE);
        IDisputeGame.GameView memory v = _playUntil(m, IDisputeGame.Stage.NodeReveal);
        (bytes memory rec,, bytes memory desc, bytes32[] memory proof) = _revealArgs(m);
        uint256 deadline = uint256(v.turnStartedAt) + v.clockLeft[0];
        vm.warp(deadline + 1);
        vm.expectRevert(abi.encodeWithSelector(DisputeGameClockExpired.selector, m.id, deadline));
        vm.prank(defender);
        game.revealNode(m.id, rec, "", desc, proof);
    }

    function test_timeout_resolved_reverts() public {
        Match memory m = _defended(Lie.Output, NODE);
        vm.warp(block.timestamp + CLOCK + 1);
        game.timeout(m.id);
        vm.expectRevert(
            abi.encodeWithSelector(DisputeGameNotPlaying.selector, m.id, IDisputeGame.Stage.Resolved)
        );
        game.timeout(m.id);
    }

    function test_descend_resolved_reverts() public {
        Match memory m = _defended(Lie.Output, NODE);
        vm.warp(block.timestamp + CLOCK + 1);
        game.timeout(m.id);
        vm.expectRevert(
            abi.encodeWithSelector(
                DisputeGameWrongStage.selector,
                m.id,
                IDisputeGame.Stage.CheckpointDescent,
                IDisputeGame.Stage.Resolved
            )
        );
        vm.prank(defender);
        game.descend(m.id, new bytes32[](4), new bytes32[](0));
    }

    // ---- whole games and bounds ----------------------------------------------------------------

    function test_game_everyLieBothSides_succeeds() public {
        for (uint256 l = uint256(Lie.Output); l <= uint256(Lie.PostStateK); ++l) {
            for (uint256 side; side < 2; ++side) {
                Match memory m =
                    _newMatch(_task(), Lie(l), STEP, l == uint256(Lie.FirstInput) ? 0 : NODE, side == 0);
                assertEq(uint256(_play(m)), uint256(_honestWin(m)), "the honest player wins");
                uint256 bound = game.roundBound(m.players[0].task.cfg);
                assertLe(m.moves[0], bound, "defender's moves");
                assertLe(m.moves[1], bound, "challenger's moves");
            }
        }
    }

    function test_players_hashConstants_succeeds() public pure {
        assertEq(Players.NAME_K, sha256("k"), "k");
        assertEq(Players.NAME_M, sha256("m"), "m");
        assertEq(Players.NAME_W, sha256("w"), "w");
        assertEq(Players.NAME_X, sha256("x"), "x");
        assertEq(Players.NAME_SCALE, sha256("scale"), "scale");
        assertEq(Players.OP_MUL, sha256("aten.mul.Tensor"), "mul");
        assertEq(Players.OP_SPLIT, sha256("aten.split.Tensor"), "split");
        assertEq(Players.NO_ARGS, sha256(""), "no args");
        assertEq(Players.TYPE_F32_2, sha256(abi.encodePacked(uint8(1), uint8(1), uint64(2))), "float32[2]");
        assertEq(Players.SCALE, sha256("const scale"), "scale value");
        assertEq(Players.BIAS, sha256("const bias"), "bias value");
        assertEq(Players.STATE_K, sha256("state k"), "k value");
        assertEq(Players.STATE_M0, sha256("state m"), "m0");
        assertEq(Players.STATE_W0, sha256("state w"), "w0");
        assertEq(Players.LIE_M, sha256("lie m"), "lie m");
        assertEq(Players.LIE_K, sha256("lie k"), "lie k");
        assertEq(Players.LIE_W, sha256("lie w"), "lie w");
        assertEq(Players.LIE_SCALE, sha256("lie scale"), "lie scale");
        assertEq(Players.LIE_INPUT0, sha256("lie input 0"), "lie input 0");
    }

    /// @notice The test utilities against the existing reference: Trees against Reference, and the
    ///         padded-tree view (PAD exactly where `p * 2^h >= n`).
    function test_trees_matchReference_succeeds() public pure {
        for (uint256 n = 1; n <= 17; ++n) {
            bytes32[] memory leaves = new bytes32[](n);
            for (uint256 i; i < n; ++i) {
                leaves[i] = keccak256(abi.encode(n, i));
            }
            Trees.Tree memory t = Trees.build(leaves);
            assertEq(t.root, Reference.root(leaves), "root");
            for (uint256 i; i < n; ++i) {
                assertEq(Trees.opening(t, i), Reference.proof(leaves, i), "opening");
                assertEq(Trees.rootFrom(n, i, leaves[i], Trees.opening(t, i)), t.root, "fold");
            }
            for (uint256 h; h <= Trees.height(t); ++h) {
                for (uint256 p; p < (uint256(1) << (Trees.height(t) - h)); ++p) {
                    assertEq(Trees.nodeAt(t, h, p) == bytes32(0), (p << h) >= n, "PAD iff p 2^h >= n");
                }
            }
        }
    }

    function test_players_stateRootIsTreeRoot_succeeds() public pure {
        Task memory t = _task();
        Player memory h = Players.honest(t);
        Player memory liar = Players.player(t, Lie.PostStateK, STEP, NODE);
        for (uint256 s; s <= T; ++s) {
            assertEq(Players.stateRoot(h, s), Players.stateTree(h, s).root, "honest");
            if (s <= STEP + 1) {
                assertEq(Players.stateRoot(liar, s), Players.stateTree(liar, s).root, "liar");
            } else {
                assertTrue(Players.stateRoot(liar, s) != Players.stateRoot(h, s), "liar's later roots differ");
            }
            assertEq(
                Players.ckptLeaf(s, h.task.cfg.programHash),
                Trees.leaf(abi.encodePacked("CKPT", s, t.cfg.programHash)),
                "CKPT"
            );
        }
    }

    function test_roundBound_matchesRules_succeeds() public view {
        IDisputeGame.Config memory cfg = _cfg();
        assertEq(game.roundBound(cfg), _expectedRounds(cfg), "roundBound");
        assertEq(game.roundBound(cfg), 1 + 2 + 23, "checkpoints 1, bisection 2, element and dot path 23");
        assertEq(
            game.honestGasBound(cfg),
            game.OPEN_GAS() + 26 * (game.MOVE_GAS_BASE() + game.MOVE_GAS_PER_WIDTH() * N) + game.PROOF_GAS(),
            "honestGasBound"
        );
        assertEq(
            game.timeBound(cfg),
            2 * CLOCK + 3 + oracle.maxResolutionTime(),
            "timeBound"
        );
    }

    function test_roundBound_badConfig_reverts() public {
        IDisputeGame.Config memory cfg = _cfg();
        cfg.arity = 3;
        vm.expectRevert(abi.encodeWithSelector(DisputeGameBadConfig.selector, 6, 3));
        game.roundBound(cfg);
    }

    // ---- metering ------------------------------------------------------------------------------

    /// @notice Each side's meter covers what its calls used (plus each transaction's base cost) and
    ///         overcounts by at most the fixed allowances; the wei part is that gas at the gas price;
    ///         a keeper's call is not counted.
    function test_meterOf_countsEachSidesCalls_succeeds() public {
        vm.txGasPrice(7 gwei);
        Match memory m = _newMatch(_task(), Lie.PostStateK, STEP, NODE, true);
        uint256[2] memory used;
        uint256[2] memory calls;
        uint256[2] memory bytesSent;
        for (;;) {
            IDisputeGame.GameView memory v = _view(m);
            if (v.stage == IDisputeGame.Stage.Resolved) break;
            uint256 side = uint256(v.toMove);
            bytes memory cd = _moveData(m, v);
            (bool ok, uint256 gas,) = _send(m.accounts[side], cd);
            assertTrue(ok, "move");
            used[side] += gas;
            calls[side] += 1;
            bytesSent[side] += cd.length;
        }
        (uint256[2] memory meterGas, uint256[2] memory meterWei) = game.meterOf(m.id);
        for (uint256 side; side < 2; ++side) {
            assertGe(meterGas[side], used[side] + calls[side] * game.TX_BASE_GAS(), "covers what was spent");
            assertLe(
                meterGas[side],
                used[side]
                    + calls[side] * (game.TX_BASE_GAS() + game.METER_GAS())
                    + bytesSent[side] * game.CALLDATA_GAS_PER_BYTE(),
                "overcounts by the allowances at most"
            );
            assertEq(meterWei[side], meterGas[side] * 7 gwei, "at the gas price");
            assertLe(meterGas[side], game.honestGasBound(m.players[0].task.cfg), "within the bond's bound");
        }
    }

    function test_meterOf_keeperNotCounted_succeeds() public {
        Match memory m = _newMatch(_task(), Lie.Output, STEP, NODE, true);
        IDisputeGame.GameView memory v = _view(m);
        vm.warp(uint256(v.turnStartedAt) + v.clockLeft[0] + 1);
        vm.prank(oracleNode);
        game.timeout(m.id);
        (uint256[2] memory gas, uint256[2] memory weiSpent) = game.meterOf(m.id);
        assertEq(gas[0] + gas[1] + weiSpent[0] + weiSpent[1], 0, "nothing metered");
    }

    // ---- who opens -----------------------------------------------------------------------------

    /// @notice Attack (issue: unanswerable questions): a game opened outside the market, between two
    ///         accounts of one attacker, reached the oracle. Only the bound market opens games now.
    function test_open_notMarket_reverts() public {
        IDisputeGame.Config memory cfg = _cfg();
        vm.expectRevert(abi.encodeWithSelector(DisputeGameNotMarket.selector, defender, market));
        vm.prank(defender);
        game.open(cfg, defender, bytes32(uint256(1)), challenger, bytes32(uint256(2)));
    }

    function test_bindMarket_notDeployer_reverts() public {
        DisputeGame fresh = new DisputeGame(oracle);
        vm.expectRevert(abi.encodeWithSelector(DisputeGameNotDeployer.selector, defender, address(this)));
        vm.prank(defender);
        fresh.bindMarket(defender);
    }

    function test_bindMarket_twice_reverts() public {
        vm.expectRevert(abi.encodeWithSelector(DisputeGameMarketAlreadyBound.selector, market));
        game.bindMarket(defender);
    }

    function test_bindMarket_unbound_noOneOpens_reverts() public {
        DisputeGame fresh = new DisputeGame(oracle);
        vm.expectEmit(address(fresh));
        emit IDisputeGame.MarketBound(market);
        fresh.bindMarket(market);
        assertEq(fresh.market(), market, "bound");
        DisputeGame unbound = new DisputeGame(oracle);
        IDisputeGame.Config memory cfg = _cfg();
        vm.expectRevert(abi.encodeWithSelector(DisputeGameNotMarket.selector, address(0), address(0)));
        vm.prank(address(0));
        unbound.open(cfg, defender, bytes32(uint256(1)), challenger, bytes32(uint256(2)));
    }
}
