/* sim_cudart12.c - a simulated libcudart.so.12 (test double): a thin CUDA
 * runtime over the driver, which it reaches the way the real cudart does:
 * dlopen("libcuda.so.1"), dlsym(handle, "cuGetProcAddress_v2"), then one
 * cuGetProcAddress per entry point.  Under pincache those lookups return
 * pincache's driver wrappers, so this is where a runtime call served by
 * the runtime wrappers would be seen a second time if the ownership rule
 * failed.  Only what the tests call; every cuda* symbol carries the
 * version node libcudart.so.12.  The device is the simulated libcuda's.
 * Its copies reach the driver as cuMemcpy, cuMemcpyDtoD (device to device),
 * cuMemcpy2D and cuMemcpyHtoDAsync/DtoHAsync. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <cuda.h>
#include <cuda_runtime_api.h>

#define API __attribute__((visibility("default")))

static struct {
	CUresult (*init)(unsigned);
	CUresult (*primary_retain)(CUcontext *, CUdevice);
	CUresult (*ctx_set)(CUcontext);
	CUresult (*ctx_get)(CUcontext *);
	CUresult (*ctx_dev)(CUdevice *);
	CUresult (*ctx_sync)(void);
	CUresult (*dev_count)(int *);
	CUresult (*host_alloc)(void **, size_t, unsigned);
	CUresult (*free_host)(void *);
	CUresult (*host_flags)(unsigned *, void *);
	CUresult (*stream_create)(CUstream *, unsigned);
	CUresult (*stream_destroy)(CUstream);
	CUresult (*stream_query)(CUstream);
	CUresult (*stream_sync)(CUstream);
	CUresult (*event_create)(CUevent *, unsigned);
	CUresult (*event_record)(CUevent, CUstream);
	CUresult (*event_query)(CUevent);
	CUresult (*event_sync)(CUevent);
	CUresult (*event_destroy)(CUevent);
	CUresult (*htod_async)(CUdeviceptr, const void *, size_t, CUstream);
	CUresult (*dtoh_async)(void *, CUdeviceptr, size_t, CUstream);
	CUresult (*memcpy)(CUdeviceptr, CUdeviceptr, size_t);
	CUresult (*dtod)(CUdeviceptr, CUdeviceptr, size_t);
	CUresult (*memcpy2d)(const CUDA_MEMCPY2D *);
	CUresult (*mem_alloc)(CUdeviceptr *, size_t);
	CUresult (*mem_free)(CUdeviceptr);
	CUresult (*ptr_attrs)(unsigned, CUpointer_attribute *, void **, CUdeviceptr);
	CUresult (*capturing)(CUstream, CUstreamCaptureStatus *);
	CUresult (*stream_dev)(CUstream, CUdevice *);
	CUresult (*batch)(CUdeviceptr *, CUdeviceptr *, size_t *, size_t, CUmemcpyAttributes *, size_t *, size_t,
			  size_t *, CUstream);
	CUresult (*batch_ptsz)(CUdeviceptr *, CUdeviceptr *, size_t *, size_t, CUmemcpyAttributes *, size_t *, size_t,
			       size_t *, CUstream);
	CUresult (*gpa)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
} D;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int broken;
static __thread cudaError_t last_error;
static __thread int tls_dev = -1;

#define GET(field, name) \
	(broken |= D.gpa(name, (void **)&D.field, 12080, 0, NULL) != CUDA_SUCCESS)

static void load(void)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);

	if (!h || !(*(void **)&D.gpa = dlsym(h, "cuGetProcAddress_v2"))) {
		broken = 1;
		return;
	}
	GET(init, "cuInit"); GET(primary_retain, "cuDevicePrimaryCtxRetain");
	GET(ctx_set, "cuCtxSetCurrent"); GET(ctx_get, "cuCtxGetCurrent");
	GET(ctx_dev, "cuCtxGetDevice"); GET(ctx_sync, "cuCtxSynchronize");
	GET(dev_count, "cuDeviceGetCount"); GET(host_alloc, "cuMemHostAlloc");
	GET(free_host, "cuMemFreeHost"); GET(host_flags, "cuMemHostGetFlags");
	GET(stream_create, "cuStreamCreate"); GET(stream_destroy, "cuStreamDestroy");
	GET(stream_query, "cuStreamQuery"); GET(stream_sync, "cuStreamSynchronize");
	GET(event_create, "cuEventCreate"); GET(event_record, "cuEventRecord");
	GET(event_query, "cuEventQuery"); GET(event_sync, "cuEventSynchronize");
	GET(event_destroy, "cuEventDestroy"); GET(htod_async, "cuMemcpyHtoDAsync");
	GET(dtoh_async, "cuMemcpyDtoHAsync"); GET(memcpy, "cuMemcpy"); GET(mem_alloc, "cuMemAlloc");
	GET(dtod, "cuMemcpyDtoD"); GET(memcpy2d, "cuMemcpy2D");
	GET(mem_free, "cuMemFree"); GET(ptr_attrs, "cuPointerGetAttributes");
	GET(capturing, "cuStreamIsCapturing"); GET(stream_dev, "cuStreamGetDevice");
	GET(batch, "cuMemcpyBatchAsync");
	broken |= D.gpa("cuMemcpyBatchAsync", (void **)&D.batch_ptsz, 12080,
			CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, NULL) != CUDA_SUCCESS;
	if (!broken && D.init(0) != CUDA_SUCCESS)
		broken = 1;
}

static cudaError_t err(CUresult r)
{
	cudaError_t e = (cudaError_t)r;   /* the codes used here are shared */
	if (e != cudaSuccess && e != cudaErrorNotReady)
		last_error = e;
	return e;
}

