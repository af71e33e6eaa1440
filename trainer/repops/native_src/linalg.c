/* RepOps exact matrix products: the quantizer and the combine as fused native passes.
 * Spec: docs/repops/linalg.md ("Fixed-point grid", "Matrix products", "Engines").
 * Loaded through ctypes by trainer/repops/_native.py, which also builds it.
 *
 * A *line* is one slice of the grid: a row of A, a column of B. Every quantizer reads a tensor
 * of `nb` batches x `nr` lines x `nl` values, element (b, r, l) at x[b*sb + r*sr + l*sl] (in
 * elements), and makes one pass over it per line block: the line maxima from the bits, the
 * grid from the maxima's exponents, the rounding to the grid, the output written in the layout
 * the GEMM reads. Two memory orders are vectorized: lines contiguous (sl == 1, a row of a
 * row-major A) and lines side by side (sr == 1, the columns of a row-major B); anything else
 * takes the portable loop, as does every tail.
 *
 * Every value goes through the same IEEE operations in every path (portable C, AVX2, AVX-512):
 *   m     = max over the line of |x| as the integer bits & 0x7fffffff (NaN and inf are the
 *           largest patterns, so m >= 0x7f800000 marks a non-finite line);
 *   E     = biased exponent field of binary64(m); 0 for a zero or non-finite line;
 *   f64:  c = binary64 with exponent E + 53 - p and fraction bit 2^51; q = (f64(x) + c) - c
 *         (= q * 2^(e-p), the grid trick), written as binary64;
 *   int8: inv = 2^(p - e) (exponent p + 2045 - E, E of 1.0 for a zero or non-finite line);
 *         t = f64(x) * inv (exact); q = (t + 1.5*2^52) - 1.5*2^52 (RNE to an integer, exact
 *         for |t| < 2^51); lo = ((q + 128) & 255) - 128, hi = (q - lo) >> 8, written as int8.
 * A non-finite line is written as zeros and flagged; the combine turns its results into NaN.
 * Powers of two come from bit patterns, never from pow/ldexp. No step is a fused multiply-add,
 * so -ffp-contract=off changes nothing here, but the file is built with it like mathfn.c;
 * -ffast-math must never be used (it would drop the NaN handling and may reassociate).
 *
 * Combines: f64 engine out = f32(S) + 0 (one RN conversion, -0 becomes +0); int8 engine
 * S = T0 + 2^8 T1 + 2^16 T2 in binary64 (every partial sum an integer below 2^53: exact), times
 * 2^(e_i - p), times 2^(e'_j - p) (both exact), then f32(.) + 0. A flagged row or column: the
 * canonical NaN 0x7fc00000.
 *
 * Threads: a call splits its lines (or output rows) into contiguous blocks, one per thread;
 * each line's values depend on that line alone, so the split changes no bit.
 */
#if defined(__FAST_MATH__) || defined(__FINITE_MATH_ONLY__) && __FINITE_MATH_ONLY__
#error "linalg.c must not be compiled with -ffast-math or -ffinite-math-only"
#endif

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define RT_X86 1
#include <immintrin.h>
#define RT_AVX2 __attribute__((target("avx2,fma")))
#define RT_AVX512 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl")))
#else
#define RT_X86 0
#endif

#define RT_VERSION 3
#define MAX_THREADS 64
#define ABS_MASK 0x7fffffffu
#define NONFINITE 0x7f800000u
#define CANON_NAN 0x7fc00000u

enum { ISA_PORTABLE = 0, ISA_AVX2 = 1, ISA_AVX512 = 2 };

int rt_linalg_version(void) { return RT_VERSION; }

/* Whether this CPU (and this build) can run the given instruction path. */
int rt_linalg_isa_supported(int isa) {
    if (isa == ISA_PORTABLE) return 1;
#if RT_X86
    __builtin_cpu_init();
    if (isa == ISA_AVX2) return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    if (isa == ISA_AVX512)
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
#endif
    return 0;
}

/* ---- scalar helpers: the definition every path follows ----------------------------------- */

static inline uint32_t f32_bits(float x) {
    uint32_t u;
    memcpy(&u, &x, 4);
    return u;
}
static inline float f32_from(uint32_t u) {
    float x;
    memcpy(&x, &u, 4);
    return x;
}
static inline double f64_from(uint64_t u) {
    double x;
    memcpy(&x, &u, 8);
    return x;
}
static inline uint64_t f64_bits(double x) {
    uint64_t u;
    memcpy(&u, &x, 8);
    return u;
}

/* Biased binary64 exponent field E of the line maximum (bits of |m| as fp32); 0 if m is 0 or
 * not finite. */
static inline uint64_t max_exponent(uint32_t mbits) {
    if (mbits >= NONFINITE) return 0;
    double m = (double)f32_from(mbits); /* exact widening, subnormals included */
    return (f64_bits(m) >> 52) & 0x7ff;
}

static inline double grid_magic(uint64_t e_field, int p) {
    return f64_from(((e_field + 53 - (uint64_t)p) << 52) | (1ull << 51));
}

/* int8 engine scales for the line: 2^(p - e) and 2^(e - p); a zero or non-finite line gets
 * the grid of m = 1.0 (any finite grid gives its zeros). */
static inline void int8_scales(uint32_t mbits, int p, double *inv, double *ulp) {
    uint64_t e = max_exponent(mbits);
    if (e == 0) e = 1023;
    *inv = f64_from((uint64_t)(p + 2045 - (int64_t)e) << 52);
    *ulp = f64_from((uint64_t)((int64_t)e + 1 - p) << 52);
}

static const double RNE_MAGIC = 6755399441055744.0; /* 1.5 * 2^52 */

static inline double quant_f64(float x, double c) { return ((double)x + c) - c; }

static inline int32_t quant_int(float x, double inv) {
    double t = (double)x * inv;
    return (int32_t)((t + RNE_MAGIC) - RNE_MAGIC);
}

static inline void split2(int32_t q, int8_t *lo, int8_t *hi) {
    int32_t l = ((q + 128) & 255) - 128;
    *lo = (int8_t)l;
    *hi = (int8_t)((q - l) >> 8);
}

/* ---- the quantizer job -------------------------------------------------------------------- */

typedef struct {
    const float *x;
    int64_t nb, nr, nl, sb, sr, sl;
    int p;
    int mode;        /* 0: f64 grid values, 1: int8 slices, 2: exact line sums of the f64 grid values */
    double *of;      /* mode 0 output */
    int8_t *olo;     /* mode 1 outputs */
    int8_t *ohi;
    int8_t *olo2;    /* mode 1: optional second copies (same strides), NULL for none */
    int8_t *ohi2;
    int64_t osb, osr, osl;
    uint8_t *bad;    /* nb * nr flags */
    double *ulp;     /* mode 1: nb * nr scales 2^(e - p); mode 2: nb * nr sums */
    int64_t r0, r1;  /* this job's lines */
    int isa;
    double *cbuf;    /* scratch: per-line c or inv, (r1 - r0) */
    uint32_t *mbuf;  /* scratch: per-line max bits, (r1 - r0) */
} qjob;

static inline void store_one(const qjob *j, int64_t ob, int64_t r, int64_t l, float x, double c) {
    if (j->mode == 2) { /* ob is the batch index times nr here */
        j->ulp[ob + r] += quant_f64(x, c);
        return;
    }
    int64_t o = ob + r * j->osr + l * j->osl;
    if (j->mode == 0) {
        j->of[o] = quant_f64(x, c);
    } else {
        split2(quant_int(x, c), &j->olo[o], &j->ohi[o]);
        if (j->olo2) {
            j->olo2[o] = j->olo[o];
            j->ohi2[o] = j->ohi[o];
        }
    }
}

/* The per-line constant: c (mode 0) or inv (mode 1), and the flags and scales. */
static void line_constants(const qjob *j, int64_t b) {
    for (int64_t r = j->r0; r < j->r1; r++) {
        uint32_t m = j->mbuf[r - j->r0];
        int64_t idx = b * j->nr + r;
        j->bad[idx] = m >= NONFINITE;
        if (j->mode == 2) j->ulp[idx] = 0.0;
        if (j->mode != 1) {
            j->cbuf[r - j->r0] = grid_magic(max_exponent(m), j->p);
        } else {
            double inv, ulp;
            int8_scales(m, j->p, &inv, &ulp);
            j->cbuf[r - j->r0] = inv;
            j->ulp[idx] = ulp;
        }
    }
}

static void zero_line(const qjob *j, int64_t ob, int64_t r) {
    if (j->mode == 2) return; /* its sum stays 0 */
    for (int64_t l = 0; l < j->nl; l++) store_one(j, ob, r, l, 0.0f, j->mode == 0 ? 1.0 : 1.0);
}

/* Portable, lines side by side (sr == 1): sweep the memory rows, as the vector loops do. */
static void quant_portable_cols(qjob *j) {
    int64_t n = j->r1 - j->r0;
    for (int64_t b = 0; b < j->nb; b++) {
        const float *xb = j->x + b * j->sb + j->r0;
        int64_t ob = b * j->osb;
        memset(j->mbuf, 0, (size_t)n * sizeof(uint32_t));
        for (int64_t l = 0; l < j->nl; l++) {
            const float *row = xb + l * j->sl;
            for (int64_t r = 0; r < n; r++) {
                uint32_t u = f32_bits(row[r]) & ABS_MASK;
                j->mbuf[r] = u > j->mbuf[r] ? u : j->mbuf[r];
            }
        }
        line_constants(j, b);
        for (int64_t l = 0; l < j->nl; l++) {
            const float *row = xb + l * j->sl;
            for (int64_t r = 0; r < n; r++) {
                float x = j->mbuf[r] >= NONFINITE ? 0.0f : row[r];
                store_one(j, ob, j->r0 + r, l, x, j->cbuf[r]);
            }
        }
    }
}

