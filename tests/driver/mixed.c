/* mixed - the runtime and the driver in one process, over one device: the
 * (simulated) libcudart.so.12 calls the driver through cuGetProcAddress
 * pointers, as the real cudart does, and the program also calls the driver
 * itself.  R runtime allocations and D driver allocations (each freed by
 * its own API) must be counted R + D times, not once more for the runtime
 * calls' driver calls: the test script checks the JSON report.  Under the
 * shim the runtime's own lookups return pincache's driver wrappers, so
 * nothing but the ownership rule keeps them from being served twice.
 *
 *   mixed R D   (TAP; PINCACHE_LIB_EXPECTED=1 under the shim) */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda.h>
#include <cuda_runtime_api.h>
#include "../doubles/sim.h"
#include "../tap.h"

/* 8 runtime copies (cudaMemcpy through the cudart's cuMemcpy, and device
 * to device through its cuMemcpyDtoD; cudaMemcpyAsync through its
 * cuMemcpyHtoDAsync/DtoHAsync; cudaMemcpy2D through its cuMemcpy2D) and 7
 * driver ones (cuMemcpyHtoD, cuMemcpyDtoH, cuMemcpyDtoD, cuMemcpy2D, the
 * last cuMemcpyHtoD past its allocation), MIXED_COPY bytes each: mixed.sh
 * expects each counted once. */
#define MIXED_COPY 4096
static void copies(CUresult (*gpa)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *))
{
	CUresult (*htod)(CUdeviceptr, const void *, size_t) = NULL, (*dtoh)(void *, CUdeviceptr, size_t) = NULL;
	CUresult (*dtod)(CUdeviceptr, CUdeviceptr, size_t) = NULL, (*copy2d)(const CUDA_MEMCPY2D *) = NULL;
	static unsigned char a[MIXED_COPY], b[MIXED_COPY];
	CUDA_MEMCPY2D p2;
	int errors = 0;
	void *d, *d2;

	for (int i = 0; i < MIXED_COPY; i++)
		a[i] = (unsigned char)(i * 7 + 3);
	if (cudaMalloc(&d, MIXED_COPY) != cudaSuccess || cudaMalloc(&d2, MIXED_COPY) != cudaSuccess ||
	    gpa("cuMemcpyHtoD", (void **)&htod, 12080, 0, NULL) != CUDA_SUCCESS ||
	    gpa("cuMemcpyDtoH", (void **)&dtoh, 12080, 0, NULL) != CUDA_SUCCESS ||
	    gpa("cuMemcpyDtoD", (void **)&dtod, 12080, 0, NULL) != CUDA_SUCCESS ||
	    gpa("cuMemcpy2D", (void **)&copy2d, 12080, 0, NULL) != CUDA_SUCCESS) {
		ok(0, "device memory and the driver's copies");
		return;
	}
	for (int i = 0; i < 3; i++) {   /* 6 runtime copies, 2 of them async */
		errors += (i == 2 ? cudaMemcpyAsync(d, a, MIXED_COPY, cudaMemcpyHostToDevice, 0)
			   : cudaMemcpy(d, a, MIXED_COPY, cudaMemcpyHostToDevice)) != cudaSuccess;
		memset(b, 0, sizeof b);
		errors += (i == 2 ? cudaMemcpyAsync(b, d, MIXED_COPY, cudaMemcpyDeviceToHost, 0)
			   : cudaMemcpy(b, d, MIXED_COPY, cudaMemcpyDeviceToHost)) != cudaSuccess;
		errors += cudaDeviceSynchronize() != cudaSuccess || memcmp(a, b, sizeof a) != 0;
	}
	for (int i = 0; i < 2; i++) {   /* 4 driver copies */
		memset(b, 0, sizeof b);
		errors += htod((CUdeviceptr)(uintptr_t)d, a, MIXED_COPY) != CUDA_SUCCESS;
		errors += dtoh(b, (CUdeviceptr)(uintptr_t)d, MIXED_COPY) != CUDA_SUCCESS || memcmp(a, b, sizeof a) != 0;
	}
	/* A driver copy's error is not the runtime's: its last error stays
	 * clear, staged or not (mixed.sh runs it staged too). */
	errors += htod((CUdeviceptr)(uintptr_t)d + 2048, a, MIXED_COPY) != CUDA_ERROR_INVALID_VALUE;
	errors += cudaGetLastError() != cudaSuccess;
	/* 2 more each way: 4 rows of 1024 bytes in, device to device, 2D out. */
	memset(b, 0, sizeof b);
	errors += cudaMemcpy2D(d, 1024, a, 1024, 1024, MIXED_COPY / 1024, cudaMemcpyHostToDevice) != cudaSuccess;
	errors += cudaMemcpy(d2, d, MIXED_COPY, cudaMemcpyDeviceToDevice) != cudaSuccess;
	errors += dtod((CUdeviceptr)(uintptr_t)d, (CUdeviceptr)(uintptr_t)d2, MIXED_COPY) != CUDA_SUCCESS;
	memset(&p2, 0, sizeof p2);
	p2.srcMemoryType = CU_MEMORYTYPE_DEVICE;
	p2.srcDevice = (CUdeviceptr)(uintptr_t)d;
	p2.srcPitch = 1024;
	p2.dstMemoryType = CU_MEMORYTYPE_HOST;
	p2.dstHost = b;
	p2.dstPitch = 1024;
	p2.WidthInBytes = 1024;
	p2.Height = MIXED_COPY / 1024;
	errors += copy2d(&p2) != CUDA_SUCCESS || memcmp(a, b, sizeof a) != 0;
	is_int(errors, 0, "8 runtime and 7 driver copies, bytes intact, the failed one the driver's alone");
}

