/* sim_cuda.c - a simulated libcuda.so.1 (test double): the driver API over
 * the simulated device of sim_*.c, built into this library with its own
 * copy of the device state (tests/doubles/README.md).  Only what the tests
 * need: contexts, host memory, streams, events, copies (1D, device to
 * device, 2D, 3D, peer), and cuGetProcAddress.  The device's cuda* entry points stay inside (the
 * version script exports cu* and sim* only), as the real libcuda exports
 * no runtime API; like the real one, no symbol carries a version.
 *
 * Error codes for bad input are assumed where they were not measured (see
 * README.md): the driver rejects NULL out-pointers and unknown flags with
 * CUDA_ERROR_INVALID_VALUE (measured), answers size 0 and a free of NULL
 * with 0 (measured), and calls that need a context fail
 * with CUDA_ERROR_INVALID_CONTEXT when none is current. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda.h>
#include "sim_internal.h"

CUresult CUDAAPI cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t n, CUstream s);
CUresult CUDAAPI cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t n, CUmemoryPool pool, CUstream s);
CUresult CUDAAPI cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream s);

#define API __attribute__((visibility("default")))

/* A context owns the pinned blocks allocated while it is current, and
 * destroying it frees them (measured on an H200, /work/facts/h200-ctx.md):
 * cuCtxDestroy of a created context, cuDevicePrimaryCtxReset, and the
 * cuDevicePrimaryCtxRelease that drops the last retain.  Created contexts
 * are never freed (stale handles stay safe to read). */
struct CUctx_st { int dev; int refs; int created; };
static struct CUctx_st ctxs[SIM_MAX_DEVICES];
static int inited;
static __thread CUcontext cur_ctx;

/* The device's codes are the driver's for everything used here (1, 2, 3,
 * 101, 201, 400, 600, 712, 713); the runtime's last error is not the
 * driver's business, so it is cleared. */
static CUresult drv(cudaError_t e)
{
	if (e != cudaSuccess && e != cudaErrorNotReady)
		cudaGetLastError();
	return (CUresult)e;
}

static CUresult need_ctx(void)
{
	if (!inited)
		return CUDA_ERROR_NOT_INITIALIZED;
	return cur_ctx ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

#define NEED_CTX() do { CUresult r_ = need_ctx(); if (r_) return r_; } while (0)

API CUresult cuInit(unsigned int flags)
{
	if (flags)
		return CUDA_ERROR_INVALID_VALUE;
	__atomic_store_n(&inited, 1, __ATOMIC_RELEASE);
	return CUDA_SUCCESS;
}

/* SIM_DRIVER_VERSION (default 13000): an older driver, whose
 * cuGetProcAddress knows no entry point newer than itself. */
static int sim_driver_version(void)
{
	static int warned;
	const char *e = getenv("SIM_DRIVER_VERSION");
	int v = e ? atoi(e) : 13000;

	if (v >= 2000 && v <= 13000)
		return v;
	if (!__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
		fprintf(stderr, "sim: ignoring SIM_DRIVER_VERSION=%s\n", e);
	return 13000;
}

API CUresult cuDriverGetVersion(int *v)
{
	if (!v)
		return CUDA_ERROR_INVALID_VALUE;
	*v = sim_driver_version();
	return CUDA_SUCCESS;
}

API CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
	int n = 0;

	if (!inited)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!name || len <= 0)
		return CUDA_ERROR_INVALID_VALUE;
	cudaGetDeviceCount(&n);
	if (dev < 0 || dev >= n)
		return CUDA_ERROR_INVALID_DEVICE;
	snprintf(name, (size_t)len, "Simulated H200 (pincache test double)");
	return CUDA_SUCCESS;
}

API CUresult cuDeviceGetCount(int *n)
{
	if (!inited)
		return CUDA_ERROR_NOT_INITIALIZED;
	return drv(cudaGetDeviceCount(n));
}

API CUresult cuDeviceGet(CUdevice *d, int ordinal)
{
	int n = 0;
	if (!inited)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!d)
		return CUDA_ERROR_INVALID_VALUE;
	cudaGetDeviceCount(&n);
	if (ordinal < 0 || ordinal >= n)
		return CUDA_ERROR_INVALID_DEVICE;
	*d = ordinal;
	return CUDA_SUCCESS;
}

/* The pageable-access attributes of the device's runtime double (they share
 * their numbers with the runtime's); others are not modelled. */
API CUresult cuDeviceGetAttribute(int *v, CUdevice_attribute attr, CUdevice dev)
{
	if (!inited)
		return CUDA_ERROR_NOT_INITIALIZED;
	return drv(cudaDeviceGetAttribute(v, (enum cudaDeviceAttr)attr, dev));
}

/* The runtime double's answer (the same address for the same device). */
API CUresult cuDeviceGetPCIBusId(char *id, int len, CUdevice dev)
{
	if (!inited)
		return CUDA_ERROR_NOT_INITIALIZED;
	return drv(cudaDeviceGetPCIBusId(id, len, dev));
}

/* The checks a call that makes a context of device dev into *pctx makes. */
static CUresult ctx_args(CUcontext *pctx, CUdevice dev)
{
	int n = 0;
	if (!inited)
		return CUDA_ERROR_NOT_INITIALIZED;
	cudaGetDeviceCount(&n);
	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	return dev < 0 || dev >= n ? CUDA_ERROR_INVALID_DEVICE : CUDA_SUCCESS;
}

API CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
	CUresult r = ctx_args(pctx, dev);
	if (r)
		return r;
	ctxs[dev].dev = dev;
	__atomic_fetch_add(&ctxs[dev].refs, 1, __ATOMIC_RELAXED);
	*pctx = &ctxs[dev];
	return CUDA_SUCCESS;
}

uintptr_t sim_primary_owner(int dev)
{
	return (uintptr_t)&ctxs[dev];
}

API CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
	if (dev < 0 || dev >= SIM_MAX_DEVICES)
		return CUDA_ERROR_INVALID_DEVICE;
	if (__atomic_sub_fetch(&ctxs[dev].refs, 1, __ATOMIC_RELAXED) == 0)
		sim_primary_gone(dev);
	return CUDA_SUCCESS;
}

API CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
	if (!inited)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (dev < 0 || dev >= SIM_MAX_DEVICES)
		return CUDA_ERROR_INVALID_DEVICE;
	sim_primary_gone(dev);
	return CUDA_SUCCESS;
}

API CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active)
{
	if (!inited)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (dev < 0 || dev >= SIM_MAX_DEVICES)
		return CUDA_ERROR_INVALID_DEVICE;
	if (!flags || !active)
		return CUDA_ERROR_INVALID_VALUE;
	*flags = 0;
	*active = __atomic_load_n(&ctxs[dev].refs, __ATOMIC_RELAXED) > 0;
	return CUDA_SUCCESS;
}

API CUresult cuCtxSetCurrent(CUcontext ctx)
{
	if (!inited)
		return CUDA_ERROR_NOT_INITIALIZED;
	cur_ctx = ctx;
	sim_tls_owner = (uintptr_t)ctx;
	return ctx ? drv(cudaSetDevice(ctx->dev)) : CUDA_SUCCESS;
}

/* Made current on this thread (the stack is not modelled). */
API CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
	CUresult r = ctx_args(pctx, dev);
	struct CUctx_st *c;

	if (r)
		return r;
	if ((c = calloc(1, sizeof *c)) == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	c->dev = dev;
	c->refs = 1;
	c->created = 1;
	sim_keep(c);     /* never freed (above) */
	*pctx = c;
	return cuCtxSetCurrent(c);
}

API CUresult cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *params, unsigned int flags, CUdevice dev)
{
	return cuCtxCreate_v2(pctx, flags, dev);
}

API CUresult cuCtxDestroy_v2(CUcontext ctx)
{
	if (!inited)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!ctx || !ctx->created || ctx->refs == 0)
		return CUDA_ERROR_INVALID_CONTEXT;
	ctx->refs = 0;
	sim_mem_drop_owner((uintptr_t)ctx);
	if (cur_ctx == ctx)
		cuCtxSetCurrent(NULL);
	return CUDA_SUCCESS;
}

API CUresult cuCtxGetCurrent(CUcontext *pctx)
{
	if (!inited)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	*pctx = cur_ctx;
	return CUDA_SUCCESS;
}

API CUresult cuCtxGetDevice(CUdevice *d)
{
	NEED_CTX();
	if (!d)
		return CUDA_ERROR_INVALID_VALUE;
	*d = cur_ctx->dev;
	return CUDA_SUCCESS;
}

API CUresult cuCtxSynchronize(void)
{
	NEED_CTX();
	return drv(cudaDeviceSynchronize());
}

/* --- host memory --- */

#define HOSTALLOC_FLAGS (CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED)

API CUresult cuMemHostAlloc(void **pp, size_t n, unsigned int flags)
{
	NEED_CTX();
	if (!pp || (flags & ~HOSTALLOC_FLAGS))
		return CUDA_ERROR_INVALID_VALUE;
	return drv(cudaHostAlloc(pp, n, flags));   /* size 0: 0 and NULL, as the runtime (measured) */
}

API CUresult cuMemAllocHost_v2(void **pp, size_t n)
{
	return cuMemHostAlloc(pp, n, 0);
}

/* The CUDA 2.x ABI: a 32-bit size (reached by cuGetProcAddress with an old
 * version, or by name). */
API CUresult sim_cuMemAllocHost_v1(void **pp, unsigned int n) __asm__("cuMemAllocHost");
CUresult sim_cuMemAllocHost_v1(void **pp, unsigned int n)
{
	return cuMemHostAlloc(pp, n, 0);
}

API CUresult cuMemFreeHost(void *p)
{
	NEED_CTX();
	return drv(cudaFreeHost(p));   /* NULL: 0, as the runtime (measured) */
}

API CUresult cuMemHostGetFlags(unsigned int *flags, void *p)
{
	NEED_CTX();
	return drv(cudaHostGetFlags(flags, p));
}

API CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *pdev, void *p, unsigned int flags)
{
	NEED_CTX();
	return drv(cudaHostGetDevicePointer((void **)pdev, p, flags));
}

API CUresult cuMemHostRegister_v2(void *p, size_t n, unsigned int flags)
{
	NEED_CTX();
	return drv(cudaHostRegister(p, n, flags));
}

API CUresult cuMemHostUnregister(void *p)
{
	NEED_CTX();
	return drv(cudaHostUnregister(p));
}

API CUresult cuMemAlloc_v2(CUdeviceptr *dp, size_t n)
{
	NEED_CTX();
	if (!dp || n == 0)
		return CUDA_ERROR_INVALID_VALUE;
	return drv(cudaMalloc((void **)dp, n));
}

API CUresult cuMemFree_v2(CUdeviceptr dp)
{
	NEED_CTX();
	return drv(cudaFree((void *)(uintptr_t)dp));
}

/* --- streams and events --- */

API CUresult cuStreamCreate(CUstream *s, unsigned int flags)
{
	NEED_CTX();
	if (!s || (flags & ~CU_STREAM_NON_BLOCKING))
		return CUDA_ERROR_INVALID_VALUE;
	return drv(cudaStreamCreateWithFlags((cudaStream_t *)s, flags));
}

API CUresult cuStreamCreateWithPriority(CUstream *s, unsigned int flags, int prio)
{
	NEED_CTX();
	if (!s || (flags & ~CU_STREAM_NON_BLOCKING))
		return CUDA_ERROR_INVALID_VALUE;
	return drv(cudaStreamCreateWithPriority((cudaStream_t *)s, flags, prio));
}

