/* stage_test - pageable cudaMemcpy semantics on the simulated device, run
 * plain and under pincache's staging (the same checks must hold both ways).
 *
 *   stage_test [-e staged|driver|any] [-m MIN] [-M MAX] [TEST...]
 *     -e staged  every pageable copy of at least MIN bytes must reach the
 *                device as pinned copies (the sim counts pageable ones): a
 *                shim that silently stops staging fails here
 *     -e driver  every pageable copy must reach the device as one pageable
 *                copy (plain runs, PINCACHE_STAGE=off)
 *     -m MIN     PINCACHE_STAGE_MIN as the wrapper set it (default 512K)
 *     -M MAX     largest copy (default 256M; smaller under sanitizers)
 *   TESTS: integrity overwrite d2h order threads errors capture fork reset (default all)
 *
 * The sim's device memory is host memory, so a sync copy is checked by
 * reading it right after the call returns; async copies are checked by a
 * "kernel" (simLaunch) queued behind them on the same stream.
 */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "../doubles/sim.h"
#include "../tap.h"

#define KB ((size_t)1 << 10)
#define MB ((size_t)1 << 20)
#define GUARD 64                 /* bytes checked on each side of a copy */

enum expect { EXPECT_ANY, EXPECT_STAGED, EXPECT_DRIVER };
static enum expect expect = EXPECT_ANY;
static size_t stage_min = 512 * KB;
static size_t max_size = 256 * MB;

/* ---- patterns: word j of a buffer filled for tag; any shift or mix-up of
 * pieces, or a stale piece from another tag, changes the bytes */

static uint64_t mix(uint32_t tag, uint64_t j)
{
    uint64_t x = (j + 1) * 0x9E3779B97F4A7C15ull ^ ((uint64_t)tag << 32 | tag);
    x ^= x >> 29;
    x *= 0xBF58476D1CE4E5B9ull;
    return x ^ (x >> 32);
}

static void fill(void *buf, size_t n, uint32_t tag)
{
    unsigned char *p = buf;
    size_t j;

    for (j = 0; j + 8 <= n; j += 8) {
        uint64_t w = mix(tag, j / 8);
        memcpy(p + j, &w, 8);
    }
    if (j < n) {
        uint64_t w = mix(tag, j / 8);
        memcpy(p + j, &w, n - j);
    }
}

/* Index of the first byte that differs from the pattern, or -1. */
static long long mismatch(const void *buf, size_t n, uint32_t tag)
{
    const unsigned char *p = buf;
    size_t j;

    for (j = 0; j + 8 <= n; j += 8) {
        uint64_t w = mix(tag, j / 8), got;
        memcpy(&got, p + j, 8);      /* a plain load, not a memcmp call */
        if (got != w)
            break;
    }
    for (; j < n; j += 8) {
        uint64_t w = mix(tag, j / 8);
        size_t k = n - j < 8 ? n - j : 8;
        if (memcmp(p + j, &w, k) != 0) {
            for (size_t b = 0; b < k; b++)
                if (p[j + b] != ((unsigned char *)&w)[b])
                    return (long long)(j + b);
        }
    }
    return -1;
}

static int guards_ok(const unsigned char *p, size_t off, size_t n, size_t total, unsigned char g)
{
    for (size_t i = 0; i < off; i++)
        if (p[i] != g)
            return 0;
    for (size_t i = off + n; i < total; i++)
        if (p[i] != g)
            return 0;
    return 1;
}

/* ---- "kernels": run on a sim thread, in stream order */

struct kcheck {
    const void *p;
    size_t n;
    uint32_t tag;
    long long bad;
    int ran;
};

static void k_check(void *arg)
{
    struct kcheck *c = arg;
    c->bad = mismatch(c->p, c->n, c->tag);
    c->ran = 1;
}

struct kfill {
    void *p;
    size_t n;
    uint32_t tag;
};

static void k_fill(void *arg)
{
    struct kfill *f = arg;
    fill(f->p, f->n, f->tag);
}

static void k_nop(void *arg)
{
    (void)arg;
}

/* ---- the copy variants */

enum mode { M_SYNC, M_SYNC_PTDS, M_ASYNC0, M_ASYNC_PTSZ0, M_ASYNC_STREAM, M_DEFAULT_SYNC,
            M_DEFAULT_ASYNC, M_COUNT };
static const char *const mode_name[M_COUNT] = {
    "cudaMemcpy", "cudaMemcpy_ptds", "cudaMemcpyAsync(0)", "cudaMemcpyAsync_ptsz(0)",
    "cudaMemcpyAsync(stream)", "cudaMemcpy(Default)", "cudaMemcpyAsync(stream, Default)",
};

