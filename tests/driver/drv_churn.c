/* drv_churn - pinned memory churned through the driver API, reached the way
 * nvcc's default static cudart reaches it: dlopen("libcuda.so.1"),
 * dlsym(handle, "cuGetProcAddress_v2"), then cuGetProcAddress for every
 * entry point.  No libcudart is loaded.
 *
 * Each iteration allocates a block (cuMemHostAlloc or cuMemAllocHost,
 * sizes and flags vary), fills it with a pattern unique to the iteration,
 * queues on a stream (the legacy one, a blocking one, or a non-blocking
 * one created with cuStreamCreate) a delay, an async H2D copy (the _ptsz
 * form on the per-thread stream every fourth time), a kernel checking the
 * device copy and a zero-copy kernel reading the block, then frees the
 * block at once.  A block handed out again before that work ran gets the
 * next pattern over it, and a kernel sees it (mismatches > 0).
 *
 *   drv_churn [-n ITERATIONS] [-b] [-f]
 *     -b  the non-blocking stream only
 *     -f  one size and flags (1 MiB, 0): then the cache must serve most
 *         allocations (varied sizes and flags need a block or two each)
 * Prints TAP and "mismatches=N" (nofences.sh reads it). */
#include "drv_test.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cuda.h>
#include "../doubles/sim.h"
#include "../tap.h"

#define MAX_SIZE (1u << 20)
#define NQ 4      /* legacy, blocking, non-blocking, per-thread */

static const size_t sizes[] = { 4096, 65536, 262144, 1u << 20, 12288, 200000 };
static const unsigned flag_set[] = { 0, CU_MEMHOSTALLOC_DEVICEMAP, CU_MEMHOSTALLOC_PORTABLE, 0,
				     CU_MEMHOSTALLOC_WRITECOMBINED };

static struct {
	CUresult (*gpa)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
	CUresult (*init)(unsigned);
	CUresult (*retain)(CUcontext *, CUdevice);
	CUresult (*set)(CUcontext);
	CUresult (*host_alloc)(void **, size_t, unsigned);
	CUresult (*alloc_host)(void **, size_t);
	CUresult (*free_host)(void *);
	CUresult (*host_flags)(unsigned *, void *);
	CUresult (*stream_create)(CUstream *, unsigned);
	CUresult (*stream_destroy)(CUstream);
	CUresult (*htod)(CUdeviceptr, const void *, size_t, CUstream);
	CUresult (*htod_ptsz)(CUdeviceptr, const void *, size_t, CUstream);
	CUresult (*mem_alloc)(CUdeviceptr *, size_t);
	CUresult (*ctx_sync)(void);
	cudaError_t (*launch)(cudaStream_t, void (*)(void *), void *, unsigned);
	void (*counters)(struct sim_counters *);
} D;

struct check {
	const uint64_t *buf;
	size_t size;
	uint64_t seed;
	int ran;
	size_t bad;
};

static uint64_t pattern(uint64_t seed, size_t i)
{
	uint64_t x = seed * 0x9e3779b97f4a7c15ull + i;

	x ^= x >> 31;
	x *= 0xbf58476d1ce4e5b9ull;
	return x ^ (x >> 29);
}

static void check_kernel(void *arg)
{
	struct check *c = arg;

	for (size_t i = 0; i < c->size / 8; i++)
		c->bad += c->buf[i] != pattern(c->seed, i);
	c->ran = 1;
}

static void delay_kernel(void *arg) { (void)arg; }

static int get(void **fn, const char *name, int ver, unsigned long long flags)
{
	/* NULL symbolStatus, as many callers pass */
	return D.gpa(name, fn, ver, flags, NULL) == CUDA_SUCCESS && *fn;
}

