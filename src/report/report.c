/* report.c - what the exit report says.  The numbers are computed once
 * (struct pc_report) and written through one emitter as text or JSON; the
 * statistics section is generated from stats.def.
 *
 * Runs at exit, possibly after the CUDA runtime was torn down: only system
 * calls and stack buffers (the file itself: outfile.c). */
#include "config.h"
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include "util/emit.h"
#include "util/hist.h"
#include "util/log.h"
#include "util/options.h"
#include "util/outfile.h"
#include "report/report.h"
#include "util/stats.h"

#define PC_REPORT_PATH_MAX PC_OUTFILE_PATH_MAX
#define PC_REPORT_MAX_HINTS 2

/* Everything both renderings read, computed once. */
struct pc_report {
    const struct pc_report_info *info;
    const struct pc_stats *st;
    const char *rank;          /* NULL when unset */
    const char *host;
    int observe;
    uint64_t wall_ns;
    int64_t rank_num;
    int rank_is_num;
    double hit_rate;           /* hits / (hits + misses) */
    int hit_rate_ok;
    double waste_pct;          /* rounding waste at the peaks */
    uint64_t p50[PC_API_COUNT], p99[PC_API_COUNT];   /* from the histograms */
    double gbps[PC_COPY_COUNT];                      /* timed bytes per timed ns */
    int gbps_ok[PC_COPY_COUNT];
    uint64_t h2d_bytes, d2h_bytes;                   /* 1D copies by direction */
    double h2d_pageable_pct, d2h_pageable_pct;
    int h2d_ok, d2h_ok;
};

static int pc_ascii_ieq(const char *a, const char *b)
{
    for (; *a && *b; a++, b++) {
        char x = (*a >= 'A' && *a <= 'Z') ? (char)(*a + 32) : *a;
        if (x != *b)
            return 0;
    }
    return *a == *b;
}

/* Percentiles, copy rates and the pageable share, from the api/copy rows. */
static void pc_report_compute_rows(struct pc_report *r, const struct pc_stats *st)
{
    const struct pc_copy_stat *c = st->copy;
    unsigned i;

    for (i = 0; i < PC_API_COUNT; i++) {
        r->p50[i] = pc_hist_quantile(st->api[i].hist, st->api[i].max_ns, 0.50);
        r->p99[i] = pc_hist_quantile(st->api[i].hist, st->api[i].max_ns, 0.99);
    }
    /* Bytes per nanosecond are GB/s, as copy rates are quoted. */
    for (i = 0; i < PC_COPY_COUNT; i++) {
        r->gbps_ok[i] = c[i].timed_ns > 0;
        r->gbps[i] = r->gbps_ok[i] ? (double)c[i].timed_bytes / (double)c[i].timed_ns : 0.0;
    }
    r->h2d_bytes = c[PC_COPY_h2d_pageable].bytes + c[PC_COPY_h2d_pinned].bytes;
    r->d2h_bytes = c[PC_COPY_d2h_pageable].bytes + c[PC_COPY_d2h_pinned].bytes;
    r->h2d_ok = r->h2d_bytes > 0;
    r->d2h_ok = r->d2h_bytes > 0;
    if (r->h2d_ok)
        r->h2d_pageable_pct = 100.0 * (double)c[PC_COPY_h2d_pageable].bytes / (double)r->h2d_bytes;
    if (r->d2h_ok)
        r->d2h_pageable_pct = 100.0 * (double)c[PC_COPY_d2h_pageable].bytes / (double)r->d2h_bytes;
}

static void pc_report_compute(struct pc_report *r, const struct pc_report_info *info,
                              const struct pc_stats *st, const char *rank, const char *host)
{
    uint64_t tries = st->alloc_hits + st->alloc_misses;
    const char *p;

    memset(r, 0, sizeof *r);
    r->info = info;
    r->st = st;
    r->rank = rank && *rank ? rank : NULL;
    r->host = host ? host : "unknown";
    r->observe = info->mode && pc_ascii_ieq(info->mode, "observe");
    r->wall_ns = info->end_ns > info->start_ns ? info->end_ns - info->start_ns : 0;
    if (r->rank) {
        r->rank_is_num = 1;
        for (p = r->rank; *p; p++) {
            if (*p < '0' || *p > '9' || r->rank_num > 100000000) {
                r->rank_is_num = 0;
                break;
            }
            r->rank_num = r->rank_num * 10 + (*p - '0');
        }
    }
    if (tries) {
        r->hit_rate = (double)st->alloc_hits / (double)tries;
        r->hit_rate_ok = 1;
    }
    /* Blocks are rounded up to size classes: compare what was handed out
     * with what was asked for, both at their peaks. */
    if (st->requested_bytes_peak > 0 && st->live_bytes_peak > st->requested_bytes_peak)
        r->waste_pct = 100.0 * (double)(st->live_bytes_peak - st->requested_bytes_peak) /
                       (double)st->requested_bytes_peak;
    pc_report_compute_rows(r, st);
}

/* Short-lived text of one value, for sentences. */
struct pc_h {
    char s[48];
};

static const char *pc_hu(struct pc_h *h, int type, uint64_t v)
{
    pc_emit_human(h->s, sizeof h->s, type, &v);
    return h->s;
}