/* Lazy start-up, then the thread's device's primary context made current. */
static cudaError_t enter(void)
{
	CUcontext ctx;

	pthread_once(&once, load);
	if (broken)
		return err(CUDA_ERROR_NOT_INITIALIZED);
	if (tls_dev < 0) {
		if (D.primary_retain(&ctx, 0) != CUDA_SUCCESS || D.ctx_set(ctx) != CUDA_SUCCESS)
			return err(CUDA_ERROR_NOT_INITIALIZED);
		tls_dev = 0;
	}
	return cudaSuccess;
}

#define ENTER() do { cudaError_t e_ = enter(); if (e_) return e_; } while (0)

API cudaError_t cudaGetLastError(void) { cudaError_t e = last_error; last_error = cudaSuccess; return e; }
API cudaError_t cudaPeekAtLastError(void) { return last_error; }

API cudaError_t cudaGetDeviceCount(int *n) { ENTER(); return err(D.dev_count(n)); }

API cudaError_t cudaGetDevice(int *dev)
{
	ENTER();
	if (!dev)
		return err(CUDA_ERROR_INVALID_VALUE);
	*dev = tls_dev;
	return cudaSuccess;
}

API cudaError_t cudaSetDevice(int dev)
{
	CUcontext ctx;
	ENTER();
	if (D.primary_retain(&ctx, dev) != CUDA_SUCCESS)
		return err(CUDA_ERROR_INVALID_DEVICE);
	tls_dev = dev;
	return err(D.ctx_set(ctx));
}

API cudaError_t cudaHostAlloc(void **p, size_t n, unsigned int flags)
{
	ENTER();
	if (p && n == 0) {          /* the runtime's answer for size 0 (measured) */
		*p = NULL;
		return cudaSuccess;
	}
	return err(D.host_alloc(p, n, flags));
}

API cudaError_t cudaMallocHost(void **p, size_t n) { return cudaHostAlloc(p, n, 0); }

API cudaError_t cudaFreeHost(void *p)
{
	ENTER();
	return p ? err(D.free_host(p)) : cudaSuccess;
}

API cudaError_t cudaHostGetFlags(unsigned int *f, void *p) { ENTER(); return err(D.host_flags(f, p)); }

API cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned int flags)
{
	ENTER();
	return err(D.stream_create((CUstream *)s, flags));
}

