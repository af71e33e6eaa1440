// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {Binary32} from "../../src/lib/Binary32.sol";
import {Binary64} from "../../src/lib/Binary64.sol";

/// @notice exp, log, tanh and sigmoid of docs/repops/elementwise.md written as their fixed binary64
///         sequences, one Binary64 call per step. A test-side check that the libraries hold every
///         operation the sequences use (docs/repops/ieee.md); the element phase bisects a sequence
///         to one step instead of running it whole.
library MathFnSequences {
    using Binary64 for uint64;

    uint64 private constant ONE = 0x3FF0000000000000;
    uint64 private constant TWO = 0x4000000000000000;
    uint64 private constant SHIFT = 0x4338000000000000; // 0x1.8p52
    uint64 private constant INVLN2 = 0x3FF71547652B82FE;
    uint64 private constant NLN2 = 0xBFE62E42FEFA39EF;
    uint64 private constant LN2 = 0x3FE62E42FEFA39EF;
    uint64 private constant EXP_LO = 0xC085E00000000000; // -700
    uint64 private constant EXP_HI = 0x4085E00000000000; // 700
    uint64 private constant TANH_LO = 0xC024000000000000; // -10
    uint64 private constant TANH_HI = 0x4024000000000000; // 10

    function _g() private pure returns (uint64[8] memory) {
        return [
            uint64(0x3FDFFFFFFFFFDDD0),
            0x3FC555555555395E,
            0x3FA55555566C5F5F,
            0x3F81111111CF4A65,
            0x3F56C16687654889,
            0x3F2A019AA4B8D4B2,
            0x3EFA13C5C961953A,
            0x3EC72CBC42A87F4E
        ];
    }

    function _h() private pure returns (uint64[5] memory) {
        return [
            uint64(0x3FE55555555652EF),
            0x3FD999998C85088F,
            0x3FD249325E779261,
            0x3FCC679E5956F3B3,
            0x3FC8C9E000149AFD
        ];
    }

    /// @dev exp64's reduction of a non-NaN v: (r, q0 = G(r) * r + 1, t = SHIFT + n).
    function _reduce(uint64 v) private pure returns (uint64 r, uint64 q0, uint64 t) {
        v = v.max(EXP_LO).min(EXP_HI);
        t = v.mul(INVLN2).add(SHIFT);
        uint64 nf = t.sub(SHIFT);
        r = nf.mul(NLN2).add(v);
        uint64[8] memory g = _g();
        uint64 p = g[7];
        for (uint256 i = 7; i > 0; --i) {
            p = p.mul(r).add(g[i - 1]);
        }
        q0 = p.mul(r).add(ONE);
    }

    /// @dev exp64(v) = (q0 * r + 1) * 2^n, 2^n from t's bits.
    function exp64(uint64 v) internal pure returns (uint64) {
        (uint64 r, uint64 q0, uint64 t) = _reduce(v);
        return q0.mul(r).add(ONE).mul(Binary64.pow2OfShifted(t));
    }

    function exp(uint32 x) internal pure returns (uint32) {
        if (Binary32.isNaN(x)) return Binary32.NAN;
        return exp64(Binary32.toBinary64(x)).toBinary32();
    }

    function sigmoid(uint32 x) internal pure returns (uint32) {
        if (Binary32.isNaN(x)) return Binary32.NAN;
        return ONE.div(ONE.add(exp64(Binary32.toBinary64(x).neg()))).toBinary32();
    }

    function tanh(uint32 x) internal pure returns (uint32) {
        if (Binary32.isNaN(x)) return Binary32.NAN;
        uint64 xd = Binary32.toBinary64(x);
        uint64 v = TWO.mul(xd.max(TANH_LO).min(TANH_HI));
        (uint64 r, uint64 q0, uint64 t) = _reduce(v);
        uint64 q = q0.mul(r);
        uint64 s = Binary64.pow2OfShifted(t);
        uint64 em1 = s.mul(q).add(s.sub(ONE));
        return em1.div(em1.add(TWO)).copysign(xd).toBinary32();
    }

    function log(uint32 x) internal pure returns (uint32) {
        if (Binary32.isNaN(x) || x > Binary32.SIGN) return Binary32.NAN; // NaN, x < 0
        if (x & ~Binary32.SIGN == 0) return 0xFF800000; // log(+-0) = -inf
        if (x == Binary32.INF) return Binary32.INF;
        (int256 k, uint64 m) = Binary64.logSplit(Binary32.toBinary64(x));
        uint64 f = m.sub(ONE);
        uint64 s = f.div(f.add(TWO));
        uint64 z = s.mul(s);
        uint64[5] memory h = _h();
        uint64 p = h[4];
        for (uint256 i = 4; i > 0; --i) {
            p = p.mul(z).add(h[i - 1]);
        }
        uint64 lm = p.mul(z).add(TWO).mul(s);
        return Binary64.fromInt(k).mul(LN2).add(lm).toBinary32();
    }
}