static const char *pc_hi(struct pc_h *h, int type, int64_t v)
{
    pc_emit_human(h->s, sizeof h->s, type | PC_EMIT_SIGNED, &v);
    return h->s;
}

/* "N to the device (X at R), M from the device (Y at R)", leaving out a direction
 * with no copies.  Bytes per nanosecond are GB/s, as copy rates are quoted. */
static void pc_copy_dirs(char *buf, unsigned long n, uint64_t h2d, uint64_t h2d_bytes,
                         uint64_t h2d_ns, uint64_t d2h, uint64_t d2h_bytes, uint64_t d2h_ns)
{
    struct pc_h a, b;
    int len = 0;

    buf[0] = '\0';
    if (h2d)
        len = pc_fmt(buf, n, "%s to the device (%s at %.1f GB/s)", pc_hu(&a, PC_EMIT_COUNT, h2d),
                     pc_hu(&b, PC_EMIT_BYTES, h2d_bytes),
                     h2d_ns ? (double)h2d_bytes / (double)h2d_ns : 0.0);
    if (d2h && (unsigned long)len < n)
        pc_fmt(buf + len, n - (unsigned long)len, "%s%s from the device (%s at %.1f GB/s)",
               len ? ", " : "", pc_hu(&a, PC_EMIT_COUNT, d2h), pc_hu(&b, PC_EMIT_BYTES, d2h_bytes),
               d2h_ns ? (double)d2h_bytes / (double)d2h_ns : 0.0);
}

/* Time staging saved: the staged bytes at the driver's pageable rate (as
 * measured in this process on copies left to it, else the H200's 6.5 GB/s
 * H2D and 11 GB/s D2H) minus the time the staged copies took. */
/* Time staging saved against the driver's pageable rate (measured in this
 * process when it left copies to the runtime, else DESIGN.md's lower
 * figures); negative when staging was the slower one. */
static int64_t pc_stage_saved_ns(const struct pc_stats *st)
{
    double h2d_rate = st->stage_h2d_driver_ns ? (double)st->stage_h2d_driver_bytes / (double)st->stage_h2d_driver_ns : 6.5;
    double d2h_rate = st->stage_d2h_driver_ns ? (double)st->stage_d2h_driver_bytes / (double)st->stage_d2h_driver_ns : 11.0;
    double driver_ns = 0, saved;

    if (h2d_rate > 0)
        driver_ns += (double)st->stage_h2d_bytes / h2d_rate;
    if (d2h_rate > 0)
        driver_ns += (double)st->stage_d2h_bytes / d2h_rate;
    saved = driver_ns - (double)(st->stage_h2d_ns + st->stage_d2h_ns);
    return (int64_t)saved;
}

/* The two APIs the program spent most time in, with their percentiles. */
static void pc_report_times(struct pc_emitter *e, const struct pc_report *r)
{
    const struct pc_api_stat *api = r->st->api;
    char buf[400];
    int top[2] = { -1, -1 }, len = 0;
    unsigned i, k;

    for (i = 0; i < PC_API_COUNT; i++) {
        if (!api[i].calls)
            continue;
        if (top[0] < 0 || api[i].ns > api[top[0]].ns) {
            top[1] = top[0];
            top[0] = (int)i;
        } else if (top[1] < 0 || api[i].ns > api[top[1]].ns) {
            top[1] = (int)i;
        }
    }
    if (top[0] < 0)
        return;
    buf[0] = '\0';
    for (k = 0; k < 2 && top[k] >= 0 && (unsigned long)len < sizeof buf; k++) {
        struct pc_h a, b, c, d;
        i = (unsigned)top[k];
        len += pc_fmt(buf + len, sizeof buf - (unsigned long)len, "%s%s %s (%s calls, p50 %s, p99 %s)",
                      k ? ", " : "", pc_api_rows[i].key, pc_hu(&a, PC_EMIT_NSEC, api[i].ns),
                      pc_hu(&b, PC_EMIT_COUNT, api[i].calls), pc_hu(&c, PC_EMIT_NSEC, r->p50[i]),
                      pc_hu(&d, PC_EMIT_NSEC, r->p99[i]));
    }
    pc_emit_line(e, "most time inside: %s", buf);
}

/* Calls other than cudaFreeHost (the headline) that waited for GPU work. */
static void pc_report_waits(struct pc_emitter *e, const struct pc_report *r)
{
    const struct pc_api_stat *api = r->st->api;
    char buf[400];
    int len = 0, n = 0;
    unsigned i;

    buf[0] = '\0';
    for (i = 0; i < PC_API_COUNT && (unsigned long)len < sizeof buf; i++) {
        struct pc_h a, b, c;
        if (i == PC_API_free_host || !api[i].synced)
            continue;
        len += pc_fmt(buf + len, sizeof buf - (unsigned long)len, "%s%s %s of %s calls (%s)",
                      n++ ? ", " : "", pc_api_rows[i].key, pc_hu(&a, PC_EMIT_COUNT, api[i].synced),
                      pc_hu(&b, PC_EMIT_COUNT, api[i].calls), pc_hu(&c, PC_EMIT_NSEC, api[i].stall_ns));
    }
    if (n)
        pc_emit_line(e, "waited for GPU work in flight: %s", buf);
}

