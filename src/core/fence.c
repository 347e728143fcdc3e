/* fence.c - event fences (see fence.h for the design): the events, the
 * coverage of every device and stream, records, polls and waits.  What the
 * fences know of streams, devices and captures is kept by fence_streams.c
 * (fence_int.h: the shared state).  CUDA-free: every question to the
 * device goes through the ops table of fence_ops.h (fence_cuda.c; a fake in
 * tests/unit/test_fence.c). */
#include "config.h"
#include <sched.h>
#include <stdlib.h>
#include <time.h>
#include "core/fence.h"
#include "core/fence_int.h"
#include "util/log.h"
#include "util/stats.h"

int pc_fence_broken;
uint64_t pc_fence_blind_mask;
int pc_fence_blind_any;

/* tests/unit/test_fence.c links the fences without fence_cuda.c and sets
 * its own ops before anything else. */
#pragma weak pc_fence_cuda_ops
struct pc_fence_state pc_fence_st = { .lock = PTHREAD_MUTEX_INITIALIZER, .ops = &pc_fence_cuda_ops };

void pc_fence_set_ops(const struct pc_fence_ops *ops)
{
    F.ops = ops;
}

static void pc_mark_broken(int err, const char *what)
{
    static int once;
    pc_fence_broken = 1;
    pc_log_once(&once, PC_LOG_WARN, "%s failed with CUDA error %d; caching disabled", what, err);
}

/* The context's health (fence_cuda.c says how it is asked).  A cached
 * allocation asks every time (a fault can come at any moment).  A cached
 * free asks only where its fence goes stream by stream, before the first
 * call (through the runtime, a failed one would set the last error): the
 * context-wide fence's own record fails in a broken context, and the
 * question is asked then, to tell that from a refusal. */
int pc_fence_context_ok(void)
{
    return O->context_ok();
}

/* --- events (F.lock held) --- */

struct pc_ev *pc_ev_get(int dev)
{
    struct pc_ev *e = F.evpool[dev];
    int err;

    if (e) {
        F.evpool[dev] = e->next;
    } else {
        /* Not in a broken context: the runtime's refusal would set the
         * last error, and caching would end for good. */
        if (!O->context_ok())
            return NULL;
        e = calloc(1, sizeof *e);
        if (!e)
            return NULL;
        err = O->event_create(&e->ev);
        if (err != 0) {
            pc_mark_broken(err, "cudaEventCreateWithFlags");
            free(e);
            return NULL;
        }
        e->dev = dev;
    }
    e->refs = 1;
    e->next = NULL;
    return e;
}

void pc_ev_put(struct pc_ev *e)
{
    if (--e->refs > 0)
        return;
    e->next = F.evpool[e->dev];
    F.evpool[e->dev] = e;
}

/* 1 complete, 0 pending.  A capture's refusal says nothing of the event:
 * pending.  Any other error means the context is gone: nothing more will
 * run on the device, so the event counts as complete. */
static int pc_ev_done(struct pc_ev *e)
{
    int err = 0;

    switch (O->event_query(e->ev, &err)) {
    case PC_FQ_PENDING:
    case PC_FQ_REFUSED:
        return 0;
    case PC_FQ_ERROR:
        pc_mark_broken(err, "cudaEventQuery");
        return 1;
    default:
        return 1;
    }
}

static int pc_fence_add(struct pc_fence *f, struct pc_ev *e)
{
    if (f->n == f->cap) {
        int cap = f->cap ? f->cap * 2 : 8;
        struct pc_ev **v = realloc(f->ev, (size_t)cap * sizeof *v);
        if (!v)
            return -1;
        f->ev = v;
        f->cap = cap;
    }
    f->ev[f->n++] = e;
    return 0;
}

static void pc_fence_release(struct pc_fence *f)
{
    for (int i = 0; i < f->n; i++)
        pc_ev_put(f->ev[i]);
    f->n = 0;
    f->next = F.spare;
    F.spare = f;
}

/* e was just recorded: keep it in f (*busy), or, when check and already
 * complete (nothing was in flight), drop it.  Returns 0 or -1. */
