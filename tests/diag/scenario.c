/* scenario - scripted CUDA programs for the diagnostics tests.  Each one
 * does a known set of calls on the simulated device and prints what the
 * exit report must then say, one line per value:
 *
 *     expect PATH[+PATH...] VALUE
 *
 * PATH is a dotted path into the JSON report (apis.cudaFreeHost.synced);
 * several joined by '+' are added up.  The values come from the program's
 * own tallies and from the sim's counters (what reached the "driver"), never
 * from pincache.  diag.sh compares them with the report (jcheck expect).
 *
 *   scenario counts cache|observe [SCALE]   every accounted API, once idle, once busy
 *   scenario threads THREADS PAIRS [WAVES]  alloc/free pairs and stream syncs on threads
 *   scenario fork [cuda]                    the parent's counts are its own; the child
 *                                           reports only if it made CUDA calls
 *   scenario exit-thread                    exit() from a second thread mid-run
 *   scenario bench PAIRS                    time alloc/free pairs (overhead measurement)
 *   scenario syncwait ROUNDS                synchronizing calls waiting for a short kernel,
 *                                           and idle
 *   scenario kinds                          small copies' host memory kinds, told for the
 *                                           report alone, and which of them waited
 *   scenario hitslow PAIRS                  hit pairs (timed by sample: diag.h), then a
 *                                           free that trims while a kernel runs (run with
 *                                           PINCACHE_MAX_CACHED=1M): its whole wait counted
 *
 * cudaStreamSynchronize (and _ptsz) and cudaDeviceSynchronize are told by
 * their duration (pincache(7), Sync attribution): an idle one that took
 * SYNC_WAITED_NS or more here may count as waited (on a loaded machine), so
 * their synced count is expected in a range, "expect PATH LOW HIGH", exact
 * whenever no idle one was that slow.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "../doubles/sim.h"

#define MIB (1ull << 20)
#define KERNEL_US 40000          /* long enough that "busy at entry" is never a race */
#define WAITED_NS 10000000ull    /* a call that took this long waited for the kernel */
#define SYNC_WAITED_NS 100000ull /* pincache's rule (diag.c, PC_SYNC_WAITED_NS) */
#define SHORT_US 2500            /* syncwait's kernel */
#define SHORT_STALL_NS 2000000ull   /* ... each sync that waited for it stalled at least this long */

static int errors;

