/* The driver API's host memory, streams and contexts (copies: drvcopy.c):
 * forwarded to the same cache and fences as the runtime's calls.
 *
 * Ownership: whichever pincache wrapper a thread enters first owns the
 * call, and everything it causes runs under the guard (pc_enter) and
 * passes straight through.  A shared libcudart reaches the driver through
 * pointers that cuGetProcAddress handed it (procaddr.c substitutes these
 * wrappers there too), so a runtime call served by the runtime wrappers
 * meets these with the guard held and is not seen twice; a program built
 * with the static cudart has no runtime wrappers to enter, so its calls
 * are served here, once. */
#include "config.h"
#include "intercept/guard.h"
#include "api/hostmem.h"
#include "api/register.h"
#include "api/streams.h"
#include "real/real.h"
#include "diag/diag.h"
#include "intercept/intercept.h"

PC_EXPORT CUresult cuMemHostAlloc(void **pp, size_t n, unsigned int flags)
{
    PC_DRV_TIMED(PC_API_host_alloc, n, pp, cuMemHostAlloc, pc_drv_host_alloc(pp, n, flags, 0), pp, n, flags);
}

PC_EXPORT CUresult cuMemAllocHost_v2(void **pp, size_t n)
{
    PC_DRV_TIMED(PC_API_malloc_host, n, pp, cuMemAllocHost_v2, pc_drv_host_alloc(pp, n, 0, 1), pp, n);
}

PC_EXPORT CUresult cuMemFreeHost(void *p)
{
    PC_DRV_TIMED(PC_API_free_host, 0, p, cuMemFreeHost, pc_drv_free_host(p), p);
}

PC_EXPORT CUresult cuMemHostGetFlags(unsigned int *flags, void *p)
{
    PC_FORWARD_DRV(cuMemHostGetFlags, pc_drv_host_get_flags(flags, p), flags, p);
}

PC_EXPORT CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *pdev, void *p, unsigned int flags)
{
    PC_FORWARD_DRV(cuMemHostGetDevicePointer_v2, pc_drv_host_get_device_pointer(pdev, p, flags), pdev, p, flags);
}

PC_EXPORT CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attr, CUdeviceptr ptr)
{
    PC_FORWARD_DRV(cuPointerGetAttribute, pc_drv_pointer_get_attribute(data, attr, ptr), data, attr, ptr);
}

PC_EXPORT CUresult cuPointerGetAttributes(unsigned int n, CUpointer_attribute *attrs, void **data, CUdeviceptr ptr)
{
    PC_FORWARD_DRV(cuPointerGetAttributes, pc_drv_pointer_get_attributes(n, attrs, data, ptr), n, attrs, data, ptr);
}

PC_EXPORT CUresult cuMemHostRegister_v2(void *p, size_t n, unsigned int flags)
{
    PC_DRV_TIMED(PC_API_host_register, n, p, cuMemHostRegister_v2, pc_drv_host_register(p, n, flags), p, n, flags);
}

PC_EXPORT CUresult cuMemHostUnregister(void *p)
{
    PC_DRV_TIMED(PC_API_host_unregister, 0, p, cuMemHostUnregister, pc_drv_host_unregister(p), p);
}

PC_EXPORT CUresult cuStreamCreate(CUstream *s, unsigned int flags)
{
    PC_FORWARD_DRV(cuStreamCreate, pc_drv_stream_created(PC_CALL_DRV(cuStreamCreate, s, flags), s, flags), s, flags);
}

PC_EXPORT CUresult cuStreamCreateWithPriority(CUstream *s, unsigned int flags, int priority)
{
    PC_FORWARD_DRV(cuStreamCreateWithPriority,
                   pc_drv_stream_created(PC_CALL_DRV(cuStreamCreateWithPriority, s, flags, priority), s, flags),
                   s, flags, priority);
}

PC_EXPORT CUresult cuStreamDestroy_v2(CUstream s)
{
    PC_FORWARD_DRV(cuStreamDestroy_v2, (pc_stream_destroying((cudaStream_t)s), PC_CALL_DRV(cuStreamDestroy_v2, s)), s);
}

