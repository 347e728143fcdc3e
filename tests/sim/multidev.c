/* multidev - fences on two devices (SIM_DEVICES=2).
 *
 * Each iteration makes device 1 current, allocates a pinned block, fills it
 * with the iteration's pattern and queues on a device-1 stream (non-blocking
 * or the legacy one, alternately) a delayed zero-copy "kernel" that reads
 * the block later; then it makes device 0 current and frees the block there.
 * The next iteration asks for the same size, so a cache that fenced only
 * the current device would hand the block out and refill it while device 1
 * still reads it.
 *
 * -r: device 0 is reset (cudaDeviceReset with device 0 current) before the
 * loop.  A reset destroys device 0's context only: device 1's non-blocking
 * stream and its work live on and must stay fenced.
 * -R: device 0 is reset after every eighth free instead; device 1's pinned
 * blocks live on, so at the end (device 1 idle) one more allocation of the
 * same size is served from the cache: "last_real_allocs=N" says how many
 * real allocations it took.
 * Last, a block allocated and freed with device 0 current must not be what
 * a request with device 1 current gets: its attributes would name device 0,
 * and device 0's reset would free it.
 * Prints TAP; "mismatches=N" for the scripts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cuda_runtime_api.h>
#include "../doubles/sim.h"
#include "../tap.h"
#include "simtest.h"

#define ITERS 120
#define SIZE (256 * 1024)

int main(int argc, char **argv)
{
    static struct simtest_job jobs[ITERS];
    struct sim_counters c0, c1;
    cudaStream_t nb;
    int ndev = 0, errors = 0, mismatches = 0, reset = 0, resets = 0, opt;
    void *last = NULL;

    while ((opt = getopt(argc, argv, "rR")) != -1) {
        reset |= opt == 'r';
        resets |= opt == 'R';
    }
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev < 2) {
        printf("1..0 # SKIP needs SIM_DEVICES=2\n");
        return 0;
    }
    errors += cudaSetDevice(1) != cudaSuccess;
    errors += cudaStreamCreateWithFlags(&nb, cudaStreamNonBlocking) != cudaSuccess;
    if (reset) {
        errors += cudaSetDevice(0) != cudaSuccess;
        errors += cudaDeviceReset() != cudaSuccess;
    }
    for (int i = 0; i < ITERS; i++) {
        unsigned char *p = NULL;
        errors += cudaSetDevice(1) != cudaSuccess;
        if (cudaHostAlloc((void **)&p, SIZE, 0) != cudaSuccess || !p) {
            errors++;
            continue;
        }
        memset(p, (unsigned char)(i + 1), SIZE);
        jobs[i] = (struct simtest_job){ p, SIZE, (unsigned char)(i + 1), 0 };
        errors += simLaunch(i % 2 ? nb : cudaStreamLegacy, simtest_reader, &jobs[i], 2000) != cudaSuccess;
        errors += cudaSetDevice(0) != cudaSuccess;
        errors += cudaFreeHost(p) != cudaSuccess;
        if (resets && i % 8 == 7)
            errors += cudaDeviceReset() != cudaSuccess;
    }
    errors += cudaSetDevice(1) != cudaSuccess;
    errors += cudaDeviceSynchronize() != cudaSuccess;
    simCounters(&c0);
    errors += cudaHostAlloc(&last, SIZE, 0) != cudaSuccess;
    simCounters(&c1);
    errors += cudaFreeHost(last) != cudaSuccess;
    for (int i = 0; i < ITERS; i++)
        mismatches += jobs[i].bad;
    {
        struct cudaPointerAttributes a;
        void *x = NULL, *y = NULL;

        memset(&a, 0, sizeof a);
        errors += cudaSetDevice(0) != cudaSuccess;
        errors += cudaHostAlloc(&x, 3 * SIZE, 0) != cudaSuccess;
        errors += cudaFreeHost(x) != cudaSuccess;
        errors += cudaSetDevice(1) != cudaSuccess;
        errors += cudaHostAlloc(&y, 3 * SIZE, 0) != cudaSuccess;
        errors += cudaPointerGetAttributes(&a, y) != cudaSuccess;
        is_int(a.device, 1, "a block allocated with device 1 current belongs to device 1, not a cached block of device 0");
        errors += cudaFreeHost(y) != cudaSuccess;
    }
    is_int(errors, 0, "every CUDA call succeeded");
    ok(mismatches == 0, "every device-1 reader saw its own iteration's bytes (mismatches=%d)", mismatches);
    printf("# last_real_allocs=%llu\n", c1.host_allocs - c0.host_allocs);
    return done_testing();
}