/* Portable: any strides. */
static void quant_portable(qjob *j) {
    if (j->sr == 1 && j->sl != 1) {
        quant_portable_cols(j);
        return;
    }
    for (int64_t b = 0; b < j->nb; b++) {
        const float *xb = j->x + b * j->sb;
        int64_t ob = b * j->osb;
        for (int64_t r = j->r0; r < j->r1; r++) {
            uint32_t m = 0;
            for (int64_t l = 0; l < j->nl; l++) {
                uint32_t u = f32_bits(xb[r * j->sr + l * j->sl]) & ABS_MASK;
                m = u > m ? u : m;
            }
            j->mbuf[r - j->r0] = m;
        }
        line_constants(j, b);
        for (int64_t r = j->r0; r < j->r1; r++) {
            if (j->mbuf[r - j->r0] >= NONFINITE) {
                zero_line(j, ob, r);
                continue;
            }
            double c = j->cbuf[r - j->r0];
            for (int64_t l = 0; l < j->nl; l++) store_one(j, ob, r, l, xb[r * j->sr + l * j->sl], c);
        }
    }
}

#if RT_X86
/* ---- AVX2 ---------------------------------------------------------------------------------- */

RT_AVX2 static inline void avx2_store8(const qjob *j, int64_t o, int64_t step, __m256 v, __m256d c0, __m256d c1) {
    /* 8 consecutive values (along the vector axis); output element k at o + k * step */
    __m256d d0 = _mm256_cvtps_pd(_mm256_castps256_ps128(v));
    __m256d d1 = _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1));
    if (j->mode == 0) {
        d0 = _mm256_sub_pd(_mm256_add_pd(d0, c0), c0);
        d1 = _mm256_sub_pd(_mm256_add_pd(d1, c1), c1);
        if (step == 1) {
            _mm256_storeu_pd(j->of + o, d0);
            _mm256_storeu_pd(j->of + o + 4, d1);
        } else {
            double t[8];
            _mm256_storeu_pd(t, d0);
            _mm256_storeu_pd(t + 4, d1);
            for (int k = 0; k < 8; k++) j->of[o + k * step] = t[k];
        }
        return;
    }
    const __m256d magic = _mm256_set1_pd(RNE_MAGIC);
    d0 = _mm256_sub_pd(_mm256_add_pd(_mm256_mul_pd(d0, c0), magic), magic);
    d1 = _mm256_sub_pd(_mm256_add_pd(_mm256_mul_pd(d1, c1), magic), magic);
    __m256i q = _mm256_set_m128i(_mm256_cvtpd_epi32(d1), _mm256_cvtpd_epi32(d0));
    const __m256i k128 = _mm256_set1_epi32(128), k255 = _mm256_set1_epi32(255);
    __m256i lo = _mm256_sub_epi32(_mm256_and_si256(_mm256_add_epi32(q, k128), k255), k128);
    __m256i hi = _mm256_srai_epi32(_mm256_sub_epi32(q, lo), 8);
    int32_t tl[8], th[8];
    _mm256_storeu_si256((__m256i *)tl, lo);
    _mm256_storeu_si256((__m256i *)th, hi);
    for (int k = 0; k < 8; k++) {
        j->olo[o + k * step] = (int8_t)tl[k];
        j->ohi[o + k * step] = (int8_t)th[k];
    }
    if (j->olo2) {
        for (int k = 0; k < 8; k++) {
            j->olo2[o + k * step] = (int8_t)tl[k];
            j->ohi2[o + k * step] = (int8_t)th[k];
        }
    }
}

RT_AVX2 static inline __m256i avx2_absbits(const float *p) {
    return _mm256_and_si256(_mm256_loadu_si256((const __m256i *)p), _mm256_set1_epi32((int)ABS_MASK));
}

RT_AVX2 static inline uint32_t hmax8(__m256i v) {
    __m128i m = _mm_max_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    m = _mm_max_epi32(m, _mm_shuffle_epi32(m, 0x4e));
    m = _mm_max_epi32(m, _mm_shuffle_epi32(m, 0xb1));
    return (uint32_t)_mm_cvtsi128_si32(m);
}

/* lines contiguous: sl == 1 */
RT_AVX2 static void quant_avx2_rows(qjob *j) {
    for (int64_t b = 0; b < j->nb; b++) {
        const float *xb = j->x + b * j->sb;
        int64_t ob = b * j->osb;
        for (int64_t r = j->r0; r < j->r1; r++) {
            const float *line = xb + r * j->sr;
            __m256i vm = _mm256_setzero_si256();
            int64_t l = 0;
            for (; l + 8 <= j->nl; l += 8) vm = _mm256_max_epi32(vm, avx2_absbits(line + l));
            uint32_t m = hmax8(vm);
            for (; l < j->nl; l++) {
                uint32_t u = f32_bits(line[l]) & ABS_MASK;
                m = u > m ? u : m;
            }
            j->mbuf[r - j->r0] = m;
        }
        line_constants(j, b);
        for (int64_t r = j->r0; r < j->r1; r++) {
            if (j->mbuf[r - j->r0] >= NONFINITE) {
                zero_line(j, ob, r);
                continue;
            }
            const float *line = xb + r * j->sr;
            double c = j->cbuf[r - j->r0];
            __m256d vc = _mm256_set1_pd(c);
            int64_t l = 0;
            for (; l + 8 <= j->nl; l += 8)
                avx2_store8(j, ob + r * j->osr + l * j->osl, j->osl, _mm256_loadu_ps(line + l), vc, vc);
            for (; l < j->nl; l++) store_one(j, ob, r, l, line[l], c);
        }
    }
}

/* lines side by side: sr == 1 (line r's value l at x[l*sl + r]) */
RT_AVX2 static void quant_avx2_cols(qjob *j) {
    int64_t n = j->r1 - j->r0;
    for (int64_t b = 0; b < j->nb; b++) {
        const float *xb = j->x + b * j->sb + j->r0;
        int64_t ob = b * j->osb;
        memset(j->mbuf, 0, (size_t)n * sizeof(uint32_t));
        for (int64_t l = 0; l < j->nl; l++) {
            const float *row = xb + l * j->sl;
            int64_t r = 0;
            for (; r + 8 <= n; r += 8) {
                __m256i cur = _mm256_loadu_si256((const __m256i *)(j->mbuf + r));
                _mm256_storeu_si256((__m256i *)(j->mbuf + r), _mm256_max_epi32(cur, avx2_absbits(row + r)));
            }
            for (; r < n; r++) {
                uint32_t u = f32_bits(row[r]) & ABS_MASK;
                j->mbuf[r] = u > j->mbuf[r] ? u : j->mbuf[r];
            }
        }
        line_constants(j, b);
        int any_bad = 0;
        for (int64_t r = 0; r < n; r++) any_bad |= j->mbuf[r] >= NONFINITE;
        for (int64_t l = 0; l < j->nl; l++) {
            const float *row = xb + l * j->sl;
            int64_t r = 0;
            for (; r + 8 <= n; r += 8) {
                __m256 v = _mm256_loadu_ps(row + r);
                if (any_bad) { /* zero the values of non-finite lines */
                    __m256i ok = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)NONFINITE),
                                                    _mm256_loadu_si256((const __m256i *)(j->mbuf + r)));
                    v = _mm256_and_ps(v, _mm256_castsi256_ps(ok));
                }
                avx2_store8(j, ob + (j->r0 + r) * j->osr + l * j->osl, j->osr, v, _mm256_loadu_pd(j->cbuf + r),
                            _mm256_loadu_pd(j->cbuf + r + 4));
            }
            for (; r < n; r++) {
                float x = j->mbuf[r] >= NONFINITE ? 0.0f : row[r];
                store_one(j, ob, j->r0 + r, l, x, j->cbuf[r]);
            }
        }
    }
}

/* ---- AVX-512 ------------------------------------------------------------------------------- */

