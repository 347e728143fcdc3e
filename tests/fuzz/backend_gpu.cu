/* backend_gpu.cu - the fuzzer's kernels on a real GPU (run-gpu.sh builds it
 * with fuzz.c).  Same effect as backend_sim.c: spin delay_us on the device,
 * then dst[i] = src ? src[i] * 5 + key + i : key ^ i (bytes). */
#include <stdint.h>
#include "fuzz.h"

extern "C" const char fz_backend[] = "gpu";

static __device__ uint64_t now_ns(void)
{
	uint64_t t;

	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
}

static __global__ void kernel(unsigned char *dst, const unsigned char *src, size_t n, unsigned key, unsigned delay_us)
{
	size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;

	if (delay_us) {
		uint64_t end = now_ns() + delay_us * 1000ull;
		while (now_ns() < end)
			;
	}
	for (; i < n; i += (size_t)gridDim.x * blockDim.x)
		dst[i] = src ? (uint8_t)(src[i] * 5u + key + i) : (uint8_t)(key ^ i);
}

extern "C" cudaError_t fz_kernel(cudaStream_t stream, struct fz_kargs *k, unsigned delay_us)
{
	unsigned blocks = (unsigned)((k->n + 255) / 256);

	if (blocks > 1024)
		blocks = 1024;
	void *args[] = { &k->dst, &k->src, &k->n, &k->key, &delay_us };

	/* cudaLaunchKernel answers the launch itself: no cudaGetLastError,
	 * which would clear the error state the transcript records. */
	return cudaLaunchKernel((const void *)kernel, dim3(blocks), dim3(256), args, 0, stream);
}

extern "C" void fz_graph_destroy(cudaGraph_t graph)
{
	cudaGraphDestroy(graph);
}