#define CK(call)                                                                    \
    do {                                                                            \
        cudaError_t ck_ = (call);                                                   \
        if (ck_ != cudaSuccess) {                                                   \
            fprintf(stderr, "%s:%d: %s -> %d\n", __FILE__, __LINE__, #call, (int)ck_); \
            errors++;                                                               \
        }                                                                           \
    } while (0)

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void nop(void *arg)
{
    (void)arg;
}

static void kernel(cudaStream_t s)
{
    CK(simLaunch(s, nop, NULL, KERNEL_US));
}

/* Wait until the device is idle without an accounted call. */
static void drain(void)
{
    while (!simDeviceIdle())
        usleep(200);
}

static void expect(const char *path, unsigned long long v)
{
    printf("expect %s %llu\n", path, v);
}

static void expect_range(const char *path, unsigned long long lo, unsigned long long hi)
{
    if (hi > lo)
        printf("expect %s %llu %llu\n", path, lo, hi);
    else
        expect(path, lo);
}

/* What the program did, per API (keys as in the report).  maybe: calls
 * pincache may count as synced or not (idle ones of the timed APIs that
 * took SYNC_WAITED_NS or more). */
struct tally {
    const char *key;
    unsigned long long calls, bytes, synced, maybe;
};

static struct tally T[] = {
    { .key = "cudaHostAlloc" }, { .key = "cudaMallocHost" }, { .key = "cudaFreeHost" },
    { .key = "cudaHostRegister" }, { .key = "cudaHostUnregister" }, { .key = "cudaMemcpy" },
    { .key = "cudaMemcpyAsync" }, { .key = "cudaMemcpyOther" },
    { .key = "cudaStreamSynchronize" }, { .key = "cudaDeviceSynchronize" }, { .key = "cudaFree" },
};
enum { HA, MH, FH, REG, UNREG, MC, MCA, MCO, SS, DS, DF, NT };

static struct { const char *key; unsigned long long calls, bytes, timed; } K[] = {
    { "h2d_pageable", 0, 0, 0 }, { "h2d_pinned", 0, 0, 0 },
    { "d2h_pageable", 0, 0, 0 }, { "d2h_pinned", 0, 0, 0 },
};
enum { H2D_PAGE, H2D_PIN, D2H_PAGE, D2H_PIN };

static unsigned long long device_waits(void)
{
    struct sim_counters c;
    simCounters(&c);
    return c.device_waits;
}

/* Whether an idle call that took ns is one pincache may count as synced:
 * one it tells by its duration (the synchronizing calls, and copies of
 * fewer than COPY_PROBE_MIN bytes, against SYNC_WAITED_NS plus 1 ns a
 * byte: diag.c) that took that long, on a loaded machine. */
#define COPY_PROBE_MIN (1ull << 20)   /* diag.c, PC_COPY_PROBE_MIN */
static int idle_may_count(int t, unsigned long long bytes, uint64_t ns)
{
    if (t == SS || t == DS)
        return ns >= SYNC_WAITED_NS;
    return (t == MC || t == MCA) && bytes < COPY_PROBE_MIN && ns >= SYNC_WAITED_NS + bytes;
}

static void idle_took(int t, unsigned long long bytes, uint64_t t0)
{
    if (idle_may_count(t, bytes, now_ns() - t0))
        T[t].maybe++;
}

/* Calls that wait for the whole device: the sim says whether it waited. */
#define DEVICE_WAIT(t, call)                                                        \
    do {                                                                            \
        unsigned long long w0_ = device_waits(), w_;                                \
        uint64_t t0_ = now_ns();                                                    \
        CK(call);                                                                   \
        T[t].calls++;                                                               \
        T[t].synced += w_ = device_waits() - w0_;                                   \
        if (!w_)                                                                    \
            idle_took(t, 0, t0_);                                                   \
    } while (0)

/* Calls that wait for a stream.  waits_: known by construction - 1 right
 * after a kernel was queued on the stream the call waits for (KERNEL_US is
 * far longer than the gap), 0 after drain().  (Timing the call instead made
 * the expectation flaky on a loaded machine: an idle-device call can take
 * long there too.)  The timing still guards the construction: a call
 * expected to wait that returned at once means the kernel was not in
 * flight, which is reported as an error. */
#define STREAM_WAIT(t, bytes_, waits_, call)                                        \
    do {                                                                            \
        uint64_t t0_ = now_ns();                                                    \
        CK(call);                                                                   \
        T[t].calls++;                                                               \
        T[t].bytes += (bytes_);                                                     \
        T[t].synced += (waits_);                                                    \
        if (!(waits_))                                                              \
            idle_took(t, (bytes_), t0_);                                            \
        if ((waits_) && now_ns() - t0_ < WAITED_NS) {                               \
            fprintf(stderr, "scenario: %s returned at once: nothing to wait for\n",  \
                    #call);                                                         \
            errors++;                                                               \
        }                                                                           \
    } while (0)

static void copy(int t, int kind, void *dst, const void *src, size_t n, enum cudaMemcpyKind k,
                 cudaStream_t s, int timed, int waits)
{
    if (t == MC)
        STREAM_WAIT(MC, n, waits, cudaMemcpy(dst, src, n, k));
    else
        STREAM_WAIT(MCA, n, waits, cudaMemcpyAsync(dst, src, n, k, s));
    if (kind >= 0) {
        K[kind].calls++;
        K[kind].bytes += n;
        K[kind].timed += timed ? n : 0;
    }
}

static int counts(int observe, int scale)
{
    struct sim_counters c0, c1;
    unsigned long long busy_frees = 0, allocs = 0, frees = 0, freed_bytes = 0;
    char *hbuf, *dbuf = NULL, *reg, *pbuf = NULL, path[128];
    cudaStream_t s;
    void *p, *d = NULL;
    int i;

    simCounters(&c0);
    /* Pairs on an idle device: two size classes. */
    for (i = 0; i < 10 * scale; i++) {
        CK(cudaHostAlloc(&p, MIB, 0));
        T[HA].calls++, T[HA].bytes += MIB, allocs++;
        CK(cudaFreeHost(p));
        T[FH].calls++, frees++, freed_bytes += MIB;
    }
    for (i = 0; i < 6 * scale; i++) {
        CK(cudaMallocHost(&p, 256 << 10));
        T[MH].calls++, T[MH].bytes += 256 << 10, allocs++;
        CK(cudaFreeHost(p));
        T[FH].calls++, frees++, freed_bytes += 256 << 10;
    }
    /* Frees while a kernel runs; then wait for it.  In cache mode the free
     * returns at once and the kernel is still running: it would have waited. */
    for (i = 0; i < 4; i++) {
        CK(cudaHostAlloc(&p, MIB, 0));
        T[HA].calls++, T[HA].bytes += MIB, allocs++;
        kernel(cudaStreamLegacy);
        CK(cudaFreeHost(p));
        T[FH].calls++, frees++, freed_bytes += MIB;
        busy_frees += !simDeviceIdle();
        DEVICE_WAIT(DS, cudaDeviceSynchronize());
    }
    DEVICE_WAIT(DS, cudaDeviceSynchronize());           /* idle */

    /* Stream syncs: busy, idle, and the per-thread stream. */
    CK(cudaStreamCreate(&s));
    kernel(s);
    STREAM_WAIT(SS, 0, 1, cudaStreamSynchronize(s));
    STREAM_WAIT(SS, 0, 0, cudaStreamSynchronize(s));
    kernel(cudaStreamPerThread);
    STREAM_WAIT(SS, 0, 1, cudaStreamSynchronize_ptsz(0));

    /* Device memory frees wait for the device. */
    CK(cudaMalloc(&d, MIB));
    kernel(s);
    DEVICE_WAIT(DF, cudaFree(d));
    DEVICE_WAIT(DF, cudaFree(NULL));

    /* Registration: the unregister waits for the device. */
    reg = aligned_alloc(4096, 2 * MIB);
    if (!reg)
        return 1;
    CK(cudaHostRegister(reg, 2 * MIB, 0));
    T[REG].calls++, T[REG].bytes += 2 * MIB;
    kernel(s);
    DEVICE_WAIT(UNREG, cudaHostUnregister(reg));
    T[UNREG].bytes += 2 * MIB;
    free(reg);

    /* Copies of every kind, each on an idle device (no wait to attribute)
     * but one. */
    hbuf = calloc(1, 4 * MIB);
    CK(cudaMalloc((void **)&dbuf, 4 * MIB));
    CK(cudaHostAlloc((void **)&pbuf, 4 * MIB, 0));
    T[HA].calls++, T[HA].bytes += 4 * MIB, allocs++;
    if (!hbuf || !dbuf || !pbuf)
        return 1;
    for (i = 0; i < 3 * scale; i++)
        drain(), copy(MC, H2D_PAGE, dbuf, hbuf, MIB, cudaMemcpyHostToDevice, 0, 1, 0);
    for (i = 0; i < 2; i++)
        drain(), copy(MCA, H2D_PIN, dbuf, pbuf, 2 * MIB, cudaMemcpyHostToDevice, s, 0, 0);
    for (i = 0; i < 2; i++)
        drain(), copy(MC, D2H_PAGE, hbuf, dbuf, 512 << 10, cudaMemcpyDeviceToHost, 0, 1, 0);
    drain(), copy(MCA, D2H_PIN, pbuf, dbuf, 3 * MIB, cudaMemcpyDeviceToHost, s, 0, 0);
    drain(), copy(MCA, D2H_PAGE, hbuf, dbuf, 100000, cudaMemcpyDeviceToHost, s, 1, 0); /* returns when done */
    drain(), copy(MC, H2D_PAGE, dbuf, hbuf, 1000, cudaMemcpyDefault, 0, 1, 0);
    drain(), copy(MC, -1, dbuf, dbuf + 2 * MIB, 100, cudaMemcpyDeviceToDevice, 0, 1, 0);
    drain();
    STREAM_WAIT(SS, 0, 0, cudaStreamSynchronize(s));
    kernel(cudaStreamLegacy);                              /* a copy that waits for it */
    copy(MC, H2D_PAGE, dbuf, hbuf, 4096, cudaMemcpyHostToDevice, 0, 1, 1);
    CK(cudaMemcpy2D(dbuf, 1024, hbuf, 1024, 1024, 4, cudaMemcpyHostToDevice));
    T[MCO].calls++, T[MCO].bytes += 4096;
    CK(cudaFreeHost(pbuf));
    T[FH].calls++, frees++, freed_bytes += 4 * MIB;
    DEVICE_WAIT(DF, cudaFree(dbuf));
    CK(cudaStreamDestroy(s));
    free(hbuf);
    simCounters(&c1);

    fprintf(stderr, "scenario: %d errors; sim: %llu real allocs, %llu real frees (%llu waited), %llu pageable copies\n",
            errors, c1.host_allocs - c0.host_allocs, c1.host_frees - c0.host_frees,
            c1.host_frees_waited - c0.host_frees_waited, c1.pageable_copies - c0.pageable_copies);
    for (i = 0; i < NT; i++) {
        snprintf(path, sizeof path, "apis.%s.calls", T[i].key);
        expect(path, T[i].calls);
        if (i != FH || observe) {
            snprintf(path, sizeof path, "apis.%s.bytes", T[i].key);
            expect(path, i == FH ? freed_bytes : T[i].bytes);
        }
        if (i != FH) {
            snprintf(path, sizeof path, "apis.%s.synced", T[i].key);
            expect_range(path, T[i].synced, T[i].synced + T[i].maybe);
        }
    }
    for (i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "copies.%s.calls", K[i].key);
        expect(path, K[i].calls);
        snprintf(path, sizeof path, "copies.%s.bytes", K[i].key);
        expect(path, K[i].bytes);
        snprintf(path, sizeof path, "copies.%s.timed_bytes", K[i].key);
        expect(path, K[i].timed);
    }
    expect("stats.memcpy_calls", T[MC].calls + T[MCA].calls + T[MCO].calls);
    expect("stats.registered_bytes_peak", 2 * MIB);
    expect("stats.registered_bytes", 0);
    expect("apis.cudaHostAlloc.calls+apis.cudaMallocHost.calls", allocs);
    if (observe) {
        /* Every call reached the driver; the frees that waited are the sim's. */
        expect("apis.cudaHostAlloc.real_calls+apis.cudaMallocHost.real_calls", c1.host_allocs - c0.host_allocs);
        expect("apis.cudaHostAlloc.hits+apis.cudaMallocHost.hits+apis.cudaFreeHost.hits", 0);
        expect("apis.cudaFreeHost.real_calls", c1.host_frees - c0.host_frees);
        expect("apis.cudaFreeHost.synced", c1.host_frees_waited - c0.host_frees_waited);
        expect("stats.would_sync", c1.host_frees_waited - c0.host_frees_waited);
        expect("stats.would_sync", 4);                   /* the 4 busy frees, no other */
        /* Sequential pairs: each size class misses once (1 MiB, 256 KiB, 4 MiB). */
        expect("stats.predict_hits", allocs - 3);
        expect("stats.predict_kept", frees);
        expect("stats.live_bytes_peak", 4 * MIB);
        expect("stats.live_bytes", 0);
    } else {
        /* A miss is a real allocation the driver saw, or a fast block
         * (PINCACHE_FAST_ALLOC): a registration the program did not make
         * (it made one); everything else hit. */
        unsigned long long fast = c1.host_registers - c0.host_registers - 1;
        /* Before its first fast block pincache makes a 4 KiB witness block
         * (stage/fastalloc.c), a real allocation that is not the program's. */
        unsigned long long real = c1.host_allocs - c0.host_allocs - (fast > 0);
        unsigned long long misses = real + fast;
        expect("apis.cudaHostAlloc.real_calls+apis.cudaMallocHost.real_calls", real);
        expect("stats.fast_alloc_calls", fast);
        expect("apis.cudaHostAlloc.hits+apis.cudaMallocHost.hits", allocs - misses);
        expect("stats.alloc_hits", allocs - misses);
        expect("stats.alloc_misses", misses);
        expect("apis.cudaFreeHost.hits", frees);
        expect("apis.cudaFreeHost.real_calls", 0);
        expect("apis.cudaFreeHost.synced", 0);
        expect("apis.cudaFreeHost.sync_avoided", busy_frees);
        expect("stats.syncs_avoided", busy_frees);
        expect("stats.syncs_avoided", 4);
        expect("stats.predict_hits", 0);
        /* Everything freed: nothing live at exit, a block a thread parked
         * included (core/park.h: idle by the report). */
        expect("stats.live_bytes", 0);
    }
    return errors != 0;
}

/* --- syncwait: synchronizing calls told by their duration --------------- */

static cudaStream_t sw_stream;
static unsigned long long sw_stall_lo[NT], sw_stall_hi[NT];

static cudaError_t sw_stream_sync(void)
{
    return cudaStreamSynchronize(sw_stream);
}

static cudaError_t sw_ptsz_sync(void)
{
    return cudaStreamSynchronize_ptsz(0);
}

/* One synchronizing call of tally t (SS or DS).  busy: right after a
 * SHORT_US kernel queued on stream on; first: the thread's first call of
 * its kind, which pincache asks about instead of timing it, so an idle one
 * never counts however long it takes (SIM_CONTEXT_US).  A busy call made
 * late (the kernel may have ended) or an idle one that took
 * SYNC_WAITED_NS may count either way; the stall lies between the kernel's
 * SHORT_STALL_NS per sure wait and the time of the calls that may count. */
static void sw_call(int t, cudaError_t (*sync)(void), cudaStream_t on, int busy, int first)
{
    uint64_t t0, t1, launched = now_ns();
    int sure;

    if (busy)
        CK(simLaunch(on, nop, NULL, SHORT_US));
    t0 = now_ns();
    CK(sync());
    t1 = now_ns();
    T[t].calls++;
    sure = busy && t0 - launched < (SHORT_US * 1000ull - SHORT_STALL_NS) / 2;
    if (busy && t1 - launched < SHORT_US * 1000ull) {
        fprintf(stderr, "scenario: %s returned before its kernel ended\n", T[t].key);
        errors++;
    }
    if (sure) {
        T[t].synced++;
        sw_stall_lo[t] += SHORT_STALL_NS;
    } else if (busy || (!first && t1 - t0 >= SYNC_WAITED_NS)) {
        T[t].maybe++;
    } else {
        return;
    }
    sw_stall_hi[t] += t1 - t0;
}

/* The process's first call is a cudaDeviceSynchronize (idle: with
 * SIM_CONTEXT_US it is long), then each kind's first call on a created
 * stream, then ROUNDS rounds of each kind busy and idle. */
static int syncwait(int rounds)
{
    char path[128];

    sw_call(DS, cudaDeviceSynchronize, NULL, 0, 1);
    CK(cudaStreamCreate(&sw_stream));
    sw_call(SS, sw_stream_sync, NULL, 0, 1);
    sw_call(SS, sw_ptsz_sync, NULL, 0, 1);
    for (int i = 0; i < rounds; i++) {
        sw_call(SS, sw_stream_sync, sw_stream, 1, 0);
        sw_call(SS, sw_stream_sync, NULL, 0, 0);
        sw_call(SS, sw_ptsz_sync, cudaStreamPerThread, 1, 0);
        sw_call(SS, sw_ptsz_sync, NULL, 0, 0);
        sw_call(DS, cudaDeviceSynchronize, sw_stream, 1, 0);
        sw_call(DS, cudaDeviceSynchronize, NULL, 0, 0);
    }
    CK(cudaStreamDestroy(sw_stream));
    for (int t = SS; t <= DS; t++) {
        snprintf(path, sizeof path, "apis.%s.calls", T[t].key);
        expect(path, T[t].calls);
        snprintf(path, sizeof path, "apis.%s.synced", T[t].key);
        expect_range(path, T[t].synced, T[t].synced + T[t].maybe);
        snprintf(path, sizeof path, "apis.%s.stall_ns", T[t].key);
        expect_range(path, sw_stall_lo[t], sw_stall_hi[t]);
    }
    return errors != 0;
}

/* --- threads: exact call counts under concurrency ---------------------- *
 * THREADS workers, each PAIRS alloc/free pairs around a kernel and a sync,
 * then WAVES waves of THREADS threads of PAIRS pairs with the device idle. */

static int pairs_per_thread;

/* Pairs with nothing on the device: each freed block is parked with its
 * thread (core/park.h), and each thread's exit gives it back; the next
 * wave's threads (whose thread-local storage the C library reuses) park
 * their own. */
static void *parker(void *arg)
{
    void *p;

    (void)arg;
    for (int i = 0; i < pairs_per_thread; i++) {
        CK(cudaHostAlloc(&p, 65536 * (1 + i % 3), 0));
        CK(cudaFreeHost(p));
    }
    return NULL;
}

static void *worker(void *arg)
{
    cudaStream_t s;
    void *p;

    (void)arg;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    for (int i = 0; i < pairs_per_thread; i++) {
        CK(cudaHostAlloc(&p, 65536 * (1 + i % 3), 0));
        CK(simLaunch(s, nop, NULL, 50));
        CK(cudaFreeHost(p));
        CK(cudaStreamSynchronize(s));
    }
    CK(cudaStreamDestroy(s));
    return NULL;
}

static int threads(int n, int pairs, int waves)
{
    pthread_t th[64];
    unsigned long long bytes = 0;

    pairs_per_thread = pairs;
    if (n > 64)
        n = 64;
    for (int i = 0; i < n; i++)
        pthread_create(&th[i], NULL, worker, NULL);
    for (int i = 0; i < n; i++)
        pthread_join(th[i], NULL);
    for (int wave = 0; wave < waves; wave++) {
        for (int i = 0; i < n; i++)
            pthread_create(&th[i], NULL, parker, NULL);
        for (int i = 0; i < n; i++)
            pthread_join(th[i], NULL);
    }
    for (int i = 0; i < pairs; i++)
        bytes += 65536ull * (1 + i % 3);
    expect("apis.cudaHostAlloc.calls", (1ull + waves) * n * pairs);
    expect("apis.cudaHostAlloc.bytes", (1ull + waves) * n * bytes);
    expect("apis.cudaFreeHost.calls", (1ull + waves) * n * pairs);
    expect("apis.cudaStreamSynchronize.calls", (unsigned long long)n * pairs);
    expect("stats.alloc_calls", (1ull + waves) * n * pairs);
    return errors != 0;
}

/* --- fork ---------------------------------------------------------------- */

static void pairs(int n)
{
    void *p;
    for (int i = 0; i < n; i++) {
        CK(cudaHostAlloc(&p, 8192, 0));
        CK(cudaFreeHost(p));
    }
}

static int forked(int child_cuda)
{
    pid_t pid;
    int st = 0;

    pairs(5);
    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        void *p = NULL;
        if (child_cuda)   /* the sim refuses a forked child: the call fails, but was made */
            cudaHostAlloc(&p, 4096, 0);
        exit(0);
    }
    waitpid(pid, &st, 0);
    pairs(5);
    printf("child %d\n", (int)pid);
    expect("apis.cudaHostAlloc.calls", 10);
    expect("apis.cudaFreeHost.calls", 10);
    return errors != 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0;
}

