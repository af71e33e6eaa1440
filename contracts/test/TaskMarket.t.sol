// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {Vm} from "forge-std/Test.sol";

import {DisputeGame} from "../src/DisputeGame.sol";
import {RecomputeOracle} from "../src/RecomputeOracle.sol";
import {TaskMarket} from "../src/TaskMarket.sol";
import {IDisputeGame} from "../src/interfaces/IDisputeGame.sol";
import {IRecomputeOracle} from "../src/interfaces/IRecomputeOracle.sol";
import {ITaskMarket} from "../src/interfaces/ITaskMarket.sol";
import {DisputeGameNotPlaying, DisputeGameNotYourTurn} from "../src/lib/GameErrors.sol";
import {RecomputeOracleNotGame, RecomputeOracleRandomnessPending} from "../src/lib/OracleErrors.sol";
import {ORACLE_UNAVAILABLE} from "../src/interfaces/IRecomputeOracle.sol";
import {
    TaskMarketAlreadyJoined,
    TaskMarketAlreadyPlayed,
    TaskMarketAlreadySubmitted,
    TaskMarketBadArity,
    TaskMarketBadCheckpointInterval,
    TaskMarketBadDeadlines,
    TaskMarketBondBelowMinimum,
    TaskMarketBondTooSmall,
    TaskMarketCheckpointCount,
    TaskMarketClockTooShort,
    TaskMarketDisputeAlreadySettled,
    TaskMarketDisputeClosed,
    TaskMarketDisputeWindowTooShort,
    TaskMarketFinalizeTooEarly,
    TaskMarketGamePending,
    TaskMarketGamesActive,
    TaskMarketInitialStateMismatch,
    TaskMarketJoinClosed,
    TaskMarketJoinWindowTooShort,
    TaskMarketNotJoined,
    TaskMarketNotSubmitted,
    TaskMarketNothingToWithdraw,
    TaskMarketSameGroup,
    TaskMarketSubmitClosed,
    TaskMarketTaskFull,
    TaskMarketTaskNotOpen,
    TaskMarketTooManyCheckpoints,
    TaskMarketTooManySlots,
    TaskMarketTrainerEliminated,
    TaskMarketTransferFailed,
    TaskMarketUnknownDispute,
    TaskMarketZeroBatchSize,
    TaskMarketZeroClock,
    TaskMarketZeroDatasetSize,
    TaskMarketZeroNodeCount,
    TaskMarketZeroReward,
    TaskMarketZeroSlots,
    TaskMarketZeroSteps,
    TaskMarketAlreadyCommitted,
    TaskMarketNotCommitted,
    TaskMarketRevealMismatch,
    TaskMarketRevealClosed,
    TaskMarketCopiedResult,
    TaskMarketEntryClosed,
    TaskMarketNotFinalized,
    TaskMarketNothingToClaim
} from "../src/lib/MarketErrors.sol";
import {OracleSetup} from "./utils/OracleSetup.sol";
import {CheckpointLists} from "./utils/CheckpointLists.sol";
import {MarketFixture} from "./utils/MarketFixture.sol";
import {Reference} from "./utils/Reference.sol";

/// @dev Joins a task, then withdraws and, from its `receive`, tries to withdraw again.
contract ReentrantWithdrawer {
    TaskMarket internal immutable market;
    bool internal attempted;
    bytes public reentryError;
    uint256 public received;

    constructor(TaskMarket market_) {
        market = market_;
    }

    function join(uint256 taskId) external payable {
        market.join{value: msg.value}(taskId);
    }

    function withdraw() external {
        market.withdraw();
    }

    receive() external payable {
        received += msg.value;
        if (attempted) return;
        attempted = true;
        try market.withdraw() {}
        catch (bytes memory err) {
            reentryError = err;
        }
    }
}

/// @dev Joins a task and refuses every payment.
contract RejectingTrainer {
    TaskMarket internal immutable market;

    constructor(TaskMarket market_) {
        market = market_;
    }

    function join(uint256 taskId) external payable {
        market.join{value: msg.value}(taskId);
    }

    function withdraw() external {
        market.withdraw();
    }
}

