/* xfer_test - the staging copy threads (src/stage_threads.c) without CUDA.
 *
 * A fake DMA engine (one thread, in order, with random delays) plays the GPU:
 * the test drives a transfer the way stage.c does, gating slot reuse on the
 * engine's completion flags, and checks that every byte arrives exactly once
 * and nothing is written outside the copy.  Under TSan this also proves the
 * pool race-free.  -u: reuse slots without waiting for the engine; the data
 * must then come out wrong (proves the check can fail).
 * Half the transfers fill the slots with non-temporal stores, from host
 * addresses of every alignment mod 8; every fourth one runs with the pool's
 * threads lingering between transfers.
 */
#include <dirent.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "stage/stage_threads.h"
#include "stage/xfer_help.h"
#include "../tap.h"

#define MAXSLOT 16

/* ---- the fake DMA engine: a FIFO of copies, executed after a delay */

struct dma {
    char *dst;
    const char *src;
    size_t n;
    unsigned slot;
    uint64_t seq;
};

static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct dma q[1024];
    unsigned head, tail;
    uint64_t done[MAXSLOT];      /* atomic: last completed seq per slot */
    int quit;
} E = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };

static unsigned rnd(unsigned *s)
{
    *s = *s * 1103515245u + 12345u;
    return *s >> 16;
}

static void *engine_main(void *arg)
{
    unsigned seed = 7;
    (void)arg;
    pthread_mutex_lock(&E.mu);
    for (;;) {
        struct dma d;
        struct timespec ts;

        while (E.head == E.tail && !E.quit)
            pthread_cond_wait(&E.cv, &E.mu);
        if (E.head == E.tail)
            break;
        d = E.q[E.head % 1024];
        pthread_mutex_unlock(&E.mu);
        ts.tv_sec = 0;
        ts.tv_nsec = (long)(rnd(&seed) % 300) * 1000;   /* 0-300 us */
        nanosleep(&ts, NULL);
        memcpy(d.dst, d.src, d.n);
        __atomic_store_n(&E.done[d.slot], d.seq, __ATOMIC_RELEASE);
        pthread_mutex_lock(&E.mu);
        E.head++;
    }
    pthread_mutex_unlock(&E.mu);
    return NULL;
}

static void engine_push(char *dst, const char *src, size_t n, unsigned slot, uint64_t seq)
{
    pthread_mutex_lock(&E.mu);
    E.q[E.tail % 1024] = (struct dma){ dst, src, n, slot, seq };
    E.tail++;
    pthread_cond_signal(&E.cv);
    pthread_mutex_unlock(&E.mu);
}

/* ---- slots */

static char *slotbuf[MAXSLOT];
static unsigned left[MAXSLOT];
static uint64_t issued[MAXSLOT];     /* caller only: seq of the slot's last DMA */
static uint64_t seqno;
static int unsafe;

static int slot_free(unsigned s)
{
    return unsafe || __atomic_load_n(&E.done[s], __ATOMIC_ACQUIRE) >= issued[s];
}

/* H2D-like: host -> slots -> dev, as stage.c's pc_run_h2d. */
static void run_to(char *dev, char *host, size_t n, size_t piece, unsigned nslot, unsigned head,
                   unsigned threads, uint64_t stop_after, int nt)
{
    struct pc_xfer x;
    uint64_t ready = 0, dma = 0;
    unsigned spins = 0;

    pc_xfer_init(&x, 1, host, n, piece, slotbuf, left, nslot, head, threads);
    x.stream_stores = nt;
    pc_xfer_begin(&x);
    while (dma < x.npieces && dma < stop_after) {
        if (dma < ready && pc_xfer_piece_done(&x, dma)) {
            unsigned s = pc_xfer_slot(&x, dma);
            issued[s] = ++seqno;
            engine_push(dev + pc_xfer_piece_off(&x, dma), slotbuf[s], pc_xfer_piece_len(&x, dma), s,
                        issued[s]);
            dma++;
            continue;
        }
        if (ready < x.npieces && ready < dma + nslot && slot_free(pc_xfer_slot(&x, ready))) {
            pc_xfer_ready(&x, ++ready);
            continue;
        }
        if (!pc_xfer_help(&x))
            pc_xfer_relax(&spins);
    }
    pc_xfer_end(&x, 0);
    /* Gone, as a caller's stack frame is: a pool thread still reading it
     * would now find garbage pointers and crash the test. */
    memset(&x, 0xa5, sizeof x);
}

