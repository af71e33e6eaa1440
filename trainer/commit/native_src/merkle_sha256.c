/* SHA-256 for the commitment format of docs/commitments.md: chunk leaves H(0x00 || chunk)
 * and inner nodes H(0x01 || left || right), loaded by trainer/commit/_native.py via ctypes.
 *
 * Two compression functions give the same bits: SHA-NI (x86, chosen at run time by CPUID)
 * and portable C (every other CPU). Equal-length chunks are hashed two at a time, and long
 * rows are split over threads; rt_tree_top walks a whole tensor's tree in one call.
 * Build: python -m trainer.commit._native
 */
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <unistd.h>

static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static const uint32_t H0[8] = {
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
};

/* Runs the compression function over `nblocks` consecutive 64-byte blocks of each of
 * `lanes` (1 or 2) independent messages: state st[k] takes the blocks at p[k]. */
typedef void (*compress_fn)(int lanes, uint32_t st[][8], const uint8_t *const p[], size_t nblocks);

/* ---- portable C ---------------------------------------------------------------------- */

static inline uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

static inline uint32_t load32be(const uint8_t *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static void compress_one(uint32_t st[8], const uint8_t *p, size_t nblocks) {
    for (; nblocks; nblocks--, p += 64) {
        uint32_t w[64];
        for (int t = 0; t < 16; t++) w[t] = load32be(p + 4 * t);
        for (int t = 16; t < 64; t++) {
            uint32_t s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ (w[t - 15] >> 3);
            uint32_t s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ (w[t - 2] >> 10);
            w[t] = w[t - 16] + s0 + w[t - 7] + s1;
        }
        uint32_t a = st[0], b = st[1], c = st[2], d = st[3], e = st[4], f = st[5], g = st[6], h = st[7];
        for (int t = 0; t < 64; t++) {
            uint32_t t1 = h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + K[t] + w[t];
            uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
            h = g; g = f; f = e; e = d + t1;
            d = c; c = b; b = a; a = t1 + t2;
        }
        st[0] += a; st[1] += b; st[2] += c; st[3] += d;
        st[4] += e; st[5] += f; st[6] += g; st[7] += h;
    }
}

static void compress_portable(int lanes, uint32_t st[][8], const uint8_t *const p[], size_t nblocks) {
    for (int k = 0; k < lanes; k++) compress_one(st[k], p[k], nblocks);
}

/* ---- SHA-NI (x86-64) ----------------------------------------------------------------- */

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>

/* Each SHA-NI round instruction waits for the previous one's result, so a single message
 * leaves the unit partly idle; two messages side by side gave about 1.4x throughput (Zen 3).
 * Inlined into two callers with LANES = 1 and 2, so that every loop over lanes unrolls. */
__attribute__((target("sha,sse4.1"), always_inline))
static inline void shani_lanes(const int LANES, uint32_t st[][8], const uint8_t *const p[], size_t nblocks) {
    /* The SHA instructions keep the state as two vectors, ABEF and CDGH (A in the top lane). */
    __m128i abef[2], cdgh[2];
    for (int k = 0; k < LANES; k++) {
        __m128i cdab = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)&st[k][0]), 0xB1);
        __m128i efgh = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)&st[k][4]), 0x1B);
        abef[k] = _mm_alignr_epi8(cdab, efgh, 8);
        cdgh[k] = _mm_blend_epi16(efgh, cdab, 0xF0);
    }
    /* Byte-swaps each 32-bit word: message words are big-endian. */
    const __m128i bswap = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);

    for (size_t off = 0; off < 64 * nblocks; off += 64) {
        __m128i abef0[2], cdgh0[2], w[2][4];  /* w: the last 16 schedule words, as a ring */
        for (int k = 0; k < LANES; k++) {
            abef0[k] = abef[k], cdgh0[k] = cdgh[k];
            for (int i = 0; i < 4; i++)
                w[k][i] = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p[k] + off + 16 * i)), bswap);
        }
#pragma GCC unroll 16  /* fully unrolled, so that w[][] stays in registers */
        for (int i = 0; i < 16; i++) {  /* four rounds per step */
            __m128i kv = _mm_loadu_si128((const __m128i *)&K[4 * i]);
            for (int k = 0; k < LANES; k++) {
                __m128i *r = w[k];
                if (i >= 4) {
                    /* W[t..t+3] from W[t-16..t-13] (+sigma0: msg1), W[t-7..t-4], sigma1 (msg2) */
                    __m128i t7 = _mm_alignr_epi8(r[(i + 3) & 3], r[(i + 2) & 3], 4);
                    __m128i x = _mm_add_epi32(_mm_sha256msg1_epu32(r[i & 3], r[(i + 1) & 3]), t7);
                    r[i & 3] = _mm_sha256msg2_epu32(x, r[(i + 3) & 3]);
                }
                __m128i wk = _mm_add_epi32(r[i & 3], kv);
                cdgh[k] = _mm_sha256rnds2_epu32(cdgh[k], abef[k], wk);  /* two rounds; cdgh now holds ABEF */
                wk = _mm_shuffle_epi32(wk, 0x0E);                        /* the upper two words of W+K */
                abef[k] = _mm_sha256rnds2_epu32(abef[k], cdgh[k], wk);
            }
        }
        for (int k = 0; k < LANES; k++) {
            abef[k] = _mm_add_epi32(abef[k], abef0[k]);
            cdgh[k] = _mm_add_epi32(cdgh[k], cdgh0[k]);
        }
    }

    for (int k = 0; k < LANES; k++) {
        __m128i feba = _mm_shuffle_epi32(abef[k], 0x1B);
        __m128i dchg = _mm_shuffle_epi32(cdgh[k], 0xB1);
        _mm_storeu_si128((__m128i *)&st[k][0], _mm_blend_epi16(feba, dchg, 0xF0));
        _mm_storeu_si128((__m128i *)&st[k][4], _mm_alignr_epi8(dchg, feba, 8));
    }
}

