/* backend_sim.c - the fuzzer's kernels on the simulated device: simLaunch
 * runs the function on the stream's worker; the device pointer of pinned
 * memory is its host address, so zero-copy needs nothing more. */
#include <stdint.h>
#include "fuzz.h"
#include "../doubles/sim.h"

const char fz_backend[] = "sim";

static void kernel(void *p)
{
	struct fz_kargs *k = p;

	for (size_t i = 0; i < k->n; i++)
		k->dst[i] = k->src ? (uint8_t)(k->src[i] * 5u + k->key + i) : (uint8_t)(k->key ^ i);
}

cudaError_t fz_kernel(cudaStream_t stream, struct fz_kargs *k, unsigned delay_us)
{
	return simLaunch(stream, kernel, k, delay_us);
}

void fz_graph_destroy(cudaGraph_t graph)
{
	(void)graph; /* the sim's graph is a token */
}