/* D2H-like: dev -> slots -> host, as pc_run_d2h. */
static void run_from(char *host, const char *dev, size_t n, size_t piece, unsigned nslot,
                     unsigned head, unsigned threads)
{
    struct pc_xfer x;
    uint64_t issue = 0, ready = 0, retired = 0;
    unsigned spins = 0;

    pc_xfer_init(&x, 0, host, n, piece, slotbuf, left, nslot, head, threads);
    pc_xfer_begin(&x);
    while (retired < x.npieces) {
        if (retired < ready && pc_xfer_piece_done(&x, retired)) {
            retired++;
            continue;
        }
        if (issue < x.npieces && issue < retired + nslot && slot_free(pc_xfer_slot(&x, issue))) {
            unsigned s = pc_xfer_slot(&x, issue);
            issued[s] = ++seqno;
            engine_push(slotbuf[s], dev + pc_xfer_piece_off(&x, issue), pc_xfer_piece_len(&x, issue),
                        s, issued[s]);
            issue++;
            continue;
        }
        if (ready < issue && slot_free(pc_xfer_slot(&x, ready))) {
            pc_xfer_ready(&x, ++ready);
            continue;
        }
        if (!pc_xfer_help(&x))
            pc_xfer_relax(&spins);
    }
    pc_xfer_end(&x, 0);
    /* Gone, as a caller's stack frame is: a pool thread still reading it
     * would now find garbage pointers and crash the test. */
    memset(&x, 0xa5, sizeof x);
}

static void fill(char *p, size_t n, unsigned tag)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (char)((i * 131u + (i >> 9) * 7u + (i >> 17) + tag * 29u) & 0xff);
}

static long long bad_at(const char *p, size_t n, unsigned tag)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != (char)((i * 131u + (i >> 9) * 7u + (i >> 17) + tag * 29u) & 0xff))
            return (long long)i;
    return -1;
}

/* Wait until the engine has run every queued copy (whatever -u says). */
static void drain(void)
{
    unsigned spins = 0;

    for (;;) {
        pthread_mutex_lock(&E.mu);
        int idle = E.head == E.tail;
        pthread_mutex_unlock(&E.mu);
        if (idle)
            return;
        pc_xfer_relax(&spins);
    }
}

/* ---- seats: a job takes at most its own count of participants from a
 * larger pool (a process's share of the node's copy threads) */

#define SEAT_JOBS 96
static pthread_t seat_by[SEAT_JOBS];

static void seat_job(void *arg, uint64_t i)
{
    struct timespec ts = { 0, 300000 };      /* long enough for every pool thread to come */
    (void)arg;
    seat_by[i] = pthread_self();
    nanosleep(&ts, NULL);
}

static unsigned seat_distinct(void)
{
    unsigned n = 0;

    for (unsigned i = 0; i < SEAT_JOBS; i++) {
        unsigned j = 0;
        while (j < i && !pthread_equal(seat_by[j], seat_by[i]))
            j++;
        n += j == i;
    }
    return n;
}