int main(int argc, char **argv)
{
	int iters = 150, nb_only = 0, fixed = 0, opt, shim = getenv("PINCACHE_LIB_EXPECTED") != NULL;
	void *h, *v1 = NULL;
	CUcontext ctx;
	CUstream q[NQ];
	CUdeviceptr dev[NQ];
	struct check *dc, *zc;
	struct sim_counters sc;
	size_t bad = 0;
	int api_errors = 0, ran = 0;

	while ((opt = getopt(argc, argv, "n:bf")) != -1) {
		if (opt == 'n')
			iters = atoi(optarg);
		else if (opt == 'b')
			nb_only = 1;
		else if (opt == 'f')
			fixed = 1;
	}
	h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h)
		skip_all("no libcuda.so.1");
	*(void **)&D.gpa = dlsym(h, "cuGetProcAddress_v2");
	*(void **)&D.launch = dlsym(h, "simLaunch");
	*(void **)&D.counters = dlsym(h, "simCounters");
	ok(D.gpa && D.launch && D.counters, "dlsym(libcuda, cuGetProcAddress_v2) and the sim's extras");
	if (!D.gpa || !D.launch || !D.counters)
		return done_testing();
	ok(get((void **)&D.init, "cuInit", 13000, 0) && get((void **)&D.retain, "cuDevicePrimaryCtxRetain", 13000, 0) &&
	   get((void **)&D.set, "cuCtxSetCurrent", 13000, 0) && get((void **)&D.host_alloc, "cuMemHostAlloc", 13000, 0) &&
	   get((void **)&D.alloc_host, "cuMemAllocHost", 13000, 0) && get((void **)&D.free_host, "cuMemFreeHost", 13000, 0) &&
	   get((void **)&D.host_flags, "cuMemHostGetFlags", 13000, 0) &&
	   get((void **)&D.stream_create, "cuStreamCreate", 13000, 0) &&
	   get((void **)&D.stream_destroy, "cuStreamDestroy", 13000, 0) &&
	   get((void **)&D.htod, "cuMemcpyHtoDAsync", 13000, CU_GET_PROC_ADDRESS_LEGACY_STREAM) &&
	   get((void **)&D.htod_ptsz, "cuMemcpyHtoDAsync", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) &&
	   get((void **)&D.mem_alloc, "cuMemAlloc", 13000, 0) && get((void **)&D.ctx_sync, "cuCtxSynchronize", 13000, 0),
	   "cuGetProcAddress resolves every entry point");
	/* Under the shim the current ABIs are pincache's, the old ones the driver's. */
	get(&v1, "cuMemAllocHost", 3000, 0);
	if (shim) {
		is_str(lib_of((void *)D.host_alloc), "libpincache.so", "cuMemHostAlloc comes from pincache");
		is_str(lib_of((void *)D.htod_ptsz), "libpincache.so", "per-thread cuMemcpyHtoDAsync comes from pincache");
		ok((void *)D.htod_ptsz != (void *)D.htod, "per-thread and legacy cuMemcpyHtoDAsync differ (flags are part of the key)");
		is_str(lib_of(v1), "libcuda.so.1", "cuMemAllocHost at version 3000 (32-bit size ABI) stays the driver's");
	} else {
		is_str(lib_of((void *)D.host_alloc), "libcuda.so.1", "cuMemHostAlloc comes from the driver");
	}
	if (D.init(0) || D.retain(&ctx, 0) || D.set(ctx))
		return ok(0, "context"), done_testing();
	D.stream_create(&q[1], 0);
	D.stream_create(&q[2], CU_STREAM_NON_BLOCKING);
	q[0] = NULL;               /* legacy */
	q[3] = NULL;               /* per-thread, through the _ptsz copy */
	for (int i = 0; i < NQ; i++)
		api_errors += D.mem_alloc(&dev[i], MAX_SIZE) != CUDA_SUCCESS;
	dc = calloc((size_t)iters, sizeof *dc);
	zc = calloc((size_t)iters, sizeof *zc);
	for (int it = 0; it < iters; it++) {
		size_t size = fixed ? MAX_SIZE : sizes[it % 6];
		unsigned flags = fixed ? 0 : flag_set[it % 5];
		int k = nb_only ? 2 : it % NQ;
		void *p = NULL;
		CUresult r = (it % 3 == 1) ? D.alloc_host(&p, size) : D.host_alloc(&p, size, flags);
		cudaStream_t s = k == 3 ? cudaStreamPerThread : (cudaStream_t)q[k];

		if (r != CUDA_SUCCESS || !p) {
			api_errors++;
			continue;
		}
		for (size_t i = 0; i < size / 8; i++)
			((uint64_t *)p)[i] = pattern((uint64_t)it, i);
		dc[it] = (struct check){ (const uint64_t *)(uintptr_t)dev[k], size, (uint64_t)it, 0, 0 };
		zc[it] = (struct check){ p, size, (uint64_t)it, 0, 0 };
		api_errors += D.launch(s, delay_kernel, NULL, 300) != cudaSuccess;
		r = k == 3 ? D.htod_ptsz(dev[k], p, size, NULL) : D.htod(dev[k], p, size, q[k]);
		api_errors += r != CUDA_SUCCESS;
		api_errors += D.launch(s, check_kernel, &dc[it], 0) != cudaSuccess;
		api_errors += D.launch(s, check_kernel, &zc[it], 0) != cudaSuccess;
		api_errors += D.free_host(p) != CUDA_SUCCESS;
	}
	api_errors += D.ctx_sync() != CUDA_SUCCESS;
	for (int it = 0; it < iters; it++) {
		ran += dc[it].ran + zc[it].ran;
		bad += (dc[it].bad != 0) + (zc[it].bad != 0);
	}
	is_int(api_errors, 0, "every driver call succeeded");
	is_int(ran, 2 * iters, "every kernel ran");
	printf("# mismatches=%zu\n", bad);
	is_int((long long)bad, 0, "no kernel saw another iteration's bytes");
	D.counters(&sc);
	diag("real host allocations: %llu for %d iterations", sc.host_allocs, iters);
	if (shim && fixed)
		ok(sc.host_allocs * 4 < (unsigned long long)iters, "the cache served most allocations (%llu real)", sc.host_allocs);
	else if (shim)
		ok(sc.host_allocs < (unsigned long long)iters, "the cache served some allocations (%llu real)", sc.host_allocs);
	else
		is_int((long long)sc.host_allocs, iters, "plain: every allocation is real");
	D.stream_destroy(q[1]);
	D.stream_destroy(q[2]);
	free(dc);
	free(zc);
	return done_testing();
}
