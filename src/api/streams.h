/* streams.h - streams, devices, contexts and captures: what the fences and
 * the cache must know of them, reported by the wrappers in
 * src/intercept/ (stream.c, driver.c) and by the copy paths.  The _drv
 * forms take the driver's types; the policy is one (flavour.h). */
#ifndef PC_API_STREAMS_H
#define PC_API_STREAMS_H
#include "real/cudart_ext.h"

/* A stream was created (r: the real call's answer, returned). */
cudaError_t pc_stream_created(cudaError_t r, cudaStream_t *s, unsigned int flags);
CUresult pc_drv_stream_created(CUresult r, CUstream *s, unsigned int flags);
void pc_stream_destroying(cudaStream_t s);
/* A stream handle reached an interposed call (a copy). */
void pc_stream_seen(cudaStream_t s);
/* A driver copy on stream s: its context's device is in use. */
void pc_drv_copy_seen(CUstream s);

/* A device was made current (cudaSetDevice) or its primary context
 * retained (r: the real call's answer, returned). */
cudaError_t pc_device_set(cudaError_t r, int dev);
CUresult pc_drv_device_used(CUresult r, CUdevice dev);
/* cudaDeviceReset and cuDevicePrimaryCtxReset: the cache and the fences
 * forget the device, then the real call. */
cudaError_t pc_device_reset(void);
CUresult pc_drv_primary_reset(CUdevice dev);
CUresult pc_drv_primary_released(CUresult r, CUdevice dev);
/* What a lost device makes every module forget (init.c's table). */
void pc_streams_set_device_lost(void (*lost)(int dev));

/* Contexts the program created (cuCtxCreate) and destroyed. */
CUresult pc_drv_ctx_created(CUresult r, CUcontext *pctx);
CUresult pc_drv_ctx_destroyed(CUresult r, CUcontext ctx);
/* Is a context the program created current?  Then nothing is served from
 * the cache or fenced. */
int pc_ctx_created_current(void);

/* Captures: about to begin (counted before the real call, so that no
 * fence's query reaches a stream once it captures), begun (r: the real
 * call's answer, returned; a refusal uncounts it), and ended by EndCapture
 * (ptsz: the _ptsz form), counting the capture it ends. */
void pc_capture_beginning(void);
cudaError_t pc_capture_began(cudaError_t r);
CUresult pc_drv_capture_began(CUresult r);
cudaError_t pc_end_capture(cudaStream_t s, cudaGraph_t *g, int ptsz);
CUresult pc_drv_end_capture(CUstream s, CUgraph *g, int ptsz);

#endif
