// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {DotGames} from "./utils/DotGames.sol";
import {DotReferee} from "../src/DotReferee.sol";
import {ElementReferee} from "../src/ElementReferee.sol";
import {TraceReferee} from "../src/TraceReferee.sol";
import {SumReferee} from "../src/SumReferee.sol";
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
    DotRefereeNotGreater,
    DotRefereeNotOwner
} from "../src/lib/DotRefereeErrors.sol";
import {ElementRefereeNotDot, ElementRefereeUnknown} from "../src/lib/ElementRefereeErrors.sol";
import {TensorCommitmentMismatch} from "../src/lib/Errors.sol";

/// @notice Every rule of DotReferee (docs/game.md 2.8) on the real tensors of scripts/dot_referee_vectors.py:
///         the honest side wins every case as defender and as challenger against a liar whose prefix sums go
///         wrong at the first, middle or last term and who plays on or stops; every bad input reverts.
contract DotRefereeTest is DotGames {
    // ---- the honest side always wins --------------------------------------------------------

    function test_vectors_caseCount_succeeds() public view {
        assertEq(_count(".cases"), 8, "a test per case below");
    }

    function test_vectors_mmK64_honestSideWins_succeeds() public {
        _everyWay(0);
    }

    function test_vectors_mmK1_honestSideWins_succeeds() public {
        _everyWay(1);
    }

    function test_vectors_addmmBiasN_honestSideWins_succeeds() public {
        _everyWay(2);
    }

    function test_vectors_addmmBiasMN_honestSideWins_succeeds() public {
        _everyWay(3);
    }

    function test_vectors_mmNonFinite_honestSideWins_succeeds() public {
        _everyWay(4);
    }

    function test_vectors_mmZeroRow_honestSideWins_succeeds() public {
        _everyWay(5);
    }

    function test_vectors_mmSubnormalRow_honestSideWins_succeeds() public {
        _everyWay(6);
    }

    function test_vectors_mmNegativeUnderflow_plusZero_succeeds() public {
        Case memory c = _case(".cases", 7);
        assertEq(c.honestValue, 0, "+0 (IEEE rounding of the negative product would give -0)");
        assertLt(c.prefix[c.k], 0, "a negative S");
        _everyWay(7);
    }

    /// @dev Honest as defender and as challenger; the liar's sums wrong from the first, middle or last term;
    ///      the liar plays on or stops after its first move.
    function _everyWay(uint256 i) internal {
        Case memory c = _case(".cases", i);
        uint64[3] memory from = [uint64(1), c.k / 2 == 0 ? 1 : c.k / 2, c.k];
        for (uint256 honest; honest < 2; ++honest) {
            for (uint256 f; f < 3; ++f) {
                for (uint256 stops; stops < 2; ++stops) {
                    Match memory m = _newMatch(c, honest, from[f], stops);
                    _play(m);
                    _assertHonestWon(m);
                }
            }
        }
    }

    function test_play_liarLiesAtTheEnd_termKminus1Recomputed_succeeds() public {
        Case memory c = _case(".cases", 0); // mm K = 64
        Match memory m = _newMatch(c, 1, c.k, 0);
        vm.recordLogs();
        _play(m);
        _assertHonestWon(m);
        IDotReferee.GameView memory v = dot.gameOf(m.id);
        assertEq(v.lo, c.k - 1, "the last term");
        assertEq(v.hi, c.k, "range of one term");
        assertEq(v.pHi, c.liarTotal, "the liar's S");
        assertEq(v.pLo, c.prefix[c.k - 1], "the true P(K - 1)");
        // claim; pick (64 -> 4 terms) and split; the last pick (4 -> 1); the term
        assertEq(v.moves, 1 + 2 + 1 + 1, "moves");
    }

    function test_claim_nonFiniteWitness_decidesAtOnce_succeeds() public {
        Case memory c = _case(".cases", 4); // a row holding +inf: C = NaN
        assertTrue(c.decidedAtClaim && c.rowKey == 0xFFFF, "the fixture's witness is non-finite");
        assertEq(c.honestValue, 0x7FC00000, "the canonical NaN");
        Match memory m = _newMatch(c, 0, 1, 0);
        IDotReferee.Claim memory cl = _claimOf(m, 0);
        vm.prank(defender);
        dot.claim(m.id, cl);
        _assertHonestWon(m);
        assertEq(dot.gameOf(m.id).moves, 1, "one move");
    }

    function test_claim_zeroRow_exponentOne_succeeds() public {
        Case memory c = _case(".cases", 5);
        assertEq(c.rowKey, 0, "an all-zero row");
        assertEq(c.honestValue, 0, "+0: a product that is zero has no sign");
        Match memory m = _newMatch(c, 0, 1, 0);
        _play(m);
        _assertHonestWon(m);
    }

    // ---- open ---------------------------------------------------------------------------------

    function test_open_badParams_reverts() public {
        Case memory c = _case(".cases", 0);
        IDotReferee.Params memory p = _params(c, [c.honestValue, c.liarValue]);
        p.players = [defender, challenger];
        p.op = 2;
        vm.expectRevert(abi.encodeWithSelector(DotRefereeBadParams.selector, 1, 2));
        dot.open(p);
        p.op = 1; // addmm takes three inputs
        vm.expectRevert(abi.encodeWithSelector(DotRefereeBadParams.selector, 2, 2));
        dot.open(p);
        p.op = 0;
        p.players = [defender, defender];
        vm.expectRevert(abi.encodeWithSelector(DotRefereeBadParams.selector, 3, uint160(defender)));
        dot.open(p);
        p.players = [defender, challenger];
        p.values = [c.honestValue, c.honestValue];
        vm.expectRevert(abi.encodeWithSelector(DotRefereeBadParams.selector, 4, c.honestValue));
        dot.open(p);
        p.values = [c.honestValue, c.liarValue];
        p.clocks = [uint64(0), CLOCK];
        vm.expectRevert(abi.encodeWithSelector(DotRefereeBadParams.selector, 5, 0));
        dot.open(p);
        p.clocks = [CLOCK, CLOCK];
        p.arity = 12;
        vm.expectRevert(abi.encodeWithSelector(DotRefereeBadParams.selector, 6, 12));
        dot.open(p);
        p.arity = N;
        p.n = 0;
        vm.expectRevert(abi.encodeWithSelector(DotRefereeBadParams.selector, 7, 0));
        dot.open(p);
        vm.expectRevert(abi.encodeWithSelector(DotRefereeUnknown.selector, 1));
        dot.gameOf(1); // nothing opened
    }

    // ---- claim --------------------------------------------------------------------------------

    function test_claim_inconsistentS_reverts() public {
        Case memory c = _case(".cases", 0);
        Match memory m = _newMatch(c, 0, 1, 0);
        IDotReferee.Claim memory cl = _claimOf(m, 0);
        cl.total += 1 << 20; // another value than the defender's
        vm.prank(defender);
        vm.expectPartialRevert(DotRefereeInconsistent.selector);
        dot.claim(m.id, cl);
    }

    function test_claim_badWitnessAndSplits_reverts() public {
        Case memory c = _case(".cases", 0);
        Match memory m = _newMatch(c, 0, 1, 0);
        IDotReferee.Claim memory cl = _claimOf(m, 0);
        cl.rowAt = c.k; // out of the row
        vm.prank(defender);
        vm.expectRevert(abi.encodeWithSelector(DotRefereeWidth.selector, c.k, c.k));
        dot.claim(m.id, cl);
        cl = _claimOf(m, 0);
        cl.row.chunk[0] ^= 0x01; // not the committed A
        vm.prank(defender);
        vm.expectPartialRevert(TensorCommitmentMismatch.selector);
        dot.claim(m.id, cl);
        cl = _claimOf(m, 0);
        cl.row.shape[1] = c.k + 1;
        vm.prank(defender);
        vm.expectRevert(abi.encodeWithSelector(DotRefereeShape.selector, 1, 1, c.k + 1, c.k));
        dot.claim(m.id, cl);
        cl = _claimOf(m, 0);
        cl.splits = new int256[](1);
        vm.prank(defender);
        vm.expectRevert(abi.encodeWithSelector(DotRefereeWidth.selector, 1, 15));
        dot.claim(m.id, cl);
        cl = _claimOf(m, 0);
        vm.prank(challenger);
        vm.expectRevert(abi.encodeWithSelector(DotRefereeNotYourTurn.selector, m.id, challenger, defender));
        dot.claim(m.id, cl);
    }

    // ---- refute -------------------------------------------------------------------------------

    /// @dev A defender that names a smaller element of the row as its witness (claiming a smaller exponent)
    ///      with the S its value then follows from: one opening of the true maximum refutes it.
    function test_refute_smallerWitness_challengerWins_succeeds() public {
        Case memory c = _case(".cases", 0);
        (IDotReferee.Claim memory cl, uint32 value) = _smallWitnessClaim(c);
        IDotReferee.Params memory p = _params(c, [value, c.honestValue]);
        p.players = [defender, challenger];
        uint256 id = dot.open(p);
        vm.prank(defender);
        dot.claim(id, cl);
        // A refutation whose class does not exceed the claim reverts.
        vm.prank(challenger);
        vm.expectPartialRevert(DotRefereeNotGreater.selector);
        dot.refute(id, 0, cl.rowAt, _openA(c, cl.rowAt));
        vm.prank(challenger);
        vm.expectRevert(abi.encodeWithSelector(DotRefereeWidth.selector, 2, 2));
        dot.refute(id, 2, c.rowAt, _openA(c, c.rowAt));
        vm.prank(challenger);
        dot.refute(id, 0, c.rowAt, _openA(c, c.rowAt));
        assertEq(uint256(dot.outcome(id)), uint256(IElementReferee.Outcome.ChallengerWins), "refuted");
        assertEq(dot.gameOf(id).keys[0], dot.gameOf(id).keys[0], "keys recorded");
    }

    /// @dev The same wrong witness, but the challenger picks instead of refuting: the term it reaches holds the
    ///      true maximum of the row (a class above the claim), which decides for the challenger too.
    function test_proveTerm_elementAboveTheClaimedClass_challengerWins_succeeds() public {
        Case memory c = _case(".cases", 0);
        (IDotReferee.Claim memory cl, uint32 value) = _smallWitnessClaim(c);
        IDotReferee.Params memory p = _params(c, [value, c.honestValue]);
        p.players = [defender, challenger];
        uint256 id = dot.open(p);
        vm.prank(defender);
        dot.claim(id, cl);
        // Walk down to the term holding the row's maximum, the defender posting whatever splits.
        for (uint256 guard; guard < 20; ++guard) {
            IDotReferee.GameView memory v = dot.gameOf(id);
            if (v.stage == IDotReferee.Stage.Term) break;
            uint64[] memory pts = dot.splitPoints(v.lo, v.hi, N);
            int256[] memory zeros = new int256[](pts.length);
            if (v.stage == IDotReferee.Stage.Split) {
                vm.prank(defender);
                dot.split(id, zeros);
                continue;
            }
            int256[] memory theirs = v.lo == 0 && v.hi == c.k ? cl.splits : zeros;
            uint256 pick = pts.length;
            for (uint256 i; i < pts.length; ++i) {
                if (c.rowAt < pts[i]) {
                    pick = i;
                    break;
                }
            }
            vm.prank(challenger);
            dot.pick(id, theirs, pick);
        }
        IDotReferee.GameView memory w = dot.gameOf(id);
        assertEq(w.lo, c.rowAt, "the term of the row's maximum");
        vm.prank(defender);
        dot.proveTerm(id, _openA(c, w.lo), _openB(c, w.lo));
        assertEq(uint256(dot.outcome(id)), uint256(IElementReferee.Outcome.ChallengerWins), "claim disproved");
    }

    /// @dev A claim whose row witness is the row's smallest-class element, with an S that makes it consistent.
    function _smallWitnessClaim(Case memory c) internal returns (IDotReferee.Claim memory cl, uint32 value) {
        Match memory m;
        m.c = c;
        m.honest = 0;
        cl = _claimOf(m, 0);
        // The element of row i of the smallest magnitude class (the fixture's rows are randn: plenty of them).
        uint256 best = type(uint256).max;
        for (uint64 at; at < c.k; ++at) {
            uint32 bits = uint32(_le(_openA(c, at).chunk, ((c.element / c.n) * c.k + at) * 4 % 4096));
            uint256 cls = (bits & 0x7FFFFFFF) >> 23;
            if (cls < best && bits & 0x7FFFFFFF != 0) {
                best = cls;
                cl.rowAt = at;
            }
        }
        cl.row = _openA(c, cl.rowAt);
        // S stays the true one; the claim's value is what it then gives (a larger result: a smaller scale).
        value = _valueOf(c, cl);
        assertTrue(value != c.honestValue, "a different value");
    }

    /// @dev The value a claim makes, by asking the contract: it reverts DotRefereeInconsistent(computed, value).
    function _valueOf(Case memory c, IDotReferee.Claim memory cl) internal returns (uint32 computed) {
        IDotReferee.Params memory p = _params(c, [uint32(1), uint32(2)]);
        p.players = [defender, challenger];
        uint256 id = dot.open(p);
        vm.prank(defender);
        (bool ok, bytes memory ret) = address(dot).call(abi.encodeCall(IDotReferee.claim, (id, cl)));
        assertFalse(ok, "probe");
        assembly ("memory-safe") {
            computed := mload(add(ret, 36))
        }
    }

    function _le(bytes memory b, uint256 at) internal pure returns (uint256 v) {
        for (uint256 i; i < 4; ++i) {
            v |= uint256(uint8(b[at + i])) << (8 * i);
        }
    }

    // ---- pick, split, term ---------------------------------------------------------------------

    function test_pick_badPassBackOrIndex_reverts() public {
        Case memory c = _case(".cases", 0);
        Match memory m = _newMatch(c, 0, 1, 0);
        IDotReferee.Claim memory cl = _claimOf(m, 0);
        vm.prank(defender);
        dot.claim(m.id, cl);
        int256[] memory wrong = _splits(m, 0, 0, c.k);
        wrong[3] += 1;
        vm.prank(challenger);
        vm.expectPartialRevert(DotRefereeOpponentMismatch.selector);
        dot.pick(m.id, wrong, 0);
        vm.prank(challenger);
        vm.expectRevert(abi.encodeWithSelector(DotRefereeWidth.selector, 16, 16));
        dot.pick(m.id, cl.splits, 16);
        vm.prank(defender);
        vm.expectRevert(abi.encodeWithSelector(DotRefereeNotYourTurn.selector, m.id, defender, challenger));
        dot.pick(m.id, cl.splits, 0);
        vm.prank(challenger);
        vm.expectRevert(
            abi.encodeWithSelector(
                DotRefereeWrongStage.selector, m.id, IDotReferee.Stage.Split, IDotReferee.Stage.Pick
            )
        );
        dot.split(m.id, cl.splits);
        vm.prank(challenger);
        dot.pick(m.id, cl.splits, 2);
        IDotReferee.GameView memory v = dot.gameOf(m.id);
        assertEq(v.lo, 8, "lo: the second split point (step 4)");
        assertEq(v.hi, 12, "hi: the third");
        assertEq(v.pLo, c.prefix[8], "P(8)");
        assertEq(v.pHi, c.prefix[12], "P(12)");
        vm.prank(defender);
        vm.expectRevert(abi.encodeWithSelector(DotRefereeWidth.selector, 0, 3));
        dot.split(m.id, new int256[](0));
    }

    function test_splitPoints_coverTheRange_succeeds() public view {
        uint64[] memory p = dot.splitPoints(0, 4096, 16);
        assertEq(p.length, 15, "15 interior points");
        assertEq(p[0], 256, "step 256");
        p = dot.splitPoints(3, 4, 16);
        assertEq(p.length, 0, "one term: none");
        p = dot.splitPoints(0, 7, 16);
        assertEq(p.length, 6, "one point per term");
        p = dot.splitPoints(0, 300, 16);
        assertEq(p.length, 15, "step 19: 15 points below 300");
        assertEq(p[14], 285, "the last");
    }

    // ---- clocks, ownership ----------------------------------------------------------------

    function test_timeout_everyStage_succeeds() public {
        Case memory c = _case(".cases", 0);
        Match memory m = _newMatch(c, 0, 1, 0);
        vm.expectPartialRevert(DotRefereeClockRunning.selector);
        dot.timeout(m.id);
        IDotReferee.Claim memory cl = _claimOf(m, 0);
        vm.warp(block.timestamp + CLOCK + 1);
        vm.prank(defender);
        vm.expectPartialRevert(DotRefereeClockExpired.selector);
        dot.claim(m.id, cl);
        dot.timeout(m.id);
        assertEq(
            uint256(dot.outcome(m.id)), uint256(IElementReferee.Outcome.ChallengerWins), "defender timed out"
        );
        vm.expectRevert(abi.encodeWithSelector(DotRefereeNotPlaying.selector, m.id));
        dot.timeout(m.id);
        // The challenger timed out at the pick.
        m = _newMatch(c, 0, 1, 0);
        cl = _claimOf(m, 0);
        vm.prank(defender);
        dot.claim(m.id, cl);
        vm.warp(block.timestamp + CLOCK + 1);
        dot.timeout(m.id);
        assertEq(
            uint256(dot.outcome(m.id)), uint256(IElementReferee.Outcome.DefenderWins), "challenger timed out"
        );
    }

    function test_ownedOutcome_ownerOnly_andMeter_succeeds() public {
        Case memory c = _case(".cases", 1);
        Match memory m = _newMatch(c, 0, 1, 0);
        _play(m);
        assertEq(
            uint256(dot.ownedOutcome(m.id)), uint256(IElementReferee.Outcome.DefenderWins), "owner reads it"
        );
        vm.prank(challenger);
        vm.expectRevert(abi.encodeWithSelector(DotRefereeNotOwner.selector, m.id, challenger, address(this)));
        dot.ownedOutcome(m.id);
        uint256[2] memory gas = dot.meterOf(m.id);
        assertGt(gas[0], 21_000, "the defender's moves metered");
        assertGt(gas[1], 21_000, "the challenger's pick metered");
    }

    // ---- the takeover's access rules ---------------------------------------------------------------

    function test_takeover_handAndStart_refusedOutsideTheirRules_reverts() public {
        ElementReferee referee = new ElementReferee(address(new TraceReferee()), address(new SumReferee()));
        DotReferee linked = DotReferee(referee.dot());
        assertEq(address(linked.element()), address(referee), "deployed by its referee");
        vm.expectRevert(abi.encodeWithSelector(ElementRefereeUnknown.selector, 1));
        referee.hand(1, IElementReferee.Outcome.Pending, [uint256(0), 0]);
        // An element game on mm, at the header stage.
        Case memory c = _case(".cases", 0);
        bytes32[] memory inputs = c.inputs;
        uint256 eg = referee.open(
            IElementReferee.Params({
                op: referee.MM(),
                inputs: inputs,
                scalars: [uint64(0), uint64(0)],
                outputs: [keccak256("d"), keccak256("c")],
                players: [defender, challenger],
                clocks: [CLOCK, CLOCK],
                arity: N
            })
        );
        vm.expectRevert(abi.encodeWithSelector(ElementRefereeNotDot.selector, address(this)));
        referee.hand(eg, IElementReferee.Outcome.Pending, [uint256(0), 0]);
        IDotReferee.Takeover memory t;
        Match memory m;
        m.c = c;
        IDotReferee.Claim memory cl = _claimOf(m, 0);
        vm.prank(challenger);
        vm.expectRevert(abi.encodeWithSelector(DotRefereeNotYourTurn.selector, eg, challenger, defender));
        linked.start(eg, t, cl);
        vm.prank(defender); // not isolated yet: the element game is at its header stage
        vm.expectPartialRevert(bytes4(keccak256("ElementRefereeWrongStage(uint256,uint8,uint8)")));
        linked.start(eg, t, cl);
        (uint256 nIn,, uint256 dtypes, uint8 out) = referee.opSpec(referee.ADDMM());
        assertEq(nIn, 3, "addmm: three inputs");
        assertEq(dtypes, 0x010101, "three fp32 inputs");
        assertEq(out, 1, "fp32 output");
    }
}