RT_AVX512 static inline void avx512_store16(const qjob *j, int64_t o, int64_t step, __m512 v, __m512d c0,
                                            __m512d c1) {
    __m512d d0 = _mm512_cvtps_pd(_mm512_castps512_ps256(v));
    __m512d d1 = _mm512_cvtps_pd(_mm512_extractf32x8_ps(v, 1));
    if (j->mode == 0) {
        d0 = _mm512_sub_pd(_mm512_add_pd(d0, c0), c0);
        d1 = _mm512_sub_pd(_mm512_add_pd(d1, c1), c1);
        if (step == 1) {
            _mm512_storeu_pd(j->of + o, d0);
            _mm512_storeu_pd(j->of + o + 8, d1);
        } else {
            double t[16];
            _mm512_storeu_pd(t, d0);
            _mm512_storeu_pd(t + 8, d1);
            for (int k = 0; k < 16; k++) j->of[o + k * step] = t[k];
        }
        return;
    }
    const __m512d magic = _mm512_set1_pd(RNE_MAGIC);
    d0 = _mm512_sub_pd(_mm512_add_pd(_mm512_mul_pd(d0, c0), magic), magic);
    d1 = _mm512_sub_pd(_mm512_add_pd(_mm512_mul_pd(d1, c1), magic), magic);
    __m512i q = _mm512_inserti64x4(_mm512_castsi256_si512(_mm512_cvtpd_epi32(d0)), _mm512_cvtpd_epi32(d1), 1);
    const __m512i k128 = _mm512_set1_epi32(128), k255 = _mm512_set1_epi32(255);
    __m512i lo = _mm512_sub_epi32(_mm512_and_si512(_mm512_add_epi32(q, k128), k255), k128);
    __m512i hi = _mm512_srai_epi32(_mm512_sub_epi32(q, lo), 8);
    if (step == 1) {
        __m128i l8 = _mm512_cvtepi32_epi8(lo), h8 = _mm512_cvtepi32_epi8(hi);
        _mm_storeu_si128((__m128i *)(j->olo + o), l8);
        _mm_storeu_si128((__m128i *)(j->ohi + o), h8);
        if (j->olo2) {
            _mm_storeu_si128((__m128i *)(j->olo2 + o), l8);
            _mm_storeu_si128((__m128i *)(j->ohi2 + o), h8);
        }
    } else {
        int32_t tl[16], th[16];
        _mm512_storeu_si512(tl, lo);
        _mm512_storeu_si512(th, hi);
        for (int k = 0; k < 16; k++) {
            j->olo[o + k * step] = (int8_t)tl[k];
            j->ohi[o + k * step] = (int8_t)th[k];
            if (j->olo2) {
                j->olo2[o + k * step] = (int8_t)tl[k];
                j->ohi2[o + k * step] = (int8_t)th[k];
            }
        }
    }
}

RT_AVX512 static inline __m512i avx512_absbits(const float *p) {
    return _mm512_and_si512(_mm512_loadu_si512(p), _mm512_set1_epi32((int)ABS_MASK));
}

RT_AVX512 static void quant_avx512_rows(qjob *j) {
    for (int64_t b = 0; b < j->nb; b++) {
        const float *xb = j->x + b * j->sb;
        int64_t ob = b * j->osb;
        for (int64_t r = j->r0; r < j->r1; r++) {
            const float *line = xb + r * j->sr;
            __m512i vm = _mm512_setzero_si512();
            int64_t l = 0;
            for (; l + 16 <= j->nl; l += 16) vm = _mm512_max_epi32(vm, avx512_absbits(line + l));
            uint32_t m = (uint32_t)_mm512_reduce_max_epi32(vm);
            for (; l < j->nl; l++) {
                uint32_t u = f32_bits(line[l]) & ABS_MASK;
                m = u > m ? u : m;
            }
            j->mbuf[r - j->r0] = m;
        }
        line_constants(j, b);
        for (int64_t r = j->r0; r < j->r1; r++) {
            if (j->mbuf[r - j->r0] >= NONFINITE) {
                zero_line(j, ob, r);
                continue;
            }
            const float *line = xb + r * j->sr;
            double c = j->cbuf[r - j->r0];
            __m512d vc = _mm512_set1_pd(c);
            int64_t l = 0;
            for (; l + 16 <= j->nl; l += 16)
                avx512_store16(j, ob + r * j->osr + l * j->osl, j->osl, _mm512_loadu_ps(line + l), vc, vc);
            for (; l < j->nl; l++) store_one(j, ob, r, l, line[l], c);
        }
    }
}

RT_AVX512 static void quant_avx512_cols(qjob *j) {
    int64_t n = j->r1 - j->r0;
    for (int64_t b = 0; b < j->nb; b++) {
        const float *xb = j->x + b * j->sb + j->r0;
        int64_t ob = b * j->osb;
        memset(j->mbuf, 0, (size_t)n * sizeof(uint32_t));
        for (int64_t l = 0; l < j->nl; l++) {
            const float *row = xb + l * j->sl;
            int64_t r = 0;
            for (; r + 16 <= n; r += 16) {
                __m512i cur = _mm512_loadu_si512(j->mbuf + r);
                _mm512_storeu_si512(j->mbuf + r, _mm512_max_epi32(cur, avx512_absbits(row + r)));
            }
            for (; r < n; r++) {
                uint32_t u = f32_bits(row[r]) & ABS_MASK;
                j->mbuf[r] = u > j->mbuf[r] ? u : j->mbuf[r];
            }
        }
        line_constants(j, b);
        int any_bad = 0;
        for (int64_t r = 0; r < n; r++) any_bad |= j->mbuf[r] >= NONFINITE;
        for (int64_t l = 0; l < j->nl; l++) {
            const float *row = xb + l * j->sl;
            int64_t r = 0;
            for (; r + 16 <= n; r += 16) {
                __m512 v = _mm512_loadu_ps(row + r);
                if (any_bad) {
                    __mmask16 ok = _mm512_cmplt_epu32_mask(_mm512_loadu_si512(j->mbuf + r),
                                                           _mm512_set1_epi32((int)NONFINITE));
                    v = _mm512_maskz_mov_ps(ok, v);
                }
                avx512_store16(j, ob + (j->r0 + r) * j->osr + l * j->osl, j->osr, v, _mm512_loadu_pd(j->cbuf + r),
                               _mm512_loadu_pd(j->cbuf + r + 8));
            }
            for (; r < n; r++) {
                float x = j->mbuf[r] >= NONFINITE ? 0.0f : row[r];
                store_one(j, ob, j->r0 + r, l, x, j->cbuf[r]);
            }
        }
    }
}
#endif /* RT_X86 */

/* ---- exact sums (mode 2) ---------------------------------------------------------------------
 * Each line's sum of its grid values q * 2^(e - p): with p = p_sum(L) every partial sum, in any
 * order, is an integer multiple of 2^(e - p) below 2^53 of it, so each addition is exact and the
 * sum does not depend on the order or on the vector width. */

static void sum_portable(qjob *j) {
    /* reuse the quantizer loops: store_one accumulates in mode 2 (ob = b * nr) */
    j->osb = j->nr;
    if (j->sr == 1 && j->sl != 1) quant_portable_cols(j);
    else quant_portable(j);
}

#if RT_X86
RT_AVX2 static void sum_avx2(qjob *j) {
    if (j->sl != 1 && j->sr != 1) {
        sum_portable(j);
        return;
    }
    int64_t n = j->r1 - j->r0;
    for (int64_t b = 0; b < j->nb; b++) {
        const float *xb = j->x + b * j->sb;
        double *sums = j->ulp + b * j->nr;
        if (j->sl == 1) { /* lines contiguous */
            for (int64_t r = j->r0; r < j->r1; r++) {
                const float *line = xb + r * j->sr;
                __m256i vm = _mm256_setzero_si256();
                int64_t l = 0;
                for (; l + 8 <= j->nl; l += 8) vm = _mm256_max_epi32(vm, avx2_absbits(line + l));
                uint32_t m = hmax8(vm);
                for (; l < j->nl; l++) {
                    uint32_t u = f32_bits(line[l]) & ABS_MASK;
                    m = u > m ? u : m;
                }
                j->bad[b * j->nr + r] = m >= NONFINITE;
                sums[r] = 0.0;
                if (m >= NONFINITE) continue;
                double c = grid_magic(max_exponent(m), j->p);
                __m256d vc = _mm256_set1_pd(c), acc0 = _mm256_setzero_pd(), acc1 = _mm256_setzero_pd();
                for (l = 0; l + 8 <= j->nl; l += 8) {
                    __m256 v = _mm256_loadu_ps(line + l);
                    __m256d d0 = _mm256_cvtps_pd(_mm256_castps256_ps128(v));
                    __m256d d1 = _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1));
                    acc0 = _mm256_add_pd(acc0, _mm256_sub_pd(_mm256_add_pd(d0, vc), vc));
                    acc1 = _mm256_add_pd(acc1, _mm256_sub_pd(_mm256_add_pd(d1, vc), vc));
                }
                double t[4];
                _mm256_storeu_pd(t, _mm256_add_pd(acc0, acc1));
                double sum = (t[0] + t[1]) + (t[2] + t[3]);
                for (; l < j->nl; l++) sum += quant_f64(line[l], c);
                sums[r] = sum;
            }
        } else { /* lines side by side */
            const float *xr = xb + j->r0;
            memset(j->mbuf, 0, (size_t)n * sizeof(uint32_t));
            for (int64_t l = 0; l < j->nl; l++) {
                const float *row = xr + l * j->sl;
                int64_t r = 0;
                for (; r + 8 <= n; r += 8) {
                    __m256i cur = _mm256_loadu_si256((const __m256i *)(j->mbuf + r));
                    _mm256_storeu_si256((__m256i *)(j->mbuf + r), _mm256_max_epi32(cur, avx2_absbits(row + r)));
                }
                for (; r < n; r++) {
                    uint32_t u = f32_bits(row[r]) & ABS_MASK;
                    j->mbuf[r] = u > j->mbuf[r] ? u : j->mbuf[r];
                }
            }
            for (int64_t r = 0; r < n; r++) {
                uint32_t m = j->mbuf[r];
                j->bad[b * j->nr + j->r0 + r] = m >= NONFINITE;
                j->cbuf[r] = grid_magic(max_exponent(m), j->p);
                sums[j->r0 + r] = 0.0;
            }
            double *acc = sums + j->r0;
            for (int64_t l = 0; l < j->nl; l++) {
                const float *row = xr + l * j->sl;
                int64_t r = 0;
                for (; r + 8 <= n; r += 8) {
                    __m256 v = _mm256_loadu_ps(row + r);
                    __m256i ok = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)NONFINITE),
                                                    _mm256_loadu_si256((const __m256i *)(j->mbuf + r)));
                    v = _mm256_and_ps(v, _mm256_castsi256_ps(ok));
                    __m256d d0 = _mm256_cvtps_pd(_mm256_castps256_ps128(v));
                    __m256d d1 = _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1));
                    __m256d c0 = _mm256_loadu_pd(j->cbuf + r), c1 = _mm256_loadu_pd(j->cbuf + r + 4);
                    _mm256_storeu_pd(acc + r, _mm256_add_pd(_mm256_loadu_pd(acc + r), _mm256_sub_pd(_mm256_add_pd(d0, c0), c0)));
                    _mm256_storeu_pd(acc + r + 4,
                                     _mm256_add_pd(_mm256_loadu_pd(acc + r + 4), _mm256_sub_pd(_mm256_add_pd(d1, c1), c1)));
                }
                for (; r < n; r++) {
                    float x = j->mbuf[r] >= NONFINITE ? 0.0f : row[r];
                    acc[r] += quant_f64(x, j->cbuf[r]);
                }
            }
        }
    }
}
#endif

