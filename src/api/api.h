/* api.h - the policy of each interposed family, which the thin wrappers in
 * src/intercept/ call: copies (copy.c).  Host memory, registration and
 * streams have their own headers (hostmem.h, register.h, streams.h). */
#ifndef PC_API_H
#define PC_API_H
#include "real/cudart_ext.h"
#include "core/copyhow.h"

/* --- copies (copy.c) --- */
cudaError_t pc_memcpy(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind,
                      cudaStream_t stream, enum pc_copy_how how);
/* The real runtime's copy for that call shape. */
cudaError_t pc_copy_real(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind,
                         cudaStream_t stream, enum pc_copy_how how);
/* Other copy shapes (2D, 3D, peer, symbol): counted, then forwarded. */
void pc_copy_seen(size_t bytes);

#endif
