/* Calls that wait for the device or a stream: forwarded, and accounted with
 * whether they waited for GPU work (api/sync.c). */
#include "config.h"
#include "intercept/guard.h"
#include "api/sync.h"
#include "real/real.h"
#include "diag/diag.h"

PC_EXPORT cudaError_t cudaStreamSynchronize(cudaStream_t s)
{
    PC_FORWARD_TIMED(PC_API_stream_sync, 0, NULL, cudaStreamSynchronize, pc_stream_synchronize(s, 0), s);
}

PC_EXPORT cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t s)
{
    PC_FORWARD_TIMED(PC_API_stream_sync, 0, NULL, cudaStreamSynchronize_ptsz, pc_stream_synchronize(s, 1), s);
}

PC_EXPORT cudaError_t cudaDeviceSynchronize(void)
{
    PC_FORWARD_TIMED(PC_API_device_sync, 0, NULL, cudaDeviceSynchronize, pc_device_synchronize());
}

PC_EXPORT cudaError_t cudaFree(void *p)
{
    PC_FORWARD_TIMED(PC_API_free, 0, p, cudaFree, pc_device_free(p), p);
}
