// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {IDotReferee} from "../src/interfaces/IDotReferee.sol";
import {IElementReferee} from "../src/interfaces/IElementReferee.sol";
import {ISumReferee} from "../src/interfaces/ISumReferee.sol";
import {SumReferee} from "../src/SumReferee.sol";
import {DotReferee} from "../src/DotReferee.sol";
import {
    DotRefereeNotYourTurn,
    DotRefereeBadParams,
    DotRefereeClockExpired,
    DotRefereeUnknown,
    DotRefereeTracePending
} from "../src/lib/DotRefereeErrors.sol";
import {ElementRefereeWrongStage, ElementRefereeNotPlaying} from "../src/lib/ElementRefereeErrors.sol";
import {SumRefereeNotOwner, SumRefereeNotYourTurn} from "../src/lib/SumRefereeErrors.sol";
import {ElementGames} from "./utils/ElementGames.sol";

/// @notice DotReferee.startSum and settleSum end to end (docs/game.md 2.10): real ElementReferee games of
///         `sum.dim_IntList` nodes (sum_takeover.json, scripts/sum_takeover_vectors.py) played to ElementProof, their
///         isolated element handed to a SumReferee game, that game played (or timed out) and settled back to the
///         element game, whose outcome and meters DisputeGame's `resolveElement` reads; every bad input refused.
contract DotRefereeSumTest is ElementGames {
    address internal stranger = makeAddr("stranger");
    DotReferee internal dot;
    SumReferee internal sum;
    string internal sjson;

    /// @dev A lie's sum-side data.
    struct SumLie {
        uint256 variant;
        uint64[] inShape;
        bytes32 inRoot;
        string chunks; // the input's chunks' json key
        uint64 at;
        uint16 key;
        uint32 witness;
        uint64 length;
        uint256 reduced;
        int256[] prefix;
        int256 liarTotal;
    }

    /// @dev What an end-to-end play carries between its parts.
    struct Run {
        Match mt;
        SumLie sl;
        uint256 sid;
        uint256[2] before;
        uint256 startCallGas;
        uint256 startCalldata;
        bool liarPicksFirst; // a lying challenger disputes the first sub-range (else the last)
        uint256 liarStopsAfter; // the liar stops after this many sum moves (0: never)
        uint256 liarMoves;
        IElementReferee.Outcome want;
    }

    function setUp() public override {
        super.setUp();
        dot = DotReferee(referee.dot());
        sum = SumReferee(dot.sum());
        sjson = _vectors("sum_takeover.json");
    }

    // ---- vectors and moves ----------------------------------------------------------------------------------

    function _sumLie(Match memory mt) internal pure returns (SumLie memory s) {
        string memory j = mt.c.json;
        string memory l = mt.l.key;
        s.variant = vm.parseJsonUint(j, _k(mt.c, ".variant"));
        s.inShape = mt.inputHeaders[0].shape;
        s.inRoot = mt.inputHeaders[0].dataRoot;
        s.chunks = string.concat(_at(_k(mt.c, ".inputs"), 0), ".chunks");
        s.at = uint64(vm.parseJsonUint(j, string.concat(l, ".at")));
        s.key = uint16(vm.parseJsonUint(j, string.concat(l, ".key")));
        s.witness = uint32(vm.parseJsonUint(j, string.concat(l, ".witness")));
        s.length = uint64(vm.parseJsonUint(j, string.concat(l, ".length")));
        s.reduced = vm.parseJsonUint(j, string.concat(l, ".reduced"));
        string[] memory p = vm.parseJsonStringArray(j, string.concat(l, ".prefix"));
        s.prefix = new int256[](p.length);
        for (uint256 x; x < p.length; ++x) {
            s.prefix[x] = vm.parseInt(p[x]);
        }
        s.liarTotal = vm.parseInt(vm.parseJsonString(j, string.concat(l, ".liarTotal")));
    }

    /// @notice A game of case `ci`, lie `li`, the honest side `honest`, played to ElementProof.
    function _sumGame(uint256 ci, uint256 li, uint256 honest) internal returns (Match memory mt) {
        Case memory c = _case(sjson, ci);
        mt = _newMatch(c, _lie(c, li), honest);
        _playUntil(mt, IElementReferee.Stage.ElementProof, 0);
    }

    function _startSum(Match memory mt) internal returns (uint256 sid) {
        vm.prank(defender);
        sid = dot.startSum(mt.id);
    }

    /// @dev Term `k` of the disputed element's slice, opened against the agreed input.
    function _term(Run memory r, uint256 k) internal view returns (IDotReferee.Opening memory o) {
        uint256 index = sum.inputIndex(r.mt.l.element, k, r.sl.inShape, r.sl.reduced);
        string memory ch = _at(r.sl.chunks, index * 4 / 4096);
        o.shape = r.sl.inShape;
        o.chunk = vm.parseJsonBytes(r.mt.c.json, string.concat(ch, ".bytes"));
        o.siblings = vm.parseJsonBytes32Array(r.mt.c.json, string.concat(ch, ".siblings"));
    }

    /// @dev The prefix sum P(x) of side `side`: the liar's are the true ones but for P(L), the S of its value.
    function _p(Run memory r, uint256 side, uint256 x) internal pure returns (int256) {
        if (side != r.mt.honest && x == r.sl.length) return r.sl.liarTotal;
        return r.sl.prefix[x];
    }

    function _splits(Run memory r, uint256 side, uint64 lo, uint64 hi) internal view returns (int256[] memory s) {
        uint64[] memory pts = sum.splitPoints(lo, hi, N);
        s = new int256[](pts.length);
        for (uint256 i; i < pts.length; ++i) {
            s[i] = _p(r, side, pts[i]);
        }
    }

    function _claimOf(Run memory r) internal view returns (ISumReferee.Claim memory cl) {
        cl.outputShape = r.mt.c.outShape;
        cl.input = IElementReferee.Header(1, r.sl.inShape, r.sl.inRoot);
        cl.at = r.sl.at;
        cl.witness = _term(r, r.sl.at);
        cl.total = _p(r, 0, r.sl.length);
        cl.splits = _splits(r, 0, 0, r.sl.length);
    }

    /// @dev The calldata of the move due in the sum game: the defender's claim, split and term; the challenger's
    ///      pick (the honest one the first sub-range whose end the defender got wrong).
    function _sumMove(Run memory r, ISumReferee.GameView memory v) internal view returns (bytes memory) {
        uint256 sid = r.sid;
        if (v.stage == ISumReferee.Stage.Claim) return abi.encodeCall(ISumReferee.claim, (sid, _claimOf(r)));
        if (v.stage == ISumReferee.Stage.Split) return abi.encodeCall(ISumReferee.split, (sid, _splits(r, 0, v.lo, v.hi)));
        if (v.stage == ISumReferee.Stage.Term) return abi.encodeCall(ISumReferee.proveTerm, (sid, _term(r, v.lo)));
        int256[] memory theirs = _splits(r, 0, v.lo, v.hi);
        uint64[] memory pts = sum.splitPoints(v.lo, v.hi, N);
        uint256 pick = r.mt.honest == 1 || !r.liarPicksFirst ? pts.length : 0;
        if (r.mt.honest == 1) {
            for (uint256 i; i < pts.length; ++i) {
                if (theirs[i] != r.sl.prefix[pts[i]]) {
                    pick = i;
                    break;
                }
            }
        }
        return abi.encodeCall(ISumReferee.pick, (sid, theirs, pick));
    }

    /// @dev Plays the sum game to the end (the liar stopping after `liarStopsAfter` moves, then timed out).
    function _playSum(Run memory r) internal {
        for (uint256 guard; guard < 64; ++guard) {
            ISumReferee.GameView memory v = sum.gameOf(r.sid);
            if (v.stage == ISumReferee.Stage.Resolved) return;
            uint256 side = uint256(v.toMove);
            if (side != r.mt.honest && r.liarStopsAfter != 0 && r.liarMoves >= r.liarStopsAfter) {
                vm.warp(block.timestamp + v.clockLeft[side] + 1);
                vm.prank(stranger);
                sum.timeout(r.sid);
                return;
            }
            bytes memory cd = _sumMove(r, v); // before the prank: it reads the referee's views
            vm.prank(side == 0 ? defender : challenger);
            (bool ok, bytes memory ret) = address(sum).call(cd);
            if (!ok) {
                assembly ("memory-safe") {
                    revert(add(ret, 0x20), mload(ret))
                }
            }
            if (side != r.mt.honest) ++r.liarMoves;
            vm.warp(block.timestamp + 3);
        }
        revert("the sum game did not end in 64 moves");
    }

    // ---- end to end -----------------------------------------------------------------------------------------

    function _endToEnd(uint256 ci, uint256 li, uint256 honest, bool liarPicksFirst, uint256 liarStopsAfter)
        internal
    {
        Run memory r;
        r.mt = _sumGame(ci, li, honest);
        r.sl = _sumLie(r.mt);
        r.liarPicksFirst = liarPicksFirst;
        r.liarStopsAfter = liarStopsAfter;
        r.before = referee.meterOf(r.mt.id);
        _e2eStart(r);
        _e2ePlay(r);
        _e2eSettle(r);
    }

    function _e2eStart(Run memory r) internal {
        Match memory mt = r.mt;
        IElementReferee.GameView memory ev = referee.gameOf(mt.id);
        assertEq(ev.op, 112 + r.sl.variant, "the element game's op is 112 + the variant");
        vm.warp(block.timestamp + 30);
        vm.expectEmit(address(sum));
        emit ISumReferee.GameOpened(
            sum.gameCount() + 1,
            address(dot),
            r.sl.variant,
            defender,
            challenger,
            mt.l.element,
            uint32(ev.values[0]),
            uint32(ev.values[1])
        );
        vm.expectEmit(address(dot));
        emit IDotReferee.SumStarted(mt.id, sum.gameCount() + 1);
        vm.prank(defender);
        r.sid = dot.startSum(mt.id);
        r.startCallGas = vm.lastCallGas().gasTotalUsed;
        r.startCalldata = abi.encodeCall(IDotReferee.startSum, (mt.id)).length;
        assertEq(dot.summedBy(mt.id), r.sid);
        assertEq(dot.takenOver(mt.id), 0, "no dot game");
        assertEq(dot.tracedBy(mt.id), 0, "no trace game");
        ISumReferee.GameView memory sv = sum.gameOf(r.sid);
        assertEq(sv.owner, address(dot), "owned by the DotReferee");
        assertEq(sv.players[0], defender);
        assertEq(sv.players[1], challenger);
        assertEq(sv.variant, r.sl.variant, "variant = op - 112");
        assertEq(sv.input, mt.c.inputs[0], "the agreed input");
        assertEq(sv.element, mt.l.element, "the isolated element");
        assertEq(uint256(sv.values[0]), ev.values[0], "the defender's value");
        assertEq(uint256(sv.values[1]), ev.values[1], "the challenger's value");
        assertEq(sv.values[mt.honest], uint32(mt.l.honestValue));
        assertEq(sv.values[1 - mt.honest], uint32(mt.l.liarValue));
        assertEq(sv.clockLeft[0], ev.turnStartedAt + ev.clockLeft[0] - block.timestamp, "what was left");
        assertEq(sv.clockLeft[1], ev.clockLeft[1], "the challenger's element clock");
        assertEq(sv.turnStartedAt, block.timestamp);
        assertEq(uint256(sv.stage), uint256(ISumReferee.Stage.Claim));
        assertEq(uint256(sv.toMove), uint256(IElementReferee.Side.Defender));
        assertEq(uint256(referee.gameOf(mt.id).stage), uint256(IElementReferee.Stage.Delegated));
        // the sum game's outcome is the DotReferee's to read
        vm.expectRevert(abi.encodeWithSelector(SumRefereeNotOwner.selector, r.sid, address(this), address(dot)));
        sum.ownedOutcome(r.sid);
    }

    function _e2ePlay(Run memory r) internal {
        vm.expectRevert(abi.encodeWithSelector(DotRefereeTracePending.selector, r.sid));
        dot.settleSum(r.mt.id);
        _playSum(r);
        r.want = r.mt.honest == 0 ? IElementReferee.Outcome.DefenderWins : IElementReferee.Outcome.ChallengerWins;
        assertEq(uint256(sum.outcome(r.sid)), uint256(r.want), "the honest side wins the sum game");
        ISumReferee.GameView memory sv = sum.gameOf(r.sid);
        assertEq(sv.length, r.sl.length, "L");
        assertEq(sv.key, r.sl.key, "the slice's class");
    }

    function _e2eSettle(Run memory r) internal {
        Match memory mt = r.mt;
        uint256[2] memory sm = sum.meterOf(r.sid);
        assertGt(sm[1 - mt.honest] + sm[mt.honest], 0);
        vm.expectEmit(address(dot));
        emit IDotReferee.TraceSettled(mt.id, r.sid, r.want);
        vm.prank(stranger);
        dot.settleSum(mt.id);
        IElementReferee.GameView memory ev = referee.gameOf(mt.id);
        assertEq(uint256(ev.stage), uint256(IElementReferee.Stage.Resolved));
        assertEq(uint256(ev.outcome), uint256(r.want), "the sum game's outcome");
        _honestWon(mt);
        uint256[2] memory after_ = referee.meterOf(mt.id);
        assertEq(after_[1], r.before[1] + sm[1], "the challenger's sum gas is metered to the element game");
        _checkStartGas(after_[0] - r.before[0] - sm[0], r.startCallGas, r.startCalldata);
        // once: a second settle, a timeout, another hand-over are all refused
        vm.expectRevert(
            abi.encodeWithSelector(
                ElementRefereeWrongStage.selector, mt.id, IElementReferee.Stage.Delegated, IElementReferee.Stage.Resolved
            )
        );
        dot.settleSum(mt.id);
        vm.expectRevert(abi.encodeWithSelector(DotRefereeUnknown.selector, mt.id));
        dot.settleTrace(mt.id);
        vm.expectRevert(
            abi.encodeWithSelector(ElementRefereeNotPlaying.selector, mt.id, IElementReferee.Stage.Resolved)
        );
        referee.timeout(mt.id);
        vm.prank(defender);
        if (r.liarStopsAfter != 0) {
            vm.expectPartialRevert(DotRefereeClockExpired.selector); // a clock ran out: refused on time first
        } else {
            vm.expectRevert(
                abi.encodeWithSelector(
                    ElementRefereeWrongStage.selector,
                    mt.id,
                    IElementReferee.Stage.ElementProof,
                    IElementReferee.Stage.Resolved
                )
            );
        }
        dot.startSum(mt.id);
    }

    /// @dev startSum meters what it measured itself plus 21,000, 40 per calldata byte and 1,000: at least the fixed
    ///      parts, at most the call's whole execution gas above them.
    function _checkStartGas(uint256 startGas, uint256 callGas, uint256 calldataLength) internal pure {
        uint256 fixed_ = 21_000 + 40 * calldataLength + 1_000;
        assertGt(startGas, fixed_, "startSum's gas is metered to the defender");
        assertLe(startGas - fixed_, callGas, "no more than the call used");
        assertGe(startGas - fixed_ + 30_000, callGas, "all of it but the link's write and the return");
    }

    /// @dev Every case and lie, the honest side defending and challenging, the liar playing on.
    function test_sum_everyCase_honestWins() public {
        uint256 n = _caseCount(sjson);
        assertEq(n, 3, "cases");
        for (uint256 ci; ci < n; ++ci) {
            uint256 lies = _lieCount(sjson, ci);
            for (uint256 li; li < lies; ++li) {
                _endToEnd(ci, li, 0, false, 0);
                _endToEnd(ci, li, 1, false, 0);
            }
        }
    }

    /// @dev A lying challenger that disputes the first sub-range: the honest defender opens an early term.
    function test_sum_liarPicksFirst_honestDefenderWins() public {
        _endToEnd(0, 1, 0, true, 0);
        _endToEnd(2, 0, 0, true, 0);
    }

    /// @dev A liar that stops: the sum game ends by its timeout (called by a stranger), settled back.
    function test_sum_liarStops_timedOut_honestWins() public {
        _endToEnd(0, 0, 0, false, 1); // the lying challenger picks once, then stops
        _endToEnd(0, 0, 1, false, 1); // the lying defender claims, then stops
        _endToEnd(1, 0, 1, false, 0); // the 0-dimensional output played to the end
    }

    // ---- startSum's rules ---------------------------------------------------------------------------------

    function test_startSum_nonDefender_reverts() public {
        Match memory mt = _sumGame(0, 0, 0);
        vm.prank(challenger);
        vm.expectRevert(abi.encodeWithSelector(DotRefereeNotYourTurn.selector, mt.id, challenger, defender));
        dot.startSum(mt.id);
        vm.prank(stranger);
        vm.expectRevert(abi.encodeWithSelector(DotRefereeNotYourTurn.selector, mt.id, stranger, defender));
        dot.startSum(mt.id);
        vm.expectRevert(abi.encodeWithSelector(DotRefereeNotYourTurn.selector, mt.id, address(this), defender));
        dot.startSum(mt.id);
        assertEq(dot.summedBy(mt.id), 0);
        _startSum(mt); // the defender may
    }

    /// @dev startSum on a game of another op (mm, addmm, exp, add) reverts by name, and the other hand-overs on a
    ///      sum game (start, startTrace) too: each game goes only where its op says.
    function test_startSum_nonSumOp_reverts() public {
        string[3] memory files = ["dot_takeover.json", "trace_takeover.json", "element_referee.json"];
        for (uint256 f; f < 3; ++f) {
            string memory j = _vectors(files[f]);
            Case memory c = _case(j, 0);
            Match memory mt = _newMatch(c, _lie(c, 0), 0);
            _playUntil(mt, IElementReferee.Stage.ElementProof, 0);
            vm.prank(defender);
            vm.expectRevert(abi.encodeWithSelector(DotRefereeBadParams.selector, 1, c.op));
            dot.startSum(mt.id);
            assertEq(uint256(referee.gameOf(mt.id).stage), uint256(IElementReferee.Stage.ElementProof));
        }
        Match memory sm = _sumGame(0, 0, 0);
        IDotReferee.Takeover memory t;
        IDotReferee.Claim memory cl;
        vm.prank(defender);
        vm.expectRevert(abi.encodeWithSelector(DotRefereeBadParams.selector, 1, sm.c.op));
        dot.start(sm.id, t, cl);
        vm.prank(defender);
        vm.expectRevert(abi.encodeWithSelector(DotRefereeBadParams.selector, 1, sm.c.op));
        dot.startTrace(sm.id, sm.openings[0]);
        assertEq(uint256(referee.gameOf(sm.id).stage), uint256(IElementReferee.Stage.ElementProof));
        _startSum(sm);
    }

    function test_startSum_notAtElementProof_reverts() public {
        Case memory c = _case(sjson, 0);
        Match memory mt = _newMatch(c, _lie(c, 0), 0); // stage Header, the defender to move
        vm.prank(defender);
        vm.expectRevert(
            abi.encodeWithSelector(
                ElementRefereeWrongStage.selector, mt.id, IElementReferee.Stage.ElementProof, IElementReferee.Stage.Header
            )
        );
        dot.startSum(mt.id);
        // twice: the second finds the game Delegated
        Match memory m2 = _sumGame(0, 0, 0);
        _startSum(m2);
        vm.prank(defender);
        vm.expectRevert(
            abi.encodeWithSelector(
                ElementRefereeWrongStage.selector,
                m2.id,
                IElementReferee.Stage.ElementProof,
                IElementReferee.Stage.Delegated
            )
        );
        dot.startSum(m2.id);
        assertEq(sum.gameCount(), 1, "one sum game");
    }

    function test_startSum_afterDefenderClock_reverts() public {
        Match memory mt = _sumGame(0, 0, 0);
        IElementReferee.GameView memory ev = referee.gameOf(mt.id);
        uint256 deadline = ev.turnStartedAt + ev.clockLeft[0];
        vm.warp(deadline + 1);
        vm.prank(defender);
        vm.expectRevert(abi.encodeWithSelector(DotRefereeClockExpired.selector, mt.id, deadline));
        dot.startSum(mt.id);
        // at the deadline itself it is still the defender's time: the sum game starts with one second
        vm.warp(deadline);
        uint256 sid = _startSum(mt);
        ISumReferee.GameView memory sv = sum.gameOf(sid);
        assertEq(sv.clockLeft[0], 1, "no time left, one second given (open refuses a zero clock)");
        assertEq(sv.clockLeft[1], ev.clockLeft[1]);
    }

    function test_startSum_afterElementTimeout_reverts() public {
        Match memory mt = _sumGame(0, 0, 0);
        vm.warp(block.timestamp + CLOCK + 1);
        referee.timeout(mt.id);
        vm.prank(defender);
        vm.expectPartialRevert(DotRefereeClockExpired.selector);
        dot.startSum(mt.id);
        assertEq(uint256(referee.outcome(mt.id)), uint256(IElementReferee.Outcome.ChallengerWins));
    }

    function test_proveElement_sumOp_reverts() public {
        Match memory mt = _sumGame(0, 0, 0);
        (bool ok,,) = _send(defender, _calldata(mt));
        assertFalse(ok, "proveElement of a sum");
        assertEq(uint256(referee.gameOf(mt.id).stage), uint256(IElementReferee.Stage.ElementProof));
        _startSum(mt);
    }

    function test_elementTimeout_refusedWhileDelegated() public {
        Match memory mt = _sumGame(0, 0, 0);
        uint256 sid = _startSum(mt);
        vm.warp(block.timestamp + 10 days);
        vm.expectRevert(
            abi.encodeWithSelector(ElementRefereeNotPlaying.selector, mt.id, IElementReferee.Stage.Delegated)
        );
        referee.timeout(mt.id);
        vm.prank(defender);
        vm.expectPartialRevert(ElementRefereeWrongStage.selector);
        referee.proveElement(mt.id, mt.c.outShape, mt.openings);
        // only the players of the element game move in the sum game
        vm.prank(stranger);
        vm.expectPartialRevert(SumRefereeNotYourTurn.selector);
        ISumReferee.Claim memory none;
        sum.claim(sid, none);
        // the sum game's timeout decides it: the defender never claimed
        sum.timeout(sid);
        dot.settleSum(mt.id);
        assertEq(uint256(referee.outcome(mt.id)), uint256(IElementReferee.Outcome.ChallengerWins));
    }

    // ---- settleSum ----------------------------------------------------------------------------------------

    function test_settleSum_unknown_reverts() public {
        vm.expectRevert(abi.encodeWithSelector(DotRefereeUnknown.selector, 12345));
        dot.settleSum(12345);
        Match memory mt = _sumGame(0, 0, 0); // at ElementProof, not handed over
        vm.expectRevert(abi.encodeWithSelector(DotRefereeUnknown.selector, mt.id));
        dot.settleSum(mt.id);
        // a sum game opened by someone else for the same players and element is no link: settleSum ignores it
        Run memory r;
        r.mt = mt;
        r.sl = _sumLie(mt);
        IElementReferee.GameView memory ev = referee.gameOf(mt.id);
        ISumReferee.Params memory p;
        p.variant = r.sl.variant;
        p.input = mt.c.inputs[0];
        p.header = keccak256(abi.encodePacked(uint8(1), mt.c.outShape));
        p.element = mt.l.element;
        p.values = [uint32(ev.values[0]), uint32(ev.values[1])];
        p.players = [defender, challenger];
        p.clocks = [uint64(1), uint64(1)];
        p.arity = N;
        vm.prank(stranger);
        uint256 own = sum.open(p);
        vm.warp(block.timestamp + 2);
        sum.timeout(own); // resolved: ChallengerWins
        vm.expectRevert(abi.encodeWithSelector(DotRefereeUnknown.selector, mt.id));
        dot.settleSum(mt.id);
        assertEq(uint256(referee.gameOf(mt.id).stage), uint256(IElementReferee.Stage.ElementProof));
        // nor can a game taken by another caller than the DotReferee: its owner is that caller
        vm.expectRevert(abi.encodeWithSelector(SumRefereeNotOwner.selector, own, address(dot), stranger));
        vm.prank(address(dot));
        sum.ownedOutcome(own);
    }

    function test_settleSum_pending_reverts() public {
        Run memory r;
        r.mt = _sumGame(0, 0, 1);
        r.sl = _sumLie(r.mt);
        r.sid = _startSum(r.mt);
        vm.expectRevert(abi.encodeWithSelector(DotRefereeTracePending.selector, r.sid));
        dot.settleSum(r.mt.id);
        ISumReferee.Claim memory cl = _claimOf(r);
        vm.prank(defender);
        sum.claim(r.sid, cl);
        vm.warp(block.timestamp + 2 days); // the challenger's clock ran out, nobody called timeout yet
        vm.expectRevert(abi.encodeWithSelector(DotRefereeTracePending.selector, r.sid));
        dot.settleSum(r.mt.id);
        sum.timeout(r.sid);
        dot.settleSum(r.mt.id);
        // the liar defended, but the honest challenger let its clock run out: the defender wins
        assertEq(uint256(referee.outcome(r.mt.id)), uint256(IElementReferee.Outcome.DefenderWins));
    }
}