/* --- exit() from a second thread ------------------------------------------ */

static void *exiter(void *arg)
{
    (void)arg;
    pairs(20);
    printf("exiting\n");
    fflush(stdout);
    exit(0);
}

static int exit_thread(void)
{
    pthread_t t;

    pthread_create(&t, NULL, exiter, NULL);
    for (;;)
        pairs(1);     /* still calling in when the other thread exits */
    return 1;
}

/* --- the hit path, timed ---------------------------------------------------- */

static int bench(int n)
{
    void *p;
    uint64_t t0, best = UINT64_MAX;

    pairs(100);
    for (int round = 0; round < 5; round++) {
        t0 = now_ns();
        for (int i = 0; i < n; i++) {
            CK(cudaHostAlloc(&p, 65536, 0));
            CK(cudaFreeHost(p));
        }
        if (now_ns() - t0 < best)
            best = now_ns() - t0;
    }
    printf("pair_ns %.1f\n", (double)best / n);
    return errors != 0;
}

/* --- kinds: small copies classified for the report alone -------------- */

/* Copies below PINCACHE_STAGE_MIN (never staged) whose host side pincache
 * classifies for its report alone, without the runtime where it knows the
 * memory (core/hostkind.h), and their sync attribution; every copy made
 * twice in a row, so that the second finds what the first taught:
 *  - a malloc'd buffer: pageable, H2D (cudaMemcpy) and D2H (cudaMemcpyAsync),
 *    and as cudaMemcpyDefault's source;
 *  - a cudaMallocHost block (the cache's in cache mode, a real block
 *    followed in observe mode), at its base and inside it: pinned;
 *  - a malloc'd buffer copied first (pageable), then registered: pinned, at
 *    its start and inside; unregistered: pageable again;
 *  - each right after a kernel on the stream it would wait for: a 64 KiB
 *    pageable cudaMemcpyAsync H2D and a pinned one return at once (not
 *    synced); a pageable D2H cudaMemcpyAsync and a pinned cudaMemcpy H2D
 *    wait (synced). */
