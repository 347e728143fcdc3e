/* figures.c - the report's numbers, computed once (see figures.h): rates,
 * shares, percentiles, the rank as a number. */
#include "config.h"
#include <string.h>
#include "util/hist.h"
#include "util/options.h"
#include "report/figures.h"

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

void pc_report_compute(struct pc_report *r, const struct pc_report_info *info,
                       const struct pc_stats *st, const char *rank, const char *host)
{
    uint64_t tries = st->alloc_hits + st->alloc_misses;
    const char *p;

    memset(r, 0, sizeof *r);
    r->info = info;
    r->st = st;
    r->rank = rank && *rank ? rank : NULL;
    r->host = host ? host : "unknown";
    r->mode = info->mode == PC_REPORT_MODE_MIXED ? "mixed" : pc_mode_name(info->mode);
    r->observe = info->mode == PC_MODE_OBSERVE;
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
