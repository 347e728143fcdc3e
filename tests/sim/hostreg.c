/* hostreg - registration as the fast miss path (issue 18) meets it on the
 * simulated device, which follows the H200 (tests/doubles/sim_cudart.c,
 * read_register_costs, has the rows).
 *
 *   (no argument)  costs, with H200-sized alloc and free costs (hostreg.sh):
 *                  cudaHostAlloc returns its pages faulted in;
 *                  cudaHostRegister of 64 MiB already faulted in costs under
 *                  a third of cudaHostAlloc's 64 MiB (H200: 2.6-3.5 against
 *                  24-42 ms); registering memory not faulted in costs the
 *                  faulting rate (at least 64 x 0.25 ms; H200 20.4 ms) and
 *                  leaves its pages resident; cudaHostUnregister costs
 *                  under half of cudaFreeHost (1.1-1.5 against 6.4-10.6 ms)
 *                  but is no free lunch (at least 1 ms)
 *   -f             registering 64 MiB not faulted in costs at least 0.9 x
 *                  64 x SIM_ALLOC_US_PER_MB x 0.262 / 0.43 us (hostreg.sh
 *                  makes that rate dominate the time this machine's own
 *                  faulting takes, which counts towards it)
 *   -d             the driver's calls as the runtime hands them out
 *                  (cudaGetDriverEntryPointByVersion): cuMemHostRegister and
 *                  cuMemHostUnregister answer 712, 713 and 1 where the
 *                  runtime's calls do, leaving the last error alone;
 *                  cuMemHostGetFlags and cuPointerGetAttribute answer a
 *                  registered range as a cudaHostAlloc block (measured:
 *                  docs/runtime-facts.md, "A cudaHostAlloc block against a
 *                  registered huge-page block").
 * Prints each cost as a "# " line. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cuda.h>
#include <cuda_runtime_api.h>
#include "simtest.h"
#include "../tap.h"

#define MiB ((size_t)1 << 20)
#define SZ (64 * MiB)

static unsigned char *fresh(void)
{
	unsigned char *m = mmap(NULL, SZ, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	return m == MAP_FAILED ? NULL : m;
}

/* Bytes of [p, p + SZ) faulted in. */
static size_t resident(const unsigned char *p)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE), n = SZ / pg, r = 0;
	unsigned char *v = malloc(n);

	if (!v || mincore((void *)p, SZ, v) != 0) {
		free(v);
		return (size_t)-1;
	}
	for (size_t i = 0; i < n; i++)
		r += (v[i] & 1) * pg;
	free(v);
	return r;
}

static void faulting(void)
{
	const char *v = getenv("SIM_ALLOC_US_PER_MB");
	double want = 0.9 * 64 * (v ? atof(v) : 5) * 0.262 / 0.43 / 1e3, t0, t;
	unsigned char *cold = fresh();

	if (!cold) {
		ok(0, "mmap 64 MiB");
		return;
	}
	t0 = simtest_now_ms();
	is_int(cudaHostRegister(cold, SZ, 0), cudaSuccess, "cudaHostRegister 64 MiB not faulted in");
	t = simtest_now_ms() - t0;
	ok(t >= want, "it costs the faulting rate (%.2f ms >= %.2f)", t, want);
	cudaHostUnregister(cold);
	munmap(cold, SZ);
}

