/* fence.c - stream registry and event fences (see fence.h for the design). */
#include "config.h"
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <time.h>
#include <uthash.h>
#include "fence.h"
#include "log.h"
#include "options.h"
#include "real.h"
#include "stats.h"

#define PC_MAX_DEV 64

struct pc_ev {                 /* a pooled event; refs = fences (or zombie list) holding it */
    cudaEvent_t ev;
    int dev;
    int refs;
    struct pc_ev *next;        /* free list / zombie list */
};

struct pc_fence {
    uint64_t seq;
    int n, cap;
    struct pc_ev **ev;
    struct pc_fence *next;
};

struct pc_stream {
    cudaStream_t s;
    int dev;
    int nonblocking;
    UT_hash_handle hh;
};

int pc_fence_broken;

/* Devices (bit d) with a non-blocking stream pincache did not see created,
 * and the same for a device it cannot name (pc_blind_any; also while a
 * cudart of a major pincache has no wrappers for is loaded).  Atomics;
 * cleared only by that device's reset, which destroys the stream. */
static uint64_t pc_blind_mask;
static int pc_blind_any;

/* F.lock protects every field but done_upto and devmask, which are atomics.
 * CUDA event calls are made under F.lock (never under the pool's lock). */
struct pc_fence_state {
    pthread_mutex_t lock;
    uint64_t next_seq;
    uint64_t done_upto;        /* atomic: highest fence known complete */
    uint64_t devmask;          /* atomic: devices the program made current */
    struct pc_fence *head, *tail, *spare;
    struct pc_ev *evpool[PC_MAX_DEV];
    struct pc_ev *zombies;
    struct pc_stream *streams;
    int capture;               /* stream captures under way */
    struct pc_fence_state *abandoned_next;
};
static struct pc_fence_state F = { .lock = PTHREAD_MUTEX_INITIALIZER };
/* States abandoned by pc_fence_forget_all (a fork child, a device reset),
 * kept only so that they stay reachable (leak checkers); never used again.
 * Not static: a static that is never read would be optimized away. */
struct pc_fence_state *pc_fence_abandoned;

static void pc_mark_broken(cudaError_t err, const char *what)
{
    static int once;
    pc_fence_broken = 1;
    pc_log_once(&once, PC_LOG_WARN, "%s failed with CUDA error %d; caching disabled", what, (int)err);
}

/* --- the calls a fence is made of ---
 *
 * PINCACHE_FENCE=context (the default): one cuCtxRecordEvent per device
 * and a query of that event.  The event captures all work of the context at
 * the time of the call, on every stream, whoever made it (the runtime, the
 * driver API, a library pincache never saw), so the cost does not grow
 * with the number of streams.  On the H200 a query per non-blocking stream
 * had cost the alloc+free pair about 0.5 us per stream (docs/benchmarks.md,
 * run 7: 0.98 us with no streams, 2.8-3.0 with four).  The entry points
 * come from the loaded libcuda, or else from the runtime's
 * cudaGetDriverEntryPointByVersion (the simulated device has no libcuda).
 *
 * PINCACHE_FENCE=runtime, and the fallback where the driver lacks
 * cuCtxRecordEvent (before CUDA 12.5) or refuses it for a context: an event
 * on the legacy stream plus a query of each known non-blocking stream,
 * through the runtime.  PINCACHE_FENCE=driver: the same through the
 * driver's calls; any answer other than done or not ready (no current
 * context on this thread, a foreign context) is asked again through the
 * runtime, whose answer stands. */
static int pc_drv_ok = -1;     /* -1 undecided, 0 runtime only, 1 driver first */

static int pc_use_drv(void)
{
    int ok = __atomic_load_n(&pc_drv_ok, __ATOMIC_RELAXED);
    if (ok < 0) {
        ok = pc_opt.fence == PC_FENCE_DRIVER && PC_REAL(cuStreamQuery) && PC_REAL(cuEventRecord) &&
             PC_REAL(cuEventQuery);
        __atomic_store_n(&pc_drv_ok, ok, __ATOMIC_RELAXED);
    }
    return ok;
}

