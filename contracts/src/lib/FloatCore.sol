// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

/// @title FloatCore
/// @notice The exact arithmetic under `Binary32` and `Binary64` (docs/repops/ieee.md): a finite
///         IEEE-754 value is unpacked to `(-1)^sign * m * 2^e` with integers `m` and `e`, the
///         operation is computed exactly in integers, and the result is rounded once to nearest,
///         ties to even, with subnormals and overflow to infinity.
/// @dev A format is given by `frac` (stored fraction bits: 23 or 52) and `expBits` (8 or 11). The
///      caller handles NaN, infinities and zeros; these functions see finite operands only.
library FloatCore {
    /// @notice Extra bits below the operands that `add`, `div` and `sqrt` keep before rounding.
    uint256 internal constant GUARD = 128;

    // ------------------------------------------------------------------ operations on patterns

    /// @notice The canonical quiet NaN of the format: exponent all ones, top fraction bit only.
    function canonicalNaN(uint256 frac, uint256 expBits) internal pure returns (uint256) {
        return (((1 << expBits) - 1) << frac) | (1 << (frac - 1));
    }

    /// @notice +infinity's pattern.
    function infinity(uint256 frac, uint256 expBits) internal pure returns (uint256) {
        return ((1 << expBits) - 1) << frac;
    }

    /// @notice Whether `x` is a NaN (any payload, either sign).
    function isNaN(uint256 x, uint256 frac, uint256 expBits) internal pure returns (bool) {
        return x & ((1 << (frac + expBits)) - 1) > infinity(frac, expBits);
    }

    /// @notice Whether `x` is ±infinity.
    function isInf(uint256 x, uint256 frac, uint256 expBits) internal pure returns (bool) {
        return x & ((1 << (frac + expBits)) - 1) == infinity(frac, expBits);
    }

    /// @notice RN(x + y); every NaN result canonical.
    function add(uint256 x, uint256 y, uint256 frac, uint256 expBits) internal pure returns (uint256) {
        if (isNaN(x, frac, expBits) || isNaN(y, frac, expBits)) return canonicalNaN(frac, expBits);
        if (isInf(x, frac, expBits)) {
            // inf + (-inf) is invalid; inf + anything else is that inf.
            if (isInf(y, frac, expBits) && x != y) return canonicalNaN(frac, expBits);
            return x;
        }
        if (isInf(y, frac, expBits)) return y;
        uint256 magMask = (1 << (frac + expBits)) - 1;
        // A zero operand: -0 + -0 = -0, +0 + -0 = +0, and x + 0 = x exactly.
        if (x & magMask == 0) return y & magMask == 0 ? x & y : y;
        if (y & magMask == 0) return x;
        return _addFinite(x, y, frac, expBits);
    }

    /// @notice RN(x - y) = RN(x + (-y)), the sign flipped before NaN checks (a NaN stays NaN).
    function sub(uint256 x, uint256 y, uint256 frac, uint256 expBits) internal pure returns (uint256) {
        return add(x, y ^ (1 << (frac + expBits)), frac, expBits);
    }

    /// @notice RN(x * y); every NaN result canonical.
    function mul(uint256 x, uint256 y, uint256 frac, uint256 expBits) internal pure returns (uint256) {
        if (isNaN(x, frac, expBits) || isNaN(y, frac, expBits)) return canonicalNaN(frac, expBits);
        uint256 signShift = frac + expBits;
        uint256 magMask = (1 << signShift) - 1;
        if (isInf(x, frac, expBits) || isInf(y, frac, expBits)) {
            // 0 * inf is invalid; otherwise an infinity with the product's sign.
            if (x & magMask == 0 || y & magMask == 0) return canonicalNaN(frac, expBits);
            return ((x ^ y) & (1 << signShift)) | infinity(frac, expBits);
        }
        return _mulFinite(x, y, frac, expBits);
    }

    /// @notice RN(x / y); every NaN result canonical.
    function div(uint256 x, uint256 y, uint256 frac, uint256 expBits) internal pure returns (uint256) {
        if (isNaN(x, frac, expBits) || isNaN(y, frac, expBits)) return canonicalNaN(frac, expBits);
        uint256 signShift = frac + expBits;
        uint256 magMask = (1 << signShift) - 1;
        uint256 signBit = (x ^ y) & (1 << signShift);
        bool infX = isInf(x, frac, expBits);
        bool infY = isInf(y, frac, expBits);
        if (infX) return infY ? canonicalNaN(frac, expBits) : signBit | infinity(frac, expBits);
        if (infY) return signBit;
        if (y & magMask == 0) {
            return x & magMask == 0 ? canonicalNaN(frac, expBits) : signBit | infinity(frac, expBits);
        }
        if (x & magMask == 0) return signBit;
        return _divFinite(x, y, frac, expBits);
    }

    /// @notice RN(sqrt(x)): sqrt(-0) = -0, sqrt(+inf) = +inf, x < 0 gives the canonical NaN.
    function sqrt(uint256 x, uint256 frac, uint256 expBits) internal pure returns (uint256) {
        if (isNaN(x, frac, expBits)) return canonicalNaN(frac, expBits);
        (uint256 s, int256 e, uint256 m) = unpack(x, frac, expBits);
        if (m == 0) return x;
        if (s == 1) return canonicalNaN(frac, expBits);
        if (isInf(x, frac, expBits)) return x;
        (int256 er, uint256 mr) = sqrtExact(e, m);
        return round(0, er, mr, frac, expBits);
    }

    /// @notice `x` of format (fracA, expA) rounded to format (fracB, expB): exact when widening;
    ///         NaN gives the target's canonical NaN, infinities stay infinities.
    function convert(uint256 x, uint256 fracA, uint256 expA, uint256 fracB, uint256 expB)
        internal
        pure
        returns (uint256)
    {
        if (isNaN(x, fracA, expA)) return canonicalNaN(fracB, expB);
        uint256 sign = x >> (fracA + expA);
        if (isInf(x, fracA, expA)) return (sign << (fracB + expB)) | infinity(fracB, expB);
        (, int256 e, uint256 m) = unpack(x, fracA, expA);
        return round(sign, e, m, fracB, expB);
    }

    /// @notice RN of the integer `n` (no intermediate rounding).
    function fromInt(int256 n, uint256 frac, uint256 expBits) internal pure returns (uint256) {
        if (n >= 0) return round(0, 0, uint256(n), frac, expBits);
        // -type(int256).min does not fit an int256; its magnitude is 2^255.
        uint256 mag = n == type(int256).min ? 1 << 255 : uint256(-n);
        return round(1, 0, mag, frac, expBits);
    }

    /// @notice `x` truncated toward zero and saturated to [lo, hi]; NaN gives 0.
    function toInt(uint256 x, int256 lo, int256 hi, uint256 frac, uint256 expBits)
        internal
        pure
        returns (int256)
    {
        if (isNaN(x, frac, expBits)) return 0;
        uint256 signShift = frac + expBits;
        bool neg = x >> signShift == 1;
        if (isInf(x, frac, expBits)) return neg ? lo : hi;
        (, int256 e, uint256 m) = unpack(x, frac, expBits);
        uint256 t;
        if (e >= 0) {
            // Beyond 2^200 every int type saturates: cap the shift so it cannot overflow.
            t = e > 200 ? 1 << 200 : m << uint256(e);
        } else {
            t = uint256(-e) >= 256 ? 0 : m >> uint256(-e);
        }
        // lo is 0 or a negative int type's minimum (>= -2^255 + 1 for every caller).
        if (neg) return t > uint256(-lo) ? lo : -int256(t);
        return t > uint256(hi) ? hi : int256(t);
    }

    /// @notice A key whose signed order is the IEEE order of non-NaN patterns, ±0 both 0.
    function orderKey(uint256 x, uint256 frac, uint256 expBits) internal pure returns (int256) {
        uint256 signShift = frac + expBits;
        int256 mag = int256(x & ((1 << signShift) - 1));
        return x >> signShift == 1 ? -mag : mag;
    }

    /// @notice IEEE equality: NaN unequal to everything, -0 == +0.
    function eq(uint256 x, uint256 y, uint256 frac, uint256 expBits) internal pure returns (bool) {
        if (isNaN(x, frac, expBits) || isNaN(y, frac, expBits)) return false;
        return orderKey(x, frac, expBits) == orderKey(y, frac, expBits);
    }

    /// @notice IEEE x < y: false when either is NaN.
    function lt(uint256 x, uint256 y, uint256 frac, uint256 expBits) internal pure returns (bool) {
        if (isNaN(x, frac, expBits) || isNaN(y, frac, expBits)) return false;
        return orderKey(x, frac, expBits) < orderKey(y, frac, expBits);
    }

    /// @notice IEEE x <= y: false when either is NaN.
    function le(uint256 x, uint256 y, uint256 frac, uint256 expBits) internal pure returns (bool) {
        if (isNaN(x, frac, expBits) || isNaN(y, frac, expBits)) return false;
        return orderKey(x, frac, expBits) <= orderKey(y, frac, expBits);
    }

    /// @notice x * 2^n rounded (exact when the result is normal); NaN canonical, inf and ±0 kept.
    function ldexp(uint256 x, int256 n, uint256 frac, uint256 expBits) internal pure returns (uint256) {
        if (isNaN(x, frac, expBits)) return canonicalNaN(frac, expBits);
        (uint256 s, int256 e, uint256 m) = unpack(x, frac, expBits);
        if (m == 0 || isInf(x, frac, expBits)) return x;
        // Beyond +-4096 every finite value over- or underflows: clamp so the exponent stays small.
        if (n > 4096) n = 4096;
        if (n < -4096) n = -4096;
        return round(s, e + n, m, frac, expBits);
    }

    // ------------------------------------------------------------------ exact arithmetic

    /// @notice `(sign, e, m)` of a finite pattern `x`: `|x| = m * 2^e`; `m = 0` for ±0.
    function unpack(uint256 x, uint256 frac, uint256 expBits)
        internal
        pure
        returns (uint256 sign, int256 e, uint256 m)
    {
        sign = x >> (frac + expBits);
        uint256 field = (x >> frac) & ((1 << expBits) - 1);
        m = x & ((1 << frac) - 1);
        int256 qmin = _qmin(frac, expBits);
        if (field == 0) return (sign, qmin, m);
        // A normal number: the implicit bit, and its quantum `field - 1` steps above the subnormals'.
        return (sign, qmin + int256(field) - 1, m | (1 << frac));
    }

    /// @notice The pattern of `(-1)^sign * m * 2^e` rounded to nearest, ties to even: subnormal
    ///         results kept, a magnitude that rounds to 2^(emax+1) or above gives infinity.
    /// @dev Uses the encoding identity `bits = ((q - qmin) << frac) + r` for a rounded significand
    ///      `r` with quantum `2^q`: it holds for subnormals (`q = qmin`, `r < 2^frac`), normals, and a
    ///      rounding carry to `r = 2^(frac+1)`, which lands on the next binade's pattern.
    function round(uint256 sign, int256 e, uint256 m, uint256 frac, uint256 expBits)
        internal
        pure
        returns (uint256)
    {
        uint256 signBit = sign << (frac + expBits);
        if (m == 0) return signBit;
        uint256 n = bitLength(m);
        int256 qmin = _qmin(frac, expBits);
        int256 q = e + int256(n) - int256(frac + 1);
        if (q < qmin) q = qmin;
        uint256 r = 0;
        if (q > e) {
            uint256 sh = uint256(q - e);
            if (sh <= n) {
                r = m >> sh;
                uint256 rem = m & ((1 << sh) - 1);
                uint256 half = 1 << (sh - 1);
                if (rem > half || (rem == half && r & 1 == 1)) ++r;
            }
            // sh > n: m < 2^n <= 2^(sh-1), below half the quantum: rounds to zero (r = 0).
        } else {
            // q >= e + n - (frac + 1), so the shift is at most frac + 1 - n: exact.
            r = m << uint256(e - q);
        }
        uint256 inf = ((1 << expBits) - 1) << frac;
        // q - qmin >= 0; below 2^20 for every caller (exponents of products and quotients).
        uint256 bits = (uint256(q - qmin) << frac) + r;
        if (bits >= inf) bits = inf;
        return signBit | bits;
    }

    /// @dev x + y for finite nonzero x, y: exact when the exponents differ by at most GUARD; further
    ///      apart, the smaller operand is below 2^-75 of the larger's last significand bit and only its
    ///      nonzero-ness matters, so it is replaced by one unit GUARD bits below the larger (a sticky
    ///      bit): the rounding sees the same interval and the same side of every midpoint.
    function _addFinite(uint256 x, uint256 y, uint256 frac, uint256 expBits) private pure returns (uint256) {
        {
            // Order by exponent field (monotonic in the unpacked exponent): x gets the larger.
            uint256 magMask = (1 << (frac + expBits)) - 1;
            if ((x & magMask) >> frac < (y & magMask) >> frac) (x, y) = (y, x);
        }
        (uint256 sx, int256 e, uint256 mx) = unpack(x, frac, expBits);
        uint256 sy;
        uint256 my;
        {
            int256 ey;
            (sy, ey, my) = unpack(y, frac, expBits);
            uint256 d = uint256(e - ey);
            if (d > GUARD) {
                mx <<= GUARD;
                my = 1;
                e -= int256(GUARD);
            } else {
                mx <<= d;
                e = ey;
            }
        }
        if (sx == sy) return round(sx, e, mx + my, frac, expBits);
        // An exact zero sum of nonzero operands is +0 in round-to-nearest.
        if (mx == my) return 0;
        if (mx > my) return round(sx, e, mx - my, frac, expBits);
        return round(sy, e, my - mx, frac, expBits);
    }

    /// @dev x * y for finite x, y: the exact product of the significands, rounded once.
    function _mulFinite(uint256 x, uint256 y, uint256 frac, uint256 expBits) private pure returns (uint256) {
        (uint256 sx, int256 ex, uint256 mx) = unpack(x, frac, expBits);
        (uint256 sy, int256 ey, uint256 my) = unpack(y, frac, expBits);
        return round(sx ^ sy, ex + ey, mx * my, frac, expBits);
    }

    /// @dev x / y for finite nonzero x, y: a quotient of at least GUARD - 52 bits with a sticky bit
    ///      below it (set when the division leaves a remainder), rounded once.
    function _divFinite(uint256 x, uint256 y, uint256 frac, uint256 expBits) private pure returns (uint256) {
        (uint256 sx, int256 ex, uint256 mx) = unpack(x, frac, expBits);
        (uint256 sy, int256 ey, uint256 my) = unpack(y, frac, expBits);
        uint256 num = mx << GUARD;
        uint256 m = ((num / my) << 1) | (num % my == 0 ? 0 : 1);
        return round(sx ^ sy, ex - ey - int256(GUARD) - 1, m, frac, expBits);
    }

    /// @notice `sqrt(ma * 2^ea)` unrounded: an integer square root of at least GUARD / 2 bits with
    ///         a sticky bit below it (set when the root is not exact).
    function sqrtExact(int256 ea, uint256 ma) internal pure returns (int256 e, uint256 m) {
        if (ea % 2 != 0) {
            ma <<= 1;
            ea -= 1;
        }
        uint256 n = ma << GUARD;
        uint256 s = isqrt(n);
        m = (s << 1) | (s * s == n ? 0 : 1);
        e = ea / 2 - int256(GUARD / 2) - 1;
    }

    /// @notice floor(sqrt(n)).
    /// @dev Newton's iteration from 2^ceil(bits/2) >= sqrt(n) decreases strictly until it reaches
    ///      floor(sqrt(n)); for the < 2^190 inputs here that takes at most about 8 steps.
    function isqrt(uint256 n) internal pure returns (uint256 x) {
        if (n == 0) return 0;
        x = 1 << ((bitLength(n) + 1) >> 1);
        while (true) {
            uint256 y = (x + n / x) >> 1;
            if (y >= x) return x;
            x = y;
        }
    }

    /// @notice Number of significant bits of `x` (0 for 0).
    function bitLength(uint256 x) internal pure returns (uint256 n) {
        // Binary search over the bit position; each step halves the range.
        if (x >> 128 != 0) {
            x >>= 128;
            n += 128;
        }
        if (x >> 64 != 0) {
            x >>= 64;
            n += 64;
        }
        if (x >> 32 != 0) {
            x >>= 32;
            n += 32;
        }
        if (x >> 16 != 0) {
            x >>= 16;
            n += 16;
        }
        if (x >> 8 != 0) {
            x >>= 8;
            n += 8;
        }
        if (x >> 4 != 0) {
            x >>= 4;
            n += 4;
        }
        if (x >> 2 != 0) {
            x >>= 2;
            n += 2;
        }
        if (x >> 1 != 0) {
            x >>= 1;
            n += 1;
        }
        return n + x;
    }

    /// @notice The exponent of the subnormals' quantum: -149 for binary32, -1074 for binary64.
    function _qmin(uint256 frac, uint256 expBits) private pure returns (int256) {
        return 2 - int256(1 << (expBits - 1)) - int256(frac);
    }
}
