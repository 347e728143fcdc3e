/* copy.h - the policy of the cudaMemcpy family (copy.c), which the thin
 * wrappers in src/intercept/memcpy.c call. */
#ifndef PC_COPY_H
#define PC_COPY_H
#include <stddef.h>
#include "real/cudart_ext.h"
#include "core/copyhow.h"

/* A 1D host copy: counted, accounted by memory kind, staged when pageable. */
cudaError_t pc_memcpy(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind,
                      cudaStream_t stream, enum pc_copy_how how);
/* The same for a copy already described in c, of flavour fl (the result in
 * its codes): the cache's blocks looked up (c->s.cached, c->d.cached) while
 * pincache is on, and its sides possibly classified (c->clean and c->known:
 * then by the runtime, with no error pending, as pc_memcpy's own
 * classification for staging requires): a batched copy's operand
 * (api/batch.c). */
struct pc_flavour;
int pc_copy_run(struct pc_copy *c, const struct pc_flavour *fl);
/* Other copy shapes (2D, 3D, peer, symbol): counted, then forwarded. */
void pc_copy_seen(size_t bytes);
/* A driver 1D copy, kind naming its direction (cudaMemcpyDefault: cuMemcpy)
 * and s its stream (0 for the synchronous ones): counted, accounted by
 * memory kind, staged when pageable, as pc_memcpy; in the driver's codes. */
CUresult pc_drv_memcpy(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind, CUstream s,
                       enum pc_copy_how how);

#endif