API CUresult cuStreamDestroy_v2(CUstream s)
{
	NEED_CTX();
	return drv(cudaStreamDestroy((cudaStream_t)s));
}

API CUresult cuStreamQuery(CUstream s)
{
	NEED_CTX();
	return drv(cudaStreamQuery((cudaStream_t)s));
}

/* Touches the context: the sticky error after a fault (measured on the
 * H200, dev/probe/ctxhealth.cu). */
API CUresult cuCtxGetStreamPriorityRange(int *least, int *greatest)
{
	NEED_CTX();
	return drv(cudaDeviceGetStreamPriorityRange(least, greatest));
}

API CUresult cuStreamSynchronize(CUstream s)
{
	NEED_CTX();
	return drv(cudaStreamSynchronize((cudaStream_t)s));
}

API CUresult cuStreamGetFlags(CUstream s, unsigned int *flags)
{
	NEED_CTX();
	return drv(cudaStreamGetFlags((cudaStream_t)s, flags));
}

API CUresult cuEventCreate(CUevent *e, unsigned int flags)
{
	NEED_CTX();
	return drv(cudaEventCreateWithFlags((cudaEvent_t *)e, flags));
}

API CUresult cuEventRecord(CUevent e, CUstream s)
{
	NEED_CTX();
	return drv(cudaEventRecord((cudaEvent_t)e, (cudaStream_t)s));
}

API CUresult cuEventQuery(CUevent e)
{
	NEED_CTX();
	return drv(cudaEventQuery((cudaEvent_t)e));
}

API CUresult cuEventSynchronize(CUevent e)
{
	NEED_CTX();
	return drv(cudaEventSynchronize((cudaEvent_t)e));
}

API CUresult cuEventDestroy_v2(CUevent e)
{
	NEED_CTX();
	return drv(cudaEventDestroy((cudaEvent_t)e));
}

/* Graph capture: the runtime's (same mode, status and error numbers). */
API CUresult cuStreamBeginCapture_v2(CUstream s, CUstreamCaptureMode mode)
{
	NEED_CTX();
	return drv(cudaStreamBeginCapture((cudaStream_t)s, (enum cudaStreamCaptureMode)mode));
}

API CUresult cuStreamEndCapture(CUstream s, CUgraph *g)
{
	NEED_CTX();
	return drv(cudaStreamEndCapture((cudaStream_t)s, (cudaGraph_t *)g));
}

API CUresult cuStreamIsCapturing(CUstream s, CUstreamCaptureStatus *st)
{
	NEED_CTX();
	return drv(cudaStreamIsCapturing((cudaStream_t)s, (enum cudaStreamCaptureStatus *)st));
}

API CUresult cuStreamGetDevice(CUstream s, CUdevice *dev)
{
	int d = -1;
	CUresult r;

	NEED_CTX();
	if (!dev)
		return CUDA_ERROR_INVALID_VALUE;
	r = drv(cudaStreamGetDevice((cudaStream_t)s, &d));
	if (r == CUDA_SUCCESS)
		*dev = d;
	return r;
}

/* --- pointers: the plural query answers memory it does not know with
 * success and empty attributes (the CUDA documentation); the memory type,
 * managed flag and device ordinal only. */

API CUresult cuPointerGetAttributes(unsigned int n, CUpointer_attribute *which, void **data, CUdeviceptr p)
{
	struct cudaPointerAttributes a;

	if (!inited)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!n || !which || !data)
		return CUDA_ERROR_INVALID_VALUE;
	memset(&a, 0, sizeof a);
	if (cudaPointerGetAttributes(&a, (const void *)(uintptr_t)p) != cudaSuccess) {
		cudaGetLastError();
		a.type = cudaMemoryTypeUnregistered;
	}
	for (unsigned int i = 0; i < n; i++) {
		int known = a.type != cudaMemoryTypeUnregistered;
		switch (which[i]) {
		case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
			*(unsigned int *)data[i] = !known ? 0
				: a.type == cudaMemoryTypeDevice ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
			break;
		case CU_POINTER_ATTRIBUTE_IS_MANAGED:
			*(unsigned int *)data[i] = a.type == cudaMemoryTypeManaged;
			break;
		case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
			*(int *)data[i] = known ? a.device : -2;
			break;
		default:
			return CUDA_ERROR_INVALID_VALUE;
		}
	}
	return CUDA_SUCCESS;
}

/* The runtime double's entry point of the same name: the cudaMalloc
 * allocation holding a pointer. */
API CUresult cuMemGetAddressRange_v2(CUdeviceptr *base, size_t *size, CUdeviceptr p)
{
	CUresult (*fn)(CUdeviceptr *, size_t *, CUdeviceptr) = NULL;
	enum cudaDriverEntryPointQueryResult st;

	NEED_CTX();
	if (cudaGetDriverEntryPointByVersion("cuMemGetAddressRange", (void **)&fn, 3020, 0, &st) != cudaSuccess || !fn)
		return CUDA_ERROR_NOT_FOUND;
	return fn(base, size, p);
}

/* Every stream of the context's device, whoever made it. */
API CUresult cuCtxRecordEvent(CUcontext ctx, CUevent e)
{
	if (!inited)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!ctx || ctx < ctxs || ctx >= ctxs + SIM_MAX_DEVICES)
		return CUDA_ERROR_INVALID_CONTEXT;
	return drv(sim_ctx_record_event(ctx->dev, (cudaEvent_t)e));
}

/* --- copies (stream 0 means the legacy stream, or in _ptsz the per-thread one) --- */

API CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, CUstream s)
{
	NEED_CTX();
	return drv(cudaMemcpyAsync((void *)(uintptr_t)dst, src, n, cudaMemcpyHostToDevice, (cudaStream_t)s));
}

API CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, CUstream s)
{
	NEED_CTX();
	return drv(cudaMemcpyAsync(dst, (const void *)(uintptr_t)src, n, cudaMemcpyDeviceToHost, (cudaStream_t)s));
}

API CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dst, const void *src, size_t n, CUstream s)
{
	NEED_CTX();
	return drv(cudaMemcpyAsync_ptsz((void *)(uintptr_t)dst, src, n, cudaMemcpyHostToDevice, (cudaStream_t)s));
}

API CUresult cuMemcpyDtoHAsync_v2_ptsz(void *dst, CUdeviceptr src, size_t n, CUstream s)
{
	NEED_CTX();
	return drv(cudaMemcpyAsync_ptsz(dst, (const void *)(uintptr_t)src, n, cudaMemcpyDeviceToHost, (cudaStream_t)s));
}

API CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n)
{
	NEED_CTX();
	return drv(cudaMemcpy((void *)(uintptr_t)dst, src, n, cudaMemcpyHostToDevice));
}

API CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n)
{
	NEED_CTX();
	return drv(cudaMemcpy(dst, (const void *)(uintptr_t)src, n, cudaMemcpyDeviceToHost));
}

/* The per-thread forms of the synchronous copies, and the unified ones:
 * cuMemcpy lets the pointers say the direction (cudaMemcpyDefault). */
API CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr dst, const void *src, size_t n)
{
	NEED_CTX();
	return drv(cudaMemcpy_ptds((void *)(uintptr_t)dst, src, n, cudaMemcpyHostToDevice));
}

API CUresult cuMemcpyDtoH_v2_ptds(void *dst, CUdeviceptr src, size_t n)
{
	NEED_CTX();
	return drv(cudaMemcpy_ptds(dst, (const void *)(uintptr_t)src, n, cudaMemcpyDeviceToHost));
}

API CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
	NEED_CTX();
	return drv(cudaMemcpy((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n, cudaMemcpyDefault));
}

API CUresult cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
	NEED_CTX();
	return drv(cudaMemcpy_ptds((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n, cudaMemcpyDefault));
}

API CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)
{
	NEED_CTX();
	return drv(cudaMemcpyAsync((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n, cudaMemcpyDefault,
				   (cudaStream_t)s));
}

API CUresult cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)
{
	NEED_CTX();
	return drv(cudaMemcpyAsync_ptsz((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n, cudaMemcpyDefault,
					(cudaStream_t)s));
}

/* --- the other shapes: device to device, 2D, 3D and peer copies, plain
 * copies over the device's 2D copy, one slice at a time.  Arrays are not
 * modelled (CUDA_ERROR_INVALID_VALUE); the direction comes from the memory
 * types (any unified side: the pointers say); a pitch smaller than the
 * width is CUDA_ERROR_INVALID_VALUE (assumed, README.md). */

enum how { SYNC, SYNC_PTDS, ASYNC, ASYNC_PTSZ };

static CUresult copy_1d(CUdeviceptr dst, CUdeviceptr src, size_t n, enum cudaMemcpyKind kind, CUstream s,
			enum how how)
{
	void *d = (void *)(uintptr_t)dst;
	const void *p = (const void *)(uintptr_t)src;

	NEED_CTX();
	switch (how) {
	case SYNC: return drv(cudaMemcpy(d, p, n, kind));
	case SYNC_PTDS: return drv(cudaMemcpy_ptds(d, p, n, kind));
	case ASYNC: return drv(cudaMemcpyAsync(d, p, n, kind, (cudaStream_t)s));
	default: return drv(cudaMemcpyAsync_ptsz(d, p, n, kind, (cudaStream_t)s));
	}
}

API CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
	return copy_1d(dst, src, n, cudaMemcpyDeviceToDevice, 0, SYNC);
}

API CUresult cuMemcpyDtoD_v2_ptds(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
	return copy_1d(dst, src, n, cudaMemcpyDeviceToDevice, 0, SYNC_PTDS);
}

API CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)
{
	return copy_1d(dst, src, n, cudaMemcpyDeviceToDevice, s, ASYNC);
}

API CUresult cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)
{
	return copy_1d(dst, src, n, cudaMemcpyDeviceToDevice, s, ASYNC_PTSZ);
}

/* One side of a shape: its first byte (x, y, z applied), pitch and height. */
struct side_of { char *p; CUmemorytype t; size_t pitch, height; };

static int side_at(struct side_of *o, CUmemorytype t, const void *host, CUdeviceptr dev, size_t x, size_t y,
		   size_t z, size_t pitch, size_t height)
{
	char *base = t == CU_MEMORYTYPE_HOST ? (char *)host
		   : t == CU_MEMORYTYPE_DEVICE || t == CU_MEMORYTYPE_UNIFIED ? (char *)(uintptr_t)dev : NULL;

	if (!base)
		return -1;
	o->p = base + (z * height + y) * pitch + x;
	o->t = t;
	o->pitch = pitch;
	o->height = height;
	return 0;
}

static CUresult copy_shape(const struct side_of *d, const struct side_of *s, size_t w, size_t h, size_t depth,
			   CUstream st, enum how how)
{
	bool dh = d->t == CU_MEMORYTYPE_HOST, sh = s->t == CU_MEMORYTYPE_HOST;
	enum cudaMemcpyKind kind = d->t == CU_MEMORYTYPE_UNIFIED || s->t == CU_MEMORYTYPE_UNIFIED ? cudaMemcpyDefault
				 : sh ? (dh ? cudaMemcpyHostToHost : cudaMemcpyHostToDevice)
				 : dh ? cudaMemcpyDeviceToHost : cudaMemcpyDeviceToDevice;
	cudaError_t e = cudaSuccess;

	NEED_CTX();
	for (size_t z = 0; z < depth && !e; z++) {
		char *dp = d->p + z * d->height * d->pitch;
		const char *sp = s->p + z * s->height * s->pitch;
		switch (how) {
		case SYNC: e = cudaMemcpy2D(dp, d->pitch, sp, s->pitch, w, h, kind); break;
		case SYNC_PTDS: e = cudaMemcpy2D_ptds(dp, d->pitch, sp, s->pitch, w, h, kind); break;
		case ASYNC: e = cudaMemcpy2DAsync(dp, d->pitch, sp, s->pitch, w, h, kind, (cudaStream_t)st); break;
		default: e = cudaMemcpy2DAsync_ptsz(dp, d->pitch, sp, s->pitch, w, h, kind, (cudaStream_t)st); break;
		}
	}
	if (e == cudaErrorInvalidPitchValue) {
		drv(e);
		return CUDA_ERROR_INVALID_VALUE;
	}
	return drv(e);
}

