/* streams.c - streams, devices, contexts and captures: keep the fences'
 * view complete, and forget what a destroyed context took with it
 * (streams.h). */
#include "config.h"
#include <pthread.h>
#include "api/streams.h"
#include "api/flavour.h"
#include "util/state.h"
#include "diag/diag.h"
#include "core/fence.h"
#include "core/cache.h"
#include "core/pool.h"
#include "real/real.h"

/* --- streams --- */

/* Driver streams join the fences exactly as runtime ones do: a block freed
 * while a non-blocking stream is busy must wait for it (CU_STREAM_NON_BLOCKING
 * is cudaStreamNonBlocking; success is 0 in both flavours). */
static int pc_stream_note(int r, void **s, unsigned int flags)
{
    pc_mark_used();
    if (r == 0 && s && pc_state.mode != PC_MODE_OFF && !pc_state.forked_child)
        pc_fence_stream_created(*s, (flags & cudaStreamNonBlocking) != 0);
    return r;
}

cudaError_t pc_stream_created(cudaError_t r, cudaStream_t *s, unsigned int flags)
{
    return (cudaError_t)pc_stream_note(r, (void **)s, flags);
}

CUresult pc_drv_stream_created(CUresult r, CUstream *s, unsigned int flags)
{
    return (CUresult)pc_stream_note(r, (void **)s, flags);
}

void pc_stream_seen(cudaStream_t s)
{
    if (pc_state.mode != PC_MODE_OFF && !pc_state.forked_child)
        pc_fence_stream_seen(s);
}

void pc_stream_destroying(cudaStream_t s)
{
    if (pc_state.mode != PC_MODE_OFF && !pc_state.forked_child)
        pc_fence_stream_destroying(s);
}

/* --- devices --- */

cudaError_t pc_device_set(cudaError_t r, int dev)
{
    if (r == cudaSuccess && !pc_state.forked_child)
        pc_fence_device_used(dev);
    return r;
}

/* A device whose primary context the program retains is in use (what
 * cudaSetDevice says for the runtime); a CUdevice is its ordinal. */
CUresult pc_drv_device_used(CUresult r, CUdevice dev)
{
    pc_mark_used();
    return (CUresult)pc_device_set((cudaError_t)r, (int)dev);
}

/* A driver copy on stream s: its context's device is in use.  The context
 * is asked for its device only when it changed on this thread. */
void pc_drv_copy_seen(CUstream s)
{
    static __thread CUcontext last;
    CUcontext cur = NULL;
    CUdevice dev;

    pc_mark_used();
    if (pc_state.mode == PC_MODE_OFF || pc_state.forked_child)
        return;
    pc_fence_stream_seen((cudaStream_t)s);
    if (PC_CALL_DRV(cuCtxGetCurrent, &cur) != CUDA_SUCCESS || !cur || cur == last)
        return;
    last = cur;
    if (PC_CALL_DRV(cuCtxGetDevice, &dev) == CUDA_SUCCESS)
        pc_device_set(cudaSuccess, (int)dev);
}

/* Device dev's primary context is about to be destroyed, and with it its
 * streams, events and pinned allocations; nothing of other devices'.
 * Every module's forgetting of a device is handed down by init.c (its
 * life-cycle table's device_lost column). */
static void (*pc_device_lost)(int dev);

void pc_streams_set_device_lost(void (*lost)(int dev))
{
    pc_device_lost = lost;
}

static void pc_forget_device(int dev)
{
    if (dev < 0 || dev >= PC_POOL_NHOME || pc_state.mode == PC_MODE_OFF || pc_state.forked_child)
        return;
    if (pc_device_lost)
        pc_device_lost(dev);
}

/* cudaDeviceReset resets the current device's primary context only. */
cudaError_t pc_device_reset(void)
{
    int dev = -1;

    if (pc_state.mode != PC_MODE_OFF && !pc_state.forked_child) {
        cudaError_t pending = PC_CALL_REAL(cudaPeekAtLastError);

        if (PC_CALL_REAL(cudaGetDevice, &dev) == cudaSuccess)
            pc_forget_device(dev);            /* the rings, blocks and events die with it */
        else if (pending == cudaSuccess)
            PC_CALL_REAL(cudaGetLastError);   /* our failed question: the program's last error stays */
    }
    cudaError_t r = PC_CALL_REAL(cudaDeviceReset);
    pc_fence_contexts_changed();
    return r;
}

/* cuDevicePrimaryCtxReset(dev) is a device reset of dev (measured: the
 * blocks of its primary context are gone, their addresses handed out
 * again). */
CUresult pc_drv_primary_reset(CUdevice dev)
{
    pc_mark_used();
    pc_forget_device((int)dev);
    CUresult r = PC_CALL_DRV(cuDevicePrimaryCtxReset_v2, dev);
    pc_fence_contexts_changed();
    return r;
}

/* A release destroys the primary context when it drops the last retain
 * (measured: one program release after the runtime's own start-up does),
 * which only the state after the call can tell. */