static int mode_sync(enum mode m)
{
    return m == M_SYNC || m == M_SYNC_PTDS || m == M_DEFAULT_SYNC;
}

/* The stream the copy is ordered on (for kernels queued around it). */
static cudaStream_t mode_stream(enum mode m, cudaStream_t s)
{
    switch (m) {
    case M_SYNC_PTDS:
    case M_ASYNC_PTSZ0:
        return cudaStreamPerThread;
    case M_ASYNC_STREAM:
    case M_DEFAULT_ASYNC:
        return s;
    default:
        return cudaStreamLegacy;
    }
}

static cudaError_t do_copy(enum mode m, void *dst, const void *src, size_t n, int h2d, cudaStream_t s)
{
    enum cudaMemcpyKind k = h2d ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost;

    switch (m) {
    case M_SYNC:          return cudaMemcpy(dst, src, n, k);
    case M_SYNC_PTDS:     return cudaMemcpy_ptds(dst, src, n, k);
    case M_ASYNC0:        return cudaMemcpyAsync(dst, src, n, k, 0);
    case M_ASYNC_PTSZ0:   return cudaMemcpyAsync_ptsz(dst, src, n, k, 0);
    case M_ASYNC_STREAM:  return cudaMemcpyAsync(dst, src, n, k, s);
    case M_DEFAULT_SYNC:  return cudaMemcpy(dst, src, n, cudaMemcpyDefault);
    case M_DEFAULT_ASYNC: return cudaMemcpyAsync(dst, src, n, cudaMemcpyDefault, s);
    default:              return cudaErrorInvalidValue;
    }
}

static cudaError_t sync_stream(cudaStream_t s)
{
    if (s == cudaStreamPerThread)
        return cudaStreamSynchronize_ptsz(0);
    return cudaStreamSynchronize(s);
}

/* How the sim saw a pageable copy of n bytes: staged copies reach it as
 * pinned copies only.  Counters are global: single-threaded tests only. */
static void check_route(const struct sim_counters *a, const struct sim_counters *b, size_t n,
                        const char *what)
{
    unsigned long long pageable = b->pageable_copies - a->pageable_copies;
    unsigned long long copies = b->copies - a->copies;

    if (expect == EXPECT_ANY)
        return;
    if (n < stage_min || expect == EXPECT_DRIVER) {
        ok(pageable == 1 && copies == 1, "%s: reached the device as one pageable copy", what);
        if (pageable != 1 || copies != 1)
            diag("  pageable copies %llu, copies %llu", pageable, copies);
    } else {
        ok(pageable == 0 && copies >= 1, "%s: staged (pinned copies only)", what);
        if (pageable != 0 || copies < 1)
            diag("  pageable copies %llu, copies %llu", pageable, copies);
    }
}

struct bufs {
    unsigned char *host, *dev;
    size_t cap;
};

static int bufs_get(struct bufs *b, size_t n)
{
    size_t cap = n + 2 * GUARD + 64;

    if (b->cap >= cap)
        return 0;
    free(b->host);
    if (b->dev)
        cudaFree(b->dev);
    b->host = malloc(cap);
    b->dev = NULL;
    b->cap = 0;
    if (!b->host || cudaMalloc((void **)&b->dev, cap) != cudaSuccess)
        return -1;
    b->cap = cap;
    return 0;
}

static void bufs_put(struct bufs *b)
{
    free(b->host);
    if (b->dev)
        cudaFree(b->dev);
    memset(b, 0, sizeof *b);
}

