/* fence_cuda.c - the CUDA back-end of the fences (fence_ops.h): which calls
 * a fence is made of, the context's health, and what an unseen stream is. */
#include "config.h"
#include <pthread.h>
#include "real/cudart_ext.h"
#include "core/fence_ops.h"
#include "util/log.h"
#include "util/options.h"
#include "real/real.h"

_Static_assert(PC_STREAM_LEGACY == (void *)cudaStreamLegacy && PC_STREAM_PER_THREAD == (void *)cudaStreamPerThread,
               "the runtime's special stream handles");

/* --- the calls a fence is made of ---
 *
 * PINCACHE_FENCE=context (the default): one cuCtxRecordEvent per device
 * and a query of that event.  The event captures all work of the context at
 * the time of the call, on every stream, whoever made it (the runtime, the
 * driver API, a library pincache never saw), so the cost does not grow
 * with the number of streams.  On the H200 a query per non-blocking stream
 * had cost the alloc+free pair about 0.5 us per stream (docs/runs.md,
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
    int ok;                    /* 0 no (or not yet decided), 1 yes: written once, under pc_ctx_once */
    pc_ctx_record_fn record;
    pc_ctx_current_fn current;
    pc_ev_query_fn query;
} pc_ctx;
static pthread_once_t pc_ctx_once = PTHREAD_ONCE_INIT;
static int pc_ctx_decided;     /* atomic: pc_ctx_resolve ran (a hit pair asks three times) */

static void pc_ctx_resolve_once(void)
{
    if (pc_opt.fence != PC_FENCE_CONTEXT)
        return;
    pc_ctx.record = (pc_ctx_record_fn)PC_REAL(cuCtxRecordEvent);
    pc_ctx.current = (pc_ctx_current_fn)PC_REAL(cuCtxGetCurrent);
    pc_ctx.query = (pc_ev_query_fn)PC_REAL(cuEventQuery);
    if (!pc_ctx.record || !pc_ctx.current || !pc_ctx.query) {
        /* All three from one source. */
        pc_ctx.record = (pc_ctx_record_fn)pc_real_drv_entry(NULL, "cuCtxRecordEvent", 12050);
        pc_ctx.current = (pc_ctx_current_fn)pc_real_drv_entry(NULL, "cuCtxGetCurrent", 4000);
        pc_ctx.query = (pc_ev_query_fn)pc_real_drv_entry(NULL, "cuEventQuery", 2000);
    }
    pc_ctx.ok = pc_ctx.record && pc_ctx.current && pc_ctx.query;
    if (pc_ctx.ok)
        pc_info("fences: one context-wide event per device (cuCtxRecordEvent)");
    else
        pc_info("fences: cuCtxRecordEvent not available; an event on the legacy stream and a query per non-blocking stream");
}

static void pc_ctx_resolve(void)
{
    pc_ctx_resolve_once();
    __atomic_store_n(&pc_ctx_decided, 1, __ATOMIC_RELEASE);
}

static int pc_cuda_ctx_wide(void)
{
    if (!__atomic_load_n(&pc_ctx_decided, __ATOMIC_ACQUIRE))
        pthread_once(&pc_ctx_once, pc_ctx_resolve);
    return pc_ctx.ok;
}

/* pc_ctx.ok is read without pthread_once below: the fences call ctx_wide
 * (under their lock) before anything here, and until it is decided the
 * answer is "no" (the runtime's calls), which is right, only slower. */
static void *pc_cuda_ctx_current(void)
{
    CUcontext ctx = NULL;

    if (!pc_ctx.ok || pc_ctx.current(&ctx) != CUDA_SUCCESS)
        return NULL;
    return ctx;
}

static int pc_cuda_ctx_record(void *ctx, void *ev)
{
    return (int)pc_ctx.record((CUcontext)ctx, (CUevent)ev);
}

/* Done or not ready: the two answers the driver path keeps (same numbers
 * in both APIs); anything else is asked again through the runtime. */
_Static_assert((int)CUDA_SUCCESS == (int)cudaSuccess && (int)CUDA_ERROR_NOT_READY == (int)cudaErrorNotReady,
               "driver and runtime share these codes");
static int pc_drv_settled(CUresult r)
{
    return r == CUDA_SUCCESS || r == CUDA_ERROR_NOT_READY;
}

/* A capture's refusal (a query while some thread's capture prohibits it,
 * measured on the H200: error 900) says nothing of what is asked about. */
static int pc_fq_of(cudaError_t err)
{
    switch (err) {
    case cudaSuccess:
        return PC_FQ_DONE;
    case cudaErrorNotReady:
        return PC_FQ_PENDING;
    case cudaErrorStreamCaptureUnsupported:
    case cudaErrorStreamCaptureInvalidated:
    case cudaErrorStreamCaptureImplicit:
        return PC_FQ_REFUSED;
    default:
        return PC_FQ_ERROR;
    }
}

static int pc_cuda_stream_query(void *s)
{
    CUresult r;
    if (pc_use_drv() && pc_drv_settled(r = PC_REAL(cuStreamQuery)((CUstream)s)))
        return pc_fq_of((cudaError_t)r);
    return pc_fq_of(PC_CALL_REAL(cudaStreamQuery, (cudaStream_t)s));
}

