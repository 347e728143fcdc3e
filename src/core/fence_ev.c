/* fence_ev.c - the fences' shared state and their events (fence_int.h):
 * the pooled events of each device, the fence records that hold them, the
 * current device as a fence learns it, and a free's fence without the
 * fences' lock in the case a cache hit pair meets (issue 19, item 4).
 * The coverage and the polls are fence.c's; what the fences know of
 * streams and captures is fence_streams.c's.  CUDA-free (fence_ops.h).
 *
 * The lock-free record: fences recorded context-wide, one device in use
 * and it current, no destroyed stream's work to cover.  The general path
 * (fence.c, pc_cover_all) takes F.lock, a fence record and a pooled event,
 * and walks the devices; here the thread records its own event in its
 * context, asks it once, and when it is already complete (an idle device:
 * nothing to wait for) keeps it for its next free and is done, as the
 * general path would be, with no lock taken.  Only an event still pending
 * becomes a fence, under F.lock, and the thread takes a fresh event from
 * the pool in the same hold.  Nothing the general path holds F.lock for is
 * left unguarded: the lock never kept a capture from beginning
 * (pc_fence_capture_begin counts a capture only after the runtime began
 * it), so reading the count unlocked sees what the locked read saw; the
 * devices and the zombies are read as atomics, written under the lock.  A
 * thread's event belongs to its device's primary context, which a reset
 * destroys: every forgetting of a device bumps that device's epoch (under
 * F.lock), and an event of an older epoch is dropped unused, its memory
 * freed (the event died with its context).  A thread's exit gives its
 * event back to the pool. */
#include "config.h"
#include <pthread.h>
#include <stdlib.h>
#include "core/fence_int.h"
#include "util/log.h"
#include "util/stats.h"

int pc_fence_broken;

/* tests/unit/test_fence.c links the fences without fence_cuda.c and sets
 * its own ops before anything else. */
#pragma weak pc_fence_cuda_ops
struct pc_fence_state pc_fence_st = { .lock = PTHREAD_MUTEX_INITIALIZER, .ops = &pc_fence_cuda_ops };

