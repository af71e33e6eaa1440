// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {IElementReferee} from "../src/interfaces/IElementReferee.sol";
import {ElementGames} from "./utils/ElementGames.sol";

contract ElementRefereeTest is ElementGames {
    string internal json;

    function setUp() public override {
        super.setUp();
        json = _vectors("element_referee.json");
    }

    /// @notice Every case and lie (first, middle, last element), the honest side as defender and as
    ///         challenger, the liar playing on to the end: the contract's element decides for the honest side.
    function test_everyCaseEveryLie_honestWins_succeeds() public {
        uint256 n = _caseCount(json);
        assertEq(n, 8, "cases");
        for (uint256 i; i < n; ++i) {
            Case memory c = _case(json, i);
            uint256 lies = _lieCount(json, i);
            assertEq(lies, 3, "first, middle and last element");
            for (uint256 j; j < lies; ++j) {
                Lie memory l = _lie(c, j);
                for (uint256 honest; honest < 2; ++honest) {
                    Match memory m = _newMatch(c, l, honest);
                    _playOut(m);
                    _honestWon(m);
                    IElementReferee.GameView memory v = _view(m);
                    assertEq(v.element, l.element, "the first differing element");
                    assertEq(v.position, l.chunkIndex, "its chunk");
                    assertEq(v.values[honest], l.honestValue, "honest value");
                    assertEq(v.values[1 - honest], l.liarValue, "liar value");
                }
            }
        }
    }
}
