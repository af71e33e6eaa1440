// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {Test} from "forge-std/Test.sol";

import {DisputeGame} from "../../src/DisputeGame.sol";
import {RecomputeOracle} from "../../src/RecomputeOracle.sol";
import {TaskMarket} from "../../src/TaskMarket.sol";
import {IDisputeGame} from "../../src/interfaces/IDisputeGame.sol";
import {IRecomputeOracle} from "../../src/interfaces/IRecomputeOracle.sol";
import {ITaskMarket} from "../../src/interfaces/ITaskMarket.sol";
import {DisputeGameNotYourTurn} from "../../src/lib/GameErrors.sol";
import {CheckpointLists} from "../utils/CheckpointLists.sol";
import {Reference} from "../utils/Reference.sol";
import {OracleSetup} from "../utils/OracleSetup.sol";
import {ProtocolModel} from "./ProtocolModel.sol";

/// @title FindingsTest
/// @notice The findings of the invariant campaign (PROPERTIES.md, "Findings"): each call sequence that
///         broke a promise of docs/game.md, kept as a regression test of the rule that fixed it.
contract FindingsTest is Test {
    using CheckpointLists for CheckpointLists.List;

    uint64 internal constant WINDOW = 1 hours;

    RecomputeOracle internal recompute;
    DisputeGame internal game;
    TaskMarket internal market;

    address internal honest = makeAddr("honest");
    address internal sybil = makeAddr("sybil");
    address internal cheater = makeAddr("cheater");

    function setUp() public {
        vm.txGasPrice(0.5 gwei); // below the tasks' cap: a winner is repaid exactly what it spent
        recompute = OracleSetup.deploy(
            OracleSetup.params(0.01 ether, 1 ether, 0.1 ether, 0.1 ether, WINDOW, 1 days, 1, 2)
        );
        game = new DisputeGame(recompute);
        market = new TaskMarket(game, recompute);
        recompute.bindGame(address(game));
        game.bindMarket(address(market));
        OracleSetup.registerMany(recompute, "oracle", 4);
    }

    /// @notice Finding 1: `reassign` opened the next answer window at the time of the call, so a
    ///         question poked late outlived `maxResolutionTime`, and its game `timeBound`. Windows are
    ///         anchored to the question: poked after every window has passed, it is abandoned.
    function test_reassign_afterMaxResolutionTime_abandons_succeeds() public {
        uint256 askedAt = block.timestamp;
        uint256 qid = _ask();
        OracleSetup.drawNow(recompute, qid);
        vm.warp(askedAt + recompute.maxResolutionTime() + 1);
        recompute.reassign(qid); // anyone, long after the silent oracle's window
        OracleSetup.drawNow(recompute, qid); // the next draw's deadline has passed too
        (IRecomputeOracle.QuestionStatus status,) = recompute.result(qid);
        assertEq(uint8(status), uint8(IRecomputeOracle.QuestionStatus.Abandoned), "still open");
    }

    /// @notice Finding 1b: anchoring must still leave every attempt its windows: reassigned at the
    ///         first second after a deadline, the question goes to the next oracle.
    function test_reassign_atFirstChance_drawsNextOracle_succeeds() public {
        uint256 qid = _ask();
        OracleSetup.drawNow(recompute, qid);
        vm.warp(recompute.question(qid).deadline + 1);
        recompute.reassign(qid);
        OracleSetup.drawNow(recompute, qid);
        IRecomputeOracle.Question memory q = recompute.question(qid);
        assertEq(
            uint8(q.status), uint8(IRecomputeOracle.QuestionStatus.Assigned), "abandoned with an attempt left"
        );
        assertEq(q.attempts, 2, "second attempt");
    }

    /// @notice Finding 2a: when `members[0]` played for its group, a sybil that submitted the honest
    ///         root first threw the game and every honest member was slashed. Games are now between
    ///         trainers: the sybil loses its own game alone, the honest trainer beats the cheater, keeps
    ///         its bond, takes the reward and is repaid what its own moves cost (finding 3: the
    ///         compensation was paid to `members[0]`, whoever moved; issue 12: it is metered now, so
    ///         the sybil that never moved is repaid nothing).
    function test_settleDispute_sybilThrowsItsOwnGame_honestWins_succeeds() public {
        (ProtocolModel.Run memory run, uint256 taskId) = _task();
        CheckpointLists.List memory truth = _enterAll(run, taskId);
        uint256 bond = market.specOf(taskId).bond;

        uint256 thrown = market.openDispute(taskId, sybil, cheater); // the sybil never moves
        vm.warp(block.timestamp + market.specOf(taskId).clock + 1);
        game.timeout(thrown);
        market.settleDispute(thrown);
        assertTrue(market.trainerOf(taskId, sybil).eliminated, "the sybil lost");
        assertFalse(market.trainerOf(taskId, honest).eliminated, "the honest trainer did not play");
        assertEq(market.groupOf(taskId, 0).live, 1, "the true group lives on");

        uint256 played = market.openDispute(taskId, honest, cheater);
        bytes32[] memory nodes = ProtocolModel.nodesAt(truth.levels, 1, 0, 2);
        vm.prank(honest);
        game.descend(played, nodes, new bytes32[](0));
        vm.warp(block.timestamp + market.specOf(taskId).clock + 1); // the cheater gives up
        vm.prank(honest);
        game.timeout(played);
        (, uint256[2] memory spent) = game.meterOf(played);
        uint256 repaid = spent[0];
        assertGt(repaid, 0, "the honest trainer's two calls");
        assertLt(repaid, market.compensation(market.specOf(taskId)), "below the bound");
        market.settleDispute(played);
        vm.warp(market.specOf(taskId).disputeDeadline + 1);
        market.finalize(taskId);
        market.claim(taskId, honest);

        assertEq(market.creditOf(honest), bond + 1 ether + repaid, "bond, reward and its metered gas");
        assertEq(market.creditOf(sybil), 0, "the sybil that never moved: nothing");
    }

    /// @notice Finding 2b: when any member could move for its group, a sybil that copied the honest
    ///         group's public root moved first in a bisection round and posted junk between the proven
    ///         endpoints, committing the honest side to a state it could never defend. Only the
    ///         trainer who plays a side moves for it now.
    function test_bisect_sybilInHonestTrainersGame_reverts() public {
        (ProtocolModel.Run memory run, uint256 taskId) = _task();
        CheckpointLists.List memory truth = _enterAll(run, taskId);
        ProtocolModel.Claims memory lie = _lie();
        uint256 g = market.openDispute(taskId, honest, cheater);
        bytes32[] memory mine = ProtocolModel.nodesAt(truth.levels, 1, 0, 2);
        bytes32[] memory theirs =
            ProtocolModel.nodesAt(ProtocolModel.checkpointList(run, lie).levels, 1, 0, 2);
        vm.prank(honest);
        game.descend(g, mine, new bytes32[](0));
        vm.prank(cheater);
        game.descend(g, theirs, mine);
        mine = ProtocolModel.nodesAt(truth.levels, 0, 2, 2);
        theirs = ProtocolModel.nodesAt(ProtocolModel.checkpointList(run, lie).levels, 0, 2, 2);
        vm.prank(honest);
        game.descend(g, mine, new bytes32[](0));
        vm.prank(cheater);
        game.descend(g, theirs, mine);
        assertEq(uint8(game.gameOf(g).stage), uint8(IDisputeGame.Stage.StepBisection));

        bytes32[] memory junk = new bytes32[](3);
        (junk[0], junk[1], junk[2]) =
        (ProtocolModel.trueRoot(run, 2), keccak256("junk"), ProtocolModel.trueRoot(run, 4));
        bytes32[] memory loProof = truth.opening(1);
        vm.expectRevert(abi.encodeWithSelector(DisputeGameNotYourTurn.selector, g, sybil, honest));
        vm.prank(sybil);
        game.bisect(g, junk, new bytes32[](0), loProof);
    }

    // ---- helpers -------------------------------------------------------------------------------

    function _ask() internal returns (uint256) {
        vm.prank(address(game));
        return recompute.ask(keccak256("program"), 0, new bytes32[](1), [makeAddr("a"), makeAddr("b")]);
    }

    /// @dev T = 4, c = 2 (checkpoints 0, 2, 4), two nodes, arity 2; the winner is compensated.
    function _task() internal returns (ProtocolModel.Run memory run, uint256 taskId) {
        run = ProtocolModel.Run({
            steps: 4,
            interval: 2,
            nodes: 2,
            arity: 2,
            salt: "finding",
            programHash: ProtocolModel.programHash(2)
        });
        ITaskMarket.TaskSpec memory spec;
        spec.programHash = run.programHash;
        spec.graphRoot = Reference.root(ProtocolModel.graphLeaves(run.nodes));
        spec.datasetRoot = keccak256("dataset");
        spec.initialStateRoot = ProtocolModel.trueRoot(run, 0);
        spec.datasetSize = 16;
        spec.steps = run.steps;
        spec.checkpointInterval = run.interval;
        spec.batchSize = 1;
        spec.nodeCount = run.nodes;
        spec.arity = run.arity;
        spec.clock = 1 hours;
        spec.slots = 3;
        spec.gasPriceCap = 1 gwei;
        spec.joinDeadline = uint64(block.timestamp + 1 hours);
        spec.submitDeadline = spec.joinDeadline;
        spec.disputeDeadline = spec.submitDeadline + 1 days; // reveals, then disputes
        spec.bond = market.minBond(spec);
        taskId = market.postTask{value: 1 ether}(spec);
    }

    /// @dev The cheater lies about the final checkpoint.
    function _lie() internal pure returns (ProtocolModel.Claims memory) {
        return ProtocolModel.Claims({salt: "cheater", ckptMask: 1 << 2, bugMask: 1});
    }

    /// @dev The sybil holds the true list too (its owner trained once, or colludes with a trainer that
    ///      did: commit-reveal stops copying, not sharing) and reveals it first, then the honest
    ///      trainer, then the cheater its lie.
    function _enterAll(ProtocolModel.Run memory run, uint256 taskId)
        internal
        returns (CheckpointLists.List memory truth)
    {
        ProtocolModel.Claims memory honestClaims;
        truth = ProtocolModel.checkpointList(run, honestClaims);
        CheckpointLists.List memory lie = ProtocolModel.checkpointList(run, _lie());
        _enter(taskId, sybil, truth);
        _enter(taskId, honest, truth);
        _enter(taskId, cheater, lie);
        vm.warp(market.specOf(taskId).submitDeadline + 1);
        vm.roll(block.number + 1);
        _reveal(taskId, sybil, truth);
        _reveal(taskId, honest, truth);
        _reveal(taskId, cheater, lie);
    }

    /// @dev Joins and commits to `list`.
    function _enter(uint256 taskId, address trainer, CheckpointLists.List memory list) internal {
        uint256 bond = market.specOf(taskId).bond;
        bytes32 salt = keccak256(abi.encode("salt", trainer));
        bytes32 commitment =
            keccak256(abi.encode(taskId, trainer, keccak256(abi.encodePacked(list.stateRoots)), salt));
        vm.deal(trainer, bond);
        vm.startPrank(trainer);
        market.join{value: bond}(taskId);
        market.commit(taskId, commitment);
        vm.stopPrank();
    }

    /// @dev Reveals the committed `list`.
    function _reveal(uint256 taskId, address trainer, CheckpointLists.List memory list) internal {
        vm.prank(trainer);
        market.submit(taskId, list.stateRoots, keccak256(abi.encode("salt", trainer)));
    }
}
