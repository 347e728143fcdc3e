/* stats.h - counters declared once in stats.def.  Updates are relaxed atomics:
 * the report reads them at exit, nobody needs them ordered. */
#ifndef PC_STATS_H
#define PC_STATS_H
#include <stdint.h>

#define PC_STAT_KIND_COUNT 0
#define PC_STAT_KIND_BYTES 1
#define PC_STAT_KIND_NSEC  2

struct pc_stats {
#define STAT(name, kind, help) uint64_t name;
#define GAUGE(name, kind, help) int64_t name; int64_t name##_peak;
#include "stats.def"
#undef STAT
#undef GAUGE
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

/* A consistent-enough copy for the report: each field read atomically. */
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

#endif
