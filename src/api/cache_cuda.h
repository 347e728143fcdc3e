/* cache_cuda.h - the CUDA back-end of the cache's pool (pool.h's ops
 * table, handed to the cache by init.c): how real blocks are made and
 * released, and which fences the pool asks about.  The allocation policy
 * (hostmem.c) tells the back-end which call it serves. */
#ifndef PC_API_CACHE_CUDA_H
#define PC_API_CACHE_CUDA_H
#include "real/cudart_ext.h"
#include "core/pool.h"
#include "api/flavour.h"

extern const struct pc_pool_ops pc_cache_cuda_ops;

/* The allocation being served on this thread, for the pool's alloc
 * operation: whose real call makes new blocks, and what its attempts did to
 * the runtime's last error.  Set by hostmem.c around pc_pool_alloc. */
struct pc_alloc_call {
    const struct pc_flavour *fl;
    int attempts;              /* real allocations made so far */
    int pending;               /* the program had an error pending */
    int quiet;                 /* the attempts go through the driver */
    int failed_loud;           /* a runtime attempt failed with nothing pending */
    int failed_quiet;          /* the last attempt failed through the driver */
};
extern __thread struct pc_alloc_call *pc_tls_alloc __attribute__((tls_model("initial-exec")));

/* The cache keeps blocks apart by their flags, packed into 0..7: Portable,
 * WriteCombined and Mapped, so that a block is made by exactly the call the
 * program made.  (cudaHostGetFlags reports Mapped for every block, measured,
 * and no other difference between a flags-0 block and a Mapped one was seen
 * on the H200, dev/probe/hostflags.cu; keyed apart, none can matter.)
 * Unknown flag bits go to the runtime, which rejects them: -1. */
static inline int pc_flags_key(unsigned int flags, unsigned *key)
{
    const unsigned known = cudaHostAllocPortable | cudaHostAllocMapped | cudaHostAllocWriteCombined;
    if (flags & ~known)
        return -1;
    *key = (flags & cudaHostAllocPortable) | ((flags & cudaHostAllocWriteCombined) ? 2u : 0u) |
           ((flags & cudaHostAllocMapped) ? 4u : 0u);
    return 0;
}

/* The flags a block of that key is made with. */
static inline unsigned int pc_key_flags(unsigned key)
{
    key = PC_KEY_FLAGS(key);
    return ((key & 1u) ? cudaHostAllocPortable : 0u) | ((key & 2u) ? cudaHostAllocWriteCombined : 0u) |
           ((key & 4u) ? cudaHostAllocMapped : 0u);
}

#endif
