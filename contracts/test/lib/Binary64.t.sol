// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {Binary64} from "../../src/lib/Binary64.sol";
import {Binary64NotPositiveNormal} from "../../src/lib/FloatErrors.sol";
import {FloatHarness} from "../harness/FloatHarness.sol";
import {FloatVectorTest} from "../utils/FloatVectorTest.sol";
import {FloatVectors} from "../utils/FloatVectors.sol";

/// @notice Binary64 against ieee_binary64.json (Python floats, numpy for the cross-check), bit for
///         bit, the helpers of the transcendental functions' sequences, and exact identities.
contract Binary64Test is FloatVectorTest {
    using FloatVectors for FloatVectors.Group;

    function _file() internal pure override returns (string memory) {
        return "ieee_binary64.json";
    }

    function _gasGroup() internal pure override returns (string memory) {
        return "Binary64Gas";
    }

    function _groups() internal pure override returns (string[] memory names) {
        string[21] memory fixedNames = [
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
            "toBinary32",
            "toInt_i64",
            "toInt_i32",
            "fromInt",
            "ldexp",
            "fromScaledInt",
            "logSplit",
            "pow2OfShifted"
        ];
        names = new string[](fixedNames.length);
        for (uint256 i; i < fixedNames.length; ++i) {
            names[i] = fixedNames[i];
        }
    }

    /// @dev logSplit returns two words (k, m): test_logSplit_vectors_succeeds checks it.
    function _custom(bytes32 name) internal pure override returns (bool) {
        return name == "logSplit";
    }

    function _eval(bytes32 name, uint256 a, uint256 b) internal pure override returns (uint256) {
        uint64 x = uint64(a);
        uint64 y = uint64(b);
        if (name == "add") return Binary64.add(x, y);
        if (name == "sub") return Binary64.sub(x, y);
        if (name == "mul") return Binary64.mul(x, y);
        if (name == "div") return Binary64.div(x, y);
        if (name == "eq") return Binary64.eq(x, y) ? 1 : 0;
        if (name == "lt") return Binary64.lt(x, y) ? 1 : 0;
        if (name == "le") return Binary64.le(x, y) ? 1 : 0;
        if (name == "min") return Binary64.min(x, y);
        if (name == "max") return Binary64.max(x, y);
        if (name == "copysign") return Binary64.copysign(x, y);
        if (name == "sqrt") return Binary64.sqrt(x);
        if (name == "neg") return Binary64.neg(x);
        if (name == "abs") return Binary64.abs(x);
        if (name == "toBinary32") return Binary64.toBinary32(x);
        if (name == "toInt_i64") return _pattern(Binary64.toInt(x, type(int64).min, type(int64).max));
        if (name == "toInt_i32") return _pattern(Binary64.toInt(x, type(int32).min, type(int32).max));
        if (name == "fromInt") return Binary64.fromInt(int64(x));
        if (name == "fromScaledInt") return Binary64.fromScaledInt(int64(uint64(a)), int64(uint64(b)));
        if (name == "ldexp") return Binary64.ldexp(x, int64(y));
        if (name == "pow2OfShifted") return Binary64.pow2OfShifted(x);
        return _noFunction(name);
    }

    function test_logSplit_vectors_succeeds() public view {
        FloatVectors.Group memory g = FloatVectors.find(_json(), "logSplit");
        for (uint256 r; r < g.count; ++r) {
            (uint256 a,, uint256 k, uint256 m) = g.record(r);
            (int256 gotK, uint64 gotM) = Binary64.logSplit(uint64(a));
            assertEq(gotK, int256(int64(uint64(k))), string.concat("k of ", vm.toString(a)));
            assertEq(gotM, m, string.concat("m of ", vm.toString(a)));
        }
        assertGt(g.count, 100, "split cases");
    }

    function test_logSplit_notPositiveNormal_reverts() public {
        FloatHarness h = new FloatHarness();
        uint64[5] memory bad =
            [uint64(0), 0x8000000000000000, 0x000FFFFFFFFFFFFF, 0x7FF0000000000000, 0xBFF0000000000000];
        for (uint256 i; i < bad.length; ++i) {
            vm.expectRevert(abi.encodeWithSelector(Binary64NotPositiveNormal.selector, bad[i]));
            h.logSplit(bad[i]);
        }
    }

    // ---------------------------------------------------------------- named cases

    function test_div_specials_succeeds() public pure {
        uint64 one = 0x3FF0000000000000;
        assertEq(Binary64.div(one, 0), Binary64.INF, "1 / +0 = +inf");
        assertEq(Binary64.div(one, 0x8000000000000000), Binary64.INF | Binary64.SIGN, "1 / -0 = -inf");
        assertEq(Binary64.div(0, 0), Binary64.NAN, "0 / 0");
        assertEq(Binary64.div(Binary64.INF, Binary64.INF), Binary64.NAN, "inf / inf");
        assertEq(Binary64.div(one, Binary64.INF | Binary64.SIGN), 0x8000000000000000, "1 / -inf = -0");
        // The smallest subnormal halved ties to even (+0); times 3/4 it rounds up to itself.
        assertEq(Binary64.div(1, 0x4000000000000000), 0, "min subnormal / 2");
    }

    function test_sqrt_exactAndInexact_succeeds() public pure {
        assertEq(Binary64.sqrt(0x4010000000000000), 0x4000000000000000, "sqrt 4 = 2");
        assertEq(Binary64.sqrt(0x4000000000000000), 0x3FF6A09E667F3BCD, "sqrt 2");
        assertEq(Binary64.sqrt(1), 0x1E60000000000000, "sqrt of the min subnormal = 2^-537");
        assertEq(Binary64.sqrt(Binary64.INF), Binary64.INF, "sqrt inf");
    }

    // ---------------------------------------------------------------- exact identities, fuzzed

    function testFuzz_add_zeroIsIdentity(uint64 x) public pure {
        vm.assume(!Binary64.isNaN(x));
        assertEq(Binary64.add(x, 0x8000000000000000), x, "x + -0 = x");
        if (x != 0x8000000000000000) assertEq(Binary64.add(x, 0), x, "x + +0 = x");
    }

    function testFuzz_add_commutes(uint64 x, uint64 y) public pure {
        assertEq(Binary64.add(x, y), Binary64.add(y, x));
    }

    function testFuzz_mul_commutes(uint64 x, uint64 y) public pure {
        assertEq(Binary64.mul(x, y), Binary64.mul(y, x));
    }

    function testFuzz_neg_involution(uint64 x) public pure {
        vm.assume(!Binary64.isNaN(x));
        assertEq(Binary64.neg(Binary64.neg(x)), x);
    }

    function testFuzz_sqrt_ofExactSquare(uint64 x) public pure {
        uint64 e = 512 + (x >> 52) % 1000; // biased exponent 512..1511: x * x normal
        uint64 v = (x & 0x8000000000000000) | (e << 52) | (x & 0x000FFFFFF8000000); // 26 significant bits
        assertEq(Binary64.sqrt(Binary64.mul(v, v)), Binary64.abs(v));
    }

    function testFuzz_ldexp_roundTripsWhenNormal(uint64 x, int16 n) public pure {
        uint64 e = (x >> 52) & 0x7FF;
        vm.assume(e > 100 && e < 1900);
        int256 k = int256(n) % 90;
        assertEq(Binary64.ldexp(Binary64.ldexp(x, k), -k), x);
    }

    function testFuzz_mulBy2to_nEqualsLdexp(uint64 x, uint8 n) public pure {
        uint64 pow2 = uint64(1023 + uint256(n)) << 52;
        assertEq(Binary64.mul(x, pow2), Binary64.ldexp(x, int256(uint256(n))));
    }
}