/* Where the sync attribution came from: CUPTI's GPU timeline, or the fences
 * alone; and what the timeline showed. */
static void pc_report_timeline(struct pc_emitter *e, const struct pc_report *r)
{
    const struct pc_stats *st = r->st;
    struct pc_h a, b, c, d, f, g;
    char extra[160];

    if (!st->cupti_enabled) {
        if (st->cupti_unavailable)
            pc_emit_line(e, "timeline: fences (CUPTI unavailable)");
        else if (st->cupti_declined)
            pc_emit_line(e, "timeline: fences (CUPTI left alone: PINCACHE_CUPTI=off or another tool uses it)");
        return;
    }
    extra[0] = '\0';
    if (st->cupti_dropped)
        pc_fmt(extra, sizeof extra, ", %s dropped: buffers full", pc_hu(&a, PC_EMIT_COUNT, st->cupti_dropped));
    if (st->cupti_handed_over)
        pc_emit_line(e, "timeline: CUPTI (%s records%s) until another component asked for CUPTI and it "
                        "was handed over; fences after that",
                     pc_hu(&b, PC_EMIT_COUNT, st->cupti_records), extra);
    else
        pc_emit_line(e, "timeline: CUPTI (%s records%s)", pc_hu(&b, PC_EMIT_COUNT, st->cupti_records), extra);
    pc_emit_line(e, "GPU: %s kernels (%s), %s copies (%s pageable, %s pinned), busy %s",
                 pc_hu(&a, PC_EMIT_COUNT, st->gpu_kernels), pc_hu(&b, PC_EMIT_NSEC, st->gpu_kernel_ns),
                 pc_hu(&c, PC_EMIT_COUNT, st->gpu_memcpys),
                 pc_hu(&d, PC_EMIT_BYTES, st->gpu_memcpy_pageable_bytes),
                 pc_hu(&f, PC_EMIT_BYTES, st->gpu_memcpy_pinned_bytes),
                 pc_hu(&g, PC_EMIT_NSEC, st->gpu_busy_ns));
    if (st->cupti_sync_calls)
        pc_emit_line(e, "synchronizing calls on the GPU timeline: %s of %s waited for GPU work "
                        "(stall %s); GPU idle %s after them",
                     pc_hu(&a, PC_EMIT_COUNT, st->cupti_sync_calls_waited),
                     pc_hu(&b, PC_EMIT_COUNT, st->cupti_sync_calls),
                     pc_hu(&c, PC_EMIT_NSEC, st->cupti_sync_stall_ns),
                     pc_hu(&d, PC_EMIT_NSEC, st->gpu_idle_after_sync_ns));
}

/* A rate worth a word in the summary: below 1 MiB timed, a copy's time is
 * its latency (PyTorch's 4-byte .item() reads), and "0.0 GB/s" says nothing.
 * The JSON report keeps every rate. */
static int pc_rate_worth(const struct pc_report *r, int i)
{
    return r->gbps_ok[i] && r->st->copy[i].timed_bytes >= (1u << 20);
}

/* One direction of the copies line: bytes, pageable share, achieved rates. */
static int pc_copy_dir(char *buf, unsigned long n, const struct pc_report *r, const char *dir,
                       uint64_t bytes, double pct, int pageable, int pinned, const char *kind)
{
    struct pc_h a, g;
    char rates[120];
    int len = 0;

    rates[0] = '\0';
    if (pc_rate_worth(r, pageable))
        len = pc_fmt(rates, sizeof rates, "; pageable %.1f GB/s", r->gbps[pageable]);
    if (pc_rate_worth(r, pinned) && (unsigned long)len < sizeof rates)
        pc_fmt(rates + len, sizeof rates - (unsigned long)len, "; pinned %.1f GB/s", r->gbps[pinned]);
    pc_emit_human(g.s, sizeof g.s, PC_EMIT_PCT, &pct);
    return pc_fmt(buf, n, "%s %s (%s %s pageable memory%s)", dir, pc_hu(&a, PC_EMIT_BYTES, bytes),
                  g.s, kind, rates);
}

static void pc_report_copies(struct pc_emitter *e, const struct pc_report *r)
{
    const struct pc_stats *st = r->st;
    struct pc_h a, b;
    char buf[400];
    int len = 0;

    buf[0] = '\0';
    if (r->h2d_ok)
        len = pc_copy_dir(buf, sizeof buf, r, "; to the device", r->h2d_bytes, r->h2d_pageable_pct,
                          PC_COPY_h2d_pageable, PC_COPY_h2d_pinned, "from");
    if (r->d2h_ok && (unsigned long)len < sizeof buf)
        pc_copy_dir(buf + len, sizeof buf - (unsigned long)len, r, "; from the device", r->d2h_bytes,
                    r->d2h_pageable_pct, PC_COPY_d2h_pageable, PC_COPY_d2h_pinned, "into");
    pc_emit_line(e, "copies: %s cudaMemcpy-family calls, %s%s", pc_hu(&a, PC_EMIT_COUNT, st->memcpy_calls),
                 pc_hu(&b, PC_EMIT_BYTES, st->memcpy_bytes), buf);
}