__attribute__((target("sha,sse4.1")))
static void compress_shani(int lanes, uint32_t st[][8], const uint8_t *const p[], size_t nblocks) {
    if (lanes == 2) shani_lanes(2, st, p, nblocks);
    else shani_lanes(1, st, p, nblocks);
}

static int cpu_has_shani(void) {
    unsigned a, b, c, d;
    if (__get_cpuid_max(0, NULL) < 7) return 0;
    __cpuid_count(7, 0, a, b, c, d);
    if (!(b & (1u << 29))) return 0;  /* leaf 7 EBX bit 29: SHA extensions */
    __cpuid(1, a, b, c, d);
    return (c & (1u << 19)) && (c & (1u << 9));  /* leaf 1 ECX: SSE4.1, SSSE3 (pshufb) */
}
#else
static int cpu_has_shani(void) { return 0; }
#endif

/* ---- dispatch ------------------------------------------------------------------------ */

static int force_portable;
static int shani;
static pthread_once_t shani_once = PTHREAD_ONCE_INIT;

/* CPUID once: in a virtual machine it traps to the hypervisor and costs microseconds. */
static void detect(void) { shani = cpu_has_shani(); }

int rt_has_shani(void) {
    pthread_once(&shani_once, detect);
    return shani;
}

static compress_fn pick(void) {
#if defined(__x86_64__)
    if (!force_portable && rt_has_shani()) return compress_shani;
#endif
    return compress_portable;
}

/* For tests: 1 makes every later call use the portable C path, 0 restores the default. */
void rt_set_portable(int on) { force_portable = on; }

/* out[k] = H(prefix || d[k]) (H(d[k]) when prefix < 0) for `lanes` (1 or 2) messages of n bytes. */
static void sha256_prefixed(compress_fn f, int lanes, int prefix, const uint8_t *const d[], size_t n,
                            uint8_t *const out[]) {
    uint32_t st[2][8];
    uint8_t buf[2][128];
    const uint8_t *p[2];
    size_t used = prefix >= 0;                       /* bytes of the first block filled so far */
    size_t take = n < 64 - used ? n : 64 - used;      /* message bytes in the first block */
    int full = used + take == 64;                     /* whether the first block is complete */
    size_t mid = full ? (n - take) / 64 : 0;          /* whole blocks after it, read in place */
    size_t tail = full ? (n - take) % 64 : 0;         /* bytes left for the last block(s) */
    uint64_t bits = (uint64_t)(n + used) * 8;

    for (int k = 0; k < lanes; k++) {
        memcpy(st[k], H0, sizeof H0);
        if (prefix >= 0) buf[k][0] = (uint8_t)prefix;
        memcpy(buf[k] + used, d[k], take);
    }
    if (full) {
        /* The prefix shifts the data by one byte; blocks after the first are read in place. */
        for (int k = 0; k < lanes; k++) p[k] = buf[k];
        f(lanes, st, p, 1);
        for (int k = 0; k < lanes; k++) p[k] = d[k] + take;
        f(lanes, st, p, mid);
        for (int k = 0; k < lanes; k++) memcpy(buf[k], d[k] + take + 64 * mid, tail);
        used = tail;
    } else {
        used += take;
    }
    size_t end = used < 56 ? 64 : 128;
    for (int k = 0; k < lanes; k++) {
        buf[k][used] = 0x80;
        memset(buf[k] + used + 1, 0, end - 9 - used);
        for (int i = 0; i < 8; i++) buf[k][end - 1 - i] = (uint8_t)(bits >> (8 * i));
        p[k] = buf[k];
    }
    f(lanes, st, p, end / 64);
    for (int k = 0; k < lanes; k++)
        for (int i = 0; i < 32; i++) out[k][i] = (uint8_t)(st[k][i / 4] >> (24 - 8 * (i % 4)));
}

void rt_sha256(const uint8_t *data, size_t n, uint8_t *out) {
    const uint8_t *d[1] = {data};
    uint8_t *o[1] = {out};
    sha256_prefixed(pick(), 1, -1, d, n, o);
}

/* ---- rows of hashes, split over threads ---------------------------------------------- */

/* Item j of a job: H(prefix || data[j*size : min((j+1)*size, nbytes)]), written to out + 32j.
 * Items go in batches; a batch is hashed by whichever thread takes it. */
