// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {Test} from "forge-std/Test.sol";

import {TraceReferee} from "../../src/TraceReferee.sol";
import {IElementReferee} from "../../src/interfaces/IElementReferee.sol";

/// @notice Plays TraceReferee games on the vectors of scripts/trace_referee_vectors.py: per function its inputs
///         and their traces (trainer.repops.programs.run), and lying defenders' traces, one ulp off at the output
///         and consistent everywhere except one altered step.
abstract contract TraceGames is Test {
    uint64 internal constant CLOCK = 1 days;
    uint256 internal constant FUNCTIONS = 9;

    TraceReferee internal referee;
    address internal defender = makeAddr("defender");
    address internal challenger = makeAddr("challenger");

    /// @dev One function's vectors: its inputs and their traces, concatenated (8 bytes per step).
    struct Fn {
        string name;
        uint256 fn;
        uint256 steps;
        uint256[] xs;
        bytes traces;
    }

    /// @dev A lying defender's trace for one input (`wrong`: its only inconsistent step).
    struct Liar {
        string name;
        uint256 fn;
        uint32 x;
        uint32 value;
        uint32 honestValue;
        uint256 wrong;
        bytes trace;
        bytes honest;
    }

    function setUp() public virtual {
        referee = new TraceReferee();
        vm.warp(1_000_000);
    }

    // ---- vectors -------------------------------------------------------------------------

    function _json() internal view returns (string memory) {
        return vm.readFile(string.concat(vm.projectRoot(), "/contracts/test/vectors/trace_referee.json"));
    }

    function _fn(string memory json, uint256 i) internal pure returns (Fn memory f) {
        string memory k = string.concat(".functions[", vm.toString(i), "]");
        f.name = vm.parseJsonString(json, string.concat(k, ".name"));
        f.fn = vm.parseJsonUint(json, string.concat(k, ".fn"));
        f.steps = vm.parseJsonUint(json, string.concat(k, ".steps"));
        f.xs = vm.parseJsonUintArray(json, string.concat(k, ".xs"));
        f.traces = vm.parseJsonBytes(json, string.concat(k, ".traces"));
        require(f.traces.length == 8 * f.steps * f.xs.length, "trace data length");
    }

    function _liarCount(string memory json) internal view returns (uint256 n) {
        while (vm.keyExistsJson(json, string.concat(".liars[", vm.toString(n), "]"))) ++n;
    }

    function _liar(string memory json, uint256 i) internal pure returns (Liar memory l) {
        string memory k = string.concat(".liars[", vm.toString(i), "]");
        l.name = vm.parseJsonString(json, string.concat(k, ".name"));
        l.fn = vm.parseJsonUint(json, string.concat(k, ".fn"));
        l.x = uint32(vm.parseJsonUint(json, string.concat(k, ".x")));
        l.value = uint32(vm.parseJsonUint(json, string.concat(k, ".value")));
        l.honestValue = uint32(vm.parseJsonUint(json, string.concat(k, ".honestValue")));
        l.wrong = vm.parseJsonUint(json, string.concat(k, ".wrong"));
        l.trace = vm.parseJsonBytes(json, string.concat(k, ".trace"));
        l.honest = vm.parseJsonBytes(json, string.concat(k, ".honest"));
    }

    /// @dev Input k's trace.
    function _traceOf(Fn memory f, uint256 k) internal pure returns (bytes memory t) {
        uint256 len = 8 * f.steps;
        t = new bytes(len);
        for (uint256 i; i < len; ++i) {
            t[i] = f.traces[k * len + i];
        }
    }

    /// @dev Step s of a packed trace.
    function _word(bytes memory t, uint256 s) internal pure returns (uint64 w) {
        for (uint256 i; i < 8; ++i) {
            w = (w << 8) | uint8(t[8 * s + i]);
        }
    }

    /// @dev A packed trace (8 bytes per step, big endian).
    function _pack(uint64[] memory trace) internal pure returns (bytes memory t) {
        t = new bytes(8 * trace.length);
        for (uint256 s; s < trace.length; ++s) {
            for (uint256 i; i < 8; ++i) {
                t[8 * s + i] = bytes1(uint8(trace[s] >> (56 - 8 * i)));
            }
        }
    }

    /// @dev The fp32 output (the last step) of a packed trace.
    function _output(bytes memory t) internal pure returns (uint32) {
        return uint32(_word(t, t.length / 8 - 1));
    }

    // ---- games ---------------------------------------------------------------------------

    function _open(uint256 fn, uint32 x, uint32 dv, uint32 cv) internal returns (uint256) {
        return referee.open(fn, x, [dv, cv], [defender, challenger], [CLOCK, CLOCK]);
    }

    /// @dev Opens a game on an honest trace (the challenger's value one bit off) and makes the claim.
    function _claimed(uint256 fn, uint32 x, bytes memory trace) internal returns (uint256 id) {
        uint32 v = _output(trace);
        id = _open(fn, x, v, v ^ 1);
        vm.prank(defender);
        referee.claim(id, trace);
    }

    function _refute(uint256 id, bytes memory trace, uint256 step)
        internal
        returns (IElementReferee.Outcome)
    {
        vm.prank(challenger);
        referee.refute(id, trace, step);
        return referee.outcome(id);
    }
}