static void pc_report_summary(struct pc_emitter *e, const struct pc_report *r)
{
    const struct pc_stats *st = r->st;
    const struct pc_report_info *in = r->info;
    struct pc_h a, b, c, d, f, hr;
    char extra[200];

    pc_emit_line(e, "exit report (%s mode, %s%s%s on %s%s)", in->mode ? in->mode : "unknown",
                 pc_hu(&a, PC_EMIT_NSEC, r->wall_ns), r->rank ? ", rank " : "",
                 r->rank ? r->rank : "", r->host, in->forked_child ? ", forked child" : "");

    /* The headline: what cudaFreeHost would have cost. */
    if (r->observe) {
        if (st->would_sync)
            pc_emit_line(e, "cudaFreeHost: %s calls; %s synchronized the device (stall %s)",
                         pc_hu(&a, PC_EMIT_COUNT, st->free_calls),
                         pc_hu(&b, PC_EMIT_COUNT, st->would_sync),
                         pc_hu(&c, PC_EMIT_NSEC, st->would_sync_ns));
        else
            pc_emit_line(e, "cudaFreeHost: %s calls; none synchronized the device",
                         pc_hu(&a, PC_EMIT_COUNT, st->free_calls));
    } else {
        extra[0] = '\0';
        if (st->free_passthrough || st->free_invalid)
            pc_fmt(extra, sizeof extra, "; %s passed through, %s rejected as double frees",
                   pc_hu(&d, PC_EMIT_COUNT, st->free_passthrough),
                   pc_hu(&f, PC_EMIT_COUNT, st->free_invalid));
        pc_emit_line(e, "cudaFreeHost: %s calls; %s would have synchronized the device; "
                        "%s kept in the cache%s",
                     pc_hu(&a, PC_EMIT_COUNT, st->free_calls),
                     pc_hu(&b, PC_EMIT_COUNT, st->syncs_avoided),
                     pc_hu(&c, PC_EMIT_COUNT, st->free_cached), extra);
    }

    if (r->observe) {
        pc_emit_line(e, "allocations: %s calls for %s, passed through (observe mode)",
                     pc_hu(&a, PC_EMIT_COUNT, st->alloc_calls),
                     pc_hu(&b, PC_EMIT_BYTES, st->alloc_bytes));
    } else {
        extra[0] = '\0';
        if (st->alloc_passthrough || st->alloc_fence_waits)
            pc_fmt(extra, sizeof extra, "; %s passed through; %s waited for a fenced block",
                   pc_hu(&d, PC_EMIT_COUNT, st->alloc_passthrough),
                   pc_hu(&f, PC_EMIT_COUNT, st->alloc_fence_waits));
        pc_emit_human(hr.s, sizeof hr.s, PC_EMIT_RATIO, r->hit_rate_ok ? &r->hit_rate : NULL);
        pc_emit_line(e, "allocations: %s calls for %s; %s hits, %s misses (hit rate %s)%s",
                     pc_hu(&a, PC_EMIT_COUNT, st->alloc_calls),
                     pc_hu(&b, PC_EMIT_BYTES, st->alloc_bytes),
                     pc_hu(&c, PC_EMIT_COUNT, st->alloc_hits),
                     pc_hu(&d, PC_EMIT_COUNT, st->alloc_misses), hr.s, extra);
    }

    /* Observe mode's shadow cache: what cache mode would have saved. */
    if (r->observe && (st->alloc_calls || st->free_calls))
        pc_emit_line(e, "cache mode would have served %s of %s allocations from the cache and kept "
                        "%s of %s frees, saving %s inside the real calls",
                     pc_hu(&a, PC_EMIT_COUNT, st->predict_hits),
                     pc_hu(&b, PC_EMIT_COUNT, st->alloc_calls),
                     pc_hu(&c, PC_EMIT_COUNT, st->predict_kept),
                     pc_hu(&d, PC_EMIT_COUNT, st->free_calls),
                     pc_hu(&f, PC_EMIT_NSEC, st->predict_hit_ns + st->predict_kept_ns));

    if (st->real_alloc_calls || st->real_free_calls) {
        extra[0] = '\0';
        if (st->real_alloc_fail)
            pc_fmt(extra, sizeof extra, " (%s failed, %s retried after trimming)",
                   pc_hu(&d, PC_EMIT_COUNT, st->real_alloc_fail),
                   pc_hu(&f, PC_EMIT_COUNT, st->oom_retries));
        pc_emit_line(e, "real calls: cudaHostAlloc %s times%s for %s in %s; cudaFreeHost %s times in %s",
                     pc_hu(&a, PC_EMIT_COUNT, st->real_alloc_calls), extra,
                     pc_hu(&b, PC_EMIT_BYTES, st->real_alloc_bytes),
                     pc_hu(&c, PC_EMIT_NSEC, st->real_alloc_ns),
                     pc_hu(&d, PC_EMIT_COUNT, st->real_free_calls),
                     pc_hu(&f, PC_EMIT_NSEC, st->real_free_ns));
    }

    if (r->observe && st->live_bytes_peak > 0) {
        pc_emit_line(e, "memory: peak %s pinned by cudaHostAlloc/cudaMallocHost",
                     pc_hi(&a, PC_EMIT_BYTES, st->live_bytes_peak));
    } else if (!r->observe && (st->live_bytes_peak > 0 || st->cached_bytes_peak > 0)) {
        double w = r->waste_pct;
        struct pc_h g;
        pc_emit_human(g.s, sizeof g.s, PC_EMIT_PCT, &w);
        pc_emit_line(e, "memory: peak %s live for %s requested (%s rounding waste); "
                        "peak %s idle in the cache (cap %s)",
                     pc_hi(&a, PC_EMIT_BYTES, st->live_bytes_peak),
                     pc_hi(&b, PC_EMIT_BYTES, st->requested_bytes_peak), g.s,
                     pc_hi(&c, PC_EMIT_BYTES, st->cached_bytes_peak),
                     pc_hu(&d, PC_EMIT_BYTES, in->max_cached));
    }

    pc_report_times(e, r);
    pc_report_waits(e, r);
    pc_report_timeline(e, r);
    if (st->memcpy_calls)
        pc_report_copies(e, r);

    if (st->stage_h2d_calls || st->stage_d2h_calls) {
        int64_t saved = pc_stage_saved_ns(st);
        pc_copy_dirs(extra, sizeof extra, st->stage_h2d_calls, st->stage_h2d_bytes,
                     st->stage_h2d_ns, st->stage_d2h_calls, st->stage_d2h_bytes, st->stage_d2h_ns);
        pc_emit_line(e, "pageable copies staged: %s; about %s %s than at the driver's pageable rate",
                     extra, pc_hu(&a, PC_EMIT_NSEC, (uint64_t)(saved < 0 ? -saved : saved)),
                     saved < 0 ? "slower" : "faster");
    }
    if (st->stage_h2d_driver_calls || st->stage_d2h_driver_calls) {
        pc_copy_dirs(extra, sizeof extra, st->stage_h2d_driver_calls, st->stage_h2d_driver_bytes,
                     st->stage_h2d_driver_ns, st->stage_d2h_driver_calls,
                     st->stage_d2h_driver_bytes, st->stage_d2h_driver_ns);
        pc_emit_line(e, "pageable copies left to the runtime: %s", extra);
    }

    if (st->register_calls || st->unregister_calls)
        pc_emit_line(e, "cudaHostRegister: %s calls for %s (peak %s registered), %s cudaHostUnregister "
                        "(passed through, not cached)",
                     pc_hu(&a, PC_EMIT_COUNT, st->register_calls),
                     pc_hu(&b, PC_EMIT_BYTES, st->register_bytes),
                     pc_hi(&d, PC_EMIT_BYTES, st->registered_bytes_peak),
                     pc_hu(&c, PC_EMIT_COUNT, st->unregister_calls));
    if (st->forks_registered)
        pc_emit_line(e, "fork(): %s of %s forks copied registered memory, %s in all (Linux copies "
                        "memory pinned by cudaHostRegister at every fork)",
                     pc_hu(&a, PC_EMIT_COUNT, st->forks_registered),
                     pc_hu(&b, PC_EMIT_COUNT, st->forks),
                     pc_hu(&c, PC_EMIT_BYTES, st->fork_registered_bytes));

    if (in->broken)
        pc_emit_line(e, "CUDA reported errors while fencing; caching stopped and calls were passed through");
}

