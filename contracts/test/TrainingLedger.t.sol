// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {Test} from "forge-std/Test.sol";

import {TrainingLedger} from "../src/TrainingLedger.sol";
import {IPayoutDistributor} from "../src/interfaces/IPayoutDistributor.sol";
import {MerkleLib} from "../src/lib/MerkleLib.sol";
import {MerkleRootMismatch} from "../src/lib/Errors.sol";
import "../src/lib/LedgerErrors.sol";
import {PayoutTrees} from "./utils/PayoutTrees.sol";

/// @notice Claims its leaf again when paid; records whether the re-entry was refused.
contract LedgerReenterer {
    TrainingLedger internal l;
    uint256 internal id;
    uint256 internal index;
    uint256 internal amount;
    IPayoutDistributor.ProofStep[] internal proof;
    bool public reentryRefused;

    function arm(
        TrainingLedger l_,
        uint256 id_,
        uint256 i_,
        uint256 a_,
        IPayoutDistributor.ProofStep[] memory p_
    ) external {
        (l, id, index, amount) = (l_, id_, i_, a_);
        for (uint256 k; k < p_.length; ++k) {
            proof.push(p_[k]);
        }
    }

    receive() external payable {
        try l.claim(id, index, address(this), amount, proof) {}
        catch {
            reentryRefused = true;
        }
    }
}

/// @notice The ledger fixture the ledger tests share: a client, two contributors, bonded builders, two steps.
abstract contract TrainingLedgerFixture is Test {
    using PayoutTrees for PayoutTrees.Tree;

    TrainingLedger internal ledger;
    address internal client = makeAddr("client");
    address internal alice = makeAddr("alice");
    address internal bob = makeAddr("bob");
    address internal builder = makeAddr("builder");
    address internal builder2 = makeAddr("builder2");
    bytes32 internal v0 = keccak256("val0");
    bytes32 internal v1 = keccak256("val1");
    bytes32 internal valRoot;
    uint256 internal constant POOL = 10 ether;
    uint256 internal constant FEE = 1 ether;

    function setUp() public {
        ledger = new TrainingLedger();
        valRoot = MerkleLib.listRoot(2, MerkleLib.nodeHash(_vleaf(1, v0), _vleaf(2, v1)));
        vm.deal(client, 100 ether);
        vm.deal(alice, 10 ether);
        vm.deal(bob, 10 ether);
        vm.deal(builder, 10 ether);
        vm.deal(builder2, 10 ether);
    }

    function _vleaf(uint256 t, bytes32 c) internal pure returns (bytes32) {
        return MerkleLib.leafHash(abi.encodePacked("LVAL", t, c));
    }

    function _params(uint32 quorum) internal view returns (TrainingLedger.Params memory p) {
        p = TrainingLedger.Params({
            genesis: keccak256("model"),
            validationRoot: valRoot,
            steps: 2,
            intervalSteps: 1,
            commitWindow: 100,
            revealWindow: 100,
            maxContributors: 2,
            quorum: quorum,
            settleWindow: 1000,
            claimWindow: 1000,
            contributorBond: 1 ether,
            builderBond: 2 ether,
            builderFee: uint96(FEE)
        });
    }

    function _post(uint32 quorum) internal returns (uint256 id) {
        vm.prank(client);
        id = ledger.postLedger{value: POOL}(_params(quorum));
        vm.prank(alice);
        ledger.bond{value: 1 ether}(id, false);
        vm.prank(bob);
        ledger.bond{value: 1 ether}(id, false);
        vm.prank(builder);
        ledger.bond{value: 2 ether}(id, true);
        vm.prank(builder2);
        ledger.bond{value: 2 ether}(id, true);
    }

    /// Both builders post the same interval roots.
    function _agreeIntervals(uint256 id) internal {
        for (uint256 i; i < 2; ++i) {
            bytes32 r = keccak256(abi.encode("r", i));
            vm.prank(builder);
            ledger.postIntervalRoot(id, i, r);
            vm.prank(builder2);
            ledger.postIntervalRoot(id, i, r);
        }
    }

    /// Both builders post the payout tree `t` (the intervals agreed); time is then the end of the settle window.
    function _agreePayout(uint256 id, PayoutTrees.Tree memory t) internal {
        bytes32 top = t.top();
        uint64 n = uint64(t.count());
        uint256 total = t.total();
        vm.prank(builder);
        ledger.postPayoutRoot(id, top, n, total);
        vm.prank(builder2);
        ledger.postPayoutRoot(id, top, n, total);
        vm.warp(ledger.settleEnd(id));
    }

    function _proof(uint256 t) internal view returns (bytes32[] memory s) {
        s = new bytes32[](1);
        s[0] = t == 1 ? _vleaf(2, v1) : _vleaf(1, v0);
    }

    /// The commit, computed here (not through the contract, so a pending prank is not consumed).
    function _c(uint256 id, uint256 t, address who) internal pure returns (bytes32) {
        return keccak256(
            abi.encode(
                id,
                t,
                who,
                keccak256(abi.encode("b", t, who)),
                keccak256(abi.encode("g", t, who)),
                bytes32("s")
            )
        );
    }

    function _reveal(uint256 id, uint256 t, address who) internal {
        vm.prank(who);
        ledger.reveal(id, t, keccak256(abi.encode("b", t, who)), keccak256(abi.encode("g", t, who)), "s");
    }

    /// Runs both steps with both contributors; leaves time at the ledger's end.
    function _runSteps(uint256 id) internal {
        for (uint256 t = 1; t <= 2; ++t) {
            (uint256 open, uint256 cd,) = ledger.stepWindow(id, t);
            vm.warp(open);
            vm.prank(alice);
            ledger.commit(id, t, _c(id, t, alice));
            vm.prank(bob);
            ledger.commit(id, t, _c(id, t, bob));
            vm.warp(cd);
            bytes32[] memory p = _proof(t);
            vm.prank(client);
            ledger.revealValidation(id, t, t == 1 ? v0 : v1, p);
            _reveal(id, t, alice);
            _reveal(id, t, bob);
        }
        vm.warp(ledger.endTime(id));
    }

    function _tree(address a, address b) internal returns (PayoutTrees.Tree memory) {
        address[] memory acc = new address[](2);
        uint256[] memory x = new uint256[](2);
        (acc[0], acc[1]) = (a, b);
        (x[0], x[1]) = (6 ether, 3 ether);
        return PayoutTrees.build(acc, x);
    }
}

