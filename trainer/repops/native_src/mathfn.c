/* RepOps transcendental functions as fused CPU loops: the same operation sequences as the
 * torch-op path of trainer/repops/mathfn.py, one element at a time, giving the same bits.
 * Spec: docs/repops/elementwise.md. Loaded through ctypes by trainer/repops/_native.py,
 * which also builds it: python trainer/repops/_native.py
 *
 * Every function `rt_<fn>_f32(x, out, n)` reads n fp32 values, widens each to binary64
 * (exact), runs the fixed sequence of binary64 operations that mathfn.py runs as torch
 * operations, rounds once to fp32 (RN, subnormals kept, overflow to inf) and writes every NaN
 * as the canonical quiet NaN 0x7FC00000. Each helper below names the Python function it
 * mirrors; the statements follow that function line by line.
 *
 * BUILD FLAGS MATTER FOR THE BITS. This file must be compiled with -ffp-contract=off: the
 * spec uses no fused multiply-add anywhere, `p * r + c` is two roundings, and GCC (and Clang
 * for -march with FMA) would otherwise contract it into one FMA and change the last bits.
 * It must not be compiled with -ffast-math (or -funsafe-math-optimizations, -ffinite-math-only,
 * -freciprocal-math, -fassociative-math): those reorder, reassociate and drop NaN/inf/-0
 * handling. The flags used by _native.py are
 *     -O3 -fPIC -shared -pthread -ffp-contract=off -fno-trapping-math -fno-math-errno [-fopenmp]
 *     [-march=native]
 * -fno-trapping-math (the loops never read the FP exception flags) lets the compiler turn the
 * selections into vector blends; -fno-math-errno lets sqrt be one instruction (the value is
 * IEEE sqrt either way). The rounding mode must be the default (RN) with flush-to-zero and
 * denormals-are-zero off, as the spec requires of every conforming machine.
 */
#if defined(__FAST_MATH__) || defined(__FINITE_MATH_ONLY__) && __FINITE_MATH_ONLY__
#error "mathfn.c must not be compiled with -ffast-math or -ffinite-math-only"
#endif

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* ---- constants of the spec (mathfn.py, same names, same hex digits) ---------------------- */

static const double EXP_LO = -700.0;
static const double EXP_HI = 700.0;
static const double SHIFT = 0x1.8p52;                       /* 1.5 * 2^52 */
static const uint64_t SHIFT_BITS = 0x4338000000000000ull;   /* bits of SHIFT */
static const double INVLN2 = 0x1.71547652b82fep0;
static const double LN2 = 0x1.62e42fefa39efp-1;
static const double NLN2 = -0x1.62e42fefa39efp-1;
static const double EXP_G[8] = {
    0x1.fffffffffddd0p-2, 0x1.555555555395ep-3, 0x1.55555566c5f5fp-5, 0x1.1111111cf4a65p-7,
    0x1.6c16687654889p-10, 0x1.a019aa4b8d4b2p-13, 0x1.a13c5c961953ap-16, 0x1.72cbc42a87f4ep-19,
};

static const double SQRTH = 0x1.6a09e667f3bcdp-1;
static const uint64_t SQRTH_BITS = 0x3FE6A09E667F3BCDull;
static const double LOG_H[5] = {
    0x1.55555555652efp-1, 0x1.999998c85088fp-2, 0x1.249325e779261p-2, 0x1.c679e5956f3b3p-3,
    0x1.8c9e000149afdp-3,
};