static void quant_run(qjob *j) {
    if (j->mode == 2) {
#if RT_X86
        if (j->isa >= ISA_AVX2) { sum_avx2(j); return; }  /* AVX-512 machines run the AVX2 sums */
#endif
        sum_portable(j);
        return;
    }
#if RT_X86
    if (j->isa == ISA_AVX512 && j->sl == 1) { quant_avx512_rows(j); return; }
    if (j->isa == ISA_AVX512 && j->sr == 1) { quant_avx512_cols(j); return; }
    if (j->isa == ISA_AVX2 && j->sl == 1) { quant_avx2_rows(j); return; }
    if (j->isa == ISA_AVX2 && j->sr == 1) { quant_avx2_cols(j); return; }
#endif
    quant_portable(j);
}

/* ---- threads --------------------------------------------------------------------------------
 * The jobs run on an OpenMP team (built with -fopenmp; _native.py loads torch first, so this
 * library binds to the libgomp.so.1 torch has loaded and the team is torch's own pool). Inside a
 * training step torch's threads spin between its ops, so a thread of our own (this file used one
 * pthread per extra job) waited for a core: in the character transformer's step the exact
 * products and sums took 10-30% longer that way. A build without OpenMP runs the jobs in turn
 * on the calling thread (the pragma is ignored): same bits, one core. */

typedef void (*job_fn)(void *job);

static void run_jobs(job_fn fn, void *jobs, size_t size, int threads) {
    if (threads < 2) {
        fn(jobs);
        return;
    }
#pragma omp parallel for num_threads(threads) schedule(static, 1)
    for (int t = 0; t < threads; t++) fn((char *)jobs + (size_t)t * size);
}

static void quant_job(void *arg) { quant_run((qjob *)arg); }

/* Returns the number of flagged (non-finite) lines, or -1 on bad arguments / no memory. */
static int64_t quantize(const qjob *proto, int threads) {
    if (proto->nb < 0 || proto->nr < 0 || proto->nl < 0 || proto->p < 0 || proto->p > 50) return -1;
    if (proto->isa < 0 || proto->isa > 2 || !rt_linalg_isa_supported(proto->isa)) return -1;
    if (threads < 1) threads = 1;
    if (threads > MAX_THREADS) threads = MAX_THREADS;
    /* at least 256k values per thread (measured slower below that at 256^3 and 512^3 when each
     * job started a pthread; kept with the OpenMP team), at least 16 lines */
    int64_t total = proto->nb * proto->nr * proto->nl;
    int64_t by_work = total / (1 << 18);
    if (by_work < threads) threads = by_work < 1 ? 1 : (int)by_work;
    if (proto->nr / 16 < threads) threads = proto->nr / 16 < 1 ? 1 : (int)(proto->nr / 16);
    qjob jobs[MAX_THREADS];
    void *scratch = NULL;
    int64_t nr = proto->nr;
    scratch = malloc((size_t)(nr + 16 * MAX_THREADS + 16) * (sizeof(double) + sizeof(uint32_t)));
    if (!scratch) return -1;
    double *cb = (double *)scratch;
    uint32_t *mb = (uint32_t *)(cb + nr + 8 * MAX_THREADS + 8);
    int64_t off = 0;
    for (int t = 0; t < threads; t++) {
        jobs[t] = *proto;
        jobs[t].r0 = nr * t / threads;
        jobs[t].r1 = nr * (t + 1) / threads;
        jobs[t].cbuf = cb + off + 8 * t;
        jobs[t].mbuf = mb + off + 8 * t;
        off += jobs[t].r1 - jobs[t].r0;
    }
    run_jobs(quant_job, jobs, sizeof(qjob), threads);
    free(scratch);
    int64_t bad = 0;
    for (int64_t i = 0; i < proto->nb * proto->nr; i++) bad += proto->bad[i];
    return bad;
}

int64_t rt_quant_f64(const float *x, int64_t nb, int64_t nr, int64_t nl, int64_t sb, int64_t sr, int64_t sl, int p,
                     double *out, int64_t osb, int64_t osr, int64_t osl, uint8_t *bad, int isa, int threads) {
    qjob j;
    memset(&j, 0, sizeof j);
    j.x = x; j.nb = nb; j.nr = nr; j.nl = nl; j.sb = sb; j.sr = sr; j.sl = sl; j.p = p;
    j.mode = 0; j.of = out; j.osb = osb; j.osr = osr; j.osl = osl; j.bad = bad; j.isa = isa;
    return quantize(&j, threads);
}

/* Exact sums of the lines' grid values (p <= 50): sums[b*nr + r], flags like the quantizers. */
int64_t rt_gridsum_f64(const float *x, int64_t nb, int64_t nr, int64_t nl, int64_t sb, int64_t sr, int64_t sl, int p,
                       double *sums, uint8_t *bad, int isa, int threads) {
    qjob j;
    memset(&j, 0, sizeof j);
    j.x = x; j.nb = nb; j.nr = nr; j.nl = nl; j.sb = sb; j.sr = sr; j.sl = sl; j.p = p;
    j.mode = 2; j.ulp = sums; j.bad = bad; j.isa = isa;
    return quantize(&j, threads);
}

/* lo2 and hi2 (both or neither NULL): second copies of the slices at the same strides, for
 * the wide layout of the batched int8 product, W_B = [[lo, hi, 0], [0, lo, hi]] (2K x 3N). */
int64_t rt_quant_int8x2(const float *x, int64_t nb, int64_t nr, int64_t nl, int64_t sb, int64_t sr, int64_t sl,
                        int p, int8_t *lo, int8_t *hi, int8_t *lo2, int8_t *hi2, int64_t osb, int64_t osr,
                        int64_t osl, uint8_t *bad, double *ulp, int isa, int threads) {
    if (p < 7 || p > 14) return -1; /* two slices: hi in [-2^(p-8), 2^(p-8)] must fit int8 */
    if ((lo2 == NULL) != (hi2 == NULL)) return -1;
    qjob j;
    memset(&j, 0, sizeof j);
    j.x = x; j.nb = nb; j.nr = nr; j.nl = nl; j.sb = sb; j.sr = sr; j.sl = sl; j.p = p;
    j.mode = 1; j.olo = lo; j.ohi = hi; j.olo2 = lo2; j.ohi2 = hi2;
    j.osb = osb; j.osr = osr; j.osl = osl; j.bad = bad; j.ulp = ulp;
    j.isa = isa;
    return quantize(&j, threads);
}

/* ---- combines ------------------------------------------------------------------------------- */

typedef struct {
    int mode; /* 0: f64 S, 1: int32 T0, T1, T2 */
    const double *s;
    const int32_t *t0, *t1, *t2;
    int64_t nb, m, n, isb, ism; /* input batch and row strides (elements; columns contiguous) */
    const double *ua, *ub;      /* mode 1: nb*m and nb*n scales */
    const uint8_t *bada, *badb; /* nb*m and nb*n flags */
    int any_bad;
    float *out; /* contiguous nb x m x n */
    int64_t i0, i1; /* this job's rows, over nb*m */
    int isa;
} cjob;

static inline float finish1(double v) { return (float)v + 0.0f; }

static void combine_portable_row(const cjob *j, int64_t b, int64_t i, int64_t j0) {
    float *o = j->out + (b * j->m + i) * j->n;
    if (j->mode == 0) {
        const double *s = j->s + b * j->isb + i * j->ism;
        for (int64_t c = j0; c < j->n; c++) o[c] = finish1(s[c]);
    } else {
        int64_t off = b * j->isb + i * j->ism;
        double ua = j->ua[b * j->m + i];
        const double *ub = j->ub + b * j->n;
        for (int64_t c = j0; c < j->n; c++) {
            double v = (double)j->t0[off + c] + 256.0 * (double)j->t1[off + c] + 65536.0 * (double)j->t2[off + c];
            o[c] = finish1(v * ua * ub[c]);
        }
    }
}

