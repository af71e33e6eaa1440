// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {console} from "forge-std/console.sol";

import {SumGames} from "./utils/SumGames.sol";

/// @notice Gas of the sum phase (docs/game.md 2.10) for a sum over L = 4096 values (a [4096] input, four 4096-byte
///         chunks), arity 16: the claim, three bisection levels (4096 -> 256 -> 16 -> 1), the term. The liar's
///         prefix sums go wrong at the middle term; the honest side as defender and as challenger.
/// @dev Each test runs isolated (inline config `isolate = true`): every call is its own transaction (21,000 and
///      calldata or the EIP-7623 floor included, storage cold). Figures go to the console and to the snapshot
///      group `SumRefereeGas`.
contract SumRefereeGasTest is SumGames {
    uint256 internal constant MOVE_TARGET = 100_000;

    /// forge-config: default.isolate = true
    function test_gas_sum4096_honestDefender_succeeds() public {
        _measure("sum_L4096_defender", 0);
    }

    /// forge-config: default.isolate = true
    function test_gas_sum4096_honestChallenger_succeeds() public {
        _measure("sum_L4096_challenger", 1);
    }

    function _measure(string memory name, uint256 honest) internal {
        Case memory c = _case(".gas", 0);
        assertEq(c.length, 4096);
        Match memory m = _newMatch(c, honest, c.length / 2, 0, N);
        _play(m);
        _assertHonestWon(m);
        console.log(name, "honest total", m.gas[honest]);
        console.log(name, "honest largest move", m.maxMove[honest]);
        console.log(name, "liar largest move", m.maxMove[1 - honest]);
        vm.snapshotValue("SumRefereeGas", string.concat(name, "_honestTotal"), m.gas[honest]);
        vm.snapshotValue("SumRefereeGas", string.concat(name, "_honestMaxMove"), m.maxMove[honest]);
        // The challenger's moves (pick, refute) carry no chunk: under 100,000 each. The defender's claim and term
        // carry a 4096-byte chunk each and cost their calldata floor (docs/game.md 2.10).
        assertLt(m.maxMove[1], MOVE_TARGET, "every challenger move under 100k");
    }
}