/* Copies from pageable memory run at a fraction of the pinned rate
 * (measured: 6.5-15 GB/s against 55); worth a word once they are most of
 * the bytes and not trivially few. */
#define PC_HINT_PAGEABLE_PCT 50.0
#define PC_HINT_PAGEABLE_MIN (16ull << 20)

static void pc_report_hint_pageable(struct pc_emitter *e, const struct pc_report *r, int *n)
{
    const struct pc_copy_stat *c = r->st->copy;
    const char *fix = r->observe ? "or run in cache mode, which stages them through pinned memory"
                                 : "or keep PINCACHE_STAGE on";
    struct pc_h g;
    double pct;

    if (r->h2d_ok && r->h2d_pageable_pct >= PC_HINT_PAGEABLE_PCT &&
        c[PC_COPY_h2d_pageable].bytes >= PC_HINT_PAGEABLE_MIN) {
        pct = r->h2d_pageable_pct;
        if ((*n)++ < PC_REPORT_MAX_HINTS) {
            pc_emit_human(g.s, sizeof g.s, PC_EMIT_PCT, &pct);
            pc_emit_line(e, "%s of host-to-device bytes came from pageable memory: pin them "
                            "(PyTorch: pin_memory=True) %s", g.s, fix);
        }
    } else if (r->d2h_ok && r->d2h_pageable_pct >= PC_HINT_PAGEABLE_PCT &&
               c[PC_COPY_d2h_pageable].bytes >= PC_HINT_PAGEABLE_MIN) {
        pct = r->d2h_pageable_pct;
        if ((*n)++ < PC_REPORT_MAX_HINTS) {
            pc_emit_human(g.s, sizeof g.s, PC_EMIT_PCT, &pct);
            pc_emit_line(e, "%s of device-to-host bytes went to pageable memory: copy into pinned "
                            "buffers %s", g.s, fix);
        }
    }
}

