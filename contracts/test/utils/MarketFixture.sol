// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {Test, Vm} from "forge-std/Test.sol";

import {DisputeGame} from "../../src/DisputeGame.sol";
import {RecomputeOracle} from "../../src/RecomputeOracle.sol";
import {TaskMarket} from "../../src/TaskMarket.sol";
import {IDisputeGame} from "../../src/interfaces/IDisputeGame.sol";
import {ITaskMarket} from "../../src/interfaces/ITaskMarket.sol";
import {CheckpointLists} from "./CheckpointLists.sol";
import {OracleSetup} from "./OracleSetup.sol";
import {Reference} from "./Reference.sol";

/// @title MarketFixture
/// @notice A market, its game and oracle, three trainers and a watcher, two checkpoint lists (honest and
///         cheat), and the steps of a task's life as helpers: post, join, commit, reveal (`submit`),
///         enter, open, time out, settle, finalize and claim.
/// @dev Every transaction pays `GAS_PRICE`, half the tasks' `gasPriceCap`, so the games' meters and
///      `openDispute`'s measurement count wei: a winner is repaid what it spent, an opener its gas.
abstract contract MarketFixture is Test {
    using CheckpointLists for CheckpointLists.List;

    uint256 internal constant REWARD = 10 ether + 1; // odd, so that a split leaves a remainder
    uint256 internal constant ORACLE_FEE = 0.01 ether;
    uint256 internal constant GAS_PRICE = 0.5 gwei;
    uint256 internal constant GAS_PRICE_CAP = 1 gwei;
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
    /// @notice Opens the games of most tests (a third party: its gas is repaid from the loser's pool).
    address internal watcher = makeAddr("watcher");

    address internal answeredBy;
    CheckpointLists.List internal honest;
    CheckpointLists.List internal cheat;

    modifier checkFunds() {
        _;
        _assertFunds();
    }

    function setUp() public virtual {
        vm.warp(1_700_000_000);
        vm.txGasPrice(GAS_PRICE);
        oracle = OracleSetup.deploy(
            OracleSetup.params(ORACLE_FEE, 1 ether, 0.5 ether, 0.1 ether, 1 hours, 1 days, 3, 3)
        );
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

    // ---- funds -----------------------------------------------------------------------------------

    /// @dev The market holds exactly what its totals account for.
    function _assertFunds() internal view {
        assertEq(
            address(market).balance,
            market.totalEscrow() + market.totalBonds() + market.totalPools() + market.totalCredits()
                + market.totalBurnt(),
            "balance == escrow + bonds + pools + credits + burnt"
        );
    }

    function _withdrawAll() internal {
        address[5] memory accounts = [client, alice, bob, carol, watcher];
        for (uint256 i; i < accounts.length; ++i) {
            if (market.creditOf(accounts[i]) == 0) continue;
            vm.prank(accounts[i]);
            market.withdraw();
        }
    }

    // ---- tasks -----------------------------------------------------------------------------------

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
            gasPriceCap: GAS_PRICE_CAP,
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

    // ---- commit and reveal -----------------------------------------------------------------------

    /// @dev The salt `trainer` commits with.
    function _salt(address trainer) internal pure returns (bytes32) {
        return keccak256(abi.encode("salt", trainer));
    }

    /// @dev The commitment to `roots` that `trainer` reveals with `salt` (ITaskMarket.commit).
    function _commitment(uint256 taskId, address trainer, bytes32[] memory roots, bytes32 salt)
        internal
        pure
        returns (bytes32)
    {
        return keccak256(abi.encode(taskId, trainer, keccak256(abi.encodePacked(roots)), salt));
    }

    /// @dev `trainer` (on a slot) commits to `roots` with its salt.
    function _commitRoots(uint256 taskId, address trainer, bytes32[] memory roots) internal {
        bytes32 commitment = _commitment(taskId, trainer, roots, _salt(trainer));
        vm.prank(trainer);
        market.commit(taskId, commitment);
    }

    function _commit(uint256 taskId, address trainer, CheckpointLists.List storage list) internal {
        _commitRoots(taskId, trainer, list.stateRoots);
    }

    /// @dev Past the submit deadline, in a block after every commit so far: reveals are open.
    function _toReveals(uint256 taskId) internal {
        uint64 deadline = market.specOf(taskId).submitDeadline;
        if (block.timestamp <= deadline) vm.warp(uint256(deadline) + 1);
        vm.roll(block.number + 1);
    }

    /// @dev `trainer` reveals `roots` with its salt (no warp, no roll).
    function _revealRoots(uint256 taskId, address trainer, bytes32[] memory roots) internal {
        bytes32 salt = _salt(trainer);
        vm.prank(trainer);
        market.submit(taskId, roots, salt);
    }

    function _reveal(uint256 taskId, address trainer, CheckpointLists.List storage list) internal {
        _revealRoots(taskId, trainer, list.stateRoots);
    }

    /// @dev Commits (unless `trainer` did) and reveals `roots`: moves past the submit deadline and one
    ///      block on first. Trainers that reveal after this one must have committed before it.
    function _submitRoots(uint256 taskId, address trainer, bytes32[] memory roots) internal {
        if (!market.trainerOf(taskId, trainer).committed) _commitRoots(taskId, trainer, roots);
        _toReveals(taskId);
        _revealRoots(taskId, trainer, roots);
    }

    function _submit(uint256 taskId, address trainer, CheckpointLists.List storage list) internal {
        _submitRoots(taskId, trainer, list.stateRoots);
    }

    /// @dev `who` enters as an outside challenger committed to `roots` (dealt the bond).
    function _enterRoots(uint256 taskId, address who, bytes32[] memory roots) internal {
        uint256 bond = _bond(taskId);
        vm.deal(who, who.balance + bond);
        bytes32 commitment = _commitment(taskId, who, roots, _salt(who));
        vm.prank(who);
        market.enter{value: bond}(taskId, commitment);
    }

    /// @dev bob (cheat) in group 0, alice (honest) in group 1; carol joined and never commits.
    function _twoGroups() internal returns (uint256 taskId) {
        taskId = _postAndJoinAll();
        _commit(taskId, bob, cheat);
        _commit(taskId, alice, honest);
        _submit(taskId, bob, cheat);
        _submit(taskId, alice, honest);
    }

    /// @dev bob (cheat) in group 0, alice (honest) in group 1, carol (a third list) in group 2.
    function _threeGroups() internal returns (uint256 taskId) {
        taskId = _postAndJoinAll();
        bytes32[] memory other = _otherList().stateRoots;
        _commit(taskId, bob, cheat);
        _commit(taskId, alice, honest);
        _commitRoots(taskId, carol, other);
        _submit(taskId, bob, cheat);
        _submit(taskId, alice, honest);
        _submitRoots(taskId, carol, other);
    }

    function _otherList() internal pure returns (CheckpointLists.List memory) {
        return CheckpointLists.build(CheckpointLists.states("other", INITIAL, STEPS / INTERVAL + 1), INTERVAL);
    }

    // ---- games -----------------------------------------------------------------------------------

    /// @dev The watcher opens the game.
    function _open(uint256 taskId, address defender, address challenger) internal returns (uint256) {
        vm.prank(watcher);
        return market.openDispute(taskId, defender, challenger);
    }

    /// @dev Lets the clock of the side to move run out; the other side (the winner) ends the game.
    function _timeout(uint256 gameId) internal {
        IDisputeGame.GameView memory v = game.gameOf(gameId);
        uint256 deadline = uint256(v.turnStartedAt) + v.clockLeft[uint8(v.toMove)];
        if (block.timestamp <= deadline) vm.warp(deadline + 1);
        vm.prank(v.players[1 - uint8(v.toMove)]);
        game.timeout(gameId);
    }

    /// @dev What the winner of game `gameId` (side `side`) is repaid: its metered gas at
    ///      `min(price paid, cap)`, at most `compensation(spec)` (ITaskMarket.settleDispute).
    function _owed(uint256 taskId, uint256 gameId, uint256 side) internal view returns (uint256) {
        (uint256[2] memory gas, uint256[2] memory spent) = game.meterOf(gameId);
        ITaskMarket.TaskSpec memory s = market.specOf(taskId);
        uint256 atCap = gas[side] * s.gasPriceCap;
        uint256 owed = spent[side] < atCap ? spent[side] : atCap;
        uint256 comp = market.compensation(s);
        return owed < comp ? owed : comp;
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

    // ---- finalize and claim ----------------------------------------------------------------------

    /// @dev Past the dispute deadline, finalizes.
    function _finalize(uint256 taskId) internal {
        uint64 deadline = market.specOf(taskId).disputeDeadline;
        if (block.timestamp <= deadline) vm.warp(uint256(deadline) + 1);
        market.finalize(taskId);
    }

    /// @dev Claims for every entrant that can: revealed and not eliminated.
    function _claimAll(uint256 taskId) internal {
        address[] memory entrants = market.trainersOf(taskId);
        for (uint256 i; i < entrants.length; ++i) {
            ITaskMarket.TrainerView memory tr = market.trainerOf(taskId, entrants[i]);
            if (tr.submitted && !tr.eliminated && !tr.claimed) market.claim(taskId, entrants[i]);
        }
    }

    function _finalizeAndClaim(uint256 taskId) internal {
        _finalize(taskId);
        _claimAll(taskId);
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

    /// @dev The one-step, one-node spec (two slots, arity 2).
    function _oneNodeSpec() internal view returns (ITaskMarket.TaskSpec memory s) {
        s = _spec();
        s.steps = 1;
        s.checkpointInterval = 1;
        s.nodeCount = 1;
        s.arity = 2;
        s.slots = 2;
        s.graphRoot = Reference.listRoot(
            1, Reference.leaf(abi.encodePacked(bytes4("NDSC"), uint256(0), sha256(_descriptor())))
        );
        s.bond = market.minBond(s);
    }

    /// @dev bob (group 0, defender) and alice (group 1, challenger) agree on the input of the only
    ///      node of the only step and differ on its output; the watcher opened the game.
    function _oneNodeDispute() internal returns (uint256 taskId, uint256 gameId) {
        return _oneNodeDispute(_oneNodeSpec());
    }

    function _oneNodeDispute(ITaskMarket.TaskSpec memory s)
        internal
        returns (uint256 taskId, uint256 gameId)
    {
        taskId = _post(s);
        _join(taskId, alice);
        _join(taskId, bob);
        _storeOneStep(cheat, POST_CHEAT);
        _storeOneStep(honest, POST_HONEST);
        _commit(taskId, bob, cheat);
        _commit(taskId, alice, honest);
        _submit(taskId, bob, cheat);
        _submit(taskId, alice, honest);
        gameId = _open(taskId, bob, alice);
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
