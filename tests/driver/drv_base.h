/* drv_base.h - what the tests/driver copy programs start with: libcuda.so.1
 * opened and its cuGetProcAddress_v2 found, as nvcc's static cudart does,
 * and the context, allocation and stream calls resolved through it.
 * Include after tap.h. */
#ifndef DRV_BASE_H
#define DRV_BASE_H
#include <cuda.h>
#include "drv_test.h"

static CUresult (*drv_gpa)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);

/* *fn = name at version ver with flags; 1 when found. */
static inline int drv_get(void *fn, const char *name, int ver, cuuint64_t flags)
{
	return drv_gpa(name, (void **)fn, ver, flags, NULL) == CUDA_SUCCESS && *(void **)fn;
}

struct drv_base {
	void *h;   /* the libcuda.so.1 handle */
	CUresult (*init)(unsigned), (*retain)(CUcontext *, CUdevice), (*set)(CUcontext);
	CUresult (*mem_alloc)(CUdeviceptr *, size_t), (*stream_create)(CUstream *, unsigned);
	CUresult (*stream_sync)(CUstream);
};

/* Skips the whole test without a libcuda.so.1; one TAP point for the
 * lookups; 1 when everything was found. */
static inline int drv_base_open(struct drv_base *b)
{
	b->h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!b->h)
		skip_all("no libcuda.so.1");
	*(void **)&drv_gpa = dlsym(b->h, "cuGetProcAddress_v2");
	if (!drv_gpa)
		return ok(0, "dlsym(libcuda, cuGetProcAddress_v2)");
	return ok(drv_get(&b->init, "cuInit", 2000, 0) & drv_get(&b->retain, "cuDevicePrimaryCtxRetain", 7000, 0) &
		  drv_get(&b->set, "cuCtxSetCurrent", 4000, 0) & drv_get(&b->mem_alloc, "cuMemAlloc", 3020, 0) &
		  drv_get(&b->stream_create, "cuStreamCreate", 2000, 0) &
		  drv_get(&b->stream_sync, "cuStreamSynchronize", 2000, 0),
		  "cuGetProcAddress: the context, allocation and stream calls");
}

#endif
