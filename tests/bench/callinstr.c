/* callinstr.c - one kind of call, N times, on the simulated device, for
 * callinstr.sh to count what pincache adds to it in instructions (valgrind's
 * callgrind: a count that does not depend on the machine's load, unlike a
 * time).  The calls are the ones every PyTorch step makes many of:
 *
 *   async-pinned     cudaMemcpyAsync of 4 KiB from a cudaMallocHost block to
 *                    the device on a created stream, then
 *                    cudaStreamSynchronize of it (a blocking .cuda())
 *   memcpy-pinned    cudaMemcpy of 4 KiB from the device into a
 *                    cudaMallocHost block
 *   memcpy-pageable  the same into malloc'd memory (.item(), .cpu())
 *   sync-idle        cudaStreamSynchronize of an idle created stream
 *   hit-pair         cudaHostAlloc of 64 KiB and its cudaFreeHost (under
 *                    pincache a cache hit after the first)
 *
 *   callinstr MODE N
 * Exit 0, 1 on a failed call, 2 on bad arguments. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime_api.h>

#define CALLINSTR_BYTES 4096

int main(int argc, char **argv)
{
    const char *mode = argc > 2 ? argv[1] : "";
    long n = argc > 2 ? atol(argv[2]) : 0;
    char *pageable = malloc(CALLINSTR_BYTES);
    void *pinned = NULL, *dev = NULL, *h;
    cudaStream_t s;
    int bad = 0, m;

    static const char *const modes[] = { "async-pinned", "memcpy-pinned", "memcpy-pageable", "sync-idle", "hit-pair" };
    for (m = 0; m < 5 && strcmp(mode, modes[m]); m++)
        ;
    if (m == 5 || n < 1 || !pageable) {
        fprintf(stderr, "usage: callinstr async-pinned|memcpy-pinned|memcpy-pageable|sync-idle|hit-pair N\n");
        return 2;
    }
    memset(pageable, 1, CALLINSTR_BYTES);
    if (cudaMallocHost(&pinned, CALLINSTR_BYTES) != cudaSuccess || cudaMalloc(&dev, CALLINSTR_BYTES) != cudaSuccess ||
        cudaStreamCreate(&s) != cudaSuccess) {
        fprintf(stderr, "callinstr: set-up failed\n");
        return 1;
    }
    for (long i = 0; i < n; i++) {
        switch (m) {
        case 0:
            bad |= cudaMemcpyAsync(dev, pinned, CALLINSTR_BYTES, cudaMemcpyHostToDevice, s) != cudaSuccess;
            bad |= cudaStreamSynchronize(s) != cudaSuccess;
            break;
        case 1: bad |= cudaMemcpy(pinned, dev, CALLINSTR_BYTES, cudaMemcpyDeviceToHost) != cudaSuccess; break;
        case 2: bad |= cudaMemcpy(pageable, dev, CALLINSTR_BYTES, cudaMemcpyDeviceToHost) != cudaSuccess; break;
        case 3: bad |= cudaStreamSynchronize(s) != cudaSuccess; break;
        default:
            bad |= cudaHostAlloc(&h, 65536, cudaHostAllocDefault) != cudaSuccess;
            bad |= cudaFreeHost(h) != cudaSuccess;
            break;
        }
    }
    printf("CALLINSTR mode=%s n=%ld bad=%d\n", mode, n, bad);
    return bad ? 1 : 0;
}
