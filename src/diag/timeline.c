/* timeline.c - GPU busy intervals and the synchronizing calls measured
 * against them (see timeline.h). */
#include "config.h"
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include "util/stats.h"
#include "diag/timeline.h"

#define PC_TL_TRACE_MAX (1ul << 24)

struct pc_tl_busy {
    uint64_t s, e;
};

struct pc_tl_call {
    uint64_t t0, t1;
    int api;
};

/* L.lock protects everything in L.  Taken once per CUPTI buffer and once per
 * synchronizing call (which costs far more than the lock). */
static struct {
    pthread_mutex_t lock;
    /* Busy intervals, sorted by start, disjoint: slots [bfirst, bend)
     * (absolute counts; slot = index & (PC_TL_BUSY_MAX - 1)). */
    struct pc_tl_busy busy[PC_TL_BUSY_MAX];
    uint64_t bfirst, bend;
    uint64_t floor;            /* end of the last interval that left the ring */
    /* Pending calls, in the order they ended: [cfirst, cend). */
    struct pc_tl_call calls[PC_TL_CALLS_MAX];
    uint64_t cfirst, cend;
} L = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* The trace ring: written under L.lock, read at exit without it. */
static struct {
    struct pc_gpu_ev *ring;
    uint64_t mask;
    uint64_t next;
} TR;

#define BUSY(i) L.busy[(i) & (PC_TL_BUSY_MAX - 1)]
#define CALL(i) L.calls[(i) & (PC_TL_CALLS_MAX - 1)]

void pc_tl_lock(void)
{
    pthread_mutex_lock(&L.lock);
}

void pc_tl_unlock(void)
{
    pthread_mutex_unlock(&L.lock);
}

/* First busy interval (absolute index) whose end is after t; bend if none.
 * Ends are sorted because the intervals are sorted and disjoint. */