static void costs(void)
{
	unsigned char *pre = fresh(), *cold = fresh();
	double t0, alloc, reg, reg_cold, unreg, fr;
	void *blk = NULL;

	if (!pre || !cold) {
		ok(0, "mmap 2 x 64 MiB");
		return;
	}
	memset(pre, 1, SZ);   /* faulted in, as the fast path's copy threads do */
	t0 = simtest_now_ms();
	is_int(cudaHostAlloc(&blk, SZ, 0), cudaSuccess, "cudaHostAlloc 64 MiB");
	alloc = simtest_now_ms() - t0;
	ok(resident(blk) == SZ, "the cudaHostAlloc block is faulted in on return, as pinned memory is (%zu bytes)",
	   resident(blk));
	t0 = simtest_now_ms();
	is_int(cudaHostRegister(pre, SZ, 0), cudaSuccess, "cudaHostRegister 64 MiB faulted in");
	reg = simtest_now_ms() - t0;
	ok(resident(cold) == 0, "the other 64 MiB are not faulted in yet");
	t0 = simtest_now_ms();
	is_int(cudaHostRegister(cold, SZ, 0), cudaSuccess, "cudaHostRegister 64 MiB not faulted in");
	reg_cold = simtest_now_ms() - t0;
	diag("cudaHostAlloc %.2f ms, register %.2f ms faulted in, %.2f ms not", alloc, reg, reg_cold);
	ok(alloc >= 27, "cudaHostAlloc costs what hostreg.sh set (%.2f ms >= 27)", alloc);
	ok(reg < alloc / 3, "registering faulted-in memory costs under a third of cudaHostAlloc (%.2f < %.2f / 3)",
	   reg, alloc);
	ok(reg_cold >= 64 * 0.25, "registering memory not faulted in costs the faulting rate (%.2f ms >= 16)", reg_cold);
	ok(reg < reg_cold / 2, "... over twice the faulted-in cost (%.2f < %.2f / 2)", reg, reg_cold);
	ok(resident(cold) == SZ, "the registration left its pages faulted in (%zu bytes)", resident(cold));

	t0 = simtest_now_ms();
	is_int(cudaHostUnregister(pre), cudaSuccess, "cudaHostUnregister 64 MiB");
	unreg = simtest_now_ms() - t0;
	t0 = simtest_now_ms();
	is_int(cudaFreeHost(blk), cudaSuccess, "cudaFreeHost 64 MiB");
	fr = simtest_now_ms() - t0;
	diag("cudaFreeHost %.2f ms, cudaHostUnregister %.2f ms", fr, unreg);
	ok(unreg < fr / 2, "cudaHostUnregister costs under half of cudaFreeHost (%.2f < %.2f / 2)", unreg, fr);
	ok(unreg >= 1, "cudaHostUnregister has a cost of its own (%.2f ms >= 1)", unreg);
	cudaHostUnregister(cold);
	munmap(pre, SZ);
	munmap(cold, SZ);
}

typedef CUresult reg_fn(void *, size_t, unsigned int);
typedef CUresult unreg_fn(void *);
typedef CUresult flags_fn(unsigned int *, void *);
typedef CUresult attr_fn(void *, CUpointer_attribute, CUdeviceptr);
typedef CUresult ctx_fn(CUcontext *);

static void *entry(const char *name, unsigned ver)
{
	enum cudaDriverEntryPointQueryResult st = cudaDriverEntryPointSymbolNotFound;
	void *f = NULL;

	if (cudaGetDriverEntryPointByVersion(name, &f, ver, cudaEnableDefault, &st) != cudaSuccess ||
	    st != cudaDriverEntryPointSuccess)
		f = NULL;
	ok(f != NULL, "the runtime hands out %s", name);
	return f;
}

/* Every measured attribute of p (base b, size n) as the H200 answered it
 * for both kinds; what names the kind. */
static void attrs(attr_fn *get, CUcontext cur, unsigned char *b, size_t n, const char *what)
{
	CUdeviceptr start = 0, dp = 0;
	size_t size = 0;
	unsigned int u[5] = { 9, 9, 9, 9, 9 };
	const CUpointer_attribute ua[5] = {
		CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_MAPPED, CU_POINTER_ATTRIBUTE_IS_MANAGED,
		CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS,
	};
	const unsigned int want[5] = { CU_MEMORYTYPE_HOST, 1, 0, 0, 0 };
	CUcontext ctx = NULL;
	void *hp = NULL;
	int ord = -9, bad = 0;

	bad |= get(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, (CUdeviceptr)(b + 8192)) != CUDA_SUCCESS;
	bad |= get(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, (CUdeviceptr)(b + 8192)) != CUDA_SUCCESS;
	for (int i = 0; i < 5; i++)
		bad |= get(&u[i], ua[i], (CUdeviceptr)b) != CUDA_SUCCESS || u[i] != want[i];
	bad |= get(&ctx, CU_POINTER_ATTRIBUTE_CONTEXT, (CUdeviceptr)b) != CUDA_SUCCESS;
	bad |= get(&hp, CU_POINTER_ATTRIBUTE_HOST_POINTER, (CUdeviceptr)b) != CUDA_SUCCESS;
	bad |= get(&dp, CU_POINTER_ATTRIBUTE_DEVICE_POINTER, (CUdeviceptr)b) != CUDA_SUCCESS;
	bad |= get(&ord, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, (CUdeviceptr)b) != CUDA_SUCCESS;
	ok(!bad && start == (CUdeviceptr)b && size == n && ctx == cur && hp == b && dp == (CUdeviceptr)b && ord == 0,
	   "cuPointerGetAttribute of %s: range %s, %zu; type %u, mapped %u, managed %u, ipc %u, syncmemops %u; "
	   "context %s, host and device pointer %s, ordinal %d", what, start == (CUdeviceptr)b ? "base" : "other",
	   size, u[0], u[1], u[2], u[3], u[4], ctx == cur ? "current" : "other",
	   hp == b && dp == (CUdeviceptr)b ? "the address" : "other", ord);
}

