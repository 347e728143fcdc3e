/* sync.c - the synchronizing calls: forwarded, after asking whether the
 * GPU work they wait for is in flight (diag's probes, for the accounting). */
#include "config.h"
#include "api/sync.h"
#include "util/state.h"
#include "real/real.h"
#include "diag/diag.h"

cudaError_t pc_stream_synchronize(cudaStream_t s, int ptsz)
{
    pc_mark_used();
    pc_diag_probe_stream(ptsz && !s ? cudaStreamPerThread : s);
    return ptsz ? PC_CALL_REAL(cudaStreamSynchronize_ptsz, s) : PC_CALL_REAL(cudaStreamSynchronize, s);
}

cudaError_t pc_device_synchronize(void)
{
    pc_mark_used();
    pc_diag_probe_device();
    return PC_CALL_REAL(cudaDeviceSynchronize);
}

cudaError_t pc_device_free(void *p)
{
    pc_mark_used();
    if (p)                    /* cudaFree(NULL) returns at once */
        pc_diag_probe_device();
    return PC_CALL_REAL(cudaFree, p);
}