int main(int argc, char **argv)
{
	int nr = argc > 2 ? atoi(argv[1]) : 40, nd = argc > 2 ? atoi(argv[2]) : 30, errors = 0;
	CUresult (*gpa)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
	CUresult (*host_alloc)(void **, size_t, unsigned), (*free_host)(void *);
	CUresult (*retain)(CUcontext *, CUdevice), (*set)(CUcontext);
	void (*counters)(struct sim_counters *);
	struct sim_counters sc;
	CUcontext ctx;
	void *h, *p;
	unsigned flags = 0;

	/* The runtime first: it loads libcuda.so.1 and starts the driver. */
	errors += cudaHostAlloc(&p, 4096, 0) != cudaSuccess;
	errors += cudaFreeHost(p) != cudaSuccess;
	h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	if (!h)
		skip_all("libcuda.so.1 not loaded by the runtime");
	*(void **)&gpa = dlsym(h, "cuGetProcAddress_v2");
	*(void **)&counters = dlsym(h, "simCounters");
	ok(gpa && counters &&
	   gpa("cuMemHostAlloc", (void **)&host_alloc, 12080, 0, NULL) == CUDA_SUCCESS &&
	   gpa("cuMemFreeHost", (void **)&free_host, 12080, 0, NULL) == CUDA_SUCCESS &&
	   gpa("cuDevicePrimaryCtxRetain", (void **)&retain, 12080, 0, NULL) == CUDA_SUCCESS &&
	   gpa("cuCtxSetCurrent", (void **)&set, 12080, 0, NULL) == CUDA_SUCCESS,
	   "driver entry points through cuGetProcAddress");
	if (!gpa || !counters || retain(&ctx, 0) || set(ctx))
		return done_testing();
	for (int i = 1; i < nr; i++) {
		errors += cudaHostAlloc(&p, 65536, 0) != cudaSuccess;
		errors += cudaHostGetFlags(&flags, p) != cudaSuccess || flags != cudaHostAllocMapped;
		errors += cudaFreeHost(p) != cudaSuccess;
	}
	for (int i = 0; i < nd; i++) {
		errors += host_alloc(&p, 65536, 0) != CUDA_SUCCESS;
		errors += free_host(p) != CUDA_SUCCESS;
	}
	is_int(errors, 0, "%d runtime and %d driver allocations, frees and flag queries", nr, nd);
	copies(gpa);
	counters(&sc);
	diag("real host allocations: %llu", sc.host_allocs);
	if (getenv("PINCACHE_LIB_EXPECTED"))   /* staged (PINCACHE_STAGE_MIN set): the ring's one chunk too */
		ok(sc.host_allocs <= 2u + (getenv("PINCACHE_STAGE_MIN") != NULL),
		   "both APIs served from one cache (%llu real allocations)", sc.host_allocs);
	else
		is_int((long long)sc.host_allocs, nr + nd, "plain: every allocation is real");
	return done_testing();
}
