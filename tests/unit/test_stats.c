/* test_stats.c - gauges and peaks under threads, reset, the stats.def table,
 * and the guard that makes a changed stats.def bump the schema version. */
#include "config.h"
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "util/stats.h"
#include "util/clock.h"
#include "tap.h"

static const char *const names[] = {
#define STAT(name, kind, help) #name,
#define GAUGE(name, kind, help) #name,
#include "util/stats.def"
#undef STAT
#undef GAUGE
};
#define NNAMES (sizeof names / sizeof names[0])

static void test_gauge_single(void)
{
    int64_t cur = 0, peak = 0;

    pc_gauge_add(&cur, &peak, 10);
    pc_gauge_add(&cur, &peak, 5);
    pc_gauge_add(&cur, &peak, -12);
    pc_gauge_add(&cur, &peak, 3);
    is_int(cur, 6, "gauge value follows the deltas");
    is_int(peak, 15, "peak is the highest value seen");
    pc_gauge_add(&cur, &peak, -6);
    is_int(peak, 15, "peak never comes down");
}

#define NTHREADS 8
#define STEPS 200000

static void *adder(void *arg)
{
    int i;

    (void)arg;
    for (i = 0; i < STEPS; i++)
        PC_GAUGE_ADD(live_bytes, 1);
    return NULL;
}

static void *updown(void *arg)
{
    int i;

    (void)arg;
    for (i = 0; i < STEPS; i++) {
        PC_GAUGE_ADD(cached_bytes, 1);
        PC_STAT_INC(alloc_calls);
        PC_GAUGE_ADD(cached_bytes, -1);
    }
    return NULL;
}

static void test_gauge_threads(void)
{
    pthread_t th[NTHREADS];
    int i;

    pc_stats_reset();
    for (i = 0; i < NTHREADS; i++)
        pthread_create(&th[i], NULL, adder, NULL);
    for (i = 0; i < NTHREADS; i++)
        pthread_join(th[i], NULL);
    is_int(PC_STAT_GET(live_bytes), NTHREADS * STEPS, "concurrent adds: no update lost");
    is_int(PC_STAT_GET(live_bytes_peak), NTHREADS * STEPS,
           "concurrent adds: the peak is the final value (no lost raise)");

    for (i = 0; i < NTHREADS; i++)
        pthread_create(&th[i], NULL, updown, NULL);
    for (i = 0; i < NTHREADS; i++)
        pthread_join(th[i], NULL);
    is_int(PC_STAT_GET(cached_bytes), 0, "up/down: back to zero");
    ok(PC_STAT_GET(cached_bytes_peak) >= 1 && PC_STAT_GET(cached_bytes_peak) <= NTHREADS,
       "up/down: peak between 1 and the thread count (%lld)",
       (long long)PC_STAT_GET(cached_bytes_peak));
    is_int(PC_STAT_GET(alloc_calls), NTHREADS * STEPS, "counter: no increment lost");
}