static CUresult copy_2d(const CUDA_MEMCPY2D *p, CUstream st, enum how how)
{
	struct side_of d, s;

	if (!p || side_at(&d, p->dstMemoryType, p->dstHost, p->dstDevice, p->dstXInBytes, p->dstY, 0, p->dstPitch, 0) ||
	    side_at(&s, p->srcMemoryType, p->srcHost, p->srcDevice, p->srcXInBytes, p->srcY, 0, p->srcPitch, 0))
		return CUDA_ERROR_INVALID_VALUE;
	return copy_shape(&d, &s, p->WidthInBytes, p->Height, 1, st, how);
}

/* CUDA_MEMCPY3D and CUDA_MEMCPY3D_PEER name their fields alike. */
#define COPY_3D(p, st, how)                                                                              \
	do {                                                                                             \
		struct side_of d_, s_;                                                                   \
		if (!(p) || side_at(&d_, (p)->dstMemoryType, (p)->dstHost, (p)->dstDevice, (p)->dstXInBytes, \
				    (p)->dstY, (p)->dstZ, (p)->dstPitch, (p)->dstHeight) ||              \
		    side_at(&s_, (p)->srcMemoryType, (p)->srcHost, (p)->srcDevice, (p)->srcXInBytes,     \
			    (p)->srcY, (p)->srcZ, (p)->srcPitch, (p)->srcHeight))                        \
			return CUDA_ERROR_INVALID_VALUE;                                                 \
		return copy_shape(&d_, &s_, (p)->WidthInBytes, (p)->Height, (p)->Depth, st, how);         \
	} while (0)

API CUresult cuMemcpy2D_v2(const CUDA_MEMCPY2D *p) { return copy_2d(p, 0, SYNC); }
API CUresult cuMemcpy2D_v2_ptds(const CUDA_MEMCPY2D *p) { return copy_2d(p, 0, SYNC_PTDS); }
API CUresult cuMemcpy2DUnaligned_v2(const CUDA_MEMCPY2D *p) { return copy_2d(p, 0, SYNC); }
API CUresult cuMemcpy2DUnaligned_v2_ptds(const CUDA_MEMCPY2D *p) { return copy_2d(p, 0, SYNC_PTDS); }
API CUresult cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D *p, CUstream s) { return copy_2d(p, s, ASYNC); }
API CUresult cuMemcpy2DAsync_v2_ptsz(const CUDA_MEMCPY2D *p, CUstream s) { return copy_2d(p, s, ASYNC_PTSZ); }
API CUresult cuMemcpy3D_v2(const CUDA_MEMCPY3D *p) { COPY_3D(p, 0, SYNC); }
API CUresult cuMemcpy3D_v2_ptds(const CUDA_MEMCPY3D *p) { COPY_3D(p, 0, SYNC_PTDS); }
API CUresult cuMemcpy3DAsync_v2(const CUDA_MEMCPY3D *p, CUstream s) { COPY_3D(p, s, ASYNC); }
API CUresult cuMemcpy3DAsync_v2_ptsz(const CUDA_MEMCPY3D *p, CUstream s) { COPY_3D(p, s, ASYNC_PTSZ); }

/* Peer copies: both contexts must be live; the simulated devices share one
 * address space, so the copy itself is the runtime's cudaMemcpyPeer. */
static CUresult peer(CUdeviceptr dst, CUcontext dc, CUdeviceptr src, CUcontext sc, size_t n, CUstream s,
		     enum how how)
{
	void *d = (void *)(uintptr_t)dst;
	const void *p = (const void *)(uintptr_t)src;

	NEED_CTX();
	if (!dc || !sc || !dc->refs || !sc->refs)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (how == SYNC || how == SYNC_PTDS)
		return drv(cudaMemcpyPeer(d, dc->dev, p, sc->dev, n));
	return drv(cudaMemcpyPeerAsync(d, dc->dev, p, sc->dev, n,
				       how == ASYNC_PTSZ && !s ? cudaStreamPerThread : (cudaStream_t)s));
}

static CUresult peer_3d(const CUDA_MEMCPY3D_PEER *p, CUstream s, enum how how)
{
	NEED_CTX();
	if (p && (!p->dstContext || !p->srcContext || !p->dstContext->refs || !p->srcContext->refs))
		return CUDA_ERROR_INVALID_CONTEXT;
	COPY_3D(p, s, how);
}

API CUresult cuMemcpyPeer(CUdeviceptr dst, CUcontext dc, CUdeviceptr src, CUcontext sc, size_t n)
{
	return peer(dst, dc, src, sc, n, 0, SYNC);
}

API CUresult cuMemcpyPeer_ptds(CUdeviceptr dst, CUcontext dc, CUdeviceptr src, CUcontext sc, size_t n)
{
	return peer(dst, dc, src, sc, n, 0, SYNC_PTDS);
}

API CUresult cuMemcpyPeerAsync(CUdeviceptr dst, CUcontext dc, CUdeviceptr src, CUcontext sc, size_t n, CUstream s)
{
	return peer(dst, dc, src, sc, n, s, ASYNC);
}

