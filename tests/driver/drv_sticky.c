/* drv_sticky - a kernel fault, seen through the driver API the way nvcc's
 * default static cudart reaches it (dlopen libcuda.so.1, cuGetProcAddress):
 * two 64 KiB blocks are allocated and freed (under the shim they stay in
 * the cache), a "kernel" traps (simLaunchFault, 719), and then
 * cuMemHostAlloc of that size must answer 719 with a NULL pointer and
 * cuMemFreeHost of a live block 719, as on the H200 (tests/doubles/README.md,
 * "Errors"; issue 15, D10).  TAP. */
#include <dlfcn.h>
#include <stdint.h>
#include <unistd.h>
#include <cuda.h>
#include <cuda_runtime_api.h>
#include "../tap.h"

#define KB 1024u

int main(void)
{
	CUresult (*gpa)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *) = NULL;
	CUresult (*init)(unsigned), (*retain)(CUcontext *, CUdevice), (*set)(CUcontext);
	CUresult (*host_alloc)(void **, size_t, unsigned), (*free_host)(void *);
	cudaError_t (*fault)(cudaStream_t, cudaError_t) = NULL;
	int (*idle)(void) = NULL;
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL), *small[2], *blk = NULL, *p;
	CUcontext ctx;
	int errors = 0, spins = 0;
	CUresult r;

	if (h) {
		*(void **)&gpa = dlsym(h, "cuGetProcAddress_v2");
		*(void **)&fault = dlsym(h, "simLaunchFault");
		*(void **)&idle = dlsym(h, "simDeviceIdle");
	}
	if (!gpa || !fault || !idle)
		skip_all("libcuda.so.1 with the sim's extras not found");
	ok(gpa("cuInit", (void **)&init, 13000, 0, NULL) == CUDA_SUCCESS &&
	   gpa("cuDevicePrimaryCtxRetain", (void **)&retain, 13000, 0, NULL) == CUDA_SUCCESS &&
	   gpa("cuCtxSetCurrent", (void **)&set, 13000, 0, NULL) == CUDA_SUCCESS &&
	   gpa("cuMemHostAlloc", (void **)&host_alloc, 13000, 0, NULL) == CUDA_SUCCESS &&
	   gpa("cuMemFreeHost", (void **)&free_host, 13000, 0, NULL) == CUDA_SUCCESS,
	   "driver entry points through cuGetProcAddress");
	if (init(0) || retain(&ctx, 0) || set(ctx))
		return done_testing();
	errors += host_alloc(&blk, 1024 * KB, 0) != CUDA_SUCCESS;
	for (int i = 0; i < 2; i++)
		errors += host_alloc(&small[i], 64 * KB, 0) != CUDA_SUCCESS;
	for (int i = 0; i < 2; i++)
		errors += free_host(small[i]) != CUDA_SUCCESS;
	is_int(errors, 0, "blocks allocated and freed before the fault");
	is_int(fault(0, cudaErrorLaunchFailure), cudaSuccess, "a faulting kernel launched");
	while (!idle() && spins++ < 5000)
		usleep(1000);

	p = (void *)1;
	r = host_alloc(&p, 64 * KB, 0);
	is_int(r, CUDA_ERROR_LAUNCH_FAILED, "cuMemHostAlloc of a size freed before the fault: 719");
	ok(p == NULL, "... and a NULL pointer");
	is_int(free_host(blk), CUDA_ERROR_LAUNCH_FAILED, "cuMemFreeHost of a live block: 719");
	is_int(free_host(blk), CUDA_ERROR_LAUNCH_FAILED, "... again: 719");
	return done_testing();
}
