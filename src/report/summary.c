/* summary.c - the exit report's summary: one sentence per thing worth
 * saying, from the figures (figures.h), written through the emitter. */
#include "config.h"
#include "util/fmt.h"
#include "report/figures.h"
#include "report/summary.h"
#include "report/bysource.h"

/* The runtime's own rates for pageable copies on the H200, the lower of
 * DESIGN.md's measured figures, in GB/s (bytes per ns): staging is weighed
 * against these when the process left no pageable copy to the runtime to
 * measure them on. */
#define PC_PAGEABLE_H2D_GBPS 6.5
#define PC_PAGEABLE_D2H_GBPS 11.0

/* A rate worth a word in the summary: below 1 MiB timed, a copy's time is
 * its latency (PyTorch's 4-byte .item() reads), and "0.0 GB/s" says nothing.
 * The JSON report keeps every rate. */
#define PC_RATE_MIN_BYTES (1u << 20)

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
 * measured in this process on copies left to it, else the figures above)
 * minus the time the staged copies took; negative when staging was the
 * slower one. */
static int64_t pc_stage_saved_ns(const struct pc_stats *st)
{
    double h2d_rate = st->stage_h2d_driver_ns ? (double)st->stage_h2d_driver_bytes / (double)st->stage_h2d_driver_ns
                                              : PC_PAGEABLE_H2D_GBPS;
    double d2h_rate = st->stage_d2h_driver_ns ? (double)st->stage_d2h_driver_bytes / (double)st->stage_d2h_driver_ns
                                              : PC_PAGEABLE_D2H_GBPS;
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

static int pc_rate_worth(const struct pc_report *r, int i)
{
    return r->gbps_ok[i] && r->st->copy[i].timed_bytes >= PC_RATE_MIN_BYTES;
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

void pc_report_summary(struct pc_emitter *e, const struct pc_report *r)
{
    const struct pc_stats *st = r->st;
    const struct pc_report_info *in = r->info;
    struct pc_h a, b, c, d, f, g0, h0, hr;
    char extra[200];

    pc_emit_line(e, "exit report (%s mode, %s%s%s on %s%s)", r->mode ? r->mode : "unknown",
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

    /* Fast blocks exist in cache mode only. */
    int fast_seen = !r->observe && (st->fast_alloc_calls || st->fast_alloc_fallbacks);
    if (st->real_alloc_calls || st->real_free_calls || fast_seen) {
        char fast[200] = "";
        extra[0] = '\0';
        if (st->real_alloc_fail)
            pc_fmt(extra, sizeof extra, " (%s failed, %s for lack of memory with idle blocks held: %s served a larger idle block; %s made at the size asked for)",
                   pc_hu(&d, PC_EMIT_COUNT, st->real_alloc_fail),
                   pc_hu(&f, PC_EMIT_COUNT, st->oom_retries),
                   pc_hu(&c, PC_EMIT_COUNT, st->oom_larger),
                   pc_hu(&a, PC_EMIT_COUNT, st->oom_exact));
        /* Fast blocks (PINCACHE_FAST_ALLOC): the misses cudaHostAlloc did not make. */
        if (fast_seen)
            pc_fmt(fast, sizeof fast, "; fast blocks %s for %s in %s (about %s saved; %s fell back)",
                   pc_hu(&a, PC_EMIT_COUNT, st->fast_alloc_calls),
                   pc_hu(&b, PC_EMIT_BYTES, st->fast_alloc_bytes),
                   pc_hu(&c, PC_EMIT_NSEC, st->fast_alloc_ns),
                   pc_hu(&d, PC_EMIT_NSEC, st->fast_alloc_saved_ns),
                   pc_hu(&f, PC_EMIT_COUNT, st->fast_alloc_fallbacks));
        pc_emit_line(e, "real calls: cudaHostAlloc %s times%s for %s in %s; cudaFreeHost %s times in %s%s",
                     pc_hu(&a, PC_EMIT_COUNT, st->real_alloc_calls), extra,
                     pc_hu(&b, PC_EMIT_BYTES, st->real_alloc_bytes),
                     pc_hu(&c, PC_EMIT_NSEC, st->real_alloc_ns),
                     pc_hu(&g0, PC_EMIT_COUNT, st->real_free_calls),
                     pc_hu(&h0, PC_EMIT_NSEC, st->real_free_ns), fast);
    }

    if (r->observe && st->live_bytes_peak > 0 && !pc_report_pinned_elsewhere(r)) {
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

    pc_report_pinned_lines(e, r);
    pc_report_times(e, r);
    pc_report_waits(e, r);
    pc_report_timeline(e, r);
    if (st->memcpy_calls)
        pc_report_copies(e, r);

    if (st->stage_h2d_calls || st->stage_d2h_calls) {
        int64_t saved = pc_stage_saved_ns(st);
        pc_copy_dirs(extra, sizeof extra, st->stage_h2d_calls, st->stage_h2d_bytes,
                     st->stage_h2d_ns, st->stage_d2h_calls, st->stage_d2h_bytes, st->stage_d2h_ns);
        char node[160] = "";
        /* The node's share of copy threads (stage/node.h), when it was one. */
        if (st->node_threads_peak > 0)
            pc_fmt(node, sizeof node, "; node share: %s copy threads at the last copy (at most %s), up to %s "
                                      "processes staging on its GPU",
                   pc_hi(&b, PC_EMIT_COUNT, st->node_threads), pc_hi(&c, PC_EMIT_COUNT, st->node_threads_peak),
                   pc_hi(&d, PC_EMIT_COUNT, st->node_ranks_peak));
        else if (st->node_refused)
            pc_fmt(node, sizeof node, "; the node's shared file was refused: this process's own copy threads");
        pc_emit_line(e, "pageable copies staged: %s; about %s %s than at the driver's pageable rate%s",
                     extra, pc_hu(&a, PC_EMIT_NSEC, (uint64_t)(saved < 0 ? -saved : saved)),
                     saved < 0 ? "slower" : "faster", node);
    }
    if (st->stage_h2d_driver_calls || st->stage_d2h_driver_calls) {
        pc_copy_dirs(extra, sizeof extra, st->stage_h2d_driver_calls, st->stage_h2d_driver_bytes,
                     st->stage_h2d_driver_ns, st->stage_d2h_driver_calls,
                     st->stage_d2h_driver_bytes, st->stage_d2h_driver_ns);
        pc_emit_line(e, "pageable copies left to the runtime: %s", extra);
    }
    for (unsigned dev = 0; dev < 64; dev++)
        if (in->stage_native >> dev & 1)
            pc_emit_line(e, "staging off on device %u: it reads pageable memory natively "
                            "(PageableMemoryAccessUsesHostPageTables)", dev);

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
