// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {TraceGames} from "./utils/TraceGames.sol";
import {ITraceReferee} from "../src/interfaces/ITraceReferee.sol";
import {IElementReferee} from "../src/interfaces/IElementReferee.sol";
import {TraceLib} from "../src/lib/TraceLib.sol";
import {
    TraceRefereeUnknown,
    TraceRefereeNoFunction,
    TraceRefereeBadParams,
    TraceRefereeWrongStage,
    TraceRefereeNotPlaying,
    TraceRefereeNotYourTurn,
    TraceRefereeClockExpired,
    TraceRefereeClockRunning,
    TraceRefereeLength,
    TraceRefereeInconsistent,
    TraceRefereeMismatch,
    TraceRefereeStep,
    TraceRefereeNotOwner
} from "../src/lib/TraceRefereeErrors.sol";

/// @notice TraceReferee (docs/game.md 2.9) on the vectors of scripts/trace_referee_vectors.py: `evaluate` gives the
///         Python programs' traces bit for bit at every step for all nine functions; an honest defender wins
///         whatever step a liar names; a lying defender (one ulp off, consistent but for one step) loses to the
///         challenger naming that step and wins against one naming any other; every rule and bad input reverts.
contract TraceRefereeTest is TraceGames {
    IElementReferee.Outcome internal constant DEFENDER = IElementReferee.Outcome.DefenderWins;
    IElementReferee.Outcome internal constant CHALLENGER = IElementReferee.Outcome.ChallengerWins;

    uint32 internal constant HALF = 0x3F000000; // 0.5

    // ---- evaluate equals the Python traces, every step ---------------------------------------

    function _checkEvaluate(uint256 i) internal view {
        Fn memory f = _fn(_json(), i);
        assertEq(f.fn, i, "function order");
        assertGt(f.xs.length, 30, "inputs per function");
        for (uint256 k; k < f.xs.length; ++k) {
            uint64[] memory got = referee.evaluate(f.fn, uint32(f.xs[k]));
            assertEq(got.length, f.steps, "step count");
            bytes memory want = _traceOf(f, k);
            for (uint256 s; s < f.steps; ++s) {
                uint64 w = _word(want, s);
                if (got[s] != w) {
                    assertEq(
                        got[s], w, string.concat(f.name, "(", vm.toString(f.xs[k]), ") step ", vm.toString(s))
                    );
                }
            }
        }
    }

    function test_evaluate_exp_matchesPythonTraces_succeeds() public view {
        _checkEvaluate(0);
    }

    function test_evaluate_log_matchesPythonTraces_succeeds() public view {
        _checkEvaluate(1);
    }

    function test_evaluate_log1p_matchesPythonTraces_succeeds() public view {
        _checkEvaluate(2);
    }

    function test_evaluate_rsqrt_matchesPythonTraces_succeeds() public view {
        _checkEvaluate(3);
    }

    function test_evaluate_tanh_matchesPythonTraces_succeeds() public view {
        _checkEvaluate(4);
    }

    function test_evaluate_sigmoid_matchesPythonTraces_succeeds() public view {
        _checkEvaluate(5);
    }

    function test_evaluate_erf_matchesPythonTraces_succeeds() public view {
        _checkEvaluate(6);
    }

    function test_evaluate_gelu_matchesPythonTraces_succeeds() public view {
        _checkEvaluate(7);
    }

    function test_evaluate_geluTanh_matchesPythonTraces_succeeds() public view {
        _checkEvaluate(8);
    }

    function test_vectors_functionCount_succeeds() public view {
        string memory json = _json();
        assertFalse(
            vm.keyExistsJson(json, string.concat(".functions[", vm.toString(FUNCTIONS), "]")), "9 functions"
        );
        assertEq(_liarCount(json), 6 * FUNCTIONS, "three lies on two inputs per function");
    }

    /// @dev Single steps: every opcode on special and random operands equals programs.apply (records of 33 bytes).
    function test_step_everyOpcode_matchesPythonApply_succeeds() public view {
        string memory json = _json();
        uint256 n = vm.parseJsonUint(json, ".ops.count");
        bytes memory data = vm.parseJsonBytes(json, ".ops.data");
        assertEq(data.length, 33 * n, "record length");
        assertGt(n, 18 * 225, "every opcode on every pair of specials");
        uint256[18] memory seen;
        for (uint256 r; r < n; ++r) {
            uint256 op = uint8(data[33 * r]);
            uint64[4] memory w;
            for (uint256 k; k < 4; ++k) {
                for (uint256 i; i < 8; ++i) {
                    w[k] = (w[k] << 8) | uint8(data[33 * r + 1 + 8 * k + i]);
                }
            }
            uint64 got = TraceLib.step(op, w[0], w[1], w[2]);
            if (got != w[3]) {
                assertEq(got, w[3], string.concat("op ", vm.toString(op), " record ", vm.toString(r)));
            }
            ++seen[op];
        }
        for (uint256 op; op < 18; ++op) {
            assertGt(seen[op], 225, "each opcode");
        }
    }

    function test_evaluate_unknownFunction_reverts() public {
        vm.expectRevert(abi.encodeWithSelector(TraceRefereeNoFunction.selector, FUNCTIONS));
        referee.evaluate(FUNCTIONS, HALF);
    }

    // ---- the honest defender wins whatever step is named --------------------------------------

    function _honestDefenderEveryStep(uint256 i) internal {
        Fn memory f = _fn(_json(), i);
        // Two inputs: a random one of magnitude below 16 (the last) and NaN (every step through the specials).
        uint256[2] memory which = [f.xs.length - 1, 10];
        for (uint256 w; w < 2; ++w) {
            bytes memory trace = _traceOf(f, which[w]);
            uint256 id = _claimed(f.fn, uint32(f.xs[which[w]]), trace);
            for (uint256 s; s < f.steps; ++s) {
                uint256 snap = vm.snapshotState();
                assertEq(
                    uint8(_refute(id, trace, s)),
                    uint8(DEFENDER),
                    string.concat(f.name, " step ", vm.toString(s))
                );
                vm.revertToState(snap);
            }
        }
    }

    function test_refute_honestDefender_everyStep_defenderWins_succeeds() public {
        for (uint256 i; i < FUNCTIONS; ++i) {
            _honestDefenderEveryStep(i);
        }
    }

    // ---- a lying defender loses to the step it got wrong, and only to it ------------------------

    function test_refute_lyingDefender_wrongStep_challengerWins_succeeds() public {
        string memory json = _json();
        uint256 n = _liarCount(json);
        for (uint256 i; i < n; ++i) {
            Liar memory l = _liar(json, i);
            assertEq(l.value, l.honestValue ^ 1, "one ulp off");
            assertEq(_output(l.trace), l.value, "the liar's trace ends in its value");
            // The honest challenger finds the first step where the posted trace leaves its own evaluation.
            uint64[] memory mine = referee.evaluate(l.fn, l.x);
            assertEq(_pack(mine), l.honest, "the challenger's own trace");
            uint256 first;
            while (_word(l.trace, first) == mine[first]) ++first;
            assertEq(first, l.wrong, "first wrong step");
            uint256 id = _open(l.fn, l.x, l.value, l.honestValue);
            vm.prank(defender);
            referee.claim(id, l.trace);
            uint256 snap = vm.snapshotState();
            assertEq(uint8(_refute(id, l.trace, first)), uint8(CHALLENGER), string.concat(l.name, " liar"));
            vm.revertToState(snap);
            // Every other step of the liar's trace follows from its posted operands: naming it loses.
            for (uint256 s; s < mine.length; ++s) {
                if (s == first) continue;
                snap = vm.snapshotState();
                assertEq(
                    uint8(_refute(id, l.trace, s)), uint8(DEFENDER), string.concat(l.name, " other step")
                );
                vm.revertToState(snap);
            }
        }
    }

    function testFuzz_refute_alteredStep_challengerWins(
        uint256 fnSeed,
        uint32 x,
        uint256 stepSeed,
        uint64 delta
    ) public {
        uint256 fn = fnSeed % FUNCTIONS;
        uint64[] memory t = referee.evaluate(fn, x);
        uint256 s = stepSeed % t.length;
        if (s == t.length - 1) delta &= 0xFFFFFFFF; // the output stays an fp32 pattern
        vm.assume(delta != 0);
        t[s] ^= delta;
        bytes memory trace = _pack(t);
        uint256 id = _claimed(fn, x, trace);
        assertEq(uint8(_refute(id, trace, s)), uint8(CHALLENGER));
    }

    function testFuzz_refute_honestTrace_defenderWins(uint256 fnSeed, uint32 x, uint256 stepSeed) public {
        uint256 fn = fnSeed % FUNCTIONS;
        bytes memory trace = _pack(referee.evaluate(fn, x));
        uint256 id = _claimed(fn, x, trace);
        assertEq(uint8(_refute(id, trace, stepSeed % (trace.length / 8))), uint8(DEFENDER));
    }

    // ---- open --------------------------------------------------------------------------------

    function test_open_badParams_reverts() public {
        vm.expectRevert(abi.encodeWithSelector(TraceRefereeNoFunction.selector, 9));
        referee.open(9, HALF, [uint32(1), 2], [defender, challenger], [CLOCK, CLOCK]);
        vm.expectRevert(abi.encodeWithSelector(TraceRefereeBadParams.selector, 1, uint160(defender)));
        referee.open(0, HALF, [uint32(1), 2], [defender, defender], [CLOCK, CLOCK]);
        vm.expectRevert(abi.encodeWithSelector(TraceRefereeBadParams.selector, 1, uint160(challenger)));
        referee.open(0, HALF, [uint32(1), 2], [address(0), challenger], [CLOCK, CLOCK]);
        vm.expectRevert(abi.encodeWithSelector(TraceRefereeBadParams.selector, 1, 0));
        referee.open(0, HALF, [uint32(1), 2], [defender, address(0)], [CLOCK, CLOCK]);
        vm.expectRevert(abi.encodeWithSelector(TraceRefereeBadParams.selector, 2, 7));
        referee.open(0, HALF, [uint32(7), 7], [defender, challenger], [CLOCK, CLOCK]);
        vm.expectRevert(abi.encodeWithSelector(TraceRefereeBadParams.selector, 3, 0));
        referee.open(0, HALF, [uint32(1), 2], [defender, challenger], [uint64(0), CLOCK]);
        vm.expectRevert(abi.encodeWithSelector(TraceRefereeBadParams.selector, 3, uint256(1) << 40));
        referee.open(0, HALF, [uint32(1), 2], [defender, challenger], [CLOCK, uint64(1) << 40]);
        assertEq(referee.gameCount(), 0);
        vm.expectRevert(abi.encodeWithSelector(TraceRefereeUnknown.selector, 1));
        referee.gameOf(1);
    }

    function test_open_anyoneOpens_viewsAndEvent_succeeds() public {
        address opener = makeAddr("opener");
        vm.expectEmit(true, true, false, true, address(referee));
        emit ITraceReferee.GameOpened(1, opener, 4, HALF, defender, challenger, 5, 6);
        vm.prank(opener);
        uint256 id = referee.open(4, HALF, [uint32(5), 6], [defender, challenger], [CLOCK, 2 * CLOCK]);
        assertEq(id, 1);
        assertEq(referee.gameCount(), 1);
        ITraceReferee.GameView memory v = referee.gameOf(id);
        assertEq(v.owner, opener);
        assertEq(v.players[0], defender);
        assertEq(v.players[1], challenger);
        assertEq(uint8(v.stage), uint8(ITraceReferee.Stage.Claim));
        assertEq(uint8(v.outcome), uint8(IElementReferee.Outcome.Pending));
        assertEq(uint8(v.toMove), uint8(IElementReferee.Side.Defender));
        assertEq(v.fn, 4);
        assertEq(v.x, HALF);
        assertEq(v.values[0], 5);
        assertEq(v.values[1], 6);
        assertEq(v.clockLeft[0], CLOCK);
        assertEq(v.clockLeft[1], 2 * CLOCK);
        assertEq(v.turnStartedAt, block.timestamp);
        assertEq(v.steps, referee.evaluate(4, HALF).length);
        assertEq(v.traceHash, bytes32(0));
        assertEq(v.moves, 0);
    }

    // ---- claim -------------------------------------------------------------------------------

    function test_claim_badTrace_reverts() public {
        bytes memory trace = _pack(referee.evaluate(0, HALF)); // exp: 28 steps
        uint32 v = _output(trace);
        uint256 id = _open(0, HALF, v, v ^ 1);
        vm.startPrank(defender);
        vm.expectRevert(abi.encodeWithSelector(TraceRefereeLength.selector, 0, 224));
        referee.claim(id, "");
        vm.expectRevert(abi.encodeWithSelector(TraceRefereeLength.selector, 232, 224));
        referee.claim(id, bytes.concat(trace, bytes8(0)));
        bytes memory short = new bytes(216);
        for (uint256 i; i < 216; ++i) {
            short[i] = trace[i];
        }
        vm.expectRevert(abi.encodeWithSelector(TraceRefereeLength.selector, 216, 224));
        referee.claim(id, short);
        // The last word must be the defender's value, all 64 bits of it.
        bytes memory high = bytes.concat(trace);
        high[216] = 0x01;
        vm.expectRevert(abi.encodeWithSelector(TraceRefereeInconsistent.selector, (uint64(1) << 56) | v, v));
        referee.claim(id, high);
        vm.stopPrank();
        uint256 other = _open(0, HALF, v ^ 1, v);
        vm.prank(defender);
        vm.expectRevert(abi.encodeWithSelector(TraceRefereeInconsistent.selector, v, v ^ 1));
        referee.claim(other, trace);
    }

    function test_claim_turnAndStage_reverts() public {
        bytes memory trace = _pack(referee.evaluate(5, HALF));
        uint32 v = _output(trace);
        uint256 id = _open(5, HALF, v, v ^ 1);
        vm.prank(challenger);
        vm.expectRevert(abi.encodeWithSelector(TraceRefereeNotYourTurn.selector, id, challenger, defender));
        referee.claim(id, trace);
        vm.expectRevert(abi.encodeWithSelector(TraceRefereeUnknown.selector, 7));
        referee.claim(7, trace);
        vm.prank(defender);
        referee.claim(id, trace);
        vm.prank(defender);
        vm.expectRevert(
            abi.encodeWithSelector(
                TraceRefereeWrongStage.selector, id, ITraceReferee.Stage.Claim, ITraceReferee.Stage.Refute
            )
        );
        referee.claim(id, trace);
    }

    function test_claim_eventsViewsAndMeter_succeeds() public {
        bytes memory trace = _pack(referee.evaluate(6, HALF));
        uint32 v = _output(trace);
        uint256 id = _open(6, HALF, v, v ^ 1);
        vm.warp(block.timestamp + 100);
        vm.expectEmit(true, false, false, true, address(referee));
        emit ITraceReferee.Claimed(id, keccak256(trace), trace);
        vm.prank(defender);
        referee.claim(id, trace);
        ITraceReferee.GameView memory g = referee.gameOf(id);
        assertEq(uint8(g.stage), uint8(ITraceReferee.Stage.Refute));
        assertEq(uint8(g.toMove), uint8(IElementReferee.Side.Challenger));
        assertEq(g.traceHash, keccak256(trace));
        assertEq(g.clockLeft[0], CLOCK - 100, "the defender's clock ran 100 s");
        assertEq(g.clockLeft[1], CLOCK);
        assertEq(g.moves, 1);
        uint256[2] memory gas = referee.meterOf(id);
        assertGt(gas[0], 21_000 + 40 * trace.length, "base and calldata charged");
        assertEq(gas[1], 0);
        vm.warp(block.timestamp + 50);
        vm.expectEmit(true, false, false, true, address(referee));
        emit ITraceReferee.StepRecomputed(id, 3, _word(trace, 3), _word(trace, 3));
        vm.expectEmit(true, false, false, true, address(referee));
        emit ITraceReferee.GameResolved(id, DEFENDER);
        _refute(id, trace, 3);
        g = referee.gameOf(id);
        assertEq(uint8(g.stage), uint8(ITraceReferee.Stage.Resolved));
        assertEq(g.clockLeft[1], CLOCK - 50);
        assertEq(g.moves, 2);
        gas = referee.meterOf(id);
        assertGt(gas[1], 21_000 + 40 * trace.length);
    }

    // ---- refute ------------------------------------------------------------------------------

    function test_refute_badMoves_reverts() public {
        bytes memory trace = _pack(referee.evaluate(1, HALF)); // log: 28 steps
        uint32 v = _output(trace);
        uint256 id = _open(1, HALF, v, v ^ 1);
        vm.prank(challenger);
        vm.expectRevert(
            abi.encodeWithSelector(
                TraceRefereeWrongStage.selector, id, ITraceReferee.Stage.Refute, ITraceReferee.Stage.Claim
            )
        );
        referee.refute(id, trace, 0);
        vm.prank(defender);
        referee.claim(id, trace);
        vm.prank(defender);
        vm.expectRevert(abi.encodeWithSelector(TraceRefereeNotYourTurn.selector, id, defender, challenger));
        referee.refute(id, trace, 0);
        bytes memory other = bytes.concat(trace);
        other[5] ^= 0x10;
        vm.prank(challenger);
        vm.expectRevert(
            abi.encodeWithSelector(TraceRefereeMismatch.selector, keccak256(other), keccak256(trace))
        );
        referee.refute(id, other, 0);
        vm.prank(challenger);
        vm.expectRevert(abi.encodeWithSelector(TraceRefereeStep.selector, 28, 28));
        referee.refute(id, trace, 28);
        vm.prank(challenger);
        vm.expectRevert(abi.encodeWithSelector(TraceRefereeStep.selector, type(uint256).max, 28));
        referee.refute(id, trace, type(uint256).max);
        assertEq(uint8(_refute(id, trace, 27)), uint8(DEFENDER));
        vm.prank(challenger);
        vm.expectRevert(
            abi.encodeWithSelector(
                TraceRefereeWrongStage.selector, id, ITraceReferee.Stage.Refute, ITraceReferee.Stage.Resolved
            )
        );
        referee.refute(id, trace, 0);
    }

    // ---- clocks ------------------------------------------------------------------------------

    function test_timeout_claimStage_challengerWins_succeeds() public {
        bytes memory trace = _pack(referee.evaluate(0, HALF));
        uint32 v = _output(trace);
        uint256 id = _open(0, HALF, v, v ^ 1);
        uint256 deadline = block.timestamp + CLOCK;
        vm.warp(deadline);
        vm.expectRevert(abi.encodeWithSelector(TraceRefereeClockRunning.selector, id, deadline));
        referee.timeout(id);
        vm.warp(deadline + 1);
        vm.prank(defender);
        vm.expectRevert(abi.encodeWithSelector(TraceRefereeClockExpired.selector, id, deadline));
        referee.claim(id, trace);
        vm.expectEmit(true, false, false, true, address(referee));
        emit ITraceReferee.GameResolved(id, CHALLENGER);
        referee.timeout(id);
        assertEq(uint8(referee.outcome(id)), uint8(CHALLENGER));
        assertEq(referee.gameOf(id).clockLeft[0], 0);
        vm.expectRevert(abi.encodeWithSelector(TraceRefereeNotPlaying.selector, id));
        referee.timeout(id);
    }

    function test_timeout_refuteStage_defenderWins_succeeds() public {
        bytes memory trace = _pack(referee.evaluate(2, HALF));
        uint256 id = _claimed(2, HALF, trace);
        vm.warp(block.timestamp + 10);
        vm.expectRevert(
            abi.encodeWithSelector(TraceRefereeClockRunning.selector, id, block.timestamp - 10 + CLOCK)
        );
        referee.timeout(id);
        vm.warp(block.timestamp + CLOCK);
        vm.prank(challenger);
        vm.expectRevert(abi.encodeWithSelector(TraceRefereeClockExpired.selector, id, block.timestamp - 10));
        referee.refute(id, trace, 0);
        referee.timeout(id);
        assertEq(uint8(referee.outcome(id)), uint8(DEFENDER));
        assertEq(referee.gameOf(id).clockLeft[1], 0);
    }

    function test_timeout_unknownGame_reverts() public {
        vm.expectRevert(abi.encodeWithSelector(TraceRefereeUnknown.selector, 3));
        referee.timeout(3);
    }

    // ---- the owner's view --------------------------------------------------------------------

    function test_ownedOutcome_ownerOnly_reverts() public {
        address owner = makeAddr("owner");
        bytes memory trace = _pack(referee.evaluate(3, HALF));
        uint32 v = _output(trace);
        vm.prank(owner);
        uint256 id = referee.open(3, HALF, [v, v ^ 1], [defender, challenger], [CLOCK, CLOCK]);
        vm.prank(owner);
        assertEq(uint8(referee.ownedOutcome(id)), uint8(IElementReferee.Outcome.Pending));
        vm.prank(defender);
        vm.expectRevert(abi.encodeWithSelector(TraceRefereeNotOwner.selector, id, defender, owner));
        referee.ownedOutcome(id);
        vm.prank(defender);
        referee.claim(id, trace);
        _refute(id, trace, 1);
        vm.prank(owner);
        assertEq(uint8(referee.ownedOutcome(id)), uint8(DEFENDER));
        vm.expectRevert(abi.encodeWithSelector(TraceRefereeUnknown.selector, 2));
        referee.ownedOutcome(2);
    }
}