static void test_table(void)
{
    size_t covered = 0;
    unsigned i, j;
    int dup = 0, order = 1, kinds = 1;

    is_int(pc_stat_ndescs, NNAMES, "one table row per stats.def entry");
    for (i = 0; i < pc_stat_ndescs && i < NNAMES; i++) {
        const struct pc_stat_desc *d = &pc_stat_descs[i];
        if (strcmp(d->name, names[i]) != 0)
            order = 0;
        if (d->kind != PC_STAT_KIND_COUNT && d->kind != PC_STAT_KIND_BYTES &&
            d->kind != PC_STAT_KIND_NSEC)
            kinds = 0;
        covered += d->peak_name ? 2 * sizeof(int64_t) : sizeof(uint64_t);
        for (j = 0; j < i; j++)
            if (!strcmp(pc_stat_descs[j].name, d->name))
                dup++;
    }
    ok(order, "rows in stats.def order, named as declared");
    ok(kinds, "every kind is COUNT, BYTES or NSEC");
    is_int(dup, 0, "names unique");
    is_int(covered, offsetof(struct pc_stats, api), "the rows cover every byte of struct pc_stats before the api rows");
    is_int(offsetof(struct pc_stats, api) + sizeof(struct pc_api_stat) * PC_API_COUNT +
           sizeof(struct pc_copy_stat) * PC_COPY_COUNT, sizeof(struct pc_stats),
           "api and copy rows end struct pc_stats");
    is_int(pc_api_nfields * sizeof(uint64_t) + sizeof(uint64_t) * PC_HIST_BUCKETS + sizeof(uint64_t),
           sizeof(struct pc_api_stat),
           "PC_API_FIELD rows, the histogram and runtime_skipped cover struct pc_api_stat");
    is_int(pc_copy_nfields * sizeof(uint64_t), sizeof(struct pc_copy_stat),
           "PC_COPY_FIELD rows cover struct pc_copy_stat");

    /* Each row points at its own field: poke through the table, read back by
     * name. */
    {
        struct pc_stats s;
        memset(&s, 0, sizeof s);
        for (i = 0; i < pc_stat_ndescs; i++) {
            const struct pc_stat_desc *d = &pc_stat_descs[i];
            *(uint64_t *)((char *)&s + d->offset) = 1000 + i;
            if (d->peak_name)
                *(int64_t *)((char *)&s + d->peak_offset) = 5000 + i;
        }
        i = 0;
        j = 1;
#define STAT(name, kind, help) j &= s.name == 1000 + i; i++;
#define GAUGE(name, kind, help) j &= s.name == 1000 + i && s.name##_peak == 5000 + i; i++;
#include "util/stats.def"
#undef STAT
#undef GAUGE
        ok(j, "offsets and peak offsets point at the named fields");
    }
    {
        int peaks = 1;
        for (i = 0; i < pc_stat_ndescs; i++) {
            const struct pc_stat_desc *d = &pc_stat_descs[i];
            char want[128];
            if (!d->peak_name)
                continue;
            snprintf(want, sizeof want, "%s_peak", d->name);
            peaks &= !strcmp(want, d->peak_name);
        }
        ok(peaks, "gauge peaks are named NAME_peak");
    }
}

static void test_reset_snapshot(void)
{
    struct pc_stats snap;
    unsigned i;
    int zero = 1, same = 1;

    for (i = 0; i < pc_stat_ndescs; i++) {
        const struct pc_stat_desc *d = &pc_stat_descs[i];
        *(uint64_t *)((char *)&pc_stats + d->offset) = 77 + i;
        if (d->peak_name)
            *(int64_t *)((char *)&pc_stats + d->peak_offset) = 99 + i;
    }
    {
        uint64_t *w = (uint64_t *)pc_stats.api;
        size_t n = (sizeof pc_stats.api + sizeof pc_stats.copy) / sizeof *w;
        for (i = 0; i < n; i++)
            w[i] = 3 + i;
    }
    pc_stats_snapshot(&snap);
    {
        /* every field copied, but each API's calls and real_calls, worked
         * out from its histogram and runtime_skipped (stats.h) */
        static struct pc_stats want;
        memcpy(&want, &pc_stats, sizeof want);
        for (i = 0; i < PC_API_COUNT; i++) {
            struct pc_api_stat *a = &want.api[i];
            a->calls = 0;
            for (unsigned j = 0; j < PC_HIST_BUCKETS; j++)
                a->calls += a->hist[j];
            a->real_calls = a->calls - a->runtime_skipped;
        }
        same = memcmp(&snap, &want, sizeof snap) == 0;
        ok(same, "snapshot copies every field, and sums calls from the histogram");
        ok(want.api[0].calls > want.api[0].runtime_skipped && snap.api[0].real_calls != pc_stats.api[0].real_calls,
           "real_calls is calls less runtime_skipped");
    }
    pc_stats_reset();
    for (i = 0; i < sizeof pc_stats; i++)
        if (((unsigned char *)&pc_stats)[i])
            zero = 0;
    ok(zero, "reset clears every field, peaks included");
}

