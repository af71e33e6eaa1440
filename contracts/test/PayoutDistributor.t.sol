// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {Test} from "forge-std/Test.sol";

import {PayoutDistributor} from "../src/PayoutDistributor.sol";
import {IPayoutDistributor} from "../src/interfaces/IPayoutDistributor.sol";
import {
    PayoutDistributorAlreadyClaimed,
    PayoutDistributorAlreadySwept,
    PayoutDistributorBadDeadline,
    PayoutDistributorBadLeafCount,
    PayoutDistributorClaimClosed,
    PayoutDistributorIndexOutOfRange,
    PayoutDistributorPoolTooLarge,
    PayoutDistributorProofLength,
    PayoutDistributorRootMismatch,
    PayoutDistributorSumTooLarge,
    PayoutDistributorSweepTooEarly,
    PayoutDistributorTransferFailed,
    PayoutDistributorUnknown,
    PayoutDistributorZeroAccount,
    PayoutDistributorZeroAmount,
    PayoutDistributorZeroPool,
    PayoutDistributorZeroRefundTo,
    PayoutDistributorZeroTopHash
} from "../src/lib/PayoutErrors.sol";
import {PayoutTrees} from "./utils/PayoutTrees.sol";
import {PayoutVectors} from "./utils/PayoutVectors.sol";

/// @notice Refuses ether.
contract Refuser {
    receive() external payable {
        revert("no");
    }
}

/// @notice A leaf account that, when paid, tries to claim its own leaf again and to sweep; it records
///         what each re-entrant call reverted with, and accepts the payment.
contract Reenterer {
    PayoutDistributor internal immutable distributor;
    uint256 internal id;
    uint256 internal index;
    uint256 internal amount;
    IPayoutDistributor.ProofStep[] internal proof;
    bytes public claimRevert;
    bytes public sweepRevert;
    uint256 public received;

    constructor(PayoutDistributor d) {
        distributor = d;
    }

    function arm(uint256 id_, uint256 index_, uint256 amount_, IPayoutDistributor.ProofStep[] memory proof_)
        external
    {
        (id, index, amount) = (id_, index_, amount_);
        delete proof;
        for (uint256 k; k < proof_.length; ++k) {
            proof.push(proof_[k]);
        }
    }

    receive() external payable {
        received += msg.value;
        try distributor.claim(id, index, address(this), amount, proof) {}
        catch (bytes memory reason) {
            claimRevert = reason;
        }
        try distributor.sweep(id) {}
        catch (bytes memory reason) {
            sweepRevert = reason;
        }
    }
}

