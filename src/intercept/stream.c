/* Streams, devices and capture: forwarded, and reported to the fences. */
#include "config.h"
#include "intercept/guard.h"
#include "api/streams.h"
#include "real/real.h"

PC_EXPORT cudaError_t cudaStreamCreate(cudaStream_t *s)
{
    PC_FORWARD(cudaStreamCreate, pc_stream_created(PC_CALL_REAL(cudaStreamCreate, s), s, cudaStreamDefault), s);
}

PC_EXPORT cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned int flags)
{
    PC_FORWARD(cudaStreamCreateWithFlags,
               pc_stream_created(PC_CALL_REAL(cudaStreamCreateWithFlags, s, flags), s, flags), s, flags);
}

PC_EXPORT cudaError_t cudaStreamCreateWithPriority(cudaStream_t *s, unsigned int flags, int priority)
{
    PC_FORWARD(cudaStreamCreateWithPriority,
               pc_stream_created(PC_CALL_REAL(cudaStreamCreateWithPriority, s, flags, priority), s, flags),
               s, flags, priority);
}

PC_EXPORT cudaError_t cudaStreamDestroy(cudaStream_t s)
{
    PC_FORWARD(cudaStreamDestroy, (pc_stream_destroying(s), PC_CALL_REAL(cudaStreamDestroy, s)), s);
}

PC_EXPORT cudaError_t cudaSetDevice(int dev)
{
    PC_FORWARD(cudaSetDevice, pc_device_set(PC_CALL_REAL(cudaSetDevice, dev), dev), dev);
}

PC_EXPORT cudaError_t cudaDeviceReset(void)
{
    int saved = errno;

    if (!pc_enter())
        return PC_CALL_REAL(cudaDeviceReset);
    cudaError_t r = pc_device_reset();
    pc_leave();
    PC_KEEP_ERRNO(r, saved);
    return r;
}

/* Graph captures: counted from before the real call (api/streams.c). */
#define PC_RT_CAPTURE(name, ...) \
    PC_FORWARD(name, pc_capture_began((pc_capture_beginning(), PC_CALL_REAL(name, __VA_ARGS__))), __VA_ARGS__)

PC_EXPORT cudaError_t cudaStreamBeginCapture(cudaStream_t s, enum cudaStreamCaptureMode mode)
{
    PC_RT_CAPTURE(cudaStreamBeginCapture, s, mode);
}

PC_EXPORT cudaError_t cudaStreamBeginCapture_ptsz(cudaStream_t s, enum cudaStreamCaptureMode mode)
{
    PC_RT_CAPTURE(cudaStreamBeginCapture_ptsz, s, mode);
}

PC_EXPORT cudaError_t cudaStreamBeginCaptureToGraph(cudaStream_t s, cudaGraph_t g, const cudaGraphNode_t *deps,
                                                    const cudaGraphEdgeData *data, size_t n,
                                                    enum cudaStreamCaptureMode mode)
{
    PC_RT_CAPTURE(cudaStreamBeginCaptureToGraph, s, g, deps, data, n, mode);
}

PC_EXPORT cudaError_t cudaStreamBeginCaptureToGraph_ptsz(cudaStream_t s, cudaGraph_t g, const cudaGraphNode_t *deps,
                                                         const cudaGraphEdgeData *data, size_t n,
                                                         enum cudaStreamCaptureMode mode)
{
    PC_RT_CAPTURE(cudaStreamBeginCaptureToGraph_ptsz, s, g, deps, data, n, mode);
}

PC_EXPORT cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *g)
{
    PC_FORWARD(cudaStreamEndCapture, pc_end_capture(s, g, 0), s, g);
}

PC_EXPORT cudaError_t cudaStreamEndCapture_ptsz(cudaStream_t s, cudaGraph_t *g)
{
    PC_FORWARD(cudaStreamEndCapture_ptsz, pc_end_capture(s, g, 1), s, g);
}