void pc_fence_mark_broken(int err, const char *what)
{
    static int once;
    pc_fence_broken = 1;
    if (err)
        pc_log_once(&once, PC_LOG_WARN, "%s failed with CUDA error %d; caching disabled", what, err);
    else
        pc_log_once(&once, PC_LOG_WARN, "%s failed; caching disabled", what);
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
            pc_fence_mark_broken(err, "cudaEventCreateWithFlags");
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
int pc_ev_done(struct pc_ev *e)
{
    int err = 0;

    switch (O->event_query(e->ev, &err)) {
    case PC_FQ_PENDING:
    case PC_FQ_REFUSED:
        return 0;
    case PC_FQ_ERROR:
        pc_fence_mark_broken(err, "cudaEventQuery");
        return 1;
    default:
        return 1;
    }
}

int pc_fence_add(struct pc_fence *f, struct pc_ev *e)
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

int pc_fence_watch(struct pc_fence *f, struct pc_stream *st)
{
    if (f->nw == f->wcap) {
        int cap = f->wcap ? f->wcap * 2 : 4;
        struct pc_watch *v = realloc(f->w, (size_t)cap * sizeof *v);
        if (!v)
            return -1;
        f->w = v;
        f->wcap = cap;
    }
    st->refs++;
    f->w[f->nw].st = st;
    f->w[f->nw++].t = ++F.obs;
    return 0;
}

void pc_stream_unref(struct pc_stream *st)
{
    if (--st->refs > 0)
        return;
    if (st->zombie)
        pc_ev_put(st->zombie);
    free(st);
}

void pc_fence_release(struct pc_fence *f)
{
    for (int i = 0; i < f->n; i++)
        pc_ev_put(f->ev[i]);
    f->n = 0;
    for (int i = 0; i < f->nw; i++)
        pc_stream_unref(f->w[i].st);
    f->nw = 0;
    f->next = F.spare;
    F.spare = f;
}

/* The current device, where ctx is the current context (NULL: none, or
 * not asked): the runtime's cudaGetDevice, learned once per context and
 * thread.  A context belongs to one device for its life, and every reset,
 * release or destroy pincache sees (pc_fence_contexts_changed) forgets what
 * was learned; so a hit pair asks the cuCtxGetCurrent its fence needs
 * anyway, not also cudaGetDevice (27-66 ns on the H200's host, callcost
 * runs 7-63). */
uint64_t pc_ctx_gen = 1;               /* atomic */
static __thread struct {
    void *ctx;
    uint64_t gen;
    int dev;
} pc_tls_ctxdev __attribute__((tls_model("initial-exec")));

int pc_device_of(void *ctx, int *dev)
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

struct pc_fence *pc_fence_new(void)
{
    struct pc_fence *f = F.spare;
    if (f) {
        F.spare = f->next;
        f->next = NULL;
        return f;
    }
    return calloc(1, sizeof *f);
}

void pc_fence_enqueue(struct pc_fence *f, uint64_t *seq)
{
    f->seq = ++F.next_seq;
    if (F.tail) F.tail->next = f; else F.head = f;
    F.tail = f;
    *seq = f->seq;
    PC_STAT_INC(fences);
    PC_STAT_ADD(fence_events, f->n);
}

/* --- a thread's own event, and the lock-free record --- */

uint64_t pc_ev_epoch[PC_MAX_DEV];     /* atomic, bumped under F.lock */

static __thread struct pc_ev *pc_tls_ev __attribute__((tls_model("initial-exec")));
static pthread_key_t pc_ev_key;       /* its destructor gives a thread's event back */
static pthread_once_t pc_ev_once = PTHREAD_ONCE_INIT;
static int pc_ev_key_ok;

/* Still of its context's epoch: usable, or back to the pool.  F.lock held,
 * or the epoch read as an atomic by the event's own thread. */
static int pc_ev_current(const struct pc_ev *e)
{
    return e->epoch == __atomic_load_n(&pc_ev_epoch[e->dev], __ATOMIC_ACQUIRE);
}

/* Give e back (F.lock held): to its device's pool, or, of an epoch gone, its
 * memory only. */
static void pc_ev_return(struct pc_ev *e)
{
    if (pc_ev_current(e))
        pc_ev_put(e);
    else
        free(e);
}

static void pc_ev_thread_done(void *arg)
{
    pthread_mutex_lock(&F.lock);
    pc_ev_return(arg);
    pthread_mutex_unlock(&F.lock);
}

static void pc_ev_key_init(void)
{
    pc_ev_key_ok = pthread_key_create(&pc_ev_key, pc_ev_thread_done) == 0;
}

/* Make e (or none) this thread's event.  F.lock held.  Without a key to give
 * it back at the thread's exit, the thread keeps none. */
static void pc_ev_adopt(struct pc_ev *e)
{
    pthread_once(&pc_ev_once, pc_ev_key_init);
    if (e && (!pc_ev_key_ok || pthread_setspecific(pc_ev_key, e) != 0)) {
        pc_ev_put(e);
        e = NULL;
    } else if (!e && pc_ev_key_ok) {
        (void)pthread_setspecific(pc_ev_key, NULL);
    }
    pc_tls_ev = e;
}

/* A pooled event of device dev made this thread's, at the device's epoch
 * now, or NULL.  F.lock held. */
static struct pc_ev *pc_ev_take(int dev)
{
    struct pc_ev *e = pc_ev_get(dev);

    if (e)
        e->epoch = __atomic_load_n(&pc_ev_epoch[dev], __ATOMIC_RELAXED);
    pc_ev_adopt(e);
    return e;
}

/* This thread's event of device dev, taken from the pool when it has none
 * of that device and epoch (the one it had goes back first), or NULL. */
static struct pc_ev *pc_ev_mine(int dev)
{
    struct pc_ev *e = pc_tls_ev;

    if (e && e->dev == dev && pc_ev_current(e))
        return e;
    pthread_mutex_lock(&F.lock);
    if (e)
        pc_ev_return(e);
    e = pc_ev_take(dev);
    pthread_mutex_unlock(&F.lock);
    return e;
}

/* e, recorded and pending, becomes a fence (F.lock held): 0, or -1 when no
 * fence could be had (e is then still the thread's). */
static int pc_fence_enqueue_one(struct pc_ev *e, uint64_t *seq)
{
    struct pc_fence *f = pc_fence_new();

    if (!f)
        return -1;
    if (pc_fence_add(f, e) != 0) {
        pc_fence_release(f);
        return -1;
    }
    pc_fence_enqueue(f, seq);
    return 0;
}

int pc_fence_record_fast(uint64_t *seq, int *busy)
{
    uint64_t used = __atomic_load_n(&F.devmask, __ATOMIC_RELAXED);
    struct pc_ev *e;
    void *ctx;
    int cur, r;

    /* Two devices in use already: the general path, without asking the
     * context here first. */
    if ((used & (used - 1)) || !O->ctx_wide() || __atomic_load_n(&F.capture, __ATOMIC_ACQUIRE) > 0 ||
        __atomic_load_n(&F.zombies_any, __ATOMIC_ACQUIRE))
        return 0;
    if ((ctx = O->ctx_current()) == NULL || pc_device_of(ctx, &cur) != 0 || cur < 0 || cur >= PC_MAX_DEV)
        return 0;
    pc_devmask_add(cur);
    if (__atomic_load_n(&F.devmask, __ATOMIC_RELAXED) != 1ull << cur || (e = pc_ev_mine(cur)) == NULL)
        return 0;
    /* Refused: in a broken context no fence can be had (as the general
     * path finds, asking the same question once); else the general path
     * tries again and falls back to the streams. */
    if (O->ctx_record(ctx, e->ev) != 0)
        return O->context_ok() ? 0 : -1;
    PC_STAT_INC(fence_ctx_records);
    if (pc_ev_done(e))
        return 1;
    *busy = 1;
    pthread_mutex_lock(&F.lock);
    if ((r = pc_fence_enqueue_one(e, seq)) == 0)
        (void)pc_ev_take(cur);
    pthread_mutex_unlock(&F.lock);
    if (r != 0) {
        *busy = 0;             /* the general path fences it from the start */
        return 0;
    }
    return 1;
}

void pc_ev_epoch_bump(int dev)
{
    __atomic_add_fetch(&pc_ev_epoch[dev], 1, __ATOMIC_RELEASE);
}
