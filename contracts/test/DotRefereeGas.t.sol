// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {console} from "forge-std/console.sol";

import {IDotReferee} from "../src/interfaces/IDotReferee.sol";
import {DotGames} from "./utils/DotGames.sol";

/// @notice Gas of the dot phase (docs/game.md 2.8) for mm and addmm with K = 4096 (A [1, 4096] and B [4096, 1],
///         four 4096-byte chunks each), arity 16: the claim, three bisection levels (4096 -> 256 -> 16 -> 1), the
///         term. The liar's prefix sums go wrong at the middle term; the honest side as defender and as challenger.
/// @dev Each test runs isolated (inline config `isolate = true`): every call is its own transaction (21,000 and
///      calldata or the EIP-7623 floor included, storage cold). Figures go to the console and to the snapshot
///      group `DotRefereeGas`.
contract DotRefereeGasTest is DotGames {
    uint256 internal constant MOVE_TARGET = 100_000;
    uint256 internal constant TOTAL_TARGET = 1_500_000;

    /// forge-config: default.isolate = true
    function test_gas_mm4096_honestDefender_succeeds() public {
        _measure("mm_K4096_defender", 0, 0);
    }

    /// forge-config: default.isolate = true
    function test_gas_mm4096_honestChallenger_succeeds() public {
        _measure("mm_K4096_challenger", 0, 1);
    }

    /// forge-config: default.isolate = true
    function test_gas_addmm4096_honestDefender_succeeds() public {
        _measure("addmm_K4096_defender", 1, 0);
    }

    /// forge-config: default.isolate = true
    function test_gas_addmm4096_honestChallenger_succeeds() public {
        _measure("addmm_K4096_challenger", 1, 1);
    }

    function _measure(string memory name, uint256 i, uint256 honest) internal {
        Case memory c = _case(".gas", i);
        assertEq(c.k, 4096, "K = 4096");
        Match memory m = _newMatch(c, honest, c.k / 2, 0);
        _play(m);
        _assertHonestWon(m);
        uint256 liar = 1 - honest;
        console.log(name);
        console.log("  honest total", m.gas[honest], "largest move", m.maxMove[honest]);
        console.log("  liar total", m.gas[liar], "largest move", m.maxMove[liar]);
        console.log("  moves", m.moves);
        // claim; per level a pick and a split (4096 -> 256 -> 16), the last pick (16 -> 1); the term
        assertEq(m.moves, 1 + 2 * 2 + 1 + 1, "moves: ceil(log_16 4096) = 3 levels");
        assertLe(m.gas[honest], TOTAL_TARGET, "the honest side's dot phase <= 1.5M");
        string memory g = "DotRefereeGas";
        vm.snapshotValue(g, string.concat(name, "_honestTotal"), m.gas[honest]);
        vm.snapshotValue(g, string.concat(name, "_honestMaxMove"), m.maxMove[honest]);
        vm.snapshotValue(g, string.concat(name, "_liarTotal"), m.gas[liar]);
    }

    /// forge-config: default.isolate = true
    function test_gas_pickAndSplit_under100k_succeeds() public {
        // The bisection moves carry no chunk: each stays under issue 17's per-move target.
        Case memory c = _case(".gas", 0);
        Match memory m = _newMatch(c, 1, c.k / 2, 0);
        IDotReferee.Claim memory cl = _claimOf(m, 0);
        vm.prank(defender);
        dot.claim(m.id, cl);
        uint256 claimGas = vm.lastCallGas().gasTotalUsed;
        assertGt(claimGas, 300_000, "isolated: the claim's two 4096-byte chunks cost their calldata floor");
        IDotReferee.GameView memory v = dot.gameOf(m.id);
        int256[] memory theirs = _splits(m, 0, v.lo, v.hi);
        vm.prank(challenger);
        dot.pick(m.id, theirs, 8);
        uint256 pickGas = vm.lastCallGas().gasTotalUsed;
        v = dot.gameOf(m.id);
        int256[] memory mine = _splits(m, 0, v.lo, v.hi);
        vm.prank(defender);
        dot.split(m.id, mine);
        uint256 splitGas = vm.lastCallGas().gasTotalUsed;
        console.log("claim", claimGas, "pick", pickGas);
        console.log("split", splitGas);
        assertLe(pickGas, MOVE_TARGET, "pick <= 100k");
        assertLe(splitGas, MOVE_TARGET, "split <= 100k");
        vm.snapshotValue("DotRefereeGas", "claim_K4096", claimGas);
        vm.snapshotValue("DotRefereeGas", "pick_K4096", pickGas);
        vm.snapshotValue("DotRefereeGas", "split_K4096", splitGas);
    }
}