API CUresult cuMemcpyPeerAsync_ptsz(CUdeviceptr dst, CUcontext dc, CUdeviceptr src, CUcontext sc, size_t n,
				    CUstream s)
{
	return peer(dst, dc, src, sc, n, s, ASYNC_PTSZ);
}

API CUresult cuMemcpy3DPeer(const CUDA_MEMCPY3D_PEER *p) { return peer_3d(p, 0, SYNC); }
API CUresult cuMemcpy3DPeer_ptds(const CUDA_MEMCPY3D_PEER *p) { return peer_3d(p, 0, SYNC_PTDS); }
API CUresult cuMemcpy3DPeerAsync(const CUDA_MEMCPY3D_PEER *p, CUstream s) { return peer_3d(p, s, ASYNC); }
API CUresult cuMemcpy3DPeerAsync_ptsz(const CUDA_MEMCPY3D_PEER *p, CUstream s) { return peer_3d(p, s, ASYNC_PTSZ); }

/* --- batched copies: the runtime's batch (sim_batch.c); CUDA 12.8's ABI
 * (failIdx) under the plain names, 13.0's as _v2 (cuda.h maps the plain
 * names to _v2 with macros) --- */
#undef cuMemcpyBatchAsync
#undef cuMemcpy3DBatchAsync
#define BATCH_ARGS (void *const *)dsts, (const void *const *)srcs, sizes, count, \
	(const struct cudaMemcpyAttributes *)attrs, idxs, nattrs

API CUresult cuMemcpyBatchAsync(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
				CUmemcpyAttributes *attrs, size_t *idxs, size_t nattrs, size_t *fail, CUstream s)
{
	NEED_CTX();
	return drv(sim_batch(BATCH_ARGS, fail, (cudaStream_t)s, false));
}

API CUresult cuMemcpyBatchAsync_ptsz(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
				     CUmemcpyAttributes *attrs, size_t *idxs, size_t nattrs, size_t *fail, CUstream s)
{
	NEED_CTX();
	return drv(sim_batch(BATCH_ARGS, fail, (cudaStream_t)s, true));
}

API CUresult cuMemcpyBatchAsync_v2(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
				   CUmemcpyAttributes *attrs, size_t *idxs, size_t nattrs, CUstream s)
{
	NEED_CTX();
	return drv(sim_batch(BATCH_ARGS, NULL, (cudaStream_t)s, false));
}

/* Measured (H200, tests/driver/run-gpu.sh part 5): 13.0's per-thread
 * forms refuse stream 0 with 1, as the legacy stream, where 12.8's take
 * it for the per-thread stream. */
API CUresult cuMemcpyBatchAsync_v2_ptsz(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
					CUmemcpyAttributes *attrs, size_t *idxs, size_t nattrs, CUstream s)
{
	NEED_CTX();
	return drv(sim_batch(BATCH_ARGS, NULL, (cudaStream_t)s, s != 0));
}

#define BATCH3D_OPS (const struct cudaMemcpy3DBatchOp *)ops
API CUresult cuMemcpy3DBatchAsync(size_t n, CUDA_MEMCPY3D_BATCH_OP *ops, size_t *fail, unsigned long long flags,
				  CUstream s)
{
	NEED_CTX();
	return drv(sim_batch3d(n, BATCH3D_OPS, fail, flags, (cudaStream_t)s, false));
}

API CUresult cuMemcpy3DBatchAsync_ptsz(size_t n, CUDA_MEMCPY3D_BATCH_OP *ops, size_t *fail,
				       unsigned long long flags, CUstream s)
{
	NEED_CTX();
	return drv(sim_batch3d(n, BATCH3D_OPS, fail, flags, (cudaStream_t)s, true));
}

API CUresult cuMemcpy3DBatchAsync_v2(size_t n, CUDA_MEMCPY3D_BATCH_OP *ops, unsigned long long flags, CUstream s)
{
	NEED_CTX();
	return drv(sim_batch3d(n, BATCH3D_OPS, NULL, flags, (cudaStream_t)s, false));
}

API CUresult cuMemcpy3DBatchAsync_v2_ptsz(size_t n, CUDA_MEMCPY3D_BATCH_OP *ops, unsigned long long flags,
					  CUstream s)
{
	NEED_CTX();
	return drv(sim_batch3d(n, BATCH3D_OPS, NULL, flags, (cudaStream_t)s, s != 0));
}

/* --- cuGetProcAddress: the variant with the highest version not above the
 * one asked for; with per-thread flags, the _ptsz one where there is one. */

