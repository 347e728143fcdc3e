// dangling.cu - what a dangling pointer into a pinned block the program has
// freed gets from the runtime, by the block's size (64 KiB blocks are
// carved from the driver's 2 MiB chunks, which may outlive them; 4 MiB and
// 64 MiB ones are mapped alone): cudaHostUnregister of its base and of
// base + 4 KiB, cudaHostRegister of its first page, cudaHostGetFlags and
// cudaPointerGetAttributes' type, each with the last error after it; and
// for reference the same of a live block.  What pincache answers for a
// block the program freed to its cache (src/api/hostmem.c,
// pc_host_as_seen) assumes the freed block's answers are those of memory
// nobody pinned (713 for an unregister); the simulated device answers so.
// Not a test: one line per case.
// Build: nvcc -O2 -arch=sm_90 -cudart shared -o dangling dangling.cu
#include <cuda_runtime.h>
#include <stdio.h>

static void ask(const char *what, size_t size, char *p)
{
    unsigned int flags = 0;
    struct cudaPointerAttributes at = {};
    int u0 = cudaHostUnregister(p), l0 = cudaGetLastError();
    int u1 = cudaHostUnregister(p + 4096), l1 = cudaGetLastError();
    int g = cudaHostGetFlags(&flags, p), lg = cudaGetLastError();
    int a = cudaPointerGetAttributes(&at, p), la = cudaGetLastError();
    int r = cudaHostRegister(p, 4096, 0), lr = cudaGetLastError();

    if (r == cudaSuccess)
        cudaHostUnregister(p);
    printf("%-5s %9zu unregister(base) %d/%d unregister(+4K) %d/%d getflags %d/%d attrs %d/%d type %d "
           "register(page) %d/%d\n", what, size, u0, l0, u1, l1, g, lg, a, la, (int)at.type, r, lr);
}

int main(void)
{
    static const size_t sizes[] = { 64u << 10, 1u << 20, 4u << 20, 64u << 20 };

    cudaFree(0);
    for (unsigned i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        char *live = NULL, *dead = NULL, *keep = NULL;
        // keep: a block beside the freed one, so that a 64 KiB block's chunk stays the driver's
        if (cudaHostAlloc((void **)&keep, sizes[i], 0) != cudaSuccess ||
            cudaHostAlloc((void **)&live, sizes[i], 0) != cudaSuccess ||
            cudaHostAlloc((void **)&dead, sizes[i], 0) != cudaSuccess) {
            printf("alloc %zu failed\n", sizes[i]);
            return 1;
        }
        ask("live", sizes[i], live);
        cudaFreeHost(dead);
        ask("freed", sizes[i], dead);
        cudaFreeHost(live);
        cudaFreeHost(keep);
    }
    return 0;
}