/* One H2D copy of n bytes at offsets ho/do through mode m, checked. */
static void one_h2d(struct bufs *b, enum mode m, cudaStream_t s, size_t n, size_t ho, size_t dof,
                    uint32_t tag)
{
    struct sim_counters c0, c1;
    struct kcheck kc = { b->dev + dof, n, tag, -2, 0 };
    cudaStream_t os = mode_stream(m, s);
    size_t total = dof + n + GUARD;
    char what[160];
    cudaError_t e;
    int synced;

    snprintf(what, sizeof what, "H2D %s %zu bytes (host+%zu, dev+%zu)", mode_name[m], n, ho, dof);
    fill(b->host + ho, n, tag);
    memset(b->dev, 0xA5, total);           /* the device is idle: host-visible in the sim */
    simCounters(&c0);
    e = do_copy(m, b->dev + dof, b->host + ho, n, 1, s);
    if (e == cudaSuccess)
        e = cudaGetLastError();            /* a good copy leaves no error behind */
    if (mode_sync(m)) {
        /* cudaMemcpy returns when the copy is complete. */
        long long bad = mismatch(b->dev + dof, n, tag);
        ok(e == cudaSuccess && bad < 0, "%s: data on the device when it returns", what);
        if (e != cudaSuccess || bad >= 0)
            diag("  error %d, first bad byte %lld", (int)e, bad);
    }
    fill(b->host + ho, n, tag + 1);        /* the caller may overwrite the source at once */
    e = e ? e : simLaunch(os, k_check, &kc, 0);
    synced = sync_stream(os);
    ok(e == cudaSuccess && synced == cudaSuccess && kc.ran && kc.bad < 0,
       "%s: data in stream order", what);
    if (!(e == cudaSuccess && kc.ran && kc.bad < 0))
        diag("  error %d/%d, ran %d, first bad byte %lld", (int)e, synced, kc.ran, kc.bad);
    ok(guards_ok(b->dev, dof, n, total, 0xA5), "%s: nothing written around it", what);
    simCounters(&c1);
    check_route(&c0, &c1, n, what);
}

/* One D2H copy: a kernel fills device memory, the copy follows it in stream
 * order, and the data must be in host memory when the call returns. */
static void one_d2h(struct bufs *b, enum mode m, cudaStream_t s, size_t n, size_t ho, size_t dof,
                    uint32_t tag, unsigned delay_us)
{
    struct sim_counters c0, c1;
    struct kfill kf = { b->dev + dof, n, tag };
    cudaStream_t os = mode_stream(m, s);
    size_t total = ho + n + GUARD;
    long long bad;
    char what[160];
    cudaError_t e;

    snprintf(what, sizeof what, "D2H %s %zu bytes (dev+%zu, host+%zu)", mode_name[m], n, dof, ho);
    memset(b->host, 0x5A, total);
    e = simLaunch(os, k_fill, &kf, delay_us);
    simCounters(&c0);
    e = e ? e : do_copy(m, b->host + ho, b->dev + dof, n, 0, s);
    if (e == cudaSuccess)
        e = cudaGetLastError();            /* a good copy leaves no error behind */
    bad = mismatch(b->host + ho, n, tag);  /* no synchronization: it must be there */
    ok(e == cudaSuccess && bad < 0, "%s: data in host memory when it returns", what);
    if (e != cudaSuccess || bad >= 0)
        diag("  error %d, first bad byte %lld", (int)e, bad);
    ok(guards_ok(b->host, ho, n, total, 0x5A), "%s: nothing written around it", what);
    sync_stream(os);
    simCounters(&c1);
    check_route(&c0, &c1, n, what);
}

/* ---- tests */

static void t_integrity(void)
{
    static const size_t sizes[] = {
        1, 7, 4095, 65536 + 3, 256 * KB + 1, 512 * KB - 1, 512 * KB, 512 * KB + 1, MB - 13,
        MB + 4097, 3 * MB + 5, 5 * MB + 65536 + 11, 16 * MB + 7, 64 * MB + 1, 256 * MB - 3,
    };
    struct bufs b = { 0 };
    cudaStream_t s;
    unsigned i, k = 0;

    if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess) {
        ok(0, "integrity: cudaStreamCreate");
        return;
    }
    for (i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        size_t n = sizes[i];
        /* Every mode at the mid sizes, two per direction elsewhere. */
        int all = n >= 512 * KB - 1 && n <= 6 * MB;
        if (n > max_size)
            continue;
        if (bufs_get(&b, n) != 0) {
            ok(0, "integrity: allocate %zu bytes", n);
            break;
        }
        for (int m = 0; m < M_COUNT; m++, k++) {
            if (!all && m != (int)(i % M_COUNT) && m != (int)((i + 3) % M_COUNT))
                continue;
            one_h2d(&b, (enum mode)m, s, n, (k * 13) % 61, (k * 7) % 59, 100 + k);
            one_d2h(&b, (enum mode)m, s, n, (k * 11) % 63, (k * 5) % 57, 5000 + k, 0);
        }
    }
    bufs_put(&b);
    cudaStreamDestroy(s);
}

/* The source is overwritten the moment an async H2D returns, while the
 * stream is still held back by a slow kernel: the device must get the data
 * as it was at the call.  Several copies back to back go through the ring
 * again and again before any of their DMAs can run. */
