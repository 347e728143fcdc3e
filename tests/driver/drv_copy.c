/* drv_copy - every 1D driver copy, reached as nvcc's static cudart reaches
 * it (dlopen libcuda.so.1, cuGetProcAddress_v2), each name twice: at its
 * legacy version with no flags, and at 7000 with the per-thread flag
 * (cudaTypedefs.h: PFN_cuMemcpyHtoD_v3020, PFN_cuMemcpy_v4000,
 * PFN_cuMemcpyHtoD_v7000_ptds, PFN_cuMemcpyAsync_v7000_ptsz, ...).
 *
 * Per form, one round trip: HtoD, cuMemcpy device to device, DtoH, then the
 * same through the Async names (a created stream for the legacy forms,
 * stream 0, the per-thread stream, for the _ptsz ones); the bytes must come
 * back.  Then one cuMemcpyHtoD with a NULL source and one that runs past
 * its device allocation, which must fail with 1.  drvcopy.sh reads the
 * report: 14 copies, each counted once with its bytes, and runs it again
 * with staging taking copies this small.  Last, a round trip in a context
 * the program created (2 more copies, never staged).
 *
 *   drv_copy   (TAP; PINCACHE_LIB_EXPECTED=1 under the shim) */
#include "drv_test.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda.h>
#include "../tap.h"
#include "drv_base.h"

#define N_LEGACY 65536   /* bytes per copy, legacy forms */
#define N_PT     40000   /* per-thread forms */

typedef CUresult (*htod_t)(CUdeviceptr, const void *, size_t);
typedef CUresult (*dtoh_t)(void *, CUdeviceptr, size_t);
typedef CUresult (*dtod_t)(CUdeviceptr, CUdeviceptr, size_t);
typedef CUresult (*htod_async_t)(CUdeviceptr, const void *, size_t, CUstream);
typedef CUresult (*dtoh_async_t)(void *, CUdeviceptr, size_t, CUstream);
typedef CUresult (*dtod_async_t)(CUdeviceptr, CUdeviceptr, size_t, CUstream);

struct form {
	const char *label;
	htod_t htod;
	dtoh_t dtoh;
	dtod_t copy;
	htod_async_t htod_async;
	dtoh_async_t dtoh_async;
	dtod_async_t copy_async;
};

/* The six names at the versions and flags a static cudart asks for. */
static int resolve(struct form *f, int per_thread)
{
	cuuint64_t fl = per_thread ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM : 0;
	int v3 = per_thread ? 7000 : 3020, v4 = per_thread ? 7000 : 4000;

	return drv_get(&f->htod, "cuMemcpyHtoD", v3, fl) & drv_get(&f->dtoh, "cuMemcpyDtoH", v3, fl) &
	       drv_get(&f->copy, "cuMemcpy", v4, fl) & drv_get(&f->htod_async, "cuMemcpyHtoDAsync", v3, fl) &
	       drv_get(&f->dtoh_async, "cuMemcpyDtoHAsync", v3, fl) & drv_get(&f->copy_async, "cuMemcpyAsync", v4, fl);
}

static void fill(unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)(i * 131 + seed * 7 + (i >> 9));
}

