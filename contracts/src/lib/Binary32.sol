// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {FloatCore} from "./FloatCore.sol";

/// @title Binary32
/// @notice IEEE-754 binary32 on `uint32` bit patterns, as RepOps defines it (docs/repops/ieee.md):
///         every operation rounds once to nearest, ties to even, with subnormals (no flush to
///         zero) and infinities; every NaN result is the canonical quiet NaN `0x7FC00000` whatever
///         the inputs' payloads or signs. Pure functions, no state.
library Binary32 {
    uint256 private constant FRAC = 23;
    uint256 private constant EXP = 8;

    /// @notice The canonical quiet NaN.
    uint32 internal constant NAN = 0x7FC00000;
    /// @notice +infinity.
    uint32 internal constant INF = 0x7F800000;
    /// @notice The sign bit.
    uint32 internal constant SIGN = 0x80000000;

    /// @notice Whether `x` is a NaN (any payload, either sign).
    function isNaN(uint32 x) internal pure returns (bool) {
        return x & ~SIGN > INF;
    }

    /// @notice RN(x + y).
    function add(uint32 x, uint32 y) internal pure returns (uint32) {
        return uint32(FloatCore.add(x, y, FRAC, EXP));
    }

    /// @notice RN(x - y).
    function sub(uint32 x, uint32 y) internal pure returns (uint32) {
        return uint32(FloatCore.sub(x, y, FRAC, EXP));
    }

    /// @notice RN(x * y).
    function mul(uint32 x, uint32 y) internal pure returns (uint32) {
        return uint32(FloatCore.mul(x, y, FRAC, EXP));
    }

    /// @notice RN(x / y): x / ±0 is ±inf by the signs, 0 / 0 and inf / inf are NaN.
    function div(uint32 x, uint32 y) internal pure returns (uint32) {
        return uint32(FloatCore.div(x, y, FRAC, EXP));
    }

    /// @notice RN(sqrt(x)): sqrt(-0) = -0, sqrt(+inf) = +inf, sqrt of a negative is NaN.
    function sqrt(uint32 x) internal pure returns (uint32) {
        return uint32(FloatCore.sqrt(x, FRAC, EXP));
    }

    /// @notice -x (the sign flipped); a NaN gives the canonical NaN.
    function neg(uint32 x) internal pure returns (uint32) {
        return isNaN(x) ? NAN : x ^ SIGN;
    }

    /// @notice |x| (the sign cleared); a NaN gives the canonical NaN.
    function abs(uint32 x) internal pure returns (uint32) {
        return isNaN(x) ? NAN : x & ~SIGN;
    }

    /// @notice The magnitude of `x` with the sign of `y`: a bit operation (payloads kept).
    function copysign(uint32 x, uint32 y) internal pure returns (uint32) {
        return (x & ~SIGN) | (y & SIGN);
    }

    /// @notice IEEE x == y: NaN is unequal to everything, -0 == +0.
    function eq(uint32 x, uint32 y) internal pure returns (bool) {
        return FloatCore.eq(x, y, FRAC, EXP);
    }

    /// @notice IEEE x < y (false if either is NaN).
    function lt(uint32 x, uint32 y) internal pure returns (bool) {
        return FloatCore.lt(x, y, FRAC, EXP);
    }

    /// @notice IEEE x <= y (false if either is NaN).
    function le(uint32 x, uint32 y) internal pure returns (bool) {
        return FloatCore.le(x, y, FRAC, EXP);
    }

    /// @notice RepOps' max, `x < bound ? bound : x` (the clamp rule): a NaN `x` is kept with its
    ///         bits, a NaN bound is ignored, and of -0 and +0 the first argument wins.
    function max(uint32 x, uint32 bound) internal pure returns (uint32) {
        return lt(x, bound) ? bound : x;
    }

    /// @notice RepOps' min, `x > bound ? bound : x` (the clamp rule), NaN and ±0 as in `max`.
    function min(uint32 x, uint32 bound) internal pure returns (uint32) {
        return lt(bound, x) ? bound : x;
    }

    /// @notice x * 2^n, rounded (exact whenever the result is normal); NaN canonical.
    function ldexp(uint32 x, int256 n) internal pure returns (uint32) {
        return uint32(FloatCore.ldexp(x, n, FRAC, EXP));
    }

    /// @notice RN of the exact integer `n` (one rounding: 2^60 + 2^36 + 1 gives 2^60 + 2^37 in binary32).
    function fromInt(int256 n) internal pure returns (uint32) {
        return uint32(FloatCore.fromInt(n, FRAC, EXP));
    }

    /// @notice RN(s * 2^k) for the exact integer `s`, one rounding: the last step of an exact dot
    ///         product or sum (docs/repops/linalg.md, `f32(S * 2^(e - p))`).
    function fromScaledInt(int256 s, int256 k) internal pure returns (uint32) {
        if (s == 0) return 0; // +0, as linalg.md's rule for S = 0
        // Beyond +-4096 every nonzero s over- or underflows: clamp so the exponent stays small.
        if (k > 4096) k = 4096;
        if (k < -4096) k = -4096;
        uint256 mag = s > 0 ? uint256(s) : s == type(int256).min ? 1 << 255 : uint256(-s);
        return uint32(FloatCore.round(s < 0 ? 1 : 0, k, mag, FRAC, EXP));
    }

    /// @notice `x` truncated toward zero and saturated to [lo, hi] (an integer dtype's range, lo <= 0
    ///         <= hi); NaN gives 0, +inf gives hi, -inf gives lo.
    function toInt(uint32 x, int256 lo, int256 hi) internal pure returns (int256) {
        return FloatCore.toInt(x, lo, hi, FRAC, EXP);
    }

    /// @notice `x` widened to binary64 (exact); a NaN gives the binary64 canonical NaN.
    function toBinary64(uint32 x) internal pure returns (uint64) {
        return uint64(FloatCore.convert(x, FRAC, EXP, 52, 11));
    }
}
