/* stats.h - counters declared once in stats.def.  Updates are relaxed atomics:
 * the report reads them at exit, nobody needs them ordered. */
#ifndef PC_STATS_H
#define PC_STATS_H
#include <stdint.h>
#include "util/hist.h"

#define PC_STAT_KIND_COUNT 0
#define PC_STAT_KIND_BYTES 1
#define PC_STAT_KIND_NSEC  2

#define PC_STAT_MERGE_SUM 0
#define PC_STAT_MERGE_MAX 1

/* The per-API and per-copy-kind lists of stats.def (every member a uint64_t,
 * so that snapshots and merges can walk them as words). */
#define STAT(name, kind, help)
#define GAUGE(name, kind, help)
enum pc_api_id {
#define PC_API(id, key, help) PC_API_##id,
#include "util/stats.def"
#undef PC_API
    PC_API_COUNT
};
enum pc_copy_id {
#define PC_COPY(id, key, help) PC_COPY_##id,
#include "util/stats.def"
#undef PC_COPY
    PC_COPY_COUNT
};
/* Two fields cost the counting call nothing (pc_stats_snapshot fills them
 * in): calls is the sum of hist, real_calls is calls less runtime_skipped,
 * the rare calls served with no runtime call at all. */
struct pc_api_stat {
#define PC_API_FIELD(name, kind, merge, help) uint64_t name;
#include "util/stats.def"
#undef PC_API_FIELD
    uint64_t hist[PC_HIST_BUCKETS];   /* calls by duration (hist.h) */
    uint64_t runtime_skipped;         /* calls that reached no runtime function */
};
struct pc_copy_stat {
#define PC_COPY_FIELD(name, kind, merge, help) uint64_t name;
#include "util/stats.def"
#undef PC_COPY_FIELD
};
#undef STAT
#undef GAUGE

struct pc_stats {
#define STAT(name, kind, help) uint64_t name;
#define GAUGE(name, kind, help) int64_t name; int64_t name##_peak;
#include "util/stats.def"
#undef STAT
#undef GAUGE
    struct pc_api_stat api[PC_API_COUNT];
    struct pc_copy_stat copy[PC_COPY_COUNT];
};

extern struct pc_stats pc_stats;

#define PC_STAT_ADD(name, v) __atomic_fetch_add(&pc_stats.name, (uint64_t)(v), __ATOMIC_RELAXED)
#define PC_STAT_INC(name)    PC_STAT_ADD(name, 1)
#define PC_STAT_GET(name)    __atomic_load_n(&pc_stats.name, __ATOMIC_RELAXED)

/* Move a gauge by delta and raise its peak. */
#define PC_GAUGE_ADD(name, delta) \
    pc_gauge_add(&pc_stats.name, &pc_stats.name##_peak, (int64_t)(delta))
void pc_gauge_add(int64_t *cur, int64_t *peak, int64_t delta);

/* Monotonic clock in nanoseconds. */
uint64_t pc_now_ns(void);

/* Reset every statistic (used in a forked child). */
void pc_stats_reset(void);

/* A consistent-enough copy for the report: each field read atomically,
 * and each API's calls and real_calls worked out (struct pc_api_stat). */
void pc_stats_snapshot(struct pc_stats *out);

/* One row per stats.def entry, in its order, for code that walks them all
 * (the report's JSON and table).  A GAUGE row has peak_name/peak_offset;
 * its value is int64_t, a STAT's uint64_t. */
struct pc_stat_desc {
    const char *name;
    const char *peak_name;     /* NULL for a STAT */
    const char *help;
    int kind;                  /* PC_STAT_KIND_* */
    unsigned long offset;      /* of the value in struct pc_stats */
    unsigned long peak_offset;
};
extern const struct pc_stat_desc pc_stat_descs[];
extern const unsigned pc_stat_ndescs;

/* The PC_API/PC_COPY rows (key and help) and the fields each row has, for
 * the same kind of walking.  A field's offset is within its row's struct. */
struct pc_row_desc {
    const char *key;
    const char *help;
};
struct pc_field_desc {
    const char *name;
    const char *help;
    int kind;                  /* PC_STAT_KIND_* */
    int merge;                 /* PC_STAT_MERGE_* */
    unsigned long offset;
};
extern const struct pc_row_desc pc_api_rows[PC_API_COUNT];
extern const struct pc_row_desc pc_copy_rows[PC_COPY_COUNT];
extern const struct pc_field_desc pc_api_fields[];
extern const unsigned pc_api_nfields;
extern const struct pc_field_desc pc_copy_fields[];
extern const unsigned pc_copy_nfields;

#endif
