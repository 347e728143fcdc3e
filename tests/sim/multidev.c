/* multidev - fences on two devices (SIM_DEVICES=2).
 *
 * Each iteration makes device 1 current, allocates a pinned block, fills it
 * with the iteration's pattern and queues on a device-1 stream (non-blocking
 * or the legacy one, alternately) a delayed zero-copy "kernel" that reads
 * the block later; then it makes device 0 current and frees the block there.
 * The next iteration asks for the same size, so a cache that fenced only
 * the current device would hand the block out and refill it while device 1
 * still reads it.  Prints TAP; "mismatches=N" for the scripts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime_api.h>
#include "sim.h"
#include "../tap.h"

#define ITERS 120
#define SIZE (256 * 1024)

struct job {
    const unsigned char *p;
    unsigned char want;
    int bad;
};

static void reader(void *arg)
{
    struct job *j = arg;
    for (size_t i = 0; i < SIZE; i += 509)
        if (j->p[i] != j->want) {
            j->bad = 1;
            return;
        }
}

int main(void)
{
    static struct job jobs[ITERS];
    cudaStream_t nb;
    int ndev = 0, errors = 0, mismatches = 0;

    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev < 2) {
        printf("1..0 # SKIP needs SIM_DEVICES=2\n");
        return 0;
    }
    errors += cudaSetDevice(1) != cudaSuccess;
    errors += cudaStreamCreateWithFlags(&nb, cudaStreamNonBlocking) != cudaSuccess;
    for (int i = 0; i < ITERS; i++) {
        unsigned char *p = NULL;
        errors += cudaSetDevice(1) != cudaSuccess;
        if (cudaHostAlloc((void **)&p, SIZE, 0) != cudaSuccess || !p) {
            errors++;
            continue;
        }
        memset(p, (unsigned char)(i + 1), SIZE);
        jobs[i] = (struct job){ p, (unsigned char)(i + 1), 0 };
        errors += simLaunch(i % 2 ? nb : cudaStreamLegacy, reader, &jobs[i], 2000) != cudaSuccess;
        errors += cudaSetDevice(0) != cudaSuccess;
        errors += cudaFreeHost(p) != cudaSuccess;
    }
    errors += cudaSetDevice(1) != cudaSuccess;
    errors += cudaDeviceSynchronize() != cudaSuccess;
    for (int i = 0; i < ITERS; i++)
        mismatches += jobs[i].bad;
    is_int(errors, 0, "every CUDA call succeeded");
    ok(mismatches == 0, "every device-1 reader saw its own iteration's bytes (mismatches=%d)", mismatches);
    return done_testing();
}
