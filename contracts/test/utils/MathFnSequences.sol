// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {Binary32} from "../../src/lib/Binary32.sol";
import {Binary64} from "../../src/lib/Binary64.sol";

/// @notice exp, log, tanh, sigmoid, erf and GELU (both forms) of docs/repops/elementwise.md written as their fixed binary64
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
    uint64 private constant HALF = 0x3FE0000000000000;
    uint64 private constant ERF_SPLIT = 0x3FE8000000000000; // 0.75
    uint64 private constant ERF_YMAX = 0x4025400000000000; // 10.625
    uint64 private constant SQRTH = 0x3FE6A09E667F3BCD;
    uint64 private constant GELU_XMIN = 0xC02E000000000000; // -15
    uint64 private constant GELU_K0 = 0x3FF9884533D43651;
    uint64 private constant GELU_K1 = 0x3FB2444F2A4D8B4B;

    function _s() private pure returns (uint64[] memory c) {
        c = new uint64[](8);
        (c[0], c[1], c[2], c[3]) =
        (0x3FF20DD75042946D, 0xBFD812746AEA7F01, 0x3FBCE2F20B5FC719, 0xBF9B82CAEACB9445);
        (c[4], c[5], c[6], c[7]) =
        (0x3F7565607F1C675E, 0xBF4BF7C3D8F275AA, 0x3F1EDB7E28907697, 0xBEE87B01C2E69041);
    }

    function _p() private pure returns (uint64[] memory c) {
        c = new uint64[](7);
        (c[0], c[1], c[2], c[3]) =
        (0x3FF0000037CC608C, 0x3FFBB2AB740BC900, 0x3FF7634AF3CC425F, 0x3FE7E5BA632AC4DE);
        (c[4], c[5], c[6]) = (0x3FCF04E8DBE12989, 0x3FA87E67031ABAC2, 0x3F7338EE4637E6D1);
    }

    function _q() private pure returns (uint64[] memory c) {
        c = new uint64[](8);
        (c[0], c[1], c[2], c[3]) =
        (0x3FF0000000000000, 0x4006E04282BF90EC, 0x400D81B4D4811C2B, 0x4006694C49394F5B);
        (c[4], c[5], c[6], c[7]) =
        (0x3FF5DB5EF9E2590D, 0x3FDBC195D9A0E060, 0x3FB5B4FFFDFC8469, 0x3F81090FAF974B11);
    }

    /// @dev The constants halved (exact: all are normal), GELU's `Sk/2`, `Pk/2`.
    function _halved(uint64[] memory c) private pure returns (uint64[] memory) {
        for (uint256 i; i < c.length; ++i) {
            c[i] = c[i].ldexp(-1);
        }
        return c;
    }

    /// @dev horner(r; c0..cd): p = cd; p = p * r + c(d-1); ...; p = p * r + c0.
    function _horner(uint64 r, uint64[] memory c) private pure returns (uint64 p) {
        p = c[c.length - 1];
        for (uint256 i = c.length - 1; i > 0; --i) {
            p = p.mul(r).add(c[i - 1]);
        }
    }

    /// @dev erfc_big(y) = horner(y; P) / horner(y; Q) * exp64(-(y * y)).
    function _erfcBig(uint64 y, uint64[] memory p) private pure returns (uint64) {
        return _horner(y, p).div(_horner(y, _q())).mul(exp64(y.mul(y).neg()));
    }

    function erf(uint32 x) internal pure returns (uint32) {
        if (Binary32.isNaN(x)) return Binary32.NAN;
        uint64 xd = Binary32.toBinary64(x);
        if (xd.abs().lt(ERF_SPLIT)) return xd.mul(_horner(xd.mul(xd), _s())).toBinary32();
        uint64 y = xd.abs().min(ERF_YMAX);
        return ONE.sub(_erfcBig(y, _p())).copysign(xd).toBinary32();
    }

    function gelu(uint32 x) internal pure returns (uint32) {
        if (Binary32.isNaN(x)) return Binary32.NAN;
        uint64 xc = Binary32.toBinary64(x).max(GELU_XMIN);
        uint64 y = xc.mul(SQRTH);
        uint64 phi;
        if (y.abs().lt(ERF_SPLIT)) {
            phi = y.mul(_horner(y.mul(y), _halved(_s()))).add(HALF);
        } else {
            uint64 c = _erfcBig(y.abs().min(ERF_YMAX), _halved(_p()));
            phi = y.lt(0) ? c : ONE.sub(c);
        }
        return xc.mul(phi).toBinary32();
    }

    function geluTanh(uint32 x) internal pure returns (uint32) {
        if (Binary32.isNaN(x)) return Binary32.NAN;
        uint64 xc = Binary32.toBinary64(x).max(GELU_XMIN);
        uint64 a = xc.mul(xc).mul(GELU_K1).add(GELU_K0).mul(xc);
        return xc.div(ONE.add(exp64(a.neg()))).toBinary32();
    }

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
