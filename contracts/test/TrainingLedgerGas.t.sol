// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {Test, console} from "forge-std/Test.sol";

import {TrainingLedger} from "../src/TrainingLedger.sol";
import {MerkleLib} from "../src/lib/MerkleLib.sol";
import {PayoutVectors} from "./utils/PayoutVectors.sol";

/// @notice Gas of the training ledger's calls (issue 13): `commit`, `revealValidation`, `reveal`, the first
///         and the quorum-reaching `postIntervalRoot` of an interval, the first and the quorum-reaching
///         `postPayoutRoot`, and every `claim` of the 64-leaf tree and the six measured claims of the
///         4096-leaf tree of payout_trees.json (Python-built), the first claim of the ledger apart, then
///         `claimFee`; and at `MAX_LEAVES` the quorum post (which sets every claim word) and the refund.
///         The goals are asserted: every claim and every `postIntervalRoot` within their limits.
/// @dev Each test runs isolated (inline config `isolate = true`): every call is its own transaction, so
///      storage starts cold and `vm.lastCallGas().gasTotalUsed` is the whole transaction's gas, 21,000 and
///      calldata included. Leaf accounts hold 1 wei before their claim (they have paid gas before). The
///      figures go to the console and to the snapshot group `TrainingLedgerGas`.
contract TrainingLedgerGasTest is Test {
    /// @notice What one whole claim transaction may take (issue 13).
    uint256 internal constant CLAIM_LIMIT = 60_000;
    /// @notice What posting an interval's block root may take, the first (most expensive) post included.
    uint256 internal constant INTERVAL_LIMIT = 100_000;
    uint256 internal constant FEE = 1 ether;

    TrainingLedger internal ledger;
    address internal client = makeAddr("client");
    address internal alice = makeAddr("alice");
    address internal bob = makeAddr("bob");
    address[3] internal builders = [makeAddr("b0"), makeAddr("b1"), makeAddr("b2")];
    bytes32 internal v1 = keccak256("val1");
    bytes32 internal v2 = keccak256("val2");
    string internal json;

    function setUp() public {
        vm.warp(1_700_000_000);
        ledger = new TrainingLedger();
        json = PayoutVectors.read("payout_trees.json");
        vm.deal(client, 1_000_000 ether);
        vm.deal(alice, 10 ether);
        vm.deal(bob, 10 ether);
        for (uint256 k; k < 3; ++k) {
            vm.deal(builders[k], 10 ether);
        }
    }

    /// forge-config: default.isolate = true
    function test_gas_64leaves() public {
        _run(9, "64");
    }

    /// forge-config: default.isolate = true
    function test_gas_4096leaves() public {
        _run(10, "4096");
    }

    function _vleaf(uint256 t, bytes32 c) internal pure returns (bytes32) {
        return MerkleLib.leafHash(abi.encodePacked("LVAL", t, c));
    }

    function _gas() internal view returns (uint256) {
        return vm.lastCallGas().gasTotalUsed;
    }

    function _snap(string memory name, uint256 gas) internal {
        console.log(name, gas);
        vm.snapshotValue("TrainingLedgerGas", name, gas);
    }

    /// @notice The payout post reaching the quorum at `MAX_LEAVES` sets 410 claim words, and a refund after
    ///         the claim window sums them.
    /// forge-config: default.isolate = true
    function test_gas_maxLeaves_payoutQuorumAndRefund() public {
        uint256 n = ledger.MAX_LEAVES();
        uint256 id = _open(1 ether, false);
        bytes32 top = keccak256("top");
        vm.prank(builders[0]);
        ledger.postPayoutRoot(id, top, uint64(n), 1 ether);
        vm.prank(builders[1]);
        ledger.postPayoutRoot(id, top, uint64(n), 1 ether);
        uint256 gas = _gas();
        _snap("postPayoutRoot_quorum_65536", gas);
        assertLe(gas, 10_000_000, "under 60 % of the EIP-7825 transaction cap (16,777,216)");
        vm.warp(ledger.settleEnd(id) + 1000);
        ledger.refund(id);
        uint256 refundGas = _gas();
        _snap("refund_65536", refundGas);
        assertLe(refundGas, 1_100_000, "refund at MAX_LEAVES");
        assertEq(client.balance, 1_000_000 ether - 1 ether - FEE + 1 ether + FEE, "all back");
    }

    /// A ledger of two steps (one interval each), two contributors and three builders, whose pool is `total`
    /// plus the fee, run to the agreement of both intervals; its calls measured (and snapshot) if `measure`.
    function _open(uint256 total, bool measure) internal returns (uint256 id) {
        bytes32 valRoot = MerkleLib.listRoot(2, MerkleLib.nodeHash(_vleaf(1, v1), _vleaf(2, v2)));
        TrainingLedger.Params memory p = TrainingLedger.Params({
            genesis: keccak256("model"),
            validationRoot: valRoot,
            steps: 2,
            intervalSteps: 1,
            commitWindow: 100,
            revealWindow: 100,
            maxContributors: 2,
            quorum: 2,
            settleWindow: 1000,
            claimWindow: 1000,
            contributorBond: 1 ether,
            builderBond: 2 ether,
            builderFee: uint96(FEE)
        });
        vm.prank(client);
        id = ledger.postLedger{value: total + FEE}(p);
        vm.prank(alice);
        ledger.bond{value: 1 ether}(id, false);
        vm.prank(bob);
        ledger.bond{value: 1 ether}(id, false);
        for (uint256 b; b < 3; ++b) {
            vm.prank(builders[b]);
            ledger.bond{value: 2 ether}(id, true);
        }
        _steps(id, measure);
        vm.warp(ledger.endTime(id));
        for (uint256 i; i < 2; ++i) {
            bytes32 r = keccak256(abi.encode("block root", i));
            vm.prank(builders[0]);
            ledger.postIntervalRoot(id, i, r);
            uint256 first = _gas();
            vm.prank(builders[1]);
            ledger.postIntervalRoot(id, i, r);
            uint256 second = _gas();
            if (!measure) continue;
            if (i == 0) {
                _snap("postIntervalRoot_first", first);
                _snap("postIntervalRoot_quorum", second);
                assertLe(first, INTERVAL_LIMIT, "first postIntervalRoot <= 100k gas");
                assertLe(second, INTERVAL_LIMIT, "quorum postIntervalRoot <= 100k gas");
            } else {
                _snap("postIntervalRoot_lastQuorum", second);
                assertLe(second, INTERVAL_LIMIT, "last interval's quorum post <= 100k gas");
            }
        }
    }

    /// The ledger of `_open` paying out the tree of case `k`; every call measured once, the first of its kind
    /// where it matters.
    function _run(uint256 k, string memory label) internal {
        string memory c = PayoutVectors.caseAt(k);
        assertEq(vm.parseJsonString(json, string.concat(c, ".name")), string.concat("list", label), "case");
        uint256 n = vm.parseJsonUint(json, string.concat(c, ".count"));
        uint256 total = vm.parseJsonUint(json, string.concat(c, ".total"));
        bytes32 top = vm.parseJsonBytes32(json, string.concat(c, ".topHash"));
        bool once = k == 9; // the calls before the payout do not depend on the tree: measured once
        uint256 id = _open(total, once);
        vm.prank(builders[0]);
        ledger.postPayoutRoot(id, top, uint64(n), total);
        if (once) _snap("postPayoutRoot_first", _gas());
        vm.prank(builders[1]);
        ledger.postPayoutRoot(id, top, uint64(n), total);
        _snap(string.concat("postPayoutRoot_quorum_", label), _gas());
        vm.warp(ledger.settleEnd(id));
        _claims(id, k, label);
        vm.prank(builders[0]);
        ledger.claimFee(id);
        if (once) _snap("claimFee", _gas());
    }

    function _steps(uint256 id, bool measure) internal {
        for (uint256 t = 1; t <= 2; ++t) {
            (uint256 open, uint256 cd,) = ledger.stepWindow(id, t);
            vm.warp(open);
            bytes32 ca = ledger.commitHash(id, t, alice, keccak256("ba"), keccak256("ga"), "s");
            bytes32 cb = ledger.commitHash(id, t, bob, keccak256("bb"), keccak256("gb"), "s");
            vm.prank(alice);
            ledger.commit(id, t, ca);
            uint256 commitFirst = _gas();
            vm.prank(bob);
            ledger.commit(id, t, cb);
            uint256 commitSecond = _gas();
            vm.warp(cd);
            bytes32[] memory s = new bytes32[](1);
            s[0] = t == 1 ? _vleaf(2, v2) : _vleaf(1, v1);
            vm.prank(client);
            ledger.revealValidation(id, t, t == 1 ? v1 : v2, s);
            uint256 rv = _gas();
            vm.prank(alice);
            ledger.reveal(id, t, keccak256("ba"), keccak256("ga"), "s");
            uint256 revealGas = _gas();
            vm.prank(bob);
            ledger.reveal(id, t, keccak256("bb"), keccak256("gb"), "s");
            if (t == 1 && measure) {
                _snap("commit_firstOfStep", commitFirst);
                _snap("commit_second", commitSecond);
                _snap("revealValidation_T2", rv);
                _snap("reveal", revealGas);
            }
        }
    }

    function _claims(uint256 id, uint256 k, string memory label) internal {
        uint256 firstGas;
        uint256 maxGas;
        uint256 sumGas;
        uint256 claims;
        while (vm.keyExistsJson(json, PayoutVectors.proofAt(k, claims))) {
            PayoutVectors.Claim memory cl = PayoutVectors.claimAt(json, PayoutVectors.proofAt(k, claims));
            vm.deal(cl.account, 1);
            ledger.claim(id, cl.index, cl.account, cl.amount, cl.proof);
            uint256 gas = _gas();
            assertEq(cl.account.balance, 1 + cl.amount, "paid");
            if (claims == 0) {
                firstGas = gas;
            } else {
                if (gas > maxGas) maxGas = gas;
                sumGas += gas;
            }
            ++claims;
        }
        _snap(string.concat("claim_first_", label), firstGas);
        _snap(string.concat("claim_laterMax_", label), maxGas);
        _snap(string.concat("claim_laterMean_", label), sumGas / (claims - 1));
        assertLe(firstGas, CLAIM_LIMIT, "the ledger's first claim <= 60k gas, whole transaction");
        assertLe(maxGas, CLAIM_LIMIT, "claim <= 60k gas, whole transaction");
    }
}
