// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {IDotReferee} from "../src/interfaces/IDotReferee.sol";
import {IElementReferee} from "../src/interfaces/IElementReferee.sol";
import {
    DotRefereeUnknown,
    DotRefereeBadParams,
    DotRefereeWrongStage,
    DotRefereeNotPlaying,
    DotRefereeNotYourTurn,
    DotRefereeClockExpired,
    DotRefereeClockRunning,
    DotRefereeWidth,
    DotRefereeShape,
    DotRefereeInconsistent,
    DotRefereeOpponentMismatch,
    DotRefereeNotGreater
} from "../src/lib/DotRefereeErrors.sol";
import {TensorCommitmentMismatch, TensorChunkLength} from "../src/lib/Errors.sol";
import {Vm} from "forge-std/Vm.sol";

import {DotRuleGames} from "./utils/DotRuleGames.sol";

/// @notice DotReferee's rules on the vectors of scripts/dot_rule_vectors.py (real mm / addmm nodes whose
///         honest values are RepOps' bits): every stage's bad inputs, the decisions, the clocks, and games
///         between an honest side and a liar, which the honest side always wins. Beside DotReferee.t.sol
///         (main's suite, dot_referee.json): the rules that one checks in the same way are left to it.
contract DotRefereeRulesTest is DotRuleGames {
    string internal json;
    address internal stranger = makeAddr("stranger");

    // case indices of dot_rules.json
    uint256 internal constant K1 = 0;
    uint256 internal constant K2 = 1;
    uint256 internal constant K7 = 2;
    uint256 internal constant K64 = 3;
    uint256 internal constant K300 = 4;
    uint256 internal constant ADDMM_N = 5;
    uint256 internal constant CASES = 10;
    // played elements: ELEMENTS of the script
    uint256 internal constant E_RANDN = 0; // row 0, column 0
    uint256 internal constant E_ZERO_COL = 1;
    uint256 internal constant E_SUBNORMAL_COL = 2;
    uint256 internal constant E_ZERO_ROW = 5;
    uint256 internal constant E_SUBNORMAL_ROW = 10;
    uint256 internal constant E_INF_ROW = 15;
    uint256 internal constant E_NAN_ROW = 20;
    uint256 internal constant E_HUGE_ROW = 25;

    function setUp() public override {
        super.setUp();
        json = _vectors("dot_rules.json");
    }

    function _c(uint256 i) internal view returns (DCase memory) {
        return _dcase(json, i);
    }

    /// @dev An honest defender and a challenger whose value is the honest one with its last bit flipped.
    function _honestDefender(uint256 ci, uint256 element) internal returns (Play memory m) {
        DCase memory c = _c(ci);
        El memory e = _elAt(c, element);
        m = _newPlay(c, e, 0, e.prefix);
    }

    function _v(Play memory m) internal view returns (IDotReferee.GameView memory) {
        return dot.gameOf(m.id);
    }

    function _pick(Play memory m, uint256 index) internal {
        int256[] memory theirs = _theirs(m);
        vm.prank(challenger);
        dot.pick(m.id, theirs, index);
    }

    function _claim(Play memory m, IDotReferee.Claim memory cl) internal {
        vm.prank(defender);
        dot.claim(m.id, cl);
    }

    // ---- open ----------------------------------------------------------------------------

    function _goodParams() internal view returns (IDotReferee.Params memory p) {
        DCase memory c = _c(K7);
        p = _dparams(c, 0, [uint32(1), 2]);
    }

    function test_open_recordsTheGame() public {
        IDotReferee.Params memory p = _goodParams();
        vm.prank(stranger);
        uint256 id = dot.open(p);
        IDotReferee.GameView memory v = dot.gameOf(id);
        assertEq(id, 1);
        assertEq(dot.gameCount(), 1);
        assertEq(v.owner, stranger);
        assertEq(v.elementGame, 0);
        assertEq(uint256(v.stage), uint256(IDotReferee.Stage.Claim));
        assertEq(uint256(v.toMove), uint256(IElementReferee.Side.Defender));
        assertEq(v.k, 7);
        assertEq(v.n, 5);
        assertEq(v.values[0], 1);
        assertEq(v.values[1], 2);
        assertEq(v.clockLeft[0], CLOCK);
        assertEq(v.turnStartedAt, block.timestamp);
        assertEq(v.moves, 0);
    }

    function test_open_badInputCount_reverts() public {
        IDotReferee.Params memory p = _goodParams();
        p.op = 1; // addmm needs three
        vm.expectRevert(abi.encodeWithSelector(DotRefereeBadParams.selector, 2, 2));
        dot.open(p);
        p.op = 0;
        p.inputs = new bytes32[](3);
        vm.expectRevert(abi.encodeWithSelector(DotRefereeBadParams.selector, 2, 3));
        dot.open(p);
    }

    function test_open_badPlayers_reverts() public {
        IDotReferee.Params memory p = _goodParams();
        p.players = [defender, defender];
        vm.expectRevert(abi.encodeWithSelector(DotRefereeBadParams.selector, 3, uint160(defender)));
        dot.open(p);
        p.players = [address(0), challenger];
        vm.expectRevert(abi.encodeWithSelector(DotRefereeBadParams.selector, 3, uint160(challenger)));
        dot.open(p);
        p.players = [defender, address(0)];
        vm.expectRevert(abi.encodeWithSelector(DotRefereeBadParams.selector, 3, 0));
        dot.open(p);
    }

    function test_open_badClocks_reverts() public {
        IDotReferee.Params memory p = _goodParams();
        p.clocks = [uint64(0), CLOCK];
        vm.expectRevert(abi.encodeWithSelector(DotRefereeBadParams.selector, 5, 0));
        dot.open(p);
        p.clocks = [CLOCK, uint64(1) << 40];
        vm.expectRevert(abi.encodeWithSelector(DotRefereeBadParams.selector, 5, uint256(1) << 40));
        dot.open(p);
    }

    function test_open_badArity_reverts() public {
        IDotReferee.Params memory p = _goodParams();
        uint64[4] memory bad = [uint64(0), 1, 3, 128];
        for (uint256 i; i < bad.length; ++i) {
            p.arity = bad[i];
            vm.expectRevert(abi.encodeWithSelector(DotRefereeBadParams.selector, 6, bad[i]));
            dot.open(p);
        }
        p.arity = 64;
        dot.open(p);
        p.arity = 2;
        dot.open(p);
    }

    function test_unknownGame_reverts() public {
        vm.expectRevert(abi.encodeWithSelector(DotRefereeUnknown.selector, 9));
        dot.gameOf(9);
        vm.expectRevert(abi.encodeWithSelector(DotRefereeUnknown.selector, 9));
        dot.timeout(9);
        vm.expectRevert(abi.encodeWithSelector(DotRefereeUnknown.selector, 9));
        dot.outcome(9);
    }

    function test_splitPoints_matchesTheRule() public view {
        uint64[] memory pts = dot.splitPoints(0, 300, 16);
        assertEq(pts.length, 15); // step 19: 19 .. 285
        assertEq(pts[0], 19);
        assertEq(pts[14], 285);
        pts = dot.splitPoints(10, 17, 16); // step 1: 11 .. 16
        assertEq(pts.length, 6);
        assertEq(pts[0], 11);
        assertEq(pts[5], 16);
        assertEq(dot.splitPoints(4, 5, 16).length, 0);
        assertEq(dot.splitPoints(4, 4, 16).length, 0);
        pts = dot.splitPoints(0, 4096, 16);
        assertEq(pts.length, 15);
        assertEq(pts[0], 256);
    }

    // ---- claim ---------------------------------------------------------------------------

    function test_claim_honest_movesToPick() public {
        Play memory m = _honestDefender(K300, E_RANDN);
        IDotReferee.Claim memory cl = _claimOf(m);
        vm.expectEmit(address(dot));
        emit IDotReferee.Claimed(m.id, m.e.rowKey, m.e.colKey, cl.total, cl.splits);
        _claim(m, cl);
        IDotReferee.GameView memory v = _v(m);
        assertEq(uint256(v.stage), uint256(IDotReferee.Stage.Pick));
        assertEq(uint256(v.toMove), uint256(IElementReferee.Side.Challenger));
        assertEq(v.keys[0], m.e.rowKey);
        assertEq(v.keys[1], m.e.colKey);
        assertEq(v.lo, 0);
        assertEq(v.hi, 300);
        assertEq(v.pLo, 0);
        assertEq(v.pHi, cl.total);
        assertEq(v.moves, 1);
    }

    function test_claim_wrongWitnessRow_reverts() public {
        Play memory m = _honestDefender(K300, E_RANDN);
        IDotReferee.Claim memory cl = _claimOf(m);
        // a witness of a smaller class: the exponent (and the value it makes) is another
        cl.rowAt = m.e.rowAt == 0 ? 1 : 0;
        cl.row = _openA(m.c, m.e, cl.rowAt);
        vm.prank(defender);
        vm.expectPartialRevert(DotRefereeInconsistent.selector);
        dot.claim(m.id, cl);
    }

    function test_claim_wrongWitnessCol_reverts() public {
        Play memory m = _honestDefender(K300, E_RANDN);
        IDotReferee.Claim memory cl = _claimOf(m);
        cl.colAt = m.e.colAt == 0 ? 1 : 0;
        cl.col = _openB(m.c, m.e, cl.colAt);
        vm.prank(defender);
        vm.expectPartialRevert(DotRefereeInconsistent.selector);
        dot.claim(m.id, cl);
    }

    function test_claim_witnessOutOfRange_reverts() public {
        Play memory m = _honestDefender(K7, E_RANDN);
        IDotReferee.Claim memory cl = _claimOf(m);
        cl.rowAt = 7;
        vm.prank(defender);
        vm.expectRevert(abi.encodeWithSelector(DotRefereeWidth.selector, 7, 7));
        dot.claim(m.id, cl);
        cl = _claimOf(m);
        cl.colAt = 9;
        vm.prank(defender);
        vm.expectRevert(abi.encodeWithSelector(DotRefereeWidth.selector, 9, 7));
        dot.claim(m.id, cl);
    }

    function test_claim_wrongOpening_reverts() public {
        Play memory m = _honestDefender(K300, E_RANDN);
        IDotReferee.Claim memory cl = _claimOf(m);
        // the row's opening at another witness index: the opened element is another one
        cl.row = _openB(m.c, m.e, 0); // B's chunk against A's commitment
        cl.row.shape = _shapeOf(m.c, 0);
        vm.prank(defender);
        vm.expectPartialRevert(TensorCommitmentMismatch.selector);
        dot.claim(m.id, cl);
        cl = _claimOf(m);
        cl.col.chunk[0] ^= 0x01;
        vm.prank(defender);
        vm.expectPartialRevert(TensorCommitmentMismatch.selector);
        dot.claim(m.id, cl);
        cl = _claimOf(m);
        cl.col.chunk = new bytes(12);
        vm.prank(defender);
        vm.expectPartialRevert(TensorChunkLength.selector);
        dot.claim(m.id, cl);
    }

    function test_claim_wrongShape_reverts() public {
        Play memory m = _honestDefender(K7, E_RANDN);
        IDotReferee.Claim memory cl = _claimOf(m);
        cl.row.shape = new uint64[](3);
        vm.prank(defender);
        vm.expectRevert(abi.encodeWithSelector(DotRefereeShape.selector, 1, type(uint256).max, 3, 2));
        dot.claim(m.id, cl);
        cl = _claimOf(m);
        cl.row.shape[1] = 8;
        vm.prank(defender);
        vm.expectRevert(abi.encodeWithSelector(DotRefereeShape.selector, 1, 1, 8, 7));
        dot.claim(m.id, cl);
        cl = _claimOf(m);
        cl.col.shape[0] = 6;
        vm.prank(defender);
        vm.expectRevert(abi.encodeWithSelector(DotRefereeShape.selector, 2, 0, 6, 7));
        dot.claim(m.id, cl);
        cl = _claimOf(m);
        cl.col.shape[1] = 4;
        vm.prank(defender);
        vm.expectRevert(abi.encodeWithSelector(DotRefereeShape.selector, 2, 1, 4, 5));
        dot.claim(m.id, cl);
        cl = _claimOf(m);
        cl.col.shape = new uint64[](1);
        vm.prank(defender);
        vm.expectRevert(abi.encodeWithSelector(DotRefereeShape.selector, 2, type(uint256).max, 1, 2));
        dot.claim(m.id, cl);
        // the row count of A is not the contract's to check, but the commitment binds it
        cl = _claimOf(m);
        cl.row.shape[0] = 7;
        vm.prank(defender);
        vm.expectRevert(abi.encodeWithSelector(TensorChunkLength.selector, 168, 196));
        dot.claim(m.id, cl);
    }

    function test_claim_wrongSplitCount_reverts() public {
        Play memory m = _honestDefender(K300, E_RANDN);
        IDotReferee.Claim memory cl = _claimOf(m);
        assertEq(cl.splits.length, 15);
        int256[] memory s = new int256[](14);
        cl.splits = s;
        vm.prank(defender);
        vm.expectRevert(abi.encodeWithSelector(DotRefereeWidth.selector, 14, 15));
        dot.claim(m.id, cl);
        cl.splits = new int256[](16);
        vm.prank(defender);
        vm.expectRevert(abi.encodeWithSelector(DotRefereeWidth.selector, 16, 15));
        dot.claim(m.id, cl);
    }

    function test_claim_twice_reverts() public {
        Play memory m = _honestDefender(K7, E_RANDN);
        IDotReferee.Claim memory cl = _claimOf(m);
        _claim(m, cl);
        vm.prank(defender);
        vm.expectRevert(
            abi.encodeWithSelector(
                DotRefereeWrongStage.selector, m.id, IDotReferee.Stage.Claim, IDotReferee.Stage.Pick
            )
        );
        dot.claim(m.id, cl);
    }

    function test_claim_nonFiniteWitness_decidesAtClaim() public {
        uint256[2] memory els = [E_INF_ROW, E_NAN_ROW];
        for (uint256 x; x < 2; ++x) {
            Play memory m = _honestDefender(K64, els[x]);
            assertEq(m.e.value, 0x7FC00000);
            assertTrue(m.e.decided);
            IDotReferee.Claim memory cl = _claimOf(m);
            // splits are not allowed then
            cl.splits = new int256[](1);
            vm.prank(defender);
            vm.expectRevert(abi.encodeWithSelector(DotRefereeWidth.selector, 1, 0));
            dot.claim(m.id, cl);
            cl.splits = new int256[](0);
            _claim(m, cl);
            IDotReferee.GameView memory v = _v(m);
            assertEq(uint256(v.stage), uint256(IDotReferee.Stage.Resolved));
            assertEq(uint256(v.outcome), uint256(IElementReferee.Outcome.DefenderWins));
            assertEq(v.keys[0], NON_FINITE);
        }
    }

    function test_claim_nonFiniteRowFiniteValue_reverts() public {
        // a defender claiming a finite value at an inf row cannot name the inf witness
        DCase memory c = _c(K64);
        El memory e = _elAt(c, E_INF_ROW);
        uint256 id = dot.open(_dparams(c, e.element, [uint32(0x3F800000), e.value]));
        Play memory m;
        m.id = id;
        m.c = c;
        m.e = e;
        m.rowAt = e.rowAt;
        m.colAt = e.colAt;
        m.prefix[0] = e.prefix;
        IDotReferee.Claim memory cl = _claimOf(m);
        vm.prank(defender);
        vm.expectRevert(abi.encodeWithSelector(DotRefereeInconsistent.selector, 0x7FC00000, 0x3F800000));
        dot.claim(id, cl);
    }

    function test_claim_hugeRow_overflowsToInf() public {
        // row 5 is 3e38 everywhere: the honest element is +-inf (from the kernel), and the claim makes it
        for (uint256 ci = K1; ci <= K300; ++ci) {
            Play memory m = _honestDefender(ci, E_HUGE_ROW);
            if (m.e.value & 0x7FFFFFFF != 0x7F800000) continue;
            _claim(m, _claimOf(m));
            assertEq(uint256(_v(m).stage), uint256(IDotReferee.Stage.Pick));
        }
    }

    // ---- honest games --------------------------------------------------------------------

    function _liarPrefix(El memory e, uint256 at) internal pure returns (int256[] memory) {
        int256 delta = e.prefix[e.prefix.length - 1] == 0 ? int256(1) << 30 : e.prefix[e.prefix.length - 1];
        return _lieFrom(e.prefix, at, delta);
    }

    /// @dev Every case and finite played element: honest as defender and as challenger, the lie at the first,
    ///      a middle and the last prefix position, both players playing on; and the liar stopping.
    function _honestSideWins(uint256 ci) internal returns (uint256 games) {
        {
            DCase memory c = _c(ci);
            for (uint256 ei; vm.keyExistsJson(json, _at(string.concat(c.key, ".elements"), ei)); ++ei) {
                El memory e = _el(c, ei);
                if (e.decided) {
                    Play memory d = _newPlay(c, e, 0, e.prefix);
                    _dplayOut(d);
                    _dhonestWon(d);
                    ++games;
                    continue;
                }
                uint256[3] memory ats = [uint256(1), c.k / 2 + 1, c.k];
                for (uint256 a; a < 3; ++a) {
                    int256[] memory q = _liarPrefix(e, ats[a]);
                    for (uint256 h; h < 2; ++h) {
                        // a lying defender needs a value that differs (S changed may round to the same value)
                        if (h == 1 && _valueOf(c, e, e.rowKey, e.colKey, q[q.length - 1]) == e.value) {
                            continue;
                        }
                        for (uint256 stop; stop < 2; ++stop) {
                            Play memory m = _newPlay(c, e, h, q);
                            m.liarStops = stop == 1;
                            uint256 moves = _dplayOut(m);
                            _dhonestWon(m);
                            assertLe(_v(m).moves, 2 * (_ceilLog(c.k, 16) + 2), "moves bound");
                            moves;
                            ++games;
                        }
                    }
                }
            }
        }
        assertGe(games, 10);
    }

    function test_honestSideWins_mmK1() public {
        _honestSideWins(K1);
    }

    function test_honestSideWins_mmK2() public {
        _honestSideWins(K2);
    }

    function test_honestSideWins_mmK7() public {
        _honestSideWins(K7);
    }

    function test_honestSideWins_mmK64() public {
        _honestSideWins(K64);
    }

    function test_honestSideWins_mmK300() public {
        _honestSideWins(K300);
    }

    function test_honestSideWins_addmmN() public {
        _honestSideWins(ADDMM_N);
    }

    function test_honestSideWins_addmm1N() public {
        _honestSideWins(ADDMM_N + 1);
    }

    function test_honestSideWins_addmmMN() public {
        _honestSideWins(ADDMM_N + 2);
    }

    function test_honestSideWins_addmmScalar() public {
        _honestSideWins(ADDMM_N + 3);
    }

    function test_honestSideWins_addmmM1() public {
        _honestSideWins(ADDMM_N + 4);
    }

    function _ceilLog(uint256 k, uint256 n) internal pure returns (uint256 r) {
        uint256 x = 1;
        while (x < k) {
            x *= n;
            ++r;
        }
    }

    function test_honestDefender_liarChallengerPicksAnything() public {
        // the honest defender's every sub-range is right: whichever the challenger picks, the term proves
        DCase memory c = _c(K300);
        El memory e = _elAt(c, E_RANDN);
        for (uint256 t; t < 300; t += 37) {
            Play memory m = _newPlay(c, e, 0, e.prefix);
            _claim(m, _claimOf(m));
            while (_v(m).stage != IDotReferee.Stage.Resolved) {
                IDotReferee.GameView memory v = _v(m);
                if (v.stage == IDotReferee.Stage.Pick) {
                    _pick(m, _subRange(v.lo, v.hi, t));
                } else {
                    _dplay(m);
                }
            }
            _dhonestWon(m);
            assertEq(_v(m).lo, t, "the term played");
        }
    }

    /// @dev The index of the sub-range of [lo, hi] holding term t (lo <= t < hi).
    function _subRange(uint64 lo, uint64 hi, uint256 t) internal view returns (uint256 m) {
        uint64[] memory pts = dot.splitPoints(lo, hi, ARITY);
        while (m < pts.length && pts[m] <= t) ++m;
    }

    function test_liarInconsistentSplits_honestChallengerWins() public {
        // the defender's splits are garbage (not a prefix of any sum) but its total is its value's
        DCase memory c = _c(K300);
        El memory e = _elAt(c, E_RANDN);
        int256[] memory q = new int256[](e.prefix.length);
        for (uint256 x; x < q.length; ++x) {
            q[x] = int256(uint256(keccak256(abi.encode(x)))) >> 200;
        }
        q[0] = 0;
        q[q.length - 1] = e.prefix[e.prefix.length - 1] * 3;
        Play memory m = _newPlay(c, e, 1, q);
        _dplayOut(m);
        _dhonestWon(m);
    }

    // ---- exponents: refute and the term's class -------------------------------------------

    /// @dev A defender claiming a smaller row (0) or column (1) witness, with a consistent value for it.
    function _exponentLiar(uint256 ci, uint256 element, uint256 which) internal returns (Play memory m) {
        DCase memory c = _c(ci);
        El memory e = _elAt(c, element);
        m.c = c;
        m.e = e;
        m.honest = 1;
        m.rowAt = e.rowAt;
        m.colAt = e.colAt;
        uint64 other = (which == 0 ? e.rowAt : e.colAt) == 0 ? 1 : 0;
        IDotReferee.Opening memory o = which == 0 ? _openA(c, e, other) : _openB(c, e, other);
        if (which == 0) m.rowAt = other;
        else m.colAt = other;
        m.prefix[0] = e.prefix; // its S (any: the value follows from it)
        m.prefix[1] = e.prefix;
        uint16 key = _keyOf(o, which == 0 ? (e.element / c.n) * c.k + other : other * c.n + e.element % c.n);
        assertLt(key, which == 0 ? e.rowKey : e.colKey, "a smaller class");
        m.values[0] = _valueOf(c, e, which == 0 ? key : e.rowKey, which == 1 ? key : e.colKey, e.prefix[c.k]);
        m.values[1] = e.value;
        require(m.values[0] != m.values[1], "differs");
        m.id = dot.open(_dparams(c, e.element, m.values));
    }

    function _keyOf(IDotReferee.Opening memory o, uint256 index) internal pure returns (uint16) {
        uint256 at = index * 4 % 4096;
        bytes memory ch = o.chunk;
        uint32 x = uint32(uint8(ch[at])) | uint32(uint8(ch[at + 1])) << 8 | uint32(uint8(ch[at + 2])) << 16
            | uint32(uint8(ch[at + 3])) << 24;
        uint32 mag = x & 0x7FFFFFFF;
        if (mag == 0) return 0;
        if (mag >> 23 == 0xFF) return NON_FINITE;
        if (mag >> 23 != 0) return uint16((mag >> 23) + 24);
        uint16 b;
        while (mag != 0) {
            mag >>= 1;
            ++b;
        }
        return b + 1;
    }

    function test_refute_greaterRow_challengerWins() public {
        Play memory m = _exponentLiar(K300, E_RANDN, 0);
        _claim(m, _claimOf(m));
        assertLt(_v(m).keys[0], m.e.rowKey);
        vm.expectEmit(address(dot));
        emit IDotReferee.Refuted(m.id, 0, m.e.rowAt, m.e.rowKey);
        vm.prank(challenger);
        dot.refute(m.id, 0, m.e.rowAt, _openA(m.c, m.e, m.e.rowAt));
        assertEq(uint256(dot.outcome(m.id)), uint256(IElementReferee.Outcome.ChallengerWins));
    }

    function test_refute_greaterColumn_challengerWins() public {
        Play memory m = _exponentLiar(K300, E_RANDN, 1);
        _claim(m, _claimOf(m));
        vm.prank(challenger);
        dot.refute(m.id, 1, m.e.colAt, _openB(m.c, m.e, m.e.colAt));
        assertEq(uint256(dot.outcome(m.id)), uint256(IElementReferee.Outcome.ChallengerWins));
    }

    function test_refute_playedOut_honestChallengerWins() public {
        for (uint256 which; which < 2; ++which) {
            Play memory m = _exponentLiar(K64, E_RANDN, which);
            _dplayOut(m);
            _dhonestWon(m);
            assertEq(_v(m).moves, 2, "claim, refute");
        }
    }

    function test_refute_notGreater_reverts() public {
        Play memory m = _honestDefender(K300, E_RANDN);
        _claim(m, _claimOf(m));
        // the witness itself: equal class
        vm.prank(challenger);
        vm.expectRevert(abi.encodeWithSelector(DotRefereeNotGreater.selector, m.e.rowKey, m.e.rowKey));
        dot.refute(m.id, 0, m.e.rowAt, _openA(m.c, m.e, m.e.rowAt));
        vm.prank(challenger);
        vm.expectRevert(abi.encodeWithSelector(DotRefereeNotGreater.selector, m.e.colKey, m.e.colKey));
        dot.refute(m.id, 1, m.e.colAt, _openB(m.c, m.e, m.e.colAt));
        // a smaller element
        uint64 other = m.e.rowAt == 0 ? 1 : 0;
        vm.prank(challenger);
        vm.expectPartialRevert(DotRefereeNotGreater.selector);
        dot.refute(m.id, 0, other, _openA(m.c, m.e, other));
    }

    function test_refute_badIndex_reverts() public {
        Play memory m = _honestDefender(K7, E_RANDN);
        _claim(m, _claimOf(m));
        IDotReferee.Opening memory o = _openA(m.c, m.e, 0);
        vm.prank(challenger);
        vm.expectRevert(abi.encodeWithSelector(DotRefereeWidth.selector, 2, 2));
        dot.refute(m.id, 2, 0, o);
        vm.prank(challenger);
        vm.expectRevert(abi.encodeWithSelector(DotRefereeWidth.selector, 7, 7));
        dot.refute(m.id, 0, 7, o);
        vm.prank(defender);
        vm.expectRevert(abi.encodeWithSelector(DotRefereeNotYourTurn.selector, m.id, defender, challenger));
        dot.refute(m.id, 0, 0, o);
        // A's opening as B's: its shape is A's
        vm.prank(challenger);
        vm.expectRevert(abi.encodeWithSelector(DotRefereeShape.selector, 2, 0, 6, 7));
        dot.refute(m.id, 1, 0, o);
    }

    function test_refute_nonFiniteOfFiniteClaim_challengerWins() public {
        // the inf row: a defender claiming a finite witness (and a finite value) is refuted by the inf
        DCase memory c = _c(K64);
        El memory e = _elAt(c, E_INF_ROW);
        uint64 other = e.rowAt == 0 ? 1 : 0;
        IDotReferee.Opening memory o = _openA(c, e, other);
        uint16 key = _keyOf(o, (e.element / c.n) * c.k + other);
        int256 s = 12_345;
        uint32 v = _valueOf(c, e, key, e.colKey, s);
        Play memory m;
        m.c = c;
        m.e = e;
        m.rowAt = other;
        m.colAt = e.colAt;
        m.prefix[0] = new int256[](c.k + 1);
        m.prefix[0][c.k] = s;
        m.e.decided = false; // the defender's claim is a finite one
        m.id = dot.open(_dparams(c, e.element, [v, e.value]));
        _claim(m, _claimOf(m));
        vm.prank(challenger);
        dot.refute(m.id, 0, e.rowAt, _openA(c, e, e.rowAt));
        assertEq(uint256(dot.outcome(m.id)), uint256(IElementReferee.Outcome.ChallengerWins));
        assertEq(e.rowKey, NON_FINITE);
    }

    function test_proveTerm_largerClassAtTerm_challengerWins() public {
        // the challenger does not refute but steers the bisection to the true witness: the term's class
        // exceeds the claim, which loses even though the defender's sums are its own grid's
        for (uint256 which; which < 2; ++which) {
            Play memory m = _exponentLiar(K300, E_RANDN, which);
            _claim(m, _claimOf(m));
            uint256 t = which == 0 ? m.e.rowAt : m.e.colAt;
            while (_v(m).stage != IDotReferee.Stage.Resolved) {
                IDotReferee.GameView memory v = _v(m);
                if (v.stage == IDotReferee.Stage.Pick) {
                    _pick(m, _subRange(v.lo, v.hi, t));
                } else {
                    _dplay(m);
                }
            }
            assertEq(_v(m).lo, t);
            assertEq(uint256(dot.outcome(m.id)), uint256(IElementReferee.Outcome.ChallengerWins));
        }
    }

    // ---- pick, split, proveTerm ------------------------------------------------------------

    function test_pick_wrongPassBack_reverts() public {
        Play memory m = _honestDefender(K300, E_RANDN);
        _claim(m, _claimOf(m));
        int256[] memory theirs = _theirs(m);
        theirs[3] += 1;
        vm.prank(challenger);
        vm.expectPartialRevert(DotRefereeOpponentMismatch.selector);
        dot.pick(m.id, theirs, 0);
        int256[] memory shorter = new int256[](14);
        vm.prank(challenger);
        vm.expectPartialRevert(DotRefereeOpponentMismatch.selector);
        dot.pick(m.id, shorter, 0);
    }

    function test_pick_outOfRange_reverts() public {
        Play memory m = _honestDefender(K300, E_RANDN);
        _claim(m, _claimOf(m));
        int256[] memory theirs = _theirs(m);
        vm.prank(challenger);
        vm.expectRevert(abi.encodeWithSelector(DotRefereeWidth.selector, 16, 16));
        dot.pick(m.id, theirs, 16);
        // the last sub-range (m = count) is allowed: [285, 300]
        vm.prank(challenger);
        dot.pick(m.id, theirs, 15);
        IDotReferee.GameView memory v = _v(m);
        assertEq(v.lo, 285);
        assertEq(v.hi, 300);
        assertEq(v.pLo, m.e.prefix[285]);
        assertEq(v.pHi, m.e.prefix[300]);
        assertEq(uint256(v.stage), uint256(IDotReferee.Stage.Split));
    }

    function test_pick_firstSubRange_keepsLo() public {
        Play memory m = _honestDefender(K300, E_RANDN);
        _claim(m, _claimOf(m));
        vm.expectEmit(address(dot));
        emit IDotReferee.Picked(m.id, 0, 19, 0, m.e.prefix[19]);
        _pick(m, 0);
    }

    function test_pick_wrongStageAndTurn_reverts() public {
        Play memory m = _honestDefender(K300, E_RANDN);
        int256[] memory none = new int256[](0);
        vm.prank(challenger);
        vm.expectRevert(
            abi.encodeWithSelector(
                DotRefereeWrongStage.selector, m.id, IDotReferee.Stage.Pick, IDotReferee.Stage.Claim
            )
        );
        dot.pick(m.id, none, 0);
        _claim(m, _claimOf(m));
        int256[] memory theirs = _theirs(m);
        vm.prank(defender);
        vm.expectRevert(abi.encodeWithSelector(DotRefereeNotYourTurn.selector, m.id, defender, challenger));
        dot.pick(m.id, theirs, 0);
    }

    function test_split_wrongCount_reverts() public {
        Play memory m = _honestDefender(K300, E_RANDN);
        _claim(m, _claimOf(m));
        _pick(m, 0); // [0, 19]: 18 interior points at step 2? step ceil(19/16) = 2: 9 points
        uint256 count = dot.splitPoints(0, 19, ARITY).length;
        assertEq(count, 9);
        vm.prank(defender);
        vm.expectRevert(abi.encodeWithSelector(DotRefereeWidth.selector, 8, 9));
        dot.split(m.id, new int256[](8));
        vm.prank(challenger);
        vm.expectRevert(abi.encodeWithSelector(DotRefereeNotYourTurn.selector, m.id, challenger, defender));
        dot.split(m.id, new int256[](9));
        int256[] memory s = _splits(m.e.prefix, 0, 19);
        vm.expectEmit(address(dot));
        emit IDotReferee.SplitPosted(m.id, 0, 19, s);
        vm.prank(defender);
        dot.split(m.id, s);
        assertEq(uint256(_v(m).stage), uint256(IDotReferee.Stage.Pick));
    }

    function _toTerm(Play memory m, uint256 t) internal {
        _claim(m, _claimOf(m));
        while (_v(m).stage != IDotReferee.Stage.Term) {
            IDotReferee.GameView memory v = _v(m);
            if (v.stage == IDotReferee.Stage.Pick) {
                _pick(m, _subRange(v.lo, v.hi, t));
            } else {
                _dplay(m);
            }
        }
    }

    function test_proveTerm_right_defenderWins() public {
        Play memory m = _honestDefender(K300, E_RANDN);
        _toTerm(m, 123);
        IDotReferee.GameView memory v = _v(m);
        assertEq(v.lo, 123);
        assertEq(v.hi, 124);
        IDotReferee.Opening memory a = _openA(m.c, m.e, 123);
        IDotReferee.Opening memory b = _openB(m.c, m.e, 123);
        vm.recordLogs();
        vm.prank(defender);
        dot.proveTerm(m.id, a, b);
        assertEq(uint256(dot.outcome(m.id)), uint256(IElementReferee.Outcome.DefenderWins));
        Vm.Log[] memory logs = vm.getRecordedLogs();
        bool seen;
        for (uint256 x; x < logs.length; ++x) {
            if (logs[x].topics[0] != IDotReferee.TermComputed.selector) continue;
            (uint64 at, int256 qa, int256 qb, int256 claimed) =
                abi.decode(logs[x].data, (uint64, int256, int256, int256));
            assertEq(at, 123);
            assertEq(claimed, m.e.prefix[124] - m.e.prefix[123]);
            assertEq(qa * qb, claimed, "the term recomputed is the grid's");
            assertTrue(qa != 0 && qb != 0);
            seen = true;
        }
        assertTrue(seen, "TermComputed");
    }

    function test_proveTerm_wrong_challengerWins() public {
        // the defender's sums are off from term 124 on: the term [123, 124] does not add up
        DCase memory c = _c(K300);
        El memory e = _elAt(c, E_RANDN);
        Play memory m = _newPlay(c, e, 1, _liarPrefix(e, 124));
        _toTerm(m, 123);
        vm.prank(defender);
        dot.proveTerm(m.id, _openA(c, e, 123), _openB(c, e, 123));
        assertEq(uint256(dot.outcome(m.id)), uint256(IElementReferee.Outcome.ChallengerWins));
    }

    function test_proveTerm_otherElements_reverts() public {
        Play memory m = _honestDefender(K300, E_RANDN);
        _toTerm(m, 123);
        IDotReferee.Opening memory a = _openA(m.c, m.e, 123);
        vm.prank(defender);
        vm.expectRevert(abi.encodeWithSelector(DotRefereeShape.selector, 2, 0, 6, 300));
        dot.proveTerm(m.id, a, a);
        IDotReferee.Opening memory b = _openB(m.c, m.e, 123);
        b.chunk[7] ^= 0x04;
        vm.prank(defender);
        vm.expectPartialRevert(TensorCommitmentMismatch.selector);
        dot.proveTerm(m.id, a, b);
        vm.prank(challenger);
        vm.expectRevert(abi.encodeWithSelector(DotRefereeNotYourTurn.selector, m.id, challenger, defender));
        dot.proveTerm(m.id, _openA(m.c, m.e, 123), _openB(m.c, m.e, 123));
    }

    function test_k1_claimThenPickThenTerm() public {
        Play memory m = _honestDefender(K1, E_RANDN);
        IDotReferee.Claim memory cl = _claimOf(m);
        assertEq(cl.splits.length, 0);
        _claim(m, cl);
        assertEq(uint256(_v(m).stage), uint256(IDotReferee.Stage.Pick));
        vm.prank(challenger);
        dot.pick(m.id, new int256[](0), 0);
        assertEq(uint256(_v(m).stage), uint256(IDotReferee.Stage.Term));
        vm.prank(challenger);
        vm.expectRevert(abi.encodeWithSelector(DotRefereeNotYourTurn.selector, m.id, challenger, defender));
        dot.proveTerm(m.id, _openA(m.c, m.e, 0), _openB(m.c, m.e, 0));
        vm.prank(defender);
        dot.proveTerm(m.id, _openA(m.c, m.e, 0), _openB(m.c, m.e, 0));
        assertEq(uint256(dot.outcome(m.id)), uint256(IElementReferee.Outcome.DefenderWins));
        assertEq(_v(m).moves, 3);
    }

    function test_k1_pickOutOfRange_reverts() public {
        Play memory m = _honestDefender(K1, E_RANDN);
        _claim(m, _claimOf(m));
        vm.prank(challenger);
        vm.expectRevert(abi.encodeWithSelector(DotRefereeWidth.selector, 1, 1));
        dot.pick(m.id, new int256[](0), 1);
    }

    function test_zeroRowAndColumn_playOut() public {
        uint256[2] memory els = [E_ZERO_ROW, E_ZERO_COL];
        for (uint256 x; x < 2; ++x) {
            Play memory m = _honestDefender(K64, els[x]);
            assertEq(m.e.value, 0, "+0");
            assertEq(x == 0 ? m.e.rowKey : m.e.colKey, 0, "class 0");
            _dplayOut(m);
            _dhonestWon(m);
        }
    }

    function test_k0_claimDecides() public {
        // K = 0: C = +0 without any sum (the inputs are never opened)
        IDotReferee.Params memory p = _goodParams();
        p.k = 0;
        p.values = [uint32(0), 0x80000000];
        uint256 id = dot.open(p);
        IDotReferee.Claim memory cl;
        vm.prank(defender);
        dot.claim(id, cl);
        assertEq(uint256(dot.outcome(id)), uint256(IElementReferee.Outcome.DefenderWins));
        // a defender claiming -0 (or anything but +0) cannot claim
        p.values = [uint32(0x80000000), 0];
        id = dot.open(p);
        vm.prank(defender);
        vm.expectRevert(abi.encodeWithSelector(DotRefereeInconsistent.selector, 0, 0x80000000));
        dot.claim(id, cl);
        // nor post splits
        p.values = [uint32(0), 1];
        id = dot.open(p);
        cl.splits = new int256[](1);
        vm.prank(defender);
        vm.expectRevert(abi.encodeWithSelector(DotRefereeWidth.selector, 1, 0));
        dot.claim(id, cl);
    }

    // ---- addmm bias -------------------------------------------------------------------------

    function test_addmm_everyBiasShape_honestWins() public {
        for (uint256 ci = ADDMM_N; ci < CASES; ++ci) {
            DCase memory c = _c(ci);
            El memory e = _elAt(c, E_SUBNORMAL_ROW); // row 2, column 0: a broadcast row for [N] and [1, N]
            for (uint256 h; h < 2; ++h) {
                int256[] memory q = _liarPrefix(e, 3);
                if (h == 1 && _valueOf(c, e, e.rowKey, e.colKey, q[q.length - 1]) == e.value) continue;
                Play memory m = _newPlay(c, e, h, q);
                _dplayOut(m);
                _dhonestWon(m);
            }
        }
    }

    function test_addmm_biasBadShape_reverts() public {
        Play memory m = _honestDefender(ADDMM_N, E_RANDN);
        IDotReferee.Claim memory cl = _claimOf(m);
        cl.bias.shape = new uint64[](3);
        vm.prank(defender);
        vm.expectRevert(abi.encodeWithSelector(DotRefereeShape.selector, 0, type(uint256).max, 3, 2));
        dot.claim(m.id, cl);
        cl = _claimOf(m);
        cl.bias.shape[0] = 4; // [4]: neither 1 nor N
        vm.prank(defender);
        vm.expectRevert(abi.encodeWithSelector(DotRefereeShape.selector, 0, 0, 4, 5));
        dot.claim(m.id, cl);
        cl = _claimOf(m);
        cl.bias.shape[0] = 1; // [1]: broadcast from index 0; the chunk is [5]'s
        vm.prank(defender);
        vm.expectRevert(abi.encodeWithSelector(TensorChunkLength.selector, 20, 4));
        dot.claim(m.id, cl);
        cl = _claimOf(m);
        cl.bias.chunk[0] ^= 0x80;
        vm.prank(defender);
        vm.expectPartialRevert(TensorCommitmentMismatch.selector);
        dot.claim(m.id, cl);
    }

    function test_addmm_nonFiniteRow_decidesAtClaim() public {
        Play memory m = _honestDefender(ADDMM_N, E_NAN_ROW);
        _claim(m, _claimOf(m));
        assertEq(uint256(dot.outcome(m.id)), uint256(IElementReferee.Outcome.DefenderWins));
    }

    // ---- clocks -----------------------------------------------------------------------------

    function test_timeout_everyStage() public {
        // stage -> the side to move, reached by an honest defender's game
        for (uint256 st; st < 4; ++st) {
            Play memory m = _honestDefender(K300, E_RANDN);
            if (st >= 1) _claim(m, _claimOf(m)); // Pick
            if (st >= 2) {
                _pick(m, 2); // Split
            }
            if (st >= 3) _toTermFromSplit(m, 40); // Term
            IDotReferee.GameView memory v = _v(m);
            uint256 side = uint256(v.toMove);
            uint256 deadline = v.turnStartedAt + v.clockLeft[side];
            vm.warp(deadline);
            vm.expectRevert(abi.encodeWithSelector(DotRefereeClockRunning.selector, m.id, deadline));
            dot.timeout(m.id);
            vm.warp(deadline + 1);
            bytes memory cd = _calldata(m);
            (bool ok,, bytes memory ret) = _dsend(v.players[side], cd);
            assertFalse(ok, "a late move");
            assertEq(ret, abi.encodeWithSelector(DotRefereeClockExpired.selector, m.id, deadline));
            vm.prank(stranger);
            dot.timeout(m.id);
            assertEq(
                uint256(dot.outcome(m.id)),
                uint256(
                    side == 0 ? IElementReferee.Outcome.ChallengerWins : IElementReferee.Outcome.DefenderWins
                )
            );
            assertEq(_v(m).clockLeft[side], 0);
            vm.expectRevert(abi.encodeWithSelector(DotRefereeNotPlaying.selector, m.id));
            dot.timeout(m.id);
        }
    }

    function _toTermFromSplit(Play memory m, uint256 t) internal {
        while (_v(m).stage != IDotReferee.Stage.Term) {
            IDotReferee.GameView memory v = _v(m);
            if (v.stage == IDotReferee.Stage.Pick) {
                _pick(m, _subRange(v.lo, v.hi, t));
            } else {
                _dplay(m);
            }
        }
    }

    function test_clocks_chargeEachSide() public {
        Play memory m = _honestDefender(K300, E_RANDN);
        vm.warp(block.timestamp + 100);
        _claim(m, _claimOf(m));
        vm.warp(block.timestamp + 250);
        _pick(m, 0);
        IDotReferee.GameView memory v = _v(m);
        assertEq(v.clockLeft[0], CLOCK - 100);
        assertEq(v.clockLeft[1], CLOCK - 250);
        assertEq(v.turnStartedAt, block.timestamp);
        assertEq(v.moves, 2);
    }

    function test_resolved_noMoves() public {
        Play memory m = _honestDefender(K1, E_RANDN);
        _dplayOut(m);
        IDotReferee.Claim memory cl = _claimOf(m);
        vm.prank(defender);
        vm.expectRevert(
            abi.encodeWithSelector(
                DotRefereeWrongStage.selector, m.id, IDotReferee.Stage.Claim, IDotReferee.Stage.Resolved
            )
        );
        dot.claim(m.id, cl);
    }

    // ---- owner, meter ---------------------------------------------------------------------

    function test_meter_countsEachSide() public {
        Play memory m = _honestDefender(K300, E_RANDN);
        assertEq(dot.meterOf(m.id)[0], 0);
        _claim(m, _claimOf(m));
        uint256[2] memory g1 = dot.meterOf(m.id);
        assertGt(g1[0], 21_000, "the claim's gas, the base included");
        assertEq(g1[1], 0);
        _pick(m, 0);
        uint256[2] memory g2 = dot.meterOf(m.id);
        assertEq(g2[0], g1[0], "the defender's meter is unchanged");
        assertGt(g2[1], 21_000);
        // a stranger's timeout call is nobody's
        IDotReferee.GameView memory v = _v(m);
        vm.warp(v.turnStartedAt + v.clockLeft[0] + 1);
        vm.prank(stranger);
        dot.timeout(m.id);
        uint256[2] memory g3 = dot.meterOf(m.id);
        assertEq(g3[0], g2[0]);
        assertEq(g3[1], g2[1]);
        // a player's timeout call is metered to it
        Play memory m2 = _honestDefender(K300, E_RANDN);
        vm.warp(block.timestamp + CLOCK + 1);
        vm.prank(challenger);
        dot.timeout(m2.id);
        assertGt(dot.meterOf(m2.id)[1], 21_000);
        assertEq(dot.meterOf(m2.id)[0], 0);
    }
}