CUresult pc_drv_primary_released(CUresult r, CUdevice dev)
{
    unsigned int flags = 0;
    int active = 1;

    pc_mark_used();
    if (r == CUDA_SUCCESS && PC_CALL_DRV(cuDevicePrimaryCtxGetState, dev, &flags, &active) == CUDA_SUCCESS &&
        !active) {
        pc_forget_device((int)dev);
        pc_fence_contexts_changed();
    }
    return r;
}

/* --- contexts the program created ---
 *
 * Those live (cuCtxCreate).  While one is current pincache neither serves
 * allocations nor fences frees: its blocks belong to it, and its events
 * and streams die with it.  Read lock-free when there are none (the common
 * case: no cuCtxGetCurrent at all). */
#define PC_MAX_CREATED 64
static pthread_mutex_t pc_created_lock = PTHREAD_MUTEX_INITIALIZER;
static CUcontext pc_created[PC_MAX_CREATED];   /* pc_created_lock */
static int pc_ncreated;                        /* atomic; written under pc_created_lock */
static int pc_created_lost;                    /* more than PC_MAX_CREATED: every context counts */

int pc_ctx_created_current(void)
{
    CUcontext c = NULL;
    int found;

    if (!__atomic_load_n(&pc_ncreated, __ATOMIC_ACQUIRE))
        return 0;
    if (PC_CALL_DRV(cuCtxGetCurrent, &c) != CUDA_SUCCESS || !c)
        return 0;
    pthread_mutex_lock(&pc_created_lock);
    found = pc_created_lost;
    for (int i = 0; i < PC_MAX_CREATED && !found; i++)
        found = pc_created[i] == c;
    pthread_mutex_unlock(&pc_created_lock);
    return found;
}

static void pc_created_set(CUcontext old, CUcontext ctx)
{
    int i;

    pthread_mutex_lock(&pc_created_lock);
    for (i = 0; i < PC_MAX_CREATED && pc_created[i] != old; i++)
        ;
    if (i < PC_MAX_CREATED) {
        pc_created[i] = ctx;
        __atomic_store_n(&pc_ncreated, pc_ncreated + (ctx ? 1 : -1), __ATOMIC_RELEASE);
    } else if (ctx) {
        pc_created_lost = 1;
        __atomic_store_n(&pc_ncreated, pc_ncreated + 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&pc_created_lock);
}

CUresult pc_drv_ctx_created(CUresult r, CUcontext *pctx)
{
    pc_mark_used();
    if (r == CUDA_SUCCESS && pctx && *pctx && pc_state.mode != PC_MODE_OFF && !pc_state.forked_child)
        pc_created_set(NULL, *pctx);
    return r;
}

/* Nothing of a created context is cached, so nothing is forgotten. */
CUresult pc_drv_ctx_destroyed(CUresult r, CUcontext ctx)
{
    if (r == CUDA_SUCCESS)
        pc_fence_contexts_changed();
    if (r == CUDA_SUCCESS && ctx && pc_state.mode != PC_MODE_OFF && !pc_state.forked_child)
        pc_created_set(ctx, NULL);
    return r;
}

/* --- captures: no fence runs while one is under way --- */

/* A capture counts from before the runtime begins it: counted after, a
 * fence's query of the stream (a watch, fence.c) could come between, and
 * a query of a capturing stream breaks the capture.  Frees meanwhile go to
 * the runtime, as during the capture.  Success is 0 in both flavours.
 * Captures begun through the driver API (static cudart, XLA) count as the
 * runtime's do. */
void pc_capture_beginning(void)
{
    pc_fence_capture_begin();
}

static int pc_began(int r)
{
    if (r != 0)
        pc_fence_capture_end();
    return r;
}

cudaError_t pc_capture_began(cudaError_t r)
{
    return (cudaError_t)pc_began(r);
}

CUresult pc_drv_capture_began(CUresult r)
{
    return (CUresult)pc_began(r);
}

/* A capture ends when EndCapture ends it: it counts only when the stream was
 * capturing before the call and is not after it (an EndCapture on a stream
 * that was not capturing, or one that is refused, ends nothing; counting it
 * would let fences run during another stream's capture).  The legacy
 * stream never captures, and asking about it during another stream's
 * global-mode capture would invalidate that capture, so it is not asked;
 * nor is stream 0 of the plain forms, the legacy stream too. */
static int pc_capturing(const struct pc_flavour *fl, void *s, int ptsz)
{
    if (s == (void *)cudaStreamLegacy || (!s && !ptsz))
        return 0;
    return fl->capturing(s, ptsz);
}

static int pc_end(const struct pc_flavour *fl, void *s, void *g, int ptsz)
{
    int was = pc_capturing(fl, s, ptsz);
    int r = fl->end_capture(s, g, ptsz);

    if (was && !pc_capturing(fl, s, ptsz))
        pc_fence_capture_end();
    return r;
}

cudaError_t pc_end_capture(cudaStream_t s, cudaGraph_t *g, int ptsz)
{
    return (cudaError_t)pc_end(&pc_flavour_rt, s, g, ptsz);
}

CUresult pc_drv_end_capture(CUstream s, CUgraph *g, int ptsz)
{
    return (CUresult)pc_end(&pc_flavour_drv, s, g, ptsz);
}
