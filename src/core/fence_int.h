/* fence_int.h - the fences' shared state, private to the fence module:
 * fence_ev.c (the state, the events, a free's lock-free record), fence.c
 * (the algorithm: records, polls, waits, coverage) and fence_streams.c
 * (what it must know of streams, devices and captures, and forgetting
 * them).  Nothing else includes it. */
#ifndef PC_FENCE_INT_H
#define PC_FENCE_INT_H
#include <pthread.h>
#include <stdint.h>
#include <uthash.h>
#include "core/fence_ops.h"

#define PC_MAX_DEV 64

struct pc_ev {                 /* a pooled event; refs = fences (or zombie list) holding it */
    void *ev;
    int dev;
    int refs;
    uint64_t epoch;            /* a thread's own event: its device's epoch when taken (fence_ev.c) */
    struct pc_ev *next;        /* free list / zombie list */
};

struct pc_stream;

/* A busy non-blocking stream, watched rather than recorded on: complete once
 * the stream is seen idle after the watch began (st->idle_at > t). */
struct pc_watch {
    struct pc_stream *st;
    uint64_t t;
};

struct pc_fence {
    uint64_t seq;
    int n, cap;
    struct pc_ev **ev;
    int nw, wcap;
    struct pc_watch *w;
    struct pc_fence *next;
};

/* A known stream.  refs: the table's (until destroyed or forgotten) and
 * each watch's; freed at none.  idle_at: F.obs when a query last found it
 * idle.  gone: destroyed (its handle is never asked again); zombie: the
 * event recorded on it then, if it was busy. */
struct pc_stream {
    void *s;
    int dev;
    int nonblocking;
    int refs;
    int gone;
    uint64_t idle_at;
    struct pc_ev *zombie;
    UT_hash_handle hh;
};

/* F.lock protects every field but done_upto and devmask, which are atomics.
 * CUDA event calls are made under F.lock (never under the pool's lock). */
struct pc_fence_state {
    pthread_mutex_t lock;
    const struct pc_fence_ops *ops;
    uint64_t next_seq;
    uint64_t obs;              /* the watches' clock: each watch and each idle stream seen */
    uint64_t done_upto;        /* atomic: highest fence known complete */
    uint64_t devmask;          /* atomic: devices the program made current */
    struct pc_fence *head, *tail, *spare;
    struct pc_ev *evpool[PC_MAX_DEV];
    struct pc_ev *zombies;
    int zombies_any;           /* atomic: zombies != NULL, stored under F.lock (pc_zombies_noted) */
    struct pc_stream *streams;
    int capture;               /* stream captures under way */
    struct pc_fence_state *abandoned_next;
};
extern struct pc_fence_state pc_fence_st;   /* fence.c */
/* Short names, inside the fence module only. */
#define F pc_fence_st
#define O (pc_fence_st.ops)

/* Devices (bit d) with a non-blocking stream pincache did not see created,
 * and the same for a device it cannot name (pc_fence_blind_any; also while
 * a cudart of a major pincache has no wrappers for is loaded).  Atomics;
 * cleared only by that device's reset, which destroys the stream.  Kept
 * apart from F: a fork child keeps them.  Set by fence_streams.c, read by
 * fence.c's coverage (defined there). */
extern uint64_t pc_fence_blind_mask;
extern int pc_fence_blind_any;

/* A pooled event of device dev (created with dev current), or NULL; and
 * its release.  F.lock held. */
struct pc_ev *pc_ev_get(int dev);
void pc_ev_put(struct pc_ev *e);
/* 1 complete (or the context gone), 0 pending. */
int pc_ev_done(struct pc_ev *e);
/* A fence's query failed (err: its code, 0 if unknown): caching ends, with
 * one warning. */
void pc_fence_mark_broken(int err, const char *what);
/* A fence from the spare list or new (NULL: no memory); an event added to
 * it (0, or -1: no memory); a fence's events put back and the fence spared;
 * a fence with events queued as the newest, its number in *seq.  F.lock
 * held. */
struct pc_fence *pc_fence_new(void);
void pc_fence_enqueue(struct pc_fence *f, uint64_t *seq);
int pc_fence_add(struct pc_fence *f, struct pc_ev *e);
void pc_fence_release(struct pc_fence *f);
/* Watch st in f (0, or -1: no memory); drop a reference to st (freed at
 * none, with its zombie's).  F.lock held. */
int pc_fence_watch(struct pc_fence *f, struct pc_stream *st);
void pc_stream_unref(struct pc_stream *st);
/* The current device, ctx being the current context; what is learned is
 * kept until pc_ctx_gen moves (pc_fence_contexts_changed, atomic). */
int pc_device_of(void *ctx, int *dev);
extern uint64_t pc_ctx_gen;
/* fence.h's, defined with the shared state (fence_ev.c). */
extern int pc_fence_broken;

/* After any change of F.zombies (F.lock held): what the lock-free path of
 * a free reads (fence_ev.c). */
static inline void pc_zombies_noted(void)
{
    __atomic_store_n(&F.zombies_any, F.zombies != NULL, __ATOMIC_RELEASE);
}

/* fence_ev.c: a free's fence without F.lock where it can be had: 1 done
 * (*seq, *busy set as pc_fence_record sets them), -1 no fence (a broken
 * context), 0 not handled (the general path fences from the start; *seq
 * and *busy untouched).  Each
 * device's epoch moves (pc_ev_epoch_bump, F.lock held) whenever pincache
 * forgets the device's context, and a thread's event of an older epoch is
 * never used again. */
int pc_fence_record_fast(uint64_t *seq, int *busy);
void pc_ev_epoch_bump(int dev);

/* Device dev is among the used ones, which every fence covers.  Every free
 * asks: a plain load first, the locked or only for a new device. */
static inline void pc_devmask_add(int dev)
{
    if (dev >= 0 && dev < PC_MAX_DEV && !(__atomic_load_n(&F.devmask, __ATOMIC_RELAXED) & (1ull << dev)))
        __atomic_fetch_or(&F.devmask, 1ull << dev, __ATOMIC_RELAXED);
}

/* Visit the devices of mask, lowest first, each made current in turn (a
 * device's events belong to it and are recorded with it current), then
 * make cur, the caller's device and the current one on entry, current
 * again.  fn answers 0 to go on, anything else to stop, and that answer is
 * returned; a failed switch answers -1 (to a device: the visit stops
 * there; back to cur: unless fn had stopped it).  The one "switch to each
 * device, do something, switch back" of the fences: a fence's coverage, the
 * busy question, and a destroyed stream's last event.  F.lock held. */
static inline int pc_fence_visit(int cur, uint64_t mask, int (*fn)(int dev, void *arg), void *arg)
{
    int now = cur, rc = 0;

    for (uint64_t left = mask; left; left &= left - 1) {
        int d = __builtin_ctzll(left);
        if (d != now) {
            if (O->set_device(d) != 0) {
                rc = -1;
                break;
            }
            now = d;
        }
        if ((rc = fn(d, arg)) != 0)
            break;
    }
    if (now != cur && O->set_device(cur) != 0 && rc == 0)
        rc = -1;
    return rc;
}

#endif
