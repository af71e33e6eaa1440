// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {FloatCore} from "./FloatCore.sol";
import {Binary64NotPositiveNormal} from "./FloatErrors.sol";

/// @title Binary64
/// @notice IEEE-754 binary64 on `uint64` bit patterns, as RepOps defines it (docs/repops/ieee.md):
///         every operation rounds once to nearest, ties to even, with subnormals (no flush to
///         zero) and infinities; every NaN result is the canonical quiet NaN `0x7FF8000000000000` whatever
///         the inputs' payloads or signs. Pure functions, no state.
library Binary64 {
    uint256 private constant FRAC = 52;
    uint256 private constant EXP = 11;

    /// @notice The canonical quiet NaN.
    uint64 internal constant NAN = 0x7FF8000000000000;
    /// @notice +infinity.
    uint64 internal constant INF = 0x7FF0000000000000;
    /// @notice The sign bit.
    uint64 internal constant SIGN = 0x8000000000000000;

    /// @notice Whether `x` is a NaN (any payload, either sign).
    function isNaN(uint64 x) internal pure returns (bool) {
        return x & ~SIGN > INF;
    }

    /// @notice RN(x + y).
    function add(uint64 x, uint64 y) internal pure returns (uint64) {
        return uint64(FloatCore.add(x, y, FRAC, EXP));
    }

    /// @notice RN(x - y).
    function sub(uint64 x, uint64 y) internal pure returns (uint64) {
        return uint64(FloatCore.sub(x, y, FRAC, EXP));
    }

    /// @notice RN(x * y).
    function mul(uint64 x, uint64 y) internal pure returns (uint64) {
        return uint64(FloatCore.mul(x, y, FRAC, EXP));
    }

    /// @notice RN(x / y): x / ±0 is ±inf by the signs, 0 / 0 and inf / inf are NaN.
    function div(uint64 x, uint64 y) internal pure returns (uint64) {
        return uint64(FloatCore.div(x, y, FRAC, EXP));
    }

    /// @notice RN(sqrt(x)): sqrt(-0) = -0, sqrt(+inf) = +inf, sqrt of a negative is NaN.
    function sqrt(uint64 x) internal pure returns (uint64) {
        return uint64(FloatCore.sqrt(x, FRAC, EXP));
    }

    /// @notice -x (the sign flipped); a NaN gives the canonical NaN.
    function neg(uint64 x) internal pure returns (uint64) {
        return isNaN(x) ? NAN : x ^ SIGN;
    }

    /// @notice |x| (the sign cleared); a NaN gives the canonical NaN.
    function abs(uint64 x) internal pure returns (uint64) {
        return isNaN(x) ? NAN : x & ~SIGN;
    }

    /// @notice The magnitude of `x` with the sign of `y`: a bit operation (payloads kept).
    function copysign(uint64 x, uint64 y) internal pure returns (uint64) {
        return (x & ~SIGN) | (y & SIGN);
    }

    /// @notice IEEE x == y: NaN is unequal to everything, -0 == +0.
    function eq(uint64 x, uint64 y) internal pure returns (bool) {
        return FloatCore.eq(x, y, FRAC, EXP);
    }

    /// @notice IEEE x < y (false if either is NaN).
    function lt(uint64 x, uint64 y) internal pure returns (bool) {
        return FloatCore.lt(x, y, FRAC, EXP);
    }

    /// @notice IEEE x <= y (false if either is NaN).
    function le(uint64 x, uint64 y) internal pure returns (bool) {
        return FloatCore.le(x, y, FRAC, EXP);
    }

    /// @notice RepOps' max, `x < bound ? bound : x` (the clamp rule): a NaN `x` is kept with its
    ///         bits, a NaN bound is ignored, and of -0 and +0 the first argument wins.
    function max(uint64 x, uint64 bound) internal pure returns (uint64) {
        return lt(x, bound) ? bound : x;
    }

    /// @notice RepOps' min, `x > bound ? bound : x` (the clamp rule), NaN and ±0 as in `max`.
    function min(uint64 x, uint64 bound) internal pure returns (uint64) {
        return lt(bound, x) ? bound : x;
    }

    /// @notice x * 2^n, rounded (exact whenever the result is normal); NaN canonical.
    function ldexp(uint64 x, int256 n) internal pure returns (uint64) {
        return uint64(FloatCore.ldexp(x, n, FRAC, EXP));
    }

    /// @notice RN of the exact integer `n` (one rounding: 2^60 + 2^36 + 1 gives 2^60 + 2^37 in binary32).
    function fromInt(int256 n) internal pure returns (uint64) {
        return uint64(FloatCore.fromInt(n, FRAC, EXP));
    }

    /// @notice RN(s * 2^k) for the exact integer `s`, one rounding: the last step of an exact dot
    ///         product or sum (docs/repops/linalg.md, `f32(S * 2^(e - p))`).
    function fromScaledInt(int256 s, int256 k) internal pure returns (uint64) {
        if (s == 0) return 0; // +0, as linalg.md's rule for S = 0
        // Beyond +-4096 every nonzero s over- or underflows: clamp so the exponent stays small.
        if (k > 4096) k = 4096;
        if (k < -4096) k = -4096;
        uint256 mag = s > 0 ? uint256(s) : s == type(int256).min ? 1 << 255 : uint256(-s);
        return uint64(FloatCore.round(s < 0 ? 1 : 0, k, mag, FRAC, EXP));
    }

    /// @notice `x` truncated toward zero and saturated to [lo, hi] (an integer dtype's range, lo <= 0
    ///         <= hi); NaN gives 0, +inf gives hi, -inf gives lo.
    function toInt(uint64 x, int256 lo, int256 hi) internal pure returns (int256) {
        return FloatCore.toInt(x, lo, hi, FRAC, EXP);
    }

    /// @notice `x` rounded to binary32 (RN, subnormals, overflow to inf); NaN gives 0x7FC00000.
    function toBinary32(uint64 x) internal pure returns (uint32) {
        return uint32(FloatCore.convert(x, FRAC, EXP, 23, 8));
    }

    /// @notice The split of log's argument reduction (docs/repops/elementwise.md, log): for a
    ///         positive normal `x` with pattern b, `k = (b - bits(SQRTH)) >> 52` (arithmetic shift) and
    ///         `m = b - (k << 52)`, so that x = m * 2^k with m in [SQRTH, 2 * SQRTH).
    /// @dev Reverts `Binary64NotPositiveNormal` for anything else (log's specials come first).
    function logSplit(uint64 x) internal pure returns (int256 k, uint64 m) {
        if (x < 0x0010000000000000 || x >= INF) revert Binary64NotPositiveNormal(x);
        k = (int256(uint256(x)) - int256(uint256(SQRTH_BITS))) >> 52;
        m = uint64(uint256(int256(uint256(x)) - (k << 52)));
    }

    /// @notice 2^n from `t = SHIFT + n` (exp64's reduction, SHIFT = 0x1.8p52): the pattern
    ///         `(bits(t) + 1023 - bits(SHIFT)) << 52`, wrapping in 64 bits as the kernels compute it.
    function pow2OfShifted(uint64 t) internal pure returns (uint64) {
        unchecked {
            // The kernels compute this in wrapping int64 arithmetic; uint64 wraps the same way.
            return (t + (1023 - SHIFT_BITS)) << 52;
        }
    }

    /// @notice bits(RN64(sqrt(1/2))), log's split point.
    uint64 internal constant SQRTH_BITS = 0x3FE6A09E667F3BCD;
    /// @notice bits(0x1.8p52), exp64's rounding shift.
    uint64 internal constant SHIFT_BITS = 0x4338000000000000;
}
