/* figures.h - the numbers the exit report shows, computed once from the
 * statistics (figures.c) and read by both renderings of them: the document
 * (report.c) and its sentences (summary.h, hints.h). */
#ifndef PC_REPORT_FIGURES_H
#define PC_REPORT_FIGURES_H
#include <stdint.h>
#include "report/info.h"
#include "util/emit.h"
#include "util/stats.h"

/* Everything both renderings read, computed once. */
struct pc_report {
    const struct pc_report_info *info;
    const struct pc_stats *st;
    const char *rank;          /* NULL when unset */
    const char *host;
    const char *mode;          /* "cache", "observe", "mixed"; NULL: none known */
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

/* Fill r from info and st; rank NULL or empty: unset; host NULL: "unknown". */
void pc_report_compute(struct pc_report *r, const struct pc_report_info *info,
                       const struct pc_stats *st, const char *rank, const char *host);

/* Short-lived text of one value, for sentences. */
struct pc_h {
    char s[48];
};

static inline const char *pc_hu(struct pc_h *h, int type, uint64_t v)
{
    pc_emit_human(h->s, sizeof h->s, type, &v);
    return h->s;
}

static inline const char *pc_hi(struct pc_h *h, int type, int64_t v)
{
    pc_emit_human(h->s, sizeof h->s, type | PC_EMIT_SIGNED, &v);
    return h->s;
}

#endif
