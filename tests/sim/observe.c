/* observe - how many calls reach the "driver" (simCounters).
 *
 * 200 allocate/free pairs over four sizes (cudaHostAlloc and cudaMallocHost).
 *   observe equal   every call reaches the sim: no shim, or PINCACHE_MODE=observe
 *   observe fewer   PINCACHE_MODE=cache: the cache serves most of them
 * Every tenth pair also synchronizes the device.  The program never uses the
 * per-thread default stream, so nothing may bring one into being: a fork()
 * child of a process that has one crashes in the driver when it exits
 * (measured on the H200: SIGSEGV in libcuda under PyTorch).
 */
#include <string.h>
#include "../doubles/sim.h"
#include "../tap.h"

#define PAIRS 200

static const size_t sizes[] = { 4096, 100000, 1u << 20, 3u << 20 };

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "equal";
	struct sim_counters c0, c;
	unsigned long long allocs = 0, frees = 0;
	int errors = 0;

	simCounters(&c0);
	for (int i = 0; i < PAIRS; i++) {
		void *p = NULL;
		size_t size = sizes[i % 4];

		errors += (i % 3 ? cudaHostAlloc(&p, size, 0) : cudaMallocHost(&p, size)) != cudaSuccess;
		allocs++;
		((volatile char *)p)[size - 1] = 1;
		errors += cudaFreeHost(p) != cudaSuccess;
		frees++;
		if (i % 10 == 0)
			errors += cudaDeviceSynchronize() != cudaSuccess;
	}
	simCounters(&c);
	diag("program: %llu allocs, %llu frees; sim: %llu real allocs, %llu real frees", allocs, frees,
	     c.host_allocs - c0.host_allocs, c.host_frees - c0.host_frees);
	is_int(errors, 0, "every call succeeded");
	is_int(c.per_thread_streams - c0.per_thread_streams, 0,
	       "no per-thread default stream brought into being (the program uses none)");
	if (!strcmp(mode, "equal")) {
		is_int(c.host_allocs - c0.host_allocs, allocs, "real allocations == program allocations");
		is_int(c.host_frees - c0.host_frees, frees, "real frees == program frees");
	} else {
		ok(c.host_allocs - c0.host_allocs < allocs / 4, "real allocations << program allocations (%llu vs %llu)",
		   c.host_allocs - c0.host_allocs, allocs);
		ok(c.host_frees - c0.host_frees < frees / 4, "real frees << program frees (%llu vs %llu)",
		   c.host_frees - c0.host_frees, frees);
	}
	return done_testing();
}