#define KINDS_BUF (64u << 10)
enum { K_H2D_PAGE, K_H2D_PIN, K_D2H_PAGE, K_D2H_PIN };
static const char *const kinds_key[4] = { "h2d_pageable", "h2d_pinned", "d2h_pageable", "d2h_pinned" };
static unsigned long long kinds_calls[4], kinds_bytes[4], kinds_synced[2];   /* synced: cudaMemcpy, Async */
static unsigned long long kinds_maybe[2];  /* idle copies that took long enough to count */
static cudaStream_t kinds_s;
static char *kinds_dev;

/* One copy of n bytes between host and the device buffer, of row k:
 * cudaMemcpy, or cudaMemcpyAsync on kinds_s (async).  kind: the call's
 * (cudaMemcpyDefault, or the direction's).  waits: -1, an idle copy,
 * synchronized after when async; else right after a kernel on the stream it
 * would wait for, and whether it must (the report's synced count). */
static void kinds_copy(int k, int async, void *host, size_t n, int dflt, int waits)
{
    int h2d = k == K_H2D_PAGE || k == K_H2D_PIN;
    void *dst = h2d ? (void *)kinds_dev : host;
    const void *src = h2d ? host : (void *)kinds_dev;
    enum cudaMemcpyKind kind = dflt ? cudaMemcpyDefault : h2d ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost;
    uint64_t t0;

    if (waits >= 0) {
        drain();
        kernel(async ? kinds_s : cudaStreamLegacy);
    }
    t0 = now_ns();
    if (async)
        CK(cudaMemcpyAsync(dst, src, n, kind, kinds_s));
    else
        CK(cudaMemcpy(dst, src, n, kind));
    if (waits >= 0 && (now_ns() - t0 >= WAITED_NS) != waits) {
        fprintf(stderr, "scenario: a %s copy %s\n", kinds_key[k], waits ? "returned at once" : "waited");
        errors++;
    }
    if (waits > 0)
        kinds_synced[async]++;
    else if (idle_may_count(async ? MCA : MC, n, now_ns() - t0))
        kinds_maybe[async]++;
    if (waits >= 0)
        drain();
    else if (async)
        CK(cudaStreamSynchronize(kinds_s));
    kinds_calls[k]++;
    kinds_bytes[k] += n;
}

