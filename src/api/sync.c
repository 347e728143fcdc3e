/* sync.c - the synchronizing calls: forwarded.  Whether they waited for GPU
 * work is told by diag: from the duration of the calls that only wait, by
 * asking the fences for cudaFree, which has work of its own. */
#include "config.h"
#include "api/sync.h"
#include "util/state.h"
#include "real/real.h"
#include "diag/diag.h"

cudaError_t pc_stream_synchronize(cudaStream_t s, int ptsz)
{
    pc_mark_used();
    pc_diag_sync_stream(ptsz && !s ? cudaStreamPerThread : s);
    return ptsz ? PC_CALL_REAL(cudaStreamSynchronize_ptsz, s) : PC_CALL_REAL(cudaStreamSynchronize, s);
}

cudaError_t pc_device_synchronize(void)
{
    pc_mark_used();
    pc_diag_sync_device();
    return PC_CALL_REAL(cudaDeviceSynchronize);
}

cudaError_t pc_device_free(void *p)
{
    pc_mark_used();
    if (p)                    /* cudaFree(NULL) returns at once */
        pc_diag_probe_device();
    return PC_CALL_REAL(cudaFree, p);
}
