/* Pinned allocation and release: forwarded to the cache. */
#include "config.h"
#include "intercept/guard.h"
#include "api/hostmem.h"
#include "real/real.h"
#include "diag/diag.h"

PC_EXPORT cudaError_t cudaHostAlloc(void **p, size_t size, unsigned int flags)
{
    PC_FORWARD_TIMED(PC_API_host_alloc, size, p, cudaHostAlloc, pc_host_alloc(p, size, flags), p, size, flags);
}

PC_EXPORT cudaError_t cudaMallocHost(void **p, size_t size)
{
    PC_FORWARD_TIMED(PC_API_malloc_host, size, p, cudaMallocHost, pc_host_alloc(p, size, cudaHostAllocDefault), p, size);
}

PC_EXPORT cudaError_t cudaFreeHost(void *p)
{
    PC_FORWARD_TIMED(PC_API_free_host, 0, p, cudaFreeHost, pc_free_host(p), p);
}