static const double ERF_SPLIT = 0.75;
static const double ERF_YMAX = 10.625;
static const double ERF_S[8] = {
    0x1.20dd75042946dp+0, -0x1.812746aea7f01p-2, 0x1.ce2f20b5fc719p-4, -0x1.b82caeacb9445p-6,
    0x1.565607f1c675ep-8, -0x1.bf7c3d8f275aap-11, 0x1.edb7e28907697p-14, -0x1.87b01c2e69041p-17,
};
static const double ERFC_P[7] = {
    0x1.0000037cc608cp+0, 0x1.bb2ab740bc900p+0, 0x1.7634af3cc425fp+0, 0x1.7e5ba632ac4dep-1,
    0x1.f04e8dbe12989p-3, 0x1.87e67031abac2p-5, 0x1.338ee4637e6d1p-8,
};
static const double ERFC_Q[8] = {
    1.0, 0x1.6e04282bf90ecp+1, 0x1.d81b4d4811c2bp+1, 0x1.6694c49394f5bp+1,
    0x1.5db5ef9e2590dp+0, 0x1.bc195d9a0e060p-2, 0x1.5b4fffdfc8469p-4, 0x1.1090faf974b11p-7,
};
/* GELU_S = ERF_S * 0.5 and GELU_P = ERFC_P * 0.5, as in mathfn.py (halving is exact). */
static const double GELU_S[8] = {
    0.5 * 0x1.20dd75042946dp+0, 0.5 * -0x1.812746aea7f01p-2, 0.5 * 0x1.ce2f20b5fc719p-4,
    0.5 * -0x1.b82caeacb9445p-6, 0.5 * 0x1.565607f1c675ep-8, 0.5 * -0x1.bf7c3d8f275aap-11,
    0.5 * 0x1.edb7e28907697p-14, 0.5 * -0x1.87b01c2e69041p-17,
};
static const double GELU_P[7] = {
    0.5 * 0x1.0000037cc608cp+0, 0.5 * 0x1.bb2ab740bc900p+0, 0.5 * 0x1.7634af3cc425fp+0,
    0.5 * 0x1.7e5ba632ac4dep-1, 0.5 * 0x1.f04e8dbe12989p-3, 0.5 * 0x1.87e67031abac2p-5,
    0.5 * 0x1.338ee4637e6d1p-8,
};
static const double GELU_XMIN = -15.0;
static const double TANH_XMAX = 10.0;
static const double GELU_K0 = 0x1.9884533d43651p+0;
static const double GELU_K1 = 0x1.2444f2a4d8b4bp-4;

#define RT_INLINE static inline __attribute__((always_inline))

/* ---- bit helpers --------------------------------------------------------------------------- */

RT_INLINE uint64_t bits64(double d) {
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}