typedef struct {
    compress_fn f;
    int prefix;
    const uint8_t *data;
    size_t nbytes, size, count, nbatches;
    uint8_t *out;
    size_t next;      /* first batch no thread has taken yet (atomic) */
    uint8_t *state;   /* per batch: PENDING, WRITING, DONE or STOLEN (atomic) */
    int refs;         /* threads that may still read this job, the caller included (under lock) */
    pthread_mutex_t lock;
} job_t;

enum { PENDING, WRITING, DONE, STOLEN };

#define MAX_THREADS 64
#define MIN_BYTES_PER_THREAD (1 << 20)  /* below this a thread costs more than it saves */
#define BATCH 16                         /* items per batch */

/* Hashes the items of batch b into out (32 bytes each). */
static void hash_batch(const job_t *jb, size_t b, uint8_t *out) {
    size_t end = (b + 1) * BATCH < jb->count ? (b + 1) * BATCH : jb->count;
    for (size_t j = b * BATCH; j < end; j++, out += 32) {
        size_t off = j * jb->size;
        size_t len = jb->nbytes - off < jb->size ? jb->nbytes - off : jb->size;
        const uint8_t *d[2] = {jb->data + off, jb->data + off + len};
        uint8_t *o[2] = {out, out + 32};
        /* Two items of equal length go through side by side (only the last one is shorter). */
        int lanes = j + 1 < end && jb->nbytes - off >= 2 * jb->size ? 2 : 1;
        sha256_prefixed(jb->f, lanes, jb->prefix, d, len, o);
        j += (size_t)lanes - 1, out += 32 * (lanes - 1);
    }
}