#if RT_X86
RT_AVX2 static void combine_avx2_row(const cjob *j, int64_t b, int64_t i) {
    float *o = j->out + (b * j->m + i) * j->n;
    const __m128 zero = _mm_setzero_ps();
    int64_t c = 0;
    if (j->mode == 0) {
        const double *s = j->s + b * j->isb + i * j->ism;
        for (; c + 4 <= j->n; c += 4) _mm_storeu_ps(o + c, _mm_add_ps(_mm256_cvtpd_ps(_mm256_loadu_pd(s + c)), zero));
    } else {
        int64_t off = b * j->isb + i * j->ism;
        __m256d ua = _mm256_set1_pd(j->ua[b * j->m + i]);
        const double *ub = j->ub + b * j->n;
        const __m256d w1 = _mm256_set1_pd(256.0), w2 = _mm256_set1_pd(65536.0);
        for (; c + 4 <= j->n; c += 4) {
            __m256d a0 = _mm256_cvtepi32_pd(_mm_loadu_si128((const __m128i *)(j->t0 + off + c)));
            __m256d a1 = _mm256_cvtepi32_pd(_mm_loadu_si128((const __m128i *)(j->t1 + off + c)));
            __m256d a2 = _mm256_cvtepi32_pd(_mm_loadu_si128((const __m128i *)(j->t2 + off + c)));
            __m256d v = _mm256_add_pd(_mm256_add_pd(a0, _mm256_mul_pd(w1, a1)), _mm256_mul_pd(w2, a2));
            v = _mm256_mul_pd(_mm256_mul_pd(v, ua), _mm256_loadu_pd(ub + c));
            _mm_storeu_ps(o + c, _mm_add_ps(_mm256_cvtpd_ps(v), zero));
        }
    }
    combine_portable_row(j, b, i, c);
}

RT_AVX512 static void combine_avx512_row(const cjob *j, int64_t b, int64_t i) {
    float *o = j->out + (b * j->m + i) * j->n;
    const __m256 zero = _mm256_setzero_ps();
    int64_t c = 0;
    if (j->mode == 0) {
        const double *s = j->s + b * j->isb + i * j->ism;
        for (; c + 8 <= j->n; c += 8)
            _mm256_storeu_ps(o + c, _mm256_add_ps(_mm512_cvtpd_ps(_mm512_loadu_pd(s + c)), zero));
    } else {
        int64_t off = b * j->isb + i * j->ism;
        __m512d ua = _mm512_set1_pd(j->ua[b * j->m + i]);
        const double *ub = j->ub + b * j->n;
        const __m512d w1 = _mm512_set1_pd(256.0), w2 = _mm512_set1_pd(65536.0);
        for (; c + 8 <= j->n; c += 8) {
            __m512d a0 = _mm512_cvtepi32_pd(_mm256_loadu_si256((const __m256i *)(j->t0 + off + c)));
            __m512d a1 = _mm512_cvtepi32_pd(_mm256_loadu_si256((const __m256i *)(j->t1 + off + c)));
            __m512d a2 = _mm512_cvtepi32_pd(_mm256_loadu_si256((const __m256i *)(j->t2 + off + c)));
            __m512d v = _mm512_add_pd(_mm512_add_pd(a0, _mm512_mul_pd(w1, a1)), _mm512_mul_pd(w2, a2));
            v = _mm512_mul_pd(_mm512_mul_pd(v, ua), _mm512_loadu_pd(ub + c));
            _mm256_storeu_ps(o + c, _mm256_add_ps(_mm512_cvtpd_ps(v), zero));
        }
    }
    combine_portable_row(j, b, i, c);
}
#endif

static void combine_run(const cjob *j) {
    const float nan = f32_from(CANON_NAN);
    for (int64_t r = j->i0; r < j->i1; r++) {
        int64_t b = r / j->m, i = r % j->m;
        float *o = j->out + r * j->n;
        if (j->any_bad && j->bada[r]) {
            for (int64_t c = 0; c < j->n; c++) o[c] = nan;
            continue;
        }
#if RT_X86
        if (j->isa == ISA_AVX512) combine_avx512_row(j, b, i);
        else if (j->isa == ISA_AVX2) combine_avx2_row(j, b, i);
        else combine_portable_row(j, b, i, 0);
#else
        combine_portable_row(j, b, i, 0);
#endif
        if (j->any_bad) {
            const uint8_t *bb = j->badb + b * j->n;
            for (int64_t c = 0; c < j->n; c++)
                if (bb[c]) o[c] = nan;
        }
    }
}

static void combine_job(void *arg) { combine_run((const cjob *)arg); }

static int combine(const cjob *proto, int threads) {
    if (proto->isa < 0 || proto->isa > 2 || !rt_linalg_isa_supported(proto->isa)) return -1;
    int64_t rows = proto->nb * proto->m;
    if (threads < 1) threads = 1;
    if (threads > MAX_THREADS) threads = MAX_THREADS;
    int64_t by_work = rows * proto->n / (1 << 18);
    if (by_work < threads) threads = by_work < 1 ? 1 : (int)by_work;
    if (rows < threads) threads = rows < 1 ? 1 : (int)rows;
    cjob jobs[MAX_THREADS];
    for (int t = 0; t < threads; t++) {
        jobs[t] = *proto;
        jobs[t].i0 = rows * t / threads;
        jobs[t].i1 = rows * (t + 1) / threads;
    }
    run_jobs(combine_job, jobs, sizeof(cjob), threads);
    return 0;
}

int rt_combine_f64(const double *s, int64_t nb, int64_t m, int64_t n, int64_t isb, int64_t ism, const uint8_t *bada,
                   const uint8_t *badb, int any_bad, float *out, int isa, int threads) {
    cjob j;
    memset(&j, 0, sizeof j);
    j.mode = 0; j.s = s; j.nb = nb; j.m = m; j.n = n; j.isb = isb; j.ism = ism;
    j.bada = bada; j.badb = badb; j.any_bad = any_bad; j.out = out; j.isa = isa;
    return combine(&j, threads);
}

int rt_combine_int8x2(const int32_t *t0, const int32_t *t1, const int32_t *t2, int64_t nb, int64_t m, int64_t n,
                      int64_t isb, int64_t ism, const double *ua, const double *ub, const uint8_t *bada,
                      const uint8_t *badb, int any_bad, float *out, int isa, int threads) {
    cjob j;
    memset(&j, 0, sizeof j);
    j.mode = 1; j.t0 = t0; j.t1 = t1; j.t2 = t2; j.nb = nb; j.m = m; j.n = n; j.isb = isb; j.ism = ism;
    j.ua = ua; j.ub = ub; j.bada = bada; j.badb = badb; j.any_bad = any_bad; j.out = out; j.isa = isa;
    return combine(&j, threads);
}

/* ---- the int16 engine ------------------------------------------------------------------------
 * S[i, j] = sum_k qa[i, k] qb[k, j] with the p = 14 grid integers of the int8 engine's quantizer:
 * qa = hA * 2^8 + lA rebuilt as one int16 (|qa| <= 2^14), qb kept as its two slices lB in
 * [-128, 127] and hB in [-64, 64]. Then S = T_lo + 2^8 T_hi with T_lo = sum qa lB and
 * T_hi = sum qa hB: two int16 GEMMs. vpmaddwd multiplies 16 int16 pairs and adds each pair
 * into an int32 lane, 16 products a 256-bit instruction against fp32 FMA's 8, so the two cost
 * what one fp32 GEMM costs at peak, where the f64 engine's float64 GEMM costs two (4 products
 * an instruction): on an AVX2 CPU without int8 dot-product units this is the fast engine.
 *
 * Exactness: |qa lB| <= 2^14 * 2^7 = 2^21 and |qa hB| <= 2^20, so any int32 partial sum of at
 * most I16_KC = 512 products is below 2^30 (no overflow, no saturation: a pair sum is at most
 * 2^22). Each block of I16_KC values of K is summed in int32 lanes, then T_lo + 2^8 T_hi of the
 * block (exact in binary64) is added into the tile's binary64 sum, whose partial sums are
 * integers of magnitude at most K * 2^28 + K * 2^21 < 2^53 for K <= I16_MAX_K: exact in any
 * order. The combine is the int8 engine's: f32(S * 2^(e_i - p) * 2^(e'_j - p)) + 0, NaN on a
 * flagged row or column. So the bits are those of every other engine.
 *
 * Layout: A is packed in panels of I16_MR rows, for each pair of K positions one int32 per row
 * holding (qa[i, 2t], qa[i, 2t + 1]); B in panels of I16_NR columns, for each pair 2 * I16_NR
 * int32 (the lB pairs of the panel's columns, then their hB pairs). Rows, columns and K are
 * padded with zeros, which add nothing. The micro-kernel keeps a 6 x 8 tile of T_lo and of T_hi
 * (12 registers). The output is cut into blocks of I16_MC x I16_NC; a thread takes whole blocks
 * (each output value is computed by one thread, from the same integers: threads change no bit). */

#define I16_MR 6
#define I16_NR 8
#define I16_KC 512
#define I16_MC 96
#define I16_NC 256
#define I16_MAX_K (1LL << 24)

int64_t rt_i16_max_k(void) { return I16_MAX_K; }

static inline int32_t pack_pair(int32_t q0, int32_t q1) {
    return (int32_t)((uint32_t)(uint16_t)(int16_t)q0 | ((uint32_t)(uint16_t)(int16_t)q1 << 16));
}