static void kinds_twice(int k, int async, void *host, size_t n)
{
    kinds_copy(k, async, host, n, 0, -1);
    kinds_copy(k, async, host, n, 0, -1);
}

static int kinds(void)
{
    char *page = malloc(KINDS_BUF), *pin = NULL, *reg = aligned_alloc(4096, KINDS_BUF);

    if (!page || !reg || cudaStreamCreate(&kinds_s) != cudaSuccess ||
        cudaMalloc((void **)&kinds_dev, KINDS_BUF) != cudaSuccess ||
        cudaMallocHost((void **)&pin, KINDS_BUF) != cudaSuccess) {
        fprintf(stderr, "scenario: set-up failed\n");
        return 1;
    }
    memset(page, 1, KINDS_BUF);
    memset(pin, 2, KINDS_BUF);
    memset(reg, 3, KINDS_BUF);
    kinds_twice(K_H2D_PAGE, 0, page, 4096);
    kinds_twice(K_D2H_PAGE, 1, page + 100, 4096);
    kinds_copy(K_H2D_PAGE, 0, page, 1000, 1, -1);
    kinds_copy(K_H2D_PAGE, 0, page, 1000, 1, -1);
    kinds_twice(K_H2D_PIN, 1, pin, 4096);
    kinds_twice(K_D2H_PIN, 0, pin + 8192, 4096);

    kinds_twice(K_H2D_PAGE, 1, reg, 4096);              /* not yet registered */
    CK(cudaHostRegister(reg, KINDS_BUF, cudaHostRegisterDefault));
    kinds_twice(K_H2D_PIN, 1, reg, 4096);
    kinds_twice(K_D2H_PIN, 1, reg + 12288, 4096);
    CK(cudaHostUnregister(reg));
    kinds_twice(K_H2D_PAGE, 1, reg, 4096);
    kinds_twice(K_D2H_PAGE, 0, reg + 12288, 4096);

    kinds_copy(K_H2D_PAGE, 1, page, KINDS_BUF, 0, 0);   /* read at the call, returns */
    kinds_copy(K_H2D_PIN, 1, pin, 4096, 0, 0);
    kinds_copy(K_D2H_PAGE, 1, page, 4096, 0, 1);        /* returns when the data is there */
    kinds_copy(K_H2D_PIN, 0, pin, 4096, 0, 1);          /* cudaMemcpy waits for the legacy stream */

    CK(cudaFreeHost(pin));
    CK(cudaFree(kinds_dev));
    CK(cudaStreamDestroy(kinds_s));
    free(page);
    free(reg);
    for (int k = 0; k < 4; k++) {
        printf("expect copies.%s.calls %llu\n", kinds_key[k], kinds_calls[k]);
        printf("expect copies.%s.bytes %llu\n", kinds_key[k], kinds_bytes[k]);
    }
    expect_range("apis.cudaMemcpy.synced", kinds_synced[0], kinds_synced[0] + kinds_maybe[0]);
    expect_range("apis.cudaMemcpyAsync.synced", kinds_synced[1], kinds_synced[1] + kinds_maybe[1]);
    fprintf(stderr, "scenario: %d errors\n", errors);
    return errors != 0;
}

