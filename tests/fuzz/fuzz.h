/* fuzz.h - what the differential fuzzer (fuzz.c) needs from a backend: a
 * "kernel" and the disposal of a captured graph.  backend_sim.c implements
 * them over the simulated device (simLaunch), backend_gpu.cu with real
 * kernels.  The kernel's effect is the same in both:
 *   dst[i] = src ? (uint8_t)(src[i] * 5 + key + i) : (uint8_t)(key ^ i)
 * for i < n, after spinning delay_us on the device. */
#ifndef FUZZ_H
#define FUZZ_H
#include <stddef.h>
#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

struct fz_kargs {
	unsigned char *dst;
	const unsigned char *src;
	size_t n;
	unsigned key;
};

/* k stays valid until the program's device work is done (a captured launch
 * never runs, so the caller owns it). */
cudaError_t fz_kernel(cudaStream_t stream, struct fz_kargs *k, unsigned delay_us);
void fz_graph_destroy(cudaGraph_t graph);
extern const char fz_backend[];

#ifdef __cplusplus
}
#endif
#endif
