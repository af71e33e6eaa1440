// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {IDotReferee} from "../src/interfaces/IDotReferee.sol";
import {IElementReferee} from "../src/interfaces/IElementReferee.sol";
import {
    DotRefereeNotYourTurn,
    DotRefereeHeader,
    DotRefereeClockExpired,
    DotRefereeNotOwner,
    DotRefereeInconsistent,
    DotRefereeBadParams
} from "../src/lib/DotRefereeErrors.sol";
import {
    ElementRefereeWrongStage,
    ElementRefereeNotDot,
    ElementRefereeNotPlaying
} from "../src/lib/ElementRefereeErrors.sol";
import {DotRuleGames} from "./utils/DotRuleGames.sol";

/// @notice The takeover end to end: an ElementReferee game on a real mm / addmm node (dot_takeover.json:
///         output header, chunk descent, chunk isolation) whose isolated element goes to `dot.start` and
///         through the dot game, which settles the element game (outcome and gas).
contract DotRefereeTakeoverTest is DotRuleGames {
    string internal tjson;
    address internal stranger = makeAddr("stranger");

    function setUp() public override {
        super.setUp();
        tjson = _vectors("dot_takeover.json");
    }

    /// @dev An element game of case `ci` (0 mm, 1 addmm), lie 0 (element 0), played to ElementProof.
    function _elementGame(uint256 ci, uint256 honest) internal returns (Match memory mt) {
        Case memory c = _case(tjson, ci);
        Lie memory l = _lie(c, 0);
        mt = _newMatch(c, l, honest);
        _playUntil(mt, IElementReferee.Stage.ElementProof, 0);
    }

    function _takeoverOf(Match memory mt) internal pure returns (IDotReferee.Takeover memory t) {
        uint256 a = mt.inputHeaders.length - 2;
        t.outputShape = _copy(mt.c.outShape);
        t.a = IElementReferee.Header(
            mt.inputHeaders[a].dtype, _copy(mt.inputHeaders[a].shape), mt.inputHeaders[a].dataRoot
        );
        t.b = IElementReferee.Header(
            mt.inputHeaders[a + 1].dtype, _copy(mt.inputHeaders[a + 1].shape), mt.inputHeaders[a + 1].dataRoot
        );
    }

    function _copy(uint64[] memory x) internal pure returns (uint64[] memory y) {
        y = new uint64[](x.length);
        for (uint256 i; i < x.length; ++i) {
            y[i] = x[i];
        }
    }

    /// @dev The dot side of the same node: the honest side plays P, the liar a list that makes its value.
    function _dotPlay(Match memory mt) internal view returns (Play memory p) {
        p.c = _dcase(tjson, string.concat(mt.c.key, ".dot"));
        p.e = _elAt(p.c, mt.l.element);
        p.honest = mt.honest;
        p.rowAt = p.e.rowAt;
        p.colAt = p.e.colAt;
        IElementReferee.GameView memory v = referee.gameOf(mt.id);
        p.values = [uint32(v.values[0]), uint32(v.values[1])];
        assertEq(p.values[mt.honest], p.e.value, "the honest value is the kernel's");
        p.prefix[mt.honest] = p.e.prefix;
        p.prefix[1 - mt.honest] = mt.honest == 0 ? _lieFrom(p.e.prefix, 3, 1 << 20) : _liarFor(p, p.values[0]);
    }

    /// @dev Prefix sums equal to P below 3 and shifted from 3 on by the smallest d whose S + d makes `value`
    ///      (the honest value's neighbour: f32 of S + d is monotone in d, so a bisection finds it).
    function _liarFor(Play memory p, uint32 value) internal view returns (int256[] memory q) {
        int256 s = p.e.prefix[p.c.k];
        uint32 honest = p.e.value;
        bool up = _ord(value) > _ord(honest);
        int256 hi = 1;
        while (_ord(_at(p, s, up ? hi : -hi)) == _ord(honest)) hi *= 2;
        int256 lo = hi / 2; // value(lo) is honest's (or lo = 0)
        while (hi - lo > 1) {
            int256 mid = (lo + hi) / 2;
            if (_ord(_at(p, s, up ? mid : -mid)) == _ord(honest)) lo = mid;
            else hi = mid;
        }
        int256 d = up ? hi : -hi;
        // With a bias, the neighbour may be out of reach: S + d - 1 gives the honest value, S + d jumps past
        // (a tie of bias + mm rounded to even). Then no claim makes the liar's value: empty list.
        if (_at(p, s, d) != value) return q;
        q = new int256[](p.e.prefix.length);
        for (uint256 x; x < q.length; ++x) {
            q[x] = x >= 3 ? p.e.prefix[x] + d : p.e.prefix[x];
        }
    }

    function _at(Play memory p, int256 s, int256 d) internal view returns (uint32) {
        return _valueOf(p.c, p.e, p.e.rowKey, p.e.colKey, s + d);
    }

    /// @dev binary32 bits in numeric order.
    function _ord(uint32 v) internal pure returns (uint32) {
        return v >> 31 == 1 ? ~v : v | 0x80000000;
    }

    function _start(Match memory mt, Play memory p) internal returns (uint256 id) {
        IDotReferee.Takeover memory t = _takeoverOf(mt);
        IDotReferee.Claim memory cl = _claimOf(p);
        vm.prank(defender);
        id = dot.start(mt.id, t, cl);
        p.id = id;
    }

    function _endToEnd(uint256 ci, uint256 honest) internal returns (bool claimed) {
        Match memory mt = _elementGame(ci, honest);
        uint256[2] memory before = referee.meterOf(mt.id);
        Play memory p = _dotPlay(mt);
        vm.warp(block.timestamp + 30);
        if (p.prefix[0].length == 0) {
            _unclaimable(mt, p);
            return false;
        }
        claimed = true;
        uint256 id = _start(mt, p);
        assertEq(dot.takenOver(mt.id), id);
        IDotReferee.GameView memory dv = dot.gameOf(id);
        assertEq(dv.owner, address(referee));
        assertEq(dv.elementGame, mt.id);
        assertEq(dv.players[0], defender);
        assertEq(dv.k, 300);
        assertEq(dv.n, 5);
        assertEq(dv.element, mt.l.element);
        assertEq(uint256(dv.stage), uint256(IDotReferee.Stage.Pick));
        IElementReferee.GameView memory ev = referee.gameOf(mt.id);
        assertEq(uint256(ev.stage), uint256(IElementReferee.Stage.Delegated));
        // the element game waits: its timeout is refused, whatever the time
        vm.warp(block.timestamp + 10 days);
        vm.expectRevert(
            abi.encodeWithSelector(ElementRefereeNotPlaying.selector, mt.id, IElementReferee.Stage.Delegated)
        );
        referee.timeout(mt.id);
        vm.warp(block.timestamp - 10 days);
        // only the dot game's owner reads its outcome: the ElementReferee
        vm.expectRevert(
            abi.encodeWithSelector(DotRefereeNotOwner.selector, id, address(this), address(referee))
        );
        dot.ownedOutcome(id);
        _dplayOut(p);
        _dhonestWon(p);
        ev = referee.gameOf(mt.id);
        assertEq(uint256(ev.stage), uint256(IElementReferee.Stage.Resolved));
        assertEq(uint256(referee.ownedOutcome(mt.id)), uint256(dot.outcome(id)), "the dot game's outcome");
        _honestWon(mt);
        uint256[2] memory dg = dot.meterOf(id);
        uint256[2] memory after_ = referee.meterOf(mt.id);
        assertEq(after_[0], before[0] + dg[0], "the defender's dot gas is metered to the element game");
        assertEq(after_[1], before[1] + dg[1], "the challenger's dot gas is metered to the element game");
        assertGt(dg[0], 0);
        assertGt(dg[1], 0);
        vm.expectRevert(
            abi.encodeWithSelector(ElementRefereeNotPlaying.selector, mt.id, IElementReferee.Stage.Resolved)
        );
        referee.timeout(mt.id);
    }

    /// @dev A lying defender whose value no S makes: every claim is refused; its element clock runs out.
    function _unclaimable(Match memory mt, Play memory p) internal {
        int256 s = p.e.prefix[p.c.k];
        IDotReferee.Takeover memory t = _takeoverOf(mt);
        for (int256 d = -40; d <= 40; ++d) {
            p.prefix[0] = _lieFrom(p.e.prefix, p.c.k, 0);
            p.prefix[0][p.c.k] = s + d;
            IDotReferee.Claim memory cl = _claimOf(p);
            vm.prank(defender);
            vm.expectPartialRevert(DotRefereeInconsistent.selector);
            dot.start(mt.id, t, cl);
        }
        IElementReferee.GameView memory ev = referee.gameOf(mt.id);
        vm.warp(ev.turnStartedAt + ev.clockLeft[0] + 1);
        referee.timeout(mt.id);
        _honestWon(mt);
        assertEq(dot.takenOver(mt.id), 0);
    }

    function test_takeover_mm_honestDefender() public {
        _endToEnd(0, 0);
    }

    function test_takeover_mm_honestChallenger() public {
        assertTrue(_endToEnd(0, 1));
    }

    function test_takeover_addmm_honestDefender() public {
        _endToEnd(1, 0);
    }

    function test_takeover_addmm_honestChallenger() public {
        assertTrue(_endToEnd(1, 1), "the liar's value has an S");
    }

    function test_takeover_addmmTie_liarCannotClaim() public {
        assertTrue(_endToEnd(2, 0));
        assertFalse(_endToEnd(2, 1), "no S makes the liar's value: it cannot take over, and times out");
    }

    function test_takeover_liarStops_honestWins() public {
        for (uint256 h; h < 2; ++h) {
            Match memory mt = _elementGame(0, h);
            Play memory p = _dotPlay(mt);
            _start(mt, p);
            p.liarStops = true;
            _dplayOut(p);
            _dhonestWon(p);
            _honestWon(mt);
        }
    }

    function test_takeover_nonDefender_reverts() public {
        Match memory mt = _elementGame(0, 0);
        Play memory p = _dotPlay(mt);
        IDotReferee.Takeover memory t = _takeoverOf(mt);
        IDotReferee.Claim memory cl = _claimOf(p);
        vm.prank(challenger);
        vm.expectRevert(abi.encodeWithSelector(DotRefereeNotYourTurn.selector, mt.id, challenger, defender));
        dot.start(mt.id, t, cl);
        vm.prank(stranger);
        vm.expectRevert(abi.encodeWithSelector(DotRefereeNotYourTurn.selector, mt.id, stranger, defender));
        dot.start(mt.id, t, cl);
    }

    function test_takeover_wrongHeaders_revert() public {
        Match memory mt = _elementGame(0, 0);
        Play memory p = _dotPlay(mt);
        IDotReferee.Claim memory cl = _claimOf(p);
        IDotReferee.Takeover memory t = _takeoverOf(mt);
        t.outputShape = new uint64[](2);
        t.outputShape[0] = 5;
        t.outputShape[1] = 6;
        vm.prank(defender);
        vm.expectPartialRevert(DotRefereeHeader.selector);
        dot.start(mt.id, t, cl);
        t = _takeoverOf(mt);
        t.a.dataRoot = bytes32(uint256(t.a.dataRoot) ^ 1);
        vm.prank(defender);
        vm.expectPartialRevert(DotRefereeHeader.selector);
        dot.start(mt.id, t, cl);
        t = _takeoverOf(mt);
        (t.a, t.b) = (t.b, t.a); // B's header as A's
        vm.prank(defender);
        vm.expectPartialRevert(DotRefereeHeader.selector);
        dot.start(mt.id, t, cl);
        t = _takeoverOf(mt);
        t.b.shape[1] = 6;
        vm.prank(defender);
        vm.expectPartialRevert(DotRefereeHeader.selector);
        dot.start(mt.id, t, cl);
        // the right ones succeed
        vm.prank(defender);
        dot.start(mt.id, _takeoverOf(mt), cl);
    }

    function test_takeover_nonDotOp_reverts() public {
        string memory ej = _vectors("element_referee.json");
        Case memory c = _case(ej, 0); // add
        Match memory mt = _newMatch(c, _lie(c, 0), 0);
        _playUntil(mt, IElementReferee.Stage.ElementProof, 0);
        Play memory p = _dotPlay(_elementGame(0, 0));
        IDotReferee.Takeover memory t;
        IDotReferee.Claim memory cl = _claimOf(p);
        vm.prank(defender);
        // Refused by name before anything else: the game's op is not mm or addmm.
        vm.expectRevert(abi.encodeWithSelector(DotRefereeBadParams.selector, 1, c.op));
        dot.start(mt.id, t, cl);
        assertEq(uint256(referee.gameOf(mt.id).stage), uint256(IElementReferee.Stage.ElementProof));
    }

    function test_takeover_notAtElementProof_reverts() public {
        Case memory c = _case(tjson, 0);
        Match memory mt = _newMatch(c, _lie(c, 0), 0);
        Play memory p = _dotPlay(_elementGame(0, 0));
        IDotReferee.Claim memory cl = _claimOf(p);
        IDotReferee.Takeover memory t = _takeoverOf(mt);
        vm.prank(defender);
        vm.expectRevert(
            abi.encodeWithSelector(
                ElementRefereeWrongStage.selector,
                mt.id,
                IElementReferee.Stage.ElementProof,
                IElementReferee.Stage.Header
            )
        );
        dot.start(mt.id, t, cl);
        // and twice: the second start finds the game Delegated
        Match memory m2 = _elementGame(0, 0);
        Play memory p2 = _dotPlay(m2);
        _start(m2, p2);
        IDotReferee.Claim memory cl2 = _claimOf(p2);
        IDotReferee.Takeover memory t2 = _takeoverOf(m2);
        vm.prank(defender);
        vm.expectRevert(
            abi.encodeWithSelector(
                ElementRefereeWrongStage.selector,
                m2.id,
                IElementReferee.Stage.ElementProof,
                IElementReferee.Stage.Delegated
            )
        );
        dot.start(m2.id, t2, cl2);
    }

    function test_takeover_afterDefenderClock_reverts() public {
        Match memory mt = _elementGame(0, 0);
        Play memory p = _dotPlay(mt);
        IDotReferee.Claim memory cl = _claimOf(p);
        IDotReferee.Takeover memory t = _takeoverOf(mt);
        IElementReferee.GameView memory ev = referee.gameOf(mt.id);
        uint256 deadline = ev.turnStartedAt + ev.clockLeft[0];
        vm.warp(deadline + 1);
        vm.prank(defender);
        vm.expectRevert(abi.encodeWithSelector(DotRefereeClockExpired.selector, mt.id, deadline));
        dot.start(mt.id, t, cl);
        // at the deadline itself it is still the defender's time; the dot clock starts from the element turn
        vm.warp(deadline);
        vm.prank(defender);
        uint256 id = dot.start(mt.id, t, cl);
        IDotReferee.GameView memory dv = dot.gameOf(id);
        assertEq(dv.clockLeft[0], 0, "the defender used all its element clock");
        assertEq(dv.clockLeft[1], ev.clockLeft[1]);
    }

    function test_hand_onlyDot_reverts() public {
        Match memory mt = _elementGame(0, 0);
        vm.expectRevert(abi.encodeWithSelector(ElementRefereeNotDot.selector, address(this)));
        referee.hand(mt.id, IElementReferee.Outcome.Pending, [uint256(0), 0]);
        vm.prank(defender);
        vm.expectRevert(abi.encodeWithSelector(ElementRefereeNotDot.selector, defender));
        referee.hand(mt.id, IElementReferee.Outcome.DefenderWins, [uint256(0), 0]);
    }
}