/* Graph captures: no fence runs while one is under way (a context-wide
 * event, or a query of the capturing stream, would invalidate it); counted
 * from before the real call (api/streams.c). */
#define PC_DRV_CAPTURE(name, ...) \
    PC_FORWARD_DRV(name, pc_drv_capture_began((pc_capture_beginning(), PC_CALL_DRV(name, __VA_ARGS__))), __VA_ARGS__)

PC_EXPORT CUresult cuStreamBeginCapture_v2(CUstream s, CUstreamCaptureMode mode)
{
    PC_DRV_CAPTURE(cuStreamBeginCapture_v2, s, mode);
}

PC_EXPORT CUresult cuStreamBeginCapture_v2_ptsz(CUstream s, CUstreamCaptureMode mode)
{
    PC_DRV_CAPTURE(cuStreamBeginCapture_v2_ptsz, s, mode);
}

PC_EXPORT CUresult cuStreamBeginCaptureToGraph(CUstream s, CUgraph g, const CUgraphNode *deps,
                                               const CUgraphEdgeData *data, size_t n, CUstreamCaptureMode mode)
{
    PC_DRV_CAPTURE(cuStreamBeginCaptureToGraph, s, g, deps, data, n, mode);
}

PC_EXPORT CUresult cuStreamBeginCaptureToGraph_ptsz(CUstream s, CUgraph g, const CUgraphNode *deps,
                                                    const CUgraphEdgeData *data, size_t n, CUstreamCaptureMode mode)
{
    PC_DRV_CAPTURE(cuStreamBeginCaptureToGraph_ptsz, s, g, deps, data, n, mode);
}

PC_EXPORT CUresult cuStreamEndCapture(CUstream s, CUgraph *g)
{
    PC_FORWARD_DRV(cuStreamEndCapture, pc_drv_end_capture(s, g, 0), s, g);
}

PC_EXPORT CUresult cuStreamEndCapture_ptsz(CUstream s, CUgraph *g)
{
    PC_FORWARD_DRV(cuStreamEndCapture_ptsz, pc_drv_end_capture(s, g, 1), s, g);
}

PC_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice dev)
{
    PC_FORWARD_DRV(cuDevicePrimaryCtxRetain,
                   pc_drv_device_used(PC_CALL_DRV(cuDevicePrimaryCtxRetain, ctx, dev), dev), ctx, dev);
}

/* Context teardown frees the pinned blocks, events and streams of the
 * context it destroys (measured on an H200): the cache forgets them.
 * Blocks are cached only for primary contexts, so created ones are noted. */
PC_EXPORT CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
    PC_FORWARD_DRV(cuDevicePrimaryCtxReset_v2, pc_drv_primary_reset(dev), dev);
}

PC_EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
    PC_FORWARD_DRV(cuDevicePrimaryCtxRelease_v2,
                   pc_drv_primary_released(PC_CALL_DRV(cuDevicePrimaryCtxRelease_v2, dev), dev), dev);
}

PC_EXPORT CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    PC_FORWARD_DRV(cuCtxCreate_v2, pc_drv_ctx_created(PC_CALL_DRV(cuCtxCreate_v2, pctx, flags, dev), pctx),
                   pctx, flags, dev);
}

PC_EXPORT CUresult cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *params, int n, unsigned int flags,
                                  CUdevice dev)
{
    PC_FORWARD_DRV(cuCtxCreate_v3,
                   pc_drv_ctx_created(PC_CALL_DRV(cuCtxCreate_v3, pctx, params, n, flags, dev), pctx),
                   pctx, params, n, flags, dev);
}

PC_EXPORT CUresult cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *params, unsigned int flags, CUdevice dev)
{
    PC_FORWARD_DRV(cuCtxCreate_v4,
                   pc_drv_ctx_created(PC_CALL_DRV(cuCtxCreate_v4, pctx, params, flags, dev), pctx),
                   pctx, params, flags, dev);
}

PC_EXPORT CUresult cuCtxDestroy_v2(CUcontext ctx)
{
    PC_FORWARD_DRV(cuCtxDestroy_v2, pc_drv_ctx_destroyed(PC_CALL_DRV(cuCtxDestroy_v2, ctx), ctx), ctx);
}
