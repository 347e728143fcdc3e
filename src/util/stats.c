/* stats.c - the counters of stats.def, their peaks and the table that lets
 * the report walk them without naming any. */
#include "config.h"
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
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

/* --- the threads' own counters (stats.h) --- */

struct pc_stats_block {
    struct pc_stats s;             /* its counters; its gauges stay 0 */
    struct pc_stats_block *next;   /* set before the block is published, never changed */
    int used;                      /* atomic: a thread counts into it */
};
static struct pc_stats_block *pc_blocks;   /* atomic: every block ever made, never removed */
static pthread_key_t pc_stats_key;         /* its destructor gives a block back */
static int pc_stats_key_ok;                /* written once, under pc_stats_once */
static pthread_once_t pc_stats_once = PTHREAD_ONCE_INIT;
__thread struct pc_stats *pc_tls_stats __attribute__((tls_model("initial-exec")));

/* Every counter word of struct pc_stats and how two threads' shares of it
 * merge: the STATs, then each api row's fields, histogram and
 * runtime_skipped, then each copy row's fields. */
static void pc_each_counter(void (*fn)(size_t off, int merge, void *arg), void *arg)
{
    for (unsigned i = 0; i < pc_stat_ndescs; i++)
        if (!pc_stat_descs[i].peak_name)
            fn(pc_stat_descs[i].offset, PC_STAT_MERGE_SUM, arg);
    for (size_t r = 0; r < PC_API_COUNT; r++) {
        size_t row = offsetof(struct pc_stats, api) + r * sizeof(struct pc_api_stat);
        for (unsigned i = 0; i < pc_api_nfields; i++)
            fn(row + pc_api_fields[i].offset, pc_api_fields[i].merge, arg);
        for (size_t h = 0; h < PC_HIST_BUCKETS; h++)
            fn(row + offsetof(struct pc_api_stat, hist) + h * sizeof(uint64_t), PC_STAT_MERGE_SUM, arg);
        fn(row + offsetof(struct pc_api_stat, runtime_skipped), PC_STAT_MERGE_SUM, arg);
    }
    for (size_t r = 0; r < PC_COPY_COUNT; r++)
        for (unsigned i = 0; i < pc_copy_nfields; i++)
            fn(offsetof(struct pc_stats, copy) + r * sizeof(struct pc_copy_stat) + pc_copy_fields[i].offset,
               pc_copy_fields[i].merge, arg);
}

#define PC_WORD(s, off) ((uint64_t *)((char *)(s) + (off)))

/* Fold a block's word into pc_stats (atomically: other threads fold too). */
static void pc_fold_word(size_t off, int merge, void *arg)
{
    uint64_t *w = PC_WORD(arg, off), v = __atomic_load_n(w, __ATOMIC_RELAXED);

    if (!v)
        return;
    if (merge == PC_STAT_MERGE_MAX)
        pc_count_max(PC_WORD(&pc_stats, off), v, 0);
    else
        __atomic_fetch_add(PC_WORD(&pc_stats, off), v, __ATOMIC_RELAXED);
    __atomic_store_n(w, 0, __ATOMIC_RELAXED);
}

/* A thread ends: its counts go to pc_stats, its block to the next thread.
 * A report read at that moment may see them in neither place or in both. */
static void pc_stats_thread_done(void *arg)
{
    struct pc_stats_block *b = arg;

    pc_each_counter(pc_fold_word, &b->s);
    if (pc_tls_stats == &b->s)
        pc_tls_stats = NULL;
    __atomic_store_n(&b->used, 0, __ATOMIC_RELEASE);
}

static void pc_stats_key_init(void)
{
    pc_stats_key_ok = pthread_key_create(&pc_stats_key, pc_stats_thread_done) == 0;
}

void pc_stats_init(void)
{
    pthread_once(&pc_stats_once, pc_stats_key_init);
}