RT_INLINE double from_bits64(uint64_t u) {
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

/* canonicalize_nan_: every NaN becomes the quiet NaN 0x7FC00000, other values pass. */
RT_INLINE float canonical(float y) {
    const uint32_t nan_bits = 0x7FC00000u;
    float nan;
    memcpy(&nan, &nan_bits, sizeof nan);
    return y == y ? y : nan;
}

/* torch.clamp(v, lo, hi) and clamp_(min=)/clamp_(max=): comparisons only, NaN stays NaN. */
RT_INLINE double clamp_min(double v, double lo) { return v < lo ? lo : v; }
RT_INLINE double clamp_max(double v, double hi) { return v > hi ? hi : v; }

/* ---- building blocks (mathfn.py, "tensor building blocks") -------------------------------- */

/* _horner_t: p = r*c[d] + c[d-1], then p = p*r + c for the rest, down to c[0]. */
RT_INLINE double horner(double r, const double *c, int len) {
    double p = r * c[len - 1];
    p = p + c[len - 2];
    for (int i = len - 3; i >= 0; i--) {
        p = p * r;
        p = p + c[i];
    }
    return p;
}

/* _exp_reduce_t: v -> (r, q0 = G(r)*r + 1, t = SHIFT + n). */
struct exp_reduced {
    double r, q0, t;
};

RT_INLINE struct exp_reduced exp_reduce(double v) {
    struct exp_reduced e;
    v = clamp_max(clamp_min(v, EXP_LO), EXP_HI); /* v.clamp(EXP_LO, EXP_HI) */
    double t = v * INVLN2;                       /* t = v * INVLN2 */
    t = t + SHIFT;                               /* t.add_(SHIFT) */
    double r = t - SHIFT;                        /* r = t - SHIFT */
    r = r * NLN2;                                /* r.mul_(NLN2) */
    r = r + v;                                   /*  .add_(v) */
    double q0 = horner(r, EXP_G, 8);             /* q0 = _horner_t(r, EXP_G) */
    q0 = q0 * r;                                 /* q0.mul_(r) */
    q0 = q0 + 1.0;                               /*   .add_(1.0) */
    e.r = r;
    e.q0 = q0;
    e.t = t;
    return e;
}

/* _pow2_t: 2^n from t = SHIFT + n, bits (bits(t) + 1023 - SHIFT_BITS) << 52 (int64, wrapping). */
RT_INLINE double pow2(double t) {
    return from_bits64((bits64(t) + (1023u - SHIFT_BITS)) << 52);
}

/* _exp64_t: p = q0*r + 1, times 2^n. */
RT_INLINE double exp64(double v) {
    struct exp_reduced e = exp_reduce(v);
    double p = e.q0 * e.r; /* p.mul_(r) */
    p = p + 1.0;           /*  .add_(1.0) */
    return p * pow2(e.t);  /* p.mul_(_pow2_t(t)) */
}

/* _erfc_big_t: exp64(-(y*y)) * P(y)/Q(y) for y >= 0; pcoefs is ERFC_P or GELU_P (7 each). */
RT_INLINE double erfc_big(double y, const double *pcoefs) {
    double e = exp64(-(y * y));         /* e = _exp64_t(torch.mul(y, y).neg_()) */
    double num = horner(y, pcoefs, 7);  /* num = _horner_t(y, pcoefs) */
    double den = horner(y, ERFC_Q, 8);  /* den = _horner_t(y, ERFC_Q) */
    num = num / den;                    /* num.div_(den) */
    return num * e;                     /*    .mul_(e) */
}

/* ---- exp (mathfn.exp) --------------------------------------------------------------------- */

void rt_exp_f32(const float *x, float *out, size_t n) {
    for (size_t i = 0; i < n; i++) {
        double y = exp64((double)x[i]);  /* _exp64_t(x.double()) */
        out[i] = canonical((float)y);    /* canonicalize_nan_(... .float()) */
    }
}

/* ---- log (mathfn.log) --------------------------------------------------------------------- */

void rt_log_f32(const float *x, float *out, size_t n) {
    const float inf = INFINITY, nan = canonical(NAN);
    for (size_t i = 0; i < n; i++) {
        float xf = x[i];
        double xd = (double)xf;                             /* xd = x.double() */
        uint64_t b = bits64(xd);                            /* b = xd.view(torch.int64) */
        int64_t k = (int64_t)(b - SQRTH_BITS) >> 52;        /* k = b - SQRTH_BITS; k >>= 52 (floor) */
        double m = from_bits64(b - ((uint64_t)k << 52));    /* m = (b - (k << 52)).view(float64) */
        double f = m - 1.0;                                 /* f = m.sub_(1.0) */
        double s = f / (f + 2.0);                           /* s = f / (f + 2.0) */
        double z = s * s;                                   /* z = s * s */
        double lm = horner(z, LOG_H, 5);                    /* lm = _horner_t(z, LOG_H) */
        lm = lm * z;                                        /* lm.mul_(z) */
        lm = lm + 2.0;                                      /*   .add_(2.0) */
        lm = lm * s;                                        /*   .mul_(s) */
        /* k.double(): for every positive finite fp32 x, -150 <= k <= 128, so going through
         * int32 is exact (AVX2 converts int32, not int64, to double); for other x the value
         * is replaced below, and int64 -> int32 wraps in GCC and Clang (no UB). */
        double kd = (double)(int32_t)k * LN2;               /* k.double().mul_(LN2) */
        float y = (float)(kd + lm);                         /*   .add_(lm).float() */
        /* special inputs (not positive finite): the core's value is replaced */
        float special = xf == 0.0f ? -inf : nan;            /* torch.where(x > 0.0, y, */
        y = xf > 0.0f ? y : special;                        /*   torch.where(x == 0.0, -inf, nan)) */
        y = xf == inf ? inf : y;                            /* masked_fill_(x == inf, inf) */
        out[i] = canonical(y);
    }
}

/* ---- log1p (mathfn.log1p) ----------------------------------------------------------------- */

/* mathfn._log64_t: the log core on a binary64 value, meaningful for positive finite ones (the
 * same steps as rt_log_f32 above, kept in binary64). k fits int32 for every value it sees. */
static double log64_core(double xd) {
    uint64_t b = bits64(xd);
    int64_t k = (int64_t)(b - SQRTH_BITS) >> 52;
    double m = from_bits64(b - ((uint64_t)k << 52));
    double f = m - 1.0;
    double s = f / (f + 2.0);
    double z = s * s;
    double lm = horner(z, LOG_H, 5);
    lm = lm * z;
    lm = lm + 2.0;
    lm = lm * s;
    return (double)(int32_t)k * LN2 + lm;                  /* k.double().mul_(LN2).add_(lm) */
}

void rt_log1p_f32(const float *x, float *out, size_t n) {
    const float inf = INFINITY, nan = canonical(NAN);
    for (size_t i = 0; i < n; i++) {
        float xf = x[i];
        double xd = (double)xf;                             /* xd = x.double() */
        double u = xd + 1.0;                                /* u = xd + 1.0 */
        double core = log64_core(u > 0.0 ? u : 1.0);        /* _log64_t(torch.where(ok, u, 1.0)) */
        double y = core * (xd / (u - 1.0));                 /* core.mul_(xd / (u - 1.0)) */
        y = u == 1.0 ? xd : y;                              /* torch.where(u == 1.0, xd, y) */
        float yf = (float)y;                                /* .float() */
        float special = xf == -1.0f ? -inf : nan;           /* torch.where(x > -1.0, y, */
        yf = xf > -1.0f ? yf : special;                     /*   torch.where(x == -1.0, -inf, nan)) */
        yf = xf == inf ? inf : yf;                          /* masked_fill_(x == inf, inf) */
        out[i] = canonical(yf);
    }
}

/* ---- sqrt and rsqrt (mathfn.sqrt, mathfn.rsqrt) ------------------------------------------- */

/* sqrt: IEEE sqrt in fp32, as numpy's float32 sqrt in _ieee_sqrt (correctly rounded; equal to
 * fp32(sqrt64(x)), the scalar reference, since binary64 has more than 2*24+2 bits). */
void rt_sqrt_f32(const float *x, float *out, size_t n) {
    for (size_t i = 0; i < n; i++) {
        out[i] = canonical(sqrtf(x[i])); /* canonicalize_nan_(_ieee_sqrt(x)) */
    }
}

void rt_rsqrt_f32(const float *x, float *out, size_t n) {
    for (size_t i = 0; i < n; i++) {
        double s = sqrt((double)x[i]);    /* s = _ieee_sqrt(x.double()) */
        out[i] = canonical((float)(1.0 / s)); /* canonicalize_nan_(torch.reciprocal(s).float()) */
    }
}

/* ---- tanh (mathfn.tanh) ------------------------------------------------------------------- */

void rt_tanh_f32(const float *x, float *out, size_t n) {
    for (size_t i = 0; i < n; i++) {
        float xf = x[i];
        double v = clamp_max(clamp_min((double)xf, -TANH_XMAX), TANH_XMAX); /* x.double().clamp_(-XMAX, XMAX) */
        v = v * 2.0;                                     /*   .mul_(2.0) */
        struct exp_reduced e = exp_reduce(v);            /* r, q, t = _exp_reduce_t(v) */
        double q = e.q0 * e.r;                           /* q.mul_(r) */
        double scale = pow2(e.t);                        /* scale = _pow2_t(t) */
        double em1 = q * scale;                          /* em1 = q.mul_(scale) */
        em1 = em1 + (scale - 1.0);                       /* em1.add_(scale.sub_(1.0)) */
        double y = em1 / (em1 + 2.0);                    /* y = em1 / (em1 + 2.0) */
        out[i] = canonical(copysignf((float)y, xf));     /* canonicalize_nan_(copysign(y.float(), x)) */
    }
}

/* ---- sigmoid (mathfn.sigmoid) ------------------------------------------------------------- */

void rt_sigmoid_f32(const float *x, float *out, size_t n) {
    for (size_t i = 0; i < n; i++) {
        double e = exp64(-(double)x[i]);  /* e = _exp64_t(x.double().neg_()) */
        e = e + 1.0;                      /* e.add_(1.0) */
        e = 1.0 / e;                      /*  .reciprocal_() */
        out[i] = canonical((float)e);     /* canonicalize_nan_(... .float()) */
    }
}

/* ---- erf (mathfn.erf) --------------------------------------------------------------------- */

void rt_erf_f32(const float *x, float *out, size_t n) {
    for (size_t i = 0; i < n; i++) {
        double xd = (double)x[i];                              /* xd = x.double() */
        double small = horner(xd * xd, ERF_S, 8) * xd;         /* small = _horner_t(xd * xd, ERF_S).mul_(xd) */
        double y = clamp_max(fabs(xd), ERF_YMAX);              /* y = xd.abs().clamp_(max=ERF_YMAX) */
        double big = copysign(-erfc_big(y, ERFC_P) + 1.0, xd); /* copysign(_erfc_big_t(y, ERFC_P).neg_().add_(1.0), xd) */
        double o = y < ERF_SPLIT ? small : big;                /* out = torch.where(y < ERF_SPLIT, small, big) */
        out[i] = canonical((float)o);                          /* canonicalize_nan_(out.float()) */
    }
}

/* ---- gelu (mathfn.gelu), both forms ------------------------------------------------------- */

/* approximate='none': x * Phi(x) through the halved erf tables. */
void rt_gelu_f32(const float *x, float *out, size_t n) {
    for (size_t i = 0; i < n; i++) {
        double xc = clamp_min((double)x[i], GELU_XMIN);          /* xc = x.double().clamp_(min=GELU_XMIN) */
        double y = xc * SQRTH;                                  /* y = xc * SQRTH */
        double ay = fabs(y);                                    /* ay = y.abs() */
        double small = horner(y * y, GELU_S, 8) * y;            /* small = _horner_t(y * y, GELU_S).mul_(y) */
        small = small + 0.5;                                    /*   .add_(0.5) */
        double c = erfc_big(clamp_max(ay, ERF_YMAX), GELU_P);   /* c = _erfc_big_t(ay.clamp(max=ERF_YMAX), GELU_P) */
        double big = y < 0.0 ? c : 1.0 - c;                     /* big = torch.where(y < 0.0, c, 1.0 - c) */
        double phi = ay < ERF_SPLIT ? small : big;              /* phi = torch.where(ay < ERF_SPLIT, small, big) */
        out[i] = canonical((float)(phi * xc));                  /* canonicalize_nan_(phi.mul_(xc).float()) */
    }
}

/* approximate='tanh': x / (1 + exp64(-(x * (K0 + K1 * x*x)))). */
void rt_gelu_tanh_f32(const float *x, float *out, size_t n) {
    for (size_t i = 0; i < n; i++) {
        double xc = clamp_min((double)x[i], GELU_XMIN); /* xc = x.double().clamp_(min=GELU_XMIN) */
        double a = xc * xc;                             /* a = xc * xc */
        a = a * GELU_K1;                                /* a.mul_(GELU_K1) */
        a = a + GELU_K0;                                /*  .add_(GELU_K0) */
        a = a * xc;                                     /*  .mul_(xc) */
        a = -a;                                         /*  .neg_() */
        double den = exp64(a) + 1.0;                    /* den = _exp64_t(a).add_(1.0) */
        out[i] = canonical((float)(xc / den));          /* canonicalize_nan_(torch.div(xc, den).float()) */
    }
}

/* ---- threads ------------------------------------------------------------------------------- */

/* Every output element depends on its input element only, so splitting a loop over threads
 * cannot change any bit. rt_parallel_f32 runs `loop` (one of the rt_*_f32 above) over n
 * elements cut into `threads` contiguous parts of whole 64-byte lines, on an OpenMP team: torch's
 * own pool, whose threads are already running (see linalg.c's note on threads; one pthread per
 * extra part made a 131k-element exp 12x slower inside a training step). Built without OpenMP,
 * the parts run in turn on the calling thread. */
typedef void (*rt_loop_f32)(const float *x, float *out, size_t n);

#define RT_MAX_THREADS 64

void rt_parallel_f32(rt_loop_f32 loop, const float *x, float *out, size_t n, int threads) {
    if (threads > RT_MAX_THREADS) threads = RT_MAX_THREADS;
    if (threads < 2 || n < 32) {
        loop(x, out, n);
        return;
    }
    size_t per = (n + (size_t)threads - 1) / (size_t)threads;
    per = (per + 15) & ~(size_t)15; /* 16 floats = one 64-byte line */
    int count = (int)((n + per - 1) / per);
#pragma omp parallel for num_threads(count) schedule(static, 1)
    for (int t = 0; t < count; t++) {
        size_t start = (size_t)t * per;
        size_t len = n - start < per ? n - start : per;
        loop(x + start, out + start, len);
    }
}

/* ---- build check ---------------------------------------------------------------------------- */

/* exp64 in binary64, unrounded (mathfn._exp64_t on float64 input): for the tests only. The
 * fp32 results hide a build that contracts a*b+c into FMA (none of 2 million random inputs
 * gave a different fp32 result); this binary64 value shows it at once. */
void rt_exp64_f64(const double *v, double *out, size_t n) {
    for (size_t i = 0; i < n; i++) {
        out[i] = exp64(v[i]);
    }
}