/* Counters are counted per thread (stats.h): a live thread's counts are in
 * every read, a thread's exit folds them into pc_stats and frees its block
 * for the next thread, a max merges as a max, and reset clears a live
 * thread's block too. */
static pthread_barrier_t bar;
static struct pc_stats *blocks[2];

static void *counter(void *arg)
{
    long k = (long)arg;
    int mine;
    struct pc_stats *s;

    for (int i = 0; i < 1000; i++)
        PC_STAT_INC(free_calls);
    s = pc_stats_here(&mine);
    pc_count_max(&s->api[PC_API_free_host].max_ns, k == 0 ? 500 : 900, mine);
    pc_count(&s->api[PC_API_free_host].hist[0], 3, mine);   /* calls: their sum */
    pc_count(&s->api[PC_API_free_host].runtime_skipped, 1, mine);
    blocks[k] = pc_tls_stats;
    pthread_barrier_wait(&bar);      /* main reads while this thread lives */
    pthread_barrier_wait(&bar);
    return NULL;
}

static void test_per_thread(void)
{
    struct pc_stats snap;
    pthread_t th;
    struct pc_stats *first;

    pc_stats_reset();
    pthread_barrier_init(&bar, NULL, 2);
    pthread_create(&th, NULL, counter, (void *)0L);
    pthread_barrier_wait(&bar);
    is_int(PC_STAT_GET(free_calls), 1000, "per thread: a live thread's counts are read");
    is_int(pc_stats.free_calls, 0, "... from its own block, not pc_stats");
    pthread_barrier_wait(&bar);
    pthread_join(th, NULL);
    is_int(pc_stats.free_calls, 1000, "per thread: its exit folds its block into pc_stats");
    is_int(PC_STAT_GET(free_calls), 1000, "... and nothing is counted twice");
    first = blocks[0];
    pthread_create(&th, NULL, counter, (void *)1L);
    pthread_barrier_wait(&bar);
    ok(blocks[1] == first, "per thread: the next thread reuses the block");
    pc_stats_snapshot(&snap);
    is_int(snap.free_calls, 2000, "snapshot: pc_stats and a live block add up");
    is_int(snap.api[PC_API_free_host].calls, 6, "snapshot: api row counts add up");
    is_int(snap.api[PC_API_free_host].real_calls, 4, "snapshot: real_calls from every thread's runtime_skipped");
    is_int(snap.api[PC_API_free_host].max_ns, 900, "snapshot: a max merges as a max");
    pc_stats_reset();
    is_int(PC_STAT_GET(free_calls), 0, "reset clears a live thread's block too");
    pthread_barrier_wait(&bar);
    pthread_join(th, NULL);
    is_int(PC_STAT_GET(free_calls), 0, "... and its exit folds nothing back");
    pc_stats_snapshot(&snap);
    is_int(snap.api[PC_API_free_host].max_ns, 0, "... its max included");
    pthread_barrier_destroy(&bar);
}

/* hist.h: every value lands in the bucket whose bounds hold it, buckets
 * are ordered, and percentiles come back within the bucket resolution. */