typedef CUresult (*pc_ctx_record_fn)(CUcontext, CUevent);
typedef CUresult (*pc_ctx_current_fn)(CUcontext *);
typedef CUresult (*pc_ev_query_fn)(CUevent);
static struct {
    int ok;                    /* -1 undecided, 0 no, 1 yes (F.lock) */
    pc_ctx_record_fn record;
    pc_ctx_current_fn current;
    pc_ev_query_fn query;
} pc_ctx = { -1, NULL, NULL, NULL };

static void *pc_ctx_entry(const char *sym, unsigned int ver)
{
    void *f = NULL;
    enum cudaDriverEntryPointQueryResult st = cudaDriverEntryPointSymbolNotFound;
    if (PC_CALL_REAL(cudaGetDriverEntryPointByVersion, sym, &f, ver, cudaEnableDefault, &st) != cudaSuccess ||
        st != cudaDriverEntryPointSuccess)
        return NULL;
    return f;
}

/* F.lock held. */
static int pc_use_ctx(void)
{
    if (pc_ctx.ok >= 0)
        return pc_ctx.ok;
    pc_ctx.ok = 0;
    if (pc_opt.fence != PC_FENCE_CONTEXT)
        return 0;
    pc_ctx.record = (pc_ctx_record_fn)PC_REAL(cuCtxRecordEvent);
    pc_ctx.current = (pc_ctx_current_fn)PC_REAL(cuCtxGetCurrent);
    pc_ctx.query = (pc_ev_query_fn)PC_REAL(cuEventQuery);
    if (!pc_ctx.record || !pc_ctx.current || !pc_ctx.query) {
        /* All three from one source. */
        pc_ctx.record = (pc_ctx_record_fn)pc_ctx_entry("cuCtxRecordEvent", 12050);
        pc_ctx.current = (pc_ctx_current_fn)pc_ctx_entry("cuCtxGetCurrent", 4000);
        pc_ctx.query = (pc_ev_query_fn)pc_ctx_entry("cuEventQuery", 2000);
    }
    pc_ctx.ok = pc_ctx.record && pc_ctx.current && pc_ctx.query;
    if (pc_ctx.ok)
        pc_info("fences: one context-wide event per device (cuCtxRecordEvent)");
    else
        pc_info("fences: cuCtxRecordEvent not available; an event on the legacy stream and a query per non-blocking stream");
    return pc_ctx.ok;
}

/* Done or not ready: the two answers the driver path keeps (same numbers
 * in both APIs); anything else is asked again through the runtime. */
_Static_assert((int)CUDA_SUCCESS == (int)cudaSuccess && (int)CUDA_ERROR_NOT_READY == (int)cudaErrorNotReady,
               "driver and runtime share these codes");
static int pc_drv_settled(CUresult r)
{
    return r == CUDA_SUCCESS || r == CUDA_ERROR_NOT_READY;
}

static cudaError_t pc_stream_query(cudaStream_t s)
{
    CUresult r;
    if (pc_use_drv() && pc_drv_settled(r = PC_REAL(cuStreamQuery)((CUstream)s)))
        return (cudaError_t)r;
    return PC_CALL_REAL(cudaStreamQuery, s);
}

static cudaError_t pc_event_record(cudaEvent_t e, cudaStream_t s)
{
    if (pc_use_drv() && PC_REAL(cuEventRecord)((CUevent)e, (CUstream)s) == CUDA_SUCCESS)
        return cudaSuccess;
    return PC_CALL_REAL(cudaEventRecord, e, s);
}

static cudaError_t pc_event_query(cudaEvent_t e)
{
    CUresult r;
    if (pc_ctx.ok > 0 && pc_drv_settled(r = pc_ctx.query((CUevent)e)))
        return (cudaError_t)r;
    if (pc_use_drv() && pc_drv_settled(r = PC_REAL(cuEventQuery)((CUevent)e)))
        return (cudaError_t)r;
    return PC_CALL_REAL(cudaEventQuery, e);
}

