// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {StdInvariant} from "forge-std/StdInvariant.sol";
import {Test} from "forge-std/Test.sol";

import {PayoutDistributor} from "../../src/PayoutDistributor.sol";
import {IPayoutDistributor} from "../../src/interfaces/IPayoutDistributor.sol";
import {PayoutHandler} from "./PayoutHandler.sol";

/// @title PayoutDistributorInvariantsTest
/// @notice Properties of the payout distributor under random distributions, honest and forged claims,
///         time and sweeps (PayoutHandler; PROPERTIES.md).
contract PayoutDistributorInvariantsTest is Test {
    PayoutDistributor internal distributor;
    PayoutHandler internal handler;

    function setUp() public {
        vm.warp(1_700_000_000);
        distributor = new PayoutDistributor();
        handler = new PayoutHandler(distributor);
        targetContract(address(handler));
        bytes4[] memory selectors = new bytes4[](8);
        selectors[0] = PayoutHandler.create.selector;
        selectors[1] = PayoutHandler.claim.selector;
        selectors[2] = PayoutHandler.claim.selector;
        selectors[3] = PayoutHandler.claim.selector;
        selectors[4] = PayoutHandler.forge.selector;
        selectors[5] = PayoutHandler.sweep.selector;
        selectors[6] = PayoutHandler.warp.selector;
        selectors[7] = PayoutHandler.create.selector;
        targetSelector(StdInvariant.FuzzSelector({addr: address(handler), selectors: selectors}));
    }

    /// @notice The handler's paths all do what they are meant to on a fixed sequence (so the campaigns
    ///         are not vacuous): a claim is paid, a forged claim and a double claim are refused, an early
    ///         sweep is refused and a late one pays the rest.
    function test_handler_everyPathRuns_succeeds() public {
        handler.create(1, 5, 1 days, 1); // matches its escrow
        handler.create(2, 3, 1 days, 0); // over its escrow: pays nothing
        handler.claim(0, 2, address(this));
        handler.claim(0, 2, address(this)); // the same leaf again
        handler.claim(1, 0, address(this));
        for (uint8 kind; kind < 6; ++kind) {
            handler.forge(0, 3, kind, 12_345);
        }
        handler.sweep(0); // too early
        handler.warp(1 days);
        handler.sweep(0);
        handler.sweep(0); // twice
        assertEq(handler.claims(), 1, "one claim paid");
        assertEq(handler.sweeps(), 1, "one sweep");
        assertEq(handler.forgeriesTried(), 6, "every forgery kind tried");
        assertEq(handler.acceptedForgeries(), 0, "none accepted");
        assertEq(handler.refusedHonest(), 0, "no honest call refused");
        invariant_distributor_balanceMatchesUnclaimed();
        invariant_distributor_noLeafPaidTwice();
        invariant_distributor_paidWithinTotal();
        invariant_distributor_sweptHoldsZero();
    }

    /// @notice The contract holds exactly what its unswept distributions have not paid.
    function invariant_distributor_balanceMatchesUnclaimed() public view {
        uint256 held;
        for (uint256 k; k < handler.idCount(); ++k) {
            uint256 id = handler.ids(k);
            IPayoutDistributor.DistributionView memory d = distributor.distribution(id);
            if (!d.swept) held += d.total - d.claimed;
        }
        assertEq(address(distributor).balance, held, "balance = sum of unclaimed, unswept");
    }

    /// @notice No leaf is paid twice: every leaf account (fresh, one leaf each) holds its amount if its leaf
    ///         was claimed and nothing otherwise, and the bitmap says the same.
    function invariant_distributor_noLeafPaidTwice() public view {
        for (uint256 k; k < handler.idCount(); ++k) {
            uint256 id = handler.ids(k);
            (address[] memory accounts, uint256[] memory amounts,,,) = handler.dist(id);
            for (uint256 i; i < accounts.length; ++i) {
                uint256 count = handler.paidCount(id, i);
                assertLe(count, 1, "paid at most once");
                assertEq(accounts[i].balance, count * amounts[i], "holds exactly what it was paid");
                assertEq(distributor.isClaimed(id, i), count == 1, "bitmap = payments");
            }
            assertFalse(
                distributor.isClaimed(id, accounts.length), "the first padding position is never claimed"
            );
        }
    }

    /// @notice The claims of a distribution add up to what the leaves were paid, never more than its total;
    ///         a distribution whose tree does not add up to its escrow pays nothing.
    function invariant_distributor_paidWithinTotal() public view {
        for (uint256 k; k < handler.idCount(); ++k) {
            uint256 id = handler.ids(k);
            (,, uint256 value, bool matches,) = handler.dist(id);
            uint256 claimed = distributor.claimedTotal(id);
            assertEq(claimed, handler.paidSum(id), "claimedTotal = what the leaves got");
            assertLe(claimed, value, "paid <= total");
            assertEq(distributor.distribution(id).total, value, "total = escrow");
            if (!matches) assertEq(claimed, 0, "a tree that is not the escrow pays nothing");
        }
    }

    /// @notice After its sweep a distribution holds nothing: refundTo got exactly total - claimed, and no
    ///         claim is accepted any more (the forged and late claims of the handler count as refused).
    function invariant_distributor_sweptHoldsZero() public view {
        for (uint256 k; k < handler.idCount(); ++k) {
            uint256 id = handler.ids(k);
            (,, uint256 value,, address refundTo) = handler.dist(id);
            bool swept = distributor.distribution(id).swept;
            assertEq(swept, handler.swept(id), "swept as the handler saw");
            if (swept) {
                assertEq(handler.sweptAmount(id), value - distributor.claimedTotal(id), "the rest, exactly");
                assertEq(refundTo.balance, handler.sweptAmount(id), "refundTo got it once");
            } else {
                assertEq(refundTo.balance, 0, "nothing refunded before the sweep");
            }
        }
    }

    /// @notice No forged, double, late or early call was accepted, and no allowed one refused.
    function invariant_handler_rulesHold() public view {
        assertEq(handler.acceptedForgeries(), 0, "no forgery accepted");
        assertEq(handler.refusedHonest(), 0, "no allowed call refused");
    }
}
