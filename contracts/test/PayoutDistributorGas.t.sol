// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {Test, console} from "forge-std/Test.sol";

import {PayoutDistributor} from "../src/PayoutDistributor.sol";
import {IPayoutDistributor} from "../src/interfaces/IPayoutDistributor.sol";
import {PayoutVectors} from "./utils/PayoutVectors.sol";

/// @notice Gas of `createDistribution`, `claim` and `sweep` for the trees of 4, 64 and 4096 leaves of
///         payout_trees.json (Python-built), and of `createDistribution` and `sweep` at `MAX_LEAVES`.
/// @dev Each test runs isolated (inline config `isolate = true`): every call is its own transaction, so
///      storage starts cold and `vm.lastCallGas().gasTotalUsed` is the whole transaction's gas, 21,000
///      and calldata included. The execution gas printed beside it is that minus 21,000 and the standard
///      calldata cost (4 a zero byte, 16 another). Leaf accounts hold 1 wei before their claim (they
///      have paid gas before: a contributor bonded); `claim_4096_freshAccount` pays an account that does
///      not exist yet, which costs the EVM's 25,000 for a new account on top. The figures go to the
///      console and to the snapshot group `PayoutDistributorGas`.
contract PayoutDistributorGasTest is Test {
    /// @notice What one whole claim transaction may take (issue 13): 60,000 gas.
    uint256 internal constant CLAIM_LIMIT = 60_000;
    uint256 internal constant T0 = 1_700_000_000;
    uint64 internal constant DEADLINE = uint64(T0 + 30 days);

    PayoutDistributor internal distributor;
    address internal creator = makeAddr("creator");
    address internal relayer = makeAddr("relayer");
    string internal json;

    function setUp() public {
        vm.warp(T0);
        distributor = new PayoutDistributor();
        vm.deal(creator, 1_000_000 ether);
        json = PayoutVectors.read("payout_trees.json");
    }

    /// forge-config: default.isolate = true
    function test_claim_4leaves_succeeds() public {
        _measure(3, "4");
    }

    /// forge-config: default.isolate = true
    function test_claim_64leaves_succeeds() public {
        _measure(9, "64");
    }

    /// forge-config: default.isolate = true
    function test_claim_4096leaves_succeeds() public {
        _measure(10, "4096");
    }

    /// @notice `createDistribution` at `MAX_LEAVES` writes 410 bitmap words, and `sweep` reads them.
    /// forge-config: default.isolate = true
    function test_createDistribution_maxLeaves_succeeds() public {
        vm.prank(creator);
        distributor.createDistribution{value: 1 ether}(keccak256("top"), 65_536, creator, DEADLINE);
        uint256 gas = vm.lastCallGas().gasTotalUsed;
        console.log("createDistribution, 65536 leaves:", gas);
        assertLe(gas, 10_000_000, "under 60 % of the EIP-7825 transaction cap (16,777,216)");
        vm.snapshotValue("PayoutDistributorGas", "create_65536", gas);
        vm.warp(DEADLINE);
        distributor.sweep(1);
        uint256 sweepGas = vm.lastCallGas().gasTotalUsed;
        console.log("sweep, 65536 leaves (410 words read):", sweepGas);
        assertLe(sweepGas, 1_100_000, "sweep at MAX_LEAVES");
        vm.snapshotValue("PayoutDistributorGas", "sweep_65536", sweepGas);
    }

    /// @notice The claim of one leaf to an account that does not exist yet (the 25,000 of a new account).
    /// forge-config: default.isolate = true
    function test_claim_freshAccount_succeeds() public {
        uint256 id = _create(10);
        PayoutVectors.Claim memory c = PayoutVectors.claimAt(json, PayoutVectors.proofAt(10, 2));
        assertEq(c.account.balance, 0, "fresh");
        assertEq(c.account.code.length, 0, "fresh");
        vm.prank(relayer);
        distributor.claim(id, c.index, c.account, c.amount, c.proof);
        uint256 gas = vm.lastCallGas().gasTotalUsed;
        console.log("claim, 4096 leaves, to an account that does not exist yet:", gas);
        vm.snapshotValue("PayoutDistributorGas", "claim_4096_freshAccount", gas);
    }

    function _create(uint256 k) internal returns (uint256 id) {
        string memory c = PayoutVectors.caseAt(k);
        uint256 n = vm.parseJsonUint(json, string.concat(c, ".count"));
        uint256 total = vm.parseJsonUint(json, string.concat(c, ".total"));
        bytes32 top = vm.parseJsonBytes32(json, string.concat(c, ".topHash"));
        vm.prank(creator);
        id = distributor.createDistribution{value: total}(top, uint64(n), creator, DEADLINE);
    }

    function _measure(uint256 k, string memory label) internal {
        string memory c = PayoutVectors.caseAt(k);
        assertEq(vm.parseJsonString(json, string.concat(c, ".name")), string.concat("list", label), "case");
        uint256 id = _create(k);
        uint256 createGas = vm.lastCallGas().gasTotalUsed;
        uint256 maxGas;
        uint256 maxExec;
        uint256 sumGas;
        uint256 claims;
        while (vm.keyExistsJson(json, PayoutVectors.proofAt(k, claims))) {
            PayoutVectors.Claim memory cl = PayoutVectors.claimAt(json, PayoutVectors.proofAt(k, claims));
            vm.deal(cl.account, 1);
            bytes memory cd =
                abi.encodeCall(IPayoutDistributor.claim, (id, cl.index, cl.account, cl.amount, cl.proof));
            vm.prank(relayer);
            (bool ok,) = address(distributor).call(cd);
            assertTrue(ok, "claim");
            uint256 gas = vm.lastCallGas().gasTotalUsed;
            uint256 exec = gas - 21_000 - _calldataGas(cd);
            assertEq(cl.account.balance, 1 + cl.amount, "paid");
            if (gas > maxGas) (maxGas, maxExec) = (gas, exec);
            sumGas += gas;
            ++claims;
        }
        console.log(string.concat("leaves ", label, ": createDistribution"), createGas);
        console.log("  claims measured", claims, "mean whole-tx gas", sumGas / claims);
        console.log("  max whole-tx gas", maxGas, "its execution gas", maxExec);
        assertLe(maxGas, CLAIM_LIMIT, "claim <= 60k gas, whole transaction");
        vm.warp(DEADLINE);
        vm.prank(relayer);
        distributor.sweep(id);
        uint256 sweepGas = vm.lastCallGas().gasTotalUsed;
        console.log("  sweep", sweepGas);
        vm.snapshotValue("PayoutDistributorGas", string.concat("sweep_", label), sweepGas);
        vm.snapshotValue("PayoutDistributorGas", string.concat("create_", label), createGas);
        vm.snapshotValue("PayoutDistributorGas", string.concat("claim_", label, "_maxTx"), maxGas);
        vm.snapshotValue("PayoutDistributorGas", string.concat("claim_", label, "_maxExec"), maxExec);
    }

    function _calldataGas(bytes memory cd) internal pure returns (uint256 standard) {
        for (uint256 i; i < cd.length; ++i) {
            standard += cd[i] == 0 ? 4 : 16;
        }
    }
}