static int pc_fence_keep(struct pc_fence *f, struct pc_ev *e, int check, int *busy)
{
    if (check && pc_ev_done(e)) {
        pc_ev_put(e);
        return 0;
    }
    *busy = 1;
    if (pc_fence_add(f, e) != 0) {
        pc_ev_put(e);
        return -1;
    }
    return 0;
}

/* Cover stream s in f; *busy when it had work in flight.
 * The legacy stream always gets an event, dropped at once if already
 * complete: an event on it covers the blocking and every thread's
 * per-thread default stream (measured on the H200), and on an idle device
 * it completes at once (measured: 2,000 of 2,000), so one record and one
 * query both fence and tell whether work was in flight.  A non-blocking
 * stream gets an event only when a query finds it busy.
 * Returns 0 or -1. */
static int pc_cover_stream(struct pc_fence *f, void *s, int dev, int legacy, int *busy)
{
    struct pc_ev *e;

    if (!legacy) {
        int q = O->stream_query(s);
        if (q == PC_FQ_DONE)
            return 0;
        if (q != PC_FQ_PENDING)
            return -1;           /* capturing, or broken: let the caller pass through */
    }
    e = pc_ev_get(dev);
    if (!e)
        return -1;
    if (O->event_record(e->ev, s) != 0) {
        pc_ev_put(e);
        return -1;
    }
    return pc_fence_keep(f, e, legacy, busy);
}

/* The current device, where ctx is the current context (NULL: none, or
 * not asked): the runtime's cudaGetDevice, learned once per context and
 * thread.  A context belongs to one device for its life, and every reset,
 * release or destroy pincache sees (pc_fence_contexts_changed) forgets what
 * was learned; so a hit pair asks the cuCtxGetCurrent its fence needs
 * anyway, not also cudaGetDevice (27-66 ns on the H200's host, callcost
 * runs 7-63). */
static uint64_t pc_ctx_gen = 1;        /* atomic */
static __thread struct {
    void *ctx;
    uint64_t gen;
    int dev;
} pc_tls_ctxdev __attribute__((tls_model("initial-exec")));

void pc_fence_contexts_changed(void)
{
    __atomic_add_fetch(&pc_ctx_gen, 1, __ATOMIC_RELEASE);
}

static int pc_device_of(void *ctx, int *dev)
{
    uint64_t gen = __atomic_load_n(&pc_ctx_gen, __ATOMIC_ACQUIRE);

    if (ctx && pc_tls_ctxdev.ctx == ctx && pc_tls_ctxdev.gen == gen) {
        *dev = pc_tls_ctxdev.dev;
        return 0;
    }
    if (O->get_device(dev) != 0)
        return -1;
    if (ctx) {
        pc_tls_ctxdev.ctx = ctx;
        pc_tls_ctxdev.gen = gen;
        pc_tls_ctxdev.dev = *dev;
    }
    return 0;
}

int pc_fence_current_device(int *dev)
{
    return pc_device_of(O->ctx_wide() ? O->ctx_current() : NULL, dev);
}

/* Cover device dev's current context in f with one context-wide event,
 * dropped at once if already complete.  Returns 0; -2 when the context is
 * broken (nothing can be fenced there, and nothing more may be asked);
 * -1 when the driver refused (the caller then covers the device stream by
 * stream).  F.lock held. */
static int pc_cover_context(struct pc_fence *f, int dev, void *ctx, int *busy)
{
    struct pc_ev *e;
    int r;
    static int once;

    if (!ctx)
        goto refused;
    if ((e = pc_ev_get(dev)) == NULL)
        return O->context_ok() ? -1 : -2;
    r = O->ctx_record(ctx, e->ev);
    if (r != 0) {
        pc_ev_put(e);
        if (!O->context_ok())
            return -2;
        pc_log_once(&once, PC_LOG_INFO, "cuCtxRecordEvent failed with CUDA error %d; that device is fenced stream by stream", r);
        goto refused;
    }
    PC_STAT_INC(fence_ctx_records);
    if (pc_fence_keep(f, e, 1, busy) == 0)
        return 0;
refused:
    PC_STAT_INC(fence_ctx_fallbacks);
    return -1;
}

static int pc_is_blind(int dev)
{
    return __atomic_load_n(&pc_fence_blind_any, __ATOMIC_RELAXED) || O->blind_all() ||
           (__atomic_load_n(&pc_fence_blind_mask, __ATOMIC_RELAXED) & (1ull << dev)) != 0;
}