/* Hit pairs of 64 KiB, then 8 MiB allocated and freed while a kernel of
 * HITSLOW_US runs: beyond the 1 MiB cap, the free releases idle blocks,
 * whose real free waits for the kernel.  Most cache calls start untimed
 * (pincache counts them at a sampled hit's duration); that one must still
 * count its whole wait. */
#define HITSLOW_US 300000
static int hitslow(int n)
{
    void *p, *big;
    uint64_t t0, took;

    for (int i = 0; i < n; i++) {
        CK(cudaHostAlloc(&p, 65536, cudaHostAllocDefault));
        CK(cudaFreeHost(p));
    }
    CK(cudaHostAlloc(&big, 8 * MIB, cudaHostAllocDefault));
    CK(simLaunch(0, nop, NULL, HITSLOW_US));
    t0 = now_ns();
    CK(cudaFreeHost(big));
    took = now_ns() - t0;
    drain();
    expect("apis.cudaHostAlloc.calls", (unsigned long long)n + 1);
    expect("apis.cudaHostAlloc.hits", (unsigned long long)n - 1);
    expect("apis.cudaFreeHost.calls", (unsigned long long)n + 1);
    /* One in 16 of a thread's cache calls is timed, after the first of
     * each kind that hit; the trimming free is timed from its release. */
    expect_range("apis.cudaHostAlloc.sampled", (unsigned long long)(n - 1) * 15 / 16 - 2, (unsigned long long)n);
    expect_range("apis.cudaFreeHost.sampled", (unsigned long long)(n - 1) * 15 / 16 - 2, (unsigned long long)n);
    /* The free's own clock said took; pincache's from its release on,
     * which waits for most of the kernel (half of it at the least, on a
     * loaded machine); an estimate from the hits would be microseconds. */
    expect_range("apis.cudaFreeHost.max_ns", HITSLOW_US * 500ull, took);
    expect_range("apis.cudaFreeHost.ns", HITSLOW_US * 500ull, took + n * WAITED_NS);
    fprintf(stderr, "scenario: %d errors (the trimming free took %llu us)\n", errors,
            (unsigned long long)(took / 1000));
    return errors != 0 || took < HITSLOW_US * 500ull;
}