struct proc { const char *name; int since; int ptsz; void *fn; };
static const struct proc procs[] = {
	{ "cuInit", 2000, 0, (void *)cuInit },
	{ "cuDriverGetVersion", 2020, 0, (void *)cuDriverGetVersion },
	{ "cuDeviceGet", 2000, 0, (void *)cuDeviceGet },
	{ "cuDeviceGetCount", 2000, 0, (void *)cuDeviceGetCount },
	{ "cuDeviceGetName", 2000, 0, (void *)cuDeviceGetName },
	{ "cuDeviceGetAttribute", 2000, 0, (void *)cuDeviceGetAttribute },
	{ "cuDeviceGetPCIBusId", 2000, 0, (void *)cuDeviceGetPCIBusId },
	{ "cuDevicePrimaryCtxRetain", 7000, 0, (void *)cuDevicePrimaryCtxRetain },
	{ "cuDevicePrimaryCtxRelease", 11000, 0, (void *)cuDevicePrimaryCtxRelease_v2 },
	{ "cuDevicePrimaryCtxReset", 11000, 0, (void *)cuDevicePrimaryCtxReset_v2 },
	{ "cuDevicePrimaryCtxGetState", 7000, 0, (void *)cuDevicePrimaryCtxGetState },
	{ "cuCtxCreate", 3020, 0, (void *)cuCtxCreate_v2 },
	{ "cuCtxCreate", 12050, 0, (void *)cuCtxCreate_v4 },
	{ "cuCtxDestroy", 4000, 0, (void *)cuCtxDestroy_v2 },
	{ "cuCtxSetCurrent", 4000, 0, (void *)cuCtxSetCurrent },
	{ "cuCtxGetCurrent", 4000, 0, (void *)cuCtxGetCurrent },
	{ "cuCtxGetDevice", 2000, 0, (void *)cuCtxGetDevice },
	{ "cuCtxSynchronize", 2000, 0, (void *)cuCtxSynchronize },
	{ "cuMemHostAlloc", 2020, 0, (void *)cuMemHostAlloc },
	{ "cuMemAllocHost", 2000, 0, (void *)sim_cuMemAllocHost_v1 },
	{ "cuMemAllocHost", 3020, 0, (void *)cuMemAllocHost_v2 },
	{ "cuMemFreeHost", 2000, 0, (void *)cuMemFreeHost },
	{ "cuMemHostGetFlags", 2030, 0, (void *)cuMemHostGetFlags },
	{ "cuMemHostGetDevicePointer", 3020, 0, (void *)cuMemHostGetDevicePointer_v2 },
	{ "cuMemHostRegister", 6050, 0, (void *)cuMemHostRegister_v2 },
	{ "cuMemHostUnregister", 4000, 0, (void *)cuMemHostUnregister },
	{ "cuMemAlloc", 3020, 0, (void *)cuMemAlloc_v2 },
	{ "cuMemFree", 3020, 0, (void *)cuMemFree_v2 },
	{ "cuStreamCreate", 2000, 0, (void *)cuStreamCreate },
	{ "cuStreamCreateWithPriority", 5050, 0, (void *)cuStreamCreateWithPriority },
	{ "cuStreamDestroy", 4000, 0, (void *)cuStreamDestroy_v2 },
	{ "cuStreamQuery", 2000, 0, (void *)cuStreamQuery },
	{ "cuCtxGetStreamPriorityRange", 5050, 0, (void *)cuCtxGetStreamPriorityRange },
	{ "cuStreamSynchronize", 2000, 0, (void *)cuStreamSynchronize },
	{ "cuStreamGetFlags", 5050, 0, (void *)cuStreamGetFlags },
	{ "cuStreamGetDevice", 12080, 0, (void *)cuStreamGetDevice },
	{ "cuPointerGetAttributes", 7000, 0, (void *)cuPointerGetAttributes },
	{ "cuMemGetAddressRange", 3020, 0, (void *)cuMemGetAddressRange_v2 },
	{ "cuEventCreate", 2000, 0, (void *)cuEventCreate },
	{ "cuEventRecord", 2000, 0, (void *)cuEventRecord },
	{ "cuEventQuery", 2000, 0, (void *)cuEventQuery },
	{ "cuCtxRecordEvent", 12050, 0, (void *)cuCtxRecordEvent },
	{ "cuStreamBeginCapture", 10010, 0, (void *)cuStreamBeginCapture_v2 },
	{ "cuStreamEndCapture", 10000, 0, (void *)cuStreamEndCapture },
	{ "cuStreamIsCapturing", 10000, 0, (void *)cuStreamIsCapturing },
	{ "cuEventSynchronize", 2000, 0, (void *)cuEventSynchronize },
	{ "cuEventDestroy", 4000, 0, (void *)cuEventDestroy_v2 },
	{ "cuMemcpyHtoDAsync", 3020, 0, (void *)cuMemcpyHtoDAsync_v2 },
	{ "cuMemcpyHtoDAsync", 7000, 1, (void *)cuMemcpyHtoDAsync_v2_ptsz },
	{ "cuMemcpyDtoHAsync", 3020, 0, (void *)cuMemcpyDtoHAsync_v2 },
	{ "cuMemcpyDtoHAsync", 7000, 1, (void *)cuMemcpyDtoHAsync_v2_ptsz },
	{ "cuMemcpyHtoD", 3020, 0, (void *)cuMemcpyHtoD_v2 },
	{ "cuMemcpyHtoD", 7000, 1, (void *)cuMemcpyHtoD_v2_ptds },
	{ "cuMemcpyDtoH", 3020, 0, (void *)cuMemcpyDtoH_v2 },
	{ "cuMemcpyDtoH", 7000, 1, (void *)cuMemcpyDtoH_v2_ptds },
	{ "cuMemcpy", 4000, 0, (void *)cuMemcpy },
	{ "cuMemcpy", 7000, 1, (void *)cuMemcpy_ptds },
	{ "cuMemcpyAsync", 4000, 0, (void *)cuMemcpyAsync },
	{ "cuMemcpyAsync", 7000, 1, (void *)cuMemcpyAsync_ptsz },
	{ "cuMemcpyDtoD", 3020, 0, (void *)cuMemcpyDtoD_v2 },
	{ "cuMemcpyDtoD", 7000, 1, (void *)cuMemcpyDtoD_v2_ptds },
	{ "cuMemcpyDtoDAsync", 3020, 0, (void *)cuMemcpyDtoDAsync_v2 },
	{ "cuMemcpyDtoDAsync", 7000, 1, (void *)cuMemcpyDtoDAsync_v2_ptsz },
	{ "cuMemcpy2D", 3020, 0, (void *)cuMemcpy2D_v2 },
	{ "cuMemcpy2D", 7000, 1, (void *)cuMemcpy2D_v2_ptds },
	{ "cuMemcpy2DUnaligned", 3020, 0, (void *)cuMemcpy2DUnaligned_v2 },
	{ "cuMemcpy2DUnaligned", 7000, 1, (void *)cuMemcpy2DUnaligned_v2_ptds },
	{ "cuMemcpy2DAsync", 3020, 0, (void *)cuMemcpy2DAsync_v2 },
	{ "cuMemcpy2DAsync", 7000, 1, (void *)cuMemcpy2DAsync_v2_ptsz },
	{ "cuMemcpy3D", 3020, 0, (void *)cuMemcpy3D_v2 },
	{ "cuMemcpy3D", 7000, 1, (void *)cuMemcpy3D_v2_ptds },
	{ "cuMemcpy3DAsync", 3020, 0, (void *)cuMemcpy3DAsync_v2 },
	{ "cuMemcpy3DAsync", 7000, 1, (void *)cuMemcpy3DAsync_v2_ptsz },
	{ "cuMemcpyPeer", 4000, 0, (void *)cuMemcpyPeer },
	{ "cuMemcpyPeer", 7000, 1, (void *)cuMemcpyPeer_ptds },
	{ "cuMemcpyPeerAsync", 4000, 0, (void *)cuMemcpyPeerAsync },
	{ "cuMemcpyPeerAsync", 7000, 1, (void *)cuMemcpyPeerAsync_ptsz },
	{ "cuMemcpy3DPeer", 4000, 0, (void *)cuMemcpy3DPeer },
	{ "cuMemcpy3DPeer", 7000, 1, (void *)cuMemcpy3DPeer_ptds },
	{ "cuMemcpy3DPeerAsync", 4000, 0, (void *)cuMemcpy3DPeerAsync },
	{ "cuMemcpy3DPeerAsync", 7000, 1, (void *)cuMemcpy3DPeerAsync_ptsz },
	{ "cuMemcpyBatchAsync", 12080, 0, (void *)cuMemcpyBatchAsync },
	{ "cuMemcpyBatchAsync", 12080, 1, (void *)cuMemcpyBatchAsync_ptsz },
	{ "cuMemcpyBatchAsync", 13000, 0, (void *)cuMemcpyBatchAsync_v2 },
	{ "cuMemcpyBatchAsync", 13000, 1, (void *)cuMemcpyBatchAsync_v2_ptsz },
	{ "cuMemcpy3DBatchAsync", 12080, 0, (void *)cuMemcpy3DBatchAsync },
	{ "cuMemcpy3DBatchAsync", 12080, 1, (void *)cuMemcpy3DBatchAsync_ptsz },
	{ "cuMemcpy3DBatchAsync", 13000, 0, (void *)cuMemcpy3DBatchAsync_v2 },
	{ "cuMemcpy3DBatchAsync", 13000, 1, (void *)cuMemcpy3DBatchAsync_v2_ptsz },
	/* pools and VMM (sim_vmm.c) */
	{ "cuMemPoolCreate", 11020, 0, (void *)cuMemPoolCreate },
	{ "cuMemPoolDestroy", 11020, 0, (void *)cuMemPoolDestroy },
	{ "cuMemPoolTrimTo", 11020, 0, (void *)cuMemPoolTrimTo },
	{ "cuMemGetDefaultMemPool", 13000, 0, (void *)cuMemGetDefaultMemPool },
	{ "cuMemGetMemPool", 13000, 0, (void *)cuMemGetMemPool },
	{ "cuMemSetMemPool", 13000, 0, (void *)cuMemSetMemPool },
	{ "cuDeviceSetMemPool", 11020, 0, (void *)cuDeviceSetMemPool },
	{ "cuMemAllocFromPoolAsync", 11020, 0, (void *)cuMemAllocFromPoolAsync },
	{ "cuMemAllocFromPoolAsync", 11020, 1, (void *)cuMemAllocFromPoolAsync_ptsz },
	{ "cuMemAllocAsync", 11020, 0, (void *)cuMemAllocAsync },
	{ "cuMemAllocAsync", 11020, 1, (void *)cuMemAllocAsync_ptsz },
	{ "cuMemFreeAsync", 11020, 0, (void *)cuMemFreeAsync },
	{ "cuMemFreeAsync", 11020, 1, (void *)cuMemFreeAsync_ptsz },
	{ "cuPointerGetAttribute", 4000, 0, (void *)cuPointerGetAttribute },
	{ "cuMemCreate", 10020, 0, (void *)cuMemCreate },
	{ "cuMemRelease", 10020, 0, (void *)cuMemRelease },
	{ "cuMemAddressReserve", 10020, 0, (void *)cuMemAddressReserve },
	{ "cuMemAddressFree", 10020, 0, (void *)cuMemAddressFree },
	{ "cuMemMap", 10020, 0, (void *)cuMemMap },
	{ "cuMemSetAccess", 10020, 0, (void *)cuMemSetAccess },
	{ "cuMemUnmap", 10020, 0, (void *)cuMemUnmap },
	{ "cuGetProcAddress", 12000, 0, NULL },   /* filled below: itself */
};

API CUresult cuGetProcAddress_v2(const char *sym, void **pfn, int ver, cuuint64_t flags,
				 CUdriverProcAddressQueryResult *status)
{
	const struct proc *best = NULL;
	int found = 0, per_thread = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
	int driver = sim_driver_version();

	if (!sym || !pfn)
		return CUDA_ERROR_INVALID_VALUE;
	*pfn = NULL;
	for (size_t i = 0; i < sizeof procs / sizeof procs[0]; i++) {
		const struct proc *p = &procs[i];
		if (strcmp(p->name, sym) != 0 || p->since > driver)
			continue;
		found = 1;
		if (p->since > ver || (p->ptsz && !per_thread))
			continue;
		if (!best || p->since > best->since || (p->ptsz && per_thread))
			best = p;
	}
	if (status)
		*status = best ? CU_GET_PROC_ADDRESS_SUCCESS
			 : found ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
	if (!best)
		return CUDA_ERROR_NOT_FOUND;
	*pfn = best->fn ? best->fn : (void *)cuGetProcAddress_v2;
	return CUDA_SUCCESS;
}