/* C tile (I16_MR x I16_NR, row stride ldc) += T_lo + 2^8 T_hi over np pairs of K. */
static void i16_kernel_portable(const int32_t *a, const int32_t *b, int64_t np, double *c, int64_t ldc) {
    int32_t lo[I16_MR][I16_NR] = {{0}}, hi[I16_MR][I16_NR] = {{0}};
    for (int64_t t = 0; t < np; t++, a += I16_MR, b += 2 * I16_NR) {
        for (int r = 0; r < I16_MR; r++) {
            int32_t a0 = (int16_t)(uint16_t)((uint32_t)a[r] & 0xffffu), a1 = (int16_t)(uint16_t)((uint32_t)a[r] >> 16);
            for (int q = 0; q < I16_NR; q++) {
                uint32_t bl = (uint32_t)b[q], bh = (uint32_t)b[I16_NR + q];
                lo[r][q] += a0 * (int16_t)(uint16_t)(bl & 0xffffu) + a1 * (int16_t)(uint16_t)(bl >> 16);
                hi[r][q] += a0 * (int16_t)(uint16_t)(bh & 0xffffu) + a1 * (int16_t)(uint16_t)(bh >> 16);
            }
        }
    }
    for (int r = 0; r < I16_MR; r++)
        for (int q = 0; q < I16_NR; q++) c[r * ldc + q] += (double)lo[r][q] + 256.0 * (double)hi[r][q];
}

#if RT_X86
RT_AVX2 static inline void i16_flush_avx2(__m256i l, __m256i h, double *c) {
    const __m256d w = _mm256_set1_pd(256.0);
    __m256d l0 = _mm256_cvtepi32_pd(_mm256_castsi256_si128(l)), l1 = _mm256_cvtepi32_pd(_mm256_extracti128_si256(l, 1));
    __m256d h0 = _mm256_cvtepi32_pd(_mm256_castsi256_si128(h)), h1 = _mm256_cvtepi32_pd(_mm256_extracti128_si256(h, 1));
    _mm256_storeu_pd(c, _mm256_add_pd(_mm256_loadu_pd(c), _mm256_add_pd(l0, _mm256_mul_pd(w, h0))));
    _mm256_storeu_pd(c + 4, _mm256_add_pd(_mm256_loadu_pd(c + 4), _mm256_add_pd(l1, _mm256_mul_pd(w, h1))));
}

/* out[q] = f32(s[q] * ua * ub[q]) + 0 for the leading multiple of 4 of `cols`; returns it. */
RT_AVX2 static int64_t i16_combine_avx2(const double *s, double ua, const double *ub, float *o, int64_t cols) {
    const __m256d va = _mm256_set1_pd(ua);
    const __m128 zero = _mm_setzero_ps();
    int64_t q = 0;
    for (; q + 4 <= cols; q += 4) {
        __m256d v = _mm256_mul_pd(_mm256_mul_pd(_mm256_loadu_pd(s + q), va), _mm256_loadu_pd(ub + q));
        _mm_storeu_ps(o + q, _mm_add_ps(_mm256_cvtpd_ps(v), zero));
    }
    return q;
}

/* The loop in assembly: written with intrinsics, gcc keeps the six broadcasts in registers and
 * spills nine of the twelve accumulators to the stack (measured at a third of the speed).
 * ymm0-11: T_lo and T_hi of rows 0-5; ymm12, ymm13: the lB and hB pairs of 8 columns; ymm14:
 * row r's pair, broadcast; ymm15: a product. */
RT_AVX2 static void i16_kernel_avx2(const int32_t *a, const int32_t *b, int64_t np, double *c, int64_t ldc) {
    int32_t t[12 * 8] __attribute__((aligned(32)));
    __asm__ volatile(
        "vpxor %%ymm0, %%ymm0, %%ymm0\n\t"
        "vpxor %%ymm1, %%ymm1, %%ymm1\n\t"
        "vpxor %%ymm2, %%ymm2, %%ymm2\n\t"
        "vpxor %%ymm3, %%ymm3, %%ymm3\n\t"
        "vpxor %%ymm4, %%ymm4, %%ymm4\n\t"
        "vpxor %%ymm5, %%ymm5, %%ymm5\n\t"
        "vpxor %%ymm6, %%ymm6, %%ymm6\n\t"
        "vpxor %%ymm7, %%ymm7, %%ymm7\n\t"
        "vpxor %%ymm8, %%ymm8, %%ymm8\n\t"
        "vpxor %%ymm9, %%ymm9, %%ymm9\n\t"
        "vpxor %%ymm10, %%ymm10, %%ymm10\n\t"
        "vpxor %%ymm11, %%ymm11, %%ymm11\n\t"
        "test %[np], %[np]\n\t"
        "jz 2f\n\t"
        ".p2align 4\n"
        "1:\n\t"
        "vmovdqu (%[b]), %%ymm12\n\t"
        "vmovdqu 32(%[b]), %%ymm13\n\t"
#define I16_ASM_ROW(off, lo, hi)                              \
        "vpbroadcastd " #off "(%[a]), %%ymm14\n\t"          \
        "vpmaddwd %%ymm12, %%ymm14, %%ymm15\n\t"            \
        "vpaddd %%ymm15, %%ymm" #lo ", %%ymm" #lo "\n\t"    \
        "vpmaddwd %%ymm13, %%ymm14, %%ymm15\n\t"            \
        "vpaddd %%ymm15, %%ymm" #hi ", %%ymm" #hi "\n\t"
        I16_ASM_ROW(0, 0, 1)
        I16_ASM_ROW(4, 2, 3)
        I16_ASM_ROW(8, 4, 5)
        I16_ASM_ROW(12, 6, 7)
        I16_ASM_ROW(16, 8, 9)
        I16_ASM_ROW(20, 10, 11)
#undef I16_ASM_ROW
        "add $24, %[a]\n\t"
        "add $64, %[b]\n\t"
        "dec %[np]\n\t"
        "jnz 1b\n"
        "2:\n\t"
        "vmovdqa %%ymm0, (%[t])\n\t"
        "vmovdqa %%ymm1, 32(%[t])\n\t"
        "vmovdqa %%ymm2, 64(%[t])\n\t"
        "vmovdqa %%ymm3, 96(%[t])\n\t"
        "vmovdqa %%ymm4, 128(%[t])\n\t"
        "vmovdqa %%ymm5, 160(%[t])\n\t"
        "vmovdqa %%ymm6, 192(%[t])\n\t"
        "vmovdqa %%ymm7, 224(%[t])\n\t"
        "vmovdqa %%ymm8, 256(%[t])\n\t"
        "vmovdqa %%ymm9, 288(%[t])\n\t"
        "vmovdqa %%ymm10, 320(%[t])\n\t"
        "vmovdqa %%ymm11, 352(%[t])\n\t"
        "vzeroupper\n\t"
        : [a] "+r"(a), [b] "+r"(b), [np] "+r"(np)
        : [t] "r"(t)
        : "memory", "cc", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10",
          "xmm11", "xmm12", "xmm13", "xmm14", "xmm15");
    for (int r = 0; r < I16_MR; r++)
        i16_flush_avx2(_mm256_load_si256((const __m256i *)(t + 16 * r)),
                       _mm256_load_si256((const __m256i *)(t + 16 * r + 8)), c + r * ldc);
}
#endif

/* ---- the int16 engine's quantizer: the grid integers straight into the packed layout ----------
 * One operand of one batch entry: line r (a row of A, a column of B) holds values l at
 * x[r*sr + l*sl]; its maximum, exponent, inv = 2^(p - e) and scale 2^(e - p) are the int8
 * engine's (line_constants, mode 1), q = RNE(f64(x) * inv) the same integer. Line r's pair t,
 * (q[2t], q[2t + 1]) (0 past the end), becomes one int32 unit at
 * dst[(r / group) * kp * ustride + t * ustride + r % group]; split operands (B) store the unit of
 * their lB slices there and the unit of their hB slices `group` int32 further. Lines of a
 * non-finite maximum are written as zeros and flagged. */

typedef struct {
    const float *x;
    int64_t nr, nl, sr, sl, kp;
    int split, group, ustride, p, isa;
    int32_t *dst;
    uint8_t *bad;
    double *ulp;
} i16q;

#define I16_CHUNK 64 /* lines a job quantizes at once (a multiple of I16_MR and I16_NR's lcm, 24) */

static inline int32_t *i16_unit(const i16q *j, int64_t r, int64_t t) {
    return j->dst + (r / j->group) * j->kp * j->ustride + t * j->ustride + r % j->group;
}

static inline void i16_store_unit(const i16q *j, int64_t r, int64_t t, int32_t q0, int32_t q1) {
    int32_t *u = i16_unit(j, r, t);
    if (!j->split) {
        *u = pack_pair(q0, q1);
        return;
    }
    int8_t l0, h0, l1, h1;
    split2(q0, &l0, &h0);
    split2(q1, &l1, &h1);
    u[0] = pack_pair(l0, l1);
    u[j->group] = pack_pair(h0, h1);
}