API cudaError_t cudaStreamCreate(cudaStream_t *s) { return cudaStreamCreateWithFlags(s, 0); }
API cudaError_t cudaStreamDestroy(cudaStream_t s) { ENTER(); return err(D.stream_destroy((CUstream)s)); }
API cudaError_t cudaStreamQuery(cudaStream_t s) { ENTER(); return err(D.stream_query((CUstream)s)); }
API cudaError_t cudaStreamSynchronize(cudaStream_t s) { ENTER(); return err(D.stream_sync((CUstream)s)); }
API cudaError_t cudaDeviceSynchronize(void) { ENTER(); return err(D.ctx_sync()); }

API cudaError_t cudaStreamIsCapturing(cudaStream_t s, enum cudaStreamCaptureStatus *st)
{
	ENTER();
	return err(D.capturing((CUstream)s, (CUstreamCaptureStatus *)st));
}

API cudaError_t cudaStreamGetDevice(cudaStream_t s, int *dev)
{
	CUdevice d;
	CUresult r;

	ENTER();
	if (!dev)
		return err(CUDA_ERROR_INVALID_VALUE);
	r = D.stream_dev((CUstream)s, &d);
	if (r == CUDA_SUCCESS)
		*dev = (int)d;
	return err(r);
}

/* Type and device, from the driver's plural query (unknown memory:
 * success, unregistered). */
API cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *a, const void *p)
{
	CUpointer_attribute which[] = { CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL };
	unsigned int type = 0;
	int dev = -1;
	void *data[] = { &type, &dev };
	CUresult r;

	ENTER();
	if (!a)
		return err(CUDA_ERROR_INVALID_VALUE);
	r = D.ptr_attrs(2, which, data, (CUdeviceptr)(uintptr_t)p);
	if (r != CUDA_SUCCESS)
		return err(r);
	memset(a, 0, sizeof *a);
	a->type = type == CU_MEMORYTYPE_HOST ? cudaMemoryTypeHost
		: type == CU_MEMORYTYPE_DEVICE ? cudaMemoryTypeDevice : cudaMemoryTypeUnregistered;
	a->device = type ? dev : -1;
	return cudaSuccess;
}

API cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned int flags)
{
	ENTER();
	return err(D.event_create((CUevent *)e, flags));
}

API cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) { ENTER(); return err(D.event_record((CUevent)e, (CUstream)s)); }
API cudaError_t cudaEventQuery(cudaEvent_t e) { ENTER(); return err(D.event_query((CUevent)e)); }
API cudaError_t cudaEventSynchronize(cudaEvent_t e) { ENTER(); return err(D.event_sync((CUevent)e)); }
API cudaError_t cudaEventDestroy(cudaEvent_t e) { ENTER(); return err(D.event_destroy((CUevent)e)); }

API cudaError_t cudaMalloc(void **p, size_t n) { ENTER(); return err(D.mem_alloc((CUdeviceptr *)p, n)); }
API cudaError_t cudaFree(void *p) { ENTER(); return p ? err(D.mem_free((CUdeviceptr)(uintptr_t)p)) : cudaSuccess; }

/* Unified addressing: the driver's cuMemcpy tells the direction; device to
 * device goes through cuMemcpyDtoD. */
API cudaError_t cudaMemcpy(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind)
{
	ENTER();
	if ((unsigned)kind > cudaMemcpyDefault)
		return err(CUDA_ERROR_INVALID_VALUE);
	if (kind == cudaMemcpyDeviceToDevice)
		return err(D.dtod((CUdeviceptr)(uintptr_t)dst, (CUdeviceptr)(uintptr_t)src, n));
	return err(D.memcpy((CUdeviceptr)(uintptr_t)dst, (CUdeviceptr)(uintptr_t)src, n));
}
/* Through cuMemcpy2D, each side's memory type from the kind (unified for
 * cudaMemcpyDefault). */
