// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {SumGames} from "./utils/SumGames.sol";
import {ISumReferee} from "../src/interfaces/ISumReferee.sol";
import {IDotReferee} from "../src/interfaces/IDotReferee.sol";
import {IElementReferee} from "../src/interfaces/IElementReferee.sol";
import {
    SumRefereeUnknown,
    SumRefereeBadParams,
    SumRefereeWrongStage,
    SumRefereeNotPlaying,
    SumRefereeNotYourTurn,
    SumRefereeClockExpired,
    SumRefereeClockRunning,
    SumRefereeWidth,
    SumRefereeShape,
    SumRefereeHeader,
    SumRefereeInconsistent,
    SumRefereeOpponentMismatch,
    SumRefereeNotGreater,
    SumRefereeWitness,
    SumRefereeNotOwner
} from "../src/lib/SumRefereeErrors.sol";
import {TensorCommitmentMismatch} from "../src/lib/Errors.sol";

/// @notice Every rule of SumReferee (docs/game.md 2.10) on the real tensors of scripts/sum_referee_vectors.py: the
///         honest side wins every case as defender and as challenger against a liar whose prefix sums go wrong at
///         the first, middle or last term and who plays on or stops; every bad input reverts.
contract SumRefereeTest is SumGames {
    // ---- the honest side always wins --------------------------------------------------------

    function test_vectors_caseCount_succeeds() public view {
        assertEq(_count(".cases"), 17, "a test per case below");
    }

    function test_vectors_Dim1_honestSideWins_succeeds() public {
        _everyWay(_case(".cases", 0));
    }

    function test_vectors_DimAll2112_honestSideWins_succeeds() public {
        _everyWay(_case(".cases", 1));
    }

    function test_vectors_Dims01Keepdim_honestSideWins_succeeds() public {
        _everyWay(_case(".cases", 2));
    }

    function test_vectors_DimLast4D_honestSideWins_succeeds() public {
        _everyWay(_case(".cases", 3));
    }

    function test_vectors_Dim2Keepdim_honestSideWins_succeeds() public {
        _everyWay(_case(".cases", 4));
    }

    function test_vectors_Dim0Keepdim_honestSideWins_succeeds() public {
        _everyWay(_case(".cases", 5));
    }

    function test_vectors_LengthOne_honestSideWins_succeeds() public {
        _everyWay(_case(".cases", 6));
    }

    function test_vectors_ZeroDim_honestSideWins_succeeds() public {
        _everyWay(_case(".cases", 7));
    }

    function test_vectors_Zeros_honestSideWins_succeeds() public {
        _everyWay(_case(".cases", 8));
    }

    function test_vectors_Subnormals_honestSideWins_succeeds() public {
        _everyWay(_case(".cases", 9));
    }

    function test_vectors_OverflowToInf_honestSideWins_succeeds() public {
        _everyWay(_case(".cases", 10));
    }

    function test_vectors_Ties_honestSideWins_succeeds() public {
        _everyWay(_case(".cases", 11));
    }

    function test_vectors_Negative_honestSideWins_succeeds() public {
        _everyWay(_case(".cases", 12));
    }

    function test_vectors_PlusInf_honestSideWins_succeeds() public {
        _everyWay(_case(".cases", 13));
    }

    function test_vectors_BothInfinities_honestSideWins_succeeds() public {
        _everyWay(_case(".cases", 14));
    }

    function test_vectors_NaN_honestSideWins_succeeds() public {
        _everyWay(_case(".cases", 15));
    }

    function test_vectors_EmptySlice_honestSideWins_succeeds() public {
        _everyWay(_case(".cases", 16));
    }

    function test_vectors_infinityClaim_waitsForRefutation_succeeds() public {
        Case memory c = _case(".cases", 13); // +inf
        assertEq(c.honestValue, 0x7F800000);
        Match memory m = _newMatch(c, 0, 1, 0, N);
        ISumReferee.Claim memory first = _claimOf(m, 0);
        vm.prank(defender);
        sum.claim(m.id, first);
        ISumReferee.GameView memory v = sum.gameOf(m.id);
        assertEq(uint256(v.stage), uint256(ISumReferee.Stage.Refute));
        // The liar's pick is refused there: only a refutation, and none exists.
        vm.prank(challenger);
        vm.expectRevert(
            abi.encodeWithSelector(
                SumRefereeWrongStage.selector, m.id, ISumReferee.Stage.Pick, ISumReferee.Stage.Refute
            )
        );
        sum.pick(m.id, new int256[](0), 0);
        // Another element of the slice (finite, or the same infinity) does not disprove it.
        uint32 x0 = _termBits(c, 0);
        IDotReferee.Opening memory o0 = _open(c, 0);
        vm.prank(challenger);
        vm.expectRevert(abi.encodeWithSelector(SumRefereeNotGreater.selector, x0, NON_FINITE));
        sum.refute(m.id, 0, o0);
        vm.warp(block.timestamp + CLOCK + 1);
        sum.timeout(m.id);
        assertEq(uint256(sum.outcome(m.id)), uint256(IElementReferee.Outcome.DefenderWins));
    }

    function test_claim_infinityWithNaNInSlice_refuted_succeeds() public {
        // The NaN case's slice holds a NaN; a defender claiming NaN wins at once. Here a finite witness of the same
        // slice makes a finite claim, which the NaN refutes.
        Case memory c = _case(".cases", 15); // NaN
        uint64 finite = c.at == 0 ? 1 : 0;
        ISumReferee.Params memory p = _params(c, [uint32(0x3f800000), c.honestValue]);
        p.players = [defender, challenger];
        uint256 id = sum.open(p);
        ISumReferee.Claim memory cl = _bareClaim(c, finite);
        uint16 key = _classOf(_termBits(c, finite));
        // The finite value the claim gives for S = 1 on that grid.
        cl.total = 1;
        (bool ok, bytes memory ret) = _tryClaim(id, cl);
        assertFalse(ok);
        // The claim's own value: read it from the revert, then open a game with it.
        uint32 computed;
        assembly ("memory-safe") {
            computed := mload(add(ret, 36))
        }
        p.values = [computed, c.honestValue];
        id = sum.open(p);
        cl.splits = new int256[](sum.splitPoints(0, c.length, N).length);
        vm.prank(defender);
        sum.claim(id, cl);
        assertEq(sum.gameOf(id).key, key);
        IDotReferee.Opening memory nan = _open(c, c.at);
        vm.prank(challenger);
        sum.refute(id, c.at, nan);
        assertEq(uint256(sum.outcome(id)), uint256(IElementReferee.Outcome.ChallengerWins));
    }

    /// @dev Honest as defender and as challenger; the liar's sums wrong from the first, middle or last term; the
    ///      liar plays on or stops after its first move.
    function _everyWay(Case memory c) internal {
        uint64 l = c.length == 0 ? 1 : c.length;
        uint64[3] memory from = [uint64(1), l / 2 == 0 ? 1 : l / 2, l];
        for (uint256 honest; honest < 2; ++honest) {
            for (uint256 f; f < 3; ++f) {
                for (uint256 stop; stop < 2; ++stop) {
                    Match memory m = _newMatch(c, honest, from[f], stop, N);
                    _play(m);
                    _assertHonestWon(m);
                }
            }
        }
    }

    function _bareClaim(Case memory c, uint64 at) internal view returns (ISumReferee.Claim memory cl) {
        cl.outputShape = c.outShape;
        cl.input = IElementReferee.Header(1, c.shape, c.dataRoot);
        cl.at = at;
        cl.witness = _open(c, at);
    }

    function _tryClaim(uint256 id, ISumReferee.Claim memory cl) internal returns (bool ok, bytes memory ret) {
        vm.prank(defender);
        (ok, ret) = address(sum).call(abi.encodeCall(ISumReferee.claim, (id, cl)));
    }

    // ---- fuzz --------------------------------------------------------------------------------

    /// @dev A random finite case, honest side, first wrong term, arity and stopping point: the honest side wins,
    ///      within 2 * max(ceil(log_N L), 1) + 1 moves.
    function testFuzz_play_honestSideWins_succeeds(uint256 ci, bool honestDefends, uint64 lieFrom, uint8 t, bool stop)
        public
    {
        uint256[9] memory finite = [uint256(0), 1, 2, 3, 4, 5, 6, 11, 12];
        Case memory c = _case(".cases", finite[ci % 9]);
        lieFrom = uint64(bound(lieFrom, 1, c.length));
        uint64 arity = uint64(1) << bound(t, 1, 6);
        Match memory m = _newMatch(c, honestDefends ? 0 : 1, lieFrom, stop ? 1 : 0, arity);
        _play(m);
        _assertHonestWon(m);
        uint256 depth = 1;
        for (uint256 w = arity; w < c.length; w *= arity) ++depth;
        assertLe(m.moves, 2 * depth + 1, "the move bound");
    }

    // ---- the rules, one by one -----------------------------------------------------------------

    function _opened(uint256 ci) internal returns (Case memory c, uint256 id) {
        c = _case(".cases", ci);
        ISumReferee.Params memory p = _params(c, [c.honestValue, c.liarValue]);
        p.players = [defender, challenger];
        id = sum.open(p);
    }

    function _honestMatch(uint256 ci) internal returns (Match memory m) {
        m = _newMatch(_case(".cases", ci), 0, 1, 0, N);
    }

    function test_open_badParams_reverts() public {
        Case memory c = _case(".cases", 0);
        ISumReferee.Params memory p = _params(c, [c.honestValue, c.liarValue]);
        p.players = [defender, challenger];
        p.variant = 128;
        vm.expectRevert(abi.encodeWithSelector(SumRefereeBadParams.selector, 1, 128));
        sum.open(p);
        p.variant = c.variant;
        p.players = [defender, defender];
        vm.expectRevert(abi.encodeWithSelector(SumRefereeBadParams.selector, 3, uint160(defender)));
        sum.open(p);
        p.players = [defender, challenger];
        p.values = [c.honestValue, c.honestValue];
        vm.expectRevert(abi.encodeWithSelector(SumRefereeBadParams.selector, 4, c.honestValue));
        sum.open(p);
        p.values = [c.honestValue, c.liarValue];
        p.clocks = [uint64(0), CLOCK];
        vm.expectRevert(abi.encodeWithSelector(SumRefereeBadParams.selector, 5, 0));
        sum.open(p);
        p.clocks = [CLOCK, CLOCK];
        p.arity = 3;
        vm.expectRevert(abi.encodeWithSelector(SumRefereeBadParams.selector, 6, 3));
        sum.open(p);
    }

    function test_claim_inconsistent_reverts() public {
        (Case memory c, uint256 id) = _opened(0);
        Match memory m = _honestMatch(0);
        ISumReferee.Claim memory cl = _claimOf(m, 0);
        cl.total = cl.total * 2 + 1;
        vm.prank(defender);
        vm.expectPartialRevert(SumRefereeInconsistent.selector);
        sum.claim(id, cl);
        c;
    }

    function test_claim_wrongHeaders_reverts() public {
        (Case memory c, uint256 id) = _opened(0);
        Match memory m = _honestMatch(0);
        ISumReferee.Claim memory cl = _claimOf(m, 0);
        cl.outputShape = c.shape; // the input's shape, not the output's
        vm.prank(defender);
        vm.expectRevert(
            abi.encodeWithSelector(SumRefereeHeader.selector, 0, _header(c.shape), _header(c.outShape))
        );
        sum.claim(id, cl);
        cl = _claimOf(m, 0);
        cl.input.dataRoot = bytes32(uint256(1));
        vm.prank(defender);
        vm.expectPartialRevert(SumRefereeHeader.selector);
        sum.claim(id, cl);
        cl = _claimOf(m, 0);
        cl.input.dtype = 9;
        vm.prank(defender);
        vm.expectRevert(abi.encodeWithSelector(SumRefereeHeader.selector, 1, bytes32(0), bytes32(uint256(9))));
        sum.claim(id, cl);
    }

    function test_claim_outputShapeNotTheSum_reverts() public {
        // A game whose header is a shape the dims do not give: keepdim's [3, 1, 5] for dim=1 without keepdim.
        Case memory c = _case(".cases", 0);
        ISumReferee.Params memory p = _params(c, [c.honestValue, c.liarValue]);
        p.players = [defender, challenger];
        uint64[] memory kept = new uint64[](3);
        (kept[0], kept[1], kept[2]) = (3, 1, 5);
        p.header = _header(kept);
        uint256 id = sum.open(p);
        Match memory m = _honestMatch(0);
        ISumReferee.Claim memory cl = _claimOf(m, 0);
        cl.outputShape = kept;
        vm.prank(defender);
        vm.expectRevert(abi.encodeWithSelector(SumRefereeShape.selector, 1, 1, 5));
        sum.claim(id, cl);
        // A dim the input does not have: dim 2 of a 2-dimensional input.
        Case memory d = _case(".cases", 5); // [9, 4]
        p = _params(d, [d.honestValue, d.liarValue]);
        p.players = [defender, challenger];
        p.variant = 1 << 3; // dim 2
        id = sum.open(p);
        m = _honestMatch(5);
        cl = _claimOf(m, 0);
        vm.prank(defender);
        vm.expectRevert(abi.encodeWithSelector(SumRefereeShape.selector, type(uint256).max - 1, 2, 3));
        sum.claim(id, cl);
    }

    function test_claim_witnessOutOfSlice_reverts() public {
        (Case memory c, uint256 id) = _opened(0);
        Match memory m = _honestMatch(0);
        ISumReferee.Claim memory cl = _claimOf(m, 0);
        cl.at = c.length;
        vm.prank(defender);
        vm.expectRevert(abi.encodeWithSelector(SumRefereeWidth.selector, c.length, c.length));
        sum.claim(id, cl);
    }

    function test_claim_wrongOpening_reverts() public {
        (, uint256 id) = _opened(0);
        Match memory m = _honestMatch(0);
        ISumReferee.Claim memory cl = _claimOf(m, 0);
        cl.witness.chunk[0] ^= 0x01;
        vm.prank(defender);
        vm.expectPartialRevert(TensorCommitmentMismatch.selector);
        sum.claim(id, cl);
    }

    function test_claim_wrongSplitCount_reverts() public {
        (, uint256 id) = _opened(0);
        Match memory m = _honestMatch(0);
        ISumReferee.Claim memory cl = _claimOf(m, 0);
        uint256 want = cl.splits.length;
        cl.splits = new int256[](want + 1);
        vm.prank(defender);
        vm.expectRevert(abi.encodeWithSelector(SumRefereeWidth.selector, want + 1, want));
        sum.claim(id, cl);
    }

    function test_claim_secondWitnessNotOpposite_reverts() public {
        Case memory c = _case(".cases", 14); // both infinities
        ISumReferee.Params memory p = _params(c, [c.honestValue, c.liarValue]);
        p.players = [defender, challenger];
        uint256 id = sum.open(p);
        Match memory m = _newMatch(c, 0, 1, 0, N);
        ISumReferee.Claim memory cl = _claimOf(m, 0);
        uint64 other = 0; // a finite element of the slice, not the opposite infinity
        cl.at2 = other;
        cl.second = _open(c, other);
        uint32 bits = _termBits(c, other);
        vm.prank(defender);
        vm.expectRevert(abi.encodeWithSelector(SumRefereeWitness.selector, bits, c.witness));
        sum.claim(id, cl);
    }

    function test_claim_notYourTurn_reverts() public {
        (, uint256 id) = _opened(0);
        Match memory m = _honestMatch(0);
        ISumReferee.Claim memory cl = _claimOf(m, 0);
        vm.prank(challenger);
        vm.expectRevert(abi.encodeWithSelector(SumRefereeNotYourTurn.selector, id, challenger, defender));
        sum.claim(id, cl);
    }

    function test_claim_clockExpired_reverts() public {
        (, uint256 id) = _opened(0);
        Match memory m = _honestMatch(0);
        ISumReferee.Claim memory cl = _claimOf(m, 0);
        vm.warp(block.timestamp + CLOCK + 1);
        vm.prank(defender);
        vm.expectPartialRevert(SumRefereeClockExpired.selector);
        sum.claim(id, cl);
    }

    function _claimed(uint256 ci) internal returns (Match memory m) {
        m = _honestMatch(ci);
        ISumReferee.Claim memory first = _claimOf(m, 0);
        vm.prank(defender);
        sum.claim(m.id, first);
    }

    function test_pick_wrongPassBack_reverts() public {
        Match memory m = _claimed(1);
        int256[] memory theirs = _splits(m, 0, 0, m.c.length);
        theirs[0] += 1;
        assertGt(theirs.length, 1);
        vm.prank(challenger);
        vm.expectPartialRevert(SumRefereeOpponentMismatch.selector);
        sum.pick(m.id, theirs, 0);
    }

    function test_pick_indexOutOfRange_reverts() public {
        Match memory m = _claimed(1);
        int256[] memory theirs = _splits(m, 0, 0, m.c.length);
        vm.prank(challenger);
        vm.expectRevert(abi.encodeWithSelector(SumRefereeWidth.selector, theirs.length + 1, theirs.length + 1));
        sum.pick(m.id, theirs, theirs.length + 1);
    }

    function test_refute_notGreater_reverts() public {
        Match memory m = _claimed(1);
        uint64 k = m.c.at == 0 ? 1 : 0;
        uint32 bits = _termBits(m.c, k);
        IDotReferee.Opening memory o = _open(m.c, k);
        vm.prank(challenger);
        vm.expectRevert(abi.encodeWithSelector(SumRefereeNotGreater.selector, bits, m.c.key));
        sum.refute(m.id, k, o);
    }

    function test_refute_outOfSlice_reverts() public {
        Match memory m = _claimed(1);
        IDotReferee.Opening memory o = _open(m.c, 0);
        vm.prank(challenger);
        vm.expectRevert(abi.encodeWithSelector(SumRefereeWidth.selector, m.c.length, m.c.length));
        sum.refute(m.id, m.c.length, o);
    }

    function test_refute_smallerWitness_challengerWins_succeeds() public {
        // A defender whose witness is not the slice's largest class: refuted by the true maximum.
        Case memory c = _case(".cases", 1);
        uint64 small = c.at == 0 ? 1 : 0;
        assertLt(_classOf(_termBits(c, small)), c.key);
        ISumReferee.Claim memory cl = _bareClaim(c, small);
        ISumReferee.Params memory p = _params(c, [uint32(0), c.honestValue]);
        p.players = [defender, challenger];
        cl.total = 12345;
        uint256 id = sum.open(p);
        (, bytes memory ret) = _tryClaim(id, cl);
        uint32 computed;
        assembly ("memory-safe") {
            computed := mload(add(ret, 36))
        }
        p.values = [computed, c.honestValue];
        id = sum.open(p);
        cl.splits = new int256[](sum.splitPoints(0, c.length, N).length);
        vm.prank(defender);
        sum.claim(id, cl);
        IDotReferee.Opening memory top = _open(c, c.at);
        vm.prank(challenger);
        vm.expectEmit(address(sum));
        emit ISumReferee.Refuted(id, c.at, c.witness);
        sum.refute(id, c.at, top);
        assertEq(uint256(sum.outcome(id)), uint256(IElementReferee.Outcome.ChallengerWins));
    }

    function test_proveTerm_wrongOpening_reverts() public {
        Match memory m = _newMatch(_case(".cases", 6), 0, 1, 0, N); // L = 1: straight to the term
        ISumReferee.Claim memory first = _claimOf(m, 0);
        vm.prank(defender);
        sum.claim(m.id, first);
        vm.prank(challenger);
        sum.pick(m.id, new int256[](0), 0);
        assertEq(uint256(sum.gameOf(m.id).stage), uint256(ISumReferee.Stage.Term));
        IDotReferee.Opening memory o = _open(m.c, 0);
        o.siblings = new bytes32[](1);
        vm.prank(defender);
        vm.expectRevert();
        sum.proveTerm(m.id, o);
        IDotReferee.Opening memory good = _open(m.c, 0);
        vm.prank(defender);
        sum.proveTerm(m.id, good);
        assertEq(uint256(sum.outcome(m.id)), uint256(IElementReferee.Outcome.DefenderWins));
    }

    function test_split_wrongStage_reverts() public {
        Match memory m = _claimed(1);
        vm.prank(defender);
        vm.expectRevert(
            abi.encodeWithSelector(SumRefereeWrongStage.selector, m.id, ISumReferee.Stage.Split, ISumReferee.Stage.Pick)
        );
        sum.split(m.id, new int256[](0));
    }

    function test_timeout_everyStage_succeeds() public {
        // Claim: the defender silent.
        (, uint256 id) = _opened(0);
        vm.expectPartialRevert(SumRefereeClockRunning.selector);
        sum.timeout(id);
        vm.warp(block.timestamp + CLOCK + 1);
        sum.timeout(id);
        assertEq(uint256(sum.outcome(id)), uint256(IElementReferee.Outcome.ChallengerWins));
        vm.expectRevert(abi.encodeWithSelector(SumRefereeNotPlaying.selector, id));
        sum.timeout(id);
        // Pick: the challenger silent.
        Match memory m = _claimed(1);
        vm.warp(block.timestamp + CLOCK + 1);
        sum.timeout(m.id);
        assertEq(uint256(sum.outcome(m.id)), uint256(IElementReferee.Outcome.DefenderWins));
        // Split: the defender silent.
        m = _claimed(1);
        int256[] memory theirs = _splits(m, 0, 0, m.c.length);
        vm.prank(challenger);
        sum.pick(m.id, theirs, 0);
        assertEq(uint256(sum.gameOf(m.id).stage), uint256(ISumReferee.Stage.Split));
        vm.warp(block.timestamp + CLOCK + 1);
        sum.timeout(m.id);
        assertEq(uint256(sum.outcome(m.id)), uint256(IElementReferee.Outcome.ChallengerWins));
    }

    function test_views_unknownAndOwner_reverts() public {
        vm.expectRevert(abi.encodeWithSelector(SumRefereeUnknown.selector, 99));
        sum.gameOf(99);
        (, uint256 id) = _opened(0);
        assertEq(uint256(sum.ownedOutcome(id)), uint256(IElementReferee.Outcome.Pending));
        vm.prank(defender);
        vm.expectRevert(abi.encodeWithSelector(SumRefereeNotOwner.selector, id, defender, address(this)));
        sum.ownedOutcome(id);
        assertEq(sum.gameCount(), 1);
    }

    function test_meter_countsEachSide_succeeds() public {
        Match memory m = _newMatch(_case(".cases", 1), 1, 1, 0, N);
        _play(m);
        uint256[2] memory gas = sum.meterOf(m.id);
        assertGt(gas[0], 21_000 * (m.moves / 2));
        assertGt(gas[1], 21_000);
    }

    function test_inputIndex_reducedAndKept_succeeds() public view {
        // [2, 3, 4] summed over dim 1: element (i, k) of the [2, 4] output, term j, sits at i * 12 + j * 4 + k.
        uint64[] memory sh = new uint64[](3);
        (sh[0], sh[1], sh[2]) = (2, 3, 4);
        for (uint256 e; e < 8; ++e) {
            for (uint256 j; j < 3; ++j) {
                assertEq(sum.inputIndex(e, j, sh, 2), (e / 4) * 12 + j * 4 + (e % 4));
            }
        }
        // Over dims 0 and 2: term t = (i, k) row-major.
        for (uint256 e; e < 3; ++e) {
            for (uint256 t; t < 8; ++t) {
                assertEq(sum.inputIndex(e, t, sh, 5), (t / 4) * 12 + e * 4 + (t % 4));
            }
        }
    }
}
