/* teardown - pinned blocks die with the context that allocated them, and a
 * cache must not hand them out afterwards (issue 15; measured on an H200:
 * /work/facts/h200-ctx.md, tests/gpu/gpu_ctx.cu).  Through cuGetProcAddress,
 * as nvcc's static cudart reaches the driver.  Each case frees a block (the
 * shim caches it), tears the context down, and asks for the same size
 * again: the new block must be live pinned memory, and a block that was
 * live at the teardown must be gone (flags and free answer 1).
 *
 *   A  cuDevicePrimaryCtxReset(0)
 *   B  cuDevicePrimaryCtxRelease(0) dropping the last retain
 *   C  cuCtxCreate, blocks allocated while it is current, cuCtxDestroy
 *
 *   teardown   (TAP) */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <cuda.h>
#include "../tap.h"

#define SIZE (1 << 20)

static CUresult (*gpa)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
static CUresult (*init)(unsigned), (*retain)(CUcontext *, CUdevice), (*release)(CUdevice), (*reset)(CUdevice);
static CUresult (*set)(CUcontext), (*create)(CUcontext *, unsigned, CUdevice), (*destroy)(CUcontext);
static CUresult (*host_alloc)(void **, size_t, unsigned), (*free_host)(void *), (*get_flags)(unsigned *, void *);

static int get(void **fn, const char *name, int ver)
{
	return gpa(name, fn, ver, 0, NULL) == CUDA_SUCCESS && *fn;
}

/* A new block after the teardown: live pinned memory, usable. */
static void fresh(const char *what)
{
	void *q = NULL;
	unsigned fl = 0;
	CUresult r = host_alloc(&q, SIZE, 0);

	is_int(r, CUDA_SUCCESS, "%s: cuMemHostAlloc after it", what);
	r = get_flags(&fl, q);
	is_int(r, CUDA_SUCCESS, "%s: the new block is live pinned memory (cuMemHostGetFlags)", what);
	if (r == CUDA_SUCCESS) {
		memset(q, 0x5a, SIZE);
		is_int(free_host(q), CUDA_SUCCESS, "%s: and frees", what);
	}
}

/* A block live at the teardown is gone. */
static void gone(const char *what, void *p)
{
	unsigned fl = 0;

	is_int(get_flags(&fl, p), CUDA_ERROR_INVALID_VALUE, "%s: a block live at the teardown is gone (flags)", what);
	is_int(free_host(p), CUDA_ERROR_INVALID_VALUE, "%s: ... and its free answers 1", what);
}

/* One block freed (cached by a shim) and one kept live, then teardown(). */
static void churn(void **live)
{
	void *p = NULL;

	host_alloc(&p, SIZE, 0);
	free_host(p);
	host_alloc(live, SIZE, 0);
}

int main(void)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL), *live = NULL;
	CUcontext prim, c;

	if (!h)
		skip_all("no libcuda.so.1");
	*(void **)&gpa = dlsym(h, "cuGetProcAddress_v2");
	if (!gpa || !dlsym(h, "simLaunch"))
		skip_all("not the simulated libcuda.so.1");
	ok(get((void **)&init, "cuInit", 13000) && get((void **)&retain, "cuDevicePrimaryCtxRetain", 13000) &&
	   get((void **)&release, "cuDevicePrimaryCtxRelease", 13000) &&
	   get((void **)&reset, "cuDevicePrimaryCtxReset", 13000) && get((void **)&set, "cuCtxSetCurrent", 13000) &&
	   get((void **)&create, "cuCtxCreate", 11000) && get((void **)&destroy, "cuCtxDestroy", 13000) &&
	   get((void **)&host_alloc, "cuMemHostAlloc", 13000) && get((void **)&free_host, "cuMemFreeHost", 13000) &&
	   get((void **)&get_flags, "cuMemHostGetFlags", 13000),
	   "cuGetProcAddress resolves every entry point");
	if (init(0) || retain(&prim, 0) || set(prim))
		return ok(0, "primary context"), done_testing();

	churn(&live);
	is_int(reset(0), CUDA_SUCCESS, "A: cuDevicePrimaryCtxReset(0)");
	gone("A", live);
	fresh("A");

	churn(&live);
	is_int(release(0), CUDA_SUCCESS, "B: cuDevicePrimaryCtxRelease(0), the last retain");
	if (retain(&prim, 0) || set(prim))
		return ok(0, "B: primary context again"), done_testing();
	gone("B", live);
	fresh("B");

	is_int(create(&c, 0, 0), CUDA_SUCCESS, "C: cuCtxCreate (current)");
	churn(&live);
	is_int(destroy(c), CUDA_SUCCESS, "C: cuCtxDestroy");
	is_int(set(prim), CUDA_SUCCESS, "C: the primary context current again");
	gone("C", live);
	fresh("C");
	return done_testing();
}
