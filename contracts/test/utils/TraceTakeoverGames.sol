// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {DotReferee} from "../../src/DotReferee.sol";
import {TraceReferee} from "../../src/TraceReferee.sol";
import {IElementReferee} from "../../src/interfaces/IElementReferee.sol";
import {ITraceReferee} from "../../src/interfaces/ITraceReferee.sol";
import {ElementGames} from "./ElementGames.sol";

/// @notice Plays ElementReferee games of the transcendental functions (trace_takeover.json, written by
///         scripts/trace_takeover_vectors.py) to ElementProof, hands them to a TraceReferee game through
///         `DotReferee.startTrace` and plays that one: the defender posts its trace (the honest one, or the
///         program's trace ending in the liar's value), the challenger names a step.
abstract contract TraceTakeoverGames is ElementGames {
    DotReferee internal dot;
    TraceReferee internal trace;
    string internal xjson;
    uint256 internal functionCount;

    /// @dev A lie's trace-side data.
    struct TraceLie {
        uint256 fn;
        uint256 steps;
        uint32 x;
        bytes honestTrace;
        bytes liarTrace;
    }

    function setUp() public virtual override {
        super.setUp();
        dot = DotReferee(referee.dot());
        trace = TraceReferee(dot.trace());
        xjson = _vectors("trace_takeover.json");
        functionCount = vm.parseJsonUint(xjson, ".functions");
    }

    function _traceLie(Match memory mt) internal pure returns (TraceLie memory t) {
        string memory json = mt.c.json;
        t.fn = vm.parseJsonUint(json, _k(mt.c, ".fn"));
        t.steps = vm.parseJsonUint(json, _k(mt.c, ".steps"));
        t.x = uint32(vm.parseJsonUint(json, string.concat(mt.l.key, ".x")));
        t.honestTrace = vm.parseJsonBytes(json, string.concat(mt.l.key, ".honestTrace"));
        t.liarTrace = vm.parseJsonBytes(json, string.concat(mt.l.key, ".liarTrace"));
    }

    /// @notice A game of case `ci`, lie `li`, the honest side `honest`, played to ElementProof.
    function _traceGame(uint256 ci, uint256 li, uint256 honest) internal returns (Match memory mt) {
        Case memory c = _case(xjson, ci);
        mt = _newMatch(c, _lie(c, li), honest);
        _playUntil(mt, IElementReferee.Stage.ElementProof, 0);
    }

    /// @notice The input element's opening the defender passes to startTrace (a copy: tests change it).
    function _input(Match memory mt) internal pure returns (IElementReferee.InputOpening memory o) {
        IElementReferee.InputOpening memory m = mt.openings[0];
        o.dtype = m.dtype;
        o.shape = new uint64[](m.shape.length);
        for (uint256 i; i < m.shape.length; ++i) {
            o.shape[i] = m.shape[i];
        }
        o.chunk = bytes.concat(m.chunk);
        o.siblings = new bytes32[](m.siblings.length);
        for (uint256 i; i < m.siblings.length; ++i) {
            o.siblings[i] = m.siblings[i];
        }
    }

    function _startTrace(Match memory mt) internal returns (uint256 tid) {
        vm.prank(defender);
        tid = dot.startTrace(mt.id, _input(mt));
    }

    /// @notice The defender's trace: the honest one, or the program's with the liar's value as its last step.
    function _defenderTrace(Match memory mt) internal pure returns (bytes memory) {
        TraceLie memory t = _traceLie(mt);
        return mt.honest == 0 ? t.honestTrace : t.liarTrace;
    }

    /// @notice The step the challenger names: an honest one the first wrong step of the posted trace (the
    ///         last: the liar's trace leaves the true one only there); a lying one the last (the output).
    function _refuteStep(Match memory mt) internal pure returns (uint256) {
        return _traceLie(mt).steps - 1;
    }

    function _traceView(uint256 tid) internal view returns (ITraceReferee.GameView memory) {
        return trace.gameOf(tid);
    }
}