static void test_hist(void)
{
    static uint64_t h[PC_HIST_BUCKETS];
    uint64_t v, prev = 0;
    unsigned b, pb = 0;
    int inside = 1, mono = 1, tight = 1;

    for (v = 0; v < (1ull << 41); v = v < 64 ? v + 1 : v + v / 7) {
        b = pc_hist_bucket(v);
        if (b >= PC_HIST_BUCKETS || pc_hist_lower(b) > v || (v < pc_hist_upper(b) ? 0 : b + 1 < PC_HIST_BUCKETS))
            inside = 0;
        if (b < pb || v < prev)
            mono = 0;
        if (b + 1 < PC_HIST_BUCKETS && v >= 8 && pc_hist_upper(b) * 4 > pc_hist_lower(b) * 5)
            tight = 0;
        pb = b;
        prev = v;
    }
    ok(inside, "every value lies within its bucket's bounds");
    ok(mono, "buckets grow with the value");
    ok(tight, "a bucket spans at most 1.25x");
    is_int(pc_hist_bucket(UINT64_MAX), PC_HIST_BUCKETS - 1, "huge values go to the last bucket");
    is_int(pc_hist_quantile(h, 0, 0.5), 0, "empty histogram: 0");
    /* 98 calls of 1 us, 2 of 1 ms: p50 ~1 us, p99 ~1 ms (max 1 ms) */
    h[pc_hist_bucket(1000)] = 98;
    h[pc_hist_bucket(1000000)] = 2;
    v = pc_hist_quantile(h, 1000000, 0.5);
    ok(v >= 880 && v <= 1120, "p50 within 12%% (%llu for 1000)", (unsigned long long)v);
    v = pc_hist_quantile(h, 1000000, 0.99);
    ok(v >= 880000 && v <= 1000000, "p99 within 12%% and not above max (%llu for 1000000)",
       (unsigned long long)v);
    is_int(pc_hist_quantile(h, 1000000, 0.98), pc_hist_quantile(h, 1000000, 0.5),
           "p98 is still the 98th call");
}

static void test_clock(void)
{
    struct timespec ms = { 0, 2000000 };
    uint64_t a = pc_now_ns(), b;

    nanosleep(&ms, NULL);
    b = pc_now_ns();
    ok(a > 0 && b > a, "pc_now_ns moves forward");
    ok(b - a >= 2000000 && b - a < 2000000000ull, "pc_now_ns is in nanoseconds (%llu ns for a 2 ms sleep)",
       (unsigned long long)(b - a));
}

/* clock.h: no rate before PC_TICK_CAL_NS have passed, then the TSC's
 * durations agree with CLOCK_MONOTONIC's; the conversion past 2^32 ticks. */
static void test_tick(void)
{
    struct timespec cal = { 0, (long)PC_TICK_CAL_NS + 2000000 }, nap = { 0, 20000000 };
    uint64_t m, a_ns, b_ns, a_t, b_t, d_t, d_ns;

    ok(pc_tick_ns(3ull << 40, 1ull << 32) == 3ull << 40 && pc_tick_ns((1ull << 40) + 2, 3ull << 31) ==
       ((1ull << 40) + 2) / 2 * 3, "tick: 32.32 conversion, exact past 2^32 ticks");
    if (!pc_tick_usable()) {
        skip(3, "no invariant TSC under a tsc clock source here");
        return;
    }
    pc_tick_begin();
    pc_tick_learn(pc_now_ns());
    is_int(pc_tick_rate(), 0, "tick: no rate before the calibration interval has passed");
    nanosleep(&cal, NULL);
    pc_tick_learn(pc_now_ns());
    m = pc_tick_rate();
    ok(m > 0 && !pc_tick_pending, "tick: a rate once it has passed (%.4f ns per tick)", (double)m / 4294967296.0);
    a_ns = pc_now_ns();
    a_t = pc_tick();
    nanosleep(&nap, NULL);
    b_t = pc_tick();
    b_ns = pc_now_ns();
    d_t = pc_tick_ns(b_t - a_t, m);
    d_ns = b_ns - a_ns;
    /* Within 1%: the rate is learned over PC_TICK_CAL_NS, and a thread
     * preempted between its two clock reads there (a loaded 2-core CI
     * machine, a sanitizer build) makes it 0.3% off (seen: 20.12 against
     * 20.19 ms), which no report figure minds; a wrong conversion is off
     * by far more. */
    ok((d_t > d_ns ? d_t - d_ns : d_ns - d_t) < d_ns / 100 + 1000,
       "tick: a 20 ms sleep measured by the TSC (%llu ns) as by CLOCK_MONOTONIC (%llu ns) within 1%%",
       (unsigned long long)d_t, (unsigned long long)d_ns);
}