struct pc_cover {
    struct pc_fence *f;
    int *busy;
    int cur;                   /* the caller's device ... */
    void *ctx;                 /* ... and its current context, already asked (NULL: ask) */
};

/* Cover device dev (current) into c->f: one context-wide event where the
 * driver allows it, else its legacy stream and each known non-blocking
 * stream.  0, or -1 to stop (the fence cannot be had).  F.lock held. */
static int pc_cover_device(int dev, void *arg)
{
    struct pc_cover *c = arg;
    struct pc_stream *st, *tmp;
    int rc;

    if (O->ctx_wide()) {
        int r = pc_cover_context(c->f, dev, dev == c->cur && c->ctx ? c->ctx : O->ctx_current(), c->busy);
        if (r == 0)
            return 0;
        if (r == -2)
            return -1;
    } else if (!O->context_ok()) {
        return -1;             /* before any runtime call could fail */
    }
    if (pc_is_blind(dev)) {
        static int once;
        pc_log_once(&once, PC_LOG_WARN,
                    "device %d may have non-blocking streams pincache did not see created (a handle it never "
                    "saw made, or a cudart major it has no wrappers for), which fences made stream by stream "
                    "(PINCACHE_FENCE=runtime or driver, or no cuCtxRecordEvent) cannot cover: frees are left "
                    "to the runtime, which waits", dev);
        PC_STAT_INC(fence_blind);
        return -1;
    }
    rc = pc_cover_stream(c->f, PC_STREAM_LEGACY, dev, 1, c->busy);
    HASH_ITER(hh, F.streams, st, tmp) {
        if (rc == 0 && st->dev == dev && st->nonblocking)
            rc = pc_cover_stream(c->f, st->s, dev, 0, c->busy);
    }
    return rc;
}

/* Cover every device and stream into f; *busy: work was in flight.
 * A device fenced stream by stream that has a stream pincache cannot see
 * cannot be covered: -1, and the free goes to the runtime (which waits).
 * Each device is fenced with its own context current (its events belong
 * to it), the calling thread's own device included.  F.lock held. */
static int pc_cover_all(struct pc_fence *f, int *busy)
{
    struct pc_cover c = { f, busy, 0, O->ctx_wide() ? O->ctx_current() : NULL };
    int rc;
    struct pc_ev *z, **zp;

    if (pc_device_of(c.ctx, &c.cur) != 0)
        return -1;
    pc_devmask_add(c.cur);
    /* The used devices only: scanning all 64 bits cost a free ~450 instructions. */
    rc = pc_fence_visit(c.cur, __atomic_load_n(&F.devmask, __ATOMIC_RELAXED), pc_cover_device, &c);
    /* Work on streams destroyed while busy. */
    for (zp = &F.zombies; rc == 0 && (z = *zp) != NULL;) {
        if (pc_ev_done(z)) {
            *zp = z->next;
            pc_ev_put(z);
            continue;
        }
        if (pc_fence_add(f, z) != 0) {
            rc = -1;
            break;
        }
        *busy = 1;
        z->refs++;
        zp = &z->next;
    }
    return rc;
}

static struct pc_fence *pc_fence_new(void)
{
    struct pc_fence *f = F.spare;
    if (f) {
        F.spare = f->next;
        f->next = NULL;
        return f;
    }
    return calloc(1, sizeof *f);
}

int pc_fence_record(uint64_t *seq, int *busy)
{
    struct pc_fence *f;

    *seq = 0;
    *busy = 0;
    if (pc_fence_broken)
        return -1;
    pthread_mutex_lock(&F.lock);
    if (F.capture > 0 || (f = pc_fence_new()) == NULL)
        goto fail;
    if (pc_cover_all(f, busy) != 0) {
        pc_fence_release(f);
        goto fail;
    }
    if (f->n == 0) {
        pc_fence_release(f);
    } else {
        f->seq = ++F.next_seq;
        if (F.tail) F.tail->next = f; else F.head = f;
        F.tail = f;
        *seq = f->seq;
        PC_STAT_INC(fences);
        PC_STAT_ADD(fence_events, f->n);
    }
    pthread_mutex_unlock(&F.lock);
    return 0;
fail:
    pthread_mutex_unlock(&F.lock);
    return -1;
}

