// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

/// @title GridLib
/// @notice The fixed-point grid of RepOps' exact dot products and sums (docs/repops/linalg.md, "Fixed-point grid"),
///         as the DotReferee and the SumReferee decide it (docs/game.md 2.8 and 2.10): magnitude classes, grid
///         exponents, grid integers and the bisection's split points.
library GridLib {
    /// @notice The magnitude class of NaN and +-inf.
    uint16 internal constant NON_FINITE = 0xFFFF;

    /// @dev The magnitude class of binary32 `x`: 0 for +-0, 150 + e for a finite nonzero value with
    ///      2^(e-1) <= |x| < 2^e (2 .. 278), NON_FINITE for NaN and +-inf. Larger class, larger exponent.
    function key(uint32 x) internal pure returns (uint16) {
        uint32 mag = x & 0x7FFFFFFF;
        if (mag == 0) return 0;
        uint32 biased = mag >> 23;
        if (biased == 0xFF) return NON_FINITE;
        if (biased != 0) return uint16(biased + 24);
        uint16 bits;
        while (mag != 0) {
            mag >>= 1;
            ++bits;
        }
        return bits + 1; // a subnormal f * 2^-149 with f of `bits` bits: e = bits - 148
    }

    /// @dev The grid exponent of a slice whose largest class is `k` (linalg.md: e = 1 for an all-zero slice).
    function exponent(uint16 k) internal pure returns (int256) {
        return k == 0 ? int256(1) : int256(uint256(k)) - 150;
    }

    /// @dev ceil(log2 n) for n >= 1 (at most 256 iterations; n is a tensor size here, below 2^27).
    function ceilLog2(uint256 n) internal pure returns (uint256 c) {
        while ((uint256(1) << c) < n) ++c;
    }

    /// @dev q = RN(x * 2^(p - e)), ties to even (linalg.md, "Fixed-point grid"), for finite `x` of a class at
    ///      most the slice's (so |q| <= 2^p).
    function grid(uint32 x, int256 e, uint256 p) internal pure returns (int256) {
        uint256 mag = x & 0x7FFFFFFF;
        uint256 biased = mag >> 23;
        uint256 m = mag & 0x7FFFFF;
        if (biased == 0) biased = 1;
        else m |= 1 << 23;
        int256 sh = int256(biased) - 150 + int256(p) - e;
        uint256 q = 0; // below a quarter step: 0
        if (sh >= 0) {
            q = m << uint256(sh);
        } else {
            uint256 r = uint256(-sh);
            if (r <= 40) {
                q = m >> r;
                uint256 rem = m & ((1 << r) - 1);
                uint256 half = 1 << (r - 1);
                if (rem > half || (rem == half && q & 1 == 1)) ++q;
            }
        }
        return x >> 31 == 1 ? -int256(q) : int256(q);
    }

    /// @dev The interior points of the range [lo, hi] at arity `arity`: lo + s, lo + 2s, ... below hi, with
    ///      s = ceil((hi - lo) / arity) (fewer than `arity` of them).
    function splitPoints(uint64 lo, uint64 hi, uint64 arity) internal pure returns (uint64[] memory points) {
        if (hi <= lo + 1) return new uint64[](0);
        uint256 w = hi - lo;
        uint256 step = (w + arity - 1) / arity;
        uint256 count = (w + step - 1) / step - 1; // < arity
        points = new uint64[](count);
        for (uint256 m; m < count; ++m) {
            points[m] = uint64(lo + step * (m + 1));
        }
    }
}