int main(void)
{
	int shim = getenv("PINCACHE_LIB_EXPECTED") != NULL;
	struct form forms[2] = { { .label = "legacy" }, { .label = "per-thread" } };
	unsigned char *a = malloc(N_LEGACY), *b = malloc(N_LEGACY);
	struct drv_base B;
	CUdeviceptr d0, d1;
	CUcontext ctx;
	CUstream s;
	void *h;

	if (!a || !b || !drv_base_open(&B))
		return done_testing();
	h = B.h;
	for (int k = 0; k < 2; k++)
		ok(resolve(&forms[k], k), "cuGetProcAddress: the six copies, %s", forms[k].label);
	if (shim) {
		for (int k = 0; k < 2; k++) {
			struct form *f = &forms[k];
			void *fn[] = { (void *)f->htod, (void *)f->dtoh, (void *)f->copy, (void *)f->htod_async,
				       (void *)f->dtoh_async, (void *)f->copy_async };
			int from_us = 0;
			for (int i = 0; i < 6; i++)
				from_us += strcmp(lib_of(fn[i]), "libpincache.so") == 0;
			is_int(from_us, 6, "%s: every copy comes from pincache", f->label);
		}
		ok((void *)forms[0].htod != (void *)forms[1].htod && (void *)forms[0].copy != (void *)forms[1].copy &&
		   (void *)forms[0].copy_async != (void *)forms[1].copy_async,
		   "per-thread and legacy forms differ");
		/* dlopen + dlsym by exported name reaches the same wrappers. */
		is_str(lib_of(dlsym(h, "cuMemcpyHtoD_v2")), "libpincache.so", "dlsym(libcuda, cuMemcpyHtoD_v2) is pincache's");
		is_str(lib_of(dlsym(h, "cuMemcpyAsync_ptsz")), "libpincache.so", "dlsym(libcuda, cuMemcpyAsync_ptsz) is pincache's");
	} else {
		is_str(lib_of((void *)forms[1].copy), "libcuda.so.1", "cuMemcpy comes from the driver");
	}
	if (B.init(0) || B.retain(&ctx, 0) || B.set(ctx) || B.mem_alloc(&d0, N_LEGACY) ||
	    B.mem_alloc(&d1, N_LEGACY) || B.stream_create(&s, 0))
		return ok(0, "context, device memory and a stream"), done_testing();
	for (int k = 0; k < 2; k++) {
		struct form *f = &forms[k];
		size_t n = k ? N_PT : N_LEGACY;
		CUstream q = k ? 0 : s;   /* 0: the per-thread stream in a _ptsz call */

		fill(a, n, 1 + k);
		memset(b, 0, n);
		is_int(f->htod(d0, a, n) | f->copy(d1, d0, n) | f->dtoh(b, d1, n), CUDA_SUCCESS,
		       "%s: cuMemcpyHtoD, cuMemcpy, cuMemcpyDtoH", f->label);
		ok(memcmp(a, b, n) == 0, "%s: the bytes came back", f->label);
		fill(a, n, 11 + k);
		memset(b, 0, n);
		is_int(f->htod_async(d0, a, n, q) | f->copy_async(d1, d0, n, q) | f->dtoh_async(b, d1, n, q) |
		       B.stream_sync(k ? CU_STREAM_PER_THREAD : s), CUDA_SUCCESS,
		       "%s: cuMemcpyHtoDAsync, cuMemcpyAsync, cuMemcpyDtoHAsync", f->label);
		ok(memcmp(a, b, n) == 0, "%s: the async bytes came back", f->label);
	}
	is_int(forms[0].htod(d0, NULL, 16), CUDA_ERROR_INVALID_VALUE, "cuMemcpyHtoD from NULL: the driver's error");
	/* Past the end of its allocation: refused before any byte moves,
	 * staged or not (the runtime's 1 for the same copy is measured). */
	is_int(forms[1].htod(d0 + 4096, a, N_LEGACY - 1024), CUDA_ERROR_INVALID_VALUE,
	       "cuMemcpyHtoD past its allocation: the driver's error");
	/* In a context the program created: its copies are the driver's own
	 * (not staged: drvcopy.sh counts), and the bytes come back. */
	{
		CUresult (*create)(CUcontext *, unsigned, CUdevice), (*destroy)(CUcontext);
		CUcontext mine;
		CUdeviceptr d2;

		if (drv_get(&create, "cuCtxCreate", 3020, 0) & drv_get(&destroy, "cuCtxDestroy", 4000, 0) &&
		    create(&mine, 0, 0) == CUDA_SUCCESS && B.mem_alloc(&d2, N_LEGACY) == CUDA_SUCCESS) {
			fill(a, N_LEGACY, 21);
			memset(b, 0, N_LEGACY);
			is_int(forms[0].htod(d2, a, N_LEGACY) | forms[0].dtoh(b, d2, N_LEGACY), CUDA_SUCCESS,
			       "created context: cuMemcpyHtoD, cuMemcpyDtoH");
			ok(memcmp(a, b, N_LEGACY) == 0, "created context: the bytes came back");
			is_int(B.set(ctx) | destroy(mine), CUDA_SUCCESS, "created context destroyed");
		} else {
			ok(0, "a created context with device memory");
		}
	}
	free(a);
	free(b);
	return done_testing();
}
