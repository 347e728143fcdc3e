/* stats.c - the counters of stats.def, their peaks and the table that lets
 * the report walk them without naming any. */
#include "config.h"
#include <stddef.h>
#include <time.h>
#include "stats.h"

struct pc_stats pc_stats;

const struct pc_stat_desc pc_stat_descs[] = {
#define STAT(name, kind, help) \
    { #name, NULL, help, PC_STAT_KIND_##kind, offsetof(struct pc_stats, name), 0 },
#define GAUGE(name, kind, help) \
    { #name, #name "_peak", help, PC_STAT_KIND_##kind, offsetof(struct pc_stats, name), \
      offsetof(struct pc_stats, name##_peak) },
#include "stats.def"
#undef STAT
#undef GAUGE
};
const unsigned pc_stat_ndescs = sizeof pc_stat_descs / sizeof pc_stat_descs[0];

void pc_gauge_add(int64_t *cur, int64_t *peak, int64_t delta)
{
    int64_t now = __atomic_add_fetch(cur, delta, __ATOMIC_RELAXED);
    int64_t seen = __atomic_load_n(peak, __ATOMIC_RELAXED);

    /* Raise the peak unless another thread already raised it past us. */
    while (now > seen &&
           !__atomic_compare_exchange_n(peak, &seen, now, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        ;
}

uint64_t pc_now_ns(void)
{
    struct timespec ts;

    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
        return 0;
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Field by field with atomic stores: other threads may still be counting
 * (reset also serves tests), and a plain memset would race with them. */
void pc_stats_reset(void)
{
#define STAT(name, kind, help) __atomic_store_n(&pc_stats.name, 0, __ATOMIC_RELAXED);
#define GAUGE(name, kind, help) \
    __atomic_store_n(&pc_stats.name, 0, __ATOMIC_RELAXED); \
    __atomic_store_n(&pc_stats.name##_peak, 0, __ATOMIC_RELAXED);
#include "stats.def"
#undef STAT
#undef GAUGE
}

void pc_stats_snapshot(struct pc_stats *out)
{
#define STAT(name, kind, help) out->name = __atomic_load_n(&pc_stats.name, __ATOMIC_RELAXED);
#define GAUGE(name, kind, help) \
    out->name = __atomic_load_n(&pc_stats.name, __ATOMIC_RELAXED); \
    out->name##_peak = __atomic_load_n(&pc_stats.name##_peak, __ATOMIC_RELAXED);
#include "stats.def"
#undef STAT
#undef GAUGE
}
