/* stats.h - counters declared once in stats.def.  Updates are relaxed atomics:
 * the report reads them at exit, nobody needs them ordered.
 *
 * The counters (STATs, the api and copy rows: everything that merges by
 * sum or max) are counted per thread: each thread adds to a block of its
 * own with plain loads and stores (no locked read-modify-write, no cache
 * line shared with other threads: a cache hit makes about twenty counts),
 * and readers add pc_stats and every block (pc_stats_snapshot,
 * PC_STAT_GET).  A block is a struct pc_stats (18 KB), taken at a thread's
 * first count; the thread's exit folds it into pc_stats and frees it for
 * the next thread.  Gauges are levels with peaks, which do not add up:
 * they stay in pc_stats, moved by atomic adds (PC_GAUGE_ADD) or, the
 * pool's, set under its lock (PC_GAUGE_SET). */
#ifndef PC_STATS_H
#define PC_STATS_H
#include <stddef.h>
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

/* This thread's block (NULL until its first count). */
extern __thread struct pc_stats *pc_tls_stats __attribute__((tls_model("initial-exec")));
/* Take a block for this thread; NULL when none can be had (then it counts
 * into pc_stats itself, atomically). */
struct pc_stats *pc_stats_mine(void);
/* Start-up: ready the blocks' hand-back before any thread counts. */
void pc_stats_init(void);

/* Where this thread counts: its block (*mine = 1) or pc_stats (*mine = 0). */
static inline struct pc_stats *pc_stats_here(int *mine)
{
    struct pc_stats *s = pc_tls_stats;

    if (__builtin_expect(s == NULL, 0) && (s = pc_stats_mine()) == NULL) {
        *mine = 0;
        return &pc_stats;
    }
    *mine = 1;
    return s;
}

/* Add to a counter word of pc_stats_here's answer: stores in a thread's
 * own block (atomic, so that readers see whole words), an atomic add in
 * pc_stats. */
static inline void pc_count(uint64_t *w, uint64_t v, int mine)
{
    if (mine)
        __atomic_store_n(w, __atomic_load_n(w, __ATOMIC_RELAXED) + v, __ATOMIC_RELAXED);
    else
        __atomic_fetch_add(w, v, __ATOMIC_RELAXED);
}

/* Raise a max word (merge MAX) to v. */
static inline void pc_count_max(uint64_t *w, uint64_t v, int mine)
{
    uint64_t cur = __atomic_load_n(w, __ATOMIC_RELAXED);

    if (mine) {
        if (v > cur)
            __atomic_store_n(w, v, __ATOMIC_RELAXED);
        return;
    }
    while (v > cur && !__atomic_compare_exchange_n(w, &cur, v, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        ;
}

#define PC_STAT_ADD(name, v)                                                 \
    do {                                                                     \
        int pc_m_;                                                           \
        struct pc_stats *pc_s_ = pc_stats_here(&pc_m_);                      \
        pc_count(&pc_s_->name, (uint64_t)(v), pc_m_);                        \
    } while (0)
#define PC_STAT_INC(name)    PC_STAT_ADD(name, 1)
/* A STAT's total, or a gauge's value (gauges are only in pc_stats). */
#define PC_STAT_GET(name) ((__typeof__(pc_stats.name))pc_stats_get(offsetof(struct pc_stats, name)))
uint64_t pc_stats_get(size_t off);

/* Move a gauge by delta and raise its peak. */
#define PC_GAUGE_ADD(name, delta) \
    pc_gauge_add(&pc_stats.name, &pc_stats.name##_peak, (int64_t)(delta))
void pc_gauge_add(int64_t *cur, int64_t *peak, int64_t delta);

/* Set a gauge and raise its peak, with stores only: for a gauge whose every
 * move is made under one lock (the pool's, core/pool.c). */
#define PC_GAUGE_SET(name, v) \
    pc_gauge_set(&pc_stats.name, &pc_stats.name##_peak, (int64_t)(v))
static inline void pc_gauge_set(int64_t *cur, int64_t *peak, int64_t v)
{
    __atomic_store_n(cur, v, __ATOMIC_RELAXED);
    if (v > __atomic_load_n(peak, __ATOMIC_RELAXED))
        __atomic_store_n(peak, v, __ATOMIC_RELAXED);
}

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
