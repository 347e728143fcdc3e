/* capture - a graph capture begun through the driver API, as nvcc's static
 * cudart or XLA begin theirs, survives a pinned free made while it is under
 * way and while the device is busy.  Under the shim the free must not be
 * fenced: a context-wide event (cuCtxRecordEvent) invalidates every capture
 * of the context.  Round 2 frees again after the capture ended: that free
 * is cached (capture.sh checks the report: exactly one free cached, one
 * context-wide record), so the end of the capture was seen too.
 *
 *   capture   (TAP) */
#include <dlfcn.h>
#include <stdio.h>
#include <cuda.h>
#include "../doubles/sim.h"
#include "../tap.h"

static CUresult (*gpa)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);

static int get(void **fn, const char *name)
{
	return gpa(name, fn, 13000, 0, NULL) == CUDA_SUCCESS && *fn;
}

static void nop(void *arg)
{
	(void)arg;
}

int main(void)
{
	CUresult (*init)(unsigned), (*retain)(CUcontext *, CUdevice), (*set)(CUcontext);
	CUresult (*host_alloc)(void **, size_t, unsigned), (*free_host)(void *);
	CUresult (*stream_create)(CUstream *, unsigned), (*stream_destroy)(CUstream), (*ctx_sync)(void);
	CUresult (*begin)(CUstream, CUstreamCaptureMode), (*end)(CUstream, CUgraph *);
	CUresult (*is_capturing)(CUstream, CUstreamCaptureStatus *);
	cudaError_t (*launch)(cudaStream_t, void (*)(void *), void *, unsigned);
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL), *p = NULL;
	CUcontext ctx;
	CUstream work, cap;

	if (!h)
		skip_all("no libcuda.so.1");
	*(void **)&gpa = dlsym(h, "cuGetProcAddress_v2");
	*(void **)&launch = dlsym(h, "simLaunch");
	if (!gpa || !launch)
		skip_all("not the simulated libcuda.so.1");
	ok(get((void **)&init, "cuInit") && get((void **)&retain, "cuDevicePrimaryCtxRetain") &&
	   get((void **)&set, "cuCtxSetCurrent") && get((void **)&host_alloc, "cuMemHostAlloc") &&
	   get((void **)&free_host, "cuMemFreeHost") && get((void **)&stream_create, "cuStreamCreate") &&
	   get((void **)&stream_destroy, "cuStreamDestroy") && get((void **)&ctx_sync, "cuCtxSynchronize") &&
	   get((void **)&begin, "cuStreamBeginCapture") && get((void **)&end, "cuStreamEndCapture") &&
	   get((void **)&is_capturing, "cuStreamIsCapturing"),
	   "cuGetProcAddress resolves every entry point");
	if (init(0) || retain(&ctx, 0) || set(ctx) || stream_create(&work, CU_STREAM_NON_BLOCKING) ||
	    stream_create(&cap, CU_STREAM_NON_BLOCKING))
		return ok(0, "context and streams"), done_testing();
	for (int round = 1; round <= 2; round++) {
		CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
		CUgraph g = NULL;

		is_int(host_alloc(&p, 65536, 0), CUDA_SUCCESS, "round %d: cuMemHostAlloc", round);
		is_int(launch((cudaStream_t)work, nop, NULL, 20000), cudaSuccess, "round %d: device work in flight", round);
		if (round == 1)
			is_int(begin(cap, CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS,
			       "round 1: cuStreamBeginCapture on another stream");
		is_int(free_host(p), CUDA_SUCCESS, "round %d: cuMemFreeHost", round);
		if (round == 1) {
			is_int(is_capturing(cap, &st), CUDA_SUCCESS, "round 1: cuStreamIsCapturing");
			is_int(st, CU_STREAM_CAPTURE_STATUS_ACTIVE, "round 1: the free left the capture active");
			is_int(end(cap, &g), CUDA_SUCCESS, "round 1: cuStreamEndCapture");
			ok(g != NULL, "round 1: a graph came back");
		}
		is_int(ctx_sync(), CUDA_SUCCESS, "round %d: cuCtxSynchronize", round);
	}
	stream_destroy(cap);
	stream_destroy(work);
	return done_testing();
}
