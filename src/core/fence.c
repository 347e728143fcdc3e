/* fence.c - event fences (see fence.h for the design): the coverage of
 * every device and stream, records, polls and waits.  The shared state
 * and the events are fence_ev.c's, with a free's lock-free record; what
 * the fences know of streams, devices and captures is kept by
 * fence_streams.c (fence_int.h).  CUDA-free: every question to the
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

uint64_t pc_fence_blind_mask;
int pc_fence_blind_any;

void pc_fence_set_ops(const struct pc_fence_ops *ops)
{
    F.ops = ops;
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

void pc_fence_contexts_changed(void)
{
    __atomic_add_fetch(&pc_ctx_gen, 1, __ATOMIC_RELEASE);
}

int pc_fence_current_device(int *dev)
{
    return pc_device_of(O->ctx_wide() ? O->ctx_current() : NULL, dev);
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

/* Cover the legacy stream of device dev (current) in f; *busy when it had
 * work in flight.  It always gets an event, dropped at once if already
 * complete: an event on it covers the blocking and every thread's
 * per-thread default stream (measured on the H200), and on an idle device
 * it completes at once (measured: 2,000 of 2,000), so one record and one
 * query both fence and tell whether work was in flight.  Returns 0 or -1. */
static int pc_cover_legacy(struct pc_fence *f, int dev, int *busy)
{
    struct pc_ev *e = pc_ev_get(dev);

    if (!e)
        return -1;
    if (O->event_record(e->ev, PC_STREAM_LEGACY) != 0) {
        pc_ev_put(e);
        return -1;
    }
    return pc_fence_keep(f, e, 1, busy);
}

/* Ask known stream st (its device current) whether it is done; a stream
 * found idle completes every earlier watch of it.  enum pc_fq. */
static int pc_stream_ask(struct pc_stream *st)
{
    int q = O->stream_query(st->s);

    if (q == PC_FQ_DONE)
        st->idle_at = ++F.obs;
    return q;
}

/* Cover known non-blocking stream st (its device current) in f.  Nothing is
 * ever recorded on it: an event queued behind the program's work would be
 * work of its stream, and a cudaStreamQuery right after the program
 * synchronized the stream would answer not ready while that event trails
 * the work it waited for (the simulated fuzzer's seeds 1178 and 12365).  A
 * busy stream is watched instead: the fence is complete once a query finds
 * it idle (pc_watch_done).
 * Returns 0 or -1 (capturing, or broken: the caller passes the free
 * through). */
static int pc_cover_stream(struct pc_fence *f, struct pc_stream *st, int *busy)
{
    int q = pc_stream_ask(st);

    if (q == PC_FQ_DONE)
        return 0;
    if (q != PC_FQ_PENDING || pc_fence_watch(f, st) != 0)
        return -1;
    *busy = 1;
    return 0;
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
    rc = pc_cover_legacy(c->f, dev, c->busy);
    HASH_ITER(hh, F.streams, st, tmp) {
        if (rc == 0 && st->dev == dev && st->nonblocking)
            rc = pc_cover_stream(c->f, st, c->busy);
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
    pc_zombies_noted();
    return rc;
}


int pc_fence_record(uint64_t *seq, int *busy)
{
    struct pc_fence *f;
    int fast;

    *seq = 0;
    *busy = 0;
    if (pc_fence_broken)
        return -1;
    if ((fast = pc_fence_record_fast(seq, busy)) != 0)
        return fast > 0 ? 0 : -1;
    pthread_mutex_lock(&F.lock);
    if (F.capture > 0 || (f = pc_fence_new()) == NULL)
        goto fail;
    if (pc_cover_all(f, busy) != 0) {
        pc_fence_release(f);
        goto fail;
    }
    if (f->n == 0 && f->nw == 0) {
        pc_fence_release(f);
    } else {
        pc_fence_enqueue(f, seq);
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

/* A watched stream's query, its device current (pc_fence_visit): 1 done.
 * A failed one is done and ends caching, as a failed event query does
 * (pc_ev_done): the context is gone, and nothing more runs there. */
static int pc_watch_query(int dev, void *arg)
{
    struct pc_stream *st = arg;
    int q = pc_stream_ask(st);

    (void)dev;
    if (q == PC_FQ_ERROR) {
        pc_fence_mark_broken(0, "cudaStreamQuery of a watched stream");
        st->idle_at = ++F.obs;
    }
    return q == PC_FQ_DONE || q == PC_FQ_ERROR;
}

/* Is watch w complete?  Its stream seen idle since the watch began; a
 * destroyed one once the event recorded at its destroy is; else a query,
 * with the stream's device current, and never during a capture (a query
 * of a capturing stream breaks the capture).  *cur: the current device,
 * asked at the first query (-1 until then).  F.lock held. */
static int pc_watch_done(const struct pc_watch *w, int *cur)
{
    struct pc_stream *st = w->st;

    if (st->idle_at > w->t)
        return 1;
    if (st->gone) {
        if (st->zombie && !pc_ev_done(st->zombie))
            return 0;
        st->idle_at = ++F.obs;
        return 1;
    }
    if (__atomic_load_n(&F.capture, __ATOMIC_ACQUIRE) > 0 || (*cur < 0 && O->get_device(cur) != 0))
        return 0;
    return pc_fence_visit(*cur, 1ull << st->dev, pc_watch_query, st) > 0;
}

int pc_fence_poll(uint64_t seq)
{
    struct pc_fence *f;
    int cur = -1;

    if (pc_fence_known(seq))
        return 1;
    pthread_mutex_lock(&F.lock);
    while ((f = F.head) != NULL && f->seq <= seq) {
        int done = 1;
        /* Drop completed events and watches from the back, so each is asked once. */
        while (f->n > 0 && done) {
            done = pc_ev_done(f->ev[f->n - 1]);
            if (done)
                pc_ev_put(f->ev[--f->n]);
        }
        while (f->nw > 0 && done) {
            done = pc_watch_done(&f->w[f->nw - 1], &cur);
            if (done)
                pc_stream_unref(f->w[--f->nw].st);
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
            busy = pc_stream_ask(st) == PC_FQ_PENDING;
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