static void t_overwrite(void)
{
    enum { ROUNDS = 6 };
    static const size_t sizes[] = { 3 * MB + 17, MB, 12 * MB + 1, 600 * KB };
    struct kcheck kc[ROUNDS];
    unsigned char *dev[ROUNDS], *host;
    cudaStream_t streams[3] = { 0, cudaStreamPerThread, 0 };
    const char *sname[3] = { "stream 0", "per-thread stream", "created stream" };
    size_t maxn = 12 * MB + 1;

    host = malloc(maxn);
    if (!host || cudaStreamCreate(&streams[2]) != cudaSuccess) {
        ok(0, "overwrite: setup");
        free(host);
        return;
    }
    for (int si = 0; si < 3; si++) {
        cudaStream_t s = streams[si];
        int bad = 0, errs = 0, ran = 0;

        for (int r = 0; r < ROUNDS; r++)
            if (cudaMalloc((void **)&dev[r], maxn) != cudaSuccess)
                errs++;
        errs += simLaunch(s, k_nop, NULL, 30000) != cudaSuccess;   /* holds the stream 30 ms */
        for (int r = 0; r < ROUNDS; r++) {
            size_t n = sizes[r % 4];
            fill(host, n, 700 + r);
            if (s == cudaStreamPerThread)
                errs += cudaMemcpyAsync_ptsz(dev[r], host, n, cudaMemcpyHostToDevice, 0) != cudaSuccess;
            else
                errs += cudaMemcpyAsync(dev[r], host, n, cudaMemcpyHostToDevice, s) != cudaSuccess;
            errs += cudaGetLastError() != cudaSuccess;
            fill(host, n, 9999);            /* overwrite at once */
            kc[r] = (struct kcheck){ dev[r], n, 700 + (uint32_t)r, -2, 0 };
        }
        for (int r = 0; r < ROUNDS; r++)
            errs += simLaunch(s, k_check, &kc[r], 0) != cudaSuccess;
        errs += sync_stream(s) != cudaSuccess;
        for (int r = 0; r < ROUNDS; r++) {
            ran += kc[r].ran;
            if (kc[r].bad >= 0) {
                bad++;
                diag("  round %d: first bad byte %lld of %zu", r, kc[r].bad, kc[r].n);
            }
            cudaFree(dev[r]);
        }
        ok(errs == 0 && ran == ROUNDS && bad == 0,
           "overwrite (%s): the device got the source as it was at each call", sname[si]);
    }
    cudaStreamDestroy(streams[2]);
    free(host);
}

/* D2H behind a slow kernel that produces the data: the copy must wait for
 * it and return with the data in place, sync or async, on every stream kind. */
static void t_d2h(void)
{
    struct bufs b = { 0 };
    cudaStream_t s;
    size_t n = max_size < 9 * MB + 3 ? max_size : 9 * MB + 3;

    if (cudaStreamCreate(&s) != cudaSuccess || bufs_get(&b, n) != 0) {
        ok(0, "d2h: setup");
        return;
    }
    /* An H2D on s first: the first D2H (on the legacy stream) finds the
     * ring's slots still busy, for all pincache knows, with another
     * stream's DMA, and asks (stage-inject.sh fails that question). */
    one_h2d(&b, M_ASYNC_STREAM, s, n < MB ? n : MB, 0, 0, 39);
    for (int m = 0; m < M_COUNT; m++)
        one_d2h(&b, (enum mode)m, s, n, 3, 5, 40 + m, 20000);
    bufs_put(&b);
    cudaStreamDestroy(s);
}

/* Stream order around kernels: a slow kernel writes X, the copy writes Y,
 * a kernel after it checks Y (H2D); a slow kernel writes X and a D2H must
 * return X.  Legacy ordering is through a blocking stream, which the legacy
 * default stream waits for. */
