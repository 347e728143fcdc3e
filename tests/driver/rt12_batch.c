/* rt12_batch - cudaMemcpyBatchAsync through libcudart.so.12, whose ABI has
 * a failIdx and which reaches the driver's cuMemcpyBatchAsync (12080)
 * through cuGetProcAddress, as the real cudart 12.8 does: under the shim a
 * runtime batch meets the driver wrapper with the guard held.
 *
 *   1. a batch of a pinned H2D and a pinned D2H operand: the bytes arrive
 *      (drvbatch.sh: counted once, 2 operands);
 *   2. a pageable DuringApiCall operand (the shim takes it out of the
 *      batch), a pinned one, and a pageable Stream-order one that runs past
 *      its device allocation: error 1 and failIdx 2, the index in the
 *      program's batch, not in the smaller one the shim passes on;
 *   3. a pinned operand, then a pageable DuringApiCall one past its
 *      allocation (the one the shim makes itself): 1 and failIdx 1. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime_api.h>
#include "../tap.h"

#define MIB (1u << 20)
#define K4 4096

/* libcudart.so.12's ABI */
cudaError_t cuda12_batch(void *const *d, const void *const *s, const size_t *n, size_t count,
                         struct cudaMemcpyAttributes *a, size_t *ai, size_t na, size_t *fail, cudaStream_t st)
    __asm__("cudaMemcpyBatchAsync");

static struct cudaMemcpyAttributes attr(enum cudaMemcpySrcAccessOrder o)
{
    struct cudaMemcpyAttributes a;

    memset(&a, 0, sizeof a);
    a.srcAccessOrder = o;
    return a;
}

int main(void)
{
    struct cudaMemcpyAttributes a[2] = { attr(cudaMemcpySrcAccessOrderDuringApiCall),
                                         attr(cudaMemcpySrcAccessOrderStream) };
    unsigned char *pin, *pin2, *pag = malloc(MIB), back[K4];
    char *dev, *small;
    cudaStream_t s;
    size_t fail, idx[2] = { 0, 1 }, one = 0;

    ok(cudaStreamCreate(&s) == cudaSuccess && cudaMalloc((void **)&dev, 4 * MIB) == cudaSuccess &&
       cudaMalloc((void **)&small, MIB / 2) == cudaSuccess && cudaHostAlloc((void **)&pin, K4, 0) == cudaSuccess &&
       cudaHostAlloc((void **)&pin2, K4, 0) == cudaSuccess && pag, "set-up");
    memset(pin, 7, K4);
    memset(pag, 9, MIB);
    {
        struct cudaMemcpyAttributes st = attr(cudaMemcpySrcAccessOrderStream);
        void *d[2] = { dev, pin2 };
        const void *src[2] = { pin, dev + MIB };
        size_t n[2] = { K4, K4 };

        cudaMemcpy(dev + MIB, pin, K4, cudaMemcpyHostToDevice);
        fail = 77;
        is_int(cuda12_batch(d, src, n, 2, &st, &one, 1, &fail, s), 0, "1: a pinned batch");
        cudaStreamSynchronize(s);
        cudaMemcpy(back, dev, K4, cudaMemcpyDeviceToHost);
        ok(memcmp(back, pin, K4) == 0 && memcmp(pin2, pin, K4) == 0, "1: its bytes arrived");
    }
    {
        void *d[3] = { dev + 2 * MIB, dev, small };
        const void *src[3] = { pag, pin, pag };
        size_t n[3] = { MIB, K4, MIB };

        fail = 77;
        is_int(cuda12_batch(d, src, n, 3, a, idx, 2, &fail, s), 1, "2: the third operand runs past its allocation");
        is_int((int)fail, 2, "2: failIdx is its index in the program's batch");
        cudaStreamSynchronize(s);
        cudaGetLastError();
    }
    {
        struct cudaMemcpyAttributes b[2] = { attr(cudaMemcpySrcAccessOrderStream),
                                             attr(cudaMemcpySrcAccessOrderDuringApiCall) };
        void *d[2] = { dev, small };
        const void *src[2] = { pin, pag };
        size_t n[2] = { K4, MIB };

        fail = 77;
        is_int(cuda12_batch(d, src, n, 2, b, idx, 2, &fail, s), 1, "3: the pageable operand runs past its allocation");
        is_int((int)fail, 1, "3: failIdx is its index");
        cudaStreamSynchronize(s);
    }
    free(pag);
    return done_testing();
}
