// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {OracleSetup} from "./utils/OracleSetup.sol";
import {Test, Vm, console} from "forge-std/Test.sol";

import {DisputeGame} from "../src/DisputeGame.sol";
import {RecomputeOracle} from "../src/RecomputeOracle.sol";
import {TaskMarket} from "../src/TaskMarket.sol";
import {IDisputeGame} from "../src/interfaces/IDisputeGame.sol";
import {ITaskMarket} from "../src/interfaces/ITaskMarket.sol";
import {CheckpointLists} from "./utils/CheckpointLists.sol";

/// @notice Gas of the market's calls at the bounds `postTask` enforces (docs/game.md, "Market
///         bounds"): `commit`, `submit` (the reveal) of a short list and of `MAX_CHECKPOINTS + 1` roots,
///         `enter`, `openDispute` and what its opener is repaid, `finalize` of a task with `MAX_SLOTS`
///         trainers and 40 outside challengers, and each `claim`.
/// @dev Each test runs isolated (inline config `isolate = true`): every call is its own transaction,
///      so storage starts cold and `vm.lastCallGas().gasTotalUsed` is the transaction's gas, 21,000
///      and calldata included. The figures go to the console and to the snapshot group `TaskMarketGas`.
contract TaskMarketGasTest is Test {
    using CheckpointLists for CheckpointLists.List;

    /// @notice The per-transaction gas cap of EIP-7825.
    uint256 internal constant TX_GAS_CAP = 16_777_216;
    /// @notice What `finalize` may take whatever the number of entrants (it loops over nothing).
    uint256 internal constant FINALIZE_LIMIT = 200_000;
    /// @notice What one `claim` may take.
    uint256 internal constant CLAIM_LIMIT = 100_000;
    /// @notice What `submit` at `MAX_CHECKPOINTS` may take: a third of the cap.
    uint256 internal constant SUBMIT_LIMIT = TX_GAS_CAP / 3;
    /// @notice Outside challengers beside the `MAX_SLOTS` trainers in the finalize test.
    uint256 internal constant CHALLENGERS = 40;
    uint256 internal constant GAS_PRICE = 0.5 gwei;
    uint64 internal constant STEPS = 8;
    uint64 internal constant INTERVAL = 2;
    bytes32 internal constant INITIAL = keccak256("initial state");

    RecomputeOracle internal oracle;
    DisputeGame internal game;
    TaskMarket internal market;
    address internal client = makeAddr("client");

    function setUp() public {
        vm.warp(1_700_000_000);
        vm.txGasPrice(GAS_PRICE);
        oracle = OracleSetup.deploy(
            OracleSetup.params(0.01 ether, 1 ether, 0.5 ether, 0.1 ether, 1 hours, 1 days, 3, 3)
        );
        game = new DisputeGame(oracle);
        market = new TaskMarket(game, oracle);
        oracle.bindGame(address(game));
        game.bindMarket(address(market));
        vm.deal(client, 100 ether);
    }

    // ---------------------------------------------------------------- commit, reveal, enter

    /// @notice A trainer's `commit`, and the reveal (`submit`) of a short list (5 roots): the first,
    ///         which creates its group, and one that joins it.
    /// forge-config: default.isolate = true
    function test_commitAndReveal_smallList_succeeds() public {
        ITaskMarket.TaskSpec memory s = _spec(3);
        vm.prank(client);
        uint256 taskId = market.postTask{value: 1 ether}(s);
        address a = _trainer(0);
        address b = _trainer(1);
        bytes32[] memory roots = _list("same").stateRoots;
        _joinTrainer(taskId, a, s.bond);
        _joinTrainer(taskId, b, s.bond);
        vm.prank(a);
        market.commit(taskId, _commitment(taskId, a, roots));
        uint256 commitGas = vm.lastCallGas().gasTotalUsed;
        vm.prank(b);
        market.commit(taskId, _commitment(taskId, b, roots));
        _toReveals(s);
        vm.prank(a);
        market.submit(taskId, roots, _salt(a));
        uint256 revealNew = vm.lastCallGas().gasTotalUsed;
        vm.prank(b);
        market.submit(taskId, roots, _salt(b));
        uint256 revealJoin = vm.lastCallGas().gasTotalUsed;
        assertEq(market.groupOf(taskId, 0).members.length, 2, "both in the group");
        console.log("commit", commitGas);
        console.log("reveal of 5 roots: new group", revealNew, "joining one", revealJoin);
        vm.snapshotValue("TaskMarketGas", "commit", commitGas);
        vm.snapshotValue("TaskMarketGas", "reveal_5roots_newGroup", revealNew);
        vm.snapshotValue("TaskMarketGas", "reveal_5roots_joinGroup", revealJoin);
    }

    /// @notice An outside challenger's `enter` (bond and commitment) on a full task.
    /// forge-config: default.isolate = true
    function test_enter_succeeds() public {
        ITaskMarket.TaskSpec memory s = _spec(1);
        vm.prank(client);
        uint256 taskId = market.postTask{value: 1 ether}(s);
        _joinTrainer(taskId, _trainer(0), s.bond);
        address outsider = _trainer(1);
        vm.deal(outsider, s.bond);
        bytes32 c = _commitment(taskId, outsider, _list("outsider").stateRoots);
        vm.prank(outsider);
        market.enter{value: s.bond}(taskId, c);
        uint256 gas = vm.lastCallGas().gasTotalUsed;
        assertTrue(market.trainerOf(taskId, outsider).challenger, "entered");
        console.log("enter", gas);
        vm.snapshotValue("TaskMarketGas", "enter", gas);
    }

    /// @notice Finding 4 (issue 12): `submit` carries the whole checkpoint list and the market builds its
    ///         root. At `MAX_CHECKPOINTS` (T = 4096, c = 1: 4,097 state roots, 131 KB of calldata) the
    ///         first reveal, which also creates its group, stays under a third of the cap.
    /// forge-config: default.isolate = true
    function test_submit_maxCheckpoints_succeeds() public {
        uint256 k = market.MAX_CHECKPOINTS();
        ITaskMarket.TaskSpec memory s = _spec(2);
        s.steps = uint64(k);
        s.checkpointInterval = 1;
        s.bond = market.minBond(s);
        vm.prank(client);
        uint256 taskId = market.postTask{value: 1 ether}(s);
        address trainer = makeAddr("trainer");
        _joinTrainer(taskId, trainer, s.bond);
        bytes32[] memory roots = CheckpointLists.states("max", INITIAL, k + 1);
        vm.prank(trainer);
        market.commit(taskId, _commitment(taskId, trainer, roots));
        _toReveals(s);
        bytes memory cd = abi.encodeCall(ITaskMarket.submit, (taskId, roots, _salt(trainer)));
        vm.prank(trainer);
        (bool ok,) = address(market).call(cd);
        assertTrue(ok, "submit");
        uint256 gas = vm.lastCallGas().gasTotalUsed;
        (uint256 standard, uint256 floor) = _calldataGas(cd);
        assertGe(gas, 21_000 + floor, "isolated: the EIP-7623 floor is included");
        assertEq(market.groupOf(taskId, 0).finalStateRoot, roots[k], "submitted");
        console.log("submit: checkpoints", k, "calldata bytes", cd.length);
        console.log("  gas", gas, "21000 + floor", 21_000 + floor);
        console.log("  21000 + standard calldata", 21_000 + standard);
        assertLe(gas, SUBMIT_LIMIT, "submit at MAX_CHECKPOINTS <= 1/3 of the tx cap");
        vm.snapshotValue("TaskMarketGas", "submit_maxCheckpoints", gas);
    }

    // ---------------------------------------------------------------- openDispute

    /// @notice The whole gas of an `openDispute` transaction (isolated: an opening's real cost).
    /// forge-config: default.isolate = true
    function test_openDispute_succeeds() public {
        (uint256 taskId, address liar, address honest) = _twoGroups();
        vm.prank(makeAddr("watcher"));
        market.openDispute(taskId, liar, honest);
        uint256 txGas = vm.lastCallGas().gasTotalUsed;
        console.log("openDispute: transaction gas", txGas);
        vm.snapshotValue("TaskMarketGas", "openDispute", txGas);
    }

    /// @notice Finding 3 (issue 12): the opener of a game is repaid from the loser's pool the gas it
    ///         measured (`OpenerRepaid`), at `min(gas price, cap)`. Not isolated (an isolated call pays
    ///         no gas price here), so the market's and the game's storage is cooled first, as in a
    ///         transaction of its own; compare `openDispute` above.
    function test_openDispute_openerRepaid_succeeds() public {
        (uint256 taskId, address liar, address honest) = _twoGroups();
        address watcher = makeAddr("watcher");
        vm.cool(address(market));
        vm.cool(address(game));
        vm.prank(watcher);
        uint256 gameId = market.openDispute(taskId, liar, honest);
        IDisputeGame.GameView memory v = game.gameOf(gameId);
        vm.warp(uint256(v.turnStartedAt) + v.clockLeft[0] + 1);
        vm.prank(honest);
        game.timeout(gameId);
        vm.recordLogs();
        market.settleDispute(gameId);
        uint256 repaid = _openerRepaid(vm.getRecordedLogs());
        assertEq(market.creditOf(watcher), repaid, "the watcher's credit");
        assertEq(repaid % GAS_PRICE, 0, "gas at the price paid (below the cap)");
        uint256 repaidGas = repaid / GAS_PRICE;
        assertLe(repaidGas, market.OPEN_GAS_BOUND(), "within OPEN_GAS_BOUND");
        console.log("openDispute: repaid gas", repaidGas);
        vm.snapshotValue("TaskMarketGas", "openDispute_repaidGas", repaidGas);
    }

    // ---------------------------------------------------------------- finalize and claim

    /// @notice Finding 7 (issue 12): `finalize` looped over every trainer. It loops over nothing now:
    ///         with `MAX_SLOTS` trainers and 40 outside challengers (30 revealed, 10 never), all
    ///         revealing one result, it stays under 200k gas, and each live entrant's `claim` under
    ///         100k.
    /// forge-config: default.isolate = true
    function test_attack_finalizeLoop_maxSlotsAnd40Challengers_succeeds() public {
        (uint256 gas, uint256 claimMax) = _finalizeFull("finalize_maxSlots_40challengers", false, CHALLENGERS);
        assertLe(gas, FINALIZE_LIMIT, "finalize under 200k");
        assertLe(claimMax, CLAIM_LIMIT, "claim under 100k");
    }

    /// @notice At `MAX_SLOTS` trainers each in its own group (no winner: the client takes the reward
    ///         back, every trainer claims its bond).
    /// forge-config: default.isolate = true
    function test_finalize_maxSlotsEachOwnGroup_succeeds() public {
        (uint256 gas, uint256 claimMax) = _finalizeFull("finalize_maxSlots_ownGroups", true, 0);
        assertLe(gas, FINALIZE_LIMIT, "finalize under 200k");
        assertLe(claimMax, CLAIM_LIMIT, "claim under 100k");
    }

    /// @notice At `MAX_SLOTS` trainers that all agree: every one claims a share.
    /// forge-config: default.isolate = true
    function test_finalize_maxSlotsOneGroup_succeeds() public {
        (uint256 gas, uint256 claimMax) = _finalizeFull("finalize_maxSlots_oneGroup", false, 0);
        assertLe(gas, FINALIZE_LIMIT, "finalize under 200k");
        assertLe(claimMax, CLAIM_LIMIT, "claim under 100k");
    }

    // ---------------------------------------------------------------- helpers

    /// @dev Posts a task of `MAX_SLOTS` slots, fills them (each trainer with its own list when
    ///      `ownGroups`, else all the same) and adds `challengers` outside challengers on the common
    ///      list (the last quarter never reveals); finalizes after the dispute deadline and claims for
    ///      every live entrant. Returns finalize's gas and the largest claim's.
    function _finalizeFull(string memory name, bool ownGroups, uint256 challengers)
        internal
        returns (uint256 gas, uint256 claimMax)
    {
        uint32 slots = market.MAX_SLOTS();
        ITaskMarket.TaskSpec memory s = _spec(slots);
        vm.prank(client);
        uint256 taskId = market.postTask{value: 10 ether}(s);
        uint256 n = slots + challengers;
        uint256 revealing = slots + challengers - challengers / 4;
        bytes32[] memory same = _list("same").stateRoots;
        for (uint256 i; i < n; ++i) {
            address who = _trainer(i);
            bytes32[] memory roots = ownGroups && i < slots ? _list(vm.toString(i)).stateRoots : same;
            if (i < slots) {
                _joinTrainer(taskId, who, s.bond);
                vm.prank(who);
                market.commit(taskId, _commitment(taskId, who, roots));
            } else {
                vm.deal(who, s.bond);
                vm.prank(who);
                market.enter{value: s.bond}(taskId, _commitment(taskId, who, roots));
            }
        }
        _toReveals(s);
        for (uint256 i; i < revealing; ++i) {
            address who = _trainer(i);
            bytes32[] memory roots = ownGroups && i < slots ? _list(vm.toString(i)).stateRoots : same;
            vm.prank(who);
            market.submit(taskId, roots, _salt(who));
        }
        assertEq(market.task(taskId).groupCount, ownGroups ? slots : 1, "groups");
        assertEq(market.task(taskId).entrants, n, "entrants");
        vm.warp(s.disputeDeadline + 1);
        market.finalize(taskId);
        gas = vm.lastCallGas().gasTotalUsed;
        assertGe(gas, 21_000, "isolated: the transaction's gas");
        assertEq(uint8(market.task(taskId).status), uint8(ITaskMarket.TaskStatus.Finalized), "finalized");
        for (uint256 i; i < revealing; ++i) {
            market.claim(taskId, _trainer(i));
            uint256 c = vm.lastCallGas().gasTotalUsed;
            if (c > claimMax) claimMax = c;
        }
        assertEq(market.totalBonds(), 0, "every bond claimed or forfeited");
        assertEq(market.totalEscrow(), 0, "every share claimed");
        console.log(name, "entrants", n);
        console.log("  finalize gas", gas, "largest claim", claimMax);
        vm.snapshotValue("TaskMarketGas", name, gas);
        vm.snapshotValue("TaskMarketGas", string.concat(name, "_claimMax"), claimMax);
    }

    /// @dev A two-slot task with a liar (group 0) and an honest trainer (group 1), both revealed.
    function _twoGroups() internal returns (uint256 taskId, address liar, address honest) {
        ITaskMarket.TaskSpec memory s = _spec(2);
        vm.prank(client);
        taskId = market.postTask{value: 1 ether}(s);
        liar = _trainer(0);
        honest = _trainer(1);
        _joinTrainer(taskId, liar, s.bond);
        _joinTrainer(taskId, honest, s.bond);
        bytes32[] memory lie = _list("lie").stateRoots;
        bytes32[] memory truth = _list("truth").stateRoots;
        vm.prank(liar);
        market.commit(taskId, _commitment(taskId, liar, lie));
        vm.prank(honest);
        market.commit(taskId, _commitment(taskId, honest, truth));
        _toReveals(s);
        vm.prank(liar);
        market.submit(taskId, lie, _salt(liar));
        vm.prank(honest);
        market.submit(taskId, truth, _salt(honest));
    }

    function _trainer(uint256 i) internal pure returns (address) {
        return address(uint160(0x10000 + i));
    }

    function _joinTrainer(uint256 taskId, address who, uint256 bond) internal {
        vm.deal(who, bond);
        vm.prank(who);
        market.join{value: bond}(taskId);
    }

    function _salt(address who) internal pure returns (bytes32) {
        return keccak256(abi.encode("salt", who));
    }

    function _commitment(uint256 taskId, address who, bytes32[] memory roots)
        internal
        pure
        returns (bytes32)
    {
        return keccak256(abi.encode(taskId, who, keccak256(abi.encodePacked(roots)), _salt(who)));
    }

    /// @dev Past the submit deadline, a block after the commits.
    function _toReveals(ITaskMarket.TaskSpec memory s) internal {
        vm.warp(uint256(s.submitDeadline) + 1);
        vm.roll(block.number + 1);
    }

    function _openerRepaid(Vm.Log[] memory logs) internal view returns (uint256) {
        for (uint256 i; i < logs.length; ++i) {
            if (logs[i].emitter == address(market) && logs[i].topics[0] == ITaskMarket.OpenerRepaid.selector)
            {
                return abi.decode(logs[i].data, (uint256));
            }
        }
        revert("no OpenerRepaid");
    }

    /// @notice Calldata gas: 4 per zero byte, 16 per other byte; and the EIP-7623 floor, 10 per
    ///         token (a zero byte is one token, another byte four).
    function _calldataGas(bytes memory cd) internal pure returns (uint256 standard, uint256 floor) {
        uint256 zeros;
        for (uint256 i; i < cd.length; ++i) {
            if (cd[i] == 0) ++zeros;
        }
        uint256 others = cd.length - zeros;
        standard = 4 * zeros + 16 * others;
        floor = 10 * (zeros + 4 * others);
    }

    function _list(string memory label) internal pure returns (CheckpointLists.List memory) {
        return CheckpointLists.build(CheckpointLists.states(label, INITIAL, STEPS / INTERVAL + 1), INTERVAL);
    }

    function _spec(uint32 slots) internal view returns (ITaskMarket.TaskSpec memory s) {
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
            clock: 1 hours,
            slots: slots,
            bond: 0,
            gasPriceCap: 1 gwei,
            joinDeadline: uint64(block.timestamp + 1 days),
            submitDeadline: uint64(block.timestamp + 2 days),
            disputeDeadline: uint64(block.timestamp + 3 days)
        });
        s.bond = market.minBond(s);
    }
}