/// @notice The market's rules one call at a time (contracts/test/TaskMarketAttacks.t.sol plays the
///         attacks of issue 12 through them).
contract TaskMarketTest is MarketFixture {
    using CheckpointLists for CheckpointLists.List;

    // ---------------------------------------------------------------- postTask

    function test_postTask_valid_succeeds() public checkFunds {
        ITaskMarket.TaskSpec memory s = _spec();
        vm.expectEmit(true, true, false, true, address(market));
        emit ITaskMarket.TaskPosted(1, client, REWARD, s);
        uint256 taskId = _post(s);
        assertEq(taskId, 1, "first id");
        assertEq(market.taskCount(), 1, "count");
        ITaskMarket.TaskView memory t = market.task(taskId);
        assertEq(t.client, client, "client");
        assertEq(uint8(t.status), uint8(ITaskMarket.TaskStatus.Open), "open");
        assertEq(t.reward, REWARD, "reward");
        assertEq(keccak256(abi.encode(market.specOf(taskId))), keccak256(abi.encode(s)), "spec stored");
        assertEq(market.totalEscrow(), REWARD, "escrow");
        assertEq(address(market.game()), address(game), "game");
    }

    /// @notice Each game a trainer can lose costs its pool the winner's compensation, the oracle fee and
    ///         the opener's gas (at most `OPEN_GAS_BOUND` at the cap).
    function test_minBond_formula_succeeds() public view {
        ITaskMarket.TaskSpec memory s = _spec();
        uint256 comp = game.honestGasBound(_cfg(s)) * s.gasPriceCap;
        uint256 open = market.OPEN_GAS_BOUND() * s.gasPriceCap;
        assertGt(comp, 0, "compensation");
        assertEq(market.compensation(s), comp, "compensation");
        assertEq(market.minBond(s), 2 * (comp + ORACLE_FEE + open), "slots - 1 games");
        s.slots = 1;
        assertEq(market.minBond(s), comp + ORACLE_FEE + open, "at least one game");
    }

    function test_postTask_zeroReward_reverts() public checkFunds {
        ITaskMarket.TaskSpec memory s = _spec();
        vm.expectRevert(abi.encodeWithSelector(TaskMarketZeroReward.selector));
        vm.prank(client);
        market.postTask(s);
    }

    function test_postTask_zeroSteps_reverts() public checkFunds {
        ITaskMarket.TaskSpec memory s = _spec();
        s.steps = 0;
        vm.expectRevert(abi.encodeWithSelector(TaskMarketZeroSteps.selector));
        _post(s);
    }

    function test_postTask_zeroCheckpointInterval_reverts() public checkFunds {
        ITaskMarket.TaskSpec memory s = _spec();
        s.checkpointInterval = 0;
        vm.expectRevert(abi.encodeWithSelector(TaskMarketBadCheckpointInterval.selector, STEPS, uint64(0)));
        _post(s);
    }

    function test_postTask_intervalNotDividingSteps_reverts() public checkFunds {
        ITaskMarket.TaskSpec memory s = _spec();
        s.checkpointInterval = 3;
        vm.expectRevert(abi.encodeWithSelector(TaskMarketBadCheckpointInterval.selector, STEPS, uint64(3)));
        _post(s);
    }

    function test_postTask_tooManyCheckpoints_reverts() public checkFunds {
        ITaskMarket.TaskSpec memory s = _spec();
        uint256 max = market.MAX_CHECKPOINTS();
        s.steps = uint64(max + 1);
        s.checkpointInterval = 1;
        vm.expectRevert(abi.encodeWithSelector(TaskMarketTooManyCheckpoints.selector, max + 1, max));
        _post(s);
        s.steps = uint64(2 * (max + 1)); // interval 2: still one checkpoint too many
        s.checkpointInterval = 2;
        vm.expectRevert(abi.encodeWithSelector(TaskMarketTooManyCheckpoints.selector, max + 1, max));
        _post(s);
        s.steps = uint64(max);
        s.checkpointInterval = 1;
        s.bond = market.minBond(s);
        _post(s);
    }

    function test_postTask_zeroNodeCount_reverts() public checkFunds {
        ITaskMarket.TaskSpec memory s = _spec();
        s.nodeCount = 0;
        vm.expectRevert(abi.encodeWithSelector(TaskMarketZeroNodeCount.selector));
        _post(s);
    }

    function test_postTask_zeroDatasetSize_reverts() public checkFunds {
        ITaskMarket.TaskSpec memory s = _spec();
        s.datasetSize = 0;
        vm.expectRevert(abi.encodeWithSelector(TaskMarketZeroDatasetSize.selector));
        _post(s);
    }

    function test_postTask_zeroBatchSize_reverts() public checkFunds {
        ITaskMarket.TaskSpec memory s = _spec();
        s.batchSize = 0;
        vm.expectRevert(abi.encodeWithSelector(TaskMarketZeroBatchSize.selector));
        _post(s);
    }

    function test_postTask_badArity_reverts() public checkFunds {
        uint64[5] memory bad = [uint64(0), 1, 3, 48, 128];
        for (uint256 i; i < bad.length; ++i) {
            ITaskMarket.TaskSpec memory s = _spec();
            s.arity = bad[i];
            vm.expectRevert(abi.encodeWithSelector(TaskMarketBadArity.selector, bad[i]));
            _post(s);
        }
    }

    function test_postTask_arityBounds_succeeds() public checkFunds {
        ITaskMarket.TaskSpec memory s = _spec();
        s.arity = 2;
        s.bond = market.minBond(s);
        _post(s);
        s.arity = 64;
        s.bond = market.minBond(s);
        _post(s);
        assertEq(market.taskCount(), 2);
    }

    function test_postTask_zeroClock_reverts() public checkFunds {
        ITaskMarket.TaskSpec memory s = _spec();
        s.clock = 0;
        vm.expectRevert(abi.encodeWithSelector(TaskMarketZeroClock.selector));
        _post(s);
    }

    function test_postTask_zeroSlots_reverts() public checkFunds {
        ITaskMarket.TaskSpec memory s = _spec();
        s.slots = 0;
        vm.expectRevert(abi.encodeWithSelector(TaskMarketZeroSlots.selector));
        _post(s);
    }

    /// @notice Finding 7 (issue 12): `finalize` loops over every trainer, so an unbounded `slots` let a
    ///         task grow past what one transaction can finalize, locking every fund in it.
    function test_postTask_tooManySlots_reverts() public checkFunds {
        ITaskMarket.TaskSpec memory s = _spec();
        uint32 max = market.MAX_SLOTS();
        s.slots = max + 1;
        s.bond = market.minBond(s);
        vm.expectRevert(abi.encodeWithSelector(TaskMarketTooManySlots.selector, max + 1, max));
        _post(s);
        s.slots = max;
        s.bond = market.minBond(s);
        _post(s);
    }

    function test_postTask_joinDeadlineNotInFuture_reverts() public checkFunds {
        ITaskMarket.TaskSpec memory s = _spec();
        s.joinDeadline = uint64(block.timestamp);
        _expectBadDeadlines(s);
        _post(s);
    }

    function test_postTask_submitBeforeJoinDeadline_reverts() public checkFunds {
        ITaskMarket.TaskSpec memory s = _spec();
        s.submitDeadline = s.joinDeadline - 1;
        _expectBadDeadlines(s);
        _post(s);
    }

    function test_postTask_disputeBeforeSubmitDeadline_reverts() public checkFunds {
        ITaskMarket.TaskSpec memory s = _spec();
        s.disputeDeadline = s.submitDeadline - 1;
        _expectBadDeadlines(s);
        _post(s);
    }

    function test_postTask_shortestWindows_succeeds() public checkFunds {
        ITaskMarket.TaskSpec memory s = _spec();
        s.joinDeadline = uint64(block.timestamp + market.MIN_JOIN_WINDOW());
        s.submitDeadline = s.joinDeadline;
        s.disputeDeadline = s.submitDeadline + uint64(market.REVEAL_WINDOW() + market.MIN_DISPUTE_WINDOW());
        _post(s);
    }

    /// @notice Finding 8 (issue 12): with `submitDeadline == disputeDeadline` a liar submitting in the
    ///         last second could not be disputed at all. Reveals come first now: the window holds them
    ///         and the dispute hour after them.
    function test_postTask_noDisputeWindow_reverts() public checkFunds {
        ITaskMarket.TaskSpec memory s = _spec();
        s.disputeDeadline = s.submitDeadline;
        vm.expectRevert(
            abi.encodeWithSelector(
                TaskMarketDisputeWindowTooShort.selector,
                uint256(0),
                market.REVEAL_WINDOW() + market.MIN_DISPUTE_WINDOW()
            )
        );
        _post(s);
    }

    function test_postTask_disputeWindowOneSecondShort_reverts() public checkFunds {
        ITaskMarket.TaskSpec memory s = _spec();
        uint256 min = market.REVEAL_WINDOW() + market.MIN_DISPUTE_WINDOW();
        s.disputeDeadline = s.submitDeadline + uint64(min - 1);
        vm.expectRevert(abi.encodeWithSelector(TaskMarketDisputeWindowTooShort.selector, min - 1, min));
        _post(s);
    }

    /// @notice The dispute hour alone is not enough: the reveal window comes before it.
    function test_postTask_disputeWindowWithoutRevealWindow_reverts() public checkFunds {
        ITaskMarket.TaskSpec memory s = _spec();
        uint256 hour = market.MIN_DISPUTE_WINDOW();
        uint256 min = market.REVEAL_WINDOW() + hour;
        s.disputeDeadline = s.submitDeadline + uint64(hour);
        vm.expectRevert(abi.encodeWithSelector(TaskMarketDisputeWindowTooShort.selector, hour, min));
        _post(s);
    }

    function test_postTask_joinWindowTooShort_reverts() public checkFunds {
        ITaskMarket.TaskSpec memory s = _spec();
        uint256 min = market.MIN_JOIN_WINDOW();
        s.joinDeadline = uint64(block.timestamp + min - 1);
        vm.expectRevert(abi.encodeWithSelector(TaskMarketJoinWindowTooShort.selector, min - 1, min));
        _post(s);
    }

    /// @notice Finding 8 (issue 12): a one-second clock let a side lose to block latency alone.
    function test_postTask_oneSecondClock_reverts() public checkFunds {
        ITaskMarket.TaskSpec memory s = _spec();
        s.clock = 1;
        uint256 min = game.roundBound(_cfg(s)) * market.MIN_MOVE_TIME();
        assertGt(min, 1, "a real minimum");
        vm.expectRevert(abi.encodeWithSelector(TaskMarketClockTooShort.selector, uint64(1), min));
        _post(s);
    }

    function test_postTask_clockAtMinimum_succeeds() public checkFunds {
        ITaskMarket.TaskSpec memory s = _spec();
        uint256 min = game.roundBound(_cfg(s)) * market.MIN_MOVE_TIME();
        s.clock = uint64(min);
        s.bond = market.minBond(s);
        _post(s);
        s.clock = uint64(min - 1);
        vm.expectRevert(abi.encodeWithSelector(TaskMarketClockTooShort.selector, uint64(min - 1), min));
        _post(s);
    }

    /// @notice The minimum clock grows with the game's length: arity 2 plays more moves than 64.
    function test_postTask_minimumClockFollowsRounds_succeeds() public checkFunds {
        ITaskMarket.TaskSpec memory s = _spec();
        s.arity = 2;
        uint256 slow = game.roundBound(_cfg(s)) * market.MIN_MOVE_TIME();
        s.arity = 64;
        uint256 fast = game.roundBound(_cfg(s)) * market.MIN_MOVE_TIME();
        assertGt(slow, fast, "more rounds, more clock");
        s.clock = uint64(fast);
        s.bond = market.minBond(s);
        _post(s);
        s.arity = 2;
        s.bond = market.minBond(s);
        vm.expectRevert(abi.encodeWithSelector(TaskMarketClockTooShort.selector, uint64(fast), slow));
        _post(s);
    }

    function test_postTask_bondBelowMinimum_reverts() public checkFunds {
        ITaskMarket.TaskSpec memory s = _spec();
        uint256 required = s.bond;
        s.bond = required - 1;
        vm.expectRevert(abi.encodeWithSelector(TaskMarketBondBelowMinimum.selector, required - 1, required));
        _post(s);
    }

    // ---------------------------------------------------------------- join

    function test_join_valid_succeeds() public checkFunds {
        uint256 taskId = _post(_spec());
        uint256 bond = _bond(taskId);
        vm.expectEmit(true, true, false, true, address(market));
        emit ITaskMarket.TrainerJoined(taskId, alice, bond);
        _join(taskId, alice);
        assertEq(market.task(taskId).joined, 1, "joined");
        assertEq(market.trainersOf(taskId)[0], alice, "listed");
        assertEq(market.totalBonds(), bond, "bond locked");
        assertEq(market.creditOf(alice), 0, "no excess");
    }

    function test_join_excessCredited_succeeds() public checkFunds {
        uint256 taskId = _post(_spec());
        uint256 bond = _bond(taskId);
        vm.expectEmit(true, false, false, true, address(market));
        emit ITaskMarket.Credited(alice, 1 ether);
        vm.prank(alice);
        market.join{value: bond + 1 ether}(taskId);
        assertEq(market.totalBonds(), bond, "bond locked");
        assertEq(market.creditOf(alice), 1 ether, "excess credited");
        assertEq(market.totalCredits(), 1 ether, "credits");
    }

    function test_join_full_reverts() public checkFunds {
        uint256 taskId = _postAndJoinAll();
        address dave = makeAddr("dave");
        vm.deal(dave, 100 ether);
        uint256 bond = _bond(taskId);
        vm.expectRevert(abi.encodeWithSelector(TaskMarketTaskFull.selector, taskId, uint32(3)));
        vm.prank(dave);
        market.join{value: bond}(taskId);
    }

    function test_join_late_reverts() public checkFunds {
        uint256 taskId = _post(_spec());
        uint64 deadline = market.specOf(taskId).joinDeadline;
        vm.warp(deadline); // at the deadline is still in time
        _join(taskId, alice);
        vm.warp(deadline + 1);
        uint256 bond = _bond(taskId);
        vm.expectRevert(abi.encodeWithSelector(TaskMarketJoinClosed.selector, taskId, deadline, deadline + 1));
        vm.prank(bob);
        market.join{value: bond}(taskId);
    }

    function test_join_twice_reverts() public checkFunds {
        uint256 taskId = _post(_spec());
        _join(taskId, alice);
        uint256 bond = _bond(taskId);
        vm.expectRevert(abi.encodeWithSelector(TaskMarketAlreadyJoined.selector, taskId, alice));
        vm.prank(alice);
        market.join{value: bond}(taskId);
    }

    function test_join_afterEnter_reverts() public checkFunds {
        uint256 taskId = _post(_spec());
        _enterRoots(taskId, alice, honest.stateRoots);
        uint256 bond = _bond(taskId);
        vm.expectRevert(abi.encodeWithSelector(TaskMarketAlreadyJoined.selector, taskId, alice));
        vm.prank(alice);
        market.join{value: bond}(taskId);
    }

    function test_join_bondTooSmall_reverts() public checkFunds {
        uint256 taskId = _post(_spec());
        uint256 bond = _bond(taskId);
        vm.expectRevert(abi.encodeWithSelector(TaskMarketBondTooSmall.selector, bond - 1, bond));
        vm.prank(alice);
        market.join{value: bond - 1}(taskId);
    }

    function test_join_unknownTask_reverts() public checkFunds {
        vm.expectRevert(
            abi.encodeWithSelector(TaskMarketTaskNotOpen.selector, uint256(7), ITaskMarket.TaskStatus.None)
        );
        vm.prank(alice);
        market.join{value: 1 ether}(7);
    }

    // ---------------------------------------------------------------- commit

    function test_commit_valid_succeeds() public checkFunds {
        uint256 taskId = _postAndJoinAll();
        bytes32 c = _commitment(taskId, alice, honest.stateRoots, _salt(alice));
        vm.expectEmit(true, true, false, true, address(market));
        emit ITaskMarket.ResultCommitted(taskId, alice, c);
        vm.prank(alice);
        market.commit(taskId, c);
        ITaskMarket.TrainerView memory tr = market.trainerOf(taskId, alice);
        assertTrue(tr.committed, "committed");
        assertFalse(tr.submitted, "not revealed");
        assertFalse(tr.challenger, "on a slot");
        assertEq(market.task(taskId).submitted, 0, "nothing revealed");
    }

    function test_commit_twice_reverts() public checkFunds {
        uint256 taskId = _postAndJoinAll();
        _commit(taskId, alice, honest);
        vm.expectRevert(abi.encodeWithSelector(TaskMarketAlreadyCommitted.selector, taskId, alice));
        vm.prank(alice);
        market.commit(taskId, keccak256("again"));
    }

    function test_commit_late_reverts() public checkFunds {
        uint256 taskId = _postAndJoinAll();
        uint64 deadline = market.specOf(taskId).submitDeadline;
        vm.warp(deadline); // at the deadline is still in time
        _commit(taskId, alice, honest);
        vm.warp(deadline + 1);
        vm.expectRevert(
            abi.encodeWithSelector(TaskMarketSubmitClosed.selector, taskId, deadline, deadline + 1)
        );
        vm.prank(bob);
        market.commit(taskId, keccak256("late"));
    }

    function test_commit_notJoined_reverts() public checkFunds {
        uint256 taskId = _post(_spec());
        vm.expectRevert(abi.encodeWithSelector(TaskMarketNotJoined.selector, taskId, alice));
        vm.prank(alice);
        market.commit(taskId, keccak256("commitment"));
    }

    /// @notice An outside challenger committed with `enter`; it cannot commit again.
    function test_commit_challenger_reverts() public checkFunds {
        uint256 taskId = _post(_spec());
        _enterRoots(taskId, alice, honest.stateRoots);
        vm.expectRevert(abi.encodeWithSelector(TaskMarketNotJoined.selector, taskId, alice));
        vm.prank(alice);
        market.commit(taskId, keccak256("commitment"));
    }

    // ---------------------------------------------------------------- submit (reveal)

    function test_submit_groupsByRoot_succeeds() public checkFunds {
        uint256 taskId = _postAndJoinAll();
        _commit(taskId, bob, cheat);
        _commit(taskId, alice, honest);
        _commit(taskId, carol, honest);
        _toReveals(taskId);
        vm.expectEmit(true, true, false, true, address(market));
        emit ITaskMarket.ResultSubmitted(taskId, bob, 0, cheat.root, cheat.finalState());
        _reveal(taskId, bob, cheat);
        vm.expectEmit(true, true, false, true, address(market));
        emit ITaskMarket.ResultSubmitted(taskId, alice, 1, honest.root, honest.finalState());
        _reveal(taskId, alice, honest);
        _reveal(taskId, carol, honest);

        ITaskMarket.TaskView memory t = market.task(taskId);
        assertEq(t.submitted, 3, "submitted");
        assertEq(t.groupCount, 2, "groups");
        assertEq(t.liveGroups, 2, "live");
        ITaskMarket.GroupView memory g = market.groupOf(taskId, 1);
        assertEq(g.checkpointRoot, honest.root, "root");
        assertEq(g.finalStateRoot, honest.finalState(), "final");
        assertEq(g.members.length, 2, "members");
        assertEq(g.members[0], alice, "submission order");
        assertEq(g.members[1], carol, "submission order");
        assertEq(g.live, 2, "both members live");
        assertFalse(g.eliminated, "not eliminated");
        assertEq(g.pool, 0, "no pool");
        (bool submitted, uint32 group) = market.groupOfTrainer(taskId, carol);
        assertTrue(submitted, "carol submitted");
        assertEq(group, 1, "carol's group");
        ITaskMarket.TrainerView memory tr = market.trainerOf(taskId, carol);
        assertTrue(tr.joined, "carol joined");
        assertTrue(tr.committed, "carol committed");
        assertTrue(tr.submitted, "carol submitted");
        assertFalse(tr.eliminated, "carol live");
        assertEq(tr.group, 1, "carol's group");
        assertEq(tr.pool, 0, "carol's bond is no pool");
        ITaskMarket.GroupView memory none = market.groupOf(taskId, 2);
        assertEq(none.members.length, 0, "no group 2");
        assertFalse(none.eliminated, "an empty group is not eliminated");
    }

    /// @notice A double reveal.
    function test_submit_twice_reverts() public checkFunds {
        uint256 taskId = _postAndJoinAll();
        _submit(taskId, alice, honest);
        bytes32[] memory roots = honest.stateRoots;
        bytes32 salt = _salt(alice);
        vm.roll(block.number + 1);
        vm.expectRevert(abi.encodeWithSelector(TaskMarketAlreadySubmitted.selector, taskId, alice, uint32(0)));
        vm.prank(alice);
        market.submit(taskId, roots, salt);
    }

    /// @notice Nothing is revealed before the submit deadline (at it is still before).
    function test_submit_beforeDeadline_reverts() public checkFunds {
        uint256 taskId = _postAndJoinAll();
        uint64 deadline = market.specOf(taskId).submitDeadline;
        uint256 window = market.REVEAL_WINDOW();
        _commit(taskId, alice, honest);
        vm.warp(deadline);
        vm.roll(block.number + 1);
        bytes32[] memory roots = honest.stateRoots;
        bytes32 salt = _salt(alice);
        vm.expectRevert(
            abi.encodeWithSelector(
                TaskMarketRevealClosed.selector,
                taskId,
                uint256(deadline),
                deadline + window,
                uint256(deadline)
            )
        );
        vm.prank(alice);
        market.submit(taskId, roots, salt);
        vm.warp(deadline + 1);
        vm.prank(alice);
        market.submit(taskId, roots, salt);
    }

    /// @notice A reveal comes in a later block than its commit, even after the deadline.
    function test_submit_inCommitBlock_reverts() public checkFunds {
        uint256 taskId = _postAndJoinAll();
        uint64 deadline = market.specOf(taskId).submitDeadline;
        uint256 window = market.REVEAL_WINDOW();
        vm.warp(deadline);
        _commit(taskId, alice, honest);
        vm.warp(deadline + 1); // the same block
        bytes32[] memory roots = honest.stateRoots;
        bytes32 salt = _salt(alice);
        vm.expectRevert(
            abi.encodeWithSelector(
                TaskMarketRevealClosed.selector, taskId, uint256(deadline), deadline + window, deadline + 1
            )
        );
        vm.prank(alice);
        market.submit(taskId, roots, salt);
        vm.roll(block.number + 1);
        vm.prank(alice);
        market.submit(taskId, roots, salt);
    }

    /// @notice Reveals close `REVEAL_WINDOW` after the submit deadline (at it is still in time); an
    ///         entrant that never reveals forfeits its bond at finalize.
    function test_submit_afterRevealWindow_reverts() public checkFunds {
        uint256 taskId = _postAndJoinAll();
        uint64 deadline = market.specOf(taskId).submitDeadline;
        uint256 closesAt = deadline + market.REVEAL_WINDOW();
        _commit(taskId, alice, honest);
        _commit(taskId, bob, cheat);
        vm.roll(block.number + 1);
        vm.warp(closesAt);
        _reveal(taskId, alice, honest);
        vm.warp(closesAt + 1);
        bytes32[] memory roots = cheat.stateRoots;
        bytes32 salt = _salt(bob);
        vm.expectRevert(
            abi.encodeWithSelector(
                TaskMarketRevealClosed.selector, taskId, uint256(deadline), closesAt, closesAt + 1
            )
        );
        vm.prank(bob);
        market.submit(taskId, roots, salt);
    }

    function test_submit_wrongSalt_reverts() public checkFunds {
        uint256 taskId = _postAndJoinAll();
        _commit(taskId, alice, honest);
        _toReveals(taskId);
        bytes32[] memory roots = honest.stateRoots;
        vm.expectRevert(abi.encodeWithSelector(TaskMarketRevealMismatch.selector, taskId, alice));
        vm.prank(alice);
        market.submit(taskId, roots, keccak256("another salt"));
    }

    /// @notice A commitment binds its roots and its trainer: other roots, or another trainer's
    ///         commitment revealed with its salt, do not match.
    function test_submit_otherRootsOrTrainer_reverts() public checkFunds {
        uint256 taskId = _postAndJoinAll();
        _commit(taskId, alice, honest);
        bytes32 aliceCommitment = _commitment(taskId, alice, honest.stateRoots, _salt(alice));
        vm.prank(bob);
        market.commit(taskId, aliceCommitment); // bob copies alice's commitment itself
        _toReveals(taskId);
        bytes32[] memory other = cheat.stateRoots;
        bytes32[] memory roots = honest.stateRoots;
        bytes32 salt = _salt(alice);
        vm.expectRevert(abi.encodeWithSelector(TaskMarketRevealMismatch.selector, taskId, alice));
        vm.prank(alice);
        market.submit(taskId, other, salt);
        vm.expectRevert(abi.encodeWithSelector(TaskMarketRevealMismatch.selector, taskId, bob));
        vm.prank(bob);
        market.submit(taskId, roots, salt);
    }

    function test_submit_notCommitted_reverts() public checkFunds {
        uint256 taskId = _postAndJoinAll();
        _toReveals(taskId);
        bytes32[] memory roots = honest.stateRoots;
        bytes32 salt = _salt(alice);
        vm.expectRevert(abi.encodeWithSelector(TaskMarketNotCommitted.selector, taskId, alice));
        vm.prank(alice);
        market.submit(taskId, roots, salt);
        address dave = makeAddr("dave"); // never joined
        vm.expectRevert(abi.encodeWithSelector(TaskMarketNotCommitted.selector, taskId, dave));
        vm.prank(dave);
        market.submit(taskId, roots, salt);
    }

    /// @notice A result may join only a group created in a block after its commit: an entrant that
    ///         commits in the block of the reveal that created the group (it read the pending reveal)
    ///         cannot join it.
    function test_submit_groupCreatedInCommitBlock_reverts() public checkFunds {
        uint256 taskId = _postAndJoinAll();
        _submit(taskId, alice, honest); // group 0, created in this block
        uint256 created = block.number;
        address dave = makeAddr("dave");
        _enterRoots(taskId, dave, honest.stateRoots); // the same block
        vm.roll(block.number + 1);
        bytes32[] memory roots = honest.stateRoots;
        bytes32 salt = _salt(dave);
        vm.expectRevert(
            abi.encodeWithSelector(TaskMarketCopiedResult.selector, taskId, uint32(0), created, created)
        );
        vm.prank(dave);
        market.submit(taskId, roots, salt);
    }

    /// @notice A result committed before its group was created joins it, however late it is revealed.
    function test_submit_groupCreatedAfterCommit_succeeds() public checkFunds {
        uint256 taskId = _postAndJoinAll();
        address dave = makeAddr("dave");
        _enterRoots(taskId, dave, honest.stateRoots); // before the deadline
        _commit(taskId, alice, honest);
        _submit(taskId, alice, honest);
        vm.warp(block.timestamp + 10 minutes);
        vm.roll(block.number + 50);
        _revealRoots(taskId, dave, honest.stateRoots);
        assertEq(market.groupOf(taskId, 0).members.length, 2, "alice and dave");
        assertEq(market.groupOf(taskId, 0).members[1], dave, "dave joined");
    }

    /// @notice The market builds the root from the list: the padded tree of MerkleLib, the final root
    ///         its last entry.
    function test_submit_rootBuiltFromList_succeeds() public checkFunds {
        uint256 taskId = _postAndJoinAll();
        bytes32[] memory roots = honest.stateRoots;
        bytes32[] memory leaves = new bytes32[](roots.length);
        for (uint256 i; i < roots.length; ++i) {
            leaves[i] = CheckpointLists.leaf(i * INTERVAL, roots[i]);
        }
        bytes32 root = Reference.root(leaves);
        _commitRoots(taskId, alice, roots);
        _toReveals(taskId);
        vm.expectEmit(true, true, false, true, address(market));
        emit ITaskMarket.ResultSubmitted(taskId, alice, 0, root, roots[roots.length - 1]);
        _revealRoots(taskId, alice, roots);
        assertEq(market.groupOf(taskId, 0).checkpointRoot, honest.root, "the list's root");
        assertEq(market.groupOf(taskId, 0).finalStateRoot, honest.finalState(), "its last entry");
    }

    /// @notice Finding 4 (issue 12): `submit` took a root and opened only leaves 0 and K, so a root whose
    ///         padding position held a hidden leaf (here the sibling of leaf K) was accepted. Now the
    ///         market builds the root from the K + 1 state roots: padding stays PAD, and the root of
    ///         the same records with a hidden leaf is never a group's root.
    function test_submit_hiddenPaddingLeaf_cannotBeSubmitted_succeeds() public checkFunds {
        uint256 taskId = _postAndJoinAll();
        uint256 n = honest.leaves.length; // 5 records: positions 5 to 7 are padding
        bytes32[] memory withHidden = new bytes32[](n + 1);
        for (uint256 i; i < n; ++i) {
            withHidden[i] = honest.leaves[i];
        }
        withHidden[n] = keccak256("hidden");
        bytes32[][] memory levels = Reference.levels(withHidden);
        assertEq(levels.length - 1, Reference.depth(n), "same depth: the old openings had the same length");
        bytes32 hiddenRoot = Reference.listRoot(n, levels[levels.length - 1][0]);

        _submit(taskId, alice, honest);
        bytes32 built = market.groupOf(taskId, 0).checkpointRoot;
        assertEq(built, Reference.root(honest.leaves), "the padded root of the records");
        assertTrue(built != hiddenRoot, "not the root with a hidden leaf");
    }

    function test_submit_initialStateMismatch_reverts() public checkFunds {
        uint256 taskId = _postAndJoinAll();
        bytes32[] memory roots = honest.stateRoots;
        roots[0] = POST_CHEAT;
        _expectListRevert(
            taskId,
            roots,
            abi.encodeWithSelector(TaskMarketInitialStateMismatch.selector, taskId, POST_CHEAT, INITIAL)
        );
    }

    function test_submit_shortList_reverts() public checkFunds {
        uint256 taskId = _postAndJoinAll();
        bytes32[] memory roots = new bytes32[](STEPS / INTERVAL);
        roots[0] = INITIAL;
        _expectListRevert(
            taskId,
            roots,
            abi.encodeWithSelector(
                TaskMarketCheckpointCount.selector,
                taskId,
                uint256(STEPS / INTERVAL),
                uint256(STEPS / INTERVAL + 1)
            )
        );
    }

    function test_submit_longList_reverts() public checkFunds {
        uint256 taskId = _postAndJoinAll();
        bytes32[] memory roots = new bytes32[](STEPS / INTERVAL + 2);
        roots[0] = INITIAL;
        _expectListRevert(
            taskId,
            roots,
            abi.encodeWithSelector(
                TaskMarketCheckpointCount.selector,
                taskId,
                uint256(STEPS / INTERVAL + 2),
                uint256(STEPS / INTERVAL + 1)
            )
        );
    }

    function test_submit_emptyList_reverts() public checkFunds {
        uint256 taskId = _postAndJoinAll();
        _expectListRevert(
            taskId,
            new bytes32[](0),
            abi.encodeWithSelector(
                TaskMarketCheckpointCount.selector, taskId, uint256(0), uint256(STEPS / INTERVAL + 1)
            )
        );
    }

    // ---------------------------------------------------------------- enter

    function test_enter_valid_succeeds() public checkFunds {
        uint256 taskId = _postAndJoinAll();
        uint256 bond = _bond(taskId);
        address dave = makeAddr("dave");
        vm.deal(dave, bond + 1 ether);
        bytes32 c = _commitment(taskId, dave, honest.stateRoots, _salt(dave));
        vm.expectEmit(true, true, false, true, address(market));
        emit ITaskMarket.ChallengerEntered(taskId, dave, bond, c);
        vm.expectEmit(true, true, false, true, address(market));
        emit ITaskMarket.ResultCommitted(taskId, dave, c);
        vm.expectEmit(true, false, false, true, address(market));
        emit ITaskMarket.Credited(dave, 1 ether);
        vm.prank(dave);
        market.enter{value: bond + 1 ether}(taskId, c); // every slot is taken: no slot needed
        ITaskMarket.TaskView memory t = market.task(taskId);
        assertEq(t.joined, 3, "slots");
        assertEq(t.entrants, 4, "entrants");
        ITaskMarket.TrainerView memory tr = market.trainerOf(taskId, dave);
        assertTrue(tr.joined && tr.challenger && tr.committed, "bonded, outside, committed");
        assertEq(market.trainersOf(taskId)[3], dave, "listed");
        assertEq(market.totalBonds(), 4 * bond, "bond locked");
        assertEq(market.creditOf(dave), 1 ether, "excess credited");
    }

    /// @notice Entry closes `MIN_DISPUTE_WINDOW` before the dispute deadline (at it is still open).
    function test_enter_late_reverts() public checkFunds {
        uint256 taskId = _post(_spec());
        uint256 bond = _bond(taskId);
        uint256 closesAt = market.specOf(taskId).disputeDeadline - market.MIN_DISPUTE_WINDOW();
        vm.warp(closesAt);
        _enterRoots(taskId, alice, honest.stateRoots);
        vm.warp(closesAt + 1);
        vm.expectRevert(
            abi.encodeWithSelector(TaskMarketEntryClosed.selector, taskId, closesAt, closesAt + 1)
        );
        vm.prank(bob);
        market.enter{value: bond}(taskId, keccak256("late"));
    }

    function test_enter_twice_reverts() public checkFunds {
        uint256 taskId = _post(_spec());
        uint256 bond = _bond(taskId);
        _enterRoots(taskId, alice, honest.stateRoots);
        vm.expectRevert(abi.encodeWithSelector(TaskMarketAlreadyJoined.selector, taskId, alice));
        vm.prank(alice);
        market.enter{value: bond}(taskId, keccak256("again"));
    }

    function test_enter_afterJoin_reverts() public checkFunds {
        uint256 taskId = _postAndJoinAll();
        uint256 bond = _bond(taskId);
        vm.expectRevert(abi.encodeWithSelector(TaskMarketAlreadyJoined.selector, taskId, alice));
        vm.prank(alice);
        market.enter{value: bond}(taskId, keccak256("commitment"));
    }

    function test_enter_bondTooSmall_reverts() public checkFunds {
        uint256 taskId = _post(_spec());
        uint256 bond = _bond(taskId);
        vm.expectRevert(abi.encodeWithSelector(TaskMarketBondTooSmall.selector, bond - 1, bond));
        vm.prank(alice);
        market.enter{value: bond - 1}(taskId, keccak256("commitment"));
    }

    function test_enter_finalized_reverts() public checkFunds {
        uint256 taskId = _post(_spec());
        uint256 bond = _bond(taskId);
        _finalize(taskId);
        vm.expectRevert(
            abi.encodeWithSelector(TaskMarketTaskNotOpen.selector, taskId, ITaskMarket.TaskStatus.Finalized)
        );
        vm.prank(alice);
        market.enter{value: bond}(taskId, keccak256("commitment"));
    }

    /// @notice An entrant that commits after the submit deadline reveals from the next block until
    ///         `REVEAL_WINDOW` after its commit.
    function test_enter_revealWindowFromCommit_succeeds() public checkFunds {
        uint256 taskId = _post(_spec());
        uint64 deadline = market.specOf(taskId).submitDeadline;
        uint256 window = market.REVEAL_WINDOW();
        uint256 at = deadline + 6 hours;
        vm.warp(at);
        _enterRoots(taskId, alice, honest.stateRoots);
        _enterRoots(taskId, bob, cheat.stateRoots);
        vm.roll(block.number + 1);
        vm.warp(at + window);
        _revealRoots(taskId, alice, honest.stateRoots);
        vm.warp(at + window + 1);
        bytes32[] memory roots = cheat.stateRoots;
        bytes32 salt = _salt(bob);
        vm.expectRevert(
            abi.encodeWithSelector(
                TaskMarketRevealClosed.selector, taskId, uint256(deadline), at + window, at + window + 1
            )
        );
        vm.prank(bob);
        market.submit(taskId, roots, salt);
        assertTrue(market.trainerOf(taskId, alice).submitted, "alice revealed");
    }

    // ---------------------------------------------------------------- openDispute

    function test_openDispute_valid_succeeds() public checkFunds {
        uint256 taskId = _twoGroups();
        vm.expectEmit(true, true, false, true, address(market));
        emit ITaskMarket.DisputeOpened(taskId, 1, 0, 1, bob, alice);
        uint256 gameId = market.openDispute(taskId, bob, alice);
        assertEq(gameId, 1, "game id");
        assertEq(market.task(taskId).activeGames, 1, "active");
        ITaskMarket.DisputeView memory d = market.disputeOf(gameId);
        assertEq(d.taskId, taskId, "task");
        assertEq(d.defender, bob, "defender");
        assertEq(d.challenger, alice, "challenger");
        assertEq(d.defenderGroup, 0, "defender group");
        assertEq(d.challengerGroup, 1, "challenger group");
        assertFalse(d.settled, "settled");
        IDisputeGame.GameView memory v = game.gameOf(gameId);
        assertEq(v.owner, address(market), "owner");
        assertEq(v.players[0], bob, "defender");
        assertEq(v.players[1], alice, "challenger");
        assertEq(v.checkpointRoots[0], cheat.root, "defender root");
        assertEq(v.checkpointRoots[1], honest.root, "challenger root");
        assertEq(keccak256(abi.encode(game.configOf(gameId))), keccak256(abi.encode(_cfg(_spec()))), "config");
    }

    function test_openDispute_eitherRole_succeeds() public checkFunds {
        uint256 taskId = _twoGroups();
        vm.expectEmit(true, true, false, true, address(market));
        emit ITaskMarket.DisputeOpened(taskId, 1, 1, 0, alice, bob);
        uint256 gameId = market.openDispute(taskId, alice, bob);
        ITaskMarket.DisputeView memory d = market.disputeOf(gameId);
        assertEq(d.defender, alice, "defender");
        assertEq(d.challenger, bob, "challenger");
        assertEq(d.defenderGroup, 1, "defender group");
        assertEq(d.challengerGroup, 0, "challenger group");
        IDisputeGame.GameView memory v = game.gameOf(gameId);
        assertEq(v.players[0], alice, "alice defends");
        assertEq(v.checkpointRoots[0], honest.root, "on her group's root");
        assertEq(v.checkpointRoots[1], cheat.root, "against bob's");
    }

    function test_disputeOf_unknown_isEmpty_succeeds() public view {
        ITaskMarket.DisputeView memory d = market.disputeOf(1);
        assertEq(d.taskId, 0, "no task");
        assertEq(d.defender, address(0), "no defender");
        assertEq(d.challenger, address(0), "no challenger");
    }

    function test_openDispute_unknownTask_reverts() public checkFunds {
        vm.expectRevert(
            abi.encodeWithSelector(TaskMarketTaskNotOpen.selector, uint256(7), ITaskMarket.TaskStatus.None)
        );
        market.openDispute(7, bob, alice);
    }

    function test_openDispute_defenderNotSubmitted_reverts() public checkFunds {
        uint256 taskId = _twoGroups(); // carol joined and never submits
        vm.expectRevert(abi.encodeWithSelector(TaskMarketNotSubmitted.selector, taskId, carol));
        market.openDispute(taskId, carol, alice);
    }

    function test_openDispute_challengerNotSubmitted_reverts() public checkFunds {
        uint256 taskId = _twoGroups();
        vm.expectRevert(abi.encodeWithSelector(TaskMarketNotSubmitted.selector, taskId, carol));
        market.openDispute(taskId, bob, carol);
    }

    function test_openDispute_notJoined_reverts() public checkFunds {
        uint256 taskId = _twoGroups();
        address dave = makeAddr("dave");
        vm.expectRevert(abi.encodeWithSelector(TaskMarketNotSubmitted.selector, taskId, dave));
        market.openDispute(taskId, dave, alice);
        vm.expectRevert(abi.encodeWithSelector(TaskMarketNotSubmitted.selector, taskId, address(0)));
        market.openDispute(taskId, bob, address(0));
    }

    function test_openDispute_sameGroup_reverts() public checkFunds {
        uint256 taskId = _postAndJoinAll();
        _commit(taskId, bob, cheat);
        _commit(taskId, alice, honest);
        _commit(taskId, carol, honest);
        _submit(taskId, bob, cheat); // group 0
        _submit(taskId, alice, honest); // group 1
        _submit(taskId, carol, honest); // group 1
        vm.expectRevert(abi.encodeWithSelector(TaskMarketSameGroup.selector, taskId, uint32(1)));
        market.openDispute(taskId, alice, carol);
        vm.expectRevert(abi.encodeWithSelector(TaskMarketSameGroup.selector, taskId, uint32(1)));
        market.openDispute(taskId, carol, alice);
        vm.expectRevert(abi.encodeWithSelector(TaskMarketSameGroup.selector, taskId, uint32(0)));
        market.openDispute(taskId, bob, bob);
    }

    /// @notice An outside challenger plays like a trainer on a slot.
    function test_openDispute_outsideChallenger_succeeds() public checkFunds {
        uint256 taskId = _postAndJoinAll();
        address dave = makeAddr("dave");
        _commit(taskId, bob, cheat);
        _submit(taskId, bob, cheat);
        _enterRoots(taskId, dave, honest.stateRoots);
        vm.roll(block.number + 1);
        _revealRoots(taskId, dave, honest.stateRoots);
        uint256 gameId = _open(taskId, bob, dave);
        IDisputeGame.GameView memory v = game.gameOf(gameId);
        assertEq(v.players[1], dave, "dave challenges");
        assertEq(v.checkpointRoots[1], honest.root, "on his root");
    }

    function test_openDispute_eliminated_reverts() public checkFunds {
        uint256 taskId = _threeGroups(); // bob: group 0 (cheat), alice: 1 (honest), carol: 2 (other)
        uint256 gameId = market.openDispute(taskId, bob, alice);
        _timeout(gameId);
        market.settleDispute(gameId);
        vm.expectRevert(abi.encodeWithSelector(TaskMarketTrainerEliminated.selector, taskId, bob));
        market.openDispute(taskId, bob, carol);
        vm.expectRevert(abi.encodeWithSelector(TaskMarketTrainerEliminated.selector, taskId, bob));
        market.openDispute(taskId, carol, bob);
        // The winner plays on.
        market.openDispute(taskId, carol, alice);
    }

    function test_openDispute_played_reverts() public checkFunds {
        uint256 taskId = _twoGroups();
        market.openDispute(taskId, bob, alice);
        vm.expectRevert(abi.encodeWithSelector(TaskMarketAlreadyPlayed.selector, taskId, bob, alice));
        market.openDispute(taskId, bob, alice);
        vm.expectRevert(abi.encodeWithSelector(TaskMarketAlreadyPlayed.selector, taskId, alice, bob));
        market.openDispute(taskId, alice, bob);
    }

    function test_openDispute_late_reverts() public checkFunds {
        uint256 taskId = _twoGroups();
        uint64 deadline = market.specOf(taskId).disputeDeadline;
        vm.warp(deadline); // at the deadline is still in time
        market.openDispute(taskId, bob, alice);
        vm.warp(deadline + 1);
        vm.expectRevert(
            abi.encodeWithSelector(TaskMarketDisputeClosed.selector, taskId, deadline, deadline + 1)
        );
        market.openDispute(taskId, alice, bob);
    }

    /// @dev group 0 = {bob, a sybil that copied the honest root and never moves; carol, honest},
    ///      group 1 = {alice, a cheat}. bob's lost game eliminates bob alone: carol keeps her bond,
    ///      plays her own game against alice, wins it, and takes the whole reward. (Issue 12: each
    ///      winner is repaid its metered gas, the watcher its opening gas, from the loser's pool; the
    ///      reward is claimed.)
    function test_openDispute_namedTrainerLoss_spareHonestGroupmate_succeeds() public checkFunds {
        uint256 taskId = _postAndJoinAll();
        uint256 bond = _bond(taskId);
        _commit(taskId, bob, honest);
        _commit(taskId, alice, cheat);
        _commit(taskId, carol, honest);
        _submit(taskId, bob, honest); // group 0
        _submit(taskId, alice, cheat); // group 1
        _submit(taskId, carol, honest); // group 0

        uint256 g1 = _open(taskId, bob, alice);
        // Only bob moves for his side: carol can neither carry nor spoil his game.
        bytes32[] memory nodes = _firstDescent(honest);
        vm.expectRevert(abi.encodeWithSelector(DisputeGameNotYourTurn.selector, g1, carol, bob));
        vm.prank(carol);
        game.descend(g1, nodes, new bytes32[](0));

        // bob never moves: he alone falls, and his bond repays alice and the watcher.
        _timeout(g1);
        assertEq(uint8(game.outcome(g1)), uint8(IDisputeGame.Outcome.ChallengerWins), "alice wins g1");
        uint256 paid1 = _owed(taskId, g1, 1);
        assertGt(paid1, 0, "alice paid for her timeout call");
        vm.recordLogs();
        vm.expectEmit(true, true, false, true, address(market));
        emit ITaskMarket.BondSlashed(taskId, bob, bond);
        vm.expectEmit(true, true, false, true, address(market));
        emit ITaskMarket.TrainerEliminated(taskId, bob, 0, bond);
        vm.expectEmit(true, true, true, false, address(market));
        emit ITaskMarket.OpenerRepaid(taskId, g1, watcher, 0);
        vm.expectEmit(true, true, true, true, address(market));
        emit ITaskMarket.CompensationPaid(taskId, g1, alice, paid1);
        market.settleDispute(g1);
        {
            Vm.Log[] memory logs = vm.getRecordedLogs();
            assertEq(_count(logs, ITaskMarket.TrainerEliminated.selector), 1, "bob alone eliminated");
            assertEq(_count(logs, ITaskMarket.GroupEliminated.selector), 0, "group 0 stands");
        }
        uint256 open1 = market.creditOf(watcher);
        assertGt(open1, 0, "the watcher repaid");
        uint256 left1 = bond - open1 - paid1;
        _assertBobOutCarolIn(taskId, left1);
        assertEq(market.task(taskId).liveGroups, 2, "two live groups");
        assertEq(market.totalBonds(), 2 * bond, "alice's and carol's bonds locked");
        assertEq(market.creditOf(alice), paid1, "alice repaid");
        _assertFunds();

        // carol plays her own game; alice never answers.
        uint256 g2 = _open(taskId, carol, alice);
        vm.prank(carol);
        game.descend(g2, nodes, new bytes32[](0));
        _timeout(g2);
        assertEq(uint8(game.outcome(g2)), uint8(IDisputeGame.Outcome.DefenderWins), "carol wins g2");
        uint256 paid2 = _owed(taskId, g2, 0);
        vm.expectEmit(true, true, false, true, address(market));
        emit ITaskMarket.BondSlashed(taskId, alice, bond);
        vm.expectEmit(true, true, false, true, address(market));
        emit ITaskMarket.TrainerEliminated(taskId, alice, 1, bond);
        vm.expectEmit(true, true, false, true, address(market));
        emit ITaskMarket.GroupEliminated(taskId, 1);
        vm.expectEmit(true, true, true, true, address(market));
        emit ITaskMarket.CompensationPaid(taskId, g2, carol, paid2);
        market.settleDispute(g2);
        uint256 burnt = left1 + bond - (market.creditOf(watcher) - open1) - paid2;
        assertTrue(market.groupOf(taskId, 1).eliminated, "group 1 eliminated");
        assertEq(market.task(taskId).liveGroups, 1, "one live group");

        // One live group, but no finalize before the dispute deadline.
        _expectFinalizeTooEarly(taskId, 1);
        market.finalize(taskId);
        vm.warp(market.specOf(taskId).disputeDeadline + 1);
        vm.expectEmit(true, false, false, true, address(market));
        emit ITaskMarket.Burnt(taskId, burnt);
        vm.expectEmit(true, false, false, true, address(market));
        emit ITaskMarket.TaskFinalized(taskId, 0, REWARD);
        market.finalize(taskId);
        // carol alone claims.
        vm.expectEmit(true, true, false, true, address(market));
        emit ITaskMarket.Claimed(taskId, carol, bond + REWARD);
        market.claim(taskId, carol);
        assertEq(market.creditOf(carol), paid2 + bond + REWARD, "carol: repayment, bond, whole reward");
        assertEq(market.creditOf(bob), 0, "bob: nothing");
        assertEq(market.creditOf(alice), paid1, "alice: her g1 repayment only");
        assertEq(market.creditOf(client), 0, "client: nothing");
        assertEq(market.totalBurnt(), burnt, "bob's and alice's leftovers");
        assertEq(market.totalPools(), 0, "pools");
        assertEq(market.totalBonds(), 0, "bonds");
        assertEq(market.totalEscrow(), 0, "escrow");
        _assertFunds();
        _withdrawAll();
        assertEq(carol.balance, 100 ether + paid2 + REWARD, "carol paid");
        assertEq(address(market).balance, burnt, "only the burnt rest stays");
    }

    function _expectFinalizeTooEarly(uint256 taskId, uint32 live) internal {
        uint64 deadline = market.specOf(taskId).disputeDeadline;
        vm.expectRevert(
            abi.encodeWithSelector(
                TaskMarketFinalizeTooEarly.selector, taskId, block.timestamp, deadline, live
            )
        );
    }

    /// @dev bob lost and keeps `pool` of his bond; carol, his groupmate, stands.
    function _assertBobOutCarolIn(uint256 taskId, uint256 pool) internal view {
        ITaskMarket.TrainerView memory b = market.trainerOf(taskId, bob);
        assertTrue(b.eliminated, "bob eliminated");
        assertEq(b.group, 0, "bob's group");
        assertEq(b.pool, pool, "bob's pool after the repayments");
        ITaskMarket.TrainerView memory c = market.trainerOf(taskId, carol);
        assertTrue(c.joined && c.submitted, "carol in");
        assertFalse(c.eliminated, "carol untouched");
        assertEq(c.pool, 0, "carol's bond is no pool");
        ITaskMarket.GroupView memory g0 = market.groupOf(taskId, 0);
        assertEq(g0.live, 1, "carol is live");
        assertFalse(g0.eliminated, "group 0 live");
        assertEq(g0.pool, pool, "group pool: bob's");
    }

    // ---------------------------------------------------------------- settleDispute

    function test_settleDispute_twice_reverts() public checkFunds {
        uint256 taskId = _twoGroups();
        uint256 gameId = market.openDispute(taskId, bob, alice);
        _timeout(gameId);
        market.settleDispute(gameId);
        vm.expectRevert(abi.encodeWithSelector(TaskMarketDisputeAlreadySettled.selector, gameId));
        market.settleDispute(gameId);
    }

    function test_settleDispute_pending_reverts() public checkFunds {
        uint256 taskId = _twoGroups();
        uint256 gameId = market.openDispute(taskId, bob, alice);
        vm.expectRevert(abi.encodeWithSelector(TaskMarketGamePending.selector, gameId));
        market.settleDispute(gameId);
    }

    function test_settleDispute_unknown_reverts() public checkFunds {
        vm.expectRevert(abi.encodeWithSelector(TaskMarketUnknownDispute.selector, uint256(1)));
        market.settleDispute(1);
    }

    // ---------------------------------------------------------------- finalize

    function test_finalize_tooEarly_reverts() public checkFunds {
        uint256 taskId = _twoGroups();
        ITaskMarket.TaskSpec memory s = market.specOf(taskId);
        // Two live groups: only the dispute deadline ends the task.
        vm.warp(s.disputeDeadline);
        vm.expectRevert(
            abi.encodeWithSelector(
                TaskMarketFinalizeTooEarly.selector,
                taskId,
                uint256(s.disputeDeadline),
                s.disputeDeadline,
                uint32(2)
            )
        );
        market.finalize(taskId);
    }

    /// @notice One live group does not end a task early any more (issue 12, finding 2): an outside
    ///         challenger may still enter and dispute it until the last hour.
    function test_finalize_oneGroupBeforeDisputeDeadline_reverts() public checkFunds {
        uint256 taskId = _postAndJoinAll();
        _commit(taskId, alice, honest);
        _commit(taskId, bob, honest);
        _commit(taskId, carol, honest);
        _submit(taskId, alice, honest);
        _submit(taskId, bob, honest);
        _submit(taskId, carol, honest);
        ITaskMarket.TaskSpec memory s = market.specOf(taskId);
        vm.warp(s.disputeDeadline);
        vm.expectRevert(
            abi.encodeWithSelector(
                TaskMarketFinalizeTooEarly.selector,
                taskId,
                uint256(s.disputeDeadline),
                s.disputeDeadline,
                uint32(1)
            )
        );
        market.finalize(taskId);
        vm.warp(s.disputeDeadline + 1);
        market.finalize(taskId);
    }

    function test_finalize_activeGame_reverts() public checkFunds {
        uint256 taskId = _twoGroups();
        market.openDispute(taskId, bob, alice);
        vm.warp(market.specOf(taskId).disputeDeadline + 1);
        vm.expectRevert(abi.encodeWithSelector(TaskMarketGamesActive.selector, taskId, uint32(1)));
        market.finalize(taskId);
    }

    function test_finalize_twice_reverts() public checkFunds {
        uint256 taskId = _post(_spec());
        vm.warp(market.specOf(taskId).disputeDeadline + 1);
        market.finalize(taskId);
        vm.expectRevert(
            abi.encodeWithSelector(TaskMarketTaskNotOpen.selector, taskId, ITaskMarket.TaskStatus.Finalized)
        );
        market.finalize(taskId);
    }

    /// @dev Issue 12: finalize credits the client only (here the remainder of the split); each live
    ///      trainer claims its bond and share.
    function test_finalize_allAgree_paysReward_succeeds() public checkFunds {
        uint256 taskId = _postAndJoinAll();
        uint256 bond = _bond(taskId);
        _commit(taskId, alice, honest);
        _commit(taskId, bob, honest);
        _commit(taskId, carol, honest);
        _submit(taskId, alice, honest);
        _submit(taskId, bob, honest);
        _submit(taskId, carol, honest);
        uint256 share = REWARD / 3;
        uint256 remainder = REWARD - 3 * share;
        assertGt(remainder, 0, "a remainder");
        vm.warp(market.specOf(taskId).disputeDeadline + 1);
        vm.expectEmit(true, false, false, true, address(market));
        emit ITaskMarket.Credited(client, remainder);
        vm.expectEmit(true, false, false, true, address(market));
        emit ITaskMarket.TaskFinalized(taskId, 0, REWARD);
        market.finalize(taskId);
        ITaskMarket.TaskView memory t = market.task(taskId);
        assertEq(uint8(t.status), uint8(ITaskMarket.TaskStatus.Finalized), "finalized");
        assertTrue(t.won, "won");
        assertEq(t.winningGroup, 0, "group 0");
        assertEq(t.share, share, "share");
        assertEq(market.creditOf(alice), 0, "nothing before the claim");
        assertEq(market.totalBonds(), 3 * bond, "bonds wait for their claims");
        assertEq(market.totalEscrow(), 3 * share, "so do the shares");
        _assertFunds();

        address[3] memory trainers = [alice, bob, carol];
        for (uint256 i; i < 3; ++i) {
            vm.expectEmit(true, true, false, true, address(market));
            emit ITaskMarket.Claimed(taskId, trainers[i], bond + share);
            vm.expectEmit(true, false, false, true, address(market));
            emit ITaskMarket.Credited(trainers[i], bond + share);
            market.claim(taskId, trainers[i]);
            assertTrue(market.trainerOf(taskId, trainers[i]).claimed, "claimed");
        }
        assertEq(market.creditOf(alice), bond + share, "alice: bond and share");
        assertEq(market.creditOf(bob), bond + share, "bob");
        assertEq(market.creditOf(carol), bond + share, "carol");
        assertEq(market.creditOf(client), remainder, "client: the remainder");
        assertEq(market.totalEscrow(), 0, "escrow");
        assertEq(market.totalBonds(), 0, "bonds");
        _withdrawAll();
        assertEq(alice.balance, 100 ether + share, "alice paid");
        assertEq(address(market).balance, 0, "market empty");
    }

    function test_finalize_noSubmission_refundsClient_succeeds() public checkFunds {
        uint256 taskId = _post(_spec());
        uint256 bond = _bond(taskId);
        _join(taskId, alice);
        _join(taskId, bob);
        _commit(taskId, bob, honest); // committed, never revealed
        vm.warp(market.specOf(taskId).disputeDeadline + 1);
        // No group at all: the reward and both forfeited bonds go to the client.
        vm.expectEmit(true, false, false, true, address(market));
        emit ITaskMarket.BondsForfeited(taskId, 2, 2 * bond);
        vm.expectEmit(true, false, false, true, address(market));
        emit ITaskMarket.Credited(client, REWARD + 2 * bond);
        vm.expectEmit(true, false, false, true, address(market));
        emit ITaskMarket.TaskFinalized(taskId, -1, REWARD);
        market.finalize(taskId);
        assertEq(market.creditOf(client), REWARD + 2 * bond, "reward refunded, bonds forfeited");
        assertEq(market.creditOf(alice), 0, "alice forfeits");
        assertEq(market.totalBonds(), 0, "no bond left");
        vm.expectRevert(abi.encodeWithSelector(TaskMarketNothingToClaim.selector, taskId, bob));
        market.claim(taskId, bob);
        _withdrawAll();
        assertEq(client.balance, 100 ether + 2 * bond, "client");
    }

    function test_finalize_twoLiveGroups_refundsClient_succeeds() public checkFunds {
        uint256 taskId = _twoGroups();
        uint256 bond = _bond(taskId);
        vm.warp(market.specOf(taskId).disputeDeadline + 1);
        vm.expectEmit(true, false, false, true, address(market));
        emit ITaskMarket.BondsForfeited(taskId, 1, bond);
        vm.expectEmit(true, false, false, true, address(market));
        emit ITaskMarket.TaskFinalized(taskId, -1, REWARD);
        market.finalize(taskId);
        assertFalse(market.task(taskId).won, "no winner");
        assertEq(market.creditOf(client), REWARD + bond, "reward back, carol's bond forfeited");
        _claimAll(taskId);
        assertEq(market.creditOf(alice), bond, "alice's bond back");
        assertEq(market.creditOf(bob), bond, "bob's bond back");
    }

    // ---------------------------------------------------------------- claim

    function test_claim_beforeFinalize_reverts() public checkFunds {
        uint256 taskId = _twoGroups();
        vm.expectRevert(abi.encodeWithSelector(TaskMarketNotFinalized.selector, taskId));
        market.claim(taskId, alice);
        vm.warp(market.specOf(taskId).disputeDeadline + 1);
        vm.expectRevert(abi.encodeWithSelector(TaskMarketNotFinalized.selector, taskId));
        market.claim(taskId, alice);
    }

    function test_claim_twice_reverts() public checkFunds {
        uint256 taskId = _twoGroups();
        _finalize(taskId);
        market.claim(taskId, alice);
        vm.expectRevert(abi.encodeWithSelector(TaskMarketNothingToClaim.selector, taskId, alice));
        market.claim(taskId, alice);
    }

    function test_claim_eliminated_reverts() public checkFunds {
        uint256 taskId = _twoGroups();
        uint256 gameId = _open(taskId, bob, alice);
        _timeout(gameId);
        market.settleDispute(gameId);
        _finalize(taskId);
        vm.expectRevert(abi.encodeWithSelector(TaskMarketNothingToClaim.selector, taskId, bob));
        market.claim(taskId, bob);
    }

    /// @notice carol joined and never revealed: her bond went to the client at finalize.
    function test_claim_unrevealed_reverts() public checkFunds {
        uint256 taskId = _twoGroups();
        address dave = makeAddr("dave");
        _enterRoots(taskId, dave, honest.stateRoots); // and never reveals
        _finalize(taskId);
        vm.expectRevert(abi.encodeWithSelector(TaskMarketNothingToClaim.selector, taskId, carol));
        market.claim(taskId, carol);
        vm.expectRevert(abi.encodeWithSelector(TaskMarketNothingToClaim.selector, taskId, dave));
        market.claim(taskId, dave);
        address eve = makeAddr("eve"); // never entered
        vm.expectRevert(abi.encodeWithSelector(TaskMarketNothingToClaim.selector, taskId, eve));
        market.claim(taskId, eve);
    }

    /// @notice Anyone may claim for a trainer; the credit is the trainer's.
    function test_claim_byAnyone_creditsTrainer_succeeds() public checkFunds {
        uint256 taskId = _twoGroups();
        uint256 bond = _bond(taskId);
        _finalize(taskId);
        vm.prank(carol);
        market.claim(taskId, alice);
        assertEq(market.creditOf(alice), bond, "alice's bond");
        assertEq(market.creditOf(carol), 0, "not the caller's");
    }

    // ---------------------------------------------------------------- the dispute path

    /// @dev Issue 12: the winner is repaid what its calls cost (here its `timeout`), not the constant;
    ///      the watcher its opening gas; the remainder of the split goes to the client; payouts are
    ///      claimed.
    function test_settleDispute_defenderTimesOut_succeeds() public checkFunds {
        uint256 taskId = _postAndJoinAll();
        uint256 bond = _bond(taskId);
        _commit(taskId, bob, cheat);
        _commit(taskId, alice, honest);
        _commit(taskId, carol, honest);
        _submit(taskId, bob, cheat); // group 0
        _submit(taskId, alice, honest); // group 1
        _submit(taskId, carol, honest);
        uint256 gameId = _open(taskId, bob, alice);

        // The defender (bob) never moves.
        _timeout(gameId);
        assertEq(uint8(game.outcome(gameId)), uint8(IDisputeGame.Outcome.ChallengerWins), "outcome");
        uint256 paid = _owed(taskId, gameId, 1);
        assertGt(paid, 0, "alice's timeout call");
        assertLt(paid, market.compensation(_spec()), "far below the constant");
        vm.expectEmit(true, true, false, true, address(market));
        emit ITaskMarket.DisputeSettled(taskId, gameId, IDisputeGame.Outcome.ChallengerWins);
        vm.expectEmit(true, true, false, true, address(market));
        emit ITaskMarket.BondSlashed(taskId, bob, bond);
        vm.expectEmit(true, true, false, true, address(market));
        emit ITaskMarket.TrainerEliminated(taskId, bob, 0, bond);
        vm.expectEmit(true, true, false, true, address(market));
        emit ITaskMarket.GroupEliminated(taskId, 0);
        vm.expectEmit(true, true, true, false, address(market));
        emit ITaskMarket.OpenerRepaid(taskId, gameId, watcher, 0);
        vm.expectEmit(true, false, false, true, address(market));
        emit ITaskMarket.Credited(alice, paid);
        vm.expectEmit(true, true, true, true, address(market));
        emit ITaskMarket.CompensationPaid(taskId, gameId, alice, paid);
        market.settleDispute(gameId);
        uint256 opened = market.creditOf(watcher);
        uint256 left = bond - opened - paid;

        ITaskMarket.GroupView memory lost = market.groupOf(taskId, 0);
        assertTrue(lost.eliminated, "eliminated");
        assertEq(lost.live, 0, "no live member");
        assertEq(lost.pool, left, "pool after the repayments");
        assertEq(market.trainerOf(taskId, bob).pool, left, "bob's pool");
        assertEq(market.groupOf(taskId, 1).live, 2, "the winners' group untouched");
        assertTrue(market.disputeOf(gameId).settled, "settled");
        ITaskMarket.TaskView memory t = market.task(taskId);
        assertEq(t.liveGroups, 1, "one live group");
        assertEq(t.activeGames, 0, "no game");
        assertEq(market.creditOf(alice), paid, "repaid");
        assertEq(market.creditOf(carol), 0, "carol did not play");
        _assertFunds();

        // After the dispute deadline: the pool's rest is burnt, the winners claim.
        uint256 share = REWARD / 2;
        vm.warp(market.specOf(taskId).disputeDeadline + 1);
        vm.expectEmit(true, false, false, true, address(market));
        emit ITaskMarket.Credited(client, REWARD - 2 * share);
        vm.expectEmit(true, false, false, true, address(market));
        emit ITaskMarket.Burnt(taskId, left);
        vm.expectEmit(true, false, false, true, address(market));
        emit ITaskMarket.TaskFinalized(taskId, 1, REWARD);
        market.finalize(taskId);
        _claimAll(taskId);
        assertEq(market.creditOf(alice), paid + bond + share, "alice: repayment, bond, share");
        assertEq(market.creditOf(carol), bond + share, "carol: bond, share");
        assertEq(market.creditOf(bob), 0, "bob: nothing");
        assertEq(market.creditOf(client), REWARD - 2 * share, "client: the remainder");
        assertEq(market.totalBurnt(), left, "burnt");
        assertEq(market.totalPools(), 0, "pools");
        _withdrawAll();
        assertEq(address(market).balance, left, "only the burnt rest stays");
    }

    /// @dev group 0 = {bob, carol}, both cheats; group 1 = {alice}, honest. Each cheat answers for
    ///      itself: alice must beat both (here in parallel), and is repaid for each game.
    function test_settleDispute_twoCheatsInGroup_eachBeaten_succeeds() public checkFunds {
        uint256 taskId = _postAndJoinAll();
        uint256 bond = _bond(taskId);
        _commit(taskId, bob, cheat);
        _commit(taskId, alice, honest);
        _commit(taskId, carol, cheat);
        _submit(taskId, bob, cheat); // group 0
        _submit(taskId, alice, honest); // group 1
        _submit(taskId, carol, cheat); // group 0
        uint256 g1 = _open(taskId, bob, alice);
        uint256 g2 = _open(taskId, carol, alice);
        assertEq(market.task(taskId).activeGames, 2, "two games at once");
        _timeout(g1);
        _timeout(g2);
        uint256 paid1 = _owed(taskId, g1, 1);
        uint256 paid2 = _owed(taskId, g2, 1);

        market.settleDispute(g1);
        uint256 open1 = market.creditOf(watcher);
        ITaskMarket.GroupView memory g0 = market.groupOf(taskId, 0);
        assertEq(g0.live, 1, "carol still stands");
        assertFalse(g0.eliminated, "group 0 live");
        assertEq(market.task(taskId).liveGroups, 2, "two live groups");
        vm.expectRevert(abi.encodeWithSelector(TaskMarketGamesActive.selector, taskId, uint32(1)));
        market.finalize(taskId);

        vm.expectEmit(true, true, false, true, address(market));
        emit ITaskMarket.TrainerEliminated(taskId, carol, 0, bond);
        vm.expectEmit(true, true, false, true, address(market));
        emit ITaskMarket.GroupEliminated(taskId, 0);
        vm.expectEmit(true, true, true, true, address(market));
        emit ITaskMarket.CompensationPaid(taskId, g2, alice, paid2);
        market.settleDispute(g2);
        uint256 open2 = market.creditOf(watcher) - open1;
        uint256 left = (bond - open1 - paid1) + (bond - open2 - paid2);
        g0 = market.groupOf(taskId, 0);
        assertEq(g0.live, 0, "no live member");
        assertTrue(g0.eliminated, "group 0 eliminated");
        assertEq(g0.pool, left, "both cheats' pools");
        assertEq(market.trainerOf(taskId, carol).pool, bond - open2 - paid2, "carol's pool");
        assertEq(market.task(taskId).liveGroups, 1, "one live group");
        assertEq(market.creditOf(alice), paid1 + paid2, "repaid twice");

        vm.warp(market.specOf(taskId).disputeDeadline + 1);
        vm.expectEmit(true, false, false, true, address(market));
        emit ITaskMarket.Burnt(taskId, left);
        vm.expectEmit(true, false, false, true, address(market));
        emit ITaskMarket.TaskFinalized(taskId, 1, REWARD);
        market.finalize(taskId);
        _claimAll(taskId);
        assertEq(market.creditOf(alice), paid1 + paid2 + bond + REWARD, "alice: repayments, bond, reward");
        assertEq(market.creditOf(bob), 0, "bob: nothing");
        assertEq(market.creditOf(carol), 0, "carol: nothing");
        assertEq(market.creditOf(client), 0, "client: nothing (one winner, no remainder)");
        assertEq(market.totalBurnt(), left, "burnt");
    }

    /// @dev The same two cheats, but alice beats only bob: carol still stands for group 0, so two
    ///      groups are live at the deadline and the client is refunded; carol keeps her bond.
    function test_finalize_oneCheatUnbeaten_refundsClient_succeeds() public checkFunds {
        uint256 taskId = _postAndJoinAll();
        uint256 bond = _bond(taskId);
        _commit(taskId, bob, cheat);
        _commit(taskId, alice, honest);
        _commit(taskId, carol, cheat);
        _submit(taskId, bob, cheat);
        _submit(taskId, alice, honest);
        _submit(taskId, carol, cheat);
        uint256 gameId = _open(taskId, bob, alice);
        _timeout(gameId);
        uint256 paid = _owed(taskId, gameId, 1);
        market.settleDispute(gameId);
        uint256 opened = market.creditOf(watcher);

        vm.warp(market.specOf(taskId).disputeDeadline + 1);
        vm.expectEmit(true, false, false, true, address(market));
        emit ITaskMarket.TaskFinalized(taskId, -1, REWARD);
        market.finalize(taskId);
        _claimAll(taskId);
        assertEq(market.creditOf(client), REWARD, "client refunded");
        assertEq(market.creditOf(alice), paid + bond, "alice: repayment, bond");
        assertEq(market.creditOf(carol), bond, "carol: bond back");
        assertEq(market.creditOf(bob), 0, "bob: nothing");
        assertEq(market.totalBurnt(), bond - opened - paid, "bob's rest burnt");
    }

    /// @dev group 0 falls with bob, its only member; carol, who committed to the same root before the
    ///      group existed, then reveals it: group 0 is live again and her bond stays hers (games judge
    ///      trainers, not results). The clock is the shortest allowed, so that the game ends within the
    ///      reveal window.
    function test_submit_eliminatedGroup_revives_succeeds() public checkFunds {
        uint256 taskId = _post(_shortClockSpec());
        _join(taskId, alice);
        _join(taskId, bob);
        _join(taskId, carol);
        uint256 bond = _bond(taskId);
        _commit(taskId, bob, cheat);
        _commit(taskId, alice, honest);
        _commit(taskId, carol, cheat);
        _submit(taskId, bob, cheat);
        _submit(taskId, alice, honest);
        uint256 gameId = _open(taskId, bob, alice);
        _timeout(gameId);
        uint256 paid = _owed(taskId, gameId, 1);
        market.settleDispute(gameId);
        uint256 opened = market.creditOf(watcher);
        assertTrue(market.groupOf(taskId, 0).eliminated, "group 0 eliminated");
        assertEq(market.task(taskId).liveGroups, 1, "one live group");

        vm.roll(block.number + 1);
        vm.recordLogs();
        vm.expectEmit(true, true, false, true, address(market));
        emit ITaskMarket.ResultSubmitted(taskId, carol, 0, cheat.root, cheat.finalState());
        _reveal(taskId, carol, cheat);
        Vm.Log[] memory logs = vm.getRecordedLogs();
        assertEq(_count(logs, ITaskMarket.ResultSubmitted.selector), 1, "submitted");
        assertEq(_count(logs, ITaskMarket.BondSlashed.selector), 0, "no slash on submit");
        ITaskMarket.GroupView memory g0 = market.groupOf(taskId, 0);
        assertEq(g0.members.length, 2, "members");
        assertEq(g0.live, 1, "carol is live");
        assertFalse(g0.eliminated, "group 0 revived");
        assertEq(g0.pool, bond - opened - paid, "bob's pool only");
        ITaskMarket.TrainerView memory c = market.trainerOf(taskId, carol);
        assertFalse(c.eliminated, "carol not eliminated");
        assertEq(c.group, 0, "carol's group");
        assertEq(c.pool, 0, "carol's bond is no pool");
        assertEq(market.task(taskId).liveGroups, 2, "two live groups");
        assertEq(market.totalBonds(), 2 * bond, "alice's and carol's bonds locked");

        // Two live groups: the task waits for a game or the deadline.
        ITaskMarket.TaskSpec memory s = market.specOf(taskId);
        vm.expectRevert(
            abi.encodeWithSelector(
                TaskMarketFinalizeTooEarly.selector, taskId, block.timestamp, s.disputeDeadline, uint32(2)
            )
        );
        market.finalize(taskId);
        vm.warp(s.disputeDeadline + 1);
        market.finalize(taskId);
        _claimAll(taskId);
        assertEq(market.creditOf(client), REWARD, "client refunded");
        assertEq(market.creditOf(alice), paid + bond, "alice: repayment, bond");
        assertEq(market.creditOf(carol), bond, "carol: bond back");
        assertEq(market.totalBurnt(), bond - opened - paid, "bob's rest burnt");
    }

    /// @dev A revived group falls again with its new member: eliminated twice, counted once live.
    function test_settleDispute_revivedGroupFallsAgain_succeeds() public checkFunds {
        uint256 taskId = _post(_shortClockSpec());
        _join(taskId, alice);
        _join(taskId, bob);
        _join(taskId, carol);
        uint256 bond = _bond(taskId);
        _commit(taskId, bob, cheat);
        _commit(taskId, alice, honest);
        _commit(taskId, carol, cheat);
        _submit(taskId, bob, cheat);
        _submit(taskId, alice, honest);
        uint256 g1 = _open(taskId, bob, alice);
        _timeout(g1);
        uint256 paid1 = _owed(taskId, g1, 1);
        market.settleDispute(g1);
        uint256 open1 = market.creditOf(watcher);
        _submit(taskId, carol, cheat);

        uint256 g2 = _open(taskId, carol, alice);
        _timeout(g2);
        uint256 paid2 = _owed(taskId, g2, 1);
        vm.expectEmit(true, true, false, true, address(market));
        emit ITaskMarket.TrainerEliminated(taskId, carol, 0, bond);
        vm.expectEmit(true, true, false, true, address(market));
        emit ITaskMarket.GroupEliminated(taskId, 0);
        market.settleDispute(g2);
        uint256 open2 = market.creditOf(watcher) - open1;
        assertEq(market.task(taskId).liveGroups, 1, "one live group");
        assertTrue(market.groupOf(taskId, 0).eliminated, "group 0 eliminated again");

        vm.warp(market.specOf(taskId).disputeDeadline + 1);
        vm.expectEmit(true, false, false, true, address(market));
        emit ITaskMarket.TaskFinalized(taskId, 1, REWARD);
        market.finalize(taskId);
        _claimAll(taskId);
        assertEq(market.creditOf(alice), paid1 + paid2 + bond + REWARD, "alice: repayments, bond, reward");
        assertEq(market.totalBurnt(), 2 * bond - open1 - paid1 - open2 - paid2, "burnt");
    }

    function test_settleDispute_parallelLosses_poolCoversBoth_succeeds() public checkFunds {
        uint256 taskId = _threeGroups(); // bob: group 0 (cheat), alice: 1 (honest), carol: 2 (other)
        uint256 bond = _bond(taskId);
        uint256 g1 = _open(taskId, bob, alice);
        uint256 g2 = _open(taskId, bob, carol);
        _timeout(g1);
        _timeout(g2);
        uint256 paid1 = _owed(taskId, g1, 1);
        uint256 paid2 = _owed(taskId, g2, 1);
        market.settleDispute(g1);
        uint256 open1 = market.creditOf(watcher);
        // bob is already out: his second loss slashes nothing more, it only spends his pool.
        vm.recordLogs();
        market.settleDispute(g2);
        Vm.Log[] memory logs = vm.getRecordedLogs();
        uint256 open2 = market.creditOf(watcher) - open1;
        assertEq(_count(logs, ITaskMarket.BondSlashed.selector), 0, "slashed once");
        assertEq(_count(logs, ITaskMarket.TrainerEliminated.selector), 0, "eliminated once");
        assertEq(_count(logs, ITaskMarket.GroupEliminated.selector), 0, "group eliminated once");
        assertEq(_count(logs, ITaskMarket.CompensationPaid.selector), 1, "carol repaid");
        assertEq(_count(logs, ITaskMarket.OpenerRepaid.selector), 1, "the watcher repaid");
        assertEq(market.creditOf(alice), paid1, "alice repaid");
        assertEq(market.creditOf(carol), paid2, "carol repaid");
        uint256 left = bond - open1 - paid1 - open2 - paid2;
        assertEq(market.trainerOf(taskId, bob).pool, left, "one bond covers both games");
        assertEq(market.groupOf(taskId, 0).pool, left, "the group's pool is bob's");
        assertEq(market.task(taskId).liveGroups, 2, "two live groups");
        assertEq(market.totalBonds(), 2 * bond, "alice's and carol's bonds locked");
    }

    /// @dev Four trainers: bob, alice and carol share the honest root (group 0), dave cheats (group 1).
    ///      bob, the group's first member, loses to dave; dave then loses to alice. The reward goes to
    ///      the live members alice and carol; the remainder of the split goes to the client (issue 12:
    ///      it went to the first live member when finalize paid everyone).
    function test_finalize_rewardToLiveMembers_remainderToClient_succeeds() public checkFunds {
        ITaskMarket.TaskSpec memory s = _spec();
        s.slots = 4;
        s.bond = market.minBond(s);
        uint256 taskId = _post(s);
        uint256 bond = s.bond;
        address dave = makeAddr("dave");
        vm.deal(dave, 100 ether);
        _join(taskId, alice);
        _join(taskId, bob);
        _join(taskId, carol);
        _join(taskId, dave);
        _commit(taskId, bob, honest);
        _commit(taskId, dave, cheat);
        _commit(taskId, alice, honest);
        _commit(taskId, carol, honest);
        _submit(taskId, bob, honest); // group 0
        _submit(taskId, dave, cheat); // group 1
        _submit(taskId, alice, honest); // group 0
        _submit(taskId, carol, honest); // group 0

        uint256 g1 = _open(taskId, bob, dave);
        _timeout(g1); // bob never moves
        uint256 paid1 = _owed(taskId, g1, 1);
        market.settleDispute(g1);
        uint256 g2 = _open(taskId, dave, alice);
        _timeout(g2); // nor does dave
        uint256 paid2 = _owed(taskId, g2, 1);
        market.settleDispute(g2);
        uint256 opened = market.creditOf(watcher);
        assertEq(market.groupOf(taskId, 0).live, 2, "alice and carol");
        assertEq(market.task(taskId).liveGroups, 1, "one live group");

        uint256 share = REWARD / 2;
        uint256 remainder = REWARD - 2 * share;
        assertEq(remainder, 1, "odd reward");
        uint256 burnt = 2 * bond - opened - paid1 - paid2;
        vm.warp(s.disputeDeadline + 1);
        vm.expectEmit(true, false, false, true, address(market));
        emit ITaskMarket.Credited(client, remainder);
        vm.expectEmit(true, false, false, true, address(market));
        emit ITaskMarket.Burnt(taskId, burnt);
        vm.expectEmit(true, false, false, true, address(market));
        emit ITaskMarket.TaskFinalized(taskId, 0, REWARD);
        market.finalize(taskId);
        vm.expectEmit(true, true, false, true, address(market));
        emit ITaskMarket.Claimed(taskId, alice, bond + share);
        market.claim(taskId, alice);
        vm.expectEmit(true, true, false, true, address(market));
        emit ITaskMarket.Claimed(taskId, carol, bond + share);
        market.claim(taskId, carol);
        assertEq(market.creditOf(alice), paid2 + bond + share, "alice: repayment, bond, share");
        assertEq(market.creditOf(carol), bond + share, "carol: bond, share");
        assertEq(market.creditOf(client), remainder, "client: the remainder");
        assertEq(market.creditOf(bob), 0, "bob: eliminated, nothing");
        assertEq(market.creditOf(dave), paid1, "dave: his g1 repayment only");
        assertEq(market.totalBurnt(), burnt, "bob's and dave's rests");
    }

    // ---------------------------------------------------------------- the oracle path

    function test_settleDispute_oracleFinal_paysFeeAndCompensation_succeeds() public checkFunds {
        (uint256 taskId, uint256 gameId) = _oneNodeDispute();
        address oracle1 = _registerOracle();
        uint256 qid = _playToOracle(gameId);
        _answer(qid, oracle1, OUT_HONEST);
        game.resolveOracle(gameId);
        assertEq(uint8(game.outcome(gameId)), uint8(IDisputeGame.Outcome.ChallengerWins), "outcome");

        uint256 bond = _bond(taskId);
        ITaskMarket.TaskSpec memory s = market.specOf(taskId);
        uint256 comp = market.compensation(s);
        assertEq(
            bond,
            comp + ORACLE_FEE + market.OPEN_GAS_BOUND() * s.gasPriceCap,
            "two slots: the bond covers one game"
        );
        uint256 paid = _owed(taskId, gameId, 1);
        (, uint256[2] memory spent) = game.meterOf(gameId);
        assertEq(paid, spent[1], "below the cap: exactly what alice's moves cost");
        vm.expectEmit(true, true, false, true, address(market));
        emit ITaskMarket.BondSlashed(taskId, bob, bond);
        vm.expectEmit(true, true, false, true, address(market));
        emit ITaskMarket.TrainerEliminated(taskId, bob, 0, bond);
        vm.expectEmit(true, true, false, true, address(market));
        emit ITaskMarket.GroupEliminated(taskId, 0);
        vm.expectEmit(true, true, true, false, address(market));
        emit ITaskMarket.OpenerRepaid(taskId, gameId, watcher, 0);
        vm.expectEmit(true, true, true, true, address(market));
        emit ITaskMarket.CompensationPaid(taskId, gameId, alice, paid);
        vm.expectEmit(true, true, false, true, address(oracle));
        emit IRecomputeOracle.FeePaid(qid, address(market), ORACLE_FEE);
        vm.expectEmit(true, true, false, true, address(market));
        emit ITaskMarket.OracleFeePaid(taskId, gameId, qid, ORACLE_FEE);
        market.settleDispute(gameId);
        uint256 opened = market.creditOf(watcher);
        uint256 left = bond - ORACLE_FEE - opened - paid;
        assertTrue(oracle.question(qid).feePaid, "fee paid");
        assertEq(oracle.creditOf(answeredBy), ORACLE_FEE, "the oracle is paid");
        assertEq(market.trainerOf(taskId, bob).pool, left, "the pool keeps what the repayments did not need");
        assertEq(market.groupOf(taskId, 0).pool, left, "group pool");
        assertEq(market.totalPools(), left, "pools");

        _finalizeAndClaim(taskId);
        assertEq(market.creditOf(alice), paid + bond + REWARD, "alice: repayment, bond, reward");
        assertEq(market.totalBurnt(), left, "the rest is burnt");
    }

    function test_settleDispute_bothLose_paysFeeFromDefender_succeeds() public checkFunds {
        (uint256 taskId, uint256 gameId) = _oneNodeDispute();
        address oracle1 = _registerOracle();
        uint256 qid = _playToOracle(gameId);
        _answer(qid, oracle1, keccak256("neither"));
        game.resolveOracle(gameId);
        assertEq(uint8(game.outcome(gameId)), uint8(IDisputeGame.Outcome.BothLose), "outcome");

        uint256 bond = _bond(taskId);
        vm.recordLogs();
        vm.expectEmit(true, true, false, true, address(market));
        emit ITaskMarket.TrainerEliminated(taskId, bob, 0, bond);
        vm.expectEmit(true, true, false, true, address(market));
        emit ITaskMarket.GroupEliminated(taskId, 0);
        vm.expectEmit(true, true, false, true, address(market));
        emit ITaskMarket.TrainerEliminated(taskId, alice, 1, bond);
        vm.expectEmit(true, true, false, true, address(market));
        emit ITaskMarket.GroupEliminated(taskId, 1);
        vm.expectEmit(true, true, false, true, address(market));
        emit ITaskMarket.OracleFeePaid(taskId, gameId, qid, ORACLE_FEE);
        market.settleDispute(gameId);
        Vm.Log[] memory logs = vm.getRecordedLogs();
        assertEq(_count(logs, ITaskMarket.BondSlashed.selector), 2, "both slashed");
        assertEq(_count(logs, ITaskMarket.CompensationPaid.selector), 0, "no compensation");
        assertEq(market.trainerOf(taskId, bob).pool, bond - ORACLE_FEE, "the defender's pool pays the fee");
        assertEq(market.trainerOf(taskId, alice).pool, bond, "the challenger's pool is untouched");
        assertTrue(market.trainerOf(taskId, alice).eliminated, "alice eliminated");
        assertEq(market.groupOf(taskId, 0).pool, bond - ORACLE_FEE, "group 0's pool");
        assertEq(market.groupOf(taskId, 1).pool, bond, "group 1's pool");
        assertEq(market.task(taskId).liveGroups, 0, "both eliminated");
        assertEq(market.creditOf(alice), 0, "no compensation");
        assertEq(market.creditOf(bob), 0, "no compensation");

        vm.warp(market.specOf(taskId).disputeDeadline + 1);
        vm.expectEmit(true, false, false, true, address(market));
        emit ITaskMarket.Burnt(taskId, 2 * bond - ORACLE_FEE);
        vm.expectEmit(true, false, false, true, address(market));
        emit ITaskMarket.TaskFinalized(taskId, -1, REWARD);
        market.finalize(taskId);
        assertEq(market.creditOf(client), REWARD, "client refunded");
        assertEq(market.creditOf(alice), 0, "alice: nothing");
        assertEq(market.creditOf(bob), 0, "bob: nothing");
        assertEq(market.totalBurnt(), 2 * bond - ORACLE_FEE, "both pools burnt");
    }

    function test_settleDispute_noDecision_succeeds() public checkFunds {
        (uint256 taskId, uint256 gameId) = _oneNodeDispute();
        // No oracle is registered: the question waits for oracles, then is abandoned.
        uint256 qid = _playToOracle(gameId);
        OracleSetup.drawNow(oracle, qid);
        vm.warp(block.timestamp + oracle.params().waitLimit + 1);
        OracleSetup.drawNow(oracle, qid);
        assertEq(
            uint8(oracle.question(qid).status), uint8(IRecomputeOracle.QuestionStatus.Abandoned), "abandoned"
        );
        game.resolveOracle(gameId);
        vm.recordLogs();
        vm.expectEmit(true, true, false, true, address(market));
        emit ITaskMarket.DisputeSettled(taskId, gameId, IDisputeGame.Outcome.NoDecision);
        market.settleDispute(gameId);
        Vm.Log[] memory logs = vm.getRecordedLogs();
        assertEq(_count(logs, ITaskMarket.DisputeSettled.selector), 1, "settled");
        assertEq(_count(logs, ITaskMarket.TrainerEliminated.selector), 0, "nobody eliminated");
        assertEq(_count(logs, ITaskMarket.OracleFeePaid.selector), 0, "no fee");
        ITaskMarket.TaskView memory t = market.task(taskId);
        assertEq(t.liveGroups, 2, "both groups live");
        assertEq(t.activeGames, 0, "no game");
        assertFalse(market.trainerOf(taskId, bob).eliminated, "bob live");
        assertFalse(market.trainerOf(taskId, alice).eliminated, "alice live");
        assertEq(market.totalPools(), 0, "no pool");
        vm.expectRevert(abi.encodeWithSelector(TaskMarketAlreadyPlayed.selector, taskId, alice, bob));
        market.openDispute(taskId, alice, bob);

        uint256 bond = _bond(taskId);
        _finalizeAndClaim(taskId);
        assertEq(market.creditOf(client), REWARD, "client refunded");
        assertEq(market.creditOf(alice), bond, "alice's bond back");
        assertEq(market.creditOf(bob), bond, "bob's bond back");
    }

    // ---------------------------------------------------------------- the oracle under attack
    // docs/game.md, "Threat model": each attack of the oracle review, played through the market. Draws
    // are random; where an outcome depends on the draw, `_drawFor` picks (by searching target-block
    // hashes) the draw most favourable to the attacker that the attack allows, and the honest side
    // still wins.

    /// @notice Attack 1: the challenger chose the committee (it was drawn in `challenge` from values
    ///         readable before the transaction). A contract that challenges and reads the committee in
    ///         one transaction finds none; colluders holding one seat, and the answering seat, lose.
    function test_attack_committeeChosenByChallenger_honestWins_succeeds() public checkFunds {
        (uint256 taskId, uint256 gameId) = _oneNodeDispute();
        address[] memory honestOracles = OracleSetup.registerMany(oracle, "honest oracle", 5);
        address[] memory colluders = OracleSetup.registerMany(oracle, "colluder", 2);
        uint256 qid = _playToOracle(gameId);
        _drawFor(qid, colluders, 1, true); // worst case: a colluder answers
        _answerAs(qid, oracle.question(qid).oracle, OUT_CHEAT);

        CommitteeGrinder grinder = new CommitteeGrinder(oracle, colluders);
        vm.deal(address(grinder), 1 ether);
        vm.expectRevert(abi.encodeWithSelector(RecomputeOracleRandomnessPending.selector, qid, 2));
        grinder.challengeAndDraw(qid);

        vm.deal(honestOracles[0], 1 ether);
        vm.prank(honestOracles[0]);
        oracle.challenge{value: 0.5 ether}(qid);
        _drawFor(qid, colluders, 1, false); // the most seats colluders get without a majority
        assertEq(_seatsOf(qid, colluders), 1, "one colluder seated");
        _voteByRole(qid, colluders, OUT_CHEAT, OUT_HONEST);
        oracle.settle(qid);
        _assertHonestWins(taskId, gameId, qid, honestOracles);
        assertEq(oracle.bondOf(colluders[0]) + oracle.bondOf(colluders[1]), 0, "both colluders slashed");
    }

    /// @notice Attack 1b: two colluders on a committee of three split their votes so that no majority
    ///         forms; the question was abandoned and the cheater kept its bond. A new committee is drawn
    ///         instead, and the split voters are slashed when it decides.
    function test_attack_splitVotes_redraw_honestWins_succeeds() public checkFunds {
        (uint256 taskId, uint256 gameId) = _oneNodeDispute();
        address[] memory honestOracles = OracleSetup.registerMany(oracle, "honest oracle", 7);
        address[] memory colluders = OracleSetup.registerMany(oracle, "colluder", 2);
        uint256 qid = _playToOracle(gameId);
        _drawFor(qid, honestOracles, 1, true);
        _answerAs(qid, oracle.question(qid).oracle, OUT_HONEST);
        vm.deal(bob, bob.balance + 0.5 ether);
        vm.prank(bob); // the cheater challenges the true answer
        oracle.challenge{value: 0.5 ether}(qid);
        _drawFor(qid, colluders, 2, false);
        address[] memory seated = oracle.committeeOf(qid);
        bytes32[] memory votes = new bytes32[](3);
        for (uint256 i; i < 3; ++i) {
            votes[i] = seated[i] == colluders[0]
                ? _hash1(OUT_CHEAT)
                : seated[i] == colluders[1] ? _hash1(keccak256("split")) : _hash1(OUT_HONEST);
        }
        OracleSetup.voteNow(oracle, qid, votes);
        vm.expectEmit(true, false, false, true, address(oracle));
        emit IRecomputeOracle.RoundFailed(qid, 1);
        oracle.settle(qid);
        assertEq(uint8(oracle.question(qid).status), uint8(IRecomputeOracle.QuestionStatus.CommitteeDrawing));
        OracleSetup.drawNow(oracle, qid);
        assertEq(_seatsOf(qid, colluders), 0, "round 2 seats nobody from round 1");
        _voteByRole(qid, colluders, OUT_CHEAT, OUT_HONEST);
        oracle.settle(qid);
        _assertHonestWins(taskId, gameId, qid, honestOracles);
        assertEq(oracle.bondOf(colluders[0]) + oracle.bondOf(colluders[1]), 0, "split voters slashed");
    }

    /// @notice Attack 2: questions nobody can answer (inputs never published) got honest oracles
    ///         slashed for silence and deactivated. Only the market's games ask now, so a junk question
    ///         costs its askers two bonded trainers of a posted task; an oracle that cannot fetch the
    ///         inputs answers UNAVAILABLE, keeps its bond, stays active and is paid; the askers lose both
    ///         bonds, and their challenge of the UNAVAILABLE answer loses its bond too.
    function test_attack_junkQuestion_unavailable_honestOracleKeepsBond_succeeds() public checkFunds {
        (uint256 taskId, uint256 gameId) = _oneNodeDispute(); // alice and bob: the attacker's sybils
        address[] memory honestOracles = OracleSetup.registerMany(oracle, "honest oracle", 5);
        vm.expectRevert(abi.encodeWithSelector(RecomputeOracleNotGame.selector, bob, address(game)));
        vm.prank(bob);
        oracle.ask(bytes32(0), 0, new bytes32[](1), [alice, bob]);
        uint256 qid = _playToOracle(gameId);
        OracleSetup.answerNow(oracle, qid, OracleSetup.unavailable());
        address answerer = oracle.question(qid).oracle;
        vm.deal(bob, bob.balance + 0.5 ether);
        vm.prank(bob);
        oracle.challenge{value: 0.5 ether}(qid);
        OracleSetup.drawNow(oracle, qid);
        bytes32[] memory votes = new bytes32[](3);
        for (uint256 i; i < 3; ++i) {
            votes[i] = oracle.unavailableHash();
        }
        OracleSetup.voteNow(oracle, qid, votes);
        oracle.settle(qid);
        (IRecomputeOracle.QuestionStatus status, bytes32 answer) = oracle.result(qid);
        assertEq(uint8(status), uint8(IRecomputeOracle.QuestionStatus.Final), "final");
        assertEq(answer, oracle.unavailableHash(), "unavailable");
        game.resolveOracle(gameId);
        assertEq(uint8(game.outcome(gameId)), uint8(IDisputeGame.Outcome.BothLose), "both askers lose");
        market.settleDispute(gameId);
        assertTrue(market.trainerOf(taskId, alice).eliminated && market.trainerOf(taskId, bob).eliminated);
        for (uint256 i; i < honestOracles.length; ++i) {
            assertEq(oracle.bondOf(honestOracles[i]), 1 ether, "honest bond intact");
            assertTrue(oracle.isActive(honestOracles[i]), "still active");
        }
        assertEq(oracle.creditOf(answerer), 0.25 ether + ORACLE_FEE, "half the challenge bond, and the fee");
    }

    /// @notice Attack 2b: a colluding answerer claims UNAVAILABLE for inputs the honest trainer
    ///         published; committees fetch them, the claim is overturned at the price of silence, and the
    ///         honest trainer wins.
    function test_attack_falseUnavailable_overturned_honestWins_succeeds() public checkFunds {
        (uint256 taskId, uint256 gameId) = _oneNodeDispute();
        address[] memory honestOracles = OracleSetup.registerMany(oracle, "honest oracle", 5);
        address[] memory colluders = OracleSetup.registerMany(oracle, "colluder", 1);
        uint256 qid = _playToOracle(gameId);
        _drawFor(qid, colluders, 1, true);
        _answerAs(qid, colluders[0], ORACLE_UNAVAILABLE);
        vm.deal(honestOracles[0], 1 ether);
        vm.prank(honestOracles[0]);
        oracle.challenge{value: 0.5 ether}(qid);
        OracleSetup.drawNow(oracle, qid);
        _voteByRole(qid, colluders, OUT_CHEAT, OUT_HONEST);
        oracle.settle(qid);
        _assertHonestWins(taskId, gameId, qid, honestOracles);
        assertEq(oracle.bondOf(colluders[0]), 0.9 ether, "silence's price only");
    }

    /// @notice Attack 3: with fewer oracles than an escalation needs, a lone (lying) oracle's answer was
    ///         final. The question now waits, with the game's clocks stopped, until enough oracles are
    ///         eligible; drawn then, the liar is challenged and overturned.
    function test_attack_loneLiar_waits_thenOverturned_succeeds() public checkFunds {
        (uint256 taskId, uint256 gameId) = _oneNodeDispute();
        address[] memory colluders = OracleSetup.registerMany(oracle, "colluder", 1);
        uint256 qid = _playToOracle(gameId);
        OracleSetup.drawNow(oracle, qid);
        IRecomputeOracle.Question memory q = oracle.question(qid);
        assertEq(uint8(q.status), uint8(IRecomputeOracle.QuestionStatus.Drawing), "waits");
        assertEq(q.oracle, address(0), "the lone oracle is not assigned");
        vm.expectRevert(
            abi.encodeWithSelector(DisputeGameNotPlaying.selector, gameId, IDisputeGame.Stage.Oracle)
        );
        game.timeout(gameId); // both clocks are stopped
        vm.warp(block.timestamp + 30 minutes);
        address[] memory honestOracles = OracleSetup.registerMany(oracle, "honest oracle", 4);
        OracleSetup.drawNow(oracle, qid); // the pending request predates them: new randomness is requested
        _drawFor(qid, colluders, 1, true);
        _answerAs(qid, colluders[0], OUT_CHEAT);
        vm.deal(honestOracles[0], 1 ether);
        vm.prank(honestOracles[0]);
        oracle.challenge{value: 0.5 ether}(qid);
        OracleSetup.drawNow(oracle, qid);
        _voteByRole(qid, colluders, OUT_CHEAT, OUT_HONEST);
        oracle.settle(qid);
        _assertHonestWins(taskId, gameId, qid, honestOracles);
        assertEq(oracle.bondOf(colluders[0]), 0, "the liar is slashed");
    }

    /// @notice Attack 2c: one silence deactivated an oracle for good. Silence costs `silenceSlash`;
    ///         the oracle stays eligible for the units its bond still covers, and a top-up restores
    ///         the rest (for draws requested after it).
    function test_attack_silence_doesNotDeactivate_succeeds() public checkFunds {
        (, uint256 gameId) = _oneNodeDispute();
        OracleSetup.registerMany(oracle, "honest oracle", 5);
        uint256 qid = _playToOracle(gameId);
        OracleSetup.drawNow(oracle, qid);
        address silent = oracle.question(qid).oracle;
        vm.warp(block.timestamp + 1 hours + 1);
        oracle.reassign(qid);
        assertEq(oracle.bondOf(silent), 0.9 ether, "silence slashed");
        assertFalse(oracle.isActive(silent), "a bond below one unit is not drawn");
        OracleSetup.register(oracle, silent, 0.1 ether);
        assertTrue(oracle.isActive(silent), "topped up: active again");
    }

    /// @dev Finds a hash of the pending draw's target block under which the draw seats at least
    ///      `seats` of `who` (committee), or makes one of `who` the answering oracle, and draws with it.
    function _drawFor(uint256 qid, address[] memory who, uint256 seats, bool answerer) internal {
        IRecomputeOracle.Question memory q = oracle.question(qid);
        for (uint256 i; i < 512; ++i) {
            uint256 snap = vm.snapshotState();
            vm.roll(q.requestBlock + 2);
            vm.setBlockhash(q.requestBlock + 1, keccak256(abi.encode("draw", qid, i)));
            oracle.draw(qid);
            bool ok = answerer ? _isIn(oracle.question(qid).oracle, who) : _seatsOf(qid, who) >= seats;
            if (ok) return;
            vm.revertToState(snap);
        }
        revert("no such draw");
    }

    /// @dev How many of `who` sit in the current committee round.
    function _seatsOf(uint256 qid, address[] memory who) internal view returns (uint256 n) {
        address[] memory seated = oracle.committeeOf(qid);
        for (uint256 i = seated.length >= 3 ? seated.length - 3 : 0; i < seated.length; ++i) {
            if (_isIn(seated[i], who)) ++n;
        }
    }

    function _isIn(address a, address[] memory who) internal pure returns (bool) {
        for (uint256 i; i < who.length; ++i) {
            if (who[i] == a) return true;
        }
        return false;
    }

    function _answerAs(uint256 qid, address by, bytes32 output) internal {
        bytes32[] memory outputs = new bytes32[](1);
        outputs[0] = output;
        vm.prank(by);
        oracle.answer(qid, outputs);
    }

    function _hash1(bytes32 output) internal pure returns (bytes32) {
        bytes32[] memory outputs = new bytes32[](1);
        outputs[0] = output;
        return OracleSetup.hashOf(outputs);
    }

    /// @dev The current committee votes: members in `liars` for `lie`, the others for `truth`.
    function _voteByRole(uint256 qid, address[] memory liars, bytes32 lie, bytes32 truth) internal {
        address[] memory seated = oracle.committeeOf(qid);
        bytes32[] memory votes = new bytes32[](3);
        for (uint256 i; i < 3; ++i) {
            votes[i] = _isIn(seated[seated.length - 3 + i], liars) ? _hash1(lie) : _hash1(truth);
        }
        OracleSetup.voteNow(oracle, qid, votes);
    }

    /// @dev The question ended with the honest output, the honest trainer (alice) won its game, is paid
    ///      compensation, bond and reward, and no honest oracle lost bond.
    function _assertHonestWins(uint256 taskId, uint256 gameId, uint256 qid, address[] memory honestOracles)
        internal
    {
        (IRecomputeOracle.QuestionStatus status, bytes32 answer) = oracle.result(qid);
        assertEq(uint8(status), uint8(IRecomputeOracle.QuestionStatus.Final), "final");
        assertEq(answer, _hash1(OUT_HONEST), "the honest output");
        game.resolveOracle(gameId);
        assertEq(uint8(game.outcome(gameId)), uint8(IDisputeGame.Outcome.ChallengerWins), "alice wins");
        uint256 paid = _owed(taskId, gameId, 1);
        assertGt(paid, 0, "alice's moves");
        market.settleDispute(gameId);
        _finalizeAndClaim(taskId);
        assertEq(market.creditOf(alice), paid + _bond(taskId) + REWARD, "alice: repayment, bond, reward");
        assertTrue(market.trainerOf(taskId, bob).eliminated, "the cheater is eliminated");
        for (uint256 i; i < honestOracles.length; ++i) {
            assertGe(oracle.bondOf(honestOracles[i]), 1 ether, "no honest oracle loses bond");
        }
    }

    // ---------------------------------------------------------------- withdraw

    function test_withdraw_reentrant_reverts() public checkFunds {
        uint256 taskId = _post(_spec());
        uint256 bond = _bond(taskId);
        ReentrantWithdrawer attacker = new ReentrantWithdrawer(market);
        attacker.join{value: bond + 1 ether}(taskId);
        assertEq(market.creditOf(address(attacker)), 1 ether, "excess credited");
        uint256 before = address(market).balance;

        vm.expectEmit(true, false, false, true, address(market));
        emit ITaskMarket.Withdrawn(address(attacker), 1 ether);
        attacker.withdraw();
        assertEq(
            attacker.reentryError(),
            abi.encodeWithSelector(TaskMarketNothingToWithdraw.selector, address(attacker)),
            "re-entry finds no credit"
        );
        assertEq(attacker.received(), 1 ether, "paid once");
        assertEq(address(market).balance, before - 1 ether, "market paid once");
        assertEq(market.creditOf(address(attacker)), 0, "credit spent");
    }

    function test_withdraw_nothing_reverts() public checkFunds {
        vm.expectRevert(abi.encodeWithSelector(TaskMarketNothingToWithdraw.selector, alice));
        vm.prank(alice);
        market.withdraw();
    }

    function test_withdraw_transferFailed_reverts() public checkFunds {
        uint256 taskId = _post(_spec());
        uint256 bond = _bond(taskId);
        RejectingTrainer trainer = new RejectingTrainer(market);
        trainer.join{value: bond + 1 ether}(taskId);
        vm.expectRevert(abi.encodeWithSelector(TaskMarketTransferFailed.selector, address(trainer), 1 ether));
        trainer.withdraw();
        assertEq(market.creditOf(address(trainer)), 1 ether, "credit kept");
    }

    // ---------------------------------------------------------------- helpers

    /// @dev The default spec with the shortest clock it allows (`roundBound * MIN_MOVE_TIME`): a game
    ///      opened at the first reveal ends by timeout within the reveal window. Arity 64: the element
    ///      and dot paths' rounds (docs/game.md 2.7, 2.8) would not fit the window at a smaller arity.
    function _shortClockSpec() internal view returns (ITaskMarket.TaskSpec memory s) {
        s = _spec();
        s.arity = 64;
        s.clock = uint64(game.roundBound(_cfg(s)) * market.MIN_MOVE_TIME());
        assertLt(s.clock + 2, market.REVEAL_WINDOW(), "a timeout fits the reveal window");
        s.bond = market.minBond(s);
    }

    /// @dev alice commits to `roots` and reveals them; the reveal reverts with `err`.
    function _expectListRevert(uint256 taskId, bytes32[] memory roots, bytes memory err) internal {
        _commitRoots(taskId, alice, roots);
        _toReveals(taskId);
        bytes32 salt = _salt(alice);
        vm.expectRevert(err);
        vm.prank(alice);
        market.submit(taskId, roots, salt);
    }

    function _expectBadDeadlines(ITaskMarket.TaskSpec memory s) internal {
        vm.expectRevert(
            abi.encodeWithSelector(
                TaskMarketBadDeadlines.selector,
                block.timestamp,
                s.joinDeadline,
                s.submitDeadline,
                s.disputeDeadline
            )
        );
    }
}

/// @notice Attack 1's lever: challenge, read the committee and revert unless colluders sit on it, all
///         in one transaction.
contract CommitteeGrinder {
    RecomputeOracle internal immutable _oracle;
    address[] internal _colluders;

    constructor(RecomputeOracle oracle_, address[] memory colluders) {
        _oracle = oracle_;
        _colluders = colluders;
    }

    function challengeAndDraw(uint256 qid) external {
        _oracle.challenge{value: _oracle.challengeBond()}(qid);
        _oracle.draw(qid); // reverts: the committee's randomness is not readable in this block
        address[] memory seated = _oracle.committeeOf(qid);
        uint256 n;
        for (uint256 i; i < seated.length; ++i) {
            for (uint256 j; j < _colluders.length; ++j) {
                if (seated[i] == _colluders[j]) ++n;
            }
        }
        require(n >= 2, "not ours");
    }
}