static void t_order(void)
{
    size_t n = 4 * MB + 5;
    unsigned char *host = malloc(n), *dev = NULL;
    cudaStream_t blocking;
    struct kfill kx = { NULL, n, 31 };
    struct kcheck kc;
    cudaError_t e;
    long long bad;

    if (!host || cudaMalloc((void **)&dev, n) != cudaSuccess ||
        cudaStreamCreate(&blocking) != cudaSuccess) {
        ok(0, "order: setup");
        free(host);
        return;
    }
    kx.p = dev;

    /* H2D on stream 0 (async) and on the per-thread stream (_ptsz). */
    for (int v = 0; v < 2; v++) {
        cudaStream_t ks = v ? cudaStreamPerThread : 0;
        fill(host, n, 32 + v);
        kc = (struct kcheck){ dev, n, 32 + (uint32_t)v, -2, 0 };
        e = simLaunch(ks, k_fill, &kx, 20000);
        e = e ? e : v ? cudaMemcpyAsync_ptsz(dev, host, n, cudaMemcpyHostToDevice, 0)
                      : cudaMemcpyAsync(dev, host, n, cudaMemcpyHostToDevice, 0);
        e = e ? e : simLaunch(ks, k_check, &kc, 0);
        sync_stream(v ? cudaStreamPerThread : cudaStreamLegacy);
        ok(e == cudaSuccess && kc.ran && kc.bad < 0, "order: kernel, H2D, kernel on %s",
           v ? "the per-thread default stream" : "stream 0");
    }
    /* Sync H2D after a kernel on a blocking stream: legacy stream order. */
    fill(host, n, 34);
    e = simLaunch(blocking, k_fill, &kx, 20000);
    e = e ? e : cudaMemcpy(dev, host, n, cudaMemcpyHostToDevice);
    bad = mismatch(dev, n, 34);
    ok(e == cudaSuccess && bad < 0, "order: kernel on a blocking stream, then cudaMemcpy H2D");
    /* Sync H2D _ptds after a kernel on the per-thread stream. */
    fill(host, n, 35);
    e = simLaunch(cudaStreamPerThread, k_fill, &kx, 20000);
    e = e ? e : cudaMemcpy_ptds(dev, host, n, cudaMemcpyHostToDevice);
    bad = mismatch(dev, n, 35);
    ok(e == cudaSuccess && bad < 0, "order: kernel on the per-thread stream, then cudaMemcpy_ptds H2D");
    /* D2H after kernels: legacy through a blocking stream, per-thread. */
    kx.tag = 36;
    memset(host, 0, n);
    e = simLaunch(blocking, k_fill, &kx, 20000);
    e = e ? e : cudaMemcpy(host, dev, n, cudaMemcpyDeviceToHost);
    ok(e == cudaSuccess && mismatch(host, n, 36) < 0,
       "order: kernel on a blocking stream, then cudaMemcpy D2H");
    kx.tag = 37;
    e = simLaunch(cudaStreamPerThread, k_fill, &kx, 20000);
    e = e ? e : cudaMemcpy_ptds(host, dev, n, cudaMemcpyDeviceToHost);
    ok(e == cudaSuccess && mismatch(host, n, 37) < 0,
       "order: kernel on the per-thread stream, then cudaMemcpy_ptds D2H");
    kx.tag = 38;
    e = simLaunch(0, k_fill, &kx, 20000);
    e = e ? e : cudaMemcpyAsync(host, dev, n, cudaMemcpyDeviceToHost, 0);
    ok(e == cudaSuccess && mismatch(host, n, 38) < 0,
       "order: kernel on stream 0, then cudaMemcpyAsync D2H on stream 0");
    cudaDeviceSynchronize();
    cudaStreamDestroy(blocking);
    cudaFree(dev);
    free(host);
}

/* ---- 8 threads at once, some sharing streams */

struct worker {
    int id;
    cudaStream_t shared;
    int failures, errors, copies;
};

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    size_t maxn = 4 * MB;
    unsigned char *src = malloc(maxn), *dst = malloc(maxn), *dev = NULL;
    cudaStream_t own = 0, s;

    if (!src || !dst || cudaMalloc((void **)&dev, maxn) != cudaSuccess ||
        cudaStreamCreateWithFlags(&own, cudaStreamNonBlocking) != cudaSuccess) {
        w->errors++;
        goto out;
    }
    /* Threads 0-1: own stream; 2-3: one shared stream; 4-5: per-thread
     * default stream (_ptsz, 0); 6-7: the legacy stream (sync calls). */
    s = w->id < 2 ? own : w->id < 4 ? w->shared : w->id < 6 ? cudaStreamPerThread : cudaStreamLegacy;
    for (int i = 0; i < 12; i++) {
        size_t n = 600 * KB + (size_t)((w->id * 7 + i * 13) % 40) * 64 * KB + (size_t)i;
        uint32_t tag = (uint32_t)(w->id * 1000 + i);
        struct kcheck kc = { dev, n, tag, -2, 0 };
        cudaError_t e;

        fill(src, n, tag);
        if (w->id >= 6)
            e = cudaMemcpy(dev, src, n, cudaMemcpyHostToDevice);
        else if (s == cudaStreamPerThread)
            e = cudaMemcpyAsync_ptsz(dev, src, n, cudaMemcpyHostToDevice, 0);
        else
            e = cudaMemcpyAsync(dev, src, n, cudaMemcpyHostToDevice, s);
        fill(src, n, 1);
        e = e ? e : simLaunch(s, k_check, &kc, 0);
        memset(dst, 0, n);
        if (!e) {
            if (w->id >= 6)
                e = cudaMemcpy(dst, dev, n, cudaMemcpyDeviceToHost);
            else if (s == cudaStreamPerThread)
                e = cudaMemcpyAsync_ptsz(dst, dev, n, cudaMemcpyDeviceToHost, 0);
            else
                e = cudaMemcpyAsync(dst, dev, n, cudaMemcpyDeviceToHost, s);
        }
        w->copies += 2;
        if (e) {
            w->errors++;
            continue;
        }
        /* The D2H followed the check kernel in stream order: both done. */
        if (!kc.ran || kc.bad >= 0 || mismatch(dst, n, tag) >= 0)
            w->failures++;
    }
