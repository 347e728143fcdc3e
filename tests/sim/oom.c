/* oom - out of pinned memory, run with SIM_PINNED_LIMIT=8M.
 *
 * Fills the cache with idle blocks (six 1 MB blocks, freed), then asks for a
 * 4 MB block, which fits only if those idle blocks are really released: the
 * shim must trim and retry, and succeed without leaving an error behind.  A
 * 16 MB block can never fit: cudaErrorMemoryAllocation, with or without shim.
 *
 *   oom plain | oom shim
 */
#include <string.h>
#include "sim.h"
#include "../tap.h"

#define MB (1u << 20)

int main(int argc, char **argv)
{
	int shim = argc > 1 && !strcmp(argv[1], "shim");
	void *blk[6] = { 0 }, *p = NULL, *q = NULL;
	struct sim_counters c;
	int errors = 0;

	for (int i = 0; i < 6; i++)
		errors += cudaHostAlloc(&blk[i], MB, 0) != cudaSuccess;
	for (int i = 0; i < 6; i++)
		errors += cudaFreeHost(blk[i]) != cudaSuccess;
	is_int(errors, 0, "six 1 MB blocks allocated and freed");
	simCounters(&c);
	if (shim)
		ok(c.live_pinned_bytes >= 6 * MB, "shim: the cache holds the freed blocks (%llu KB live in the sim)",
		   c.live_pinned_bytes / 1024);
	else
		is_int(c.live_pinned_bytes, 0, "plain: the freed blocks were released");

	is_int(cudaHostAlloc(&p, 4 * MB, 0), cudaSuccess, "a 4 MB block fits once idle blocks are released");
	is_int(cudaGetLastError(), cudaSuccess, "... and leaves no error behind");
	ok(p != NULL, "... and returns a pointer");
	if (p)
		memset(p, 1, 4 * MB);
	is_int(cudaFreeHost(p), cudaSuccess, "the 4 MB block frees");

	is_int(cudaHostAlloc(&q, 16 * MB, 0), cudaErrorMemoryAllocation, "16 MB can never fit: out of memory");
	is_int(cudaPeekAtLastError(), cudaErrorMemoryAllocation, "... recorded as the last error");
	is_int(cudaGetLastError(), cudaErrorMemoryAllocation, "... returned once by cudaGetLastError");
	is_int(cudaGetLastError(), cudaSuccess, "... and then cleared (not sticky)");
	is_int(cudaMallocHost(&q, 16 * MB), cudaErrorMemoryAllocation, "cudaMallocHost too");
	cudaGetLastError();
	simCounters(&c);
	diag("sim: %llu allocation(s) refused for lack of memory", c.host_alloc_oom);
	return done_testing();
}
