/* flavour.h - the runtime's calls and the driver's, as one table each, so
 * that every host-memory and capture policy is written once.
 *
 * A runtime call and its driver twin written out twice had drifted
 * (observe mode counted no driver frees: issue 15, D9).  Driver and runtime
 * share the numbers the policies tell apart and the flag bits (asserted
 * below), so results travel as int and the error-code map is the identity:
 * 0 is success in both, and out of memory is 2.  Only the runtime keeps a
 * per-thread last error. */
#ifndef PC_API_FLAVOUR_H
#define PC_API_FLAVOUR_H
#include "real/cudart_ext.h"
#include "core/copyhow.h"

_Static_assert((int)cudaSuccess == (int)CUDA_SUCCESS &&
               (int)cudaErrorMemoryAllocation == (int)CUDA_ERROR_OUT_OF_MEMORY,
               "driver and runtime share these codes");
_Static_assert(cudaHostAllocPortable == CU_MEMHOSTALLOC_PORTABLE && cudaHostAllocMapped == CU_MEMHOSTALLOC_DEVICEMAP &&
               cudaHostAllocWriteCombined == CU_MEMHOSTALLOC_WRITECOMBINED,
               "driver and runtime share these flags");

/* Each call answers 0 or the flavour's error code. */
struct pc_flavour {
    int runtime;               /* the runtime: a per-thread last error */
    /* alloc_host: cuMemAllocHost (the runtime's cudaMallocHost(p, n) is
     * cudaHostAlloc(p, n, 0)) */
    int (*alloc)(void **p, size_t size, unsigned int flags, int alloc_host);
    int (*free)(void *p);
    int (*get_flags)(unsigned int *flags, void *p);
    int (*dev_ptr)(void *pdev, void *p, unsigned int flags);   /* void ** or CUdeviceptr * */
    int (*reg)(void *p, size_t size, unsigned int flags);
    int (*unreg)(void *p);
    /* Is stream s capturing?  0 also when the question fails.  ptsz: the
     * per-thread form, whose stream 0 is the thread's per-thread stream. */
    int (*capturing)(void *s, int ptsz);
    /* EndCapture (ptsz: the _ptsz form); g is a cudaGraph_t * or CUgraph *. */
    int (*end_capture)(void *s, void *g, int ptsz);
    /* A 1D copy of that kind (H2D, D2H, or cudaMemcpyDefault: the driver's
     * cuMemcpy) and shape; s is a cudaStream_t or CUstream. */
    int (*copy)(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind, void *s,
                enum pc_copy_how how);
};

extern const struct pc_flavour pc_flavour_rt;    /* cudaHostAlloc, cudaFreeHost, ... */
extern const struct pc_flavour pc_flavour_drv;   /* cuMemHostAlloc, cuMemFreeHost, ... */

#endif