static uint64_t pc_tl_first_ending_after(uint64_t t)
{
    uint64_t lo = L.bfirst, hi = L.bend;

    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (BUSY(mid).e > t)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

/* Measure one call against the busy intervals and count it. */
static void pc_tl_resolve(const struct pc_tl_call *c)
{
    uint64_t k = pc_tl_first_ending_after(c->t0), last, end, next;
    struct pc_api_stat *a = c->api >= 0 && c->api < PC_API_COUNT ? &pc_stats.api[c->api] : NULL;

    PC_STAT_INC(cupti_sync_calls);
    if (k == L.bend || BUSY(k).s >= c->t1)
        return;                        /* the GPU had nothing running during the call */
    last = k;
    while (last + 1 < L.bend && BUSY(last + 1).s < c->t1)
        last++;
    end = BUSY(last).e < c->t1 ? BUSY(last).e : c->t1;
    PC_STAT_INC(cupti_sync_calls_waited);
    PC_STAT_ADD(cupti_sync_stall_ns, end - c->t0);
    if (a) {
        __atomic_fetch_add(&a->gpu_waited, 1, __ATOMIC_RELAXED);
        __atomic_fetch_add(&a->gpu_stall_ns, end - c->t0, __ATOMIC_RELAXED);
    }
    /* The bubble the call left: from the drain to the next activity.  None
     * when other work was still running at its return. */
    if (BUSY(last).e <= c->t1 && last + 1 < L.bend) {
        next = BUSY(last + 1).s;
        if (next > end)
            PC_STAT_ADD(gpu_idle_after_sync_ns, next - end);
    }
}

/* Resolve the oldest pending calls while pred says so. */
static void pc_tl_resolve_calls_before(uint64_t t0_limit)
{
    while (L.cfirst < L.cend && CALL(L.cfirst).t0 < t0_limit) {
        pc_tl_resolve(&CALL(L.cfirst));
        L.cfirst++;
    }
}

/* Make room for one interval: the oldest leaves, after every call that could
 * still need it has been resolved. */
static void pc_tl_evict_busy(void)
{
    struct pc_tl_busy b = BUSY(L.bfirst);

    pc_tl_resolve_calls_before(b.e);
    PC_STAT_ADD(gpu_busy_ns, b.e - b.s);
    if (b.e > L.floor)
        L.floor = b.e;
    L.bfirst++;
}

static void pc_tl_merge(uint64_t s, uint64_t e)
{
    uint64_t k, last, i, n;

    if (e < s)
        e = s;
    if (s < L.floor)
        return;                        /* older than what already left the ring */
    k = pc_tl_first_ending_after(s);
    /* Touching counts as overlapping: [s,e] joins an interval ending at s. */
    if (k > L.bfirst && BUSY(k - 1).e == s)
        k--;
    if (k == L.bend || BUSY(k).s > e) {
        /* No overlap: insert at k, shifting the later ones up. */
        if (L.bend - L.bfirst == PC_TL_BUSY_MAX) {
            if (k == L.bfirst) {
                /* Older than everything in a full ring: it cannot be kept. */
                PC_STAT_ADD(gpu_busy_ns, e - s);
                return;
            }
            pc_tl_evict_busy();
        }
        for (i = L.bend; i > k; i--)
            BUSY(i) = BUSY(i - 1);
        BUSY(k).s = s;
        BUSY(k).e = e;
        L.bend++;
        return;
    }
    /* Overlaps k .. last: they become one. */
    last = k;
    while (last + 1 < L.bend && BUSY(last + 1).s <= e)
        last++;
    if (s < BUSY(k).s)
        BUSY(k).s = s;
    BUSY(k).e = BUSY(last).e > e ? BUSY(last).e : e;
    n = last - k;
    if (n) {
        for (i = k + 1; i + n < L.bend; i++)
            BUSY(i) = BUSY(i + n);
        L.bend -= n;
    }
}

static void pc_tl_trace_put(const struct pc_gpu_ev *ev)
{
    if (!TR.ring)
        return;
    TR.ring[TR.next & TR.mask] = *ev;
    __atomic_store_n(&TR.next, TR.next + 1, __ATOMIC_RELEASE);
}

void pc_tl_add_gpu_locked(const struct pc_gpu_ev *ev)
{
    int timed = ev->start && ev->end >= ev->start;
    uint64_t dur = timed ? ev->end - ev->start : 0;

    switch (ev->kind) {
    case PC_GPU_KERNEL:
        PC_STAT_INC(gpu_kernels);
        PC_STAT_ADD(gpu_kernel_ns, dur);
        break;
    case PC_GPU_MEMCPY:
        PC_STAT_INC(gpu_memcpys);
        PC_STAT_ADD(gpu_memcpy_ns, dur);
        if (ev->mem == PC_GPU_MEM_PAGEABLE)
            PC_STAT_ADD(gpu_memcpy_pageable_bytes, ev->bytes);
        else if (ev->mem == PC_GPU_MEM_PINNED)
            PC_STAT_ADD(gpu_memcpy_pinned_bytes, ev->bytes);
        else
            PC_STAT_ADD(gpu_memcpy_other_bytes, ev->bytes);
        break;
    case PC_GPU_MEMSET:
        PC_STAT_INC(gpu_memsets);
        break;
    default:
        return;
    }
    if (!timed)
        return;
    pc_tl_merge(ev->start, ev->end);
    pc_tl_trace_put(ev);
}

void pc_tl_add_gpu(const struct pc_gpu_ev *ev)
{
    pc_tl_lock();
    pc_tl_add_gpu_locked(ev);
    pc_tl_unlock();
}

void pc_tl_add_call(int api, uint64_t t0, uint64_t t1)
{
    pc_tl_lock();
    if (L.cend - L.cfirst == PC_TL_CALLS_MAX) {
        pc_tl_resolve(&CALL(L.cfirst));
        L.cfirst++;
    }
    CALL(L.cend).t0 = t0;
    CALL(L.cend).t1 = t1 > t0 ? t1 : t0;
    CALL(L.cend).api = api;
    L.cend++;
    pc_tl_unlock();
}

void pc_tl_finish(void)
{
    uint64_t i;

    pc_tl_lock();
    pc_tl_resolve_calls_before(UINT64_MAX);
    /* The intervals stay for calls that may still come; only their busy time
     * is counted now, and floor keeps it from being counted twice. */
    for (i = L.bfirst; i < L.bend; i++)
        PC_STAT_ADD(gpu_busy_ns, BUSY(i).e - BUSY(i).s);
    if (L.bend > L.bfirst && BUSY(L.bend - 1).e > L.floor)
        L.floor = BUSY(L.bend - 1).e;
    L.bfirst = L.bend;
    pc_tl_unlock();
}

int pc_tl_trace_init(unsigned long n)
{
    unsigned long cap = 16;
    void *m;

    if (TR.ring)
        return 0;
    while (cap < n && cap < PC_TL_TRACE_MAX)
        cap <<= 1;
    m = mmap(NULL, cap * sizeof(struct pc_gpu_ev), PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return -errno;
    pc_tl_lock();
    TR.mask = cap - 1;
    TR.next = 0;
    TR.ring = m;
    pc_tl_unlock();
    return 0;
}

unsigned long pc_tl_trace_each(void (*fn)(void *arg, const struct pc_gpu_ev *ev), void *arg)
{
    uint64_t end = __atomic_load_n(&TR.next, __ATOMIC_ACQUIRE), i;
    uint64_t first = end > TR.mask + 1 ? end - (TR.mask + 1) : 0;

    if (!TR.ring || !fn)
        return 0;
    for (i = first; i < end; i++)
        fn(arg, &TR.ring[i & TR.mask]);
    return (unsigned long)(end - first);
}

void pc_tl_reset(void)
{
    /* A forked child is single-threaded here; the parent's holder of the
     * lock does not exist in it. */
    pthread_mutex_init(&L.lock, NULL);
    L.bfirst = L.bend = L.floor = 0;
    L.cfirst = L.cend = 0;
    TR.next = 0;
}
