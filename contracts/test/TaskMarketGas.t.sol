// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {OracleSetup} from "./utils/OracleSetup.sol";
import {Test, console} from "forge-std/Test.sol";

import {DisputeGame} from "../src/DisputeGame.sol";
import {RecomputeOracle} from "../src/RecomputeOracle.sol";
import {TaskMarket} from "../src/TaskMarket.sol";
import {ITaskMarket} from "../src/interfaces/ITaskMarket.sol";
import {CheckpointLists} from "./utils/CheckpointLists.sol";

/// @notice Gas of the market's loops at the bounds `postTask` enforces (docs/game.md, "Market
///         bounds"): `submit` of a list of `MAX_CHECKPOINTS + 1` roots, `finalize` of a task with
///         `MAX_SLOTS` trainers.
/// @dev Each test runs isolated (inline config `isolate = true`): every call is its own transaction,
///      so storage starts cold and `vm.lastCallGas().gasTotalUsed` is the transaction's gas, 21,000
///      and calldata included. The figures go to the console and to the snapshot group `TaskMarketGas`.
contract TaskMarketGasTest is Test {
    using CheckpointLists for CheckpointLists.List;

    /// @notice The per-transaction gas cap of EIP-7825.
    uint256 internal constant TX_GAS_CAP = 16_777_216;
    /// @notice What `finalize` at `MAX_SLOTS` may take: a quarter of the cap.
    uint256 internal constant FINALIZE_LIMIT = TX_GAS_CAP / 4;
    /// @notice What `submit` at `MAX_CHECKPOINTS` may take: a third of the cap.
    uint256 internal constant SUBMIT_LIMIT = TX_GAS_CAP / 3;
    uint64 internal constant STEPS = 8;
    uint64 internal constant INTERVAL = 2;
    bytes32 internal constant INITIAL = keccak256("initial state");

    RecomputeOracle internal oracle;
    DisputeGame internal game;
    TaskMarket internal market;
    address internal client = makeAddr("client");

    function setUp() public {
        vm.warp(1_700_000_000);
        oracle = OracleSetup.deploy(OracleSetup.params(0.01 ether, 1 ether, 0.5 ether, 0.1 ether, 1 hours, 1 days, 3, 3));
        game = new DisputeGame(oracle);
        market = new TaskMarket(game, oracle);
        oracle.bindGame(address(game));
        game.bindMarket(address(market));
        vm.deal(client, 100 ether);
    }

    // ---------------------------------------------------------------- submit

    /// @notice Finding 4 (issue 12): `submit` carries the whole checkpoint list and the market builds its
    ///         root. At `MAX_CHECKPOINTS` (T = 4096, c = 1: 4,097 state roots, 131 KB of calldata) the
    ///         first submission, which also creates its group, stays under a third of the cap.
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
        vm.deal(trainer, s.bond);
        vm.prank(trainer);
        market.join{value: s.bond}(taskId);
        bytes32[] memory roots = CheckpointLists.states("max", INITIAL, k + 1);
        bytes memory cd = abi.encodeCall(ITaskMarket.submit, (taskId, roots));
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

    // ---------------------------------------------------------------- finalize

    /// @notice Finding 7 (issue 12): `finalize` loops over every trainer. At `MAX_SLOTS` trainers, each
    ///         in its own group (the dearest case: every group is read, every trainer credited its bond,
    ///         the client its reward), it stays under a quarter of the per-transaction cap.
    /// forge-config: default.isolate = true
    function test_finalize_maxSlotsEachOwnGroup_succeeds() public {
        uint256 gas = _finalizeFull("finalize_maxSlots_ownGroups", true);
        assertLe(gas, FINALIZE_LIMIT, "finalize at MAX_SLOTS <= 1/4 of the tx cap");
    }

    /// @notice `finalize` at `MAX_SLOTS` trainers that all agree: every one is paid a share.
    /// forge-config: default.isolate = true
    function test_finalize_maxSlotsOneGroup_succeeds() public {
        uint256 gas = _finalizeFull("finalize_maxSlots_oneGroup", false);
        assertLe(gas, FINALIZE_LIMIT, "finalize at MAX_SLOTS <= 1/4 of the tx cap");
    }

    // ---------------------------------------------------------------- helpers

    /// @dev Posts a task of `MAX_SLOTS` slots, fills them (each trainer with its own list when
    ///      `ownGroups`, else all the same), finalizes after the dispute deadline; returns its gas.
    function _finalizeFull(string memory name, bool ownGroups) internal returns (uint256 gas) {
        uint32 slots = market.MAX_SLOTS();
        ITaskMarket.TaskSpec memory s = _spec(slots);
        vm.prank(client);
        uint256 taskId = market.postTask{value: 10 ether}(s);
        CheckpointLists.List memory same = _list("same");
        for (uint256 i; i < slots; ++i) {
            address trainer = address(uint160(0x10000 + i));
            vm.deal(trainer, s.bond);
            vm.prank(trainer);
            market.join{value: s.bond}(taskId);
            CheckpointLists.List memory list = ownGroups ? _list(vm.toString(i)) : same;
            vm.prank(trainer);
            market.submit(taskId, list.stateRoots);
        }
        assertEq(market.task(taskId).groupCount, ownGroups ? slots : 1, "groups");
        vm.warp(s.disputeDeadline + 1);
        market.finalize(taskId);
        gas = vm.lastCallGas().gasTotalUsed;
        assertGe(gas, 21_000, "isolated: the transaction's gas");
        assertEq(uint8(market.task(taskId).status), uint8(ITaskMarket.TaskStatus.Finalized), "finalized");
        console.log(name, "trainers", slots);
        console.log("  gas", gas, "per trainer", gas / slots);
        vm.snapshotValue("TaskMarketGas", name, gas);
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