out:
    if (own)
        cudaStreamDestroy(own);
    if (dev)
        cudaFree(dev);
    free(src);
    free(dst);
    return NULL;
}

static void t_threads(void)
{
    enum { NT = 8 };
    struct worker w[NT];
    pthread_t t[NT];
    struct sim_counters c0, c1;
    cudaStream_t shared;
    int failures = 0, errors = 0, copies = 0;

    if (cudaStreamCreate(&shared) != cudaSuccess) {
        ok(0, "threads: setup");
        return;
    }
    simCounters(&c0);
    for (int i = 0; i < NT; i++) {
        w[i] = (struct worker){ i, shared, 0, 0, 0 };
        if (pthread_create(&t[i], NULL, worker_main, &w[i]) != 0)
            w[i].errors++;
    }
    for (int i = 0; i < NT; i++) {
        pthread_join(t[i], NULL);
        failures += w[i].failures;
        errors += w[i].errors;
        copies += w[i].copies;
    }
    cudaDeviceSynchronize();
    simCounters(&c1);
    ok(errors == 0 && failures == 0, "threads: %d copies from %d threads, all correct", copies, NT);
    if (errors || failures)
        diag("  %d errors, %d wrong copies", errors, failures);
    if (expect == EXPECT_STAGED) {
        ok(c1.pageable_copies - c0.pageable_copies < (unsigned long long)copies,
           "threads: some copies were staged (%llu of %d pageable)",
           c1.pageable_copies - c0.pageable_copies, copies);
    } else if (expect == EXPECT_DRIVER) {
        ok(c1.pageable_copies - c0.pageable_copies == (unsigned long long)copies,
           "threads: every copy went to the driver");
    }
    cudaStreamDestroy(shared);
}

/* ---- errors and the last-error state match the runtime's */