/// @title PayoutDistributorTest
/// @notice Every rule and every revert of PayoutDistributor (IPayoutDistributor NatSpec), the trees of
///         scripts/payout_vectors.py accepted bit for bit, the escrow attack, re-entrancy, and fuzzed
///         trees and wrong claims.
contract PayoutDistributorTest is Test {
    using PayoutTrees for PayoutTrees.Tree;

    uint256 internal constant T0 = 1_700_000_000;
    uint64 internal constant DEADLINE = uint64(T0 + 7 days);

    PayoutDistributor internal distributor;
    address internal creator = makeAddr("creator");
    address internal refund = makeAddr("refund");
    address internal relayer = makeAddr("relayer");

    event DistributionCreated(
        uint256 indexed id,
        address indexed creator,
        bytes32 root,
        bytes32 topHash,
        uint64 leafCount,
        uint256 total,
        address refundTo,
        uint64 claimDeadline
    );
    event Claimed(uint256 indexed id, address indexed account, uint256 index, uint256 amount);
    event Swept(uint256 indexed id, address indexed refundTo, uint256 amount);

    function setUp() public {
        vm.warp(T0);
        distributor = new PayoutDistributor();
        vm.deal(creator, type(uint128).max);
    }

    // ---------------------------------------------------------------- helpers

    function _create(PayoutTrees.Tree memory t) internal returns (uint256) {
        return _createWith(t, t.total());
    }

    function _createWith(PayoutTrees.Tree memory t, uint256 value) internal returns (uint256) {
        vm.prank(creator);
        return distributor.createDistribution{value: value}(t.top(), uint64(t.count()), refund, DEADLINE);
    }

    function _claim(uint256 id, PayoutTrees.Tree memory t, uint256 i) internal {
        distributor.claim(id, i, t.accounts[i], t.amounts[i], t.proof(i));
    }

    function _tree3() internal returns (PayoutTrees.Tree memory) {
        address[] memory a = new address[](3);
        uint256[] memory x = new uint256[](3);
        (a[0], a[1], a[2]) = (makeAddr("alice"), makeAddr("bob"), makeAddr("carol"));
        (x[0], x[1], x[2]) = (5 ether, 3 ether, 2 ether);
        return PayoutTrees.build(a, x);
    }

    function _noProof() internal pure returns (IPayoutDistributor.ProofStep[] memory) {
        return new IPayoutDistributor.ProofStep[](0);
    }

    // ---------------------------------------------------------------- createDistribution

    function test_createDistribution_storesAndEmits_succeeds() public {
        PayoutTrees.Tree memory t = _tree3();
        bytes32 root = t.rootOf();
        vm.expectEmit(address(distributor));
        emit DistributionCreated(1, creator, root, t.top(), 3, 10 ether, refund, DEADLINE);
        uint256 id = _create(t);
        assertEq(id, 1, "ids count from 1");
        assertEq(distributor.distributionCount(), 1, "count");
        IPayoutDistributor.DistributionView memory d = distributor.distribution(id);
        assertEq(d.root, root, "root = rootOf(top, n, msg.value)");
        assertEq(d.total, 10 ether, "total");
        assertEq(d.claimed, 0, "claimed");
        assertEq(d.refundTo, refund, "refundTo");
        assertEq(d.claimDeadline, DEADLINE, "deadline");
        assertEq(d.leafCount, 3, "leafCount");
        assertFalse(d.swept, "swept");
        assertEq(address(distributor).balance, 10 ether, "escrowed");
        for (uint256 i; i < 4; ++i) {
            assertFalse(distributor.isClaimed(id, i), "nothing claimed");
        }
        assertEq(distributor.rootOf(t.top(), 3, 10 ether), root, "rootOf = reference");
        assertEq(_create(t), 2, "second id");
    }

    function test_createDistribution_zeroPool_reverts() public {
        PayoutTrees.Tree memory t = _tree3();
        vm.expectRevert(abi.encodeWithSelector(PayoutDistributorZeroPool.selector));
        _createWith(t, 0);
    }

    function test_createDistribution_poolTooLarge_reverts() public {
        PayoutTrees.Tree memory t = _tree3();
        uint256 max = distributor.MAX_POOL();
        assertEq(max, type(uint96).max, "2^96 - 1");
        vm.expectRevert(abi.encodeWithSelector(PayoutDistributorPoolTooLarge.selector, max + 1, max));
        _createWith(t, max + 1);
    }

    function test_createDistribution_maxPool_succeeds() public {
        uint256 max = distributor.MAX_POOL();
        address[] memory a = new address[](1);
        uint256[] memory x = new uint256[](1);
        (a[0], x[0]) = (makeAddr("whale"), max);
        PayoutTrees.Tree memory t = PayoutTrees.build(a, x);
        uint256 id = _create(t);
        _claim(id, t, 0);
        assertEq(a[0].balance, max, "the largest pool pays out whole");
    }

    function test_createDistribution_badLeafCount_reverts() public {
        uint256 max = distributor.MAX_LEAVES();
        assertEq(max, 65_536, "2^16");
        vm.startPrank(creator);
        vm.expectRevert(abi.encodeWithSelector(PayoutDistributorBadLeafCount.selector, 0, max));
        distributor.createDistribution{value: 1}(bytes32(uint256(1)), 0, refund, DEADLINE);
        vm.expectRevert(abi.encodeWithSelector(PayoutDistributorBadLeafCount.selector, max + 1, max));
        distributor.createDistribution{value: 1}(bytes32(uint256(1)), uint64(max + 1), refund, DEADLINE);
        vm.stopPrank();
    }

    function test_createDistribution_maxLeaves_succeeds() public {
        vm.prank(creator);
        uint256 id =
            distributor.createDistribution{value: 1 ether}(bytes32(uint256(1)), 65_536, refund, DEADLINE);
        assertFalse(distributor.isClaimed(id, 0), "first");
        assertFalse(distributor.isClaimed(id, 65_535), "last");
        assertFalse(distributor.isClaimed(id, 65_536), "past the end");
    }

    function test_createDistribution_zeroTopHash_reverts() public {
        vm.expectRevert(abi.encodeWithSelector(PayoutDistributorZeroTopHash.selector));
        vm.prank(creator);
        distributor.createDistribution{value: 1}(bytes32(0), 1, refund, DEADLINE);
    }

    function test_createDistribution_zeroRefundTo_reverts() public {
        vm.expectRevert(abi.encodeWithSelector(PayoutDistributorZeroRefundTo.selector));
        vm.prank(creator);
        distributor.createDistribution{value: 1}(bytes32(uint256(1)), 1, address(0), DEADLINE);
    }

    function test_createDistribution_badDeadline_reverts() public {
        uint256 earliest = T0 + distributor.MIN_CLAIM_PERIOD();
        uint256 latest = T0 + distributor.MAX_CLAIM_PERIOD();
        assertEq(earliest, T0 + 1 hours, "min period");
        assertEq(latest, T0 + 4 * 365 days, "max period");
        vm.startPrank(creator);
        for (uint256 k; k < 4; ++k) {
            uint64 bad = [uint64(0), uint64(T0), uint64(earliest - 1), uint64(latest + 1)][k];
            vm.expectRevert(
                abi.encodeWithSelector(PayoutDistributorBadDeadline.selector, bad, earliest, latest)
            );
            distributor.createDistribution{value: 1}(bytes32(uint256(1)), 1, refund, bad);
        }
        distributor.createDistribution{value: 1}(bytes32(uint256(1)), 1, refund, uint64(earliest));
        distributor.createDistribution{value: 1}(bytes32(uint256(1)), 1, refund, uint64(latest));
        vm.stopPrank();
        assertEq(distributor.distributionCount(), 2, "both bounds are allowed");
    }

    // ---------------------------------------------------------------- claim: the vectors

    /// @notice Every tree of payout_trees.json: the Python top hash equals the Solidity reference's (the
    ///         full cases), and every proof Python wrote is accepted and pays its leaf exactly once.
    function test_claim_pythonVectors_succeeds() public {
        string memory json = PayoutVectors.read("payout_trees.json");
        assertEq(vm.parseJsonUint(json, ".version"), 1, "version");
        uint256 cases = _length(json, ".cases");
        assertEq(cases, 11, "10 full trees and the 4096-leaf one");
        for (uint256 k; k < cases; ++k) {
            _checkCase(json, k);
        }
    }

    function _length(string memory json, string memory at) internal view returns (uint256 n) {
        while (vm.keyExistsJson(json, string.concat(at, "[", vm.toString(n), "]"))) ++n;
    }

    function _checkCase(string memory json, uint256 k) internal {
        string memory c = PayoutVectors.caseAt(k);
        uint256 n = vm.parseJsonUint(json, string.concat(c, ".count"));
        uint256 total = vm.parseJsonUint(json, string.concat(c, ".total"));
        bytes32 top = vm.parseJsonBytes32(json, string.concat(c, ".topHash"));
        assertEq(
            vm.parseJsonUint(json, string.concat(c, ".pool")), total, "the split's shares add up to the pool"
        );
        assertEq(
            distributor.rootOf(top, uint64(n), total), vm.parseJsonBytes32(json, string.concat(c, ".root"))
        );
        if (vm.keyExistsJson(json, string.concat(c, ".leaves"))) {
            address[] memory a = new address[](n);
            uint256[] memory x = new uint256[](n);
            uint256 sum;
            for (uint256 i; i < n; ++i) {
                string memory l = string.concat(c, ".leaves[", vm.toString(i), "]");
                a[i] = vm.parseJsonAddress(json, string.concat(l, ".account"));
                x[i] = vm.parseJsonUint(json, string.concat(l, ".amount"));
                sum += x[i];
            }
            assertEq(sum, total, "leaves add up to the total");
            PayoutTrees.Tree memory t = PayoutTrees.build(a, x);
            assertEq(t.top(), top, "Solidity reference top = Python top");
        }
        vm.prank(creator);
        uint256 id = distributor.createDistribution{value: total}(top, uint64(n), refund, DEADLINE);
        uint256 proofs = _length(json, string.concat(c, ".proofs"));
        uint256 paid;
        for (uint256 j; j < proofs; ++j) {
            PayoutVectors.Claim memory cl = PayoutVectors.claimAt(json, PayoutVectors.proofAt(k, j));
            assertEq(cl.proof.length, vm.parseJsonUint(json, string.concat(c, ".depth")), "depth");
            uint256 before = cl.account.balance;
            vm.expectEmit(address(distributor));
            emit Claimed(id, cl.account, cl.index, cl.amount);
            vm.prank(relayer);
            distributor.claim(id, cl.index, cl.account, cl.amount, cl.proof);
            assertEq(cl.account.balance - before, cl.amount, "paid the leaf's amount");
            assertTrue(distributor.isClaimed(id, cl.index), "marked");
            paid += cl.amount;
            vm.expectRevert(abi.encodeWithSelector(PayoutDistributorAlreadyClaimed.selector, id, cl.index));
            distributor.claim(id, cl.index, cl.account, cl.amount, cl.proof);
        }
        assertEq(distributor.claimedTotal(id), paid, "claimedTotal");
        if (proofs == n) assertEq(paid, total, "every leaf claimed: the pool is paid out exactly");
    }

    /// @notice Every claim of payout_negative.json is refused with the error and the arguments Python
    ///         computed (the computed root included), against the 5-leaf tree created with `value` wei.
    function test_claim_pythonNegativeVectors_reverts() public {
        string memory json = PayoutVectors.read("payout_negative.json");
        bytes32 top = vm.parseJsonBytes32(json, ".topHash");
        uint256 n = vm.parseJsonUint(json, ".count");
        uint256 cases = _length(json, ".cases");
        assertEq(cases, 14, "cases");
        for (uint256 k; k < cases; ++k) {
            string memory c = PayoutVectors.caseAt(k);
            uint256 value = vm.parseJsonUint(json, string.concat(c, ".value"));
            vm.prank(creator);
            uint256 id = distributor.createDistribution{value: value}(top, uint64(n), refund, DEADLINE);
            PayoutVectors.Claim memory cl = PayoutVectors.claimAt(json, c);
            vm.expectRevert(_expected(json, c, id));
            distributor.claim(id, cl.index, cl.account, cl.amount, cl.proof);
            assertEq(distributor.claimedTotal(id), 0, "nothing paid");
        }
    }

    function _expected(string memory json, string memory c, uint256 id) internal pure returns (bytes memory) {
        bytes32 error = keccak256(bytes(vm.parseJsonString(json, string.concat(c, ".error"))));
        if (error == keccak256("RootMismatch")) {
            return abi.encodeWithSelector(
                PayoutDistributorRootMismatch.selector,
                id,
                vm.parseJsonBytes32(json, string.concat(c, ".computed")),
                vm.parseJsonBytes32(json, string.concat(c, ".expected"))
            );
        }
        if (error == keccak256("ProofLength")) {
            return abi.encodeWithSelector(
                PayoutDistributorProofLength.selector,
                vm.parseJsonUint(json, string.concat(c, ".got")),
                vm.parseJsonUint(json, string.concat(c, ".expected"))
            );
        }
        if (error == keccak256("SumTooLarge")) {
            return abi.encodeWithSelector(
                PayoutDistributorSumTooLarge.selector,
                vm.parseJsonUint(json, string.concat(c, ".sum")),
                uint256(type(uint96).max)
            );
        }
        revert("unknown error name in payout_negative.json");
    }

    // ---------------------------------------------------------------- claim: rules

    function test_claim_everyLeafByAnyone_succeeds() public {
        PayoutTrees.Tree memory t = _tree3();
        uint256 id = _create(t);
        for (uint256 i; i < 3; ++i) {
            vm.expectEmit(address(distributor));
            emit Claimed(id, t.accounts[i], i, t.amounts[i]);
            vm.prank(relayer);
            _claim(id, t, i);
            assertEq(t.accounts[i].balance, t.amounts[i], "the leaf's account is paid, not the relayer");
        }
        assertEq(relayer.balance, 0, "the relayer gets nothing");
        assertEq(distributor.claimedTotal(id), 10 ether, "all claimed");
        assertEq(address(distributor).balance, 0, "nothing left");
    }

    function test_claim_singleLeaf_succeeds() public {
        address[] memory a = new address[](1);
        uint256[] memory x = new uint256[](1);
        (a[0], x[0]) = (makeAddr("solo"), 7);
        PayoutTrees.Tree memory t = PayoutTrees.build(a, x);
        assertEq(t.top(), PayoutTrees.leaf(a[0], 7), "one leaf: top = leaf");
        uint256 id = _create(t);
        distributor.claim(id, 0, a[0], 7, _noProof());
        assertEq(a[0].balance, 7, "paid");
    }

    function test_claim_unknown_reverts() public {
        vm.expectRevert(abi.encodeWithSelector(PayoutDistributorUnknown.selector, 0));
        distributor.claim(0, 0, address(1), 1, _noProof());
        _create(_tree3());
        vm.expectRevert(abi.encodeWithSelector(PayoutDistributorUnknown.selector, 2));
        distributor.claim(2, 0, address(1), 1, _noProof());
    }

    function test_claim_atDeadline_reverts() public {
        PayoutTrees.Tree memory t = _tree3();
        uint256 id = _create(t);
        vm.warp(DEADLINE - 1);
        _claim(id, t, 0);
        vm.warp(DEADLINE);
        vm.expectRevert(abi.encodeWithSelector(PayoutDistributorClaimClosed.selector, id, DEADLINE, DEADLINE));
        _claim(id, t, 1);
    }

    function test_claim_paddingPosition_reverts() public {
        PayoutTrees.Tree memory t = _tree3();
        uint256 id = _create(t);
        // Position 3 is the padding leaf (hash 0, sum 0) of the 4-position tree.
        IPayoutDistributor.ProofStep[] memory p = t.proof(2);
        vm.expectRevert(abi.encodeWithSelector(PayoutDistributorIndexOutOfRange.selector, id, 3, 3));
        distributor.claim(id, 3, address(0), 0, p);
        vm.expectRevert(abi.encodeWithSelector(PayoutDistributorIndexOutOfRange.selector, id, 3, 3));
        distributor.claim(id, 3, t.accounts[2], t.amounts[2], p);
        vm.expectRevert(
            abi.encodeWithSelector(PayoutDistributorIndexOutOfRange.selector, id, type(uint256).max, 3)
        );
        distributor.claim(id, type(uint256).max, t.accounts[2], t.amounts[2], p);
        assertFalse(distributor.isClaimed(id, 3), "padding is never claimed");
    }

    function test_claim_zeroAmount_reverts() public {
        PayoutTrees.Tree memory t = _tree3();
        uint256 id = _create(t);
        vm.expectRevert(abi.encodeWithSelector(PayoutDistributorZeroAmount.selector, id, 1));
        distributor.claim(id, 1, t.accounts[1], 0, t.proof(1));
    }

    /// @notice A tree may hold a zero-address leaf; its claim is refused and its amount is swept.
    function test_claim_zeroAccount_reverts() public {
        address[] memory a = new address[](2);
        uint256[] memory x = new uint256[](2);
        (a[0], a[1], x[0], x[1]) = (address(0), makeAddr("dave"), 4, 6);
        PayoutTrees.Tree memory t = PayoutTrees.build(a, x);
        uint256 id = _create(t);
        vm.expectRevert(abi.encodeWithSelector(PayoutDistributorZeroAccount.selector, id, 0));
        _claim(id, t, 0);
        _claim(id, t, 1);
        vm.warp(DEADLINE);
        distributor.sweep(id);
        assertEq(refund.balance, 4, "the zero-address leaf's amount went back");
    }

    function test_claim_twice_reverts() public {
        PayoutTrees.Tree memory t = _tree3();
        uint256 id = _create(t);
        _claim(id, t, 1);
        vm.expectRevert(abi.encodeWithSelector(PayoutDistributorAlreadyClaimed.selector, id, 1));
        vm.prank(relayer);
        _claim(id, t, 1);
        assertEq(t.accounts[1].balance, t.amounts[1], "paid once");
    }

    function test_claim_proofLength_reverts() public {
        PayoutTrees.Tree memory t = _tree3();
        uint256 id = _create(t);
        IPayoutDistributor.ProofStep[] memory p = t.proof(0);
        IPayoutDistributor.ProofStep[] memory shorter = new IPayoutDistributor.ProofStep[](1);
        shorter[0] = p[0];
        vm.expectRevert(abi.encodeWithSelector(PayoutDistributorProofLength.selector, 1, 2));
        distributor.claim(id, 0, t.accounts[0], t.amounts[0], shorter);
        IPayoutDistributor.ProofStep[] memory longer = new IPayoutDistributor.ProofStep[](3);
        (longer[0], longer[1], longer[2]) = (p[0], p[1], p[1]);
        vm.expectRevert(abi.encodeWithSelector(PayoutDistributorProofLength.selector, 3, 2));
        distributor.claim(id, 0, t.accounts[0], t.amounts[0], longer);
    }

    function test_claim_sumTooLarge_reverts() public {
        PayoutTrees.Tree memory t = _tree3();
        uint256 id = _create(t);
        uint256 max = type(uint96).max;
        vm.expectRevert(abi.encodeWithSelector(PayoutDistributorSumTooLarge.selector, max + 1, max));
        distributor.claim(id, 0, t.accounts[0], max + 1, t.proof(0));
        IPayoutDistributor.ProofStep[] memory p = t.proof(0);
        // Claim 9 ether with a sibling sum that wraps the fold's sum around 2^256 back to the escrow:
        // 9 + 3 + (2^256 - 2) ether = 10 ether mod 2^256.
        p[1].sum = type(uint256).max - 2 ether + 1;
        vm.expectRevert(abi.encodeWithSelector(PayoutDistributorSumTooLarge.selector, p[1].sum, max));
        distributor.claim(id, 0, t.accounts[0], 9 ether, p);
    }

    function test_claim_wrongLeaf_reverts() public {
        PayoutTrees.Tree memory t = _tree3();
        uint256 id = _create(t);
        bytes32 root = t.rootOf();
        IPayoutDistributor.ProofStep[] memory p = t.proof(0);
        address thief = makeAddr("thief");
        vm.expectRevert(
            abi.encodeWithSelector(
                PayoutDistributorRootMismatch.selector,
                id,
                PayoutTrees.fold(3, 0, thief, t.amounts[0], p),
                root
            )
        );
        distributor.claim(id, 0, thief, t.amounts[0], p);
        vm.expectRevert(
            abi.encodeWithSelector(
                PayoutDistributorRootMismatch.selector,
                id,
                PayoutTrees.fold(3, 0, t.accounts[0], 6 ether, p),
                root
            )
        );
        distributor.claim(id, 0, t.accounts[0], 6 ether, p);
        vm.expectRevert(
            abi.encodeWithSelector(
                PayoutDistributorRootMismatch.selector,
                id,
                PayoutTrees.fold(3, 1, t.accounts[0], 5 ether, p),
                root
            )
        );
        distributor.claim(id, 1, t.accounts[0], 5 ether, p);
    }

    /// @notice The escrow attack: a tree whose leaves add up to more than the value sent. No leaf's real
    ///         proof verifies, nor one with sums moved between the leaf and its siblings; the escrow goes
    ///         back whole at the deadline.
    function test_claim_treeOverEscrow_reverts() public {
        PayoutTrees.Tree memory t = _tree3(); // 10 ether of leaves
        uint256 id = _createWith(t, 1 ether);
        bytes32 root = distributor.distribution(id).root;
        assertEq(
            root, PayoutTrees.root(t.top(), 3, 1 ether), "the root carries the escrow, not the tree's sum"
        );
        for (uint256 i; i < 3; ++i) {
            IPayoutDistributor.ProofStep[] memory p = t.proof(i);
            vm.expectRevert(
                abi.encodeWithSelector(
                    PayoutDistributorRootMismatch.selector,
                    id,
                    PayoutTrees.fold(3, i, t.accounts[i], t.amounts[i], p),
                    root
                )
            );
            _claim(id, t, i);
            // Claim the whole escrow with every sibling sum set to 0, so that the fold's sum is the escrow:
            // the sums are in the hashes, so the fold no longer reaches the top.
            uint256 amount = 1 ether;
            for (uint256 k; k < p.length; ++k) {
                p[k].sum = 0;
            }
            vm.expectRevert(
                abi.encodeWithSelector(
                    PayoutDistributorRootMismatch.selector,
                    id,
                    PayoutTrees.fold(3, i, t.accounts[i], amount, p),
                    root
                )
            );
            distributor.claim(id, i, t.accounts[i], amount, p);
        }
        vm.warp(DEADLINE);
        distributor.sweep(id);
        assertEq(refund.balance, 1 ether, "the whole escrow is swept back");
    }

    /// @notice A tree whose leaves add up to less than the escrow pays nothing either (its sum is not the
    ///         pool): the builder cannot keep a part of the pool out of the tree.
    function test_claim_treeUnderEscrow_reverts() public {
        PayoutTrees.Tree memory t = _tree3();
        uint256 id = _createWith(t, 11 ether);
        vm.expectRevert(
            abi.encodeWithSelector(
                PayoutDistributorRootMismatch.selector, id, t.rootOf(), PayoutTrees.root(t.top(), 3, 11 ether)
            )
        );
        _claim(id, t, 0);
    }

    function test_claim_refusingAccount_reverts() public {
        address[] memory a = new address[](2);
        uint256[] memory x = new uint256[](2);
        (a[0], a[1], x[0], x[1]) = (address(new Refuser()), makeAddr("erin"), 4, 6);
        PayoutTrees.Tree memory t = PayoutTrees.build(a, x);
        uint256 id = _create(t);
        vm.expectRevert(abi.encodeWithSelector(PayoutDistributorTransferFailed.selector, a[0], 4));
        _claim(id, t, 0);
        assertFalse(distributor.isClaimed(id, 0), "nothing changed");
        assertEq(distributor.claimedTotal(id), 0, "nothing changed");
        _claim(id, t, 1);
        vm.warp(DEADLINE);
        distributor.sweep(id);
        assertEq(refund.balance, 4, "the refused amount is swept, not locked");
    }

    /// @notice The bitmap and the claimed total are final before the ether leaves: the paid account's
    ///         re-entrant claim of its own leaf sees it claimed, and sweeping is still too early.
    function test_claim_reentrant_reverts() public {
        Reenterer r = new Reenterer(distributor);
        address[] memory a = new address[](2);
        uint256[] memory x = new uint256[](2);
        (a[0], a[1], x[0], x[1]) = (makeAddr("frank"), address(r), 4, 6);
        PayoutTrees.Tree memory t = PayoutTrees.build(a, x);
        uint256 id = _create(t);
        r.arm(id, 1, 6, t.proof(1));
        _claim(id, t, 1);
        assertEq(r.received(), 6, "paid once");
        assertEq(r.claimRevert(), abi.encodeWithSelector(PayoutDistributorAlreadyClaimed.selector, id, 1));
        assertEq(
            r.sweepRevert(), abi.encodeWithSelector(PayoutDistributorSweepTooEarly.selector, id, DEADLINE, T0)
        );
        assertEq(distributor.claimedTotal(id), 6, "claimed once");
        assertEq(address(distributor).balance, 4, "the other leaf's amount stays");
    }

    // ---------------------------------------------------------------- sweep

    function test_sweep_afterDeadline_succeeds() public {
        PayoutTrees.Tree memory t = _tree3();
        uint256 id = _create(t);
        _claim(id, t, 1);
        vm.warp(DEADLINE);
        vm.expectEmit(address(distributor));
        emit Swept(id, refund, 7 ether);
        vm.prank(relayer);
        distributor.sweep(id);
        assertEq(refund.balance, 7 ether, "the unclaimed rest");
        assertEq(address(distributor).balance, 0, "holds nothing");
        IPayoutDistributor.DistributionView memory d = distributor.distribution(id);
        assertTrue(d.swept, "swept");
        assertEq(d.claimed, 3 ether, "claims still counted");
        vm.expectRevert(abi.encodeWithSelector(PayoutDistributorClaimClosed.selector, id, DEADLINE, DEADLINE));
        _claim(id, t, 0);
    }

    function test_sweep_allClaimed_succeeds() public {
        PayoutTrees.Tree memory t = _tree3();
        uint256 id = _create(t);
        for (uint256 i; i < 3; ++i) {
            _claim(id, t, i);
        }
        vm.warp(DEADLINE + 1);
        vm.expectEmit(address(distributor));
        emit Swept(id, refund, 0);
        distributor.sweep(id);
        assertEq(refund.balance, 0, "nothing to send");
        assertTrue(distributor.distribution(id).swept, "closed");
    }

    function test_sweep_unknown_reverts() public {
        vm.expectRevert(abi.encodeWithSelector(PayoutDistributorUnknown.selector, 1));
        distributor.sweep(1);
    }

    function test_sweep_beforeDeadline_reverts() public {
        uint256 id = _create(_tree3());
        vm.warp(DEADLINE - 1);
        vm.expectRevert(
            abi.encodeWithSelector(
                PayoutDistributorSweepTooEarly.selector, id, DEADLINE, uint256(DEADLINE) - 1
            )
        );
        distributor.sweep(id);
    }

    function test_sweep_twice_reverts() public {
        uint256 id = _create(_tree3());
        vm.warp(DEADLINE);
        distributor.sweep(id);
        vm.expectRevert(abi.encodeWithSelector(PayoutDistributorAlreadySwept.selector, id));
        distributor.sweep(id);
        assertEq(refund.balance, 10 ether, "swept once");
    }

    function test_sweep_refusingRefundTo_reverts() public {
        PayoutTrees.Tree memory t = _tree3();
        address refuser = address(new Refuser());
        vm.prank(creator);
        uint256 id = distributor.createDistribution{value: 10 ether}(t.top(), 3, refuser, DEADLINE);
        vm.warp(DEADLINE);
        vm.expectRevert(abi.encodeWithSelector(PayoutDistributorTransferFailed.selector, refuser, 10 ether));
        distributor.sweep(id);
        assertFalse(distributor.distribution(id).swept, "nothing changed");
        assertEq(address(distributor).balance, 10 ether, "still held");
    }

    // ---------------------------------------------------------------- views

    function test_views_unknown_reverts() public {
        vm.expectRevert(abi.encodeWithSelector(PayoutDistributorUnknown.selector, 1));
        distributor.distribution(1);
        vm.expectRevert(abi.encodeWithSelector(PayoutDistributorUnknown.selector, 1));
        distributor.isClaimed(1, 0);
        vm.expectRevert(abi.encodeWithSelector(PayoutDistributorUnknown.selector, 1));
        distributor.claimedTotal(1);
        assertEq(distributor.distributionCount(), 0, "none");
    }

    /// @notice The bitmap is per distribution and per leaf across word boundaries (leaves 255, 256, 511, 512).
    function test_isClaimed_acrossWords_succeeds() public {
        PayoutTrees.Tree memory t = PayoutTrees.random(7, 600);
        uint256 id = _create(t);
        uint256 other = _create(t);
        uint256[4] memory picks = [uint256(255), 256, 511, 512];
        for (uint256 k; k < 4; ++k) {
            _claim(id, t, picks[k]);
        }
        for (uint256 i; i < 600; ++i) {
            bool picked = i == 255 || i == 256 || i == 511 || i == 512;
            assertEq(distributor.isClaimed(id, i), picked, "only the picked leaves");
            assertFalse(distributor.isClaimed(other, i), "the other distribution is untouched");
        }
    }

    // ---------------------------------------------------------------- fuzz

    /// @notice Random trees of 1 .. 48 leaves, claimed in a random order by random senders: each leaf is
    ///         paid its amount once, the claims add up to the pool, and nothing is left.
    function testFuzz_claim_randomTree_succeeds(uint256 seed, uint256 n) public {
        n = bound(n, 1, 48);
        PayoutTrees.Tree memory t = PayoutTrees.random(seed, n);
        uint256 id = _create(t);
        uint256[] memory order = _permutation(seed, n);
        for (uint256 k; k < n; ++k) {
            uint256 i = order[k];
            vm.prank(address(uint160(uint256(keccak256(abi.encode(seed, "sender", k))))));
            _claim(id, t, i);
            assertEq(t.accounts[i].balance, t.amounts[i], "paid its amount");
        }
        assertEq(distributor.claimedTotal(id), t.total(), "the pool, exactly");
        assertEq(address(distributor).balance, 0, "nothing left");
    }

    /// @notice One mutation of a valid claim (a step's hash or sum, the amount, the account, the index,
    ///         two steps swapped) is refused with the root it folds to, computed by the reference.
    function testFuzz_claim_wrongProof_reverts(
        uint256 seed,
        uint256 n,
        uint256 target,
        uint8 kind,
        uint256 delta
    ) public {
        n = bound(n, 2, 40);
        target = bound(target, 0, n - 1);
        PayoutTrees.Tree memory t = PayoutTrees.random(seed, n);
        uint256 id = _create(t);
        IPayoutDistributor.ProofStep[] memory p = t.proof(target);
        uint256 index = target;
        address account = t.accounts[target];
        uint256 amount = t.amounts[target];
        uint256 k = delta % p.length;
        delta = bound(delta, 1, amount - 1 > 0 ? amount - 1 : 1);
        kind = uint8(bound(kind, 0, 5));
        if (kind == 0) {
            p[k].hash ^= bytes32(uint256(1) << (delta % 256));
        } else if (kind == 1) {
            p[k].sum = p[k].sum >= delta ? p[k].sum - delta : p[k].sum + delta;
        } else if (kind == 2) {
            amount = amount > delta ? amount - delta : amount + delta;
        } else if (kind == 3) {
            account = address(uint160(account) ^ uint160(1 + delta % type(uint160).max));
            if (account == address(0)) account = address(1);
        } else if (kind == 4) {
            index = (target + 1 + delta % (n - 1)) % n;
        } else {
            if (p.length < 2) return;
            uint256 k2 = (k + 1) % p.length;
            (p[k], p[k2]) = (p[k2], p[k]);
            if (p[k].hash == p[k2].hash && p[k].sum == p[k2].sum) return;
        }
        vm.expectRevert(
            abi.encodeWithSelector(
                PayoutDistributorRootMismatch.selector,
                id,
                PayoutTrees.fold(n, index, account, amount, p),
                t.rootOf()
            )
        );
        distributor.claim(id, index, account, amount, p);
    }

    /// @notice Every padding position and beyond is refused, whatever is claimed there.
    function testFuzz_claim_paddingIndex_reverts(uint256 seed, uint256 n, uint256 index, uint256 amount)
        public
    {
        n = bound(n, 1, 40);
        index = bound(index, n, type(uint256).max);
        PayoutTrees.Tree memory t = PayoutTrees.random(seed, n);
        uint256 id = _create(t);
        vm.expectRevert(abi.encodeWithSelector(PayoutDistributorIndexOutOfRange.selector, id, index, n));
        distributor.claim(id, index, t.accounts[0], amount, t.proof(0));
    }

    /// @notice A second claim of any leaf is refused, by anyone.
    function testFuzz_claim_double_reverts(uint256 seed, uint256 n, uint256 target, address sender) public {
        n = bound(n, 1, 40);
        target = bound(target, 0, n - 1);
        PayoutTrees.Tree memory t = PayoutTrees.random(seed, n);
        uint256 id = _create(t);
        _claim(id, t, target);
        vm.expectRevert(abi.encodeWithSelector(PayoutDistributorAlreadyClaimed.selector, id, target));
        vm.prank(sender);
        _claim(id, t, target);
    }

    /// @notice A tree whose sum differs from the escrow by any amount pays no leaf; the escrow is swept whole.
    function testFuzz_createDistribution_escrowMismatch_reverts(uint256 seed, uint256 n, uint256 value)
        public
    {
        n = bound(n, 1, 24);
        PayoutTrees.Tree memory t = PayoutTrees.random(seed, n);
        value = bound(value, 1, type(uint96).max);
        if (value == t.total()) value = t.total() + 1;
        uint256 id = _createWith(t, value);
        bytes32 root = PayoutTrees.root(t.top(), n, value);
        for (uint256 i; i < n; ++i) {
            vm.expectRevert(
                abi.encodeWithSelector(PayoutDistributorRootMismatch.selector, id, _rootOf(t), root)
            );
            _claim(id, t, i);
        }
        vm.warp(DEADLINE);
        distributor.sweep(id);
        assertEq(refund.balance, value, "all of it back");
    }

    function _rootOf(PayoutTrees.Tree memory t) internal pure returns (bytes32) {
        return t.rootOf();
    }

    function _permutation(uint256 seed, uint256 n) internal pure returns (uint256[] memory order) {
        order = new uint256[](n);
        for (uint256 i; i < n; ++i) {
            order[i] = i;
        }
        for (uint256 i = n; i > 1; --i) {
            uint256 j = uint256(keccak256(abi.encode(seed, "perm", i))) % i;
            (order[i - 1], order[j]) = (order[j], order[i - 1]);
        }
    }
}