/* stats.def feeds the JSON report, whose readers rely on
 * PC_STATS_SCHEMA_VERSION: a change of the list without a change of the
 * version fails here.  PC_UPDATE_GOLDEN=1 rewrites the record (only when the
 * version moved). */
static void test_schema_version(void)
{
    static const char *const kind_names[] = { "COUNT", "BYTES", "NSEC" };
    char now[8192], rec[8192];
    const char *srcdir = getenv("top_srcdir");
    char path[1024];
    size_t len = 0;
    unsigned i;
    FILE *f;
    long rec_version = -1;

    len += (size_t)snprintf(now + len, sizeof now - len, "schema_version %d\n", PC_STATS_SCHEMA_VERSION);
    for (i = 0; i < pc_stat_ndescs && len < sizeof now; i++)
        len += (size_t)snprintf(now + len, sizeof now - len, "%s %s %s\n", pc_stat_descs[i].name,
                                pc_stat_descs[i].peak_name ? "GAUGE" : "STAT",
                                kind_names[pc_stat_descs[i].kind]);
    for (i = 0; i < PC_API_COUNT && len < sizeof now; i++)
        len += (size_t)snprintf(now + len, sizeof now - len, "api %s\n", pc_api_rows[i].key);
    for (i = 0; i < pc_api_nfields && len < sizeof now; i++)
        len += (size_t)snprintf(now + len, sizeof now - len, "api.%s %s\n", pc_api_fields[i].name,
                                kind_names[pc_api_fields[i].kind]);
    for (i = 0; i < PC_COPY_COUNT && len < sizeof now; i++)
        len += (size_t)snprintf(now + len, sizeof now - len, "copy %s\n", pc_copy_rows[i].key);
    for (i = 0; i < pc_copy_nfields && len < sizeof now; i++)
        len += (size_t)snprintf(now + len, sizeof now - len, "copy.%s %s\n", pc_copy_fields[i].name,
                                kind_names[pc_copy_fields[i].kind]);
    len += (size_t)snprintf(now + len, sizeof now - len, "hist %d buckets\n", PC_HIST_BUCKETS);
    snprintf(path, sizeof path, "%s/tests/unit/golden/stats-schema.txt", srcdir ? srcdir : ".");
    rec[0] = '\0';
    f = fopen(path, "r");
    if (f) {
        size_t n = fread(rec, 1, sizeof rec - 1, f);
        rec[n] = '\0';
        fclose(f);
        sscanf(rec, "schema_version %ld", &rec_version);
    } else {
        diag("cannot read %s", path);
    }
    if (getenv("PC_UPDATE_GOLDEN") && strcmp(now, rec) != 0) {
        if (rec_version == PC_STATS_SCHEMA_VERSION) {
            diag("not rewriting %s: the version did not move", path);
        } else if ((f = fopen(path, "w")) != NULL) {
            fputs(now, f);
            fclose(f);
            diag("rewrote %s", path);
            strcpy(rec, now);
        } else {
            diag("cannot write %s", path);
        }
    }
    if (!ok(strcmp(now, rec) == 0, "stats.def matches the record of schema version %d",
            PC_STATS_SCHEMA_VERSION)) {
        if (rec_version == PC_STATS_SCHEMA_VERSION)
            diag("stats.def changed: bump PC_STATS_SCHEMA_VERSION, then record it (and the "
                 "report goldens) with 'PC_UPDATE_GOLDEN=1 make check'");
        else
            diag("the schema version moved: record it with 'PC_UPDATE_GOLDEN=1 make check'");
    }
}

int main(void)
{
    test_gauge_single();
    test_gauge_threads();
    test_table();
    test_reset_snapshot();
    test_per_thread();
    test_clock();
    test_tick();
    test_hist();
    test_schema_version();
    return done_testing();
}
