/* cap - what the cache keeps, seen from the "driver" (simCounters).
 *
 * Churns pinned blocks of 256 KB .. 2 MB (a random mix of allocations and
 * frees, at most 8 live), tracking the program's own live bytes and, after
 * every call, the sim's live pinned bytes.
 *
 *   cap plain         no shim: the sim sees exactly the program's calls
 *   cap capped CAP    shim with PINCACHE_MAX_CACHED=CAP: the sim's live bytes
 *                     never exceed the program's peak (plus 12.5% size-class
 *                     rounding) + CAP + one block, and trimming really freed
 *   cap uncapped      shim with its default cap: churning the same sizes needs
 *                     no real free at all and few real allocations
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../doubles/sim.h"
#include "../tap.h"

#define KB 1024ull
#define MB (1024ull * 1024)
#define MAXLIVE 8
#define OPS 3000

static const unsigned long long sizes[] = { 256 * KB, 384 * KB, 512 * KB, 768 * KB, MB, 3 * MB / 2, 2 * MB };

static unsigned long long parse_size(const char *s)
{
	char *end;
	unsigned long long n = strtoull(s, &end, 10);

	switch (*end) {
	case 'K': case 'k': return n * KB;
	case 'M': case 'm': return n * MB;
	case 'G': case 'g': return n * MB * 1024;
	default: return n;
	}
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "plain";
	unsigned long long cap = argc > 2 ? parse_size(argv[2]) : 0;
	void *blk[MAXLIVE] = { 0 };
	unsigned long long bsz[MAXLIVE] = { 0 };
	unsigned long long live = 0, peak = 0, max_sim = 0, allocs = 0, frees = 0;
	unsigned long long frees_during_churn;
	struct sim_counters c0, c;
	unsigned seed = 12345;
	int errors = 0;

	simCounters(&c0);
	for (int op = 0; op < OPS; op++) {
		int k = rand_r(&seed) % MAXLIVE;

		if (!blk[k]) {
			bsz[k] = sizes[rand_r(&seed) % (sizeof sizes / sizeof sizes[0])];
			errors += cudaHostAlloc(&blk[k], bsz[k], 0) != cudaSuccess;
			allocs++;
			live += bsz[k];
			if (live > peak)
				peak = live;
		} else {
			errors += cudaFreeHost(blk[k]) != cudaSuccess;
			blk[k] = NULL;
			frees++;
			live -= bsz[k];
		}
		simCounters(&c);
		if (c.live_pinned_bytes > max_sim)
			max_sim = c.live_pinned_bytes;
	}
	simCounters(&c);
	/* A real block is a cudaHostAlloc or, with PINCACHE_FAST_ALLOC, a
	 * registration pincache made (the program makes none). */
	frees_during_churn = c.host_frees + c.host_unregisters - c0.host_frees - c0.host_unregisters;
	for (int k = 0; k < MAXLIVE; k++) {
		if (blk[k]) {
			errors += cudaFreeHost(blk[k]) != cudaSuccess;
			frees++;
		}
	}
	simCounters(&c);
	c.host_allocs += c.host_registers;
	c0.host_allocs += c0.host_registers;
	c.host_frees += c.host_unregisters;
	c0.host_frees += c0.host_unregisters;
	diag("program: %llu allocs, %llu frees, peak live %llu KB", allocs, frees, peak / KB);
	diag("sim: %llu real allocs, %llu real frees (%llu during the churn), max live %llu KB",
	     c.host_allocs - c0.host_allocs, c.host_frees - c0.host_frees, frees_during_churn, max_sim / KB);
	is_int(errors, 0, "every cudaHostAlloc/cudaFreeHost succeeded");

	if (!strcmp(mode, "plain")) {
		is_int(c.host_allocs - c0.host_allocs, allocs, "plain: every allocation reached the sim");
		is_int(c.host_frees - c0.host_frees, frees, "plain: every free reached the sim");
		ok(max_sim <= peak, "plain: sim live bytes never exceeded the program's (%llu <= %llu KB)",
		   max_sim / KB, peak / KB);
	} else if (!strcmp(mode, "capped")) {
		unsigned long long bound = peak + peak / 8 + cap + 2 * MB;

		ok(cap > 0, "capped: a cap was given (%llu KB)", cap / KB);
		ok(max_sim <= bound, "capped: sim live bytes <= peak*1.125 + cap + one block (%llu <= %llu KB)",
		   max_sim / KB, bound / KB);
		ok(frees_during_churn > 0, "capped: trimming released real blocks (%llu real frees)",
		   frees_during_churn);
		ok(c.host_allocs - c0.host_allocs < allocs, "capped: the cache still served some allocations (%llu < %llu)",
		   c.host_allocs - c0.host_allocs, allocs);
	} else if (!strcmp(mode, "uncapped")) {
		is_int(frees_during_churn, 0, "uncapped: no real cudaFreeHost while churning the same sizes");
		ok((c.host_allocs - c0.host_allocs) * 4 < allocs,
		   "uncapped: real allocations << program allocations (%llu vs %llu)",
		   c.host_allocs - c0.host_allocs, allocs);
	} else {
		ok(0, "unknown mode %s", mode);
	}
	return done_testing();
}
