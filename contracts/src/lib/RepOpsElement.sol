// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {Binary32} from "./Binary32.sol";
import {Binary64} from "./Binary64.sol";
import {ElementArgTooWide, ElementPowExponent, ElementUnknownOp} from "./FloatErrors.sol";

/// @title RepOpsElement
/// @notice One output element of an elementwise fp32 RepOps operator, computed from its input
///         elements' bit patterns exactly as the Python kernels (trainer/repops/elementwise.py,
///         docs/repops/elementwise.md) compute it: the building block of the game's element phase.
/// @dev Arguments are bit patterns in the low bits of `a`, `b`, `c`: fp32 elements as 32-bit
///      patterns, binary64 and int64 as 64-bit patterns (two's complement), bools as 0 or 1, and a
///      Python scalar argument (alpha, a clamp bound, a threshold, pow's exponent) as the binary64
///      pattern of the Python float, which the operator rounds to fp32 where the kernel does. A
///      Tensor-Scalar operand (`mul(x, 0.9)`, `lt(x, 0.5)`) is passed as `scalarToF32(bits)`.
///      The result is the output element's pattern (bool 0 or 1, an integer dtype's two's
///      complement pattern of its width). The table of codes is in docs/repops/ieee.md.
library RepOpsElement {
    uint256 internal constant ADD = 0; // (a, b)
    uint256 internal constant ADD_ALPHA = 1; // (a, b, alpha64): RN32(a + RN32(f32(alpha) * b))
    uint256 internal constant SUB = 2; // (a, b)
    uint256 internal constant SUB_ALPHA = 3; // (a, b, alpha64)
    uint256 internal constant MUL = 4; // (a, b)
    uint256 internal constant DIV = 5; // (a, b)
    uint256 internal constant NEG = 6; // (a)
    uint256 internal constant RECIPROCAL = 7; // (a)
    uint256 internal constant SQRT = 8; // (a)
    uint256 internal constant RSQRT = 9; // (a): f32(1.0 / sqrt64(f64(a)))
    uint256 internal constant ABS = 10; // (a)
    uint256 internal constant POW = 11; // (a, exponent64)
    uint256 internal constant RELU = 12; // (a)
    uint256 internal constant WHERE = 13; // (cond, a, b)
    uint256 internal constant CLAMP = 14; // (x, min64, max64)
    uint256 internal constant CLAMP_MIN = 15; // (x, min64)
    uint256 internal constant CLAMP_MAX = 16; // (x, max64)
    uint256 internal constant THRESHOLD_BACKWARD = 17; // (grad, x, threshold64)
    uint256 internal constant EQ = 18; // (a, b) -> bool
    uint256 internal constant NE = 19;
    uint256 internal constant LT = 20;
    uint256 internal constant LE = 21;
    uint256 internal constant GT = 22;
    uint256 internal constant GE = 23;
    uint256 internal constant F32_TO_F64 = 24; // (a) -> binary64
    uint256 internal constant F64_TO_F32 = 25; // (a64)
    uint256 internal constant I64_TO_F32 = 26; // (int64 pattern)
    uint256 internal constant BOOL_TO_F32 = 27; // (bool)
    uint256 internal constant F32_TO_I64 = 28; // (a) -> int64 pattern
    uint256 internal constant F32_TO_I32 = 29; // -> int32 pattern
    uint256 internal constant F32_TO_I16 = 30; // -> int16 pattern
    uint256 internal constant F32_TO_I8 = 31; // -> int8 pattern
    uint256 internal constant F32_TO_U8 = 32; // -> uint8
    uint256 internal constant F32_TO_BOOL = 33; // (a) -> bool
    /// @notice Number of operator codes (codes are 0 .. OP_COUNT - 1).
    uint256 internal constant OP_COUNT = 34;

    uint32 private constant ONE = 0x3F800000;
    uint64 private constant ONE64 = 0x3FF0000000000000;

    /// @notice The output element of operator `op` on arguments `a`, `b`, `c` (unused ones ignored).
    /// @dev Reverts `ElementUnknownOp`, `ElementArgTooWide` (an argument wider than its pattern) or
    ///      `ElementPowExponent` (an exponent pow does not define).
    function evaluate(uint256 op, uint256 a, uint256 b, uint256 c) internal pure returns (uint256) {
        if (op <= POW) return _arith(op, a, b, c);
        if (op <= THRESHOLD_BACKWARD) return _select(op, a, b, c);
        if (op <= GE) return _compare(op, a, b);
        if (op < OP_COUNT) return _convert(op, a);
        revert ElementUnknownOp(op);
    }

    /// @notice A Python float scalar operand (binary64 pattern) as the fp32 operand the kernel uses.
    function scalarToF32(uint64 scalar) internal pure returns (uint32) {
        return Binary64.toBinary32(scalar);
    }

    function _arith(uint256 op, uint256 a, uint256 b, uint256 c) private pure returns (uint256) {
        uint32 x = _f32(0, a);
        if (op == ADD) return Binary32.add(x, _f32(1, b));
        if (op == ADD_ALPHA) return Binary32.add(x, Binary32.mul(_scalar32(2, c), _f32(1, b)));
        if (op == SUB) return Binary32.sub(x, _f32(1, b));
        if (op == SUB_ALPHA) return Binary32.sub(x, Binary32.mul(_scalar32(2, c), _f32(1, b)));
        if (op == MUL) return Binary32.mul(x, _f32(1, b));
        if (op == DIV) return Binary32.div(x, _f32(1, b));
        if (op == NEG) return Binary32.neg(x);
        if (op == RECIPROCAL) return Binary32.div(ONE, x);
        if (op == SQRT) return Binary32.sqrt(x);
        if (op == RSQRT) return _rsqrt(x);
        if (op == ABS) return Binary32.abs(x);
        return _pow(x, _f64(1, b));
    }

    function _select(uint256 op, uint256 a, uint256 b, uint256 c) private pure returns (uint256) {
        if (op == RELU) {
            uint32 x = _f32(0, a);
            return Binary32.le(x, 0) ? 0 : x;
        }
        if (op == WHERE) return _bool(0, a) ? _f32(1, b) : _f32(2, c);
        if (op == THRESHOLD_BACKWARD) {
            uint32 g = _f32(0, a);
            return Binary32.le(_f32(1, b), _scalar32(2, c)) ? 0 : g;
        }
        // clamp: y = x; if y < min: y = min; if y > max: y = max (bounds rounded to fp32).
        uint32 y = _f32(0, a);
        if (op != CLAMP_MAX) y = Binary32.max(y, _scalar32(1, b));
        if (op == CLAMP) y = Binary32.min(y, _scalar32(2, c));
        if (op == CLAMP_MAX) y = Binary32.min(y, _scalar32(1, b));
        return y;
    }

    function _compare(uint256 op, uint256 a, uint256 b) private pure returns (uint256) {
        uint32 x = _f32(0, a);
        uint32 y = _f32(1, b);
        bool r;
        if (op == EQ) r = Binary32.eq(x, y);
        else if (op == NE) r = !Binary32.eq(x, y);
        else if (op == LT) r = Binary32.lt(x, y);
        else if (op == LE) r = Binary32.le(x, y);
        else if (op == GT) r = Binary32.lt(y, x);
        else r = Binary32.le(y, x);
        return r ? 1 : 0;
    }

    function _convert(uint256 op, uint256 a) private pure returns (uint256) {
        if (op == F32_TO_F64) return Binary32.toBinary64(_f32(0, a));
        if (op == F64_TO_F32) return Binary64.toBinary32(_f64(0, a));
        if (op == I64_TO_F32) return Binary32.fromInt(int64(_f64(0, a)));
        if (op == BOOL_TO_F32) return _bool(0, a) ? ONE : 0;
        uint32 x = _f32(0, a);
        if (op == F32_TO_BOOL) return x & ~Binary32.SIGN == 0 ? 0 : 1; // x != 0; NaN is true
        if (op == F32_TO_I64) return _pattern(Binary32.toInt(x, type(int64).min, type(int64).max), 64);
        if (op == F32_TO_I32) return _pattern(Binary32.toInt(x, type(int32).min, type(int32).max), 32);
        if (op == F32_TO_I16) return _pattern(Binary32.toInt(x, type(int16).min, type(int16).max), 16);
        if (op == F32_TO_I8) return _pattern(Binary32.toInt(x, type(int8).min, type(int8).max), 8);
        return uint256(Binary32.toInt(x, 0, 255));
    }

    /// @dev pow for the exponents RepOps defines (docs/repops/elementwise.md, Arithmetic).
    function _pow(uint32 x, uint64 e) private pure returns (uint32) {
        if (e == 0 || e == 0x8000000000000000) return ONE; // 0 and -0: 1 for every input, NaN too
        if (e == ONE64) return Binary32.isNaN(x) ? Binary32.NAN : x;
        if (e == 0x4000000000000000) return Binary32.mul(x, x); // 2
        if (e == 0x4008000000000000) return Binary32.mul(Binary32.mul(x, x), x); // 3
        if (e == 0xBFF0000000000000) return Binary32.div(ONE, x); // -1
        if (e == 0xC000000000000000) return Binary32.div(ONE, Binary32.mul(x, x)); // -2
        if (e == 0x3FE0000000000000) return Binary32.sqrt(x); // 0.5
        if (e == 0xBFE0000000000000) return _rsqrt(x); // -0.5
        revert ElementPowExponent(e);
    }

    /// @dev rsqrt(x) = f32(1.0 / sqrt64(f64(x))): one binary64 sqrt, one division, one rounding.
    function _rsqrt(uint32 x) private pure returns (uint32) {
        return Binary64.toBinary32(Binary64.div(ONE64, Binary64.sqrt(Binary32.toBinary64(x))));
    }

    function _f32(uint256 index, uint256 v) private pure returns (uint32) {
        if (v > type(uint32).max) revert ElementArgTooWide(index, v, 32);
        return uint32(v);
    }

    function _f64(uint256 index, uint256 v) private pure returns (uint64) {
        if (v > type(uint64).max) revert ElementArgTooWide(index, v, 64);
        return uint64(v);
    }

    function _scalar32(uint256 index, uint256 v) private pure returns (uint32) {
        return Binary64.toBinary32(_f64(index, v));
    }

    function _bool(uint256 index, uint256 v) private pure returns (bool) {
        if (v > 1) revert ElementArgTooWide(index, v, 1);
        return v == 1;
    }

    /// @dev The two's complement pattern of `v` in `bits` bits.
    function _pattern(int256 v, uint256 bits) private pure returns (uint256) {
        return uint256(v) & ((1 << bits) - 1);
    }
}
