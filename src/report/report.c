/* report.c - the exit report's document: its skeleton (the header, every
 * statistic of stats.def, the per-API and per-copy rows, the derived
 * figures), then the sentences (summary.h, hints.h), written through one emitter as
 * text or JSON.  Where it goes: output.c.
 *
 * Runs at exit, possibly after the CUDA runtime was torn down: only system
 * calls and stack buffers. */
#include "config.h"
#include <errno.h>
#include "util/emit.h"
#include "util/hist.h"
#include "util/stats.h"
#include "report/figures.h"
#include "report/report.h"
#include "report/hints.h"
#include "report/summary.h"
#include "report/bysource.h"

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

/* "staging": what staging decided per device. */
static void pc_report_staging(struct pc_emitter *e, const struct pc_report_info *in)
{
    uint64_t dev[64];
    unsigned n = 0;

    if (e->format != PC_EMIT_JSON)
        return;              /* text: summary.c's sentences */
    for (unsigned d = 0; d < 64; d++)
        if (in->stage_native >> d & 1)
            dev[n++] = d;
    pc_emit_dict_begin(e, "staging", "staging");
    pc_emit_pairs(e, "native_devices", dev, NULL, n);
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
    pc_emit_kv(e, "mode", "PINCACHE_MODE", PC_EMIT_STR, r->mode);
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
        int type = pc_emit_kind(d->kind);
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
    pc_report_pinned(e, r);
    pc_report_rows(e, r);
    pc_report_staging(e, in);

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
    /* Both are large (7 KiB), too large for the stack of the thread that
     * calls exit(), which may be the least pthreads allows: static, as one
     * report is written at a time (at exit; the CLI).  No malloc here. */
    static struct pc_emitter e;
    static struct pc_report r;

    if (!info || !st)
        return -EINVAL;
    pc_report_compute(&r, info, st, rank, host);
    pc_emit_init(&e, fd, format == PC_REPORT_JSON ? PC_EMIT_JSON : PC_EMIT_TEXT, info->pid,
                 (flags & PC_REPORT_DETAIL) != 0);
    pc_report_emit(&e, &r);
    return pc_emit_end(&e);
}