int pc_fence_known(uint64_t seq)
{
    return seq <= __atomic_load_n(&F.done_upto, __ATOMIC_ACQUIRE);
}

int pc_fence_poll(uint64_t seq)
{
    struct pc_fence *f;

    if (pc_fence_known(seq))
        return 1;
    pthread_mutex_lock(&F.lock);
    while ((f = F.head) != NULL && f->seq <= seq) {
        int done = 1;
        /* Drop completed events from the front so each is queried once. */
        while (f->n > 0 && done) {
            done = pc_ev_done(f->ev[f->n - 1]);
            if (done)
                pc_ev_put(f->ev[--f->n]);
        }
        if (!done)
            break;
        F.head = f->next;
        if (!F.head)
            F.tail = NULL;
        __atomic_store_n(&F.done_upto, f->seq, __ATOMIC_RELEASE);
        pc_fence_release(f);
    }
    pthread_mutex_unlock(&F.lock);
    return pc_fence_known(seq);
}

/* Waits are bounded by what a new block would cost (the caller's budget),
 * so they are short, and a double-buffered program waits once per batch:
 * the wake-up latency is paid every time.  A nanosleep costs 50-80 us of
 * timer slack, more than a whole 1 MB batch takes on the H200, so the first
 * PC_WAIT_SPIN_NS are spent polling with sched_yield (the runtime's own
 * default for a blocking wait with more cores than GPUs); after that the
 * thread naps between polls. */
#define PC_WAIT_SPIN_NS 2000000ull
int pc_fence_wait(uint64_t seq, uint64_t timeout_ns)
{
    uint64_t start = pc_now_ns(), now;
    struct timespec nap = { 0, 20000 };

    while (!pc_fence_poll(seq)) {
        now = pc_now_ns();
        if (pc_fence_broken || now - start >= timeout_ns)
            return pc_fence_known(seq);
        if (now - start < PC_WAIT_SPIN_NS)
            sched_yield();
        else
            nanosleep(&nap, NULL);
    }
    return 1;
}

int pc_fence_idle(void)
{
    uint64_t last;
    pthread_mutex_lock(&F.lock);
    last = F.next_seq;
    pthread_mutex_unlock(&F.lock);
    return pc_fence_poll(last);
}

int pc_fence_quiet(uint64_t wait_ns)
{
    uint64_t seq;
    int busy;

    if (pc_fence_record(&seq, &busy) != 0)
        return 0;
    return seq == 0 || pc_fence_wait(seq, wait_ns);
}

static int pc_query_busy(void *s)
{
    return O->stream_query(s) == PC_FQ_PENDING;
}

__thread int pc_tls_ptstream __attribute__((tls_model("initial-exec")));

/* Is device dev (current) busy?  1 stops the visit.  Queries only, no
 * event: cheaper than a fence, and an event recorded just to ask would
 * itself be work in flight for a moment, so an idle device would look
 * busy.  Every known stream is asked (the blocking ones too), and this
 * thread's per-thread stream if the program used it. */
static int pc_busy_device(int dev, void *arg)
{
    struct pc_stream *st, *tmp;
    int busy = pc_query_busy(PC_STREAM_LEGACY) || (pc_tls_ptstream && pc_query_busy(PC_STREAM_PER_THREAD));

    HASH_ITER(hh, F.streams, st, tmp) {
        if (!busy && st->dev == dev)
            busy = pc_query_busy(st->s);
    }
    return busy;
}

int pc_fence_busy_now(void)
{
    int cur = 0, busy = 0;
    struct pc_ev *z;

    pthread_mutex_lock(&F.lock);
    if (F.capture > 0 || O->get_device(&cur) != 0)
        goto out;
    pc_devmask_add(cur);
    busy = pc_fence_visit(cur, __atomic_load_n(&F.devmask, __ATOMIC_RELAXED), pc_busy_device, NULL) > 0;
    for (z = F.zombies; z && !busy; z = z->next)
        busy = !pc_ev_done(z);
out:
    pthread_mutex_unlock(&F.lock);
    return busy;
}
