// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {console} from "forge-std/console.sol";

import {TraceGames} from "./utils/TraceGames.sol";

/// @notice Gas of the trace game's two moves (docs/game.md 2.9), per function: the claim (the whole trace in
///         calldata) and the refutation (the trace passed back, one step recomputed), the latter for every step.
///         Traces: the honest ones on three inputs (0.5, -2.3, 3.0) and a junk one (every byte 0xA5 but the
///         output's zero-extension: the most calldata a trace can cost, and steps recomputed on junk operands).
/// @dev Each test runs isolated (inline config `isolate = true`): every call is its own transaction (21,000 and
///      calldata or the EIP-7623 floor included, storage cold). Figures go to the console and to the snapshot
///      group `TraceRefereeGas`: per function the largest claim and the largest refutation seen, and one whole
///      `evaluate` (on 0.5) as a transaction, for comparison.
contract TraceRefereeGasTest is TraceGames {
    uint256 internal constant MOVE_TARGET = 100_000;

    /// @dev Claims `trace` in a new game and refutes each of its steps (state restored after each); returns the
    ///      claim's gas, the largest refutation's and its step.
    function _measure(uint256 fn, uint32 x, bytes memory trace)
        internal
        returns (uint256 claimGas, uint256 refuteGas, uint256 worst)
    {
        uint32 v = _output(trace);
        uint256 id = _open(fn, x, v, v ^ 1);
        vm.prank(defender);
        referee.claim(id, trace);
        claimGas = vm.lastCallGas().gasTotalUsed;
        for (uint256 s; s < trace.length / 8; ++s) {
            uint256 snap = vm.snapshotState();
            vm.prank(challenger);
            referee.refute(id, trace, s);
            uint256 g = vm.lastCallGas().gasTotalUsed;
            if (g > refuteGas) (refuteGas, worst) = (g, s);
            vm.revertToState(snap);
        }
    }

    function _junk(uint256 steps) internal pure returns (bytes memory t) {
        t = new bytes(8 * steps);
        for (uint256 i; i < t.length; ++i) {
            t[i] = 0xA5;
        }
        for (uint256 i = t.length - 8; i < t.length - 4; ++i) {
            t[i] = 0; // the output is an fp32 pattern
        }
    }

    function _gas(uint256 fn, string memory name) internal {
        uint32[3] memory xs = [uint32(0x3F000000), 0xC0133333, 0x40400000];
        uint256 claimMax;
        uint256 refuteMax;
        uint256 worst;
        for (uint256 i; i < 4; ++i) {
            bytes memory trace;
            uint32 x = i < 3 ? xs[i] : xs[0];
            if (i < 3) trace = _pack(referee.evaluate(fn, x));
            else trace = _junk(referee.evaluate(fn, x).length);
            (uint256 c, uint256 r, uint256 s) = _measure(fn, x, trace);
            if (c > claimMax) claimMax = c;
            if (r > refuteMax) (refuteMax, worst) = (r, s);
        }
        referee.evaluate(fn, xs[0]);
        uint256 evalGas = vm.lastCallGas().gasTotalUsed;
        console.log(name, "claim", claimMax);
        console.log("  evaluate", evalGas);
        console.log("  refute", refuteMax, "at step", worst);
        assertLe(claimMax, MOVE_TARGET, "claim <= 100k");
        assertLe(refuteMax, MOVE_TARGET, "refute <= 100k");
        vm.snapshotValue("TraceRefereeGas", string.concat(name, "_claim"), claimMax);
        vm.snapshotValue("TraceRefereeGas", string.concat(name, "_refute"), refuteMax);
        vm.snapshotValue("TraceRefereeGas", string.concat(name, "_evaluate"), evalGas);
    }

    /// forge-config: default.isolate = true
    function test_gas_exp_under100k_succeeds() public {
        _gas(0, "exp");
    }

    /// forge-config: default.isolate = true
    function test_gas_log_under100k_succeeds() public {
        _gas(1, "log");
    }

    /// forge-config: default.isolate = true
    function test_gas_log1p_under100k_succeeds() public {
        _gas(2, "log1p");
    }

    /// forge-config: default.isolate = true
    function test_gas_rsqrt_under100k_succeeds() public {
        _gas(3, "rsqrt");
    }

    /// forge-config: default.isolate = true
    function test_gas_tanh_under100k_succeeds() public {
        _gas(4, "tanh");
    }

    /// forge-config: default.isolate = true
    function test_gas_sigmoid_under100k_succeeds() public {
        _gas(5, "sigmoid");
    }

    /// forge-config: default.isolate = true
    function test_gas_erf_under100k_succeeds() public {
        _gas(6, "erf");
    }

    /// forge-config: default.isolate = true
    function test_gas_gelu_under100k_succeeds() public {
        _gas(7, "gelu");
    }

    /// forge-config: default.isolate = true
    function test_gas_geluTanh_under100k_succeeds() public {
        _gas(8, "gelu_tanh");
    }
}