static void t_errors(void)
{
    size_t n = 2 * MB + 3;
    unsigned char *host = malloc(n), *dev = NULL, *pinned = NULL;
    cudaStream_t dead;
    cudaError_t small, big, last_small, last_big;

    if (!host || cudaMalloc((void **)&dev, n) != cudaSuccess) {
        ok(0, "errors: setup");
        free(host);
        return;
    }
    fill(host, n, 77);
    /* No error pending: a staged copy leaves none. */
    ok(cudaMemcpy(dev, host, n, cudaMemcpyHostToDevice) == cudaSuccess &&
       cudaGetLastError() == cudaSuccess, "errors: a clean copy leaves no error behind");
    ok(cudaMemcpyAsync(host, dev, n, cudaMemcpyDeviceToHost, 0) == cudaSuccess &&
       cudaPeekAtLastError() == cudaSuccess && mismatch(host, n, 77) < 0,
       "errors: a clean D2H leaves no error behind");
    /* An error pending before the copy is still there after it. */
    ok(cudaSetDevice(9999) != cudaSuccess, "errors: provoke cudaErrorInvalidDevice");
    ok(cudaMemcpy(dev, host, n, cudaMemcpyHostToDevice) == cudaSuccess,
       "errors: copy with an error pending");
    is_int(cudaGetLastError(), cudaErrorInvalidDevice, "errors: the pending error survives the copy");
    is_int(cudaGetLastError(), cudaSuccess, "errors: and is then cleared");

    /* A destroyed stream: the same error as the runtime gives a small
     * (never staged) copy, and the same last error. */
    if (cudaStreamCreate(&dead) == cudaSuccess && cudaStreamDestroy(dead) == cudaSuccess) {
        small = cudaMemcpyAsync(dev, host, 16, cudaMemcpyHostToDevice, dead);
        last_small = cudaGetLastError();
        big = cudaMemcpyAsync(dev, host, n, cudaMemcpyHostToDevice, dead);
        last_big = cudaGetLastError();
        ok(small != cudaSuccess && big == small && last_big == last_small,
           "errors: copy on a destroyed stream: %d (small copy: %d), last error %d (%d)",
           (int)big, (int)small, (int)last_big, (int)last_small);
        big = cudaMemcpyAsync(host, dev, n, cudaMemcpyDeviceToHost, dead);
        last_big = cudaGetLastError();
        ok(big == small && last_big == last_small, "errors: D2H on a destroyed stream: %d", (int)big);
    }
    /* NULL host pointer. */
    small = cudaMemcpy(dev, NULL, 16, cudaMemcpyHostToDevice);
    last_small = cudaGetLastError();
    big = cudaMemcpy(dev, NULL, n, cudaMemcpyHostToDevice);
    last_big = cudaGetLastError();
    ok(small != cudaSuccess && big == small && last_big == last_small,
       "errors: NULL source: %d (small copy: %d)", (int)big, (int)small);
    /* Pinned host memory is not staged, and still correct. */
    if (cudaHostAlloc((void **)&pinned, n, 0) == cudaSuccess) {
        struct sim_counters c0, c1;
        fill(pinned, n, 78);
        simCounters(&c0);
        ok(cudaMemcpy(dev, pinned, n, cudaMemcpyHostToDevice) == cudaSuccess &&
           mismatch(dev, n, 78) < 0, "errors: pinned source copied");
        simCounters(&c1);
        ok(c1.copies - c0.copies == 1 && c1.pageable_copies == c0.pageable_copies,
           "errors: pinned source went to the runtime as one pinned copy");
        cudaFreeHost(pinned);
    }
    /* Device to device with Default: not staged, correct. */
    {
        unsigned char *dev2 = NULL;
        if (cudaMalloc((void **)&dev2, n) == cudaSuccess) {
            ok(cudaMemcpy(dev2, dev, n, cudaMemcpyDefault) == cudaSuccess && mismatch(dev2, n, 78) < 0,
               "errors: device-to-device with cudaMemcpyDefault");
            cudaFree(dev2);
        }
    }
    cudaFree(dev);
    free(host);
}

/* ---- a pageable copy into a capturing stream is left to the runtime */

static void t_capture(void)
{
    size_t n = 2 * MB;
    unsigned char *host = malloc(n), *dev = NULL;
    enum cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
    struct sim_counters c0, c1;
    cudaStream_t s;
    cudaGraph_t g = NULL;
    cudaError_t e, e2;

    if (!host || cudaMalloc((void **)&dev, n) != cudaSuccess || cudaStreamCreate(&s) != cudaSuccess) {
        ok(0, "capture: setup");
        free(host);
        return;
    }
    fill(host, n, 55);
    simCounters(&c0);
    e = cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed);
    if (e != cudaSuccess) {
        skip(3, "capture: cudaStreamBeginCapture not available");
    } else {
        e = cudaMemcpyAsync(dev, host, n, cudaMemcpyHostToDevice, s);
        e2 = cudaStreamIsCapturing(s, &st);
        ok(e2 == cudaSuccess && st == cudaStreamCaptureStatusActive,
           "capture: the capture is still valid after a pageable copy (copy: %d)", (int)e);
        e2 = cudaStreamEndCapture(s, &g);
        ok(e2 == cudaSuccess, "capture: cudaStreamEndCapture: %d", (int)e2);
        simCounters(&c1);
        ok(c1.copies == c0.copies, "capture: nothing was executed during the capture");
    }
    cudaGetLastError();
    cudaStreamDestroy(s);
    cudaFree(dev);
    free(host);
}

/* ---- fork while another thread is staging: the child passes through and
 * never waits for the parent's copy threads or locks */

static volatile int fork_stop;

static void *copier_main(void *arg)
{
    size_t n = 8 * MB;
    unsigned char *host = malloc(n), *dev = NULL;
    (void)arg;
    if (host && cudaMalloc((void **)&dev, n) == cudaSuccess) {
        fill(host, n, 3);
        while (!__atomic_load_n(&fork_stop, __ATOMIC_ACQUIRE)) {
            cudaMemcpy(dev, host, n, cudaMemcpyHostToDevice);
            cudaMemcpy(host, dev, n, cudaMemcpyDeviceToHost);
        }
        cudaFree(dev);
    }
    free(host);
    return NULL;
}

static int wait_bounded(pid_t pid)
{
    struct timespec ms10 = { 0, 10 * 1000 * 1000 };
    int status;

    for (int i = 0; i < 1000; i++) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid)
            return status;
        if (r < 0)
            return -2;
        nanosleep(&ms10, NULL);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    return -1;
}