/* At most PC_REPORT_MAX_HINTS, most useful first. */
static void pc_report_hints(struct pc_emitter *e, const struct pc_report *r)
{
    const struct pc_stats *st = r->st;
    struct pc_h a, b, c;
    int n = 0;

    if (r->info->broken)
        return;      /* the numbers after the break say little */
    if (r->observe && st->would_sync && n++ < PC_REPORT_MAX_HINTS)
        pc_emit_line(e, "run in cache mode (pincache run without --observe) to avoid %s device "
                        "synchronizations (%s stalled)",
                     pc_hu(&a, PC_EMIT_COUNT, st->would_sync),
                     pc_hu(&b, PC_EMIT_NSEC, st->would_sync_ns));
    if (!r->observe && st->real_alloc_fail && n++ < PC_REPORT_MAX_HINTS) {
        char cap[32];
        pc_format_size(cap, sizeof cap, r->info->max_cached);
        pc_emit_line(e, "%s real pinned allocations failed: pinned host memory is short; lower "
                        "PINCACHE_MAX_CACHED (now %s) or free pinned buffers sooner",
                     pc_hu(&a, PC_EMIT_COUNT, st->real_alloc_fail), cap);
    } else if (!r->observe && st->trim_blocks && n++ < PC_REPORT_MAX_HINTS) {
        /* Enough to have kept everything that was trimmed, in round units,
         * and never below the cap in force. */
        uint64_t peak = st->cached_bytes_peak > 0 ? (uint64_t)st->cached_bytes_peak : 0;
        uint64_t want = (peak > r->info->max_cached ? peak : r->info->max_cached) +
                        st->real_free_bytes;
        uint64_t unit = want >= (1ull << 30) ? (1ull << 30) : (1ull << 20);
        char size[32];
        want = (want + unit - 1) / unit * unit;
        pc_format_size(size, sizeof size, (size_t)want);
        pc_emit_line(e, "the cache hit its cap and released %s idle blocks (%s) with cudaFreeHost; "
                        "raise PINCACHE_MAX_CACHED to %s",
                     pc_hu(&a, PC_EMIT_COUNT, st->trim_blocks),
                     pc_hu(&b, PC_EMIT_BYTES, st->real_free_bytes), size);
    }
    /* Measured on the H200 (tests/bench/forkcost.cu): 0.47 ms per MiB, against
     * 2.9 ms for the fork itself.  Under a MiB a fork (what MADV_DONTFORK
     * leaves: the partial pages at the ends of the ranges) is not worth a
     * recommendation; the summary line still counts it. */
    int fork_hint = st->forks_registered &&
                    st->fork_registered_bytes >= ((uint64_t)st->forks_registered << 20);
    if (fork_hint && n++ < PC_REPORT_MAX_HINTS) {
        uint64_t est = (uint64_t)((double)st->fork_registered_bytes / (1 << 20) * 470000.0);
        /* With PINCACHE_REGISTER_DONTFORK on, what forks still copy is not
         * its to fix: do not suggest it. */
        int dontfork = st->registered_dontfork_bytes_peak > 0;
        pc_emit_line(e, "%s forks copied %s of registered memory (about %s at an H200's 0.47 ms per "
                        "MiB): keep forked workers alive (PyTorch: persistent_workers=True), %s"
                        "pin with cudaHostAlloc (PyTorch: leave pinned_use_cuda_host_register unset)",
                     pc_hu(&a, PC_EMIT_COUNT, st->forks_registered),
                     pc_hu(&b, PC_EMIT_BYTES, st->fork_registered_bytes),
                     pc_hu(&c, PC_EMIT_NSEC, est),
                     dontfork ? "or " : "set PINCACHE_REGISTER_DONTFORK=1 if the children never read "
                                        "that memory, or ");
    }
    pc_report_hint_pageable(e, r, &n);
    if (!r->observe && !st->alloc_calls && st->register_calls && !fork_hint &&
        n++ < PC_REPORT_MAX_HINTS)
        pc_emit_line(e, "the program pins memory with cudaHostRegister (%s calls), which is not "
                        "cached; PyTorch: leave pinned_use_cuda_host_register unset",
                     pc_hu(&c, PC_EMIT_COUNT, st->register_calls));
}

static int pc_emit_kind(int kind)
{
    return kind == PC_STAT_KIND_BYTES ? PC_EMIT_BYTES : kind == PC_STAT_KIND_NSEC ? PC_EMIT_NSEC
                                                                                 : PC_EMIT_COUNT;
}

/* "apis" and "copies": one object per stats.def PC_API/PC_COPY row.  The
 * text table (PINCACHE_LOG=debug) leaves out rows with no calls. */
