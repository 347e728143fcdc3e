/* unseen - zero-copy work on a non-blocking stream the shim did not see
 * created, then frees of the blocks it reads (issue 15, D4).
 *
 *   -v  the stream comes from dlvsym(h, "cudaStreamCreateWithFlags",
 *       "libcudart.so.13") on the runtime's handle h: the shim must hook
 *       dlvsym as it hooks dlsym (RTLD_DEFAULT would find the shim's own
 *       versioned definition first)
 *   -c  the stream comes from simStreamCreateUnseen (no shim can see it),
 *       and one cudaMemcpyAsync on it shows the shim its handle before any
 *       work: with stream-by-stream fences the shim must stop caching frees
 *       (a context-wide fence covers the stream anyway)
 *   -n  as -c without the copy: nothing reaches the shim, so only a
 *       context-wide fence can cover the stream
 *
 * Each of ITERS iterations allocates a pinned block, fills it with the
 * iteration's pattern, queues a delayed "kernel" on the stream that reads
 * it zero-copy, and frees it at once; the next iteration asks for the same
 * size.  Prints TAP; "mismatches=N" for the scripts. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <cuda_runtime_api.h>
#include "../doubles/sim.h"
#include "../tap.h"
#include "simtest.h"

#define ITERS 60
#define SIZE (128 * 1024)

typedef cudaError_t (*create_fn)(cudaStream_t *, unsigned int);

int main(int argc, char **argv)
{
    static struct simtest_job jobs[ITERS];
    cudaStream_t s = NULL;
    create_fn create = NULL;
    int errors = 0, mismatches = 0, opt, how = 'v';
    void *dev = NULL, *pin = NULL;

    while ((opt = getopt(argc, argv, "vcn")) != -1)
        how = opt;
    if (how == 'v') {
        void *h = dlopen("libcudart.so.13", RTLD_LAZY | RTLD_NOLOAD);
        create = h ? (create_fn)dlvsym(h, "cudaStreamCreateWithFlags", "libcudart.so.13") : NULL;
    } else
        create = simStreamCreateUnseen;
    ok(create != NULL, "a stream creator (%c)", how);
    if (!create)
        return done_testing();
    errors += create(&s, cudaStreamNonBlocking) != cudaSuccess;
    if (how == 'c') {
        errors += cudaMalloc(&dev, 64) != cudaSuccess;
        errors += cudaHostAlloc(&pin, 64, 0) != cudaSuccess;
        errors += cudaMemcpyAsync(dev, pin, 64, cudaMemcpyHostToDevice, s) != cudaSuccess;
        errors += cudaStreamSynchronize(s) != cudaSuccess;
    }
    for (int i = 0; i < ITERS; i++) {
        unsigned char *p = NULL;
        if (cudaHostAlloc((void **)&p, SIZE, 0) != cudaSuccess || !p) {
            errors++;
            continue;
        }
        memset(p, (unsigned char)(i + 1), SIZE);
        jobs[i] = (struct simtest_job){ p, SIZE, (unsigned char)(i + 1), 0 };
        errors += simLaunch(s, simtest_reader, &jobs[i], 2000) != cudaSuccess;
        errors += cudaFreeHost(p) != cudaSuccess;
    }
    errors += cudaDeviceSynchronize() != cudaSuccess;
    errors += cudaStreamSynchronize(s) != cudaSuccess;
    for (int i = 0; i < ITERS; i++)
        mismatches += jobs[i].bad;
    is_int(errors, 0, "every CUDA call succeeded");
    ok(mismatches == 0, "every reader on the unseen stream saw its own iteration's bytes (mismatches=%d)", mismatches);
    return done_testing();
}