/* --- the context's health ---
 *
 * After a kernel fault the context is broken: every call that touches it
 * answers the sticky error (719 after a trap, 700 after an illegal address)
 * and sets it as the last error again, while calls that read host-side
 * bookkeeping (cuCtxGetCurrent, cudaGetDevice, pointer attributes,
 * cudaPeekAtLastError) still answer 0 (measured on the H200; issue 15, D10).
 * A call pincache would answer from its own state asks first, and a broken
 * context sends it to the real function.  The question is
 * cuCtxGetStreamPriorityRange: 27 ns on the H200, the first call after a
 * fault answered 719 / 700 with it, it needs nothing but the current
 * context, and, a driver call, it leaves the last error alone.  (Measured
 * with tests/probe/ctxhealth.cu, docs/runtime-facts.md: cuStreamQuery of
 * the legacy stream, the question until then, cost 350 ns in that run and
 * was most of what the hit pair had grown by; cuCtxGetFlags, cuCtxGetId,
 * cuCtxGetDevice and cuCtxGetApiVersion answer 0 in a broken context.)
 * Any answer but success (no context current on this thread, say) also
 * counts as broken: the real function knows what to do.
 *
 * A cached allocation asks every time (a fault can come at any moment).  A
 * cached free asks only where its fence goes through the runtime (stream by
 * stream, whose failed calls would set the last error): the context-wide
 * fence's own driver call fails in a broken context, and the question is
 * asked then, to tell that from a refusal. */
typedef CUresult (*pc_health_fn)(int *, int *);
static pc_health_fn pc_health_query;   /* resolved once; written atomically */
static char pc_health_none;            /* its address: no such entry point */

int pc_fence_context_ok(void)
{
    pc_health_fn q = __atomic_load_n(&pc_health_query, __ATOMIC_ACQUIRE);
    int least, greatest;

    if (!q) {
        /* The simulated device has no libcuda: the runtime hands its
         * driver entry points out. */
        void *f = (void *)PC_REAL(cuCtxGetStreamPriorityRange);
        if (!f)
            f = pc_ctx_entry("cuCtxGetStreamPriorityRange", 5050);
        q = f ? (pc_health_fn)f : (pc_health_fn)(void *)&pc_health_none;
        __atomic_store_n(&pc_health_query, q, __ATOMIC_RELEASE);
    }
    if ((void *)q == (void *)&pc_health_none)
        return 1;
    return q(&least, &greatest) == CUDA_SUCCESS;
}

/* --- events (F.lock held) --- */

static struct pc_ev *pc_ev_get(int dev)
{
    struct pc_ev *e = F.evpool[dev];
    cudaError_t err;

