/* ctypes_rt - a library lookup the way ctypes, cffi or Numba do it:
 * dlopen the (simulated) libcudart.so.13 by path, RTLD_LOCAL, and dlsym
 * cudaHostAlloc/cudaFreeHost on that handle, which LD_PRELOAD alone never
 * sees.  Under the shim the lookups return pincache's wrappers and the
 * churn is served from the cache.
 *
 *   ctypes_rt PATH-TO-libcudart.so.13   (TAP; PINCACHE_LIB_EXPECTED=1 under the shim) */
#include "drv_test.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime_api.h>
#include "../doubles/sim.h"
#include "../tap.h"

int main(int argc, char **argv)
{
	int shim = getenv("PINCACHE_LIB_EXPECTED") != NULL, n = 64, errors = 0;
	cudaError_t (*alloc)(void **, size_t, unsigned int);
	cudaError_t (*free_host)(void *);
	void (*counters)(struct sim_counters *);
	struct sim_counters sc;
	void *h;

	if (argc < 2 || !(h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL)))
		skip_all("cannot dlopen the simulated libcudart.so.13");
	*(void **)&alloc = dlsym(h, "cudaHostAlloc");
	*(void **)&free_host = dlsym(h, "cudaFreeHost");
	*(void **)&counters = dlsym(h, "simCounters");
	ok(alloc && free_host && counters, "dlsym on the handle finds the entry points");
	if (!alloc || !free_host || !counters)
		return done_testing();
	is_str(lib_of((void *)alloc), shim ? "libpincache.so" : "libcudart.so.13", "cudaHostAlloc on the handle");
	is_str(lib_of((void *)counters), "libcudart.so.13", "a name pincache does not serve stays the library's");
	for (int i = 0; i < n; i++) {
		void *p = NULL;
		errors += alloc(&p, 1 << 20, 0) != cudaSuccess;
		if (p)
			memset(p, i, 1 << 20);
		errors += free_host(p) != cudaSuccess;
	}
	is_int(errors, 0, "%d allocations and frees succeeded", n);
	counters(&sc);
	if (shim)
		ok(sc.host_allocs <= 2, "served from the cache: %llu real allocations for %d", sc.host_allocs, n);
	else
		is_int((long long)sc.host_allocs, n, "plain: every allocation is real");
	return done_testing();
}
