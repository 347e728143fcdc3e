/* stats.c - the counters of stats.def, their peaks and the table that lets
 * the report walk them without naming any. */
#include "config.h"
#include <stddef.h>
#include <time.h>
#include "util/stats.h"

struct pc_stats pc_stats;

const struct pc_stat_desc pc_stat_descs[] = {
#define STAT(name, kind, help) \
    { #name, NULL, help, PC_STAT_KIND_##kind, offsetof(struct pc_stats, name), 0 },
#define GAUGE(name, kind, help) \
    { #name, #name "_peak", help, PC_STAT_KIND_##kind, offsetof(struct pc_stats, name), \
      offsetof(struct pc_stats, name##_peak) },
#include "util/stats.def"
#undef STAT
#undef GAUGE
};
const unsigned pc_stat_ndescs = sizeof pc_stat_descs / sizeof pc_stat_descs[0];

#define STAT(name, kind, help)
#define GAUGE(name, kind, help)
const struct pc_row_desc pc_api_rows[PC_API_COUNT] = {
#define PC_API(id, key, help) { key, help },
#include "util/stats.def"
#undef PC_API
};
const struct pc_row_desc pc_copy_rows[PC_COPY_COUNT] = {
#define PC_COPY(id, key, help) { key, help },
#include "util/stats.def"
#undef PC_COPY
};
const struct pc_field_desc pc_api_fields[] = {
#define PC_API_FIELD(name, kind, merge, help) \
    { #name, help, PC_STAT_KIND_##kind, PC_STAT_MERGE_##merge, offsetof(struct pc_api_stat, name) },
#include "util/stats.def"
#undef PC_API_FIELD
};
const unsigned pc_api_nfields = sizeof pc_api_fields / sizeof pc_api_fields[0];
const struct pc_field_desc pc_copy_fields[] = {
#define PC_COPY_FIELD(name, kind, merge, help) \
    { #name, help, PC_STAT_KIND_##kind, PC_STAT_MERGE_##merge, offsetof(struct pc_copy_stat, name) },
#include "util/stats.def"
#undef PC_COPY_FIELD
};
const unsigned pc_copy_nfields = sizeof pc_copy_fields / sizeof pc_copy_fields[0];
#undef STAT
#undef GAUGE

/* The api and copy arrays as one run of words (all uint64_t). */
#define PC_ROWS_WORDS(s) \
    ((sizeof (s)->api + sizeof (s)->copy) / sizeof(uint64_t))
_Static_assert(offsetof(struct pc_stats, copy) == offsetof(struct pc_stats, api) + sizeof pc_stats.api,
               "api and copy rows are contiguous");
_Static_assert(sizeof(struct pc_api_stat) % sizeof(uint64_t) == 0 &&
               sizeof(struct pc_copy_stat) % sizeof(uint64_t) == 0, "rows are words");

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
#include "util/stats.def"
#undef STAT
#undef GAUGE
    uint64_t *w = (uint64_t *)pc_stats.api;
    for (size_t i = 0; i < PC_ROWS_WORDS(&pc_stats); i++)
        __atomic_store_n(&w[i], 0, __ATOMIC_RELAXED);
}

void pc_stats_snapshot(struct pc_stats *out)
{
    const uint64_t *w = (const uint64_t *)pc_stats.api;
    uint64_t *o = (uint64_t *)out->api;
    for (size_t i = 0; i < PC_ROWS_WORDS(&pc_stats); i++)
        o[i] = __atomic_load_n(&w[i], __ATOMIC_RELAXED);
    for (size_t i = 0; i < PC_API_COUNT; i++) {
        struct pc_api_stat *a = &out->api[i];

        a->calls = 0;
        for (size_t j = 0; j < PC_HIST_BUCKETS; j++)
            a->calls += a->hist[j];
        /* read apart from the histogram: never below 0 */
        a->real_calls = a->calls > a->runtime_skipped ? a->calls - a->runtime_skipped : 0;
    }

#define STAT(name, kind, help) out->name = __atomic_load_n(&pc_stats.name, __ATOMIC_RELAXED);
#define GAUGE(name, kind, help) \
    out->name = __atomic_load_n(&pc_stats.name, __ATOMIC_RELAXED); \
    out->name##_peak = __atomic_load_n(&pc_stats.name##_peak, __ATOMIC_RELAXED);
#include "util/stats.def"
#undef STAT
#undef GAUGE
}