contract TrainingLedgerTest is TrainingLedgerFixture {
    using PayoutTrees for PayoutTrees.Tree;

    function test_commitHash_matchesAbiEncode() public view {
        assertEq(
            ledger.commitHash(
                3, 1, alice, keccak256(abi.encode("b", 1, alice)), keccak256(abi.encode("g", 1, alice)), "s"
            ),
            _c(3, 1, alice)
        );
    }

    function test_fullLedger_paysEveryoneAndConservesFunds() public {
        uint256 id = _post(2);
        _runSteps(id);
        PayoutTrees.Tree memory t = _tree(alice, bob);
        _agreeIntervals(id);
        _agreePayout(id, t);
        vm.prank(builder);
        ledger.claimFee(id);
        vm.prank(builder2);
        ledger.claimFee(id);
        ledger.claim(id, 0, alice, 6 ether, t.proof(0));
        ledger.claim(id, 1, bob, 3 ether, t.proof(1));
        assertEq(address(ledger).balance, 6 ether, "only bonds left");
        vm.prank(alice);
        ledger.withdrawBond(id);
        vm.prank(bob);
        ledger.withdrawBond(id);
        vm.prank(builder);
        ledger.withdrawBond(id);
        vm.prank(builder2);
        ledger.withdrawBond(id);
        assertEq(address(ledger).balance, 0, "nothing locked");
        assertEq(alice.balance, 16 ether);
        assertEq(bob.balance, 13 ether);
        assertEq(builder.balance, 10.5 ether, "half the fee");
        assertEq(builder2.balance, 10.5 ether, "half the fee");
    }

    function test_commitAfterDeadline_refused() public {
        uint256 id = _post(2);
        (, uint256 cd,) = ledger.stepWindow(id, 1);
        vm.warp(cd);
        bytes32 c = _c(id, 1, alice);
        vm.prank(alice);
        vm.expectRevert(abi.encodeWithSelector(LedgerOutsideWindow.selector, cd, cd - 100, cd));
        ledger.commit(id, 1, c);
    }

    function test_stepOutOfRange_refused() public {
        uint256 id = _post(2);
        vm.prank(alice);
        vm.expectRevert(abi.encodeWithSelector(LedgerBadStep.selector, 0, 2));
        ledger.commit(id, 0, bytes32(uint256(1)));
        vm.prank(alice);
        vm.expectRevert(abi.encodeWithSelector(LedgerBadStep.selector, 3, 2));
        ledger.commit(id, 3, bytes32(uint256(1)));
    }

    function test_unbondedCommit_refused() public {
        uint256 id = _post(2);
        address eve = makeAddr("eve");
        vm.prank(eve);
        vm.expectRevert(abi.encodeWithSelector(LedgerNotBonded.selector, eve));
        ledger.commit(id, 1, bytes32(uint256(1)));
    }

    function test_stepFull_refused() public {
        uint256 id = _post(2);
        address carol = makeAddr("carol");
        vm.deal(carol, 1 ether);
        vm.prank(carol);
        ledger.bond{value: 1 ether}(id, false);
        vm.prank(alice);
        ledger.commit(id, 1, bytes32(uint256(1)));
        vm.prank(bob);
        ledger.commit(id, 1, bytes32(uint256(2)));
        vm.prank(carol);
        vm.expectRevert(abi.encodeWithSelector(LedgerStepFull.selector, 1, 2));
        ledger.commit(id, 1, bytes32(uint256(3)));
    }

    function test_frontRunReveal_copiesNothing() public {
        uint256 id = _post(2);
        vm.prank(alice);
        ledger.commit(id, 1, _c(id, 1, alice));
        vm.prank(bob);
        ledger.commit(id, 1, bytes32(uint256(7)));
        (, uint256 cd,) = ledger.stepWindow(id, 1);
        vm.warp(cd);
        bytes32[] memory vp = _proof(1);
        vm.prank(client);
        ledger.revealValidation(id, 1, v0, vp);
        // Bob replays Alice's opening from the mempool: the commit binds Alice's address.
        vm.prank(bob);
        vm.expectRevert(abi.encodeWithSelector(LedgerRevealMismatch.selector, 1, bob));
        ledger.reveal(id, 1, keccak256(abi.encode("b", 1, alice)), keccak256(abi.encode("g", 1, alice)), "s");
        _reveal(id, 1, alice);
        assertTrue(ledger.revealed(id, 1, alice));
        assertFalse(ledger.revealed(id, 1, bob));
    }

    function test_reveal_emitsTheSalt() public {
        uint256 id = _post(2);
        vm.prank(alice);
        ledger.commit(id, 1, _c(id, 1, alice));
        (, uint256 cd,) = ledger.stepWindow(id, 1);
        vm.warp(cd);
        bytes32[] memory vp = _proof(1);
        vm.prank(client);
        ledger.revealValidation(id, 1, v0, vp);
        vm.expectEmit(true, true, true, true, address(ledger));
        emit TrainingLedger.Revealed(
            id, 1, alice, keccak256(abi.encode("b", 1, alice)), keccak256(abi.encode("g", 1, alice)), "s"
        );
        _reveal(id, 1, alice);
    }

    function test_revealBeforeValidation_refused() public {
        uint256 id = _post(2);
        vm.prank(alice);
        ledger.commit(id, 1, _c(id, 1, alice));
        (, uint256 cd,) = ledger.stepWindow(id, 1);
        vm.warp(cd);
        vm.prank(alice);
        vm.expectRevert(abi.encodeWithSelector(LedgerValidationNotRevealed.selector, 1));
        ledger.reveal(id, 1, keccak256(abi.encode("b", 1, alice)), keccak256(abi.encode("g", 1, alice)), "s");
    }

    function test_lateReveal_refused() public {
        uint256 id = _post(2);
        vm.prank(alice);
        ledger.commit(id, 1, _c(id, 1, alice));
        (, uint256 cd, uint256 rd) = ledger.stepWindow(id, 1);
        vm.warp(cd);
        bytes32[] memory vp = _proof(1);
        vm.prank(client);
        ledger.revealValidation(id, 1, v0, vp);
        vm.warp(rd);
        vm.prank(alice);
        vm.expectRevert(abi.encodeWithSelector(LedgerOutsideWindow.selector, rd, cd, rd));
        ledger.reveal(id, 1, keccak256(abi.encode("b", 1, alice)), keccak256(abi.encode("g", 1, alice)), "s");
    }

    function test_validationWrongProof_refused() public {
        uint256 id = _post(2);
        (, uint256 cd,) = ledger.stepWindow(id, 1);
        vm.warp(cd);
        bytes32[] memory p = _proof(1);
        vm.prank(client);
        vm.expectPartialRevert(MerkleRootMismatch.selector);
        ledger.revealValidation(id, 1, v1, p);
        vm.prank(alice);
        vm.expectRevert(abi.encodeWithSelector(LedgerNotClient.selector, alice));
        ledger.revealValidation(id, 1, v0, p);
    }

    function test_validationBeforeCommitDeadline_refused() public {
        uint256 id = _post(2);
        bytes32[] memory p = _proof(1);
        vm.prank(client);
        vm.expectPartialRevert(LedgerOutsideWindow.selector);
        ledger.revealValidation(id, 1, v0, p);
    }

    function test_clientNeverReveals_bondsAndPoolReturn() public {
        uint256 id = _post(2);
        vm.prank(alice);
        ledger.commit(id, 1, _c(id, 1, alice));
        vm.warp(ledger.endTime(id));
        vm.prank(builder);
        vm.expectRevert(abi.encodeWithSelector(LedgerIntervalsIncomplete.selector, id));
        ledger.postPayoutRoot(id, bytes32(uint256(1)), 1, 9 ether);
        vm.prank(alice);
        ledger.withdrawBond(id);
        assertEq(alice.balance, 10 ether, "bond back");
        vm.expectRevert(abi.encodeWithSelector(LedgerNotOver.selector, id));
        ledger.refund(id);
        vm.warp(ledger.endTime(id) + 1000);
        ledger.refund(id);
        assertEq(client.balance, 100 ether, "pool back");
        vm.expectRevert(abi.encodeWithSelector(LedgerNothingDue.selector, id, client));
        ledger.refund(id);
    }

    function test_disagreement_freezesPayout_thenRefund() public {
        uint256 id = _post(2);
        _runSteps(id);
        vm.prank(builder);
        ledger.postIntervalRoot(id, 0, keccak256("r0"));
        vm.prank(builder2);
        ledger.postIntervalRoot(id, 0, keccak256("other"));
        assertTrue(ledger.ledger(id).frozen);
        vm.prank(builder);
        ledger.postIntervalRoot(id, 1, keccak256("r1"));
        vm.prank(builder2);
        ledger.postIntervalRoot(id, 1, keccak256("r1"));
        PayoutTrees.Tree memory t = _tree(alice, bob);
        bytes32 top = t.top();
        vm.prank(builder);
        vm.expectRevert(abi.encodeWithSelector(LedgerFrozen.selector, id));
        ledger.postPayoutRoot(id, top, 2, 9 ether);
        vm.expectRevert(abi.encodeWithSelector(LedgerNoPayout.selector, id));
        ledger.claim(id, 0, alice, 6 ether, t.proof(0));
        vm.warp(ledger.endTime(id) + 1000);
        ledger.refund(id);
        assertEq(client.balance, 100 ether);
        vm.prank(builder2);
        ledger.withdrawBond(id);
        assertEq(address(ledger).balance, 4 ether, "only the other bonds (alice, bob, builder) remain");
    }

    function test_quorumTwo_needsBothBuilders() public {
        uint256 id = _post(2);
        _runSteps(id);
        vm.startPrank(builder);
        ledger.postIntervalRoot(id, 0, keccak256("r0"));
        ledger.postIntervalRoot(id, 1, keccak256("r1"));
        vm.expectRevert(abi.encodeWithSelector(LedgerAlreadyPosted.selector, 1, builder));
        ledger.postIntervalRoot(id, 1, keccak256("r1"));
        vm.expectRevert(abi.encodeWithSelector(LedgerIntervalsIncomplete.selector, id));
        ledger.postPayoutRoot(id, bytes32(uint256(1)), 2, 9 ether);
        vm.stopPrank();
        vm.startPrank(builder2);
        ledger.postIntervalRoot(id, 0, keccak256("r0"));
        ledger.postIntervalRoot(id, 1, keccak256("r1"));
        ledger.postPayoutRoot(id, bytes32(uint256(1)), 2, 9 ether);
        vm.stopPrank();
        assertEq(ledger.ledger(id).payoutRoot, 0, "one vote is not the quorum");
        vm.prank(builder);
        ledger.postPayoutRoot(id, bytes32(uint256(1)), 2, 9 ether);
        assertTrue(ledger.ledger(id).payoutRoot != 0, "agreed");
    }

    function test_payoutTotalNotPoolMinusFee_refused() public {
        uint256 id = _post(2);
        _runSteps(id);
        _agreeIntervals(id);
        vm.startPrank(builder);
        vm.expectRevert(abi.encodeWithSelector(LedgerPayoutTotal.selector, 10 ether, 9 ether));
        ledger.postPayoutRoot(id, bytes32(uint256(1)), 2, 10 ether);
        vm.stopPrank();
    }

    function test_duplicateClaim_refused() public {
        uint256 id = _post(2);
        _runSteps(id);
        PayoutTrees.Tree memory t = _tree(alice, bob);
        _agreeIntervals(id);
        _agreePayout(id, t);
        ledger.claim(id, 0, alice, 6 ether, t.proof(0));
        IPayoutDistributor.ProofStep[] memory p = t.proof(0);
        vm.expectRevert(abi.encodeWithSelector(LedgerBadClaim.selector, id, 0));
        ledger.claim(id, 0, alice, 6 ether, p);
        p = t.proof(1);
        vm.expectPartialRevert(LedgerPayoutMismatch.selector);
        ledger.claim(id, 1, bob, 4 ether, p);
    }

    function test_reentrantClaim_refused() public {
        uint256 id = _post(2);
        _runSteps(id);
        LedgerReenterer r = new LedgerReenterer();
        PayoutTrees.Tree memory t = _tree(address(r), bob);
        _agreeIntervals(id);
        _agreePayout(id, t);
        r.arm(ledger, id, 0, 6 ether, t.proof(0));
        ledger.claim(id, 0, address(r), 6 ether, t.proof(0));
        assertTrue(r.reentryRefused());
        assertEq(address(r).balance, 6 ether, "paid once");
    }

    function test_badParams_refused() public {
        TrainingLedger.Params memory p = _params(2);
        vm.startPrank(client);
        vm.expectRevert(abi.encodeWithSelector(LedgerBadParam.selector, "pool"));
        ledger.postLedger(p);
        p.quorum = 1; // one builder would decide every root alone
        vm.expectRevert(abi.encodeWithSelector(LedgerBadParam.selector, "quorum"));
        ledger.postLedger{value: 1 ether}(p);
        p.quorum = 2;
        p.intervalSteps = 3;
        vm.expectRevert(abi.encodeWithSelector(LedgerBadParam.selector, "intervalSteps"));
        ledger.postLedger{value: 1 ether}(p);
        p = _params(2);
        p.builderFee = 2 ether;
        vm.expectRevert(abi.encodeWithSelector(LedgerBadParam.selector, "builderFee"));
        ledger.postLedger{value: 1 ether}(p);
        vm.stopPrank();
    }

    function test_bondRules() public {
        uint256 id = _post(2);
        vm.prank(alice);
        vm.expectRevert(abi.encodeWithSelector(LedgerAlreadyBonded.selector, alice));
        ledger.bond{value: 1 ether}(id, false);
        address eve = makeAddr("eve");
        vm.deal(eve, 1 ether);
        vm.prank(eve);
        vm.expectRevert(abi.encodeWithSelector(LedgerBadBond.selector, 0.5 ether, 1 ether));
        ledger.bond{value: 0.5 ether}(id, false);
        vm.prank(alice);
        vm.expectRevert(abi.encodeWithSelector(LedgerNotOver.selector, id));
        ledger.withdrawBond(id);
    }

    function testFuzz_payoutTotalMustMatch(uint256 total) public {
        uint256 id = _post(2);
        _runSteps(id);
        _agreeIntervals(id);
        vm.startPrank(builder);
        if (total != 9 ether) {
            vm.expectRevert(abi.encodeWithSelector(LedgerPayoutTotal.selector, total, 9 ether));
        }
        ledger.postPayoutRoot(id, bytes32(uint256(1)), 2, total);
        vm.stopPrank();
    }

    function test_intervalRules_orderZeroRootWithdrawnBuilder() public {
        uint256 id = _post(2);
        _runSteps(id);
        vm.startPrank(builder);
        vm.expectRevert(abi.encodeWithSelector(LedgerIntervalOrder.selector, 1, 0));
        ledger.postIntervalRoot(id, 1, keccak256("r1"));
        vm.expectRevert(abi.encodeWithSelector(LedgerBadParam.selector, "root"));
        ledger.postIntervalRoot(id, 0, bytes32(0));
        ledger.postIntervalRoot(id, 0, keccak256("r0"));
        assertTrue(ledger.posted(id, 0, builder));
        assertFalse(ledger.posted(id, 1, builder));
        vm.expectRevert(abi.encodeWithSelector(LedgerAlreadyPosted.selector, 0, builder));
        ledger.postIntervalRoot(id, 0, keccak256("r0"));
        vm.stopPrank();
        // A builder who took its bond back posts no more (roots or payout).
        vm.startPrank(builder2);
        ledger.withdrawBond(id);
        assertTrue(ledger.isBuilder(id, builder2));
        assertEq(ledger.bondOf(id, builder2), 0);
        vm.expectRevert(abi.encodeWithSelector(LedgerNotBonded.selector, builder2));
        ledger.postIntervalRoot(id, 0, keccak256("r0"));
        vm.expectRevert(abi.encodeWithSelector(LedgerNotBonded.selector, builder2));
        ledger.postPayoutRoot(id, bytes32(uint256(1)), 2, 9 ether);
        vm.stopPrank();
    }

    function test_quorumBounds_refused() public {
        TrainingLedger.Params memory p = _params(2);
        p.quorum = uint32(ledger.MAX_QUORUM() + 1);
        vm.prank(client);
        vm.expectRevert(abi.encodeWithSelector(LedgerBadParam.selector, "quorum"));
        ledger.postLedger{value: 1 ether}(p);
        p.quorum = 0;
        vm.prank(client);
        vm.expectRevert(abi.encodeWithSelector(LedgerBadParam.selector, "quorum"));
        ledger.postLedger{value: 1 ether}(p);
    }

    function test_views_claimedPaidOutFeeDue() public {
        uint256 id = _post(2);
        _runSteps(id);
        PayoutTrees.Tree memory t = _tree(alice, bob);
        assertFalse(ledger.claimed(id, 0));
        assertEq(ledger.paidOut(id), 0);
        _agreeIntervals(id);
        _agreePayout(id, t);
        assertTrue(ledger.payoutVoted(id, builder));
        assertEq(ledger.feeDue(id, builder), 0.5 ether);
        assertEq(ledger.settleEnd(id), ledger.endTime(id) + 1000);
        ledger.claim(id, 1, bob, 3 ether, t.proof(1));
        assertTrue(ledger.claimed(id, 1));
        assertFalse(ledger.claimed(id, 0));
        assertFalse(ledger.claimed(id, 2), "out of range");
        vm.prank(builder2);
        ledger.claimFee(id);
        assertEq(ledger.feeDue(id, builder2), 0);
        assertEq(ledger.paidOut(id), 3.5 ether);
        TrainingLedger.LedgerView memory l = ledger.ledger(id);
        assertEq(l.payoutVotes, 2);
        assertEq(l.payoutLeaves, 2);
        assertEq(l.intervalsAgreed, 2);
        assertEq(l.feesPaid, 0.5 ether);
        assertEq(l.payoutRoot, l.payoutCandidate);
        assertEq(l.paid, 3.5 ether);
        assertEq(l.settleEnd, ledger.endTime(id) + 1000);
        vm.warp(ledger.settleEnd(id) + 1000);
        ledger.refund(id);
        assertEq(ledger.paidOut(id), POOL);
        assertEq(client.balance, 100 ether - POOL + 6.5 ether, "alice's leaf and builder's fee part");
    }
}