/* The threads of this process (its /proc/self/task entries); 0: unknown. */
static unsigned task_count(void)
{
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    unsigned n = 0;

    if (!d)
        return 0;
    while ((e = readdir(d)) != NULL)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

static void test_seats(void)
{
    /* Lingering: after a job for the whole pool every thread spins for the
     * next one, and would join it uninvited; only seats keep it out. */
    unsigned pool = pc_xfer_threads(8, 10000), whole;

    ok(pool >= 1 && pool <= 8, "pool: grows to %u participants when asked for 8", pool);
    for (unsigned share = 1; share <= 3; share++) {
        unsigned got = 0;
        for (int rep = 0; rep < 3 && got <= share; rep++) {
            pc_xfer_run(seat_job, NULL, SEAT_JOBS, pool, 0);
            memset(seat_by, 0, sizeof seat_by);
            pc_xfer_run(seat_job, NULL, SEAT_JOBS, share, 0);
            got = seat_distinct();
        }
        ok(got <= share, "seats: a job for %u participants ran on %u threads (pool %u, lingering)", share,
           got, pool);
    }
    /* The whole pool, so that the check above is seen to mean something. */
    memset(seat_by, 0, sizeof seat_by);
    pc_xfer_run(seat_job, NULL, SEAT_JOBS, pool, 0);
    whole = seat_distinct();
    ok(pool < 4 || whole > 3, "seats: a job for the whole pool ran on %u of %u threads", whole, pool);
    /* Threads beyond the pool, for one job (a fast block's pre-fault):
     * every slice once, on more threads than the job's seats, and none of
     * them left on the job when the run returns. */
    memset(seat_by, 0, sizeof seat_by);
    pc_xfer_run(seat_job, NULL, SEAT_JOBS, 2, 4);
    whole = seat_distinct();
    {
        unsigned unset = 0;
        for (unsigned i = 0; i < SEAT_JOBS; i++)
            unset += pthread_equal(seat_by[i], (pthread_t)0) != 0;
        ok(unset == 0 && whole > 2 && whole <= 6,
           "extra: a job for 2 participants and 4 extra threads ran every slice (%u not run) on %u threads",
           unset, whole);
    }
    /* The helpers stay for the next such job (no thread is started for
     * it), and take part in it again. */
    {
        unsigned before = task_count(), after;
        memset(seat_by, 0, sizeof seat_by);
        pc_xfer_run(seat_job, NULL, SEAT_JOBS, 2, 4);
        after = task_count();
        whole = seat_distinct();
        ok(before > 0 && after == before && whole > 2,
           "extra: a second such job started no thread (%u before, %u after) and ran on %u threads", before,
           after, whole);
    }
    pc_xfer_threads(8, 0);
}

int main(int argc, char **argv)
{
    static const size_t sizes[] = { 1, 63, 64 * 1024, 64 * 1024 + 1, 300000, 1 << 20, 2621443,
                                    (3 << 20) + 5 };
    static const size_t pieces[] = { 64 * 1024, 256 * 1024, 655360, 1 << 20 };
    const size_t maxn = (3 << 20) + 5, pad = 256;
    char *host = malloc(maxn + 2 * pad + 8), *dev = malloc(maxn + 2 * pad);
    unsigned threads, head = 0, tag = 1;
    long long failures = 0;
    pthread_t eng;

    unsafe = argc > 1 && !strcmp(argv[1], "-u");
    if (!host || !dev)
        return 99;
    threads = pc_xfer_threads(4, 0);
    ok(threads >= 1 && threads <= 4, "pool: %u participants", threads);
    ok(pc_xfer_threads(2, 0) == threads, "pool: never shrinks");
    for (unsigned i = 0; i < MAXSLOT; i++)
        if (!(slotbuf[i] = malloc(1 << 20)))
            return 99;
    pthread_create(&eng, NULL, engine_main, NULL);

    /* The layout: pieces in order, none empty or over piece bytes, covering
     * the copy; a last piece of at least PC_XFER_SPLIT_MIN cut in two. */
    {
        long long layout_bad = 0, splits = 0;
        for (size_t n = 1; n <= (6u << 20); n = n * 3 / 2 + 4093) {
            for (unsigned pi = 0; pi < sizeof pieces / sizeof pieces[0]; pi++) {
                struct pc_xfer x;
                size_t piece = pieces[pi], at = 0, whole = (n + piece - 1) / piece;
                size_t last = n - (whole - 1) * piece;
                pc_xfer_init(&x, 1, host, n, piece, slotbuf, left, 4, 0, 4);
                for (uint64_t k = 0; k < x.npieces; k++) {
                    size_t len = pc_xfer_piece_len(&x, k);
                    if (pc_xfer_piece_off(&x, k) != at || len == 0 || len > piece)
                        layout_bad++;
                    at += len;
                }
                if (at != n || x.npieces != pc_xfer_count(n, piece) ||
                    x.npieces != whole + (last >= PC_XFER_SPLIT_MIN))
                    layout_bad++;
                if (x.npieces > whole &&
                    pc_xfer_piece_len(&x, x.npieces - 1) > (last + 1) / 2 + 4096)
                    layout_bad++;
                splits += x.npieces > whole;
            }
        }
        ok(layout_bad == 0 && splits > 0, "pieces: contiguous, within piece bytes, covering the copy; "
           "%lld last pieces split in two (%lld bad)", splits, layout_bad);
    }

    for (unsigned pi = 0; pi < sizeof pieces / sizeof pieces[0]; pi++) {
        for (unsigned si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
            for (unsigned nslot = 2; nslot <= 5; nslot += 3) {
                for (unsigned part = 1; part <= threads; part += 2) {
                    size_t n = sizes[si], piece = pieces[pi], o = pad + tag % 8;
                    int nt = tag & 1;
                    long long b1, b2;

                    pc_xfer_threads(4, tag % 4 == 0 ? 500 : 0);
                    memset(dev, 0x11, maxn + 2 * pad);
                    fill(host + o, n, tag);
                    run_to(dev + pad, host + o, n, piece, nslot, head, part, UINT64_MAX, nt);
                    fill(host + o, n, tag + 7);   /* the source is free once it returns */
                    drain();
                    b1 = bad_at(dev + pad, n, tag);
                    memset(host, 0x22, maxn + 2 * pad + 8);
                    run_from(host + o, dev + pad, n, piece, nslot, head + 1, part);
                    b2 = bad_at(host + o, n, tag);
                    head += 3;
                    tag++;
                    if (b1 >= 0 || b2 >= 0 || dev[pad - 1] != 0x11 || dev[pad + n] != 0x11 ||
                        host[o - 1] != 0x22 || host[o + n] != 0x22) {
                        failures++;
                        if (!unsafe)
                            diag("n=%zu piece=%zu slots=%u threads=%u nt=%d: bad at %lld / %lld", n,
                                 piece, nslot, part, nt, b1, b2);
                    }
                }
            }
        }
    }
    if (!unsafe)
        test_seats();
    if (unsafe) {
        ok(failures > 0, "unsafe: reusing slots without waiting corrupts copies (%lld bad)", failures);
    } else {
        ok(failures == 0, "every byte arrived, nothing outside the copy written (%lld bad)", failures);
        /* A transfer stopped half way returns; nobody touches its memory after. */
        fill(host, maxn, 3);
        run_to(dev, host, maxn, 64 * 1024, 4, 0, threads, 5, 1);
        drain();
        memset(host, 0, maxn);
        ok(1, "a transfer stopped early ends cleanly");
    }
    pthread_mutex_lock(&E.mu);
    E.quit = 1;
    pthread_cond_signal(&E.cv);
    pthread_mutex_unlock(&E.mu);
    pthread_join(eng, NULL);
    for (unsigned i = 0; i < MAXSLOT; i++)
        free(slotbuf[i]);
    free(host);
    free(dev);
    return done_testing();
}
