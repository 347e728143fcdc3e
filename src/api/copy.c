/* copy.c - host<->device copies.  Counted here; pageable staging plugs in
 * here too, so that the interposition layer stays a forwarder. */
#include "config.h"
#include "api/api.h"
#include "api/streams.h"
#include "util/state.h"
#include "util/options.h"
#include "real/real.h"
#include "stage/stage.h"
#include "util/stats.h"
#include "diag/diag.h"
#include "core/cache.h"


cudaError_t pc_memcpy(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind,
                      cudaStream_t stream, enum pc_copy_how how)
{
    pc_mark_used();
    if (pc_state.mode != PC_MODE_OFF) {
        PC_STAT_INC(memcpy_calls);
        PC_STAT_ADD(memcpy_bytes, n);
        if (pc_cache_owns(src) || pc_cache_owns(dst))
            PC_STAT_INC(memcpy_cached_src);
        pc_diag_copy(dst, src, n, kind, stream, how);
        if (how == PC_COPY_ASYNC || how == PC_COPY_ASYNC_PTSZ)
            pc_stream_seen(stream);
    }
    cudaError_t staged;
    if (pc_stage_copy(dst, src, n, kind, stream, how, &staged))
        return staged;
    return pc_copy_real(dst, src, n, kind, stream, how);
}

cudaError_t pc_copy_real(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind,
                         cudaStream_t stream, enum pc_copy_how how)
{
    switch (how) {
    case PC_COPY_SYNC:       return PC_CALL_REAL(cudaMemcpy, dst, src, n, kind);
    case PC_COPY_SYNC_PTDS:  return PC_CALL_REAL(cudaMemcpy_ptds, dst, src, n, kind);
    case PC_COPY_ASYNC:      return PC_CALL_REAL(cudaMemcpyAsync, dst, src, n, kind, stream);
    case PC_COPY_ASYNC_PTSZ: return PC_CALL_REAL(cudaMemcpyAsync_ptsz, dst, src, n, kind, stream);
    }
    return cudaErrorInvalidValue;
}

void pc_copy_seen(size_t bytes)
{
    pc_mark_used();
    if (pc_state.mode != PC_MODE_OFF) {
        PC_STAT_INC(memcpy_calls);
        PC_STAT_ADD(memcpy_bytes, bytes);
    }
}
