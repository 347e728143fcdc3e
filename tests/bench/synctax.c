/* synctax.c - what an idle synchronizing call costs (issue 19, item 1: "no
 * tax on synchronizing calls").  BATCHES batches of CALLS idle
 * cudaStreamSynchronize on a created stream, and as many of idle
 * cudaDeviceSynchronize, the two kinds of batch alternating; each batch is
 * timed with the monotonic clock.  Prints, per call, the median and the
 * minimum over the batches:
 *
 *     SYNCTAX stream median_ns=X min_ns=X batches=B calls=C
 *     SYNCTAX device median_ns=X min_ns=X batches=B calls=C
 *
 * tests/bench/synctax.sh runs it plainly and under pincache, alternately, and
 * prints the difference.  Built twice: by make check against the simulated
 * runtime (tests/bench/synctax_sim), and by synctax.sh with nvcc from
 * synctax.cu, which includes this file and warms the device up with a real
 * kernel (SYNCTAX_WARM).  Exit status 3: no CUDA device.
 *
 *   synctax [BATCHES [CALLS]]     (default 51 batches of 2000 calls) */
#include <cuda_runtime_api.h>
#include "benchlib.h"

#ifndef SYNCTAX_WARM
#define SYNCTAX_WARM(s) ((void)(s))
#endif

/* One batch of calls idle syncs (stream s, or the device when dev): ns per
 * call, or -1 when a call failed. */
static double synctax_batch(cudaStream_t s, int dev, int calls)
{
    uint64_t t0 = bench_ns();
    cudaError_t e = cudaSuccess;

    for (int i = 0; i < calls && e == cudaSuccess; i++)
        e = dev ? cudaDeviceSynchronize() : cudaStreamSynchronize(s);
    if (e != cudaSuccess) {
        fprintf(stderr, "synctax: %s failed: %d\n", dev ? "cudaDeviceSynchronize" : "cudaStreamSynchronize",
                (int)e);
        return -1;
    }
    return (double)(bench_ns() - t0) / calls;
}

int main(int argc, char **argv)
{
    int batches = argc > 1 ? atoi(argv[1]) : 51, calls = argc > 2 ? atoi(argv[2]) : 2000, ndev = 0;
    static const char *const names[2] = { "stream", "device" };
    cudaStream_t s;
    double *v;

    if (batches < 1 || calls < 1) {
        fprintf(stderr, "usage: synctax [BATCHES [CALLS]]\n");
        return 2;
    }
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev < 1) {
        printf("synctax: no CUDA device\n");
        return 3;
    }
    v = (double *)malloc(2 * (size_t)batches * sizeof *v);
    if (!v || cudaStreamCreate(&s) != cudaSuccess) {
        fprintf(stderr, "synctax: set-up failed\n");
        return 2;
    }
    SYNCTAX_WARM(s);
    /* the warm-up: the kernel's completion, the calls' first uses */
    if (synctax_batch(s, 1, calls) < 0 || synctax_batch(s, 0, calls) < 0)
        return 1;
    for (int b = 0; b < batches; b++)
        for (int k = 0; k < 2; k++)
            if ((v[k * batches + b] = synctax_batch(s, k, calls)) < 0)
                return 1;
    for (int k = 0; k < 2; k++) {
        double *x = v + k * batches, med = bench_median(x, batches);   /* sorts x */

        printf("SYNCTAX %s median_ns=%.1f min_ns=%.1f batches=%d calls=%d\n", names[k], med, x[0], batches,
               calls);
    }
    free(v);
    return 0;
}
