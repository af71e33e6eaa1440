// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {stdError} from "forge-std/StdError.sol";

import {IDotReferee} from "../src/interfaces/IDotReferee.sol";
import {IElementReferee} from "../src/interfaces/IElementReferee.sol";
import {ITraceReferee} from "../src/interfaces/ITraceReferee.sol";
import {
    DotRefereeNotYourTurn,
    DotRefereeBadParams,
    DotRefereeHeader,
    DotRefereeShape,
    DotRefereeClockExpired,
    DotRefereeUnknown,
    DotRefereeTracePending
} from "../src/lib/DotRefereeErrors.sol";
import {ElementRefereeWrongStage, ElementRefereeNotPlaying} from "../src/lib/ElementRefereeErrors.sol";
import {
    TraceRefereeNotOwner,
    TraceRefereeNotPlaying,
    TraceRefereeClockRunning
} from "../src/lib/TraceRefereeErrors.sol";
import {TensorCommitmentMismatch, TensorChunkLength, MerkleProofLength} from "../src/lib/Errors.sol";
import {TraceTakeoverGames} from "./utils/TraceTakeoverGames.sol";

/// @notice DotReferee.startTrace and settleTrace end to end (docs/game.md 2.9): real ElementReferee games of the
///         eight keyed transcendental functions (trace_takeover.json) played to ElementProof, their isolated
///         element handed to a TraceReferee game, that game played (or timed out) and settled back.
contract DotRefereeTraceTest is TraceTakeoverGames {
    address internal stranger = makeAddr("stranger");
    uint256 internal constant EXP = 0; // case indices of trace_takeover.json
    uint256 internal constant LOG = 1; // a [3, 100] output

    // ---- end to end: every function, every lie, both sides honest in turn ----------------------------------

    /// @dev What the end-to-end play carries between its parts.
    struct Run {
        Match mt;
        TraceLie tl;
        uint256 tid;
        uint256[2] before;
        uint256 startCallGas;
        uint256 startCalldata;
        IElementReferee.Outcome want;
    }

    /// @dev Plays case `ci` lie `li` with the honest side `honest` through startTrace, the trace game and
    ///      settleTrace, checking every field on the way.
    function _endToEnd(uint256 ci, uint256 li, uint256 honest) internal {
        Run memory r;
        r.mt = _traceGame(ci, li, honest);
        r.tl = _traceLie(r.mt);
        r.before = referee.meterOf(r.mt.id);
        _e2eStart(r);
        _e2ePlay(r);
        _e2eSettle(r);
    }

    function _e2eStart(Run memory r) internal {
        Match memory mt = r.mt;
        IElementReferee.GameView memory ev = referee.gameOf(mt.id);
        assertEq(ev.op, 66 + r.tl.fn, "the element game's op is 66 + fn");
        vm.warp(block.timestamp + 30);
        IElementReferee.InputOpening memory input = _input(mt);
        vm.expectEmit(address(dot));
        emit IDotReferee.TraceStarted(mt.id, trace.gameCount() + 1, r.tl.fn, r.tl.x);
        vm.prank(defender);
        r.tid = dot.startTrace(mt.id, input);
        r.startCallGas = vm.lastCallGas().gasTotalUsed;
        r.startCalldata = abi.encodeCall(IDotReferee.startTrace, (mt.id, input)).length;
        assertEq(dot.tracedBy(mt.id), r.tid);
        assertEq(dot.takenOver(mt.id), 0, "no dot game");
        ITraceReferee.GameView memory tv = _traceView(r.tid);
        assertEq(tv.owner, address(dot), "owned by the DotReferee");
        assertEq(tv.players[0], defender);
        assertEq(tv.players[1], challenger);
        assertEq(tv.fn, r.tl.fn, "fn = op - 66");
        assertEq(tv.x, r.tl.x, "x = the agreed input element");
        assertEq(uint256(tv.values[0]), ev.values[0], "the defender's value");
        assertEq(uint256(tv.values[1]), ev.values[1], "the challenger's value");
        assertEq(tv.values[mt.honest], uint32(mt.l.honestValue));
        assertEq(tv.values[1 - mt.honest], uint32(mt.l.liarValue));
        assertEq(tv.clockLeft[0], ev.turnStartedAt + ev.clockLeft[0] - block.timestamp, "what was left");
        assertEq(tv.clockLeft[1], ev.clockLeft[1], "the challenger's element clock");
        assertEq(tv.turnStartedAt, block.timestamp);
        assertEq(uint256(tv.stage), uint256(ITraceReferee.Stage.Claim));
        assertEq(tv.steps, r.tl.steps);
        assertEq(uint256(referee.gameOf(mt.id).stage), uint256(IElementReferee.Stage.Delegated));
        // the trace game's outcome is the DotReferee's to read
        vm.expectRevert(
            abi.encodeWithSelector(TraceRefereeNotOwner.selector, r.tid, address(this), address(dot))
        );
        trace.ownedOutcome(r.tid);
    }

    function _e2ePlay(Run memory r) internal {
        Match memory mt = r.mt;
        uint256 tid = r.tid;
        vm.expectRevert(abi.encodeWithSelector(DotRefereeTracePending.selector, tid));
        dot.settleTrace(mt.id);
        bytes memory posted = _defenderTrace(mt);
        vm.prank(defender);
        trace.claim(tid, posted);
        vm.expectRevert(abi.encodeWithSelector(DotRefereeTracePending.selector, tid));
        dot.settleTrace(mt.id);
        // the honest challenger's step is the first where the posted trace leaves the program's
        uint64[] memory truth = trace.evaluate(r.tl.fn, r.tl.x);
        uint256 step = _refuteStep(mt);
        if (mt.honest == 1) {
            for (uint256 s; s < step; ++s) {
                assertEq(uint64(_slice8(posted, s)), truth[s], "the liar's trace is true before its last");
            }
            assertTrue(uint64(_slice8(posted, step)) != truth[step], "and wrong at its last step");
        } else {
            assertEq(keccak256(posted), keccak256(_pack(truth)), "the honest trace is evaluate's");
        }
        vm.warp(block.timestamp + 7);
        vm.prank(challenger);
        trace.refute(tid, posted, step);
        r.want =
            mt.honest == 0 ? IElementReferee.Outcome.DefenderWins : IElementReferee.Outcome.ChallengerWins;
        assertEq(uint256(trace.outcome(tid)), uint256(r.want), "the honest side wins the trace game");
    }

    function _e2eSettle(Run memory r) internal {
        Match memory mt = r.mt;
        uint256[2] memory tm = trace.meterOf(r.tid);
        assertGt(tm[0], 0);
        assertGt(tm[1], 0);
        vm.expectEmit(address(dot));
        emit IDotReferee.TraceSettled(mt.id, r.tid, r.want);
        vm.prank(stranger);
        dot.settleTrace(mt.id);
        IElementReferee.GameView memory ev = referee.gameOf(mt.id);
        assertEq(uint256(ev.stage), uint256(IElementReferee.Stage.Resolved));
        assertEq(uint256(ev.outcome), uint256(r.want), "the trace game's outcome");
        _honestWon(mt);
        uint256[2] memory after_ = referee.meterOf(mt.id);
        assertEq(after_[1], r.before[1] + tm[1], "the challenger's trace gas is metered to the element game");
        _checkStartGas(after_[0] - r.before[0] - tm[0], r.startCallGas, r.startCalldata);
        // once
        vm.expectRevert(
            abi.encodeWithSelector(
                ElementRefereeWrongStage.selector,
                mt.id,
                IElementReferee.Stage.Delegated,
                IElementReferee.Stage.Resolved
            )
        );
        dot.settleTrace(mt.id);
        vm.expectRevert(
            abi.encodeWithSelector(ElementRefereeNotPlaying.selector, mt.id, IElementReferee.Stage.Resolved)
        );
        referee.timeout(mt.id);
        IElementReferee.InputOpening memory input = _input(mt);
        vm.prank(defender);
        vm.expectRevert(
            abi.encodeWithSelector(
                ElementRefereeWrongStage.selector,
                mt.id,
                IElementReferee.Stage.ElementProof,
                IElementReferee.Stage.Resolved
            )
        );
        dot.startTrace(mt.id, input);
    }

    /// @dev startTrace meters what it measured itself plus 21,000, 40 per calldata byte and 1,000: at least the
    ///      fixed parts, at most the call's whole execution gas above them.
    function _checkStartGas(uint256 startGas, uint256 callGas, uint256 calldataLength) internal pure {
        uint256 fixed_ = 21_000 + 40 * calldataLength + 1_000;
        assertGt(startGas, fixed_, "startTrace's gas is metered to the defender");
        assertLe(startGas - fixed_, callGas, "no more than the call used");
        assertGe(startGas - fixed_ + 30_000, callGas, "all of it but the link's write and the return");
    }

    function _slice8(bytes memory b, uint256 s) internal pure returns (bytes8 w) {
        assembly ("memory-safe") {
            w := mload(add(add(b, 32), mul(8, s)))
        }
    }

    function _pack(uint64[] memory t) internal pure returns (bytes memory b) {
        for (uint256 i; i < t.length; ++i) {
            b = abi.encodePacked(b, t[i]);
        }
    }

    function _allLies(uint256 ci) internal {
        uint256 n = _lieCount(xjson, ci);
        assertGe(n, 3, "at least three lies per function");
        for (uint256 li; li < n; ++li) {
            _endToEnd(ci, li, 0);
            _endToEnd(ci, li, 1);
        }
    }

    function test_trace_exp_honestWins() public {
        _allLies(0);
    }

    function test_trace_log_honestWins() public {
        _allLies(1);
    }

    function test_trace_log1p_honestWins() public {
        _allLies(2);
    }

    function test_trace_tanh_honestWins() public {
        _allLies(3);
    }

    function test_trace_sigmoid_honestWins() public {
        _allLies(4);
    }

    function test_trace_erf_honestWins() public {
        _allLies(5);
    }

    function test_trace_gelu_honestWins() public {
        _allLies(6);
    }

    function test_trace_geluTanh_honestWins() public {
        _allLies(7);
    }

    function test_trace_fullChunk_honestWins() public {
        _endToEnd(8, 0, 0);
        _endToEnd(8, 0, 1);
        _endToEnd(9, 0, 0);
        _endToEnd(9, 0, 1);
    }

    function test_trace_caseNames() public view {
        string[8] memory names = ["exp", "log", "log1p", "tanh", "sigmoid", "erf", "gelu", "gelu_tanh"];
        assertEq(functionCount, 8);
        for (uint256 i; i < 8; ++i) {
            assertEq(vm.parseJsonString(xjson, string.concat(_at(".cases", i), ".name")), names[i]);
        }
    }

    /// @dev An honest defender wins whatever step the lying challenger names.
    function test_trace_honestDefender_everyStep() public {
        uint256[2] memory cis = [uint256(0), 6];
        for (uint256 k; k < 2; ++k) {
            Match memory mt = _traceGame(cis[k], 0, 0);
            uint256 tid = _startTrace(mt);
            bytes memory posted = _defenderTrace(mt);
            vm.prank(defender);
            trace.claim(tid, posted);
            uint256 steps = _traceLie(mt).steps;
            for (uint256 s; s < steps; ++s) {
                uint256 snap = vm.snapshotState();
                vm.prank(challenger);
                trace.refute(tid, posted, s);
                dot.settleTrace(mt.id);
                _honestWon(mt);
                vm.revertToState(snap);
            }
        }
    }

    /// @dev A lying defender's trace: a challenger that names an earlier (true) step loses; the honest one names
    ///      the last step and wins. So the honest challenger must name the first wrong step.
    function test_trace_lyingDefender_earlierStepLoses() public {
        Match memory mt = _traceGame(EXP, 0, 1);
        uint256 tid = _startTrace(mt);
        bytes memory posted = _defenderTrace(mt);
        vm.prank(defender);
        trace.claim(tid, posted);
        uint256 snap = vm.snapshotState();
        vm.prank(challenger);
        trace.refute(tid, posted, 0);
        dot.settleTrace(mt.id);
        assertEq(uint256(referee.outcome(mt.id)), uint256(IElementReferee.Outcome.DefenderWins));
        vm.revertToState(snap);
        vm.prank(challenger);
        trace.refute(tid, posted, _refuteStep(mt));
        dot.settleTrace(mt.id);
        _honestWon(mt);
    }

    // ---- startTrace's rules -------------------------------------------------------------------------------

    function test_startTrace_nonDefender_reverts() public {
        Match memory mt = _traceGame(EXP, 0, 0);
        IElementReferee.InputOpening memory input = _input(mt);
        vm.prank(challenger);
        vm.expectRevert(abi.encodeWithSelector(DotRefereeNotYourTurn.selector, mt.id, challenger, defender));
        dot.startTrace(mt.id, input);
        vm.prank(stranger);
        vm.expectRevert(abi.encodeWithSelector(DotRefereeNotYourTurn.selector, mt.id, stranger, defender));
        dot.startTrace(mt.id, input);
        vm.expectRevert(
            abi.encodeWithSelector(DotRefereeNotYourTurn.selector, mt.id, address(this), defender)
        );
        dot.startTrace(mt.id, input);
        _startTrace(mt); // the defender may
    }

    function test_startTrace_nonTraceOp_reverts() public {
        IElementReferee.InputOpening memory input = _input(_traceGame(EXP, 0, 0));
        // mm and addmm (dot_takeover.json), played to ElementProof
        string memory tj = _vectors("dot_takeover.json");
        for (uint256 ci; ci < 2; ++ci) {
            Case memory c = _case(tj, ci);
            Match memory mt = _newMatch(c, _lie(c, 0), 0);
            _playUntil(mt, IElementReferee.Stage.ElementProof, 0);
            vm.prank(defender);
            vm.expectRevert(abi.encodeWithSelector(DotRefereeBadParams.selector, 1, 64 + ci));
            dot.startTrace(mt.id, input);
        }
        // elementwise add (op 0) and relu (op 12) of element_referee.json
        string memory ej = _vectors("element_referee.json");
        uint256[2] memory cis = [uint256(0), 3];
        for (uint256 k; k < 2; ++k) {
            Case memory c = _case(ej, cis[k]);
            Match memory mt = _newMatch(c, _lie(c, 0), 0);
            _playUntil(mt, IElementReferee.Stage.ElementProof, 0);
            vm.prank(defender);
            vm.expectRevert(abi.encodeWithSelector(DotRefereeBadParams.selector, 1, c.op));
            dot.startTrace(mt.id, mt.openings[0]);
        }
    }

    /// @dev The other way round: DotReferee.start on a trace op's game reverts by name, whatever shapes it is
    ///      given (the op is checked first), and leaves the game at ElementProof for startTrace.
    function test_start_onTraceGame_reverts() public {
        IDotReferee.Claim memory cl;
        uint256[2] memory fns = [EXP, LOG]; // output [300] and [3, 100]
        for (uint256 i; i < 2; ++i) {
            Match memory mt = _traceGame(fns[i], 0, 0);
            IDotReferee.Takeover memory t;
            t.outputShape = mt.c.outShape;
            t.a = mt.inputHeaders[0];
            t.b = mt.inputHeaders[0];
            vm.prank(defender);
            vm.expectRevert(abi.encodeWithSelector(DotRefereeBadParams.selector, 1, mt.c.op));
            dot.start(mt.id, t, cl);
            assertEq(uint256(referee.gameOf(mt.id).stage), uint256(IElementReferee.Stage.ElementProof));
            assertEq(dot.takenOver(mt.id), 0);
            _startTrace(mt);
        }
    }

    function test_startTrace_wrongShape_reverts() public {
        // log's output is [3, 100]: the input opened as [300], [100, 3], [3, 100, 1] is refused
        Match memory mt = _traceGame(LOG, 0, 0);
        bytes32 hh = keccak256(abi.encodePacked(uint8(1), mt.c.outShape));
        uint64[][3] memory shapes;
        shapes[0] = new uint64[](1);
        shapes[0][0] = 300;
        shapes[1] = new uint64[](2);
        (shapes[1][0], shapes[1][1]) = (100, 3);
        shapes[2] = new uint64[](3);
        (shapes[2][0], shapes[2][1], shapes[2][2]) = (3, 100, 1);
        for (uint256 k; k < 3; ++k) {
            IElementReferee.InputOpening memory input = _input(mt);
            input.shape = shapes[k];
            bytes32 got = keccak256(abi.encodePacked(uint8(1), shapes[k]));
            vm.prank(defender);
            vm.expectRevert(abi.encodeWithSelector(DotRefereeHeader.selector, 0, got, hh));
            dot.startTrace(mt.id, input);
        }
        _startTrace(mt);
    }

    function test_startTrace_nonF32_reverts() public {
        Match memory mt = _traceGame(EXP, 0, 0);
        uint8[4] memory dtypes = [uint8(0), 2, 3, 10];
        for (uint256 k; k < 4; ++k) {
            IElementReferee.InputOpening memory input = _input(mt);
            input.dtype = dtypes[k];
            vm.prank(defender);
            vm.expectRevert(abi.encodeWithSelector(DotRefereeShape.selector, 1, 2 ** 256 - 2, dtypes[k], 1));
            dot.startTrace(mt.id, input);
        }
        _startTrace(mt);
    }

    function test_startTrace_wrongOpening_reverts() public {
        Match memory mt = _traceGame(EXP, 0, 0);
        // one input bit changed
        IElementReferee.InputOpening memory input = _input(mt);
        input.chunk = bytes.concat(input.chunk);
        input.chunk[4 * mt.l.element] ^= 0x01;
        vm.prank(defender);
        vm.expectPartialRevert(TensorCommitmentMismatch.selector);
        dot.startTrace(mt.id, input);
        // the output's chunk in place of the input's
        input = _input(mt);
        input.chunk = mt.l.honestChunk;
        vm.prank(defender);
        vm.expectPartialRevert(TensorCommitmentMismatch.selector);
        dot.startTrace(mt.id, input);
        // a short chunk
        input = _input(mt);
        bytes memory short_ = new bytes(input.chunk.length - 4);
        for (uint256 i; i < short_.length; ++i) {
            short_[i] = input.chunk[i];
        }
        input.chunk = short_;
        vm.prank(defender);
        vm.expectRevert(abi.encodeWithSelector(TensorChunkLength.selector, 1196, 1200));
        dot.startTrace(mt.id, input);
        // a sibling too many
        input = _input(mt);
        input.siblings = new bytes32[](1);
        vm.prank(defender);
        vm.expectPartialRevert(MerkleProofLength.selector);
        dot.startTrace(mt.id, input);
        _startTrace(mt);
    }

    /// @dev Four chunks: a sibling changed, the neighbouring chunk opened.
    function test_startTrace_wrongSibling_reverts() public {
        Match memory mt = _traceGame(8, 0, 0);
        IElementReferee.InputOpening memory input = _input(mt);
        assertEq(input.siblings.length, 2);
        assertEq(input.chunk.length, 4096);
        input.siblings = new bytes32[](2);
        input.siblings[0] = mt.openings[0].siblings[0] ^ bytes32(uint256(1));
        input.siblings[1] = mt.openings[0].siblings[1];
        vm.prank(defender);
        vm.expectPartialRevert(TensorCommitmentMismatch.selector);
        dot.startTrace(mt.id, input);
        input = _input(mt);
        input.siblings = new bytes32[](1);
        input.siblings[0] = mt.openings[0].siblings[0];
        vm.prank(defender);
        vm.expectPartialRevert(MerkleProofLength.selector);
        dot.startTrace(mt.id, input);
        _startTrace(mt);
    }

    function test_startTrace_afterDefenderClock_reverts() public {
        Match memory mt = _traceGame(EXP, 0, 0);
        IElementReferee.InputOpening memory input = _input(mt);
        IElementReferee.GameView memory ev = referee.gameOf(mt.id);
        uint256 deadline = ev.turnStartedAt + ev.clockLeft[0];
        vm.warp(deadline + 1);
        vm.prank(defender);
        vm.expectRevert(abi.encodeWithSelector(DotRefereeClockExpired.selector, mt.id, deadline));
        dot.startTrace(mt.id, input);
        // at the deadline itself it is still the defender's time: the trace game gets a clock of 1 second
        vm.warp(deadline);
        uint256 tid = _startTrace(mt);
        ITraceReferee.GameView memory tv = _traceView(tid);
        assertEq(tv.clockLeft[0], 1, "no time left: one second");
        assertEq(tv.clockLeft[1], ev.clockLeft[1]);
        vm.warp(deadline + 2);
        trace.timeout(tid);
        dot.settleTrace(mt.id);
        assertEq(uint256(referee.outcome(mt.id)), uint256(IElementReferee.Outcome.ChallengerWins));
    }

    /// @dev A defender that lets its element clock run out instead: the element game's timeout, and no
    ///      startTrace after it.
    function test_startTrace_afterElementTimeout_reverts() public {
        Match memory mt = _traceGame(EXP, 0, 1);
        IElementReferee.GameView memory ev = referee.gameOf(mt.id);
        vm.warp(ev.turnStartedAt + ev.clockLeft[0] + 1);
        referee.timeout(mt.id);
        _honestWon(mt);
        vm.warp(ev.turnStartedAt);
        vm.prank(defender);
        vm.expectRevert(
            abi.encodeWithSelector(
                ElementRefereeWrongStage.selector,
                mt.id,
                IElementReferee.Stage.ElementProof,
                IElementReferee.Stage.Resolved
            )
        );
        dot.startTrace(mt.id, _input(mt));
    }

    function test_startTrace_twice_reverts() public {
        Match memory mt = _traceGame(EXP, 0, 0);
        uint256 tid = _startTrace(mt);
        IElementReferee.InputOpening memory input = _input(mt);
        vm.prank(defender);
        vm.expectRevert(
            abi.encodeWithSelector(
                ElementRefereeWrongStage.selector,
                mt.id,
                IElementReferee.Stage.ElementProof,
                IElementReferee.Stage.Delegated
            )
        );
        dot.startTrace(mt.id, input);
        assertEq(dot.tracedBy(mt.id), tid);
        assertEq(trace.gameCount(), 1, "one trace game");
    }

    function test_startTrace_beforeElementProof_reverts() public {
        Case memory c = _case(xjson, EXP);
        Match memory mt = _newMatch(c, _lie(c, 0), 0);
        IElementReferee.InputOpening memory input = _input(mt);
        vm.prank(defender);
        vm.expectRevert(
            abi.encodeWithSelector(
                ElementRefereeWrongStage.selector,
                mt.id,
                IElementReferee.Stage.ElementProof,
                IElementReferee.Stage.Header
            )
        );
        dot.startTrace(mt.id, input);
        _play(mt); // the defender's header; the challenger to move
        vm.prank(defender);
        vm.expectRevert(
            abi.encodeWithSelector(
                ElementRefereeWrongStage.selector,
                mt.id,
                IElementReferee.Stage.ElementProof,
                IElementReferee.Stage.Header
            )
        );
        dot.startTrace(mt.id, input);
        _playUntil(mt, IElementReferee.Stage.ElementProof, 0);
        _startTrace(mt);
    }

    /// @dev A trace op's element is not computed by proveElement: the defender's only way is startTrace.
    function test_proveElement_traceOp_reverts() public {
        Match memory mt = _traceGame(EXP, 0, 0);
        bytes memory cd = _calldata(mt);
        (bool ok,,) = _send(defender, cd);
        assertFalse(ok, "proveElement of exp");
        assertEq(uint256(referee.gameOf(mt.id).stage), uint256(IElementReferee.Stage.ElementProof));
        _startTrace(mt);
    }

    function test_elementTimeout_refusedWhileDelegated() public {
        Match memory mt = _traceGame(EXP, 0, 0);
        uint256 tid = _startTrace(mt);
        vm.warp(block.timestamp + 10 days);
        vm.expectRevert(
            abi.encodeWithSelector(ElementRefereeNotPlaying.selector, mt.id, IElementReferee.Stage.Delegated)
        );
        referee.timeout(mt.id);
        // no element move either
        vm.prank(defender);
        vm.expectPartialRevert(ElementRefereeWrongStage.selector);
        referee.proveElement(mt.id, mt.c.outShape, mt.openings);
        // the trace game's timeout decides it
        trace.timeout(tid);
        dot.settleTrace(mt.id);
        assertEq(uint256(referee.outcome(mt.id)), uint256(IElementReferee.Outcome.ChallengerWins));
    }

    // ---- settleTrace --------------------------------------------------------------------------------------

    function test_settleTrace_unknown_reverts() public {
        vm.expectRevert(abi.encodeWithSelector(DotRefereeUnknown.selector, 12345));
        dot.settleTrace(12345);
        // an element game at ElementProof, not handed over
        Match memory mt = _traceGame(EXP, 0, 0);
        vm.expectRevert(abi.encodeWithSelector(DotRefereeUnknown.selector, mt.id));
        dot.settleTrace(mt.id);
        // a refused startTrace leaves no link
        IElementReferee.InputOpening memory input = _input(mt);
        input.dtype = 2;
        vm.prank(defender);
        vm.expectPartialRevert(DotRefereeShape.selector);
        dot.startTrace(mt.id, input);
        vm.expectRevert(abi.encodeWithSelector(DotRefereeUnknown.selector, mt.id));
        dot.settleTrace(mt.id);
        assertEq(dot.tracedBy(mt.id), 0);
    }

    function test_settleTrace_pending_reverts() public {
        Match memory mt = _traceGame(EXP, 0, 0);
        uint256 tid = _startTrace(mt);
        vm.expectRevert(abi.encodeWithSelector(DotRefereeTracePending.selector, tid));
        dot.settleTrace(mt.id);
        vm.prank(defender);
        trace.claim(tid, _defenderTrace(mt));
        vm.warp(block.timestamp + 1 days); // the challenger's clock ran out, nobody called timeout yet
        vm.expectRevert(abi.encodeWithSelector(DotRefereeTracePending.selector, tid));
        dot.settleTrace(mt.id);
    }

    /// @dev The trace game decided by a timeout (the defender's, the challenger's), settled back with meters.
    function test_settleTrace_traceTimeouts() public {
        for (uint256 side; side < 2; ++side) {
            Match memory mt = _traceGame(6, 1, side == 0 ? 1 : 0); // gelu, the liar times out
            uint256[2] memory before = referee.meterOf(mt.id);
            uint256 tid = _startTrace(mt);
            ITraceReferee.GameView memory tv = _traceView(tid);
            if (side == 1) {
                vm.prank(defender);
                trace.claim(tid, _defenderTrace(mt));
                tv = _traceView(tid);
            }
            uint256 deadline = tv.turnStartedAt + tv.clockLeft[side];
            vm.warp(deadline);
            vm.prank(stranger);
            vm.expectRevert(abi.encodeWithSelector(TraceRefereeClockRunning.selector, tid, deadline));
            trace.timeout(tid);
            vm.warp(deadline + 1);
            vm.prank(stranger);
            trace.timeout(tid);
            uint256[2] memory tm = trace.meterOf(tid);
            IElementReferee.Outcome want =
                side == 0 ? IElementReferee.Outcome.ChallengerWins : IElementReferee.Outcome.DefenderWins;
            vm.expectEmit(address(dot));
            emit IDotReferee.TraceSettled(mt.id, tid, want);
            dot.settleTrace(mt.id);
            assertEq(uint256(referee.outcome(mt.id)), uint256(want));
            _honestWon(mt);
            uint256[2] memory after_ = referee.meterOf(mt.id);
            assertEq(tm[1], 0, "the stranger's timeout is not metered");
            if (side == 0) assertEq(tm[0], 0, "nobody moved");
            else assertGt(tm[0], 0, "the defender's claim");
            assertEq(after_[1], before[1] + tm[1]);
            assertGt(after_[0], before[0] + tm[0], "startTrace's gas");
            // the trace game is over: no move there
            vm.prank(challenger);
            vm.expectRevert(abi.encodeWithSelector(TraceRefereeNotPlaying.selector, tid));
            trace.timeout(tid);
        }
    }

    // ---- the table ----------------------------------------------------------------------------------------

    /// @dev elementOp of each keyed function's key (the Python table's sha256 parts) is its code + 1 = 67..;
    ///      the same op with other arguments is not keyed.
    function test_elementOp_traceKeys() public view {
        for (uint256 ci; ci < functionCount; ++ci) {
            string memory key = _at(".cases", ci);
            bytes32 opHash = vm.parseJsonBytes32(xjson, string.concat(key, ".opHash"));
            bytes32 argHash = vm.parseJsonBytes32(xjson, string.concat(key, ".argHash"));
            uint256 nIn = vm.parseJsonUint(xjson, string.concat(key, ".nIn"));
            uint256 op = vm.parseJsonUint(xjson, string.concat(key, ".op"));
            uint256 fn = vm.parseJsonUint(xjson, string.concat(key, ".fn"));
            assertEq(op, 66 + fn);
            assertEq(referee.elementOp(opHash, argHash, nIn), op + 1, "code + 1");
            assertEq(referee.elementOp(opHash, argHash, nIn + 1), 0, "another input count");
            assertEq(referee.elementOp(opHash, bytes32(uint256(argHash) ^ 1), nIn), 0, "other arguments");
        }
        // rsqrt (69) is inline: its key gives RSQRT (9) + 1, not 70
        bytes32 rsqrtOp = sha256("aten.rsqrt.default");
        bytes32 expArgs = vm.parseJsonBytes32(xjson, ".cases[0].argHash");
        assertEq(referee.elementOp(rsqrtOp, expArgs, 1), 10, "rsqrt is RepOpsElement's RSQRT");
    }
}