static void pc_report_rows(struct pc_emitter *e, const struct pc_report *r)
{
    uint64_t lo[PC_HIST_BUCKETS], cnt[PC_HIST_BUCKETS];
    unsigned i, j, n;

    pc_emit_dict_begin(e, "apis", "calls by API");
    for (i = 0; i < PC_API_COUNT; i++) {
        const struct pc_api_stat *a = &r->st->api[i];
        if (e->format == PC_EMIT_TEXT && !a->calls)
            continue;
        pc_emit_dict_begin(e, pc_api_rows[i].key, pc_api_rows[i].key);
        for (j = 0; j < pc_api_nfields; j++)
            pc_emit_kv(e, pc_api_fields[j].name, pc_api_fields[j].help,
                       pc_emit_kind(pc_api_fields[j].kind), (const char *)a + pc_api_fields[j].offset);
        pc_emit_kv(e, "p50_ns", "median call, from the histogram", PC_EMIT_NSEC, &r->p50[i]);
        pc_emit_kv(e, "p99_ns", "99th percentile, from the histogram", PC_EMIT_NSEC, &r->p99[i]);
        for (j = n = 0; j < PC_HIST_BUCKETS; j++) {
            if (a->hist[j]) {
                lo[n] = pc_hist_lower(j);
                cnt[n++] = a->hist[j];
            }
        }
        pc_emit_pairs(e, "hist", lo, cnt, n);
        pc_emit_dict_end(e);
    }
    pc_emit_dict_end(e);

    pc_emit_dict_begin(e, "copies", "1D copies by direction and host memory");
    for (i = 0; i < PC_COPY_COUNT; i++) {
        const struct pc_copy_stat *c = &r->st->copy[i];
        if (e->format == PC_EMIT_TEXT && !c->calls)
            continue;
        pc_emit_dict_begin(e, pc_copy_rows[i].key, pc_copy_rows[i].key);
        for (j = 0; j < pc_copy_nfields; j++)
            pc_emit_kv(e, pc_copy_fields[j].name, pc_copy_fields[j].help,
                       pc_emit_kind(pc_copy_fields[j].kind), (const char *)c + pc_copy_fields[j].offset);
        pc_emit_kv(e, "gbps", "achieved rate: timed_bytes / timed_ns", PC_EMIT_FLOAT,
                   r->gbps_ok[i] ? &r->gbps[i] : NULL);
        pc_emit_dict_end(e);
    }
    pc_emit_dict_end(e);
}

static void pc_report_emit(struct pc_emitter *e, const struct pc_report *r)
{
    const struct pc_report_info *in = r->info;
    uint64_t schema = PC_STATS_SCHEMA_VERSION;
    uint64_t max_cached = in->max_cached;
    int64_t pid = in->pid;
    unsigned i;

    pc_emit_begin(e, "pincache report");
    pc_emit_kv(e, "schema_version", "version of this document's layout", PC_EMIT_COUNT, &schema);
    pc_emit_kv(e, "pincache_version", "pincache version", PC_EMIT_STR, PACKAGE_VERSION);
    pc_emit_kv(e, "pid", "process id", PC_EMIT_INT, &pid);
    pc_emit_kv(e, "mode", "PINCACHE_MODE", PC_EMIT_STR, in->mode);
    pc_emit_kv(e, "rank", "rank (RANK, SLURM_PROCID, ...)", PC_EMIT_INT,
               r->rank_is_num ? &r->rank_num : NULL);
    pc_emit_kv(e, "host", "host name", PC_EMIT_STR, r->host);
    pc_emit_kv(e, "wall_ns", "time from start-up to exit", PC_EMIT_NSEC, &r->wall_ns);
    pc_emit_kv(e, "max_cached", "PINCACHE_MAX_CACHED", PC_EMIT_BYTES, &max_cached);
    pc_emit_kv(e, "cuda_used", "CUDA calls went through pincache", PC_EMIT_BOOL, &in->cuda_used);
    pc_emit_kv(e, "forked_child", "a fork() child", PC_EMIT_BOOL, &in->forked_child);
    pc_emit_kv(e, "broken", "CUDA errors stopped the cache", PC_EMIT_BOOL, &in->broken);

    pc_emit_dict_begin(e, "stats", "statistics");
    for (i = 0; i < pc_stat_ndescs; i++) {
        const struct pc_stat_desc *d = &pc_stat_descs[i];
        const char *base = (const char *)r->st;
        int type = d->kind == PC_STAT_KIND_BYTES ? PC_EMIT_BYTES
                 : d->kind == PC_STAT_KIND_NSEC ? PC_EMIT_NSEC : PC_EMIT_COUNT;
        if (d->peak_name) {
            pc_emit_kv(e, d->name, d->help, type | PC_EMIT_SIGNED, base + d->offset);
            pc_emit_kv(e, d->peak_name, "(peak)", type | PC_EMIT_SIGNED, base + d->peak_offset);
        } else {
            pc_emit_kv(e, d->name, d->help, type, base + d->offset);
        }
    }
    pc_emit_dict_end(e);

    pc_emit_dict_begin(e, "derived", "derived");
    pc_emit_kv(e, "hit_rate", "alloc_hits / (alloc_hits + alloc_misses)", PC_EMIT_RATIO,
               r->hit_rate_ok ? &r->hit_rate : NULL);
    pc_emit_kv(e, "waste_pct", "rounding waste: live over requested bytes at their peaks",
               PC_EMIT_PCT, &r->waste_pct);
    pc_emit_kv(e, "h2d_pageable_pct", "share of host-to-device bytes from pageable memory",
               PC_EMIT_PCT, r->h2d_ok ? &r->h2d_pageable_pct : NULL);
    pc_emit_kv(e, "d2h_pageable_pct", "share of device-to-host bytes into pageable memory",
               PC_EMIT_PCT, r->d2h_ok ? &r->d2h_pageable_pct : NULL);
    pc_emit_dict_end(e);
    pc_report_rows(e, r);

    pc_emit_array_begin(e, "summary", NULL);
    pc_report_summary(e, r);
    pc_emit_array_end(e);
    pc_emit_array_begin(e, "recommendations", "recommendation");
    pc_report_hints(e, r);
    pc_emit_array_end(e);
}