API cudaError_t cudaMemcpy2D(void *dst, size_t dpitch, const void *src, size_t spitch, size_t w, size_t h,
			     enum cudaMemcpyKind kind)
{
	CUDA_MEMCPY2D p;
	int sh = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyHostToHost;
	int dh = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyHostToHost;
	ENTER();
	if ((unsigned)kind > cudaMemcpyDefault)
		return err(CUDA_ERROR_INVALID_VALUE);
	memset(&p, 0, sizeof p);
	p.srcMemoryType = kind == cudaMemcpyDefault ? CU_MEMORYTYPE_UNIFIED : sh ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
	p.dstMemoryType = kind == cudaMemcpyDefault ? CU_MEMORYTYPE_UNIFIED : dh ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
	p.srcHost = src;
	p.srcDevice = (CUdeviceptr)(uintptr_t)src;
	p.srcPitch = spitch;
	p.dstHost = dst;
	p.dstDevice = (CUdeviceptr)(uintptr_t)dst;
	p.dstPitch = dpitch;
	p.WidthInBytes = w;
	p.Height = h;
	return err(D.memcpy2d(&p));
}

API cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind, cudaStream_t s)
{
	ENTER();
	if (kind == cudaMemcpyHostToDevice)
		return err(D.htod_async((CUdeviceptr)(uintptr_t)dst, src, n, (CUstream)s));
	if (kind == cudaMemcpyDeviceToHost)
		return err(D.dtoh_async(dst, (CUdeviceptr)(uintptr_t)src, n, (CUstream)s));
	return err(CUDA_ERROR_INVALID_VALUE);
}

/* CUDA 12.8's batch ABI: failIdx (the driver's 12080 cuMemcpyBatchAsync). */
API cudaError_t sim12_batch(void *const *d, const void *const *s, const size_t *n, size_t count,
			    struct cudaMemcpyAttributes *a, size_t *ai, size_t na, size_t *fail,
			    cudaStream_t st) __asm__("cudaMemcpyBatchAsync");
cudaError_t sim12_batch(void *const *d, const void *const *s, const size_t *n, size_t count,
				 struct cudaMemcpyAttributes *a, size_t *ai, size_t na, size_t *fail, cudaStream_t st)
{
	ENTER();
	return err(D.batch((CUdeviceptr *)d, (CUdeviceptr *)s, (size_t *)n, count, (CUmemcpyAttributes *)a, ai, na,
			   fail, (CUstream)st));
}

API cudaError_t cudaMemcpyBatchAsync_ptsz(void *const *d, const void *const *s, const size_t *n, size_t count,
					  struct cudaMemcpyAttributes *a, size_t *ai, size_t na, size_t *fail,
					  cudaStream_t st);
cudaError_t cudaMemcpyBatchAsync_ptsz(void *const *d, const void *const *s, const size_t *n, size_t count,
				      struct cudaMemcpyAttributes *a, size_t *ai, size_t na, size_t *fail,
				      cudaStream_t st)
{
	ENTER();
	return err(D.batch_ptsz((CUdeviceptr *)d, (CUdeviceptr *)s, (size_t *)n, count, (CUmemcpyAttributes *)a, ai,
				na, fail, (CUstream)st));
}

API cudaError_t cudaGetDriverEntryPointByVersion(const char *sym, void **fn, unsigned int ver,
						 unsigned long long flags,
						 enum cudaDriverEntryPointQueryResult *st)
{
	CUdriverProcAddressQueryResult q;
	CUresult r;
	ENTER();
	r = D.gpa(sym, fn, (int)ver, flags, &q);
	if (st)
		*st = (enum cudaDriverEntryPointQueryResult)q;
	return r == CUDA_SUCCESS ? cudaSuccess : err(r == CUDA_ERROR_NOT_FOUND ? CUDA_ERROR_INVALID_VALUE : r);
}

API cudaError_t cudaRuntimeGetVersion(int *v)
{
	if (!v)
		return err(CUDA_ERROR_INVALID_VALUE);
	*v = 12080;
	return cudaSuccess;
}