int main(int argc, char **argv)
{
    const char *what = argc > 1 ? argv[1] : "";

    setvbuf(stdout, NULL, _IOLBF, 0);
    if (!strcmp(what, "counts") && argc > 2)
        return counts(!strcmp(argv[2], "observe"), argc > 3 ? atoi(argv[3]) : 1);
    if (!strcmp(what, "threads") && argc > 3)
        return threads(atoi(argv[2]), atoi(argv[3]), argc > 4 ? atoi(argv[4]) : 0);
    if (!strcmp(what, "fork"))
        return forked(argc > 2 && !strcmp(argv[2], "cuda"));
    if (!strcmp(what, "exit-thread"))
        return exit_thread();
    if (!strcmp(what, "bench") && argc > 2)
        return bench(atoi(argv[2]));
    if (!strcmp(what, "syncwait") && argc > 2)
        return syncwait(atoi(argv[2]));
    if (!strcmp(what, "kinds"))
        return kinds();
    if (!strcmp(what, "hitslow") && argc > 2)
        return hitslow(atoi(argv[2]));
    fprintf(stderr, "usage: scenario counts cache|observe [SCALE] | threads N PAIRS [WAVES] | fork [cuda] | "
                    "exit-thread | bench PAIRS | syncwait ROUNDS | kinds | hitslow PAIRS\n");
    return 2;
}
