/* Pinned allocation and release: forwarded to the cache. */
#include "config.h"
#include "pincache.h"
#include "real.h"

PC_EXPORT cudaError_t cudaHostAlloc(void **p, size_t size, unsigned int flags)
{
    PC_FORWARD(cudaHostAlloc, pc_host_alloc(p, size, flags), p, size, flags);
}

PC_EXPORT cudaError_t cudaMallocHost(void **p, size_t size)
{
    PC_FORWARD(cudaMallocHost, pc_host_alloc(p, size, cudaHostAllocDefault), p, size);
}

PC_EXPORT cudaError_t cudaFreeHost(void *p)
{
    PC_FORWARD(cudaFreeHost, pc_free_host(p), p);
}