/* Lines [r0, r1) (at most I16_CHUNK): maxima, constants, then every unit, scalar. */
static void i16q_portable(const i16q *j, int64_t r0, int64_t r1, uint32_t *mb, double *cb) {
    for (int64_t r = r0; r < r1; r++) {
        uint32_t m = 0;
        for (int64_t l = 0; l < j->nl; l++) {
            uint32_t u = f32_bits(j->x[r * j->sr + l * j->sl]) & ABS_MASK;
            m = u > m ? u : m;
        }
        mb[r - r0] = m;
    }
    for (int64_t r = r0; r < r1; r++) {
        double inv;
        int8_scales(mb[r - r0], j->p, &inv, &j->ulp[r]);
        j->bad[r] = mb[r - r0] >= NONFINITE;
        cb[r - r0] = inv;
    }
    for (int64_t r = r0; r < r1; r++) {
        int ok = !j->bad[r];
        for (int64_t t = 0; t < j->kp; t++) {
            int64_t l = 2 * t;
            int32_t q0 = ok ? quant_int(j->x[r * j->sr + l * j->sl], cb[r - r0]) : 0;
            int32_t q1 = ok && l + 1 < j->nl ? quant_int(j->x[r * j->sr + (l + 1) * j->sl], cb[r - r0]) : 0;
            i16_store_unit(j, r, t, q0, q1);
        }
    }
}

#if RT_X86
/* 8 values to their grid integers: the int8 engine's arithmetic (avx2_store8, mode 1). */
RT_AVX2 static inline __m256i i16_quant8(__m256 v, __m256d inv0, __m256d inv1) {
    const __m256d magic = _mm256_set1_pd(RNE_MAGIC);
    __m256d d0 = _mm256_cvtps_pd(_mm256_castps256_ps128(v)), d1 = _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1));
    d0 = _mm256_sub_pd(_mm256_add_pd(_mm256_mul_pd(d0, inv0), magic), magic);
    d1 = _mm256_sub_pd(_mm256_add_pd(_mm256_mul_pd(d1, inv1), magic), magic);
    return _mm256_set_m128i(_mm256_cvtpd_epi32(d1), _mm256_cvtpd_epi32(d0));
}

RT_AVX2 static inline void i16_split8(__m256i q, __m256i *lo, __m256i *hi) {
    const __m256i k128 = _mm256_set1_epi32(128), k255 = _mm256_set1_epi32(255);
    *lo = _mm256_sub_epi32(_mm256_and_si256(_mm256_add_epi32(q, k128), k255), k128);
    *hi = _mm256_srai_epi32(_mm256_sub_epi32(q, *lo), 8);
}

/* units of 8 lines from the integers of their even (q0) and odd (q1) values */
RT_AVX2 static inline __m256i i16_units(__m256i q0, __m256i q1) {
    return _mm256_or_si256(_mm256_and_si256(q0, _mm256_set1_epi32(0xffff)), _mm256_slli_epi32(q1, 16));
}

/* units of one line from 8 consecutive integers (values 2t..2t+7): 4 units */
RT_AVX2 static inline __m128i i16_units_along(__m256i q) {
    __m256i w = _mm256_packs_epi32(q, q); /* |q| <= 2^14: no saturation; [q0..3 q0..3 | q4..7 q4..7] */
    return _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(w, _mm256_setr_epi32(0, 1, 4, 5, 0, 1, 4, 5)));
}

RT_AVX2 static void i16q_avx2(const i16q *j, int64_t r0, int64_t r1, uint32_t *mb, double *cb) {
    int64_t n = r1 - r0;
    if (j->sl == 1) { /* lines contiguous */
        for (int64_t r = r0; r < r1; r++) {
            const float *line = j->x + r * j->sr;
            __m256i vm = _mm256_setzero_si256();
            int64_t l = 0;
            for (; l + 8 <= j->nl; l += 8) vm = _mm256_max_epi32(vm, avx2_absbits(line + l));
            uint32_t m = hmax8(vm);
            for (; l < j->nl; l++) {
                uint32_t u = f32_bits(line[l]) & ABS_MASK;
                m = u > m ? u : m;
            }
            mb[r - r0] = m;
        }
    } else { /* lines side by side (sr == 1) */
        memset(mb, 0, (size_t)n * sizeof(uint32_t));
        for (int64_t l = 0; l < j->nl; l++) {
            const float *row = j->x + l * j->sl + r0;
            int64_t r = 0;
            for (; r + 8 <= n; r += 8)
                _mm256_storeu_si256((__m256i *)(mb + r),
                                    _mm256_max_epi32(_mm256_loadu_si256((const __m256i *)(mb + r)), avx2_absbits(row + r)));
            for (; r < n; r++) {
                uint32_t u = f32_bits(row[r]) & ABS_MASK;
                mb[r] = u > mb[r] ? u : mb[r];
            }
        }
    }
    for (int64_t r = r0; r < r1; r++) {
        double inv;
        int8_scales(mb[r - r0], j->p, &inv, &j->ulp[r]);
        j->bad[r] = mb[r - r0] >= NONFINITE;
        cb[r - r0] = inv;
    }
    if (j->sl == 1) {
        for (int64_t r = r0; r < r1; r++) {
            const float *line = j->x + r * j->sr;
            if (j->bad[r]) {
                for (int64_t t = 0; t < j->kp; t++) i16_store_unit(j, r, t, 0, 0);
                continue;
            }
            __m256d vi = _mm256_set1_pd(cb[r - r0]);
            int64_t t = 0;
            for (; 2 * t + 8 <= j->nl; t += 4) {
                __m256i q = i16_quant8(_mm256_loadu_ps(line + 2 * t), vi, vi);
                int32_t u[4], h[4];
                if (!j->split) {
                    _mm_storeu_si128((__m128i *)u, i16_units_along(q));
                } else {
                    __m256i lo, hi;
                    i16_split8(q, &lo, &hi);
                    _mm_storeu_si128((__m128i *)u, i16_units_along(lo));
                    _mm_storeu_si128((__m128i *)h, i16_units_along(hi));
                }
                for (int k = 0; k < 4; k++) {
                    int32_t *d = i16_unit(j, r, t + k);
                    d[0] = u[k];
                    if (j->split) d[j->group] = h[k];
                }
            }
            for (; t < j->kp; t++) {
                int64_t l = 2 * t;
                i16_store_unit(j, r, t, quant_int(line[l], cb[r - r0]),
                               l + 1 < j->nl ? quant_int(line[l + 1], cb[r - r0]) : 0);
            }
        }
        return;
    }
    int any_bad = 0;
    for (int64_t r = r0; r < r1; r++) any_bad |= j->bad[r];
    for (int64_t t = 0; t < j->kp; t++) {
        int64_t l = 2 * t;
        const float *row0 = j->x + l * j->sl + r0, *row1 = row0 + j->sl;
        int two = l + 1 < j->nl;
        int64_t r = 0;
        for (; r + 8 <= n; r += 8) {
            __m256 v0 = _mm256_loadu_ps(row0 + r), v1 = two ? _mm256_loadu_ps(row1 + r) : _mm256_setzero_ps();
            if (any_bad) { /* zero the values of non-finite lines */
                __m256i ok = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)NONFINITE),
                                                _mm256_loadu_si256((const __m256i *)(mb + r)));
                v0 = _mm256_and_ps(v0, _mm256_castsi256_ps(ok));
                v1 = _mm256_and_ps(v1, _mm256_castsi256_ps(ok));
            }
            __m256d i0 = _mm256_loadu_pd(cb + r), i1 = _mm256_loadu_pd(cb + r + 4);
            __m256i q0 = i16_quant8(v0, i0, i1), q1 = i16_quant8(v1, i0, i1);
            __m256i u = q0, h = q0;
            if (!j->split) {
                u = i16_units(q0, q1);
            } else {
                __m256i l0, h0, l1, h1;
                i16_split8(q0, &l0, &h0);
                i16_split8(q1, &l1, &h1);
                u = i16_units(l0, l1);
                h = i16_units(h0, h1);
            }
            int64_t rr = r0 + r;
            if (j->group == 8 && rr % 8 == 0) { /* one panel's 8 columns: two 32-byte stores */
                int32_t *d = i16_unit(j, rr, t);
                _mm256_storeu_si256((__m256i *)d, u);
                if (j->split) _mm256_storeu_si256((__m256i *)(d + 8), h);
            } else {
                int32_t us[8], hs[8];
                _mm256_storeu_si256((__m256i *)us, u);
                _mm256_storeu_si256((__m256i *)hs, h);
                for (int k = 0; k < 8; k++) {
                    int32_t *d = i16_unit(j, rr + k, t);
                    d[0] = us[k];
                    if (j->split) d[j->group] = hs[k];
                }
            }
        }
        for (; r < n; r++) {
            int ok = !j->bad[r0 + r];
            i16_store_unit(j, r0 + r, t, ok ? quant_int(row0[r], cb[r]) : 0, ok && two ? quant_int(row1[r], cb[r]) : 0);
        }
    }
}
#endif

/* Lines [r0, r1) of one operand, and the zero units of the padding lines of its last group. */
static void i16q_run(const i16q *j, int64_t r0, int64_t r1) {
    uint32_t mb[I16_CHUNK];
    double cb[I16_CHUNK];
#if RT_X86
    if (j->isa >= ISA_AVX2 && (j->sl == 1 || j->sr == 1)) i16q_avx2(j, r0, r1, mb, cb);
    else
#endif
        i16q_portable(j, r0, r1, mb, cb);
    if (r1 == j->nr)
        for (int64_t r = j->nr; r % j->group; r++)
            for (int64_t t = 0; t < j->kp; t++) i16_store_unit(j, r, t, 0, 0);
}

