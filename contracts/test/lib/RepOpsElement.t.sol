// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {Test} from "forge-std/Test.sol";

import {ElementArgTooWide, ElementPowExponent, ElementUnknownOp} from "../../src/lib/FloatErrors.sol";
import {RepOpsElement} from "../../src/lib/RepOpsElement.sol";
import {FloatHarness} from "../harness/FloatHarness.sol";
import {FloatVectors} from "../utils/FloatVectors.sol";

/// @notice RepOpsElement against ieee_element.json: for every operator code, outputs the RepOps
///         kernels (trainer/repops, fast and reference agreeing) computed, bit for bit.
contract RepOpsElementTest is Test {
    using FloatVectors for FloatVectors.Group;

    FloatHarness internal harness;

    function setUp() public {
        harness = new FloatHarness();
    }

    /// @dev Read per test (memory), not kept in storage.
    function _json() internal view returns (string memory) {
        return FloatVectors.load("ieee_element.json");
    }

    /// @dev Checks group `i`; returns its operator code and the most gas one evaluation took.
    function _checkGroup(uint256 i) internal view returns (uint256 code, uint256 maxGas) {
        string memory json = _json();
        FloatVectors.Group memory g = FloatVectors.at(json, i);
        string memory key = string.concat(".groups[", vm.toString(i), "]");
        code = vm.parseJsonUint(json, string.concat(key, ".code"));
        bool scalarB = vm.keyExistsJson(json, string.concat(key, ".scalarB"));
        for (uint256 r; r < g.count; ++r) {
            (uint256 a, uint256 b, uint256 c, uint256 out) = g.record(r);
            // A Tensor-Scalar operand arrives as the Python float's binary64 pattern.
            if (scalarB) b = RepOpsElement.scalarToF32(uint64(b));
            uint256 before = gasleft();
            uint256 got = RepOpsElement.evaluate(code, a, b, c);
            uint256 used = before - gasleft();
            if (used > maxGas) maxGas = used;
            if (got != out) {
                assertEq(
                    got,
                    out,
                    string.concat(
                        g.name,
                        " record ",
                        vm.toString(r),
                        ": a=",
                        vm.toString(a),
                        " b=",
                        vm.toString(b),
                        " c=",
                        vm.toString(c)
                    )
                );
            }
        }
        assertGt(g.count, 0, g.name);
    }

    function test_evaluate_everyOpCodeHasVectors_succeeds() public view {
        string memory json = _json();
        bool[] memory seen = new bool[](RepOpsElement.OP_COUNT);
        uint256 i;
        for (; bytes(FloatVectors.nameAt(json, i)).length != 0; ++i) {
            seen[vm.parseJsonUint(json, string.concat(".groups[", vm.toString(i), "].code"))] = true;
        }
        for (uint256 op; op < seen.length; ++op) {
            assertTrue(seen[op], string.concat("no vectors for op code ", vm.toString(op)));
        }
        assertEq(i, 39, "groups");
    }

    function test_evaluate_arithmeticVectors_succeeds() public view {
        for (uint256 i; i < 11; ++i) {
            this.checkGroup(i);
        }
    }

    function test_evaluate_compareVectors_succeeds() public view {
        for (uint256 i = 11; i < 17; ++i) {
            this.checkGroup(i);
        }
    }

    function test_evaluate_unaryAndPowVectors_succeeds() public view {
        for (uint256 i = 17; i < 24; ++i) {
            this.checkGroup(i);
        }
    }

    function test_evaluate_selectionVectors_succeeds() public view {
        for (uint256 i = 24; i < 29; ++i) {
            this.checkGroup(i);
        }
    }

    function test_evaluate_conversionVectors_succeeds() public view {
        for (uint256 i = 29; i < 39; ++i) {
            this.checkGroup(i);
        }
    }

    /// @notice Most gas each operator takes over its vectors (snapshot group `RepOpsElementGas`,
    ///         keyed by vector group: code and operand kind), far below a move's 100k.
    function test_gas_everyOp_succeeds() public {
        string memory json = _json();
        for (uint256 i; i < 39; ++i) {
            // One external call per group, so each group's memory is freed before the next.
            (uint256 code, uint256 gas) = this.checkGroup(i);
            string memory name = FloatVectors.nameAt(json, i);
            string memory pad = code < 10 ? "0" : "";
            vm.snapshotValue("RepOpsElementGas", string.concat(pad, vm.toString(code), "_", name), gas);
            assertLt(gas, 30_000, name);
        }
    }

    /// @notice `_checkGroup` as an external call (its memory ends with the call).
    function checkGroup(uint256 i) external view returns (uint256 code, uint256 maxGas) {
        return _checkGroup(i);
    }

    // ---------------------------------------------------------------- bad input

    function test_evaluate_unknownOp_reverts() public {
        vm.expectRevert(abi.encodeWithSelector(ElementUnknownOp.selector, RepOpsElement.OP_COUNT));
        harness.evaluate(RepOpsElement.OP_COUNT, 0, 0, 0);
    }

    function test_evaluate_fp32ArgTooWide_reverts() public {
        vm.expectRevert(abi.encodeWithSelector(ElementArgTooWide.selector, 1, uint256(1) << 32, 32));
        harness.evaluate(RepOpsElement.ADD, 0, uint256(1) << 32, 0);
    }

    function test_evaluate_scalarArgTooWide_reverts() public {
        vm.expectRevert(abi.encodeWithSelector(ElementArgTooWide.selector, 2, uint256(1) << 64, 64));
        harness.evaluate(RepOpsElement.THRESHOLD_BACKWARD, 0, 0, uint256(1) << 64);
    }

    function test_evaluate_boolNotZeroOrOne_reverts() public {
        vm.expectRevert(abi.encodeWithSelector(ElementArgTooWide.selector, 0, 2, 1));
        harness.evaluate(RepOpsElement.WHERE, 2, 0, 0);
    }

    function test_evaluate_powUndefinedExponent_reverts() public {
        uint64[4] memory bad = [uint64(0x4010000000000000), 0x3FD0000000000000, 0x7FF8000000000000, 1];
        for (uint256 i; i < bad.length; ++i) {
            vm.expectRevert(abi.encodeWithSelector(ElementPowExponent.selector, bad[i]));
            harness.evaluate(RepOpsElement.POW, 0x3F800000, bad[i], 0);
        }
    }
}
