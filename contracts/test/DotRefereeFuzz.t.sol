// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {DotGames} from "./utils/DotGames.sol";
import {IDotReferee} from "../src/interfaces/IDotReferee.sol";

/// @notice Fuzzes the dot phase (docs/game.md 2.8) over the vectors' cases: the honest side, the first term where
///         the liar's prefix sums go wrong (any of 1 .. K) and when the liar stops (never, or after 1 to 3 of its
///         moves). The honest side always wins, within the move bound 2 * max(ceil(log_N K), 1) + 1.
contract DotRefereeFuzzTest is DotGames {
    /// forge-config: default.fuzz.runs = 64
    function testFuzz_randomFirstWrongTerm_honestWins(
        uint8 which,
        bool honestDefends,
        uint64 lieFrom,
        uint8 stop
    ) public {
        Case memory c = _case(".cases", uint256(which) % _count(".cases"));
        uint64 from = c.k == 0 ? 1 : 1 + lieFrom % c.k;
        Match memory m = _newMatch(c, honestDefends ? 0 : 1, from, stop % 4);
        _play(m);
        _assertHonestWon(m);
        uint256 levels;
        for (uint256 w = c.k; w > 1; w = (w + N - 1) / N) {
            ++levels;
        }
        // claim, then per level a pick and a split but one split fewer, then the term: 2 max(levels, 1) + 1
        assertLe(dot.gameOf(m.id).moves, 2 * (levels == 0 ? 1 : levels) + 1, "moves <= 2 ceil(log_N K) + 1");
        assertEq(uint256(dot.gameOf(m.id).stage), uint256(IDotReferee.Stage.Resolved), "ended");
    }
}