typedef struct {
    const int32_t *pa, *pb; /* packed */
    int64_t nb, m, k, n, kp, pm, pn; /* kp: pairs of K; pm, pn: panels of rows, columns */
    const double *ua, *ub;
    const uint8_t *bada, *badb;
    int any_bad;
    float *out; /* nb x m x n, contiguous */
    int combine; /* 0: tile sums only (stage profile) */
    int isa;
} i16job;

/* One output block: rows [i0, i0 + I16_MC), columns [c0, c0 + I16_NC) of batch entry b, through
 * the thread's tile sum `acc` (I16_MC x I16_NC binary64). */
static void i16_block(const i16job *j, int64_t b, int64_t i0, int64_t c0, double *acc) {
    int64_t rows = j->m - i0 < I16_MC ? j->m - i0 : I16_MC, cols = j->n - c0 < I16_NC ? j->n - c0 : I16_NC;
    int64_t pr = (rows + I16_MR - 1) / I16_MR, pc = (cols + I16_NR - 1) / I16_NR;
    memset(acc, 0, sizeof(double) * I16_MC * I16_NC);
    for (int64_t t0 = 0; t0 < j->kp; t0 += I16_KC / 2) {
        int64_t np = j->kp - t0 < I16_KC / 2 ? j->kp - t0 : I16_KC / 2;
        for (int64_t q = 0; q < pc; q++) {
            const int32_t *bp = j->pb + ((b * j->pn + c0 / I16_NR + q) * j->kp + t0) * 2 * I16_NR;
            for (int64_t r = 0; r < pr; r++) {
                const int32_t *ap = j->pa + ((b * j->pm + i0 / I16_MR + r) * j->kp + t0) * I16_MR;
                double *c = acc + r * I16_MR * I16_NC + q * I16_NR;
#if RT_X86
                if (j->isa >= ISA_AVX2) {
                    i16_kernel_avx2(ap, bp, np, c, I16_NC);
                    continue;
                }
#endif
                i16_kernel_portable(ap, bp, np, c, I16_NC);
            }
        }
    }
    if (!j->combine) return;
    const float nan = f32_from(CANON_NAN);
    for (int64_t r = 0; r < rows; r++) {
        int64_t i = i0 + r;
        float *o = j->out + (b * j->m + i) * j->n + c0;
        const double *s = acc + r * I16_NC;
        if (j->any_bad && j->bada[b * j->m + i]) {
            for (int64_t q = 0; q < cols; q++) o[q] = nan;
            continue;
        }
        double ua = j->ua[b * j->m + i];
        const double *ub = j->ub + b * j->n + c0;
        int64_t q = 0;
#if RT_X86
        if (j->isa >= ISA_AVX2) q = i16_combine_avx2(s, ua, ub, o, cols);
#endif
        for (; q < cols; q++) o[q] = finish1(s[q] * ua * ub[q]);
        if (j->any_bad) {
            const uint8_t *bb = j->badb + b * j->n + c0;
            for (q = 0; q < cols; q++)
                if (bb[q]) o[q] = nan;
        }
    }
}

static int i16_team(int64_t nb, int64_t m, int64_t k, int64_t n, int threads) {
    if (threads < 1) threads = 1;
    if (threads > MAX_THREADS) threads = MAX_THREADS;
    /* one thread below about 2^21 products (the whole product then takes well under a millisecond) */
    return nb * m * n * k < (1LL << 21) ? 1 : threads;
}

/* The int16 engine's quantizer: A (nb x m x k: element (b, i, l) at a[b*asb + i*asr + l*asl]) and
 * B (nb x k x n: element (b, l, j) at bm[b*bsb + l*bsr + j*bsc]) on their p = 14 grids, written
 * into pa (nb * ceil(m/6) * ceil(k/2) * 6 int32) and pb (nb * ceil(n/8) * ceil(k/2) * 16 int32);
 * ua, bada (nb*m) and ub, badb (nb*n) receive the scales and flags. Returns the number of flagged
 * (non-finite) rows and columns, or -1 on bad arguments. */
int64_t rt_i16_quantize(const float *a, int64_t nb, int64_t m, int64_t k, int64_t asb, int64_t asr, int64_t asl,
                        const float *bm, int64_t n, int64_t bsb, int64_t bsr, int64_t bsc, int p, int32_t *pa,
                        int32_t *pb, double *ua, double *ub, uint8_t *bada, uint8_t *badb, int isa, int threads) {
    if (p != 14 || nb < 1 || m < 1 || k < 1 || n < 1 || k > I16_MAX_K) return -1;
    if (isa < 0 || isa > 2 || !rt_linalg_isa_supported(isa)) return -1;
    int64_t kp = (k + 1) / 2, pm = (m + I16_MR - 1) / I16_MR, pn = (n + I16_NR - 1) / I16_NR;
    int64_t ca = (m + I16_CHUNK - 1) / I16_CHUNK, cbn = (n + I16_CHUNK - 1) / I16_CHUNK, chunks = nb * (ca + cbn);
#pragma omp parallel for schedule(dynamic, 1) num_threads(i16_team(nb, m, k, n, threads))
    for (int64_t t = 0; t < chunks; t++) {
        int64_t b = t / (ca + cbn), c = t % (ca + cbn);
        i16q q;
        memset(&q, 0, sizeof q);
        q.kp = kp; q.p = p; q.isa = isa; q.nl = k;
        if (c < ca) {
            q.x = a + b * asb; q.nr = m; q.sr = asr; q.sl = asl; q.split = 0; q.group = I16_MR;
            q.ustride = I16_MR; q.dst = pa + b * pm * kp * I16_MR; q.bad = bada + b * m; q.ulp = ua + b * m;
        } else {
            c -= ca;
            q.x = bm + b * bsb; q.nr = n; q.sr = bsc; q.sl = bsr; q.split = 1; q.group = I16_NR;
            q.ustride = 2 * I16_NR; q.dst = pb + b * pn * kp * 2 * I16_NR; q.bad = badb + b * n; q.ulp = ub + b * n;
        }
        int64_t r0 = c * I16_CHUNK, r1 = r0 + I16_CHUNK < q.nr ? r0 + I16_CHUNK : q.nr;
        i16q_run(&q, r0, r1);
    }
    int64_t flagged = 0;
    for (int64_t i = 0; i < nb * m; i++) flagged += bada[i];
    for (int64_t i = 0; i < nb * n; i++) flagged += badb[i];
    return flagged;
}

/* The int16 engine's products and combine on what rt_i16_quantize wrote: out (nb x m x n float,
 * contiguous). combine = 0 computes the tile sums and writes nothing (the benchmark's stage
 * profile). Returns 0, or -1 on bad arguments / no memory. */
int rt_i16_products(const int32_t *pa, const int32_t *pb, int64_t nb, int64_t m, int64_t k, int64_t n,
                    const double *ua, const double *ub, const uint8_t *bada, const uint8_t *badb, int any_bad,
                    float *out, int combine, int isa, int threads) {
    if (nb < 1 || m < 1 || k < 1 || n < 1 || k > I16_MAX_K) return -1;
    if (isa < 0 || isa > 2 || !rt_linalg_isa_supported(isa)) return -1;
    i16job j;
    memset(&j, 0, sizeof j);
    j.pa = pa; j.pb = pb;
    j.nb = nb; j.m = m; j.k = k; j.n = n; j.kp = (k + 1) / 2;
    j.pm = (m + I16_MR - 1) / I16_MR; j.pn = (n + I16_NR - 1) / I16_NR;
    j.ua = ua; j.ub = ub; j.bada = bada; j.badb = badb; j.any_bad = any_bad; j.out = out; j.combine = combine;
    j.isa = isa;
    int64_t bm_ = (m + I16_MC - 1) / I16_MC, bn_ = (n + I16_NC - 1) / I16_NC, blocks = nb * bm_ * bn_;
    int failed = 0;
#pragma omp parallel num_threads(i16_team(nb, m, k, n, threads))
    {
        double *acc = malloc(sizeof(double) * I16_MC * I16_NC);
        if (!acc) {
#pragma omp atomic write
            failed = 1;
        }
#pragma omp for schedule(dynamic, 1)
        for (int64_t t = 0; t < blocks; t++) {
            if (!acc) continue;
            /* row blocks fastest: the threads share one column block of packed B in cache */
            int64_t b = t / (bm_ * bn_), r = t % (bm_ * bn_);
            i16_block(&j, b, (r % bm_) * I16_MC, (r / bm_) * I16_NC, acc);
        }
        free(acc);
    }
    return failed ? -1 : 0;
}

/* The whole int16 engine: rt_i16_quantize then rt_i16_products (arguments as theirs). Returns
 * the number of flagged rows and columns, or -1. */
int64_t rt_mm_i16(const float *a, int64_t nb, int64_t m, int64_t k, int64_t asb, int64_t asr, int64_t asl,
                  const float *bm, int64_t n, int64_t bsb, int64_t bsr, int64_t bsc, int p, int32_t *pa,
                  int32_t *pb, double *ua, double *ub, uint8_t *bada, uint8_t *badb, float *out, int isa,
                  int threads) {
    int64_t flagged = rt_i16_quantize(a, nb, m, k, asb, asr, asl, bm, n, bsb, bsr, bsc, p, pa, pb, ua, ub, bada,
                                      badb, isa, threads);
    if (flagged < 0) return -1;
    if (rt_i16_products(pa, pb, nb, m, k, n, ua, ub, bada, badb, flagged > 0, out, 1, isa, threads) < 0) return -1;
    return flagged;
}