struct pc_stats *pc_stats_mine(void)
{
    struct pc_stats_block *b;
    int zero;

    pc_stats_init();
    if (!pc_stats_key_ok)
        return NULL;
    for (b = __atomic_load_n(&pc_blocks, __ATOMIC_ACQUIRE); b; b = b->next) {
        zero = 0;
        if (__atomic_compare_exchange_n(&b->used, &zero, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
            break;
    }
    if (!b) {
        if ((b = calloc(1, sizeof *b)) == NULL)
            return NULL;
        b->used = 1;
        b->next = __atomic_load_n(&pc_blocks, __ATOMIC_RELAXED);
        while (!__atomic_compare_exchange_n(&pc_blocks, &b->next, b, 1, __ATOMIC_RELEASE, __ATOMIC_RELAXED))
            ;
    }
    if (pthread_setspecific(pc_stats_key, b) != 0) {
        __atomic_store_n(&b->used, 0, __ATOMIC_RELEASE);
        return NULL;
    }
    pc_tls_stats = &b->s;
    return &b->s;
}

static void pc_zero_word(size_t off, int merge, void *arg)
{
    (void)merge;
    __atomic_store_n(PC_WORD(arg, off), 0, __ATOMIC_RELAXED);
}

struct pc_sum {
    const struct pc_stats *from;
    struct pc_stats *to;
};

static void pc_sum_word(size_t off, int merge, void *arg)
{
    struct pc_sum *m = arg;
    uint64_t v = __atomic_load_n(PC_WORD(m->from, off), __ATOMIC_RELAXED), *o = PC_WORD(m->to, off);

    *o = merge == PC_STAT_MERGE_MAX ? (v > *o ? v : *o) : *o + v;
}

uint64_t pc_stats_get(size_t off)
{
    uint64_t v = __atomic_load_n(PC_WORD(&pc_stats, off), __ATOMIC_RELAXED);

    for (struct pc_stats_block *b = __atomic_load_n(&pc_blocks, __ATOMIC_ACQUIRE); b; b = b->next)
        v += __atomic_load_n(PC_WORD(&b->s, off), __ATOMIC_RELAXED);
    return v;
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
    for (struct pc_stats_block *b = __atomic_load_n(&pc_blocks, __ATOMIC_ACQUIRE); b; b = b->next)
        pc_each_counter(pc_zero_word, &b->s);
}

void pc_stats_snapshot(struct pc_stats *out)
{
    const uint64_t *w = (const uint64_t *)pc_stats.api;
    uint64_t *o = (uint64_t *)out->api;
    for (size_t i = 0; i < PC_ROWS_WORDS(&pc_stats); i++)
        o[i] = __atomic_load_n(&w[i], __ATOMIC_RELAXED);
#define STAT(name, kind, help) out->name = __atomic_load_n(&pc_stats.name, __ATOMIC_RELAXED);
#define GAUGE(name, kind, help) \
    out->name = __atomic_load_n(&pc_stats.name, __ATOMIC_RELAXED); \
    out->name##_peak = __atomic_load_n(&pc_stats.name##_peak, __ATOMIC_RELAXED);
#include "util/stats.def"
#undef STAT
#undef GAUGE
    for (struct pc_stats_block *b = __atomic_load_n(&pc_blocks, __ATOMIC_ACQUIRE); b; b = b->next) {
        struct pc_sum m = { &b->s, out };
        pc_each_counter(pc_sum_word, &m);
    }
    /* Derived, once every thread's counts are in (stats.h). */
    for (size_t i = 0; i < PC_API_COUNT; i++) {
        struct pc_api_stat *a = &out->api[i];

        a->calls = 0;
        for (size_t j = 0; j < PC_HIST_BUCKETS; j++)
            a->calls += a->hist[j];
        /* read apart from the histogram: never below 0 */
        a->real_calls = a->calls > a->runtime_skipped ? a->calls - a->runtime_skipped : 0;
    }
}