/* Moves batch b from PENDING to `to`; fails if another thread got there first. */
static int take_pending(job_t *jb, size_t b, uint8_t to) {
    uint8_t expect = PENDING;
    return __atomic_compare_exchange_n(&jb->state[b], &expect, to, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

/* Drops `n` references to a job; the last one frees it. */
static void release(job_t *jb, int n) {
    pthread_mutex_lock(&jb->lock);
    int last = (jb->refs -= n) == 0;
    pthread_mutex_unlock(&jb->lock);
    if (last) {
        pthread_mutex_destroy(&jb->lock);
        free(jb->state);
        free(jb);
    }
}

/* A worker claims a batch (PENDING -> WRITING) before it reads a byte of the input, and the
 * caller returns only once every claimed batch is DONE: so no worker touches the caller's
 * buffers after the caller has returned (the job struct itself is reference-counted). */
static void *worker(void *arg) {
    job_t *jb = arg;
    for (;;) {
        size_t b = __atomic_fetch_add(&jb->next, 1, __ATOMIC_RELAXED);
        if (b >= jb->nbatches) break;
        if (!take_pending(jb, b, WRITING)) continue;  /* the caller stole it meanwhile */
        hash_batch(jb, b, jb->out + 32 * BATCH * b);
        __atomic_store_n(&jb->state[b], DONE, __ATOMIC_RELEASE);
    }
    release(jb, 1);
    return NULL;
}

/* Hashes all items of `base` on up to `threads` threads, the calling thread included. The
 * caller never waits for a worker the OS has not yet run: once no batch is left to take, it
 * hashes every batch still pending itself (stealing it), and waits only for batches a worker
 * has claimed and is hashing. Workers are detached; the last thread to leave frees the job. */
static void run_threads(const job_t *base, int threads) {
    size_t most = base->nbytes / MIN_BYTES_PER_THREAD;
    if ((size_t)threads > most) threads = (int)most;
    if (threads > MAX_THREADS) threads = MAX_THREADS;
    job_t *jb = threads > 1 ? malloc(sizeof *jb) : NULL;
    uint8_t *state = jb ? calloc(base->nbatches, 1) : NULL;
    if (state == NULL) {  /* one thread (or no memory): the caller does it all */
        free(jb);
        for (size_t b = 0; b < base->nbatches; b++) hash_batch(base, b, base->out + 32 * BATCH * b);
        return;
    }
    *jb = *base;
    jb->state = state;
    jb->refs = threads;
    pthread_mutex_init(&jb->lock, NULL);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int started = 1;
    pthread_t tid;
    while (started < threads && pthread_create(&tid, &attr, worker, jb) == 0) started++;
    pthread_attr_destroy(&attr);
    if (started < threads) release(jb, threads - started);  /* threads that could not be made */

    for (;;) {  /* the caller's share: batches taken in turn, written in place */
        size_t b = __atomic_fetch_add(&jb->next, 1, __ATOMIC_RELAXED);
        if (b >= jb->nbatches) break;
        if (!take_pending(jb, b, WRITING)) continue;  /* cannot fail: b came from fetch_add */
        hash_batch(jb, b, jb->out + 32 * BATCH * b);
        __atomic_store_n(&jb->state[b], DONE, __ATOMIC_RELEASE);
    }
    for (size_t b = 0; b < jb->nbatches; b++) {
        if (take_pending(jb, b, STOLEN))
            hash_batch(jb, b, jb->out + 32 * BATCH * b);
        else  /* DONE, or WRITING: a worker is hashing it (at most 16 chunks) */
            while (__atomic_load_n(&jb->state[b], __ATOMIC_ACQUIRE) == WRITING) sched_yield();
    }
    release(jb, 1);
}

void rt_chunk_leaves(const uint8_t *data, size_t nbytes, size_t chunk, uint8_t *out, int threads) {
    if (nbytes == 0 || chunk == 0) return;
    size_t count = (nbytes + chunk - 1) / chunk;
    job_t jb = {.f = pick(), .prefix = 0x00, .data = data, .nbytes = nbytes, .size = chunk,
                .count = count, .nbatches = (count + BATCH - 1) / BATCH, .out = out};
    run_threads(&jb, threads);
}

void rt_parent_row(const uint8_t *row, size_t npairs, uint8_t *out, int threads) {
    job_t jb = {.f = pick(), .prefix = 0x01, .data = row, .nbytes = 64 * npairs, .size = 64,
                .count = npairs, .nbatches = (npairs + BATCH - 1) / BATCH, .out = out};
    run_threads(&jb, threads);
}

/* ---- whole commitments, many per call (docs/commitments.md sections 1-5) -------------- */

/* The list root H(0x02 || u64be(count) || top) of the padded tree over `count` leaves held in
 * `row` (room for count + 1 hashes; overwritten), `tmp` room for (count + 1) / 2 + 1 hashes. */
static void list_root_of_row(uint8_t *row, size_t count, uint8_t *tmp, uint8_t *out, int threads) {
    uint8_t msg[41];
    msg[0] = 0x02;
    for (int i = 0; i < 8; i++) msg[1 + i] = (uint8_t)((uint64_t)count >> (56 - 8 * i));
    if (count == 0) {
        memset(msg + 9, 0, 32);
    } else {
        size_t n = count;
        uint8_t *cur = row, *next = tmp;
        while (n > 1) {
            if (n % 2) memset(cur + 32 * n++, 0, 32);  /* an odd row is padded with the zero hash */
            job_t jb = {.f = pick(), .prefix = 0x01, .data = cur, .nbytes = 32 * n, .size = 64,
                        .count = n / 2, .nbatches = (n / 2 + BATCH - 1) / BATCH, .out = next};
            run_threads(&jb, threads);
            uint8_t *swap = cur;
            cur = next, next = swap;
            n /= 2;
        }
        memcpy(msg + 9, cur, 32);
    }
    rt_sha256(msg, sizeof msg, out);
}

/* The tensor commitment H(0x03 || header || dataRoot(data)) of one buffer into out (32 bytes). */
static int commit_one(const uint8_t *data, size_t nbytes, const uint8_t *header, size_t hlen, uint8_t *out,
                      int threads) {
    const size_t chunk = 4096;
    uint8_t msg[1 + 258 + 32];
    if (hlen > 258) return -1;
    size_t count = (nbytes + chunk - 1) / chunk;
    uint8_t *row = malloc(32 * (count + 1) + 32 * ((count + 1) / 2 + 1));
    if (row == NULL) return -1;
    if (count) {
        job_t jb = {.f = pick(), .prefix = 0x00, .data = data, .nbytes = nbytes, .size = chunk,
                    .count = count, .nbatches = (count + BATCH - 1) / BATCH, .out = row};
        run_threads(&jb, threads);
    }
    msg[0] = 0x03;
    memcpy(msg + 1, header, hlen);
    list_root_of_row(row, count, row + 32 * (count + 1), msg + 1 + hlen, threads);
    free(row);
    rt_sha256(msg, 1 + hlen + 32, out);
    return 0;
}

/* Many commitments shared by threads, a tensor at a time (each hashed whole by one thread). */
typedef struct {
    size_t n;
    const uint8_t *const *data;
    const size_t *nbytes, *hlen, *hoff;
    const uint8_t *headers;
    uint8_t *out;
    size_t next;  /* the first tensor no thread has taken (atomic) */
    int failed;   /* atomic */
} many_t;

static void *commit_worker(void *arg) {
    many_t *m = arg;
    for (;;) {
        size_t k = __atomic_fetch_add(&m->next, 1, __ATOMIC_RELAXED);
        if (k >= m->n) break;
        if (commit_one(m->data[k], m->nbytes[k], m->headers + m->hoff[k], m->hlen[k], m->out + 32 * k, 1))
            __atomic_store_n(&m->failed, 1, __ATOMIC_RELAXED);
    }
    return NULL;
}

/* For k < n: out + 32k = H(0x03 || header_k || dataRoot(data_k)), the tensor commitment of the
 * nbytes[k] bytes at data[k]; header_k is hlen[k] bytes of `headers`, in order (at most 258 bytes).
 * Up to `threads` threads (the caller included) share the tensors when they hold at least 1 MiB in all
 * and none alone is big enough to be split over threads; otherwise each is hashed in turn, a big one
 * split as rt_chunk_leaves splits it. Returns 0, or -1 when memory runs out (out is then incomplete). */
int rt_commit_tensors(size_t n, const uint8_t *const data[], const size_t nbytes[], const uint8_t *headers,
                      const size_t hlen[], uint8_t *out, int threads) {
    size_t total = 0, biggest = 0;
    for (size_t k = 0; k < n; k++) {
        total += nbytes[k];
        if (nbytes[k] > biggest) biggest = nbytes[k];
    }
    size_t want = total / MIN_BYTES_PER_THREAD;  /* a thread per MiB, two from 1 MiB on */
    if (want == 1) want = 2;
    if ((size_t)threads > want) threads = want ? (int)want : 1;
    if (threads > MAX_THREADS) threads = MAX_THREADS;
    size_t *hoff = threads > 1 && biggest < 2 * MIN_BYTES_PER_THREAD ? malloc(n * sizeof *hoff) : NULL;
    if (hoff != NULL) {
        for (size_t k = 0, off = 0; k < n; off += hlen[k++]) hoff[k] = off;
        many_t m = {.n = n, .data = data, .nbytes = nbytes, .hlen = hlen, .hoff = hoff, .headers = headers,
                    .out = out};
        pthread_t tid[MAX_THREADS];
        int started = 0;
        while (started < threads - 1 && pthread_create(&tid[started], NULL, commit_worker, &m) == 0) started++;
        commit_worker(&m);
        for (int i = 0; i < started; i++) pthread_join(tid[i], NULL);
        free(hoff);
        return m.failed ? -1 : 0;
    }
    for (size_t k = 0; k < n; headers += hlen[k++])
        if (commit_one(data[k], nbytes[k], headers, hlen[k], out + 32 * k, threads)) return -1;
    return 0;
}

/* The state root over n entries given in canonical order: the list root of the leaves
 * H(0x00 || "STEN" || nameHash_k || commitment_k). Returns 0, or -1 when memory runs out. */
int rt_state_root(size_t n, const uint8_t *name_hashes, const uint8_t *commitments, uint8_t *out) {
    uint8_t *row = malloc(32 * (n + 1) + 32 * ((n + 1) / 2 + 1));
    if (row == NULL) return -1;
    compress_fn f = pick();
    uint8_t rec[68];
    memcpy(rec, "STEN", 4);
    for (size_t k = 0; k < n; k++) {
        memcpy(rec + 4, name_hashes + 32 * k, 32);
        memcpy(rec + 36, commitments + 32 * k, 32);
        const uint8_t *d[1] = {rec};
        uint8_t *o[1] = {row + 32 * k};
        sha256_prefixed(f, 1, 0x00, d, sizeof rec, o);
    }
    list_root_of_row(row, n, row + 32 * (n + 1), out, 1);
    free(row);
    return 0;
}

/* The batch's rolling digest (docs/zkdv.md section 3) over `rows` rows of `width` bytes (row-major):
 * R_i = sum_{j<w} B[i+j] 257^(w-1-j) mod (2^31 - 1), i = 0 .. width - w, each row's digest H(u32be(R_0)
 * || ...), the result H(rowDigest_0 || ...). Needs 1 <= w <= width. Returns 0, or -1 (no memory). */
/* x mod (2^31 - 1) for any 64-bit x, without a division (the modulus is a Mersenne prime). */
static inline uint64_t mod_m31(uint64_t x) {
    const uint64_t m = 2147483647u;
    x = (x & m) + (x >> 31);  /* < 2^34 */
    x = (x & m) + (x >> 31);  /* < 2^31 + 8 */
    return x >= m ? x - m : x;
}

/* x mod (2^31 - 1) for x < 2^31 (2^31 - 1) + 2^31 (one fold leaves less than twice the modulus): the rolling
 * recurrence's 257 R + B[i+w] + drop[B[i]] < 258 2^31 + 256 is far below that bound. */
static inline uint64_t mod_m31_once(uint64_t x) {
    const uint64_t m = 2147483647u;
    x = (x & m) + (x >> 31);
    return x >= m ? x - m : x;
}

static inline void store32be(uint8_t *p, uint64_t v) {
    uint32_t be = __builtin_bswap32((uint32_t)v);
    memcpy(p, &be, 4);
}

/* The residues of eight whole rows side by side (rt_rolling_root's recurrence, the same values): a fixed lane
 * count, so that the eight states stay in registers and each residue is stored as one 32-bit word. */
static void residues8(const uint8_t *const b[8], size_t count, size_t w, const uint64_t drop[256], uint8_t *vals) {
    uint64_t h[8] = {0};
    for (size_t j = 0; j < w; j++) {
#pragma GCC unroll 8
        for (int l = 0; l < 8; l++) h[l] = mod_m31_once(h[l] * 257 + b[l][j]);
    }
    for (size_t i = 0;; i++) {
#pragma GCC unroll 8
        for (int l = 0; l < 8; l++) store32be(vals + 4 * (l * count + i), h[l]);
        if (i + 1 == count) break;
#pragma GCC unroll 8
        for (int l = 0; l < 8; l++) h[l] = mod_m31_once(h[l] * 257 + b[l][i + w] + drop[b[l][i]]);
    }
}

int rt_rolling_root(const uint8_t *data, size_t rows, size_t width, size_t w, uint8_t *out) {
    const uint64_t mod = 2147483647u, base = 257;
    if (w == 0 || w > width) return -1;
    size_t count = width - w + 1;
    enum { LANES = 8 };  /* rows advanced side by side: independent recurrences, so the CPU overlaps them */
    uint8_t *vals = malloc(4 * count * LANES + 32 * (rows ? rows : 1));
    if (vals == NULL) return -1;
    uint8_t *digests = vals + 4 * count * LANES;
    compress_fn f = pick();
    uint64_t top = 1;  /* 257^(w-1) mod p */
    for (size_t j = 1; j < w; j++) top = mod_m31(top * base);
    uint64_t drop[256];  /* p - (b 257^w mod p): what the byte leaving the window takes away, once shifted */
    for (int b = 0; b < 256; b++) drop[b] = mod - mod_m31(mod_m31((uint64_t)b * top) * base);
    for (size_t r0 = 0; r0 < rows; r0 += LANES) {
        size_t lanes = rows - r0 < LANES ? rows - r0 : LANES;
        uint64_t h[LANES] = {0};
        const uint8_t *b[LANES];
        for (size_t l = 0; l < lanes; l++) b[l] = data + (r0 + l) * width;
        if (lanes == LANES) {
            residues8(b, count, w, drop, vals);
            goto digests;
        }
        for (size_t j = 0; j < w; j++)
            for (size_t l = 0; l < lanes; l++) h[l] = mod_m31(h[l] * base + b[l][j]);
        for (size_t i = 0;; i++) {  /* exact residues in [0, p): R_{i+1} = R_i 257 - B[i] 257^w + B[i+w], < 2^41 */
            for (size_t l = 0; l < lanes; l++) {
                uint8_t *v = vals + 4 * (l * count + i);
                v[0] = (uint8_t)(h[l] >> 24), v[1] = (uint8_t)(h[l] >> 16);
                v[2] = (uint8_t)(h[l] >> 8), v[3] = (uint8_t)h[l];
            }
            if (i + 1 == count) break;
            for (size_t l = 0; l < lanes; l++)
                h[l] = mod_m31(h[l] * base + b[l][i + w] + drop[b[l][i]]);
        }
    digests:;
        size_t l = 0;
        for (; l + 1 < lanes; l += 2) {  /* two rows' digests side by side: SHA-NI overlaps their rounds */
            const uint8_t *d[2] = {vals + 4 * l * count, vals + 4 * (l + 1) * count};
            uint8_t *o[2] = {digests + 32 * (r0 + l), digests + 32 * (r0 + l + 1)};
            sha256_prefixed(f, 2, -1, d, 4 * count, o);
        }
        if (l < lanes) rt_sha256(vals + 4 * l * count, 4 * count, digests + 32 * (r0 + l));
    }
    rt_sha256(digests, 32 * rows, out);
    free(vals);
    return 0;
}

/* The top of the padded tree over the chunk leaves of data (docs/commitments.md sections 1-3):
 * the leaves, then each level up, an odd row (but the top) padded with 32 zero bytes, until one
 * hash is left, written to top. Two scratch rows alternate (a level is never hashed in place:
 * its batches run on several threads). Returns 0, or -1 (nothing written) when nbytes or chunk
 * is 0 or memory runs out. The same bits as top_of_row(chunk_leaves(data)) in merkle.py. */
int rt_tree_top(const uint8_t *data, size_t nbytes, size_t chunk, uint8_t *top, int threads) {
    if (nbytes == 0 || chunk == 0) return -1;
    size_t count = (nbytes + chunk - 1) / chunk;
    size_t cap = 32 * (count + 1);
    uint8_t *a = malloc(cap), *b = malloc(cap / 2 + 64);
    if (a == NULL || b == NULL) {
        free(a);
        free(b);
        return -1;
    }
    rt_chunk_leaves(data, nbytes, chunk, a, threads);
    while (count > 1) {
        if (count % 2) memset(a + 32 * count++, 0, 32);
        rt_parent_row(a, count / 2, b, threads);
        count /= 2;
        uint8_t *t = a;
        a = b;
        b = t;
    }
    memcpy(top, a, 32);
    free(a);
    free(b);
    return 0;
}

/* ---- a zkdv step's close in one call (docs/zkdv.md sections 3 and 7) -------------------- */

/* The batch's rolling digest from its leaves, without a packed copy made by the caller: row r is, leaf by
 * leaf, the row_bytes[l] bytes at data[l] + r * stride[l] (stride 0: a 0-d leaf, its value in every row;
 * a bool leaf's bytes are 0 or 1 already). Needs 1 <= w <= the row width. Returns 0, or -1. */
static int rolling_leaves(size_t nleaves, const uint8_t *const data[], const size_t row_bytes[], const size_t stride[],
                          size_t rows, size_t w, uint8_t *out) {
    size_t width = 0;
    for (size_t l = 0; l < nleaves; l++) width += row_bytes[l];
    if (w == 0 || w > width) return -1;
    uint8_t *packed = malloc(rows && width ? rows * width : 1);
    if (packed == NULL) return -1;
    for (size_t r = 0; r < rows; r++) {
        uint8_t *dst = packed + r * width;
        for (size_t l = 0; l < nleaves; dst += row_bytes[l++]) memcpy(dst, data[l] + r * stride[l], row_bytes[l]);
    }
    int rc = rt_rolling_root(packed, rows, width, w, out);
    free(packed);
    return rc;
}

/* float32 bits and back (the probes' special values are decided on bits, never by a library call) */
static inline uint32_t f32_bits(float v) { uint32_t u; memcpy(&u, &v, 4); return u; }
static inline uint64_t f64_bits(double v) { uint64_t u; memcpy(&u, &v, 8); return u; }
static inline double f64_of(uint64_t u) { double v; memcpy(&v, &u, 8); return v; }

/* One probe value (docs/zkdv.md section 3): the slice x[j], x[j + k], ... (< d) of a row, times its signs,
 * padded with +0 to m values, summed as the RepOps kernel aten.sum.dim_IntList sums (docs/repops.md: each
 * value rounded to the slice's grid, 2^(e-p) with 2^(e-1) <= max |v| < 2^e and p = min(50, 53 - ceil(log2 m)),
 * the grid integers added exactly in float64, the sum rounded once to float32; a slice holding a NaN, or both
 * infinities, sums to the canonical NaN, one holding one infinity to it), then times the column's scale (the
 * RepOps aten.mul.Tensor: IEEE float32, NaN canonical). The bits of the kernels, as zkdv.transcript.ProbeSet
 * computes them (tests/zkdv/test_native_probes.py compares them). */
static float probe_value(const float *x, const float *signs, size_t j, size_t d, size_t k, int p, float scale) {
    const uint32_t canonical_nan = 0x7FC00000u;
    uint32_t max_abs = 0;  /* the largest |v| of the finite values, as float32 bits (monotone for >= 0) */
    int nan = 0, pos_inf = 0, neg_inf = 0;
    for (size_t i = j; i < d; i += k) {
        uint32_t u = f32_bits(signs[i] * x[i]), a = u & 0x7FFFFFFFu;
        if (a > 0x7F800000u) nan = 1;
        else if (a == 0x7F800000u) *(u >> 31 ? &neg_inf : &pos_inf) = 1;
        else if (a > max_abs) max_abs = a;
    }
    float out;
    if (nan || (pos_inf && neg_inf)) {
        memcpy(&out, &canonical_nan, 4);
        return out;
    }
    if (pos_inf || neg_inf) {
        uint32_t inf = pos_inf ? 0x7F800000u : 0xFF800000u;
        memcpy(&out, &inf, 4);
        return out * scale;  /* scale is finite and positive */
    }
    float m;
    memcpy(&m, &max_abs, 4);
    /* c = 1.5 * 2^(e - p + 52) from the exponent field of float64(m): float64(v) + c rounds v to the grid
     * (ties to even) and subtracting c is exact (_fixed.grid_magic; an all-zero slice gets a harmless tiny c) */
    double c = f64_of((f64_bits((double)m) & 0x7FF0000000000000ull) + ((uint64_t)(53 - p) << 52) + (1ull << 51));
    double s = 0.0;
    for (size_t i = j; i < d; i += k) s += ((double)(signs[i] * x[i]) + c) - c;  /* exact: |sum| <= 2^53 grid units */
    out = (float)s * scale;
    if ((f32_bits(out) & 0x7FFFFFFFu) > 0x7F800000u) memcpy(&out, &canonical_nan, 4);
    return out;
}

/* The probes of n float32 leaves of one buffer: leaf q is rows[q] x d[q] values from base + off[q] (in
 * elements), its k[q] columns written rows[q] x k[q], row-major, as float32 bytes (out need not be aligned)
 * after the leaves before it; signs holds d[q] values per leaf and scales k[q], leaf after leaf. */
static void probes(const float *base, size_t n, const int64_t off[], const int64_t rows[], const int64_t d[],
                   const int64_t k[], const float *signs, const float *scales, uint8_t *out) {
    for (size_t q = 0; q < n; q++) {
        size_t dq = (size_t)d[q], kq = (size_t)k[q], m = (dq + kq - 1) / kq;
        int lg = m <= 1 ? 0 : 64 - __builtin_clzll((unsigned long long)(m - 1));  /* ceil(log2 m) */
        int p = 53 - lg < 50 ? 53 - lg : 50;
        for (int64_t r = 0; r < rows[q]; r++) {
            const float *x = base + off[q] + r * (int64_t)dq;
            for (size_t j = 0; j < kq; j++, out += 4) {
                float v = probe_value(x, signs, j, dq, kq, p, scales[j]);
                memcpy(out, &v, 4);
            }
        }
        signs += dq;
        scales += kq;
    }
}

/* The step's update in float32 (docs/zkdv.md section 3): out[i] = post[i] - old[i], IEEE binary32 subtraction
 * rounded to nearest (the RepOps aten.sub.Tensor kernel on float32: torch.sub, then every NaN made the canonical
 * quiet NaN 0x7FC00000), for i < n. */
static void update_f32(size_t n, const float *post, const float *old, float *out) {
    const uint32_t canonical_nan = 0x7FC00000u;
    for (size_t i = 0; i < n; i++) {
        float v = post[i] - old[i];
        if ((f32_bits(v) & 0x7FFFFFFFu) > 0x7F800000u) memcpy(&v, &canonical_nan, 4);
        out[i] = v;
    }
}

/* Everything a zkdv step's close hashes, in one call: first, when nsub > 0, the update (update_f32) of the
 * nsub float32 values at sub_post and sub_old into sub_out (the caller points the update's buffers there);
 * then the tensor commitments of n buffers (as rt_commit_tensors) to out; for each of g groups (post-state, update, batch), whose commitments are the next
 * group_len[i] of those n, the state root over them taken in the order perm lists (indices into the group)
 * with their name hashes (32 bytes each, in that order, group after group), to out + 32 n + 32 i; when
 * nleaves > 0 the batch's rolling digest (rolling_leaves) to out + 32 (n + g); when np > 0 the probes
 * (probes) from probe_base as float32 values after that. Returns 0, or -1 (no memory, a bad window). */
int rt_step_close(size_t n, const uint8_t *const data[], const size_t nbytes[], const uint8_t *headers,
                  const size_t hlen[], int threads, size_t g, const size_t group_len[], const size_t perm[],
                  const uint8_t *name_hashes, size_t nleaves, const uint8_t *const leaf[], const size_t row_bytes[],
                  const size_t stride[], size_t rows, size_t w, const float *probe_base, size_t np,
                  const int64_t poff[], const int64_t prows[], const int64_t pd[], const int64_t pk[],
                  const float *signs, const float *scales, size_t nsub, const float *sub_post, const float *sub_old,
                  float *sub_out, uint8_t *out) {
    if (nsub) update_f32(nsub, sub_post, sub_old, sub_out);
    if (rt_commit_tensors(n, data, nbytes, headers, hlen, out, threads)) return -1;
    uint8_t *roots = out + 32 * n;
    size_t most = 1;
    for (size_t i = 0; i < g; i++) most = group_len[i] > most ? group_len[i] : most;
    uint8_t *ordered = malloc(32 * most);
    if (ordered == NULL) return -1;
    for (size_t i = 0, first = 0; i < g; first += group_len[i], perm += group_len[i], i++) {
        for (size_t e = 0; e < group_len[i]; e++) memcpy(ordered + 32 * e, out + 32 * (first + perm[e]), 32);
        if (rt_state_root(group_len[i], name_hashes, ordered, roots + 32 * i)) {
            free(ordered);
            return -1;
        }
        name_hashes += 32 * group_len[i];
    }
    free(ordered);
    uint8_t *after = roots + 32 * g;
    if (nleaves) {
        if (rolling_leaves(nleaves, leaf, row_bytes, stride, rows, w, after)) return -1;
        after += 32;
    }
    if (np) probes(probe_base, np, poff, prows, pd, pk, signs, scales, after);
    return 0;
}

/* A state's bytes: n buffers back to back into dst (zkdv's post-state copy), or compared with such a copy at
 * ref (1: the same bytes; zkdv's check that nothing changed between steps). */
void rt_gather(size_t n, const uint8_t *const src[], const size_t len[], uint8_t *dst) {
    for (size_t k = 0; k < n; dst += len[k++]) memcpy(dst, src[k], len[k]);
}

int rt_same(size_t n, const uint8_t *const src[], const size_t len[], const uint8_t *ref) {
    for (size_t k = 0; k < n; ref += len[k++])
        if (memcmp(src[k], ref, len[k])) return 0;
    return 1;
}

/* ---- a transcript record's line (docs/zkdv.md section 4) --------------------------------- */

/* The record's line, the standard base64 (RFC 4648 section 4, padded, no line breaks) of its n CBOR bytes and
 * one '\n', written to fd (whole: a short write goes on, an interrupted one again), and the SHA-256 of the CBOR
 * bytes (the next record's prev) into hash. Returns the line's length, or -1 (no memory, or the write failed:
 * errno says why; hash is written either way). */
long rt_write_record(const uint8_t *raw, size_t n, int fd, uint8_t *hash) {
    static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    rt_sha256(raw, n, hash);
    size_t len = 4 * ((n + 2) / 3) + 1;
    uint8_t *line = malloc(len);
    if (line == NULL) {
        errno = ENOMEM;
        return -1;
    }
    uint8_t *o = line;
    size_t i = 0;
    for (; i + 3 <= n; i += 3, o += 4) {
        uint32_t v = (uint32_t)raw[i] << 16 | (uint32_t)raw[i + 1] << 8 | raw[i + 2];
        o[0] = alphabet[v >> 18], o[1] = alphabet[(v >> 12) & 63], o[2] = alphabet[(v >> 6) & 63];
        o[3] = alphabet[v & 63];
    }
    if (i < n) {
        uint32_t v = (uint32_t)raw[i] << 16 | (i + 1 < n ? (uint32_t)raw[i + 1] << 8 : 0);
        o[0] = alphabet[v >> 18], o[1] = alphabet[(v >> 12) & 63];
        o[2] = i + 1 < n ? alphabet[(v >> 6) & 63] : '=';
        o[3] = '=';
        o += 4;
    }
    *o = '\n';
    size_t done = 0;
    while (done < len) {
        ssize_t w = write(fd, line + done, len - done);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            if (w == 0) errno = EIO;
            free(line);
            return -1;
        }
        done += (size_t)w;
    }
    free(line);
    return (long)len;
}