static int pc_cuda_event_record(void *ev, void *s)
{
    if (pc_use_drv() && PC_REAL(cuEventRecord)((CUevent)ev, (CUstream)s) == CUDA_SUCCESS)
        return 0;
    return (int)PC_CALL_REAL(cudaEventRecord, (cudaEvent_t)ev, (cudaStream_t)s);
}

static int pc_cuda_event_query(void *ev, int *err)
{
    cudaError_t e;
    CUresult r;

    if (pc_ctx.ok && pc_drv_settled(r = pc_ctx.query((CUevent)ev)))
        e = (cudaError_t)r;
    else if (pc_use_drv() && pc_drv_settled(r = PC_REAL(cuEventQuery)((CUevent)ev)))
        e = (cudaError_t)r;
    else
        e = PC_CALL_REAL(cudaEventQuery, (cudaEvent_t)ev);
    *err = (int)e;
    return pc_fq_of(e);
}

static int pc_cuda_event_create(void **ev)
{
    return (int)PC_CALL_REAL(cudaEventCreateWithFlags, (cudaEvent_t *)ev, cudaEventDisableTiming);
}

static int pc_cuda_get_device(int *dev)
{
    return (int)PC_CALL_REAL(cudaGetDevice, dev);
}

static int pc_cuda_set_device(int dev)
{
    return (int)PC_CALL_REAL(cudaSetDevice, dev);
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
 * with dev/probe/ctxhealth.cu, docs/runtime-facts.md: cuStreamQuery of
 * the legacy stream, the question until then, cost 350 ns in that run and
 * was most of what the hit pair had grown by; cuCtxGetFlags, cuCtxGetId,
 * cuCtxGetDevice and cuCtxGetApiVersion answer 0 in a broken context.)
 * Any answer but success (no context current on this thread, say) also
 * counts as broken: the real function knows what to do. */
typedef CUresult (*pc_health_fn)(int *, int *);
static pc_health_fn pc_health_query;   /* resolved once; written atomically */
static char pc_health_none;            /* its address: no such entry point */

static int pc_cuda_context_ok(void)
{
    pc_health_fn q = __atomic_load_n(&pc_health_query, __ATOMIC_ACQUIRE);
    int least, greatest;

    if (!q) {
        /* The simulated device has no libcuda: the runtime hands its
         * driver entry points out. */
        void *f = pc_real_drv_entry((void *)PC_REAL(cuCtxGetStreamPriorityRange), "cuCtxGetStreamPriorityRange", 5050);
        q = f ? (pc_health_fn)f : (pc_health_fn)(void *)&pc_health_none;
        __atomic_store_n(&pc_health_query, q, __ATOMIC_RELEASE);
    }
    if ((void *)q == (void *)&pc_health_none)
        return 1;
    return q(&least, &greatest) == CUDA_SUCCESS;
}

/* --- streams pincache did not see created ---
 *
 * Its flags, then its device where the runtime can say.  The queries must
 * leave no last error behind (the program's call that follows gives the
 * runtime's own answer for a bad handle): an error this asking set is
 * cleared, one the program left pending stays. */
static int pc_cuda_stream_probe(void *h, int *nonblocking, int *dev)
{
    cudaStream_t s = (cudaStream_t)h;
    cudaError_t pending = PC_CALL_REAL(cudaPeekAtLastError);
    unsigned int flags = 0;

    *dev = -1;
    if (PC_CALL_REAL(cudaStreamGetFlags, s, &flags) != cudaSuccess) {
        if (pending == cudaSuccess)
            PC_CALL_REAL(cudaGetLastError);
        return -1;
    }
    *nonblocking = (flags & cudaStreamNonBlocking) != 0;
    if (!*nonblocking)
        return 0;
    if (!PC_REAL(cudaStreamGetDevice) || PC_CALL_REAL(cudaStreamGetDevice, s, dev) != cudaSuccess) {
        if (PC_REAL(cudaStreamGetDevice) && pending == cudaSuccess)
            PC_CALL_REAL(cudaGetLastError);
        if (PC_CALL_REAL(cudaGetDevice, dev) != cudaSuccess)
            *dev = -1;
    }
    return 0;
}

static int pc_cuda_blind_all(void)
{
    return pc_real_unknown_major() != 0;
}

const struct pc_fence_ops pc_fence_cuda_ops = {
    .get_device = pc_cuda_get_device,
    .set_device = pc_cuda_set_device,
    .context_ok = pc_cuda_context_ok,
    .ctx_wide = pc_cuda_ctx_wide,
    .ctx_current = pc_cuda_ctx_current,
    .ctx_record = pc_cuda_ctx_record,
    .event_create = pc_cuda_event_create,
    .event_record = pc_cuda_event_record,
    .event_query = pc_cuda_event_query,
    .stream_query = pc_cuda_stream_query,
    .stream_probe = pc_cuda_stream_probe,
    .blind_all = pc_cuda_blind_all,
};