static void t_fork(void)
{
    size_t n = 2 * MB;
    unsigned char *host = malloc(n), *dev = NULL;
    pthread_t t;
    int hung = 0, bad = 0;
    cudaError_t want;

    if (!host || cudaMalloc((void **)&dev, n) != cudaSuccess) {
        ok(0, "fork: setup");
        free(host);
        return;
    }
    memset(host, 1, n);
    if (pthread_create(&t, NULL, copier_main, NULL) != 0) {
        ok(0, "fork: thread");
        return;
    }
    for (int i = 0; i < 5; i++) {
        struct timespec ms3 = { 0, 3 * 1000 * 1000 };
        pid_t pid;
        int st;

        nanosleep(&ms3, NULL);
        pid = fork();
        if (pid == 0) {
            /* What the runtime answers a fork child (the sim, like CUDA,
             * refuses), staged size or not. */
            cudaError_t small = cudaMemcpy(dev, host, 16, cudaMemcpyHostToDevice);
            cudaError_t big = cudaMemcpyAsync(dev, host, n, cudaMemcpyHostToDevice, 0);
            _exit(big == small ? 0 : 1);
        }
        if (pid < 0) {
            bad++;
            continue;
        }
        st = wait_bounded(pid);
        if (st == -1)
            hung++;
        else if (st < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
            bad++;
    }
    __atomic_store_n(&fork_stop, 1, __ATOMIC_RELEASE);
    pthread_join(t, NULL);
    want = cudaSuccess;
    ok(hung == 0, "fork: children of a staging process never hang (%d hung)", hung);
    ok(bad == 0, "fork: a child's pageable copy gets the runtime's answer (%d differ)", bad);
    ok(cudaMemcpy(dev, host, n, cudaMemcpyHostToDevice) == want, "fork: the parent still copies");
    cudaFree(dev);
    free(host);
}

/* ---- cudaDeviceReset between staged copies: staging carries on, correct */

static void t_reset(void)
{
    struct bufs b = { 0 };
    cudaStream_t s;

    for (int round = 0; round < 2; round++) {
        if (bufs_get(&b, 3 * MB + 5) != 0 || cudaStreamCreate(&s) != cudaSuccess) {
            ok(0, "reset: setup");
            return;
        }
        one_h2d(&b, M_ASYNC_STREAM, s, 3 * MB + 5, 1, 2, 900 + round);
        one_d2h(&b, M_SYNC, s, 3 * MB + 5, 3, 4, 950 + round, 0);
        cudaStreamDestroy(s);
        bufs_put(&b);
        ok(cudaDeviceReset() == cudaSuccess && cudaGetLastError() == cudaSuccess,
           "reset: cudaDeviceReset after staged copies");
    }
}

/* ---- main */

static size_t parse_size(const char *s)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end == 'K' || *end == 'k')
        v <<= 10;
    else if (*end == 'M' || *end == 'm')
        v <<= 20;
    else if (*end == 'G' || *end == 'g')
        v <<= 30;
    return (size_t)v;
}

int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        void (*fn)(void);
    } tests[] = {
        { "integrity", t_integrity }, { "overwrite", t_overwrite }, { "d2h", t_d2h },
        { "order", t_order },         { "threads", t_threads },     { "errors", t_errors },
        { "capture", t_capture },     { "fork", t_fork },           { "reset", t_reset },
    };
    int c, any = 0;

    while ((c = getopt(argc, argv, "e:m:M:")) != -1) {
        switch (c) {
        case 'e':
            expect = !strcmp(optarg, "staged") ? EXPECT_STAGED
                   : !strcmp(optarg, "driver") ? EXPECT_DRIVER : EXPECT_ANY;
            break;
        case 'm':
            stage_min = parse_size(optarg);
            break;
        case 'M':
            max_size = parse_size(optarg);
            break;
        default:
            fprintf(stderr, "usage: stage_test [-e staged|driver|any] [-m MIN] [-M MAX] [TEST...]\n");
            return 2;
        }
    }
    for (unsigned i = 0; i < sizeof tests / sizeof tests[0]; i++) {
        int run = optind >= argc;
        for (int a = optind; a < argc; a++)
            run |= !strcmp(argv[a], tests[i].name);
        if (run) {
            diag("%s", tests[i].name);
            tests[i].fn();
            any = 1;
        }
    }
    if (!any)
        ok(0, "no such test");
    return done_testing();
}
