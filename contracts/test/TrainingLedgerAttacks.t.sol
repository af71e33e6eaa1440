// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {TrainingLedger} from "../src/TrainingLedger.sol";
import {IPayoutDistributor} from "../src/interfaces/IPayoutDistributor.sol";
import "../src/lib/LedgerErrors.sol";
import {TrainingLedgerFixture} from "./TrainingLedger.t.sol";
import {PayoutTrees} from "./utils/PayoutTrees.sol";

/// @notice Attacks on the training ledger's payout (docs/ledger.md section 8), each played to the end.
contract TrainingLedgerAttacksTest is TrainingLedgerFixture {
    using PayoutTrees for PayoutTrees.Tree;

    address internal eve = makeAddr("eve");
    address internal eve2 = makeAddr("eve2");

    /// A quorum-2 ledger with two honest builders and two bonded attackers `eve`, `eve2`; both steps run and the two
    /// honest builders agree both interval roots.
    function _agreedLedger() internal returns (uint256 id) {
        id = _post(2);
        vm.deal(eve, 2 ether);
        vm.prank(eve);
        ledger.bond{value: 2 ether}(id, true);
        vm.deal(eve2, 2 ether);
        vm.prank(eve2);
        ledger.bond{value: 2 ether}(id, true);
        _runSteps(id);
        _agreeIntervals(id);
    }

    function _single(address a, uint256 x) internal returns (PayoutTrees.Tree memory) {
        address[] memory acc = new address[](1);
        uint256[] memory amt = new uint256[](1);
        (acc[0], amt[0]) = (a, x);
        return PayoutTrees.build(acc, amt);
    }

    /// A lone bonded attacker posts a payout root whose single leaf pays itself pool - fee, and claims it
    /// (and the fee). Against the first-come payout root this paid eve the whole pool; with the payout quorum
    /// eve's post is one vote, claims stay closed, the honest builder's different root freezes the ledger and
    /// the pool goes back to the client.
    function test_attack_lonePayoutPoster_paysItselfThePool_fails() public {
        uint256 id = _agreedLedger();
        PayoutTrees.Tree memory evil = _single(eve, 9 ether);
        vm.prank(eve);
        ledger.postPayoutRoot(id, evil.top(), 1, 9 ether);
        IPayoutDistributor.ProofStep[] memory none = evil.proof(0);
        vm.warp(ledger.endTime(id) + 1000); // even once the settle window is over
        vm.startPrank(eve);
        try ledger.claim(id, 0, eve, 9 ether, none) {} catch {}
        try ledger.claimFee(id) {} catch {}
        vm.stopPrank();
        assertEq(eve.balance, 0, "the attacker got nothing");
        vm.expectRevert(abi.encodeWithSelector(LedgerNoPayout.selector, id));
        ledger.claim(id, 0, eve, 9 ether, none);
        ledger.refund(id);
        assertEq(client.balance, 100 ether, "the pool is back with the client");
    }

    /// The same attack with an honest builder posting its (different) payout root within the settle window:
    /// the ledger freezes for good, nobody can claim, and `refund` returns the whole pool.
    function test_attack_lonePayoutPoster_honestRootFreezes_refund() public {
        uint256 id = _agreedLedger();
        PayoutTrees.Tree memory evil = _single(eve, 9 ether);
        PayoutTrees.Tree memory honest = _tree(alice, bob);
        vm.prank(eve);
        ledger.postPayoutRoot(id, evil.top(), 1, 9 ether);
        vm.prank(builder);
        try ledger.postPayoutRoot(id, honest.top(), 2, 9 ether) {} catch {}
        vm.warp(ledger.endTime(id) + 1000);
        IPayoutDistributor.ProofStep[] memory none = evil.proof(0);
        vm.startPrank(eve);
        try ledger.claim(id, 0, eve, 9 ether, none) {} catch {}
        try ledger.claimFee(id) {} catch {}
        vm.stopPrank();
        assertEq(eve.balance, 0, "the attacker got nothing");
        assertTrue(ledger.ledger(id).frozen, "frozen");
        ledger.refund(id);
        assertEq(client.balance, 100 ether, "the pool is back with the client");
        vm.prank(eve);
        ledger.withdrawBond(id);
        assertEq(eve.balance, 2 ether, "only its bond back");
    }

    /// The attack with `quorum` sybils: eve and eve2 (anyone may bond) post the same self-paying root first,
    /// so it reaches the quorum. Claims stay closed until the settle window is over, and the honest builder's
    /// different root, posted within that window, freezes the ledger: nothing is paid, the pool returns.
    function test_attack_sybilQuorum_cannotClaimBeforeSettle_honestRootFreezes() public {
        uint256 id = _agreedLedger();
        PayoutTrees.Tree memory evil = _single(eve, 9 ether);
        bytes32 top = evil.top();
        vm.prank(eve);
        ledger.postPayoutRoot(id, top, 1, 9 ether);
        vm.prank(eve2);
        ledger.postPayoutRoot(id, top, 1, 9 ether);
        assertTrue(ledger.ledger(id).payoutRoot != 0, "the sybils reached the quorum");
        IPayoutDistributor.ProofStep[] memory none = evil.proof(0);
        uint256 opens = ledger.settleEnd(id);
        vm.expectRevert(abi.encodeWithSelector(LedgerClaimsNotOpen.selector, id, opens));
        ledger.claim(id, 0, eve, 9 ether, none);
        vm.prank(eve);
        vm.expectRevert(abi.encodeWithSelector(LedgerClaimsNotOpen.selector, id, opens));
        ledger.claimFee(id);
        PayoutTrees.Tree memory honest = _tree(alice, bob);
        vm.warp(opens - 1);
        vm.prank(builder);
        ledger.postPayoutRoot(id, honest.top(), 2, 9 ether);
        assertTrue(ledger.ledger(id).frozen, "the honest builder's objection freezes");
        vm.warp(opens);
        vm.expectRevert(abi.encodeWithSelector(LedgerFrozen.selector, id));
        ledger.claim(id, 0, eve, 9 ether, none);
        vm.prank(eve);
        vm.expectRevert(abi.encodeWithSelector(LedgerFrozen.selector, id));
        ledger.claimFee(id);
        ledger.refund(id);
        assertEq(client.balance, 100 ether, "the pool is back with the client");
        assertEq(eve.balance + eve2.balance, 0, "the sybils got nothing (their bonds still held)");
    }

    function test_secondPayoutPostBySameBuilder_refused() public {
        uint256 id = _agreedLedger();
        PayoutTrees.Tree memory t = _tree(alice, bob);
        bytes32 top = t.top();
        vm.startPrank(builder);
        ledger.postPayoutRoot(id, top, 2, 9 ether);
        vm.expectRevert(abi.encodeWithSelector(LedgerPayoutAlreadyVoted.selector, id, builder));
        ledger.postPayoutRoot(id, top, 2, 9 ether);
        // nor may it change its vote (which would otherwise freeze the ledger by itself twice over)
        vm.expectRevert(abi.encodeWithSelector(LedgerPayoutAlreadyVoted.selector, id, builder));
        ledger.postPayoutRoot(id, bytes32(uint256(7)), 2, 9 ether);
        vm.stopPrank();
        assertEq(ledger.ledger(id).payoutVotes, 1);
        assertEq(ledger.ledger(id).payoutRoot, 0, "one builder's two posts are not a quorum");
    }

    function test_payoutPostByNonBuilder_refused() public {
        uint256 id = _agreedLedger();
        PayoutTrees.Tree memory t = _tree(alice, bob);
        bytes32 top = t.top();
        address mallory = makeAddr("mallory");
        vm.prank(mallory);
        vm.expectRevert(abi.encodeWithSelector(LedgerNotBonded.selector, mallory));
        ledger.postPayoutRoot(id, top, 2, 9 ether);
        vm.prank(alice); // a bonded contributor is not a builder
        vm.expectRevert(abi.encodeWithSelector(LedgerNotBonded.selector, alice));
        ledger.postPayoutRoot(id, top, 2, 9 ether);
    }

    /// Chosen rule: a different post after the quorum but within the settle window still freezes (claims have
    /// not opened, so nothing was paid). Refusing it instead would let `quorum` sybils who post first win
    /// the pool; the cost is that a late saboteur can freeze (the open attack of docs/ledger.md section 8).
    function test_differingPostAfterAgreement_freezes_poolRefunded() public {
        uint256 id = _agreedLedger();
        PayoutTrees.Tree memory t = _tree(alice, bob);
        _agreePayout(id, t);
        vm.warp(ledger.settleEnd(id) - 1);
        vm.prank(eve);
        ledger.postPayoutRoot(id, bytes32(uint256(7)), 2, 9 ether);
        assertTrue(ledger.ledger(id).frozen);
        vm.warp(ledger.settleEnd(id));
        IPayoutDistributor.ProofStep[] memory p = t.proof(0);
        vm.expectRevert(abi.encodeWithSelector(LedgerFrozen.selector, id));
        ledger.claim(id, 0, alice, 6 ether, p);
        ledger.refund(id);
        assertEq(client.balance, 100 ether, "frozen: the whole pool returns at the settle end");
    }

    /// After the settle window nobody can post, so an agreed payout is final from then on.
    function test_postAfterSettle_refused_agreedPayoutFinal() public {
        uint256 id = _agreedLedger();
        PayoutTrees.Tree memory t = _tree(alice, bob);
        _agreePayout(id, t);
        uint256 until = ledger.settleEnd(id);
        vm.prank(eve);
        vm.expectRevert(abi.encodeWithSelector(LedgerOutsideWindow.selector, until, 0, until));
        ledger.postPayoutRoot(id, bytes32(uint256(7)), 2, 9 ether);
        vm.prank(eve);
        vm.expectPartialRevert(LedgerOutsideWindow.selector);
        ledger.postIntervalRoot(id, 0, bytes32(uint256(7)));
        ledger.claim(id, 0, alice, 6 ether, t.proof(0));
        assertEq(alice.balance, 15 ether);
    }

    /// An interval disagreement after the payout quorum freezes the claims too.
    function test_intervalDisagreementAfterPayoutQuorum_freezesClaims() public {
        uint256 id = _agreedLedger();
        PayoutTrees.Tree memory t = _tree(alice, bob);
        _agreePayout(id, t);
        vm.warp(ledger.settleEnd(id) - 1);
        vm.prank(eve);
        ledger.postIntervalRoot(id, 0, bytes32(uint256(7)));
        vm.warp(ledger.settleEnd(id));
        IPayoutDistributor.ProofStep[] memory p = t.proof(0);
        vm.expectRevert(abi.encodeWithSelector(LedgerFrozen.selector, id));
        ledger.claim(id, 0, alice, 6 ether, p);
    }

    function test_feeRules() public {
        uint256 id = _agreedLedger();
        PayoutTrees.Tree memory t = _tree(alice, bob);
        bytes32 top = t.top();
        vm.prank(builder);
        ledger.postPayoutRoot(id, top, 2, 9 ether);
        vm.prank(builder);
        vm.expectRevert(abi.encodeWithSelector(LedgerNoPayout.selector, id));
        ledger.claimFee(id);
        vm.prank(builder2);
        ledger.postPayoutRoot(id, top, 2, 9 ether);
        vm.prank(eve); // a third, equal post after the quorum: recorded, no fee
        ledger.postPayoutRoot(id, top, 2, 9 ether);
        assertEq(ledger.ledger(id).payoutVotes, 3);
        vm.warp(ledger.settleEnd(id));
        vm.prank(builder);
        ledger.claimFee(id);
        vm.prank(builder);
        vm.expectRevert(abi.encodeWithSelector(LedgerNothingDue.selector, id, builder));
        ledger.claimFee(id);
        vm.prank(eve);
        vm.expectRevert(abi.encodeWithSelector(LedgerNothingDue.selector, id, eve));
        ledger.claimFee(id);
        assertEq(builder.balance, 8.5 ether, "half the fee");
        assertEq(ledger.feeDue(id, builder2), 0.5 ether);
    }

    /// Quorum 3 and a fee not divisible by 3: equal parts, the remainder to the first agreeing poster.
    function test_feeSplit_remainderToFirst() public {
        TrainingLedger.Params memory p = _params(3);
        p.builderFee = 1 ether + 2;
        vm.prank(client);
        uint256 id = ledger.postLedger{value: POOL}(p);
        vm.deal(eve, 2 ether);
        address[3] memory b = [builder, builder2, eve];
        for (uint256 k; k < 3; ++k) {
            vm.prank(b[k]);
            ledger.bond{value: 2 ether}(id, true);
        }
        vm.warp(ledger.endTime(id));
        for (uint256 i; i < 2; ++i) {
            for (uint256 k; k < 3; ++k) {
                vm.prank(b[k]);
                ledger.postIntervalRoot(id, i, keccak256(abi.encode("r", i)));
            }
        }
        uint256 total = POOL - p.builderFee;
        PayoutTrees.Tree memory t = _single(alice, total);
        bytes32 top = t.top();
        for (uint256 k; k < 3; ++k) {
            vm.prank(b[k]);
            ledger.postPayoutRoot(id, top, 1, total);
        }
        uint256 share = (1 ether + 2) / 3;
        assertEq(ledger.feeDue(id, builder), share + (1 ether + 2) % 3);
        assertEq(ledger.feeDue(id, builder2), share);
        assertEq(ledger.feeDue(id, eve), share);
        vm.warp(ledger.settleEnd(id));
        uint256 paid;
        for (uint256 k; k < 3; ++k) {
            uint256 before = b[k].balance;
            vm.prank(b[k]);
            ledger.claimFee(id);
            paid += b[k].balance - before;
        }
        assertEq(paid, p.builderFee, "the parts add up to the fee");
        ledger.claim(id, 0, alice, total, t.proof(0));
        assertEq(address(ledger).balance, 6 ether, "only bonds left");
    }

    /// Agreed payout, one leaf claimed, one fee part claimed: after the claim window the refund returns the
    /// rest (the other leaf and fee part), and nothing can be claimed after it.
    function test_refundAfterClaimWindow_conservesFunds() public {
        uint256 id = _agreedLedger();
        PayoutTrees.Tree memory t = _tree(alice, bob);
        _agreePayout(id, t);
        uint256 start = address(ledger).balance; // pool + 5 bonds
        ledger.claim(id, 0, alice, 6 ether, t.proof(0));
        vm.prank(builder);
        ledger.claimFee(id);
        vm.expectRevert(abi.encodeWithSelector(LedgerNotOver.selector, id));
        ledger.refund(id);
        vm.warp(ledger.settleEnd(id) + 1000);
        ledger.refund(id);
        assertEq(client.balance, 90 ether + 3.5 ether, "bob's leaf and builder2's fee part");
        IPayoutDistributor.ProofStep[] memory p = t.proof(1);
        vm.expectRevert(abi.encodeWithSelector(LedgerNoPayout.selector, id));
        ledger.claim(id, 1, bob, 3 ether, p);
        vm.prank(builder2);
        vm.expectRevert(abi.encodeWithSelector(LedgerNoPayout.selector, id));
        ledger.claimFee(id);
        assertEq(address(ledger).balance, start - 10 ether, "only the bonds left");
    }
}
