// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {Test} from "forge-std/Test.sol";

import {FloatVectors} from "../utils/FloatVectors.sol";
import {MathFnSequences} from "../utils/MathFnSequences.sol";

/// @notice exp, log, tanh, sigmoid, erf and GELU (both forms) run step by step on Binary64 give the RepOps kernels' bits
///         (ieee_mathfn.json): the libraries hold every operation those sequences use.
contract MathFnSequencesTest is Test {
    using FloatVectors for FloatVectors.Group;

    function _eval(bytes32 name, uint32 x) internal pure returns (uint32) {
        if (name == "exp") return MathFnSequences.exp(x);
        if (name == "log") return MathFnSequences.log(x);
        if (name == "tanh") return MathFnSequences.tanh(x);
        if (name == "sigmoid") return MathFnSequences.sigmoid(x);
        if (name == "erf") return MathFnSequences.erf(x);
        if (name == "gelu") return MathFnSequences.gelu(x);
        if (name == "gelu_tanh") return MathFnSequences.geluTanh(x);
        revert("no such function");
    }

    /// @dev Checks group `name`; returns the most gas one whole evaluation took.
    function checkGroup(string memory name) public view returns (uint256 maxGas) {
        FloatVectors.Group memory g = FloatVectors.find(FloatVectors.load("ieee_mathfn.json"), name);
        bytes32 key = bytes32(bytes(name));
        for (uint256 r; r < g.count; ++r) {
            (uint256 a,,, uint256 out) = g.record(r);
            uint256 before = gasleft();
            uint32 got = _eval(key, uint32(a));
            uint256 used = before - gasleft();
            if (used > maxGas) maxGas = used;
            if (got != out) assertEq(got, out, string.concat(name, " of ", vm.toString(a)));
        }
        assertGt(g.count, 300, name);
    }

    function test_exp_matchesKernel_succeeds() public view {
        checkGroup("exp");
    }

    function test_log_matchesKernel_succeeds() public view {
        checkGroup("log");
    }

    function test_tanh_matchesKernel_succeeds() public view {
        checkGroup("tanh");
    }

    function test_sigmoid_matchesKernel_succeeds() public view {
        checkGroup("sigmoid");
    }

    function test_erf_matchesKernel_succeeds() public view {
        checkGroup("erf");
    }

    function test_gelu_matchesKernel_succeeds() public view {
        checkGroup("gelu");
    }

    function test_geluTanh_matchesKernel_succeeds() public view {
        checkGroup("gelu_tanh");
    }

    /// @notice Gas of a whole function evaluated on chain (snapshot `MathFnSequencesGas`): the
    ///         reason the element phase bisects a sequence to one step rather than running it.
    function test_gas_wholeFunctions_succeeds() public {
        string[7] memory names = ["exp", "log", "tanh", "sigmoid", "erf", "gelu", "gelu_tanh"];
        for (uint256 i; i < names.length; ++i) {
            uint256 gas = this.checkGroup(names[i]);
            vm.snapshotValue("MathFnSequencesGas", names[i], gas);
        }
    }
}
