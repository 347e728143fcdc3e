/* api.h - the policy of each interposed family, which the thin wrappers in
 * src/intercept/ call: host memory (hostmem.c); copies are copy.h's, the
 * synchronizing calls sync.h's. */
#ifndef PC_API_H
#define PC_API_H
#include "real/cudart_ext.h"

/* --- core entry points (hostmem.c) --- */
cudaError_t pc_host_alloc(void **p, size_t size, unsigned int flags);
cudaError_t pc_free_host(void *p);
cudaError_t pc_host_get_flags(unsigned int *flags, void *p);
cudaError_t pc_host_get_device_pointer(void **pdev, void *p, unsigned int flags);
cudaError_t pc_pointer_get_attributes(struct cudaPointerAttributes *a, const void *p);
cudaError_t pc_host_register(void *p, size_t size, unsigned int flags);
cudaError_t pc_host_unregister(void *p);
/* Driver-API frees and queries of blocks the runtime allocated. */
CUresult pc_drv_free_host(void *p);
CUresult pc_drv_host_get_flags(unsigned int *flags, void *p);
CUresult pc_drv_host_get_device_pointer(CUdeviceptr *pdev, void *p, unsigned int flags);
/* Driver-API allocation (alloc_host: cuMemAllocHost, else cuMemHostAlloc),
 * registration, streams, contexts and copies (hostmem.c). */
CUresult pc_drv_host_alloc(void **pp, size_t size, unsigned int flags, int alloc_host);
CUresult pc_drv_host_register(void *p, size_t size, unsigned int flags);
CUresult pc_drv_host_unregister(void *p);
CUresult pc_drv_stream_created(CUresult r, CUstream *s, unsigned int flags);
CUresult pc_drv_device_used(CUresult r, CUdevice dev);
/* Context teardown and creation (hostmem.c). */
CUresult pc_drv_primary_reset(CUdevice dev);
CUresult pc_drv_primary_released(CUresult r, CUdevice dev);
CUresult pc_drv_ctx_created(CUresult r, CUcontext *pctx);
CUresult pc_drv_ctx_destroyed(CUresult r, CUcontext ctx);
void pc_drv_copy_seen(CUstream s);
void pc_hostmem_init(void);
void pc_hostmem_after_fork_child(void);
void pc_hostmem_before_fork(void);   /* pthread_atfork prepare: count what the fork copies */

/* --- streams, devices, capture (hostmem.c) --- */
cudaError_t pc_stream_created(cudaError_t r, cudaStream_t *s, unsigned int flags);
void pc_stream_destroying(cudaStream_t s);
void pc_stream_seen(cudaStream_t s);
cudaError_t pc_device_set(cudaError_t r, int dev);
cudaError_t pc_device_reset(void);
cudaError_t pc_capture_began(cudaError_t r);
/* EndCapture (ptsz: the _ptsz form), counting the capture it ends. */
cudaError_t pc_end_capture(cudaStream_t s, cudaGraph_t *g, int ptsz);
CUresult pc_drv_capture_began(CUresult r);
CUresult pc_drv_end_capture(CUstream s, CUgraph *g, int ptsz);

#endif
