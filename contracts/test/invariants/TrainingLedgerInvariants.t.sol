// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {Test} from "forge-std/Test.sol";

import {TrainingLedger} from "../../src/TrainingLedger.sol";
import {MerkleLib} from "../../src/lib/MerkleLib.sol";
import {PayoutTrees} from "../utils/PayoutTrees.sol";

/// @notice Drives one ledger whose intervals are agreed: random payout posts by its three builders (the honest
///         tree, or a self-paying one for builder 2), claims, fee claims, bond withdrawals, refunds and time.
contract LedgerHandler is Test {
    using PayoutTrees for PayoutTrees.Tree;

    TrainingLedger public ledger;
    uint256 public id;
    PayoutTrees.Tree internal tree;
    address[3] public people;
    PayoutTrees.Tree internal evil;
    address[3] public builders;
    uint256 public out; // every wei that left the contract

    constructor(
        TrainingLedger l,
        uint256 id_,
        PayoutTrees.Tree memory t,
        PayoutTrees.Tree memory e,
        address[3] memory p,
        address[3] memory b
    ) {
        (ledger, id) = (l, id_);
        tree = t;
        evil = e;
        people = p;
        builders = b;
    }

    /// Builder `who % 3` posts the honest tree; builder 2 may post the self-paying one instead.
    function postPayout(uint256 who, bool bad) external {
        uint256 k = who % 3;
        PayoutTrees.Tree memory t = bad && k == 2 ? evil : tree;
        bytes32 top = t.top();
        vm.prank(builders[k]);
        try ledger.postPayoutRoot(id, top, uint64(t.count()), 9 ether) {} catch {}
    }

    function claim(uint256 i) external {
        i = bound(i, 0, 2);
        try ledger.claim(id, i, tree.accounts[i], tree.amounts[i], tree.proof(i)) {
            out += tree.amounts[i];
        } catch {}
        try ledger.claim(id, 0, evil.accounts[0], evil.amounts[0], evil.proof(0)) {
            out += evil.amounts[0];
        } catch {}
    }

    function claimFee(uint256 who) external {
        address b = builders[who % 3];
        uint256 before = b.balance;
        vm.prank(b);
        try ledger.claimFee(id) {
            out += b.balance - before;
        } catch {}
    }

    function withdraw(uint256 who) external {
        address a = who % 6 >= 3 ? builders[who % 3] : people[who % 3];
        uint256 b = ledger.bondOf(id, a);
        vm.prank(a);
        try ledger.withdrawBond(id) {
            out += b;
        } catch {}
    }

    function refund() external {
        uint256 before = address(ledger).balance;
        try ledger.refund(id) {
            out += before - address(ledger).balance;
        } catch {}
    }

    function warp(uint256 dt) external {
        vm.warp(block.timestamp + bound(dt, 0, 800));
    }
}

contract TrainingLedgerInvariants is Test {
    using PayoutTrees for PayoutTrees.Tree;

    TrainingLedger internal ledger;
    LedgerHandler internal handler;
    uint256 internal id;
    address[3] internal people;
    address[3] internal builders;
    uint256 internal constant IN = 10 ether + 3 ether + 6 ether; // pool + three contributor bonds + builder bonds

    function setUp() public {
        ledger = new TrainingLedger();
        people = [makeAddr("p0"), makeAddr("p1"), makeAddr("p2")];
        builders = [makeAddr("b0"), makeAddr("b1"), makeAddr("b2")];
        bytes32 vroot =
            MerkleLib.listRoot(1, MerkleLib.leafHash(abi.encodePacked("LVAL", uint256(1), bytes32("v"))));
        TrainingLedger.Params memory p = TrainingLedger.Params({
            genesis: keccak256("model"),
            validationRoot: vroot,
            steps: 1,
            intervalSteps: 1,
            commitWindow: 100,
            revealWindow: 100,
            maxContributors: 3,
            quorum: 2,
            settleWindow: 1000,
            claimWindow: 1000,
            contributorBond: 1 ether,
            builderBond: 2 ether,
            builderFee: 1 ether
        });
        id = ledger.postLedger{value: 10 ether}(p);
        for (uint256 k; k < 3; ++k) {
            vm.deal(people[k], 1 ether);
            vm.prank(people[k]);
            ledger.bond{value: 1 ether}(id, false);
        }
        for (uint256 k; k < 3; ++k) {
            vm.deal(builders[k], 2 ether);
            vm.prank(builders[k]);
            ledger.bond{value: 2 ether}(id, true);
        }
        vm.warp(ledger.endTime(id));
        for (uint256 k; k < 2; ++k) {
            vm.prank(builders[k]);
            ledger.postIntervalRoot(id, 0, keccak256("r0"));
        }
        address[] memory a = new address[](3);
        uint256[] memory x = new uint256[](3);
        (a[0], a[1], a[2]) = (people[0], people[1], people[2]);
        (x[0], x[1], x[2]) = (4 ether, 3 ether, 2 ether);
        PayoutTrees.Tree memory t = PayoutTrees.build(a, x);
        address[] memory ea = new address[](1);
        uint256[] memory ex = new uint256[](1);
        (ea[0], ex[0]) = (builders[2], 9 ether);
        PayoutTrees.Tree memory e = PayoutTrees.build(ea, ex);
        handler = new LedgerHandler(ledger, id, t, e, people, builders);
        targetContract(address(handler));
    }

    /// Funds conservation: balance == pool + bonds - paid out.
    function invariant_conservation() public view {
        assertEq(address(ledger).balance, IN - handler.out());
    }

    /// No double claim: nobody receives more than their leaf plus their bond.
    function invariant_noDoubleClaim() public view {
        assertLe(people[0].balance, 5 ether);
        assertLe(people[1].balance, 4 ether);
        assertLe(people[2].balance, 3 ether);
        assertLe(builders[0].balance, 2.5 ether);
        assertLe(builders[1].balance, 2.5 ether);
        assertLe(builders[2].balance, 2.5 ether, "the self-paying builder never gets its leaf");
    }

    /// Nothing locked after the end: once refunded and every bond withdrawn, the contract is empty.
    function invariant_nothingLockedAfterEnd() public view {
        bool allOut = ledger.ledger(id).refunded;
        for (uint256 k; k < 3; ++k) {
            allOut = allOut && ledger.bondOf(id, people[k]) == 0 && ledger.bondOf(id, builders[k]) == 0;
        }
        if (allOut) assertEq(address(ledger).balance, 0);
    }
}