static void driver(void)
{
	reg_fn *reg = entry("cuMemHostRegister", 6050);
	unreg_fn *unreg = entry("cuMemHostUnregister", 4000);
	flags_fn *flags = entry("cuMemHostGetFlags", 2030);
	attr_fn *attr = entry("cuPointerGetAttribute", 4000);
	ctx_fn *cur = entry("cuCtxGetCurrent", 4000);
	unsigned char *m = mmap(NULL, 4 * MiB, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	unsigned char *blk = NULL, *heap = malloc(65536);
	unsigned int f = 0;
	CUcontext ctx = NULL;

	if (!reg || !unreg || !flags || !attr || !cur || m == MAP_FAILED || !heap ||
	    cudaHostAlloc((void **)&blk, 4 * MiB, 0) != cudaSuccess)
		return;
	cur(&ctx);
	is_int(cudaSetDevice(99), cudaErrorInvalidDevice, "a pending last error (101)");
	is_int(reg(m, 4 * MiB, 0), CUDA_SUCCESS, "cuMemHostRegister 4 MiB: 0");
	is_int(reg(m, 4 * MiB, 0), CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, "again: 712");
	is_int(reg(m + 4096, 4096, 0), CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, "a page inside it: 712");
	is_int(reg(NULL, 4096, 0), CUDA_ERROR_INVALID_VALUE, "NULL: 1");
	is_int(reg(blk + 4096, 4096, 0), CUDA_ERROR_INVALID_VALUE,
	       "a page inside a cudaHostAlloc block: 1 (the runtime's, measured; the driver's assumed alike)");
	is_int(unreg(m + 4096), CUDA_ERROR_INVALID_VALUE, "cuMemHostUnregister of an interior pointer: 1");
	is_int(unreg(heap), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, "cuMemHostUnregister of malloc'd memory: 713");
	is_int(cudaGetLastError(), cudaErrorInvalidDevice, "the driver's calls left the last error alone (101)");

	is_int(flags(&f, m + 8192), CUDA_SUCCESS, "cuMemHostGetFlags of the registered range");
	is_int((int)f, 2, "... 2, as a cudaHostAlloc block of flags 0");
	f = 0;
	is_int(flags(&f, blk + 8192), CUDA_SUCCESS, "cuMemHostGetFlags of the cudaHostAlloc block");
	is_int((int)f, 2, "... 2");
	attrs(attr, ctx, m, 4 * MiB, "the registered range");
	attrs(attr, ctx, blk, 4 * MiB, "the cudaHostAlloc block");

	is_int(unreg(m), CUDA_SUCCESS, "cuMemHostUnregister of the base: 0");
	is_int(unreg(m), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, "again: 713");
	is_int(reg(m, 4 * MiB, CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP), CUDA_SUCCESS,
	       "cuMemHostRegister with Portable | DeviceMap");
	f = 0;
	flags(&f, m);
	is_int((int)f, 3, "cuMemHostGetFlags: 3, as a cudaHostAlloc block of flags 3");
	is_int(unreg(m), CUDA_SUCCESS, "cuMemHostUnregister");
	cudaFreeHost(blk);
	munmap(m, 4 * MiB);
	free(heap);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc > 1 && strcmp(argv[1], "-d") == 0)
		driver();
	else if (argc > 1 && strcmp(argv[1], "-f") == 0)
		faulting();
	else
		costs();
	return done_testing();
}