int pc_report_emit_fd(int fd, int format, int flags, const struct pc_report_info *info,
                      const struct pc_stats *st, const char *rank, const char *host)
{
    /* Both are large for a stack frame but fine for exit; no malloc here. */
    struct pc_emitter e;
    struct pc_report r;

    if (!info || !st)
        return -EINVAL;
    pc_report_compute(&r, info, st, rank, host);
    pc_emit_init(&e, fd, format == PC_REPORT_JSON ? PC_EMIT_JSON : PC_EMIT_TEXT, info->pid,
                 (flags & PC_REPORT_DETAIL) != 0);
    pc_report_emit(&e, &r);
    return pc_emit_end(&e);
}

/* Append s to out, '/' and control characters replaced: a substituted value
 * must not change the directory the report lands in. */
static int pc_path_put(char *out, unsigned long n, unsigned long *len, const char *s, int literal)
{
    for (; *s; s++) {
        char c = *s;
        if (!literal && (c == '/' || (unsigned char)c < 0x20))
            c = '_';
        if (*len + 1 >= n)
            return -ENAMETOOLONG;
        out[(*len)++] = c;
    }
    return 0;
}

int pc_report_path(char *out, unsigned long n, const char *tmpl, int pid, const char *rank,
                   const char *host)
{
    unsigned long len = 0;
    char num[24];
    char one[2] = { 0, 0 };
    int r = 0;

    if (!n)
        return -ENAMETOOLONG;
    out[0] = '\0';
    if (!tmpl || !*tmpl)
        return -EINVAL;
    for (; *tmpl && !r; tmpl++) {
        if (*tmpl != '%' || !tmpl[1]) {
            one[0] = *tmpl;
            r = pc_path_put(out, n, &len, one, 1);
            continue;
        }
        switch (*++tmpl) {
        case 'p':
            pc_fmt(num, sizeof num, "%d", pid);
            r = pc_path_put(out, n, &len, num, 0);
            break;
        case 'r':
            r = pc_path_put(out, n, &len, rank && *rank ? rank : "0", 0);
            break;
        case 'h':
            r = pc_path_put(out, n, &len, host && *host ? host : "unknown", 0);
            break;
        case '%':
            r = pc_path_put(out, n, &len, "%", 1);
            break;
        default:      /* unknown: keep it as written */
            one[0] = '%';
            r = pc_path_put(out, n, &len, one, 1);
            one[0] = *tmpl;
            if (!r)
                r = pc_path_put(out, n, &len, one, 1);
        }
    }
    out[len < n ? len : n - 1] = '\0';
    return r;
}

struct pc_report_args {
    const struct pc_report_info *info;
    const struct pc_stats *st;
    const char *rank, *host;
};

static int pc_report_emit_json(int fd, void *arg)
{
    const struct pc_report_args *a = arg;
    return pc_report_emit_fd(fd, PC_REPORT_JSON, 0, a->info, a->st, a->rank, a->host);
}

static int pc_report_to_file(const char *tmpl, const struct pc_report_info *info,
                             const struct pc_stats *st, const char *rank, const char *host)
{
    char path[PC_REPORT_PATH_MAX];
    struct pc_report_args a = { info, st, rank, host };
    int r;

    r = pc_report_path(path, sizeof path, tmpl, info->pid, rank, host);
    if (r) {
        pc_warn("PINCACHE_REPORT: cannot use '%.200s' as a path", tmpl);
        return r;
    }
    return pc_write_file(path, "report", pc_report_emit_json, &a);
}

void pc_report_write(const struct pc_report_info *info)
{
    const char *dest = pc_opt.report && *pc_opt.report ? pc_opt.report : "stderr";
    int flags = pc_opt.log >= PC_LOG_DEBUG ? PC_REPORT_DETAIL : 0;
    char host[256];
    static struct pc_stats st;   /* large; written once per process, at exit */
    const char *rank;

    if (!info || pc_opt.mode == PC_MODE_OFF || pc_ascii_ieq(dest, "off"))
        return;
    if (!info->cuda_used) {
        pc_info("no CUDA call went through pincache; no report");
        return;
    }
    pc_stats_snapshot(&st);
    rank = pc_env_rank();
    if (gethostname(host, sizeof host) != 0)
        host[0] = '\0';
    host[sizeof host - 1] = '\0';
    if (!host[0])
        pc_fmt(host, sizeof host, "unknown");

    if (!pc_ascii_ieq(dest, "stderr")) {
        if (pc_report_to_file(dest, info, &st, rank, host) == 0 && pc_opt.log < PC_LOG_INFO)
            return;
        /* Also the summary on stderr: asked for, or the file failed. */
    }
    pc_report_emit_fd(2, PC_REPORT_TEXT, flags, info, &st, rank, host);
}
