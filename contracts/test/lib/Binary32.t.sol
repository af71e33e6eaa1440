// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {Binary32} from "../../src/lib/Binary32.sol";
import {Binary64} from "../../src/lib/Binary64.sol";
import {FloatVectorTest} from "../utils/FloatVectorTest.sol";

/// @notice Binary32 against ieee_binary32.json (numpy's float32, canonical NaN), bit for bit, and
///         the algebraic identities that must hold exactly, fuzzed.
contract Binary32Test is FloatVectorTest {
    function _file() internal pure override returns (string memory) {
        return "ieee_binary32.json";
    }

    function _gasGroup() internal pure override returns (string memory) {
        return "Binary32Gas";
    }

    function _groups() internal pure override returns (string[] memory names) {
        string[22] memory fixedNames = [
            "add",
            "sub",
            "mul",
            "div",
            "eq",
            "lt",
            "le",
            "min",
            "max",
            "copysign",
            "sqrt",
            "neg",
            "abs",
            "toBinary64",
            "toInt_i64",
            "toInt_i32",
            "toInt_i16",
            "toInt_i8",
            "toInt_u8",
            "fromInt",
            "ldexp",
            "fromScaledInt"
        ];
        names = new string[](fixedNames.length);
        for (uint256 i; i < fixedNames.length; ++i) {
            names[i] = fixedNames[i];
        }
    }

    function _eval(bytes32 name, uint256 a, uint256 b) internal pure override returns (uint256) {
        uint32 x = uint32(a);
        uint32 y = uint32(b);
        if (name == "add") return Binary32.add(x, y);
        if (name == "sub") return Binary32.sub(x, y);
        if (name == "mul") return Binary32.mul(x, y);
        if (name == "div") return Binary32.div(x, y);
        if (name == "eq") return Binary32.eq(x, y) ? 1 : 0;
        if (name == "lt") return Binary32.lt(x, y) ? 1 : 0;
        if (name == "le") return Binary32.le(x, y) ? 1 : 0;
        if (name == "min") return Binary32.min(x, y);
        if (name == "max") return Binary32.max(x, y);
        if (name == "copysign") return Binary32.copysign(x, y);
        if (name == "sqrt") return Binary32.sqrt(x);
        if (name == "neg") return Binary32.neg(x);
        if (name == "abs") return Binary32.abs(x);
        if (name == "toBinary64") return Binary32.toBinary64(x);
        if (name == "toInt_i64") return _pattern(Binary32.toInt(x, type(int64).min, type(int64).max));
        if (name == "toInt_i32") return _pattern(Binary32.toInt(x, type(int32).min, type(int32).max));
        if (name == "toInt_i16") return _pattern(Binary32.toInt(x, type(int16).min, type(int16).max));
        if (name == "toInt_i8") return _pattern(Binary32.toInt(x, type(int8).min, type(int8).max));
        if (name == "toInt_u8") return _pattern(Binary32.toInt(x, 0, 255));
        if (name == "fromInt") return Binary32.fromInt(int64(uint64(a)));
        if (name == "fromScaledInt") return Binary32.fromScaledInt(int64(uint64(a)), int64(uint64(b)));
        if (name == "ldexp") return Binary32.ldexp(x, int64(uint64(b)));
        return _noFunction(name);
    }

    // ---------------------------------------------------------------- named cases

    function test_add_signedZeros_succeeds() public pure {
        assertEq(Binary32.add(0x80000000, 0x80000000), 0x80000000, "-0 + -0 = -0");
        assertEq(Binary32.add(0x80000000, 0), 0, "-0 + +0 = +0");
        assertEq(Binary32.sub(0x3F800000, 0x3F800000), 0, "1 - 1 = +0");
        assertEq(Binary32.add(0x7F800000, 0xFF800000), Binary32.NAN, "inf - inf = NaN");
    }

    function test_add_tieToEven_succeeds() public pure {
        // 1 + 2^-24 is halfway between 1 and 1 + 2^-23: the even one, 1.
        assertEq(Binary32.add(0x3F800000, 0x33800000), 0x3F800000);
        // (1 + 2^-23) + 2^-24 is halfway between 1 + 2^-23 and 1 + 2^-22: the even one.
        assertEq(Binary32.add(0x3F800001, 0x33800000), 0x3F800002);
    }

    function test_mul_subnormalAndOverflow_succeeds() public pure {
        assertEq(Binary32.mul(0x00800000, 0x3F000000), 0x00400000, "min normal / 2 is subnormal");
        assertEq(Binary32.mul(0x00000001, 0x3F000000), 0, "min subnormal / 2 ties to +0");
        assertEq(Binary32.mul(0x00000001, 0x3F400000), 0x00000001, "0.75 of the min subnormal rounds up");
        assertEq(Binary32.mul(0x7F7FFFFF, 0x40000000), Binary32.INF, "overflow to inf");
        assertEq(Binary32.mul(0, 0x7F800000), Binary32.NAN, "0 * inf = NaN");
    }

    function test_nan_payloadsAreCanonical_succeeds() public pure {
        assertEq(Binary32.add(0xFFC00001, 0x3F800000), Binary32.NAN, "signed payload");
        assertEq(Binary32.mul(0x7F800001, 0), Binary32.NAN, "signalling");
        assertEq(Binary32.neg(0x7FC00001), Binary32.NAN, "neg of a NaN");
        assertEq(Binary32.abs(0xFFFFFFFF), Binary32.NAN, "abs of a NaN");
        assertEq(Binary32.toBinary64(0xFF800001), 0x7FF8000000000000, "widened NaN");
        assertEq(Binary32.sqrt(0xBF800000), Binary32.NAN, "sqrt(-1)");
        assertEq(Binary32.sqrt(0x80000000), 0x80000000, "sqrt(-0) = -0");
    }

    function test_fromInt_noDoubleRounding_succeeds() public pure {
        // 2^60 + 2^36 + 1 rounds to 2^60 + 2^37 (through binary64 it would give 2^60).
        assertEq(Binary32.fromInt(int256((1 << 60) + (1 << 36) + 1)), 0x5D800001);
        assertEq(Binary32.fromInt(type(int256).min), 0xFF800000, "-2^255 overflows to -inf");
    }

    // ---------------------------------------------------------------- exact identities, fuzzed

    function testFuzz_add_zeroIsIdentity(uint32 x) public pure {
        vm.assume(!Binary32.isNaN(x));
        assertEq(Binary32.add(x, 0x80000000), x, "x + -0 = x");
        if (x != 0x80000000) assertEq(Binary32.add(x, 0), x, "x + +0 = x");
    }

    function testFuzz_add_commutes(uint32 x, uint32 y) public pure {
        assertEq(Binary32.add(x, y), Binary32.add(y, x));
    }

    function testFuzz_mul_commutes(uint32 x, uint32 y) public pure {
        assertEq(Binary32.mul(x, y), Binary32.mul(y, x));
    }

    function testFuzz_sub_isAddOfNeg(uint32 x, uint32 y) public pure {
        vm.assume(!Binary32.isNaN(y));
        assertEq(Binary32.sub(x, y), Binary32.add(x, Binary32.neg(y)));
    }

    function testFuzz_neg_involution(uint32 x) public pure {
        vm.assume(!Binary32.isNaN(x));
        assertEq(Binary32.neg(Binary32.neg(x)), x);
    }

    function testFuzz_mulDiv_oneIsIdentity(uint32 x) public pure {
        vm.assume(!Binary32.isNaN(x));
        assertEq(Binary32.mul(x, 0x3F800000), x, "x * 1");
        assertEq(Binary32.div(x, 0x3F800000), x, "x / 1");
    }

    /// @dev x with at most 12 significant bits and a moderate exponent: x * x is exact and normal,
    ///      so sqrt(x * x) is |x| exactly.
    function testFuzz_sqrt_ofExactSquare(uint32 x) public pure {
        uint32 e = 64 + (x >> 24) % 120; // biased exponent 64..183: x * x normal
        uint32 v = (x & 0x80000000) | (e << 23) | (x & 0x007FF800);
        assertEq(Binary32.sqrt(Binary32.mul(v, v)), Binary32.abs(v));
    }

    function testFuzz_toBinary64_roundTrips(uint32 x) public pure {
        vm.assume(!Binary32.isNaN(x));
        assertEq(_toBinary32(Binary32.toBinary64(x)), x);
    }

    function testFuzz_fromInt_exactBelow2to24(int32 n) public pure {
        int256 v = int256(n) % (1 << 24);
        assertEq(Binary32.toInt(Binary32.fromInt(v), type(int64).min, type(int64).max), v);
    }

    function _toBinary32(uint64 x) internal pure returns (uint32) {
        return Binary64.toBinary32(x);
    }
}
