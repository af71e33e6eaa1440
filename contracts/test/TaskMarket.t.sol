// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {Test, Vm} from "forge-std/Test.sol";

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
    TaskMarketZeroSteps
} from "../src/lib/MarketErrors.sol";
import {OracleSetup} from "./utils/OracleSetup.sol";
import {CheckpointLists} from "./utils/CheckpointLists.sol";
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

contract TaskMarketTest is Test {
    using CheckpointLists for CheckpointLists.List;

    uint256 internal constant REWARD = 10 ether + 1; // odd, so that a split leaves a remainder
    uint256 internal constant ORACLE_FEE = 0.01 ether;
    uint64 internal constant STEPS = 8;
    uint64 internal constant INTERVAL = 2; // 5 checkpoints: the tree has padding
    uint64 internal constant CLOCK = 1 hours;
    bytes32 internal constant INITIAL = keccak256("initial state");
    bytes32 internal constant POST_HONEST = keccak256("post state, honest");
    bytes32 internal constant POST_CHEAT = keccak256("post state, cheat");
    bytes32 internal constant INPUT = keccak256("input tensor");
    bytes32 internal constant OUT_HONEST = keccak256("output, honest");
    bytes32 internal constant OUT_CHEAT = keccak256("output, cheat");

    RecomputeOracle internal oracle;
    DisputeGame internal game;
    TaskMarket internal market;

    address internal client = makeAddr("client");
    address internal alice = makeAddr("alice");
    address internal bob = makeAddr("bob");
    address internal carol = makeAddr("carol");

    address internal answeredBy;
    CheckpointLists.List internal honest;
    CheckpointLists.List internal cheat;

    modifier checkFunds() {
        _;
        _assertFunds();
    }

    function setUp() public {
        vm.warp(1_700_000_000);
        oracle = OracleSetup.deploy(OracleSetup.params(ORACLE_FEE, 1 ether, 0.5 ether, 0.1 ether, 1 hours, 1 days, 3, 3));
        game = new DisputeGame(oracle);
        market = new TaskMarket(game, oracle);
        oracle.bindGame(address(game));
        game.bindMarket(address(market));
        uint256 n = STEPS / INTERVAL + 1;
        CheckpointLists.List memory h =
            CheckpointLists.build(CheckpointLists.states("honest", INITIAL, n), INTERVAL);
        CheckpointLists.List memory c =
            CheckpointLists.build(CheckpointLists.states("cheat", INITIAL, n), INTERVAL);
        _store(honest, h);
        _store(cheat, c);
        vm.deal(client, 100 ether);
        vm.deal(alice, 100 ether);
        vm.deal(bob, 100 ether);
        vm.deal(carol, 100 ether);
    }

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

    function test_minBond_formula_succeeds() public view {
        ITaskMarket.TaskSpec memory s = _spec();
        uint256 comp = game.honestGasBound(_cfg(s)) * s.gasPriceCap;
        assertGt(comp, 0, "compensation");
        assertEq(market.compensation(s), comp, "compensation");
        assertEq(market.minBond(s), 2 * (comp + ORACLE_FEE), "slots - 1 games");
        s.slots = 1;
        assertEq(market.minBond(s), comp + ORACLE_FEE, "at least one game");
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
        s.disputeDeadline = s.submitDeadline + uint64(market.MIN_DISPUTE_WINDOW());
        _post(s);
    }

    /// @notice Finding 8 (issue 12): with `submitDeadline == disputeDeadline` a liar submitting in the
    ///         last second could not be disputed at all.
    function test_postTask_noDisputeWindow_reverts() public checkFunds {
        ITaskMarket.TaskSpec memory s = _spec();
        s.disputeDeadline = s.submitDeadline;
        vm.expectRevert(
            abi.encodeWithSelector(
                TaskMarketDisputeWindowTooShort.selector, uint256(0), market.MIN_DISPUTE_WINDOW()
            )
        );
        _post(s);
    }

    function test_postTask_disputeWindowOneSecondShort_reverts() public checkFunds {
        ITaskMarket.TaskSpec memory s = _spec();
        uint256 min = market.MIN_DISPUTE_WINDOW();
        s.disputeDeadline = s.submitDeadline + uint64(min - 1);
        vm.expectRevert(abi.encodeWithSelector(TaskMarketDisputeWindowTooShort.selector, min - 1, min));
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

    // ---------------------------------------------------------------- submit

    function test_submit_groupsByRoot_succeeds() public checkFunds {
        uint256 taskId = _postAndJoinAll();
        vm.expectEmit(true, true, false, true, address(market));
        emit ITaskMarket.ResultSubmitted(taskId, bob, 0, cheat.root, cheat.finalState());
        _submit(taskId, bob, cheat);
        vm.expectEmit(true, true, false, true, address(market));
        emit ITaskMarket.ResultSubmitted(taskId, alice, 1, honest.root, honest.finalState());
        _submit(taskId, alice, honest);
        _submit(taskId, carol, honest);

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
        assertTrue(tr.submitted, "carol submitted");
        assertFalse(tr.eliminated, "carol live");
        assertEq(tr.group, 1, "carol's group");
        assertEq(tr.pool, 0, "carol's bond is no pool");
        ITaskMarket.GroupView memory none = market.groupOf(taskId, 2);
        assertEq(none.members.length, 0, "no group 2");
        assertFalse(none.eliminated, "an empty group is not eliminated");
    }

    function test_submit_twice_reverts() public checkFunds {
        uint256 taskId = _postAndJoinAll();
        _submit(taskId, alice, honest);
        bytes32[] memory roots = honest.stateRoots;
        vm.expectRevert(abi.encodeWithSelector(TaskMarketAlreadySubmitted.selector, taskId, alice, uint32(0)));
        vm.prank(alice);
        market.submit(taskId, roots);
    }

    function test_submit_late_reverts() public checkFunds {
        uint256 taskId = _postAndJoinAll();
        uint64 deadline = market.specOf(taskId).submitDeadline;
        vm.warp(deadline); // at the deadline is still in time
        _submit(taskId, alice, honest);
        vm.warp(deadline + 1);
        bytes32[] memory roots = honest.stateRoots;
        vm.expectRevert(
            abi.encodeWithSelector(TaskMarketSubmitClosed.selector, taskId, deadline, deadline + 1)
        );
        vm.prank(bob);
        market.submit(taskId, roots);
    }

    function test_submit_notJoined_reverts() public checkFunds {
        uint256 taskId = _post(_spec());
        bytes32[] memory roots = honest.stateRoots;
        vm.expectRevert(abi.encodeWithSelector(TaskMarketNotJoined.selector, taskId, alice));
        vm.prank(alice);
        market.submit(taskId, roots);
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
        vm.expectEmit(true, true, false, true, address(market));
        emit ITaskMarket.ResultSubmitted(taskId, alice, 0, root, roots[roots.length - 1]);
        vm.prank(alice);
        market.submit(taskId, roots);
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
        vm.expectRevert(
            abi.encodeWithSelector(TaskMarketInitialStateMismatch.selector, taskId, POST_CHEAT, INITIAL)
        );
        vm.prank(alice);
        market.submit(taskId, roots);
    }

    function test_submit_shortList_reverts() public checkFunds {
        uint256 taskId = _postAndJoinAll();
        bytes32[] memory roots = new bytes32[](STEPS / INTERVAL);
        roots[0] = INITIAL;
        vm.expectRevert(
            abi.encodeWithSelector(
                TaskMarketCheckpointCount.selector,
                taskId,
                uint256(STEPS / INTERVAL),
                uint256(STEPS / INTERVAL + 1)
            )
        );
        vm.prank(alice);
        market.submit(taskId, roots);
    }

    function test_submit_longList_reverts() public checkFunds {
        uint256 taskId = _postAndJoinAll();
        bytes32[] memory roots = new bytes32[](STEPS / INTERVAL + 2);
        roots[0] = INITIAL;
        vm.expectRevert(
            abi.encodeWithSelector(
                TaskMarketCheckpointCount.selector,
                taskId,
                uint256(STEPS / INTERVAL + 2),
                uint256(STEPS / INTERVAL + 1)
            )
        );
        vm.prank(alice);
        market.submit(taskId, roots);
    }

    function test_submit_emptyList_reverts() public checkFunds {
        uint256 taskId = _postAndJoinAll();
        vm.expectRevert(
            abi.encodeWithSelector(
                TaskMarketCheckpointCount.selector, taskId, uint256(0), uint256(STEPS / INTERVAL + 1)
            )
        );
        vm.prank(alice);
        market.submit(taskId, new bytes32[](0));
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
    ///      plays her own game against alice, wins it, and takes the whole reward.
    function test_openDispute_namedTrainerLoss_spareHonestGroupmate_succeeds() public checkFunds {
        uint256 taskId = _postAndJoinAll();
        uint256 bond = _bond(taskId);
        uint256 comp = market.compensation(_spec());
        _submit(taskId, bob, honest); // group 0
        _submit(taskId, alice, cheat); // group 1
        _submit(taskId, carol, honest); // group 0

        uint256 g1 = market.openDispute(taskId, bob, alice);
        // Only bob moves for his side: carol can neither carry nor spoil his game.
        bytes32[] memory nodes = _firstDescent(honest);
        vm.expectRevert(abi.encodeWithSelector(DisputeGameNotYourTurn.selector, g1, carol, bob));
        vm.prank(carol);
        game.descend(g1, nodes, new bytes32[](0));

        // bob never moves: he alone falls, and his bond compensates alice.
        _timeout(g1);
        assertEq(uint8(game.outcome(g1)), uint8(IDisputeGame.Outcome.ChallengerWins), "alice wins g1");
        vm.recordLogs();
        vm.expectEmit(true, true, false, true, address(market));
        emit ITaskMarket.BondSlashed(taskId, bob, bond);
        vm.expectEmit(true, true, false, true, address(market));
        emit ITaskMarket.TrainerEliminated(taskId, bob, 0, bond);
        vm.expectEmit(true, true, true, true, address(market));
        emit ITaskMarket.CompensationPaid(taskId, g1, alice, comp);
        market.settleDispute(g1);
        Vm.Log[] memory logs = vm.getRecordedLogs();
        assertEq(_count(logs, ITaskMarket.TrainerEliminated.selector), 1, "bob alone eliminated");
        assertEq(_count(logs, ITaskMarket.GroupEliminated.selector), 0, "group 0 stands");

        ITaskMarket.TrainerView memory b = market.trainerOf(taskId, bob);
        assertTrue(b.eliminated, "bob eliminated");
        assertEq(b.group, 0, "bob's group");
        assertEq(b.pool, bond - comp, "bob's pool after compensation");
        ITaskMarket.TrainerView memory c = market.trainerOf(taskId, carol);
        assertTrue(c.joined && c.submitted, "carol in");
        assertFalse(c.eliminated, "carol untouched");
        assertEq(c.pool, 0, "carol's bond is no pool");
        ITaskMarket.GroupView memory g0 = market.groupOf(taskId, 0);
        assertEq(g0.live, 1, "carol is live");
        assertFalse(g0.eliminated, "group 0 live");
        assertEq(g0.pool, bond - comp, "group pool: bob's");
        assertEq(market.task(taskId).liveGroups, 2, "two live groups");
        assertEq(market.totalBonds(), 2 * bond, "alice's and carol's bonds locked");
        assertEq(market.creditOf(alice), comp, "alice compensated");
        _assertFunds();
        vm.expectRevert(
            abi.encodeWithSelector(
                TaskMarketFinalizeTooEarly.selector,
                taskId,
                block.timestamp,
                market.specOf(taskId).disputeDeadline,
                uint32(2)
            )
        );
        market.finalize(taskId);

        // carol plays her own game; alice never answers.
        uint256 g2 = market.openDispute(taskId, carol, alice);
        vm.prank(carol);
        game.descend(g2, nodes, new bytes32[](0));
        _timeout(g2);
        assertEq(uint8(game.outcome(g2)), uint8(IDisputeGame.Outcome.DefenderWins), "carol wins g2");
        vm.expectEmit(true, true, false, true, address(market));
        emit ITaskMarket.BondSlashed(taskId, alice, bond);
        vm.expectEmit(true, true, false, true, address(market));
        emit ITaskMarket.TrainerEliminated(taskId, alice, 1, bond);
        vm.expectEmit(true, true, false, true, address(market));
        emit ITaskMarket.GroupEliminated(taskId, 1);
        vm.expectEmit(true, true, true, true, address(market));
        emit ITaskMarket.CompensationPaid(taskId, g2, carol, comp);
        market.settleDispute(g2);
        assertTrue(market.groupOf(taskId, 1).eliminated, "group 1 eliminated");
        assertEq(market.task(taskId).liveGroups, 1, "one live group");

        // Every slot submitted and one live group: finalize at once; carol alone is paid.
        vm.expectEmit(true, false, false, true, address(market));
        emit ITaskMarket.Credited(carol, bond + REWARD);
        vm.expectEmit(true, false, false, true, address(market));
        emit ITaskMarket.Burnt(taskId, 2 * (bond - comp));
        vm.expectEmit(true, false, false, true, address(market));
        emit ITaskMarket.TaskFinalized(taskId, 0, REWARD);
        market.finalize(taskId);
        assertEq(market.creditOf(carol), comp + bond + REWARD, "carol: compensation, bond, whole reward");
        assertEq(market.creditOf(bob), 0, "bob: nothing");
        assertEq(market.creditOf(alice), comp, "alice: her g1 compensation only");
        assertEq(market.creditOf(client), 0, "client: nothing");
        assertEq(market.trainerOf(taskId, bob).pool, 0, "bob's leftovers burnt");
        assertEq(market.totalBurnt(), 2 * (bond - comp), "bob's and alice's leftovers");
        assertEq(market.totalPools(), 0, "pools");
        assertEq(market.totalBonds(), 0, "bonds");
        assertEq(market.totalEscrow(), 0, "escrow");
        _assertFunds();
        _withdrawAll();
        assertEq(carol.balance, 100 ether + comp + REWARD, "carol paid");
        assertEq(address(market).balance, 2 * (bond - comp), "only the burnt rest stays");
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

    function test_finalize_oneGroupOpenSlot_reverts() public checkFunds {
        uint256 taskId = _postAndJoinAll();
        _submit(taskId, alice, honest);
        ITaskMarket.TaskSpec memory s = market.specOf(taskId);
        // One group, but bob and carol may still submit until the submit deadline.
        vm.warp(s.submitDeadline);
        vm.expectRevert(
            abi.encodeWithSelector(
                TaskMarketFinalizeTooEarly.selector,
                taskId,
                uint256(s.submitDeadline),
                s.disputeDeadline,
                uint32(1)
            )
        );
        market.finalize(taskId);
        vm.warp(s.submitDeadline + 1);
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

    function test_finalize_allAgree_paysReward_succeeds() public checkFunds {
        uint256 taskId = _postAndJoinAll();
        uint256 bond = _bond(taskId);
        _submit(taskId, alice, honest);
        _submit(taskId, bob, honest);
        _submit(taskId, carol, honest);
        // Every slot submitted and one group: no need to wait for any deadline.
        uint256 share = REWARD / 3;
        uint256 first = REWARD - 2 * share;
        vm.expectEmit(true, false, false, true, address(market));
        emit ITaskMarket.Credited(alice, bond + first);
        vm.expectEmit(true, false, false, true, address(market));
        emit ITaskMarket.Credited(bob, bond + share);
        vm.expectEmit(true, false, false, true, address(market));
        emit ITaskMarket.Credited(carol, bond + share);
        vm.expectEmit(true, false, false, true, address(market));
        emit ITaskMarket.TaskFinalized(taskId, 0, REWARD);
        market.finalize(taskId);

        assertEq(uint8(market.task(taskId).status), uint8(ITaskMarket.TaskStatus.Finalized), "finalized");
        assertEq(market.creditOf(alice), bond + first, "alice: bond, share and remainder");
        assertEq(market.creditOf(bob), bond + share, "bob");
        assertEq(market.creditOf(carol), bond + share, "carol");
        assertEq(market.creditOf(client), 0, "client");
        assertEq(market.totalEscrow(), 0, "escrow");
        assertEq(market.totalBonds(), 0, "bonds");
        _withdrawAll();
        assertEq(alice.balance, 100 ether + first, "alice paid");
        assertEq(address(market).balance, 0, "market empty");
    }

    function test_finalize_noSubmission_refundsClient_succeeds() public checkFunds {
        uint256 taskId = _post(_spec());
        uint256 bond = _bond(taskId);
        _join(taskId, alice);
        _join(taskId, bob);
        vm.warp(market.specOf(taskId).submitDeadline + 1);
        // No group at all: finalizing can follow the submit deadline.
        vm.expectEmit(true, true, false, true, address(market));
        emit ITaskMarket.BondSlashed(taskId, alice, bond);
        vm.expectEmit(true, true, false, true, address(market));
        emit ITaskMarket.BondSlashed(taskId, bob, bond);
        vm.expectEmit(true, false, false, true, address(market));
        emit ITaskMarket.Credited(client, REWARD + 2 * bond);
        vm.expectEmit(true, false, false, true, address(market));
        emit ITaskMarket.TaskFinalized(taskId, -1, REWARD);
        market.finalize(taskId);
        assertEq(market.creditOf(client), REWARD + 2 * bond, "reward refunded, bonds forfeited");
        assertEq(market.creditOf(alice), 0, "alice forfeits");
        _withdrawAll();
        assertEq(client.balance, 100 ether + 2 * bond, "client");
    }

    function test_finalize_twoLiveGroups_refundsClient_succeeds() public checkFunds {
        uint256 taskId = _twoGroups();
        uint256 bond = _bond(taskId);
        vm.warp(market.specOf(taskId).disputeDeadline + 1);
        vm.expectEmit(true, false, false, true, address(market));
        emit ITaskMarket.TaskFinalized(taskId, -1, REWARD);
        market.finalize(taskId);
        assertEq(market.creditOf(client), REWARD + bond, "reward back, carol's bond forfeited");
        assertEq(market.creditOf(alice), bond, "alice's bond back");
        assertEq(market.creditOf(bob), bond, "bob's bond back");
    }

    // ---------------------------------------------------------------- the dispute path

    function test_settleDispute_defenderTimesOut_succeeds() public checkFunds {
        uint256 taskId = _postAndJoinAll();
        uint256 bond = _bond(taskId);
        uint256 comp = market.compensation(_spec());
        _submit(taskId, bob, cheat); // group 0
        _submit(taskId, alice, honest); // group 1
        _submit(taskId, carol, honest);
        uint256 gameId = market.openDispute(taskId, bob, alice);

        // The defender (bob) never moves.
        _timeout(gameId);
        assertEq(uint8(game.outcome(gameId)), uint8(IDisputeGame.Outcome.ChallengerWins), "outcome");
        vm.expectEmit(true, true, false, true, address(market));
        emit ITaskMarket.DisputeSettled(taskId, gameId, IDisputeGame.Outcome.ChallengerWins);
        vm.expectEmit(true, true, false, true, address(market));
        emit ITaskMarket.BondSlashed(taskId, bob, bond);
        vm.expectEmit(true, true, false, true, address(market));
        emit ITaskMarket.TrainerEliminated(taskId, bob, 0, bond);
        vm.expectEmit(true, true, false, true, address(market));
        emit ITaskMarket.GroupEliminated(taskId, 0);
        vm.expectEmit(true, false, false, true, address(market));
        emit ITaskMarket.Credited(alice, comp);
        vm.expectEmit(true, true, true, true, address(market));
        emit ITaskMarket.CompensationPaid(taskId, gameId, alice, comp);
        market.settleDispute(gameId);

        ITaskMarket.GroupView memory lost = market.groupOf(taskId, 0);
        assertTrue(lost.eliminated, "eliminated");
        assertEq(lost.live, 0, "no live member");
        assertEq(lost.pool, bond - comp, "pool after compensation");
        assertEq(market.trainerOf(taskId, bob).pool, bond - comp, "bob's pool");
        assertEq(market.groupOf(taskId, 1).live, 2, "the winners' group untouched");
        assertTrue(market.disputeOf(gameId).settled, "settled");
        ITaskMarket.TaskView memory t = market.task(taskId);
        assertEq(t.liveGroups, 1, "one live group");
        assertEq(t.activeGames, 0, "no game");
        assertEq(market.creditOf(alice), comp, "compensation");
        assertEq(market.creditOf(carol), 0, "carol did not play");
        _assertFunds();

        // One live group and every slot submitted: finalize at once; the pool's rest is burnt.
        uint256 share = REWARD / 2;
        vm.expectEmit(true, false, false, true, address(market));
        emit ITaskMarket.Burnt(taskId, bond - comp);
        vm.expectEmit(true, false, false, true, address(market));
        emit ITaskMarket.TaskFinalized(taskId, 1, REWARD);
        market.finalize(taskId);
        assertEq(market.creditOf(alice), comp + bond + REWARD - share, "alice: compensation, bond, share");
        assertEq(market.creditOf(carol), bond + share, "carol: bond, share");
        assertEq(market.creditOf(bob), 0, "bob: nothing");
        assertEq(market.creditOf(client), 0, "client: nothing");
        assertEq(market.totalBurnt(), bond - comp, "burnt");
        assertEq(market.totalPools(), 0, "pools");
        assertEq(market.groupOf(taskId, 0).pool, 0, "pool emptied");
        _withdrawAll();
        assertEq(address(market).balance, bond - comp, "only the burnt rest stays");
    }

    /// @dev group 0 = {bob, carol}, both cheats; group 1 = {alice}, honest. Each cheat answers for
    ///      itself: alice must beat both (here in parallel), and is compensated for each game.
    function test_settleDispute_twoCheatsInGroup_eachBeaten_succeeds() public checkFunds {
        uint256 taskId = _postAndJoinAll();
        uint256 bond = _bond(taskId);
        uint256 comp = market.compensation(_spec());
        _submit(taskId, bob, cheat); // group 0
        _submit(taskId, alice, honest); // group 1
        _submit(taskId, carol, cheat); // group 0
        uint256 g1 = market.openDispute(taskId, bob, alice);
        uint256 g2 = market.openDispute(taskId, carol, alice);
        assertEq(market.task(taskId).activeGames, 2, "two games at once");
        _timeout(g1);
        _timeout(g2);

        market.settleDispute(g1);
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
        emit ITaskMarket.CompensationPaid(taskId, g2, alice, comp);
        market.settleDispute(g2);
        g0 = market.groupOf(taskId, 0);
        assertEq(g0.live, 0, "no live member");
        assertTrue(g0.eliminated, "group 0 eliminated");
        assertEq(g0.pool, 2 * (bond - comp), "both cheats' pools");
        assertEq(market.trainerOf(taskId, carol).pool, bond - comp, "carol's pool");
        assertEq(market.task(taskId).liveGroups, 1, "one live group");
        assertEq(market.creditOf(alice), 2 * comp, "compensated twice");

        vm.expectEmit(true, false, false, true, address(market));
        emit ITaskMarket.Burnt(taskId, 2 * (bond - comp));
        vm.expectEmit(true, false, false, true, address(market));
        emit ITaskMarket.TaskFinalized(taskId, 1, REWARD);
        market.finalize(taskId);
        assertEq(market.creditOf(alice), 2 * comp + bond + REWARD, "alice: compensations, bond, reward");
        assertEq(market.creditOf(bob), 0, "bob: nothing");
        assertEq(market.creditOf(carol), 0, "carol: nothing");
        assertEq(market.totalBurnt(), 2 * (bond - comp), "burnt");
    }

    /// @dev The same two cheats, but alice beats only bob: carol still stands for group 0, so two
    ///      groups are live at the deadline and the client is refunded; carol keeps her bond.
    function test_finalize_oneCheatUnbeaten_refundsClient_succeeds() public checkFunds {
        uint256 taskId = _postAndJoinAll();
        uint256 bond = _bond(taskId);
        uint256 comp = market.compensation(_spec());
        _submit(taskId, bob, cheat);
        _submit(taskId, alice, honest);
        _submit(taskId, carol, cheat);
        uint256 gameId = market.openDispute(taskId, bob, alice);
        _timeout(gameId);
        market.settleDispute(gameId);

        vm.warp(market.specOf(taskId).disputeDeadline + 1);
        vm.expectEmit(true, false, false, true, address(market));
        emit ITaskMarket.TaskFinalized(taskId, -1, REWARD);
        market.finalize(taskId);
        assertEq(market.creditOf(client), REWARD, "client refunded");
        assertEq(market.creditOf(alice), comp + bond, "alice: compensation, bond");
        assertEq(market.creditOf(carol), bond, "carol: bond back");
        assertEq(market.creditOf(bob), 0, "bob: nothing");
        assertEq(market.totalBurnt(), bond - comp, "bob's rest burnt");
    }

    /// @dev group 0 falls with bob, its only member; carol then submits the same root: group 0 is
    ///      live again and her bond stays hers (games judge trainers, not results).
    function test_submit_eliminatedGroup_revives_succeeds() public checkFunds {
        uint256 taskId = _postAndJoinAll();
        uint256 bond = _bond(taskId);
        uint256 comp = market.compensation(_spec());
        _submit(taskId, bob, cheat);
        _submit(taskId, alice, honest);
        uint256 gameId = market.openDispute(taskId, bob, alice);
        _timeout(gameId);
        market.settleDispute(gameId);
        assertTrue(market.groupOf(taskId, 0).eliminated, "group 0 eliminated");
        assertEq(market.task(taskId).liveGroups, 1, "one live group");

        vm.recordLogs();
        vm.expectEmit(true, true, false, true, address(market));
        emit ITaskMarket.ResultSubmitted(taskId, carol, 0, cheat.root, cheat.finalState());
        _submit(taskId, carol, cheat);
        Vm.Log[] memory logs = vm.getRecordedLogs();
        assertEq(_count(logs, ITaskMarket.ResultSubmitted.selector), 1, "submitted");
        assertEq(_count(logs, ITaskMarket.BondSlashed.selector), 0, "no slash on submit");
        ITaskMarket.GroupView memory g0 = market.groupOf(taskId, 0);
        assertEq(g0.members.length, 2, "members");
        assertEq(g0.live, 1, "carol is live");
        assertFalse(g0.eliminated, "group 0 revived");
        assertEq(g0.pool, bond - comp, "bob's pool only");
        ITaskMarket.TrainerView memory c = market.trainerOf(taskId, carol);
        assertFalse(c.eliminated, "carol not eliminated");
        assertEq(c.group, 0, "carol's group");
        assertEq(c.pool, 0, "carol's bond is no pool");
        assertEq(market.task(taskId).liveGroups, 2, "two live groups");
        assertEq(market.totalBonds(), 2 * bond, "alice's and carol's bonds locked");

        // Every slot submitted, but two live groups: the task waits for a game or the deadline.
        ITaskMarket.TaskSpec memory s = market.specOf(taskId);
        vm.expectRevert(
            abi.encodeWithSelector(
                TaskMarketFinalizeTooEarly.selector, taskId, block.timestamp, s.disputeDeadline, uint32(2)
            )
        );
        market.finalize(taskId);
        vm.warp(s.disputeDeadline + 1);
        market.finalize(taskId);
        assertEq(market.creditOf(client), REWARD, "client refunded");
        assertEq(market.creditOf(alice), comp + bond, "alice: compensation, bond");
        assertEq(market.creditOf(carol), bond, "carol: bond back");
        assertEq(market.totalBurnt(), bond - comp, "bob's rest burnt");
    }

    /// @dev A revived group falls again with its new member: eliminated twice, counted once live.
    function test_settleDispute_revivedGroupFallsAgain_succeeds() public checkFunds {
        uint256 taskId = _postAndJoinAll();
        uint256 bond = _bond(taskId);
        uint256 comp = market.compensation(_spec());
        _submit(taskId, bob, cheat);
        _submit(taskId, alice, honest);
        uint256 g1 = market.openDispute(taskId, bob, alice);
        _timeout(g1);
        market.settleDispute(g1);
        _submit(taskId, carol, cheat);

        uint256 g2 = market.openDispute(taskId, carol, alice);
        _timeout(g2);
        vm.expectEmit(true, true, false, true, address(market));
        emit ITaskMarket.TrainerEliminated(taskId, carol, 0, bond);
        vm.expectEmit(true, true, false, true, address(market));
        emit ITaskMarket.GroupEliminated(taskId, 0);
        market.settleDispute(g2);
        assertEq(market.task(taskId).liveGroups, 1, "one live group");
        assertTrue(market.groupOf(taskId, 0).eliminated, "group 0 eliminated again");

        vm.expectEmit(true, false, false, true, address(market));
        emit ITaskMarket.TaskFinalized(taskId, 1, REWARD);
        market.finalize(taskId);
        assertEq(market.creditOf(alice), 2 * comp + bond + REWARD, "alice: compensations, bond, reward");
        assertEq(market.totalBurnt(), 2 * (bond - comp), "burnt");
    }

    function test_settleDispute_parallelLosses_poolCoversBoth_succeeds() public checkFunds {
        uint256 taskId = _threeGroups(); // bob: group 0 (cheat), alice: 1 (honest), carol: 2 (other)
        uint256 bond = _bond(taskId);
        uint256 comp = market.compensation(_spec());
        uint256 g1 = market.openDispute(taskId, bob, alice);
        uint256 g2 = market.openDispute(taskId, bob, carol);
        _timeout(g1);
        _timeout(g2);
        market.settleDispute(g1);
        // bob is already out: his second loss slashes nothing more, it only spends his pool.
        vm.recordLogs();
        market.settleDispute(g2);
        Vm.Log[] memory logs = vm.getRecordedLogs();
        assertEq(_count(logs, ITaskMarket.BondSlashed.selector), 0, "slashed once");
        assertEq(_count(logs, ITaskMarket.TrainerEliminated.selector), 0, "eliminated once");
        assertEq(_count(logs, ITaskMarket.GroupEliminated.selector), 0, "group eliminated once");
        assertEq(_count(logs, ITaskMarket.CompensationPaid.selector), 1, "carol compensated");
        assertEq(market.creditOf(alice), comp, "alice compensated");
        assertEq(market.creditOf(carol), comp, "carol compensated");
        assertEq(market.trainerOf(taskId, bob).pool, bond - 2 * comp, "one bond covers both games");
        assertEq(market.groupOf(taskId, 0).pool, bond - 2 * comp, "the group's pool is bob's");
        assertEq(market.task(taskId).liveGroups, 2, "two live groups");
        assertEq(market.totalBonds(), 2 * bond, "alice's and carol's bonds locked");
    }

    /// @dev Four trainers: bob, alice and carol share the honest root (group 0), dave cheats (group 1).
    ///      bob, the group's first member, loses to dave; dave then loses to alice. The reward goes to
    ///      the live members alice and carol, the remainder of the split to alice, the first live one.
    function test_finalize_rewardToLiveMembers_remainderToFirstLive_succeeds() public checkFunds {
        ITaskMarket.TaskSpec memory s = _spec();
        s.slots = 4;
        s.bond = market.minBond(s);
        uint256 taskId = _post(s);
        uint256 bond = s.bond;
        uint256 comp = market.compensation(s);
        address dave = makeAddr("dave");
        vm.deal(dave, 100 ether);
        _join(taskId, alice);
        _join(taskId, bob);
        _join(taskId, carol);
        _join(taskId, dave);
        _submit(taskId, bob, honest); // group 0
        _submit(taskId, dave, cheat); // group 1
        _submit(taskId, alice, honest); // group 0
        _submit(taskId, carol, honest); // group 0

        uint256 g1 = market.openDispute(taskId, bob, dave);
        _timeout(g1); // bob never moves
        market.settleDispute(g1);
        uint256 g2 = market.openDispute(taskId, dave, alice);
        _timeout(g2); // nor does dave
        market.settleDispute(g2);
        assertEq(market.groupOf(taskId, 0).live, 2, "alice and carol");
        assertEq(market.task(taskId).liveGroups, 1, "one live group");

        uint256 share = REWARD / 2;
        uint256 remainder = REWARD - 2 * share;
        assertEq(remainder, 1, "odd reward");
        vm.expectEmit(true, false, false, true, address(market));
        emit ITaskMarket.Credited(alice, bond + share + remainder);
        vm.expectEmit(true, false, false, true, address(market));
        emit ITaskMarket.Credited(carol, bond + share);
        vm.expectEmit(true, false, false, true, address(market));
        emit ITaskMarket.Burnt(taskId, 2 * (bond - comp));
        vm.expectEmit(true, false, false, true, address(market));
        emit ITaskMarket.TaskFinalized(taskId, 0, REWARD);
        market.finalize(taskId);
        assertEq(market.creditOf(alice), comp + bond + share + remainder, "alice: first live member");
        assertEq(market.creditOf(carol), bond + share, "carol");
        assertEq(market.creditOf(bob), 0, "bob: eliminated, nothing");
        assertEq(market.creditOf(dave), comp, "dave: his g1 compensation only");
        assertEq(market.totalBurnt(), 2 * (bond - comp), "bob's and dave's rests");
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
        uint256 comp = market.compensation(market.specOf(taskId));
        assertEq(bond, comp + ORACLE_FEE, "two slots: the bond covers one game");
        vm.expectEmit(true, true, false, true, address(market));
        emit ITaskMarket.BondSlashed(taskId, bob, bond);
        vm.expectEmit(true, true, false, true, address(market));
        emit ITaskMarket.TrainerEliminated(taskId, bob, 0, bond);
        vm.expectEmit(true, true, false, true, address(market));
        emit ITaskMarket.GroupEliminated(taskId, 0);
        vm.expectEmit(true, true, true, true, address(market));
        emit ITaskMarket.CompensationPaid(taskId, gameId, alice, comp);
        vm.expectEmit(true, true, false, true, address(oracle));
        emit IRecomputeOracle.FeePaid(qid, address(market), ORACLE_FEE);
        vm.expectEmit(true, true, false, true, address(market));
        emit ITaskMarket.OracleFeePaid(taskId, gameId, qid, ORACLE_FEE);
        market.settleDispute(gameId);
        assertTrue(oracle.question(qid).feePaid, "fee paid");
        assertEq(oracle.creditOf(answeredBy), ORACLE_FEE, "the oracle is paid");
        assertEq(market.trainerOf(taskId, bob).pool, 0, "pool spent");
        assertEq(market.groupOf(taskId, 0).pool, 0, "group pool spent");
        assertEq(market.totalPools(), 0, "pools");

        market.finalize(taskId);
        assertEq(market.creditOf(alice), comp + bond + REWARD, "alice: compensation, bond, reward");
        assertEq(market.totalBurnt(), 0, "nothing left to burn");
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
        vm.warp(market.specOf(taskId).disputeDeadline + 1);
        market.finalize(taskId);
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
        vm.expectRevert(abi.encodeWithSelector(DisputeGameNotPlaying.selector, gameId, IDisputeGame.Stage.Oracle));
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
        market.settleDispute(gameId);
        vm.warp(market.specOf(taskId).disputeDeadline + 1);
        market.finalize(taskId);
        uint256 comp = market.compensation(market.specOf(taskId));
        assertEq(market.creditOf(alice), comp + _bond(taskId) + REWARD, "alice: compensation, bond, reward");
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

    /// @dev The market holds exactly what its totals account for.
    function _assertFunds() internal view {
        assertEq(
            address(market).balance,
            market.totalEscrow() + market.totalBonds() + market.totalPools() + market.totalCredits()
                + market.totalBurnt(),
            "balance == escrow + bonds + pools + credits + burnt"
        );
    }

    function _spec() internal view returns (ITaskMarket.TaskSpec memory s) {
        s = ITaskMarket.TaskSpec({
            programHash: keccak256("program"),
            graphRoot: keccak256("graph"),
            datasetRoot: keccak256("dataset"),
            initialStateRoot: INITIAL,
            seed: 42,
            datasetSize: 64,
            steps: STEPS,
            checkpointInterval: INTERVAL,
            batchSize: 4,
            nodeCount: 16,
            arity: 4,
            clock: CLOCK,
            slots: 3,
            bond: 0,
            gasPriceCap: 1 gwei,
            joinDeadline: uint64(block.timestamp + 1 days),
            submitDeadline: uint64(block.timestamp + 2 days),
            disputeDeadline: uint64(block.timestamp + 3 days)
        });
        s.bond = market.minBond(s);
    }

    function _cfg(ITaskMarket.TaskSpec memory s) internal pure returns (IDisputeGame.Config memory) {
        return IDisputeGame.Config({
            programHash: s.programHash,
            graphRoot: s.graphRoot,
            datasetRoot: s.datasetRoot,
            seed: s.seed,
            steps: s.steps,
            checkpointInterval: s.checkpointInterval,
            nodeCount: s.nodeCount,
            datasetSize: s.datasetSize,
            batchSize: s.batchSize,
            arity: s.arity,
            clock: s.clock
        });
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

    function _post(ITaskMarket.TaskSpec memory s) internal returns (uint256) {
        vm.prank(client);
        return market.postTask{value: REWARD}(s);
    }

    function _bond(uint256 taskId) internal view returns (uint256) {
        return market.specOf(taskId).bond;
    }

    function _join(uint256 taskId, address trainer) internal {
        uint256 bond = _bond(taskId);
        vm.prank(trainer);
        market.join{value: bond}(taskId);
    }

    function _postAndJoinAll() internal returns (uint256 taskId) {
        taskId = _post(_spec());
        _join(taskId, alice);
        _join(taskId, bob);
        _join(taskId, carol);
    }

    function _submit(uint256 taskId, address trainer, CheckpointLists.List storage list) internal {
        bytes32[] memory roots = list.stateRoots;
        vm.prank(trainer);
        market.submit(taskId, roots);
    }

    /// @dev bob (cheat) in group 0, alice (honest) in group 1; carol joined and never submits.
    function _twoGroups() internal returns (uint256 taskId) {
        taskId = _postAndJoinAll();
        _submit(taskId, bob, cheat);
        _submit(taskId, alice, honest);
    }

    /// @dev bob (cheat) in group 0, alice (honest) in group 1, carol (a third list) in group 2.
    function _threeGroups() internal returns (uint256 taskId) {
        taskId = _twoGroups();
        CheckpointLists.List memory other =
            CheckpointLists.build(CheckpointLists.states("other", INITIAL, STEPS / INTERVAL + 1), INTERVAL);
        vm.prank(carol);
        market.submit(taskId, other.stateRoots);
    }

    /// @dev Lets the clock of the side to move run out and ends the game against it.
    function _timeout(uint256 gameId) internal {
        IDisputeGame.GameView memory v = game.gameOf(gameId);
        uint256 deadline = uint256(v.turnStartedAt) + v.clockLeft[uint8(v.toMove)];
        if (block.timestamp <= deadline) vm.warp(deadline + 1);
        game.timeout(gameId);
    }

    /// @dev The defender's first move on `list` (5 checkpoints: depth 3, arity 4, so the first level
    ///      posts 4 nodes at height 1).
    function _firstDescent(CheckpointLists.List storage list) internal view returns (bytes32[] memory) {
        CheckpointLists.List memory l = list;
        return l.nodesAt(1, 0, 4);
    }

    /// @dev How many of `logs` the market emitted with event selector `topic0`.
    function _count(Vm.Log[] memory logs, bytes32 topic0) internal view returns (uint256 n) {
        for (uint256 i; i < logs.length; ++i) {
            if (logs[i].emitter == address(market) && logs[i].topics[0] == topic0) ++n;
        }
    }

    // ---- a one-step, one-node task whose game reaches the oracle

    /// @dev The node's descriptor: one state input, one output.
    function _descriptor() internal pure returns (bytes memory) {
        return abi.encodePacked(
            bytes4("DESC"),
            sha256("add"),
            sha256(""),
            uint256(1),
            uint256(1),
            uint256(1),
            keccak256("w"),
            uint256(0),
            keccak256("float32[4]")
        );
    }

    function _nodeRecord(bytes32 output) internal pure returns (bytes memory) {
        return abi.encodePacked(
            bytes4("NODE"), uint256(0), sha256(_descriptor()), uint256(1), INPUT, uint256(1), output
        );
    }

    /// @dev bob (group 0, defender) and alice (group 1, challenger) agree on the input of the only
    ///      node of the only step and differ on its output; the game is open.
    function _oneNodeDispute() internal returns (uint256 taskId, uint256 gameId) {
        ITaskMarket.TaskSpec memory s = _spec();
        s.steps = 1;
        s.checkpointInterval = 1;
        s.nodeCount = 1;
        s.arity = 2;
        s.slots = 2;
        s.graphRoot = Reference.listRoot(
            1, Reference.leaf(abi.encodePacked(bytes4("NDSC"), uint256(0), sha256(_descriptor())))
        );
        s.bond = market.minBond(s);
        taskId = _post(s);
        _join(taskId, alice);
        _join(taskId, bob);
        _storeOneStep(cheat, POST_CHEAT);
        _storeOneStep(honest, POST_HONEST);
        _submit(taskId, bob, cheat);
        _submit(taskId, alice, honest);
        gameId = market.openDispute(taskId, bob, alice);
    }

    function _storeOneStep(CheckpointLists.List storage to, bytes32 post) internal {
        bytes32[] memory roots = new bytes32[](2);
        roots[0] = INITIAL;
        roots[1] = post;
        _store(to, CheckpointLists.build(roots, 1));
    }

    /// @dev Both sides play honestly by their own lists until the node is revealed and the oracle asked.
    function _playToOracle(uint256 gameId) internal returns (uint256 questionId) {
        bytes32[] memory none = new bytes32[](0);
        bytes32[] memory bobNodes = cheat.leaves;
        bytes32[] memory aliceNodes = honest.leaves;
        vm.prank(bob);
        game.descend(gameId, bobNodes, none);
        vm.prank(alice);
        game.descend(gameId, aliceNodes, bobNodes);

        bytes32[] memory bobRoots = cheat.stateRoots;
        bytes32[] memory aliceRoots = honest.stateRoots;
        bytes32[] memory loProof = cheat.opening(0);
        vm.prank(bob);
        game.bisect(gameId, bobRoots, none, loProof);
        vm.prank(alice);
        game.bisect(gameId, aliceRoots, bobRoots, none);

        _traceAndReveal(gameId, _nodeRecord(OUT_CHEAT), _nodeRecord(OUT_HONEST));
        IDisputeGame.GameView memory v = game.gameOf(gameId);
        assertEq(uint8(v.stage), uint8(IDisputeGame.Stage.Oracle), "oracle asked");
        return v.questionId;
    }

    /// @dev The trace descent (one node: its leaf is the trace top) and the reveal of both records.
    function _traceAndReveal(uint256 gameId, bytes memory bobRecord, bytes memory aliceRecord) internal {
        bytes32[] memory none = new bytes32[](0);
        bytes32[] memory bobTrace = new bytes32[](1);
        bobTrace[0] = Reference.leaf(bobRecord);
        bytes32[] memory aliceTrace = new bytes32[](1);
        aliceTrace[0] = Reference.leaf(aliceRecord);
        vm.prank(bob);
        game.descend(gameId, bobTrace, none);
        vm.prank(alice);
        game.descend(gameId, aliceTrace, bobTrace);

        bytes memory descriptor = _descriptor(); // before the pranks: sha256 is a call
        vm.prank(bob);
        game.revealNode(gameId, bobRecord, "", descriptor, none);
        vm.prank(alice);
        game.revealNode(gameId, aliceRecord, bobRecord, descriptor, none);
    }

    /// @dev Registers the five oracles a whole escalation needs (answer, challenge, committee of 3);
    ///      returns the first.
    function _registerOracle() internal returns (address oracle1) {
        oracle1 = OracleSetup.registerMany(oracle, "oracle", 5)[0];
    }

    /// @dev The drawn oracle (`answeredBy`) answers `output`; the answer is final once the challenge
    ///      window passed.
    function _answer(uint256 questionId, address, bytes32 output) internal {
        bytes32[] memory outputs = new bytes32[](1);
        outputs[0] = output;
        OracleSetup.answerNow(oracle, questionId, outputs);
        answeredBy = oracle.question(questionId).oracle;
        vm.warp(block.timestamp + oracle.params().challengeWindow + 1);
        oracle.settle(questionId);
    }

    function _withdrawAll() internal {
        address[4] memory accounts = [client, alice, bob, carol];
        for (uint256 i; i < accounts.length; ++i) {
            if (market.creditOf(accounts[i]) == 0) continue;
            vm.prank(accounts[i]);
            market.withdraw();
        }
    }

    function _store(CheckpointLists.List storage to, CheckpointLists.List memory from) internal {
        to.interval = from.interval;
        to.stateRoots = from.stateRoots;
        to.leaves = from.leaves;
        to.root = from.root;
        delete to.levels;
        for (uint256 k; k < from.levels.length; ++k) {
            to.levels.push(from.levels[k]);
        }
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

