/* memtrim - idle cached blocks near a memory limit (src/api/cache_cuda.c).
 * Plainly a free gives its memory back; under the shim the block stays in
 * the cache, charged to the memory cgroup, unless the limit comes near.
 *
 * Five 32 MiB blocks are allocated and four freed: the pinned bytes still
 * live on the simulated device afterwards must be WANT MiB (32 plainly or
 * near the limit, 160 with the idle blocks kept).  With MEMTRIM_FILE set,
 * the program then writes MEMTRIM_BYTES into it (the fake cgroup's
 * memory.current: its own memory grew), waits out the shim's 100 ms
 * between readings of the limits, and frees the fifth block: nothing
 * pinned may stay.
 *
 *   memtrim WANT_MIB */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "../doubles/sim.h"
#include "../tap.h"

#define MiB (1ull << 20)

static unsigned long long live_mib(void)
{
	struct sim_counters c;

	simCounters(&c);
	return c.live_pinned_bytes / MiB;
}

int main(int argc, char **argv)
{
	const char *file = getenv("MEMTRIM_FILE"), *bytes = getenv("MEMTRIM_BYTES");
	void *p[5];
	int err = 0;

	if (argc < 2)
		return 2;
	for (int i = 0; i < 5; i++)
		err += cudaHostAlloc(&p[i], 32 * MiB, 0) != cudaSuccess;
	is_int(err, 0, "five 32 MiB blocks");
	for (int i = 0; i < 4; i++)
		err += cudaFreeHost(p[i]) != cudaSuccess;
	is_int(err, 0, "four freed");
	usleep(20000);      /* the reaper's unmapping of released fast blocks */
	is_int((long)live_mib(), atol(argv[1]), "MiB still pinned after the frees");
	if (file && bytes) {
		FILE *f = fopen(file, "w");

		ok(f && fprintf(f, "%s\n", bytes) > 0 && fclose(f) == 0, "the program's memory grew (%s bytes charged)",
		   bytes);
		usleep(150000);
		is_int(cudaFreeHost(p[4]), cudaSuccess, "the fifth freed");
		usleep(20000);
		is_int((long)live_mib(), 0, "... and nothing stays pinned");
	} else {
		cudaFreeHost(p[4]);
	}
	is_int(cudaGetLastError(), cudaSuccess, "no error left behind");
	return done_testing();
}