    if (e) {
        F.evpool[dev] = e->next;
    } else {
        /* Not in a broken context: the runtime's refusal would set the
         * last error, and caching would end for good. */
        if (!pc_fence_context_ok())
            return NULL;
        e = calloc(1, sizeof *e);
        if (!e)
            return NULL;
        err = PC_CALL_REAL(cudaEventCreateWithFlags, &e->ev, cudaEventDisableTiming);
        if (err != cudaSuccess) {
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

static void pc_ev_put(struct pc_ev *e)
{
    if (--e->refs > 0)
        return;
    e->next = F.evpool[e->dev];
    F.evpool[e->dev] = e;
}

/* 1 complete, 0 pending.  A capture's refusal (a query while some thread's
 * capture prohibits it, measured on the H200: error 900) says nothing of
 * the event: pending.  Any other error means the context is gone: nothing
 * more will run on the device, so the event counts as complete. */
static int pc_ev_done(struct pc_ev *e)
{
    cudaError_t err = pc_event_query(e->ev);
    if (err == cudaErrorNotReady)
        return 0;
    if (err == cudaErrorStreamCaptureUnsupported || err == cudaErrorStreamCaptureInvalidated ||
        err == cudaErrorStreamCaptureImplicit)
        return 0;
    if (err != cudaSuccess)
        pc_mark_broken(err, "cudaEventQuery");
    return 1;
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
static int pc_cover_stream(struct pc_fence *f, cudaStream_t s, int dev, int legacy, int *busy)
{
    struct pc_ev *e;
    cudaError_t err;

    if (!legacy) {
        err = pc_stream_query(s);
        if (err == cudaSuccess)
            return 0;
        if (err != cudaErrorNotReady)
            return -1;           /* capturing, or broken: let the caller pass through */
    }
    e = pc_ev_get(dev);
    if (!e)
        return -1;
    err = pc_event_record(e->ev, s);
    if (err != cudaSuccess) {
        pc_ev_put(e);
        return -1;
    }
    return pc_fence_keep(f, e, legacy, busy);
}

/* Cover device dev's current context in f with one context-wide event,
 * dropped at once if already complete.  Returns 0; -2 when the context is
 * broken (nothing can be fenced there, and nothing more may be asked);
 * -1 when the driver refused (the caller then covers the device stream by
 * stream).  F.lock held. */
static int pc_cover_context(struct pc_fence *f, int dev, int *busy)
{
    CUcontext ctx = NULL;
    struct pc_ev *e;
    CUresult r;
    static int once;

    if (pc_ctx.current(&ctx) != CUDA_SUCCESS || !ctx)
        goto refused;
    if ((e = pc_ev_get(dev)) == NULL)
        return pc_fence_context_ok() ? -1 : -2;
    r = pc_ctx.record(ctx, (CUevent)e->ev);
    if (r != CUDA_SUCCESS) {
        pc_ev_put(e);
        if (!pc_fence_context_ok())
            return -2;
        pc_log_once(&once, PC_LOG_INFO, "cuCtxRecordEvent failed with CUDA error %d; that device is fenced stream by stream", (int)r);
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
    return __atomic_load_n(&pc_blind_any, __ATOMIC_RELAXED) || pc_real_unknown_major() ||
           (__atomic_load_n(&pc_blind_mask, __ATOMIC_RELAXED) & (1ull << dev)) != 0;
}

/* Cover every device and stream into f; *busy: work was in flight.
 * A device fenced stream by stream that has a stream pincache cannot see
 * cannot be covered: -1, and the free goes to the runtime (which waits).
 * F.lock held. */
static int pc_cover_all(struct pc_fence *f, int *busy)
{
    int cur = 0, now, rc = 0;
    uint64_t mask;
    struct pc_stream *st, *tmp;
    struct pc_ev *z, **zp;

    if (PC_CALL_REAL(cudaGetDevice, &cur) != cudaSuccess)
        return -1;
    pc_fence_device_used(cur);
    now = cur;
    mask = __atomic_load_n(&F.devmask, __ATOMIC_RELAXED);
    for (int d = 0; d < PC_MAX_DEV && rc == 0; d++) {
        if (!(mask & (1ull << d)))
            continue;
        /* Each device is fenced with its own context current (its events
         * belong to it), the calling thread's own device included. */
        if (d != now) {
            if (PC_CALL_REAL(cudaSetDevice, d) != cudaSuccess) {
                rc = -1;
                break;
            }
            now = d;
        }
        if (pc_use_ctx()) {
            int c = pc_cover_context(f, d, busy);
            if (c == 0)
                continue;
            if (c == -2) {
                rc = -1;
                break;
            }
        } else if (!pc_fence_context_ok()) {
            rc = -1;           /* before any runtime call could fail */
            break;
        }
        if (pc_is_blind(d)) {
            static int once;
            pc_log_once(&once, PC_LOG_WARN,
                        "device %d may have non-blocking streams pincache did not see created (a handle it never "
                        "saw made, or a cudart major it has no wrappers for), which fences made stream by stream "
                        "(PINCACHE_FENCE=runtime or driver, or no cuCtxRecordEvent) cannot cover: frees are left "
                        "to the runtime, which waits", d);
            PC_STAT_INC(fence_blind);
            rc = -1;
            break;
        }
        rc = pc_cover_stream(f, cudaStreamLegacy, d, 1, busy);
        HASH_ITER(hh, F.streams, st, tmp) {
            if (rc == 0 && st->dev == d && st->nonblocking)
                rc = pc_cover_stream(f, st->s, d, 0, busy);
        }
    }
    if (now != cur && PC_CALL_REAL(cudaSetDevice, cur) != cudaSuccess)
        rc = -1;
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

static int pc_query_busy(cudaStream_t s)
{
    return pc_stream_query(s) == cudaErrorNotReady;
}

/* Queries only, no event: cheaper than a fence, and an event recorded just
 * to ask would itself be work in flight for a moment, so an idle device
 * would look busy.  Every known stream is asked (the blocking ones too),
 * and this thread's per-thread stream if the program used it. */
__thread int pc_tls_ptstream __attribute__((tls_model("initial-exec")));

int pc_fence_busy_now(void)
{
    int cur = 0, now, busy = 0;
    uint64_t mask;
    struct pc_stream *st, *tmp;
    struct pc_ev *z;

    pthread_mutex_lock(&F.lock);
    if (F.capture > 0 || PC_CALL_REAL(cudaGetDevice, &cur) != cudaSuccess)
        goto out;
    pc_fence_device_used(cur);
    now = cur;
    mask = __atomic_load_n(&F.devmask, __ATOMIC_RELAXED);
    for (int d = 0; d < PC_MAX_DEV && !busy; d++) {
        if (!(mask & (1ull << d)))
            continue;
        if (d != now) {
            if (PC_CALL_REAL(cudaSetDevice, d) != cudaSuccess)
                break;
            now = d;
        }
        busy = pc_query_busy(cudaStreamLegacy) || (pc_tls_ptstream && pc_query_busy(cudaStreamPerThread));
        HASH_ITER(hh, F.streams, st, tmp) {
            if (!busy && st->dev == d)
                busy = pc_query_busy(st->s);
        }
    }
    if (now != cur)
        PC_CALL_REAL(cudaSetDevice, cur);
    for (z = F.zombies; z && !busy; z = z->next)
        busy = !pc_ev_done(z);
out:
    pthread_mutex_unlock(&F.lock);
    return busy;
}

void pc_fence_stream_created(cudaStream_t s, unsigned int flags)
{
    struct pc_stream *st = calloc(1, sizeof *st);
    int dev = 0;

    if (!st)
        return;
    PC_CALL_REAL(cudaGetDevice, &dev);
    pc_fence_device_used(dev);
    st->s = s;
    st->dev = dev;
    st->nonblocking = (flags & cudaStreamNonBlocking) != 0;
    pthread_mutex_lock(&F.lock);
    HASH_ADD_PTR(F.streams, s, st);
    pthread_mutex_unlock(&F.lock);
    PC_STAT_INC(streams_created);
}

void pc_fence_blind(int dev)
{
    if (dev >= 0 && dev < PC_MAX_DEV)
        __atomic_fetch_or(&pc_blind_mask, 1ull << dev, __ATOMIC_RELAXED);
    else
        __atomic_store_n(&pc_blind_any, 1, __ATOMIC_RELAXED);
}

/* An unknown handle is a stream pincache did not see created.  The last
 * handle this thread found known, blocking or already reported is not
 * looked up again.  A blocking
 * one is covered by the legacy stream's event (measured); a non-blocking
 * one may be reading a block that is freed later: blind.  Its device is
 * the stream's own where the runtime can say, else the current one.  The
 * queries must leave no last error behind (the program's call that follows
 * gives the runtime's own answer for a bad handle). */
static __thread cudaStream_t pc_tls_known;

void pc_fence_stream_seen(cudaStream_t s)
{
    struct pc_stream *st;
    unsigned int flags = 0;
    int dev = -1;
    cudaError_t pending;

    if (s == 0 || s == cudaStreamLegacy || s == cudaStreamPerThread || s == pc_tls_known)
        return;
    pthread_mutex_lock(&F.lock);
    HASH_FIND_PTR(F.streams, &s, st);
    pthread_mutex_unlock(&F.lock);
    if (st) {
        pc_tls_known = s;
        return;
    }
    pending = PC_CALL_REAL(cudaPeekAtLastError);
    if (PC_CALL_REAL(cudaStreamGetFlags, s, &flags) != cudaSuccess) {
        if (pending == cudaSuccess)
            PC_CALL_REAL(cudaGetLastError);
        return;
    }
    if (!(flags & cudaStreamNonBlocking)) {
        pc_tls_known = s;
        return;
    }
    if (!PC_REAL(cudaStreamGetDevice) || PC_CALL_REAL(cudaStreamGetDevice, s, &dev) != cudaSuccess) {
        if (PC_REAL(cudaStreamGetDevice) && pending == cudaSuccess)
            PC_CALL_REAL(cudaGetLastError);
        if (PC_CALL_REAL(cudaGetDevice, &dev) != cudaSuccess)
            dev = -1;
    }
    pc_fence_blind(dev);
    pc_tls_known = s;          /* said once: the device stays blind */
}

void pc_fence_stream_destroying(cudaStream_t s)
{
    struct pc_stream *st = NULL;
    struct pc_ev *e;
    int cur = 0;

    pthread_mutex_lock(&F.lock);
    HASH_FIND_PTR(F.streams, &s, st);
    if (st) {
        HASH_DEL(F.streams, st);
        PC_STAT_INC(streams_destroyed);
        /* Work still queued on it must stay covered by later fences. */
        if (pc_stream_query(s) == cudaErrorNotReady &&
            PC_CALL_REAL(cudaGetDevice, &cur) == cudaSuccess &&
            (cur == st->dev || PC_CALL_REAL(cudaSetDevice, st->dev) == cudaSuccess)) {
            e = pc_ev_get(st->dev);
            if (e && pc_event_record(e->ev, s) == cudaSuccess) {
                e->next = F.zombies;
                F.zombies = e;
            } else if (e) {
                pc_ev_put(e);
            }
            if (cur != st->dev)
                PC_CALL_REAL(cudaSetDevice, cur);
        }
        free(st);
    }
    pthread_mutex_unlock(&F.lock);
    if (!st)
        pc_fence_stream_seen(s);
}

void pc_fence_device_used(int dev)
{
    if (dev >= 0 && dev < PC_MAX_DEV)
        __atomic_fetch_or(&F.devmask, 1ull << dev, __ATOMIC_RELAXED);
}

void pc_fence_capture_begin(void)
{
    if (pc_opt.test_capture_blind)
        return;
    pthread_mutex_lock(&F.lock);
    __atomic_store_n(&F.capture, F.capture + 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&F.lock);
}

void pc_fence_capture_end(void)
{
    pthread_mutex_lock(&F.lock);
    if (F.capture > 0)
        __atomic_store_n(&F.capture, F.capture - 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&F.lock);
}

/* Lock-free: read on every pinned allocation.  Written under F.lock. */
int pc_fence_capturing(void)
{
    return __atomic_load_n(&F.capture, __ATOMIC_ACQUIRE);
}

void pc_fence_forget_all(void)
{
    /* The child's copy of the lock may be held by a parent thread that no
     * longer exists; start over.  The parent's events are left alone. */
    struct pc_fence_state *old = malloc(sizeof *old);
    if (old) {
        *old = F;
        old->abandoned_next = pc_fence_abandoned;
        pc_fence_abandoned = old;
    }
    pthread_mutex_init(&F.lock, NULL);
    F.head = F.tail = F.spare = NULL;
    F.zombies = NULL;
    F.streams = NULL;
    F.capture = 0;
    F.next_seq = 0;
    for (int d = 0; d < PC_MAX_DEV; d++)
        F.evpool[d] = NULL;
    __atomic_store_n(&F.done_upto, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&F.devmask, 0, __ATOMIC_RELAXED);
}

/* Drop one reference to e, which belongs to a context being destroyed:
 * it never goes back to the event pool (F.lock held). */
static void pc_ev_forget(struct pc_ev *e)
{
    if (--e->refs <= 0)
        free(e);
}

void pc_fence_forget_device(int dev)
{
    struct pc_fence *f;
    struct pc_stream *st, *tmp;
    struct pc_ev *e, **zp;
    int k;

    if (dev < 0 || dev >= PC_MAX_DEV)
        return;
    pthread_mutex_lock(&F.lock);
    for (f = F.head; f; f = f->next) {
        for (int i = k = 0; i < f->n; i++) {
            if (f->ev[i]->dev == dev)
                pc_ev_forget(f->ev[i]);
            else
                f->ev[k++] = f->ev[i];
        }
        f->n = k;
    }
    for (zp = &F.zombies; (e = *zp) != NULL;) {
        if (e->dev == dev) {
            *zp = e->next;
            pc_ev_forget(e);
        } else {
            zp = &e->next;
        }
    }
    while ((e = F.evpool[dev]) != NULL) {
        F.evpool[dev] = e->next;
        free(e);
    }
    HASH_ITER(hh, F.streams, st, tmp) {
        if (st->dev == dev) {
            HASH_DEL(F.streams, st);
            free(st);
        }
    }
    /* Made current again, it counts again (pc_fence_device_used). */
    __atomic_fetch_and(&F.devmask, ~(1ull << dev), __ATOMIC_RELAXED);
    __atomic_fetch_and(&pc_blind_mask, ~(1ull << dev), __ATOMIC_RELAXED);
    pthread_mutex_unlock(&F.lock);
}
